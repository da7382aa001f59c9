//! Dense per-job rows: what a full pass reads and writes for every job, in contiguous arrays
//! instead of the job map's entries.
//!
//! A full pass classifies and prioritises every job and stores a priority and a "why pending"
//! answer for each. Walking the job map for that visits 100,000 B-tree entries of ≈ 350 bytes
//! scattered over the heap, twice; the pass is memory-bound. Here each job has a row of
//! ≈ 100 bytes ([`Row`], a copy of the [`Hot`] fields the pass needs, kept up to date by
//! [`SchedState::refresh_hot`]), and the last pass's [`PriorityInfo`], reasons and policy
//! terms sit in arrays beside the rows, read by position ([`JobEntry::row`]) by `qstat`'s
//! [`SchedState::priority`] and [`SchedState::record_for_write`].
//!
//! Rows are in job-id order, the job map's order, so that a pass hands the policies its jobs
//! in the same order as a walk over the map (floating-point sums depend on it). New jobs are
//! appended: ids only grow, so the order holds, except for a job added with a lower id than
//! the last (a spool loaded out of order), which marks the rows unsorted. A removed job leaves
//! a dead row. A full pass first re-lays the rows out in map order when they are unsorted or
//! more than an eighth are dead ([`SchedState::tidy_rows`]).

use super::state::{CatId, Hot, SchedState};
use crate::model::{JobId, PriorityInfo};
use std::sync::Arc;

/// The policy terms of one job (`PriorityInfo::policy_terms` once written), shared by the
/// jobs they are the same for.
pub type Terms = Option<Arc<[(String, String)]>>;

const LIVE: u8 = 1;
const HAS_PENDING: u8 = 1 << 1;
const PENDING_UNHELD: u8 = 1 << 2;
const ERROR: u8 = 1 << 3;
const PREDECESSORS: u8 = 1 << 4;
const RESERVE: u8 = 1 << 5;
const ARRAY_DEPS: u8 = 1 << 6;
const RUNNING: u8 = 1 << 7;

/// One job as a full pass reads it: [`Hot`]'s fields that the classify walk, the priority
/// inputs and the candidates need, with its category.
///
/// The optional project and times are kept as plain words with a value that means none
/// ([`NO_PROJECT`], [`NO_TIME`]; read through the methods of the same names): 88 bytes a
/// row instead of 112, of what a pass's heap holds for every job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Row {
    pub id: JobId,
    pub cat: u32,
    pub uid: u32,
    pub owner: u32,
    project: u32,
    pub cluster: u32,
    pub posix_priority: i32,
    flags: u8,
    /// Interned department of the owner (`DEPT` access lists), for the functional policy.
    pub department: u32,
    pub submitted: i64,
    deadline: i64,
    start_time: i64,
    running_since: i64,
    pub running_queue_urgency: f64,
    pub pending_tasks: u64,
}

/// [`Row::project`] of a job without a project (interned names are fewer).
const NO_PROJECT: u32 = u32::MAX;
/// A time a row does not have (no deadline, start time or running task).
const NO_TIME: i64 = i64::MIN;

fn time_word(t: Option<i64>) -> i64 {
    // A time of `i64::MIN` itself would read back as none: no job has one.
    t.unwrap_or(NO_TIME)
}

fn word_time(w: i64) -> Option<i64> {
    (w != NO_TIME).then_some(w)
}

impl Default for Row {
    fn default() -> Self {
        Row {
            id: JobId::default(),
            cat: 0,
            uid: 0,
            owner: 0,
            project: NO_PROJECT,
            cluster: 0,
            posix_priority: 0,
            flags: 0,
            department: 0,
            submitted: 0,
            deadline: NO_TIME,
            start_time: NO_TIME,
            running_since: NO_TIME,
            running_queue_urgency: 0.0,
            pending_tasks: 0,
        }
    }
}

impl Row {
    /// The row of a live job, from scratch.
    pub fn of(id: JobId, cat: CatId, h: &Hot) -> Row {
        let flag = |b: bool, f: u8| if b { f } else { 0 };
        Row {
            id,
            cat: cat as u32,
            uid: h.uid,
            owner: h.owner,
            project: h.project.unwrap_or(NO_PROJECT),
            cluster: h.cluster,
            posix_priority: h.posix_priority,
            department: h.department,
            flags: LIVE
                | flag(h.has_pending, HAS_PENDING)
                | flag(h.pending_unheld, PENDING_UNHELD)
                | flag(h.error, ERROR)
                | flag(h.has_predecessors, PREDECESSORS)
                | flag(h.reserve, RESERVE)
                | flag(h.array_deps, ARRAY_DEPS)
                | flag(h.running > 0, RUNNING),
            submitted: h.submitted,
            deadline: time_word(h.deadline),
            start_time: time_word(h.start_time),
            running_since: time_word(h.running_since),
            running_queue_urgency: h.running_queue_urgency,
            pending_tasks: h.pending_tasks,
        }
    }

