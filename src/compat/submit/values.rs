//! The value grammars of `sge_types(5)` that `qsub` and `qalter` options take, with SGE's
//! messages for a bad value, and the phase-one check of one option ([`check_option`]).

use super::{SubmitError, invalid_argument, numeric_invalid};
use crate::compat::options::{ParsedOption, Support};
use crate::config::{ClusterConfig, ComplexType, Requestable};
use crate::model::{EnvVar, PathSpec, ResourceRequest, SlotRange, TaskIdRange};

/// The upper end of an open slot range (`-pe smp 2-`), SGE's "infinity" for slots.
pub const SLOTS_INFINITY: u32 = 9_999_999;

/// `y[es]|n[o]` (`-b`, `-j`, `-now`, `-r`, `-R`, `-shell`, `-sync`).
pub fn yes_no(option: &str, value: &str) -> Result<bool, SubmitError> {
    match value.to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(true),
        "n" | "no" => Ok(false),
        _ => Err(invalid_argument(option, value)),
    }
}

/// `-cluster path`: a Qube! cluster path, `/` or `/A/B` (gridspool's own option).
pub fn cluster_path(value: &str) -> Result<String, SubmitError> {
    let ok = value == "/"
        || (value.starts_with('/')
            && !value.ends_with('/')
            && value[1..]
                .split('/')
                .all(|p| !p.is_empty() && !p.chars().any(|c| c.is_whitespace() || c == ',')));
    if ok {
        Ok(value.to_string())
    } else {
        Err(invalid_argument("-cluster", value))
    }
}

/// `-p priority`: an integer from -1023 to 1024.
pub fn priority(value: &str) -> Result<i32, SubmitError> {
    value
        .parse::<i32>()
        .ok()
        .filter(|p| (-1023..=1024).contains(p))
        .ok_or_else(|| {
            SubmitError::BadValue(format!(
                "invalid priority \"{value}\".  Must be an integer from -1023 to 1024"
            ))
        })
}

/// `-tc`: an integer ≥ 0; 0 means no limit.
pub fn task_concurrency(value: &str) -> Result<Option<u32>, SubmitError> {
    value
        .parse::<u32>()
        .map(|n| (n > 0).then_some(n))
        .map_err(|_| {
            SubmitError::BadValue(format!(
                "invalid task concurrency number \"{value}\". Must be an integer greater or equal to 0."
            ))
        })
}

/// `-js job_share`: an unsigned integer.
pub fn job_share(value: &str) -> Result<u32, SubmitError> {
    value
        .parse::<u32>()
        .map_err(|_| SubmitError::Usage("invalid jobshare, must be an unsigned integer".into()))
}

/// `-w e|w|n|v|p`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verify {
    /// `e`: reject a job no queue could ever run.
    Error,
    /// `w`: submit anyway.
    Warning,
    /// `n`: no check (the default).
    #[default]
    None,
    /// `v`: report against an empty cluster, do not submit.
    Verify,
    /// `p`: report against the cluster as it is, do not submit.
    Poke,
}

impl Verify {
    /// SGE's `JB_verify_suitable_queues` value (oracle: `-w w` 1, `-w e` 2).
    pub fn sge_number(self) -> u32 {
        match self {
            Verify::None => 0,
            Verify::Warning => 1,
            Verify::Error => 2,
            Verify::Verify => 3,
            Verify::Poke => 4,
        }
    }
}

pub fn verify_level(value: &str) -> Result<Verify, SubmitError> {
    match value {
        "e" => Ok(Verify::Error),
        "w" => Ok(Verify::Warning),
        "n" => Ok(Verify::None),
        "v" => Ok(Verify::Verify),
        "p" => Ok(Verify::Poke),
        _ => Err(invalid_argument("-w", value)),
    }
}

