//! `qrsub`: submits an advance reservation (`qrsub(1)`, `sge_ar(5)`) and waits for
//! `sched_d`'s answer, as SGE's qrsub waits for qmaster's: `Your advance reservation 7 has
//! been granted`, or why not (`advance_reservation: no suitable queues`), exit 1.

use super::{ClientEnv, Output};
use crate::compat::docs::{CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{self, Arity, OperandMode, OptionSpec, Origin, Support};
use crate::compat::submit as values;
use crate::model::{ArOwner, ArSubmission, PeRequest};
use std::time::{Duration, Instant};

/// qrsub's options, in SGE 8.1.9's `-help` order (its table lists a few of qconf's and
/// qrstat's by mistake; they are refused here).
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-a", Arity::One, "[-a date_time]", "request a start time"),
    OptionSpec::new(
        "-astnode",
        Arity::One,
        "[-astnode node_shares_list]",
        "add sharetree node(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-A",
        Arity::One,
        "[-A account_string]",
        "account string in accounting record",
    ),
    OptionSpec::new("-d", Arity::One, "[-d time]", "duration of time window"),
    OptionSpec::new(
        "-dul",
        Arity::One,
        "[-dul listname_list]",
        "delete userset list(s) completely",
    )
    .unsupported(),
    OptionSpec::new("-e", Arity::One, "[-e date_time]", "request an end time"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_list]",
        "request the given resources",
    ),
    OptionSpec::new(
        "-M",
        Arity::One,
        "[-M mail_list]",
        "notify these e-mail addresses",
    ),
    OptionSpec::new(
        "-m",
        Arity::One,
        "[-m mail_options]",
        "define mail notification events",
    ),
    OptionSpec::new(
        "-masterq",
        Arity::One,
        "[-masterq wc_queue_list]",
        "bind master task to queue(s)",
    )
    .unsupported(),
    OptionSpec::new("-N", Arity::One, "[-N name]", "specify job name"),
    OptionSpec::new(
        "-now",
        Arity::One,
        "[-now y[es]|n[o]]",
        "consider only interactive queues",
    ),
    OptionSpec::new(
        "-pe",
        Arity::Two,
        "[-pe wc_pe_name slot_range]",
        "request slot range for parallel jobs",
    ),
    OptionSpec::new(
        "-q",
        Arity::One,
        "[-q wc_queue_list]",
        "print information on given queue",
    ),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "specify a list of users\n(not allowed in combination with job_task_list)",
    ),
    OptionSpec::new(
        "-explain",
        Arity::Flag,
        "[-explain]",
        "show reason for error state",
    )
    .unsupported(),
    OptionSpec::new(
        "-he",
        Arity::One,
        "[-he y[es]|n[o]]",
        "enable/disable hard error handling",
    )
    .unsupported()
    .unlisted(),
    OptionSpec::new(
        "-w",
        Arity::One,
        "[-w e|v]",
        "verify mode (error|just verify) for queues",
    )
    .unsupported()
    .unlisted(),
];

static SYNTAX: &[SyntaxItem] = &[
    SyntaxItem {
        name: "account_string",
        definition: "account_name",
    },
    SyntaxItem {
        name: "date_time",
        definition: "[[CC]YY]MMDDhhmm[.SS]",
    },
    SyntaxItem {
        name: "listname_list",
        definition: "listname[,listname,...]",
    },
    SyntaxItem {
        name: "mail_address",
        definition: "username[@host]",
    },
    SyntaxItem {
        name: "mail_list",
        definition: "mail_address[,mail_address,...]",
    },
    SyntaxItem {
        name: "mail_options",
        definition: "`e' `b' `a' `n' (end, begin, error, no)",
    },
    SyntaxItem {
        name: "node_path",
        definition: "[/]node_name[[/.]node_name...]",
    },
    SyntaxItem {
        name: "node_shares_list",
        definition: "node_path=shares[,node_path=shares,...]",
    },
    SyntaxItem {
        name: "resource_list",
        definition: "resource[=value][,resource[=value],...]",
    },
    SyntaxItem {
        name: "slot_range",
        definition: "[n[-m]|[-]m] - n,m > 0",
    },
    SyntaxItem {
        name: "user_list",
        definition: "user[,user,...]",
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
        definition: "wc_queue[,wc_queue,...]",
    },
    SyntaxItem {
        name: "time",
        definition: "hours:minutes:seconds | seconds",
    },
];

