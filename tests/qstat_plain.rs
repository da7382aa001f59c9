//! The plain job table read in place (`compat::qstat::plain`, from `Spool::with_job_lines`)
//! against the same table from listing records (`qstat::render` over
//! `Spool::scan_job_listing`): byte for byte, over a cell with every kind of job line, from
//! the listing index, from the files, and with requests not yet folded in.

use crate::support::*;
use gridspool::compat::qstat::{self, HostLoad, QstatArgs, View};
use gridspool::model::{
    ErrorInfo, Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, PendingGroup,
    PriorityInfo, RequestAction, Requester, RunState, RunningTask, SlotRange, Submitter,
    TaskIdRange, TaskSelector, TaskSet,
};

/// 22:45:00 UTC on 2026-11-21: the clock of the listings.
const NOW: i64 = 1795301100;

fn submitter(owner: &str, gid: u32, submitted: i64) -> Submitter {
    Submitter {
        owner: owner.into(),
        uid: 3000 + gid,
        group: owner.into(),
        gid,
        submission_time: submitted,
        sge_o_home: format!("/home/{owner}"),
        sge_o_log_name: owner.into(),
        sge_o_path: "/bin".into(),
        sge_o_shell: "/bin/sh".into(),
        sge_o_workdir: format!("/home/{owner}"),
        sge_o_host: "vm".into(),
        sge_o_mail: None,
        sge_o_tz: None,
    }
}

fn spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        script_file: "job.sh".into(),
        ..JobSpec::default()
    }
}

fn prio(p: f64) -> Option<PriorityInfo> {
    Some(PriorityInfo {
        prio: p,
        nurg: 0.5,
        npprior: 0.25,
        ..PriorityInfo::default()
    })
}

fn running(task: u32, queue: &str, host: &str, slots: u32) -> RunningTask {
    RunningTask::running(task, queue, host, slots, NOW - 600 + i64::from(task))
}

fn set(first: u32, last: u32, step: u32) -> TaskSet {
    TaskSet::from_range(TaskIdRange::new(first, last, step))
}

/// Publishes job `id` and, unless `edit` leaves it `None`, writes its state.
fn put(
    cell: &TestCell,
    id: u32,
    owner: (&str, u32),
    spec: JobSpec,
    holds: Holds,
    edit: impl FnOnce(&mut JobRecord) -> bool,
) {
    let sub = JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: submitter(owner.0, owner.1, NOW - 3600 + i64::from(id % 5)),
        spec,
        holds,
    };
    cell.spool
        .publish_job(&sub, b"#!/bin/sh\n")
        .expect("publish");
    let mut job = JobRecord::from_submission(sub);
    if edit(&mut job) {
        cell.set_state(&job);
    }
}

