//! Start-time estimates (gridspool's own; SGE 8.1.9 has none): the live cell played forward
//! through the same scheduling pass as `sched_d`'s, on a virtual clock, with every running
//! and pending task's expected run time. Each pending task's estimate is the moment the played
//! pass starts it, with its queue and hosts; a task that never starts gets why instead.
//!
//! Unlike Slurm's `squeue --start`, which reads its backfill plan, the forecast plays every
//! pass of the policy as configured: priorities (from the usage of the start), reservations
//! and backfilling, resource quotas, advance reservations, preemption, `-hold_jid` chains,
//! queue calendars (an instance a calendar suspends holds its tasks' remaining run time
//! until it opens). What it does not play: usage charged by the played ends (tickets stay as
//! at the start), hosts going down or coming back (a host `sched_d` cannot reach takes no
//! work in the whole play), new submissions.
//!
//! Cost: one pass per step of the clock, where a step merges the ends that fall in it; steps
//! grow with the distance from now ([`Forecast::step`]), so a forecast far ahead needs a few
//! hundred passes, not one per end, and an estimate is late by at most one step (≤ 2% of how
//! far ahead it is, or `MIN_STEP`).

pub mod cell;
pub mod history;
pub mod run_times;
#[cfg(test)]
mod tests;

use super::SchedState;
use crate::model::{
    FORECAST_SCHEMA_VERSION, JobId, JobStartEstimate, Placement, StartEstimate, StartForecast,
    TaskId, TaskSet, TaskStartEstimate,
};
pub use run_times::{ExpectedRunTimes, JobRunTime, LearnedRunTimes, RunTimeLimits};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

/// The shortest step of the played clock: ends this close are played in one pass (the daemon
/// itself runs a pass for each end, but a forecast is not more exact than a pass's time).
pub const MIN_STEP: i64 = 10;

/// How far ahead a step reaches, as a fraction of the distance from now (1/50: 2%).
const STEP_FRACTION: i64 = 50;

/// How often (played seconds) the play recomputes every priority with a full pass.
const FULL_PASS_EVERY: i64 = 600;

/// How the forecast is bounded.
#[derive(Debug, Clone)]
pub struct ForecastOptions {
    /// Tasks that would start later than this after now are "unknown" (seconds).
    pub horizon: i64,
    /// At most this many passes are played.
    pub max_passes: usize,
}

impl Default for ForecastOptions {
    fn default() -> Self {
        ForecastOptions {
            horizon: 30 * 86_400,
            max_passes: 20_000,
        }
    }
}

/// What a played forecast did, besides its estimates (for the benchmark and the log).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForecastStats {
    pub passes: usize,
    pub starts: usize,
    /// The played clock's last moment.
    pub reached: i64,
}

/// What is known of a pending job before the play: what decides its estimate without a pass.
struct PendingJob {
    /// Its pending tasks at the start.
    tasks: TaskSet,
    /// Those of them held (`qhold`, `-h`), with the hold letters of the first held group.
    held: TaskSet,
    held_letters: String,
    /// Why no pass may start any of them (its error state), if so.
    error: Option<String>,
    /// Why no queue instance can ever take it (its requests match none), if so.
    never: Option<String>,
    /// What its expected run time depends on.
    run_time: JobRunTime,
}

/// The play: the state, its clock and the ends to come.
struct Forecast<'a> {
    state: &'a mut SchedState,
    run_times: &'a dyn ExpectedRunTimes,
    now: i64,
    /// (end, job, task) of the played runs with a known end.
    ends: BinaryHeap<Reverse<(i64, JobId, TaskId)>>,
    /// The end each played run has now (a preempted one's moves to its kill).
    runs: HashMap<(JobId, TaskId), i64>,
    /// Runs with no known end: what waits for them waits for an unknown time.
    endless: usize,
    /// Of those, the runs stopped by `qmod -sj`/`-sq` at the start.
    held_runs: usize,
    /// Runs stopped by their instance's calendar (`C`), with the run time they have left.
    paused: HashMap<(JobId, TaskId), i64>,
    /// Hosts that take no work in the play (unreachable at the start).
    down: Vec<String>,
    /// Per job with pending tasks (at the start): what the play needs of its record.
    pending: BTreeMap<JobId, PendingJob>,
    /// The first played start of each task pending at the start.
    started: HashMap<(JobId, TaskId), StartEstimate>,
    /// How many tasks pending at the start a pass may start (neither held nor in error).
    estimable: usize,
    /// Why the play stopped.
    stop: Stop,
    stats: ForecastStats,
}

/// Whether a running task is stopped at the start of the play, and by what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    No,
    /// By `qmod -sj` or `qmod -sq`: no known end.
    Held,
    /// By its queue instance's calendar: its run time goes on when the calendar opens.
    ByCalendar,
}

