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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a: the name lookups run once per job per pass (100,000 jobs), and SipHash's
/// flooding resistance buys nothing for configured user and project names.
#[derive(Default)]
struct Fnv1a(u64);

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A multiply-rotate hash over whole words (FxHash's), for keys that are already integers.
#[derive(Default)]
struct WordHash(u64);

impl WordHash {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

type NameMap<V> = HashMap<String, V, BuildHasherDefault<Fnv1a>>;

/// SGE's `SGE_MIN_USAGE`: usage below `1.0 × oltt` counts as that much, so that a node without
/// usage does not get an infinite short-term target.
pub const SGE_MIN_USAGE: f64 = 1.0;

/// SGE's `SGE_USAGE_INTERVAL`: decay constants are per 60 seconds.
pub const USAGE_INTERVAL_SECS: f64 = 60.0;

/// The name of the share-tree leaf that stands for every user without a node of their own
/// (`share_tree(5)`).
pub const DEFAULT_USER_NODE: &str = "default";

/// A node of the share tree as configured (`qconf -sstree`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareTreeNodeSpec {
    /// Node name: a user or project name for leaves, anything for groups; `Root` by convention
    /// for the root.
    pub name: String,
    /// Shares among the node's siblings.
    pub shares: u32,
    /// Child nodes in configuration order (order matters for SGE's name lookup and ties).
    pub children: Vec<ShareTreeNodeSpec>,
}

impl ShareTreeNodeSpec {
    /// A leaf node.
    pub fn leaf(name: &str, shares: u32) -> Self {
        Self {
            name: name.to_string(),
            shares,
            children: Vec::new(),
        }
    }

    /// An inner node.
    pub fn group(name: &str, shares: u32, children: Vec<ShareTreeNodeSpec>) -> Self {
        Self {
            name: name.to_string(),
            shares,
            children,
        }
    }
}

/// Resource usage of the three kinds SGE's share tree accounts (`sched_conf(5)`
/// `usage_weight_list`): CPU seconds, memory (GB·s) and IO.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Usage {
    fn scaled(self, f: [f64; 3]) -> Self {
        Self {
            cpu: self.cpu * f[0],
            mem: self.mem * f[1],
            io: self.io * f[2],
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            cpu: self.cpu + o.cpu,
            mem: self.mem + o.mem,
            io: self.io + o.io,
        }
    }
}

/// `usage_weight_list` (`sched_conf(5)`), default `cpu=1,mem=0,io=0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageWeights {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Default for UsageWeights {
    fn default() -> Self {
        Self {
            cpu: 1.0,
            mem: 0.0,
            io: 0.0,
        }
    }
}

impl UsageWeights {
    /// The single usage value: each kind times its weight over the sum of weights (SGE divides
    /// by the sum, so weights need not add up to 1 as the man page suggests). Zero weights give 0.
    pub fn combine(&self, u: &Usage) -> f64 {
        let sum = self.cpu + self.mem + self.io;
        if sum <= 0.0 {
            return 0.0;
        }
        u.cpu * (self.cpu / sum) + u.mem * (self.mem / sum) + u.io * (self.io / sum)
    }
}

/// How usage ages (`sched_conf(5)` `halftime` and `halflife_decay_list`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecayConfig {
    /// `halftime` in hours; 0 means "not decayed". Default 168.
    pub halftime_hours: f64,
    /// `halflife_decay_list` per kind, in minutes: `Some(-1)` keeps only the usage of running
    /// jobs (past usage vanishes at the next decay), `Some(0)` no decay, `None` uses `halftime`.
    pub halflife_minutes: [Option<f64>; 3],
}

impl Default for DecayConfig {
    fn default() -> Self {
        Self {
            halftime_hours: 168.0,
            halflife_minutes: [None; 3],
        }
    }
}

/// SGE's `calculate_decay_constant` for a half-life in minutes: the fraction of usage left
/// after one 60-second usage interval. Negative half-life gives 0, zero gives 1 (no decay).
pub fn decay_constant(halflife_minutes: f64) -> f64 {
    if halflife_minutes < 0.0 {
        0.0
    } else if halflife_minutes == 0.0 {
        1.0
    } else {
        let rate = -(0.5_f64.ln()) / (halflife_minutes * 60.0);
        1.0 - rate * USAGE_INTERVAL_SECS
    }
}

impl DecayConfig {
    /// The factors by which cpu, mem and io usage shrink over `elapsed_secs` (SGE's
    /// `decay_usage`: `constant^(elapsed / 60)`).
    pub fn factors(&self, elapsed_secs: f64) -> [f64; 3] {
        let default = decay_constant(self.halftime_hours * 60.0);
        let mut out = [1.0; 3];
        for (k, slot) in out.iter_mut().enumerate() {
            let c = self.halflife_minutes[k].map_or(default, decay_constant);
            *slot = c.powf(elapsed_secs / USAGE_INTERVAL_SECS);
        }
        out
    }
}

/// The usage SGE keeps for one user, project or user-in-project.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageRecord {
    /// Decayed usage as of `stamp`.
    pub usage: Usage,
    /// Undecayed total (`ltcpu`, `ltmem`, `ltio` in `sge_share_mon`).
    pub long_term: Usage,
    /// When `usage` was last decayed, seconds since the epoch.
    pub stamp: Option<i64>,
}

impl UsageRecord {
    /// The decayed usage as seen at `now` (no mutation).
    pub fn usage_at(&self, now: i64, decay: &DecayConfig) -> Usage {
        match self.stamp {
            Some(s) if now > s => self.usage.scaled(decay.factors((now - s) as f64)),
            _ => self.usage,
        }
    }

    fn decay_to(&mut self, now: i64, decay: &DecayConfig) {
        self.usage = self.usage_at(now, decay);
        self.stamp = Some(match self.stamp {
            Some(s) => s.max(now),
            None => now,
        });
    }

    fn add(&mut self, u: Usage, at: i64, decay: &DecayConfig) {
        self.decay_to(at, decay);
        self.usage = self.usage.plus(u);
        self.long_term = self.long_term.plus(u);
    }
}

/// Accumulated usage, keyed as SGE keys it (`user(5)` and `project(5)` usage lists).
#[derive(Debug, Clone, Default)]
pub struct UsageStore {
    users: HashMap<String, UsageRecord>,
    projects: HashMap<String, UsageRecord>,
    user_projects: HashMap<(String, String), UsageRecord>,
}

