//! `qselect`: prints the queue instances (`all.q@node1`) that its options select, one per
//! line, as SGE 8.1.9 does, so that `qmod -d $(qselect -l arch=lx-amd64)` works. The
//! selection is `qstat -f`'s (`-q`, `-l`, `-pe`, `-qs`: `compat::qstat::queues`).

use super::Output;
use crate::compat::docs::{self, CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{Arity, OptionSpec};
use crate::compat::qstat::{QstatArgs, View, queues};

/// qselect's options, in SGE 8.1.9's `-help` order.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_list]",
        "request the given resources",
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
        "-U",
        Arity::One,
        "[-U user_list]",
        "select only queues where these users have access",
    ),
];

/// The legend under qselect's `-help`.
static SYNTAX: &[SyntaxItem] = &[
    SyntaxItem {
        name: "pe_list",
        definition: "pe[,pe,...]",
    },
    SyntaxItem {
        name: "job_identifier_list",
        definition: "[job_id|job_name|pattern]{, [job_id|job_name|pattern]}",
    },
    SyntaxItem {
        name: "resource_list",
        definition: "resource[=value][,resource[=value],...]",
    },
    SyntaxItem {
        name: "user_list",
        definition: "user|*|@group[,user|*|@group],...]",
    },
    SyntaxItem {
        name: "resource_attributes",
        definition: "resource,resource,...",
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
        name: "wc_queue_list",
        definition: "wc_cqueue|wc_qdomain|wc_qinstance",
    },
    SyntaxItem {
        name: "wc_queue_list",
        definition: "wc_queue[,wc_queue,...]",
    },
];

pub const DOC: CommandDoc = CommandDoc {
    name: "qselect",
    summary: "select gridspool queue instances",
    synopsis: "[options]",
    help_indent: "        ",
    help_width: 34,
    syntax_width: 25,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qselect prints the queue instances its options select, one per line (all of them without options): -q by name (cluster queue, queue@host, queue@@hostgroup, wildcards), -pe those offering one of the parallel environments, -qs those in one of the states (as qstat -f shows them: d disabled, a and u unknown, C and D suspended and disabled by their calendar), -l those satisfying the resource requests as qstat -l does. Its output is meant for qmod: qmod -d `qselect -l arch=lx-amd64`.",
    ],
    option_details: &[(
        "-U",
        "Every queue is open to every user in gridspool (no access lists): -U selects them all.",
    )],
    value_hints: &[],
    exit_status: &[
        ("0", "At least one queue instance was selected."),
        (
            "1",
            "None was, an unknown parallel environment or option, or a cell that cannot be read.",
        ),
    ],
    compatibility: &[],
    see_also: &["qmod", "qstat", "qconf"],
};

/// The `qselect` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::client_main(args, &DOC, run)
}

/// Runs `qselect args` on the cell of `env`.
pub fn run(args: &[String], env: &super::ClientEnv) -> Output {
    let mut o = Output::default();
    // The same selection as `qstat -f` with these options.
    let mut words = vec!["-f".to_string()];
    let mut pes: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(word) = it.next() {
        let Some(spec) = OPTIONS.iter().find(|s| s.name == word.as_str()) else {
            o.stderr.push_str(&docs::help_text(&DOC));
            o.err(format!("invalid option argument \"{word}\""));
            o.code = 1;
            return o;
        };
        let Some(value) = it.next() else {
            o.stderr.push_str(&docs::help_text(&DOC));
            o.err(format!(
                "error: no option argument provided to \"{}\"",
                spec.name
            ));
            o.code = 1;
            return o;
        };
        match word.as_str() {
            // No access lists: every queue is open to every user.
            "-U" => {}
            "-pe" => {
                pes.extend(value.split(',').map(str::to_string));
                words.extend([word.clone(), value.clone()]);
            }
            _ => words.extend([word.clone(), value.clone()]),
        }
    }
    if pes.iter().any(|p| {
        !env.config
            .parallel_environments
            .iter()
            .any(|pe| crate::compat::pattern::matches(p, &pe.name))
    }) {
        o.err("error: no such parallel environment");
        o.code = 1;
        return o;
    }
    let parsed = match QstatArgs::parse(&words) {
        Ok(p) => p,
        Err(e @ crate::compat::qstat::QstatArgError::UnknownQueueState { .. }) => {
            // SGE's qselect reports it twice: as its error, then as the answer it failed on.
            o.err(format!("error: {e}"));
            o.err(e.to_string());
            o.code = 1;
            return o;
        }
        Err(e) => {
            o.err(e.to_string());
            o.code = 1;
            return o;
        }
    };
    let host_loads =
        match super::qhost::host_loads(env, &super::qhost::proc_dir(), crate::time::now()) {
            Ok(l) => l,
            Err(message) => {
                o.err(message);
                o.code = 1;
                return o;
            }
        };
    // SGE selects nothing for a request of an attribute no host has.
    if parsed.resource_requests.iter().any(|(name, _)| {
        !matches!(
            name.as_str(),
            "qname" | "q" | "hostname" | "h" | "slots" | "s"
        ) && !crate::compat::host_attributes::known_attribute(&env.config, name)
    }) {
        o.code = 1;
        return o;
    }
    let load = crate::compat::qstat::HostLoad::local(&env.host);
    let instance_states = env.spool.queue_instance_states();
    let view = View {
        jobs: &[],
        ended: &[],
        config: &env.config,
        caller: &env.caller.user,
        now: crate::time::now(),
        load: &load,
        host_loads: &host_loads,
        storage_blocked: None,
        instance_states: &instance_states,
        estimates: None,
    };
    let selected = queues::instances(&parsed, &view);
    if selected.is_empty() {
        o.code = 1;
    }
    for qi in selected {
        o.out(qi.name);
    }
    o
}
