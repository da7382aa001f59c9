//! Issue 12: what fault injection and bad input found in the spool. Things that are not
//! regular files where the spool expects files (FIFOs, sockets, devices, directories,
//! symbolic links), and a full disk under the cell.

use crate::sched::{SchedD, accounting_records, cell, cwd, exits, submit, wait_for, workdir};
use crate::support::*;
use gridspool::model::JobId;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs a client as `user` and fails the test if it has not finished within `limit` (a
/// client blocked in `open()` on a FIFO never would).
fn run_bounded(cell: &TestCell, user: &TestUser, bin: &str, args: &[&str]) -> Run {
    let limit = Duration::from_secs(20);
    let mut cmd = cell.command(bin, user);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {bin}: {e}"));
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{bin} {}` hung (still running after {limit:?})",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// The reasons written beside the files set aside, by the name each file had.
fn set_aside(cell: &TestCell) -> Vec<(String, String)> {
    let dir = cell.spool.quarantine_dir();
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("quarantine").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(moved) = name.strip_suffix(".reason") {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            // `<stamp>.<original name>`.
            let original = moved.split_once('.').map_or(moved, |(_, n)| n).to_string();
            out.push((original, text));
        }
    }
    out
}

fn reason_of(cell: &TestCell, name: &str) -> Option<String> {
    set_aside(cell)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, r)| r)
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
}

/// A socket bound at `path` (kept open while the test runs).
fn socket(path: &Path) -> UnixListener {
    UnixListener::bind(path).expect("bind socket")
}

/// A copy of `/dev/null`'s device (root only).
fn char_device(path: &Path) {
    use nix::sys::stat::{Mode, SFlag, makedev, mknod};
    mknod(
        path,
        SFlag::S_IFCHR,
        Mode::from_bits_truncate(0o644),
        makedev(1, 3),
    )
    .expect("mknod");
}

/// A valid job file outside the spool, to link to: a job published in a cell of its own.
fn job_file_elsewhere(id: u32) -> (TestCell, PathBuf) {
    let other = cell(1);
    other.set_next_job_id(id);
    let got = submit(&other.spool, "touch /tmp/gridspool-never-run\n", |_, _| {});
    assert_eq!(got, JobId(id));
    let path = other.spool.job_file(got);
    (other, path)
}

#[test]
fn non_regular_files_in_jobs_and_requests_are_set_aside_unread_and_hang_nothing() {
    let Some(user) = user1() else {
        return skip(
            "non_regular_files_in_jobs_and_requests_are_set_aside_unread_and_hang_nothing",
            "needs root (sgeuser, mknod)",
        );
    };
    let cell = cell(1);
    let dir = workdir(&cell);
    let jobs = cell.spool.jobs_dir();
    let requests = cell.spool.requests_dir();
    // A genuine job with a FIFO where its exit log goes.
    let genuine = submit(&cell.spool, "exit 7\n", |s, _| s.cwd = cwd(&dir));
    mkfifo(&cell.spool.exits_file(genuine));
    let (_other, elsewhere) = job_file_elsewhere(9004);
    mkfifo(&jobs.join("9001.job"));
    let _sock = socket(&jobs.join("9002.job"));
    std::os::unix::fs::symlink("/etc/passwd", jobs.join("9003.job")).expect("link");
    std::os::unix::fs::symlink(&elsewhere, jobs.join("9004.job")).expect("link");
    std::fs::create_dir(jobs.join("9005.job")).expect("dir");
    char_device(&jobs.join("9006.job"));
    mkfifo(&requests.join("000000009001.req"));
    std::os::unix::fs::symlink("/etc/passwd", requests.join("000000009002.req")).expect("link");
    std::fs::create_dir(requests.join("000000009003.req")).expect("dir");
    let _rsock = socket(&requests.join("000000009004.req"));

    // Without a daemon the clients meet every one of them: none may hang.
    let listing = run_bounded(&cell, &user, "qstat", &["-u", "*"]);
    assert!(listing.stderr.contains("not a regular file"), "{listing:?}");
    for args in [
        &["-j", "9001"][..],
        &["-j", "*"][..],
        &["-j", &genuine.to_string()][..],
    ] {
        run_bounded(&cell, &user, "qstat", args);
    }
    run_bounded(&cell, &user, "qdel", &["9001"]);
    run_bounded(&cell, &user, "qacct", &["-j", "9001"]);

    // The daemon sets each aside with its reason and runs the genuine job.
    let d = SchedD::start(&cell, &[]);
    let expected = [
        ("9001.job", "a FIFO"),
        ("9002.job", "a socket"),
        ("9003.job", "a symbolic link"),
        ("9004.job", "a symbolic link"),
        ("9005.job", "a directory"),
        ("9006.job", "a character device"),
        ("000000009001.req", "a FIFO"),
        ("000000009002.req", "a symbolic link"),
        ("000000009003.req", "a directory"),
        ("000000009004.req", "a socket"),
        (&format!("{genuine}.exits"), "a FIFO"),
    ];
    wait_for("everything set aside", Duration::from_secs(20), || {
        expected.iter().all(|(n, _)| reason_of(&cell, n).is_some())
    });
    for (name, kind) in &expected {
        let reason = reason_of(&cell, name).unwrap_or_default();
        assert!(
            reason.contains(&format!("not a regular file ({kind})")),
            "{name}: {reason}"
        );
    }
    wait_for("genuine job's exit", Duration::from_secs(20), || {
        !exits(&cell.spool, genuine).is_empty()
    });
    assert_eq!(exits(&cell.spool, genuine)[0].exit_status, 7);
    // The job behind the link was never taken for a job of this cell.
    assert!(
        !d.log_text().contains("job=9004 job submitted"),
        "{}",
        d.log_text()
    );
    assert!(accounting_records(&cell, JobId(9004)).is_empty());

    // While it runs: new ones are set aside as they come, and jobs still run.
    mkfifo(&jobs.join("9011.job"));
    mkfifo(&requests.join("000000009011.req"));
    wait_for("new FIFOs set aside", Duration::from_secs(20), || {
        reason_of(&cell, "9011.job").is_some() && reason_of(&cell, "000000009011.req").is_some()
    });
    let after = submit(&cell.spool, "exit 0\n", |s, _| s.cwd = cwd(&dir));
    wait_for("a job after them", Duration::from_secs(20), || {
        !exits(&cell.spool, after).is_empty()
    });
    let listing = run_bounded(&cell, &user, "qstat", &["-u", "*"]);
    assert_eq!(listing.code, 0, "{listing:?}");
    assert!(
        !listing.stderr.contains("not a regular file"),
        "{listing:?}"
    );
}

/// A cell whose directory is a small `tmpfs` of its own (root only), unmounted when dropped.
struct TmpfsCell {
    cell: TestCell,
}

impl TmpfsCell {
    fn new(slots: u32) -> TmpfsCell {
        let cell = cell(slots);
        let saved = cell.root.join("cell.saved");
        let cp = |from: &Path, to: &Path| {
            let ok = std::process::Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", from.display()))
                .arg(to)
                .status()
                .expect("cp");
            assert!(ok.success(), "cp {} {}", from.display(), to.display());
        };
        std::fs::create_dir(&saved).expect("saved");
        cp(&cell.cell, &saved);
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs"])
            .arg(&cell.cell)
            .status()
            .expect("mount");
        assert!(mounted.success(), "mount tmpfs");
        cp(&saved, &cell.cell);
        TmpfsCell { cell }
    }

    /// Fills the file system (a file of zeros until the write fails); returns its path.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let path = self.cell.cell.join("filler");
        let mut f = std::fs::File::create(&path).expect("filler");
        let chunk = vec![0u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
        path
    }
}

impl Drop for TmpfsCell {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.cell.cell)
            .status();
    }
}

/// A job script that waits for `go` to exist, then exits with `code`.
fn held_by(go: &Path, code: i32) -> String {
    format!(
        "while [ ! -e {} ]; do sleep 0.05; done\nexit {code}\n",
        go.display()
    )
}

fn running(cell: &TestCell, id: JobId) -> bool {
    crate::sched::state(&cell.spool, id).is_some_and(|s| {
        s.tasks
            .running
            .first()
            .is_some_and(|r| r.state == gridspool::model::RunState::Running)
    })
}

fn blocked_retries(d: &SchedD) -> usize {
    d.log_text().matches("still blocked").count()
}

#[test]
fn a_full_disk_loses_no_end_records_none_twice_and_starts_nothing_until_space_returns() {
    const TEST: &str =
        "a_full_disk_loses_no_end_records_none_twice_and_starts_nothing_until_space_returns";
    let Some(user) = user1() else {
        return skip(TEST, "needs root (tmpfs mount, sgeuser)");
    };
    let t = TmpfsCell::new(2);
    let cell = &t.cell;
    let dir = workdir(cell);
    let marker = cell.spool.storage_blocked_path();
    let mut d = SchedD::start(cell, &["--retention", "600"]);

    // Two jobs hold both slots until `go` exists; two more wait for slots.
    let go = dir.join("go");
    let a = submit(&cell.spool, &held_by(&go, 3), |s, _| s.cwd = cwd(&dir));
    let b = submit(&cell.spool, &held_by(&go, 4), |s, _| s.cwd = cwd(&dir));
    wait_for("a and b running", Duration::from_secs(20), || {
        running(cell, a) && running(cell, b)
    });
    let c = submit(&cell.spool, "exit 5\n", |s, _| s.cwd = cwd(&dir));
    let e = submit(&cell.spool, "exit 6\n", |s, _| s.cwd = cwd(&dir));
    wait_for("c and e pending on disk", Duration::from_secs(20), || {
        crate::sched::state(&cell.spool, c).is_some()
            && crate::sched::state(&cell.spool, e).is_some()
    });
    let filler = t.fill();
    std::fs::write(&go, b"").expect("go");
    wait_for("storage blocked", Duration::from_secs(30), || {
        marker.exists()
    });
    // A few failed retries later: still nothing recorded, nothing started.
    wait_for("retries", Duration::from_secs(30), || {
        blocked_retries(&d) >= 3
    });
    for id in [a, b, c, e] {
        assert!(
            exits(&cell.spool, id).is_empty(),
            "job {id}: {}",
            d.log_text()
        );
        assert!(accounting_records(cell, id).is_empty());
    }
    for id in [c, e] {
        assert!(crate::sched::state(&cell.spool, id).is_some_and(|s| s.tasks.running.is_empty()));
    }
    let detail = run_bounded(cell, &user, "qstat", &["-j", &c.to_string()]);
    assert!(
        detail
            .stdout
            .contains(gridspool::spool::STORAGE_BLOCKED_REASON),
        "{detail:?}"
    );
    // A submission on the full disk fails cleanly and leaves nothing in jobs/.
    let before: Vec<_> = std::fs::read_dir(cell.spool.jobs_dir())
        .expect("jobs")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let script = cell.write_file(&user, "full.sh", "exit 0\n");
    let sub = run_bounded(cell, &user, "qsub", &[script.to_str().expect("path")]);
    assert_ne!(sub.code, 0, "{sub:?}");
    assert!(sub.stderr.starts_with("Unable to run job: "), "{sub:?}");
    assert!(
        sub.stderr.contains("jobs/") && sub.stderr.contains(".job: No space left on device"),
        "{sub:?}"
    );
    assert!(sub.stderr.ends_with("Exiting.\n"), "{sub:?}");
    let after: Vec<_> = std::fs::read_dir(cell.spool.jobs_dir())
        .expect("jobs")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(before, after);
    // No torn line either.
    let acct = std::fs::read(cell.spool.accounting_path()).unwrap_or_default();
    assert!(acct.is_empty() || acct.ends_with(b"\n"));

    // Space returns: everything is recorded once, in order, and the waiting jobs run.
    std::fs::remove_file(&filler).expect("free space");
    for id in [a, b, c, e] {
        wait_for("every job recorded", Duration::from_secs(30), || {
            !exits(&cell.spool, id).is_empty()
        });
    }
    wait_for("marker gone", Duration::from_secs(30), || !marker.exists());
    let statuses: Vec<i32> = [a, b, c, e]
        .iter()
        .map(|id| exits(&cell.spool, *id)[0].exit_status)
        .collect();
    assert_eq!(statuses, vec![3, 4, 5, 6]);
    for id in [a, b, c, e] {
        assert_eq!(exits(&cell.spool, id).len(), 1, "job {id}");
        assert_eq!(accounting_records(cell, id).len(), 1, "job {id}");
    }
    let log = d.log_text();
    assert_eq!(log.matches("storage blocked:").count(), 1, "{log}");
    assert_eq!(log.matches("storage unblocked").count(), 1, "{log}");

    // Blocked again, and sched_d killed (-9) meanwhile: the results wait on their hosts
    // (their supervisors keep trying to write them) for the next sched_d.
    let go2 = dir.join("go2");
    let f = submit(&cell.spool, &held_by(&go2, 7), |s, _| s.cwd = cwd(&dir));
    let g = submit(&cell.spool, &held_by(&go2, 8), |s, _| s.cwd = cwd(&dir));
    wait_for("f and g running", Duration::from_secs(20), || {
        running(cell, f) && running(cell, g)
    });
    let h = submit(&cell.spool, "exit 9\n", |s, _| s.cwd = cwd(&dir));
    wait_for("h pending on disk", Duration::from_secs(20), || {
        crate::sched::state(&cell.spool, h).is_some()
    });
    let filler = t.fill();
    std::fs::write(&go2, b"").expect("go2");
    let retries = blocked_retries(&d);
    wait_for("blocked again", Duration::from_secs(30), || {
        marker.exists() && blocked_retries(&d) >= retries + 2
    });
    d.signal(nix::sys::signal::Signal::SIGKILL);
    d.wait();
    std::fs::remove_file(&filler).expect("free space");
    let d2 = SchedD::start(cell, &["--retention", "600"]);
    for id in [f, g, h] {
        wait_for(
            "recorded after the restart",
            Duration::from_secs(60),
            || !exits(&cell.spool, id).is_empty(),
        );
    }
    let statuses: Vec<(i32, u32)> = [f, g, h]
        .iter()
        .map(|id| {
            let x = &exits(&cell.spool, *id)[0];
            (x.exit_status, x.failed)
        })
        .collect();
    assert_eq!(statuses, vec![(7, 0), (8, 0), (9, 0)], "{}", d2.log_text());
    for id in [a, b, c, e, f, g, h] {
        assert_eq!(exits(&cell.spool, id).len(), 1, "job {id}");
        assert_eq!(accounting_records(cell, id).len(), 1, "job {id}");
    }
}

#[test]
fn clients_meet_fifos_in_counters_defaults_and_configuration_without_hanging() {
    let Some(user) = user1() else {
        return skip(
            "clients_meet_fifos_in_counters_defaults_and_configuration_without_hanging",
            "needs root (sgeuser)",
        );
    };
    let cell = cell(1);
    let script = cell.write_file(&user, "j.sh", "exit 0\n");
    let script = script.to_str().expect("path");
    let fifo = |path: &Path| {
        let _ = std::fs::remove_file(path);
        mkfifo(path);
        set_mode(path, 0o666);
    };
    // The cluster's defaults file as a FIFO is skipped like an unreadable one.
    fifo(&cell.spool.cluster_sge_request());
    let first = run_bounded(&cell, &user, "qsub", &[script]);
    assert_eq!(first.code, 0, "{first:?}");
    // The job-id counter as a FIFO: the submission fails and says why.
    fifo(&cell.spool.seq_dir().join("jobid"));
    let sub = run_bounded(&cell, &user, "qsub", &[script]);
    assert_ne!(sub.code, 0, "{sub:?}");
    assert!(
        sub.stderr.contains("not a regular file (a FIFO)"),
        "{sub:?}"
    );
    // The configuration as a FIFO, then as a link: every command fails and says why.
    let config = cell.spool.config_path();
    let real = cell.cell.join("config.yaml.real");
    std::fs::rename(&config, &real).expect("move config");
    fifo(&config);
    let listing = run_bounded(&cell, &user, "qstat", &[]);
    assert_ne!(listing.code, 0, "{listing:?}");
    assert!(
        listing.stderr.contains("not a regular file (a FIFO)"),
        "{listing:?}"
    );
    std::fs::remove_file(&config).expect("fifo");
    std::os::unix::fs::symlink(&real, &config).expect("link");
    let listing = run_bounded(&cell, &user, "qstat", &[]);
    assert!(
        listing
            .stderr
            .contains("not a regular file (a symbolic link)"),
        "{listing:?}"
    );
}

#[test]
fn an_end_that_cannot_be_accounted_is_never_written_finished_and_survives_a_kill_9() {
    const TEST: &str =
        "an_end_that_cannot_be_accounted_is_never_written_finished_and_survives_a_kill_9";
    if !is_root() {
        return skip(
            TEST,
            "needs root (the job's result waits as root's shepherd)",
        );
    }
    let cell = cell(1);
    let dir = workdir(&cell);
    // Not a full disk: the accounting file alone cannot be appended to (a directory stands
    // in its place), while states could still be written.
    let accounting = cell.spool.accounting_path();
    let mut d = SchedD::start(&cell, &["--retention", "600"]);
    let go = dir.join("go");
    let a = submit(&cell.spool, &held_by(&go, 3), |s, _| s.cwd = cwd(&dir));
    wait_for("a running", Duration::from_secs(20), || running(&cell, a));
    let _ = std::fs::remove_file(&accounting);
    std::fs::create_dir(&accounting).expect("dir");
    let b = submit(&cell.spool, "exit 4\n", |s, _| s.cwd = cwd(&dir));
    wait_for("b pending on disk", Duration::from_secs(20), || {
        crate::sched::state(&cell.spool, b).is_some()
    });
    std::fs::write(&go, b"").expect("go");
    let marker = cell.spool.storage_blocked_path();
    wait_for("blocked", Duration::from_secs(30), || {
        marker.exists() && blocked_retries(&d) >= 2
    });
    // Its state still shows it running, and nothing else started.
    let on_disk = crate::sched::state(&cell.spool, a).expect("state");
    assert_eq!(on_disk.tasks.finished, 0, "{}", d.log_text());
    assert!(crate::sched::state(&cell.spool, b).is_some_and(|s| s.tasks.running.is_empty()));
    let why = std::fs::read_to_string(&marker).expect("marker");
    assert!(why.contains("not a regular file (a directory)"), "{why}");
    d.signal(nix::sys::signal::Signal::SIGKILL);
    d.wait();
    std::fs::remove_dir(&accounting).expect("rmdir");
    let d2 = SchedD::start(&cell, &["--retention", "600"]);
    for id in [a, b] {
        wait_for(
            "recorded after the restart",
            Duration::from_secs(60),
            || !exits(&cell.spool, id).is_empty(),
        );
    }
    let a_exit = &exits(&cell.spool, a)[0];
    assert_eq!(
        (a_exit.exit_status, a_exit.failed),
        (3, 0),
        "{}",
        d2.log_text()
    );
    for id in [a, b] {
        assert_eq!(accounting_records(&cell, id).len(), 1, "job {id}");
        assert_eq!(exits(&cell.spool, id).len(), 1, "job {id}");
    }
}

/// Issue 23: a job-id counter found empty (a crash, a hand) or garbled is rebuilt from the
/// highest id the cell has seen, so a job that ran and was retired (its files gone, its
/// accounting record left) never has its id handed out again.
#[test]
fn an_emptied_or_garbled_job_id_counter_never_hands_out_a_used_id_again() {
    let cell = cell(1);
    let d = SchedD::start(&cell, &["--retention", "0"]);
    let first = submit(&cell.spool, "exit 0\n", |s, _| s.cwd = cwd(&workdir(&cell)));
    wait_for("the job retired", Duration::from_secs(20), || {
        accounting_records(&cell, first).len() == 1 && !cell.spool.job_file(first).exists()
    });
    let counter = cell.spool.seq_dir().join("jobid");
    std::fs::write(&counter, "").expect("empty the counter");
    let second = cell.spool.allocate_job_id().expect("job id");
    assert!(
        second.0 > first.0,
        "job {first} handed out again as {second}"
    );
    std::fs::write(&counter, "\0\0\0\0\0\0\0\0\n").expect("garble the counter");
    let third = cell.spool.allocate_job_id().expect("job id");
    assert!(
        third.0 > first.0,
        "job {first} handed out again as {third}; log:\n{}",
        d.log_text()
    );
}