pub const DOC: CommandDoc = CommandDoc {
    name: "qrsub",
    summary: "submit an advance reservation to gridspool",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qrsub reserves slots (one, or the slots of -pe), the resources of -l and queue instances of -q from the start time (-a, else now) to the end time (-e) or for a duration (-d), for jobs submitted into it with qsub -ar. sched_d grants it only if that capacity is free for the whole window, given the expected ends of running jobs (h_rt, else default_duration) and the other reservations; qrsub waits for its answer. Once granted, no other job is started into the reserved capacity if its run would overlap the window; the reservation's jobs run only inside it, and are deleted at its end.",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        ("0", "The reservation was granted."),
        ("1", "It was refused, or the request was wrong."),
        ("2", "The command line is wrong."),
    ],
    compatibility: &[
        "-astnode, -dul and -explain, which SGE 8.1.9's qrsub lists by mistake, are refused, and so are -masterq, -he and -w. -m b and -m e mail the -M list (none without one, as SGE) at the reservation's start, and at its end or its deletion by qrdel, in SGE's words, through the mailer of the cell's configuration; -m a mails when a reserved queue instance goes wrong while the reservation is open (state E: disabled, in error or on a host gone unknown) and when it is well again.",
    ],
    see_also: &["qrstat", "qrdel", "qsub"],
};

/// The `qrsub` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::client_main(args, &DOC, |args, env| {
        run(args, env, Duration::from_secs(60))
    })
}

fn usage_error(o: &mut Output, msg: &str) {
    o.err(format!("qrsub: {msg}"));
    o.code = 2;
}

fn refused(o: &mut Output, msg: &str) {
    o.out(msg);
    o.code = 1;
}

fn yes_no(v: &str) -> Option<bool> {
    match v {
        "y" | "yes" => Some(true),
        "n" | "no" => Some(false),
        _ => None,
    }
}

