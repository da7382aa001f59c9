//! `qmod`: changes the state of queue instances and jobs, with SGE 8.1.9's messages and exit
//! codes: disable and enable (`-d`, `-e`), suspend and unsuspend (`-s`, `-us`), clear error
//! states (`-c`) and reschedule (`-r`), of queue instances (`all.q`, `all.q@host`,
//! `all.q@@hostgroup`, wildcards; operators and managers) and of jobs and tasks (their
//! owners too). The client decides the messages from the states `sched_d` keeps
//! (`daemon/qinstances.json`, the job records) with the functions `sched_d` applies
//! ([`Request::apply`], [`Request::reschedule`]), and publishes one request.

use super::Output;
use crate::compat::docs::{CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{Arity, OptionSpec, Support};
use crate::model::{
    JobId, Outcome, QmodEvent, Request, RequestAction, RescheduleRules, TaskId, TaskSelector,
};

/// qmod's options, in SGE 8.1.9's `-help` order.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-c",
        Arity::One,
        "[-c job_wc_queue_list]",
        "clear error state",
    ),
    OptionSpec::new("-cj", Arity::One, "[-cj job_list]", "clear job error state"),
    OptionSpec::new(
        "-cq",
        Arity::One,
        "[-cq wc_queue_list]",
        "clear queue error state",
    ),
    OptionSpec::new("-d", Arity::One, "[-d wc_queue_list]", "disable"),
    OptionSpec::new("-e", Arity::One, "[-e wc_queue_list]", "enable"),
    OptionSpec::new("-f", Arity::Flag, "[-f]", "force action"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-r",
        Arity::One,
        "[-r job_wc_queue_list]",
        "reschedule jobs (running in queue)",
    ),
    OptionSpec::new("-rj", Arity::One, "[-rj job_list]", "reschedule jobs"),
    OptionSpec::new(
        "-rq",
        Arity::One,
        "[-rq wc_queue_list]",
        "reschedule all jobs in a queue",
    ),
    OptionSpec::new("-s", Arity::One, "[-s job_wc_queue_list]", "suspend"),
    OptionSpec::new("-sj", Arity::One, "[-sj job_list]", "suspend jobs"),
    OptionSpec::new("-sq", Arity::One, "[-sq wc_queue_list]", "suspend queues"),
    OptionSpec::new("-us", Arity::One, "[-us job_wc_queue_list]", "unsuspend"),
    OptionSpec::new("-usj", Arity::One, "[-usj job_list]", "unsuspend jobs"),
    OptionSpec::new(
        "-usq",
        Arity::One,
        "[-usq wc_queue_list]",
        "unsuspend queues",
    ),
];

/// The legend under qmod's `-help`.
static SYNTAX: &[SyntaxItem] = &[
    SyntaxItem {
        name: "job_wc_queue_list",
        definition: "{job_tasks|wc_queue}[{','|' '}{job_tasks|wc_queue}[{','|' '}...]]",
    },
    SyntaxItem {
        name: "job_list",
        definition: "{job_tasks}[{','|' '}job_tasks[{','|' '}...]]",
    },
    SyntaxItem {
        name: "job_tasks",
        definition: "{{job_id'.'task_id_range}|job_name|pattern}[' -t 'task_id_range]",
    },
    SyntaxItem {
        name: "task_id_range",
        definition: "task_id['-'task_id[':'step]]",
    },
    SyntaxItem {
        name: "wc_cqueue",
        definition: "wildcard expression matching a cluster queue",
    },
    SyntaxItem {
        name: "wc_host",
        definition: "wildcard expression matching a host",
    },
    SyntaxItem {
        name: "wc_hostgroup",
        definition: "wildcard expression matching a hostgroup",
    },
    SyntaxItem {
        name: "wc_qinstance",
        definition: "wc_cqueue@wc_host",
    },
    SyntaxItem {
        name: "wc_qdomain",
        definition: "wc_cqueue@wc_hostgroup",
    },
    SyntaxItem {
        name: "wc_queue",
        definition: "wc_cqueue|wc_qdomain|wc_qinstance",
    },
    SyntaxItem {
        name: "wc_queue_list",
        definition: "wc_queue[','wc_queue[','...]]",
    },
];

