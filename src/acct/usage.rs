//! Share-tree usage from accounting records.
//!
//! The usage itself — how it decays, how a project's jobs charge the project and the user's
//! record within it — is Grid Engine's, implemented once in the policy crate
//! ([`UsageStore`]). This module only feeds it: every accounting record charges its owner
//! (and project) with its `cpu`, `mem` and `io` at its end time, both when `sched_d` starts
//! (one streaming pass over the accounting file) and as each task ends.

use super::AcctError;
use super::file::{Entry, Reader};
use super::record::AccountingRecord;
use crate::config::ClusterConfig;
use gridspool_policy::sharetree::{DecayConfig, Usage, UsageStore};
use std::path::Path;

/// What the start-up fold read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FoldReport {
    pub records: u64,
    /// Physical line numbers of lines that are not records (reported, skipped).
    pub invalid_lines: Vec<u64>,
    /// The usage baseline the fold started from, if the cell has one
    /// ([`super::baseline::load_usage_from`]).
    pub baseline: Option<super::baseline::BaselineStart>,
    /// Where the fold stopped: the bytes of the file up to the end of its last whole line
    /// (what a later fold that goes on from here starts after).
    pub read_to: u64,
}

/// The usage an accounting record charges: SGE's `cpu`, `mem` and `io` fields.
pub fn usage_of(r: &AccountingRecord) -> Usage {
    Usage {
        cpu: r.cpu,
        mem: r.mem,
        io: r.io,
    }
}

/// `NONE` (and an empty field) is no project.
fn project_of(r: &AccountingRecord) -> Option<&str> {
    Some(r.project.as_str()).filter(|p| !p.is_empty() && *p != "NONE")
}

/// `sched_conf(5)` `halftime` (hours; 0 means usage never decays) as the share tree takes it.
pub fn decay_config(config: &ClusterConfig) -> DecayConfig {
    DecayConfig {
        halftime_hours: config.scheduler.halftime.max(0.0),
        ..DecayConfig::default()
    }
}

/// Charges one record to the store.
pub fn charge(store: &mut UsageStore, r: &AccountingRecord, decay: &DecayConfig) {
    store.add_usage(&r.owner, project_of(r), usage_of(r), r.end_time, decay);
}

/// Rebuilds share-tree usage from the accounting file in one streaming pass. A missing file
/// is an empty history; lines that are not records are reported and skipped.
pub fn load(path: &Path, decay: &DecayConfig) -> Result<(UsageStore, FoldReport), AcctError> {
    load_observing(path, decay, &mut |_| {})
}

/// [`load`], showing every record to `observe` as well, in the file's order (the forecast
/// learns run times from the same read).
pub fn load_observing(
    path: &Path,
    decay: &DecayConfig,
    observe: &mut dyn FnMut(&super::AccountingRecord),
) -> Result<(UsageStore, FoldReport), AcctError> {
    let mut store = UsageStore::new();
    let mut report = FoldReport::default();
    let mut reader = match Reader::open(path) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((store, report)),
        Err(e) => return Err(e),
    };
    while let Some(entry) = reader.next_entry() {
        match entry? {
            Entry::Record(r) => {
                charge(&mut store, &r, decay);
                observe(&r);
                report.records += 1;
            }
            Entry::Invalid { line, .. } => report.invalid_lines.push(line),
        }
    }
    report.read_to = reader.consumed();
    Ok((store, report))
}
