//! The shepherd (`gridspool-shepherd`): runs on the execution host, as root (then it runs any
//! user's job with that user's groups, gid and uid) or as an ordinary user (then only that
//! user's jobs).
//!
//! Modes (first argument):
//!
//! - `run`: reads a [`LaunchSpec`] on stdin, creates the task directory, starts a detached
//!   `supervise` process and prints one [`RunReply`] line (the job's pid, or why nothing ran).
//! - `supervise <taskdir>` (internal): its own session, SIGHUP and the other signals blocked
//!   (taken with `sigwait`), a child subreaper so that every descendant of the job stays its
//!   descendant; starts the job, enforces `h_rt`/`s_rt`, samples memory, carries out kills,
//!   waits, and writes `result.json` durably. The job's first process is a fork of the
//!   supervisor ([`spawn`]) that starts a new session, drops to the owner (`setgroups` with
//!   the owner's groups, `setgid`, `setuid`), sets rlimits and umask, changes into the working
//!   directory, opens stdin/stdout/stderr as the owner and `exec`s the job, with only
//!   async-signal-safe calls on data prepared before the fork. Failures before the job runs
//!   come back over a close-on-exec pipe with SGE's failure code (26 output file, 27
//!   shell/binary, 28 working directory). (Until 2026-11 this was a second `exec` of the
//!   shepherd binary, `gridspool-shepherd exec`, which cost about as much CPU as a trivial job.)
//! - `start-server`: `run` for many tasks over one session: prints [`StartServerHello`], then
//!   reads one [`LaunchSpec`] per line on stdin and answers each with a [`StartReply`] line
//!   (in the order the tasks started, not necessarily the order asked); exits on EOF once
//!   every start is answered (and takes the loss of the process that started it as EOF, and
//!   ends when its execution spool was removed while nothing of its is in flight). It is a *fork server*: one single-threaded process that forks
//!   each task's supervisor without an `exec` (the child runs what `supervise` runs, see
//!   [`spawn`] for why that is sound), waits for the supervisors' announcements in one
//!   `poll` loop and reaps them (SIGCHLD on a signalfd, `waitpid(WNOHANG)`); the supervisors
//!   detach as they would after an `exec` and outlive it. A launcher keeps one such session
//!   per host: for an ssh host beside the `watch` session, so that starting a task costs no
//!   ssh session, login shell or `exec` of its own; for a local host as a child of
//!   `sched_d`, reached only through its stdin and stdout pipes. (Until 2026-11 it started
//!   each supervisor as an `exec` of `supervise`, on a thread per start; the `exec` of this
//!   35 MB binary, its relocations, page faults and glibc's start-up cost more CPU than the
//!   rest of the supervisor.) With `--results` (greeting 2) the session also carries the
//!   results: the supervisors share one pipe to the server (each result one line, written
//!   in one `write` of at most `PIPE_BUF` bytes), the server prints each as a
//!   [`ServerResult`] line, and `ack <job>.<task>` on its stdin (`sched_d` has made the
//!   accounting record and exits line durable) makes it remove the task directory and
//!   signal the supervisor (SIGUSR2), which exits. A supervisor whose server ends first
//!   (its parent-death signal, SIGHUP) writes `result.json` as without a server; so does
//!   one whose result does not fit in one atomic write. (Until 2026-11 every result went
//!   through `result.json`: an inode, an `fdatasync` and a directory sync per task, and a
//!   watcher's rescan.)
//!   A server that greets with `held_starts` also takes held starts ([`HELD_START`]):
//!   `hold <spec>` prepares a task up to its job's fork while `sched_d` makes the dispatch
//!   durable, `go <job>.<task>` commits and starts it, `drop <job>.<task>` lets it go.
//!   With `--session` (greeting 3, for ssh hosts) it is also the host's only connection to
//!   `sched_d`: it reports the results left in its execution spool (as `watch` does, every
//!   `--poll` ms), says `alive` every `--heartbeat` ms, and answers `req` lines (kill,
//!   suspend/resume, query, probe: [`SessionRequest`]); see [`START_SERVER_SESSION_VERSION`].
//! - `watch <exec_spool> [interval_ms [heartbeat_ms]]` (what an older `sched_d` runs, and
//!   what `sched_d` runs where the start server predates the session): prints a [`WatchMessage`] line for every
//!   finished task and removes its directory when `ack <job>.<task>` comes back on stdin; exits
//!   on EOF. With `heartbeat_ms`, an `alive` line whenever nothing else was printed for that
//!   long: what tells `sched_d` that the host is there (`launch::liveness`).
//! - `kill [--notify] <exec_spool> <job> <task>`: asks a task's supervisor to kill the job
//!   (SIGTERM), or with `--notify` to send SIGUSR2 first and kill after the queue's notify time
//!   (SIGUSR1 to the supervisor).
//! - `query <exec_spool>`: one [`TaskState`] line per task directory.
//! - `suspend|resume <exec_spool> <job> <task> <seq>`: stops or continues the job's process
//!   tree (`qmod -s`/`-us`, see [`super::suspend`]).
//!
//! Killing takes the whole process tree: the job's process group, and every process
//! descended from the supervisor (found by a `/proc` scan; as a child subreaper the supervisor
//! inherits orphans, so processes that changed their process group or session or
//! double-forked are still found). Cgroups are not used (they need a delegated hierarchy that
//! unprivileged installs do not have).
//!
//! The parts, each in its own file: the modes' protocol types and `main` here;
//! [`start_server`] (the fork server); [`task_start`] (`run`: a supervisor started by an
//! `exec`); [`supervisor`] (one task's supervisor: signals, limits, usage, the result);
//! [`job_start`] (the job's process set up as its owner, prolog and epilog); [`procs`]
//! (process bookkeeping from `/proc`); [`exec_spool`] (`watch`, `query`, `kill`).

