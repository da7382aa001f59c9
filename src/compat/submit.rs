//! What `qsub` and `qalter` make of their options: the value grammars of `sge_types(5)`, SGE's
//! messages and exit codes for bad values, and the fold of options from every source
//! (`sge_request` files, `#$` lines, `-@` files, the command line) into a [`JobSpec`].
//!
//! Merge rules, as SGE 8.1.9 applies them (checked against the oracle, see `tests/qsub.rs`):
//! single-valued options take the last value; `-l` lists merge across all sources and a later
//! request of the same resource replaces the earlier one; `-q` and `-masterq` merge within one
//! source but a later source replaces the list of an earlier one; `-v`, `-M`, `-hold_jid` and the
//! context options merge; path lists (`-o`, `-e`, `-i`, `-S`) merge by host, a later path for
//! the same host replacing the earlier; `-m` letters accumulate until `-m n` clears them.

use super::options::{OptionSpec, Origin, ParsedOption, Support, split_words};
use super::pattern;
use crate::config::{ClusterConfig, ComplexType, Requestable};
use crate::model::{EnvVar, JobSpec, PathSpec, PeRequest, ResourceRequest, SlotRange, TaskIdRange};

/// The upper end of an open slot range (`-pe smp 2-`), SGE's "infinity" for slots.
pub const SLOTS_INFINITY: u32 = 9_999_999;

/// A refusal, worded and coded as SGE 8.1.9 does. `render` gives the exact stderr text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// A malformed command line: `qsub: …`, exit 2.
    #[error("{0}")]
    Usage(String),
    /// A value that does not parse: `qsub: …`, exit 7.
    #[error("{0}")]
    BadValue(String),
    /// A malformed `-a`/`-dl` date: SGE prints a blank line and the detail first, exit 7.
    #[error("Wrong date/time format \"{value}\" specified to {option} option")]
    BadDate {
        detail: String,
        value: String,
        option: &'static str,
    },
    /// Non-option words in a `#$` line or a defaults file: SGE's empty "Unknown option", exit 5.
    #[error("Unknown option")]
    StrayWords(usize),
    /// The script could not be read: exit 14 for a file, 4 for stdin.
    #[error("Unable to read script file because of error: {msg}")]
    Script { msg: String, code: u8 },
    /// Refused as qmaster refuses a job: `Unable to run job: …` then `Exiting.`, exit 1.
    #[error("Unable to run job: {0}")]
    Rejected(String),
    /// Bytes that are not UTF-8 where gridspool keeps text (a `#$` line, a line of an
    /// `sge_request` or `-@` file, a variable `-v` copies, the directory of `-cwd`): SGE passes
    /// them on, gridspool's records are UTF-8 (`tests/compat/DIVERGENCES.md`). Exit 1.
    #[error("{0} is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text")]
    NotUtf8(String),
}

impl SubmitError {
    pub fn code(&self) -> u8 {
        match self {
            SubmitError::Usage(_) => 2,
            SubmitError::BadValue(_) | SubmitError::BadDate { .. } => 7,
            SubmitError::StrayWords(_) => 5,
            SubmitError::Script { code, .. } => *code,
            SubmitError::Rejected(_) | SubmitError::NotUtf8(_) => 1,
        }
    }

    /// The whole stderr text SGE prints for this error (`prog` is `qsub` or `qalter`).
    pub fn render(&self, prog: &str) -> String {
        match self {
            SubmitError::Usage(m) | SubmitError::BadValue(m) => format!("{prog}: {m}\n"),
            SubmitError::BadDate { detail, .. } => format!("\n{detail}\n{prog}: {self}\n"),
            SubmitError::StrayWords(n) => format!("{prog}: Unknown option \n\n").repeat(*n),
            SubmitError::Script { .. } => format!("{self}\n"),
            SubmitError::Rejected(_) => format!("{self}\nExiting.\n"),
            SubmitError::NotUtf8(_) => format!("{prog}: {self}\n"),
        }
    }
}

