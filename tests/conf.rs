//! Issue 26: the global configuration, hosts' local configurations, the global execution
//! host and the checkpointing lists, against SGE 8.1.9: the captures of
//! `tests/compat/record-issue26-conf.sh` (`tests/compat/qconf/i26-*`) replayed in a cell set
//! up as the oracle was, and the site fixture `tests/compat/import/sge-cell/` (what the
//! importer feeds to `qconf -M*`, and what `qconf -s*` must then print).

use crate::support::*;
use std::path::{Path, PathBuf};

/// A fixture file of the site cell: (stdout, stderr) as `# stderr:` splits them.
fn fixture(name: &str) -> (String, String) {
    crate::import::fixture_saved(name)
}

/// The cell's own execution spool, which `execd_spool_dir` shows.
fn exec_spool(cell: &TestCell) -> String {
    cell.cell.join("execd").display().to_string()
}

/// A cell with the oracle's global configuration where gridspool keeps it (SGE's
/// `min_uid`, `min_gid`, `max_unheard`, `reschedule_unknown` and no `qmaster_params`), and a
/// consumable `conf26_lic` for the global host's cases.
fn oracle_cell() -> TestCell {
    TestCell::with_config(|c| {
        format!(
            "{}\nmax_unheard: \"0:5:0\"\nreschedule_unknown: \"0:0:0\"\nenable_reschedule_kill: false\n",
            c.replace("min_uid: 0", "min_uid: 1000")
                .replace("min_gid: 0", "min_gid: 1000")
                .replace(
                    "complexes: []",
                    "complexes:\n  - {name: conf26_lic, shortcut: c26, type: INT, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}"
                )
        )
    })
}

