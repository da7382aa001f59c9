//! Launching tasks on execution hosts (directly, or over OpenSSH) and the shepherd that runs
//! them as their owner and reports how they ended.

pub mod protocol;

pub use protocol::{LaunchEvent, Placement, Rusage, TaskResult};
