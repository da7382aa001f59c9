//! Armada multi-resource fair share: resource factors, decayed queue priorities, inverse-priority
//! slices with probabilistic slicing, and dominant-resource fairness (DRF).
//!
//! Seed: `armada-fair-share.txt` (Armada's `docs/priority.md`). Resources are indexed by the
//! caller (for example 0 = cpu, 1 = memory, 2 = gpu); every vector in this module uses the same
//! indexing.
//!
//! Seed discrepancies:
//! - **Half-time formula.** The seed writes `priority = priority·(1 − β) + usage·β` with
//!   `β = 0.5^(Δt / halftime)`. With that, Δt → 0 gives β → 1 and the priority *jumps* to the
//!   current usage, and a long Δt keeps the old priority: the opposite of "priorityHalftime
//!   influences how quickly queue priority approaches resource usage". We implement
//!   `new = β·old + (1 − β)·usage`, which leaves the priority unchanged at Δt = 0, moves it half
//!   way to the usage after one half-time, and converges to a constant usage. (Armada's own code
//!   once had the seed's form and was later corrected to ours.)
//! - **Long-run shares of the slice algorithm.** "The share allocated to the queue is proportional
//!   to inverse of its priority" holds for one round. Over time, priority tracks usage, so a queue
//!   with usage share `s` and factor `f` is offered a fraction ∝ `1/(s·f)` of what frees up; at
//!   equilibrium that equals its share of what finishes, `s`, so `s² · f` is the same for every
//!   queue: **long-run shares are ∝ 1/√f, not 1/f**. Factors 1 and 2 settle at 58.6% / 41.4%, not
//!   2/3 / 1/3. Equal factors do give equal shares. DRF ([`drf_round`]) equalises
//!   `dominant share / weight` directly and so converges to shares ∝ weight.
//! - **Zero priority.** The seed does not say what a queue with no usage gets (the inverse of 0).
//!   See [`fair_shares`].

use crate::rng::SplitMix64;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fmt;

/// Why an Armada computation was rejected.
#[derive(Debug, Clone, PartialEq)]
pub enum ArmadaError {
    /// The cpu index is outside the totals vector.
    NoCpuResource { cpu_index: usize, len: usize },
    /// Resource factors are "how much of a resource is available per cpu": no cpus, no factors.
    CpuTotalNotPositive(f64),
    /// A half-time must be a positive, finite number of seconds.
    InvalidHalftime(f64),
    /// Elapsed time must be non-negative and finite.
    InvalidElapsed(f64),
    /// Priority factors and weights must be positive and finite.
    InvalidFactor(f64),
    /// Vectors that must be parallel were not.
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
}

impl fmt::Display for ArmadaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCpuResource { cpu_index, len } => {
                write!(f, "cpu resource index {cpu_index} outside {len} resources")
            }
            Self::CpuTotalNotPositive(v) => write!(f, "cluster cpu total {v} is not positive"),
            Self::InvalidHalftime(v) => write!(f, "priority half-time {v}s is not positive"),
            Self::InvalidElapsed(v) => write!(f, "elapsed time {v}s is not valid"),
            Self::InvalidFactor(v) => write!(f, "priority factor or weight {v} is not positive"),
            Self::LengthMismatch {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected {expected} entries, got {got}"),
        }
    }
}

impl std::error::Error for ArmadaError {}

/// Per-resource factors: how much of each resource the cluster has per cpu. The seed's example
/// (10 cpus, 20 GB, 5 GPUs) gives memory factor 2 and gpu factor 0.5.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceFactors {
    factors: Vec<f64>,
}

impl ResourceFactors {
    /// Factors from the cluster totals; `factor[r] = total[r] / total[cpu]`. A resource the
    /// cluster has none of gets factor 0 and is left out of usage (it cannot be used anyway).
    pub fn from_totals(totals: &[f64], cpu_index: usize) -> Result<Self, ArmadaError> {
        let cpu = *totals.get(cpu_index).ok_or(ArmadaError::NoCpuResource {
            cpu_index,
            len: totals.len(),
        })?;
        if !(cpu > 0.0 && cpu.is_finite()) {
            return Err(ArmadaError::CpuTotalNotPositive(cpu));
        }
        let factors = totals
            .iter()
            .map(|&t| {
                if t > 0.0 && t.is_finite() {
                    t / cpu
                } else {
                    0.0
                }
            })
            .collect();
        Ok(Self { factors })
    }

    pub fn factors(&self) -> &[f64] {
        &self.factors
    }

