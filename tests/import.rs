//! Importing an SGE 8.1.9 cell (issue 26): `sched_d --init --from-sge DIR` on the fixture
//! `tests/compat/import/sge-cell/` (a real Debian SGE cell configured as a small site by
//! `record-issue26.sh`, saved as sge-export.sh saves one), then gridspool's `qconf -s*` of
//! every object against what SGE's printed.
//!
//! The SGE cell's one host is `vm`; the commands run in a UTS namespace of their own named
//! `vm` (as root), so that this host is that host whatever the machine's name, and every
//! text compares byte for byte.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/compat/import/sge-cell");

/// What the import cannot carry of the fixture, as it prints it, each with its reason.
const NOT_CARRIED: &[&str] = &[
    "not carried: global configuration: execd_spool_dir /var/spool/gridengine/execd: gridspool keeps the execution spool in the cell: CELL/execd",
    "not carried: usage of job 152 of sgeuser: the job was running under SGE: its usage comes with its record, in SGE's accounting file",
    "not carried: usage of job 151 of sgeuser: the job was running under SGE: its usage comes with its record, in SGE's accounting file",
    "not carried: usage of job 154 of sgeuser2: the job was running under SGE: its usage comes with its record, in SGE's accounting file",
];

/// A file of the fixture: what the command wrote to stdout and to stderr (after its
/// `# stderr:` line), as the importer splits it.
pub fn fixture_saved(name: &str) -> (String, String) {
    let path = Path::new(FIXTURE).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let saved = gridspool::compat::sge_export::split_saved(&text);
    (saved.stdout, saved.stderr)
}

/// `bin args…` as root on the host `vm` (its own UTS namespace), in `cell`.
pub fn on_vm(cell: &TestCell, bin: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new("unshare");
    cmd.args(["--uts", "sh", "-c", "hostname vm && exec \"$0\" \"$@\""])
        .arg(client_path(bin))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", "/root")
        .env("USER", "root")
        .env("LOGNAME", "root")
        .env("TZ", "UTC")
        .env("SGE_ROOT", &cell.root)
        .env("SGE_CELL", "default")
        .stdin(Stdio::null());
    cmd.output().expect("unshare").into()
}

/// The import of `export` into `cell`.
pub fn import(cell: &TestCell, export: &Path, more: &[&str]) -> Run {
    let cell_dir = cell.cell.to_string_lossy().into_owned();
    let export = export.to_string_lossy().into_owned();
    let mut args = vec!["--init", "--spool", &cell_dir, "--from-sge", &export];
    args.extend(more);
    on_vm(cell, "sched_d", &args)
}

/// A cell with the fixture imported (as root), or `None` when the test is skipped.
pub fn imported_cell(test: &str) -> Option<(TestCell, Run)> {
    if !is_root() {
        skip(
            test,
            "needs root (a UTS namespace named vm, the SGE cell's host)",
        );
        return None;
    }
    let cell = TestCell::new();
    let run = import(&cell, Path::new(FIXTURE), &[]);
    Some((cell, run))
}

/// The lines of the import's report that say what was not carried, the scratch directory's
/// name and the cell's made constant.
fn not_carried(cell: &TestCell, stdout: &str) -> Vec<String> {
    stdout
        .replace(&cell.cell.display().to_string(), "CELL")
        .lines()
        .filter(|l| l.starts_with("not carried: "))
        .map(|l| {
            let mut l = l.to_string();
            while let Some(at) = l.find("/gridspool-import") {
                let start = l[..at].rfind('"').map_or(0, |q| q + 1);
                let end = at + l[at + 1..].find('/').map_or(l.len() - at, |e| e + 1);
                l.replace_range(start..end, "SCRATCH");
            }
            l
        })
        .collect()
}

