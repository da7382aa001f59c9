//! Job ids and request numbers: sequential, unique under any number of concurrent clients,
//! and never reused across crashes.
//!
//! A counter file holds the last number issued, as a fixed-width decimal. A client takes an
//! exclusive `flock` on the counter file itself (std's `File::lock`), reads it, overwrites it
//! in place with the next value and, for request numbers and by default, `fdatasync`s it before
//! using the number: the number is on disk before anything carries it, so a crash can waste a
//! number but never hand it out twice.
//!
//! `qsub` takes its job id with [`Sync::Deferred`]: the new value goes to the page cache only,
//! and the job file, published durably before the id is shown to anyone, is what keeps the id
//! taken across a crash ([`next_free`] moves past a number whose job file exists). `sched_d`
//! makes the counter durable ([`sync`]) before it removes or moves a job file, so an id whose
//! job file is gone is below the counter on disk. The argument in full is in
//! `spool/README.md` ("Numbers are never reused").
//!
//! This is the one file in the spool that is rewritten in place rather than replaced by
//! rename (`durable`): the record is 21 bytes at offset 0, inside one disk sector, so the
//! write cannot tear, and it saves a file creation, a rename and a directory fsync on every
//! submission — most of what `qsub` costs. Job publication adds a second guard: a job file is
//! linked into place without clobbering, and [`next_free`] moves past a number whose job file
//! already exists.

use super::SpoolError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Width of the counter record: 20 digits (any u64) and a newline.
const RECORD_LEN: usize = 21;

/// The counter at `path`, opened, locked exclusively (the lock goes with the file) and read:
/// what it holds and the record's length.
fn lock_counter(path: &Path) -> Result<(File, Counter, usize), SpoolError> {
    let mut file = open_counter(path)?;
    file.lock().map_err(|e| SpoolError::io("lock", path, e))?;
    let (counter, len) = read_counter(&mut file, path)?;
    Ok((file, counter, len))
}

/// Opens (creating if needed) a counter every client of the spool group must be able to
/// rewrite. The creator's umask would strip the group's write bit from `mode`, so it is set
/// explicitly by whoever owns the file.
fn open_counter(path: &Path) -> Result<File, SpoolError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let file = crate::file::open::open_update(path, COUNTER_MODE)
        .map_err(|e| SpoolError::open("open", path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| SpoolError::io("stat", path, e))?;
    if meta.mode() & 0o777 != COUNTER_MODE && meta.uid() == nix::unistd::geteuid().as_raw() {
        file.set_permissions(std::fs::Permissions::from_mode(COUNTER_MODE))
            .map_err(|e| SpoolError::io("chmod", path, e))?;
    }
    Ok(file)
}

/// Readable and writable by the owner and the spool group, nobody else.
const COUNTER_MODE: u32 = 0o660;

/// What a counter file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Counter {
    /// The last number issued.
    Value(u64),
    /// Nothing: a counter just created, or one a crash or a hand truncated.
    Empty,
    /// Something that is not a number (what it holds, for the message).
    Garbled(String),
}

/// Reads the counter and the file's length in bytes.
fn read_counter(file: &mut File, path: &Path) -> Result<(Counter, usize), SpoolError> {
    let mut bytes = Vec::with_capacity(RECORD_LEN + 1);
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| SpoolError::io("read", path, e))?;
    let len = bytes.len();
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    let counter = if text.is_empty() {
        Counter::Empty
    } else {
        match text.parse::<u64>() {
            Ok(v) => Counter::Value(v),
            Err(_) => Counter::Garbled(text.chars().take(40).collect()),
        }
    };
    Ok((counter, len))
}

/// Reads the counter's value, 0 when empty, for the callers that only look at it: an empty
/// counter under-states what was issued, which [`sync`] and [`current`] may do safely.
fn read_value(file: &mut File, path: &Path) -> Result<(u64, usize), SpoolError> {
    match read_counter(file, path)? {
        (Counter::Value(v), len) => Ok((v, len)),
        (Counter::Empty, len) => Ok((0, len)),
        (Counter::Garbled(text), _) => Err(SpoolError::Malformed {
            path: path.to_path_buf(),
            reason: format!("counter holds {text:?}, not a number"),
        }),
    }
}

/// When a new counter value must be on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Before the number is returned (`fdatasync` under the lock).
    Now,
    /// Later: the caller publishes a durable record carrying the number (a job file, which
    /// [`next_free`]'s `taken` recognises) before the number is shown to anyone, and whoever
    /// removes such records calls [`sync`] first.
    Deferred,
}

/// Writes the counter record in place. The file is truncated only when its length is not the
/// record's (an old-format counter), so the usual case is one `pwrite`.
fn write_value(
    file: &mut File,
    path: &Path,
    value: u64,
    old_len: usize,
    sync: Sync,
) -> Result<(), SpoolError> {
    let record = format!("{value:>width$}\n", width = RECORD_LEN - 1);
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(record.as_bytes()))
        .and_then(|()| {
            if old_len == RECORD_LEN {
                Ok(())
            } else {
                file.set_len(RECORD_LEN as u64)
            }
        })
        .and_then(|()| match sync {
            Sync::Now => file.sync_data(),
            Sync::Deferred => Ok(()),
        })
        .map_err(|e| SpoolError::io("write", path, e))
}

/// Issues the next number of the counter `name` in `dir` (`jobid`, `request`).
pub fn next(dir: &Path, name: &str) -> Result<u64, SpoolError> {
    next_block(dir, name, 1)
}

