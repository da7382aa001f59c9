//! `sched_d`: the daemon that watches the spool, keeps the state in memory, computes
//! priorities and dispatches tasks.
//!
//! - [`state`], [`pass`], [`fit`], [`cluster`], [`priority`], [`value`]: the pure core — jobs,
//!   categories, resources, one scheduling pass producing [`pass::Start`] decisions and
//!   reservations. No files, no clock: tested with table cases.
//! - [`qube`], [`fbsng`], [`armada`]: the `cluster`, `fbsng` and `armada` policies in the pass
//!   (host-by-host dispatch in cluster order and preemption; dynamic queue priorities over the
//!   real fit; slices or DRF per queue), over the pure maths of `gridspool_policy`. A new
//!   policy is one such module plus its configuration and one arm in
//!   `SchedState::dispatch_all`. docs/policies.md, "Composing policies in config.yaml".
//! - [`runner`]: the dispatch seam ([`runner::TaskRunner`]) and a runner that starts real local
//!   processes ([`runner::ProcessRunner`]).
//! - [`daemon`]: the process — lock and pid file, spool watching, requests, passes,
//!   launch events, exits, accounting hook, signals, recovery.
//!
//! # Wiring the other parts
//!
//! - Launcher: implement [`runner::TaskRunner`] (`start`, `kill`, `reattach`) over
//!   `crate::launch`, reporting `LaunchEvent`s on the `Sender` that [`daemon::Daemon::new`]
//!   hands to its `make_runner` closure; replace [`ProcessRunner`] in `cli::sched_d::run`.
//! - Accounting: implement [`runner::AccountingHook`] over `crate::acct` and pass it to
//!   [`daemon::Daemon::new`] instead of [`NoAccounting`]; it is called once per finished
//!   task, before the exits line is appended.
//! - Policy crate: implement [`priority::PriorityPolicy`] with `gridspool_policy::sge` and
//!   `sharetree` and install it with [`daemon::Daemon::set_policy`] (or
//!   [`SchedState::with_policy`]); [`priority::order_key`] maps `PolicyOrder` to the order.
//!
//! # Cost of a pass
//!
//! A full pass ([`SchedState::schedule`]: periodic, `-a` wake-ups, after any change to the
//! set of jobs or a record) is O(jobs log jobs); an event pass
//! ([`SchedState::schedule_event`]: a task started or ended) reuses the last order and costs
//! O(candidates) with no lookup for jobs whose category already failed. `benches/sched_pass.rs`
//! prints the figures.

pub mod armada;
pub mod cluster;
pub mod daemon;
pub mod fbsng;
pub mod fit;
pub mod pass;
pub mod priority;
pub mod qube;
pub mod runner;
pub mod state;
pub mod value;

pub use pass::{PassResult, Reservation, Start};
pub use priority::{PriorityInput, PriorityPolicy, TemporarySgeFormula};
pub use runner::{AccountingHook, NoAccounting, ProcessRunner, RunnerError, TaskRunner};
pub use state::SchedState;

#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod tests;
