//! The accounting file: appending records durably under a lock, and reading it back as a
//! stream.
//!
//! SGE's qmaster is the file's one writer; gridspool's is `sched_d`, but a second daemon on a
//! shared cell (or a test) must not interleave half lines, so every append takes an exclusive
//! `flock` on the file, writes whole lines with one `write`, and `fdatasync`s before the lock
//! is released: a record is on disk when `append` returns. Readers (`qacct`, cron jobs, the
//! share-tree fold) take no lock: appends of whole lines are never seen torn by a reader that
//! stops at the last newline, and a final line without its newline is left for the next read.

use super::record::{AccountingRecord, RecordError};
use std::fs::{File, TryLockError};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What SGE 8.1.9 writes at the top of a new accounting file (capture
/// `accounting/file-head.txt`; the blank comment lines keep their trailing blank).
pub const HEADER: &str = "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n";

/// Failures of the accounting file, with the path and what was being done.
#[derive(Debug, thiserror::Error)]
pub enum AcctError {
    #[error("{path}: cannot {op}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A usage baseline (`Spool::usage_baseline_path()`) that cannot be read.
    #[error("{path}:{line}: {what}")]
    Baseline {
        path: PathBuf,
        line: u64,
        what: String,
    },
    /// SGE's spooled usage (`spooledit dump` texts) that cannot be read.
    #[error(transparent)]
    UsageDump(#[from] super::sge_usage::UsageDumpError),
    /// A file that could not be written whole (`file::durable`).
    #[error(transparent)]
    File(Box<crate::file::FileError>),
}

impl AcctError {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        AcctError::Io {
            op,
            path: path.to_path_buf(),
            source,
        }
    }

    /// The underlying I/O error's kind (e.g. `NotFound` for a missing file).
    pub fn kind(&self) -> std::io::ErrorKind {
        match self {
            AcctError::Io { source, .. } => source.kind(),
            AcctError::Baseline { .. } | AcctError::UsageDump(_) | AcctError::File(_) => {
                std::io::ErrorKind::Other
            }
        }
    }
}

/// How long an append waits for another writer's lock. An append holds it for one write and
/// one sync, milliseconds; a holder past this is frozen (SIGSTOP, a hung mount), in practice
/// a master that its shadow has replaced, which is fenced and will not write once it runs
/// again ([`append_checked`]): waiting for it would stop the live master's accounting, and
/// every end behind it, for as long as the frozen one lives.
pub const LOCK_PATIENCE: Duration = Duration::from_secs(10);

/// Appends records to the accounting file at `path`, creating it with SGE's [`HEADER`] when
/// it does not exist (or is empty). All of `records` are written in one `write` under an
/// exclusive lock (given up on after [`LOCK_PATIENCE`]) and synced before returning.
pub fn append(path: &Path, records: &[AccountingRecord]) -> Result<(), AcctError> {
    append_checked(path, records, LOCK_PATIENCE, || ())
}

/// [`append`], waiting at most `patience` for the lock, and calling `under_lock` once it is
/// held, just before the write: where a daemon that was replaced while it waited (or was
/// frozen) learns it and exits instead of writing records that its successor owns.
pub fn append_checked(
    path: &Path,
    records: &[AccountingRecord],
    patience: Duration,
    under_lock: impl FnOnce(),
) -> Result<(), AcctError> {
    let mut text = String::with_capacity(records.len() * 320);
    for r in records {
        text.push_str(&r.to_line());
        text.push('\n');
    }
    let existed = path.symlink_metadata().is_ok();
    // Never through a link, never blocking on a FIFO (`file::open`).
    let mut file = crate::file::open::open_append(path, 0o644)
        .map_err(|e| AcctError::io("open", path, e.into()))?;
    if !lock_within(&file, patience).map_err(|e| AcctError::io("lock", path, e))? {
        tracing::warn!(
            path = %path.display(),
            "the accounting file's lock has been held for {} s (a frozen writer, fenced): appending without it",
            patience.as_secs_f64()
        );
    }
    under_lock();
    let len = file
        .metadata()
        .map_err(|e| AcctError::io("stat", path, e))?
        .len();
    if len == 0 {
        text.insert_str(0, HEADER);
    }
    // The lock is released when `file` is dropped, after the sync. A write or sync that
    // fails (a full disk) leaves the file as it was, never a torn record, so that the same
    // records can be appended again, once (`durable::append_whole`).
    crate::file::durable::append_whole(&mut file, text.as_bytes())
        .map_err(|e| AcctError::io("write", path, e))?;
    if !existed && let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| AcctError::io("fsync", dir, e))?;
    }
    Ok(())
}

