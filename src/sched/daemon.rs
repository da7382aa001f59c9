//! The `sched_d` process: one instance per spool (exclusive lock on `daemon/sched_d.lock`
//! and a pid file), recovery from the spool, the event loop, and clean draining.
//!
//! Events are hints: a watcher event names a directory entry to re-read; an overflow or
//! rescan flag, and a timer, make the daemon re-list the directories; `--poll` replaces
//! inotify for spools on NFS. Each wake-up drains every queued event before acting, which
//! coalesces bursts (many submissions, many ends) into one scheduling pass without adding
//! latency to a lone submission.
//!
//! Durability order, so that a crash at any point loses nothing and runs nothing twice:
//! - request: apply in memory → write the affected states → remove the request;
//! - start: mark the task transferring → write the state → ask the runner (its own marker
//!   tells a restarted daemon whether it started, so the `r` that follows is written lazily,
//!   with the job's next write or within `--running-state-delay`);
//! - end: accounting hook → append the exits line → write the state; on recovery a task
//!   whose exits line exists is not recorded again, and one whose run's accounting record
//!   ends the accounting file (committed just before a crash) is not accounted again.
//!
//! Storage blocked (issue 12): while an end cannot be made durable (a full disk, a quota,
//! an I/O error on its accounting record, exits line or state), its result stays
//! unacknowledged on its host and queued here in order, nothing new starts (a start's `t`
//! could not be written either), requests wait, `daemon/storage_blocked` tells `qstat -j`,
//! and the writes are retried with a backoff (and on every spool event) until they pass;
//! one log line on entering that state, one on leaving it. See [`Daemon::act`].

use super::runner::{AccountingHook, Reattached, TaskRunner, append_exit, recorded_exits};
use super::state::SchedState;
use crate::config::{ClusterConfig, ConfigError};
use crate::launch::LaunchEvent;
use crate::mail::{self, MailEvent, Mailer};
use crate::model::{
    ErrorInfo, FinishedTask, JobId, JobRecord, Outcome, Request, RequestAction, RunningDeletion,
    TaskId,
};
use crate::spool::{Spool, SpoolError};
use notify::Watcher;
use qmod::InstanceChange;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use tracing::{debug, error, info, warn};

mod pe_tasks;
mod qmod;
mod unknown;

/// How the daemon runs (from `sched_d`'s command line).
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// Poll the spool at this interval instead of inotify (spools on NFS).
    pub poll: Option<Duration>,
    /// This daemon as the cell's master (heartbeat, `act_master`): checked at every
    /// wake-up and before every start, so that a master another has replaced writes and
    /// starts nothing more. `None` in tests that build a daemon without one.
    pub mastership: Option<std::sync::Arc<super::mastership::Mastership>>,
    /// Re-list `jobs/` and `requests/` at this interval even without events.
    pub rescan: Duration,
    /// Keep a finished job's files this long so `qsub -sync` can read its exits.
    pub retention: Duration,
    /// Periodic pass interval (waiting-time growth); default: `schedule_interval`.
    pub periodic: Option<Duration>,
    /// How late a started task's `r` may reach its state file (default 1 s).
    pub running_state_delay: Duration,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        DaemonOptions {
            poll: None,
            mastership: None,
            rescan: Duration::from_secs(30),
            retention: Duration::from_secs(60),
            periodic: None,
            running_state_delay: RUNNING_STATE_DELAY,
        }
    }
}

/// Why the daemon could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another sched_d{} is running on spool {spool}{}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default(), master.as_ref().map(|m| format!(": the master is {m}")).unwrap_or_default())]
    AlreadyRunning {
        spool: PathBuf,
        pid: Option<u32>,
        /// Who `daemon/act_master` names (it may run on another host).
        master: Option<String>,
    },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("watching the spool: {0}")]
    Watch(#[from] notify::Error),
    #[error("runner: {0}")]
    Runner(#[from] super::runner::RunnerError),
}

fn io(op: &'static str, path: &Path, source: std::io::Error) -> DaemonError {
    DaemonError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// What wakes the event loop.
#[derive(Debug)]
pub enum Input {
    /// Paths a watcher saw change.
    Fs(Vec<PathBuf>),
    /// The watcher lost events (overflow) or asked for a rescan.
    Rescan,
    /// Boxed: launch events are large and the channel carries many small inputs.
    Launch(Box<LaunchEvent>),
    Signal(i32),
    /// `--metrics`: a scrape wants the cell's gauges refreshed; answered when they are.
    Scrape(Sender<()>),
    /// `--metrics`: the status page's part that comes from the state (`status_page`).
    StatusPage(Sender<String>),
}

/// The exclusive hold on a spool: the lock file stays locked while this lives.
#[derive(Debug)]
pub struct SpoolLock {
    _file: File,
    pid_path: PathBuf,
}

impl SpoolLock {
    /// Takes `daemon/sched_d.lock` (non-blocking) and writes `daemon/sched_d.pid`.
    pub fn acquire(spool: &Spool) -> Result<Self, DaemonError> {
        let dir = spool.daemon_dir();
        fs::create_dir_all(&dir).map_err(|e| io("mkdir", &dir, e))?;
        let path = dir.join("sched_d.lock");
        let file = crate::file::open::open_update(&path, 0o644)
            .map_err(|e| io("open", &path, e.into()))?;
        let pid_path = dir.join("sched_d.pid");
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let pid = crate::file::open::read_to_string(&pid_path)
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                return Err(DaemonError::AlreadyRunning {
                    spool: spool.root().to_path_buf(),
                    pid,
                    master: super::mastership::act_master(&dir).map(|m| m.to_string()),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(io("lock", &path, e)),
        }
        Self::holding(file, &dir)
    }

    /// The lock file held (or to be held), and this process's pid written.
    fn holding(file: File, dir: &Path) -> Result<Self, DaemonError> {
        crate::file::durable::write_replace(
            dir,
            "sched_d.pid",
            format!("{}\n", std::process::id()).as_bytes(),
            0o644,
        )
        .map_err(SpoolError::from)?;
        Ok(SpoolLock {
            _file: file,
            pid_path: dir.join("sched_d.pid"),
        })
    }

    /// For a shadow taking over from a master that still holds the lock (frozen, or behind
    /// an NFS lease): writes the pid file now and takes the lock in the background as soon
    /// as it is released (the old master exits the moment it runs again, see
    /// `sched::mastership`). Until then a second start on this cell is refused by nothing
    /// but `act_master`.
    pub fn acquire_when_released(spool: &Spool) -> Result<Self, DaemonError> {
        let dir = spool.daemon_dir();
        let path = dir.join("sched_d.lock");
        let file = crate::file::open::open_update(&path, 0o644)
            .map_err(|e| io("open", &path, e.into()))?;
        let waiter = file.try_clone().map_err(|e| io("dup", &path, e))?;
        std::thread::Builder::new()
            .name("lock-waiter".into())
            .spawn(move || match waiter.lock() {
                // The lock belongs to the open file, which `SpoolLock` keeps: it lasts as
                // long as this process.
                Ok(()) => info!("the spool lock is ours now"),
                Err(e) => warn!("cannot take the spool lock: {e}"),
            })
            .map_err(|e| io("spawn thread", &path, e))?;
        Self::holding(file, &dir)
    }
}

impl Drop for SpoolLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.pid_path);
    }
}

/// What a changed path in the spool announces: the request queue to read, or a job file.
enum SpoolInput {
    Requests,
    Job(JobId),
}

/// The input a path names, if any: a request, or a job file (`jobs/<id>.job`); temporary
/// names (a leading `.`) and everything else are `sched_d`'s own writes or of no interest.
fn spool_input(path: &Path) -> Option<SpoolInput> {
    let name = path.file_name().and_then(|n| n.to_str())?;
    if name.starts_with('.') {
        return None;
    }
    match path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
    {
        Some("requests") => Some(SpoolInput::Requests),
        Some("jobs") => name
            .strip_suffix(".job")
            .and_then(|s| s.parse::<JobId>().ok())
            .map(SpoolInput::Job),
        _ => None,
    }
}

/// Whether a watcher event may announce an input ([`spool_input`]): a job file or a request
/// that appeared (created, linked or renamed into place). Most events in `jobs/` are
/// `sched_d`'s own writes (a state file's temporary name created, written, closed and
/// renamed; an exits line appended; retired files removed) and so are the removals in
/// `requests/`: passed on, each would wake the main loop for nothing. Events are hints
/// either way; the periodic rescan catches anything missed.
fn announces_input(ev: &notify::Event) -> bool {
    use notify::EventKind;
    if matches!(ev.kind, EventKind::Remove(_) | EventKind::Access(_)) {
        return false;
    }
    ev.paths.iter().any(|p| {
        // A name that is not text cannot be judged here: passed on.
        p.file_name().and_then(|n| n.to_str()).is_none() || spool_input(p).is_some()
    })
}

