//! `qconf`'s changing forms, by managers: the attribute forms (`-mattr -aattr -dattr
//! -rattr` of queues, execution hosts, host groups and parallel environments), the file and
//! editor forms of queues and parallel environments (`-Mq -Aq -mq -dq`, `-Mp -Ap -mp -dp`)
//! and the manager and operator lists (`-am -dm -ao -do`), with SGE 8.1.9's messages.
//!
//! Every change is made on `config.yaml` through [`ConfigEditor`] (only the keys that
//! change are rewritten; nothing is written unless the result parses, by `sched_d`'s own
//! rules, to exactly the configuration meant), then `sched_d` is asked to reload it (a
//! request in the spool, as every client asks it for anything).
//!
//! One file over 1,000 lines: every changing form goes through the same edit, check and
//! reload of `config.yaml`, and the forms differ only in how they name what they change.

use super::{ClientEnv, Output};
use crate::compat::qconf;
use crate::compat::qconf_attrs::{self as attrs, AttrError, Shape};
use crate::config::edit::{ConfigEditor, EditError};
use crate::config::{ClusterConfig, GLOBAL_HOST, PeConfig, QueueConfig};
use crate::model::RequestAction;

/// The options this module carries out.
pub fn handles(option: &str) -> bool {
    matches!(
        option,
        "-mattr"
            | "-purge"
            | "-ahgrp"
            | "-Ahgrp"
            | "-mhgrp"
            | "-Mhgrp"
            | "-dhgrp"
            | "-aattr"
            | "-dattr"
            | "-rattr"
            | "-Mq"
            | "-Aq"
            | "-mq"
            | "-dq"
            | "-Mp"
            | "-Ap"
            | "-mp"
            | "-dp"
            | "-am"
            | "-dm"
            | "-ao"
            | "-do"
            | "-Msconf"
            | "-msconf"
            | "-Auser"
            | "-Muser"
            | "-auser"
            | "-muser"
            | "-duser"
            | "-Aprj"
            | "-Mprj"
            | "-aprj"
            | "-mprj"
            | "-dprj"
            | "-Ae"
            | "-Me"
            | "-ae"
            | "-me"
            | "-de"
            | "-Astree"
            | "-Mstree"
            | "-astree"
            | "-mstree"
            | "-dstree"
            | "-Mc"
            | "-mc"
            | "-acal"
            | "-Acal"
            | "-mcal"
            | "-Mcal"
            | "-dcal"
    ) || super::qconf_acl::handles(option)
        || super::qconf_conf::handles(option)
        || super::qconf_rqs::handles(option)
}

/// A change that stopped the command: SGE's lines, on stderr, exit 1.
pub struct Stop(pub Vec<String>);

impl From<EditError> for Stop {
    fn from(e: EditError) -> Self {
        Stop(vec![format!("error: {e}")])
    }
}

/// Carries out `option` with its words (`value` the first, `more` the rest of an attribute
/// form's).
pub fn change(
    option: &str,
    value: &str,
    more: &[String],
    env: &ClientEnv,
    o: &mut Output,
) -> Result<(), Stop> {
    let who = env.requester();
    // Access lists are an operator's to change (SGE 8.1.9).
    if super::qconf_acl::handles(option) && !who.operator {
        return Err(Stop(vec![format!(
            "denied: \"{}\" must be operator for this operation",
            who.user
        )]));
    }
    if !who.manager && !super::qconf_acl::handles(option) {
        return Err(Stop(vec![format!(
            "denied: \"{}\" must be manager for this operation",
            who.user
        )]));
    }
    let me = format!("{}@{}", who.user, env.host);
    let cx = &Cx {
        env,
        path: env.spool.config_path(),
        reload: std::cell::Cell::new(false),
    };
    let changed = match option {
        "-mattr" | "-aattr" | "-dattr" | "-rattr" => attribute(option, value, more, &me, cx, o)?,
        "-purge" => purge(value, more, &me, cx, o)?,
        "-ahgrp" | "-Ahgrp" | "-mhgrp" | "-Mhgrp" => {
            super::qconf_hostgroup::hostgroup_file(option, value, &me, cx, o)?
        }
        "-dhgrp" => super::qconf_hostgroup::delete_hostgroup(value, &me, cx, o)?,
        "-Mq" | "-Aq" | "-mq" => queue_file(option, value, &me, cx, o)?,
        "-Mp" | "-Ap" | "-mp" => pe_file(option, value, &me, cx, o)?,
        "-dq" | "-dp" => delete(option, value, &me, cx, o)?,
        "-Msconf" | "-msconf" => sched_conf(option, value, cx, o)?,
        "-Mc" | "-mc" => complexes(option, value, &me, cx, o)?,
        "-acal" | "-Acal" | "-mcal" | "-Mcal" => {
            super::qconf_calendar::calendar_file(option, value, &me, cx, o)?
        }
        "-dcal" => super::qconf_calendar::delete_calendar(value, &me, cx, o)?,
        acl if super::qconf_acl::handles(acl) => {
            super::qconf_acl::change(option, value, more, &me, cx, o)?
        }
        "-arqs" | "-Arqs" | "-mrqs" | "-Mrqs" | "-drqs" => {
            super::qconf_rqs::change(option, value, more, &me, cx, o)?
        }
        "-Astree" | "-Mstree" | "-astree" | "-mstree" => share_tree(option, value, cx, o)?,
        "-dstree" => delete_share_tree(&me, cx, o)?,
        conf if super::qconf_conf::handles(conf) => {
            super::qconf_conf::change(option, value, &me, cx, o)?
        }
        "-duser" | "-dprj" | "-de" => delete_named(option, value, &me, cx, o)?,
        "-Auser" | "-Muser" | "-auser" | "-muser" | "-Aprj" | "-Mprj" | "-aprj" | "-mprj"
        | "-Ae" | "-Me" | "-ae" | "-me" => named_file(option, value, &me, cx, env, o)?,
        _ => manop(option, value, &me, cx, o)?,
    };
    if changed
        && cx.reload.get()
        && let Err(e) = env
            .spool
            .publish_request(who, vec![RequestAction::ReloadConfig])
    {
        // Written: sched_d takes it at its next reload.
        o.err(format!(
            "warning: sched_d was not told to reload config.yaml: {e}"
        ));
    }
    Ok(())
}

