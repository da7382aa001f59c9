//! `qdel` against the SGE 8.1.9 captures in `tests/compat/qdel/`, each named after its capture,
//! plus the spool effects the captures cannot show.

use crate::support::*;
use gridspool::model::{
    Holds, JOB_SCHEMA_VERSION, JobId, JobRecord, JobSpec, JobSubmission, RunningTask, Submitter,
    TaskIdRange,
};
use gridspool::spool::Spool;

/// The submitter a job of `user` gets from `qsub`.
pub(crate) fn submitter(user: &TestUser) -> Submitter {
    Submitter {
        owner: user.name.clone(),
        uid: user.uid,
        group: user.name.clone(),
        gid: user.gid,
        submission_time: 1_763_765_102,
        sge_o_home: user.home.display().to_string(),
        sge_o_log_name: user.name.clone(),
        sge_o_path: "/usr/bin:/bin".into(),
        sge_o_shell: "/bin/bash".into(),
        sge_o_workdir: user.home.display().to_string(),
        sge_o_host: "vm".into(),
        sge_o_mail: None,
        sge_o_tz: None,
    }
}

/// Runs a command as `user`.
pub(crate) fn run_as(cell: &TestCell, user: &TestUser, bin: &str, args: &[&str]) -> Run {
    cell.run(user, bin, args)
}

/// Submits a job through the library as `qsub` would, with job id `id`.
pub(crate) fn submit_as(
    cell: &TestCell,
    user: &TestUser,
    id: u32,
    name: &str,
    array: Option<&str>,
    holds: Holds,
) {
    cell.set_next_job_id(id);
    let got = cell.spool.allocate_job_id().expect("job id");
    assert_eq!(got, JobId(id));
    let spec = JobSpec {
        name: name.into(),
        script_file: "job.sh".into(),
        array: array.map(|a| TaskIdRange::parse(a).expect("range")),
        ..JobSpec::default()
    };
    let sub = JobSubmission {
        v: JOB_SCHEMA_VERSION,
        id: got,
        submitter: submitter(user),
        spec,
        holds,
    };
    cell.spool
        .publish_job(&sub, b"#!/bin/sh\nsleep 600\n")
        .expect("publish job");
}

pub(crate) fn submit(cell: &TestCell, user: &TestUser, id: u32, name: &str) {
    submit_as(cell, user, id, name, None, Holds::NONE);
}

/// Moves tasks of a job from pending to running, as `sched_d` would after dispatch.
pub(crate) fn start_tasks(cell: &TestCell, id: u32, tasks: &[u32]) {
    let mut job = cell.job(id).expect("job");
    for &t in tasks {
        for g in job.tasks.pending.iter_mut() {
            g.tasks.remove(t);
        }
        job.tasks
            .running
            .push(RunningTask::running(t, "all.q", "vm", 1, 1_763_765_102));
    }
    job.tasks.pending.retain(|g| !g.tasks.is_empty());
    cell.set_state(&job);
}

/// The users of the captures, or `None` (test skipped) when they cannot be had.
pub(crate) fn users(test: &str) -> Option<(TestUser, TestUser, TestUser)> {
    match (user1(), user2(), root()) {
        (Some(a), Some(b), Some(r)) => Some((a, b, r)),
        _ => {
            skip(test, "needs root to run commands as sgeuser and sgeuser2");
            None
        }
    }
}

/// The names of the request files, to show that a refusal wrote nothing.
pub(crate) fn request_files(spool: &Spool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(spool.requests_dir())
        .expect("requests dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every job's record, to compare before and after a refused command.
pub(crate) fn records(cell: &TestCell) -> Vec<JobRecord> {
    cell.spool.scan_jobs().expect("scan").jobs
}

fn check(cell: &TestCell, user: &TestUser, capture: &str) -> Run {
    let cap = Capture::load(capture);
    let words: Vec<&str> = cap.command.split_whitespace().skip(1).collect();
    let run = run_as(cell, user, "qdel", &words);
    assert_matches(&run, &cap);
    run
}

#[test]
fn qdel_help() {
    let Some((u1, _, _)) = users("qdel_help") else {
        return;
    };
    check(&TestCell::new(), &u1, "qdel/help.txt");
}

#[test]
fn qdel_no_args() {
    let Some((u1, _, _)) = users("qdel_no_args") else {
        return;
    };
    check(&TestCell::new(), &u1, "qdel/no-args.txt");
}

#[test]
fn qdel_pending() {
    let Some((u1, _, _)) = users("qdel_pending") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 4, "sleep");
    check(&cell, &u1, "qdel/pending.txt");
    assert!(cell.job(4).is_none(), "deleted job still listed");
    assert_eq!(request_files(&cell.spool).len(), 1);
}

#[test]
fn qdel_nonexistent() {
    let Some((u1, _, _)) = users("qdel_nonexistent") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 4, "sleep");
    check(&cell, &u1, "qdel/nonexistent.txt");
    assert!(
        request_files(&cell.spool).is_empty(),
        "a refusal wrote a request"
    );
}

