//! [`Launcher`]: what `sched_d` holds to start, kill and collect tasks.
//!
//! Every operation that may block (spawning a shepherd, an ssh session) runs on a thread of
//! its own; outcomes arrive on the event channel. Per ssh host there is one long-lived
//! session, the start server's (`start-server --session`), opened and reopened by the
//! host's following thread (`watch_remote`): it carries starts, results (its supervisors'
//! and those left in the execution spool), the heartbeat, acknowledgements and requests
//! (kill, suspension, query, probe). A host whose shepherd is older keeps the older ways
//! (`watch_older`: a `gridspool-shepherd watch` session over a master connection, short
//! sessions for requests). For a local host the watcher is a thread that scans the host's
//! execution spool. Each result is reported once; its directory goes when the scheduler
//! acknowledges it ([`Launcher::acknowledge`], after the accounting record and exits line
//! are durable), so a result survives a `sched_d` crash until it has been recorded.
//!
//! Threads: one per start or request while it lasts, one per host following it, one per
//! host's start server (reading its lines). A local host starts tasks through its start
//! server (a child process, see `open_start_server`), or without one at most 8 at once.
//!
//! One file over 1,000 lines: starting, killing, watching and collecting tasks share the
//! per-host sessions and their state (start servers, watchers, the session budget); a split
//! by operation would scatter that state.

use super::liveness::{Connection, HostLiveness, HostRequests};
use super::shepherd::{
    self, RunReply, START_SERVER_RESULTS_VERSION, START_SERVER_SESSION_VERSION, ServerResult,
    SessionAnswer, SessionOp, SessionRequest, StartReply, StartServerHello, TaskState,
    WatchMessage,
};
use super::spec::{LaunchSpec, SHEPHERD_BINARY};
use super::ssh::{SessionId, Sessions, SshTarget, Transport};
use super::taskdir::exec_spool_dir;
use super::{LaunchError, LaunchEvent};
use crate::config::ClusterConfig;
use crate::model::TaskResult;
use crate::model::{JobId, TaskId};
use crate::spool::Spool;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::Duration;

/// How many shepherds a local host starts at once.
const LOCAL_CONCURRENT_STARTS: u32 = 8;

/// Where the launcher finds things; [`LauncherOptions::defaults`] fills them in.
#[derive(Debug, Clone)]
pub struct LauncherOptions {
    /// The shepherd binary for local hosts.
    pub shepherd: PathBuf,
    /// The shepherd's path on ssh hosts (the same path as `shepherd` when `None`).
    pub remote_shepherd: Option<String>,
    /// Directory of the ssh control sockets (created mode 0700).
    pub control_dir: PathBuf,
    /// How often watchers look for finished tasks.
    pub poll_interval: Duration,
    /// Local hosts start tasks through a `gridspool-shepherd start-server` child (a fork
    /// server: no `exec` per task); `false`: in this process, one `exec` of the supervisor
    /// per task (the fallback when the start server cannot be started).
    pub local_start_server: bool,
    /// How many ssh hosts are connected to at once ([`CONNECTS_AT_ONCE`], or
    /// `$GRIDSPOOL_SSH_CONNECTS`, which `cargo bench --bench cluster_throughput` varies).
    pub connects_at_once: u32,
}

impl LauncherOptions {
    /// The shepherd is `$GRIDSPOOL_SHEPHERD`, else `gridspool-shepherd` next to the current
    /// executable (or one directory up, where cargo puts binaries for test executables in
    /// `deps/`). Control sockets go to `<spool>/daemon/ssh/<this host>` (a socket serves one
    /// host: a shadow that takes over must not find the old master's), or to a short private
    /// directory in `/tmp` when that path is too long for a socket address.
    pub fn defaults(spool: &Spool) -> Result<Self, LaunchError> {
        let shepherd = match std::env::var_os("GRIDSPOOL_SHEPHERD") {
            Some(p) => PathBuf::from(p),
            None => {
                let exe = std::env::current_exe()
                    .map_err(|e| LaunchError::io("locate", "/proc/self/exe", e))?;
                let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
                let beside = dir.join(SHEPHERD_BINARY);
                let up = dir.parent().map(|d| d.join(SHEPHERD_BINARY));
                match up {
                    Some(up) if !beside.exists() && up.exists() => up,
                    _ => beside,
                }
            }
        };
        Ok(LauncherOptions {
            shepherd,
            remote_shepherd: None,
            control_dir: control_dir_for(
                spool
                    .daemon_dir()
                    .join("ssh")
                    .join(crate::identity::short_hostname()),
            ),
            poll_interval: Duration::from_millis(500),
            local_start_server: true,
            connects_at_once: std::env::var("GRIDSPOOL_SSH_CONNECTS")
                .ok()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(CONNECTS_AT_ONCE),
        })
    }
}

/// The longest control directory whose sockets fit in a Unix socket address: ssh names a
/// master's socket `cm-` and 40 hex digits (`%C`) and first binds it under that name plus a
/// 17-character temporary suffix, and `sun_path` holds 107 bytes before its NUL. Longer, and
/// every ssh host would be unreachable.
const MAX_CONTROL_DIR_LEN: usize = 107 - "/cm-".len() - 40 - 17;

/// `preferred` when its sockets fit, else `/tmp/gridspool-ssh-<uid>-<hash of preferred>`: one
/// per cell and user, created private (and refused if someone else owns it, see
/// [`create_private_dir`]).
fn control_dir_for(preferred: PathBuf) -> PathBuf {
    if preferred.as_os_str().len() <= MAX_CONTROL_DIR_LEN {
        return preferred;
    }
    // FNV-1a: stable across builds, so a restarted sched_d finds its masters again.
    let hash = preferred
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    PathBuf::from(format!(
        "/tmp/gridspool-ssh-{}-{hash:016x}",
        nix::unistd::geteuid()
    ))
}

/// A task the launcher is responsible for.
#[derive(Debug)]
struct Running {
    host: String,
    /// The `Started` event has been sent (results are held back until then).
    started: bool,
    /// A result that arrived before `Started` was sent.
    early_result: Option<TaskResult>,
    /// A kill that arrived before the shepherd had started the job.
    pending_kill: Option<bool>,
    /// A suspension (stop or continue, and its sequence number) that arrived before.
    pending_suspend: Option<(bool, u64)>,
}

/// The ssh watcher session of a host.
#[derive(Default)]
struct WatcherHandle {
    running: bool,
    /// The ssh process of the session (our child), to stop it on drop.
    pid: Option<u32>,
    /// Its stdin, for `ack` lines.
    acks: Option<std::process::ChildStdin>,
}

/// The `gridspool-shepherd start-server` session of a host: one session carries every start.
/// For an ssh host that saves an ssh session (with its login, shell and shepherd `exec`) per
/// task; for a local host, where the start server is our child, the `exec` of the supervisor
/// per task (the start server forks it).
#[derive(Default)]
struct StartServer {
    /// Not used for this host: `max_sessions` leaves no room for it, or the shepherd there
    /// does not speak it, or (local) it is switched off. Tasks get a session (ssh) or an
    /// `exec` of the supervisor (local) each.
    unsupported: bool,
    /// The session's input, for spec lines; `None` while no session is open.
    stdin: Option<std::fs::File>,
    /// The session (its ssh connection or process, or the local start server, our child).
    pid: Option<SessionId>,
    /// Starts waiting for their reply.
    waiting: Arc<Mutex<WaitingStarts>>,
    /// The session passes results back (`start-server --results`): the tasks it started
    /// report there, not through `result.json` and the watcher, as long as it lasts.
    results: bool,
    /// The session is the host's only connection (`start-server --session`, an ssh host):
    /// it also carries the results found in the execution spool, the heartbeat, and the
    /// requests that an older shepherd gets short sessions for.
    session: bool,
    /// Requests sent on the session, by number, each with where its answer goes.
    requests: Arc<Mutex<HashMap<u64, std::sync::mpsc::Sender<SessionAnswer>>>>,
    /// Set when the open session has ended.
    ended: Option<Arc<SessionEnd>>,
    /// The open session's server takes held starts (`shepherd::HELD_START`).
    held_starts: bool,
    /// Starts held by the open session's server ([`Launcher::hold`]); forgotten with the
    /// session (whose end dropped them).
    held: HashMap<(JobId, TaskId), HeldStart>,
}

/// A start held by a host's server ([`Launcher::hold`]).
struct HeldStart {
    /// Where its reply comes once it is committed.
    reply: std::sync::mpsc::Receiver<RunReply>,
    /// The thread that follows it once committed (started with the hold, so that the commit
    /// does not wait for a thread to start): it gets `reply` here, or ends when this goes.
    follower: std::sync::mpsc::Sender<std::sync::mpsc::Receiver<RunReply>>,
}

impl StartServer {
    /// Writes one line to the open session; false when there is none or it has ended.
    /// In one `write` (a `writeln!` on the pipe makes one per piece of the format, and the
    /// server wakes for each).
    fn send(&mut self, line: std::fmt::Arguments<'_>) -> bool {
        self.stdin.as_mut().is_some_and(|stdin| {
            let mut text = line.to_string();
            text.push('\n');
            stdin.write_all(text.as_bytes()).is_ok()
        })
    }
}

/// The end of a session, for the thread that follows the host (it opens the next).
#[derive(Default)]
struct SessionEnd {
    over: Mutex<bool>,
    cv: Condvar,
}

