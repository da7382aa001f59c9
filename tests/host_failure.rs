//! Execution hosts that die and return, on the namespace cluster ([`crate::support::cluster`]):
//! a crashed host (every process of it killed) and a host behind a cut link go unknown (`au`)
//! after `max_unheard`; after `reschedule_unknown` their tasks are requeued (`-r y`, with a
//! `failed 25` record and `RESTARTED=1` when they run again) or ended as never run (`-r n`);
//! a host that returns takes work again, a result it kept is recorded once and its requeued
//! copy cancelled, and a run still going there is killed. And `kill -9` of `sched_d` while
//! hosts die and return loses nothing and runs nothing twice.
//!
//! The cells use tuned times (`max_unheard` 4–5 s, `reschedule_unknown` 1–2 s) so that each
//! test takes seconds, not the defaults' half minute; not shorter: on a machine loaded by the
//! rest of the suite a live host's heartbeat is now and then 2 s late, and it went unknown.

use crate::cluster::{cluster_cell_with, output, qsub};
use crate::sched::{SchedD, accounting_records, wait_for};
use crate::support::cluster::Cluster;
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

const TUNED: &str = "max_unheard: \"0:0:5\"\nreschedule_unknown: \"0:0:1\"\n";

/// The state letters of queue instance `qi` in `qstat -f` (empty when it has none).
pub(crate) fn qi_states(cell: &TestCell, user: &TestUser, qi: &str) -> String {
    let run = cell.run(user, "qstat", &["-f"]);
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(qi))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // queuename qtype resv/used/tot. load_avg arch states
            f.get(5).map_or(String::new(), |s| (*s).to_string())
        })
        .unwrap_or_else(|| panic!("{qi} not in qstat -f:\n{}", run.stdout))
}

