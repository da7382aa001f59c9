//! `qacct`: reports from the accounting file, as SGE 8.1.9's `qacct(1)` prints them.
//!
//! The file is streamed once: each record is filtered, shown (`-j`) or added to the summary
//! and to its group (a hash map keyed by the grouping columns, sorted once for printing, so a
//! million records cost a million lookups and constant memory per group). Output matches the real `qacct`
//! byte for byte (tests/compat/qacct); SGE's own quirks are kept where users can see them —
//! rows are only printed when the total wallclock is non-zero, a filter value sets its
//! column's width — and options gridspool cannot honour are refused, never ignored.

use super::{ClientEnv, Output};
use crate::acct::report::{self, Totals};
use crate::acct::{AccountingRecord, Entry, Reader};
use crate::compat::docs::{SyntaxItem, ValueHint};
use crate::compat::options::{self, Arity, OperandMode, OptionSpec, Origin, help_lines};
use crate::compat::pattern;
use crate::config::{ClusterConfig, ComplexType};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// `qacct`'s options in SGE 8.1.9's `-help` order: the one table behind parsing, `-help`,
/// and the generated man page and completions.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-ar",
        Arity::Optional,
        "[-ar [ar_id]]",
        "list [matching] advance reservations",
    ),
    OptionSpec::new(
        "-A",
        Arity::Optional,
        "[-A [account_string]]",
        "list [matching] account",
    ),
    OptionSpec::new("-b", Arity::One, "[-b begin_time]", "jobs started after"),
    OptionSpec::new(
        "-d",
        Arity::One,
        "[-d days]",
        "jobs started during the last d days",
    ),
    OptionSpec::new(
        "-D",
        Arity::Optional,
        "[-D [department]]",
        "list [matching] department",
    ),
    OptionSpec::new("-e", Arity::One, "[-e end_time]", "jobs started before"),
    OptionSpec::new("-E", Arity::Flag, "[-E]", "select job end time, not start"),
    OptionSpec::new(
        "-f",
        Arity::One,
        "[[-f] acctfile]",
        "use alternate accounting file",
    ),
    OptionSpec::new(
        "-g",
        Arity::Optional,
        "[-g [groupid|groupname]]",
        "list [matching] group",
    ),
    OptionSpec::new("-h", Arity::Optional, "[-h [host]]", "list [matching] host"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "display this message"),
    OptionSpec::new(
        "-j",
        Arity::Optional,
        "[-j [job_id|job_name|pattern]]",
        "list all [matching] jobs",
    ),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l attr=val,...]",
        "request given complex attributes",
    ),
    OptionSpec::new("-m", Arity::Flag, "[-m]", "list only master tasks"),
    OptionSpec::new(
        "-o",
        Arity::Optional,
        "[-o [owner]]",
        "list [matching] owner",
    ),
    OptionSpec::new(
        "-u",
        Arity::Optional,
        "[-u [owner]]",
        "list [matching] owner",
    ),
    OptionSpec::new(
        "-pe",
        Arity::Optional,
        "[-pe [pe_name]]",
        "list [matching] parallel environment",
    ),
    OptionSpec::new(
        "-P",
        Arity::Optional,
        "[-P [project]]",
        "list [matching] project",
    ),
    OptionSpec::new(
        "-q",
        Arity::Optional,
        "[-q [queue]]",
        "list [matching] queue",
    ),
    OptionSpec::new(
        "-slots",
        Arity::Optional,
        "[-slots [slots]]",
        "list [matching] job slots",
    ),
    // Optional in the table so that a missing list gets SGE's own message.
    OptionSpec::new(
        "-t",
        Arity::Optional,
        "[-t taskid[-taskid[:step]]]",
        "list all [matching] tasks (requires -j option)",
    ),
];

