//! `qmod -d`/`-e` against the SGE 8.1.9 captures in `tests/compat/qmod/`, and their effect on
//! a running cluster: a disabled queue instance takes no new work while its running jobs go
//! on, shows `d` in `qstat -f`, stays disabled over a restart of `sched_d`, and works again
//! once enabled.

use crate::sched::{SchedD, cell, cwd, state, submit, wait_for, workdir};
use crate::support::*;
use std::time::Duration;

fn qmod(cell: &TestCell, user: &TestUser, case: &str) {
    let cap = Capture::load(&format!("qmod/{case}.txt"));
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix("qmod").unwrap_or(&cap.command),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_matches(&cell.run(user, "qmod", &refs), &cap);
}

fn disabled(cell: &TestCell) -> Vec<String> {
    cell.spool
        .queue_instance_states()
        .disabled
        .into_iter()
        .collect()
}

#[test]
fn qmod_disables_and_enables_as_sge_says() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip("qmod_disables_and_enables_as_sge_says", "needs root");
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let host = gridspool::identity::short_hostname();
    let instance = format!("all.q@{host}");
    for case in ["nothing", "d-none", "d-nosuch", "d-nosuch-host"] {
        qmod(&cell, &root, case);
    }
    qmod(&cell, &user, "d-by-user");
    assert!(disabled(&cell).is_empty());
    qmod(&cell, &root, "d");
    wait_for("all.q disabled", Duration::from_secs(10), || {
        disabled(&cell) == vec![instance.clone()]
    });
    qmod(&cell, &root, "d-again");
    qmod(&cell, &root, "e-instance");
    wait_for("all.q enabled", Duration::from_secs(10), || {
        disabled(&cell).is_empty()
    });
    qmod(&cell, &root, "e-again");
    qmod(&cell, &root, "d-wildcard");
    wait_for("all.q disabled", Duration::from_secs(10), || {
        disabled(&cell) == vec![instance.clone()]
    });
    qmod(&cell, &root, "e");
}

#[test]
fn a_disabled_instance_takes_no_new_work_and_its_running_jobs_go_on() {
    let Some(root) = root() else {
        return skip(
            "a_disabled_instance_takes_no_new_work_and_its_running_jobs_go_on",
            "qmod needs an operator (root)",
        );
    };
    let cell = cell(2);
    let dir = workdir(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let running = submit(&cell.spool, "sleep 60\n", |s, _| s.cwd = cwd(&dir));
    wait_for("the first job runs", Duration::from_secs(10), || {
        state(&cell.spool, running).is_some_and(|s| !s.tasks.running.is_empty())
    });
    let host = gridspool::identity::short_hostname();
    let run = cell.run(&root, "qmod", &["-d", "all.q"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("disabled", Duration::from_secs(10), || {
        !disabled(&cell).is_empty()
    });
    let qstat = cell.run(&root, "qstat", &["-f"]);
    let line = qstat
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("all.q@{host}")))
        .unwrap_or_else(|| panic!("{qstat:?}"));
    assert!(line.ends_with(" d"), "{line}");
    // A restart keeps the state.
    d.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0));
    let _d = SchedD::start(&cell, &[]);
    let waiting = submit(&cell.spool, "true\n", |s, _| s.cwd = cwd(&dir));
    wait_for("the scheduler's verdict", Duration::from_secs(10), || {
        state(&cell.spool, waiting).is_some_and(|s| {
            s.pending_reasons
                .iter()
                .any(|r| r.contains("queue instances are disabled"))
        })
    });
    let s = state(&cell.spool, waiting).expect("state");
    assert!(s.tasks.running.is_empty(), "started on a disabled instance");
    assert!(
        state(&cell.spool, running).is_some_and(|s| !s.tasks.running.is_empty()),
        "the running job goes on"
    );
    let run = cell.run(&root, "qmod", &["-e", &format!("all.q@{host}")]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the waiting job ran", Duration::from_secs(20), || {
        !crate::sched::accounting_records(&cell, waiting).is_empty()
    });
}

