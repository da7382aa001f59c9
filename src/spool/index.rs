//! The listing index: every job's listing summary in two files of `daemon/`, so that a job
//! listing (`qstat` without `-j`/`-r`) reads two files instead of one per job.
//!
//! `daemon/listing` (the *base*) holds one entry per job `sched_d` knows, in id order;
//! `daemon/listing.log` (the *log*) the entries changed or forgotten since, appended by
//! `sched_d` in the same wake-up in which it writes the state files, after them. An entry
//! is the binary form of the listing summary (`jobs::listing::binary`) of what the job's
//! files hold — its state file, or its job file while it has none — together with which of
//! the two it came from. When the log has grown to a quarter of the base, `sched_d` merges
//! both into a new base (a new *generation*; the log names the generation it extends).
//!
//! The index is a cache of the state files, kept only while its writer lives: a base says
//! which `sched_d` wrote it (boot id, pid and start time, as `/proc` shows them), and a
//! reader uses a *running* index only if that process is still alive after the reader has
//! read both files. A `sched_d` that stops cleanly leaves a *stopped* base (synced), valid
//! while `jobs/` is unchanged (its inode and modification time are recorded in the base).
//! Everything else — no index, another generation in the log, a damaged file, a dead
//! writer, a changed `jobs/` — makes readers scan the job files, as they always could. The
//! argument is in `spool/README.md` ("The listing index").
//!
//! Files of a running index are neither synced nor needed after a crash: a new `sched_d`
//! removes them (and syncs `daemon/`) before it reads the spool, and writes a new base once
//! it has read every job.
//!
//! One file over 1,000 lines: the base, the log, their merge and the reader's check that
//! both are current are one format with one invariant (the index says what the state files
//! say), which a reader must see whole to trust.

use super::{Spool, SpoolError};
use crate::file::durable;
use crate::model::JobId;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The base's and the log's names in `daemon/`.
pub const BASE_NAME: &str = "listing";
pub const LOG_NAME: &str = "listing.log";

const BASE_MAGIC: &[u8; 8] = b"GSLIDX3\n";
const LOG_MAGIC: &[u8; 8] = b"GSLLOG3\n";
const TRAILER: &[u8; 8] = b"GSLEND1\n";

/// Readable by the spool group (the clients run setgid to it), like the state files.
const INDEX_FILE_MODE: u32 = 0o640;

/// Entry kinds. A log entry of kind [`FORGET`] has no payload.
const FORGET: u8 = 0;
pub(super) const FROM_JOB_FILE: u8 = 1;
pub(super) const FROM_STATE_FILE: u8 = 2;

/// Merge the log into a new base when it has grown by this many bytes beyond a quarter of
/// the base's size, or by this many entries beyond a quarter of the base's entries: an
/// entry that forgets a job takes a few bytes, so a queue that emptied (10,000 jobs
/// forgotten) would otherwise leave every listing reading a base of 10,000 entries until
/// the log grew by a quarter of it in bytes.
const COMPACT_MIN_LOG: u64 = 256 * 1024;
const COMPACT_MIN_ENTRIES: u64 = 1024;

/// A job's listing entry as `sched_d` hands it to the index: the binary summary of what one
/// of its files holds, and which file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingEntry {
    pub(super) kind: u8,
    pub(super) bytes: Vec<u8>,
}

/// Whether a base was written by a running `sched_d` or at a clean stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running = 1,
    Stopped = 2,
}

/// A process as `/proc` identifies it across pid reuse and reboots.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Writer {
    boot_id: String,
    pid: u32,
    /// Field 22 of `/proc/<pid>/stat`: clock ticks after boot when the process started.
    start: u64,
}

fn boot_id() -> Option<String> {
    let s = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(s.trim().to_string())
}

/// The state letter and start time of a process, from `/proc/<pid>/stat` (the command name
/// in parentheses may hold spaces: the fields are counted after its closing parenthesis).
fn proc_stat(pid: u32) -> Option<(u8, u64)> {
    let s = fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = s.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&s[close + 1..]).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    // After the state come ppid … starttime: starttime is the 19th field after the state.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

impl Writer {
    fn me() -> Option<Writer> {
        let pid = std::process::id();
        let (_, start) = proc_stat(pid)?;
        Some(Writer {
            boot_id: boot_id()?,
            pid,
            start,
        })
    }

    /// The process still runs (a zombie has already let go of its lock and its index).
    fn alive(&self) -> bool {
        matches!(proc_stat(self.pid), Some((state, start))
            if start == self.start && state != b'Z' && state != b'X')
            && boot_id().as_deref() == Some(self.boot_id.as_str())
    }
}