/// The lines of the shared log the test jobs append to.
fn log_lines(cell: &TestCell, user: &TestUser) -> Vec<String> {
    std::fs::read_to_string(cell.workdir(user).join("runs.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// How many lines of the log start with `prefix` and a space.
fn count(lines: &[String], prefix: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.starts_with(&format!("{prefix} ")) || *l == prefix)
        .count()
}

/// `failed` of each accounting record of job `id`, with its host.
fn records(cell: &TestCell, id: u32) -> Vec<(String, String)> {
    accounting_records(cell, JobId(id))
        .into_iter()
        .map(|r| (r[1].clone(), r[11].clone()))
        .collect()
}

/// Whether `qstat` (as `user`) lists job `id`.
fn listed(cell: &TestCell, user: &TestUser, id: u32) -> bool {
    !job_state(cell, user, id).is_empty()
}

/// Fills the two slots of `node02` and `node03` with jobs that wait: what comes next goes to
/// `node01`. Returns the blockers by host.
fn fill_other_hosts(cell: &TestCell, user: &TestUser) -> [Vec<u32>; 2] {
    cell.write_file(user, "block.sh", "#!/bin/sh\nexec sleep 600\n");
    let on = |h: &str| -> Vec<u32> {
        (0..2)
            .map(|_| {
                qsub(
                    cell,
                    user,
                    &["-terse", "-cwd", "-l", &format!("h={h}"), "block.sh"],
                )
            })
            .collect()
    };
    let blockers = [on("node02"), on("node03")];
    wait_for("the blockers run", Duration::from_secs(30), || {
        let run = cell.run(user, "qstat", &["-s", "r"]);
        run.stdout
            .lines()
            .filter(|l| l.contains("block.sh"))
            .count()
            == 4
    });
    blockers
}

/// Three hosts of two slots with the tuned times, `sched_d` running, and `node02` and
/// `node03` full ([`fill_other_hosts`]); `None` (the test skipped) when not root.
struct Setup {
    user: TestUser,
    cluster: Cluster,
    cell: TestCell,
    d: SchedD,
    on2: Vec<u32>,
}

fn setup(test: &str) -> Option<Setup> {
    let Some(user) = user1() else {
        skip(test, "needs root");
        return None;
    };
    let cluster = Cluster::start(test, 3)?;
    let cell = cluster_cell_with(&cluster, 2, TUNED);
    let d = SchedD::start(&cell, &[]);
    let [on2, _on3] = fill_other_hosts(&cell, &user);
    Some(Setup {
        user,
        cluster,
        cell,
        d,
        on2,
    })
}

#[test]
fn a_crashed_host_goes_unknown_its_tasks_are_rescheduled_and_it_takes_work_when_back() {
    const TEST: &str =
        "a_crashed_host_goes_unknown_its_tasks_are_rescheduled_and_it_takes_work_when_back";
    let Some(Setup {
        user,
        cluster,
        cell,
        d,
        on2,
    }) = setup(TEST)
    else {
        return;
    };
    cell.write_file(
        &user,
        "mark.sh",
        "#!/bin/sh\necho \"$JOB_ID $(hostname) ${RESTARTED:-0}\" >> runs.log\nexec sleep 600\n",
    );
    let rerun = qsub(&cell, &user, &["-terse", "-cwd", "-r", "y", "mark.sh"]);
    let once = qsub(&cell, &user, &["-terse", "-cwd", "-r", "n", "mark.sh"]);
    d.wait_for("both run", Duration::from_secs(30), || {
        log_lines(&cell, &user).len() == 2
    });
    let lines = log_lines(&cell, &user);
    assert!(lines.contains(&format!("{rerun} node01 0")), "{lines:?}");
    assert!(lines.contains(&format!("{once} node01 0")), "{lines:?}");

    cluster.crash(0);
    d.wait_for("all.q@node01 unknown", Duration::from_secs(30), || {
        qi_states(&cell, &user, "all.q@node01") == "au"
    });
    let qhost = cell.run(&user, "qhost", &["-h", "node01"]);
    let line = qhost
        .stdout
        .lines()
        .find(|l| l.starts_with("node01"))
        .unwrap_or_else(|| panic!("{qhost:?}"));
    assert_eq!(line.split_whitespace().nth(6), Some("-"), "{line}");
    assert_eq!(qi_states(&cell, &user, "all.q@node02"), "");

    // reschedule_unknown: `-r y` is pending again, with SGE's record of the run given up;
    // `-r n` ends as never run, with no record (SGE's "reaping").
    d.wait_for(
        "the rerunnable job's rescheduling record",
        Duration::from_secs(30),
        || !records(&cell, rerun).is_empty(),
    );
    assert_eq!(
        records(&cell, rerun),
        vec![("node01".to_string(), "25".to_string())]
    );
    d.wait_for("the other job ended", Duration::from_secs(30), || {
        !listed(&cell, &user, once)
    });
    assert!(
        records(&cell, once).is_empty(),
        "{:?}",
        records(&cell, once)
    );
    assert!(listed(&cell, &user, rerun));

    // Room on node02: the requeued job runs there, as a restart.
    for id in &on2 {
        assert_eq!(cell.run(&user, "qdel", &[&id.to_string()]).code, 0);
    }
    d.wait_for("the rerun on node02", Duration::from_secs(30), || {
        log_lines(&cell, &user).contains(&format!("{rerun} node02 1"))
    });

    // The host returns: known again, it takes work.
    cluster.reboot(0);
    d.wait_for("all.q@node01 known again", Duration::from_secs(60), || {
        qi_states(&cell, &user, "all.q@node01").is_empty()
    });
    cell.write_file(&user, "where.sh", "#!/bin/sh\nhostname\n");
    let bound = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-l", "h=node01", "where.sh"],
    );
    assert_eq!(output(&cell, &user, "where.sh", bound).trim(), "node01");

    let lines = log_lines(&cell, &user);
    assert_eq!(count(&lines, &once.to_string()), 1, "{lines:?}");
    assert_eq!(count(&lines, &rerun.to_string()), 2, "{lines:?}");
    assert_eq!(records(&cell, rerun).len(), 1, "{}", d.log_text());
}

#[test]
fn a_host_behind_a_cut_link_keeps_its_result_and_its_stray_run_is_killed_when_it_returns() {
    const TEST: &str =
        "a_host_behind_a_cut_link_keeps_its_result_and_its_stray_run_is_killed_when_it_returns";
    let Some(Setup {
        user,
        cluster,
        cell,
        d,
        on2,
    }) = setup(TEST)
    else {
        return;
    };
    cell.write_file(
        &user,
        "short.sh",
        "#!/bin/sh\necho \"$JOB_ID $(hostname) ${RESTARTED:-0}\" >> runs.log\nsleep 6\necho \"done $JOB_ID\" >> runs.log\n",
    );
    cell.write_file(
        &user,
        "long.sh",
        "#!/bin/sh\necho \"$JOB_ID $(hostname) ${RESTARTED:-0}\" >> runs.log\nexec sleep 617\n",
    );
    // Bound to node01: its requeued copy can only wait for node01.
    let kept = qsub(
        &cell,
        &user,
        &[
            "-terse",
            "-cwd",
            "-r",
            "y",
            "-q",
            "all.q@node01",
            "short.sh",
        ],
    );
    let moved = qsub(&cell, &user, &["-terse", "-cwd", "-r", "y", "long.sh"]);
    d.wait_for("both run", Duration::from_secs(30), || {
        log_lines(&cell, &user).len() == 2
    });
    assert!(log_lines(&cell, &user).contains(&format!("{moved} node01 0")));

    cluster.set_link(0, false);
    d.wait_for("all.q@node01 unknown", Duration::from_secs(30), || {
        qi_states(&cell, &user, "all.q@node01") == "au"
    });
    d.wait_for("both rescheduled", Duration::from_secs(30), || {
        records(&cell, kept).len() == 1 && records(&cell, moved).len() == 1
    });
    for id in &on2 {
        assert_eq!(cell.run(&user, "qdel", &[&id.to_string()]).code, 0);
    }
    d.wait_for(
        "the moved job's rerun on node02",
        Duration::from_secs(30),
        || log_lines(&cell, &user).contains(&format!("{moved} node02 1")),
    );
    // Behind the cut, node01 runs on: the bound job finishes there, its copy waits.
    d.wait_for(
        "the bound job done on node01",
        Duration::from_secs(30),
        || log_lines(&cell, &user).contains(&format!("done {kept}")),
    );
    assert!(listed(&cell, &user, kept));

    cluster.set_link(0, true);
    d.wait_for("all.q@node01 known again", Duration::from_secs(60), || {
        qi_states(&cell, &user, "all.q@node01").is_empty()
    });
    // The result node01 kept is the bound job's end: recorded once, the copy cancelled.
    d.wait_for("the kept result recorded", Duration::from_secs(30), || {
        records(&cell, kept).len() == 2
    });
    assert_eq!(
        records(&cell, kept),
        vec![
            ("node01".to_string(), "25".to_string()),
            ("node01".to_string(), "0".to_string())
        ]
    );
    d.wait_for("the bound job gone", Duration::from_secs(30), || {
        !listed(&cell, &user, kept)
    });
    // The moved job's first run, still going on node01, is killed; its rerun goes on.
    d.wait_for("the stray run killed", Duration::from_secs(30), || {
        !cluster.runs(0, "sleep 617")
    });
    assert!(cluster.runs(1, "sleep 617"), "the rerun on node02 goes on");
    assert!(listed(&cell, &user, moved));
    std::thread::sleep(Duration::from_secs(2));
    let lines = log_lines(&cell, &user);
    assert_eq!(
        count(&lines, &kept.to_string()),
        1,
        "not run again: {lines:?}"
    );
    assert_eq!(count(&lines, &moved.to_string()), 2, "{lines:?}");
    assert_eq!(records(&cell, moved).len(), 1, "{}", d.log_text());
}

#[test]
fn sched_d_killed_while_hosts_die_and_return_loses_nothing_and_runs_nothing_twice() {
    const TEST: &str =
        "sched_d_killed_while_hosts_die_and_return_loses_nothing_and_runs_nothing_twice";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 3) else {
        return;
    };
    let cell = cluster_cell_with(
        &cluster,
        2,
        "max_unheard: \"0:0:4\"\nreschedule_unknown: \"0:0:2\"\n",
    );
    let mut d = SchedD::start(&cell, &[]);
    cell.write_file(
        &user,
        "job.sh",
        "#!/bin/sh\necho \"start $JOB_ID $(hostname)\" >> runs.log\nsleep 3\necho \"done $JOB_ID\" >> runs.log\n",
    );
    const JOBS: usize = 24;
    let ids: Vec<u32> = (0..JOBS)
        .map(|_| qsub(&cell, &user, &["-terse", "-cwd", "-r", "y", "job.sh"]))
        .collect();
    wait_for("a first wave done", Duration::from_secs(60), || {
        count(&log_lines(&cell, &user), "done") >= 4
    });
    // node02 drops off for a moment (under max_unheard), and sched_d dies meanwhile.
    cluster.set_link(1, false);
    d.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = d.wait();
    std::thread::sleep(Duration::from_secs(2));
    cluster.set_link(1, true);
    let d = SchedD::start(&cell, &[]);
    // node03 dies for good: its tasks run elsewhere.
    std::thread::sleep(Duration::from_secs(1));
    cluster.crash(2);
    wait_for(
        "every job accounted as ended",
        Duration::from_secs(180),
        || {
            ids.iter()
                .all(|&id| records(&cell, id).iter().any(|(_, failed)| failed == "0"))
        },
    );
    let lines = log_lines(&cell, &user);
    for &id in &ids {
        let records = records(&cell, id);
        let ended = records.iter().filter(|(_, f)| f == "0").count();
        let rescheduled = records.iter().filter(|(_, f)| f == "25").count();
        assert_eq!(ended, 1, "job {id}: {records:?}\n{}", d.log_text());
        assert_eq!(records.len(), ended + rescheduled, "job {id}: {records:?}");
        // Done once per run that ended; a run given up on the crashed host may also have
        // finished its commands just before the crash took its result (seen once: job 10's
        // first run printed `done` and died unreported, so its rerun is right).
        let done = count(&lines, &format!("done {id}"));
        assert!(
            done >= 1 && done <= 1 + rescheduled,
            "job {id}: {records:?} {lines:?}"
        );
        // A run given up may have died before its first command (its host crashed while
        // it was being started): at most one start per run.
        let starts = count(&lines, &format!("start {id}"));
        assert!(
            (1..=1 + rescheduled).contains(&starts),
            "job {id}: {starts} starts for {} runs: {lines:?}",
            1 + rescheduled
        );
    }
}

