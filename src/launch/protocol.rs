//! What the launcher tells `sched_d` as tasks start and end. Where a task runs and how it
//! ended ([`crate::model::Placement`], [`crate::model::TaskResult`]) are the job model's:
//! accounting reads them too. They travel as JSON (over a pipe or an ssh session), so they
//! are plain serde data.

use crate::model::{JobId, TaskId, TaskResult};
use serde::{Deserialize, Serialize};

/// What the launcher reports back to the scheduler, over a channel, as tasks start and end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum LaunchEvent {
    /// The shepherd is running the task (`t` → `r`).
    Started {
        job: JobId,
        task: TaskId,
        host: String,
        pid: u32,
    },
    /// The task ended (whatever the reason); becomes an accounting record. Boxed: a result
    /// is several times larger than the other events.
    Ended(Box<TaskResult>),
    /// A pe task (`qrsh -inherit`) ended, or could not start (then `failed` is not 0 and
    /// `error` says why): its own accounting record, its exit status for `qrsh`.
    PeTaskEnded(Box<TaskResult>),
    /// The task could not be started. `host_unreachable`: the host did not answer, so the
    /// task goes back to pending and the host is marked and retried with backoff; otherwise
    /// the job goes to error state (`Eqw`) with `error` as its reason.
    Failed {
        job: JobId,
        task: TaskId,
        host: String,
        error: String,
        host_unreachable: bool,
    },
    /// After a restart or a takeover: a task that was being handed to its host (`t`) never
    /// reached it, and no longer can (the start server it was sent to is gone): it goes
    /// back to pending.
    NeverStarted {
        job: JobId,
        task: TaskId,
        host: String,
    },
    /// Nothing was heard from an ssh host for `max_unheard` (`launch::liveness`): it is
    /// unknown (`au`) until it is heard again.
    HostUnknown { host: String },
    /// An unknown host was heard again.
    HostReturned { host: String },
    /// What became of runs given up on `host` (rescheduled when it went unknown), as the
    /// host answered once it could: these were still running there and have been killed, or
    /// were not there at all. Their results will not come; the runs whose result is there
    /// come as `Ended` from that host.
    Swept {
        host: String,
        tasks: Vec<(JobId, TaskId)>,
    },
}
