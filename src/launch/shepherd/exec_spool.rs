//! The shepherd's modes that read an execution spool rather than run a task: `watch` (the
//! finished tasks' results, acknowledged removal of their directories), `query`, `kill`, and
//! the same operations called in-process by a local launcher. Apart from the supervisor
//! because they only read what supervisors leave in `active_jobs/` (pid files, `result.json`)
//! and signal them; a supervisor that died without a result gets its `failed` 100 here.

use super::procs::{live_supervisor, now_secs, read_pid_file, supervisor_alive};
use super::{TaskState, WatchMessage, failed, print_line, usage};
use crate::launch::LaunchError;
use crate::launch::spec::LaunchSpec;
use crate::launch::taskdir::{TaskDir, active_jobs};
use crate::model::TaskResult;
use crate::model::{JobId, TaskId};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

/// Reads one task's result if it has ended; a task whose supervisor died without a result
/// gets one written now (failed 100), so that it is reported exactly like any other.
pub(super) fn finished_result(dir: &TaskDir, job: JobId, task: TaskId) -> Option<TaskResult> {
    if let Ok(bytes) = crate::file::open::read(&dir.result()) {
        return serde_json::from_slice(&bytes).ok();
    }
    // A directory still being set up has no pid file yet; give it time.
    let young = std::fs::metadata(&dir.path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age < Duration::from_secs(120));
    if read_pid_file(dir).is_none() && young {
        return None;
    }
    if supervisor_alive(dir) {
        return None;
    }
    // Re-check: it may have finished between the two looks.
    if let Ok(bytes) = crate::file::open::read(&dir.result()) {
        return serde_json::from_slice(&bytes).ok();
    }
    // Only supervisors started by an `exec` have a `spec.json`; without it the host is left
    // empty and the launcher, which knows which host it watches, fills it in.
    let host = crate::file::open::read(&dir.spec())
        .ok()
        .and_then(|b| serde_json::from_slice::<LaunchSpec>(&b).ok())
        .map(|s| s.host)
        .unwrap_or_default();
    let result = TaskResult {
        job,
        task,
        host,
        start_time: now_secs(),
        end_time: now_secs(),
        exit_status: 137,
        signal: Some(9),
        failed: failed::AFTER_JOB,
        error: Some("the shepherd of the task ended without a result".to_string()),
        supervisor_lost: true,
        ..TaskResult::default()
    };
    let json = serde_json::to_vec(&result).ok()?;
    dir.write("result.json", &json, 0o644).ok()?;
    Some(result)
}

/// The task directories of an execution spool; none when they cannot be listed (for
/// watchers, which look again on their next round).
pub fn task_dirs(exec_spool: &Path) -> Vec<(JobId, TaskId, TaskDir)> {
    listed_task_dirs(exec_spool).unwrap_or_default()
}

/// The task directories, or why the directory that holds them cannot be read. An exec spool
/// without `active_jobs` has no tasks (nothing was ever started there).
fn listed_task_dirs(exec_spool: &Path) -> Result<Vec<(JobId, TaskId, TaskDir)>, LaunchError> {
    let dir = active_jobs(exec_spool);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LaunchError::io("read directory", &dir, e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| LaunchError::io("read directory", &dir, e))?;
        let name = e.file_name();
        if let Some((j, t)) = name.to_str().and_then(TaskDir::parse_name) {
            out.push((j, t, TaskDir { path: e.path() }));
        }
    }
    out.sort_by_key(|(j, t, _)| (*j, *t));
    Ok(out)
}

/// The state of every task directory. An error when they cannot be listed: the caller must
/// not take a task missing from an unreadable directory for a lost one.
pub fn query(exec_spool: &Path) -> Result<Vec<TaskState>, LaunchError> {
    Ok(listed_task_dirs(exec_spool)?
        .into_iter()
        .map(|(job, task, dir)| TaskState {
            job,
            task,
            running: supervisor_alive(&dir),
            finished: dir.result().exists(),
        })
        .collect())
}

/// One pass of a watcher: the results of ended tasks not yet in `reported`.
pub fn collect_finished(
    exec_spool: &Path,
    reported: &mut HashSet<(JobId, TaskId)>,
) -> Vec<TaskResult> {
    let mut out = Vec::new();
    let present: HashSet<(JobId, TaskId)> = task_dirs(exec_spool)
        .into_iter()
        .map(|(job, task, dir)| {
            if !reported.contains(&(job, task))
                && let Some(r) = finished_result(&dir, job, task)
            {
                reported.insert((job, task));
                out.push(r);
            }
            (job, task)
        })
        .collect();
    reported.retain(|k| present.contains(k));
    out
}

