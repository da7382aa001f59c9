//! Job files, state files and the view of all jobs that clients show.

use super::index::{self, IndexView, ListingEntry};
use super::{CLIENT_FILE_MODE, Spool, SpoolError, sequence};
use crate::file::durable;
use crate::model::{JobId, JobRecord, JobSubmission, Request};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A file in the spool that could not be read as what its name says; reported, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// Every job the spool holds, as of one scan, with pending requests applied.
#[derive(Debug, Default)]
pub struct JobScan {
    /// The jobs in the system (a task pending or running), sorted by job id: what every
    /// command shows and acts on.
    pub jobs: Vec<JobRecord>,
    /// Jobs whose every task has ended, sorted by job id. `sched_d` keeps their files for
    /// its retention time (`--retention`) so that `qsub -sync` can read their exits and
    /// `qstat -s z` list them as zombies; to everything else they have left the system, as
    /// in SGE (`qstat -j` says `Following jobs do not exist`, `qdel` `does not exist`).
    pub ended: Vec<JobRecord>,
    /// Malformed or foreign files met on the way.
    pub problems: Vec<ScanProblem>,
}

impl JobScan {
    /// The job `id` if it is in the system (not ended).
    pub fn get(&self, id: JobId) -> Option<&JobRecord> {
        self.jobs
            .binary_search_by_key(&id, |j| j.id)
            .ok()
            .map(|i| &self.jobs[i])
    }

    /// Moves the jobs whose every task has ended from `jobs` to `ended` (only those move:
    /// the others stay in place).
    fn set_ended_aside(&mut self) {
        self.ended
            .extend(self.jobs.extract_if(.., |j| j.tasks.is_done()));
    }
}

