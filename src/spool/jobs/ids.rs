//! The job-id sequence: taking the next id, making it durable, and the highest id the cell
//! still carries, from which an emptied or garbled counter is rebuilt.

use super::malformed;
use crate::model::JobId;
use crate::spool::{Spool, SpoolError, sequence};
use std::io::{BufRead, BufReader};

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
        std::fs::read_dir(&dir).map_err(|e| SpoolError::io("readdir", &dir, e))?;
        // SGE's accounting(5): the job number is the sixth field (the fields before it are
        // written with their colons replaced).
        Ok(self
            .highest_id_in_dir(&dir)
            .max(self.highest_in_accounting(5)?))
    }

    /// The highest number any file of `dir` is named by before its first dot (`<id>.job`,
    /// `<id>.state`, `<id>.exits` and whatever else a writer left behind under an id); 0
    /// when it cannot be read.
    pub(crate) fn highest_id_in_dir(&self, dir: &std::path::Path) -> u64 {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                name.to_string_lossy()
                    .split('.')
                    .next()
                    .and_then(|s| s.parse::<u64>().ok())
            })
            .max()
            .unwrap_or(0)
    }

    /// The highest number in field `field` (from 0) of the records of `common/accounting`
    /// and of the last rotated `accounting.1` (logrotate's `delaycompress` leaves it plain;
    /// the highest numbers are in the newest records).
    pub(crate) fn highest_in_accounting(&self, field: usize) -> Result<u64, SpoolError> {
        let mut highest = 0u64;
        let rotated = self.common_dir().join("accounting.1");
        for path in [self.accounting_path(), rotated] {
            let file = match crate::file::open::open(&path) {
                Ok(f) => f,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(SpoolError::open("open", &path, e)),
            };
            for line in BufReader::new(file).split(b'\n') {
                let line = line.map_err(|e| SpoolError::io("read", &path, e))?;
                if line.first() == Some(&b'#') {
                    continue;
                }
                let number = line
                    .split(|&b| b == b':')
                    .nth(field)
                    .and_then(|f| std::str::from_utf8(f).ok())
                    .and_then(|f| f.parse::<u64>().ok());
                if let Some(n) = number {
                    highest = highest.max(n);
                }
            }
        }
        Ok(highest)
    }
}
