//! `sched_d` as a real process on a temporary cell: jobs published through the library,
//! observed through state files, exits files and processes. Every daemon is stopped by PID.

use crate::support::*;
use gridspool::identity::Caller;
use gridspool::model::{
    FinishedTask, Holds, JobId, JobRecord, JobSpec, JobSubmission, RequestAction, Requester,
    RunState, Submitter, TaskSelector,
};
use gridspool::spool::Spool;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A cell whose one host is this host with `slots` slots.
pub(crate) fn cell(slots: u32) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: {slots}}}\nhostgroups:\n  \"@allhosts\": [\"{host}\"]\nqueues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: {slots}, pe_list: [smp]}}\nparallel_environments:\n  - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\nscheduler: {{policy: sge}}\n"
        )
    })
}

/// A running `sched_d`, killed by PID when dropped.
pub(crate) struct SchedD {
    child: Option<Child>,
    log: PathBuf,
}

impl SchedD {
    pub(crate) fn start(cell: &TestCell, extra: &[&str]) -> SchedD {
        let d = Self::spawn(cell, extra);
        let pid_file = cell.cell.join("daemon/sched_d.pid");
        let pid = d.pid();
        wait_for("sched_d pid file", Duration::from_secs(10), || {
            std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                == Some(pid)
        });
        d
    }

    /// Starts `sched_d` without waiting for it to hold the cell (a shadow holds nothing
    /// until it takes over).
    pub(crate) fn spawn(cell: &TestCell, extra: &[&str]) -> SchedD {
        Self::spawn_with(cell, extra, &[])
    }

    /// [`SchedD::spawn`] through `prefix`, a command that runs the program and arguments
    /// after it (to run `sched_d` in a namespace).
    pub(crate) fn spawn_with(cell: &TestCell, extra: &[&str], prefix: &[String]) -> SchedD {
        let log = cell
            .root
            .join(format!("sched_d.{}.stderr", std::process::id()));
        let err = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("log");
        let retention: &[&str] = if extra.contains(&"--retention") {
            &[]
        } else {
            &["--retention", "3"]
        };
        let mut cmd = match prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(bin_path("sched_d"));
                c
            }
            None => Command::new(bin_path("sched_d")),
        };
        cmd.arg("--spool")
            .arg(&cell.cell)
            .args(retention)
            .args(["--log-level", "debug"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        let child = cmd.spawn().expect("spawn sched_d");
        SchedD {
            child: Some(child),
            log,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    pub(crate) fn signal(&self, sig: Signal) {
        let _ = kill(Pid::from_raw(self.pid() as i32), sig);
    }

    /// Waits for the process to exit; returns its exit code.
    pub(crate) fn wait(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                return st.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sched_d did not exit; log:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// [`wait_for`], with this daemon's log in the message when it times out.
    pub(crate) fn wait_for(&self, what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !cond() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; sched_d's log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for SchedD {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGKILL);
            let _ = c.wait();
        }
    }
}

/// A `qconf` change as root, once the cell's `sched_d` (started by [`SchedD`], which logs to
/// `sched_d.PID.stderr` in the cell's root) has reloaded it: a job submitted in the same
/// instant could otherwise meet the configuration before it.
pub(crate) fn qconf_reloaded(cell: &TestCell, root: &TestUser, args: &[&str]) {
    let log = cell
        .root
        .join(format!("sched_d.{}.stderr", std::process::id()));
    let reloads = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("configuration reloaded")
            .count()
    };
    let before = reloads();
    let run = cell.run(root, "qconf", args);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for(
        "sched_d reloads the configuration",
        Duration::from_secs(10),
        || reloads() > before,
    );
}

pub(crate) fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn me() -> Caller {
    Caller::from_kernel().expect("caller")
}

/// Publishes a job as the calling user, as qsub would; returns its id.
pub(crate) fn submit(
    spool: &Spool,
    script: &str,
    edit: impl FnOnce(&mut JobSpec, &mut Holds),
) -> JobId {
    let caller = me();
    let id = spool.allocate_job_id().expect("job id");
    let mut spec = JobSpec {
        name: "job.sh".into(),
        script_file: "job.sh".into(),
        ..JobSpec::default()
    };
    let mut holds = Holds::NONE;
    edit(&mut spec, &mut holds);
    let sub = JobSubmission {
        v: 1,
        id,
        submitter: Submitter {
            sge_o_path: "/usr/bin:/bin".into(),
            ..Submitter::new(&caller, &gridspool::identity::short_hostname(), "/tmp")
        },
        spec,
        holds,
    };
    spool.publish_job(&sub, script.as_bytes()).expect("publish");
    id
}

/// Waits until the job's first task runs (`r`).
pub(crate) fn wait_running(spool: &Spool, id: JobId) {
    wait_for("running", Duration::from_secs(10), || {
        state(spool, id).is_some_and(|s| {
            s.tasks
                .running
                .first()
                .is_some_and(|r| r.state == RunState::Running)
        })
    });
}

/// `qdel id` as `who`, published as the client publishes it.
pub(crate) fn qdel(spool: &Spool, who: Requester, id: JobId) {
    spool
        .publish_request(
            who,
            vec![RequestAction::Delete {
                job: id,
                tasks: TaskSelector::All,
                force: false,
            }],
        )
        .expect("qdel request");
}

pub(crate) fn requester(uid: u32) -> Requester {
    Requester {
        uid,
        user: me().user,
        host: gridspool::identity::short_hostname(),
        manager: false,
        operator: false,
    }
}

pub(crate) fn state(spool: &Spool, id: JobId) -> Option<JobRecord> {
    let bytes = std::fs::read(spool.state_file(id)).ok()?;
    // A listing summary line, then the record (spool/README.md): the record is the last line.
    let record = bytes.split(|b| *b == b'\n').next_back()?;
    serde_json::from_slice(record).ok()
}

pub(crate) fn exits(spool: &Spool, id: JobId) -> Vec<FinishedTask> {
    std::fs::read_to_string(spool.exits_file(id))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn workdir(cell: &TestCell) -> PathBuf {
    let d = cell.root.join("work");
    std::fs::create_dir_all(&d).expect("workdir");
    d
}

pub(crate) fn cwd(dir: &Path) -> Option<String> {
    Some(dir.to_string_lossy().into_owned())
}

pub(crate) fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn sched_d_runs_a_job_records_its_exit_and_retires_it() {
    let cell = cell(2);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "echo hello from $JOB_ID\nexit 3\n", |s, _| {
        s.cwd = cwd(&dir)
    });
    wait_for("exit line", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
    let e = exits(&cell.spool, id);
    assert_eq!((e[0].task, e[0].exit_status, e[0].failed), (1, 3, 0));
    let out = std::fs::read_to_string(dir.join(format!("job.sh.o{id}"))).expect("stdout file");
    assert_eq!(out, format!("hello from {id}\n"));
    // The exits line is written before the state (see sched::daemon): wait for both.
    wait_for("finished state", Duration::from_secs(10), || {
        state(&cell.spool, id).is_some_and(|s| s.tasks.finished == 1 && s.tasks.running.is_empty())
    });
    // Retention (3 s) over, every file of the job goes.
    wait_for("retirement", Duration::from_secs(10), || {
        !cell.spool.job_file(id).exists() && !cell.spool.exits_file(id).exists()
    });
}

#[test]
fn a_second_sched_d_on_the_same_spool_refuses() {
    let cell = cell(1);
    let _d = SchedD::start(&cell, &[]);
    let out = Command::new(bin_path("sched_d"))
        .arg("--spool")
        .arg(&cell.cell)
        .output()
        .expect("run");
    // 3: a service manager does not start it again (sched::mastership::EXIT_CELL_TAKEN).
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another sched_d"), "{err}");
}

#[test]
fn jobs_wait_for_slots_dependencies_and_holds() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let order = dir.join("order");
    let o = order.display().to_string();
    let a = submit(&cell.spool, &format!("echo a >> {o}; sleep 0.5"), |s, _| {
        s.cwd = cwd(&dir)
    });
    let b = submit(&cell.spool, &format!("echo b >> {o}"), |s, _| {
        s.cwd = cwd(&dir);
        s.predecessors = vec![JobId(a.0 + 2)];
    });
    let c = submit(&cell.spool, &format!("echo c >> {o}"), |s, _| {
        s.cwd = cwd(&dir)
    });
    let held = submit(&cell.spool, &format!("echo held >> {o}"), |s, h| {
        s.cwd = cwd(&dir);
        h.user = true;
    });
    wait_for("b ran", Duration::from_secs(20), || {
        !exits(&cell.spool, b).is_empty()
    });
    assert_eq!(std::fs::read_to_string(&order).expect("order"), "a\nc\nb\n");
    let st = state(&cell.spool, held).expect("state of held job");
    assert!(
        st.pending_reasons.iter().any(|r| r.contains("hold")),
        "{:?}",
        st.pending_reasons
    );
    assert_eq!(st.priority.expect("priority").prio, 0.0);
    let _ = c;
}

#[test]
fn sigterm_drains_and_a_restart_reattaches_without_running_twice() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let count = dir.join("count");
    let mut d = SchedD::start(&cell, &[]);
    let id = submit(
        &cell.spool,
        &format!("echo run >> {}\nsleep 2\n", count.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    wait_for("running state", Duration::from_secs(10), || {
        state(&cell.spool, id).is_some_and(|s| {
            s.tasks
                .running
                .first()
                .is_some_and(|r| r.state == RunState::Running)
        })
    });
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0), "log:\n{}", d.log_text());
    assert!(!cell.cell.join("daemon/sched_d.pid").exists());
    assert!(
        exits(&cell.spool, id).is_empty(),
        "the task outlives the daemon"
    );
    let d2 = SchedD::start(&cell, &[]);
    wait_for("exit after restart", Duration::from_secs(15), || {
        !exits(&cell.spool, id).is_empty()
    });
    assert_eq!(exits(&cell.spool, id)[0].exit_status, 0);
    assert_eq!(
        lines(&count),
        1,
        "ran exactly once; log:\n{}",
        d2.log_text()
    );
    assert!(d2.log_text().contains("task re-attached"));
}

