//! `sched_d`: the daemon that watches the spool, keeps the state in memory, computes
//! priorities and dispatches tasks.
//!
//! - [`state`], [`pass`], [`fit`], [`cluster`], [`priority`], [`value`]: the pure core — jobs,
//!   categories, resources, one scheduling pass producing [`pass::Start`] decisions and
//!   reservations. No files, no clock: tested with table cases.
//! - [`runner`]: the dispatch seam ([`runner::TaskRunner`]) and a runner that starts real local
//!   processes ([`runner::ProcessRunner`]).
//! - [`daemon`]: the process — lock and pid file, spool watching, requests, passes,
//!   launch events, exits, accounting hook, signals, recovery.

pub mod cluster;
pub mod daemon;
pub mod fit;
pub mod pass;
pub mod priority;
pub mod runner;
pub mod state;
pub mod value;

pub use pass::{PassResult, Reservation, Start};
pub use priority::{PriorityInput, PriorityPolicy, TemporarySgeFormula};
pub use runner::{AccountingHook, NoAccounting, ProcessRunner, RunnerError, TaskRunner};
pub use state::SchedState;

#[cfg(test)]
mod tests;
