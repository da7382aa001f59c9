//! The lines of a job table: which tasks of which jobs are shown, with what state, in SGE's
//! order. Selected and sorted once; every format (plain, `-f`, `-xml`) walks the same rows.

use super::{QstatArgs, UserFilter, View};
use crate::model::{Holds, JobRecord, PriorityInfo, RunState, RunningTask, TaskId};
use std::cmp::Ordering;

/// Why a pending task waits, as far as `qstat` can tell from the record: the hold types of
/// `qstat -s hu|ho|hs|hd|hj|ha`, and an error state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PendingState {
    pub holds: Holds,
    /// `-a` in the future (`hd`).
    pub start_time: bool,
    /// Predecessors still in the system (`hj`).
    pub dependency: bool,
    /// Array predecessors still in the system (`ha`).
    pub array_dependency: bool,
    /// `E`: the job is in error state.
    pub error: bool,
    /// `R`: the tasks ran before and were requeued (SGE's `JAT_job_restarted`, which also
    /// drops the `w`: `Rq`).
    pub restarted: bool,
}

impl PendingState {
    /// Any kind of hold: the `h` of `hqw`.
    pub fn held(&self) -> bool {
        self.holds.any() || self.start_time || self.dependency || self.array_dependency
    }

    /// SGE's state string, its letters in `job_get_state_string`'s order (E, h, R, q, w):
    /// `qw`, `hqw`, `Eqw`, `Ehqw`, and `Rq`, `hRq`, `ERq`, `EhRq` for restarted tasks.
    pub fn code(&self) -> &'static str {
        match (self.error, self.held(), self.restarted) {
            (false, false, false) => "qw",
            (false, true, false) => "hqw",
            (true, false, false) => "Eqw",
            (true, true, false) => "Ehqw",
            (false, false, true) => "Rq",
            (false, true, true) => "hRq",
            (true, false, true) => "ERq",
            (true, true, true) => "EhRq",
        }
    }
}

/// The holds a job's record implies beyond the explicit `u`/`o`/`s` holds of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DerivedHolds {
    pub start_time: bool,
    pub dependency: bool,
    pub array_dependency: bool,
}

/// Computes the derived holds of `job` from the other jobs of the view and the clock.
pub fn derived_holds(job: &JobRecord, view: &View<'_>) -> DerivedHolds {
    let alive = |id| view.job(id).is_some_and(|j| !j.tasks.is_done());
    DerivedHolds {
        start_time: job.spec.start_time.is_some_and(|t| t > view.now),
        dependency: job.spec.predecessors.iter().any(|p| alive(*p)),
        array_dependency: job.spec.array_predecessors.iter().any(|p| alive(*p)),
    }
}

/// The state of one pending group of `job`.
pub fn pending_state(job: &JobRecord, holds: Holds, derived: DerivedHolds) -> PendingState {
    PendingState {
        holds,
        start_time: derived.start_time,
        dependency: derived.dependency,
        array_dependency: derived.array_dependency,
        error: job.error.is_some(),
        restarted: false,
    }
}

/// The state string of a running task: `[d][S][h][R]r|t|s`.
pub fn running_code(t: &RunningTask) -> StateCode {
    task_code(
        t.state,
        t.deleting,
        t.queue_suspended,
        t.holds.any(),
        t.restarted,
    )
}

/// [`running_code`] from a running task's flags (the plain table reads them in place).
pub(super) fn task_code(
    state: RunState,
    deleting: bool,
    queue_suspended: bool,
    held: bool,
    restarted: bool,
) -> StateCode {
    // SGE's letter order (job_get_state_string): deletion, suspension of the queue, hold,
    // restarted, then the run state; a task of a suspended queue is not shown `r` (qstat
    // clears JRUNNING for it): `S`, or `Ss` when the job is suspended too.
    let mut code = StateCode::default();
    for (on, letter) in [
        (deleting, "d"),
        (queue_suspended, "S"),
        (held, "h"),
        (restarted, "R"),
    ] {
        if on {
            code.push(letter);
        }
    }
    match state {
        RunState::Running if queue_suspended => {}
        RunState::Running => code.push("r"),
        RunState::Transferring => code.push("t"),
        RunState::Suspended => code.push("s"),
    }
    code
}

/// A state code (`dhRr` at the longest), built without allocating.
#[derive(Debug, Clone, Copy, Default)]
pub struct StateCode {
    buf: [u8; 8],
    len: usize,
}