impl SubmitError {
    /// The whole stderr text and exit code of `qrsh` and `qlogin` (`prog`) for this error:
    /// they parse qsub's options, but report as interactive clients do, without qsub's name
    /// or `Unable to run job`, and exit 1.
    pub fn render_interactive(&self, prog: &str) -> (String, u8) {
        let text = match self {
            SubmitError::Usage(m) => format!("error: {m}\n"),
            SubmitError::BadValue(m) => format!("{m}\n"),
            SubmitError::BadDate { detail, .. } => format!("\n{detail}\nerror: {self}\n"),
            SubmitError::Rejected(m) => format!("{m}\n"),
            SubmitError::StrayWords(_) | SubmitError::Script { .. } | SubmitError::NotUtf8(_) => {
                return (self.render(prog), self.code());
            }
        };
        (text, 1)
    }
}

fn invalid_argument(option: &str, value: &str) -> SubmitError {
    SubmitError::BadValue(format!("invalid option argument \"{option} {value}\""))
}

fn numeric_invalid(value: &str) -> SubmitError {
    SubmitError::BadValue(format!(
        "Numerical value invalid!\nThe initial portion of string \"{value}\" contains no decimal number"
    ))
}

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
fn merge_mail(current: &str, add: &str) -> String {
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
fn push_resource(list: &mut Vec<ResourceRequest>, r: ResourceRequest) {
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
fn merge_paths(list: &mut Vec<PathSpec>, add: Vec<PathSpec>) {
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
fn merge_env(list: &mut Vec<EnvVar>, add: Vec<EnvVar>) {
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
            super::messages::sfq(name)
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

/// Which source an option came from, for `-q`'s "a later source replaces" rule.
fn same_source(a: &Origin, b: &Origin) -> bool {
    match (a, b) {
        (Origin::DefaultsFile(x), Origin::DefaultsFile(y)) => x == y,
        (Origin::Script(_), Origin::Script(_)) => true,
        (
            Origin::OptionsFile(_) | Origin::CommandLine,
            Origin::OptionsFile(_) | Origin::CommandLine,
        ) => true,
        _ => false,
    }
}

/// What the fold needs to know about the submit side.
#[derive(Debug, Clone, Copy)]
pub struct FoldContext<'a> {
    pub config: &'a ClusterConfig,
    /// The submit environment, in `environ` order (for `-V` and `-v NAME`).
    pub environ: &'a [(String, String)],
    /// The variables of the submit environment left out of `environ` because their name or
    /// value is not UTF-8 (names shown with U+FFFD for the bad bytes): `-V` leaves them out
    /// with a warning, `-v NAME` of one is refused.
    pub environ_not_utf8: &'a [String],
    /// The current working directory (for `-cwd`).
    pub cwd: &'a str,
}

/// A job attribute an option set, so `qalter` can turn exactly those into `SpecChange`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched {
    Name,
    Priority,
    HardResources,
    SoftResources,
    HardQueues,
    SoftQueues,
    MasterQueues,
    Pe,
    HoldJid,
    HoldJidAd,
    Stdout,
    Stderr,
    Stdin,
    MergeStderr,
    Interpreter,
    Cwd,
    StartTime,
    Deadline,
    TaskConcurrency,
    Restartable,
    Reserve,
    Env,
    Project,
    Account,
    MailOptions,
    MailList,
    Notify,
    Context,
    Binary,
    Shell,
    Now,
    Array,
    JobShare,
    Cluster,
    NoPreempt,
}

/// All options folded together.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    pub spec: JobSpec,
    /// `-h` (qsub): submit with a user hold.
    pub user_hold: bool,
    /// `-h hold_list` (qalter).
    pub hold_list: Option<Vec<char>>,
    /// `-shove` (qalter, gridspool's own): re-evaluate the jobs now (Qube!'s shove).
    pub shove: bool,
    pub terse: bool,
    pub sync: bool,
    pub verify: Verify,
    /// Attributes some option set, in the order first set.
    pub touched: Vec<Touched>,
    /// `-u user_list` (qalter).
    pub users: Vec<String>,
    /// Lines for stderr that do not stop the command (`-V` leaving a variable out).
    pub warnings: Vec<String>,
}

fn touch(touched: &mut Vec<Touched>, t: Touched) {
    if !touched.contains(&t) {
        touched.push(t);
    }
}

/// Folds options, in precedence order (defaults files, script, command line), into a job.
pub fn fold(options: &[ParsedOption], ctx: FoldContext<'_>) -> Result<Folded, SubmitError> {
    let mut f = Folded::default();
    let mut soft = false;
    let mut hard_q_origin: Option<Origin> = None;
    let mut soft_q_origin: Option<Origin> = None;
    let mut master_q_origin: Option<Origin> = None;
    for opt in options {
        let v = opt.values.first().map(String::as_str).unwrap_or("");
        let spec = &mut f.spec;
        match opt.spec.name {
            "-clear" => {
                f = Folded::default();
                soft = false;
                hard_q_origin = None;
                soft_q_origin = None;
                master_q_origin = None;
                continue;
            }
            "-a" => {
                spec.start_time = Some(date_time(v, "-a")?);
                touch(&mut f.touched, Touched::StartTime);
            }
            "-dl" => {
                spec.deadline = Some(date_time(v, "-dl")?);
                touch(&mut f.touched, Touched::Deadline);
            }
            "-ac" => {
                spec.context.extend(context_list(v));
                touch(&mut f.touched, Touched::Context);
            }
            "-sc" => {
                spec.context = context_list(v).into_iter().collect();
                touch(&mut f.touched, Touched::Context);
            }
            "-dc" => {
                for (name, _) in context_list(v) {
                    spec.context.remove(&name);
                }
                touch(&mut f.touched, Touched::Context);
            }
            "-A" => {
                spec.account = v.to_string();
                touch(&mut f.touched, Touched::Account);
            }
            "-b" => {
                spec.binary = yes_no("-b", v)?;
                touch(&mut f.touched, Touched::Binary);
            }
            "-shell" => {
                spec.shell = yes_no("-shell", v)?;
                touch(&mut f.touched, Touched::Shell);
            }
            "-cwd" => {
                spec.cwd = Some(ctx.cwd.to_string());
                touch(&mut f.touched, Touched::Cwd);
            }
            "-wd" => {
                spec.cwd = Some(v.to_string());
                touch(&mut f.touched, Touched::Cwd);
            }
            "-e" => {
                merge_paths(&mut spec.stderr, path_list(v));
                touch(&mut f.touched, Touched::Stderr);
            }
            "-o" => {
                merge_paths(&mut spec.stdout, path_list(v));
                touch(&mut f.touched, Touched::Stdout);
            }
            "-i" => {
                merge_paths(&mut spec.stdin, path_list(v));
                touch(&mut f.touched, Touched::Stdin);
            }
            "-S" => {
                merge_paths(&mut spec.interpreter, path_list(v));
                touch(&mut f.touched, Touched::Interpreter);
            }
            "-h" => {
                if opt.values.is_empty() {
                    f.user_hold = true;
                } else {
                    f.hold_list = Some(hold_list(v)?);
                }
            }
            "-hard" => soft = false,
            "-soft" => soft = true,
            "-hold_jid" => {
                for w in comma_list(v) {
                    if !spec.hold_jid.contains(&w) {
                        spec.hold_jid.push(w);
                    }
                }
                touch(&mut f.touched, Touched::HoldJid);
            }
            "-hold_jid_ad" => {
                for w in comma_list(v) {
                    if !spec.hold_jid_ad.contains(&w) {
                        spec.hold_jid_ad.push(w);
                    }
                }
                touch(&mut f.touched, Touched::HoldJidAd);
            }
            "-j" => {
                spec.merge_stderr = yes_no("-j", v)?;
                touch(&mut f.touched, Touched::MergeStderr);
            }
            "-l" => {
                let list = if soft {
                    touch(&mut f.touched, Touched::SoftResources);
                    &mut spec.soft_resources
                } else {
                    touch(&mut f.touched, Touched::HardResources);
                    &mut spec.hard_resources
                };
                for r in resource_list(v, ctx.config)? {
                    push_resource(list, r);
                }
            }
            "-q" => {
                let (list, origin) = if soft {
                    touch(&mut f.touched, Touched::SoftQueues);
                    (&mut spec.soft_queues, &mut soft_q_origin)
                } else {
                    touch(&mut f.touched, Touched::HardQueues);
                    (&mut spec.hard_queues, &mut hard_q_origin)
                };
                if origin
                    .as_ref()
                    .is_some_and(|o| !same_source(o, &opt.origin))
                {
                    list.clear();
                }
                *origin = Some(opt.origin.clone());
                for q in comma_list(v) {
                    if !list.contains(&q) {
                        list.push(q);
                    }
                }
            }
            "-masterq" => {
                if master_q_origin
                    .as_ref()
                    .is_some_and(|o| !same_source(o, &opt.origin))
                {
                    spec.master_queues.clear();
                }
                master_q_origin = Some(opt.origin.clone());
                for q in comma_list(v) {
                    if !spec.master_queues.contains(&q) {
                        spec.master_queues.push(q);
                    }
                }
                touch(&mut f.touched, Touched::MasterQueues);
            }
            "-M" => {
                for m in comma_list(v) {
                    if !spec.mail_list.contains(&m) {
                        spec.mail_list.push(m);
                    }
                }
                touch(&mut f.touched, Touched::MailList);
            }
            "-m" => {
                let (letters, none) = mail_options(v)?;
                spec.mail_options = if none {
                    String::new()
                } else {
                    merge_mail(&spec.mail_options, &letters)
                };
                touch(&mut f.touched, Touched::MailOptions);
            }
            "-N" => {
                job_name_syntax(v)?;
                spec.name = v.to_string();
                touch(&mut f.touched, Touched::Name);
            }
            "-notify" => {
                spec.notify = true;
                touch(&mut f.touched, Touched::Notify);
            }
            "-now" => {
                spec.now = yes_no("-now", v)?;
                touch(&mut f.touched, Touched::Now);
            }
            "-P" => {
                spec.project = Some(v.to_string());
                touch(&mut f.touched, Touched::Project);
            }
            "-p" => {
                spec.priority = priority(v)?;
                touch(&mut f.touched, Touched::Priority);
            }
            "-pe" => {
                let range = slot_range(opt.values.get(1).map_or("", String::as_str))?;
                spec.pe = Some(PeRequest {
                    name: v.to_string(),
                    range,
                });
                touch(&mut f.touched, Touched::Pe);
            }
            "-r" => {
                spec.restartable = Some(yes_no("-r", v)?);
                touch(&mut f.touched, Touched::Restartable);
            }
            "-R" => {
                spec.reserve = yes_no("-R", v)?;
                touch(&mut f.touched, Touched::Reserve);
            }
            "-sync" => f.sync = yes_no("-sync", v)?,
            "-t" => {
                spec.array = Some(task_range(v)?);
                touch(&mut f.touched, Touched::Array);
            }
            "-tc" => {
                spec.task_concurrency = task_concurrency(v)?;
                touch(&mut f.touched, Touched::TaskConcurrency);
            }
            "-terse" => f.terse = true,
            "-shove" => f.shove = true,
            "-js" => {
                spec.job_share = job_share(v)?;
                touch(&mut f.touched, Touched::JobShare);
            }
            "-cluster" => {
                spec.cluster = Some(cluster_path(v)?);
                touch(&mut f.touched, Touched::Cluster);
            }
            "-no_preempt" => {
                spec.no_preempt = yes_no("-no_preempt", v)?;
                touch(&mut f.touched, Touched::NoPreempt);
            }
            "-v" => {
                let copied = v.split(',').filter(|i| !i.is_empty() && !i.contains('='));
                if let Some(bad) = copied
                    .into_iter()
                    .find(|n| ctx.environ_not_utf8.iter().any(|b| b == n))
                {
                    return Err(SubmitError::NotUtf8(format!(
                        "the value of environment variable \"{bad}\", which -v copies,"
                    )));
                }
                merge_env(&mut spec.env, env_list(v, ctx.environ));
                touch(&mut f.touched, Touched::Env);
            }
            "-V" => {
                let all = ctx
                    .environ
                    .iter()
                    .map(|(k, val)| EnvVar {
                        name: k.clone(),
                        value: Some(val.clone()),
                    })
                    .collect();
                merge_env(&mut spec.env, all);
                for name in ctx.environ_not_utf8 {
                    let line = format!(
                        "warning: -V leaves out environment variable \"{name}\": its name or value is not valid UTF-8"
                    );
                    if !f.warnings.contains(&line) {
                        f.warnings.push(line);
                    }
                }
                touch(&mut f.touched, Touched::Env);
            }
            "-w" => {
                f.verify = verify_level(v)?;
                spec.verify_suitable_queues = f.verify.sge_number();
            }
            "-C" => spec.directive_prefix = Some(v.to_string()),
            "-u" => f.users.extend(comma_list(v)),
            // Handled before the fold: help, directive prefix, option files, task selection.
            "-help" | "-@" => {}
            other => {
                if opt.spec.support == Support::Unsupported {
                    return Err(SubmitError::Usage(format!(
                        "the {other} option is not supported by gridspool"
                    )));
                }
            }
        }
    }
    Ok(f)
}

/// A defaults or `-@` file's bytes as text; `file` names it in the refusal, with the line
/// that is not UTF-8 (SGE passes the bytes on).
pub fn option_file_text(file: &str, bytes: Vec<u8>) -> Result<String, SubmitError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count();
        SubmitError::NotUtf8(format!("line {line} of option file \"{file}\""))
    })
}

