//! Grid Engine 8.1.9 share-tree tickets (`share_tree(5)`, `sched_conf(5)`).
//!
//! The share tree gives users and projects long-term entitlements; the scheduler hands out up
//! to `weight_tickets_share` tickets so that, over time, each node's decayed usage approaches its
//! share. This module follows what SGE 8.1.9's scheduler (`sgeee.c`, `sge_support.c`) does, so
//! that the numbers match the real system (`oracle/sge-captures/qstat-ext-share.txt`).
//!
//! # The algorithm, one scheduling pass
//!
//! 1. **Usage** (`sched_conf(5)` `halftime`, `usage_weight_list`, `halflife_decay_list`). SGE
//!    keeps usage per user, per project, and per user-within-project; a node's usage is read
//!    from the object it names: a user leaf outside any project has the user's usage from jobs
//!    without a project, a user leaf under a project node has that user's usage in that project,
//!    a project node has the project's usage, any other inner node the sum of its children.
//!    Usage decays lazily: by `c^(Δt/60)` where `c = 1 − 60·ln2/(halftime·3600)` (SGE's
//!    `calculate_decay_constant`, a per-minute constant, so the half-life is very nearly but not
//!    exactly `halftime`); `halftime = 0` means no decay. The three kinds combine as
//!    `Σ usage_k · w_k / Σ w`.
//! 2. **Active nodes**: a node is active when it or a descendant has a job (running or
//!    pending). Only active siblings compete.
//! 3. **Long-term target** (`ltt`, `oltt`): shares among active siblings, and the product down
//!    the path. **Short-term target** (`stt`, `ostt`): `shr = shares² / max(usage, oltt)` per
//!    active sibling, normalised among them. **Compensation**: when a node's `ostt` exceeds
//!    `compensation_factor × oltt`, its `shr` is divided by `ostt / (compensation_factor × oltt)`
//!    and the siblings are renormalised.
//! 4. **Pending jobs**: each job hangs below its node. Walking up, the jobs below each node that
//!    is a child of the (pruned) root are sorted (running first, then by the previous level's
//!    value, then job and task number) and the k-th gets `stt(node) / d_k` where `d_1 = 1` and
//!    `d_{k+1} = d_k + max(1, min PE slots of job k)`: each job ahead counts as already running.
//!    Tickets are that times `weight_tickets_share`. Levels with a single active child and no
//!    jobs are pruned from the top first.
//! 5. **Running jobs** get `ostt(node) × weight_tickets_share / jobs at node` (job-share weighted
//!    when jobs carry `-js`); SGE then recomputes them in a second pass counting running jobs
//!    only, and that second value is the one qstat shows.
//!
//! With Root→{sgeuser:75, sgeuser2:25}, usages 28.538147 and 4.447756, compensation factor 5 and
//! 10,000 tickets this gives sgeuser's three pending jobs 5837.97, 2918.99, 1945.99 tickets and
//! sgeuser2's 4162.03, 2081.01, 1387.34, printed truncated by qstat as 5837, 2918, 1945, 4162,
//! 2081, 1387.
//!
//! # Scope
//! Functional and override tickets are in [`crate::sge`] ([`crate::sge::functional_tickets`],
//! [`crate::sge::override_tickets`], and [`crate::sge::compute_tickets`] which chains all three
//! along `policy_hierarchy`). The pass takes each job's tickets from higher policies
//! ([`TicketJob::higher_policy_tickets`]) so that a dependent share-tree policy orders pending
//! jobs by them as SGE does. Not modelled: the redistribution of a project's unattributed usage
//! to the nodes above a `default` user node inside that project (`sge_calc_node_usage`), and
//! SGE's cap of `max_pending_tasks_per_job` array tasks per job (the caller passes the tasks it
//! wants considered).
//!
//! # Where each part is
//! `usage.rs`: usage and how it decays, kept per user, project and user-in-project (step 1).
//! `tree.rs`: the configured tree and the lookup of a job's node. `tickets.rs`: the pass
//! (steps 2 to 5), its policy parameters, its reports, and the cache that carries what a pass
//! derives from its jobs to the next. `tests.rs`: the figures checked against SGE's.

mod tickets;
mod tree;
mod usage;

pub use tickets::{
    SGE_MIN_USAGE, ShareTreeCache, ShareTreeNodeReport, ShareTreePolicy, ShareTreeTickets,
    TicketJob,
};
pub use tree::{DEFAULT_USER_NODE, ShareTree, ShareTreeNodeSpec};
pub use usage::{
    DecayConfig, USAGE_INTERVAL_SECS, Usage, UsageRecord, UsageStore, UsageWeights, decay_constant,
};

#[cfg(test)]
mod tests;
