//! The job model: what a job is, independent of where it is stored or how it is shown.
//!
//! Names follow Grid Engine's nouns (`JobId`, `TaskIdRange`, holds, hard/soft requests) so
//! that a Grid Engine administrator recognises them. Everything here is plain data with serde
//! derives; the spool decides where it lives, `compat` decides how it looks.

mod ar;
mod estimate;
mod holds;
mod ids;
mod job;
mod request;
mod task_run;
mod tasks;

pub use ar::{AR_SCHEMA_VERSION, ArGrant, ArOwner, ArRecord, ArState, ArSubmission};
pub use estimate::{
    FORECAST_SCHEMA_VERSION, JobStartEstimate, StartEstimate, StartForecast, TaskStartEstimate,
};
pub use holds::{HoldType, Holds};
pub use ids::{JobId, TaskId};
pub use job::{
    EnvVar, ErrorInfo, FinishedTask, InteractiveSession, JOB_SCHEMA_VERSION, JobRecord, JobSpec,
    JobSubmission, PathSpec, PeRequest, PendingGroup, PriorityInfo, ResourceRequest, RunState,
    RunningTask, SlotRange, Submitter, TaskStates, TaskUsage, UsageReport,
};
pub use request::{
    DeleteOutcome, Denied, HoldEvent, HoldOutcome, HoldTypeName, Outcome, PeTaskRequest, QmodEvent,
    Request, RequestAction, Requester, RescheduleRules, RunningDeletion, SpecChange, TaskSelector,
};
pub use task_run::{Placement, Rusage, TaskResult};
pub use tasks::{TaskIdRange, TaskRangeError, TaskSet};
