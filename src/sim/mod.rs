//! `gridspool-sim`: what a scheduling policy would do to a workload, before switching to it.
//! A trace (the Standard Workload Format, [`swf`]) is replayed through the real scheduling
//! state and pass on a virtual clock ([`replay`]) and summed up per user, group and queue
//! ([`report`]).
//! [`what_if`] starts from the live cell instead: the change in its pending work's estimated
//! starts that a change of its configuration or hosts would make.

pub mod accuracy;
pub mod charts;
pub mod replay;
pub mod report;
pub mod shares;
pub mod swf;
pub mod what_if;
pub mod workload;
