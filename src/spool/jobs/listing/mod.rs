//! The parts of a record that job listings (`qstat` without `-j` or `-r`) show: everything
//! else is skipped by the parser without being built (environment, arguments, paths, mail,
//! context, resource requests). Which fields are required mirrors the full types.

use crate::model::{
    ErrorInfo, Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, PendingGroup,
    PriorityInfo, RunningTask, Submitter, TaskId, TaskIdRange, TaskSet, TaskStates,
};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// How a summary line of the current layout starts (`split_state`); a line with another
/// tag is skipped and the record read instead, so that a later layout can be introduced
/// without older clients misreading it.
pub(super) const SUMMARY_TAG: &[u8] = b"[\"L3\",";

/// A task range as `[first, last, step]`.
type Range = (TaskId, TaskId, TaskId);

fn range(r: &TaskIdRange) -> Range {
    (r.first, r.last, r.step)
}

fn task_range((first, last, step): Range) -> TaskIdRange {
    TaskIdRange { first, last, step }
}

/// `PriorityInfo` as an array: its 13 numbers in declaration order, then the policy
/// terms.
type Priority<'a> = (
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    Cow<'a, [(String, String)]>,
);

/// The listing summary: the first line of a state file, holding exactly what
/// [`Record`] takes from the whole record, as one JSON array (no key to match, task
/// ranges and priorities as arrays): several times cheaper to parse than the record.
/// Fields, in order: tag, `v`, `id`, owner, uid, gid, submission time, name, priority,
/// project, start time, deadline, predecessors, array predecessors, array range, `pe`,
/// pending groups (`[[ranges], holds]`), running tasks, finished count, error,
/// priorities, `version`, `applied_request`, finished tasks (`[ranges]`, since `L2`),
/// restarted pending tasks (`[ranges]`, since `L3`).
#[derive(Serialize, Deserialize)]
pub(super) struct Summary<'a>(
    Tag,
    u32,
    JobId,
    Cow<'a, str>,
    u32,
    u32,
    i64,
    Cow<'a, str>,
    i32,
    Option<Cow<'a, str>>,
    Option<i64>,
    Option<i64>,
    Cow<'a, [JobId]>,
    Cow<'a, [JobId]>,
    Option<Range>,
    Option<Cow<'a, PeRequest>>,
    Vec<(Vec<Range>, Holds)>,
    Cow<'a, [RunningTask]>,
    u64,
    Option<Cow<'a, ErrorInfo>>,
    Option<Priority<'a>>,
    u32,
    u64,
    Vec<Range>,
    Vec<Range>,
);

/// The tag written first (read back as ignored: `SUMMARY_TAG` was checked on the bytes).
pub(super) struct Tag;

impl Serialize for Tag {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("L3")
    }
}

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Tag)
    }
}

impl<'a> Summary<'a> {
    pub(super) fn of(j: &'a JobRecord) -> Self {
        let p = j.priority.as_ref().map(|p| {
            (
                p.prio,
                p.nurg,
                p.npprior,
                p.ntckts,
                p.urg,
                p.rrcontr,
                p.wtcontr,
                p.dlcontr,
                p.tickets,
                p.otickets,
                p.ftickets,
                p.stickets,
                p.share,
                Cow::Borrowed(&p.policy_terms[..]),
            )
        });
        Summary(
            Tag,
            j.v,
            j.id,
            Cow::Borrowed(&j.submitter.owner),
            j.submitter.uid,
            j.submitter.gid,
            j.submitter.submission_time,
            Cow::Borrowed(&j.spec.name),
            j.spec.priority,
            j.spec.project.as_deref().map(Cow::Borrowed),
            j.spec.start_time,
            j.spec.deadline,
            Cow::Borrowed(&j.spec.predecessors),
            Cow::Borrowed(&j.spec.array_predecessors),
            j.spec.array.as_ref().map(range),
            j.spec.pe.as_ref().map(Cow::Borrowed),
            j.tasks
                .pending
                .iter()
                .map(|g| (g.tasks.ranges().iter().map(range).collect(), g.holds))
                .collect(),
            Cow::Borrowed(&j.tasks.running),
            j.tasks.finished,
            j.error.as_ref().map(Cow::Borrowed),
            p,
            j.version,
            j.applied_request,
            j.tasks.finished_tasks.ranges().iter().map(range).collect(),
            j.tasks.restarted.ranges().iter().map(range).collect(),
        )
    }

