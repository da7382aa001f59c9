//! `qconf`'s access-list forms (`access_list(5)`): `-au -du` (users into and out of lists,
//! a list made on first use), `-Au -Mu -mu` (a whole list from its text), `-dul`, and the
//! show forms `-su -sul`, with SGE 8.1.9's messages. Changes go through the same edit, check
//! and reload of `config.yaml` as every other `qconf` change ([`super::qconf_change`]).

use super::Output;
use super::qconf_change::{Cx, Stop, commit, edit_text, read_input};
use crate::compat::qconf;
use crate::compat::qconf_attrs::{self as attrs, Shape};
use crate::config::edit::ConfigEditor;
use crate::config::{AccessList, ClusterConfig};

/// The changing forms this module carries out.
pub fn handles(option: &str) -> bool {
    matches!(option, "-au" | "-du" | "-Au" | "-Mu" | "-mu" | "-dul")
}

/// The attributes of queues and hosts that fence them.
pub fn is_fence_attr(attr: &str) -> bool {
    matches!(
        attr,
        "user_lists" | "xuser_lists" | "projects" | "xprojects"
    )
}

/// SGE 8.1.9's refusal of `-mattr` with `NONE`, or on an empty list of an execution host.
pub const MATTR_NONE: &str =
    "\"NONE\" is not a valid list attribute value for -mattr.  Try using -rattr instead.";

/// access_list(5)'s attributes, every one required in a file.
const ACCESS_LIST_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("name", Shape::Scalar, None),
    ("type", Shape::Words, None),
    ("fshare", Shape::Scalar, None),
    ("oticket", Shape::Scalar, None),
    ("entries", Shape::Words, None),
];

/// SGE's refusal of a reference to an access list or a project that does not exist (what
/// `sched_d` would refuse to load), before anything is written.
pub fn check_references(config: &ClusterConfig) -> Result<(), Stop> {
    let mut lists: Vec<&String> = Vec::new();
    let mut projects: Vec<&String> = Vec::new();
    let mut fences = vec![config.cluster_access.fence()];
    fences.extend(config.queues.iter().map(|q| q.fence()));
    fences.extend(config.hosts.iter().map(|h| h.fence()));
    for f in &fences {
        lists.extend(f.user_lists.iter().chain(f.xuser_lists));
        projects.extend(f.projects.iter().chain(f.xprojects));
    }
    for p in &config.projects {
        lists.extend(p.acl.iter().chain(&p.xacl));
    }
    if let Some(l) = lists.iter().find(|l| config.access_list(l).is_none()) {
        return Err(Stop(vec![format!("Userset \"{l}\" does not exist")]));
    }
    if let Some(p) = projects
        .iter()
        .find(|p| !config.projects.iter().any(|x| x.name == ***p))
    {
        return Err(Stop(vec![format!("Project \"{p}\" does not exist")]));
    }
    Ok(())
}

/// SGE's refusal of `-dprj` of a project a queue, a host or the global configuration
/// names in its `projects` or `xprojects`.
pub fn project_referenced(config: &ClusterConfig, name: &str) -> Option<String> {
    let mut fences = vec![(
        "configuration",
        "global".to_string(),
        config.cluster_access.fence(),
    )];
    fences.extend(
        config
            .queues
            .iter()
            .map(|q| ("queue", q.name.clone(), q.fence())),
    );
    fences.extend(
        config
            .hosts
            .iter()
            .map(|h| ("exechost", h.name.clone(), h.fence())),
    );
    fences.into_iter().find_map(|(kind, object, f)| {
        let list = if f.projects.iter().any(|p| p == name) {
            "projects"
        } else if f.xprojects.iter().any(|p| p == name) {
            "xprojects"
        } else {
            return None;
        };
        Some(format!(
            "denied: project \"{name}\" is still referenced in {list} of {kind} \"{object}\""
        ))
    })
}

/// `-su list[,list…]`: each list, a blank line between them.
pub fn show(
    option: &str,
    value: &str,
    config: &ClusterConfig,
    o: &mut Output,
) -> Result<(), String> {
    if option == "-sul" {
        for l in config.access_lists() {
            o.out(l.name);
        }
        return Ok(());
    }
    for (i, name) in value.split(',').filter(|n| !n.is_empty()).enumerate() {
        let l = config
            .access_list(name)
            .ok_or_else(|| format!("denied: access list \"{name}\" does not exist"))?;
        if i > 0 {
            o.stdout.push('\n');
        }
        o.stdout.push_str(&qconf::access_list(&l));
    }
    Ok(())
}

/// Carries out a changing form; `Ok(false)` when SGE exits 1 after doing what it could.
pub fn change(
    option: &str,
    value: &str,
    more: &[String],
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    match option {
        "-au" | "-du" => users(option, value, more, cx, o),
        "-dul" => delete_lists(value, me, cx, o),
        _ => whole_list(option, value, me, cx, o),
    }
}

/// Replaces (or adds) list `new` in `config` and in the editor's file.
fn put(editor: &ConfigEditor, config: &mut ClusterConfig, new: AccessList) -> Result<(), Stop> {
    let name = new.name.clone();
    let lists = &mut config.access_lists;
    editor.put_item("access_lists", lists, &name, |l| l.name.as_str(), new)?;
    Ok(())
}