/// What identifies a version of `jobs/`: a stopped base is valid while it is unchanged.
/// Every name created, renamed or removed in it (a submission, a state written, a job
/// retired) sets its modification time.
fn jobs_dir_stamp(jobs: &Path) -> Option<(u64, i64, i64)> {
    let m = fs::metadata(jobs).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec()))
}

/// The header of a base.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    phase: Phase,
    generation: u64,
    writer: Writer,
    jobs_stamp: (u64, i64, i64),
}

fn put_u32(out: &mut Vec<u8>, x: u32) {
    out.extend_from_slice(&x.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

/// One entry as both files hold it: id, payload length, kind, payload.
fn put_item(out: &mut Vec<u8>, id: JobId, kind: u8, payload: &[u8]) {
    put_u32(out, id.0);
    put_u32(out, u32::try_from(payload.len()).unwrap_or(u32::MAX));
    out.push(kind);
    out.extend_from_slice(payload);
}

fn encode_base<'a>(header: &Header, items: impl ExactSizeIterator<Item = Item<'a>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + items.len() * 256);
    out.extend_from_slice(BASE_MAGIC);
    out.push(header.phase as u8);
    put_u64(&mut out, header.generation);
    put_u32(&mut out, header.writer.pid);
    put_u64(&mut out, header.writer.start);
    put_u32(&mut out, header.writer.boot_id.len() as u32);
    out.extend_from_slice(header.writer.boot_id.as_bytes());
    put_u64(&mut out, header.jobs_stamp.0);
    put_u64(&mut out, header.jobs_stamp.1 as u64);
    put_u64(&mut out, header.jobs_stamp.2 as u64);
    let n = items.len() as u32;
    put_u32(&mut out, n);
    for it in items {
        put_item(&mut out, it.id, it.kind, it.payload);
    }
    out.extend_from_slice(TRAILER);
    put_u32(&mut out, n);
    out
}

/// An entry read from a file (borrowing the file's bytes).
#[derive(Debug, Clone, Copy)]
struct Item<'a> {
    id: JobId,
    kind: u8,
    payload: &'a [u8],
    /// Read from the log (else from the base).
    in_log: bool,
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn item(&mut self) -> Option<Item<'a>> {
        let id = JobId(self.u32()?);
        let len = self.u32()? as usize;
        let kind = *self.take(1)?.first()?;
        let payload = self.take(len)?;
        Some(Item {
            id,
            kind,
            payload,
            in_log: false,
        })
    }
}

fn decode_header(r: &mut Reader<'_>) -> Option<Header> {
    if r.take(8)? != BASE_MAGIC {
        return None;
    }
    let phase = match r.take(1)?[0] {
        1 => Phase::Running,
        2 => Phase::Stopped,
        _ => return None,
    };
    let generation = r.u64()?;
    let pid = r.u32()?;
    let start = r.u64()?;
    let n = r.u32()? as usize;
    let boot_id = std::str::from_utf8(r.take(n)?).ok()?.to_string();
    let jobs_stamp = (r.u64()?, r.u64()? as i64, r.u64()? as i64);
    Some(Header {
        phase,
        generation,
        writer: Writer {
            boot_id,
            pid,
            start,
        },
        jobs_stamp,
    })
}

/// A base: its header and entries (in id order, each id once), or `None` if damaged.
fn decode_base(bytes: &[u8]) -> Option<(Header, Vec<Item<'_>>)> {
    let mut r = Reader { b: bytes };
    let header = decode_header(&mut r)?;
    let n = r.u32()? as usize;
    if n.saturating_mul(9) > r.b.len() {
        return None;
    }
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        let it = r.item()?;
        if it.kind != FROM_JOB_FILE && it.kind != FROM_STATE_FILE {
            return None;
        }
        if items.last().is_some_and(|last: &Item<'_>| last.id >= it.id) {
            return None;
        }
        items.push(it);
    }
    if r.take(8)? != TRAILER || r.u32()? as usize != n || !r.b.is_empty() {
        return None;
    }
    Some((header, items))
}

/// A log's generation and entries in the order written. A last entry cut short (being
/// appended while we read) is left out: it stands for states written just now, as if we
/// had read a moment earlier.
fn decode_log(bytes: &[u8]) -> Option<(u64, Vec<Item<'_>>)> {
    let mut r = Reader { b: bytes };
    if r.take(8)? != LOG_MAGIC {
        return None;
    }
    let generation = r.u64()?;
    let mut items = Vec::new();
    while !r.b.is_empty() {
        let Some(mut it) = r.item() else { break };
        it.in_log = true;
        if it.kind > FROM_STATE_FILE || (it.kind == FORGET && !it.payload.is_empty()) {
            return None;
        }
        items.push(it);
    }
    Some((generation, items))
}

