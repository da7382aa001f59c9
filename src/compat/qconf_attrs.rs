//! `qconf`'s changing forms: SGE 8.1.9's text forms and attribute values read back into the
//! configuration's objects (the inverse of the show forms in [`super::qconf`]), with SGE's
//! messages for what does not parse.
//!
//! Each object is a table of its attributes, in queue_conf(5) or sge_pe(5) order. An
//! attribute gridspool keeps is parsed into its field; one it does not have (checkpointing,
//! suspend thresholds, access lists…) takes only the value `qconf -s*` shows for it, so that
//! a file that `qconf -s*` printed reads back unchanged and anything else is refused, never
//! silently dropped.

use crate::config::{PeConfig, QueueConfig};
use std::collections::BTreeMap;

/// Why a value or a file was not taken; `lines` are SGE's words, one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrError {
    pub lines: Vec<String>,
}

impl AttrError {
    fn new(lines: impl IntoIterator<Item = String>) -> Self {
        AttrError {
            lines: lines.into_iter().collect(),
        }
    }

    /// The value of `attr` does not parse (SGE: its parser's line, then "Error during
    /// parsing of attribute value").
    fn value(first: String, value: &str) -> Self {
        AttrError::new([
            first,
            format!("Error during parsing of attribute value \"{value}\""),
        ])
    }

    /// A value SGE's qmaster refuses after the file was read (its `cqueue_verify_*`), not
    /// its reader: `-Aq`/`-Mq` print the line alone, without the file's lines around it.
    fn verified(line: &str) -> Self {
        AttrError::new([line.to_string()])
    }

    /// Whether this is one of the qmaster's refusals ([`AttrError::verified`]).
    pub fn is_from_verification(&self) -> bool {
        matches!(self.lines.as_slice(), [l] if VERIFICATION_LINES.contains(&l.as_str()))
    }

    fn unsupported(attr: &str, shown: &str) -> Self {
        AttrError::new([format!(
            "gridspool has no {attr}: its only value is {shown}"
        )])
    }
}

/// The lines of SGE's qmaster checks of queue values (`crate::config::priority_error`).
const VERIFICATION_LINES: &[&str] = &["Invalid character", "Priority not in range -20 to +20"];

/// What kind of value an attribute holds, for `-aattr`/`-dattr` (lists and `name=value`
/// lists take elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Scalar,
    /// Words: `hostlist`, `pe_list`, `qtype`.
    Words,
    /// `name=value,...`: `complex_values`.
    Pairs,
}

/// The attributes of a cluster queue, in queue_conf(5) order, with their shape; `None`:
/// gridspool does not have it (fixed to the value shown).
pub const QUEUE_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("qname", Shape::Scalar, None),
    ("hostlist", Shape::Words, None),
    ("seq_no", Shape::Scalar, None),
    ("load_thresholds", Shape::Pairs, Some("NONE")),
    ("suspend_thresholds", Shape::Pairs, Some("NONE")),
    ("nsuspend", Shape::Scalar, Some("1")),
    ("suspend_interval", Shape::Scalar, Some("00:05:00")),
    ("priority", Shape::Scalar, None),
    ("min_cpu_interval", Shape::Scalar, Some("00:05:00")),
    ("processors", Shape::Scalar, Some("UNDEFINED")),
    ("qtype", Shape::Words, None),
    ("ckpt_list", Shape::Words, Some("NONE")),
    ("pe_list", Shape::Words, None),
    ("rerun", Shape::Scalar, None),
    ("slots", Shape::Scalar, None),
    ("tmpdir", Shape::Scalar, None),
    ("shell", Shape::Scalar, None),
    ("prolog", Shape::Scalar, None),
    ("epilog", Shape::Scalar, None),
    ("shell_start_mode", Shape::Scalar, None),
    ("starter_method", Shape::Scalar, None),
    ("suspend_method", Shape::Scalar, Some("NONE")),
    ("resume_method", Shape::Scalar, Some("NONE")),
    ("terminate_method", Shape::Scalar, Some("NONE")),
    ("notify", Shape::Scalar, None),
    ("owner_list", Shape::Words, Some("NONE")),
    ("user_lists", Shape::Words, None),
    ("xuser_lists", Shape::Words, None),
    ("subordinate_list", Shape::Words, Some("NONE")),
    ("complex_values", Shape::Pairs, None),
    ("projects", Shape::Words, None),
    ("xprojects", Shape::Words, None),
    ("calendar", Shape::Scalar, None),
    ("initial_state", Shape::Scalar, None),
    ("s_rt", Shape::Scalar, None),
    ("h_rt", Shape::Scalar, None),
    ("s_cpu", Shape::Scalar, None),
    ("h_cpu", Shape::Scalar, None),
    ("s_fsize", Shape::Scalar, None),
    ("h_fsize", Shape::Scalar, None),
    ("s_data", Shape::Scalar, None),
    ("h_data", Shape::Scalar, None),
    ("s_stack", Shape::Scalar, None),
    ("h_stack", Shape::Scalar, None),
    ("s_core", Shape::Scalar, None),
    ("h_core", Shape::Scalar, None),
    ("s_rss", Shape::Scalar, None),
    ("h_rss", Shape::Scalar, None),
    ("s_vmem", Shape::Scalar, None),
    ("h_vmem", Shape::Scalar, None),
];

