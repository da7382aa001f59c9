//! Grid Engine 8.1.9 job priority: urgency, POSIX priority, ticket normalisation and the final
//! dispatch priority, as `sge_priority(5)` and `sched_conf(5)` define them and as the real SGE
//! 8.1.9 (Son of Grid Engine, Debian `8.1.9+dfsg`) computes them.
//!
//! The maths, from `sge_priority(5)` "JOBS DISPATCH PRIORITY":
//!
//! ```text
//! urg     = rrcontr + wtcontr + dlcontr
//! rrcontr = Σ hrr over the hard requests (+ the implicit `slots` request)
//!           hrr = rurg × assumed_slot_allocation × request   (numeric complexes)
//!           hrr = rurg                                       (string-like complexes)
//! wtcontr = waiting_time × weight_waiting_time
//! dlcontr = weight_deadline / free_time   (0 without deadline, weight_deadline once it passed)
//! prio    = weight_priority × npprior + weight_urgency × nurg + weight_ticket × ntckts
//! ```
//!
//! What the man page leaves open and this module pins down from SGE's behaviour (and the
//! captures in `oracle/sge-captures/`):
//!
//! * Normalisation is min–max over every job the scheduler considers in the pass (pending jobs
//!   that are not held, *and* running jobs), `(v − min) / (max − min)`, and exactly `0.5` when the
//!   range is narrower than `SGE_EPSILON = 1e-5` (`qstat-ext-urg-share.txt`: all urg 1000 → nurg
//!   0.50000).
//! * `npprior` normalises the POSIX priority shifted by 1024 over the fixed range 0..2048, so
//!   ppri 0 → 0.5, −100 → 924/2048 = 0.45117 (`qstat-pri.txt`).
//! * `ntckts` normalises over 0..max_tickets where max_tickets is the largest ticket amount of any
//!   considered job; with no tickets at all every job gets 0.5 (`qstat-pri.txt`).
//! * `wtcontr` is *not* rounded: the seed's `nint(...)` is what qstat's `%8.0f` display shows.
//! * Jobs the scheduler does not consider (held, error) show all zeros: see
//!   [`JobPriority::NOT_CONSIDERED`].
//!
//! The queue "urgency bonus" (the seed's +40,000 for t queues and +80,000 for u queues) is a
//! gridspool extension: SGE has no such term. It is modelled as an extra amount added to
//! `rrcontr`, supplied by the caller ([`JobPriorityInput::queue_urgency_bonus`]).
//!
//! # One scheduling pass
//!
//! 1. [`compute_tickets`] (or the single policies [`override_tickets`],
//!    [`functional_tickets`], [`crate::sharetree::ShareTree::tickets`]) gives every considered
//!    job its `tckts` and the ticket range maximum.
//! 2. [`compute_priorities`] with those tickets and [`PriorityPass::max_tickets`] gives every
//!    qstat priority column.
//! 3. [`dispatch_order`] sorts the pending jobs as SGE dispatches them.
//!
//! Array jobs: SGE computes tickets for at most [`pending_tasks_considered`] pending tasks per
//! job and shows the first task's values for the rest; pass that many tasks.
//!
//! One file over 1,000 lines: urgency, tickets, normalisation and the final priority are
//! one formula (`sge_priority(5)`), with the tests that check it beside it.

use std::cmp::Ordering;

/// `SGE_EPSILON` from SGE's `sge.h`: a normalisation range narrower than this yields 0.5.
pub const SGE_EPSILON: f64 = 0.00001;

/// Lowest POSIX priority a job may have (`qsub -p`, `sge_priority(5)`).
pub const POSIX_PRIORITY_MIN: i32 = -1023;
/// Highest POSIX priority (only managers and operators may go above 0).
pub const POSIX_PRIORITY_MAX: i32 = 1024;
/// SGE stores the POSIX priority shifted by this base, so that it lies in 1..=2048 and
/// normalises over 0..2048.
pub const POSIX_PRIORITY_BASE: i32 = 1024;

/// SGE's default `urgency` of the `slots` complex (`qconf -sc` in `qconf-sc.txt`).
pub const DEFAULT_SLOTS_URGENCY: f64 = 1000.0;

/// The scheduler configuration values that enter the priority (`sched_conf(5)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityWeights {
    /// `weight_priority`: weight of the normalised POSIX priority.
    pub weight_priority: f64,
    /// `weight_urgency`: weight of the normalised urgency.
    pub weight_urgency: f64,
    /// `weight_ticket`: weight of the normalised ticket amount.
    pub weight_ticket: f64,
    /// `weight_waiting_time`: urgency per second of waiting.
    pub weight_waiting_time: f64,
    /// `weight_deadline`: numerator of the deadline contribution.
    pub weight_deadline: f64,
}

impl PriorityWeights {
    /// The upstream installer's "normal" profile (`inst_schedd_normal.conf`), which the oracle
    /// runs (`qconf-ssconf.txt`): priority 1.0, urgency 0.1, ticket 0.01, no waiting-time weight.
    pub const NORMAL_PROFILE: Self = Self {
        weight_priority: 1.0,
        weight_urgency: 0.1,
        weight_ticket: 0.01,
        weight_waiting_time: 0.0,
        weight_deadline: 3_600_000.0,
    };

    /// The qmaster's built-in defaults, as a fresh Debian install shows them before any profile
    /// is loaded (`qconf-ssconf-debian-builtin.txt`): priority 0, urgency 0.5, ticket 0.5,
    /// waiting time 0.278. These are the seed's "nurg*0.5 + ntckts*0.5" site weights.
    pub const BUILTIN_DEFAULTS: Self = Self {
        weight_priority: 0.0,
        weight_urgency: 0.5,
        weight_ticket: 0.5,
        weight_waiting_time: 0.278,
        weight_deadline: 3_600_000.0,
    };
}

/// The value type of a complex (`complex(5)`), as far as urgency cares.
///
/// `sge_priority(5)`: numeric requests contribute `rurg × slots × request`, string-type requests
/// contribute `rurg` once. SGE's `centry_urgency_contribution` counts INT, TIME, MEMORY, BOOL and
/// DOUBLE as numeric and STRING, CSTRING, HOST and RESTRING as string-like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComplexValueType {
    Int,
    Double,
    Time,
    Memory,
    Bool,
    String,
    CaseString,
    Host,
    RegexString,
}

impl ComplexValueType {
    /// Whether a request of this type scales with its value and the slot count.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Self::Int | Self::Double | Self::Time | Self::Memory | Self::Bool
        )
    }
}

/// One hard resource request (`qsub -hard -l name=value`) with its complex's urgency.
///
/// Soft requests and default requests of consumables do not count: SGE's `sge_urgency` only
/// walks the job's hard resource list, because only those apply whatever the placement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HardRequest {
    /// Type of the requested complex.
    pub value_type: ComplexValueType,
    /// The complex's `urgency` column (`qconf -sc`).
    pub urgency: f64,
    /// The per-slot requested amount, as SGE's `CE_doubleval` (memory in bytes, time in
    /// seconds, booleans 1/0). Ignored for string-like types.
    pub value: f64,
}

/// How a PE job's slot range turns into the "assumed slot allocation" (`sge_pe(5)`
/// `urgency_slots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrgencySlots {
    /// The range's lowest slot count (the PE default).
    Min,
    /// The range's highest slot count; an open range (`4-`) uses the PE's `slots`.
    Max,
    /// The average of all slot counts in the range, truncated to an integer; an open range is
    /// capped at the PE's `slots`.
    Avg,
    /// A fixed number.
    Fixed(u32),
}

/// One `min-max:step` piece of a PE slot range; `max == None` means open (`n-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRange {
    pub min: u32,
    pub max: Option<u32>,
    pub step: u32,
}