fn now() -> i64 {
    crate::time::now()
}

/// The running daemon.
pub struct Daemon {
    spool: Spool,
    state: SchedState,
    runner: Box<dyn TaskRunner>,
    acct: Box<dyn AccountingHook>,
    opts: DaemonOptions,
    tx: Sender<Input>,
    rx: Receiver<Input>,
    launch_tx: Sender<LaunchEvent>,
    /// Finished jobs and when their files go.
    retire_at: BTreeMap<JobId, i64>,
    /// `-now y` jobs (`qsub -now y`, `qrsh`) not yet through a pass: one the pass after
    /// their arrival cannot start is removed, as SGE's scheduler drops them.
    immediate: BTreeSet<JobId>,
    wakeup: Option<i64>,
    pass_needed: bool,
    requests_needed: bool,
    rescan_needed: bool,
    reload_needed: bool,
    terminate: bool,
    /// Ids whose job file could not be used (quarantined); never loaded again.
    refused: BTreeSet<JobId>,
    /// Periodic passes refresh stale priorities in state files from here on.
    refresh_cursor: JobId,
    /// State files the last periodic pass still wants refreshed; written a chunk at a time
    /// while nothing else waits (see [`Daemon::refresh_some`]).
    refresh_budget: usize,
    /// When the last input arrived and the last refresh chunk was written: refreshing waits
    /// for a quiet moment ([`PRIORITY_REFRESH_QUIET`]), or [`PRIORITY_REFRESH_BUSY_EVERY`].
    last_input: Instant,
    last_refresh: Instant,
    periodic_due: bool,
    /// The next pass recomputes priorities and order (periodic, `-a` wake-up, reload).
    full_pass: bool,
    /// Job count at the last [`SchedState::compact`].
    compacted_at: usize,
    /// Job mail (`-m`), through the configured mailer.
    mailer: Mailer,
    /// Tasks whose end was taken in this wake-up, made durable together by [`Self::settle`].
    ended: Vec<EndedTask>,
    /// Ends whose accounting record and exits line are durable ([`Self::record_ends`]);
    /// their hosts are told once the states are written too ([`Self::settle`]).
    recorded: Vec<EndedTask>,
    /// The listing index (`spool::index`): every job's listing summary in two files, kept
    /// in step with the state files, so that `qstat` need not read one file per job.
    index: crate::spool::IndexWriter,
    /// Requests applied in this wake-up, removed at its end once the states they changed
    /// are written (together with the pass's, see [`Self::act`]).
    absorbed: Vec<(u64, String)>,
    /// Jobs whose record in memory shows a task running (`r`) that their state file still
    /// shows transferring (`t`), and when that is written at the latest
    /// ([`DaemonOptions::running_state_delay`]); any earlier write of the job takes it along.
    running_unwritten: BTreeMap<JobId, Instant>,
    /// The same deadlines in the order they fall due (the delay is constant, so that is the
    /// order they were set in): the loop reads the soonest and [`Self::running_due`] takes
    /// the due ones from the front, without a walk over every entry per wake-up. An entry
    /// whose job was written meanwhile no longer matches the map and is dropped there.
    running_deadlines: VecDeque<(Instant, JobId)>,
    /// Set while job ends cannot be made durable ([`Self::block`]).
    blocked: Option<Blocked>,
    /// The first write that failed in the current attempt ([`Self::storage_failed`]).
    failure: Option<String>,
    /// A watcher event came since the last attempt: a blocked daemon retries at once.
    spool_event: bool,
    /// Unknown hosts whose tasks are due for rescheduling (`reschedule_unknown`), and when.
    reschedule_due: BTreeMap<String, Instant>,
    /// Hosts heard again that take no new work until the runs given up there are settled
    /// (killed, collected or found gone: `daemon::unknown`), with when they take work anyway.
    settling: BTreeMap<String, Instant>,
    /// Pe tasks (`qrsh -inherit`) of running tasks.
    pe_tasks: pe_tasks::PeTasks,
    /// `--metrics`: what the endpoint shows, and the share-tree usage it reports.
    metrics: Option<(std::sync::Arc<super::metrics::Metrics>, super::SharedUsage)>,
}

/// Jobs the status page lists at most (a page of 100,000 rows helps nobody).
const STATUS_PAGE_JOBS: usize = 2000;

/// The storage-blocked state: since when, and when the writes are tried again.
#[derive(Debug)]
struct Blocked {
    since: Instant,
    backoff: Duration,
    retry_at: Instant,
}

/// The first retry of a blocked daemon comes this soon; each failed one doubles the wait,
/// up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(4);

/// A task end on its way to disk: accounted (in the hook's buffer), its exits line still to
/// write, its host still to be told that the result may go.
#[derive(Debug)]
struct EndedTask {
    job: JobId,
    task: crate::model::TaskId,
    host: String,
    /// `None`: nothing to write (a preempted task, which is pending again, or an end the
    /// daemon had no running task for); only the acknowledgement is due.
    exit: Option<FinishedTask>,
    /// Its exits line is durable (the accounting record, before it, too).
    exit_written: bool,
    /// The host reported this end and may now forget the task.
    acknowledge: bool,
}

/// The exits line of a task that ended with `result`.
fn exits_line(result: &crate::model::TaskResult, never_ran: bool) -> FinishedTask {
    FinishedTask {
        task: result.task,
        exit_status: result.exit_status,
        failed: result.failed,
        end_time: result.end_time as i64,
        signal: result.signal,
        never_ran,
    }
}

impl EndedTask {
    /// An end the host reported: nothing recorded yet, the host to be told when it is.
    fn reported(job: JobId, task: crate::model::TaskId, host: &str) -> Self {
        EndedTask {
            job,
            task,
            host: host.to_string(),
            exit: None,
            exit_written: false,
            acknowledge: true,
        }
    }

    /// An end decided here (no report from the host to acknowledge), with its exits line.
    fn decided(
        job: JobId,
        task: crate::model::TaskId,
        host: &str,
        exit: Option<FinishedTask>,
    ) -> Self {
        EndedTask {
            job,
            task,
            host: host.to_string(),
            exit,
            exit_written: false,
            acknowledge: false,
        }
    }
}

/// How long a task that started may still show `t` in its state file (the default of
/// `--running-state-delay`). `t` → `r` is the one change that need not be durable at once (a
/// restarted `sched_d` asks the host whether a transferring task started, see
/// `TaskRunner::reattach`), so it is written with the job's next write or after this delay,
/// whichever comes first: a short task's end then takes it along, and its state file is
/// written once less (a new inode, an `fdatasync` and a directory sync). SGE's `qstat` shows
/// `t` for a moment too.
const RUNNING_STATE_DELAY: Duration = Duration::from_secs(1);

/// State files refreshed per periodic pass only for their priority columns.
const PRIORITY_REFRESH_PER_PASS: usize = 1000;

/// How many of them are written in one go: a chunk is what an event that arrives meanwhile
/// may have to wait for (1,000 durable writes at once once held a dispatch up for 1.7 s).
const PRIORITY_REFRESH_CHUNK: usize = 50;

/// Chunks are written once no input has come for this long: a stream of dispatches and ends
/// (2,000 short jobs) would otherwise interleave a chunk between every two inputs and rewrite
/// most pending jobs' state files for their priority columns alone, ahead of the writes
/// (`t`, the end) that take the new priority along anyway.
const PRIORITY_REFRESH_QUIET: Duration = Duration::from_millis(250);

/// While inputs keep coming, one chunk this often: priorities still reach the state files
/// of a cluster that is never quiet, at 25 files a second.
const PRIORITY_REFRESH_BUSY_EVERY: Duration = Duration::from_secs(2);

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("spool", &self.spool.root())
            .field("state", &self.state)
            .finish()
    }
}

/// Parses `config.yaml` (the daemon never trusts the snapshot) and writes the snapshot that
/// spares clients the YAML parse; a snapshot that cannot be written only costs them time.
pub fn load_config(spool: &Spool) -> Result<ClusterConfig, ConfigError> {
    let (text, config) = ClusterConfig::load_text(&spool.config_path())?;
    for w in config.warnings() {
        warn!("configuration: {w}");
    }
    match spool.write_config_snapshot(&text, &config) {
        Ok(true) => {}
        Ok(false) => warn!("the configuration has no exact JSON form: clients will parse the YAML"),
        Err(e) => warn!("configuration snapshot not written, clients will parse the YAML: {e}"),
    }
    Ok(config)
}