/// The attributes of a parallel environment, in sge_pe(5) order.
pub const PE_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("pe_name", Shape::Scalar, None),
    ("slots", Shape::Scalar, None),
    ("user_lists", Shape::Words, Some("NONE")),
    ("xuser_lists", Shape::Words, Some("NONE")),
    ("start_proc_args", Shape::Scalar, Some("NONE")),
    ("stop_proc_args", Shape::Scalar, Some("NONE")),
    ("allocation_rule", Shape::Scalar, None),
    ("control_slaves", Shape::Scalar, None),
    ("job_is_first_task", Shape::Scalar, None),
    ("urgency_slots", Shape::Scalar, None),
    ("accounting_summary", Shape::Scalar, Some("FALSE")),
    ("qsort_args", Shape::Scalar, Some("NONE")),
];

/// The attributes of an execution host that `-mattr exechost` may change.
pub const EXECHOST_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("complex_values", Shape::Pairs, None),
    ("load_scaling", Shape::Pairs, Some("NONE")),
    ("user_lists", Shape::Words, None),
    ("xuser_lists", Shape::Words, None),
    ("projects", Shape::Words, None),
    ("xprojects", Shape::Words, None),
    ("usage_scaling", Shape::Pairs, Some("NONE")),
    ("report_variables", Shape::Words, Some("NONE")),
];

/// The shape of `attr` in `table`, if the object has it.
pub fn shape(table: &[(&str, Shape, Option<&str>)], attr: &str) -> Option<Shape> {
    table
        .iter()
        .find(|(n, _, _)| *n == attr)
        .map(|(_, s, _)| *s)
}

fn fixed(
    table: &[(&str, Shape, Option<&str>)],
    attr: &str,
    value: &str,
) -> Option<Result<(), AttrError>> {
    let (_, _, shown) = table.iter().find(|(n, _, _)| *n == attr)?;
    let shown = (*shown)?;
    Some(if value.trim().eq_ignore_ascii_case(shown) {
        Ok(())
    } else {
        Err(AttrError::unsupported(attr, shown))
    })
}

fn u32_value(value: &str) -> Result<u32, AttrError> {
    value.trim().parse().map_err(|_| {
        AttrError::value(
            format!("error parsing unsigned long value from string \"{value}\""),
            value,
        )
    })
}

fn bool_value(value: &str) -> Result<bool, AttrError> {
    match value.trim().to_ascii_uppercase().as_str() {
        "TRUE" | "T" | "1" | "YES" | "Y" => Ok(true),
        "FALSE" | "F" | "0" | "NO" | "N" => Ok(false),
        _ => Err(AttrError::value(
            format!("error parsing boolean value from string \"{value}\""),
            value,
        )),
    }
}

/// Words separated by blanks or commas; `NONE` is none.
pub fn words(value: &str) -> Vec<String> {
    let w: Vec<String> = value
        .split([' ', ',', '\t'])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    if w.len() == 1 && w[0].eq_ignore_ascii_case("NONE") {
        Vec::new()
    } else {
        w
    }
}

/// `name=value,...` (or `NONE`).
pub fn pairs(value: &str) -> Result<BTreeMap<String, String>, AttrError> {
    let mut out = BTreeMap::new();
    for w in words(value) {
        match w.split_once('=') {
            Some((k, v)) if !k.is_empty() && !v.is_empty() => {
                out.insert(k.to_string(), v.to_string());
            }
            _ => {
                return Err(AttrError::value(
                    format!("error parsing attribute value \"{w}\": expected name=value"),
                    value,
                ));
            }
        }
    }
    Ok(out)
}

fn time_value(attr: &str, value: &str) -> Result<String, AttrError> {
    let v = value.trim();
    if crate::time::parse_time(v).is_some() {
        Ok(v.to_string())
    } else {
        Err(AttrError::value(
            format!("error parsing time value from string \"{v}\" for \"{attr}\""),
            value,
        ))
    }
}

