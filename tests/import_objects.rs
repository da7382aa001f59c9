//! The objects of the issue-26 fixture cell (an SGE 8.1.9 site, `tests/compat/import/sge-cell/`)
//! given to gridspool's own `qconf` file forms as SGE printed them, and what `qconf -s*` prints
//! after, against what SGE printed; with the oracle's captures of the cases around them
//! (`tests/compat/qconf/i26-*.txt`, recorded by `tests/compat/record-issue26-stree.sh`).

use crate::sched::qconf_reloaded;
use crate::support::*;
use std::path::{Path, PathBuf};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(crate::import::FIXTURE).join(name)
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).expect("fixture file")
}

/// A cell as `sched_d --init` makes it (this host, all.q, PEs make, mpi and smp), without its
/// share tree, with the manager sgeadmin, the users sgeuser and sgeuser2, the fixture's
/// projects and the recording's (st_p1, st_p2), and `edit` applied.
fn cell_with(edit: impl FnOnce(String) -> String) -> TestCell {
    TestCell::with_config(|c| {
        edit(
            c.replace("managers: []", "managers: [sgeadmin]")
                .replace(
                    "projects: []",
                    "projects: [{name: fx_proj}, {name: fx_other}, {name: st_p1}, {name: st_p2}]",
                )
                .replace("users: []", "users: [{name: sgeuser}, {name: sgeuser2}]")
                .replace(
                    "share_tree:\n  name: Root\n  shares: 1\n  children:\n    - {name: default, shares: 1}\n",
                    "",
                ),
        )
    })
}

/// The scratch directory of the record script in `text` (`/tmp/issue26st-cap.XXXXXX`)
/// replaced by `dir`.
fn in_dir(text: &str, dir: &Path) -> String {
    const SCRATCH: &str = "/tmp/issue26st-cap.";
    let mut out = text.to_string();
    while let Some(at) = out.find(SCRATCH) {
        let end = at + SCRATCH.len() + 6;
        out.replace_range(at..end.min(out.len()), &dir.display().to_string());
    }
    out
}

/// Runs capture `qconf/<case>.txt` as root in `cell`, its files in `dir`, and compares.
fn replay_in(cell: &TestCell, root: &TestUser, case: &str, dir: &Path) {
    let mut cap = Capture::load(&format!("qconf/{case}.txt"));
    cap.command = in_dir(&cap.command, dir);
    cap.stderr = in_dir(&cap.stderr, dir);
    cap.stdout = in_dir(&cap.stdout, dir);
    replay_capture(cell, root, &cap);
}

/// The share tree of record-issue26-stree.sh: ids out of order, an interior project node
/// written type=0, a user node type=1, a leaf project node type=0.
const STREE: &str = "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=7,3\nid=7\nname=st_p1\ntype=0\nshares=60\nchildnodes=9,4\nid=9\nname=sgeuser\ntype=1\nshares=70\nchildnodes=NONE\nid=4\nname=sgeuser2\ntype=0\nshares=30\nchildnodes=NONE\nid=3\nname=st_p2\ntype=0\nshares=40\nchildnodes=NONE\n";

fn scratch_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