/// Reads a defaults or `-@` file's text into words: every line not starting with `#`.
pub fn option_file_words(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(split_words)
        .collect()
}

/// The `#$` (or `-C`) directives of a script: for every line starting with `prefix` in its
/// first bytes, the words after it, with the line number. SGE scans the whole script, not only
/// its head (a directive after the first command still counts: oracle-checked). The script
/// itself may hold any bytes (it is kept byte for byte); a directive must be UTF-8 text.
pub fn script_directives(
    script: &[u8],
    prefix: &str,
) -> Result<Vec<(usize, Vec<String>)>, SubmitError> {
    if prefix.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, line) in script.split(|b| *b == b'\n').enumerate() {
        if let Some(rest) = line.strip_prefix(prefix.as_bytes()) {
            let text = std::str::from_utf8(rest).map_err(|_| {
                SubmitError::NotUtf8(format!("line {} of the script, a {prefix} line,", i + 1))
            })?;
            let words = split_words(text);
            if !words.is_empty() {
                out.push((i + 1, words));
            }
        }
    }
    Ok(out)
}

/// Expands `-@ file` in a word list (before the script operand), recursively up to a depth,
/// reading each file with `read`.
pub fn expand_option_files(
    words: &[String],
    table: &'static [OptionSpec],
    read: &mut dyn FnMut(&str) -> Result<String, SubmitError>,
    depth: u32,
) -> Result<Vec<String>, SubmitError> {
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if !w.starts_with('-') || w == "-" {
            out.extend(words[i..].iter().cloned());
            break;
        }
        if w == "-@" {
            let Some(file) = words.get(i + 1) else {
                return Err(SubmitError::Usage("-@ option must have argument".into()));
            };
            if depth > 8 {
                return Err(SubmitError::Usage(format!(
                    "option files nest too deeply at \"{file}\""
                )));
            }
            let text = read(file)?;
            let inner = option_file_words(&text);
            out.extend(expand_option_files(&inner, table, read, depth + 1)?);
            i += 2;
            continue;
        }
        let n = match table.iter().find(|s| s.name == w).map(|s| s.arity) {
            Some(super::options::Arity::One) => 1,
            Some(super::options::Arity::Two) => 2,
            Some(super::options::Arity::Optional) => {
                usize::from(words.get(i + 1).is_some_and(|x| !x.starts_with('-')))
            }
            _ => 0,
        };
        let end = (i + 1 + n).min(words.len());
        out.extend(words[i..end].iter().cloned());
        i = end;
    }
    Ok(out)
}

