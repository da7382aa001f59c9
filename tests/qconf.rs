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
             hosts:\n  - {{name: \"{host}\"}}\n\
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
        "se-nosuch",
        "sst-none",
    ] {
        compare(&cell, case);
    }
}

#[test]
fn qconf_shows_hosts_and_the_formatted_share_tree_as_sge_does() {
    let Some(root) = root() else {
        return skip("qconf_shows_hosts", "the captures are root's");
    };
    let cell = oracle_cell(TREE);
    for case in ["sh", "ss"] {
        compare(&cell, case);
    }
    // SGE's show_sharetree: name=shares, three blanks a level.
    let run = cell.run(&root, "qconf", &["-sst"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        ("Root=1\n   sgeuser=75\n   sgeuser2=25\n", 0)
    );
    // -se: the capture's lines, but for the load values, which are this machine's now: the
    // same names in the same order, wrapped within 80 columns as SGE wraps them.
    let host = gridspool::identity::short_hostname();
    let cap = Capture::load("qconf/se-host.txt");
    let run = cell.run(&root, "qconf", &["-se", &host]);
    assert_eq!(run.code, 0, "{run:?}");
    let split = |text: &str| {
        let mut rest = Vec::new();
        let mut names = Vec::new();
        let mut in_values = false;
        for line in text.lines() {
            if line.starts_with("load_values") {
                in_values = true;
            } else if in_values && !line.starts_with(' ') {
                in_values = false;
            }
            if in_values {
                assert!(line.len() <= 80, "{line}");
                let values = line.get(22..).unwrap_or("").trim_end_matches(" \\");
                names.extend(
                    values
                        .split(',')
                        .filter(|v| !v.is_empty())
                        .map(|v| v.split('=').next().unwrap_or("").to_string()),
                );
            } else {
                rest.push(line.replace("vm", "HOST"));
            }
        }
        (rest, names)
    };
    let (rest, names) = split(&run.stdout.replace(&host, "vm"));
    let (cap_rest, cap_names) = split(&cap.stdout);
    assert_eq!(rest, cap_rest);
    assert_eq!(names, cap_names);
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
    let run = cell.run(&root, "qconf", &["-Ackpt", "ckpt1"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the -Ackpt option is not supported by gridspool"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read(cell.cell.join("config.yaml")).expect("config"),
        before
    );
}

/// The oracle's cell of the changing forms' captures: `all.q` with 6 slots.
fn six_slot_oracle() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "# the oracle's cell\nmanagers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\"}}  # this machine\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  # the default queue\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 6, pe_list: [make, smp, mpi]}}\n\
             parallel_environments:\n\
             \x20 - {{name: make, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: mpi, slots: 999, allocation_rule: $fill_up}}\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// Runs a changing form's capture as `user`, its files under `files` instead of the
/// oracle's `/tmp/cap/`, and its `NAME=value` words before `qconf` in the environment.
fn change(cell: &TestCell, user: &TestUser, case: &str, files: &std::path::Path) {
    let mut cap = Capture::load(&format!("qconf/{case}.txt"));
    let dir = format!("{}/", files.display());
    for text in [&mut cap.command, &mut cap.stdout, &mut cap.stderr] {
        *text = text.replace("/tmp/cap/", &dir);
    }
    replay_capture(cell, user, &cap);
}

#[test]
fn qconf_changes_the_configuration_as_sge_says() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "qconf_changes_the_configuration_as_sge_says",
            "needs root (a manager) and the test users",
        );
    };
    let cell = six_slot_oracle();
    let files = tempfile::tempdir().expect("tempdir");
    for case in [
        "mattr-slots",
        "mattr-same",
        "mattr-nosuch-queue",
        "mattr-bad-object",
        "mattr-missing",
        "mattr-two",
        "dattr-pe",
        "dattr-pe-again",
        "aattr-pe",
        "aattr-pe-again",
        "rattr-pe",
        "mattr-exechost",
        "aattr-exechost",
        "dattr-exechost",
        "rattr-exechost",
        "mattr-exechost-nosuch",
        "mattr-pe-slots",
        "mattr-pe-nosuch",
        "mattr-hostgroup",
        "aattr-hostgroup-nosuch-host",
        "am",
        "am-again",
        "dm",
        "dm-again",
        "ao",
        "do",
        "Mq-nofile",
        "dq-nosuch",
        "mq-nosuch",
        "mq-editor-fails",
        "mq-editor-true",
    ] {
        change(&cell, &root, case, files.path());
    }
    for case in ["mattr-by-user", "ao-by-user"] {
        change(&cell, &user, case, files.path());
    }
    // The file forms, over this cell's own `qconf -sq all.q` (as the oracle's script made
    // its files from the oracle's).
    let shown = cell.run(&root, "qconf", &["-sq", "all.q"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    let write =
        |name: &str, text: String| std::fs::write(files.path().join(name), text).expect("write");
    let with = |key: &str, value: &str| {
        shown
            .stdout
            .lines()
            .map(|l| {
                if l.split_whitespace().next() == Some(key) {
                    format!("{key:<22}{value}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect::<String>()
    };
    write("allq.txt", shown.stdout.clone());
    write("allq5.txt", with("slots", "5"));
    write("allq-bad.txt", with("slots", "lots"));
    write(
        "allq-noslots.txt",
        shown
            .stdout
            .lines()
            .filter(|l| !l.starts_with("slots"))
            .map(|l| format!("{l}\n"))
            .collect(),
    );
    write(
        "allq-extra.txt",
        format!("{}nosuch_attr  1\n", shown.stdout),
    );
    write("testq.txt", with("qname", "test.q"));
    let before = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    change(&cell, &root, "Mq-same", files.path());
    assert_eq!(
        std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config"),
        before,
        "-Mq of -sq's output changes nothing"
    );
    for case in [
        "Mq-slots",
        "Mq-bad-value",
        "Mq-missing-attr",
        "Mq-unknown-attr",
        "Mq-nosuch",
        "Aq",
        "Aq-again",
        "sql-after-Aq",
        "dq",
    ] {
        change(&cell, &root, case, files.path());
    }
    change(&cell, &user, "Mq-by-user", files.path());
    // Back to 6 slots and rerun FALSE: the oracle's queue at the end of its session.
    for args in [
        &["-mattr", "queue", "slots", "6", "all.q"][..],
        &["-mattr", "queue", "rerun", "FALSE", "all.q"],
    ] {
        let run = cell.run(&root, "qconf", args);
        assert_eq!(run.code, 0, "{run:?}");
    }
    change(&cell, &root, "sq-restored", files.path());
    // The scheduler configuration, over this cell's own `qconf -ssconf`.
    let sconf = cell.run(&root, "qconf", &["-ssconf"]);
    let set = |key: &str, value: &str| {
        sconf
            .stdout
            .lines()
            .map(|l| {
                if l.split_whitespace().next() == Some(key) {
                    format!("{key:<34}{value}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect::<String>()
    };
    write("sconf.txt", sconf.stdout.clone());
    write("sconf2.txt", set("weight_urgency", "0.200000"));
    write("sconf-bad.txt", set("weight_urgency", "abc"));
    for case in ["Msconf-same", "Msconf", "Msconf-bad", "msconf-editor-true"] {
        change(&cell, &root, case, files.path());
    }
    // Execution hosts: -Me and -Ae of -se's output are refused for its load_values, as by
    // SGE; without them a host is changed or added.
    let host = gridspool::identity::short_hostname();
    let se = cell.run(&root, "qconf", &["-se", &host]);
    write("exech.txt", se.stdout.clone());
    write(
        "exech-lh.txt",
        se.stdout.replace(
            &format!("hostname              {host}"),
            "hostname              localhost",
        ),
    );
    for case in ["Me-same", "Ae", "de-nosuch", "de"] {
        change(&cell, &root, case, files.path());
    }
    let plain: String = se
        .stdout
        .lines()
        .filter(|l| {
            !l.starts_with(' ') && !l.starts_with("load_values") && !l.starts_with("processors")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let node = plain
        .replace(
            &format!("hostname              {host}"),
            "hostname              node02",
        )
        .replace(
            "complex_values        NONE",
            "complex_values        slots=4,h_vmem=8G",
        );
    write("node02.txt", node);
    let me = format!("root@{}", gridspool::identity::short_hostname());
    for (args, stderr) in [
        (
            vec!["-Ae", "node02.txt"],
            format!("{me} added \"node02\" to exechost list\n"),
        ),
        (
            vec!["-Ae", "node02.txt"],
            "exechost \"node02\" already exists\n".to_string(),
        ),
        (
            vec!["-de", "node02"],
            format!("{me} removed \"node02\" from exechost list\n"),
        ),
    ] {
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a.ends_with(".txt") {
                    files.path().join(a).display().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = cell.run(&root, "qconf", &refs);
        assert_eq!(run.stderr, stderr, "{run:?}");
    }
    // The share tree from share_tree(5)'s text.
    write(
        "stree.txt",
        "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=1,2\nid=1\nname=sgeuser\ntype=0\nshares=75\nchildnodes=NONE\nid=2\nname=sgeuser2\ntype=0\nshares=25\nchildnodes=NONE\n".into(),
    );
    let mut cap = Capture::load("qconf/Astree.txt");
    cap.command = cap.command.replace(
        "/tmp/sge-stree.txt",
        &files.path().join("stree.txt").display().to_string(),
    );
    let words = gridspool::compat::options::split_words(&cap.command);
    let refs: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    assert_matches(&cell.run(&root, "qconf", &refs), &cap);
    let sst = cell.run(&root, "qconf", &["-sst"]);
    assert_eq!(sst.stdout, "Root=1\n   sgeuser=75\n   sgeuser2=25\n");
    // The complexes: the table -sc shows reads back unchanged; a new line adds a complex.
    let sc = cell.run(&root, "qconf", &["-sc"]);
    write("complex.txt", sc.stdout.clone());
    change(&cell, &root, "Mc-same", files.path());
    let with_gpu = sc.stdout.replacen(
        "h_core",
        "gpu                 gpu        INT       <=    YES         YES        0        0\nh_core",
        1,
    );
    write("complex-gpu.txt", with_gpu.clone());
    let run = cell.run(
        &root,
        "qconf",
        &[
            "-Mc",
            &files.path().join("complex-gpu.txt").display().to_string(),
        ],
    );
    assert_eq!(
        run.stderr,
        format!("{me} added \"gpu\" to complex entry list\n"),
        "{run:?}"
    );
    assert_eq!(cell.run(&root, "qconf", &["-sc"]).stdout, with_gpu);
    // Users and projects in user(5) and project(5)'s text, SGE's list messages.
    write(
        "user.txt",
        "name alice\noticket 0\nfshare 7\ndelete_time 0\ndefault_project NONE\n".into(),
    );
    write(
        "prj.txt",
        "name proj9\noticket 3\nfshare 5\nacl NONE\nxacl NONE\n".into(),
    );
    let file = |n: &str| files.path().join(n).display().to_string();
    for (args, stderr) in [
        (
            vec!["-Auser".to_string(), file("user.txt")],
            format!("{me} added \"alice\" to user list\n"),
        ),
        (
            vec!["-Aprj".to_string(), file("prj.txt")],
            format!("{me} added \"proj9\" to project list\n"),
        ),
        (
            vec!["-Mprj".to_string(), file("prj.txt")],
            format!("{me} modified \"proj9\" in project list\n"),
        ),
    ] {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = cell.run(&root, "qconf", &refs);
        assert_eq!(
            (run.stderr.as_str(), run.code),
            (stderr.as_str(), 0),
            "{run:?}"
        );
    }
    let run = cell.run(&root, "qconf", &["-suser", "alice"]);
    assert_eq!(
        run.stdout,
        "name alice\noticket 0\nfshare 7\ndelete_time 0\ndefault_project NONE\n"
    );
    for (args, stderr) in [
        (
            ["-duser", "alice"],
            format!("{me} removed \"alice\" from user list\n"),
        ),
        (
            ["-dprj", "proj9"],
            format!("{me} removed \"proj9\" from project list\n"),
        ),
        (
            ["-dprj", "proj9"],
            "denied: project \"proj9\" does not exist\n".to_string(),
        ),
    ] {
        let run = cell.run(&root, "qconf", &args);
        assert_eq!(run.stderr, stderr, "{run:?}");
    }
    let after = cell.run(&root, "qconf", &["-ssconf"]);
    assert_eq!(after.stdout, set("weight_urgency", "0.200000"), "{after:?}");
    let text = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    for kept in [
        "# the oracle's cell",
        "# this machine",
        "# the default queue",
    ] {
        assert!(text.contains(kept), "comment {kept:?} lost:\n{text}");
    }
}

#[test]
fn sched_d_applies_a_qconf_change_at_once() {
    let Some(root) = root() else {
        return skip(
            "sched_d_applies_a_qconf_change_at_once",
            "qconf changes need a manager (root)",
        );
    };
    use crate::sched::{SchedD, cwd, state, submit, wait_for, workdir};
    use std::time::Duration;
    let cell = crate::sched::cell(2);
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let run = cell.run(&root, "qconf", &["-mattr", "queue", "slots", "1", "all.q"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("sched_d reloads", Duration::from_secs(10), || {
        std::fs::read_to_string(
            cell.root
                .join(format!("sched_d.{}.stderr", std::process::id())),
        )
        .is_ok_and(|log| log.contains("reloading"))
    });
    let first = submit(&cell.spool, "sleep 30\n", |s, _| s.cwd = cwd(&dir));
    let second = submit(&cell.spool, "sleep 30\n", |s, _| s.cwd = cwd(&dir));
    let running = |id| state(&cell.spool, id).is_some_and(|s| !s.tasks.running.is_empty());
    wait_for("the first job runs", Duration::from_secs(10), || {
        running(first)
    });
    wait_for("the second job's verdict", Duration::from_secs(10), || {
        state(&cell.spool, second).is_some_and(|s| !s.pending_reasons.is_empty())
    });
    assert!(!running(second), "one slot only");
    let run = cell.run(&root, "qconf", &["-mattr", "queue", "slots", "2", "all.q"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the second job runs", Duration::from_secs(10), || {
        running(second)
    });
    let run = cell.run(&root, "qdel", &["-u", "*"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn a_manager_who_may_not_write_config_yaml_changes_it_through_sched_d() {
    let (Some(_root), Some(user)) = (root(), user1()) else {
        return skip(
            "a_manager_who_may_not_write_config_yaml_changes_it_through_sched_d",
            "needs root (to own config.yaml) and the test users",
        );
    };
    use crate::sched::SchedD;
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "managers: [{}]\nhosts:\n  - {{name: \"{host}\", slots: 2}}  # this machine\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 2}}\nscheduler: {{policy: sge}}\n",
            user.name
        )
    });
    let config = cell.cell.join("config.yaml");
    let meta = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(p).expect("config");
        (m.uid(), m.mode() & 0o7777)
    };
    let before = meta(&config);
    let _d = SchedD::start(&cell, &[]);
    let run = cell.run(&user, "qconf", &["-mattr", "queue", "slots", "1", "all.q"]);
    assert_eq!(
        (run.stdout.as_str(), run.code),
        (
            format!(
                "{}@{host} modified \"all.q\" in cluster queue list\n",
                user.name
            )
            .as_str(),
            0
        ),
        "{run:?}"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(
        text.contains("slots: 1}") && text.contains("# this machine"),
        "{text}"
    );
    assert_eq!(meta(&config), before, "owner and mode kept");
    // A user who is not a manager is refused before anything is asked.
    let Some(other) = user2() else { return };
    let run = cell.run(&other, "qconf", &["-mattr", "queue", "slots", "2", "all.q"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        std::fs::read_to_string(&config)
            .expect("config")
            .contains("slots: 1}")
    );
}
