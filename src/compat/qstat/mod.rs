//! `qstat`: what SGE 8.1.9's `qstat` prints, from the jobs of one spool scan.
//!
//! The option table ([`QSTAT_OPTIONS`]) drives parsing and `-help`; [`QstatArgs`] is the
//! parsed request; [`render`] turns a request and a [`View`] of the cluster into the bytes
//! SGE would print. Formats live in their own modules: [`table`] (the job tables, `-f`,
//! `-g c`), [`xml`] (`-xml` of every table), [`detail`] (`-j`). Rows are selected and sorted
//! once, in [`rows`]. Everything here is pure: the CLI (`cli::qstat`) gathers the inputs.

pub mod detail;
pub(crate) mod fmt;
pub mod json;
pub mod plain;
pub mod queues;
pub mod resources;
pub mod rows;
pub mod start;
pub mod table;
pub mod xml;

use super::options::{self, Arity, OperandMode, OptionSpec, Origin};
use crate::config::ClusterConfig;
use crate::model::JobRecord;
pub use queues::HostLoad;

/// `qstat`'s options in SGE's `-help` order.
pub static QSTAT_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-ext", Arity::Flag, "[-ext]", "view additional attributes"),
    OptionSpec::new(
        "-explain",
        Arity::One,
        "[-explain a|c|A|E]",
        "show reason for queue c(onfiguration ambiguous), a(larm), suspend A(larm), E(rror) state",
    ),
    OptionSpec::new("-f", Arity::Flag, "[-f]", "full output"),
    OptionSpec::new(
        "-F",
        Arity::Optional,
        "[-F [resource_attributes]]",
        "full output and show (selected) resources of queue(s)",
    ),
    OptionSpec::new("-g", Arity::One, "[-g c]", "display cluster queue summary"),
    OptionSpec::new(
        "-g",
        Arity::One,
        "[-g d]",
        "display all job-array tasks (do not group)",
    ),
    OptionSpec::new(
        "-g",
        Arity::One,
        "[-g t]",
        "display all parallel job tasks (do not group)",
    ),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-j",
        Arity::Optional,
        "[-j [job_identifier_list]]",
        "show scheduler job information",
    ),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_list]",
        "request the given resources",
    ),
    OptionSpec::new("-ne", Arity::Flag, "[-ne]", "hide empty queues"),
    OptionSpec::new(
        "-ncb",
        Arity::Flag,
        "[-ncb]",
        "suppress additional binding specific parameters",
    ),
    OptionSpec::new(
        "-pe",
        Arity::One,
        "[-pe pe_list]",
        "select only queues with one of these parallel environments",
    ),
    OptionSpec::new(
        "-q",
        Arity::One,
        "[-q wc_queue_list]",
        "print information on given queue",
    ),
    OptionSpec::new(
        "-qs",
        Arity::One,
        "[-qs {a|c|d|o|s|u|A|C|D|E|S}]",
        "selects queues which are in the given state(s)",
    ),
    OptionSpec::new(
        "-r",
        Arity::Flag,
        "[-r]",
        "show requested resources of job(s)",
    ),
    OptionSpec::new(
        "-s",
        Arity::One,
        "[-s {p|r|s|z|hu|ho|hs|hd|hj|ha|h|a}]",
        "show pending, running, suspended, zombie jobs,\njobs with a user/operator/system/array-dependency hold, \njobs with a start time in future or any combination only.\nh is an abbreviation for huhohshdhjha\na is an abbreviation for prsh",
    ),
    OptionSpec::new(
        "-t",
        Arity::Flag,
        "[-t]",
        "show task information (implicitly -g t)",
    ),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "view jobs of this user list",
    ),
    OptionSpec::new(
        "-U",
        Arity::One,
        "[-U user_list]",
        "select only queues where these users have access",
    ),
    OptionSpec::new(
        "-urg",
        Arity::Flag,
        "[-urg]",
        "display job urgency information",
    ),
    OptionSpec::new(
        "-pri",
        Arity::Flag,
        "[-pri]",
        "display job priority information",
    ),
    OptionSpec::new(
        "-xml",
        Arity::Flag,
        "[-xml]",
        "display the information in XML format",
    ),
];