/// Parses, checks what SGE's qmaster checks before scheduling, publishes, and waits up to
/// `wait` for `sched_d`'s decision.
pub fn run(args: &[String], env: &ClientEnv, wait: Duration) -> Output {
    let mut o = Output::default();
    let parsed = match options::parse(
        OPTIONS,
        args,
        OperandMode::Interleaved,
        &Origin::CommandLine,
    ) {
        Ok(p) => p,
        Err(e) => {
            usage_error(&mut o, &e.to_string());
            return o;
        }
    };
    if let Some(w) = parsed.operands.first() {
        usage_error(&mut o, &format!("invalid option argument \"{w}\""));
        return o;
    }
    let now = crate::time::now();
    let mut sub = ArSubmission {
        v: crate::model::AR_SCHEMA_VERSION,
        id: 0,
        name: None,
        owner: ArOwner {
            uid: env.caller.uid,
            user: env.caller.user.clone(),
            gid: env.caller.gid,
            group: env.caller.group.clone(),
            host: env.host.clone(),
        },
        submission_time: now,
        start: now,
        end: 0,
        account: None,
        resources: Vec::new(),
        pe: None,
        queues: Vec::new(),
        master_queues: Vec::new(),
        users: Vec::new(),
        mail_options: String::new(),
        mail_list: Vec::new(),
        now: false,
    };
    let (mut end, mut duration) = (None, None);
    for opt in &parsed.options {
        let v = opt.values.first().map(String::as_str).unwrap_or("");
        if opt.spec.support == Support::Unsupported {
            usage_error(
                &mut o,
                &format!("the {} option is not supported by gridspool", opt.spec.name),
            );
            return o;
        }
        let bad = |o: &mut Output, what: &str| {
            o.err(format!("qrsub: {what}"));
            o.code = 2;
        };
        match opt.spec.name {
            "-a" => match values::date_time(v, "-a") {
                Ok(t) => sub.start = t,
                Err(e) => {
                    bad(&mut o, &e.to_string());
                    return o;
                }
            },
            "-e" => match values::date_time(v, "-e") {
                Ok(t) => end = Some(t),
                Err(e) => {
                    bad(&mut o, &e.to_string());
                    return o;
                }
            },
            "-d" => match crate::time::parse_time(v).filter(|d| *d > 0 && *d != i64::MAX) {
                Some(d) => duration = Some(d),
                None => {
                    bad(&mut o, &format!("invalid duration \"{v}\""));
                    return o;
                }
            },
            "-A" => sub.account = Some(v.to_string()),
            "-N" => {
                if let Err(e) = values::job_name_valid(v) {
                    refused(&mut o, &e.to_string());
                    return o;
                }
                sub.name = Some(v.to_string());
            }
            "-l" => match values::resource_list(v, &env.config) {
                Ok(r) => sub.resources.extend(r),
                Err(_) => {
                    let name = v.split(['=', ',']).next().unwrap_or(v);
                    refused(&mut o, &format!("unknown resource \"{name}\""));
                    return o;
                }
            },
            "-pe" => {
                let range = opt.values.get(1).map(String::as_str).unwrap_or("");
                match values::slot_range(range) {
                    Ok(range) => {
                        sub.pe = Some(PeRequest {
                            name: v.to_string(),
                            range,
                        })
                    }
                    Err(e) => {
                        bad(&mut o, &e.to_string());
                        return o;
                    }
                }
            }
            "-q" => sub.queues.extend(values::comma_list(v)),
            "-u" => sub.users.extend(values::comma_list(v)),
            "-m" => sub.mail_options = v.to_string(),
            "-M" => sub.mail_list.extend(values::comma_list(v)),
            "-now" => match yes_no(v) {
                Some(b) => sub.now = b,
                None => {
                    bad(
                        &mut o,
                        &format!("invalid value \"{v}\" for {}", opt.spec.name),
                    );
                    return o;
                }
            },
            _ => {}
        }
    }
    sub.end = match (end, duration) {
        (Some(e), _) => e,
        (None, Some(d)) => sub.start.saturating_add(d),
        (None, None) => {
            refused(
                &mut o,
                "missing value for \"end time or duration\" in advance reservation request",
            );
            return o;
        }
    };
    if let Err(why) = crate::compat::ar::may_reserve(
        &env.config,
        &env.caller.user,
        &env.caller.group,
        env.caller.uid,
    ) {
        refused(&mut o, &why);
        return o;
    }
    if let Some(pe) = &sub.pe
        && !env
            .config
            .parallel_environments
            .iter()
            .any(|p| crate::compat::pattern::matches(&pe.name, &p.name))
    {
        refused(
            &mut o,
            &format!(
                "job rejected: the requested parallel environment \"{}\" does not exist",
                pe.name
            ),
        );
        return o;
    }
    for q in sub.queues.iter().chain(&sub.master_queues) {
        if !crate::compat::submit::queue_exists(&env.config, q) {
            refused(
                &mut o,
                &format!("Job was rejected because job requests unknown queue \"{q}\""),
            );
            return o;
        }
    }
    sub.id = match env.spool.allocate_ar_id() {
        Ok(id) => id,
        Err(e) => {
            refused(&mut o, &format!("error: {e}"));
            return o;
        }
    };
    if let Err(e) = env.spool.publish_ar(&sub) {
        refused(&mut o, &format!("error: {e}"));
        return o;
    }
    let deadline = Instant::now() + wait;
    loop {
        match env.spool.read_ar_state(sub.id) {
            Ok(Some(r)) => {
                match r.refused {
                    None => o.out(format!(
                        "Your advance reservation {} has been granted",
                        sub.id
                    )),
                    Some(why) => refused(&mut o, &why),
                }
                return o;
            }
            Ok(None) => {}
            Err(e) => {
                refused(&mut o, &format!("error: {e}"));
                return o;
            }
        }
        if Instant::now() >= deadline {
            refused(
                &mut o,
                &format!(
                    "error: no answer from sched_d within {} s: advance reservation {} is submitted and will be decided when sched_d runs",
                    wait.as_secs(),
                    sub.id
                ),
            );
            return o;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