pub const DOC: CommandDoc = CommandDoc {
    name: "qmod",
    summary: "modify the state of gridspool queue instances and jobs",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 24,
    syntax_width: 27,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qmod -d disables the queue instances of wc_queue_list: sched_d starts nothing more there, the jobs running there go on, and qstat -f shows them in state d. qmod -e enables them again. A cluster queue (all.q) stands for all its instances; all.q@host for one, all.q@@group for those on a host group's hosts; names may be wildcard patterns.",
        "qmod -sq suspends queue instances: every process of the jobs running there is stopped (SIGSTOP to the job's whole process tree on its host), the jobs keep their slots and show S, the instance shows s and takes no new work; qmod -usq continues them. qmod -sj suspends jobs and array tasks the same way (state s; Ss in a suspended queue), qmod -usj resumes them. -s and -us take queues or jobs.",
        "qmod -cj clears the error state of jobs (Eqw), qmod -cq that of queue instances (E). gridspool keeps one error state per job, where SGE keeps one per array task.",
        "qmod -rj reschedules running jobs: each task is killed and, once it has ended (accounted with failed 25), pending again (Rq) and run anew with RESTARTED=1. A job submitted with -r n is not restartable, and one without -r only in a queue whose rerun is TRUE; with enable_reschedule_kill (sched_d's default) such a task is killed instead, as SGE reaps it. qmod -rq reschedules every job whose master task runs in the queue instances.",
        "Only operators and managers may change a queue instance; the owner of a job may change it too. The states are kept by sched_d in daemon/qinstances.json in the cell, apart from config.yaml; they survive restarts of sched_d. A queue disabled in config.yaml is SGE's initial_state disabled: its instances start disabled and qmod -e enables them.",
    ],
    option_details: &[(
        "-f",
        "Force: a suspension or a resumption is signalled again to a task already in that state, a reschedule applies to tasks that are not restartable.",
    )],
    value_hints: &[],
    exit_status: &[
        (
            "0",
            "Every change asked for was made or was already so, or was refused with a warning (a pending task, a task that is not restartable).",
        ),
        (
            "1",
            "An unknown option, a missing argument, a queue or job that does not exist, a caller who may not change it, a cell that cannot be read or written; and, as in SGE, any qmod -c of a job.",
        ),
    ],
    compatibility: &[
        "The error state is one per job (SGE keeps one per array task), so clearing a task clears its job.",
    ],
    see_also: &["qstat", "qconf", "sched_d"],
};

/// The `qmod` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::admin_main(args, &DOC, run)
}

/// What one `qmod` option does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Disable,
    Enable,
    Suspend,
    Unsuspend,
    ClearError,
    Reschedule,
}

/// What the words after an option may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Targets {
    /// `job_wc_queue_list` (`-s`, `-us`, `-c`, `-r`): queues first, then jobs.
    QueuesOrJobs,
    /// `job_list` (`-sj`, `-usj`, `-cj`, `-rj`).
    Jobs,
    /// `wc_queue_list` (`-d`, `-e`, `-sq`, `-usq`, `-cq`, `-rq`).
    Queues,
}

fn verb_of(option: &str) -> Option<(Verb, Targets)> {
    use Targets::*;
    use Verb::*;
    Some(match option {
        "-d" => (Disable, Queues),
        "-e" => (Enable, Queues),
        "-s" => (Suspend, QueuesOrJobs),
        "-sj" => (Suspend, Jobs),
        "-sq" => (Suspend, Queues),
        "-us" => (Unsuspend, QueuesOrJobs),
        "-usj" => (Unsuspend, Jobs),
        "-usq" => (Unsuspend, Queues),
        "-c" => (ClearError, QueuesOrJobs),
        "-cj" => (ClearError, Jobs),
        "-cq" => (ClearError, Queues),
        "-r" => (Reschedule, QueuesOrJobs),
        "-rj" => (Reschedule, Jobs),
        "-rq" => (Reschedule, Queues),
        _ => return None,
    })
}

