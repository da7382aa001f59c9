//! Access lists (`access_list(5)`) against the SGE 8.1.9 captures recorded by
//! `tests/compat/record-issue25-acl.sh`: `qconf -au -du -Au -Mu -mu -su -sul -dul`, the
//! lists of queues, hosts and projects, replayed in the captures' order on a cell like the
//! oracle's, each compared for stdout, stderr and exit code.

use crate::support::*;

/// The oracle's cell: this host with two slots and `all.q` on it.
fn oracle_cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "# the oracle's cell\nmanagers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\", slots: 2}}  # this machine\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, pe_list: [make, smp, mpi]}}\n\
             parallel_environments:\n\
             \x20 - {{name: make, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: mpi, slots: 999, allocation_rule: $fill_up}}\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// Runs capture `case` as `user`, its files under `files` instead of the oracle's
/// `/tmp/cap/`, its `NAME=value` words before `qconf` in the environment.
fn replay(cell: &TestCell, user: &TestUser, case: &str, files: &std::path::Path) {
    let mut cap = Capture::load(&format!("qconf/{case}.txt"));
    let dir = format!("{}/", files.display());
    for text in [&mut cap.command, &mut cap.stdout, &mut cap.stderr] {
        *text = text.replace("/tmp/cap/", &dir);
    }
    replay_capture(cell, user, &cap);
}

/// The files of the captures' `-Au`/`-Mu`, as the recording script wrote them.
fn write_files(dir: &std::path::Path) {
    for (name, text) in [
        (
            "acl25d",
            "name    acl25d\ntype    ACL,DEPT\nfshare  10\noticket 5\nentries sgeuser2,@sgeuser2\n",
        ),
        (
            "acl25d-mod",
            "name    acl25d\ntype    DEPT\nfshare  20\noticket 0\nentries sgeuser2\n",
        ),
        (
            "acl25e-share",
            "name    acl25e\ntype    ACL\nfshare  10\noticket 0\nentries sgeuser2\n",
        ),
        (
            "acl25f-missing",
            "name    acl25f\ntype    ACL\nentries sgeuser2\n",
        ),
        (
            "acl25g-badtype",
            "name    acl25g\ntype    NOTATYPE\nfshare  0\noticket 0\nentries NONE\n",
        ),
        (
            "nosuch25",
            "name    nosuch25\ntype    ACL\nfshare  0\noticket 0\nentries NONE\n",
        ),
    ] {
        std::fs::write(dir.join(name), text).expect("write");
    }
}