/// `qacct`'s man page and completions (its `-help` keeps SGE's own layout: [`usage`]).
pub const DOC: crate::compat::docs::CommandDoc = crate::compat::docs::CommandDoc {
    name: "qacct",
    summary: "report and account for gridspool usage",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Files,
    syntax: &[
        SyntaxItem {
            name: "begin_time, end_time",
            definition: "[[CC]YY]MMDDhhmm[.SS], in local time",
        },
        SyntaxItem {
            name: "queue",
            definition: "cluster_queue|queue_instance|queue_domain|pattern",
        },
    ],
    description: &[
        "qacct reads the accounting file $SGE_ROOT/$SGE_CELL/common/accounting, which sched_d appends one record to for every finished job or array task, in SGE 8.1.9's format (sge_accounting(5)), and prints either a summary or the records of selected jobs.",
        "Without -j it prints the total wallclock, user and system cpu, cpu, memory, io and iow of the selected records; each of -A, -ar, -D, -g, -h, -o, -P, -pe, -q and -slots adds a grouping column (and, with a value, selects the records that match it). As in SGE, the table has no rows when the selected records' total wallclock is zero (a group of its own can have none: the jobs that never ran).",
        "With -j it prints every selected record in SGE's long format, one block per job or task, separated by lines of equals signs.",
        "-json, a gridspool extension (not listed by -help): with -j, each selected record as one line of JSON with the fields and units of accounting(5) (qname, hostname, group, owner, job_name, job_number, account, priority, submission_time, start_time and end_time in seconds since the epoch, failed, exit_status, ru_wallclock, ru_utime, ru_stime and the other ru_ fields, project, department, granted_pe, slots, task_number, cpu, mem, io, category, iow, pe_taskid, maxvmem, arid, ar_submission_time); without -j, one JSON object {\"totals\": {...}, \"groups\": [...]} with wallclock, utime, stime, cpu, mem, io and iow, and per group its grouping columns (host, queue, group, owner, project, department, pe, slots, ar, account).",
        "The file is streamed once; records that cannot be parsed are reported on standard error by line number and skipped.",
    ],
    option_details: &[
        (
            "-ar",
            "The advance reservation each job ran in (qrsub), 0 for none; with an id, only that reservation's jobs. As in SGE, -ar 0 neither selects nor groups.",
        ),
        (
            "-b",
            "Only records of jobs started at or after begin_time (with -E: ended). -e bounds from the other side, -d counts days back from now.",
        ),
        (
            "-f",
            "Reads another accounting file, for example a rotated one.",
        ),
        (
            "-l",
            "Only jobs whose queue instance, as the cell has it now, offers every attr=val (compared as qstat -l compares them, with all its slots free). The records of queue instances that no longer exist are left out and counted (N jobs ignored for accounting. Jobs' master queue no longer exists.); so are, without being counted, those of jobs that never started. A resource the cell does not have or a value not of its type is an error, as SGE reports it: at the first record whose queue still exists.",
        ),
        (
            "-j",
            "A job number, a job name or a wildcard pattern over job names; without a value every selected record is listed. With -t, only the listed tasks of an array job.",
        ),
    ],
    value_hints: &[
        ("-f", ValueHint::Files),
        ("-o", ValueHint::Users),
        ("-u", ValueHint::Users),
    ],
    exit_status: &[
        ("0", "The report was printed."),
        (
            "1",
            "No record matched a -j selection (error: job id 42 not found), the command line is wrong, or the accounting file cannot be read.",
        ),
    ],
    compatibility: &[
        "-l compares with the cell's configuration and the hosts' last load reports, as qstat -l and qselect -l do, where SGE asks its qmaster.",
        "ru_* fields that Linux does not report are 0, as in SGE on Linux.",
    ],
    see_also: &["qsub", "qstat", "sched_d", "sge_accounting"],
};

/// `qacct -help`, exactly as SGE 8.1.9 prints it.
pub fn usage() -> String {
    format!(
        "SGE 8.1.9\nusage: qacct [options]\n{}\n begin_time, end_time              [[CC]YYMMDDhhmm[.SS]\n queue                             [cluster_queue|queue_instance|queue_domain|pattern]\n",
        help_lines(OPTIONS, " ", 34)
    )
}

/// A grouping column: shown when its option is given; filtered when given with a value.
#[derive(Debug, Clone, Default, PartialEq)]
struct Column {
    shown: bool,
    filter: Option<String>,
}

/// Which job `-j` asks for.
#[derive(Debug, Clone, PartialEq)]
enum JobSelect {
    All,
    Number(u32),
    Name(String),
}

/// `-t first[-last[:step]]`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TaskRange {
    first: u32,
    last: u32,
    step: u32,
}

impl TaskRange {
    fn contains(&self, task: u32) -> bool {
        task >= self.first && task <= self.last && (task - self.first).is_multiple_of(self.step)
    }
}

/// The parsed command line.
#[derive(Debug, Clone, Default)]
struct Options {
    host: Column,
    queue: Column,
    /// `-q` patterns, each matched against `queue@host`.
    queue_patterns: Vec<String>,
    group: Column,
    owner: Column,
    project: Column,
    department: Column,
    pe: Column,
    slots: Column,
    /// `-ar`: the advance reservation a job ran in (0: none).
    ar: Column,
    account: Column,
    job: Option<JobSelect>,
    tasks: Option<TaskRange>,
    begin: Option<i64>,
    end: Option<i64>,
    days: Option<i64>,
    by_end_time: bool,
    master_only: bool,
    /// `-l name=value,…`: only jobs whose queue instance, as the cell has it now, offers
    /// these.
    requests: Vec<(String, String)>,
    file: Option<PathBuf>,
}

