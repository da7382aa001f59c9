//! Job files, state files and the view of all jobs that clients show.

use super::{CLIENT_FILE_MODE, Spool, SpoolError, durable, sequence};
use crate::model::{JobId, JobRecord, JobSubmission, Request};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read};
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
        let (requests, mut problems) = self.scan_requests()?;
        let mut scan = self.scan_job_files()?;
        scan.problems.append(&mut problems);
        apply_pending(&mut scan.jobs, &requests);
        Ok(scan)
    }

    fn scan_job_files(&self) -> Result<JobScan, SpoolError> {
        let dir = self.jobs_dir();
        let mut by_id: HashMap<JobId, (bool, bool)> = HashMap::new();
        let mut problems = Vec::new();
        let entries = fs::read_dir(&dir).map_err(|e| SpoolError::io("readdir", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SpoolError::io("readdir", &dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            match parse_job_file_name(&name) {
                Some((id, JobFileKind::Submission)) => by_id.entry(id).or_default().0 = true,
                Some((id, JobFileKind::State)) => by_id.entry(id).or_default().1 = true,
                Some((_, JobFileKind::Exits)) => {}
                None => problems.push(ScanProblem {
                    path: entry.path(),
                    reason: "not a gridspool job file".to_string(),
                }),
            }
        }
        let mut wanted: Vec<(JobId, bool)> = by_id
            .into_iter()
            .map(|(id, (_, has_state))| (id, has_state))
            .collect();
        wanted.sort_unstable_by_key(|(id, _)| *id);
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8);
        let chunk = wanted.len().div_ceil(threads).max(256);
        let results: Vec<(Vec<JobRecord>, Vec<ScanProblem>)> = std::thread::scope(|s| {
            let handles: Vec<_> = wanted
                .chunks(chunk)
                .map(|part| s.spawn(move || self.read_jobs(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let mut jobs = Vec::with_capacity(wanted.len());
        for (mut j, mut p) in results {
            jobs.append(&mut j);
            problems.append(&mut p);
        }
        Ok(JobScan { jobs, problems })
    }

    fn read_jobs(&self, part: &[(JobId, bool)]) -> (Vec<JobRecord>, Vec<ScanProblem>) {
        let mut jobs = Vec::with_capacity(part.len());
        let mut problems = Vec::new();
        let mut buf = Vec::with_capacity(4096);
        for &(id, has_state) in part {
            let result = if has_state {
                read_state_into(&self.state_file(id), &mut buf)
            } else {
                read_submission(&self.job_file(id)).map(JobRecord::from_submission)
            };
            match result {
                Ok(job) if job.id == id => jobs.push(job),
                Ok(job) => problems.push(ScanProblem {
                    path: self.job_file(id),
                    reason: format!("file of job {id} holds job {}", job.id),
                }),
                // Removed between listing and reading: the job just ended.
                Err(SpoolError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(SpoolError::Malformed { path, reason }) => {
                    problems.push(ScanProblem { path, reason })
                }
                Err(e) => problems.push(ScanProblem {
                    path: self.job_file(id),
                    reason: e.to_string(),
                }),
            }
        }
        (jobs, problems)
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
