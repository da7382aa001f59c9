//! Resource quota sets (`sge_resource_quota(5)`): `qconf`'s rule-set forms against the SGE
//! 8.1.9 captures of `tests/compat/record-issue25-rqs.sh`, replayed in the order they were
//! recorded (each case sees the sets the cases before it left).

use crate::support::*;

/// The oracle's cell as the captures saw it: this host with two slots in `all.q`, the
/// oracle's complexes, no rule set.
fn oracle_cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "managers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\", slots: 2}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, pe_list: [smp]}}\n\
             parallel_environments:\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// The rule-set files of the record script, by name.
const FILES: &[(&str, &str)] = &[
    (
        "a.rqs",
        "{\n   name         rqs25_a\n   description  \"capture a\"\n   enabled      false\n   limit        users {sgeuser} to slots=1\n}\n",
    ),
    (
        "b.rqs",
        "{\n   name         rqs25_b\n   description  NONE\n   enabled      FALSE\n   limit        name perhost users * hosts {*} to slots=2\n   limit        users !sgeuser2,@arusers projects * pes !* queues all.q,!foo.q \\\n                hosts @allhosts to slots=1,h_vmem=2G\n   limit        projects {*} to slots=$num_proc*2\n}\n",
    ),
    (
        "b2.rqs",
        "{\n   name         rqs25_b2\n   description  NONE\n   enabled      FALSE\n   limit        name perhost users * hosts {*} to slots=2\n   limit        users !sgeuser2,@arusers projects * pes !* queues all.q,!foo.q \\\n                hosts @allhosts to slots=1,h_vmem=2G\n}\n",
    ),
    (
        "two.rqs",
        "{\n   name rqs25_c\n   limit to slots=3\n}\n{\n   name rqs25_d\n   enabled true\n   description \"two words\"\n   limit users sgeuser to slots=4\n}\n",
    ),
    (
        "a2.rqs",
        "{\n   name         rqs25_a\n   description  \"capture a, modified\"\n   enabled      false\n   limit        users {sgeuser} to slots=5\n}\n",
    ),
    (
        "noto.rqs",
        "{\n   name rqs25_bad\n   limit users sgeuser\n}\n",
    ),
    (
        "nosuchcomplex.rqs",
        "{\n   name rqs25_bad\n   limit to nosuch=1\n}\n",
    ),
    (
        "badbool.rqs",
        "{\n   name rqs25_bad\n   enabled maybe\n   limit to slots=1\n}\n",
    ),
    ("nolimit.rqs", "{\n   name rqs25_bad\n   enabled true\n}\n"),
    (
        "badvalue.rqs",
        "{\n   name rqs25_bad\n   limit to slots=abc\n}\n",
    ),
    (
        "badword.rqs",
        "{\n   name rqs25_bad\n   limit names x to slots=1\n}\n",
    ),
    (
        "duprule.rqs",
        "{\n   name rqs25_bad\n   limit name r1 to slots=1\n   limit name r1 to slots=2\n}\n",
    ),
    (
        "dynglobal.rqs",
        "{\n   name rqs25_bad\n   limit to slots=$num_proc*2\n}\n",
    ),
    (
        "dynhost.rqs",
        "{\n   name rqs25_dyn\n   limit hosts {*} to slots=$num_proc*2,h_vmem=1G\n}\n",
    ),
    ("nobrace.rqs", "name rqs25_bad\nlimit to slots=1\n"),
    (
        "ed-new.sh",
        "#!/bin/sh\nsed -i \"s/limit .*/limit users {sgeuser2} to slots=2/\" \"$1\"\n",
    ),
    (
        "ed-bad.sh",
        "#!/bin/sh\nsed -i \"s/enabled .*/enabled bogus/\" \"$1\"\n",
    ),
];

/// Runs the capture `case` as `user`, the record script's `/tmp/rqs25/` files under `dir`,
/// its `NAME=value` words before `qconf` in the environment.
fn replay(cell: &TestCell, user: &TestUser, case: &str, dir: &std::path::Path) {
    let mut cap = Capture::load(&format!("{case}.txt"));
    let to = format!("{}/", dir.display());
    for text in [&mut cap.command, &mut cap.stdout, &mut cap.stderr] {
        *text = text.replace("/tmp/rqs25/", &to);
    }
    replay_capture(cell, user, &cap);
}

fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in FILES {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let mode = if name.ends_with(".sh") { 0o755 } else { 0o644 };
        set_mode(&path, mode);
    }
    set_mode(dir.path(), 0o755);
    dir
}

