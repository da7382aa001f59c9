//! Errors of the launcher and the shepherd.

use crate::model::{JobId, TaskId};
use std::path::PathBuf;

/// Why a launch operation failed. Carries the job, host or path concerned so that a log line
/// or an `Eqw` reason says what went wrong where.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("job {job}: {reason}")]
    Spec { job: JobId, reason: String },
    #[error("unknown execution host {host}")]
    UnknownHost { host: String },
    #[error("unknown queue {queue}")]
    UnknownQueue { queue: String },
    #[error(
        "the shepherd binary {path} was not found (set GRIDSPOOL_SHEPHERD or install it next to sched_d)"
    )]
    NoShepherd { path: PathBuf },
    #[error("task {job}.{task} is not running here")]
    NotRunning { job: JobId, task: TaskId },
    #[error("host {host} is unreachable: {reason}")]
    Unreachable { host: String, reason: String },
    #[error("{0}")]
    Protocol(String),
    #[error("{0}")]
    Spool(#[from] crate::spool::SpoolError),
    #[error("{0}")]
    Refused(String),
}

impl LaunchError {
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        LaunchError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
