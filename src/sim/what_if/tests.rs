//! What-ifs on small cells whose futures can be worked out by hand.

use super::*;
use crate::model::{Holds, JobRecord, JobSpec, JobSubmission, ResourceRequest, Submitter};

const NOW: i64 = 1_800_000_000;

/// Two hosts `n1`, `n2` of one slot in `all.q` (through the host group `@all`), SGE's policy.
fn config() -> ClusterConfig {
    ClusterConfig::parse(
        "hosts:\n  - {name: n1, slots: 1}\n  - {name: n2, slots: 1}\nhostgroups:\n  \"@all\": [n1, n2]\nqueues:\n  - {name: all.q, hostlist: [\"@all\"], slots: 1}\nscheduler: {policy: sge}\n",
    )
    .expect("config")
}

/// Job `id` of `owner` asking for `h_rt` seconds, with `-p priority`, submitted in id order.
fn job(id: u32, owner: &str, h_rt: i64, priority: i32) -> JobRecord {
    let uid = if owner == "alice" { 1001 } else { 1002 };
    JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: owner.into(),
            uid,
            group: owner.into(),
            gid: uid,
            submission_time: NOW - 1000 + i64::from(id),
            sge_o_home: "/tmp".into(),
            sge_o_log_name: owner.into(),
            sge_o_path: "/bin".into(),
            sge_o_shell: "/bin/sh".into(),
            sge_o_workdir: "/tmp".into(),
            sge_o_host: "n1".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec: JobSpec {
            name: format!("j{id}"),
            hard_resources: vec![ResourceRequest {
                name: "h_rt".into(),
                value: h_rt.to_string(),
            }],
            priority,
            ..JobSpec::default()
        },
        holds: Holds::NONE,
    })
}

/// The cell at NOW: at NOW - 100 alice's job 1 (h_rt 600) started on n1 and bob's job 2
/// (h_rt 1200) on n2, so they end at +500 and +1100; `pending` wait behind them.
fn cell(pending: Vec<JobRecord>) -> CellState {
    let mut state = SchedState::new(config());
    assert!(state.add_job(job(1, "alice", 600, 0)));
    assert!(state.add_job(job(2, "bob", 1200, 0)));
    let starts = state.schedule(NOW - 100).starts;
    let placed: Vec<(u32, String)> = starts
        .iter()
        .map(|s| (s.job.0, s.placement.host.clone()))
        .collect();
    assert_eq!(placed, [(1, "n1".to_string()), (2, "n2".to_string())]);
    for s in starts {
        state.task_started(s.job, s.task).expect("started");
    }
    for j in pending {
        assert!(state.add_job(j));
    }
    CellState {
        state,
        usage: Default::default(),
        learned: Default::default(),
        unreadable: 0,
        down: Vec::new(),
    }
}

/// Behind them: alice's 3 and 5, bob's 4, of h_rt 300 each, in that order.
fn three_waiting() -> CellState {
    cell(vec![
        job(3, "alice", 300, 0),
        job(4, "bob", 300, 0),
        job(5, "alice", 300, 0),
    ])
}

fn play(cell: &CellState, change: &Change) -> WhatIf {
    what_if(cell, change, NOW, &RunTimeLimits, 10).expect("what-if")
}

/// (median before, median after, mean move, earlier, later) of a group.
fn moved(g: &GroupChange) -> (Option<f64>, Option<f64>, Option<f64>, usize, usize) {
    (
        g.before.median,
        g.after.median,
        g.change,
        g.earlier,
        g.later,
    )
}

