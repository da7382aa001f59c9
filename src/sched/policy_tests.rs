//! Pass-level table cases for the `cluster` (Qube!) and `armada` policies, through the real
//! pass, categories and fit.

use super::state::SchedState;
use super::tests::{NOW, job, state};
use crate::config::ClusterConfig;
use crate::model::JobId;

/// Hosts given as (name, slots, cluster), one queue `all.q` over all, and a scheduler line.
fn cfg(hosts: &[(&str, u32, &str)], scheduler: &str) -> ClusterConfig {
    let mut text = String::from("hosts:\n");
    for (n, s, c) in hosts {
        text.push_str(&format!(
            "  - {{name: {n}, slots: {s}, cluster: \"{c}\"}}\n"
        ));
    }
    let names: Vec<&str> = hosts.iter().map(|h| h.0).collect();
    let max = hosts.iter().map(|h| h.1).max().unwrap_or(1);
    text.push_str(&format!(
        "queues:\n  - {{name: all.q, hostlist: [{}], slots: {max}}}\n",
        names.join(", ")
    ));
    text.push_str(&format!("scheduler: {scheduler}\n"));
    ClusterConfig::parse(&text).unwrap_or_else(|e| panic!("config: {e}\n{text}"))
}

/// `-p` counts alone: priority = npprior.
const BY_POSIX: &str = "weight_priority: 1, weight_urgency: 0, weight_ticket: 0";

fn starts(s: &mut SchedState, now: i64) -> Vec<(u32, String)> {
    s.schedule(now)
        .starts
        .iter()
        .map(|st| (st.job.0, st.placement.host.clone()))
        .collect()
}

/// Marks every started task running and ends it, so its slot is free again.
fn finish(s: &mut SchedState, started: &[(u32, String)]) {
    for (j, _) in started {
        let id = JobId(*j);
        s.task_started(id, 1).expect("started");
        s.task_ended(id, 1).expect("ended");
    }
}

/// Seed `qube-cluster-priority`, the table for a worker in /A/B/C: one slot, eight jobs whose
/// numeric priority runs against their cluster order; the worker takes them in cluster order
/// 1, 2, 2, 3, 3, 4, 5, 5 (priority breaking ties within an order).
#[test]
fn seed_qube_worker_in_abc_takes_jobs_in_cluster_order() {
    let clusters = [
        "/G",
        "/",
        "/A",
        "/A/B/F",
        "/A/B",
        "/A/B/C/D/E",
        "/A/B/C/D",
        "/A/B/C",
    ];
    let jobs = clusters
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // Job 1 (/G) has the highest priority, job 8 (/A/B/C) the lowest.
            job(i as u32 + 1, |s, _| {
                s.cluster = Some((*c).to_string());
                s.priority = 100 - 10 * i as i32;
            })
        })
        .collect();
    let mut s = state(
        cfg(
            &[("w1", 1, "/A/B/C")],
            &format!("{{policy: cluster, {BY_POSIX}}}"),
        ),
        jobs,
    );
    let mut order = Vec::new();
    for k in 0..8 {
        let st = starts(&mut s, NOW + k);
        assert_eq!(st.len(), 1, "pass {k}");
        order.push(clusters[st[0].0 as usize - 1]);
        finish(&mut s, &st);
    }
    // Within one order, higher priority first: /A/B/C/D/E (50) before /A/B/C/D (40),
    // /A/B/F (70) before /A/B (60), /G (100) before / (90).
    assert_eq!(
        order,
        [
            "/A/B/C",
            "/A/B/C/D/E",
            "/A/B/C/D",
            "/A/B/F",
            "/A/B",
            "/A",
            "/G",
            "/"
        ]
    );
}

/// "A Worker will run the lowest-priority job that is in its own cluster before it runs the
/// highest-priority job from any other cluster" — and each host uses its own order.
#[test]
fn seed_qube_each_host_prefers_its_own_cluster_even_with_lower_priority() {
    let jobs = vec![
        job(1, |s, _| {
            s.cluster = Some("/B".into());
            s.priority = 1000;
        }),
        job(2, |s, _| {
            s.cluster = Some("/A/B/C".into());
            s.priority = -1000;
        }),
        job(3, |s, _| {
            s.context.insert("cluster".into(), "/B".into());
            s.priority = 500;
        }),
    ];
    let mut s = state(
        cfg(
            &[("w1", 1, "/A/B/C"), ("w2", 1, "/B")],
            &format!("{{policy: cluster, {BY_POSIX}}}"),
        ),
        jobs,
    );
    let mut st = starts(&mut s, NOW);
    st.sort();
    assert_eq!(st, [(1, "w2".to_string()), (2, "w1".to_string())]);
    let terms = s.policy_terms(JobId(3));
    assert!(
        terms.iter().any(|(k, v)| k == "cluster order" && v == "1"),
        "{terms:?}"
    );
    let written = s.record_for_write(JobId(3)).expect("record");
    assert_eq!(written.priority.expect("priority").policy_terms, terms);
    assert!(
        s.pending_reasons(JobId(3))
            .join(" ")
            .contains("policy cluster"),
        "{:?}",
        s.pending_reasons(JobId(3))
    );
}