#[test]
fn qdel_wrong_user() {
    let Some((u1, u2, _)) = users("qdel_wrong_user") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 5, "myname");
    let before = records(&cell);
    check(&cell, &u2, "qdel/wrong-user.txt");
    assert_eq!(
        records(&cell),
        before,
        "another user's qdel changed the job"
    );
    assert!(
        request_files(&cell.spool).is_empty(),
        "a refusal wrote a request"
    );
}

#[test]
fn qdel_by_root() {
    let Some((u1, _, r)) = users("qdel_by_root") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 5, "myname");
    check(&cell, &r, "qdel/by-root.txt");
    assert!(cell.job(5).is_none());
}

#[test]
fn qdel_array_task() {
    let Some((u1, _, _)) = users("qdel_array_task") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u1, 10, "job.sh", Some("1-5"), Holds::NONE);
    check(&cell, &u1, "qdel/array-task.txt");
    let job = cell.job(10).expect("job 10");
    assert_eq!(job.tasks.pending[0].tasks.to_string(), "1,3-5:1");
}

#[test]
fn qdel_array_task_t() {
    let Some((u1, _, _)) = users("qdel_array_task_t") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u1, 10, "job.sh", Some("1-5"), Holds::NONE);
    // The capture ran after `qdel 10.2`; qstat-after-qdel shows what is left: 1-5:2.
    assert_eq!(run_as(&cell, &u1, "qdel", &["10.2"]).code, 0);
    check(&cell, &u1, "qdel/array-task-t.txt");
    let job = cell.job(10).expect("job 10");
    assert_eq!(job.tasks.pending[0].tasks.to_string(), "1-5:2");
}

#[test]
fn qdel_multiple() {
    let Some((u1, _, _)) = users("qdel_multiple") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 6, "renamed");
    submit(&cell, &u1, 7, "job.sh");
    check(&cell, &u1, "qdel/multiple.txt");
    assert_eq!(
        request_files(&cell.spool).len(),
        1,
        "one request per command"
    );
}

#[test]
fn qdel_list_comma() {
    let Some((u1, _, _)) = users("qdel_list_comma") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 8, "job.sh");
    submit_as(
        &cell,
        &u1,
        12,
        "job.sh",
        None,
        Holds::from(gridspool::model::HoldType::User),
    );
    check(&cell, &u1, "qdel/list-comma.txt");
}

#[test]
fn qdel_running() {
    let Some((u1, _, _)) = users("qdel_running") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 2, "renamed_running");
    start_tasks(&cell, 2, &[1]);
    check(&cell, &u1, "qdel/running.txt");
    let job = cell
        .job(2)
        .expect("a running job stays until sched_d kills it");
    assert!(job.tasks.running[0].deleting);
    // Asked again, SGE says it is already in deletion and changes nothing.
    let again = run_as(&cell, &u1, "qdel", &["2"]);
    assert_eq!(again.stdout, "job 2 is already in deletion\n");
    assert_eq!(again.code, 0);
    assert_eq!(request_files(&cell.spool).len(), 1);
}

#[test]
fn qdel_u_user2() {
    let Some((u1, u2, _)) = users("qdel_u_user2") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 4, "sleep");
    submit(&cell, &u2, 27, "job.sh");
    check(&cell, &u2, "qdel/u-user2.txt");
    assert!(cell.job(4).is_some(), "-u sgeuser2 touched sgeuser's job");
}

#[test]
fn qdel_bad_option() {
    let Some((u1, _, _)) = users("qdel_bad_option") else {
        return;
    };
    check(&TestCell::new(), &u1, "qdel/bad-option.txt");
}

#[test]
fn qdel_error_job() {
    let Some((u1, _, _)) = users("qdel_error_job") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 33, "true");
    let mut job = cell.job(33).expect("job");
    job.error = Some(gridspool::model::ErrorInfo {
        time: 1_763_765_110,
        message: "can't open output file \"/nonexistent-dir/out.txt\"".into(),
    });
    cell.set_state(&job);
    check(&cell, &u1, "qdel/error-job.txt");
    assert!(cell.job(33).is_none());
}