/// The lines after the options in `-help`.
const HELP_FOOTER: &str = "\npe_list                  pe[,pe,...]
job_identifier_list      [job_id|job_name|pattern]{, [job_id|job_name|pattern]}
resource_list            resource[=value][,resource[=value],...]
user_list                user|*|@group[,user|*|@group],...]
resource_attributes      resource,resource,...
wc_cqueue                wildcard expression matching a cluster queue
wc_host                  wildcard expression matching a host
wc_hostgroup             wildcard expression matching a hostgroup
wc_qinstance             wc_cqueue@wc_host
wc_qdomain               wc_cqueue@wc_hostgroup
wc_queue_list            wc_cqueue|wc_qdomain|wc_qinstance
wc_queue_list            wc_queue[,wc_queue,...]
";

/// `qstat`'s man page and completions (its `-help` has SGE's own layout: [`help_text`]).
pub const QSTAT_DOC: super::docs::CommandDoc = super::docs::CommandDoc {
    name: "qstat",
    summary: "show the status of gridspool jobs and queues",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: QSTAT_OPTIONS,
    operand: None,
    operand_hint: super::docs::ValueHint::Text,
    syntax: &[],
    description: &[
        "qstat lists jobs and queues of the cell $SGE_ROOT/$SGE_CELL in Grid Engine 8.1.9's formats, column for column: by default the caller's own jobs (nothing at all when there are none), with -u the jobs of other users ('*' for all), with -f the queue instances and their jobs, with -xml the same as XML.",
        "-json, a gridspool extension (not listed by -help), prints the job listing as one JSON object on one line: {\"jobs\": [...]} with per job job, name, owner, state, priority, submitted and started (seconds since the epoch; started null while pending), queue (null while pending), slots and task (the task id or pending range of an array job, else null); -ext adds project, cpu_seconds, mem_gbs, io_gb, tickets, override_tickets, functional_tickets, share_tickets and share; -urg adds urgency, resource_urgency, waiting_urgency, deadline_urgency and deadline; -pri adds posix_priority, normalized_posix_priority, normalized_urgency and normalized_tickets; -f adds \"queues\": [...] with name, type, slots_used, slots_total, load_avg, arch and states. It takes the same selections (-u, -s, -q, -l...). With -j job_list it prints {\"jobs\": [...]} with per job every line of qstat -j as a field: its label without the colon, blanks written _, its value as printed (a field of several lines, or one that repeats, as a list). It is refused with -j alone, -g c and -xml.",
        "-start, a gridspool extension (not listed by -help), shows when the pending jobs are expected to start: sched_d plays the cell forward through its scheduling policy (priorities, reservations, quotas, dependencies) with each job's expected run time (by default the median of its owner's recent runs of the same kind in the accounting file, capped by its h_rt or s_rt, else its queue's, else the scheduler's default_duration; scheduler.start_estimates.run_times: limits uses the limits alone) after the passes that move the estimates, at most once per scheduler.start_estimates.refresh (10 s). qstat -start lists the pending jobs (with -u and -s as usual) with their submission time, estimated start and where (queue@host, +N for the other hosts of a parallel job); a job without an honest time shows unknown (held, in error, waiting for jobs without a run time limit, beyond the horizon) or never (no queue instance can take it), and why on the next line. qstat -j job_list -start adds an estimated start: line per task range; qstat -json -start adds estimated_start to each job: null while it runs, else a list of {tasks, kind (at, unknown or never), time, queue, hosts, slots} or {tasks, kind, why}. It is refused with -xml, -f, -g c, -ext, -urg, -pri and -r.",
        "The priority columns (-pri, -urg, -ext) show what sched_d computed at its last scheduling pass; a job the scheduler has not considered yet shows zeros, as in SGE. qstat -j always explains why a pending job is not running (holds, dependencies, start time, resources, the active policy's gaps and quotas), where SGE needs schedd_job_info.",
        "When the scheduler configuration orders jobs by a policy other than SGE's (cluster, fbsng, armada), -pri and -ext end each job line with that policy's terms as name=value words (cluster_order=2, queue_priority=37, share=0.6667…), and qstat -j prints them on a policy: line. Under SGE's policy there are none and every output is SGE's.",
        "Changes requested with qdel, qalter, qhold and qrls show at once, also while sched_d is not running.",
    ],
    option_details: &[],
    value_hints: &[
        ("-u", super::docs::ValueHint::Users),
        ("-j", super::docs::ValueHint::Jobs),
        (
            "-s",
            super::docs::ValueHint::Words(&[
                "p", "r", "s", "z", "hu", "ho", "hs", "hd", "hj", "ha", "h", "a",
            ]),
        ),
        ("-g", super::docs::ValueHint::Words(&["c", "d", "t"])),
    ],
    exit_status: &[
        ("0", "The listing was printed (possibly empty)."),
        (
            "1",
            "A job named with -j does not exist, the command line is wrong, or the spool cannot be read.",
        ),
    ],
    compatibility: &[
        "qstat -j prints the scheduler's reasons for a pending job instead of SGE's \"(Collecting of scheduler job information is turned off)\".",
        "-F lists the configured and measured values of each queue instance; hosts other than the one qstat runs on show load values only as sched_d last reported them.",
    ],
    see_also: &[
        "qsub", "qdel", "qalter", "qhold", "qrls", "qacct", "qhost", "sched_d",
    ],
};