/// Removes a reported task's directory (the launcher has passed its result on).
pub fn acknowledge(exec_spool: &Path, job: JobId, task: TaskId) -> Result<(), LaunchError> {
    let dir = TaskDir::new(exec_spool, job, task);
    if !dir.path.exists() {
        // Removed already (an acknowledgement repeated), or never here (a lost task).
        return Ok(());
    }
    // Never the directory of a task without a result: it may be running.
    if !dir.result().exists() {
        return Err(LaunchError::NotRunning { job, task });
    }
    match std::fs::remove_dir_all(&dir.path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LaunchError::io("remove", &dir.path, e)),
    }
}

/// Asks the supervisor of a task to kill it (`notify`: SIGUSR2 first, per `-notify`).
pub fn request_kill(
    exec_spool: &Path,
    job: JobId,
    task: TaskId,
    notify: bool,
) -> Result<(), LaunchError> {
    let pid = live_supervisor(&TaskDir::new(exec_spool, job, task), job, task)?;
    let sig = if notify {
        Signal::SIGUSR1
    } else {
        Signal::SIGTERM
    };
    kill(Pid::from_raw(pid as i32), sig).map_err(|e| {
        LaunchError::Refused(format!(
            "cannot signal the shepherd of {job}.{task} (pid {pid}): {e}"
        ))
    })
}

pub(super) fn watch_stdio(
    exec_spool: &Path,
    interval: Duration,
    heartbeat: Option<Duration>,
) -> Result<(), LaunchError> {
    /// What wakes the remote watcher: an acknowledgement from the launcher, a change in
    /// `active_jobs` (a result was written), or the end of its input.
    enum Wake {
        Ack(JobId, TaskId),
        Changed,
        Eof,
    }
    let (tx, rx) = std::sync::mpsc::channel::<Wake>();
    let changed = tx.clone();
    let _watch = crate::launch::wake::watch_dir(
        &crate::launch::taskdir::active_jobs(exec_spool),
        move || {
            let _ = changed.send(Wake::Changed);
        },
    );
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(name) = line.trim().strip_prefix("ack ")
                && let Some((job, task)) = TaskDir::parse_name(name.trim())
                && tx.send(Wake::Ack(job, task)).is_err()
            {
                return;
            }
        }
        let _ = tx.send(Wake::Eof);
    });
    let mut reported = HashSet::new();
    let mut last_line = Instant::now();
    loop {
        for result in collect_finished(exec_spool, &mut reported) {
            let msg = WatchMessage::Ended {
                result: Box::new(result),
            };
            if print_line(&msg).is_err() {
                return Ok(());
            }
            last_line = Instant::now();
        }
        if let Some(beat) = heartbeat
            && last_line.elapsed() >= beat
        {
            if print_line(&WatchMessage::Alive).is_err() {
                return Ok(());
            }
            last_line = Instant::now();
        }
        let wait = heartbeat.map_or(interval, |beat| {
            interval.min(beat.saturating_sub(last_line.elapsed()))
        });
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Wake::Ack(job, task)) => {
                    if let Err(e) = acknowledge(exec_spool, job, task) {
                        eprintln!("gridspool-shepherd: {e}");
                    }
                }
                Ok(Wake::Changed) => break,
                Ok(Wake::Eof) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(());
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
    }
}

pub(super) fn kill_mode(rest: &[String]) -> Result<(), LaunchError> {
    let (notify, rest) = match rest.first().map(String::as_str) {
        Some("--notify") => (true, &rest[1..]),
        _ => (false, rest),
    };
    let [spool, job, task] = rest else {
        return Err(usage());
    };
    let job: JobId = job.parse().map_err(|_| usage())?;
    let task: TaskId = task.parse().map_err(|_| usage())?;
    request_kill(Path::new(spool), job, task, notify)
}

pub(super) fn query_stdio(exec_spool: &Path) -> Result<(), LaunchError> {
    for state in query(exec_spool)? {
        print_line(&state).map_err(|e| LaunchError::io("write", "<stdout>", e))?;
    }
    Ok(())
}
