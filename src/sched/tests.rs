//! Table cases for the pure scheduling pass (HyperQueue tako style): a cluster, a list of
//! jobs, one pass, and the expected starts and reasons.

use super::state::SchedState;
use crate::config::ClusterConfig;
use crate::model::{
    Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange,
    Submitter, TaskIdRange,
};

pub(super) const NOW: i64 = 1_800_000_000;

/// `hosts` hosts `n1..`, each with `slots` slots, one queue `all.q` over all of them with
/// the PEs `smp` ($pe_slots), `mpi` ($fill_up), `rr` ($round_robin), `two` (2 per host).
pub(super) fn config(hosts: usize, slots: u32, extra: &str) -> ClusterConfig {
    let mut text = String::from("hosts:\n");
    for i in 1..=hosts {
        text.push_str(&format!("  - {{name: n{i}, slots: {slots}}}\n"));
    }
    text.push_str("hostgroups:\n  \"@all\": [");
    text.push_str(
        &(1..=hosts)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    text.push_str("]\n");
    text.push_str(&format!(
        "queues:\n  - {{name: all.q, hostlist: [\"@all\"], slots: {slots}, pe_list: [smp, mpi, rr, two]}}\n"
    ));
    text.push_str(
        "parallel_environments:\n  - {name: smp, slots: 999, allocation_rule: $pe_slots}\n  - {name: mpi, slots: 999, allocation_rule: $fill_up}\n  - {name: rr, slots: 999, allocation_rule: $round_robin}\n  - {name: two, slots: 999, allocation_rule: \"2\"}\n",
    );
    text.push_str(extra);
    text.push_str("scheduler: {policy: fifo, max_reservation: 4}\n");
    ClusterConfig::parse(&text).unwrap_or_else(|e| panic!("config: {e}\n{text}"))
}

pub(super) fn job(id: u32, edit: impl FnOnce(&mut JobSpec, &mut Holds)) -> JobRecord {
    let mut spec = JobSpec {
        name: format!("j{id}"),
        ..JobSpec::default()
    };
    let mut holds = Holds::NONE;
    edit(&mut spec, &mut holds);
    JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: "alice".into(),
            uid: 1001,
            group: "alice".into(),
            gid: 1001,
            submission_time: NOW - 100 + i64::from(id),
            sge_o_home: "/tmp".into(),
            sge_o_log_name: "alice".into(),
            sge_o_path: "/bin".into(),
            sge_o_shell: "/bin/sh".into(),
            sge_o_workdir: "/tmp".into(),
            sge_o_host: "n1".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec,
        holds,
    })
}

fn res(name: &str, value: &str) -> ResourceRequest {
    ResourceRequest {
        name: name.into(),
        value: value.into(),
    }
}

fn pe(name: &str, min: u32, max: u32) -> Option<PeRequest> {
    Some(PeRequest {
        name: name.into(),
        range: SlotRange { min, max },
    })
}

/// Runs one pass and returns the starts as `job.task@host:slots` strings.
fn pass(state: &mut SchedState) -> Vec<String> {
    state
        .schedule(NOW)
        .starts
        .iter()
        .map(|s| {
            let grant: Vec<String> = s
                .placement
                .granted
                .iter()
                .map(|(h, _, n)| format!("{h}:{n}"))
                .collect();
            format!("{}.{}@{}", s.job, s.task, grant.join("+"))
        })
        .collect()
}

pub(super) fn state(config: ClusterConfig, jobs: Vec<JobRecord>) -> SchedState {
    let mut s = SchedState::new(config);
    for j in jobs {
        assert!(s.add_job(j));
    }
    s
}

fn reasons(s: &SchedState, id: u32) -> String {
    s.pending_reasons(JobId(id)).join(" | ")
}

struct Case {
    name: &'static str,
    hosts: usize,
    slots: u32,
    extra: &'static str,
    jobs: Vec<JobRecord>,
    starts: &'static [&'static str],
    /// (job, substring of its pending reasons)
    pending: &'static [(u32, &'static str)],
}

