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
//!
//! Here: the options, errors and inputs, the [`Daemon`] itself and its construction. Each
//! concern of its work is a part in `daemon/`: the spool lock ([`lock`]), the event loop
//! ([`event_loop`]), recovery ([`recovery`]), spool requests ([`requests`]), `qmod`
//! ([`qmod`]), the scheduling pass and timed work ([`scheduling`]), task ends and the
//! storage block ([`task_ends`]), priority refresh ([`priority_refresh`]), parallel tasks
//! ([`pe_tasks`]), hosts that went silent ([`unknown`]), and `--metrics` ([`status`]).

use super::runner::{AccountingHook, TaskRunner, recorded_exits};
use super::state::SchedState;
use crate::config::{ClusterConfig, ConfigError};
use crate::launch::LaunchEvent;
use crate::mail::Mailer;
use crate::model::{JobId, JobRecord};
use crate::spool::{Spool, SpoolError};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};
use tracing::{info, warn};

mod ars;
mod calendars;
mod estimates;
mod event_loop;
mod lock;
mod pe_tasks;
mod priority_refresh;
mod qmod;
mod recovery;
mod requests;
mod scheduling;
mod status;
mod task_ends;
mod unknown;

pub use estimates::ForecastDone;
pub use lock::SpoolLock;
use task_ends::{Blocked, EndedTask, exits_line};

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
    /// The program the start-time forecast runs as (`sched_d --forecast`): `sched_d`'s own;
    /// `None`, no estimates (daemons that tests build in process).
    pub forecast_program: Option<PathBuf>,
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
            forecast_program: None,
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
    /// `--metrics`: the status page's part that comes from the state (`status_page`), with
    /// the start-time forecast the HTTP thread read for it (shared: the HTTP thread keeps it
    /// and frees it, not the loop).
    StatusPage(
        Sender<String>,
        std::sync::Arc<crate::sched::status_estimates::PageForecast>,
    ),
    /// A start-time forecast process ended.
    ForecastDone(ForecastDone),
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
    /// The most jobs held since memory was last given back ([`RELEASE_AFTER_JOBS`]).
    jobs_high: usize,
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
    /// Refused advance reservations, and when their answer leaves `ars/`.
    ar_refusals: BTreeMap<u32, i64>,
    /// The start-time forecasts (`estimates`).
    estimates: estimates::EstimateRefresh,
    /// `--metrics`: what the endpoint shows, and the share-tree usage it reports.
    metrics: Option<(std::sync::Arc<super::metrics::Metrics>, super::SharedUsage)>,
}

/// A daemon that held at least this many jobs gives its spare memory back once they are down
/// to a quarter ([`SchedState::release_spare_memory`], `malloc_trim`): below it there is
/// little to give back, and a daemon whose queue breathes around a few hundred jobs would
/// trim every few passes.
const RELEASE_AFTER_JOBS: usize = 1000;

/// How long a task that started may still show `t` in its state file (the default of
/// `--running-state-delay`). `t` → `r` is the one change that need not be durable at once (a
/// restarted `sched_d` asks the host whether a transferring task started, see
/// `TaskRunner::reattach`), so it is written with the job's next write or after this delay,
/// whichever comes first: a short task's end then takes it along, and its state file is
/// written once less (a new inode, an `fdatasync` and a directory sync). SGE's `qstat` shows
/// `t` for a moment too.
const RUNNING_STATE_DELAY: Duration = Duration::from_secs(1);

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
        let forecast_program = opts.forecast_program.clone();
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
            jobs_high: 0,
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
            ar_refusals: BTreeMap::new(),
            estimates: estimates::EstimateRefresh::new(forecast_program),
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

    /// SIGTERM: nothing more is dispatched; every state is written; running tasks keep
    /// running and are re-attached by the next daemon.
    fn drain(&mut self) {
        self.save_armada(true);
        self.stop_forecast();
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