impl SessionEnd {
    fn set(&self) {
        *lock(&self.over) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut over = lock(&self.over);
        while !*over {
            over = self.cv.wait(over).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// What [`Inner::connect`] found or made.
enum Link {
    /// A session (`start-server --session`) that carries everything; ended when its
    /// [`SessionEnd`] is set.
    Session(Arc<SessionEnd>),
    /// A local host, or an ssh host whose shepherd is older than the session: its start
    /// server (if any) carries the starts and their results, the rest goes the older ways
    /// (a `watch` session and short sessions over a master connection).
    Older,
}

/// How many hosts a launcher connects to at once (a restarted master with many hosts):
/// each connection is an `ssh` process's handshake, which costs this machine and the host
/// CPU; more at once only queue for it. Hosts waiting for their turn are not unknown
/// (`HostLiveness::connection`).
const CONNECTS_AT_ONCE: u32 = 32;

/// How long a request on a session waits for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the probe waits for a host's load: its round goes through the hosts one by one,
/// and a host that does not answer soon is left for the next round.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts sent to a start server, by task, each with where its reply goes.
type WaitingStarts = HashMap<(JobId, TaskId), std::sync::mpsc::Sender<RunReply>>;

/// A watcher session that lasted this long was a steady one: the next is tried at once.
const STEADY_SESSION: Duration = Duration::from_secs(60);

/// The longest time between the starts of two attempts to reach a host (`sched_d(8)`
/// promises a host that is down is tried again at least this often).
pub const MAX_HOST_RETRY: Duration = Duration::from_secs(30);

/// Retries of a host that does not answer: the wait doubles from 1 s up to
/// [`MAX_HOST_RETRY`], and is counted from the start of the attempt that failed, so that
/// an attempt that took long (ssh's `ConnectTimeout` of 10 s on a cut link) does not push
/// the next one further out.
#[derive(Debug, Clone, Copy)]
struct Retry {
    backoff: Duration,
}

impl Retry {
    fn new() -> Self {
        Retry {
            backoff: Duration::from_secs(1),
        }
    }

    /// How long to sleep after an attempt that failed after `attempt_took`; the next wait
    /// is longer.
    fn failed(&mut self, attempt_took: Duration) -> Duration {
        let wait = self.backoff.saturating_sub(attempt_took);
        self.backoff = (self.backoff * 2).min(MAX_HOST_RETRY);
        wait
    }

    /// The next attempt is the first of a new round (a session that lasted).
    fn reset(&mut self) {
        self.backoff = Duration::from_secs(1);
    }
}

/// How long a sweep waits for the runs it killed to be collected from their host.
const SWEEP_COLLECT_AT_MOST: Duration = Duration::from_secs(60);

/// How long a start waits for the answer of the start server (the shepherd gives up on a
/// supervisor after 120 s).
const START_REPLY_TIMEOUT: Duration = Duration::from_secs(150);

struct HostState {
    name: String,
    target: Option<SshTarget>,
    exec_spool: PathBuf,
    sessions: Sessions,
    /// The pid of the master connection this launcher started or found, so that it can be
    /// ended even when its control socket is gone.
    master: Mutex<Option<u32>>,
    watcher: Mutex<WatcherHandle>,
    starter: Mutex<StartServer>,
    /// Supervisors started in this process (local hosts), reaped once they have exited.
    supervisors: Mutex<Vec<std::process::Child>>,
    /// Local hosts: the finished tasks the watcher has reported and whose directories are
    /// still there (not to be reported twice; forgotten when the directory goes).
    reported: Mutex<HashSet<(JobId, TaskId)>>,
    /// Tasks whose result came through the start server session with this pid: their
    /// acknowledgement goes back on that session (whose server removes the directory) as
    /// long as it lasts.
    served: Mutex<HashMap<(JobId, TaskId), SessionId>>,
    /// Held while a session with the host is being opened: one at a time.
    connecting: Mutex<()>,
    /// The host's shepherd was found older than the session protocol (its start server
    /// greeted with less, or not at all): the older ways are used for it.
    older: AtomicBool,
}

struct Inner {
    config: RwLock<ClusterConfig>,
    spool: Spool,
    events: Sender<LaunchEvent>,
    opts: LauncherOptions,
    running: Mutex<HashMap<(JobId, TaskId), Running>>,
    hosts: Mutex<HashMap<String, Arc<HostState>>>,
    /// Tasks whose `Ended` was sent, to drop duplicate reports (job ids are never reused in
    /// a spool).
    delivered: Mutex<Delivered>,
    /// Runs given up on a host that went unknown and killed there when it returned
    /// ([`Launcher::sweep`]): their results, (host, job, task), are removed, not reported.
    discard: Mutex<HashSet<(String, JobId, TaskId)>>,
    liveness: Arc<HostLiveness>,
    /// This `sched_d`, `host:pid`, as its sessions name it on the hosts: a start server
    /// left by another (a master replaced by its shadow) is ended there
    /// (`shepherd::displace_start_server`).
    master_id: String,
    shutdown: AtomicBool,
    /// The sessions of running pe tasks (`qrsh -inherit`), by the task they belong to: the
    /// standard input of each, whose closing ends it.
    pe_tasks: Mutex<HashMap<(JobId, TaskId), Vec<PeTaskSession>>>,
    /// Bounds the ssh connections being opened at once ([`CONNECTS_AT_ONCE`]).
    connect_slots: Sessions,
    /// The number of the next request on a session.
    next_request: AtomicU64,
}

/// A running pe task's id and its shepherd's standard input.
type PeTaskSession = (String, std::process::ChildStdin);

/// A bounded set of recently delivered tasks, and whether the scheduler has acknowledged
/// each (its result is durable on the scheduler's side, so the task directory may go).
#[derive(Default)]
struct Delivered {
    acked: HashMap<(JobId, TaskId), bool>,
    order: std::collections::VecDeque<(JobId, TaskId)>,
}

impl Delivered {
    const CAPACITY: usize = 1 << 16;

    /// Adds a task; `false` if it was there already.
    fn insert(&mut self, key: (JobId, TaskId)) -> bool {
        if self.acked.contains_key(&key) {
            return false;
        }
        self.acked.insert(key, false);
        self.order.push_back(key);
        if self.order.len() > Self::CAPACITY
            && let Some(old) = self.order.pop_front()
        {
            self.acked.remove(&old);
        }
        true
    }

    fn is_acked(&self, key: (JobId, TaskId)) -> bool {
        self.acked.get(&key).copied().unwrap_or(false)
    }

    /// Marks a task acknowledged (adding it: a task acknowledged before any report of it,
    /// after a restart, is then removed when its host reports it).
    fn ack(&mut self, key: (JobId, TaskId)) {
        self.insert(key);
        self.acked.insert(key, true);
    }
}

/// A task to follow again after a restart ([`Launcher::reattach`]).
#[derive(Debug, Clone)]
pub struct Reattach {
    pub job: JobId,
    pub task: TaskId,
    pub host: String,
    /// It was being handed to its host (`t`), not known to run.
    pub transferring: bool,
}

impl Reattach {
    /// A task known to run on `host`.
    pub fn running(job: JobId, task: TaskId, host: String) -> Self {
        Reattach {
            job,
            task,
            host,
            transferring: false,
        }
    }
}

/// Starts tasks on their hosts and reports what becomes of them. Dropping it stops the
/// watchers and closes ssh master connections; running jobs carry on (see
/// [`Launcher::reattach`]).
pub struct Launcher {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Launcher {
    /// A launcher with [`LauncherOptions::defaults`].
    pub fn new(
        config: &ClusterConfig,
        spool: &Spool,
        events: Sender<LaunchEvent>,
    ) -> Result<Self, LaunchError> {
        Self::with_options(config, spool, events, LauncherOptions::defaults(spool)?)
    }

    pub fn with_options(
        config: &ClusterConfig,
        spool: &Spool,
        events: Sender<LaunchEvent>,
        opts: LauncherOptions,
    ) -> Result<Self, LaunchError> {
        Self::with_liveness(config, spool, events, opts, Arc::new(HostLiveness::new()))
    }

    /// A launcher that records what it hears from hosts in `liveness` (shared with the host
    /// probe), follows every ssh host from the start (a watcher session each, so that a host
    /// without tasks is heard too), and reports hosts that fall silent.
    pub fn with_liveness(
        config: &ClusterConfig,
        spool: &Spool,
        events: Sender<LaunchEvent>,
        opts: LauncherOptions,
        liveness: Arc<HostLiveness>,
    ) -> Result<Self, LaunchError> {
        if !opts.shepherd.is_file() {
            return Err(LaunchError::NoShepherd {
                path: opts.shepherd.clone(),
            });
        }
        if config
            .hosts
            .iter()
            .any(|h| !matches!(h.launch, crate::config::LaunchMethod::Local))
        {
            create_private_dir(&opts.control_dir)?;
        }
        let connects_at_once = opts.connects_at_once;
        let inner = Arc::new(Inner {
            config: RwLock::new(config.clone()),
            spool: spool.clone(),
            events,
            opts,
            running: Mutex::new(HashMap::new()),
            hosts: Mutex::new(HashMap::new()),
            delivered: Mutex::new(Delivered::default()),
            discard: Mutex::new(HashSet::new()),
            liveness,
            master_id: format!(
                "{}:{}",
                crate::identity::short_hostname(),
                std::process::id()
            ),
            shutdown: AtomicBool::new(false),
            pe_tasks: Mutex::new(HashMap::new()),
            connect_slots: Sessions::new(connects_at_once),
            next_request: AtomicU64::new(1),
        });
        let requests: std::sync::Weak<dyn HostRequests> = Arc::downgrade(&inner) as _;
        inner.liveness.serve_requests(requests);
        let watching = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("host-liveness".into())
            .spawn(move || watching.watch_liveness())
            .map_err(|e| LaunchError::io("spawn thread", "host-liveness", e))?;
        inner.watch_all_hosts();
        Ok(Launcher { inner })
    }

    /// Stops following a task that was rescheduled off its (unknown) host: it may be started
    /// again, elsewhere. A result that its host reports later still comes, as an `Ended` from
    /// that host, for the scheduler to decide on (see [`Launcher::sweep`]).
    pub fn forget(&self, job: JobId, task: TaskId) {
        lock(&self.inner.running).remove(&(job, task));
    }

    /// Settles runs given up on `host` (rescheduled while it was unknown), once the host
    /// answers (asked again with backoff until it does): a run still going there is killed
    /// and its result dropped, as SGE's execd is told to kill a job it reports that was
    /// rescheduled; a run that is not there is gone. Both are reported in one
    /// [`LaunchEvent::Swept`]. A run whose result is there is reported by the watcher as an
    /// `Ended` from `host`: the result the shepherd kept.
    pub fn sweep(&self, host: &str, tasks: Vec<(JobId, TaskId)>) -> Result<(), LaunchError> {
        let state = self.inner.host(host)?;
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("sweep-{host}"))
            .spawn(move || inner.sweep_host(&state, &tasks))
            .map_err(|e| LaunchError::io("spawn thread", "sweep", e))?;
        Ok(())
    }

    /// Starts a task; returns at once. `Started` and later `Ended` (or `Failed`) arrive as
    /// events.
    pub fn start(&self, spec: LaunchSpec) -> Result<(), LaunchError> {
        let host = self.inner.host(&spec.host)?;
        let key = (spec.job, spec.task);
        {
            let mut running = lock(&self.inner.running);
            if running.contains_key(&key) {
                return Err(LaunchError::Refused(format!(
                    "task {} is already running",
                    spec.task_name()
                )));
            }
            running.insert(
                key,
                Running {
                    host: spec.host.clone(),
                    started: false,
                    early_result: None,
                    pending_kill: None,
                    pending_suspend: None,
                },
            );
        }
        tracing::info!(job = %spec.job, task = spec.task, host = %spec.host, "starting task");
        let held = lock(&host.starter).held.remove(&key);
        if let Some(held) = held {
            // Committed; a session that ended meanwhile dropped it: the reply's sender is
            // gone with its waiters, and the host is asked whether the task is there.
            let _ = lock(&host.starter).send(format_args!(
                "{}{}.{}",
                shepherd::GO,
                spec.job,
                spec.task
            ));
            let _ = held.follower.send(held.reply);
            return Ok(());
        }
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("start-{}", spec.task_name()))
            .spawn(move || inner.start_task(&host, spec, None))
            .map_err(|e| LaunchError::io("spawn thread", "start", e))?;
        Ok(())
    }

    /// This `sched_d` as its start servers name it on the hosts (`host:pid`).
    pub fn master_id(&self) -> &str {
        &self.inner.master_id
    }

    /// Prepares a task on its host while its dispatch is made durable
    /// (`shepherd::HELD_START`): `true` when the host's start server holds it now; then
    /// [`Launcher::start`] with the same spec commits it, and [`Launcher::release`] lets it
    /// go. `false` leaves everything to `start`: the host has no open session, or its server
    /// does not take held starts. Never waits for a host (no session is opened here).
    pub fn hold(&self, spec: &LaunchSpec) -> bool {
        let Ok(host) = self.inner.host(&spec.host) else {
            return false;
        };
        let Ok(line) = serde_json::to_string(spec) else {
            return false;
        };
        let key = (spec.job, spec.task);
        let reply = {
            let mut st = lock(&host.starter);
            if !st.held_starts || st.stdin.is_none() || st.held.contains_key(&key) {
                return false;
            }
            // First to the host, whose preparation is what the sync may end up waiting for.
            let (tx, reply) = std::sync::mpsc::channel();
            lock(&st.waiting).insert(key, tx);
            if !st.send(format_args!("{}{line}", shepherd::HELD_START)) {
                lock(&st.waiting).remove(&key);
                return false;
            }
            reply
        };
        // The thread that will follow the task once it is committed, started now: a start
        // committed with nobody to follow it would run unaccounted for.
        let (follower, committed) = std::sync::mpsc::channel();
        let inner = Arc::clone(&self.inner);
        let follow = Arc::clone(&host);
        let follow_spec = spec.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("start-{}", spec.task_name()))
            .spawn(move || {
                if let Ok(reply) = committed.recv() {
                    inner.start_task(&follow, follow_spec, Some(reply));
                }
            });
        let mut st = lock(&host.starter);
        if spawned.is_err() {
            lock(&st.waiting).remove(&key);
            let _ = st.send(format_args!("{}{}.{}", shepherd::DROP, spec.job, spec.task));
            return false;
        }
        st.held.insert(key, HeldStart { reply, follower });
        true
    }

    /// A held task's dispatch did not become durable: its host lets it go, and it was never
    /// there.
    pub fn release(&self, job: JobId, task: TaskId, host: &str) {
        let Ok(host) = self.inner.host(host) else {
            return;
        };
        let mut st = lock(&host.starter);
        if st.held.remove(&(job, task)).is_some() {
            lock(&st.waiting).remove(&(job, task));
            let _ = st.send(format_args!("{}{job}.{task}", shepherd::DROP));
        }
    }

    /// Starts a pe task (`qrsh -inherit`, see [`super::pe_task`]) on `spec.host`; returns
    /// at once. Its end comes as [`LaunchEvent::PeTaskEnded`], also when it could not start.
    pub fn start_pe_task(&self, spec: LaunchSpec) -> Result<(), LaunchError> {
        let host = self.inner.host(&spec.host)?;
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("pe-task-{}", spec.task_name()))
            .spawn(move || {
                let result = inner.run_pe_task(&host, &spec);
                let key = (spec.job, spec.task);
                let mut sessions = lock(&inner.pe_tasks);
                if let Some(list) = sessions.get_mut(&key) {
                    list.retain(|(id, _)| Some(id) != spec.pe_task.as_ref());
                    if list.is_empty() {
                        sessions.remove(&key);
                    }
                }
                drop(sessions);
                inner.send(LaunchEvent::PeTaskEnded(Box::new(result)));
            })
            .map_err(|e| LaunchError::io("spawn thread", "pe task", e))?;
        Ok(())
    }

