//! [`Launcher`]: what `sched_d` holds to start, kill and collect tasks.
//!
//! Every operation that may block (spawning a shepherd, an ssh session) runs on a thread of
//! its own; outcomes arrive on the event channel. Per host there is one *watcher*: for a
//! local host a thread that scans the host's execution spool, for an ssh host a long-lived
//! `gridspool-shepherd watch` session over the host's master connection. The watcher reports
//! each finished task once and removes its directory after the result was handed to the
//! scheduler (the `ack`), so a result survives a `sched_d` crash until it has been passed on.
//!
//! Threads: one per start or ssh kill while it lasts, one per host watcher. At most
//! `max_sessions - 1` short ssh sessions per host run at once (the watcher holds one more).

use super::shepherd::{self, RunReply, TaskState, WatchMessage};
use super::spec::{LaunchSpec, SHEPHERD_BINARY};
use super::ssh::{Sessions, SshTarget};
use super::taskdir::exec_spool_dir;
use super::{LaunchError, LaunchEvent, TaskResult};
use crate::config::ClusterConfig;
use crate::model::{JobId, TaskId};
use crate::spool::Spool;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
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
}

impl LauncherOptions {
    /// The shepherd is `$GRIDSPOOL_SHEPHERD`, else `gridspool-shepherd` next to the current
    /// executable (or one directory up, where cargo puts binaries for test executables in
    /// `deps/`). Control sockets go to `<spool>/daemon/ssh`.
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
            control_dir: spool.daemon_dir().join("ssh"),
            poll_interval: Duration::from_millis(500),
        })
    }
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

struct HostState {
    name: String,
    target: Option<SshTarget>,
    exec_spool: PathBuf,
    sessions: Sessions,
    /// The pid of the master connection this launcher started or found, so that it can be
    /// ended even when its control socket is gone.
    master: Mutex<Option<u32>>,
    watcher: Mutex<WatcherHandle>,
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
    shutdown: AtomicBool,
}

/// A bounded set of recently delivered tasks.
#[derive(Default)]
struct Delivered {
    set: HashSet<(JobId, TaskId)>,
    order: std::collections::VecDeque<(JobId, TaskId)>,
}

impl Delivered {
    const CAPACITY: usize = 1 << 16;