/// `-au user_list listname_list`, `-du user_list listname_list`: every user into (out of)
/// every list, in order; what cannot be done is said, the rest done, and the exit is 1.
fn users(
    option: &str,
    value: &str,
    more: &[String],
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let Some(lists) = more.first() else {
        return Err(Stop(vec![format!(
            "error: no list_name provided to \"{option}\""
        )]));
    };
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let add = option == "-au";
    let mut lines = Vec::new();
    let mut failed = false;
    let mut changed = false;
    for list in lists.split(',').filter(|l| !l.is_empty()) {
        let mut l = match config.access_list(list) {
            Some(l) => l,
            None if add => AccessList::new(list, "ACL"),
            None => {
                lines.push(format!("access list \"{list}\" doesn't exist"));
                failed = true;
                continue;
            }
        };
        let before = l.clone();
        for user in value.split(',').filter(|u| !u.is_empty()) {
            let there = l.entries.iter().any(|e| e == user);
            match (add, there) {
                (true, true) => {
                    lines.push(format!("\"{user}\" is already in access list \"{list}\""));
                    failed = true;
                }
                (true, false) => {
                    l.entries.push(user.to_string());
                    lines.push(format!("added \"{user}\" to access list \"{list}\""));
                }
                (false, true) => {
                    l.entries.retain(|e| e != user);
                    lines.push(format!(
                        "deleted user \"{user}\" from access list \"{list}\""
                    ));
                }
                (false, false) => {
                    lines.push(format!("user \"{user}\" is not in access list \"{list}\""));
                    failed = true;
                }
            }
        }
        // A list made by -au is written even when nobody new went into it.
        if l != before || config.access_list(list).is_none() {
            put(&editor, &mut config, l)?;
            changed = true;
        }
    }
    if changed {
        commit(cx, editor, &config)?;
    }
    for l in lines {
        o.err(l);
    }
    if failed {
        o.code = 1;
    }
    Ok(changed)
}

/// An access list from access_list(5)'s text; SGE's lines when it does not read.
fn list_from_text(text: &str, file: &str) -> Result<AccessList, Stop> {
    let read_error = |lines: Vec<String>, reading: bool| {
        let mut out: Vec<String> = lines.into_iter().map(|l| format!("error: {l}")).collect();
        if reading {
            out.push(format!("error: error reading file: \"{file}\""));
        }
        out.push("error reading in file".to_string());
        Stop(out)
    };
    let fields = attrs::read_object(text, ACCESS_LIST_ATTRS, true).map_err(|e| {
        let reading = e.lines.iter().any(|l| !l.starts_with("required attribute"));
        read_error(e.lines, reading)
    })?;
    let mut l = AccessList::new("", "ACL");
    for (name, v) in fields {
        let number = |v: &str| {
            v.trim().parse::<u32>().map_err(|_| {
                read_error(
                    vec![format!(
                        "reading conf file: error parsing unsigned long value from string \"{v}\""
                    )],
                    true,
                )
            })
        };
        match name.as_str() {
            "name" => l.name = v.trim().to_string(),
            "type" => {
                l.kind = AccessList::normalized_kind(&v).map_err(|w| {
                    read_error(
                        vec![format!(
                            "reading conf file: unknown specifier \"{w}\" for userset type"
                        )],
                        true,
                    )
                })?;
            }
            "fshare" => l.fshare = number(&v)?,
            "oticket" => l.oticket = number(&v)?,
            _ => l.entries = attrs::words(&v),
        }
    }
    Ok(l)
}

/// `-Au file`, `-Mu file`, `-mu list`.
fn whole_list(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let (text, file) = if option == "-mu" {
        let shown = qconf::access_list(
            &config
                .access_list(value)
                .unwrap_or_else(|| AccessList::new(value, "ACL")),
        );
        let text = edit_text(&shown)?;
        if text == shown {
            // SGE says so on stdout and exits 0.
            o.out("file unchanged");
            return Ok(false);
        }
        (text, "<editor>".to_string())
    } else {
        let text = read_input(value, Some("error reading in file".to_string()))?;
        (text, value.to_string())
    };
    let new = list_from_text(&text, &file)?;
    let exists = config.access_list(&new.name).is_some();
    let verb = match (option, exists) {
        ("-Au", true) => {
            return Err(Stop(vec![format!(
                "userset \"{}\" already exists",
                new.name
            )]));
        }
        // SGE 8.1.9's words for -Mu of a list that does not exist.
        ("-Mu", false) => {
            return Err(Stop(vec![format!(
                "{} is not known as a project",
                new.name
            )]));
        }
        (_, true) => "modified \"{}\" in",
        (_, false) => "added \"{}\" to",
    };
    let name = new.name.clone();
    put(&editor, &mut config, new)?;
    commit(cx, editor, &config)?;
    o.err(format!("{me} {} userset list", verb.replace("{}", &name)));
    Ok(true)
}

/// `-dul list[,list…]`: each list that exists and nothing refers to; SGE's refusals for the
/// others (exit 1).
fn delete_lists(value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let mut lines = Vec::new();
    let mut failed = false;
    let mut changed = false;
    for name in value.split(',').filter(|n| !n.is_empty()) {
        if config.access_list(name).is_none() {
            lines.push(format!("denied: userset \"{name}\" does not exist"));
            failed = true;
            continue;
        }
        let refs = config.access_list_references(name);
        if !refs.is_empty() {
            for (list, kind, object) in refs {
                lines.push(format!(
                    "denied: userset \"{name}\" is still referenced in {list} of {kind} \"{object}\""
                ));
            }
            failed = true;
            continue;
        }
        if crate::config::access_lists::builtin()
            .iter()
            .any(|b| b.name == name)
        {
            lines.push(format!(
                "denied: access list \"{name}\" is one of SGE's built-in lists and cannot be removed"
            ));
            failed = true;
            continue;
        }
        config.access_lists.retain(|l| l.name != name);
        editor.remove_item("access_lists", name)?;
        lines.push(format!("{me} removed \"{name}\" from userset list"));
        changed = true;
    }
    if changed {
        commit(cx, editor, &config)?;
    }
    for l in lines {
        o.err(l);
    }
    if failed {
        o.code = 1;
    }
    Ok(changed)
}
