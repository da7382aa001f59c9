//! The queue and global `prolog` and `epilog` (queue_conf(5), sge_conf(5)), set with
//! `qconf`, run by the shepherd around the job as sge_shepherd runs them: as the job's owner
//! (or `user@`), with the job's environment and output files; a failing prolog puts the
//! queue instance in error state (`E`, as the captures `qmod/qstat-f-prolog-failed` and
//! `qmod/qstat-explain-E` show it) and sends the job back to pending, exit 100 puts the job
//! in error, a failing epilog is accounted with `failed` 15. And the queue's
//! `starter_method`, which starts the job instead of its shell.

use crate::sched::{SchedD, accounting_records, qconf_reloaded as qconf, state, wait_for};
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

fn cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2}}\nhostgroups:\n  \"@allhosts\": [\"{host}\"]\nqueues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {{policy: sge}}\n"
        )
    })
}

/// A script for everyone to run, in the cell's root.
/// Written by a `sh` of its own: a file this multi-threaded test process opened for writing
/// could still be open in a child another test thread forked and has not yet `exec`ed, and
/// running it would then fail with "Text file busy" (seen: a starter_method test's job
/// ended with `failed 1`).
fn script(cell: &TestCell, name: &str, body: &str) -> String {
    use std::io::Write;
    let path = cell.root.join(name);
    let mut sh = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    sh.stdin
        .take()
        .expect("stdin")
        .write_all(format!("#!/bin/sh\n{body}").as_bytes())
        .expect("script");
    assert!(sh.wait().expect("sh").success());
    path.to_string_lossy().into_owned()
}

fn submit(cell: &TestCell, user: &TestUser, args: &[&str]) -> JobId {
    let mut all = vec!["-terse"];
    all.extend_from_slice(args);
    let run = cell.run(user, "qsub", &all);
    assert_eq!(run.code, 0, "{run:?}");
    JobId(run.stdout.trim().parse().expect("job id"))
}

fn failed_codes(cell: &TestCell, id: JobId) -> Vec<String> {
    accounting_records(cell, id)
        .iter()
        .map(|r| r[11].clone())
        .collect()
}

#[test]
fn prolog_and_epilog_run_around_the_job_as_its_owner() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "prolog_and_epilog_run_around_the_job_as_its_owner",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    let log = cell.workdir(&user).join("steps");
    let prolog = script(
        &cell,
        "prolog.sh",
        "echo \"prolog $1 $2 $(id -un) JOB_ID=$JOB_ID\" >> \"$SGE_O_WORKDIR/steps\"\n",
    );
    let epilog = script(
        &cell,
        "epilog.sh",
        "echo \"epilog $(id -un)\" >> \"$SGE_O_WORKDIR/steps\"\n",
    );
    // The queue's prolog (with pseudo variables), the global epilog through the file form of
    // the global configuration being absent: set in config.yaml by hand.
    qconf(
        &cell,
        &root,
        &[
            "-mattr",
            "queue",
            "prolog",
            &format!("{prolog} $job_id $queue"),
            "all.q",
        ],
    );
    let config = cell.cell.join("config.yaml");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("epilog: \"root@{epilog}\"\n{text}")).expect("config");
    let run = cell.run(&root, "qconf", &["-sq", "all.q"]);
    assert!(
        run.stdout
            .contains(&format!("prolog                {prolog} $job_id $queue\n")),
        "{run:?}"
    );
    let d2 = {
        // The hand edit needs a reload: SIGHUP, as for any hand edit.
        drop(_d);
        SchedD::start(&cell, &[])
    };
    let id = submit(
        &cell,
        &user,
        &[
            "-cwd",
            "-b",
            "y",
            "-o",
            "/dev/null",
            "-j",
            "y",
            "sh",
            "-c",
            "'echo job >> steps'",
        ],
    );
    wait_for("the job's end", Duration::from_secs(20), || {
        !accounting_records(&cell, id).is_empty()
    });
    assert_eq!(
        std::fs::read_to_string(&log).expect("steps"),
        format!(
            "prolog {id} all.q {} JOB_ID={id}\njob\nepilog root\n",
            user.name
        )
    );
    assert_eq!(failed_codes(&cell, id), ["0"]);
    drop(d2);
}

