//! Job files, state files and the view of all jobs that clients show.

use super::{CLIENT_FILE_MODE, Spool, SpoolError, durable, sequence};
use crate::model::{JobId, JobRecord, JobSubmission, Request};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

/// A file in the spool that could not be read as what its name says; reported, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanProblem {
    pub path: PathBuf,
    pub reason: String,
}

/// Every job the spool holds, as of one scan, with pending requests applied.
#[derive(Debug, Default)]
pub struct JobScan {
    /// Sorted by job id.
    pub jobs: Vec<JobRecord>,
    /// Malformed or foreign files met on the way.
    pub problems: Vec<ScanProblem>,
}

impl JobScan {
    pub fn get(&self, id: JobId) -> Option<&JobRecord> {
        self.jobs
            .binary_search_by_key(&id, |j| j.id)
            .ok()
            .map(|i| &self.jobs[i])
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
    let file = File::open(path).map_err(|e| SpoolError::io("open", path, e))?;
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
    File::open(path)
        .and_then(|mut f| f.read_to_end(buf))
        .map_err(|e| SpoolError::io("read", path, e))?;
    serde_json::from_slice(buf).map_err(|e| malformed(path, format!("bad job state: {e}")))
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
    /// Takes the next job id from the locked, durable sequence.
    pub fn allocate_job_id(&self) -> Result<JobId, SpoolError> {
        let jobs = self.jobs_dir();
        let n = sequence::next_free(&self.seq_dir(), "jobid", 1, |n| {
            jobs.join(format!("{n}.job")).exists()
        })?;
        u32::try_from(n).map(JobId).map_err(|_| {
            malformed(
                &self.seq_dir().join("jobid"),
                "job id sequence exhausted (above 2^32)",
            )
        })
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
    }

    /// The script stored with a job (what follows the header line).
    pub fn read_script(&self, id: JobId) -> Result<Vec<u8>, SpoolError> {
        let path = self.job_file(id);
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| SpoolError::io("read", &path, e))?;
        let start = bytes.iter().position(|b| *b == b'\n').map(|i| i + 1);
        let start = start.ok_or_else(|| malformed(&path, "job file has no header line"))?;
        Ok(bytes.split_off(start))
    }

    /// Writes a job's current record (`sched_d` only).
    pub fn write_state(&self, job: &JobRecord) -> Result<(), SpoolError> {
        let path = self.state_file(job.id);
        let bytes = serde_json::to_vec(job)
            .map_err(|e| malformed(&path, format!("cannot encode job state: {e}")))?;
        durable::write_replace(
            &self.jobs_dir(),
            &format!("{}.state", job.id),
            &bytes,
            0o640,
        )
    }

