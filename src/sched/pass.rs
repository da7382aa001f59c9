//! One scheduling pass: priorities for every pending and running job, then pending work in
//! priority order onto free resources, with reservations (`-R y`, `max_reservation`) and
//! backfilling, and a "why pending" reason for every job that stays (`qstat -j`).
//!
//! Cost: O(jobs) to classify and prioritise, O(jobs log jobs) to sort, and per category at
//! most one failed fit: within a pass resources only shrink, so a category that did not fit
//! never fits later in the same pass, and a serial category resumes its host search where
//! the previous job of the category left it.
//!
//! One file over 1,000 lines: the pass's steps share its buffers and reasons table, and
//! their order (classify, prioritise, order, dispatch, reasons) is the algorithm.

use super::fit::{self, FitMiss, FitQuery};
use super::priority::{PriorityInput, order_key};
use super::state::{CatId, JobEntry, RunningBooking, SchedState, WARM_RUNNING_MAX};
use crate::config::PolicyOrder;
use crate::model::Placement;
use crate::model::{JobId, PriorityInfo, TaskId};
use crate::time::ctime;
use std::sync::Arc;

/// Start this task here (the daemon writes the state, then calls the runner).
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub job: JobId,
    pub task: TaskId,
    pub placement: Placement,
    /// The task ran before and was requeued (`RESTARTED=1`).
    pub restarted: bool,
}

/// Resources held back for a `-R y` job from `from` on.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    pub job: JobId,
    pub task: TaskId,
    pub from: i64,
    pub placement: Placement,
}

/// What a pass decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassResult {
    pub starts: Vec<Start>,
    pub reservations: Vec<Reservation>,
    /// The earliest time something changes without an event (an `-a` start time, a host's
    /// retry): the daemon runs a pass then.
    pub next_wakeup: Option<i64>,
    /// Pending jobs that were eligible and considered.
    pub considered: usize,
    /// Fits attempted (a measure of the work done, for the benchmark).
    pub fits: usize,
    /// Where the time went, in microseconds: classify and prioritise, order, dispatch
    /// (with reservations), reasons.
    pub phase_us: [u64; 4],
    /// Qube! preemptions decided after a full pass (`scheduler.preemption`, policy
    /// `cluster`): the daemon kills the `kill` ones and requeues them when they end
    /// ([`SchedState::preempted_task_ended`]).
    pub preemptions: Vec<super::qube::Preemption>,
}

/// A reason list in a pass's [`PassReasons`] table (1-based: 0 is "no reason").
pub(super) type ReasonId = u32;

/// The "why pending" reasons a pass gives, per row: 4 bytes a row naming an entry of a small
/// table of reason lists. Most rows share their category's failure, so the dispatch writes a
/// `u32` per job (no reference count touched, no 16-byte pointer written at a random place),
/// and [`SchedState::store_reasons`] compares each row's kept list with its table entry.
#[derive(Debug, Default)]
pub(crate) struct PassReasons {
    /// Per row: 0 when the pass gave it no reason, else its [`ReasonId`].
    at: Vec<ReasonId>,
    table: Vec<Arc<[String]>>,
    /// The entry of the empty list, once added.
    empty: Option<ReasonId>,
}

impl PassReasons {
    pub(super) fn new(rows: usize) -> Self {
        PassReasons {
            at: vec![0; rows],
            table: Vec::new(),
            empty: None,
        }
    }

    /// Adds a list to the table (an empty list shares one entry).
    pub(super) fn add(&mut self, reasons: Arc<[String]>) -> ReasonId {
        if reasons.is_empty()
            && let Some(e) = self.empty
        {
            return e;
        }
        self.table.push(reasons);
        let id = self.table.len() as ReasonId;
        if self.table[id as usize - 1].is_empty() {
            self.empty = Some(id);
        }
        id
    }

    /// Gives row `pos` the list `id` (replacing what it had in this pass).
    pub(super) fn give(&mut self, pos: usize, id: ReasonId) {
        if let Some(slot) = self.at.get_mut(pos) {
            *slot = id;
        }
    }

    /// Gives row `pos` a list of its own.
    pub(super) fn set(&mut self, pos: usize, reasons: Arc<[String]>) {
        let id = self.add(reasons);
        self.give(pos, id);
    }

    /// The list row `pos` has in this pass, if any.
    pub(super) fn id_at(&self, pos: usize) -> Option<ReasonId> {
        self.at.get(pos).copied().filter(|&id| id != 0)
    }

    /// The words of list `id`.
    pub(super) fn list(&self, id: ReasonId) -> &Arc<[String]> {
        &self.table[id as usize - 1]
    }
}

fn reservation_reason(r: &Reservation) -> String {
    format!(
        "reserved {} slot(s) on {} from {} (-R y)",
        r.placement.slots,
        r.placement.host,
        ctime(r.from)
    )
}

/// The verdict of one category within one pass.
#[derive(Debug, Clone, Default)]
pub(super) struct CatVerdict {
    /// Set once a fit failed: the reason every later job of the category gets (an entry of
    /// the pass's [`PassReasons`]).
    pub(super) failed: Option<ReasonId>,
    /// Serial categories resume their search here.
    pub(super) cursor: usize,
}

/// The verdicts of one pass, per category (indexed by [`CatId`]), and with
/// [`Verdicts::sharing_shapes`] per fit shape ([`super::state::Category::shape`]) too.
#[derive(Debug, Clone, Default)]
pub(super) struct Verdicts {
    by_cat: Vec<CatVerdict>,
    /// Per shape (at its first category's index), the reason a fit from the first instance
    /// failed with while no reservation was made; `None` where a dispatch narrows a
    /// category's instances (a failure there says nothing about the category's siblings).
    by_shape: Option<Vec<Option<ReasonId>>>,
    /// A resource quota set's refusal, by category and owner (interned user and project):
    /// it tells nothing of the category's jobs of other owners, so it is not the category's
    /// failure, but the owner's next jobs of the category get it without a fit.
    quota_failed: std::collections::HashMap<(CatId, u32, Option<u32>), ReasonId>,
}

impl Verdicts {
    pub(super) fn new(categories: usize) -> Self {
        Verdicts {
            by_cat: vec![CatVerdict::default(); categories],
            ..Default::default()
        }
    }