    pub(super) fn into_record(self) -> JobRecord {
        let Summary(
            _,
            v,
            id,
            owner,
            uid,
            gid,
            submission_time,
            name,
            priority,
            project,
            start_time,
            deadline,
            predecessors,
            array_predecessors,
            array,
            pe,
            pending,
            running,
            finished,
            error,
            prio,
            version,
            applied_request,
            finished_tasks,
            restarted,
        ) = self;
        let submitter = ListingSubmitter {
            owner: owner.into_owned(),
            uid,
            gid,
            submission_time,
        };
        let spec = Spec {
            name: name.into_owned(),
            priority,
            project: project.map(Cow::into_owned),
            start_time,
            deadline,
            predecessors: predecessors.into_owned(),
            array_predecessors: array_predecessors.into_owned(),
            array: array.map(task_range),
            pe: pe.map(Cow::into_owned),
        };
        let priority = prio.map(|p| PriorityInfo {
            prio: p.0,
            nurg: p.1,
            npprior: p.2,
            ntckts: p.3,
            urg: p.4,
            rrcontr: p.5,
            wtcontr: p.6,
            dlcontr: p.7,
            tickets: p.8,
            otickets: p.9,
            ftickets: p.10,
            stickets: p.11,
            share: p.12,
            policy_terms: p.13.into_owned(),
        });
        JobRecord {
            v,
            id,
            submitter: submitter.into_submitter(),
            spec: spec.into_spec(),
            tasks: TaskStates {
                pending: pending
                    .into_iter()
                    .map(|(ranges, holds)| PendingGroup {
                        tasks: TaskSet::from_stored_ranges(
                            ranges.into_iter().map(task_range).collect(),
                        ),
                        holds,
                    })
                    .collect(),
                running: running.into_owned(),
                finished,
                finished_tasks: TaskSet::from_stored_ranges(
                    finished_tasks.into_iter().map(task_range).collect(),
                ),
                // A listing's summary: what clients show, which these never are.
                rescheduled: Vec::new(),
                restarted: TaskSet::from_stored_ranges(
                    restarted.into_iter().map(task_range).collect(),
                ),
            },
            error: error.map(Cow::into_owned),
            priority,
            pending_reasons: Vec::new(),
            version,
            applied_request,
        }
    }
}

pub(super) mod binary;
pub(super) mod line;

#[derive(Deserialize)]
pub(super) struct Record {
    v: u32,
    id: JobId,
    submitter: ListingSubmitter,
    spec: Spec,
    tasks: TaskStates,
    #[serde(default)]
    error: Option<ErrorInfo>,
    #[serde(default)]
    priority: Option<PriorityInfo>,
    #[serde(default)]
    version: u32,
    #[serde(default)]
    applied_request: u64,
}

#[derive(Deserialize)]
pub(super) struct Submission {
    v: u32,
    id: JobId,
    submitter: ListingSubmitter,
    spec: Spec,
    #[serde(default)]
    holds: Holds,
}

#[derive(Deserialize)]
struct ListingSubmitter {
    owner: String,
    uid: u32,
    gid: u32,
    submission_time: i64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Spec {
    name: String,
    priority: i32,
    project: Option<String>,
    start_time: Option<i64>,
    deadline: Option<i64>,
    predecessors: Vec<JobId>,
    array_predecessors: Vec<JobId>,
    array: Option<TaskIdRange>,
    pe: Option<PeRequest>,
}

impl ListingSubmitter {
    fn into_submitter(self) -> Submitter {
        Submitter {
            owner: self.owner,
            uid: self.uid,
            group: String::new(),
            gid: self.gid,
            submission_time: self.submission_time,
            sge_o_home: String::new(),
            sge_o_log_name: String::new(),
            sge_o_path: String::new(),
            sge_o_shell: String::new(),
            sge_o_workdir: String::new(),
            sge_o_host: String::new(),
            sge_o_mail: None,
            sge_o_tz: None,
        }
    }
}

impl Spec {
    fn into_spec(self) -> JobSpec {
        JobSpec {
            name: self.name,
            priority: self.priority,
            project: self.project,
            start_time: self.start_time,
            deadline: self.deadline,
            predecessors: self.predecessors,
            array_predecessors: self.array_predecessors,
            array: self.array,
            pe: self.pe,
            // Not shown by listings; an empty string costs no allocation per job.
            account: String::new(),
            ..JobSpec::default()
        }
    }
}

impl Record {
    pub(super) fn into_record(self) -> JobRecord {
        JobRecord {
            v: self.v,
            id: self.id,
            submitter: self.submitter.into_submitter(),
            spec: self.spec.into_spec(),
            tasks: self.tasks,
            error: self.error,
            priority: self.priority,
            pending_reasons: Vec::new(),
            version: self.version,
            applied_request: self.applied_request,
        }
    }
}

impl Submission {
    pub(super) fn into_submission(self) -> JobSubmission {
        JobSubmission {
            v: self.v,
            id: self.id,
            submitter: self.submitter.into_submitter(),
            spec: self.spec.into_spec(),
            holds: self.holds,
        }
    }
}