    /// The interned project (`None` without one).
    pub fn project(&self) -> Option<u32> {
        (self.project != NO_PROJECT).then_some(self.project)
    }
    /// `-dl`.
    pub fn deadline(&self) -> Option<i64> {
        word_time(self.deadline)
    }
    /// `-a`.
    pub fn start_time(&self) -> Option<i64> {
        word_time(self.start_time)
    }
    /// The start of the job's first running task.
    pub fn running_since(&self) -> Option<i64> {
        word_time(self.running_since)
    }

    /// The job is in the map (a removed job's row is dead until the rows are tidied).
    pub fn live(&self) -> bool {
        self.flags & LIVE != 0
    }
    pub fn has_pending(&self) -> bool {
        self.flags & HAS_PENDING != 0
    }
    pub fn pending_unheld(&self) -> bool {
        self.flags & PENDING_UNHELD != 0
    }
    pub fn reserve(&self) -> bool {
        self.flags & RESERVE != 0
    }
    pub fn array_deps(&self) -> bool {
        self.flags & ARRAY_DEPS != 0
    }
    pub fn running(&self) -> bool {
        self.flags & RUNNING != 0
    }
    /// In error (`Eqw`) with a pending task not held: SGE still computes its priority
    /// (`qstat` shows it), though it is not considered for dispatch.
    pub fn in_error_unheld(&self) -> bool {
        self.flags & (ERROR | PENDING_UNHELD) == ERROR | PENDING_UNHELD
    }

    /// Whether only the category can keep the job from being considered at `now`: no error,
    /// a pending task not held, no `-a` time ahead, no `-hold_jid` predecessors (those need
    /// the record or other jobs, [`SchedState::eligibility_of`]).
    pub fn plainly_eligible(&self, now: i64) -> bool {
        self.flags & (ERROR | PENDING_UNHELD | PREDECESSORS) == PENDING_UNHELD
            && self.start_time().is_none_or(|t| t <= now)
    }
}

/// The rows and, beside them, what the last passes computed per job.
#[derive(Debug, Default)]
pub(crate) struct JobRows {
    pub rows: Vec<Row>,
    /// The priority of the last full pass (`None` before the first, or kept from the record).
    pub priority: Vec<Option<PriorityInfo>>,
    /// Why pending, as of the last pass (shared per category where the words are the same).
    pub reasons: Vec<Arc<[String]>>,
    /// The active policy's own terms of the last pass.
    pub terms: Vec<Terms>,
    /// Terms kept per queue instead (armada, whose words change every pass): each row's
    /// index into `queue_terms`, or [`NO_QUEUE`]; empty when no policy keeps them so. A pass
    /// writes one `u32` per row and its queues' terms, not one reference-counted pointer per
    /// row. [`JobRows::terms_of`] reads either.
    pub term_queue: Vec<u32>,
    pub queue_terms: Vec<Arc<[(String, String)]>>,
    dead: usize,
    unsorted: bool,
}

impl JobRows {
    /// Appends the row of a new job (filled by [`SchedState::refresh_hot`]); returns its index.
    pub fn push(
        &mut self,
        id: JobId,
        priority: Option<PriorityInfo>,
        reasons: Arc<[String]>,
    ) -> u32 {
        if self.rows.last().is_some_and(|r| r.id >= id) {
            self.unsorted = true;
        }
        let row = Row {
            id,
            flags: LIVE,
            ..Row::default()
        };
        self.rows.push(row);
        self.priority.push(priority);
        self.reasons.push(reasons);
        self.terms.push(None);
        if !self.term_queue.is_empty() {
            self.term_queue.push(NO_QUEUE);
        }
        (self.rows.len() - 1) as u32
    }

    /// The job of row `i` was removed: its row is dead, what it held is freed.
    pub fn kill(&mut self, i: u32, empty: &Arc<[String]>) {
        let i = i as usize;
        if let Some(r) = self.rows.get_mut(i) {
            *r = Row {
                id: r.id,
                ..Row::default()
            };
            self.priority[i] = None;
            self.reasons[i] = empty.clone();
            self.terms[i] = None;
            if let Some(q) = self.term_queue.get_mut(i) {
                *q = NO_QUEUE;
            }
            self.dead += 1;
        }
    }

