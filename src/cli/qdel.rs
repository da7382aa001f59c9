//! `qdel`: deletes jobs and array tasks, with SGE 8.1.9's messages and exit codes (qdel(1)).
//!
//! The client decides every message by applying each delete action with [`Request::apply`] to
//! its own copy of the jobs (from [`Spool::scan_jobs`](crate::spool::Spool::scan_jobs)), in
//! command-line order, so a later operand sees what an earlier one did. The allowed actions go
//! into one request file; refused ones are only reported. `qstat` and `sched_d` apply the same
//! request, so the deletion shows at once, daemon or not.

use super::{ClientEnv, Output};
use crate::compat::docs::{self, CommandDoc, SyntaxItem, ValueHint};
use crate::compat::job_list::{JobRef, JobTaskRef};
use crate::compat::options::{Arity, OptionSpec};
use crate::compat::pattern;
use crate::compat::syntax;
use crate::model::{
    DeleteOutcome, Denied, JobId, JobRecord, Outcome, Request, RequestAction, Requester,
    RunningDeletion, TaskIdRange, TaskSelector, TaskSet,
};
use std::io::Write as _;
use std::time::Duration;

/// qdel's options, in SGE's `-help` order. `-t` belongs to the job_task_list grammar (it
/// follows a job) and `--force` is SGE's undocumented spelling of `-f`.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-f", Arity::Flag, "[-f]", "force action"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "delete all jobs of users specified in list",
    ),
];

static SYNTAX: [SyntaxItem; 4] = [
    syntax::JOB_TASK_LIST,
    syntax::JOB_TASKS,
    syntax::TASK_ID_RANGE,
    syntax::USER_LIST,
];

/// The `-help` text, man page and completions of qdel.
pub const DOC: CommandDoc = CommandDoc {
    name: "qdel",
    summary: "delete Grid Engine jobs and array tasks",
    synopsis: "[options] job_task_list",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: Some(("job_task_list", "delete all jobs given in list")),
    operand_hint: ValueHint::Jobs,
    syntax: &SYNTAX,
    description: &[
        "qdel deletes the jobs and array tasks named on the command line, or all jobs of the users given with -u. Pending tasks are removed at once. Running tasks are registered for deletion (state dr) and sched_d kills them.",
        "A job is named by its number, by its name, or by a wildcard pattern over job names (*, ?, [...]). Names and patterns select only the caller's own jobs unless -u says whose. Array tasks are selected with job_id.task_id_range or job_id -t task_id_range.",
        "Users may delete their own jobs; operators and managers may delete any job. Deleting all jobs of all users (-u '*' without a job list) needs a manager.",
        "The request is written to the spool as one file; qstat shows its effect immediately, also while sched_d is not running.",
    ],
    option_details: &[
        (
            "-f",
            "For a manager, running tasks are removed from the job at once (\"root forced the deletion of job 5\") and sched_d kills what is left of them. For anyone else, as in SGE, the jobs are first deleted normally, then qdel waits one minute printing a dot every five seconds, and the forced deletion that follows is refused (exit status 1). --force is accepted as a synonym.",
        ),
        (
            "-u",
            "Selects the jobs of the listed users (wildcard patterns allowed); with a job_task_list, only those of its jobs that belong to the users. '*' means every user. Given twice, the last list counts.",
        ),
    ],
    value_hints: &[("-u", ValueHint::Users)],
    exit_status: &[
        (
            "0",
            "Every named job or task was deleted or registered for deletion.",
        ),
        (
            "1",
            "Something was refused or not found (the messages on standard output say what), the command line was wrong, or the spool could not be read or written.",
        ),
    ],
    compatibility: &[
        "SGE re-signals a running task whose deletion was registered long ago; gridspool reports it as already in deletion until sched_d has killed it.",
    ],
    see_also: &["qstat", "qsub", "qhold", "qrls", "qalter", "sched_d"],
};

/// The command line, after SGE's two parsing stages.
#[derive(Debug, Default)]
struct QdelArgs {
    help: bool,
    force: bool,
    /// `-u`; the last one given counts, as in SGE.
    users: Vec<String>,
    refs: Vec<JobTaskRef>,
}

/// A command line SGE rejects before contacting the qmaster; always exit status 1.
#[derive(Debug, thiserror::Error)]
enum UsageError {
    /// Printed after the usage, on stderr.
    #[error("error: -t option must have a list of task id ranges")]
    MissingTaskRange,
    #[error(
        "error: Numerical value invalid!\nThe initial portion of string \"{0}\" contains no decimal number"
    )]
    BadTaskRange(String),
    #[error("error: -t option only allows one range specification")]
    SeveralTaskRanges,
    /// Without the usage.
    #[error("error: found lonely '-t {0}' option (The -t option needs a leading job name).")]
    LonelyTaskRange(String),
    #[error("error: ERROR! \"{0}\" is an invalid job-task identifier")]
    BadJobTask(String),
}

