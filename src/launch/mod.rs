//! Launching tasks on execution hosts (directly, or over OpenSSH) and the shepherd that runs
//! them as their owner and reports how they ended.
//!
//! # Shape
//!
//! - [`LaunchSpec`] is everything one task needs on its execution host, built by the scheduler
//!   from the job record and the placement ([`LaunchSpec::build`]); it travels as JSON.
//! - [`Launcher`] is what `sched_d` holds: `start`, `kill`, `reattach`, `reconfigure`; it
//!   reports [`LaunchEvent`]s on a channel.
//! - The shepherd (`gridspool-shepherd`, [`shepherd`]) runs on the execution host. `run` (or
//!   `start-server`, for many tasks) reads a spec on stdin, creates the task's directory in
//!   the host's execution spool, detaches a *supervisor* (its own session, SIGHUP blocked, a
//!   child subreaper) and answers with the job's pid. The supervisor forks the job's process, which drops to the owner's
//!   credentials and `exec`s the job; it enforces limits and waits. A supervisor forked by
//!   `start-server --results` then passes the result back through the server's session and
//!   waits for its acknowledgement (the server removes the task directory); any other
//!   supervisor, or one whose server has gone, writes `result.json` durably instead, which
//!   `watch` (or the local watcher) streams to the launcher, removing each task directory
//!   once it is acknowledged; `kill` and `query` act on one task directory.
//! - A result is acknowledged ([`Launcher::acknowledge`]) by the scheduler once its accounting
//!   record and exits line are durable, not when the launcher passes it on: a `sched_d` that
//!   dies in between finds the result again on the host.
//!
//! Because a task's state lives only in its directory on the execution host, `sched_d` may
//! crash or restart at any time: running jobs carry on, and a new launcher collects their
//! results (`reattach`).
//!
//! # Local and ssh hosts
//!
//! Every host has one *start server* (`gridspool-shepherd start-server`, a fork server): one
//! process, `exec`ed once, that reads a spec per line and forks each task's supervisor
//! without an `exec`, then answers with the job's pid. For a local host it is a child of
//! `sched_d`, started at the first task, restarted at the next task after it died, reached
//! only through its stdin and stdout pipes; it exits when its stdin ends (`sched_d` stopped
//! or killed) and the supervisors it forked carry on. If it cannot be started, the launcher
//! does what `gridspool-shepherd run` does in its own process, one `exec` of `supervise`
//! per task, and reaps those supervisors ([`LauncherOptions::local_start_server`] turns the
//! server off). The shepherd binary is `$GRIDSPOOL_SHEPHERD`, else `gridspool-shepherd` next to
//! the running executable (install it beside `sched_d`); see [`LauncherOptions`]. For an ssh
//! host the start server's session (`start-server --session`) is the host's one connection:
//! one `ssh` process of its own (`ControlMaster=no`: nothing detached), opened when the
//! launcher starts (at most [`LauncherOptions::connects_at_once`] hosts at once) and again
//! whenever it ends. It carries the starts and their replies, every result (those of its own
//! supervisors, and those it finds left in the execution spool by supervisors of an earlier
//! server or master), the heartbeat that `liveness` hears, the acknowledgements, and kill,
//! suspension, query and load-probe requests. The shepherd's path there is the same as here
//! unless [`LauncherOptions::remote_shepherd`] says otherwise. A host whose shepherd is older
//! (its start server greets with less than `START_SERVER_SESSION_VERSION`) gets the older
//! ways: a master connection, a `watch` session over it for the results left in files and
//! the heartbeat, and short sessions for kills and queries (`max_sessions - 2` of them, the
//! watcher and the start server holding one each; with `max_sessions` below 3, a session per
//! task running `gridspool-shepherd run`). `qrsh -inherit`'s pe tasks get an ssh connection
//! each (`SshTarget::separate_command`).
//!
//! An ssh host whose session cannot be established yields
//! `LaunchEvent::Failed { host_unreachable: true }`; requeueing and backoff are the
//! scheduler's.
//!
//! # Exit status and `failed`, as SGE 8.1.9 records them
//!
//! | what happened | `exit_status` | `failed` |
//! |---|---|---|
//! | the job exited with `n` | `n` | 0 |
//! | a signal `s` ended it | 128 + `s` | 0 |
//! | `qdel` (kill) | 137 | 100 (`assumedly after job`) |
//! | `h_rt` reached (SIGKILL) | 137 | 37 (`qmaster enforced h_rt…`) |
//! | it died of the `s_rt` SIGUSR1 | 138 | 100 |
//! | `-b y` command not found (through the shell) | 127 | 0 |
//! | `-shell n` command, `-S` shell or queue shell not found | 0 | 27 |
//! | working directory missing | 0 | 28 |
//! | an output/input file cannot be opened | 0 | 26 |
//! | the shepherd could not prepare the job (user unknown, TMPDIR) | 0 | 1 |
//!
//! `error` carries SGE's reason text for 26/27/28/1 (`can't open output file "…": No such
//! file or directory`); the scheduler puts such jobs into `Eqw`.
//!
//! # Known divergences from SGE 8.1.9
//!
//! - Paths in the environment (`JOB_SCRIPT`, `SGE_JOB_SPOOL_DIR`, `SGE_BINARY_PATH`,
//!   `SGE_ROOT`) are gridspool's (see [`env`](job_environment)); the script lives in the task
//!   directory, not in a shared `job_scripts/`.
//! - `-j y`: SGE opens the file twice without `O_APPEND`, so stderr can overwrite stdout's
//!   first bytes; gridspool writes both through one descriptor, in order.
//! - `io` is the bytes the job's processes read and wrote (`rchar + wchar` of the children the
//!   supervisor reaped, as SGE counts on Linux), in GB; `iow` is 0, as SGE reports it on Linux;
//!   `maxvmem` and `mem` are sampled from `/proc`.
//!
//! # Where things live on an execution host
//!
//! The execution spool of host `h` is `$SGE_ROOT/$SGE_CELL/execd/h` (SGE:
//! `/var/spool/gridengine/execd/h`); on an ssh host that path is used on the remote side (a
//! shared `$SGE_ROOT` as in classic SGE installs, or a local directory the shepherd creates).
//! Each task has `active_jobs/<job>.<task>/` with `shepherd.pid`, `job_script` (script
//! jobs), `pe_hostfile` (parallel jobs) and finally, unless the result went back through
//! the start server, `result.json`; a task started by `run`
//! (whose supervisor is an `exec` of `supervise`, which reads the spec there) also
//! `spec.json`. The start server's forked supervisors have the spec in memory.

mod cgroup;
mod env;
mod error;
mod launcher;
mod limits;
mod liveness;
mod paths;
mod pe_task;
mod probe;
pub mod protocol;
mod relay;
pub mod shepherd;
mod spawn;
mod spec;
mod ssh;
mod ssh_builtin;
mod suspend;
mod taskdir;
pub mod usage;
mod wake;

pub use cgroup::{describe as describe_cgroups, stable_hash};
pub use env::job_environment;
pub use error::LaunchError;
pub use launcher::{Launcher, LauncherOptions, MAX_HOST_RETRY, Reattach};
pub use limits::{Limits, RLimit, parse_memory, parse_time};
pub use liveness::HostLiveness;
pub use paths::{OutputPaths, expand_pseudo_variables, resolve_output_paths};
pub use probe::{HostProbe, LOAD_REPORT_INTERVAL};
pub use protocol::LaunchEvent;
pub use relay::pump;
pub use spawn::{limit_malloc_arenas, lower_own_priority, trim_heap};
pub use spec::{JobCommand, LOGIN_SHELLS, LaunchSpec, SHEPHERD_BINARY, SPEC_VERSION};
pub use taskdir::{TaskDir, exec_spool_dir};
