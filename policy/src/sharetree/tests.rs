use super::tickets::*;
use super::tree::*;
use super::usage::*;

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
