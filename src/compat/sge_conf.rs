//! sge_conf(5)'s text read back into the configuration: the global configuration (`qconf
//! -Mconf global`, `-mconf`) and a host's local one (`-Aconf HOST`, `-Mconf HOST`), the
//! inverse of [`super::qconf::global_conf`] and [`host_conf`].
//!
//! As for the other objects ([`super::qconf_attrs`]), an attribute gridspool keeps is set; one
//! it does not have takes only the value `qconf -sconf` shows for it, anything else is refused
//! with a line naming it, so that a text `qconf -sconf` printed reads back unchanged and an
//! importer can say what it could not carry. Every refusal of a text is given at once.

use super::qconf_attrs::{AttrError, Shape, normal_value, words};
use crate::config::ClusterConfig;

/// The global configuration's attributes, in sge_conf(5) order (as `qconf -sconf` prints
/// them); `Some`: gridspool does not have it, and it takes only that value (compared
/// without regard to case or to how blanks and continuation lines break it).
/// `execd_spool_dir` is the cell's own (`None` here: [`global_from_text`] is told it).
pub const CONF_ATTRS: &[(&str, Shape, Option<&str>)] = &[
    ("execd_spool_dir", Shape::Scalar, None),
    ("mailer", Shape::Scalar, None),
    ("xterm", Shape::Scalar, Some("/usr/bin/xterm")),
    ("load_sensor", Shape::Scalar, Some("none")),
    ("prolog", Shape::Scalar, None),
    ("epilog", Shape::Scalar, None),
    ("shell_start_mode", Shape::Scalar, Some("posix_compliant")),
    ("login_shells", Shape::Words, Some("bash,sh,ksh,csh,tcsh")),
    ("min_uid", Shape::Scalar, None),
    ("min_gid", Shape::Scalar, None),
    ("user_lists", Shape::Words, None),
    ("xuser_lists", Shape::Words, None),
    ("projects", Shape::Words, None),
    ("xprojects", Shape::Words, None),
    ("enforce_project", Shape::Scalar, Some("false")),
    ("enforce_user", Shape::Scalar, Some("auto")),
    ("load_report_time", Shape::Scalar, None),
    ("max_unheard", Shape::Scalar, None),
    ("reschedule_unknown", Shape::Scalar, None),
    ("loglevel", Shape::Scalar, Some("log_warning")),
    ("administrator_mail", Shape::Scalar, Some("root")),
    ("set_token_cmd", Shape::Scalar, Some("none")),
    ("pag_cmd", Shape::Scalar, Some("none")),
    ("token_extend_time", Shape::Scalar, Some("none")),
    ("shepherd_cmd", Shape::Scalar, Some("none")),
    ("qmaster_params", Shape::Words, None),
    ("execd_params", Shape::Words, Some("none")),
    (
        "reporting_params",
        Shape::Words,
        Some("accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00"),
    ),
    ("finished_jobs", Shape::Scalar, Some("100")),
    ("gid_range", Shape::Scalar, Some("65400-65500")),
    ("qlogin_command", Shape::Scalar, Some("builtin")),
    ("qlogin_daemon", Shape::Scalar, Some("builtin")),
    ("rlogin_command", Shape::Scalar, Some("builtin")),
    ("rlogin_daemon", Shape::Scalar, Some("builtin")),
    ("rsh_command", Shape::Scalar, Some("builtin")),
    ("rsh_daemon", Shape::Scalar, Some("builtin")),
    ("max_aj_instances", Shape::Scalar, Some("2000")),
    ("max_aj_tasks", Shape::Scalar, Some("75000")),
    ("max_u_jobs", Shape::Scalar, Some("0")),
    ("max_jobs", Shape::Scalar, Some("0")),
    ("auto_user_oticket", Shape::Scalar, Some("0")),
    ("auto_user_fshare", Shape::Scalar, Some("0")),
    ("auto_user_default_project", Shape::Scalar, Some("none")),
    ("auto_user_delete_time", Shape::Scalar, Some("86400")),
    ("delegated_file_staging", Shape::Scalar, Some("false")),
    ("reprioritize", Shape::Scalar, Some("0")),
    ("jsv_url", Shape::Scalar, Some("none")),
    (
        "jsv_allowed_mod",
        Shape::Scalar,
        Some("ac,h,i,e,o,j,M,N,p,w"),
    ),
    // sge_conf(5)'s attributes that 8.1.9's -sconf leaves out unless set.
    ("libjvm_path", Shape::Scalar, Some("none")),
    ("additional_jvm_args", Shape::Scalar, Some("none")),
];