/// `-t n[-m[:s]]`. SGE stores `5-1` as `1-5:1` (capture `qsub/t-bad`).
pub fn task_range(value: &str) -> Result<TaskIdRange, SubmitError> {
    let number = |s: &str| -> Result<u32, SubmitError> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            return Err(numeric_invalid(s));
        }
        digits.parse::<u32>().map_err(|_| numeric_invalid(s))
    };
    let (range, step) = match value.split_once(':') {
        Some((r, s)) => (r, Some(s)),
        None => (value, None),
    };
    let (a, b) = match range.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(range)?;
            (a, a)
        }
    };
    let step = match step {
        Some(s) => {
            let n = s.parse::<i64>().map_err(|_| numeric_invalid(s))?;
            if n <= 0 {
                return Err(SubmitError::BadValue(
                    "Negative or zero step in range is not allowed".into(),
                ));
            }
            u32::try_from(n).map_err(|_| numeric_invalid(s))?
        }
        None => 1,
    };
    for id in [a, b] {
        if id == 0 {
            return Err(SubmitError::Rejected(
                "job rejected: 0 is an invalid task id".into(),
            ));
        }
    }
    Ok(TaskIdRange::new(a, b, step))
}

/// `slot_range`: `n`, `n-m`, `-m`, `n-` (sge_types(5)). A zero end is refused later, as
/// qmaster refuses it (`"job" rejected: pe range must be greater than zero`).
pub fn slot_range(value: &str) -> Result<SlotRange, SubmitError> {
    let number = |s: &str| s.parse::<u32>().map_err(|_| numeric_invalid(s));
    let (min, max) = match value.split_once('-') {
        Some(("", b)) => (1, number(b)?),
        Some((a, "")) => (number(a)?, SLOTS_INFINITY),
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let n = number(value)?;
            (n, n)
        }
    };
    Ok(SlotRange {
        min: min.min(max),
        max: min.max(max),
    })
}

/// `mail_options`: letters of `abesn`, optionally comma-separated; `n` clears. Returns the
/// letters in SGE's display order (`abe` for `-m bea`) and whether `n` was given.
pub fn mail_options(value: &str) -> Result<(String, bool), SubmitError> {
    let mut seen = [false; 4];
    let mut none = false;
    for c in value.chars() {
        match c {
            'a' => seen[0] = true,
            'b' => seen[1] = true,
            'e' => seen[2] = true,
            's' => seen[3] = true,
            'n' => none = true,
            ',' => {}
            _ => {
                return Err(SubmitError::BadValue(format!(
                    "Wrong mail options list format \"{value}\" specified to -m option"
                )));
            }
        }
    }
    if value.is_empty() {
        return Err(SubmitError::BadValue(format!(
            "Wrong mail options list format \"{value}\" specified to -m option"
        )));
    }
    let letters = ['a', 'b', 'e', 's']
        .iter()
        .zip(seen)
        .filter(|(_, on)| *on)
        .map(|(c, _)| *c)
        .collect();
    Ok((letters, none))
}

/// Merges mail letters into the current ones, keeping SGE's order.
pub(super) fn merge_mail(current: &str, add: &str) -> String {
    ['a', 'b', 'e', 's']
        .iter()
        .filter(|c| current.contains(**c) || add.contains(**c))
        .collect()
}

/// `date_time`: `[[CC]YY]MMDDhhmm[.SS]` in local time, as `-a` and `-dl` take it.
pub fn date_time(value: &str, option: &'static str) -> Result<i64, SubmitError> {
    let bad = |detail: String| SubmitError::BadDate {
        detail,
        value: value.to_string(),
        option,
    };
    if value.is_empty() {
        return Err(bad("no date specified".to_string()));
    }
    crate::time::sge_date_time(value, crate::time::now()).map_err(|why| bad(why.to_string()))
}

