//! Requests to change jobs (`qdel`, `qalter`, `qhold`, `qrls`), and the one function that
//! applies them, with Grid Engine's permission rules.
//!
//! Clients publish requests as files; `sched_d` folds them into job records. `qstat` applies
//! the ones not yet folded when it shows jobs, and the client applies them to its own view to
//! decide what to print — so all three share [`Request::apply`]. Every action *sets* a value
//! (no increments), so applying a request twice gives the same record: a crash between writing
//! a record and removing the request is harmless.
//!
//! One file over 1,000 lines: the request types and [`Request::apply`] are one contract
//! (what a client may ask and what it does to a record), shared by three programs.

use super::{
    EnvVar, HoldType, Holds, JobId, JobRecord, PathSpec, PeRequest, ResourceRequest, TaskId,
    TaskSet,
};
use serde::{Deserialize, Serialize};

/// Who asks, as the kernel says (the request file's owner is checked against `uid` by
/// `sched_d`), and what the configuration makes of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requester {
    pub uid: u32,
    pub user: String,
    pub host: String,
    #[serde(default)]
    pub manager: bool,
    #[serde(default)]
    pub operator: bool,
}

impl Requester {
    /// Operators and managers may act on any job.
    pub fn is_operator(&self) -> bool {
        self.operator || self.manager
    }

    fn may_change(&self, job: &JobRecord) -> bool {
        self.is_operator() || job.submitter.uid == self.uid
    }
}

/// Which tasks of a job an action concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSelector {
    All,
    Tasks(TaskSet),
}

impl TaskSelector {
    fn set(&self) -> Option<&TaskSet> {
        match self {
            TaskSelector::All => None,
            TaskSelector::Tasks(t) => Some(t),
        }
    }
}

/// One alterable attribute and its new value (`qalter`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "field", content = "value")]
pub enum SpecChange {
    Name(String),
    Priority(i32),
    HardResources(Vec<ResourceRequest>),
    SoftResources(Vec<ResourceRequest>),
    HardQueues(Vec<String>),
    SoftQueues(Vec<String>),
    MasterQueues(Vec<String>),
    Pe(Option<PeRequest>),
    HoldJid {
        requested: Vec<String>,
        resolved: Vec<JobId>,
    },
    HoldJidAd {
        requested: Vec<String>,
        resolved: Vec<JobId>,
    },
    Stdout(Vec<PathSpec>),
    Stderr(Vec<PathSpec>),
    Stdin(Vec<PathSpec>),
    MergeStderr(bool),
    Interpreter(Vec<PathSpec>),
    Cwd(Option<String>),
    StartTime(Option<i64>),
    Deadline(Option<i64>),
    TaskConcurrency(Option<u32>),
    Restartable(Option<bool>),
    Reserve(bool),
    Env(Vec<EnvVar>),
    Project(Option<String>),
    Account(String),
    MailOptions(String),
    MailList(Vec<String>),
    Notify(bool),
    Cluster(Option<String>),
    NoPreempt(bool),
    /// Job context variables after `qalter -ac/-sc/-dc` (the whole new context).
    Context(std::collections::BTreeMap<String, String>),
    /// `qalter -js`.
    JobShare(u32),
}