/// The attributes a host's local configuration may hold in gridspool: its own
/// `reschedule_unknown` (`hosts[].reschedule_unknown`).
pub const HOST_CONF_ATTRS: &[&str] = &["reschedule_unknown"];

/// The `NAME VALUE` lines of a configuration text (comments, blank lines and `#host:`
/// headers left out, continuation lines joined); `Err`: names sge_conf(5) does not have,
/// all of them.
fn conf_lines(text: &str) -> Result<Vec<(String, String)>, AttrError> {
    let mut joined = String::new();
    let mut lines = Vec::new();
    let mut unknown = Vec::new();
    for raw in text.lines() {
        if let Some(head) = raw.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            continue;
        }
        joined.push_str(raw);
        let line = std::mem::take(&mut joined);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let (name, value) = match t.split_once([' ', '\t']) {
            Some((n, v)) => (n, normal_value(v)),
            None => (t, String::new()),
        };
        if !CONF_ATTRS.iter().any(|(n, _, _)| *n == name) {
            unknown.push(format!("unknown attribute name \"{name}\""));
            continue;
        }
        lines.push((name.to_string(), value));
    }
    if unknown.is_empty() {
        Ok(lines)
    } else {
        Err(AttrError { lines: unknown })
    }
}

/// What `-sconf` shows for each attribute now.
fn shown(config: &ClusterConfig, exec_spool_dir: &str) -> Vec<(String, String)> {
    conf_lines(&super::qconf::global_conf(config, exec_spool_dir)).unwrap_or_default()
}

/// A time of the global configuration: `h:m:s` or seconds, positive unless `zero` may be.
fn time(attr: &str, v: &str, zero: bool) -> Result<String, String> {
    match crate::time::parse_time(v) {
        Some(s) if (s > 0 || zero && s == 0) && s < 1 << 31 => Ok(v.to_string()),
        _ => Err(format!(
            "error parsing time value from string \"{v}\" for \"{attr}\""
        )),
    }
}

/// `qmaster_params`: gridspool has ENABLE_RESCHEDULE_KILL and ENABLE_RESCHEDULE_SLAVE
/// (`NAME`, `NAME=1|true|0|false`); (kill, slave), or the lines refusing the others.
fn qmaster_params(v: &str) -> Result<(bool, bool), Vec<String>> {
    let (mut kill, mut slave) = (false, false);
    let mut refused = Vec::new();
    for p in words(v) {
        let (name, value) = p.split_once('=').unwrap_or((p.as_str(), "true"));
        let on = match value.to_ascii_lowercase().as_str() {
            "1" | "true" => Some(true),
            "0" | "false" => Some(false),
            _ => None,
        };
        match (name.to_ascii_uppercase().as_str(), on) {
            ("ENABLE_RESCHEDULE_KILL", Some(on)) => kill = on,
            ("ENABLE_RESCHEDULE_SLAVE", Some(on)) => slave = on,
            (_, None) if name.starts_with("ENABLE_RESCHEDULE_") => refused.push(format!(
                "error parsing boolean value from string \"{value}\" for qmaster_params {name}"
            )),
            _ => refused.push(format!(
                "gridspool has no qmaster_params {name}: it has only ENABLE_RESCHEDULE_KILL and ENABLE_RESCHEDULE_SLAVE"
            )),
        }
    }
    if refused.is_empty() {
        Ok((kill, slave))
    } else {
        Err(refused)
    }
}

