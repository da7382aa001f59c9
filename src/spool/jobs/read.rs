//! Reading one job (its state file, else its job file) and its script, without listing the
//! others.

use super::format::{listing_entry, parse_state};
use super::malformed;
use super::scan::apply_pending;
use crate::model::{JobId, JobRecord, JobSubmission};
use crate::spool::{ListingEntry, Spool, SpoolError};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

impl Spool {
    /// The script stored with a job (what follows the header line).
    pub fn read_script(&self, id: JobId) -> Result<Vec<u8>, SpoolError> {
        let path = self.job_file(id);
        let mut bytes =
            crate::file::open::read(&path).map_err(|e| SpoolError::open("read", &path, e))?;
        let start = bytes.iter().position(|b| *b == b'\n').map(|i| i + 1);
        let start = start.ok_or_else(|| malformed(&path, "job file has no header line"))?;
        Ok(bytes.split_off(start))
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
