//! Reading every job of `jobs/` at once, in parallel, from the listing index where it can
//! be trusted and from the files otherwise, with the requests `sched_d` has not folded in
//! applied: what every listing and every command that acts on jobs reads.

use super::format::{memchr_newline, parse_state, parse_submission};
use super::{JobScan, ScanProblem, listing, malformed};
use crate::model::{JobId, JobRecord, Request};
use crate::spool::index::IndexView;
use crate::spool::{Spool, SpoolError};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

impl Spool {
    /// Reads every job, in parallel, and applies the requests that `sched_d` has not folded in
    /// yet, so that a client sees the effect of a `qdel` or `qalter` at once, daemon or not.
    ///
    /// Requests are listed *before* the jobs are read: a request folded in meanwhile is then
    /// already in the record and is skipped by its sequence number, never lost.
    pub fn scan_jobs(&self) -> Result<JobScan, SpoolError> {
        self.scan(ScanDepth::Full, false)
    }

    /// Like [`Spool::scan_jobs`], for job listings: records carry only what a listing shows
    /// (ids, owner, name, priority, project, times, dependencies, array and slot requests,
    /// task states, error flag, scheduler priorities); every other field holds its default
    /// (`account` is empty), not the job's value. Jobs with pending requests are read whole, so that requests apply
    /// exactly as in a full scan. Never write such records back or show their other fields
    /// (`qstat -j` and `-r` use [`Spool::scan_jobs`]).
    pub fn scan_job_listing(&self) -> Result<JobScan, SpoolError> {
        self.scan(ScanDepth::Listing, true)
    }

    /// [`Spool::scan_job_listing`] without the listing index: every job file is read (what
    /// a listing does when the index cannot be trusted). For tests and benchmarks, which
    /// compare both.
    pub fn scan_job_listing_by_files(&self) -> Result<JobScan, SpoolError> {
        self.scan(ScanDepth::Listing, false)
    }

    /// The ids of the jobs in `jobs/` (a job file or a state file), ascending: for a reader
    /// that takes one job at a time ([`Spool::read_job_owned`]).
    pub fn job_ids(&self) -> Result<Vec<JobId>, SpoolError> {
        let (wanted, _) = list_job_files(&self.jobs_dir())?;
        Ok(wanted.into_iter().map(|(id, _)| id).collect())
    }

    /// Whether a job listing now would read the listing index (`spool::index`) rather than
    /// every job file (for tests and diagnostics).
    pub fn listing_index_usable(&self) -> bool {
        IndexView::load(self).is_some()
    }

    fn scan(&self, depth: ScanDepth, use_index: bool) -> Result<JobScan, SpoolError> {
        let (requests, mut problems) = self.scan_requests()?;
        let full_for = jobs_named_in(&requests);
        let index = if depth == ScanDepth::Listing && use_index {
            IndexView::load(self)
        } else {
            None
        };
        let mut scan = self.scan_job_files(depth, &full_for, index.as_ref())?;
        scan.problems.append(&mut problems);
        apply_pending(&mut scan.jobs, &requests);
        scan.set_ended_aside();
        Ok(scan)
    }

    /// Reads the jobs of `jobs/`: from the listing index when given, for every job whose
    /// entry stands for the file the directory holds now (its state file, or its job file
    /// while it has none); from the files for the others, and for jobs with pending
    /// requests (`full_for`), which are read whole.
    /// Reads the jobs of `wanted` (listing records; those of `full_for` whole) from their
    /// files into the matching places of the result, for the jobs a listing's index does
    /// not stand for; returns the problems met too.
    pub(super) fn read_job_files(
        &self,
        wanted: &[WantedJob],
        full_for: &[JobId],
    ) -> Result<(Vec<Option<JobRecord>>, Vec<ScanProblem>), SpoolError> {
        let dir = self.jobs_dir();
        let dir_file = File::open(&dir).map_err(|e| SpoolError::io("open", &dir, e))?;
        let reader = JobReader {
            spool: self,
            dir: &dir_file,
            depth: ScanDepth::Listing,
            full_for,
        };
        let mut slots: Vec<Option<JobRecord>> = Vec::new();
        slots.resize_with(wanted.len(), || None);
        let problems = reader.read_all(wanted, &mut slots);
        Ok((slots, problems))
    }

