//! Issue 12, with real jobs: the environment `qsub -V`/`-v` gives a job (`PATH` included) and
//! what `qsub -sync y` prints when a job ends by a signal, a limit or `qdel`. Every case
//! runs `qsub` as sgeuser against a real `sched_d`, which starts the job through the shepherd, and
//! compares with a capture of SGE 8.1.9 (`tests/compat/job/`, `tests/compat/qsub/sync-y-*`).

use crate::launch::{assert_env_like_capture, env_map};
use crate::sched::{SchedD, cell};
use crate::support::*;
use gridspool::model::JobId;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const SHEPHERD: &str = env!("CARGO_BIN_EXE_gridspool-shepherd");

/// Debian's user `PATH`, which the captures' sgeuser had (and `TestCell::command` sets).
const USER_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games";

struct Rig {
    cell: TestCell,
    user: TestUser,
    _daemon: SchedD,
}

impl Rig {
    /// A cell with `slots` slots on this host and its `sched_d`; `None` (test skipped) unless
    /// root, since jobs run as sgeuser.
    fn new(test: &str, slots: u32) -> Option<Rig> {
        let Some(user) = user1() else {
            skip(test, "needs root to run jobs as sgeuser");
            return None;
        };
        let cell = cell(slots);
        let daemon = SchedD::start(&cell, &[]);
        Some(Rig {
            cell,
            user,
            _daemon: daemon,
        })
    }

    fn workdir(&self) -> PathBuf {
        self.cell.workdir(&self.user)
    }

    /// `qsub args…` as sgeuser, started; `env` replaces the submit environment when given.
    fn qsub(&self, args: &[&str], env: Option<&[(&str, String)]>) -> Child {
        let mut cmd = self.cell.command("qsub", &self.user);
        if let Some(vars) = env {
            cmd.env_clear();
            for (k, v) in vars {
                cmd.env(k, v);
            }
        }
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn qsub")
    }

    fn run_qsub(&self, args: &[&str], env: Option<&[(&str, String)]>) -> Run {
        collect(self.qsub(args, env))
    }

    /// The task directory SGE calls `SGE_JOB_SPOOL_DIR` (and, unless `-cwd`, the `PWD` a job
    /// without a shell inherits).
    fn task_dir(&self, id: u32) -> String {
        gridspool::launch::exec_spool_dir(self.cell.spool.root(), &host())
            .join(format!("active_jobs/{id}.1"))
            .display()
            .to_string()
    }

    /// The values of a `-b y -shell no env` job (`-o`/`-e` into the work directory) that are
    /// paths or ids of this cell rather than of the oracle.
    fn overrides(&self, id: u32, name: &str) -> Vec<(&'static str, String)> {
        let wd = self.workdir().display().to_string();
        let home = self.user.home.display().to_string();
        let bin = Path::new(SHEPHERD)
            .parent()
            .expect("dir")
            .display()
            .to_string();
        vec![
            ("HOSTNAME", host()),
            ("SGE_O_HOST", host()),
            ("JOB_ID", id.to_string()),
            ("SGE_JOB_SPOOL_DIR", self.task_dir(id)),
            ("PWD", self.task_dir(id)),
            ("SGE_BINARY_PATH", bin),
            ("SGE_ROOT", self.cell.root.display().to_string()),
            ("SGE_O_WORKDIR", wd.clone()),
            ("HOME", home.clone()),
            ("SGE_O_HOME", home.clone()),
            ("SGE_CWD_PATH", home),
            ("SGE_STDOUT_PATH", format!("{wd}/{name}.out")),
            ("SGE_STDERR_PATH", format!("{wd}/{name}.err")),
            ("TMP", format!("/tmp/{id}.1.all.q")),
            ("TMPDIR", format!("/tmp/{id}.1.all.q")),
        ]
    }