#[test]
fn table_of_single_passes() {
    let cases = vec![
        Case {
            name: "slots: two hosts of two slots take four of five serial jobs",
            hosts: 2,
            slots: 2,
            extra: "",
            jobs: (1..=5).map(|i| job(i, |_, _| {})).collect(),
            starts: &["1.1@n1:1", "2.1@n1:1", "3.1@n2:1", "4.1@n2:1"],
            pending: &[(5, "no queue instance offers 1 free slot")],
        },
        Case {
            name: "-l hostname and arch: fixed values select hosts",
            hosts: 3,
            slots: 1,
            extra: "",
            jobs: vec![
                job(1, |s, _| s.hard_resources = vec![res("h", "n3")]),
                job(2, |s, _| s.hard_resources = vec![res("arch", "sol*")]),
                job(3, |s, _| s.hard_resources = vec![res("h_rt", "1:00:00")]),
            ],
            starts: &["1.1@n3:1", "3.1@n1:1"],
            pending: &[(2, "(-l arch=sol*) cannot run in any queue instance")],
        },
        Case {
            name: "-q with wildcards and queue@host",
            hosts: 3,
            slots: 1,
            extra: "",
            jobs: vec![
                job(1, |s, _| s.hard_queues = vec!["all.q@n2".into()]),
                job(2, |s, _| s.hard_queues = vec!["*@n3".into()]),
                job(3, |s, _| s.hard_queues = vec!["other.q".into()]),
                job(4, |s, _| s.hard_queues = vec!["a*.q".into()]),
            ],
            starts: &["1.1@n2:1", "2.1@n3:1", "4.1@n1:1"],
            pending: &[(3, "hard queue list (-q other.q)")],
        },
        Case {
            name: "$pe_slots: all slots on one host, else none",
            hosts: 2,
            slots: 2,
            extra: "",
            jobs: vec![
                job(1, |s, _| s.pe = pe("smp", 4, 4)),
                job(2, |s, _| s.pe = pe("smp", 2, 2)),
            ],
            starts: &["2.1@n1:2"],
            pending: &[(1, "no queue instance offers 4 free slots")],
        },
        Case {
            name: "$fill_up fills hosts in order; ranges take as many as fit",
            hosts: 3,
            slots: 2,
            extra: "",
            jobs: vec![
                job(1, |s, _| s.pe = pe("mpi", 3, 3)),
                job(2, |s, _| s.pe = pe("mpi", 1, 8)),
            ],
            starts: &["1.1@n1:2+n2:1", "2.1@n2:1+n3:2"],
            pending: &[],
        },
        Case {
            name: "$round_robin spreads one slot per host in turn",
            hosts: 3,
            slots: 2,
            extra: "",
            jobs: vec![job(1, |s, _| s.pe = pe("rr", 4, 4))],
            starts: &["1.1@n1:2+n2:1+n3:1"],
            pending: &[],
        },
        Case {
            name: "fixed allocation rule 2: multiples of two, two per host",
            hosts: 3,
            slots: 4,
            extra: "",
            jobs: vec![
                job(1, |s, _| s.pe = pe("two", 4, 5)),
                job(2, |s, _| s.pe = pe("two", 3, 3)),
            ],
            starts: &["1.1@n1:2+n2:2"],
            pending: &[(2, "no queue instance offers 3 free slots")],
        },
        Case {
            name: "-tc limits concurrent array tasks",
            hosts: 1,
            slots: 8,
            extra: "",
            jobs: vec![job(1, |s, _| {
                s.array = Some(TaskIdRange::new(1, 10, 1));
                s.task_concurrency = Some(2);
            })],
            starts: &["1.1@n1:1", "1.2@n1:1"],
            pending: &[(1, "task concurrency limit (-tc 2)")],
        },
        Case {
            name: "holds, -a and -hold_jid block; the rest runs",
            hosts: 1,
            slots: 8,
            extra: "",
            jobs: vec![
                job(1, |_, h| h.user = true),
                job(2, |s, _| s.start_time = Some(NOW + 3600)),
                job(3, |s, _| s.predecessors = vec![JobId(1)]),
                job(4, |s, _| s.predecessors = vec![JobId(99)]),
            ],
            starts: &["4.1@n1:1"],
            pending: &[
                (1, "hold state (hold types: u)"),
                (2, "start time (-a) not reached"),
                (3, "job dependencies (-hold_jid: waiting for job 1)"),
            ],
        },
        Case {
            name: "an unknown resource can never run",
            hosts: 1,
            slots: 2,
            extra: "",
            jobs: vec![job(1, |s, _| s.hard_resources = vec![res("nosuch", "1")])],
            starts: &[],
            pending: &[(1, "unknown resource \"nosuch\"")],
        },
    ];
    for c in cases {
        let mut s = state(config(c.hosts, c.slots, c.extra), c.jobs);
        let got = pass(&mut s);
        assert_eq!(got, c.starts, "case: {}", c.name);
        for (id, want) in c.pending {
            let r = reasons(&s, *id);
            assert!(
                r.contains(want),
                "case: {}: job {id} reasons {r:?} lack {want:?}",
                c.name
            );
        }
    }
}