/// Sets the global configuration of `config` from sge_conf(5)'s `text` (what `qconf -sconf`
/// prints). The text is the whole configuration, as SGE's `-Mconf` takes it: an attribute
/// gridspool keeps that the text leaves out goes back to gridspool's default. A value equal
/// to what `-sconf` shows now changes nothing (so `config.yaml` keeps its defaults unwritten).
/// `exec_spool_dir` is the cell's execution spool, the one value of `execd_spool_dir`.
pub fn global_from_text(
    config: &mut ClusterConfig,
    text: &str,
    exec_spool_dir: &str,
) -> Result<(), AttrError> {
    let given = conf_lines(text)?;
    let now = shown(config, exec_spool_dir);
    let mut refused = Vec::new();
    let mut new = config.clone();
    for (attr, _, fixed) in CONF_ATTRS {
        let value = given.iter().rev().find(|(n, _)| n == attr).map(|(_, v)| v);
        let current = now.iter().find(|(n, _)| n == attr).map(|(_, v)| v);
        let fixed = if *attr == "execd_spool_dir" {
            Some(exec_spool_dir)
        } else {
            *fixed
        };
        if let Some(only) = fixed {
            if let Some(v) = value
                && !v.eq_ignore_ascii_case(&normal_value(only))
            {
                refused.push(format!("gridspool has no {attr}: its only value is {only}"));
            }
            continue;
        }
        if value.is_some() && value == current {
            continue;
        }
        if let Err(lines) = set_kept(&mut new, attr, value.map(String::as_str)) {
            refused.extend(lines);
        }
    }
    if !refused.is_empty() {
        return Err(AttrError { lines: refused });
    }
    *config = new;
    Ok(())
}

/// Sets one attribute gridspool keeps; `None`: the text left it out (gridspool's default).
fn set_kept(c: &mut ClusterConfig, attr: &str, value: Option<&str>) -> Result<(), Vec<String>> {
    let one = |e: String| vec![e];
    let none = |v: &str| v.eq_ignore_ascii_case("none");
    let number = |v: &str| {
        v.parse::<u32>().map_err(|_| {
            one(format!(
                "error parsing unsigned long value from string \"{v}\" for \"{attr}\""
            ))
        })
    };
    match (attr, value) {
        ("mailer", v) => {
            c.mailer = v
                .filter(|v| !none(v) && *v != crate::config::DEFAULT_MAILER)
                .map(std::path::PathBuf::from)
        }
        ("prolog", v) => c.prolog = v.filter(|v| !none(v)).map(str::to_string),
        ("epilog", v) => c.epilog = v.filter(|v| !none(v)).map(str::to_string),
        ("min_uid", v) => c.min_uid = v.map_or(Ok(0), number)?,
        ("min_gid", v) => c.min_gid = v.map_or(Ok(0), number)?,
        ("user_lists", v) => c.cluster_access.user_lists = v.map(words).unwrap_or_default(),
        ("xuser_lists", v) => c.cluster_access.xuser_lists = v.map(words).unwrap_or_default(),
        ("projects", v) => c.cluster_access.projects = v.map(words).unwrap_or_default(),
        ("xprojects", v) => c.cluster_access.xprojects = v.map(words).unwrap_or_default(),
        ("load_report_time", v) => {
            c.load_report_time = v.map(|v| time(attr, v, false)).transpose().map_err(one)?
        }
        ("max_unheard", v) => {
            c.max_unheard = v.map(|v| time(attr, v, false)).transpose().map_err(one)?
        }
        ("reschedule_unknown", v) => {
            c.reschedule_unknown = v.map(|v| time(attr, v, true)).transpose().map_err(one)?
        }
        ("qmaster_params", None) => {
            c.enable_reschedule_kill = None;
            c.enable_reschedule_slave = None;
        }
        ("qmaster_params", Some(v)) => {
            let (kill, slave) = qmaster_params(v)?;
            c.enable_reschedule_kill = Some(kill);
            c.enable_reschedule_slave = slave.then_some(true);
        }
        _ => return Err(one(format!("unknown attribute name \"{attr}\""))),
    }
    Ok(())
}

