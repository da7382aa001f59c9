//! `qrstat`: shows advance reservations (`qrstat(1)`) as SGE 8.1.9 does: the caller's by
//! default, `-u` others', `-ar` one in detail, `-xml`.

use super::{ClientEnv, Output};
use crate::compat::docs::{CommandDoc, SyntaxItem, ValueHint};
use crate::compat::options::{self, Arity, OperandMode, OptionSpec, Origin, Support};
use crate::model::ArRecord;

/// qrstat's options, in SGE 8.1.9's `-help` order (`-ar` and `-explain` work but are not
/// listed there).
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-he",
        Arity::One,
        "[-he  y[es]|n[o]]",
        "enable/disable hard error handling",
    )
    .unsupported(),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-terse",
        Arity::Flag,
        "[-terse]",
        "tersed output, print only the job-id",
    ),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "all advance reservations of users specified in list",
    ),
    OptionSpec::new(
        "-xml",
        Arity::Flag,
        "[-xml]",
        "display the information in XML-Format",
    ),
    OptionSpec::new(
        "-ar",
        Arity::One,
        "[-ar ar_id_list]",
        "show the given advance reservations in detail",
    )
    .unlisted(),
    OptionSpec::new(
        "-explain",
        Arity::Flag,
        "[-explain]",
        "show reason for error state",
    )
    .unlisted(),
];

static SYNTAX: &[SyntaxItem] = &[SyntaxItem {
    name: "user_list",
    definition: "user[,user,...]",
}];

pub const DOC: CommandDoc = CommandDoc {
    name: "qrstat",
    summary: "show gridspool advance reservations",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: SYNTAX,
    description: &[
        "qrstat lists the caller's advance reservations (id, name, owner, state w waiting, r running, E or W in error, start and end time, duration); -u user_list those of other users ('*': everyone's); -ar ar_id_list shows each given reservation with what it holds (granted_slots_list, granted_parallel_environment); -xml the same as XML.",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        ("0", "Success."),
        (
            "1",
            "A reservation of -ar does not exist, or the cell cannot be read.",
        ),
        ("2", "The command line is wrong."),
    ],
    compatibility: &["-he is refused: it changes nothing that qrstat shows."],
    see_also: &["qrsub", "qrdel"],
};

/// The `qrstat` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::client_main(args, &DOC, run)
}

/// The reservations of the cell that are granted and not over, in id order.
pub fn granted(env: &ClientEnv) -> Vec<ArRecord> {
    env.spool
        .scan_ars()
        .map(|s| s.records.into_iter().filter(|r| r.holds()).collect())
        .unwrap_or_default()
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
            o.err(format!("qrstat: {e}"));
            o.code = 2;
            return o;
        }
    };
    if let Some(w) = parsed.operands.first() {
        o.err(format!("qrstat: invalid option argument \"{w}\""));
        o.code = 2;
        return o;
    }
    let (mut users, mut ids, mut xml, mut terse) = (Vec::new(), None::<Vec<String>>, false, false);
    for opt in &parsed.options {
        if opt.spec.support == Support::Unsupported {
            o.err(format!(
                "qrstat: the {} option is not supported by gridspool",
                opt.spec.name
            ));
            o.code = 2;
            return o;
        }
        let v = opt.values.first().cloned().unwrap_or_default();
        match opt.spec.name {
            "-u" => users.extend(crate::compat::submit::comma_list(&v)),
            "-ar" => ids
                .get_or_insert_with(Vec::new)
                .extend(crate::compat::submit::comma_list(&v)),
            "-xml" => xml = true,
            "-terse" => terse = true,
            _ => {}
        }
    }
    let all = granted(env);
    if let Some(ids) = ids {
        let mut shown = Vec::new();
        let mut missing = Vec::new();
        for id in &ids {
            match all.iter().find(|r| {
                r.id().to_string() == *id || r.submission.name.as_deref() == Some(id.as_str())
            }) {
                Some(r) => shown.push(r.clone()),
                None => missing.push(id.clone()),
            }
        }
        if !missing.is_empty() {
            o.out("Following advance reservations do not exist:");
            o.out(missing.join(", "));
            o.code = 1;
            return o;
        }
        if xml {
            o.stdout.push_str(&crate::compat::ar::xml(&shown, true));
        } else {
            for r in &shown {
                o.stdout.push_str(&crate::compat::ar::detail(r));
            }
        }
        return o;
    }
    if users.is_empty() {
        users.push(env.caller.user.clone());
    }
    let shown: Vec<ArRecord> = all
        .into_iter()
        .filter(|r| {
            users
                .iter()
                .any(|u| crate::compat::pattern::matches(u, &r.submission.owner.user))
        })
        .collect();
    if xml {
        o.stdout.push_str(&crate::compat::ar::xml(&shown, false));
    } else if terse {
        for r in &shown {
            o.out(r.id().to_string());
        }
    } else {
        o.stdout.push_str(&crate::compat::ar::list(&shown));
    }
    o
}