#[test]
fn qconf_rule_set_forms_match_sge() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "qconf_rule_set_forms_match_sge",
            "needs root (a manager) and the test users",
        );
    };
    let cell = oracle_cell();
    let dir = files();
    let d = dir.path();
    let drop_bad = || {
        let _ = cell.run(&root, "qconf", &["-drqs", "rqs25_bad"]);
    };
    for case in ["srqsl-none", "srqs-none", "srqs-nosuch"] {
        replay(&cell, &root, &format!("qconf/{case}"), d);
    }
    replay(&cell, &user, "qconf/Arqs-by-user", d);
    for case in ["Arqs", "Arqs-exists", "Arqs-b", "Arqs-two", "Arqs-nofile"] {
        replay(&cell, &root, &format!("qconf/{case}"), d);
    }
    for bad in [
        "noto",
        "nosuchcomplex",
        "badbool",
        "nolimit",
        "badvalue",
        "badword",
        "duprule",
        "dynglobal",
        "nobrace",
    ] {
        replay(&cell, &root, &format!("qconf/Arqs-{bad}"), d);
        drop_bad();
    }
    for case in [
        "Arqs-b2",
        "Arqs-dynhost",
        "srqsl",
        "srqs-a",
        "srqs-b",
        "srqs-all",
        "srqs-list",
        "srqs-list-nosuch",
    ] {
        replay(&cell, &root, &format!("qconf/{case}"), d);
    }
    replay(&cell, &user, "qconf/srqs-by-user", d);
    for case in [
        "Mrqs",
        "Mrqs-name",
        "Mrqs-othername",
        "Mrqs-nosuch",
        "Mrqs-nosuch2",
        "arqs-template",
        "srqs-tpl",
        "arqs-exists",
        "arqs-noname",
        "srqsl-after",
        "drqs-nosuch",
    ] {
        replay(&cell, &root, &format!("qconf/{case}"), d);
    }
    replay(&cell, &user, "qconf/drqs-by-user", d);
    replay(&cell, &root, "qconf/drqs", d);
    // The editor forms (recorded from a cell holding rqs25_a alone).
    let _ = cell.run(
        &root,
        "qconf",
        &["-Arqs", &d.join("a.rqs").display().to_string()],
    );
    for case in [
        "mrqs-bad",
        "arqs-new",
        "srqs-new",
        "arqs-new-noname",
        "srqs-template",
        "drqs-new",
        "mrqs-unchanged",
        "mrqs-nosuch",
    ] {
        replay(&cell, &root, &format!("qconf/{case}"), d);
    }
}

#[test]
fn qquota_help_refusals_and_an_empty_report_match_sge() {
    let Some(user) = user1() else {
        return skip(
            "qquota_help_refusals_and_an_empty_report_match_sge",
            "needs the test users",
        );
    };
    let cell = oracle_cell();
    let dir = files();
    for case in ["help", "bad-option", "none"] {
        replay(&cell, &user, &format!("qquota/{case}"), dir.path());
    }
}

/// The rule sets of the record script's running phase.
const RUN_RQS: &str = "{\n   name         rqs25_user\n   description  NONE\n   enabled      TRUE\n   limit        users {sgeuser} to slots=1\n}\n{\n   name         rqs25_host\n   description  NONE\n   enabled      TRUE\n   limit        name perhost users sgeuser2 queues all.q hosts {*} to slots=1\n   limit        users * to slots=10\n}\n";

/// A cell of one host (this one) with `slots` slots in `all.q`, as the oracle's with
/// `qconf -mattr queue slots 6 all.q`.
fn running_cell(slots: u32) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "managers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\", slots: {slots}}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: {slots}, pe_list: [smp]}}\n\
             parallel_environments:\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// Running tasks by owner, as the spool shows them.
fn running_by_owner(cell: &TestCell) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for j in cell.spool.scan_jobs().expect("scan").jobs {
        *out.entry(j.submitter.owner.clone()).or_insert(0) += j.tasks.running.len();
    }
    out
}

fn qsub_sleep(cell: &TestCell, user: &TestUser, secs: &str) -> String {
    let run = cell.run(
        user,
        "qsub",
        &["-b", "y", "-o", "/dev/null", "-j", "y", "sleep", secs],
    );
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .split_whitespace()
        .nth(2)
        .expect("job id")
        .to_string()
}

