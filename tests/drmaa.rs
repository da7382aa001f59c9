//! `libdrmaa.so.1.0` (the `gridspool-drmaa` crate) against a live cell: a C program compiled
//! against `drmaa/include/drmaa.h` runs a small workflow (a job and its usage, a bulk job,
//! hold and release, suspend, resume and terminate, a job that ended before the wait, a second
//! session), as the test user, through the installed clients; `tests/drmaa/issue23.c` runs one
//! behaviour of Grid Engine's library at a time (a job that ends is never "does not exist",
//! commas in the job environment, waits on a job in `Eqw`, a signal's end is DONE, bulk ids,
//! a session taken up by contact, one state agent per session).

use crate::qrsh::cell;
use crate::sched::SchedD;
use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>/deps/libdrmaa.so`: `cargo test --workspace` builds it there with the
/// other members (the crate's own test needs it); `cargo build` puts a copy in
/// `target/<profile>`. The newer of the two.
fn library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe
        .ancestors()
        .find(|d| d.join("deps").is_dir())?
        .to_path_buf();
    [
        profile.join("deps/libdrmaa.so"),
        profile.join("libdrmaa.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command as `user` in the cell's environment, with the clients (the setgid copies the
/// other tests run) first in `PATH`, as `settings.sh` puts the installed ones.
fn as_user(cell: &TestCell, user: &TestUser, program: &std::path::Path) -> Command {
    // The copies are made as they are first asked for.
    for c in ["qstat", "qdel", "qhold", "qrls", "qmod"] {
        client_path(c);
    }
    let clients = client_path("qsub").parent().expect("dir").to_path_buf();
    let mut c = Command::new(program);
    c.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", clients.display()),
        )
        .env("HOME", &user.home)
        .env("USER", &user.name)
        .env("SGE_ROOT", &cell.root)
        .env("SGE_CELL", "default")
        .current_dir(cell.workdir(user));
    if is_root() && user.uid != 0 {
        use std::os::unix::process::CommandExt;
        c.uid(user.uid).gid(user.gid);
    }
    c
}

#[test]
fn a_c_program_runs_a_drmaa_workflow() {
    const TEST: &str = "a_c_program_runs_a_drmaa_workflow";
    let Some((lib, user)) = c_program_prerequisites(TEST) else {
        return;
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let exe = cell.root.join("workflow");
    compile_c(&lib, "workflow.c", &exe);
    // The library beside the program, under its soname, as an installation has it.
    std::fs::copy(&lib, cell.root.join("libdrmaa.so.1.0")).expect("copy");
    set_mode(&cell.root, 0o755);
    let run = Run::from(
        as_user(&cell, &user, &exe)
            .env("LD_LIBRARY_PATH", &cell.root)
            .output()
            .expect("run"),
    );
    let acct = std::fs::read_to_string(cell.cell.join("common/accounting")).unwrap_or_default();
    eprintln!("ACCT {acct}");
    // What the same program printed against SGE 8.1.9's libdrmaa (Debian's
    // gridengine-drmaa1.0; tests/compat/drmaa), but for the name of the DRM system.
    let sge =
        std::fs::read_to_string(repo().join("tests/compat/drmaa/c-workflow.out")).expect("capture");
    assert_eq!(
        run.stdout,
        sge.replace("drm SGE 8.1.9\n", "drm gridspool\n"),
        "{run:?}"
    );
}

/// A virtualenv with drmaa-python (PyPI's `drmaa`) that the test users can run, made once
/// per machine (Debian's python3 with venv, as `.ci/run` installs it). `Err` when it cannot be
/// made (no package index).
fn drmaa_python() -> Result<PathBuf, String> {
    let venv = PathBuf::from("/opt/gridspool-test/drmaa-venv-0.7.9");
    if venv.join("bin/python3").exists() && venv.join(".complete").exists() {
        return Ok(venv);
    }
    let parent = venv.parent().expect("parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    set_mode(parent, 0o755);
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("/usr/bin/python3: {e}"))?;
    if !made.success() {
        return Err("python3 -m venv failed (Debian package python3-venv)".into());
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "drmaa==0.7.9"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install drmaa failed: {}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&venv)
        .status()
        .map_err(|e| e.to_string())?;
    std::fs::write(venv.join(".complete"), "").map_err(|e| e.to_string())?;
    Ok(venv)
}

#[test]
fn drmaa_python_runs_a_workflow_with_our_library() {
    const TEST: &str = "drmaa_python_runs_a_workflow_with_our_library";
    let Some(lib) = library() else {
        panic!(
            "libdrmaa.so is not built: run `cargo test --workspace` (or `cargo build -p gridspool-drmaa`) first"
        );
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let venv = match drmaa_python() {
        Ok(p) => p,
        Err(e) => return skip(TEST, &format!("drmaa-python could not be installed: {e}")),
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    // $drmaa_hd_ph$/single.out: in the user's home, appended to (as `-o` files are).
    let _ = std::fs::remove_file(user.home.join("single.out"));
    // What a user changes to use gridspool: DRMAA_LIBRARY_PATH.
    let installed = cell.root.join("libdrmaa.so.1.0");
    std::fs::copy(&lib, &installed).expect("copy");
    set_mode(&cell.root, 0o755);
    let run = Run::from(
        as_user(&cell, &user, &venv.join("bin/python3"))
            .arg(repo().join("tests/drmaa/workflow.py"))
            .env("DRMAA_LIBRARY_PATH", &installed)
            .output()
            .expect("python3"),
    );
    // What the same program printed against SGE 8.1.9 with Debian's gridengine-drmaa1.0
    // (tests/compat/drmaa), but for the name of the DRM system.
    let sge = std::fs::read_to_string(repo().join("tests/compat/drmaa/python-workflow.out"))
        .expect("capture");
    assert_eq!(
        run.stdout,
        sge.replace("drm SGE\n", "drm gridspool\n"),
        "{run:?}"
    );
    let out = std::fs::read_to_string(user.home.join("single.out")).unwrap_or_default();
    assert_eq!(out, "hello from drmaa\n");
}

/// What a test of a C program needs: the library (its absence is a failure: the test suite
/// builds it) and a C compiler and the test users (without them the test skips, saying why).
fn c_program_prerequisites(test: &str) -> Option<(PathBuf, TestUser)> {
    let Some(lib) = library() else {
        panic!(
            "libdrmaa.so is not built: run `cargo test --workspace` (or `cargo build -p gridspool-drmaa`) first"
        );
    };
    if Command::new("gcc").arg("--version").output().is_err() {
        skip(test, "no C compiler (gcc)");
        return None;
    }
    let Some(user) = user1() else {
        skip(test, "needs the test users");
        return None;
    };
    Some((lib, user))
}

/// `tests/drmaa/issue23.c` built against the library, beside a copy of it under its soname,
/// in a directory the test users can read; `None` (the test skips, saying why) without a C
/// compiler or the test users.
fn issue23_program(test: &str) -> Option<(PathBuf, TestUser)> {
    let (lib, user) = c_program_prerequisites(test)?;
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("gridspool-drmaa-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::copy(&lib, dir.join("libdrmaa.so.1.0")).expect("copy");
        compile_c(&lib, "issue23.c", &dir.join("issue23"));
        set_mode(&dir, 0o755);
        dir
    });
    Some((dir.clone(), user))
}

/// Runs one scenario of `issue23.c` as `user` in `cell`.
fn issue23(cell: &TestCell, user: &TestUser, dir: &std::path::Path, args: &[&str]) -> Run {
    Run::from(
        as_user(cell, user, &dir.join("issue23"))
            .args(args)
            .env("LD_LIBRARY_PATH", dir)
            .output()
            .expect("run"),
    )
}

/// The program's `case` run once in a fresh cell of two slots with `sched_d` running;
/// `None` (skipped) where [`issue23_program`] says so.
fn issue23_case(test: &str, case: &str) -> Option<Run> {
    let (dir, user) = issue23_program(test)?;
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    Some(issue23(&cell, &user, &dir, &[case]))
}

/// A job polled with `drmaa_job_ps` until it ends is never said not to exist on the way
/// (the state was two looks at the cell: a job that ended between them was in neither).
#[test]
fn drmaa_job_ps_never_loses_a_job_that_ends() {
    let Some(run) = issue23_case("drmaa_job_ps_never_loses_a_job_that_ends", "race") else {
        return;
    };
    assert_eq!(run.stdout, "race: ended 8, does not exist 0\n", "{run:?}");
}

/// Job environment values with commas arrive whole (`qsub -v` splits its list at commas).
#[test]
fn drmaa_job_environment_keeps_commas() {
    let Some((dir, user)) = issue23_program("drmaa_job_environment_keeps_commas") else {
        return;
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let _ = std::fs::remove_file(user.home.join("commas.out"));
    let run = issue23(&cell, &user, &dir, &["commas"]);
    assert_eq!(run.stdout, "environment: 0,1|p,Z=q|unset|x\n", "{run:?}");
}

/// A job that cannot start sits in `Eqw`: waits time out until it is deleted, as Grid
/// Engine's do.
#[test]
fn drmaa_wait_keeps_waiting_for_a_job_in_error_state() {
    let Some(run) = issue23_case("drmaa_wait_keeps_waiting_for_a_job_in_error_state", "eqw") else {
        return;
    };
    // 23: DRMAA_ERRNO_EXIT_TIMEOUT.
    assert_eq!(
        run.stdout,
        "in error state: 1\nwait 2 s: 23\nsynchronize 2 s: 23\nstill FAILED\ndeleted: wait returned, aborted 1\n",
        "{run:?}"
    );
}

/// A job killed by a signal after it started is DONE (FAILED is for jobs that never ran),
/// and its wait status says the signal.
#[test]
fn drmaa_a_job_killed_by_a_signal_is_done() {
    let Some(run) = issue23_case("drmaa_a_job_killed_by_a_signal_is_done", "signal") else {
        return;
    };
    assert_eq!(
        run.stdout, "killed: DONE\nsignaled 1 SIGKILL, aborted 0\n",
        "{run:?}"
    );
}

/// A bulk job's bare id names none of its tasks (18: DRMAA_ERRNO_INVALID_JOB).
#[test]
fn drmaa_job_ps_of_a_bulk_jobs_bare_id_is_invalid() {
    let Some(run) = issue23_case("drmaa_job_ps_of_a_bulk_jobs_bare_id_is_invalid", "bulk") else {
        return;
    };
    assert_eq!(run.stdout, "task known: 1\nbare id: error 18\n", "{run:?}");
}

/// `drmaa_init` with an earlier session's contact (from another process) takes up its jobs:
/// they are the session's, and "terminate all" kills them.
#[test]
fn drmaa_init_with_a_contact_takes_up_the_sessions_jobs() {
    let Some((dir, user)) = issue23_program("drmaa_init_with_a_contact_takes_up_the_sessions_jobs")
    else {
        return;
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let first = issue23(&cell, &user, &dir, &["rejoin1"]);
    let words: Vec<&str> = first.stdout.split_whitespace().collect();
    let [contact, id] = words[..] else {
        panic!("{first:?}");
    };
    assert!(contact.starts_with("session="), "{first:?}");
    let run = issue23(&cell, &user, &dir, &["rejoin2", contact, id]);
    let state = run.stdout.lines().next().unwrap_or_default().to_string();
    assert!(
        state == "state of the earlier job: RUNNING"
            || state == "state of the earlier job: QUEUED_ACTIVE",
        "{run:?}"
    );
    assert_eq!(run.stdout.lines().nth(1), Some("wait: ended"), "{run:?}");
    let listed = cell.run(&user, "qstat", &[]);
    assert_eq!(listed.stdout, "", "{listed:?}");
}

/// The processes of `parent` named `comm`, as `/proc` shows them now.
fn children_named(parent: u32, comm: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid …`: the name may hold blanks, the fields after it not.
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let name = head.split_once(" (").map_or("", |(_, n)| n);
            let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok());
            name == comm && ppid == Some(parent)
        })
        .collect()
}

