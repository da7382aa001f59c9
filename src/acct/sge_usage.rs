//! SGE 8.1.9's share-tree usage as its spool keeps it, read into a [`UsageStore`].
//!
//! SGE does not rebuild usage from its accounting file: the qmaster keeps it in the user and
//! project objects (`user(5)`, `project(5)`) and spools it with them, and 8.1.9's `qconf
//! -suser`/`-sprj` print none of it. A Debian cell spools into BerkeleyDB, whose objects
//! `spooledit dump KEY` prints as text (`USER:<name>`, `PROJECT:<name>`): the decayed usage
//! (`UU_usage`), its time stamp (`UU_usage_time_stamp`), the undecayed total
//! (`UU_long_term_usage`), and per project the user's usage in it (`UU_project`: `UPP_usage`,
//! `UPP_long_term_usage`, decayed with the user's stamp); projects the same as `PR_*`.
//!
//! The share tree uses `cpu`, `mem` and `io` only; every other usage kind (`ru_*`, `vmem`,
//! `acct_*`, `finished_jobs`) is skipped. What SGE keeps for jobs still running
//! (`UU_debited_job_usage`, `PR_debited_job_usage`: the usage already charged for each, so
//! that the next report charges only the difference) is not carried: those jobs stay with
//! SGE, and their final usage is in the records SGE writes when they end. The reader counts
//! them so that the import can say so.

use gridspool_policy::sharetree::{DecayConfig, Usage, UsageRecord, UsageStore};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A dump that cannot be read, with the file and (for its text) the line.
#[derive(Debug, thiserror::Error)]
pub enum UsageDumpError {
    #[error("{path}: cannot {op}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {what}")]
    Syntax {
        path: PathBuf,
        line: u64,
        what: String,
    },
}

/// A field's value in a dump.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    /// `"text"`.
    Text(String),
    /// A number or a bare word (`NULL`).
    Word(String),
    /// `empty`: a list without elements.
    Empty,
    /// `full` and the list that follows.
    List(Vec<Object>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    line: u64,
    value: Value,
}

/// One element: `{ /* NAME */ value … }`.
#[derive(Debug, Clone, PartialEq, Default)]
struct Object {
    line: u64,
    fields: Vec<Field>,
}

impl Object {
    fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// The text of one dump, parsed.
struct Parser<'a> {
    path: &'a Path,
    lines: Vec<(u64, &'a str)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path, text: &'a str) -> Self {
        let lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        Parser {
            path,
            lines,
            pos: 0,
        }
    }

    fn error(&self, line: u64, what: impl Into<String>) -> UsageDumpError {
        UsageDumpError::Syntax {
            path: self.path.to_path_buf(),
            line,
            what: what.into(),
        }
    }

    /// The line number of the end of the text, for "ends early" errors.
    fn last_line(&self) -> u64 {
        self.lines.last().map_or(0, |(n, _)| *n)
    }

    fn next(&mut self, expecting: &str) -> Result<(u64, &'a str), UsageDumpError> {
        match self.lines.get(self.pos) {
            Some(&l) => {
                self.pos += 1;
                Ok(l)
            }
            None => Err(self.error(
                self.last_line(),
                format!("the dump ends where {expecting} was expected"),
            )),
        }
    }

    /// The whole text: one object, nothing after it.
    fn document(mut self) -> Result<Object, UsageDumpError> {
        let (line, text) = self.next("`{`")?;
        if text != "{" {
            return Err(self.error(line, format!("expected `{{`, found `{text}`")));
        }
        let object = self.object(line)?;
        if let Some(&(line, text)) = self.lines.get(self.pos) {
            return Err(self.error(line, format!("text after the object: `{text}`")));
        }
        Ok(object)
    }

    /// An object whose `{` (at `line`) was read.
    fn object(&mut self, line: u64) -> Result<Object, UsageDumpError> {
        let mut object = Object {
            line,
            fields: Vec::new(),
        };
        loop {
            let (n, text) = self.next("a field or `}`")?;
            if text == "}" {
                return Ok(object);
            }
            let Some((name, rest)) = comment_and_rest(text) else {
                return Err(self.error(n, format!("expected a field, found `{text}`")));
            };
            let value = match rest {
                "empty" => Value::Empty,
                "full" => Value::List(self.list()?),
                r if r.len() >= 2 && r.starts_with('"') && r.ends_with('"') => {
                    Value::Text(r[1..r.len() - 1].to_string())
                }
                "" => return Err(self.error(n, format!("field {name} has no value"))),
                r => Value::Word(r.to_string()),
            };
            object.fields.push(Field {
                name: name.to_string(),
                line: n,
                value,
            });
        }
    }