use super::LaunchError;
use super::spec::{JobCommand, LaunchSpec};
use crate::model::TaskResult;
use crate::model::{JobId, TaskId};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod exec_spool;
mod job_start;
mod procs;
mod start_server;
mod supervisor;
mod task_start;
mod tmpdir;

use exec_spool::finished_result;
pub use exec_spool::{acknowledge, collect_finished, query, request_kill, task_dirs};
use exec_spool::{kill_mode, query_stdio, watch_stdio};
pub use procs::supervisor_alive;
pub(super) use procs::{descendants, live_supervisor, proc_ppid_and_state, supervisor_signals};
pub use start_server::{ServerResult, displace_start_server};
use start_server::{SessionTiming, record_start_server, start_server_mode};
pub(super) use supervisor::Supervisor;
use supervisor::supervise_mode;
pub(super) use task_start::prepare_task_dir;
use task_start::run_mode;
pub use task_start::start_reply;

/// SGE's `failed` codes (`execution_states.h`, qacct's texts).
pub mod failed {
    /// `assumedly before job`: the shepherd could not prepare the job.
    pub const BEFORE_JOB: u32 = 1;
    /// `before prolog`: the prolog could not be started.
    pub const BEFORE_PROLOG: u32 = 7;
    /// `in prolog`: it failed; the queue goes to error state and the job is requeued.
    pub const PROLOG_FAILED: u32 = 8;
    /// `before epilog`: the epilog could not be started.
    pub const BEFORE_EPILOG: u32 = 14;
    /// `in epilog`: it failed; the queue goes to error state.
    pub const EPILOG_FAILED: u32 = 15;
    /// `rescheduling`: a prolog or epilog exited 99, the job is to run again.
    pub const AGAIN: u32 = 25;
    /// `application error`: a prolog or epilog exited 100, the job goes to error state.
    pub const APPERROR: u32 = 30;
    /// `opening input/output file`.
    pub const OPEN_OUTPUT: u32 = 26;
    /// `searching requested shell` (also a `-b y -shell n` command that does not exist).
    pub const NO_SHELL: u32 = 27;
    /// `changing into working directory`.
    pub const NO_CWD: u32 = 28;
    /// `qmaster enforced h_rt, h_cpu, or h_vmem limit`: what SGE 8.1.9 records for h_rt.
    pub const LIMIT_ENFORCED: u32 = 37;
    /// `assumedly after job`: killed by qdel (or after an s_rt warning).
    pub const AFTER_JOB: u32 = 100;

    /// Whether a failure is the queue's (a prolog or epilog that failed or could not start):
    /// SGE puts the queue instance in error state (`GFSTATE_QUEUE`).
    pub fn queue_fault(failed: u32) -> bool {
        matches!(
            failed,
            BEFORE_PROLOG | PROLOG_FAILED | BEFORE_EPILOG | EPILOG_FAILED
        )
    }

