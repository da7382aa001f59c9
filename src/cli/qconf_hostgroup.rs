//! `qconf`'s host group forms (hostgroup(5)): `-ahgrp -Ahgrp -mhgrp -Mhgrp -dhgrp` change
//! `hostgroups` in `config.yaml` (through [`super::qconf_change`]'s edit, check and reload),
//! `-shgrp_tree` and `-shgrp_resolved` show one with its subgroups, with SGE 8.1.9's texts
//! and messages.

use super::Output;
use super::qconf_change::{Cx, Stop, commit, edit_text, read_input};
use crate::compat::qconf;
use crate::compat::qconf_attrs::{self as attrs, AttrError, Shape};
use crate::config::ClusterConfig;
use crate::config::edit::ConfigEditor;

/// hostgroup(5)'s attributes.
const HOSTGROUP_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("group_name", Shape::Scalar, None),
    ("hostlist", Shape::Words, None),
];

/// `-ahgrp group`, `-Ahgrp file`, `-mhgrp group`, `-Mhgrp file`.
pub fn hostgroup_file(
    option: &str,
    value: &str,
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let adding = option.eq_ignore_ascii_case("-ahgrp");
    let (text, file) = match option {
        "-ahgrp" => (
            edit_text(&qconf::hostgroup(value, &[]))?,
            "<editor>".to_string(),
        ),
        "-mhgrp" => {
            let Some(members) = config.hostgroups.get(value) else {
                return Err(Stop(vec![format!(
                    "denied: host group \"{value}\" does not exist"
                )]));
            };
            let shown = qconf::hostgroup(value, members);
            let text = edit_text(&shown)?;
            if text == shown {
                return Err(Stop(vec!["Object has not been changed".into()]));
            }
            (text, "<editor>".to_string())
        }
        _ => (read_input(value, None)?, value.to_string()),
    };
    let bad = |e: AttrError| {
        let mut lines: Vec<String> = e.lines.into_iter().map(|l| format!("error: {l}")).collect();
        lines.push(format!("error: error reading file: \"{file}\""));
        lines.push("invalid format".to_string());
        Stop(lines)
    };
    let lines = attrs::read_object(&text, HOSTGROUP_ATTRS, false).map_err(bad)?;
    let get = |name: &str| {
        lines
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.trim().to_string())
    };
    let name = get("group_name").ok_or_else(|| {
        bad(AttrError {
            lines: vec!["required attribute \"group_name\" is missing".into()],
        })
    })?;
    let members = attrs::words(&get("hostlist").unwrap_or_default());
    if !name.starts_with('@') || name.len() < 2 {
        return Err(Stop(vec![format!(
            "error: host group name \"{name}\" does not start with \"@\""
        )]));
    }
    let exists = config.hostgroups.contains_key(&name);
    if adding && exists {
        return Err(Stop(vec![format!("host group \"{name}\" already exists")]));
    }
    if !adding && !exists {
        return Err(Stop(vec![format!(
            "denied: host group \"{name}\" does not exist"
        )]));
    }
    for m in &members {
        if m.starts_with('@') {
            if !config.hostgroups.contains_key(m) {
                return Err(Stop(vec![format!(
                    "denied: host group \"{m}\" does not exist"
                )]));
            }
        } else if config.host(m).is_none() {
            return Err(Stop(vec![format!("unable to resolve host \"{m}\"")]));
        }
    }
    let old = config.hostgroups.clone();
    config.hostgroups.insert(name.clone(), members);
    if cycle(&config, &name) {
        return Err(Stop(vec![format!(
            "denied: host group \"{name}\" would contain itself"
        )]));
    }
    editor.set_top("hostgroups", &old, &config.hostgroups)?;
    commit(cx, editor, &config)?;
    o.err(if exists {
        format!("{me} modified \"{name}\" in host group list")
    } else {
        format!("{me} added \"{name}\" to host group list")
    });
    Ok(true)
}

/// Whether `group` reaches itself through its subgroups.
fn cycle(config: &ClusterConfig, group: &str) -> bool {
    let mut todo: Vec<&str> = vec![group];
    let mut seen = std::collections::HashSet::new();
    while let Some(g) = todo.pop() {
        for m in config.hostgroups.get(g).into_iter().flatten() {
            if m == group {
                return true;
            }
            if m.starts_with('@') && seen.insert(m.as_str()) {
                todo.push(m);
            }
        }
    }
    false
}

/// `-dhgrp group`: refused while a queue or another group refers to it, as SGE refuses it.
pub fn delete_hostgroup(value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    if !config.hostgroups.contains_key(value) {
        return Err(Stop(vec![format!(
            "denied: host group \"{value}\" does not exist"
        )]));
    }
    let queues: Vec<&str> = config
        .queues
        .iter()
        .filter(|q| q.hostlist.iter().any(|h| h == value) || q.per_host.contains_key(value))
        .map(|q| q.name.as_str())
        .collect();
    if !queues.is_empty() {
        return Err(Stop(vec![format!(
            "denied: these cluster queues still reference \"{value}\": {}",
            queues.join(", ")
        )]));
    }
    if let Some((g, _)) = config
        .hostgroups
        .iter()
        .find(|(_, m)| m.iter().any(|h| h == value))
    {
        return Err(Stop(vec![format!(
            "denied: host group \"{value}\" is still referenced in host group \"{g}\""
        )]));
    }
    let old = config.hostgroups.clone();
    config.hostgroups.remove(value);
    editor.set_top("hostgroups", &old, &config.hostgroups)?;
    commit(cx, editor, &config)?;
    o.err(format!(
        "{me} removed \"{value}\" from host group entry list"
    ));
    Ok(true)
}

/// `-shgrp_tree group`: the group, then each member indented three blanks more, subgroups
/// opened in place.
pub fn tree(config: &ClusterConfig, group: &str) -> Result<String, String> {
    fn walk(config: &ClusterConfig, name: &str, depth: usize, out: &mut String) {
        out.push_str(&format!("{}{name}\n", "   ".repeat(depth)));
        if depth > 16 {
            return;
        }
        if let Some(members) = config.hostgroups.get(name) {
            for m in members {
                walk(config, m, depth + 1, out);
            }
        }
    }
    if !config.hostgroups.contains_key(group) {
        return Err(format!("Host group \"{group}\" does not exist"));
    }
    let mut out = String::new();
    walk(config, group, 0, &mut out);
    Ok(out)
}

/// `-shgrp_resolved group`: its hosts, subgroups resolved, on one line.
pub fn resolved(config: &ClusterConfig, group: &str) -> Result<String, String> {
    if !config.hostgroups.contains_key(group) {
        return Err(format!("Host group \"{group}\" does not exist"));
    }
    Ok(format!("{}\n", config.host_group_hosts(group).join(" ")))
}
