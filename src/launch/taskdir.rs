//! A task's directory in its host's execution spool: the only state of a running task, so that
//! the shepherd outlives `sched_d` and a new launcher can find what ran and how it ended.

use super::LaunchError;
use crate::file::durable;
use crate::model::{JobId, TaskId};
use std::path::{Path, PathBuf};

/// The execution spool of `host` for the cell at `spool_root`: `<spool_root>/execd/<host>`.
pub fn exec_spool_dir(spool_root: &Path, host: &str) -> PathBuf {
    spool_root.join("execd").join(host)
}

/// `<exec_spool>/active_jobs/<job>.<task>` and the files in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskDir {
    pub path: PathBuf,
}

impl TaskDir {
    pub fn new(exec_spool: &Path, job: JobId, task: TaskId) -> Self {
        TaskDir {
            path: active_jobs(exec_spool).join(format!("{job}.{task}")),
        }
    }

    /// The job and task a directory name stands for.
    pub fn parse_name(name: &str) -> Option<(JobId, TaskId)> {
        let (j, t) = name.split_once('.')?;
        Some((j.parse().ok()?, t.parse().ok()?))
    }

    pub fn spec(&self) -> PathBuf {
        self.path.join("spec.json")
    }
    /// `<pid> <start time in clock ticks>` of the supervising shepherd.
    pub fn pid_file(&self) -> PathBuf {
        self.path.join("shepherd.pid")
    }
    pub fn result(&self) -> PathBuf {
        self.path.join("result.json")
    }
    pub fn script(&self) -> PathBuf {
        self.path.join("job_script")
    }
    pub fn pe_hostfile(&self) -> PathBuf {
        self.path.join("pe_hostfile")
    }

    /// Writes `name` in the task directory whole or not at all, durably.
    pub fn write(&self, name: &str, contents: &[u8], mode: u32) -> Result<(), LaunchError> {
        durable::write_replace(&self.path, name, contents, mode)
            .map_err(|e| LaunchError::from(crate::spool::SpoolError::from(e)))
    }

    /// Writes `name` whole or not at all (a temporary file renamed into place), without
    /// syncing: for facts about processes of this boot (`shepherd.pid`, the spec
    /// the supervisor reads), which a machine crash makes moot anyway. A task directory that
    /// lost them in a crash has no live supervisor and is reported as ended with `failed`
    /// 100, as it would be with them. Only `result.json` must survive a crash.
    pub fn write_unsynced(
        &self,
        name: &str,
        contents: &[u8],
        mode: u32,
    ) -> Result<(), LaunchError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let tmp = self.path.join(format!(
            "{}{name}.{}",
            durable::TEMP_PREFIX,
            std::process::id()
        ));
        let target = self.path.join(name);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)
            .and_then(|mut f| f.write_all(contents))
            .and_then(|()| std::fs::rename(&tmp, &target));
        written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            LaunchError::io("write", &target, e)
        })
    }
}

/// `<exec_spool>/active_jobs`.
pub fn active_jobs(exec_spool: &Path) -> PathBuf {
    exec_spool.join("active_jobs")
}