    /// One number for a resource vector, in cpu units:
    /// `usage = Σ amount[r] / factor[r]` (the seed: `5 + 2/2 + 1/0.5 = 8`).
    pub fn usage(&self, amounts: &[f64]) -> f64 {
        amounts
            .iter()
            .zip(&self.factors)
            .filter(|(_, f)| **f > 0.0)
            .map(|(a, f)| a / f)
            .sum()
    }
}

/// `priorityHalftime`, validated: positive and finite seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Halftime(f64);

impl Halftime {
    pub fn from_secs(secs: f64) -> Result<Self, ArmadaError> {
        if secs > 0.0 && secs.is_finite() {
            Ok(Self(secs))
        } else {
            Err(ArmadaError::InvalidHalftime(secs))
        }
    }

    pub fn secs(self) -> f64 {
        self.0
    }
}

/// Moves a queue priority toward its current usage: `β·old + (1 − β)·usage` with
/// `β = 0.5^(Δt / halftime)` (see the module docs for why β is not where the seed puts it).
pub fn update_priority(
    old: f64,
    usage: f64,
    elapsed_secs: f64,
    halftime: Halftime,
) -> Result<f64, ArmadaError> {
    if !(elapsed_secs >= 0.0 && elapsed_secs.is_finite()) {
        return Err(ArmadaError::InvalidElapsed(elapsed_secs));
    }
    let beta = 0.5f64.powf(elapsed_secs / halftime.secs());
    Ok(beta * old + (1.0 - beta) * usage)
}

/// [`update_priority`] for every queue; `priorities` is the caller-owned state.
pub fn update_priorities(
    priorities: &mut [f64],
    usages: &[f64],
    elapsed_secs: f64,
    halftime: Halftime,
) -> Result<(), ArmadaError> {
    if usages.len() != priorities.len() {
        return Err(ArmadaError::LengthMismatch {
            what: "queue usages",
            expected: priorities.len(),
            got: usages.len(),
        });
    }
    for (p, &u) in priorities.iter_mut().zip(usages) {
        *p = update_priority(*p, u, elapsed_secs, halftime)?;
    }
    Ok(())
}

/// `effectivePriority = priority × priorityFactor`; a lower factor earns more resources.
pub fn effective_priority(priority: f64, priority_factor: f64) -> f64 {
    priority * priority_factor
}

/// The floor applied to a queue's priority before its factor, so a queue with no recent usage
/// (priority 0) gets a large but finite share. *Chosen* value, in cpu units: half a cpu.
pub const DEFAULT_MIN_PRIORITY: f64 = 0.5;

/// Shares ∝ 1 / effective priority, summing to 1 (priorities 1 and 2 → 2/3 and 1/3).
///
/// Zero (or negative) effective priorities would need an infinite share; as the limit of equal
/// tiny priorities, the queues at zero split everything equally and the others get nothing.
/// [`fair_shares`] avoids that corner by flooring priorities first.
pub fn inverse_priority_shares(effective: &[f64]) -> Vec<f64> {
    let zeros = effective.iter().filter(|&&e| e <= 0.0).count();
    if zeros > 0 {
        let each = 1.0 / zeros as f64;
        return effective
            .iter()
            .map(|&e| if e <= 0.0 { each } else { 0.0 })
            .collect();
    }
    let total: f64 = effective.iter().map(|e| 1.0 / e).sum();
    effective.iter().map(|e| (1.0 / e) / total).collect()
}

/// Shares of the queues from their priorities and factors, with the priority floored at
/// `min_priority` before the factor applies: a queue with no usage then still gets a finite share,
/// and two idle queues still split in the inverse ratio of their factors. Errors on a factor
/// that is not positive.
pub fn fair_shares(
    priorities: &[f64],
    priority_factors: &[f64],
    min_priority: f64,
) -> Result<Vec<f64>, ArmadaError> {
    if priority_factors.len() != priorities.len() {
        return Err(ArmadaError::LengthMismatch {
            what: "priority factors",
            expected: priorities.len(),
            got: priority_factors.len(),
        });
    }
    let mut effective = Vec::with_capacity(priorities.len());
    for (&p, &f) in priorities.iter().zip(priority_factors) {
        if !(f > 0.0 && f.is_finite()) {
            return Err(ArmadaError::InvalidFactor(f));
        }
        effective.push(effective_priority(p.max(min_priority), f));
    }
    Ok(inverse_priority_shares(&effective))
}

/// A pending job: what it requests of each resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmadaJob {
    pub id: u64,
    pub request: Vec<f64>,
}

/// `scheduling.*` options of an allocation round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundConfig {
    /// `useProbabilisticSchedulingForAllResources`: skip the slice pass.
    pub use_probabilistic_scheduling_for_all_resources: bool,
    /// The seed's "scheduling time is up", as a step budget (no clock in this crate): the most
    /// probabilistic picks in one round.
    pub max_probabilistic_steps: usize,
}

