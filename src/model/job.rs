//! A job as submitted (`JobSubmission`, written once by `qsub`) and as it lives on
//! (`JobRecord`: the submission plus the state only `sched_d` changes).

use super::{Holds, JobId, TaskId, TaskIdRange, TaskSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped when a field changes meaning; readers accept unknown fields and older versions.
pub const JOB_SCHEMA_VERSION: u32 = 1;

// Fields at their default values are left out of the JSON: a record is then a third of the
// size, which is what `qstat` pays for at 100,000 jobs (every field has a serde default, so
// readers are unaffected).
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_true(b: &bool) -> bool {
    *b
}
fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// Who submitted the job and from where: filled in by `qsub` from the kernel (uid, gid) and
/// the submit environment (`SGE_O_*`), never from an option a user can set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submitter {
    pub owner: String,
    pub uid: u32,
    pub group: String,
    pub gid: u32,
    /// Seconds since the epoch.
    pub submission_time: i64,
    pub sge_o_home: String,
    pub sge_o_log_name: String,
    pub sge_o_path: String,
    pub sge_o_shell: String,
    pub sge_o_workdir: String,
    pub sge_o_host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sge_o_mail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sge_o_tz: Option<String>,
}

impl Submitter {
    /// A submission by `caller` on `host` from `workdir`, now, as `qsub` records it when the
    /// environment sets none of `HOME`, `LOGNAME`, `PATH`, `SHELL`, `MAIL`, `TZ`: the user
    /// database's home and shell, no path.
    pub fn new(caller: &crate::identity::Caller, host: &str, workdir: &str) -> Self {
        Submitter {
            owner: caller.user.clone(),
            uid: caller.uid,
            group: caller.group.clone(),
            gid: caller.gid,
            submission_time: crate::time::now(),
            sge_o_home: caller.home.clone(),
            sge_o_log_name: caller.user.clone(),
            sge_o_path: String::new(),
            sge_o_shell: caller.shell.clone(),
            sge_o_workdir: workdir.to_string(),
            sge_o_host: host.to_string(),
            sge_o_mail: None,
            sge_o_tz: None,
        }
    }
}

/// `[host:]path` from `-o`, `-e`, `-i`, `-S`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub path: String,
}

/// One `-v NAME[=value]` (or an entry captured by `-V`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// One `-l name=value`, with `name` resolved to the complex's full name at submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRequest {
    pub name: String,
    pub value: String,
}

/// `n`, `n-m`, `-m`, `n-`: the slot range of `-pe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotRange {
    pub min: u32,
    pub max: u32,
}

/// `-pe name slot_range`; `name` may be a wildcard pattern, matched at dispatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeRequest {
    pub name: String,
    pub range: SlotRange,
}