/// A TIME value (`[[h:]m:]s`, each part possibly fractional, or `INFINITY`) in seconds, as
/// SGE shows it in `qstat -j` (`0:10:0` → `600`, `1.5` → `2`).
pub fn time_value(value: &str) -> Option<String> {
    if value.eq_ignore_ascii_case("infinity") {
        return Some("INFINITY".into());
    }
    let parts: Vec<&str> = value.split(':').collect();
    if parts.len() > 3 || value.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    for p in &parts {
        let n = if p.is_empty() {
            0.0
        } else {
            let ok = p
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+');
            if !ok {
                return None;
            }
            p.parse::<f64>().ok()?
        };
        total = total * 60.0 + n;
    }
    Some(format!("{}", total.round() as i64))
}

/// A MEMORY value: a number with an optional `k K m M g G t T` multiplier, or `INFINITY`.
pub fn is_memory_value(value: &str) -> bool {
    if value.eq_ignore_ascii_case("infinity") {
        return true;
    }
    let number = value.trim_end_matches(['k', 'K', 'm', 'M', 'g', 'G', 't', 'T']);
    value.len() - number.len() <= 1 && !number.is_empty() && number.parse::<f64>().is_ok()
}

/// `-l resource[=value],…`: names resolved to the complex's full name, values checked against
/// its type and normalised as `qstat -j` shows them.
pub fn resource_list(
    value: &str,
    config: &ClusterConfig,
) -> Result<Vec<ResourceRequest>, SubmitError> {
    let mut out: Vec<ResourceRequest> = Vec::new();
    for item in value.split(',').filter(|s| !s.is_empty()) {
        let (name, val) = match item.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (item, None),
        };
        let complex = config
            .complex(name)
            .ok_or_else(|| SubmitError::Rejected(format!("unknown resource \"{name}\"")))?;
        if complex.requestable == Requestable::No {
            return Err(SubmitError::Rejected(format!(
                "resource \"{}\" configured as non requestable",
                complex.name
            )));
        }
        let not_a = |what: &str| {
            SubmitError::Rejected(format!(
                "attribute \"{}\" is not a {what} value",
                complex.name
            ))
        };
        let normalised = match (complex.kind, val) {
            (ComplexType::Bool, None) => "TRUE".to_string(),
            (_, None) => {
                return Err(SubmitError::Rejected(format!(
                    "attribute \"{}\" needs a value",
                    complex.name
                )));
            }
            (ComplexType::Time, Some(v)) => time_value(v).ok_or_else(|| not_a("time"))?,
            (ComplexType::Memory, Some(v)) => {
                if !is_memory_value(v) {
                    return Err(not_a("memory"));
                }
                v.to_string()
            }
            (ComplexType::Int, Some(v)) => {
                if v.parse::<i64>().is_err() && !v.eq_ignore_ascii_case("infinity") {
                    return Err(not_a("integer"));
                }
                v.to_string()
            }
            (ComplexType::Double, Some(v)) => {
                if v.parse::<f64>().is_err() && !v.eq_ignore_ascii_case("infinity") {
                    return Err(not_a("double"));
                }
                v.to_string()
            }
            (ComplexType::Bool, Some(v)) => match v.to_ascii_lowercase().as_str() {
                "true" | "1" => "TRUE".to_string(),
                "false" | "0" => "FALSE".to_string(),
                _ => return Err(not_a("boolean")),
            },
            (_, Some(v)) => v.to_string(),
        };
        push_resource(
            &mut out,
            ResourceRequest {
                name: complex.name.clone(),
                value: normalised,
            },
        );
    }
    Ok(out)
}

/// SGE's `centry_list_remove_duplicates`: a later request of a resource replaces the earlier.
pub(super) fn push_resource(list: &mut Vec<ResourceRequest>, r: ResourceRequest) {
    list.retain(|x| x.name != r.name);
    list.push(r);
}

/// `path_list`: `[host:]path[,[host:]path…]`.
pub fn path_list(value: &str) -> Vec<PathSpec> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once(':') {
            Some((host, path)) if !host.is_empty() => PathSpec {
                host: Some(host.to_string()),
                path: path.to_string(),
            },
            _ => PathSpec {
                host: None,
                path: item.trim_start_matches(':').to_string(),
            },
        })
        .collect()
}