    fn read(&self, file: &str) -> String {
        let p = self.workdir().join(file);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}

fn host() -> String {
    gridspool::identity::short_hostname()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The submit environment of the captures made with `env -i …` (plus the `PWD` that Debian's
/// `qsub` wrapper script, a shell, exports) for this cell.
fn bare_env(rig: &Rig, path: &str) -> Vec<(&'static str, String)> {
    let home = rig.user.home.display().to_string();
    vec![
        ("HOME", home.clone()),
        ("PATH", path.to_string()),
        ("FOO", "bar".into()),
        ("TERM", "xterm".into()),
        ("LOGNAME", rig.user.name.clone()),
        ("SHELL", "/bin/bash".into()),
        ("SGE_ROOT", rig.cell.root.display().to_string()),
        ("SGE_CELL", "default".into()),
        ("PWD", home),
    ]
}

// ---------------------------------------------------------------- the job's environment

/// The toil case: `qsub -V -b y -shell no prog` where `prog` is only on the submitter's
/// `PATH` (a virtualenv's `bin/`) runs, with `PATH` = `$TMPDIR:` + the submitter's `PATH`
/// (capture `job/V-shell-no-venv`). It failed with `failed 27: searching requested shell`
/// while the job's `PATH` was a fixed Debian path.
#[test]
fn qsub_v_runs_a_program_found_only_on_the_submitters_path() {
    let Some(rig) = Rig::new("qsub_v_runs_a_program_found_only_on_the_submitters_path", 2) else {
        return;
    };
    let bin = rig.workdir().join("venv/bin");
    std::fs::create_dir_all(&bin).expect("venv");
    let prog = bin.join("myprog");
    std::fs::write(&prog, "#!/bin/sh\necho hello from prog; echo PATH=$PATH\n").expect("prog");
    set_mode(&prog, 0o755);
    for d in [rig.workdir().join("venv"), bin.clone()] {
        set_mode(&d, 0o755);
    }
    let id = 7014;
    rig.cell.set_next_job_id(id);
    let wd = rig.workdir().display().to_string();
    let mut env = vec![
        ("HOME", rig.user.home.display().to_string()),
        ("PATH", format!("{}:{USER_PATH}", bin.display())),
        ("LOGNAME", rig.user.name.clone()),
        ("SHELL", "/bin/bash".into()),
        ("SGE_ROOT", rig.cell.root.display().to_string()),
        ("SGE_CELL", "default".into()),
    ];
    env.push(("USER", rig.user.name.clone()));
    let out = format!("{wd}/myprog.out");
    let run = rig.run_qsub(
        &[
            "-terse", "-sync", "y", "-V", "-b", "y", "-shell", "no", "-N", "myprog", "-o", &out,
            "myprog",
        ],
        Some(&env),
    );
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (format!("{id}\n").as_str(), "", 0)
    );
    let expected = Capture::load("job/V-shell-no-venv.txt")
        .stdout
        .replace("/tmp/14.1.all.q", &format!("/tmp/{id}.1.all.q"))
        .replace("/home/sgeuser/venv/bin", &bin.display().to_string());
    assert_eq!(rig.read("myprog.out"), expected);
}

/// `-b y -shell no env` without `-v`/`-V`: `PATH` = `$TMPDIR:` + SGE's built-in default, `TERM`
/// empty, `PWD` the shepherd's (the task directory).
#[test]
fn environment_of_a_job_without_shell_matches_sge() {
    let Some(rig) = Rig::new("environment_of_a_job_without_shell_matches_sge", 2) else {
        return;
    };
    let wd = rig.workdir().display().to_string();
    let (o, e) = (format!("{wd}/envnoV.out"), format!("{wd}/envnoV.err"));
    let id = 7015;
    rig.cell.set_next_job_id(id);
    let run = rig.run_qsub(
        &[
            "-terse", "-sync", "y", "-b", "y", "-shell", "no", "-N", "envnoV", "-o", &o, "-e", &e,
            "env",
        ],
        None,
    );
    assert_eq!((run.stderr.as_str(), run.code), ("", 0));
    let mut ours = rig.overrides(id, "envnoV");
    ours.push((
        "PATH",
        format!("/tmp/{id}.1.all.q:/usr/local/bin:/bin:/usr/bin"),
    ));
    assert_env_like_capture(&rig.read("envnoV.out"), "job/shell-no-env.txt", &ours);

    // `-cwd`: SGE sets PWD to it.
    let id = 7021;
    rig.cell.set_next_job_id(id);
    let mut env = bare_env(&rig, "/usr/bin:/bin");
    env.retain(|(k, _)| !matches!(*k, "FOO" | "TERM" | "PWD"));
    let run = rig.run_qsub(
        &[
            "-terse", "-sync", "y", "-cwd", "-b", "y", "-shell", "no", "-N", "envcwd", "env",
        ],
        Some(&env),
    );
    assert_eq!((run.stderr.as_str(), run.code), ("", 0));
    let mut ours = rig.overrides(id, "envcwd");
    ours.retain(|(k, _)| !k.starts_with("SGE_STD"));
    ours.extend([
        (
            "PATH",
            format!("/tmp/{id}.1.all.q:/usr/local/bin:/bin:/usr/bin"),
        ),
        ("PWD", wd.clone()),
        ("SGE_CWD_PATH", wd.clone()),
        ("SGE_STDOUT_PATH", format!("{wd}/envcwd.o{id}")),
        ("SGE_STDERR_PATH", format!("{wd}/envcwd.e{id}")),
    ]);
    assert_env_like_capture(
        &rig.read(&format!("envcwd.o{id}")),
        "job/V-cwd-shell-no-env.txt",
        &ours,
    );
}

/// `-v` with SGE's own names: `PATH` goes behind `$TMPDIR:`, `TERM` and unknown names (`FOO`,
/// `SGE_FOO`, `PE` outside a PE) pass, every variable SGE sets (`HOME`, `SHELL`, `JOB_ID`,
/// `SGE_TASK_ID`, `SGE_O_HOME`, `SGE_CWD_PATH`, `SGE_STDOUT_PATH`…) is SGE's.
#[test]
fn v_list_with_sge_names_matches_sge() {
    let Some(rig) = Rig::new("v_list_with_sge_names_matches_sge", 2) else {
        return;
    };
    let wd = rig.workdir().display().to_string();
    for (id, name, list, capture) in [
        (
            7016,
            "envv",
            "PATH=/opt/x:/bin,HOME=/nowhere,TMPDIR=/x,SHELL=/bin/zsh,TERM=vt100,LOGNAME=zz,FOO=bar",
            "job/v-list-shell-no-env.txt",
        ),
        (
            7017,
            "envsge",
            "SGE_TASK_ID=9,SGE_FOO=bar,SGE_O_HOME=/x,SGE_CWD_PATH=/y,SGE_STDOUT_PATH=/z,SGE_BINARY_PATH=/b,JOB_ID=77,PE=mine,ENVIRONMENT=mine",
            "job/v-sge-prefixed-shell-no-env.txt",
        ),
    ] {
        rig.cell.set_next_job_id(id);
        let (o, e) = (format!("{wd}/{name}.out"), format!("{wd}/{name}.err"));
        let run = rig.run_qsub(
            &[
                "-terse", "-sync", "y", "-v", list, "-b", "y", "-shell", "no", "-N", name, "-o",
                &o, "-e", &e, "env",
            ],
            None,
        );
        assert_eq!((run.stderr.as_str(), run.code), ("", 0), "{capture}");
        let path = Capture::load(capture).stdout;
        let path = env_map(&path)["PATH"].replacen(
            &format!("/tmp/{}.1.all.q", &capture_id(capture)),
            &format!("/tmp/{id}.1.all.q"),
            1,
        );
        let mut ours = rig.overrides(id, name);
        ours.push(("PATH", path));
        assert_env_like_capture(&rig.read(&format!("{name}.out")), capture, &ours);
    }
}

/// The job id of a capture (its `JOB_ID=` line).
fn capture_id(capture: &str) -> String {
    env_map(&Capture::load(capture).stdout)["JOB_ID"].clone()
}

/// `-V` passes the whole submit environment: without a shell the job sees it (its `PATH`
/// behind `$TMPDIR:`); through the queue's login shell `sh` (`-b y`, or a script) Debian's
/// `/etc/profile` resets `PATH`, as under SGE, and `$0` is the script's path.
#[test]
fn qsub_v_environment_with_and_without_the_login_shell_matches_sge() {
    let Some(rig) = Rig::new(
        "qsub_v_environment_with_and_without_the_login_shell_matches_sge",
        2,
    ) else {
        return;
    };
    let wd = rig.workdir().display().to_string();
    let env = bare_env(&rig, "/home/sgeuser/venv/bin:/usr/bin:/bin");
    for (id, name, shell, capture) in [
        (7018, "envV", "no", "job/V-shell-no-env.txt"),
        (7019, "envVs", "yes", "job/V-shell-yes-env.txt"),
    ] {
        rig.cell.set_next_job_id(id);
        let (o, e) = (format!("{wd}/{name}.out"), format!("{wd}/{name}.err"));
        let run = rig.run_qsub(
            &[
                "-terse", "-sync", "y", "-V", "-b", "y", "-shell", shell, "-N", name, "-o", &o,
                "-e", &e, "env",
            ],
            Some(&env),
        );
        assert_eq!((run.stderr.as_str(), run.code), ("", 0), "{capture}");
        let mut ours = rig.overrides(id, name);
        ours.retain(|(k, _)| *k != "PWD");
        if shell == "no" {
            ours.push((
                "PATH",
                format!("/tmp/{id}.1.all.q:/home/sgeuser/venv/bin:/usr/bin:/bin"),
            ));
        }
        assert_env_like_capture(&rig.read(&format!("{name}.out")), capture, &ours);
    }

    // A script job: `$0`, then `env | sort`.
    let script = rig
        .cell
        .write_file(&rig.user, "envscr.sh", "#!/bin/sh\necho $0\nenv | sort\n");
    let id = 7020;
    rig.cell.set_next_job_id(id);
    let (o, e) = (format!("{wd}/envVscr.out"), format!("{wd}/envVscr.err"));
    let run = rig.run_qsub(
        &[
            "-terse",
            "-sync",
            "y",
            "-V",
            "-N",
            "envVscr",
            "-o",
            &o,
            "-e",
            &e,
            &script.display().to_string(),
        ],
        Some(&env),
    );
    assert_eq!((run.stderr.as_str(), run.code), ("", 0));
    let out = rig.read("envVscr.out");
    let job_script = format!("{}/job_script", rig.task_dir(id));
    assert_eq!(out.lines().next(), Some(job_script.as_str()), "$0");
    let mut ours = rig.overrides(id, "envVscr");
    ours.retain(|(k, _)| *k != "PWD");
    ours.push(("JOB_SCRIPT", job_script));
    assert_env_like_capture(&out, "job/V-script-env.txt", &ours);
}

// ---------------------------------------------------------------- -sync y

/// Runs `qsub args…` as a capture did, with the capture's job id, and compares what it
/// printed. `-cwd` is added so that the job's output files stay in the cell.
fn sync_case(rig: &Rig, case: &str, id: u32, args: &[&str]) {
    rig.cell.set_next_job_id(id);
    let mut all = vec!["-cwd"];
    all.extend_from_slice(args);
    let run = rig.run_qsub(&all, None);
    assert_matches(&run, &Capture::load(&format!("qsub/{case}.txt")));
}

/// `h_rt`, `s_rt` and a job that kills itself: SGE reports the signal that ended the job
/// (`exited because of signal SIGKILL`, exit 1), not its exit status 128 + signal; `-terse`
/// hides only the exit-0 line.
#[test]
fn sync_y_reports_signals_as_sge_does() {
    let Some(rig) = Rig::new("sync_y_reports_signals_as_sge_does", 2) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "killself.sh",
        "#!/bin/sh\nkill -TERM $$\necho not reached\n",
    );
    rig.cell
        .write_file(&rig.user, "sleep60.sh", "#!/bin/sh\nsleep 60\n");
    let h_rt = ["-sync", "y", "-l", "h_rt=0:0:3", "-b", "y", "sleep", "60"];
    sync_case(&rig, "sync-y-h_rt", 22, &h_rt);
    sync_case(
        &rig,
        "sync-y-h_rt-script",
        34,
        &["-sync", "y", "-l", "h_rt=0:0:3", "sleep60.sh"],
    );
    sync_case(
        &rig,
        "sync-y-h_rt-terse",
        35,
        &[
            "-sync",
            "y",
            "-terse",
            "-l",
            "h_rt=0:0:3",
            "-b",
            "y",
            "sleep",
            "60",
        ],
    );
    sync_case(
        &rig,
        "sync-y-s_rt",
        23,
        &["-sync", "y", "-l", "s_rt=0:0:3", "-b", "y", "sleep", "60"],
    );
    sync_case(&rig, "sync-y-kill-self", 24, &["-sync", "y", "killself.sh"]);
}

/// An array with one task killed: each task's line, in the order they ended (one slot: 1, 2,
/// 3), exit 1 from the signal.
#[test]
fn sync_y_array_with_a_killed_task_matches_sge() {
    let Some(rig) = Rig::new("sync_y_array_with_a_killed_task_matches_sge", 1) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "arrkill.sh",
        "#!/bin/sh\n[ \"$SGE_TASK_ID\" = 2 ] && kill -KILL $$\nexit 0\n",
    );
    sync_case(
        &rig,
        "sync-y-array-task-killed",
        31,
        &["-sync", "y", "-t", "1-3", "arrkill.sh"],
    );
}

