//! The cluster configuration: hosts, queues, complexes, parallel environments, users,
//! projects, managers, the share tree and the scheduler policy.
//!
//! It is human-edited YAML in `$SGE_ROOT/$SGE_CELL/config.yaml`, documented field by field in
//! `spool/README.md`; names and meanings follow SGE's `sched_conf(5)`, `queue_conf(5)`,
//! `host_conf(5)`, `sge_pe(5)`, `complex(5)` and `share_tree(5)` so administrators can carry
//! their knowledge over. `sched_d --init` writes `spool/default-config.yaml`, filled in with
//! the local host's name and CPU count.
//!
//! One file: the schema of `config.yaml` (its types, defaults and the checks that tie
//! them together) is read as one document; the parts that stand alone (complexes, editing,
//! the snapshot) are modules of their own.

pub mod access_lists;
pub mod calendars;
mod complexes;
pub mod edit;
pub mod per_host;
pub mod resource_quotas;
pub mod snapshot;

pub use access_lists::{AccessList, ClusterAccess, Fence, Refusal};
pub use calendars::{Calendar, CalendarConfig, CalendarState};
pub use complexes::{Complex, ComplexType, Consumable, Requestable, builtin as builtin_complexes};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The configuration a new spool starts from, with `{{hostname}}` and `{{cpus}}` to fill in.
pub const DEFAULT_CONFIG_TEMPLATE: &str = include_str!("../../spool/default-config.yaml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("configuration {path} is not valid: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// Reads an open file of `len` bytes (as `fstat` gave it) to its end, in one `read` when the
/// size is right (`fs::read` would `statx` the file again to size its buffer).
fn read_whole(mut file: &std::fs::File, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(0).saturating_add(1)];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// How `sched_d` reaches an execution host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum LaunchMethod {
    /// The daemon starts the shepherd itself.
    Local,
    /// Through ssh: `sched_d`'s builtin client or the system OpenSSH client (`ssh_client`).
    Ssh {
        /// Address to connect to; the host name when absent.
        #[serde(default)]
        address: Option<String>,
        #[serde(default)]
        port: Option<u16>,
        #[serde(default)]
        user: Option<String>,
        /// Extra `-o` options and flags passed to `ssh` as they are.
        #[serde(default)]
        options: Vec<String>,
        /// At most this many concurrent sessions over the host's master connection, which
        /// only a host whose shepherd predates the start server's session gets.
        #[serde(default = "default_max_sessions")]
        max_sessions: u32,
        /// Which ssh client carries the host's session.
        #[serde(default, skip_serializing_if = "SshClient::is_builtin")]
        ssh_client: SshClient,
    },
}

/// The ssh client of a host's session (`launch.ssh_client`). `builtin`: `sched_d`'s own
/// client, one TCP connection per host in one process (an OpenSSH client costs ≈ 1.4 MB and
/// 100 ms of key exchange per host, bench/cluster.md), used wherever it can honour the host's
/// options as OpenSSH would, else OpenSSH with the reason logged once
/// (`src/launch/ssh_builtin.rs` lists what it honours). `openssh`: the system `ssh`, always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SshClient {
    #[default]
    Builtin,
    Openssh,
}

impl SshClient {
    fn is_builtin(&self) -> bool {
        *self == SshClient::Builtin
    }
}

fn default_max_sessions() -> u32 {
    8
}

/// An execution host (`host_conf(5)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostConfig {
    pub name: String,
    /// An older configuration's cap on the slots of all the host's queue instances together:
    /// the same as a `slots=N` in `complex_values` (which `qconf -se` shows it as, and where
    /// `qconf` moves it when it changes the host). Absent: only the queues' `slots` bound
    /// the host, as in SGE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
    #[serde(default = "local_launch")]
    pub launch: LaunchMethod,
    /// Consumable capacities and fixed values (`complex_values`).
    #[serde(default)]
    pub complex_values: BTreeMap<String, String>,
    /// Free-form attributes jobs can require (FBSNG node attributes).
    #[serde(default)]
    pub attributes: Vec<String>,
    /// Qube! cluster the host belongs to (`/` when absent).
    #[serde(default)]
    pub cluster: Option<String>,
    /// `arch` as `qstat -f`/`qhost` show it.
    #[serde(default = "default_arch")]
    pub arch: String,
    /// This host's `reschedule_unknown` (SGE's execution host local configuration),
    /// overriding the global one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_unknown: Option<String>,
    /// Devices the host gives jobs for their own, by consumable complex (`gpu: ["0", "1"]`):
    /// a task that requests `-l gpu=N` is granted N of these ids per slot (once per job for a
    /// `JOB` consumable), which no other running task holds, in `CUDA_VISIBLE_DEVICES` and
    /// `SGE_HGR_<name>`. The host's capacity of the complex is their number unless its
    /// `complex_values` say otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub devices: BTreeMap<String, Vec<String>>,
    /// The device file of each id, by complex (`gpu: "/dev/nvidia{id}"`): where the task has
    /// a cgroup with device control, the files of the ids it was not granted are denied to it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub device_files: BTreeMap<String, String>,
    /// Whether the shepherd puts each task in a cgroup of its own there (`launch::cgroup`).
    #[serde(default, skip_serializing_if = "CgroupSetting::is_default")]
    pub cgroups: CgroupSetting,
    /// host_conf(5)'s access lists and projects: whose jobs may run on the host at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_lists: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xuser_lists: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xprojects: Vec<String>,
}

impl HostConfig {
    /// A host reached by `launch` with `slots`, and SGE's defaults for the rest (no
    /// complex values, attributes, devices or access lists; the default arch and cgroups).
    pub fn new(name: &str, slots: Option<u32>, launch: LaunchMethod) -> HostConfig {
        HostConfig {
            name: name.to_string(),
            slots,
            launch,
            complex_values: BTreeMap::new(),
            attributes: Vec::new(),
            cluster: None,
            arch: default_arch(),
            reschedule_unknown: None,
            devices: BTreeMap::new(),
            device_files: BTreeMap::new(),
            cgroups: CgroupSetting::default(),
            user_lists: Vec::new(),
            xuser_lists: Vec::new(),
            projects: Vec::new(),
            xprojects: Vec::new(),
        }
    }

