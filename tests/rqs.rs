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
    let words = gridspool::compat::options::split_words(&cap.command);
    let at = words
        .iter()
        .position(|w| w == "qconf" || w == "qquota")
        .expect("command");
    let mut cmd = cell.command(&words[at], user);
    for w in &words[..at] {
        if let Some((k, v)) = w.split_once('=') {
            cmd.env(k, v);
        }
    }
    let out = cmd
        .args(&words[at + 1..])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_matches(&Run::from(out), &cap);
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