#[test]
fn kill_9_and_restart_lose_nothing_and_run_nothing_twice() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let ids: Vec<JobId> = (0..3)
        .map(|_| {
            submit(
                &cell.spool,
                &format!("echo run >> {}/count.$JOB_ID\nsleep 0.7\n", dir.display()),
                |s, _| s.cwd = cwd(&dir),
            )
        })
        .collect();
    wait_for("first job running", Duration::from_secs(10), || {
        state(&cell.spool, ids[0]).is_some_and(|s| !s.tasks.running.is_empty())
    });
    d.signal(Signal::SIGKILL);
    d.wait();
    // Submitted while no daemon runs: picked up at restart.
    let late = submit(
        &cell.spool,
        &format!("echo run >> {}/count.$JOB_ID\n", dir.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    let _d2 = SchedD::start(&cell, &[]);
    for id in ids.iter().chain([&late]) {
        wait_for("every job ended", Duration::from_secs(20), || {
            !exits(&cell.spool, *id).is_empty()
        });
        assert_eq!(
            lines(&dir.join(format!("count.{id}"))),
            1,
            "job {id} ran once"
        );
        assert_eq!(exits(&cell.spool, *id).len(), 1);
    }
}

/// The local task directory of task 1 of job `id`.
fn task_dir_of(cell: &TestCell, id: JobId) -> PathBuf {
    gridspool::launch::exec_spool_dir(cell.spool.root(), &gridspool::identity::short_hostname())
        .join(format!("active_jobs/{id}.1"))
}

/// The pid of a task's supervisor, from its `shepherd.pid` once written.
fn supervisor_of(task_dir: &Path) -> u32 {
    let pid_file = task_dir.join("shepherd.pid");
    wait_for("shepherd.pid", Duration::from_secs(10), || {
        pid_file.exists()
    });
    std::fs::read_to_string(&pid_file)
        .expect("shepherd.pid")
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pid")
}

/// A job whose task ran and ended while no `sched_d` ran, and whose state file still says `t`
/// (`sched_d` writes a started task's `r` lazily: here not before it was killed), with the
/// task's result waiting on its host. Returns the job, the file its one run appended to, and
/// the task's directory.
fn ended_while_down_in_state_t(cell: &TestCell) -> (JobId, PathBuf, PathBuf) {
    let dir = workdir(cell);
    let count = dir.join("count");
    let mut d = SchedD::start(cell, &["--running-state-delay", "600000"]);
    let id = submit(
        &cell.spool,
        &format!("echo run >> {}\nsleep 1\n", count.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    d.wait_for("the job running", Duration::from_secs(10), || {
        lines(&count) == 1
    });
    d.signal(Signal::SIGKILL);
    d.wait();
    let on_disk = state(&cell.spool, id).expect("state file");
    assert_eq!(
        on_disk.tasks.running.first().map(|r| r.state),
        Some(RunState::Transferring),
        "the state file still says t"
    );
    let task_dir = task_dir_of(cell, id);
    wait_for("the task's result", Duration::from_secs(10), || {
        task_dir.join("result.json").exists()
    });
    (id, count, task_dir)
}

/// A master frozen while it held the accounting file's lock (SIGSTOP, a hung mount) is
/// replaced by its shadow, which must still record the ends: here the test holds the lock, as
/// the frozen master would, and the job's record is written without it after the patience.
#[test]
fn a_frozen_holder_of_the_accounting_lock_does_not_stop_the_accounting() {
    let cell = cell(1);
    let path = cell.cell.join("common/accounting");
    std::fs::write(&path, gridspool::acct::HEADER).expect("accounting file");
    let frozen = std::fs::File::open(&path).expect("open");
    frozen.lock().expect("lock");
    let d = SchedD::start(&cell, &[]);
    let dir = workdir(&cell);
    let id = submit(&cell.spool, "true\n", |s, _| s.cwd = cwd(&dir));
    d.wait_for(
        "the record, written without the lock",
        gridspool::acct::LOCK_PATIENCE + Duration::from_secs(20),
        || accounting_records(&cell, id).len() == 1,
    );
    assert!(
        d.log_text().contains("appending without it"),
        "{}",
        d.log_text()
    );
    drop(frozen);
}

/// `sched_d &` in a script starts it with SIGINT and SIGQUIT ignored, which `exec` keeps: its
/// jobs must still start with every signal at its default action, as SGE's shepherd starts
/// them (a job's `kill -INT` or Ctrl-C in a `qrsh` would otherwise do nothing).
#[test]
fn jobs_of_a_sched_d_started_in_the_background_start_with_default_signal_actions() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let out = dir.join("sigign");
    // What a non-interactive shell does for `cmd &`: ignore SIGINT and SIGQUIT, then exec.
    let prefix: Vec<String> = ["/bin/sh", "-c", "trap '' INT QUIT; exec \"$0\" \"$@\""]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let _d = SchedD::spawn_with(&cell, &[], &prefix);
    let id = submit(
        &cell.spool,
        &format!("grep '^SigIgn' /proc/self/status > {}\n", out.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    wait_for("the job ended", Duration::from_secs(20), || {
        !exits(&cell.spool, id).is_empty()
    });
    let text = std::fs::read_to_string(&out).expect("SigIgn line");
    let mask = text
        .split_whitespace()
        .nth(1)
        .and_then(|m| u64::from_str_radix(m, 16).ok())
        .unwrap_or_else(|| panic!("{text}"));
    // glibc's two internal signals (32, 33) cannot be set by a program.
    let glibc_internal = (1u64 << 31) | (1u64 << 32);
    assert_eq!(mask & !glibc_internal, 0, "ignored: {text}");
}

/// kill -9 while a task's state file says `t` although the task runs; it ends before the
/// next `sched_d` starts, which asks the host, finds the result and records it once (exit
/// status 0, not a lost task), without running the task again.
#[test]
fn a_task_still_t_on_disk_that_ran_and_ended_is_recorded_once() {
    let cell = cell(1);
    let (id, count, task_dir) = ended_while_down_in_state_t(&cell);
    let d2 = SchedD::start(&cell, &["--retention", "60"]);
    wait_for("exit after restart", Duration::from_secs(15), || {
        !exits(&cell.spool, id).is_empty()
    });
    let e = exits(&cell.spool, id);
    assert_eq!(e.len(), 1, "log:\n{}", d2.log_text());
    assert_eq!(
        (e[0].exit_status, e[0].failed),
        (0, 0),
        "log:\n{}",
        d2.log_text()
    );
    assert_eq!(accounting_records(&cell, id).len(), 1);
    wait_for("the task directory gone", Duration::from_secs(10), || {
        !task_dir.exists()
    });
    assert_eq!(lines(&count), 1, "ran once; log:\n{}", d2.log_text());
}

/// The same, but the earlier `sched_d` had recorded the end (exits line appended) and died
/// before it wrote the job's state: the next one finds the exits line and records nothing
/// again, although the state file says `t` and the host still holds the result.
#[test]
fn a_task_still_t_on_disk_whose_end_was_recorded_is_not_recorded_again() {
    let cell = cell(1);
    let (id, count, task_dir) = ended_while_down_in_state_t(&cell);
    let line = FinishedTask {
        task: 1,
        exit_status: 0,
        failed: 0,
        end_time: 1,
        signal: None,
        never_ran: false,
    };
    std::fs::write(
        cell.spool.exits_file(id),
        format!("{}\n", serde_json::to_string(&line).expect("json")),
    )
    .expect("exits line");
    let d2 = SchedD::start(&cell, &["--retention", "60"]);
    wait_for("the task directory gone", Duration::from_secs(15), || {
        !task_dir.exists()
    });
    wait_for("the job's final state", Duration::from_secs(10), || {
        state(&cell.spool, id).is_none_or(|s| s.tasks.running.is_empty())
    });
    assert_eq!(
        exits(&cell.spool, id),
        vec![line],
        "log:\n{}",
        d2.log_text()
    );
    assert!(
        accounting_records(&cell, id).is_empty(),
        "recorded again; log:\n{}",
        d2.log_text()
    );
    assert_eq!(lines(&count), 1, "ran once; log:\n{}", d2.log_text());
}

#[test]
fn a_malformed_job_file_is_set_aside_and_the_daemon_goes_on() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    gridspool::file::durable::write_new(&cell.spool.jobs_dir(), "4242.job", b"{not json\n", 0o644)
        .expect("write");
    let set_aside = || -> Vec<String> {
        std::fs::read_dir(cell.spool.quarantine_dir())
            .expect("quarantine dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    // The file is moved first, then its reason written beside it.
    wait_for("quarantine with reason", Duration::from_secs(10), || {
        set_aside().iter().any(|n| n.ends_with("4242.job.reason"))
    });
    assert!(!cell.spool.job_file(JobId(4242)).exists());
    assert!(set_aside().iter().any(|n| n.ends_with("4242.job")));
    let id = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    wait_for("good job ran", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
}

#[test]
fn a_forged_request_is_refused_and_a_genuine_one_applied() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "true", |s, h| {
        s.cwd = cwd(&dir);
        h.user = true;
    });
    wait_for("held state", Duration::from_secs(10), || {
        state(&cell.spool, id).is_some()
    });
    let release = |uid| {
        cell.spool
            .publish_request(
                requester(uid),
                vec![RequestAction::Release {
                    job: id,
                    tasks: TaskSelector::All,
                    hold: gridspool::model::Holds::from(gridspool::model::HoldType::User),
                }],
            )
            .expect("request")
    };
    // The file is ours, but it claims another uid.
    let forged = release(me().uid + 1);
    wait_for("forged request consumed", Duration::from_secs(10), || {
        std::fs::read_dir(cell.spool.requests_dir()).map_or(0, |d| d.count()) == 0
    });
    let q: Vec<String> = std::fs::read_dir(cell.spool.quarantine_dir())
        .expect("quarantine")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        q.iter()
            .any(|n| n.ends_with(&format!("{:012}.req", forged.seq))),
        "{q:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        exits(&cell.spool, id).is_empty(),
        "the forged release did nothing"
    );
    release(me().uid);
    wait_for("released job ran", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
}

#[test]
fn qdel_of_a_running_job_kills_its_process_tree() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "sleep 60 &\nsleep 60\n", |s, _| {
        s.cwd = cwd(&dir)
    });
    wait_running(&cell.spool, id);
    qdel(&cell.spool, requester(me().uid), id);
    wait_for("killed", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
    let e = &exits(&cell.spool, id)[0];
    assert_eq!((e.exit_status, e.failed), (137, 100));
}

/// The accounting records of a job (field 6 is the job number).
pub(crate) fn accounting_records(cell: &TestCell, id: JobId) -> Vec<Vec<String>> {
    std::fs::read_to_string(cell.cell.join("common/accounting"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(':').map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.get(5).is_some_and(|j| *j == id.to_string()))
        .collect()
}

#[test]
fn qdel_force_accounts_a_task_whose_host_does_not_answer() {
    if !is_root() {
        return skip(
            "qdel_force_accounts_a_task_whose_host_does_not_answer",
            "qdel -f needs a manager (root)",
        );
    }
    let cell = cell(1);
    let dir = workdir(&cell);
    let d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "sleep 60\n", |s, _| s.cwd = cwd(&dir));
    wait_for("running", Duration::from_secs(10), || {
        state(&cell.spool, id).is_some_and(|s| {
            s.tasks
                .running
                .first()
                .is_some_and(|r| r.state == RunState::Running)
        })
    });
    // The host stops answering: its shepherd is frozen and can report nothing.
    let host = gridspool::identity::short_hostname();
    let pid_file = cell
        .cell
        .join(format!("execd/{host}/active_jobs/{id}.1/shepherd.pid"));
    let text = std::fs::read_to_string(&pid_file).expect("shepherd.pid");
    let shepherd: i32 = text
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pid");
    kill(Pid::from_raw(shepherd), Signal::SIGSTOP).expect("SIGSTOP");
    /// Lets the shepherd go on even if an assertion below fails.
    struct Resume(i32);
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = kill(Pid::from_raw(self.0), Signal::SIGCONT);
        }
    }
    let resume = Resume(shepherd);
    cell.spool
        .publish_request(
            requester(0),
            vec![RequestAction::Delete {
                job: id,
                tasks: TaskSelector::All,
                force: true,
            }],
        )
        .expect("qdel -f request");
    wait_for("accounted", Duration::from_secs(10), || {
        !accounting_records(&cell, id).is_empty()
    });
    let records = accounting_records(&cell, id);
    // failed (field 12) 100, exit_status (field 13) 137, as for a killed job.
    assert_eq!(
        (records[0][11].as_str(), records[0][12].as_str()),
        ("100", "137"),
        "{records:?}"
    );
    // The exits line follows the accounting record.
    wait_for("exits line", Duration::from_secs(10), || {
        exits(&cell.spool, id).len() == 1
    });
    // The host answers again: the shepherd carries out the kill and reports; the task is not
    // recorded twice, and its directory goes.
    drop(resume);
    let task_dir = pid_file.parent().expect("task dir").to_path_buf();
    wait_for("task directory removed", Duration::from_secs(10), || {
        !task_dir.exists()
    });
    assert_eq!(accounting_records(&cell, id).len(), 1, "{}", d.log_text());
}

#[test]
fn daemon_mode_detaches_and_poll_mode_sees_submissions() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let out = Command::new(bin_path("sched_d"))
        .arg("--spool")
        .arg(&cell.cell)
        .args(["--daemon", "--poll", "100", "--rescan", "60"])
        .output()
        .expect("run --daemon");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: i32 = std::fs::read_to_string(cell.cell.join("daemon/sched_d.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    struct KillOnDrop(i32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
    let guard = KillOnDrop(pid);
    let id = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    wait_for("job ran under polling", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
    let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    // It may be nobody's child to reap now: wait for its pid file to go (drained).
    wait_for("daemon drained", Duration::from_secs(10), || {
        !cell.cell.join("daemon/sched_d.pid").exists()
    });
    drop(guard);
    let log = std::fs::read_to_string(cell.cell.join("daemon/sched_d.log")).expect("log file");
    assert!(
        log.contains(&format!("job={id}")),
        "log lines name the job:\n{log}"
    );
}

#[test]
fn sighup_reloads_the_configuration() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let d = SchedD::start(&cell, &[]);
    let a = submit(&cell.spool, "sleep 30", |s, _| s.cwd = cwd(&dir));
    let b = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    wait_for("b waits for a slot", Duration::from_secs(10), || {
        state(&cell.spool, b)
            .is_some_and(|s| s.pending_reasons.iter().any(|r| r.contains("free slot")))
    });
    let text = std::fs::read_to_string(cell.spool.config_path()).expect("config");
    std::fs::write(
        cell.spool.config_path(),
        text.replace("slots: 1", "slots: 2"),
    )
    .expect("write");
    d.signal(Signal::SIGHUP);
    wait_for("b ran after the reload", Duration::from_secs(10), || {
        !exits(&cell.spool, b).is_empty()
    });
    assert!(state(&cell.spool, a).is_some_and(|s| !s.tasks.running.is_empty()));
    assert!(d.log_text().contains("configuration reloaded"));
}

/// A cell's `mailer`: a script that saves each run's arguments (`|`-separated, on the first
/// line) and input as a file of its own, for tests of mail.
pub(crate) struct RecordingMailer {
    dir: PathBuf,
}

impl RecordingMailer {
    /// Writes the script and names it as `mailer` in the cell's configuration (before
    /// `sched_d` starts).
    pub(crate) fn install(cell: &TestCell) -> Self {
        let dir = cell.root.join("mails");
        std::fs::create_dir_all(&dir).expect("mail dir");
        let script = cell.root.join("mailer.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nf={}/$$\n{{ printf '%s|' \"$@\"; echo; cat; }} > \"$f.tmp\" && mv \"$f.tmp\" \"$f\"\n",
                dir.display()
            ),
        )
        .expect("mailer");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let config = std::fs::read_to_string(cell.spool.config_path()).expect("config");
        std::fs::write(
            cell.spool.config_path(),
            format!("{config}mailer: {}\n", script.display()),
        )
        .expect("config");
        RecordingMailer { dir }
    }

    /// Every mail sent so far, whole, sorted.
    pub(crate) fn mails(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().ends_with(".tmp"))
                    .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Forgets the mails sent so far.
    pub(crate) fn clear(&self) {
        for f in std::fs::read_dir(&self.dir).expect("mails").flatten() {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

/// `-m bea` and `-M`: SGE's mails through the configured mailer, one run per recipient (the
/// mailer here saves its arguments and input).
#[test]
fn job_mail_goes_through_the_configured_mailer() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let mailer = RecordingMailer::install(&cell);
    let read_mails = || mailer.mails();
    let _d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "exit 3\n", |s, _| {
        s.cwd = cwd(&dir);
        s.name = "mjob".into();
        s.mail_options = "bea".into();
        s.mail_list = vec!["x@y".into(), "z@w".into()];
    });
    wait_for("four mails", Duration::from_secs(10), || {
        read_mails().len() == 4
    });
    let m = read_mails();
    let subjects: Vec<&str> = m.iter().filter_map(|t| t.lines().next()).collect();
    assert_eq!(
        subjects,
        [
            format!("-s|Job {id} (mjob) Complete|x@y|"),
            format!("-s|Job {id} (mjob) Complete|z@w|"),
            format!("-s|Job {id} (mjob) Started|x@y|"),
            format!("-s|Job {id} (mjob) Started|z@w|"),
        ]
    );
    assert!(m[0].contains("\n Exit Status      = 3\n"), "{}", m[0]);

    // qdel of a running `-m a` job: "Killed", then "Aborted" when it has ended.
    mailer.clear();
    let id = submit(&cell.spool, "sleep 60\n", |s, _| {
        s.cwd = cwd(&dir);
        s.name = "killme".into();
        s.mail_options = "a".into();
    });
    wait_running(&cell.spool, id);
    let who = requester(me().uid);
    let (user, host) = (who.user.clone(), who.host.clone());
    qdel(&cell.spool, who, id);
    wait_for("two mails", Duration::from_secs(10), || {
        read_mails().len() == 2
    });
    let m = read_mails();
    let owner = state(&cell.spool, id).map(|s| s.submitter.owner.clone());
    let owner_at = format!("{}@", owner.expect("state"));
    assert!(
        m[0].starts_with(&format!("-s|Job {id} (killme) Aborted|{owner_at}")),
        "{}",
        m[0]
    );
    assert!(
        m[0].ends_with(&format!(
            "failed assumedly after job because:\njob {id}.1 died through signal KILL (9)\n"
        )),
        "{}",
        m[0]
    );
    assert_eq!(
        m[1].lines().nth(1),
        Some(format!("Job {id} (killme)  was killed by {user}@{host}").as_str())
    );
}

/// `sched_d` publishes every host's load for `qhost`: an ssh host through a real sshd, with
/// its `/proc` values, and a host nobody answers for as unreachable (`au` in `qhost -q`).
#[test]
fn sched_d_reports_host_loads_for_qhost() {
    let Some(sshd) = crate::support::sshd::Sshd::start("sched_d_reports_host_loads_for_qhost")
    else {
        return;
    };
    let me = gridspool::identity::Caller::from_kernel().expect("caller");
    let options: Vec<String> = sshd
        .client_options()
        .iter()
        .map(|o| format!("\"{o}\""))
        .collect();
    let (port, dead) = (sshd.port, crate::support::sshd::free_port());
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\n  - {{name: sshhost, slots: 1, launch: {{method: ssh, address: 127.0.0.1, port: {port}, user: \"{user}\", options: [{opts}]}}}}\n  - {{name: deadhost, slots: 1, launch: {{method: ssh, address: 127.0.0.1, port: {dead}, user: \"{user}\", options: [{opts}]}}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\", sshhost, deadhost], slots: 1}}\nscheduler: {{policy: sge}}\n",
            user = me.user,
            opts = options.join(", ")
        )
    });
    let _d = SchedD::start(&cell, &[]);
    let daemon_dir = cell.cell.join("daemon");
    wait_for("host reports", Duration::from_secs(30), || {
        gridspool::acct::load::read_report(&daemon_dir, "sshhost").is_some()
            && gridspool::acct::load::read_report(&daemon_dir, "deadhost").is_some()
    });
    let up = gridspool::acct::load::read_report(&daemon_dir, "sshhost").expect("sshhost");
    assert!(up.reachable, "{up:?}");
    assert!(
        up.load
            .as_ref()
            .is_some_and(|l| l.num_proc >= 1 && l.mem_total > 0.0),
        "{up:?}"
    );
    let down = gridspool::acct::load::read_report(&daemon_dir, "deadhost").expect("deadhost");
    assert!(!down.reachable && down.load.is_none(), "{down:?}");

    let user = TestUser {
        name: me.user.clone(),
        uid: me.uid,
        gid: me.gid,
        home: me.home.clone().into(),
    };
    let run = cell.run(&user, "qhost", &["-q"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let ssh_line = lines
        .iter()
        .position(|l| l.starts_with("sshhost "))
        .expect("sshhost");
    assert!(
        !lines[ssh_line].contains("     -       -"),
        "{}",
        run.stdout
    );
    assert!(
        lines[ssh_line + 1].trim_end().ends_with("0/0/1"),
        "{}",
        run.stdout
    );
    let dead_line = lines
        .iter()
        .position(|l| l.starts_with("deadhost "))
        .expect("deadhost");
    assert!(
        lines[dead_line + 1].trim_end().ends_with("au"),
        "{}",
        run.stdout
    );
    // qstat -f: the reported load for sshhost, `-NA-` and `au` for deadhost.
    let run = cell.run(&user, "qstat", &["-f"]);
    let line = |h: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("all.q@{h} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(!line("sshhost").contains("-NA-"), "{}", run.stdout);
    assert!(line("deadhost").contains("-NA-"), "{}", run.stdout);
    assert!(
        line("deadhost").trim_end().ends_with(" au"),
        "{}",
        run.stdout
    );
}

/// The cpu column of `qstat -ext` for job `id`, in seconds (`d:hh:mm:ss`); `None` for `NA`.
fn ext_cpu_seconds(ext: &str, id: JobId) -> Option<u64> {
    let line = ext
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&id.to_string()))?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let state = fields.iter().position(|f| *f == "r")?;
    let parts: Vec<u64> = fields
        .get(state + 1)?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [d, h, m, s] = parts[..] else {
        return None;
    };
    Some(((d * 24 + h) * 60 + m) * 60 + s)
}

/// While a job runs, `qstat -ext` and `qstat -j` show the usage its shepherd sampled, which
/// `sched_d` collects with each host's load report (`load_report_time`): on the local host and,
/// when an sshd can be started, on a host reached over ssh. `NA` before the first report.
#[test]
fn running_jobs_show_their_online_usage() {
    let sshd = crate::support::sshd::Sshd::start("running_jobs_show_their_online_usage");
    let me = gridspool::identity::Caller::from_kernel().expect("caller");
    let host = gridspool::identity::short_hostname();
    let ssh_host = sshd.as_ref().map(|sshd| {
        let options: Vec<String> = sshd
            .client_options()
            .iter()
            .map(|o| format!("\"{o}\""))
            .collect();
        format!(
            "  - {{name: sshhost, slots: 1, launch: {{method: ssh, address: 127.0.0.1, port: {}, user: \"{}\", options: [{}]}}}}\n",
            sshd.port,
            me.user,
            options.join(", ")
        )
    });
    let cell = TestCell::with_config(|_| {
        format!(
            "load_report_time: \"0:0:1\"\nhosts:\n  - {{name: \"{host}\", slots: 1}}\n{}queues:\n  - {{name: all.q, hostlist: [\"{host}\"{}], slots: 1}}\nscheduler: {{policy: sge}}\n",
            ssh_host.clone().unwrap_or_default(),
            if ssh_host.is_some() { ", sshhost" } else { "" },
        )
    });
    let user = TestUser {
        name: me.user.clone(),
        uid: me.uid,
        gid: me.gid,
        home: me.home.clone().into(),
    };
    let script = cell.workdir(&user).join("burn.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ni=0\nwhile [ $i -lt 5000000 ]; do i=$((i+1)); done\nsleep 60\n",
    )
    .expect("script");
    let script = script.to_string_lossy().into_owned();
    let mut targets = vec![format!("all.q@{host}")];
    if ssh_host.is_some() {
        targets.push("all.q@sshhost".into());
    }
    let _d = SchedD::start(&cell, &[]);
    let ids: Vec<JobId> = targets
        .iter()
        .map(|q| {
            let run = cell.run(
                &user,
                "qsub",
                &["-terse", "-q", q, "-o", "/dev/null", "-j", "y", &script],
            );
            assert_eq!(run.code, 0, "{run:?}");
            JobId(run.stdout.trim().parse().expect("job id"))
        })
        .collect();
    for &id in &ids {
        wait_running(&cell.spool, id);
    }
    // The job spends a few seconds of cpu counting (2–3 s on a 2026 machine, more on a slower
    // one): wait for a report that shows a second of it.
    wait_for("usage in qstat -ext", Duration::from_secs(30), || {
        let run = cell.run(&user, "qstat", &["-ext"]);
        ids.iter()
            .all(|&id| ext_cpu_seconds(&run.stdout, id).is_some_and(|s| s >= 1))
    });
    for &id in &ids {
        let run = cell.run(&user, "qstat", &["-j", &id.to_string()]);
        let usage = run
            .stdout
            .lines()
            .find(|l| l.starts_with("usage"))
            .unwrap_or_default()
            .to_string();
        assert!(
            usage.contains("cpu=00:00:0") && !usage.contains("cpu=00:00:00,"),
            "{}",
            run.stdout
        );
        assert!(!usage.contains("maxvmem=N/A"), "{usage}");
        let run = cell.run(&user, "qdel", &[&id.to_string()]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    // Killed before the daemon and the sshd stop: else the ssh host's job outlives the test.
    for &id in &ids {
        wait_for("killed", Duration::from_secs(30), || {
            !exits(&cell.spool, id).is_empty()
        });
    }
}

/// `qstat`'s arguments and what it printed, for each listing option.
type Listings = Vec<(String, String)>;

/// What `qstat` prints for each listing option, as the calling user.
fn listings(cell: &TestCell) -> Listings {
    let sets: [&[&str]; 13] = [
        &["-u", "*"],
        &["-u", "*", "-xml"],
        &["-u", "*", "-ext"],
        &["-u", "*", "-urg"],
        &["-u", "*", "-pri"],
        &["-u", "*", "-f"],
        &["-u", "*", "-s", "p"],
        &["-u", "*", "-s", "r"],
        &["-u", "*", "-s", "h"],
        &["-u", "*", "-s", "z"],
        &["-u", "*", "-g", "d"],
        &["-u", "*", "-ext", "-xml"],
        &[],
    ];
    sets.iter()
        .map(|args| {
            let out = Command::new(client_path("qstat"))
                .env("GRIDSPOOL_QSTAT_LOADAVG", "0.25,2")
                .arg("--spool")
                .arg(&cell.cell)
                .args(*args)
                .output()
                .expect("qstat");
            let text = format!(
                "{}\n--- stderr\n{}--- exit {:?}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                out.status.code()
            );
            (args.join(" "), text)
        })
        .collect()
}

/// The listings with the index hidden (renamed away and back), i.e. from the job files.
fn listings_from_files(cell: &TestCell) -> Listings {
    let base = cell.cell.join("daemon/listing");
    let aside = cell.cell.join("daemon/listing.aside");
    let moved = std::fs::rename(&base, &aside).is_ok();
    assert!(!cell.spool.listing_index_usable());
    let out = listings(cell);
    if moved {
        std::fs::rename(&aside, &base).expect("put the index back");
    }
    out
}

fn assert_same_listings(a: &[(String, String)], b: &[(String, String)]) {
    for ((args, x), (_, y)) in a.iter().zip(b) {
        assert_eq!(x, y, "qstat {args}: from the index, then from the files");
    }
}

/// Freezes the daemon (SIGSTOP) between two batches of writes and returns the listings from
/// the index and from the files. The index follows a batch once its state files are all
/// written (after the directory's sync), so a daemon frozen inside a batch may have renamed
/// state files the index does not show yet: such a moment is let go (SIGCONT) and another
/// taken. A real divergence shows at every moment.
fn frozen_listings(d: &SchedD, cell: &TestCell) -> (Listings, Listings) {
    for _ in 0..20 {
        d.signal(Signal::SIGSTOP);
        let from_index = listings(cell);
        let from_files = listings_from_files(cell);
        assert!(cell.spool.listing_index_usable(), "{}", d.log_text());
        if from_index == from_files {
            return (from_index, from_files);
        }
        d.signal(Signal::SIGCONT);
        std::thread::sleep(Duration::from_millis(300));
    }
    d.signal(Signal::SIGSTOP);
    (listings(cell), listings_from_files(cell))
}

#[test]
fn an_idle_daemon_puts_the_listing_merge_in_place_after_a_purge() {
    // No periodic pass and no rescan within the test: once the jobs are retired, only the
    // merge's own wake-up can put the merged index in place.
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 1}}\nscheduler: {{policy: sge, schedule_interval: \"0:10:0\"}}\n"
        )
    });
    let _d = SchedD::start(&cell, &["--retention", "1", "--rescan", "600"]);
    let ids: Vec<JobId> = (0..1500)
        .map(|_| submit(&cell.spool, "true", |_, h| h.user = true))
        .collect();
    let base = cell.cell.join("daemon/listing");
    let base_len = || std::fs::metadata(&base).map_or(0, |m| m.len());
    wait_for(
        "the held jobs merged into the index's base",
        Duration::from_secs(60),
        || base_len() > 100_000,
    );
    cell.spool
        .publish_request(
            requester(me().uid),
            ids.iter()
                .map(|&job| RequestAction::Delete {
                    job,
                    tasks: TaskSelector::All,
                    force: false,
                })
                .collect(),
        )
        .expect("qdel request");
    wait_for(
        "the purged index's base in place",
        Duration::from_secs(60),
        || base_len() < 10_000,
    );
}

#[test]
fn listings_from_the_index_match_listings_from_the_job_files() {
    let cell = cell(6);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &["--retention", "600"]);
    let running = submit(&cell.spool, "sleep 30", |s, _| s.cwd = cwd(&dir));
    // Tasks 1 and 2 finish at once, the others run.
    let array = submit(
        &cell.spool,
        "[ \"$SGE_TASK_ID\" -le 2 ] || sleep 30",
        |s, _| {
            s.cwd = cwd(&dir);
            s.array = Some(gridspool::model::TaskIdRange::new(1, 6, 1));
        },
    );
    let held = submit(&cell.spool, "true", |s, h| {
        s.cwd = cwd(&dir);
        h.user = true;
    });
    let waiting = submit(&cell.spool, "true", |s, _| {
        s.cwd = cwd(&dir);
        s.predecessors = vec![running];
        s.hold_jid = vec![running.to_string()];
    });
    let done = submit(&cell.spool, "true", |s, _| {
        s.cwd = cwd(&dir);
        s.array = Some(gridspool::model::TaskIdRange::new(1, 2, 1));
    });
    wait_running(&cell.spool, running);
    wait_for("some array tasks finished", Duration::from_secs(20), || {
        exits(&cell.spool, array).len() >= 2 && exits(&cell.spool, done).len() == 2
    });
    wait_for("the index", Duration::from_secs(10), || {
        cell.spool.listing_index_usable()
    });
    // Frozen, the daemon neither absorbs requests nor loads new jobs: listings overlay the
    // requests and read the new job's file, from the index as from the files.
    let (_, _) = frozen_listings(&d, &cell);
    let me_req = requester(me().uid);
    cell.spool
        .publish_request(
            me_req.clone(),
            vec![RequestAction::Hold {
                job: array,
                tasks: TaskSelector::All,
                hold: Holds {
                    user: true,
                    ..Holds::NONE
                },
            }],
        )
        .expect("qhold");
    qdel(&cell.spool, me_req, held);
    let fresh = submit(&cell.spool, "true", |s, h| {
        s.cwd = cwd(&dir);
        h.user = true;
    });
    let (from_index, from_files) = frozen_listings(&d, &cell);
    assert_same_listings(&from_index, &from_files);
    let all = &from_index[0].1;
    for id in [running, array, waiting, fresh] {
        assert!(all.contains(&format!(" {id} ")), "{id} missing:\n{all}");
    }
    assert!(!all.contains(&format!(" {held} ")), "{all}");
    assert!(
        from_index[9].1.contains(&format!(" {done} ")),
        "-s z: {}",
        from_index[9].1
    );
    d.signal(Signal::SIGCONT);
    // Absorbed and written by the daemon, the same again.
    wait_for("requests absorbed", Duration::from_secs(10), || {
        std::fs::read_dir(cell.spool.requests_dir())
            .map(|e| e.count() == 0)
            .unwrap_or(false)
    });
    wait_for("the index", Duration::from_secs(10), || {
        cell.spool.listing_index_usable()
    });
    let (a, b) = frozen_listings(&d, &cell);
    assert_same_listings(&a, &b);
    d.signal(Signal::SIGCONT);
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0));
}

