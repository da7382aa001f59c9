//! `qhold` and `qrls` against the SGE 8.1.9 captures in `tests/compat/{qhold,qrls,misc}/`, each
//! named after its capture, in the capture's context ("hold/release pending 5, running 3,
//! user-held 12", array job 10), plus rules checked on the oracle.

use crate::qdel::{records, request_files, run_as, start_tasks, submit, submit_as, users};
use crate::support::*;
use gridspool::model::{HoldType, Holds};

/// The context of the captures: pending 5, running 3, user-held 12, array 10 (1-5).
fn hold_cell(u1: &TestUser) -> TestCell {
    let cell = TestCell::new();
    submit(&cell, u1, 3, "job.sh");
    submit(&cell, u1, 5, "myname");
    submit_as(&cell, u1, 10, "job.sh", Some("1-5"), Holds::NONE);
    submit_as(&cell, u1, 12, "job.sh", None, Holds::from(HoldType::User));
    start_tasks(&cell, 3, &[1]);
    cell
}

fn check(cell: &TestCell, user: &TestUser, capture: &str) -> Run {
    let cap = Capture::load(capture);
    let mut words = cap.command.split_whitespace();
    let bin = words.next().expect("command");
    let args: Vec<&str> = words.collect();
    let run = run_as(cell, user, bin, &args);
    assert_matches(&run, &cap);
    run
}

fn holds_of_pending(cell: &TestCell, id: u32) -> Vec<(String, String)> {
    cell.job(id)
        .expect("job")
        .tasks
        .pending
        .iter()
        .map(|g| (g.tasks.to_string(), g.holds.letters()))
        .collect()
}

#[test]
fn qhold_help() {
    let Some((u1, _, _)) = users("qhold_help") else {
        return;
    };
    check(&TestCell::new(), &u1, "qhold/help.txt");
    // qrls prints the same text under its own name (checked on the oracle).
    let qrls = run_as(&TestCell::new(), &u1, "qrls", &["-help"]);
    let expected = Capture::load("qhold/help.txt")
        .stdout
        .replace("usage: qhold", "usage: qrls");
    assert_eq!((qrls.stdout, qrls.code), (expected, 0));
}

#[test]
fn misc_qhold() {
    let Some((u1, _, _)) = users("misc_qhold") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &u1, "misc/qhold.txt");
    assert_eq!(holds_of_pending(&cell, 5), vec![("1".into(), "u".into())]);
    // Holding again changes nothing: SGE prints nothing and exits 0.
    let again = run_as(&cell, &u1, "qhold", &["5"]);
    assert_eq!((again.stdout.as_str(), again.code), ("", 0));
    assert_eq!(request_files(&cell.spool).len(), 1);
}

#[test]
fn misc_qrls() {
    let Some((u1, _, _)) = users("misc_qrls") else {
        return;
    };
    let cell = hold_cell(&u1);
    assert_eq!(run_as(&cell, &u1, "qhold", &["5"]).code, 0);
    check(&cell, &u1, "misc/qrls.txt");
    assert_eq!(holds_of_pending(&cell, 5), vec![("1".into(), "".into())]);
}

#[test]
fn qrls_userhold() {
    let Some((u1, _, _)) = users("qrls_userhold") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &u1, "qrls/userhold.txt");
    assert_eq!(holds_of_pending(&cell, 12), vec![("1".into(), "".into())]);
}

#[test]
fn qhold_running() {
    let Some((u1, _, _)) = users("qhold_running") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &u1, "qhold/running.txt");
    let job = cell.job(3).expect("job 3");
    assert!(
        job.tasks.running[0].holds.user,
        "hold of a running task kept"
    );
}

#[test]
fn qrls_running() {
    let Some((u1, _, _)) = users("qrls_running") else {
        return;
    };
    let cell = hold_cell(&u1);
    // The capture ran right after qhold-running.
    assert_eq!(run_as(&cell, &u1, "qhold", &["3"]).code, 0);
    check(&cell, &u1, "qrls/running.txt");
    assert!(!cell.job(3).expect("job 3").tasks.running[0].holds.any());
}

#[test]
fn qhold_nonexistent() {
    let Some((u1, _, _)) = users("qhold_nonexistent") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &u1, "qhold/nonexistent.txt");
    assert!(request_files(&cell.spool).is_empty());
}

