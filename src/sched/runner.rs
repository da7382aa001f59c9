//! The dispatch seam: the daemon hands decided starts to a [`TaskRunner`] and hears back
//! through [`LaunchEvent`]s on a std mpsc channel; finished tasks go to an
//! [`AccountingHook`]. `sched_d` runs the real launcher (`crate::launch`, through
//! `sched::launcher::LaunchRunner`) and accounting (`sched::accounting::Accounting`).

#[cfg(doc)]
use crate::launch::LaunchEvent;
use crate::model::{JobId, JobRecord, RunningTask, TaskId};
use crate::model::{Placement, TaskResult};
use crate::spool::Spool;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

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

    /// Before the dispatch of the task is made durable: the runner may prepare it on its
    /// host meanwhile, to be started by [`TaskRunner::start`] once the dispatch is durable,
    /// or let go by [`TaskRunner::release`] if it never is. Must not wait for a host.
    fn hold(&mut self, _job: &JobRecord, _task: TaskId, _placement: &Placement, _restarted: bool) {}

    /// The dispatch of a held task did not become durable: it does not start.
    fn release(&mut self, _job: JobId, _task: TaskId) {}

    /// Kills a task's whole process tree (`qdel`). With `notify`, SGE's `-notify`: warn
    /// with SIGUSR2 first and kill after the queue's notify time.
    fn kill(&mut self, job: JobId, task: TaskId, notify: bool) -> Result<(), RunnerError>;
    /// Stops (`stop`) or continues a running task's processes (`qmod -s`/`-us`).
    fn suspend(&mut self, job: JobId, task: TaskId, stop: bool) -> Result<(), RunnerError>;

    /// After a daemon restart, for every task the spool records as running or transferring.
    fn reattach(&mut self, job: &JobRecord, task: &RunningTask) -> Reattached;

    /// The configuration was reloaded (SIGHUP).
    fn reconfigure(&mut self, _config: &crate::config::ClusterConfig) {}

    /// The end of a task reported by `Ended` is durable here (accounting record, exits line,
    /// state): the runner may forget it on its host. Until then the host keeps the result, so
    /// that a daemon that crashes in between is told again.
    fn acknowledge(&mut self, _job: JobId, _task: TaskId, _host: &str) {}

    /// A task was rescheduled off its unknown host: stop following that run (it may start
    /// again elsewhere); a result its host reports later still comes as `Ended` from there.
    fn forget(&mut self, _job: JobId, _task: TaskId) {}

    /// Runs given up on `host` (rescheduled while it was unknown): once the host answers,
    /// kill those still going there, and report them and the ones not there as
    /// `LaunchEvent::Swept`.
    fn sweep(&mut self, _host: &str, _tasks: Vec<(JobId, TaskId)>) {}

    /// Starts a pe task (`qrsh -inherit`) in the running `task` of `job`; its end comes as
    /// `LaunchEvent::PeTaskEnded`. An `Err` means nothing was started.
    fn start_pe_task(
        &mut self,
        _job: &JobRecord,
        _task: &RunningTask,
        _start: &PeTaskStart,
    ) -> Result<(), RunnerError> {
        Err(RunnerError::Other("this runner starts no pe tasks".into()))
    }

    /// The task ended: its pe tasks are ended too, as SGE ends them with their job.
    fn end_pe_tasks(&mut self, _job: JobId, _task: TaskId) {}
}

/// A pe task the daemon has accepted: its id (`1.node2`, numbered per host as SGE's execd
/// does), where it runs, and what `qrsh -inherit` asked for.
#[derive(Debug, Clone)]
pub struct PeTaskStart {
    pub id: String,
    pub host: String,
    /// The queue instance of the job's grant on that host (`all.q@node2`) or cluster queue.
    pub queue: String,
    pub request: crate::model::PeTaskRequest,
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

    /// Makes the records passed to `record` since the last commit durable. The daemon
    /// records every task that ended in one wake-up, then commits once (one `fdatasync` for
    /// all of them), before it writes their exits lines. A hook that writes at once
    /// (the default) has nothing to do. A commit that fails must keep its records, and
    /// leave none of them half-written, for the next commit: the daemon keeps their results
    /// unacknowledged and calls again until it succeeds.
    fn commit(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// The configuration was reloaded (SIGHUP).
    fn reconfigure(&mut self, _config: &crate::config::ClusterConfig) {}
}

/// Appends a finished task's line to `jobs/<id>.exits` and syncs it: `qsub -sync y` reads it.
/// (One of two appends in the spool, with the accounting file: the file only grows, one
/// whole line per write, cut back if the write or its sync fails.)
pub fn append_exit(
    spool: &Spool,
    id: JobId,
    line: &crate::model::FinishedTask,
) -> Result<(), RunnerError> {
    let path = spool.exits_file(id);
    let mut text = serde_json::to_string(line).map_err(|e| RunnerError::Other(e.to_string()))?;
    text.push('\n');
    use crate::file::open::{OpenError, open_append};
    let mut f = match open_append(&path, 0o644) {
        Ok(f) => f,
        // A FIFO, link or directory in its place is set aside and a new log begun: never
        // appended through (a link to /etc/passwd), never waited on (a FIFO).
        Err(OpenError::NotRegular(kind)) => {
            let why = format!("not a regular file ({kind})");
            tracing::warn!(job = %id, "{}: {why}: quarantined", path.display());
            spool
                .quarantine(&path, &why)
                .map_err(|e| RunnerError::Other(e.to_string()))?;
            open_append(&path, 0o644).map_err(|e| io("open", &path, e.into()))?
        }
        Err(OpenError::Io(e)) => return Err(io("open", &path, e)),
    };
    crate::file::durable::append_whole(&mut f, text.as_bytes()).map_err(|e| io("append", &path, e))
}

/// The tasks already recorded in a job's exits file (recovery: never record one twice).
pub fn recorded_exits(spool: &Spool, id: JobId) -> HashSet<TaskId> {
    crate::file::open::read_to_string(&spool.exits_file(id))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str::<crate::model::FinishedTask>(l).ok())
                .map(|f| f.task)
                .collect()
        })
        .unwrap_or_default()
}