/// A queue disabled in `config.yaml` starts disabled, as SGE's `initial_state disabled`
/// (`qconf -sq` shows it so): `qmod -e` enables its instance, which `qstat -f` and `qhost -q`
/// then show without `d`, and the waiting job runs.
#[test]
fn qmod_enables_a_queue_the_configuration_disables() {
    let Some(root) = root() else {
        return skip(
            "qmod_enables_a_queue_the_configuration_disables",
            "qmod needs an operator (root)",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 2, disabled: true}}\n"
        )
    });
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let instance = format!("all.q@{host}");
    let instance_line = |bin: &str, args: &[&str]| {
        let run = cell.run(&root, bin, args);
        run.stdout
            .lines()
            .find(|l| l.trim_start().starts_with("all.q"))
            .unwrap_or_else(|| panic!("{run:?}"))
            .to_string()
    };
    assert!(instance_line("qstat", &["-f"]).ends_with(" d"));
    let waiting = submit(&cell.spool, "true\n", |s, _| s.cwd = cwd(&dir));
    wait_for("the scheduler's verdict", Duration::from_secs(10), || {
        state(&cell.spool, waiting).is_some_and(|s| !s.pending_reasons.is_empty())
    });
    let run = cell.run(&root, "qmod", &["-e", &instance]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "root@{} changed state of \"{instance}\" (enabled)\n",
            gridspool::identity::short_hostname()
        )
    );
    wait_for("the waiting job ran", Duration::from_secs(20), || {
        !crate::sched::accounting_records(&cell, waiting).is_empty()
    });
    assert!(!instance_line("qstat", &["-f"]).ends_with(" d"));
    let qhost = instance_line("qhost", &["-q"]);
    assert!(
        !qhost.split_whitespace().any(|w| w.contains('d')),
        "{qhost}"
    );
    let run = cell.run(&root, "qmod", &["-e", &instance]);
    assert_eq!(
        run.stdout,
        format!("Queue instance \"{instance}\" is already in the specified state: enabled\n")
    );
    let run = cell.run(&root, "qmod", &["-d", &instance]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("disabled again", Duration::from_secs(10), || {
        instance_line("qstat", &["-f"]).ends_with(" d")
    });
    assert!(
        instance_line("qhost", &["-q"])
            .split_whitespace()
            .any(|w| w == "d")
    );
}

/// A cell of 6 slots whose non-rerunnable jobs are left alone by `qmod -r`, as on the oracle
/// (SGE's `ENABLE_RESCHEDULE_KILL` off).
fn six_slots() -> TestCell {
    six_slots_scheduled_by("{policy: sge}")
}

fn six_slots_scheduled_by(scheduler: &str) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 6}}\nhostgroups:\n  \"@allhosts\": [\"{host}\"]\nqueues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 6, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {scheduler}\nenable_reschedule_kill: false\n"
        )
    })
}

/// The processes of jobs of `cell` (their environment's `SGE_ROOT`), with their `JOB_ID`,
/// command name and state (`R`, `S`, `T`…).
pub(crate) fn job_processes(cell: &TestCell) -> Vec<(u32, String, char, i32)> {
    let root = format!("SGE_ROOT={}", cell.root.display());
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let p = e.path();
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(p.join("environ")) else {
            continue;
        };
        let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
        if !vars.contains(&root.as_bytes()) {
            continue;
        }
        let Some(id) = vars
            .iter()
            .find_map(|v| v.strip_prefix(b"JOB_ID="))
            .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if let Ok(stat) = std::fs::read_to_string(p.join("stat"))
            && let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..])
            && let Some(state) = after.chars().next()
        {
            out.push((id, comm.trim().to_string(), state, pid));
        }
    }
    out
}

/// Kills what the jobs of a cell left running when the test ends, passed or not.
pub(crate) struct Reaper<'a>(pub &'a TestCell);

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        for (_, _, _, pid) in job_processes(self.0) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

pub(crate) fn running_jobs(cell: &TestCell, ids: &[u32]) -> bool {
    ids.iter().all(|id| {
        state(&cell.spool, gridspool::model::JobId(*id)).is_some_and(|s| {
            !s.tasks.running.is_empty()
                && s.tasks
                    .running
                    .iter()
                    .all(|r| r.state != gridspool::model::RunState::Transferring)
                && s.tasks.pending.is_empty()
        })
    })
}

fn wait_stopped(cell: &TestCell, id: u32, stopped: bool) {
    wait_for(
        &format!(
            "job {id}'s processes {}",
            if stopped { "stopped" } else { "running" }
        ),
        Duration::from_secs(10),
        || {
            let procs: Vec<char> = job_processes(cell)
                .into_iter()
                .filter(|(j, comm, _, _)| *j == id && comm == "sleep")
                .map(|(_, _, s, _)| s)
                .collect();
            !procs.is_empty() && procs.iter().all(|s| (*s == 'T') == stopped)
        },
    );
}

