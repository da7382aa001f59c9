//! Job ids and request numbers: sequential, unique under any number of concurrent clients,
//! and never reused across crashes.
//!
//! A counter file holds the last number issued. A client takes an exclusive lock on a separate
//! lock file (std's `File::lock`, which is `flock`), reads the counter, publishes the next value
//! durably with [`durable::write_replace`], and only then uses it. The number is on disk before
//! any job carries it, so a crash can waste a number but never hand it out twice.

use super::{SpoolError, durable};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Issues the next number of the counter `name` in `dir` (`jobid`, `request`).
pub fn next(dir: &Path, name: &str) -> Result<u64, SpoolError> {
    next_block(dir, name, 1)
}

/// Reserves `count` consecutive numbers and returns the first.
pub fn next_block(dir: &Path, name: &str, count: u64) -> Result<u64, SpoolError> {
    let lock_path = dir.join(format!("{name}.lock"));
    let lock = open_lock(&lock_path)?;
    lock.lock()
        .map_err(|e| SpoolError::io("lock", &lock_path, e))?;
    let last = current(dir, name)?;
    let first = last + 1;
    durable::write_replace(dir, name, format!("{}\n", last + count).as_bytes(), 0o664)?;
    // The lock is released when `lock` is dropped, after the new value is durable.
    drop(lock);
    Ok(first)
}

/// Opens the lock file read-only (`flock` needs no write access, so clients of other users in
/// a shared installation can lock a file the first client created), creating it group-writable
/// when it does not exist yet.
fn open_lock(path: &Path) -> Result<fs::File, SpoolError> {
    match fs::File::open(path) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o660)
            .open(path)
            .map_err(|e| SpoolError::io("create", path, e)),
        Err(e) => Err(SpoolError::io("open", path, e)),
    }
}

/// The last number issued (0 before the first).
pub fn current(dir: &Path, name: &str) -> Result<u64, SpoolError> {
    let path = dir.join(name);
    match fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .map_err(|_| SpoolError::Malformed {
                path: path.clone(),
                reason: format!("counter holds {:?}, not a number", text.trim()),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(SpoolError::io("read", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn concurrent_clients_get_distinct_sequential_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ids: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..25)
                            .map(|_| next(dir.path(), "jobid").expect("next"))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("join"))
                .collect()
        });
        let unique: HashSet<_> = ids.iter().copied().collect();
        assert_eq!(unique.len(), 200);
        assert_eq!(ids.iter().max(), Some(&200));
        assert_eq!(ids.iter().min(), Some(&1));
        assert_eq!(current(dir.path(), "jobid").expect("current"), 200);
        assert_eq!(next_block(dir.path(), "jobid", 5).expect("block"), 201);
        assert_eq!(next(dir.path(), "jobid").expect("next"), 206);
    }
}