/// Whether a `wc_queue` (`cq`, `cq@host`, `cq@@hostgroup`, wildcards allowed) names some
/// queue instance of the configuration.
pub fn queue_exists(config: &ClusterConfig, wc_queue: &str) -> bool {
    let (cq, host) = match wc_queue.split_once('@') {
        Some((c, h)) => (c, Some(h)),
        None => (wc_queue, None),
    };
    config
        .queues
        .iter()
        .filter(|q| pattern::matches(cq, &q.name))
        .any(|q| match host {
            None => true,
            Some(h) if h.starts_with('@') => q.hostlist.iter().any(|e| pattern::matches(h, e)),
            Some(h) => config
                .queue_hosts(q)
                .iter()
                .any(|x| pattern::matches(h, &x.name)),
        })
}

/// Whether a host named in a path list is known: configured, this host, or resolvable.
fn host_known(config: &ClusterConfig, host: &str, this_host: &str) -> bool {
    if config.host(host).is_some() || host == this_host {
        return true;
    }
    use std::net::ToSocketAddrs;
    (host, 0u16).to_socket_addrs().is_ok()
}

/// Who submits, with what the configuration grants.
#[derive(Debug, Clone)]
pub struct SubmitterRights {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub operator: bool,
    pub manager: bool,
    pub host: String,
}