/// The lines of an [`AttrError`] as `-M*` prints them.
fn file_error(e: AttrError, file: &str, what: &str) -> Stop {
    let reading = e.lines.iter().any(|l| !l.starts_with("required attribute"));
    let mut lines: Vec<String> = e.lines.into_iter().map(|l| format!("error: {l}")).collect();
    if reading {
        lines.push(format!("error: error reading file: \"{file}\""));
    }
    lines.push(format!("{what} file \"{file}\" is not correct"));
    Stop(lines)
}

/// The text of a `-M*`/`-A*` file, or SGE's words for one that cannot be opened, followed
/// by the form's own closing line (`trailer`), if it has one.
pub(super) fn read_input(file: &str, trailer: Option<String>) -> Result<String, Stop> {
    std::fs::read_to_string(file).map_err(|e| {
        let mut lines = vec![format!(
            "error: error opening file \"{file}\" for reading: {}",
            super::qsub::strerror(&e)
        )];
        lines.extend(trailer);
        Stop(lines)
    })
}

fn read_file(file: &str, what: &str) -> Result<String, Stop> {
    read_input(file, Some(format!("{what} file \"{file}\" is not correct")))
}

/// A queue from its queue_conf(5) text; `base` gives what the text does not (nothing, as
/// every attribute is required).
fn queue_from_text(text: &str, base: QueueConfig) -> Result<QueueConfig, AttrError> {
    let mut q = base;
    // The text gives every attribute with all its per-host values.
    q.per_host.clear();
    for (name, value) in attrs::read_object(text, attrs::QUEUE_ATTRS, true)? {
        attrs::set_queue_attr(&mut q, &name, &value)?;
    }
    Ok(q)
}

fn pe_from_text(text: &str, base: PeConfig) -> Result<PeConfig, AttrError> {
    let mut p = base;
    for (name, value) in attrs::read_object(text, attrs::PE_ATTRS, true)? {
        attrs::set_pe_attr(&mut p, &name, &value)?;
    }
    Ok(p)
}

/// A new object named `name` with the configuration's defaults, for `-Aq`/`-Ap` to fill.
fn blank<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, Stop> {
    serde_json::from_value(value).map_err(|e| Stop(vec![format!("error: {e}")]))
}

/// What a change needs besides its words: the cell and whether `sched_d` is to be asked to
/// reload (after a direct write).
pub struct Cx<'a> {
    pub(super) env: &'a ClientEnv,
    pub(super) path: std::path::PathBuf,
    reload: std::cell::Cell<bool>,
}

impl Cx<'_> {
    /// The cell's `config.yaml`.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// How long `qconf` waits for `sched_d` to carry out a change it cannot write itself; the
/// request expires earlier, so that one answered late is never carried out after `qconf`
/// said it was not.
const SCHED_D_ANSWER: std::time::Duration = std::time::Duration::from_secs(15);
const REQUEST_LIFETIME_SECS: i64 = 10;