/// The slot count SGE assumes for urgency (`sge_job_slot_request`): 1 for sequential jobs, the
/// single value for a fixed PE request, otherwise the PE's `urgency_slots` rule.
pub fn assumed_slot_allocation(
    pe_ranges: &[SlotRange],
    urgency_slots: UrgencySlots,
    pe_slots: u32,
) -> u32 {
    let Some(first) = pe_ranges.first() else {
        return 1;
    };
    // A fixed request ("-pe smp 4") is one range with one id.
    if pe_ranges.len() == 1 && first.max == Some(first.min) {
        return first.min;
    }
    match urgency_slots {
        UrgencySlots::Min => first.min,
        UrgencySlots::Max => match pe_ranges.last().and_then(|r| r.max) {
            Some(max) => max,
            None => pe_slots,
        },
        UrgencySlots::Avg => {
            let mut sum = 0.0_f64;
            let mut n = 0_u64;
            for r in pe_ranges {
                let max = match r.max {
                    Some(m) if pe_slots != 0 => m.min(pe_slots),
                    Some(m) => m,
                    None => pe_slots,
                };
                let step = r.step.max(1);
                let mut id = r.min;
                while id <= max {
                    sum += f64::from(id);
                    n += 1;
                    match id.checked_add(step) {
                        Some(next) => id = next,
                        None => break,
                    }
                }
            }
            if n == 0 { 0 } else { (sum / n as f64) as u32 }
        }
        UrgencySlots::Fixed(n) => n,
    }
}

/// The resource requirement contribution `rrcontr` (`sge_priority(5)`), without our queue bonus.
///
/// The implicit `slots` request counts as a numeric request of 1 per slot, so a sequential job
/// gets the `slots` urgency once (1000 with the default complex table: `qstat-urg.txt`) and a
/// 2-slot PE job twice (2000). SGE caches this per job category; callers should too.
pub fn resource_contribution(slots: u32, slots_urgency: f64, hard_requests: &[HardRequest]) -> f64 {
    let slots_f = f64::from(slots);
    let mut rrcontr = 1.0 * slots_urgency * slots_f;
    for r in hard_requests {
        rrcontr += if r.value_type.is_numeric() {
            r.value * r.urgency * slots_f
        } else {
            r.urgency
        };
    }
    rrcontr
}

/// The waiting-time contribution `wtcontr = (now − submission) × weight_waiting_time`.
///
/// SGE keeps the product unrounded; qstat displays it with no decimals, which the seed read as
/// `nint`. Times are seconds since the epoch, passed in by the caller.
pub fn waiting_time_contribution(now: i64, submission_time: i64, weight_waiting_time: f64) -> f64 {
    // SGE subtracts unsigned seconds; a submission "in the future" (clock skew) would wrap
    // there. We clamp at zero instead so urgency never falls below the resource part.
    let waited = now.saturating_sub(submission_time).max(0);
    weight_waiting_time * waited as f64
}

/// The deadline contribution `dlcontr = weight_deadline / max(free_time, 1)`.
///
/// `sge_priority(5)`: "After the deadline passes, the value is static and equal to
/// weight_deadline": SGE divides by `MAX(deadline − now, 1)`, so the last second before the
/// deadline already gives the full weight. No deadline gives 0.
pub fn deadline_contribution(now: i64, deadline: Option<i64>, weight_deadline: f64) -> f64 {
    match deadline {
        None => 0.0,
        Some(d) => {
            let free_time = d.saturating_sub(now).max(1);
            weight_deadline / free_time as f64
        }
    }
}

/// SGE's `sge_normalize_value`: `(v − min) / (max − min)`, or 0.5 when the range is (nearly)
/// empty.
pub fn normalize(value: f64, range_min: f64, range_max: f64) -> f64 {
    if range_max - range_min < SGE_EPSILON {
        0.5
    } else {
        (value - range_min) / (range_max - range_min)
    }
}

/// The normalised POSIX priority `npprior`: `(ppri + 1024) / 2048` (SGE's `sge_do_priority`).
pub fn normalized_posix_priority(posix_priority: i32) -> f64 {
    let clamped = posix_priority.clamp(POSIX_PRIORITY_MIN, POSIX_PRIORITY_MAX);
    normalize(f64::from(clamped + POSIX_PRIORITY_BASE), 0.0, 2048.0)
}

/// What the daemon knows about one job for one scheduling pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobPriorityInput {
    /// Job number, for the dispatch-order tie-break.
    pub job_id: u64,
    /// Array task number (1 for non-array jobs), for the tie-break between tasks.
    pub task_id: u64,
    /// Submission time, seconds since the epoch.
    pub submission_time: i64,
    /// `-dl` deadline initiation time, seconds since the epoch.
    pub deadline: Option<i64>,
    /// `-p` POSIX priority, −1023..=1024.
    pub posix_priority: i32,
    /// [`resource_contribution`] of the job (cache it per job category).
    pub resource_contribution: f64,
    /// gridspool extension: extra urgency for the queue class the job targets (the seed's
    /// +40,000 / +80,000). Added to `rrcontr`. Zero reproduces SGE.
    pub queue_urgency_bonus: f64,
    /// The job's total tickets `tckts = ftckt + otckt + stckt` for this pass.
    pub tickets: f64,
}

/// Every priority column qstat shows (`-urg`, `-pri`, `-ext`), for one job.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JobPriority {
    /// `prior`: the dispatch priority.
    pub prio: f64,
    /// `nurg`: normalised urgency.
    pub nurg: f64,
    /// `urg`: absolute urgency.
    pub urg: f64,
    /// `rrcontr`, including the queue urgency bonus.
    pub rrcontr: f64,
    /// `wtcontr`.
    pub wtcontr: f64,
    /// `dlcontr`.
    pub dlcontr: f64,
    /// `npprior`: normalised POSIX priority.
    pub npprior: f64,
    /// `ntckts`: normalised tickets.
    pub ntckts: f64,
    /// `ppri`: the POSIX priority as given.
    pub ppri: i32,
    /// `tckts`: the tickets as given.
    pub tckts: f64,
}

impl JobPriority {
    /// What qstat shows for a job the scheduler does not consider (held `hqw`, error `Eqw`):
    /// every field zero, as SGE's `sge_clear_job` leaves it (`qstat-urg.txt`, jobs 9, 12, 16).
    pub const NOT_CONSIDERED: Self = Self {
        prio: 0.0,
        nurg: 0.0,
        urg: 0.0,
        rrcontr: 0.0,
        wtcontr: 0.0,
        dlcontr: 0.0,
        npprior: 0.0,
        ntckts: 0.0,
        ppri: 0,
        tckts: 0.0,
    };
}

/// One scheduling pass's priority settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityPass {
    /// The weights from `sched_conf(5)`.
    pub weights: PriorityWeights,
    /// "Now", seconds since the epoch.
    pub now: i64,
    /// The ticket range maximum. `None` takes the largest `tickets` among the jobs passed,
    /// which is what SGE does when all considered jobs are passed in one call. A ticket
    /// computation that knows a larger maximum (SGE also counts the tickets its first ticket
    /// pass gave to running jobs) passes it here.
    pub max_tickets: Option<f64>,
}

/// Computes urgency, normalisations and priority for all jobs of one pass in O(N).
///
/// Pass every job the scheduler considers: pending jobs that are not held *and* running jobs,
/// since SGE normalises urgency and tickets over both (`qstat-urg.txt`: the running jobs' urg
/// 1000 is the minimum that makes the 2-slot job's nurg 1.0 and everyone else's 0.0).
pub fn compute_priorities(pass: &PriorityPass, jobs: &[JobPriorityInput]) -> Vec<JobPriority> {
    let mut out = Vec::with_capacity(jobs.len());
    compute_priorities_into(pass, jobs, &mut out);
    out
}

/// [`compute_priorities`] into `out` (cleared first), for a caller that reuses the
/// allocation pass after pass.
pub fn compute_priorities_into(
    pass: &PriorityPass,
    jobs: &[JobPriorityInput],
    out: &mut Vec<JobPriority>,
) {
    out.clear();
    out.reserve(jobs.len());
    compute_priorities_each(pass, jobs.len(), |i| jobs[i], |_, p| out.push(p));
}

/// The unnormalised columns of one job: urgency and its parts, `npprior`, the tickets
/// (`prio`, `nurg` and `ntckts` are 0 until [`compute_priorities_from_raw`] normalises them).
///
/// A caller that reads each job once before its tickets are known can compute these then,
/// count the urgency with [`PriorityRanges::add_raw`], and normalise them with
/// [`compute_priorities_from_raw`] once the tickets are known (setting `tckts`): the same
/// values as [`compute_priorities_in_ranges`], without reading the job again (no column
/// but `tckts` depends on the tickets).
pub fn raw_priority(pass: &PriorityPass, job: &JobPriorityInput) -> JobPriority {
    let w = &pass.weights;
    let rrcontr = job.resource_contribution + job.queue_urgency_bonus;
    let wtcontr = waiting_time_contribution(pass.now, job.submission_time, w.weight_waiting_time);
    let dlcontr = deadline_contribution(pass.now, job.deadline, w.weight_deadline);
    JobPriority {
        prio: 0.0,
        nurg: 0.0,
        urg: wtcontr + dlcontr + rrcontr,
        rrcontr,
        wtcontr,
        dlcontr,
        npprior: normalized_posix_priority(job.posix_priority),
        ntckts: 0.0,
        ppri: job.posix_priority,
        tckts: job.tickets,
    }
}

