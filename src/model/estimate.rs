//! Start-time estimates: when `sched_d`'s forecast (`sched::forecast`) expects each pending
//! task to start and where, or why no time can be given. SGE 8.1.9 has no such thing; these
//! are shown only by gridspool's own `qstat --start` and the JSON and status page beside it.

use super::{JobId, TaskSet};
use serde::{Deserialize, Serialize};

/// The version of [`StartForecast`]'s file; a reader that finds another shows no estimates.
pub const FORECAST_SCHEMA_VERSION: u32 = 1;

/// One forecast of the whole cell: the live state played forward through the scheduling pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartForecast {
    pub v: u32,
    /// The moment of the state the forecast started from (seconds since the epoch).
    pub made_at: i64,
    /// How long making it took, in milliseconds (loading the cell and playing it forward).
    pub took_ms: u64,
    /// Where run times came from: `limits` (h_rt/s_rt, the queue's, `default_duration`) or
    /// `learned` (past run times from the accounting file, capped by the limits).
    pub run_times: String,
    /// Every job with a pending task, by job id.
    pub jobs: Vec<JobStartEstimate>,
}

/// The estimates of one job's pending tasks; tasks with the same outcome share an entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStartEstimate {
    pub job: JobId,
    pub tasks: Vec<TaskStartEstimate>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStartEstimate {
    pub tasks: TaskSet,
    pub start: StartEstimate,
}

/// What the forecast says of a pending task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StartEstimate {
    /// It starts at `time` in `queue` on `hosts` (the master's first), `slots` in all.
    At {
        time: i64,
        queue: String,
        hosts: Vec<String>,
        slots: u32,
    },
    /// No honest time can be given: it waits for something whose time is not known (a hold,
    /// a job that runs without a time limit, the end of the forecast's horizon).
    Unknown { why: String },
    /// It can never start as the cell stands (no queue or host could ever take it).
    Never { why: String },
}

impl StartForecast {
    /// The estimates of job `id`, if it had pending tasks when the forecast was made.
    pub fn job(&self, id: JobId) -> Option<&JobStartEstimate> {
        self.jobs
            .binary_search_by_key(&id, |j| j.job)
            .ok()
            .map(|i| &self.jobs[i])
    }
}

impl JobStartEstimate {
    /// The estimate of task `task`, if it was pending.
    pub fn task(&self, task: super::TaskId) -> Option<&StartEstimate> {
        self.tasks
            .iter()
            .find(|t| t.tasks.contains(task))
            .map(|t| &t.start)
    }
}