/// Writes `config` (changed in `editor`'s file): directly when the caller may write
/// `config.yaml` (root, or the administrator who owns it), else through `sched_d`, which
/// writes it for a manager (its requests say who asks) if the file has not changed since.
pub(super) fn commit(cx: &Cx, editor: ConfigEditor, config: &ClusterConfig) -> Result<(), Stop> {
    let invalid = |e: EditError| match e {
        EditError::Config(crate::config::ConfigError::Invalid { reason, .. }) => {
            Stop(vec![format!("error: {reason}")])
        }
        other => other.into(),
    };
    super::qconf_acl::check_references(config)?;
    if editor.writable() {
        editor.commit(config).map_err(invalid)?;
        cx.reload.set(true);
        return Ok(());
    }
    let (base, text) = editor.texts(config).map_err(invalid)?;
    let request = cx
        .env
        .spool
        .publish_request(
            cx.env.requester(),
            vec![RequestAction::ConfigEdit {
                base,
                text,
                expires: crate::time::now() + REQUEST_LIFETIME_SECS,
            }],
        )
        .map_err(|e| Stop(vec![format!("error: {e}")]))?;
    let deadline = std::time::Instant::now() + SCHED_D_ANSWER;
    loop {
        if let Some(reply) = cx.env.spool.read_reply(request.seq) {
            return if reply.ok {
                Ok(())
            } else {
                Err(Stop(vec![reply.message]))
            };
        }
        if std::time::Instant::now() > deadline {
            return Err(Stop(vec![format!(
                "error: sched_d did not answer within {} s: config.yaml is unchanged (only sched_d may write it for a manager who cannot)",
                SCHED_D_ANSWER.as_secs()
            )]));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `$EDITOR` (else `vi`) on `text`; the text after, or SGE's failure lines.
pub(super) fn edit_text(text: &str) -> Result<String, Stop> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "qconf-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let io = |e: std::io::Error| Stop(vec![format!("error: cannot write {}: {e}", path.display())]);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io)?;
        f.write_all(text.as_bytes()).map_err(io)?;
    }
    let editor = std::env::var("EDITOR").unwrap_or_else(|_| "vi".to_string());
    let status = std::process::Command::new(&editor).arg(&path).status();
    let result = match status {
        Err(_) => Err(Stop(vec![
            format!("error: can't start editor {editor}"),
            "error: editor exited with error 1".to_string(),
            "edit failed".to_string(),
        ])),
        Ok(s) if !s.success() => Err(Stop(vec![
            format!("error: editor exited with error {}", s.code().unwrap_or(1)),
            "edit failed".to_string(),
        ])),
        Ok(_) => std::fs::read_to_string(&path)
            .map_err(|e| Stop(vec![format!("error: cannot read {}: {e}", path.display())])),
    };
    let _ = std::fs::remove_file(&path);
    result
}

fn queue_file(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let (text, file) = if option == "-mq" {
        let Some(q) = config.queue(value) else {
            return Err(Stop(vec![format!(
                "Cluster queue entry \"{value}\" does not exist"
            )]));
        };
        let text = edit_text(&qconf::queue(q))?;
        (text, "<editor>".to_string())
    } else {
        (read_file(value, "Cluster queue")?, value.to_string())
    };
    let name = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("qname"))
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    let existing = config.queue(&name).cloned();
    let base = match (option, &existing) {
        ("-Aq", Some(_)) => {
            return Err(Stop(vec![format!(
                "cluster queue \"{name}\" already exists"
            )]));
        }
        ("-Aq", None) => blank(serde_json::json!({"name": name, "hostlist": [], "slots": 0}))?,
        (_, Some(q)) => q.clone(),
        (_, None) => {
            return Err(Stop(vec![format!(
                "denied: cluster queue \"{name}\" does not exist"
            )]));
        }
    };
    let new = queue_from_text(&text, base).map_err(|e| {
        if e.is_from_verification() {
            Stop(e.lines)
        } else {
            file_error(e, &file, "Cluster queue")
        }
    })?;
    super::qconf_calendar::known_calendar(&config, &new)?;
    for key in new.per_host.keys() {
        let attr = attrs::QUEUE_ATTRS
            .iter()
            .map(|(n, _, _)| *n)
            .find(|n| attrs::host_value_touches(&new.per_host[key], n))
            .unwrap_or("slots");
        check_host_key(&config, key, attr)?;
    }
    let replaced = editor.put_item(
        "queues",
        &mut config.queues,
        &name,
        |q| q.name.as_str(),
        new,
    )?;
    commit(cx, editor, &config)?;
    o.err(crate::compat::messages::put_in_list(
        me,
        &name,
        replaced,
        "cluster queue list",
    ));
    Ok(true)
}

fn pe_file(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let (text, file) = if option == "-mp" {
        let Some(p) = config.pe(value) else {
            return Err(Stop(vec![format!(
                "parallel environment \"{value}\" does not exist"
            )]));
        };
        (edit_text(&qconf::pe(p))?, "<editor>".to_string())
    } else {
        (read_file(value, "parallel environment")?, value.to_string())
    };
    let name = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("pe_name"))
        .map(|n| n.trim().to_string())
        .unwrap_or_default();
    let existing = config.pe(&name).cloned();
    let base = match (option, &existing) {
        ("-Ap", Some(_)) => {
            return Err(Stop(vec![format!(
                "parallel environment \"{name}\" already exists"
            )]));
        }
        ("-Ap", None) => {
            blank(serde_json::json!({"name": name, "slots": 0, "allocation_rule": "$pe_slots"}))?
        }
        (_, Some(p)) => p.clone(),
        (_, None) => {
            return Err(Stop(vec![format!(
                "denied: parallel environment \"{name}\" does not exist"
            )]));
        }
    };
    let new =
        pe_from_text(&text, base).map_err(|e| file_error(e, &file, "parallel environment"))?;
    let pes = &mut config.parallel_environments;
    let replaced = editor.put_item(
        "parallel_environments",
        pes,
        &name,
        |p| p.name.as_str(),
        new,
    )?;
    commit(cx, editor, &config)?;
    o.err(crate::compat::messages::put_in_list(
        me,
        &name,
        replaced,
        "parallel environment list",
    ));
    Ok(true)
}

/// `-Msconf file`, `-msconf`: the scheduler configuration from sched_conf(5)'s text.
fn sched_conf(option: &str, value: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let shown = qconf::sched_conf(&config);
    let (text, file) = if option == "-msconf" {
        let text = edit_text(&shown)?;
        if text == shown {
            return Err(Stop(vec!["file unchanged".to_string()]));
        }
        (text, "<editor>".to_string())
    } else {
        let text = read_input(value, Some("error reading in file".to_string()))?;
        (text, value.to_string())
    };
    let bad = |e: AttrError| {
        let mut lines: Vec<String> = e.lines.into_iter().map(|l| format!("error: {l}")).collect();
        lines.push(format!("error: error reading file: \"{file}\""));
        lines.push("error reading in file".to_string());
        Stop(lines)
    };
    let mut new = config.scheduler.clone();
    for (name, v) in attrs::read_object(&text, attrs::SCHED_ATTRS, false).map_err(bad)? {
        attrs::set_sched_attr(&mut new, &name, &v).map_err(bad)?;
    }
    let old = std::mem::replace(&mut config.scheduler, new);
    editor.set_top("scheduler", &old, &config.scheduler)?;
    commit(cx, editor, &config)?;
    o.err("changed scheduler configuration");
    Ok(true)
}

/// The objects kept as one named list each in `config.yaml`, with a `name value` text form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    User,
    Project,
    ExecHost,
}