    /// A list after `full`: its header, its descriptor (skipped), its elements.
    fn list(&mut self) -> Result<Vec<Object>, UsageDumpError> {
        let (start, text) = self.next("`{ /* LIST BEGIN */`")?;
        if text != "{ /* LIST BEGIN */" {
            return Err(self.error(start, format!("expected a list, found `{text}`")));
        }
        let mut declared: Option<(u64, usize)> = None;
        let mut elements = Vec::new();
        loop {
            let (n, text) = self.next("a list element or `} /* LIST END */`")?;
            match text {
                "} /* LIST END */" => break,
                "{ /* DESCR BEGIN */" => loop {
                    let (_, t) = self.next("`} /* DESCR END */`")?;
                    if t == "} /* DESCR END */" {
                        break;
                    }
                },
                "{" => elements.push(self.object(n)?),
                _ => match comment_and_rest(text) {
                    Some(("LISTNAME", _)) => {}
                    Some(("NUMBER OF ELEMENTS", count)) => {
                        let count = count.parse().map_err(|_| {
                            self.error(n, format!("not a number of elements: `{count}`"))
                        })?;
                        declared = Some((n, count));
                    }
                    _ => {
                        return Err(self.error(n, format!("unexpected in a list: `{text}`")));
                    }
                },
            }
        }
        if let Some((n, count)) = declared
            && count != elements.len()
        {
            return Err(self.error(
                n,
                format!(
                    "the list declares {count} elements and has {}",
                    elements.len()
                ),
            ));
        }
        Ok(elements)
    }
}

/// `/* NAME */ rest` as (NAME, rest), both trimmed.
fn comment_and_rest(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix("/*")?;
    let (name, rest) = inner.split_once("*/")?;
    Some((name.trim(), rest.trim()))
}

/// A user or project as its dump gives it.
#[derive(Debug, Clone, PartialEq, Default)]
struct Owner {
    name: String,
    record: UsageRecord,
    /// Whether the object had any usage list at all (`PR_usage` of 8.1.9's BerkeleyDB spool
    /// is empty although the qmaster shows project usage: see [`read_usage_dumps`]).
    has_usage: bool,
    /// (project, usage in it as of the owner's stamp).
    in_projects: Vec<(String, UsageRecord)>,
    /// Running jobs whose usage so far SGE had debited (not carried).
    debited_jobs: Vec<u64>,
}

/// Reads one dump's text (`USER:` when `user`, else `PROJECT:`).
fn owner_of(path: &Path, text: &str, user: bool) -> Result<Owner, UsageDumpError> {
    let parser = Parser::new(path, text);
    let object = parser.document()?;
    let p = if user { "UU" } else { "PR" };
    let err = |line: u64, what: String| UsageDumpError::Syntax {
        path: path.to_path_buf(),
        line,
        what,
    };
    let name = match object.field(&format!("{p}_name")).map(|f| &f.value) {
        Some(Value::Text(n)) if !n.is_empty() => n.clone(),
        _ => return Err(err(object.line, format!("no {p}_name"))),
    };
    let stamp = match object.field(&format!("{p}_usage_time_stamp")) {
        None => None,
        Some(f) => match &f.value {
            Value::Word(w) => match w.parse::<i64>() {
                Ok(0) => None,
                Ok(s) => Some(s),
                Err(_) => return Err(err(f.line, format!("not a time stamp: `{w}`"))),
            },
            _ => return Err(err(f.line, "a time stamp must be a number".into())),
        },
    };
    let usage_list = |field: Option<&Field>| -> Result<Option<Usage>, UsageDumpError> {
        match field {
            None => Ok(None),
            Some(f) => match &f.value {
                Value::Empty => Ok(None),
                Value::List(elems) => usage_of(path, elems).map(Some),
                _ => Err(err(f.line, format!("{} must be a usage list", f.name))),
            },
        }
    };
    let usage = usage_list(object.field(&format!("{p}_usage")))?;
    let long_term = usage_list(object.field(&format!("{p}_long_term_usage")))?;
    let mut owner = Owner {
        name,
        has_usage: usage.is_some() || long_term.is_some(),
        record: UsageRecord {
            usage: usage.unwrap_or_default(),
            long_term: long_term.unwrap_or_default(),
            stamp,
        },
        ..Owner::default()
    };
    if user && let Some(f) = object.field("UU_project") {
        match &f.value {
            Value::Empty => {}
            Value::List(elems) => {
                for e in elems {
                    let project = match e.field("UPP_name").map(|f| &f.value) {
                        Some(Value::Text(n)) if !n.is_empty() => n.clone(),
                        _ => return Err(err(e.line, "no UPP_name".into())),
                    };
                    let usage = usage_list(e.field("UPP_usage"))?;
                    let long_term = usage_list(e.field("UPP_long_term_usage"))?;
                    owner.in_projects.push((
                        project,
                        UsageRecord {
                            usage: usage.unwrap_or_default(),
                            long_term: long_term.unwrap_or_default(),
                            stamp,
                        },
                    ));
                }
            }
            _ => return Err(err(f.line, "UU_project must be a list".into())),
        }
    }
    if let Some(f) = object.field(&format!("{p}_debited_job_usage"))
        && let Value::List(elems) = &f.value
    {
        for e in elems {
            match e.field("UPU_job_number").map(|f| &f.value) {
                Some(Value::Word(w)) => owner.debited_jobs.push(
                    w.parse()
                        .map_err(|_| err(e.line, format!("not a job number: `{w}`")))?,
                ),
                _ => return Err(err(e.line, "no UPU_job_number".into())),
            }
        }
    }
    Ok(owner)
}