/// Base entries with the log applied: the latest entry per id, forgotten ids left out, in
/// id order.
fn merge<'a>(base: Vec<Item<'a>>, log: Vec<Item<'a>>) -> Vec<Item<'a>> {
    if log.is_empty() {
        return base;
    }
    // The last log entry of each id wins: a stable sort keeps the log's order within an id.
    let mut log = log;
    log.sort_by_key(|it| it.id);
    let mut latest: Vec<Item<'a>> = Vec::with_capacity(log.len());
    for it in log {
        match latest.last_mut() {
            Some(last) if last.id == it.id => *last = it,
            _ => latest.push(it),
        }
    }
    let mut out = Vec::with_capacity(base.len() + latest.len());
    let mut l = latest.into_iter().peekable();
    for b in base {
        while let Some(x) = l.next_if(|x| x.id < b.id) {
            if x.kind != FORGET {
                out.push(x);
            }
        }
        match l.next_if(|x| x.id == b.id) {
            Some(x) if x.kind != FORGET => out.push(x),
            Some(_) => {}
            None => out.push(b),
        }
    }
    out.extend(l.filter(|x| x.kind != FORGET));
    out
}

/// A valid index as a reader loaded it: the files' bytes and the merged entries.
pub(super) struct IndexView {
    base: Vec<u8>,
    log: Vec<u8>,
    /// (id, kind, in the log (else the base), start, end) in id order.
    entries: Vec<(JobId, u8, bool, usize, usize)>,
}

impl IndexView {
    /// Loads the index if it is one a reader may trust now (module documentation); `None`
    /// sends the reader to the job files.
    pub(super) fn load(spool: &Spool) -> Option<IndexView> {
        let dir = spool.daemon_dir();
        // A compaction between our reads of the base and the log shows as two generations:
        // read again.
        for _ in 0..3 {
            let base = crate::file::open::read(&dir.join(BASE_NAME)).ok()?;
            let (header, base_items) = decode_base(&base)?;
            let log = match header.phase {
                Phase::Running => match crate::file::open::read(&dir.join(LOG_NAME)) {
                    Ok(l) => l,
                    Err(e) if e.is_not_found() => continue,
                    Err(_) => return None,
                },
                Phase::Stopped => Vec::new(),
            };
            let log_items = match header.phase {
                Phase::Running => match decode_log(&log) {
                    Some((g, items)) if g == header.generation => items,
                    Some(_) => continue,
                    None => return None,
                },
                Phase::Stopped => Vec::new(),
            };
            // Checked after reading: a writer alive now was alive when we read, and
            // `jobs/` unchanged now was unchanged then.
            let valid = match header.phase {
                Phase::Running => header.writer.alive(),
                Phase::Stopped => jobs_dir_stamp(&spool.jobs_dir()) == Some(header.jobs_stamp),
            };
            if !valid {
                return None;
            }
            let entries = merge(base_items, log_items)
                .into_iter()
                .map(|it| {
                    let file: &[u8] = if it.in_log { &log } else { &base };
                    let start = it.payload.as_ptr() as usize - file.as_ptr() as usize;
                    (it.id, it.kind, it.in_log, start, start + it.payload.len())
                })
                .collect();
            return Some(IndexView { base, log, entries });
        }
        None
    }

    /// The entry of a job: whether it came from the state file, and its summary bytes.
    /// How many jobs the index has an entry for (forgotten ones excluded): what a listing
    /// expects `jobs/` to hold, to size its records before it has listed the directory.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn get(&self, id: JobId) -> Option<(bool, &[u8])> {
        let i = self.entries.binary_search_by_key(&id, |e| e.0).ok()?;
        let (_, kind, in_log, start, end) = self.entries[i];
        let bytes = if in_log { &self.log } else { &self.base };
        Some((kind == FROM_STATE_FILE, bytes.get(start..end)?))
    }
}

/// Writes a file whole (temporary name, rename) without syncing: for a running index,
/// which nobody reads after a crash. `sync`: also `fdatasync` the file and the directory.
fn replace(dir: &Path, name: &str, bytes: &[u8], sync: bool) -> Result<(), SpoolError> {
    if sync {
        return durable::write_replace(dir, name, bytes, INDEX_FILE_MODE).map_err(SpoolError::from);
    }
    let tmp = dir.join(format!(
        "{}{name}.{}",
        durable::TEMP_PREFIX,
        std::process::id()
    ));
    write_temp(&tmp, bytes)?;
    fs::rename(&tmp, dir.join(name)).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        SpoolError::io("write", &dir.join(name), e)
    })
}