    /// Adds a task; `false` if it was there already.
    fn insert(&mut self, key: (JobId, TaskId)) -> bool {
        if !self.set.insert(key) {
            return false;
        }
        self.order.push_back(key);
        if self.order.len() > Self::CAPACITY
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
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
        Ok(Launcher {
            inner: Arc::new(Inner {
                config: RwLock::new(config.clone()),
                spool: spool.clone(),
                events,
                opts,
                running: Mutex::new(HashMap::new()),
                hosts: Mutex::new(HashMap::new()),
                delivered: Mutex::new(Delivered::default()),
                shutdown: AtomicBool::new(false),
            }),
        })
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
                },
            );
        }
        tracing::info!(job = %spec.job, task = spec.task, host = %spec.host, "starting task");
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("start-{}", spec.task_name()))
            .spawn(move || inner.start_task(&host, spec))
            .map_err(|e| LaunchError::io("spawn thread", "start", e))?;
        Ok(())
    }

    /// Kills a task's whole process tree (`qdel`). With `notify` (a `-notify` job), the job
    /// gets SIGUSR2 first and SIGKILL after the queue's notify time.
    pub fn kill(&self, job: JobId, task: TaskId, notify: bool) -> Result<(), LaunchError> {
        let host_name = {
            let mut running = lock(&self.inner.running);
            let entry = running
                .get_mut(&(job, task))
                .ok_or(LaunchError::NotRunning { job, task })?;
            if !entry.started {
                entry.pending_kill = Some(notify);
                return Ok(());
            }
            entry.host.clone()
        };
        let host = self.inner.host(&host_name)?;
        tracing::info!(job = %job, task, host = %host_name, notify, "killing task");
        if host.target.is_none() {
            return shepherd::request_kill(&host.exec_spool, job, task, notify);
        }
        let inner = Arc::clone(&self.inner);
        std::thread::Builder::new()
            .name(format!("kill-{job}.{task}"))
            .spawn(move || {
                if let Err(e) = inner.remote_kill(&host, job, task, notify) {
                    tracing::warn!(job = %job, task, "kill failed: {e}");
                }
            })
            .map_err(|e| LaunchError::io("spawn thread", "kill", e))?;
        Ok(())
    }

    /// After a `sched_d` restart: takes over the tasks the spool says are running. Their
    /// results are collected as usual; a task whose host has no trace of it ends with
    /// `failed 100` and an error saying it was lost. A host that cannot be reached is retried
    /// by its watcher; its tasks stay registered (they may well still be running).
    pub fn reattach(&self, running: &[(JobId, TaskId, String)]) -> Result<(), LaunchError> {
        let mut by_host: HashMap<String, Vec<(JobId, TaskId)>> = HashMap::new();
        {
            let mut map = lock(&self.inner.running);
            for (job, task, host) in running {
                map.entry((*job, *task)).or_insert(Running {
                    host: host.clone(),
                    started: true,
                    early_result: None,
                    pending_kill: None,
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
            std::thread::Builder::new()
                .name(format!("reattach-{name}"))
                .spawn(move || inner.reattach_host(&host, &tasks))
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
                    .map(|t| (&t.address, t.port, &t.user, &t.options))
                    != state
                        .target
                        .as_ref()
                        .map(|t| (&t.address, t.port, &t.user, &t.options))
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
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        let hosts: Vec<Arc<HostState>> = lock(&self.inner.hosts).values().cloned().collect();
        for h in hosts {
            stop_watcher(&h);
            if let Some(t) = &h.target {
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
    let mut w = lock(&host.watcher);
    w.acks = None;
    if let Some(pid) = w.pid.take() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

fn create_private_dir(dir: &Path) -> Result<(), LaunchError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(|e| LaunchError::io("mkdir", dir, e))?;
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
        // would otherwise fork hundreds at the same moment).
        let short_sessions = target.as_ref().map_or(LOCAL_CONCURRENT_STARTS, |t| {
            t.max_sessions.saturating_sub(1)
        });
        let state = Arc::new(HostState {
            name: name.to_string(),
            exec_spool: exec_spool_dir(self.spool.root(), name),
            target,
            sessions: Sessions::new(short_sessions),
            master: Mutex::new(None),
            watcher: Mutex::new(WatcherHandle::default()),
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

    fn start_task(self: &Arc<Self>, host: &Arc<HostState>, spec: LaunchSpec) {
        let (job, task) = (spec.job, spec.task);
        let reply = match &host.target {
            None => {
                let _permit = host.sessions.acquire();
                self.run_local(&spec)
            }
            Some(t) => self.ensure_master(host).and_then(|()| {
                let json =
                    serde_json::to_vec(&spec).map_err(|e| LaunchError::Protocol(e.to_string()))?;
                let _permit = host.sessions.acquire();
                let out = t.run(&[self.remote_shepherd(), "run".to_string()], &json)?;
                parse_reply(&host.name, &out.stdout, &out.stderr)
            }),
        };
        match reply {
            Ok(RunReply::Started { pid }) => {
                tracing::info!(job = %job, task, host = %host.name, pid, "task started");
                self.send(LaunchEvent::Started {
                    job,
                    task,
                    host: host.name.clone(),
                    pid,
                });
                let (early, kill) = {
                    let mut running = lock(&self.running);
                    match running.get_mut(&(job, task)) {
                        Some(r) => {
                            r.started = true;
                            (r.early_result.take(), r.pending_kill.take())
                        }
                        None => (None, None),
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

    fn run_local(&self, spec: &LaunchSpec) -> Result<RunReply, LaunchError> {
        let shepherd = &self.opts.shepherd;
        let mut child = Command::new(shepherd)
            .arg("run")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LaunchError::io("spawn", shepherd, e))?;
        let json = serde_json::to_vec(spec).map_err(|e| LaunchError::Protocol(e.to_string()))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(&json)
                .map_err(|e| LaunchError::io("write", shepherd, e))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| LaunchError::io("wait", shepherd, e))?;
        parse_reply(&spec.host, &out.stdout, &out.stderr)
    }

    fn remote_kill(
        &self,
        host: &HostState,
        job: JobId,
        task: TaskId,
        notify: bool,
    ) -> Result<(), LaunchError> {
        let Some(t) = &host.target else {
            return shepherd::request_kill(&host.exec_spool, job, task, notify);
        };
        self.ensure_master(host)?;
        let mut words = vec![self.remote_shepherd(), "kill".to_string()];
        if notify {
            words.push("--notify".to_string());
        }
        words.extend([
            host.exec_spool.to_string_lossy().into_owned(),
            job.to_string(),
            task.to_string(),
        ]);
        let _permit = host.sessions.acquire();
        let out = t.run(&words, b"")?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LaunchError::Refused(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ))
        }
    }

    /// Hands a result to the scheduler (once `Started` was sent) and acknowledges it to the
    /// host so that its directory goes.
    fn deliver(&self, host: &HostState, result: TaskResult) {
        let key = (result.job, result.task);
        {
            let mut running = lock(&self.running);
            if let Some(r) = running.get_mut(&key)
                && !r.started
            {
                r.early_result = Some(result);
                return;
            }
            let known = running.remove(&key).is_some();
            let fresh = lock(&self.delivered).insert(key);
            if !known && !fresh {
                // Reported again (a watcher session that ended before our `ack` arrived):
                // the scheduler has it already.
                drop(running);
                self.acknowledge(host, key.0, key.1);
                return;
            }
        }
        tracing::info!(
            job = %result.job,
            task = result.task,
            host = %host.name,
            exit_status = result.exit_status,
            failed = result.failed,
            "task ended"
        );
        if self.send(LaunchEvent::Ended(result)) {
            self.acknowledge(host, key.0, key.1);
        }
    }

    fn acknowledge(&self, host: &HostState, job: JobId, task: TaskId) {
        if host.target.is_none() {
            if let Err(e) = shepherd::acknowledge(&host.exec_spool, job, task) {
                tracing::warn!(job = %job, task, "cannot remove the task directory: {e}");
            }
            return;
        }
        let mut w = lock(&host.watcher);
        if let Some(acks) = w.acks.as_mut() {
            let _ = writeln!(acks, "ack {job}.{task}");
            let _ = acks.flush();
        }
    }

    fn lost(&self, job: JobId, task: TaskId, host: &str, why: &str) {
        lock(&self.running).remove(&(job, task));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        tracing::warn!(job = %job, task, host, "task lost: {why}");
        self.send(LaunchEvent::Ended(TaskResult {
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
        }));
    }

    fn reattach_host(self: &Arc<Self>, host: &Arc<HostState>, tasks: &[(JobId, TaskId)]) {
        let states: Result<Vec<TaskState>, LaunchError> = match &host.target {
            None => Ok(shepherd::query(&host.exec_spool)),
            Some(t) => self.ensure_master(host).and_then(|()| {
                let _permit = host.sessions.acquire();
                let words = vec![
                    self.remote_shepherd(),
                    "query".to_string(),
                    host.exec_spool.to_string_lossy().into_owned(),
                ];
                let out = t.run(&words, b"")?;
                Ok(String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect())
            }),
        };
        match states {
            Ok(states) => {
                let present: HashSet<(JobId, TaskId)> =
                    states.iter().map(|s| (s.job, s.task)).collect();
                for &(job, task) in tasks {
                    if !present.contains(&(job, task)) {
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
            }
            Err(e) => {
                tracing::warn!(host = %host.name, "cannot reattach yet: {e}");
            }
        }
        self.ensure_watcher(host);
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

    fn watch_local(&self, host: &Arc<HostState>) {
        let mut reported = HashSet::new();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let _watch =
            super::wake::watch_dir(&super::taskdir::active_jobs(&host.exec_spool), move || {
                let _ = tx.send(());
            });
        while self.current(host) {
            // A result held back until `Started` is delivered and acknowledged by the
            // starting thread; `reported` keeps it from being collected twice meanwhile.
            for result in shepherd::collect_finished(&host.exec_spool, &mut reported) {
                self.deliver(host, result);
            }
            // Woken by the shepherd's write of `result.json`; the interval is the fallback.
            if rx.recv_timeout(self.opts.poll_interval).is_ok() {
                while rx.try_recv().is_ok() {}
            }
        }
    }

    fn watch_remote(&self, host: &Arc<HostState>) {
        let Some(t) = &host.target else {
            return;
        };
        let mut backoff = Duration::from_secs(1);
        while self.current(host) {
            if let Err(e) = self.ensure_master(host) {
                tracing::warn!(host = %host.name, "watcher cannot connect: {e}");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(60));
                continue;
            }
            let words = vec![
                self.remote_shepherd(),
                "watch".to_string(),
                host.exec_spool.to_string_lossy().into_owned(),
                self.opts.poll_interval.as_millis().to_string(),
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
                    std::thread::sleep(backoff);
                    continue;
                }
            };
            {
                let mut w = lock(&host.watcher);
                w.pid = Some(child.id());
                w.acks = child.stdin.take();
            }
            backoff = Duration::from_secs(1);
            if let Some(out) = child.stdout.take() {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    match serde_json::from_str::<WatchMessage>(&line) {
                        Ok(WatchMessage::Ended { result }) => self.deliver(host, result),
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
            if self.current(host) {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
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