    pub(super) fn sharing_shapes(categories: usize) -> Self {
        Verdicts {
            by_cat: vec![CatVerdict::default(); categories],
            by_shape: Some(vec![None; categories]),
            ..Default::default()
        }
    }
}

impl std::ops::Index<CatId> for Verdicts {
    type Output = CatVerdict;
    fn index(&self, cat: CatId) -> &CatVerdict {
        &self.by_cat[cat]
    }
}

impl std::ops::IndexMut<CatId> for Verdicts {
    fn index_mut(&mut self, cat: CatId) -> &mut CatVerdict {
        &mut self.by_cat[cat]
    }
}

impl SchedState {
    /// The reason a job of category `cat` cannot fit in this pass, if a job of it (or, while
    /// no reservation is made, of its shape) already failed to.
    pub(super) fn known_failure(&self, verdicts: &Verdicts, cat: CatId) -> Option<ReasonId> {
        verdicts[cat].failed.or_else(|| {
            let shapes = verdicts.by_shape.as_ref()?;
            if self.cluster.has_reservations() || self.has_ars() {
                return None;
            }
            shapes.get(self.categories[cat].shape).copied().flatten()
        })
    }
}

/// An eligible pending job, as the dispatch loop needs it (no map lookups on the common path).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    /// Position of the job in `jobs` iteration order (stable within the pass).
    pub(super) pos: usize,
    pub(super) id: JobId,
    pub(super) cat: CatId,
    pub(super) submitted: i64,
    pub(super) reserve: bool,
    pub(super) array_deps: bool,
    /// Interned cluster path (the `cluster` policy).
    pub(super) cluster: u32,
    /// Interned project, and owner (the `armada` and `fbsng` queues and process types).
    pub(super) project: Option<u32>,
    pub(super) owner: u32,
    pub(super) pending_tasks: u64,
}

impl Candidate {
    /// The candidate of row `pos`: everything it holds is the row's, so that a pass keeps
    /// only the candidates' positions until they are ordered (4 bytes a job instead of a
    /// second 56-byte copy of each beside the last order's, at the top of its memory).
    pub(super) fn of_row(pos: usize, h: &super::rows::Row) -> Candidate {
        Candidate {
            pos,
            id: h.id,
            cat: h.cat as CatId,
            submitted: h.submitted,
            reserve: h.reserve(),
            array_deps: h.array_deps(),
            cluster: h.cluster,
            project: h.project(),
            owner: h.owner,
            pending_tasks: h.pending_tasks,
        }
    }
}

/// Marks a priority input whose job is not eligible (`schedule`'s `input_pos`): rows are
/// fewer than 2³¹.
const BLOCKED_INPUT: u32 = 1 << 31;

/// An order key `(first, second, tie)` as one integer with the same order, for keys whose
/// second component is in `0..=u32::MAX`: the first component with its sign bit flipped (so
/// that unsigned order is signed order), then the second, then `tie` in the low 32 bits.
///
/// The pass puts the candidate's index in `tie` instead of its job id: candidates are made
/// in row order, which is job-id order, so the index breaks ties the same way, and the
/// sorted keys say where each candidate is without a second field.
pub(super) fn packed_key(first: i64, second: i64, tie: u32) -> u128 {
    let first = (first as u64) ^ (1u64 << 63);
    (u128::from(first) << 64) | (u128::from(second as u64) << 32) | u128::from(tie)
}

/// `keys` (whose low 32 bits are the candidate's index in `cands`, the candidates' row
/// positions) in the order of `last`, the last pass's ordered candidates, then the keys of
/// candidates it did not have, in their order. `last` is only a hint: each key appears exactly once whatever it holds
/// (a row position no longer a candidate's is skipped, and so is one seen twice), so a
/// stale hint costs time, never correctness. `rows` is the number of rows.
fn in_last_order(keys: &[u128], last: &[Candidate], cands: &[u32], rows: usize) -> Vec<u128> {
    const NONE: u32 = u32::MAX;
    // The candidate index of each row position.
    let mut index_of_pos = vec![NONE; rows];
    for (k, &pos) in cands.iter().enumerate() {
        index_of_pos[pos as usize] = k as u32;
    }
    let mut out = Vec::with_capacity(keys.len());
    for c in last {
        if let Some(k) = index_of_pos.get_mut(c.pos)
            && *k != NONE
        {
            out.push(keys[*k as usize]);
            *k = NONE;
        }
    }
    if out.len() < keys.len() {
        for &pos in cands {
            let k = index_of_pos[pos as usize];
            if k != NONE {
                out.push(keys[k as usize]);
            }
        }
    }
    out
}

/// Buffers of a full pass kept between passes: at 100,000 jobs the ordered candidates
/// take 9 MB, and allocating them anew costs a page fault per 4 KB every pass. Only the
/// allocation the order cache holds anyway is reused, so that `sched_d`'s resident set
/// does not grow.
#[derive(Debug, Default)]
pub(crate) struct PassScratch {
    /// An ordered-candidates allocation no longer in use (the order cache's).
    pub(super) order: Vec<Candidate>,
}

