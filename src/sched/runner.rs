//! The dispatch seam: the daemon hands decided starts to a [`TaskRunner`] and hears back
//! through [`LaunchEvent`]s on a std mpsc channel; finished tasks go to an
//! [`AccountingHook`]. The lead wires the real launcher (`crate::launch`) and accounting
//! (`crate::acct`) behind these traits.
//!
//! [`ProcessRunner`] runs tasks as local child processes (`sh SCRIPT` or the `-b y` command),
//! as their owner when the daemon is root, in their own process group so `qdel` kills the
//! whole tree. It leaves durable markers per task (`starting`, `pid`, `exit`) so that a
//! restarted daemon re-attaches to tasks that outlived it, or learns how they ended, and
//! never starts one twice.

use crate::launch::{LaunchEvent, Placement, TaskResult};
use crate::model::{JobId, JobRecord, RunningTask, TaskId};
use crate::spool::Spool;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why a runner could not act.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("task {0}.{1} is not running here")]
    Unknown(JobId, TaskId),
    #[error("{0}")]
    Other(String),
}

fn io(op: &'static str, path: &Path, source: std::io::Error) -> RunnerError {
    RunnerError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// What a runner knows about a task the spool says was running when the daemon stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reattached {
    /// The runner follows the task again; `Ended` will come (possibly at once, if it ended
    /// while the daemon was down).
    Attached,
    /// The task was never started: the daemon puts it back to pending (not run twice).
    NeverStarted,
    /// The runner cannot tell whether it ran: the daemon records it as ended with SGE's
    /// `failed` 100 ("assumedly after job") rather than risk running it twice.
    Unknown,
}

/// Starts and kills tasks; reports on the channel it was built with.
pub trait TaskRunner: Send {
    /// Starts one task at `placement`. Must return quickly; `Started`, then `Ended` or
    /// `Failed`, arrive later as [`LaunchEvent`]s. An `Err` means nothing was started.
    fn start(
        &mut self,
        job: &JobRecord,
        task: TaskId,
        placement: &Placement,
        restarted: bool,
    ) -> Result<(), RunnerError>;

    /// Kills a task's whole process tree (`qdel`). With `notify`, SGE's `-notify`: warn
    /// with SIGUSR2 first and kill after the queue's notify time.
    fn kill(&mut self, job: JobId, task: TaskId, notify: bool) -> Result<(), RunnerError>;

    /// After a daemon restart, for every task the spool records as running or transferring.
    fn reattach(&mut self, job: &JobRecord, task: &RunningTask) -> Reattached;
}

/// Receives every finished task, once, before its exit line is written (`crate::acct`
/// writes SGE's accounting record; share-tree usage is updated from the same data).
pub trait AccountingHook: Send {
    fn record(
        &mut self,
        job: &JobRecord,
        task: &RunningTask,
        result: &TaskResult,
    ) -> Result<(), String>;
}

/// Accounting that records nothing (until `crate::acct` is wired).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoAccounting;

impl AccountingHook for NoAccounting {
    fn record(&mut self, _: &JobRecord, _: &RunningTask, _: &TaskResult) -> Result<(), String> {
        Ok(())
    }
}

type Pids = Arc<Mutex<HashMap<(JobId, TaskId), u32>>>;
type Killed = Arc<Mutex<HashSet<(JobId, TaskId)>>>;

/// Runs tasks as local processes. See the module documentation.
pub struct ProcessRunner {
    spool: Spool,
    dir: PathBuf,
    events: Sender<LaunchEvent>,
    pids: Pids,
    killed: Killed,
    /// Time between `-notify`'s SIGUSR2 and the SIGKILL (queue_conf(5) `notify`).
    pub notify_delay: Duration,
}

impl std::fmt::Debug for ProcessRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRunner")
            .field("dir", &self.dir)
            .finish()
    }
}

fn now_f() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The wrapper that records the exit status durably where a restarted daemon finds it.
const WRAPPER: &str = r#""$@"; s=$?; echo "$s" > "$GS_EXIT_FILE.tmp" && mv -f "$GS_EXIT_FILE.tmp" "$GS_EXIT_FILE"; exit "$s""#;

