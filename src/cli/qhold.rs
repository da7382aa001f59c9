//! `qhold` and `qrls`: set and release user, operator and system holds, with SGE 8.1.9's
//! messages and exit codes (qhold(1), qrls(1)).
//!
//! In SGE both are `qalter` under another name, so their errors say `qalter:` and their exit
//! status is the status code of the first refused answer (3: no such job, 10: privileges for
//! the hold type, 18: not the owner). The client applies each action with [`Request::apply`]
//! to its copy of the jobs to decide the messages, then publishes one request with the
//! actions that changed something.

use super::qdel::{TRangeError, parse_job_word, parse_t_value};
use super::{ClientEnv, Output};
use crate::compat::docs::{self, CommandDoc, SyntaxItem, ValueHint};
use crate::compat::job_list::{JobRef, JobTaskRef};
use crate::compat::options::{Arity, OptionSpec};
use crate::compat::pattern;
use crate::compat::syntax;
use crate::model::{
    HoldEvent, HoldType, Holds, JobId, JobRecord, Outcome, Request, RequestAction, TaskSelector,
    TaskSet,
};

/// qhold's and qrls's options, in SGE's `-help` order (the two tables are the same).
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-h",
        Arity::One,
        "[-h hold_list]",
        "list of hold types concerned",
    ),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "specify a list of users\n(not allowed in combination with job_task_list)",
    ),
];

static SYNTAX: [SyntaxItem; 5] = [
    syntax::HOLD_LIST_USER_OPERATOR_SYSTEM,
    syntax::JOB_TASK_LIST,
    syntax::JOB_TASKS,
    syntax::TASK_ID_RANGE,
    syntax::USER_LIST,
];

const OPTION_DETAILS: &[(&str, &str)] = &[
    (
        "-h",
        "One or more of u (user hold: the owner, operators and managers), o (operator hold: operators and managers) and s (system hold: managers), for example -h uo. The default is u. Only the hold types that change are checked: releasing a hold a job does not have prints nothing and needs no privilege.",
    ),
    (
        "-u",
        "Every job of the listed users (wildcard patterns allowed; '*' is everyone). A job_task_list given as well is ignored, as in SGE. Processing stops at the first job the caller may not change.",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Done (also when no hold had to change)."),
    (
        "1",
        "No job_task_list, or the spool could not be read or written.",
    ),
    (
        "2",
        "Unknown option, option without its argument, or an invalid job-task identifier.",
    ),
    ("3", "A named job does not exist."),
    ("5", "A -t without a job before it."),
    ("7", "An unknown hold type or task id range."),
    (
        "10",
        "The caller lacks the privilege for a hold type (operator or manager).",
    ),
    (
        "18",
        "The caller is neither the owner of a job nor an operator or manager.",
    ),
];

const COMPATIBILITY: &[&str] = &[
    "SGE's qhold and qrls accept, and apply, any qalter option; gridspool accepts only the options of their -help and refuses the others as unknown (exit status 2).",
];

/// The `-help` text, man page and completions of qhold.
pub const QHOLD_DOC: CommandDoc = CommandDoc {
    name: "qhold",
    summary: "hold Grid Engine jobs and array tasks",
    synopsis: "[options] job_task_list",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: Some((
        "job_task_list",
        "jobids (and taskids) of jobs to be altered",
    )),
    operand_hint: ValueHint::Jobs,
    syntax: &SYNTAX,
    description: &[
        "qhold puts holds on pending jobs and array tasks, so that sched_d does not start them until the holds are released with qrls. A hold set on a running task is kept with it and shows as hr in qstat; it matters again if the task is requeued.",
        "For each task whose holds change, qhold prints \"modified hold of job 5\" (or \"modified hold of job-array task 10.2\"); tasks that already have the holds are passed over silently.",
    ],
    option_details: OPTION_DETAILS,
    value_hints: &[
        ("-h", ValueHint::Words(&["u", "o", "s"])),
        ("-u", ValueHint::Users),
    ],
    exit_status: EXIT_STATUS,
    compatibility: COMPATIBILITY,
    see_also: &["qrls", "qalter", "qstat", "qsub", "qdel"],
};

/// The `-help` text, man page and completions of qrls: qhold's, but for its name, summary,
/// description and references.
pub const QRLS_DOC: CommandDoc = CommandDoc {
    name: "qrls",
    summary: "release holds of Grid Engine jobs and array tasks",
    description: &[
        "qrls releases holds set by qhold, qalter -h or qsub -h, so that sched_d may start the jobs. Dependency holds (-hold_jid) and start times (-a) are not holds qrls can release.",
        "For each task whose holds change, qrls prints \"modified hold of job 5\" (or \"modified hold of job-array task 10.2\"); tasks without the holds are passed over silently, so releasing a system hold a job does not have prints nothing, even for a manager.",
    ],
    see_also: &["qhold", "qalter", "qstat", "qsub", "qdel"],
    ..QHOLD_DOC
};

/// Which of the two commands runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldCommand {
    Hold,
    Release,
}

