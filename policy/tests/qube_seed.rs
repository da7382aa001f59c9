//! Qube! seeds as tests: qube-cluster-priority.txt and qube-host-selection.txt.

use gridspool_policy::qube::*;
use proptest::prelude::*;

fn p(s: &str) -> ClusterPath {
    ClusterPath::parse(s).expect("valid cluster path in test")
}

fn order(worker: &str, job: &str) -> u32 {
    cluster_priority_order(&p(worker), &p(job))
}

// ---- ClusterPath ------------------------------------------------------------------------------

#[test]
fn cluster_path_parses_root_and_nested_and_round_trips() {
    assert_eq!(p("/").depth(), 0);
    assert_eq!(p("/A").depth(), 1);
    assert_eq!(p("/A/B/C").segments(), ["A", "B", "C"]);
    for s in ["/", "/A", "/A/B/C", "/show/seq_010/shot-3"] {
        assert_eq!(p(s).to_string(), s);
    }
}

#[test]
fn cluster_path_rejects_malformed_text() {
    assert_eq!(ClusterPath::parse(""), Err(ClusterPathError::Empty));
    assert!(matches!(
        ClusterPath::parse("A/B"),
        Err(ClusterPathError::NotAbsolute(_))
    ));
    assert!(matches!(
        ClusterPath::parse("/A//B"),
        Err(ClusterPathError::EmptySegment(_))
    ));
    assert!(matches!(
        ClusterPath::parse("/A/"),
        Err(ClusterPathError::EmptySegment(_))
    ));
    assert!(matches!(
        ClusterPath::parse("//"),
        Err(ClusterPathError::EmptySegment(_))
    ));
    assert!(matches!(
        ClusterPath::parse("/A B"),
        Err(ClusterPathError::InvalidCharacter { character: ' ', .. })
    ));
}

// ---- qube-cluster-priority.txt: the table for a worker in /A/B/C ----------------------------

#[test]
fn qube_cluster_priority_table_own_cluster_is_1() {
    assert_eq!(order("/A/B/C", "/A/B/C"), 1);
}

#[test]
fn qube_cluster_priority_table_one_down_is_2() {
    assert_eq!(order("/A/B/C", "/A/B/C/D"), 2);
}

#[test]
fn qube_cluster_priority_table_two_down_is_2() {
    assert_eq!(order("/A/B/C", "/A/B/C/D/E"), 2);
}

#[test]
fn qube_cluster_priority_table_one_up_is_3() {
    assert_eq!(order("/A/B/C", "/A/B"), 3);
}

#[test]
fn qube_cluster_priority_table_one_down_one_up_is_3() {
    assert_eq!(order("/A/B/C", "/A/B/F"), 3);
}

#[test]
fn qube_cluster_priority_table_two_up_is_4() {
    assert_eq!(order("/A/B/C", "/A"), 4);
}

#[test]
fn qube_cluster_priority_table_root_three_up_is_5() {
    assert_eq!(order("/A/B/C", "/"), 5);
}

#[test]
fn qube_cluster_priority_table_sibling_of_root_g_is_5() {
    assert_eq!(order("/A/B/C", "/G"), 5);
}

// ---- qube-cluster-priority.txt: the jobA / jobB examples ------------------------------------

#[test]
fn qube_cluster_priority_job_a_in_a_and_job_b_in_b_tie_in_c() {
    assert_eq!(order("/C", "/A"), order("/C", "/B"));
}

#[test]
fn qube_cluster_priority_job_a_in_root_and_job_b_in_b_tie_in_c() {
    assert_eq!(order("/C", "/"), order("/C", "/B"));
}

#[test]
fn qube_cluster_priority_job_a_in_a_beats_job_b_in_b_in_a_c() {
    assert!(order("/A/C", "/A") < order("/A/C", "/B"));
    assert_eq!(order("/A/C", "/A"), 3, "climbs one level");
    assert_eq!(order("/A/C", "/B"), 4, "down to / then up two levels");
}

#[test]
fn qube_cluster_priority_a_job_has_second_priority_below_its_branch() {
    // "a job submitted to /A/B/C/D/E ... has 2nd priority in /A/B/C/D"
    assert_eq!(order("/A/B/C/D/E", "/A/B/C/D/E"), 1);
    assert_eq!(order("/A/B/C/D", "/A/B/C/D/E"), 2);
    assert_eq!(order("/", "/A/B/C/D/E"), 2);
}

// ---- ordering for a worker -------------------------------------------------------------------

struct Farm {
    clusters: ClusterTable,
    jobs: Vec<PendingJob>,
}

