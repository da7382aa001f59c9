//! `qalter`: change attributes of pending (and, for most attributes, running) jobs, as SGE
//! 8.1.9's `qalter(1)` does.
//!
//! Options are parsed with `qalter`'s own table and folded like `qsub`'s
//! (`compat::submit::fold`); each attribute an option sets becomes one `SpecChange` that
//! replaces the job's value (qalter(1): "an option specified with qalter completely replaces any
//! parameters previously specified for the job by that option"). `-h hold_list` becomes hold
//! and release actions. What to print is decided by applying the request to the current view of
//! each job with `Request::apply`, so refusals print SGE's words and publish nothing for that
//! job; the accepted actions of all jobs go out as one request.

use super::{ClientEnv, Output, take_spool_arg};
use crate::compat::job_list::{self, JobTaskRef};
use crate::compat::options::{OperandMode, Origin, ParsedArgs, parse};
use crate::compat::pattern;
use crate::compat::qsub_options::{QALTER_OPTIONS, qalter_help};
use crate::compat::submit::{
    FoldContext, Folded, SubmitError, SubmitterRights, Touched, Verify, check_option, context_list,
    fold, job_name_valid, validate_attributes, verify_against_config,
};
use crate::model::{
    HoldEvent, HoldType, Holds, JobId, JobRecord, JobSpec, Outcome, Request, RequestAction,
    Requester, SpecChange, TaskSelector, TaskSet,
};
use crate::spool::JobScan;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

const PROG: &str = "qalter";

/// Entry point of the `qalter` binary.
pub fn main(mut args: Vec<String>) -> ExitCode {
    let spool = take_spool_arg(&mut args);
    run(args, spool).finish()
}

fn usage_error(e: &SubmitError) -> Output {
    Output {
        stdout: String::new(),
        stderr: e.render(PROG),
        code: e.code(),
    }
}

/// A qmaster answer that refuses the whole request: printed on stdout, exit 1.
fn refused(text: &str) -> Output {
    let mut o = Output {
        code: 1,
        ..Output::default()
    };
    o.out(text);
    o
}

fn run(args: Vec<String>, spool_dir: Option<PathBuf>) -> Output {
    let parsed = match parse(
        QALTER_OPTIONS,
        &args,
        OperandMode::Interleaved,
        &Origin::CommandLine,
    ) {
        Ok(p) => p,
        Err(e) => return usage_error(&SubmitError::Usage(e.to_string())),
    };
    if parsed.options.iter().any(|o| o.spec.name == "-help") {
        return Output {
            stdout: qalter_help(),
            ..Output::default()
        };
    }
    for opt in &parsed.options {
        if let Err(e) = check_option(opt, PROG) {
            return match e {
                SubmitError::Rejected(m) => refused(&m),
                e => usage_error(&e),
            };
        }
    }
    if let Some(lonely) = lonely_dash_t(&parsed) {
        let mut o = Output {
            code: 2,
            ..Output::default()
        };
        o.err(format!(
            "found lonely '-t {lonely}' option (The -t option needs a leading job name)."
        ));
        return o;
    }
    let refs = match job_list::from_args(&parsed) {
        Ok(r) => r,
        Err(_) => {
            let bad = parsed.operands.join(",");
            let mut o = Output {
                code: 2,
                ..Output::default()
            };
            o.err(format!(
                "ERROR! \"{bad}\" is an invalid job-task identifier"
            ));
            return o;
        }
    };
    let users: Vec<String> = parsed
        .options
        .iter()
        .filter(|o| o.spec.name == "-u")
        .flat_map(|o| crate::compat::submit::comma_list(&o.values[0]))
        .collect();
    // SGE's qalter does nothing, successfully, without a job list.
    if refs.is_empty() && users.is_empty() {
        return Output::default();
    }
    let env = match super::load_env(spool_dir) {
        Ok(env) => env,
        Err(out) => return out,
    };
    let (environ, environ_not_utf8) = super::qsub::environ();
    let (cwd, cwd_is_text) = match std::env::current_dir() {
        Ok(p) => match p.into_os_string().into_string() {
            Ok(text) => (text, true),
            Err(os) => (os.to_string_lossy().into_owned(), false),
        },
        Err(_) => ("/".to_string(), true),
    };
    let folded = match fold(
        &parsed.options,
        FoldContext {
            config: &env.config,
            environ: &environ,
            environ_not_utf8: &environ_not_utf8,
            cwd: &cwd,
        },
    ) {
        Ok(f)
            if !cwd_is_text
                && f.touched.contains(&Touched::Cwd)
                && f.spec.cwd.as_deref() == Some(&cwd) =>
        {
            return usage_error(&SubmitError::NotUtf8(format!(
                "the current directory {cwd:?}, which -cwd makes the job's,"
            )));
        }
        Ok(f) => f,
        Err(SubmitError::Rejected(m)) => return refused(&m),
        Err(e) => return usage_error(&e),
    };
    for w in &folded.warnings {
        let _ =
            std::io::Write::write_fmt(&mut std::io::stderr().lock(), format_args!("{PROG}: {w}\n"));
    }
    let scan = match env.spool.scan_jobs() {
        Ok(s) => s,
        Err(e) => return refused(&format!("error: {e}")),
    };
    alter(&env, &parsed, &folded, &refs, &users, &scan)
}

