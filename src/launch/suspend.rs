//! Suspending and resuming a running task (`qmod -s`/`-us` of a job or of its queue
//! instance): SIGSTOP or SIGCONT to every process of the job's tree on its host, as
//! `sge_shepherd` signals the job.
//!
//! The shepherd's `suspend` mode does it on the execution host, for a launcher that may send
//! a stop and a continue in quick succession over separate ssh sessions: each request
//! carries a sequence number (nanoseconds since the epoch, strictly increasing per
//! `sched_d`, so also across its restarts), and the task directory's `suspension` file, held
//! under an exclusive lock while a request is carried out, records the last one applied; an
//! older request arriving late changes nothing.

use super::LaunchError;
use super::shepherd::{descendants, live_supervisor, proc_ppid_and_state};
use super::taskdir::TaskDir;
use crate::model::{JobId, TaskId};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::HashSet;
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The file of the task directory that orders suspension requests.
const SUSPENSION: &str = "suspension";

/// The next sequence number of a suspension request: now in nanoseconds since the epoch, or
/// one more than the last when the clock has not moved on.
pub fn next_sequence() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Stops (`stop`) or continues the job of task `job.task` in `exec_spool`: every process
/// descended from its supervisor (the supervisor itself keeps running, to reap and report).
/// A request older than the last one applied (`seq`) does nothing.
pub fn request_suspend(
    exec_spool: &Path,
    job: JobId,
    task: TaskId,
    stop: bool,
    seq: u64,
) -> Result<(), LaunchError> {
    let dir = TaskDir::new(exec_spool, job, task);
    let pid = live_supervisor(&dir, job, task)?;
    if dir.result().exists() {
        return Err(LaunchError::NotRunning { job, task });
    }
    let path = dir.path.join(SUSPENSION);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| LaunchError::io("open", &path, e))?;
    file.lock().map_err(|e| LaunchError::io("lock", &path, e))?;
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let last: u64 = text
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(0);
    if seq <= last {
        return Ok(());
    }
    signal_tree(
        pid,
        if stop {
            Signal::SIGSTOP
        } else {
            Signal::SIGCONT
        },
    );
    let record = format!("{seq} {}\n", if stop { "stopped" } else { "running" });
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(record.as_bytes()))
        .map_err(|e| LaunchError::io("write", &path, e))
}

/// Sends `sig` to every descendant of `supervisor`. A stop is repeated until a walk finds no
/// process it had not stopped: a process forked while the tree was being walked is caught by
/// the next walk (a stopped process forks nothing more).
pub(super) fn signal_tree(supervisor: u32, sig: Signal) {
    let mut done: HashSet<u32> = HashSet::new();
    for _ in 0..10 {
        let fresh: Vec<u32> = descendants(supervisor)
            .into_iter()
            .filter(|p| !done.contains(p))
            // Zombies have nothing to stop.
            .filter(|p| proc_ppid_and_state(*p).is_some_and(|(_, s)| s != 'Z'))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for p in fresh {
            let _ = kill(Pid::from_raw(p as i32), sig);
            done.insert(p);
        }
        if sig == Signal::SIGCONT {
            break;
        }
    }
}

/// `gridspool-shepherd suspend|resume <exec_spool> <job> <task> <seq>`.
pub fn suspend_mode(stop: bool, rest: &[String]) -> Result<(), LaunchError> {
    let usage = || {
        LaunchError::Protocol(
            "usage: gridspool-shepherd suspend|resume <exec_spool> <job> <task> <seq>".into(),
        )
    };
    let [spool, job, task, seq] = rest else {
        return Err(usage());
    };
    let job: JobId = job.parse().map_err(|_| usage())?;
    let task: TaskId = task.parse().map_err(|_| usage())?;
    let seq: u64 = seq.parse().map_err(|_| usage())?;
    request_suspend(Path::new(spool), job, task, stop, seq)
}