/// The ranges a pass normalises urgency and tickets over (`nurg`, `ntckts`): the smallest and
/// largest urgency and the largest ticket count among its jobs.
///
/// [`compute_priorities_each`] finds them in a first walk over the jobs. A caller that
/// already reads every job once before (for its tickets) can gather them in that read with
/// [`PriorityRanges::add_urgency`] and [`PriorityRanges::add_tickets`] and hand them to
/// [`compute_priorities_in_ranges`], which then reads each job once instead of twice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PriorityRanges {
    pub min_urg: f64,
    pub max_urg: f64,
    pub max_tix: f64,
}

impl Default for PriorityRanges {
    /// No job seen: SGE starts the urgency range at DBL_MAX / DBL_MIN (the smallest positive
    /// double), the ticket maximum at 0.
    fn default() -> Self {
        Self {
            min_urg: f64::MAX,
            max_urg: f64::MIN_POSITIVE,
            max_tix: 0.0,
        }
    }
}

impl PriorityRanges {
    /// Counts the urgency of `job` (its `tickets` are not looked at).
    pub fn add_urgency(&mut self, pass: &PriorityPass, job: &JobPriorityInput) {
        self.add_raw(&raw_priority(pass, job));
    }

    /// Counts the urgency of a job from its [`raw_priority`].
    pub fn add_raw(&mut self, raw: &JobPriority) {
        self.min_urg = self.min_urg.min(raw.urg);
        self.max_urg = self.max_urg.max(raw.urg);
    }

    /// Counts a job's tickets.
    pub fn add_tickets(&mut self, tickets: f64) {
        self.max_tix = self.max_tix.max(tickets);
    }
}

/// [`compute_priorities`] for `n` jobs given one at a time by `job(i)` (called twice per
/// job: once for the ranges, once for the values), each result handed to `emit(i, …)` in
/// order: for a caller that keeps its jobs in its own layout and stores the priorities in
/// its own type, without an input and an output vector per pass. The values are exactly
/// [`compute_priorities`]'s (the same operations in the same order).
pub fn compute_priorities_each(
    pass: &PriorityPass,
    n: usize,
    job: impl Fn(usize) -> JobPriorityInput,
    emit: impl FnMut(usize, JobPriority),
) {
    let mut ranges = PriorityRanges::default();
    for i in 0..n {
        let j = job(i);
        ranges.add_urgency(pass, &j);
        ranges.add_tickets(j.tickets);
    }
    compute_priorities_in_ranges(pass, &ranges, n, job, emit);
}

/// [`compute_priorities_each`] with the ranges already known (`ranges` must be those of
/// exactly these `n` jobs, as [`PriorityRanges`] gathers them): `job(i)` is called once per
/// job. The ticket range is widened to `pass.max_tickets` as in [`compute_priorities_each`].
pub fn compute_priorities_in_ranges(
    pass: &PriorityPass,
    ranges: &PriorityRanges,
    n: usize,
    job: impl Fn(usize) -> JobPriorityInput,
    emit: impl FnMut(usize, JobPriority),
) {
    compute_priorities_from_raw(pass, ranges, n, |i| raw_priority(pass, &job(i)), emit);
}

/// [`compute_priorities_in_ranges`] from each job's [`raw_priority`] (with its tickets in
/// `tckts`) as `raw(i)` gives it, computed in an earlier read of the job: the same values.
pub fn compute_priorities_from_raw(
    pass: &PriorityPass,
    ranges: &PriorityRanges,
    n: usize,
    raw: impl Fn(usize) -> JobPriority,
    mut emit: impl FnMut(usize, JobPriority),
) {
    let w = &pass.weights;
    let (min_urg, max_urg) = (ranges.min_urg, ranges.max_urg);
    let max_tix = pass
        .max_tickets
        .map_or(ranges.max_tix, |m| m.max(ranges.max_tix));
    for i in 0..n {
        let mut p = raw(i);
        p.nurg = normalize(p.urg, min_urg, max_urg);
        p.ntckts = normalize(p.tckts, 0.0, max_tix);
        p.prio =
            w.weight_urgency * p.nurg + w.weight_ticket * p.ntckts + w.weight_priority * p.npprior;
        emit(i, p);
    }
}

/// SGE's dispatch order: priority descending, then submission time ascending, then job number
/// and task number ascending (`sgeee_sort_jobs`). Returns indices into `jobs`.
///
/// The order is total and deterministic: equal inputs always give the same order.
pub fn dispatch_order(jobs: &[JobPriorityInput], priorities: &[JobPriority]) -> Vec<usize> {
    // Sort compact keys rather than indices into two arrays: fewer cache misses at 100k jobs.
    let mut keys: Vec<(f64, i64, u64, u64, usize)> = jobs
        .iter()
        .zip(priorities)
        .enumerate()
        .map(|(i, (j, p))| (p.prio, j.submission_time, j.job_id, j.task_id, i))
        .collect();
    keys.sort_unstable_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
            .then(a.4.cmp(&b.4))
    });
    keys.into_iter().map(|k| k.4).collect()
}

/// The ticket count qstat prints in the `tckts`/`stckt`/... columns: SGE truncates towards zero
/// (`qstat-ext-share.txt`: 5837.97 tickets print as 5837, 1387.34 as 1387).
pub fn displayed_tickets(tickets: f64) -> i64 {
    tickets.trunc() as i64
}

/// How many pending tasks of one array job SGE gives tickets in a pass:
/// `min(max_pending_tasks_per_job, free queue slots + 1)` (`sge_calc_tickets`).
pub fn pending_tasks_considered(max_pending_tasks_per_job: u32, free_queue_slots: u32) -> u32 {
    max_pending_tasks_per_job.min(free_queue_slots.saturating_add(1))
}

/// Override tickets configured on users, projects and departments (`user(5)`, `project(5)`,
/// `access_list(5)` `oticket`). Jobs' own override tickets (`qalter -ot`) come with each job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverrideTables {
    pub users: std::collections::HashMap<String, u32>,
    pub projects: std::collections::HashMap<String, u32>,
    pub departments: std::collections::HashMap<String, u32>,
}

impl OverrideTables {
    /// Whether some user, project or department has override tickets: with none (and no
    /// job's own), [`override_tickets`] gives every job 0.
    pub fn any_tickets(&self) -> bool {
        [&self.users, &self.projects, &self.departments]
            .iter()
            .any(|t| t.values().any(|&v| v > 0))
    }
}

/// One job (or array task) for the override policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OverrideJob<'a> {
    pub job_id: u64,
    pub task_id: u64,
    pub submission_time: i64,
    pub user: &'a str,
    pub project: Option<&'a str>,
    pub department: Option<&'a str>,
    pub running: bool,
    /// The job's own override tickets (`JB_override_tickets`).
    pub job_otickets: u32,
    /// Tickets from policies earlier in `policy_hierarchy` (none when override comes first, as
    /// in the default "OFS"); orders jobs of the same category when `dependent`.
    pub higher_policy_tickets: f64,
}