/// Why the play stopped: what the tasks it did not start are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Every task that a pass may start has started.
    AllStarted,
    /// Nothing more happens: no run has a known end to come, no start time is awaited.
    NoEvents,
    /// The next event is beyond the horizon.
    Horizon,
    /// The most passes were played.
    Passes,
}

/// Makes the forecast of the cell in `spool` as of `now` and replaces `daemon/estimates`
/// with it (`sched_d --forecast`).
pub fn refresh(spool: &crate::spool::Spool, now: i64) -> Result<ForecastStats, cell::CellError> {
    let started = std::time::Instant::now();
    let mut cell = cell::load_keeping_history(spool)?;
    let opts = ForecastOptions {
        horizon: cell.state.config.scheduler.start_estimates.horizon_secs(),
        ..ForecastOptions::default()
    };
    let run_times: Box<dyn ExpectedRunTimes> =
        match cell.state.config.scheduler.start_estimates.run_times {
            crate::config::RunTimeSource::Limits => Box::new(RunTimeLimits),
            crate::config::RunTimeSource::Learned => Box::new(std::mem::take(&mut cell.learned)),
        };
    let (mut made, stats) = forecast(&mut cell.state, now, run_times.as_ref(), &opts);
    made.took_ms = started.elapsed().as_millis() as u64;
    spool.write_estimates(&made)?;
    Ok(stats)
}

/// Plays `state` (the live cell's, loaded for the purpose: the play changes it) forward from
/// `now` and returns the estimate of every task pending at `now`.
pub fn forecast(
    state: &mut SchedState,
    now: i64,
    run_times: &dyn ExpectedRunTimes,
    opts: &ForecastOptions,
) -> (StartForecast, ForecastStats) {
    let mut f = Forecast {
        state,
        run_times,
        now,
        ends: BinaryHeap::new(),
        runs: HashMap::new(),
        endless: 0,
        held_runs: 0,
        paused: HashMap::new(),
        down: Vec::new(),
        pending: BTreeMap::new(),
        started: HashMap::new(),
        estimable: 0,
        stop: Stop::NoEvents,
        stats: ForecastStats {
            reached: now,
            ..ForecastStats::default()
        },
    };
    f.take_stock();
    f.play(opts);
    let jobs = f.estimates(opts);
    let stats = f.stats;
    (
        StartForecast {
            v: FORECAST_SCHEMA_VERSION,
            made_at: now,
            took_ms: 0,
            run_times: run_times.source().to_string(),
            jobs,
        },
        stats,
    )
}