/// qmaster's acceptance checks of a new job, in SGE's order, with its words.
pub fn validate_job(
    spec: &JobSpec,
    config: &ClusterConfig,
    who: &SubmitterRights,
) -> Result<(), SubmitError> {
    if who.uid < config.min_uid {
        return Err(SubmitError::Rejected(format!(
            "job rejected: your user id {} is lower than minimum user id {} of cluster configuration",
            who.uid, config.min_uid
        )));
    }
    if who.gid < config.min_gid {
        return Err(SubmitError::Rejected(format!(
            "job rejected: your group id {} is lower than minimum group id {} of cluster configuration",
            who.gid, config.min_gid
        )));
    }
    // A concurrency limit for a job that is not an array (checked on SGE 8.1.9).
    if spec.task_concurrency.is_some() && spec.array.is_none() {
        return Err(SubmitError::Rejected(
            "invalid \"task concurrency\" value in job request".into(),
        ));
    }
    job_name_valid(&spec.name)?;
    if spec.array.is_some_and(|r| r.len() > MAX_ARRAY_TASKS) {
        return Err(SubmitError::Rejected(format!(
            "job rejected: you tried to submit a job with more than {MAX_ARRAY_TASKS} tasks"
        )));
    }
    if spec.priority > 0 && !who.operator {
        return Err(SubmitError::Rejected(
            "job rejected: positive submission priority requires operator privileges".into(),
        ));
    }
    validate_attributes(spec, config, who)
}