    fn scan_job_files(
        &self,
        depth: ScanDepth,
        full_for: &[JobId],
        index: Option<&IndexView>,
    ) -> Result<JobScan, SpoolError> {
        let dir = self.jobs_dir();
        // The records' slots (1.2 kB each: at 100,000 jobs, 120 MB of fresh pages whose
        // faults are a good part of the listing's time) are made ready on a second core
        // while this one lists `jobs/`, sized for the jobs the index holds; then fitted to
        // the directory.
        let expected = index.map_or(0, IndexView::len);
        let (listed, mut slots) = std::thread::scope(|s| {
            let ready = (expected >= PARALLEL_SLOTS_FROM).then(|| {
                s.spawn(move || {
                    let mut slots: Vec<Option<JobRecord>> = Vec::new();
                    slots.resize_with(expected, || None);
                    slots
                })
            });
            let listed = list_job_files(&dir);
            let slots = match ready.map(|t| t.join()) {
                Some(Ok(slots)) => slots,
                Some(Err(p)) => std::panic::resume_unwind(p),
                None => Vec::new(),
            };
            (listed, slots)
        });
        let (wanted, mut problems) = listed?;
        slots.resize_with(wanted.len(), || None);
        // The directory's descriptor: each file is opened relative to it (`openat`), so the
        // kernel resolves one name per job instead of the whole spool path.
        let dir_file = File::open(&dir).map_err(|e| SpoolError::io("open", &dir, e))?;
        let reader = JobReader {
            spool: self,
            dir: &dir_file,
            depth,
            full_for,
        };
        let Some(index) = index else {
            problems.extend(reader.read_all(&wanted, &mut slots));
            return Ok(collect_jobs(slots, problems));
        };
        // Entries are decoded on every core; the jobs the index does not stand for are noted
        // by their places in `wanted`, and read from their files.
        let from_files: Vec<usize> = in_parallel_chunks(
            &wanted,
            &mut slots,
            2048,
            || (),
            |(), first, part, out, missing| {
                for (k, (&(id, has_state), slot)) in part.iter().zip(out).enumerate() {
                    let entry = if full_for.binary_search(&id).is_ok() {
                        None
                    } else {
                        index.get(id)
                    };
                    match entry.map(|(from_state, bytes)| {
                        (from_state == has_state, listing::binary::decode(bytes))
                    }) {
                        Some((true, Ok(job))) if job.id == id => *slot = Some(job),
                        _ => missing.push(first + k),
                    }
                }
            },
        );
        if !from_files.is_empty() {
            let part: Vec<WantedJob> = from_files.iter().map(|&i| wanted[i]).collect();
            let mut read: Vec<Option<JobRecord>> = Vec::new();
            read.resize_with(part.len(), || None);
            problems.extend(reader.read_all(&part, &mut read));
            for (i, job) in from_files.into_iter().zip(read) {
                slots[i] = job;
            }
        }
        Ok(collect_jobs(slots, problems))
    }
}

/// The jobs from which a listing makes its records' slots ready on a second core: below,
/// starting the thread costs more than the page faults it takes off the critical path.
const PARALLEL_SLOTS_FROM: usize = 8192;

/// The records read, in order (jobs that just ended or whose files are malformed left out).
fn collect_jobs(slots: Vec<Option<JobRecord>>, problems: Vec<ScanProblem>) -> JobScan {
    // `filter_map` collects in place (`Option<JobRecord>` and `JobRecord` have the same
    // layout), where `flatten` would build a second vector of the same size.
    #[allow(clippy::filter_map_identity)]
    let jobs: Vec<JobRecord> = slots.into_iter().filter_map(|j| j).collect();
    JobScan {
        jobs,
        ended: Vec::new(),
        problems,
    }
}

impl JobReader<'_> {
    /// Reads the jobs of `wanted` into the matching places of `slots`, in parallel; returns
    /// the problems met, in the order of the files.
    fn read_all(&self, wanted: &[WantedJob], slots: &mut [Option<JobRecord>]) -> Vec<ScanProblem> {
        // Each record is read straight into its place in one vector, so that no record is
        // built in a chunk's vector and copied again (each copy of 100,000 records touches
        // some 120 MB of fresh pages: tens of thousands of page faults).
        in_parallel_chunks(
            wanted,
            slots,
            512,
            ReadBuf::new,
            |buf, _, part, out, problems| problems.extend(self.read_jobs(part, out, buf)),
        )
    }
}

