//! `gridspool-sim` decides as `sched_d` decides: a small workload run by the daemon on a
//! one-slot cell under a share tree, then its accounting file replayed by the simulator with
//! the same configuration, starts the same jobs in the same order on the same host.
//!
//! One slot: each end frees exactly one slot and is followed by exactly one start, so the
//! sequence of starts is the sequence of decisions (ends at once on several slots would let
//! the two legitimately differ). The jobs are all submitted in one second before the daemon
//! runs, so that the daemon's first pass sees all of them, as the simulator's first pass does.

use crate::sched::{SchedD, wait_for};
use crate::support::*;
use gridspool::acct::AccountingRecord;
use gridspool::config::ClusterConfig;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Jobs per user.
const JOBS: u32 = 4;
/// The cell's first job number: not 1, so that a job number of the daemon is never taken
/// for a place in the accounting file.
const FIRST: u32 = 101;

/// About a second of CPU (share-tree usage is CPU).
const BURN: &str = "#!/bin/sh\ntimeout 1 sh -c 'while :; do :; done'\n";
/// A second of wall time and next to no CPU.
const SLEEP: &str = "#!/bin/sh\nsleep 1\n";

/// A one-slot cell of this host under `policy`, with `sgeuser` and `sgeuser2` given equal
/// shares of the share tree.
fn share_tree_cell(policy: &str) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 1, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {{policy: {policy}}}\nshare_tree: {{name: Root, shares: 1, children: [{{name: {USER1}, shares: 1}}, {{name: {USER2}, shares: 1}}]}}\n"
        )
    })
}

/// Sleeps until the start of the next wall-clock second.
fn next_second() {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    std::thread::sleep(Duration::from_nanos(
        1_000_000_000 - u64::from(now.subsec_nanos()),
    ));
}

/// The master records of the cell's accounting file, in the file's order (the order
/// `from_accounting` numbers them in); none while there is no file.
fn records(cell: &TestCell) -> Vec<AccountingRecord> {
    let Ok(reader) = gridspool::acct::Reader::open(&cell.cell.join("common/accounting")) else {
        return Vec::new();
    };
    reader
        .filter_map(|e| match e {
            Ok(gridspool::acct::Entry::Record(r)) if r.is_master_task() && r.start_time > 0 => {
                Some(*r)
            }
            _ => None,
        })
        .collect()
}

/// A decision: the job started next, and its host.
type Decision = (u64, String);

/// The daemon's decisions: its records by start (one slot: no two start in one second, as
/// every job runs at least a second).
fn daemon_decisions(recs: &[AccountingRecord]) -> Vec<Decision> {
    let mut recs: Vec<&AccountingRecord> = recs.iter().collect();
    recs.sort_by_key(|r| (r.start_time, r.end_time, r.job_number));
    recs.iter()
        .map(|r| (u64::from(r.job_number), r.hostname.clone()))
        .collect()
}

/// The simulator's decisions replaying the cell's accounting file with `config`.
/// `from_accounting` numbers a file's jobs by their place in it (the order they ended on
/// the daemon); they are given back the daemon's job numbers (when not already theirs),
/// and the replay its ids in that order, so that equal priorities are broken by job id as
/// the daemon breaks them, not by the order the daemon happened to run them in.
fn simulator_decisions(
    cell: &TestCell,
    recs: &[AccountingRecord],
    config: &ClusterConfig,
) -> Vec<Decision> {
    let accounting = cell.cell.join("common/accounting");
    let mut jobs = gridspool::sim::swf::from_accounting(&accounting).expect("workload");
    assert_eq!(jobs.len(), recs.len());
    for j in &mut jobs {
        if !recs.iter().any(|r| u64::from(r.job_number) == j.number) {
            j.number = u64::from(recs[j.number as usize - 1].job_number);
        }
    }
    jobs.sort_by_key(|j| (j.submit, j.number));
    let replay = gridspool::sim::replay::replay(config, &jobs);
    assert!(replay.never_started.is_empty(), "{replay:?}");
    let mut runs = replay.runs;
    runs.sort_by_key(|r| (r.start, r.number));
    runs.into_iter().map(|r| (r.number, r.host)).collect()
}

/// What one run of the workload gave.
struct Outcome {
    cell: TestCell,
    recs: Vec<AccountingRecord>,
    daemon: Vec<Decision>,
    simulator: Vec<Decision>,
}