impl Daemon {
    /// Builds the daemon over an opened, locked spool. `make_runner` receives the channel on
    /// which the runner must report [`LaunchEvent`]s.
    pub fn new(
        spool: Spool,
        opts: DaemonOptions,
        make_runner: impl FnOnce(
            &Spool,
            Sender<LaunchEvent>,
        ) -> Result<Box<dyn TaskRunner>, DaemonError>,
        acct: Box<dyn AccountingHook>,
    ) -> Result<Self, DaemonError> {
        let config = load_config(&spool)?;
        let (tx, rx) = mpsc::channel();
        let (launch_tx, launch_rx) = mpsc::channel::<LaunchEvent>();
        let fwd = tx.clone();
        std::thread::Builder::new()
            .name("launch-events".into())
            .spawn(move || {
                for ev in launch_rx {
                    if fwd.send(Input::Launch(Box::new(ev))).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| io("spawn thread", Path::new("launch-events"), e))?;
        let runner = make_runner(&spool, launch_tx.clone())?;
        let mailer = Mailer::new(config.mailer());
        let spool_for_index = spool.clone();
        Ok(Daemon {
            mailer,
            spool,
            state: SchedState::new(config),
            runner,
            acct,
            opts,
            tx,
            rx,
            launch_tx,
            retire_at: BTreeMap::new(),
            immediate: BTreeSet::new(),
            wakeup: None,
            pass_needed: true,
            requests_needed: true,
            rescan_needed: false,
            reload_needed: false,
            terminate: false,
            refused: BTreeSet::new(),
            refresh_cursor: JobId(0),
            refresh_budget: 0,
            last_input: Instant::now(),
            last_refresh: Instant::now(),
            periodic_due: false,
            full_pass: true,
            compacted_at: 0,
            ended: Vec::new(),
            recorded: Vec::new(),
            index: crate::spool::IndexWriter::off(&spool_for_index),
            absorbed: Vec::new(),
            running_unwritten: BTreeMap::new(),
            running_deadlines: VecDeque::new(),
            blocked: None,
            failure: None,
            spool_event: false,
            reschedule_due: BTreeMap::new(),
            settling: BTreeMap::new(),
            pe_tasks: pe_tasks::PeTasks::default(),
            metrics: None,
        })
    }

    /// A sender for inputs (signals, tests).
    pub fn sender(&self) -> Sender<Input> {
        self.tx.clone()
    }

    /// `--metrics`: keeps `metrics` up to date, with the share-tree usage of `usage`.
    pub fn set_metrics(
        &mut self,
        metrics: std::sync::Arc<super::metrics::Metrics>,
        usage: super::SharedUsage,
    ) {
        self.metrics = Some((metrics, usage));
    }

    /// The status page's part from the state: the first [`STATUS_PAGE_JOBS`] jobs (by id)
    /// with why each waits, and the share tree against the usage.
    fn status_page(&self) -> String {
        let mut ids = self.state.job_ids();
        ids.sort();
        let total = ids.len();
        let jobs: Vec<(crate::model::JobRecord, Vec<String>)> = ids
            .into_iter()
            .take(STATUS_PAGE_JOBS)
            .filter_map(|id| {
                let job = self.state.job(id)?.into_owned();
                Some((job, self.state.pending_reasons(id).to_vec()))
            })
            .collect();
        let empty = gridspool_policy::sharetree::UsageStore::new();
        let guard = self
            .metrics
            .as_ref()
            .map(|(_, u)| u.lock().unwrap_or_else(|e| e.into_inner()));
        let usage = guard.as_deref().unwrap_or(&empty);
        let mut page = super::status_page::render_state(&self.state.config, &jobs, usage, now());
        if total > STATUS_PAGE_JOBS {
            page.push_str(&format!(
                "<p>The first {STATUS_PAGE_JOBS} of {total} jobs; qstat lists them all.</p>\n"
            ));
        }
        page
    }

    /// A scrape: the gauges that describe the whole cell, from the state (a walk over every
    /// job, once per scrape, not per event).
    fn refresh_metrics(&self) {
        use super::metrics::{JobLabels, QueueLabels, UsageLabels};
        let Some((m, usage)) = &self.metrics else {
            return;
        };
        let mut jobs: std::collections::HashMap<(&'static str, String), i64> = Default::default();
        let mut used = super::status_page::SlotsUsed::default();
        for id in self.state.job_ids() {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            used.add(&job);
            let owner = job.submitter.owner.clone();
            for g in &job.tasks.pending {
                let state = if job.error.is_some() {
                    "error"
                } else if !g.holds.is_none() {
                    "held"
                } else {
                    "pending"
                };
                *jobs.entry((state, owner.clone())).or_default() += g.tasks.len() as i64;
            }
            for t in &job.tasks.running {
                let state = if t.state == crate::model::RunState::Suspended || t.queue_suspended {
                    "suspended"
                } else {
                    "running"
                };
                *jobs.entry((state, owner.clone())).or_default() += 1;
            }
        }
        m.jobs.clear();
        for ((state, user), n) in jobs {
            m.jobs
                .get_or_create(&JobLabels {
                    state: state.to_string(),
                    user,
                })
                .set(n);
        }
        m.slots_used.clear();
        m.slots_total.clear();
        let config = &self.state.config;
        for q in &config.queues {
            for h in config.queue_hosts(q) {
                let name = format!("{}@{}", q.name, h.name);
                let labels = QueueLabels {
                    queue: name.clone(),
                };
                m.slots_total.get_or_create(&labels).set(i64::from(q.slots));
                m.slots_used
                    .get_or_create(&labels)
                    .set(i64::from(used.of(&name)));
            }
        }
        m.share_usage.clear();
        let decay = crate::acct::decay_config(config);
        let t = now();
        let store = usage.lock().unwrap_or_else(|e| e.into_inner());
        let kinds = store
            .users()
            .map(|(n, r)| ("user", n, r))
            .chain(store.projects().map(|(n, r)| ("project", n, r)));
        for (kind, name, record) in kinds {
            let u = record.usage_at(t, &decay);
            for (resource, value) in [("cpu", u.cpu), ("mem", u.mem), ("io", u.io)] {
                m.share_usage
                    .get_or_create(&UsageLabels {
                        kind: kind.to_string(),
                        name: name.to_string(),
                        resource: resource.to_string(),
                    })
                    .set(value);
            }
        }
    }

    /// The launcher's channel (for a runner built after the daemon).
    pub fn launch_sender(&self) -> Sender<LaunchEvent> {
        self.launch_tx.clone()
    }

    pub fn state(&self) -> &SchedState {
        &self.state
    }

    /// Replaces the priority policy (the lead plugs the policy crate in here).
    pub fn set_policy(&mut self, policy: Box<dyn super::priority::PriorityPolicy>) {
        self.state.set_policy(policy);
    }

    /// Runs until SIGTERM/SIGINT: recovery, watching, passes. Returns after draining.
    pub fn run(mut self) -> Result<(), DaemonError> {
        // Watch before reading the spool: a file published during recovery is then either
        // listed or announced (and loading a job twice is harmless), never missed.
        self.forward_signals()?;
        let _watcher = self.watch()?;
        // An index left by an earlier sched_d goes before any state file changes; this one's
        // is written once every job has been read.
        self.index = crate::spool::IndexWriter::begin(&self.spool);
        // A marker left by a daemon that died blocked; this one puts its own up if need be.
        self.spool.clear_storage_blocked();
        self.recover();
        if let Some(why) = self.failure.take() {
            self.block(why);
        }
        self.index.publish();
        info!(spool = %self.spool.root().display(), jobs = self.state.job_count(), "sched_d running");
        let periodic = self.opts.periodic.unwrap_or_else(|| {
            Duration::from_secs(
                crate::time::parse_time(&self.state.config.scheduler.schedule_interval)
                    .filter(|s| *s > 0 && *s < 86_400)
                    .unwrap_or(15) as u64,
            )
        });
        let mut next_periodic = Instant::now() + periodic;
        let mut next_rescan = Instant::now() + self.opts.rescan;
        loop {
            self.act();
            if self.terminate {
                break;
            }
            let t = now();
            let mut deadline = next_periodic.min(next_rescan);
            let mut soonest = self.retire_at.values().copied().min();
            if let Some(w) = self.wakeup {
                soonest = Some(soonest.map_or(w, |s| s.min(w)));
            }
            if let Some(s) = soonest {
                let at = Instant::now() + Duration::from_secs((s - t).max(0) as u64);
                deadline = deadline.min(at);
            }
            if let Some((at, _)) = self.running_deadlines.front() {
                deadline = deadline.min(*at);
            }
            if let Some(b) = &self.blocked {
                deadline = deadline.min(b.retry_at);
            }
            if let Some(at) = self.reschedule_due.values().min() {
                deadline = deadline.min(*at);
            }
            if let Some(at) = self.settling.values().min() {
                deadline = deadline.min(*at);
            }
            // Refreshing priorities is background work: inputs go first, and it goes on
            // once none has come for a moment, or now and then while they keep coming.
            if self.refresh_budget > 0 {
                deadline = deadline.min(
                    (self.last_input + PRIORITY_REFRESH_QUIET)
                        .min(self.last_refresh + PRIORITY_REFRESH_BUSY_EVERY),
                );
            }
            let timeout = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(timeout) {
                Ok(input) => {
                    let mut work = self.handle(input);
                    while let Ok(more) = self.rx.try_recv() {
                        work |= self.handle(more);
                    }
                    if work {
                        self.last_input = Instant::now();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if self.refresh_budget > 0 {
                let at = Instant::now();
                if at >= self.last_input + PRIORITY_REFRESH_QUIET
                    || at >= self.last_refresh + PRIORITY_REFRESH_BUSY_EVERY
                {
                    self.last_refresh = at;
                    self.refresh_some();
                }
            }
            let at = Instant::now();
            if at >= next_periodic {
                next_periodic = at + periodic;
                self.pass_needed = true;
                self.periodic_due = true;
                self.full_pass = true;
            }
            if at >= next_rescan {
                next_rescan = at + self.opts.rescan;
                self.rescan_needed = true;
            }
            if self.wakeup.is_some_and(|w| now() >= w) {
                self.wakeup = None;
                self.pass_needed = true;
                self.full_pass = true;
            }
            self.running_due(at);
            self.reschedule_due_hosts(at);
            self.settling_due_hosts(at);
        }
        self.drain();
        Ok(())
    }

    /// Does what the inputs asked for, in a fixed order. The ends taken are recorded first;
    /// their states are written with the pass's (one batch, one sync of `jobs/`, before
    /// anything starts on the slots they freed), and their hosts told at the end.
    ///
    /// Blocked, it only retries what could not be written (at the backoff's time, on a
    /// spool event, when stopping); once that passes, it goes on as usual. A failure on the
    /// way ([`Self::storage_failed`]) stops what would build on it: no requests applied,
    /// no jobs retired, no pass (nothing starts), requests not removed.
    fn act(&mut self) {
        self.still_master();
        if let Some(b) = &self.blocked {
            let due = self.terminate
                || std::mem::take(&mut self.spool_event)
                || Instant::now() >= b.retry_at;
            if !due {
                return;
            }
            self.failure = None;
            self.settle();
            if let Some(why) = self.failure.take() {
                self.block(why);
                return;
            }
            self.unblock();
            if self.terminate {
                return;
            }
        }
        self.failure = None;
        self.act_unblocked();
        if let Some(why) = self.failure.take() {
            self.block(why);
        }
    }

    fn act_unblocked(&mut self) {
        self.record_ends();
        if self.failure.is_none() && self.recorded.iter().any(|e| e.exit.is_none()) {
            // A preempted task is pending again and may start in this pass, in a new
            // directory of the same name on the same host: its old one must go first, and
            // only once its state no longer says it runs (it has no exits line to tell a
            // restarted daemon it ended).
            self.settle();
        }
        if self.terminate {
            return;
        }
        if self.rescan_needed {
            self.rescan_needed = false;
            self.scan_jobs_dir();
            self.requests_needed = true;
        }
        if self.failure.is_some() {
            // Ends not durable: nothing may build on them (their results stay on their
            // hosts); requests, retirement and the pass wait for the retry.
            self.settle();
            return;
        }
        if self.requests_needed {
            self.requests_needed = false;
            self.process_requests();
            // `qdel -f` accounts the tasks it takes out of their records: recorded before
            // those records are written.
            self.record_ends();
        }
        // After the requests: a `qconf` change they carry (a reload or a configuration
        // edit) holds for the pass that follows, so a job submitted just after it runs under it.
        if self.reload_needed {
            self.reload_needed = false;
            match load_config(&self.spool) {
                Ok(c) => {
                    self.runner.reconfigure(&c);
                    self.acct.reconfigure(&c);
                    self.mailer = Mailer::new(c.mailer());
                    self.state.reload_config(c);
                    info!("configuration reloaded");
                    self.pass_needed = true;
                }
                Err(e) => error!("configuration not reloaded, keeping the old one: {e}"),
            }
        }
        if self.failure.is_none() {
            self.retire_due();
        }
        if self.pass_needed && self.failure.is_none() {
            self.pass_needed = false;
            self.run_pass();
        }
        // The pass has written the states that the requests and the ends changed with its
        // own (a job released and dispatched in one wake-up is written once, as `t`); this
        // covers a wake-up without a pass. Only then do the requests go and the hosts learn
        // that their results may go.
        self.settle();
        if self.failure.is_some() {
            // The states these requests changed are not all on disk: they stay, to be
            // removed after the retry that writes them (applying one again changes nothing).
            return;
        }
        for (seq, name) in std::mem::take(&mut self.absorbed) {
            if let Err(e) = self.spool.remove_request(seq) {
                error!("cannot remove request {name}: {e}");
            }
        }
        if self.periodic_due {
            self.periodic_due = false;
            // Repack the job map when it grew by a quarter since the last time.
            let n = self.state.job_count();
            if n > 1000 && n > self.compacted_at + self.compacted_at / 4 {
                self.state.compact();
                self.compacted_at = n;
            }
            self.refresh_budget = PRIORITY_REFRESH_PER_PASS;
        }
    }

    /// Refreshes the priority columns of one chunk of state files whose priority changed,
    /// when no input waits.
    fn refresh_some(&mut self) {
        // Not while ends wait to be recorded: their states go after their records
        // ([`Self::settle`]), which the next wake-up writes.
        if self.refresh_budget == 0 || self.blocked.is_some() || !self.ended.is_empty() {
            return;
        }
        let chunk = self.refresh_budget.min(PRIORITY_REFRESH_CHUNK);
        let n = self
            .state
            .refresh_stale_priorities(&mut self.refresh_cursor, chunk);
        // Fewer than asked: every job was looked at, nothing else is stale.
        self.refresh_budget = if n < chunk {
            0
        } else {
            self.refresh_budget - chunk
        };
        if n > 0 {
            debug!(jobs = n, "refreshing priorities in state files");
            self.failure = None;
            self.flush();
            if let Some(why) = self.failure.take() {
                self.block(why);
            }
        }
    }

    /// Takes one input; false when it asked for nothing (a watcher event of `sched_d`'s own
    /// writes in `jobs/`).
    fn handle(&mut self, input: Input) -> bool {
        match input {
            Input::Fs(paths) => {
                self.spool_event = true;
                let mut work = false;
                for p in paths {
                    work |= self.hint(&p);
                }
                return work;
            }
            Input::Rescan => {
                self.spool_event = true;
                self.rescan_needed = true;
            }
            Input::Launch(ev) => self.launch_event(*ev),
            Input::Scrape(answer) => {
                self.refresh_metrics();
                let _ = answer.send(());
                return false;
            }
            Input::StatusPage(answer) => {
                let _ = answer.send(self.status_page());
                return false;
            }
            Input::Signal(sig) => {
                if sig == signal_hook::consts::SIGHUP {
                    info!("SIGHUP: reloading the configuration");
                    self.reload_needed = true;
                } else {
                    info!(signal = sig, "draining and exiting");
                    self.terminate = true;
                }
            }
        }
        true
    }

    /// One changed path: a new job file is loaded, a request makes the queue be read.
    /// Returns whether it was one of those.
    fn hint(&mut self, path: &Path) -> bool {
        match spool_input(path) {
            Some(SpoolInput::Requests) => {
                self.requests_needed = true;
                true
            }
            Some(SpoolInput::Job(id))
                if self.state.job(id).is_none()
                    && !self.refused.contains(&id)
                    && path.symlink_metadata().is_ok() =>
            {
                self.load_job(id);
                true
            }
            _ => false,
        }
    }

    fn watch(&self) -> Result<Box<dyn Watcher>, DaemonError> {
        let tx = self.tx.clone();
        let handler = move |res: notify::Result<notify::Event>| {
            let input = match res {
                Ok(ev) if ev.need_rescan() => Input::Rescan,
                Ok(ev) if !announces_input(&ev) => return,
                Ok(ev) => Input::Fs(ev.paths),
                Err(_) => Input::Rescan,
            };
            let _ = tx.send(input);
        };
        let mut watcher: Box<dyn Watcher> = match self.opts.poll {
            Some(interval) => Box::new(notify::PollWatcher::new(
                handler,
                notify::Config::default().with_poll_interval(interval),
            )?),
            None => Box::new(notify::recommended_watcher(handler)?),
        };
        for dir in [self.spool.jobs_dir(), self.spool.requests_dir()] {
            watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
        }
        Ok(watcher)
    }

    fn forward_signals(&self) -> Result<(), DaemonError> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
            .map_err(|e| io("install signal handlers", Path::new("signals"), e))?;
        let tx = self.tx.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if tx.send(Input::Signal(sig)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| io("spawn thread", Path::new("signals"), e))?;
        Ok(())
    }

    /// Everything from the spool: jobs, their running tasks (re-attached or accounted for),
    /// finished jobs awaiting retirement, leftover temporary files.
    fn recover(&mut self) {
        self.sweep_temp_files();
        let states = self.spool.queue_instance_states();
        for name in &states.disabled {
            self.state.set_instance_disabled(name, true);
        }
        for name in &states.enabled {
            self.state.set_instance_disabled(name, false);
        }
        for name in &states.suspended {
            self.state.set_instance_suspended(name, true);
        }
        for (name, why) in states.errors {
            self.state.set_instance_error(&name, Some(why));
        }
        let ids = self.list_job_ids();
        for id in ids {
            self.load_job(id);
        }
        self.state.compact();
        self.compacted_at = self.state.job_count();
        // Issue 4: the FBSNG policy's dynamic priorities survive a restart.
        if let Some(f) = super::fbsng::FbsngState::load(&self.spool.daemon_dir()) {
            self.state.set_fbsng_state(f);
        }
        // And Armada's decayed queue priorities.
        if let Some(a) = super::armada::ArmadaState::load(&self.spool.daemon_dir()) {
            self.state.set_armada_state(a);
        }
        let t = now();
        let retention = self.opts.retention.as_secs() as i64;
        for id in self.state.done_jobs() {
            self.retire_at.entry(id).or_insert(t + retention);
        }
    }

    fn sweep_temp_files(&self) {
        for dir in [self.spool.jobs_dir(), self.spool.requests_dir()] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.starts_with(crate::file::durable::TEMP_PREFIX) {
                    continue;
                }
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(600));
                if old {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }

    fn list_job_ids(&self) -> Vec<JobId> {
        let dir = self.spool.jobs_dir();
        let mut ids = Vec::new();
        match fs::read_dir(&dir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if let Some(id) = name.strip_suffix(".job").and_then(|s| s.parse().ok()) {
                        ids.push(id);
                    }
                }
            }
            Err(e) => error!("cannot list {}: {e}", dir.display()),
        }
        ids.sort_unstable();
        ids
    }

    fn scan_jobs_dir(&mut self) {
        for id in self.list_job_ids() {
            if self.state.job(id).is_none() && !self.refused.contains(&id) {
                self.load_job(id);
            }
        }
    }

    /// Reads one job (its state if `sched_d` wrote one, else its submission), checks that
    /// the job file belongs to the uid inside it, and adds it; running tasks are re-attached.
    fn load_job(&mut self, id: JobId) {
        // The owner comes from the descriptor that was read (`Spool::read_job_owned`); a
        // FIFO, link or directory in the job's place is set aside unread.
        let (record, entry, owner) = match self.spool.read_job_owned(id) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                self.quarantine_job(id, &format!("malformed job: {e}"));
                return;
            }
        };
        if record.id != id {
            self.quarantine_job(id, &format!("file of job {id} holds job {}", record.id));
            return;
        }
        if owner != record.submitter.uid {
            self.quarantine_job(
                id,
                &format!(
                    "foreign job file: owned by uid {owner} but submitted as uid {}",
                    record.submitter.uid
                ),
            );
            return;
        }
        let running = record.tasks.running.clone();
        let fresh = record.priority.is_none() && running.is_empty() && record.tasks.finished == 0;
        let immediate = fresh && record.spec.now;
        if !self.state.add_job(record) {
            return;
        }
        if immediate {
            self.immediate.insert(id);
        }
        self.index.put(id, entry);
        if fresh {
            info!(job = %id, "job submitted");
            if let Some((m, _)) = &self.metrics {
                m.submissions.inc();
            }
        } else {
            info!(job = %id, running = running.len(), "job recovered");
        }
        if !running.is_empty() {
            self.reattach(id, running);
        }
        self.sweep_rescheduled_of(id);
        // Keep waiting jobs encoded (see `sched::state::Rec`).
        self.state.cool_idle();
        self.pass_needed = true;
    }

    fn reattach(&mut self, id: JobId, running: Vec<crate::model::RunningTask>) {
        let recorded = recorded_exits(&self.spool, id);
        for r in running {
            if recorded.contains(&r.task) {
                // Ended and recorded before the crash; only the state write (and perhaps the
                // acknowledgement to the host) was lost.
                let _ = self.state.task_ended(id, r.task);
                info!(job = %id, task = r.task, "task had ended before the restart");
                self.ended.push(EndedTask::reported(id, r.task, &r.host));
                continue;
            }
            let Some(job) = self.state.job(id) else {
                return;
            };
            match self.runner.reattach(&job, &r) {
                Reattached::Attached => {
                    info!(job = %id, task = r.task, host = %r.host, "task re-attached")
                }
                Reattached::NeverStarted => {
                    info!(job = %id, task = r.task, "task had not started: pending again");
                    let _ = self.state.requeue_task(id, r.task, None);
                }
                Reattached::Unknown => {
                    warn!(job = %id, task = r.task, "task lost while sched_d was down: recorded as failed (100), not run again");
                    let result = crate::model::TaskResult {
                        job: id,
                        task: r.task,
                        host: r.host.clone(),
                        start_time: r.start_time as f64,
                        end_time: now() as f64,
                        exit_status: 137,
                        failed: 100,
                        error: Some("task lost while sched_d was down".into()),
                        ..Default::default()
                    };
                    self.task_ended(result);
                }
            }
        }
        self.settle();
    }

    fn quarantine_job(&mut self, id: JobId, reason: &str) {
        warn!(job = %id, "{reason}: quarantined");
        if let Some((m, _)) = &self.metrics {
            m.quarantined.inc();
        }
        self.refused.insert(id);
        self.index.forget(id);
        for path in [self.spool.job_file(id), self.spool.state_file(id)] {
            // `symlink_metadata`: a link is set aside itself, dangling or not, never followed.
            if path.symlink_metadata().is_ok()
                && let Err(e) = self.spool.quarantine(&path, reason)
            {
                error!(job = %id, "cannot quarantine {}: {e}", path.display());
            }
        }
    }

    /// Applies every request file in sequence order: verified and applied; their states
    /// are written and the requests removed at the end of the wake-up ([`Self::act`]).
    fn process_requests(&mut self) {
        let dir = self.spool.requests_dir();
        let mut names: Vec<String> = match fs::read_dir(&dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect(),
            Err(e) => {
                error!("cannot list {}: {e}", dir.display());
                return;
            }
        };
        names.sort();
        for name in names {
            let path = dir.join(&name);
            if !name.ends_with(".req") {
                self.quarantine_file(&path, "not a gridspool request");
                continue;
            }
            // Owner and bytes from one descriptor, opened by the spool's one safe open: a
            // FIFO, socket, device, directory or link is set aside unread.
            let read = crate::file::open::open(&path).and_then(|mut f| {
                use std::io::Read;
                let owner = f.metadata()?.uid();
                let mut bytes = Vec::new();
                f.read_to_end(&mut bytes)?;
                Ok((bytes, owner))
            });
            let (bytes, owner) = match read {
                Ok(x) => x,
                Err(e) if e.is_not_found() => continue,
                Err(e @ crate::file::open::OpenError::NotRegular(_)) => {
                    self.quarantine_file(&path, &format!("malformed request: {e}"));
                    continue;
                }
                Err(e) => {
                    error!("cannot read {}: {e}", path.display());
                    continue;
                }
            };
            let req: Request = match serde_json::from_slice(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    self.quarantine_file(&path, &format!("malformed request: {e}"));
                    continue;
                }
            };
            if owner != req.requester.uid {
                warn!(
                    seq = req.seq,
                    "forged request refused: file owned by uid {owner}, claims uid {} ({})",
                    req.requester.uid,
                    req.requester.user
                );
                self.quarantine_file(
                    &path,
                    &format!(
                        "forged request: file owned by uid {owner} but requester uid is {}",
                        req.requester.uid
                    ),
                );
                continue;
            }
            let seq = req.seq;
            self.apply_request(req);
            self.absorbed.push((seq, name));
        }
    }