#[test]
fn a_failing_prolog_puts_the_queue_in_error_and_the_job_back_to_pending() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "a_failing_prolog_puts_the_queue_in_error_and_the_job_back_to_pending",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    let host = gridspool::identity::short_hostname();
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "prolog", "/bin/false", "all.q"],
    );
    let id = submit(
        &cell,
        &user,
        &["-b", "y", "-o", "/dev/null", "-j", "y", "true"],
    );
    let errors = || cell.spool.queue_instance_states().errors;
    wait_for("all.q in error", Duration::from_secs(20), || {
        !errors().is_empty()
    });
    // Accounted with failed 8 ("in prolog"), pending again, as on the oracle.
    wait_for("the job pending again", Duration::from_secs(10), || {
        state(&cell.spool, id)
            .is_some_and(|s| s.tasks.running.is_empty() && !s.tasks.pending.is_empty())
    });
    assert_eq!(failed_codes(&cell, id), ["8"]);
    let qstat = cell.run(&root, "qstat", &["-f", "-explain", "E"]);
    let cap = Capture::load("qmod/qstat-explain-E.txt");
    let line = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("all.q@") || l.starts_with('\t'))
            .map(|l| {
                if l.starts_with('\t') {
                    l.replace(" 8's ", " JOB's ").replace(&host, "vm")
                } else {
                    // The queue line's state column, after the load and arch.
                    l.split_whitespace().last().unwrap_or("").to_string()
                }
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line(&qstat.stdout.replace(&format!(" {id}'s "), " JOB's ")),
        line(&cap.stdout.replace(" 8's ", " JOB's "))
    );
    // The job waits while the instance is in error; cleared and without the prolog, it runs.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        failed_codes(&cell, id),
        ["8"],
        "no new start on an instance in error"
    );
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "prolog", "NONE", "all.q"],
    );
    for case in ["cq", "cq-again"] {
        let cap = Capture::load(&format!("qmod/{case}.txt"));
        let run = cell.run(&root, "qmod", &["-cq", "all.q"]);
        assert_matches(&run, &cap);
        if case == "cq" {
            wait_for("all.q out of error", Duration::from_secs(10), || {
                errors().is_empty()
            });
        }
    }
    wait_for("the job ran", Duration::from_secs(20), || {
        failed_codes(&cell, id) == ["8", "0"]
    });
}

/// The record of a job whose prolog failed is SGE's: no times (`-/-`), no slots, no usage.
#[test]
fn the_record_of_a_job_whose_prolog_failed_is_sges() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "the_record_of_a_job_whose_prolog_failed_is_sges",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "prolog", "/bin/false", "all.q"],
    );
    let id = submit(
        &cell,
        &user,
        &[
            "-b",
            "y",
            "-o",
            "/dev/null",
            "-j",
            "y",
            "-N",
            "prologfails",
            "true",
        ],
    );
    wait_for(
        "the prolog's failure accounted",
        Duration::from_secs(20),
        || !accounting_records(&cell, id).is_empty(),
    );
    let mut cap = Capture::load("qacct/j-prolog-failed.txt");
    cap.stdout = cap.stdout.replace(
        "jobnumber    20                  ",
        &format!("jobnumber    {:<20}", id.0),
    );
    let run = cell.run(&user, "qacct", &["-j", &id.0.to_string()]);
    assert_matches(&run, &cap);
    // The line itself, but for the job's number and host.
    let line = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/compat/accounting/prolog-failed-line.txt"
    ))
    .expect("the captured line");
    let host = gridspool::identity::short_hostname();
    let ours = std::fs::read_to_string(cell.spool.accounting_path()).expect("accounting");
    let ours = ours
        .lines()
        .find(|l| l.split(':').nth(5) == Some(&id.0.to_string()))
        .expect("the record");
    assert_eq!(
        ours.replace(&format!(":{host}:"), ":vm:")
            .replacen(&format!(":{}:", id.0), ":20:", 1),
        line.trim_end()
    );
}