    /// Ends the pe tasks of a task (it has ended, as SGE ends them with their job): their
    /// sessions' input is closed, their shepherds kill them and report their ends.
    pub fn end_pe_tasks(&self, job: JobId, task: TaskId) {
        if let Some(list) = lock(&self.inner.pe_tasks).remove(&(job, task)) {
            tracing::info!(job = %job, task, count = list.len(), "ending pe tasks");
        }
    }

    /// Kills a task's whole process tree (`qdel`). With `notify` (a `-notify` job), the job
    /// gets SIGUSR2 first and SIGKILL after the queue's notify time.
    pub fn kill(&self, job: JobId, task: TaskId, notify: bool) -> Result<(), LaunchError> {
        tracing::info!(job = %job, task, notify, "killing task");
        self.to_task_host(
            job,
            task,
            "kill",
            |entry| entry.pending_kill = Some(notify),
            move |inner, host| inner.remote_kill(host, job, task, notify),
        )
    }

    /// Stops (`stop`, `qmod -s`) or continues (`qmod -us`) a task's whole process tree on
    /// its host, and its pe tasks on theirs. Requests carry a sequence number, so that a stop and a continue sent in
    /// quick succession over two ssh sessions are applied in the order they were made.
    pub fn suspend(&self, job: JobId, task: TaskId, stop: bool) -> Result<(), LaunchError> {
        let seq = super::suspend::next_sequence();
        tracing::info!(job = %job, task, stop, "suspension");
        // Its pe tasks on their hosts with it, each by a line on its own session (in order).
        if let Some(list) = lock(&self.inner.pe_tasks).get_mut(&(job, task)) {
            let order = if stop {
                super::pe_task::SUSPEND
            } else {
                super::pe_task::RESUME
            };
            for (pe_task, stdin) in list.iter_mut() {
                if let Err(e) = writeln!(stdin, "{order}").and_then(|()| stdin.flush()) {
                    tracing::warn!(job = %job, task, pe_task, "cannot {order} the pe task: {e}");
                }
            }
        }
        self.to_task_host(
            job,
            task,
            "suspend",
            |entry| entry.pending_suspend = Some((stop, seq)),
            move |inner, host| inner.remote_suspend(host, job, task, stop, seq),
        )
    }

    /// Carries `order` out on the host of a started task: at once for a local host, on a
    /// thread of its own for an ssh host (a remote command must not hold `sched_d` up). A
    /// task whose start is still under way gets it when it has started: `defer` keeps it.
    fn to_task_host(
        &self,
        job: JobId,
        task: TaskId,
        what: &'static str,
        defer: impl FnOnce(&mut Running),
        order: impl FnOnce(&Arc<Inner>, &Arc<HostState>) -> Result<(), LaunchError> + Send + 'static,
    ) -> Result<(), LaunchError> {
        let host_name = {
            let mut running = lock(&self.inner.running);
            let entry = running
                .get_mut(&(job, task))
                .ok_or(LaunchError::NotRunning { job, task })?;
            if !entry.started {
                defer(entry);
                return Ok(());
            }
            entry.host.clone()
        };
        let host = self.inner.host(&host_name)?;
        if host.target.is_none() {
            return order(&self.inner, &host);
        }
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("{what}-{job}.{task}"))
            .spawn(move || {
                if let Err(e) = order(&inner, &host) {
                    tracing::warn!(job = %job, task, "{what} failed: {e}");
                }
            })
            .map_err(|e| LaunchError::io("spawn thread", what, e))?;
        Ok(())
    }

    /// The scheduler has made the result of a task durable (accounting record, exits line):
    /// its directory on `host` may go. Until then a result survives a `sched_d` crash on
    /// the host, and the next launcher reports it again. Acknowledging a task that is not
    /// there (already removed, lost) does nothing; a task still running is never removed.
    pub fn acknowledge(&self, job: JobId, task: TaskId, host: &str) {
        lock(&self.inner.delivered).ack((job, task));
        match self.inner.host(host) {
            Ok(h) => self.inner.remove_task_dir(&h, job, task),
            Err(e) => tracing::warn!(job = %job, task, host, "cannot acknowledge: {e}"),
        }
    }

    /// After a `sched_d` restart: takes over the tasks the spool says are running (or, with
    /// `transferring`, were being handed to their host). Their results are collected as
    /// usual; a task whose host has no trace of it ends with `failed 100` and an error saying
    /// it was lost — unless it was only being handed to an ssh host's start server: the
    /// query that finds it missing ends the previous master's start server first, so it
    /// never started and never will, and it is reported [`LaunchEvent::NeverStarted`]. A
    /// host that cannot be reached is retried by its watcher; its tasks stay registered
    /// (they may well still be running).
    pub fn reattach(&self, running: &[Reattach]) -> Result<(), LaunchError> {
        let mut by_host: HashMap<String, Vec<(JobId, TaskId)>> = HashMap::new();
        let transferring: HashSet<(JobId, TaskId)> = running
            .iter()
            .filter(|r| r.transferring)
            .map(|r| (r.job, r.task))
            .collect();
        {
            let mut map = lock(&self.inner.running);
            for Reattach {
                job, task, host, ..
            } in running
            {
                map.entry((*job, *task)).or_insert(Running {
                    host: host.clone(),
                    started: true,
                    early_result: None,
                    pending_kill: None,
                    pending_suspend: None,
                });
                by_host.entry(host.clone()).or_default().push((*job, *task));
            }
        }
        for (name, tasks) in by_host {
            let host = match self.inner.host(&name) {
                Ok(h) => h,
                Err(e) => {
                    for (job, task) in tasks {
                        self.inner.lost(job, task, &name, &e.to_string());
                    }
                    continue;
                }
            };
            let inner = Arc::clone(&self.inner);
            let handed: HashSet<(JobId, TaskId)> = tasks
                .iter()
                .filter(|k| transferring.contains(*k))
                .copied()
                .collect();
            std::thread::Builder::new()
                .name(format!("reattach-{name}"))
                .spawn(move || inner.reattach_host(&host, &tasks, &handed))
                .map_err(|e| LaunchError::io("spawn thread", "reattach", e))?;
        }
        Ok(())
    }

    /// Takes a new configuration (SIGHUP). Hosts whose launch method changed get a new
    /// connection and watcher; tasks running there carry on.
    pub fn reconfigure(&self, config: &ClusterConfig) {
        *self.inner.config.write().unwrap_or_else(|e| e.into_inner()) = config.clone();
        let mut hosts = lock(&self.inner.hosts);
        let stale: Vec<String> = hosts
            .iter()
            .filter(|(name, state)| {
                let now = config.host(name).and_then(|h| {
                    SshTarget::from_config(name, &h.launch, &self.inner.opts.control_dir)
                });
                now.as_ref()
                    .map(|t| (&t.address, t.port, &t.user, &t.options, t.client))
                    != state
                        .target
                        .as_ref()
                        .map(|t| (&t.address, t.port, &t.user, &t.options, t.client))
            })
            .map(|(n, _)| n.clone())
            .collect();
        for name in stale {
            if let Some(old) = hosts.remove(&name) {
                stop_watcher(&old);
            }
        }
        let running_hosts: HashSet<String> = lock(&self.inner.running)
            .values()
            .map(|r| r.host.clone())
            .collect();
        drop(hosts);
        for name in running_hosts {
            if let Ok(h) = self.inner.host(&name) {
                self.inner.ensure_watcher(&h);
            }
        }
        self.inner.watch_all_hosts();
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        let hosts: Vec<Arc<HostState>> = lock(&self.inner.hosts).values().cloned().collect();
        for h in hosts {
            stop_watcher(&h);
            if let Some(t) = &h.target
                && (h.older.load(Ordering::SeqCst) || lock(&h.master).is_some())
            {
                t.close_master();
                // The socket may be gone (a removed spool): end the master by its pid, after
                // checking that the pid is still an ssh process.
                if let Some(pid) = lock(&h.master).take()
                    && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|c| c.trim() == "ssh")
                {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGTERM,
                    );
                }
            }
        }
    }
}