/// A `-t` with no job before it.
fn lonely_dash_t(parsed: &ParsedArgs) -> Option<String> {
    parsed
        .options
        .iter()
        .find(|o| o.spec.name == "-t" && o.operands_before == 0)
        .map(|o| o.values[0].clone())
}

/// The jobs a job_task_list or `-u` selects, with the tasks named; or SGE's refusal line.
fn select<'a>(
    scan: &'a JobScan,
    refs: &[JobTaskRef],
    users: &[String],
) -> (Vec<(&'a JobRecord, Option<TaskSet>)>, Vec<String>) {
    let mut jobs: Vec<(&JobRecord, Option<TaskSet>)> = Vec::new();
    let mut missing = Vec::new();
    for r in refs {
        let hits: Vec<&JobRecord> = scan.jobs.iter().filter(|j| r.selects(j)).collect();
        if hits.is_empty() {
            missing.push(format!("denied: job \"{}\" does not exist", r.text));
        }
        for j in hits {
            if !jobs.iter().any(|(x, _)| x.id == j.id) {
                jobs.push((j, r.tasks.map(TaskSet::from_range)));
            }
        }
    }
    let mut by_user = 0;
    for j in &scan.jobs {
        let mine = users
            .iter()
            .any(|u| pattern::matches(u, &j.submitter.owner));
        if mine {
            by_user += 1;
            if !jobs.iter().any(|(x, _)| x.id == j.id) {
                jobs.push((j, None));
            }
        }
    }
    if !users.is_empty() && by_user == 0 {
        missing.push(format!(
            "The job * of user(s) {} does not exist",
            users.join(",")
        ));
    }
    (jobs, missing)
}

/// SGE's order of the "modified …" lines (qmaster's `mod_job_attributes`, oracle-checked).
const MESSAGE_ORDER: &[Touched] = &[
    Touched::Priority,
    Touched::JobShare,
    Touched::StartTime,
    Touched::Deadline,
    Touched::Account,
    Touched::Cwd,
    Touched::Stderr,
    Touched::Stdin,
    Touched::Reserve,
    Touched::MergeStderr,
    Touched::HardResources,
    Touched::SoftResources,
    Touched::MailOptions,
    Touched::MailList,
    Touched::Name,
    Touched::HoldJid,
    Touched::HoldJidAd,
    Touched::Notify,
    Touched::Stdout,
    Touched::Pe,
    Touched::HardQueues,
    Touched::SoftQueues,
    Touched::MasterQueues,
    Touched::Restartable,
    Touched::Interpreter,
    Touched::Env,
    Touched::Context,
    Touched::Project,
    Touched::TaskConcurrency,
    // gridspool's own attributes come last.
    Touched::Cluster,
    Touched::NoPreempt,
];

/// The job's new context after the `-ac`/`-sc`/`-dc` options, applied in order to its current
/// context.
fn new_context(parsed: &ParsedArgs, job: &JobRecord) -> BTreeMap<String, String> {
    let mut ctx = job.spec.context.clone();
    for o in &parsed.options {
        let v = o.values.first().map_or("", String::as_str);
        match o.spec.name {
            "-ac" => ctx.extend(context_list(v)),
            "-sc" => ctx = context_list(v).into_iter().collect(),
            "-dc" => {
                for (k, _) in context_list(v) {
                    ctx.remove(&k);
                }
            }
            _ => {}
        }
    }
    ctx
}

/// `-hold_jid`/`-hold_jid_ad` words resolved against the scan: (existing jobs, requested ids
/// that do not exist).
fn resolve(scan: &JobScan, words: &[String], owner_uid: u32) -> (Vec<JobId>, Vec<String>) {
    let mut found = Vec::new();
    let mut exited = Vec::new();
    for w in words {
        if let Ok(id) = w.parse::<JobId>() {
            if scan.get(id).is_some() {
                if !found.contains(&id) {
                    found.push(id);
                }
            } else {
                exited.push(w.clone());
            }
            continue;
        }
        for j in &scan.jobs {
            if j.submitter.uid == owner_uid
                && pattern::matches(w, &j.spec.name)
                && !found.contains(&j.id)
            {
                found.push(j.id);
            }
        }
    }
    (found, exited)
}

fn none_or(list: &[String]) -> String {
    if list.is_empty() {
        "NONE".into()
    } else {
        list.join(",")
    }
}

/// A change that SGE reports with one `modified <what> of job <id>` line: the change and
/// its `<what>`; `None` for the changes reported otherwise.
fn plain_change(touched: Touched, s: &JobSpec) -> Option<(SpecChange, &'static str)> {
    Some(match touched {
        Touched::StartTime => (SpecChange::StartTime(s.start_time), "start time"),
        Touched::Deadline => (SpecChange::Deadline(s.deadline), "deadline time"),
        Touched::Account => (SpecChange::Account(s.account.clone()), "account"),
        Touched::Cwd => (SpecChange::Cwd(s.cwd.clone()), "working directory"),
        Touched::Stderr => (SpecChange::Stderr(s.stderr.clone()), "stderr path list"),
        Touched::Stdin => (SpecChange::Stdin(s.stdin.clone()), "stdin path list"),
        Touched::Reserve => (SpecChange::Reserve(s.reserve), "reservation behaviour"),
        Touched::MergeStderr => (
            SpecChange::MergeStderr(s.merge_stderr),
            "output merge behaviour",
        ),
        Touched::HardResources => (
            SpecChange::HardResources(s.hard_resources.clone()),
            "hard resource list",
        ),
        Touched::SoftResources => (
            SpecChange::SoftResources(s.soft_resources.clone()),
            "soft resource list",
        ),
        Touched::MailOptions => (
            SpecChange::MailOptions(s.mail_options.clone()),
            "mail options",
        ),
        Touched::MailList => (SpecChange::MailList(s.mail_list.clone()), "mail list"),
        Touched::Name => (SpecChange::Name(s.name.clone()), "job name"),
        Touched::Notify => (SpecChange::Notify(s.notify), "notify behaviour"),
        Touched::Stdout => (SpecChange::Stdout(s.stdout.clone()), "stdout path list"),
        Touched::HardQueues => (
            SpecChange::HardQueues(s.hard_queues.clone()),
            "hard queue list",
        ),
        Touched::SoftQueues => (
            SpecChange::SoftQueues(s.soft_queues.clone()),
            "soft queue list",
        ),
        Touched::MasterQueues => (
            SpecChange::MasterQueues(s.master_queues.clone()),
            "master hard queue list",
        ),
        Touched::Restartable => (SpecChange::Restartable(s.restartable), "restart behaviour"),
        Touched::Interpreter => (SpecChange::Interpreter(s.interpreter.clone()), "shell list"),
        Touched::Env => (SpecChange::Env(s.env.clone()), "environment"),
        Touched::Project => (SpecChange::Project(s.project.clone()), "project"),
        Touched::TaskConcurrency => (
            SpecChange::TaskConcurrency(s.task_concurrency),
            "task concurrency",
        ),
        Touched::Cluster => (SpecChange::Cluster(s.cluster.clone()), "cluster"),
        Touched::NoPreempt => (SpecChange::NoPreempt(s.no_preempt), "preemption behaviour"),
        _ => return None,
    })
}

/// The changes for one job, with the lines SGE prints once they are accepted.
fn changes_for(
    parsed: &ParsedArgs,
    folded: &Folded,
    scan: &JobScan,
    job: &JobRecord,
    who: &Requester,
) -> (Vec<SpecChange>, Vec<String>) {
    let s = &folded.spec;
    let id = job.id;
    let mut changes = Vec::new();
    let mut lines = Vec::new();
    let modified = |what: &str| format!("modified {what} of job {id}");
    for t in MESSAGE_ORDER {
        if !folded.touched.contains(t) {
            continue;
        }
        if let Some((change, what)) = plain_change(*t, s) {
            changes.push(change);
            lines.push(modified(what));
            continue;
        }
        match t {
            Touched::Context => {
                changes.push(SpecChange::Context(new_context(parsed, job)));
                lines.push(modified("context"));
            }
            Touched::Priority => {
                changes.push(SpecChange::Priority(s.priority));
                lines.push(format!(
                    "{}@{} sets scheduling priority of job {id} to {}",
                    who.user, who.host, s.priority
                ));
            }
            Touched::JobShare => {
                changes.push(SpecChange::JobShare(s.job_share));
                lines.push(format!(
                    "{}@{} sets job share of job {id} to {}",
                    who.user, who.host, s.job_share
                ));
            }
            Touched::HoldJid | Touched::HoldJidAd => {
                let array = *t == Touched::HoldJidAd;
                let (requested, what) = if array {
                    (&s.hold_jid_ad, "array job id hold list")
                } else {
                    (&s.hold_jid, "job id hold list")
                };
                let (resolved, exited) = resolve(scan, requested, job.submitter.uid);
                let blocking: Vec<String> = resolved.iter().map(ToString::to_string).collect();
                lines.push(format!(
                    "{}\n   blocking jobs: {}\n   exited jobs:   {}",
                    modified(what),
                    none_or(&blocking),
                    none_or(&exited)
                ));
                let requested = requested.clone();
                changes.push(if array {
                    SpecChange::HoldJidAd {
                        requested,
                        resolved,
                    }
                } else {
                    SpecChange::HoldJid {
                        requested,
                        resolved,
                    }
                });
            }
            Touched::Pe => {
                changes.push(SpecChange::Pe(s.pe.clone()));
                lines.push(modified("parallel environment"));
                lines.push(modified("slot range"));
            }
            _ => {}
        }
    }
    (changes, lines)
}

/// `-h hold_list` as hold and release actions: `u o s` set, `U O S` release. `n` is one
/// release of all three holds at once, so SGE's rule applies to it as a whole: nothing happens
/// when the job holds nothing, and a user's `-h n` of a user-held job is refused for the
/// manager hold (`must be manager to remove manager hold`, checked on SGE 8.1.9).
fn hold_actions(list: &[char], job: &JobRecord, tasks: &TaskSelector) -> Vec<RequestAction> {
    let all = Holds {
        user: true,
        operator: true,
        system: true,
    };
    list.iter()
        .map(|c| {
            let (hold, on) = match c {
                'u' => (Holds::from(HoldType::User), true),
                'o' => (Holds::from(HoldType::Operator), true),
                's' => (Holds::from(HoldType::System), true),
                'U' => (Holds::from(HoldType::User), false),
                'O' => (Holds::from(HoldType::Operator), false),
                'S' => (Holds::from(HoldType::System), false),
                _ => (all, false),
            };
            let (job, tasks) = (job.id, tasks.clone());
            if on {
                RequestAction::Hold { job, tasks, hold }
            } else {
                RequestAction::Release { job, tasks, hold }
            }
        })
        .collect()
}

/// The holds of every task, pending or running: `-h` on a running job changes its holds too
/// (SGE shows `hr`).
fn task_holds(job: &JobRecord) -> Vec<(TaskSet, String)> {
    let mut all: Vec<(TaskSet, String)> = job
        .tasks
        .pending
        .iter()
        .map(|g| (g.tasks.clone(), g.holds.letters()))
        .collect();
    all.extend(job.tasks.running.iter().map(|r| {
        (
            TaskSet::from_range(crate::model::TaskIdRange::single(r.task)),
            r.holds.letters(),
        )
    }));
    all
}

fn alter(
    env: &ClientEnv,
    parsed: &ParsedArgs,
    folded: &Folded,
    refs: &[JobTaskRef],
    users: &[String],
    scan: &JobScan,
) -> Output {
    let who = env.requester();
    let rights = SubmitterRights {
        uid: env.caller.uid,
        gid: env.caller.gid,
        user: env.caller.user.clone(),
        group: env.caller.group.clone(),
        operator: who.is_operator(),
        manager: who.manager,
        host: env.host.clone(),
    };
    let mut o = Output::default();
    let (jobs, missing) = select(scan, refs, users);
    let spec_options = !folded.touched.is_empty();
    let mut actions = Vec::new();
    for (job, tasks) in jobs {
        if tasks.is_some() && spec_options {
            o.out("denied: the selected option works only on jobs and not on tasks");
            o.code = 4;
            continue;
        }
        // Checks against the configuration of what the options set (untouched attributes
        // keep their defaults in `folded.spec` and so pass).
        let mut check = folded.spec.clone();
        check.array = job.spec.array;
        if folded.touched.contains(&Touched::Pe)
            && let Some(pe) = &check.pe
            && !env
                .config
                .parallel_environments
                .iter()
                .any(|p| pattern::matches(&pe.name, &p.name))
        {
            o.out(format!(
                "denied: parallel environment \"{}\" does not exist",
                pe.name
            ));
            o.code = 1;
            continue;
        }
        let name_check = if folded.touched.contains(&Touched::Name) {
            job_name_valid(&check.name)
        } else {
            Ok(())
        };
        if let Err(e) = name_check.and_then(|()| validate_attributes(&check, &env.config, &rights))
        {
            o.out(match e {
                SubmitError::Rejected(m) => m,
                e => e.to_string(),
            });
            o.code = 1;
            continue;
        }
        let selector = match &tasks {
            Some(t) => TaskSelector::Tasks(t.clone()),
            None => TaskSelector::All,
        };
        let mut view = job.clone();
        let mut job_actions = Vec::new();
        let mut lines = Vec::new();
        if let Some(list) = &folded.hold_list {
            let before = task_holds(&view);
            let mut denied = None;
            for a in hold_actions(list, job, &selector) {
                match Request::apply(&a, &who, &mut view) {
                    Err(d) => denied = Some(d),
                    // A hold type the caller may not touch is refused per task; qalter, like
                    // SGE's, reports the first refusal and leaves the job alone.
                    Ok(Outcome::Hold(h)) => {
                        denied = h.events.into_iter().find_map(|e| match e {
                            HoldEvent::Denied(d) => Some(d),
                            HoldEvent::Modified(_) => None,
                        })
                    }
                    Ok(_) => {}
                }
                if denied.is_some() {
                    break;
                }
                job_actions.push(a);
            }
            if let Some(d) = denied {
                o.out(crate::compat::messages::denied(&d));
                o.code = 1;
                continue;
            }
            if task_holds(&view) != before {
                lines.push(format!("modified hold of job {}", job.id));
            }
        }
        if folded.shove {
            let a = RequestAction::Shove { job: job.id };
            if let Err(d) = Request::apply(&a, &who, &mut view) {
                o.out(crate::compat::messages::denied(&d));
                o.code = 1;
                continue;
            }
            job_actions.push(a);
            lines.push(format!("shoved job {}", job.id));
        }
        let (changes, change_lines) = changes_for(parsed, folded, scan, job, &who);
        if !changes.is_empty() {
            let a = RequestAction::Alter {
                job: job.id,
                changes,
            };
            if let Err(d) = Request::apply(&a, &who, &mut view) {
                o.out(crate::compat::messages::denied(&d));
                o.code = 1;
                continue;
            }
            job_actions.push(a);
            lines.extend(change_lines);
        }
        // SGE refuses `-tc` for a job that is not an array after printing what it changed
        // before, and then changes nothing.
        if folded.touched.contains(&Touched::TaskConcurrency) && job.spec.array.is_none() {
            let tc = format!("modified task concurrency of job {}", job.id);
            for l in lines.iter().take_while(|l| **l != tc) {
                o.out(l);
            }
            o.out("invalid option argument \"task concurrency\"");
            o.code = 1;
            continue;
        }
        // -w: verify the job as it would be after the change (qalter(1)); `v` and `p` only
        // report, `e` refuses the change when no queue could run the job. SGE verifies only
        // jobs that wait for a queue: of a running or held job it says so, and `-w e` then
        // changes it anyway.
        let busy =
            !view.tasks.running.is_empty() || view.tasks.pending.iter().any(|g| g.holds.any());
        match folded.verify {
            Verify::None | Verify::Warning => {}
            Verify::Error | Verify::Verify | Verify::Poke if busy => {
                if folded.verify == Verify::Error {
                    for l in lines {
                        o.out(l);
                    }
                    actions.extend(job_actions);
                }
                o.out("verification: job is already running or is held");
                continue;
            }
            Verify::Error => {
                if !verify_against_config(&view.spec, &env.config, job.id.0).suitable {
                    o.out("error: no suitable queues");
                    o.code = 1;
                    continue;
                }
            }
            Verify::Verify | Verify::Poke => {
                let v = verify_against_config(&view.spec, &env.config, job.id.0);
                if v.suitable {
                    o.out("verification: found suitable queue(s)");
                } else {
                    for r in v.reasons {
                        o.out(r);
                    }
                    o.out("verification: no suitable queues");
                    o.code = 1;
                }
                continue;
            }
        }
        for l in lines {
            o.out(l);
        }
        actions.extend(job_actions);
    }
    for m in missing {
        o.out(m);
        o.code = o.code.max(1);
    }
    if !actions.is_empty()
        && let Err(e) = env.spool.publish_request(who, actions)
    {
        let mut f = Output {
            code: 1,
            ..Output::default()
        };
        f.err(format!("error: {e}"));
        return f;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::options::{OperandMode, Origin, parse};

    #[test]
    fn lonely_t_is_found() {
        let words: Vec<String> = ["-t", "1-2", "5"].iter().map(|s| s.to_string()).collect();
        let p = parse(
            QALTER_OPTIONS,
            &words,
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .expect("parse");
        assert_eq!(lonely_dash_t(&p).as_deref(), Some("1-2"));
        let words: Vec<String> = ["5", "-t", "1-2"].iter().map(|s| s.to_string()).collect();
        let p = parse(
            QALTER_OPTIONS,
            &words,
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .expect("parse");
        assert_eq!(lonely_dash_t(&p), None);
    }
}
