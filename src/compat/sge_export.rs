//! An SGE cell as `sge-export.sh` saves it: one file per `qconf -s*` of every object
//! (`qconf-<option>[-<object>].txt`, the command's standard output, then its standard error, if
//! any, after a `# stderr:` line), the accounting file, and the share-tree usage. What the
//! importer (`sched_d --init --from-sge`) reads of it, before gridspool's own `qconf` takes
//! each object's text.
//!
//! The texts, not SGE's spool: Debian's SGE (and most sites since 6.2) spool into BerkeleyDB,
//! which only SGE's own tools read, while every SGE prints the same `qconf -s*` texts, which
//! `qconf -A*`/`-M*` read back; a classic spool directory holds the same objects in nearly the
//! same texts, but not every cell has one.

use super::qconf_attrs::{Shape, joined_lines, normal_value};
use std::path::{Path, PathBuf};

/// The line before a saved command's standard error.
const STDERR_MARK: &str = "# stderr:";

/// A saved `qconf` output of an export directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub stdout: String,
    pub stderr: String,
}

/// The file holding `qconf -<option> [object]` in an export.
pub fn saved_path(dir: &Path, option: &str, object: Option<&str>) -> PathBuf {
    match object {
        Some(o) => dir.join(format!("qconf-{option}-{}.txt", o.replace('/', "_"))),
        None => dir.join(format!("qconf-{option}.txt")),
    }
}

/// Splits a saved output into what the command wrote to each stream.
pub fn split_saved(text: &str) -> Saved {
    let mut stdout = String::new();
    let mut stderr = String::new();
    let mut in_err = false;
    for line in text.split_inclusive('\n') {
        if !in_err && line.trim_end_matches('\n') == STDERR_MARK {
            in_err = true;
            continue;
        }
        if in_err {
            stderr.push_str(line);
        } else {
            stdout.push_str(line);
        }
    }
    Saved { stdout, stderr }
}

/// The names a list form (`-sql`, `-sul`, `-sm`…) printed: one per line. An empty list is
/// SGE's message on standard error and no names.
pub fn names(saved: &Saved) -> Vec<String> {
    saved
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// An attribute whose value the importer replaced by the only one gridspool has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedAttr {
    pub attr: String,
    /// What SGE had.
    pub value: String,
    /// What gridspool holds instead.
    pub shown: String,
}

/// `text` (an object's `NAME VALUE` lines) with every attribute that `table` fixes to one
/// value set to that value, and the attributes so changed. Continuation lines are joined;
/// everything else is left for `qconf` to read and judge.
pub fn with_fixed_values(
    text: &str,
    table: &[(&str, Shape, Option<&str>)],
) -> (String, Vec<FixedAttr>) {
    let mut out = String::new();
    let mut changed = Vec::new();
    for line in joined_lines(text) {
        let t = line.trim();
        let (name, value) = match t.split_once([' ', '\t']) {
            Some((n, v)) => (n, v.trim()),
            None => (t, ""),
        };
        let shown = table
            .iter()
            .find(|(n, _, _)| *n == name)
            .and_then(|(_, _, shown)| *shown);
        match shown {
            Some(shown)
                if !t.starts_with('#')
                    && !normal_value(value).eq_ignore_ascii_case(&normal_value(shown)) =>
            {
                out.push_str(&format!("{name} {shown}\n"));
                changed.push(FixedAttr {
                    attr: name.to_string(),
                    value: normal_value(value),
                    shown: shown.to_string(),
                });
            }
            _ => {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    (out, changed)
}

/// What `qconf -se` shows of an execution host that its host measured (`load_values`,
/// `processors`): SGE's `-Ae`/`-Me` refuse them, and a new cell measures its own.
pub const MEASURED_HOST_ATTRS: &[&str] = &["load_values", "processors"];

/// `text` without the attributes `attrs` (continuation lines and all).
pub fn without_attrs(text: &str, attrs: &[&str]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        let continued = line.ends_with('\\');
        if !skipping {
            let name = line.split([' ', '\t']).next().unwrap_or("");
            skipping = attrs.contains(&name);
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
        if !continued {
            skipping = false;
        }
    }
    out
}

/// The value of attribute `attr` in an object's text (continuation lines joined).
pub fn attr_value(text: &str, attr: &str) -> Option<String> {
    for line in joined_lines(text) {
        if let Some((name, value)) = line.trim().split_once([' ', '\t'])
            && name == attr
        {
            return Some(value.trim().to_string());
        }
    }
    None
}

/// Host groups in an order where each comes after the groups it holds (`hostlist @sub`), so
/// that adding them in that order never names a group not yet there. `members(g)` gives a
/// group's host list; a cycle (which SGE refuses) keeps the remaining groups in their order.
pub fn hostgroups_in_order(
    groups: &[String],
    members: impl Fn(&str) -> Vec<String>,
) -> Vec<String> {
    fn visit(
        g: &str,
        groups: &[String],
        members: &dyn Fn(&str) -> Vec<String>,
        seen: &mut Vec<String>,
        out: &mut Vec<String>,
    ) {
        if seen.iter().any(|s| s == g) || !groups.iter().any(|x| x == g) {
            return;
        }
        seen.push(g.to_string());
        for m in members(g) {
            if m.starts_with('@') {
                visit(&m, groups, members, seen, out);
            }
        }
        out.push(g.to_string());
    }
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for g in groups {
        visit(g, groups, &members, &mut seen, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::qconf_attrs::QUEUE_ATTRS;

    #[test]
    fn a_saved_output_splits_at_the_stderr_line() {
        let s = split_saved("a\nb\n# stderr:\nno list\n");
        assert_eq!(s.stdout, "a\nb\n");
        assert_eq!(s.stderr, "no list\n");
        assert_eq!(names(&s), ["a", "b"]);
        let empty = split_saved("# stderr:\nno cqueue list defined\n");
        assert!(names(&empty).is_empty());
    }

    #[test]
    fn a_fixed_attribute_takes_its_only_value_and_is_reported() {
        let text = "qname q\nckpt_list NONE\nsubordinate_list other.q=1, \\\n   third.q\nslots 4\n";
        let (out, changed) = with_fixed_values(text, QUEUE_ATTRS);
        assert_eq!(
            out,
            "qname q\nckpt_list NONE\nsubordinate_list NONE\nslots 4\n"
        );
        assert_eq!(
            changed,
            [FixedAttr {
                attr: "subordinate_list".into(),
                value: "other.q=1, third.q".into(),
                shown: "NONE".into(),
            }]
        );
    }

    #[test]
    fn a_hosts_measured_values_are_left_out() {
        let text = "hostname vm\nload_values arch=lx-amd64, \\\n   num_proc=2\nprocessors 2\nusage_scaling NONE\n";
        assert_eq!(
            without_attrs(text, MEASURED_HOST_ATTRS),
            "hostname vm\nusage_scaling NONE\n"
        );
    }

    #[test]
    fn host_groups_come_after_the_groups_they_hold() {
        let groups: Vec<String> = ["@all", "@big", "@mid"].map(String::from).into();
        let order = hostgroups_in_order(&groups, |g| match g {
            "@all" => vec!["@mid".into(), "n1".into()],
            "@mid" => vec!["@big".into()],
            _ => vec!["n2".into()],
        });
        assert_eq!(order, ["@big", "@mid", "@all"]);
    }
}
