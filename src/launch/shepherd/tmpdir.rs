//! A task's `$TMPDIR`: `<queue tmpdir>/<job>.<task>.<queue>`, SGE's name, made new for the task
//! and removed when it ends.
//!
//! The name is predictable and not the cell's own: two cells on one host number their jobs
//! alike, and a supervisor killed with `kill -9` (or a host that crashed) leaves its directory
//! behind. So the supervisor holds a lock (`flock`) on its directory while the task lives: a
//! start that finds the name taken removes a directory nobody holds (a leftover), and leaves
//! one that is held (another cell's running task) to take `<name>.1`, `<name>.2`…. The
//! directory is prepared and locked under a private name first and then renamed into place
//! without replacing anything: no other start can see it unlocked.

use std::fs::{File, TryLockError};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use nix::unistd::{Gid, Uid};

/// How many numbered names a start tries after SGE's own before it gives up.
const NUMBERED_NAMES: u32 = 100;

/// The task's temporary directory, locked while this value lives.
#[derive(Debug)]
pub(super) struct TaskTmpdir {
    path: PathBuf,
    /// Held for the task's life; `None` where the file system has no `flock` (some NFS):
    /// the directory then looks held to every other start.
    _lock: Option<File>,
}

impl TaskTmpdir {
    /// Makes `<parent>/<name>` (or a numbered name beside it, see the module's doc) for a task
    /// of `owner`, mode 0755.
    pub(super) fn create(
        parent: &Path,
        name: &str,
        owner: Option<(Uid, Gid)>,
    ) -> io::Result<TaskTmpdir> {
        let staging = make_staging(parent, name)?;
        let prepared = (|| {
            std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755))?;
            if let Some((uid, gid)) = owner {
                nix::unistd::chown(&staging, Some(uid), Some(gid))?;
            }
            let dir = File::open(&staging)?;
            let lock = dir.try_lock().ok().map(|()| dir);
            io::Result::Ok(lock)
        })();
        let lock = match prepared {
            Ok(lock) => lock,
            Err(e) => {
                let _ = std::fs::remove_dir(&staging);
                return Err(e);
            }
        };
        match place(&staging, parent, name) {
            Ok(path) => Ok(TaskTmpdir { path, _lock: lock }),
            Err(e) => {
                let _ = std::fs::remove_dir(&staging);
                Err(e)
            }
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory and what the job left in it; the lock goes last.
    pub(super) fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A new empty directory `<parent>/.<name>.<pid>.<n>`, not yet anybody's task directory.
fn make_staging(parent: &Path, name: &str) -> io::Result<PathBuf> {
    let pid = std::process::id();
    for n in 0..NUMBERED_NAMES {
        let path = parent.join(format!(".{name}.{pid}.{n}"));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// Renames `staging` to `<parent>/<name>`, or to the first numbered name not held by a live
/// task; returns where it went.
fn place(staging: &Path, parent: &Path, name: &str) -> io::Result<PathBuf> {
    for n in 0..=NUMBERED_NAMES {
        let target = match n {
            0 => parent.join(name),
            n => parent.join(format!("{name}.{n}")),
        };
        // Twice: once more after a leftover was removed.
        for _ in 0..2 {
            match rename_noreplace(staging, &target) {
                Ok(()) => return Ok(target),
                Err(Errno::EEXIST) | Err(Errno::ENOTEMPTY) => {
                    if !remove_if_left_over(&target) {
                        break;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Err(io::Error::from(io::ErrorKind::AlreadyExists))
}

/// `rename(2)` that fails with `EEXIST` rather than replace an empty directory. A file system
/// without `RENAME_NOREPLACE` gets a plain rename when nothing is at `to` (a start racing in
/// between then takes a numbered name, or fails, never removes this one: it is locked).
fn rename_noreplace(from: &Path, to: &Path) -> Result<(), Errno> {
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Err(Errno::EINVAL) => {
            if to.symlink_metadata().is_ok() {
                return Err(Errno::EEXIST);
            }
            nix::fcntl::renameat(AT_FDCWD, from, AT_FDCWD, to)
        }
        other => other,
    }
}

/// Removes what is at `path` when no live task holds it (a directory left by a supervisor
/// that was killed, or a file or symlink planted under the predictable name); true if it went.
fn remove_if_left_over(path: &Path) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        // Gone meanwhile: the name is free again.
        return true;
    };
    if !meta.is_dir() {
        return std::fs::remove_file(path).is_ok();
    }
    let Ok(dir) = File::open(path) else {
        return false;
    };
    match dir.try_lock() {
        Ok(()) => {
            // Held by this start while it removes: no other start can judge it free meanwhile.
            let gone = std::fs::remove_dir_all(path).is_ok();
            drop(dir);
            gone
        }
        Err(TryLockError::WouldBlock) | Err(TryLockError::Error(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_task_directory_takes_sges_name() {
        let parent = tempfile::tempdir().expect("tempdir");
        let t = TaskTmpdir::create(parent.path(), "7.1.all.q", None).expect("create");
        assert_eq!(t.path(), parent.path().join("7.1.all.q"));
        let mode = std::fs::metadata(t.path())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert_eq!(names(parent.path()), ["7.1.all.q"]);
        t.remove();
        assert!(names(parent.path()).is_empty());
    }

    #[test]
    fn a_leftover_is_replaced_and_a_live_one_kept() {
        let parent = tempfile::tempdir().expect("tempdir");
        // A leftover of a killed supervisor, with a file in it, and nobody's lock.
        let left = parent.path().join("7.1.all.q");
        std::fs::create_dir(&left).expect("leftover");
        std::fs::write(left.join("junk"), "x").expect("junk");
        let first = TaskTmpdir::create(parent.path(), "7.1.all.q", None).expect("first");
        assert_eq!(first.path(), left);
        assert!(!left.join("junk").exists(), "a fresh directory");
        // Another cell's job 7 starts while the first runs: it does not touch the first's.
        std::fs::write(left.join("data"), "mine").expect("data");
        let second = TaskTmpdir::create(parent.path(), "7.1.all.q", None).expect("second");
        assert_eq!(second.path(), parent.path().join("7.1.all.q.1"));
        assert_eq!(
            std::fs::read_to_string(left.join("data")).expect("kept"),
            "mine"
        );
        assert_eq!(names(parent.path()), ["7.1.all.q", "7.1.all.q.1"]);
        first.remove();
        second.remove();
        assert!(names(parent.path()).is_empty());
    }

    #[test]
    fn a_file_planted_under_the_name_is_removed() {
        let parent = tempfile::tempdir().expect("tempdir");
        let planted = parent.path().join("7.1.all.q");
        std::os::unix::fs::symlink("/etc", &planted).expect("symlink");
        let t = TaskTmpdir::create(parent.path(), "7.1.all.q", None).expect("create");
        assert_eq!(t.path(), planted);
        assert!(!t.path().symlink_metadata().expect("meta").is_symlink());
        assert!(Path::new("/etc/passwd").exists());
    }
}