#[test]
fn qrls_nonexistent() {
    let Some((u1, _, _)) = users("qrls_nonexistent") else {
        return;
    };
    check(&hold_cell(&u1), &u1, "qrls/nonexistent.txt");
}

#[test]
fn qhold_other_user() {
    let Some((u1, u2, _)) = users("qhold_other_user") else {
        return;
    };
    let cell = hold_cell(&u1);
    let before = records(&cell);
    check(&cell, &u2, "qhold/other-user.txt");
    assert_eq!(records(&cell), before, "another user's qhold changed a job");
    assert!(request_files(&cell.spool).is_empty());
    // Nor may they release the user hold of job 12 (same words, checked on the oracle).
    let r = run_as(&cell, &u2, "qrls", &["12"]);
    assert_eq!(
        (r.stdout.as_str(), r.code),
        (
            "denied: \"sgeuser2\" must be at least owner of job 12 to change job attributes\n",
            18
        )
    );
    assert_eq!(records(&cell), before);
}

#[test]
fn qhold_h_s_user() {
    let Some((u1, _, _)) = users("qhold_h_s_user") else {
        return;
    };
    let cell = hold_cell(&u1);
    let before = records(&cell);
    check(&cell, &u1, "qhold/h-s-user.txt");
    assert_eq!(records(&cell), before);
    assert!(request_files(&cell.spool).is_empty());
}

/// Root releasing a system hold job 5 does not have: no hold changes, so SGE checks nothing
/// and says nothing (`mod_task_attributes` only acts when the hold state changes).
#[test]
fn qrls_h_s_by_root() {
    let Some((u1, _, r)) = users("qrls_h_s_by_root") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &r, "qrls/h-s-by-root.txt");
    assert!(request_files(&cell.spool).is_empty());
    // With a system hold there, it is released and reported.
    assert_eq!(
        run_as(&cell, &r, "qhold", &["-h", "s", "5"]).stdout,
        "modified hold of job 5\n"
    );
    assert_eq!(
        run_as(&cell, &r, "qrls", &["-h", "s", "5"]).stdout,
        "modified hold of job 5\n"
    );
}

#[test]
fn qhold_array_task() {
    let Some((u1, _, _)) = users("qhold_array_task") else {
        return;
    };
    let cell = hold_cell(&u1);
    check(&cell, &u1, "qhold/array-task.txt");
    // qstat/array-after-task-hold: 1,3-5:1 pending and 2 held.
    assert_eq!(
        holds_of_pending(&cell, 10),
        vec![("1,3-5:1".into(), "".into()), ("2".into(), "u".into())]
    );
}

#[test]
fn qrls_array_task() {
    let Some((u1, _, _)) = users("qrls_array_task") else {
        return;
    };
    let cell = hold_cell(&u1);
    assert_eq!(run_as(&cell, &u1, "qhold", &["10.2"]).code, 0);
    check(&cell, &u1, "qrls/array-task.txt");
    assert_eq!(
        holds_of_pending(&cell, 10),
        vec![("1-5:1".into(), "".into())]
    );
}

