//! `qquota`: the usage of the cell's resource quota rules (`sge_resource_quota(5)`), as SGE
//! 8.1.9 prints it. The usage is counted from the spool's running tasks, as `qstat` reads
//! them (a client never depends on `sched_d` being up to answer), by the same rules the
//! scheduler applies (`config::resource_quotas`).

use super::Output;
use crate::compat::docs::{self, CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{Arity, OptionSpec};
use crate::compat::qquota::{QquotaSelection, report, table, xml};

/// qquota's options, in SGE 8.1.9's `-help` order.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-h",
        Arity::One,
        "[-h wc_host_list|wc_hostgroup_list]",
        "display only selected hosts",
    ),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_attributes]",
        "request the given resources",
    ),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "display only selected users",
    ),
    OptionSpec::new(
        "-pe",
        Arity::One,
        "[-pe wc_pe_list]",
        "display only selected parallel environments",
    ),
    OptionSpec::new(
        "-P",
        Arity::One,
        "[-P wc_project_list]",
        "display only selected projects",
    ),
    OptionSpec::new(
        "-q",
        Arity::One,
        "[-q wc_cqueue_list]",
        "display only selected queues",
    ),
    OptionSpec::new(
        "-xml",
        Arity::Flag,
        "[-xml]",
        "display the information in XML format",
    ),
];

static SYNTAX: &[SyntaxItem] = &[
    SyntaxItem {
        name: "resource_attributes",
        definition: "resource_name,resource_name,...",
    },
    SyntaxItem {
        name: "wc_cqueue",
        definition: "wildcard expression matching a cluster queue",
    },
    SyntaxItem {
        name: "wc_cqueue_list",
        definition: "wc_cqueue[,wc_cqueue,...]",
    },
    SyntaxItem {
        name: "wc_host",
        definition: "wildcard expression matching a host",
    },
    SyntaxItem {
        name: "wc_host_list",
        definition: "wc_host[,wc_host,...]",
    },
    SyntaxItem {
        name: "wc_hostgroup",
        definition: "wildcard expression matching a hostgroup",
    },
    SyntaxItem {
        name: "wc_hostgroup_list",
        definition: "wc_hostgroup[,wc_hostgroup,...]",
    },
    SyntaxItem {
        name: "wc_pe",
        definition: "wildcard expression matching a parallel environment",
    },
    SyntaxItem {
        name: "wc_pe_list",
        definition: "wc_pe[,wc_pe,...]",
    },
    SyntaxItem {
        name: "wc_project",
        definition: "wildcard expression matching a project",
    },
    SyntaxItem {
        name: "wc_project_list",
        definition: "wc_project[,wc_project,...]",
    },
    SyntaxItem {
        name: "user_list",
        definition: "user[,user,...]",
    },
];

pub const DOC: CommandDoc = CommandDoc {
    name: "qquota",
    summary: "show the usage of gridspool resource quotas",
    synopsis: "[options]",
    help_indent: "  ",
    help_width: 37,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qquota shows, for every enabled resource quota rule (qconf -srqs) that applies to the selection, what the running tasks it counts hold against each of its limits: one line per rule, or per element of a braced filter ({*}) that holds something. Without -u it shows the rules that apply to the calling user.",
        "The usage is counted from the running tasks in the spool, as the scheduler counts it: each task is charged to the first rule of each set whose filters match its owner, project, parallel environment, queue and host.",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        ("0", "The report was printed (maybe empty)."),
        ("1", "An unknown option, or a cell that cannot be read."),
    ],
    compatibility: &[],
    see_also: &["qconf", "qstat"],
};

/// The `qquota` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::client_main(args, &DOC, run)
}

/// Runs `qquota args` on the cell of `env`.
pub fn run(args: &[String], env: &super::ClientEnv) -> Output {
    let mut o = Output::default();
    let mut sel = QquotaSelection::default();
    let mut as_xml = false;
    let mut it = args.iter();
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    while let Some(word) = it.next() {
        let Some(spec) = OPTIONS.iter().find(|s| s.name == word.as_str()) else {
            o.stderr.push_str(&docs::help_text(&DOC));
            o.err(format!("error: invalid option argument \"{word}\""));
            o.code = 1;
            return o;
        };
        if spec.arity == Arity::Flag {
            as_xml |= word == "-xml";
            continue;
        }
        let Some(value) = it.next() else {
            o.stderr.push_str(&docs::help_text(&DOC));
            o.err(format!("error: no option argument provided to \"{word}\""));
            o.code = 1;
            return o;
        };
        let words = list(value);
        match word.as_str() {
            "-h" => sel.hosts.extend(words),
            "-l" => sel.resources.extend(words),
            "-u" => sel.users.extend(words),
            "-pe" => sel.pes.extend(words),
            "-P" => sel.projects.extend(words),
            _ => sel.queues.extend(words),
        }
    }
    if sel.users.is_empty() {
        sel.users.push(env.requester().user.clone());
    }
    let scan = match env.spool.scan_jobs() {
        Ok(s) => s,
        Err(e) => {
            o.err(format!("error: {e}"));
            o.code = 1;
            return o;
        }
    };
    let lines = report(&env.config, &scan.jobs, &sel);
    o.stdout = if as_xml { xml(&lines) } else { table(&lines) };
    o
}