impl Default for RoundConfig {
    fn default() -> Self {
        Self {
            use_probabilistic_scheduling_for_all_resources: false,
            max_probabilistic_steps: 10_000,
        }
    }
}

/// Which part of the round allocated a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Slice,
    Probabilistic,
}

/// One allocated job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    pub queue: usize,
    /// Index into that queue's job slice.
    pub job_index: usize,
    pub job: u64,
    pub phase: Phase,
}

/// Why a round stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundStop {
    /// No resource left, or no queue's next job fits what is left.
    NoResourcesLeft,
    /// Every queue is out of jobs.
    QueuesEmpty,
    /// `max_probabilistic_steps` reached.
    StepBudget,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RoundResult {
    pub allocations: Vec<Allocation>,
    /// Resources left after the round.
    pub available: Vec<f64>,
    pub stop: RoundStop,
}

fn fits(request: &[f64], available: &[f64]) -> bool {
    request
        .iter()
        .enumerate()
        .all(|(r, &q)| q <= 0.0 || available.get(r).is_some_and(|&a| q <= a + 1e-9))
}

fn take(available: &mut [f64], request: &[f64]) {
    for (a, q) in available.iter_mut().zip(request) {
        *a = (*a - q).max(0.0);
    }
}

/// One Armada scheduling round for an executor reporting `available` resources.
///
/// `queues[i]` are queue `i`'s pending jobs in queue order; `effective[i]` its effective priority
/// (see [`fair_shares`] for the zero case). Only non-empty queues get slices. Slices are in usage
/// units: `slice[i] = share[i] · usage(available)`.
///
/// 1. Slice pass (skipped if `use_probabilistic_scheduling_for_all_resources`): each queue in turn
///    takes its jobs in order while the next job's usage fits the rest of its slice and the job
///    fits the available resources.
/// 2. Probabilistic slicing: pick a queue that still has jobs with probability ∝ what is left of
///    its slice (∝ its share when every remainder is used up), schedule its next job if it fits
///    (otherwise the queue is done for this round), reduce its slice; stop when no resource is
///    left, the queues are empty, or the step budget is spent.
///
/// Cost: O(jobs allocated + queues × probabilistic steps).
pub fn allocation_round(
    queues: &[&[ArmadaJob]],
    effective: &[f64],
    available: &[f64],
    factors: &ResourceFactors,
    config: RoundConfig,
    rng: &mut SplitMix64,
) -> Result<RoundResult, ArmadaError> {
    if effective.len() != queues.len() {
        return Err(ArmadaError::LengthMismatch {
            what: "effective priorities",
            expected: queues.len(),
            got: effective.len(),
        });
    }
    let mut available = available.to_vec();
    let mut allocations = Vec::new();
    let n = queues.len();
    let mut next = vec![0usize; n];
    let mut done: Vec<bool> = queues.iter().map(|q| q.is_empty()).collect();

    // Shares among non-empty queues only.
    let active: Vec<usize> = (0..n).filter(|&i| !done[i]).collect();
    if active.is_empty() {
        return Ok(RoundResult {
            allocations,
            available,
            stop: RoundStop::QueuesEmpty,
        });
    }
    let active_shares =
        inverse_priority_shares(&active.iter().map(|&i| effective[i]).collect::<Vec<_>>());
    let mut share = vec![0.0; n];
    for (k, &i) in active.iter().enumerate() {
        share[i] = active_shares[k];
    }
    let total = factors.usage(&available);
    let mut slice: Vec<f64> = share.iter().map(|s| s * total).collect();

    if !config.use_probabilistic_scheduling_for_all_resources {
        for i in 0..n {
            while let Some(job) = queues[i].get(next[i]) {
                let u = factors.usage(&job.request);
                if u > slice[i] + 1e-9 || !fits(&job.request, &available) {
                    break;
                }
                take(&mut available, &job.request);
                slice[i] -= u;
                allocations.push(Allocation {
                    queue: i,
                    job_index: next[i],
                    job: job.id,
                    phase: Phase::Slice,
                });
                next[i] += 1;
            }
            if next[i] >= queues[i].len() {
                done[i] = true;
            }
        }
    }

    let mut steps = 0usize;
    let stop = loop {
        if factors.usage(&available) <= 1e-9 {
            break RoundStop::NoResourcesLeft;
        }
        let candidates: Vec<usize> = (0..n).filter(|&i| !done[i]).collect();
        if candidates.is_empty() {
            break if queues.iter().zip(&next).all(|(q, &k)| k >= q.len()) {
                RoundStop::QueuesEmpty
            } else {
                RoundStop::NoResourcesLeft
            };
        }
        if steps >= config.max_probabilistic_steps {
            break RoundStop::StepBudget;
        }
        steps += 1;
        let mut weights: Vec<f64> = candidates.iter().map(|&i| slice[i].max(0.0)).collect();
        if weights.iter().sum::<f64>() <= 1e-12 {
            weights = candidates.iter().map(|&i| share[i]).collect();
        }
        let i = candidates[pick_weighted(&weights, rng)];
        let Some(job) = queues[i].get(next[i]) else {
            done[i] = true;
            continue;
        };
        if !fits(&job.request, &available) {
            done[i] = true;
            continue;
        }
        take(&mut available, &job.request);
        slice[i] -= factors.usage(&job.request);
        allocations.push(Allocation {
            queue: i,
            job_index: next[i],
            job: job.id,
            phase: Phase::Probabilistic,
        });
        next[i] += 1;
        if next[i] >= queues[i].len() {
            done[i] = true;
        }
    };
    Ok(RoundResult {
        allocations,
        available,
        stop,
    })
}