/// `qstat -help`: also printed (to stderr) before a usage error, as SGE does.
pub fn help_text() -> String {
    let mut out = String::from("SGE 8.1.9\nusage: qstat [options]\n");
    out.push_str(&options::help_lines(QSTAT_OPTIONS, "        ", 34));
    out.push_str(HELP_FOOTER);
    out
}

/// Whose jobs to list (`-u`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserFilter {
    /// No `-u`: the caller's own jobs.
    Caller,
    /// `-u '*'`.
    All,
    /// `-u a,b`.
    Names(Vec<String>),
}

/// Which jobs `-s` selects; without `-s`, `a` (pending, running, suspended, held).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateFilter {
    pub pending: bool,
    pub running: bool,
    pub suspended: bool,
    pub zombie: bool,
    pub user_hold: bool,
    pub operator_hold: bool,
    pub system_hold: bool,
    /// `hd`: a start time in the future (`qsub -a`).
    pub start_time_hold: bool,
    /// `hj`: waiting for predecessors (`-hold_jid`).
    pub job_hold: bool,
    /// `ha`: waiting for array predecessors (`-hold_jid_ad`).
    pub array_hold: bool,
}

impl StateFilter {
    /// `-s a`, the default.
    pub const ALL: StateFilter = StateFilter {
        pending: true,
        running: true,
        suspended: true,
        zombie: false,
        user_hold: true,
        operator_hold: true,
        system_hold: true,
        start_time_hold: true,
        job_hold: true,
        array_hold: true,
    };

    /// Parses `-s`'s letters (`p`, `r`, `s`, `z`, `h[uoshdja]`, `a`), in any combination.
    pub fn parse(text: &str) -> Option<StateFilter> {
        let mut f = StateFilter::default();
        let b = text.as_bytes();
        let mut i = 0;
        if b.is_empty() {
            return None;
        }
        while i < b.len() {
            match b[i] {
                b'p' => f.pending = true,
                b'r' => f.running = true,
                b's' => f.suspended = true,
                b'z' => f.zombie = true,
                b'a' => {
                    f.pending = true;
                    f.running = true;
                    f.suspended = true;
                    f.set_all_holds();
                }
                b'h' => match b.get(i + 1) {
                    Some(b'u') => {
                        f.user_hold = true;
                        i += 1;
                    }
                    Some(b'o') => {
                        f.operator_hold = true;
                        i += 1;
                    }
                    Some(b's') => {
                        f.system_hold = true;
                        i += 1;
                    }
                    Some(b'd') => {
                        f.start_time_hold = true;
                        i += 1;
                    }
                    Some(b'j') => {
                        f.job_hold = true;
                        i += 1;
                    }
                    Some(b'a') => {
                        f.array_hold = true;
                        i += 1;
                    }
                    _ => f.set_all_holds(),
                },
                _ => return None,
            }
            i += 1;
        }
        Some(f)
    }

    fn set_all_holds(&mut self) {
        self.user_hold = true;
        self.operator_hold = true;
        self.system_hold = true;
        self.start_time_hold = true;
        self.job_hold = true;
        self.array_hold = true;
    }
}

/// `-g`: grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grouping {
    /// `-g c`: the cluster queue summary instead of jobs.
    pub cluster_summary: bool,
    /// `-g d`: one line per array task.
    pub each_task: bool,
    /// `-g t` (and `-t`): one line per parallel task, with the `master` column.
    pub pe_tasks: bool,
}