/// Sets attribute `attr` of queue `q` from its SGE text: a plain value sets the queue's
/// own (its per-host values stay), `4,[@big=16],[node01=32]` its own and every per-host
/// value of `attr`.
pub fn set_queue_attr(q: &mut QueueConfig, attr: &str, value: &str) -> Result<(), AttrError> {
    if !matches!(attr, "qname" | "hostlist")
        && let Some((default, per_host)) = split_host_values(value)?
    {
        set_queue_attr(q, attr, &default)?;
        clear_host_values(q, attr);
        for (key, v) in per_host {
            set_host_value(q, &key, attr, &v)?;
        }
        return Ok(());
    }
    if let Some(r) = fixed(QUEUE_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    match attr {
        "qname" => q.name = v.to_string(),
        "hostlist" => q.hostlist = words(v),
        "seq_no" => q.seq_no = u32_value(v)?,
        "qtype" => {
            let w = words(v);
            for t in &w {
                if !["BATCH", "INTERACTIVE"].contains(&t.to_ascii_uppercase().as_str()) {
                    return Err(AttrError::value(
                        format!("unknown queue type \"{t}\""),
                        value,
                    ));
                }
            }
            q.qtype = if w.is_empty() {
                "NONE".into()
            } else {
                w.join(" ").to_ascii_uppercase()
            };
        }
        "pe_list" => q.pe_list = words(v),
        "user_lists" => q.user_lists = words(v),
        "xuser_lists" => q.xuser_lists = words(v),
        "projects" => q.projects = words(v),
        "xprojects" => q.xprojects = words(v),
        "rerun" => q.rerun = bool_value(v)?,
        "slots" => q.slots = u32_value(v)?,
        "tmpdir" => q.tmpdir = v.to_string(),
        "prolog" | "epilog" | "starter_method" => {
            let value = (!v.eq_ignore_ascii_case("NONE")).then(|| v.to_string());
            match attr {
                "prolog" => q.prolog = value,
                "epilog" => q.epilog = value,
                _ => q.starter_method = value,
            }
        }
        "shell" => q.shell = v.to_string(),
        "shell_start_mode" => {
            if !["posix_compliant", "unix_behavior", "script_from_stdin"].contains(&v) {
                return Err(AttrError::value(
                    format!("unknown shell_start_mode \"{v}\""),
                    value,
                ));
            }
            q.shell_start_mode = v.to_string();
        }
        "notify" => q.notify = time_value(attr, v)?,
        "priority" => {
            // SGE's qmaster checks the text with `atoi` and keeps it as written.
            if let Some(line) = crate::config::priority_error(v) {
                return Err(AttrError::verified(line));
            }
            q.priority = (v != "0").then(|| v.to_string());
        }
        "complex_values" => q.complex_values = pairs(v)?,
        "calendar" => q.calendar = (!v.eq_ignore_ascii_case("NONE")).then(|| v.to_string()),
        "initial_state" => {
            q.disabled = match v {
                "default" | "enabled" => false,
                "disabled" => true,
                _ => {
                    return Err(AttrError::value(
                        format!("unknown initial_state \"{v}\""),
                        value,
                    ));
                }
            }
        }
        limit if crate::compat::qconf::is_limit(limit) => {
            if v.eq_ignore_ascii_case("INFINITY") {
                q.limits.remove(limit);
            } else {
                let ok = if limit.ends_with("_rt") || limit.ends_with("_cpu") {
                    crate::time::parse_time(v).is_some()
                } else {
                    crate::compat::submit::is_memory_value(v)
                };
                if !ok {
                    return Err(AttrError::value(
                        format!("error parsing value \"{v}\" of \"{limit}\""),
                        value,
                    ));
                }
                q.limits.insert(limit.to_string(), v.to_string());
            }
        }
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// A queue's own value of an attribute and those of hosts and host groups (`@big`, `16`).
pub type HostValues = (String, Vec<(String, String)>);

/// `4,[@big=16],[node01=32]` as the queue's own value and the per-host ones (`None`: a plain
/// value). Blanks between the parts are what a `\` continuation leaves.
pub fn split_host_values(value: &str) -> Result<Option<HostValues>, AttrError> {
    let bytes = value.as_bytes();
    let start =
        (0..bytes.len()).find(|&i| bytes[i] == b'[' && value[..i].trim_end().ends_with(','));
    let Some(start) = start else {
        return Ok(None);
    };
    let default = value[..start]
        .trim_end()
        .trim_end_matches(',')
        .trim()
        .to_string();
    let malformed = || {
        AttrError::value(
            format!("error parsing the host values of \"{}\"", value.trim()),
            value,
        )
    };
    let mut out = Vec::new();
    let mut rest = &value[start..];
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',', '\n']);
        if rest.is_empty() {
            break;
        }
        let body = rest.strip_prefix('[').ok_or_else(malformed)?;
        let end = body.find(']').ok_or_else(malformed)?;
        let (key, v) = body[..end].split_once('=').ok_or_else(malformed)?;
        if key.trim().is_empty() {
            return Err(malformed());
        }
        out.push((key.trim().to_string(), v.trim().to_string()));
        rest = &body[end + 1..];
    }
    Ok(Some((default, out)))
}

/// Where attribute `attr` of queue_conf(5) is kept in a queue (and in its per-host values):
/// a key, or an entry of a key's table (`limits.h_rt`). Attributes are the queue's keys of
/// the same name, but for these.
pub fn attr_paths(attr: &str) -> Vec<(String, Option<String>)> {
    if crate::compat::qconf::is_limit(attr) {
        vec![("limits".into(), Some(attr.to_string()))]
    } else if attr == "initial_state" {
        vec![("disabled".into(), None)]
    } else if crate::config::per_host::is_per_host_field(attr) {
        vec![(attr.to_string(), None)]
    } else {
        Vec::new()
    }
}

/// Whether the per-host values `over` give attribute `attr`.
pub fn host_value_touches(over: &serde_json::Map<String, serde_json::Value>, attr: &str) -> bool {
    attr_paths(attr).iter().any(|(k, sub)| match sub {
        None => over.contains_key(k),
        Some(s) => over
            .get(k)
            .and_then(|v| v.as_object())
            .is_some_and(|m| m.contains_key(s)),
    })
}