fn malformed(path: &Path, reason: impl Into<String>) -> SpoolError {
    SpoolError::Malformed {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads the header line of a job file (the script after it is not needed to list jobs).
fn read_submission(path: &Path) -> Result<JobSubmission, SpoolError> {
    let file = crate::file::open::open(path).map_err(|e| SpoolError::open("open", path, e))?;
    let mut header = String::new();
    BufReader::with_capacity(8192, file)
        .read_line(&mut header)
        .map_err(|e| SpoolError::io("read", path, e))?;
    if !header.ends_with('\n') {
        return Err(malformed(path, "job file has no header line"));
    }
    serde_json::from_str(&header).map_err(|e| malformed(path, format!("bad job header: {e}")))
}

fn read_state(path: &Path) -> Result<JobRecord, SpoolError> {
    read_state_into(path, &mut Vec::new())
}

/// Reads a state file into `buf` (reused across a scan: no per-file allocation and no `statx`
/// to size it, which `fs::read` would do) and parses it.
fn read_state_into(path: &Path, buf: &mut Vec<u8>) -> Result<JobRecord, SpoolError> {
    buf.clear();
    crate::file::open::open(path)
        .map_err(|e| SpoolError::open("read", path, e))?
        .read_to_end(buf)
        .map_err(|e| SpoolError::io("read", path, e))?;
    parse_state(buf, false).map_err(|reason| malformed(path, reason))
}

/// The bytes of a state file (`sched_d` writes them, `qstat_fill` imitates it): the listing
/// summary on one line ([`listing::Summary`]), then the whole record. JSON never holds a raw
/// newline, so the summary line ends at the first one; a file written before summaries existed
/// is the record alone, which starts with `{` where a summary starts with `[`.
pub fn encode_state(job: &JobRecord) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(2048);
    serde_json::to_writer(&mut bytes, &listing::Summary::of(job))?;
    bytes.push(b'\n');
    serde_json::to_writer(&mut bytes, job)?;
    Ok(bytes)
}

/// The listing-index entry of a state file's bytes (`state`) or of a job file's header
/// line: the listing record a scan would read from those bytes, in binary
/// (`listing::binary`), so that a listing from the index shows exactly what one from the
/// files shows.
pub fn listing_entry(bytes: &[u8], state: bool) -> Result<ListingEntry, String> {
    let record = if state {
        parse_state(bytes, true)?
    } else {
        parse_submission(bytes, true)?
    };
    let mut out = Vec::with_capacity(256);
    listing::binary::encode(&listing::Summary::of(&record), &mut out);
    Ok(ListingEntry {
        kind: if state {
            index::FROM_STATE_FILE
        } else {
            index::FROM_JOB_FILE
        },
        bytes: out,
    })
}

/// A state file split into its summary line (if any) and the whole record.
fn split_state(bytes: &[u8]) -> Result<(Option<&[u8]>, &[u8]), String> {
    if bytes.first() != Some(&b'[') {
        return Ok((None, bytes));
    }
    match memchr_newline(bytes) {
        Some(i) => Ok((Some(&bytes[..i]), &bytes[i + 1..])),
        None => Err("bad job state: a summary line and no record".into()),
    }
}

/// The kind of a name in `jobs/`.
enum JobFileKind {
    Submission,
    State,
    Exits,
}

fn parse_job_file_name(name: &str) -> Option<(JobId, JobFileKind)> {
    let (stem, ext) = name.rsplit_once('.')?;
    let kind = match ext {
        "job" => JobFileKind::Submission,
        "state" => JobFileKind::State,
        "exits" => JobFileKind::Exits,
        _ => return None,
    };
    Some((stem.parse().ok()?, kind))
}

impl Spool {
    /// Takes the next job id from the locked sequence, durable before it is returned.
    pub fn allocate_job_id(&self) -> Result<JobId, SpoolError> {
        self.next_job_id(sequence::Sync::Now)
    }

    /// Takes the next job id for a job that is published ([`Spool::publish_job`]) before its
    /// id is shown to anyone: the counter is not synced, the job file keeps the id taken
    /// across a crash (`spool/README.md`, "Numbers are never reused"). A caller that shows
    /// the id without publishing a job (`qsub -w v`) uses [`Spool::allocate_job_id`].
    pub fn allocate_job_id_for_publication(&self) -> Result<JobId, SpoolError> {
        self.next_job_id(sequence::Sync::Deferred)
    }

    /// Makes sure the job-id counter on disk is at least `id` (as far as it was ever issued),
    /// before a job file leaves `jobs/` (`sched_d` only).
    pub fn ensure_job_id_durable(&self, id: JobId) -> Result<(), SpoolError> {
        use std::sync::atomic::Ordering;
        if u64::from(id.0) <= self.job_ids_durable_upto.load(Ordering::Acquire) {
            return Ok(());
        }
        let upto = sequence::sync(&self.seq_dir(), "jobid")?;
        self.job_ids_durable_upto.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }

    fn next_job_id(&self, sync: sequence::Sync) -> Result<JobId, SpoolError> {
        let jobs = self.jobs_dir();
        let n = sequence::next_free(
            &self.seq_dir(),
            "jobid",
            1,
            sync,
            |n| jobs.join(format!("{n}.job")).exists(),
            || self.highest_job_id_seen(),
        )?;
        u32::try_from(n).map(JobId).map_err(|_| {
            malformed(
                &self.seq_dir().join("jobid"),
                "job id sequence exhausted (above 2^32)",
            )
        })
    }

    /// The highest job id anything in the cell still carries: a file in `jobs/` (the jobs
    /// not yet retired) and the records of `common/accounting` and of the last rotated
    /// `accounting.1` (logrotate's `delaycompress` leaves it plain; the highest ids are in
    /// the newest records). What a job-id counter that was emptied or garbled is rebuilt
    /// from, so that it goes on past every id in use or on record instead of from 0.
    fn highest_job_id_seen(&self) -> Result<u64, SpoolError> {
        let dir = self.jobs_dir();
        let mut highest = 0u64;
        let entries = std::fs::read_dir(&dir).map_err(|e| SpoolError::io("readdir", &dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // `<id>.job`, `<id>.state`, `<id>.exits` and whatever else a writer left behind
            // under an id.
            if let Some(id) = name.split('.').next().and_then(|s| s.parse::<u64>().ok()) {
                highest = highest.max(id);
            }
        }
        let rotated = self.common_dir().join("accounting.1");
        for path in [self.accounting_path(), rotated] {
            let file = match super::open::open(&path) {
                Ok(f) => f,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(SpoolError::open("open", &path, e)),
            };
            for line in BufReader::new(file).split(b'\n') {
                let line = line.map_err(|e| SpoolError::io("read", &path, e))?;
                if line.first() == Some(&b'#') {
                    continue;
                }
                // SGE's accounting(5): the job number is the sixth field (the fields before
                // it are written with their colons replaced).
                let number = line
                    .split(|&b| b == b':')
                    .nth(5)
                    .and_then(|f| std::str::from_utf8(f).ok())
                    .and_then(|f| f.parse::<u64>().ok());
                if let Some(n) = number {
                    highest = highest.max(n);
                }
            }
        }
        Ok(highest)
    }

    /// Publishes a new job: one file, the header line then the script, whole or not at all.
    pub fn publish_job(&self, sub: &JobSubmission, script: &[u8]) -> Result<(), SpoolError> {
        let mut bytes = serde_json::to_vec(sub)
            .map_err(|e| malformed(&self.job_file(sub.id), format!("cannot encode job: {e}")))?;
        bytes.push(b'\n');
        bytes.extend_from_slice(script);
        durable::write_new(
            &self.jobs_dir(),
            &format!("{}.job", sub.id),
            &bytes,
            CLIENT_FILE_MODE,
        )
        .map_err(SpoolError::from)
    }

    /// The script stored with a job (what follows the header line).
    pub fn read_script(&self, id: JobId) -> Result<Vec<u8>, SpoolError> {
        let path = self.job_file(id);
        let mut bytes =
            crate::file::open::read(&path).map_err(|e| SpoolError::open("read", &path, e))?;
        let start = bytes.iter().position(|b| *b == b'\n').map(|i| i + 1);
        let start = start.ok_or_else(|| malformed(&path, "job file has no header line"))?;
        Ok(bytes.split_off(start))
    }

    /// Writes a job's current record (`sched_d` only).
    pub fn write_state(&self, job: &JobRecord) -> Result<(), SpoolError> {
        let path = self.state_file(job.id);
        let bytes = encode_state(job)
            .map_err(|e| malformed(&path, format!("cannot encode job state: {e}")))?;
        durable::write_replace(
            &self.jobs_dir(),
            &format!("{}.state", job.id),
            &bytes,
            0o640,
        )
        .map_err(SpoolError::from)
    }

    /// [`Spool::write_state`] for many jobs at once: written and synced in parallel, with
    /// one sync of `jobs/`. One result per record, in order, with the listing-index entry of
    /// what was written (`None` if the summary could not be read back, which cannot happen
    /// short of a bug: the index then forgets the job and listings read its file).
    pub fn write_states(
        &self,
        jobs: &[JobRecord],
    ) -> Vec<Result<Option<ListingEntry>, SpoolError>> {
        let mut files = Vec::with_capacity(jobs.len());
        let mut encoded = Vec::with_capacity(jobs.len());
        for job in jobs {
            match encode_state(job) {
                Ok(bytes) => {
                    encoded.push(Ok(listing_entry(&bytes, true).ok()));
                    files.push((format!("{}.state", job.id), bytes));
                }
                Err(e) => encoded.push(Err(malformed(
                    &self.state_file(job.id),
                    format!("cannot encode job state: {e}"),
                ))),
            }
        }
        let mut written = durable::write_replace_many(&self.jobs_dir(), &files, 0o640).into_iter();
        encoded
            .into_iter()
            .map(|e| {
                e.and_then(|entry| {
                    written
                        .next()
                        .unwrap_or(Ok(()))
                        .map_err(SpoolError::from)
                        .map(|()| entry)
                })
            })
            .collect()
    }

    /// [`Spool::remove_job`] for many jobs, with two syncs of `jobs/` in all (the exit logs
    /// go last, after the other files of every job).
    pub fn remove_jobs(&self, ids: &[JobId]) -> Result<(), SpoolError> {
        let dir = self.jobs_dir();
        let files: Vec<String> = ids
            .iter()
            .flat_map(|id| [format!("{id}.state"), format!("{id}.job")])
            .collect();
        durable::remove_many(&dir, &files)?;
        let exits: Vec<String> = ids.iter().map(|id| format!("{id}.exits")).collect();
        durable::remove_many(&dir, &exits).map_err(SpoolError::from)
    }

    /// Removes every file of a finished or deleted job (`sched_d` only). The exit log goes last
    /// so that `qsub -sync` can still read it while the rest disappears.
    pub fn remove_job(&self, id: JobId) -> Result<(), SpoolError> {
        // The job file keeps its id taken until the counter on disk covers it.
        self.ensure_job_id_durable(id)?;
        let dir = self.jobs_dir();
        durable::remove(&dir, &format!("{id}.state"))?;
        durable::remove(&dir, &format!("{id}.job"))?;
        durable::remove(&dir, &format!("{id}.exits")).map_err(SpoolError::from)
    }

    /// One job as it is now: its state file, else its submission; `None` if it does not exist.
    /// Pending requests are not applied (see [`Spool::scan_jobs`]).
    pub fn read_job(&self, id: JobId) -> Result<Option<JobRecord>, SpoolError> {
        match read_state(&self.state_file(id)) {
            Ok(job) => return Ok(Some(job)),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
        match read_submission(&self.job_file(id)) {
            Ok(sub) => Ok(Some(JobRecord::from_submission(sub))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// One job as a listing shows it now, without listing the others: its record with the
    /// requests `sched_d` has not folded in applied, as [`Spool::scan_jobs`] applies them;
    /// `None` if it is not in the system (never was, gone, or every task ended). What a
    /// client that follows a few jobs among thousands reads (`qstat --drmaa-agent`).
    pub fn read_job_in_system(&self, id: JobId) -> Result<Option<JobRecord>, SpoolError> {
        // Requests first, as a scan lists them: one folded in meanwhile is skipped by its
        // sequence number, never lost.
        let (requests, _) = self.scan_requests()?;
        let Some(job) = self.read_job(id)? else {
            return Ok(None);
        };
        let mut jobs = vec![job];
        apply_pending(&mut jobs, &requests);
        Ok(jobs.pop().filter(|j| !j.tasks.is_done()))
    }

    /// [`Spool::read_job`], with the listing-index entry of the file it read (`None` if
    /// the file has no listing form a client could read: listings then read the file).
    pub fn read_job_listed(
        &self,
        id: JobId,
    ) -> Result<Option<(JobRecord, Option<ListingEntry>)>, SpoolError> {
        Ok(self
            .read_job_owned(id)?
            .map(|(record, entry, _owner)| (record, entry)))
    }

    /// [`Spool::read_job_listed`], with the owner of the job file (its uid, from `fstat` of
    /// the descriptor that was read: the file checked is the file read). `sched_d` compares
    /// it with the uid inside (`docs/security.md`).
    pub fn read_job_owned(
        &self,
        id: JobId,
    ) -> Result<Option<(JobRecord, Option<ListingEntry>, u32)>, SpoolError> {
        use std::os::unix::fs::MetadataExt;
        let job_path = self.job_file(id);
        let job_file = match crate::file::open::open(&job_path) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(SpoolError::open("open", &job_path, e)),
        };
        let owner = job_file
            .metadata()
            .map_err(|e| SpoolError::io("stat", &job_path, e))?
            .uid();
        let path = self.state_file(id);
        match crate::file::open::read(&path) {
            Ok(bytes) => {
                let job = parse_state(&bytes, false).map_err(|reason| malformed(&path, reason))?;
                return Ok(Some((job, listing_entry(&bytes, true).ok(), owner)));
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(SpoolError::open("read", &path, e)),
        }
        let path = job_path;
        let mut header = Vec::new();
        BufReader::with_capacity(8192, job_file)
            .read_until(b'\n', &mut header)
            .map_err(|e| SpoolError::io("read", &path, e))?;
        if header.last() != Some(&b'\n') {
            return Err(malformed(&path, "job file has no header line"));
        }
        let sub: JobSubmission = serde_json::from_slice(&header)
            .map_err(|e| malformed(&path, format!("bad job header: {e}")))?;
        Ok(Some((
            JobRecord::from_submission(sub),
            listing_entry(&header, false).ok(),
            owner,
        )))
    }

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

    /// Whether a job listing now would read the listing index (`spool::index`) rather than
    /// every job file (for tests and diagnostics).
    pub fn listing_index_usable(&self) -> bool {
        IndexView::load(self).is_some()
    }

    fn scan(&self, depth: ScanDepth, use_index: bool) -> Result<JobScan, SpoolError> {
        let (requests, mut problems) = self.scan_requests()?;
        let mut full_for: Vec<JobId> = requests
            .iter()
            .flat_map(|r| r.actions.iter().filter_map(|a| a.job()))
            .collect();
        full_for.sort_unstable();
        full_for.dedup();
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
            let ready = (expected > 0).then(|| {
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
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(chunks);
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
type WantedJob = (JobId, bool);

fn list_job_files(dir: &Path) -> Result<(Vec<WantedJob>, Vec<ScanProblem>), SpoolError> {
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
        match std::str::from_utf8(name).ok().and_then(parse_job_file_name) {
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

/// The file as text: checked as UTF-8 once, so that the parser (`from_str`) need not check
/// each string again, which `from_slice` does.
fn utf8<'b>(bytes: &'b [u8], what: &str) -> Result<&'b str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("bad {what}: {e}"))
}

fn parse_state(bytes: &[u8], listing: bool) -> Result<JobRecord, String> {
    let (summary, record) = split_state(bytes)?;
    if listing
        && let Some(line) = summary
        && line.starts_with(listing::SUMMARY_TAG)
    {
        let text = utf8(line, "job state summary")?;
        return serde_json::from_str::<listing::Summary>(text)
            .map(listing::Summary::into_record)
            .map_err(|e| format!("bad job state summary: {e}"));
    }
    // No summary (an older file), or one of a later layout: the record itself.
    let text = utf8(record, "job state")?;
    let r = if listing {
        serde_json::from_str::<listing::Record>(text).map(listing::Record::into_record)
    } else {
        serde_json::from_str::<JobRecord>(text)
    };
    r.map_err(|e| format!("bad job state: {e}"))
}

fn parse_submission(bytes: &[u8], listing: bool) -> Result<JobRecord, String> {
    let Some(end) = memchr_newline(bytes) else {
        return Err("job file has no header line".into());
    };
    let header = utf8(&bytes[..end], "job header")?;
    let r = if listing {
        serde_json::from_str::<listing::Submission>(header)
            .map(listing::Submission::into_submission)
    } else {
        serde_json::from_str::<JobSubmission>(header)
    };
    r.map(JobRecord::from_submission)
        .map_err(|e| format!("bad job header: {e}"))
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// The parts of a record that job listings (`qstat` without `-j` or `-r`) show: everything
/// else is skipped by the parser without being built (environment, arguments, paths, mail,
/// context, resource requests). Which fields are required mirrors the full types.
mod listing {
    use crate::model::{
        ErrorInfo, Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, PendingGroup,
        PriorityInfo, RunningTask, Submitter, TaskId, TaskIdRange, TaskSet, TaskStates,
    };
    use serde::de::IgnoredAny;
    use serde::{Deserialize, Serialize};
    use std::borrow::Cow;

    /// How a summary line of the current layout starts (`split_state`); a line with another
    /// tag is skipped and the record read instead, so that a later layout can be introduced
    /// without older clients misreading it.
    pub(super) const SUMMARY_TAG: &[u8] = b"[\"L3\",";

    /// A task range as `[first, last, step]`.
    type Range = (TaskId, TaskId, TaskId);

    fn range(r: &TaskIdRange) -> Range {
        (r.first, r.last, r.step)
    }

    fn task_range((first, last, step): Range) -> TaskIdRange {
        TaskIdRange { first, last, step }
    }

    /// `PriorityInfo` as an array: its 13 numbers in declaration order, then the policy
    /// terms.
    type Priority<'a> = (
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        Cow<'a, [(String, String)]>,
    );

    /// The listing summary: the first line of a state file, holding exactly what
    /// [`Record`] takes from the whole record, as one JSON array (no key to match, task
    /// ranges and priorities as arrays): several times cheaper to parse than the record.
    /// Fields, in order: tag, `v`, `id`, owner, uid, gid, submission time, name, priority,
    /// project, start time, deadline, predecessors, array predecessors, array range, `pe`,
    /// pending groups (`[[ranges], holds]`), running tasks, finished count, error,
    /// priorities, `version`, `applied_request`, finished tasks (`[ranges]`, since `L2`),
    /// restarted pending tasks (`[ranges]`, since `L3`).
    #[derive(Serialize, Deserialize)]
    pub(super) struct Summary<'a>(
        Tag,
        u32,
        JobId,
        Cow<'a, str>,
        u32,
        u32,
        i64,
        Cow<'a, str>,
        i32,
        Option<Cow<'a, str>>,
        Option<i64>,
        Option<i64>,
        Cow<'a, [JobId]>,
        Cow<'a, [JobId]>,
        Option<Range>,
        Option<Cow<'a, PeRequest>>,
        Vec<(Vec<Range>, Holds)>,
        Cow<'a, [RunningTask]>,
        u64,
        Option<Cow<'a, ErrorInfo>>,
        Option<Priority<'a>>,
        u32,
        u64,
        Vec<Range>,
        Vec<Range>,
    );

    /// The tag written first (read back as ignored: `SUMMARY_TAG` was checked on the bytes).
    pub(super) struct Tag;

    impl Serialize for Tag {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str("L3")
        }
    }

    impl<'de> Deserialize<'de> for Tag {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            IgnoredAny::deserialize(d).map(|_| Tag)
        }
    }

    impl<'a> Summary<'a> {
        pub(super) fn of(j: &'a JobRecord) -> Self {
            let p = j.priority.as_ref().map(|p| {
                (
                    p.prio,
                    p.nurg,
                    p.npprior,
                    p.ntckts,
                    p.urg,
                    p.rrcontr,
                    p.wtcontr,
                    p.dlcontr,
                    p.tickets,
                    p.otickets,
                    p.ftickets,
                    p.stickets,
                    p.share,
                    Cow::Borrowed(&p.policy_terms[..]),
                )
            });
            Summary(
                Tag,
                j.v,
                j.id,
                Cow::Borrowed(&j.submitter.owner),
                j.submitter.uid,
                j.submitter.gid,
                j.submitter.submission_time,
                Cow::Borrowed(&j.spec.name),
                j.spec.priority,
                j.spec.project.as_deref().map(Cow::Borrowed),
                j.spec.start_time,
                j.spec.deadline,
                Cow::Borrowed(&j.spec.predecessors),
                Cow::Borrowed(&j.spec.array_predecessors),
                j.spec.array.as_ref().map(range),
                j.spec.pe.as_ref().map(Cow::Borrowed),
                j.tasks
                    .pending
                    .iter()
                    .map(|g| (g.tasks.ranges().iter().map(range).collect(), g.holds))
                    .collect(),
                Cow::Borrowed(&j.tasks.running),
                j.tasks.finished,
                j.error.as_ref().map(Cow::Borrowed),
                p,
                j.version,
                j.applied_request,
                j.tasks.finished_tasks.ranges().iter().map(range).collect(),
                j.tasks.restarted.ranges().iter().map(range).collect(),
            )
        }

        pub(super) fn into_record(self) -> JobRecord {
            let Summary(
                _,
                v,
                id,
                owner,
                uid,
                gid,
                submission_time,
                name,
                priority,
                project,
                start_time,
                deadline,
                predecessors,
                array_predecessors,
                array,
                pe,
                pending,
                running,
                finished,
                error,
                prio,
                version,
                applied_request,
                finished_tasks,
                restarted,
            ) = self;
            let submitter = ListingSubmitter {
                owner: owner.into_owned(),
                uid,
                gid,
                submission_time,
            };
            let spec = Spec {
                name: name.into_owned(),
                priority,
                project: project.map(Cow::into_owned),
                start_time,
                deadline,
                predecessors: predecessors.into_owned(),
                array_predecessors: array_predecessors.into_owned(),
                array: array.map(task_range),
                pe: pe.map(Cow::into_owned),
            };
            let priority = prio.map(|p| PriorityInfo {
                prio: p.0,
                nurg: p.1,
                npprior: p.2,
                ntckts: p.3,
                urg: p.4,
                rrcontr: p.5,
                wtcontr: p.6,
                dlcontr: p.7,
                tickets: p.8,
                otickets: p.9,
                ftickets: p.10,
                stickets: p.11,
                share: p.12,
                policy_terms: p.13.into_owned(),
            });
            JobRecord {
                v,
                id,
                submitter: submitter.into_submitter(),
                spec: spec.into_spec(),
                tasks: TaskStates {
                    pending: pending
                        .into_iter()
                        .map(|(ranges, holds)| PendingGroup {
                            tasks: TaskSet::from_stored_ranges(
                                ranges.into_iter().map(task_range).collect(),
                            ),
                            holds,
                        })
                        .collect(),
                    running: running.into_owned(),
                    finished,
                    finished_tasks: TaskSet::from_stored_ranges(
                        finished_tasks.into_iter().map(task_range).collect(),
                    ),
                    // A listing's summary: what clients show, which these never are.
                    rescheduled: Vec::new(),
                    restarted: TaskSet::from_stored_ranges(
                        restarted.into_iter().map(task_range).collect(),
                    ),
                },
                error: error.map(Cow::into_owned),
                priority,
                pending_reasons: Vec::new(),
                version,
                applied_request,
            }
        }
    }

    /// The binary form of a summary, as the listing index (`spool::index`) stores it: the
    /// same fields as the JSON line, in the same order, little-endian, strings as a `u32`
    /// length and UTF-8 bytes, options as a `0`/`1` byte, floats as their IEEE bits (so that
    /// what a listing shows is exactly what the JSON line gave, without parsing a float).
    /// Decoding checks every length: a short or over-long entry is an error, never a panic.
    pub(super) mod binary {
        use super::*;
        use crate::model::{RunState, SlotRange, TaskUsage};

        fn u32_(out: &mut Vec<u8>, x: u32) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        fn u64_(out: &mut Vec<u8>, x: u64) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        fn i64_(out: &mut Vec<u8>, x: i64) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        fn f64_(out: &mut Vec<u8>, x: f64) {
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        fn len(out: &mut Vec<u8>, n: usize) {
            u32_(out, u32::try_from(n).unwrap_or(u32::MAX));
        }
        fn str_(out: &mut Vec<u8>, s: &str) {
            len(out, s.len());
            out.extend_from_slice(s.as_bytes());
        }
        fn opt_i64(out: &mut Vec<u8>, x: Option<i64>) {
            match x {
                Some(x) => {
                    out.push(1);
                    i64_(out, x);
                }
                None => out.push(0),
            }
        }
        fn holds(out: &mut Vec<u8>, h: Holds) {
            out.push(u8::from(h.user) | u8::from(h.operator) << 1 | u8::from(h.system) << 2);
        }
        fn ranges(out: &mut Vec<u8>, rs: &[Range]) {
            len(out, rs.len());
            for r in rs {
                u32_(out, r.0);
                u32_(out, r.1);
                u32_(out, r.2);
            }
        }
        fn ids(out: &mut Vec<u8>, ids: &[JobId]) {
            len(out, ids.len());
            for id in ids {
                u32_(out, id.0);
            }
        }

        /// Appends the binary form of `s` to `out`.
        pub(in crate::spool) fn encode(s: &Summary<'_>, out: &mut Vec<u8>) {
            u32_(out, s.1);
            u32_(out, s.2.0);
            str_(out, &s.3);
            u32_(out, s.4);
            u32_(out, s.5);
            i64_(out, s.6);
            str_(out, &s.7);
            out.extend_from_slice(&s.8.to_le_bytes());
            match &s.9 {
                Some(p) => {
                    out.push(1);
                    str_(out, p);
                }
                None => out.push(0),
            }
            opt_i64(out, s.10);
            opt_i64(out, s.11);
            ids(out, &s.12);
            ids(out, &s.13);
            match &s.14 {
                Some(r) => {
                    out.push(1);
                    ranges(out, std::slice::from_ref(r));
                }
                None => out.push(0),
            }
            match &s.15 {
                Some(pe) => {
                    out.push(1);
                    str_(out, &pe.name);
                    u32_(out, pe.range.min);
                    u32_(out, pe.range.max);
                }
                None => out.push(0),
            }
            len(out, s.16.len());
            for (rs, h) in &s.16 {
                ranges(out, rs);
                holds(out, *h);
            }
            len(out, s.17.len());
            for r in s.17.iter() {
                u32_(out, r.task);
                out.push(match r.state {
                    RunState::Transferring => 0,
                    RunState::Running => 1,
                    RunState::Suspended => 2,
                });
                i64_(out, r.start_time);
                str_(out, &r.queue);
                str_(out, &r.host);
                u32_(out, r.slots);
                len(out, r.granted.len());
                for (host, queue, slots) in &r.granted {
                    str_(out, host);
                    str_(out, queue);
                    u32_(out, *slots);
                }
                out.push(
                    u8::from(r.deleting)
                        | u8::from(r.restarted) << 1
                        | u8::from(r.queue_suspended) << 2
                        | u8::from(r.rescheduling) << 3,
                );
                holds(out, r.holds);
                match &r.usage {
                    Some(u) => {
                        out.push(1);
                        for x in [u.cpu, u.mem, u.io, u.vmem, u.maxvmem] {
                            f64_(out, x);
                        }
                    }
                    None => out.push(0),
                }
                len(out, r.devices.len());
                for (kind, ids) in &r.devices {
                    str_(out, kind);
                    len(out, ids.len());
                    for id in ids {
                        str_(out, id);
                    }
                }
            }
            u64_(out, s.18);
            match &s.19 {
                Some(e) => {
                    out.push(1);
                    i64_(out, e.time);
                    str_(out, &e.message);
                }
                None => out.push(0),
            }
            match &s.20 {
                Some(p) => {
                    out.push(1);
                    for x in [
                        p.0, p.1, p.2, p.3, p.4, p.5, p.6, p.7, p.8, p.9, p.10, p.11, p.12,
                    ] {
                        f64_(out, x);
                    }
                    len(out, p.13.len());
                    for (k, v) in p.13.iter() {
                        str_(out, k);
                        str_(out, v);
                    }
                }
                None => out.push(0),
            }
            u32_(out, s.21);
            u64_(out, s.22);
            ranges(out, &s.23);
            ranges(out, &s.24);
        }

        /// Reads what [`encode`] wrote, checking every length.
        struct Cursor<'b> {
            b: &'b [u8],
        }

        type R<T> = Result<T, &'static str>;

        impl<'b> Cursor<'b> {
            fn take(&mut self, n: usize) -> R<&'b [u8]> {
                if n > self.b.len() {
                    return Err("entry cut short");
                }
                let (head, rest) = self.b.split_at(n);
                self.b = rest;
                Ok(head)
            }
            fn array<const N: usize>(&mut self) -> R<[u8; N]> {
                self.take(N)?.try_into().map_err(|_| "entry cut short")
            }
            fn u8(&mut self) -> R<u8> {
                Ok(self.array::<1>()?[0])
            }
            fn flag(&mut self) -> R<bool> {
                match self.u8()? {
                    0 => Ok(false),
                    1 => Ok(true),
                    _ => Err("bad option tag"),
                }
            }
            fn u32(&mut self) -> R<u32> {
                self.array().map(u32::from_le_bytes)
            }
            fn i32(&mut self) -> R<i32> {
                self.array().map(i32::from_le_bytes)
            }
            fn u64(&mut self) -> R<u64> {
                self.array().map(u64::from_le_bytes)
            }
            fn i64(&mut self) -> R<i64> {
                self.array().map(i64::from_le_bytes)
            }
            fn f64(&mut self) -> R<f64> {
                self.u64().map(f64::from_bits)
            }
            /// A count of items of at least `min_size` bytes each: bounded by what is left, so
            /// that a damaged count cannot make us reserve gigabytes.
            fn count(&mut self, min_size: usize) -> R<usize> {
                let n = self.u32()? as usize;
                if n.saturating_mul(min_size) > self.b.len() {
                    return Err("count beyond the entry");
                }
                Ok(n)
            }
            fn string(&mut self) -> R<String> {
                let n = self.count(1)?;
                let bytes = self.take(n)?;
                std::str::from_utf8(bytes)
                    .map(str::to_owned)
                    .map_err(|_| "string not UTF-8")
            }
            fn opt_i64(&mut self) -> R<Option<i64>> {
                if self.flag()? {
                    self.i64().map(Some)
                } else {
                    Ok(None)
                }
            }
            fn holds(&mut self) -> R<Holds> {
                let b = self.u8()?;
                if b > 7 {
                    return Err("bad holds");
                }
                Ok(Holds {
                    user: b & 1 != 0,
                    operator: b & 2 != 0,
                    system: b & 4 != 0,
                })
            }
            fn range(&mut self) -> R<Range> {
                Ok((self.u32()?, self.u32()?, self.u32()?))
            }
            fn ranges(&mut self) -> R<Vec<Range>> {
                let n = self.count(12)?;
                (0..n).map(|_| self.range()).collect()
            }
            fn ids(&mut self) -> R<Vec<JobId>> {
                let n = self.count(4)?;
                (0..n).map(|_| self.u32().map(JobId)).collect()
            }
            fn running(&mut self) -> R<RunningTask> {
                let task = self.u32()?;
                let state = match self.u8()? {
                    0 => RunState::Transferring,
                    1 => RunState::Running,
                    2 => RunState::Suspended,
                    _ => return Err("bad run state"),
                };
                let start_time = self.i64()?;
                let queue = self.string()?;
                let host = self.string()?;
                let slots = self.u32()?;
                let n = self.count(12)?;
                let granted = (0..n)
                    .map(|_| Ok((self.string()?, self.string()?, self.u32()?)))
                    .collect::<R<Vec<_>>>()?;
                let flags = self.u8()?;
                if flags > 15 {
                    return Err("bad task flags");
                }
                let holds = self.holds()?;
                let usage = if self.flag()? {
                    Some(TaskUsage {
                        cpu: self.f64()?,
                        mem: self.f64()?,
                        io: self.f64()?,
                        vmem: self.f64()?,
                        maxvmem: self.f64()?,
                    })
                } else {
                    None
                };
                let n = self.count(8)?;
                let devices = (0..n)
                    .map(|_| {
                        let kind = self.string()?;
                        let m = self.count(4)?;
                        let ids = (0..m).map(|_| self.string()).collect::<R<Vec<_>>>()?;
                        Ok((kind, ids))
                    })
                    .collect::<R<Vec<_>>>()?;
                Ok(RunningTask {
                    task,
                    state,
                    start_time,
                    queue,
                    host,
                    slots,
                    granted,
                    deleting: flags & 1 != 0,
                    restarted: flags & 2 != 0,
                    queue_suspended: flags & 4 != 0,
                    rescheduling: flags & 8 != 0,
                    devices,
                    holds,
                    usage,
                })
            }
        }

        /// The listing record an entry stands for (as [`Summary::into_record`] builds it from
        /// the JSON line).
        pub(in crate::spool) fn decode(bytes: &[u8]) -> Result<JobRecord, String> {
            decode_summary(bytes)
                .map(Summary::into_record)
                .map_err(|e| format!("bad listing index entry: {e}"))
        }

        fn decode_summary(bytes: &[u8]) -> R<Summary<'static>> {
            let mut c = Cursor { b: bytes };
            let v = c.u32()?;
            let id = JobId(c.u32()?);
            let owner = c.string()?;
            let uid = c.u32()?;
            let gid = c.u32()?;
            let submission_time = c.i64()?;
            let name = c.string()?;
            let priority = c.i32()?;
            let project = if c.flag()? { Some(c.string()?) } else { None };
            let start_time = c.opt_i64()?;
            let deadline = c.opt_i64()?;
            let predecessors = c.ids()?;
            let array_predecessors = c.ids()?;
            let array = if c.flag()? {
                let n = c.count(12)?;
                if n != 1 {
                    return Err("bad array range");
                }
                Some(c.range()?)
            } else {
                None
            };
            let pe = if c.flag()? {
                Some(PeRequest {
                    name: c.string()?,
                    range: SlotRange {
                        min: c.u32()?,
                        max: c.u32()?,
                    },
                })
            } else {
                None
            };
            let n = c.count(5)?;
            let pending = (0..n)
                .map(|_| Ok((c.ranges()?, c.holds()?)))
                .collect::<R<Vec<_>>>()?;
            let n = c.count(30)?;
            let running = (0..n).map(|_| c.running()).collect::<R<Vec<_>>>()?;
            let finished = c.u64()?;
            let error = if c.flag()? {
                Some(ErrorInfo {
                    time: c.i64()?,
                    message: c.string()?,
                })
            } else {
                None
            };
            let prio = if c.flag()? {
                let mut x = [0f64; 13];
                for slot in &mut x {
                    *slot = c.f64()?;
                }
                let n = c.count(8)?;
                let terms = (0..n)
                    .map(|_| Ok((c.string()?, c.string()?)))
                    .collect::<R<Vec<_>>>()?;
                Some((
                    x[0],
                    x[1],
                    x[2],
                    x[3],
                    x[4],
                    x[5],
                    x[6],
                    x[7],
                    x[8],
                    x[9],
                    x[10],
                    x[11],
                    x[12],
                    Cow::Owned(terms),
                ))
            } else {
                None
            };
            let version = c.u32()?;
            let applied_request = c.u64()?;
            let finished_tasks = c.ranges()?;
            let restarted = c.ranges()?;
            if !c.b.is_empty() {
                return Err("bytes after the entry");
            }
            Ok(Summary(
                Tag,
                v,
                id,
                Cow::Owned(owner),
                uid,
                gid,
                submission_time,
                Cow::Owned(name),
                priority,
                project.map(Cow::Owned),
                start_time,
                deadline,
                Cow::Owned(predecessors),
                Cow::Owned(array_predecessors),
                array,
                pe.map(Cow::Owned),
                pending,
                Cow::Owned(running),
                finished,
                error.map(Cow::Owned),
                prio,
                version,
                applied_request,
                finished_tasks,
                restarted,
            ))
        }
    }

    #[derive(Deserialize)]
    pub(super) struct Record {
        v: u32,
        id: JobId,
        submitter: ListingSubmitter,
        spec: Spec,
        tasks: TaskStates,
        #[serde(default)]
        error: Option<ErrorInfo>,
        #[serde(default)]
        priority: Option<PriorityInfo>,
        #[serde(default)]
        version: u32,
        #[serde(default)]
        applied_request: u64,
    }

    #[derive(Deserialize)]
    pub(super) struct Submission {
        v: u32,
        id: JobId,
        submitter: ListingSubmitter,
        spec: Spec,
        #[serde(default)]
        holds: Holds,
    }

    #[derive(Deserialize)]
    struct ListingSubmitter {
        owner: String,
        uid: u32,
        gid: u32,
        submission_time: i64,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Spec {
        name: String,
        priority: i32,
        project: Option<String>,
        start_time: Option<i64>,
        deadline: Option<i64>,
        predecessors: Vec<JobId>,
        array_predecessors: Vec<JobId>,
        array: Option<TaskIdRange>,
        pe: Option<PeRequest>,
    }

    impl ListingSubmitter {
        fn into_submitter(self) -> Submitter {
            Submitter {
                owner: self.owner,
                uid: self.uid,
                group: String::new(),
                gid: self.gid,
                submission_time: self.submission_time,
                sge_o_home: String::new(),
                sge_o_log_name: String::new(),
                sge_o_path: String::new(),
                sge_o_shell: String::new(),
                sge_o_workdir: String::new(),
                sge_o_host: String::new(),
                sge_o_mail: None,
                sge_o_tz: None,
            }
        }
    }

    impl Spec {
        fn into_spec(self) -> JobSpec {
            JobSpec {
                name: self.name,
                priority: self.priority,
                project: self.project,
                start_time: self.start_time,
                deadline: self.deadline,
                predecessors: self.predecessors,
                array_predecessors: self.array_predecessors,
                array: self.array,
                pe: self.pe,
                // Not shown by listings; an empty string costs no allocation per job.
                account: String::new(),
                ..JobSpec::default()
            }
        }
    }

    impl Record {
        pub(super) fn into_record(self) -> JobRecord {
            JobRecord {
                v: self.v,
                id: self.id,
                submitter: self.submitter.into_submitter(),
                spec: self.spec.into_spec(),
                tasks: self.tasks,
                error: self.error,
                priority: self.priority,
                pending_reasons: Vec::new(),
                version: self.version,
                applied_request: self.applied_request,
            }
        }
    }

    impl Submission {
        pub(super) fn into_submission(self) -> JobSubmission {
            JobSubmission {
                v: self.v,
                id: self.id,
                submitter: self.submitter.into_submitter(),
                spec: self.spec.into_spec(),
                holds: self.holds,
            }
        }
    }
}

/// Applies requests (sorted by sequence) that a job's record has not absorbed yet.
/// Denied actions change nothing: the client that wrote them already reported the refusal.
pub(crate) fn apply_pending(jobs: &mut Vec<JobRecord>, requests: &[Request]) {
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
    use crate::model::{
        EnvVar, Holds, JobSpec, PriorityInfo, RequestAction, Requester, SpecChange, Submitter,
        TaskSelector,
    };

    fn submission(id: u32) -> JobSubmission {
        JobSubmission {
            v: 1,
            id: JobId(id),
            submitter: Submitter {
                owner: "alice".into(),
                uid: 1000,
                group: "staff".into(),
                gid: 50,
                submission_time: 1_795_000_000 + i64::from(id),
                sge_o_home: "/home/alice".into(),
                sge_o_log_name: "alice".into(),
                sge_o_path: "/bin".into(),
                sge_o_shell: "/bin/sh".into(),
                sge_o_workdir: "/home/alice".into(),
                sge_o_host: "vm".into(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            spec: JobSpec {
                name: format!("job{id}"),
                env: vec![EnvVar {
                    name: "TERM".into(),
                    value: Some("xterm".into()),
                }],
                priority: -3,
                project: Some("p1".into()),
                deadline: Some(1_795_100_000),
                predecessors: vec![JobId(1)],
                ..JobSpec::default()
            },
            holds: Holds::NONE,
        }
    }

    /// The fields a listing keeps, to compare a listing record with a whole one.
    fn listed(j: &JobRecord) -> String {
        format!(
            "{} {} {} {} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            j.id,
            j.submitter.owner,
            j.submitter.gid,
            j.submitter.submission_time,
            j.spec.name,
            j.spec.priority,
            j.spec.project,
            j.spec.deadline,
            j.spec.start_time,
            j.spec.predecessors,
            j.spec.array,
            j.spec.pe,
            j.tasks,
            j.error,
            j.priority,
        )
    }

    #[test]
    fn state_files_with_and_without_a_summary_list_alike() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let mut records = Vec::new();
        for id in 1..=3 {
            // An array with a task started: still in the system (`JobScan::jobs`).
            let mut sub = submission(id);
            sub.spec.array = Some(crate::model::TaskIdRange::new(1, 9, 2));
            spool.publish_job(&sub, b"#!/bin/sh\n").expect("publish");
            let mut rec = JobRecord::from_submission(sub);
            rec.tasks.pending[0].tasks.pop_first();
            rec.priority = Some(PriorityInfo {
                prio: 0.123_456_789_012_345_67,
                urg: 1000.5,
                policy_terms: vec![("gap".into(), "3".into())],
                ..PriorityInfo::default()
            });
            spool.write_state(&rec).expect("state");
            records.push(rec);
        }
        // Job 2 as written before summaries existed; job 3 with a summary of a later layout.
        let old = serde_json::to_vec(&records[1]).expect("encode");
        std::fs::write(spool.state_file(JobId(2)), old).expect("old state");
        let mut later = b"[\"L9\",\"whatever\"]\n".to_vec();
        later.extend(serde_json::to_vec(&records[2]).expect("encode"));
        std::fs::write(spool.state_file(JobId(3)), later).expect("later state");
        let full = spool.scan_jobs().expect("full");
        let listing = spool.scan_job_listing().expect("listing");
        assert!(full.problems.is_empty() && listing.problems.is_empty());
        assert_eq!(full.jobs, records);
        let a: Vec<String> = full.jobs.iter().map(listed).collect();
        let b: Vec<String> = listing.jobs.iter().map(listed).collect();
        assert_eq!(a, b);
        assert_eq!(
            spool.read_job(JobId(1)).expect("read"),
            Some(records[0].clone())
        );
    }

    #[test]
    fn index_entries_decode_to_the_listing_records_of_their_files() {
        use crate::model::{RunState, RunningTask, TaskUsage};
        let mut rec = JobRecord::from_submission(submission(7));
        rec.spec.array = Some(crate::model::TaskIdRange::new(1, 9, 2));
        rec.spec.start_time = Some(1_795_000_500);
        rec.spec.array_predecessors = vec![JobId(3), JobId(4)];
        rec.spec.pe = Some(crate::model::PeRequest {
            name: "smp".into(),
            range: crate::model::SlotRange { min: 2, max: 4 },
        });
        rec.tasks.pending[0].tasks.pop_first();
        rec.tasks.pending[0].holds.operator = true;
        rec.tasks.running.push(RunningTask {
            granted: vec![
                ("a".into(), "all.q".into(), 2),
                ("b".into(), "all.q".into(), 2),
            ],
            deleting: true,
            restarted: true,
            holds: Holds {
                system: true,
                ..Holds::NONE
            },
            usage: Some(TaskUsage {
                cpu: 1.25,
                mem: 0.1 + 0.2,
                io: 1e-300,
                vmem: 3e9,
                maxvmem: f64::MAX,
            }),
            state: RunState::Suspended,
            ..RunningTask::running(1, "all.q", "a", 4, 1_795_000_600)
        });
        rec.tasks.finished = 2;
        rec.tasks.finished_tasks = crate::model::TaskSet::from_stored_ranges(vec![
            crate::model::TaskIdRange::new(3, 3, 1),
            crate::model::TaskIdRange::new(7, 9, 2),
        ]);
        rec.error = Some(crate::model::ErrorInfo {
            time: 5,
            message: "can't start: é".into(),
        });
        rec.priority = Some(PriorityInfo {
            prio: 0.123_456_789_012_345_67,
            nurg: 1.0 / 3.0,
            tickets: 1e-7,
            policy_terms: vec![("gap".into(), "3".into()), ("slice".into(), "".into())],
            ..PriorityInfo::default()
        });
        rec.version = 3;
        rec.applied_request = 42;
        let state = encode_state(&rec).expect("encode");
        let old_state = serde_json::to_vec(&rec).expect("encode");
        let mut header = serde_json::to_vec(&submission(8)).expect("encode");
        header.push(b'\n');
        let bare = JobRecord::from_submission(submission(9));
        for (bytes, is_state) in [
            (&state[..], true),
            (&old_state[..], true),
            (&header[..], false),
            (&encode_state(&bare).expect("encode")[..], true),
        ] {
            let listed = if is_state {
                parse_state(bytes, true)
            } else {
                parse_submission(bytes, true)
            }
            .expect("parse");
            let entry = listing_entry(bytes, is_state).expect("entry");
            assert_eq!(entry.kind == index::FROM_STATE_FILE, is_state);
            assert_eq!(
                listing::binary::decode(&entry.bytes).expect("decode"),
                listed
            );
            // Every shorter entry is refused, never a panic.
            for cut in 0..entry.bytes.len() {
                assert!(listing::binary::decode(&entry.bytes[..cut]).is_err());
            }
        }
    }

    #[test]
    fn listing_scan_shows_what_a_full_scan_shows_with_requests_applied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        // Job 1 has a state file, job 2 only its submission, job 3 a state and a request.
        for id in 1..=3 {
            spool
                .publish_job(&submission(id), b"#!/bin/sh\n")
                .expect("publish");
        }
        for id in [1, 3] {
            let mut rec = JobRecord::from_submission(submission(id));
            rec.priority = Some(PriorityInfo {
                prio: 0.25,
                ..PriorityInfo::default()
            });
            spool.write_state(&rec).expect("state");
        }
        let who = Requester {
            uid: 1000,
            user: "alice".into(),
            host: "vm".into(),
            manager: false,
            operator: false,
        };
        spool
            .publish_request(
                who.clone(),
                vec![RequestAction::Hold {
                    job: JobId(3),
                    tasks: TaskSelector::All,
                    hold: Holds {
                        user: true,
                        ..Holds::NONE
                    },
                }],
            )
            .expect("hold");
        spool
            .publish_request(
                who,
                vec![RequestAction::Alter {
                    job: JobId(2),
                    changes: vec![SpecChange::Name("renamed".into())],
                }],
            )
            .expect("alter");
        std::fs::write(spool.jobs_dir().join("stray"), b"x").expect("stray");
        let full = spool.scan_jobs().expect("full");
        let listing = spool.scan_job_listing().expect("listing");
        assert_eq!(full.jobs.len(), 3);
        let a: Vec<String> = full.jobs.iter().map(listed).collect();
        let b: Vec<String> = listing.jobs.iter().map(listed).collect();
        assert_eq!(a, b);
        assert!(full.jobs[2].tasks.pending[0].holds.user);
        assert_eq!(listing.jobs[1].spec.name, "renamed");
        // Jobs with requests are read whole; the others without what listings leave out.
        assert_eq!(listing.jobs[2].spec.env, full.jobs[2].spec.env);
        assert!(listing.jobs[0].spec.env.is_empty());
        assert_eq!(full.problems.len(), 1);
        assert_eq!(listing.problems.len(), 1);
    }

    /// A job read alone is what a listing shows of it: requests not yet folded in applied
    /// (a deletion takes it out of the system at once), an unknown job nothing.
    #[test]
    fn a_job_read_alone_is_what_a_listing_shows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        for id in 1..=2 {
            spool
                .publish_job(&submission(id), b"#!/bin/sh\n")
                .expect("publish");
        }
        let who = Requester {
            uid: 1000,
            user: "alice".into(),
            host: "vm".into(),
            manager: false,
            operator: false,
        };
        spool
            .publish_request(
                who.clone(),
                vec![RequestAction::Hold {
                    job: JobId(1),
                    tasks: TaskSelector::All,
                    hold: Holds {
                        user: true,
                        ..Holds::NONE
                    },
                }],
            )
            .expect("hold");
        spool
            .publish_request(
                who,
                vec![RequestAction::Delete {
                    job: JobId(2),
                    tasks: TaskSelector::All,
                    force: false,
                }],
            )
            .expect("delete");
        let one = spool.read_job_in_system(JobId(1)).expect("read");
        assert!(one.is_some_and(|j| j.tasks.pending[0].holds.user));
        assert!(spool.read_job_in_system(JobId(2)).expect("read").is_none());
        assert!(spool.read_job_in_system(JobId(3)).expect("read").is_none());
        let listing = spool.scan_job_listing().expect("listing");
        assert_eq!(listing.jobs.len(), 1);
    }
}