impl UsageError {
    fn shows_usage(&self) -> bool {
        matches!(
            self,
            UsageError::MissingTaskRange
                | UsageError::BadTaskRange(_)
                | UsageError::SeveralTaskRanges
        )
    }
}

/// Parses `n[-m[:s]]` as SGE's range parser does for job_task_lists, where task id 0 is
/// allowed: `qdel 5.0` reports that task 0 does not exist, and for `qhold` a range starting at
/// 0 means every task (`JAT_task_number` 0). The shared [`TaskIdRange::parse`] refuses 0, as
/// `qsub -t` must.
pub(crate) fn parse_task_range(text: &str) -> Option<TaskIdRange> {
    let num = |s: &str| s.trim().parse::<u32>().ok();
    let (range, step) = match text.split_once(':') {
        Some((r, s)) => (r, Some(num(s)?)),
        None => (text, None),
    };
    let (a, b) = match range.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None if step.is_none() => {
            let a = num(range)?;
            (a, a)
        }
        None => return None,
    };
    if step == Some(0) {
        return None;
    }
    Some(TaskIdRange::new(a, b, step.unwrap_or(1)))
}

/// Parses a `-t` value: one task id range; `2,3` is accepted when it compresses to one range,
/// as SGE's range list does.
pub(crate) fn parse_t_value(text: &str) -> Result<TaskIdRange, TRangeError> {
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let r = parse_task_range(part).ok_or_else(|| TRangeError::Bad(text.to_string()))?;
        ranges.push(r);
    }
    if ranges.len() == 1 {
        return Ok(ranges[0]);
    }
    let mut ids: Vec<u32> = ranges.iter().flat_map(|r| r.iter()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut set = TaskSet::new();
    for id in ids {
        set.insert(id);
    }
    match set.ranges() {
        [one] => Ok(*one),
        _ => Err(TRangeError::Several),
    }
}

/// Why a `-t` value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TRangeError {
    Bad(String),
    Several,
}

/// Parses one word of a job_task_list as SGE does: a word starting with a digit must be
/// `job_id[.task_id_range]` with a job id above 0; anything else is a job name or pattern.
pub(crate) fn parse_job_word(word: &str) -> Result<Vec<JobTaskRef>, String> {
    let mut refs = Vec::new();
    for part in word.split(',').filter(|p| !p.is_empty()) {
        if !part.starts_with(|c: char| c.is_ascii_digit()) {
            refs.push(JobTaskRef {
                text: part.to_string(),
                job: JobRef::Name(part.to_string()),
                tasks: None,
            });
            continue;
        }
        let bad = || part.to_string();
        let (id, tasks) = match part.split_once('.') {
            Some((id, range)) => (id, Some(parse_task_range(range).ok_or_else(bad)?)),
            None => (part, None),
        };
        let id: u32 = id.parse().map_err(|_| bad())?;
        if id == 0 {
            return Err(bad());
        }
        refs.push(JobTaskRef {
            text: part.to_string(),
            job: JobRef::Id(JobId(id)),
            tasks,
        });
    }
    Ok(refs)
}

/// SGE's stage 1 (`sge_parse_cmdline_qdel`) and stage 2 (`sge_parse_qdel`). Every word that is
/// not `-help`, `-f`, `-u` or `-t` is a job_task_list word, even one starting with `-` (SGE's
/// `qdel -badopt 1` looks for a job named `-badopt`).
fn parse(args: &[String]) -> Result<QdelArgs, UsageError> {
    let mut out = QdelArgs::default();
    // Stage 1: words, with -t attached to the job word typed before it.
    let mut words: Vec<String> = Vec::new();
    let mut t_options: Vec<(usize, String, TaskIdRange)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_str();
        i += 1;
        match word {
            "-help" => out.help = true,
            "-f" | "--force" => out.force = true,
            "-u" => {
                // SGE skips a trailing -u without a list.
                if let Some(list) = args.get(i) {
                    out.users = list
                        .split(',')
                        .filter(|u| !u.is_empty())
                        .map(String::from)
                        .collect();
                    i += 1;
                }
            }
            "-t" => {
                let Some(value) = args.get(i) else {
                    return Err(UsageError::MissingTaskRange);
                };
                i += 1;
                let range = parse_t_value(value).map_err(|e| match e {
                    TRangeError::Bad(v) => UsageError::BadTaskRange(v),
                    TRangeError::Several => UsageError::SeveralTaskRanges,
                })?;
                t_options.push((words.len(), value.clone(), range));
            }
            _ => words.push(word.to_string()),
        }
    }
    if out.help {
        return Ok(out);
    }
    // Stage 2: job words, then each -t onto the last job of the word before it.
    let mut per_word: Vec<Vec<JobTaskRef>> = Vec::with_capacity(words.len());
    for w in &words {
        per_word.push(parse_job_word(w).map_err(UsageError::BadJobTask)?);
    }
    for (after, text, range) in t_options {
        let target = per_word[..after]
            .iter_mut()
            .rev()
            .find_map(|w| w.last_mut());
        match target {
            Some(r) => r.tasks = Some(range),
            None => return Err(UsageError::LonelyTaskRange(text)),
        }
    }
    out.refs = per_word.into_iter().flatten().collect();
    Ok(out)
}

