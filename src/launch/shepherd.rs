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
//! - `watch <exec_spool> [interval_ms [heartbeat_ms]]`: prints a [`WatchMessage`] line for every
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

use super::LaunchError;
use super::env::{ExecContext, job_environment, pe_hostfile};
use super::limits::RLimit;
use super::paths::{OutputPaths, PathContext, resolve_output_paths};
use super::spawn;
use super::spec::{JobCommand, LaunchSpec, SPEC_VERSION};
use super::taskdir::{TaskDir, active_jobs};
use super::usage::{self, io_bytes};
use crate::model::{JobId, TaskId, UsageReport};
use crate::model::{Rusage, TaskResult};
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, User};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::CString;
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

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
}

/// The version of the `start-server` protocol.
pub const START_SERVER_VERSION: u32 = 1;

/// The version of `start-server --results`: as [`START_SERVER_VERSION`], and each task's
/// result comes back as a [`ServerResult`] line; `ack <job>.<task>` on stdin removes its
/// directory. (An older shepherd ignores `--results` and greets with 1: its results come
/// through `watch` as before.)
pub const START_SERVER_RESULTS_VERSION: u32 = 2;

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
            start_server_mode(
                rest.iter().any(|a| a == "--results"),
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

/// The start server serving a `sched_d` in an execution spool, `PID STARTTIME MASTER`:
/// written by a start server given `--master` and `--spool`.
const START_SERVER_RECORD: &str = "start-server";

/// Ends the start server that another `sched_d` (`master` names this one) left serving
/// `exec_spool`, and waits until it is gone. A master that died closes its sessions, and its start servers end; one that
/// is frozen, or cut off, does not, and its start server would hold the results of the
/// tasks it started, waiting for acknowledgements that never come. Ended, it lets them go:
/// each supervisor writes `result.json`, which the new master's watcher collects. Run by
/// the new master's watcher and start server as they begin.
pub fn displace_start_server(exec_spool: &Path, master: &str) {
    let Ok(text) = std::fs::read_to_string(exec_spool.join(START_SERVER_RECORD)) else {
        return;
    };
    let mut words = text.split_whitespace();
    let (Some(pid), Some(start), Some(owner)) = (
        words.next().and_then(|p| p.parse::<u32>().ok()),
        words.next().and_then(|s| s.parse::<u64>().ok()),
        words.next(),
    ) else {
        return;
    };
    if owner == master || pid == std::process::id() || proc_start_time(pid) != Some(start) {
        return;
    }
    eprintln!(
        "gridspool-shepherd: ending the start server of {owner} (pid {pid}): {master} serves this host now"
    );
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    // Gone before this returns: a start it had read but not begun is then never begun.
    let deadline = Instant::now() + Duration::from_secs(5);
    while proc_start_time(pid) == Some(start) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Records this process as the start server of `master` in `exec_spool`, after ending
/// another master's ([`displace_start_server`]).
fn record_start_server(exec_spool: &Path, master: &str) {
    displace_start_server(exec_spool, master);
    let me = std::process::id();
    if std::fs::create_dir_all(exec_spool).is_err() {
        return;
    }
    if let Some(start) = proc_start_time(me) {
        let _ = crate::file::durable::write_replace(
            exec_spool,
            START_SERVER_RECORD,
            format!("{me} {start} {master}\n").as_bytes(),
            0o644,
        );
    }
}

fn print_line<T: Serialize>(value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_string(value).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.flush()
}

// ---------------------------------------------------------------------------------------
// run

fn run_mode() -> Result<(), LaunchError> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| LaunchError::io("read", "<stdin>", e))?;
    let reply = match serde_json::from_slice::<LaunchSpec>(&input) {
        Ok(spec) => {
            let exe = std::env::current_exe()
                .map_err(|e| LaunchError::io("locate", "/proc/self/exe", e))?;
            // The supervisor outlives this process, which ends now: it is reparented, and
            // whoever inherits it reaps it.
            start_reply(&spec, &exe).0
        }
        Err(e) => RunReply::Failed {
            error: format!("bad launch spec: {e}"),
            host_fault: false,
        },
    };
    print_line(&reply).map_err(|e| LaunchError::io("write", "<stdout>", e))
}

/// A task whose supervisor the start server has forked and which waits for the supervisor
/// to announce the job (a pid line on its stdout) or to end (its stdout closed, why on its
/// stderr).
struct Starting {
    spec_job: JobId,
    spec_task: TaskId,
    dir: TaskDir,
    pid: Pid,
    out: std::fs::File,
    err: std::fs::File,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    out_eof: bool,
    err_eof: bool,
    /// How the supervisor ended, once it has (and was reaped).
    status: Option<WaitStatus>,
    deadline: Instant,
}

/// How long a supervisor has to announce the job.
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(120);

/// How often an idle start server looks whether it still serves anyone
/// ([`Server::abandoned`]).
const SERVER_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// `start-server`: one process per session, single-threaded, that forks (without `exec`)
/// the supervisor of each task. See the module documentation for the protocol and
/// [`spawn::fork_supervisor`] for why the fork is sound.
///
/// One `poll` loop: spec lines (and, with `results`, `ack` lines) on stdin; SIGCHLD through
/// a signalfd (the supervisors are our children until they end, and are reaped with
/// `waitpid(WNOHANG)` as they do); each starting supervisor's stdout (the job's pid) and
/// stderr (why it ended before the job ran); the 120 s deadline of each start; with
/// `results`, the result pipe that every supervisor forked here shares. It exits once its
/// input has ended and every start has been answered; the supervisors still running then
/// are reparented and carry on (and, told by their parent-death signal, leave their
/// results in their task directories as `result.json`).
///
/// Its input may never end: the process at the other end of its session stopped (a frozen
/// `sched_d`, an ssh session whose far end hangs) and something else still holds the pipe.
/// So it also takes its session as over when the process that started it (`sched_d`, or the
/// ssh daemon's session) is gone, and it ends when it has nothing in flight and the
/// execution spool it serves (`exec_spool`, or the one its tasks' directories are in) has
/// been removed: nobody could collect a result there again.
fn start_server_mode(
    results: bool,
    confinement: Option<String>,
    exec_spool: Option<PathBuf>,
    parent: Pid,
) -> Result<(), LaunchError> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use std::os::fd::AsFd;
    let stdout_err = |e| LaunchError::io("write", "<stdout>", e);
    print_line(&StartServerHello {
        start_server: if results {
            START_SERVER_RESULTS_VERSION
        } else {
            START_SERVER_VERSION
        },
        confinement,
    })
    .map_err(stdout_err)?;
    // glibc loads the NSS modules of a database (`libnss_systemd` for `group` here) at its
    // first lookup, with `dlopen` and symbol relocation. Loaded once here, every supervisor
    // forked later inherits them, instead of loading them again for its `getgrouplist`.
    if let Ok(Some(me)) = User::from_uid(nix::unistd::geteuid())
        && let Ok(name) = CString::new(me.name)
    {
        let _ = nix::unistd::getgrouplist(&name, me.gid);
    }
    let mut sigchld = SigSet::empty();
    sigchld.add(Signal::SIGCHLD);
    sigchld
        .thread_block()
        .map_err(|e| LaunchError::Protocol(format!("sigprocmask: {e}")))?;
    let children = SignalFd::with_flags(&sigchld, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| LaunchError::io("create", "signalfd", e.into()))?;
    let mut server = Server {
        results: if results {
            Some(ResultPipe::new()?)
        } else {
            None
        },
        exec_spool,
        ..Server::default()
    };
    let stdin = std::io::stdin();
    let mut input = Vec::new();
    let mut eof = false;
    let mut buf = vec![0u8; 64 * 1024];
    while !eof || !server.starting.is_empty() {
        let now = Instant::now();
        let timeout = server
            .starting
            .iter()
            .map(|s| s.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(SERVER_CHECK_INTERVAL)
            .min(SERVER_CHECK_INTERVAL);
        // Rounded up: a deadline is not missed by a poll that returns a little early.
        let timeout = {
            let ms = timeout.as_millis().saturating_add(1).min(i32::MAX as u128) as i32;
            nix::poll::PollTimeout::try_from(ms).unwrap_or(nix::poll::PollTimeout::MAX)
        };
        let (input_ready, results_ready) = {
            use nix::poll::{PollFd, PollFlags};
            let mut fds = vec![PollFd::new(children.as_fd(), PollFlags::POLLIN)];
            let input_at = (!eof).then(|| {
                fds.push(PollFd::new(stdin.as_fd(), PollFlags::POLLIN));
                fds.len() - 1
            });
            let results_at = server.results.as_ref().map(|r| {
                fds.push(PollFd::new(r.read.as_fd(), PollFlags::POLLIN));
                fds.len() - 1
            });
            for s in &server.starting {
                if !s.out_eof {
                    fds.push(PollFd::new(s.out.as_fd(), PollFlags::POLLIN));
                }
                if !s.err_eof {
                    fds.push(PollFd::new(s.err.as_fd(), PollFlags::POLLIN));
                }
            }
            match nix::poll::poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(LaunchError::io("poll", "<start server>", e.into())),
            }
            let ready = |at: Option<usize>| {
                at.is_some_and(|i| fds[i].revents().is_some_and(|r| !r.is_empty()))
            };
            (ready(input_at), ready(results_at))
        };
        if input_ready {
            match nix::unistd::read(stdin.as_fd(), &mut buf) {
                Ok(0) => eof = true,
                Ok(n) => input.extend_from_slice(&buf[..n]),
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                Err(_) => eof = true,
            }
            while let Some(end) = input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = input.drain(..=end).collect();
                server.input_line(&line);
            }
            if eof && !input.is_empty() {
                // A last line without its newline.
                let line = std::mem::take(&mut input);
                server.input_line(&line);
            }
        }
        while let Ok(Some(_)) = children.read_signal() {}
        server.reap_supervisors();
        if results_ready {
            server.forward_results(&mut buf);
        }
        for s in &mut server.starting {
            s.read_pipes(&mut buf);
        }
        let now = Instant::now();
        let mut i = 0;
        while i < server.starting.len() {
            match server.starting[i].answer(now) {
                Some(answer) => {
                    server.starting.swap_remove(i);
                    reply(answer);
                }
                None => i += 1,
            }
        }
        if !eof && nix::unistd::getppid() != parent {
            eprintln!(
                "gridspool-shepherd: start server {}: the process that started it is gone: no more starts",
                std::process::id()
            );
            eof = true;
        }
        if let Some(gone) = server.abandoned() {
            eprintln!(
                "gridspool-shepherd: start server {}: {} is gone and no task of its is in flight: exiting",
                std::process::id(),
                gone.display()
            );
            break;
        }
    }
    Ok(())
}