/// The checks `qsub` and `qalter` share: references to configured objects.
pub fn validate_attributes(
    spec: &JobSpec,
    config: &ClusterConfig,
    who: &SubmitterRights,
) -> Result<(), SubmitError> {
    if spec.deadline.is_some() && !who.manager {
        // gridspool has no deadlineusers list: as in SGE's default (empty list), only
        // managers may set deadlines.
        return Err(SubmitError::Rejected(format!(
            "job rejected: the user \"{}\" is not a deadline initiation user",
            who.user
        )));
    }
    if let Some(p) = &spec.project
        && !config.projects.iter().any(|x| &x.name == p)
    {
        return Err(SubmitError::Rejected(format!(
            "job rejected: the requested project \"{p}\" does not exist"
        )));
    }
    if let Some(pe) = &spec.pe {
        if !config
            .parallel_environments
            .iter()
            .any(|p| pattern::matches(&pe.name, &p.name))
        {
            return Err(SubmitError::Rejected(format!(
                "job rejected: the requested parallel environment \"{}\" does not exist",
                pe.name
            )));
        }
        if pe.range.min == 0 || pe.range.max == 0 {
            return Err(SubmitError::Rejected(
                "\"job\" rejected: pe range must be greater than zero".into(),
            ));
        }
    }
    let mut unknown = Vec::new();
    for q in spec.hard_queues.iter().chain(&spec.soft_queues) {
        if !queue_exists(config, q) {
            unknown.push(format!(
                "Job was rejected because job requests unknown queue \"{q}\""
            ));
        }
    }
    if !spec.master_queues.is_empty() {
        let mut lines = Vec::new();
        if spec.pe.is_none() {
            lines.push(
                "job rejected: specification of master queue is not allowed for non-parallel jobs"
                    .to_string(),
            );
        }
        for q in &spec.master_queues {
            if !queue_exists(config, q) {
                lines.push(format!(
                    "Job was rejected because job requests unknown queue \"{q}\""
                ));
            }
        }
        if !lines.is_empty() {
            return Err(SubmitError::Rejected(lines.join("\n")));
        }
    }
    if !unknown.is_empty() {
        return Err(SubmitError::Rejected(unknown.join("\n")));
    }
    if !spec.hold_jid_ad.is_empty() && spec.array.is_none() {
        return Err(SubmitError::Rejected(
            "Can only specify \"-hold_jid_ad\" option with an array job (using \"-t\" option)"
                .into(),
        ));
    }
    for p in spec
        .stdout
        .iter()
        .chain(&spec.stderr)
        .chain(&spec.stdin)
        .chain(&spec.interpreter)
    {
        if let Some(h) = &p.host
            && !host_known(config, h, &who.host)
        {
            return Err(SubmitError::Rejected(format!(
                "can't resolve hostname \"{h}\""
            )));
        }
    }
    Ok(())
}

/// The outcome of `-w` verification: whether some queue could ever run the job, and SGE's
/// reasons when none can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub suitable: bool,
    pub reasons: Vec<String>,
}

