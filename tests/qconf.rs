//! `qconf`'s show forms against the SGE 8.1.9 captures in `tests/compat/qconf/`: each case
//! recreates the oracle's configuration in a gridspool cell and compares stdout, stderr and the
//! exit code.

use crate::support::*;

/// The oracle's objects as `sge-setup.sh` leaves them, in gridspool's configuration: this
/// host with two slots, `all.q` with PEs make, smp and mpi, the manager `sgeadmin`, users and
/// a project of the captures, and the share tree `share_tree`.
fn oracle_cell(share_tree: &str) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "managers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\", slots: 2}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, pe_list: [make, smp, mpi]}}\n\
             parallel_environments:\n\
             \x20 - {{name: make, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: mpi, slots: 999, allocation_rule: $fill_up}}\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             users:\n  - {{name: sgeuser}}\n  - {{name: sgeuser2}}\n  - {{name: testuser, oticket: 5, fshare: 3}}\n\
             projects:\n  - {{name: proj1, oticket: 7, fshare: 10}}\n\
             {share_tree}\
             scheduler:\n  policy: sge\n  schedule_interval: \"0:0:15\"\n  halftime: 168\n\
             \x20 weight_tickets_share: 0\n  weight_ticket: 0.01\n  weight_waiting_time: 0\n\
             \x20 weight_urgency: 0.1\n  weight_priority: 1.0\n  schedd_job_info: false\n"
        )
    })
}

fn compare(cell: &TestCell, case: &str) {
    let Some(root) = root() else {
        return skip(
            case,
            "qconf shows the cell's configuration as root in the captures",
        );
    };
    let cap = Capture::load(&format!("qconf/{case}.txt"));
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix("qconf").unwrap_or(&cap.command),
    );
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cell.run(&root, "qconf", &arg_refs);
    assert_matches(&run, &cap);
}

const NO_TREE: &str = "";
const TREE: &str = "share_tree:\n  name: Root\n  shares: 1\n  children:\n    - {name: sgeuser, shares: 75}\n    - {name: sgeuser2, shares: 25}\n";

#[test]
fn qconf_lists_match_sge() {
    let cell = oracle_cell(NO_TREE);
    for case in [
        "sel",
        "sql",
        "spl",
        "shgrpl",
        "sm",
        "so",
        "sql-spl",
        "suserl-added",
        "sprjl-proj1",
    ] {
        compare(&cell, case);
    }
}

#[test]
fn qconf_objects_match_sge() {
    let cell = oracle_cell(NO_TREE);
    for case in [
        "sq-all.q",
        "sq-instance",
        "sc",
        "sp-smp",
        "shgrp-allhosts",
        "suser-added",
        "sprj-proj1",
        "ssconf",
        "sstree-none",
    ] {
        compare(&cell, case);
    }
    compare(&oracle_cell(TREE), "sstree");
}

/// `-sconf`: the global configuration with the oracle's values where gridspool has them
/// (`min_uid`, `min_gid` 1000, SGE's `max_unheard` and `reschedule_unknown`, no
/// `qmaster_params`); the execution spool is the cell's own.
#[test]
fn qconf_sconf_matches_sge() {
    let Some(root) = root() else {
        return skip("qconf_sconf_matches_sge", "needs root");
    };
    let cell = TestCell::with_config(|c| {
        format!(
            "{}\nmax_unheard: \"0:5:0\"\nreschedule_unknown: \"0:0:0\"\nenable_reschedule_kill: false\n",
            c.replace("min_uid: 0", "min_uid: 1000")
                .replace("min_gid: 0", "min_gid: 1000")
        )
    });
    let mut cap = Capture::load("qconf/sconf.txt");
    cap.stdout = cap.stdout.replace(
        "/var/spool/gridengine/execd",
        &cell.cell.join("execd").display().to_string(),
    );
    let run = cell.run(&root, "qconf", &["-sconf"]);
    assert_matches(&run, &cap);
    let run = cell.run(&root, "qconf", &["-sconf", "global"]);
    assert_matches(&run, &cap);
    compare(&cell, "sconf-host");
}

/// Showing needs no privilege.
#[test]
fn qconf_shows_to_any_user() {
    let Some(user) = user1() else {
        return skip("qconf_shows_to_any_user", "needs sgeuser (run as root)");
    };
    let cell = oracle_cell(NO_TREE);
    for case in ["sm-by-user", "sq-by-user"] {
        let cap = Capture::load(&format!("qconf/{case}.txt"));
        let args = gridspool::compat::options::split_words(
            cap.command.strip_prefix("qconf").unwrap_or(&cap.command),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_matches(&cell.run(&user, "qconf", &refs), &cap);
    }
}

#[test]
fn qconf_says_what_does_not_exist_as_sge_does() {
    let cell = oracle_cell(NO_TREE);
    for case in [
        "sq-nosuch",
        "sp-nosuch",
        "shgrp-nosuch",
        "suser-nosuch",
        "sprj-nosuch",
    ] {
        compare(&cell, case);
    }
}

#[test]
fn qconf_command_line_errors_and_help_match_sge() {
    let cell = oracle_cell(NO_TREE);
    for case in ["help", "nothing", "sp-none", "bad-option"] {
        compare(&cell, case);
    }
}

#[test]
fn qconf_refuses_what_it_cannot_do_yet_and_changes_nothing() {
    let Some(root) = root() else {
        return skip("qconf_refuses", "needs root");
    };
    let cell = oracle_cell(NO_TREE);
    let before = std::fs::read(cell.cell.join("config.yaml")).expect("config");
    let run = cell.run(&root, "qconf", &["-am", "alice"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the -am option is not supported by gridspool"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read(cell.cell.join("config.yaml")).expect("config"),
        before
    );
}