fn stop_watcher(host: &HostState) {
    {
        let mut st = lock(&host.starter);
        st.stdin = None;
        if let Some(session) = st.pid.take() {
            session.end();
        }
    }
    let mut w = lock(&host.watcher);
    w.acks = None;
    if let Some(pid) = w.pid.take() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

/// A request's answer as the outcome of a kill or suspension: its error is a refusal.
fn carried_out(answer: Result<SessionAnswer, LaunchError>) -> Result<(), LaunchError> {
    match answer? {
        SessionAnswer {
            error: Some(why), ..
        } => Err(LaunchError::Refused(why)),
        _ => Ok(()),
    }
}

impl HostRequests for Inner {
    /// Over an open session only: a probe round does not open connections. A host not
    /// followed yet, or whose session is being opened, has no answer now; `None` only for a
    /// host with an older shepherd, which the probe reaches itself.
    fn probe_text(&self, name: &str) -> Option<Result<String, String>> {
        let host = lock(&self.hosts).get(name).cloned();
        let Some(host) = host else {
            return Some(Err(format!("{name} is not connected yet")));
        };
        if host.target.is_none() || host.older.load(Ordering::SeqCst) {
            return None;
        }
        Some(
            match self.send_request(&host, SessionOp::Probe, PROBE_TIMEOUT) {
                Ok(SessionAnswer {
                    error: Some(why), ..
                }) => Err(why),
                Ok(answer) => Ok(answer.text.unwrap_or_default()),
                Err(e) => Err(e.to_string()),
            },
        )
    }
}

/// The task states in the output of `gridspool-shepherd query` (other lines passed over).
fn task_states(stdout: &[u8]) -> impl Iterator<Item = TaskState> + '_ {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
}

/// Creates the directory of the control sockets, private to us. One that exists already must
/// be a real directory of ours: in a shared directory such as `/tmp` another user could
/// have made it first, and a socket planted there would sit between us and every host.
fn create_private_dir(dir: &Path) -> Result<(), LaunchError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::create_dir_all(dir).map_err(|e| LaunchError::io("mkdir", dir, e))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| LaunchError::io("stat", dir, e))?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.file_type().is_dir() || meta.uid() != me {
        return Err(LaunchError::io(
            "use",
            dir,
            std::io::Error::other(format!(
                "not a directory owned by uid {me}: refusing to keep ssh control sockets there"
            )),
        ));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| LaunchError::io("chmod", dir, e))
}

impl Inner {
    fn host(&self, name: &str) -> Result<Arc<HostState>, LaunchError> {
        let mut hosts = lock(&self.hosts);
        if let Some(h) = hosts.get(name) {
            return Ok(Arc::clone(h));
        }
        let config = self.config.read().unwrap_or_else(|e| e.into_inner());
        let hc = config.host(name).ok_or_else(|| LaunchError::UnknownHost {
            host: name.to_string(),
        })?;
        let target = SshTarget::from_config(name, &hc.launch, &self.opts.control_dir);
        if target.is_some() {
            create_private_dir(&self.opts.control_dir)?;
        }
        // Local hosts: a bound on shepherds being started at once (a burst of array tasks
        // would otherwise fork hundreds at the same moment). Ssh hosts with an older
        // shepherd: the watcher holds one session of the master connection and the start
        // server another, if there is room for it (3 or more). (The session of a current
        // shepherd is a connection of its own: `max_sessions` does not bound it.)
        let with_start_server = match &target {
            Some(_) => true,
            None => self.opts.local_start_server,
        };
        let short_sessions = target.as_ref().map_or(LOCAL_CONCURRENT_STARTS, |t| {
            t.max_sessions
                .saturating_sub(if t.max_sessions >= 3 { 2 } else { 1 })
        });
        let state = Arc::new(HostState {
            name: name.to_string(),
            exec_spool: exec_spool_dir(self.spool.root(), name),
            target,
            sessions: Sessions::new(short_sessions),
            master: Mutex::new(None),
            watcher: Mutex::new(WatcherHandle::default()),
            starter: Mutex::new(StartServer {
                unsupported: !with_start_server,
                ..StartServer::default()
            }),
            supervisors: Mutex::new(Vec::new()),
            reported: Mutex::new(HashSet::new()),
            served: Mutex::new(HashMap::new()),
            connecting: Mutex::new(()),
            older: AtomicBool::new(false),
        });
        hosts.insert(name.to_string(), Arc::clone(&state));
        Ok(state)
    }

    fn send(&self, event: LaunchEvent) -> bool {
        self.events.send(event).is_ok()
    }

    fn remote_shepherd(&self) -> String {
        self.opts
            .remote_shepherd
            .clone()
            .unwrap_or_else(|| self.opts.shepherd.to_string_lossy().into_owned())
    }

    fn ensure_master(&self, host: &HostState) -> Result<(), LaunchError> {
        let Some(t) = &host.target else {
            return Ok(());
        };
        let mut master = lock(&host.master);
        let pid = t.ensure_master()?;
        if pid.is_some() {
            *master = pid;
        }
        Ok(())
    }

    /// Starts a task and follows it. `committed`: its held start was committed
    /// ([`Launcher::start`]), and its reply comes here.
    fn start_task(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        spec: LaunchSpec,
        committed: Option<std::sync::mpsc::Receiver<RunReply>>,
    ) {
        let reply = match committed {
            Some(rx) => match rx.recv_timeout(START_REPLY_TIMEOUT) {
                Ok(reply) => Ok(reply),
                // The session ended (or hung) after the commit was sent: ask the host.
                Err(_) => self.started_after_all(host, &spec),
            },
            None => self.start_unheld(host, &spec),
        };
        self.started(host, spec.job, spec.task, reply);
    }

    /// A start that was not held: through the host's start server, or a session or `exec`
    /// of its own.
    fn start_unheld(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        spec: &LaunchSpec,
    ) -> Result<RunReply, LaunchError> {
        match &host.target {
            None => match self.start_via_server(host, spec) {
                Some(reply) => reply,
                None => {
                    let _permit = host.sessions.acquire();
                    self.run_local(host, spec)
                }
            },
            Some(t) => match self.start_via_server(host, spec) {
                Some(reply) => reply,
                None => self.ensure_master(host).and_then(|()| {
                    let json = serde_json::to_vec(spec)
                        .map_err(|e| LaunchError::Protocol(e.to_string()))?;
                    let _permit = host.sessions.acquire();
                    let out = t.run(&[self.remote_shepherd(), "run".to_string()], &json)?;
                    parse_reply(&host.name, &out.stdout, &out.stderr)
                }),
            },
        }
    }