impl Named {
    fn of(option: &str) -> Named {
        if option.ends_with("user") {
            Named::User
        } else if option.ends_with("prj") {
            Named::Project
        } else {
            Named::ExecHost
        }
    }

    /// The list's key in `config.yaml`.
    fn list(self) -> &'static str {
        match self {
            Named::User => "users",
            Named::Project => "projects",
            Named::ExecHost => "hosts",
        }
    }

    /// SGE's word for it in messages.
    fn word(self) -> &'static str {
        match self {
            Named::User => "user",
            Named::Project => "project",
            Named::ExecHost => "exechost",
        }
    }

    fn name_attr(self) -> &'static str {
        match self {
            Named::ExecHost => "hostname",
            _ => "name",
        }
    }
}

/// `-A*`/`-M*` (a file), `-a*`/`-m*` (an editor on a template or on the object) of users,
/// projects and execution hosts.
fn named_file(
    option: &str,
    value: &str,
    me: &str,
    cx: &Cx,
    env: &ClientEnv,
    o: &mut Output,
) -> Result<bool, Stop> {
    let kind = Named::of(option);
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let shown =
        |config: &ClusterConfig, name: &str| -> Option<String> {
            match kind {
                Named::User => config.users.iter().find(|u| u.name == name).map(|u| {
                    qconf::user(&u.name, u.oticket, u.fshare, u.default_project.as_deref())
                }),
                Named::Project => config
                    .projects
                    .iter()
                    .find(|p| p.name == name)
                    .map(qconf::project),
                // The global pseudo-host always exists, as in SGE.
                Named::ExecHost if name == GLOBAL_HOST => {
                    Some(qconf::exechost_conf(&config.global_host_or_blank()))
                }
                Named::ExecHost => config.host(name).map(qconf::exechost_conf),
            }
        };
    let adding = option.starts_with("-A") || option.starts_with("-a");
    let (text, file) = match option {
        "-auser" | "-aprj" => (
            edit_text(&match kind {
                Named::User => qconf::user("template", 0, 0, None),
                _ => qconf::project(&blank(serde_json::json!({"name": "template"}))?),
            })?,
            "<editor>".to_string(),
        ),
        "-ae" => {
            let template = if value.is_empty() {
                "hostname template\nload_scaling NONE\ncomplex_values NONE\nuser_lists NONE\nxuser_lists NONE\nprojects NONE\nxprojects NONE\nusage_scaling NONE\nreport_variables NONE\n".to_string()
            } else {
                shown(&config, value).ok_or_else(|| {
                    Stop(vec![format!(
                        "denied: {} \"{value}\" does not exist",
                        "exechost"
                    )])
                })?
            };
            (edit_text(&template)?, "<editor>".to_string())
        }
        "-muser" | "-mprj" | "-me" => {
            let text = shown(&config, value).ok_or_else(|| {
                Stop(vec![format!(
                    "denied: {} \"{value}\" does not exist",
                    kind.word()
                )])
            })?;
            let edited = edit_text(&text)?;
            if option == "-me" && edited == text {
                // SGE 8.1.9's words for an execution host left as it was
                // (`qconf/i26-me-global-true.txt`).
                return Err(Stop(vec!["file unchanged".to_string()]));
            }
            (edited, "<editor>".to_string())
        }
        _ => (read_input(value, None)?, value.to_string()),
    };
    let table = match kind {
        Named::User => attrs::USER_ATTRS,
        Named::Project => attrs::PROJECT_ATTRS,
        Named::ExecHost => attrs::EXECHOST_FILE_ATTRS,
    };
    let bad = |e: AttrError| {
        let mut lines: Vec<String> = e.lines.into_iter().map(|l| format!("error: {l}")).collect();
        lines.push(format!("error: error reading file: \"{file}\""));
        lines.push("invalid format".to_string());
        Stop(lines)
    };
    let lines = attrs::read_object(&text, table, false).map_err(bad)?;
    let name = lines
        .iter()
        .find(|(n, _)| n == kind.name_attr())
        .map(|(_, v)| v.trim().to_string())
        .ok_or_else(|| {
            bad(AttrError {
                lines: vec![format!(
                    "required attribute \"{}\" is missing",
                    kind.name_attr()
                )],
            })
        })?;
    let exists = shown(&config, &name).is_some();
    if adding && exists {
        return Err(Stop(vec![format!(
            "{} \"{name}\" already exists",
            kind.word()
        )]));
    }
    if !adding && !exists {
        return Err(Stop(vec![format!(
            "denied: {} \"{name}\" does not exist",
            kind.word()
        )]));
    }
    macro_rules! apply {
        ($list:expr, $blank:expr, $set:path) => {{
            let old = $list.iter().find(|x| x.name == name).cloned();
            let mut new = old.clone().unwrap_or($blank);
            for (attr, v) in &lines {
                $set(&mut new, attr, v).map_err(bad)?;
            }
            editor.put_item(kind.list(), &mut $list, &name, |x| x.name.as_str(), new)?;
        }};
    }
    match kind {
        Named::User => apply!(
            config.users,
            blank(serde_json::json!({"name": name}))?,
            attrs::set_user_attr
        ),
        Named::Project => apply!(
            config.projects,
            blank(serde_json::json!({"name": name}))?,
            attrs::set_project_attr
        ),
        Named::ExecHost => {
            // A new host: reached over ssh (locally if it is this host); the global
            // pseudo-host is never reached.
            let mut fresh: crate::config::HostConfig = blank(serde_json::json!({"name": name}))?;
            if !name.eq_ignore_ascii_case(&env.host) && name != GLOBAL_HOST {
                fresh.launch = crate::config::LaunchMethod::Ssh {
                    address: None,
                    port: None,
                    user: None,
                    options: Vec::new(),
                    max_sessions: 8,
                    ssh_client: Default::default(),
                };
            }
            let old = config.host(&name).cloned();
            let mut new = old.clone().unwrap_or(fresh);
            for (attr, v) in &lines {
                attrs::set_exechost_attr(&mut new, attr, v).map_err(bad)?;
            }
            // The text showed an older `hosts[].slots` as `slots=N` of the complex_values,
            // where it now stays.
            new.slots = None;
            check_host_slots(&new)?;
            let hosts = &mut config.hosts;
            editor.put_item(kind.list(), hosts, &name, |h| h.name.as_str(), new)?;
        }
    }
    commit(cx, editor, &config)?;
    o.err(format!(
        "{me} {} \"{name}\" {} {} list",
        if exists { "modified" } else { "added" },
        if exists { "in" } else { "to" },
        kind.word()
    ));
    Ok(true)
}