/// Override tickets (`otckt`) per job, as SGE 8.1.9 computes them (`sgeee.c`).
///
/// `sched_conf(5)` `share_override_tickets`: when true (the default) an object's override
/// tickets are shared equally among its running jobs, and "the pending jobs will get as many
/// override tickets, as they would have, when they were running": SGE picks pending jobs one by
/// one, always the one that would get the most tickets next (ties: lower job, then task
/// number), and counts each picked job as running for the jobs after it — the k-th pending job
/// of a user with O tickets and r running jobs gets O/(r+k). When false, every job gets the
/// objects' full amounts. The job's own override tickets always add in full.
///
/// Cost: O(N log N) with a lazily re-evaluated heap (entries only ever lose value), instead of
/// SGE's O(N × categories) rescans; the result is the same.
pub fn override_tickets(
    tables: &OverrideTables,
    share_override_tickets: bool,
    dependent: bool,
    jobs: &[OverrideJob<'_>],
) -> Vec<f64> {
    use std::collections::{BinaryHeap, HashMap};

    let ot = |map: &HashMap<String, u32>, key: Option<&str>| -> f64 {
        key.and_then(|k| map.get(k)).map_or(0.0, |&v| f64::from(v))
    };
    let mut out = vec![0.0; jobs.len()];
    if !share_override_tickets {
        for (o, j) in out.iter_mut().zip(jobs) {
            *o = ot(&tables.users, Some(j.user))
                + ot(&tables.projects, j.project)
                + ot(&tables.departments, j.department)
                + f64::from(j.job_otickets);
        }
        return out;
    }
    // Running-job counts per object (SGE's UU_job_cnt / PR_job_cnt / US_job_cnt).
    let mut user_cnt: HashMap<&str, u64> = HashMap::new();
    let mut proj_cnt: HashMap<&str, u64> = HashMap::new();
    let mut dept_cnt: HashMap<&str, u64> = HashMap::new();
    for j in jobs.iter().filter(|j| j.running) {
        *user_cnt.entry(j.user).or_default() += 1;
        if let Some(p) = j.project {
            *proj_cnt.entry(p).or_default() += 1;
        }
        if let Some(d) = j.department {
            *dept_cnt.entry(d).or_default() += 1;
        }
    }
    // Running jobs: object tickets over running jobs of the object.
    for (o, j) in out.iter_mut().zip(jobs).filter(|(_, j)| j.running) {
        let share = |t: f64, cnt: Option<&u64>| match cnt {
            Some(&c) if t > 0.0 && c > 0 => t / c as f64,
            _ => 0.0,
        };
        *o = share(ot(&tables.users, Some(j.user)), user_cnt.get(j.user))
            + share(
                ot(&tables.projects, j.project),
                j.project.and_then(|p| proj_cnt.get(p)),
            )
            + share(
                ot(&tables.departments, j.department),
                j.department.and_then(|d| dept_cnt.get(d)),
            )
            + f64::from(j.job_otickets);
    }
    // Pending jobs: categories of equal (job tickets, user, dept, project), objects without
    // tickets left out of the key.
    type Key<'k> = (u32, Option<&'k str>, Option<&'k str>, Option<&'k str>);
    let mut cat_index: HashMap<Key<'_>, usize> = HashMap::new();
    let mut cats: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate().filter(|(_, j)| !j.running) {
        let u = (ot(&tables.users, Some(j.user)) > 0.0).then_some(j.user);
        let p = j.project.filter(|p| ot(&tables.projects, Some(p)) > 0.0);
        let d = j
            .department
            .filter(|d| ot(&tables.departments, Some(d)) > 0.0);
        if j.job_otickets == 0 && u.is_none() && p.is_none() && d.is_none() {
            continue;
        }
        let c = *cat_index
            .entry((j.job_otickets, u, d, p))
            .or_insert_with(|| {
                cats.push(Vec::new());
                cats.len() - 1
            });
        cats[c].push(i);
    }
    if dependent {
        for c in &mut cats {
            c.sort_by(|&a, &b| {
                let (ja, jb) = (&jobs[a], &jobs[b]);
                jb.higher_policy_tickets
                    .total_cmp(&ja.higher_policy_tickets)
                    .then(ja.submission_time.cmp(&jb.submission_time))
                    .then(ja.job_id.cmp(&jb.job_id))
                    .then(ja.task_id.cmp(&jb.task_id))
            });
        }
    }
    let value = |j: &OverrideJob<'_>,
                 uc: &HashMap<&str, u64>,
                 pc: &HashMap<&str, u64>,
                 dc: &HashMap<&str, u64>|
     -> f64 {
        let next = |t: f64, cnt: u64| if t > 0.0 { t / (cnt + 1) as f64 } else { 0.0 };
        next(
            ot(&tables.users, Some(j.user)),
            uc.get(j.user).copied().unwrap_or(0),
        ) + next(
            ot(&tables.projects, j.project),
            j.project.and_then(|p| pc.get(p)).copied().unwrap_or(0),
        ) + next(
            ot(&tables.departments, j.department),
            j.department.and_then(|d| dc.get(d)).copied().unwrap_or(0),
        ) + f64::from(j.job_otickets)
    };
    #[derive(PartialEq)]
    struct Entry {
        value: f64,
        job_id: u64,
        task_id: u64,
        cat: usize,
    }
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, o: &Self) -> Ordering {
            self.value
                .total_cmp(&o.value)
                .then(o.job_id.cmp(&self.job_id))
                .then(o.task_id.cmp(&self.task_id))
        }
    }
    let mut heads = vec![0usize; cats.len()];
    let mut heap = BinaryHeap::with_capacity(cats.len());
    for (c, members) in cats.iter().enumerate() {
        if let Some(&i) = members.first() {
            let j = &jobs[i];
            let v = value(j, &user_cnt, &proj_cnt, &dept_cnt);
            heap.push(Entry {
                value: v,
                job_id: j.job_id,
                task_id: j.task_id,
                cat: c,
            });
        }
    }
    while let Some(top) = heap.pop() {
        let i = cats[top.cat][heads[top.cat]];
        let j = &jobs[i];
        let v = value(j, &user_cnt, &proj_cnt, &dept_cnt);
        if v < top.value {
            // Stale: the object counts grew since this entry was pushed.
            heap.push(Entry { value: v, ..top });
            continue;
        }
        out[i] = v;
        *user_cnt.entry(j.user).or_default() += 1;
        if let Some(p) = j.project {
            *proj_cnt.entry(p).or_default() += 1;
        }
        if let Some(d) = j.department {
            *dept_cnt.entry(d).or_default() += 1;
        }
        heads[top.cat] += 1;
        if let Some(&n) = cats[top.cat].get(heads[top.cat]) {
            let nj = &jobs[n];
            let nv = value(nj, &user_cnt, &proj_cnt, &dept_cnt);
            heap.push(Entry {
                value: nv,
                job_id: nj.job_id,
                task_id: nj.task_id,
                cat: top.cat,
            });
        }
    }
    out
}

/// Functional shares configured on users, projects and departments (`user(5)`, `project(5)`,
/// `access_list(5)` `fshare`). Jobs' own shares (`qsub -js`) come with each job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionalShares {
    pub users: std::collections::HashMap<String, u32>,
    pub projects: std::collections::HashMap<String, u32>,
    pub departments: std::collections::HashMap<String, u32>,
}

/// `sched_conf(5)` settings of the functional policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionalPolicy {
    /// `weight_tickets_functional`: tickets to distribute.
    pub weight_tickets_functional: f64,
    /// `weight_user`, `weight_project`, `weight_department`, `weight_job` (0.25 each by default).
    pub weight_user: f64,
    pub weight_project: f64,
    pub weight_department: f64,
    pub weight_job: f64,
    /// `share_functional_shares` (default true): an object's shares are split among its jobs.
    pub share_functional_shares: bool,
    /// `max_functional_jobs_to_schedule` (default 200): pending jobs computed one by one; the
    /// others of a category get the value of the category's first job.
    pub max_functional_jobs_to_schedule: usize,
    /// Whether a policy precedes the functional one in `policy_hierarchy` ("OFS": override).
    pub dependent: bool,
}

impl Default for FunctionalPolicy {
    fn default() -> Self {
        Self {
            weight_tickets_functional: 0.0,
            weight_user: 0.25,
            weight_project: 0.25,
            weight_department: 0.25,
            weight_job: 0.25,
            share_functional_shares: true,
            max_functional_jobs_to_schedule: 200,
            dependent: true,
        }
    }
}

/// One job (or array task) for the functional policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FunctionalJob<'a> {
    pub job_id: u64,
    pub task_id: u64,
    pub submission_time: i64,
    pub user: &'a str,
    pub project: Option<&'a str>,
    pub department: Option<&'a str>,
    pub running: bool,
    /// `-js` job share.
    pub jobshare: u32,
    /// Tickets from policies earlier in `policy_hierarchy` (override tickets with "OFS").
    pub higher_policy_tickets: f64,
}

