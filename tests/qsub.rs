//! `qsub` against the SGE 8.1.9 captures in `tests/compat/qsub/`, plus the behaviour the
//! captures do not show: option sources and their precedence, `-@`, `-C`, the spool left
//! untouched by every refusal, concurrent submissions, and `-sync y` against an exit log
//! written as `sched_d` writes it.

use crate::support::*;
use gridspool::model::{FinishedTask, JobId, JobRecord};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The job scripts of the capture run (`sge-capture.sh`), in the user's working directory.
fn scripts(cell: &TestCell, user: &TestUser) {
    cell.write_file(
        user,
        "job.sh",
        "#!/bin/sh\necho \"hello from job $JOB_ID task $SGE_TASK_ID\"\nsleep ${1:-600}\n",
    );
    cell.write_file(
        user,
        "directives.sh",
        "#!/bin/sh\n#$ -N embedded_name\n#$ -p -10\n#$ -l h_rt=0:05:00\necho embedded\nsleep 600\n",
    );
    cell.write_file(user, "env.sh", "#!/bin/sh\nenv | sort\n");
    cell.write_file(
        user,
        "exit3.sh",
        "#!/bin/sh\necho \"exiting with 3\"\nexit 3\n",
    );
    cell.write_file(
        user,
        "burn.sh",
        "#!/bin/sh\n# burn CPU for $1 seconds\nend=$(( $(date +%s) + ${1:-20} ))\nwhile [ $(date +%s) -lt $end ]; do :; done\n",
    );
}

