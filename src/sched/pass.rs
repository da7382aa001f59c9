//! One scheduling pass: priorities for every pending and running job, then pending work in
//! priority order onto free resources, with reservations (`-R y`, `max_reservation`) and
//! backfilling, and a "why pending" reason for every job that stays (`qstat -j`).
//!
//! Cost: O(jobs) to classify and prioritise, O(jobs log jobs) to sort, and per category at
//! most one failed fit: within a pass resources only shrink, so a category that did not fit
//! never fits later in the same pass, and a serial category resumes its host search where
//! the previous job of the category left it.

use super::fit::{self, FitMiss, FitQuery};
use super::priority::{PriorityInput, order_key};
use super::state::{CatId, RunningBooking, SchedState};
use crate::compat::time::ctime;
use crate::launch::Placement;
use crate::model::{JobId, PriorityInfo, TaskId};
use std::collections::HashMap;

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
}

/// Why an eligible job could not start, per category within one pass.
#[derive(Debug, Clone)]
struct CatVerdict {
    failed: Option<String>,
    cursor: usize,
}

enum Eligibility {
    Eligible,
    Blocked(String),
}

impl SchedState {
    /// Runs one scheduling pass at time `now`.
    pub fn schedule(&mut self, now: i64) -> PassResult {
        let mut result = PassResult::default();
        self.cluster.clear_reservations();
        let sconf = self.config.scheduler.clone();

        // 1. Classify: eligible pending jobs, running jobs (priority only), blocked jobs.
        let mut inputs: Vec<PriorityInput> = Vec::new();
        let mut eligible: Vec<(usize, JobId)> = Vec::new(); // (index into inputs, job)
        let mut blocked: Vec<(JobId, String)> = Vec::new();
        for (id, e) in &self.jobs {
            let r = &e.record;
            let has_pending = r.tasks.pending.iter().any(|g| !g.tasks.is_empty());
            let elig = if has_pending {
                self.eligibility(*id, now, &mut result.next_wakeup)
            } else {
                Eligibility::Blocked(String::new())
            };
            let running_since = r.tasks.running.iter().map(|t| t.start_time).min();
            let include = matches!(elig, Eligibility::Eligible) || running_since.is_some();
            if include {
                let d = self.categories[e.cat].demand.as_ref().ok();
                let queue_urgency = match running_since {
                    Some(_) => {
                        let q = r.tasks.running.first().map(|t| t.queue.as_str());
                        self.config
                            .queues
                            .iter()
                            .find(|c| Some(c.name.as_str()) == q)
                            .map_or(0.0, |c| c.urgency)
                    }
                    None => d.map_or(0.0, |d| d.queue_urgency),
                };
                inputs.push(PriorityInput {
                    job: *id,
                    uid: r.submitter.uid,
                    owner: r.submitter.owner.clone(),
                    project: r.spec.project.clone(),
                    submission_time: r.submitter.submission_time,
                    posix_priority: r.spec.priority,
                    slots: d.map_or(1, |d| d.urgency_slots),
                    rrcontr: d.map_or(0.0, |d| d.rr_urgency) + queue_urgency,
                    deadline: r.spec.deadline,
                    running_since: if has_pending && matches!(elig, Eligibility::Eligible) {
                        None
                    } else {
                        running_since
                    },
                });
                if matches!(elig, Eligibility::Eligible) {
                    eligible.push((inputs.len() - 1, *id));
                }
            }
            if let Eligibility::Blocked(why) = elig
                && has_pending
            {
                blocked.push((*id, why));
            }
        }

        // 2. Priorities (the policy seam), written into the records.
        let infos = self.policy.compute(&sconf, now, &inputs);
        for (input, info) in inputs.iter().zip(infos.iter()) {
            if let Some(e) = self.jobs.get_mut(&input.job) {
                e.record.priority = Some(info.clone());
            }
        }
        // Held and blocked jobs show SGE's zeros.
        for (id, _) in &blocked {
            if let Some(e) = self.jobs.get_mut(id) {
                e.record.priority = Some(PriorityInfo::default());
            }
        }

        // 3. Order.
        let mut order: Vec<((i64, i64, JobId), JobId)> = eligible
            .iter()
            .map(|&(i, id)| {
                let prio = infos.get(i).map_or(0.0, |p| p.prio);
                (
                    order_key(sconf.policy, prio, inputs[i].submission_time, id),
                    id,
                )
            })
            .collect();
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        result.considered = order.len();

        // 4. Dispatch.
        let mut verdicts: HashMap<CatId, CatVerdict> = HashMap::new();
        let mut reasons: HashMap<JobId, Vec<String>> = HashMap::new();
        let mut reservations_left = sconf.max_reservation;
        for (_, id) in order {
            let why = self.dispatch_job(id, now, &mut verdicts, &mut reservations_left, &mut result);
            reasons.insert(id, why);
        }
        for (id, why) in blocked {
            reasons.insert(id, vec![why]);
        }

        // 5. Reasons: written only when they change, so a pass does not rewrite every state.
        let mut changed = Vec::new();
        for (id, e) in self.jobs.iter_mut() {
            let new = reasons.remove(id).unwrap_or_default();
            if e.record.pending_reasons != new {
                e.record.pending_reasons = new;
                changed.push(*id);
            }
        }
        for id in changed {
            self.mark_dirty(id);
        }
        result
    }

