//! gridspool: a Grid Engine-compatible batch scheduler without a qmaster.
//!
//! Clients (`qsub`, `qstat`, `qdel`, `qalter`, `qhold`, `qrls`) write jobs and requests into a
//! spool directory; one daemon, `sched_d`, watches it, schedules and launches. Modules, one per
//! concern. Which may use which is written once, in the README's "Layout of the code" (ground
//! first; `tests/layers.rs` checks every import against it):
//!
//! - [`units`]: Grid Engine's number multipliers and memory units.
//! - [`time`]: the clock, and times as Grid Engine prints and reads them.
//! - [`file`]: safe opening and durable writing of files.
//! - [`identity`]: who is calling, from the kernel.
//! - [`privilege`]: the setgid bracket of multi-user installations.
//! - [`config`]: the cluster configuration (hosts, queues, complexes, PEs, scheduler policy).
//! - [`model`]: jobs, task ranges, holds, requests, a task's placement and result — plain data.
//! - [`spool`]: the on-disk layout and the only code that knows paths.
//! - [`acct`]: accounting records and `qacct`.
//! - [`launch`]: starting tasks locally or over ssh; the shepherd protocol.
//! - [`compat`]: what SGE users observe: options, formats, messages, exit codes.
//! - [`mail`]: job mail (`-m`, `-M`) through the configured mailer.
//! - [`sched`]: the daemon: spool watching, in-memory state, scheduling passes, dispatch.
//! - [`sim`]: `gridspool-sim`, a workload replayed through the real scheduler on a virtual clock.
//! - [`cli`]: the q-commands, one module each; `src/bin/` only calls into them.
//!
//! The policy mathematics lives in the separate, pure crate `gridspool-policy` (`policy/`).

pub mod acct;
pub mod cli;
pub mod compat;
pub mod config;
pub mod file;
pub mod identity;
pub mod launch;
pub mod mail;
pub mod model;
pub mod privilege;
pub mod sched;
pub mod sim;
pub mod spool;
pub mod time;
pub mod units;