/// Path lists merge by host: a later path for the same host (or for no host) replaces.
pub(super) fn merge_paths(list: &mut Vec<PathSpec>, add: Vec<PathSpec>) {
    for p in add {
        match list.iter_mut().find(|x| x.host == p.host) {
            Some(x) => *x = p,
            None => list.push(p),
        }
    }
}

/// `variable_list`: `NAME[=value],…`; a bare `NAME` takes its value from the submit
/// environment (and has none when unset there, which `qstat -j` shows as `NAME=NONE`).
pub fn env_list(value: &str, environ: &[(String, String)]) -> Vec<EnvVar> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('=') {
            Some((n, v)) => EnvVar {
                name: n.to_string(),
                value: Some(v.to_string()),
            },
            None => EnvVar {
                name: item.to_string(),
                value: environ
                    .iter()
                    .find(|(k, _)| k == item)
                    .map(|(_, v)| v.clone()),
            },
        })
        .collect()
}

/// Env lists merge by name: a later value replaces, keeping the variable's first position.
pub(super) fn merge_env(list: &mut Vec<EnvVar>, add: Vec<EnvVar>) {
    for v in add {
        match list.iter_mut().find(|x| x.name == v.name) {
            Some(x) => x.value = v.value,
            None => list.push(v),
        }
    }
}

/// `context_list`: `variable[=value],…`.
pub fn context_list(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => (item.to_string(), String::new()),
        })
        .collect()
}

/// A comma-separated list (`-q`, `-masterq`, `-M`, `-hold_jid`).
pub fn comma_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// SGE's refusal of a list option whose value lists nothing (`''`, `,`), exit 7. `-i` says
/// `-e`, as SGE 8.1.9 does (oracle).
fn empty_list(option: &str, value: &str) -> SubmitError {
    SubmitError::BadValue(match option {
        "-o" => format!("Wrong stdout path list format \"{value}\" specified to -o option"),
        "-e" | "-i" => format!("Wrong path list format \"{value}\" specified to -e option"),
        "-S" => format!("Wrong shell list format \"{value}\" specified to -S option"),
        "-M" => format!("Wrong mail list format \"{value}\" specified to -M option"),
        "-v" => {
            format!("Wrong variable list format -v \"{value}\" or environment variable not set")
        }
        "-ac" | "-dc" | "-sc" => format!("Wrong context list format {option} \"{value}\""),
        _ => format!("Wrong queue list format \"{value}\" specified to {option} option"),
    })
}

/// A `-hold_jid`/`-hold_jid_ad` list: at least one job id, name or pattern. SGE splits at
/// commas and skips empty items (`1,,2` is `1,2`); a list of none (`''`, `,`) is refused,
/// not taken as no dependency (`cull_parse_jid_hold_list`), exit 7.
pub fn hold_jid_list(value: &str, list: &str, option: &str) -> Result<Vec<String>, SubmitError> {
    let items = comma_list(value);
    if items.is_empty() {
        return Err(SubmitError::BadValue(format!(
            "Wrong {list} list format \"{value}\" specified to {option} option"
        )));
    }
    Ok(items)
}

/// SGE's checks of a job name at the command line (`-N a/b`, exit 2).
pub fn job_name_syntax(value: &str) -> Result<(), SubmitError> {
    if value.contains('/') {
        return Err(SubmitError::Usage(
            "argument to -N option must not contain / ".into(),
        ));
    }
    Ok(())
}