/// Replies go out as long as someone reads them; a launcher that went away does not stop
/// the supervisors being started from being reaped.
fn reply(r: StartReply) {
    let _ = print_line(&r);
}

/// The state of a start server.
#[derive(Default)]
struct Server {
    /// Supervisors forked and not yet answered for.
    starting: Vec<Starting>,
    /// With results over the session: the pipe the supervisors write their results to.
    results: Option<ResultPipe>,
    /// The supervisors forked here that may still report a result, by task.
    tasks: HashMap<(JobId, TaskId), ServedTask>,
    /// The execution spool it serves (`--spool`, else learnt from its first task).
    exec_spool: Option<PathBuf>,
}

/// A task whose supervisor this server forked.
struct ServedTask {
    /// The supervisor, until it is reaped (a pid is signalled only before then, so never
    /// one the kernel has handed to another process).
    pid: Option<Pid>,
    dir: TaskDir,
    /// Its result went out on stdout: an `ack` may come.
    forwarded: bool,
}

/// A close-on-exec pipe whose read end does not block: the single-threaded start server
/// polls many of them.
fn nonblocking_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), LaunchError> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| LaunchError::io("create", "pipe", e.into()))?;
    nix::fcntl::fcntl(
        &r,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .map_err(|e| LaunchError::io("fcntl", "pipe", e.into()))?;
    Ok((r, w))
}

/// The pipe a start server's supervisors write their results to: one line each, in one
/// `write` of at most `PIPE_BUF` bytes, which the kernel never interleaves with another.
struct ResultPipe {
    read: std::fs::File,
    write: std::os::fd::OwnedFd,
    buf: Vec<u8>,
}

impl ResultPipe {
    fn new() -> Result<Self, LaunchError> {
        let (r, w) = nonblocking_pipe()?;
        Ok(ResultPipe {
            read: std::fs::File::from(r),
            write: w,
            buf: Vec::new(),
        })
    }
}

/// A result line on a start server's stdout (with `--results`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerResult {
    pub result: TaskResult,
}

impl Server {
    /// The execution spool this server serves, when it has been removed while nothing
    /// started here is in flight (no start unanswered, no supervisor of ours alive): the
    /// cell was taken down, and no result could be delivered there any more.
    fn abandoned(&self) -> Option<&Path> {
        let spool = self.exec_spool.as_deref()?;
        let idle = self.starting.is_empty() && self.tasks.values().all(|t| t.pid.is_none());
        (idle && !spool.exists()).then_some(spool)
    }

    /// One line of input: `ack <job>.<task>`, or a spec.
    fn input_line(&mut self, line: &[u8]) {
        if let Some(name) = line.strip_prefix(b"ack ") {
            if let Some((job, task)) = std::str::from_utf8(name)
                .ok()
                .and_then(|n| TaskDir::parse_name(n.trim()))
            {
                self.acknowledge(job, task);
            }
            return;
        }
        if let Some(answer) = self.start_line(line) {
            reply(answer);
        }
    }

    /// `sched_d` has recorded the task's result durably: its directory goes (before its
    /// supervisor, which waits for this, is told to exit: a task directory never outlives
    /// its supervisor without a result, which a watcher would report as a lost task), and
    /// its supervisor exits. A task whose result did not come through here is not ours to
    /// acknowledge (its directory holds `result.json`; the launcher removes it).
    fn acknowledge(&mut self, job: JobId, task: TaskId) {
        let Some(t) = self.tasks.get(&(job, task)) else {
            return;
        };
        if !t.forwarded {
            return;
        }
        if let Some(t) = self.tasks.remove(&(job, task)) {
            match std::fs::remove_dir_all(&t.dir.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => eprintln!(
                    "gridspool-shepherd: cannot remove {}: {e}",
                    t.dir.path.display()
                ),
            }
            if let Some(pid) = t.pid {
                let _ = kill(pid, RESULT_ACK_SIGNAL);
            }
        }
    }

    /// Passes on the results the supervisors have written to the result pipe.
    fn forward_results(&mut self, buf: &mut [u8]) {
        let Some(pipe) = self.results.as_mut() else {
            return;
        };
        loop {
            match pipe.read.read(buf) {
                Ok(0) => break,
                Ok(n) => pipe.buf.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        while let Some(end) = pipe.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pipe.buf.drain(..=end).collect();
            let Ok(result) = serde_json::from_slice::<TaskResult>(&line) else {
                eprintln!(
                    "gridspool-shepherd: bad result line {:?}",
                    String::from_utf8_lossy(&line)
                );
                continue;
            };
            if let Some(t) = self.tasks.get_mut(&(result.job, result.task)) {
                t.forwarded = true;
            }
            let _ = print_line(&ServerResult { result });
        }
    }

    /// Reaps every supervisor that has ended; records the status of those still starting.
    fn reap_supervisors(&mut self) {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(status) => {
                    if !matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..)) {
                        continue;
                    }
                    if let Some(s) = self
                        .starting
                        .iter_mut()
                        .find(|s| Some(s.pid) == status.pid())
                    {
                        s.status = Some(status);
                    }
                    // A supervisor that ended without passing its result here left it in
                    // its directory (or died, which a watcher reports): nothing to ack.
                    self.tasks.retain(|_, t| {
                        if t.pid.is_some() && t.pid == status.pid() {
                            t.pid = None;
                            t.forwarded
                        } else {
                            true
                        }
                    });
                }
            }
        }
    }

    /// One spec line: forks its supervisor (then the answer comes when the supervisor
    /// announces the job) or answers at once why nothing was started.
    fn start_line(&mut self, line: &[u8]) -> Option<StartReply> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let spec: LaunchSpec = match serde_json::from_slice(line) {
            Ok(spec) => spec,
            Err(e) => {
                // Answered if the line says which task it is; else the launcher times out.
                let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
                let id = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
                let (Some(job), Some(task)) = (id("job"), id("task")) else {
                    return None;
                };
                return Some(StartReply {
                    job: JobId(job as u32),
                    task: task as TaskId,
                    reply: RunReply::Failed {
                        error: format!("bad launch spec: {e}"),
                        host_fault: false,
                    },
                });
            }
        };
        let (job, task) = (spec.job, spec.task);
        let results = self.results.as_ref().map(|r| &r.write);
        // The forked supervisor has the spec already: no `spec.json`.
        let forked = prepare_task_dir(&spec, false).and_then(|dir| {
            let outcome = fork_supervisor(spec, &dir, results);
            if outcome.is_err() {
                let _ = std::fs::remove_dir_all(&dir.path);
            }
            outcome
        });
        match forked {
            Ok(s) => {
                // `<exec_spool>/active_jobs/<job>.<task>`.
                if self.exec_spool.is_none() {
                    self.exec_spool = s
                        .dir
                        .path
                        .parent()
                        .and_then(Path::parent)
                        .map(Path::to_path_buf);
                }
                if self.results.is_some() {
                    self.tasks.insert(
                        (job, task),
                        ServedTask {
                            pid: Some(s.pid),
                            dir: s.dir.clone(),
                            forwarded: false,
                        },
                    );
                }
                self.starting.push(s);
                None
            }
            Err(e) => Some(StartReply {
                job,
                task,
                reply: failed_reply(e),
            }),
        }
    }
}

/// The signal a start server sends a supervisor whose result `sched_d` has recorded.
const RESULT_ACK_SIGNAL: Signal = Signal::SIGUSR2;
/// The signal a forked supervisor gets when its start server ends (`PR_SET_PDEATHSIG`).
const SERVER_GONE_SIGNAL: Signal = Signal::SIGHUP;

/// How a forked supervisor reports its result to the start server that forked it.
struct ResultChannel {
    /// The write end of the server's result pipe.
    pipe: std::os::fd::OwnedFd,
    /// The server's pid: while it is our parent, the server is alive.
    server: Pid,
}