/// Reserves `count` consecutive numbers and returns the first.
pub fn next_block(dir: &Path, name: &str, count: u64) -> Result<u64, SpoolError> {
    next_free(dir, name, count, Sync::Now, |_| false, || Ok(0))
}

/// Like [`next_block`], but skips past numbers for which `taken` says a record already
/// exists (a counter restored from an old backup, or edited by hand, cannot make a job id
/// come round twice). A counter that is empty or not a number is not taken as 0: `rebuild`
/// says the highest number ever issued, from the records that carry numbers, and the count
/// goes on from there (a counter file just created is empty too, and rebuilds to 0 on a
/// fresh cell).
pub fn next_free(
    dir: &Path,
    name: &str,
    count: u64,
    sync: Sync,
    taken: impl Fn(u64) -> bool,
    rebuild: impl FnOnce() -> Result<u64, SpoolError>,
) -> Result<u64, SpoolError> {
    let path = dir.join(name);
    let (mut file, counter, len) = lock_counter(&path)?;
    let last = match counter {
        Counter::Value(v) => v,
        Counter::Empty | Counter::Garbled(_) => rebuild()?,
    };
    let mut first = last + 1;
    while (first..first + count).any(&taken) {
        first += 1;
    }
    write_value(&mut file, &path, first + count - 1, len, sync)?;
    // The lock goes with the file, after the new value is written (and, with `Sync::Now`,
    // durable).
    drop(file);
    Ok(first)
}

/// Makes the counter durable as it is now and returns its value: every number up to it is on
/// disk as issued. Takes the lock (shared), so that no half-written record is read.
pub fn sync(dir: &Path, name: &str) -> Result<u64, SpoolError> {
    let path = dir.join(name);
    let mut file = match crate::file::open::open(&path) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(0),
        Err(e) => return Err(SpoolError::open("open", &path, e)),
    };
    file.lock_shared()
        .map_err(|e| SpoolError::io("lock", &path, e))?;
    let (value, _) = read_value(&mut file, &path)?;
    file.sync_data()
        .map_err(|e| SpoolError::io("fsync", &path, e))?;
    Ok(value)
}

/// Makes the counter `name` at least `floor`, durably, as if every number up to it had been
/// issued (an imported cell's: SGE's jobs had those ids); a higher counter is left as it is.
/// Returns the counter's value.
pub fn raise_to(dir: &Path, name: &str, floor: u64) -> Result<u64, SpoolError> {
    let path = dir.join(name);
    let (mut file, counter, len) = lock_counter(&path)?;
    let last = match counter {
        Counter::Value(v) => v,
        Counter::Empty | Counter::Garbled(_) => 0,
    };
    if last >= floor {
        return Ok(last);
    }
    write_value(&mut file, &path, floor, len, Sync::Now)?;
    Ok(floor)
}

/// The last number issued (0 before the first).
pub fn current(dir: &Path, name: &str) -> Result<u64, SpoolError> {
    let path = dir.join(name);
    match crate::file::open::open(&path) {
        Ok(mut f) => read_value(&mut f, &path).map(|(v, _)| v),
        Err(e) if e.is_not_found() => Ok(0),
        Err(e) => Err(SpoolError::open("open", &path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn a_counter_raised_goes_on_above_the_floor_and_is_never_lowered() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(raise_to(dir.path(), "jobid", 158).expect("raise"), 158);
        assert_eq!(next(dir.path(), "jobid").expect("next"), 159);
        assert_eq!(raise_to(dir.path(), "jobid", 100).expect("raise"), 159);
        assert_eq!(next(dir.path(), "jobid").expect("next"), 160);
    }

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

    #[test]
    fn old_counters_read_and_taken_numbers_are_skipped() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("jobid"), "41\n").expect("old format");
        assert_eq!(current(dir.path(), "jobid").expect("current"), 41);
        let n = next_free(
            dir.path(),
            "jobid",
            1,
            Sync::Now,
            |n| n == 42 || n == 43,
            || panic!("the counter is readable"),
        )
        .expect("next");
        assert_eq!(n, 44);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("jobid"))
                .expect("read")
                .len(),
            RECORD_LEN
        );
        assert_eq!(next(dir.path(), "jobid").expect("next"), 45);
        let n =
            next_free(dir.path(), "jobid", 1, Sync::Deferred, |_| false, || Ok(0)).expect("next");
        assert_eq!(n, 46);
        assert_eq!(sync(dir.path(), "jobid").expect("sync"), 46);
        assert_eq!(sync(dir.path(), "nosuchcounter").expect("sync"), 0);
    }

    #[test]
    fn an_empty_or_garbled_counter_goes_on_from_its_rebuilt_value_never_from_0() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("jobid");
        for damaged in ["", "\0\0\0\0", "12a\n"] {
            std::fs::write(&path, damaged).expect("damage");
            let n =
                next_free(dir.path(), "jobid", 1, Sync::Now, |_| false, || Ok(57)).expect("next");
            assert_eq!(n, 58, "counter held {damaged:?}");
            assert_eq!(current(dir.path(), "jobid").expect("current"), 58);
        }
        let failed = next_free(
            dir.path(),
            "absent",
            1,
            Sync::Now,
            |_| false,
            || {
                Err(SpoolError::Malformed {
                    path: dir.path().join("absent"),
                    reason: "cannot rebuild".into(),
                })
            },
        );
        assert!(failed.is_err());
    }
}