/// One delete pass over the command line: the messages, the actions to publish, and whether
/// anything was refused or not found (exit status 1).
#[derive(Debug, Default)]
struct Pass {
    lines: Vec<String>,
    actions: Vec<RequestAction>,
    failed: bool,
}

/// Who `-u` and names select: SGE's `user_list_flag` / `all_users_flag`.
enum UserFilter {
    Any,
    AllUsers,
    Users(Vec<String>),
}

impl UserFilter {
    fn admits(&self, job: &JobRecord) -> bool {
        match self {
            UserFilter::Any | UserFilter::AllUsers => true,
            UserFilter::Users(users) => users
                .iter()
                .any(|u| pattern::matches(u, &job.submitter.owner)),
        }
    }
}

/// SGE prints at most 20 users, then `...`.
fn user_list_text(users: &[String]) -> String {
    let mut parts: Vec<&str> = users.iter().take(20).map(String::as_str).collect();
    if users.len() > 20 {
        parts.push("...");
    }
    parts.join(",")
}

/// The job part of a reference as SGE prints it in "does not exist" messages.
fn job_text(r: &JobTaskRef) -> String {
    match &r.job {
        JobRef::Id(id) => id.to_string(),
        JobRef::Name(n) => n.clone(),
    }
}

/// What one deleted job says (`sge_delete_all_tasks_of_job`): one line per running task, then
/// one for the pending tasks.
fn delete_lines(
    user: &str,
    job: &JobRecord,
    tasks: Option<&TaskSet>,
    o: &DeleteOutcome,
) -> Vec<String> {
    let id = job.id;
    let array = job.is_array();
    let mut lines = Vec::new();
    for (t, what) in &o.running {
        lines.push(match (what, array) {
            (RunningDeletion::Registered, true) => {
                format!("{user} has registered the job-array task {id}.{t} for deletion")
            }
            (RunningDeletion::Registered, false) => {
                format!("{user} has registered the job {id} for deletion")
            }
            (RunningDeletion::AlreadyDeleting, _) => format!("job {id} is already in deletion"),
            (RunningDeletion::Forced, true) => {
                format!("{user} forced the deletion of job-array task {id}.{t}")
            }
            (RunningDeletion::Forced, false) => format!("{user} forced the deletion of job {id}"),
        });
    }
    if o.pending.is_empty() {
        return lines;
    }
    match tasks {
        None => lines.push(format!("{user} has deleted job {id}")),
        Some(_) if o.pending.len() == 1 => {
            let t = o.pending.first().unwrap_or_default();
            lines.push(format!("{user} has deleted job-array task {id}.{t}"));
        }
        Some(_) => lines.push(format!(
            "{user} has deleted job-array tasks {} of job {id}",
            o.pending
        )),
    }
    lines
}

/// `empty_job_list_filter`: what SGE says when an operand deleted nothing.
fn nothing_deleted(r: Option<&JobTaskRef>, filter: &UserFilter, job_found: bool) -> String {
    let users = match filter {
        UserFilter::Users(u) => Some(user_list_text(u)),
        _ => None,
    };
    if matches!(filter, UserFilter::AllUsers) {
        return "There are no jobs registered".to_string();
    }
    let Some(r) = r else {
        return format!(
            "There is no job registered for the following users: {}",
            users.unwrap_or_default()
        );
    };
    let jid = job_text(r);
    let task_part = match (r.tasks, job_found) {
        (Some(range), true) if range.is_single() => {
            Some(format!("job \"{jid}\" task \"{}\"", range.first))
        }
        (Some(range), true) => Some(format!(
            "job \"{jid}\" task id range \"{}-{}:{}\"",
            range.first, range.last, range.step
        )),
        _ => None,
    };
    match (task_part, users) {
        (Some(t), Some(u)) if r.tasks.is_some_and(|x| x.is_single()) => {
            format!("{t} does not exist for user(s) {u}")
        }
        (Some(t), Some(u)) => format!("{t} comprises no tasks under user(s) {u}"),
        (Some(t), None) if r.tasks.is_some_and(|x| x.is_single()) => format!("{t} does not exist"),
        (Some(t), None) => format!("{t} comprises no tasks"),
        (None, Some(u)) => format!("The job {jid} of user(s) {u} does not exist"),
        (None, None) => format!("denied: job \"{jid}\" does not exist"),
    }
}

