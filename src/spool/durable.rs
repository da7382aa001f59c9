//! The one way anything is written into the spool: whole or not at all.
//!
//! A temporary file in the target's own directory is written and `sync_data`'d, then moved into
//! place (a hard link for new files, which fails instead of clobbering; a rename for
//! replacements), then the directory is fsynced so the new name survives a crash. A writer
//! killed half-way or a full disk leaves at most a `.tmp.` file, which scanners skip and
//! `sched_d` sweeps; never a half-written record under a real name.

use super::SpoolError;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of temporary files; every scanner ignores names starting with a dot.
pub const TEMP_PREFIX: &str = ".tmp.";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{TEMP_PREFIX}{name}.{}.{n}", std::process::id()))
}

fn write_temp(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<PathBuf, SpoolError> {
    let tmp = temp_path(dir, name);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_data()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(SpoolError::io("write", &tmp, e))
        }
    }
}

/// Makes a directory's entries durable (new, renamed or removed names).
pub fn sync_dir(dir: &Path) -> Result<(), SpoolError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SpoolError::io("fsync", dir, e))
}

/// Publishes a new file; fails with [`SpoolError::Exists`] rather than replace one.
pub fn write_new(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), SpoolError> {
    let tmp = write_temp(dir, name, contents, mode)?;
    let target = dir.join(name);
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(SpoolError::Exists { path: target })
        }
        Err(e) => Err(SpoolError::io("link", &target, e)),
    }
}

/// Replaces a file (or creates it) atomically.
pub fn write_replace(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), SpoolError> {
    let tmp = write_temp(dir, name, contents, mode)?;
    let target = dir.join(name);
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(SpoolError::io("rename", &target, e));
    }
    sync_dir(dir)
}

/// Removes a file durably; a file already gone is not an error.
pub fn remove(dir: &Path, name: &str) -> Result<(), SpoolError> {
    let path = dir.join(name);
    match fs::remove_file(&path) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SpoolError::io("remove", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_files_never_clobber_and_leave_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_new(dir.path(), "a", b"one", 0o644).expect("first write");
        let err = write_new(dir.path(), "a", b"two", 0o644).expect_err("second write");
        assert!(matches!(err, SpoolError::Exists { .. }));
        assert_eq!(fs::read(dir.path().join("a")).expect("read"), b"one");
        write_replace(dir.path(), "a", b"three", 0o644).expect("replace");
        assert_eq!(fs::read(dir.path().join("a")).expect("read"), b"three");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a")]);
        remove(dir.path(), "a").expect("remove");
        remove(dir.path(), "a").expect("remove twice");
    }
}