/// As the cell stands: 3 takes n1 at +500 (to +800), 4 takes it at +800 (to +1100), 5 takes
/// one at +1100. With a third host like n1, free now: 3 starts at once there (to +300), 4
/// follows it at +300, 5 takes n1 at +500: alice's waits go from 500 and 1100 to 0 and 500
/// (550 sooner on average), bob's from 800 to 300.
#[test]
fn a_host_added_like_an_existing_one_starts_the_queue_sooner_by_the_worked_amount() {
    let cell = three_waiting();
    let w = play(
        &cell,
        &Change {
            add_hosts: Some(AddHosts {
                like: "n1".into(),
                names: NewHostNames::Count(1),
            }),
            ..Change::default()
        },
    );
    assert_eq!(w.changes, ["hosts added like n1: n1-whatif-1"]);
    assert_eq!(
        moved(&w.by_user["alice"]),
        (Some(800.0), Some(250.0), Some(-550.0), 2, 0)
    );
    assert_eq!(w.by_user["alice"].before.mean, Some(800.0));
    assert_eq!(w.by_user["alice"].after.mean, Some(250.0));
    assert_eq!(
        moved(&w.by_user["bob"]),
        (Some(800.0), Some(300.0), Some(-500.0), 1, 0)
    );
    let all = &w.all;
    assert_eq!((all.tasks, all.gained, all.lost), (3, 0, 0));
    assert_eq!(all.before.median, Some(800.0));
    assert_eq!(all.after.median, Some(300.0));
    assert_eq!(w.by_queue.keys().collect::<Vec<_>>(), ["all.q"]);
    // The job that moves most first: 5 (600 sooner), then 3 and 4 (500), by number.
    let order: Vec<u32> = w.jobs.iter().map(|j| j.job.0).collect();
    assert_eq!(order, [5, 3, 4]);
    match &w.jobs[1].after {
        StartEstimate::At { time, hosts, .. } => {
            assert_eq!(
                (*time, hosts.as_slice()),
                (NOW, ["n1-whatif-1".to_string()].as_slice())
            )
        }
        other => panic!("{other:?}"),
    }
    let text = text(&w, "cell");
    assert!(
        text.contains(
            "alice                 2     0:13:20     0:04:10     0:13:20     0:04:10    -0:09:10       2      0      0     0"
        ),
        "{text}"
    );
}

/// Drained, n1 takes nothing once job 1 leaves it: everything waits for n2 (free at +1100),
/// one after the other: 3 at +1100, 4 at +1400, 5 at +1700, each 600 s later than before.
#[test]
fn a_drained_host_makes_the_queue_wait_for_the_others_by_the_worked_amount() {
    let cell = three_waiting();
    let w = play(
        &cell,
        &Change {
            drain: vec!["n1".into()],
            ..Change::default()
        },
    );
    assert_eq!(
        moved(&w.by_user["alice"]),
        (Some(800.0), Some(1400.0), Some(600.0), 0, 2)
    );
    assert_eq!(
        moved(&w.by_user["bob"]),
        (Some(800.0), Some(1400.0), Some(600.0), 0, 1)
    );
    assert_eq!((w.all.later, w.all.earlier), (3, 0));
    // The live state is left as it was: n1 open.
    assert!(cell.state.instance_states.disabled.is_empty());
}

/// Bob's job 4 has `-p 1000`, alice's 3 none. By default (weight_priority 0) the older goes
/// first (its waiting time makes its urgency the higher): 3 at +500, 4 at +800. With `-p`
/// weighing 1, bob's goes first (npprior 0.99 against 0.5 outweighs half of nurg's 1/3):
/// 4 at +500, 3 at +800. Alice waits 300 s more, bob 300 s less.
#[test]
fn a_weight_that_reorders_two_users_swaps_their_waits() {
    let cell = cell(vec![job(3, "alice", 300, 0), job(4, "bob", 300, 1000)]);
    let w = play(
        &cell,
        &Change {
            set: vec!["scheduler.weight_priority=1".into()],
            ..Change::default()
        },
    );
    assert_eq!(w.changes, ["scheduler.weight_priority=1"]);
    assert_eq!(
        moved(&w.by_user["alice"]),
        (Some(500.0), Some(800.0), Some(300.0), 0, 1)
    );
    assert_eq!(
        moved(&w.by_user["bob"]),
        (Some(800.0), Some(500.0), Some(-300.0), 1, 0)
    );
    assert_eq!(w.all.change, Some(0.0));
}

/// Nothing changed: both plays are the same.
#[test]
fn without_a_change_nothing_moves() {
    let w = play(&three_waiting(), &Change::default());
    assert_eq!(moved(&w.all), (Some(800.0), Some(800.0), Some(0.0), 0, 0));
    assert!(w.jobs.is_empty());
}

