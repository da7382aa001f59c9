//! One integration-test binary (fast to build); one module per area.

mod support;

mod harness;
mod sched;
