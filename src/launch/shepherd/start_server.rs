//! `start-server`: the fork server that starts every task of one host over one session (see
//! the module documentation of [`super`] for its protocol). Its record in the execution
//! spool (and the displacing of another master's server), the single-threaded `poll` loop,
//! the fork of each supervisor, and, with `--results`, the shared result pipe and the `ack`s
//! that end a supervisor. Apart from the supervisor because it is the one long-lived process
//! here; what it forks runs [`super::supervisor::supervise`].

use super::procs::proc_start_time;
use super::supervisor::{Held, supervise};
use super::task_start::prepare_task_dir;
use super::{
    RunReply, START_SERVER_RESULTS_VERSION, START_SERVER_SESSION_VERSION, START_SERVER_VERSION,
    SessionAnswer, SessionOp, SessionRequest, StartReply, StartServerHello, WatchMessage,
    finished_result, print_line,
};
use crate::launch::LaunchError;
use crate::launch::spawn;
use crate::launch::spec::LaunchSpec;
use crate::launch::taskdir::TaskDir;
use crate::model::TaskResult;
use crate::model::{JobId, TaskId};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, User};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
pub(super) fn record_start_server(exec_spool: &Path, master: &str) {
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
    /// A held start not yet committed or dropped (see `HELD_START`).
    held: Option<HeldStart>,
}