impl StateCode {
    fn push(&mut self, letters: &str) {
        let end = self.len + letters.len();
        self.buf[self.len..end].copy_from_slice(letters.as_bytes());
        self.len = end;
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl From<&str> for StateCode {
    fn from(s: &str) -> Self {
        let mut c = StateCode::default();
        c.push(s);
        c
    }
}

/// What one line shows.
#[derive(Debug, Clone, Copy)]
pub enum RowKind {
    /// A running (or transferring, suspended) task: index into `tasks.running`.
    Running(usize),
    /// A pending group (index into `tasks.pending`), or one task of it with `-g d`.
    Pending {
        group: usize,
        task: Option<TaskId>,
        state: PendingState,
    },
    /// A job whose tasks have all finished but which the spool still holds (`z`, shown by
    /// `-s z` only).
    Zombie,
}

/// One line of a job table.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub job: &'a JobRecord,
    pub kind: RowKind,
}

/// SGE's zeros for a job the scheduler has not seen yet.
static NO_PRIORITY: PriorityInfo = PriorityInfo {
    prio: 0.0,
    nurg: 0.0,
    npprior: 0.0,
    ntckts: 0.0,
    urg: 0.0,
    rrcontr: 0.0,
    wtcontr: 0.0,
    dlcontr: 0.0,
    tickets: 0.0,
    otickets: 0.0,
    ftickets: 0.0,
    stickets: 0.0,
    share: 0.0,
    policy_terms: Vec::new(),
};

impl<'a> Row<'a> {
    pub fn priority(&self) -> &'a PriorityInfo {
        self.job.priority.as_ref().unwrap_or(&NO_PRIORITY)
    }

    pub fn running(&self) -> Option<&'a RunningTask> {
        match self.kind {
            RowKind::Running(i) => self.job.tasks.running.get(i),
            RowKind::Pending { .. } | RowKind::Zombie => None,
        }
    }

    pub fn state_code(&self) -> StateCode {
        match self.kind {
            RowKind::Running(i) => self
                .job
                .tasks
                .running
                .get(i)
                .map_or_else(|| "r".into(), running_code),
            RowKind::Pending { state, .. } => state.code().into(),
            RowKind::Zombie => "z".into(),
        }
    }

    /// Slots: granted for a running task, requested for a pending one.
    pub fn slots(&self) -> u32 {
        match self.running() {
            Some(t) => t.slots,
            None => self.job.spec.slots(),
        }
    }

    /// The `ja-task-ID` text of an array job (`None` for a job that is not an array).
    pub fn task_text(&self, buf: &mut String) -> bool {
        use std::fmt::Write;
        if !self.job.is_array() {
            return false;
        }
        match self.kind {
            RowKind::Running(i) => {
                if let Some(t) = self.job.tasks.running.get(i) {
                    let _ = write!(buf, "{}", t.task);
                }
            }
            RowKind::Pending { task: Some(t), .. } => {
                let _ = write!(buf, "{t}");
            }
            RowKind::Pending {
                group,
                task: None,
                state,
            } => {
                let _ = write!(buf, "{}", pending_tasks(self.job, group, state.restarted));
            }
            // The finished tasks; a record from before they were listed has only their
            // count: the job's whole range then.
            RowKind::Zombie => {
                let done = &self.job.tasks.finished_tasks;
                if done.is_empty() {
                    let _ = write!(
                        buf,
                        "{}",
                        crate::model::TaskSet::from_range(self.job.spec.task_range())
                    );
                } else {
                    let _ = write!(buf, "{done}");
                }
            }
        }
        true
    }
}

/// The tasks of pending group `group` a line shows: those restarted, or the others.
pub(super) fn pending_tasks(
    job: &JobRecord,
    group: usize,
    restarted: bool,
) -> std::borrow::Cow<'_, crate::model::TaskSet> {
    use std::borrow::Cow;
    let Some(g) = job.tasks.pending.get(group) else {
        return Cow::Owned(crate::model::TaskSet::new());
    };
    let again = &job.tasks.restarted;
    if again.is_empty() {
        return Cow::Borrowed(&g.tasks);
    }
    if restarted {
        Cow::Owned(g.tasks.intersection(again))
    } else {
        let mut rest = g.tasks.clone();
        rest.remove_all(again);
        Cow::Owned(rest)
    }
}