/// Why the command line was refused.
#[derive(Debug, Clone, PartialEq)]
enum UsageError {
    /// SGE prints the usage alone, exit 1.
    Plain,
    /// A message, then the usage.
    Message(String),
    /// SGE's date parser complains on stderr (after an empty line), then the usage.
    BadDate(crate::time::DateTimeError),
}

fn group_name(value: String) -> String {
    match value.parse::<u32>() {
        Ok(gid) => nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .ok()
            .flatten()
            .map_or(value, |g| g.name),
        Err(_) => value,
    }
}

fn parse_args(args: &[String], now: i64) -> Result<(Options, bool), UsageError> {
    // SGE's qacct answers a bad or incomplete option with its usage alone.
    let parsed = options::parse(
        OPTIONS,
        args,
        OperandMode::Interleaved,
        &Origin::CommandLine,
    )
    .map_err(|_| UsageError::Plain)?;
    if !parsed.operands.is_empty() {
        return Err(UsageError::Plain);
    }
    let mut o = Options::default();
    let mut help = false;
    for opt in &parsed.options {
        let column = |c: &mut Column, v: Option<String>| {
            c.shown = true;
            if v.is_some() {
                c.filter = v;
            }
        };
        let value = opt.values.first().cloned();
        match opt.spec.name {
            "-o" | "-u" => column(&mut o.owner, value),
            "-g" => column(&mut o.group, value.map(group_name)),
            "-q" => {
                o.queue.shown = true;
                if let Some(q) = value {
                    // SGE shows the host column too when a queue is named.
                    o.host.shown = true;
                    let q = match q.split_once('@') {
                        None => format!("{q}@*"),
                        Some((_, "")) => format!("{q}*"),
                        Some(_) => q,
                    };
                    o.queue_patterns.push(q);
                }
            }
            "-h" => column(&mut o.host, value),
            "-j" => {
                o.job = match value {
                    None => Some(JobSelect::All),
                    Some(v) => match leading_number(&v) {
                        Some(n) if n > 0 => Some(JobSelect::Number(n)),
                        // Job 0 does not exist: SGE selects nothing and prints the summary.
                        Some(_) => None,
                        None => Some(JobSelect::Name(v)),
                    },
                };
            }
            "-t" => {
                let v = value.ok_or_else(|| {
                    UsageError::Message("-t option must have a list of task id ranges".into())
                })?;
                o.tasks = Some(parse_task_range(&v).ok_or_else(|| {
                    UsageError::Message(format!("invalid list of task id ranges: {v}"))
                })?);
            }
            "-b" | "-e" => {
                let v = value.unwrap_or_default();
                let t = crate::time::sge_date_time(&v, now).map_err(UsageError::BadDate)?;
                if opt.spec.name == "-b" {
                    o.begin = Some(t);
                } else {
                    o.end = Some(t);
                }
            }
            "-d" => {
                let v = value.unwrap_or_default();
                o.days = Some(v.parse::<u32>().map_err(|_| UsageError::Plain)?.into());
            }
            "-E" => o.by_end_time = true,
            "-m" => o.master_only = true,
            "-P" => column(&mut o.project, value),
            "-D" => column(&mut o.department, value),
            "-pe" => column(&mut o.pe, value),
            "-slots" => match value {
                None => column(&mut o.slots, None),
                // `atol`: a value that is not a positive number neither filters nor shows.
                Some(v) => {
                    if let Some(n) = leading_number(&v).filter(|n| *n > 0) {
                        column(&mut o.slots, Some(n.to_string()));
                    }
                }
            },
            "-ar" => match value {
                None => column(&mut o.ar, None),
                // `sscanf("%u")`: `11x` is reservation 11; 0 neither filters nor shows.
                Some(v) => match scanned_number(&v) {
                    Some(0) => {}
                    Some(n) => column(&mut o.ar, Some(n.to_string())),
                    None => {
                        return Err(UsageError::Message(
                            "invalid advance reservation id, must be an unsigned integer".into(),
                        ));
                    }
                },
            },
            "-A" => column(&mut o.account, value),
            "-f" => o.file = value.map(PathBuf::from),
            "-l" => {
                for item in value
                    .unwrap_or_default()
                    .split(',')
                    .filter(|i| !i.is_empty())
                {
                    let Some((name, v)) = item.split_once('=') else {
                        return Err(UsageError::Message(format!(
                            "error: denied: missing value for resource \"{item}\""
                        )));
                    };
                    // SGE keeps the last request of a resource.
                    o.requests.retain(|(n, _)| n != name);
                    o.requests.push((name.to_string(), v.to_string()));
                }
            }
            "-help" => help = true,
            _ => return Err(UsageError::Plain),
        }
    }
    Ok((o, help))
}

