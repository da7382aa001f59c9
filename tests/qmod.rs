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