/// Runs `work` over `wanted` and the matching `slots`, `chunk` jobs at a time, on up to 8
/// cores. Threads take chunks from a shared queue rather than one fixed share each (on a
/// loaded machine one thread may get far less CPU than the other); `new_state` makes each
/// thread's scratch state. `work` gets the place of the chunk's first job in `wanted`;
/// what it pushes comes back in the order of the chunks, whatever thread met it.
fn in_parallel_chunks<S, R: Send>(
    wanted: &[WantedJob],
    slots: &mut [Option<JobRecord>],
    chunk: usize,
    new_state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize, &[WantedJob], &mut [Option<JobRecord>], &mut Vec<R>) + Sync,
) -> Vec<R> {
    let chunks = wanted.len().div_ceil(chunk);
    let queue = std::sync::Mutex::new(
        wanted
            .chunks(chunk)
            .zip(slots.chunks_mut(chunk))
            .enumerate(),
    );
    let run = || {
        let mut state = new_state();
        let mut done: Vec<(usize, Vec<R>)> = Vec::new();
        loop {
            // A poisoned queue means another thread panicked; its panic is raised below.
            let next = match queue.lock() {
                Ok(mut q) => q.next(),
                Err(_) => None,
            };
            let Some((c, (part, out))) = next else { break };
            let mut results = Vec::new();
            work(&mut state, c * chunk, part, out, &mut results);
            done.push((c, results));
        }
        done
    };
    // Asked only when there is work to share: `available_parallelism` reads the process's
    // cgroup files, and a thread costs more than a small cell's whole listing.
    let threads = if chunks <= 1 {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
            .min(chunks)
    };
    let mut done = if threads <= 1 {
        run()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..threads).map(|_| s.spawn(run)).collect();
            let mut all = run();
            for h in handles {
                all.append(&mut h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            all
        })
    };
    done.sort_unstable_by_key(|(c, _)| *c);
    done.into_iter().flat_map(|(_, results)| results).collect()
}

/// How much of each record a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanDepth {
    /// Whole records.
    Full,
    /// The fields job listings show (see [`Spool::scan_job_listing`]).
    Listing,
}

/// The job ids of `jobs/` in ascending order, each with whether it has a state file, plus
/// the names that are not job files. Read with `getdents` into a fixed buffer (no allocation
/// per name, which `fs::read_dir` makes twice) and sorted once instead of hashed.
/// A job id of `jobs/` and whether it has a state file (else only its submission).
pub(super) type WantedJob = (JobId, bool);

pub(super) fn list_job_files(dir: &Path) -> Result<(Vec<WantedJob>, Vec<ScanProblem>), SpoolError> {
    use nix::dir::Dir;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let io = |e: nix::Error| SpoolError::io("readdir", dir, std::io::Error::from(e));
    let mut d = Dir::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    // `id << 1 | has state`: a job file and a state file of one id appear as two entries.
    // One integer per name sorts several times faster than `(JobId, bool)` pairs.
    let mut names: Vec<u64> = Vec::new();
    let mut problems = Vec::new();
    for entry in d.iter() {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_bytes();
        if name.first() == Some(&b'.') {
            continue;
        }
        match parse_job_file_name(name) {
            Some((id, JobFileKind::Submission)) => names.push(u64::from(id.0) << 1),
            Some((id, JobFileKind::State)) => names.push(u64::from(id.0) << 1 | 1),
            Some((_, JobFileKind::Exits)) => {}
            None => problems.push(ScanProblem {
                path: dir.join(std::ffi::OsStr::from_bytes(name)),
                reason: "not a gridspool job file".to_string(),
            }),
        }
    }
    // Ids are nearly contiguous (the live jobs of a sequence): when their span is small
    // against their number, a table indexed by id orders them in one pass, where sorting
    // 200,000 names was the largest cost of listing `jobs/` after `getdents`.
    let (lo, hi) = names
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), k| (lo.min(*k), hi.max(*k)));
    if !names.is_empty() && (hi - lo) / 2 <= 4 * names.len() as u64 + 1024 {
        // Per id: 1 = a job file or state file seen, 2 = a state file seen.
        let mut seen = vec![0u8; ((hi >> 1) - (lo >> 1) + 1) as usize];
        for key in &names {
            seen[((key >> 1) - (lo >> 1)) as usize] |= 1 | ((key & 1) as u8) << 1;
        }
        let wanted = seen
            .iter()
            .enumerate()
            .filter(|(_, f)| **f != 0)
            .map(|(i, f)| {
                let id = (lo >> 1) + i as u64;
                (JobId(u32::try_from(id).unwrap_or(u32::MAX)), f & 2 != 0)
            })
            .collect();
        return Ok((wanted, problems));
    }
    // Sorted by id, the state file after the job file: keep the last entry of each id.
    names.sort_unstable();
    let mut wanted: Vec<(JobId, bool)> = Vec::with_capacity(names.len() / 2 + 1);
    for key in names {
        // The key came from a u32 shifted left by one.
        let id = JobId(u32::try_from(key >> 1).unwrap_or(u32::MAX));
        let has_state = key & 1 == 1;
        match wanted.last_mut() {
            Some(last) if last.0 == id => last.1 |= has_state,
            _ => wanted.push((id, has_state)),
        }
    }
    Ok((wanted, problems))
}