#[test]
fn qquota_and_the_pending_reasons_match_sge_with_running_jobs() {
    let (Some(root), Some(u1), Some(u2)) = (root(), user1(), user2()) else {
        return skip(
            "qquota_and_the_pending_reasons_match_sge_with_running_jobs",
            "needs root and the test users",
        );
    };
    let cell = running_cell(6);
    let dir = files();
    let rqs = dir.path().join("run.rqs");
    std::fs::write(&rqs, RUN_RQS).expect("write");
    set_mode(&rqs, 0o644);
    let added = cell.run(&root, "qconf", &["-Arqs", &rqs.display().to_string()]);
    assert_eq!(added.code, 0, "{added:?}");
    let _d = crate::sched::SchedD::start(&cell, &[]);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push((qsub_sleep(&cell, &u1, "300"), "sgeuser"));
    }
    for _ in 0..2 {
        ids.push((qsub_sleep(&cell, &u2, "300"), "sgeuser2"));
    }
    crate::sched::wait_for(
        "one job of each user running, the others with reasons",
        std::time::Duration::from_secs(30),
        || {
            let scan = cell.spool.scan_jobs().expect("scan");
            let running: usize = scan.jobs.iter().map(|j| j.tasks.running.len()).sum();
            running == 2
                && scan
                    .jobs
                    .iter()
                    .filter(|j| j.tasks.running.is_empty())
                    .all(|j| !j.pending_reasons.is_empty())
        },
    );
    assert_eq!(
        running_by_owner(&cell).into_iter().collect::<Vec<_>>(),
        [("sgeuser".to_string(), 1), ("sgeuser2".to_string(), 1)]
    );
    for (case, who) in [
        ("run", &u1),
        ("run-sgeuser2", &u2),
        ("run-root", &root),
        ("run-u-all", &u1),
        ("run-u-sgeuser2", &u1),
        ("run-xml", &u1),
        ("run-l-slots", &u1),
        ("run-l-h_vmem", &u1),
        ("run-q", &u1),
        ("run-q-other", &u1),
        ("run-h", &u1),
        ("run-h-group", &u1),
        ("run-P", &u1),
        ("run-pe", &u1),
    ] {
        replay(&cell, who, &format!("qquota/{case}"), dir.path());
    }
    // `qstat -j` of a waiting job of each: SGE's reason, word for word.
    let host = gridspool::identity::short_hostname();
    for (owner, who, reason) in [
        (
            "sgeuser",
            &u1,
            "cannot run because it exceeds limit \"sgeuser/////\" in rule \"rqs25_user/1\""
                .to_string(),
        ),
        (
            "sgeuser2",
            &u2,
            format!(
                "cannot run because it exceeds limit \"////{host}/\" in rule \"rqs25_host/perhost\""
            ),
        ),
    ] {
        let scan = cell.spool.scan_jobs().expect("scan");
        let waiting = scan
            .jobs
            .iter()
            .find(|j| j.submitter.owner == owner && j.tasks.running.is_empty())
            .expect("a waiting job");
        let run = cell.run(who, "qstat", &["-j", &waiting.id.0.to_string()]);
        assert!(
            run.stdout
                .lines()
                .any(|l| l == format!("scheduling info:            {reason}")),
            "{}",
            run.stdout
        );
    }
    for (id, _) in &ids {
        let _ = cell.run(&root, "qdel", &[id]);
    }
}

#[test]
fn a_user_capped_at_n_slots_never_runs_more_than_n_with_4n_pending_and_others_still_start() {
    let (Some(root), Some(u1), Some(u2)) = (root(), user1(), user2()) else {
        return skip(
            "a_user_capped_at_n_slots_never_runs_more_than_n",
            "needs root and the test users",
        );
    };
    const N: usize = 2;
    let cell = running_cell(8);
    let dir = files();
    let rqs = dir.path().join("cap.rqs");
    std::fs::write(
        &rqs,
        format!("{{\n name cap\n enabled true\n limit users {{sgeuser}} to slots={N}\n}}\n{{\n name perhost\n enabled true\n limit hosts {{*}} to slots=5\n}}\n"),
    )
    .expect("write");
    set_mode(&rqs, 0o644);
    let added = cell.run(&root, "qconf", &["-Arqs", &rqs.display().to_string()]);
    assert_eq!(added.code, 0, "{added:?}");
    let _d = crate::sched::SchedD::start(&cell, &[]);
    for _ in 0..4 * N {
        qsub_sleep(&cell, &u1, "1");
    }
    for _ in 0..6 {
        qsub_sleep(&cell, &u2, "2");
    }
    let (mut most_u1, mut most_total, mut u2_ran) = (0, 0, false);
    crate::sched::wait_for(
        "every job to end",
        std::time::Duration::from_secs(120),
        || {
            let by = running_by_owner(&cell);
            let u1n = by.get("sgeuser").copied().unwrap_or(0);
            let u2n = by.get("sgeuser2").copied().unwrap_or(0);
            most_u1 = most_u1.max(u1n);
            most_total = most_total.max(u1n + u2n);
            u2_ran |= u2n > 0;
            cell.spool.scan_jobs().expect("scan").jobs.is_empty()
        },
    );
    // The cap held while sgeuser had 4N waiting, the per-host {*} limit held for all, and
    // sgeuser2's jobs were not held back by sgeuser's cap.
    assert_eq!(most_u1, N);
    assert!(most_total <= 5, "{most_total}");
    assert!(u2_ran);
}
