//! Job files, state files and the view of all jobs that clients show.
//!
//! One folder for the files of `jobs/`, split by what is done with them: the job-id
//! sequence and its rebuild (`ids`), the writes of job and state files (`write`), the
//! reading of one job (`read`) and of all of them (`scan`), the bytes of those files
//! (`format`) and the listing summary a state file starts with (`listing`). What they
//! share (the scan's result and the error for a malformed file) is here.

mod format;
mod ids;
mod lines;
mod listing;
mod read;
mod scan;
#[cfg(test)]
mod tests;
mod write;

pub use format::{encode_state, listing_entry};
pub use lines::JobLines;
pub use listing::line::{JobIds, JobLine, PendingGroups, RunningLine, RunningTasks, TaskRanges};

use super::SpoolError;
use crate::model::{JobId, JobRecord};
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
