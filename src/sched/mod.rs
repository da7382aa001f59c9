//! `sched_d`: the daemon that watches the spool, keeps the state in memory, computes priorities and dispatches tasks.