/// `qdel` while `-sync y` waits, of a running and of a pending job: SGE's qmaster commits a
/// deleted task as one that never ran, so qsub says `Unable to run job N`, exit 0 (it said
/// `Job N exited with exit code 137.` and exited 137 for the running one).
#[test]
fn sync_y_of_a_deleted_job_matches_sge() {
    let Some(rig) = Rig::new("sync_y_of_a_deleted_job_matches_sge", 2) else {
        return;
    };
    for (case, id, args) in [
        (
            "sync-y-qdel-running",
            32,
            &[
                "-cwd",
                "-sync",
                "y",
                "-N",
                "syncdelrun",
                "-b",
                "y",
                "sleep",
                "60",
            ][..],
        ),
        (
            "sync-y-qdel-pending",
            33,
            &[
                "-cwd",
                "-sync",
                "y",
                "-h",
                "-N",
                "syncdelpend",
                "-b",
                "y",
                "true",
            ][..],
        ),
    ] {
        rig.cell.set_next_job_id(id);
        let child = rig.qsub(args, None);
        if case.ends_with("running") {
            wait_for("the job to run", || {
                rig.cell.job(id).is_some_and(|j| {
                    j.tasks
                        .running
                        .iter()
                        .any(|t| t.state == gridspool::model::RunState::Running)
                })
            });
        } else {
            wait_for("the job file", || {
                rig.cell.spool.job_file(JobId(id)).exists()
            });
        }
        let del = rig.cell.run(&rig.user, "qdel", &[&id.to_string()]);
        assert_eq!(del.code, 0, "{del:?}");
        assert_matches(&collect(child), &Capture::load(&format!("qsub/{case}.txt")));
    }
}