fn seconds(v: &str) -> Option<f64> {
    if v.eq_ignore_ascii_case("infinity") {
        return Some(f64::INFINITY);
    }
    time_value(v).and_then(|s| s.parse::<f64>().ok())
}

/// Checks the job against the configuration as an empty cluster (SGE's `-w e`/`-w v`): a
/// queue it may use, on a host it may use, offering its slots, its PE and its fixed resources.
pub fn verify_against_config(spec: &JobSpec, config: &ClusterConfig, job: u32) -> Verification {
    let wanted = |name: &str| spec.hard_resources.iter().find(|r| r.name == name);
    let needed = spec.pe.as_ref().map_or(1, |p| p.range.min.max(1));
    let mut best_offer = 0u32;
    let mut pe_reason = None;
    for q in &config.queues {
        if !spec.hard_queues.is_empty()
            && !spec.hard_queues.iter().any(|wq| {
                let cq = wq.split('@').next().unwrap_or(wq);
                pattern::matches(cq, &q.name)
            })
        {
            continue;
        }
        if let Some(r) = wanted("qname")
            && !pattern::matches(&r.value, &q.name)
        {
            continue;
        }
        let limits_ok = ["h_rt", "s_rt", "h_cpu", "s_cpu"].iter().all(|lim| {
            match (wanted(lim), q.limits.get(*lim)) {
                (Some(r), Some(l)) => match (seconds(&r.value), seconds(l)) {
                    (Some(a), Some(b)) => a <= b,
                    _ => true,
                },
                _ => true,
            }
        });
        if !limits_ok {
            continue;
        }
        let hosts: Vec<_> = config
            .queue_hosts(q)
            .into_iter()
            .filter(|h| wanted("hostname").is_none_or(|r| pattern::matches(&r.value, &h.name)))
            .filter(|h| wanted("arch").is_none_or(|r| pattern::matches(&r.value, &h.arch)))
            .collect();
        if hosts.is_empty() {
            continue;
        }
        let per_host = |h: &crate::config::HostConfig| q.slots.min(h.slots);
        match &spec.pe {
            None => {
                return Verification {
                    suitable: true,
                    reasons: Vec::new(),
                };
            }
            Some(pe) => {
                let Some(pconf) = config
                    .parallel_environments
                    .iter()
                    .find(|p| pattern::matches(&pe.name, &p.name) && q.pe_list.contains(&p.name))
                else {
                    continue;
                };
                let offer = if pconf.allocation_rule == "$pe_slots" {
                    hosts
                        .iter()
                        .map(|h| per_host(h))
                        .filter(|s| *s >= needed)
                        .max()
                        .unwrap_or(0)
                } else {
                    hosts.iter().map(|h| per_host(h)).sum()
                }
                .min(pconf.slots);
                if offer >= needed {
                    return Verification {
                        suitable: true,
                        reasons: Vec::new(),
                    };
                }
                best_offer = best_offer.max(offer);
                pe_reason = Some(pconf.name.clone());
            }
        }
    }
    let reasons = pe_reason
        .map(|pe| {
            vec![format!(
                "Job {job} cannot run in PE \"{pe}\" because it only offers {best_offer} slots"
            )]
        })
        .unwrap_or_default();
    Verification {
        suitable: false,
        reasons,
    }
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

    #[test]
    fn queues_and_verification() {
        let c = config();
        assert!(queue_exists(&c, "all.q"));
        assert!(queue_exists(&c, "*@vm"));
        assert!(queue_exists(&c, "all.q@@allhosts"));
        assert!(!queue_exists(&c, "nosuch.q"));
        assert!(!queue_exists(&c, "all.q@nosuchhost"));
        let mut spec = JobSpec {
            pe: Some(PeRequest {
                name: "smp".into(),
                range: SlotRange { min: 64, max: 64 },
            }),
            ..JobSpec::default()
        };
        let v = verify_against_config(&spec, &c, 67);
        assert!(!v.suitable);
        assert_eq!(
            v.reasons,
            ["Job 67 cannot run in PE \"smp\" because it only offers 0 slots"]
        );
        spec.pe = None;
        assert!(verify_against_config(&spec, &c, 1).suitable);
    }

    #[test]
    fn directives_are_found_anywhere_at_line_start() {
        let script =
            b"#!/bin/sh\n#$ -N first\necho hi\n#$ -p -5\n  #$ -A indented\n#$-A nospace\r\n";
        let d = script_directives(script, "#$").expect("text");
        let words: Vec<Vec<String>> = d.into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            words,
            vec![vec!["-N", "first"], vec!["-p", "-5"], vec!["-A", "nospace"]]
        );
        assert!(script_directives(script, "").expect("none").is_empty());
        let e = script_directives(b"#!/bin/sh\n\xff\n#$ -N bad\xffname\n", "#$");
        assert_eq!(
            e.expect_err("not text").to_string(),
            "line 3 of the script, a #$ line, is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text"
        );
    }
}