/// The files and editors of the record script, under `dir` instead of `/tmp/conf26/`: the
/// oracle's global configuration as `global` (its execution spool the cell's), the script's
/// changed copies, and its editors.
fn script_files(cell: &TestCell, dir: &Path) -> String {
    let host = gridspool::identity::short_hostname();
    let orig = Capture::load("qconf/i26-sconf-restored.txt")
        .stdout
        .replace("/var/spool/gridengine/execd", &exec_spool(cell));
    let set = |text: &str, attr: &str, value: &str| -> String {
        text.lines()
            .map(|l| {
                if l.split_whitespace().next() == Some(attr) {
                    format!("{attr:<29}{value}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    for sub in ["orig", "g", "l", "x", "eh"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    std::fs::write(dir.join("orig/global"), &orig).expect("write");
    let mut changed = orig.clone();
    for (attr, value) in [
        ("max_unheard", "00:06:00"),
        ("mailer", "/bin/mail"),
        ("min_uid", "500"),
        ("reschedule_unknown", "00:02:00"),
        ("qmaster_params", "ENABLE_RESCHEDULE_KILL=1"),
        ("prolog", "/bin/true"),
    ] {
        changed = set(&changed, attr, value);
    }
    std::fs::write(dir.join("g/global"), changed).expect("write");
    std::fs::write(dir.join("x/notahost"), &orig).expect("write");
    std::fs::write(dir.join("x").join(&host), "reschedule_unknown 00:10:00\n").expect("write");
    std::fs::write(dir.join("l").join(&host), "reschedule_unknown 00:20:00\n").expect("write");
    std::fs::write(
        dir.join("eh/global"),
        "hostname global\nload_scaling NONE\ncomplex_values conf26_lic=3\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n",
    )
    .expect("write");
    let d = dir.display();
    for (name, body) in [
        (
            "lrt-editor",
            "sed -i \"s/^load_report_time .*/load_report_time 00:00:50/\" \"$1\"".to_string(),
        ),
        ("copy-editor", format!("cp \"$1\" {d}/edited")),
        (
            "ru-editor",
            "sed -i \"s/^reschedule_unknown .*/reschedule_unknown 00:40:00/\" \"$1\"".to_string(),
        ),
        (
            "ru-local-editor",
            "printf \"reschedule_unknown 00:30:00\\n\" > \"$1\"".to_string(),
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
        set_mode(&path, 0o755);
    }
    set_mode(dir, 0o755);
    orig
}

/// Replays capture `case` (`qconf/i26-<case>.txt`) as `user`, its files under `dir`, its
/// host `vm` this one, SGE's execution spool the cell's.
fn replay(cell: &TestCell, user: &TestUser, case: &str, dir: &Path) {
    let host = gridspool::identity::short_hostname();
    let mut cap = Capture::load(&format!("qconf/i26-{case}.txt"));
    let prefix = format!("{}/", dir.display());
    cap.command = cap
        .command
        .replace("/tmp/conf26/", &prefix)
        .replace("/vm", &format!("/{host}"))
        .replace(",vm", &format!(",{host}"));
    if cap.command.ends_with(" vm") {
        cap.command = format!("{}{host}", &cap.command[..cap.command.len() - 2]);
    }
    for text in [&mut cap.stdout, &mut cap.stderr] {
        *text = text
            .replace("/tmp/conf26/", &prefix)
            .replace("/var/spool/gridengine/execd", &exec_spool(cell));
    }
    replay_capture(cell, user, &cap);
}

fn config_text(cell: &TestCell) -> String {
    std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config.yaml")
}

fn loaded(cell: &TestCell) -> gridspool::config::ClusterConfig {
    gridspool::config::ClusterConfig::load(&cell.cell.join("config.yaml")).expect("config")
}

/// Item 1: the site's `qconf -sconf` text, fed to `qconf -Mconf` as a file named `global`,
/// is what `qconf -sconf` prints after, but for the execution spool (the cell's own: the
/// value gridspool refuses, naming it, until the importer gives it); and `sched_d` reads
/// SGE's values (5 minutes unheard, no rescheduling, no ENABLE_RESCHEDULE_KILL).
#[test]
fn the_fixtures_global_configuration_reads_back_through_mconf() {
    let Some(root) = root() else {
        return skip(
            "the_fixtures_global_configuration",
            "needs root (a manager)",
        );
    };
    let cell = TestCell::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("global");
    let (sge, _) = fixture("qconf-sconf.txt");
    std::fs::write(&file, &sge).expect("write");
    let before = config_text(&cell);
    let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            format!(
                "error: gridspool has no execd_spool_dir: its only value is {}\n",
                exec_spool(&cell)
            )
            .as_str()
        ),
        "{run:?}"
    );
    assert_eq!(config_text(&cell), before, "a refused text changes nothing");

    let ours = sge.replace("/var/spool/gridengine/execd", &exec_spool(&cell));
    std::fs::write(&file, &ours).expect("write");
    let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
    let host = gridspool::identity::short_hostname();
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            0,
            format!("root@{host} modified \"global\" in configuration list\n").as_str()
        ),
        "{run:?}"
    );
    let run = cell.run(&root, "qconf", &["-sconf"]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ours.as_str()));
    let c = loaded(&cell);
    assert_eq!((c.min_uid, c.min_gid), (1000, 1000));
    assert_eq!(c.max_unheard(), std::time::Duration::from_secs(300));
    assert_eq!(c.reschedule_unknown(&host), None);
    assert!(!c.enable_reschedule_kill());
    // Again: the same text changes nothing more.
    let text = config_text(&cell);
    let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(config_text(&cell), text);
}

/// Item 1: SGE's -Mconf and -mconf of the global configuration, as the oracle answered.
#[test]
fn global_configuration_changes_as_sge_says() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "global_configuration_changes_as_sge_says",
            "needs root and sgeuser",
        );
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    script_files(&cell, dir.path());
    let d = dir.path();
    for case in ["sconf-restored", "Mconf-nofile", "Mconf-notahost"] {
        replay(&cell, &root, case, d);
    }
    let changed = std::fs::read(d.join("g/global")).expect("read");
    std::fs::copy(d.join("orig/global"), d.join("g/global")).expect("copy");
    replay(&cell, &root, "Mconf-same", d);
    replay(&cell, &user, "Mconf-by-user", d);
    std::fs::write(d.join("g/global"), changed).expect("write");
    for case in ["Mconf-changed", "sconf-after-Mconf"] {
        replay(&cell, &root, case, d);
    }
    let c = loaded(&cell);
    assert_eq!(c.mailer(), PathBuf::from("/bin/mail"));
    assert_eq!(c.prolog.as_deref(), Some("/bin/true"));
    assert_eq!(c.min_uid, 500);
    assert!(c.enable_reschedule_kill());
    let orig = d.join("orig/global").display().to_string();
    assert_eq!(cell.run(&root, "qconf", &["-Mconf", &orig]).code, 0);
    for case in ["mconf-editor-true", "mconf-global-lrt", "sconf-after-mconf"] {
        replay(&cell, &root, case, d);
    }
    assert_eq!(
        loaded(&cell).load_report_interval(),
        std::time::Duration::from_secs(50)
    );
    // Back to the oracle's, as the script restores it.
    assert_eq!(cell.run(&root, "qconf", &["-Mconf", &orig]).code, 0);
    replay(&cell, &root, "sconf-restored", d);
}