    /// Whether the task is pending again after such a result: its prolog failed, or a
    /// prolog or epilog asked for a rerun (exit 99).
    pub fn requeued(failed: u32) -> bool {
        matches!(failed, BEFORE_PROLOG | PROLOG_FAILED | AGAIN)
    }

    /// Whether a failure to start is the job's own fault, which sends the job to error state
    /// (`reaper_execd.c`'s `GFSTATE_JOB`): its output file or working directory, and a shell
    /// it named — `-S`, the command of `-b y -shell no`, or any shell under `unix_behavior`.
    /// A missing queue shell is the queue's fault (SGE sets the queue in error instead).
    pub fn caused_by_job(failed: u32, spec: &super::LaunchSpec) -> bool {
        match failed {
            OPEN_OUTPUT | NO_CWD | APPERROR => true,
            NO_SHELL => {
                spec.interpreter.is_some()
                    || matches!(spec.command, super::JobCommand::Binary { shell: false, .. })
                    || spec.shell_start_mode == "unix_behavior"
            }
            _ => false,
        }
    }
}

/// The answer of `run`, one JSON line on stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reply")]
pub enum RunReply {
    /// The job process exists (its setup may still fail; the result then says so).
    Started { pid: u32 },
    /// Nothing was started. `host_fault`: the host could not run any job (its execution
    /// spool is not writable, the shepherd cannot spawn), as opposed to this job being
    /// refused (an unknown owner, a uid mismatch).
    Failed {
        error: String,
        #[serde(default)]
        host_fault: bool,
    },
}

/// The first line of `start-server`: the protocol it speaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartServerHello {
    pub start_server: u32,
    /// How this host confines tasks (`launch::cgroup::describe`), when asked with
    /// `--cgroups <parent>|off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// It takes held starts ([`HELD_START`]): a launcher that sees this may prepare a task
    /// before its dispatch is durable and start it with [`GO`] once it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_starts: bool,
}

/// `hold <LaunchSpec>` on a start server's input: everything up to the job's start is done
/// (the task's directory under a hidden name, its supervisor forked, `TMPDIR`, cgroup,
/// environment, the owner's groups), and the supervisor waits. `go <job>.<task>` renames the
/// directory into place and wakes the supervisor, which starts the job; that rename, made
/// by the server, is the commit: a directory at its name has started or will. `drop
/// <job>.<task>`, the server's end, or its input's, wake it without the rename: it removes
/// what it made and exits, without a result or a reply, and the task was never on the host.
/// Why: `sched_d` makes a dispatch durable (an `fdatasync` and a directory sync) before a
/// task may start; a held start does the host's half of the work meanwhile.
pub const HELD_START: &str = "hold ";
/// See [`HELD_START`].
pub const GO: &str = "go ";
/// See [`HELD_START`].
pub const DROP: &str = "drop ";

/// The version of the `start-server` protocol.
pub const START_SERVER_VERSION: u32 = 1;

/// The version of `start-server --results`: as [`START_SERVER_VERSION`], and each task's
/// result comes back as a [`ServerResult`] line; `ack <job>.<task>` on stdin removes its
/// directory. (An older shepherd ignores `--results` and greets with 1: its results come
/// through `watch` as before.)
pub const START_SERVER_RESULTS_VERSION: u32 = 2;

/// The version of `start-server --session`: as [`START_SERVER_RESULTS_VERSION`], and the
/// session is the host's only connection to `sched_d`. The server also reports the results
/// it finds in the execution spool (left there by supervisors of an earlier server, or of an
/// earlier master's), as [`ServerResult`] lines acknowledged like the others; prints
/// [`WatchMessage::Alive`] every `--heartbeat` ms; and answers `req <SessionRequest>` lines
/// (kill, suspend, query, probe) with a [`SessionAnswer`] line. (An older shepherd greets
/// with 2 or 1: `sched_d` then keeps its `watch` session and short sessions for that host.)
pub const START_SERVER_SESSION_VERSION: u32 = 3;

/// A request over a `--session` start server (the input line `req <json>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRequest {
    /// Repeated in the answer, which may come after other lines.
    pub request: u64,
    #[serde(flatten)]
    pub op: SessionOp,
}

