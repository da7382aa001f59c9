//! The share each policy promises and the share a replay achieved, over time. Who the
//! sharing entities are depends on the policy: the share tree's leaves under `sge` (with
//! share-tree tickets), the queues under `fbsng` (shares ∝ 1/QPD, or 1/(QPD+QPI) with
//! `rule: update`), Armada's queues (the project, else the owner) under `armada` (over time:
//! ∝ 1 / √factor under `mode: slices`, ∝ 1 / factor under `mode: drf`; a single round
//! divides ∝ 1 / factor under both), the users under the other policies (no promise).
//!
//! A share is of the slot-seconds the jobs used (what the policies divide), not of the
//! cluster's capacity: idle slots belong to nobody. Runs killed by preemption count for the
//! time they held their slots.

use super::replay::{JobRun, Replay};
use crate::config::{ArmadaMode, ClusterConfig, FbsngStartRule, PolicyOrder, ShareTreeNode};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The time series are cut into this many intervals of the replay's span.
pub const BUCKETS: usize = 24;

/// The shares of one replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shares {
    /// What the entities are: `share tree node`, `queue`, `armada queue` or `user`.
    pub entity: String,
    /// The length of each interval of `over_time`, in seconds, and the slot-seconds used in
    /// each.
    pub interval: i64,
    pub used: Vec<f64>,
    pub by_entity: BTreeMap<String, EntityShare>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntityShare {
    /// The fraction the configuration promises among the entities of the workload, over
    /// time (what the achieved shares are held to, interval by interval).
    pub configured: Option<f64>,
    /// The fraction of all slot-seconds it got.
    pub achieved: f64,
    /// The fraction of each interval's slot-seconds (0 when nothing ran in it).
    pub over_time: Vec<f64>,
}

/// How the configuration divides the cluster.
enum Division<'a> {
    Tree(&'a ShareTreeNode),
    FbsngQueues,
    ArmadaQueues,
    Users,
}

fn division(config: &ClusterConfig) -> Division<'_> {
    let s = &config.scheduler;
    match (s.policy, &config.share_tree) {
        (PolicyOrder::Sge, Some(tree)) if s.weight_tickets_share > 0.0 => Division::Tree(tree),
        (PolicyOrder::Fbsng, _) => Division::FbsngQueues,
        (PolicyOrder::Armada, _) => Division::ArmadaQueues,
        _ => Division::Users,
    }
}

/// The share-tree leaf a job's usage is charged to, as a path (`/physics/alice`): at each
/// level the child named for the job's project, else for its owner, else `default`.
fn leaf_path(tree: &ShareTreeNode, run: &JobRun) -> String {
    let mut path = String::new();
    let mut node = tree;
    loop {
        let pick = |name: &str| node.children.iter().find(|c| c.name == name);
        let next = run
            .project
            .as_deref()
            .and_then(pick)
            .or_else(|| pick(&run.user))
            .or_else(|| pick("default"));
        match next {
            Some(child) => {
                path.push('/');
                path.push_str(&child.name);
                node = child;
            }
            None => break,
        }
    }
    if path.is_empty() { "/".into() } else { path }
}

fn entity_of(division: &Division, run: &JobRun) -> String {
    match division {
        Division::Tree(tree) => leaf_path(tree, run),
        Division::FbsngQueues => run.queue.clone(),
        Division::ArmadaQueues => run.project.clone().unwrap_or_else(|| run.user.clone()),
        Division::Users => run.user.clone(),
    }
}