/// The users `-u` names: user names, and `@group` resolved through the group database
/// (its members, and every user whose primary group it is).
pub(super) struct UserSelection<'x> {
    names: Vec<&'x str>,
    groups: Vec<(u32, Vec<String>)>,
}

impl<'x> UserSelection<'x> {
    pub(super) fn new(names: &'x [String]) -> Self {
        let mut sel = UserSelection {
            names: Vec::new(),
            groups: Vec::new(),
        };
        for n in names {
            match n.strip_prefix('@') {
                Some(g) => {
                    if let Ok(Some(gr)) = nix::unistd::Group::from_name(g) {
                        sel.groups.push((gr.gid.as_raw(), gr.mem));
                    }
                }
                None => sel.names.push(n),
            }
        }
        sel
    }

    fn selects(&self, job: &JobRecord) -> bool {
        self.selects_owner(&job.submitter.owner, job.submitter.gid)
    }

    /// Whether a job of `owner` submitted with the group `gid` is selected.
    pub(super) fn selects_owner(&self, owner: &str, gid: u32) -> bool {
        self.names.contains(&owner)
            || self
                .groups
                .iter()
                .any(|(g, mem)| *g == gid || mem.iter().any(|m| m == owner))
    }
}

fn user_selected(
    args: &QstatArgs,
    view: &View<'_>,
    sel: &UserSelection<'_>,
    job: &JobRecord,
) -> bool {
    match &args.users {
        UserFilter::Caller => job.submitter.owner == view.caller,
        UserFilter::All => true,
        UserFilter::Names(_) => sel.selects(job),
    }
}

pub(super) fn pending_selected(args: &QstatArgs, s: &PendingState) -> bool {
    let f = &args.states;
    f.pending
        || (f.user_hold && s.holds.user)
        || (f.operator_hold && s.holds.operator)
        || (f.system_hold && s.holds.system)
        || (f.start_time_hold && s.start_time)
        || (f.job_hold && s.dependency)
        || (f.array_hold && s.array_dependency)
}

fn running_selected(args: &QstatArgs, t: &RunningTask) -> bool {
    match t.state {
        _ if t.stopped() => args.states.suspended,
        RunState::Running | RunState::Transferring => args.states.running,
        RunState::Suspended => args.states.suspended,
    }
}