/// Rules recorded on the oracle: one message per task that changes, in SGE's order; the
/// operator hold is out of a user's reach; `-u` replaces the job list; errors and codes.
#[test]
fn qhold_qrls_rules_follow_sge() {
    let Some((u1, u2, r)) = users("qhold_qrls_rules_follow_sge") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 18, "qdw_p");
    submit_as(&cell, &u1, 19, "qdw_arr", Some("1-5"), Holds::NONE);
    let run = |user: &TestUser, bin: &str, args: &[&str]| {
        let r = run_as(&cell, user, bin, args);
        (r.stdout, r.code)
    };
    let tasks = |list: &[u32]| -> String {
        list.iter()
            .map(|t| format!("modified hold of job-array task 19.{t}\n"))
            .collect()
    };
    assert_eq!(run(&u1, "qhold", &["19"]), (tasks(&[1, 2, 3, 4, 5]), 0));
    assert_eq!(run(&u1, "qrls", &["19.2-3"]), (tasks(&[2, 3]), 0));
    assert_eq!(run(&u1, "qrls", &["19"]), (tasks(&[1, 4, 5]), 0));
    assert_eq!(run(&u1, "qhold", &["19.2-3"]), (tasks(&[2, 3]), 0));
    assert_eq!(
        holds_of_pending(&cell, 19),
        vec![("1,4,5".into(), "".into()), ("2,3".into(), "u".into())]
    );
    let modified18 = "modified hold of job 18\n".to_string();
    assert_eq!(
        run(&r, "qhold", &["-h", "o", "18"]),
        (modified18.clone(), 0)
    );
    assert_eq!(
        run(&u1, "qrls", &["-h", "o", "18"]),
        (
            "denied: \"sgeuser\" must be operator to remove operator hold\n".into(),
            10
        )
    );
    // Nothing to change: no privilege needed, nothing said.
    assert_eq!(run(&u1, "qhold", &["-h", "o", "18"]), (String::new(), 0));
    assert_eq!(
        run(&u1, "qhold", &["-h", "uos", "18"]),
        (
            "denied: \"sgeuser\" must be manager to set manager hold\n".into(),
            10
        )
    );
    assert_eq!(
        run(&r, "qrls", &["-h", "uos", "18"]),
        (modified18.clone(), 0)
    );
    assert_eq!(
        run(&u1, "qhold", &["18", "999999"]),
        (
            format!("{modified18}denied: job \"999999\" does not exist\n"),
            3
        )
    );
    assert_eq!(run(&u1, "qrls", &["qdw_p"]), (modified18.clone(), 0));
    assert_eq!(
        run(&u1, "qhold", &["nosuchname"]),
        ("denied: job \"nosuchname\" does not exist\n".into(), 3)
    );
    // Tasks a job does not have are passed over silently.
    assert_eq!(run(&u1, "qhold", &["18.2"]), (String::new(), 0));
    // -u replaces the job list: every job of the user.
    assert_eq!(
        run(&u1, "qhold", &["-u", "sgeuser", "18"]),
        (format!("{modified18}{}", tasks(&[1, 4, 5])), 0)
    );
    assert_eq!(
        run(&u1, "qrls", &["-u", "sgeuser2"]),
        ("The job * of user(s) sgeuser2 does not exist\n".into(), 3)
    );
    // Processing stops at the first job the caller may not change.
    assert_eq!(
        run(&u2, "qhold", &["-u", "*"]),
        (
            "denied: \"sgeuser2\" must be at least owner of job 18 to change job attributes\n"
                .into(),
            18
        )
    );
    let r = run_as(&cell, &u1, "qhold", &["-h", "n", "18"]);
    assert_eq!(
        (r.stderr.as_str(), r.code),
        (
            "qalter: Unknown hold list \"n\" specified to -h option\n",
            7
        )
    );
}

#[test]
fn qhold_no_job_list_prints_usage_then_error() {
    let Some((u1, _, _)) = users("qhold_no_job_list_prints_usage_then_error") else {
        return;
    };
    let cell = TestCell::new();
    let help = Capture::load("qhold/help.txt").stdout;
    let r = run_as(&cell, &u1, "qhold", &[]);
    assert_eq!(
        (r.stdout.as_str(), r.stderr, r.code),
        ("", format!("{help}ERROR! no option argument\n"), 1)
    );
    let r = run_as(&cell, &u1, "qrls", &["-h", "u"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("SGE 8.1.9\nusage: qrls"));
}

/// Recorded on the oracle with job 94 (`qsub -t 1-5`, owned by sgeuser2): a whole-job
/// refusal drops the hold type for the remaining tasks; named tasks are refused one by one.
#[test]
fn qhold_refusals_per_task_follow_sge() {
    let Some((_, u2, _)) = users("qhold_refusals_per_task_follow_sge") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u2, 94, "qdw_y", Some("1-5"), Holds::NONE);
    let run = |args: &[&str], bin: &str| {
        let r = run_as(&cell, &u2, bin, args);
        (r.stdout, r.code)
    };
    let manager = "denied: \"sgeuser2\" must be manager to set manager hold\n";
    let operator = "denied: \"sgeuser2\" must be operator to set operator hold\n";
    let tasks = |list: &[u32]| -> String {
        list.iter()
            .map(|t| format!("modified hold of job-array task 94.{t}\n"))
            .collect()
    };
    assert_eq!(
        run(&["-h", "uos", "94"], "qhold"),
        (format!("{manager}{operator}{}", tasks(&[3, 4, 5])), 10)
    );
    assert_eq!(run(&["94"], "qrls"), (tasks(&[3, 4, 5]), 0));
    assert_eq!(
        run(&["-h", "o", "94.2-3"], "qhold"),
        (format!("{operator}{operator}"), 10)
    );
    assert_eq!(
        run(&["-h", "u", "94"], "qhold"),
        (tasks(&[1, 2, 3, 4, 5]), 0)
    );
}