fn job_files(cell: &TestCell) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cell.spool.jobs_dir())
        .expect("jobs dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs a capture's command in a cell prepared like the capture's context and compares.
/// `next_id` is the job id SGE gave (or would have given); `prepare` recreates other state.
fn golden_as(
    case: &str,
    who: Option<TestUser>,
    args: &[&str],
    stdin: Option<&str>,
    next_id: u32,
    edit_config: impl FnOnce(String) -> String,
    prepare: impl FnOnce(&TestCell, &TestUser),
) -> Option<(TestCell, Run)> {
    let Some(user) = who else {
        skip(case, "needs root to run commands as the capture's user");
        return None;
    };
    let cap = Capture::load(&format!("qsub/{case}.txt"));
    let cell = TestCell::with_config(edit_config);
    scripts(&cell, &user);
    prepare(&cell, &user);
    cell.set_next_job_id(next_id);
    let before = job_files(&cell);
    let run = cell.run_with_stdin(&user, "qsub", args, stdin);
    assert_matches(&run, &cap);
    if run.code != 0 {
        assert_eq!(job_files(&cell), before, "{case}: a refusal left files");
    }
    Some((cell, run))
}

fn golden(case: &str, args: &[&str], next_id: u32) -> Option<(TestCell, Run)> {
    golden_as(case, user1(), args, None, next_id, |c| c, |_, _| {})
}

fn job(cell: &TestCell, id: u32) -> JobRecord {
    cell.job(id)
        .unwrap_or_else(|| panic!("job {id} in the spool"))
}

fn resources(list: &[gridspool::model::ResourceRequest]) -> String {
    list.iter()
        .map(|r| format!("{}={}", r.name, r.value))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn qsub_help() {
    golden("help", &["-help"], 1);
}

#[test]
fn qsub_plain() {
    if let Some((cell, _)) = golden("plain", &["job.sh"], 2) {
        let j = job(&cell, 2);
        assert_eq!(j.spec.name, "job.sh");
        assert_eq!(j.spec.script_file, "job.sh");
        assert_eq!(j.spec.account, "sge");
        let host = gridspool::identity::short_hostname();
        assert_eq!(j.spec.mail_list, vec![format!("sgeuser@{host}")]);
        assert_eq!(j.spec.env.len(), 1);
        assert_eq!(
            (j.spec.env[0].name.as_str(), &j.spec.env[0].value),
            ("TERM", &None)
        );
        assert_eq!(j.submitter.owner, "sgeuser");
        assert_eq!(j.submitter.uid, 1001);
        assert_eq!(j.submitter.sge_o_log_name, "sgeuser");
        assert_eq!(
            j.submitter.sge_o_path,
            "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games"
        );
        assert_eq!(j.submitter.sge_o_shell, "/bin/bash");
        assert_eq!(j.submitter.sge_o_home, "/home/sgeuser");
        assert_eq!(j.submitter.sge_o_host, host);
        assert!(j.submitter.sge_o_workdir.ends_with("work-sgeuser"));
        // The script is in the spool: the user's copy may go.
        let script = cell.spool.read_script(JobId(2)).expect("script");
        assert!(String::from_utf8_lossy(&script).contains("hello from job"));
    }
}

#[test]
fn qsub_terse() {
    golden("terse", &["-terse", "job.sh"], 3);
}

#[test]
fn qsub_b_y() {
    if let Some((cell, _)) = golden("b-y", &["-b", "y", "sleep", "600"], 4) {
        let j = job(&cell, 4);
        assert!(j.spec.binary);
        assert_eq!(j.spec.script_file, "sleep");
        assert_eq!(j.spec.args, vec!["600"]);
        assert!(cell.spool.read_script(JobId(4)).expect("script").is_empty());
    }
}

#[test]
fn qsub_n() {
    golden("N", &["-N", "myname", "job.sh"], 5);
}

#[test]
fn qsub_p_100() {
    if let Some((cell, _)) = golden("p-100", &["-p", "-100", "job.sh"], 6) {
        assert_eq!(job(&cell, 6).spec.priority, -100);
    }
}

#[test]
fn qsub_l_h_rt() {
    if let Some((cell, _)) = golden("l-h_rt", &["-l", "h_rt=0:10:0", "job.sh"], 7) {
        assert_eq!(resources(&job(&cell, 7).spec.hard_resources), "h_rt=600");
    }
}

#[test]
fn qsub_pe_smp() {
    if let Some((cell, _)) = golden("pe-smp", &["-pe", "smp", "2", "job.sh"], 8) {
        let pe = job(&cell, 8).spec.pe.expect("pe");
        assert_eq!(
            (pe.name.as_str(), pe.range.min, pe.range.max),
            ("smp", 2, 2)
        );
    }
}

#[test]
fn qsub_hold_jid() {
    let prepare = |cell: &TestCell, user: &TestUser| {
        cell.set_next_job_id(2);
        assert_eq!(cell.run(user, "qsub", &["job.sh"]).code, 0);
    };
    if let Some((cell, _)) = golden_as(
        "hold_jid",
        user1(),
        &["-hold_jid", "2", "job.sh"],
        None,
        9,
        |c| c,
        prepare,
    ) {
        let j = job(&cell, 9);
        assert_eq!(j.spec.hold_jid, vec!["2"]);
        assert_eq!(j.spec.predecessors, vec![JobId(2)]);
    }
}

#[test]
fn qsub_hold_jid_name() {
    let prepare = |cell: &TestCell, user: &TestUser| {
        cell.set_next_job_id(5);
        assert_eq!(cell.run(user, "qsub", &["-N", "myname", "job.sh"]).code, 0);
    };
    if let Some((cell, _)) = golden_as(
        "hold_jid-name",
        user1(),
        &["-hold_jid", "myname", "-N", "after_myname", "job.sh"],
        None,
        16,
        |c| c,
        prepare,
    ) {
        let j = job(&cell, 16);
        assert_eq!(j.spec.hold_jid, vec!["myname"]);
        assert_eq!(j.spec.predecessors, vec![JobId(5)]);
    }
}

#[test]
fn qsub_hold_jid_nonexistent() {
    if let Some((cell, _)) = golden(
        "hold_jid-nonexistent",
        &["-hold_jid", "999999", "job.sh"],
        17,
    ) {
        let j = job(&cell, 17);
        assert_eq!(j.spec.hold_jid, vec!["999999"]);
        assert!(j.spec.predecessors.is_empty());
    }
}

#[test]
fn qsub_hold_jid_missing_arg() {
    golden("hold_jid-missing-arg", &["-hold_jid"], 18);
}

#[test]
fn qsub_t_array() {
    if let Some((cell, _)) = golden("t-array", &["-t", "1-5", "job.sh"], 10) {
        assert_eq!(
            job(&cell, 10).spec.array.expect("array").to_string(),
            "1-5:1"
        );
    }
}

#[test]
fn qsub_terse_t_array() {
    golden("terse-t-array", &["-terse", "-t", "1-3:2", "job.sh"], 11);
}

#[test]
fn qsub_t_bad() {
    golden("t-bad", &["-t", "5-1", "job.sh"], 24);
}

#[test]
fn qsub_h_userhold() {
    if let Some((cell, _)) = golden("h-userhold", &["-h", "job.sh"], 12) {
        assert!(job(&cell, 12).tasks.pending[0].holds.user);
    }
}

#[test]
fn qsub_directives() {
    if let Some((cell, _)) = golden("directives", &["directives.sh"], 13) {
        let j = job(&cell, 13);
        assert_eq!(j.spec.name, "embedded_name");
        assert_eq!(j.spec.priority, -10);
        assert_eq!(resources(&j.spec.hard_resources), "h_rt=300");
        assert_eq!(j.spec.script_file, "directives.sh");
    }
}

#[test]
fn qsub_stdin() {
    if let Some((cell, _)) = golden_as(
        "stdin",
        user1(),
        &[],
        Some("sleep 600\n"),
        14,
        |c| c,
        |_, _| {},
    ) {
        let j = job(&cell, 14);
        assert_eq!(j.spec.script_file, "STDIN");
        assert_eq!(
            cell.spool.read_script(JobId(14)).expect("script"),
            b"sleep 600\n"
        );
    }
}

#[test]
fn qsub_no_stdin_script() {
    golden_as(
        "no-stdin-script",
        user1(),
        &[],
        Some(""),
        14,
        |c| c,
        |_, _| {},
    );
}

#[test]
fn qsub_n_with_args() {
    if let Some((cell, _)) = golden("N-with-args", &["-N", "witharg", "job.sh", "123"], 15) {
        assert_eq!(job(&cell, 15).spec.args, vec!["123"]);
    }
}

#[test]
fn qsub_n_slash() {
    golden("N-slash", &["-N", "a/b", "job.sh"], 15);
}

#[test]
fn qsub_bad_option() {
    golden("bad-option", &["-badopt", "job.sh"], 15);
}

#[test]
fn qsub_nonexistent_script() {
    golden("nonexistent-script", &["/no/such/script.sh"], 15);
}

#[test]
fn qsub_nonexistent_script_relative() {
    golden("nonexistent-script-relative", &["nosuch.sh"], 15);
}

#[test]
fn qsub_b_y_nonexistent_binary() {
    golden(
        "b-y-nonexistent-binary",
        &["-b", "y", "/no/such/binary"],
        18,
    );
}

#[test]
fn qsub_p_positive() {
    golden("p-positive", &["-p", "10", "job.sh"], 18);
}

#[test]
fn qsub_p_out_of_range() {
    golden("p-out-of-range", &["-p", "-2000", "job.sh"], 18);
}

#[test]
fn qsub_p_not_number() {
    golden("p-not-number", &["-p", "abc", "job.sh"], 18);
}

#[test]
fn qsub_l_unknown() {
    golden("l-unknown", &["-l", "nosuchres=1", "job.sh"], 18);
}

#[test]
fn qsub_l_h_rt_bad() {
    golden("l-h_rt-bad", &["-l", "h_rt=abc", "job.sh"], 18);
}

#[test]
fn qsub_pe_unknown() {
    golden("pe-unknown", &["-pe", "nosuchpe", "2", "job.sh"], 18);
}

#[test]
fn qsub_q_unknown() {
    golden("q-unknown", &["-q", "nosuch.q", "job.sh"], 18);
}

#[test]
fn qsub_w_v_pe_unknown() {
    golden(
        "w-v-pe-unknown",
        &["-w", "v", "-pe", "nosuchpe", "2", "job.sh"],
        25,
    );
}

#[test]
fn qsub_w_e_too_many_slots() {
    // The capture's host had 2 slots; make this cell's host the same whatever the CPU count.
    golden_as(
        "w-e-too-many-slots",
        user1(),
        &["-w", "e", "-pe", "smp", "64", "job.sh"],
        None,
        25,
        two_slots,
        |_, _| {},
    );
}

fn two_slots(config: String) -> String {
    config
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("slots:") && !l.contains("999") {
                format!("{}slots: 2", &l[..l.len() - l.trim_start().len()])
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn qsub_root_refused() {
    golden_as(
        "root-refused",
        root(),
        &["-b", "y", "true"],
        None,
        2,
        |c| c.replace("min_uid: 0", "min_uid: 1000"),
        |_, _| {},
    );
}

#[test]
fn qsub_by_user2() {
    if let Some((cell, _)) = golden_as("by-user2", user2(), &["job.sh"], None, 27, |c| c, |_, _| {})
    {
        assert_eq!(job(&cell, 27).submitter.owner, "sgeuser2");
    }
}

#[test]
fn qsub_burn_1() {
    golden("burn-1", &["-b", "n", "burn.sh", "20"], 40);
}

#[test]
fn qsub_burn_2() {
    golden("burn-2", &["-b", "n", "burn.sh", "20"], 41);
}

#[test]
fn qsub_burn_3() {
    golden_as(
        "burn-3",
        user2(),
        &["-b", "n", "burn.sh", "5"],
        None,
        42,
        |c| c,
        |_, _| {},
    );
}

#[test]
fn qsub_o_unwritable() {
    if let Some((cell, _)) = golden(
        "o-unwritable",
        &["-o", "/nonexistent-dir/out.txt", "-b", "y", "true"],
        33,
    ) {
        let j = job(&cell, 33);
        assert_eq!(j.spec.stdout[0].path, "/nonexistent-dir/out.txt");
        assert_eq!(j.spec.stdout[0].host, None);
    }
}

// ---------------------------------------------------------------- -sync y

/// Runs a `-sync y` capture: starts qsub, waits for its job file, appends `exits` to the job's
/// exit log as `sched_d` does, and compares what qsub printed.
fn golden_sync(case: &str, args: &[&str], next_id: u32, exits: &[(u32, i32)]) {
    let Some(user) = user1() else {
        skip(case, "needs root to run commands as sgeuser");
        return;
    };
    let cap = Capture::load(&format!("qsub/{case}.txt"));
    let cell = TestCell::new();
    scripts(&cell, &user);
    cell.set_next_job_id(next_id);
    let child = cell
        .command("qsub", &user)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn qsub");
    let id = JobId(next_id);
    wait_until(|| cell.spool.job_file(id).exists());
    let mut log = String::new();
    for (task, status) in exits {
        let t = FinishedTask {
            task: *task,
            exit_status: *status,
            failed: 0,
            end_time: 0,
            signal: None,
            never_ran: false,
        };
        log.push_str(&serde_json::to_string(&t).expect("json"));
        log.push('\n');
        // Written in two steps, the way a slow append may be seen half done.
        std::fs::write(cell.spool.exits_file(id), &log[..log.len() - 1]).expect("exits");
        std::fs::write(cell.spool.exits_file(id), &log).expect("exits");
    }
    let run = collect(child);
    assert_matches(&run, &cap);
}

fn wait_until(mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "timed out");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn qsub_sync_y() {
    golden_sync("sync-y", &["-sync", "y", "-b", "y", "true"], 28, &[(1, 0)]);
}

#[test]
fn qsub_sync_y_exit3() {
    golden_sync("sync-y-exit3", &["-sync", "y", "exit3.sh"], 29, &[(1, 3)]);
}

#[test]
fn qsub_sync_y_false() {
    golden_sync(
        "sync-y-false",
        &["-sync", "y", "-b", "y", "false"],
        30,
        &[(1, 1)],
    );
}

#[test]
fn qsub_b_y_quoting() {
    // The real job ran `sh -c exit` with argument `3` (SGE passes arguments unquoted): 0.
    golden_sync(
        "b-y-quoting",
        &["-sync", "y", "-b", "y", "sh", "-c", "exit 3"],
        31,
        &[(1, 0)],
    );
}

#[test]
fn qsub_sync_y_cwd_j_y() {
    golden_sync(
        "sync-y-cwd-j-y",
        &[
            "-sync",
            "y",
            "-cwd",
            "-j",
            "y",
            "-o",
            "joined.out",
            "-N",
            "joined",
            "job.sh",
            "1",
        ],
        32,
        &[(1, 0)],
    );
}

#[test]
fn qsub_sync_y_terse() {
    golden_sync(
        "sync-y-terse",
        &["-sync", "y", "-terse", "-b", "y", "true"],
        34,
        &[(1, 0)],
    );
}

#[test]
fn qsub_sync_y_array() {
    // qsub prints the tasks in the order they ended (SGE's japi_wait for any task; capture
    // qsub/sync-y-array-finish-order shows task 2 before task 1): here 1, 2, 3.
    golden_sync(
        "sync-y-array",
        &["-sync", "y", "-t", "1-3", "-b", "y", "true"],
        35,
        &[(1, 0), (2, 0), (3, 0)],
    );
}

#[test]
fn qsub_sync_y_nonexistent_binary() {
    golden_sync(
        "sync-y-nonexistent-binary",
        &["-sync", "y", "-b", "y", "/no/such/binary"],
        36,
        &[(1, 127)],
    );
}

#[test]
fn qsub_sync_y_env() {
    golden_sync(
        "sync-y-env",
        &["-sync", "y", "-N", "envjob", "env.sh"],
        37,
        &[(1, 0)],
    );
}

#[test]
fn qsub_sync_y_pe_env() {
    golden_sync(
        "sync-y-pe-env",
        &["-sync", "y", "-pe", "smp", "2", "-N", "envpe", "env.sh"],
        38,
        &[(1, 0)],
    );
}

#[test]
fn qsub_sync_y_array_env() {
    golden_sync(
        "sync-y-array-env",
        &["-sync", "y", "-t", "2-3", "-N", "envarr", "env.sh"],
        39,
        &[(2, 0), (3, 0)],
    );
}

#[test]
fn qsub_sync_y_job_deleted() {
    // Oracle (SGE 8.1.9, qdel during `qsub -sync y`): `Unable to run job 85` on stderr, exit 0.
    let Some(user) = user1() else {
        skip("qsub_sync_y_job_deleted", "needs root");
        return;
    };
    let cell = TestCell::new();
    cell.set_next_job_id(85);
    let child = cell
        .command("qsub", &user)
        .args(["-sync", "y", "-b", "y", "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_until(|| cell.spool.job_file(JobId(85)).exists());
    cell.spool.remove_job(JobId(85)).expect("remove");
    let run = collect(child);
    assert_eq!(run.stdout, "Your job 85 (\"sleep\") has been submitted\n");
    assert_eq!(run.stderr, "Unable to run job 85\n");
    assert_eq!(run.code, 0);
}

// ---------------------------------------------------------------- sources and precedence

#[test]
fn qsub_precedence_sge_request_script_command_line() {
    let Some(user) = user1() else {
        skip("qsub_precedence", "needs root");
        return;
    };
    let cell = TestCell::new();
    std::fs::write(
        cell.spool.cluster_sge_request(),
        "# cluster defaults\n-A clusteracct -l h_rt=5 -q all.q\n-v Z=1 -M a@b\n",
    )
    .expect("sge_request");
    cell.write_file(&user, ".sge_request", "-N fromcwd -m b\n");
    cell.write_file(
        &user,
        "d.sh",
        "#!/bin/sh\n#$ -l h_rt=10,mem_free=1G\n#$ -q all.q\n#$ -v X=1\n#$ -o a.out\necho hi\n#$ -p -5\n  #$ -A indented-is-ignored\n#$ -M x@y -m e\n",
    );
    cell.set_next_job_id(1);
    let run = cell.run(
        &user,
        "qsub",
        &[
            "-l", "h_rt=20", "-q", "*@*", "-v", "Y=2", "-o", "b.out", "d.sh",
        ],
    );
    assert_eq!(
        run.stdout, "Your job 1 (\"fromcwd\") has been submitted\n",
        "{run:?}"
    );
    let j = job(&cell, 1).spec;
    assert_eq!(j.account, "clusteracct");
    // -l merges across sources, a later value of a resource replacing the earlier.
    assert_eq!(resources(&j.hard_resources), "mem_free=1G,h_rt=20");
    // -q: a later source replaces the list of an earlier one.
    assert_eq!(j.hard_queues, vec!["*@*"]);
    let env: Vec<String> = j
        .env
        .iter()
        .map(|v| format!("{}={}", v.name, v.value.as_deref().unwrap_or("NONE")))
        .collect();
    assert_eq!(env, ["TERM=NONE", "Z=1", "X=1", "Y=2"]);
    assert_eq!(j.stdout[0].path, "b.out");
    assert_eq!(j.stdout.len(), 1);
    assert_eq!(
        j.priority, -5,
        "a directive after the first command still counts"
    );
    assert_eq!(j.mail_list, vec!["a@b", "x@y"]);
    assert_eq!(j.mail_options, "be");
}

#[test]
fn qsub_option_file_and_prefix() {
    let Some(user) = user1() else {
        skip("qsub_option_file_and_prefix", "needs root");
        return;
    };
    let cell = TestCell::new();
    cell.write_file(&user, "opts", "# options\n-N fromfile\n-p -3 -C '#PBS'\n");
    cell.write_file(
        &user,
        "p.sh",
        "#!/bin/sh\n#$ -N dollar\n#PBS -A pbsacct\n#PBS -C '#$'\necho hi\n",
    );
    cell.set_next_job_id(1);
    let run = cell.run(&user, "qsub", &["-@", "opts", "-terse", "p.sh"]);
    assert_eq!((run.stdout.as_str(), run.code), ("1\n", 0), "{run:?}");
    let j = job(&cell, 1).spec;
    assert_eq!(j.name, "fromfile");
    assert_eq!(j.priority, -3);
    assert_eq!(j.account, "pbsacct", "-C in the script is ignored");
    // -C '' turns directive scanning off; the command line still overrides.
    let run = cell.run(&user, "qsub", &["-C", "", "-terse", "p.sh"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(job(&cell, 2).spec.name, "p.sh");
    // A missing -@ file is refused before anything is submitted.
    let run = cell.run(&user, "qsub", &["-@", "nosuch", "p.sh"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("nosuch"), "{run:?}");
    assert_eq!(job_files(&cell), ["1.job", "2.job"]);
}

#[test]
fn qsub_refusals_leave_the_spool_intact() {
    let Some(user) = user1() else {
        skip("qsub_refusals", "needs root");
        return;
    };
    let cell = TestCell::new();
    scripts(&cell, &user);
    cell.write_file(&user, "nul.sh", "#!/bin/sh\n#$ -N x\n\u{0}\n");
    cell.write_file(&user, "stray.sh", "#!/bin/sh\n#$ -N x extra words\n");
    let cases: &[(&[&str], i32, &str)] = &[
        (&["-t", "0", "job.sh"], 1, "0 is an invalid task id"),
        (&["-t", "abc", "job.sh"], 7, "Numerical value invalid!"),
        (&["-m", "x", "job.sh"], 7, "Wrong mail options list format"),
        (
            &["-a", "abc", "job.sh"],
            7,
            "Wrong date/time format \"abc\" specified to -a option",
        ),
        (&["-b", "x", "true"], 7, "invalid option argument \"-b x\""),
        (
            &["-pe", "smp", "0", "job.sh"],
            1,
            "pe range must be greater than zero",
        ),
        (
            &["-l", "s=abc", "job.sh"],
            1,
            "attribute \"slots\" is not a integer value",
        ),
        (&["-N", "1abc", "job.sh"], 1, "cannot start with a digit"),
        (
            &["-P", "nosuchproj", "job.sh"],
            1,
            "project \"nosuchproj\" does not exist",
        ),
        (
            &["-hold_jid_ad", "1", "job.sh"],
            1,
            "Can only specify \"-hold_jid_ad\"",
        ),
        (
            &["-dl", "01011200", "job.sh"],
            1,
            "is not a deadline initiation user",
        ),
        (&["-ckpt", "x", "job.sh"], 2, "not supported by gridspool"),
        (&["-b", "y"], 2, "command required for a binary job"),
        (
            &["nul.sh"],
            1,
            "Script length does not match declared length",
        ),
        (&["stray.sh"], 5, "Unknown option"),
        (&["-w", "v", "-b", "y", "true"], 0, ""),
    ];
    for (args, code, needle) in cases {
        let run = cell.run(&user, "qsub", args);
        assert_eq!(run.code, *code, "{args:?}: {run:?}");
        assert!(run.stderr.contains(needle), "{args:?}: {run:?}");
        assert_eq!(job_files(&cell), Vec::<String>::new(), "{args:?}");
    }
}

#[test]
fn qsub_values_as_sge_shows_them() {
    let Some(user) = user1() else {
        skip("qsub_values", "needs root");
        return;
    };
    let cell = TestCell::new();
    cell.set_next_job_id(1);
    let args = [
        "-terse",
        "-l",
        "a=lx-amd64,mf=1k,h_rt=1.5",
        "-soft",
        "-l",
        "s_rt=1:0:0",
        "-q",
        "all.q",
        "-hard",
        "-pe",
        "smp",
        "4-2",
        "-m",
        "bea",
        "-a",
        "202701011200",
        "-v",
        "NOTSET,A=1",
        "-ac",
        "K=1",
        "-ac",
        "L=2",
        "-dc",
        "K",
        "-tc",
        "0",
        "-r",
        "y",
        "-notify",
        "-j",
        "y",
        "-S",
        "/bin/bash",
        "-e",
        "err",
        "-wd",
        "/tmp",
        "-b",
        "y",
        "true",
    ];
    let run = cell.run(&user, "qsub", &args);
    assert_eq!(run.code, 0, "{run:?}");
    let j = job(&cell, 1).spec;
    assert_eq!(
        resources(&j.hard_resources),
        "arch=lx-amd64,mem_free=1k,h_rt=2"
    );
    assert_eq!(resources(&j.soft_resources), "s_rt=3600");
    assert_eq!(j.soft_queues, vec!["all.q"]);
    let pe = j.pe.expect("pe");
    assert_eq!((pe.range.min, pe.range.max), (2, 4));
    assert_eq!(j.mail_options, "abe");
    assert!(j.start_time.is_some());
    assert_eq!(j.env[1].name, "NOTSET");
    assert_eq!(j.env[1].value, None);
    assert_eq!(j.context.get("L").map(String::as_str), Some("2"));
    assert!(!j.context.contains_key("K"));
    assert_eq!(j.task_concurrency, None);
    assert_eq!(j.restartable, Some(true));
    assert!(j.notify && j.merge_stderr);
    assert_eq!(j.interpreter[0].path, "/bin/bash");
    assert_eq!(j.cwd.as_deref(), Some("/tmp"));
}

#[test]
fn qsub_concurrent_submissions_get_unique_ids() {
    let Some(user) = user1() else {
        skip("qsub_concurrent", "needs root");
        return;
    };
    let cell = TestCell::new();
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    (0..5)
                        .map(|_| {
                            let r = cell.run(&user, "qsub", &["-terse", "-b", "y", "true"]);
                            assert_eq!(r.code, 0, "{r:?}");
                            r.stdout.trim().to_string()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("join"))
            .collect()
    });
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 30);
    assert_eq!(cell.spool.scan_jobs().expect("scan").jobs.len(), 30);
}

#[test]
fn qsub_sync_y_interrupted_deletes_the_job() {
    // Oracle: SIGINT to `qsub -sync y` prints this on stderr, deletes the job, exits 1.
    let Some(user) = user1() else {
        skip("qsub_sync_y_interrupted", "needs root");
        return;
    };
    let cell = TestCell::new();
    cell.set_next_job_id(109);
    let child = cell
        .command("qsub", &user)
        .args(["-sync", "y", "-b", "y", "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_until(|| cell.spool.job_file(JobId(109)).exists());
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("kill");
    let run = collect(child);
    assert_eq!(run.stdout, "Your job 109 (\"sleep\") has been submitted\n");
    assert_eq!(
        run.stderr,
        "\nInterrupted!\nPlease wait while qsub shuts down.\n"
    );
    assert_eq!(run.code, 1);
    assert!(cell.job(109).is_none(), "the pending job is deleted");
}

#[test]
fn qsub_setgid_reads_user_files_with_the_real_gid() {
    // Multi-user installs run qsub setgid to the spool's group (the harness installs its
    // clients that way when root). A script only that group may read must not become
    // readable through qsub.
    let Some(user) = user1() else {
        skip("qsub_setgid", "needs root");
        return;
    };
    let gid = nix::unistd::Group::from_name(TEST_GROUP)
        .expect("group")
        .expect("the harness creates its group as root")
        .gid;
    let cell = TestCell::new();
    assert!(
        client_path("qsub").starts_with(std::env::temp_dir()),
        "clients run as setgid copies"
    );
    let secret = cell.write_file(
        &user,
        "secret.sh",
        "#!/bin/sh\n#$ -N secret\necho only the group\n",
    );
    nix::unistd::chown(&secret, Some(nix::unistd::Uid::from_raw(0)), Some(gid)).expect("chown");
    set_mode(&secret, 0o640);
    cell.write_file(&user, "open.sh", "#!/bin/sh\necho hi\n");
    let run = cell.run(&user, "qsub", &["secret.sh"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (
            "",
            "Unable to read script file because of error: error opening secret.sh: Permission denied\n",
            14
        )
    );
    // The effective gid is restored for the spool: a readable script is submitted.
    let run = cell.run(&user, "qsub", &["open.sh"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("Your job 1 (\"open.sh\") has been submitted\n", 0)
    );
}

#[test]
fn qsub_hold_jid_forms() {
    // Oracle-checked: a `-terse` array id is refused, patterns match the user's jobs by name,
    // and -hold_jid_ad needs the same task range.
    let Some(user) = user1() else {
        skip("qsub_hold_jid_forms", "needs root");
        return;
    };
    let cell = TestCell::new();
    scripts(&cell, &user);
    cell.set_next_job_id(110);
    let a = cell.run(
        &user,
        "qsub",
        &["-terse", "-h", "-t", "1-3", "-b", "y", "true"],
    );
    assert_eq!(a.stdout, "110.1-3:1\n");
    let run = cell.run(
        &user,
        "qsub",
        &["-hold_jid", "110.1-3:1", "-b", "y", "true"],
    );
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            "Unable to run job: denied: job \"110.1-3:1\" not found\nExiting.\n",
            1
        )
    );
    let run = cell.run(
        &user,
        "qsub",
        &["-terse", "-hold_jid", "110", "-b", "y", "true"],
    );
    assert_eq!(run.stdout, "111\n");
    let run = cell.run(
        &user,
        "qsub",
        &[
            "-terse",
            "-t",
            "1-3",
            "-hold_jid_ad",
            "110",
            "-b",
            "y",
            "true",
        ],
    );
    assert_eq!(run.stdout, "112.1-3:1\n");
    assert_eq!(job(&cell, 112).spec.array_predecessors, vec![JobId(110)]);
    let run = cell.run(
        &user,
        "qsub",
        &["-t", "1-4", "-hold_jid_ad", "110", "-b", "y", "true"],
    );
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            "Unable to run job: This array job must have the same range of sub-tasks as the dependent array job specified with -hold_jid_ad\nExiting.\n",
            1
        )
    );
    let run = cell.run(
        &user,
        "qsub",
        &["-terse", "-hold_jid", "tr*", "-N", "pat", "-b", "y", "true"],
    );
    assert_eq!(run.stdout, "113\n");
    assert_eq!(
        job(&cell, 113).spec.predecessors,
        vec![JobId(110), JobId(111), JobId(112)]
    );
}

#[test]
fn qsub_now_y_waits_for_dispatch() {
    // Oracle: stdout has the submission line; stderr says it waits, then the verdict.
    let Some(user) = user1() else {
        skip("qsub_now_y", "needs root");
        return;
    };
    let cell = TestCell::new();
    let spawn = || {
        cell.command("qsub", &user)
            .args(["-now", "y", "-b", "y", "sleep", "30"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    // Started by sched_d: a running task appears in the job's state.
    cell.set_next_job_id(116);
    let child = spawn();
    wait_until(|| cell.spool.job_file(JobId(116)).exists());
    let mut j = cell.job(116).expect("116");
    j.tasks.pending.clear();
    j.tasks.running.push(gridspool::model::RunningTask::running(
        1, "all.q", "vm", 1, 0,
    ));
    cell.set_state(&j);
    set_mode(&cell.spool.state_file(JobId(116)), 0o644);
    let run = collect(child);
    assert_eq!(run.stdout, "Your job 116 (\"sleep\") has been submitted\n");
    assert_eq!(
        run.stderr,
        "Waiting for immediate job to be scheduled.\n\nYour immediate job 116 has been successfully scheduled.\n"
    );
    assert_eq!(run.code, 0);
    // Not startable at once: sched_d removes it.
    let child = spawn();
    wait_until(|| cell.spool.job_file(JobId(117)).exists());
    cell.spool.remove_job(JobId(117)).expect("remove");
    let run = collect(child);
    assert_eq!(
        run.stderr,
        "Waiting for immediate job to be scheduled.\n\nYour qsub request could not be scheduled; try again later.\n"
    );
    assert_eq!(run.code, 1);
}

/// Issue 12: hostile values of `-t`, `-hold_jid` and `-N`, against the oracle. `-hold_jid ''`
/// and `-hold_jid ,` were taken as no dependency before (SGE refuses a list of no job).
#[test]
fn qsub_hostile_values_as_sge() {
    for (case, args) in [
        ("t-zero", &["-t", "0-3", "job.sh"][..]),
        ("t-step-zero", &["-t", "1-3:0", "job.sh"]),
        ("t-not-number", &["-t", "a", "job.sh"]),
        ("hold_jid-empty", &["-hold_jid", "", "job.sh"]),
        ("hold_jid-comma", &["-hold_jid", ",", "job.sh"]),
        (
            "hold_jid_ad-comma",
            &["-t", "1-2", "-hold_jid_ad", ",", "job.sh"],
        ),
        ("N-empty", &["-N", "", "job.sh"]),
        ("N-digit", &["-N", "1abc", "job.sh"]),
        ("N-asterisk", &["-N", "a*b", "job.sh"]),
        ("N-question", &["-N", "a?b", "job.sh"]),
        ("N-keyword", &["-N", "all", "job.sh"]),
        ("N-tab", &["-N", "a\tb", "job.sh"]),
        ("N-at", &["-N", "a@b", "job.sh"]),
        ("N-too-long", &["-N", &"a".repeat(512), "job.sh"]),
        ("t-too-many", &["-t", "1-75001", "job.sh"]),
        ("o-empty-list", &["-o", ",", "job.sh"]),
        ("i-empty", &["-i", "", "job.sh"]),
        ("q-empty", &["-q", "", "job.sh"]),
        ("masterq-empty", &["-masterq", "", "job.sh"]),
        ("S-empty", &["-S", "", "job.sh"]),
        ("M-empty", &["-M", ",", "job.sh"]),
        ("v-empty", &["-v", "", "job.sh"]),
        ("ac-empty", &["-ac", "", "job.sh"]),
        ("a-empty", &["-a", "", "job.sh"]),
    ] {
        golden(case, args, 30);
    }
    golden("N-511", &["-h", "-N", &"a".repeat(511), "job.sh"], 111);
    // SGE builds this message for a space or a byte outside ASCII and loses it (its qsub says
    // `Error reading answer list from qmaster`: `N-space.txt`, `N-not-ascii.txt`).
    for (name, hex) in [("a b", "20"), ("\u{e9}", "c3")] {
        let Some(user) = user1() else { return };
        let cell = TestCell::new();
        scripts(&cell, &user);
        let run = cell.run(&user, "qsub", &["-N", name, "job.sh"]);
        assert_eq!(
            (run.stderr.as_str(), run.code),
            (
                format!("Unable to run job: Non-graphic character (hex {hex}) not allowed in objectname\nExiting.\n").as_str(),
                1
            )
        );
    }
}

/// What a client did with hostile bytes: its run, and whether it left files in `jobs/` or
/// `requests/`.
fn run_bytes(
    cell: &TestCell,
    user: &TestUser,
    bin: &str,
    args: &[&[u8]],
    env: &[(&str, &[u8])],
) -> Run {
    run_bytes_in(cell, user, None, bin, args, env)
}

/// [`run_bytes`] in directory `cwd` (else the user's working directory).
fn run_bytes_in(
    cell: &TestCell,
    user: &TestUser,
    cwd: Option<&std::path::Path>,
    bin: &str,
    args: &[&[u8]],
    env: &[(&str, &[u8])],
) -> Run {
    use std::os::unix::ffi::OsStrExt;
    let listed = |dir: std::path::PathBuf| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = (
        listed(cell.spool.jobs_dir()),
        listed(cell.spool.requests_dir()),
    );
    let mut cmd = cell.command(bin, user);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    cmd.args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)));
    for (k, v) in env {
        cmd.env(k, std::ffi::OsStr::from_bytes(v));
    }
    let out = cmd.stdin(Stdio::null()).output().expect("run");
    let run = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    };
    assert!(!run.stderr.contains("panicked"), "{bin} {args:?}: {run:?}");
    if run.code != 0 {
        let after = (
            listed(cell.spool.jobs_dir()),
            listed(cell.spool.requests_dir()),
        );
        assert_eq!(after, before, "{bin} {args:?} left files: {run:?}");
    }
    run
}

/// Issue 12: bytes that are not UTF-8 in an argument of every client, in a `#$` line, in
/// `sge_request` and `-@` files and in the variables `-v` copies: a clear message, exit 1,
/// nothing published, never a panic (every client panicked on such an argument before, exit
/// 101). `-V` leaves such a variable out and says so. SGE's own answers are recorded in
/// `*/…not-utf8.txt`; gridspool's differ on purpose (`DIVERGENCES.md`).
#[test]
fn clients_refuse_arguments_that_are_not_utf8() {
    let Some(user) = user1() else {
        return skip(
            "clients_refuse_arguments_that_are_not_utf8",
            "needs root to run commands as sgeuser",
        );
    };
    let cell = TestCell::new();
    scripts(&cell, &user);
    let bad = "is not valid UTF-8";
    let cases: &[(&str, &[&[u8]], &str)] = &[
        (
            "qsub",
            &[b"-N", b"bad\xffname", b"job.sh"],
            "qsub: the value of -N \"bad\\xFFname\" is not valid UTF-8",
        ),
        (
            "qsub",
            &[b"-\xff", b"job.sh"],
            "qsub: argument 1 \"-\\xFF\"",
        ),
        ("qsub", &[b"job\xff.sh"], "qsub: argument 1"),
        ("qsub", &[b"job.sh", b"arg\xff"], "qsub: argument 2"),
        ("qsub", &[b"-o", b"/tmp/\xff", b"job.sh"], "the value of -o"),
        ("qdel", &[b"\xff"], "qdel: argument 1 \"\\xFF\""),
        ("qstat", &[b"-u", b"\xff"], "qstat: the value of -u"),
        ("qhold", &[b"\xff"], "qhold: argument 1"),
        ("qrls", &[b"\xff"], "qrls: argument 1"),
        (
            "qalter",
            &[b"-N", b"x\xff", b"1"],
            "qalter: the value of -N",
        ),
        ("qacct", &[b"-j", b"\xff"], "qacct: the value of -j"),
        ("qhost", &[b"-h", b"\xff"], "qhost: the value of -h"),
    ];
    for (bin, args, message) in cases {
        let run = run_bytes(&cell, &user, bin, args, &[]);
        assert_eq!(run.code, 1, "{bin} {args:?}: {run:?}");
        assert!(
            run.stderr.contains(message) && run.stderr.contains(bad),
            "{bin} {args:?}: {run:?}"
        );
    }

    // In the files qsub reads: a `#$` line, a defaults file, a `-@` file.
    let dir = cell.workdir(&user);
    std::fs::write(
        dir.join("bad.sh"),
        b"#!/bin/sh\n#$ -N bad\xffname\necho hi\n",
    )
    .expect("w");
    std::fs::write(dir.join("opts"), b"-N fine\n-A acc\xff\n").expect("w");
    let run = run_bytes(&cell, &user, "qsub", &[b"bad.sh"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("line 2 of the script, a #$ line, is not valid UTF-8")
    );
    let run = run_bytes(&cell, &user, "qsub", &[b"-@", b"opts", b"job.sh"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("line 2 of option file \"opts\" is not valid UTF-8")
    );
    std::fs::write(dir.join(".sge_request"), b"-A acc\xff\n").expect("w");
    let run = run_bytes(&cell, &user, "qsub", &[b"job.sh"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("/.sge_request\" is not valid UTF-8"),
        "{run:?}"
    );
    std::fs::remove_file(dir.join(".sge_request")).expect("rm");
    // A script whose body (not its directives) is not UTF-8 is kept byte for byte.
    std::fs::write(dir.join("body.sh"), b"#!/bin/sh\necho \xff\n").expect("w");
    let run = run_bytes(&cell, &user, "qsub", &[b"-h", b"body.sh"], &[]);
    assert_eq!(run.code, 0, "{run:?}");

    // The environment: -v NAME of such a value is refused, -V leaves it out and says so.
    let env: &[(&str, &[u8])] = &[("BADVAR", b"x\xfey"), ("GOODVAR", b"fine")];
    let run = run_bytes(&cell, &user, "qsub", &[b"-v", b"BADVAR", b"job.sh"], env);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the value of environment variable \"BADVAR\", which -v copies,"),
        "{run:?}"
    );
    let run = run_bytes(&cell, &user, "qsub", &[b"-terse", b"-V", b"job.sh"], env);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr,
        "qsub: warning: -V leaves out environment variable \"BADVAR\": its name or value is not valid UTF-8\n"
    );
    let id: u32 = run.stdout.trim().parse().expect("job id");
    let names: Vec<String> = job(&cell, id)
        .spec
        .env
        .iter()
        .map(|v| v.name.clone())
        .collect();
    assert!(names.iter().any(|n| n == "GOODVAR") && !names.iter().any(|n| n == "BADVAR"));

    // A working directory whose name is not UTF-8: -cwd is refused, a job without it goes.
    use std::os::unix::ffi::OsStrExt;
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"dir\xff"));
    std::fs::create_dir(&odd).expect("mkdir");
    std::os::unix::fs::chown(&odd, Some(user.uid), Some(user.gid)).expect("chown");
    let script = dir.join("job.sh");
    let script = script.as_os_str().as_bytes();
    let run = run_bytes_in(&cell, &user, Some(&odd), "qsub", &[b"-cwd", script], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("which -cwd makes the job's, is not valid UTF-8"),
        "{run:?}"
    );
    let run = run_bytes_in(&cell, &user, Some(&odd), "qsub", &[b"-h", script], &[]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// A script or `-@` file that is not a regular file is read as SGE reads files, by the size
/// `stat` gives it: `/dev/zero` is empty (not 2 GB read before failing), and a FIFO nobody
/// writes to is empty at once (SGE would wait for a writer for ever: DIVERGENCES.md).
#[test]
fn qsub_reads_no_more_of_a_file_than_its_size_and_never_waits_on_one() {
    let Some(user) = user1() else {
        return skip(
            "qsub_reads_no_more_of_a_file_than_its_size_and_never_waits_on_one",
            "needs the test users",
        );
    };
    let cell = TestCell::new();
    let fifo = cell.workdir(&user).join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    std::os::unix::fs::chown(&fifo, Some(user.uid), Some(user.gid)).expect("chown");
    let finished = |args: &[&str]| {
        let mut child = cell
            .command("qsub", &user)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("qsub");
        let waited = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if waited.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("qsub {args:?} waits on a FIFO");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        collect(child)
    };
    let mut cap = Capture::load("qsub/dev-zero.txt");
    cap.command = "qsub fifo".into();
    assert_matches(&finished(&["fifo"]), &cap);
    // The user's own defaults files are read the same way: a FIFO as `./.sge_request`
    // is an empty file of defaults.
    std::fs::rename(&fifo, cell.workdir(&user).join(".sge_request")).expect("rename");
    let run = finished(&["-h", "-b", "y", "true"]);
    assert_eq!(run.code, 0, "{run:?}");
    golden("dev-zero", &["/dev/zero"], 1);
    golden(
        "at-dev-zero",
        &["-@", "/dev/zero", "-b", "y", "-h", "true"],
        15,
    );
}

/// An empty script file is no script (SGE's qmaster refuses it).
#[test]
fn qsub_of_an_empty_file_is_refused() {
    golden_as(
        "empty-file",
        user1(),
        &["empty.sh"],
        None,
        1,
        |c| c,
        |cell, user| {
            cell.write_file(user, "empty.sh", "");
        },
    );
}
