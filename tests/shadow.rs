//! A shadow `sched_d` (`--shadow`, SGE's `sge_shadowd`): it watches the master's heartbeat
//! and takes the cell over when it stops — after `kill -9` of the master on one machine, and
//! on the namespace cluster after the master's host is cut off and frozen (standing for a
//! master hung on its NFS mount) — recovering as a restart does: every job recorded once,
//! none run twice. The replaced master exits with a message when it runs again; one started
//! again later finds the cell taken; a master stopped on purpose is not replaced.

use crate::sched::{SchedD, accounting_records, cell, cwd, submit, wait_for, workdir};
use crate::support::cluster::Cluster;
use crate::support::*;
use gridspool::model::JobId;
use gridspool::sched::mastership::{act_master, read_heartbeat};
use std::path::Path;
use std::time::Duration;

/// The job's lines: `start ID` when it starts, `done ID` when it ends.
const JOB: &str =
    "echo \"start $JOB_ID\" >> runs.log\nsleep 1\necho \"done $JOB_ID\" >> runs.log\n";

fn count(log: &Path, line: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

/// Waits until every job of `ids` has an accounting record; fails with `why` after
/// `timeout`.
fn wait_all_accounted(cell: &TestCell, ids: &[u32], timeout: Duration, why: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + timeout;
    while !ids
        .iter()
        .all(|&id| !accounting_records(cell, JobId(id)).is_empty())
    {
        assert!(std::time::Instant::now() < deadline, "{}", why());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every job has exactly one accounting record of a run that ended (failed 0), and ran
/// exactly once.
fn each_ran_once(cell: &TestCell, log: &Path, ids: &[u32], context: &str) {
    for &id in ids {
        let records = accounting_records(cell, JobId(id));
        assert_eq!(records.len(), 1, "job {id}: {records:?}\n{context}");
        assert_eq!(records[0][11], "0", "job {id}: {records:?}\n{context}");
        assert_eq!(
            count(log, &format!("start {id}")),
            1,
            "job {id} started once"
        );
        assert_eq!(count(log, &format!("done {id}")), 1, "job {id} ended once");
    }
}

fn master_pid(cell: &TestCell) -> Option<u32> {
    std::fs::read_to_string(cell.cell.join("daemon/sched_d.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[test]
fn a_shadow_takes_over_a_killed_master_and_runs_nothing_twice() {
    let cell = cell(2);
    let dir = workdir(&cell);
    let log = dir.join("runs.log");
    let mut master = SchedD::start(&cell, &["--heartbeat-interval", "0.2"]);
    let mut shadow = SchedD::spawn(&cell, &["--shadow", "--takeover-after", "1"]);
    const JOBS: usize = 16;
    let ids: Vec<u32> = (0..JOBS)
        .map(|_| submit(&cell.spool, JOB, |s, _| s.cwd = cwd(&dir)).0)
        .collect();
    wait_for("a first wave done", Duration::from_secs(30), || {
        ids.iter()
            .filter(|id| count(&log, &format!("done {id}")) > 0)
            .count()
            >= 4
    });
    master.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = master.wait();
    wait_for("the shadow holds the cell", Duration::from_secs(30), || {
        master_pid(&cell) == Some(shadow.pid())
    });
    let me = gridspool::identity::short_hostname();
    assert_eq!(
        act_master(&cell.cell.join("daemon")).map(|m| (m.host, m.pid)),
        Some((me, shadow.pid()))
    );
    wait_for("every job accounted", Duration::from_secs(60), || {
        ids.iter()
            .all(|&id| !accounting_records(&cell, JobId(id)).is_empty())
    });
    each_ran_once(&cell, &log, &ids, &shadow.log_text());

    // The old master, started again, finds the cell taken and says by whom.
    let mut again = SchedD::spawn(&cell, &[]);
    assert_eq!(again.wait(), Some(3));
    let text = again.log_text();
    assert!(
        text.contains("another sched_d") && text.contains(&format!("(pid {})", shadow.pid())),
        "{text}"
    );

    // A master stopped on purpose is not replaced.
    shadow.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(shadow.wait(), Some(0));
    assert!(read_heartbeat(&cell.cell.join("daemon")).is_some_and(|b| b.stopped));
    let mut second = SchedD::spawn(&cell, &["--shadow", "--takeover-after", "1"]);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        master_pid(&cell).is_none(),
        "no master after a stop on purpose"
    );
    second.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = second.wait();
}

#[test]
fn a_shadow_on_another_host_takes_over_a_master_cut_off_and_frozen() {
    const TEST: &str = "a_shadow_on_another_host_takes_over_a_master_cut_off_and_frozen";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    // node01: the master's host, node02: the shadow's, node03-05: execution hosts.
    let Some(cluster) = Cluster::start(TEST, 5) else {
        return;
    };
    let hosts = cluster.hosts_yaml_of(&[2, 3, 4], 2);
    let cell = TestCell::with_config(|_| {
        format!(
            "{hosts}hostgroups:\n  \"@allhosts\": [node03, node04, node05]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let master = SchedD::spawn_with(&cell, &["--heartbeat-interval", "0.5"], &cluster.on_host(0));
    wait_for("the master holds the cell", Duration::from_secs(10), || {
        master_pid(&cell) == Some(master.pid())
    });
    let shadow = SchedD::spawn_with(
        &cell,
        &["--shadow", "--takeover-after", "2"],
        &cluster.on_host(1),
    );
    cell.write_file(&user, "job.sh", &format!("#!/bin/sh\n{JOB}"));
    const JOBS: usize = 24;
    let ids: Vec<u32> = (0..JOBS)
        .map(|_| {
            let run = cell.run(&user, "qsub", &["-terse", "-cwd", "job.sh"]);
            assert_eq!(run.code, 0, "{run:?}");
            run.stdout.trim().parse().expect("job id")
        })
        .collect();
    let log = cell.workdir(&user).join("runs.log");
    wait_for("a first wave done", Duration::from_secs(60), || {
        ids.iter()
            .filter(|id| count(&log, &format!("done {id}")) > 0)
            .count()
            >= 6
    });
    // node01 is cut off, its master frozen (as on a hard NFS mount that lost its server).
    cluster.set_link(0, false);
    master.signal(nix::sys::signal::Signal::SIGSTOP);
    wait_for(
        "the shadow on node02 is the master",
        Duration::from_secs(30),
        || act_master(&cell.cell.join("daemon")).is_some_and(|m| m.host == "node02"),
    );
    wait_all_accounted(&cell, &ids, Duration::from_secs(120), || {
        format!("not every job accounted; the log:\n{}", shadow.log_text())
    });
    each_ran_once(&cell, &log, &ids, &shadow.log_text());

    // The frozen master runs again: it reads that it was replaced and exits, starting nothing.
    let more = cell.run(&user, "qsub", &["-terse", "-cwd", "job.sh"]);
    assert_eq!(more.code, 0, "{more:?}");
    let more: u32 = more.stdout.trim().parse().expect("job id");
    let mut master = master;
    master.signal(nix::sys::signal::Signal::SIGCONT);
    assert_eq!(master.wait(), Some(3), "{}", master.log_text());
    assert!(
        master.log_text().contains("took over this cell"),
        "{}",
        master.log_text()
    );
    cluster.set_link(0, true);
    wait_for(
        "the job submitted meanwhile accounted",
        Duration::from_secs(60),
        || !accounting_records(&cell, JobId(more)).is_empty(),
    );
    let mut all = ids.clone();
    all.push(more);
    each_ran_once(&cell, &log, &all, &shadow.log_text());
}

/// Issue 23: a shadow that replaced a master frozen with its links up started nothing until
/// the old master thawed: the results of the tasks running at the freeze stayed with the old
/// master's start servers, whose sessions the frozen master kept open, and their slots
/// stayed busy (10 pending jobs waited the whole 90 s freeze). The new master takes every
/// host over at takeover: the pending jobs run and everything is accounted while the old
/// master is still frozen.
#[test]
fn a_shadow_replacing_a_frozen_master_takes_its_hosts_over_at_once() {
    const TEST: &str = "a_shadow_replacing_a_frozen_master_takes_its_hosts_over_at_once";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    // node01: the master's host, node02: the shadow's, node03-04: execution hosts.
    let Some(cluster) = Cluster::start(TEST, 4) else {
        return;
    };
    let hosts = cluster.hosts_yaml_of(&[2, 3], 2);
    let cell = TestCell::with_config(|_| {
        format!(
            "{hosts}hostgroups:\n  \"@allhosts\": [node03, node04]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let master = SchedD::spawn_with(&cell, &["--heartbeat-interval", "0.5"], &cluster.on_host(0));
    wait_for("the master holds the cell", Duration::from_secs(10), || {
        master_pid(&cell) == Some(master.pid())
    });
    let shadow = SchedD::spawn_with(
        &cell,
        &["--shadow", "--takeover-after", "2"],
        &cluster.on_host(1),
    );
    cell.write_file(
        &user,
        "job.sh",
        "#!/bin/sh\necho \"start $JOB_ID\" >> runs.log\nsleep 12\necho \"done $JOB_ID\" >> runs.log\n",
    );
    let qsub = || -> u32 {
        let run = cell.run(&user, "qsub", &["-terse", "-cwd", "job.sh"]);
        assert_eq!(run.code, 0, "{run:?}");
        run.stdout.trim().parse().expect("job id")
    };
    let log = cell.workdir(&user).join("runs.log");
    // Every slot busy, then frozen with its sessions up; ten more jobs wait.
    let mut ids: Vec<u32> = (0..4).map(|_| qsub()).collect();
    wait_for("four jobs running", Duration::from_secs(30), || {
        ids.iter()
            .all(|id| count(&log, &format!("start {id}")) == 1)
    });
    let mut master = master;
    master.signal(nix::sys::signal::Signal::SIGSTOP);
    ids.extend((0..10).map(|_| qsub()));
    wait_for(
        "the shadow on node02 is the master",
        Duration::from_secs(30),
        || act_master(&cell.cell.join("daemon")).is_some_and(|m| m.host == "node02"),
    );
    wait_all_accounted(&cell, &ids, Duration::from_secs(90), || {
        format!(
            "not every job accounted while the old master is frozen; the new master's log:\n{}",
            shadow.log_text()
        )
    });
    each_ran_once(&cell, &log, &ids, &shadow.log_text());
    master.signal(nix::sys::signal::Signal::SIGCONT);
    assert_eq!(master.wait(), Some(3), "{}", master.log_text());
}
