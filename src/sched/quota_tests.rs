//! Resource quota sets in the pass: table cases over the pure scheduling state.

use super::tests::{NOW, config, job, state};
use crate::config::{ClusterConfig, PolicyOrder};
use crate::model::{JobId, JobRecord, PeRequest, SlotRange};

fn owned(id: u32, owner: &str) -> JobRecord {
    let mut j = job(id, |_, _| {});
    j.submitter.owner = owner.into();
    j.submitter.uid = if owner == "alice" { 1001 } else { 1002 };
    j
}

fn starts_of(s: &mut super::state::SchedState) -> Vec<(u32, String)> {
    s.schedule(NOW)
        .starts
        .iter()
        .map(|st| (st.job.0, st.placement.host.clone()))
        .collect()
}

fn quota(cfg: &str) -> String {
    format!("resource_quotas:\n{cfg}")
}

const ALICE_TWO: &str =
    "  - name: cap\n    enabled: true\n    rules:\n      - {users: \"{alice}\", to: slots=2}\n";

fn with_policy(mut c: ClusterConfig, p: PolicyOrder) -> ClusterConfig {
    c.scheduler.policy = p;
    c
}

#[test]
fn a_user_capped_by_a_rule_set_runs_no_more_under_every_policy_and_others_still_start() {
    for policy in [
        PolicyOrder::Sge,
        PolicyOrder::Cluster,
        PolicyOrder::Fbsng,
        PolicyOrder::Armada,
        PolicyOrder::Fifo,
    ] {
        let cfg = with_policy(config(4, 2, &quota(ALICE_TWO)), policy);
        let mut jobs: Vec<JobRecord> = (1..=6).map(|i| owned(i, "alice")).collect();
        jobs.extend((7..=8).map(|i| owned(i, "bob")));
        let mut s = state(cfg, jobs);
        let starts = starts_of(&mut s);
        let alice = starts.iter().filter(|(j, _)| *j <= 6).count();
        let bob = starts.iter().filter(|(j, _)| *j > 6).count();
        assert_eq!((alice, bob), (2, 2), "{policy:?}: {starts:?}");
        let waiting = (1..=6)
            .find(|i| !starts.iter().any(|(j, _)| j == i))
            .expect("a waiting job");
        assert_eq!(
            s.pending_reasons(JobId(waiting)),
            vec![
                "cannot run because it exceeds limit \"alice/////\" in rule \"cap/1\"".to_string()
            ],
            "{policy:?}"
        );
        // The next pass counts the running tasks: nothing more for alice.
        assert!(starts_of(&mut s).is_empty(), "{policy:?}");
    }
}

#[test]
fn a_task_that_ends_gives_its_quota_back() {
    let mut s = state(
        config(2, 4, &quota(ALICE_TWO)),
        (1..=4).map(|i| owned(i, "alice")).collect(),
    );
    let first = starts_of(&mut s);
    assert_eq!(first.len(), 2, "{first:?}");
    let (j, _) = first[0].clone();
    s.task_started(JobId(j), 1).expect("started");
    s.task_ended(JobId(j), 1).expect("ended");
    s.remove_job(JobId(j));
    assert_eq!(starts_of(&mut s).len(), 1);
}

#[test]
fn a_braced_hosts_filter_limits_each_host_on_its_own() {
    let q = quota(
        "  - name: perhost\n    enabled: true\n    rules:\n      - {hosts: \"{*}\", to: slots=1}\n",
    );
    let mut s = state(
        config(3, 4, &q),
        (1..=6).map(|i| owned(i, "alice")).collect(),
    );
    let mut hosts: Vec<String> = starts_of(&mut s).into_iter().map(|(_, h)| h).collect();
    hosts.sort();
    assert_eq!(hosts, ["n1", "n2", "n3"]);
    let reason = s.pending_reasons(JobId(6)).join("|");
    assert!(
        reason.starts_with("cannot run because it exceeds limit \"////n")
            && reason.ends_with("/\" in rule \"perhost/1\""),
        "{reason}"
    );
}