/// Issue 23: a `-r n` task that finished (exit 0) while its host's link was cut was reaped
/// at `reschedule_unknown` with no accounting record and an exits line saying `failed` 25;
/// the real result, delivered when the host returned, was dropped, and `qsub -sync y`
/// reported a failure for a job that succeeded. The reaped task's end waits for its host: the
/// result it kept is the task's one accounting record and its exits line.
#[test]
fn a_task_not_rerun_that_ended_behind_a_cut_link_is_recorded_with_its_real_result() {
    const TEST: &str =
        "a_task_not_rerun_that_ended_behind_a_cut_link_is_recorded_with_its_real_result";
    let Some(Setup {
        user,
        cluster,
        cell,
        d,
        on2: _,
    }) = setup(TEST)
    else {
        return;
    };
    cell.write_file(
        &user,
        "short.sh",
        "#!/bin/sh\necho \"$JOB_ID $(hostname) ${RESTARTED:-0}\" >> runs.log\nsleep 6\necho \"done $JOB_ID\" >> runs.log\n",
    );
    let sync = std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            cell.run(
                &user,
                "qsub",
                &[
                    "-sync",
                    "y",
                    "-cwd",
                    "-r",
                    "n",
                    "-q",
                    "all.q@node01",
                    "short.sh",
                ],
            )
        });
        d.wait_for("the job runs on node01", Duration::from_secs(30), || {
            log_lines(&cell, &user)
                .iter()
                .any(|l| l.ends_with(" node01 0"))
        });
        cluster.set_link(0, false);
        d.wait_for("the task given up", Duration::from_secs(30), || {
            d.log_text().contains("task not restartable")
        });
        d.wait_for(
            "the job done behind the cut",
            Duration::from_secs(30),
            || {
                log_lines(&cell, &user)
                    .iter()
                    .any(|l| l.starts_with("done "))
            },
        );
        cluster.set_link(0, true);
        waiting.join().expect("qsub -sync y")
    });
    let id: u32 = log_lines(&cell, &user)[0]
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .expect("job id");
    assert_eq!(sync.code, 0, "{sync:?}\n{}", d.log_text());
    assert!(
        sync.stdout
            .contains(&format!("Job {id} exited with exit code 0.")),
        "{sync:?}"
    );
    assert_eq!(
        records(&cell, id),
        vec![("node01".to_string(), "0".to_string())],
        "{}",
        d.log_text()
    );
    let exits = crate::sched::exits(&cell.spool, JobId(id));
    assert_eq!(exits.len(), 1, "{exits:?}");
    assert_eq!((exits[0].exit_status, exits[0].failed), (0, 0), "{exits:?}");
    assert_eq!(count(&log_lines(&cell, &user), &id.to_string()), 1);
}

