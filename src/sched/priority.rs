//! The ordering seam: a [`PriorityPolicy`] fills [`PriorityInfo`] (every column `qstat -urg`,
//! `-pri` and `-ext` shows) for the pending and running jobs of a pass, and [`order_key`]
//! turns the configured [`PolicyOrder`] into the order the pass tries jobs in.
//!
//! Grid Engine's policy is [`super::sge_policy::SgePriority`], over the policy crate.

use crate::config::{PolicyOrder, SchedulerConfig};
use crate::model::{JobId, PriorityInfo};

/// One job as a priority policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityInput<'a> {
    pub job: JobId,
    pub uid: u32,
    pub owner: &'a str,
    pub project: Option<&'a str>,
    /// The owner's department (`defaultdepartment` unless a `DEPT` access list holds the
    /// owner).
    pub department: Option<&'a str>,
    pub submission_time: i64,
    /// `-p`, -1023..=1024.
    pub posix_priority: i32,
    /// Slots urgency counts with (`urgency_slots` of the PE, 1 for serial jobs).
    pub slots: u32,
    /// rrcontr: slots × slots urgency + hard request urgencies + queue urgency bonus.
    pub rrcontr: f64,
    /// `-dl`, seconds since the epoch.
    pub deadline: Option<i64>,
    /// The start time of its first running task, for running jobs (waiting time stops).
    pub running_since: Option<i64>,
}

/// Computes the priority of every job of a pass. Implementations must be pure (the clock is
/// `now`), so that passes are reproducible in tests.
pub trait PriorityPolicy: Send {
    fn compute(
        &mut self,
        config: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
    ) -> Vec<PriorityInfo>;

    /// [`PriorityPolicy::compute`] into `out` (cleared first), so that a pass can reuse the
    /// allocation of the last one.
    fn compute_into(
        &mut self,
        config: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
        out: &mut Vec<PriorityInfo>,
    ) {
        *out = self.compute(config, now, jobs);
    }

    /// [`PriorityPolicy::compute`] for `n` jobs given one at a time by `job(i)` (it may be
    /// called several times per job), handing each job's priority to `emit(i, …)`, so that a
    /// pass reads its jobs where it keeps them and stores the priorities there, without
    /// vectors of 100,000 inputs and priorities in between.
    fn compute_each<'a>(
        &mut self,
        config: &SchedulerConfig,
        now: i64,
        n: usize,
        job: &dyn Fn(usize) -> PriorityInput<'a>,
        emit: &mut dyn FnMut(usize, PriorityInfo),
    ) {
        let jobs: Vec<PriorityInput<'a>> = (0..n).map(job).collect();
        for (i, p) in self.compute(config, now, &jobs).into_iter().enumerate() {
            emit(i, p);
        }
    }

    /// The configuration was reloaded (SIGHUP): rebuild what depends on it.
    fn reconfigure(&mut self, _config: &crate::config::ClusterConfig) {}

    /// Most jobs left: drop what is kept between passes and sized by the jobs (the next pass
    /// rebuilds it for the jobs there are), so that its memory goes back.
    fn forget_caches(&mut self) {}
}

/// The sort key of a pending job under `policy`: smaller sorts first.
///
/// `Sge`: priority descending, then submission time, then job id (SGE's tie-breaks).
/// `Fifo`: job id. `Cluster`: priority descending, then job id (the seed's tie-breaks; the
/// cluster order, which depends on the host, comes first in [`super::qube`]). `Armada`: the
/// same key, re-ordered queue by queue in [`super::armada`]. `Fbsng` orders like `Sge` (its
/// dynamic queue priorities are not wired yet).
pub fn order_key(policy: PolicyOrder, prio: f64, submitted: i64, job: JobId) -> (i64, i64, JobId) {
    match policy {
        PolicyOrder::Fifo => (0, 0, job),
        PolicyOrder::Cluster | PolicyOrder::Armada => (-(prio * 1e12).round() as i64, 0, job),
        _ => (-(prio * 1e12).round() as i64, submitted, job),
    }
}