#[test]
fn the_first_matching_rule_decides_and_a_disabled_set_does_nothing() {
    // bob's rule comes first and lets him run 3; the catch-all caps everyone else at 1.
    let q = quota(
        "  - name: two\n    enabled: true\n    rules:\n      - {users: bob, to: slots=3}\n      - {users: \"{*}\", to: slots=1}\n  - name: off\n    rules:\n      - {to: slots=0}\n",
    );
    let mut jobs: Vec<JobRecord> = (1..=4).map(|i| owned(i, "alice")).collect();
    jobs.extend((5..=9).map(|i| owned(i, "bob")));
    let mut s = state(config(4, 4, &q), jobs);
    let starts = starts_of(&mut s);
    assert_eq!(
        starts.iter().filter(|(j, _)| *j <= 4).count(),
        1,
        "{starts:?}"
    );
    assert_eq!(
        starts.iter().filter(|(j, _)| *j > 4).count(),
        3,
        "{starts:?}"
    );
    assert_eq!(
        s.pending_reasons(JobId(9)),
        vec!["cannot run because it exceeds limit \"/////\" in rule \"two/1\"".to_string()]
    );
}

#[test]
fn a_parallel_job_counts_all_its_slots_against_a_cluster_wide_limit() {
    let q = quota(
        "  - name: cap\n    enabled: true\n    rules:\n      - {users: alice, to: slots=3}\n",
    );
    let mut big = owned(1, "alice");
    big.spec.pe = Some(PeRequest {
        name: "mpi".into(),
        range: SlotRange { min: 4, max: 4 },
    });
    let mut small = owned(2, "alice");
    small.spec.pe = Some(PeRequest {
        name: "mpi".into(),
        range: SlotRange { min: 3, max: 3 },
    });
    let mut s = state(config(2, 2, &q), vec![big, small]);
    let starts = starts_of(&mut s);
    assert_eq!(starts.iter().map(|(j, _)| *j).collect::<Vec<_>>(), [2]);
    assert!(
        s.pending_reasons(JobId(1))
            .join("|")
            .contains("exceeds limit \"/////\" in rule \"cap/1\""),
        "{:?}",
        s.pending_reasons(JobId(1))
    );
}

#[test]
fn a_consumable_limit_counts_the_requests_of_running_tasks() {
    let extra = format!(
        "complexes:\n  - {{name: lic, shortcut: lic, type: INT, relop: \"<=\", requestable: \"YES\", consumable: \"YES\", default: \"0\", urgency: 0}}\n{}",
        quota(
            "  - name: lic\n    enabled: true\n    rules:\n      - {users: \"{*}\", to: lic=3}\n"
        )
    );
    let jobs: Vec<JobRecord> = (1..=3)
        .map(|i| {
            let mut j = owned(i, "alice");
            j.spec.hard_resources = vec![crate::model::ResourceRequest {
                name: "lic".into(),
                value: "2".into(),
            }];
            j
        })
        .collect();
    let mut cfg = config(2, 4, &extra);
    for h in &mut cfg.hosts {
        h.complex_values.insert("lic".into(), "10".into());
    }
    let mut s = state(cfg, jobs);
    let n = starts_of(&mut s).len();
    assert_eq!(n, 1, "{:?}", s.pending_reasons(JobId(1)));
    assert!(
        s.pending_reasons(JobId(2))
            .join("|")
            .contains("exceeds limit \"alice/////\" in rule \"lic/1\"")
    );
}

/// `users @acl`: a list's `@unixgroup` entry holds the users of that primary group, as
/// the queues' lists admit them.
#[test]
fn an_access_list_in_a_rule_holds_its_users_and_its_groups_members() {
    let rule = "  - name: acl\n    enabled: true\n    rules:\n      - {users: \"@chemists\", to: slots=1}\n";
    let mut cfg = config(4, 2, &quota(rule));
    let mut list = crate::config::AccessList::new("chemists", "ACL");
    list.entries = vec!["alice".into(), "@chem".into()];
    cfg.access_lists = vec![list];
    let mut jobs = Vec::new();
    for (id, owner, group) in [
        (1, "alice", "alice"),
        (2, "alice", "alice"),
        (3, "bob", "chem"),
        (4, "bob", "chem"),
        (5, "carol", "carol"),
        (6, "carol", "carol"),
    ] {
        let mut j = owned(id, owner);
        j.submitter.group = group.into();
        jobs.push(j);
    }
    let mut s = state(cfg, jobs);
    let starts = starts_of(&mut s);
    let by = |lo: u32, hi: u32| starts.iter().filter(|(j, _)| (lo..=hi).contains(j)).count();
    // The rule has no braces: the list's members share its one slot.
    assert_eq!(by(1, 4), 1, "{starts:?}");
    assert_eq!(by(5, 6), 2, "{starts:?}");
}