/// A parsed `qstat` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QstatArgs {
    pub help: bool,
    pub users: UserFilter,
    pub states: StateFilter,
    pub full: bool,
    pub ext: bool,
    pub urg: bool,
    pub pri: bool,
    pub requests: bool,
    pub tasks: bool,
    pub group: Grouping,
    pub xml: bool,
    /// `-json` (a gridspool extension, not in SGE's `-help`): the listing as JSON (`json`).
    pub json: bool,
    /// `-start` (a gridspool extension, not in SGE's `-help`): start-time estimates
    /// (`start`): the pending jobs' table, an `estimated start:` line of `-j`, a field of
    /// `-json`.
    pub start: bool,
    /// `-explain a|c|A|E`: implies `-f`.
    pub explain: Option<char>,
    /// `-j [list]`: `Some(vec![])` for `-j` alone.
    pub job_detail: Option<Vec<String>>,
    /// `-q wc_queue_list`.
    pub queues: Option<Vec<String>>,
    /// `-pe pe_list`.
    pub pes: Option<Vec<String>>,
    /// `-qs` state letters.
    pub queue_states: Option<String>,
    /// `-ne`.
    pub hide_empty: bool,
    /// `-F [names]`: show the queue instances' resources (all of them when empty).
    pub resources: Option<Vec<String>>,
    /// `-l name=value,...`: only queue instances that offer these.
    pub resource_requests: Vec<(String, String)>,
}

impl Default for QstatArgs {
    fn default() -> Self {
        QstatArgs {
            help: false,
            users: UserFilter::Caller,
            states: StateFilter::ALL,
            full: false,
            ext: false,
            urg: false,
            pri: false,
            requests: false,
            tasks: false,
            group: Grouping::default(),
            xml: false,
            json: false,
            start: false,
            explain: None,
            job_detail: None,
            queues: None,
            pes: None,
            queue_states: None,
            hide_empty: false,
            resources: None,
            resource_requests: Vec::new(),
        }
    }
}