    pub fn fence(&self) -> Fence<'_> {
        Fence {
            user_lists: &self.user_lists,
            xuser_lists: &self.xuser_lists,
            projects: &self.projects,
            xprojects: &self.xprojects,
        }
    }
}

/// `hosts[].cgroups`: `{mode: auto|off, parent: gridspool, cpu_quota: false}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupSetting {
    /// `auto`: in a cgroup of its own where the host has a usable cgroup v2 hierarchy;
    /// `off`: rlimits only.
    #[serde(default = "cgroup_auto")]
    pub mode: CgroupMode,
    /// The group the tasks' groups are made in, under each hierarchy's root.
    #[serde(default = "cgroup_parent")]
    pub parent: String,
    /// Limit each task to as many CPUs as it has slots on the host (`cpu.max`).
    #[serde(default)]
    pub cpu_quota: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupMode {
    Auto,
    Off,
}

fn cgroup_auto() -> CgroupMode {
    CgroupMode::Auto
}

fn cgroup_parent() -> String {
    "gridspool".to_string()
}

impl Default for CgroupSetting {
    fn default() -> Self {
        CgroupSetting {
            mode: CgroupMode::Auto,
            parent: cgroup_parent(),
            cpu_quota: false,
        }
    }
}

impl CgroupSetting {
    fn is_default(&self) -> bool {
        *self == CgroupSetting::default()
    }

    /// What the shepherd is told; `None` when cgroups are off.
    pub fn policy(&self) -> Option<CgroupPolicy> {
        (self.mode == CgroupMode::Auto).then(|| CgroupPolicy {
            parent: self.parent.clone(),
            cpu_quota: self.cpu_quota,
        })
    }
}

/// What the configuration asks of a host's cgroups (`hosts[].cgroups`), as the spec carries
/// it; no policy means none are used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupPolicy {
    /// The group the tasks' groups are made in, relative to each hierarchy's root.
    pub parent: String,
    /// Limit each task to its slots' worth of CPU time.
    #[serde(default)]
    pub cpu_quota: bool,
}

fn local_launch() -> LaunchMethod {
    LaunchMethod::Local
}

fn default_arch() -> String {
    "lx-amd64".to_string()
}

/// A cluster queue (`queue_conf(5)`), instantiated on each host of its host list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueConfig {
    pub name: String,
    /// Host names and `@hostgroup` names.
    pub hostlist: Vec<String>,
    /// Slots of each queue instance.
    pub slots: u32,
    #[serde(default)]
    pub seq_no: u32,
    /// Urgency added to every job bound to this queue (the seed site's t/u queue bonus).
    #[serde(default)]
    pub urgency: f64,
    #[serde(default = "default_shell")]
    pub shell: String,
    #[serde(default = "default_shell_start_mode")]
    pub shell_start_mode: String,
    #[serde(default)]
    pub pe_list: Vec<String>,
    #[serde(default = "default_tmpdir")]
    pub tmpdir: String,
    #[serde(default)]
    pub rerun: bool,
    #[serde(default = "default_qtype")]
    pub qtype: String,
    #[serde(default)]
    pub complex_values: BTreeMap<String, String>,
    /// Resource limits (`h_rt`, `s_rt`, `h_vmem`…) as in queue_conf(5); absent = INFINITY.
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
    /// `notify` time before SIGKILL/SIGSTOP for `-notify` jobs.
    #[serde(default = "default_notify")]
    pub notify: String,
    /// queue_conf(5)'s `priority`: the nice value (-20 to 20) the queue's jobs start with,
    /// kept as it was written because SGE shows it so (`+7`, `1.5`; its leading integer is
    /// the value, [`nice_value`]); `None` is SGE's default, 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// Queue disabled by an administrator (`qmod -d`), shown as `d`.
    #[serde(default)]
    pub disabled: bool,
    /// `[user@]path [args]` run before each job of the queue, as queue_conf(5)'s `prolog`
    /// (the global `prolog` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<String>,
    /// `[user@]path [args]` run after each job, as queue_conf(5)'s `epilog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilog: Option<String>,
    /// queue_conf(5)'s `starter_method`: a program that starts each job instead of its
    /// shell, with the job's command and arguments as its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starter_method: Option<String>,
    /// FBSNG dynamic priority parameters (`fbsng` policy; gridspool extension). Jobs belong
    /// to the queue they are bound to (`-q`, else the first queue that can take them).
    #[serde(default)]
    pub fbsng: FbsngQueueConfig,
    /// queue_conf(5)'s `calendar`: the calendar (`calendars[]`) that enables, disables and
    /// suspends the queue's instances at times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<String>,
    /// queue_conf(5)'s access lists and projects: whose jobs may run in the queue at all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_lists: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xuser_lists: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xprojects: Vec<String>,
    /// Values per host group (`@name`) and per host, each a partial queue in this queue's own
    /// keys (`"@big": {slots: 16}`), as queue_conf(5)'s `slots 4,[@big=16]`
    /// ([`per_host`]; read a host's values through [`ClusterConfig::queue_instance`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub per_host: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl QueueConfig {
    pub fn fence(&self) -> Fence<'_> {
        Fence {
            user_lists: &self.user_lists,
            xuser_lists: &self.xuser_lists,
            projects: &self.projects,
            xprojects: &self.xprojects,
        }
    }
}

/// `queues[].fbsng`: the seed's QPmin, QPmax, QPI, QPD, QPG and SPG. The defaults (0, 100,
/// 1, 1, 100, 100) make every queue equal with gaps too wide to act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FbsngQueueConfig {
    pub qp_min: i64,
    pub qp_max: i64,
    pub qpi: i64,
    pub qpd: i64,
    pub qpg: i64,
    pub spg: i64,
    /// How a start moves the queue's own priority: `share` (the default) makes the seed's
    /// formula `QPD(A)/QPD(B) = share(B)/share(A)` hold; `update` follows the seed's
    /// description of the update, shares `∝ 1/(QPD + QPI)` (docs/policies.md, FBSNG item 2).
    pub rule: FbsngStartRule,
}