/// What the scan threads share.
struct JobReader<'a> {
    spool: &'a Spool,
    dir: &'a File,
    depth: ScanDepth,
    /// Jobs read whole even in a listing scan: those with pending requests, which are applied
    /// to whole records.
    full_for: &'a [JobId],
}

impl JobReader<'_> {
    /// Opens `name` in `jobs/` and reads it whole into `buf` (one `read` for a small file; no
    /// `statx` to size the buffer, which `read_to_end` on a `File` makes).
    fn read_file(
        &self,
        name: &str,
        buf: &mut ReadBuf,
        enough: impl Fn(&[u8]) -> bool,
    ) -> std::io::Result<()> {
        let mut file = crate::file::open::open_at(self.dir, name)?;
        buf.read_from(&mut file, enough)
    }

    /// Reads the jobs of `part` into the matching places of `out` (left `None` for a job
    /// that just ended or whose file is malformed); returns the problems met.
    fn read_jobs(
        &self,
        part: &[(JobId, bool)],
        out: &mut [Option<JobRecord>],
        buf: &mut ReadBuf,
    ) -> Vec<ScanProblem> {
        let mut problems = Vec::new();
        let mut name = String::with_capacity(32);
        for (&(id, has_state), slot) in part.iter().zip(out) {
            let listing =
                self.depth == ScanDepth::Listing && self.full_for.binary_search(&id).is_err();
            name.clear();
            let _ = write!(name, "{id}.{}", if has_state { "state" } else { "job" });
            // What the parser needs: a submission's header line; a listing's summary line
            // (of a layout this build reads); else the whole state file. Stopping there
            // saves the `read` that would only find the end of the file.
            let enough = |b: &[u8]| {
                if !has_state {
                    memchr_newline(b).is_some()
                } else {
                    listing && b.starts_with(listing::SUMMARY_TAG) && memchr_newline(b).is_some()
                }
            };
            let result = match self.read_file(&name, buf, enough) {
                Err(e) => Err(SpoolError::io(
                    "read",
                    &self.spool.jobs_dir().join(&name),
                    e,
                )),
                Ok(()) if has_state => Ok(parse_state(buf.filled(), listing)),
                Ok(()) => Ok(parse_submission(buf.filled(), listing)),
            };
            let result = result.and_then(|r| {
                r.map_err(|reason| malformed(&self.spool.jobs_dir().join(&name), reason))
            });
            match result {
                Ok(job) if job.id == id => *slot = Some(job),
                Ok(job) => problems.push(ScanProblem {
                    path: self.spool.job_file(id),
                    reason: format!("file of job {id} holds job {}", job.id),
                }),
                // Removed between listing and reading: the job just ended.
                Err(SpoolError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(SpoolError::Malformed { path, reason }) => {
                    problems.push(ScanProblem { path, reason })
                }
                Err(e) => problems.push(ScanProblem {
                    path: self.spool.job_file(id),
                    reason: e.to_string(),
                }),
            }
        }
        problems
    }
}

