//! What is written into `jobs/`: a job published by `qsub`, the state records `sched_d`
//! writes, and the removal of a job's files.

use super::format::{encode_state, listing_entry};
use super::malformed;
use crate::file::durable;
use crate::model::{JobId, JobRecord, JobSubmission};
use crate::spool::{CLIENT_FILE_MODE, ListingEntry, Spool, SpoolError};

impl Spool {
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
}