/// The cpu, mem and io of a usage list (`UA_name`, `UA_value` elements); other kinds are not
/// the share tree's and are skipped.
fn usage_of(path: &Path, elems: &[Object]) -> Result<Usage, UsageDumpError> {
    let mut u = Usage::default();
    for e in elems {
        let err = |what: String| UsageDumpError::Syntax {
            path: path.to_path_buf(),
            line: e.line,
            what,
        };
        let name = match e.field("UA_name").map(|f| &f.value) {
            Some(Value::Text(n)) => n.as_str(),
            _ => return Err(err("a usage element without UA_name".into())),
        };
        let slot = match name {
            "cpu" => &mut u.cpu,
            "mem" => &mut u.mem,
            "io" => &mut u.io,
            _ => continue,
        };
        *slot = match e.field("UA_value").map(|f| &f.value) {
            Some(Value::Word(w)) => match w.parse::<f64>() {
                Ok(v) if v.is_finite() => v,
                _ => return Err(err(format!("usage {name}: not a number: `{w}`"))),
            },
            _ => return Err(err(format!("usage {name} without UA_value"))),
        };
    }
    Ok(u)
}

/// What [`read_usage_dumps`] read.
#[derive(Debug, Clone, Default)]
pub struct SpoolUsage {
    pub store: UsageStore,
    /// Users read (one `USER:` dump each).
    pub users: usize,
    /// Projects with usage: from their own dump, or summed from their users' usage in them.
    pub projects: usize,
    /// Projects whose usage was summed from their users' (their dump had none).
    pub projects_summed: Vec<String>,
    /// (user or project, job) of running jobs whose debited usage is not carried.
    pub debited_jobs: Vec<(String, u64)>,
}