fn farm(jobs: &[(u64, &str, i64)]) -> Farm {
    let mut clusters = ClusterTable::new();
    let jobs = jobs
        .iter()
        .map(|&(id, c, prio)| PendingJob {
            id: JobId(id),
            cluster: clusters.intern(&p(c)),
            priority: JobPriority(prio),
        })
        .collect();
    Farm { clusters, jobs }
}

fn ids(f: &Farm, order: &[usize]) -> Vec<u64> {
    order.iter().map(|&i| f.jobs[i].id.0).collect()
}

#[test]
fn qube_cluster_priority_worst_job_of_order_1_beats_best_of_order_2() {
    let f = farm(&[
        (1, "/A/B/C/D", 1000), // order 2, best priority
        (2, "/A/B/C", -1000),  // order 1, worst priority
        (3, "/A", 500),        // order 4
        (4, "/A/B", 0),        // order 3
        (5, "/A/B/C", 7),      // order 1
    ]);
    let got = order_jobs_for_worker(&p("/A/B/C"), &f.clusters, &f.jobs);
    assert_eq!(ids(&f, &got), [5, 2, 1, 4, 3]);
}

#[test]
fn qube_host_selection_job_id_breaks_ties_first_come_first_served() {
    let f = farm(&[(9, "/X", 5), (3, "/X", 5), (7, "/X", 5)]);
    let got = order_jobs_for_worker(&p("/X"), &f.clusters, &f.jobs);
    assert_eq!(ids(&f, &got), [3, 7, 9]);
}

proptest! {
    /// The prepared (counting-sort) ordering equals the plain sort for every worker cluster, and
    /// both respect the seed's key.
    #[test]
    fn prepared_ordering_matches_sort(
        jobs in prop::collection::vec((0u64..50, 0usize..6, -3i64..3), 0..60),
        worker in 0usize..6,
    ) {
        let paths = ["/", "/A", "/A/B", "/A/B/C", "/G", "/A/F"];
        let mut clusters = ClusterTable::new();
        let mut seen = std::collections::HashSet::new();
        let jobs: Vec<PendingJob> = jobs
            .into_iter()
            .filter(|(id, _, _)| seen.insert(*id))
            .map(|(id, c, pr)| PendingJob {
                id: JobId(id),
                cluster: clusters.intern(&p(paths[c])),
                priority: JobPriority(pr),
            })
            .collect();
        let w = p(paths[worker]);
        let a = order_jobs_for_worker(&w, &clusters, &jobs);
        let b = PreparedJobs::new(&jobs).order_for_worker(&w, &clusters);
        prop_assert_eq!(&a, &b);
        let key = |i: usize| {
            let j = &jobs[i];
            let c = clusters.get(j.cluster).expect("interned");
            WorkerSortKey::new(cluster_priority_order(&w, c), j.priority, j.id)
        };
        for pair in a.windows(2) {
            prop_assert!(key(pair[0]) < key(pair[1]));
        }
    }

    /// The formula never ranks another cluster above the own one, and is 1 only there.
    #[test]
    fn own_cluster_is_uniquely_first(a in 0usize..6, b in 0usize..6) {
        let paths = ["/", "/A", "/A/B", "/A/B/C", "/G", "/A/F"];
        let o = order(paths[a], paths[b]);
        prop_assert_eq!(o == 1, a == b);
        prop_assert!(o >= 1);
    }
}

// ---- preemption (qube-host-selection.txt) ------------------------------------------------------

struct Scene {
    clusters: ClusterTable,
    hosts: Vec<HostView>,
    running: Vec<RunningInstance>,
}

fn scene(hosts: &[(u32, &str, u32, bool)], running: &[(u64, &str, i64, u32, bool, u32)]) -> Scene {
    let mut clusters = ClusterTable::new();
    let hosts = hosts
        .iter()
        .map(|&(id, c, idle, ok)| HostView {
            id: HostId(id),
            cluster: clusters.intern(&p(c)),
            idle_slots: idle,
            satisfies_job: ok,
        })
        .collect();
    let running = running
        .iter()
        .map(
            |&(job, c, prio, host, preemptible, slots)| RunningInstance {
                job: JobId(job),
                instance: 0,
                cluster: clusters.intern(&p(c)),
                priority: JobPriority(prio),
                host: HostId(host),
                preemptible,
                slots,
            },
        )
        .collect();
    Scene {
        clusters,
        hosts,
        running,
    }
}