/// Takes `file`'s exclusive lock, waiting at most `patience`; false when it is still held.
fn lock_within(file: &File, patience: Duration) -> std::io::Result<bool> {
    let deadline = Instant::now() + patience;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return Ok(false),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// One item of the stream: a record, or a line that is not one.
#[derive(Debug)]
pub enum Entry {
    /// Boxed: a record is large and most entries are records.
    Record(Box<AccountingRecord>),
    Invalid {
        /// The 1-based physical line number.
        line: u64,
        /// The number `qacct` reports ("error: ignoring invalid entry in line N"): SGE counts
        /// only the lines it tries to parse, not comments and empty lines.
        entry: u64,
        error: RecordError,
    },
}

/// Streams an accounting file with a buffered reader: one line in memory at a time, comment
/// lines (`#`) and empty lines skipped, so a million records need constant memory. Lines of
/// blanks are invalid entries, as in SGE.
pub struct Reader<R> {
    input: R,
    path: PathBuf,
    line: u64,
    entry: u64,
    buf: Vec<u8>,
    /// Bytes of the whole lines read so far (a last line still being written is not).
    consumed: u64,
}

impl Reader<BufReader<File>> {
    /// Opens `path` for reading: a regular file only, not through a link (`file::open`;
    /// `qacct -f` names the file itself and opens it with [`Reader::open_named`]).
    pub fn open(path: &Path) -> Result<Self, AcctError> {
        let file =
            crate::file::open::open(path).map_err(|e| AcctError::io("open", path, e.into()))?;
        Ok(Reader::new(BufReader::with_capacity(1 << 16, file), path))
    }
}

impl Reader<BufReader<File>> {
    /// Opens a file a user named (`qacct -f`): links are followed, as any command follows
    /// them, but a FIFO or device is still refused rather than waited on.
    pub fn open_named(path: &Path) -> Result<Self, AcctError> {
        let target = std::fs::canonicalize(path).map_err(|e| AcctError::io("open", path, e))?;
        Self::open(&target).map(|mut r| {
            r.path = path.to_path_buf();
            r
        })
    }
}

impl<R: BufRead> Reader<R> {
    pub fn new(input: R, path: &Path) -> Self {
        Reader {
            input,
            path: path.to_path_buf(),
            line: 0,
            entry: 0,
            buf: Vec::new(),
            consumed: 0,
        }
    }

    /// How many bytes of whole lines have been read: where the next record will start (the
    /// forecast's history goes on from there, `sched::forecast::history`).
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The next record or invalid line; `None` at the end of the file. A last line without
    /// its newline is a record still being written and is not returned.
    pub fn next_entry(&mut self) -> Option<Result<Entry, AcctError>> {
        loop {
            self.buf.clear();
            let n = match self.input.read_until(b'\n', &mut self.buf) {
                Ok(n) => n,
                Err(e) => return Some(Err(AcctError::io("read", &self.path, e))),
            };
            if n == 0 || !self.buf.ends_with(b"\n") {
                return None;
            }
            self.consumed += n as u64;
            self.line += 1;
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                self.entry += 1;
                return Some(Ok(Entry::Invalid {
                    line: self.line,
                    entry: self.entry,
                    error: RecordError::NotText,
                }));
            };
            let text = text.trim_end_matches(['\n', '\r']);
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            self.entry += 1;
            return Some(Ok(match AccountingRecord::parse_line(text) {
                Ok(r) => Entry::Record(Box::new(r)),
                Err(error) => Entry::Invalid {
                    line: self.line,
                    entry: self.entry,
                    error,
                },
            }));
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Entry, AcctError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line that is not text is one invalid entry: the record after it is read, and what
    /// was read of whole lines is counted (a last line still being written is not).
    #[test]
    fn a_line_not_text_is_one_invalid_entry_and_whole_lines_are_counted() {
        let record = |n: u32| {
            AccountingRecord {
                qname: "all.q".into(),
                job_number: n,
                ..AccountingRecord::default()
            }
            .to_line()
                + "\n"
        };
        let mut bytes = record(1).into_bytes();
        bytes.extend_from_slice(b"all.q:\xff\xfe:broken\n");
        bytes.extend_from_slice(record(2).as_bytes());
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(b"all.q:half a rec");
        let mut reader = Reader::new(&bytes[..], Path::new("accounting"));
        let entries: Vec<String> = reader
            .by_ref()
            .map(|e| match e.expect("entry") {
                Entry::Record(r) => format!("job {}", r.job_number),
                Entry::Invalid { line, error, .. } => format!("line {line}: {error:?}"),
            })
            .collect();
        assert_eq!(entries, ["job 1", "line 2: NotText", "job 2"]);
        assert_eq!(reader.consumed(), whole);
    }

    #[test]
    fn append_creates_with_header_and_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accounting");
        let mut r = AccountingRecord {
            qname: "all.q".into(),
            hostname: "h".into(),
            group: "g".into(),
            owner: "o".into(),
            job_name: "j".into(),
            job_number: 7,
            ..AccountingRecord::default()
        };
        append(&path, std::slice::from_ref(&r)).expect("append");
        r.job_number = 8;
        append(&path, &[r]).expect("append");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with(HEADER));
        assert_eq!(text.lines().count(), 6);
        let jobs: Vec<u32> = Reader::open(&path)
            .expect("open")
            .map(|e| match e.expect("io") {
                Entry::Record(r) => r.job_number,
                Entry::Invalid { line, .. } => panic!("invalid line {line}"),
            })
            .collect();
        assert_eq!(jobs, vec![7, 8]);
    }

    /// A writer frozen while it held the lock (a replaced master under SIGSTOP) does not stop
    /// the appends of the one that lives; one whose lock goes in time is waited for.
    #[test]
    fn an_append_waits_for_a_live_writer_and_gives_up_on_a_frozen_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accounting");
        let record = |job| AccountingRecord {
            qname: "all.q".into(),
            job_number: job,
            ..AccountingRecord::default()
        };
        append(&path, &[record(1)]).expect("append");
        let frozen = File::open(&path).expect("open");
        frozen.lock().expect("lock");
        let mut checked = false;
        append_checked(&path, &[record(2)], Duration::from_millis(50), || {
            checked = true
        })
        .expect("append without the lock");
        assert!(checked, "the caller's check runs before the write");
        // Released while the next append waits: it takes the lock and writes.
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(frozen);
        });
        append_checked(&path, &[record(3)], Duration::from_secs(60), || ()).expect("append");
        releaser.join().expect("join");
        let jobs: Vec<u32> = Reader::open(&path)
            .expect("open")
            .filter_map(|e| match e.expect("io") {
                Entry::Record(r) => Some(r.job_number),
                Entry::Invalid { .. } => None,
            })
            .collect();
        assert_eq!(jobs, vec![1, 2, 3]);
    }

    #[test]
    fn invalid_lines_are_numbered_and_a_torn_tail_waits() {
        let text = "# c\n\nall.q:h\n   \nlast-without-newline";
        let mut r = Reader::new(text.as_bytes(), Path::new("x"));
        let lines: Vec<(u64, u64)> = r
            .by_ref()
            .map(|e| match e.expect("io") {
                Entry::Invalid { line, entry, .. } => (line, entry),
                Entry::Record(_) => (0, 0),
            })
            .collect();
        assert_eq!(lines, vec![(3, 1), (4, 2)]);
    }
}