/// Runs one pass of deletions over `jobs` (changed in place), as `sge_gdi_del_job` does for
/// each element of the request, in order.
fn delete_pass(jobs: &mut Vec<JobRecord>, who: &Requester, args: &QdelArgs, force: bool) -> Pass {
    let mut pass = Pass::default();
    let all_users = args.users.iter().any(|u| u == "*");
    // `qdel -u list` alone is one element with job id "0": every job of the users.
    let refs: Vec<Option<&JobTaskRef>> = if args.refs.is_empty() {
        vec![None]
    } else {
        args.refs.iter().map(Some).collect()
    };
    for r in refs {
        let filter = if all_users {
            UserFilter::AllUsers
        } else if !args.users.is_empty() {
            UserFilter::Users(args.users.clone())
        } else if r.is_some_and(|r| matches!(r.job, JobRef::Name(_))) {
            // Names select only the caller's own jobs unless -u says whose.
            UserFilter::Users(vec![who.user.clone()])
        } else {
            UserFilter::Any
        };
        if all_users && r.is_none() && !who.manager {
            pass.lines.push(format!(
                "denied: \"{}\" must be manager to modify all jobs",
                who.user
            ));
            pass.failed = true;
            continue;
        }
        let selector = r.and_then(|r| r.tasks).map(TaskSet::from_range);
        let ids: Vec<JobId> = jobs
            .iter()
            .filter(|j| !j.tasks.is_done() && filter.admits(j) && r.is_none_or(|r| r.selects(j)))
            .map(|j| j.id)
            .collect();
        let mut acted = false;
        for id in &ids {
            let Ok(i) = jobs.binary_search_by_key(id, |j| j.id) else {
                continue;
            };
            let action = RequestAction::Delete {
                job: *id,
                tasks: selector
                    .clone()
                    .map_or(TaskSelector::All, TaskSelector::Tasks),
                force,
            };
            match Request::apply(&action, who, &mut jobs[i]) {
                Ok(Outcome::Delete(o)) => {
                    if o.is_empty() {
                        continue;
                    }
                    acted = true;
                    pass.lines
                        .extend(delete_lines(&who.user, &jobs[i], selector.as_ref(), &o));
                    let changed = !o.pending.is_empty()
                        || o.running
                            .iter()
                            .any(|(_, w)| *w != RunningDeletion::AlreadyDeleting);
                    if changed {
                        pass.actions.push(action);
                    }
                    if o.gone && jobs[i].tasks.finished == 0 {
                        jobs.remove(i);
                    }
                }
                Ok(_) => {}
                Err(Denied::DeletePrivilege { user, job }) => {
                    acted = true;
                    pass.failed = true;
                    pass.lines.push(format!(
                        "{user} - you do not have the necessary privileges to delete the job \"{job}\""
                    ));
                }
                Err(e) => {
                    // Only a forced deletion by a non-manager gets here; SGE's client does not
                    // print that pass.
                    acted = true;
                    pass.failed = true;
                    pass.lines.push(e.to_string());
                }
            }
        }
        if !acted {
            pass.failed = true;
            pass.lines
                .push(nothing_deleted(r, &filter, !ids.is_empty()));
        }
    }
    pass
}

