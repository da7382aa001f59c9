//! The one way a file the project keeps is written (the spool's records, `config.yaml`, a
//! task directory's files): whole or not at all.
//!
//! A temporary file in the target's own directory is written and `sync_data`'d, then moved into
//! place (a hard link for new files, which fails instead of clobbering; a rename for
//! replacements), then the directory is fsynced so the new name survives a crash. A writer
//! killed half-way or a full disk leaves at most a `.tmp.` file, which scanners skip and
//! `sched_d` sweeps; never a half-written record under a real name.

use super::FileError;
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

fn write_temp(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<PathBuf, FileError> {
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
            // Named by the file it was to become: the temporary name means nothing to a
            // reader of the message (`qsub` on a full disk).
            Err(FileError::io("write", &dir.join(name), e))
        }
    }
}

/// Makes a directory's entries durable (new, renamed or removed names).
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| FileError::io("fsync", dir, e))
}

/// Publishes a new file; fails with [`FileError::Exists`] rather than replace one.
pub fn write_new(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), FileError> {
    let tmp = write_temp(dir, name, contents, mode)?;
    let target = dir.join(name);
    let linked = fs::hard_link(&tmp, &target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(FileError::Exists { path: target })
        }
        Err(e) => Err(FileError::io("link", &target, e)),
    }
}

/// Replaces a file (or creates it) atomically.
pub fn write_replace(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), FileError> {
    let tmp = write_temp(dir, name, contents, mode)?;
    let target = dir.join(name);
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(FileError::io("rename", &target, e));
    }
    sync_dir(dir)
}

/// [`write_replace`] for contents too large to hold in memory (an accounting file merged
/// with another): `fill` streams them into the temporary file, which then replaces `name`
/// as `write_replace` does. A failing `fill` leaves the old file as it was.
pub fn write_replace_with(
    dir: &Path,
    name: &str,
    mode: u32,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), FileError> {
    let tmp = temp_path(dir, name);
    let result = (|| {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        fill(&mut w)?;
        let f = w
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        f.sync_data()
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(FileError::io("write", &dir.join(name), e));
    }
    let target = dir.join(name);
    if let Err(e) = fs::rename(&tmp, &target) {
        let _ = fs::remove_file(&tmp);
        return Err(FileError::io("rename", &target, e));
    }
    sync_dir(dir)
}

/// Whether an error is the storage refusing a write that may succeed later: no space
/// (`ENOSPC`), a quota (`EDQUOT`), an I/O error (`EIO`).
pub fn is_storage_failure(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(nix::libc::ENOSPC | nix::libc::EDQUOT | nix::libc::EIO)
    )
}

/// Appends `bytes` to `file` (opened for appending, with one writer at a time: `sched_d`'s
/// exits lines, the accounting file under its lock) and syncs it, or leaves the file as it
/// was. A full disk (or a failed sync) can let part of the bytes in before the error: the
/// file is cut back to its length before the append, so that no torn line is left for a
/// reader to misparse and a retry after the error writes the whole line once.
pub fn append_whole(file: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    let before = file.metadata()?.len();
    let written = file.write_all(bytes).and_then(|()| file.sync_data());
    if let Err(e) = written {
        // Shrinking needs no space; if even that fails, the reader's rule (a last line
        // without its newline is not read) still covers a cut line, and the error stands.
        let _ = file.set_len(before).and_then(|()| file.sync_data());
        return Err(e);
    }
    Ok(())
}

/// How many threads a batch of durable writes uses. A sync waits for the device, not the
/// CPU, and a virtio disk takes concurrent syncs for little more than the cost of one (on
/// the reference machine 8 writers bring a durable replace from 11 ms to 0.6 ms each).
const SYNC_THREADS: usize = 8;

/// Runs `f` on every item on up to [`SYNC_THREADS`] threads; results in the items' order.
/// A thread that cannot be started leaves its share to the caller's thread.
pub fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(SYNC_THREADS);
    let f = &f;
    std::thread::scope(|scope| {
        let spawned: Vec<Result<std::thread::ScopedJoinHandle<'_, Vec<R>>, &[T]>> = items
            .chunks(chunk)
            .map(|part| {
                std::thread::Builder::new()
                    .name("spool-sync".into())
                    .spawn_scoped(scope, move || part.iter().map(f).collect())
                    .map_err(|_| part)
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for s in spawned {
            match s {
                Ok(handle) => match handle.join() {
                    Ok(rs) => out.extend(rs),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(part) => out.extend(part.iter().map(f)),
            }
        }
        out
    })
}

/// [`write_replace`] for many files of one directory: the temporary files are written and
/// synced in parallel, renamed, and the directory is synced once. One result per file.
pub fn write_replace_many(
    dir: &Path,
    files: &[(String, Vec<u8>)],
    mode: u32,
) -> Vec<Result<(), FileError>> {
    let temps = in_parallel(files, |(name, contents)| {
        write_temp(dir, name, contents, mode)
    });
    let mut results: Vec<Result<(), FileError>> = temps
        .into_iter()
        .zip(files)
        .map(|(tmp, (name, _))| {
            let tmp = tmp?;
            let target = dir.join(name);
            fs::rename(&tmp, &target).map_err(|e| {
                let _ = fs::remove_file(&tmp);
                FileError::io("rename", &target, e)
            })
        })
        .collect();
    if results.iter().any(Result::is_ok)
        && let Err(e) = sync_dir(dir)
    {
        let why = e.to_string();
        for r in results.iter_mut().filter(|r| r.is_ok()) {
            *r = Err(FileError::io(
                "fsync",
                dir,
                std::io::Error::other(why.clone()),
            ));
        }
    }
    results
}

/// [`remove`] for many files of one directory, with one directory sync.
pub fn remove_many(dir: &Path, names: &[String]) -> Result<(), FileError> {
    let mut removed = false;
    for name in names {
        let path = dir.join(name);
        match fs::remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FileError::io("remove", &path, e)),
        }
    }
    if removed { sync_dir(dir) } else { Ok(()) }
}

/// Removes a file durably; a file already gone is not an error.
pub fn remove(dir: &Path, name: &str) -> Result<(), FileError> {
    let path = dir.join(name);
    match fs::remove_file(&path) {
        Ok(()) => sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FileError::io("remove", &path, e)),
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
        assert!(matches!(err, FileError::Exists { .. }));
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

    #[test]
    fn many_files_are_replaced_and_removed_in_one_batch() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_replace(dir.path(), "3", b"old", 0o644).expect("replace");
        let files: Vec<(String, Vec<u8>)> = (0..20)
            .map(|i| (i.to_string(), format!("file {i}").into_bytes()))
            .collect();
        let results = write_replace_many(dir.path(), &files, 0o644);
        assert_eq!(results.len(), 20);
        assert!(results.iter().all(Result::is_ok));
        for i in 0..20 {
            let text = fs::read_to_string(dir.path().join(i.to_string())).expect("read");
            assert_eq!(text, format!("file {i}"));
        }
        // A file that cannot be written fails alone.
        let bad = vec![
            ("ok".to_string(), b"x".to_vec()),
            ("no/such/dir".to_string(), b"y".to_vec()),
        ];
        let results = write_replace_many(dir.path(), &bad, 0o644);
        assert!(results[0].is_ok() && results[1].is_err());
        let mut names: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        names.push("ok".into());
        names.push("never-there".into());
        remove_many(dir.path(), &names).expect("remove many");
        let left: Vec<_> = fs::read_dir(dir.path()).expect("readdir").collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            in_parallel(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], |x| x * 2)[9],
            20
        );
    }
}