/// Removes `attr` from every per-host value of `q` (and what is left empty).
pub fn clear_host_values(q: &mut QueueConfig, attr: &str) {
    let keys: Vec<String> = q.per_host.keys().cloned().collect();
    for key in keys {
        remove_host_value(q, &key, attr);
    }
}

/// Removes the value of `attr` for `key` (a host or `@group`): whether it had one.
pub fn remove_host_value(q: &mut QueueConfig, key: &str, attr: &str) -> bool {
    let Some(over) = q.per_host.get_mut(key) else {
        return false;
    };
    let mut removed = false;
    for (k, sub) in attr_paths(attr) {
        match sub {
            None => removed |= over.remove(&k).is_some(),
            Some(s) => {
                if let Some(serde_json::Value::Object(m)) = over.get_mut(&k) {
                    removed |= m.remove(&s).is_some();
                    if m.is_empty() {
                        over.remove(&k);
                    }
                }
            }
        }
    }
    if over.is_empty() {
        q.per_host.remove(key);
    }
    removed
}

/// Sets the value of `attr` for `key` (a host or `@group`) from its SGE text.
pub fn set_host_value(
    q: &mut QueueConfig,
    key: &str,
    attr: &str,
    value: &str,
) -> Result<(), AttrError> {
    use serde_json::Value;
    if matches!(attr, "qname" | "hostlist") {
        return Err(AttrError::new([format!("qconf: cannot change {attr}")]));
    }
    let plain = crate::config::per_host::apply(q, &[]).map_err(|e| AttrError::new([e]))?;
    let mut changed = plain.clone();
    set_queue_attr(&mut changed, attr, value)?;
    let as_object = |x: &QueueConfig| match serde_json::to_value(x) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (before, after) = (as_object(&plain), as_object(&changed));
    let mut paths = attr_paths(attr);
    let merged_by_key = crate::config::per_host::MERGED_BY_KEY;
    for k in before.keys().chain(after.keys()) {
        if before.get(k) == after.get(k) || paths.iter().any(|(p, _)| p == k) {
            continue;
        }
        if merged_by_key.contains(&k.as_str()) {
            let empty = serde_json::Map::new();
            let b = before.get(k).and_then(Value::as_object).unwrap_or(&empty);
            let a = after.get(k).and_then(Value::as_object).unwrap_or(&empty);
            for s in b.keys().chain(a.keys()) {
                if b.get(s) != a.get(s) {
                    paths.push((k.clone(), Some(s.clone())));
                }
            }
        } else {
            paths.push((k.clone(), None));
        }
    }
    if paths.is_empty() {
        // An attribute gridspool keeps no value of (its only value was given).
        return Ok(());
    }
    let over = q.per_host.entry(key.to_string()).or_default();
    for (k, sub) in paths {
        match sub {
            None => {
                over.insert(k.clone(), after.get(&k).cloned().unwrap_or(Value::Null));
            }
            Some(s) => {
                let v = after
                    .get(&k)
                    .and_then(|t| t.get(&s))
                    .cloned()
                    .unwrap_or(Value::Null);
                let table = over
                    .entry(k)
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(m) = table {
                    m.insert(s, v);
                }
            }
        }
    }
    Ok(())
}

fn unknown(attr: &str) -> AttrError {
    AttrError::new([format!("unknown attribute name \"{attr}\"")])
}