/// The leading decimal digits as a number (`sscanf("%u")`: `39abc` is job 39).
fn leading_number(s: &str) -> Option<u32> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// `sscanf("%u")` proper, as `-ar` reads its value: blanks and a `+` may come first.
fn scanned_number(s: &str) -> Option<u32> {
    let t = s.trim_start();
    leading_number(t.strip_prefix('+').unwrap_or(t))
}

fn parse_task_range(s: &str) -> Option<TaskRange> {
    let (range, step) = match s.split_once(':') {
        Some((r, st)) => (r, st.parse::<u32>().ok()?),
        None => (s, 1),
    };
    let (first, last) = match range.split_once('-') {
        Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
        None => {
            let n = range.parse::<u32>().ok()?;
            (n, n)
        }
    };
    if first == 0 || last < first || step == 0 {
        return None;
    }
    Some(TaskRange { first, last, step })
}

/// The grouping key of a record: one slot per column, empty (0) when the column is not
/// shown: host, queue, group, owner, project, department, PE, slots, advance reservation and
/// account. The account is the last element but is not sorted: see [`Groups`].
type Key = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    u32,
    u32,
    String,
);

/// The sorted key without the account.
type SortKey = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    u32,
    u32,
);

/// Groups in SGE's order: sorted by host, queue, group, owner, project, department, PE,
/// slots and advance reservation; accounts are not sorted — SGE inserts a new account in front of the others of the
/// same sorted key, so they appear newest first. Collected in a hash map (one lookup per
/// record), sorted once for printing.
#[derive(Debug, Default)]
struct Groups {
    map: HashMap<SortKey, Vec<(String, Totals)>>,
}

