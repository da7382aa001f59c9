//! Launching tasks on execution hosts (directly, or over OpenSSH) and the shepherd that runs
//! them as their owner and reports how they ended.
//!
//! # Shape
//!
//! - [`LaunchSpec`] is everything one task needs on its execution host, built by the scheduler
//!   from the job record and the placement ([`LaunchSpec::build`]); it travels as JSON.
//! - [`Launcher`] is what `sched_d` holds: `start`, `kill`, `reattach`, `reconfigure`; it
//!   reports [`LaunchEvent`]s on a channel.
//! - The shepherd (`gridspool-shepherd`, [`shepherd`]) runs on the execution host. `run` reads a
//!   spec on stdin, creates the task's directory in the host's execution spool, detaches a
//!   *supervisor* (its own session, SIGHUP blocked, a child subreaper) and answers with the
//!   job's pid. The supervisor runs the job through an `exec` helper that drops to the owner's
//!   credentials, enforces limits, waits, and writes `result.json` durably. `watch` streams the
//!   results of a host's tasks to the launcher and removes each task directory once the launcher
//!   acknowledges it; `kill` and `query` act on one task directory.
//!
//! Because a task's state lives only in its directory on the execution host, `sched_d` may
//! crash or restart at any time: running jobs carry on, and a new launcher collects their
//! results (`reattach`).
//!
//! # Where things live on an execution host
//!
//! The execution spool of host `h` is `$SGE_ROOT/$SGE_CELL/execd/h` (SGE:
//! `/var/spool/gridengine/execd/h`); on an ssh host that path is used on the remote side (a
//! shared `$SGE_ROOT` as in classic SGE installs, or a local directory the shepherd creates).
//! Each task has `active_jobs/<job>.<task>/` with `spec.json`, `job_script`, `pe_hostfile`,
//! `shepherd.pid`, `started` and finally `result.json`.

mod env;
mod error;
mod launcher;
mod limits;
mod paths;
pub mod protocol;
pub mod shepherd;
mod spec;
mod ssh;
mod taskdir;

pub use env::job_environment;
pub use error::LaunchError;
pub use launcher::{Launcher, LauncherOptions};
pub use limits::{Limits, RLimit, parse_memory, parse_time};
pub use paths::{OutputPaths, expand_pseudo_variables, resolve_output_paths};
pub use protocol::{LaunchEvent, Placement, Rusage, TaskResult};
pub use spec::{JobCommand, LaunchSpec, SHEPHERD_BINARY, SPEC_VERSION};
pub use taskdir::{TaskDir, exec_spool_dir};