/// Writes an index file under a temporary name, unsynced (nothing is removed on failure but
/// the temporary file itself).
fn write_temp(temp: &Path, bytes: &[u8]) -> Result<(), SpoolError> {
    let written = (|| {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(INDEX_FILE_MODE)
            .open(temp)?
            .write_all(bytes)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(temp);
        SpoolError::io("write", temp, e)
    })
}

/// Writes a stopped base of `entries` (sorted by id, one per id) for a cell no `sched_d`
/// runs on, as `sched_d` leaves one when it stops: `qstat_fill` builds benchmark cells
/// with it. `jobs/` must not change afterwards, or the base is not used.
pub fn write_stopped(spool: &Spool, entries: &[(JobId, ListingEntry)]) -> Result<(), SpoolError> {
    let dir = spool.daemon_dir();
    let _ = fs::remove_file(dir.join(LOG_NAME));
    let stamp = jobs_dir_stamp(&spool.jobs_dir()).ok_or_else(|| SpoolError::Missing {
        path: spool.jobs_dir(),
    })?;
    let header = Header {
        phase: Phase::Stopped,
        generation: 0,
        writer: Writer::default(),
        jobs_stamp: stamp,
    };
    let items = entries.iter().map(|(id, e)| Item {
        id: *id,
        kind: e.kind,
        payload: &e.bytes,
        in_log: false,
    });
    replace(&dir, BASE_NAME, &encode_base(&header, items), true)
}

/// `sched_d`'s side of the index.
#[derive(Debug)]
pub struct IndexWriter {
    dir: PathBuf,
    jobs: PathBuf,
    mode: Mode,
}

#[derive(Debug)]
enum Mode {
    /// Reading the spool at start: entries collected, nothing written yet.
    Building {
        writer: Writer,
        entries: std::collections::BTreeMap<JobId, ListingEntry>,
    },
    Running {
        writer: Writer,
        generation: u64,
        log: File,
        log_len: u64,
        base_len: u64,
        /// Entries in the base and in the log (pending ones too).
        base_entries: u64,
        log_entries: u64,
        /// Entries of this wake-up, appended by [`IndexWriter::commit`], and their number.
        pending: Vec<u8>,
        pending_entries: u64,
        /// The merge into the next generation, running on its own thread.
        merging: Option<Merging>,
    },
    /// No index (no `/proc`, or a write failed): readers scan the job files.
    Off,
}

/// A merge of the base and the log as it was when the merge began into the next
/// generation's base, on a thread of its own: at 100,000 jobs it takes tens of milliseconds,
/// which the daemon's main thread would otherwise spend between two wake-ups. The log keeps
/// growing meanwhile; what is appended after the merge began (kept in `tail`) becomes the
/// next generation's log when the merge is installed.
#[derive(Debug)]
struct Merging {
    tail: Vec<u8>,
    tail_entries: u64,
    thread: std::thread::JoinHandle<Result<MergedBase, SpoolError>>,
}

/// The next generation's base, written under a temporary name not yet renamed into place.
#[derive(Debug)]
struct MergedBase {
    temp: PathBuf,
    len: u64,
    entries: u64,
}

/// The temporary name of a base being merged (removed by [`IndexWriter::begin`] if left).
fn merge_temp(dir: &Path) -> PathBuf {
    dir.join(format!(
        "{}{BASE_NAME}.{}.next",
        durable::TEMP_PREFIX,
        std::process::id()
    ))
}

/// The merge of the base and the log of `generation` (the log's first `covered` bytes when
/// given: the main thread may be appending past them), encoded as a base with `next`'s
/// header; both files must be of that generation and written by `next`'s writer.
fn encode_merged(
    dir: &Path,
    generation: u64,
    covered: Option<u64>,
    next: &Header,
) -> Result<(Vec<u8>, u64), SpoolError> {
    let base_path = dir.join(BASE_NAME);
    let log_path = dir.join(LOG_NAME);
    let base =
        crate::file::open::read(&base_path).map_err(|e| SpoolError::open("read", &base_path, e))?;
    let log =
        crate::file::open::read(&log_path).map_err(|e| SpoolError::open("read", &log_path, e))?;
    let damaged = |path: &Path| SpoolError::Malformed {
        path: path.to_path_buf(),
        reason: "listing index damaged".into(),
    };
    let log = match covered {
        Some(n) => log.get(..n as usize).ok_or_else(|| damaged(&log_path))?,
        None => &log[..],
    };
    let (header, items) = decode_base(&base).ok_or_else(|| damaged(&base_path))?;
    let (g, log_items) = decode_log(log).ok_or_else(|| damaged(&log_path))?;
    if header.generation != generation || g != generation || header.writer != next.writer {
        return Err(damaged(&base_path));
    }
    let merged = merge(items, log_items);
    let entries = merged.len() as u64;
    Ok((encode_base(next, merged.into_iter()), entries))
}