    /// Whether a re-layout is due: rows out of id order, or more than an eighth dead.
    pub fn untidy(&self) -> bool {
        self.unsorted || self.dead * 8 > self.rows.len()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The policy terms of row `i`: its own, else its queue's.
    pub fn terms_of(&self, i: usize) -> Option<&Arc<[(String, String)]>> {
        if let Some(Some(t)) = self.terms.get(i) {
            return Some(t);
        }
        let q = *self.term_queue.get(i)?;
        self.queue_terms.get(q as usize)
    }

    /// Forgets the terms kept per queue (a policy writing its terms per row).
    pub fn drop_queue_terms(&mut self) {
        if !self.term_queue.is_empty() || !self.queue_terms.is_empty() {
            self.term_queue = Vec::new();
            self.queue_terms = Vec::new();
        }
    }
}

/// A row without a queue in [`JobRows::term_queue`].
pub const NO_QUEUE: u32 = u32::MAX;

impl SchedState {
    /// Re-lays the rows out in the job map's order without dead rows, when due
    /// ([`JobRows::untidy`]). Positions change, so the cached order goes.
    pub(crate) fn tidy_rows(&mut self) {
        if !self.rows.untidy() {
            return;
        }
        let old = std::mem::take(&mut self.rows);
        let n = self.jobs.len();
        let mut rows = JobRows {
            rows: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            reasons: Vec::with_capacity(n),
            terms: Vec::with_capacity(n),
            term_queue: Vec::new(),
            queue_terms: Vec::new(),
            dead: 0,
            unsorted: false,
        };
        let JobRows {
            rows: old_rows,
            mut priority,
            reasons,
            mut terms,
            term_queue,
            queue_terms,
            ..
        } = old;
        if !term_queue.is_empty() {
            rows.term_queue = Vec::with_capacity(n);
        }
        rows.queue_terms = queue_terms;
        for e in self.jobs.values_mut() {
            let i = e.row as usize;
            e.row = rows.rows.len() as u32;
            rows.rows.push(old_rows[i]);
            rows.priority.push(priority[i].take());
            rows.reasons.push(reasons[i].clone());
            rows.terms.push(terms[i].take());
            if let Some(&q) = term_queue.get(i) {
                rows.term_queue.push(q);
            }
        }
        self.rows = rows;
        self.invalidate_order();
        // The last order names rows by position: of no use as the next sort's hint.
        self.scratch.order.clear();
    }

    /// The row of a job as it is kept (for tests: compared with [`Row::of`]).
    #[cfg(test)]
    pub(crate) fn row_of(&self, e: &super::state::JobEntry) -> Row {
        self.rows.rows[e.row as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClusterConfig;
    use crate::model::{
        JobRecord, JobSpec, JobSubmission, ResourceRequest, Submitter, TaskIdRange,
    };

    fn config() -> ClusterConfig {
        ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 2}\n  - {name: n2, slots: 2}\nqueues:\n  - {name: all.q, hostlist: [n1, n2], slots: 2}\n",
        )
        .expect("config")
    }