/// Recorded on the oracle with job 91 (`qsub -t 1-4`): task 0 stands for every task.
#[test]
fn qhold_task_zero_means_every_task() {
    let Some((_, u2, _)) = users("qhold_task_zero_means_every_task") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u2, 91, "qdw_z", Some("1-4"), Holds::NONE);
    let all: String = (1..=4)
        .map(|t| format!("modified hold of job-array task 91.{t}\n"))
        .collect();
    let run = |bin: &str, args: &[&str]| {
        let r = run_as(&cell, &u2, bin, args);
        (r.stdout, r.code)
    };
    assert_eq!(run("qhold", &["91.0"]), (all.clone(), 0));
    assert_eq!(run("qrls", &["91.0-2"]), (all.clone(), 0));
    assert_eq!(run("qhold", &["91", "-t", "0-1"]), (all, 0));
    assert_eq!(
        run("qdel", &["91.0-2"]),
        (
            "sgeuser2 has deleted job-array tasks 1,2 of job 91\n".into(),
            0
        )
    );
    assert_eq!(
        run("qdel", &["91", "-t", "0"]),
        ("job \"91\" task \"0\" does not exist\n".into(), 1)
    );
    assert_eq!(
        run("qdel", &["91"]),
        ("sgeuser2 has deleted job 91\n".into(), 0)
    );
}

/// Option errors that need a job before them, recorded on the oracle.
#[test]
fn qhold_task_range_errors() {
    let Some((_, u2, _)) = users("qhold_task_range_errors") else {
        return;
    };
    let cell = TestCell::new();
    let run = |args: &[&str]| {
        let r = run_as(&cell, &u2, "qhold", args);
        (r.stderr, r.code)
    };
    assert_eq!(
        run(&["999999", "-t"]),
        (
            "qalter: -t option must have a list of task id ranges\n".into(),
            2
        )
    );
    assert_eq!(
        run(&["999999", "-t", "1-2,5-6"]),
        (
            "qalter: -t option only allows one range specification\n".into(),
            7
        )
    );
    assert_eq!(
        run(&["999999", "-t", "x"]),
        (
            "qalter: Numerical value invalid!\nThe initial portion of string \"x\" contains no decimal number\n".into(),
            7
        )
    );
    assert_eq!(run(&["-t", "2"]), ("Unknown option -t 2\n\n".into(), 5));
}

/// An operator (`operators:` in config.yaml) may hold, release and delete other users' jobs
/// and set operator holds, but system holds and `qdel -u '*'` need a manager.
#[test]
fn operators_change_any_job_but_not_system_holds() {
    let Some((u1, u2, _)) = users("operators_change_any_job_but_not_system_holds") else {
        return;
    };
    let cell = TestCell::with_config(|c| c.replace("operators: []", "operators: [sgeuser2]"));
    submit(&cell, &u1, 5, "myname");
    let run = |bin: &str, args: &[&str]| {
        let r = run_as(&cell, &u2, bin, args);
        (r.stdout, r.code)
    };
    let modified = "modified hold of job 5\n".to_string();
    assert_eq!(run("qhold", &["-h", "uo", "5"]), (modified.clone(), 0));
    assert_eq!(holds_of_pending(&cell, 5), vec![("1".into(), "uo".into())]);
    assert_eq!(
        run("qhold", &["-h", "s", "5"]),
        (
            "denied: \"sgeuser2\" must be manager to set manager hold\n".into(),
            10
        )
    );
    assert_eq!(run("qrls", &["-h", "uo", "5"]), (modified, 0));
    assert_eq!(
        run("qdel", &["-u", "*"]),
        (
            "denied: \"sgeuser2\" must be manager to modify all jobs\n".into(),
            1
        )
    );
    assert_eq!(
        run("qdel", &["5"]),
        ("sgeuser2 has deleted job 5\n".into(), 0)
    );
}
