//! Keeping the start-time estimates fresh (`scheduler.start_estimates`): after a pass moved
//! them, `sched_d` starts a forecast process of its own program (`sched_d --forecast`), which
//! reads the cell from the spool, plays it forward (`sched::forecast`) and replaces
//! `daemon/estimates`. In a process apart and at a lower CPU priority, the forecast never
//! delays a dispatch, and the memory a copy of 100,000 jobs takes goes back when it exits.
//! At most one runs at a time, and one starts at most once per `refresh`.
//!
//! What moves the estimates is an event: a submission, an end, a request, a start, a timed
//! change (calendar, advance reservation, a host declared down). A periodic pass alone moves
//! them only as time passes (waiting times, runs past their expected end), so without an
//! event the forecast is made again only after [`UNPROMPTED_EVERY`]: at 100,000 jobs, where a
//! forecast takes tens of seconds, periodic passes would otherwise keep one running always.

use super::{Daemon, Input};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// How old the estimates of a cell with jobs may grow while no event moves them.
pub(super) const UNPROMPTED_EVERY: Duration = Duration::from_secs(600);

/// The forecasts' bookkeeping in the daemon.
#[derive(Debug, Default)]
pub(super) struct EstimateRefresh {
    /// The program to start as `sched_d --forecast` (`None`: no estimates, as in daemons
    /// built in process by tests).
    program: Option<PathBuf>,
    /// The pid of the forecast running.
    running: Option<u32>,
    /// A pass changed the state since the running or last forecast read it.
    stale: bool,
    /// An input came (or a timed wake-up) since the last pass: the next one moves the
    /// estimates.
    prompted: bool,
    /// When the last forecast started.
    last_start: Option<Instant>,
    /// The last forecast had jobs: a cell that emptied gets one more, with none.
    had_jobs: bool,
}

/// How a forecast process ended.
#[derive(Debug)]
pub struct ForecastDone {
    pub ok: bool,
    /// What it said on stderr (its error).
    pub said: String,
    pub took: Duration,
}

impl EstimateRefresh {
    pub(super) fn new(program: Option<PathBuf>) -> Self {
        // The first pass after a start moves them: the last forecast may be any age.
        EstimateRefresh {
            program,
            prompted: true,
            ..Default::default()
        }
    }

    /// When the next forecast may start, if one is wanted and none runs: a `refresh` after
    /// the last one once an event made them stale, else [`UNPROMPTED_EVERY`] after it while
    /// there are jobs.
    pub(super) fn due_at(&self, refresh: Duration) -> Option<Instant> {
        if self.program.is_none() || self.running.is_some() {
            return None;
        }
        match self.last_start {
            None if self.stale => Some(Instant::now()),
            Some(t) if self.stale => Some(t + refresh),
            Some(t) if self.had_jobs => Some(t + UNPROMPTED_EVERY.max(refresh)),
            _ => None,
        }
    }

    /// An input came, or a timed wake-up: the next pass moves the estimates.
    pub(super) fn prompt(&mut self) {
        self.prompted = true;
    }
}

impl Daemon {
    /// A pass ran, after inputs (`prompted`) or one that started or preempted something
    /// (`acted`): the estimates moved. A periodic pass that did neither leaves them.
    pub(super) fn estimates_moved(&mut self, acted: bool) {
        let e = &mut self.estimates;
        let moved = std::mem::take(&mut e.prompted) || acted;
        if moved && (self.state.job_count() > 0 || e.had_jobs) {
            e.stale = true;
        }
        if moved {
            e.had_jobs = self.state.job_count() > 0;
        }
    }

    /// The shortest time between two forecasts.
    pub(super) fn estimates_refresh(&self) -> Duration {
        Duration::from_secs(
            self.state
                .config
                .scheduler
                .start_estimates
                .refresh_secs()
                .max(1) as u64,
        )
    }

    /// Starts a forecast if one is due.
    pub(super) fn refresh_estimates(&mut self) {
        if !self.state.config.scheduler.start_estimates.enabled {
            return;
        }
        let Some(due) = self.estimates.due_at(self.estimates_refresh()) else {
            return;
        };
        if Instant::now() < due {
            return;
        }
        let Some(program) = self.estimates.program.clone() else {
            return;
        };
        self.estimates.stale = false;
        self.estimates.last_start = Some(Instant::now());
        match start_forecast(&program, self.spool.root(), self.tx.clone()) {
            Ok(pid) => self.estimates.running = Some(pid),
            Err(e) => warn!("cannot start the start-time forecast: {e}"),
        }
    }

    pub(super) fn forecast_done(&mut self, done: ForecastDone) {
        self.estimates.running = None;
        if let Some((m, _)) = &self.metrics {
            m.forecast_seconds.observe(done.took.as_secs_f64());
            let outcome = if done.ok { "ok" } else { "failed" };
            m.forecasts
                .get_or_create(&crate::sched::metrics::OutcomeLabels {
                    outcome: outcome.into(),
                })
                .inc();
        }
        if done.ok {
            debug!(
                took_ms = done.took.as_millis() as u64,
                "start-time estimates refreshed"
            );
        } else {
            warn!(said = %done.said.trim(), "the start-time forecast failed");
        }
    }

    /// Stops a forecast still running (the daemon stops).
    pub(super) fn stop_forecast(&mut self) {
        if let Some(pid) = self.estimates.running.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }
}

/// Starts `program` as `sched_d --forecast` on the cell in `root`; a thread of its own waits
/// for it and tells the daemon.
fn start_forecast(
    program: &std::path::Path,
    root: &std::path::Path,
    tx: Sender<Input>,
) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let started = Instant::now();
    let child = Command::new(program)
        .arg0("sched_d")
        .arg("--spool")
        .arg(root)
        .arg("--forecast")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    std::thread::Builder::new()
        .name("forecast".into())
        .spawn(move || {
            let done = match child.wait_with_output() {
                Ok(out) => ForecastDone {
                    ok: out.status.success(),
                    said: String::from_utf8_lossy(&out.stderr).into_owned(),
                    took: started.elapsed(),
                },
                Err(e) => ForecastDone {
                    ok: false,
                    said: e.to_string(),
                    took: started.elapsed(),
                },
            };
            let _ = tx.send(Input::ForecastDone(done));
        })?;
    Ok(pid)
}