#[test]
fn qmod_suspends_resumes_and_reschedules_jobs_and_queues_as_sge_says() {
    let (Some(root), Some(user), Some(other)) = (root(), user1(), user2()) else {
        return skip(
            "qmod_suspends_resumes_and_reschedules_jobs_and_queues_as_sge_says",
            "needs root",
        );
    };
    let cell = six_slots();
    let _reaper = Reaper(&cell);
    let _d = SchedD::start(&cell, &[]);
    for args in [
        &["-b", "y", "sleep", "600"][..],
        &["-b", "y", "-t", "1-3", "sleep", "600"],
        &["-b", "y", "-r", "y", "sleep", "600"],
        &["-b", "y", "-h", "sleep", "600"],
        &["-b", "y", "-r", "n", "sleep", "600"],
    ] {
        let run = cell.run(&user, "qsub", args);
        assert_eq!(run.code, 0, "{run:?}");
    }
    wait_for("jobs 1, 2, 3 and 5 run", Duration::from_secs(20), || {
        running_jobs(&cell, &[1, 2, 3, 5])
    });
    wait_stopped(&cell, 1, false);
    qmod(&cell, &user, "sj");
    // The job's processes stop; SGE's `s`.
    wait_stopped(&cell, 1, true);
    qmod(&cell, &user, "sj-again");
    qmod(&cell, &other, "sj-other");
    qmod(&cell, &other, "usj-other");
    qmod(&cell, &user, "usj");
    wait_stopped(&cell, 1, false);
    qmod(&cell, &user, "usj-again");
    qmod(&cell, &user, "s-job");
    qmod(&cell, &user, "us-job");
    qmod(&cell, &user, "sj-task");
    qmod(&cell, &user, "sj-array");
    wait_stopped(&cell, 2, true);
    qmod(&cell, &user, "usj-array-range");
    qmod(&cell, &user, "usj-array");
    wait_stopped(&cell, 2, false);
    for case in ["sj-nosuch", "usj-nosuch"] {
        qmod(&cell, &root, case);
    }
    qmod(&cell, &user, "sj-pending");
    qmod(&cell, &root, "sj-root");
    qmod(&cell, &root, "usj-root");
    qmod(&cell, &user, "sj-two");
    qmod(&cell, &user, "usj-two");
    qmod(&cell, &user, "sj-f");
    qmod(&cell, &user, "usj-f");
    // Jobs 1 and 3 stay suspended by sj-two... but usj-f resumed job 1.
    wait_stopped(&cell, 3, true);
    wait_stopped(&cell, 1, false);
    qmod(&cell, &root, "sq");
    let suspended = |cell: &TestCell| !cell.spool.queue_instance_states().suspended.is_empty();
    wait_for("all.q suspended", Duration::from_secs(10), || {
        suspended(&cell)
    });
    qmod(&cell, &root, "sq-again");
    for id in [1, 2, 3, 5] {
        wait_stopped(&cell, id, true);
    }
    let qstat = cell.run(&user, "qstat", &[]);
    let states: Vec<&str> = qstat
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().nth(4))
        .collect();
    assert_eq!(states, ["S", "S", "S", "S", "Ss", "S", "hqw"], "{qstat:?}");
    qmod(&cell, &user, "sq-by-user");
    qmod(&cell, &user, "sj-in-sq");
    qmod(&cell, &root, "usq");
    wait_for("all.q unsuspended", Duration::from_secs(10), || {
        !suspended(&cell)
    });
    // Job 1 and 3 were suspended themselves: they stay stopped.
    wait_stopped(&cell, 2, false);
    wait_stopped(&cell, 5, false);
    wait_stopped(&cell, 1, true);
    wait_stopped(&cell, 3, true);
    qmod(&cell, &user, "usj-after-usq");
    wait_stopped(&cell, 1, false);
    qmod(&cell, &root, "usq-again");
    for (on, off) in [("s-queue", "us-queue"), ("sq-instance", "usq-instance")] {
        qmod(&cell, &root, on);
        wait_for("all.q suspended", Duration::from_secs(10), || {
            suspended(&cell)
        });
        qmod(&cell, &root, off);
        wait_for("all.q unsuspended", Duration::from_secs(10), || {
            !suspended(&cell)
        });
    }
    for case in ["s-nosuch", "sq-nosuch"] {
        qmod(&cell, &root, case);
    }
    wait_stopped(&cell, 2, false);
    // Rescheduling: job 3 (-r y, suspended) is killed and runs again, restarted.
    qmod(&cell, &user, "rj-by-owner");
    qmod(&cell, &other, "rj-by-other");
    qmod(&cell, &root, "rj-not-rerunnable");
    qmod(&cell, &root, "rj-default");
    wait_for(
        "job 3 rescheduled and running again",
        Duration::from_secs(20),
        || {
            state(&cell.spool, gridspool::model::JobId(3)).is_some_and(|s| {
                s.tasks
                    .running
                    .iter()
                    .any(|r| r.restarted && !r.rescheduling)
            })
        },
    );
    wait_stopped(&cell, 3, false);
    let failed: Vec<String> = crate::sched::accounting_records(&cell, gridspool::model::JobId(3))
        .iter()
        .map(|r| r[11].clone())
        .collect();
    assert_eq!(
        failed,
        ["25"],
        "the rescheduled run is accounted with failed 25"
    );
    wait_for("qstat shows job 3 Rr", Duration::from_secs(20), || {
        let qstat = cell.run(&user, "qstat", &[]);
        qstat.stdout.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.first() == Some(&"3") && w.get(4) == Some(&"Rr")
        })
    });
    qmod(&cell, &root, "rj-f-not-rerunnable");
    qmod(&cell, &root, "r-task");
    qmod(&cell, &root, "rj-nosuch");
    qmod(&cell, &root, "rj-pending");
    qmod(&cell, &user, "rq-by-user");
    wait_for(
        "job 5 rescheduled and running again",
        Duration::from_secs(20),
        || {
            state(&cell.spool, gridspool::model::JobId(5))
                .is_some_and(|s| s.tasks.running.iter().any(|r| r.restarted))
        },
    );
}