/// Reads the base of `generation` and its log up to `covered` bytes, and writes their merge,
/// the base of the next generation, under [`merge_temp`].
fn merge_next_generation(
    dir: &Path,
    writer: &Writer,
    generation: u64,
    covered: u64,
) -> Result<MergedBase, SpoolError> {
    let header = Header {
        phase: Phase::Running,
        generation: generation + 1,
        writer: writer.clone(),
        jobs_stamp: (0, 0, 0),
    };
    let (bytes, entries) = encode_merged(dir, generation, Some(covered), &header)?;
    let temp = merge_temp(dir);
    write_temp(&temp, &bytes)?;
    Ok(MergedBase {
        temp,
        len: bytes.len() as u64,
        entries,
    })
}

impl IndexWriter {
    /// Removes any index left by an earlier `sched_d` (durably, before this one changes any
    /// state file) and starts collecting the entries of the jobs it reads.
    pub fn begin(spool: &Spool) -> IndexWriter {
        let dir = spool.daemon_dir();
        // Temporary files of an index a crashed sched_d was writing (named after its pid).
        let temp = format!("{}{BASE_NAME}", durable::TEMP_PREFIX);
        let mut names = vec![BASE_NAME.to_string(), LOG_NAME.to_string()];
        if let Ok(entries) = fs::read_dir(&dir) {
            names.extend(
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&temp)),
            );
        }
        let removed = durable::remove_many(&dir, &names);
        let mode = match (removed, Writer::me()) {
            (Ok(()), Some(writer)) => Mode::Building {
                writer,
                entries: Default::default(),
            },
            (Err(e), _) => {
                tracing::error!("listing index: {e}; job listings will read every job file");
                Mode::Off
            }
            (_, None) => {
                tracing::warn!("no /proc: no listing index, job listings read every job file");
                Mode::Off
            }
        };
        IndexWriter {
            dir,
            jobs: spool.jobs_dir(),
            mode,
        }
    }

    /// An index writer that writes nothing (tests of the daemon without `run`).
    pub fn off(spool: &Spool) -> IndexWriter {
        IndexWriter {
            dir: spool.daemon_dir(),
            jobs: spool.jobs_dir(),
            mode: Mode::Off,
        }
    }

    /// The job's files now hold what `entry` summarises; `None`: the summary could not be
    /// made, so listings must read the job's files.
    pub fn put(&mut self, id: JobId, entry: Option<ListingEntry>) {
        match (&mut self.mode, entry) {
            (Mode::Building { entries, .. }, Some(e)) => {
                entries.insert(id, e);
            }
            (Mode::Building { entries, .. }, None) => {
                entries.remove(&id);
            }
            (
                Mode::Running {
                    pending,
                    pending_entries,
                    ..
                },
                e,
            ) => {
                match e {
                    Some(e) => put_item(pending, id, e.kind, &e.bytes),
                    None => put_item(pending, id, FORGET, &[]),
                }
                *pending_entries += 1;
            }
            (Mode::Off, _) => {}
        }
    }

    /// The job's files are gone.
    pub fn forget(&mut self, id: JobId) {
        self.put(id, None);
    }

    /// The spool has been read: the first base of this `sched_d` is written.
    pub fn publish(&mut self) {
        let Mode::Building { writer, entries } = std::mem::replace(&mut self.mode, Mode::Off)
        else {
            return;
        };
        let header = Header {
            phase: Phase::Running,
            generation: 1,
            writer,
            jobs_stamp: (0, 0, 0),
        };
        let items = entries.iter().map(|(id, e)| Item {
            id: *id,
            kind: e.kind,
            payload: &e.bytes,
            in_log: false,
        });
        let base = encode_base(&header, items);
        let base_entries = entries.len() as u64;
        drop(entries);
        let started = replace(&self.dir, BASE_NAME, &base, false).and_then(|()| {
            self.start_generation(header, (base.len() as u64, base_entries), (&[], 0))
        });
        match started {
            Ok(mode) => self.mode = mode,
            Err(e) => self.fail(&e),
        }
    }

    /// Writes the log of `header`'s generation, holding `entries`, once that generation's
    /// base is in place (a reader that finds the new base with the old log reads again), and
    /// opens it for appending.
    /// `base` is the base's (bytes, entries); `log` the log's entries and their number.
    fn start_generation(
        &self,
        header: Header,
        base: (u64, u64),
        log: (&[u8], u64),
    ) -> Result<Mode, SpoolError> {
        let ((base_len, base_entries), (entries, log_entries)) = (base, log);
        let mut log_bytes = LOG_MAGIC.to_vec();
        put_u64(&mut log_bytes, header.generation);
        log_bytes.extend_from_slice(entries);
        replace(&self.dir, LOG_NAME, &log_bytes, false)?;
        let path = self.dir.join(LOG_NAME);
        let log = crate::file::open::open_append(&path, INDEX_FILE_MODE)
            .map_err(|e| SpoolError::open("open", &path, e))?;
        Ok(Mode::Running {
            writer: header.writer,
            generation: header.generation,
            log,
            log_len: log_bytes.len() as u64,
            base_len,
            base_entries,
            log_entries,
            pending: Vec::new(),
            pending_entries: 0,
            merging: None,
        })
    }

    /// Appends the wake-up's entries (after the state files they describe were written),
    /// installs a merge that has finished, and starts one when the log has grown.
    pub fn commit(&mut self) {
        let Mode::Running {
            writer,
            generation,
            log,
            log_len,
            base_len,
            base_entries,
            log_entries,
            pending,
            pending_entries,
            merging,
        } = &mut self.mode
        else {
            return;
        };
        if !pending.is_empty() {
            let path = self.dir.join(LOG_NAME);
            if let Err(e) = log.write_all(pending) {
                self.fail(&SpoolError::io("append", &path, e));
                return;
            }
            *log_len += pending.len() as u64;
            *log_entries += *pending_entries;
            if let Some(m) = merging {
                m.tail.extend_from_slice(pending);
                m.tail_entries += *pending_entries;
            }
            pending.clear();
            *pending_entries = 0;
        }
        if merging.as_ref().is_some_and(|m| m.thread.is_finished()) {
            self.install_merge();
            return;
        }
        let grown = *log_len > COMPACT_MIN_LOG + *base_len / 4
            || *log_entries > COMPACT_MIN_ENTRIES + *base_entries / 4;
        if merging.is_none() && grown {
            let (dir, writer, generation, covered) =
                (self.dir.clone(), writer.clone(), *generation, *log_len);
            let spawned = std::thread::Builder::new()
                .name("listing-merge".into())
                .spawn(move || merge_next_generation(&dir, &writer, generation, covered));
            match spawned {
                Ok(thread) => {
                    *merging = Some(Merging {
                        tail: Vec::new(),
                        tail_entries: 0,
                        thread,
                    })
                }
                Err(e) => self.fail(&SpoolError::io("start a thread for", &self.dir, e)),
            }
        }
    }

    /// Whether a merge is being written: it is put in place by the next [`Self::commit`],
    /// so the writer's owner wakes for one soon even when nothing else happens (after a
    /// purge the cell may stay idle, and every listing would read the old base).
    pub fn merging(&self) -> bool {
        matches!(
            self.mode,
            Mode::Running {
                merging: Some(_),
                ..
            }
        )
    }

    /// Waits for the merge in progress, if any, and installs it.
    #[cfg(test)]
    fn settle(&mut self) {
        if let Mode::Running {
            merging: Some(_), ..
        } = &self.mode
        {
            self.install_merge();
        }
    }

    /// Puts a finished merge in place: its base, then a log of the next generation holding
    /// what was appended since the merge began. A reader between the two renames finds two
    /// generations and reads again.
    fn install_merge(&mut self) {
        let Mode::Running {
            writer,
            generation,
            merging,
            ..
        } = &mut self.mode
        else {
            return;
        };
        let Some(m) = merging.take() else { return };
        let merged = m.thread.join().unwrap_or_else(|_| {
            Err(SpoolError::Malformed {
                path: self.dir.join(BASE_NAME),
                reason: "the listing index merge panicked".into(),
            })
        });
        let header = Header {
            phase: Phase::Running,
            generation: *generation + 1,
            writer: writer.clone(),
            jobs_stamp: (0, 0, 0),
        };
        let installed = merged.and_then(|base| {
            fs::rename(&base.temp, self.dir.join(BASE_NAME)).map_err(|e| {
                let _ = fs::remove_file(&base.temp);
                SpoolError::io("rename", &base.temp, e)
            })?;
            self.start_generation(header, (base.len, base.entries), (&m.tail, m.tail_entries))
        });
        match installed {
            Ok(mode) => self.mode = mode,
            Err(e) => self.fail(&e),
        }
    }

    /// `sched_d` stops cleanly, after its last state write: the index becomes a stopped
    /// base, synced, valid until `jobs/` changes.
    pub fn stop(&mut self) {
        self.commit();
        if let Mode::Running { merging, .. } = &mut self.mode
            && let Some(m) = merging.take()
        {
            // The files on disk are complete without it.
            if let Ok(Ok(base)) = m.thread.join() {
                let _ = fs::remove_file(base.temp);
            }
        }
        if matches!(self.mode, Mode::Running { .. }) {
            self.write_stopped_base();
        }
        self.mode = Mode::Off;
    }

    /// Merges the base and the log on disk into a stopped base, synced, and removes the log.
    fn write_stopped_base(&mut self) {
        let Mode::Running {
            writer, generation, ..
        } = &self.mode
        else {
            return;
        };
        let (writer, generation) = (writer.clone(), *generation);
        let result = (|| {
            let header = Header {
                phase: Phase::Stopped,
                generation: generation + 1,
                writer,
                jobs_stamp: jobs_dir_stamp(&self.jobs).ok_or_else(|| SpoolError::Missing {
                    path: self.jobs.clone(),
                })?,
            };
            let (bytes, _) = encode_merged(&self.dir, generation, None, &header)?;
            // The log goes first: a stopped base is read without one.
            durable::remove(&self.dir, LOG_NAME)?;
            replace(&self.dir, BASE_NAME, &bytes, true)
        })();
        if let Err(e) = result {
            self.fail(&e);
        }
    }

    /// A write failed: the index is removed (readers must not see it stale) and no longer
    /// kept by this `sched_d`.
    fn fail(&mut self, e: &SpoolError) {
        tracing::error!("listing index: {e}; job listings will read every job file");
        if let Mode::Running {
            merging: Some(m), ..
        } = std::mem::replace(&mut self.mode, Mode::Off)
            && let Ok(Ok(base)) = m.thread.join()
        {
            let _ = fs::remove_file(base.temp);
        }
        if let Err(e) = durable::remove(&self.dir, BASE_NAME) {
            tracing::error!("cannot remove the listing index, which may be stale: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_identifies_this_process() {
        let me = Writer::me().expect("/proc");
        assert!(me.alive());
        let other = Writer {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(!other.alive());
        let rebooted = Writer {
            boot_id: "00000000-0000-0000-0000-000000000000".into(),
            ..me
        };
        assert!(!rebooted.alive());
    }

    #[test]
    fn a_running_index_is_merged_as_it_grows_and_stops_valid_until_jobs_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let entry = |tag: u32| ListingEntry {
            kind: FROM_STATE_FILE,
            bytes: format!("{tag:0>1000}").into_bytes(),
        };
        let mut w = IndexWriter::begin(&spool);
        for id in 1..=100 {
            w.put(JobId(id), Some(entry(id)));
        }
        w.put(JobId(7), None);
        // Nothing is readable before the spool has been read.
        assert!(IndexView::load(&spool).is_none());
        w.publish();
        let view = IndexView::load(&spool).expect("running index");
        assert_eq!(view.get(JobId(3)), Some((true, &entry(3).bytes[..])));
        assert!(view.get(JobId(7)).is_none());
        // Batches of updates: the log passes 256 kB + a quarter of the base several times.
        let mut generations = std::collections::BTreeSet::new();
        let mut appended_while_merging = 0;
        for round in 0..10u32 {
            for id in 1..=100 {
                w.put(JobId(id), Some(entry(round * 1000 + id)));
            }
            w.forget(JobId(50 + round));
            w.put(JobId(1000 + round), Some(entry(round)));
            if let Mode::Running {
                merging: Some(_), ..
            } = &w.mode
            {
                // These entries land after the merge began: they must reach the next log.
                appended_while_merging += 1;
            }
            w.commit();
            if round % 2 == 0 {
                // Read while the merge may still run, then with it installed.
                w.settle();
            }
            if let Mode::Running { generation, .. } = &w.mode {
                generations.insert(*generation);
            }
            let view = IndexView::load(&spool).expect("running index");
            assert_eq!(
                view.get(JobId(1)),
                Some((true, &entry(round * 1000 + 1).bytes[..]))
            );
            assert!(view.get(JobId(50 + round)).is_none());
            assert_eq!(
                view.get(JobId(1000 + round)),
                Some((true, &entry(round).bytes[..]))
            );
        }
        assert!(generations.len() > 2, "{generations:?}");
        assert!(appended_while_merging > 0);
        w.stop();
        assert!(!dir.path().join("daemon").join(LOG_NAME).exists());
        let view = IndexView::load(&spool).expect("stopped index");
        assert_eq!(view.get(JobId(2)), Some((true, &entry(9002).bytes[..])));
        assert!(view.get(JobId(59)).is_none());
        // Any change in jobs/ retires a stopped index.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(spool.jobs_dir().join("1.job"), b"{}\n").expect("job file");
        assert!(IndexView::load(&spool).is_none());
        // A new writer removes what the last one left.
        let _w = IndexWriter::begin(&spool);
        assert!(!dir.path().join("daemon").join(BASE_NAME).exists());
    }

    /// Issue 27: a queue of 10,000 jobs that emptied leaves no base of 10,000 entries for
    /// every listing to read: the forgets (a few bytes each) count as entries.
    #[test]
    fn a_queue_that_emptied_is_merged_away() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let entry = ListingEntry {
            kind: FROM_STATE_FILE,
            bytes: b"0123456789".to_vec(),
        };
        let mut w = IndexWriter::begin(&spool);
        for id in 1..=10_000 {
            w.put(JobId(id), Some(entry.clone()));
        }
        w.publish();
        let base = dir.path().join("daemon").join(BASE_NAME);
        let full = std::fs::metadata(&base).expect("base").len();
        for batch in 0..100 {
            for id in batch * 100 + 1..=(batch + 1) * 100 {
                w.forget(JobId(id));
            }
            w.commit();
            w.settle();
        }
        w.commit();
        w.settle();
        let emptied = std::fs::metadata(&base).expect("base").len();
        assert!(emptied < full / 4, "{emptied} bytes of {full} left");
        let view = IndexView::load(&spool).expect("running index");
        assert!(view.get(JobId(1)).is_none() && view.get(JobId(10_000)).is_none());
    }

    #[test]
    fn the_log_overrides_and_forgets_base_entries() {
        let item = |id: u32, kind: u8, payload: &'static [u8]| Item {
            id: JobId(id),
            kind,
            payload,
            in_log: false,
        };
        let base = vec![item(1, 2, b"a"), item(3, 2, b"b"), item(5, 1, b"c")];
        let log = vec![
            item(3, 2, b"b2"),
            item(2, 1, b"n"),
            item(5, FORGET, b""),
            item(3, 2, b"b3"),
            item(9, 1, b"z"),
        ];
        let merged: Vec<(u32, &[u8])> = merge(base, log)
            .iter()
            .map(|it| (it.id.0, it.payload))
            .collect();
        assert_eq!(
            merged,
            vec![
                (1, &b"a"[..]),
                (2, &b"n"[..]),
                (3, &b"b3"[..]),
                (9, &b"z"[..])
            ]
        );
    }

    #[test]
    fn damaged_files_are_refused_and_a_torn_last_log_entry_is_left_out() {
        let header = Header {
            phase: Phase::Running,
            generation: 7,
            writer: Writer::default(),
            jobs_stamp: (1, 2, 3),
        };
        let items = [
            Item {
                id: JobId(1),
                kind: FROM_STATE_FILE,
                payload: b"xyz",
                in_log: false,
            },
            Item {
                id: JobId(4),
                kind: FROM_JOB_FILE,
                payload: b"",
                in_log: false,
            },
        ];
        let base = encode_base(&header, items.iter().copied());
        let (h, got) = decode_base(&base).expect("decodes");
        assert_eq!(h, header);
        assert_eq!(got.len(), 2);
        for cut in 0..base.len() {
            assert!(decode_base(&base[..cut]).is_none(), "cut at {cut}");
        }
        let mut longer = base.clone();
        longer.push(0);
        assert!(decode_base(&longer).is_none());

        let mut log = LOG_MAGIC.to_vec();
        put_u64(&mut log, 7);
        put_item(&mut log, JobId(2), FROM_JOB_FILE, b"abc");
        let whole = log.len();
        put_item(&mut log, JobId(3), FROM_STATE_FILE, b"defg");
        let (g, items) = decode_log(&log[..log.len() - 2]).expect("log");
        assert_eq!((g, items.len()), (7, 1));
        let (_, items) = decode_log(&log[..whole]).expect("log");
        assert_eq!(items.len(), 1);
        let (_, items) = decode_log(&log).expect("log");
        assert_eq!(items.len(), 2);
    }
}