#[test]
fn consumables_per_host_and_global() {
    let extra = "complexes:\n  - {name: mem, shortcut: mem, type: MEMORY, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}\n  - {name: lic, shortcut: lic, type: INT, relop: \"<=\", requestable: YES, consumable: JOB, default: \"0\", urgency: 0}\n";
    let mut c = config(2, 4, extra);
    for h in &mut c.hosts {
        h.complex_values.insert("mem".into(), "4G".into());
    }
    c.hosts.push(crate::config::HostConfig {
        complex_values: [("lic".to_string(), "1".to_string())].into(),
        ..crate::config::HostConfig::new("global", None, crate::config::LaunchMethod::Local)
    });
    let jobs = vec![
        job(1, |s, _| s.hard_resources = vec![res("mem", "3G")]),
        job(2, |s, _| s.hard_resources = vec![res("mem", "3G")]),
        job(3, |s, _| s.hard_resources = vec![res("mem", "3G")]),
        job(4, |s, _| s.hard_resources = vec![res("lic", "1")]),
        job(5, |s, _| s.hard_resources = vec![res("lic", "1")]),
        // Per-slot memory on a 2-slot PE job: 2 × 1G.
        job(6, |s, _| {
            s.hard_resources = vec![res("mem", "1G")];
            s.pe = pe("smp", 2, 2);
        }),
    ];
    let mut s = state(c, jobs);
    let got = pass(&mut s);
    assert_eq!(got, vec!["1.1@n1:1", "2.1@n2:1", "4.1@n1:1"]);
    assert!(
        reasons(&s, 3).contains("enough free mem"),
        "{}",
        reasons(&s, 3)
    );
    assert!(reasons(&s, 5).contains("globally"), "{}", reasons(&s, 5));
    // 1G free per host is one slot's worth: the PE job gets no two slots anywhere.
    assert!(
        reasons(&s, 6).contains("2 free slots"),
        "{}",
        reasons(&s, 6)
    );
    // Job 1 ends: its memory comes back and job 3 (first in order) takes it.
    s.task_ended(JobId(1), 1).expect("running");
    assert_eq!(pass(&mut s), vec!["3.1@n1:1"]);
    s.task_ended(JobId(4), 1).expect("running");
    assert_eq!(pass(&mut s), vec!["5.1@n1:1"]);
}

#[test]
fn categories_fit_once_per_pass() {
    let jobs: Vec<JobRecord> = (1..=1000).map(|i| job(i, |_, _| {})).collect();
    let mut s = state(config(2, 1, ""), jobs);
    let r = s.schedule(NOW);
    assert_eq!(r.starts.len(), 2);
    // Two successful fits and one failed fit for the whole category, not 998.
    assert_eq!(r.fits, 3);
    assert_eq!(s.category_count(), 1);
    assert!(reasons(&s, 1000).contains("free slot"));
}

#[test]
fn dependencies_release_when_predecessors_leave() {
    let jobs = vec![
        job(1, |s, _| s.array = Some(TaskIdRange::new(1, 3, 1))),
        job(2, |s, _| s.predecessors = vec![JobId(1)]),
        job(3, |s, _| {
            s.array = Some(TaskIdRange::new(1, 3, 1));
            s.array_predecessors = vec![JobId(1)];
        }),
    ];
    let mut c = config(1, 2, "");
    c.scheduler.policy = crate::config::PolicyOrder::Fifo;
    let mut s = state(c, jobs);
    assert_eq!(pass(&mut s), vec!["1.1@n1:1", "1.2@n1:1"]);
    assert!(
        reasons(&s, 3).contains("-hold_jid_ad"),
        "{}",
        reasons(&s, 3)
    );
    // Task 1 of job 1 ends: task 1 of job 3 may start, task 2 may not.
    s.task_ended(JobId(1), 1).expect("running");
    assert_eq!(pass(&mut s), vec!["1.3@n1:1"]);
    s.task_ended(JobId(1), 2).expect("running");
    assert_eq!(pass(&mut s), vec!["3.1@n1:1"]);
    s.task_ended(JobId(1), 3).expect("running");
    s.remove_job(JobId(1));
    assert_eq!(pass(&mut s), vec!["2.1@n1:1"]);
}

