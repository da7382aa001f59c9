//! [`LaunchSpec`]: everything the shepherd needs to run one task, resolved by the scheduler's
//! side from the job record, the placement and the configuration, so that the execution host
//! needs nothing but the spec (no spool, no configuration file).

use super::LaunchError;
use super::limits::{Limits, parse_time};
use super::paths::select_path;
use super::taskdir::exec_spool_dir;
use crate::config::ClusterConfig;
use crate::model::Placement;
use crate::model::{EnvVar, JobId, JobRecord, PathSpec, Submitter, TaskId, TaskIdRange};
use crate::spool::Spool;
use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning; the shepherd refuses specs newer than it knows.
pub const SPEC_VERSION: u32 = 1;

/// The shepherd's file name; the launcher looks for it next to its own executable.
pub const SHEPHERD_BINARY: &str = "gridspool-shepherd";

/// SGE's default `login_shells` (global configuration): shells started as login shells
/// (`argv[0]` = `-sh`), which is why a job's `PATH` is the one `/etc/profile` sets.
pub const LOGIN_SHELLS: [&str; 5] = ["bash", "sh", "ksh", "csh", "tcsh"];

/// What the job runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum JobCommand {
    /// A script job: the script as stored in the spool, run per the queue's
    /// `shell_start_mode`.
    Script {
        #[serde(with = "script_bytes")]
        script: Vec<u8>,
        args: Vec<String>,
    },
    /// `-b y`: a command run as it is (through the shell unless `-shell n`).
    Binary {
        command: String,
        args: Vec<String>,
        shell: bool,
    },
}

/// Everything one task needs on its execution host. Serde (JSON) on the shepherd's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    pub v: u32,
    pub job: JobId,
    pub task: TaskId,
    /// `-t`; `None` for a job that is not an array (`SGE_TASK_ID=undefined`).
    pub array: Option<TaskIdRange>,
    pub name: String,
    pub submitter: Submitter,
    /// The execution host's name as configured (`HOSTNAME`, `$HOSTNAME` in paths).
    pub host: String,
    pub arch: String,
    pub placement: Placement,
    /// The task ran before (`RESTARTED=1`).
    pub restarted: bool,
    pub account: String,
    /// `-cwd`/`-wd`; `None` means the owner's home on the execution host.
    pub cwd: Option<String>,
    pub stdout: Vec<PathSpec>,
    pub stderr: Vec<PathSpec>,
    pub stdin: Vec<PathSpec>,
    pub merge_stderr: bool,
    pub command: JobCommand,
    /// `-S` for this host.
    pub interpreter: Option<String>,
    /// The queue's `shell`.
    pub queue_shell: String,
    /// `posix_compliant`, `unix_behavior` or `script_from_stdin` (queue_conf(5)).
    pub shell_start_mode: String,
    pub login_shells: Vec<String>,
    /// The queue's `tmpdir`; the task's `TMPDIR` is `<tmpdir>/<job>.<task>.<queue>`.
    pub tmpdir: String,
    pub limits: Limits,
    /// `-notify`: SIGUSR2 before the SIGKILL of a `qdel`, `notify_secs` earlier.
    pub notify: bool,
    pub notify_secs: u64,
    /// `-v`/`-V` variables.
    pub env: Vec<EnvVar>,
    /// `$SGE_ROOT` and `$SGE_CELL` as the job sees them: the spool's parent and name.
    pub sge_root: String,
    pub sge_cell: String,
    /// The host's execution spool on the host itself.
    pub exec_spool: String,
    /// The queue's (else the global) `prolog` and `epilog`, `[user@]path [args]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilog: Option<String>,
    /// The queue's `starter_method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starter_method: Option<String>,
    /// The queue's `priority` on this host, as the nice value its processes start at
    /// ([`crate::config::nice_value`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nice: i32,
    /// A `qrsh` job: where its client waits for the command's input and output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<crate::model::InteractiveSession>,
    /// The devices granted to the task, by complex (`gpu` → `["0", "1"]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<(String, Vec<String>)>,
    /// A task that `qrsh -inherit` started inside the running task of a parallel job (SGE's
    /// pe task, `1.node2`): no prolog or epilog, a TMPDIR and task directory of its own, a
    /// result with this id that becomes an accounting record of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe_task: Option<String>,
    /// The device files of the host's devices the task was not granted (`hosts[].
    /// device_files`): denied to it where its cgroup can.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub denied_device_files: Vec<String>,
    /// The host's cgroups setting (`launch::cgroup`); none: rlimits only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<crate::config::CgroupPolicy>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The files (`hosts[].device_files`, `{id}` replaced) of the host's device ids that are not
/// among `granted`.
fn denied_device_files(
    host: &crate::config::HostConfig,
    granted: &[(String, Vec<String>)],
) -> Vec<String> {
    let mut denied = Vec::new();
    for (name, pattern) in &host.device_files {
        let mine = granted
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[][..], |(_, ids)| ids.as_slice());
        for id in host.devices.get(name).into_iter().flatten() {
            if !mine.contains(id) {
                denied.push(pattern.replace("{id}", id));
            }
        }
    }
    denied
}

/// A queue's prolog or epilog, else the global one (as execd picks them); `NONE` is none.
fn procedure(queue: &Option<String>, global: &Option<String>) -> Option<String> {
    let set = |p: &&String| !p.trim().is_empty() && !p.trim().eq_ignore_ascii_case("NONE");
    queue
        .as_ref()
        .filter(set)
        .or(global.as_ref().filter(set))
        .cloned()
}

fn spec_error(job: JobId, reason: impl Into<String>) -> LaunchError {
    LaunchError::Spec {
        job,
        reason: reason.into(),
    }
}