/// What a [`SessionRequest`] asks: what the `kill`, `suspend`/`resume` and `query` modes do,
/// and the host's load (`probe`: the text `launch::probe` parses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum SessionOp {
    Kill {
        job: JobId,
        task: TaskId,
        notify: bool,
    },
    Suspend {
        job: JobId,
        task: TaskId,
        stop: bool,
        seq: u64,
    },
    Query,
    Probe,
}

/// The answer to a [`SessionRequest`]: `error` when it failed, else `states` (query) or
/// `text` (probe).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionAnswer {
    pub answer: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<TaskState>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `start-server`'s answer for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartReply {
    pub job: JobId,
    pub task: TaskId,
    pub reply: RunReply,
}

/// What `watch` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "msg")]
pub enum WatchMessage {
    Ended {
        result: Box<TaskResult>,
    },
    /// The heartbeat: the host and its shepherd are there.
    Alive,
}

/// What `query` prints for each task directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    pub job: JobId,
    pub task: TaskId,
    /// The supervisor is alive.
    pub running: bool,
    /// `result.json` exists.
    pub finished: bool,
}

/// A failure before the job ran, reported by the job's process before its `exec`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SetupFailure {
    failed: u32,
    error: String,
}

/// Entry point of the shepherd binary.
pub fn main(args: Vec<String>) -> ExitCode {
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    let rest = &args[args.len().min(2)..];
    let outcome = match mode {
        "run" => run_mode(),
        "start-server" => {
            // Before anything that takes time: the process that started it.
            let parent = nix::unistd::getppid();
            if let (Some(master), Some(spool)) =
                (flag_value(rest, "--master"), flag_value(rest, "--spool"))
            {
                record_start_server(Path::new(spool), master);
            }
            let confinement = flag_value(rest, "--cgroups").map(|parent| {
                let policy = (parent != "off").then(|| crate::config::CgroupPolicy {
                    parent: parent.to_string(),
                    cpu_quota: false,
                });
                super::cgroup::describe(policy.as_ref())
            });
            let millis = |flag: &str| {
                flag_value(rest, flag)
                    .and_then(|v| v.parse().ok())
                    .map(Duration::from_millis)
            };
            let session = rest
                .iter()
                .any(|a| a == "--session")
                .then(|| SessionTiming {
                    heartbeat: millis("--heartbeat").unwrap_or(Duration::from_secs(5)),
                    poll: millis("--poll").unwrap_or(Duration::from_millis(500)),
                });
            start_server_mode(
                rest.iter().any(|a| a == "--results") || session.is_some(),
                session,
                confinement,
                flag_value(rest, "--spool").map(PathBuf::from),
                parent,
            )
        }
        "supervise" => match rest.first() {
            Some(dir) => supervise_mode(Path::new(dir)),
            None => Err(usage()),
        },
        "watch" => match rest.first() {
            Some(dir) => {
                let millis = |i: usize| rest.get(i).and_then(|s| s.parse().ok());
                let interval = millis(1).map_or(Duration::from_millis(500), Duration::from_millis);
                let heartbeat = millis(2).map(Duration::from_millis);
                if let Some(master) = flag_value(rest, "--master") {
                    displace_start_server(Path::new(dir), master);
                }
                watch_stdio(Path::new(dir), interval, heartbeat)
            }
            None => Err(usage()),
        },
        "kill" => kill_mode(rest),
        "suspend" => super::suspend::suspend_mode(true, rest),
        "relay" => super::relay::relay_mode(rest),
        "pe-task" => super::pe_task::pe_task_mode(),
        "resume" => super::suspend::suspend_mode(false, rest),
        "query" => match rest.first() {
            Some(dir) => {
                // What a master that takes over asks first: after the old master's start
                // server is gone, a task it was handed either has its directory or never
                // will.
                if let Some(master) = flag_value(rest, "--master") {
                    displace_start_server(Path::new(dir), master);
                }
                query_stdio(Path::new(dir))
            }
            None => Err(usage()),
        },
        _ => Err(usage()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridspool-shepherd: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> LaunchError {
    LaunchError::Protocol(
        "usage: gridspool-shepherd run | start-server | watch <exec_spool> [ms] | kill [--notify] <exec_spool> <job> <task> | suspend|resume <exec_spool> <job> <task> <seq> | query <exec_spool>"
            .to_string(),
    )
}

/// The word after `flag` among `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn print_line<T: Serialize>(value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.flush()
}