impl ProcessRunner {
    /// A runner keeping its per-task markers in `dir` (created; usually
    /// `daemon/tasks` of the spool).
    pub fn new(
        spool: Spool,
        dir: PathBuf,
        events: Sender<LaunchEvent>,
    ) -> Result<Self, RunnerError> {
        fs::create_dir_all(&dir).map_err(|e| io("mkdir", &dir, e))?;
        // Tasks run as their owners write their exit status here.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777))
            .map_err(|e| io("chmod", &dir, e))?;
        Ok(ProcessRunner {
            spool,
            dir,
            events,
            pids: Arc::new(Mutex::new(HashMap::new())),
            killed: Arc::new(Mutex::new(HashSet::new())),
            notify_delay: Duration::from_secs(60),
        })
    }

    fn marker(&self, job: JobId, task: TaskId, what: &str) -> PathBuf {
        self.dir.join(format!("{job}.{task}.{what}"))
    }

    fn write_marker(
        &self,
        job: JobId,
        task: TaskId,
        what: &str,
        text: &str,
    ) -> Result<(), RunnerError> {
        crate::spool::durable::write_replace(
            &self.dir,
            &format!("{job}.{task}.{what}"),
            text.as_bytes(),
            0o644,
        )
        .map_err(|e| RunnerError::Other(e.to_string()))
    }

    /// The output path of `-o`/`-e` (first entry; `$JOB_ID`, `$TASK_ID`, `$JOB_NAME`,
    /// `$HOME`, `$USER` expanded), else SGE's default `name.oJOBID[.TASK]` in the
    /// working directory; a directory means a file of the default name inside it.
    fn output_path(
        job: &JobRecord,
        task: TaskId,
        spec: &[crate::model::PathSpec],
        letter: char,
        cwd: &Path,
    ) -> PathBuf {
        let default_name = if job.is_array() {
            format!("{}.{letter}{}.{task}", job.spec.name, job.id)
        } else {
            format!("{}.{letter}{}", job.spec.name, job.id)
        };
        let Some(p) = spec.first() else {
            return cwd.join(default_name);
        };
        let expanded = p
            .path
            .replace("$JOB_ID", &job.id.to_string())
            .replace(
                "$TASK_ID",
                &if job.is_array() {
                    task.to_string()
                } else {
                    "undefined".to_string()
                },
            )
            .replace("$JOB_NAME", &job.spec.name)
            .replace("$HOME", &job.submitter.sge_o_home)
            .replace("$USER", &job.submitter.owner);
        let path = cwd.join(expanded);
        if path.is_dir() {
            path.join(default_name)
        } else {
            path
        }
    }

    fn spawn_waiter(
        &self,
        job: JobId,
        task: TaskId,
        host: String,
        start: f64,
        mut child: std::process::Child,
    ) {
        let events = self.events.clone();
        let pids = self.pids.clone();
        let killed = self.killed.clone();
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            let status = child.wait();
            let end = now_f();
            let (exit_status, signal) = match &status {
                Ok(s) => match (s.code(), s.signal()) {
                    (Some(c), _) => (c, None),
                    (None, Some(sig)) => (128 + sig, Some(sig)),
                    _ => (0, None),
                },
                Err(_) => (0, None),
            };
            let was_killed = lock(&killed).remove(&(job, task));
            lock(&pids).remove(&(job, task));
            let result = TaskResult {
                job,
                task,
                host,
                start_time: start,
                end_time: end,
                exit_status,
                signal,
                failed: if was_killed { 100 } else { 0 },
                error: status.err().map(|e| e.to_string()),
                ..TaskResult::default()
            };
            // The daemon learns of the end through this event; the markers go once it is sent.
            let _ = events.send(LaunchEvent::Ended(result));
            for what in ["starting", "pid", "exit", "sh"] {
                let _ = fs::remove_file(dir.join(format!("{job}.{task}.{what}")));
            }
        });
    }

    fn spawn_poller(&self, job: JobId, task: TaskId, host: String, pid: u32, start: f64) {
        let events = self.events.clone();
        let pids = self.pids.clone();
        let killed = self.killed.clone();
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            while kill(Pid::from_raw(pid as i32), None).is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
            let exit = dir.join(format!("{job}.{task}.exit"));
            let status = fs::read_to_string(&exit)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            let was_killed = lock(&killed).remove(&(job, task));
            lock(&pids).remove(&(job, task));
            let result = TaskResult {
                job,
                task,
                host,
                start_time: start,
                end_time: now_f(),
                exit_status: status.unwrap_or(137),
                signal: None,
                failed: if status.is_none() || was_killed {
                    100
                } else {
                    0
                },
                ..TaskResult::default()
            };
            let _ = events.send(LaunchEvent::Ended(result));
            for what in ["starting", "pid", "exit", "sh"] {
                let _ = fs::remove_file(dir.join(format!("{job}.{task}.{what}")));
            }
        });
    }
}