/// A job that cannot start through its own fault (`-b y -shell no` of a missing command,
/// `failed` 27) goes to error state (`Eqw`) as in SGE, and `qsub -sync y` keeps waiting
/// until it is deleted: `Unable to run job 25`, exit 0. It used to end, and qsub said
/// `Job 25 exited with exit code 0.`, exit 0, as if it had run.
#[test]
fn sync_y_waits_for_a_job_in_error_state_until_it_is_deleted() {
    let Some(rig) = Rig::new(
        "sync_y_waits_for_a_job_in_error_state_until_it_is_deleted",
        2,
    ) else {
        return;
    };
    let id = 25;
    rig.cell.set_next_job_id(id);
    let mut child = rig.qsub(
        &[
            "-cwd",
            "-sync",
            "y",
            "-b",
            "y",
            "-shell",
            "no",
            "/no/such/binary",
        ],
        None,
    );
    wait_for("error state", || {
        rig.cell.job(id).is_some_and(|j| j.error.is_some())
    });
    let job = rig.cell.job(id).expect("job");
    assert!(
        job.tasks.running.is_empty() && job.tasks.finished == 0,
        "{job:?}"
    );
    assert!(
        child.try_wait().expect("qsub").is_none(),
        "qsub still waits"
    );
    let del = rig.cell.run(&rig.user, "qdel", &[&id.to_string()]);
    assert_eq!(del.code, 0, "{del:?}");
    assert_matches(
        &collect(child),
        &Capture::load("qsub/sync-y-shell-no-nonexistent.txt"),
    );
}