    /// [`Spool::write_state`] for many jobs at once: written and synced in parallel, with
    /// one sync of `jobs/`. One result per record, in order.
    pub fn write_states(&self, jobs: &[JobRecord]) -> Vec<Result<(), SpoolError>> {
        let mut files = Vec::with_capacity(jobs.len());
        let mut encoded = Vec::with_capacity(jobs.len());
        for job in jobs {
            match serde_json::to_vec(job) {
                Ok(bytes) => {
                    files.push((format!("{}.state", job.id), bytes));
                    encoded.push(Ok(()));
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
            .map(|e| e.and_then(|()| written.next().unwrap_or(Ok(()))))
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
        durable::remove_many(&dir, &exits)
    }

    /// Removes every file of a finished or deleted job (`sched_d` only). The exit log goes last
    /// so that `qsub -sync` can still read it while the rest disappears.
    pub fn remove_job(&self, id: JobId) -> Result<(), SpoolError> {
        let dir = self.jobs_dir();
        durable::remove(&dir, &format!("{id}.state"))?;
        durable::remove(&dir, &format!("{id}.job"))?;
        durable::remove(&dir, &format!("{id}.exits"))
    }

    /// One job as it is now: its state file, else its submission; `None` if it does not exist.
    /// Pending requests are not applied (see [`Spool::scan_jobs`]).
    pub fn read_job(&self, id: JobId) -> Result<Option<JobRecord>, SpoolError> {
        match read_state(&self.state_file(id)) {
            Ok(job) => return Ok(Some(job)),
            Err(SpoolError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            }
            Err(e) => return Err(e),
        }
        match read_submission(&self.job_file(id)) {
            Ok(sub) => Ok(Some(JobRecord::from_submission(sub))),
            Err(SpoolError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads every job, in parallel, and applies the requests that `sched_d` has not folded in
    /// yet, so that a client sees the effect of a `qdel` or `qalter` at once, daemon or not.
    ///
    /// Requests are listed *before* the jobs are read: a request folded in meanwhile is then
    /// already in the record and is skipped by its sequence number, never lost.
    pub fn scan_jobs(&self) -> Result<JobScan, SpoolError> {
        self.scan(ScanDepth::Full)
    }

    /// Like [`Spool::scan_jobs`], for job listings: records carry only what a listing shows
    /// (ids, owner, name, priority, project, times, dependencies, array and slot requests,
    /// task states, error flag, scheduler priorities); every other field holds its default,
    /// not the job's value. Jobs with pending requests are read whole, so that requests apply
    /// exactly as in a full scan. Never write such records back or show their other fields
    /// (`qstat -j` and `-r` use [`Spool::scan_jobs`]).
    pub fn scan_job_listing(&self) -> Result<JobScan, SpoolError> {
        self.scan(ScanDepth::Listing)
    }

    fn scan(&self, depth: ScanDepth) -> Result<JobScan, SpoolError> {
        let (requests, mut problems) = self.scan_requests()?;
        let mut full_for: Vec<JobId> = requests
            .iter()
            .flat_map(|r| r.actions.iter().map(|a| a.job()))
            .collect();
        full_for.sort_unstable();
        full_for.dedup();
        let mut scan = self.scan_job_files(depth, &full_for)?;
        scan.problems.append(&mut problems);
        apply_pending(&mut scan.jobs, &requests);
        Ok(scan)
    }

    fn scan_job_files(&self, depth: ScanDepth, full_for: &[JobId]) -> Result<JobScan, SpoolError> {
        let dir = self.jobs_dir();
        let (wanted, mut problems) = list_job_files(&dir)?;
        // The directory's descriptor: each file is opened relative to it (`openat`), so the
        // kernel resolves one name per job instead of the whole spool path.
        let dir_file = File::open(&dir).map_err(|e| SpoolError::io("open", &dir, e))?;
        let reader = JobReader {
            spool: self,
            dir: &dir_file,
            depth,
            full_for,
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        // Threads take chunks from a shared counter rather than one fixed half each: on a
        // loaded machine one thread may get far less CPU than the other.
        const CHUNK: usize = 512;
        let chunks = wanted.len().div_ceil(CHUNK);
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done: Vec<(usize, Vec<JobRecord>, Vec<ScanProblem>)> = Vec::new();
            let mut buf = ReadBuf::new();
            loop {
                let c = next.fetch_add(1, AtomicOrdering::Relaxed);
                if c >= chunks {
                    break;
                }
                let part = &wanted[c * CHUNK..((c + 1) * CHUNK).min(wanted.len())];
                let (j, p) = reader.read_jobs(part, &mut buf);
                done.push((c, j, p));
            }
            done
        };
        let mut results: Vec<(usize, Vec<JobRecord>, Vec<ScanProblem>)> =
            if threads <= 1 || chunks <= 1 {
                work()
            } else {
                std::thread::scope(|s| {
                    let handles: Vec<_> = (1..threads.min(chunks)).map(|_| s.spawn(work)).collect();
                    let mut all = work();
                    for h in handles {
                        all.append(&mut h.join().unwrap_or_default());
                    }
                    all
                })
            };
        results.sort_unstable_by_key(|(c, _, _)| *c);
        let mut jobs = Vec::with_capacity(wanted.len());
        for (_, mut j, mut p) in results {
            jobs.append(&mut j);
            problems.append(&mut p);
        }
        Ok(JobScan { jobs, problems })
    }
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
    // (id, has state): a job file and a state file of one id appear as two entries.
    let mut names: Vec<(JobId, bool)> = Vec::new();
    let mut problems = Vec::new();
    for entry in d.iter() {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_bytes();
        if name.first() == Some(&b'.') {
            continue;
        }
        match std::str::from_utf8(name).ok().and_then(parse_job_file_name) {
            Some((id, JobFileKind::Submission)) => names.push((id, false)),
            Some((id, JobFileKind::State)) => names.push((id, true)),
            Some((_, JobFileKind::Exits)) => {}
            None => problems.push(ScanProblem {
                path: dir.join(std::ffi::OsStr::from_bytes(name)),
                reason: "not a gridspool job file".to_string(),
            }),
        }
    }
    // Sorted by id, the state file after the job file: keep the last entry of each id.
    names.sort_unstable();
    let mut wanted: Vec<(JobId, bool)> = Vec::with_capacity(names.len() / 2 + 1);
    for (id, has_state) in names {
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
    fn read_file(&self, name: &str, buf: &mut ReadBuf) -> std::io::Result<()> {
        use nix::fcntl::{OFlag, openat};
        use nix::sys::stat::Mode;
        let fd = openat(
            self.dir,
            name,
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(std::io::Error::from)?;
        buf.read_from(&mut File::from(fd))
    }

    fn read_jobs(
        &self,
        part: &[(JobId, bool)],
        buf: &mut ReadBuf,
    ) -> (Vec<JobRecord>, Vec<ScanProblem>) {
        let mut jobs = Vec::with_capacity(part.len());
        let mut problems = Vec::new();
        let mut name = String::with_capacity(32);
        for &(id, has_state) in part {
            let listing =
                self.depth == ScanDepth::Listing && self.full_for.binary_search(&id).is_err();
            name.clear();
            let _ = write!(name, "{id}.{}", if has_state { "state" } else { "job" });
            let result = match self.read_file(&name, buf) {
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
                Ok(job) if job.id == id => jobs.push(job),
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
        (jobs, problems)
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

    /// Reads `f` to its end.
    fn read_from(&mut self, f: &mut File) -> std::io::Result<()> {
        self.len = 0;
        loop {
            if self.len == self.bytes.len() {
                self.bytes.resize(self.bytes.len() * 2, 0);
            }
            match f.read(&mut self.bytes[self.len..]) {
                Ok(0) => return Ok(()),
                Ok(n) => self.len += n,
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
    let text = utf8(bytes, "job state")?;
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
        ErrorInfo, Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, PriorityInfo,
        Submitter, TaskIdRange, TaskStates,
    };
    use serde::Deserialize;

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
            let Ok(i) = jobs.binary_search_by_key(&action.job(), |j| j.id) else {
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
}
