//! `qrdel`: deletes advance reservations (`qrdel(1)`) by id or name, or every one of the
//! users of `-u`; their jobs are deleted with them. One request to `sched_d`, which checks
//! the permissions again; the messages are SGE 8.1.9's.

use super::{ClientEnv, Output};
use crate::compat::docs::{self, CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{self, Arity, OperandMode, OptionSpec, Origin, Support};
use crate::model::RequestAction;

/// qrdel's options, in SGE 8.1.9's `-help` order.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-f", Arity::Flag, "[-f]", "force action"),
    OptionSpec::new(
        "-he",
        Arity::One,
        "[-he  y[es]|n[o]]",
        "enable/disable hard error handling",
    )
    .unsupported(),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "all advance reservations of users specified in list",
    ),
];

static SYNTAX: &[SyntaxItem] = &[SyntaxItem {
    name: "user_list",
    definition: "user[,user,...]",
}];

pub const DOC: CommandDoc = CommandDoc {
    name: "qrdel",
    summary: "delete gridspool advance reservations",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qrdel deletes the advance reservations given by id or name (or every one of the users of -u) that the caller owns (managers and operators: any). Their jobs are deleted as qdel deletes them: pending ones at once, running ones killed (-f by a manager: as qdel -f).",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        ("0", "Every reservation named was deleted."),
        (
            "1",
            "One does not exist or may not be deleted by the caller.",
        ),
        ("2", "The command line is wrong."),
    ],
    compatibility: &["-he is refused."],
    see_also: &["qrsub", "qrstat", "qdel"],
};

/// The `qrdel` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::client_main(args, &DOC, run)
}

pub fn run(args: &[String], env: &ClientEnv) -> Output {
    let mut o = Output::default();
    let parsed = match options::parse(
        OPTIONS,
        args,
        OperandMode::Interleaved,
        &Origin::CommandLine,
    ) {
        Ok(p) => p,
        Err(e) => {
            o.err(format!("qrdel: {e}"));
            o.code = 2;
            return o;
        }
    };
    let (mut force, mut users) = (false, Vec::new());
    for opt in &parsed.options {
        if opt.spec.support == Support::Unsupported {
            o.err(format!(
                "qrdel: the {} option is not supported by gridspool",
                opt.spec.name
            ));
            o.code = 2;
            return o;
        }
        match opt.spec.name {
            "-f" => force = true,
            "-u" => users.extend(crate::compat::submit::comma_list(
                opt.values.first().map(String::as_str).unwrap_or(""),
            )),
            _ => {}
        }
    }
    let names: Vec<String> = parsed
        .operands
        .iter()
        .flat_map(|w| crate::compat::submit::comma_list(w))
        .collect();
    if names.is_empty() && users.is_empty() {
        o.stderr.push_str(&docs::help_text(&DOC));
        o.err("ERROR! no option argument");
        o.code = 1;
        return o;
    }
    let who = env.requester();
    let all = super::qrstat::granted(env);
    let mut chosen = Vec::new();
    for n in &names {
        let found: Vec<_> = all
            .iter()
            .filter(|r| r.id().to_string() == *n || r.submission.name.as_deref() == Some(n))
            .filter(|r| {
                users.is_empty()
                    || users
                        .iter()
                        .any(|u| crate::compat::pattern::matches(u, &r.submission.owner.user))
            })
            .collect();
        if found.is_empty() {
            o.out(format!(
                "denied: advance_reservation \"{n}\" does not exist"
            ));
            o.code = 1;
        }
        chosen.extend(found);
    }
    if names.is_empty() {
        chosen.extend(all.iter().filter(|r| {
            users
                .iter()
                .any(|u| crate::compat::pattern::matches(u, &r.submission.owner.user))
        }));
    }
    let mut actions = Vec::new();
    for r in chosen {
        if r.submission.owner.uid != who.uid && !who.is_operator() {
            // SGE checks the userset of reservation submitters first.
            match crate::compat::ar::may_reserve(&env.config, &who.user, &env.caller.group, who.uid)
            {
                Err(why) => o.out(why),
                Ok(()) => o.out(format!(
                    "denied: \"{}\" is not the owner of advance_reservation {}",
                    who.user,
                    r.id()
                )),
            }
            o.code = 1;
            continue;
        }
        // SGE registers an open reservation for deletion (its jobs are being killed) and
        // deletes a waiting one at once.
        let running_jobs = matches!(
            r.state,
            crate::model::ArState::Running | crate::model::ArState::Error
        );
        if running_jobs {
            o.out(format!(
                "{} has registered the advance_reservation {} for deletion",
                who.user,
                r.id()
            ));
        } else {
            o.out(format!(
                "{} has deleted advance_reservation {}",
                who.user,
                r.id()
            ));
        }
        actions.push(RequestAction::DeleteAr { ar: r.id(), force });
    }
    if !actions.is_empty()
        && let Err(e) = env.spool.publish_request(who, actions)
    {
        o.out(format!("error: {e}"));
        o.code = 1;
    }
    o
}