/// qmaster's checks of a job name, in its order (`job_verify`, `object_verify_name`,
/// `verify_str_key` with its `QSUB_TABLE`): not empty, shorter than 512 bytes, no digit first,
/// none of the characters of the table (the first of the table's order that occurs is named),
/// only printable ASCII, not a keyword. For a name with a space or a byte outside ASCII, SGE
/// 8.1.9 builds the message below but loses it (`Error reading answer list from qmaster`);
/// gridspool prints it.
pub fn job_name_valid(name: &str) -> Result<(), SubmitError> {
    const FORBIDDEN: [(char, &str); 9] = [
        ('\n', "Return"),
        ('\t', "Tab"),
        ('\r', "Carriage return"),
        ('/', "Slash"),
        (':', "Colon"),
        ('@', "At"),
        ('\\', "Backslash"),
        ('*', "Asterisk"),
        ('?', "Questionmark"),
    ];
    if name.is_empty() {
        return Err(SubmitError::Rejected(
            "job rejected cause there is no job_name in the request".into(),
        ));
    }
    if name.len() >= MAX_VERIFY_STRING {
        return Err(SubmitError::Rejected(format!(
            "job name too long, maximum allowed length is {MAX_VERIFY_STRING} characters"
        )));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(SubmitError::Rejected(format!(
            "denied: \"{}\" is not a valid object name (cannot start with a digit)",
            crate::compat::messages::sfq(name)
        )));
    }
    if let Some((c, what)) = FORBIDDEN.iter().find(|(c, _)| name.contains(*c)) {
        return Err(SubmitError::Rejected(if c.is_ascii_graphic() {
            format!("{what} ('{c}') not allowed in objectname")
        } else {
            format!("{what} not allowed in objectname")
        }));
    }
    if let Some(b) = name.bytes().find(|b| !b.is_ascii_graphic()) {
        return Err(SubmitError::Rejected(format!(
            "Non-graphic character (hex {b:x}) not allowed in objectname"
        )));
    }
    if let Some(k) = ["NONE", "ALL", "TEMPLATE"]
        .iter()
        .find(|k| name.eq_ignore_ascii_case(k))
    {
        return Err(SubmitError::Rejected(format!(
            "Keyword (\"{k}\") not allowed as objectname"
        )));
    }
    Ok(())
}

/// SGE's `MAX_VERIFY_STRING`: job names must be shorter.
const MAX_VERIFY_STRING: usize = 512;

/// SGE's default `max_aj_tasks` (`sge_conf(5)`): an array job of more tasks is refused.
pub const MAX_ARRAY_TASKS: u64 = 75_000;

/// Phase-one checks of one option, done as each source is read (SGE's `cull_parse_cmdline`):
/// refused options and malformed values that need no configuration. Exit 2 or 7.
pub fn check_option(opt: &ParsedOption, prog: &str) -> Result<(), SubmitError> {
    let spec = opt.spec;
    if spec.support == Support::Unsupported {
        return Err(SubmitError::Usage(format!(
            "the {} option is not supported by gridspool",
            spec.name
        )));
    }
    let v = opt.values.first().map(String::as_str).unwrap_or("");
    match spec.name {
        "-a" => date_time(v, "-a").map(drop),
        "-dl" => date_time(v, "-dl").map(drop),
        "-b" | "-j" | "-now" | "-r" | "-R" | "-shell" | "-sync" => yes_no(spec.name, v).map(drop),
        "-p" => priority(v).map(drop),
        "-tc" => task_concurrency(v).map(drop),
        "-js" => job_share(v).map(drop),
        "-cluster" => cluster_path(v).map(drop),
        "-no_preempt" => yes_no(spec.name, v).map(drop),
        "-t" => task_range(v).map(drop),
        "-m" => mail_options(v).map(drop),
        "-w" => verify_level(v).map(drop),
        "-N" => job_name_syntax(v),
        "-hold_jid" => hold_jid_list(v, "jid_hold", "-hold_jid").map(drop),
        "-o" | "-e" | "-i" | "-q" | "-masterq" | "-S" | "-M" | "-v" | "-ac" | "-dc" | "-sc"
            if comma_list(v).is_empty() =>
        {
            Err(empty_list(spec.name, v))
        }
        "-hold_jid_ad" => hold_jid_list(v, "jid_hold_ad", "-hold_jid_ad").map(drop),
        "-pe" => slot_range(opt.values.get(1).map_or("", String::as_str)).map(drop),
        "-h" if prog == "qalter" => hold_list(v).map(drop),
        _ => Ok(()),
    }
}