impl SchedState {
    /// Runs one scheduling pass at time `now`.
    pub fn schedule(&mut self, now: i64) -> PassResult {
        let mut clock = std::time::Instant::now();
        let mut result = PassResult::default();
        self.tidy_rows();
        self.cluster.clear_reservations();
        self.ends_cache = None;
        let sconf = self.config.scheduler.clone();
        let ncat = self.categories.len();
        let durations: Vec<Option<i64>> = (0..ncat).map(|c| self.duration(c)).collect();
        // The last full pass's order (kept for the event passes, or in the scratch once an
        // event invalidated it): a hint for this pass's sort, then its allocation is reused.
        let mut ordered = self
            .order_cache
            .take()
            .unwrap_or_else(|| std::mem::take(&mut self.scratch.order));
        self.started_in_pass.clear();
        let n = self.rows.len();
        let mut job_reasons = PassReasons::new(n);
        let mut blocked_pos: Vec<usize> = Vec::new();
        // The eligible jobs' row positions, in row order ([`Candidate::of_row`] makes each
        // candidate once they are ordered).
        let mut cands: Vec<u32> = Vec::with_capacity(n);
        // The row of each priority input, with [`BLOCKED_INPUT`] for a job that is not
        // eligible (it is prioritised for its running tasks).
        let mut input_pos: Vec<u32> = Vec::with_capacity(n);
        // The priority the policy gave each input (NaN until it does).
        let mut prio_of_input: Vec<f64>;

        // 1. Classify (one sequential walk over the dense rows, in job-id order) and
        // 2. prioritise: eligible pending jobs, running jobs and jobs in error (`Eqw`, as
        // SGE's `qstat` shows them) get a priority; held and blocked ones get SGE's zeros.
        {
            for (pos, h) in self.rows.rows.iter().enumerate() {
                if !h.live() {
                    continue;
                }
                let id = h.id;
                let cat = h.cat as CatId;
                let elig = if !h.has_pending() {
                    Err(String::new())
                } else if h.plainly_eligible(now) {
                    self.category_eligibility(cat)
                } else {
                    // Held, in error, waiting for an `-a` time or for other jobs: the
                    // entry (and maybe the record) says why.
                    match self.jobs.get(&id) {
                        Some(e) => self.eligibility_of(e, now, &mut result.next_wakeup),
                        None => Err(String::new()),
                    }
                };
                if elig.is_ok() || h.running_since().is_some() || h.in_error_unheld() {
                    input_pos.push(pos as u32 | if elig.is_ok() { 0 } else { BLOCKED_INPUT });
                }
                match elig {
                    Ok(()) => cands.push(pos as u32),
                    Err(why) if h.has_pending() => {
                        blocked_pos.push(pos);
                        let last = &self.rows.reasons[pos];
                        // A static reason may hold a line per queue or host (SGE's
                        // access refusals).
                        let same = last.len() == why.split('\n').count()
                            && last.iter().zip(why.split('\n')).all(|(a, b)| a == b);
                        job_reasons.set(
                            pos,
                            if same {
                                last.clone()
                            } else if why.contains('\n') {
                                Arc::from(why.split('\n').map(str::to_string).collect::<Vec<_>>())
                            } else {
                                Arc::from(vec![why])
                            },
                        );
                    }
                    Err(_) => {}
                }
            }
            // The policy reads each job from its row when it needs it (no vector of 100,000
            // inputs), and each priority goes straight into the job's row (no vector of
            // 100,000 priorities in between); the dispatch below does not read them.
            let names = &self.name_list;
            let rows = &self.rows.rows;
            // Per category: (urgency slots, resource request urgency, queue urgency).
            let cat_urgency: Vec<(u32, f64, f64)> = self
                .categories
                .iter()
                .map(|c| {
                    c.demand.as_ref().map_or((1, 0.0, 0.0), |d| {
                        (d.urgency_slots, d.rr_urgency, d.queue_urgency)
                    })
                })
                .collect();
            let input = |i: usize| {
                let e = input_pos[i];
                let eligible = e & BLOCKED_INPUT == 0;
                let h = &rows[(e & !BLOCKED_INPUT) as usize];
                let (slots, rr, queue_urgency) = cat_urgency[h.cat as CatId];
                // A job in error that runs nothing is prioritised as a pending one.
                let qu = if eligible || h.running_since().is_none() {
                    queue_urgency
                } else {
                    h.running_queue_urgency
                };
                PriorityInput {
                    job: h.id,
                    uid: h.uid,
                    owner: names.get(h.owner as usize).map_or("", String::as_str),
                    department: names.get(h.department as usize).map(String::as_str),
                    project: h
                        .project()
                        .and_then(|p| names.get(p as usize))
                        .map(String::as_str),
                    submission_time: h.submitted,
                    posix_priority: h.posix_priority,
                    slots,
                    rrcontr: rr + qu,
                    deadline: h.deadline(),
                    running_since: if eligible { None } else { h.running_since() },
                }
            };
            // Sized at the first priority handed out, after the policy's own per-job
            // vectors of its ticket read are freed: not held beside them at the top of the
            // pass's memory.
            prio_of_input = Vec::new();
            let inputs = input_pos.len();
            let priority = &mut self.rows.priority;
            let prio = &mut prio_of_input;
            self.policy
                .compute_each(&sconf, now, inputs, &input, &mut |i, p| {
                    if let Some(slot) = input_pos
                        .get(i)
                        .and_then(|&e| priority.get_mut((e & !BLOCKED_INPUT) as usize))
                    {
                        if prio.is_empty() {
                            prio.resize(inputs, f64::NAN);
                        }
                        if let Some(q) = prio.get_mut(i) {
                            *q = p.prio;
                        }
                        *slot = Some(p);
                    }
                });
            prio_of_input.resize(inputs, f64::NAN);
        }

        let mut lap = |slot: &mut u64| {
            let t = std::time::Instant::now();
            *slot = (t - clock).as_micros() as u64;
            clock = t;
        };
        let mut phases = [0u64; 4];
        lap(&mut phases[0]);
        // 3. Order: compact keys (the key, then the candidate's index) are sorted, not the
        // candidates themselves; keys are unique (the job id, or the index in job-id order,
        // is part of them). Each candidate's priority comes from `prio_of_input` (8 bytes a
        // job, in candidate order), not from the 130-byte priorities in the rows. When every
        // second key component fits in 32 bits (a submission time, or 0), the whole key packs
        // into one u128 that orders like the tuple, with the candidate's index in its low
        // bits: one integer comparison per step, and 16 bytes a key to sort.
        let rows = &self.rows.rows;
        debug_assert!(
            cands
                .windows(2)
                .all(|w| rows[w[0] as usize].id < rows[w[1] as usize].id),
            "rows in job-id order"
        );
        let mut keys: Vec<u128> = Vec::with_capacity(cands.len());
        let mut packs = true;
        {
            let mut eligible = input_pos
                .iter()
                .zip(&prio_of_input)
                .filter(|(e, _)| **e & BLOCKED_INPUT == 0)
                .map(|(e, p)| (*e, *p));
            // The eligible inputs are the candidates, in the same (row) order.
            for (k, &pos) in cands.iter().enumerate() {
                let pos = pos as usize;
                let next = eligible.next();
                debug_assert_eq!(next.map(|(e, _)| e as usize), Some(pos), "input of {k}");
                let prio = match next {
                    // A policy that did not hand this job a priority leaves the last one.
                    Some((_, p)) if !p.is_nan() => p,
                    _ => self.rows.priority[pos].as_ref().map_or(0.0, |p| p.prio),
                };
                let key = order_key(sconf.policy, prio, rows[pos].submitted, rows[pos].id);
                if !(0..=i64::from(u32::MAX)).contains(&key.1) {
                    packs = false;
                    break;
                }
                keys.push(packed_key(key.0, key.1, k as u32));
            }
        }
        if packs {
            // Laid out in the last pass's order first: between two passes most jobs keep
            // their place, and a stable sort (which merges the runs it finds) then does
            // little more than one scan. Keys are unique, so any sort gives the same order.
            // Keys already in order (`fifo`: the job ids, in row order) need no layout; without
            // a last order (the first pass, rows re-laid out) the unstable sort is the faster.
            if keys.is_sorted() {
                // Nothing to do.
            } else if ordered.is_empty() {
                keys.sort_unstable();
            } else {
                keys = in_last_order(&keys, &ordered, &cands, n);
                keys.sort();
            }
            ordered.clear();
            ordered.extend(keys.iter().map(|&k| {
                let pos = cands[k as u32 as usize] as usize;
                Candidate::of_row(pos, &rows[pos])
            }));
        } else {
            ordered.clear();
            let mut keys: Vec<((i64, i64, JobId), u32)> = cands
                .iter()
                .map(|&pos| {
                    let h = &rows[pos as usize];
                    let prio = self.rows.priority[pos as usize]
                        .as_ref()
                        .map_or(0.0, |p| p.prio);
                    (order_key(sconf.policy, prio, h.submitted, h.id), pos)
                })
                .collect();
            keys.sort_unstable();
            ordered.extend(
                keys.iter()
                    .map(|&(_, pos)| Candidate::of_row(pos as usize, &rows[pos as usize])),
            );
        }
        drop(prio_of_input);
        drop(cands);
        let cands = ordered;
        result.considered = cands.len();
        for pos in blocked_pos {
            // A blocked job gets SGE's zeros, unless it has running tasks or is in error:
            // then it had a priority input and keeps its computed priority.
            let row = &self.rows.rows[pos];
            if row.running_since().is_none() && !row.in_error_unheld() {
                self.rows.priority[pos] = Some(PriorityInfo::default());
            }
        }

        if sconf.policy == PolicyOrder::Cluster {
            self.qube_policy_terms(&cands);
        }
        lap(&mut phases[1]);
        self.dispatch_all(&cands, &mut job_reasons, true, now, &durations, &mut result);
        self.ar_window_clear();
        result.next_wakeup = [result.next_wakeup, self.ar_next_change(now)]
            .into_iter()
            .flatten()
            .min();
        lap(&mut phases[2]);
        self.store_reasons(job_reasons, true);
        lap(&mut phases[3]);
        result.phase_us = phases;
        self.keep_order(cands);
        if self.preempting() {
            result.preemptions = self.plan_preemptions(now);
        }
        result
    }