impl Groups {
    fn add(&mut self, k: Key, r: &Totals) {
        let (h, q, g, o, p, d, pe, sl, ar, account) = k;
        let run = self.map.entry((h, q, g, o, p, d, pe, sl, ar)).or_default();
        match run.iter_mut().find(|(a, _)| *a == account) {
            Some((_, t)) => t.merge(r),
            None => run.insert(0, (account, *r)),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (Key, &Totals)> {
        let mut keys: Vec<&SortKey> = self.map.keys().collect();
        keys.sort();
        keys.into_iter()
            .filter_map(|k| self.map.get_key_value(k))
            .flat_map(|(k, run)| {
                run.iter().map(move |(a, t)| {
                    (
                        (
                            k.0.clone(),
                            k.1.clone(),
                            k.2.clone(),
                            k.3.clone(),
                            k.4.clone(),
                            k.5.clone(),
                            k.6.clone(),
                            k.7,
                            k.8,
                            a.clone(),
                        ),
                        t,
                    )
                })
            })
    }
}

/// The grouping key of a record, taking its strings (the record is not needed after).
fn key(o: &Options, r: AccountingRecord) -> Key {
    let s = |c: &Column, v: String| if c.shown { v } else { String::new() };
    (
        s(&o.host, r.hostname),
        s(&o.queue, r.qname),
        s(&o.group, r.group),
        s(&o.owner, r.owner),
        s(&o.project, r.project),
        s(&o.department, r.department),
        s(&o.pe, r.granted_pe),
        if o.slots.shown { r.slots } else { 0 },
        if o.ar.shown { r.arid } else { 0 },
        s(&o.account, r.account),
    )
}

impl Options {
    /// SGE's "summary view": some column is shown without a filter value, so records are
    /// grouped by it.
    fn summary_view(&self) -> bool {
        [
            &self.host,
            &self.queue,
            &self.group,
            &self.owner,
            &self.project,
            &self.department,
            &self.pe,
            &self.slots,
            &self.ar,
            &self.account,
        ]
        .iter()
        .any(|c| c.shown && c.filter.is_none())
    }

    fn grouped(&self) -> bool {
        [
            &self.host,
            &self.queue,
            &self.group,
            &self.owner,
            &self.project,
            &self.department,
            &self.pe,
            &self.slots,
            &self.ar,
            &self.account,
        ]
        .iter()
        .any(|c| c.shown)
    }

    /// The time window `[begin, end]` on start (or, with `-E`, end) times, with `-d`
    /// counting from `-b`, back from `-e`, or back from now, as SGE does.
    fn window(&self, now: i64) -> (Option<i64>, Option<i64>) {
        let day = 24 * 3600;
        let end = self.end.or_else(|| match (self.days, self.begin) {
            (Some(d), Some(b)) => Some(b + d * day),
            _ => None,
        });
        let begin = self.begin.or_else(|| match (self.days, self.end) {
            (Some(d), Some(e)) => Some(e - d * day),
            (Some(d), None) => Some(now - d * day),
            _ => None,
        });
        (begin, end)
    }

    fn selects(&self, r: &AccountingRecord, begin: Option<i64>, end: Option<i64>) -> bool {
        let t = if self.by_end_time {
            r.end_time
        } else {
            r.start_time
        };
        let eq = |c: &Column, v: &str| c.filter.as_deref().is_none_or(|f| f == v);
        begin.is_none_or(|b| t >= b)
            && end.is_none_or(|e| t <= e)
            && (!self.master_only || r.is_master_task())
            && eq(&self.owner, &r.owner)
            && eq(&self.group, &r.group)
            && (self.queue_patterns.is_empty()
                || self
                    .queue_patterns
                    .iter()
                    .any(|p| pattern::matches(p, &format!("{}@{}", r.qname, r.hostname))))
            && eq(&self.project, &r.project)
            && eq(&self.department, &r.department)
            && eq(&self.pe, &r.granted_pe)
            && self
                .slots
                .filter
                .as_deref()
                .is_none_or(|f| f == r.slots.to_string())
            && self
                .host
                .filter
                .as_deref()
                .is_none_or(|h| h.eq_ignore_ascii_case(&r.hostname))
            && self
                .ar
                .filter
                .as_deref()
                .is_none_or(|f| f == r.arid.to_string())
            && eq(&self.account, &r.account)
    }

    fn job_selects(&self, r: &AccountingRecord) -> bool {
        let task_ok = self.tasks.is_none_or(|t| t.contains(r.task_number));
        match &self.job {
            None => false,
            Some(JobSelect::All) => true,
            Some(JobSelect::Number(n)) => r.job_number == *n && task_ok,
            Some(JobSelect::Name(p)) => pattern::matches(p, &r.job_name) && task_ok,
        }
    }
}

/// The queue instances `-l` reads, as the cell has them now (SGE asks its qmaster): every
/// instance, those that offer the requests (compared as `qstat -l` and `qselect -l` do, on an
/// empty cell: every slot free), and what is wrong with the requests, which SGE says only at
/// the first record whose queue instance still exists.
struct QueueSelection {
    all: HashSet<(String, String)>,
    selected: HashSet<(String, String)>,
    invalid: Option<String>,
}

/// A record's queue instance in the form [`QueueSelection`] holds: host names compare
/// without case.
fn instance_key(queue: &str, host: &str) -> (String, String) {
    (queue.to_string(), host.to_ascii_lowercase())
}

impl QueueSelection {
    fn of_cell(env: &ClientEnv, requests: &[(String, String)]) -> Result<Self, String> {
        use crate::compat::qstat::{HostLoad, QstatArgs, View, queues};
        let now = crate::time::now();
        let host_loads = super::qhost::host_loads(env, &super::qhost::proc_dir(), now)?;
        let load = HostLoad::local(&env.host);
        let instance_states = env.spool.queue_instance_states();
        let view = View {
            jobs: &[],
            ended: &[],
            config: &env.config,
            caller: &env.caller.user,
            now,
            load: &load,
            host_loads: &host_loads,
            storage_blocked: None,
            instance_states: &instance_states,
            estimates: None,
        };
        let list: Vec<String> = requests.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let instances = |words: &[&str]| -> Result<HashSet<(String, String)>, String> {
            let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            let args = QstatArgs::parse(&words).map_err(|e| format!("error: {e}"))?;
            Ok(queues::instances(&args, &view)
                .iter()
                .map(|i| instance_key(&i.queue.name, &i.host))
                .collect())
        };
        let invalid = requests
            .iter()
            .find_map(|(name, value)| invalid_request(&env.config, name, value));
        Ok(QueueSelection {
            all: instances(&["-f"])?,
            selected: if invalid.is_some() {
                HashSet::new()
            } else {
                instances(&["-f", "-l", &list.join(",")])?
            },
            invalid,
        })
    }
}

/// SGE's complaint about one `-l` request, if any: a resource the cell does not have, a
/// value that is not of the resource's type, a host name that names no host.
fn invalid_request(config: &ClusterConfig, name: &str, value: &str) -> Option<String> {
    use crate::compat::submit::{is_memory_value, time_value};
    let Some(complex) = config.complex(name) else {
        return Some(format!("error: unknown resource \"{name}\""));
    };
    let not_a = |what: &str| {
        Some(format!(
            "error: attribute \"{}\" is not a {what} value",
            complex.name
        ))
    };
    let number = |v: &str| v.eq_ignore_ascii_case("infinity") || v.parse::<f64>().is_ok();
    match complex.kind {
        ComplexType::Time if time_value(value).is_none() => not_a("time"),
        ComplexType::Memory if !is_memory_value(value) => not_a("memory"),
        ComplexType::Int
            if !(value.parse::<i64>().is_ok() || value.eq_ignore_ascii_case("infinity")) =>
        {
            not_a("integer")
        }
        ComplexType::Double if !number(value) => not_a("double"),
        ComplexType::Host
            if !value.contains(['*', '?', '[', '|', '!'])
                && !config
                    .hosts
                    .iter()
                    .any(|h| h.name.eq_ignore_ascii_case(value)) =>
        {
            Some(format!("error: can't resolve hostname \"{value}\""))
        }
        _ => None,
    }
}

/// Runs `qacct` with `args` (without the program name) and no cell to ask for its queues
/// (`-l` fails): see [`run_in`].
pub fn run_with(args: &[String], default_file: Result<PathBuf, String>, now: i64) -> Output {
    run_in(
        args,
        default_file,
        &|| Err("error: -l needs the cell's queues, and no cell was found".to_string()),
        now,
    )
}

/// Runs `qacct` with `args` (without the program name); `default_file` is the cell's
/// accounting file, used when no `-f` is given (`Err` with the message when no cell could be
/// found); `cell` loads the cell when `-l` needs its queues; `now` anchors `-d` and years
/// left out of `-b`/`-e`.
pub fn run_in(
    args: &[String],
    default_file: Result<PathBuf, String>,
    cell: &dyn Fn() -> Result<ClientEnv, String>,
    now: i64,
) -> Output {
    let mut out = Output::default();
    // `-json` is gridspool's (not in SGE's `-help`): records as JSON lines, totals as one
    // JSON object.
    let (json, args) = crate::compat::options::take_flag(args, "-json");
    let (o, help) = match parse_args(&args, now) {
        Ok(v) => v,
        Err(e) => {
            match e {
                UsageError::Plain => out.stderr.push_str(&usage()),
                UsageError::Message(m) => {
                    out.err(m);
                    out.stderr.push_str(&usage());
                }
                UsageError::BadDate(why) => {
                    out.err(format!("\n{why}"));
                    out.stderr.push_str(&usage());
                }
            }
            out.code = 1;
            return out;
        }
    };
    if help {
        out.stdout.push_str(&usage());
        return out;
    }
    // SGE fetches the queues from its qmaster before it opens the file.
    let selection = if o.requests.is_empty() {
        None
    } else {
        match cell().and_then(|env| QueueSelection::of_cell(&env, &o.requests)) {
            Ok(s) => Some(s),
            Err(message) => {
                out.err(message);
                out.code = 1;
                return out;
            }
        }
    };
    let path = match o.file.clone().map_or(default_file, Ok) {
        Ok(p) => p,
        Err(message) => {
            out.err(message);
            out.code = 1;
            return out;
        }
    };
    let opened = if o.file.is_some() {
        Reader::open_named(&path)
    } else {
        Reader::open(&path)
    };
    let reader = match opened {
        Ok(r) => r,
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
                std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
                _ => e.to_string(),
            };
            out.err(format!("{}: {reason}", path.display()));
            out.out("no jobs running since startup");
            out.code = 1;
            return out;
        }
    };

