//! `sched_d --init --from-sge DIR`: an SGE 8.1.9 cell, exported by `sge-export.sh` as the
//! texts of its `qconf -s*` (see [`crate::compat::sge_export`]), its accounting file and its
//! share-tree usage, made into this gridspool cell.
//!
//! Every object goes through gridspool's own `qconf -A*`/`-M*`, in process, exactly as an
//! administrator would feed it the file SGE printed: one reader of SGE's texts, one set of
//! checks, the same messages, and a cell that `qconf -s*` then prints as SGE did. Objects go
//! in an order where nothing names an object not there yet (complexes, calendars, access
//! lists, projects, users, hosts, host groups, parallel environments, queues, quotas, the
//! share tree, the scheduler and global configurations); what the gridspool cell had and the
//! SGE cell has not is removed afterwards, in the reverse order. An attribute gridspool keeps
//! only one value of, or an object its `qconf` refuses, is printed with the reason: nothing
//! is left out silently.
//!
//! The cell must not be in use: `sched_d` stopped (its lock is held for the whole import) and,
//! unless `--force`, no job or reservation in it, whose configuration the import would change
//! under it. No job is ever removed.

use super::{ClientEnv, Output};
use crate::compat::qconf_attrs::{self, Shape};
use crate::compat::sge_export::{self, Saved};
use crate::config::ClusterConfig;
use crate::spool::Spool;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Why an import did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "{dir}: not an SGE export ({missing} is missing): make one with sge-export.sh on the SGE master host"
    )]
    NotAnExport { dir: PathBuf, missing: String },
    #[error("sched_d is running on {cell}: stop it before importing ({why})")]
    DaemonRunning { cell: PathBuf, why: String },
    #[error(
        "the cell {cell} holds {what}: an import changes the configuration they were submitted to; run it again with --force to import anyway (nothing is removed from the cell's jobs)"
    )]
    CellInUse { cell: PathBuf, what: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Spool(#[from] crate::spool::SpoolError),
    #[error(transparent)]
    Client(#[from] super::ClientError),
    #[error("{0}")]
    Cell(String),
}

/// What to import from where.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The directory `sge-export.sh` wrote.
    pub export: PathBuf,
    /// Import into a cell that holds jobs or reservations.
    pub force: bool,
    /// Only say what the import would do and not carry.
    pub dry_run: bool,
}

/// A value or object the import did not carry, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Omission {
    /// `queue fx_batch.q`, `scheduler configuration`.
    pub object: String,
    /// `priority 0,[@fxbig=5]`, or empty for the whole object.
    pub what: String,
    pub why: String,
}

impl std::fmt::Display for Omission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.what.is_empty() {
            write!(f, "{}: {}", self.object, self.why)
        } else {
            write!(f, "{}: {}: {}", self.object, self.what, self.why)
        }
    }
}

/// What an import did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// `qconf`'s own messages, in order (`root@host added "q" to cluster queue list`).
    pub changes: Vec<String>,
    pub omissions: Vec<Omission>,
    /// Done on a copy: the cell is unchanged.
    pub dry_run: bool,
}

impl ImportReport {
    /// The report as printed: the changes, then every omission.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for c in &self.changes {
            s.push_str(c);
            s.push('\n');
        }
        for o in &self.omissions {
            s.push_str(&format!("not carried: {o}\n"));
        }
        s.push_str(&format!(
            "{}; {} not carried{}\n",
            if self.dry_run {
                "dry run: nothing was changed"
            } else {
                "imported"
            },
            self.omissions.len(),
            if self.omissions.is_empty() {
                ""
            } else {
                " (listed above)"
            }
        ));
        s
    }
}

type Table = &'static [(&'static str, Shape, Option<&'static str>)];