/// `JOBS` jobs of `sgeuser` running `script_a`, then `JOBS` of `sgeuser2` running
/// `script_b`, submitted within one second to a stopped cell; `sched_d` (with `extra`
/// options) runs them all; then the simulator replays the accounting file with the cell's
/// configuration.
fn run(policy: &str, script_a: &str, script_b: &str, extra: &[&str]) -> Option<Outcome> {
    let (a, b) = (user1()?, user2()?);
    // A fresh cell when the submissions did not fit in one second (a loaded machine).
    let cell = (0..5)
        .find_map(|_| {
            let cell = share_tree_cell(policy);
            cell.set_next_job_id(FIRST);
            cell.write_file(&a, "job.sh", script_a);
            cell.write_file(&b, "job.sh", script_b);
            next_second();
            for (user, tag) in [(&a, "a"), (&b, "b")] {
                for i in 1..=JOBS {
                    let run = cell.run(user, "qsub", &["-N", &format!("{tag}{i}"), "job.sh"]);
                    assert_eq!(run.code, 0, "{run:?}");
                }
            }
            let submitted: std::collections::BTreeSet<i64> = (FIRST..FIRST + 2 * JOBS)
                .map(|id| cell.job(id).expect("job").submitter.submission_time)
                .collect();
            (submitted.len() == 1).then_some(cell)
        })
        .expect("eight submissions within one second");
    let daemon = SchedD::start(&cell, extra);
    wait_for("every job accounted", Duration::from_secs(60), || {
        records(&cell).len() == 2 * JOBS as usize
    });
    drop(daemon);
    let recs = records(&cell);
    let yaml = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    let config = ClusterConfig::parse(&yaml).expect("config");
    Some(Outcome {
        daemon: daemon_decisions(&recs),
        simulator: simulator_decisions(&cell, &recs, &config),
        recs,
        cell,
    })
}

/// The records as a table, for a failure's message.
fn table(recs: &[AccountingRecord]) -> String {
    recs.iter()
        .map(|r| {
            format!(
                "job {} {} start {} end {} cpu {:.6}\n",
                r.job_number, r.owner, r.start_time, r.end_time, r.cpu
            )
        })
        .collect()
}

/// Job numbers in submission order: what FIFO would run.
fn fifo_order() -> Vec<u64> {
    (u64::from(FIRST)..u64::from(FIRST + 2 * JOBS)).collect()
}

fn numbers(decisions: &[Decision]) -> Vec<u64> {
    decisions.iter().map(|(n, _)| *n).collect()
}

/// The simulator started the jobs as `sched_d` did, and not in the order of submission (the
/// share tree decided).
fn same_decisions_by_the_share_tree(o: &Outcome) {
    eprintln!(
        "{}daemon:    {:?}\nsimulator: {:?}",
        table(&o.recs),
        o.daemon,
        o.simulator
    );
    assert_eq!(
        o.simulator,
        o.daemon,
        "simulator (left) and sched_d (right) decided differently:\n{}",
        table(&o.recs)
    );
    assert_ne!(numbers(&o.daemon), fifo_order(), "{}", table(&o.recs));
}

#[test]
fn the_simulator_starts_jobs_in_the_order_sched_d_started_them() {
    const TEST: &str = "the_simulator_starts_jobs_in_the_order_sched_d_started_them";
    // Ended jobs retired at once: every end is followed by a full pass (priorities
    // recomputed with the end's CPU charged to the share tree), as in the simulator, which
    // drops a job when it ends. (With ended jobs kept, see the test below.)
    let Some(o) = run("sge", BURN, BURN, &["--retention", "0"]) else {
        return skip(TEST, "needs the test users");
    };
    assert_eq!(o.daemon.len(), 2 * JOBS as usize);
    same_decisions_by_the_share_tree(&o);
    // And the simulator follows its configuration: the same workload replayed under FIFO
    // runs in the order of submission.
    let host = gridspool::identity::short_hostname();
    let yaml = std::fs::read_to_string(o.cell.cell.join("config.yaml")).expect("config");
    let fifo = ClusterConfig::parse(&yaml.replace("policy: sge", "policy: fifo")).expect("fifo");
    let replayed = simulator_decisions(&o.cell, &o.recs, &fifo);
    assert_eq!(numbers(&replayed), fifo_order());
    assert!(replayed.iter().all(|(_, h)| *h == host), "{replayed:?}");
}

#[test]
fn the_simulator_decides_as_sched_d_while_ended_jobs_are_retained() {
    const TEST: &str = "the_simulator_decides_as_sched_d_while_ended_jobs_are_retained";
    // sgeuser burns CPU, sgeuser2 sleeps: once sgeuser's first job is charged, the share
    // tree prefers every job of sgeuser2 by a wide margin, so the decisions do not hang on
    // milliseconds of CPU. The harness's retention (3 s) keeps each ended job past the next
    // end.
    let Some(o) = run("sge", BURN, SLEEP, &[]) else {
        return skip(TEST, "needs the test users");
    };
    same_decisions_by_the_share_tree(&o);
}

