//! Grid Engine 8.1.9's priority behind the daemon's [`PriorityPolicy`] seam: tickets from the
//! override, functional and share-tree policies chained along `policy_hierarchy`, then urgency,
//! POSIX priority and tickets normalised and weighted (`sge_priority(5)`). The mathematics is
//! the policy crate's (`gridspool_policy::sge`, `sharetree`); this module maps the
//! configuration and the scheduler's jobs onto it.

use super::accounting::SharedUsage;
use super::priority::{PriorityInput, PriorityPolicy};
use crate::config::{ClusterConfig, SchedulerConfig, ShareTreeNode};
use crate::model::PriorityInfo;
use gridspool_policy::sge::{
    FunctionalPolicy, FunctionalShares, JobPriority, JobPriorityInput, JobTickets, OverrideTables,
    PriorityPass, PriorityRanges, PriorityWeights, TicketConfig, TicketJobInput, TicketPolicy,
    compute_job_tickets_cached, compute_priorities_from_raw, normalized_posix_priority,
    parse_policy_hierarchy, raw_priority,
};
use gridspool_policy::sharetree::{
    DecayConfig, ShareTree, ShareTreeCache, ShareTreeNodeSpec, ShareTreePolicy, UsageWeights,
};
use std::cell::{Cell, RefCell};

/// SGE's priority, with the configuration's share tree and the usage accounting charges.
pub struct SgePriority {
    tree: Option<ShareTree>,
    /// What the last pass's share-tree tickets derived from its jobs alone (their nodes,
    /// sorted per node), checked against each pass's jobs before it is used.
    share_cache: ShareTreeCache,
    usage: SharedUsage,
    hierarchy: Vec<(TicketPolicy, bool)>,
    overrides: OverrideTables,
    functional: FunctionalShares,
}

fn tree_spec(node: &ShareTreeNode) -> ShareTreeNodeSpec {
    if node.children.is_empty() {
        ShareTreeNodeSpec::leaf(&node.name, node.shares)
    } else {
        ShareTreeNodeSpec::group(
            &node.name,
            node.shares,
            node.children.iter().map(tree_spec).collect(),
        )
    }
}

impl SgePriority {
    pub fn new(config: &ClusterConfig, usage: SharedUsage) -> Self {
        let mut p = SgePriority {
            tree: None,
            share_cache: ShareTreeCache::new(),
            usage,
            hierarchy: Vec::new(),
            overrides: OverrideTables::default(),
            functional: FunctionalShares::default(),
        };
        p.rebuild(config);
        p
    }

    /// Rebuilds what depends on the configuration.
    fn rebuild(&mut self, config: &ClusterConfig) {
        let projects: Vec<&str> = config.projects.iter().map(|p| p.name.as_str()).collect();
        self.tree = config
            .share_tree
            .as_ref()
            .map(|root| ShareTree::new(&tree_spec(root), &projects));
        // Kept for the old tree: of no use for the new one.
        self.share_cache.clear();
        // An unparsable hierarchy falls back to SGE's default, "OFS".
        self.hierarchy = parse_policy_hierarchy(&config.scheduler.policy_hierarchy)
            .or_else(|| parse_policy_hierarchy("OFS"))
            .unwrap_or_default();
        self.overrides = OverrideTables {
            users: config
                .users
                .iter()
                .map(|u| (u.name.clone(), u.oticket))
                .collect(),
            projects: config
                .projects
                .iter()
                .map(|p| (p.name.clone(), p.oticket))
                .collect(),
            departments: config
                .access_lists()
                .iter()
                .filter(|l| l.is_dept())
                .map(|l| (l.name.clone(), l.oticket))
                .collect(),
        };
        self.functional = FunctionalShares {
            users: config
                .users
                .iter()
                .map(|u| (u.name.clone(), u.fshare))
                .collect(),
            projects: config
                .projects
                .iter()
                .map(|p| (p.name.clone(), p.fshare))
                .collect(),
            departments: config
                .access_lists()
                .iter()
                .filter(|l| l.is_dept())
                .map(|l| (l.name.clone(), l.fshare))
                .collect(),
        };
    }

    fn dependent(&self, policy: TicketPolicy) -> bool {
        self.hierarchy
            .iter()
            .find(|(p, _)| *p == policy)
            .is_some_and(|(_, d)| *d)
    }

