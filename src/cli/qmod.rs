//! `qmod`: changes the state of queue instances, with SGE 8.1.9's messages and exit codes.
//! For now `-d` (disable: no new work; running jobs go on) and `-e` (enable) of queue
//! instances (`all.q`, `all.q@host`, `all.q@@hostgroup`, wildcards), by operators and
//! managers. The client decides the messages from the states `sched_d` keeps
//! (`daemon/qinstances.json`) and publishes one request, which `sched_d` applies.

use super::Output;
use crate::compat::docs::{CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{Arity, OptionSpec, Support};
use crate::model::RequestAction;

/// qmod's options, in SGE 8.1.9's `-help` order; those gridspool does not implement yet are
/// listed (so that `-help` matches SGE) and refused with a message.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-c",
        Arity::One,
        "[-c job_wc_queue_list]",
        "clear error state",
    )
    .unsupported(),
    OptionSpec::new("-cj", Arity::One, "[-cj job_list]", "clear job error state").unsupported(),
    OptionSpec::new(
        "-cq",
        Arity::One,
        "[-cq wc_queue_list]",
        "clear queue error state",
    )
    .unsupported(),
    OptionSpec::new("-d", Arity::One, "[-d wc_queue_list]", "disable"),
    OptionSpec::new("-e", Arity::One, "[-e wc_queue_list]", "enable"),
    OptionSpec::new("-f", Arity::Flag, "[-f]", "force action"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-r",
        Arity::One,
        "[-r job_wc_queue_list]",
        "reschedule jobs (running in queue)",
    )
    .unsupported(),
    OptionSpec::new("-rj", Arity::One, "[-rj job_list]", "reschedule jobs").unsupported(),
    OptionSpec::new(
        "-rq",
        Arity::One,
        "[-rq wc_queue_list]",
        "reschedule all jobs in a queue",
    )
    .unsupported(),
    OptionSpec::new("-s", Arity::One, "[-s job_wc_queue_list]", "suspend").unsupported(),
    OptionSpec::new("-sj", Arity::One, "[-sj job_list]", "suspend jobs").unsupported(),
    OptionSpec::new("-sq", Arity::One, "[-sq wc_queue_list]", "suspend queues").unsupported(),
    OptionSpec::new("-us", Arity::One, "[-us job_wc_queue_list]", "unsuspend").unsupported(),
    OptionSpec::new("-usj", Arity::One, "[-usj job_list]", "unsuspend jobs").unsupported(),
    OptionSpec::new(
        "-usq",
        Arity::One,
        "[-usq wc_queue_list]",
        "unsuspend queues",
    )
    .unsupported(),
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
    summary: "disable and enable gridspool queue instances",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 24,
    syntax_width: 27,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qmod -d disables the queue instances of wc_queue_list: sched_d starts nothing more there, the jobs running there go on, and qstat -f shows them in state d. qmod -e enables them again. A cluster queue (all.q) stands for all its instances; all.q@host for one, all.q@@group for those on a host group's hosts; names may be wildcard patterns. Only operators and managers may change a queue instance.",
        "The states are kept by sched_d in daemon/qinstances.json in the cell, apart from config.yaml (a queue's disabled there is the administrator's own); they survive restarts of sched_d.",
    ],
    option_details: &[(
        "-f",
        "Accepted as SGE accepts it; disabling and enabling never need the execution host, so there is nothing to force.",
    )],
    value_hints: &[],
    exit_status: &[
        (
            "0",
            "Every instance is in the state asked for (changed, or already so).",
        ),
        (
            "1",
            "An unknown or unsupported option, a missing argument, a queue that does not exist, a caller who may not change it, or a cell that cannot be read or written.",
        ),
    ],
    compatibility: &[
        "Suspending, unsuspending, clearing error states and rescheduling (-s -us -c -r and their -j/-q forms) are listed as SGE lists them and refused with a message.",
    ],
    see_also: &["qstat", "qconf", "sched_d"],
};

/// The `qmod` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::admin_main(args, &DOC, run)
}

/// Runs `qmod args` as the caller of `env` (`-help` and an empty command line are
/// [`super::admin_main`]'s).
pub fn run(args: &[String], env: &super::ClientEnv) -> Output {
    let mut o = Output::default();
    // (wc_queue_list, disable) in the order given.
    let mut changes: Vec<(&str, bool)> = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
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
        match word.as_str() {
            "-d" | "-e" => match words.next() {
                Some(list) => changes.push((list, word == "-d")),
                None => {
                    o.err(format!("{word} option must have argument"));
                    o.code = 1;
                    return o;
                }
            },
            // `-f`: nothing to force (see the man page).
            _ => {}
        }
    }
    let who = env.requester();
    let may =
        env.config.is_manager(&who.user, who.uid) || env.config.is_operator(&who.user, who.uid);
    let states = env.spool.queue_instance_states();
    let mut actions = Vec::new();
    let mut lines = Vec::new();
    for (list, disable) in changes {
        for wc in list.split(',').filter(|w| !w.is_empty()) {
            let instances = instances_matching(&env.config, wc);
            if instances.is_empty() {
                lines.push(format!("invalid queue \"{wc}\""));
                o.code = 1;
                continue;
            }
            let mut changed = Vec::new();
            for qi in instances {
                let queue_disabled = qi
                    .split_once('@')
                    .and_then(|(q, _)| env.config.queue(q))
                    .is_some_and(|q| q.disabled);
                let now_disabled = queue_disabled || states.disabled.contains(&qi);
                let word = if disable { "disabled" } else { "enabled" };
                if !may {
                    lines.push(format!(
                        "{} - you have no permission to modify queue \"{qi}\"",
                        who.user
                    ));
                    o.code = 1;
                } else if now_disabled == disable && (disable || !queue_disabled) {
                    lines.push(format!(
                        "Queue instance \"{qi}\" is already in the specified state: {word}"
                    ));
                } else {
                    lines.push(format!(
                        "{}@{} changed state of \"{qi}\" ({word})",
                        who.user, env.host
                    ));
                    changed.push(qi);
                }
            }
            if !changed.is_empty() {
                actions.push(RequestAction::QueueState {
                    instances: changed,
                    disabled: disable,
                });
            }
        }
    }
    // Published before it is said: a message never claims a change that was not written.
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
    o
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