/// Forks the supervisor of a prepared task (the start server's counterpart of
/// [`supervise_task`]: the same supervisor, without the `exec` of this binary).
fn fork_supervisor(
    spec: LaunchSpec,
    dir: &TaskDir,
    results: Option<&std::os::fd::OwnedFd>,
) -> Result<Starting, LaunchError> {
    let (out_r, out_w) = nonblocking_pipe()?;
    let (err_r, err_w) = nonblocking_pipe()?;
    let (job, task) = (spec.job, spec.task);
    let child_dir = dir.clone();
    let server = nix::unistd::getpid();
    let pid = spawn::fork_supervisor(&out_w, &err_w, results, move |pipe| {
        let channel = pipe.map(|pipe| ResultChannel { pipe, server });
        match supervise(child_dir, Some(spec), channel) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("gridspool-shepherd: {e}");
                1
            }
        }
    })
    .map_err(|e| LaunchError::io("fork", "the supervisor", e.into()))?;
    Ok(Starting {
        spec_job: job,
        spec_task: task,
        dir: dir.clone(),
        pid,
        out: std::fs::File::from(out_r),
        err: std::fs::File::from(err_r),
        out_buf: Vec::new(),
        err_buf: Vec::new(),
        out_eof: false,
        err_eof: false,
        status: None,
        deadline: Instant::now() + ANNOUNCE_TIMEOUT,
    })
}

impl Starting {
    /// Reads what the supervisor has written so far (the pipes do not block).
    fn read_pipes(&mut self, buf: &mut [u8]) {
        for (file, data, eof) in [
            (&mut self.out, &mut self.out_buf, &mut self.out_eof),
            (&mut self.err, &mut self.err_buf, &mut self.err_eof),
        ] {
            while !*eof {
                match file.read(buf) {
                    Ok(0) => *eof = true,
                    Ok(n) => data.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => *eof = true,
                }
            }
        }
    }

    fn task_name(&self) -> String {
        format!("{}.{}", self.spec_job, self.spec_task)
    }

    /// The answer for this task once there is one (what [`supervise_task`] returns, in the
    /// same cases): the announced pid; 0 when it ended with a result; else why it failed.
    fn answer(&mut self, now: Instant) -> Option<StartReply> {
        let reply = |reply| {
            Some(StartReply {
                job: self.spec_job,
                task: self.spec_task,
                reply,
            })
        };
        let line_end = self.out_buf.iter().position(|&b| b == b'\n');
        if line_end.is_some() || self.out_eof {
            let line = &self.out_buf[..line_end.unwrap_or(self.out_buf.len())];
            if let Some(pid) = std::str::from_utf8(line)
                .ok()
                .and_then(|l| l.trim().parse::<u32>().ok())
            {
                return reply(RunReply::Started { pid });
            }
        }
        if self.out_eof
            && self.err_eof
            && let Some(status) = self.status
        {
            if self.dir.result().exists() {
                return reply(RunReply::Started { pid: 0 });
            }
            let _ = std::fs::remove_dir_all(&self.dir.path);
            let log = String::from_utf8_lossy(&self.err_buf);
            return reply(failed_reply(LaunchError::Protocol(format!(
                "the supervisor of task {} exited ({}) before starting the job: {}",
                self.task_name(),
                describe_status(status),
                log.trim()
            ))));
        }
        if now >= self.deadline {
            // Reaped later, with the other supervisors.
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = std::fs::remove_dir_all(&self.dir.path);
            return reply(failed_reply(LaunchError::Protocol(format!(
                "the supervisor of task {} did not start the job within 120 s",
                self.task_name()
            ))));
        }
        None
    }
}

/// A wait status as `std::process::ExitStatus` prints it (`exit status: 1`, `signal: 9
/// (SIGKILL)`).
fn describe_status(status: WaitStatus) -> String {
    match status {
        WaitStatus::Exited(_, code) => format!("exit status: {code}"),
        WaitStatus::Signaled(_, sig, _) => format!("signal: {} ({})", sig as i32, sig.as_str()),
        other => format!("{other:?}"),
    }
}

/// The reply for a task that could not be started.
fn failed_reply(e: LaunchError) -> RunReply {
    RunReply::Failed {
        host_fault: matches!(e, LaunchError::Io { .. } | LaunchError::Spool(_)),
        error: e.to_string(),
    }
}

/// What `run` does, in the calling process: creates the task directory and starts the
/// detached supervisor (`shepherd supervise`, from the binary `shepherd`). Returns the reply
/// `run` would print and the supervisor, which the caller must reap (`try_wait`) once it has
/// exited, or leave to be reparented by ending. A local launcher calls this directly instead
/// of executing `gridspool-shepherd run`: one process and one `exec` fewer per task.
pub fn start_reply(spec: &LaunchSpec, shepherd: &Path) -> (RunReply, Option<std::process::Child>) {
    match start_task(spec, shepherd) {
        Ok((pid, child)) => (RunReply::Started { pid }, child),
        Err(e) => (failed_reply(e), None),
    }
}

/// Checks that this shepherd may run the job: root runs anyone's job; anyone else only their
/// own, and the owner's uid on this host must be the one the job was submitted with.
fn check_identity(spec: &LaunchSpec) -> Result<User, LaunchError> {
    let owner = &spec.submitter.owner;
    let user = User::from_name(owner).ok().flatten().ok_or_else(|| {
        LaunchError::Refused(format!("can't get password entry for user \"{owner}\""))
    })?;
    if user.uid.as_raw() != spec.submitter.uid {
        return Err(LaunchError::Refused(format!(
            "user \"{owner}\" has uid {} on this host, but the job was submitted with uid {}",
            user.uid, spec.submitter.uid
        )));
    }
    let me = nix::unistd::geteuid();
    if !me.is_root() && me != user.uid {
        return Err(LaunchError::Refused(format!(
            "the shepherd runs as uid {me}, not as root, and can only run that user's jobs, not jobs of user \"{owner}\""
        )));
    }
    Ok(user)
}

fn mkdir_p(path: &Path, mode: u32) -> Result<(), LaunchError> {
    std::fs::create_dir_all(path).map_err(|e| LaunchError::io("mkdir", path, e))?;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    Ok(())
}

/// Creates the task directory and the detached supervisor; returns the job's pid and the
/// supervisor process (when it is still to be reaped).
fn start_task(
    spec: &LaunchSpec,
    shepherd: &Path,
) -> Result<(u32, Option<std::process::Child>), LaunchError> {
    let dir = prepare_task_dir(spec, true)?;
    let outcome = supervise_task(spec, &dir, shepherd);
    if outcome.is_err() {
        // Nothing runs: leave no directory that a watcher would report as a lost task
        // after the launcher has already reported the failure.
        let _ = std::fs::remove_dir_all(&dir.path);
    }
    outcome
}

/// Checks that this shepherd may run the task and creates its new directory: what comes
/// before the supervisor, however it is started. With `write_spec`, the spec goes into it as
/// `spec.json`, for a supervisor started by an `exec` (`supervise <taskdir>`), which reads it
/// there; the start server's forked supervisors have it in memory, and nothing else reads it
/// (a watcher that reports a supervisor's death takes the host from `spec.json` when there
/// is one, else the launcher names the host it watches).
pub(super) fn prepare_task_dir(
    spec: &LaunchSpec,
    write_spec: bool,
) -> Result<TaskDir, LaunchError> {
    if spec.v > SPEC_VERSION {
        return Err(LaunchError::Protocol(format!(
            "launch spec version {} is newer than this shepherd's {SPEC_VERSION}",
            spec.v
        )));
    }
    check_identity(spec)?;
    let spool = Path::new(&spec.exec_spool);
    // Made (and its mode set) only when missing: a `chmod` per start would be an attribute
    // change of `active_jobs`, which wakes its watchers for a rescan of every task.
    let active = active_jobs(spool);
    if !active.is_dir() {
        mkdir_p(&active, 0o755)?;
    }
    let dir = TaskDir {
        path: active.join(spec.task_name()),
    };
    if dir.path.exists() {
        if supervisor_alive(&dir) {
            return Err(LaunchError::Refused(format!(
                "task {} is already running on this host",
                spec.task_name()
            )));
        }
        // What is left of an earlier run that was collected or lost.
        std::fs::remove_dir_all(&dir.path).map_err(|e| LaunchError::io("remove", &dir.path, e))?;
    }
    std::fs::create_dir(&dir.path).map_err(|e| LaunchError::io("mkdir", &dir.path, e))?;
    let written = (|| {
        let _ = std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o755));
        if !write_spec {
            return Ok(());
        }
        let json = serde_json::to_vec(spec).map_err(|e| LaunchError::Protocol(e.to_string()))?;
        dir.write_unsynced("spec.json", &json, 0o600)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&dir.path);
        return Err(e);
    }
    Ok(dir)
}