    /// Whether a job with pending tasks may be considered now.
    fn eligibility(&self, id: JobId, now: i64, wake: &mut Option<i64>) -> Eligibility {
        let Some(e) = self.jobs.get(&id) else {
            return Eligibility::Blocked(String::new());
        };
        let r = &e.record;
        if let Some(err) = &r.error {
            return Eligibility::Blocked(format!("job is in error state: {}", err.message));
        }
        if r.tasks
            .pending
            .iter()
            .all(|g| g.tasks.is_empty() || g.holds.any())
        {
            let letters: String = r
                .tasks
                .pending
                .iter()
                .map(|g| g.holds.letters())
                .collect::<Vec<_>>()
                .join("");
            return Eligibility::Blocked(format!("job is in hold state (hold types: {letters})"));
        }
        if let Some(t) = r.spec.start_time
            && t > now
        {
            *wake = Some(wake.map_or(t, |w| w.min(t)));
            return Eligibility::Blocked(format!(
                "job start time (-a) not reached: it may start at {}",
                ctime(t)
            ));
        }
        let waiting: Vec<String> = r
            .spec
            .predecessors
            .iter()
            .filter(|p| self.jobs.get(p).is_some_and(|j| !j.record.tasks.is_done()))
            .map(|p| p.to_string())
            .collect();
        if !waiting.is_empty() {
            return Eligibility::Blocked(format!(
                "job dropped because of job dependencies (-hold_jid: waiting for job {})",
                waiting.join(", ")
            ));
        }
        if let Err(why) = &self.categories[e.cat].demand {
            return Eligibility::Blocked(why.clone());
        }
        if let Some(why) = &self.categories[e.cat].static_reason {
            return Eligibility::Blocked(why.clone());
        }
        Eligibility::Eligible
    }