/// The fraction of a share-tree leaf among the active ones: at each level its node's shares
/// over those of its siblings that have jobs (SGE gives an idle node's share to the others).
fn tree_fraction(tree: &ShareTreeNode, leaf: &str, active: &BTreeSet<String>) -> Option<f64> {
    let mut fraction = 1.0;
    let mut node = tree;
    let mut prefix = String::new();
    for name in leaf.split('/').filter(|n| !n.is_empty()) {
        let is_active = |c: &ShareTreeNode| {
            let p = format!("{prefix}/{}", c.name);
            active
                .iter()
                .any(|a| a == &p || a.starts_with(&format!("{p}/")))
        };
        let total: u32 = node
            .children
            .iter()
            .filter(|c| is_active(c))
            .map(|c| c.shares)
            .sum();
        let child = node.children.iter().find(|c| c.name == name)?;
        if total == 0 {
            return None;
        }
        fraction *= f64::from(child.shares) / f64::from(total);
        prefix = format!("{prefix}/{name}");
        node = child;
    }
    Some(fraction)
}

/// Each entity's promised fraction, among `active` (the entities of the workload).
fn configured(
    config: &ClusterConfig,
    division: &Division,
    active: &BTreeSet<String>,
) -> BTreeMap<String, f64> {
    let weights: BTreeMap<String, f64> = match division {
        Division::Tree(tree) => {
            return active
                .iter()
                .filter_map(|e| tree_fraction(tree, e, active).map(|f| (e.clone(), f)))
                .collect();
        }
        Division::FbsngQueues => active
            .iter()
            .filter_map(|q| {
                let f = &config.queue(q)?.fbsng;
                let d = match f.rule {
                    FbsngStartRule::Share => f.qpd,
                    FbsngStartRule::Update => f.qpd + f.qpi,
                };
                (d > 0).then(|| (q.clone(), 1.0 / d as f64))
            })
            .collect(),
        Division::ArmadaQueues => active
            .iter()
            .map(|q| {
                let armada = &config.scheduler.armada;
                let factor = armada
                    .priority_factors
                    .get(q)
                    .copied()
                    .unwrap_or(1.0)
                    .max(f64::MIN_POSITIVE);
                // What the policy holds to over time, not the split of one round (∝ 1 /
                // factor under both modes): slices offer a queue with usage share s a part
                // ∝ 1/(s·factor) of what frees up, which settles where s²·factor is equal
                // (policy/src/armada.rs); DRF weighs dominant shares by 1 / factor directly.
                let weight = match armada.mode {
                    ArmadaMode::Slices => 1.0 / factor.sqrt(),
                    ArmadaMode::Drf => 1.0 / factor,
                };
                (q.clone(), weight)
            })
            .collect(),
        Division::Users => return BTreeMap::new(),
    };
    let total: f64 = weights.values().sum();
    weights.into_iter().map(|(k, w)| (k, w / total)).collect()
}

