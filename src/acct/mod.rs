//! Accounting: SGE 8.1.9 accounting records, the accounting file, share-tree usage from it,
//! and what `qacct` prints.
//!
//! `sched_d` turns every [`crate::launch::protocol::TaskResult`] into an
//! [`AccountingRecord`] ([`AccountingRecord::from_task`]) and [`append`]s it to
//! `Spool::accounting_path()` as soon as the result arrives; `qacct`, cron jobs and the
//! share-tree start-up fold ([`UsageTable::from_file`]) read the same file.

pub mod file;
pub mod load;
pub mod record;
pub mod report;
pub mod usage;

pub use file::{AcctError, Entry, HEADER, Reader, append};
pub use record::{AccountingRecord, RecordError, category};
pub use usage::{DecayedUsage, FoldReport, Usage, UsageTable, decay_factor};