/// Tasks are reported in the order they end, as SGE's `japi_wait` for any task returns them
/// (task 2 before task 1, which sleeps); it printed them in task order.
#[test]
fn sync_y_reports_array_tasks_in_the_order_they_end() {
    let Some(rig) = Rig::new("sync_y_reports_array_tasks_in_the_order_they_end", 2) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "order.sh",
        "#!/bin/sh\n[ \"$SGE_TASK_ID\" = 1 ] && sleep 4\nexit 0\n",
    );
    sync_case(
        &rig,
        "sync-y-array-finish-order",
        77,
        &["-sync", "y", "-t", "1-2", "order.sh"],
    );
}

/// `h_vmem` is the job's address-space limit: an allocation beyond it fails (Python's
/// `MemoryError`, exit 1), and a shell that keeps growing dies of `SIGSEGV`, which qsub
/// reports as the signal.
#[test]
fn sync_y_reports_h_vmem_failures_as_sge_does() {
    let Some(rig) = Rig::new("sync_y_reports_h_vmem_failures_as_sge_does", 2) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "vmem.sh",
        "#!/bin/sh\nexec python3 -c \"x = bytearray(1000 * 1024 * 1024)\"\n",
    );
    rig.cell.write_file(
        &rig.user,
        "vmemgrow.sh",
        "#!/bin/sh\nx=a\nwhile :; do x=\"$x$x\"; done\n",
    );
    sync_case(
        &rig,
        "sync-y-h_vmem",
        75,
        &["-sync", "y", "-l", "h_vmem=200M", "vmem.sh"],
    );
    sync_case(
        &rig,
        "sync-y-h_vmem-shell-grows",
        76,
        &["-sync", "y", "-l", "h_vmem=100M", "vmemgrow.sh"],
    );
}