impl UsageStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Debits usage a job of `user` (and `project`) consumed, reported at `at`.
    ///
    /// Like SGE's `update_userprj_usage`: usage of a job with a project goes to the project and
    /// to the user's sub-record for that project, *not* to the user's own record; usage of a job
    /// without a project goes to the user's record. Existing usage is first decayed to `at`, so
    /// the store stays correct whatever the order of calls for different keys.
    pub fn add_usage(
        &mut self,
        user: &str,
        project: Option<&str>,
        usage: Usage,
        at: i64,
        decay: &DecayConfig,
    ) {
        match project {
            Some(p) => {
                self.user_projects
                    .entry((user.to_string(), p.to_string()))
                    .or_default()
                    .add(usage, at, decay);
                self.projects
                    .entry(p.to_string())
                    .or_default()
                    .add(usage, at, decay);
                // The user object exists even if all its usage is in projects.
                self.users.entry(user.to_string()).or_default();
            }
            None => self
                .users
                .entry(user.to_string())
                .or_default()
                .add(usage, at, decay),
        }
    }

    /// Sets a record outright (loading persisted state, or tests replaying `sge_share_mon`).
    pub fn set_user(&mut self, user: &str, record: UsageRecord) {
        self.users.insert(user.to_string(), record);
    }

    /// Sets a project's record.
    pub fn set_project(&mut self, project: &str, record: UsageRecord) {
        self.projects.insert(project.to_string(), record);
    }

    /// Sets a user's record within a project.
    pub fn set_user_in_project(&mut self, user: &str, project: &str, record: UsageRecord) {
        self.user_projects
            .insert((user.to_string(), project.to_string()), record);
    }

    /// A user's own record (jobs without project).
    /// Every user's record (for reports: `sched_d --metrics`).
    pub fn users(&self) -> impl Iterator<Item = (&str, &UsageRecord)> {
        self.users.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Every project's record.
    pub fn projects(&self) -> impl Iterator<Item = (&str, &UsageRecord)> {
        self.projects.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn user(&self, user: &str) -> Option<&UsageRecord> {
        self.users.get(user)
    }

    /// A project's record.
    pub fn project(&self, project: &str) -> Option<&UsageRecord> {
        self.projects.get(project)
    }

    /// A user's record within a project.
    pub fn user_in_project(&self, user: &str, project: &str) -> Option<&UsageRecord> {
        self.user_projects
            .get(&(user.to_string(), project.to_string()))
    }
}

#[derive(Debug, Clone)]
struct TreeNode {
    name: String,
    shares: u32,
    parent: Option<usize>,
    children: Vec<usize>,
    /// The name is a configured project.
    is_project: bool,
    /// The outermost project node on the path from the root, excluding this node: the
    /// project whose usage sub-records this node's leaves read (`sge_calc_node_usage`).
    project_context: Option<usize>,
}

/// A configured share tree with the lookups SGE's `search_userprj_node` performs, precomputed so
/// that mapping a job to its node costs one hash lookup.
#[derive(Debug, Clone)]
pub struct ShareTree {
    nodes: Vec<TreeNode>,
    /// User name → node, searching outside project subtrees (depth-first, configuration order).
    users: NameMap<usize>,
    /// The `default` node outside project subtrees.
    default_user: Option<usize>,
    /// Project name → project node.
    projects: NameMap<usize>,
    /// Project node → (user → node inside that project's subtree).
    project_users: HashMap<usize, NameMap<usize>>,
    /// Project node → its `default` user node.
    project_defaults: HashMap<usize, usize>,
    /// Which tree this is, for a [`ShareTreeCache`]: what it keeps (nodes, temporary nodes)
    /// is only valid for the tree it was built from. A clone is the same tree.
    id: u64,
}

/// Source of [`ShareTree::id`].
static NEXT_TREE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// What a share-tree pass derives from its jobs alone, kept for the next pass over the same
/// jobs ([`ShareTree::job_tickets_cached`]).
///
/// A scheduler recomputes every priority each tick although, between two ticks, usually
/// only time has passed: the node of each job (a name lookup per job), the tree's temporary
/// user nodes and the jobs laid out and sorted under each node are the same, and only usage,
/// the node targets and the tickets (which depend on usage decayed to `now`) change. The
/// cache keeps the former. Nothing is trusted: each pass checks every job against what is
/// kept (its user and project names, id, task, running or pending, and the values it is
/// sorted by) and rebuilds what differs, so no event needs to invalidate it; a cache
/// built for another tree (a reloaded configuration) is dropped.
#[derive(Debug, Clone, Default)]
pub struct ShareTreeCache {
    kept: Option<Kept>,
}

impl ShareTreeCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets everything kept.
    pub fn clear(&mut self) {
        self.kept = None;
    }
}

#[derive(Debug, Clone)]
struct Kept {
    tree: u64,
    /// (user, project, node) of the jobs, one entry per name pair seen.
    pairs: Vec<(String, Option<String>, Option<usize>)>,
    /// The pair of each job of the pass (by its index in the job list).
    job_pair: Vec<u32>,
    /// The node of each job of the pass, [`NO_NODE`] for none (its pair's node).
    job_node: Vec<u32>,
    /// The pass tree after the node lookups: shares, children (temporary nodes included)
    /// and the count of jobs directly at each node.
    pn: Vec<PassNode>,
    /// The temporary user nodes: (user name, the `default` node it copies).
    temp: Vec<(String, usize)>,
    /// The job nodes as the last pass left them, when it sorted no node with children
    /// (a flat tree, the common case): every node's slice still holds its own jobs, the
    /// childless nodes' slices in their order (their sort keys do not depend on the
    /// targets, so the next pass mostly finds them sorted).
    layout: Option<JobLayout>,
}

