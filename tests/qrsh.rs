//! `qrsh command`: the command runs on the granted host with qrsh's standard streams, as the
//! submitting user, and qrsh exits with its status; `-now y` on a full cell is refused with
//! SGE's words; `-help` is SGE's text.

use crate::sched::{SchedD, cwd, state, submit, wait_for, workdir};
use crate::support::*;
use std::time::Duration;

/// A cell of this host with `slots` slots and a TMPDIR of its own (see `{{tmpdir}}`).
pub(crate) fn cell(slots: u32) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: {slots}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: {slots}, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {{policy: sge}}\n"
        )
    })
}

#[test]
fn qrsh_runs_a_command_with_its_streams_and_exit_status() {
    let Some(user) = user1() else {
        return skip(
            "qrsh_runs_a_command_with_its_streams_and_exit_status",
            "needs the test users",
        );
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let host = gridspool::identity::short_hostname();
    let run = cell.run(&user, "qrsh", &["hostname"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (format!("{host}\n").as_str(), "", 0)
    );
    let run = cell.run(&user, "qrsh", &["id", "-un"]);
    assert_eq!(run.stdout, format!("{}\n", user.name), "{run:?}");
    let run = cell.run_with_stdin(&user, "qrsh", &["tr", "a-z", "A-Z"], Some("hello\n"));
    assert_eq!((run.stdout.as_str(), run.code), ("HELLO\n", 0), "{run:?}");
    let run = cell.run(&user, "qrsh", &["echo out; echo err >&2; exit 3"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        ("out\n", "err\n", 3),
        "{run:?}"
    );
    // Each ran as a job: named QRSH, accounted.
    let qacct = cell.run(&user, "qacct", &["-j", "QRSH"]);
    assert_eq!(
        qacct
            .stdout
            .lines()
            .filter(|l| l.starts_with("jobname"))
            .count(),
        4,
        "{qacct:?}"
    );
}

#[test]
fn qrsh_now_y_on_a_full_cell_is_refused_as_sge_refuses_it() {
    let Some(user) = user1() else {
        return skip(
            "qrsh_now_y_on_a_full_cell_is_refused_as_sge_refuses_it",
            "needs the test users",
        );
    };
    let cell = cell(1);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let busy = submit(&cell.spool, "sleep 30\n", |s, _| s.cwd = cwd(&dir));
    wait_for("the slot taken", Duration::from_secs(10), || {
        state(&cell.spool, busy).is_some_and(|s| !s.tasks.running.is_empty())
    });
    let run = cell.run(&user, "qrsh", &["true"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (
            "",
            "Your \"qrsh\" request could not be scheduled, try again later.\n",
            1
        )
    );
    // qsub -now y the same: sched_d removes the job its pass could not start.
    let run = cell.run(&user, "qsub", &["-now", "y", "-b", "y", "true"]);
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            "Waiting for immediate job to be scheduled.\n\nYour qsub request could not be scheduled; try again later.\n",
            1
        ),
        "{run:?}"
    );
    let root = root();
    if let Some(root) = root {
        let _ = cell.run(&root, "qdel", &["-u", "*"]);
    }
}

/// Runs `qrsh args` under a pseudo terminal (`script`), as `user`, with `input` typed.
fn on_terminal(cell: &TestCell, user: &TestUser, args: &str, input: &str) -> Run {
    on_terminal_as(cell, user, "qrsh", args, input)
}

fn on_terminal_as(cell: &TestCell, user: &TestUser, bin: &str, args: &str, input: &str) -> Run {
    let line = format!("{} {args}", client_path(bin).display());
    on_terminal_line(cell, user, bin, &line, input)
}

/// Runs the shell command `line` (which runs `bin`) under a pseudo terminal, as `user`.
fn on_terminal_line(cell: &TestCell, user: &TestUser, bin: &str, line: &str, input: &str) -> Run {
    use std::os::unix::process::CommandExt;
    // `script` with the environment, directory and identity the harness gives clients.
    let inner = cell.command(bin, user);
    let mut cmd = std::process::Command::new("script");
    cmd.env_clear();
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("TERM", "xterm")
        .current_dir(inner.get_current_dir().expect("workdir"));
    if nix::unistd::geteuid().is_root() && user.uid != 0 {
        cmd.uid(user.uid).gid(user.gid);
    }
    let child = cmd
        .args(["-q", "-e", "-c", line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => panic!("script: {e}"),
    };
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        // Typed after the session is up: the shell reads it from its terminal.
        std::thread::sleep(Duration::from_millis(1500));
        let _ = stdin.write_all(input.as_bytes());
        std::thread::sleep(Duration::from_millis(1500));
    }
    Run::from(child.wait_with_output().expect("script"))
}

#[test]
fn qrsh_gives_a_terminal_with_pty_y_and_a_login_shell_without_a_command() {
    let Some(user) = user1() else {
        return skip(
            "qrsh_gives_a_terminal_with_pty_y_and_a_login_shell_without_a_command",
            "needs the test users",
        );
    };
    if which("script").is_none() {
        return skip("qrsh_gives_a_terminal", "needs script (util-linux)");
    }
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let run = on_terminal(&cell, &user, "-pty y tty", "");
    assert!(run.stdout.contains("/dev/pts/"), "{run:?}");
    assert_eq!(run.code, 0, "{run:?}");
    // Without a command: the user's login shell, which reads what is typed.
    let run = on_terminal(&cell, &user, "", "echo sum=$((40+2))\nexit 7\n");
    assert!(run.stdout.contains("sum=42"), "{run:?}");
    assert_eq!(run.code, 7, "{run:?}");
    // qlogin: the same login, named QLOGIN.
    let run = on_terminal_as(&cell, &user, "qlogin", "", "echo who=$(id -un)\nexit\n");
    assert!(
        run.stdout.contains(&format!("who={}", user.name)),
        "{run:?}"
    );
    // What it did on the way, as SGE's qlogin says it.
    for said in [
        "(\"QLOGIN\") has been submitted",
        "waiting for interactive job to be scheduled ...",
        "has been successfully scheduled.",
        "Establishing builtin session to host ",
    ] {
        assert!(run.stdout.contains(said), "{said}: {run:?}");
    }
    assert_eq!(run.code, 0, "{run:?}");
    let qacct = cell.run(&user, "qacct", &["-j", "QLOGIN"]);
    assert!(qacct.stdout.contains("jobname      QLOGIN"), "{qacct:?}");
    // qrsh's terminal resized during the session: the command's follows (SIGWINCH there;
    // without it the command gives up after 10 s).
    let line = format!(
        "(sleep 2; stty rows 41 cols 101 </dev/tty) & {} -pty y 'trap \"stty size; exit 0\" WINCH; stty size; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done'",
        client_path("qrsh").display()
    );
    let run = on_terminal_line(&cell, &user, "qrsh", &line, "");
    assert!(run.stdout.contains("41 101"), "{run:?}");
    assert_eq!(run.code, 0, "{run:?}");
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.is_file())
}

#[test]
fn an_interrupted_qrsh_deletes_its_job() {
    let Some(user) = user1() else {
        return skip(
            "an_interrupted_qrsh_deletes_its_job",
            "needs the test users",
        );
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let mut child = cell
        .command("qrsh", &user)
        .args(["sleep", "60"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("qrsh");
    let id = gridspool::model::JobId(1);
    wait_for("the command runs", Duration::from_secs(20), || {
        state(&cell.spool, id).is_some_and(|s| {
            s.tasks
                .running
                .iter()
                .any(|r| r.state == gridspool::model::RunState::Running)
        })
    });
    // Ctrl-C.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    );
    wait_for("qrsh ends", Duration::from_secs(20), || {
        child.try_wait().ok().flatten().is_some()
    });
    wait_for(
        "the job accounted as killed",
        Duration::from_secs(20),
        || {
            crate::sched::accounting_records(&cell, id)
                .iter()
                .any(|r| r[11] == "100")
        },
    );
}

#[test]
fn qsh_is_refused_with_what_to_use_instead() {
    let run = Run::from(
        std::process::Command::new(bin_path("qsh"))
            .args(["-l", "h_rt=1:0:0"])
            .output()
            .expect("qsh"),
    );
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (
            "",
            "qsh: X11 sessions (qsh) are not offered by gridspool: use qlogin or qrsh -pty y for a terminal session\n",
            1
        )
    );
}

/// `qrsh -help` and `qlogin -help` print SGE 8.1.9's text, as recorded.
#[test]
fn qrsh_and_qlogin_help_are_sges() {
    for name in ["qrsh", "qlogin"] {
        let cap = Capture::load(&format!("{name}/help.txt"));
        let run = Run::from(
            std::process::Command::new(bin_path(name))
                .arg("-help")
                .output()
                .expect(name),
        );
        assert_matches(&run, &cap);
    }
}

/// qrsh's and qlogin's own wording for what qsub's parser and checks refuse (no `qsub:`, no
/// `Unable to run job`, exit 1), as recorded on SGE 8.1.9.
#[test]
fn qrsh_and_qlogin_report_submission_errors_as_sge_does() {
    let Some(user) = user1() else {
        return skip(
            "qrsh_and_qlogin_report_submission_errors_as_sge_does",
            "needs the test users",
        );
    };
    let cell = cell(1);
    for case in [
        "qrsh/bad-option",
        "qrsh/l-nosuch",
        "qrsh/q-nosuch",
        "qrsh/pe-nosuch",
        "qrsh/l-h_rt-bad",
        "qrsh/a-notadate",
        "qlogin/bad-option",
        "qlogin/l-nosuch",
    ] {
        let cap = Capture::load(&format!("{case}.txt"));
        let words = gridspool::compat::options::split_words(&cap.command);
        let (program, args) = words.split_first().expect("a command");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_matches(&cell.run(&user, program, &args), &cap);
    }
}

/// `-now y` on a cell with no free slot: qlogin says which job it submitted and that it
/// waited, then gives up in its own name; qrsh only gives up.
#[test]
fn qlogin_and_qrsh_now_y_on_a_full_cell_say_what_sge_says() {
    let (Some(user), Some(user2)) = (user1(), user2()) else {
        return skip(
            "qlogin_and_qrsh_now_y_on_a_full_cell_say_what_sge_says",
            "needs the test users",
        );
    };
    let cell = cell(1);
    let _d = SchedD::start(&cell, &[]);
    let run = cell.run(&user2, "qsub", &["-b", "y", "sleep", "300"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the slot taken", Duration::from_secs(20), || {
        cell.run(&user2, "qstat", &[]).stdout.contains(" r ")
    });
    let mut cap = Capture::load("qlogin/now-y-full.txt");
    let run = cell.run(&user, "qlogin", &["-now", "y"]);
    let id = run
        .stdout
        .strip_prefix("Your job ")
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no job submitted: {run:?}"));
    cap.stdout = cap
        .stdout
        .replace("Your job 18 ", &format!("Your job {id} "));
    assert_matches(&run, &cap);
    let cap = Capture::load("qrsh/now-y-full.txt");
    assert_matches(&cell.run(&user, "qrsh", &["-now", "y", "hostname"]), &cap);
}