/// The state of the `all-own` capture ("after deletions"): two running jobs, arrays with some
/// tasks gone, and a job of sgeuser2 that `qdel -u sgeuser` must leave alone.
#[test]
fn qdel_all_own() {
    let Some((u1, u2, _)) = users("qdel_all_own") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 3, "job.sh");
    submit(&cell, &u1, 9, "job.sh");
    submit_as(&cell, &u1, 10, "job.sh", Some("1-5"), Holds::NONE);
    submit_as(&cell, &u1, 11, "job.sh", Some("1-3:2"), Holds::NONE);
    for id in [13, 14, 15, 16, 17, 18] {
        submit(&cell, &u1, id, "job.sh");
    }
    submit_as(&cell, &u1, 24, "job.sh", Some("1-5"), Holds::NONE);
    submit(&cell, &u2, 27, "job.sh");
    start_tasks(&cell, 3, &[1]);
    start_tasks(&cell, 9, &[1]);
    assert_eq!(
        run_as(&cell, &u1, "qdel", &["10.2", "10", "-t", "4"]).code,
        0
    );
    check(&cell, &u1, "qdel/all-own.txt");
    let left: Vec<u32> = records(&cell).iter().map(|j| j.id.0).collect();
    assert_eq!(left, vec![3, 9, 27]);
}