/// Everything about a job that its submitter chose and `qalter` may change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobSpec {
    pub name: String,
    /// `script_file` of `qstat -j`: the script's path as given, the command of `-b y`, `STDIN`.
    pub script_file: String,
    /// `-b y`: the command is run as is, not copied as a script.
    #[serde(skip_serializing_if = "is_false")]
    pub binary: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `-shell n` starts a binary directly instead of through the shell.
    #[serde(skip_serializing_if = "is_true")]
    pub shell: bool,
    /// `-S`
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interpreter: Vec<PathSpec>,
    /// Working directory from `-cwd` or `-wd`; `None` means the owner's home, as in SGE.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stdout: Vec<PathSpec>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<PathSpec>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stdin: Vec<PathSpec>,
    /// `-j y`
    #[serde(skip_serializing_if = "is_false")]
    pub merge_stderr: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hard_resources: Vec<ResourceRequest>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub soft_resources: Vec<ResourceRequest>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hard_queues: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub soft_queues: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub master_queues: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe: Option<PeRequest>,
    /// `-t`; `None` for a job that is not an array job (its one task is task 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array: Option<TaskIdRange>,
    /// `-tc`: at most this many tasks of the array at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_concurrency: Option<u32>,
    /// `-hold_jid` as requested (ids, names, patterns) and as resolved to job ids.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hold_jid: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub predecessors: Vec<JobId>,
    /// `-hold_jid_ad` as requested and resolved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hold_jid_ad: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub array_predecessors: Vec<JobId>,
    /// `-p`, -1023..=1024.
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub priority: i32,
    /// `-a`, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<i64>,
    /// `-dl`, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<i64>,
    /// `-r y|n`; `None` leaves it to the queue's `rerun`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restartable: Option<bool>,
    /// `-R y`
    #[serde(skip_serializing_if = "is_false")]
    pub reserve: bool,
    /// `-m`, SGE's letters (`bea`, `n`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub mail_options: String,
    /// `-M`; SGE's default is `owner@submithost`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mail_list: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub notify: bool,
    /// `-now y`: start immediately or not at all.
    #[serde(skip_serializing_if = "is_false")]
    pub now: bool,
    /// An interactive job (`qrsh`): where its client waits for the job's input and output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<InteractiveSession>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// `-A`; SGE's default is `sge`.
    pub account: String,
    /// Qube!'s cluster path (`-cluster`), `None` meaning the root `/`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// Never preempt this job (Qube!'s non-preemptible flag).
    #[serde(skip_serializing_if = "is_false")]
    pub no_preempt: bool,
    /// Job context variables (`-ac`, `-sc`, `-dc`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, String>,
    /// `-js`: the job's share of its user's or project's share-tree/functional tickets
    /// (`jobshare` in `qstat -j`).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub job_share: u32,
    /// `-C`: the directive prefix given on the command line (`directive_prefix` of `qstat -j`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directive_prefix: Option<String>,
    /// `-w`: SGE's `JB_verify_suitable_queues` (`w` 1, `e` 2; `n` 0), which `qstat -j`
    /// shows as `verify_suitable_queues`.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub verify_suitable_queues: u32,
    /// `-ar`: the advance reservation the job runs in (`qstat -j`'s `ar_id`), only inside
    /// its queue instances and window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ar: Option<u32>,
    /// When that reservation was submitted (`ar_submission_time` of `accounting(5)`), as
    /// `qsub -ar` found it.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub ar_submission_time: i64,
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

/// Where a `qrsh` client waits: the job's command runs with its standard input and output
/// on one TCP connection to `host:port` and its standard error on a second, each opened
/// with `cookie` (a secret only the client and the job's files hold: job files are not
/// readable by other users, nor is the task's spec on its host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InteractiveSession {
    /// Where to connect: the client's addresses that other hosts may reach (not loopback)
    /// and its host name, comma-separated, tried in this order.
    pub host: String,
    pub port: u16,
    pub cookie: String,
    /// A pseudo terminal of this many rows and columns for the command (`qrsh -pty y`, an
    /// interactive login).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<(u16, u16)>,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            script_file: String::new(),
            binary: false,
            args: Vec::new(),
            shell: true,
            interpreter: Vec::new(),
            cwd: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdin: Vec::new(),
            merge_stderr: false,
            env: Vec::new(),
            hard_resources: Vec::new(),
            soft_resources: Vec::new(),
            hard_queues: Vec::new(),
            soft_queues: Vec::new(),
            master_queues: Vec::new(),
            pe: None,
            array: None,
            task_concurrency: None,
            hold_jid: Vec::new(),
            predecessors: Vec::new(),
            hold_jid_ad: Vec::new(),
            array_predecessors: Vec::new(),
            priority: 0,
            start_time: None,
            deadline: None,
            restartable: None,
            reserve: false,
            mail_options: String::new(),
            mail_list: Vec::new(),
            notify: false,
            now: false,
            interactive: None,
            project: None,
            account: "sge".to_string(),
            cluster: None,
            no_preempt: false,
            context: BTreeMap::new(),
            job_share: 0,
            directive_prefix: None,
            verify_suitable_queues: 0,
            ar: None,
            ar_submission_time: 0,
        }
    }
}

