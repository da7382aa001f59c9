//! `qconf`'s resource quota set forms (`-arqs -Arqs -mrqs -Mrqs -drqs`), with SGE 8.1.9's
//! messages: the sets are read in `sge_resource_quota(5)`'s text, checked against the cell's
//! complexes, and written to `config.yaml`'s `resource_quotas` through the same editor,
//! check and reload as every other change ([`super::qconf_change`]).

use super::Output;
use super::qconf_change::{Cx, Stop, commit, edit_text};
use crate::config::ClusterConfig;
use crate::config::edit::ConfigEditor;
use crate::config::resource_quotas::{self as rq, ResourceQuotaSet};

/// The options of this module.
pub fn handles(option: &str) -> bool {
    matches!(option, "-arqs" | "-Arqs" | "-mrqs" | "-Mrqs" | "-drqs")
}

const LIST: &str = "resource quota set list";

/// A `-Arqs`/`-Mrqs` file's text; SGE names a file it cannot open without `error:`.
fn read_input(file: &str) -> Result<String, Stop> {
    std::fs::read_to_string(file).map_err(|e| {
        Stop(vec![format!(
            "error opening file \"{file}\" for reading: {}",
            super::qsub::strerror(&e)
        )])
    })
}

/// Carries out one form; `value` is its first word (a file or a name list, maybe empty),
/// `more` the rest (`-Mrqs`'s names).
pub fn change(
    option: &str,
    value: &str,
    more: &[String],
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(cx.path())?;
    let mut config = editor.config.clone();
    let old = config.resource_quotas.clone();
    let result = match option {
        "-Arqs" => {
            let text = read_input(value)?;
            add(&parse(&text, &config, false)?, me, &mut config, o)
        }
        "-arqs" => {
            let name = if value.is_empty() { "template" } else { value };
            let shown = rq::set_text(&rq::template(name));
            let text = edit_text(&shown)?;
            if text == shown {
                return Err(Stop(vec!["file unchanged".to_string()]));
            }
            let sets = parse(&text, &config, true)?;
            if let Some(s) = sets
                .iter()
                .find(|s| s.name.eq_ignore_ascii_case("template"))
            {
                return Err(Stop(vec![format!(
                    "Keyword (\"{}\") not allowed as objectname",
                    s.name.to_ascii_uppercase()
                )]));
            }
            add(&sets, me, &mut config, o)
        }
        "-Mrqs" => {
            let text = read_input(value)?;
            let names: Vec<&str> = more
                .iter()
                .flat_map(|m| m.split(','))
                .filter(|n| !n.is_empty())
                .collect();
            modify(&text, value, &names, me, &mut config, o)
        }
        "-mrqs" => {
            let names: Vec<&str> = value.split(',').filter(|n| !n.is_empty()).collect();
            let shown: String = config
                .resource_quotas
                .iter()
                .filter(|s| names.is_empty() || names.contains(&s.name.as_str()))
                .map(rq::set_text)
                .collect();
            let text = edit_text(&shown)?;
            if text == shown {
                return Err(Stop(vec!["file unchanged".to_string()]));
            }
            modify(&text, "<editor>", &names, me, &mut config, o)
        }
        _ => delete(value, me, &mut config, o),
    };
    // What was done before a refusal (`-drqs a,nosuch` removes a) is written all the same.
    if config.resource_quotas != old {
        editor.set_top("resource_quotas", &old, &config.resource_quotas)?;
        commit(cx, editor, &config)?;
    }
    result.map(|()| true)
}

/// The sets of `text`, checked; an editor's text that does not read adds SGE's last line.
fn parse(text: &str, config: &ClusterConfig, edited: bool) -> Result<Vec<ResourceQuotaSet>, Stop> {
    let complexes = config.complexes();
    let sets = rq::parse_text(text).and_then(|sets| {
        for s in &sets {
            rq::check(s, &complexes)?;
        }
        Ok(sets)
    });
    sets.map_err(|e| {
        let mut lines = vec![e.0];
        if edited {
            lines.push("error reading in file".to_string());
        }
        Stop(lines)
    })
}

fn add(
    sets: &[ResourceQuotaSet],
    me: &str,
    config: &mut ClusterConfig,
    o: &mut Output,
) -> Result<(), Stop> {
    for s in sets {
        if config.resource_quotas.iter().any(|r| r.name == s.name) {
            return Err(Stop(vec![format!(
                "resource quota set \"{}\" already exists",
                s.name
            )]));
        }
    }
    config.resource_quotas.extend(sets.iter().cloned());
    // SGE 8.1.9 names only the first set of a file that adds several.
    if let Some(s) = sets.first() {
        o.out(format!("{me} added \"{}\" to {LIST}", s.name));
    }
    Ok(())
}

/// `-Mrqs`/`-mrqs`: the sets named are replaced by those of the text; without names, the
/// text replaces every set (SGE removes them all, then adds the text's).
fn modify(
    text: &str,
    file: &str,
    names: &[&str],
    me: &str,
    config: &mut ClusterConfig,
    o: &mut Output,
) -> Result<(), Stop> {
    let sets = parse(text, config, file == "<editor>")?;
    if names.is_empty() {
        for s in &config.resource_quotas {
            o.err(format!("{me} removed \"{}\" from {LIST}", s.name));
        }
        for s in &sets {
            o.err(format!("{me} added \"{}\" to {LIST}", s.name));
        }
        config.resource_quotas = sets;
        return Ok(());
    }
    for name in names {
        let Some(new) = sets.iter().find(|s| s.name == *name) else {
            return Err(Stop(vec![format!(
                "resource quota set \"{name}\" not found in file \"{file}\""
            )]));
        };
        let Some(pos) = config.resource_quotas.iter().position(|s| s.name == *name) else {
            return Err(Stop(vec![format!(
                "denied: resource quota set \"{name}\" does not exist"
            )]));
        };
        config.resource_quotas[pos] = new.clone();
        o.err(format!("{me} modified \"{name}\" in {LIST}"));
    }
    Ok(())
}

fn delete(value: &str, me: &str, config: &mut ClusterConfig, o: &mut Output) -> Result<(), Stop> {
    for name in value.split(',').filter(|n| !n.is_empty()) {
        let before = config.resource_quotas.len();
        config.resource_quotas.retain(|s| s.name != name);
        if config.resource_quotas.len() == before {
            return Err(Stop(vec![format!(
                "denied: resource quota set \"{name}\" does not exist"
            )]));
        }
        o.err(format!("{me} removed \"{name}\" from {LIST}"));
    }
    Ok(())
}