#[test]
fn prolog_exit_100_puts_the_job_in_error_and_a_failing_epilog_is_accounted() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "prolog_exit_100_puts_the_job_in_error_and_a_failing_epilog_is_accounted",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    let apperror = script(&cell, "apperror.sh", "exit 100\n");
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "prolog", &apperror, "all.q"],
    );
    let id = submit(
        &cell,
        &user,
        &["-b", "y", "-o", "/dev/null", "-j", "y", "true"],
    );
    wait_for("the job in error", Duration::from_secs(20), || {
        state(&cell.spool, id).is_some_and(|s| s.error.is_some())
    });
    assert_eq!(failed_codes(&cell, id), ["30"]);
    assert!(cell.spool.queue_instance_states().errors.is_empty());
    // The listing index follows the state file within the daemon's wake-up.
    wait_for("qstat shows Eqw", Duration::from_secs(10), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" Eqw ")
    });
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "prolog", "NONE", "all.q"],
    );
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "epilog", "/bin/false", "all.q"],
    );
    let ran = submit(
        &cell,
        &user,
        &["-b", "y", "-o", "/dev/null", "-j", "y", "true"],
    );
    wait_for("the job's end", Duration::from_secs(20), || {
        !accounting_records(&cell, ran).is_empty()
    });
    assert_eq!(failed_codes(&cell, ran), ["15"]);
    wait_for("all.q in error", Duration::from_secs(10), || {
        !cell.spool.queue_instance_states().errors.is_empty()
    });
}

#[test]
fn a_starter_method_starts_the_job_with_its_command_and_is_told_the_shell() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "a_starter_method_starts_the_job_with_its_command_and_is_told_the_shell",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    let starter = script(
        &cell,
        "starter.sh",
        "echo \"starter $SGE_STARTER_SHELL_PATH $SGE_STARTER_SHELL_START_MODE $SGE_STARTER_USE_LOGIN_SHELL: $*\" >> \"$SGE_O_WORKDIR/steps\"\nexec \"$@\"\n",
    );
    qconf(
        &cell,
        &root,
        &["-mattr", "queue", "starter_method", &starter, "all.q"],
    );
    let id = submit(
        &cell,
        &user,
        &["-cwd", "-b", "y", "-o", "out", "-j", "y", "echo", "hello"],
    );
    wait_for("the job's end", Duration::from_secs(20), || {
        !accounting_records(&cell, id).is_empty()
    });
    let dir = cell.workdir(&user);
    assert_eq!(
        std::fs::read_to_string(dir.join("steps")).expect("steps"),
        "starter /bin/sh posix_compliant true: echo hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out")).expect("out"),
        "hello\n"
    );
    assert_eq!(failed_codes(&cell, id), ["0"]);
}

/// A prolog given to one host (`qconf -mattr queue prolog … all.q@host`, queue_conf(5)'s
/// per-host values) runs before the jobs there; the queue's own (none) elsewhere.
#[test]
fn a_hosts_own_prolog_runs_before_its_jobs() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "a_hosts_own_prolog_runs_before_its_jobs",
            "needs root and the test users",
        );
    };
    let cell = cell();
    let _d = SchedD::start(&cell, &[]);
    let host = gridspool::identity::short_hostname();
    let prolog = script(
        &cell,
        "host-prolog.sh",
        "echo \"prolog of $HOSTNAME $1\" >> \"$SGE_O_WORKDIR/steps\"\n",
    );
    qconf(
        &cell,
        &root,
        &[
            "-mattr",
            "queue",
            "prolog",
            &format!("{prolog} $host"),
            &format!("all.q@{host}"),
        ],
    );
    let run = cell.run(&root, "qconf", &["-sq", "all.q"]);
    assert!(
        run.stdout.contains(&format!(
            "prolog                NONE,[{host}={prolog} $host]\n"
        )),
        "{run:?}"
    );
    let id = submit(
        &cell,
        &user,
        &["-cwd", "-b", "y", "-o", "/dev/null", "-j", "y", "true"],
    );
    wait_for("the job ran", Duration::from_secs(20), || {
        !accounting_records(&cell, id).is_empty()
    });
    let steps = std::fs::read_to_string(cell.workdir(&user).join("steps")).expect("steps");
    assert!(steps.ends_with(&format!(" {host}\n")), "{steps}");
    assert!(steps.starts_with("prolog of "), "{steps}");
}