/// Functional tickets (`ftckt`) per job, following SGE 8.1.9's `sgeee.c`.
///
/// Running jobs: each category (user, project, department, job) hands out
/// `weight_tickets_functional` in proportion to the shares of its running jobs (an object's
/// shares split among its running jobs when `share_functional_shares`), and a job's tickets are
/// the weighted sum over the four categories, with the weights of categories without shares
/// dropped and the rest renormalised.
///
/// Pending jobs: SGE repeatedly takes the pending job that would get the most functional tickets
/// if it were started next (ties: earlier submission, lower job then task number), counts it as
/// running, and gives it the tickets computed with it counted; it adds 0.001 to each share sum
/// while choosing. Only `max_functional_jobs_to_schedule` jobs are computed; the others get
/// the value last computed for the first job of their category (same job share and same user,
/// project and department with shares).
pub fn functional_tickets(
    shares: &FunctionalShares,
    policy: &FunctionalPolicy,
    jobs: &[FunctionalJob<'_>],
) -> Vec<f64> {
    use std::collections::HashMap;

    let tf = policy.weight_tickets_functional;
    let mut out = vec![0.0; jobs.len()];
    if tf <= 0.0 {
        return out;
    }
    let shared = policy.share_functional_shares;
    let fs = |map: &HashMap<String, u32>, key: Option<&str>| -> f64 {
        key.and_then(|k| map.get(k)).map_or(0.0, |&v| f64::from(v))
    };
    let mut user_cnt: HashMap<&str, u64> = HashMap::new();
    let mut proj_cnt: HashMap<&str, u64> = HashMap::new();
    let mut dept_cnt: HashMap<&str, u64> = HashMap::new();
    for j in jobs.iter().filter(|j| j.running) {
        *user_cnt.entry(j.user).or_default() += 1;
        if let Some(p) = j.project {
            *proj_cnt.entry(p).or_default() += 1;
        }
        if let Some(d) = j.department {
            *dept_cnt.entry(d).or_default() += 1;
        }
    }
    let cnt =
        |m: &HashMap<&str, u64>, k: Option<&str>| k.and_then(|k| m.get(k)).copied().unwrap_or(0);
    // Per-job object shares: (user, project, department), already split when shared.
    let split = |v: f64, c: u64| if shared && c > 0 { v / c as f64 } else { v };
    // Sums over running jobs (`calc_job_functional_tickets_pass1` with sum_shares).
    let mut sums = [0.0_f64; 4]; // user, project, department, job
    let mut run_fshare: Vec<[f64; 3]> = vec![[0.0; 3]; jobs.len()];
    for (i, j) in jobs.iter().enumerate().filter(|(_, j)| j.running) {
        let u = split(
            fs(&shares.users, Some(j.user)),
            cnt(&user_cnt, Some(j.user)),
        );
        let p = j
            .project
            .map(|p| split(fs(&shares.projects, Some(p)), cnt(&proj_cnt, Some(p))));
        let d = j
            .department
            .map(|d| split(fs(&shares.departments, Some(d)), cnt(&dept_cnt, Some(d))));
        sums[0] += u;
        sums[1] += p.unwrap_or(0.0);
        sums[2] += d.unwrap_or(0.0);
        sums[3] += f64::from(j.jobshare);
        run_fshare[i] = [u, p.unwrap_or(0.0), d.unwrap_or(0.0)];
    }
    let weights = |present: [bool; 4]| -> [f64; 4] {
        let mut w = [
            if present[0] { policy.weight_user } else { 0.0 },
            if present[1] {
                policy.weight_project
            } else {
                0.0
            },
            if present[2] {
                policy.weight_department
            } else {
                0.0
            },
            if present[3] { policy.weight_job } else { 0.0 },
        ];
        let k: f64 = w.iter().sum();
        if k > 0.0 {
            for x in &mut w {
                *x /= k;
            }
        }
        w
    };
    // `calc_job_functional_tickets_pass2`.
    let tickets = |j: &FunctionalJob<'_>, f: [f64; 3], s: [f64; 4], w: [f64; 4]| -> f64 {
        let part = |share: f64, sum: f64| if sum != 0.0 { share * tf / sum } else { 0.0 };
        let user = part(f[0], s[0]);
        let project = if j.project.is_some() {
            part(f[1], s[1])
        } else {
            0.0
        };
        let dept = if j.department.is_some() {
            part(f[2], s[2])
        } else {
            0.0
        };
        let job = part(f64::from(j.jobshare), s[3]);
        w[0] * user + w[2] * dept + w[1] * project + w[3] * job
    };
    let w_running = weights([sums[0] > 0.0, sums[1] > 0.0, sums[2] > 0.0, sums[3] > 0.0]);
    for (i, j) in jobs.iter().enumerate().filter(|(_, j)| j.running) {
        out[i] = tickets(j, run_fshare[i], sums, w_running);
    }

    // Pending jobs, by functional category.
    type Key<'k> = (u32, Option<&'k str>, Option<&'k str>, Option<&'k str>);
    let mut cat_index: HashMap<Key<'_>, usize> = HashMap::new();
    let mut cats: Vec<(Key<'_>, Vec<usize>)> = Vec::new();
    for (i, j) in jobs.iter().enumerate().filter(|(_, j)| !j.running) {
        let u = (fs(&shares.users, Some(j.user)) > 0.0).then_some(j.user);
        let p = j.project.filter(|p| fs(&shares.projects, Some(p)) > 0.0);
        let d = j
            .department
            .filter(|d| fs(&shares.departments, Some(d)) > 0.0);
        if j.jobshare == 0 && u.is_none() && p.is_none() && d.is_none() {
            continue;
        }
        let key = (j.jobshare, u, d, p);
        let c = *cat_index.entry(key).or_insert_with(|| {
            cats.push((key, Vec::new()));
            cats.len() - 1
        });
        cats[c].1.push(i);
    }
    if policy.dependent {
        for (_, members) in &mut cats {
            members.sort_by(|&a, &b| {
                let (ja, jb) = (&jobs[a], &jobs[b]);
                jb.higher_policy_tickets
                    .total_cmp(&ja.higher_policy_tickets)
                    .then(ja.submission_time.cmp(&jb.submission_time))
                    .then(ja.job_id.cmp(&jb.job_id))
                    .then(ja.task_id.cmp(&jb.task_id))
            });
        }
    }
    let pending_jobs: usize = cats.iter().map(|(_, m)| m.len()).sum();
    let max = policy.max_functional_jobs_to_schedule.min(pending_jobs);
    let w_all = weights([true; 4]);
    let mut pending_sums = sums;
    let mut heads = vec![0usize; cats.len()];
    let mut provisional = vec![0.0_f64; jobs.len()];
    for _ in 0..max {
        // (tickets incl. higher policies, submission, job, task, category)
        let mut best: Option<(f64, i64, u64, u64, usize)> = None;
        for (c, (key, members)) in cats.iter().enumerate() {
            let Some(&i) = members.get(heads[c]) else {
                continue;
            };
            let j = &jobs[i];
            let mut s = pending_sums.map(|x| x + 0.001);
            let mut f = [
                key.1.map_or(0.0, |u| fs(&shares.users, Some(u))),
                key.3.map_or(0.0, |p| fs(&shares.projects, Some(p))),
                key.2.map_or(0.0, |d| fs(&shares.departments, Some(d))),
            ];
            if shared {
                f[0] /= (cnt(&user_cnt, Some(j.user)) + 1) as f64;
                if j.project.is_some() {
                    f[1] /= (cnt(&proj_cnt, j.project) + 1) as f64;
                }
                if j.department.is_some() {
                    f[2] /= (cnt(&dept_cnt, j.department) + 1) as f64;
                }
            } else {
                s[0] += f[0];
                if j.project.is_some() {
                    s[1] += f[1];
                }
                if j.department.is_some() {
                    s[2] += f[2];
                }
            }
            s[3] += f64::from(key.0);
            let ft = tickets(j, f, s, w_all);
            provisional[i] = ft;
            let ft = if policy.dependent {
                ft + j.higher_policy_tickets
            } else {
                ft
            };
            let take = match best {
                None => true,
                Some((bt, bsub, bjid, btid, _)) => {
                    ft >= bt
                        && (ft > bt
                            || j.submission_time < bsub
                            || (j.submission_time == bsub && j.job_id < bjid)
                            || (j.job_id == bjid && j.task_id < btid))
                }
            };
            if take {
                best = Some((ft, j.submission_time, j.job_id, j.task_id, c));
            }
        }
        let Some((_, _, _, _, c)) = best else { break };
        let i = cats[c].1[heads[c]];
        heads[c] += 1;
        if let Some(&next) = cats[c].1.get(heads[c]) {
            provisional[next] = provisional[i];
        }
        let j = &jobs[i];
        // Count it as running, then its tickets with itself counted.
        let uc = user_cnt.entry(j.user).or_default();
        *uc += 1;
        let u_cnt = *uc;
        let p_cnt = j.project.map(|p| {
            let e = proj_cnt.entry(p).or_default();
            *e += 1;
            *e
        });
        let d_cnt = j.department.map(|d| {
            let e = dept_cnt.entry(d).or_default();
            *e += 1;
            *e
        });
        let mut f = [0.0; 3];
        let obj = [
            (Some(j.user), fs(&shares.users, Some(j.user)), Some(u_cnt)),
            (j.project, fs(&shares.projects, j.project), p_cnt),
            (j.department, fs(&shares.departments, j.department), d_cnt),
        ];
        for (k, (name, share, count)) in obj.into_iter().enumerate() {
            if let (Some(_), Some(count)) = (name, count) {
                f[k] = if shared { share / count as f64 } else { share };
                if !shared || count <= 1 {
                    pending_sums[k] += f[k];
                }
            }
        }
        pending_sums[3] += f64::from(j.jobshare);
        out[i] = tickets(j, f, pending_sums, w_all);
    }
    // Jobs not computed get their category's first job's latest value.
    for (c, (_, members)) in cats.iter().enumerate() {
        if let Some(&first) = members.get(heads[c]) {
            for &i in &members[heads[c]..] {
                out[i] = provisional[first];
            }
        }
    }
    out
}