/// Why a command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QstatArgError {
    /// SGE prints its usage, then this, and exits 1.
    #[error("{0}")]
    Usage(String),
    /// A `-qs` letter that is no queue state: SGE says so without its usage.
    #[error("unknown queue state: {state} found in string: {string}")]
    UnknownQueueState { state: char, string: String },
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl QstatArgs {
    /// Parses `qstat`'s arguments (after gridspool's own `--spool DIR`).
    pub fn parse(words: &[String]) -> Result<QstatArgs, QstatArgError> {
        // `-json` is gridspool's: taken here, so that SGE's option table (and `-help`) stays
        // SGE's.
        let (json, words) = options::take_flag(words, "-json");
        let (start, words) = options::take_flag(&words, "-start");
        let parsed = options::parse(
            QSTAT_OPTIONS,
            &words,
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .map_err(|e| QstatArgError::Usage(e.to_string()))?;
        let mut a = QstatArgs {
            json,
            start,
            ..QstatArgs::default()
        };
        let mut state_seen = false;
        for opt in &parsed.options {
            let v = opt.values.first().map(String::as_str).unwrap_or("");
            match opt.spec.name {
                "-help" => a.help = true,
                "-ext" => a.ext = true,
                "-f" => a.full = true,
                "-urg" => a.urg = true,
                "-pri" => a.pri = true,
                "-r" => a.requests = true,
                "-t" => {
                    a.tasks = true;
                    a.group.pe_tasks = true;
                }
                "-xml" => a.xml = true,
                "-ne" => a.hide_empty = true,
                // Binding parameters are never shown (gridspool has no core binding), so
                // suppressing them changes nothing: honoured, not ignored.
                "-ncb" => {}
                "-explain" => match v {
                    "a" | "c" | "A" | "E" => {
                        a.explain = v.chars().next();
                        a.full = true;
                    }
                    _ => {
                        return Err(QstatArgError::Usage(format!(
                            "invalid option argument \"-explain {v}\""
                        )));
                    }
                },
                "-g" => match v {
                    "c" => a.group.cluster_summary = true,
                    "d" => a.group.each_task = true,
                    "t" => a.group.pe_tasks = true,
                    _ => {
                        return Err(QstatArgError::Usage(format!(
                            "invalid option argument \"-g {v}\""
                        )));
                    }
                },
                "-j" => {
                    let ids = a.job_detail.get_or_insert_with(Vec::new);
                    ids.extend(list(v));
                }
                "-s" => {
                    let f = StateFilter::parse(v).ok_or_else(|| {
                        QstatArgError::Usage(format!("invalid option argument \"-s {v}\""))
                    })?;
                    if state_seen {
                        a.states = merge_states(a.states, f);
                    } else {
                        a.states = f;
                        state_seen = true;
                    }
                }
                "-u" => {
                    let names = list(v);
                    if names.iter().any(|n| n == "*") {
                        a.users = UserFilter::All;
                    } else if a.users != UserFilter::All {
                        let mut all = match std::mem::replace(&mut a.users, UserFilter::Caller) {
                            UserFilter::Names(n) => n,
                            _ => Vec::new(),
                        };
                        all.extend(names);
                        a.users = UserFilter::Names(all);
                    }
                }
                "-q" => a.queues.get_or_insert_with(Vec::new).extend(list(v)),
                "-pe" => a.pes.get_or_insert_with(Vec::new).extend(list(v)),
                "-qs" => {
                    if v.is_empty() {
                        return Err(QstatArgError::Usage(format!(
                            "invalid option argument \"-qs {v}\""
                        )));
                    }
                    if let Some(state) = v.chars().find(|c| !"acdosuACDES".contains(*c)) {
                        return Err(QstatArgError::UnknownQueueState {
                            state,
                            string: v.to_string(),
                        });
                    }
                    a.queue_states = Some(v.to_string());
                }
                // No access lists in gridspool: every user may use every queue, so `-U`
                // selects all queues, which is exactly what SGE does for such a cluster.
                "-U" => {}
                "-F" => {
                    a.full = true;
                    let names = opt.values.first().map_or_else(Vec::new, |v| {
                        v.split(',')
                            .filter(|n| !n.is_empty())
                            .map(String::from)
                            .collect()
                    });
                    a.resources.get_or_insert_with(Vec::new).extend(names);
                }
                "-l" => {
                    for req in v.split(',').filter(|r| !r.is_empty()) {
                        let (k, val) = req.split_once('=').unwrap_or((req, "TRUE"));
                        a.resource_requests.push((k.to_string(), val.to_string()));
                    }
                }
                _ => {}
            }
        }
        if let Some(first) = parsed.operands.first() {
            return Err(QstatArgError::Usage(format!(
                "invalid option argument \"{first}\""
            )));
        }
        Ok(a)
    }

    /// Whether the submit/start time column is shown (SGE drops it for `-ext` alone).
    pub fn show_time(&self) -> bool {
        !self.ext || self.urg || self.pri
    }
}

fn merge_states(a: StateFilter, b: StateFilter) -> StateFilter {
    StateFilter {
        pending: a.pending || b.pending,
        running: a.running || b.running,
        suspended: a.suspended || b.suspended,
        zombie: a.zombie || b.zombie,
        user_hold: a.user_hold || b.user_hold,
        operator_hold: a.operator_hold || b.operator_hold,
        system_hold: a.system_hold || b.system_hold,
        start_time_hold: a.start_time_hold || b.start_time_hold,
        job_hold: a.job_hold || b.job_hold,
        array_hold: a.array_hold || b.array_hold,
    }
}

/// Everything a `qstat` output is computed from, gathered once by the CLI.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The jobs in the system, sorted by job id (as `JobScan` keeps them).
    pub jobs: &'a [JobRecord],
    /// Jobs whose every task has ended, still in the spool for `qsub -sync`, sorted by job
    /// id: only `-s z` shows them (`JobScan::ended`).
    pub ended: &'a [JobRecord],
    pub config: &'a ClusterConfig,
    /// The calling user's name (the default `-u`).
    pub caller: &'a str,
    /// Seconds since the epoch (start-time holds).
    pub now: i64,
    /// Load of the local host, if known.
    pub load: &'a HostLoad,
    /// Every host's load values, for `-F` and `-l` (empty otherwise: gathering them costs
    /// a read of `/proc` and of each host's report).
    pub host_loads:
        &'a std::collections::BTreeMap<String, crate::compat::host_attributes::HostStatus>,
    /// Why `sched_d` starts nothing now, when it says so (`Spool::storage_blocked`): shown
    /// first among every pending job's reasons.
    pub storage_blocked: Option<&'a str>,
    /// Queue instances `qmod -d` disabled (`daemon/qinstances.json`; empty unless queues are
    /// listed).
    pub instance_states: &'a crate::spool::QueueInstanceStates,
    /// With `-start`: the start-time forecast to show (`start`).
    pub estimates: Option<start::StartView<'a>>,
}