/// The rows to print: running tasks first (by queue instance, job, task), then pending
/// groups by priority (highest first), submission time and job id, as SGE orders its
/// pending list. Within a job, the group without holds comes first.
pub fn select<'a>(args: &QstatArgs, view: &View<'a>) -> Vec<Row<'a>> {
    let restrict = super::queues::queue_selection_active(args);
    let selected_queues: Vec<String> = if restrict {
        super::queues::instances(args, view)
            .into_iter()
            .map(|i| i.name)
            .collect()
    } else {
        Vec::new()
    };
    let mut running: Vec<(Row<'a>, &'a str, &'a str)> = Vec::new();
    let mut pending: Vec<Row<'a>> = Vec::new();
    let mut zombies: Vec<Row<'a>> = Vec::new();
    let no_names = Vec::new();
    let users = UserSelection::new(match &args.users {
        UserFilter::Names(n) => n,
        _ => &no_names,
    });
    for job in view.jobs {
        if !user_selected(args, view, &users, job) {
            continue;
        }
        // As in SGE, a job is a zombie as soon as one of its tasks has finished, also while
        // others still wait or run.
        if args.states.zombie && job.tasks.finished > 0 {
            zombies.push(Row {
                job,
                kind: RowKind::Zombie,
            });
        }
        for (i, t) in job.tasks.running.iter().enumerate() {
            if !running_selected(args, t) {
                continue;
            }
            if restrict
                && !selected_queues
                    .iter()
                    .any(|q| q.split_once('@') == Some((t.queue.as_str(), t.host.as_str())))
            {
                continue;
            }
            running.push((
                Row {
                    job,
                    kind: RowKind::Running(i),
                },
                t.queue.as_str(),
                t.host.as_str(),
            ));
        }
        if job.tasks.pending.is_empty() {
            continue;
        }
        let derived = derived_holds(job, view);
        let restarted = &job.tasks.restarted;
        let mut groups: Vec<(usize, PendingState)> = Vec::new();
        for (i, g) in job.tasks.pending.iter().enumerate() {
            if g.tasks.is_empty() {
                continue;
            }
            let state = pending_state(job, g.holds, derived);
            // Restarted tasks (`Rq`) on a line of their own, before the others of the group,
            // as SGE lists enrolled tasks before those not yet enrolled.
            if !restarted.is_empty() {
                let again = g.tasks.intersection(restarted);
                if !again.is_empty() {
                    groups.push((
                        i,
                        PendingState {
                            restarted: true,
                            ..state
                        },
                    ));
                }
                if again.len() == g.tasks.len() {
                    continue;
                }
            }
            groups.push((i, state));
        }
        groups.retain(|(_, s)| pending_selected(args, s));
        groups.sort_by_key(|(_, s)| s.held());
        for (group, state) in groups {
            if args.group.each_task && job.is_array() {
                for t in pending_tasks(job, group, state.restarted).iter() {
                    pending.push(Row {
                        job,
                        kind: RowKind::Pending {
                            group,
                            task: Some(t),
                            state,
                        },
                    });
                }
            } else {
                pending.push(Row {
                    job,
                    kind: RowKind::Pending {
                        group,
                        task: None,
                        state,
                    },
                });
            }
        }
    }
    running.sort_by(|(a, aq, ah), (b, bq, bh)| {
        aq.cmp(bq)
            .then_with(|| ah.cmp(bh))
            .then_with(|| a.job.id.cmp(&b.job.id))
            .then_with(|| {
                let ta = a.running().map_or(0, |t| t.task);
                let tb = b.running().map_or(0, |t| t.task);
                ta.cmp(&tb)
            })
    });
    // Stable: groups and tasks of one job keep their order.
    pending.sort_by(|a, b| {
        b.priority()
            .prio
            .partial_cmp(&a.priority().prio)
            .unwrap_or(Ordering::Equal)
            .then_with(|| {
                a.job
                    .submitter
                    .submission_time
                    .cmp(&b.job.submitter.submission_time)
            })
            .then_with(|| a.job.id.cmp(&b.job.id))
    });
    // Jobs that have ended are zombies only (`-s z`); nothing else shows them.
    if args.states.zombie {
        for job in view.ended {
            if job.tasks.finished > 0 && user_selected(args, view, &users, job) {
                zombies.push(Row {
                    job,
                    kind: RowKind::Zombie,
                });
            }
        }
        zombies.sort_by_key(|r| r.job.id);
    }
    let mut out = Vec::with_capacity(running.len() + pending.len());
    out.extend(running.into_iter().map(|(r, _, _)| r));
    out.extend(pending);
    out.extend(zombies);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HoldType, RunningTask};

    fn task(state: RunState, deleting: bool, restarted: bool) -> RunningTask {
        RunningTask {
            task: 1,
            state,
            start_time: 0,
            queue: "all.q".into(),
            host: "vm".into(),
            slots: 1,
            granted: Vec::new(),
            deleting,
            restarted,
            queue_suspended: false,
            rescheduling: false,
            devices: Vec::new(),
            holds: crate::model::Holds::NONE,
            usage: None,
        }
    }

    #[test]
    fn state_codes_are_sges() {
        let code = |t: &RunningTask| running_code(t).as_str().to_string();
        assert_eq!(code(&task(RunState::Running, false, false)), "r");
        assert_eq!(code(&task(RunState::Transferring, true, false)), "dt");
        assert_eq!(code(&task(RunState::Running, true, false)), "dr");
        assert_eq!(code(&task(RunState::Running, false, true)), "Rr");
        let mut in_suspended_queue = task(RunState::Running, false, false);
        in_suspended_queue.queue_suspended = true;
        assert_eq!(code(&in_suspended_queue), "S");
        in_suspended_queue.state = RunState::Suspended;
        assert_eq!(code(&in_suspended_queue), "Ss");
        assert_eq!(code(&task(RunState::Suspended, false, false)), "s");
        let mut held = task(RunState::Running, true, true);
        held.holds.set(HoldType::User, true);
        assert_eq!(code(&held), "dhRr");
        let mut s = PendingState::default();
        assert_eq!(s.code(), "qw");
        s.error = true;
        assert_eq!(s.code(), "Eqw");
        s.error = false;
        s.holds.set(HoldType::Operator, true);
        assert_eq!(s.code(), "hqw");
        s.error = true;
        assert_eq!(s.code(), "Ehqw");
        s.restarted = true;
        s.error = false;
        s.holds = crate::model::Holds::NONE;
        assert_eq!(s.code(), "Rq");
        let s = PendingState {
            start_time: true,
            ..PendingState::default()
        };
        assert!(s.held());
    }
}