impl LaunchSpec {
    /// Builds the spec of `task` of `job` placed at `placement`: reads the script from the
    /// spool, takes the queue's shell, start mode, tmpdir, limits and notify time, the host's
    /// architecture, and resolves host-specific `-S` entries.
    pub fn build(
        spool: &Spool,
        config: &ClusterConfig,
        job: &JobRecord,
        task: TaskId,
        placement: &Placement,
        restarted: bool,
    ) -> Result<Self, LaunchError> {
        let host = config
            .host(&placement.host)
            .ok_or_else(|| LaunchError::UnknownHost {
                host: placement.host.clone(),
            })?;
        // `all.q` or a queue instance `all.q@host`.
        let qname = placement.queue.split('@').next().unwrap_or_default();
        let queue = config
            .queue(qname)
            .ok_or_else(|| LaunchError::UnknownQueue {
                queue: placement.queue.clone(),
            })?;
        // Its values on this host (queue_conf(5)'s per-host values).
        let queue = &config.queue_instance(queue, &placement.host);
        let spec = &job.spec;
        let command = if spec.binary {
            JobCommand::Binary {
                command: spec.script_file.clone(),
                args: spec.args.clone(),
                shell: spec.shell,
            }
        } else {
            JobCommand::Script {
                script: spool.read_script(job.id)?,
                args: spec.args.clone(),
            }
        };
        let slots_here: u32 = placement
            .granted
            .iter()
            .filter(|(h, _, _)| *h == placement.host)
            .map(|(_, _, s)| *s)
            .sum::<u32>()
            .max(1);
        let limits = Limits::from_requests(
            queue.limits.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            spec.hard_resources
                .iter()
                .map(|r| (r.name.as_str(), r.value.as_str())),
            slots_here,
        )
        .map_err(|e| spec_error(job.id, e))?;
        // Devices are granted on the task's host (a pe task elsewhere has none).
        let devices = job
            .tasks
            .running
            .iter()
            .find(|r| r.task == task && r.host == placement.host)
            .map(|r| r.devices.clone())
            .unwrap_or_default();
        let notify_secs = parse_time(&queue.notify)
            .map_err(|e| spec_error(job.id, format!("queue {}: notify: {e}", queue.name)))?
            .unwrap_or(0);
        let root = spool.root();
        let sge_root = root
            .parent()
            .map_or_else(|| "/".to_string(), |p| p.to_string_lossy().into_owned());
        let sge_cell = root.file_name().map_or_else(
            || "default".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(LaunchSpec {
            v: SPEC_VERSION,
            job: job.id,
            task,
            array: spec.array,
            name: spec.name.clone(),
            submitter: job.submitter.clone(),
            host: host.name.clone(),
            arch: host.arch.clone(),
            placement: placement.clone(),
            restarted,
            account: spec.account.clone(),
            cwd: spec.cwd.clone(),
            stdout: spec.stdout.clone(),
            stderr: spec.stderr.clone(),
            stdin: spec.stdin.clone(),
            merge_stderr: spec.merge_stderr,
            command,
            interpreter: select_path(&spec.interpreter, &host.name).map(str::to_string),
            queue_shell: queue.shell.clone(),
            shell_start_mode: queue.shell_start_mode.clone(),
            login_shells: LOGIN_SHELLS.iter().map(|s| s.to_string()).collect(),
            tmpdir: queue.tmpdir.clone(),
            limits,
            notify: spec.notify,
            notify_secs,
            env: spec.env.clone(),
            sge_root,
            sge_cell,
            exec_spool: exec_spool_dir(root, &host.name)
                .to_string_lossy()
                .into_owned(),
            prolog: procedure(&queue.prolog, &config.prolog),
            epilog: procedure(&queue.epilog, &config.epilog),
            starter_method: procedure(&queue.starter_method, &None),
            nice: queue
                .priority
                .as_deref()
                .map_or(0, crate::config::nice_value),
            interactive: spec.interactive.clone(),
            denied_device_files: denied_device_files(host, &devices),
            devices,
            pe_task: None,
            cgroups: host.cgroups.policy(),
        })
    }

    /// `<job>.<task>`, the name of the task everywhere (logs, directories); a pe task's is
    /// `<job>.<task>-<pe task id>`.
    pub fn task_name(&self) -> String {
        match &self.pe_task {
            None => format!("{}.{}", self.job, self.task),
            Some(id) => format!("{}.{}-{id}", self.job, self.task),
        }
    }

    /// The cluster queue name (without `@host`).
    pub fn queue_name(&self) -> &str {
        self.placement
            .queue
            .split('@')
            .next()
            .unwrap_or(&self.placement.queue)
    }
}

/// A script travels as a JSON string when it is UTF-8 (nearly always), else as an array of
/// bytes: either way byte for byte, without bloating the common case fourfold.
mod script_bytes {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Repr::Text(text.to_string()).serialize(s),
            Err(_) => Repr::Bytes(bytes.to_vec()).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_round_trip_as_text_or_bytes() {
        for script in [b"#!/bin/sh\necho hi\n".to_vec(), vec![0xff, 0xfe, b'\n']] {
            let cmd = JobCommand::Script {
                script: script.clone(),
                args: vec![],
            };
            let json = serde_json::to_string(&cmd).expect("json");
            let back: JobCommand = serde_json::from_str(&json).expect("parse");
            assert_eq!(back, cmd, "{json}");
        }
        let json = serde_json::to_string(&JobCommand::Script {
            script: b"echo".to_vec(),
            args: vec![],
        })
        .expect("json");
        assert!(json.contains("\"script\":\"echo\""), "{json}");
    }
}