/// A session asks one process for its jobs' states, whatever the number of calls: the
/// `qstat --drmaa-agent` it started, not a `qstat` per `drmaa_job_ps`.
#[test]
fn drmaa_job_states_come_from_one_agent_per_session() {
    let Some((dir, user)) = issue23_program("drmaa_job_states_come_from_one_agent_per_session")
    else {
        return;
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let mut child = as_user(&cell, &user, &dir.join("issue23"))
        .arg("poll")
        .env("LD_LIBRARY_PATH", &dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let mut seen = std::collections::BTreeSet::new();
    while child.try_wait().expect("wait").is_none() {
        seen.extend(children_named(child.id(), "qstat"));
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let run = Run::from(child.wait_with_output().expect("output"));
    assert_eq!(run.stdout, "running 200\n", "{run:?}");
    assert_eq!(seen.len(), 1, "qstat processes of the session: {seen:?}");
}

/// The agent answers for its caller's jobs only (less than `qstat` shows the same user),
/// and says what holds a pending job: `-h` is the user's hold, `-hold_jid` a predecessor's.
#[test]
fn drmaa_agent_answers_for_the_callers_jobs_only() {
    const TEST: &str = "drmaa_agent_answers_for_the_callers_jobs_only";
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        return skip(TEST, "needs the test users");
    };
    let cell = cell(1);
    let id = |r: Run| -> String {
        assert_eq!(r.code, 0, "{r:?}");
        r.stdout.trim().to_string()
    };
    let others = id(cell.run(&u2, "qsub", &["-terse", "-b", "y", "sleep", "100"]));
    let held = id(cell.run(&u1, "qsub", &["-terse", "-h", "-b", "y", "true"]));
    let after = id(cell.run(
        &u1,
        "qsub",
        &["-terse", "-hold_jid", &held, "-t", "1-3", "-b", "y", "true"],
    ));
    // `-terse` of an array: `3.1-3:1`.
    let after = after.split('.').next().unwrap_or_default().to_string();
    let requests = format!("jobs\njob {others}\njob {after}\nbogus\n");
    let run = cell.run_with_stdin(&u1, "qstat", &["--drmaa-agent"], Some(&requests));
    assert_eq!(
        run.stdout,
        format!(
            "{held} 0 - hqw u\n{after} 1 1-3:1 hqw j\n.\n.\n{after} 1 1-3:1 hqw j\n.\n! unknown request \"bogus\"\n.\n"
        ),
        "{run:?}"
    );
    // A deletion not yet folded in by sched_d (none runs here) shows at once, in a job's
    // own answer as in the listing; its successor waits for nothing then.
    let deleted = cell.run(&u1, "qdel", &[&held]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    let requests = format!("job {held}\njob {after}\njobs\n");
    let run = cell.run_with_stdin(&u1, "qstat", &["--drmaa-agent"], Some(&requests));
    assert_eq!(
        run.stdout,
        format!(".\n{after} 1 1-3:1 qw -\n.\n{after} 1 1-3:1 qw -\n.\n"),
        "{run:?}"
    );
}

/// `drmaa_gridspool_estimated_start` (gridspool's extension; DRMAA 1.0 has no start-time
/// estimates) through `tests/drmaa/estimates.c`: one slot, held for 600 s by a job that
/// started at S; the program's job of 60 s is expected at S+600 (as `qstat -start` says), its
/// held job at no known time, its job for an architecture no host has never; a running job
/// and one that does not exist have no estimate (18: DRMAA_ERRNO_INVALID_JOB), a NULL
/// pointer is 4 (INVALID_ARGUMENT), a call without a session 5 (NO_ACTIVE_SESSION).
#[test]
fn drmaa_gridspool_estimated_start_gives_the_forecast() {
    const TEST: &str = "drmaa_gridspool_estimated_start_gives_the_forecast";
    let Some((lib, user)) = c_program_prerequisites(TEST) else {
        return;
    };
    let host = gridspool::identity::short_hostname();
    let cell = crate::estimates::one_slot_cell();
    let d = SchedD::start(&cell, &[]);
    let exe = cell.root.join("estimates");
    compile_c(&lib, "estimates.c", &exe);
    std::fs::copy(&lib, cell.root.join("libdrmaa.so.1.0")).expect("copy");
    set_mode(&cell.root, 0o755);
    let run = cell.run(
        &user,
        "qsub",
        &["-terse", "-b", "y", "-l", "h_rt=600", "sleep", "600"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let running: u32 = run.stdout.trim().parse().expect("job id");
    let started = || -> Option<i64> {
        let run = cell.run(&user, "qstat", &["-json"]);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).ok()?;
        v["jobs"].as_array()?.iter().find(|j| j["job"] == running)?["started"].as_i64()
    };
    d.wait_for(
        "the slot is taken",
        std::time::Duration::from_secs(30),
        || started().is_some(),
    );
    let s = started().expect("start");
    let run = Run::from(
        as_user(&cell, &user, &exe)
            .arg(running.to_string())
            .env("LD_LIBRARY_PATH", &cell.root)
            .output()
            .expect("run"),
    );
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 7, "{run:?}");
    assert!(lines[0].starts_with("no session: error 5 "), "{run:?}");
    assert_eq!(
        lines[1],
        format!("waiting: at {} all.q on {host} (1 slot)", s + 600),
        "{run:?}"
    );
    assert!(
        lines[2].starts_with("held: unknown ") && lines[2].contains("held"),
        "{run:?}"
    );
    assert!(
        lines[3].starts_with("never: never ") && lines[3].contains("arch=nowhere"),
        "{run:?}"
    );
    assert!(
        lines[4].starts_with("running: error 18 ") && lines[4].contains("has started"),
        "{run:?}"
    );
    assert!(
        lines[5].starts_with("gone: error 18 ") && lines[5].contains("does not exist"),
        "{run:?}"
    );
    assert_eq!(lines[6], "null: 4", "{run:?}");
}

/// Compiles `tests/drmaa/<source>` against the installed header and `lib` into `exe`.
fn compile_c(lib: &Path, source: &str, exe: &Path) {
    let cc = Command::new("gcc")
        .args(["-std=c99", "-Wall", "-Werror", "-D_DEFAULT_SOURCE", "-I"])
        .arg(repo().join("drmaa/include"))
        .arg(repo().join("tests/drmaa").join(source))
        .arg("-o")
        .arg(exe)
        .arg("-L")
        .arg(lib.parent().expect("dir"))
        .arg("-ldrmaa")
        .output()
        .expect("gcc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
}