impl HoldCommand {
    fn doc(self) -> &'static CommandDoc {
        match self {
            HoldCommand::Hold => &QHOLD_DOC,
            HoldCommand::Release => &QRLS_DOC,
        }
    }
}

/// SGE answer status codes, which qalter (and so qhold/qrls) exits with.
mod status {
    pub const NO_ARGUMENTS: u8 = 1;
    pub const SEMANTIC: u8 = 2;
    pub const NO_SUCH_JOB: u8 = 3;
    pub const NOT_IMPLEMENTED: u8 = 5;
    pub const SYNTAX: u8 = 7;
    pub const NO_PRIVILEGE: u8 = 10;
    pub const NOT_OWNER: u8 = 18;
}

/// The command line.
#[derive(Debug)]
struct HoldArgs {
    holds: Holds,
    help: bool,
    users: Option<Vec<String>>,
    refs: Vec<JobTaskRef>,
}

/// A refused command line: the stderr text and the exit status.
#[derive(Debug)]
struct UsageError {
    text: String,
    code: u8,
    usage: bool,
}

impl UsageError {
    fn new(text: String, code: u8) -> Self {
        UsageError {
            text,
            code,
            usage: false,
        }
    }
}

/// Parses `-h`'s hold list: letters `u`, `o`, `s` (`n` is qalter's, not qhold's).
fn parse_hold_list(text: &str) -> Option<Holds> {
    if text.is_empty() {
        return None;
    }
    let mut h = Holds::NONE;
    for c in text.chars() {
        h.set(HoldType::from_letter(c)?, true);
    }
    Some(h)
}

/// SGE's qalter parsing, restricted to qhold's options: option errors first (in the order
/// met), then "no job_task_list", then `-help`, then the job_task_list itself.
fn parse(args: &[String]) -> Result<HoldArgs, UsageError> {
    let mut holds = Holds::from(HoldType::User);
    let mut help = false;
    let mut users: Option<Vec<String>> = None;
    let mut words: Vec<String> = Vec::new();
    let mut t_options: Vec<(usize, String, crate::model::TaskIdRange)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_str();
        i += 1;
        let mut value = |name: &str, missing: &str| {
            let v = args.get(i).cloned();
            i += 1;
            v.ok_or_else(|| {
                UsageError::new(format!("qalter: {name} option {missing}"), status::SEMANTIC)
            })
        };
        match word {
            "-help" => help = true,
            "-h" => {
                let v = value("-h", "must have argument")?;
                holds = parse_hold_list(&v).ok_or_else(|| {
                    UsageError::new(
                        format!("qalter: Unknown hold list \"{v}\" specified to -h option"),
                        status::SYNTAX,
                    )
                })?;
            }
            "-u" => {
                let v = value("-u", "must have a list usernames")?;
                users = Some(
                    v.split(',')
                        .filter(|u| !u.is_empty())
                        .map(String::from)
                        .collect(),
                );
            }
            "-t" => {
                let v = value("-t", "must have a list of task id ranges")?;
                let range = parse_t_value(&v).map_err(|e| match e {
                    TRangeError::Bad(v) => UsageError::new(
                        format!(
                            "qalter: Numerical value invalid!\nThe initial portion of string \"{v}\" contains no decimal number"
                        ),
                        status::SYNTAX,
                    ),
                    TRangeError::Several => UsageError::new(
                        "qalter: -t option only allows one range specification".into(),
                        status::SYNTAX,
                    ),
                })?;
                t_options.push((words.len(), v, range));
            }
            w if w.starts_with('-') => {
                return Err(UsageError::new(
                    format!("qalter: invalid option argument \"{w}\""),
                    status::SEMANTIC,
                ));
            }
            w => words.push(w.to_string()),
        }
    }
    if !help && users.is_none() && words.is_empty() && t_options.is_empty() {
        return Err(UsageError {
            text: "ERROR! no option argument".into(),
            code: status::NO_ARGUMENTS,
            usage: true,
        });
    }
    if help {
        return Ok(HoldArgs {
            holds,
            help,
            users,
            refs: Vec::new(),
        });
    }
    let mut per_word: Vec<Vec<JobTaskRef>> = Vec::with_capacity(words.len());
    for w in &words {
        let refs = parse_job_word(w).map_err(|bad| {
            UsageError::new(
                format!("ERROR! \"{bad}\" is an invalid job-task identifier"),
                status::SEMANTIC,
            )
        })?;
        per_word.push(refs);
    }
    for (after, text, range) in t_options {
        match per_word[..after]
            .iter_mut()
            .rev()
            .find_map(|w| w.last_mut())
        {
            Some(r) => r.tasks = Some(range),
            // SGE's "complain about unused options", with its extra newline.
            None => {
                return Err(UsageError::new(
                    format!("Unknown option -t {text}\n"),
                    status::NOT_IMPLEMENTED,
                ));
            }
        }
    }
    Ok(HoldArgs {
        holds,
        help,
        users,
        refs: per_word.into_iter().flatten().collect(),
    })
}