/// What `qdel` prints and publishes. `load` gives the environment (only once the command
/// line is known to need the spool: usage errors and `-help` do not, as in SGE);
/// `wait_step` is called twelve times, between the dots of a non-manager's `-f`.
pub fn execute(
    args: &[String],
    load: impl FnOnce() -> Result<ClientEnv, Output>,
    wait_step: &mut dyn FnMut(&mut Output),
) -> Output {
    let mut o = Output::default();
    let parsed = match parse(args) {
        Ok(p) => p,
        Err(e) => {
            if e.shows_usage() {
                o.stderr.push_str(&docs::help_text(&DOC));
            }
            o.err(e.to_string());
            o.code = 1;
            return o;
        }
    };
    if parsed.help {
        o.stdout.push_str(&docs::help_text(&DOC));
        return o;
    }
    if parsed.refs.is_empty() && parsed.users.is_empty() {
        o.out("ERROR! no option argument");
        o.stderr.push_str(&docs::help_text(&DOC));
        o.code = 1;
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
    // sge_gdi_del_job refuses `-f` from non-managers; SGE's client first deletes normally,
    // waits a minute, then tries the forced deletion without printing its answer.
    let forced_by_manager = parsed.force && who.manager;
    let pass = delete_pass(&mut jobs, &who, &parsed, forced_by_manager);
    // Publish before printing: a message must never claim a deletion that was not written.
    if !pass.actions.is_empty()
        && let Err(e) = env.spool.publish_request(who.clone(), pass.actions)
    {
        o.err(format!("error: {e}"));
        o.code = 1;
        return o;
    }
    for line in &pass.lines {
        o.out(line);
    }
    o.code = u8::from(pass.failed);
    if parsed.force && !who.manager {
        for _ in 0..12 {
            wait_step(&mut o);
        }
        o.out("");
        // Every action of this pass is refused (or finds nothing left), so SGE's exit status
        // is 1 and there is nothing to publish.
        let forced = delete_pass(&mut jobs, &who, &parsed, true);
        if forced.failed {
            o.code = 1;
        }
    }
    o
}

pub fn main(mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    let mut step = |o: &mut Output| {
        // Show the dots as they come, as SGE does.
        o.stdout.push('.');
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(o.stdout.as_bytes())
            .and_then(|()| out.flush());
        o.stdout.clear();
        std::thread::sleep(Duration::from_secs(5));
    };
    execute(&args, || super::load_env(spool), &mut step).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Issue 12: any words parse or are refused; never a panic.
        #[test]
        fn any_words_parse_or_are_refused(
            words in crate::compat::options::hostile_words(&["-f", "--force", "-help", "-u", "-t"]),
        ) {
            let _ = parse(&words);
        }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn unknown_dash_words_are_job_names_and_t_follows_its_job() {
        let p = parse(&words("-badopt 1")).expect("parse");
        assert_eq!(p.refs[0].job, JobRef::Name("-badopt".into()));
        assert_eq!(p.refs[1].job, JobRef::Id(JobId(1)));
        let p = parse(&words("8,12 10 -t 4")).expect("parse");
        assert_eq!(p.refs.len(), 3);
        assert_eq!(p.refs[2].tasks, Some(TaskIdRange::single(4)));
        assert!(p.refs[1].tasks.is_none());
        let p = parse(&words("10 -t 2,3")).expect("parse");
        assert_eq!(p.refs[0].tasks, Some(TaskIdRange::new(2, 3, 1)));
    }

    #[test]
    fn usage_errors_read_like_sge() {
        let e = parse(&words("-t 3")).expect_err("lonely");
        assert_eq!(
            e.to_string(),
            "error: found lonely '-t 3' option (The -t option needs a leading job name)."
        );
        assert!(matches!(
            parse(&words("5 -t")),
            Err(UsageError::MissingTaskRange)
        ));
        assert!(matches!(
            parse(&words("5 -t 1-2,5-6")),
            Err(UsageError::SeveralTaskRanges)
        ));
        let e = parse(&words("51.x")).expect_err("bad");
        assert_eq!(
            e.to_string(),
            "error: ERROR! \"51.x\" is an invalid job-task identifier"
        );
        assert!(matches!(parse(&words("0")), Err(UsageError::BadJobTask(_))));
        // Task 0 parses (and then does not exist), as in SGE.
        let p = parse(&words("5.0-2 6 -t 0")).expect("parse");
        assert_eq!(p.refs[0].tasks, Some(TaskIdRange::new(0, 2, 1)));
        assert_eq!(p.refs[1].tasks, Some(TaskIdRange::new(0, 0, 1)));
        // -help wins over bad job words (stage 2 looks at it first).
        assert!(parse(&words("51.x -help")).expect("help").help);
        // A trailing -u without a list is skipped.
        let p = parse(&words("-u")).expect("parse");
        assert!(p.users.is_empty() && p.refs.is_empty());
    }

    #[test]
    fn help_matches_the_capture_layout() {
        let text = docs::help_text(&DOC);
        assert!(text.starts_with("SGE 8.1.9\nusage: qdel [options] job_task_list\n   [-f]"));
        assert!(text.ends_with("user_list               user[,user,...]\n"));
    }
}