    let (begin, end) = o.window(now);
    let grouped = o.grouped();
    let mut totals = Totals::default();
    let mut groups = Groups::default();
    let mut found = false;
    let mut ignored = 0u64;
    let mut first_host: Option<String> = None;
    let one_job = matches!(o.job, Some(JobSelect::Number(_) | JobSelect::Name(_)));
    for entry in reader {
        let r = match entry {
            Ok(Entry::Record(r)) => r,
            Ok(Entry::Invalid { entry, .. }) => {
                out.err(format!("error: ignoring invalid entry in line {entry}"));
                continue;
            }
            Err(e) => {
                out.err(format!("error: {e}"));
                out.code = 1;
                return out;
            }
        };
        if !o.selects(&r, begin, end) {
            continue;
        }
        // With -l, SGE 8.1.9 reads a job that never started (deleted or failed before its
        // start) as if it were not in the file: not found by -j, not counted as ignored
        // (captured: `qacct/issue26-l-*`, a start time of 0 alone is enough).
        if selection.is_some() && r.start_time == 0 {
            continue;
        }
        let shown = o.job_selects(&r);
        // SGE's reader drops the records of other jobs (so `-l` does not count them), and a
        // job is found even when `-l` then leaves it out.
        if one_job && !shown {
            continue;
        }
        found |= shown;
        if let Some(sel) = &selection {
            let instance = instance_key(&r.qname, &r.hostname);
            if !sel.all.contains(&instance) {
                ignored += 1;
                continue;
            }
            if let Some(message) = &sel.invalid {
                out.err(message.clone());
                out.code = 1;
                return out;
            }
            if !sel.selected.contains(&instance) {
                continue;
            }
        }
        if shown {
            if json {
                out.stdout
                    .push_str(&serde_json::to_string(&*r).unwrap_or_default());
                out.stdout.push('\n');
            } else {
                out.stdout.push_str(&report::detail(&r));
            }
        }
        let mut this = Totals::default();
        this.add(&r);
        totals.merge(&this);
        if first_host.is_none() {
            first_host = Some(r.hostname.clone());
        }
        if grouped {
            groups.add(key(&o, *r), &this);
        }
    }

