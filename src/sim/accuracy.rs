//! How good start-time estimates are (issue 28): a workload is replayed, and at each job's
//! submission the forecast (`sched::forecast`) is made on a copy of the replay's state, once
//! with run times by the limits (the requested time, Slurm's `squeue --start` method) and
//! once with run times learned from the runs that ended so far in the replay (as the
//! accounting file would hold them). Each estimate of the job's first task is compared with
//! the start that task got later in the same replay.

use super::replay::{Replay, ReplayObserver, replay_observed};
use super::workload::TraceJob;
use crate::config::ClusterConfig;
use crate::model::{JobId, StartEstimate};
use crate::sched::forecast::{
    ExpectedRunTimes, ForecastOptions, LearnedRunTimes, RunTimeLimits, cell::copy_of, forecast,
};
use crate::sched::{SchedState, SharedUsage};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The errors of one method's estimates.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MethodAccuracy {
    /// `limits` or `learned`.
    pub method: &'static str,
    /// Jobs that got a time at submission and started in the replay.
    pub estimated: usize,
    /// Jobs that got no time (unknown, never) but started.
    pub without_time: usize,
    /// Absolute error |estimate − start|, seconds: median and 90th percentile.
    pub median_error: f64,
    pub p90_error: f64,
    /// The median of estimate − start (negative: estimates too early).
    pub median_bias: f64,
}

/// Both methods on one workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Accuracy {
    pub jobs: usize,
    pub methods: Vec<MethodAccuracy>,
}

/// The estimates made at each submission.
struct Estimator {
    learned: LearnedRunTimes,
    opts: ForecastOptions,
    /// Per job id: the estimated start of its first task, by each method (None: no time).
    made: HashMap<JobId, [Option<i64>; 2]>,
}

impl Estimator {
    fn estimate(
        &self,
        state: &SchedState,
        usage: &SharedUsage,
        t: i64,
        run_times: &dyn ExpectedRunTimes,
        ids: &[JobId],
    ) -> Vec<Option<i64>> {
        // The copy's priorities start from the usage as it is now, which the play leaves alone.
        let usage = Arc::new(Mutex::new(
            usage.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ));
        let mut copy = copy_of(state, usage);
        let (made, _) = forecast(&mut copy, t, run_times, &self.opts);
        ids.iter()
            .map(|&id| {
                let job = made.job(id)?;
                let first = job.tasks.first()?;
                match &first.start {
                    StartEstimate::At { time, .. } => Some(*time),
                    StartEstimate::Unknown { .. } | StartEstimate::Never { .. } => None,
                }
            })
            .collect()
    }
}

impl ReplayObserver for Estimator {
    fn submitted(&mut self, state: &SchedState, usage: &SharedUsage, t: i64, ids: &[JobId]) {
        let by_limits = self.estimate(state, usage, t, &RunTimeLimits, ids);
        let by_learning = self.estimate(state, usage, t, &self.learned, ids);
        for (i, &id) in ids.iter().enumerate() {
            self.made.insert(id, [by_limits[i], by_learning[i]]);
        }
    }

    fn accounted(&mut self, record: &crate::acct::AccountingRecord) {
        self.learned.learn(record);
    }
}

/// Replays `jobs` on `config` with both estimates made at every submission; returns the
/// replay and how far the estimates were from the starts.
pub fn measure(config: &ClusterConfig, jobs: &[TraceJob]) -> (Replay, Accuracy) {
    let mut estimator = Estimator {
        learned: LearnedRunTimes::default(),
        opts: ForecastOptions::default(),
        made: HashMap::new(),
    };
    let replay = replay_observed(config, jobs, &mut |_| {}, &mut estimator);
    // The first task's start of each job, by workload number.
    let mut started: HashMap<u64, i64> = HashMap::new();
    for r in &replay.runs {
        let start = started.entry(r.number).or_insert(r.start);
        if r.task == 1 {
            *start = r.start;
        }
    }
    let methods = ["limits", "learned"]
        .iter()
        .enumerate()
        .map(|(m, &method)| {
            let mut errors = Vec::new();
            let mut biases = Vec::new();
            let mut without_time = 0;
            for (id, made) in &estimator.made {
                let Some(number) = jobs.get(id.0 as usize - 1).map(|j| j.number) else {
                    continue;
                };
                let Some(&start) = started.get(&number) else {
                    continue;
                };
                match made[m] {
                    Some(t) => {
                        errors.push((t - start).abs());
                        biases.push(t - start);
                    }
                    None => without_time += 1,
                }
            }
            errors.sort_unstable();
            biases.sort_unstable();
            MethodAccuracy {
                method,
                estimated: errors.len(),
                without_time,
                median_error: super::report::percentile(&errors, 0.5),
                p90_error: super::report::percentile(&errors, 0.9),
                median_bias: super::report::percentile(&biases, 0.5),
            }
        })
        .collect();
    (
        replay,
        Accuracy {
            jobs: started.len(),
            methods,
        },
    )
}

/// The accuracy as a small table.
pub fn table(name: &str, a: &Accuracy) -> String {
    let mut out = format!(
        "start-time estimates at submission against the replay's starts ({name}, {} jobs):\n",
        a.jobs
    );
    out.push_str("method   estimated  no time  median error  p90 error  median bias\n");
    for m in &a.methods {
        out.push_str(&format!(
            "{:<8} {:>9} {:>8} {:>12.0}s {:>9.0}s {:>11.0}s\n",
            m.method, m.estimated, m.without_time, m.median_error, m.p90_error, m.median_bias
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(number: u64, submit: i64, run_time: i64, requested: i64, user: &str) -> TraceJob {
        TraceJob {
            number,
            submit,
            wait: -1,
            run_time,
            processors: 1,
            requested_time: Some(requested),
            user: user.into(),
            group: "g".into(),
            queue: "q".into(),
            ..TraceJob::default()
        }
    }

    /// One slot; a user whose jobs ask for an hour and run ten minutes. The first three
    /// teach the learned method; later submissions behind a queue are then estimated from
    /// ten-minute runs, exactly, while the requested hour puts them far too late.
    #[test]
    fn learned_run_times_estimate_a_queue_of_short_jobs_better_than_their_requests() {
        let config = ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 1}\nqueues:\n  - {name: all.q, hostlist: [n1], slots: 1}\nscheduler: {policy: fifo}\n",
        )
        .expect("config");
        let mut jobs: Vec<TraceJob> = (1..=3)
            .map(|i| job(i, (i as i64 - 1) * 700, 600, 3600, "a"))
            .collect();
        // Then four at once behind each other.
        jobs.extend((4..=7).map(|i| job(i, 3000, 600, 3600, "a")));
        let (replay, a) = measure(&config, &jobs);
        assert!(replay.never_started.is_empty());
        let limits = &a.methods[0];
        let learned = &a.methods[1];
        assert_eq!((limits.estimated, learned.estimated), (7, 7));
        // Job 5 starts at 3600 (behind job 4 from 3000): limits say 3000 + 3600.
        assert!(limits.p90_error >= 3000.0, "{a:?}");
        assert!(learned.p90_error < limits.p90_error, "{a:?}");
        assert_eq!(learned.median_error, 0.0, "{a:?}");
    }
}
