//! `qconf`'s configuration forms (sge_conf(5)): `-sconf` and `-sconfl` show, `-Mconf`,
//! `-mconf`, `-Aconf`, `-aconf` and `-dconf` change the global configuration (the top-level
//! keys of `config.yaml` that sge_conf(5) names) and hosts' local ones (`hosts[]`' own
//! `reschedule_unknown`, the one local setting gridspool has), with SGE 8.1.9's messages.
//!
//! As in SGE, the file forms take the configuration's name from the file's: a file named
//! `global` holds the global configuration, one named after a host that host's.

use super::qconf_change::{Cx, Stop, commit, edit_text, read_input};
use super::{ClientEnv, Output};
use crate::compat::qconf;
use crate::compat::qconf_attrs::AttrError;
use crate::compat::sge_conf;
use crate::config::edit::ConfigEditor;
use crate::config::{ClusterConfig, GLOBAL_HOST};

/// The options this module carries out.
pub fn handles(option: &str) -> bool {
    matches!(option, "-Mconf" | "-mconf" | "-Aconf" | "-aconf" | "-dconf")
}

/// The execution spool `-sconf` shows as `execd_spool_dir`: `execd` in the cell.
fn exec_spool_dir(env: &ClientEnv) -> String {
    env.spool.root().join("execd").display().to_string()
}

/// A host that may have a local configuration: a configured execution host.
fn exec_host<'a>(config: &'a ClusterConfig, name: &str) -> Option<&'a crate::config::HostConfig> {
    config.host(name).filter(|h| h.name != GLOBAL_HOST)
}

/// The configuration as `config.yaml` says now (an earlier option of the same command may
/// have changed it).
fn current(cx: &Cx) -> Result<ClusterConfig, Stop> {
    Ok(ConfigEditor::open(cx.path())?.config.clone())
}

/// `-sconf [host_list|global]`, `-sconfl`.
pub fn show(option: &str, value: &str, env: &ClientEnv, o: &mut Output) -> Result<(), String> {
    let config = &env.config;
    if option == "-sconfl" {
        let mut names: Vec<&str> = config
            .hosts
            .iter()
            .filter(|h| h.name != GLOBAL_HOST && sge_conf::host_conf(h).is_some())
            .map(|h| h.name.as_str())
            .collect();
        if names.is_empty() {
            return Err("no config defined".to_string());
        }
        names.sort_unstable();
        for n in names {
            o.out(n);
        }
        return Ok(());
    }
    for (i, name) in value.split(',').enumerate() {
        // SGE separates the configurations by a blank line, written before it looks for
        // the next one.
        if i > 0 {
            o.stdout.push('\n');
        }
        match name {
            "" | "global" => o
                .stdout
                .push_str(&qconf::global_conf(config, &exec_spool_dir(env))),
            host => match exec_host(config, host).and_then(sge_conf::host_conf) {
                Some(text) => o.stdout.push_str(&text),
                None => return Err(format!("configuration {host} not defined")),
            },
        }
    }
    Ok(())
}

/// The lines of a refused configuration text.
fn refused(e: AttrError) -> Stop {
    Stop(e.lines.into_iter().map(|l| format!("error: {l}")).collect())
}

/// SGE's words for a configuration name that is no host.
fn unresolvable(word: &str) -> String {
    format!("can't resolve hostname \"{word}\": can't resolve host name")
}

/// Carries out `option` with its word (a file list, a host list, or nothing for `-mconf`).
pub fn change(option: &str, value: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let mut changed = false;
    let words: Vec<&str> = match (option, value) {
        ("-mconf", "") => vec!["global"],
        _ => value.split(',').filter(|w| !w.is_empty()).collect(),
    };
    for word in words {
        changed |= match option {
            "-Mconf" | "-Aconf" => from_file(option, word, me, cx, o)?,
            "-mconf" | "-aconf" => from_editor(option, word, me, cx, o)?,
            _ => delete(word, me, cx, o)?,
        };
    }
    Ok(changed)
}

/// Writes the global configuration of `new` over `editor`'s file (the keys sge_conf(5)
/// names).
fn write_global(
    cx: &Cx,
    editor: ConfigEditor,
    old: &ClusterConfig,
    new: &ClusterConfig,
) -> Result<(), Stop> {
    macro_rules! top {
        ($($key:ident),*) => {
            $( editor.set_top(stringify!($key), &old.$key, &new.$key)?; )*
        };
    }
    top!(
        mailer,
        prolog,
        epilog,
        min_uid,
        min_gid,
        cluster_access,
        load_report_time,
        max_unheard,
        reschedule_unknown,
        enable_reschedule_kill,
        enable_reschedule_slave
    );
    commit(cx, editor, new)
}