/// One word of a list and the `-t` range that followed it.
struct Word {
    text: String,
    tasks: Option<crate::model::TaskIdRange>,
}

/// Runs `qmod args` as the caller of `env` (`-help` and an empty command line are
/// [`super::admin_main`]'s).
pub fn run(args: &[String], env: &super::ClientEnv) -> Output {
    let mut o = Output::default();
    let mut changes: Vec<(Verb, Targets, Vec<Word>)> = Vec::new();
    let mut force = false;
    let mut words = args.iter().peekable();
    while let Some(word) = words.next() {
        if word == "-t" {
            // A task range for the job word before it (`qmod -sj 5 -t 1-2`).
            let Some(range) = words.next() else {
                o.err("-t option must have argument");
                o.code = 1;
                return o;
            };
            let Some(last) = changes.last_mut().and_then(|(_, _, w)| w.last_mut()) else {
                o.err("ERROR! -t option must follow a job");
                o.code = 1;
                return o;
            };
            match crate::model::TaskIdRange::parse(range) {
                Ok(r) => last.tasks = Some(r),
                Err(_) => {
                    o.err(format!("ERROR! \"{range}\" is an invalid task id range"));
                    o.code = 1;
                    return o;
                }
            }
            continue;
        }
        let Some(spec) = OPTIONS.iter().find(|s| s.name == word.as_str()) else {
            o.err(format!("error: invalid option argument \"{word}\""));
            o.err("Usage: qmod -help");
            o.code = 1;
            return o;
        };
        if spec.support == Support::Unsupported {
            o.err(format!(
                "qmod: the {word} option is not supported by gridspool yet"
            ));
            o.code = 1;
            return o;
        }
        if word == "-f" {
            force = true;
            continue;
        }
        let Some((verb, targets)) = verb_of(word) else {
            continue;
        };
        let Some(first) = words.next() else {
            o.err(format!("{word} option must have argument"));
            o.code = 1;
            return o;
        };
        let mut list: Vec<String> = vec![first.clone()];
        // SGE takes the words up to the next option as more of the list.
        while let Some(next) = words.peek() {
            if next.starts_with('-') {
                break;
            }
            list.push((*next).clone());
            words.next();
        }
        let mut ws = Vec::new();
        for w in list {
            if targets == Targets::Jobs {
                if w.contains(',') {
                    o.err(format!("ERROR! \"{w}\" is an invalid job-task identifier"));
                    o.code = 1;
                    return o;
                }
                ws.push(Word {
                    text: w,
                    tasks: None,
                });
            } else {
                ws.extend(w.split(',').filter(|x| !x.is_empty()).map(|x| Word {
                    text: x.to_string(),
                    tasks: None,
                }));
            }
        }
        changes.push((verb, targets, ws));
    }
    let who = env.requester();
    let mut cx = Context {
        env,
        who: &who,
        force,
        states: env.spool.queue_instance_states(),
        jobs: None,
        lines: Vec::new(),
        actions: Vec::new(),
        code: 0,
    };
    for (verb, targets, ws) in &changes {
        for w in ws {
            cx.apply(*verb, *targets, w);
        }
    }
    if cx.code != 0 {
        o.code = 1;
    }
    // Published before it is said: a message never claims a change that was not written.
    if !cx.actions.is_empty()
        && let Err(e) = env.spool.publish_request(who.clone(), cx.actions)
    {
        o.err(format!("error: {e}"));
        o.code = 1;
        return o;
    }
    for line in cx.lines {
        o.out(line);
    }
    o
}

/// The state of one `qmod` call: what it read, says and asks for.
struct Context<'e> {
    env: &'e super::ClientEnv,
    who: &'e crate::model::Requester,
    force: bool,
    states: crate::spool::QueueInstanceStates,
    /// The jobs, read at the first job word.
    jobs: Option<Vec<crate::model::JobRecord>>,
    lines: Vec<String>,
    actions: Vec<RequestAction>,
    code: u8,
}