/// A rerunnable job bound to node01 that logs `<id> <host> <RESTARTED>` and sleeps `seconds`
/// (a count its processes are found by), once it runs there.
fn rerunnable_on_node01(cell: &TestCell, user: &TestUser, d: &SchedD, seconds: u32) -> u32 {
    cell.write_file(
        user,
        "bound.sh",
        &format!(
            "#!/bin/sh\necho \"$JOB_ID $(hostname) ${{RESTARTED:-0}}\" >> runs.log\nexec sleep {seconds}\n"
        ),
    );
    let id = qsub(
        cell,
        user,
        &[
            "-terse",
            "-cwd",
            "-r",
            "y",
            "-q",
            "all.q@node01",
            "bound.sh",
        ],
    );
    d.wait_for("the job runs on node01", Duration::from_secs(30), || {
        log_lines(cell, user).contains(&format!("{id} node01 0"))
    });
    id
}

/// The job's state as `qstat` shows it (`r`, `Rq`…), empty when it is not listed.
fn job_state(cell: &TestCell, user: &TestUser, id: u32) -> String {
    cell.run(user, "qstat", &[])
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id.to_string().as_str()))
        .and_then(|l| l.split_whitespace().nth(4).map(str::to_string))
        .unwrap_or_default()
}

/// Issue 23: a host back from a cut link took new work before its old runs were killed: the
/// requeued copy of a task bound to it was sent back there, refused as "already running on
/// this host" and left in `ERq` until an operator cleared it. The host takes work once the
/// runs given up there are killed and collected.
#[test]
fn a_host_back_from_a_cut_link_kills_its_old_runs_before_it_takes_their_tasks_again() {
    const TEST: &str =
        "a_host_back_from_a_cut_link_kills_its_old_runs_before_it_takes_their_tasks_again";
    let Some(Setup {
        user,
        cluster,
        cell,
        d,
        on2: _,
    }) = setup(TEST)
    else {
        return;
    };
    let id = rerunnable_on_node01(&cell, &user, &d, 618);
    cluster.set_link(0, false);
    d.wait_for("the job rescheduled", Duration::from_secs(30), || {
        records(&cell, id).len() == 1
    });
    cluster.set_link(0, true);
    d.wait_for("the rerun on node01", Duration::from_secs(90), || {
        log_lines(&cell, &user).contains(&format!("{id} node01 1"))
    });
    d.wait_for("the rerun running", Duration::from_secs(30), || {
        let s = job_state(&cell, &user, id);
        assert!(!s.contains('E'), "in error: {s}\n{}", d.log_text());
        s == "Rr"
    });
    // The run given up was killed: one `sleep 618` on node01, the rerun's.
    d.wait_for("the old run gone", Duration::from_secs(30), || {
        cluster.count(0, "sleep 618") == 1
    });
    assert_eq!(
        records(&cell, id),
        vec![("node01".to_string(), "25".to_string())]
    );
    assert_eq!(count(&log_lines(&cell, &user), &id.to_string()), 2);
}