/// Index chosen with probability ∝ `weights[i]` (all non-negative, not all zero; if they are all
/// zero, index 0).
fn pick_weighted(weights: &[f64], rng: &mut SplitMix64) -> usize {
    let total: f64 = weights.iter().sum();
    let mut x = rng.next_f64() * total;
    for (i, &w) in weights.iter().enumerate() {
        if x < w {
            return i;
        }
        x -= w;
    }
    // Rounding left x just past the end: the last queue with weight.
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Dominant share: the largest fraction of any resource the usage takes of the cluster totals.
/// Resources the cluster has none of are ignored.
pub fn dominant_share(usage: &[f64], totals: &[f64]) -> f64 {
    usage
        .iter()
        .zip(totals)
        .filter(|(_, t)| **t > 0.0)
        .map(|(u, t)| u / t)
        .fold(0.0, f64::max)
}

/// A queue for [`drf_round`].
#[derive(Debug, Clone, PartialEq)]
pub struct DrfQueue<'a> {
    /// What the queue already uses.
    pub usage: Vec<f64>,
    /// Fair-share weight; Armada uses `1 / priorityFactor`. Must be positive.
    pub weight: f64,
    pub jobs: &'a [ArmadaJob],
}

/// Result of a DRF round.
#[derive(Debug, Clone, PartialEq)]
pub struct DrfResult {
    /// (queue, job index) in allocation order.
    pub allocations: Vec<(usize, usize)>,
    pub available: Vec<f64>,
    /// Each queue's usage after the round.
    pub usage: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Share(f64);

impl Eq for Share {}
impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Share {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Dominant-resource fairness, as Armada schedules today: repeatedly give the next job of the queue
/// with the lowest weighted dominant share (`dominant_share / weight`, ties to the lower queue
/// index) until nothing more fits or `max_jobs` are placed. A queue whose next job does not fit is
/// done for the round. Cost O(J log Q) for J jobs placed and Q queues.
pub fn drf_round(
    queues: &[DrfQueue<'_>],
    totals: &[f64],
    available: &[f64],
    max_jobs: usize,
) -> Result<DrfResult, ArmadaError> {
    let mut usage: Vec<Vec<f64>> = Vec::with_capacity(queues.len());
    let mut heap = BinaryHeap::with_capacity(queues.len());
    for (i, q) in queues.iter().enumerate() {
        if !(q.weight > 0.0 && q.weight.is_finite()) {
            return Err(ArmadaError::InvalidFactor(q.weight));
        }
        let mut u = q.usage.clone();
        u.resize(totals.len().max(u.len()), 0.0);
        if !q.jobs.is_empty() {
            heap.push(Reverse((Share(dominant_share(&u, totals) / q.weight), i)));
        }
        usage.push(u);
    }
    let mut available = available.to_vec();
    let mut next = vec![0usize; queues.len()];
    let mut allocations = Vec::new();
    while allocations.len() < max_jobs {
        let Some(Reverse((_, i))) = heap.pop() else {
            break;
        };
        let Some(job) = queues[i].jobs.get(next[i]) else {
            continue;
        };
        if !fits(&job.request, &available) {
            continue;
        }
        take(&mut available, &job.request);
        for (u, r) in usage[i].iter_mut().zip(&job.request) {
            *u += r;
        }
        allocations.push((i, next[i]));
        next[i] += 1;
        if next[i] < queues[i].jobs.len() {
            heap.push(Reverse((
                Share(dominant_share(&usage[i], totals) / queues[i].weight),
                i,
            )));
        }
    }
    Ok(DrfResult {
        allocations,
        available,
        usage,
    })
}