    if ignored > 0 {
        out.err(format!(
            "{ignored} jobs ignored for accounting. Jobs' master queue no longer exists."
        ));
        if !json {
            out.stdout.push('\n');
        }
    }
    match (&o.job, o.tasks) {
        // SGE reads the file before it notices (so invalid lines are reported first).
        (None | Some(JobSelect::All), Some(_)) => {
            out.err("error: -t option requires -j option with an argument");
            out.stderr.push_str(&usage());
            out.code = 1;
            return out;
        }
        (Some(select @ (JobSelect::Number(_) | JobSelect::Name(_))), t) if !found => {
            // SGE names an array's job by its number, or by its name in quotes.
            let (array, job) = match select {
                JobSelect::Number(n) => (n.to_string(), format!("job id {n}")),
                JobSelect::Name(name) => (format!("\"{name}\""), format!("job name {name}")),
                JobSelect::All => unreachable!("matched as a number or a name"),
            };
            out.err(match t {
                Some(t) => format!(
                    "error: Job-array tasks {array}.{}-{}:{} not found",
                    t.first, t.last, t.step
                ),
                None => format!("error: {job} not found"),
            });
            out.code = 1;
            return out;
        }
        (Some(JobSelect::Number(_) | JobSelect::Name(_)), _) => return out,
        _ => {}
    }
    if json {
        out.stdout.push_str(&json_totals(&o, &totals, &groups));
        return out;
    }
    print_table(&mut out, &o, &totals, &groups, &first_host);
    out
}

/// `-json` without `-j`: `{"totals": {...}, "groups": [...]}`, each group with its shown
/// grouping columns (`host`, `queue`, `group`, `owner`, `project`, `department`, `pe`,
/// `slots`, `ar`, `account`) and its totals: `wallclock`, `utime`, `stime`, `cpu` (seconds),
/// `mem` (GB·s), `io` (GB), `iow` (seconds). The groups are the table's rows.
fn json_totals(o: &Options, totals: &Totals, groups: &Groups) -> String {
    use serde_json::{Map, Value, json};
    let numbers = |t: &Totals| {
        json!({
            "wallclock": t.wallclock, "utime": t.utime, "stime": t.stime, "cpu": t.cpu,
            "mem": t.mem, "io": t.io, "iow": t.iow,
        })
    };
    let mut rows = Vec::new();
    // As the table: every group (one of jobs that never ran has no wallclock), or none when
    // the selected records have no wallclock at all.
    if o.grouped() && totals.wallclock != 0.0 {
        for (k, t) in groups.iter() {
            let mut row = Map::new();
            let columns: [(&Column, &str, Value); 10] = [
                (&o.host, "host", json!(k.0)),
                (&o.queue, "queue", json!(k.1)),
                (&o.group, "group", json!(k.2)),
                (&o.owner, "owner", json!(k.3)),
                (&o.project, "project", json!(k.4)),
                (&o.department, "department", json!(k.5)),
                (&o.pe, "pe", json!(k.6)),
                (&o.slots, "slots", json!(k.7)),
                (&o.ar, "ar", json!(k.8)),
                (&o.account, "account", json!(k.9)),
            ];
            for (c, name, v) in columns {
                if c.shown {
                    row.insert(name.into(), v);
                }
            }
            row.insert("totals".into(), numbers(t));
            rows.push(Value::Object(row));
        }
    }
    let mut top = json!({"totals": numbers(totals), "groups": rows}).to_string();
    top.push('\n');
    top
}

