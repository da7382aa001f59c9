//! `qconf`'s calendar forms (calendar_conf(5)): `-acal` and `-mcal` ($EDITOR on the template
//! or the calendar), `-Acal` and `-Mcal` (a file), `-dcal`, with SGE 8.1.9's messages; and
//! the check that a queue's `calendar` names one. Each goes through the same edit, check and
//! reload of `config.yaml` as every other change ([`super::qconf_change`]).

use super::Output;
use super::qconf_change::{Cx, Stop, commit, edit_text, read_input};
use crate::compat::qconf;
use crate::compat::qconf_attrs::{self as attrs, AttrError, Shape};
use crate::config::edit::ConfigEditor;
use crate::config::{Calendar, CalendarConfig, ClusterConfig, QueueConfig};

/// calendar_conf(5)'s attributes, in its order.
const CALENDAR_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("calendar_name", Shape::Scalar, None),
    ("year", Shape::Scalar, None),
    ("week", Shape::Scalar, None),
];

/// A queue may name only a calendar there is (SGE's `MSG_CQUEUE_UNKNOWNCALENDAR_S`).
pub(super) fn known_calendar(config: &ClusterConfig, q: &QueueConfig) -> Result<(), Stop> {
    match &q.calendar {
        Some(c) if config.calendar(c).is_none() => {
            Err(Stop(vec![format!("Calendar \"{c}\" does not exist")]))
        }
        _ => Ok(()),
    }
}

/// `-acal NAME`, `-mcal NAME`, `-Acal FILE`, `-Mcal FILE`.
pub(super) fn calendar_file(
    option: &str,
    value: &str,
    me: &str,
    cx: &Cx,
    o: &mut Output,
) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    let adding = matches!(option, "-acal" | "-Acal");
    let (text, file) = match option {
        "-acal" | "-mcal" => {
            let shown = if option == "-acal" {
                qconf::calendar(&CalendarConfig {
                    name: value.to_string(),
                    year: "NONE".into(),
                    week: "NONE".into(),
                })
            } else {
                let c = config
                    .calendar(value)
                    .ok_or_else(|| Stop(vec![format!("{value} is not a calendar")]))?;
                qconf::calendar(c)
            };
            let text = edit_text(&shown)?;
            if text == shown {
                return Err(Stop(vec!["file unchanged".to_string()]));
            }
            (text, "<editor>".to_string())
        }
        _ => (
            read_input(value, Some("error reading in file".to_string()))?,
            value.to_string(),
        ),
    };
    let bad = |e: AttrError| {
        let mut lines: Vec<String> = e.lines.into_iter().map(|l| format!("error: {l}")).collect();
        lines.push(format!("error: error reading file: \"{file}\""));
        lines.push("invalid format".to_string());
        Stop(lines)
    };
    let mut new = CalendarConfig {
        name: String::new(),
        year: "NONE".into(),
        week: "NONE".into(),
    };
    for (attr, v) in attrs::read_object(&text, CALENDAR_ATTRS, false).map_err(bad)? {
        let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
        match attr.as_str() {
            "calendar_name" => new.name = v,
            "year" => new.year = v,
            _ => new.week = v,
        }
    }
    if new.name.is_empty() {
        return Err(bad(AttrError {
            lines: vec!["required attribute \"calendar_name\" is missing".to_string()],
        }));
    }
    let name = new.name.clone();
    let old = config.calendar(&name).cloned();
    match (adding, &old) {
        (true, Some(_)) => {
            return Err(Stop(vec![format!("calendar \"{name}\" already exists")]));
        }
        (false, None) => {
            return Err(Stop(vec![format!(
                "denied: calendar \"{name}\" does not exist"
            )]));
        }
        _ => {}
    }
    Calendar::parse(&new).map_err(|e| Stop(vec![e]))?;
    let calendars = &mut config.calendars;
    let replaced = editor.put_item("calendars", calendars, &name, |c| c.name.as_str(), new)?;
    commit(cx, editor, &config)?;
    o.err(crate::compat::messages::put_in_list(
        me,
        &name,
        replaced,
        "calendar list",
    ));
    Ok(true)
}

/// `-dcal NAME`: refused while a queue names it, as SGE refuses it.
pub(super) fn delete_calendar(name: &str, me: &str, cx: &Cx, o: &mut Output) -> Result<bool, Stop> {
    let editor = ConfigEditor::open(&cx.path)?;
    let mut config = editor.config.clone();
    if config.calendar(name).is_none() {
        return Err(Stop(vec![format!(
            "denied: calendar \"{name}\" does not exist"
        )]));
    }
    if let Some(q) = config
        .queues
        .iter()
        .find(|q| q.calendar.as_deref() == Some(name))
    {
        return Err(Stop(vec![format!(
            "denied: Calendar \"{name}\" is still referenced in queue \"{}\"",
            q.name
        )]));
    }
    config.calendars.retain(|c| c.name != name);
    editor.remove_item("calendars", name)?;
    commit(cx, editor, &config)?;
    o.err(format!("{me} removed \"{name}\" from calendar list"));
    Ok(true)
}