#[test]
fn access_lists_are_made_shown_changed_and_deleted_as_sge_does() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "access_lists_are_made_shown_changed_and_deleted_as_sge_does",
            "needs root (a manager) and the test users",
        );
    };
    let cell = oracle_cell();
    let files = tempfile::tempdir().expect("tempdir");
    write_files(files.path());
    let r = |case: &str| replay(&cell, &root, case, files.path());
    let u = |case: &str| replay(&cell, &user, case, files.path());
    for case in [
        "sul-default",
        "su-defaultdepartment",
        "su-arusers",
        "su-nosuch",
        "au-new",
        "au-more",
        "au-again",
        "su-acl25a",
        "au-two-lists",
        "su-two",
        "du",
        "du-again",
        "du-nosuch-list",
    ] {
        r(case);
    }
    u("au-by-user");
    u("du-by-user");
    u("su-by-user");
    for case in [
        "sul-acl",
        "Au",
        "Au-again",
        "su-acl25d",
        "Mu",
        "su-acl25d-after-Mu",
        "Mu-nosuch",
        "Au-acl-fshare",
        "Au-missing",
        "Au-badtype",
        "Au-nofile",
        "mu-editor-true",
        "mu-nosuch",
        "au-dept-twice",
        "dul-nosuch",
        "mattr-user_lists",
        "mattr-user_lists-nosuch",
        "sq-user_lists",
        "dul-referenced",
    ] {
        r(case);
    }
    let text = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    for kept in ["# the oracle's cell", "# this machine"] {
        assert!(text.contains(kept), "comment {kept:?} lost:\n{text}");
    }
    // The queue let go of the list: it can be deleted.
    let run = cell.run(
        &root,
        "qconf",
        &["-rattr", "queue", "user_lists", "NONE", "all.q"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    r("dul");
}

#[test]
fn hosts_projects_and_the_global_configuration_show_their_lists_as_sge_does() {
    let Some(root) = root() else {
        return skip(
            "hosts_projects_and_the_global_configuration_show_their_lists_as_sge_does",
            "needs root (a manager)",
        );
    };
    let cell = oracle_cell();
    let files = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        let run = cell.run(&root, "qconf", args);
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
    };
    run(&["-au", "sgeuser,@sgeuser", "acl25a"]);
    std::fs::write(
        files.path().join("acl25d"),
        "name acl25d\ntype ACL\nfshare 0\noticket 0\nentries sgeuser2\n",
    )
    .expect("write");
    run(&["-Au", &files.path().join("acl25d").display().to_string()]);
    // An execution host's empty list takes no -mattr in SGE 8.1.9; -aattr adds to it.
    let host = gridspool::identity::short_hostname();
    replay(&cell, &root, "mattr-exechost-user_lists", files.path());
    replay(&cell, &root, "aattr-exechost-user_lists", files.path());
    let se = cell.run(&root, "qconf", &["-se", &host]);
    let cap = Capture::load("qconf/se-user_lists.txt");
    let lists = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("user_lists") || l.contains("projects"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lists(&se.stdout), lists(&cap.stdout), "{se:?}");
    std::fs::write(
        files.path().join("prj25"),
        "name    prj25\noticket 0\nfshare  0\nacl     acl25a\nxacl    acl25d\n",
    )
    .expect("write");
    replay(&cell, &root, "Aprj-acl", files.path());
    replay(&cell, &root, "sprj-acl", files.path());
    // sge_conf(5)'s global lists, from config.yaml.
    let path = cell.cell.join("config.yaml");
    let text = std::fs::read_to_string(&path).expect("config");
    std::fs::write(&path, text + "cluster_access: {user_lists: [acl25a]}\n").expect("write");
    let sconf = cell.run(&root, "qconf", &["-sconf"]);
    let cap = Capture::load("qconf/sconf-user_lists.txt");
    let global = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("user_lists") || l.starts_with("xuser_lists"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(global(&sconf.stdout), global(&cap.stdout), "{sconf:?}");
}

#[test]
fn a_project_a_queue_takes_is_not_deleted_and_mu_changes_a_list() {
    let Some(root) = root() else {
        return skip(
            "a_project_a_queue_takes_is_not_deleted_and_mu_changes_a_list",
            "needs root (a manager)",
        );
    };
    let cell = oracle_cell();
    let files = tempfile::tempdir().expect("tempdir");
    let prj = files.path().join("prj25");
    std::fs::write(
        &prj,
        "name prj25\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n",
    )
    .expect("write");
    let run = cell.run(&root, "qconf", &["-Aprj", &prj.display().to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = cell.run(
        &root,
        "qconf",
        &["-aattr", "queue", "projects", "prj25", "all.q"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    // SGE 8.1.9's words (seen on the oracle while all.q's projects held prj25).
    let run = cell.run(&root, "qconf", &["-dprj", "prj25"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "denied: project \"prj25\" is still referenced in projects of queue \"all.q\"\n"
        ),
        "{run:?}"
    );
    // -mu through an editor that changes the list's fshare.
    let run = cell.run(&root, "qconf", &["-au", "sgeuser", "acl25a"]);
    assert_eq!(run.code, 0, "{run:?}");
    let editor = files.path().join("editor.sh");
    // Written by a sh of its own: a file this multi-threaded process opened for writing
    // could still be open in a child another test thread forked ("Text file busy").
    let made = std::process::Command::new("sh")
        .args([
            "-c",
            "printf '#!/bin/sh\\nsed -i \"s/^fshare .*/fshare  40/\" \"$1\"\\n' > \"$1\" && chmod 755 \"$1\"",
            "sh",
        ])
        .arg(&editor)
        .status()
        .expect("sh");
    assert!(made.success());
    let out = cell
        .command("qconf", &root)
        .env("EDITOR", &editor)
        .args(["-mu", "acl25a"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("qconf");
    let run = Run::from(out);
    let host = gridspool::identity::short_hostname();
    assert_eq!(
        (run.code, run.stderr.clone()),
        (
            0,
            format!("root@{host} modified \"acl25a\" in userset list\n")
        ),
        "{run:?}"
    );
    let shown = cell.run(&root, "qconf", &["-su", "acl25a"]);
    assert_eq!(
        shown.stdout,
        "name    acl25a\ntype    ACL\nfshare  40\noticket 0\nentries sgeuser\n"
    );
}