    fn share_tree_policy(&self, c: &SchedulerConfig) -> ShareTreePolicy {
        ShareTreePolicy {
            weight_tickets_share: c.weight_tickets_share,
            compensation_factor: c.compensation_factor,
            usage_weights: usage_weights(c),
            decay: DecayConfig {
                halftime_hours: c.halftime.max(0.0),
                ..DecayConfig::default()
            },
            dependent: self.dependent(TicketPolicy::ShareTree),
        }
    }

    fn functional_policy(&self, c: &SchedulerConfig) -> FunctionalPolicy {
        FunctionalPolicy {
            weight_tickets_functional: c.weight_tickets_functional,
            weight_user: c.weight_user,
            weight_project: c.weight_project,
            weight_department: c.weight_department,
            weight_job: c.weight_job,
            share_functional_shares: c.share_functional_shares,
            max_functional_jobs_to_schedule: c.max_functional_jobs_to_schedule as usize,
            dependent: self.dependent(TicketPolicy::Functional),
        }
    }
}

fn weights(c: &SchedulerConfig) -> PriorityWeights {
    PriorityWeights {
        weight_priority: c.weight_priority,
        weight_urgency: c.weight_urgency,
        weight_ticket: c.weight_ticket,
        weight_waiting_time: c.weight_waiting_time,
        weight_deadline: c.weight_deadline,
    }
}

fn usage_weights(c: &SchedulerConfig) -> UsageWeights {
    let w = |k: &str, d: f64| c.usage_weight_list.get(k).copied().unwrap_or(d);
    UsageWeights {
        cpu: w("cpu", 1.0),
        mem: w("mem", 0.0),
        io: w("io", 0.0),
    }
}

impl PriorityPolicy for SgePriority {
    fn forget_caches(&mut self) {
        self.share_cache = ShareTreeCache::new();
    }

    fn reconfigure(&mut self, config: &ClusterConfig) {
        self.rebuild(config);
    }

    fn compute(
        &mut self,
        c: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
    ) -> Vec<PriorityInfo> {
        let mut out = Vec::with_capacity(jobs.len());
        self.compute_into(c, now, jobs, &mut out);
        out
    }

    fn compute_into(
        &mut self,
        c: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
        out: &mut Vec<PriorityInfo>,
    ) {
        out.clear();
        out.reserve(jobs.len());
        self.compute_each(c, now, jobs.len(), &|i| jobs[i], &mut |_, p| out.push(p));
    }

    fn compute_each<'a>(
        &mut self,
        c: &SchedulerConfig,
        now: i64,
        n: usize,
        job: &dyn Fn(usize) -> PriorityInput<'a>,
        emit: &mut dyn FnMut(usize, PriorityInfo),
    ) {
        // The pass's urgency settings: the urgency range is gathered in the ticket read below.
        let mut pass = PriorityPass {
            weights: weights(c),
            now,
            max_tickets: None,
        };
        // Each job as the ticket policies see it, made when they read it: no vector of
        // 100,000 of them per pass. That read also keeps each job's urgency columns and
        // counts its urgency towards the pass's range, so that the priorities below need not
        // read the job again. Only reads in job order are kept (the ticket computation reads
        // every job first in order, but may read jobs again, or none when no policy hands
        // out tickets): `kept` is the length of the prefix kept, and the jobs after it are
        // read once more below.
        let ranges = Cell::new(PriorityRanges::default());
        let kept = Cell::new(0usize);
        let urgencies: RefCell<Vec<Urgency>> = RefCell::new(Vec::with_capacity(n));
        let keep = |i: usize, j: &PriorityInput<'_>| {
            if i == kept.get() {
                let raw = raw_priority(&pass, &urgency_input(j, 0.0));
                let mut r = ranges.get();
                r.add_raw(&raw);
                ranges.set(r);
                urgencies.borrow_mut().push(Urgency::of(&raw));
                kept.set(i + 1);
            }
        };
        let ticket_job = |i: usize| {
            let j = job(i);
            keep(i, &j);
            ticket_input(&j)
        };
        let usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        let share_policy = self.share_tree_policy(c);
        let functional = self.functional_policy(c);
        let tickets = compute_job_tickets_cached(
            &TicketConfig {
                hierarchy: &self.hierarchy,
                override_tables: &self.overrides,
                share_override_tickets: c.share_override_tickets,
                functional_shares: &self.functional,
                functional,
                share_tree: self.tree.as_ref().map(|t| (t, &*usage, share_policy)),
            },
            now,
            n,
            &ticket_job,
            &mut self.share_cache,
        );
        drop(usage);
        for i in kept.get()..n {
            keep(i, &job(i));
        }
        let mut ranges = ranges.get();
        for t in &tickets.jobs {
            ranges.add_tickets(t.tckts);
        }
        pass.max_tickets = Some(tickets.max_tickets);
        // The priorities are handed on as they come: no output vector of 100,000 entries
        // between the layers.
        let urgencies = urgencies.into_inner();
        compute_priorities_from_raw(
            &pass,
            &ranges,
            n,
            |i| urgencies[i].raw(tickets.jobs[i].tckts),
            |i, p| emit(i, priority_info(&p, &tickets.jobs[i])),
        );
    }
}

