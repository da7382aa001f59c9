//! Accounting behind the daemon's [`AccountingHook`]: every finished task becomes one line of
//! SGE's accounting file (`crate::acct`) and is charged to the share-tree usage that the
//! priority policy reads.

use super::runner::AccountingHook;
use crate::config::ClusterConfig;
use crate::model::{JobRecord, RunningTask};
use crate::model::{Placement, TaskResult};
use gridspool_policy::sharetree::UsageStore;
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Share-tree usage, shared by the accounting hook (which charges it) and the priority policy
/// (which reads it on every pass).
pub type SharedUsage = Arc<Mutex<UsageStore>>;

/// Writes accounting records and charges usage. Records wait in memory until
/// [`AccountingHook::commit`], which appends all of them with one write and one `fdatasync`.
pub struct Accounting {
    path: PathBuf,
    config: ClusterConfig,
    usage: SharedUsage,
    pending: Vec<crate::acct::AccountingRecord>,
    /// Runs (job, task, start time) whose records end the file at start-up: a daemon that
    /// died after its accounting commit and before the exits lines that say so is told those
    /// ends again, and must not record them twice.
    recorded_before: HashSet<RunKey>,
    /// This daemon's mastership: checked under the accounting file's lock, before each
    /// append, so that a master replaced while it waited there (or was frozen) exits
    /// instead of writing what its successor records.
    mastership: Option<Arc<crate::sched::mastership::Mastership>>,
}

/// What tells one run of a task from every other: job ids are never reused, and a requeued
/// task starts again at another time.
type RunKey = (u32, u32, i64);

/// How much of the accounting file's end is read at start-up for [`Accounting`]'s
/// `recorded_before`: the ends one wake-up commits at most, many times over (a record is
/// about 300 bytes).
const TAIL_BYTES: u64 = 1 << 20;

impl Accounting {
    pub fn new(path: PathBuf, config: ClusterConfig, usage: SharedUsage) -> Self {
        let recorded_before = runs_at_the_end(&path);
        Accounting {
            path,
            config,
            usage,
            pending: Vec::new(),
            recorded_before,
            mastership: None,
        }
    }

    /// Fences the appends by `mastership` (see the field).
    pub fn fenced_by(mut self, mastership: Arc<crate::sched::mastership::Mastership>) -> Self {
        self.mastership = Some(mastership);
        self
    }
}

/// The runs recorded in the last [`TAIL_BYTES`] of the accounting file (none when it cannot
/// be read: then nothing is skipped, as before).
fn runs_at_the_end(path: &Path) -> HashSet<RunKey> {
    let mut tail = Vec::new();
    let read = crate::file::open::open(path)
        .map_err(std::io::Error::from)
        .and_then(|mut f| {
            let len = f.metadata()?.len();
            let from = len.saturating_sub(TAIL_BYTES);
            f.seek(SeekFrom::Start(from))?;
            f.read_to_end(&mut tail)?;
            Ok(from)
        });
    let Ok(from) = read else {
        return HashSet::new();
    };
    // Started inside a line: its rest is not a record.
    let start = if from == 0 {
        0
    } else {
        tail.iter()
            .position(|&b| b == b'\n')
            .map_or(tail.len(), |i| i + 1)
    };
    let mut reader = crate::acct::Reader::new(&tail[start..], path);
    let mut runs = HashSet::new();
    while let Some(entry) = reader.next_entry() {
        if let Ok(crate::acct::Entry::Record(r)) = entry {
            runs.insert((r.job_number, r.task_number, r.start_time));
        }
    }
    runs
}

/// Where a task of `job` ran, as its accounting record tells it: parallel tasks carry their
/// grant per host, and the PE is the one the job requested.
pub fn placement_of(job: &JobRecord, task: &RunningTask) -> Placement {
    let pe = if task.granted.is_empty() {
        None
    } else {
        job.spec.pe.as_ref().map(|p| p.name.clone())
    };
    Placement {
        host: task.host.clone(),
        queue: task.queue.clone(),
        slots: task.slots,
        granted: task.grants(),
        pe,
    }
}

impl AccountingHook for Accounting {
    fn record(
        &mut self,
        job: &JobRecord,
        task: &RunningTask,
        result: &TaskResult,
    ) -> Result<(), String> {
        let placement = placement_of(job, task);
        let mut record =
            crate::acct::AccountingRecord::from_task(job, &placement, result, &self.config);
        if result.failed == crate::launch::shepherd::failed::PROLOG_FAILED {
            record = record.never_started();
        }
        if !self.recorded_before.is_empty()
            && self.recorded_before.remove(&(
                record.job_number,
                record.task_number,
                record.start_time,
            ))
        {
            // Its record (and so its usage, loaded from the file) is already there.
            tracing::info!(
                job = record.job_number,
                task = record.task_number,
                "already in the accounting file: not recorded again"
            );
            return Ok(());
        }
        let mut usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        crate::acct::charge(
            &mut usage,
            &record,
            &crate::acct::decay_config(&self.config),
        );
        self.pending.push(record);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // A failed append leaves the file as it was (`acct::append`); the records stay here,
        // in order, and the daemon, which holds their results unacknowledged meanwhile,
        // commits again until they are written, once (issue 12).
        let mastership = self.mastership.as_deref();
        crate::acct::append_checked(
            &self.path,
            &self.pending,
            crate::acct::LOCK_PATIENCE,
            || {
                if let Some(m) = mastership
                    && let Err(replaced) = m.check()
                {
                    crate::sched::mastership::exit_replaced(&replaced);
                }
            },
        )
        .map_err(|e| e.to_string())?;
        self.pending.clear();
        Ok(())
    }

    fn reconfigure(&mut self, config: &ClusterConfig) {
        self.config = config.clone();
    }
}