impl<'a> View<'a> {
    /// The job with this id, if it is in the system (an ended job is not).
    pub fn job(&self, id: crate::model::JobId) -> Option<&'a JobRecord> {
        self.jobs
            .binary_search_by_key(&id, |j| j.id)
            .ok()
            .map(|i| &self.jobs[i])
    }
}

/// What `qstat` prints and its exit code.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

/// Computes `qstat`'s output for a parsed request.
pub fn render(args: &QstatArgs, view: &View<'_>) -> Rendered {
    let mut r = Rendered::default();
    if args.help {
        r.stdout = help_text();
        return r;
    }
    let json_detail_overview = args.job_detail.as_ref().is_some_and(|w| w.is_empty());
    if args.json && (json_detail_overview || args.group.cluster_summary || args.xml) {
        r.stderr = "qstat: -json is for the job and queue listings and -j job_list; not with -j alone, -g c or -xml\n"
            .to_string();
        r.code = 1;
        return r;
    }
    if args.start
        && (args.xml
            || args.full
            || args.group.cluster_summary
            || args.ext
            || args.urg
            || args.pri
            || args.requests)
    {
        r.stderr = "qstat: -start is for the pending jobs' table, -j and -json; not with -xml, -f, -g c, -ext, -urg, -pri or -r\n"
            .to_string();
        r.code = 1;
        return r;
    }
    if let Some(ids) = &args.job_detail {
        return detail::render(args, ids, view);
    }
    if args.group.cluster_summary {
        if args.xml {
            xml::cluster_summary(&mut r.stdout, args, view);
        } else {
            table::cluster_summary(&mut r.stdout, args, view);
        }
        return r;
    }
    let rows = rows::select(args, view);
    if args.json {
        json::jobs(&mut r.stdout, args, view, &rows);
    } else if args.xml {
        xml::jobs(&mut r.stdout, args, view, &rows);
    } else if args.full {
        table::full(&mut r.stdout, args, view, &rows);
    } else if let Some(start) = view.estimates.filter(|_| args.start) {
        start::table(&mut r.stdout, args, view, start);
    } else {
        table::jobs(&mut r.stdout, args, view, &rows);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Issue 12: any words parse or are refused; never a panic.
        #[test]
        fn any_words_parse_or_are_refused(
            words in crate::compat::options::hostile_words(&["-f", "-F", "-g", "-j", "-l", "-q", "-r", "-s", "-u", "-urg", "-pri", "-ext", "-xml", "-t", "-explain", "-U", "-pe"]),
        ) {
            let _ = QstatArgs::parse(&words);
        }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn state_filters_combine() {
        let f = StateFilter::parse("hu").expect("hu");
        assert!(f.user_hold && !f.pending && !f.job_hold);
        let f = StateFilter::parse("prhj").expect("prhj");
        assert!(f.pending && f.running && f.job_hold && !f.user_hold);
        assert_eq!(StateFilter::parse("a"), Some(StateFilter::ALL));
        assert!(StateFilter::parse("x").is_none());
    }

    #[test]
    fn parses_options() {
        let a = QstatArgs::parse(&words("-u * -s p -ext -j 2,5")).expect("parse");
        assert_eq!(a.users, UserFilter::All);
        assert!(a.ext && !a.show_time());
        assert_eq!(a.job_detail, Some(vec!["2".to_string(), "5".to_string()]));
        let e = QstatArgs::parse(&words("-badopt")).expect_err("bad");
        assert_eq!(e.to_string(), "invalid option argument \"-badopt\"");
        let a = QstatArgs::parse(&words("-F h_vmem,slots -l mem_free=1G,arch=lx-amd64"))
            .expect("parse");
        assert!(a.full);
        assert_eq!(a.resources, Some(vec!["h_vmem".into(), "slots".into()]));
        assert_eq!(a.resource_requests.len(), 2);
    }
}
