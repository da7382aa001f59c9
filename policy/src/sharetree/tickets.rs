//! The share-tree pass (steps 2 to 5 of the algorithm in the module above): active nodes,
//! long- and short-term targets with compensation, and the tickets of pending and running
//! jobs, with the cache that keeps what a pass derives from its jobs alone for the next.

use super::tree::{Fnv1a, Located, ShareTree, WordHash};
use super::usage::{DecayConfig, Usage, UsageRecord, UsageStore, UsageWeights};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// SGE's `SGE_MIN_USAGE`: usage below `1.0 × oltt` counts as that much, so that a node without
/// usage does not get an infinite short-term target.
pub const SGE_MIN_USAGE: f64 = 1.0;

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
