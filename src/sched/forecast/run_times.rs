//! How long the forecast expects a task to run.
//!
//! By the limits (Slurm's method, and SGE's for reservations): the job's `h_rt` or `s_rt`
//! (the smaller), else its queue's, else the scheduler's `default_duration`; no figure where
//! all are INFINITY.

use crate::config::ClusterConfig;
use crate::model::{JobRecord, ResourceRequest};
use crate::time::parse_time;

/// What of a job its expected run time depends on, taken once per job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobRunTime {
    /// The job's own limit: the smaller of its hard `h_rt` and `s_rt` (seconds).
    pub limit: Option<i64>,
}

/// A source of expected run times.
pub trait ExpectedRunTimes {
    fn of_job(&self, job: &JobRecord) -> JobRunTime;
    /// The expected run time (seconds) of a task of a job started in `queue`; `None` when no
    /// honest figure exists.
    fn expected(&self, job: &JobRunTime, queue: &str, config: &ClusterConfig) -> Option<i64>;
    /// Shown with the estimates: `limits` or `learned`.
    fn source(&self) -> &'static str;
}

/// Run times by the limits alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunTimeLimits;

impl ExpectedRunTimes for RunTimeLimits {
    fn of_job(&self, job: &JobRecord) -> JobRunTime {
        JobRunTime {
            limit: time_limit(&job.spec.hard_resources),
        }
    }

    fn expected(&self, job: &JobRunTime, queue: &str, config: &ClusterConfig) -> Option<i64> {
        job.limit
            .or_else(|| queue_limit(config, queue))
            .or_else(|| finite(parse_time(&config.scheduler.default_duration)?))
    }

    fn source(&self) -> &'static str {
        "limits"
    }
}

/// The smaller of `h_rt` and `s_rt` among `requests` (`-l h_rt=1:00:00`).
pub fn time_limit(requests: &[ResourceRequest]) -> Option<i64> {
    requests
        .iter()
        .filter(|r| r.name == "h_rt" || r.name == "s_rt")
        .filter_map(|r| finite(parse_time(&r.value)?))
        .min()
}

/// The smaller of the queue's `h_rt` and `s_rt` (`queue_conf(5)`), if it sets either.
pub fn queue_limit(config: &ClusterConfig, queue: &str) -> Option<i64> {
    let q = config.queue(queue)?;
    ["h_rt", "s_rt"]
        .iter()
        .filter_map(|k| finite(parse_time(q.limits.get(*k)?)?))
        .min()
}

fn finite(seconds: i64) -> Option<i64> {
    (seconds != i64::MAX).then_some(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str, value: &str) -> ResourceRequest {
        ResourceRequest {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn the_job_limit_comes_first_then_the_queue_then_default_duration() {
        let mut config = ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 1}\nqueues:\n  - {name: all.q, hostlist: [n1], slots: 1, limits: {s_rt: \"2:00:00\", h_rt: \"3:00:00\"}}\n  - {name: open.q, hostlist: [n1], slots: 1}\n",
        )
        .expect("config");
        let limits = RunTimeLimits;
        let job = JobRunTime {
            limit: time_limit(&[request("h_rt", "600"), request("s_rt", "0:20:00")]),
        };
        assert_eq!(job.limit, Some(600));
        assert_eq!(limits.expected(&job, "all.q", &config), Some(600));
        let none = JobRunTime::default();
        assert_eq!(limits.expected(&none, "all.q", &config), Some(7200));
        assert_eq!(limits.expected(&none, "open.q", &config), None);
        config.scheduler.default_duration = "1:00:00".into();
        assert_eq!(limits.expected(&none, "open.q", &config), Some(3600));
        assert_eq!(
            time_limit(&[request("h_rt", "INFINITY"), request("h_vmem", "1G")]),
            None
        );
    }
}
