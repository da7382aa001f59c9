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
    FunctionalPolicy, FunctionalShares, JobPriorityInput, OverrideTables, PriorityPass,
    PriorityWeights, TicketConfig, TicketJobInput, TicketPolicy, compute_job_tickets_cached,
    compute_priorities_each, parse_policy_hierarchy,
};
use gridspool_policy::sharetree::{
    DecayConfig, ShareTree, ShareTreeCache, ShareTreeNodeSpec, ShareTreePolicy, UsageWeights,
};

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
            departments: Default::default(),
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
            departments: Default::default(),
        };
    }

    fn dependent(&self, policy: TicketPolicy) -> bool {
        self.hierarchy
            .iter()
            .find(|(p, _)| *p == policy)
            .is_some_and(|(_, d)| *d)
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
        // Each job as the ticket policies see it, made when they read it: no vector of
        // 100,000 of them per pass.
        let ticket_job = |i: usize| {
            let j = job(i);
            TicketJobInput {
                job_id: u64::from(j.job.0),
                task_id: 1,
                submission_time: j.submission_time,
                user: j.owner,
                project: j.project,
                department: None,
                running: j.running_since.is_some(),
                jobshare: 0,
                job_otickets: 0,
                pe_min_slots: j.slots.max(1),
            }
        };
        let usage = self.usage.lock().unwrap_or_else(|e| e.into_inner());
        let share_policy = ShareTreePolicy {
            weight_tickets_share: c.weight_tickets_share,
            compensation_factor: c.compensation_factor,
            usage_weights: usage_weights(c),
            decay: DecayConfig {
                halftime_hours: c.halftime.max(0.0),
                ..DecayConfig::default()
            },
            dependent: self.dependent(TicketPolicy::ShareTree),
        };
        let functional = FunctionalPolicy {
            weight_tickets_functional: c.weight_tickets_functional,
            weight_user: c.weight_user,
            weight_project: c.weight_project,
            weight_department: c.weight_department,
            weight_job: c.weight_job,
            share_functional_shares: c.share_functional_shares,
            max_functional_jobs_to_schedule: c.max_functional_jobs_to_schedule as usize,
            dependent: self.dependent(TicketPolicy::Functional),
        };
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
        let pass = PriorityPass {
            weights: weights(c),
            now,
            max_tickets: Some(tickets.max_tickets),
        };
        // The jobs are read in place and the priorities handed on as they come: no input and
        // output vectors of 100,000 entries between the layers.
        compute_priorities_each(
            &pass,
            n,
            |i| {
                let j = job(i);
                JobPriorityInput {
                    job_id: u64::from(j.job.0),
                    task_id: 1,
                    submission_time: j.submission_time,
                    deadline: j.deadline,
                    posix_priority: j.posix_priority,
                    // The scheduler's rrcontr already holds the queue urgency bonus.
                    resource_contribution: j.rrcontr,
                    queue_urgency_bonus: 0.0,
                    tickets: tickets.jobs[i].tckts,
                }
            },
            |i, p| {
                let t = &tickets.jobs[i];
                emit(
                    i,
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
                    },
                );
            },
        );
    }
}
