//! Online usage of running tasks: what `qstat -ext` (cpu, mem, io) and the `usage` line of
//! `qstat -j` show while a job runs.
//!
//! SGE's execution daemon sends each running job's usage to qmaster with its load report
//! (every `load_report_time`). Here the shepherd samples its job's process tree on its own
//! timer and leaves the latest figures in the task directory (`usage.json`, replaced whole,
//! not synced: it describes live processes only); `sched_d`'s host probe collects those files
//! with each host's load report (`daemon/hosts/<host>.json`), and `qstat` shows them for the
//! tasks that are still running since before the figures were taken.

use super::LaunchError;
use super::taskdir::{TaskDir, active_jobs};
use crate::model::{TaskUsage, UsageReport};
use std::path::Path;

/// The file in a task directory.
pub const USAGE_FILE: &str = "usage.json";

/// What the processes of a job use at one moment; the supervisor adds what its reaped
/// children used and integrates memory over time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TreeSample {
    /// Virtual memory of the live processes, bytes.
    pub vmem: u64,
    /// User plus system CPU of the live processes and of the children they have reaped,
    /// seconds.
    pub cpu: f64,
    /// Bytes the live processes read and wrote (`rchar + wchar`).
    pub io: u64,
}

/// Samples the processes `pids` (a process that has gone meanwhile counts as nothing).
pub fn sample_tree(pids: &[u32]) -> TreeSample {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .map_or(100.0, |t| t as f64);
    let mut sample = TreeSample::default();
    for pid in pids {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((cpu_ticks, vsize)) = cpu_and_vsize(&stat) {
            sample.cpu += cpu_ticks as f64 / ticks;
            sample.vmem += vsize;
        }
        sample.io += io_bytes(&format!("/proc/{pid}/io")).unwrap_or(0);
    }
    sample
}

/// `utime + stime + cutime + cstime` (clock ticks: the process's CPU and that of the children
/// it has waited for, such as a shell's commands) and `vsize` (bytes) of a `/proc/<pid>/stat`
/// line.
fn cpu_and_vsize(stat: &str) -> Option<(u64, u64)> {
    // After the command name in parentheses: state(3) ppid(4) … utime(14) stime(15)
    // cutime(16) cstime(17) … vsize(23), so utime is the 12th field from the state on.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| fields.get(n)?.parse::<u64>().ok();
    Some((
        field(11)? + field(12)? + field(13)? + field(14)?,
        field(20)?,
    ))
}

/// `rchar + wchar` of a `/proc/.../io` file: the bytes a process read and wrote, what SGE's
/// `io` adds up on Linux (checked on the oracle: a job that copies 250 MB shows 500 MB).
pub fn io_bytes(path: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(field("rchar:")? + field("wchar:")?)
}

/// Leaves the task's latest usage in its directory.
pub fn publish(dir: &TaskDir, report: &UsageReport) -> Result<(), LaunchError> {
    let json = serde_json::to_vec(report).map_err(|e| LaunchError::Protocol(e.to_string()))?;
    dir.write_unsynced(USAGE_FILE, &json, 0o644)
}

/// The usage reports of every task directory of an execution spool; a directory without one
/// (the task has not been sampled yet) or with an unreadable one is passed over.
pub fn collect(exec_spool: &Path) -> Vec<UsageReport> {
    let Ok(entries) = std::fs::read_dir(active_jobs(exec_spool)) else {
        return Vec::new();
    };
    let mut reports: Vec<UsageReport> = entries
        .flatten()
        .filter_map(|e| crate::file::open::read(&e.path().join(USAGE_FILE)).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    reports.sort_by_key(|r: &UsageReport| (r.job, r.task));
    reports
}

/// The usage reports in text that holds one JSON report per line (what a remote host's
/// `cat` of its usage files gives); other lines are passed over.
pub fn parse_lines(text: &str) -> Vec<UsageReport> {
    let mut reports: Vec<UsageReport> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l.trim()).ok())
        .collect();
    reports.sort_by_key(|r: &UsageReport| (r.job, r.task));
    reports
}

/// Adds the usage of the live processes to what the reaped ones used.
pub fn task_usage(
    live: TreeSample,
    reaped_cpu: f64,
    reaped_io: u64,
    mem: f64,
    maxvmem: u64,
) -> TaskUsage {
    const GB: f64 = 1024.0 * 1024.0 * 1024.0;
    TaskUsage {
        cpu: live.cpu + reaped_cpu,
        mem,
        io: (live.io + reaped_io) as f64 / GB,
        vmem: live.vmem as f64,
        maxvmem: maxvmem as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{JobId, TaskId};

    #[test]
    fn cpu_and_vsize_come_from_fields_14_15_and_23() {
        // A command name with a space and a parenthesis, as /proc shows it.
        let stat = "4242 (my (job) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 \
                    12345 10485760 300 18446744073709551615";
        assert_eq!(cpu_and_vsize(stat), Some((310, 10_485_760)));
        assert_eq!(cpu_and_vsize("garbage"), None);
    }

    #[test]
    fn this_process_has_cpu_memory_and_io() {
        let s = sample_tree(&[std::process::id()]);
        assert!(s.vmem > 0 && s.cpu >= 0.0, "{s:?}");
        let gone = sample_tree(&[u32::MAX]);
        assert_eq!(gone, TreeSample::default());
    }

    #[test]
    fn reports_round_trip_through_a_task_directory_and_lines() {
        let root = tempfile::tempdir().expect("test setup");
        let report = |job: u32, task: TaskId, cpu: f64| UsageReport {
            job: JobId(job),
            task,
            time: 1_700_000_000,
            usage: TaskUsage {
                cpu,
                ..TaskUsage::default()
            },
        };
        for (job, task, cpu) in [(7, 2, 1.5), (3, 1, 0.25)] {
            let dir = TaskDir::new(root.path(), JobId(job), task);
            std::fs::create_dir_all(&dir.path).expect("test setup");
            publish(&dir, &report(job, task, cpu)).expect("test setup");
        }
        // A task not sampled yet.
        std::fs::create_dir_all(TaskDir::new(root.path(), JobId(9), 1).path).expect("test setup");
        let collected = collect(root.path());
        assert_eq!(collected, vec![report(3, 1, 0.25), report(7, 2, 1.5)]);
        let text: String = collected
            .iter()
            .map(|r| serde_json::to_string(r).expect("test setup") + "\n")
            .collect();
        assert_eq!(parse_lines(&format!("junk\n{text}")), collected);
    }
}
