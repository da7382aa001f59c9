//! Accounting: SGE 8.1.9 accounting records, the accounting file, share-tree usage from it,
//! and what `qacct` prints.
//!
//! `sched_d` turns every [`crate::model::TaskResult`] into an
//! [`AccountingRecord`] ([`AccountingRecord::from_task`]) and [`append`]s it to
//! `Spool::accounting_path()` as soon as the result arrives; `qacct`, cron jobs and the
//! share-tree start-up fold ([`load_usage`], or [`load_usage_from`] a baseline imported from
//! SGE, [`import_history`]) read the same file.

pub mod baseline;
pub mod file;
pub mod history;
pub mod load;
pub mod record;
pub mod report;
pub mod sge_usage;
pub mod usage;

pub use baseline::{BaselineStart, UsageBaseline, load_usage_from, load_usage_observing};
pub use file::{AcctError, Entry, HEADER, LOCK_PATIENCE, Reader, append, append_checked};
pub use history::{HistoryImport, import_history};
pub use record::{AccountingRecord, RecordError, category};
pub use sge_usage::{SpoolUsage, UsageDumpError, read_share_mon, read_usage_dumps};
pub use usage::{FoldReport, charge, decay_config, load as load_usage, usage_of};

use crate::config::ClusterConfig;
use crate::model::JobRecord;
use crate::model::{Placement, TaskResult};
use std::path::Path;

/// What `sched_d` does when a task ends: builds the task's record, appends it (synced) to the
/// accounting file at `path`, and charges it to the share-tree usage. Returns the record.
pub fn account_task(
    path: &Path,
    job: &JobRecord,
    placement: &Placement,
    result: &TaskResult,
    config: &ClusterConfig,
    usage: &mut gridspool_policy::sharetree::UsageStore,
) -> Result<AccountingRecord, AcctError> {
    let record = AccountingRecord::from_task(job, placement, result, config);
    append(path, std::slice::from_ref(&record))?;
    charge(usage, &record, &decay_config(config));
    Ok(record)
}