/// Sets the local configuration of host `name` from `text`; `exists`: it had one.
fn write_host(cx: &Cx, name: &str, text: &str) -> Result<(), Stop> {
    let editor = ConfigEditor::open(cx.path())?;
    let mut config = editor.config.clone();
    let Some(old) = exec_host(&config, name).cloned() else {
        return Err(Stop(vec![unresolvable(name)]));
    };
    let mut new = old.clone();
    sge_conf::host_from_text(&mut new, text).map_err(refused)?;
    if let Some(h) = config.hosts.iter_mut().find(|h| h.name == name) {
        *h = new.clone();
    }
    editor.update_item("hosts", name, &old, &new)?;
    commit(cx, editor, &config)
}

/// Sets the global configuration from `text`.
fn set_global(cx: &Cx, text: &str) -> Result<(), Stop> {
    let editor = ConfigEditor::open(cx.path())?;
    let old = editor.config.clone();
    let mut new = old.clone();
    sge_conf::global_from_text(&mut new, text, &exec_spool_dir(cx.env)).map_err(refused)?;
    write_global(cx, editor, &old, &new)
}

/// `-Mconf file`, `-Aconf file`: the configuration the file is named after.
fn from_file(option: &str, file: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let name = std::path::Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let config = &current(cx)?;
    let adding = option == "-Aconf";
    if name == "global" {
        if adding {
            return Err(Stop(vec!["configuration global already exists".into()]));
        }
        let text = read_input(file, None)?;
        set_global(cx, &text)?;
        o.err(format!("{me} modified \"global\" in configuration list"));
        return Ok(true);
    }
    let Some(host) = exec_host(config, &name) else {
        let mut lines = vec![unresolvable(file)];
        if !adding {
            lines.push(format!("configuration {name} does not exist"));
        }
        return Err(Stop(lines));
    };
    let exists = sge_conf::host_conf(host).is_some();
    match (adding, exists) {
        (true, true) => Err(Stop(vec![format!("configuration {name} already exists")])),
        (false, false) => Err(Stop(vec![format!("configuration {name} does not exist")])),
        _ => {
            let text = read_input(file, None)?;
            write_host(cx, &name, &text)?;
            o.err(crate::compat::messages::put_in_list(
                me,
                &name,
                !adding,
                "configuration list",
            ));
            Ok(true)
        }
    }
}

/// `-mconf [host|global]`, `-aconf host`: the configuration in `$EDITOR`.
fn from_editor(option: &str, name: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let config = &current(cx)?;
    let unchanged = || Stop(vec!["configuration unchanged".into()]);
    if name == "global" {
        if option == "-aconf" {
            return Err(Stop(vec!["configuration global already exists".into()]));
        }
        // The text -sconf shows, without its `#global:` line.
        let shown = qconf::global_conf(config, &exec_spool_dir(cx.env));
        let template = shown.split_once('\n').map_or("", |(_, rest)| rest);
        let text = edit_text(template)?;
        if text == template {
            return Err(unchanged());
        }
        set_global(cx, &text)?;
        o.err(format!("{me} modified \"global\" in configuration list"));
        return Ok(true);
    }
    let Some(host) = exec_host(config, name) else {
        return Err(Stop(vec![unresolvable(name)]));
    };
    let shown = sge_conf::host_conf(host);
    if option == "-aconf" && shown.is_some() {
        return Err(Stop(vec![format!("configuration {name} already exists")]));
    }
    // A host's configuration without its `#host:` line; an empty one for a host that has
    // none (as SGE's -mconf of such a host adds one).
    let template = shown
        .as_deref()
        .and_then(|s| s.split_once('\n'))
        .map_or_else(|| "\n".to_string(), |(_, rest)| rest.to_string());
    let text = edit_text(&template)?;
    if text == template {
        return Err(unchanged());
    }
    write_host(cx, name, &text)?;
    o.err(if shown.is_some() {
        format!("{me} modified \"{name}\" in configuration list")
    } else {
        format!("{me} added \"{name}\" to configuration list")
    });
    Ok(true)
}

/// `-dconf host`: the host's local configuration removed (SGE says so also of a host that
/// has none); the global one cannot be.
fn delete(name: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    if name == "global" {
        // SGE says so and goes on, exit 0.
        o.err("can't delete configuration \"global\" from list");
        return Ok(false);
    }
    let Some(host) = exec_host(&current(cx)?, name).cloned() else {
        return Err(Stop(vec![unresolvable(name)]));
    };
    let had = host.reschedule_unknown.is_some();
    if had {
        write_host(cx, name, "")?;
    }
    o.err(format!("{me} removed \"{name}\" from configuration list"));
    Ok(had)
}
