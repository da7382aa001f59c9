//! `qalter` against the SGE 8.1.9 captures in `tests/compat/qalter/`, in the captures' context
//! ("qalter on pending 5/6/7, running 2", array 10), plus holds, `-hold_jid` and `-u`.

use crate::support::*;
use gridspool::model::{JobId, RunningTask, TaskStates};

/// The capture context: job 2 running, 5 (`myname`), 6 (`-p -100`), 7 (`-l h_rt`) pending,
/// 10 an array 1-5; all sgeuser's.
fn context() -> Option<(TestCell, TestUser)> {
    let user = user1()?;
    let cell = TestCell::new();
    cell.write_file(&user, "job.sh", "#!/bin/sh\nsleep ${1:-600}\n");
    let submit = |id: u32, args: &[&str]| {
        cell.set_next_job_id(id);
        let r = cell.run(&user, "qsub", args);
        assert_eq!(r.code, 0, "{r:?}");
    };
    submit(2, &["job.sh"]);
    submit(5, &["-N", "myname", "job.sh"]);
    submit(6, &["-p", "-100", "job.sh"]);
    submit(7, &["-l", "h_rt=0:10:0", "job.sh"]);
    submit(10, &["-t", "1-5", "job.sh"]);
    let mut running = cell.job(2).expect("job 2");
    running.tasks = TaskStates {
        pending: Vec::new(),
        running: vec![RunningTask::running(
            1,
            "all.q",
            &gridspool::identity::short_hostname(),
            1,
            running.submitter.submission_time,
        )],
        finished: 0,
        finished_tasks: Default::default(),
        rescheduled: Vec::new(),
        restarted: Default::default(),
    };
    cell.set_state(&running);
    Some((cell, user))
}

fn requests(cell: &TestCell) -> usize {
    cell.spool.scan_requests().expect("requests").0.len()
}

fn golden(
    case: &str,
    who: impl FnOnce(&TestUser) -> Option<TestUser>,
    args: &[&str],
) -> Option<TestCell> {
    let Some((cell, user)) = context() else {
        skip(case, "needs root to run commands as sgeuser");
        return None;
    };
    let Some(runner) = who(&user) else {
        skip(case, "needs the capture's user");
        return None;
    };
    let cap = Capture::load(&format!("qalter/{case}.txt"));
    let before = requests(&cell);
    let run = cell.run(&runner, "qalter", args);
    assert_matches(&run, &cap);
    if run.code != 0 {
        assert_eq!(
            requests(&cell),
            before,
            "{case}: a refusal published a request"
        );
    }
    Some(cell)
}

fn as_user1(u: &TestUser) -> Option<TestUser> {
    Some(u.clone())
}

#[test]
fn qalter_help() {
    golden("help", as_user1, &["-help"]);
}

#[test]
fn qalter_bad_option() {
    golden("bad-option", as_user1, &["-badopt", "5"]);
}

#[test]
fn qalter_n() {
    if let Some(cell) = golden("N", as_user1, &["-N", "renamed", "6"]) {
        let j = cell.job(6).expect("job 6");
        assert_eq!(j.spec.name, "renamed");
        assert_eq!(j.version, 1);
    }
}

#[test]
fn qalter_n_running() {
    if let Some(cell) = golden("N-running", as_user1, &["-N", "renamed_running", "2"]) {
        assert_eq!(cell.job(2).expect("job 2").spec.name, "renamed_running");
    }
}

#[test]
fn qalter_p() {
    if let Some(cell) = golden("p", as_user1, &["-p", "-50", "5"]) {
        assert_eq!(cell.job(5).expect("job 5").spec.priority, -50);
    }
}

#[test]
fn qalter_p_positive() {
    if let Some(cell) = golden("p-positive", as_user1, &["-p", "10", "5"]) {
        assert_eq!(cell.job(5).expect("job 5").spec.priority, 0);
    }
}

#[test]
fn qalter_p_by_root() {
    if let Some(cell) = golden("p-by-root", |_| root(), &["-p", "10", "5"]) {
        assert_eq!(cell.job(5).expect("job 5").spec.priority, 10);
    }
}