/// Sets attribute `attr` of parallel environment `p` from its SGE text.
pub fn set_pe_attr(p: &mut PeConfig, attr: &str, value: &str) -> Result<(), AttrError> {
    if let Some(r) = fixed(PE_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    match attr {
        "pe_name" => p.name = v.to_string(),
        "slots" => p.slots = u32_value(v)?,
        "allocation_rule" => {
            let ok = matches!(v, "$pe_slots" | "$fill_up" | "$round_robin")
                || v.parse::<u32>().is_ok_and(|n| n > 0);
            if !ok {
                return Err(AttrError::value(
                    format!(
                        "parameter allocation_rule of pe \"{}\": unknown allocation rule \"{v}\"",
                        p.name
                    ),
                    value,
                ));
            }
            p.allocation_rule = v.to_string();
        }
        "control_slaves" => p.control_slaves = bool_value(v)?,
        "job_is_first_task" => p.job_is_first_task = bool_value(v)?,
        "urgency_slots" => {
            let ok = matches!(v, "min" | "max" | "avg") || v.parse::<u32>().is_ok();
            if !ok {
                return Err(AttrError::value(
                    format!("unknown urgency_slots \"{v}\""),
                    value,
                ));
            }
            p.urgency_slots = v.to_string();
        }
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// A value as compared with the one `qconf -s*` shows: its words, whatever blanks or
/// continuation lines separated them (SGE wraps long values).
pub fn normal_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// An object's text as its logical lines: a line ending in `\\` goes on on the next (SGE
/// wraps long values so).
pub fn joined_lines(text: &str) -> Vec<String> {
    let mut joined = String::new();
    let mut lines = Vec::new();
    for raw in text.lines() {
        if let Some(head) = raw.strip_suffix('\\') {
            joined.push_str(head);
            continue;
        }
        joined.push_str(raw);
        lines.push(std::mem::take(&mut joined));
    }
    if !joined.is_empty() {
        lines.push(joined);
    }
    lines
}

/// An object's `NAME VALUE` lines (a `qconf -s*` output, or a file for `-M*`/`-A*`):
/// continuation lines (`\` at the end) joined, comments and blank lines left out. `Err`:
/// an attribute `table` does not have, or one it has missing (SGE's words).
pub fn read_object(
    text: &str,
    table: &[(&str, Shape, Option<&str>)],
    required: bool,
) -> Result<Vec<(String, String)>, AttrError> {
    let mut lines = Vec::new();
    for line in joined_lines(text) {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (name, value) = match t.split_once([' ', '\t']) {
            Some((n, v)) => (n, v.trim()),
            None => (t, ""),
        };
        if shape(table, name).is_none() {
            return Err(unknown(name));
        }
        lines.push((name.to_string(), value.to_string()));
    }
    for (name, _, _) in table.iter().filter(|_| required) {
        if !lines.iter().any(|(n, _)| n == name) {
            return Err(AttrError::new([format!(
                "required attribute \"{name}\" is missing"
            )]));
        }
    }
    Ok(lines)
}

/// The scheduler configuration's attributes, in sched_conf(5) order; `Some`: gridspool
/// does not have it (fixed to the value shown).
pub const SCHED_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("algorithm", Shape::Scalar, Some("default")),
    ("schedule_interval", Shape::Scalar, None),
    ("maxujobs", Shape::Scalar, None),
    ("queue_sort_method", Shape::Scalar, Some("load")),
    (
        "job_load_adjustments",
        Shape::Pairs,
        Some("np_load_avg=0.50"),
    ),
    ("load_adjustment_decay_time", Shape::Scalar, Some("0:7:30")),
    ("load_formula", Shape::Scalar, Some("np_load_avg")),
    ("schedd_job_info", Shape::Scalar, None),
    ("flush_submit_sec", Shape::Scalar, Some("0")),
    ("flush_finish_sec", Shape::Scalar, Some("0")),
    ("params", Shape::Scalar, Some("none")),
    ("reprioritize_interval", Shape::Scalar, Some("0:0:0")),
    ("halftime", Shape::Scalar, None),
    ("usage_weight_list", Shape::Pairs, None),
    ("compensation_factor", Shape::Scalar, None),
    ("weight_user", Shape::Scalar, None),
    ("weight_project", Shape::Scalar, None),
    ("weight_department", Shape::Scalar, None),
    ("weight_job", Shape::Scalar, None),
    ("weight_tickets_functional", Shape::Scalar, None),
    ("weight_tickets_share", Shape::Scalar, None),
    ("share_override_tickets", Shape::Scalar, None),
    ("share_functional_shares", Shape::Scalar, None),
    ("max_functional_jobs_to_schedule", Shape::Scalar, None),
    ("report_pjob_tickets", Shape::Scalar, None),
    ("max_pending_tasks_per_job", Shape::Scalar, None),
    ("halflife_decay_list", Shape::Scalar, Some("none")),
    ("policy_hierarchy", Shape::Scalar, None),
    ("weight_ticket", Shape::Scalar, None),
    ("weight_waiting_time", Shape::Scalar, None),
    ("weight_deadline", Shape::Scalar, None),
    ("weight_urgency", Shape::Scalar, None),
    ("weight_priority", Shape::Scalar, None),
    ("max_reservation", Shape::Scalar, None),
    ("default_duration", Shape::Scalar, None),
];

fn f64_value(value: &str) -> Result<f64, AttrError> {
    value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            AttrError::new([format!(
                "error parsing double value from string \"{value}\""
            )])
        })
}