/// What a request asks for, on one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum RequestAction {
    Delete {
        job: JobId,
        tasks: TaskSelector,
        force: bool,
    },
    /// `qhold -h hold_list`: adds every hold type of `hold` (`"uos"`). A set, not one type,
    /// because SGE checks the privileges for the whole list at once (see [`Request::apply`]);
    /// files that name a single type (`"u"`) read unchanged.
    Hold {
        job: JobId,
        tasks: TaskSelector,
        hold: Holds,
    },
    /// `qrls -h hold_list`: removes every hold type of `hold`.
    Release {
        job: JobId,
        tasks: TaskSelector,
        hold: Holds,
    },
    Alter {
        job: JobId,
        changes: Vec<SpecChange>,
    },
    /// Re-evaluate the job now (Qube!'s "shove").
    Shove { job: JobId },
    /// `qmod -d` (`disabled`) or `qmod -e` of queue instances (`all.q@node1`): a disabled
    /// instance takes no new work. No job's: sched_d keeps the states in
    /// `daemon/qinstances.json` (`spool::qinstances`).
    QueueState {
        instances: Vec<String>,
        disabled: bool,
    },
    /// `qmod -sq`/`-usq` of queue instances: their running tasks stop (`S`), and they take
    /// no new work. Kept with the other states in `daemon/qinstances.json`.
    QueueSuspend {
        instances: Vec<String>,
        suspended: bool,
    },
    /// `qmod -cq`: clears the error state (`E`) of queue instances.
    QueueClearError { instances: Vec<String> },
    /// `qconf` changed `config.yaml`: `sched_d` reloads it (managers only).
    ReloadConfig,
    /// `qconf` by a manager who may not write `config.yaml`: `sched_d` replaces the file's
    /// text `base` (unchanged since `qconf` read it) with `text` if it is valid, and answers
    /// in `daemon/replies/<seq>.json`. Not carried out after `expires` (seconds since the
    /// epoch), when `qconf` has stopped waiting.
    ConfigEdit {
        base: String,
        text: String,
        expires: i64,
    },
    /// `qmod -sj`/`-usj` (and `-s`/`-us` of a job): stops (`suspend`) or continues the
    /// job's running tasks. `force` sends the signal again to tasks already so (SGE's `-f`).
    Suspend {
        job: JobId,
        tasks: TaskSelector,
        suspend: bool,
        #[serde(default)]
        force: bool,
    },
    /// `qmod -cj`: clears the job's error state (`Eqw`).
    ClearError { job: JobId, tasks: TaskSelector },
    /// `qmod -rj`: the job's running tasks are killed and requeued, to run again
    /// (`RESTARTED=1`); `force` reschedules those that are not rerunnable too.
    Reschedule {
        job: JobId,
        tasks: TaskSelector,
        #[serde(default)]
        force: bool,
    },
    /// `qrsh -inherit host command`, from inside a running task of a parallel job: a pe task
    /// on one of its granted hosts. `sched_d` answers in `daemon/replies/<seq>.json` with
    /// the command's exit status when it has ended, or with why it was refused.
    StartPeTask(Box<PeTaskRequest>),
    /// `qrdel`: ends an advance reservation (its owner, or a manager or operator); its jobs
    /// are deleted as `qdel` deletes them (`force`: as `qdel -f`).
    DeleteAr {
        ar: u32,
        #[serde(default)]
        force: bool,
    },
}

/// What `qrsh -inherit` asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeTaskRequest {
    pub job: JobId,
    pub task: TaskId,
    /// The host named on the command line, as the caller wrote it.
    pub host: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Run through the queue's shell (`sh -c "command args"`), unless `-noshell`.
    pub shell: bool,
    /// `-cwd`: the caller's working directory; else the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `-v` and `-V`: variables for the pe task, over the job's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<super::EnvVar>,
    pub session: super::InteractiveSession,
}

/// A hold type as stored in a request (`"u"`, `"o"`, `"s"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HoldTypeName {
    #[serde(rename = "u")]
    User,
    #[serde(rename = "o")]
    Operator,
    #[serde(rename = "s")]
    System,
}

impl From<HoldTypeName> for HoldType {
    fn from(h: HoldTypeName) -> Self {
        match h {
            HoldTypeName::User => HoldType::User,
            HoldTypeName::Operator => HoldType::Operator,
            HoldTypeName::System => HoldType::System,
        }
    }
}

impl From<HoldType> for HoldTypeName {
    fn from(h: HoldType) -> Self {
        match h {
            HoldType::User => HoldTypeName::User,
            HoldType::Operator => HoldTypeName::Operator,
            HoldType::System => HoldTypeName::System,
        }
    }
}

impl RequestAction {
    /// The job the action is for; `None` for one on queue instances.
    pub fn job(&self) -> Option<JobId> {
        match self {
            RequestAction::Delete { job, .. }
            | RequestAction::Hold { job, .. }
            | RequestAction::Release { job, .. }
            | RequestAction::Alter { job, .. }
            | RequestAction::Shove { job }
            | RequestAction::Suspend { job, .. }
            | RequestAction::ClearError { job, .. }
            | RequestAction::Reschedule { job, .. } => Some(*job),
            RequestAction::QueueState { .. }
            | RequestAction::QueueSuspend { .. }
            | RequestAction::QueueClearError { .. }
            | RequestAction::ReloadConfig
            | RequestAction::ConfigEdit { .. }
            | RequestAction::StartPeTask(_)
            | RequestAction::DeleteAr { .. } => None,
        }
    }
}

/// A request file: one requester, one or more actions (`qdel -u user` is one request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub v: u32,
    /// Position in the spool's request sequence: requests apply in this order.
    pub seq: u64,
    pub requester: Requester,
    /// Seconds since the epoch.
    pub time: i64,
    pub actions: Vec<RequestAction>,
}

/// What applying an action did, for the client's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delete(DeleteOutcome),
    Hold(HoldOutcome),
    Altered,
    Shoved,
    /// `qmod` of a job: what happened to each task, in SGE's order.
    Qmod(Vec<QmodEvent>),
}