#[test]
fn qalter_p_running() {
    golden("p-running", as_user1, &["-p", "-5", "2"]);
}

#[test]
fn qalter_l() {
    if let Some(cell) = golden("l", as_user1, &["-l", "h_rt=0:20:0", "7"]) {
        let r = &cell.job(7).expect("job 7").spec.hard_resources;
        assert_eq!((r[0].name.as_str(), r[0].value.as_str()), ("h_rt", "1200"));
    }
}

#[test]
fn qalter_l_running() {
    golden("l-running", as_user1, &["-l", "h_rt=0:20:0", "2"]);
}

#[test]
fn qalter_nonexistent() {
    golden("nonexistent", as_user1, &["-p", "-1", "999999"]);
}

#[test]
fn qalter_other_user() {
    golden("other-user", |_| user2(), &["-p", "-1", "5"]);
}

#[test]
fn qalter_array_task() {
    if let Some(cell) = golden("array-task", as_user1, &["-p", "-7", "10"]) {
        assert_eq!(cell.job(10).expect("job 10").spec.priority, -7);
    }
}

#[test]
fn qalter_holds_hold_jid_and_users() {
    let Some((cell, user)) = context() else {
        skip("qalter_holds", "needs root");
        return;
    };
    let run = cell.run(&user, "qalter", &["-h", "u", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("modified hold of job 5\n", 0)
    );
    assert!(cell.job(5).expect("5").tasks.pending[0].holds.user);
    // Already held: SGE prints nothing.
    let run = cell.run(&user, "qalter", &["-h", "u", "5"]);
    assert_eq!((run.stdout.as_str(), run.code), ("", 0));
    let run = cell.run(&user, "qalter", &["-h", "U", "5"]);
    assert_eq!(run.stdout, "modified hold of job 5\n");
    assert!(!cell.job(5).expect("5").tasks.pending[0].holds.user);
    let run = cell.run(&user, "qalter", &["-h", "o", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "denied: \"sgeuser\" must be operator to set operator hold\n",
            1
        )
    );
    // Oracle: blocking (existing) and exited (requested ids that do not exist) jobs.
    let run = cell.run(&user, "qalter", &["-hold_jid", "5,999999", "6"]);
    assert_eq!(
        run.stdout,
        "modified job id hold list of job 6\n   blocking jobs: 5\n   exited jobs:   999999\n"
    );
    assert_eq!(cell.job(6).expect("6").spec.predecessors, vec![JobId(5)]);
    // Several options: SGE's order of messages, not the command line's.
    let run = cell.run(&user, "qalter", &["-N", "x", "-p", "-3", "-o", "out", "7"]);
    assert_eq!(
        run.stdout,
        format!(
            "{}@{} sets scheduling priority of job 7 to -3\nmodified job name of job 7\nmodified stdout path list of job 7\n",
            user.name,
            gridspool::identity::short_hostname()
        )
    );
    // -u selects every job of the user; unknown references are refused by name.
    let run = cell.run(&user, "qalter", &["-A", "acc", "-u", "sgeuser"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 5);
    assert_eq!(cell.job(10).expect("10").spec.account, "acc");
    let run = cell.run(&user, "qalter", &["-p", "-1", "-u", "nosuchuser"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("The job * of user(s) nosuchuser does not exist\n", 1)
    );
    let run = cell.run(&user, "qalter", &["-h", "x", "5"]);
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            "qalter: Unknown hold list \"x\" specified to -h option\n",
            7
        )
    );
    let run = cell.run(&user, "qalter", &["-p", "-1", "nosuchname"]);
    assert_eq!(run.stdout, "denied: job \"nosuchname\" does not exist\n");
    let run = cell.run(&user, "qalter", &["-p", "-1", "10.2"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "denied: the selected option works only on jobs and not on tasks\n",
            4
        )
    );
    let run = cell.run(&user, "qalter", &["-t", "1-2", "5"]);
    assert_eq!(run.code, 2);
    let run = cell.run(&user, "qalter", &["-q", "nosuch.q", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "Job was rejected because job requests unknown queue \"nosuch.q\"\n",
            1
        )
    );
    let run = cell.run(&user, "qalter", &["-pe", "nosuch", "1", "5"]);
    assert_eq!(
        run.stdout,
        "denied: parallel environment \"nosuch\" does not exist\n"
    );
    let run = cell.run(&user, "qalter", &["-l", "nosuchres=1", "5"]);
    assert_eq!(run.stdout, "unknown resource \"nosuchres\"\n");
}

#[test]
fn qalter_job_share() {
    let Some((cell, user)) = context() else {
        skip("qalter_job_share", "needs root");
        return;
    };
    let run = cell.run(&user, "qalter", &["-js", "5", "6"]);
    assert_eq!(
        run.stdout,
        format!(
            "{}@{} sets job share of job 6 to 5\n",
            user.name,
            gridspool::identity::short_hostname()
        )
    );
    assert_eq!(cell.job(6).expect("6").spec.job_share, 5);
    let run = cell.run(&user, "qsub", &["-js", "-1", "job.sh"]);
    assert_eq!(
        (run.stderr.as_str(), run.code),
        ("qsub: invalid jobshare, must be an unsigned integer\n", 2)
    );
}

#[test]
fn qalter_w_verifies_the_altered_job() {
    let Some((cell, user)) = context() else {
        skip("qalter_w", "needs root");
        return;
    };
    let run = cell.run(&user, "qalter", &["-w", "e", "-pe", "smp", "100000", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("error: no suitable queues\n", 1)
    );
    assert!(
        cell.job(5).expect("5").spec.pe.is_none(),
        "refused: unchanged"
    );
    let run = cell.run(&user, "qalter", &["-w", "v", "-pe", "smp", "100000", "5"]);
    assert!(
        run.stdout
            .starts_with("Job 5 cannot run in PE \"smp\" because it only offers")
    );
    assert!(
        run.stdout.ends_with("\nverification: no suitable queues\n"),
        "{run:?}"
    );
    assert_eq!(run.code, 1);
    let run = cell.run(&user, "qalter", &["-w", "v", "-p", "-1", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("verification: found suitable queue(s)\n", 0)
    );
    assert_eq!(
        cell.job(5).expect("5").spec.priority,
        0,
        "-w v only reports"
    );
}

/// Holds, `-tc` and `-w` on running and held jobs, as SGE 8.1.9 answered them on the oracle
/// (2026-11-22): a running job's holds change (`hr`), `-h n` is one release of all three
/// holds, `-tc` needs an array, and `-w` does not verify a running or held job.
#[test]
fn qalter_running_and_held_jobs_as_sge() {
    let Some((cell, user)) = context() else {
        skip("qalter_running_and_held", "needs root");
        return;
    };
    let run = cell.run(&user, "qalter", &["-h", "u", "2"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("modified hold of job 2\n", 0)
    );
    assert!(cell.job(2).expect("2").tasks.running[0].holds.user);
    let run = cell.run(&user, "qstat", &[]);
    let line = run.stdout.lines().nth(2).expect("job 2's line");
    assert!(line.contains(" hr "), "{line}");

    cell.run(&user, "qalter", &["-h", "u", "5"]);
    let run = cell.run(&user, "qalter", &["-h", "n", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "denied: \"sgeuser\" must be manager to remove manager hold\n",
            1
        )
    );
    assert!(cell.job(5).expect("5").tasks.pending[0].holds.user);
    // Nothing to release: silence.
    let run = cell.run(&user, "qalter", &["-h", "n", "6"]);
    assert_eq!((run.stdout.as_str(), run.code), ("", 0));
    let run = cell.run(&user, "qalter", &["-h", "S", "6"]);
    assert_eq!((run.stdout.as_str(), run.code), ("", 0));

    let run = cell.run(&user, "qalter", &["-tc", "2", "6", "10"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "invalid option argument \"task concurrency\"\nmodified task concurrency of job 10\n",
            1
        )
    );
    assert_eq!(cell.job(6).expect("6").spec.task_concurrency, None);
    assert_eq!(cell.job(10).expect("10").spec.task_concurrency, Some(2));
    // What comes before the refusal is printed, and nothing is changed.
    let run = cell.run(&user, "qalter", &["-tc", "2", "-N", "foo", "6"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "modified job name of job 6\ninvalid option argument \"task concurrency\"\n",
            1
        )
    );
    assert_ne!(cell.job(6).expect("6").spec.name, "foo");
    let run = cell.run(&user, "qsub", &["-tc", "2", "job.sh"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (
            "",
            "Unable to run job: invalid \"task concurrency\" value in job request\nExiting.\n",
            1
        )
    );

    let held = "verification: job is already running or is held\n";
    let run = cell.run(&user, "qalter", &["-w", "v", "-N", "bar", "5"]);
    assert_eq!((run.stdout.as_str(), run.code), (held, 0));
    assert_ne!(cell.job(5).expect("5").spec.name, "bar");
    let run = cell.run(&user, "qalter", &["-w", "e", "-N", "wname", "2"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (format!("modified job name of job 2\n{held}").as_str(), 0)
    );
    assert_eq!(cell.job(2).expect("2").spec.name, "wname");
}

/// gridspool's own `-cluster` and `-no_preempt` (issue 4: a job's Qube! cluster is chosen at
/// submission and changeable after it); both stay out of `-help`, which is SGE's.
#[test]
fn qsub_and_qalter_cluster_and_no_preempt() {
    let Some((cell, user)) = context() else {
        skip("qalter_cluster", "needs root");
        return;
    };
    cell.set_next_job_id(20);
    let run = cell.run(
        &user,
        "qsub",
        &["-cluster", "/A/B", "-no_preempt", "y", "job.sh"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let j = cell.job(20).expect("20");
    assert_eq!(
        (j.spec.cluster.as_deref(), j.spec.no_preempt),
        (Some("/A/B"), true)
    );
    let run = cell.run(
        &user,
        "qalter",
        &["-cluster", "/C", "-no_preempt", "n", "20"],
    );
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            "modified cluster of job 20\nmodified preemption behaviour of job 20\n",
            0
        )
    );
    let j = cell.job(20).expect("20");
    assert_eq!(
        (j.spec.cluster.as_deref(), j.spec.no_preempt),
        (Some("/C"), false)
    );
    for bad in ["A/B", "/A/", "/A//B", ""] {
        let run = cell.run(&user, "qsub", &["-cluster", bad, "job.sh"]);
        assert_ne!(run.code, 0, "{bad}: {run:?}");
        assert!(
            run.stderr
                .contains(&format!("invalid option argument \"-cluster {bad}\"")),
            "{bad}: {run:?}"
        );
    }
    let help = cell.run(&user, "qsub", &["-help"]);
    assert!(!help.stdout.contains("-cluster"), "{}", help.stdout);
}

/// `qalter -shove` (Qube!'s shove, gridspool's own): operators only; a request sched_d treats
/// as a job event.
#[test]
fn qalter_shove_is_for_operators() {
    let Some((cell, user)) = context() else {
        skip("qalter_shove", "needs root");
        return;
    };
    let before = requests(&cell);
    let run = cell.run(&user, "qalter", &["-shove", "5"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("denied: \"sgeuser\" must be operator to shove a job\n", 1)
    );
    assert_eq!(requests(&cell), before);
    let Some(root) = root() else { return };
    let run = cell.run(&root, "qalter", &["-shove", "5"]);
    assert_eq!((run.stdout.as_str(), run.code), ("shoved job 5\n", 0));
    assert_eq!(requests(&cell), before + 1);
}

/// Issue 12: `-hold_jid ''` is refused as SGE refuses it, not taken as "no dependency" (the
/// capture altered job 78; the message does not name the job).
#[test]
fn qalter_hold_jid_empty() {
    golden("hold_jid-empty", as_user1, &["-hold_jid", "", "5"]);
}