    fn quarantine_file(&self, path: &Path, reason: &str) {
        warn!("{}: {reason}: quarantined", path.display());
        if let Some((m, _)) = &self.metrics {
            m.quarantined.inc();
        }
        if let Err(e) = self.spool.quarantine(path, reason) {
            error!("cannot quarantine {}: {e}", path.display());
        }
    }

    /// Applies one verified request. The requester's name and privileges are recomputed from
    /// the uid and the configuration, never taken from the file.
    fn apply_request(&mut self, mut req: Request) {
        let uid = req.requester.uid;
        if let Ok(Some(u)) = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
            req.requester.user = u.name;
        }
        req.requester.manager = self.state.config.is_manager(&req.requester.user, uid);
        req.requester.operator = self.state.config.is_operator(&req.requester.user, uid);
        // The jobs this request has reached so far. One request may hold several actions on
        // one job (`qdel 5.1 5.3`): every one of them applies, although the first marks the
        // job as having absorbed the request (a record that had absorbed it before, read back
        // after a restart, skips them all).
        let mut absorbing: HashSet<JobId> = HashSet::new();
        for action in &req.actions {
            let Some(id) = action.job() else {
                let (instances, change) = match action {
                    RequestAction::QueueState {
                        instances,
                        disabled,
                    } => (instances, InstanceChange::Disable(*disabled)),
                    RequestAction::QueueSuspend {
                        instances,
                        suspended,
                    } => (instances, InstanceChange::Suspend(*suspended)),
                    RequestAction::QueueClearError { instances } => {
                        (instances, InstanceChange::ClearError)
                    }
                    RequestAction::ConfigEdit {
                        base,
                        text,
                        expires,
                    } => {
                        self.config_edit(&req, base, text, *expires);
                        continue;
                    }
                    RequestAction::StartPeTask(asked) => {
                        self.start_pe_task(&req, asked);
                        continue;
                    }
                    RequestAction::ReloadConfig => {
                        if req.requester.manager {
                            info!(user = %req.requester.user, "qconf changed the configuration: reloading it");
                            self.reload_needed = true;
                        } else {
                            warn!(user = %req.requester.user, "reload asked by a user who is not a manager: ignored");
                        }
                        continue;
                    }
                    _ => continue,
                };
                self.change_instances(&req.requester, instances, change);
                continue;
            };
            let Some(job) = self.state.job_mut(id) else {
                debug!(job = %id, seq = req.seq, "request for a job that is gone");
                continue;
            };
            if job.applied_request >= req.seq && !absorbing.contains(&id) {
                continue;
            }
            absorbing.insert(id);
            if let RequestAction::Reschedule { tasks, force, .. } = action {
                job.applied_request = req.seq;
                self.reschedule(&req.requester, id, tasks, *force);
                continue;
            }
            // `qdel -f` takes running tasks out of the record: what they were is needed for
            // their accounting records.
            let running_before = job.tasks.running.clone();
            let outcome = Request::apply(action, &req.requester, job);
            job.applied_request = req.seq;
            match outcome {
                Err(denied) => {
                    info!(job = %id, seq = req.seq, user = %req.requester.user, "request denied: {denied}");
                    self.state.mark_dirty(id);
                }
                Ok(Outcome::Delete(d)) => {
                    info!(job = %id, user = %req.requester.user, pending = %d.pending, "deleted");
                    let notify = job.spec.notify;
                    let finished = job.tasks.finished;
                    let kill_mail = mail::wanted(job, MailEvent::Abort).then(|| {
                        let m = mail::killed(job, &req.requester.user, &req.requester.host);
                        (mail::recipients(job), m)
                    });
                    let mut victims = Vec::new();
                    let mut forced = Vec::new();
                    for (t, how) in &d.running {
                        match how {
                            RunningDeletion::Registered => victims.push(*t),
                            // `qdel -f` by a manager took the task out of the record: its
                            // slots are free now, and what is left of it is killed.
                            RunningDeletion::Forced => {
                                victims.push(*t);
                                forced.push(*t);
                            }
                            RunningDeletion::AlreadyDeleting => {}
                        }
                    }
                    for t in forced {
                        self.state.forget_running(id, t);
                        if let Some(ran) = running_before.iter().find(|r| r.task == t) {
                            self.forced_end(id, ran);
                        }
                    }
                    if d.gone && finished == 0 && victims.is_empty() {
                        self.state.remove_job(id);
                        self.retire_at.remove(&id);
                        if let Err(e) = self.spool.remove_job(id) {
                            error!(job = %id, "cannot remove job files: {e}");
                        }
                        self.index.forget(id);
                    } else {
                        self.state.job_changed(id);
                        if d.gone {
                            self.retire_at
                                .insert(id, now() + self.opts.retention.as_secs() as i64);
                        }
                    }
                    if !victims.is_empty()
                        && let Some((to, m)) = kill_mail
                    {
                        self.mailer.send(&to, &m);
                    }
                    for t in victims {
                        info!(job = %id, task = t, user = %req.requester.user, "killing task (qdel)");
                        if let Err(e) = self.runner.kill(id, t, notify) {
                            warn!(job = %id, task = t, "kill: {e}");
                        }
                    }
                }
                Ok(Outcome::Qmod(events)) => {
                    info!(job = %id, user = %req.requester.user, "qmod applied: {events:?}");
                    // A cleared error makes the job a candidate again.
                    self.state.job_changed(id);
                    self.suspended(id, &events);
                }
                Ok(o) => {
                    info!(job = %id, user = %req.requester.user, "request applied: {o:?}");
                    self.state.job_changed(id);
                }
            }
        }
        self.pass_needed = true;
    }

    /// Makes the wake-up's changes durable: the accounting records of the tasks that ended
    /// (one append, one `fdatasync`), then their exits lines, then every changed state; only
    /// then are the hosts told that those results may go. A crash before the exits line is
    /// written leaves the result on its host, so the next daemon records it (once: recovery
    /// does not record a task whose exits line exists).
    ///
    /// No state is written while an end is not recorded (or anything failed in this
    /// attempt): a state that shows the task finished, with no exits line or accounting
    /// record behind it, would make a restarted daemon take the result its host still
    /// holds for the end of a task not running, and drop it.
    fn settle(&mut self) {
        self.record_ends();
        if self.failure.is_none() {
            self.flush();
        }
        for e in std::mem::take(&mut self.recorded) {
            if e.acknowledge {
                self.runner.acknowledge(e.job, e.task, &e.host);
            }
        }
    }

    /// The first part of [`Self::settle`]: the accounting records of the ends taken (one
    /// commit), then their exits lines. What cannot be written stays in `ended`, in order,
    /// unacknowledged, for the next attempt ([`Self::storage_failed`]): a failed commit
    /// keeps its records in the hook and leaves the file as it was, and an exits line is
    /// appended whole or not at all, so a retry writes each once.
    fn record_ends(&mut self) {
        if self.ended.is_empty() {
            return;
        }
        if let Err(e) = self.acct.commit() {
            debug!(tasks = self.ended.len(), "accounting: {e}");
            self.storage_failed(format!("cannot write accounting records: {e}"));
            return;
        }
        let spool = &self.spool;
        let appended = crate::file::durable::in_parallel(&self.ended, |e| match &e.exit {
            Some(line) if !e.exit_written => Some(append_exit(spool, e.job, line)),
            _ => None,
        });
        let mut failed = None;
        for (e, outcome) in self.ended.iter_mut().zip(appended) {
            match outcome {
                Some(Ok(())) => e.exit_written = true,
                Some(Err(err)) => {
                    debug!(job = %e.job, task = e.task, "cannot append exit: {err}");
                    failed.get_or_insert_with(|| format!("cannot append exit: {err}"));
                }
                None => {}
            }
        }
        if let Some(why) = failed {
            self.storage_failed(why);
        }
        let (done, waiting): (Vec<EndedTask>, Vec<EndedTask>) = std::mem::take(&mut self.ended)
            .into_iter()
            .partition(|e| e.exit.is_none() || e.exit_written);
        self.ended = waiting;
        self.recorded.extend(done);
    }

    /// Notes a write that failed in this attempt; the first one is the reason given.
    fn storage_failed(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }

    /// Enters the storage-blocked state (one log line and the marker for `qstat -j`), or
    /// stays in it with a doubled wait before the next retry.
    fn block(&mut self, why: String) {
        let now = Instant::now();
        if let Some((m, _)) = &self.metrics {
            m.spool_errors.inc();
        }
        match &mut self.blocked {
            None => {
                error!(
                    unrecorded = self.ended.len(),
                    "storage blocked: {why}; job ends stay on their hosts unacknowledged and nothing starts until they are recorded"
                );
                self.spool.set_storage_blocked(&why);
                self.blocked = Some(Blocked {
                    since: now,
                    backoff: RETRY_FIRST,
                    retry_at: now + RETRY_FIRST,
                });
            }
            Some(b) => {
                b.backoff = (b.backoff * 2).min(RETRY_MAX);
                b.retry_at = now + b.backoff;
                debug!(retry_in = ?b.backoff, "still blocked: {why}");
            }
        }
    }

    /// Leaves the storage-blocked state: everything held is on disk and acknowledged.
    fn unblock(&mut self) {
        if let Some(b) = self.blocked.take() {
            info!(
                blocked_for = ?b.since.elapsed(),
                "storage unblocked: job ends recorded, dispatching again"
            );
            self.spool.clear_storage_blocked();
            self.pass_needed = true;
            self.full_pass = true;
            self.requests_needed = true;
        }
    }

    /// Writes every changed record durably.
    /// Written in parallel with one sync of `jobs/` (`Spool::write_states`): the cost of a
    /// batch is about that of one write.
    fn flush(&mut self) {
        let records: Vec<JobRecord> = self
            .state
            .take_dirty()
            .into_iter()
            .filter_map(|id| self.state.record_for_write(id))
            .collect();
        for (job, outcome) in records.iter().zip(self.spool.write_states(&records)) {
            match outcome {
                Ok(entry) => {
                    self.state.note_written(job.id);
                    self.index.put(job.id, entry);
                    self.running_unwritten.remove(&job.id);
                }
                Err(e) => {
                    debug!(job = %job.id, "cannot write state: {e}");
                    // Whatever the file holds now, listings read it.
                    self.index.forget(job.id);
                    // Written again by the next attempt; meanwhile nothing starts.
                    self.state.mark_dirty(job.id);
                    self.storage_failed(format!("cannot write job state: {e}"));
                }
            }
        }
        // After the state files: a listing never shows what is not on disk yet.
        self.index.commit();
    }

    /// Exits at once if another daemon has taken this cell over (`sched::mastership`).
    fn still_master(&self) {
        if let Some(m) = &self.opts.mastership
            && let Err(replaced) = m.check()
        {
            super::mastership::exit_replaced(&replaced);
        }
    }

    fn run_pass(&mut self) {
        self.still_master();
        let started = Instant::now();
        let t = now();
        let result = if std::mem::take(&mut self.full_pass) {
            self.state.schedule(t)
        } else {
            self.state.schedule_event(t)
        };
        self.wakeup = [
            result.next_wakeup,
            self.state.hosts_down().iter().map(|(_, t)| *t).min(),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some((m, _)) = &self.metrics {
            m.pass_seconds.observe(started.elapsed().as_secs_f64());
            for s in &result.starts {
                if let Some(job) = self.state.job(s.job) {
                    m.dispatch_latency_seconds
                        .observe((t - job.submitter.submission_time).max(0) as f64);
                }
            }
        }
        // Transferring is durable before anything starts.
        self.flush();
        if self.failure.is_some() {
            // Not durable: none of these starts, they are pending again.
            for s in &result.starts {
                let _ = self.state.requeue_task(s.job, s.task, None);
            }
            self.pass_needed = true;
            return;
        }
        self.still_master();
        for s in &result.starts {
            let Some(job) = self.state.job(s.job) else {
                continue;
            };
            info!(job = %s.job, task = s.task, host = %s.placement.host, queue = %s.placement.queue, slots = s.placement.slots, "dispatching");
            if let Err(e) = self.runner.start(&job, s.task, &s.placement, s.restarted) {
                error!(job = %s.job, task = s.task, "cannot start: {e}");
                let _ = self.state.requeue_task(
                    s.job,
                    s.task,
                    Some(ErrorInfo {
                        time: t,
                        message: e.to_string(),
                    }),
                );
            }
        }
        // Issue 4: Qube! preemption (aggressive victims are killed; their end requeues them,
        // see `task_ended`) and the FBSNG priorities.
        for p in &result.preemptions {
            info!(job = %p.job, task = p.task, host = %p.host, for_job = %p.for_job, kill = p.kill, "preempted");
            if p.kill
                && let Err(e) = self.runner.kill(p.job, p.task, false)
            {
                warn!(job = %p.job, task = p.task, "kill (preemption): {e}");
            }
        }
        if let Err(e) = self
            .state
            .fbsng_state_mut()
            .save_if_changed(&self.spool.daemon_dir())
        {
            error!("cannot write the FBSNG priorities: {e}");
        }
        self.save_armada(false);
        self.drop_immediate_not_started();
        self.flush();
        self.state.cool_idle();
        debug!(
            considered = result.considered,
            started = result.starts.len(),
            reserved = result.reservations.len(),
            fits = result.fits,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "scheduling pass"
        );
    }

    /// After a pass: the `-now y` jobs it could not start are removed (no accounting record,
    /// as SGE drops them); their `qsub -now y` or `qrsh` sees the job gone and says so.
    fn drop_immediate_not_started(&mut self) {
        for id in std::mem::take(&mut self.immediate) {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            if !job.tasks.running.is_empty() || job.tasks.finished > 0 {
                continue;
            }
            info!(job = %id, "immediate job could not be scheduled: removed");
            self.state.remove_job(id);
            self.retire_at.remove(&id);
            if let Err(e) = self.spool.remove_job(id) {
                error!(job = %id, "cannot remove job files: {e}");
            }
            self.index.forget(id);
        }
    }

    fn launch_event(&mut self, ev: LaunchEvent) {
        match ev {
            LaunchEvent::Started {
                job,
                task,
                host,
                pid,
            } => {
                self.state.host_reachable(&host);
                // Written with the job's next write, or after `RUNNING_STATE_DELAY`: a
                // restarted daemon learns from the host, not from this state, whether the
                // task started.
                match self.state.task_started(job, task) {
                    Ok(()) => {
                        if let std::collections::btree_map::Entry::Vacant(e) =
                            self.running_unwritten.entry(job)
                        {
                            let at = Instant::now() + self.opts.running_state_delay;
                            e.insert(at);
                            self.running_deadlines.push_back((at, job));
                        }
                        info!(job = %job, task, host = %host, pid, "task running");
                        self.mail_begin(job, task);
                    }
                    Err(e) => warn!(job = %job, task, "started event: {e}"),
                }
            }
            LaunchEvent::Ended(result) => {
                self.task_ended(*result);
                self.pass_needed = true;
            }
            LaunchEvent::PeTaskEnded(result) => self.pe_task_ended(*result),
            LaunchEvent::NeverStarted { job, task, host } => {
                info!(job = %job, task, host = %host, "task never reached its host: pending again");
                let _ = self.state.requeue_task(job, task, None);
                self.pass_needed = true;
            }
            LaunchEvent::HostUnknown { host } => self.host_unknown(host),
            LaunchEvent::HostReturned { host } => self.host_returned(host),
            LaunchEvent::Swept { host, tasks } => self.swept(&host, &tasks),
            LaunchEvent::Failed {
                job,
                task,
                host,
                error,
                host_unreachable,
            } => {
                if host_unreachable {
                    let retry = self.state.host_unreachable(&host, now());
                    warn!(job = %job, task, host = %host, retry_at = ?retry, "host unreachable: task pending again: {error}");
                    let _ = self.state.requeue_task(job, task, None);
                } else {
                    warn!(job = %job, task, host = %host, "task failed to start, job in error state: {error}");
                    let _ = self.state.requeue_task(
                        job,
                        task,
                        Some(ErrorInfo {
                            time: now(),
                            message: error,
                        }),
                    );
                }
                self.pass_needed = true;
            }
        }
    }

    /// `-m b`: the task is running now.
    fn mail_begin(&self, id: JobId, task: TaskId) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        if !mail::wanted(&job, MailEvent::Begin) {
            return;
        }
        if let Some(t) = job.tasks.running.iter().find(|r| r.task == task) {
            self.mailer
                .send(&mail::recipients(&job), &mail::begin(&job, t));
        }
    }

    /// A task ended: accounted, state changed; [`Self::settle`] makes it durable (accounting,
    /// exits line, state, in that order) at the end of the wake-up. A job with nothing left
    /// is retired later.
    fn task_ended(&mut self, result: crate::model::TaskResult) {
        let (id, task) = (result.job, result.task);
        self.end_pe_tasks(id, task);
        if let Some((m, _)) = &self.metrics {
            m.task_ends.inc();
        }
        let ended = EndedTask::reported(id, task, &result.host);
        if let Some(run) = self.state.take_rescheduled(id, task, &result.host) {
            let host = result.host.clone();
            self.kept_result(run, result);
            self.settled(&host);
            return;
        }
        if self.earlier_run(&result) {
            warn!(job = %id, task, host = %result.host, "the result of an earlier run, rescheduled off that host, is not the task's: dropped");
            self.ended.push(ended);
            return;
        }
        let ended = match self.rescheduled_task_ended(id, task, &result, ended) {
            Ok(()) => return,
            Err(ended) => ended,
        };
        // Issue 14: a failed prolog or epilog puts its queue instance in error state.
        if crate::launch::shepherd::failed::queue_fault(result.failed) {
            self.queue_fault(id, task, &result);
        }
        let mut ended = match self.requeued_task_ended(id, task, &result, ended) {
            Ok(()) => return,
            Err(ended) => ended,
        };
        // Issue 4: an aggressively preempted task is accounted and pending again.
        if let Some(ran) = self.state.preempted_task_ended(id, task) {
            if let Some(job) = self.state.job(id)
                && let Err(e) = self.acct.record(&job, &ran, &result)
            {
                error!(job = %id, task, "accounting: {e}");
            }
            info!(job = %id, task, "preempted task requeued");
            self.ended.push(ended);
            return;
        }
        // SGE's job_exit.c, case 2: a job that could not start through its own fault is
        // accounted and goes to error state (`Eqw`), its task pending again; a task being
        // deleted ends as every deleted task does (below).
        if result.job_error
            && let Some(job) = self.state.job(id)
            && let Some(ran) = job.tasks.running.iter().find(|r| r.task == task)
            && !ran.deleting
        {
            let ran = ran.clone();
            if let Err(e) = self.acct.record(&job, &ran, &result) {
                error!(job = %id, task, "accounting: {e}");
            }
            let message = result.error.clone().unwrap_or_default();
            warn!(job = %id, task, failed = result.failed, "job could not start, job in error state: {message}");
            let error = ErrorInfo {
                time: now(),
                message,
            };
            if let Err(e) = self.state.requeue_task(id, task, Some(error)) {
                warn!(job = %id, task, "error state: {e}");
            }
            self.ended.push(ended);
            return;
        }
        let ran = match self.state.task_ended(id, task) {
            Ok(r) => r,
            Err(e) => {
                // Nothing to record; the host may forget it.
                warn!(job = %id, task, "end of a task not running: {e}");
                self.ended.push(ended);
                return;
            }
        };
        let Some(job) = self.state.job(id) else {
            self.ended.push(ended);
            return;
        };
        if let Err(e) = self.acct.record(&job, &ran, &result) {
            error!(job = %id, task, "accounting: {e}");
        }
        if mail::wanted(&job, MailEvent::for_end(&result)) {
            self.mailer
                .send(&mail::recipients(&job), &mail::end(&job, &ran, &result));
        }
        ended.exit = Some(exits_line(&result, ran.deleting));
        self.ended.push(ended);
        info!(job = %id, task, exit_status = result.exit_status, failed = result.failed, "task ended");
        if job.tasks.is_done() {
            let at = now() + self.opts.retention.as_secs() as i64;
            self.retire_at.insert(id, at);
            info!(job = %id, "job finished");
        }
    }

    /// `qdel -f` ended a running task as far as the cluster is concerned: it is accounted
    /// now (`failed` 100, exit status 137, as a killed job), whether or not its host ever
    /// reports — the host may be unreachable. A later report from the host finds the task no
    /// longer running and is not recorded again.
    fn forced_end(&mut self, id: JobId, ran: &crate::model::RunningTask) {
        let t = now();
        let result = crate::model::TaskResult {
            job: id,
            task: ran.task,
            host: ran.host.clone(),
            start_time: ran.start_time as f64,
            end_time: t as f64,
            exit_status: 137,
            signal: Some(9),
            failed: crate::launch::shepherd::failed::AFTER_JOB,
            error: Some("forced deletion (qdel -f)".to_string()),
            ..Default::default()
        };
        if let Some(job) = self.state.job(id)
            && let Err(e) = self.acct.record(&job, ran, &result)
        {
            error!(job = %id, task = ran.task, "accounting: {e}");
        }
        info!(job = %id, task = ran.task, host = %ran.host, "task accounted as deleted by force");
        // The task may still be running there; its directory goes when it reports.
        self.ended.push(EndedTask::decided(
            id,
            ran.task,
            &ran.host,
            Some(FinishedTask {
                task: ran.task,
                exit_status: result.exit_status,
                failed: result.failed,
                end_time: t,
                signal: result.signal,
                // A forced deletion, as any deletion, is a task that never ran to SGE.
                never_ran: true,
            }),
        ));
    }

    fn retire_due(&mut self) {
        let t = now();
        let due: Vec<JobId> = self
            .retire_at
            .iter()
            .filter(|(_, at)| **at <= t)
            .map(|(id, _)| *id)
            .collect();
        let mut retired = Vec::new();
        for id in due {
            self.retire_at.remove(&id);
            if self.state.job(id).is_some_and(|j| !j.tasks.is_done()) || self.awaits_reaped_end(id)
            {
                continue;
            }
            self.state.remove_job(id);
            retired.push(id);
            self.pass_needed = true;
        }
        if retired.is_empty() {
            return;
        }
        for id in &retired {
            self.index.forget(*id);
        }
        match self.spool.remove_jobs(&retired) {
            Ok(()) => {
                for id in &retired {
                    info!(job = %id, "job retired");
                }
            }
            Err(e) => {
                // One by one, to say which.
                for id in retired {
                    match self.spool.remove_job(id) {
                        Ok(()) => info!(job = %id, "job retired"),
                        Err(_) => error!(job = %id, "cannot remove job files: {e}"),
                    }
                }
            }
        }
    }

    /// Marks the jobs whose `r` has waited [`DaemonOptions::running_state_delay`] to be
    /// written with this wake-up's changes.
    fn running_due(&mut self, at: Instant) {
        while let Some(&(t, id)) = self.running_deadlines.front() {
            if t > at {
                break;
            }
            self.running_deadlines.pop_front();
            if self.running_unwritten.get(&id) == Some(&t) {
                self.running_unwritten.remove(&id);
                // A job removed meanwhile is not written (`record_for_write` has none).
                self.state.mark_dirty(id);
            }
        }
    }

    /// Writes the Armada priorities when due (`force`: now, the daemon is stopping).
    fn save_armada(&mut self, force: bool) {
        let dir = self.spool.daemon_dir();
        if let Err(e) = self
            .state
            .armada_state_mut()
            .save_if_due(&dir, now(), force)
        {
            error!("cannot write the Armada priorities: {e}");
        }
    }

    /// SIGTERM: nothing more is dispatched; every state is written; running tasks keep
    /// running and are re-attached by the next daemon.
    fn drain(&mut self) {
        self.save_armada(true);
        self.running_deadlines.clear();
        for id in std::mem::take(&mut self.running_unwritten).into_keys() {
            self.state.mark_dirty(id);
        }
        self.settle();
        // The last change to `jobs/`: the index stays valid while nothing changes there.
        self.index.stop();
        let running = self.state.running_tasks().len();
        info!(
            running,
            "sched_d stopped; running tasks are left to the next sched_d"
        );
    }

    /// Test and tooling access: a job record as the daemon holds it.
    pub fn job(&self, id: JobId) -> Option<std::borrow::Cow<'_, JobRecord>> {
        self.state.job(id)
    }
}
