//! A task's run: where the scheduler put it and how it ended, as the shepherd reports it.
//!
//! The contract between the scheduler (`crate::sched`), the launcher and shepherd
//! (`crate::launch`) and accounting (`crate::acct`), so it belongs to the model they all
//! stand on. It travels as JSON (over a pipe or an ssh session): plain serde data.

use super::{JobId, TaskId};
use serde::{Deserialize, Serialize};

/// Where the scheduler put a task: the master host and queue, and for parallel jobs every
/// host's share of the slots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub host: String,
    pub queue: String,
    pub slots: u32,
    /// (host, queue, slots) for every host of a parallel job, master first; for a serial job
    /// the single master entry.
    pub granted: Vec<(String, String, u32)>,
    /// The parallel environment granted, if any.
    #[serde(default)]
    pub pe: Option<String>,
}

/// `getrusage(2)` of the job's processes, in SGE's units (seconds, kilobytes, counts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rusage {
    pub utime: f64,
    pub stime: f64,
    /// Kilobytes.
    pub maxrss: f64,
    pub ixrss: f64,
    pub ismrss: f64,
    pub idrss: f64,
    pub isrss: f64,
    pub minflt: u64,
    pub majflt: u64,
    pub nswap: u64,
    pub inblock: f64,
    pub oublock: u64,
    pub msgsnd: u64,
    pub msgrcv: u64,
    pub nsignals: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
}

/// How a task ended, as the shepherd reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskResult {
    pub job: JobId,
    pub task: TaskId,
    pub host: String,
    /// Seconds since the epoch, with fractions.
    pub start_time: f64,
    pub end_time: f64,
    /// SGE's exit status: the job's exit code, or 128 + signal when a signal ended it.
    pub exit_status: i32,
    /// The signal that ended the job, if any.
    pub signal: Option<i32>,
    /// SGE's `failed` code (`sge_accounting(5)`): 0 when the job ran; e.g. 100 when it was
    /// killed by `qdel` ("assumedly after job"), 26 when its output file could not be opened.
    pub failed: u32,
    /// Why the shepherd could not run the job (for `qstat -j`'s `error reason` and `Eqw`).
    pub error: Option<String>,
    /// The job could not start through its own fault (SGE's `GFSTATE_JOB`: its output file,
    /// working directory, `-S` shell or `-shell no` command): SGE puts the job in error state
    /// (`Eqw`) instead of finishing it, and `qsub -sync y` goes on waiting.
    pub job_error: bool,
    /// Not the job's end but what was left of its run: the supervisor had died (its host
    /// crashed or rebooted) before it could write one. Never the result a host kept for a
    /// run rescheduled off it (`sched::daemon::unknown`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub supervisor_lost: bool,
    pub rusage: Rusage,
    /// Integral memory usage in GB·s (`mem`), bytes of I/O (`io` in GB), I/O wait (`iow`, s).
    pub mem: f64,
    pub io: f64,
    pub iow: f64,
    /// Bytes.
    pub maxvmem: f64,
    /// The pe task (`qrsh -inherit`) this is the end of: not the task's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe_task: Option<String>,
}