    /// What follows a start's reply: `Started` and the task followed, or `Failed`.
    fn started(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        job: JobId,
        task: TaskId,
        reply: Result<RunReply, LaunchError>,
    ) {
        match reply {
            Ok(RunReply::Started { pid }) => {
                tracing::info!(job = %job, task, host = %host.name, pid, "task started");
                self.send(LaunchEvent::Started {
                    job,
                    task,
                    host: host.name.clone(),
                    pid,
                });
                let (early, kill, suspension) = {
                    let mut running = lock(&self.running);
                    match running.get_mut(&(job, task)) {
                        Some(r) => {
                            r.started = true;
                            (
                                r.early_result.take(),
                                r.pending_kill.take(),
                                r.pending_suspend.take(),
                            )
                        }
                        None => (None, None, None),
                    }
                };
                self.ensure_watcher(host);
                if let Some(result) = early {
                    self.deliver(host, result);
                } else if let Some(notify) = kill {
                    let outcome = match host.target {
                        None => shepherd::request_kill(&host.exec_spool, job, task, notify),
                        Some(_) => self.remote_kill(host, job, task, notify),
                    };
                    if let Err(e) = outcome {
                        tracing::warn!(job = %job, task, "kill failed: {e}");
                    }
                } else if let Some((stop, seq)) = suspension
                    && let Err(e) = self.remote_suspend(host, job, task, stop, seq)
                {
                    tracing::warn!(job = %job, task, "suspension failed: {e}");
                }
            }
            Ok(RunReply::Failed { error, host_fault }) => {
                tracing::warn!(job = %job, task, host = %host.name, host_fault, "task not started: {error}");
                lock(&self.running).remove(&(job, task));
                // A host that cannot run jobs is treated like an unreachable one: the task
                // is requeued and the host marked, instead of the job going to `Eqw`.
                self.send(LaunchEvent::Failed {
                    job,
                    task,
                    host: host.name.clone(),
                    error,
                    host_unreachable: host_fault,
                });
            }
            Err(e) => {
                let unreachable = matches!(e, LaunchError::Unreachable { .. });
                tracing::warn!(job = %job, task, host = %host.name, unreachable, "task not started: {e}");
                lock(&self.running).remove(&(job, task));
                self.send(LaunchEvent::Failed {
                    job,
                    task,
                    host: host.name.clone(),
                    error: e.to_string(),
                    host_unreachable: unreachable,
                });
            }
        }
    }

    /// Starts a task through the host's start server, opening the session (or for a local
    /// host, starting the server) if need be; `None` when the host has none (the task then
    /// gets a session of its own, or for a local host an `exec` of its supervisor).
    fn start_via_server(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        spec: &LaunchSpec,
    ) -> Option<Result<RunReply, LaunchError>> {
        let key = (spec.job, spec.task);
        let line = serde_json::to_string(spec).ok()?;
        // A session that ended between two looks is opened again once.
        for attempt in 0..2 {
            let open = {
                let st = lock(&host.starter);
                if st.unsupported {
                    return None;
                }
                st.stdin.is_some()
            };
            if !open {
                match self.connect(host) {
                    Ok(_) => {}
                    // A local start server that cannot be started now: this task gets the
                    // exec of its supervisor, and the next start tries the server again.
                    Err(e) if host.target.is_none() => {
                        tracing::warn!(host = %host.name, "cannot start the start server: {e}");
                        return None;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            let rx = {
                let mut st = lock(&host.starter);
                if st.unsupported {
                    tracing::info!(host = %host.name, "the shepherd there has no start server: a session per task");
                    return None;
                }
                let (tx, rx) = std::sync::mpsc::channel();
                lock(&st.waiting).insert(key, tx);
                if !st.send(format_args!("{line}")) {
                    // The session is gone; the task never reached it.
                    lock(&st.waiting).remove(&key);
                    st.stdin = None;
                    // A host reached only through its session (no master connection to
                    // fall back on) gets a new one.
                    let again = host.target.is_some() && st.session && attempt == 0;
                    drop(st);
                    if again {
                        continue;
                    }
                    if host.target.is_some() && !host.older.load(Ordering::SeqCst) {
                        return Some(Err(LaunchError::Unreachable {
                            host: host.name.clone(),
                            reason: "the session with the host ended".to_string(),
                        }));
                    }
                    return None;
                }
                rx
            };
            return match rx.recv_timeout(START_REPLY_TIMEOUT) {
                Ok(reply) => Some(Ok(reply)),
                // The session ended (or hung) after the spec was sent: the task may have
                // started. Ask the host rather than start it again.
                Err(_) => Some(self.started_after_all(host, spec)),
            };
        }
        None
    }

    /// Whether a task whose start went unanswered exists on its host: then it started (its
    /// result comes through the watcher); else it is reported unreachable, to be requeued.
    fn started_after_all(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        spec: &LaunchSpec,
    ) -> Result<RunReply, LaunchError> {
        let unanswered = |why: String| LaunchError::Unreachable {
            host: host.name.clone(),
            reason: format!(
                "the start of task {} went unanswered: {why}",
                spec.task_name()
            ),
        };
        let there = self
            .host_task_states(host)
            .map_err(|e| unanswered(e.to_string()))?
            .iter()
            .any(|s| s.job == spec.job && s.task == spec.task);
        if there {
            Ok(RunReply::Started { pid: 0 })
        } else {
            Err(unanswered("not on the host".to_string()))
        }
    }

    /// Runs `gridspool-shepherd query` on an ssh host, in one of its short sessions: one
    /// [`TaskState`] line per task directory there.
    fn remote_query(
        &self,
        host: &HostState,
        t: &SshTarget,
    ) -> Result<std::process::Output, LaunchError> {
        self.ensure_master(host)?;
        let _permit = host.sessions.acquire();
        let words = vec![
            self.remote_shepherd(),
            "query".to_string(),
            host.exec_spool.to_string_lossy().into_owned(),
            "--master".to_string(),
            self.master_id.clone(),
        ];
        t.run(&words, b"")
    }

    /// The host's start-server session, opened if there is none (one opening at a time per
    /// host, at most [`CONNECTS_AT_ONCE`] ssh hosts at once). A host whose shepherd does not
    /// speak the start server is marked `unsupported`.
    fn connect(self: &Arc<Self>, host: &Arc<HostState>) -> Result<Link, LaunchError> {
        let _one_at_a_time = lock(&host.connecting);
        {
            let st = lock(&host.starter);
            if st.stdin.is_some() || st.unsupported {
                return Ok(match &st.ended {
                    Some(end) if st.session && st.stdin.is_some() => Link::Session(Arc::clone(end)),
                    _ => Link::Older,
                });
            }
        }
        let _slot = host.target.as_ref().map(|_| self.connect_slots.acquire());
        match self.open_start_server(host)? {
            Some(link) => Ok(link),
            None => {
                lock(&host.starter).unsupported = true;
                host.older.store(host.target.is_some(), Ordering::SeqCst);
                Ok(Link::Older)
            }
        }
    }

    /// Opens the host's start-server session: `None` when the shepherd there does not
    /// answer with the start server's greeting (an older shepherd), or (an ssh host whose
    /// shepherd predates the session, with `max_sessions` below 3) there is no room for it
    /// beside the watcher on the master connection. For an ssh host it is the host's one
    /// connection (`--session`: see [`START_SERVER_SESSION_VERSION`]). For a local host the
    /// start server is our child, reached only through its stdin and stdout pipes (nothing
    /// else can ask it to start anything), in a process group of its own (a terminal's
    /// SIGINT to `sched_d`'s group does not end it); it exits when its stdin ends, so also
    /// when `sched_d` dies, and the supervisors it started carry on.
    fn open_start_server(
        self: &Arc<Self>,
        host: &Arc<HostState>,
    ) -> Result<Option<Link>, LaunchError> {
        // Asked how the host confines tasks, which the start server says in its greeting.
        let (cgroups, heartbeat) = {
            let config = self.config.read().unwrap_or_else(|e| e.into_inner());
            (
                config
                    .host(&host.name)
                    .and_then(|h| h.cgroups.policy())
                    .map_or_else(|| "off".to_string(), |p| p.parent),
                config.heartbeat_interval(),
            )
        };
        let mut transport = match &host.target {
            Some(t) => Transport::ssh(
                t,
                &[
                    self.remote_shepherd(),
                    "start-server".to_string(),
                    "--results".to_string(),
                    "--session".to_string(),
                    "--heartbeat".to_string(),
                    heartbeat.as_millis().to_string(),
                    "--poll".to_string(),
                    self.opts.poll_interval.as_millis().to_string(),
                    "--master".to_string(),
                    self.master_id.clone(),
                    "--spool".to_string(),
                    host.exec_spool.to_string_lossy().into_owned(),
                    "--cgroups".to_string(),
                    cgroups,
                ],
            )?,
            None => {
                use std::os::unix::process::CommandExt;
                let mut command = std::process::Command::new(&self.opts.shepherd);
                // Recorded in the execution spool as this master's, so that the next master
                // ends it before it looks for the tasks it was handed (a `go` still in its
                // input is then never carried out: see `LaunchRunner::reattach`).
                command
                    .args(["start-server", "--results", "--cgroups", &cgroups])
                    .arg("--master")
                    .arg(&self.master_id)
                    .arg("--spool")
                    .arg(&host.exec_spool)
                    .stderr(Stdio::inherit())
                    .process_group(0);
                Transport::local(command)?
            }
        };
        let Some((stdin, out)) = transport.take_io() else {
            transport.kill();
            transport.wait();
            return Ok(None);
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out);
            let mut line = String::new();
            let n = reader.read_line(&mut line).unwrap_or(0);
            let _ = tx.send((n, line, reader));
        });
        let (reader, hello) = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok((n, line, reader)) => (
                reader,
                (n > 0)
                    .then(|| serde_json::from_str::<StartServerHello>(line.trim()).ok())
                    .flatten(),
            ),
            Err(_) => {
                transport.kill();
                transport.wait();
                return Err(LaunchError::Unreachable {
                    host: host.name.clone(),
                    reason: "the start server did not answer within 30 s".to_string(),
                });
            }
        };
        let Some(hello) = hello else {
            transport.kill();
            if let Some(why) = transport.wait()
                && host.target.is_some()
            {
                return Err(LaunchError::Unreachable {
                    host: host.name.clone(),
                    reason: format!("the start server's session failed: {why}"),
                });
            }
            return Ok(None);
        };
        let session = host.target.is_some() && hello.start_server >= START_SERVER_SESSION_VERSION;
        if host.target.as_ref().is_some_and(|t| t.max_sessions < 3) && !session {
            transport.kill();
            transport.wait();
            return Ok(None);
        }
        host.older
            .store(host.target.is_some() && !session, Ordering::SeqCst);
        let pid = transport.id();
        let results = hello.start_server >= START_SERVER_RESULTS_VERSION;
        tracing::info!(host = %host.name, %pid, results, session, "start server running");
        if let Some(how) = &hello.confinement {
            tracing::info!(host = %host.name, "tasks there run under {how}");
        }
        let end = Arc::new(SessionEnd::default());
        let (waiting, requests) = {
            let mut st = lock(&host.starter);
            st.stdin = Some(stdin);
            st.pid = Some(pid);
            st.results = results;
            st.session = session;
            st.ended = Some(Arc::clone(&end));
            st.held_starts = hello.held_starts;
            st.held.clear();
            (Arc::clone(&st.waiting), Arc::clone(&st.requests))
        };
        let h = Arc::clone(host);
        let inner = Arc::clone(self);
        let ended = Arc::clone(&end);
        let spawned = std::thread::Builder::new()
            .name(format!("starts-{}", host.name))
            .spawn(move || {
                for line in reader.lines() {
                    let Ok(line) = line else { break };
                    inner.heard(&h);
                    if results && line.starts_with("{\"result\"") {
                        match serde_json::from_str::<ServerResult>(&line) {
                            Ok(r) => {
                                lock(&h.served).insert((r.result.job, r.result.task), pid);
                                inner.deliver(&h, r.result);
                            }
                            Err(e) => {
                                tracing::warn!(host = %h.name, "bad start server line {line:?}: {e}")
                            }
                        }
                        continue;
                    }
                    if session && line.starts_with("{\"answer\"") {
                        match serde_json::from_str::<SessionAnswer>(&line) {
                            Ok(a) => {
                                if let Some(tx) = lock(&requests).remove(&a.answer) {
                                    let _ = tx.send(a);
                                }
                            }
                            Err(e) => {
                                tracing::warn!(host = %h.name, "bad start server line {line:?}: {e}")
                            }
                        }
                        continue;
                    }
                    if session && line.starts_with("{\"msg\"") {
                        // The heartbeat: heard, nothing more.
                        continue;
                    }
                    match serde_json::from_str::<StartReply>(&line) {
                        Ok(r) => {
                            if let Some(tx) = lock(&waiting).remove(&(r.job, r.task)) {
                                let _ = tx.send(r.reply);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(host = %h.name, "bad start server line {line:?}: {e}")
                        }
                    }
                }
                {
                    let mut st = lock(&h.starter);
                    if st.pid == Some(pid) {
                        st.stdin = None;
                        st.pid = None;
                        st.session = false;
                        st.ended = None;
                        st.held_starts = false;
                        // Dropped by the server as its input ended: started afresh if at all.
                        st.held.clear();
                    }
                }
                // Whoever still waits learns that the session is gone.
                lock(&waiting).clear();
                lock(&requests).clear();
                transport.wait();
                ended.set();
            });
        if let Err(e) = spawned {
            let mut st = lock(&host.starter);
            st.stdin = None;
            st.pid = None;
            st.session = false;
            st.ended = None;
            end.set();
            return Err(LaunchError::io("spawn thread", "start server", e));
        }
        Ok(Some(if session {
            Link::Session(end)
        } else {
            Link::Older
        }))
    }

    /// Sends a request on the host's open session and waits for its answer.
    fn send_request(
        &self,
        host: &HostState,
        op: SessionOp,
        timeout: Duration,
    ) -> Result<SessionAnswer, LaunchError> {
        let no_session = |why: &str| LaunchError::Unreachable {
            host: host.name.clone(),
            reason: why.to_string(),
        };
        let request = self.next_request.fetch_add(1, Ordering::SeqCst);
        let line = serde_json::to_string(&SessionRequest { request, op })
            .map_err(|e| LaunchError::Protocol(e.to_string()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let mut st = lock(&host.starter);
            if !st.session {
                return Err(no_session("no session with the host"));
            }
            lock(&st.requests).insert(request, tx);
            if !st.send(format_args!("req {line}")) {
                lock(&st.requests).remove(&request);
                return Err(no_session("the session with the host ended"));
            }
        }
        rx.recv_timeout(timeout)
            .map_err(|_| no_session("the request on the session went unanswered"))
    }

    /// A request over the host's session, opened if need be; `None` for a host reached the
    /// older ways (a local host, an older shepherd).
    fn request(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        op: SessionOp,
    ) -> Option<Result<SessionAnswer, LaunchError>> {
        host.target.as_ref()?;
        match self.connect(host) {
            Err(e) => Some(Err(e)),
            Ok(Link::Older) => None,
            Ok(Link::Session(_)) => Some(self.send_request(host, op, REQUEST_TIMEOUT)),
        }
    }

    /// Runs a pe task's shepherd session to its end: a local child, or an ssh connection of
    /// its own (a pe task lasts as long as its job, and would hold one of the few sessions
    /// of the host's master connection all that time).
    fn run_pe_task(&self, host: &HostState, spec: &LaunchSpec) -> TaskResult {
        let failed = |why: String| {
            super::pe_task::read_result(spec, std::io::empty(), std::io::Cursor::new(why))
        };
        let mut command = match &host.target {
            Some(t) => t.separate_command(&[self.remote_shepherd(), "pe-task".to_string()]),
            None => {
                use std::os::unix::process::CommandExt;
                let mut c = std::process::Command::new(&self.opts.shepherd);
                c.arg("pe-task").process_group(0);
                c
            }
        };
        let line = match serde_json::to_string(spec) {
            Ok(l) => l,
            Err(e) => return failed(e.to_string()),
        };
        let mut child = match command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => return failed(format!("cannot start the shepherd: {e}")),
        };
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return failed("no pipes to the shepherd".to_string());
        };
        if writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .is_ok()
        {
            lock(&self.pe_tasks)
                .entry((spec.job, spec.task))
                .or_default()
                .push((spec.pe_task.clone().unwrap_or_default(), stdin));
        }
        let result = super::pe_task::read_result(spec, stdout, stderr);
        let _ = child.wait();
        result
    }

