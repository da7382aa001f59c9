//! How long the forecast expects a task to run.
//!
//! By the limits (Slurm's method, and SGE's for reservations): the job's `h_rt` or `s_rt`
//! (the smaller), else its queue's, else the scheduler's `default_duration`; no figure where
//! all are INFINITY.
//!
//! Learned (`scheduler.start_estimates.run_times: learned`): the median of the owner's last
//! [`RECENT`] run times of jobs of the same name and category (SGE's summary of the hard
//! requests: `-l h_rt=3600 -pe smp 4`), else of the same category; else, for a job with a
//! run time limit, that limit times the median of the owner's recent runs' shares of their
//! limits (who asks for twice what they use goes on doing so); else the median of all the
//! owner's recent runs; from the cell's accounting file, each level used once it has
//! [`ENOUGH`] runs; capped by the limit, which alone decides when there is no history. A median of recent
//! runs because it is what a user would say ("my jobs of this kind take about that long"),
//! follows a change of habits within a few runs, and one job killed early or hung to its
//! limit does not move it.

use crate::config::ClusterConfig;
use crate::model::{JobRecord, ResourceRequest};
use crate::time::parse_time;
use std::collections::{HashMap, VecDeque};

/// How many recent runs of a kind the learned run time is the median of.
pub const RECENT: usize = 16;

/// How many runs a kind needs before its median is used.
pub const ENOUGH: usize = 3;

/// What of a job its expected run time depends on, taken once per job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobRunTime {
    /// The job's own limit: the smaller of its hard `h_rt` and `s_rt` (seconds).
    pub limit: Option<i64>,
    /// What its owner's past jobs of its kind ran (seconds), when they are known: the
    /// median of them.
    pub learned: Option<i64>,
    /// The longest of them: what a run already past the median is expected to reach.
    pub learned_longest: Option<i64>,
}

/// A source of expected run times.
pub trait ExpectedRunTimes {
    fn of_job(&self, job: &JobRecord) -> JobRunTime;
    /// The expected run time (seconds) of a task of a job started in `queue` that has run
    /// `elapsed` seconds already (0 for one starting; a running one when the forecast
    /// starts: a figure it has passed is of no use); `None` when no honest figure exists.
    fn expected(
        &self,
        job: &JobRunTime,
        queue: &str,
        config: &ClusterConfig,
        elapsed: i64,
    ) -> Option<i64>;
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
            ..JobRunTime::default()
        }
    }

    /// The limit, whatever ran of it.
    fn expected(
        &self,
        job: &JobRunTime,
        queue: &str,
        config: &ClusterConfig,
        _elapsed: i64,
    ) -> Option<i64> {
        limit_of(job, queue, config)
    }

    fn source(&self) -> &'static str {
        "limits"
    }
}

/// The limit that ends a task of `job` in `queue`: its own, else the queue's, else
/// `default_duration`.
fn limit_of(job: &JobRunTime, queue: &str, config: &ClusterConfig) -> Option<i64> {
    job.limit
        .or_else(|| queue_limit(config, queue))
        .or_else(|| finite(parse_time(&config.scheduler.default_duration)?))
}

/// The recent run times of one kind of job, oldest first.
#[derive(Debug, Clone, Default)]
struct Recent(VecDeque<i64>);

impl Recent {
    fn push(&mut self, seconds: i64) {
        if self.0.len() == RECENT {
            self.0.pop_front();
        }
        self.0.push_back(seconds);
    }

    /// The median and the longest, once there are enough runs.
    fn typical_and_longest(&self) -> Option<(i64, i64)> {
        Some((self.median()?, self.0.iter().copied().max()?))
    }

    fn median(&self) -> Option<i64> {
        if self.0.len() < ENOUGH {
            return None;
        }
        let mut v: Vec<i64> = self.0.iter().copied().collect();
        v.sort_unstable();
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2
        })
    }
}