/// What one operand (or the `-u` list) selects.
enum Target<'a> {
    Ref(&'a JobTaskRef),
    Users(&'a [String]),
}

impl Target<'_> {
    fn selects(&self, job: &JobRecord) -> bool {
        match self {
            Target::Ref(r) => r.selects(job),
            Target::Users(users) => users
                .iter()
                .any(|u| pattern::matches(u, &job.submitter.owner)),
        }
    }

    /// SGE's answer when nothing matched (`empty_job_list_filter` of a modify request).
    fn missing(&self) -> String {
        match self {
            Target::Ref(r) => {
                let jid = match &r.job {
                    JobRef::Id(id) => id.to_string(),
                    JobRef::Name(n) => n.clone(),
                };
                format!("denied: job \"{jid}\" does not exist")
            }
            Target::Users(users) => {
                format!("The job * of user(s) {} does not exist", users.join(","))
            }
        }
    }

    fn tasks(&self) -> TaskSelector {
        match self {
            // SGE's task number 0 stands for every task (`qhold 5.0`, `qhold 5 -t 0-1`).
            Target::Ref(JobTaskRef {
                tasks: Some(range), ..
            }) if range.first > 0 => TaskSelector::Tasks(TaskSet::from_range(*range)),
            _ => TaskSelector::All,
        }
    }
}