#[test]
fn reservation_and_backfill() {
    // One host of 3 slots. Job 1 runs (h_rt 1000). Job 2 (-R y, 3 slots) reserves the host
    // from job 1's end; job 3 (h_rt 500) ends before that and backfills; job 4 (h_rt 5000)
    // would overlap the reservation and waits.
    let mut s = state(
        config(1, 3, ""),
        vec![job(1, |s, _| s.hard_resources = vec![res("h_rt", "1000")])],
    );
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    s.add_job(job(2, |s, _| {
        s.pe = pe("smp", 3, 3);
        s.reserve = true;
        s.hard_resources = vec![res("h_rt", "100")];
    }));
    s.add_job(job(3, |s, _| s.hard_resources = vec![res("h_rt", "500")]));
    s.add_job(job(4, |s, _| s.hard_resources = vec![res("h_rt", "5000")]));
    let r = s.schedule(NOW);
    let started: Vec<u32> = r.starts.iter().map(|s| s.job.0).collect();
    assert_eq!(started, vec![3]);
    assert_eq!(r.reservations.len(), 1);
    assert_eq!(r.reservations[0].job, JobId(2));
    assert_eq!(r.reservations[0].from, NOW + 1000);
    assert!(
        reasons(&s, 2).contains("reserved 3 slot(s) on n1"),
        "{}",
        reasons(&s, 2)
    );
    assert!(
        reasons(&s, 4).contains("reserved for higher-priority jobs"),
        "{}",
        reasons(&s, 4)
    );
}

#[test]
fn jobs_that_differ_only_in_run_time_share_a_failed_fit_until_a_reservation_is_made() {
    // One host of 2 slots, one taken. Jobs 2 and 3 want both slots and differ only in
    // h_rt (two categories, one shape): job 3 gets job 2's reason without a fit of its own.
    let mut s = state(
        config(1, 2, ""),
        vec![job(1, |s, _| s.hard_resources = vec![res("h_rt", "1000")])],
    );
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    let two_slots = |h_rt: &'static str, reserve: bool| {
        move |s: &mut JobSpec, _: &mut Holds| {
            s.pe = pe("smp", 2, 2);
            s.reserve = reserve;
            s.hard_resources = vec![res("h_rt", h_rt)];
        }
    };
    s.add_job(job(2, two_slots("100", false)));
    s.add_job(job(3, two_slots("200", false)));
    let r = s.schedule(NOW);
    assert!(r.starts.is_empty());
    assert_eq!(r.fits, 1, "one fit for both");
    assert_eq!(reasons(&s, 2), reasons(&s, 3));
    assert!(
        reasons(&s, 3).contains("offers 2 free slots"),
        "{}",
        reasons(&s, 3)
    );
    // With a reservation made (job 4, -R y), the run time decides again: of two jobs of one
    // shape, job 5 (h_rt 5000) would overlap the reservation and waits, job 6 (h_rt 500)
    // ends before it and backfills the free slot, though job 5 failed first.
    s.remove_job(JobId(2));
    s.remove_job(JobId(3));
    s.add_job(job(4, two_slots("100", true)));
    s.add_job(job(5, |s, _| s.hard_resources = vec![res("h_rt", "5000")]));
    s.add_job(job(6, |s, _| s.hard_resources = vec![res("h_rt", "500")]));
    let r = s.schedule(NOW);
    assert_eq!(r.reservations.len(), 1);
    let started: Vec<u32> = r.starts.iter().map(|s| s.job.0).collect();
    assert_eq!(started, vec![6]);
    assert!(
        reasons(&s, 5).contains("reserved for higher-priority jobs"),
        "{}",
        reasons(&s, 5)
    );
}