impl Context<'_> {
    fn apply(&mut self, verb: Verb, targets: Targets, w: &Word) {
        if targets != Targets::Jobs {
            let instances = instances_matching(&self.env.config, &w.text);
            if !instances.is_empty() {
                for qi in instances {
                    self.queue(verb, &qi);
                }
                return;
            }
            if targets == Targets::Queues {
                self.fail(format!("invalid queue \"{}\"", w.text));
                return;
            }
        }
        if matches!(verb, Verb::Disable | Verb::Enable) || !self.job_word(verb, targets, w) {
            self.fail(format!("invalid queue or job \"{}\"", w.text));
        }
    }

    fn fail(&mut self, line: String) {
        self.lines.push(line);
        self.code = 1;
    }

    /// One queue instance: its state (`-d -e -s -us -c`), or the jobs running in it (`-r`).
    fn queue(&mut self, verb: Verb, qi: &str) {
        let who = self.who;
        if !who.is_operator() {
            self.fail(format!(
                "{} - you have no permission to modify queue \"{qi}\"",
                who.user
            ));
            return;
        }
        let queue_disabled = qi
            .split_once('@')
            .and_then(|(q, _)| self.env.config.queue(q))
            .is_some_and(|q| q.disabled);
        let (now, wanted, word) = match verb {
            Verb::Disable | Verb::Enable => {
                let wanted = verb == Verb::Disable;
                // A queue disabled in the configuration is SGE's `initial_state disabled`:
                // its instances are disabled until `-e` enables them.
                let now = self.states.is_disabled(qi, queue_disabled);
                (now, wanted, if wanted { "disabled" } else { "enabled" })
            }
            Verb::Suspend | Verb::Unsuspend => {
                let wanted = verb == Verb::Suspend;
                (
                    self.states.suspended.contains(qi),
                    wanted,
                    if wanted { "suspended" } else { "unsuspended" },
                )
            }
            Verb::ClearError => (self.states.errors.contains_key(qi), false, "no error"),
            Verb::Reschedule => {
                self.reschedule_instance(qi);
                return;
            }
        };
        if now == wanted {
            self.lines.push(format!(
                "Queue instance \"{qi}\" is already in the specified state: {word}"
            ));
            return;
        }
        self.lines.push(format!(
            "{}@{} changed state of \"{qi}\" ({word})",
            who.user, self.env.host
        ));
        let instances = vec![qi.to_string()];
        self.actions.push(match verb {
            Verb::Disable | Verb::Enable => RequestAction::QueueState {
                instances,
                disabled: wanted,
            },
            Verb::Suspend | Verb::Unsuspend => RequestAction::QueueSuspend {
                instances,
                suspended: wanted,
            },
            _ => RequestAction::QueueClearError { instances },
        });
        match verb {
            Verb::Suspend | Verb::Unsuspend => {
                if wanted {
                    self.states.suspended.insert(qi.to_string());
                } else {
                    self.states.suspended.remove(qi);
                }
            }
            Verb::ClearError => {
                self.states.errors.remove(qi);
            }
            Verb::Disable | Verb::Enable => {
                self.states.set_disabled(qi, wanted, queue_disabled);
            }
            Verb::Reschedule => {}
        }
    }

    fn jobs(&mut self) -> &mut Vec<crate::model::JobRecord> {
        if self.jobs.is_none() {
            let scanned = match self.env.spool.scan_jobs() {
                Ok(scan) => scan.jobs,
                Err(e) => {
                    self.lines.push(format!("error: {e}"));
                    self.code = 1;
                    Vec::new()
                }
            };
            self.jobs = Some(scanned);
        }
        self.jobs.get_or_insert_with(Vec::new)
    }

    /// `qmod -rq`: every job running in the instance (as its master queue), in job order.
    fn reschedule_instance(&mut self, qi: &str) {
        let Some((queue, host)) = qi.split_once('@') else {
            return;
        };
        let mut hits: Vec<(JobId, TaskSelector)> = Vec::new();
        for j in self.jobs().iter() {
            let mut tasks = crate::model::TaskSet::new();
            let mut ids: Vec<_> = j
                .tasks
                .running
                .iter()
                .filter(|r| r.queue == queue && r.host == host)
                .map(|r| r.task)
                .collect();
            ids.sort_unstable();
            for t in ids {
                tasks.insert(t);
            }
            if !tasks.is_empty() {
                hits.push((j.id, TaskSelector::Tasks(tasks)));
            }
        }
        for (id, tasks) in hits {
            self.job_action(Verb::Reschedule, id, tasks);
        }
    }

    /// A word naming jobs: an id (`5`, `5.2-3`) or, in a job list, a name or pattern.
    /// `false`: it names none.
    fn job_word(&mut self, verb: Verb, targets: Targets, w: &Word) -> bool {
        let (head, range) = match w.text.split_once('.') {
            Some((id, r)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => {
                match crate::model::TaskIdRange::parse(r) {
                    Ok(r) => (id, Some(r)),
                    Err(_) => return false,
                }
            }
            _ => (w.text.as_str(), None),
        };
        let range = w.tasks.or(range);
        let ids: Vec<JobId> = match head.parse::<u32>() {
            Ok(n) => self
                .jobs()
                .iter()
                .filter(|j| j.id == JobId(n) && !j.tasks.is_done())
                .map(|j| j.id)
                .collect(),
            // Names and patterns only where the list is of jobs (SGE's JOB_DO_ACTION).
            Err(_) if targets == Targets::Jobs => self
                .jobs()
                .iter()
                .filter(|j| {
                    !j.tasks.is_done() && crate::compat::pattern::matches(head, &j.spec.name)
                })
                .map(|j| j.id)
                .collect(),
            Err(_) => Vec::new(),
        };
        if ids.is_empty() {
            return false;
        }
        // SGE's task number 0 stands for every task.
        let tasks = match range {
            Some(r) if r.first > 0 => TaskSelector::Tasks(crate::model::TaskSet::from_range(r)),
            _ => TaskSelector::All,
        };
        for id in ids {
            self.job_action(verb, id, tasks.clone());
        }
        true
    }

    /// Suspends, unsuspends, clears or reschedules tasks of one job, on this client's copy
    /// of the record (what `sched_d` will decide the same way), and words the outcome.
    fn job_action(&mut self, verb: Verb, id: JobId, tasks: TaskSelector) {
        let (force, who) = (self.force, self.who);
        let config = &self.env.config;
        let queue_rerun = |q: &str| config.queue_instance_named(q).is_some_and(|q| q.rerun);
        let rules = RescheduleRules {
            queue_rerun: &queue_rerun,
            reap: config.enable_reschedule_kill(),
        };
        let host = self.env.host.clone();
        let jobs = self.jobs.get_or_insert_with(Vec::new);
        let Some(job) = jobs.iter_mut().find(|j| j.id == id) else {
            return;
        };
        let action = match verb {
            Verb::Suspend | Verb::Unsuspend => RequestAction::Suspend {
                job: id,
                tasks,
                suspend: verb == Verb::Suspend,
                force,
            },
            Verb::ClearError => RequestAction::ClearError { job: id, tasks },
            _ => RequestAction::Reschedule {
                job: id,
                tasks,
                force,
            },
        };
        let outcome = match &action {
            RequestAction::Reschedule { tasks, force, .. } => {
                Request::reschedule(job, who, tasks, *force, &rules)
            }
            _ => match Request::apply(&action, who, job) {
                Ok(Outcome::Qmod(events)) => Ok(events),
                Ok(_) => Ok(Vec::new()),
                Err(d) => Err(d),
            },
        };
        let events = match outcome {
            Ok(events) => events,
            Err(d) => {
                let line = d.to_string();
                self.fail(line);
                return;
            }
        };
        let array = job.is_array();
        let running_host = |t: TaskId| {
            job.tasks
                .running
                .iter()
                .find(|r| r.task == t)
                .map_or(String::new(), |r| r.host.clone())
        };
        let mut lines = Vec::new();
        let mut failed = false;
        let mut changed = false;
        for e in &events {
            let task = match e {
                QmodEvent::Suspended { task, .. }
                | QmodEvent::AlreadySuspended { task, .. }
                | QmodEvent::Unsuspended { task, .. }
                | QmodEvent::AlreadyUnsuspended { task, .. }
                | QmodEvent::ErrorCleared(task)
                | QmodEvent::NotInError(task)
                | QmodEvent::Rescheduled { task, .. }
                | QmodEvent::NotRestartable(task)
                | QmodEvent::QueueNotRerunnable(task)
                | QmodEvent::Reaped(task)
                | QmodEvent::BeingDeleted(task) => *task,
                QmodEvent::NotEnrolled(t) => t.unwrap_or(0),
            };
            let (what, what_cap) = if array {
                (
                    format!("job-array task {id}.{task}"),
                    format!("Job-array task {id}.{task}"),
                )
            } else {
                (format!("job {id}"), format!("Job {id}"))
            };
            let u = &who.user;
            lines.push(match e {
                QmodEvent::Suspended { forced: false, .. } => {
                    changed = true;
                    format!("{u} - suspended {what}")
                }
                QmodEvent::Suspended { forced: true, .. }
                | QmodEvent::AlreadySuspended { forced: true, .. } => {
                    changed = true;
                    format!("{u} - forced suspension of {what}")
                }
                QmodEvent::AlreadySuspended { forced: false, .. } => {
                    format!("{u} - {what} is already suspended")
                }
                QmodEvent::Unsuspended { forced: false, .. } => {
                    changed = true;
                    format!("{u} - unsuspended {what}")
                }
                QmodEvent::Unsuspended { forced: true, .. } => {
                    changed = true;
                    format!("{u}@{host} forced unsuspension of {what}")
                }
                QmodEvent::AlreadyUnsuspended { forced: false, .. } => {
                    format!("{u} - {what} is already unsuspended")
                }
                QmodEvent::AlreadyUnsuspended { forced: true, .. } => {
                    changed = true;
                    format!("{u} - forced enabling of {what}")
                }
                QmodEvent::NotEnrolled(Some(t)) => format!(
                    "Modify operation can not be applied on job-array task {id}.{t} in pending/hold state"
                ),
                QmodEvent::NotEnrolled(None) => format!(
                    "Modify operation can not be applied on job {id} in pending/hold state"
                ),
                // SGE answers both with an error: `qmod -c` of a job always exits 1.
                QmodEvent::ErrorCleared(_) => {
                    changed = true;
                    failed = true;
                    format!("{u}@{host} cleared error state of {what}")
                }
                QmodEvent::NotInError(_) => {
                    failed = true;
                    format!("{what_cap} is not in error state")
                }
                QmodEvent::Rescheduled { task, forced } => {
                    changed = true;
                    format!(
                        "{} rescheduling of {what} on host {}",
                        if *forced { "Forced" } else { "Pushed" },
                        running_host(*task)
                    )
                }
                QmodEvent::NotRestartable(_) => format!("The {what} is not restartable"),
                QmodEvent::QueueNotRerunnable(_) => {
                    format!("The {what} is running in queue none where jobs are not rerunable.")
                }
                QmodEvent::Reaped(_) => {
                    changed = true;
                    format!("Reaping not restartable {what}")
                }
                QmodEvent::BeingDeleted(_) => {
                    format!("The {what} is already in deleted state. No rescheduling!")
                }
            });
        }
        if changed {
            self.actions.push(action);
        }
        self.lines.extend(lines);
        if failed {
            self.code = 1;
        }
    }
}

/// The queue instances (`all.q@node1`) a `wc_queue` names, sorted.
fn instances_matching(config: &crate::config::ClusterConfig, wc: &str) -> Vec<String> {
    let mut out = Vec::new();
    for q in &config.queues {
        for h in config.queue_hosts(q) {
            if crate::compat::qstat::queues::matches_wc_queue(config, wc, &q.name, &h.name) {
                out.push(format!("{}@{}", q.name, h.name));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
