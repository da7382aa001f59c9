//! The ordering seam: a [`PriorityPolicy`] fills [`PriorityInfo`] (every column `qstat -urg`,
//! `-pri` and `-ext` shows) for the pending and running jobs of a pass, and [`order_key`]
//! turns the configured [`PolicyOrder`] into the order the pass tries jobs in.
//!
//! [`TemporarySgeFormula`] computes Grid Engine's formula from `sge_priority(5)` until the
//! policy crate (`gridspool_policy::sge`, `sharetree`) replaces it; it has no share-tree
//! tickets, so every job has 0 tickets and `ntckts` is 0.5 (SGE's value for an empty range).

use crate::config::{PolicyOrder, SchedulerConfig};
use crate::model::{JobId, PriorityInfo};

/// One job as a priority policy sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityInput<'a> {
    pub job: JobId,
    pub uid: u32,
    pub owner: &'a str,
    pub project: Option<&'a str>,
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

    /// The configuration was reloaded (SIGHUP): rebuild what depends on it.
    fn reconfigure(&mut self, _config: &crate::config::ClusterConfig) {}
}

/// `sge_priority(5)`, without tickets: the stand-in until the policy crate is wired.
#[derive(Debug, Default, Clone, Copy)]
pub struct TemporarySgeFormula;

/// SGE's min–max normalisation: `(v - min) / (max - min)`, 0.5 on an empty range.
pub fn normalise(values: &[f64]) -> Vec<f64> {
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if values.is_empty() || (max - min).abs() < f64::EPSILON {
        return vec![0.5; values.len()];
    }
    values.iter().map(|v| (v - min) / (max - min)).collect()
}

/// The urgency terms of one job (`sge_priority(5)`): wtcontr = waited seconds ×
/// weight_waiting_time, dlcontr = weight_deadline / seconds left (weight_deadline once the
/// deadline has passed), urg = rrcontr + wtcontr + dlcontr.
pub fn temporary_sge_urgency(
    c: &SchedulerConfig,
    now: i64,
    j: &PriorityInput<'_>,
) -> (f64, f64, f64) {
    let waited_until = j.running_since.unwrap_or(now);
    let wtcontr =
        ((waited_until - j.submission_time).max(0) as f64 * c.weight_waiting_time).round();
    let dlcontr = match j.deadline {
        None => 0.0,
        Some(dl) => {
            let left = dl - now;
            if left <= 0 {
                c.weight_deadline
            } else {
                c.weight_deadline / left as f64
            }
        }
    };
    (wtcontr, dlcontr, j.rrcontr + wtcontr + dlcontr)
}

impl PriorityPolicy for TemporarySgeFormula {
    fn compute(
        &mut self,
        c: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
    ) -> Vec<PriorityInfo> {
        let terms: Vec<(f64, f64, f64)> = jobs
            .iter()
            .map(|j| temporary_sge_urgency(c, now, j))
            .collect();
        let urg: Vec<f64> = terms.iter().map(|t| t.2).collect();
        let nurg = normalise(&urg);
        let tickets = vec![0.0; jobs.len()];
        let ntckts = normalise(&tickets);
        jobs.iter()
            .zip(terms)
            .zip(nurg.into_iter().zip(ntckts))
            .map(|((j, (wtcontr, dlcontr, urg)), (nurg, ntckts))| {
                let npprior = (f64::from(j.posix_priority) + 1024.0) / 2048.0;
                PriorityInfo {
                    prio: c.weight_priority * npprior
                        + c.weight_urgency * nurg
                        + c.weight_ticket * ntckts,
                    nurg,
                    npprior,
                    ntckts,
                    urg,
                    rrcontr: j.rrcontr,
                    wtcontr,
                    dlcontr,
                    ..PriorityInfo::default()
                }
            })
            .collect()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn input(job: u32, submitted: i64, rr: f64) -> PriorityInput<'static> {
        PriorityInput {
            job: JobId(job),
            uid: 1,
            owner: "u",
            project: None,
            submission_time: submitted,
            posix_priority: 0,
            slots: 1,
            rrcontr: rr,
            deadline: None,
            running_since: None,
        }
    }

    /// Seed `sge-urgency-and-tickets`: "A 16 cpu job that has waited 16 hours will have roughly
    /// the same urgency as a 32 cpu job that has just been submitted" — holds with SGE's
    /// 1,000 urgency per slot: 16,000 + 57,600 s × 0.278 = 32,013 ≈ 32,000.
    #[test]
    fn seed_sge_16_vs_32_slots_with_1000_per_slot() {
        let c = SchedulerConfig::default();
        let now = 1_000_000;
        let a = input(1, now - 16 * 3600, 16.0 * 1000.0);
        let b = input(2, now, 32.0 * 1000.0);
        let (_, _, ua) = temporary_sge_urgency(&c, now, &a);
        let (_, _, ub) = temporary_sge_urgency(&c, now, &b);
        assert!((ua - ub).abs() / ub < 0.01, "{ua} vs {ub}");
    }

    /// Seed: with 100 per slot, an s64 job (6,400) needs ~34 h to pass a fresh t2 job
    /// (200 + 40,000) and ~74 h to pass a fresh u2 job (200 + 80,000).
    #[test]
    fn seed_sge_queue_bonus_crossovers_with_100_per_slot() {
        let c = SchedulerConfig::default();
        let now = 10_000_000;
        let u = |j: &PriorityInput<'_>| temporary_sge_urgency(&c, now, j).2;
        let t2 = input(2, now, 200.0 + 40_000.0);
        let u2 = input(3, now, 200.0 + 80_000.0);
        assert!(u(&input(1, now - 33 * 3600, 6_400.0)) < u(&t2));
        assert!(u(&input(1, now - 34 * 3600, 6_400.0)) > u(&t2));
        assert!(u(&input(1, now - 73 * 3600, 6_400.0)) < u(&u2));
        assert!(u(&input(1, now - 74 * 3600, 6_400.0)) > u(&u2));
    }

    #[test]
    fn normalisation_and_weights() {
        let c = SchedulerConfig {
            weight_priority: 1.0,
            ..SchedulerConfig::default()
        };
        let now = 100;
        let mut p = TemporarySgeFormula;
        let mut hi = input(1, now, 2000.0);
        hi.posix_priority = 1024;
        let out = p.compute(&c, now, &[hi, input(2, now, 1000.0)]);
        assert_eq!(out[0].nurg, 1.0);
        assert_eq!(out[1].nurg, 0.0);
        assert_eq!(out[0].ntckts, 0.5);
        assert_eq!(out[0].npprior, 1.0);
        assert_eq!(out[1].npprior, 0.5);
        assert!((out[0].prio - (1.0 + 0.5 + 0.25)).abs() < 1e-9);
        let single = p.compute(&c, now, &[input(3, now, 5.0)]);
        assert_eq!(single[0].nurg, 0.5);
    }
}