/// What `qmod` did to one task of a job (`sge_qmod_qmaster.c`, `reschedule.c`); `compat`
/// words each as SGE does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QmodEvent {
    /// Stopped now (`forced`: with `-f`, SGE's "forced suspension").
    Suspended {
        task: TaskId,
        forced: bool,
    },
    /// Stopped already; `forced`: the signal was sent again.
    AlreadySuspended {
        task: TaskId,
        forced: bool,
    },
    Unsuspended {
        task: TaskId,
        forced: bool,
    },
    /// Not suspended; `forced`: SIGCONT was sent again ("forced enabling").
    AlreadyUnsuspended {
        task: TaskId,
        forced: bool,
    },
    /// A pending task: nothing to suspend, clear or reschedule (`None`: no task of the array
    /// job has started, SGE's one message for the whole job).
    NotEnrolled(Option<TaskId>),
    ErrorCleared(TaskId),
    NotInError(TaskId),
    /// Killed, to run again; `forced` with `-f`.
    Rescheduled {
        task: TaskId,
        forced: bool,
    },
    /// `-r n`: "is not restartable".
    NotRestartable(TaskId),
    /// Neither `-r y` nor its queue's `rerun`: "is running in queue none where jobs are not
    /// rerunable" (SGE 8.1.9 prints `none` there for the queue).
    QueueNotRerunnable(TaskId),
    /// Not rerunnable, and `enable_reschedule_kill` is on: killed, as `qdel` would
    /// ("Reaping not restartable job").
    Reaped(TaskId),
    /// Being deleted: "already in deleted state. No rescheduling!".
    BeingDeleted(TaskId),
}

/// What decides whether a running task may be rescheduled, from the configuration.
pub struct RescheduleRules<'a> {
    /// The `rerun` of a queue instance (`queue@host`).
    pub queue_rerun: &'a dyn Fn(&str) -> bool,
    /// `enable_reschedule_kill`: a task that may not be rerun is killed instead.
    pub reap: bool,
}

/// What `qdel` did to one job: SGE words one message per running task and one for the pending
/// tasks (`sge_delete_all_tasks_of_job`), so both are kept apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// Pending tasks removed, built in ascending order so that it prints as SGE prints the
    /// range list of its message (`4-6:1`, `8,9`, `1,3,7`).
    pub pending: TaskSet,
    /// Running tasks the action selected, in task order, and what happened to each.
    pub running: Vec<(TaskId, RunningDeletion)>,
    /// Nothing of the job is left pending or running.
    pub gone: bool,
}

impl DeleteOutcome {
    /// The action selected no task at all (SGE: `job "5" task "9" does not exist`).
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.running.is_empty()
    }
}

/// What `qdel` did to one running task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunningDeletion {
    /// Marked for deletion (`dr`); `sched_d` kills it.
    Registered,
    /// It was marked already: nothing changed (SGE: `job 5 is already in deletion`).
    AlreadyDeleting,
    /// `qdel -f` by a manager: removed from the record at once; `sched_d` kills what is left.
    Forced,
}

/// What `qhold`/`qrls` did to one job, in SGE's order: one event per task whose holds changed,
/// and the refusals met on the way (SGE goes on with the other tasks after a refusal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HoldOutcome {
    pub events: Vec<HoldEvent>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldEvent {
    /// The task's holds changed (`modified hold of job 5`).
    Modified(TaskId),
    /// A hold type of the request needs more privileges; it was dropped from the request for
    /// this and every later task.
    Denied(Denied),
}

/// Why an action was refused; `compat` words it as SGE does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("job {0} does not exist")]
    NoSuchJob(JobId),
    #[error("{user} may not delete job {job}")]
    DeletePrivilege { user: String, job: JobId },
    /// `qdel -f` by someone who is not a manager (SGE without `ENABLE_FORCED_QDEL`).
    #[error("{user} must be manager to force the deletion of job {job}")]
    ForcedDelete { user: String, job: JobId },
    #[error("{user} must be at least owner of job {job} to change job attributes")]
    NotOwner { user: String, job: JobId },
    #[error("{user} must be operator to increase job priority")]
    PriorityIncrease { user: String },
    /// `release`: the request removed holds (SGE says "remove operator hold").
    #[error("{user} must be operator to set or remove an operator hold")]
    OperatorHold { user: String, release: bool },
    #[error("{user} must be manager to set or remove a system hold")]
    SystemHold { user: String, release: bool },
    #[error("{user} must be operator to shove a job")]
    Shove { user: String },
    /// A `qmod` of queue instances given for a job: such actions are not a job's.
    #[error("not an action on a job")]
    NotForJobs,
    /// `qmod` of another user's job by someone who is not an operator.
    #[error("{user} - you have no permission to modify job \"{job}\"")]
    Qmod { user: String, job: JobId },
}