/// A read buffer reused across the files of a scan. Kept initialised at its full size, so a
/// read costs neither zeroing nor a `statx` to size it (as `read_to_end` on a `File` does).
struct ReadBuf {
    bytes: Vec<u8>,
    len: usize,
}

impl ReadBuf {
    fn new() -> Self {
        ReadBuf {
            bytes: vec![0; 16 * 1024],
            len: 0,
        }
    }

    fn filled(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Reads `f` to its end, or until what it holds is `enough`.
    fn read_from(&mut self, f: &mut File, enough: impl Fn(&[u8]) -> bool) -> std::io::Result<()> {
        self.len = 0;
        loop {
            if self.len == self.bytes.len() {
                self.bytes.resize(self.bytes.len() * 2, 0);
            }
            match f.read(&mut self.bytes[self.len..]) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    self.len += n;
                    if enough(self.filled()) {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The kind of a name in `jobs/`.
enum JobFileKind {
    Submission,
    State,
    Exits,
}

/// `ID.job`, `ID.state` or `ID.exits`, read from the name's bytes: a listing parses
/// every name of `jobs/` (200,000 at 100,000 jobs), and a plain id is read without the
/// string checks and searches of `str::parse`, which reads the others.
fn parse_job_file_name(name: &[u8]) -> Option<(JobId, JobFileKind)> {
    let dot = name.iter().rposition(|&b| b == b'.')?;
    let (stem, ext) = (&name[..dot], &name[dot + 1..]);
    let kind = match ext {
        b"job" => JobFileKind::Submission,
        b"state" => JobFileKind::State,
        b"exits" => JobFileKind::Exits,
        _ => return None,
    };
    if !stem.is_empty() && stem.len() <= 9 && stem.iter().all(u8::is_ascii_digit) {
        let id = stem.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
        return Some((JobId(id), kind));
    }
    Some((std::str::from_utf8(stem).ok()?.parse().ok()?, kind))
}

/// Applies requests (sorted by sequence) that a job's record has not absorbed yet.
/// Denied actions change nothing: the client that wrote them already reported the refusal.
/// The jobs that pending requests name, sorted: a listing reads them whole from their files,
/// where the requests are applied, not from the index.
pub(super) fn jobs_named_in(requests: &[Request]) -> Vec<JobId> {
    let mut jobs: Vec<JobId> = requests
        .iter()
        .flat_map(|r| r.actions.iter().filter_map(|a| a.job()))
        .collect();
    jobs.sort_unstable();
    jobs.dedup();
    jobs
}

pub(super) fn apply_pending(jobs: &mut Vec<JobRecord>, requests: &[Request]) {
    if requests.is_empty() {
        return;
    }
    for req in requests {
        for action in &req.actions {
            let Some(id) = action.job() else { continue };
            let Ok(i) = jobs.binary_search_by_key(&id, |j| j.id) else {
                continue;
            };
            let job = &mut jobs[i];
            if job.applied_request >= req.seq {
                continue;
            }
            let _ = Request::apply(action, &req.requester, job);
        }
    }
    // A job whose every task was deleted before any ran is gone; one with finished tasks
    // stays as a zombie (`qstat -s z`) until `sched_d` retires it.
    jobs.retain(|j| !j.tasks.is_done() || j.tasks.finished > 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte parser reads every name as `str::parse` of the stem would.
    #[test]
    fn job_file_names_parse_as_strings_do() {
        let by_str = |name: &str| {
            let (stem, ext) = name.rsplit_once('.')?;
            let kind = match ext {
                "job" => 0,
                "state" => 1,
                "exits" => 2,
                _ => return None,
            };
            Some((stem.parse::<u32>().ok()?, kind))
        };
        for name in [
            "12.job",
            "+12.job",
            "0012.state",
            "000000000012.state",
            "4294967295.exits",
            "4294967296.job",
            "999999999.job",
            "a.job",
            ".job",
            "12.jobx",
            "12",
            "1.2.job",
            "12.",
            "-1.job",
            "１２.job",
        ] {
            let parsed = parse_job_file_name(name.as_bytes()).map(|(id, kind)| {
                let kind = match kind {
                    JobFileKind::Submission => 0,
                    JobFileKind::State => 1,
                    JobFileKind::Exits => 2,
                };
                (id.0, kind)
            });
            assert_eq!(parsed, by_str(name), "{name}");
        }
    }
}
