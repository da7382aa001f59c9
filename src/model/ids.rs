use serde::{Deserialize, Serialize};
use std::fmt;

/// A job number, as Grid Engine prints it. Sequential from 1 and never reused in one spool.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct JobId(pub u32);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::str::FromStr for JobId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<u32>().map(JobId)
    }
}

/// An array task number. A job that is not an array job has the single task 1, as in SGE.
pub type TaskId = u32;
