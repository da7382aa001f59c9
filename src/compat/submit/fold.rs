//! The fold of options from every source, in precedence order, into one job: the merge
//! rules of the module's top (`super`) applied option by option.

use super::SubmitError;
use super::values::{
    Verify, cluster_path, comma_list, context_list, date_time, env_list, hold_list,
    job_name_syntax, job_share, mail_options, merge_env, merge_mail, merge_paths, path_list,
    priority, push_resource, resource_list, slot_range, task_concurrency, task_range, verify_level,
    yes_no,
};
use crate::compat::options::{Origin, ParsedOption, Support};
use crate::config::ClusterConfig;
use crate::model::{EnvVar, JobSpec, PeRequest};

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
            "-ar" => {
                spec.ar = Some(v.parse::<u32>().map_err(|_| {
                    SubmitError::Usage(
                        "invalid advance reservation id, must be an unsigned integer".into(),
                    )
                })?);
            }
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