#[test]
fn without_reservation_small_jobs_pass_the_big_one() {
    let mut s = state(
        config(1, 2, ""),
        vec![job(1, |s, _| s.hard_resources = vec![res("h_rt", "1000")])],
    );
    pass(&mut s);
    s.add_job(job(2, |s, _| s.pe = pe("smp", 2, 2)));
    s.add_job(job(3, |s, _| s.hard_resources = vec![res("h_rt", "5000")]));
    assert_eq!(pass(&mut s), vec!["3.1@n1:1"]);
}

#[test]
fn maxujobs_and_unreachable_hosts() {
    let mut c = config(2, 4, "");
    c.scheduler.maxujobs = 3;
    let mut s = state(c, (1..=5).map(|i| job(i, |_, _| {})).collect());
    assert_eq!(pass(&mut s).len(), 3);
    assert!(reasons(&s, 4).contains("maxujobs 3"));
    // A host that cannot be reached gets no tasks until its backoff expires.
    let mut s = state(
        config(2, 1, ""),
        (1..=2).map(|i| job(i, |_, _| {})).collect(),
    );
    let retry = s.host_unreachable("n1", NOW).expect("known host");
    assert_eq!(retry, NOW + 10);
    assert_eq!(pass(&mut s), vec!["1.1@n2:1"]);
    let r = s.schedule(NOW + 11);
    assert_eq!(r.starts.len(), 1);
    assert_eq!(r.starts[0].placement.host, "n1");
}

/// Issue 23: `sched_d(8)` promises a host that is down is tried again at least every 30 s;
/// a host that failed many times in a row waited 320 s.
#[test]
fn an_unreachable_host_is_tried_again_within_30_s_however_often_it_failed() {
    let mut s = state(config(1, 1, ""), vec![job(1, |_, _| {})]);
    let mut waits = Vec::new();
    for _ in 0..10 {
        let retry = s.host_unreachable("n1", NOW).expect("known host");
        waits.push(retry - NOW);
    }
    assert_eq!(waits, [10, 20, 30, 30, 30, 30, 30, 30, 30, 30]);
    assert!(pass(&mut s).is_empty());
    assert_eq!(s.schedule(NOW + 30).starts.len(), 1);
}

#[test]
fn requeued_task_runs_again_and_error_blocks() {
    let mut s = state(config(1, 1, ""), vec![job(1, |_, _| {}), job(2, |_, _| {})]);
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    s.requeue_task(JobId(1), 1, None).expect("running");
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    s.requeue_task(
        JobId(1),
        1,
        Some(crate::model::ErrorInfo {
            time: NOW,
            message: "no such directory".into(),
        }),
    )
    .expect("running");
    assert_eq!(pass(&mut s), vec!["2.1@n1:1"]);
    assert!(reasons(&s, 1).contains("error state: no such directory"));
}

#[test]
fn priorities_fill_running_and_pending_and_zero_for_held() {
    let mut c = config(1, 1, "");
    c.scheduler.policy = crate::config::PolicyOrder::Sge;
    let mut s = state(
        c,
        vec![
            job(1, |s, _| s.priority = -100),
            job(2, |s, _| s.pe = pe("smp", 1, 1)),
            job(3, |_, h| h.operator = true),
            job(4, |s, _| s.priority = 100),
        ],
    );
    let r = s.schedule(NOW);
    // Equal urgency and tickets: the ordering falls to submission time (weight_priority 0).
    assert_eq!(r.starts[0].job, JobId(1));
    let p = |id| s.priority(JobId(id)).cloned().expect("priority");
    assert_eq!(p(3), crate::model::PriorityInfo::default());
    assert!(p(1).prio > 0.0 && p(4).prio > 0.0);
    assert_eq!(p(4).npprior, (100.0 + 1024.0) / 2048.0);
    assert_eq!(p(2).rrcontr, 1000.0);
    assert!(p(1).wtcontr > 0.0);
}

#[test]
fn recovered_running_tasks_are_booked_again() {
    let mut s = state(config(1, 2, ""), vec![job(1, |_, _| {}), job(2, |_, _| {})]);
    assert_eq!(pass(&mut s).len(), 2);
    let records: Vec<JobRecord> = s
        .job_ids()
        .into_iter()
        .filter_map(|id| s.record_for_write(id))
        .collect();
    let mut again = SchedState::new(config(1, 2, ""));
    for r in records {
        again.add_job(r);
    }
    again.add_job(job(3, |_, _| {}));
    assert!(pass(&mut again).is_empty());
    assert_eq!(again.running_tasks().len(), 2);
    // A configuration reload keeps the bookings.
    let c = again.config.clone();
    again.reload_config(c);
    assert!(pass(&mut again).is_empty());
}