impl Request {
    /// Applies one action to `job` as `who`. `job` is left unchanged when the action is denied.
    pub fn apply(
        action: &RequestAction,
        who: &Requester,
        job: &mut JobRecord,
    ) -> Result<Outcome, Denied> {
        match action {
            RequestAction::QueueState { .. }
            | RequestAction::QueueSuspend { .. }
            | RequestAction::QueueClearError { .. }
            | RequestAction::ReloadConfig
            | RequestAction::ConfigEdit { .. }
            | RequestAction::StartPeTask(_)
            | RequestAction::DeleteAr { .. }
            | RequestAction::Reschedule { .. } => Err(Denied::NotForJobs),
            RequestAction::Suspend {
                tasks,
                suspend,
                force,
                ..
            } => {
                qmod_allowed(who, job)?;
                Ok(Outcome::Qmod(suspend_tasks(job, tasks, *suspend, *force)))
            }
            RequestAction::ClearError { tasks, .. } => {
                qmod_allowed(who, job)?;
                Ok(Outcome::Qmod(clear_error(job, tasks)))
            }
            RequestAction::Delete { tasks, force, .. } => {
                // sge_gdi_del_job refuses a forced deletion before looking at any job.
                if *force && !who.manager {
                    return Err(Denied::ForcedDelete {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                if !who.may_change(job) {
                    return Err(Denied::DeletePrivilege {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                Ok(Outcome::Delete(delete_tasks(job, tasks.set(), *force)))
            }
            RequestAction::Hold { tasks, hold, .. }
            | RequestAction::Release { tasks, hold, .. } => {
                let add = matches!(action, RequestAction::Hold { .. });
                // sge_gdi_mod_job: the owner check comes first, for the whole job.
                if !who.may_change(job) {
                    return Err(Denied::NotOwner {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                Ok(Outcome::Hold(change_holds(job, who, tasks, *hold, add)))
            }
            RequestAction::Alter { changes, .. } => {
                if !who.may_change(job) {
                    return Err(Denied::NotOwner {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                for c in changes {
                    // sge_job_qmaster: any increase, even from -50 to -40, needs an operator.
                    if let SpecChange::Priority(p) = c
                        && *p > job.spec.priority
                        && !who.is_operator()
                    {
                        return Err(Denied::PriorityIncrease {
                            user: who.user.clone(),
                        });
                    }
                }
                for c in changes {
                    apply_change(&mut job.spec, c.clone());
                }
                job.version += 1;
                Ok(Outcome::Altered)
            }
            RequestAction::Shove { .. } => {
                if !who.is_operator() {
                    return Err(Denied::Shove {
                        user: who.user.clone(),
                    });
                }
                Ok(Outcome::Shoved)
            }
        }
    }
}

impl Request {
    /// `qmod -rj` of `job` as `who`: which running tasks are rescheduled, as SGE's
    /// `reschedule_job` decides. Those are marked `rescheduling` (tasks reaped `deleting`);
    /// `sched_d` kills them, and requeues the rescheduled ones when they have ended.
    pub fn reschedule(
        job: &mut JobRecord,
        who: &Requester,
        tasks: &TaskSelector,
        force: bool,
        rules: &RescheduleRules<'_>,
    ) -> Result<Vec<QmodEvent>, Denied> {
        qmod_allowed(who, job)?;
        let sel = tasks.set();
        let mut events = Vec::new();
        let mut running: Vec<usize> = (0..job.tasks.running.len())
            .filter(|&i| sel.is_none_or(|s| s.contains(job.tasks.running[i].task)))
            .collect();
        running.sort_by_key(|&i| job.tasks.running[i].task);
        let restartable = job.spec.restartable;
        for i in running.iter().copied() {
            let r = &mut job.tasks.running[i];
            let rerun = restartable
                .unwrap_or_else(|| (rules.queue_rerun)(&format!("{}@{}", r.queue, r.host)));
            let event = if r.rescheduling {
                // Rescheduled already: SGE finds it in its list and says nothing.
                continue;
            } else if force {
                r.rescheduling = true;
                QmodEvent::Rescheduled {
                    task: r.task,
                    forced: true,
                }
            } else if !rerun && rules.reap {
                r.deleting = true;
                QmodEvent::Reaped(r.task)
            } else if restartable == Some(false) {
                QmodEvent::NotRestartable(r.task)
            } else if r.deleting {
                QmodEvent::BeingDeleted(r.task)
            } else if !rerun {
                QmodEvent::QueueNotRerunnable(r.task)
            } else {
                r.rescheduling = true;
                QmodEvent::Rescheduled {
                    task: r.task,
                    forced: false,
                }
            };
            events.push(event);
        }
        // A restarted task pending again is enrolled in SGE, which passes it over silently.
        let mut pending = Vec::new();
        not_enrolled(job, tasks, !running.is_empty(), &mut pending);
        events.extend(pending.into_iter().filter(|e| match e {
            QmodEvent::NotEnrolled(Some(t)) => !job.tasks.restarted.contains(*t),
            _ => true,
        }));
        Ok(events)
    }
}

/// SGE's rule for `qmod` of a job: its owner, operators and managers.
fn qmod_allowed(who: &Requester, job: &JobRecord) -> Result<(), Denied> {
    if who.may_change(job) {
        Ok(())
    } else {
        Err(Denied::Qmod {
            user: who.user.clone(),
            job: job.id,
        })
    }
}

/// The pending tasks a `qmod` of a job selected, which it cannot change: one event for
/// each, or, for a whole array job none of whose tasks had started, one for the job.
fn not_enrolled(
    job: &JobRecord,
    tasks: &TaskSelector,
    any_enrolled: bool,
    events: &mut Vec<QmodEvent>,
) {
    match tasks.set() {
        None if job.is_array() => {
            if !any_enrolled {
                events.push(QmodEvent::NotEnrolled(None));
            }
        }
        sel => events.extend(
            pending_selected(job, sel)
                .into_iter()
                .map(|t| QmodEvent::NotEnrolled(Some(t))),
        ),
    }
}

/// The running tasks `sel` selects (all without one), ascending.
fn running_selected(job: &JobRecord, sel: Option<&TaskSet>) -> Vec<TaskId> {
    let mut running: Vec<TaskId> = job
        .tasks
        .running
        .iter()
        .map(|r| r.task)
        .filter(|t| sel.is_none_or(|s| s.contains(*t)))
        .collect();
    running.sort_unstable();
    running
}

/// The pending tasks `sel` selects (all without one), ascending.
fn pending_selected(job: &JobRecord, sel: Option<&TaskSet>) -> Vec<TaskId> {
    let mut pending: Vec<TaskId> = job
        .tasks
        .pending
        .iter()
        .flat_map(|g| g.tasks.iter())
        .filter(|t| sel.is_none_or(|s| s.contains(*t)))
        .collect();
    pending.sort_unstable();
    pending
}

/// `qmod -sj`/`-usj`: the selected running tasks' run state, as `qmod_job_suspend` and
/// `qmod_job_unsuspend` set it (a task of a suspended queue is apart: its own state only).
fn suspend_tasks(
    job: &mut JobRecord,
    tasks: &TaskSelector,
    suspend: bool,
    force: bool,
) -> Vec<QmodEvent> {
    use super::RunState;
    let sel = tasks.set();
    let mut running: Vec<usize> = (0..job.tasks.running.len())
        .filter(|&i| sel.is_none_or(|s| s.contains(job.tasks.running[i].task)))
        .collect();
    running.sort_by_key(|&i| job.tasks.running[i].task);
    let mut events = Vec::new();
    for i in running.iter().copied() {
        let r = &mut job.tasks.running[i];
        let task = r.task;
        let suspended = r.state == RunState::Suspended;
        events.push(match (suspend, suspended) {
            (true, true) => QmodEvent::AlreadySuspended {
                task,
                forced: force,
            },
            (true, false) => {
                r.state = RunState::Suspended;
                QmodEvent::Suspended {
                    task,
                    forced: force,
                }
            }
            (false, true) => {
                r.state = RunState::Running;
                QmodEvent::Unsuspended {
                    task,
                    forced: force,
                }
            }
            (false, false) => QmodEvent::AlreadyUnsuspended {
                task,
                forced: force,
            },
        });
    }
    not_enrolled(job, tasks, !running.is_empty(), &mut events);
    events
}

/// `qmod -cj`. gridspool keeps one error state per job (`Eqw` of its pending tasks), where
/// SGE keeps one per task: clearing any of its tasks clears the job's.
fn clear_error(job: &mut JobRecord, tasks: &TaskSelector) -> Vec<QmodEvent> {
    let sel = tasks.set();
    let mut events = Vec::new();
    let running = running_selected(job, sel);
    if job.error.is_none() {
        let mut enrolled: Vec<TaskId> = running;
        enrolled.extend(
            job.tasks
                .restarted
                .iter()
                .filter(|t| sel.is_none_or(|s| s.contains(*t))),
        );
        enrolled.sort_unstable();
        events.extend(enrolled.iter().map(|t| QmodEvent::NotInError(*t)));
        let mut rest = Vec::new();
        not_enrolled(job, tasks, !enrolled.is_empty(), &mut rest);
        events.extend(rest.into_iter().filter(|e| match e {
            QmodEvent::NotEnrolled(Some(t)) => !job.tasks.restarted.contains(*t),
            _ => true,
        }));
        return events;
    }
    let pending = pending_selected(job, sel);
    let mut all: Vec<(TaskId, bool)> = running.into_iter().map(|t| (t, false)).collect();
    all.extend(pending.into_iter().map(|t| (t, true)));
    all.sort_unstable();
    if all.iter().any(|(_, in_error)| *in_error) {
        job.error = None;
    }
    events.extend(all.into_iter().map(|(t, in_error)| {
        if in_error {
            QmodEvent::ErrorCleared(t)
        } else {
            QmodEvent::NotInError(t)
        }
    }));
    if events.is_empty() && job.is_array() && sel.is_none() {
        events.push(QmodEvent::NotEnrolled(None));
    }
    events
}

/// Removes the selected pending tasks and marks (or, forced, removes) the selected running
/// ones, as `sge_delete_all_tasks_of_job` does.
fn delete_tasks(job: &mut JobRecord, sel: Option<&TaskSet>, force: bool) -> DeleteOutcome {
    let mut removed: Vec<TaskId> = Vec::new();
    for g in job.tasks.pending.iter_mut() {
        match sel {
            None => {
                removed.extend(g.tasks.iter());
                g.tasks = TaskSet::new();
            }
            Some(s) => removed.extend(g.tasks.remove_all(s).iter()),
        }
    }
    job.tasks.pending.retain(|g| !g.tasks.is_empty());
    removed.sort_unstable();
    let mut pending = TaskSet::new();
    for id in removed {
        pending.insert(id);
    }
    let selected = running_selected(job, sel);
    let mut running = Vec::with_capacity(selected.len());
    for task in selected {
        let Some(i) = job.tasks.running.iter().position(|r| r.task == task) else {
            continue;
        };
        let what = if force {
            job.tasks.running.remove(i);
            RunningDeletion::Forced
        } else if job.tasks.running[i].deleting {
            RunningDeletion::AlreadyDeleting
        } else {
            job.tasks.running[i].deleting = true;
            RunningDeletion::Registered
        };
        running.push((task, what));
    }
    DeleteOutcome {
        pending,
        running,
        gone: job.tasks.is_done(),
    }
}

/// The holds of one pending or running task; `None` if the job has no such task now.
fn task_holds(job: &JobRecord, id: TaskId) -> Option<Holds> {
    job.tasks
        .pending
        .iter()
        .find(|g| g.tasks.contains(id))
        .map(|g| g.holds)
        .or_else(|| {
            job.tasks
                .running
                .iter()
                .find(|r| r.task == id)
                .map(|r| r.holds)
        })
}

/// Moves one task to the holds `new`: a pending task leaves its group (SGE's range split) and
/// joins the group with those holds, as SGE moves ids between its per-hold range lists.
fn set_task_holds(job: &mut JobRecord, id: TaskId, new: Holds) {
    if let Some(r) = job.tasks.running.iter_mut().find(|r| r.task == id) {
        r.holds = new;
        return;
    }
    for g in job.tasks.pending.iter_mut() {
        g.tasks.remove(id);
    }
    match job.tasks.pending.iter_mut().find(|g| g.holds == new) {
        Some(g) => g.tasks.insert(id),
        None => job.tasks.pending.push(super::PendingGroup {
            tasks: TaskSet::from_range(super::TaskIdRange::single(id)),
            holds: new,
        }),
    }
    job.tasks.pending.retain(|g| !g.tasks.is_empty());
}

/// Pending task ids whose holds fall in one of SGE's per-hold lists (`n`: none), ascending.
fn pending_in_category(job: &JobRecord, category: Option<HoldType>) -> Vec<TaskId> {
    let mut ids: Vec<TaskId> = job
        .tasks
        .pending
        .iter()
        .filter(|g| match category {
            None => !g.holds.any(),
            Some(t) => g.holds.has(t),
        })
        .flat_map(|g| g.tasks.iter())
        .collect();
    ids.sort_unstable();
    ids
}

/// `mod_task_attributes` for `JAT_hold`, task by task. A task whose holds would not change is
/// skipped silently and needs no privilege (so root's `qrls -h s` of a job without a system
/// hold prints nothing). When a change needs a privilege the requester lacks, SGE reports it,
/// leaves that task alone, drops the hold type from the request and goes on with the next
/// task: a user's `qhold -h uos` of a five-task array is refused for tasks 1 (manager) and 2
/// (operator) and sets the user hold of tasks 3 to 5 (checked on SGE 8.1.9).
fn change_holds(
    job: &mut JobRecord,
    who: &Requester,
    tasks: &TaskSelector,
    requested: Holds,
    add: bool,
) -> HoldOutcome {
    let mut target = requested;
    let mut out = HoldOutcome::default();
    let mut visit = |job: &mut JobRecord, id: TaskId, target: &mut Holds| {
        let Some(old) = task_holds(job, id) else {
            return;
        };
        let mut new = old;
        for t in [HoldType::User, HoldType::Operator, HoldType::System] {
            if target.has(t) {
                new.set(t, add);
            }
        }
        if new == old {
            return;
        }
        if target.system && !who.manager {
            target.system = false;
            out.events.push(HoldEvent::Denied(Denied::SystemHold {
                user: who.user.clone(),
                release: !add,
            }));
            return;
        }
        if target.operator && !who.is_operator() {
            target.operator = false;
            out.events.push(HoldEvent::Denied(Denied::OperatorHold {
                user: who.user.clone(),
                release: !add,
            }));
            return;
        }
        set_task_holds(job, id, new);
        out.events.push(HoldEvent::Modified(id));
    };
    match tasks {
        // SGE visits the not yet started tasks list by list (no hold, user, operator,
        // system), each list as it is when reached, then the started tasks.
        TaskSelector::All => {
            for category in [
                None,
                Some(HoldType::User),
                Some(HoldType::Operator),
                Some(HoldType::System),
            ] {
                for id in pending_in_category(job, category) {
                    visit(job, id, &mut target);
                }
            }
            let mut running: Vec<TaskId> = job.tasks.running.iter().map(|r| r.task).collect();
            running.sort_unstable();
            for id in running {
                visit(job, id, &mut target);
            }
        }
        // Named tasks that the job does not have are ignored silently, as in SGE. Each named
        // task carries its own copy of the request there, so a refusal drops the hold type
        // for that task only (`qhold -h o 5.2-3` by a user is refused twice).
        TaskSelector::Tasks(set) => {
            for id in set.iter() {
                let mut own = requested;
                visit(job, id, &mut own);
            }
        }
    }
    out
}

fn apply_change(spec: &mut super::JobSpec, change: SpecChange) {
    match change {
        SpecChange::Name(v) => spec.name = v,
        SpecChange::Priority(v) => spec.priority = v,
        SpecChange::HardResources(v) => spec.hard_resources = v,
        SpecChange::SoftResources(v) => spec.soft_resources = v,
        SpecChange::HardQueues(v) => spec.hard_queues = v,
        SpecChange::SoftQueues(v) => spec.soft_queues = v,
        SpecChange::MasterQueues(v) => spec.master_queues = v,
        SpecChange::Pe(v) => spec.pe = v,
        SpecChange::HoldJid {
            requested,
            resolved,
        } => {
            spec.hold_jid = requested;
            spec.predecessors = resolved;
        }
        SpecChange::HoldJidAd {
            requested,
            resolved,
        } => {
            spec.hold_jid_ad = requested;
            spec.array_predecessors = resolved;
        }
        SpecChange::Stdout(v) => spec.stdout = v,
        SpecChange::Stderr(v) => spec.stderr = v,
        SpecChange::Stdin(v) => spec.stdin = v,
        SpecChange::MergeStderr(v) => spec.merge_stderr = v,
        SpecChange::Interpreter(v) => spec.interpreter = v,
        SpecChange::Cwd(v) => spec.cwd = v,
        SpecChange::StartTime(v) => spec.start_time = v,
        SpecChange::Deadline(v) => spec.deadline = v,
        SpecChange::TaskConcurrency(v) => spec.task_concurrency = v,
        SpecChange::Restartable(v) => spec.restartable = v,
        SpecChange::Reserve(v) => spec.reserve = v,
        SpecChange::Env(v) => spec.env = v,
        SpecChange::Project(v) => spec.project = v,
        SpecChange::Account(v) => spec.account = v,
        SpecChange::MailOptions(v) => spec.mail_options = v,
        SpecChange::MailList(v) => spec.mail_list = v,
        SpecChange::Notify(v) => spec.notify = v,
        SpecChange::Cluster(v) => spec.cluster = v,
        SpecChange::NoPreempt(v) => spec.no_preempt = v,
        SpecChange::Context(v) => spec.context = v,
        SpecChange::JobShare(v) => spec.job_share = v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        JOB_SCHEMA_VERSION, JobSpec, JobSubmission, RunningTask, Submitter, TaskIdRange,
    };

    fn job(array: Option<&str>) -> JobRecord {
        JobRecord::from_submission(JobSubmission {
            v: JOB_SCHEMA_VERSION,
            id: JobId(94),
            submitter: Submitter {
                owner: "sgeuser2".into(),
                uid: 1002,
                group: "sgeuser2".into(),
                gid: 1002,
                submission_time: 0,
                sge_o_home: "/home/sgeuser2".into(),
                sge_o_log_name: "sgeuser2".into(),
                sge_o_path: "/bin".into(),
                sge_o_shell: "/bin/sh".into(),
                sge_o_workdir: "/home/sgeuser2".into(),
                sge_o_host: "vm".into(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            spec: JobSpec {
                array: array.map(|a| TaskIdRange::parse(a).expect("range")),
                ..JobSpec::default()
            },
            holds: Holds::NONE,
        })
    }

    fn user(manager: bool) -> Requester {
        Requester {
            uid: if manager { 0 } else { 1002 },
            user: if manager { "root" } else { "sgeuser2" }.into(),
            host: "vm".into(),
            manager,
            operator: manager,
        }
    }

    fn holds(text: &str) -> Holds {
        serde_json::from_str(&format!("\"{text}\"")).expect("holds")
    }

    fn hold_events(
        j: &mut JobRecord,
        who: &Requester,
        tasks: TaskSelector,
        hold: &str,
    ) -> Vec<HoldEvent> {
        let action = RequestAction::Hold {
            job: j.id,
            tasks,
            hold: holds(hold),
        };
        match Request::apply(&action, who, j) {
            Ok(Outcome::Hold(o)) => o.events,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_refused_hold_type_is_dropped_for_the_rest_of_a_whole_job() {
        let mut j = job(Some("1-5"));
        let ev = hold_events(&mut j, &user(false), TaskSelector::All, "uos");
        let denied = |system: bool| {
            let user = "sgeuser2".to_string();
            HoldEvent::Denied(if system {
                Denied::SystemHold {
                    user,
                    release: false,
                }
            } else {
                Denied::OperatorHold {
                    user,
                    release: false,
                }
            })
        };
        assert_eq!(
            ev,
            vec![
                denied(true),
                denied(false),
                HoldEvent::Modified(3),
                HoldEvent::Modified(4),
                HoldEvent::Modified(5)
            ]
        );
        let groups: Vec<(String, String)> = j
            .tasks
            .pending
            .iter()
            .map(|g| (g.tasks.to_string(), g.holds.letters()))
            .collect();
        assert_eq!(
            groups,
            vec![("1,2".into(), "".into()), ("3-5:1".into(), "u".into())]
        );
    }

    #[test]
    fn named_tasks_each_carry_their_own_request() {
        let mut j = job(Some("1-5"));
        let set = TaskSet::from_range(TaskIdRange::new(2, 3, 1));
        let ev = hold_events(&mut j, &user(false), TaskSelector::Tasks(set), "o");
        assert_eq!(ev.len(), 2);
        assert!(ev.iter().all(|e| matches!(e, HoldEvent::Denied(_))));
    }

    #[test]
    fn releasing_a_hold_that_is_not_there_changes_nothing_and_needs_no_privilege() {
        let mut j = job(None);
        let before = j.clone();
        let action = RequestAction::Release {
            job: j.id,
            tasks: TaskSelector::All,
            hold: holds("s"),
        };
        let got = Request::apply(&action, &user(false), &mut j);
        assert_eq!(got, Ok(Outcome::Hold(HoldOutcome::default())));
        assert_eq!(j, before);
    }

    #[test]
    fn deletion_marks_running_tasks_once_and_force_needs_a_manager() {
        let mut j = job(Some("1-4"));
        j.tasks.pending[0].tasks.remove(1);
        j.tasks
            .running
            .push(RunningTask::running(1, "all.q", "vm", 1, 0));
        let del = |force: bool| RequestAction::Delete {
            job: JobId(94),
            tasks: TaskSelector::Tasks(TaskSet::from_range(TaskIdRange::single(1))),
            force,
        };
        let running = |r: Result<Outcome, Denied>| match r {
            Ok(Outcome::Delete(o)) => o.running,
            other => panic!("unexpected {other:?}"),
        };
        let who = user(false);
        assert_eq!(
            running(Request::apply(&del(false), &who, &mut j)),
            vec![(1, RunningDeletion::Registered)]
        );
        assert_eq!(
            running(Request::apply(&del(false), &who, &mut j)),
            vec![(1, RunningDeletion::AlreadyDeleting)]
        );
        assert!(matches!(
            Request::apply(&del(true), &who, &mut j),
            Err(Denied::ForcedDelete { .. })
        ));
        assert_eq!(
            running(Request::apply(&del(true), &user(true), &mut j)),
            vec![(1, RunningDeletion::Forced)]
        );
        assert!(j.tasks.running.is_empty());
        let all = RequestAction::Delete {
            job: JobId(94),
            tasks: TaskSelector::All,
            force: false,
        };
        match Request::apply(&all, &who, &mut j) {
            Ok(Outcome::Delete(o)) => {
                assert_eq!(o.pending.to_string(), "2-4:1");
                assert!(o.gone);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn old_single_letter_hold_requests_still_read() {
        let text = r#"{"action":"hold","job":5,"tasks":"all","hold":"u"}"#;
        let a: RequestAction = serde_json::from_str(text).expect("parse");
        assert_eq!(
            a,
            RequestAction::Hold {
                job: JobId(5),
                tasks: TaskSelector::All,
                hold: Holds::from(HoldType::User),
            }
        );
    }
}