/// A host's `slots=N` is a number of slots.
fn check_host_slots(host: &crate::config::HostConfig) -> Result<(), Stop> {
    match host.complex_values.get("slots") {
        Some(v) if v.trim().parse::<u32>().is_err() => Err(Stop(vec![format!(
            "error: slots=\"{v}\" of \"{}\" is not a number",
            host.name
        )])),
        _ => Ok(()),
    }
}

/// `-duser user_list`, `-dprj project_list`, `-de host_list`.
fn delete_named(
    option: &str,
    value: &str,
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let kind = Named::of(option);
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let mut lines = Vec::new();
    for name in value.split(',').filter(|n| !n.is_empty()) {
        let there = match kind {
            Named::User => config.users.iter().any(|u| u.name == name),
            Named::Project => config.projects.iter().any(|p| p.name == name),
            Named::ExecHost => config.host(name).is_some(),
        };
        if kind == Named::ExecHost && name == GLOBAL_HOST {
            return Err(Stop(vec![format!(
                "denied: pseudo host \"{GLOBAL_HOST}\" may not be deleted"
            )]));
        }
        if !there {
            let what = if kind == Named::ExecHost {
                "execution host"
            } else {
                kind.word()
            };
            return Err(Stop(vec![format!(
                "denied: {what} \"{name}\" does not exist"
            )]));
        }
        match kind {
            Named::User => config.users.retain(|u| u.name != name),
            Named::Project => {
                if let Some(refusal) = super::qconf_acl::project_referenced(&config, name) {
                    return Err(Stop(vec![refusal]));
                }
                config.projects.retain(|p| p.name != name)
            }
            Named::ExecHost => {
                if let Some((g, _)) = config
                    .hostgroups
                    .iter()
                    .find(|(_, m)| m.iter().any(|h| h == name))
                {
                    return Err(Stop(vec![format!(
                        "denied: host \"{name}\" is still referenced in host group \"{g}\""
                    )]));
                }
                config.hosts.retain(|h| h.name != name);
            }
        }
        editor.remove_item(kind.list(), name)?;
        lines.push(format!("{me} removed \"{name}\" from {} list", kind.word()));
    }
    commit(cx, editor, &config)?;
    for l in lines {
        o.err(l);
    }
    Ok(true)
}

/// `-Astree`/`-Mstree file`, `-astree`/`-mstree`: the share tree from share_tree(5)'s text.
fn share_tree(option: &str, value: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let text = if option.starts_with("-M") || option.starts_with("-A") {
        read_input(value, None)?
    } else {
        let shown = config.share_tree.as_ref().map_or_else(
            || "id=0\nname=Root\ntype=0\nshares=1\nchildnodes=NONE\n".to_string(),
            |tree| qconf::share_tree(tree, &config.projects),
        );
        edit_text(&shown)?
    };
    let tree = attrs::share_tree_from_text(&text)
        .map_err(|e| Stop(e.lines.into_iter().map(|l| format!("error: {l}")).collect()))?;
    let old = config.share_tree.replace(tree);
    editor.set_top("share_tree", &old, &config.share_tree)?;
    commit(cx, editor, &config)?;
    o.err("changed sharetree");
    Ok(true)
}

/// `-dstree`: no share tree (SGE's messages; the share-tree policy then hands out no
/// share tickets).
fn delete_share_tree(me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let Some(old) = config.share_tree.take() else {
        return Err(Stop(vec!["sharetree does not exist".to_string()]));
    };
    editor.set_top("share_tree", &Some(old), &config.share_tree)?;
    commit(cx, editor, &config)?;
    o.err(format!("{me} removed sharetree list"));
    Ok(true)
}

/// `-Mc file`, `-mc`: the complex table. What differs from SGE's built-in table is kept in
/// `complexes` (additions and overrides); SGE's built-in complexes cannot be removed.
fn complexes(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let shown = qconf::complexes(&config);
    let text = if option == "-mc" {
        edit_text(&shown)?
    } else {
        read_input(value, None)?
    };
    let table = attrs::complexes_from_text(&text)
        .map_err(|e| Stop(e.lines.into_iter().map(|l| format!("error: {l}")).collect()))?;
    let now = config.complexes();
    let builtin = crate::config::builtin_complexes();
    if let Some(b) = builtin
        .iter()
        .find(|b| !table.iter().any(|c| c.name == b.name))
    {
        return Err(Stop(vec![format!(
            "denied: complex attribute \"{}\" is one of SGE's built-in complexes and cannot be removed",
            b.name
        )]));
    }
    let mut lines = Vec::new();
    for c in &table {
        match now.iter().find(|n| n.name == c.name) {
            Some(n) if n == c => {}
            found => lines.push(crate::compat::messages::put_in_list(
                me,
                &c.name,
                found.is_some(),
                "complex entry list",
            )),
        }
    }
    for n in &now {
        if !table.iter().any(|c| c.name == n.name) {
            lines.push(format!(
                "{me} removed \"{}\" from complex entry list",
                n.name
            ));
        }
    }
    if lines.is_empty() {
        o.err("Complex attribute configuration has not been changed");
        return Ok(false);
    }
    let old = config.complexes.clone();
    config.complexes = table.into_iter().filter(|c| !builtin.contains(c)).collect();
    editor.set_top("complexes", &old, &config.complexes)?;
    commit(cx, editor, &config)?;
    for l in lines {
        o.err(l);
    }
    Ok(true)
}