#[test]
fn qmod_clears_error_states_as_sge_says() {
    let (Some(root), Some(user), Some(other)) = (root(), user1(), user2()) else {
        return skip("qmod_clears_error_states_as_sge_says", "needs root");
    };
    // SGE 8.1.9's default weights, under which its qstat showed the jobs in error.
    let cell = six_slots_scheduled_by(
        "{policy: sge, weight_priority: 1.0, weight_urgency: 0.1, weight_ticket: 0.01}",
    );
    let _d = SchedD::start(&cell, &[]);
    // Jobs 1 to 5 as in the captures' session, then the two in error.
    for _ in 0..5 {
        let run = cell.run(&user, "qsub", &["-b", "y", "-h", "true"]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    for args in [
        &["-b", "y", "-wd", "/nonexistent/dir", "true"][..],
        &["-b", "y", "-t", "1-2", "-wd", "/nonexistent/dir", "true"],
    ] {
        let run = cell.run(&user, "qsub", args);
        assert_eq!(run.code, 0, "{run:?}");
    }
    let in_error = |id: u32| {
        state(&cell.spool, gridspool::model::JobId(id)).is_some_and(|s| s.error.is_some())
    };
    wait_for("jobs 6 and 7 in error", Duration::from_secs(20), || {
        in_error(6) && in_error(7)
    });
    // SGE keeps computing a job's priority while it is in error (`qstat-eqw`): the two
    // lines show what its qstat showed once a pass has run since they failed.
    let expected: Vec<String> = Capture::load("qmod/qstat-eqw.txt")
        .stdout
        .lines()
        .filter(|l| l.contains("Eqw"))
        .map(|l| l.split_whitespace().take(5).collect::<Vec<_>>().join(" "))
        .collect();
    wait_for(
        "the jobs in error show SGE's priority",
        Duration::from_secs(20),
        || {
            let run = cell.run(&user, "qstat", &[]);
            let shown: Vec<String> = run
                .stdout
                .lines()
                .filter(|l| l.contains("Eqw"))
                .map(|l| l.split_whitespace().take(5).collect::<Vec<_>>().join(" "))
                .collect();
            shown == expected
        },
    );
    qmod(&cell, &other, "cj-other");
    qmod(&cell, &user, "cj");
    qmod(&cell, &root, "c-task");
    for case in ["cj-nosuch", "cq-not-in-error"] {
        qmod(&cell, &root, case);
    }
    qmod(&cell, &user, "cq-by-user");
    // Cleared, the jobs are tried again, and fail again: a second accounting record each
    // (tasks 1 and 2 of job 7 both tried twice).
    let records =
        |id: u32| crate::sched::accounting_records(&cell, gridspool::model::JobId(id)).len();
    wait_for("jobs 6 and 7 tried again", Duration::from_secs(20), || {
        records(6) == 2 && records(7) == 4 && in_error(6) && in_error(7)
    });
}