/// The columns of a job's [`raw_priority`] that do not depend on its tickets, kept from the
/// ticket read for the priorities (32 bytes a job instead of a second read of its row; `urg`
/// and `npprior` are recomputed from them as [`raw_priority`] computes them).
#[derive(Debug, Clone, Copy)]
struct Urgency {
    rrcontr: f64,
    wtcontr: f64,
    dlcontr: f64,
    ppri: i32,
}

impl Urgency {
    fn of(raw: &JobPriority) -> Self {
        Urgency {
            rrcontr: raw.rrcontr,
            wtcontr: raw.wtcontr,
            dlcontr: raw.dlcontr,
            ppri: raw.ppri,
        }
    }

    /// The raw priority again, with the job's tickets: what [`raw_priority`] gives for the
    /// job with them (only `tckts` depends on them; `prio`, `nurg` and `ntckts` are 0).
    fn raw(&self, tckts: f64) -> JobPriority {
        JobPriority {
            prio: 0.0,
            nurg: 0.0,
            // The same sum in the same order as `raw_priority`'s: the same bits.
            urg: self.wtcontr + self.dlcontr + self.rrcontr,
            rrcontr: self.rrcontr,
            wtcontr: self.wtcontr,
            dlcontr: self.dlcontr,
            npprior: normalized_posix_priority(self.ppri),
            ntckts: 0.0,
            ppri: self.ppri,
            tckts,
        }
    }
}

/// A job as the urgency and priority computation sees it, with the tickets it was given.
fn urgency_input(j: &PriorityInput<'_>, tickets: f64) -> JobPriorityInput {
    JobPriorityInput {
        job_id: u64::from(j.job.0),
        task_id: 1,
        submission_time: j.submission_time,
        deadline: j.deadline,
        posix_priority: j.posix_priority,
        // The scheduler's rrcontr already holds the queue urgency bonus.
        resource_contribution: j.rrcontr,
        queue_urgency_bonus: 0.0,
        tickets,
    }
}

/// A job as the ticket policies see it.
fn ticket_input<'a>(j: &PriorityInput<'a>) -> TicketJobInput<'a> {
    TicketJobInput {
        job_id: u64::from(j.job.0),
        task_id: 1,
        submission_time: j.submission_time,
        user: j.owner,
        project: j.project,
        department: j.department,
        running: j.running_since.is_some(),
        jobshare: 0,
        job_otickets: 0,
        pe_min_slots: j.slots.max(1),
    }
}