/// Seed `qube-cluster-priority` jobA/jobB: jobA in /A, jobB in /B; on a worker in /A/C, jobA
/// (one level up) beats jobB (two levels) whatever their priorities; on a worker in /C they
/// tie, and priority decides.
#[test]
fn seed_qube_job_a_job_b() {
    let mk = || {
        vec![
            job(1, |s, _| {
                s.cluster = Some("/A".into());
                s.priority = -10;
            }),
            job(2, |s, _| {
                s.cluster = Some("/B".into());
                s.priority = 10;
            }),
        ]
    };
    let sched = format!("{{policy: cluster, {BY_POSIX}}}");
    let mut s = state(cfg(&[("w", 1, "/A/C")], &sched), mk());
    assert_eq!(starts(&mut s, NOW), [(1, "w".to_string())]);
    let mut s = state(cfg(&[("w", 1, "/C")], &sched), mk());
    assert_eq!(starts(&mut s, NOW), [(2, "w".to_string())]);
}

fn armada_jobs(per_project: u32) -> Vec<crate::model::JobRecord> {
    let mut v = Vec::new();
    for i in 0..per_project * 2 {
        let p = if i % 2 == 0 { "a" } else { "b" };
        v.push(job(i + 1, |s, _| s.project = Some(p.into())));
    }
    v
}

fn shares_of(st: &[(u32, String)]) -> (usize, usize) {
    let a = st.iter().filter(|(j, _)| j % 2 == 1).count();
    (a, st.len() - a)
}

/// Seed `armada-fair-share`: priorities 1 and 2 give slices of 2/3 and 1/3. Two idle projects
/// with priority factors 1 and 2 share 30 free slots 20/10 in one pass, in slice mode and in
/// DRF mode.
#[test]
fn seed_armada_shares_follow_priorities() {
    for mode in ["slices", "drf"] {
        let sched = format!(
            "{{policy: armada, armada: {{mode: {mode}, seed: 7, priority_factors: {{a: 1, b: 2}}}}}}"
        );
        let mut s = state(
            cfg(&[("n1", 15, "/"), ("n2", 15, "/")], &sched),
            armada_jobs(40),
        );
        let st = starts(&mut s, NOW);
        assert_eq!(st.len(), 30, "{mode}");
        assert_eq!(shares_of(&st), (20, 10), "{mode}");
        let terms = s.policy_terms(JobId(80));
        assert!(
            terms.iter().any(|(k, v)| k == "share" && v == "0.3333"),
            "{mode}: {terms:?}"
        );
        let written = s.record_for_write(JobId(80)).expect("record");
        assert_eq!(
            written.priority.expect("priority").policy_terms,
            terms.to_vec()
        );
        assert!(
            s.pending_reasons(JobId(80)).join(" ").contains("slice"),
            "{mode}: {:?}",
            s.pending_reasons(JobId(80))
        );
    }
}

/// Armada over a long run: as tasks finish and priorities decay toward usage, the two
/// projects keep starting in the ratio the seed's shares give (equal factors: 50/50 within
/// ±5 % over many starts), and the probabilistic picks are the same for the same seed.
#[test]
fn armada_long_run_is_fair_and_deterministic_for_a_seed() {
    let run = || {
        let sched =
            "{policy: armada, armada: {seed: 42, halftime: 60, probabilistic_for_all: true}}";
        let mut s = state(cfg(&[("n1", 7, "/")], sched), armada_jobs(600));
        let mut all = Vec::new();
        for k in 0..200 {
            let st = starts(&mut s, NOW + 10 * k);
            finish(&mut s, &st);
            all.extend(st);
        }
        all
    };
    let a = run();
    assert_eq!(a, run(), "same seed, same order");
    let (x, y) = shares_of(&a);
    assert!(a.len() >= 1000, "{}", a.len());
    let frac = x as f64 / (x + y) as f64;
    assert!((frac - 0.5).abs() <= 0.05, "{x}/{y}");
}