    /// A pass after an event that changed only resources or running tasks (a task started
    /// or ended, a host came back): the priorities and order of the last full pass are
    /// reused, and a job whose category already failed costs no lookup, so the pass is
    /// O(candidates) with a small constant. Falls back to [`SchedState::schedule`] when the
    /// set of jobs, a record or the configuration changed since.
    pub fn schedule_event(&mut self, now: i64) -> PassResult {
        let Some(cands) = self.order_cache.take() else {
            return self.schedule(now);
        };
        let mut clock = std::time::Instant::now();
        let mut result = PassResult::default();
        self.cluster.clear_reservations();
        self.ends_cache = None;
        let durations: Vec<Option<i64>> = (0..self.categories.len())
            .map(|c| self.duration(c))
            .collect();
        let mut job_reasons = PassReasons::new(self.rows.len());
        result.considered = cands.len();
        self.dispatch_all(
            &cands,
            &mut job_reasons,
            false,
            now,
            &durations,
            &mut result,
        );
        self.ar_window_clear();
        result.next_wakeup = [result.next_wakeup, self.ar_next_change(now)]
            .into_iter()
            .flatten()
            .min();
        let t = std::time::Instant::now();
        result.phase_us[2] = (t - clock).as_micros() as u64;
        clock = t;
        self.store_reasons(job_reasons, false);
        result.phase_us[3] = clock.elapsed().as_micros() as u64;
        self.keep_order(cands);
        result
    }

    /// Keeps the ordered candidates for [`SchedState::schedule_event`], without the jobs
    /// whose last pending task started in this pass.
    fn keep_order(&mut self, mut cands: Vec<Candidate>) {
        let started = std::mem::take(&mut self.started_in_pass);
        // The jobs that started and have nothing left to start, sorted: each candidate is
        // looked for by a binary search among these few, not hashed (an event pass keeps
        // ≈ 100,000 candidates after starting one task).
        let mut done: Vec<JobId> = started
            .iter()
            .copied()
            .filter(|id| !self.jobs.get(id).is_some_and(|e| e.hot.pending_unheld))
            .collect();
        if !done.is_empty() {
            done.sort_unstable();
            cands.retain(|c| done.binary_search(&c.id).is_err());
        }
        self.order_cache = Some(cands);
    }

    /// Step 4, dispatch in order: a job whose category already failed in this pass gets
    /// the category's reason without a lookup.
    fn dispatch_all(
        &mut self,
        cands: &[Candidate],
        job_reasons: &mut PassReasons,
        _full: bool,
        now: i64,
        durations: &[Option<i64>],
        result: &mut PassResult,
    ) {
        match self.config.scheduler.policy {
            PolicyOrder::Cluster => {
                return self.dispatch_by_host(cands, job_reasons, now, durations, result);
            }
            PolicyOrder::Armada => {
                return self.dispatch_armada(cands, job_reasons, now, durations, result);
            }
            PolicyOrder::Fbsng => {
                return self.dispatch_fbsng(cands, job_reasons, now, durations, result);
            }
            _ => {}
        }
        let mut verdicts = Verdicts::sharing_shapes(self.categories.len());
        let mut reservations_left = self.config.scheduler.max_reservation;
        for c in cands {
            // Only a `-R y` job with reservations left, or one whose tasks wait task-wise,
            // needs a closer look once its category failed.
            if let Some(r) = self.known_failure(&verdicts, c.cat)
                && !(c.reserve && reservations_left > 0)
                && !c.array_deps
            {
                job_reasons.give(c.pos, r);
                continue;
            }
            self.dispatch_job(
                c,
                now,
                durations[c.cat],
                &mut verdicts,
                &mut reservations_left,
                result,
                usize::MAX,
                job_reasons,
            );
        }
    }