/// Each task's line is printed as soon as the task has ended, as SGE's qsub does, not when
/// the whole array is done: task 2 waits (at most a minute) for a file the test creates
/// only after it has read task 1's line.
#[test]
fn sync_y_prints_each_task_as_it_ends() {
    use std::io::BufRead;
    let Some(rig) = Rig::new("sync_y_prints_each_task_as_it_ends", 2) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "waitgo.sh",
        "#!/bin/sh\n[ \"$SGE_TASK_ID\" = 1 ] && exit 0\n\
         i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n\
         [ -e go ] && echo go seen || echo timed out\n",
    );
    let id = 7078;
    rig.cell.set_next_job_id(id);
    let mut child = rig.qsub(&["-cwd", "-sync", "y", "-t", "1-2", "waitgo.sh"], None);
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || lines.next().expect("a line").expect("read");
    assert_eq!(
        next(),
        format!("Your job-array {id}.1-2:1 (\"waitgo.sh\") has been submitted")
    );
    assert_eq!(next(), format!("Job {id}.1 exited with exit code 0."));
    std::fs::write(rig.workdir().join("go"), "").expect("go");
    assert_eq!(next(), format!("Job {id}.2 exited with exit code 0."));
    assert_eq!(child.wait().expect("qsub").code(), Some(0));
    assert_eq!(rig.read(&format!("waitgo.sh.o{id}.2")), "go seen\n");
}

/// `s_rt`: the job is warned with `SIGUSR1` and not killed; one that traps it runs on, and
/// `-sync y` waits until it is deleted (capture: SGE re-sends the warning about every
/// minute, see DIVERGENCES.md).
#[test]
fn sync_y_of_a_job_that_traps_the_s_rt_warning_matches_sge() {
    let Some(rig) = Rig::new("sync_y_of_a_job_that_traps_the_s_rt_warning_matches_sge", 2) else {
        return;
    };
    rig.cell.write_file(
        &rig.user,
        "trapusr1.sh",
        "#!/bin/sh\ntrap \"echo got USR1\" USR1\nwhile :; do sleep 1; done\n",
    );
    let id = 36;
    rig.cell.set_next_job_id(id);
    let child = rig.qsub(
        &["-cwd", "-sync", "y", "-l", "s_rt=0:0:3", "trapusr1.sh"],
        None,
    );
    let out = rig.workdir().join(format!("trapusr1.sh.o{id}"));
    wait_for("the warning", || {
        std::fs::read_to_string(&out).is_ok_and(|s| s.contains("got USR1"))
    });
    let del = rig.cell.run(&rig.user, "qdel", &[&id.to_string()]);
    assert_eq!(del.code, 0, "{del:?}");
    assert_matches(
        &collect(child),
        &Capture::load("qsub/sync-y-s_rt-trapped.txt"),
    );
}