/// Run times learned from finished jobs, by owner, name and category.
#[derive(Debug, Clone, Default)]
pub struct LearnedRunTimes {
    by_name: HashMap<(String, String, String), Recent>,
    by_category: HashMap<(String, String), Recent>,
    by_owner: HashMap<String, Recent>,
    /// Per owner, recent runs' shares of their limits, in thousandths.
    share_of_limit: HashMap<String, Recent>,
}

/// [`LearnedRunTimes`] as it is kept between forecasts (`forecast::history`): each kind
/// with its recent runs, oldest first.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LearnedEntries {
    by_name: Vec<(String, String, String, Vec<i64>)>,
    by_category: Vec<(String, String, Vec<i64>)>,
    by_owner: Vec<(String, Vec<i64>)>,
    share_of_limit: Vec<(String, Vec<i64>)>,
}

impl From<&LearnedRunTimes> for LearnedEntries {
    fn from(l: &LearnedRunTimes) -> Self {
        let runs = |r: &Recent| r.0.iter().copied().collect::<Vec<i64>>();
        LearnedEntries {
            by_name: l
                .by_name
                .iter()
                .map(|((o, n, c), r)| (o.clone(), n.clone(), c.clone(), runs(r)))
                .collect(),
            by_category: l
                .by_category
                .iter()
                .map(|((o, c), r)| (o.clone(), c.clone(), runs(r)))
                .collect(),
            by_owner: l
                .by_owner
                .iter()
                .map(|(o, r)| (o.clone(), runs(r)))
                .collect(),
            share_of_limit: l
                .share_of_limit
                .iter()
                .map(|(o, r)| (o.clone(), runs(r)))
                .collect(),
        }
    }
}

impl From<LearnedEntries> for LearnedRunTimes {
    fn from(e: LearnedEntries) -> Self {
        let recent = |v: Vec<i64>| Recent(v.into_iter().rev().take(RECENT).rev().collect());
        LearnedRunTimes {
            by_name: e
                .by_name
                .into_iter()
                .map(|(o, n, c, v)| ((o, n, c), recent(v)))
                .collect(),
            by_category: e
                .by_category
                .into_iter()
                .map(|(o, c, v)| ((o, c), recent(v)))
                .collect(),
            by_owner: e
                .by_owner
                .into_iter()
                .map(|(o, v)| (o, recent(v)))
                .collect(),
            share_of_limit: e
                .share_of_limit
                .into_iter()
                .map(|(o, v)| (o, recent(v)))
                .collect(),
        }
    }
}

impl LearnedRunTimes {
    /// Takes one finished task's run (a master task's record; a parallel job's slave tasks
    /// and tasks that never started are left out).
    pub fn learn(&mut self, r: &crate::acct::AccountingRecord) {
        if r.start_time <= 0 || r.end_time < r.start_time || r.pe_taskid != "NONE" {
            return;
        }
        let ran = r.end_time - r.start_time;
        self.by_name
            .entry((r.owner.clone(), r.job_name.clone(), r.category.clone()))
            .or_default()
            .push(ran);
        self.by_category
            .entry((r.owner.clone(), r.category.clone()))
            .or_default()
            .push(ran);
        self.by_owner.entry(r.owner.clone()).or_default().push(ran);
        if let Some(limit) = limit_in_category(&r.category).filter(|l| *l > 0) {
            self.share_of_limit
                .entry(r.owner.clone())
                .or_default()
                .push(ran.min(limit) * 1000 / limit);
        }
    }

    /// Learns from every record of an accounting file, in its order (oldest first).
    pub fn from_accounting(path: &std::path::Path) -> Result<Self, crate::acct::AcctError> {
        let mut learned = LearnedRunTimes::default();
        let reader = match crate::acct::Reader::open(path) {
            Ok(r) => r,
            Err(crate::acct::AcctError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(learned);
            }
            Err(e) => return Err(e),
        };
        for entry in reader {
            if let crate::acct::Entry::Record(r) = entry? {
                learned.learn(&r);
            }
        }
        Ok(learned)
    }

    /// What the owner's past jobs of `job`'s kind ran, if enough of them did; `limit` is the
    /// job's own run time limit.
    pub fn of(&self, owner: &str, name: &str, category: &str, limit: Option<i64>) -> Option<i64> {
        self.of_kind(owner, name, category, limit)
            .map(|(typical, _)| typical)
    }