/// What `qhold`/`qrls` prints and publishes; `load` gives the environment once the command
/// line is known to need it.
pub fn execute(
    command: HoldCommand,
    args: &[String],
    load: impl FnOnce() -> Result<ClientEnv, Output>,
) -> Output {
    let mut o = Output::default();
    let doc = command.doc();
    let parsed = match parse(args) {
        Ok(p) => p,
        Err(e) => {
            if e.usage {
                o.stderr.push_str(&docs::help_text(doc));
            }
            o.err(e.text);
            o.code = e.code;
            return o;
        }
    };
    if parsed.help {
        o.stdout.push_str(&docs::help_text(doc));
        return o;
    }
    let env = match load() {
        Ok(env) => env,
        Err(o) => return o,
    };
    let who = env.requester();
    let mut jobs = match env.spool.scan_jobs() {
        Ok(scan) => scan.jobs,
        Err(e) => {
            o.err(format!("error: {e}"));
            o.code = 1;
            return o;
        }
    };
    // -u replaces the job_task_list (qalter_parse_job_parameter sets the job list to "*").
    let targets: Vec<Target> = match &parsed.users {
        Some(users) => vec![Target::Users(users)],
        None => parsed.refs.iter().map(Target::Ref).collect(),
    };
    let mut lines = Vec::new();
    let mut actions = Vec::new();
    let mut code = 0u8;
    // The exit status is that of the first refused answer.
    let fail = |code: &mut u8, status: u8| {
        if *code == 0 {
            *code = status;
        }
    };
    for target in &targets {
        let ids: Vec<JobId> = jobs
            .iter()
            .filter(|j| !j.tasks.is_done() && target.selects(j))
            .map(|j| j.id)
            .collect();
        if ids.is_empty() {
            lines.push(target.missing());
            fail(&mut code, status::NO_SUCH_JOB);
            continue;
        }
        for id in ids {
            let Ok(i) = jobs.binary_search_by_key(&id, |j| j.id) else {
                continue;
            };
            let tasks = target.tasks();
            let action = match command {
                HoldCommand::Hold => RequestAction::Hold {
                    job: id,
                    tasks,
                    hold: parsed.holds,
                },
                HoldCommand::Release => RequestAction::Release {
                    job: id,
                    tasks,
                    hold: parsed.holds,
                },
            };
            let array = jobs[i].is_array();
            match Request::apply(&action, &who, &mut jobs[i]) {
                Ok(Outcome::Hold(outcome)) => {
                    let mut modified = false;
                    for event in outcome.events {
                        match event {
                            HoldEvent::Modified(t) => {
                                modified = true;
                                lines.push(if array {
                                    format!("modified hold of job-array task {id}.{t}")
                                } else {
                                    format!("modified hold of job {id}")
                                });
                            }
                            HoldEvent::Denied(d) => {
                                lines.push(crate::compat::messages::denied(&d));
                                fail(&mut code, status::NO_PRIVILEGE);
                            }
                        }
                    }
                    if modified {
                        actions.push(action);
                    }
                }
                Ok(_) => {}
                Err(d) => {
                    // sge_gdi_mod_job stops at the first job the caller may not change.
                    lines.push(crate::compat::messages::denied(&d));
                    fail(&mut code, status::NOT_OWNER);
                    break;
                }
            }
        }
    }
    // Publish before printing: a message must never claim a change that was not written.
    if !actions.is_empty()
        && let Err(e) = env.spool.publish_request(who, actions)
    {
        o.err(format!("error: {e}"));
        o.code = 1;
        return o;
    }
    for line in lines {
        o.out(line);
    }
    o.code = code;
    o
}

/// `qhold`'s entry point.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    run(HoldCommand::Hold, args)
}

/// Shared by `qhold` and `qrls`: takes gridspool's own `--spool DIR`, then runs.
pub fn run(command: HoldCommand, mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    execute(command, &args, || super::load_env(spool)).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Issue 12: any words parse or are refused; never a panic.
        #[test]
        fn any_words_parse_or_are_refused(
            words in crate::compat::options::hostile_words(&["-h", "-help", "-u", "-t"]),
        ) {
            let _ = parse(&words);
        }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn err(s: &str) -> (String, u8) {
        let e = parse(&words(s)).expect_err("should fail");
        (e.text, e.code)
    }

    #[test]
    fn option_errors_have_sges_words_and_codes() {
        assert_eq!(
            err("-h n 18"),
            (
                "qalter: Unknown hold list \"n\" specified to -h option".into(),
                7
            )
        );
        assert_eq!(
            err("-h"),
            ("qalter: -h option must have argument".into(), 2)
        );
        assert_eq!(
            err("-u"),
            ("qalter: -u option must have a list usernames".into(), 2)
        );
        assert_eq!(
            err("-badopt 5"),
            ("qalter: invalid option argument \"-badopt\"".into(), 2)
        );
        assert_eq!(
            err("66.x"),
            (
                "ERROR! \"66.x\" is an invalid job-task identifier".into(),
                2
            )
        );
        assert_eq!(err("-t 2"), ("Unknown option -t 2\n".into(), 5));
        assert_eq!(err("-h u").1, 1);
        assert!(parse(&words("-help 65")).expect("help").help);
    }

    #[test]
    fn hold_lists_combine_letters() {
        let h = parse(&words("-h uos 5")).expect("parse").holds;
        assert!(h.user && h.operator && h.system);
        assert_eq!(
            parse(&words("5")).expect("parse").holds,
            Holds::from(HoldType::User)
        );
    }
}