impl Forecast<'_> {
    /// The pending tasks and what blocks them; the running tasks' expected ends.
    fn take_stock(&mut self) {
        self.down = self.state.unknown_hosts();
        let mut running = Vec::new();
        for id in self.state.job_ids() {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            let run_time = self.run_times.of_job(&job);
            for r in &job.tasks.running {
                // Stopped by `qmod -sj` or `qmod -sq`: until someone continues it, its end
                // is not known; by its calendar: its run time waits for the calendar.
                let instance = format!("{}@{}", r.queue, r.host);
                let stopped = match () {
                    _ if r.state == crate::model::RunState::Suspended => Stopped::Held,
                    _ if self.state.instance_states.suspended.contains(&instance) => Stopped::Held,
                    _ if self
                        .state
                        .instance_states
                        .calendar_suspended
                        .contains(&instance) =>
                    {
                        Stopped::ByCalendar
                    }
                    _ => Stopped::No,
                };
                running.push((id, r.task, r.start_time, r.queue.clone(), run_time, stopped));
            }
            let tasks = job.tasks.pending_tasks();
            let mut held = TaskSet::new();
            let mut held_letters = String::new();
            for g in job.tasks.pending.iter().filter(|g| g.holds.any()) {
                if held_letters.is_empty() {
                    held_letters = g.holds.letters();
                }
                for t in g.tasks.iter() {
                    held.insert(t);
                }
            }
            if tasks.is_empty() || job.spec.now {
                continue;
            }
            let error = job
                .error
                .is_some()
                .then(|| "the job is in error state (Eqw) until qmod -cj clears it".to_string());
            let never = self.never_fits(id);
            self.pending.insert(
                id,
                PendingJob {
                    tasks,
                    held,
                    held_letters,
                    error,
                    never,
                    run_time,
                },
            );
        }
        self.estimable = self
            .pending
            .values()
            .filter(|p| p.error.is_none() && p.never.is_none())
            .map(|p| (p.tasks.len() - p.held.len()) as usize)
            .sum();
        for (id, task, start, queue, own, stopped) in running {
            let elapsed = (self.now - start).max(0);
            let end = self
                .run_times
                .expected(&own, &queue, &self.state.config, elapsed)
                .map(|d| start.saturating_add(d).max(self.now));
            match (stopped, end) {
                (Stopped::No, _) | (Stopped::ByCalendar, None) => self.expect_end(id, task, end),
                (Stopped::Held, _) => {
                    self.held_runs += 1;
                    self.expect_end(id, task, None);
                }
                // When it was stopped is not kept: its run time left counts from now.
                (Stopped::ByCalendar, Some(end)) => self.pause((id, task), end - self.now),
            }
        }
    }

    /// Books the expected end of a (played or live) run.
    fn expect_end(&mut self, id: JobId, task: TaskId, end: Option<i64>) {
        match end {
            Some(end) => {
                self.state.set_expected_end(id, task, end);
                self.ends.push(Reverse((end, id, task)));
                self.runs.insert((id, task), end);
            }
            None => {
                self.state.set_expected_end(id, task, i64::MAX);
                self.endless += 1;
                self.runs.insert((id, task), i64::MAX);
            }
        }
    }

    /// Stops a run with `left` of its run time to go, until [`Self::apply_calendars`]
    /// continues it.
    fn pause(&mut self, key: (JobId, TaskId), left: i64) {
        self.state.set_expected_end(key.0, key.1, i64::MAX);
        self.runs.insert(key, i64::MAX);
        self.paused.insert(key, left);
    }

    /// How far the clock moves after a pass at `t`: the ends of that span are played together.
    fn step(&self, t: i64) -> i64 {
        MIN_STEP.max((t - self.now) / STEP_FRACTION)
    }

    fn play(&mut self, opts: &ForecastOptions) {
        let limit = self.now.saturating_add(opts.horizon);
        let mut t = self.now;
        // The played ends charge no usage, so they move no tickets: the order of the pending
        // jobs is recomputed only by a full pass, once per `FULL_PASS_EVERY` of played time
        // (for waiting times and the tickets of jobs that started), as the daemon's periodic
        // passes recompute it; the passes between are event passes. Far ahead, where a step
        // is longer than that, a full pass comes every 8 steps (a step's end is as coarse).
        self.state.usage_frozen = true;
        self.state.keep_running_warm = true;
        let mut next_full = t;
        loop {
            let calendar_change = self.apply_calendars(t);
            let result = if t >= next_full {
                next_full = t + FULL_PASS_EVERY.max(8 * self.step(t));
                self.state.schedule(t)
            } else {
                self.state.schedule_event(t)
            };
            self.stats.passes += 1;
            self.stats.reached = t;
            for s in &result.starts {
                if self.state.task_started(s.job, s.task).is_err() {
                    continue;
                }
                self.stats.starts += 1;
                if let Some(p) = self.pending.get(&s.job) {
                    let end = self
                        .run_times
                        .expected(&p.run_time, &s.placement.queue, &self.state.config, 0)
                        .map(|d| t.saturating_add(d));
                    if p.tasks.contains(s.task) {
                        self.started
                            .entry((s.job, s.task))
                            .or_insert_with(|| at(t, &s.placement));
                    }
                    self.expect_end(s.job, s.task, end);
                } else {
                    // A task requeued by a played preemption: not one of those estimated.
                    self.expect_end(s.job, s.task, None);
                }
            }
            // Started jobs' records were decoded to start them: kept encoded again, as in
            // the daemon, or a play of 100,000 starts would hold them all decoded.
            if self.stats.passes.is_multiple_of(16) {
                self.state.cool_idle();
            }
            for p in result.preemptions.iter().filter(|p| p.kill) {
                if let Some(end) = self.runs.get_mut(&(p.job, p.task)) {
                    *end = t;
                    self.ends.push(Reverse((t, p.job, p.task)));
                }
            }
            if self.started.len() >= self.estimable {
                self.stop = Stop::AllStarted;
                break;
            }
            if self.stats.passes >= opts.max_passes {
                self.stop = Stop::Passes;
                break;
            }
            // The next moment anything happens, no sooner than a step from now.
            let next = [
                self.ends.peek().map(|Reverse((at, _, _))| *at),
                result.next_wakeup.filter(|w| *w > t),
                calendar_change.filter(|c| *c > t),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else {
                self.stop = Stop::NoEvents;
                break;
            };
            let until = next.max(t + self.step(t));
            if until > limit {
                self.stop = Stop::Horizon;
                break;
            }
            t = until;
            self.end_runs_until(t);
        }
    }

    /// The queue calendars' states at `t`: the runs in an instance that a calendar suspends
    /// keep their remaining run time until it opens. Returns the next change.
    fn apply_calendars(&mut self, t: i64) -> Option<i64> {
        let (changes, next) = self.state.apply_calendars(t);
        for change in changes {
            let stopped = self.state.instance_states.stops_tasks(&change.instance);
            if stopped == change.stopped_before {
                continue;
            }
            for key in self.state.tasks_in_instance(&change.instance) {
                if stopped {
                    match self.runs.get(&key) {
                        Some(&end) if end != i64::MAX => self.pause(key, end - t),
                        _ => {}
                    }
                } else if let Some(left) = self.paused.remove(&key) {
                    self.expect_end(key.0, key.1, Some(t + left));
                }
            }
        }
        next
    }

    /// Plays the ends due by `t`: the tasks leave their slots.
    fn end_runs_until(&mut self, t: i64) {
        while let Some(Reverse((at, id, task))) = self.ends.peek().copied() {
            if at > t {
                break;
            }
            self.ends.pop();
            if self.runs.get(&(id, task)) != Some(&at) {
                continue;
            }
            self.runs.remove(&(id, task));
            // A finished job stays in the state, done: removing it would make the next pass
            // order every pending job again.
            if self.state.preempted_task_ended(id, task).is_none() {
                let _ = self.state.task_ended(id, task);
            }
        }
    }

    /// Every task pending at the start: its played start, else why it has none.
    fn estimates(&self, opts: &ForecastOptions) -> Vec<JobStartEstimate> {
        self.pending
            .iter()
            .map(|(&id, p)| {
                let unstarted = |task: TaskId| match (&p.never, &p.error) {
                    (Some(why), _) => StartEstimate::Never { why: why.clone() },
                    (None, Some(why)) => StartEstimate::Unknown { why: why.clone() },
                    _ if p.held.contains(task) => StartEstimate::Unknown {
                        why: format!("the job is held ({}) until qrls releases it", p.held_letters),
                    },
                    _ if self.stop == Stop::Horizon => StartEstimate::Unknown {
                        why: format!("later than the forecast's horizon ({} ahead)", ahead(opts.horizon)),
                    },
                    _ if self.stop == Stop::Passes => StartEstimate::Unknown {
                        why: format!("later than the forecast's {} passes reached", opts.max_passes),
                    },
                    _ if self.held_runs > 0 => StartEstimate::Unknown {
                        why: "it waits for jobs that are suspended (qmod -sj, -sq) to be continued".into(),
                    },
                    _ if self.endless > 0 => StartEstimate::Unknown {
                        why: "it waits for jobs that run without a run time limit (h_rt, s_rt, default_duration) to end".into(),
                    },
                    _ if !self.down.is_empty() => StartEstimate::Unknown {
                        why: format!("it may wait for hosts that cannot be reached ({}) to come back", self.down.join(", ")),
                    },
                    _ => StartEstimate::Never {
                        why: self.never_reason(id),
                    },
                };
                let mut tasks: Vec<TaskStartEstimate> = Vec::new();
                for task in p.tasks.iter() {
                    let start = self
                        .started
                        .get(&(id, task))
                        .cloned()
                        .unwrap_or_else(|| unstarted(task));
                    match tasks.last_mut() {
                        Some(last) if last.start == start => last.tasks.insert(task),
                        _ => tasks.push(TaskStartEstimate {
                            tasks: TaskSet::from_range(crate::model::TaskIdRange::single(task)),
                            start,
                        }),
                    }
                }
                JobStartEstimate { job: id, tasks }
            })
            .collect()
    }

    /// Why job `id`'s requests match no queue instance (its category's static verdict), if
    /// so: no end of another job will let it start.
    fn never_fits(&self, id: JobId) -> Option<String> {
        let cat = &self.state.categories[self.state.jobs.get(&id)?.cat];
        match &cat.demand {
            Err(e) => Some(e.clone()),
            Ok(_) => cat.static_reason.clone(),
        }
    }

    /// Why a job that the whole played future did not start can never start: the last
    /// pass's first reason for it.
    fn never_reason(&self, id: JobId) -> String {
        self.state
            .pending_reasons(id)
            .first()
            .cloned()
            .unwrap_or_else(|| "no queue instance can take it".into())
    }
}

/// A span ahead in words: `30 days`, else `h:mm:ss`.
fn ahead(seconds: i64) -> String {
    if seconds >= 86_400 && seconds % 86_400 == 0 {
        format!("{} days", seconds / 86_400)
    } else {
        format!(
            "{}:{:02}:{:02}",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        )
    }
}

/// A played start.
fn at(t: i64, placement: &Placement) -> StartEstimate {
    let mut hosts: Vec<String> = Vec::new();
    for (host, _, _) in &placement.granted {
        if !hosts.contains(host) {
            hosts.push(host.clone());
        }
    }
    if hosts.is_empty() {
        hosts.push(placement.host.clone());
    }
    StartEstimate::At {
        time: t,
        queue: placement.queue.clone(),
        hosts,
        slots: placement.slots,
    }
}