impl ShareTree {
    /// Builds the tree. `project_names` are the configured projects (`qconf -sprjl`): SGE
    /// treats a node as a project node when its name is one.
    pub fn new(root: &ShareTreeNodeSpec, project_names: &[&str]) -> Self {
        let mut nodes = Vec::new();
        // Iterative pre-order build keeping configuration order.
        let mut stack: Vec<(&ShareTreeNodeSpec, Option<usize>)> = vec![(root, None)];
        while let Some((spec, parent)) = stack.pop() {
            let idx = nodes.len();
            let is_project = project_names.contains(&spec.name.as_str());
            let project_context = parent.and_then(|p: usize| {
                let pn: &TreeNode = &nodes[p];
                pn.project_context
                    .or(if pn.is_project { Some(p) } else { None })
            });
            nodes.push(TreeNode {
                name: spec.name.clone(),
                shares: spec.shares,
                parent,
                children: Vec::new(),
                is_project,
                project_context,
            });
            if let Some(p) = parent {
                nodes[p].children.push(idx);
            }
            for child in spec.children.iter().rev() {
                stack.push((child, Some(idx)));
            }
        }
        let mut tree = Self {
            nodes,
            users: NameMap::default(),
            default_user: None,
            projects: NameMap::default(),
            project_users: HashMap::new(),
            project_defaults: HashMap::new(),
            id: NEXT_TREE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        tree.index();
        tree
    }

    /// Precomputes `search_userprj_node`: first match in depth-first pre-order, not descending
    /// into project nodes other than the one searched for.
    fn index(&mut self) {
        let mut users = NameMap::default();
        let mut projects = NameMap::default();
        // Outside projects.
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i];
            if n.is_project && i != 0 {
                projects.entry(n.name.clone()).or_insert(i);
                continue;
            }
            users.entry(n.name.clone()).or_insert(i);
            for &c in n.children.iter().rev() {
                stack.push(c);
            }
        }
        let mut project_users: HashMap<usize, NameMap<usize>> = HashMap::new();
        let mut project_defaults = HashMap::new();
        for &p in projects.values() {
            let inside = project_users.entry(p).or_default();
            let mut stack: Vec<usize> = self.nodes[p].children.iter().rev().copied().collect();
            while let Some(i) = stack.pop() {
                let n = &self.nodes[i];
                if n.is_project {
                    continue;
                }
                if n.name == DEFAULT_USER_NODE {
                    project_defaults.entry(p).or_insert(i);
                }
                inside.entry(n.name.clone()).or_insert(i);
                for &c in n.children.iter().rev() {
                    stack.push(c);
                }
            }
        }
        self.default_user = users.get(DEFAULT_USER_NODE).copied();
        self.users = users;
        self.projects = projects;
        self.project_users = project_users;
        self.project_defaults = project_defaults;
    }

    /// Number of configured nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree is only a root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// The node a job of `user` (in `project`, if the job has a configured project) draws on:
    /// `Found(node)`, `Default(node)` for a `default` node (the user gets a sibling copy), or
    /// `None` (no share-tree tickets).
    fn locate(&self, user: &str, project: Option<&str>) -> Located {
        match project {
            Some(p) => {
                let Some(&pn) = self.projects.get(p) else {
                    // SGE: a project not in the tree means no node, even if the user has one.
                    return Located::None;
                };
                if self.nodes[pn].children.is_empty() {
                    return Located::Found(pn);
                }
                match self.project_users.get(&pn).and_then(|m| m.get(user)) {
                    Some(&n) if user != DEFAULT_USER_NODE => Located::Found(n),
                    _ => match self.project_defaults.get(&pn) {
                        Some(&d) => Located::Default(d),
                        None => Located::None,
                    },
                }
            }
            None => match self.users.get(user) {
                Some(&n) if user != DEFAULT_USER_NODE => Located::Found(n),
                _ => match self.default_user {
                    Some(d) => Located::Default(d),
                    None => Located::None,
                },
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Located {
    Found(usize),
    Default(usize),
    None,
}

/// Scheduler configuration for the share-tree policy (`sched_conf(5)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShareTreePolicy {
    /// `weight_tickets_share`: tickets to distribute.
    pub weight_tickets_share: f64,
    /// `compensation_factor`, default 5; 0 disables compensation.
    pub compensation_factor: f64,
    /// `usage_weight_list`.
    pub usage_weights: UsageWeights,
    /// `halftime` and `halflife_decay_list`.
    pub decay: DecayConfig,
    /// Whether the share-tree policy follows another in `policy_hierarchy` (the default "OFS"),
    /// so that pending jobs are ordered by the tickets of the policies before it.
    pub dependent: bool,
}

impl Default for ShareTreePolicy {
    fn default() -> Self {
        Self {
            weight_tickets_share: 0.0,
            compensation_factor: 5.0,
            usage_weights: UsageWeights::default(),
            decay: DecayConfig::default(),
            dependent: true,
        }
    }
}

/// One job (or array task) the pass considers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TicketJob<'a> {
    pub job_id: u64,
    pub task_id: u64,
    pub user: &'a str,
    /// The job's project, only if it is a configured project (SGE ignores unknown ones).
    pub project: Option<&'a str>,
    /// Running (or transferring) rather than pending.
    pub running: bool,
    /// `-js` job share; 0 normally.
    pub jobshare: u32,
    /// The lowest slot count of the job's PE range (1 for sequential jobs): how much a job
    /// ahead "dilutes" the entitlement of the jobs behind it.
    pub pe_min_slots: u32,
    /// Tickets from the policies before the share tree in `policy_hierarchy`.
    pub higher_policy_tickets: f64,
}

impl<'a> TicketJob<'a> {
    /// A pending sequential job without project.
    pub fn pending(job_id: u64, user: &'a str) -> Self {
        Self {
            job_id,
            task_id: 1,
            user,
            project: None,
            running: false,
            jobshare: 0,
            pe_min_slots: 1,
            higher_policy_tickets: 0.0,
        }
    }

    /// A running sequential job without project.
    pub fn running(job_id: u64, user: &'a str) -> Self {
        Self {
            running: true,
            ..Self::pending(job_id, user)
        }
    }
}

/// What one share-tree node looked like in a pass: the columns of `sge_share_mon(1)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareTreeNodeReport {
    /// `/`-separated path below the root, `/` for the root (`node_name`).
    pub path: String,
    pub shares: u32,
    /// Jobs below the node (`job_count`).
    pub job_count: u64,
    /// Shares over all siblings' shares (`level%`).
    pub level: f64,
    /// Product of `level` down the path (`total%`).
    pub total: f64,
    /// Long-term target among the whole tree, over active nodes (`long_target_share`).
    pub long_target_share: f64,
    /// Short-term target after compensation (`short_target_share`).
    pub short_target_share: f64,
    /// Node usage over the root's usage (`actual_share`).
    pub actual_share: f64,
    /// Combined decayed usage (`usage`).
    pub usage: f64,
    /// Decayed usage per kind (`cpu`, `mem`, `io`).
    pub usage_by_kind: Usage,
}

/// Result of [`ShareTree::tickets`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShareTreeTickets {
    /// Share-tree tickets per job (`stckt`), in the order of the jobs passed. Pending jobs get
    /// the pending-job ordering; running jobs get their share of their node's entitlement
    /// computed over running jobs only, as SGE's second ticket pass does.
    pub stckt: Vec<f64>,
    /// Running jobs' tickets from the first pass (which counted pending jobs too); pending jobs'
    /// are as in `stckt`. Only the ticket range (`max_tickets`) uses these.
    pub first_pass_stckt: Vec<f64>,
    /// The largest ticket amount SGE saw in either pass (running jobs' first-pass tickets count
    /// too), which is the range `ntckts` normalises over: pass it to
    /// [`crate::sge::PriorityPass::max_tickets`].
    pub max_tickets: f64,
    /// Each job's tickets over the sum of the tickets of jobs in the same state (the qstat
    /// `share` column); 0 for jobs without tickets. Empty from [`ShareTree::job_tickets`]
    /// and [`ShareTree::job_tickets_cached`] (a scheduling pass sums all its tickets).
    pub share: Vec<f64>,
    /// Per-node figures of the pass that included pending jobs.
    pub nodes: Vec<ShareTreeNodeReport>,
}

/// Pass-local node: configured nodes first, then temporary copies of `default` nodes.
#[derive(Debug, Clone, Default)]
struct PassNode {
    shares: f64,
    children: Vec<usize>,
    job_count: u64,
    usage: f64,
    usage_by_kind: Usage,
    ltt: f64,
    oltt: f64,
    stt: f64,
    ostt: f64,
    shr: f64,
}

#[derive(Debug, Clone, Copy)]
struct JobNode {
    sort: f64,
    tickets: f64,
    shr: f64,
    job_id: u64,
    /// Task number; SGE's are 32-bit.
    task_id: u32,
    /// Index into the pass's job list, with [`PENDING_BIT`] set for pending jobs.
    job: u32,
    /// How much the job dilutes the entitlement of the jobs behind it: the lowest slot
    /// count of its PE range, at least 1 (kept here so that the dilution walk reads no job).
    slots: u32,
}

/// Marks a pending job in [`JobNode::job`], so that the node stays 48 bytes.
const PENDING_BIT: u32 = 1 << 31;

/// A job without a node in [`Kept::job_node`].
const NO_NODE: u32 = u32::MAX;

impl JobNode {
    /// The same entry, bit for bit, in everything the pending jobs' sort and dilution read
    /// (`shr` is written by the dilution).
    fn same_entry(&self, o: &JobNode) -> bool {
        self.sort.to_bits() == o.sort.to_bits()
            && self.tickets.to_bits() == o.tickets.to_bits()
            && self.job_id == o.job_id
            && self.task_id == o.task_id
            && self.job == o.job
            && self.slots == o.slots
    }

    fn pending(&self) -> bool {
        self.job & PENDING_BIT != 0
    }

    fn index(&self) -> usize {
        (self.job & !PENDING_BIT) as usize
    }
}

