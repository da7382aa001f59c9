//! The shared installation (docs/security.md): users reach the spool only through the setgid
//! clients, which keep their group only for the real spool.

use crate::support::*;
use std::os::unix::process::CommandExt;
use std::process::Command;

fn as_user(user: &TestUser, program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .uid(user.uid)
        .gid(user.gid)
        .output()
        .expect("run as user")
}

#[test]
fn users_cannot_write_into_the_spool_directly() {
    let (Some(user), Some(_)) = (user1(), root()) else {
        skip("users_cannot_write_into_the_spool_directly", "needs root");
        return;
    };
    let cell = TestCell::new();
    for dir in [
        cell.spool.jobs_dir(),
        cell.spool.requests_dir(),
        cell.spool.seq_dir(),
    ] {
        let forged = dir.join("99.job");
        let out = as_user(
            &user,
            "/bin/sh",
            &["-c", &format!("echo forged > {}", forged.display())],
        );
        assert!(
            !out.status.success(),
            "{} must not be writable by users",
            dir.display()
        );
        assert!(!forged.exists());
        let out = as_user(&user, "/bin/ls", &[&dir.to_string_lossy()]);
        assert!(
            !out.status.success(),
            "{} must not be listable by users",
            dir.display()
        );
    }
    // Through the client it works, and the job carries the kernel's uid.
    cell.write_file(&user, "job.sh", "#!/bin/sh\ntrue\n");
    let run = cell.run(&user, "qsub", &["job.sh"]);
    assert_eq!(run.code, 0, "{run:?}");
    let job = cell.job(1).expect("job 1");
    assert_eq!(
        (job.submitter.owner.as_str(), job.submitter.uid),
        ("sgeuser", user.uid)
    );
}

#[test]
fn a_fake_cell_gets_no_spool_group() {
    // A user builds a cell of their own whose jobs/ is a symlink into the real spool, and
    // points the setgid qsub at it: the client drops the group before touching it, so the
    // write into the real spool fails instead of planting a job with a chosen id.
    let (Some(user), Some(_)) = (user1(), root()) else {
        skip("a_fake_cell_gets_no_spool_group", "needs root");
        return;
    };
    let cell = TestCell::new();
    let fake_root = cell.workdir(&user).join("fake");
    let fake = fake_root.join("default");
    let out = as_user(
        &user,
        "/bin/mkdir",
        &["-p", &fake.join("seq").to_string_lossy()],
    );
    assert!(out.status.success());
    std::fs::copy(cell.cell.join("config.yaml"), fake.join("config.yaml")).expect("copy config");
    let out = as_user(
        &user,
        "/bin/sh",
        &[
            "-c",
            &format!(
                "mkdir -p {f}/requests {f}/common {f}/quarantine {f}/daemon && echo 41 > {f}/seq/jobid && ln -s {real} {f}/jobs",
                f = fake.display(),
                real = cell.spool.jobs_dir().display()
            ),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    cell.write_file(&user, "job.sh", "#!/bin/sh\ntrue\n");
    let run = {
        let mut cmd = cell.command("qsub", &user);
        cmd.env("SGE_ROOT", &fake_root).arg("job.sh");
        let out = cmd.output().expect("qsub");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_ne!(run.0, Some(0), "qsub must fail: {run:?}");
    assert!(!cell.spool.job_file(gridspool::model::JobId(42)).exists());
    assert!(cell.spool.scan_jobs().expect("scan").jobs.is_empty());
}

#[test]
fn another_user_cannot_touch_a_job() {
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        skip("another_user_cannot_touch_a_job", "needs root");
        return;
    };
    let cell = TestCell::new();
    cell.write_file(&u1, "job.sh", "#!/bin/sh\ntrue\n");
    assert_eq!(cell.run(&u1, "qsub", &["job.sh"]).code, 0);
    for (bin, args) in [
        ("qdel", vec!["1"]),
        ("qhold", vec!["1"]),
        ("qalter", vec!["-N", "stolen", "1"]),
        ("qalter", vec!["-p", "-1", "1"]),
    ] {
        let run = cell.run(&u2, bin, &args);
        assert_ne!(run.code, 0, "{bin} {args:?} by another user: {run:?}");
    }
    // The owner may lower but not raise the priority.
    assert_ne!(cell.run(&u1, "qalter", &["-p", "5", "1"]).code, 0);
    assert_eq!(cell.run(&u1, "qalter", &["-p", "-5", "1"]).code, 0);
    let job = cell.job(1).expect("job 1");
    assert_eq!((job.spec.name.as_str(), job.spec.priority), ("job.sh", -5));
    assert!(!job.tasks.pending[0].holds.any());
}