    /// Step 5, reasons: a record is rewritten only when its reasons change. With `clear`,
    /// jobs without a new reason get none (a full pass saw every job); without, they keep
    /// theirs.
    fn store_reasons(&mut self, mut job_reasons: PassReasons, clear: bool) {
        let none = if clear {
            job_reasons.add(Arc::from(Vec::new()))
        } else {
            0
        };
        let mut changed = Vec::new();
        // Per table entry, the last kept list found equal to it by content: the rows of a
        // category mostly keep one allocation from an earlier pass, so most rows compare
        // two pointers, not their words.
        let mut same: Vec<Option<Arc<[String]>>> = vec![None; job_reasons.table.len()];
        // A row the pass gave a reason is live: it was classified in this pass, or it is a
        // candidate of the cached order, which removing a job forgets. Only the other rows
        // are read (a full pass gives each live one the empty list), so that the walk reads
        // 20 bytes a row, not the row.
        let rows = &mut self.rows;
        for (pos, reasons) in rows.reasons.iter_mut().enumerate() {
            let id = match job_reasons.at.get(pos) {
                Some(&id) if id != 0 => {
                    debug_assert!(rows.rows[pos].live(), "row {pos} given a reason is live");
                    id
                }
                _ if clear && rows.rows.get(pos).is_some_and(|r| r.live()) => none,
                _ => continue,
            };
            let new = &job_reasons.table[id as usize - 1];
            if Arc::ptr_eq(reasons, new) {
                continue;
            }
            let memo = &mut same[id as usize - 1];
            if memo.as_ref().is_some_and(|k| Arc::ptr_eq(k, reasons)) {
                continue;
            }
            if reasons[..] == new[..] {
                *memo = Some(reasons.clone());
            } else {
                *reasons = new.clone();
                changed.push(rows.rows[pos].id);
            }
        }
        for id in changed {
            self.mark_dirty(id);
        }
    }

    /// Whether a job with pending tasks may be considered now, else why not. Reads only the
    /// hot fields unless the job is blocked (then the record says why).
    fn eligibility_of(&self, e: &JobEntry, now: i64, wake: &mut Option<i64>) -> Result<(), String> {
        let h = &e.hot;
        if h.error {
            let msg = e
                .record
                .get()
                .and_then(|r| r.error.as_ref().map(|x| x.message.clone()))
                .unwrap_or_default();
            return Err(format!("job is in error state: {msg}"));
        }
        if !h.pending_unheld {
            let letters = h.holds.letters();
            return Err(format!("job is in hold state (hold types: {letters})"));
        }
        if let Some(t) = h.start_time
            && t > now
        {
            *wake = Some(wake.map_or(t, |w| w.min(t)));
            return Err(format!(
                "job start time (-a) not reached: it may start at {}",
                ctime(t)
            ));
        }
        if h.has_predecessors {
            let waiting: Vec<String> = h
                .predecessors
                .iter()
                .filter(|p| self.jobs.get(p).is_some_and(|j| !j.hot.is_done()))
                .map(|p| p.to_string())
                .collect();
            if !waiting.is_empty() {
                return Err(format!(
                    "job dropped because of job dependencies (-hold_jid: waiting for job {})",
                    waiting.join(", ")
                ));
            }
        }
        self.category_eligibility(e.cat)
    }

    /// Whether the job's category can ever run, else why not (the last step of
    /// [`SchedState::eligibility_of`]).
    fn category_eligibility(&self, cat: CatId) -> Result<(), String> {
        let cat = &self.categories[cat];
        if let Err(why) = &cat.demand {
            return Err(why.clone());
        }
        if let Some(why) = &cat.static_reason {
            return Err(why.clone());
        }
        Ok(())
    }

    /// Whether array task `task` of `id` waits for the same task of an `-hold_jid_ad`
    /// predecessor (`sge_types(1)`: task-wise dependency).
    fn array_task_blocked(&self, id: JobId, task: TaskId) -> Option<JobId> {
        let e = self.jobs.get(&id)?;
        let rec = e.record.get()?;
        for p in &rec.spec.array_predecessors {
            let Some(pr) = self.jobs.get(p).and_then(|pj| pj.record.get()) else {
                continue;
            };
            let t = &pr.tasks;
            if t.pending.iter().any(|g| g.tasks.contains(task))
                || t.running.iter().any(|r| r.task == task)
            {
                return Some(*p);
            }
        }
        None
    }

    /// The next pending task of a job that may start: not held and not waiting task-wise.
    fn next_task(&self, id: JobId) -> Result<TaskId, String> {
        let Some(e) = self.jobs.get(&id) else {
            return Err(String::new());
        };
        let mut waited_for = None;
        let Some(rec) = e.record.get() else {
            return Err(String::new());
        };
        for g in rec.tasks.pending.iter().filter(|g| !g.holds.any()) {
            if rec.spec.array_predecessors.is_empty() {
                if let Some(t) = g.tasks.first() {
                    return Ok(t);
                }
                continue;
            }
            for t in g.tasks.iter() {
                match self.array_task_blocked(id, t) {
                    None => return Ok(t),
                    Some(p) => waited_for = waited_for.or(Some(p)),
                }
            }
        }
        Err(match waited_for {
            Some(p) => format!(
                "job dropped because of job dependencies (-hold_jid_ad: waiting for tasks of job {p})"
            ),
            None => "all pending tasks are held".to_string(),
        })
    }