/// `queues[].fbsng.rule`, the policy's [`gridspool_policy::fbsng::StartRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FbsngStartRule {
    #[default]
    Share,
    Update,
}

impl Default for FbsngQueueConfig {
    fn default() -> Self {
        FbsngQueueConfig {
            qp_min: 0,
            qp_max: 100,
            qpi: 1,
            qpd: 1,
            qpg: 100,
            spg: 100,
            rule: FbsngStartRule::Share,
        }
    }
}

fn default_shell() -> String {
    "/bin/sh".to_string()
}
fn default_shell_start_mode() -> String {
    "posix_compliant".to_string()
}
fn default_tmpdir() -> String {
    "/tmp".to_string()
}
fn default_qtype() -> String {
    "BATCH INTERACTIVE".to_string()
}
fn default_notify() -> String {
    "00:00:60".to_string()
}

/// What SGE's qmaster says of a queue's `priority` text it refuses (`cqueue_verify_priority`:
/// `atoi` of it is 0 but the text does not start with `0`, or it is outside -20..20).
pub fn priority_error(text: &str) -> Option<&'static str> {
    let nice = nice_value(text);
    if nice == 0 && !text.starts_with('0') {
        Some("Invalid character")
    } else if !(-20..=20).contains(&nice) {
        Some("Priority not in range -20 to +20")
    } else {
        None
    }
}

/// The value of a queue's `priority` text as SGE's shepherd takes it (C's `atoi`: blanks,
/// a sign, the digits that follow; anything after them ignored, 0 without digits).
pub fn nice_value(text: &str) -> i32 {
    let t = text.trim_start();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            (n * 10 + i64::from(d - b'0')).min(i64::from(i32::MAX) + 1)
        });
    let n = if negative { -n } else { n };
    n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// A parallel environment (`sge_pe(5)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeConfig {
    pub name: String,
    pub slots: u32,
    /// `$pe_slots`, `$fill_up`, `$round_robin`, or a number of slots per host.
    pub allocation_rule: String,
    #[serde(default)]
    pub control_slaves: bool,
    #[serde(default = "yes")]
    pub job_is_first_task: bool,
    /// `min`, `max`, `avg` or a number: how many slots urgency counts for a range request.
    #[serde(default = "default_urgency_slots")]
    pub urgency_slots: String,
}

fn yes() -> bool {
    true
}
fn default_urgency_slots() -> String {
    "min".to_string()
}

/// A project (`project(5)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectConfig {
    pub name: String,
    #[serde(default)]
    pub oticket: u32,
    #[serde(default)]
    pub fshare: u32,
    /// FBSNG process-type quota: at most this many slots in use by the project's running
    /// tasks (`fbsng` policy; gridspool extension). Unlimited when absent.
    #[serde(default)]
    pub max_slots: Option<u32>,
    /// project(5)'s `acl` and `xacl`: the access lists of the users who may submit to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acl: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xacl: Vec<String>,
}

/// A user entry (`user(5)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserConfig {
    pub name: String,
    #[serde(default)]
    pub oticket: u32,
    #[serde(default)]
    pub fshare: u32,
    #[serde(default)]
    pub default_project: Option<String>,
}

/// A node of the share tree (`share_tree(5)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShareTreeNode {
    pub name: String,
    pub shares: u32,
    /// share_tree(5)'s `type` as the file that set the tree gave it (SGE keeps what it
    /// reads, 0 user, 1 project), shown by `qconf -sstree`; a leaf that names a project
    /// shows 1 whatever it says, as SGE's qmaster sets it (`compat::qconf::share_tree`).
    #[serde(rename = "type", default, skip_serializing_if = "is_zero")]
    pub node_type: u32,
    #[serde(default)]
    pub children: Vec<ShareTreeNode>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which ordering the scheduler uses (Qube!'s `supervisor_queue_algorithm`, extended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PolicyOrder {
    /// Grid Engine's priority: urgency, POSIX priority and tickets.
    #[default]
    Sge,
    /// Qube!'s cluster tree, then priority, then job id.
    Cluster,
    /// FBSNG's dynamic queue and section priorities.
    Fbsng,
    /// Armada's multi-resource fair share.
    Armada,
    /// Submission order.
    Fifo,
}

/// The scheduler configuration: SGE's `sched_conf(5)` parameters with their names, plus the
/// policy selection. Defaults are SGE 8.1.9's compiled-in values except that the share tree is
/// on (10,000 tickets) with a 14-day halftime, which is what our users asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedulerConfig {
    pub policy: PolicyOrder,
    pub weight_priority: f64,
    pub weight_urgency: f64,
    pub weight_ticket: f64,
    pub weight_waiting_time: f64,
    pub weight_deadline: f64,
    /// Hours.
    pub halftime: f64,
    pub usage_weight_list: BTreeMap<String, f64>,
    pub compensation_factor: f64,
    pub weight_user: f64,
    pub weight_project: f64,
    pub weight_department: f64,
    pub weight_job: f64,
    pub weight_tickets_functional: f64,
    pub weight_tickets_share: f64,
    pub share_override_tickets: bool,
    pub share_functional_shares: bool,
    pub max_functional_jobs_to_schedule: u32,
    pub report_pjob_tickets: bool,
    pub max_pending_tasks_per_job: u32,
    pub policy_hierarchy: String,
    pub max_reservation: u32,
    /// `INFINITY` or a time.
    pub default_duration: String,
    pub maxujobs: u32,
    pub schedd_job_info: bool,
    /// Seconds between periodic passes (waiting-time changes); passes also run on events.
    pub schedule_interval: String,
    /// Qube! preemption on a job state change (`cluster` policy): `none` (default),
    /// `passive` or `aggressive` (gridspool extension).
    pub preemption: PreemptionSetting,
    /// Armada fair share (`armada` policy; gridspool extension).
    pub armada: ArmadaConfig,
    /// Start-time estimates (`qstat --start`; gridspool extension).
    pub start_estimates: StartEstimatesConfig,
}