/// One decay step per pass: a queue's priority moves toward its usage by the halftime's
/// factor once, new = β·old + (1−β)·usage with β = 0.5 after one halftime; a queue with both
/// a priority and running tasks was once updated twice per pass (0.75 of the way instead of
/// 0.5, a halved halftime).
#[test]
fn armada_priority_decays_once_per_pass() {
    let sched = "{policy: armada, armada: {seed: 3, halftime: 600}}";
    let jobs = (1..=10)
        .map(|i| job(i, |s, _| s.project = Some("a".into())))
        .collect();
    let mut s = state(cfg(&[("n1", 10, "/")], sched), jobs);
    // The first pass sees nothing running yet: no priority for `a`.
    assert_eq!(starts(&mut s, NOW).len(), 10);
    let usage = gridspool_policy::armada::ResourceFactors::from_totals(&[10.0], 0)
        .expect("factors")
        .usage(&[10.0]);
    let priority = |s: &mut SchedState| s.armada_state_mut().priorities.get("a").copied();
    // One halftime later, the ten slots held: half-way from 0 to the usage.
    s.schedule(NOW + 600);
    let p1 = priority(&mut s).expect("a");
    assert!((p1 - 0.5 * usage).abs() < 1e-9, "{p1} / {usage}");
    // Another halftime: half-way again, to three quarters (not 7/8, two steps).
    s.schedule(NOW + 1200);
    let p2 = priority(&mut s).expect("a");
    assert!((p2 - 0.75 * usage).abs() < 1e-9, "{p2} / {usage}");
}

/// No starvation: under `cluster`, a job of a far cluster still starts once the host's own
/// cluster has no more work; under `armada`, a project with a large factor still gets slots.
#[test]
fn no_job_starves_under_cluster_or_armada() {
    let mut jobs: Vec<_> = (1..=20)
        .map(|i| job(i, |s, _| s.cluster = Some("/A".into())))
        .collect();
    jobs.push(job(21, |s, _| s.cluster = Some("/Z/Y/X".into())));
    let mut s = state(cfg(&[("w", 2, "/A")], "{policy: cluster}"), jobs);
    let mut seen = false;
    for k in 0..20 {
        let st = starts(&mut s, NOW + k);
        seen |= st.iter().any(|(j, _)| *j == 21);
        finish(&mut s, &st);
    }
    assert!(seen, "job 21 never started");

    let sched = "{policy: armada, armada: {seed: 1, priority_factors: {b: 50}}}";
    let mut s = state(cfg(&[("n1", 4, "/")], sched), armada_jobs(100));
    let mut b = 0;
    for k in 0..50 {
        let st = starts(&mut s, NOW + k);
        b += shares_of(&st).1;
        finish(&mut s, &st);
    }
    assert!(b > 0, "project b starved");
}

/// Two queues `a.q` and `b.q` on one host of `slots` slots, with FBSNG parameters.
fn fbsng_cfg(slots: u32, a: &str, b: &str, extra: &str) -> ClusterConfig {
    let text = format!(
        "hosts:\n  - {{name: n1, slots: {slots}, attributes: [ssd]}}\n\
         queues:\n  - {{name: a.q, hostlist: [n1], slots: {slots}, fbsng: {a}}}\n\
         \x20 - {{name: b.q, hostlist: [n1], slots: {slots}, fbsng: {b}}}\n\
         {extra}scheduler: {{policy: fbsng}}\n"
    );
    ClusterConfig::parse(&text).unwrap_or_else(|e| panic!("config: {e}\n{text}"))
}

fn queued(id: u32, q: &str) -> crate::model::JobRecord {
    job(id, |s, _| s.hard_queues = vec![q.to_string()])
}

/// a.q's share of 1,000 starts through the real pass (one slot, one start per pass), both queues
/// kept full; the state is returned for more checks.
fn fbsng_a_share(a: &str, b: &str) -> (f64, SchedState) {
    let mut jobs = Vec::new();
    for i in 0..700 {
        jobs.push(queued(2 * i + 1, "a.q"));
        jobs.push(queued(2 * i + 2, "b.q"));
    }
    let mut s = state(fbsng_cfg(1, a, b, ""), jobs);
    let mut taken = 0usize;
    for k in 0..1000 {
        let st = starts(&mut s, NOW + k);
        assert_eq!(st.len(), 1, "pass {k}");
        taken += usize::from(st[0].0 % 2 == 1);
        finish(&mut s, &st);
    }
    (taken as f64 / 1000.0, s)
}

