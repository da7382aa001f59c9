//! The objects of the issue-26 fixture cell (an SGE 8.1.9 site, `tests/compat/import/sge-cell/`)
//! given to gridspool's own `qconf` file forms as SGE printed them, and what `qconf -s*` prints
//! after, against what SGE printed; with the oracle's captures of the cases around them
//! (`tests/compat/qconf/i26-*.txt`, recorded by `tests/compat/record-issue26-stree.sh`).

use crate::support::*;
use std::path::{Path, PathBuf};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compat/import/sge-cell")
        .join(name)
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