/// `scheduler.start_estimates`: `sched_d` plays the cell forward in a process of its own
/// (`sched::forecast`) after the events that move the estimates, at most once per `refresh`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StartEstimatesConfig {
    pub enabled: bool,
    /// The shortest time between two forecasts (`h:m:s` or seconds).
    pub refresh: String,
    /// How far ahead the forecast plays (`h:m:s` or seconds); later starts are unknown.
    pub horizon: String,
    /// Where a job's expected run time comes from.
    pub run_times: RunTimeSource,
}

/// `scheduler.start_estimates.run_times`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunTimeSource {
    /// `h_rt`/`s_rt`, else the queue's, else `default_duration` (Slurm's method).
    Limits,
    /// The median of the owner's recent runs of the same kind (accounting file), capped by
    /// the limits (`sched::forecast::run_times`): the default, as it makes estimates several
    /// times closer where jobs ask for more time than they use (`bench/estimates.sh`).
    #[default]
    Learned,
}

impl StartEstimatesConfig {
    /// `refresh` in seconds (checked when the configuration is loaded).
    pub fn refresh_secs(&self) -> i64 {
        crate::time::parse_time(&self.refresh).unwrap_or(10)
    }

    /// `horizon` in seconds (checked when the configuration is loaded).
    pub fn horizon_secs(&self) -> i64 {
        crate::time::parse_time(&self.horizon).unwrap_or(30 * 86_400)
    }
}

impl Default for StartEstimatesConfig {
    fn default() -> Self {
        StartEstimatesConfig {
            enabled: true,
            refresh: "0:0:10".to_string(),
            horizon: "720:0:0".to_string(),
            run_times: RunTimeSource::Learned,
        }
    }
}

/// `scheduler.preemption` (Qube!'s preemption policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PreemptionSetting {
    #[default]
    None,
    Passive,
    Aggressive,
}

/// `scheduler.armada.mode`: inverse-priority slices with probabilistic slicing of the rest
/// (the seed), or dominant-resource fairness (what Armada does today).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ArmadaMode {
    #[default]
    Slices,
    Drf,
}

/// `scheduler.armada`: the Armada seed's parameters. A queue is the job's project, or its
/// owner when it has no project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArmadaConfig {
    pub mode: ArmadaMode,
    /// Half-time of the queue priority decay, in seconds.
    pub halftime: f64,
    /// Priority factor per queue (1 when absent; a lower factor earns more).
    pub priority_factors: BTreeMap<String, f64>,
    /// Seed of the probabilistic slicing; the clock when absent (set it in tests).
    pub seed: Option<u64>,
    /// `useProbabilisticSchedulingForAllResources`.
    pub probabilistic_for_all: bool,
}

impl Default for ArmadaConfig {
    fn default() -> Self {
        ArmadaConfig {
            mode: ArmadaMode::Slices,
            halftime: 3600.0,
            priority_factors: BTreeMap::new(),
            seed: None,
            probabilistic_for_all: false,
        }
    }
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: PolicyOrder::Sge,
            weight_priority: 0.0,
            weight_urgency: 0.5,
            weight_ticket: 0.5,
            weight_waiting_time: 0.278,
            weight_deadline: 3_600_000.0,
            halftime: 14.0 * 24.0,
            usage_weight_list: BTreeMap::from([
                ("cpu".to_string(), 1.0),
                ("mem".to_string(), 0.0),
                ("io".to_string(), 0.0),
            ]),
            compensation_factor: 5.0,
            weight_user: 0.25,
            weight_project: 0.25,
            weight_department: 0.25,
            weight_job: 0.25,
            weight_tickets_functional: 0.0,
            weight_tickets_share: 10_000.0,
            share_override_tickets: true,
            share_functional_shares: true,
            max_functional_jobs_to_schedule: 200,
            report_pjob_tickets: true,
            max_pending_tasks_per_job: 50,
            policy_hierarchy: "OFS".to_string(),
            max_reservation: 0,
            default_duration: "INFINITY".to_string(),
            maxujobs: 0,
            schedd_job_info: true,
            schedule_interval: "0:0:15".to_string(),
            preemption: PreemptionSetting::None,
            armada: ArmadaConfig::default(),
            start_estimates: StartEstimatesConfig::default(),
        }
    }
}

/// The whole cluster configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterConfig {
    /// Managers besides root (`qconf -sm`).
    #[serde(default)]
    pub managers: Vec<String>,
    /// Operators (`qconf -so`).
    #[serde(default)]
    pub operators: Vec<String>,
    /// Submissions from uids below this are refused (SGE's `min_uid`).
    #[serde(default)]
    pub min_uid: u32,
    #[serde(default)]
    pub min_gid: u32,
    pub hosts: Vec<HostConfig>,
    #[serde(default)]
    pub hostgroups: BTreeMap<String, Vec<String>>,
    pub queues: Vec<QueueConfig>,
    /// Complexes added to, or overriding, SGE's built-in table.
    #[serde(default)]
    pub complexes: Vec<Complex>,
    #[serde(default)]
    pub parallel_environments: Vec<PeConfig>,
    #[serde(default)]
    pub projects: Vec<ProjectConfig>,
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// access_list(5) lists made or changed by the administrator (SGE's built-in ones are
    /// always there: [`ClusterConfig::access_lists`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub access_lists: Vec<AccessList>,
    /// sge_conf(5)'s global `user_lists`, `xuser_lists`, `projects` and `xprojects`.
    #[serde(default, skip_serializing_if = "ClusterAccess::is_default")]
    pub cluster_access: ClusterAccess,
    #[serde(default)]
    pub share_tree: Option<ShareTreeNode>,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// sge_conf(5)'s `prolog` and `epilog`: run before and after every job whose queue has
    /// none of its own (`[user@]path [args]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilog: Option<String>,
    /// The program that sends job mail (`-m`, `-M`), run as `mailer -s SUBJECT RECIPIENT`
    /// with the body on standard input (SGE's `mailer`; default `/usr/bin/mail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailer: Option<PathBuf>,
    /// How often `sched_d` publishes each host's load and the usage of the tasks running there
    /// (SGE's `load_report_time`: `h:m:s` or seconds; default `0:0:40`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_report_time: Option<String>,
    /// After this long without a word from an ssh host, its queue instances are unknown
    /// (`au`) and it gets no new work (SGE's `max_unheard`; default `0:0:20`, SGE's 5 min).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unheard: Option<String>,
    /// How long after a host went unknown its tasks are rescheduled (SGE's
    /// `reschedule_unknown`; `0:0:0` never; default `0:0:5`, SGE's is `0:0:0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_unknown: Option<String>,
    /// SGE's `qmaster_params ENABLE_RESCHEDULE_KILL`: tasks of jobs that are not rerunnable
    /// are ended (never ran) when their host is rescheduled, instead of staying `r` until it
    /// returns (default `true`, SGE's `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_reschedule_kill: Option<bool>,
    /// SGE's `qmaster_params ENABLE_RESCHEDULE_SLAVE`: a parallel job is rescheduled when a
    /// host of its slave tasks is, not only its master task's (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_reschedule_slave: Option<bool>,
    /// calendar_conf(5)'s calendars, named by queues' `calendar`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<CalendarConfig>,
    /// Resource quota sets (`sge_resource_quota(5)`, `qconf -srqs`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_quotas: Vec<resource_quotas::ResourceQuotaSet>,
}