/// `-Astree` of the fixture's `qconf -sstree` text, then `-sstree` prints it byte for byte:
/// the nodes numbered depth first (fx_other is 4, its `default` 5) and the project nodes
/// (fx_proj, fx_other) of type 1 as the file gave them.
#[test]
fn the_fixture_share_tree_reads_back_as_sge_printed_it() {
    let Some(root) = root() else {
        return skip(
            "the_fixture_share_tree_reads_back_as_sge_printed_it",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let cell = cell_with(|c| c);
    let path = fixture_path("qconf-sstree.txt");
    let run = cell.run(&root, "qconf", &["-Astree", &path.display().to_string()]);
    assert_eq!(
        (run.stderr.as_str(), run.code),
        ("changed sharetree\n", 0),
        "{run:?}"
    );
    let run = cell.run(&root, "qconf", &["-sstree"]);
    assert_eq!(run.stdout, fixture("qconf-sstree.txt"), "{run:?}");
    let run = cell.run(&root, "qconf", &["-sst"]);
    assert_eq!(
        run.stdout,
        "Root=1\n   fx_proj=60\n      sgeuser=70\n      sgeuser2=30\n   fx_other=40\n      default=100\n"
    );
}

/// SGE renumbers the nodes depth first whatever ids the file gave, keeps each node's type as
/// written but for a leaf that names a project (1); `-sstnode` and `-rsstnode` find nodes by
/// path (`/a/b`, a bare name at any depth, `*`), print their subtrees and set the exit status
/// as SGE's does.
#[test]
fn share_tree_nodes_numbered_typed_and_found_as_sge_does() {
    let Some(root) = root() else {
        return skip(
            "share_tree_nodes_numbered_typed_and_found_as_sge_does",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let cell = cell_with(|c| c);
    let dir = scratch_with(&[("stree", STREE)]);
    for case in ["i26-sstnode-none", "i26-rsstnode-none"] {
        replay_in(&cell, &root, case, dir.path());
    }
    for case in [
        "i26-Astree",
        "i26-sstree",
        "i26-sst",
        "i26-sstnode-path",
        "i26-sstnode-leaf",
        "i26-sstnode-dot",
        "i26-sstnode-star",
        "i26-sstnode-root",
        "i26-sstnode-Root",
        "i26-sstnode-with-root",
        "i26-sstnode-two",
        "i26-sstnode-last-missing",
        "i26-sstnode-first-missing",
        "i26-rsstnode",
        "i26-rsstnode-missing",
    ] {
        replay_in(&cell, &root, case, dir.path());
    }
}

/// The queue of record-issue26-stree.sh (`st.q` on this host) with priority `priority`.
fn st_queue(priority: &str) -> String {
    let cap = Capture::load("qconf/i26-sq-priority-abc.txt");
    cap.stdout.replace(
        "priority              0\n",
        &format!("priority              {priority}\n"),
    )
}

/// `-Aq` of the fixture's fx_batch.q (`priority 0,[@fxbig=5]` among its per-host values),
/// then `-sq` prints it byte for byte.
#[test]
fn the_fixture_batch_queue_with_its_priority_reads_back_as_sge_printed_it() {
    let Some(root) = root() else {
        return skip(
            "the_fixture_batch_queue_with_its_priority_reads_back_as_sge_printed_it",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = cell_with(|c| {
        c.replace(
            "hostgroups:\n",
            &format!("hostgroups:\n  \"@fxbig\": [\"{host}\"]\n  \"@fxall\": [\"@fxbig\"]\n"),
        )
        .replace(
            "min_uid: 0",
            "min_uid: 0\naccess_lists:\n  - {name: fx_staff, entries: [sgeuser]}",
        )
    });
    let text = fixture("qconf-sq-fx_batch.q.txt");
    let dir = scratch_with(&[("fx_batch.q", &text.replace("[vm=", &format!("[{host}=")))]);
    let file = dir.path().join("fx_batch.q").display().to_string();
    let run = cell.run(&root, "qconf", &["-Aq", &file]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = cell.run(&root, "qconf", &["-sq", "fx_batch.q"]);
    let shown = if host == "vm" {
        run.stdout.clone()
    } else {
        run.stdout.replace(&format!("[{host}="), "[vm=")
    };
    assert_eq!(shown, text, "{run:?}");
}

/// queue_conf(5)'s `priority` as SGE's qmaster takes it: C's `atoi` of the text must be
/// -20..20 and not 0 but for a text that starts with `0` ("Invalid character"), the text is
/// kept as written (`1.5`, `5x`, `+7`), per host too, and `-purge` removes a host's value;
/// `-Aq` of a queue with priority 30 is refused with the qmaster's line alone.
#[test]
fn queue_priority_is_checked_and_shown_as_sge_does() {
    let Some(root) = root() else {
        return skip(
            "queue_priority_is_checked_and_shown_as_sge_does",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let cell = cell_with(|c| c);
    let dir = scratch_with(&[("st.q", &st_queue("30")), ("st0.q", &st_queue("0"))]);
    replay_in(&cell, &root, "i26-Aq-priority-30", dir.path());
    let st0 = dir.path().join("st0.q").display().to_string();
    let run = cell.run(&root, "qconf", &["-Aq", &st0]);
    assert_eq!(run.code, 0, "{run:?}");
    for v in ["21", "-21", "abc", "-0", "1.5", "5x", "+7", "-20", "20"] {
        replay_in(&cell, &root, &format!("i26-mattr-priority-{v}"), dir.path());
        replay_in(&cell, &root, &format!("i26-sq-priority-{v}"), dir.path());
    }
    let run = cell.run(
        &root,
        "qconf",
        &["-mattr", "queue", "priority", "0", "st.q"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    for case in [
        "i26-mattr-priority-host",
        "i26-sq-priority-host",
        "i26-sq-priority-instance",
        "i26-mattr-priority-host-bad",
        "i26-purge-priority",
        "i26-sq-priority-purged",
    ] {
        replay_in(&cell, &root, case, dir.path());
    }
}

/// The nice value a job of `user` sees in its own `/proc/self/stat` (field 19).
fn nice_of_a_job(cell: &TestCell, user: &TestUser, out: &str) -> String {
    use crate::sched::{accounting_records, wait_for};
    // A script: qsub's binary form would split the blank delimiter off as a word of its own.
    let script = cell.write_file(
        user,
        "nice.sh",
        "#!/bin/sh\ncut -d ' ' -f 19 /proc/self/stat\n",
    );
    let script = script.display().to_string();
    let run = cell.run(
        user,
        "qsub",
        &["-terse", "-cwd", "-o", out, "-j", "y", &script],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let id = gridspool::model::JobId(run.stdout.trim().parse().expect("job id"));
    wait_for("the job's end", std::time::Duration::from_secs(30), || {
        !accounting_records(cell, id).is_empty()
    });
    std::fs::read_to_string(cell.workdir(user).join(out))
        .expect("the job's output")
        .trim()
        .to_string()
}

/// The jobs of a queue run at its `priority` as their nice value, set by the shepherd as
/// root before it becomes the owner (so a negative one too, which the owner could not set),
/// with the values of a host group and of a host (a host's beats its group's), and from the
/// leading integer of a text such as `+7`.
#[test]
fn jobs_run_at_their_queues_priority_as_nice_value() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "jobs_run_at_their_queues_priority_as_nice_value",
            "needs root and the test users",
        );
    };
    let cell = cell_with(|c| c);
    let _d = crate::sched::SchedD::start(&cell, &[]);
    let host = gridspool::identity::short_hostname();
    assert_eq!(nice_of_a_job(&cell, &user, "out0"), "0");
    qconf_reloaded(&cell, &root, &["-mattr", "queue", "priority", "5", "all.q"]);
    assert_eq!(nice_of_a_job(&cell, &user, "out5"), "5");
    qconf_reloaded(
        &cell,
        &root,
        &["-mattr", "queue", "priority", "+7", "all.q@@allhosts"],
    );
    assert_eq!(nice_of_a_job(&cell, &user, "out7"), "7");
    qconf_reloaded(
        &cell,
        &root,
        &[
            "-mattr",
            "queue",
            "priority",
            "-3",
            &format!("all.q@{host}"),
        ],
    );
    assert_eq!(nice_of_a_job(&cell, &user, "out-3"), "-3");
}

/// `-Ap` of a PE that exists is refused with SGE's words (gridspool had no `-Ap`); `-Mp` of
/// the fixture's make and mpi PEs applies their control_slaves and job_is_first_task (the
/// cell's PEs start with the other values) and `-sp` prints the fixture's texts.
#[test]
fn the_fixture_pes_read_back_as_sge_printed_them() {
    let Some(root) = root() else {
        return skip(
            "the_fixture_pes_read_back_as_sge_printed_them",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let cell = cell_with(|c| {
        c.replace(
            "allocation_rule: $round_robin}",
            "allocation_rule: $round_robin, control_slaves: false, job_is_first_task: true}",
        )
        .replace(
            "allocation_rule: $fill_up}",
            "allocation_rule: $fill_up, control_slaves: false, job_is_first_task: true}",
        )
    });
    let dir = scratch_with(&[("make.txt", &fixture("qconf-sp-make.txt"))]);
    replay_in(&cell, &root, "i26-Ap-exists", dir.path());
    for pe in ["make", "mpi"] {
        let file = fixture_path(&format!("qconf-sp-{pe}.txt"));
        let run = cell.run(&root, "qconf", &["-Mp", &file.display().to_string()]);
        assert_eq!(
            run.stderr,
            format!(
                "root@{} modified \"{pe}\" in parallel environment list\n",
                gridspool::identity::short_hostname()
            ),
            "{run:?}"
        );
        let run = cell.run(&root, "qconf", &["-sp", pe]);
        assert_eq!(
            run.stdout,
            fixture(&format!("qconf-sp-{pe}.txt")),
            "{run:?}"
        );
    }
}

/// SGE 8.1.9 refuses its own `qconf -se` text back (`load_values`, then `processors`, are
/// unknown attributes to `-Me`/`-Ae`), and takes it without them: so does gridspool. After
/// `-Me` of the fixture's host text without them, `-se` prints the fixture but for the
/// `load_values` block, which is this host's load measured now (not the oracle's then), and
/// `processors`, this host's count.
#[test]
fn a_hosts_se_text_without_its_measured_values_reads_back_as_sge_printed_it() {
    let Some(root) = root() else {
        return skip(
            "a_hosts_se_text_without_its_measured_values_reads_back_as_sge_printed_it",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = cell_with(|c| c);
    let without = |text: &str, keys: &[&str]| -> String {
        let mut out = String::new();
        let mut skipping = false;
        for line in text.lines() {
            if !line.starts_with(' ') {
                skipping = keys.iter().any(|k| line.starts_with(&format!("{k} ")));
            }
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    let fixture_text = fixture("qconf-se-vm.txt").replace(
        "hostname              vm",
        &format!("hostname              {host}"),
    );
    let dir = scratch_with(&[
        ("vm-noload.txt", &without(&fixture_text, &["load_values"])),
        (
            "vm-noproc.txt",
            &without(&fixture_text, &["load_values", "processors"]),
        ),
    ]);
    replay_in(&cell, &root, "i26-Me-noload", dir.path());
    replay_in(&cell, &root, "i26-Me-noproc", dir.path());
    replay_in(&cell, &root, "i26-Ae-noproc", dir.path());
    let run = cell.run(&root, "qconf", &["-se", &host]);
    assert_eq!(
        without(&run.stdout, &["load_values", "processors"]),
        without(&fixture_text, &["load_values", "processors"]),
        "{run:?}"
    );
    assert!(run.stdout.contains("\nload_values "), "{run:?}");
}

/// Managers: `-am` takes names that are no users of the machine, as SGE does, and `-sm`
/// lists root and the others sorted; the fixture's list reads back as SGE printed it.
#[test]
fn managers_are_listed_as_sge_lists_them() {
    let Some(root) = root() else {
        return skip(
            "managers_are_listed_as_sge_lists_them",
            "qconf changes the configuration as root (a manager)",
        );
    };
    let cell = cell_with(|c| c);
    let dir = scratch_with(&[]);
    replay_in(&cell, &root, "i26-am-unknown", dir.path());
    replay_in(&cell, &root, "i26-sm-unknown", dir.path());
    let run = cell.run(&root, "qconf", &["-dm", "st_zadmin,st_aadmin"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = cell.run(&root, "qconf", &["-am", "fxadmin"]);
    assert_eq!(run.code, 0, "{run:?}");
    let run = cell.run(&root, "qconf", &["-sm"]);
    assert_eq!(run.stdout, fixture("qconf-sm.txt"), "{run:?}");
}
