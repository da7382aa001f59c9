//! Process bookkeeping from `/proc`: start times that tell a reused pid apart, the
//! supervisor's descendants (what a kill must reach), the CPU and I/O of reaped children,
//! and whether a task's supervisor is still the process its pid file names. Shared by the
//! supervisor, the start server, the exec spool modes and `launch`'s suspend and pe task code.

use crate::launch::LaunchError;
use crate::launch::taskdir::TaskDir;
use crate::launch::usage::io_bytes;
use crate::model::{JobId, TaskId};
use nix::sys::signal::{SigSet, Signal};
use std::collections::BTreeMap;

/// Field 22 of `/proc/<pid>/stat`: the start time, which tells a pid's reuse apart.
pub(in crate::launch) fn proc_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    // after ")": state(3) ppid(4) … starttime(22) → index 19 from state.
    after.split_whitespace().nth(19)?.parse().ok()
}

pub(in crate::launch) fn proc_ppid_and_state(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let mut it = after.split_whitespace();
    let state = it.next()?.chars().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Every process descended from `root` (not `root` itself), zombies included.
pub(in crate::launch) fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, _)) = proc_ppid_and_state(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

/// The I/O of every process this one has reaped: the kernel adds a reaped child's counters to
/// its parent's (`/proc/self/io`), beside the parent's own threads (`/proc/self/task/*/io`),
/// so the difference is the job's, including the children it reaped itself and the orphans
/// the supervisor reaped as subreaper. `None` without I/O accounting in the kernel.
pub(super) fn reaped_children_io() -> Option<u64> {
    let whole = io_bytes("/proc/self/io")?;
    let own: u64 = std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .filter_map(|t| io_bytes(&format!("{}/io", t.path().display())))
        .sum();
    Some(whole.saturating_sub(own))
}

/// User plus system CPU of every process this one has reaped, seconds.
pub(super) fn reaped_children_cpu() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        secs(u.user_time()) + secs(u.system_time())
    })
}

pub(in crate::launch) fn read_pid_file(dir: &TaskDir) -> Option<(u32, u64)> {
    let text = crate::file::open::read_to_string(&dir.pid_file()).ok()?;
    let mut it = text.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The pid of the task's supervisor, if it is still the process the pid file recorded (same
/// start time: not a later process that reused the pid).
pub(in crate::launch) fn live_supervisor(
    dir: &TaskDir,
    job: JobId,
    task: TaskId,
) -> Result<u32, LaunchError> {
    match read_pid_file(dir) {
        Some((pid, start)) if proc_start_time(pid) == Some(start) => Ok(pid),
        _ => Err(LaunchError::NotRunning { job, task }),
    }
}

/// The task's supervisor is alive (its pid exists with the recorded start time).
pub fn supervisor_alive(dir: &TaskDir) -> bool {
    read_pid_file(dir).is_some_and(|(pid, start)| {
        proc_start_time(pid) == Some(start)
            && proc_ppid_and_state(pid).is_some_and(|(_, s)| s != 'Z')
    })
}

// ---------------------------------------------------------------------------------------
// supervise

/// Signals the supervisor takes synchronously with `sigwait`.
pub(in crate::launch) fn supervisor_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGALRM,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGHUP,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGPIPE,
    ] {
        set.add(s);
    }
    set
}

pub(super) fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