impl JobSpec {
    /// The job's Qube! cluster path: `-cluster`, else the `-ac cluster=` context variable,
    /// else the root `/`.
    pub fn cluster_path(&self) -> String {
        self.cluster
            .clone()
            .or_else(|| self.context.get("cluster").cloned())
            .unwrap_or_else(|| "/".to_string())
    }

    /// The tasks the job consists of: the `-t` range, or task 1 alone.
    pub fn task_range(&self) -> TaskIdRange {
        self.array.unwrap_or(TaskIdRange::single(1))
    }

    /// Slots per task as a pending job shows them: the lower end of the `-pe` range (SGE's
    /// `urgency_slots min` default), else 1.
    pub fn slots(&self) -> u32 {
        self.pe.as_ref().map_or(1, |pe| pe.range.min.max(1))
    }
}

/// The header of a job file: what `qsub` writes, once, when it submits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSubmission {
    pub v: u32,
    pub id: JobId,
    pub submitter: Submitter,
    pub spec: JobSpec,
    /// Initial holds (`qsub -h` sets the user hold).
    #[serde(default)]
    pub holds: Holds,
}

/// Pending tasks that share the same holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingGroup {
    pub tasks: TaskSet,
    #[serde(default)]
    pub holds: Holds,
}

/// The state letters of a task that has left the pending list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// `t`: handed to a host, not yet confirmed running.
    Transferring,
    /// `r`
    Running,
    /// `s`: suspended by `qmod -sj` (its processes stopped). A task whose queue instance is
    /// suspended is apart: [`RunningTask::queue_suspended`].
    Suspended,
}

/// One running task (a whole job when not an array).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningTask {
    pub task: TaskId,
    pub state: RunState,
    /// Seconds since the epoch.
    pub start_time: i64,
    /// Cluster queue of the master task (`all.q`).
    pub queue: String,
    /// Host of the master task.
    pub host: String,
    pub slots: u32,
    /// For parallel jobs, every (host, queue, slots) granted; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub granted: Vec<(String, String, u32)>,
    /// `qdel` registered the task for deletion (`dr`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub deleting: bool,
    /// The task ran before and was requeued (`Rr`, `RESTARTED=1`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub restarted: bool,
    /// Its queue instance is suspended (`qmod -sq`): stopped as by `qmod -sj`, shown `S`
    /// (`Ss` when the job itself is suspended too), as SGE's `JSUSPENDED_ON_SUBORDINATE`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub queue_suspended: bool,
    /// `qmod -r` rescheduled it: `sched_d` kills it, and its end requeues it (`failed 25`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rescheduling: bool,
    /// The devices granted to it on its host, by complex (`gpu` → `["0", "1"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<(String, Vec<String>)>,
    /// Holds set while it runs (`qhold` of a running job, shown as `hr`): they matter again if
    /// the task is requeued, and `qrls` reports releasing them, as SGE does.
    #[serde(default, skip_serializing_if = "Holds::is_none")]
    pub holds: Holds,
    /// Online usage as last reported for the running task (`qstat -ext` cpu/mem/io columns,
    /// `usage` line of `qstat -j`); `None` until the first report, which `qstat -ext` shows
    /// as `NA`, as SGE does before execd's first load report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TaskUsage>,
}

impl RunningTask {
    /// Every `(host, queue, slots)` the task holds: its grant per host for a parallel task,
    /// else its one host.
    pub fn grants(&self) -> Vec<(String, String, u32)> {
        if self.granted.is_empty() {
            vec![(self.host.clone(), self.queue.clone(), self.slots)]
        } else {
            self.granted.clone()
        }
    }

    /// A task running on one host (`r`), with nothing else set: not parallel, not being
    /// deleted, no restart, no holds, no usage report yet.
    pub fn running(
        task: TaskId,
        queue: &str,
        host: &str,
        slots: u32,
        start_time: i64,
    ) -> RunningTask {
        RunningTask {
            task,
            state: RunState::Running,
            start_time,
            queue: queue.to_string(),
            host: host.to_string(),
            slots,
            granted: Vec::new(),
            deleting: false,
            restarted: false,
            queue_suspended: false,
            rescheduling: false,
            devices: Vec::new(),
            holds: Holds::NONE,
            usage: None,
        }
    }