    fn job(id: u32, seed: u64) -> JobRecord {
        let mut spec = JobSpec {
            name: format!("j{id}"),
            script_file: "j.sh".into(),
            priority: -((seed % 5) as i32) * 10,
            reserve: seed.is_multiple_of(7),
            ..JobSpec::default()
        };
        if seed.is_multiple_of(3) {
            spec.hard_resources.push(ResourceRequest {
                name: "h_rt".into(),
                value: format!("{}", 60 * (seed % 4 + 1)),
            });
        }
        if seed.is_multiple_of(11) {
            spec.start_time = Some(1_000 + (seed % 100) as i64);
        }
        if seed.is_multiple_of(13) {
            spec.deadline = Some(5_000);
        }
        if seed.is_multiple_of(5) {
            spec.array = Some(TaskIdRange {
                first: 1,
                last: 3,
                step: 1,
            });
        }
        let user = seed % 4;
        JobRecord::from_submission(JobSubmission {
            v: 1,
            id: JobId(id),
            submitter: Submitter {
                owner: format!("u{user}"),
                uid: 1000 + user as u32,
                group: "g".into(),
                gid: 100,
                submission_time: 100 + (seed % 50) as i64,
                sge_o_home: "/h".into(),
                sge_o_log_name: "u".into(),
                sge_o_path: "/bin".into(),
                sge_o_shell: "/bin/sh".into(),
                sge_o_workdir: "/h".into(),
                sge_o_host: "h".into(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            spec,
            holds: Default::default(),
        })
    }

    /// Every live job's row is what [`Row::of`] gives from its entry, the rows of the live
    /// jobs are in id order once tidied, and dead rows are not counted.
    fn check(s: &SchedState) {
        let mut live = 0;
        for (id, e) in &s.jobs {
            let row = s.row_of(e);
            assert_eq!(row, Row::of(*id, e.cat, &e.hot), "row of job {id}");
            // What the row keeps as words reads back as the entry's options.
            assert_eq!(
                (row.project(), row.deadline(), row.start_time()),
                (e.hot.project, e.hot.deadline, e.hot.start_time),
                "job {id}"
            );
            assert_eq!(row.running_since(), e.hot.running_since, "job {id}");
            live += 1;
        }
        assert_eq!(s.rows.rows.iter().filter(|r| r.live()).count(), live);
        assert_eq!(s.rows.priority.len(), s.rows.len());
        assert_eq!(s.rows.reasons.len(), s.rows.len());
        assert_eq!(s.rows.terms.len(), s.rows.len());
    }

    /// Random sequences of events (submissions in and out of id order, passes that start
    /// tasks, task ends, holds, removals, re-added ids) keep every row equal to the one built
    /// from scratch, and the priorities and reasons read by position equal those of a state
    /// built from scratch from the same records and scheduled at the same time.
    #[test]
    fn rows_follow_random_events() {
        let mut rng = gridspool_policy::rng::SplitMix64::new(7);
        for round in 0..20u64 {
            let mut s = SchedState::new(config());
            let mut next = 1u32;
            let mut now = 1_000i64;
            for step in 0..120u64 {
                let r = rng.next_u64();
                match r % 9 {
                    0..=2 => {
                        // Mostly new ids, sometimes one below the last (a spool loaded out
                        // of order).
                        let id = if r.is_multiple_of(17) && next > 3 {
                            (next - 2) + 1_000 * (round as u32 + 1)
                        } else {
                            next += 1;
                            next
                        };
                        let _ = s.add_job(job(id, r >> 8));
                    }
                    3 => {
                        let ids = s.job_ids();
                        if !ids.is_empty() {
                            let _ = s.remove_job(ids[(r >> 8) as usize % ids.len()]);
                        }
                    }
                    4 => {
                        let running = s.running_tasks();
                        if !running.is_empty() {
                            let (j, t, _) = running[(r >> 8) as usize % running.len()];
                            s.task_ended(j, t).expect("running");
                        }
                    }
                    5 => {
                        let ids = s.job_ids();
                        if !ids.is_empty() {
                            let id = ids[(r >> 8) as usize % ids.len()];
                            if let Some(rec) = s.job_mut(id) {
                                for g in rec.tasks.pending.iter_mut() {
                                    g.holds.user = !g.holds.user;
                                }
                                rec.spec.priority = -(((r >> 20) % 100) as i32);
                            }
                            s.job_changed(id);
                        }
                    }
                    6 => {
                        let _ = s.schedule_event(now);
                    }
                    _ => {
                        now += 30;
                        let _ = s.schedule(now);
                    }
                }
                check(&s);
                if step % 40 == 39 {
                    // The same records in a fresh state, scheduled at the same time, give
                    // the same priorities and reasons (after a pass that started what fits,
                    // a second one that sees the same state as the fresh one).
                    let _ = s.schedule(now);
                    let _ = s.schedule(now);
                    check(&s);
                    assert!(!s.rows.untidy());
                    let mut fresh = SchedState::new(config());
                    for id in s.job_ids() {
                        let mut rec = s.job(id).expect("record").into_owned();
                        rec.pending_reasons = Vec::new();
                        rec.priority = None;
                        fresh.add_job(rec);
                    }
                    let _ = fresh.schedule(now);
                    for id in s.job_ids() {
                        if s.jobs[&id].hot.is_done() {
                            // Over: it keeps the priority of its last pass.
                            continue;
                        }
                        assert_eq!(s.priority(id), fresh.priority(id), "priority of {id}");
                        assert_eq!(
                            s.pending_reasons(id),
                            fresh.pending_reasons(id),
                            "reasons of {id}"
                        );
                    }
                }
            }
        }
    }
}