#[test]
fn a_stale_index_is_never_used() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let a = submit(&cell.spool, "sleep 30", |s, _| s.cwd = cwd(&dir));
    let b = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    wait_running(&cell.spool, a);
    wait_for("the index", Duration::from_secs(10), || {
        cell.spool.listing_index_usable()
    });
    // Killed: its index may miss its last state writes, so it is not used.
    d.signal(Signal::SIGKILL);
    let _ = d.wait();
    assert!(!cell.spool.listing_index_usable());
    // A state written after the crash (as if between a state write and the log append).
    let mut rec = cell.spool.read_job(b).expect("read").expect("job b");
    rec.spec.name = "renamed".into();
    cell.spool.write_state(&rec).expect("state");
    let listed = listings(&cell);
    assert!(listed[0].1.contains("renamed"), "{}", listed[0].1);
    assert_same_listings(&listed, &listings_from_files(&cell));

    // A new daemon rebuilds it; a clean stop leaves it valid while jobs/ is unchanged.
    let mut d = SchedD::start(&cell, &[]);
    wait_for("the index", Duration::from_secs(10), || {
        cell.spool.listing_index_usable()
    });
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0));
    assert!(cell.spool.listing_index_usable());
    assert_same_listings(&listings(&cell), &listings_from_files(&cell));
    // Without a daemon, a submission changes jobs/: the index is no longer used, and the
    // new job is listed.
    let c = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    assert!(!cell.spool.listing_index_usable());
    let listed = listings(&cell);
    assert!(listed[0].1.contains(&format!(" {c} ")), "{}", listed[0].1);
    // A damaged index is not used either.
    let base = cell.cell.join("daemon/listing");
    let d = SchedD::start(&cell, &[]);
    wait_for("the index", Duration::from_secs(10), || {
        cell.spool.listing_index_usable()
    });
    d.signal(Signal::SIGSTOP);
    let mut bytes = std::fs::read(&base).expect("index");
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&base, &bytes).expect("damage");
    assert!(!cell.spool.listing_index_usable());
    assert_same_listings(&listings(&cell), &listings_from_files(&cell));
    d.signal(Signal::SIGCONT);
}