/// `-dq wc_queue_list`, `-dp pe`.
fn delete(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let (list, what, names): (&str, &str, Vec<&str>) = if option == "-dq" {
        (
            "queues",
            "cluster queue",
            value.split(',').filter(|n| !n.is_empty()).collect(),
        )
    } else {
        ("parallel_environments", "parallel environment", vec![value])
    };
    let mut lines = Vec::new();
    for name in names {
        let there = if option == "-dq" {
            config.queue(name).is_some()
        } else {
            config.pe(name).is_some()
        };
        if !there {
            return Err(Stop(vec![format!(
                "denied: {what} \"{name}\" does not exist"
            )]));
        }
        if option == "-dq" {
            config.queues.retain(|q| q.name != name);
        } else {
            config.parallel_environments.retain(|p| p.name != name);
        }
        editor.remove_item(list, name)?;
        lines.push(format!("{me} removed \"{name}\" from {what} list"));
    }
    commit(cx, editor, &config)?;
    for l in lines {
        o.err(l);
    }
    Ok(true)
}

/// `-am/-dm/-ao/-do user_list`.
fn manop(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let (key, what) = if option.ends_with('m') {
        ("managers", "manager")
    } else {
        ("operators", "operator")
    };
    let add = option.starts_with("-a");
    let old = if option.ends_with('m') {
        config.managers.clone()
    } else {
        config.operators.clone()
    };
    let list = if option.ends_with('m') {
        &mut config.managers
    } else {
        &mut config.operators
    };
    let mut lines = Vec::new();
    for user in value.split(',').filter(|u| !u.is_empty()) {
        let there = list.iter().any(|u| u == user) || (what == "manager" && user == "root");
        match (add, there) {
            (true, true) => return Err(Stop(vec![format!("{what} \"{user}\" already exists")])),
            (false, false) => {
                return Err(Stop(vec![format!(
                    "denied: {what} \"{user}\" does not exist"
                )]));
            }
            (true, false) => {
                list.push(user.to_string());
                lines.push(format!("{me} added \"{user}\" to {what} list"));
            }
            (false, true) => {
                list.retain(|u| u != user);
                lines.push(format!("{me} removed \"{user}\" from {what} list"));
            }
        }
    }
    let new = list.clone();
    editor.set_top(key, &old, &new)?;
    commit(cx, editor, &config)?;
    for l in lines {
        o.err(l);
    }
    Ok(true)
}

/// The current text of an attribute, as the object's show form prints it.
fn shown(rows: &str, attr: &str) -> String {
    rows.lines()
        .find_map(|l| {
            let (n, v) = l.split_once(' ')?;
            (n == attr).then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "NONE".to_string())
}

/// The text of `attr` after `option` with `value`, from `current`; the notes SGE prints
/// on the way (stdout) for `obj`.
fn new_text(
    option: &str,
    shape: Shape,
    attr: &str,
    current: &str,
    value: &str,
    obj: &str,
    notes: &mut Vec<String>,
) -> Result<String, AttrError> {
    let join_words = qconf::words_or_none;
    let join_pairs = qconf::pairs_or_none;
    Ok(match (option, shape) {
        ("-rattr", _) | (_, Shape::Scalar) => value.to_string(),
        ("-mattr", Shape::Words) => value.to_string(),
        ("-mattr", Shape::Pairs) => {
            let mut now = attrs::pairs(current)?;
            if now.is_empty() {
                notes.push(format!(
                    "\"{attr}\" of \"{obj}\" is empty - Adding new element(s)."
                ));
            }
            now.extend(attrs::pairs(value)?);
            join_pairs(&now)
        }
        ("-aattr", Shape::Words) => {
            let mut now = attrs::words(current);
            for w in attrs::words(value) {
                if now.contains(&w) {
                    notes.push(format!(
                        "No modification because \"{w}\" already exists in \"{attr}\" of \"{obj}\""
                    ));
                } else {
                    now.push(w);
                }
            }
            join_words(&now)
        }
        ("-aattr", Shape::Pairs) => {
            let mut now = attrs::pairs(current)?;
            for (k, v) in attrs::pairs(value)? {
                match now.entry(k) {
                    std::collections::btree_map::Entry::Occupied(e) => notes.push(format!(
                        "No modification because \"{}\" already exists in \"{attr}\" of \"{obj}\"",
                        e.key()
                    )),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(v);
                    }
                }
            }
            join_pairs(&now)
        }
        (_, Shape::Words) => {
            let mut now = attrs::words(current);
            for w in attrs::words(value) {
                if now.contains(&w) {
                    now.retain(|x| *x != w);
                } else {
                    notes.push(format!("\"{w}\" does not exist in \"{attr}\" of \"{obj}\""));
                }
            }
            join_words(&now)
        }
        (_, Shape::Pairs) => {
            let mut now = attrs::pairs(current)?;
            for w in attrs::words(value) {
                let k = w.split_once('=').map_or(w.as_str(), |(k, _)| k).to_string();
                if now.remove(&k).is_none() {
                    notes.push(format!("\"{k}\" does not exist in \"{attr}\" of \"{obj}\""));
                }
            }
            join_pairs(&now)
        }
    })
}