#[test]
fn keys_are_set_by_path_and_list_entries_by_name_or_index() {
    let live = config();
    let set = |args: &[&str]| {
        changed_config(
            &live,
            &Change {
                set: args.iter().map(|s| s.to_string()).collect(),
                ..Change::default()
            },
        )
        .map(|(c, _)| c)
    };
    let c = set(&[
        "scheduler.weight_ticket=0.1",
        "queues[all.q].slots=4",
        "hosts[1].slots=8",
        "hosts[n1].complex_values.gpu=2",
        "hostgroups.@all=[n1]",
        "scheduler.start_estimates.run_times=limits",
        "queues[all.q].per_host.n2.slots=3",
    ])
    .expect("changed");
    assert_eq!(c.scheduler.weight_ticket, 0.1);
    assert_eq!(c.queues[0].slots, 4);
    assert_eq!(c.hosts[1].slots, Some(8));
    assert_eq!(c.hosts[0].complex_values["gpu"], "2");
    assert_eq!(c.hostgroups["@all"], ["n1"]);
    assert_eq!(c.scheduler.start_estimates.run_times, RunTimeSource::Limits);
    // A mapping the configuration leaves out while empty is made.
    assert_eq!(c.queues[0].per_host["n2"]["slots"], 3);
    assert_eq!(c.queue_instance(&c.queues[0], "n2").slots, 3);
    // Unchanged otherwise: the round trip through the parser keeps the configuration.
    assert_eq!(set(&[]).expect("same"), live);

    let error = |arg: &str| set(&[arg]).expect_err(arg).to_string();
    assert_eq!(
        error("scheduler.weight_tickt=0.1"),
        "--set scheduler.weight_tickt=0.1: scheduler.weight_tickt: no such key in the configuration"
    );
    assert_eq!(
        error("queues[long.q].slots=4"),
        "--set queues[long.q].slots=4: queues[long.q].slots: no entry named \"long.q\""
    );
    assert_eq!(
        error("queues.slots=4"),
        "--set queues.slots=4: queues.slots: \"queues\" is a list: name an entry as queues[NAME] or queues[INDEX]"
    );
    assert_eq!(
        error("scheduler.weight_ticket=lots"),
        "--set scheduler.weight_ticket=lots: scheduler.weight_ticket: the configuration does not take \"lots\": invalid floating point"
    );
    // A value the parser takes but the configuration's checks refuse.
    assert_eq!(
        error("scheduler.start_estimates.horizon=-5"),
        "--set scheduler.start_estimates.horizon=-5: scheduler.start_estimates.horizon: the configuration does not take \"-5\": scheduler: start_estimates: horizon: \"-5\" is not a positive time (h:m:s or seconds)"
    );
    assert_eq!(error("weight"), "--set weight: not KEY=VALUE");
}

#[test]
fn added_hosts_join_the_queues_and_host_groups_of_their_model_and_never_take_a_name() {
    let mut live = config();
    live.queues[0].hostlist.push("n2".into());
    live.hosts.push({
        let mut h = live.hosts[0].clone();
        h.name = "n2-whatif-1".into();
        h
    });
    let add = |like: &str, names: NewHostNames| {
        changed_config(
            &live,
            &Change {
                add_hosts: Some(AddHosts {
                    like: like.into(),
                    names,
                }),
                ..Change::default()
            },
        )
    };
    let (c, words) = add("n2", NewHostNames::Count(2)).expect("added");
    assert_eq!(words, ["hosts added like n2: n2-whatif-2 n2-whatif-3"]);
    assert_eq!(
        c.hostgroups["@all"],
        ["n1", "n2", "n2-whatif-2", "n2-whatif-3"]
    );
    assert_eq!(
        c.queues[0].hostlist,
        ["@all", "n2", "n2-whatif-2", "n2-whatif-3"]
    );
    assert_eq!(
        add("n1", NewHostNames::Named(vec!["n2".into()]))
            .expect_err("taken")
            .to_string(),
        "--add-host n2: a host of that name is in the configuration already"
    );
    assert_eq!(
        add("n9", NewHostNames::Count(1))
            .expect_err("no model")
            .to_string(),
        "--like n9: no host of that name in the configuration"
    );
}