    /// Its processes are stopped: the job or its queue instance is suspended.
    pub fn stopped(&self) -> bool {
        self.state == RunState::Suspended || self.queue_suspended
    }
}

/// Online usage of a running task, in SGE's scaled units (`sge_accounting(5)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskUsage {
    /// CPU seconds.
    pub cpu: f64,
    /// Integral memory usage, GB seconds.
    pub mem: f64,
    /// I/O, GB.
    pub io: f64,
    /// Current virtual memory, bytes.
    pub vmem: f64,
    /// Peak virtual memory, bytes.
    pub maxvmem: f64,
}

/// A running task's usage as its host last reported it (the shepherd samples it; `sched_d`'s
/// host probe publishes it with the host's load).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    pub job: JobId,
    pub task: TaskId,
    /// When it was sampled, seconds since the epoch.
    pub time: i64,
    pub usage: TaskUsage,
}

/// How a task ended, as `qsub -sync y` and `qacct` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishedTask {
    pub task: TaskId,
    pub exit_status: i32,
    /// SGE's `failed` code (0 when the job itself ran).
    pub failed: u32,
    pub end_time: i64,
    /// The signal that ended the job's first process (SGE's `WIFSIGNALED`): `qsub -sync y`
    /// reports `exited because of signal SIGKILL`, not the exit status 128 + signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The task was registered for deletion (`qdel`) when it ended: SGE's qmaster commits such
    /// a task as one that never ran, and `qsub -sync y` says `Unable to run job N`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub never_ran: bool,
}

/// Why a job sits in `Eqw`: `error reason 1:` of `qstat -j`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub time: i64,
    pub message: String,
}

/// What the scheduler computed for a job at its last pass: the priority columns of
/// `qstat -pri`, `-urg` and `-ext`, plus the active policy's own terms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PriorityInfo {
    pub prio: f64,
    pub nurg: f64,
    pub npprior: f64,
    pub ntckts: f64,
    pub urg: f64,
    pub rrcontr: f64,
    pub wtcontr: f64,
    pub dlcontr: f64,
    pub tickets: f64,
    pub otickets: f64,
    pub ftickets: f64,
    pub stickets: f64,
    pub share: f64,
    /// Extra terms of the active policy (cluster order, queue priority and gap, slice…),
    /// shown by `qstat -j` and `-pri`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policy_terms: Vec<(String, String)>,
}

impl PriorityInfo {
    /// A fingerprint of every figure `qstat -pri`, `-urg`, `-ext`, `-j` and their `-xml` and
    /// `-json` forms show of the job (each to five decimals, and the policy's terms), so that
    /// a state file is refreshed when any of them changed, not only when `prio` did: the
    /// top job of a share tree keeps `prio` 1.0 while its tickets move, and the waiting
    /// time's contribution grows while a normalised urgency may not.
    pub fn shown_fingerprint(&self, terms: &[(String, String)]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for v in [
            self.prio,
            self.nurg,
            self.npprior,
            self.ntckts,
            self.urg,
            self.rrcontr,
            self.wtcontr,
            self.dlcontr,
            self.tickets,
            self.otickets,
            self.ftickets,
            self.stickets,
            self.share,
        ] {
            ((v * 1e5).round() as i64).hash(&mut h);
        }
        terms.hash(&mut h);
        h.finish()
    }
}

/// The task-level state of a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskStates {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingGroup>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub running: Vec<RunningTask>,
    /// How many tasks have finished (their details are in the job's exit log and accounting).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub finished: u64,
    /// Which tasks have finished: the `ja-task-ID` of `qstat -s z`. (Records written before
    /// this field existed have only the count.)
    #[serde(skip_serializing_if = "TaskSet::is_empty")]
    pub finished_tasks: TaskSet,
    /// Runs given up on a host that went unknown (SGE's `reschedule_unknown`), kept until that
    /// host tells what became of them: a result it kept is the task's end (and cancels the
    /// requeued copy), a run still going there is killed. Never shown by `qstat`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rescheduled: Vec<RunningTask>,
    /// Pending tasks that ran before and were requeued (`qmod -r`, a host lost, preemption):
    /// shown `Rq`, and their next run is a restart (`RESTARTED=1`).
    #[serde(default, skip_serializing_if = "TaskSet::is_empty")]
    pub restarted: TaskSet,
}

