//! Accounting behind the daemon's [`AccountingHook`]: every finished task becomes one line of
//! SGE's accounting file (`crate::acct`) and is charged to the share-tree usage that the
//! priority policy reads.

use super::runner::AccountingHook;
use crate::config::ClusterConfig;
use crate::launch::{Placement, TaskResult};
use crate::model::{JobRecord, RunningTask};
use gridspool_policy::sharetree::UsageStore;
use std::path::PathBuf;
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
}

impl Accounting {
    pub fn new(path: PathBuf, config: ClusterConfig, usage: SharedUsage) -> Self {
        Accounting {
            path,
            config,
            usage,
            pending: Vec::new(),
        }
    }
}

impl AccountingHook for Accounting {
    fn record(
        &mut self,
        job: &JobRecord,
        task: &RunningTask,
        result: &TaskResult,
    ) -> Result<(), String> {
        // Parallel tasks carry their grant per host; the PE is the one the job requested.
        let pe = if task.granted.is_empty() {
            None
        } else {
            job.spec.pe.as_ref().map(|p| p.name.clone())
        };
        let granted = if task.granted.is_empty() {
            vec![(task.host.clone(), task.queue.clone(), task.slots)]
        } else {
            task.granted.clone()
        };
        let placement = Placement {
            host: task.host.clone(),
            queue: task.queue.clone(),
            slots: task.slots,
            granted,
            pe,
        };
        let record =
            crate::acct::AccountingRecord::from_task(job, &placement, result, &self.config);
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
        let outcome = crate::acct::append(&self.path, &self.pending).map_err(|e| e.to_string());
        // Not retried: a record that could not be written is reported, as before batching.
        self.pending.clear();
        outcome
    }

    fn reconfigure(&mut self, config: &ClusterConfig) {
        self.config = config.clone();
    }
}