/// Seed `fbsng-dynamic-priorities`, goal 2: QPD 3 and 7 (QPI 1) split the starts 70/30, by the
/// seed's formula `QPD(A)/QPD(B) = share(B)/share(A)` (the default `rule: share`).
#[test]
fn seed_fbsng_70_30_split_through_the_pass() {
    let (frac, mut s) = fbsng_a_share("{qpd: 3}", "{qpd: 7}");
    assert!((frac - 0.7).abs() <= 0.01, "a.q took {frac}");
    assert!(
        s.policy_terms(JobId(1399))
            .iter()
            .any(|(k, _)| k == "queue priority")
    );
    // The priorities survive a restart through their JSON.
    let saved = serde_json::to_string(s.fbsng_state()).expect("json");
    let back: super::fbsng::FbsngState = serde_json::from_str(&saved).expect("json");
    assert_eq!(back.queues, s.fbsng_state().queues);
    assert_eq!(back.sections, s.fbsng_state().sections);
    let dir = tempfile::tempdir().expect("tempdir");
    s.fbsng_state_mut().dirty = true;
    s.fbsng_state_mut()
        .save_if_changed(dir.path())
        .expect("save");
    let loaded = super::fbsng::FbsngState::load(dir.path()).expect("load");
    assert_eq!(loaded.queues, s.fbsng_state().queues);
}

/// The formula at another ratio (QPD 1 and 2: 2/3 and 1/3), and `rule: update` in the
/// configuration reaching the seed's update rule (shares `1/(QPD + QPI)`: 3/5 and 2/5).
#[test]
fn fbsng_start_rule_from_the_configuration() {
    let (share, _) = fbsng_a_share("{qpd: 1}", "{qpd: 2}");
    assert!(
        (share - 2.0 / 3.0).abs() <= 0.01,
        "rule share: a.q took {share}"
    );
    let (update, _) = fbsng_a_share("{qpd: 1, rule: update}", "{qpd: 2, rule: update}");
    assert!(
        (update - 0.6).abs() <= 0.01,
        "rule update: a.q took {update}"
    );
}

/// QPG holds: a queue more than QPG above another holds it even though a slot idles (its own
/// job needs an attribute no host has), until its priority comes back within the gap.
#[test]
fn seed_fbsng_queue_gap_holds_lower_queues() {
    let held = job(1, |s, _| {
        s.hard_queues = vec!["a.q".into()];
        s.context.insert("requires".into(), "gpu".into());
    });
    let mut s = state(
        fbsng_cfg(2, "{qpg: 10}", "{}", ""),
        vec![held, queued(2, "b.q")],
    );
    let mut st = super::fbsng::FbsngState::default();
    st.queues.insert("a.q".into(), 50);
    s.set_fbsng_state(st.clone());
    assert!(starts(&mut s, NOW).is_empty());
    let why = s.pending_reasons(JobId(2)).join(" ");
    assert!(why.contains("queue priority gap"), "{why}");
    assert!(
        s.pending_reasons(JobId(1))
            .join(" ")
            .contains("node attributes"),
        "{:?}",
        s.pending_reasons(JobId(1))
    );
    st.queues.insert("a.q".into(), 5);
    s.set_fbsng_state(st);
    assert_eq!(starts(&mut s, NOW + 1), [(2, "n1".to_string())]);
    // A job requiring an attribute the host has runs there.
    let ssd = job(3, |s, _| {
        s.hard_queues = vec!["b.q".into()];
        s.context.insert("requires".into(), "ssd".into());
    });
    assert!(s.add_job(ssd));
    assert_eq!(starts(&mut s, NOW + 2), [(3, "n1".to_string())]);
}