#[test]
fn disabled_queues_take_nothing_and_reload_enables_them() {
    let mut c = config(1, 2, "");
    c.queues[0].disabled = true;
    let mut s = state(c.clone(), vec![job(1, |_, _| {})]);
    assert!(pass(&mut s).is_empty());
    assert!(reasons(&s, 1).contains("disabled"), "{}", reasons(&s, 1));
    c.queues[0].disabled = false;
    s.reload_config(c);
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
}

/// A queue disabled in the configuration is SGE's `initial_state disabled`: `qmod -e` of an
/// instance enables it, `qmod -d` disables it again.
#[test]
fn qmod_enables_an_instance_the_configuration_disables() {
    let mut c = config(1, 2, "");
    c.queues[0].disabled = true;
    let mut s = state(c, vec![job(1, |_, _| {}), job(2, |_, _| {})]);
    assert!(pass(&mut s).is_empty());
    assert!(s.set_instance_disabled("all.q@n1", false), "-e changes it");
    assert!(
        !s.set_instance_disabled("all.q@n1", false),
        "-e again does not"
    );
    assert_eq!(pass(&mut s), vec!["1.1@n1:1", "2.1@n1:1"]);
    assert!(s.set_instance_disabled("all.q@n1", true), "-d changes it");
    assert!(
        !s.set_instance_disabled("all.q@n1", true),
        "-d again does not"
    );
}

#[test]
fn event_passes_reuse_the_order_until_something_changes() {
    let mut s = state(
        config(1, 1, ""),
        vec![
            job(1, |_, _| {}),
            job(2, |_, _| {}),
            job(3, |_, h| h.user = true),
        ],
    );
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    s.task_ended(JobId(1), 1).expect("running");
    let r = s.schedule_event(NOW + 1);
    let started: Vec<u32> = r.starts.iter().map(|x| x.job.0).collect();
    assert_eq!(started, vec![2]);
    assert!(
        reasons(&s, 3).contains("hold"),
        "blocked jobs keep their reasons"
    );
    assert!(
        reasons(&s, 2).is_empty(),
        "a started job has no pending reason"
    );
    // Releasing the hold changes a record: the next event pass is a full one and sees it.
    s.job_mut(JobId(3)).expect("job").tasks.pending[0].holds = Holds::NONE;
    s.job_changed(JobId(3));
    s.task_ended(JobId(2), 1).expect("running");
    let r = s.schedule_event(NOW + 2);
    assert_eq!(r.starts.len(), 1);
    assert_eq!(r.starts[0].job, JobId(3));
}

#[test]
fn cold_records_are_dispatched_altered_and_written_like_warm_ones() {
    let mut s = state(
        config(1, 1, ""),
        vec![
            job(1, |_, _| {}),
            job(2, |s, _| s.predecessors = vec![JobId(1)]),
            job(3, |_, h| h.user = true),
        ],
    );
    assert_eq!(s.cool_idle(), 3);
    assert_eq!(pass(&mut s), vec!["1.1@n1:1"]);
    assert_eq!(s.cool_idle(), 0, "the running job stays decoded");
    assert!(reasons(&s, 2).contains("waiting for job 1"));
    assert!(reasons(&s, 3).contains("hold types: u"));
    let written = s.record_for_write(JobId(3)).expect("record");
    assert_eq!(written.pending_reasons, s.pending_reasons(JobId(3)));
    s.job_mut(JobId(3)).expect("job").tasks.pending[0].holds = Holds::NONE;
    s.job_changed(JobId(3));
    s.cool_idle();
    s.task_ended(JobId(1), 1).expect("running");
    s.remove_job(JobId(1));
    assert_eq!(pass(&mut s), vec!["2.1@n1:1"]);
    assert_eq!(
        s.job(JobId(3)).expect("job").tasks.pending[0].holds,
        Holds::NONE
    );
}