/// `/proc/<pid>/cmdline`'s second word (the shepherd's mode).
fn mode_of(pid: u32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let word = bytes.split(|b| *b == 0).nth(1)?;
    Some(String::from_utf8_lossy(word).into_owned())
}

/// Alive and not a zombie.
fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(!s[s.rfind(')')? + 2..].starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn kill_9_of_sched_d_ends_its_start_server_but_not_the_supervisors_it_forked() {
    let cell = cell(2);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let marker = dir.join("marker");
    let id = submit(
        &cell.spool,
        &format!("sleep 2\necho done > {}\nexit 7\n", marker.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    wait_running(&cell.spool, id);
    let task_dir = task_dir_of(&cell, id);
    let supervisor = supervisor_of(&task_dir);
    // Forked by sched_d's start server (not an exec of `supervise`).
    let server = parent_of(supervisor).expect("the supervisor's parent");
    assert_eq!(mode_of(supervisor).as_deref(), Some("start-server"));
    assert_eq!(mode_of(server).as_deref(), Some("start-server"));
    assert_eq!(parent_of(server), Some(d.pid()));
    d.signal(Signal::SIGKILL);
    d.wait();
    // The server's stdin ends with sched_d: it exits; the supervisor and job carry on.
    wait_for("the start server's exit", Duration::from_secs(10), || {
        !process_alive(server)
    });
    assert!(process_alive(supervisor), "the supervisor outlives sched_d");
    assert!(exits(&cell.spool, id).is_empty());
    let d2 = SchedD::start(&cell, &[]);
    wait_for("exit after restart", Duration::from_secs(20), || {
        !exits(&cell.spool, id).is_empty()
    });
    let e = &exits(&cell.spool, id)[0];
    assert_eq!((e.exit_status, e.failed), (7, 0), "log:\n{}", d2.log_text());
    assert_eq!(std::fs::read_to_string(&marker).expect("marker"), "done\n");
    assert!(d2.log_text().contains("task re-attached"));
}

/// `--retention 0`: a finished job is retired in the same wake-up that records its end. Its
/// accounting record is made once, a job held on it (`-hold_jid`) is released although its
/// predecessor's files are already gone, an array job goes only when its last task ended,
/// and a restarted `sched_d` finds nothing to run again.
#[test]
fn retention_0_retires_jobs_at_once_and_loses_nothing() {
    let cell = cell(2);
    let dir = workdir(&cell);
    let count = |id: JobId| dir.join(format!("count.{id}"));
    let script = format!("echo run >> {}/count.$JOB_ID.$SGE_TASK_ID\n", dir.display());
    let mut d = SchedD::start(&cell, &["--retention", "0"]);
    let first = submit(&cell.spool, &script, |s, _| s.cwd = cwd(&dir));
    let after = submit(&cell.spool, &script, |s, _| {
        s.cwd = cwd(&dir);
        s.predecessors = vec![first];
        s.hold_jid = vec![first.to_string()];
    });
    let array = submit(&cell.spool, &script, |s, _| {
        s.cwd = cwd(&dir);
        s.array = Some(gridspool::model::TaskIdRange::new(1, 5, 1));
    });
    let all = [(first, 1), (after, 1), (array, 5)];
    wait_for("every task accounted", Duration::from_secs(20), || {
        all.iter()
            .all(|&(id, n)| accounting_records(&cell, id).len() == n)
    });
    wait_for("every job retired", Duration::from_secs(10), || {
        all.iter().all(|&(id, _)| {
            !cell.spool.job_file(id).exists()
                && !cell.spool.state_file(id).exists()
                && !cell.spool.exits_file(id).exists()
        })
    });
    let ran =
        |id: JobId, task: &str| lines(&PathBuf::from(format!("{}.{task}", count(id).display())));
    assert_eq!(ran(first, "undefined"), 1, "log:\n{}", d.log_text());
    assert_eq!(ran(after, "undefined"), 1, "log:\n{}", d.log_text());
    for t in 1..=5 {
        assert_eq!(ran(array, &t.to_string()), 1, "task {t}");
    }
    // Nothing left to run after a restart, and nothing recorded twice.
    d.signal(Signal::SIGTERM);
    d.wait();
    let d2 = SchedD::start(&cell, &["--retention", "0"]);
    std::thread::sleep(Duration::from_millis(500));
    for &(id, n) in &all {
        assert_eq!(
            accounting_records(&cell, id).len(),
            n,
            "job {id}; log:\n{}",
            d2.log_text()
        );
    }
    assert_eq!(ran(first, "undefined"), 1);
}

/// A cell whose one host has `slots` slots in a queue with the `smp` PE, scheduled by the
/// Qube! cluster order with `preemption`, `-p` alone as the job priority; its file `runs`,
/// where the tests' jobs log their starts; and its running `sched_d`.
fn preemption_cell(slots: u32, preemption: &str) -> (TestCell, PathBuf, SchedD) {
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: {slots}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: {slots}, pe_list: [smp]}}\n\
             parallel_environments:\n  - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: cluster, preemption: {preemption}, weight_priority: 1, weight_urgency: 0, weight_ticket: 0}}\n"
        )
    });
    let runs = workdir(&cell).join("runs");
    let d = SchedD::start(&cell, &[]);
    (cell, runs, d)
}