/// Starts the supervisor of a prepared task (an `exec` of `gridspool-shepherd supervise`);
/// returns the job's pid once the supervisor has announced it, and the supervisor unless it
/// was reaped already.
fn supervise_task(
    spec: &LaunchSpec,
    dir: &TaskDir,
    exe: &Path,
) -> Result<(u32, Option<std::process::Child>), LaunchError> {
    use std::os::unix::process::CommandExt;
    // Its stdout and stderr are pipes to us until it announces the job (then it points both
    // at /dev/null): stdout carries the job's pid, stderr why it could not get that far.
    // argv[0] names the shepherd: `exe` may be the multicall program (`cli::multicall`).
    let mut child = Command::new(exe)
        .arg0(super::SHEPHERD_BINARY)
        .arg("supervise")
        .arg(&dir.path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LaunchError::io("spawn", exe, e))?;
    let diagnostics = child.stderr.take();
    // Wait for the supervisor to say the job exists: it prints the pid on the pipe the
    // moment the job runs (0 when it could not be started: its result says why), or closes
    // the pipe by exiting.
    let mut announced = None;
    if let Some(out) = child.stdout.take() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => announced = Some(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LaunchError::Protocol(format!(
                    "the supervisor of task {} did not start the job within 120 s",
                    spec.task_name()
                )));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {}
        }
    }
    if let Some(pid) = announced.and_then(|l| l.trim().parse::<u32>().ok()) {
        return Ok((pid, Some(child)));
    }
    // It closed its stdout without a pid, that is, it ended before saying anything: it may
    // have written a result (then the watcher reports it) or died.
    let mut log = String::new();
    if let Some(mut err) = diagnostics {
        let _ = err.read_to_string(&mut log);
    }
    let status = child
        .wait()
        .map_err(|e| LaunchError::io("wait for", exe, e))?;
    if dir.result().exists() {
        return Ok((0, None));
    }
    Err(LaunchError::Protocol(format!(
        "the supervisor of task {} exited ({status}) before starting the job: {}",
        spec.task_name(),
        log.trim()
    )))
}

/// Tells the launcher waiting on our stdout that the job exists (`0`: it could not be
/// started), then lets go of both pipes to it for good (the supervisor outlives the launcher;
/// nothing else is ever written there, and later diagnostics go to the result).
fn announce_started(pid: u32) {
    let mut out = std::io::stdout();
    let _ = out.write_all(format!("{pid}\n").as_bytes());
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}

// ---------------------------------------------------------------------------------------
// process bookkeeping from /proc

/// Field 22 of `/proc/<pid>/stat`: the start time, which tells a pid's reuse apart.
pub(super) fn proc_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    // after ")": state(3) ppid(4) … starttime(22) → index 19 from state.
    after.split_whitespace().nth(19)?.parse().ok()
}

pub(super) fn proc_ppid_and_state(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let mut it = after.split_whitespace();
    let state = it.next()?.chars().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Every process descended from `root` (not `root` itself), zombies included.
pub(super) fn descendants(root: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, _)) = proc_ppid_and_state(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

/// The I/O of every process this one has reaped: the kernel adds a reaped child's counters to
/// its parent's (`/proc/self/io`), beside the parent's own threads (`/proc/self/task/*/io`),
/// so the difference is the job's, including the children it reaped itself and the orphans
/// the supervisor reaped as subreaper. `None` without I/O accounting in the kernel.
fn reaped_children_io() -> Option<u64> {
    let whole = io_bytes("/proc/self/io")?;
    let own: u64 = std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .filter_map(|t| io_bytes(&format!("{}/io", t.path().display())))
        .sum();
    Some(whole.saturating_sub(own))
}

/// User plus system CPU of every process this one has reaped, seconds.
fn reaped_children_cpu() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        secs(u.user_time()) + secs(u.system_time())
    })
}

pub(super) fn read_pid_file(dir: &TaskDir) -> Option<(u32, u64)> {
    let text = crate::file::open::read_to_string(&dir.pid_file()).ok()?;
    let mut it = text.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// The pid of the task's supervisor, if it is still the process the pid file recorded (same
/// start time: not a later process that reused the pid).
pub(super) fn live_supervisor(dir: &TaskDir, job: JobId, task: TaskId) -> Result<u32, LaunchError> {
    match read_pid_file(dir) {
        Some((pid, start)) if proc_start_time(pid) == Some(start) => Ok(pid),
        _ => Err(LaunchError::NotRunning { job, task }),
    }
}

/// The task's supervisor is alive (its pid exists with the recorded start time).
pub fn supervisor_alive(dir: &TaskDir) -> bool {
    read_pid_file(dir).is_some_and(|(pid, start)| {
        proc_start_time(pid) == Some(start)
            && proc_ppid_and_state(pid).is_some_and(|(_, s)| s != 'Z')
    })
}

// ---------------------------------------------------------------------------------------
// supervise

/// Signals the supervisor takes synchronously with `sigwait`.
pub(super) fn supervisor_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGALRM,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGHUP,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGPIPE,
    ] {
        set.add(s);
    }
    set
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn supervise_mode(dir: &Path) -> Result<(), LaunchError> {
    let dir = TaskDir {
        path: dir.to_path_buf(),
    };
    supervise(dir, None, None)
}

/// The supervisor, in a process of its own: `supervise <taskdir>` after its `exec`, or the
/// start server's fork (which passes the spec it has already parsed, and with `--results`
/// the channel to pass the result back on).
fn supervise(
    dir: TaskDir,
    spec: Option<LaunchSpec>,
    channel: Option<ResultChannel>,
) -> Result<(), LaunchError> {
    let signals = supervisor_signals();
    signals
        .thread_block()
        .map_err(|e| LaunchError::Protocol(format!("sigprocmask: {e}")))?;
    // Told when the server ends (its session closed: `sched_d` stopped or died), by a
    // signal taken with the others; a server that ended before this is seen by the parent
    // having changed.
    let mut server_gone = match &channel {
        Some(c) => {
            nix::sys::prctl::set_pdeathsig(SERVER_GONE_SIGNAL).is_err()
                || nix::unistd::getppid() != c.server
        }
        None => true,
    };
    // Fails only when already a session leader, which is as good.
    let _ = nix::unistd::setsid();
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let me = std::process::id();
    let start = proc_start_time(me).unwrap_or(0);
    dir.write_unsynced("shepherd.pid", format!("{me} {start}\n").as_bytes(), 0o644)?;
    let spec = match spec {
        Some(spec) => spec,
        None => {
            let bytes = crate::file::open::read(&dir.spec())
                .map_err(|e| LaunchError::io("read", dir.spec(), e.into()))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| LaunchError::Protocol(format!("bad spec: {e}")))?
        }
    };
    let mut sup = Supervisor::new(spec, dir.clone(), signals);
    let result = sup.run();
    server_gone |= sup.server_gone;
    // TMPDIR goes before the result is published: once it is out, the task is over for
    // everyone watching.
    sup.cleanup();
    let json = serde_json::to_vec(&result).map_err(|e| LaunchError::Protocol(e.to_string()))?;
    if let Some(c) = channel
        && !server_gone
        && report_to_server(&c, &json, &signals)
    {
        // `sched_d` has recorded it, and the server has removed the task directory.
        return Ok(());
    }
    write_result_until_stored(&dir, &json)?;
    if let Some(active_jobs) = dir.path.parent() {
        super::wake::announce_result(active_jobs);
    }
    Ok(())
}