/// A pass that starts more jobs than [`WARM_RUNNING_MAX`] keeps only that many of their
/// records decoded (the rest are encoded as they start, not held to the pass's end and
/// through the next one), and the jobs are written, end and are written again like the
/// others.
#[test]
fn a_burst_of_starts_keeps_a_bounded_number_of_records_decoded() {
    use super::state::WARM_RUNNING_MAX;
    let n = WARM_RUNNING_MAX as u32 + 100;
    let mut s = state(
        config(1, n, ""),
        (1..=n).map(|i| job(i, |_, _| {})).collect(),
    );
    assert_eq!(s.cool_idle(), n as usize);
    assert_eq!(pass(&mut s).len(), n as usize);
    let warm = |s: &SchedState| s.jobs.values().filter(|e| e.record.is_warm()).count();
    assert_eq!(warm(&s), WARM_RUNNING_MAX);
    assert_eq!(s.take_dirty().len(), n as usize);
    for i in [1, n] {
        let written = s.record_for_write(JobId(i)).expect("record");
        assert_eq!(written.tasks.running.len(), 1, "job {i}");
    }
    assert_eq!(
        s.cool_idle(),
        0,
        "the running jobs kept decoded stay so for one call"
    );
    assert_eq!(warm(&s), WARM_RUNNING_MAX);
    // Untouched since, the kept ones are encoded by the next call.
    assert_eq!(s.cool_idle(), WARM_RUNNING_MAX);
    assert_eq!(warm(&s), 0);
    for i in [1, n] {
        s.task_ended(JobId(i), 1).expect("running");
        let written = s.record_for_write(JobId(i)).expect("record");
        assert!(written.tasks.running.is_empty(), "job {i}");
    }
}

/// The forecast's play keeps every running job's record decoded until it ends (it is needed
/// again then), however many start; an ended job's is encoded by the next call.
#[test]
fn with_running_kept_warm_every_running_record_stays_decoded_until_its_end() {
    use super::state::WARM_RUNNING_MAX;
    let n = WARM_RUNNING_MAX as u32 + 100;
    let mut s = state(
        config(1, n, ""),
        (1..=n + 5).map(|i| job(i, |_, _| {})).collect(),
    );
    s.keep_running_warm = true;
    s.cool_idle();
    assert_eq!(pass(&mut s).len(), n as usize);
    let warm = |s: &SchedState| s.jobs.values().filter(|e| e.record.is_warm()).count();
    // The pending ones the pass decoded are encoded; the running ones stay decoded.
    s.cool_idle();
    for _ in 0..2 {
        assert_eq!(warm(&s), n as usize, "the running ones stay decoded");
        assert_eq!(s.cool_idle(), 0);
    }
    s.task_ended(JobId(1), 1).expect("running");
    assert_eq!(s.cool_idle(), 1, "the ended one is encoded");
    assert_eq!(warm(&s), n as usize - 1);
}

/// The periodic refresh of state files takes the stale ones a chunk at a time, in id order
/// from where the last chunk stopped, and marks fewer than asked only once it has looked at
/// every job (the daemon's budget relies on it).
#[test]
fn stale_priorities_are_refreshed_a_chunk_at_a_time() {
    let jobs = (1..=5).map(|id| job(id, |_, _| {})).collect();
    let mut s = state(config(1, 0, ""), jobs);
    s.schedule(NOW);
    let _ = s.take_dirty();
    let mut cursor = JobId(0);
    let mut chunks = Vec::new();
    loop {
        let n = s.refresh_stale_priorities(&mut cursor, 2);
        let mut ids: Vec<u32> = s.take_dirty().into_iter().map(|id| id.0).collect();
        ids.sort_unstable();
        for &id in &ids {
            s.note_written(JobId(id));
        }
        assert_eq!(n, ids.len());
        chunks.push(ids);
        if n < 2 {
            break;
        }
    }
    assert_eq!(chunks, vec![vec![1, 2], vec![3, 4], vec![5]]);
    // Everything written: nothing is stale until the priorities change again.
    assert_eq!(s.refresh_stale_priorities(&mut cursor, 2), 0);
}