/// Item 1: what gridspool cannot hold is refused, every attribute named at once (the
/// importer prints them), and nothing is written; SGE takes anything here (its captures
/// `i26-Mconf-unknown-attr`, `-bad-*`: DIVERGENCES.md).
#[test]
fn global_configuration_refuses_what_gridspool_cannot_hold() {
    let Some(root) = root() else {
        return skip("global_configuration_refuses", "needs root");
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    let orig = script_files(&cell, dir.path());
    let file = dir.path().join("x/global");
    let before = config_text(&cell);
    for (from, to, said) in [
        (
            "xterm                        /usr/bin/xterm\n",
            "xterm                        /usr/bin/rxvt\nconf26_bogus 1\n",
            "error: unknown attribute name \"conf26_bogus\"\n",
        ),
        (
            "max_unheard                  00:05:00",
            "max_unheard abc",
            "error: error parsing time value from string \"abc\" for \"max_unheard\"\n",
        ),
        (
            "min_uid                      1000",
            "min_uid abc",
            "error: error parsing unsigned long value from string \"abc\" for \"min_uid\"\n",
        ),
        (
            "qmaster_params               none",
            "qmaster_params ENABLE_FORCED_QDEL=true,ENABLE_RESCHEDULE_SLAVE=1",
            "error: gridspool has no qmaster_params ENABLE_FORCED_QDEL: it has only ENABLE_RESCHEDULE_KILL and ENABLE_RESCHEDULE_SLAVE\n",
        ),
        (
            "enforce_user                 auto\nload_report_time             00:00:40",
            "enforce_user sometimes\nload_report_time 0\nmax_aj_tasks 10",
            "error: gridspool has no enforce_user: its only value is auto\n\
             error: error parsing time value from string \"0\" for \"load_report_time\"\n",
        ),
        (
            "user_lists                   none",
            "user_lists                   conf26_nosuch",
            "Userset \"conf26_nosuch\" does not exist\n",
        ),
    ] {
        assert!(orig.contains(from), "{from}");
        std::fs::write(&file, orig.replace(from, to)).expect("write");
        let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
        assert_eq!((run.code, run.stderr.as_str()), (1, said), "{to}: {run:?}");
        assert_eq!(config_text(&cell), before, "{to}");
    }
    // Several refusals: all of them, at once.
    std::fs::write(
        &file,
        orig.replace("/usr/bin/xterm", "/usr/bin/rxvt")
            .replace(&exec_spool(&cell), "/var/spool/gridengine/execd"),
    )
    .expect("write");
    let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
    assert_eq!(
        run.stderr,
        format!(
            "error: gridspool has no execd_spool_dir: its only value is {}\n\
             error: gridspool has no xterm: its only value is /usr/bin/xterm\n",
            exec_spool(&cell)
        )
    );
    // An attribute gridspool keeps, left out: its default again (SGE's -Mconf replaces the
    // whole configuration).
    std::fs::write(
        &file,
        orig.lines()
            .filter(|l| !l.starts_with("max_unheard"))
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .expect("write");
    let run = cell.run(&root, "qconf", &["-Mconf", &file.display().to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        loaded(&cell).max_unheard(),
        gridspool::config::DEFAULT_MAX_UNHEARD
    );
}

/// Item 2: hosts' local configurations (`reschedule_unknown`, the one gridspool keeps per
/// host) as SGE shows, adds, changes and deletes them.
#[test]
fn local_configurations_as_sge_has_them() {
    let (Some(root), Some(_)) = (root(), user1()) else {
        return skip("local_configurations_as_sge_has_them", "needs root");
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    script_files(&cell, dir.path());
    let d = dir.path();
    for case in [
        "sconfl-none",
        "sconf-host-none",
        "sconf-global-host-none",
        "dconf-nosuch",
        "mconf-host-nosuch",
        "Mconf-host-noconf",
        "sconfl-after-Mconf-noconf",
        "dconf-global",
        "aconf-nosuch",
    ] {
        replay(&cell, &root, case, d);
    }
    // -Aconf of reschedule_unknown (the capture's file also had a mailer: refused below).
    let host = gridspool::identity::short_hostname();
    std::fs::write(d.join("l").join(&host), "reschedule_unknown 00:10:00\n").expect("write");
    let file = d.join("l").join(&host).display().to_string();
    let run = cell.run(&root, "qconf", &["-Aconf", &file]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            0,
            format!("root@{host} added \"{host}\" to configuration list\n").as_str()
        )
    );
    for case in ["sconfl", "Aconf-host-again", "Aconf-global"] {
        replay(&cell, &root, case, d);
    }
    let run = cell.run(&root, "qconf", &["-sconf", &host]);
    assert_eq!(
        run.stdout,
        format!("#{host}:\nreschedule_unknown           00:10:00\n\n")
    );
    std::fs::write(d.join("l").join(&host), "reschedule_unknown 00:20:00\n").expect("write");
    for case in [
        "Mconf-host",
        "sconf-host-after-Mconf",
        "mconf-host-editor",
        "sconf-host-after-mconf",
        "mconf-host-copy",
    ] {
        replay(&cell, &root, case, d);
    }
    assert_eq!(
        std::fs::read_to_string(d.join("edited")).expect("template"),
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/compat/qconf/i26-mconf-host-template.txt")
        )
        .expect("capture")
    );
    assert_eq!(
        loaded(&cell).reschedule_unknown(&host),
        Some(std::time::Duration::from_secs(2400))
    );
    for case in [
        "aconf-host-again",
        "dconf",
        "dconf-again",
        "sconfl-after-dconf",
        "aconf-host-copy",
    ] {
        replay(&cell, &root, case, d);
    }
    assert_eq!(
        std::fs::read_to_string(d.join("edited")).expect("template"),
        "\n"
    );
    assert_eq!(
        loaded(&cell).host(&host).expect("host").reschedule_unknown,
        None
    );
    // -aconf with what the editor writes; -mconf of a host without one adds it, as SGE does.
    let editor = format!("{}/ru-local-editor", d.display());
    let run = cell
        .command("qconf", &root)
        .env("EDITOR", &editor)
        .args(["-aconf", &host])
        .output()
        .expect("qconf");
    assert_eq!(
        String::from_utf8_lossy(&run.stderr),
        format!("root@{host} added \"{host}\" to configuration list\n")
    );
    assert_eq!(
        loaded(&cell).reschedule_unknown(&host),
        Some(std::time::Duration::from_secs(1800))
    );
    // What a host's configuration cannot hold in gridspool is refused, naming it.
    std::fs::write(
        d.join("x").join(&host),
        "mailer /bin/mail\nreschedule_unknown 00:10:00\n",
    )
    .expect("write");
    let before = config_text(&cell);
    let file = d.join("x").join(&host).display().to_string();
    let run = cell.run(&root, "qconf", &["-Mconf", &file]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: gridspool has no mailer of a host's own: a host's configuration holds only reschedule_unknown\n"
        )
    );
    assert_eq!(config_text(&cell), before);
}

/// Item 2: the fixture's cell has no local configuration.
#[test]
fn the_fixtures_local_configurations() {
    let Some(root) = root() else {
        return skip("the_fixtures_local_configurations", "needs root");
    };
    let cell = oracle_cell();
    for (args, file) in [
        (&["-sconfl"][..], "qconf-sconfl.txt"),
        (&["-sconf", "vm"][..], "qconf-sconf-vm.txt"),
    ] {
        let host = gridspool::identity::short_hostname();
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if *a == "vm" {
                    host.clone()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = cell.run(&root, "qconf", &refs);
        let (out, err) = fixture(file);
        assert_eq!(
            (run.stdout, run.stderr, run.code),
            (out, err.replace("vm", &host), 1)
        );
    }
}

/// Item 3: the global pseudo-host, shown, changed and never deleted or listed as SGE does.
#[test]
fn the_global_host_as_sge_has_it() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip("the_global_host_as_sge_has_it", "needs root and sgeuser");
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    script_files(&cell, dir.path());
    let d = dir.path();
    for case in [
        "se-global",
        "mattr-exechost-global",
        "se-global-after-mattr",
        "sel-with-global",
        "aattr-exechost-global",
        "dattr-exechost-global",
        "se-global-after-dattr",
        "Me-global",
        "se-global-after-Me",
        "Ae-global",
        "me-global-true",
        "de-global",
        "se-global-after-de",
        "sel-after-de",
    ] {
        replay(&cell, &root, case, d);
    }
    replay(&cell, &user, "qhost-global", d);
    let c = loaded(&cell);
    let global = c.host("global").expect("the global host is kept");
    assert_eq!(
        global.complex_values.get("conf26_lic").map(String::as_str),
        Some("3")
    );
    assert!(matches!(
        global.launch,
        gridspool::config::LaunchMethod::Local
    ));
    // Never an execution host: not in qhost's list but as its pseudo-host line.
    let run = cell.run(&user, "qhost", &[]);
    assert_eq!(run.stdout.matches("global").count(), 1, "{run:?}");
    // What the global host cannot hold is refused.
    for (attr, value, said) in [
        (
            "complex_values",
            "slots=4",
            "error: host global: the global pseudo-host holds only complex_values (consumables and fixed values), not slots\n",
        ),
        (
            "user_lists",
            "arusers",
            "error: host global: the global pseudo-host holds only complex_values (consumables and fixed values), not user_lists, xuser_lists, projects or xprojects (the global configuration's cluster_access fences the cluster)\n",
        ),
    ] {
        let run = cell.run(
            &root,
            "qconf",
            &["-aattr", "exechost", attr, value, "global"],
        );
        assert_eq!((run.code, run.stderr.as_str()), (1, said), "{run:?}");
    }
}

/// Item 3: the fixture's global host (`complex_values fx_lic=4`) from its `-se` text (without
/// the reports `-Me` does not take) and from `-mattr`, as `qconf -se global` printed it;
/// `-sel` lists only the real host.
#[test]
fn the_fixtures_global_host() {
    let Some(root) = root() else {
        return skip("the_fixtures_global_host", "needs root");
    };
    let (se, _) = fixture("qconf-se-global.txt");
    for by_file in [true, false] {
        let cell = TestCell::with_config(|c| {
            c.replace(
                "complexes: []",
                "complexes:\n  - {name: fx_lic, shortcut: fx_lic, type: INT, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}",
            )
        });
        if by_file {
            let dir = tempfile::tempdir().expect("tempdir");
            let file = dir.path().join("global");
            let text: String = se
                .lines()
                .filter(|l| !l.starts_with("load_values") && !l.starts_with("processors"))
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(&file, text).expect("write");
            let run = cell.run(&root, "qconf", &["-Me", &file.display().to_string()]);
            assert_eq!(run.code, 0, "{run:?}");
        } else {
            let run = cell.run(
                &root,
                "qconf",
                &["-mattr", "exechost", "complex_values", "fx_lic=4", "global"],
            );
            assert_eq!(run.code, 0, "{run:?}");
        }
        let run = cell.run(&root, "qconf", &["-se", "global"]);
        assert_eq!((run.code, run.stdout.as_str()), (0, se.as_str()));
        let run = cell.run(&root, "qconf", &["-sel"]);
        let (sel, _) = fixture("qconf-sel.txt");
        assert_eq!(
            run.stdout,
            sel.replace("vm", &gridspool::identity::short_hostname())
        );
    }
}

/// Item 4: no checkpointing interfaces, in SGE's words; the changing forms refused, saying
/// why.
#[test]
fn checkpointing_lists_as_sge_shows_none() {
    let Some(root) = root() else {
        return skip("checkpointing_lists_as_sge_shows_none", "needs root");
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    for case in ["sckptl-none", "sckpt-nosuch"] {
        replay(&cell, &root, case, dir.path());
    }
    let run = cell.run(&root, "qconf", &["-sckptl"]);
    let (out, err) = fixture("qconf-sckptl.txt");
    assert_eq!((run.stdout, run.stderr), (out, err));
    let run = cell.run(&root, "qconf", &["-Ackpt", "conf26"]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "qconf: the -Ackpt option is not supported by gridspool: it has no checkpointing interfaces (checkpoint(5))\n"
        )
    );
}

/// Item 3, end to end: the consumable set on the global host by `qconf -mattr` bounds the
/// jobs `sched_d` starts across the cluster, and the pseudo-host is never probed as a host
/// (no load report of it beside this host's).
#[test]
fn sched_d_bounds_the_cluster_by_the_global_hosts_consumables() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "sched_d_bounds_the_cluster_by_the_global_hosts_consumables",
            "needs root and sgeuser",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\"}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 4}}\n\
             complexes:\n  - {{name: conf26_lic, shortcut: c26, type: INT, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let run = cell.run(
        &root,
        "qconf",
        &[
            "-mattr",
            "exechost",
            "complex_values",
            "conf26_lic=1",
            "global",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let _d = crate::sched::SchedD::start(&cell, &[]);
    for _ in 0..3 {
        let run = cell.run(
            &user,
            "qsub",
            &[
                "-b",
                "y",
                "-o",
                "/dev/null",
                "-j",
                "y",
                "-l",
                "conf26_lic=1",
                "sleep",
                "1",
            ],
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    let mut most = 0;
    crate::sched::wait_for(
        "every job to end",
        std::time::Duration::from_secs(60),
        || {
            let jobs = cell.spool.scan_jobs().expect("scan").jobs;
            most = most.max(jobs.iter().map(|j| j.tasks.running.len()).sum::<usize>());
            jobs.is_empty()
        },
    );
    assert_eq!(most, 1, "one licence: one job at a time");
    let reports = cell.cell.join("daemon/hosts");
    assert!(reports.join(format!("{host}.json")).exists());
    assert!(!reports.join("global.json").exists());
}