impl TaskRunner for ProcessRunner {
    fn start(
        &mut self,
        job: &JobRecord,
        task: TaskId,
        placement: &Placement,
        restarted: bool,
    ) -> Result<(), RunnerError> {
        let spec = &job.spec;
        let cwd = PathBuf::from(
            spec.cwd
                .clone()
                .unwrap_or_else(|| job.submitter.sge_o_home.clone()),
        );
        let mut argv: Vec<String> = Vec::new();
        if spec.binary {
            argv.push(spec.script_file.clone());
        } else {
            let script = self
                .spool
                .read_script(job.id)
                .map_err(|e| RunnerError::Other(e.to_string()))?;
            let path = self.marker(job.id, task, "sh");
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o755)
                .open(&path)
                .map_err(|e| io("create", &path, e))?;
            f.write_all(&script).map_err(|e| io("write", &path, e))?;
            let shell = spec
                .interpreter
                .first()
                .map_or_else(|| "/bin/sh".to_string(), |p| p.path.clone());
            argv.push(shell);
            argv.push(path.to_string_lossy().into_owned());
        }
        argv.extend(spec.args.iter().cloned());
        let out_path = Self::output_path(job, task, &spec.stdout, 'o', &cwd);
        let err_path = Self::output_path(job, task, &spec.stderr, 'e', &cwd);
        let open_out = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o644)
                .open(p)
                .map_err(|e| io("open", p, e))
        };
        let stdout = open_out(&out_path)?;
        let stderr = if spec.merge_stderr {
            stdout.try_clone().map_err(|e| io("dup", &out_path, e))?
        } else {
            open_out(&err_path)?
        };
        let root = nix::unistd::geteuid().is_root();
        if root && job.submitter.uid != 0 {
            for p in [&out_path, &err_path] {
                let _ = nix::unistd::chown(
                    p,
                    Some(nix::unistd::Uid::from_raw(job.submitter.uid)),
                    Some(nix::unistd::Gid::from_raw(job.submitter.gid)),
                );
            }
        }
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(WRAPPER).arg("gridspool-task").args(&argv);
        cmd.current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .env("GS_EXIT_FILE", self.marker(job.id, task, "exit"))
            .env("JOB_ID", job.id.to_string())
            .env("JOB_NAME", &spec.name)
            .env(
                "SGE_TASK_ID",
                if job.is_array() {
                    task.to_string()
                } else {
                    "undefined".to_string()
                },
            )
            .env("NSLOTS", placement.slots.to_string())
            .env("NHOSTS", placement.granted.len().max(1).to_string())
            .env("QUEUE", &placement.queue)
            .env("HOSTNAME", &placement.host)
            .env("RESTARTED", if restarted { "1" } else { "0" })
            .env("ENVIRONMENT", "BATCH")
            .env("SGE_O_HOME", &job.submitter.sge_o_home)
            .env("SGE_O_WORKDIR", &job.submitter.sge_o_workdir)
            .env("SGE_O_HOST", &job.submitter.sge_o_host)
            .env("SGE_O_PATH", &job.submitter.sge_o_path)
            .env("SGE_STDOUT_PATH", &out_path)
            .env(
                "SGE_STDERR_PATH",
                if spec.merge_stderr {
                    &out_path
                } else {
                    &err_path
                },
            )
            .env("USER", &job.submitter.owner)
            .env("LOGNAME", &job.submitter.owner)
            .env("HOME", &job.submitter.sge_o_home);
        for v in &spec.env {
            cmd.env(&v.name, v.value.clone().unwrap_or_default());
        }
        if root && job.submitter.uid != 0 {
            cmd.uid(job.submitter.uid).gid(job.submitter.gid);
        }
        // Durable before the process exists: a crash now leaves "starting" without "pid",
        // which a restarted daemon treats as possibly run (never run twice).
        self.write_marker(job.id, task, "starting", "")?;
        let start = now_f();
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let _ = fs::remove_file(self.marker(job.id, task, "starting"));
                let _ = fs::remove_file(self.marker(job.id, task, "sh"));
                let _ = self.events.send(LaunchEvent::Failed {
                    job: job.id,
                    task,
                    host: placement.host.clone(),
                    error: format!(
                        "cannot start job: {e} (working directory {})",
                        cwd.display()
                    ),
                    host_unreachable: false,
                });
                return Ok(());
            }
        };
        let pid = child.id();
        self.write_marker(job.id, task, "pid", &format!("{pid} {start}"))?;
        lock(&self.pids).insert((job.id, task), pid);
        let _ = self.events.send(LaunchEvent::Started {
            job: job.id,
            task,
            host: placement.host.clone(),
            pid,
        });
        self.spawn_waiter(job.id, task, placement.host.clone(), start, child);
        Ok(())
    }

    fn kill(&mut self, job: JobId, task: TaskId, notify: bool) -> Result<(), RunnerError> {
        let pid = lock(&self.pids)
            .get(&(job, task))
            .copied()
            .ok_or(RunnerError::Unknown(job, task))?;
        lock(&self.killed).insert((job, task));
        let group = Pid::from_raw(-(pid as i32));
        if notify {
            let _ = kill(group, Signal::SIGUSR2);
            let delay = self.notify_delay;
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                let _ = kill(group, Signal::SIGKILL);
            });
        } else {
            let _ = kill(group, Signal::SIGKILL);
        }
        Ok(())
    }

    fn reattach(&mut self, job: &JobRecord, task: &RunningTask) -> Reattached {
        let (id, t) = (job.id, task.task);
        let pid_file = fs::read_to_string(self.marker(id, t, "pid")).ok();
        let exit = fs::read_to_string(self.marker(id, t, "exit"))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        match (pid_file, exit) {
            (Some(p), _) => {
                let mut parts = p.split_whitespace();
                let pid: u32 = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                let start: f64 = parts
                    .next()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(task.start_time as f64);
                if pid == 0 {
                    return Reattached::Unknown;
                }
                lock(&self.pids).insert((id, t), pid);
                self.spawn_poller(id, t, task.host.clone(), pid, start);
                Reattached::Attached
            }
            (None, Some(_)) => Reattached::Unknown,
            (None, None) => {
                if self.marker(id, t, "starting").exists() {
                    Reattached::Unknown
                } else {
                    Reattached::NeverStarted
                }
            }
        }
    }
}

/// Appends a finished task's line to `jobs/<id>.exits` and syncs it: `qsub -sync y` reads it.
/// (The one append in the spool: the file only grows, one whole line per write.)
pub fn append_exit(
    spool: &Spool,
    id: JobId,
    line: &crate::model::FinishedTask,
) -> Result<(), RunnerError> {
    let path = spool.exits_file(id);
    let mut text = serde_json::to_string(line).map_err(|e| RunnerError::Other(e.to_string()))?;
    text.push('\n');
    let mut f: File = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .open(&path)
        .map_err(|e| io("open", &path, e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| io("append", &path, e))?;
    f.sync_data().map_err(|e| io("fsync", &path, e))
}

/// The tasks already recorded in a job's exits file (recovery: never record one twice).
pub fn recorded_exits(spool: &Spool, id: JobId) -> HashSet<TaskId> {
    fs::read_to_string(spool.exits_file(id))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str::<crate::model::FinishedTask>(l).ok())
                .map(|f| f.task)
                .collect()
        })
        .unwrap_or_default()
}