/// A host or `@group` that per-host values of `attr` may be given for: SGE's words for a
/// group that does not exist; a host must be an execution host (SGE takes any name).
fn check_host_key(config: &ClusterConfig, key: &str, attr: &str) -> Result<(), Stop> {
    if key.starts_with('@') {
        if !config.hostgroups.contains_key(key) {
            return Err(Stop(vec![format!(
                "Did not modify \"{attr}\" for host group \"{key}\" which does not exist."
            )]));
        }
    } else if config.host(key).is_none() {
        return Err(Stop(vec![format!(
            "Did not modify \"{attr}\" for host \"{key}\" which is not an execution host."
        )]));
    }
    Ok(())
}

/// `-mattr|-aattr|-dattr|-rattr queue attr_nm val queue@host` (or `queue@@group`): the
/// value of one host or host group, changed from its own (`NONE` when it has none, as SGE
/// starts a list it adds to).
#[allow(clippy::too_many_arguments)]
fn host_value(
    option: &str,
    shape: Shape,
    attr: &str,
    value: &str,
    queue: &str,
    key: &str,
    config: &mut ClusterConfig,
    notes: &mut Vec<String>,
) -> Result<(QueueConfig, QueueConfig), Stop> {
    let bad = |e: AttrError| Stop(e.lines);
    if attr == "qname" {
        return Err(Stop(vec!["qconf: cannot change qname".into()]));
    }
    let Some(old) = config.queue(queue).cloned() else {
        return Err(Stop(vec![format!(
            "denied: cluster queue \"{queue}\" does not exist"
        )]));
    };
    let mut new = old.clone();
    if attr == "hostlist" {
        // Not a per-host attribute: the queue's own.
        let current = qconf::words_or_none(&old.hostlist);
        let text = new_text(option, shape, attr, &current, value, queue, notes).map_err(bad)?;
        attrs::set_queue_attr(&mut new, attr, &text).map_err(bad)?;
    } else {
        check_host_key(config, key, attr)?;
        let current = match old.per_host.get(key) {
            Some(over) if attrs::host_value_touches(over, attr) => {
                let inst = crate::config::per_host::apply(&old, &[over])
                    .map_err(|e| Stop(vec![format!("error: {e}")]))?;
                shown(&qconf::queue(&inst), attr)
            }
            _ => "NONE".to_string(),
        };
        let text = new_text(option, shape, attr, &current, value, queue, notes).map_err(bad)?;
        attrs::set_host_value(&mut new, key, attr, &text).map_err(bad)?;
    }
    if let Some(q) = config.queues.iter_mut().find(|q| q.name == queue) {
        *q = new.clone();
    }
    Ok((old, new))
}

/// `-purge queue attr_nm queue@host` (or `queue@@group`, and `*` for every attribute): the
/// value of one host or host group removed, the queue's own applying there again.
fn purge(value: &str, more: &[String], me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let [attr, id, ..] = more else {
        return Err(Stop(vec!["error: missing arguments".into()]));
    };
    if value != "queue" {
        return Err(Stop(vec![format!(
            "Modification of object \"{value}\" not supported"
        )]));
    }
    let Some((queue, key)) = id.split_once('@') else {
        return Err(Stop(vec![format!(
            "error: Given object_instance \"{id}\" is incomplete"
        )]));
    };
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let Some(old) = config.queue(queue).cloned() else {
        return Err(Stop(vec![format!(
            "denied: cluster queue \"{queue}\" does not exist"
        )]));
    };
    let mut new = old.clone();
    let removed = if attr == "*" {
        new.per_host.remove(key).is_some()
    } else if attrs::shape(attrs::QUEUE_ATTRS, attr).is_none() {
        false
    } else {
        attrs::remove_host_value(&mut new, key, attr)
    };
    if !removed {
        // SGE says so and exits 0.
        o.err(format!(
            "Attribute name (\"{attr}\") and/or value (\"{key}\") not found"
        ));
        return Ok(false);
    }
    if let Some(q) = config.queues.iter_mut().find(|q| q.name == queue) {
        *q = new.clone();
    }
    editor.update_item("queues", queue, &old, &new)?;
    commit(cx, editor, &config)?;
    o.out(format!("{me} modified \"{queue}\" in cluster queue list"));
    Ok(true)
}