/// Sets attribute `attr` of the scheduler configuration from its sched_conf(5) text.
pub fn set_sched_attr(
    s: &mut crate::config::SchedulerConfig,
    attr: &str,
    value: &str,
) -> Result<(), AttrError> {
    if let Some(r) = fixed(SCHED_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    let one_line = |e: AttrError| AttrError::new(e.lines.into_iter().take(1));
    match attr {
        "schedule_interval" => s.schedule_interval = time_value(attr, v).map_err(one_line)?,
        "maxujobs" => s.maxujobs = u32_value(v).map_err(one_line)?,
        "schedd_job_info" => s.schedd_job_info = bool_value(v).map_err(one_line)?,
        "halftime" => s.halftime = f64_value(v)?,
        "usage_weight_list" => {
            let mut weights = BTreeMap::new();
            for (k, w) in pairs(v).map_err(one_line)? {
                if !["cpu", "mem", "io"].contains(&k.as_str()) {
                    return Err(AttrError::new([format!(
                        "unknown usage_weight_list entry \"{k}\""
                    )]));
                }
                weights.insert(k, f64_value(&w)?);
            }
            s.usage_weight_list = weights;
        }
        "compensation_factor" => s.compensation_factor = f64_value(v)?,
        "weight_user" => s.weight_user = f64_value(v)?,
        "weight_project" => s.weight_project = f64_value(v)?,
        "weight_department" => s.weight_department = f64_value(v)?,
        "weight_job" => s.weight_job = f64_value(v)?,
        "weight_tickets_functional" => s.weight_tickets_functional = f64_value(v)?,
        "weight_tickets_share" => s.weight_tickets_share = f64_value(v)?,
        "share_override_tickets" => s.share_override_tickets = bool_value(v).map_err(one_line)?,
        "share_functional_shares" => s.share_functional_shares = bool_value(v).map_err(one_line)?,
        "max_functional_jobs_to_schedule" => {
            s.max_functional_jobs_to_schedule = u32_value(v).map_err(one_line)?
        }
        "report_pjob_tickets" => s.report_pjob_tickets = bool_value(v).map_err(one_line)?,
        "max_pending_tasks_per_job" => {
            s.max_pending_tasks_per_job = u32_value(v).map_err(one_line)?
        }
        "policy_hierarchy" => {
            let ok = v.eq_ignore_ascii_case("NONE")
                || (v.len() <= 4 && v.chars().all(|c| "OFSD".contains(c)));
            if !ok {
                return Err(AttrError::new([format!(
                    "invalid policy_hierarchy \"{v}\""
                )]));
            }
            s.policy_hierarchy = v.to_string();
        }
        "weight_ticket" => s.weight_ticket = f64_value(v)?,
        "weight_waiting_time" => s.weight_waiting_time = f64_value(v)?,
        "weight_deadline" => s.weight_deadline = f64_value(v)?,
        "weight_urgency" => s.weight_urgency = f64_value(v)?,
        "weight_priority" => s.weight_priority = f64_value(v)?,
        "max_reservation" => s.max_reservation = u32_value(v).map_err(one_line)?,
        "default_duration" => {
            s.default_duration = if v.eq_ignore_ascii_case("INFINITY") {
                "INFINITY".to_string()
            } else {
                time_value(attr, v).map_err(one_line)?
            }
        }
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// user(5)'s attributes.
pub const USER_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("name", Shape::Scalar, None),
    ("oticket", Shape::Scalar, None),
    ("fshare", Shape::Scalar, None),
    ("delete_time", Shape::Scalar, Some("0")),
    ("default_project", Shape::Scalar, None),
];

/// project(5)'s attributes.
pub const PROJECT_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("name", Shape::Scalar, None),
    ("oticket", Shape::Scalar, None),
    ("fshare", Shape::Scalar, None),
    ("acl", Shape::Words, None),
    ("xacl", Shape::Words, None),
];

/// host_conf(5)'s attributes that a file may give (`load_values` and `processors` are the
/// host's reports, which `-Me` refuses, as SGE does).
pub const EXECHOST_FILE_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("hostname", Shape::Scalar, None),
    ("load_scaling", Shape::Pairs, Some("NONE")),
    ("complex_values", Shape::Pairs, None),
    ("user_lists", Shape::Words, None),
    ("xuser_lists", Shape::Words, None),
    ("projects", Shape::Words, None),
    ("xprojects", Shape::Words, None),
    ("usage_scaling", Shape::Pairs, Some("NONE")),
    ("report_variables", Shape::Words, Some("NONE")),
];