/// Writes `result.json`, waiting out a full disk (issue 12): the result is the one copy of
/// how the task ended, and a supervisor that gave up would leave a directory without a live
/// supervisor or a result, which is reported as ended with `failed` 100. So it retries,
/// with a backoff up to a few seconds, for as long as the storage refuses (`sched_d` does
/// not record anything meanwhile either); any other error is final.
fn write_result_until_stored(dir: &TaskDir, json: &[u8]) -> Result<(), LaunchError> {
    let mut wait = Duration::from_millis(100);
    loop {
        match dir.write("result.json", json, 0o644) {
            Err(LaunchError::Spool(e)) if e.is_storage_failure() => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// Passes the result to the start server, which sends it to `sched_d`, and waits for the
/// acknowledgement that `sched_d` gives once the accounting record and exits line are
/// durable (the server then removes the task directory and signals us). `false` when the
/// result did not get through or the server ended before the acknowledgement: then the
/// result goes into the task directory, durably, as without a server, for a watcher (of
/// this `sched_d`, or of the next one) to report. A result is reported twice at most, never
/// lost; `sched_d` records it once (the exits line tells).
fn report_to_server(channel: &ResultChannel, json: &[u8], signals: &SigSet) -> bool {
    /// `PIPE_BUF` on Linux: a write up to this size is never interleaved with another.
    const PIPE_BUF: usize = 4096;
    let mut line = Vec::with_capacity(json.len() + 1);
    line.extend_from_slice(json);
    line.push(b'\n');
    if line.len() > PIPE_BUF || json.contains(&b'\n') {
        return false;
    }
    // SIGPIPE is blocked: a server that has gone makes this EPIPE.
    match nix::unistd::write(&channel.pipe, &line) {
        Ok(n) if n == line.len() => {}
        _ => return false,
    }
    loop {
        match signals.wait() {
            Ok(s) if s == RESULT_ACK_SIGNAL => return true,
            Ok(s) if s == SERVER_GONE_SIGNAL => return false,
            // A kill that came too late, a stray child: the job is over already.
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillReason {
    Qdel,
    HardRuntime,
}

pub(super) struct Supervisor {
    spec: LaunchSpec,
    dir: TaskDir,
    signals: SigSet,
    tmpdir: Option<PathBuf>,
    start_wall: f64,
    started: Instant,
    job_pid: Option<Pid>,
    status: Option<WaitStatus>,
    kill_reason: Option<KillReason>,
    kill_at: Option<Instant>,
    s_rt_sent: bool,
    maxvmem: u64,
    mem_integral: f64,
    last_sample: Instant,
    /// The start server's parent-death signal came while the job ran.
    server_gone: bool,
    /// The task's cgroup, where the host has them (`launch::cgroup`).
    cgroup: Option<super::cgroup::TaskCgroup>,
}

impl Supervisor {
    pub(super) fn new(spec: LaunchSpec, dir: TaskDir, signals: SigSet) -> Self {
        Supervisor {
            spec,
            dir,
            signals,
            tmpdir: None,
            start_wall: now_secs(),
            started: Instant::now(),
            job_pid: None,
            status: None,
            kill_reason: None,
            kill_at: None,
            s_rt_sent: false,
            maxvmem: 0,
            mem_integral: 0.0,
            last_sample: Instant::now(),
            server_gone: false,
            cgroup: None,
        }
    }

    fn base_result(&self) -> TaskResult {
        TaskResult {
            job: self.spec.job,
            task: self.spec.task,
            host: self.spec.host.clone(),
            start_time: self.start_wall,
            end_time: now_secs(),
            pe_task: self.spec.pe_task.clone(),
            ..TaskResult::default()
        }
    }

    fn setup_failure(&self, failed: u32, error: String) -> TaskResult {
        eprintln!("job {}: {error}", self.spec.task_name());
        TaskResult {
            failed,
            error: Some(error),
            job_error: failed::caused_by_job(failed, &self.spec),
            ..self.base_result()
        }
    }

    pub(super) fn run(&mut self) -> TaskResult {
        let prepared = match self.prepare_job() {
            Ok(p) => p,
            Err(f) => {
                announce_started(0);
                return self.setup_failure(f.failed, f.error);
            }
        };
        // sge_shepherd: the prolog first; when it fails the job does not start, but the
        // epilog still runs, for cleanup (its own failure is not reported then).
        if let Some(command) = self.spec.prolog.clone()
            && let Err(f) = self.procedure(Procedure::Prolog, &command, &prepared)
        {
            announce_started(0);
            if let Some(epilog) = self.spec.epilog.clone() {
                let _ = self.procedure(Procedure::Epilog, &epilog, &prepared);
            }
            return self.setup_failure(f.failed, f.error);
        }
        self.cgroup = self.spec.cgroups.as_ref().and_then(|policy| {
            super::cgroup::TaskCgroup::create(
                policy,
                &super::cgroup::cell_group(&self.spec.sge_root, &self.spec.sge_cell),
                &self.spec.task_name(),
                self.spec.limits.memory_max,
                self.spec.limits.slots,
                &self.spec.denied_device_files,
            )
        });
        let job_pid = match self.spawn_job(&prepared.start) {
            Ok(pid) => pid,
            Err(f) => {
                announce_started(0);
                return self.setup_failure(f.failed, f.error);
            }
        };
        self.job_pid = Some(job_pid);
        // Setup failures were read before the job was announced (see spawn_job).
        announce_started(job_pid.as_raw() as u32);
        self.wait_loop();
        let mut result = self.finish();
        if let Some(command) = self.spec.epilog.clone()
            && let Err(f) = self.procedure(Procedure::Epilog, &command, &prepared)
            && result.failed == 0
        {
            eprintln!("job {}: {}", self.spec.task_name(), f.error);
            result.failed = f.failed;
            result.error = Some(f.error);
        }
        result
    }

    /// Runs the prolog or epilog `command` (`[user@]path [args]`, with queue_conf(5)'s
    /// `$host`, `$job_owner`, `$job_id`, `$job_name`, `$processors`, `$queue`, `$sge_root`
    /// and `$sge_cell`) as the job's owner, or as `user`, with the job's environment, working
    /// directory and output files, and waits for it. Its exit status decides as in
    /// sge_shepherd: 0 goes on; 99 asks for the job to be rescheduled (`failed` 25), 100
    /// puts it in error (30); any other is the procedure's failure (8 for a prolog, 15 for
    /// an epilog: the queue goes to error state); one that cannot be started is 7 or 14.
    fn procedure(
        &mut self,
        which: Procedure,
        command: &str,
        prepared: &Prepared,
    ) -> Result<(), SetupFailure> {
        let (name, before, failed_code) = match which {
            Procedure::Prolog => ("prolog", failed::BEFORE_PROLOG, failed::PROLOG_FAILED),
            Procedure::Epilog => ("epilog", failed::BEFORE_EPILOG, failed::EPILOG_FAILED),
        };
        let spec = &self.spec;
        let command = command.trim();
        let (who, rest) = match command.split_once('@') {
            Some((u, r)) if !u.is_empty() && !u.contains('/') && !u.contains(' ') => (Some(u), r),
            _ => (None, command),
        };
        let words: Vec<String> = rest
            .split_whitespace()
            .map(|w| {
                w.replace("$host", &spec.host)
                    .replace("$job_owner", &spec.submitter.owner)
                    .replace("$job_id", &spec.job.to_string())
                    .replace("$job_name", &spec.name)
                    .replace("$processors", "UNDEFINED")
                    .replace("$queue", spec.queue_name())
                    .replace("$sge_root", &spec.sge_root)
                    .replace("$sge_cell", &spec.sge_cell)
            })
            .collect();
        let Some((program, args)) = words.split_first() else {
            return Ok(());
        };
        let user = match who {
            None => prepared.user.clone(),
            Some(u) => match User::from_name(u) {
                Ok(Some(user)) => user,
                _ => return Err(fail(before, format!("unknown user \"{u}\" of {name}"))),
            },
        };
        let mut paths = prepared.paths.clone();
        paths.stdin = "/dev/null".to_string();
        let start = JobStart::prepare(
            &user,
            prepared.workdir.clone(),
            paths,
            &[],
            JobProgram {
                program: program.clone(),
                argv0: program.clone(),
                args: args.to_vec(),
                stdin_override: None,
                search: false,
            },
            &prepared.env,
        )
        .map_err(|f| fail(before, f.error))?;
        let pid = match spawn::spawn(&start.exec) {
            Err(e) => {
                return Err(fail(
                    before,
                    format!("can't start {name}: {}", std::io::Error::from(e)),
                ));
            }
            Ok(Err((pid, failure))) => {
                let _ = waitpid(pid, None);
                return Err(fail(before, start.failure(failure).error));
            }
            Ok(Ok(pid)) => pid,
        };
        let status = loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => break code,
                Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(fail(before, format!("waiting for the {name}: {e}"))),
            }
        };
        let error = format!("exit_status of {name} = {status}");
        match status {
            0 => Ok(()),
            99 => Err(fail(failed::AGAIN, error)),
            100 => Err(fail(failed::APPERROR, error)),
            _ => Err(fail(failed_code, error)),
        }
    }

    /// Prepares the job's files and what it runs with (its prolog and epilog too).
    fn prepare_job(&mut self) -> Result<Prepared, SetupFailure> {
        let before = |error: String| SetupFailure {
            failed: failed::BEFORE_JOB,
            error,
        };
        let spec = self.spec.clone();
        let user = check_identity(&spec).map_err(|e| before(e.to_string()))?;
        let home = user.dir.to_string_lossy().into_owned();
        let workdir = spec.cwd.clone().unwrap_or_else(|| home.clone());
        // TMPDIR: <tmpdir>/<job>.<task>.<queue>, owned by the job's owner; a pe task's has
        // its id after that: it is removed when the pe task ends, while the task goes on.
        let mut tmpdir_name = format!("{}.{}.{}", spec.job, spec.task, spec.queue_name());
        if let Some(id) = &spec.pe_task {
            tmpdir_name = format!("{tmpdir_name}.{id}");
        }
        let tmpdir = Path::new(&spec.tmpdir).join(tmpdir_name);
        // Also a dangling symlink someone planted under the predictable name.
        if tmpdir.symlink_metadata().is_ok() {
            let _ = std::fs::remove_dir_all(&tmpdir).or_else(|_| std::fs::remove_file(&tmpdir));
        }
        // `create_dir`, not `_all`: the name is predictable, so it must be ours, new.
        std::fs::create_dir(&tmpdir)
            .map_err(|e| before(format!("can't create tmpdir {}: {e}", tmpdir.display())))?;
        let _ = std::fs::set_permissions(&tmpdir, std::fs::Permissions::from_mode(0o755));
        if nix::unistd::geteuid().is_root() {
            let _ = nix::unistd::chown(&tmpdir, Some(user.uid), Some(user.gid));
        }
        self.tmpdir = Some(tmpdir.clone());
        let script_path = self.dir.script().to_string_lossy().into_owned();
        let pe_hostfile_path = self.dir.pe_hostfile().to_string_lossy().into_owned();
        if let JobCommand::Script { script, .. } = &spec.command {
            self.dir
                .write_unsynced("job_script", script, 0o755)
                .map_err(|e| before(e.to_string()))?;
        }
        if spec.placement.pe.is_some() {
            self.dir
                .write_unsynced("pe_hostfile", pe_hostfile(&spec).as_bytes(), 0o644)
                .map_err(|e| before(e.to_string()))?;
        }
        let job_spool_dir = self.dir.path.to_string_lossy().into_owned();
        let task = spec.array.is_some().then_some(spec.task);
        let path_ctx = PathContext {
            job: spec.job,
            task,
            job_name: &spec.name,
            user: &spec.submitter.owner,
            home: &home,
            hostname: &spec.host,
            workdir: &workdir,
        };
        let mut paths = resolve_output_paths(
            &path_ctx,
            &spec.stdout,
            &spec.stderr,
            &spec.stdin,
            spec.merge_stderr,
            |p| Path::new(p).is_dir(),
        );
        if spec.interactive.is_some() {
            // A qrsh job's input and output are its client's, through `relay`.
            paths = super::paths::OutputPaths {
                stdin: "/dev/null".into(),
                stdout: "/dev/null".into(),
                stderr: "/dev/null".into(),
                merged: false,
            };
        }
        // What runs, per shell_start_mode (queue_conf(5)) and -b/-shell.
        let shell = spec
            .interpreter
            .clone()
            .unwrap_or_else(|| spec.queue_shell.clone());
        let shell_argv0 = {
            let base = shell.rsplit('/').next().unwrap_or(&shell);
            if spec.login_shells.iter().any(|s| s == base) {
                format!("-{base}")
            } else {
                shell.clone()
            }
        };
        let mut stdin_override = None;
        let mut search_path = false;
        let (program, argv0, args) = match &spec.command {
            JobCommand::Script { script, args } => match spec.shell_start_mode.as_str() {
                "unix_behavior" if script.starts_with(b"#!") => {
                    (script_path.clone(), script_path.clone(), args.clone())
                }
                "script_from_stdin" => {
                    stdin_override = Some(script_path.clone());
                    let mut a = Vec::new();
                    if !args.is_empty() {
                        a.push("-s".to_string());
                        a.extend(args.iter().cloned());
                    }
                    (shell.clone(), shell_argv0.clone(), a)
                }
                _ => {
                    let mut a = vec![script_path.clone()];
                    a.extend(args.iter().cloned());
                    (shell.clone(), shell_argv0.clone(), a)
                }
            },
            JobCommand::Binary {
                command,
                args,
                shell: true,
            } => {
                let mut line = command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                (
                    shell.clone(),
                    shell_argv0.clone(),
                    vec!["-c".to_string(), line],
                )
            }
            JobCommand::Binary {
                command,
                args,
                shell: false,
            } => {
                search_path = true;
                (command.clone(), command.clone(), args.clone())
            }
        };
        let ctx = ExecContext {
            home: &home,
            workdir: &workdir,
            cwd_requested: spec.cwd.is_some(),
            paths: &paths,
            job_spool_dir: &job_spool_dir,
            // SGE 8.1.9: the script's copy in the spool, or the command of `-b y`.
            job_script: match &spec.command {
                JobCommand::Script { .. } => &script_path,
                JobCommand::Binary { command, .. } => command,
            },
            pe_hostfile: &pe_hostfile_path,
            tmpdir: &tmpdir.to_string_lossy(),
            binary_path: &binary_path(),
            shell: &shell,
        };
        let mut env = job_environment(&spec, &ctx);
        // queue_conf(5)'s starter_method starts the job instead of its shell, with the job's
        // command and arguments, and is told the shell it replaces.
        let (program, argv0, args, search_path) = match &spec.starter_method {
            None => (program, argv0, args, search_path),
            Some(starter) => {
                env.push(("SGE_STARTER_SHELL_PATH".into(), shell.clone()));
                env.push((
                    "SGE_STARTER_SHELL_START_MODE".into(),
                    spec.shell_start_mode.clone(),
                ));
                env.push((
                    "SGE_STARTER_USE_LOGIN_SHELL".into(),
                    shell_argv0.starts_with('-').to_string(),
                ));
                let mut job_args = Vec::new();
                match &spec.command {
                    JobCommand::Script { args, .. } => {
                        job_args.push(script_path.clone());
                        job_args.extend(args.iter().cloned());
                    }
                    JobCommand::Binary { command, args, .. } => {
                        job_args.push(command.clone());
                        job_args.extend(args.iter().cloned());
                    }
                }
                (starter.clone(), starter.clone(), job_args, false)
            }
        };
        // A qrsh job: the shepherd's `relay` connects to the client, then becomes the command.
        let (program, argv0, args, search_path) = match &spec.interactive {
            None => (program, argv0, args, search_path),
            Some(session) => {
                let me = std::env::current_exe()
                    .map(|p| p.to_string_lossy().into_owned())
                    .map_err(|e| before(format!("can't find the shepherd: {e}")))?;
                let mut relay = vec![
                    "relay".to_string(),
                    session.host.clone(),
                    session.port.to_string(),
                    session.cookie.clone(),
                ];
                if let Some((rows, cols)) = session.pty {
                    relay.extend(["--pty".to_string(), format!("{rows}x{cols}")]);
                }
                // The relay `exec`s the program as a shell would, by PATH when it names no
                // directory: what both `search_path` and a bare queue shell mean.
                relay.extend(["--".to_string(), program, argv0]);
                relay.extend(args);
                (me, super::SHEPHERD_BINARY.to_string(), relay, false)
            }
        };
        let start = JobStart::prepare(
            &user,
            workdir.clone(),
            paths.clone(),
            &spec.limits.rlimits,
            JobProgram {
                program,
                argv0,
                args,
                stdin_override,
                search: search_path,
            },
            &env,
        )?;
        Ok(Prepared {
            start,
            user,
            workdir,
            paths,
            env,
        })
    }

    /// Forks the job's process ([`spawn`]); returns its pid once it has `exec`ed the job,
    /// or the failure it reported.
    fn spawn_job(&self, start: &JobStart) -> Result<Pid, SetupFailure> {
        let before = |error: String| SetupFailure {
            failed: failed::BEFORE_JOB,
            error,
        };
        // Born in the task's cgroup: the supervisor is in it while it forks, and only then.
        if let Some(group) = &self.cgroup
            && let Err(e) = group.enter()
        {
            group.leave();
            return Err(before(format!("can't enter the task's cgroup: {e}")));
        }
        let spawned = spawn::spawn(&start.exec);
        if let Some(group) = &self.cgroup {
            group.leave();
        }
        match spawned {
            Err(e) => Err(before(format!(
                "can't start the job: {}",
                std::io::Error::from(e)
            ))),
            Ok(Ok(pid)) => Ok(pid),
            Ok(Err((pid, failure))) => {
                // The child failed before `exec`: reap it and pass its reason on.
                let _ = waitpid(pid, None);
                Err(start.failure(failure))
            }
        }
    }

    fn wait_loop(&mut self) {
        nix::unistd::alarm::set(1);
        while self.status.is_none() {
            let sig = match self.signals.wait() {
                Ok(s) => s,
                Err(_) => continue,
            };
            match sig {
                Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT => {
                    self.kill_reason.get_or_insert(KillReason::Qdel);
                    self.kill_tree();
                }
                Signal::SIGUSR1 => {
                    // A kill with notification (`-notify`): SIGUSR2 now, SIGKILL after the
                    // queue's notify time. A second request does not restart the clock.
                    self.kill_reason.get_or_insert(KillReason::Qdel);
                    if self.kill_at.is_none() {
                        self.signal_job(Signal::SIGUSR2);
                        self.kill_at =
                            Some(Instant::now() + Duration::from_secs(self.spec.notify_secs));
                    }
                }
                Signal::SIGALRM => {
                    self.tick();
                    nix::unistd::alarm::set(1);
                }
                s if s == SERVER_GONE_SIGNAL => self.server_gone = true,
                _ => {}
            }
            self.reap();
        }
        nix::unistd::alarm::cancel();
        // The job is over: take down what it left behind, as SGE kills the job's processes,
        // and what is left in its cgroup (also what a subreaper of the job's own took).
        if let Some(group) = &self.cgroup {
            group.kill_all();
        }
        for _ in 0..100 {
            // As a child subreaper the supervisor inherits every orphaned descendant, so with
            // no child left there is no descendant either, and no /proc scan is needed.
            if !self.reap() {
                break;
            }
            let left = descendants(std::process::id());
            if left.is_empty() {
                break;
            }
            for p in &left {
                let _ = kill(Pid::from_raw(*p as i32), Signal::SIGKILL);
            }
            self.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reap();
    }

    /// Reaps every exited child; records the job's status. `false` when no child is left.
    fn reap(&mut self) -> bool {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => return true,
                Err(nix::errno::Errno::ECHILD) => return false,
                Err(_) => return true,
                Ok(status) => {
                    if status.pid() == self.job_pid
                        && matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..))
                    {
                        self.status = Some(status);
                    }
                }
            }
        }
    }

    fn tick(&mut self) {
        let elapsed = self.started.elapsed().as_secs();
        // The job's processes are sampled every second at first, then every 5 s: a /proc scan
        // per task per second is too much on a host with many tasks (SGE samples even less
        // often).
        if elapsed < 10 || elapsed.is_multiple_of(5) {
            self.sample_usage();
        }
        if let Some(s_rt) = self.spec.limits.s_rt
            && elapsed >= s_rt
            && !self.s_rt_sent
        {
            self.s_rt_sent = true;
            self.signal_job(Signal::SIGUSR1);
        }
        if let Some(h_rt) = self.spec.limits.h_rt
            && elapsed >= h_rt
            && self.kill_reason.is_none()
        {
            self.kill_reason = Some(KillReason::HardRuntime);
            self.kill_tree();
        }
        if self.kill_at.is_some_and(|t| Instant::now() >= t) {
            self.kill_tree();
        }
    }

    /// Samples the job's processes: peak and integral memory for the accounting record, and
    /// the online usage that `qstat` shows while the job runs (left in the task directory).
    fn sample_usage(&mut self) {
        let live = usage::sample_tree(&descendants(std::process::id()));
        let dt = self.last_sample.elapsed().as_secs_f64();
        self.last_sample = Instant::now();
        self.maxvmem = self.maxvmem.max(live.vmem);
        self.mem_integral += live.vmem as f64 / 1e9 * dt;
        let report = UsageReport {
            job: self.spec.job,
            task: self.spec.task,
            time: now_secs() as i64,
            usage: usage::task_usage(
                live,
                reaped_children_cpu(),
                reaped_children_io().unwrap_or(0),
                self.mem_integral,
                self.maxvmem,
            ),
        };
        if let Err(e) = usage::publish(&self.dir, &report) {
            tracing::debug!("cannot leave the usage report: {e}");
        }
    }

    /// Sends a signal to the job's process group and every other descendant.
    fn signal_job(&self, sig: Signal) {
        if let Some(pid) = self.job_pid {
            let _ = killpg(pid, sig);
        }
        for p in descendants(std::process::id()) {
            let _ = kill(Pid::from_raw(p as i32), sig);
        }
    }

    fn kill_tree(&mut self) {
        tracing::info!(job = %self.spec.job, task = self.spec.task, "killing the job's processes");
        self.signal_job(Signal::SIGKILL);
        if let Some(group) = &self.cgroup {
            group.kill_all();
        }
    }

    fn finish(&mut self) -> TaskResult {
        let mut result = self.base_result();
        match self.status {
            Some(WaitStatus::Exited(_, code)) => result.exit_status = code,
            Some(WaitStatus::Signaled(_, sig, _)) => {
                result.exit_status = 128 + sig as i32;
                result.signal = Some(sig as i32);
            }
            _ => {}
        }
        result.failed = match (self.kill_reason, result.signal) {
            (Some(KillReason::HardRuntime), _) => failed::LIMIT_ENFORCED,
            (Some(KillReason::Qdel), _) => failed::AFTER_JOB,
            // SGE 8.1.9 records 100 for a job that died of the s_rt warning.
            (None, Some(_)) if self.s_rt_sent => failed::AFTER_JOB,
            _ => 0,
        };
        if let Ok(u) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        {
            let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            result.rusage = Rusage {
                utime: secs(u.user_time()),
                stime: secs(u.system_time()),
                maxrss: u.max_rss() as f64,
                ixrss: u.shared_integral() as f64,
                ismrss: 0.0,
                idrss: u.unshared_data_integral() as f64,
                isrss: u.unshared_stack_integral() as f64,
                minflt: u.minor_page_faults() as u64,
                majflt: u.major_page_faults() as u64,
                nswap: u.full_swaps() as u64,
                inblock: u.block_reads() as f64,
                oublock: u.block_writes() as u64,
                msgsnd: u.ipc_sends() as u64,
                msgrcv: u.ipc_receives() as u64,
                nsignals: u.signals() as u64,
                nvcsw: u.voluntary_context_switches() as u64,
                nivcsw: u.involuntary_context_switches() as u64,
            };
        }
        if let Some(group) = &self.cgroup {
            // The kernel's count: also processes nobody waited for.
            if let Some((user, system)) = group.cpu_seconds() {
                result.rusage.utime = result.rusage.utime.max(user);
                result.rusage.stime = result.rusage.stime.max(system);
            }
            if let Some(peak) = group.memory_peak() {
                self.maxvmem = self.maxvmem.max(peak);
            }
            // Killed at its memory limit (itself, or the command its `-b y` shell waited
            // for): as SGE accounts a job killed for its limits.
            if result.exit_status == 128 + Signal::SIGKILL as i32 && group.oom_killed() {
                tracing::info!(job = %self.spec.job, task = self.spec.task, "killed at its memory limit");
                result.failed = failed::AFTER_JOB;
            }
        }
        result.maxvmem = self.maxvmem as f64;
        result.mem = self.mem_integral;
        // In GB as the accounting file keeps it (`qacct` prints it as a memory size).
        if let Some(bytes) = reaped_children_io() {
            result.io = bytes as f64 / (1024.0 * 1024.0 * 1024.0);
        }
        result
    }

    pub(super) fn cleanup(&mut self) {
        if let Some(t) = self.tmpdir.take() {
            let _ = std::fs::remove_dir_all(t);
        }
        if let Some(group) = self.cgroup.take() {
            group.remove();
        }
    }
}

/// `SGE_BINARY_PATH`: where the gridspool binaries are on this host.
fn binary_path() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .map_or_else(String::new, |p| p.to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------------------
// the job's first process

/// What runs: the program, its `argv[0]` and arguments, and how it is found.
struct JobProgram {
    program: String,
    argv0: String,
    args: Vec<String>,
    /// `script_from_stdin`: the script is the job's stdin.
    stdin_override: Option<String>,
    /// `-b y -shell n`: the program is searched in `PATH`, and missing is failure 27.
    search: bool,
}

/// A prolog or an epilog.
#[derive(Debug, Clone, Copy)]
enum Procedure {
    Prolog,
    Epilog,
}

/// What the job runs with, prepared once for it and for its prolog and epilog.
struct Prepared {
    start: JobStart,
    user: User,
    workdir: String,
    paths: OutputPaths,
    env: Vec<(String, String)>,
}

/// The job's start, prepared in the supervisor before the fork ([`spawn`]), with what its
/// failure messages name.
struct JobStart {
    exec: spawn::JobExec,
    user: String,
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
    rlimits: Vec<RLimit>,
    workdir: String,
    paths: OutputPaths,
    stdin: String,
    program: String,
    candidates: Vec<String>,
}

impl JobStart {
    /// Resolves everything the child needs (the owner's groups, C strings, the `PATH`
    /// candidates) so that the child only makes system calls. Fails with `failed` 1.
    fn prepare(
        user: &User,
        workdir: String,
        paths: OutputPaths,
        rlimits: &[super::limits::RLimitValue],
        job: JobProgram,
        env: &[(String, String)],
    ) -> Result<JobStart, SetupFailure> {
        let before = |e: String| fail(failed::BEFORE_JOB, e);
        let c = |s: &str| spawn::c_string(s).map_err(before);
        let name = user.name.clone();
        let (uid, gid) = (user.uid, user.gid);
        let identity = if nix::unistd::geteuid().is_root() {
            let Ok(cname) = CString::new(name.clone()) else {
                return Err(before(format!("bad user name {name:?}")));
            };
            let groups = nix::unistd::getgrouplist(&cname, gid)
                .map_err(|e| before(format!("initgroups({name}) failed: {e}")))?;
            spawn::Identity::Switch { uid, gid, groups }
        } else if nix::unistd::geteuid() != uid {
            return Err(before(format!(
                "the shepherd is not root and cannot run a job of user \"{name}\""
            )));
        } else {
            spawn::Identity::Keep
        };
        let limits = rlimits
            .iter()
            .map(|l| {
                let inf = nix::sys::resource::RLIM_INFINITY;
                let (soft, hard) = (l.soft.unwrap_or(inf), l.hard.unwrap_or(inf));
                (rlimit_resource(l.resource), soft, hard)
            })
            .collect();
        let stdin = job
            .stdin_override
            .clone()
            .unwrap_or_else(|| paths.stdin.clone());
        // The job's PATH, as the former helper (which ran with the job's environment) saw it.
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or("", |(_, v)| v.as_str());
        let in_path = |command: &str| -> Vec<String> {
            path_var
                .split(':')
                .map(|d| Path::new(if d.is_empty() { "." } else { d }).join(command))
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        let candidates = if job.search && !job.program.contains('/') {
            in_path(&job.program)
        } else {
            vec![job.program.clone()]
        };
        let exec_path = if !job.search && !job.program.contains('/') {
            in_path(&job.program)
        } else {
            Vec::new()
        };
        let strings = |v: &[String]| v.iter().map(|s| c(s)).collect::<Result<Vec<_>, _>>();
        let mut argv = vec![job.argv0.clone()];
        argv.extend(job.args.iter().cloned());
        let envp: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let exec = spawn::JobExec::new(
            identity,
            limits,
            c(&workdir)?,
            c(&paths.stdout)?,
            if paths.merged {
                None
            } else {
                Some(c(&paths.stderr)?)
            },
            c(&stdin)?,
            strings(&candidates)?,
            job.search,
            strings(&exec_path)?,
            strings(&argv)?,
            strings(&envp)?,
        );
        Ok(JobStart {
            exec,
            user: name,
            uid,
            gid,
            rlimits: rlimits.iter().map(|l| l.resource).collect(),
            workdir,
            paths,
            stdin,
            program: job.program,
            candidates,
        })
    }

    /// SGE's failure code and message for a failed step of the child.
    fn failure(&self, f: spawn::ChildFailure) -> SetupFailure {
        use spawn::Step;
        let e = f.errno;
        let text = errno_text(&std::io::Error::from_raw_os_error(e as i32));
        let candidate = |i: usize| {
            self.candidates
                .get(i)
                .map_or(self.program.as_str(), String::as_str)
        };
        match f.step {
            Step::Sigmask => fail(failed::BEFORE_JOB, format!("sigprocmask: {e}")),
            Step::Groups => fail(
                failed::BEFORE_JOB,
                format!("initgroups({}) failed: {e}", self.user),
            ),
            Step::Setgid => fail(
                failed::BEFORE_JOB,
                format!("setgid({}) failed: {e}", self.gid),
            ),
            Step::Setuid => fail(
                failed::BEFORE_JOB,
                format!("setuid({}) failed: {e}", self.uid),
            ),
            Step::Rlimit(i) => fail(
                failed::BEFORE_JOB,
                match self.rlimits.get(i) {
                    Some(r) => format!("setrlimit {r:?} failed: {e}"),
                    None => format!("setrlimit failed: {e}"),
                },
            ),
            Step::Chdir => fail(
                failed::NO_CWD,
                format!("can't chdir to {}: {text}", self.workdir),
            ),
            Step::OpenStdout => fail(
                failed::OPEN_OUTPUT,
                format!("can't open output file \"{}\": {text}", self.paths.stdout),
            ),
            Step::OpenStderr => fail(
                failed::OPEN_OUTPUT,
                format!("can't open output file \"{}\": {text}", self.paths.stderr),
            ),
            Step::Dup => fail(failed::BEFORE_JOB, format!("dup: {text}")),
            Step::OpenStdin => fail(
                failed::OPEN_OUTPUT,
                format!("can't open input file \"{}\": {text}", self.stdin),
            ),
            Step::Search => fail(
                failed::NO_SHELL,
                format!(
                    "can't execute \"{}\": No such file or directory",
                    self.program
                ),
            ),
            Step::Access(i) => fail(
                failed::NO_SHELL,
                format!("unable to find shell \"{}\": {}", candidate(i), e.desc()),
            ),
            Step::Execve(i) => fail(
                failed::NO_SHELL,
                format!("execve({}) failed: {text}", candidate(i)),
            ),
        }
    }
}

fn fail(failed: u32, error: String) -> SetupFailure {
    SetupFailure { failed, error }
}

fn errno_text(e: &std::io::Error) -> String {
    // "No such file or directory", without Rust's " (os error 2)".
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn rlimit_resource(r: RLimit) -> nix::sys::resource::Resource {
    use nix::sys::resource::Resource;
    match r {
        RLimit::As => Resource::RLIMIT_AS,
        RLimit::Cpu => Resource::RLIMIT_CPU,
        RLimit::Rss => Resource::RLIMIT_RSS,
        RLimit::Fsize => Resource::RLIMIT_FSIZE,
        RLimit::Data => Resource::RLIMIT_DATA,
        RLimit::Stack => Resource::RLIMIT_STACK,
        RLimit::Core => Resource::RLIMIT_CORE,
    }
}

// ---------------------------------------------------------------------------------------
// watch, kill, query

/// Reads one task's result if it has ended; a task whose supervisor died without a result
/// gets one written now (failed 100), so that it is reported exactly like any other.
fn finished_result(dir: &TaskDir, job: JobId, task: TaskId) -> Option<TaskResult> {
    if let Ok(bytes) = crate::file::open::read(&dir.result()) {
        return serde_json::from_slice(&bytes).ok();
    }
    // A directory still being set up has no pid file yet; give it time.
    let young = std::fs::metadata(&dir.path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age < Duration::from_secs(120));
    if read_pid_file(dir).is_none() && young {
        return None;
    }
    if supervisor_alive(dir) {
        return None;
    }
    // Re-check: it may have finished between the two looks.
    if let Ok(bytes) = crate::file::open::read(&dir.result()) {
        return serde_json::from_slice(&bytes).ok();
    }
    // Only supervisors started by an `exec` have a `spec.json`; without it the host is left
    // empty and the launcher, which knows which host it watches, fills it in.
    let host = crate::file::open::read(&dir.spec())
        .ok()
        .and_then(|b| serde_json::from_slice::<LaunchSpec>(&b).ok())
        .map(|s| s.host)
        .unwrap_or_default();
    let result = TaskResult {
        job,
        task,
        host,
        start_time: now_secs(),
        end_time: now_secs(),
        exit_status: 137,
        signal: Some(9),
        failed: failed::AFTER_JOB,
        error: Some("the shepherd of the task ended without a result".to_string()),
        supervisor_lost: true,
        ..TaskResult::default()
    };
    let json = serde_json::to_vec(&result).ok()?;
    dir.write("result.json", &json, 0o644).ok()?;
    Some(result)
}

/// The task directories of an execution spool; none when they cannot be listed (for
/// watchers, which look again on their next round).
pub fn task_dirs(exec_spool: &Path) -> Vec<(JobId, TaskId, TaskDir)> {
    listed_task_dirs(exec_spool).unwrap_or_default()
}

/// The task directories, or why the directory that holds them cannot be read. An exec spool
/// without `active_jobs` has no tasks (nothing was ever started there).
fn listed_task_dirs(exec_spool: &Path) -> Result<Vec<(JobId, TaskId, TaskDir)>, LaunchError> {
    let dir = active_jobs(exec_spool);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LaunchError::io("read directory", &dir, e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(|e| LaunchError::io("read directory", &dir, e))?;
        let name = e.file_name();
        if let Some((j, t)) = name.to_str().and_then(TaskDir::parse_name) {
            out.push((j, t, TaskDir { path: e.path() }));
        }
    }
    out.sort_by_key(|(j, t, _)| (*j, *t));
    Ok(out)
}

/// The state of every task directory. An error when they cannot be listed: the caller must
/// not take a task missing from an unreadable directory for a lost one.
pub fn query(exec_spool: &Path) -> Result<Vec<TaskState>, LaunchError> {
    Ok(listed_task_dirs(exec_spool)?
        .into_iter()
        .map(|(job, task, dir)| TaskState {
            job,
            task,
            running: supervisor_alive(&dir),
            finished: dir.result().exists(),
        })
        .collect())
}

/// One pass of a watcher: the results of ended tasks not yet in `reported`.
pub fn collect_finished(
    exec_spool: &Path,
    reported: &mut HashSet<(JobId, TaskId)>,
) -> Vec<TaskResult> {
    let mut out = Vec::new();
    let present: HashSet<(JobId, TaskId)> = task_dirs(exec_spool)
        .into_iter()
        .map(|(job, task, dir)| {
            if !reported.contains(&(job, task))
                && let Some(r) = finished_result(&dir, job, task)
            {
                reported.insert((job, task));
                out.push(r);
            }
            (job, task)
        })
        .collect();
    reported.retain(|k| present.contains(k));
    out
}

/// Removes a reported task's directory (the launcher has passed its result on).
pub fn acknowledge(exec_spool: &Path, job: JobId, task: TaskId) -> Result<(), LaunchError> {
    let dir = TaskDir::new(exec_spool, job, task);
    if !dir.path.exists() {
        // Removed already (an acknowledgement repeated), or never here (a lost task).
        return Ok(());
    }
    // Never the directory of a task without a result: it may be running.
    if !dir.result().exists() {
        return Err(LaunchError::NotRunning { job, task });
    }
    match std::fs::remove_dir_all(&dir.path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LaunchError::io("remove", &dir.path, e)),
    }
}

/// Asks the supervisor of a task to kill it (`notify`: SIGUSR2 first, per `-notify`).
pub fn request_kill(
    exec_spool: &Path,
    job: JobId,
    task: TaskId,
    notify: bool,
) -> Result<(), LaunchError> {
    let pid = live_supervisor(&TaskDir::new(exec_spool, job, task), job, task)?;
    let sig = if notify {
        Signal::SIGUSR1
    } else {
        Signal::SIGTERM
    };
    kill(Pid::from_raw(pid as i32), sig).map_err(|e| {
        LaunchError::Refused(format!(
            "cannot signal the shepherd of {job}.{task} (pid {pid}): {e}"
        ))
    })
}

fn watch_stdio(
    exec_spool: &Path,
    interval: Duration,
    heartbeat: Option<Duration>,
) -> Result<(), LaunchError> {
    /// What wakes the remote watcher: an acknowledgement from the launcher, a change in
    /// `active_jobs` (a result was written), or the end of its input.
    enum Wake {
        Ack(JobId, TaskId),
        Changed,
        Eof,
    }
    let (tx, rx) = std::sync::mpsc::channel::<Wake>();
    let changed = tx.clone();
    let _watch = super::wake::watch_dir(&super::taskdir::active_jobs(exec_spool), move || {
        let _ = changed.send(Wake::Changed);
    });
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if let Some(name) = line.trim().strip_prefix("ack ")
                && let Some((job, task)) = TaskDir::parse_name(name.trim())
                && tx.send(Wake::Ack(job, task)).is_err()
            {
                return;
            }
        }
        let _ = tx.send(Wake::Eof);
    });
    let mut reported = HashSet::new();
    let mut last_line = Instant::now();
    loop {
        for result in collect_finished(exec_spool, &mut reported) {
            let msg = WatchMessage::Ended {
                result: Box::new(result),
            };
            if print_line(&msg).is_err() {
                return Ok(());
            }
            last_line = Instant::now();
        }
        if let Some(beat) = heartbeat
            && last_line.elapsed() >= beat
        {
            if print_line(&WatchMessage::Alive).is_err() {
                return Ok(());
            }
            last_line = Instant::now();
        }
        let wait = heartbeat.map_or(interval, |beat| {
            interval.min(beat.saturating_sub(last_line.elapsed()))
        });
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Wake::Ack(job, task)) => {
                    if let Err(e) = acknowledge(exec_spool, job, task) {
                        eprintln!("gridspool-shepherd: {e}");
                    }
                }
                Ok(Wake::Changed) => break,
                Ok(Wake::Eof) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(());
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
    }
}

fn kill_mode(rest: &[String]) -> Result<(), LaunchError> {
    let (notify, rest) = match rest.first().map(String::as_str) {
        Some("--notify") => (true, &rest[1..]),
        _ => (false, rest),
    };
    let [spool, job, task] = rest else {
        return Err(usage());
    };
    let job: JobId = job.parse().map_err(|_| usage())?;
    let task: TaskId = task.parse().map_err(|_| usage())?;
    request_kill(Path::new(spool), job, task, notify)
}

fn query_stdio(exec_spool: &Path) -> Result<(), LaunchError> {
    for state in query(exec_spool)? {
        print_line(&state).map_err(|e| LaunchError::io("write", "<stdout>", e))?;
    }
    Ok(())
}