#[test]
fn spans_are_clock_times_up_to_two_days_then_days() {
    assert_eq!(span(0.0, true), "0:00:00");
    assert_eq!(span(-550.0, true), "-0:09:10");
    assert_eq!(span(3725.0, true), "+1:02:05");
    assert_eq!(span(47.0 * 3600.0, false), "47:00:00");
    assert_eq!(span(3.0 * 86_400.0, false), "3.0 days");
}

/// An advance reservation of one slot over [+1500, +3000) is in both plays: the job bound to
/// it starts at its start, with or without a change.
#[test]
fn advance_reservations_are_in_both_plays() {
    let mut bound = job(4, "bob", 300, 0);
    bound.spec.ar = Some(1);
    let mut cell = cell(vec![job(3, "alice", 300, 0), bound]);
    let granted = cell.state.decide_ar(
        crate::model::ArSubmission {
            v: 1,
            id: 1,
            name: None,
            owner: crate::model::ArOwner {
                uid: 1002,
                user: "bob".into(),
                gid: 1002,
                group: "bob".into(),
                host: "n1".into(),
            },
            submission_time: NOW,
            start: NOW + 1500,
            end: NOW + 3000,
            account: None,
            resources: Vec::new(),
            pe: None,
            queues: Vec::new(),
            master_queues: Vec::new(),
            users: Vec::new(),
            mail_options: String::new(),
            mail_list: Vec::new(),
            now: false,
        },
        NOW,
    );
    assert!(granted.refused.is_none(), "{granted:?}");
    let w = play(
        &cell,
        &Change {
            add_hosts: Some(AddHosts {
                like: "n1".into(),
                names: NewHostNames::Count(1),
            }),
            ..Change::default()
        },
    );
    let bob = &w.by_user["bob"];
    assert_eq!(
        (bob.before.median, bob.after.median),
        (Some(1500.0), Some(1500.0))
    );
    // Alice's job takes the new host at once instead of n1 at +500.
    assert_eq!(moved(&w.by_user["alice"]).2, Some(-500.0));
}

/// `--config FILE`: a whole other configuration, here the live one with a third host.
#[test]
fn another_whole_configuration_is_played_against_the_live_one() {
    let cell = three_waiting();
    let mut other = config();
    let mut n3 = other.hosts[0].clone();
    n3.name = "n3".into();
    other.hosts.push(n3);
    other
        .hostgroups
        .get_mut("@all")
        .expect("@all")
        .push("n3".into());
    let w = play(
        &cell,
        &Change {
            config: Some(("three.yaml".into(), other)),
            ..Change::default()
        },
    );
    assert_eq!(w.changes, ["configuration of three.yaml"]);
    // As with a host added like n1: 550 s sooner for alice, 500 for bob.
    assert_eq!(moved(&w.by_user["alice"]).2, Some(-550.0));
    assert_eq!(moved(&w.by_user["bob"]).2, Some(-500.0));
}

/// A `--set` goes through the configuration's serialized form and back through its parser:
/// every configuration the project ships comes back from the round trip as it was.
#[test]
fn shipped_configurations_survive_the_round_trip_of_a_set() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = vec![ClusterConfig::default_text("node1", 4)];
    for dir in ["docs/sim", "spool/examples"] {
        for e in std::fs::read_dir(root.join(dir)).expect("dir").flatten() {
            if e.path().extension().is_some_and(|x| x == "yaml") {
                texts.push(std::fs::read_to_string(e.path()).expect("read"));
            }
        }
    }
    assert!(texts.len() > 5);
    for text in texts {
        let config = ClusterConfig::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let changed = set_key(&config, "scheduler.weight_urgency=0.25").expect("set");
        let mut expected = config.clone();
        expected.scheduler.weight_urgency = 0.25;
        assert_eq!(changed, expected, "{text}");
    }
}