    /// [`Self::of`], with the longest run of the same kind.
    fn of_kind(
        &self,
        owner: &str,
        name: &str,
        category: &str,
        limit: Option<i64>,
    ) -> Option<(i64, i64)> {
        let key = (owner.to_string(), name.to_string(), category.to_string());
        self.by_name
            .get(&key)
            .and_then(Recent::typical_and_longest)
            .or_else(|| {
                self.by_category
                    .get(&(key.0, key.2))
                    .and_then(Recent::typical_and_longest)
            })
            .or_else(|| {
                let (share, most) = self
                    .share_of_limit
                    .get(owner)
                    .and_then(Recent::typical_and_longest)?;
                Some((limit? * share / 1000, limit? * most / 1000))
            })
            .or_else(|| {
                self.by_owner
                    .get(owner)
                    .and_then(Recent::typical_and_longest)
            })
    }
}

impl ExpectedRunTimes for LearnedRunTimes {
    fn of_job(&self, job: &JobRecord) -> JobRunTime {
        let limit = time_limit(&job.spec.hard_resources);
        let kind = self.of_kind(
            &job.submitter.owner,
            &job.spec.name,
            &crate::acct::category(job),
            limit,
        );
        JobRunTime {
            limit,
            learned: kind.map(|(typical, _)| typical),
            learned_longest: kind.map(|(_, longest)| longest),
        }
    }

    /// The median of its kind; past that, the longest of its kind; past that too, its
    /// limit (none: unknown). Half of the runs of a kind outlast its median: one that did is
    /// not about to end, but the median said it would end at once.
    fn expected(
        &self,
        job: &JobRunTime,
        queue: &str,
        config: &ClusterConfig,
        elapsed: i64,
    ) -> Option<i64> {
        let limit = limit_of(job, queue, config);
        let capped = |d: i64| limit.map_or(d, |cap| d.min(cap));
        let Some(typical) = job.learned else {
            return limit;
        };
        [Some(typical), job.learned_longest]
            .into_iter()
            .flatten()
            .map(capped)
            .find(|d| *d > elapsed)
            .or(limit)
            .or((elapsed == 0).then_some(typical))
    }

    fn source(&self) -> &'static str {
        "learned"
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

/// The run time limit a category names (`-l h_rt=600,s_rt=…`), the smaller.
pub fn limit_in_category(category: &str) -> Option<i64> {
    let mut words = category.split(' ');
    while let Some(w) = words.next() {
        if w == "-l" {
            let list = words.next()?;
            return list
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .filter(|(k, _)| *k == "h_rt" || *k == "s_rt")
                .filter_map(|(_, v)| finite(parse_time(v)?))
                .min();
        }
    }
    None
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
            ..JobRunTime::default()
        };
        assert_eq!(job.limit, Some(600));
        assert_eq!(limits.expected(&job, "all.q", &config, 0), Some(600));
        let none = JobRunTime::default();
        assert_eq!(limits.expected(&none, "all.q", &config, 0), Some(7200));
        assert_eq!(limits.expected(&none, "open.q", &config, 0), None);
        config.scheduler.default_duration = "1:00:00".into();
        assert_eq!(limits.expected(&none, "open.q", &config, 0), Some(3600));
        assert_eq!(
            time_limit(&[request("h_rt", "INFINITY"), request("h_vmem", "1G")]),
            None
        );
    }
}

#[cfg(test)]
mod learned_tests {
    use super::*;
    use crate::acct::AccountingRecord;

    fn run(owner: &str, name: &str, category: &str, seconds: i64) -> AccountingRecord {
        AccountingRecord {
            owner: owner.into(),
            job_name: name.into(),
            category: category.into(),
            start_time: 1_000,
            end_time: 1_000 + seconds,
            pe_taskid: "NONE".into(),
            ..AccountingRecord::default()
        }
    }