    /// A local host: what `gridspool-shepherd run` does, done here (the supervisor is our
    /// child until it ends; the local watcher reaps it).
    fn run_local(&self, host: &HostState, spec: &LaunchSpec) -> Result<RunReply, LaunchError> {
        let (reply, supervisor) = shepherd::start_reply(spec, &self.opts.shepherd);
        if let Some(child) = supervisor {
            lock(&host.supervisors).push(child);
        }
        Ok(reply)
    }

    /// Runs the shepherd's `suspend`/`resume` for a task on `host` (locally for a local
    /// host).
    fn remote_suspend(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        job: JobId,
        task: TaskId,
        stop: bool,
        seq: u64,
    ) -> Result<(), LaunchError> {
        let Some(t) = &host.target else {
            return super::suspend::request_suspend(&host.exec_spool, job, task, stop, seq);
        };
        let op = SessionOp::Suspend {
            job,
            task,
            stop,
            seq,
        };
        if let Some(answer) = self.request(host, op) {
            return carried_out(answer);
        }
        self.run_remote(
            host,
            t,
            vec![
                self.remote_shepherd(),
                if stop { "suspend" } else { "resume" }.to_string(),
                host.exec_spool.to_string_lossy().into_owned(),
                job.to_string(),
                task.to_string(),
                seq.to_string(),
            ],
        )
    }

