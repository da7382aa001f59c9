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
