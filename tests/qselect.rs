//! `qselect` against the SGE 8.1.9 captures in `tests/compat/qselect/`, and feeding `qmod`.

use crate::sched::{SchedD, cell, wait_for};
use crate::support::*;
use std::time::Duration;

fn compare(cell: &TestCell, user: &TestUser, case: &str) {
    let cap = Capture::load(&format!("qselect/{case}.txt"));
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix("qselect").unwrap_or(&cap.command),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_matches(&cell.run(user, "qselect", &refs), &cap);
}

#[test]
fn qselect_matches_sge() {
    let Some(user) = user1() else {
        return skip("qselect_matches_sge", "needs sgeuser (run as root)");
    };
    // The oracle's cell: all.q on this host with PEs make, smp and mpi.
    let cell = TestCell::new();
    for case in [
        "help",
        "all",
        "q-all.q",
        "q-wildcard",
        "l-arch",
        "l-arch-other",
        "pe-smp",
        "pe-nosuch",
        "qs-d-none",
        "l-h-nosuch",
        "U-sgeuser",
        "q-nosuch",
        "bad-option",
        "qs-e",
        "qs-de",
    ] {
        compare(&cell, &user, case);
    }
}

#[test]
fn qselect_feeds_qmod_and_sees_its_states() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip("qselect_feeds_qmod_and_sees_its_states", "needs root");
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let selected = cell.run(&root, "qselect", &["-l", "arch=lx-amd64"]);
    assert_eq!(selected.code, 0, "{selected:?}");
    let list: Vec<&str> = selected.stdout.lines().collect();
    let run = cell.run(&root, "qmod", &["-d", &list.join(",")]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("disabled", Duration::from_secs(10), || {
        cell.run(&user, "qselect", &["-qs", "d"]).code == 0
    });
    compare(&cell, &user, "qs-d");
}