/// The shares of `replay` under `config`.
pub fn shares(config: &ClusterConfig, replay: &Replay) -> Shares {
    let division = division(config);
    let (from, to) = replay.span;
    let interval = ((to - from) as f64 / BUCKETS as f64).ceil().max(1.0) as i64;
    let mut used: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut per_bucket = vec![0.0; BUCKETS];
    for run in replay.runs.iter().chain(&replay.preempted_runs) {
        let series = used
            .entry(entity_of(&division, run))
            .or_insert_with(|| vec![0.0; BUCKETS]);
        // The run's slot-seconds in each interval it overlaps.
        let first = ((run.start - from) / interval).clamp(0, BUCKETS as i64 - 1) as usize;
        for (b, total) in per_bucket.iter_mut().enumerate().skip(first) {
            let (lo, hi) = (from + b as i64 * interval, from + (b as i64 + 1) * interval);
            if lo >= run.end {
                break;
            }
            let overlap =
                (run.end.min(hi) - run.start.max(lo)).max(0) as f64 * f64::from(run.slots);
            series[b] += overlap;
            *total += overlap;
        }
    }
    let active: BTreeSet<String> = used.keys().cloned().collect();
    let promised = configured(config, &division, &active);
    let all: f64 = per_bucket.iter().sum();
    let by_entity = used
        .into_iter()
        .map(|(name, series)| {
            let share = EntityShare {
                configured: promised.get(&name).copied(),
                achieved: if all > 0.0 {
                    series.iter().sum::<f64>() / all
                } else {
                    0.0
                },
                over_time: series
                    .iter()
                    .zip(&per_bucket)
                    .map(|(s, t)| if *t > 0.0 { s / t } else { 0.0 })
                    .collect(),
            };
            (name, share)
        })
        .collect();
    Shares {
        entity: match division {
            Division::Tree(_) => "share tree node",
            Division::FbsngQueues => "queue",
            Division::ArmadaQueues => "armada queue",
            Division::Users => "user",
        }
        .into(),
        interval,
        used: per_bucket,
        by_entity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(user: &str, project: Option<&str>, start: i64, end: i64) -> JobRun {
        JobRun {
            number: 1,
            task: 1,
            user: user.into(),
            group: "g".into(),
            queue: "all.q".into(),
            project: project.map(String::from),
            cluster: "/".into(),
            slots: 1,
            submit: 0,
            start,
            end,
            host: "n1".into(),
            preempted: 0,
        }
    }

    #[test]
    fn share_tree_leaves_are_promised_their_part_among_the_active_ones() {
        let config = ClusterConfig::parse(
            "hosts: [{name: n1, slots: 2}]\nqueues: [{name: all.q, hostlist: [n1], slots: 2}]\n\
             share_tree:\n  name: Root\n  shares: 1\n  children:\n\
             \x20   - {name: physics, shares: 60, children: [{name: alice, shares: 1}, {name: default, shares: 1}]}\n\
             \x20   - {name: bob, shares: 20}\n    - {name: carol, shares: 20}\n",
        )
        .expect("config");
        // carol submits nothing: physics and bob divide the cluster 3:1.
        let replay = Replay {
            runs: vec![
                run("alice", Some("physics"), 0, 100),
                run("dave", Some("physics"), 0, 100),
                run("bob", None, 0, 100),
                run("bob", None, 100, 200),
            ],
            span: (0, 200),
            ..Replay::default()
        };
        let s = shares(&config, &replay);
        assert_eq!(s.entity, "share tree node");
        let alice = &s.by_entity["/physics/alice"];
        assert_eq!(alice.configured, Some(0.75 * 0.5));
        assert_eq!(alice.achieved, 0.25);
        assert_eq!(s.by_entity["/bob"].configured, Some(0.25));
        assert_eq!(s.by_entity["/bob"].achieved, 0.5);
        assert_eq!(s.by_entity["/physics/default"].configured, Some(0.375));
        // In the first half all three ran; in the second bob alone.
        assert_eq!(s.interval, 9);
        assert!((s.by_entity["/bob"].over_time[0] - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.by_entity["/bob"].over_time[20], 1.0);
    }

    #[test]
    fn armada_promises_what_its_mode_holds_to_over_time() {
        let runs = vec![
            run("alice", Some("a"), 0, 100),
            run("bob", Some("b"), 0, 100),
        ];
        let replay = Replay {
            runs,
            span: (0, 100),
            ..Replay::default()
        };
        for (mode, a) in [
            // Slices settle at shares ∝ 1/√factor: √2 : 1 (58.6%), not a round's 2/3.
            ("slices", 2f64.sqrt() / (2f64.sqrt() + 1.0)),
            ("drf", 2.0 / 3.0),
        ] {
            let config = ClusterConfig::parse(&format!(
                "hosts: [{{name: n1, slots: 2}}]\nqueues: [{{name: all.q, hostlist: [n1], slots: 2}}]\n\
                 projects: [{{name: a}}, {{name: b}}]\n\
                 scheduler: {{policy: armada, armada: {{mode: {mode}, priority_factors: {{a: 1, b: 2}}}}}}\n"
            ))
            .expect("config");
            let s = shares(&config, &replay);
            assert_eq!(s.entity, "armada queue");
            let promised = |q: &str| s.by_entity[q].configured.expect("promised");
            assert!(
                (promised("a") - a).abs() < 1e-12,
                "{mode}: {}",
                promised("a")
            );
            assert!((promised("b") - (1.0 - a)).abs() < 1e-12, "{mode}");
        }
    }
}