    /// Runs a short shepherd command on an ssh host, in one of its sessions; its standard
    /// error is the refusal when it fails.
    fn run_remote(
        &self,
        host: &HostState,
        target: &super::ssh::SshTarget,
        words: Vec<String>,
    ) -> Result<(), LaunchError> {
        self.ensure_master(host)?;
        let _permit = host.sessions.acquire();
        let out = target.run(&words, b"")?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LaunchError::Refused(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ))
        }
    }

    fn remote_kill(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        job: JobId,
        task: TaskId,
        notify: bool,
    ) -> Result<(), LaunchError> {
        let Some(t) = &host.target else {
            return shepherd::request_kill(&host.exec_spool, job, task, notify);
        };
        if let Some(answer) = self.request(host, SessionOp::Kill { job, task, notify }) {
            return carried_out(answer);
        }
        let mut words = vec![self.remote_shepherd(), "kill".to_string()];
        if notify {
            words.push("--notify".to_string());
        }
        words.extend([
            host.exec_spool.to_string_lossy().into_owned(),
            job.to_string(),
            task.to_string(),
        ]);
        self.run_remote(host, t, words)
    }

    /// Hands a result to the scheduler (once `Started` was sent) and acknowledges it to the
    /// host so that its directory goes.
    fn deliver(self: &Arc<Self>, host: &Arc<HostState>, mut result: TaskResult) {
        // A result the watcher wrote for a supervisor that died names no host when the task
        // directory had no `spec.json` (see `shepherd::finished_result`).
        if result.host.is_empty() {
            result.host = host.name.clone();
        }
        let key = (result.job, result.task);
        if lock(&self.discard).remove(&(host.name.clone(), key.0, key.1)) {
            tracing::info!(job = %key.0, task = key.1, host = %host.name, "result of a run killed after its rescheduling: removed");
            self.remove_task_dir(host, key.0, key.1);
            return;
        }
        {
            let mut running = lock(&self.running);
            // A task running again elsewhere (rescheduled): this result is of its earlier
            // run on this host, for the scheduler to decide on; the run elsewhere goes on.
            let elsewhere = running.get(&key).is_some_and(|r| r.host != host.name);
            if let Some(r) = running.get_mut(&key)
                && !r.started
                && !elsewhere
            {
                r.early_result = Some(result);
                return;
            }
            let known = !elsewhere && running.remove(&key).is_some();
            let mut delivered = lock(&self.delivered);
            let fresh = delivered.insert(key);
            if known && !fresh {
                // The task ran again (requeued): this is a new result, not yet acknowledged.
                delivered.acked.insert(key, false);
            }
            if !known && !fresh {
                // Reported again (a watcher session that ended before our `ack` arrived):
                // the scheduler has it already. Acknowledged again if the scheduler had
                // acknowledged it; otherwise its acknowledgement is still to come.
                let acked = delivered.is_acked(key);
                drop(delivered);
                drop(running);
                if acked {
                    self.remove_task_dir(host, key.0, key.1);
                }
                return;
            }
        }
        tracing::info!(
            job = %result.job,
            task = result.task,
            host = %host.name,
            exit_status = result.exit_status,
            failed = result.failed,
            error = result.error.as_deref().unwrap_or(""),
            "task ended"
        );
        // The task directory stays until the scheduler has made the result durable and
        // calls `Launcher::acknowledge`.
        self.send(LaunchEvent::Ended(Box::new(result)));
    }

    /// Removes a reported task's directory on its host (for an ssh host: asks the watcher
    /// session to).
    fn remove_task_dir(self: &Arc<Self>, host: &Arc<HostState>, job: JobId, task: TaskId) {
        // A result that came through the start server session is acknowledged there while
        // that session lasts (its server removes the directory and lets the supervisor
        // go). Written before anything this thread sends later: a task started again on
        // the host (a requeue) finds its old directory gone.
        if let Some(session) = lock(&host.served).remove(&(job, task)) {
            let mut st = lock(&host.starter);
            if st.pid == Some(session) && st.send(format_args!("ack {job}.{task}")) {
                return;
            }
            // The session is gone: its server has ended, and the supervisor, told so, has
            // left (or is about to leave) the result in the directory. It is reported
            // again, and removed then (`deliver`, as acknowledged).
        }
        if host.target.is_none() {
            match shepherd::acknowledge(&host.exec_spool, job, task) {
                // The task may run again (a requeue): its next result is a new one.
                Ok(()) => {
                    lock(&host.reported).remove(&(job, task));
                }
                Err(e) => {
                    tracing::warn!(job = %job, task, "cannot remove the task directory: {e}")
                }
            }
            return;
        }
        let mut w = lock(&host.watcher);
        if let Some(acks) = w.acks.as_mut() {
            let _ = writeln!(acks, "ack {job}.{task}");
            let _ = acks.flush();
        } else {
            // No session now: the next one reports the task again, and as it is
            // acknowledged, `deliver` removes it then.
            drop(w);
            self.ensure_watcher(host);
        }
    }

    /// Reports a task that its host has no trace of as ended, unless its result was delivered
    /// meanwhile (a watcher can report it between a query and this call).
    fn lost(&self, job: JobId, task: TaskId, host: &str, why: &str) {
        if lock(&self.running).remove(&(job, task)).is_none() {
            return;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        tracing::warn!(job = %job, task, host, "task lost: {why}");
        self.send(LaunchEvent::Ended(Box::new(TaskResult {
            job,
            task,
            host: host.to_string(),
            start_time: now,
            end_time: now,
            exit_status: 137,
            signal: Some(9),
            failed: shepherd::failed::AFTER_JOB,
            error: Some(why.to_string()),
            ..TaskResult::default()
        })));
    }

    /// The tasks present in a host's execution spool, or why they cannot be known now (host
    /// unreachable, shepherd failing, spool unreadable).
    fn host_task_states(
        self: &Arc<Self>,
        host: &Arc<HostState>,
    ) -> Result<Vec<TaskState>, LaunchError> {
        let Some(t) = &host.target else {
            return shepherd::query(&host.exec_spool);
        };
        match self.request(host, SessionOp::Query) {
            Some(Ok(SessionAnswer {
                error: Some(why), ..
            })) => {
                return Err(LaunchError::Unreachable {
                    host: host.name.clone(),
                    reason: format!("the query of its tasks failed: {why}"),
                });
            }
            Some(Ok(answer)) => return Ok(answer.states.unwrap_or_default()),
            Some(Err(e)) => return Err(e),
            None => {}
        }
        let out = self.remote_query(host, t)?;
        self.heard(host);
        if !out.status.success() {
            return Err(LaunchError::Unreachable {
                host: host.name.clone(),
                reason: format!(
                    "gridspool-shepherd query failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(task_states(&out.stdout).collect())
    }

    /// Takes over a host's tasks after a restart: those its execution spool has no trace of
    /// are lost. When the host cannot tell (unreachable, its spool unreadable), nothing is
    /// concluded: its tasks stay registered, their results come through the watcher, and the
    /// question is asked again with backoff until the host answers — a task is never
    /// declared lost (and run again) because its host could not be asked.
    fn reattach_host(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        tasks: &[(JobId, TaskId)],
        transferring: &HashSet<(JobId, TaskId)>,
    ) {
        let mut retry = Retry::new();
        let mut host = Arc::clone(host);
        loop {
            let asked = std::time::Instant::now();
            match self.host_task_states(&host) {
                Ok(states) => {
                    let present: HashSet<(JobId, TaskId)> =
                        states.iter().map(|s| (s.job, s.task)).collect();
                    // Only a start server's starts are over once it is gone; a start through
                    // a session of its own may still be on its way. (The query went after
                    // the previous master's start server was ended: by the `query` mode, or
                    // by this master's session server as it began.)
                    let served = host.target.is_some() && !lock(&host.starter).unsupported;
                    for &(job, task) in tasks {
                        if present.contains(&(job, task)) {
                            continue;
                        }
                        if served
                            && transferring.contains(&(job, task))
                            && lock(&self.running).remove(&(job, task)).is_some()
                        {
                            tracing::info!(job = %job, task, host = %host.name, "task never reached its host: pending again");
                            self.send(LaunchEvent::NeverStarted {
                                job,
                                task,
                                host: host.name.clone(),
                            });
                        } else {
                            self.lost(
                                job,
                                task,
                                &host.name,
                                &format!(
                                    "task {job}.{task} was not found on host {} after sched_d restarted",
                                    host.name
                                ),
                            );
                        }
                    }
                    break;
                }
                Err(e) => {
                    let wait = retry.failed(asked.elapsed());
                    tracing::warn!(host = %host.name, "cannot reattach yet, asking again in {wait:?}: {e}");
                    self.ensure_watcher(&host);
                    std::thread::sleep(wait);
                    if self.shutdown.load(Ordering::SeqCst) {
                        return;
                    }
                    // Rescheduled meanwhile (the host stayed unknown): nothing left to ask.
                    let followed = {
                        let running = lock(&self.running);
                        tasks
                            .iter()
                            .any(|k| running.get(k).is_some_and(|r| r.host == host.name))
                    };
                    if !followed {
                        return;
                    }
                    // The host may have been reconfigured meanwhile, or taken out.
                    match self.host(&host.name) {
                        Ok(h) => host = h,
                        Err(e) => {
                            for &(job, task) in tasks {
                                self.lost(job, task, &host.name, &e.to_string());
                            }
                            return;
                        }
                    }
                }
            }
        }
        self.ensure_watcher(&host);
    }

    fn ensure_watcher(self: &Arc<Self>, host: &Arc<HostState>) {
        {
            let mut w = lock(&host.watcher);
            if w.running || self.shutdown.load(Ordering::SeqCst) {
                return;
            }
            w.running = true;
        }
        let inner = Arc::clone(self);
        let h = Arc::clone(host);
        let spawned = std::thread::Builder::new()
            .name(format!("watch-{}", host.name))
            .spawn(move || {
                if h.target.is_none() {
                    inner.watch_local(&h);
                } else {
                    inner.watch_remote(&h);
                }
                lock(&h.watcher).running = false;
            });
        if let Err(e) = spawned {
            tracing::error!(host = %host.name, "cannot start a watcher thread: {e}");
            lock(&host.watcher).running = false;
        }
    }

    /// This host state is still the configured one and the launcher is alive.
    fn current(&self, host: &Arc<HostState>) -> bool {
        !self.shutdown.load(Ordering::SeqCst)
            && lock(&self.hosts)
                .get(&host.name)
                .is_some_and(|h| Arc::ptr_eq(h, host))
    }

    fn watch_local(self: &Arc<Self>, host: &Arc<HostState>) {
        // A thread that starts late, after its launcher was dropped, must not create the
        // directory it would watch (`wake::watch_dir` makes it).
        if !self.current(host) {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let _watch =
            super::wake::watch_dir(&super::taskdir::active_jobs(&host.exec_spool), move || {
                let _ = tx.send(());
            });
        while self.current(host) {
            // A result held back until `Started` is delivered and acknowledged by the
            // starting thread; `reported` keeps it from being collected twice meanwhile.
            let finished = shepherd::collect_finished(&host.exec_spool, &mut lock(&host.reported));
            for result in finished {
                self.deliver(host, result);
            }
            // A supervisor exits right after writing its result.
            lock(&host.supervisors).retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            // Woken by the shepherd's write of `result.json`; the interval is the fallback.
            if rx.recv_timeout(self.opts.poll_interval).is_ok() {
                while rx.try_recv().is_ok() {}
            }
        }
    }

    /// Follows an ssh host: keeps its session open (opened again when it ends, at once
    /// after one that lasted, with backoff after one that did not); for a host with an
    /// older shepherd, keeps its `watch` session instead.
    fn watch_remote(self: &Arc<Self>, host: &Arc<HostState>) {
        let Some(t) = &host.target else {
            return;
        };
        let mut retry = Retry::new();
        while self.current(host) {
            let attempt = std::time::Instant::now();
            // Set before the wait for a connection slot: a host waiting for its turn is
            // not silent.
            self.liveness.connection(&host.name, Connection::Connecting);
            match self.connect(host) {
                Ok(Link::Session(end)) => {
                    self.liveness.connection(&host.name, Connection::Made);
                    self.liveness.want_probe_of(&host.name);
                    let began = std::time::Instant::now();
                    end.wait();
                    if began.elapsed() >= STEADY_SESSION {
                        retry.reset();
                    }
                    let wait = retry.failed(attempt.elapsed());
                    if self.current(host) {
                        tracing::info!(host = %host.name, "the session with the host ended, opening another in {wait:?}");
                        std::thread::sleep(wait);
                    }
                }
                Ok(Link::Older) => self.watch_older(host, t, &mut retry, attempt),
                Err(e) => {
                    self.liveness.connection(&host.name, Connection::Failed);
                    let wait = retry.failed(attempt.elapsed());
                    tracing::warn!(host = %host.name, "cannot connect, trying again in {wait:?}: {e}");
                    std::thread::sleep(wait);
                }
            }
        }
    }

    /// One `gridspool-shepherd watch` session over the master connection, for a host whose
    /// shepherd predates the start server's session: it reports the results left in files
    /// and says the host is alive.
    fn watch_older(
        self: &Arc<Self>,
        host: &Arc<HostState>,
        t: &SshTarget,
        retry: &mut Retry,
        attempt: std::time::Instant,
    ) {
        let connected = self.ensure_master(host);
        self.liveness.connection(
            &host.name,
            if connected.is_ok() {
                Connection::Made
            } else {
                Connection::Failed
            },
        );
        if let Err(e) = connected {
            let wait = retry.failed(attempt.elapsed());
            tracing::warn!(host = %host.name, "watcher cannot connect, trying again in {wait:?}: {e}");
            std::thread::sleep(wait);
            return;
        }
        let heartbeat = self
            .config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .heartbeat_interval();
        let words = vec![
            self.remote_shepherd(),
            "watch".to_string(),
            host.exec_spool.to_string_lossy().into_owned(),
            self.opts.poll_interval.as_millis().to_string(),
            heartbeat.as_millis().to_string(),
            "--master".to_string(),
            self.master_id.clone(),
        ];
        let child = t
            .command(&words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(host = %host.name, "cannot run ssh: {e}");
                std::thread::sleep(retry.failed(attempt.elapsed()));
                return;
            }
        };
        {
            let mut w = lock(&host.watcher);
            w.pid = Some(child.id());
            w.acks = child.stdin.take();
        }
        let began = std::time::Instant::now();
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                self.heard(host);
                match serde_json::from_str::<WatchMessage>(&line) {
                    Ok(WatchMessage::Ended { result }) => self.deliver(host, *result),
                    Ok(WatchMessage::Alive) => {}
                    Err(e) => {
                        tracing::warn!(host = %host.name, "bad watcher line {line:?}: {e}")
                    }
                }
            }
        }
        {
            let mut w = lock(&host.watcher);
            w.pid = None;
            w.acks = None;
        }
        let _ = child.wait();
        // A host that keeps dropping its session (flapping) is retried ever later; one
        // whose session lasted is retried at once.
        if began.elapsed() >= STEADY_SESSION {
            retry.reset();
        }
        let wait = retry.failed(attempt.elapsed());
        if self.current(host) {
            std::thread::sleep(wait);
        }
    }

    /// Something came from `host`: if it was unknown, it has returned.
    fn heard(&self, host: &HostState) {
        if host.target.is_some() && self.liveness.heard(&host.name) {
            tracing::info!(host = %host.name, "host heard again: known");
            self.liveness.want_probe();
            self.send(LaunchEvent::HostReturned {
                host: host.name.clone(),
            });
        }
    }

    /// Every configured ssh host gets its watcher session, with or without tasks: it is how
    /// the host is heard.
    fn watch_all_hosts(self: &Arc<Self>) {
        let names: Vec<String> = {
            let config = self.config.read().unwrap_or_else(|e| e.into_inner());
            config
                .hosts
                .iter()
                .filter(|h| !matches!(h.launch, crate::config::LaunchMethod::Local))
                .map(|h| h.name.clone())
                .collect()
        };
        for name in names {
            match self.host(&name) {
                Ok(h) => self.ensure_watcher(&h),
                Err(e) => tracing::warn!(host = %name, "cannot follow the host: {e}"),
            }
        }
    }

    /// The liveness thread: every second (or a quarter of `max_unheard` when shorter), the
    /// ssh hosts silent for `max_unheard` become unknown: published as unreachable for
    /// `qhost` and `qstat` (`au`) and reported to the scheduler.
    fn watch_liveness(self: &Arc<Self>) {
        while !self.shutdown.load(Ordering::SeqCst) {
            let (names, max_unheard) = {
                let config = self.config.read().unwrap_or_else(|e| e.into_inner());
                let names: Vec<String> = config
                    .hosts
                    .iter()
                    .filter(|h| !matches!(h.launch, crate::config::LaunchMethod::Local))
                    .map(|h| h.name.clone())
                    .collect();
                (names, config.max_unheard())
            };
            for host in self
                .liveness
                .expire(names.iter().map(String::as_str), max_unheard)
            {
                tracing::warn!(host = %host, ?max_unheard, "nothing heard from the host for max_unheard: unknown");
                let report = crate::acct::load::HostReport {
                    v: crate::acct::load::HOST_REPORT_VERSION,
                    host: host.clone(),
                    time: crate::time::now(),
                    reachable: false,
                    load: None,
                    tasks: Vec::new(),
                };
                if let Err(e) = crate::acct::load::write_report(&self.spool.daemon_dir(), &report) {
                    tracing::warn!(host = %host, "cannot publish the host as unknown: {e}");
                }
                self.send(LaunchEvent::HostUnknown { host });
            }
            std::thread::sleep((max_unheard / 4).min(Duration::from_secs(1)));
        }
    }

    /// See [`Launcher::sweep`].
    fn sweep_host(self: &Arc<Self>, host: &Arc<HostState>, tasks: &[(JobId, TaskId)]) {
        let mut retry = Retry::new();
        let states = loop {
            let asked = std::time::Instant::now();
            match self.host_task_states(host) {
                Ok(states) => break states,
                Err(e) => {
                    let wait = retry.failed(asked.elapsed());
                    tracing::info!(host = %host.name, "rescheduled runs there cannot be settled yet, asking again in {wait:?}: {e}");
                    std::thread::sleep(wait);
                    if !self.current(host) {
                        return;
                    }
                }
            }
        };
        let mut settled = Vec::new();
        let mut killed = Vec::new();
        for &(job, task) in tasks {
            match states.iter().find(|s| s.job == job && s.task == task) {
                // Its result is there: the watcher reports it.
                Some(s) if s.finished => {}
                Some(s) if s.running => {
                    lock(&self.discard).insert((host.name.clone(), job, task));
                    tracing::info!(job = %job, task, host = %host.name, "killing a run that was rescheduled while its host was unknown");
                    if let Err(e) = self.remote_kill(host, job, task, false) {
                        tracing::warn!(job = %job, task, host = %host.name, "kill failed: {e}");
                    }
                    settled.push((job, task));
                    killed.push((job, task));
                }
                // A directory with neither a live supervisor nor a result: the host went
                // down with it; nothing will come.
                _ => settled.push((job, task)),
            }
        }
        self.ensure_watcher(host);
        // Settled means gone from the host: until the killed runs' results are collected
        // (discarded) and their directories removed, a new start of the same task there
        // would be refused as already running.
        let deadline = std::time::Instant::now() + SWEEP_COLLECT_AT_MOST;
        while !killed.is_empty() && std::time::Instant::now() < deadline && self.current(host) {
            std::thread::sleep(Duration::from_millis(250));
            if let Ok(states) = self.host_task_states(host) {
                killed.retain(|&(job, task)| states.iter().any(|s| s.job == job && s.task == task));
            }
        }
        if !killed.is_empty() {
            tracing::warn!(host = %host.name, runs = killed.len(), "killed runs not collected yet: settled all the same");
        }
        self.send(LaunchEvent::Swept {
            host: host.name.clone(),
            tasks: settled,
        });
    }
}

/// The shepherd's reply on stdout; its stderr explains a missing reply.
fn parse_reply(host: &str, stdout: &[u8], stderr: &[u8]) -> Result<RunReply, LaunchError> {
    let text = String::from_utf8_lossy(stdout);
    match text
        .lines()
        .find_map(|l| serde_json::from_str::<RunReply>(l).ok())
    {
        Some(reply) => Ok(reply),
        // No answer at all (shepherd missing or broken on the host): a fault of the host,
        // not of the job, so the task is requeued rather than put into error state.
        None => {
            let mut why = String::new();
            let _ = std::io::Cursor::new(stderr).read_to_string(&mut why);
            Err(LaunchError::Unreachable {
                host: host.to_string(),
                reason: format!("the shepherd did not answer: {}", why.trim()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 23: a host that is down was tried again every 60 s (and the 10 s an attempt
    /// on a cut link takes came on top); `sched_d(8)` promises at most 30 s between tries.
    #[test]
    fn a_host_that_does_not_answer_is_tried_again_at_most_30_s_after_the_last_try_began() {
        let mut retry = Retry::new();
        let connect_timeout = Duration::from_secs(10);
        let mut starts_apart = Vec::new();
        for _ in 0..12 {
            starts_apart.push(connect_timeout + retry.failed(connect_timeout));
        }
        assert!(
            starts_apart.iter().all(|d| *d <= MAX_HOST_RETRY),
            "{starts_apart:?}"
        );
        assert_eq!(starts_apart.last(), Some(&MAX_HOST_RETRY));
        // Quick failures back off from 1 s.
        let mut retry = Retry::new();
        let quick: Vec<u64> = (0..7)
            .map(|_| retry.failed(Duration::ZERO).as_secs())
            .collect();
        assert_eq!(quick, [1, 2, 4, 8, 16, 30, 30]);
        retry.reset();
        assert_eq!(retry.failed(Duration::ZERO), Duration::from_secs(1));
    }

    #[test]
    fn control_sockets_move_to_a_short_private_directory_when_the_spool_path_is_long() {
        let short = PathBuf::from("/var/lib/gridspool/default/daemon/ssh");
        assert_eq!(control_dir_for(short.clone()), short);
        let long = PathBuf::from(format!("/shared/{}/default/daemon/ssh", "x".repeat(60)));
        let moved = control_dir_for(long.clone());
        assert!(moved.starts_with("/tmp"), "{moved:?}");
        assert!(moved.as_os_str().len() <= MAX_CONTROL_DIR_LEN, "{moved:?}");
        assert_eq!(
            control_dir_for(long),
            moved,
            "the same cell keeps its directory"
        );
        let other = control_dir_for(PathBuf::from(format!("/{}/daemon/ssh", "y".repeat(80))));
        assert_ne!(other, moved);
    }

    #[test]
    fn a_control_directory_that_is_not_our_own_directory_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let ours = root.path().join("ours");
        create_private_dir(&ours).expect("our own directory");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&ours, &link).expect("symlink");
        assert!(create_private_dir(&link).is_err(), "a symlink is refused");
        if nix::unistd::geteuid().is_root() {
            let theirs = root.path().join("theirs");
            std::fs::create_dir(&theirs).expect("mkdir");
            std::os::unix::fs::chown(&theirs, Some(65534), None).expect("chown");
            assert!(
                create_private_dir(&theirs).is_err(),
                "another user's directory is refused"
            );
        }
    }
}