#[test]
fn sched_d_under_fifo_runs_the_workload_as_the_simulator_does() {
    // The control: without the share tree deciding, both run the jobs as submitted.
    let Some(o) = run("fifo", BURN, SLEEP, &["--retention", "0"]) else {
        return skip(
            "sched_d_under_fifo_runs_the_workload_as_the_simulator_does",
            "needs the test users",
        );
    };
    assert_eq!(numbers(&o.daemon), fifo_order(), "{}", table(&o.recs));
    assert_eq!(o.simulator, o.daemon, "{}", table(&o.recs));
}

/// The simulator's decisions replaying the workload as `qsub` lines (each job's submission,
/// run time and owner from its record, and its measured CPU as `cpu=` when `with_cpu`).
fn qsub_line_decisions(
    recs: &[AccountingRecord],
    config: &ClusterConfig,
    with_cpu: bool,
) -> Vec<Decision> {
    let mut recs: Vec<&AccountingRecord> = recs.iter().collect();
    recs.sort_by_key(|r| r.job_number);
    let text: String = recs
        .iter()
        .map(|r| {
            let cpu = if with_cpu {
                format!("cpu={:.6} ", r.cpu)
            } else {
                String::new()
            };
            format!(
                "0 {} {} {cpu}qsub -N {} job.sh\n",
                r.end_time - r.start_time,
                r.owner,
                r.job_name
            )
        })
        .collect();
    let jobs = gridspool::sim::workload::parse_qsub_lines(&text).expect("workload");
    let replay = gridspool::sim::replay::replay(config, &jobs);
    assert!(replay.never_started.is_empty(), "{replay:?}");
    // The report says what was assumed for the jobs without `cpu=`.
    let report = gridspool::sim::report::report("cell.yaml", config, &replay);
    let said = gridspool::sim::report::text(std::slice::from_ref(&report));
    let assumed = format!(
        "cell.yaml: {n} of {n} jobs without a CPU time in the workload: charged to the share tree as their run time on every slot (full CPU)",
        n = recs.len()
    );
    assert_eq!(said.contains(&assumed), !with_cpu, "{said}");
    assert_eq!(report.cpu_assumed, if with_cpu { 0 } else { recs.len() });
    let mut runs = replay.runs;
    runs.sort_by_key(|r| (r.start, r.number));
    // The workload numbers its jobs from 1 in the order of its lines.
    runs.into_iter()
        .map(|r| (u64::from(recs[r.number as usize - 1].job_number), r.host))
        .collect()
}

/// The share of the pairs of jobs that `a` started in the opposite order to `b`.
fn opposite_pairs(a: &[Decision], b: &[Decision]) -> f64 {
    let place = |d: &[Decision], job: u64| d.iter().position(|(n, _)| *n == job);
    let jobs = numbers(a);
    let (mut pairs, mut opposite) = (0, 0);
    for (i, x) in jobs.iter().enumerate() {
        for y in &jobs[i + 1..] {
            pairs += 1;
            if place(b, *x) > place(b, *y) {
                opposite += 1;
            }
        }
    }
    f64::from(opposite) / f64::from(pairs.max(1))
}

#[test]
fn qsub_lines_with_the_cpu_sched_d_measured_replay_its_decisions() {
    const TEST: &str = "qsub_lines_with_the_cpu_sched_d_measured_replay_its_decisions";
    // sgeuser burns CPU, sgeuser2 sleeps: the daemon charges sgeuser2 next to nothing and
    // runs all of its jobs after sgeuser's first.
    let Some(o) = run("sge", BURN, SLEEP, &["--retention", "0"]) else {
        return skip(TEST, "needs the test users");
    };
    same_decisions_by_the_share_tree(&o);
    let yaml = std::fs::read_to_string(o.cell.cell.join("config.yaml")).expect("config");
    let config = ClusterConfig::parse(&yaml).expect("config");
    let with_cpu = qsub_line_decisions(&o.recs, &config, true);
    let without = qsub_line_decisions(&o.recs, &config, false);
    eprintln!(
        "start pairs in the opposite order to sched_d's: {:.1}% with cpu=, {:.1}% without",
        100.0 * opposite_pairs(&with_cpu, &o.daemon),
        100.0 * opposite_pairs(&without, &o.daemon)
    );
    assert_eq!(with_cpu, o.daemon, "{}", table(&o.recs));
    // Without it every job is charged its full run time as CPU: the sleeping user's jobs
    // count as much as the burning one's and the two users alternate, unlike the daemon.
    assert_ne!(numbers(&without), numbers(&o.daemon), "{}", table(&o.recs));
}