/// A ticket policy, as letters of `policy_hierarchy` (`sched_conf(5)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketPolicy {
    /// `O`
    Override,
    /// `F`
    Functional,
    /// `S`
    ShareTree,
}

/// Parses `policy_hierarchy`: up to three distinct letters of O, F, S, or `NONE`. Policies named
/// are "dependent" (each orders its pending jobs by the tickets of the ones before it); the
/// others follow, independent, in SGE's enum order O, F, S (`sconf_ph_fill_array`).
pub fn parse_policy_hierarchy(value: &str) -> Option<Vec<(TicketPolicy, bool)>> {
    let mut out: Vec<(TicketPolicy, bool)> = Vec::new();
    if !value.is_empty() && !value.eq_ignore_ascii_case("NONE") {
        for c in value.chars() {
            let p = match c.to_ascii_uppercase() {
                'O' => TicketPolicy::Override,
                'F' => TicketPolicy::Functional,
                'S' => TicketPolicy::ShareTree,
                _ => return None,
            };
            if out.iter().any(|(q, _)| *q == p) {
                return None;
            }
            out.push((p, true));
        }
    }
    for p in [
        TicketPolicy::Override,
        TicketPolicy::Functional,
        TicketPolicy::ShareTree,
    ] {
        if !out.iter().any(|(q, _)| *q == p) {
            out.push((p, false));
        }
    }
    Some(out)
}

/// One job (or array task) as the three ticket policies see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TicketJobInput<'a> {
    pub job_id: u64,
    pub task_id: u64,
    pub submission_time: i64,
    pub user: &'a str,
    /// Only a configured project; SGE ignores unknown ones.
    pub project: Option<&'a str>,
    pub department: Option<&'a str>,
    pub running: bool,
    /// `-js` job share.
    pub jobshare: u32,
    /// `qalter -ot` override tickets.
    pub job_otickets: u32,
    /// Lowest slot count of the PE range, 1 for sequential jobs.
    pub pe_min_slots: u32,
}

/// Everything the ticket policies need for a pass.
#[derive(Debug, Clone, Copy)]
pub struct TicketConfig<'a> {
    /// Parsed `policy_hierarchy` ([`parse_policy_hierarchy`]; "OFS" by default).
    pub hierarchy: &'a [(TicketPolicy, bool)],
    pub override_tables: &'a OverrideTables,
    /// `share_override_tickets`.
    pub share_override_tickets: bool,
    pub functional_shares: &'a FunctionalShares,
    pub functional: FunctionalPolicy,
    /// The share tree, its usage and policy; `None` without a share tree.
    pub share_tree: Option<(
        &'a crate::sharetree::ShareTree,
        &'a crate::sharetree::UsageStore,
        crate::sharetree::ShareTreePolicy,
    )>,
}

/// The ticket columns of `qstat -ext` for one job.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct JobTickets {
    /// `tckts = otckt + ftckt + stckt`.
    pub tckts: f64,
    pub otckt: f64,
    pub ftckt: f64,
    pub stckt: f64,
    /// `share`: tickets over the sum of tickets of the jobs in the same state.
    pub share: f64,
}

/// Result of [`compute_tickets`].
#[derive(Debug, Clone, PartialEq)]
pub struct TicketPass {
    pub jobs: Vec<JobTickets>,
    /// The ticket range maximum for `ntckts` ([`PriorityPass::max_tickets`]).
    pub max_tickets: f64,
    /// Share-tree node figures (`sge_share_mon`), empty without a share tree.
    pub nodes: Vec<crate::sharetree::ShareTreeNodeReport>,
}