/// Sets attribute `attr` of a user entry.
pub fn set_user_attr(
    u: &mut crate::config::UserConfig,
    attr: &str,
    value: &str,
) -> Result<(), AttrError> {
    if let Some(r) = fixed(USER_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    match attr {
        "name" => u.name = v.to_string(),
        "oticket" => u.oticket = u32_value(v)?,
        "fshare" => u.fshare = u32_value(v)?,
        "default_project" => {
            u.default_project = (!v.eq_ignore_ascii_case("NONE")).then(|| v.to_string())
        }
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// Sets attribute `attr` of a project.
pub fn set_project_attr(
    p: &mut crate::config::ProjectConfig,
    attr: &str,
    value: &str,
) -> Result<(), AttrError> {
    if let Some(r) = fixed(PROJECT_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    match attr {
        "name" => p.name = v.to_string(),
        "oticket" => p.oticket = u32_value(v)?,
        "fshare" => p.fshare = u32_value(v)?,
        "acl" => p.acl = words(v),
        "xacl" => p.xacl = words(v),
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// Sets attribute `attr` of an execution host (`hostname` names it; `complex_values`).
pub fn set_exechost_attr(
    h: &mut crate::config::HostConfig,
    attr: &str,
    value: &str,
) -> Result<(), AttrError> {
    if let Some(r) = fixed(EXECHOST_FILE_ATTRS, attr, value) {
        return r;
    }
    let v = value.trim();
    match attr {
        "hostname" => h.name = v.to_string(),
        "complex_values" => h.complex_values = pairs(v)?,
        "user_lists" => h.user_lists = words(v),
        "xuser_lists" => h.xuser_lists = words(v),
        "projects" => h.projects = words(v),
        "xprojects" => h.xprojects = words(v),
        _ => return Err(unknown(attr)),
    }
    Ok(())
}

/// share_tree(5)'s text (`id=`, `name=`, `type=`, `shares=`, `childnodes=` per node) as a
/// tree rooted at node 0.
pub fn share_tree_from_text(text: &str) -> Result<crate::config::ShareTreeNode, AttrError> {
    use crate::config::ShareTreeNode;
    let bad = |what: String| AttrError::new([what]);
    // id -> the node's fields and its children's ids
    struct Read {
        name: String,
        node_type: u32,
        shares: u32,
        children: Vec<u32>,
    }
    let mut nodes: BTreeMap<u32, Read> = BTreeMap::new();
    let mut current: Option<u32> = None;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| bad(format!("invalid line \"{line}\"")))?;
        let number = |v: &str| {
            v.trim().parse::<u32>().map_err(|_| {
                bad(format!(
                    "error parsing unsigned long value from string \"{v}\""
                ))
            })
        };
        if key == "id" {
            let id = number(value)?;
            nodes.insert(
                id,
                Read {
                    name: String::new(),
                    node_type: 0,
                    shares: 0,
                    children: Vec::new(),
                },
            );
            current = Some(id);
            continue;
        }
        let node = current
            .and_then(|id| nodes.get_mut(&id))
            .ok_or_else(|| bad(format!("\"{key}\" before any id")))?;
        match key {
            "name" => node.name = value.trim().to_string(),
            "type" => node.node_type = number(value)?,
            "shares" => node.shares = number(value)?,
            "childnodes" => {
                node.children = words(value)
                    .iter()
                    .map(|w| number(w))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(unknown(key)),
        }
    }
    fn build(
        id: u32,
        nodes: &BTreeMap<u32, Read>,
        seen: &mut Vec<u32>,
    ) -> Result<ShareTreeNode, AttrError> {
        if seen.contains(&id) {
            return Err(AttrError::new([format!("node {id} is in the tree twice")]));
        }
        seen.push(id);
        let node = nodes
            .get(&id)
            .ok_or_else(|| AttrError::new([format!("node {id} is missing")]))?;
        Ok(ShareTreeNode {
            name: node.name.clone(),
            shares: node.shares,
            node_type: node.node_type,
            children: node
                .children
                .iter()
                .map(|c| build(*c, nodes, seen))
                .collect::<Result<_, _>>()?,
        })
    }
    let mut seen = Vec::new();
    let tree = build(0, &nodes, &mut seen)?;
    if seen.len() != nodes.len() {
        return Err(bad("nodes that are not in the tree".to_string()));
    }
    Ok(tree)
}

/// complex(5)'s table (`qconf -sc`'s text): one complex per line, `#` comments.
pub fn complexes_from_text(text: &str) -> Result<Vec<crate::config::Complex>, AttrError> {
    use crate::config::{Complex, ComplexType, Consumable, Requestable};
    let mut out: Vec<Complex> = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad =
            |what: &str| AttrError::new([format!("invalid {what} in complex line \"{line}\"")]);
        let [
            name,
            shortcut,
            kind,
            relop,
            requestable,
            consumable,
            default,
            urgency,
        ] = f[..]
        else {
            return Err(bad("number of fields"));
        };
        let kind = [
            ComplexType::Int,
            ComplexType::Double,
            ComplexType::Memory,
            ComplexType::Time,
            ComplexType::String,
            ComplexType::Cstring,
            ComplexType::Restring,
            ComplexType::Host,
            ComplexType::Bool,
        ]
        .into_iter()
        .find(|k| k.name().eq_ignore_ascii_case(kind))
        .ok_or_else(|| bad("type"))?;
        if !["==", "<", "<=", ">", ">=", "!=", "EXCL"].contains(&relop) {
            return Err(bad("relop"));
        }
        let requestable = match requestable.to_ascii_uppercase().as_str() {
            "YES" | "Y" => Requestable::Yes,
            "NO" | "N" => Requestable::No,
            "FORCED" | "F" => Requestable::Forced,
            _ => return Err(bad("requestable")),
        };
        let consumable = match consumable.to_ascii_uppercase().as_str() {
            "YES" | "Y" => Consumable::Yes,
            "NO" | "N" => Consumable::No,
            "JOB" | "J" => Consumable::Job,
            _ => return Err(bad("consumable")),
        };
        let urgency = urgency.parse::<f64>().map_err(|_| bad("urgency"))?;
        if out.iter().any(|c| c.name == name || c.shortcut == shortcut) {
            return Err(AttrError::new([format!(
                "complex attribute \"{name}\" or its shortcut \"{shortcut}\" is there twice"
            )]));
        }
        out.push(Complex {
            name: name.to_string(),
            shortcut: shortcut.to_string(),
            kind,
            relop: relop.to_string(),
            requestable,
            consumable,
            default: default.to_string(),
            urgency,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> QueueConfig {
        let config = crate::config::ClusterConfig::parse(
            "hosts:\n  - {name: vm, slots: 2}\nqueues:\n  - {name: all.q, hostlist: [vm], slots: 2}\n",
        )
        .expect("config");
        config.queues[0].clone()
    }

    #[test]
    fn a_shown_queue_reads_back_as_the_same_queue() {
        let mut q = queue();
        q.limits.insert("h_rt".into(), "0:10:0".into());
        q.complex_values.insert("gpu".into(), "2".into());
        let text = crate::compat::qconf::queue(&q);
        let mut back = queue();
        for (name, value) in read_object(&text, QUEUE_ATTRS, true).expect("read") {
            set_queue_attr(&mut back, &name, &value).expect("set");
        }
        assert_eq!(back, q);
    }

    #[test]
    fn the_shown_scheduler_configuration_reads_back_unchanged() {
        let config = crate::config::ClusterConfig::parse(
            "hosts: []\nqueues: []\nscheduler: {weight_urgency: 0.2, halftime: 72}",
        )
        .expect("config");
        let text = crate::compat::qconf::sched_conf(&config);
        let mut s = crate::config::SchedulerConfig::default();
        for line in text.lines() {
            let (name, value) = line.split_once(' ').expect("line");
            set_sched_attr(&mut s, name, value.trim()).expect("set");
        }
        assert_eq!(s, config.scheduler);
        assert_eq!(
            set_sched_attr(&mut s, "weight_urgency", "abc")
                .expect_err("abc")
                .lines,
            ["error parsing double value from string \"abc\""]
        );
    }

    #[test]
    fn a_shown_share_tree_reads_back_as_the_same_tree() {
        let config = crate::config::ClusterConfig::parse(
            "hosts: []\nqueues: []\nshare_tree: {name: Root, shares: 1, children: [{name: a, shares: 75, children: [{name: c, shares: 1}]}, {name: b, shares: 25}]}\n",
        )
        .expect("config");
        let tree = config.share_tree.expect("tree");
        let text = crate::compat::qconf::share_tree(&tree, &config.projects);
        assert_eq!(share_tree_from_text(&text).expect("parse"), tree);
        assert!(share_tree_from_text("id=0\nname=Root\nshares=1\nchildnodes=1\n").is_err());
    }

    #[test]
    fn the_shown_complexes_read_back_as_the_same_table() {
        let config =
            crate::config::ClusterConfig::parse("hosts: []\nqueues: []\n").expect("config");
        let text = crate::compat::qconf::complexes(&config);
        assert_eq!(
            complexes_from_text(&text).expect("parse"),
            config.complexes()
        );
        assert!(complexes_from_text("gpu gpu INT <= YES\n").is_err());
    }

    #[test]
    fn values_gridspool_lacks_are_refused() {
        let mut q = queue();
        assert!(set_queue_attr(&mut q, "ckpt_list", "NONE").is_ok());
        assert!(set_queue_attr(&mut q, "ckpt_list", "ckpt1").is_err());
        assert_eq!(
            set_queue_attr(&mut q, "slots", "abc")
                .expect_err("abc")
                .lines,
            [
                "error parsing unsigned long value from string \"abc\"",
                "Error during parsing of attribute value \"abc\""
            ]
        );
        assert!(set_queue_attr(&mut q, "slots", "4,[vm=3").is_err());
        assert!(set_queue_attr(&mut q, "slots", "4,[vm=x]").is_err());
    }

    #[test]
    fn per_host_values_are_read_shown_and_read_back_the_same() {
        let mut q = queue();
        set_queue_attr(&mut q, "slots", "4,[vm=3],[@big=16]").expect("slots");
        set_queue_attr(&mut q, "h_rt", "1:00:00,[vm=INFINITY]").expect("h_rt");
        set_queue_attr(&mut q, "pe_list", "make smp,[@big=smp]").expect("pe_list");
        set_queue_attr(&mut q, "prolog", "NONE,[vm=/bin/true]").expect("prolog");
        assert_eq!(q.slots, 4);
        let vm = &q.per_host["vm"];
        assert_eq!(vm["slots"], 3);
        assert_eq!(vm["limits"]["h_rt"], serde_json::Value::Null);
        assert_eq!(vm["prolog"], "/bin/true");
        assert_eq!(q.per_host["@big"]["pe_list"], serde_json::json!(["smp"]));
        let text = crate::compat::qconf::queue(&q);
        assert!(
            text.contains("slots                 4,[@big=16],[vm=3]\n"),
            "{text}"
        );
        assert!(
            text.contains("h_rt                  1:00:00,[vm=INFINITY]\n"),
            "{text}"
        );
        let mut back = queue();
        for (name, value) in read_object(&text, QUEUE_ATTRS, true).expect("read") {
            set_queue_attr(&mut back, &name, &value).expect("set");
        }
        assert_eq!(back, q);
        // A plain value sets the queue's own; the hosts' stay.
        set_queue_attr(&mut q, "slots", "5").expect("slots");
        assert_eq!(
            (q.slots, &q.per_host["vm"]["slots"]),
            (5, &serde_json::json!(3))
        );
        set_queue_attr(&mut q, "suspend_method", "NONE,[vm=NONE]").expect("suspend_method");
        assert!(set_queue_attr(&mut q, "suspend_method", "NONE,[vm=/bin/stop]").is_err());
        assert!(q.per_host["vm"].keys().all(|k| k != "suspend_method"));
        assert!(remove_host_value(&mut q, "vm", "slots"));
        assert!(!remove_host_value(&mut q, "vm", "slots"));
    }

    #[test]
    fn a_file_missing_an_attribute_or_with_an_unknown_one_is_refused() {
        let text = crate::compat::qconf::queue(&queue());
        let without: String = text
            .lines()
            .filter(|l| !l.starts_with("slots"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            read_object(&without, QUEUE_ATTRS, true)
                .expect_err("missing")
                .lines,
            ["required attribute \"slots\" is missing"]
        );
        assert_eq!(
            read_object(&format!("{text}nosuch 1\n"), QUEUE_ATTRS, true)
                .expect_err("unknown")
                .lines,
            ["unknown attribute name \"nosuch\""]
        );
    }
}