/// `qalter -h hold_list`: letters `n u s o U S O` (upper case releases).
pub fn hold_list(value: &str) -> Result<Vec<char>, SubmitError> {
    if value.is_empty() || !value.chars().all(|c| "nusoUSO".contains(c)) {
        return Err(SubmitError::BadValue(format!(
            "Unknown hold list \"{value}\" specified to -h option"
        )));
    }
    Ok(value.chars().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClusterConfig {
        ClusterConfig::parse(&ClusterConfig::default_text("vm", 2)).expect("config")
    }

    #[test]
    fn values_parse_and_normalise_like_sge() {
        assert_eq!(time_value("0:10:0").as_deref(), Some("600"));
        assert_eq!(time_value("0:05:00").as_deref(), Some("300"));
        assert_eq!(time_value("1:0:0").as_deref(), Some("3600"));
        assert_eq!(time_value("1.5").as_deref(), Some("2"));
        assert_eq!(time_value("-5").as_deref(), Some("-5"));
        assert_eq!(time_value("abc"), None);
        assert_eq!(time_value("1:2:3:4"), None);
        assert!(is_memory_value("1.5G") && is_memory_value("1k") && !is_memory_value("abc"));
        let c = config();
        let l = resource_list("a=lx-amd64,mf=1k,h_rt=0:10:0", &c).expect("list");
        let shown: Vec<String> = l
            .iter()
            .map(|r| format!("{}={}", r.name, r.value))
            .collect();
        assert_eq!(shown, ["arch=lx-amd64", "mem_free=1k", "h_rt=600"]);
        assert_eq!(
            resource_list("nosuchres=1", &c)
                .expect_err("unknown")
                .render("qsub"),
            "Unable to run job: unknown resource \"nosuchres\"\nExiting.\n"
        );
        assert_eq!(
            resource_list("s=abc", &c).expect_err("int").to_string(),
            "Unable to run job: attribute \"slots\" is not a integer value"
        );
        assert_eq!(
            resource_list("load_avg=1", &c)
                .expect_err("nonreq")
                .to_string(),
            "Unable to run job: resource \"load_avg\" configured as non requestable"
        );
    }

    #[test]
    fn ranges_priorities_and_mail() {
        assert_eq!(task_range("5-1").expect("range").to_string(), "1-5:1");
        assert_eq!(task_range("1-3:2").expect("range").to_string(), "1-3:2");
        assert_eq!(task_range("abc").expect_err("bad").code(), 7);
        assert_eq!(task_range("0").expect_err("zero").code(), 1);
        assert_eq!(
            task_range("3-1:0").expect_err("step").render("qsub"),
            "qsub: Negative or zero step in range is not allowed\n"
        );
        assert_eq!(slot_range("4-2").expect("r"), SlotRange { min: 2, max: 4 });
        assert_eq!(slot_range("2-").expect("r").max, SLOTS_INFINITY);
        assert_eq!(slot_range("-3").expect("r"), SlotRange { min: 1, max: 3 });
        assert_eq!(priority("-2000").expect_err("range").code(), 7);
        assert_eq!(priority("1024").expect("max"), 1024);
        assert_eq!(mail_options("bea").expect("m"), ("abe".to_string(), false));
        assert!(mail_options("x").is_err());
        assert_eq!(
            date_time("abc", "-a").expect_err("date").render("qsub"),
            "\nInvalid format of date/hour-minute field.\nqsub: Wrong date/time format \"abc\" specified to -a option\n"
        );
        assert!(date_time("13011200", "-dl").is_err());
        assert!(date_time("202701011200.30", "-a").is_ok());
    }
}