/// A saved output without its live part: the load values of an execution host, which are
/// this moment's.
fn without_load_values(text: &str) -> String {
    let mut out = String::new();
    let mut in_values = false;
    for line in text.lines() {
        if line.starts_with("load_values ") {
            in_values = line.ends_with('\\');
            continue;
        }
        if in_values {
            in_values = line.ends_with('\\');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every `qconf-*.txt` of the fixture: the option, its object, the saved stdout and stderr.
fn saved_qconf_outputs() -> Vec<(String, Option<String>, String, String)> {
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(FIXTURE)
        .expect("fixture")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    for path in names {
        let file = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let Some(stem) = file
            .strip_prefix("qconf-")
            .and_then(|s| s.strip_suffix(".txt"))
        else {
            continue;
        };
        let (option, object) = match stem.split_once('-') {
            Some((o, x)) => (o.to_string(), Some(x.to_string())),
            None => (stem.to_string(), None),
        };
        let (stdout, stderr) = fixture_saved(&file);
        out.push((option, object, stdout, stderr));
    }
    out
}

/// Outputs that still differ after the import, each with the reason (DIVERGENCES.md).
const DIFFERENT: &[(&str, &str)] = &[];

#[test]
fn the_sge_cell_imports_and_qconf_shows_every_object_as_sge_did() {
    let Some((cell, run)) =
        imported_cell("import::the_sge_cell_imports_and_qconf_shows_every_object_as_sge_did")
    else {
        return;
    };
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        not_carried(&cell, &run.stdout),
        NOT_CARRIED,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with(&format!(
            "imported; {} not carried (listed above)\n",
            NOT_CARRIED.len()
        )),
        "{}",
        run.stdout
    );
    let mut differ = Vec::new();
    for (option, object, stdout, stderr) in saved_qconf_outputs() {
        let key = match &object {
            Some(o) => format!("{option}-{o}"),
            None => option.clone(),
        };
        let mut args = vec![format!("-{option}")];
        args.extend(object.clone());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = on_vm(&cell, "qconf", &args);
        // The execution spool is always the cell's (NOT_CARRIED).
        let stdout = stdout.replace(
            "/var/spool/gridengine/execd",
            &format!("{}/execd", cell.cell.display()),
        );
        let same = without_load_values(&got.stdout) == without_load_values(&stdout)
            && got.stderr == stderr;
        let excused = DIFFERENT.iter().any(|(k, _)| *k == key);
        if same == excused {
            differ.push(format!(
                "{key}: {}\n--- SGE\n{stdout}{stderr}--- gridspool\n{}{}",
                if same {
                    "now the same: take it off DIFFERENT"
                } else {
                    "differs"
                },
                got.stdout,
                got.stderr
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // qacct over the imported accounting file prints what SGE's printed over SGE's.
    let mut names: Vec<String> = std::fs::read_dir(FIXTURE)
        .expect("fixture")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("qacct-"))
        .collect();
    names.sort();
    assert!(names.len() >= 11, "{names:?}");
    for name in names {
        let stem = &name["qacct-".len()..name.len() - ".txt".len()];
        let args: Vec<String> = match stem.split_once('-') {
            Some((o, v)) => vec![format!("-{o}"), v.to_string()],
            None => vec![format!("-{stem}")],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = on_vm(&cell, "qacct", &args);
        let sge = std::fs::read_to_string(Path::new(FIXTURE).join(&name)).expect("read");
        assert_eq!(got.stdout, sge, "qacct {args:?}: {got:?}");
    }
    // The share tree's usage: the cell's baseline, which sched_d starts from.
    assert!(cell.spool.usage_baseline_path().is_file());
    // Ids go on above SGE's last job (158) and reservation (11).
    assert!(
        run.stdout
            .contains("\njob ids go on from 159 (the SGE cell's last: 158)\n")
            && run
                .stdout
                .contains("\nadvance reservation ids go on from 12 (the SGE cell's last: 11)\n"),
        "{}",
        run.stdout
    );
    let seq = cell.spool.seq_dir();
    assert_eq!(
        gridspool::spool::sequence::current(&seq, "jobid").expect("jobid"),
        158
    );
    assert_eq!(
        gridspool::spool::sequence::current(&seq, "arid").expect("arid"),
        11
    );
}

#[test]
fn an_import_twice_changes_nothing_the_second_time() {
    let Some((cell, first)) =
        imported_cell("import::an_import_twice_changes_nothing_the_second_time")
    else {
        return;
    };
    assert_eq!(first.code, 0, "{first:?}");
    let before = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    let again = import(&cell, Path::new(FIXTURE), &[]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(not_carried(&cell, &again.stdout), NOT_CARRIED);
    let after = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    assert_eq!(before, after);
}

#[test]
fn an_import_into_a_cell_with_jobs_is_refused_unless_forced_and_keeps_them() {
    let test = "import::an_import_into_a_cell_with_jobs_is_refused_unless_forced_and_keeps_them";
    let (Some(user), true) = (user1(), is_root()) else {
        skip(test, "needs root and sgeuser");
        return;
    };
    let cell = TestCell::new();
    let sub = cell.run(&user, "qsub", &["-b", "y", "-N", "kept", "/bin/true"]);
    assert_eq!(sub.code, 0, "{sub:?}");
    let config = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    let refused = import(&cell, Path::new(FIXTURE), &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(
        refused.stderr,
        format!(
            "sched_d: the cell {} holds 1 job (1): an import changes the configuration they were submitted to; run it again with --force to import anyway (nothing is removed from the cell's jobs)\n",
            cell.cell.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config"),
        config,
        "a refused import changes nothing"
    );
    let forced = import(&cell, Path::new(FIXTURE), &["--force"]);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert_eq!(not_carried(&cell, &forced.stdout), NOT_CARRIED);
    let job = cell.job(1).expect("the job is still there");
    assert_eq!(job.spec.name, "kept");
    let shown = cell.run(&user, "qstat", &[]);
    assert!(shown.stdout.contains(" kept "), "{shown:?}");
}

#[test]
fn an_import_while_sched_d_runs_is_refused() {
    let test = "import::an_import_while_sched_d_runs_is_refused";
    if !is_root() {
        skip(test, "needs root");
        return;
    }
    let cell = TestCell::new();
    let lock = gridspool::sched::daemon::SpoolLock::acquire(&cell.spool).expect("lock");
    let refused = import(&cell, Path::new(FIXTURE), &[]);
    drop(lock);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.starts_with(&format!(
            "sched_d: sched_d is running on {}: stop it before importing (another sched_d",
            cell.cell.display()
        )),
        "{refused:?}"
    );
}

#[test]
fn a_directory_that_is_no_export_is_refused_by_name() {
    let test = "import::a_directory_that_is_no_export_is_refused_by_name";
    if !is_root() {
        skip(test, "needs root");
        return;
    }
    let cell = TestCell::new();
    let empty = tempfile::tempdir().expect("tempdir");
    let refused = import(&cell, empty.path(), &[]);
    assert_eq!(refused.code, 1);
    assert_eq!(
        refused.stderr,
        format!(
            "sched_d: {}: not an SGE export (qconf-sql.txt is missing): make one with sge-export.sh on the SGE master host\n",
            empty.path().display()
        )
    );
}

/// `qconf -dstree`, which the import runs when the SGE cell has no share tree, says what
/// SGE 8.1.9's says (both streams and exit codes as recorded from it).
#[test]
fn qconf_dstree_removes_the_share_tree_as_sge_does() {
    let Some(admin) = root() else {
        skip(
            "import::qconf_dstree_removes_the_share_tree_as_sge_does",
            "needs root",
        );
        return;
    };
    let cell = TestCell::new();
    let host = gridspool::identity::short_hostname();
    let removed = cell.run(&admin, "qconf", &["-dstree"]);
    assert_eq!(
        (removed.code, removed.stdout.as_str(), removed.stderr),
        (0, "", format!("root@{host} removed sharetree list\n"))
    );
    let shown = cell.run(&admin, "qconf", &["-sstree"]);
    assert_eq!(
        (shown.code, shown.stderr.as_str()),
        (1, "no sharetree element\n")
    );
    let again = cell.run(&admin, "qconf", &["-dstree"]);
    assert_eq!(
        (again.code, again.stdout.as_str(), again.stderr.as_str()),
        (1, "", "sharetree does not exist\n")
    );
}

#[test]
fn a_dry_run_says_what_the_import_would_not_carry_and_changes_nothing() {
    let test = "import::a_dry_run_says_what_the_import_would_not_carry_and_changes_nothing";
    if !is_root() {
        skip(test, "needs root (a UTS namespace named vm)");
        return;
    }
    let cell = TestCell::new();
    let config = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    let run = import(&cell, Path::new(FIXTURE), &["--dry-run"]);
    assert_eq!(run.code, 0, "{run:?}");
    // All but the usage of the jobs SGE was running: the history is not imported.
    let without_history: Vec<&str> = NOT_CARRIED
        .iter()
        .copied()
        .filter(|l| !l.starts_with("not carried: usage of job"))
        .collect();
    assert_eq!(not_carried(&cell, &run.stdout), without_history);
    assert!(
        run.stdout
            .contains("accounting file, share-tree usage and job ids: not imported in a dry run\n")
    );
    assert!(
        run.stdout
            .contains("added \"fx_batch.q\" to cluster queue list")
    );
    assert!(
        run.stdout.ends_with(&format!(
            "dry run: nothing was changed; {} not carried (listed above)\n",
            without_history.len()
        )),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config"),
        config
    );
}
