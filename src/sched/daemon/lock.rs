//! One `sched_d` per spool: the exclusive lock on `daemon/sched_d.lock` and the pid file,
//! held for the daemon's life. Apart because it is taken before a daemon exists (by
//! `sched_d`'s start, and by a shadow that waits for the master's lock to be released).

use super::{DaemonError, io};
use crate::spool::{Spool, SpoolError};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use tracing::{info, warn};

/// The exclusive hold on a spool: the lock file stays locked while this lives.
#[derive(Debug)]
pub struct SpoolLock {
    _file: File,
    pid_path: PathBuf,
}

impl SpoolLock {
    /// Takes `daemon/sched_d.lock` (non-blocking) and writes `daemon/sched_d.pid`.
    pub fn acquire(spool: &Spool) -> Result<Self, DaemonError> {
        let dir = spool.daemon_dir();
        fs::create_dir_all(&dir).map_err(|e| io("mkdir", &dir, e))?;
        let path = dir.join("sched_d.lock");
        let file = crate::file::open::open_update(&path, 0o644)
            .map_err(|e| io("open", &path, e.into()))?;
        let pid_path = dir.join("sched_d.pid");
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let pid = crate::file::open::read_to_string(&pid_path)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                return Err(DaemonError::AlreadyRunning {
                    spool: spool.root().to_path_buf(),
                    pid,
                    master: crate::sched::mastership::act_master(&dir).map(|m| m.to_string()),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(io("lock", &path, e)),
        }
        Self::holding(file, &dir)
    }

    /// The lock file held (or to be held), and this process's pid written.
    fn holding(file: File, dir: &Path) -> Result<Self, DaemonError> {
        crate::file::durable::write_replace(
            dir,
            "sched_d.pid",
            format!("{}\n", std::process::id()).as_bytes(),
            0o644,
        )
        .map_err(SpoolError::from)?;
        Ok(SpoolLock {
            _file: file,
            pid_path: dir.join("sched_d.pid"),
        })
    }

    /// For a shadow taking over from a master that still holds the lock (frozen, or behind
    /// an NFS lease): writes the pid file now and takes the lock in the background as soon
    /// as it is released (the old master exits the moment it runs again, see
    /// `sched::mastership`). Until then a second start on this cell is refused by nothing
    /// but `act_master`.
    pub fn acquire_when_released(spool: &Spool) -> Result<Self, DaemonError> {
        let dir = spool.daemon_dir();
        let path = dir.join("sched_d.lock");
        let file = crate::file::open::open_update(&path, 0o644)
            .map_err(|e| io("open", &path, e.into()))?;
        let waiter = file.try_clone().map_err(|e| io("dup", &path, e))?;
        std::thread::Builder::new()
            .name("lock-waiter".into())
            .spawn(move || match waiter.lock() {
                // The lock belongs to the open file, which `SpoolLock` keeps: it lasts as
                // long as this process.
                Ok(()) => info!("the spool lock is ours now"),
                Err(e) => warn!("cannot take the spool lock: {e}"),
            })
            .map_err(|e| io("spawn thread", &path, e))?;
        Self::holding(file, &dir)
    }
}

impl Drop for SpoolLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.pid_path);
    }
}