/// All tickets of one pass: override, functional and share-tree policies chained along
/// `policy_hierarchy` as SGE's `sge_calc_tickets` does. The functional and override policies
/// give running jobs the same values in SGE's two passes; the share tree's second pass (running
/// jobs only) gives the running jobs their final share-tree tickets.
pub fn compute_tickets(
    config: &TicketConfig<'_>,
    now: i64,
    jobs: &[TicketJobInput<'_>],
) -> TicketPass {
    tickets_with(config, now, jobs.len(), &|i| jobs[i], true, None)
}

/// [`compute_tickets`] without the share-tree node report (`nodes` is empty): the same
/// tickets for a scheduling pass, which does not show `sge_share_mon`'s figures.
pub fn compute_job_tickets(
    config: &TicketConfig<'_>,
    now: i64,
    jobs: &[TicketJobInput<'_>],
) -> TicketPass {
    tickets_with(config, now, jobs.len(), &|i| jobs[i], false, None)
}

/// [`compute_job_tickets`] for `n` jobs given one at a time by `job(i)` (a caller that keeps
/// its jobs in its own layout builds no vector of them), reusing from `cache` what the last
/// pass derived from the same jobs ([`crate::sharetree::ShareTreeCache`]): the same
/// tickets, bit for bit.
pub fn compute_job_tickets_cached<'a>(
    config: &TicketConfig<'_>,
    now: i64,
    n: usize,
    job: &dyn Fn(usize) -> TicketJobInput<'a>,
    cache: &mut crate::sharetree::ShareTreeCache,
) -> TicketPass {
    tickets_with(config, now, n, job, false, Some(cache))
}

fn tickets_with<'a>(
    config: &TicketConfig<'_>,
    now: i64,
    n: usize,
    job: &dyn Fn(usize) -> TicketJobInput<'a>,
    report: bool,
    mut cache: Option<&mut crate::sharetree::ShareTreeCache>,
) -> TicketPass {
    let jobs = (0..n).map(job);
    // The share tree's jobs, made in the one read of each job when the share tree runs
    // (its higher-policy tickets are filled in when its turn comes).
    let shares = config.share_tree.is_some()
        && config
            .hierarchy
            .iter()
            .any(|(p, _)| *p == TicketPolicy::ShareTree);
    let mut tj: Vec<crate::sharetree::TicketJob<'a>> = Vec::new();
    // Whether any job carries its own override tickets, found in the same first read (the
    // override policy has nothing to do without them and without tables).
    let mut any_job_otickets = false;
    // The loops below need only this of each job.
    let running: Vec<bool> = if shares {
        tj.reserve_exact(n);
        let mut running = Vec::with_capacity(n);
        for j in jobs.clone() {
            any_job_otickets |= j.job_otickets != 0;
            running.push(j.running);
            tj.push(crate::sharetree::TicketJob {
                job_id: j.job_id,
                task_id: j.task_id,
                user: j.user,
                project: j.project,
                running: j.running,
                jobshare: j.jobshare,
                pe_min_slots: j.pe_min_slots,
                higher_policy_tickets: 0.0,
            });
        }
        running
    } else {
        jobs.clone()
            .map(|j| {
                any_job_otickets |= j.job_otickets != 0;
                j.running
            })
            .collect()
    };
    // Tickets of dependent policies so far (`jref->tickets`), allocated when first needed
    // (empty: all zeros).
    let mut acc: Vec<f64> = Vec::new();
    // Whether `acc` may hold anything but zeros (the share tree's jobs start at zero).
    let mut acc_set = false;
    // Each policy's tickets; empty for a policy that gave none (all zeros): no vectors of
    // 100,000 zeros allocated, filled and read per pass.
    let (mut o, mut f, mut s, mut s_first): (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) =
        Default::default();
    let mut nodes = Vec::new();
    for (at, &(policy, dependent)) in config.hierarchy.iter().enumerate() {
        // This policy's tickets (borrowed: only a dependent policy's are read again).
        let got: &[f64] = match policy {
            TicketPolicy::Override => {
                // Without override tickets anywhere every job gets none: nothing to compute
                // (and zeros add nothing to the dependent policies' tickets). A table entry
                // of 0 tickets hands out none either: the default configuration's
                // `defaultdepartment` has one, and computing its zeros took a 90-byte
                // vector entry per job, the top of the pass's memory.
                if !config.override_tables.any_tickets() && !any_job_otickets {
                    continue;
                }
                if acc.is_empty() {
                    acc = vec![0.0; n];
                }
                let oj: Vec<OverrideJob<'_>> = jobs
                    .clone()
                    .zip(&acc)
                    .map(|(j, &t)| OverrideJob {
                        job_id: j.job_id,
                        task_id: j.task_id,
                        submission_time: j.submission_time,
                        user: j.user,
                        project: j.project,
                        department: j.department,
                        running: j.running,
                        job_otickets: j.job_otickets,
                        higher_policy_tickets: t,
                    })
                    .collect();
                o = override_tickets(
                    config.override_tables,
                    config.share_override_tickets,
                    dependent,
                    &oj,
                );
                &o
            }
            TicketPolicy::Functional => {
                // No functional tickets to hand out: every job gets none.
                if config.functional.weight_tickets_functional <= 0.0 {
                    continue;
                }
                if acc.is_empty() {
                    acc = vec![0.0; n];
                }
                let fj: Vec<FunctionalJob<'_>> = jobs
                    .clone()
                    .zip(&acc)
                    .map(|(j, &t)| FunctionalJob {
                        job_id: j.job_id,
                        task_id: j.task_id,
                        submission_time: j.submission_time,
                        user: j.user,
                        project: j.project,
                        department: j.department,
                        running: j.running,
                        jobshare: j.jobshare,
                        higher_policy_tickets: t,
                    })
                    .collect();
                let fp = FunctionalPolicy {
                    dependent,
                    ..config.functional
                };
                f = functional_tickets(config.functional_shares, &fp, &fj);
                &f
            }
            TicketPolicy::ShareTree => {
                let Some((tree, usage, sp)) = config.share_tree else {
                    continue;
                };
                if acc_set {
                    for (j, &t) in tj.iter_mut().zip(&acc) {
                        j.higher_policy_tickets = t;
                    }
                }
                let sp = crate::sharetree::ShareTreePolicy { dependent, ..sp };
                let st = match (report, cache.take()) {
                    (true, _) => tree.tickets(usage, &sp, now, &tj),
                    (false, Some(c)) => tree.job_tickets_cached(usage, &sp, now, &tj, c),
                    (false, None) => tree.job_tickets(usage, &sp, now, &tj),
                };
                s = st.stckt;
                s_first = st.first_pass_stckt;
                nodes = st.nodes;
                &s
            }
        };
        // Only a policy after this one reads `acc`.
        if dependent && at + 1 < config.hierarchy.len() {
            acc_set = true;
            if acc.is_empty() {
                acc = vec![0.0; n];
            }
            for ((a, &r), t) in acc.iter_mut().zip(&running).zip(got) {
                if !r {
                    *a += t;
                }
            }
        }
    }
    // The share tree's jobs are read no more: their room goes before the result's.
    drop(tj);
    let mut max_tickets: f64 = 0.0;
    let (mut sum_running, mut sum_pending) = (0.0, 0.0);
    let mut out: Vec<JobTickets> = Vec::with_capacity(n);
    // A policy's ticket of job `i` (zero from one that gave none).
    let at = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(0.0);
    for (i, &r) in running.iter().enumerate() {
        let (oi, fi, si) = (at(&o, i), at(&f, i), at(&s, i));
        let tckts = oi + fi + si;
        max_tickets = max_tickets.max(tckts).max(oi + fi + at(&s_first, i));
        if r {
            sum_running += tckts;
        } else {
            sum_pending += tckts;
        }
        out.push(JobTickets {
            tckts,
            otckt: oi,
            ftckt: fi,
            stckt: si,
            share: 0.0,
        });
    }
    for (t, &r) in out.iter_mut().zip(&running) {
        let sum = if r { sum_running } else { sum_pending };
        t.share = if t.tckts > 0.0 { t.tckts / sum } else { 0.0 };
    }
    TicketPass {
        jobs: out,
        max_tickets,
        nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The priorities as they were computed before [`compute_priorities_each`]: every job's
    /// raw values stored in a vector, then normalised in a second walk over it.
    fn stored_then_normalised(pass: &PriorityPass, jobs: &[JobPriorityInput]) -> Vec<JobPriority> {
        let w = &pass.weights;
        let mut out: Vec<JobPriority> = jobs.iter().map(|j| raw_priority(pass, j)).collect();
        let mut min_urg = f64::MAX;
        let mut max_urg = f64::MIN_POSITIVE;
        let mut max_tix = 0.0_f64;
        for p in &out {
            min_urg = min_urg.min(p.urg);
            max_urg = max_urg.max(p.urg);
            max_tix = max_tix.max(p.tckts);
        }
        let max_tix = pass.max_tickets.map_or(max_tix, |m| m.max(max_tix));
        for p in out.iter_mut() {
            p.nurg = normalize(p.urg, min_urg, max_urg);
            p.ntckts = normalize(p.tckts, 0.0, max_tix);
            p.prio = w.weight_urgency * p.nurg
                + w.weight_ticket * p.ntckts
                + w.weight_priority * p.npprior;
        }
        out
    }

    proptest! {
        /// Jobs read one at a time give bit for bit the priorities of the stored version.
        #[test]
        fn priorities_each_equal_stored_ones(
            jobs in proptest::collection::vec(
                (0i64..100_000, proptest::option::of(0i64..200_000), -1023i32..=1024,
                 0.0f64..1e6, 0.0f64..1e5, 0.0f64..1e4),
                0..60,
            ),
            now in 50_000i64..150_000,
            max_tickets in proptest::option::of(0.0f64..1e4),
        ) {
            let jobs: Vec<JobPriorityInput> = jobs
                .iter()
                .enumerate()
                .map(|(i, &(sub, dl, ppri, rr, bonus, tix))| JobPriorityInput {
                    job_id: i as u64,
                    task_id: 1,
                    submission_time: sub,
                    deadline: dl,
                    posix_priority: ppri,
                    resource_contribution: rr,
                    queue_urgency_bonus: bonus,
                    tickets: tix,
                })
                .collect();
            let pass = PriorityPass {
                weights: PriorityWeights {
                    weight_priority: 1.0,
                    weight_urgency: 0.1,
                    weight_ticket: 0.01,
                    weight_waiting_time: 0.278,
                    weight_deadline: 3_600_000.0,
                },
                now,
                max_tickets,
            };
            let want = stored_then_normalised(&pass, &jobs);
            let got = compute_priorities(&pass, &jobs);
            prop_assert_eq!(want.len(), got.len());
            for (a, b) in want.iter().zip(&got) {
                prop_assert_eq!(a.prio.to_bits(), b.prio.to_bits());
                prop_assert_eq!(a, b);
            }
            // The raw columns computed in a first read without the tickets (ranges counted
            // with `add_raw`), the tickets set afterwards: the same priorities.
            let mut ranges = PriorityRanges::default();
            let raws: Vec<JobPriority> = jobs
                .iter()
                .map(|j| {
                    let raw = raw_priority(&pass, &JobPriorityInput { tickets: 0.0, ..*j });
                    ranges.add_raw(&raw);
                    raw
                })
                .collect();
            for j in &jobs {
                ranges.add_tickets(j.tickets);
            }
            let mut from_raw = Vec::new();
            compute_priorities_from_raw(
                &pass,
                &ranges,
                jobs.len(),
                |i| JobPriority { tckts: jobs[i].tickets, ..raws[i] },
                |_, p| from_raw.push(p),
            );
            prop_assert_eq!(from_raw.len(), want.len());
            for (a, b) in want.iter().zip(&from_raw) {
                prop_assert_eq!(a.prio.to_bits(), b.prio.to_bits());
                prop_assert_eq!(a, b);
            }
        }
    }

    fn ojob(id: u64, user: &str, running: bool) -> OverrideJob<'_> {
        OverrideJob {
            job_id: id,
            task_id: 1,
            submission_time: 0,
            user,
            project: None,
            department: None,
            running,
            job_otickets: 0,
            higher_policy_tickets: 0.0,
        }
    }

    #[test]
    fn shared_override_tickets_dilute_like_running_jobs() {
        let mut t = OverrideTables::default();
        t.users.insert("a".into(), 600);
        t.users.insert("b".into(), 300);
        let jobs = [
            ojob(1, "a", true),
            ojob(2, "a", false),
            ojob(3, "a", false),
            ojob(4, "b", false),
            ojob(5, "c", false),
        ];
        let o = override_tickets(&t, true, true, &jobs);
        assert_eq!(o, vec![600.0, 300.0, 200.0, 300.0, 0.0]);
        let o = override_tickets(&t, false, true, &jobs);
        assert_eq!(o, vec![600.0, 600.0, 600.0, 300.0, 0.0]);
    }

    /// Tables whose entries all hold 0 tickets (the default `defaultdepartment`) give the
    /// tickets of empty tables, bit for bit, whatever follows the override policy: the pass
    /// skips computing their zeros.
    #[test]
    fn zero_override_tables_give_what_empty_tables_give() {
        let tree = crate::sharetree::ShareTree::new(
            &crate::sharetree::ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![crate::sharetree::ShareTreeNodeSpec::leaf("default", 1)],
            ),
            &[],
        );
        let usage = crate::sharetree::UsageStore::new();
        let mut zero = OverrideTables::default();
        zero.users.insert("a".into(), 0);
        zero.departments.insert("defaultdepartment".into(), 0);
        assert!(!zero.any_tickets());
        let mut some = zero.clone();
        some.projects.insert("p".into(), 1);
        assert!(some.any_tickets());
        let mut fshares = FunctionalShares::default();
        fshares.users.insert("a".into(), 10);
        fshares.users.insert("b".into(), 30);
        let jobs: Vec<TicketJobInput<'_>> = (0..40u64)
            .map(|i| TicketJobInput {
                job_id: i + 1,
                task_id: 1,
                submission_time: 1_000 + (i % 7) as i64,
                user: ["a", "b", "c"][(i % 3) as usize],
                project: None,
                department: Some("defaultdepartment"),
                running: i % 5 == 0,
                jobshare: 0,
                job_otickets: 0,
                pe_min_slots: 1 + (i % 4) as u32,
            })
            .collect();
        let hierarchy = parse_policy_hierarchy("OFS").expect("OFS");
        for share_override_tickets in [true, false] {
            let tickets = |tables: &OverrideTables| {
                let config = TicketConfig {
                    hierarchy: &hierarchy,
                    override_tables: tables,
                    share_override_tickets,
                    functional_shares: &fshares,
                    functional: FunctionalPolicy {
                        weight_tickets_functional: 1_000.0,
                        ..FunctionalPolicy::default()
                    },
                    share_tree: Some((
                        &tree,
                        &usage,
                        crate::sharetree::ShareTreePolicy {
                            weight_tickets_share: 10_000.0,
                            ..Default::default()
                        },
                    )),
                };
                compute_job_tickets(&config, 2_000, &jobs)
            };
            let (skipped, empty) = (tickets(&zero), tickets(&OverrideTables::default()));
            assert_eq!(skipped, empty);
            let bits = |p: &TicketPass| -> Vec<[u64; 4]> {
                p.jobs
                    .iter()
                    .map(|t| [t.tckts, t.otckt, t.ftckt, t.stckt].map(f64::to_bits))
                    .collect()
            };
            assert_eq!(bits(&skipped), bits(&empty));
            // And what the override policy gives for such tables is indeed all zeros.
            let oj: Vec<OverrideJob<'_>> = jobs
                .iter()
                .map(|j| OverrideJob {
                    department: j.department,
                    ..ojob(j.job_id, j.user, j.running)
                })
                .collect();
            let o = override_tickets(&zero, share_override_tickets, true, &oj);
            assert!(o.iter().all(|t| t.to_bits() == 0), "{o:?}");
        }
    }

    fn fjob(id: u64, user: &str, running: bool) -> FunctionalJob<'_> {
        FunctionalJob {
            job_id: id,
            task_id: 1,
            submission_time: 0,
            user,
            project: None,
            department: None,
            running,
            jobshare: 0,
            higher_policy_tickets: 0.0,
        }
    }

    #[test]
    fn functional_running_jobs_split_user_shares() {
        let mut sh = FunctionalShares::default();
        sh.users.insert("a".into(), 300);
        sh.users.insert("b".into(), 100);
        let policy = FunctionalPolicy {
            weight_tickets_functional: 1000.0,
            ..FunctionalPolicy::default()
        };
        let jobs = [fjob(1, "a", true), fjob(2, "a", true), fjob(3, "b", true)];
        let f = functional_tickets(&sh, &policy, &jobs);
        // Only the user category has shares: weight 1; a's 750 split over two jobs.
        assert_eq!(f, vec![375.0, 375.0, 250.0]);
    }

    #[test]
    fn functional_pending_jobs_count_earlier_ones_as_running() {
        let mut sh = FunctionalShares::default();
        sh.users.insert("a".into(), 100);
        sh.users.insert("b".into(), 100);
        let policy = FunctionalPolicy {
            weight_tickets_functional: 1000.0,
            weight_user: 1.0,
            weight_project: 0.0,
            weight_department: 0.0,
            weight_job: 0.0,
            ..FunctionalPolicy::default()
        };
        let jobs = [
            fjob(1, "a", false),
            fjob(2, "a", false),
            fjob(3, "b", false),
        ];
        let f = functional_tickets(&sh, &policy, &jobs);
        // Job 1 alone: 1000; then b's job with a counted: 100/(100+100) → 500; then a's second
        // job: a's 100 split over 2 jobs → 50/200 → 250.
        assert_eq!(f, vec![1000.0, 250.0, 500.0]);
    }

    #[test]
    fn normalize_empty_range_is_half() {
        assert_eq!(normalize(1000.0, 1000.0, 1000.0), 0.5);
        assert_eq!(normalize(0.0, 0.0, 0.0), 0.5);
        assert_eq!(normalize(1.0, 0.0, 2.0), 0.5);
        assert_eq!(normalize(2.0, 0.0, 2.0), 1.0);
    }

    #[test]
    fn deadline_passed_gives_full_weight() {
        assert_eq!(
            deadline_contribution(100, Some(50), 3_600_000.0),
            3_600_000.0
        );
        assert_eq!(
            deadline_contribution(100, Some(101), 3_600_000.0),
            3_600_000.0
        );
        assert_eq!(deadline_contribution(100, Some(200), 3_600_000.0), 36_000.0);
        assert_eq!(deadline_contribution(100, None, 3_600_000.0), 0.0);
    }

    #[test]
    fn slot_allocation_rules() {
        let fixed = [SlotRange {
            min: 4,
            max: Some(4),
            step: 1,
        }];
        assert_eq!(assumed_slot_allocation(&fixed, UrgencySlots::Max, 999), 4);
        assert_eq!(assumed_slot_allocation(&[], UrgencySlots::Max, 999), 1);
        let range = [SlotRange {
            min: 2,
            max: Some(8),
            step: 1,
        }];
        assert_eq!(assumed_slot_allocation(&range, UrgencySlots::Min, 999), 2);
        assert_eq!(assumed_slot_allocation(&range, UrgencySlots::Max, 999), 8);
        assert_eq!(assumed_slot_allocation(&range, UrgencySlots::Avg, 999), 5);
        assert_eq!(
            assumed_slot_allocation(&range, UrgencySlots::Fixed(3), 999),
            3
        );
        let open = [SlotRange {
            min: 2,
            max: None,
            step: 1,
        }];
        assert_eq!(assumed_slot_allocation(&open, UrgencySlots::Max, 16), 16);
        assert_eq!(assumed_slot_allocation(&open, UrgencySlots::Avg, 16), 9);
    }

    #[test]
    fn string_requests_add_urgency_once() {
        let reqs = [
            HardRequest {
                value_type: ComplexValueType::String,
                urgency: 50.0,
                value: 0.0,
            },
            HardRequest {
                value_type: ComplexValueType::Memory,
                urgency: 2.0,
                value: 3.0,
            },
        ];
        // 4 slots × 1000 + 50 + 2 × 3 × 4
        assert_eq!(
            resource_contribution(4, 1000.0, &reqs),
            4000.0 + 50.0 + 24.0
        );
    }
}