/// A state file is refreshed when any priority figure `qstat` shows changed, not only
/// `prio`: a lone pending job keeps its normalised priority while its waiting time's
/// contribution grows (`qstat -urg` showed `wtcontr` 0 after two minutes).
#[test]
fn state_files_are_refreshed_when_a_shown_priority_figure_changes() {
    let mut c = config(1, 1, "");
    c.scheduler.policy = crate::config::PolicyOrder::Sge;
    let mut s = state(c, vec![job(1, |_, _| {}), job(2, |_, _| {})]);
    assert_eq!(s.schedule(NOW).starts.len(), 1);
    s.take_dirty();
    s.note_written(JobId(1));
    s.note_written(JobId(2));
    let before = s.priority(JobId(2)).cloned().expect("priority");
    let mut cursor = JobId(0);
    assert_eq!(
        s.refresh_stale_priorities(&mut cursor, 10),
        0,
        "just written"
    );
    s.schedule(NOW + 120);
    let after = s.priority(JobId(2)).cloned().expect("priority");
    assert_eq!(after.prio, before.prio, "the case: prio unchanged");
    assert!(after.wtcontr > before.wtcontr);
    s.refresh_stale_priorities(&mut cursor, 10);
    assert!(s.take_dirty().contains(&JobId(2)));
    let written = s.record_for_write(JobId(2)).expect("record");
    assert_eq!(written.priority.map(|p| p.wtcontr), Some(after.wtcontr));
}

/// A job in error (`Eqw`) keeps a computed priority, as SGE's `qstat` shows it (`0.55500`
/// for a lone job under SGE's default weights, `qstat-error-state.txt`); a held one shows
/// zeros.
#[test]
fn a_job_in_error_keeps_its_priority() {
    let mut c = config(1, 1, "");
    c.scheduler.policy = crate::config::PolicyOrder::Sge;
    // SGE 8.1.9's default weights (sched_conf(5)).
    c.scheduler.weight_priority = 1.0;
    c.scheduler.weight_urgency = 0.1;
    c.scheduler.weight_ticket = 0.01;
    let mut failed = job(1, |_, _| {});
    failed.error = Some(crate::model::ErrorInfo {
        time: NOW,
        message: "can't open output file".into(),
    });
    let mut held = failed.clone();
    held.id = JobId(2);
    held.tasks.pending[0].holds.user = true;
    let mut s = state(c, vec![failed, held]);
    assert!(s.schedule(NOW).starts.is_empty());
    let p = s.priority(JobId(1)).cloned().expect("priority");
    assert_eq!(format!("{:.5}", p.prio), "0.55500");
    assert_eq!(
        s.priority(JobId(2)).cloned().unwrap_or_default(),
        crate::model::PriorityInfo::default()
    );
}

/// A queue that drained gives back what was sized for it (issue 27: `sched_d` kept 31 MB after
/// holding 10,000 jobs against 10 MB before), and schedules what is left as before.
#[test]
fn a_drained_queue_gives_back_what_was_sized_for_it() {
    let jobs = || (1..=3000).map(|id| job(id, |_, _| {})).collect();
    let mut drained = state(config(4, 2, ""), jobs());
    let mut kept = state(config(4, 2, ""), jobs());
    for s in [&mut drained, &mut kept] {
        s.cool_idle();
        assert_eq!(pass(s).len(), 8);
        s.cool_idle();
        assert!(s.running_tasks().iter().all(|t| t.0.0 <= 8));
        let ended = s.running_tasks()[0];
        s.task_ended(ended.0, ended.1).expect("running");
        let _ = s.schedule_event(NOW + 1);
        for id in 20..=3000 {
            s.remove_job(JobId(id));
        }
    }
    let sized = |s: &SchedState| {
        s.rows.rows.capacity()
            + s.scratch.order.capacity()
            + s.order_cache.as_ref().map_or(0, Vec::capacity)
    };
    assert!(sized(&drained) > 3000);
    drained.release_spare_memory();
    assert!(sized(&drained) < 100, "{}", sized(&drained));
    assert!(drained.rows.rows.len() < 20);
    for id in [3, 12, 19] {
        drained.task_ended(JobId(id), 1).ok();
        kept.task_ended(JobId(id), 1).ok();
    }
    assert_eq!(pass(&mut drained), pass(&mut kept));
    for id in 1..=19 {
        assert_eq!(reasons(&drained, id), reasons(&kept, id));
        assert_eq!(drained.priority(JobId(id)), kept.priority(JobId(id)));
    }
}