    /// The median of the kind's recent runs, the most specific kind with enough of them,
    /// capped by the limit; a kind with too few runs falls back to a broader one.
    #[test]
    fn the_median_of_the_most_specific_kind_with_enough_runs_capped_by_the_limit() {
        let mut l = LearnedRunTimes::default();
        for s in [100, 120, 5000, 110] {
            l.learn(&run("alice", "sim", "-l h_rt=3600", s));
        }
        l.learn(&run("alice", "post", "-l h_rt=3600", 10));
        l.learn(&run("bob", "sim", "-l h_rt=3600", 900));
        assert_eq!(l.of("alice", "sim", "-l h_rt=3600", Some(3600)), Some(115));
        // One run of `post` is not enough: alice's jobs of that category (10, 100, 110,
        // 120, 5000).
        assert_eq!(l.of("alice", "post", "-l h_rt=3600", Some(3600)), Some(110));
        // A category alice never used: her runs' median share of their limits (110 of
        // 3600: 30 thousandths) of this job's limit, or without a limit her runs' median.
        assert_eq!(
            l.of("alice", "other", "-l h_rt=7200", Some(7200)),
            Some(216)
        );
        assert_eq!(l.of("alice", "other", "NONE", None), Some(110));
        assert_eq!(l.of("bob", "sim", "-l h_rt=3600", Some(3600)), None);
        assert_eq!(l.of("carol", "sim", "NONE", None), None);
        let config = ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 1}\nqueues:\n  - {name: all.q, hostlist: [n1], slots: 1}\n",
        )
        .expect("config");
        let capped = JobRunTime {
            limit: Some(60),
            learned: Some(115),
            ..JobRunTime::default()
        };
        assert_eq!(l.expected(&capped, "all.q", &config, 0), Some(60));
        let unlearned = JobRunTime {
            limit: Some(60),
            ..JobRunTime::default()
        };
        assert_eq!(l.expected(&unlearned, "all.q", &config, 0), Some(60));
        let unlimited = JobRunTime {
            limit: None,
            learned: Some(115),
            ..JobRunTime::default()
        };
        assert_eq!(l.expected(&unlimited, "all.q", &config, 0), Some(115));
    }

    /// A run past the median of its kind is expected to reach the longest of its kind; past
    /// that, its limit; past that too with no limit, no figure is honest.
    #[test]
    fn a_run_past_the_median_of_its_kind_is_expected_to_reach_the_longest() {
        let mut l = LearnedRunTimes::default();
        for ran in [100, 120, 400] {
            l.learn(&run("alice", "sim", "-l h_rt=1000", ran));
        }
        let config = ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 1}\nqueues:\n  - {name: all.q, hostlist: [n1], slots: 1}\n",
        )
        .expect("config");
        let (typical, longest) = l
            .of_kind("alice", "sim", "-l h_rt=1000", Some(1000))
            .expect("learned");
        assert_eq!((typical, longest), (120, 400));
        let job = JobRunTime {
            limit: Some(1000),
            learned: Some(typical),
            learned_longest: Some(longest),
        };
        let after = |job: &JobRunTime, elapsed| l.expected(job, "all.q", &config, elapsed);
        assert_eq!(after(&job, 0), Some(120));
        assert_eq!(after(&job, 119), Some(120));
        assert_eq!(after(&job, 120), Some(400));
        assert_eq!(after(&job, 400), Some(1000));
        let unlimited = JobRunTime { limit: None, ..job };
        assert_eq!(after(&unlimited, 200), Some(400));
        assert_eq!(after(&unlimited, 500), None);
        // By the limits, what ran does not matter.
        assert_eq!(
            RunTimeLimits.expected(&job, "all.q", &config, 990),
            Some(1000)
        );
    }

    /// Only the last `RECENT` runs count: a changed habit takes over.
    #[test]
    fn old_runs_leave_the_window() {
        let mut l = LearnedRunTimes::default();
        for _ in 0..RECENT {
            l.learn(&run("alice", "sim", "NONE", 1000));
        }
        for _ in 0..RECENT / 2 + 1 {
            l.learn(&run("alice", "sim", "NONE", 10));
        }
        assert_eq!(l.of("alice", "sim", "NONE", None), Some(10));
    }
}