/// Every kind of line: pending, held (each hold type, `-a`, `-hold_jid`, `-hold_jid_ad`),
/// in error, arrays (partly running, stepped, two-element, restarted tasks, finished tasks),
/// running tasks in every state, parallel jobs over several hosts, other users, long and
/// non-ASCII names, a queue instance name longer than the column, zombies.
fn varied_cell() -> TestCell {
    let cell = TestCell::new();
    let alice = ("alice", 100);
    let bob = ("bob", 200);
    let carol = ("carol-with-a-long-user-name", 100);
    let none = Holds::NONE;
    put(&cell, 1, alice, spec("plain"), none, |j| {
        j.priority = prio(0.5);
        true
    });
    // A submission sched_d has not seen: its job file only.
    put(&cell, 2, bob, spec("fresh"), none, |_| false);
    put(&cell, 3, alice, spec("running"), none, |j| {
        j.tasks.pending.clear();
        j.tasks.running.push(running(1, "all.q", "node1", 1));
        j.priority = prio(0.75);
        true
    });
    let mut array = spec("an-array-job-with-a-long-name");
    array.array = Some(TaskIdRange::new(1, 20, 1));
    put(&cell, 4, bob, array, none, |j| {
        // Tasks 1-3 run (one suspended, one deleting, one in a suspended queue), 4-5
        // finished, 6-8 restarted, 9-10 held by the user, the rest wait.
        j.tasks.pending = vec![
            PendingGroup {
                tasks: set(6, 8, 1),
                holds: Holds::NONE,
            },
            PendingGroup {
                tasks: set(9, 10, 1),
                holds: Holds {
                    user: true,
                    ..Holds::NONE
                },
            },
            PendingGroup {
                tasks: set(11, 20, 1),
                holds: Holds::NONE,
            },
        ];
        j.tasks.restarted = set(6, 8, 1);
        let mut t1 = running(1, "all.q", "node2", 1);
        t1.state = RunState::Suspended;
        let mut t2 = running(2, "all.q", "node1", 1);
        t2.deleting = true;
        t2.restarted = true;
        let mut t3 = running(3, "all.q", "node1", 1);
        t3.queue_suspended = true;
        t3.holds.user = true;
        let mut t0 = running(7, "all.q", "node1", 1);
        t0.state = RunState::Transferring;
        j.tasks.running = vec![t1, t2, t3, t0];
        j.tasks.pending[0].tasks.remove(7);
        j.tasks.finished = 2;
        j.tasks.finished_tasks = set(4, 5, 1);
        j.priority = prio(0.6);
        true
    });
    let mut stepped = spec("stepped");
    stepped.array = Some(TaskIdRange::new(1, 9, 4));
    put(&cell, 5, carol, stepped, none, |j| {
        j.priority = prio(0.6);
        true
    });
    let mut pair = spec("pair");
    pair.array = Some(TaskIdRange::new(1, 3, 2));
    put(&cell, 6, alice, pair, Holds::NONE, |j| {
        j.tasks.pending[0].holds.operator = true;
        true
    });
    let mut pe = spec("mpi");
    pe.pe = Some(PeRequest {
        name: "mpi".into(),
        range: SlotRange { min: 4, max: 8 },
    });
    put(&cell, 7, bob, pe.clone(), none, |j| {
        j.tasks.pending.clear();
        let mut t = running(1, "a-queue-with-a-rather-long-name.q", "a-host-name-too", 6);
        t.granted = vec![
            (
                "a-host-name-too".into(),
                "a-queue-with-a-rather-long-name.q".into(),
                4,
            ),
            ("node2".into(), "all.q".into(), 2),
        ];
        j.tasks.running.push(t);
        j.priority = prio(0.9);
        true
    });
    put(&cell, 8, alice, pe, none, |j| {
        j.priority = prio(0.9);
        true
    });
    let mut after = spec("after");
    after.predecessors = vec![JobId(1)];
    after.hold_jid = vec!["1".into()];
    put(&cell, 9, alice, after, none, |_| true);
    let mut after_gone = spec("after-gone");
    after_gone.predecessors = vec![JobId(999)];
    put(&cell, 10, bob, after_gone, none, |_| true);
    let mut after_array = spec("after-array");
    after_array.array = Some(TaskIdRange::new(1, 20, 1));
    after_array.array_predecessors = vec![JobId(4)];
    put(&cell, 11, carol, after_array, none, |_| true);
    let mut later = spec("later");
    later.start_time = Some(NOW + 3600);
    put(&cell, 12, alice, later, none, |_| true);
    let mut sooner = spec("sooner");
    sooner.start_time = Some(NOW - 3600);
    put(&cell, 13, alice, sooner, none, |_| true);
    put(&cell, 14, bob, spec("failed"), none, |j| {
        j.error = Some(ErrorInfo {
            time: NOW - 10,
            message: "can't chdir".into(),
        });
        j.tasks.pending[0].holds.system = true;
        true
    });
    put(&cell, 15, alice, spec("jöb-ünïcödé-name"), none, |j| {
        j.priority = prio(0.5);
        true
    });
    put(
        &cell,
        16,
        alice,
        spec("user-held"),
        Holds {
            user: true,
            ..Holds::NONE
        },
        |_| true,
    );
    // Every task finished: a zombie of `-s z` only.
    let mut ended = spec("ended");
    ended.array = Some(TaskIdRange::new(1, 4, 1));
    put(&cell, 17, bob, ended, none, |j| {
        j.tasks.pending.clear();
        j.tasks.finished = 4;
        j.tasks.finished_tasks = set(1, 4, 1);
        true
    });
    // Finished, from before finished tasks were listed: its whole range.
    let mut old = spec("old-ended");
    old.array = Some(TaskIdRange::new(2, 10, 3));
    put(&cell, 18, carol, old, none, |j| {
        j.tasks.pending.clear();
        j.tasks.finished = 3;
        true
    });
    put(&cell, 19, ("dave", 300), spec("suspended"), none, |j| {
        j.tasks.pending.clear();
        let mut t = running(1, "all.q", "node2", 1);
        t.state = RunState::Suspended;
        t.queue_suspended = true;
        j.tasks.running.push(t);
        true
    });
    // Deleted before it ran: gone from every listing.
    put(&cell, 20, alice, spec("deleted"), none, |j| {
        j.tasks.pending.clear();
        true
    });
    put(&cell, 21, ("dave", 300), spec("tie"), none, |j| {
        j.priority = prio(0.5);
        true
    });
    cell
}

/// Writes the index `sched_d` leaves when it stops, for every job file as it is now, but
/// for `stale` as it was before its state was written.
fn write_index(cell: &TestCell, stale: u32) {
    let mut entries = Vec::new();
    for id in 1..=21 {
        let id = JobId(id);
        let state = std::fs::read(cell.spool.state_file(id));
        let entry = match state {
            Ok(bytes) if id.0 != stale => gridspool::spool::listing_entry(&bytes, true),
            _ => {
                let bytes = std::fs::read(cell.spool.job_file(id)).expect("job file");
                gridspool::spool::listing_entry(&bytes, false)
            }
        };
        entries.push((id, entry.expect("entry")));
    }
    gridspool::spool::index::write_stopped(&cell.spool, &entries).expect("index");
}