/// With no free slot the pass builds no sections: the terms still show each job's stored
/// section priority (read by row), and 0 for the others.
#[test]
fn fbsng_terms_show_stored_section_priorities_on_a_full_cluster() {
    let mut s = state(
        fbsng_cfg(1, "{}", "{}", ""),
        vec![queued(1, "a.q"), queued(2, "a.q"), queued(3, "b.q")],
    );
    assert_eq!(starts(&mut s, NOW).len(), 1);
    let mut st = s.fbsng_state().clone();
    st.sections.insert(JobId(3), 7);
    st.sections.insert(JobId(99), 4);
    s.set_fbsng_state(st);
    assert!(starts(&mut s, NOW + 60).is_empty());
    let section = |id: u32| {
        s.policy_terms(JobId(id))
            .iter()
            .find(|(k, _)| k == "section priority")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(section(3).as_deref(), Some("7"));
    assert_eq!(section(2).as_deref(), Some("0"));
}

/// Process types: a project's `max_slots` quota caps its running tasks.
#[test]
fn fbsng_project_quota_caps_running_slots() {
    let jobs = (1..=4)
        .map(|i| {
            job(i, |s, _| {
                s.hard_queues = vec!["a.q".into()];
                s.project = Some("bulk".into());
            })
        })
        .collect();
    let mut s = state(
        fbsng_cfg(4, "{}", "{}", "projects:\n  - {name: bulk, max_slots: 2}\n"),
        jobs,
    );
    assert_eq!(starts(&mut s, NOW).len(), 2);
}

/// Every example configuration of `spool/examples/` parses and selects its seed's policy.
#[test]
fn example_configurations_parse() {
    use crate::config::{ArmadaMode, PolicyOrder, PreemptionSetting};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spool/examples");
    let load =
        |name: &str| ClusterConfig::load(&dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let q = load("qube.yaml");
    assert_eq!(q.scheduler.policy, PolicyOrder::Cluster);
    assert_eq!(q.scheduler.preemption, PreemptionSetting::Passive);
    assert_eq!(q.hosts[0].cluster.as_deref(), Some("/studio/fx"));
    let f = load("fbsng.yaml");
    assert_eq!(f.scheduler.policy, PolicyOrder::Fbsng);
    assert_eq!((f.queues[0].fbsng.qpd, f.queues[1].fbsng.qpd), (3, 7));
    assert_eq!(f.projects[0].max_slots, Some(12));
    let a = load("armada.yaml");
    assert_eq!(a.scheduler.policy, PolicyOrder::Armada);
    assert_eq!(a.scheduler.armada.mode, ArmadaMode::Slices);
    assert_eq!(
        a.scheduler.armada.priority_factors.get("biology"),
        Some(&2.0)
    );
    let s = load("sge-seed-site.yaml");
    assert_eq!(s.scheduler.policy, PolicyOrder::Sge);
    let urg: Vec<f64> = s.queues.iter().map(|q| q.urgency).collect();
    assert_eq!(urg, [0.0, 40_000.0, 80_000.0]);
    assert_eq!(
        (s.scheduler.weight_urgency, s.scheduler.weight_ticket),
        (0.5, 0.5)
    );
    assert_eq!(s.scheduler.weight_waiting_time, 0.278);
    assert_eq!(s.scheduler.weight_tickets_share, 10_000.0);
    assert_eq!(s.scheduler.halftime, 14.0 * 24.0);
    assert!(s.share_tree.is_some());
    assert_eq!(s.complex("slots").map(|c| c.urgency), Some(100.0));
    // Each builds a scheduler state.
    for c in [q, f, a, s] {
        let st = SchedState::new(c);
        assert_eq!(st.job_count(), 0);
    }
}

fn started_tasks(s: &mut SchedState, now: i64) -> Vec<(u32, u32, String, bool)> {
    let r = s.schedule(now);
    r.starts
        .iter()
        .map(|st| (st.job.0, st.task, st.placement.host.clone(), st.restarted))
        .collect()
}

/// Seed `qube-host-selection`, aggressive preemption: a job submitted into the host's own
/// cluster finds no idle slot; the running task of a foreign-cluster job is killed and
/// requeued (the preempted run is handed back for accounting), the new job runs, and the
/// victim runs again later as a restart. Nothing is lost; `-no_preempt` jobs are spared.
#[test]
fn seed_qube_aggressive_preemption_requeues_the_victim() {
    let sched = "{policy: cluster, preemption: aggressive}";
    let mut s = state(
        cfg(&[("w1", 1, "/A")], sched),
        vec![job(1, |s, _| s.cluster = Some("/B".into()))],
    );
    assert_eq!(started_tasks(&mut s, NOW), [(1, 1, "w1".into(), false)]);
    s.task_started(JobId(1), 1).expect("running");
    assert!(s.add_job(job(2, |s, _| s.cluster = Some("/A".into()))));
    let r = s.schedule(NOW + 1);
    assert!(r.starts.is_empty());
    assert_eq!(r.preemptions.len(), 1, "{:?}", r.preemptions);
    let p = &r.preemptions[0];
    assert_eq!(
        (p.job, p.task, p.for_job, p.kill),
        (JobId(1), 1, JobId(2), true)
    );
    // The daemon kills it; its end comes back as a preempted end, not a finish.
    let ran = s.preempted_task_ended(JobId(1), 1).expect("preempted run");
    assert_eq!(ran.host, "w1");
    assert!(s.preempted_task_ended(JobId(1), 1).is_none());
    assert_eq!(started_tasks(&mut s, NOW + 2), [(2, 1, "w1".into(), false)]);
    s.task_started(JobId(2), 1).expect("running");
    s.task_ended(JobId(2), 1).expect("ended");
    // The victim runs again, as a restart.
    assert_eq!(started_tasks(&mut s, NOW + 3), [(1, 1, "w1".into(), true)]);
    assert!(s.job(JobId(1)).expect("job").tasks.running[0].restarted);

    // A -no_preempt job is never a victim.
    let mut s = state(
        cfg(&[("w1", 1, "/A")], sched),
        vec![job(1, |s, _| {
            s.cluster = Some("/B".into());
            s.no_preempt = true;
        })],
    );
    assert_eq!(started_tasks(&mut s, NOW).len(), 1);
    assert!(s.add_job(job(2, |s, _| s.cluster = Some("/A".into()))));
    assert!(s.schedule(NOW + 1).preemptions.is_empty());
}

/// Preemption under SGE's order (gridspool's combination, `docs/policies.md`): aggressive
/// only, every host and job in the root cluster, so a pending job preempts running jobs of
/// lower SGE priority on hosts it fits; equal or higher priorities are left alone.
#[test]
fn aggressive_preemption_under_the_sge_order() {
    let sched = format!("{{policy: sge, preemption: aggressive, {BY_POSIX}}}");
    let mut s = state(
        cfg(&[("w1", 1, "/A")], &sched),
        vec![job(1, |s, _| s.priority = -100)],
    );
    assert_eq!(started_tasks(&mut s, NOW), [(1, 1, "w1".into(), false)]);
    s.task_started(JobId(1), 1).expect("running");
    // Lower than the running job: waits.
    assert!(s.add_job(job(2, |s, _| s.priority = -200)));
    assert!(s.schedule(NOW + 1).preemptions.is_empty());
    // Higher: the running job is killed and requeued.
    assert!(s.add_job(job(3, |s, _| s.priority = 0)));
    let r = s.schedule(NOW + 2);
    assert_eq!(r.preemptions.len(), 1, "{:?}", r.preemptions);
    let p = &r.preemptions[0];
    assert_eq!(
        (p.job, p.task, p.for_job, p.kill),
        (JobId(1), 1, JobId(3), true)
    );
    assert!(s.preempted_task_ended(JobId(1), 1).is_some());
    assert_eq!(started_tasks(&mut s, NOW + 3), [(3, 1, "w1".into(), false)]);

    for (sched, why) in [
        (
            "{policy: sge, preemption: passive}",
            "passive needs policy cluster",
        ),
        ("{policy: fbsng, preemption: aggressive}", "not fbsng"),
    ] {
        let text = format!(
            "hosts:\n  - {{name: w1, slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [w1], slots: 1}}\nscheduler: {sched}\n"
        );
        let err = ClusterConfig::parse(&text).expect_err(sched);
        assert!(err.contains(why), "{err}");
    }
}

/// Passive preemption: the victim's running array task finishes, and the job starts no more
/// tasks on that host while the preemptor waits; its other tasks run elsewhere.
#[test]
fn seed_qube_passive_preemption_lets_the_task_finish_and_starts_no_more_there() {
    let sched = "{policy: cluster, preemption: passive}";
    let mut s = state(
        cfg(&[("w1", 1, "/A"), ("w2", 1, "/B")], sched),
        vec![job(1, |s, _| {
            s.cluster = Some("/B".into());
            s.array = Some(crate::model::TaskIdRange::new(1, 4, 1));
        })],
    );
    let mut st = started_tasks(&mut s, NOW);
    st.sort();
    assert_eq!(st, [(1, 1, "w1".into(), false), (1, 2, "w2".into(), false)]);
    for t in [1, 2] {
        s.task_started(JobId(1), t).expect("running");
    }
    assert!(s.add_job(job(2, |s, _| s.cluster = Some("/A".into()))));
    let r = s.schedule(NOW + 1);
    assert_eq!(r.preemptions.len(), 1, "{:?}", r.preemptions);
    let p = &r.preemptions[0];
    assert_eq!(
        (p.job, p.task, p.host.as_str(), p.kill),
        (JobId(1), 1, "w1", false)
    );
    // Task 1 keeps running (nothing is killed) and finishes normally.
    assert!(s.preempted_task_ended(JobId(1), 1).is_none());
    s.task_ended(JobId(1), 1).expect("ended");
    assert_eq!(started_tasks(&mut s, NOW + 2), [(2, 1, "w1".into(), false)]);
    s.task_started(JobId(2), 1).expect("running");
    // Job 2 no longer waits: the exclusion is over, and job 1 goes on where it may once a
    // slot frees (here w2 first, then w1 when job 2 ends).
    s.task_ended(JobId(1), 2).expect("ended");
    assert_eq!(started_tasks(&mut s, NOW + 3), [(1, 3, "w2".into(), false)]);
    s.task_ended(JobId(2), 1).expect("ended");
    assert_eq!(started_tasks(&mut s, NOW + 4), [(1, 4, "w1".into(), false)]);
}

/// A passive exclusion lasts while the preemptor waits: the slot its victim frees first
/// stays idle when the preemptor needs more than that, instead of going to the victim's next
/// task; once the preemptor has started, the victim may use the host again.
#[test]
fn passive_exclusion_holds_while_the_preemptor_waits() {
    let sched = "{policy: cluster, preemption: passive, weight_priority: 1, weight_urgency: 0, weight_ticket: 0}";
    let text = format!(
        "hosts:\n  - {{name: w1, slots: 2}}\nqueues:\n  - {{name: all.q, hostlist: [w1], slots: 2, pe_list: [smp]}}\n\
         parallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\nscheduler: {sched}\n"
    );
    let mut s = state(
        ClusterConfig::parse(&text).expect("config"),
        vec![job(1, |s, _| {
            s.priority = -100;
            s.array = Some(crate::model::TaskIdRange::new(1, 4, 1));
        })],
    );
    assert_eq!(started_tasks(&mut s, NOW).len(), 2);
    for t in [1, 2] {
        s.task_started(JobId(1), t).expect("running");
    }
    assert!(s.add_job(job(2, |s, _| {
        s.pe = Some(crate::model::PeRequest {
            name: "smp".into(),
            range: crate::model::SlotRange { min: 2, max: 2 },
        })
    })));
    let r = s.schedule(NOW + 1);
    assert_eq!(r.preemptions.len(), 2, "{:?}", r.preemptions);
    s.task_ended(JobId(1), 1).expect("ended");
    assert!(
        started_tasks(&mut s, NOW + 2).is_empty(),
        "one slot free: job 2 needs two, job 1 is held off"
    );
    s.task_ended(JobId(1), 2).expect("ended");
    assert_eq!(started_tasks(&mut s, NOW + 3), [(2, 1, "w1".into(), false)]);
    s.task_started(JobId(2), 1).expect("running");
    s.task_ended(JobId(2), 1).expect("ended");
    let mut st = started_tasks(&mut s, NOW + 4);
    st.sort();
    assert_eq!(st, [(1, 3, "w1".into(), false), (1, 4, "w1".into(), false)]);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn bulk_light_cfg(qpd: (i64, i64), qpi: i64, qpg: i64, spg: i64) -> ClusterConfig {
        let text = format!(
            "hosts:\n  - {{name: n1, slots: 2}}\n\
             queues:\n  - {{name: a.q, hostlist: [n1], slots: 2, pe_list: [smp], fbsng: {{qpd: {}, qpi: {qpi}, qpg: {qpg}, spg: {spg}}}}}\n\
             \x20 - {{name: b.q, hostlist: [n1], slots: 2, pe_list: [smp], fbsng: {{qpd: {}, qpi: {qpi}, qpg: {qpg}, spg: {spg}}}}}\n\
             parallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: fbsng}}\n",
            qpd.0, qpd.1
        );
        ClusterConfig::parse(&text).unwrap_or_else(|e| panic!("config: {e}\n{text}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

        /// No job starves forever under the gap rules: bulk (whole-host) and light (one-slot)
        /// jobs in two queues, tasks ending after each pass; every job starts within a bound,
        /// and the same configuration gives the same start order (determinism).
        #[test]
        fn fbsng_gaps_starve_no_job(
            qpd_a in 1i64..8, qpd_b in 1i64..8, qpi in 1i64..3, qpg in 1i64..10,
            spg in 1i64..5, bulk_every in 2u32..6,
        ) {
            let run = || {
                let jobs = (1..=24u32)
                    .map(|i| {
                        job(i, |s, _| {
                            s.hard_queues = vec![if i % 3 == 0 { "b.q" } else { "a.q" }.into()];
                            if i % bulk_every == 0 {
                                s.pe = Some(crate::model::PeRequest {
                                    name: "smp".into(),
                                    range: crate::model::SlotRange { min: 2, max: 2 },
                                });
                            }
                        })
                    })
                    .collect();
                let mut s = state(bulk_light_cfg((qpd_a, qpd_b), qpi, qpg, spg), jobs);
                let mut order = Vec::new();
                for k in 0..200 {
                    let st = starts(&mut s, NOW + k);
                    finish(&mut s, &st);
                    order.extend(st.into_iter().map(|(j, _)| j));
                    if order.len() == 24 {
                        break;
                    }
                }
                order
            };
            let order = run();
            let mut seen = order.clone();
            seen.sort_unstable();
            prop_assert_eq!(seen, (1..=24).collect::<Vec<u32>>(), "order {:?}", order);
            prop_assert_eq!(order, run());
        }
    }
}

/// Seed `fbsng-dynamic-priorities`, goal 1, with four-slot high-priority sections: once the
/// high-priority queue is ahead by more than its QPG, background sections stay held for as
/// long as high-priority sections wait, within a pass as well as across passes. A job offers
/// one section more than the free slots can take, so that the gap still sees the queue
/// pending after the last start the pass can make.
#[test]
fn seed_fbsng_goal_1_gap_holds_background_through_the_pass() {
    for burst_is_one_array in [false, true] {
        let text = "hosts:\n  - {name: n1, slots: 8}\n\
             queues:\n  - {name: hp.q, hostlist: [n1], slots: 8, pe_list: [smp], fbsng: {qp_min: 5, qpg: 7, qpi: 3}}\n\
             \x20 - {name: bg.q, hostlist: [n1], slots: 8, fbsng: {qpg: 100}}\n\
             parallel_environments:\n  - {name: smp, slots: 99, allocation_rule: $pe_slots}\n\
             scheduler: {policy: fbsng}\n";
        let config = ClusterConfig::parse(text).unwrap_or_else(|e| panic!("config: {e}"));
        // Background work fills the host.
        let mut s = state(config, (1..=60).map(|i| queued(i, "bg.q")).collect());
        let mut running: Vec<(u32, u32)> = started_tasks(&mut s, NOW)
            .into_iter()
            .map(|(j, t, _, _)| (j, t))
            .collect();
        assert_eq!(running.len(), 8);
        // A burst of five four-slot high-priority sections: five jobs, or one job of five
        // tasks.
        let four_slots = |s: &mut crate::model::JobSpec| {
            s.hard_queues = vec!["hp.q".into()];
            s.pe = Some(crate::model::PeRequest {
                name: "smp".into(),
                range: crate::model::SlotRange { min: 4, max: 4 },
            });
        };
        if burst_is_one_array {
            assert!(s.add_job(job(101, |s, _| {
                four_slots(s);
                s.array = Some(crate::model::TaskIdRange::new(1, 5, 1));
            })));
        } else {
            for i in 101..=105 {
                assert!(s.add_job(job(i, |s, _| four_slots(s))));
            }
        }
        // Three of the oldest running tasks end before each pass; count what starts while
        // high-priority sections still wait.
        let mut background_while_waiting = 0;
        let mut hp_started = 0;
        for k in 1..200 {
            for _ in 0..3 {
                if !running.is_empty() {
                    let (j, t) = running.remove(0);
                    s.task_ended(JobId(j), t).expect("ended");
                }
            }
            let pass = s.schedule_event(NOW + k);
            for st in pass.starts {
                let (j, t) = (st.job.0, st.task);
                s.task_started(st.job, st.task).expect("running");
                running.push((j, t));
                if j > 100 {
                    hp_started += 1;
                } else if hp_started < 5 {
                    background_while_waiting += 1;
                }
            }
            if hp_started == 5 {
                break;
            }
        }
        assert_eq!(hp_started, 5, "one array: {burst_is_one_array}");
        // One background start before the gap closes on bg.q (it is what raises hp.q by QPI
        // to more than QPG above bg.q); none after.
        assert!(
            background_while_waiting <= 1,
            "one array: {burst_is_one_array}: {background_while_waiting} background starts \
             while high-priority sections waited"
        );
    }
}