    /// Whether array task `task` of `id` waits for the same task of an `-hold_jid_ad`
    /// predecessor (`sge_types(1)`: task-wise dependency).
    fn array_task_blocked(&self, id: JobId, task: TaskId) -> Option<JobId> {
        let e = self.jobs.get(&id)?;
        for p in &e.record.spec.array_predecessors {
            let Some(pj) = self.jobs.get(p) else {
                continue;
            };
            let t = &pj.record.tasks;
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
        for g in e.record.tasks.pending.iter().filter(|g| !g.holds.any()) {
            if e.record.spec.array_predecessors.is_empty() {
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

    /// Starts as many tasks of one job as fit; returns the job's pending reasons.
    fn dispatch_job(
        &mut self,
        id: JobId,
        now: i64,
        verdicts: &mut HashMap<CatId, CatVerdict>,
        reservations_left: &mut u32,
        result: &mut PassResult,
    ) -> Vec<String> {
        let Some(e) = self.jobs.get(&id) else {
            return Vec::new();
        };
        let cat = e.cat;
        let uid = e.record.submitter.uid;
        let tc = e.record.spec.task_concurrency.filter(|n| *n > 0);
        let reserve = e.record.spec.reserve;
        let maxujobs = self.config.scheduler.maxujobs;
        let end = self
            .duration(cat)
            .map_or(i64::MAX, |d| now.saturating_add(d));
        let mut reasons = Vec::new();
        loop {
            let running = self.jobs.get(&id).map_or(0, |e| e.record.tasks.running.len());
            let task = match self.next_task(id) {
                Ok(t) => t,
                Err(why) => {
                    if !why.is_empty() && running == 0 {
                        reasons.push(why);
                    }
                    break;
                }
            };
            let verdict = verdicts.entry(cat).or_insert(CatVerdict {
                failed: None,
                cursor: 0,
            });
            if let Some(why) = &verdict.failed {
                reasons.push(why.clone());
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
            let cursor = verdict.cursor;
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
            };
            result.fits += 1;
            match fit::fit(&self.cluster, &query) {
                Ok(f) => {
                    if demand.pe.is_none() {
                        verdict.cursor = f.cursor;
                    }
                    self.start_task(id, task, now, f.booking, f.placement.clone(), end);
                    result.starts.push(Start {
                        job: id,
                        task,
                        placement: f.placement,
                        restarted: false,
                    });
                }
                Err(miss) => {
                    let blocked_by_reservation = self.cluster.qis.iter().any(|q| !q.reserved.is_empty())
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
                    verdict.failed = Some(why.clone());
                    reasons.push(why);
                    if reserve && *reservations_left > 0 {
                        *reservations_left -= 1;
                        if let Some(r) = self.plan_reservation(id, task, cat, now, &miss) {
                            reasons.push(format!(
                                "reserved {} slot(s) on {} from {} (-R y)",
                                r.placement.slots,
                                r.placement.host,
                                ctime(r.from)
                            ));
                            result.reservations.push(r);
                        }
                        // The next job of this category gets its own reservation attempt,
                        // against resources that now include this one.
                        if let Some(v) = verdicts.get_mut(&cat) {
                            v.failed = None;
                            v.cursor = 0;
                        }
                        // But this job does not retry now.
                        break;
                    }
                    break;
                }
            }
        }
        reasons
    }

    fn start_task(
        &mut self,
        id: JobId,
        task: TaskId,
        now: i64,
        booking: super::cluster::Booking,
        placement: Placement,
        end: i64,
    ) {
        self.cluster.book(&booking);
        let Some(e) = self.jobs.get_mut(&id) else {
            return;
        };
        let uid = e.record.submitter.uid;
        for g in e.record.tasks.pending.iter_mut() {
            if !g.holds.any() && g.tasks.remove(task) {
                break;
            }
        }
        e.record.tasks.pending.retain(|g| !g.tasks.is_empty());
        let granted = if placement.pe.is_some() {
            placement.granted.clone()
        } else {
            Vec::new()
        };
        e.record.tasks.running.push(crate::model::RunningTask {
            task,
            state: crate::model::RunState::Transferring,
            start_time: now,
            queue: placement.queue.clone(),
            host: placement.host.clone(),
            slots: placement.slots,
            granted,
            deleting: false,
            restarted: false,
        });
        *self.user_running.entry(uid).or_insert(0) += 1;
        self.running.insert(
            (id, task),
            RunningBooking {
                booking,
                uid,
                expected_end: end,
            },
        );
        self.mark_dirty(id);
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
        _miss: &FitMiss,
    ) -> Option<Reservation> {
        let demand = self.categories[cat].demand.as_ref().ok()?;
        let mut ends: Vec<(i64, &RunningBooking)> = self
            .running
            .values()
            .filter(|b| b.expected_end != i64::MAX)
            .map(|b| (b.expected_end, b))
            .collect();
        ends.sort_by_key(|(t, _)| *t);
        let mut future = self.cluster.clone();
        let mut i = 0;
        while i < ends.len() {
            let t = ends[i].0;
            while i < ends.len() && ends[i].0 == t {
                future.release(&ends[i].1.booking);
                i += 1;
            }
            let q = FitQuery {
                demand,
                candidates: &self.categories[cat].candidates,
                cursor: 0,
                now,
                end: i64::MAX,
                ignore_availability: false,
            };
            if let Ok(f) = fit::fit(&future, &q) {
                let from = t.max(now);
                for &(qi, n) in &f.booking.slots {
                    self.cluster.qis[qi].reserved.push((from, n));
                }
                return Some(Reservation {
                    job: id,
                    task,
                    from,
                    placement: f.placement,
                });
            }
        }
        None
    }
}