fn pending(s: &mut Scene, cluster: &str, prio: i64, instances: u32, slots: u32) -> PreemptingJob {
    PreemptingJob {
        id: JobId(1000),
        cluster: s.clusters.intern(&p(cluster)),
        priority: JobPriority(prio),
        pending_instances: instances,
        slots_per_instance: slots,
    }
}

fn victim_jobs(plan: &PreemptionPlan) -> Vec<u64> {
    plan.victims.iter().map(|v| v.job.0).collect()
}

#[test]
fn qube_host_selection_idle_slots_first_means_no_preemption() {
    let mut s = scene(
        &[(1, "/", 2, true), (2, "/", 0, true)],
        &[(10, "/", 0, 2, true, 1)],
    );
    let j = pending(&mut s, "/", 100, 2, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(plan.dispatch_idle, [(HostId(1), 2)]);
    assert!(plan.victims.is_empty());
    assert_eq!(plan.still_pending, 0);
}

#[test]
fn qube_host_selection_preempts_only_lower_priority() {
    let mut s = scene(
        &[(1, "/", 0, true), (2, "/", 0, true)],
        &[(10, "/", 200, 1, true, 1), (11, "/", 5, 2, true, 1)],
    );
    let j = pending(&mut s, "/", 100, 2, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(victim_jobs(&plan), [11]);
    assert_eq!(plan.dispatch_after_preemption, [(HostId(2), 1)]);
    assert_eq!(plan.still_pending, 1);
}

#[test]
fn qube_host_selection_equal_priority_later_job_loses_but_not_earlier() {
    // Effective priority includes the id tie-breaker: an equal-priority job submitted later
    // (larger id) ranks below the pending one, an earlier one above.
    let mut s = scene(
        &[(1, "/", 0, true), (2, "/", 0, true)],
        &[(5, "/", 100, 1, true, 1), (2000, "/", 100, 2, true, 1)],
    );
    let j = pending(&mut s, "/", 100, 2, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(victim_jobs(&plan), [2000]);
}

#[test]
fn qube_host_selection_never_preempts_non_preemptible() {
    let mut s = scene(&[(1, "/", 0, true)], &[(10, "/", 0, 1, false, 1)]);
    let j = pending(&mut s, "/", 100, 1, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Aggressive,
    );
    assert!(plan.victims.is_empty());
    assert_eq!(plan.still_pending, 1);
}

#[test]
fn qube_host_selection_only_hosts_that_satisfy_requirements() {
    let mut s = scene(
        &[(1, "/", 4, false), (2, "/", 0, false), (3, "/", 0, true)],
        &[(10, "/", 0, 2, true, 1), (11, "/", 0, 3, true, 1)],
    );
    let j = pending(&mut s, "/", 100, 2, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert!(
        plan.dispatch_idle.is_empty(),
        "idle slots on host 1 do not satisfy the job"
    );
    assert_eq!(victim_jobs(&plan), [11]);
    assert_eq!(plan.still_pending, 1);
}

#[test]
fn qube_host_selection_effective_priority_uses_the_hosts_cluster() {
    // On a worker in /render, a /render job of numeric priority 1 outranks a /comp job of 900:
    // the /comp instance there is a victim, the same instance on a /comp worker is not.
    let mut s = scene(
        &[(1, "/render", 0, true), (2, "/comp", 0, true)],
        &[
            (10, "/comp", 900, 1, true, 1),
            (11, "/comp", 900, 2, true, 1),
        ],
    );
    let j = pending(&mut s, "/render", 1, 2, 1);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(victim_jobs(&plan), [10]);
    assert_eq!(plan.still_pending, 1);
}

#[test]
fn qube_host_selection_passive_finishes_piece_aggressive_kills() {
    let mut s = scene(&[(1, "/", 0, true)], &[(10, "/", 0, 1, true, 1)]);
    let j = pending(&mut s, "/", 100, 1, 1);
    let passive = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(passive.victims[0].mode, PreemptionMode::FinishCurrentPiece);
    let aggressive = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Aggressive,
    );
    assert_eq!(aggressive.victims[0].mode, PreemptionMode::KillAndRequeue);
    assert_eq!(PreemptionPolicy::default(), PreemptionPolicy::Passive);
}

#[test]
fn qube_host_selection_worst_victims_first_and_idle_slots_count_toward_an_instance() {
    // The job needs 4 slots per instance. Host 1 has 1 idle slot and two 1-slot victims (not
    // enough); host 2 has two 2-slot victims (enough). Host 1's partial gathering is dropped.
    let mut s = scene(
        &[(1, "/", 1, true), (2, "/", 0, true)],
        &[
            (10, "/", 0, 1, true, 1),
            (11, "/", 0, 1, true, 1),
            (12, "/", 3, 2, true, 2),
            (13, "/", 3, 2, true, 2),
        ],
    );
    let j = pending(&mut s, "/", 100, 1, 4);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    let mut v = victim_jobs(&plan);
    v.sort_unstable();
    assert_eq!(v, [12, 13]);
    assert_eq!(plan.dispatch_after_preemption, [(HostId(2), 1)]);
    assert_eq!(plan.still_pending, 0);

    // With a 3-slot job, host 1 (1 idle + worst victims 11 and 10) completes first.
    let j = pending(&mut s, "/", 100, 1, 3);
    let plan = plan_preemption(
        &j,
        &s.hosts,
        &s.running,
        &s.clusters,
        PreemptionPolicy::Passive,
    );
    assert_eq!(victim_jobs(&plan), [11, 10]);
    assert_eq!(plan.dispatch_after_preemption, [(HostId(1), 1)]);
}

// ---- selection events --------------------------------------------------------------------------

fn selectable(
    clusters: &mut ClusterTable,
    id: u64,
    c: &str,
    prio: i64,
    state: ReadyState,
    reserved: &[u32],
) -> SelectableJob {
    SelectableJob {
        id: JobId(id),
        cluster: clusters.intern(&p(c)),
        priority: JobPriority(prio),
        state,
        reserved_global: reserved.iter().map(|&r| GlobalResourceId(r)).collect(),
    }
}

#[test]
fn qube_host_selection_slot_freed_selects_pending_jobs_the_worker_can_run_in_order() {
    let mut c = ClusterTable::new();
    let jobs = vec![
        selectable(&mut c, 1, "/B", 50, ReadyState::Pending, &[]),
        selectable(&mut c, 2, "/A", 1, ReadyState::RunningWithPending, &[]),
        selectable(&mut c, 3, "/A", 99, ReadyState::NotReady, &[]),
        selectable(&mut c, 4, "/A", 60, ReadyState::Pending, &[]),
        selectable(&mut c, 5, "/A", 70, ReadyState::Pending, &[]),
    ];
    let worker = c.intern(&p("/A"));
    let ev = SelectionEvent::SlotFreed {
        host: HostId(1),
        worker_cluster: worker,
    };
    // Job 5 needs something the worker lacks.
    let got = selection_candidates(&ev, &jobs, &c, |i| jobs[i].id != JobId(5));
    assert_eq!(got, SelectionCandidates::ForWorker(vec![3, 1, 0]));
}

#[test]
fn qube_host_selection_state_change_considers_that_job_with_preemption() {
    let mut c = ClusterTable::new();
    let jobs = vec![
        selectable(&mut c, 1, "/", 0, ReadyState::Pending, &[]),
        selectable(&mut c, 2, "/", 0, ReadyState::Pending, &[]),
    ];
    for change in [
        JobStateChange::Submitted,
        JobStateChange::Retried,
        JobStateChange::Unblocked,
        JobStateChange::Shoved,
    ] {
        let ev = SelectionEvent::JobStateChanged {
            job: JobId(2),
            change,
        };
        assert_eq!(
            selection_candidates(&ev, &jobs, &c, |_| true),
            SelectionCandidates::ForJob {
                index: 1,
                consider_preemption: true
            }
        );
    }
    let ev = SelectionEvent::JobStateChanged {
        job: JobId(7),
        change: JobStateChange::Shoved,
    };
    assert_eq!(
        selection_candidates(&ev, &jobs, &c, |_| true),
        SelectionCandidates::UnknownJob(JobId(7))
    );
}

#[test]
fn qube_host_selection_global_resource_only_ready_jobs_that_reserved_it() {
    let mut c = ClusterTable::new();
    let jobs = vec![
        selectable(&mut c, 1, "/", 10, ReadyState::Pending, &[7]),
        selectable(&mut c, 2, "/", 10, ReadyState::Pending, &[8]),
        selectable(&mut c, 3, "/", 90, ReadyState::ActiveExpandable, &[8, 7]),
        selectable(&mut c, 4, "/", 99, ReadyState::NotReady, &[7]),
        selectable(&mut c, 5, "/", 10, ReadyState::RunningWithPending, &[7]),
    ];
    let ev = SelectionEvent::GlobalResourceAvailable {
        resource: GlobalResourceId(7),
    };
    assert_eq!(
        selection_candidates(&ev, &jobs, &c, |_| unreachable!("no worker involved")),
        SelectionCandidates::ForGlobalResource(vec![2, 0, 4])
    );
}