/// The summary or grouped table, laid out as SGE does it: a column per grouping option (in
/// a fixed order), each as wide as its title, or as its filter value, plus one, and widened to
/// fit every grouped value plus one. When every shown column has a filter value there is one
/// group and SGE prints the filter values with the totals (its "non-summary view"); rows are
/// only printed when the total wallclock is not zero.
fn print_table(
    out: &mut Output,
    o: &Options,
    totals: &Totals,
    groups: &Groups,
    first_host: &Option<String>,
) {
    let rows: Vec<(Key, &Totals)> = groups.iter().collect();
    let summary_view = o.summary_view();
    let specs: [(&Column, &str, usize); 10] = [
        (&o.host, "HOST", 0),
        (&o.queue, "CLUSTER QUEUE", 1),
        (&o.group, "GROUP", 2),
        (&o.owner, "OWNER", 3),
        (&o.project, "PROJECT", 4),
        (&o.department, "DEPARTMENT", 5),
        (&o.pe, "PE", 6),
        (&o.slots, "SLOTS", 7),
        (&o.ar, "AR", 8),
        (&o.account, "ACCOUNT", 9),
    ];
    let numeric = |idx: usize| idx == 7 || idx == 8;
    let field = |k: &Key, idx: usize| -> String {
        match idx {
            0 => k.0.clone(),
            1 => k.1.clone(),
            2 => k.2.clone(),
            3 => k.3.clone(),
            4 => k.4.clone(),
            5 => k.5.clone(),
            6 => k.6.clone(),
            7 => format!("{:>5}", k.7),
            8 => format!("{:>5}", k.8),
            _ => k.9.clone(),
        }
    };
    // Numbers are printed as "%5d" in a column of 5, widened in a summary by every grouped
    // value (hidden ones are 0), shown or filtered.
    let numeric_width = |idx: usize| {
        let mut w = 5;
        if summary_view {
            for (k, _) in &rows {
                let len = field(k, idx).len();
                if w <= len {
                    w = len + 1;
                }
            }
        }
        w
    };
    let mut header = String::new();
    let mut columns: Vec<(usize, usize, Option<String>)> = Vec::new();
    for (c, title, idx) in specs {
        if !c.shown {
            continue;
        }
        let w = if numeric(idx) {
            numeric_width(idx)
        } else {
            let mut w = c
                .filter
                .as_ref()
                .map_or(title.len() + 1, |f| f.len() + 1)
                .max(title.len() + 1);
            // Grouped values widen their column.
            if summary_view && c.filter.is_none() {
                for (k, _) in &rows {
                    let len = field(k, idx).len();
                    if w <= len {
                        w = len + 1;
                    }
                }
            }
            w
        };
        // SGE pads the AR title to the slots column's width (which it computes whether or
        // not that column is shown), not to its own.
        let title_width = if idx == 8 { numeric_width(7) } else { w };
        header.push_str(&format!("{title:<title_width$}"));
        let fixed = c.filter.as_ref().map(|f| match idx {
            7 | 8 => format!("{f:>5}"),
            // SGE prints the host name as resolved (`-h VM` shows `vm`): the record's.
            0 => first_host.clone().unwrap_or_else(|| f.clone()),
            _ => f.clone(),
        });
        columns.push((idx, w, fixed));
    }
    if columns.is_empty() {
        out.out("Total System Usage");
    }
    out.out(format!("{header}{}", report::TITLE));
    out.out("=".repeat(header.len() + report::TITLE.len()));
    if totals.wallclock == 0.0 {
        return;
    }
    let row = |k: Option<&Key>, t: &Totals| {
        let mut line = String::new();
        for (idx, w, fixed) in &columns {
            let v = match (fixed, k) {
                (Some(f), _) => f.clone(),
                (None, Some(k)) => field(k, *idx),
                (None, None) => String::new(),
            };
            line.push_str(&format!("{v:<w$}"));
        }
        line.push_str(&report::numbers(t));
        line
    };
    if summary_view {
        for (k, t) in &rows {
            out.out(row(Some(k), t));
        }
    } else {
        out.out(row(None, totals));
    }
}

/// The `qacct` binary: the cell's accounting file unless `-f` names another.
pub fn main(mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    let default_file = super::locate_spool(spool.clone())
        .map_err(|e| e.to_string())
        .and_then(|dir| {
            crate::spool::Spool::open(dir)
                .map(|s| s.accounting_path())
                .map_err(|e| format!("error: {e}"))
        });
    let cell = || super::ClientEnv::load(spool.clone()).map_err(|e| e.to_string());
    run_in(&args, default_file, &cell, crate::time::now()).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Issue 12: any words parse or are refused; never a panic.
        #[test]
        fn any_words_parse_or_are_refused(
            words in crate::compat::options::hostile_words(&["-A", "-ar", "-b", "-d", "-D", "-e", "-f", "-g", "-h", "-help", "-j", "-l", "-o", "-pe", "-P", "-q", "-t", "-slots"]),
        ) {
            let _ = parse_args(&words, 1_795_000_000);
        }
    }
}