/// One kind of named object, by the names of its `qconf` forms.
struct Kind {
    /// What the report calls one.
    word: &'static str,
    /// The list form (`sql`): the export's file of names.
    list: &'static str,
    /// The show form (`sq`): the export's file of each object.
    show: &'static str,
    add: &'static str,
    modify: &'static str,
    delete: &'static str,
    /// Attributes gridspool keeps one value of.
    fixed: Table,
    /// Objects every cell has, never removed.
    builtin: &'static [&'static str],
}

/// In the order they are added: each names only kinds before it.
const KINDS: &[Kind] = &[
    Kind {
        word: "calendar",
        list: "scall",
        show: "scal",
        add: "-Acal",
        modify: "-Mcal",
        delete: "-dcal",
        fixed: &[],
        builtin: &[],
    },
    Kind {
        word: "access list",
        list: "sul",
        show: "su",
        add: "-Au",
        modify: "-Mu",
        delete: "-dul",
        fixed: &[],
        builtin: &["arusers", "deadlineusers", "defaultdepartment"],
    },
    Kind {
        word: "project",
        list: "sprjl",
        show: "sprj",
        add: "-Aprj",
        modify: "-Mprj",
        delete: "-dprj",
        fixed: &[],
        builtin: &[],
    },
    Kind {
        word: "user",
        list: "suserl",
        show: "suser",
        add: "-Auser",
        modify: "-Muser",
        delete: "-duser",
        fixed: &[],
        builtin: &[],
    },
    Kind {
        word: "execution host",
        list: "sel",
        show: "se",
        add: "-Ae",
        modify: "-Me",
        delete: "-de",
        fixed: qconf_attrs::EXECHOST_ATTRS,
        builtin: &[],
    },
    Kind {
        word: "host group",
        list: "shgrpl",
        show: "shgrp",
        add: "-Ahgrp",
        modify: "-Mhgrp",
        delete: "-dhgrp",
        fixed: &[],
        builtin: &[],
    },
    Kind {
        word: "parallel environment",
        list: "spl",
        show: "sp",
        add: "-Ap",
        modify: "-Mp",
        delete: "-dp",
        fixed: qconf_attrs::PE_ATTRS,
        builtin: &[],
    },
    Kind {
        word: "queue",
        list: "sql",
        show: "sq",
        add: "-Aq",
        modify: "-Mq",
        delete: "-dq",
        fixed: qconf_attrs::QUEUE_ATTRS,
        builtin: &[],
    },
    Kind {
        word: "resource quota set",
        list: "srqsl",
        show: "srqs",
        add: "-Arqs",
        modify: "-Mrqs",
        delete: "-drqs",
        fixed: &[],
        builtin: &[],
    },
];