/// The pseudo-host whose `complex_values` are the cluster's global consumables (SGE's global
/// execution host, `qconf -se global`): a `hosts[]` entry of that name offers no slots, is in
/// no queue or host group, and is never reached, probed or listed as an execution host.
pub const GLOBAL_HOST: &str = "global";

/// gridspool's `max_unheard` when none is configured (see [`ClusterConfig::max_unheard`]).
pub const DEFAULT_MAX_UNHEARD: Duration = Duration::from_secs(20);
/// gridspool's `reschedule_unknown` when none is configured.
pub const DEFAULT_RESCHEDULE_UNKNOWN: Duration = Duration::from_secs(5);

/// A configured positive time (`h:m:s` or seconds) as a duration.
fn positive_time(text: Option<&str>) -> Option<Duration> {
    text.and_then(crate::time::parse_time)
        .filter(|&secs| secs > 0)
        .map(|secs| Duration::from_secs(secs as u64))
}

/// SGE's compiled-in mailer, when `mailer` is not configured.
pub const DEFAULT_MAILER: &str = "/usr/bin/mail";

/// Reads `config.yaml` as every spool file is read (`file::open`): a regular file in the
/// cell, not a link to one, never a FIFO that would hang every command.
fn read_config_text(path: &Path) -> std::io::Result<String> {
    Ok(crate::file::open::read_to_string(path)?)
}