/// The same after a restart: a `sched_d` that starts while a run given up on a host is still
/// there sends that host no work until the run is settled (its task's copy went to `ERq`).
#[test]
fn a_restarted_sched_d_settles_the_runs_given_up_on_a_host_before_it_sends_it_work() {
    const TEST: &str =
        "a_restarted_sched_d_settles_the_runs_given_up_on_a_host_before_it_sends_it_work";
    let Some(Setup {
        user,
        cluster,
        cell,
        mut d,
        on2: _,
    }) = setup(TEST)
    else {
        return;
    };
    let id = rerunnable_on_node01(&cell, &user, &d, 619);
    cluster.set_link(0, false);
    let state = |d: &SchedD| {
        let state = job_state(&cell, &user, id);
        assert!(!state.contains('E'), "in error: {state}\n{}", d.log_text());
        state
    };
    // Rescheduled, and pending again on disk.
    d.wait_for("the job rescheduled", Duration::from_secs(30), || {
        records(&cell, id).len() == 1 && state(&d).contains('q')
    });
    d.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = d.wait();
    cluster.set_link(0, true);
    let d = SchedD::start(&cell, &[]);
    d.wait_for("the rerun on node01", Duration::from_secs(90), || {
        state(&d);
        log_lines(&cell, &user).contains(&format!("{id} node01 1"))
    });
    d.wait_for("the old run gone", Duration::from_secs(30), || {
        cluster.count(0, "sleep 619") == 1
    });
    assert_eq!(
        records(&cell, id),
        vec![("node01".to_string(), "25".to_string())]
    );
}