impl TaskStates {
    pub fn pending_count(&self) -> u64 {
        self.pending.iter().map(|g| g.tasks.len()).sum()
    }

    /// Every pending task, held or not, as one set.
    pub fn pending_tasks(&self) -> TaskSet {
        let mut all = TaskSet::new();
        for g in &self.pending {
            for t in g.tasks.iter() {
                all.insert(t);
            }
        }
        all
    }

    /// No task is pending or running: the job is over.
    pub fn is_done(&self) -> bool {
        self.running.is_empty() && self.pending.iter().all(|g| g.tasks.is_empty())
    }
}

/// A job as it lives in the spool: the submission plus everything that changed since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub v: u32,
    pub id: JobId,
    pub submitter: Submitter,
    pub spec: JobSpec,
    pub tasks: TaskStates,
    /// Set when the job is in error state (`Eqw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// `None` until the scheduler has looked at the job (then qstat shows SGE's zeros).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PriorityInfo>,
    /// Why the job is not running, as of the last scheduling pass (`qstat -j`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_reasons: Vec<String>,
    /// Bumped by each `qalter` (`version:` of `qstat -j`).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub version: u32,
    /// Sequence number of the last request folded into this record.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub applied_request: u64,
}

impl JobRecord {
    /// The state of a freshly submitted job: every task pending with the submission's holds.
    pub fn from_submission(sub: JobSubmission) -> Self {
        let tasks = TaskSet::from_range(sub.spec.task_range());
        JobRecord {
            v: JOB_SCHEMA_VERSION,
            id: sub.id,
            submitter: sub.submitter,
            tasks: TaskStates {
                pending: vec![PendingGroup {
                    tasks,
                    holds: sub.holds,
                }],
                running: Vec::new(),
                finished: 0,
                finished_tasks: TaskSet::new(),
                rescheduled: Vec::new(),
                restarted: TaskSet::new(),
            },
            spec: sub.spec,
            error: None,
            priority: None,
            pending_reasons: Vec::new(),
            version: 0,
            applied_request: 0,
        }
    }

    pub fn is_array(&self) -> bool {
        self.spec.array.is_some()
    }

    /// Splits off the pending tasks in `tasks` into their own groups, returning mutable access
    /// to them, so a hold can be set on part of an array (`qhold 10.2`).
    pub fn pending_groups_for(&mut self, tasks: Option<&TaskSet>) -> Vec<&mut PendingGroup> {
        if let Some(sel) = tasks {
            let mut split = Vec::new();
            for g in self.tasks.pending.iter_mut() {
                let hit = g.tasks.remove_all(sel);
                if !hit.is_empty() {
                    split.push(PendingGroup {
                        tasks: hit,
                        holds: g.holds,
                    });
                }
            }
            self.tasks.pending.retain(|g| !g.tasks.is_empty());
            let start = self.tasks.pending.len();
            self.tasks.pending.extend(split);
            self.tasks.pending[start..].iter_mut().collect()
        } else {
            self.tasks.pending.iter_mut().collect()
        }
    }

    /// Merges pending groups whose holds became equal again, keeping SGE's range history.
    pub fn normalise_pending(&mut self) {
        let mut merged: Vec<PendingGroup> = Vec::with_capacity(self.tasks.pending.len());
        for g in self.tasks.pending.drain(..) {
            if g.tasks.is_empty() {
                continue;
            }
            if let Some(m) = merged.iter_mut().find(|m| m.holds == g.holds) {
                for id in g.tasks.iter() {
                    m.tasks.insert(id);
                }
            } else {
                merged.push(g);
            }
        }
        self.tasks.pending = merged;
    }
}