impl ClusterConfig {
    /// The mail program: the configured one, else SGE's default.
    pub fn mailer(&self) -> PathBuf {
        self.mailer
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_MAILER))
    }

    /// The interval of the host reports: `load_report_time`, else SGE's 40 s.
    pub fn load_report_interval(&self) -> Duration {
        self.load_report_time
            .as_deref()
            .and_then(crate::time::parse_time)
            .filter(|&secs| secs > 0)
            .map_or(Duration::from_secs(40), |secs| {
                Duration::from_secs(secs as u64)
            })
    }

    /// `max_unheard`, else [`DEFAULT_MAX_UNHEARD`]. SGE's 5 minutes suit an execd that reports
    /// every 40 s; `sched_d` hears from every ssh host every few seconds (its session
    /// sends a heartbeat), so a dead host can be known, and its work moved, much sooner.
    pub fn max_unheard(&self) -> Duration {
        positive_time(self.max_unheard.as_deref()).unwrap_or(DEFAULT_MAX_UNHEARD)
    }

    /// How often an ssh host's session says it is alive: a quarter of `max_unheard`,
    /// between 0.25 and 5 s, so that a few lost beats never make a host unknown.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.max_unheard() / 4).clamp(Duration::from_millis(250), Duration::from_secs(5))
    }

    /// `enable_reschedule_kill` (default `true`): a task that may not be rerun is killed
    /// when it is rescheduled (its host lost, `qmod -r`) instead of staying.
    pub fn enable_reschedule_kill(&self) -> bool {
        self.enable_reschedule_kill.unwrap_or(true)
    }

    /// How long after `host` went unknown its tasks are rescheduled; `None`: never (`0:0:0`).
    pub fn reschedule_unknown(&self, host: &str) -> Option<Duration> {
        let text = self
            .host(host)
            .and_then(|h| h.reschedule_unknown.as_deref())
            .or(self.reschedule_unknown.as_deref());
        match text {
            None => Some(DEFAULT_RESCHEDULE_UNKNOWN),
            Some(t) => crate::time::parse_time(t)
                .filter(|&secs| secs > 0)
                .map(|secs| Duration::from_secs(secs as u64)),
        }
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = read_config_text(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// Reads `path` and parses it; also returns the text parsed, for [`snapshot::encode`].
    pub fn load_text(path: &Path) -> Result<(String, Self), ConfigError> {
        let text = read_config_text(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config = Self::parse(&text).map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })?;
        Ok((text, config))
    }

    /// What clients load: the configuration in `path`, taken from the compiled `snapshot`
    /// beside it when that provably stands for the text now in `path` (see [`snapshot`]),
    /// else parsed from the YAML.
    pub fn load_with_snapshot(path: &Path, snapshot: &Path) -> Result<Self, ConfigError> {
        use std::os::unix::fs::MetadataExt;
        let read_err = |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::file::open::open(path)
            .map_err(std::io::Error::from)
            .map_err(read_err)?;
        let meta = file.metadata().map_err(read_err)?;
        let yaml = read_whole(&file, meta.len()).map_err(read_err)?;
        if let Some(config) = Self::from_snapshot(snapshot, meta.uid(), &yaml) {
            return Ok(config);
        }
        let text = String::from_utf8(yaml).map_err(|_| {
            read_err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ))
        })?;
        Self::parse(&text).map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// The snapshot's configuration, if the snapshot is trustworthy (owned by root or by the
    /// owner of `config.yaml`, writable by nobody else) and stands for `yaml`.
    fn from_snapshot(snapshot: &Path, config_owner: u32, yaml: &[u8]) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let file = crate::file::open::open(snapshot).ok()?;
        let meta = file.metadata().ok()?;
        let trusted_owner = meta.uid() == 0 || meta.uid() == config_owner;
        if !trusted_owner || meta.mode() & 0o022 != 0 || !meta.is_file() {
            return None;
        }
        let bytes = read_whole(&file, meta.len()).ok()?;
        snapshot::decode(&bytes, yaml)
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let mut config: ClusterConfig = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        for h in &mut config.hosts {
            for (kind, ids) in &h.devices {
                h.complex_values
                    .entry(kind.clone())
                    .or_insert_with(|| ids.len().to_string());
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// The default configuration for a spool on this host.
    pub fn default_text(hostname: &str, cpus: usize) -> String {
        DEFAULT_CONFIG_TEMPLATE
            .replace("{{hostname}}", hostname)
            .replace("{{cpus}}", &cpus.to_string())
    }

    fn validate(&self) -> Result<(), String> {
        let estimates = &self.scheduler.start_estimates;
        for (key, t) in [
            ("refresh", &estimates.refresh),
            ("horizon", &estimates.horizon),
        ] {
            if !crate::time::parse_time(t).is_some_and(|secs| secs > 0 && secs < 1 << 31) {
                return Err(format!(
                    "scheduler: start_estimates: {key}: {t:?} is not a positive time (h:m:s or seconds)"
                ));
            }
        }
        if let Some(t) = &self.load_report_time
            && !crate::time::parse_time(t).is_some_and(|secs| secs > 0 && secs < i64::MAX)
        {
            return Err(format!(
                "load_report_time: {t:?} is not a positive time (h:m:s or seconds)"
            ));
        }
        let times = [("max_unheard", self.max_unheard.as_ref(), false)]
            .into_iter()
            .chain([("reschedule_unknown", self.reschedule_unknown.as_ref(), true)])
            .chain(self.hosts.iter().map(|h| {
                (
                    "hosts: reschedule_unknown",
                    h.reschedule_unknown.as_ref(),
                    true,
                )
            }));
        for (key, value, zero_allowed) in times {
            if let Some(t) = value
                && !crate::time::parse_time(t)
                    .is_some_and(|secs| (secs > 0 || zero_allowed && secs == 0) && secs < 1 << 31)
            {
                return Err(format!(
                    "{key}: {t:?} is not a {}time (h:m:s or seconds)",
                    if zero_allowed { "" } else { "positive " }
                ));
            }
        }
        let s = &self.scheduler;
        match (s.preemption, s.policy) {
            (PreemptionSetting::None, _)
            | (_, PolicyOrder::Cluster)
            | (PreemptionSetting::Aggressive, PolicyOrder::Sge) => {}
            (PreemptionSetting::Passive, PolicyOrder::Sge) => {
                return Err(
                    "scheduler: preemption passive needs policy cluster (under sge, use aggressive)"
                        .into(),
                );
            }
            (_, other) => {
                return Err(format!(
                    "scheduler: preemption needs policy cluster or sge, not {}",
                    format!("{other:?}").to_lowercase()
                ));
            }
        }
        for h in &self.hosts {
            if let Some(v) = h.complex_values.get("slots")
                && v.trim().parse::<u32>().is_err()
            {
                return Err(format!(
                    "host {}: complex_values slots={v} is not a number of slots",
                    h.name
                ));
            }
            for (kind, ids) in &h.devices {
                let consumable = self
                    .complex(kind)
                    .is_some_and(|c| c.consumable != Consumable::No);
                if !consumable {
                    return Err(format!(
                        "host {}: devices {kind}: there is no consumable complex {kind} (add it to complexes)",
                        h.name
                    ));
                }
                let mut seen = std::collections::BTreeSet::new();
                if let Some(dup) = ids.iter().find(|id| !seen.insert(*id)) {
                    return Err(format!("host {}: devices {kind}: id {dup} twice", h.name));
                }
            }
        }
        self.validate_global_host()?;
        for q in &self.queues {
            for h in &q.hostlist {
                if h == GLOBAL_HOST {
                    return Err(format!(
                        "queue {}: {GLOBAL_HOST} is the global pseudo-host, not an execution host",
                        q.name
                    ));
                }
                if h.starts_with('@') {
                    if !self.hostgroups.contains_key(h) {
                        return Err(format!("queue {}: unknown host group {h}", q.name));
                    }
                } else if self.host(h).is_none() {
                    return Err(format!("queue {}: unknown host {h}", q.name));
                }
            }
            for pe in &q.pe_list {
                if self.pe(pe).is_none() {
                    return Err(format!(
                        "queue {}: unknown parallel environment {pe}",
                        q.name
                    ));
                }
            }
        }
        for c in &self.calendars {
            Calendar::parse(c)?;
        }
        for q in &self.queues {
            if let Some(c) = &q.calendar
                && self.calendar(c).is_none()
            {
                return Err(format!("queue {}: unknown calendar {c}", q.name));
            }
        }
        for q in &self.queues {
            let per_host = q.per_host.iter().filter_map(|(key, over)| {
                let text = over.get("priority")?.as_str()?;
                Some((format!("{}@{key}", q.name), text))
            });
            let own = q.priority.iter().map(|p| (q.name.clone(), p.as_str()));
            for (queue, text) in own.chain(per_host) {
                if let Some(e) = priority_error(text) {
                    return Err(format!("queue {queue}: priority {text:?}: {e}"));
                }
            }
        }
        self.check_access_references()?;
        self.validate_per_host()?;
        let complexes = self.complexes();
        let mut rqs_names = std::collections::BTreeSet::new();
        for set in &self.resource_quotas {
            if !rqs_names.insert(set.name.as_str()) {
                return Err(format!("resource_quotas: {} twice", set.name));
            }
            resource_quotas::check(set, &complexes)
                .map_err(|e| format!("resource_quotas: {}: {e}", set.name))?;
        }
        for (group, members) in &self.hostgroups {
            for h in members {
                if !h.starts_with('@') && self.host(h).is_none() {
                    return Err(format!("host group {group}: unknown host {h}"));
                }
                if h == GLOBAL_HOST {
                    return Err(format!(
                        "host group {group}: {GLOBAL_HOST} is the global pseudo-host, not an execution host"
                    ));
                }
            }
        }
        for q in &self.queues {
            let f = &q.fbsng;
            if f.qp_min > f.qp_max {
                return Err(format!(
                    "queue {}: fbsng qp_min {} is above qp_max {}",
                    q.name, f.qp_min, f.qp_max
                ));
            }
            for (key, value) in [
                ("qpi", f.qpi),
                ("qpd", f.qpd),
                ("qpg", f.qpg),
                ("spg", f.spg),
            ] {
                if value < 0 {
                    return Err(format!("queue {}: fbsng {key} {value} is negative", q.name));
                }
            }
        }
        Ok(())
    }

    /// The global pseudo-host carries the cluster's consumables only: the scheduler reads
    /// nothing else of it (its slots would bound nothing, its access lists fence nothing: the
    /// global configuration's `cluster_access` does that), so anything else is refused
    /// rather than ignored.
    fn validate_global_host(&self) -> Result<(), String> {
        let Some(g) = self.host(GLOBAL_HOST) else {
            return Ok(());
        };
        let held = [
            (
                g.slots.is_some() || g.complex_values.contains_key("slots"),
                "slots",
            ),
            (!g.devices.is_empty(), "devices"),
            (!matches!(g.launch, LaunchMethod::Local), "launch"),
            (
                !g.fence().is_open(),
                "user_lists, xuser_lists, projects or xprojects (the global configuration's cluster_access fences the cluster)",
            ),
            (g.reschedule_unknown.is_some(), "reschedule_unknown"),
            (!g.attributes.is_empty(), "attributes"),
        ];
        match held.iter().find(|(there, _)| *there) {
            Some((_, what)) => Err(format!(
                "host {GLOBAL_HOST}: the global pseudo-host holds only complex_values (consumables and fixed values), not {what}"
            )),
            None => Ok(()),
        }
    }

    /// What is valid but probably not what the administrator meant: logged by `sched_d` when
    /// it loads the configuration.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.scheduler.policy == PolicyOrder::Fbsng
            && let Some(first) = self.queues.first()
            && let Some(other) = self.queues.iter().find(|q| q.fbsng.qpi != first.fbsng.qpi)
        {
            // docs/policies.md, FBSNG item 8.
            out.push(format!(
                "queues {} and {} have different fbsng qpi ({} and {}): under the fbsng policy \
                 a queue whose qpi is small against the others' can starve; the seed keeps \
                 qpi equal across queues (docs/policies.md, FBSNG)",
                first.name, other.name, first.fbsng.qpi, other.fbsng.qpi
            ));
        }
        out
    }

    /// Root is always a manager (SGE); others by name.
    pub fn is_manager(&self, user: &str, uid: u32) -> bool {
        uid == 0 || self.managers.iter().any(|m| m == user)
    }

    pub fn is_operator(&self, user: &str, uid: u32) -> bool {
        self.is_manager(user, uid) || self.operators.iter().any(|o| o == user)
    }

    /// The most slots `host`'s queue instances may use together: the `slots=N` of its
    /// `complex_values` (and an older configuration's `hosts[].slots`); `None`, only their
    /// queues' `slots` bound them (SGE's default).
    pub fn host_slots_cap(host: &HostConfig) -> Option<u32> {
        let complex = host
            .complex_values
            .get("slots")
            .and_then(|v| v.trim().parse::<u32>().ok());
        match (complex, host.slots) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The slots `host` offers: its cap ([`Self::host_slots_cap`]), else its queue
    /// instances' slots together.
    pub fn host_slots(&self, host: &HostConfig) -> u32 {
        Self::host_slots_cap(host).unwrap_or_else(|| {
            self.queues
                .iter()
                .filter(|q| self.queue_hosts(q).iter().any(|h| h.name == host.name))
                .fold(0u32, |n, q| {
                    n.saturating_add(self.queue_instance(q, &host.name).slots)
                })
        })
    }

    /// `host`'s `complex_values` as `qconf -se` shows them: an older configuration's
    /// `hosts[].slots` is its `slots=N` ([`Self::host_slots_cap`]).
    pub fn shown_complex_values(host: &HostConfig) -> BTreeMap<String, String> {
        let mut values = host.complex_values.clone();
        if let Some(cap) = Self::host_slots_cap(host) {
            values.insert("slots".into(), cap.to_string());
        }
        values
    }

    pub fn host(&self, name: &str) -> Option<&HostConfig> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The global pseudo-host as configured, else as SGE has it in a fresh cell (no
    /// consumables).
    pub fn global_host_or_blank(&self) -> HostConfig {
        self.host(GLOBAL_HOST)
            .cloned()
            .unwrap_or_else(|| HostConfig::new(GLOBAL_HOST, None, LaunchMethod::Local))
    }

    /// The execution hosts: every configured host but the global pseudo-host.
    pub fn exec_hosts(&self) -> impl Iterator<Item = &HostConfig> {
        self.hosts.iter().filter(|h| h.name != GLOBAL_HOST)
    }

    pub fn queue(&self, name: &str) -> Option<&QueueConfig> {
        self.queues.iter().find(|q| q.name == name)
    }

    pub fn calendar(&self, name: &str) -> Option<&CalendarConfig> {
        self.calendars.iter().find(|c| c.name == name)
    }

    pub fn pe(&self, name: &str) -> Option<&PeConfig> {
        self.parallel_environments.iter().find(|p| p.name == name)
    }

    /// Every complex: the built-in table with the configuration's entries applied by name.
    pub fn complexes(&self) -> Vec<Complex> {
        let mut all = builtin_complexes();
        for c in &self.complexes {
            match all.iter_mut().find(|b| b.name == c.name) {
                Some(b) => *b = c.clone(),
                None => all.push(c.clone()),
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Looks a complex up by name or shortcut, as `-l` does.
    pub fn complex(&self, name_or_shortcut: &str) -> Option<Complex> {
        let find = |c: &&Complex| c.name == name_or_shortcut || c.shortcut == name_or_shortcut;
        self.complexes
            .iter()
            .find(find)
            .cloned()
            .or_else(|| builtin_complexes().iter().find(find).cloned())
    }

    /// The hosts of a queue, host groups expanded (recursively), in configuration order.
    pub fn queue_hosts(&self, queue: &QueueConfig) -> Vec<&HostConfig> {
        let mut names = Vec::new();
        for entry in &queue.hostlist {
            self.expand_host_entry(entry, &mut names, 0);
        }
        // By name through one map, each host once: a queue of 1,000 hosts is read when the
        // scheduler's cluster is built, without a walk of every host per name.
        let by_name: std::collections::HashMap<&str, &HostConfig> =
            self.hosts.iter().map(|h| (h.name.as_str(), h)).collect();
        let mut seen = std::collections::HashSet::new();
        names
            .iter()
            .filter_map(|n| by_name.get(n.as_str()).copied())
            .filter(|h| seen.insert(h.name.as_str()))
            .collect()
    }

    /// The entries of an access list `@acl` in a resource quota `users` filter: user names
    /// and `@unixgroup`s (a user's primary group admits them, as in the queues' lists).
    pub fn rqs_acl_members(&self, acl: &str) -> Vec<String> {
        let name = acl.strip_prefix('@').unwrap_or(acl);
        self.access_list(name)
            .map(|l| l.entries)
            .unwrap_or_default()
    }

    fn expand_host_entry(&self, entry: &str, out: &mut Vec<String>, depth: u32) {
        if depth > 16 {
            return;
        }
        if entry.starts_with('@') {
            for member in self.hostgroups.get(entry).into_iter().flatten() {
                self.expand_host_entry(member, out, depth + 1);
            }
        } else {
            out.push(entry.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_configuration_parses_and_names_the_local_host() {
        let text = ClusterConfig::default_text("node1", 4);
        let config = ClusterConfig::parse(&text).expect("default config parses");
        assert_eq!(config.hosts[0].name, "node1");
        assert_eq!(config.hosts[0].slots, None);
        let q = config.queue("all.q").expect("all.q");
        assert_eq!(q.slots, 4);
        assert_eq!(config.queue_hosts(q)[0].name, "node1");
        assert!(config.pe("smp").is_some());
        assert_eq!(config.complex("s").map(|c| c.urgency), Some(1000.0));
        assert_eq!(
            config.complex("h_rt").map(|c| c.kind),
            Some(ComplexType::Time)
        );
        assert!(config.complex("nosuchres").is_none());
        assert_eq!(config.scheduler.weight_tickets_share, 10_000.0);
        assert_eq!(config.scheduler.halftime, 336.0);
        assert!(config.is_manager("root", 0));
    }

    /// A queue's priority is the leading integer of its text, as C's `atoi` reads it, and a
    /// configuration whose priority SGE's qmaster would refuse (its own or a host's) is
    /// refused too.
    #[test]
    fn queue_priorities_read_as_sge_reads_them() {
        for (text, nice) in [
            ("5", 5),
            ("+7", 7),
            ("-20", -20),
            ("1.5", 1),
            ("5x", 5),
            ("abc", 0),
        ] {
            assert_eq!(nice_value(text), nice, "{text}");
        }
        assert_eq!(priority_error("-0"), Some("Invalid character"));
        assert_eq!(
            priority_error("21"),
            Some("Priority not in range -20 to +20")
        );
        assert_eq!(priority_error("0"), None);
        let text = ClusterConfig::default_text("node1", 4);
        let with = |p: &str| text.replace("    tmpdir: /tmp", &format!("    tmpdir: /tmp\n{p}"));
        assert!(ClusterConfig::parse(&with("    priority: \"-5\"")).is_ok());
        let err = ClusterConfig::parse(&with("    priority: \"30\"")).expect_err("30");
        assert!(err.contains("queue all.q: priority \"30\""), "{err}");
        let err =
            ClusterConfig::parse(&with("    per_host: {node1: {priority: abc}}")).expect_err("abc");
        assert!(
            err.contains("queue all.q@node1: priority \"abc\": Invalid character"),
            "{err}"
        );
    }

    #[test]
    fn a_hosts_slots_are_a_number() {
        let text = ClusterConfig::default_text("node1", 4).replace(
            "    launch: {method: local}",
            "    launch: {method: local}\n    complex_values: {slots: many}",
        );
        let err = ClusterConfig::parse(&text).expect_err("must fail");
        assert!(
            err.contains("complex_values slots=many is not a number"),
            "{err}"
        );
    }

    #[test]
    fn unknown_references_are_reported() {
        let text = ClusterConfig::default_text("node1", 4)
            .replace("hostlist: [\"@allhosts\"]", "hostlist: [nosuchhost]");
        let err = ClusterConfig::parse(&text).expect_err("must fail");
        assert!(err.contains("unknown host nosuchhost"), "{err}");
    }

    #[test]
    fn fbsng_parameters_are_checked_and_unequal_qpi_is_warned_about() {
        let text = ClusterConfig::default_text("node1", 4);
        let mut config = ClusterConfig::parse(&text).expect("default config parses");
        assert!(config.warnings().is_empty());
        let mut second = config.queues[0].clone();
        second.name = "bulk.q".into();
        second.fbsng.qpi = 3;
        config.queues.push(second);
        // Unequal QPI matters only under the fbsng policy.
        assert!(config.warnings().is_empty());
        config.scheduler.policy = PolicyOrder::Fbsng;
        let warnings = config.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("all.q and bulk.q have different fbsng qpi (1 and 3)"),
            "{warnings:?}"
        );
        config.queues[1].fbsng.qpi = 1;
        assert!(config.warnings().is_empty());
        config.queues[1].fbsng.qp_min = 200;
        assert_eq!(
            config.validate(),
            Err("queue bulk.q: fbsng qp_min 200 is above qp_max 100".to_string())
        );
        config.queues[1].fbsng.qp_min = 0;
        config.queues[1].fbsng.qpd = -1;
        assert_eq!(
            config.validate(),
            Err("queue bulk.q: fbsng qpd -1 is negative".to_string())
        );
    }
}
