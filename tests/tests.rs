//! One integration-test binary (fast to build); one module per area.

mod support;

mod cgroups;
mod cluster;
mod demo;
mod devices;
mod docs;
mod drmaa;
mod harness;
mod host_failure;
mod install;
mod json;
mod launch;
mod metrics;
mod pe_tasks;
mod prolog;
mod qacct;
mod qalter;
mod qconf;
mod qdel;
mod qhold;
mod qhost;
mod qmod;
mod qrsh;
mod qselect;
mod qstat;
mod qsub;
mod sched;
mod security;
mod shadow;
mod sim;
mod sim_equality;
mod sim_seeds;
mod spool_faults;
mod sync_env;
mod workflow;