/// Issue 12: hostile input to the submission grammar never panics. Words are option names of
/// qsub's and qalter's tables mixed with values that broke parsers before (empty, lone
/// separators, zeros, huge numbers) and arbitrary text; files and scripts are arbitrary bytes.
#[cfg(test)]
mod hostile {
    use super::*;
    use crate::compat::options::{OperandMode, parse};
    use crate::compat::qsub_options::{QALTER_OPTIONS, QSUB_OPTIONS};
    use proptest::prelude::*;

    const TRICKY: &[&str] = &[
        "",
        ",",
        ",,",
        "-",
        "--",
        "0",
        "0-0",
        "1-3:0",
        "5-1",
        "1-",
        "-1",
        ":",
        "::",
        "=",
        "a=",
        "=b",
        "4294967296",
        "99999999999999999999",
        "1-4294967295:4294967295",
        "@",
        "a@",
        "@b",
        "y",
        "n",
        "yes",
        "\u{feff}",
        "é",
        "\u{fffd}",
        "1.2",
        "1.",
        ".5",
        "h_rt=",
        "h_rt=::",
        "smp",
        "1-2,",
        "x,,y",
        "*",
        "[",
        "\\",
        "'",
        "\"",
        "#",
        "-t",
        "-N",
        "-hold_jid",
    ];

    fn word() -> impl Strategy<Value = String> {
        let names: Vec<String> = QSUB_OPTIONS
            .iter()
            .chain(QALTER_OPTIONS)
            .map(|s| s.name.to_string())
            .collect();
        prop_oneof![
            proptest::sample::select(names),
            proptest::sample::select(TRICKY).prop_map(String::from),
            any::<String>(),
            proptest::collection::vec(any::<u8>(), 0..12)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ]
    }

    proptest! {
        #[test]
        fn options_from_any_words_parse_check_and_fold_or_refuse(
            words in proptest::collection::vec(word(), 0..12),
        ) {
            let config = ClusterConfig::parse(&ClusterConfig::default_text("vm", 2))
                .expect("config");
            let environ = vec![("HOME".to_string(), "/home/u".to_string())];
            let not_utf8 = vec!["BAD".to_string()];
            for (table, prog) in [(QSUB_OPTIONS, "qsub"), (QALTER_OPTIONS, "qalter")] {
                for mode in [OperandMode::StopAtFirst, OperandMode::Interleaved] {
                    let Ok(parsed) = parse(table, &words, mode, &Origin::CommandLine) else {
                        continue;
                    };
                    if parsed.options.iter().any(|o| check_option(o, prog).is_err()) {
                        continue;
                    }
                    let ctx = FoldContext {
                        config: &config,
                        environ: &environ,
                        environ_not_utf8: &not_utf8,
                        cwd: "/tmp",
                    };
                    if let Ok(folded) = fold(&parsed.options, ctx) {
                        let _ = verify_against_config(&folded.spec, &config, 1);
                    }
                }
            }
        }

        #[test]
        fn option_files_and_scripts_of_any_bytes_read_or_refuse(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            match option_file_text("f", bytes.clone()) {
                Ok(text) => {
                    let _ = option_file_words(&text);
                }
                Err(e) => prop_assert_eq!(e.code(), 1),
            }
            for prefix in ["#$", "", "#", "\u{e9}"] {
                match script_directives(&bytes, prefix) {
                    Ok(lines) => {
                        for (_, words) in lines {
                            let _ = parse(
                                QSUB_OPTIONS,
                                &words,
                                OperandMode::Interleaved,
                                &Origin::Script(1),
                            );
                        }
                    }
                    Err(e) => prop_assert_eq!(e.code(), 1),
                }
            }
            let _ = split_words(&String::from_utf8_lossy(&bytes));
        }
    }
}