/// The names of `kind` the cell has now.
fn existing(kind: &Kind, c: &ClusterConfig) -> Vec<String> {
    match kind.list {
        "scall" => c.calendars.iter().map(|x| x.name.clone()).collect(),
        "sul" => c.access_lists.iter().map(|x| x.name.clone()).collect(),
        "sprjl" => c.projects.iter().map(|x| x.name.clone()).collect(),
        "suserl" => c.users.iter().map(|x| x.name.clone()).collect(),
        "sel" => c
            .hosts
            .iter()
            .filter(|h| h.name != "global")
            .map(|h| h.name.clone())
            .collect(),
        "shgrpl" => c.hostgroups.keys().cloned().collect(),
        "spl" => c
            .parallel_environments
            .iter()
            .map(|x| x.name.clone())
            .collect(),
        "sql" => c.queues.iter().map(|x| x.name.clone()).collect(),
        "srqsl" => c.resource_quotas.iter().map(|x| x.name.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Imports the export of `opts` into the cell at `cell` (created when missing).
pub fn import(cell: &Path, opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    let marker = sge_export::saved_path(&opts.export, "sql", None);
    if !marker.is_file() {
        return Err(ImportError::NotAnExport {
            dir: opts.export.clone(),
            missing: marker
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        });
    }
    if opts.dry_run {
        return dry_run(cell, opts);
    }
    super::sched_d::init(cell).map_err(|e| ImportError::Cell(e.to_string()))?;
    let spool = Spool::open(cell)?;
    // Held to the end: no sched_d starts on a half-imported cell.
    let _lock = crate::sched::daemon::SpoolLock::acquire(&spool).map_err(|e| {
        ImportError::DaemonRunning {
            cell: cell.to_path_buf(),
            why: e.to_string(),
        }
    })?;
    if !opts.force {
        refuse_a_cell_in_use(&spool)?;
    }
    import_objects(cell, cell, opts)
}

/// The import into a copy of the cell's configuration, thrown away: what an import would
/// do and not carry, with the cell untouched.
fn dry_run(cell: &Path, opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    let copy = Scratch::new("gridspool-import-dry-run")?;
    let copy_cell = copy.0.join("cell");
    super::sched_d::init(&copy_cell).map_err(|e| ImportError::Cell(e.to_string()))?;
    let config = cell.join("config.yaml");
    if config.is_file() {
        std::fs::copy(&config, copy_cell.join("config.yaml")).map_err(|e| ImportError::Io {
            what: "copy",
            path: config.clone(),
            source: e,
        })?;
    }
    let mut report = import_objects(&copy_cell, cell, opts)?;
    report.dry_run = true;
    Ok(report)
}

/// Every object of the export, into `cell`.
/// `target` is the cell the report speaks of (`cell` itself, or the cell a dry run copied).
fn import_objects(
    cell: &Path,
    target: &Path,
    opts: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    let scratch = Scratch::new("gridspool-import")?;
    let mut run = Importer {
        cell: cell.to_path_buf(),
        target: target.to_path_buf(),
        export: opts.export.clone(),
        scratch,
        report: ImportReport::default(),
    };
    run.complexes();
    for kind in KINDS {
        run.kind(kind);
    }
    run.global_host();
    run.share_tree();
    run.single(
        "scheduler configuration",
        "ssconf",
        "-Msconf",
        qconf_attrs::SCHED_ATTRS,
    );
    run.global_configuration();
    run.host_configurations();
    run.people("manager", "sm", "-am", "-dm", &["root"]);
    run.people("operator", "so", "-ao", "-do", &[]);
    run.not_kept("administrative host", "sh");
    run.not_kept("submit host", "ss");
    run.checkpointing();
    for kind in KINDS.iter().rev() {
        run.remove_leftovers(kind);
    }
    if opts.dry_run {
        run.report.changes.push(
            "accounting file, share-tree usage and job ids: not imported in a dry run".into(),
        );
    } else {
        run.history()?;
        run.sequence_numbers()?;
    }
    Ok(run.report)
}

/// Refuses a cell with jobs or advance reservations in it.
fn refuse_a_cell_in_use(spool: &Spool) -> Result<(), ImportError> {
    let jobs = spool.scan_jobs()?.jobs;
    let reservations = match std::fs::read_dir(spool.ars_dir()) {
        Ok(d) => d
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".ar"))
            .count(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => {
            return Err(ImportError::Io {
                what: "read",
                path: spool.ars_dir(),
                source: e,
            });
        }
    };
    let mut what = Vec::new();
    if !jobs.is_empty() {
        let ids: Vec<String> = jobs.iter().take(5).map(|j| j.id.to_string()).collect();
        what.push(format!(
            "{} job{} ({}{})",
            jobs.len(),
            if jobs.len() == 1 { "" } else { "s" },
            ids.join(", "),
            if jobs.len() > ids.len() { ", …" } else { "" }
        ));
    }
    if reservations > 0 {
        what.push(format!(
            "{reservations} advance reservation{}",
            if reservations == 1 { "" } else { "s" }
        ));
    }
    if what.is_empty() {
        return Ok(());
    }
    Err(ImportError::CellInUse {
        cell: spool.root().to_path_buf(),
        what: what.join(" and "),
    })
}

/// A private directory for the texts handed to `qconf`, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(prefix: &str) -> Result<Self, ImportError> {
        let dir = std::env::temp_dir().join(format!("{prefix}.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| ImportError::Io {
                what: "mkdir",
                path: dir.clone(),
                source: e,
            })?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Importer {
    cell: PathBuf,
    /// The cell the report speaks of: `cell`, or the one a dry run copied into `cell`.
    target: PathBuf,
    export: PathBuf,
    scratch: Scratch,
    report: ImportReport,
}

impl Importer {
    /// `qconf ARGS` on the cell as it is now.
    fn qconf(&self, args: &[&str]) -> Output {
        let env = match ClientEnv::load(Some(self.cell.clone())) {
            Ok(env) => env,
            Err(e) => {
                let mut o = Output::default();
                o.err(e.to_string());
                o.code = 1;
                return o;
            }
        };
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        super::qconf::run(&args, &env)
    }

    fn config(&self) -> Option<ClusterConfig> {
        ClientEnv::load(Some(self.cell.clone()))
            .ok()
            .map(|e| e.config)
    }

    fn omit(&mut self, object: impl Into<String>, what: impl Into<String>, why: impl Into<String>) {
        self.report.omissions.push(Omission {
            object: object.into(),
            what: what.into(),
            why: why.into(),
        });
    }

    /// The export's saved `qconf -<option> [object]`, or `None` (reported) when it has none.
    fn saved(
        &mut self,
        object: &str,
        option: &str,
        name: Option<&str>,
    ) -> Option<(PathBuf, Saved)> {
        let path = sge_export::saved_path(&self.export, option, name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Some((path, sge_export::split_saved(&text))),
            Err(e) => {
                self.omit(
                    object,
                    "",
                    format!("the export has no {}: {e}", path.display()),
                );
                None
            }
        }
    }

    /// The names the export's list form `option` printed (none if it has no such file).
    fn listed(&self, option: &str) -> Vec<String> {
        let path = sge_export::saved_path(&self.export, option, None);
        std::fs::read_to_string(path)
            .map(|t| sge_export::names(&sge_export::split_saved(&t)))
            .unwrap_or_default()
    }

    /// The `name` of each object of a form that shows them all (`-srqs`), in its order.
    fn listed_objects(&self, option: &str) -> Vec<String> {
        let path = sge_export::saved_path(&self.export, option, None);
        let text = std::fs::read_to_string(path).unwrap_or_default();
        sge_export::split_saved(&text)
            .stdout
            .lines()
            .filter_map(|l| l.trim().strip_prefix("name"))
            .filter(|rest| rest.starts_with([' ', '\t']))
            .map(|rest| rest.trim().to_string())
            .collect()
    }

    /// Hands `text` to `qconf OPTION FILE [extra]`; `false` (reported) when it refused.
    ///
    /// The file has the export's file name, which qconf's messages then name.
    fn apply(&mut self, object: &str, option: &str, saved: &Path, text: &str) -> bool {
        self.apply_to(object, option, saved, text, None)
    }

    /// [`Self::apply`] with the object named after the file (`-Mrqs FILE NAME`: without it,
    /// the file's sets replace them all).
    fn apply_to(
        &mut self,
        object: &str,
        option: &str,
        saved: &Path,
        text: &str,
        name: Option<&str>,
    ) -> bool {
        let file = self.scratch.0.join(saved.file_name().unwrap_or_default());
        if let Err(e) = std::fs::write(&file, text) {
            self.omit(object, "", format!("write {}: {e}", file.display()));
            return false;
        }
        let file = file.to_string_lossy().into_owned();
        let mut args = vec![option, file.as_str()];
        args.extend(name);
        let out = self.qconf(&args);
        let _ = std::fs::remove_file(&file);
        self.take(object, out)
    }

    /// Records what `qconf` said: its messages, or its refusal.
    fn take(&mut self, object: &str, out: Output) -> bool {
        if out.code == 0 {
            self.report.changes.extend(
                out.stdout
                    .lines()
                    .chain(out.stderr.lines())
                    .map(String::from),
            );
            true
        } else {
            let why: Vec<&str> = out
                .stderr
                .lines()
                .chain(out.stdout.lines())
                .filter(|l| !l.trim().is_empty())
                .collect();
            self.omit(
                object,
                "",
                format!("gridspool's qconf refused it: {}", why.join("; ")),
            );
            false
        }
    }

    /// The object's text with the attributes gridspool has one value of set to it (each
    /// reported).
    fn carried_text(&mut self, object: &str, text: &str, fixed: Table) -> String {
        let (text, changed) = sge_export::with_fixed_values(text, fixed);
        for f in changed {
            self.omit(
                object,
                format!("{} {}", f.attr, f.value),
                format!("gridspool has no {}: it keeps {}", f.attr, f.shown),
            );
        }
        text
    }

    fn complexes(&mut self) {
        let object = "complexes";
        if let Some((path, saved)) = self.saved(object, "sc", None) {
            self.apply(object, "-Mc", &path, &saved.stdout);
        }
    }

    fn kind(&mut self, kind: &Kind) {
        let names = self.listed(kind.list);
        let names = if kind.list == "srqsl" {
            // `-srqs` shows the sets in the order they were made, which gridspool keeps:
            // made in that order, they show in it (`-srqsl` is sorted).
            let all = self.listed_objects("srqs");
            if all.is_empty() { names } else { all }
        } else if kind.list == "shgrpl" {
            let export = self.export.clone();
            sge_export::hostgroups_in_order(&names, |g| {
                std::fs::read_to_string(sge_export::saved_path(&export, "shgrp", Some(g)))
                    .ok()
                    .and_then(|t| {
                        sge_export::attr_value(&sge_export::split_saved(&t).stdout, "hostlist")
                    })
                    .map(|v| qconf_attrs::words(&v))
                    .unwrap_or_default()
            })
        } else {
            names
        };
        // What the cell has of the kind, read once: adding an object of one kind never
        // adds or removes another of it.
        let there: std::collections::HashSet<String> = self
            .config()
            .map(|c| existing(kind, &c).into_iter().collect())
            .unwrap_or_default();
        for name in names {
            let have = kind.builtin.contains(&name.as_str()) || there.contains(&name);
            let object = format!("{} {name}", kind.word);
            let Some((path, saved)) = self.saved(&object, kind.show, Some(&name)) else {
                continue;
            };
            let text = if kind.list == "sel" {
                sge_export::without_attrs(&saved.stdout, sge_export::MEASURED_HOST_ATTRS)
            } else {
                saved.stdout
            };
            let text = self.carried_text(&object, &text, kind.fixed);
            let option = if have { kind.modify } else { kind.add };
            let named = (have && kind.list == "srqsl").then_some(name.as_str());
            self.apply_to(&object, option, &path, &text, named);
        }
    }

    /// SGE's `global` host: the cluster-wide consumables (`complex_values`).
    fn global_host(&mut self) {
        let path = sge_export::saved_path(&self.export, "se", Some("global"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            return;
        };
        let saved = sge_export::split_saved(&text);
        let object = "execution host global";
        let text = sge_export::without_attrs(&saved.stdout, sge_export::MEASURED_HOST_ATTRS);
        let text = self.carried_text(object, &text, qconf_attrs::EXECHOST_ATTRS);
        // Every cell has it, as SGE's has: only ever modified.
        self.apply(object, "-Me", &path, &text);
    }

    fn share_tree(&mut self) {
        let object = "share tree";
        let Some((path, saved)) = self.saved(object, "sstree", None) else {
            return;
        };
        let have = self.config().is_some_and(|c| c.share_tree.is_some());
        if saved.stdout.trim().is_empty() {
            if have {
                let out = self.qconf(&["-dstree"]);
                self.take(object, out);
            }
            return;
        }
        let option = if have { "-Mstree" } else { "-Astree" };
        self.apply(object, option, &path, &saved.stdout);
    }

    /// The global configuration, by `-Mconf` of a file named `global` (SGE's way). Its
    /// `execd_spool_dir` is always the cell's `execd`: reported when SGE's was elsewhere.
    fn global_configuration(&mut self) {
        let object = "global configuration";
        let Some((_, saved)) = self.saved(object, "sconf", None) else {
            return;
        };
        let ours = self.cell.join("execd").display().to_string();
        let shown = self.target.join("execd").display().to_string();
        let mut text = String::new();
        for line in saved.stdout.lines() {
            match line.split_once([' ', '\t']) {
                Some(("execd_spool_dir", value)) => {
                    if value.trim() != shown {
                        self.omit(
                            object,
                            format!("execd_spool_dir {}", value.trim()),
                            format!("gridspool keeps the execution spool in the cell: {shown}"),
                        );
                    }
                    text.push_str(&format!("execd_spool_dir {ours}\n"));
                }
                _ => {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
        let text = self.carried_text(object, &text, crate::compat::sge_conf::CONF_ATTRS);
        self.apply(object, "-Mconf", Path::new("global"), &text);
    }

    /// Hosts' local configurations (`-sconfl`), by `-Aconf`/`-Mconf` of a file named after
    /// the host; the cell's others removed (`-dconf`).
    fn host_configurations(&mut self) {
        let wanted = self.listed("sconfl");
        let configured = |c: &ClusterConfig| -> Vec<String> {
            c.hosts
                .iter()
                .filter(|h| crate::compat::sge_conf::host_conf(h).is_some())
                .map(|h| h.name.clone())
                .collect()
        };
        for name in &wanted {
            let object = format!("host configuration {name}");
            let Some((_, saved)) = self.saved(&object, "sconf", Some(name)) else {
                continue;
            };
            let have = self.config().is_some_and(|c| configured(&c).contains(name));
            let option = if have { "-Mconf" } else { "-Aconf" };
            self.apply(&object, option, Path::new(name), &saved.stdout);
        }
        let have = self.config().map(|c| configured(&c)).unwrap_or_default();
        for name in have.iter().filter(|n| !wanted.contains(n)) {
            let out = self.qconf(&["-dconf", name]);
            self.take(&format!("host configuration {name}"), out);
        }
    }

    /// SGE's accounting file at the head of the cell's, and its share-tree usage as the
    /// cell's usage baseline (`acct::import_history`).
    fn history(&mut self) -> Result<(), ImportError> {
        let spool = Spool::open(&self.cell)?;
        let config = self
            .config()
            .ok_or_else(|| ImportError::Cell("the imported configuration does not load".into()))?;
        let decay = crate::acct::decay_config(&config);
        let h = match crate::acct::import_history(
            &self.export,
            &spool.accounting_path(),
            &spool.usage_baseline_path(),
            &decay,
        ) {
            Ok(h) => h,
            Err(e) => {
                self.omit("accounting file and share-tree usage", "", e.to_string());
                return Ok(());
            }
        };
        self.report.changes.push(format!(
            "accounting: {} records of the SGE cell first, then {} of this cell's ({} already there left out)",
            h.records_imported, h.records_kept, h.records_skipped
        ));
        match &h.usage_from {
            Some(from) => self.report.changes.push(format!(
                "share-tree usage: {} users and {} projects, from {}",
                h.users_with_usage,
                h.projects_with_usage,
                from.display()
            )),
            None => self.omit(
                "share-tree usage",
                "",
                "the export has none (no bdb/ dumps, no sge_share_mon text): sched_d rebuilds it from the accounting file",
            ),
        }
        for (owner, job) in &h.debited_jobs_not_carried {
            self.omit(
                format!("usage of job {job} of {owner}"),
                "",
                "the job was running under SGE: its usage comes with its record, in SGE's accounting file",
            );
        }
        Ok(())
    }

    /// Job and reservation ids go on above SGE's last (`jobseqnum`, `arseqnum` of its
    /// qmaster spool): a workflow tool that keeps ids, or `qacct -j` over the imported
    /// history, never sees one twice.
    fn sequence_numbers(&mut self) -> Result<(), ImportError> {
        let spool = Spool::open(&self.cell)?;
        for (file, counter, what) in [
            ("jobseqnum", "jobid", "job"),
            ("arseqnum", "arid", "advance reservation"),
        ] {
            let path = self.export.join("spool/qmaster").join(file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.omit(
                        format!("{what} ids"),
                        "",
                        format!(
                            "the export has no {}: ids go on from this cell's",
                            path.display()
                        ),
                    );
                    continue;
                }
                Err(e) => {
                    return Err(ImportError::Io {
                        what: "read",
                        path,
                        source: e,
                    });
                }
            };
            let Ok(last) = text.trim().parse::<u64>() else {
                self.omit(
                    format!("{what} ids"),
                    "",
                    format!(
                        "{}: not a number: ids go on from this cell's",
                        path.display()
                    ),
                );
                continue;
            };
            let now = crate::spool::sequence::raise_to(&spool.seq_dir(), counter, last)?;
            self.report.changes.push(format!(
                "{what} ids go on from {} (the SGE cell's last: {last})",
                now + 1
            ));
        }
        Ok(())
    }

    /// An object every cell has one of (the scheduler or global configuration).
    fn single(&mut self, object: &str, show: &str, modify: &str, fixed: Table) {
        let Some((path, saved)) = self.saved(object, show, None) else {
            return;
        };
        let text = self.carried_text(object, &saved.stdout, fixed);
        self.apply(object, modify, &path, &text);
    }

    /// Managers or operators: SGE's list, by `-am`/`-ao`, and the cell's others removed.
    fn people(&mut self, word: &str, show: &str, add: &str, delete: &str, keep: &[&str]) {
        let wanted = self.listed(show);
        let have = self
            .config()
            .map(|c| {
                if show == "sm" {
                    c.managers
                } else {
                    c.operators
                }
            })
            .unwrap_or_default();
        for name in wanted
            .iter()
            .filter(|n| !have.contains(n) && !keep.contains(&n.as_str()))
        {
            let out = self.qconf(&[add, name]);
            self.take(&format!("{word} {name}"), out);
        }
        for name in have
            .iter()
            .filter(|n| !wanted.contains(n) && !keep.contains(&n.as_str()))
        {
            let out = self.qconf(&[delete, name]);
            self.take(&format!("{word} {name}"), out);
        }
    }

    /// Lists gridspool does not keep (administrative and submit hosts: any host that shares
    /// the cell may use it): a name `qconf` of gridspool would not print is reported.
    fn not_kept(&mut self, word: &str, show: &str) {
        let shown = sge_export::names(&sge_export::split_saved(
            &self.qconf(&[&format!("-{show}")]).stdout,
        ));
        for name in self.listed(show) {
            if !shown.contains(&name) {
                self.omit(
                    format!("{word} {name}"),
                    "",
                    format!(
                        "gridspool keeps no {word} list: any host that shares the cell's directory may use it"
                    ),
                );
            }
        }
    }

    fn checkpointing(&mut self) {
        for name in self.listed("sckptl") {
            self.omit(
                format!("checkpointing interface {name}"),
                "",
                "gridspool has no checkpointing interfaces",
            );
        }
    }

    /// Removes the cell's objects of `kind` that the SGE cell has not.
    fn remove_leftovers(&mut self, kind: &Kind) {
        let wanted = self.listed(kind.list);
        let Some(config) = self.config() else {
            return;
        };
        for name in existing(kind, &config) {
            if wanted.contains(&name) || kind.builtin.contains(&name.as_str()) {
                continue;
            }
            let out = self.qconf(&[kind.delete, &name]);
            if !self.take(&format!("{} {name}", kind.word), out) {
                let last = self.report.omissions.last_mut().expect("just added");
                last.why = format!(
                    "the gridspool cell's, not in the SGE cell, kept: {}",
                    last.why
                );
            }
        }
    }
}