const ARGS: &[&[&str]] = &[
    &[],
    &["-u", "*"],
    &["-u", "bob,dave"],
    &["-u", "carol-with-a-long-user-name"],
    &["-u", "*", "-s", "p"],
    &["-u", "*", "-s", "r"],
    &["-u", "*", "-s", "s"],
    &["-u", "*", "-s", "z"],
    &["-u", "*", "-s", "hu"],
    &["-u", "*", "-s", "ho"],
    &["-u", "*", "-s", "hs"],
    &["-u", "*", "-s", "hd"],
    &["-u", "*", "-s", "hj"],
    &["-u", "*", "-s", "ha"],
    &["-u", "*", "-s", "h"],
    &["-u", "*", "-s", "prz"],
    &["-u", "*", "-g", "d"],
    &["-u", "*", "-g", "d", "-s", "pz"],
    &["-s", "a", "-u", "alice"],
    &["-U", "bob", "-u", "*"],
    &["-ncb", "-u", "*"],
];

/// Each of `ARGS`'s outputs by both paths, with the number of lines of the full one.
fn both(cell: &TestCell) -> Vec<(String, String, String)> {
    let config = gridspool::config::ClusterConfig::parse(
        &std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config"),
    )
    .expect("config");
    let load = HostLoad::not_read("vm");
    let loads = Default::default();
    let states = Default::default();
    let scan = cell.spool.scan_job_listing().expect("scan");
    let full_view = View {
        instance_states: &states,
        estimates: None,
        storage_blocked: None,
        host_loads: &loads,
        jobs: &scan.jobs,
        ended: &scan.ended,
        config: &config,
        caller: "alice",
        now: NOW,
        load: &load,
    };
    // The plain table reads no records: its view has none.
    let plain_view = View {
        jobs: &[],
        ended: &[],
        ..full_view
    };
    ARGS.iter()
        .map(|words| {
            let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            let args = QstatArgs::parse(&words).expect("args");
            assert!(qstat::plain::serves(&args), "{words:?}");
            let full = qstat::render(&args, &full_view).stdout;
            let plain = cell
                .spool
                .with_job_lines(|lines| qstat::plain::render(&args, &plain_view, lines))
                .expect("lines")
                .stdout;
            (words.join(" "), full, plain)
        })
        .collect()
}

/// Whether a table has a line of job `id`.
fn listed(table: &str, id: u32) -> bool {
    let start = format!("{id:7} ");
    table.lines().any(|l| l.starts_with(&start))
}

fn assert_same(outputs: &[(String, String, String)], how: &str, ids: &[u32]) {
    for (args, full, plain) in outputs {
        assert_eq!(
            plain, full,
            "qstat {args} ({how}): the plain table, then the full one"
        );
    }
    // Not vacuous: the listings show what the cell holds.
    let all = &outputs[1].1;
    for id in ids {
        assert!(listed(all, *id), "{id} missing ({how}):\n{all}");
    }
    assert!(all.contains("jöb-ünïcö"), "{all}");
    assert!(
        outputs[7].1.contains("4-5:1") || outputs[7].1.contains("4,5"),
        "{}",
        outputs[7].1
    );
    assert!(outputs[16].1.lines().count() > 40, "{}", outputs[16].1);
}

/// Jobs `-u '*'` lists (job 1 first: the test deletes it).
const LISTED: [u32; 10] = [1, 2, 3, 4, 5, 7, 11, 15, 19, 21];

#[test]
fn the_plain_table_is_the_full_paths() {
    let cell = varied_cell();
    // From the files (no index).
    assert!(!cell.spool.listing_index_usable());
    assert_same(&both(&cell), "from the files", &LISTED);
    // From the index, with job 3's entry older than its state file.
    write_index(&cell, 3);
    assert!(cell.spool.listing_index_usable());
    assert_same(&both(&cell), "from the index", &LISTED);
    // Requests not yet folded in: their jobs are read whole and the requests applied.
    let operator = Requester {
        uid: 0,
        user: "root".into(),
        host: "vm".into(),
        manager: true,
        operator: true,
    };
    cell.spool
        .publish_request(
            operator.clone(),
            vec![RequestAction::Hold {
                job: JobId(5),
                tasks: TaskSelector::All,
                hold: Holds {
                    operator: true,
                    ..Holds::NONE
                },
            }],
        )
        .expect("qhold");
    cell.spool
        .publish_request(
            operator,
            vec![RequestAction::Delete {
                job: JobId(1),
                tasks: TaskSelector::All,
                force: false,
            }],
        )
        .expect("qdel");
    assert!(cell.spool.listing_index_usable());
    let outputs = both(&cell);
    assert!(outputs[1].1.contains("hqw"), "{}", outputs[1].1);
    assert!(!listed(&outputs[1].1, 1), "{}", outputs[1].1);
    assert_same(&outputs, "with requests", &LISTED[1..]);
}