/// `-mattr|-aattr|-dattr|-rattr obj_nm attr_nm val obj_id_list`.
fn attribute(
    option: &str,
    object: &str,
    more: &[String],
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let [attr, value, ids @ ..] = more else {
        return Err(Stop(vec!["error: missing arguments".into()]));
    };
    let table = match object {
        "queue" => attrs::QUEUE_ATTRS,
        "exechost" => attrs::EXECHOST_ATTRS,
        "pe" => attrs::PE_ATTRS,
        "hostgroup" => &[("hostlist", Shape::Words, None)][..],
        _ => {
            return Err(Stop(vec![format!(
                "Modification of object \"{object}\" not supported"
            )]));
        }
    };
    let Some(shape) = attrs::shape(table, attr) else {
        return Err(Stop(vec![format!(
            "The attribute name (\"{attr}\") and/or value (\"{value}\") is invalid"
        )]));
    };
    let mut changed = false;
    for id in ids {
        let editor = ConfigEditor::open(&cx.path)?;
        let mut config = editor.config.clone();
        let mut notes = Vec::new();
        let bad = |e: AttrError| Stop(e.lines);
        let message = match object {
            "queue" => {
                if let Some((q, key)) = id.split_once('@') {
                    let (old, new) =
                        host_value(option, shape, attr, value, q, key, &mut config, &mut notes)?;
                    editor.update_item("queues", q, &old, &new)?;
                    commit(cx, editor, &config)?;
                    for n in notes {
                        o.out(n);
                    }
                    o.out(format!("{me} modified \"{q}\" in cluster queue list"));
                    changed = true;
                    continue;
                }
                let Some(old) = config.queue(id).cloned() else {
                    return Err(Stop(vec![format!(
                        "denied: cluster queue \"{id}\" does not exist"
                    )]));
                };
                // The queue's own value (its per-host ones stay).
                let plain = crate::config::per_host::apply(&old, &[])
                    .map_err(|e| Stop(vec![format!("error: {e}")]))?;
                let current = shown(&qconf::queue(&plain), attr);
                if option == "-mattr" && super::qconf_acl::is_fence_attr(attr) {
                    if value.eq_ignore_ascii_case("NONE") {
                        return Err(Stop(vec![super::qconf_acl::MATTR_NONE.to_string()]));
                    }
                    if current.eq_ignore_ascii_case("NONE") {
                        notes.push(format!(
                            "\"{attr}\" of \"{id}\" is empty - Adding new element(s)."
                        ));
                    }
                }
                let text =
                    new_text(option, shape, attr, &current, value, id, &mut notes).map_err(bad)?;
                let mut new = old.clone();
                attrs::set_queue_attr(&mut new, attr, &text).map_err(bad)?;
                super::qconf_calendar::known_calendar(&config, &new)?;
                if let Some(q) = config.queues.iter_mut().find(|q| q.name == *id) {
                    *q = new.clone();
                }
                editor.update_item("queues", id, &old, &new)?;
                format!("{me} modified \"{id}\" in cluster queue list")
            }
            "pe" => {
                let Some(old) = config.pe(id).cloned() else {
                    return Err(Stop(vec![format!(
                        "denied: parallel environment \"{id}\" does not exist"
                    )]));
                };
                let current = shown(&qconf::pe(&old), attr);
                let text =
                    new_text(option, shape, attr, &current, value, id, &mut notes).map_err(bad)?;
                let mut new = old.clone();
                attrs::set_pe_attr(&mut new, attr, &text).map_err(bad)?;
                if let Some(p) = config
                    .parallel_environments
                    .iter_mut()
                    .find(|p| p.name == *id)
                {
                    *p = new.clone();
                }
                editor.update_item("parallel_environments", id, &old, &new)?;
                format!("{me} modified \"{id}\" in parallel environment list")
            }
            "exechost" => {
                // The global pseudo-host always exists (as SGE has it in a fresh cell until
                // it is first changed).
                let old = match config.host(id) {
                    Some(h) => h.clone(),
                    None if id == GLOBAL_HOST => config.global_host_or_blank(),
                    None => return Err(Stop(vec![format!("can't resolve hostname \"{id}\"")])),
                };
                let current = if attr == "complex_values" {
                    qconf::pairs_or_none(&ClusterConfig::shown_complex_values(&old))
                } else {
                    shown(&qconf::exechost_conf(&old), attr)
                };
                if option == "-mattr"
                    && super::qconf_acl::is_fence_attr(attr)
                    && current.eq_ignore_ascii_case("NONE")
                {
                    // SGE 8.1.9 refuses -mattr of an empty list of an execution host.
                    return Err(Stop(vec![super::qconf_acl::MATTR_NONE.to_string()]));
                }
                let text = new_text(option, shape, attr, &current, value, "exechost", &mut notes)
                    .map_err(bad)?;
                let mut new = old.clone();
                if attr == "complex_values" {
                    new.complex_values = attrs::pairs(&text).map_err(bad)?;
                    new.slots = None;
                    check_host_slots(&new)?;
                } else if super::qconf_acl::is_fence_attr(attr) {
                    attrs::set_exechost_attr(&mut new, attr, &text).map_err(bad)?;
                } else if !text.eq_ignore_ascii_case("NONE") {
                    return Err(Stop(vec![format!(
                        "gridspool has no {attr} of execution hosts: its only value is NONE"
                    )]));
                }
                if !notes.is_empty()
                    && serde_json::to_value(&old).ok() == serde_json::to_value(&new).ok()
                {
                    // Nothing changes: SGE says only why (`-aattr` of what is there).
                    for n in notes {
                        o.out(n);
                    }
                    continue;
                }
                // The global host's entry is made by its first change.
                editor.put_item("hosts", &mut config.hosts, id, |h| h.name.as_str(), new)?;
                format!("{me} modified \"{id}\" in exechost list")
            }
            _ => {
                let Some(old) = config.hostgroups.get(id.as_str()).cloned() else {
                    return Err(Stop(vec![format!(
                        "denied: host group \"{id}\" does not exist"
                    )]));
                };
                let current = qconf::words_or_none(&old);
                let text =
                    new_text(option, shape, attr, &current, value, id, &mut notes).map_err(bad)?;
                let members = attrs::words(&text);
                for m in &members {
                    if !m.starts_with('@') && config.host(m).is_none() {
                        return Err(Stop(vec![format!("unable to resolve host \"{m}\"")]));
                    }
                }
                let old_groups = config.hostgroups.clone();
                config.hostgroups.insert(id.clone(), members);
                editor.set_top("hostgroups", &old_groups, &config.hostgroups)?;
                format!("{me} modified \"{id}\" in host group list")
            }
        };
        commit(cx, editor, &config)?;
        for n in notes {
            o.out(n);
        }
        o.out(message);
        changed = true;
    }
    Ok(changed)
}