/// Job nodes of a pass laid out so that every tree node's subtree is one contiguous slice
/// (`range[node]`), sorted in place level by level: no per-level lists, no allocation.
#[derive(Debug, Clone)]
struct JobLayout {
    nodes: Vec<JobNode>,
    range: Vec<(usize, usize)>,
    own: Vec<usize>,
    /// Each job's entry as the nodes were laid out and sorted with, in job order: a pass
    /// whose jobs all have these entries again finds every slice in order and sorts none.
    entries: Vec<JobNode>,
}

impl ShareTree {
    /// Computes share-tree tickets for one scheduling pass over `jobs` (running and pending),
    /// with usage as of `now`.
    ///
    /// Cost: O(N log N + tree size), one hash lookup per job; no per-job tree walks.
    pub fn tickets(
        &self,
        usage: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
        jobs: &[TicketJob<'_>],
    ) -> ShareTreeTickets {
        self.tickets_with(usage, policy, now, jobs, true, None)
    }

    /// [`ShareTree::tickets`] without the per-node report and the shares (`nodes` and `share`
    /// are empty): the same tickets, for a scheduling pass that does not show
    /// `sge_share_mon`'s figures (the report formats a path for every node, temporary user
    /// nodes included).
    pub fn job_tickets(
        &self,
        usage: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
        jobs: &[TicketJob<'_>],
    ) -> ShareTreeTickets {
        self.tickets_with(usage, policy, now, jobs, false, None)
    }

    /// [`ShareTree::job_tickets`], reusing from `cache` what the last pass derived from the
    /// same jobs (see [`ShareTreeCache`]): the same tickets, bit for bit.
    pub fn job_tickets_cached(
        &self,
        usage: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
        jobs: &[TicketJob<'_>],
        cache: &mut ShareTreeCache,
    ) -> ShareTreeTickets {
        self.tickets_with(usage, policy, now, jobs, false, Some(cache))
    }

    fn tickets_with(
        &self,
        usage: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
        jobs: &[TicketJob<'_>],
        report: bool,
        cache: Option<&mut ShareTreeCache>,
    ) -> ShareTreeTickets {
        let n = jobs.len();
        let mut stckt = vec![0.0; n];
        let mut max_tickets: f64 = -1.0;
        // Pass 1: running and pending together (pending jobs' tickets, running jobs' first
        // values which only count towards the ticket range).
        let (first, nodes) = self.pass(usage, policy, now, jobs, None, report, cache);
        // One walk over the jobs finds the range, the pending jobs' final tickets and their
        // sum, and the running jobs (the sums are taken in job order, as one walk per state
        // would).
        let mut running: Vec<usize> = Vec::new();
        let (mut sum_running, mut sum_pending) = (0.0, 0.0);
        for (j, (job, &t)) in jobs.iter().zip(&first).enumerate() {
            max_tickets = max_tickets.max(t + job.higher_policy_tickets);
            if job.running {
                running.push(j);
            } else {
                stckt[j] = t;
                sum_pending += t + job.higher_policy_tickets;
            }
        }
        let first_pass_stckt = first;
        // Pass 2: running jobs only ("correct the shares for the running jobs").
        if !running.is_empty() {
            let (second, _) = self.pass(usage, policy, now, jobs, Some(&running), false, None);
            for (&j, &t) in running.iter().zip(&second) {
                stckt[j] = t;
                max_tickets = max_tickets.max(t + jobs[j].higher_policy_tickets);
            }
        }
        for &j in &running {
            sum_running += stckt[j] + jobs[j].higher_policy_tickets;
        }
        let max_tickets = max_tickets.max(0.0);
        // Only the report shows it (a scheduling pass computes its share of all tickets).
        let share = if !report {
            Vec::new()
        } else {
            jobs.iter()
                .enumerate()
                .map(|(j, job)| {
                    let t = stckt[j] + job.higher_policy_tickets;
                    let sum = if job.running {
                        sum_running
                    } else {
                        sum_pending
                    };
                    if t > 0.0 { t / sum } else { 0.0 }
                })
                .collect()
        };
        ShareTreeTickets {
            stckt,
            first_pass_stckt,
            max_tickets,
            share,
            nodes,
        }
    }

    /// One `sge_calc_tickets` share-tree pass over the jobs `which` (all of them, in order,
    /// for `None`); returns their tickets in that order and the node report.
    #[allow(clippy::too_many_arguments)]
    fn pass(
        &self,
        store: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
        jobs: &[TicketJob<'_>],
        which: Option<&[usize]>,
        report: bool,
        cache: Option<&mut ShareTreeCache>,
    ) -> (Vec<f64>, Vec<ShareTreeNodeReport>) {
        let total_tickets = policy.weight_tickets_share;
        let count = which.map_or(jobs.len(), <[usize]>::len);
        let job_of = |k: usize| which.map_or(k, |w| w[k]);
        // What the last pass over the same jobs kept, if it was for this tree and for all
        // the jobs.
        let mut cache = cache.filter(|_| which.is_none());
        let kept = cache
            .as_deref_mut()
            .and_then(|c| c.kept.take())
            .filter(|k| k.tree == self.id && kept_names_match(k, jobs));
        let (mut pn, mut kept) = match kept {
            Some(k) => (k.pn.clone(), k),
            None => self.job_nodes(jobs, which),
        };
        let temp = &kept.temp;
        let configured = self.nodes.len();
        // Each job as the pending jobs' sort sees it.
        let entry = |k: usize| {
            let job = &jobs[job_of(k)];
            let (t, sort) = if policy.dependent {
                (
                    job.higher_policy_tickets,
                    job.higher_policy_tickets + 0.01 * f64::from(job.jobshare),
                )
            } else {
                (0.0, f64::from(job.jobshare))
            };
            JobNode {
                sort,
                tickets: t,
                shr: 0.0,
                job_id: job.job_id,
                task_id: u32::try_from(job.task_id).unwrap_or(u32::MAX),
                job: k as u32 | if job.running { 0 } else { PENDING_BIT },
                slots: job.pe_min_slots.max(1),
            }
        };
        // One walk over the jobs: the running ones with a node (they are few next to the
        // pending ones), whether any is pending, and whether every job's entry is the one
        // the kept layout was sorted with (then every slice is still in order).
        let mut running: Vec<(usize, usize, usize)> = Vec::new();
        let mut any_pending = false;
        let mut same_entries = false;
        if total_tickets > 0.0 {
            let kept_entries = kept
                .layout
                .as_ref()
                .map(|l| &l.entries[..])
                .filter(|e| e.len() == count);
            same_entries = kept_entries.is_some();
            for k in 0..count {
                let j = job_of(k);
                let node = kept.job_node[k];
                if !jobs[j].running {
                    any_pending = true;
                } else if node != NO_NODE {
                    running.push((k, j, node as usize));
                }
                if same_entries {
                    same_entries = kept_entries.is_some_and(|e| e[k].same_entry(&entry(k)));
                }
            }
        }
        // Usage and job counts bottom-up (post-order over the pass tree).
        let order = post_order(&pn);
        for &i in &order {
            if !pn[i].children.is_empty() {
                let count = pn[i].children.iter().map(|&c| pn[c].job_count).sum();
                pn[i].job_count = count;
            }
            let (usage, by_kind) = self.node_usage(i, configured, temp, &pn, store, policy, now);
            pn[i].usage = usage;
            pn[i].usage_by_kind = by_kind;
        }
        // Targets top-down.
        pn[0].stt = 1.0;
        pn[0].ltt = 1.0;
        pn[0].ostt = 1.0;
        pn[0].oltt = 1.0;
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            calc_node_targets(&mut pn, i, policy.compensation_factor);
            for &c in pn[i].children.iter().rev() {
                if pn[c].job_count > 0 {
                    stack.push(c);
                }
            }
        }
        let mut tickets = vec![0.0; count];
        // Running jobs: node's overall short-term target over its jobs (pass 2 of sgeee.c).
        if total_tickets > 0.0 {
            let mut sum_priority: Vec<u64> = vec![0; pn.len()];
            for &(_, j, i) in &running {
                sum_priority[i] += u64::from(jobs[j].jobshare);
            }
            for (k, j, i) in running {
                let node_tickets = pn[i].ostt * total_tickets;
                let sp = sum_priority[i];
                tickets[k] = if pn[i].job_count == 0 {
                    0.0
                } else if sp > 0 {
                    // SGE truncates to an integer here (u_long cast).
                    (f64::from(jobs[j].jobshare) * node_tickets / sp as f64).trunc()
                } else {
                    node_tickets / pn[i].job_count as f64
                };
            }
        }
        // Pending jobs: sorted job nodes.
        if total_tickets > 0.0 && any_pending {
            let mut layout = match kept.layout.take() {
                // Every job has the entry the kept layout was sorted with: each slice is in
                // order (only `shr` and `sort`, which the dilution below writes afresh,
                // differ from the entries).
                Some(layout) if same_entries => layout,
                Some(mut layout) => {
                    // The same jobs at the same nodes (checked above), and the last pass
                    // sorted no node with children: each node's slice holds its own jobs,
                    // childless nodes' in the last pass's order. Every entry is written
                    // afresh from its job (which may have started, ended, or changed its
                    // job share or higher-policy tickets); the sort below finds a slice
                    // whose jobs did not change in order, in one scan.
                    layout.entries.clear();
                    layout.entries.extend((0..count).map(entry));
                    for jn in layout.nodes.iter_mut() {
                        *jn = layout.entries[jn.index()];
                    }
                    layout
                }
                None => {
                    let entries: Vec<JobNode> = (0..count).map(entry).collect();
                    self.lay_out(&pn, &order, &kept.job_node, entries)
                }
            };
            let mut mixed = false;
            let root = sort_job_nodes(
                &pn,
                &mut layout,
                0,
                0,
                total_tickets,
                same_entries,
                &mut mixed,
            );
            let (start, end) = layout.range[root];
            for jn in &layout.nodes[start..end] {
                if jn.pending() {
                    tickets[jn.index()] = jn.shr * total_tickets;
                }
            }
            // Kept for the next pass unless sorting a node with children mixed the slices
            // (deeper trees: the next pass lays the jobs out again, from the kept nodes).
            if !mixed {
                kept.layout = Some(layout);
            }
        }
        let report = if report {
            self.report(&pn, configured, temp)
        } else {
            Vec::new()
        };
        if let Some(c) = cache {
            c.kept = Some(kept);
        }
        (tickets, report)
    }

    /// The node of each job (`job_node[k]` for `jobs[which[k]]`) by name lookups, with the
    /// pass tree (temporary user nodes added for `default` nodes, each node's direct job
    /// count) and what a [`ShareTreeCache`] keeps of them (the nodes in [`Kept::job_node`]).
    fn job_nodes(&self, jobs: &[TicketJob<'_>], which: Option<&[usize]>) -> (Vec<PassNode>, Kept) {
        let count = which.map_or(jobs.len(), <[usize]>::len);
        // Pass-local copy of the tree, plus temporary user nodes for `default` nodes.
        let mut pn: Vec<PassNode> = self
            .nodes
            .iter()
            .map(|t| PassNode {
                shares: f64::from(t.shares),
                children: t.children.clone(),
                ..PassNode::default()
            })
            .collect();
        // For temporary nodes: (user name, the default node it copies).
        let mut temp: Vec<(String, usize)> = Vec::new();
        let mut temp_index: HashMap<(usize, &str), usize, BuildHasherDefault<Fnv1a>> =
            HashMap::default();
        let mut job_node: Vec<u32> = Vec::with_capacity(count);
        let mut pairs: Vec<(String, Option<String>, Option<usize>)> = Vec::new();
        let mut job_pair: Vec<u32> = Vec::with_capacity(count);
        // The node and pair of each (user, project) string pair seen, by address: callers
        // pass the same interned strings for the jobs of one owner, so most jobs cost one
        // word hash instead of two string hashes. Equal strings at other addresses only miss
        // the memo.
        let mut memo: HashMap<NameKey, (Option<usize>, u32), BuildHasherDefault<WordHash>> =
            HashMap::default();
        let node_word = |node: Option<usize>| node.map_or(NO_NODE, |i| i as u32);
        for k in 0..count {
            let job = &jobs[which.map_or(k, |w| w[k])];
            let key = name_key(job);
            if let Some(&(node, pair)) = memo.get(&key) {
                if let Some(i) = node {
                    pn[i].job_count += 1;
                }
                job_node.push(node_word(node));
                job_pair.push(pair);
                continue;
            }
            let node = match self.locate(job.user, job.project) {
                Located::Found(i) => Some(i),
                Located::Default(d) => {
                    let idx = *temp_index.entry((d, job.user)).or_insert_with(|| {
                        let idx = pn.len();
                        pn.push(PassNode {
                            shares: f64::from(self.nodes[d].shares),
                            ..PassNode::default()
                        });
                        if let Some(p) = self.nodes[d].parent {
                            pn[p].children.push(idx);
                        }
                        temp.push((job.user.to_string(), d));
                        idx
                    });
                    Some(idx)
                }
                Located::None => None,
            };
            if let Some(i) = node {
                pn[i].job_count += 1;
            }
            job_node.push(node_word(node));
            let pair = pairs.len() as u32;
            pairs.push((job.user.to_string(), job.project.map(str::to_string), node));
            job_pair.push(pair);
            memo.insert(key, (node, pair));
        }
        let kept = Kept {
            tree: self.id,
            pairs,
            job_pair,
            job_node,
            pn: pn.clone(),
            temp,
            layout: None,
        };
        (pn, kept)
    }

    /// The job nodes laid out so that each node's subtree is one slice, jobs directly at a
    /// node first, in job order; `entries[k]` is job `k`'s node.
    fn lay_out(
        &self,
        pn: &[PassNode],
        order: &[usize],
        job_node: &[u32],
        entries: Vec<JobNode>,
    ) -> JobLayout {
        // Jobs directly at each node, then subtree sizes and pre-order offsets.
        let mut own = vec![0usize; pn.len()];
        for &n in job_node.iter().filter(|&&n| n != NO_NODE) {
            own[n as usize] += 1;
        }
        let mut size = own.clone();
        for &i in order {
            for &c in &pn[i].children {
                size[i] += size[c];
            }
        }
        let mut range = vec![(0usize, 0usize); pn.len()];
        let mut cursor = vec![0usize; pn.len()];
        let mut stack = vec![(0usize, 0usize)];
        while let Some((i, start)) = stack.pop() {
            range[i] = (start, start + size[i]);
            cursor[i] = start;
            let mut next = start + own[i];
            for &c in &pn[i].children {
                stack.push((c, next));
                next += size[c];
            }
        }
        let placeholder = JobNode {
            sort: 0.0,
            tickets: 0.0,
            shr: 0.0,
            job_id: 0,
            task_id: 0,
            job: 0,
            slots: 1,
        };
        let mut nodes = vec![placeholder; size[0]];
        for (k, &node) in job_node.iter().enumerate() {
            if node == NO_NODE {
                continue;
            }
            let i = node as usize;
            nodes[cursor[i]] = entries[k];
            cursor[i] += 1;
        }
        JobLayout {
            nodes,
            range,
            own,
            entries,
        }
    }

    /// `sge_calc_node_usage` for one node, children already done.
    #[allow(clippy::too_many_arguments)]
    fn node_usage(
        &self,
        i: usize,
        configured: usize,
        temp: &[(String, usize)],
        pn: &[PassNode],
        store: &UsageStore,
        policy: &ShareTreePolicy,
        now: i64,
    ) -> (f64, Usage) {
        let decay = &policy.decay;
        let w = &policy.usage_weights;
        let (name, context, is_project) = if i < configured {
            let t = &self.nodes[i];
            (t.name.as_str(), t.project_context, t.is_project)
        } else {
            let (user, d) = &temp[i - configured];
            (user.as_str(), self.nodes[*d].project_context, false)
        };
        let record =
            |r: Option<&UsageRecord>| r.map(|r| r.usage_at(now, decay)).unwrap_or_default();
        if pn[i].children.is_empty() {
            let u = match context {
                Some(p) => record(store.user_in_project(name, &self.nodes[p].name)),
                None => match store.user(name) {
                    Some(r) => r.usage_at(now, decay),
                    None => record(store.project(name)),
                },
            };
            return (w.combine(&u), u);
        }
        if context.is_none() && is_project {
            let u = record(store.project(name));
            return (w.combine(&u), u);
        }
        let mut sum = 0.0;
        let mut by_kind = Usage::default();
        for &c in &pn[i].children {
            sum += pn[c].usage;
            by_kind = by_kind.plus(pn[c].usage_by_kind);
        }
        (sum, by_kind)
    }

    fn report(
        &self,
        pn: &[PassNode],
        configured: usize,
        temp: &[(String, usize)],
    ) -> Vec<ShareTreeNodeReport> {
        let root_usage = pn[0].usage;
        let mut out = Vec::with_capacity(pn.len());
        // (node, path, level%, total%), pre-order.
        let mut stack: Vec<(usize, String, f64, f64)> = vec![(0, "/".to_string(), 1.0, 1.0)];
        while let Some((i, path, level, total)) = stack.pop() {
            let sib_shares: f64 = pn[i].children.iter().map(|&c| pn[c].shares).sum();
            for &c in pn[i].children.iter().rev() {
                let name = if c < configured {
                    self.nodes[c].name.as_str()
                } else {
                    temp[c - configured].0.as_str()
                };
                let child_level = if sib_shares > 0.0 {
                    pn[c].shares / sib_shares
                } else {
                    0.0
                };
                let child_path = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                stack.push((c, child_path, child_level, total * child_level));
            }
            let node = &pn[i];
            out.push(ShareTreeNodeReport {
                path,
                shares: node.shares as u32,
                job_count: node.job_count,
                level,
                total,
                long_target_share: if node.job_count > 0 { node.oltt } else { 0.0 },
                short_target_share: if node.job_count > 0 { node.ostt } else { 0.0 },
                actual_share: if root_usage == 0.0 {
                    0.0
                } else {
                    node.usage / root_usage
                },
                usage: node.usage,
                usage_by_kind: node.usage_by_kind,
            });
        }
        out
    }

    /// The configured root node's name.
    pub fn root_name(&self) -> &str {
        &self.nodes[0].name
    }
}

/// A job's (user, project) names by address and length.
type NameKey = (usize, usize, usize, usize);

/// The (user, project) names of a job by address, for the lookup memo of one pass.
fn name_key(job: &TicketJob<'_>) -> NameKey {
    (
        job.user.as_ptr() as usize,
        job.user.len(),
        job.project.map_or(0, |p| p.as_ptr() as usize),
        job.project.map_or(usize::MAX, str::len),
    )
}

/// Whether every job has the user and project names the jobs of the pass `kept` was made
/// for had, job by job (compared by content; equal addresses within this pass are compared
/// once), so that their nodes are the kept ones; not for another number of jobs.
fn kept_names_match(kept: &Kept, jobs: &[TicketJob<'_>]) -> bool {
    if kept.job_pair.len() != jobs.len() {
        return false;
    }
    // Per pair, the address of names already found equal in this pass.
    let mut seen: Vec<Option<NameKey>> = vec![None; kept.pairs.len()];
    for (job, &p) in jobs.iter().zip(&kept.job_pair) {
        let key = name_key(job);
        let Some((user, project, _)) = kept.pairs.get(p as usize) else {
            return false;
        };
        if seen[p as usize] != Some(key) {
            if job.user != user || job.project != project.as_deref() {
                return false;
            }
            seen[p as usize] = Some(key);
        }
    }
    true
}

/// The order of job nodes at one level: running jobs first, then by the previous level's
/// value, then job and task number (`lPSortList(..., "%I+ %I- %I+ %I+", STN_queued, STN_sort,
/// STN_jobid, STN_taskid)`), then the job's index, so that the order is total and any sort
/// gives the same result from any starting order.
fn job_node_order(a: &JobNode, b: &JobNode) -> std::cmp::Ordering {
    a.pending()
        .cmp(&b.pending())
        .then(b.sort.total_cmp(&a.sort))
        .then(a.job_id.cmp(&b.job_id))
        .then(a.task_id.cmp(&b.task_id))
        .then(a.job.cmp(&b.job))
}

fn post_order(pn: &[PassNode]) -> Vec<usize> {
    let mut out = Vec::with_capacity(pn.len());
    let mut stack = vec![(0usize, false)];
    while let Some((i, expanded)) = stack.pop() {
        if expanded {
            out.push(i);
        } else {
            stack.push((i, true));
            for &c in &pn[i].children {
                stack.push((c, false));
            }
        }
    }
    out
}

/// `sge_calc_node_targets` for the children of one node.
fn calc_node_targets(pn: &mut [PassNode], i: usize, compensation_factor: f64) {
    let children = pn[i].children.clone();
    if children.is_empty() {
        return;
    }
    let active: Vec<usize> = children
        .into_iter()
        .filter(|&c| pn[c].job_count > 0)
        .collect();
    let sum_shares: f64 = active.iter().map(|&c| pn[c].shares).sum();
    let (node_oltt, node_ostt) = (pn[i].oltt, pn[i].ostt);
    let mut sum = 0.0;
    for &c in &active {
        let shares = pn[c].shares;
        let ltt = if sum_shares > 0.0 {
            shares / sum_shares
        } else {
            0.0
        };
        let oltt = node_oltt * ltt;
        pn[c].ltt = ltt;
        pn[c].oltt = oltt;
        pn[c].shr = if oltt > 0.0 {
            shares * shares / pn[c].usage.max(SGE_MIN_USAGE * oltt)
        } else {
            0.0
        };
        sum += pn[c].shr;
    }
    for &c in &active {
        let stt = if sum > 0.0 { pn[c].shr / sum } else { 0.0 };
        pn[c].stt = stt;
        pn[c].ostt = node_ostt * stt;
    }
    if compensation_factor != 0.0 {
        let mut compensated = false;
        let mut sum = 0.0;
        for &c in &active {
            let (ostt, oltt) = (pn[c].ostt, pn[c].oltt);
            if ostt > compensation_factor * oltt {
                let shares = pn[c].shares;
                pn[c].shr = shares * shares
                    / (pn[c].usage.max(SGE_MIN_USAGE * oltt)
                        * (ostt / (compensation_factor * oltt)));
                compensated = true;
            }
            sum += pn[c].shr;
        }
        if compensated {
            for &c in &active {
                let stt = pn[c].shr / sum;
                pn[c].stt = stt;
                pn[c].ostt = node_ostt * stt;
            }
        }
    }
}

/// `sge_sort_job_nodes`: orders and dilutes the job nodes below `node` at every level below the
/// (pruned) root, in place. Returns the effective root after pruning.
///
/// `mixed` is set when a node with children was sorted: its slice then mixes its children's
/// jobs, and no longer holds each node's own jobs where [`JobLayout::range`] says. With
/// `sorted`, every slice is known to be in order already (the entries the last pass sorted,
/// in a layout no node with children was sorted in): none is sorted again.
fn sort_job_nodes(
    pn: &[PassNode],
    layout: &mut JobLayout,
    root: usize,
    node: usize,
    total_tickets: f64,
    sorted: bool,
    mixed: &mut bool,
) -> usize {
    if root == node && layout.own[node] == 0 {
        // Prune: a root with no jobs of its own and exactly one active child.
        let mut active = pn[node].children.iter().filter(|&&c| pn[c].job_count > 0);
        if let (Some(&only), None) = (active.next(), active.next()) {
            return sort_job_nodes(pn, layout, only, only, total_tickets, sorted, mixed);
        }
    }
    for &c in &pn[node].children {
        if pn[c].job_count > 0 {
            sort_job_nodes(pn, layout, root, c, total_tickets, sorted, mixed);
        }
    }
    if root != node || layout.own[node] > 0 {
        *mixed |= !pn[node].children.is_empty();
        let (start, end) = layout.range[node];
        let list = &mut layout.nodes[start..end];
        // Running jobs first, then by the previous level's value, then job and task number
        // (`lPSortList(..., "%I+ %I- %I+ %I+", STN_queued, STN_sort, STN_jobid, STN_taskid)`).
        if !sorted {
            list.sort_unstable_by(job_node_order);
        }
        let stt = pn[node].stt;
        let mut dilute = 1.0;
        for jn in list.iter_mut() {
            jn.shr = stt / dilute;
            jn.sort = jn.tickets + jn.shr * total_tickets;
            dilute += f64::from(jn.slots);
        }
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_constant_halves_in_about_halftime() {
        let d = DecayConfig::default();
        let f = d.factors(168.0 * 3600.0)[0];
        assert!((f - 0.5).abs() < 1e-4, "{f}");
        let none = DecayConfig {
            halftime_hours: 0.0,
            ..DecayConfig::default()
        };
        assert_eq!(none.factors(1e9)[0], 1.0);
    }

    /// share_tree(5): "A user leaf node named 'default' can be defined as a descendant of a
    /// project node ... users who do not have a user node defined under the project" each get
    /// the default node's shares, as a sibling of their own.
    #[test]
    fn default_nodes_inside_and_outside_projects() {
        let tree = ShareTree::new(
            &ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![
                    ShareTreeNodeSpec::group(
                        "P1",
                        60,
                        vec![
                            ShareTreeNodeSpec::leaf("default", 10),
                            ShareTreeNodeSpec::leaf("alice", 30),
                        ],
                    ),
                    ShareTreeNodeSpec::leaf("default", 40),
                ],
            ),
            &["P1"],
        );
        let d = DecayConfig::default();
        let mut usage = UsageStore::new();
        usage.add_usage(
            "alice",
            Some("P1"),
            Usage {
                cpu: 10.0,
                ..Usage::default()
            },
            0,
            &d,
        );
        usage.add_usage(
            "bob",
            Some("P1"),
            Usage {
                cpu: 30.0,
                ..Usage::default()
            },
            0,
            &d,
        );
        usage.add_usage(
            "carol",
            None,
            Usage {
                cpu: 5.0,
                ..Usage::default()
            },
            0,
            &d,
        );
        let policy = ShareTreePolicy {
            weight_tickets_share: 1000.0,
            ..ShareTreePolicy::default()
        };
        let mut bob = TicketJob::pending(2, "bob");
        bob.project = Some("P1");
        let mut alice = TicketJob::pending(1, "alice");
        alice.project = Some("P1");
        let carol = TicketJob::pending(3, "carol");
        // A project not in the tree: no node, no tickets, even though "default" exists.
        let mut dave = TicketJob::pending(4, "dave");
        dave.project = Some("P2");
        let st = tree.tickets(&usage, &policy, 0, &[alice, bob, carol, dave]);
        let node = |p: &str| st.nodes.iter().find(|n| n.path == p).cloned();
        let bob_node = node("/P1/bob").expect("temporary node for bob");
        assert_eq!(
            (bob_node.shares, bob_node.job_count, bob_node.usage),
            (10, 1, 30.0)
        );
        let carol_node = node("/carol").expect("temporary node for carol");
        assert_eq!((carol_node.shares, carol_node.usage), (40, 5.0));
        // The project node carries the project's usage, not the sum of its children's.
        assert_eq!(node("/P1").map(|n| n.usage), Some(40.0));
        assert_eq!(node("/P1/default").map(|n| n.job_count), Some(0));
        assert_eq!(st.stckt[3], 0.0);
        assert!(st.stckt[..3].iter().all(|&t| t > 0.0));
        // P1 and carol compete at the top; alice and bob share P1's entitlement, and under
        // P1 the first job gets P1's stt, the second half of it (diluted).
        let top = node("/P1").map_or(0.0, |n| n.short_target_share)
            + node("/carol").map_or(0.0, |n| n.short_target_share);
        assert!((top - 1.0).abs() < 1e-12);
    }

    #[test]
    fn running_jobs_get_node_target_over_running_jobs() {
        let tree = ShareTree::new(
            &ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![
                    ShareTreeNodeSpec::leaf("a", 50),
                    ShareTreeNodeSpec::leaf("b", 50),
                ],
            ),
            &[],
        );
        let policy = ShareTreePolicy {
            weight_tickets_share: 1000.0,
            ..ShareTreePolicy::default()
        };
        let jobs = [
            TicketJob::running(1, "a"),
            TicketJob::running(2, "a"),
            TicketJob::pending(3, "a"),
            TicketJob::running(4, "b"),
        ];
        let st = tree.tickets(&UsageStore::new(), &policy, 0, &jobs);
        // Second pass, running only: a and b 500 each, a's split over its two running jobs.
        assert_eq!(st.stckt[0], 250.0);
        assert_eq!(st.stckt[1], 250.0);
        assert_eq!(st.stckt[3], 500.0);
        // The pending job comes after a's two running jobs: 500 / 3.
        assert!((st.stckt[2] - 500.0 / 3.0).abs() < 1e-9);
        // First pass counted the pending job at a: 500 / 3 per running job.
        assert!((st.first_pass_stckt[0] - 500.0 / 3.0).abs() < 1e-9);
        assert_eq!(st.max_tickets, 500.0);
    }

    #[test]
    fn usage_with_project_goes_to_project_not_user() {
        let d = DecayConfig::default();
        let mut s = UsageStore::new();
        s.add_usage(
            "u",
            Some("p"),
            Usage {
                cpu: 5.0,
                ..Usage::default()
            },
            100,
            &d,
        );
        assert_eq!(s.user("u").map(|r| r.usage.cpu), Some(0.0));
        assert_eq!(s.project("p").map(|r| r.usage.cpu), Some(5.0));
        assert_eq!(s.user_in_project("u", "p").map(|r| r.usage.cpu), Some(5.0));
    }

    /// The default configuration's shape: users as copies of `default` below the root, and
    /// one configured user; no node with children but the root (the pass keeps its layout).
    fn flat_cache_test_tree() -> ShareTree {
        ShareTree::new(
            &ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![
                    ShareTreeNodeSpec::leaf("bob", 30),
                    ShareTreeNodeSpec::leaf("default", 10),
                ],
            ),
            &["P1"],
        )
    }

    /// A tree with a flat `default` level, a project with its own `default`, and a group
    /// with a configured user: temporary nodes at two depths, jobs at several levels.
    fn cache_test_tree() -> ShareTree {
        ShareTree::new(
            &ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![
                    ShareTreeNodeSpec::group(
                        "P1",
                        60,
                        vec![
                            ShareTreeNodeSpec::leaf("default", 10),
                            ShareTreeNodeSpec::leaf("alice", 30),
                        ],
                    ),
                    ShareTreeNodeSpec::group(
                        "grp",
                        20,
                        vec![
                            ShareTreeNodeSpec::leaf("bob", 20),
                            ShareTreeNodeSpec::leaf("carol", 5),
                        ],
                    ),
                    ShareTreeNodeSpec::leaf("default", 40),
                ],
            ),
            &["P1"],
        )
    }

    /// One job of [`cached_tickets_equal_fresh_ones`]: (user name index, project index,
    /// running, job share, min PE slots, higher-policy tickets, task id).
    type JobSpec = (usize, usize, bool, u32, u32, u8, u64);

    fn job_spec() -> impl proptest::strategy::Strategy<Value = JobSpec> {
        use proptest::prelude::*;
        (
            0usize..10,
            0usize..3,
            any::<bool>(),
            0u32..3,
            1u32..4,
            0u8..3,
            1u64..3,
        )
    }

    fn ticket_bits(t: &ShareTreeTickets) -> (Vec<u64>, Vec<u64>, Vec<u64>, u64) {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        (
            bits(&t.stckt),
            bits(&t.first_pass_stckt),
            bits(&t.share),
            t.max_tickets.to_bits(),
        )
    }

    proptest::proptest! {
        /// [`ShareTree::job_tickets_cached`] gives the from-scratch tickets, bit for bit,
        /// over random sequences of changes: jobs started, ended, added, removed, given
        /// another owner, project, job share, PE size or higher-policy tickets, the policy
        /// made dependent or not, usage charged, time passing, and the same names at other
        /// addresses. It fails if the cache misses any of them.
        #[test]
        fn cached_tickets_equal_fresh_ones(
            flat in proptest::prelude::any::<bool>(),
            initial in proptest::collection::vec(job_spec(), 1..40),
            steps in proptest::collection::vec(
                (0u8..10, 0usize..64, job_spec()),
                1..30,
            ),
        ) {
            let tree = if flat { flat_cache_test_tree() } else { cache_test_tree() };
            // Each name twice, at two addresses.
            let users: Vec<String> = ["alice", "bob", "carol", "dave", "erin"]
                .iter()
                .chain(["alice", "bob", "carol", "dave", "erin"].iter())
                .map(|s| s.to_string())
                .collect();
            let projects = ["P1".to_string(), "P2".to_string()];
            let decay = DecayConfig::default();
            let mut usage = UsageStore::new();
            usage.add_usage("bob", None, Usage { cpu: 20.0, ..Usage::default() }, 0, &decay);
            usage.add_usage("dave", Some("P1"), Usage { cpu: 5.0, ..Usage::default() }, 0, &decay);
            let mut policy = ShareTreePolicy {
                weight_tickets_share: 10_000.0,
                ..ShareTreePolicy::default()
            };
            let mut specs: Vec<(u64, JobSpec)> =
                initial.into_iter().enumerate().map(|(i, s)| (i as u64 + 1, s)).collect();
            let mut next_id = specs.len() as u64 + 1;
            let mut now = 0i64;
            let mut cache = ShareTreeCache::new();
            for (op, at, spec) in steps {
                let k = if specs.is_empty() { 0 } else { at % specs.len() };
                match op {
                    0 if !specs.is_empty() => specs[k].1 .2 = !specs[k].1 .2,
                    1 if !specs.is_empty() => specs[k].1 .3 = spec.3,
                    2 if !specs.is_empty() => specs[k].1 .0 = spec.0,
                    3 if !specs.is_empty() => specs[k].1 .1 = spec.1,
                    4 if !specs.is_empty() => specs[k].1 .4 = spec.4,
                    5 if !specs.is_empty() => specs[k].1 .5 = spec.5,
                    6 if specs.len() > 1 => {
                        specs.remove(k);
                    }
                    7 => {
                        specs.push((next_id, spec));
                        next_id += 1;
                    }
                    8 => policy.dependent = !policy.dependent,
                    _ => {
                        usage.add_usage(
                            &users[spec.0],
                            None,
                            Usage { cpu: f64::from(spec.3) + 1.0, ..Usage::default() },
                            now,
                            &decay,
                        );
                    }
                }
                now += 600;
                let jobs: Vec<TicketJob<'_>> = specs
                    .iter()
                    .map(|&(id, (u, p, running, js, slots, higher, task))| TicketJob {
                        job_id: id,
                        task_id: task,
                        user: &users[u],
                        project: (p > 0).then(|| projects[p - 1].as_str()),
                        running,
                        jobshare: js,
                        pe_min_slots: slots,
                        higher_policy_tickets: f64::from(higher) * 100.0,
                    })
                    .collect();
                let fresh = tree.job_tickets(&usage, &policy, now, &jobs);
                let cached = tree.job_tickets_cached(&usage, &policy, now, &jobs, &mut cache);
                proptest::prop_assert_eq!(ticket_bits(&cached), ticket_bits(&fresh));
                // A second pass over the same jobs takes everything from the cache.
                let again = tree.job_tickets_cached(&usage, &policy, now, &jobs, &mut cache);
                proptest::prop_assert_eq!(ticket_bits(&again), ticket_bits(&fresh));
            }
        }
    }

    /// What a cache kept for one tree is not used for another (a reloaded share tree).
    #[test]
    fn cache_of_another_tree_is_not_used() {
        let a = cache_test_tree();
        let b = ShareTree::new(
            &ShareTreeNodeSpec::group(
                "Root",
                1,
                vec![
                    ShareTreeNodeSpec::leaf("alice", 90),
                    ShareTreeNodeSpec::leaf("default", 10),
                ],
            ),
            &[],
        );
        let usage = UsageStore::new();
        let policy = ShareTreePolicy {
            weight_tickets_share: 1000.0,
            ..ShareTreePolicy::default()
        };
        let jobs = [
            TicketJob::pending(1, "alice"),
            TicketJob::pending(2, "bob"),
            TicketJob::pending(3, "alice"),
        ];
        let mut cache = ShareTreeCache::new();
        let on_a = a.job_tickets_cached(&usage, &policy, 0, &jobs, &mut cache);
        assert_eq!(on_a.stckt, a.job_tickets(&usage, &policy, 0, &jobs).stckt);
        let on_b = b.job_tickets_cached(&usage, &policy, 0, &jobs, &mut cache);
        assert_eq!(on_b.stckt, b.job_tickets(&usage, &policy, 0, &jobs).stckt);
        assert_ne!(on_a.stckt, on_b.stckt);
    }
}