/// Qube!'s aggressive preemption through the real daemon: a better job submitted while a
/// worse one holds the only slot has the worse one killed; the victim's run is accounted,
/// it goes back to pending and runs again (with `RESTARTED=1`) after the better job, which
/// is accounted once. Nothing is lost.
#[test]
fn aggressive_preemption_kills_requeues_and_accounts_both_runs() {
    let (cell, runs, d) = preemption_cell(1, "aggressive");
    let dir = workdir(&cell);
    let victim = submit(
        &cell.spool,
        &format!(
            "echo victim $RESTARTED >> {r}\n[ \"$RESTARTED\" = 1 ] || sleep 60\n",
            r = runs.display()
        ),
        |s, _| {
            s.cwd = cwd(&dir);
            s.priority = -100;
        },
    );
    wait_running(&cell.spool, victim);
    wait_for("the victim's first run", Duration::from_secs(10), || {
        lines(&runs) == 1
    });
    let better = submit(
        &cell.spool,
        &format!("echo better $RESTARTED >> {}\n", runs.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    wait_for("both jobs accounted", Duration::from_secs(30), || {
        accounting_records(&cell, victim).len() == 2 && accounting_records(&cell, better).len() == 1
    });
    let order = std::fs::read_to_string(&runs).expect("runs");
    assert_eq!(
        order,
        "victim 0\nbetter 0\nvictim 1\n",
        "log:\n{}",
        d.log_text()
    );
    // The killed run is recorded as ended by a signal; the rerun as a clean exit.
    let first = &accounting_records(&cell, victim)[0];
    let second = &accounting_records(&cell, victim)[1];
    assert_ne!(
        first.get(12),
        Some(&"0".to_string()),
        "killed run: {first:?}"
    );
    assert_eq!(second.get(12), Some(&"0".to_string()), "rerun: {second:?}");
    wait_for("the victim's exit line", Duration::from_secs(10), || {
        exits(&cell.spool, victim).len() == 1
    });
    assert!(d.log_text().contains("preempted"), "log:\n{}", d.log_text());
}

/// Qube!'s passive preemption through the real daemon: a better two-slot job arrives while
/// a worse array job holds both slots. Each victim task runs to its end, but the array starts
/// nothing more on the host while the better job waits, so the slot freed first stays idle
/// until the second frees; without preemption the array's next task would take it.
#[test]
fn passive_preemption_lets_victims_finish_and_starts_nothing_more_of_them() {
    let (cell, runs, d) = preemption_cell(2, "passive");
    let dir = workdir(&cell);
    let victim = submit(
        &cell.spool,
        &format!(
            "echo victim $SGE_TASK_ID >> {}\n[ $SGE_TASK_ID -gt 2 ] || sleep $SGE_TASK_ID\n",
            runs.display()
        ),
        |s, _| {
            s.cwd = cwd(&dir);
            s.priority = -100;
            s.array = Some(gridspool::model::TaskIdRange::new(1, 4, 1));
        },
    );
    wait_for("two victim tasks running", Duration::from_secs(10), || {
        lines(&runs) == 2
    });
    let better = submit(
        &cell.spool,
        &format!("echo better >> {}\n", runs.display()),
        |s, _| {
            s.cwd = cwd(&dir);
            s.pe = Some(gridspool::model::PeRequest {
                name: "smp".into(),
                range: gridspool::model::SlotRange { min: 2, max: 2 },
            });
        },
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while accounting_records(&cell, victim).len() < 4
        || accounting_records(&cell, better).is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "not everything accounted: runs {:?}; log:\n{}",
            std::fs::read_to_string(&runs),
            d.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let order = std::fs::read_to_string(&runs).expect("runs");
    let lines: Vec<&str> = order.lines().collect();
    assert_eq!(lines.len(), 5, "{order}");
    assert_eq!(
        lines[2],
        "better",
        "order {order:?}; log:\n{}",
        d.log_text()
    );
    // Passive: no run was killed.
    for r in accounting_records(&cell, victim) {
        assert_eq!(r.get(12), Some(&"0".to_string()), "{r:?}");
    }
}

/// `qhost -j` reads the listing index `sched_d` keeps (not every job file) and shows a
/// running job under its host, with its queue instance and `MASTER`.
#[test]
fn qhost_j_shows_running_jobs_from_the_listing_index() {
    let cell = cell(2);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "sleep 30\n", |s, _| {
        s.cwd = cwd(&dir);
        s.name = "onhost".into();
    });
    wait_running(&cell.spool, id);
    let c = me();
    let user = TestUser {
        name: c.user.clone(),
        uid: c.uid,
        gid: c.gid,
        home: c.home.clone().into(),
    };
    let instance: String = format!("all.q@{}", gridspool::identity::short_hostname())
        .chars()
        .take(10)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        let shown = cell.run(&user, "qhost", &["-j"]).stdout;
        let listed = shown.lines().any(|l| {
            l.starts_with(&format!("   {:>7} ", id.to_string()))
                && l.contains(" onhost ")
                && l.contains(" r     ")
                && l.contains(&format!("{instance:<10} MASTER"))
        });
        if listed && cell.spool.listing_index_usable() {
            break shown;
        }
        assert!(Instant::now() < deadline, "not listed:\n{shown}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(shown.contains("   job-ID  prior"), "{shown}");
    qdel(&cell.spool, requester(c.uid), id);
    wait_for("the job's end", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
}

/// A task's result comes back through the start server, whose supervisor then waits for
/// `sched_d`'s acknowledgement (given once the accounting record and exits line are
/// durable). `sched_d` is stopped (SIGSTOP) so that it reads the result from nobody, then
/// killed: its start server ends, the waiting supervisor is told by its parent-death signal
/// and leaves the result in the task directory (`result.json`), and the next `sched_d`
/// records it exactly once.
#[test]
fn kill_9_of_sched_d_before_it_records_a_result_its_start_server_passed_on() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let marker = dir.join("marker");
    let id = submit(
        &cell.spool,
        &format!("echo run >> {}\nsleep 2\nexit 5\n", marker.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    // Stopped while the job runs (well before it ends), so that the result finds sched_d
    // stopped.
    wait_for("the job running", Duration::from_secs(10), || {
        lines(&marker) == 1
    });
    let task_dir = task_dir_of(&cell, id);
    let supervisor = supervisor_of(&task_dir);
    let server = parent_of(supervisor).expect("the supervisor's parent");
    d.signal(Signal::SIGSTOP);
    assert!(
        !descendants_of(supervisor).is_empty(),
        "stopped before the job ended"
    );
    // The job ends; its supervisor passes the result to the server and waits, its task
    // directory kept and without `result.json`.
    wait_for("the job's end", Duration::from_secs(10), || {
        descendants_of(supervisor).is_empty()
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        process_alive(supervisor),
        "the supervisor waits for the ack"
    );
    assert!(task_dir.exists());
    assert!(!task_dir.join("result.json").exists());
    assert!(exits(&cell.spool, id).is_empty());
    d.signal(Signal::SIGKILL);
    d.wait();
    wait_for("the start server's exit", Duration::from_secs(10), || {
        !process_alive(server)
    });
    wait_for(
        "the result left on the host",
        Duration::from_secs(10),
        || task_dir.join("result.json").exists(),
    );
    wait_for("the supervisor's exit", Duration::from_secs(10), || {
        !process_alive(supervisor)
    });
    let d2 = SchedD::start(&cell, &["--retention", "60"]);
    wait_for("exit after restart", Duration::from_secs(20), || {
        !exits(&cell.spool, id).is_empty()
    });
    wait_for("the task directory gone", Duration::from_secs(10), || {
        !task_dir.exists()
    });
    std::thread::sleep(Duration::from_millis(500));
    let e = exits(&cell.spool, id);
    assert_eq!(e.len(), 1, "log:\n{}", d2.log_text());
    assert_eq!(
        (e[0].exit_status, e[0].failed),
        (5, 0),
        "log:\n{}",
        d2.log_text()
    );
    assert_eq!(lines(&marker), 1, "ran once");
    let records = accounting_records(&cell, id);
    assert_eq!(records.len(), 1, "accounted once: {records:?}");
}

/// A daemon that died after its accounting commit but before the exits line that says the
/// task's end was recorded: the next one is told the end again (the result waits on its
/// host), writes the exits line and state, and does not append a second accounting record
/// (the run's record already ends the accounting file).
#[test]
fn an_end_accounted_just_before_a_crash_is_not_accounted_again() {
    use gridspool::sched::AccountingHook;
    let cell = cell(1);
    let (id, count, task_dir) = ended_while_down_in_state_t(&cell);
    // What the dead daemon had committed: this very run's record.
    let job = state(&cell.spool, id).expect("state");
    let ran = job.tasks.running[0].clone();
    let result: gridspool::model::TaskResult =
        serde_json::from_slice(&std::fs::read(task_dir.join("result.json")).expect("result"))
            .expect("result json");
    let config = gridspool::config::ClusterConfig::load(&cell.spool.config_path()).expect("config");
    let usage = std::sync::Arc::new(std::sync::Mutex::new(
        gridspool_policy::sharetree::UsageStore::new(),
    ));
    let mut acct = gridspool::sched::Accounting::new(cell.spool.accounting_path(), config, usage);
    acct.record(&job, &ran, &result).expect("record");
    acct.commit().expect("commit");
    assert_eq!(accounting_records(&cell, id).len(), 1);

    let d2 = SchedD::start(&cell, &["--retention", "60"]);
    wait_for("the exits line", Duration::from_secs(15), || {
        !exits(&cell.spool, id).is_empty()
    });
    wait_for("the task directory gone", Duration::from_secs(10), || {
        !task_dir.exists()
    });
    assert_eq!(exits(&cell.spool, id).len(), 1);
    assert_eq!(
        accounting_records(&cell, id).len(),
        1,
        "accounted twice; log:\n{}",
        d2.log_text()
    );
    assert!(
        d2.log_text().contains("not recorded again"),
        "log:\n{}",
        d2.log_text()
    );
    assert_eq!(lines(&count), 1, "ran once");
}

/// Issue 12: the log file and a redirected stderr are plain text, one event per line: no
/// colour escapes (tracing coloured stderr whatever it was), and a multi-line message (a
/// configuration error quoting YAML) stays on its event's line. Both failed before.
#[test]
fn the_log_is_plain_text_one_event_per_line() {
    let cell = cell(1);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let id = submit(&cell.spool, "true", |s, _| s.cwd = cwd(&dir));
    wait_for("the job ran", Duration::from_secs(10), || {
        !exits(&cell.spool, id).is_empty()
    });
    let text = std::fs::read_to_string(cell.spool.config_path()).expect("config");
    std::fs::write(
        cell.spool.config_path(),
        format!("{text}hosts: [\n  - {{name: x\nqueues: 3\n"),
    )
    .expect("write");
    d.signal(Signal::SIGHUP);
    let file = cell.cell.join("daemon/sched_d.log");
    wait_for("the reload refused", Duration::from_secs(10), || {
        std::fs::read_to_string(&file).is_ok_and(|l| l.contains("configuration not reloaded"))
    });
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0));
    for (what, bytes) in [
        ("daemon/sched_d.log", std::fs::read(&file).expect("log")),
        ("stderr", std::fs::read(&d.log).expect("stderr")),
    ] {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!bytes.contains(&0x1b), "{what} has escapes:\n{text}");
        let events: Vec<&str> = text.lines().collect();
        for line in &events {
            let stamp = line.as_bytes();
            assert!(
                stamp.len() > 20 && stamp[..4].iter().all(u8::is_ascii_digit) && stamp[10] == b'T',
                "{what}: a line that is not an event: {line:?}\n{text}"
            );
        }
        let refused: Vec<&&str> = events
            .iter()
            .filter(|l| l.contains("configuration not reloaded"))
            .collect();
        assert_eq!(refused.len(), 1, "{what}:\n{text}");
        assert!(refused[0].contains("\\n"), "{what}: {}", refused[0]);
        assert!(events.iter().any(|l| l.contains(&format!("job={id}"))));
    }
}

/// The tasks of a job that run (`r`) now.
fn running_tasks(spool: &Spool, id: JobId) -> Vec<u32> {
    state(spool, id).map_or_else(Vec::new, |s| {
        s.tasks
            .running
            .iter()
            .filter(|r| r.state == RunState::Running)
            .map(|r| r.task)
            .collect()
    })
}

/// The task numbers of a job's accounting records (field 36).
fn accounted_tasks(cell: &TestCell, id: JobId) -> Vec<u32> {
    let mut tasks: Vec<u32> = accounting_records(cell, id)
        .iter()
        .filter_map(|f| f.get(35)?.parse().ok())
        .collect();
    tasks.sort_unstable();
    tasks
}

/// Issue 12: one `qdel` acts on every job and task it names at once, so no job it names
/// starts on the slot that the deletion of another freed; with SGE's message for each (the
/// captures in `qdel/*running-and-pending*`, recorded with the other slot of the oracle busy).
/// `qdel 61.1 61.3` failed before: `sched_d` applied only the first action of a request on a
/// job (the job had "absorbed" the request), so task 3 started where task 1 had run.
#[test]
fn one_qdel_deletes_everything_it_names_before_a_freed_slot_is_used() {
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        return skip(
            "one_qdel_deletes_everything_it_names_before_a_freed_slot_is_used",
            "needs root to run commands as sgeuser and sgeuser2",
        );
    };
    let cell = cell(1);
    let d = SchedD::start(&cell, &[]);
    for u in [&u1, &u2] {
        cell.write_file(u, "long.sh", "#!/bin/sh\nsleep 120\n");
    }
    let qsub = |u: &TestUser, args: &[&str]| {
        let r = cell.run(u, "qsub", args);
        assert_eq!(r.code, 0, "{r:?}");
    };
    let (a, b) = (JobId(62), JobId(63));

    // A running task and a pending task of one array job.
    cell.set_next_job_id(61);
    let arr = JobId(61);
    qsub(&u1, &["-t", "1-3", "long.sh"]);
    wait_for("task 61.1 runs", Duration::from_secs(10), || {
        running_tasks(&cell.spool, arr) == [1]
    });
    let r = cell.run(&u1, "qdel", &["61.1", "61.3"]);
    assert_matches(&r, &Capture::load("qdel/running-and-pending-tasks.txt"));
    wait_for("task 61.2 runs", Duration::from_secs(10), || {
        running_tasks(&cell.spool, arr) == [2]
    });
    let pending: Vec<u32> = state(&cell.spool, arr)
        .expect("job 61")
        .tasks
        .pending
        .iter()
        .flat_map(|g| g.tasks.iter())
        .collect();
    assert!(pending.is_empty(), "61.3 still pending: {pending:?}");
    assert_eq!(cell.run(&u1, "qdel", &["61"]).code, 0);

    // A running job and a pending one.
    qsub(&u1, &["long.sh"]);
    qsub(&u1, &["long.sh"]);
    wait_running(&cell.spool, a);
    let r = cell.run(&u1, "qdel", &["62", "63"]);
    assert_matches(&r, &Capture::load("qdel/running-and-pending.txt"));

    // The same through -u.
    qsub(&u2, &["long.sh"]);
    qsub(&u2, &["long.sh"]);
    wait_running(&cell.spool, JobId(64));
    let r = cell.run(&u2, "qdel", &["-u", "sgeuser2"]);
    assert_matches(&r, &Capture::load("qdel/u-running-and-pending.txt"));

    wait_for("every job gone", Duration::from_secs(20), || {
        (61..=65).all(|j| state(&cell.spool, JobId(j)).is_none())
    });
    assert_eq!(accounted_tasks(&cell, arr), [1, 2], "{}", d.log_text());
    assert_eq!(accounting_records(&cell, a).len(), 1);
    assert_eq!(accounting_records(&cell, JobId(64)).len(), 1);
    for never in [b, JobId(65)] {
        assert!(accounting_records(&cell, never).is_empty(), "{never} ran");
        assert!(exits(&cell.spool, never).is_empty(), "{never} ran");
    }
}

/// Issue 12: a job whose tasks have all ended has left the system for every command, as in
/// SGE (captures `qstat/ended-*`, `qdel/ended*`, `qalter/ended*`, `qhold/ended`,
/// `qrls/ended`), although `sched_d` keeps its files for its retention time: `qstat -j` says
/// `Following jobs do not exist` at once (toil polls it to learn that a job ended), `qdel`,
/// `qalter`, `qhold` and `qrls` that it does not exist; only `qstat -s z` lists it. What
/// the retention is for still works: `qacct` finds it, and `-hold_jid` names it without
/// waiting for it.
#[test]
fn an_ended_job_has_left_the_system_for_every_command() {
    let Some(user) = root() else {
        return skip(
            "an_ended_job_has_left_the_system_for_every_command",
            "needs root",
        );
    };
    let cell = cell(2);
    let dir = workdir(&cell);
    // The captures' ids: endA 10, endB 11 (an array), endC 12 (still waiting).
    cell.set_next_job_id(10);
    let _d = SchedD::start(&cell, &["--retention", "600"]);
    let a = submit(&cell.spool, "true\n", |s, _| s.cwd = cwd(&dir));
    let b = submit(&cell.spool, "true\n", |s, _| {
        s.cwd = cwd(&dir);
        s.array = Some(gridspool::model::TaskIdRange::new(1, 3, 1));
    });
    let c = submit(&cell.spool, "sleep 60\n", |s, h| {
        s.cwd = cwd(&dir);
        h.user = true;
    });
    assert_eq!((a, b, c), (JobId(10), JobId(11), JobId(12)));
    wait_for("both jobs ended", Duration::from_secs(20), || {
        [(a, 1), (b, 3)].iter().all(|&(id, n)| {
            exits(&cell.spool, id).len() == n
                && state(&cell.spool, id).is_some_and(|s| s.tasks.is_done())
        })
    });
    // Retained for `qsub -sync`, yet gone for the commands.
    assert!(cell.spool.state_file(a).exists() && cell.spool.exits_file(b).exists());
    for case in [
        "qstat/ended-j",
        "qstat/ended-j-xml",
        "qstat/ended-j-array",
        "qdel/ended",
        "qdel/ended-array-task",
        "qalter/ended",
        "qalter/ended-array",
        "qhold/ended",
        "qrls/ended",
    ] {
        let cap = Capture::load(&format!("{case}.txt"));
        let words = gridspool::compat::options::split_words(&cap.command);
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        assert_matches(&cell.run(&user, &words[0], &args), &cap);
    }
    // A list naming an ended job and a live one shows the live one, exit 0.
    let run = cell.run(&user, "qstat", &["-j", "10,12"]);
    assert!(
        run.stdout
            .starts_with("==============================================================\njob_number:                 12\n"),
        "{}",
        run.stdout
    );
    assert_eq!((run.stderr.as_str(), run.code), ("", 0));
    // Listings: only `-s z` shows the ended jobs.
    let ids = |args: &[&str]| -> Vec<String> {
        let run = cell.run(&user, "qstat", args);
        run.stdout
            .lines()
            .skip(2)
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect()
    };
    assert_eq!(ids(&["-u", "*"]), vec!["12"]);
    assert_eq!(ids(&["-u", "*", "-s", "z"]), vec!["10", "11"]);
    let xml = cell.run(&user, "qstat", &["-u", "*", "-xml"]).stdout;
    assert!(!xml.contains("<JB_job_number>10<"), "{xml}");
    let overview = cell.run(&user, "qstat", &["-j"]).stdout;
    assert!(
        !overview.contains("10") && !overview.contains("11"),
        "{overview}"
    );
    // `qacct` still has the records; `-hold_jid` keeps the request, holds on nothing.
    assert_eq!(cell.run(&user, "qacct", &["-j", "10"]).code, 0);
    let sub = cell.run(
        &user,
        "qsub",
        &["-terse", "-h", "-hold_jid", "10,11", "-b", "y", "true"],
    );
    assert_eq!(sub.stdout, "13\n", "{sub:?}");
    let detail = cell.run(&user, "qstat", &["-j", "13"]).stdout;
    assert!(
        detail.contains("\njid_predecessor_list (req): 10,11\n")
            && !detail.contains("\njid_predecessor_list:"),
        "{detail}"
    );
}

/// Issue 27: `sched_d` has its local host prepare a start (a held start) while it makes the
/// dispatch durable, and starts it only once that is done. Killed (`kill -9`) in between —
/// here while the directory sync that makes the task's `t` durable is held up (strace delays
/// every `fsync` of `sched_d` by 2 s) — it leaves nothing on the host: the start server,
/// whose input ended, lets the held start go, and its supervisor removes what it prepared.
/// The next `sched_d` finds the task `t` with no trace on its host, and runs it, once.
#[test]
fn kill_9_of_sched_d_between_a_held_start_and_its_go_leaves_nothing_and_runs_the_task_once() {
    const TEST: &str =
        "kill_9_of_sched_d_between_a_held_start_and_its_go_leaves_nothing_and_runs_the_task_once";
    if !Path::new("/usr/bin/strace").exists() {
        return skip(TEST, "needs strace (to hold sched_d in its sync)");
    }
    let cell = cell(1);
    let dir = workdir(&cell);
    let active = gridspool::launch::exec_spool_dir(
        cell.spool.root(),
        &gridspool::identity::short_hostname(),
    )
    .join("active_jobs");
    let strace: Vec<String> = [
        "/usr/bin/strace",
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        "trace=fsync",
        "-e",
        "inject=fsync:delay_enter=2000000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let d = SchedD::spawn_with(&cell, &[], &strace);
    let pid_file = cell.cell.join("daemon/sched_d.pid");
    let sched_d = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    d.wait_for("sched_d's pid file", Duration::from_secs(60), || {
        sched_d().is_some()
    });
    // A first job opens the local host's start server; the next start is held there.
    let first = submit(&cell.spool, "exit 0\n", |s, _| s.cwd = cwd(&dir));
    d.wait_for("the first job's end", Duration::from_secs(60), || {
        !exits(&cell.spool, first).is_empty()
    });
    let count = dir.join("count");
    let id = submit(
        &cell.spool,
        &format!("echo run >> {}\n", count.display()),
        |s, _| s.cwd = cwd(&dir),
    );
    let staged = || {
        std::fs::read_dir(&active).ok().and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!(".{id}.1.held.")))
            })
        })
    };
    // Held on the host, and `t` renamed into place: sched_d is in the directory's sync.
    d.wait_for("the held start and t", Duration::from_secs(60), || {
        staged().is_some_and(|s| s.join("shepherd.pid").exists())
            && state(&cell.spool, id).is_some_and(|s| !s.tasks.running.is_empty())
    });
    let staging = staged().expect("staging");
    let supervisor: i32 = std::fs::read_to_string(staging.join("shepherd.pid"))
        .expect("pid")
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pid");
    let killed = sched_d().expect("sched_d");
    let _ = kill(Pid::from_raw(killed), Signal::SIGKILL);
    drop(d);
    // Under strace the killed daemon's threads leave their ptrace stops one by one (its
    // leader shows as a zombie while they do): the next sched_d can take the cell only once
    // the last is gone and the spool lock with it.
    let lock = cell.cell.join("daemon/sched_d.lock");
    wait_for(
        &format!("the lock of the killed sched_d (pid {killed})"),
        Duration::from_secs(60),
        || std::fs::File::open(&lock).is_ok_and(|f| f.try_lock().is_ok()),
    );
    wait_for(
        "the held supervisor's exit",
        Duration::from_secs(30),
        || !process_alive(supervisor as u32),
    );
    let left: Vec<_> = std::fs::read_dir(&active)
        .expect("active_jobs")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left on the host: {left:?}");
    assert_eq!(lines(&count), 0, "ran before its go");
    let on_disk = state(&cell.spool, id).expect("state");
    assert_eq!(
        on_disk.tasks.running.first().map(|r| r.state),
        Some(RunState::Transferring)
    );
    let d2 = SchedD::spawn(&cell, &[]);
    d2.wait_for(
        "the restarted sched_d's pid file",
        Duration::from_secs(60),
        || sched_d() == Some(d2.pid() as i32),
    );
    d2.wait_for(
        "the task's end after the restart",
        Duration::from_secs(60),
        || !exits(&cell.spool, id).is_empty(),
    );
    let e = &exits(&cell.spool, id);
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].exit_status, e[0].failed), (0, 0), "{}", d2.log_text());
    assert_eq!(lines(&count), 1, "ran once; log:\n{}", d2.log_text());
    assert!(d2.log_text().contains("pending again"), "{}", d2.log_text());
}
