//! `sched_d`: the daemon that watches the spool, keeps the state in memory, computes
//! priorities and dispatches tasks.
//!
//! - [`state`], [`pass`], [`fit`], [`cluster`], [`priority`], [`value`]: the pure core — jobs,
//!   categories, resources, one scheduling pass producing [`pass::Start`] decisions and
//!   reservations. No files, no clock: tested with table cases. `rows` keeps, in job-id
//!   order, the per-job fields a full pass streams over and the last pass's priorities,
//!   reasons and policy terms.
//! - [`qube`], [`fbsng`], [`armada`]: the `cluster`, `fbsng` and `armada` policies in the pass
//!   (host-by-host dispatch in cluster order and preemption; dynamic queue priorities over the
//!   real fit; slices or DRF per queue), over the pure maths of `gridspool_policy`. A new
//!   policy is one such module plus its configuration and one arm in
//!   `SchedState::dispatch_all`. docs/policies.md, "Composing policies in config.yaml".
//! - [`runner`]: the dispatch seam ([`runner::TaskRunner`], [`runner::AccountingHook`]).
//! - [`launcher`], [`accounting`], [`sge_policy`]: what `sched_d` plugs into the seams — the
//!   real launcher (`crate::launch`: shepherds, locally or over ssh), SGE accounting
//!   (`crate::acct`) feeding share-tree usage, and Grid Engine's priority from the policy
//!   crate (`gridspool_policy::sge`, `sharetree`).
//! - [`daemon`]: the process — lock and pid file, spool watching, requests, passes,
//!   launch events, exits, accounting, signals, recovery.
//!
//! # Cost of a pass
//!
//! A full pass ([`SchedState::schedule`]: periodic, `-a` wake-ups, after any change to the
//! set of jobs or a record) is O(jobs log jobs); an event pass
//! ([`SchedState::schedule_event`]: a task started or ended) reuses the last order and costs
//! O(candidates) with no lookup for jobs whose category already failed. `benches/sched_pass.rs`
//! prints the figures.

pub mod access;
pub mod accounting;
pub mod ar;
pub mod armada;
pub mod calendars;
pub mod cluster;
pub mod cold;
pub mod daemon;
pub mod fbsng;
pub mod fit;
pub mod forecast;
pub mod http_server;
pub mod launcher;
pub mod mastership;
pub mod metrics;
pub mod pass;
pub mod policy_files;
pub mod priority;
pub mod qube;
pub mod quota;
pub(crate) mod rows;
pub mod runner;
pub mod sge_policy;
pub mod state;
pub mod status_estimates;
pub mod status_page;
mod unknown_hosts;
pub mod value;

pub use accounting::{Accounting, SharedUsage};
pub use launcher::LaunchRunner;
pub use pass::{PassResult, Reservation, Start};
pub use priority::{PriorityInput, PriorityPolicy};
pub use runner::{AccountingHook, RunnerError, TaskRunner};
pub use sge_policy::SgePriority;
pub use state::SchedState;

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod quota_tests;
#[cfg(test)]
mod tests;