/// What the server keeps of a held start until its `go` or `drop`.
struct HeldStart {
    /// Where its directory is prepared, under a name no listing takes for a task.
    staging: PathBuf,
    /// The write end of the pipe its supervisor waits on: a byte after the rename, or
    /// closed without one.
    wake: std::os::fd::OwnedFd,
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
pub(super) fn start_server_mode(
    results: bool,
    session: Option<SessionTiming>,
    confinement: Option<String>,
    exec_spool: Option<PathBuf>,
    parent: Pid,
) -> Result<(), LaunchError> {
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use std::os::fd::AsFd;
    let stdout_err = |e| LaunchError::io("write", "<stdout>", e);
    print_line(&StartServerHello {
        start_server: if session.is_some() {
            START_SERVER_SESSION_VERSION
        } else if results {
            START_SERVER_RESULTS_VERSION
        } else {
            START_SERVER_VERSION
        },
        confinement,
        held_starts: true,
    })
    .map_err(stdout_err)?;
    // Asked once here, inherited by every supervisor forked below (`spawn::JobExec`).
    crate::launch::spawn::ignored_signals();
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
        session: session.map(|timing| SessionState {
            timing,
            reported: HashSet::new(),
            next_scan: Instant::now(),
            next_beat: Instant::now() + timing.heartbeat,
        }),
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
            .filter(|s| s.held.is_none())
            .map(|s| s.deadline.saturating_duration_since(now))
            .min()
            .unwrap_or(SERVER_CHECK_INTERVAL)
            .min(SERVER_CHECK_INTERVAL)
            .min(server.session.as_ref().map_or(Duration::MAX, |s| {
                s.next_scan.min(s.next_beat).saturating_duration_since(now)
            }));
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
        if eof {
            // No `go` can come any more.
            server.drop_held(None);
        }
        while let Ok(Some(_)) = children.read_signal() {}
        server.reap_supervisors();
        if results_ready {
            server.forward_results(&mut buf);
        }
        for s in &mut server.starting {
            s.read_pipes(&mut buf);
        }
        server.session_round();
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
            server.drop_held(None);
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

/// How often a `--session` server says it is alive and looks for results left in its
/// execution spool.
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionTiming {
    pub(super) heartbeat: Duration,
    pub(super) poll: Duration,
}

/// What a `--session` server does besides starting tasks: the `watch` mode's work.
struct SessionState {
    timing: SessionTiming,
    /// Results found in the execution spool and reported, until acknowledged (or gone).
    reported: HashSet<(JobId, TaskId)>,
    next_scan: Instant,
    next_beat: Instant,
}

/// The state of a start server.
#[derive(Default)]
struct Server {
    /// With `--session`: the heartbeat and the results found in the execution spool.
    session: Option<SessionState>,
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
        if let Some(json) = line.strip_prefix(b"req ") {
            self.request_line(json);
            return;
        }
        let task_named = |name: &[u8]| {
            std::str::from_utf8(name)
                .ok()
                .and_then(|n| TaskDir::parse_name(n.trim()))
        };
        if let Some(name) = line.strip_prefix(super::GO.as_bytes()) {
            if let Some((job, task)) = task_named(name) {
                self.commit_held(job, task);
            }
            return;
        }
        if let Some(name) = line.strip_prefix(super::DROP.as_bytes()) {
            if let Some(key) = task_named(name) {
                self.drop_held(Some(key));
            }
            return;
        }
        let (line, held) = match line.strip_prefix(super::HELD_START.as_bytes()) {
            Some(spec) => (spec, true),
            None => (line, false),
        };
        if let Some(answer) = self.start_line(line, held) {
            reply(answer);
        }
    }

    /// `go <job>.<task>`: the held start's directory is renamed into place, which commits
    /// it, and its supervisor woken to start the job. A start that is not held here (it
    /// failed and was answered already, or this server is not the one that got it) is left
    /// alone: its launcher has its answer, or learns from the host.
    fn commit_held(&mut self, job: JobId, task: TaskId) {
        let Some(at) = self
            .starting
            .iter()
            .position(|s| (s.spec_job, s.spec_task) == (job, task) && s.held.is_some())
        else {
            return;
        };
        let s = &mut self.starting[at];
        let Some(held) = s.held.take() else {
            return;
        };
        s.deadline = Instant::now() + ANNOUNCE_TIMEOUT;
        match rename_noreplace(&held.staging, &s.dir.path) {
            Ok(()) => {
                // Its end is seen as a byte; a failed write still wakes it (the pipe closes
                // below), and it finds its directory renamed.
                let _ = nix::unistd::write(&held.wake, b"g");
            }
            Err(e) => {
                // The supervisor, woken by the pipe's end, finds its directory where it
                // was and removes it.
                let s = self.starting.swap_remove(at);
                self.tasks.remove(&(job, task));
                drop(held);
                reply(StartReply {
                    job,
                    task,
                    reply: failed_reply(LaunchError::io(
                        "rename",
                        &s.dir.path,
                        std::io::Error::from(e),
                    )),
                });
            }
        }
    }

    /// `drop <job>.<task>` (`None`: every held start, when no `go` can come any more): the
    /// supervisors are woken without the rename, remove what they prepared and exit, with
    /// no result and no reply.
    fn drop_held(&mut self, which: Option<(JobId, TaskId)>) {
        let mut i = 0;
        while i < self.starting.len() {
            let s = &self.starting[i];
            let key = (s.spec_job, s.spec_task);
            if s.held.is_some() && which.is_none_or(|k| k == key) {
                // Its pipes and the wake pipe close here; it is reaped with the others.
                self.starting.swap_remove(i);
                self.tasks.remove(&key);
            } else {
                i += 1;
            }
        }
    }

    /// `sched_d` has recorded the task's result durably: its directory goes (before its
    /// supervisor, which waits for this, is told to exit: a task directory never outlives
    /// its supervisor without a result, which a watcher would report as a lost task), and
    /// its supervisor exits. A task whose result did not come through here is not ours to
    /// acknowledge (its directory holds `result.json`; the launcher removes it).
    fn acknowledge(&mut self, job: JobId, task: TaskId) {
        if !self.tasks.get(&(job, task)).is_some_and(|t| t.forwarded) {
            // With `--session`: a result this server found in the spool (the launcher
            // acknowledges every result of the session here), or one its own supervisor
            // left there.
            if let (Some(s), Some(spool)) = (self.session.as_mut(), self.exec_spool.as_deref()) {
                s.reported.remove(&(job, task));
                if let Err(e) = crate::launch::shepherd::acknowledge(spool, job, task) {
                    eprintln!("gridspool-shepherd: {e}");
                }
            }
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

    /// With `--session`: the heartbeat when it is due, and the results left in the
    /// execution spool (by supervisors whose server has gone) when a scan is due.
    fn session_round(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let now = Instant::now();
        if now >= s.next_beat {
            let _ = print_line(&WatchMessage::Alive);
            s.next_beat = now + s.timing.heartbeat;
        }
        if now < s.next_scan {
            return;
        }
        s.next_scan = now + s.timing.poll;
        let Some(spool) = self.exec_spool.as_deref() else {
            return;
        };
        let mut present = HashSet::new();
        for (job, task, dir) in super::task_dirs(spool) {
            present.insert((job, task));
            // Ours report through the pipe (or are being started).
            if self.tasks.contains_key(&(job, task))
                || self
                    .starting
                    .iter()
                    .any(|st| (st.spec_job, st.spec_task) == (job, task))
                || s.reported.contains(&(job, task))
            {
                continue;
            }
            if let Some(result) = finished_result(&dir, job, task) {
                s.reported.insert((job, task));
                let _ = print_line(&ServerResult { result });
            }
        }
        s.reported.retain(|k| present.contains(k));
    }

    /// One `req` line: carried out at once (each is a few system calls) and answered.
    fn request_line(&mut self, json: &[u8]) {
        let request: SessionRequest = match serde_json::from_slice(json) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "gridspool-shepherd: bad request {:?}: {e}",
                    String::from_utf8_lossy(json)
                );
                return;
            }
        };
        let mut answer = SessionAnswer {
            answer: request.request,
            ..SessionAnswer::default()
        };
        let Some(spool) = self.exec_spool.as_deref() else {
            answer.error = Some("the start server serves no execution spool".to_string());
            let _ = print_line(&answer);
            return;
        };
        let outcome = match request.op {
            SessionOp::Kill { job, task, notify } => {
                crate::launch::shepherd::request_kill(spool, job, task, notify)
            }
            SessionOp::Suspend {
                job,
                task,
                stop,
                seq,
            } => crate::launch::suspend::request_suspend(spool, job, task, stop, seq),
            SessionOp::Query => {
                crate::launch::shepherd::query(spool).map(|states| answer.states = Some(states))
            }
            SessionOp::Probe => {
                answer.text = Some(crate::launch::probe::local_text(spool));
                Ok(())
            }
        };
        if let Err(e) = outcome {
            answer.error = Some(e.to_string());
        }
        let _ = print_line(&answer);
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
    fn start_line(&mut self, line: &[u8], held: bool) -> Option<StartReply> {
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
        let staging = held.then(|| held_staging_name(job, task));
        let forked = prepare_task_dir(&spec, false, staging.as_deref()).and_then(|dir| {
            let outcome = fork_supervisor(spec, &dir, results, staging.is_some());
            if outcome.is_err() {
                let made = match &staging {
                    Some(name) => dir.path.with_file_name(name),
                    None => dir.path.clone(),
                };
                let _ = std::fs::remove_dir_all(made);
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
pub(super) const RESULT_ACK_SIGNAL: Signal = Signal::SIGUSR2;
/// The signal a forked supervisor gets when its start server ends (`PR_SET_PDEATHSIG`).
pub(super) const SERVER_GONE_SIGNAL: Signal = Signal::SIGHUP;

/// How a forked supervisor reports its result to the start server that forked it.
pub(super) struct ResultChannel {
    /// The write end of the server's result pipe.
    pub(super) pipe: std::os::fd::OwnedFd,
    /// The server's pid: while it is our parent, the server is alive.
    pub(super) server: Pid,
}

/// The hidden name a held start's directory is prepared under, beside where it goes:
/// `.<job>.<task>.held.<server pid>`, which no listing takes for a task (its name does not
/// begin with a job number), and which no other live server uses.
fn held_staging_name(job: JobId, task: TaskId) -> String {
    format!(".{job}.{task}.held.{}", std::process::id())
}

/// `rename(2)` that never replaces what is at `to`.
fn rename_noreplace(from: &Path, to: &Path) -> Result<(), nix::errno::Errno> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Err(nix::errno::Errno::EINVAL) => {
            if to.symlink_metadata().is_ok() {
                return Err(nix::errno::Errno::EEXIST);
            }
            nix::fcntl::renameat(AT_FDCWD, from, AT_FDCWD, to)
        }
        other => other,
    }
}

/// Forks the supervisor of a prepared task (the start server's counterpart of
/// [`supervise_task`]: the same supervisor, without the `exec` of this binary). `held`:
/// `dir` is where the task's directory goes on `go`; it is prepared under
/// [`held_staging_name`] meanwhile.
fn fork_supervisor(
    spec: LaunchSpec,
    dir: &TaskDir,
    results: Option<&std::os::fd::OwnedFd>,
    held: bool,
) -> Result<Starting, LaunchError> {
    let (out_r, out_w) = nonblocking_pipe()?;
    let (err_r, err_w) = nonblocking_pipe()?;
    let (job, task) = (spec.job, spec.task);
    let child_dir = dir.clone();
    let server = nix::unistd::getpid();
    let staging = held.then(|| {
        dir.path
            .with_file_name(held_staging_name(spec.job, spec.task))
    });
    // A held start's supervisor gets the pipe it waits on and its staging directory, open
    // before the fork: the `go` may rename the directory before the child runs at all.
    let wake = match &staging {
        Some(staging) => {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| LaunchError::io("create", "pipe", e.into()))?;
            let open =
                std::fs::File::open(staging).map_err(|e| LaunchError::io("open", staging, e))?;
            Some((read, std::os::fd::OwnedFd::from(open), write))
        }
        None => None,
    };
    let child_staging = staging.clone();
    let kept = [
        results,
        wake.as_ref().map(|(read, _, _)| read),
        wake.as_ref().map(|(_, open, _)| open),
    ];
    let pid = spawn::fork_supervisor(&out_w, &err_w, kept, move |[pipe, wake, open]| {
        let channel = pipe.map(|pipe| ResultChannel { pipe, server });
        let held = match (wake, open, child_staging) {
            (Some(wake), Some(open), Some(staging)) => Some(Held::new(wake, open, staging)),
            _ => None,
        };
        match supervise(child_dir, Some(spec), channel, held) {
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
        held: staging
            .zip(wake)
            .map(|(staging, (_, _, wake))| HeldStart { staging, wake }),
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
            if let Some(held) = &self.held {
                // It died before its `go`: nothing was committed.
                let _ = std::fs::remove_dir_all(&held.staging);
            } else if self.dir.result().exists() {
                return reply(RunReply::Started { pid: 0 });
            } else {
                let _ = std::fs::remove_dir_all(&self.dir.path);
            }
            let log = String::from_utf8_lossy(&self.err_buf);
            return reply(failed_reply(LaunchError::Protocol(format!(
                "the supervisor of task {} exited ({}) before starting the job: {}",
                self.task_name(),
                describe_status(status),
                log.trim()
            ))));
        }
        if self.held.is_none() && now >= self.deadline {
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
pub(super) fn failed_reply(e: LaunchError) -> RunReply {
    RunReply::Failed {
        host_fault: matches!(e, LaunchError::Io { .. } | LaunchError::Spool(_)),
        error: e.to_string(),
    }
}