#[test]
fn qdel_names_patterns_and_ranges_follow_sge() {
    let Some((u1, u2, _)) = users("qdel_names_patterns_and_ranges_follow_sge") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u1, 55, "qdw_arr2", Some("1-10"), Holds::NONE);
    submit(&cell, &u1, 56, "qdw_b");
    submit(&cell, &u2, 49, "qdw_u2");
    let run = |user: &TestUser, args: &[&str]| {
        let r = run_as(&cell, user, "qdel", args);
        assert_eq!(r.stderr, "", "stderr of qdel {args:?}");
        (r.stdout, r.code)
    };
    // Outputs recorded from the oracle (SGE 8.1.9) with the same jobs.
    assert_eq!(
        run(&u1, &["55.2", "55.4-6"]),
        (
            "sgeuser has deleted job-array task 55.2\nsgeuser has deleted job-array tasks 4-6:1 of job 55\n".into(),
            0
        )
    );
    assert_eq!(
        run(&u1, &["55", "-t", "8-9"]),
        (
            "sgeuser has deleted job-array tasks 8,9 of job 55\n".into(),
            0
        )
    );
    assert_eq!(
        run(&u1, &["55.20"]),
        ("job \"55\" task \"20\" does not exist\n".into(), 1)
    );
    assert_eq!(
        run(&u1, &["55.1-20:2"]),
        (
            "sgeuser has deleted job-array tasks 1,3,7 of job 55\n".into(),
            0
        )
    );
    assert_eq!(
        run(&u1, &["56.2"]),
        ("job \"56\" task \"2\" does not exist\n".into(), 1)
    );
    assert_eq!(
        run(&u1, &["55", "-t", "2,3"]),
        (
            "job \"55\" task id range \"2-3:1\" comprises no tasks\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u1, &["qdw_u2"]),
        (
            "The job qdw_u2 of user(s) sgeuser does not exist\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u1, &["-u", "sgeuser2"]),
        (
            "sgeuser - you do not have the necessary privileges to delete the job \"49\"\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u1, &["-u", "sgeuser", "49"]),
        ("The job 49 of user(s) sgeuser does not exist\n".into(), 1)
    );
    assert_eq!(
        run(&u2, &["-u", "*"]),
        (
            "denied: \"sgeuser2\" must be manager to modify all jobs\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u2, &["-u", "nosuchuser"]),
        (
            "There is no job registered for the following users: nosuchuser\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u1, &["999999", "qdw_b", "999998"]),
        (
            "denied: job \"999999\" does not exist\nsgeuser has deleted job 56\ndenied: job \"999998\" does not exist\n".into(),
            1
        )
    );
    assert_eq!(
        run(&u1, &["55.3-4", "55"]),
        (
            "job \"55\" task id range \"3-4:1\" comprises no tasks\nsgeuser has deleted job 55\n"
                .into(),
            1
        )
    );
    assert_eq!(
        run(&u2, &["qdw_*"]),
        ("sgeuser2 has deleted job 49\n".into(), 0)
    );
    assert!(records(&cell).is_empty());
}

#[test]
fn qdel_array_with_running_tasks_speaks_per_task() {
    let Some((_, u2, r)) = users("qdel_array_with_running_tasks_speaks_per_task") else {
        return;
    };
    let cell = TestCell::new();
    submit_as(&cell, &u2, 82, "qdw_run", Some("1-4"), Holds::NONE);
    start_tasks(&cell, 82, &[1, 2]);
    let run = |user: &TestUser, args: &[&str]| {
        let r = run_as(&cell, user, "qdel", args);
        (r.stdout, r.code)
    };
    // Recorded from the oracle with the same states.
    assert_eq!(
        run(&u2, &["82.1"]),
        (
            "sgeuser2 has registered the job-array task 82.1 for deletion\n".into(),
            0
        )
    );
    assert_eq!(
        run(&u2, &["82.1"]),
        ("job 82 is already in deletion\n".into(), 0)
    );
    assert_eq!(
        run(&u2, &["82"]),
        (
            "job 82 is already in deletion\nsgeuser2 has registered the job-array task 82.2 for deletion\nsgeuser2 has deleted job 82\n".into(),
            0
        )
    );
    assert_eq!(
        run(&r, &["-f", "82"]),
        (
            "root forced the deletion of job-array task 82.1\nroot forced the deletion of job-array task 82.2\n".into(),
            0
        )
    );
    assert!(cell.job(82).is_none(), "forced deletion leaves nothing");
}

#[test]
fn qdel_usage_errors_need_no_spool() {
    let Some((u1, _, _)) = users("qdel_usage_errors_need_no_spool") else {
        return;
    };
    let cell = TestCell::new();
    let help = Capture::load("qdel/help.txt").stdout;
    let r = run_as(&cell, &u1, "qdel", &["-t", "3"]);
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str(), r.code),
        (
            "",
            "error: found lonely '-t 3' option (The -t option needs a leading job name).\n",
            1
        )
    );
    let r = run_as(&cell, &u1, "qdel", &["51.x"]);
    assert_eq!(
        r.stderr,
        "error: ERROR! \"51.x\" is an invalid job-task identifier\n"
    );
    let r = run_as(&cell, &u1, "qdel", &["51", "-t"]);
    assert_eq!(
        r.stderr,
        format!("{help}error: -t option must have a list of task id ranges\n")
    );
    assert_eq!(r.code, 1);
}

/// A non-manager's `-f`: a normal deletion, twelve dots while SGE waits a minute, then the
/// forced deletion is refused (exit status 1). Run in-process so the minute is skipped.
#[test]
fn qdel_force_by_user_deletes_normally_then_fails() {
    let Some((u1, _, _)) = users("qdel_force_by_user_deletes_normally_then_fails") else {
        return;
    };
    let cell = TestCell::new();
    submit(&cell, &u1, 64, "qdw_d");
    let env = gridspool::cli::ClientEnv {
        spool: cell.spool.clone(),
        config: gridspool::config::ClusterConfig::load(&cell.spool.config_path()).expect("config"),
        caller: gridspool::identity::Caller::for_ids(u1.uid, u1.gid).expect("caller"),
        host: "vm".into(),
    };
    let mut steps = 0;
    let mut step = |o: &mut gridspool::cli::Output| {
        steps += 1;
        o.stdout.push('.');
    };
    let args = vec!["-f".to_string(), "64".to_string()];
    let out = gridspool::cli::qdel::execute(&args, || Ok(env), &mut step);
    assert_eq!(steps, 12);
    assert_eq!(out.stdout, "sgeuser has deleted job 64\n............\n");
    assert_eq!(out.code, 1);
    assert!(cell.job(64).is_none());
}

/// `qdel '*'` is a pattern over job names, so it selects the caller's own jobs only
/// (recorded on the oracle as sgeuser2).
#[test]
fn qdel_star_deletes_only_own_jobs() {
    let Some((u1, u2, _)) = users("qdel_star_deletes_only_own_jobs") else {
        return;
    };
    let cell = TestCell::new();
    let run = |args: &[&str]| {
        let r = run_as(&cell, &u2, "qdel", args);
        (r.stdout, r.code)
    };
    assert_eq!(
        run(&["*"]),
        ("The job * of user(s) sgeuser2 does not exist\n".into(), 1)
    );
    submit(&cell, &u1, 101, "job.sh");
    submit(&cell, &u2, 102, "qdw_s");
    assert_eq!(run(&["*"]), ("sgeuser2 has deleted job 102\n".into(), 0));
    assert_eq!(
        run(&["-u", "sgeuser2", "*"]),
        ("The job * of user(s) sgeuser2 does not exist\n".into(), 1)
    );
    assert!(cell.job(101).is_some(), "sgeuser's job was touched");
}