/// What `qstat` shows of a job under the SGE policy: its priority and its tickets.
fn priority_info(p: &JobPriority, t: &JobTickets) -> PriorityInfo {
    PriorityInfo {
        prio: p.prio,
        nurg: p.nurg,
        npprior: p.npprior,
        ntckts: p.ntckts,
        urg: p.urg,
        rrcontr: p.rrcontr,
        wtcontr: p.wtcontr,
        dlcontr: p.dlcontr,
        tickets: t.tckts,
        otickets: t.otckt,
        ftickets: t.ftckt,
        stickets: t.stckt,
        share: t.share,
        policy_terms: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobId;
    use gridspool_policy::sge::{compute_job_tickets, compute_priorities};
    use gridspool_policy::sharetree::{Usage, UsageStore};
    use proptest::prelude::*;
    use std::sync::{Arc, Mutex};

    const USERS: [&str; 4] = ["alice", "bob", "carol", "dave"];

    fn config() -> ClusterConfig {
        ClusterConfig::parse(
            "hosts:\n  - {name: n1, slots: 4}\nqueues:\n  - {name: all.q, hostlist: [n1], slots: 4}\n\
             share_tree: {name: Root, shares: 1, children: [{name: default, shares: 1}, {name: bob, shares: 3}]}\n\
             scheduler: {policy: sge, weight_tickets_share: 10000, weight_deadline: 3600000}\n",
        )
        .expect("config")
    }

    /// The priorities from the policy crate's vector functions: every ticket computed
    /// without a cache, the urgency range found by `compute_priorities`' own first walk.
    fn fresh(
        p: &SgePriority,
        c: &SchedulerConfig,
        now: i64,
        jobs: &[PriorityInput<'_>],
    ) -> Vec<PriorityInfo> {
        let usage = p.usage.lock().expect("usage");
        let tj: Vec<TicketJobInput<'_>> = jobs.iter().map(ticket_input).collect();
        let tickets = compute_job_tickets(
            &TicketConfig {
                hierarchy: &p.hierarchy,
                override_tables: &p.overrides,
                share_override_tickets: c.share_override_tickets,
                functional_shares: &p.functional,
                functional: p.functional_policy(c),
                share_tree: p
                    .tree
                    .as_ref()
                    .map(|t| (t, &*usage, p.share_tree_policy(c))),
            },
            now,
            &tj,
        );
        let inputs: Vec<JobPriorityInput> = jobs
            .iter()
            .zip(&tickets.jobs)
            .map(|(j, t)| urgency_input(j, t.tckts))
            .collect();
        let pass = PriorityPass {
            weights: weights(c),
            now,
            max_tickets: Some(tickets.max_tickets),
        };
        compute_priorities(&pass, &inputs)
            .iter()
            .zip(&tickets.jobs)
            .map(|(p, t)| priority_info(p, t))
            .collect()
    }

    /// (user, running, submission offset, deadline offset, -p, slots, rrcontr)
    type Spec = (usize, bool, i64, Option<i64>, i32, u32, u32);

    proptest! {
        /// The urgency range gathered in the ticket read (and the share-tree cache kept
        /// between passes) give exactly the priorities of the from-scratch computation, pass
        /// after pass while time moves on and jobs come, go, start and get charged usage.
        #[test]
        fn priorities_equal_fresh_ones(
            passes in proptest::collection::vec(
                (proptest::collection::vec(
                    (0..USERS.len(), any::<bool>(), 0..7200i64,
                     proptest::option::of(-600..7200i64), -1023..=1024i32, 1..8u32, 0..5000u32),
                    0..40),
                 0..600i64, 0..3u8),
                1..5),
        ) {
            let cfg = config();
            let usage: SharedUsage = Arc::new(Mutex::new(UsageStore::new()));
            let mut policy = SgePriority::new(&cfg, usage.clone());
            let c = &cfg.scheduler;
            let mut now = 1_800_000_000;
            for (specs, dt, charge) in passes {
                now += dt;
                if charge > 0 {
                    let mut u = usage.lock().expect("usage");
                    u.add_usage(
                        USERS[usize::from(charge)],
                        None,
                        Usage { cpu: 100.0 * f64::from(charge), mem: 0.0, io: 0.0 },
                        now,
                        &DecayConfig::default(),
                    );
                }
                let jobs: Vec<PriorityInput<'_>> = specs
                    .iter()
                    .enumerate()
                    .map(|(k, s): (usize, &Spec)| PriorityInput {
                        job: JobId(k as u32 + 1),
                        uid: s.0 as u32,
                        owner: USERS[s.0],
                        project: None,
                        department: None,
                        submission_time: now - s.2,
                        posix_priority: s.4,
                        slots: s.5,
                        rrcontr: f64::from(s.6),
                        deadline: s.3.map(|d| now + d),
                        running_since: s.1.then_some(now - s.2 / 2),
                    })
                    .collect();
                let got = policy.compute(c, now, &jobs);
                prop_assert_eq!(&got, &fresh(&policy, c, now, &jobs));
                // And a second pass over the same jobs (the cache warm).
                prop_assert_eq!(policy.compute(c, now, &jobs), got);
            }
        }
    }
}
