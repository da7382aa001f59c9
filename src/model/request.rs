//! Requests to change jobs (`qdel`, `qalter`, `qhold`, `qrls`), and the one function that
//! applies them, with Grid Engine's permission rules.
//!
//! Clients publish requests as files; `sched_d` folds them into job records. `qstat` applies
//! the ones not yet folded when it shows jobs, and the client applies them to its own view to
//! decide what to print — so all three share [`Request::apply`]. Every action *sets* a value
//! (no increments), so applying a request twice gives the same record: a crash between writing
//! a record and removing the request is harmless.

use super::{EnvVar, HoldType, JobId, JobRecord, PathSpec, PeRequest, ResourceRequest, TaskSet};
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
    Hold {
        job: JobId,
        tasks: TaskSelector,
        hold: HoldTypeName,
    },
    Release {
        job: JobId,
        tasks: TaskSelector,
        hold: HoldTypeName,
    },
    Alter {
        job: JobId,
        changes: Vec<SpecChange>,
    },
    /// Re-evaluate the job now (Qube!'s "shove").
    Shove { job: JobId },
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
    pub fn job(&self) -> JobId {
        match self {
            RequestAction::Delete { job, .. }
            | RequestAction::Hold { job, .. }
            | RequestAction::Release { job, .. }
            | RequestAction::Alter { job, .. }
            | RequestAction::Shove { job } => *job,
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
    /// Pending tasks removed; `gone` when nothing of the job is left.
    Deleted {
        tasks: Option<TaskSet>,
        gone: bool,
    },
    /// Running tasks marked for deletion; `sched_d` kills them.
    RegisteredForDeletion,
    /// Holds changed (also when they were already so: SGE says "modified" regardless).
    HoldModified,
    Altered,
    Shoved,
}

/// Why an action was refused; `compat` words it as SGE does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("job {0} does not exist")]
    NoSuchJob(JobId),
    #[error("{user} may not delete job {job}")]
    DeletePrivilege { user: String, job: JobId },
    #[error("{user} must be at least owner of job {job} to change job attributes")]
    NotOwner { user: String, job: JobId },
    #[error("{user} must be operator to increase job priority")]
    PriorityIncrease { user: String },
    #[error("{user} must be operator to set or release an operator hold")]
    OperatorHold { user: String },
    #[error("{user} must be manager to set or release a system hold")]
    SystemHold { user: String },
    #[error("{user} must be operator to shove a job")]
    Shove { user: String },
}

impl Request {
    /// Applies one action to `job` as `who`. `job` is left unchanged when the action is denied.
    pub fn apply(
        action: &RequestAction,
        who: &Requester,
        job: &mut JobRecord,
    ) -> Result<Outcome, Denied> {
        match action {
            RequestAction::Delete { tasks, .. } => {
                if !who.may_change(job) {
                    return Err(Denied::DeletePrivilege {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                let sel = tasks.set();
                let mut removed = TaskSet::new();
                for g in job.tasks.pending.iter_mut() {
                    match sel {
                        None => {
                            for id in g.tasks.iter() {
                                removed.insert(id);
                            }
                            g.tasks = TaskSet::new();
                        }
                        Some(s) => {
                            for id in g.tasks.remove_all(s).iter() {
                                removed.insert(id);
                            }
                        }
                    }
                }
                job.tasks.pending.retain(|g| !g.tasks.is_empty());
                let mut registered = false;
                for r in job.tasks.running.iter_mut() {
                    if sel.is_none_or(|s| s.contains(r.task)) {
                        r.deleting = true;
                        registered = true;
                    }
                }
                if registered {
                    Ok(Outcome::RegisteredForDeletion)
                } else {
                    Ok(Outcome::Deleted {
                        tasks: sel.map(|_| removed),
                        gone: job.tasks.is_done(),
                    })
                }
            }
            RequestAction::Hold { tasks, hold, .. }
            | RequestAction::Release { tasks, hold, .. } => {
                let on = matches!(action, RequestAction::Hold { .. });
                let hold = HoldType::from(*hold);
                if !who.may_change(job) {
                    return Err(Denied::NotOwner {
                        user: who.user.clone(),
                        job: job.id,
                    });
                }
                match hold {
                    HoldType::User => {}
                    HoldType::Operator if !who.is_operator() => {
                        return Err(Denied::OperatorHold {
                            user: who.user.clone(),
                        });
                    }
                    HoldType::System if !who.manager => {
                        return Err(Denied::SystemHold {
                            user: who.user.clone(),
                        });
                    }
                    _ => {}
                }
                for g in job.pending_groups_for(tasks.set()) {
                    g.holds.set(hold, on);
                }
                job.normalise_pending();
                Ok(Outcome::HoldModified)
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