/// A host's local configuration as `qconf -sconf HOST` prints it (`#HOST:`, its attributes,
/// a blank line), if it has one.
pub fn host_conf(host: &crate::config::HostConfig) -> Option<String> {
    let t = host.reschedule_unknown.as_deref()?;
    let value = crate::time::parse_time(t).map_or_else(|| t.to_string(), hms);
    Some(format!(
        "#{}:\n{:<29}{value}\n\n",
        host.name, "reschedule_unknown"
    ))
}

/// Seconds as sge_conf(5)'s `hh:mm:ss`.
fn hms(s: i64) -> String {
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// A host's local configuration from its text (`-Aconf`, `-Mconf HOST`, `-aconf`): the
/// text is the whole local configuration; gridspool keeps only `reschedule_unknown` there,
/// and refuses every other attribute with a line naming it.
pub fn host_from_text(host: &mut crate::config::HostConfig, text: &str) -> Result<(), AttrError> {
    let given = conf_lines(text)?;
    let mut refused = Vec::new();
    let mut reschedule_unknown = None;
    for (attr, v) in given {
        if HOST_CONF_ATTRS.contains(&attr.as_str()) {
            match time(&attr, &v, true) {
                Ok(t) => reschedule_unknown = Some(t),
                Err(e) => refused.push(e),
            }
        } else {
            refused.push(format!(
                "gridspool has no {attr} of a host's own: a host's configuration holds only reschedule_unknown"
            ));
        }
    }
    if !refused.is_empty() {
        return Err(AttrError { lines: refused });
    }
    host.reschedule_unknown = reschedule_unknown;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClusterConfig {
        ClusterConfig::parse(&ClusterConfig::default_text("vm", 2)).expect("default config")
    }

    #[test]
    fn what_sconf_shows_reads_back_unchanged() {
        let mut c = config();
        c.min_uid = 1000;
        c.max_unheard = Some("0:5:0".into());
        c.cluster_access.user_lists = vec!["a".into(), "b".into()];
        let text = crate::compat::qconf::global_conf(&c, "/cell/execd");
        let mut back = c.clone();
        global_from_text(&mut back, &text, "/cell/execd").expect("reads back");
        assert_eq!(
            serde_json::to_value(&back).ok(),
            serde_json::to_value(&c).ok()
        );
    }

    #[test]
    fn every_refusal_is_said_at_once_and_changes_nothing() {
        let mut c = config();
        let text = crate::compat::qconf::global_conf(&c, "/cell/execd")
            .replace("/usr/bin/xterm", "/usr/bin/rxvt")
            .replace("/cell/execd", "/var/spool/gridengine/execd")
            .replace(
                "min_uid                      0",
                "min_uid                      500",
            );
        let e = global_from_text(&mut c, &text, "/cell/execd").expect_err("refused");
        assert_eq!(
            e.lines,
            [
                "gridspool has no execd_spool_dir: its only value is /cell/execd",
                "gridspool has no xterm: its only value is /usr/bin/xterm",
            ]
        );
        assert_eq!(c.min_uid, 0);
    }

    #[test]
    fn qmaster_params_takes_what_gridspool_has() {
        assert_eq!(qmaster_params("none"), Ok((false, false)));
        assert_eq!(
            qmaster_params("ENABLE_RESCHEDULE_KILL=1,ENABLE_RESCHEDULE_SLAVE=true"),
            Ok((true, true))
        );
        assert_eq!(
            qmaster_params("ENABLE_FORCED_QDEL"),
            Err(vec!["gridspool has no qmaster_params ENABLE_FORCED_QDEL: it has only ENABLE_RESCHEDULE_KILL and ENABLE_RESCHEDULE_SLAVE".to_string()])
        );
    }
}