/// Reads every `USER:<name>.txt` and `PROJECT:<name>.txt` dump in `dir` (what `spooledit dump
/// KEY` printed for each key; other files are not looked at) into a [`UsageStore`].
///
/// A user's usage in a project becomes the store's user-in-project record, with the user's
/// time stamp. A project's own record is its `PR_usage`; 8.1.9's BerkeleyDB spool leaves
/// that list empty (with stamp 0) although its qmaster shows the project's usage, which is
/// then exactly the sum of its users' usage in it (every job of the project charges both,
/// `sge_share_mon` of the fixture shows it): so a project without usage of its own gets
/// that sum, decayed to the latest stamp among them with `decay`.
pub fn read_usage_dumps(dir: &Path, decay: &DecayConfig) -> Result<SpoolUsage, UsageDumpError> {
    let entries = std::fs::read_dir(dir).map_err(|source| UsageDumpError::Io {
        op: "list",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| UsageDumpError::Io {
            op: "list",
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".txt") {
            if stem.starts_with("USER:") {
                names.push((name.clone(), true));
            } else if stem.starts_with("PROJECT:") {
                names.push((name.clone(), false));
            }
        }
    }
    names.sort();
    let mut users = Vec::new();
    let mut projects = Vec::new();
    for (name, user) in names {
        let path = dir.join(&name);
        let text = crate::file::open::read_to_string(&path).map_err(|e| UsageDumpError::Io {
            op: "read",
            path: path.clone(),
            source: e.into(),
        })?;
        let owner = owner_of(&path, &text, user)?;
        if user {
            users.push(owner);
        } else {
            projects.push(owner);
        }
    }
    let mut out = SpoolUsage {
        users: users.len(),
        ..SpoolUsage::default()
    };
    // Each project's users' usage in it, for the projects the spool left without usage.
    let mut summed: BTreeMap<String, Vec<UsageRecord>> = BTreeMap::new();
    for u in &users {
        out.store.set_user(&u.name, u.record);
        for (p, r) in &u.in_projects {
            out.store.set_user_in_project(&u.name, p, *r);
            summed.entry(p.clone()).or_default().push(*r);
        }
        out.debited_jobs
            .extend(u.debited_jobs.iter().map(|&j| (u.name.clone(), j)));
    }
    for p in &projects {
        out.debited_jobs
            .extend(p.debited_jobs.iter().map(|&j| (p.name.clone(), j)));
        if p.has_usage {
            out.store.set_project(&p.name, p.record);
            summed.remove(&p.name);
            out.projects += 1;
        }
    }
    for (project, records) in summed {
        out.store
            .set_project(&project, sum_records(&records, decay));
        out.projects += 1;
        out.projects_summed.push(project);
    }
    Ok(out)
}

/// Reads `sge_share_mon -n` (or `-h`: a header line of names, then tab-separated rows) into a
/// [`UsageStore`]: for a cell whose spool cannot be dumped, the one text form of its usage a
/// running SGE gives. Each node that names a user and a project is that user's usage in the
/// project, a project node (its last path component is its project) the project's, a user
/// node outside projects the user's own; the usage is as decayed to `curr_time`, which
/// becomes its stamp. Only what the tree shows is there: users and projects without a node
/// (or a `default` node standing for them) are not.
pub fn read_share_mon(path: &Path) -> Result<SpoolUsage, UsageDumpError> {
    let text = crate::file::open::read_to_string(path).map_err(|e| UsageDumpError::Io {
        op: "read",
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    let err = |line: u64, what: String| UsageDumpError::Syntax {
        path: path.to_path_buf(),
        line,
        what,
    };
    let mut header: Option<Vec<&str>> = None;
    let mut out = SpoolUsage::default();
    let mut users = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let line = line.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').filter(|f| !f.is_empty()).collect();
        let node: BTreeMap<&str, &str> = if line.contains('=') {
            fields.iter().filter_map(|f| f.split_once('=')).collect()
        } else if let Some(names) = &header {
            // Empty columns (a node without user or project) are empty between tabs.
            let values: Vec<&str> = line.split('\t').collect();
            names.iter().copied().zip(values).collect()
        } else {
            header = Some(line.split('\t').filter(|f| !f.is_empty()).collect());
            continue;
        };
        let get = |k: &str| -> Result<&str, UsageDumpError> {
            node.get(k)
                .copied()
                .ok_or_else(|| err(n, format!("no {k} column")))
        };
        let num = |k: &str| -> Result<f64, UsageDumpError> {
            let v = get(k)?;
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| err(n, format!("{k}: not a number: `{v}`")))
        };
        let stamp = get("curr_time")?;
        let stamp: i64 = stamp
            .parse()
            .map_err(|_| err(n, format!("curr_time: not a time: `{stamp}`")))?;
        let record = UsageRecord {
            usage: Usage {
                cpu: num("cpu")?,
                mem: num("mem")?,
                io: num("io")?,
            },
            long_term: Usage {
                cpu: num("ltcpu")?,
                mem: num("ltmem")?,
                io: num("ltio")?,
            },
            stamp: Some(stamp),
        };
        let (name, user, project) = (get("node_name")?, get("user_name")?, get("project_name")?);
        let last = name.rsplit('/').next().unwrap_or("");
        match (user.is_empty(), project.is_empty()) {
            (false, false) => {
                if out.store.user_in_project(user, project).is_none() {
                    out.store.set_user_in_project(user, project, record);
                }
                if out.store.user(user).is_none() {
                    out.store.set_user(user, UsageRecord::default());
                }
                users.insert(user.to_string());
            }
            (false, true) if last == user => {
                out.store.set_user(user, record);
                users.insert(user.to_string());
            }
            (true, false) if last == project => {
                out.store.set_project(project, record);
                out.projects += 1;
            }
            _ => {}
        }
    }
    out.users = users.len();
    Ok(out)
}

/// The sum of records, decayed to the latest of their stamps.
fn sum_records(records: &[UsageRecord], decay: &DecayConfig) -> UsageRecord {
    let stamp = records.iter().filter_map(|r| r.stamp).max();
    let mut sum = UsageRecord {
        stamp,
        ..UsageRecord::default()
    };
    for r in records {
        let u = stamp.map_or(r.usage, |s| r.usage_at(s, decay));
        sum.usage = Usage {
            cpu: sum.usage.cpu + u.cpu,
            mem: sum.usage.mem + u.mem,
            io: sum.usage.io + u.io,
        };
        sum.long_term = Usage {
            cpu: sum.long_term.cpu + r.long_term.cpu,
            mem: sum.long_term.mem + r.long_term.mem,
            io: sum.long_term.io + r.long_term.io,
        };
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST_HEAD: &str =
        "   { /* LIST BEGIN */\n   /* LISTNAME               */ \"No list name specified\"\n";
    const DESCR: &str = "   { /* DESCR BEGIN */\n   /* NUMBER OF DESCR FIELDS */ 2\n   /* UA_name              */ { 2450, 67336 }\n   /* UA_value             */ { 2451, 65538 }\n   } /* DESCR END */\n";

    fn usage_list(items: &[(&str, &str)]) -> String {
        let mut s = format!(
            "{LIST_HEAD}   /* NUMBER OF ELEMENTS     */ {}\n{DESCR}",
            items.len()
        );
        for (k, v) in items {
            s.push_str(&format!(
                "   {{ \n   /* UA_name              */ \"{k}\"\n   /* UA_value             */ {v}\n   }}\n"
            ));
        }
        s.push_str("   } /* LIST END */\n");
        s
    }

    fn user_dump(usage: &str, projects: &str) -> String {
        format!(
            "{{ \n/* UU_name              */ \"alice\"\n/* UU_oticket           */ 0\n/* UU_usage             */ {usage}/* UU_usage_time_stamp  */ 1000\n/* UU_long_term_usage   */ empty\n/* UU_project           */ {projects}/* UU_default_project   */ NULL\n}}\n"
        )
    }

    #[test]
    fn reads_cpu_mem_io_and_skips_other_kinds() {
        let usage = format!(
            "full\n{}",
            usage_list(&[
                ("cpu", "12.5"),
                ("vmem", "13127680.000000"),
                ("mem", "0.25"),
                ("io", "0.001"),
                ("finished_jobs", "3.0")
            ])
        );
        let text = user_dump(&usage, "empty\n");
        let o = owner_of(Path::new("USER:alice.txt"), &text, true).expect("parse");
        assert_eq!(o.name, "alice");
        assert_eq!(
            o.record,
            UsageRecord {
                usage: Usage {
                    cpu: 12.5,
                    mem: 0.25,
                    io: 0.001
                },
                long_term: Usage::default(),
                stamp: Some(1000),
            }
        );
        assert!(o.in_projects.is_empty());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let usage = format!("full\n{}", usage_list(&[("cpu", "twelve")]));
        let text = user_dump(&usage, "empty\n");
        let e = owner_of(Path::new("USER:alice.txt"), &text, true).expect_err("bad value");
        let line = text
            .lines()
            .position(|l| l.contains("\"cpu\""))
            .expect("cpu line") as u64; // the element's `{`, one line above
        assert_eq!(
            e.to_string(),
            format!("USER:alice.txt:{line}: usage cpu: not a number: `twelve`")
        );
        // A list that declares more elements than it has.
        let text = user_dump(
            &format!(
                "full\n{}",
                usage_list(&[("cpu", "1")]).replace("ELEMENTS     */ 1", "ELEMENTS     */ 2")
            ),
            "empty\n",
        );
        let e = owner_of(Path::new("u"), &text, true).expect_err("count");
        assert!(
            e.to_string()
                .ends_with("the list declares 2 elements and has 1"),
            "{e}"
        );
        // Cut short.
        let e = owner_of(Path::new("u"), &text[..text.len() / 2], true).expect_err("short");
        assert!(e.to_string().contains("the dump ends where"), "{e}");
    }

    #[test]
    fn share_mon_nodes_and_its_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mon");
        let row = |node: &str, user: &str, project: &str, cpu: &str| {
            format!(
                "curr_time=2000\tusage_time=0\tnode_name={node}\tuser_name={user}\tproject_name={project}\tshares=1\tcpu={cpu}\tmem=0\tio=0\tltcpu=9\tltmem=0\tltio=0\t\n"
            )
        };
        let text = [
            row("/", "", "", "0"),
            row("/p", "", "p", "5"),
            row("/p/default", "", "p", "0"),
            row("/p/default/bob", "bob", "p", "5"),
            row("/carol", "carol", "", "2.5"),
        ]
        .concat();
        std::fs::write(&path, &text).expect("write");
        let got = read_share_mon(&path).expect("read");
        assert_eq!((got.users, got.projects), (2, 1));
        let bob = got.store.user_in_project("bob", "p").expect("bob");
        assert_eq!(
            (bob.usage.cpu, bob.long_term.cpu, bob.stamp),
            (5.0, 9.0, Some(2000))
        );
        assert_eq!(got.store.project("p").expect("p").usage.cpu, 5.0);
        assert_eq!(got.store.user("carol").expect("carol").usage.cpu, 2.5);
        std::fs::write(&path, text.replace("cpu=2.5", "cpu=lots")).expect("write");
        let e = read_share_mon(&path).expect_err("bad number");
        assert_eq!(
            e.to_string(),
            format!("{}:5: cpu: not a number: `lots`", path.display())
        );
    }

    #[test]
    fn projects_without_usage_get_their_users_sum() {
        let dir = tempfile::tempdir().expect("tempdir");
        let upp = |p: &str, cpu: &str| {
            format!(
                "   {{ \n   /* UPP_name             */ \"{p}\"\n   /* UPP_usage            */ full\n{}   /* UPP_long_term_usage  */ full\n{}   }}\n",
                usage_list(&[("cpu", cpu)]),
                usage_list(&[("cpu", cpu)])
            )
        };
        let projects = |items: &[String]| {
            format!(
                "full\n{LIST_HEAD}   /* NUMBER OF ELEMENTS     */ {}\n{}   }} /* LIST END */\n",
                items.len(),
                items.concat()
            )
        };
        let a = user_dump("empty\n", &projects(&[upp("p1", "3"), upp("p2", "1")]));
        let b = user_dump("empty\n", &projects(&[upp("p1", "4")])).replace("alice", "bob");
        std::fs::write(dir.path().join("USER:alice.txt"), a).expect("write");
        std::fs::write(dir.path().join("USER:bob.txt"), b).expect("write");
        // p2's own dump has usage: it is taken as it is.
        std::fs::write(
            dir.path().join("PROJECT:p2.txt"),
            format!(
                "{{ \n/* PR_name              */ \"p2\"\n/* PR_usage             */ full\n{}/* PR_usage_time_stamp  */ 900\n}}\n",
                usage_list(&[("cpu", "9")])
            ),
        )
        .expect("write");
        std::fs::write(
            dir.path().join("PROJECT:p1.txt"),
            "{ \n/* PR_name              */ \"p1\"\n/* PR_usage             */ empty\n/* PR_usage_time_stamp  */ 0\n/* PR_long_term_usage   */ empty\n}\n",
        )
        .expect("write");
        let got = read_usage_dumps(dir.path(), &DecayConfig::default()).expect("read");
        assert_eq!((got.users, got.projects), (2, 2));
        assert_eq!(got.projects_summed, vec!["p1".to_string()]);
        let p1 = got.store.project("p1").expect("p1");
        assert_eq!(
            (p1.usage.cpu, p1.long_term.cpu, p1.stamp),
            (7.0, 7.0, Some(1000))
        );
        let p2 = got.store.project("p2").expect("p2");
        assert_eq!((p2.usage.cpu, p2.stamp), (9.0, Some(900)));
        let bob = got.store.user_in_project("bob", "p1").expect("bob in p1");
        assert_eq!((bob.usage.cpu, bob.stamp), (4.0, Some(1000)));
    }
}