    /// Starts as many tasks of one job as fit; gives the job its pending reasons in
    /// `job_reasons` (its category's failure when that is all there is to say).
    // The pass's working state is passed piecewise so the policy dispatchers (qube, fbsng,
    // armada) can share it without borrowing all of `self`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch_job(
        &mut self,
        c: &Candidate,
        now: i64,
        duration: Option<i64>,
        verdicts: &mut Verdicts,
        reservations_left: &mut u32,
        result: &mut PassResult,
        max_tasks: usize,
        job_reasons: &mut PassReasons,
    ) {
        let (id, cat) = (c.id, c.cat);
        let Some(e) = self.jobs.get(&id) else {
            job_reasons.set(c.pos, Arc::from(Vec::new()));
            return;
        };
        let uid = e.hot.uid;
        let quota_key =
            (!self.cluster.quotas.is_empty()).then_some((cat, e.hot.owner, e.hot.project));
        // Whose job it is, for the quotas: named at its first fit (most jobs of a busy pass
        // are answered by their category's failure and never need it).
        let mut owner: Option<Option<super::quota::QuotaOwner>> = None;
        // Decoded now: the job is about to be dispatched or explained.
        let Some(rec) = self.job_mut(id) else {
            job_reasons.set(c.pos, Arc::from(Vec::new()));
            return;
        };
        if let Some(ar) = rec.spec.ar {
            return self.dispatch_in_ar(c, ar, now, duration, result, max_tasks, job_reasons);
        }
        let tc = rec.spec.task_concurrency.filter(|n| *n > 0);
        let reserve = c.reserve;
        let maxujobs = self.config.scheduler.maxujobs;
        let end = duration.map_or(i64::MAX, |d| now.saturating_add(d));
        let mut reasons = Vec::new();
        let mut started = 0usize;
        loop {
            if started >= max_tasks {
                break;
            }
            let (running, pending_unheld) = self.jobs.get(&id).map_or((0, false), |e| {
                (e.hot.running as usize, e.hot.pending_unheld)
            });
            // Nothing left to start beside what runs: `next_task` would say so and give no
            // reason, after reading a record `start_task` may just have encoded again.
            if running > 0 && !pending_unheld {
                break;
            }
            let task = match self.next_task(id) {
                Ok(t) => t,
                Err(why) => {
                    if !why.is_empty() && running == 0 {
                        reasons.push(why);
                    }
                    break;
                }
            };
            let known = self
                .known_failure(verdicts, cat)
                .or_else(|| quota_key.and_then(|k| verdicts.quota_failed.get(&k).copied()));
            if let Some(why) = known {
                // A job of this category already failed to fit in this pass; a `-R y` job
                // still gets its reservation.
                if reserve && running == 0 && *reservations_left > 0 {
                    *reservations_left -= 1;
                    if let Some(r) = self.plan_reservation(id, task, cat, now) {
                        reasons.extend(job_reasons.list(why).iter().cloned());
                        reasons.push(reservation_reason(&r));
                        result.reservations.push(r);
                        break;
                    }
                }
                if reasons.is_empty() {
                    job_reasons.give(c.pos, why);
                    return;
                }
                reasons.extend(job_reasons.list(why).iter().cloned());
                break;
            }
            if let Some(tc) = tc
                && running as u32 >= tc
            {
                reasons.push(format!(
                    "job has reached its task concurrency limit (-tc {tc})"
                ));
                break;
            }
            if maxujobs > 0 && self.user_running.get(&uid).copied().unwrap_or(0) >= maxujobs {
                reasons.push(format!(
                    "job dropped because of user limitations (maxujobs {maxujobs})"
                ));
                break;
            }
            // Advance reservations whose window this run would overlap hold their share.
            self.ar_window(now, end);
            let cursor = verdicts[cat].cursor;
            if owner.is_none() {
                owner = Some(self.quota_owner(id));
            }
            let Ok(demand) = &self.categories[cat].demand else {
                break;
            };
            let query = FitQuery {
                demand,
                candidates: &self.categories[cat].candidates,
                cursor,
                now,
                end,
                ignore_availability: false,
                owner: owner.as_ref().and_then(Option::as_ref),
            };
            result.fits += 1;
            match fit::fit(&self.cluster, &query) {
                Ok(f) => {
                    if demand.pe.is_none() {
                        verdicts[cat].cursor = f.cursor;
                    }
                    let restarted =
                        self.start_task(id, task, now, f.booking, f.placement.clone(), end);
                    started += 1;
                    result.starts.push(Start {
                        job: id,
                        task,
                        placement: f.placement,
                        restarted,
                    });
                }
                Err(miss) => {
                    let blocked_by_reservation = self.cluster.has_reservations()
                        && fit::fit(
                            &self.cluster,
                            &FitQuery {
                                end: i64::MIN,
                                cursor: 0,
                                ..query
                            },
                        )
                        .is_ok();
                    let why = if blocked_by_reservation {
                        "cannot run because resources are reserved for higher-priority jobs (-R y) and its run time (h_rt or default_duration) would overlap the reservation".to_string()
                    } else {
                        miss.describe()
                    };
                    // The same words as in the last pass share the last pass's allocation, so
                    // that comparing reasons is a pointer comparison.
                    let shared = match &self.categories[cat].last_failure {
                        Some(last) if last.len() == 1 && last[0] == why => last.clone(),
                        _ => {
                            let fresh: Arc<[String]> = Arc::from(vec![why.clone()]);
                            self.categories[cat].last_failure = Some(fresh.clone());
                            fresh
                        }
                    };
                    let r = job_reasons.add(shared);
                    if let (FitMiss::Quota(_), Some(k)) = (&miss, quota_key) {
                        verdicts.quota_failed.insert(k, r);
                    } else {
                        verdicts[cat].failed = Some(r);
                    }
                    // A fit from the first instance, with no reservation made: the run time
                    // played no part, the category's siblings would fail alike.
                    if cursor == 0
                        && !self.cluster.has_reservations()
                        && !self.has_ars()
                        && !matches!(miss, FitMiss::Quota(_))
                    {
                        let shape = self.categories[cat].shape;
                        if let Some(s) = verdicts.by_shape.as_mut().and_then(|v| v.get_mut(shape)) {
                            *s = Some(r);
                        }
                    }
                    reasons.push(why);
                    if reserve && *reservations_left > 0 {
                        *reservations_left -= 1;
                        if let Some(r) = self.plan_reservation(id, task, cat, now) {
                            reasons.push(reservation_reason(&r));
                            result.reservations.push(r);
                        }
                        // The next job of this category gets its own reservation attempt,
                        // against resources that now include this one.
                        verdicts[cat] = CatVerdict::default();
                        // But this job does not retry now.
                        break;
                    }
                    break;
                }
            }
        }
        job_reasons.set(c.pos, Arc::from(reasons));
    }

    /// Starts what fits of a job bound to advance reservation `ar`: only while it is open,
    /// only in what it holds and its other jobs leave (`sched::ar`).
    #[allow(clippy::too_many_arguments)]
    fn dispatch_in_ar(
        &mut self,
        c: &Candidate,
        ar: u32,
        now: i64,
        duration: Option<i64>,
        result: &mut PassResult,
        max_tasks: usize,
        job_reasons: &mut PassReasons,
    ) {
        let (id, cat) = (c.id, c.cat);
        let owner = self.jobs.get(&id).and_then(|e| e.record.get()).map(|r| {
            (
                r.submitter.owner.clone(),
                r.submitter.group.clone(),
                r.submitter.uid,
            )
        });
        let window = self
            .ar(ar)
            .filter(|r| r.holds())
            .map(|r| (r.submission.start, r.submission.end, r.clone()));
        let mut reasons = Vec::new();
        match window {
            None => reasons.push(format!(
                "cannot run because advance reservation {ar} does not exist"
            )),
            // SGE accepts the job and never runs it there.
            Some((_, _, r))
                if !owner.as_ref().is_some_and(|(user, group, uid)| {
                    crate::compat::ar::may_use(&self.config, &r, user, group, *uid)
                }) =>
            {
                reasons.push(format!(
                    "cannot run because its owner is not in the user list of advance reservation {ar}"
                ))
            }
            Some((start, _, _)) if start > now => reasons.push(format!(
                "cannot run because its advance reservation {ar} starts at {}",
                ctime(start)
            )),
            Some(_) => {}
        }
        let end = duration.map_or(i64::MAX, |d| now.saturating_add(d));
        let mut started = 0usize;
        while reasons.is_empty() && started < max_tasks {
            let task = match self.next_task(id) {
                Ok(t) => t,
                Err(why) => {
                    let running = self.jobs.get(&id).map_or(0, |e| e.hot.running as usize);
                    if !why.is_empty() && running == 0 {
                        reasons.push(why);
                    }
                    break;
                }
            };
            let Some(view) = self.ar_view(ar) else {
                break;
            };
            let Ok(demand) = &self.categories[cat].demand else {
                break;
            };
            result.fits += 1;
            let fitted = fit::fit(
                &view,
                &FitQuery {
                    demand,
                    candidates: &self.categories[cat].candidates,
                    cursor: 0,
                    now,
                    end: i64::MAX,
                    ignore_availability: false,
                    // What the reservation holds was granted whole.
                    owner: None,
                },
            );
            match fitted {
                Ok(f) => {
                    let restarted = self.start_task(
                        id,
                        task,
                        now,
                        super::cluster::Booking::default(),
                        f.placement.clone(),
                        end,
                    );
                    self.ars.used.insert((id, task), (ar, f.booking));
                    started += 1;
                    result.starts.push(Start {
                        job: id,
                        task,
                        placement: f.placement,
                        restarted,
                    });
                }
                Err(miss) => {
                    reasons.push(format!(
                        "cannot run in advance reservation {ar}: {}",
                        miss.describe()
                    ));
                    break;
                }
            }
        }
        job_reasons.set(c.pos, Arc::from(reasons));
    }

    fn start_task(
        &mut self,
        id: JobId,
        task: TaskId,
        now: i64,
        booking: super::cluster::Booking,
        placement: Placement,
        end: i64,
    ) -> bool {
        self.cluster.book(&booking);
        // Only a host with devices costs a lookup of its configuration.
        let master_has_devices = booking
            .slots
            .first()
            .is_some_and(|&(qi, _)| self.cluster.hosts[self.cluster.qis[qi].host].devices);
        let devices = if master_has_devices {
            self.grant_devices(id, &placement)
        } else {
            Vec::new()
        };
        let held = self.hold_devices(&placement.host, &devices);
        let Some(e) = self.jobs.get_mut(&id) else {
            return false;
        };
        let uid = e.hot.uid;
        let Some(record) = e.record.warm() else {
            return false;
        };
        let restarted = record.tasks.restarted.remove(task);
        for g in record.tasks.pending.iter_mut() {
            if !g.holds.any() && g.tasks.remove(task) {
                break;
            }
        }
        record.tasks.pending.retain(|g| !g.tasks.is_empty());
        // Most jobs run one task: room for one, not the four a first push makes (a running
        // task is 168 bytes).
        if record.tasks.running.is_empty() {
            record.tasks.running.reserve_exact(1);
        }
        let granted = if placement.pe.is_some() {
            placement.granted.clone()
        } else {
            Vec::new()
        };
        record.tasks.running.push(crate::model::RunningTask {
            task,
            state: crate::model::RunState::Transferring,
            start_time: now,
            queue: placement.queue.clone(),
            host: placement.host.clone(),
            slots: placement.slots,
            granted,
            deleting: false,
            restarted,
            queue_suspended: false,
            rescheduling: false,
            devices,
            holds: crate::model::Holds::NONE,
            usage: None,
        });
        *self.user_running.entry(uid).or_insert(0) += 1;
        self.running.insert(
            (id, task),
            RunningBooking {
                booking,
                uid,
                expected_end: end,
                devices: held,
            },
        );
        self.refresh_hot(id);
        self.started_in_pass.insert(id);
        self.mark_dirty(id);
        // Decoded above: cooled once it stops being used (`cool_idle`), or at once when
        // more than [`WARM_RUNNING_MAX`] records were decoded since and the job has nothing
        // left to start: a first pass that starts thousands otherwise held all their
        // decoded records (≈ 3.5 KB each with their strings) to its end, the top of the
        // heap. The daemon's write decodes it again.
        if !self.keep_running_warm
            && self.warm.len() > WARM_RUNNING_MAX
            && let Some(e) = self.jobs.get_mut(&id)
            && !e.hot.pending_unheld
        {
            drop(e.record.cool(&mut self.cold_bases, e.hot.owner));
            self.warm.remove(&id);
        } else {
            self.warm.insert(id);
        }
        restarted
    }

    /// Finds the earliest time the job's next task fits if running tasks end when expected,
    /// and holds those slots from then on (`sched_conf(5)` `max_reservation`,
    /// `default_duration`). Lower-priority jobs may still use them if they end before.
    fn plan_reservation(
        &mut self,
        id: JobId,
        task: TaskId,
        cat: CatId,
        now: i64,
    ) -> Option<Reservation> {
        // Running tasks grouped by expected end. The fit is monotone in time (ends only free
        // resources), so a binary search over the groups finds the earliest fitting end with
        // O(log groups) fits. Releases are applied to the live cluster and undone after, so
        // the cluster is not cloned.
        // Sorted once per pass and again only after a start added a running task, each with a
        // copy of its booking: the search releases and re-books thousands of them, and a
        // hashed lookup of each in `running` cost more than the release.
        // No reservation plans into an advance reservation's capacity.
        self.ar_window(now, i64::MAX);
        let ends = match self.ends_cache.take() {
            Some((n, v)) if n == self.running.len() => v,
            _ => {
                let mut v: Vec<super::state::EndOfTask> = self
                    .running
                    .iter()
                    .filter(|(_, b)| b.expected_end != i64::MAX)
                    .map(|(&(j, t), b)| (b.expected_end, j, t, b.booking.clone()))
                    .collect();
                v.sort_unstable_by_key(|&(end, j, t, _)| (end, j, t));
                v
            }
        };
        let mut group_end: Vec<usize> = Vec::new(); // exclusive end index of each group
        for i in 0..ends.len() {
            if i + 1 == ends.len() || ends[i + 1].0 != ends[i].0 {
                group_end.push(i + 1);
            }
        }
        let owner = self.quota_owner(id);
        let owner = owner.as_ref();
        let demand = self.categories[cat].demand.as_ref().ok()?;
        let candidates = &self.categories[cat].candidates;
        let cluster = &mut self.cluster;
        let mut released = 0usize; // number of entries of `ends` released
        let mut move_to = |cluster: &mut super::cluster::Cluster, target: usize| {
            while released < target {
                cluster.release(&ends[released].3);
                released += 1;
            }
            while released > target {
                released -= 1;
                cluster.book(&ends[released].3);
            }
        };
        let probe = |cluster: &super::cluster::Cluster| {
            fit::fit(
                cluster,
                &FitQuery {
                    demand,
                    candidates,
                    cursor: 0,
                    now,
                    end: i64::MAX,
                    ignore_availability: false,
                    owner,
                },
            )
            .ok()
        };
        let (mut lo, mut hi) = (0usize, group_end.len());
        let mut found = None;
        // Smallest group index whose release makes the job fit, if any.
        while lo < hi {
            let mid = (lo + hi) / 2;
            move_to(cluster, group_end[mid]);
            match probe(cluster) {
                Some(f) => {
                    found = Some((mid, f));
                    hi = mid;
                }
                None => lo = mid + 1,
            }
        }
        move_to(cluster, 0);
        let Some((g, f)) = found else {
            self.ends_cache = Some((self.running.len(), ends));
            return None;
        };
        let from = ends[group_end[g] - 1].0.max(now);
        for &(qi, n) in &f.booking.slots {
            self.cluster.reserve(qi, from, n);
        }
        self.ends_cache = Some((self.running.len(), ends));
        Some(Reservation {
            job: id,
            task,
            from,
            placement: f.placement,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Candidate, in_last_order, packed_key};
    use crate::model::JobId;
    use proptest::prelude::*;

    fn candidate(pos: usize) -> Candidate {
        Candidate {
            pos,
            id: JobId(pos as u32 + 1),
            cat: 0,
            submitted: 0,
            reserve: false,
            array_deps: false,
            cluster: 0,
            project: None,
            owner: 0,
            pending_tasks: 1,
        }
    }

    proptest! {
        /// Whatever the last order holds (positions gone, repeated, out of range, new
        /// candidates it never had), the keys laid out in it are this pass's keys, each
        /// once, and sorted they are the order a sort from scratch gives.
        #[test]
        fn keys_in_last_order_sort_like_fresh_ones(
            rows in 0..60usize,
            present in proptest::collection::vec(any::<bool>(), 60),
            prios in proptest::collection::vec(-3..3i64, 60),
            last in proptest::collection::vec(0..70usize, 0..80),
        ) {
            let cands: Vec<u32> = (0..rows).filter(|&p| present[p]).map(|p| p as u32).collect();
            let keys: Vec<u128> = cands
                .iter()
                .enumerate()
                .map(|(k, &pos)| packed_key(prios[pos as usize], 0, k as u32))
                .collect();
            let last: Vec<Candidate> = last.into_iter().map(candidate).collect();
            let mut laid = in_last_order(&keys, &last, &cands, rows);
            let mut fresh = keys.clone();
            fresh.sort_unstable();
            laid.sort();
            prop_assert_eq!(laid, fresh);
        }
    }

    proptest! {
        /// The packed key orders like the tuple it packs (second component in u32 range).
        #[test]
        fn packed_key_orders_like_the_tuple(
            a in (any::<i64>(), 0..=i64::from(u32::MAX), any::<u32>()),
            b in (any::<i64>(), 0..=i64::from(u32::MAX), any::<u32>()),
        ) {
            let ka = (a.0, a.1, JobId(a.2));
            let kb = (b.0, b.1, JobId(b.2));
            prop_assert_eq!(
                packed_key(ka.0, ka.1, ka.2.0).cmp(&packed_key(kb.0, kb.1, kb.2.0)),
                ka.cmp(&kb)
            );
        }
    }

    #[test]
    fn packed_key_extremes() {
        let keys = [
            (i64::MIN, 0, JobId(0)),
            (-1, u32::MAX as i64, JobId(u32::MAX)),
            (0, 0, JobId(0)),
            (0, 0, JobId(1)),
            (0, 1, JobId(0)),
            (1, 0, JobId(0)),
            (i64::MAX, u32::MAX as i64, JobId(u32::MAX)),
        ];
        for w in keys.windows(2) {
            let p = |k: (i64, i64, JobId)| packed_key(k.0, k.1, k.2.0);
            assert!(p(w[0]) < p(w[1]), "{:?} {:?}", w[0], w[1]);
        }
    }
}
