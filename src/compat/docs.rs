//! `-help` text, man pages (`man/<cmd>.1`) and shell completions (`completions/`), all made
//! from one [`CommandDoc`] per command, whose options are the same [`OptionSpec`] table that
//! parses the command line (ripgrep's approach: one declaration, every view generated).
//!
//! The generated files are checked in; `tests/docs.rs` fails when one differs from what
//! [`generated_files`] produces and rewrites them when `GRIDSPOOL_BLESS=1` is set. To document a
//! new command, add its `CommandDoc` to [`all_commands`].

use super::options::{Arity, OptionSpec, Support, help_lines};
use std::fmt::Write as _;

mod gridspool_shepherd;
mod gridspool_sim;
mod sched_d;

/// The version line SGE prints first in `-help`.
pub const SGE_VERSION_LINE: &str = "SGE 8.1.9";

/// One line of the syntax legend under SGE's `-help` (`job_task_list  job_tasks[,...]`).
#[derive(Debug, Clone, Copy)]
pub struct SyntaxItem {
    pub name: &'static str,
    pub definition: &'static str,
}

/// What the value of an option (or an operand) is, for completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueHint {
    /// Free text: nothing to offer.
    Text,
    /// User names (`-u user_list`).
    Users,
    /// One of these words (`-h u|o|s`).
    Words(&'static [&'static str]),
    /// Job ids of the current jobs (from `qstat`).
    Jobs,
    /// File names.
    Files,
}

/// Everything the `-help` text, the man page and the completions of one command say.
#[derive(Debug, Clone, Copy)]
pub struct CommandDoc {
    pub name: &'static str,
    /// The NAME line of the man page: `qdel - delete Grid Engine jobs`.
    pub summary: &'static str,
    /// After the name in `usage:` (`[options] job_task_list`).
    pub synopsis: &'static str,
    /// What `-help` puts before each option (three spaces; eight for `qselect`).
    pub help_indent: &'static str,
    /// The column of the options' help in `-help` (41 for most of SGE's commands, 24 for
    /// `qmod`), and of the syntax legend's definitions (24; 27 for `qmod`).
    pub help_width: usize,
    pub syntax_width: usize,
    /// The command's option table, in SGE's `-help` order.
    pub options: &'static [OptionSpec],
    /// The operand's row at the end of the option list of `-help` (usage, help), if any.
    pub operand: Option<(&'static str, &'static str)>,
    pub operand_hint: ValueHint,
    /// The syntax legend under the options (`job_task_list`, `task_id_range`, …).
    pub syntax: &'static [SyntaxItem],
    /// DESCRIPTION paragraphs of the man page.
    pub description: &'static [&'static str],
    /// Longer man-page text for an option, by name, after its `-help` line.
    pub option_details: &'static [(&'static str, &'static str)],
    /// Completion hints for option values, by option name.
    pub value_hints: &'static [(&'static str, ValueHint)],
    /// EXIT STATUS entries (code, meaning).
    pub exit_status: &'static [(&'static str, &'static str)],
    /// What gridspool does differently from SGE 8.1.9, and why (COMPATIBILITY).
    pub compatibility: &'static [&'static str],
    pub see_also: &'static [&'static str],
}

/// Every documented command. The lead adds an entry per command; nothing else changes.
pub fn all_commands() -> Vec<CommandDoc> {
    vec![
        crate::compat::qsub_options::QSUB_DOC,
        crate::compat::qsub_options::QALTER_DOC,
        crate::compat::qstat::QSTAT_DOC,
        crate::cli::qdel::DOC,
        crate::cli::qhold::QHOLD_DOC,
        crate::cli::qhold::QRLS_DOC,
        crate::cli::qacct::DOC,
        crate::cli::qhost::DOC,
        crate::cli::qconf::DOC,
        crate::cli::qmod::DOC,
        crate::cli::qselect::DOC,
        crate::cli::qrsh::DOC,
        crate::cli::qrsh::QLOGIN_DOC,
        crate::cli::qrsh::QSH_DOC,
    ]
}

/// SGE's `-help` text: version line, usage line, options, blank line, syntax legend.
pub fn help_text(doc: &CommandDoc) -> String {
    let mut rows: Vec<OptionSpec> = doc.options.to_vec();
    if let Some((usage, help)) = doc.operand {
        // Only rendered, never matched against argv.
        rows.push(OptionSpec::new("", Arity::Flag, usage, help));
    }
    let mut out = format!("{SGE_VERSION_LINE}\nusage: {} {}\n", doc.name, doc.synopsis);
    out.push_str(&help_lines(&rows, doc.help_indent, doc.help_width));
    out.push('\n');
    for item in doc.syntax {
        let _ = writeln!(
            out,
            "{:<width$}{}",
            item.name,
            item.definition,
            width = doc.syntax_width
        );
    }
    out
}

/// Every generated file, as (path relative to the repository root, content).
pub fn generated_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for doc in all_commands() {
        files.push((format!("man/{}.1", doc.name), man_page(&doc)));
        files.push((
            format!("completions/{}.bash", doc.name),
            bash_completion(&doc),
        ));
        files.push((format!("completions/_{}", doc.name), zsh_completion(&doc)));
        files.push((
            format!("completions/{}.fish", doc.name),
            fish_completion(&doc),
        ));
    }
    files.push(("man/sched_d.8".to_string(), sched_d::man_page()));
    files.push(("man/gridspool-sim.1".to_string(), gridspool_sim::man_page()));
    files.push((
        "man/gridspool-shepherd.8".to_string(),
        gridspool_shepherd::man_page(),
    ));
    files
}

/// The head of a generated page of a program of ours (not an SGE command): the title, NAME,
/// SYNOPSIS (roff) and DESCRIPTION (roff paragraphs).
fn page_start(
    (program, section, what): (&str, u32, &str),
    synopsis: &str,
    description: &[&str],
) -> String {
    use std::fmt::Write;
    let mut m = format!(
        ".\\\" Generated by gridspool from {program}'s command line definition; do not edit.\n"
    );
    let _ = writeln!(
        m,
        ".TH {} {section} \"\" \"gridspool {}\" \"gridspool manual\"",
        roff(&program.to_uppercase()),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(m, ".SH NAME\n{} \\- {what}", roff(program));
    let _ = writeln!(m, ".SH SYNOPSIS\n{synopsis}");
    m.push_str(".SH DESCRIPTION\n");
    m.push_str(&description.join("\n.PP\n"));
    m.push('\n');
    m
}

/// The OPTIONS section's entries of a clap command (a program with a clap command line, not
/// SGE's option tables): every visible long flag with its values, help and default.
fn options(command: &clap::Command) -> String {
    use std::fmt::Write;
    let mut m = String::new();
    for arg in command.get_arguments() {
        if arg.is_hide_set() {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        let mut usage = format!("\\-\\-{}", roff(long));
        if arg.get_action().takes_values()
            && let Some(names) = arg.get_value_names()
        {
            for n in names {
                let _ = write!(usage, " {}", roff(n));
            }
        }
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string().replace('`', ""))
            .unwrap_or_default();
        let mut help = roff(&help.split_whitespace().collect::<Vec<_>>().join(" "));
        if !help.is_empty() && !help.ends_with('.') {
            help.push('.');
        }
        let defaults = arg.get_default_values();
        if !defaults.is_empty() && arg.get_action().takes_values() {
            let list: Vec<String> = defaults
                .iter()
                .map(|d| roff(&d.to_string_lossy()))
                .collect();
            let _ = write!(help, " Default: {}.", list.join(", "));
        }
        let _ = writeln!(m, ".TP\n.B {usage}\n{help}");
    }
    m
}

/// Escapes text for roff: backslashes, hyphens (so they stay ASCII minus signs), and a leading
/// dot or quote that roff would take for a request.
fn roff(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.starts_with('.') || line.starts_with('\'') {
            out.push_str("\\&");
        }
        for c in line.chars() {
            match c {
                '\\' => out.push_str("\\e"),
                '-' => out.push_str("\\-"),
                c => out.push(c),
            }
        }
    }
    out
}

/// The option's help as one line (continuation lines of `-help` joined).
fn one_line(help: &str) -> String {
    help.split('\n')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

fn supported(doc: &CommandDoc) -> impl Iterator<Item = &'static OptionSpec> {
    doc.options
        .iter()
        .filter(|o| o.support == Support::Supported)
}

fn hint_for(doc: &CommandDoc, option: &str) -> ValueHint {
    doc.value_hints
        .iter()
        .find(|(name, _)| *name == option)
        .map_or(ValueHint::Text, |(_, h)| *h)
}

/// The roff man page (section 1).
pub fn man_page(doc: &CommandDoc) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        ".\\\" Generated by gridspool from the option table of {}; do not edit.",
        doc.name
    );
    let _ = writeln!(
        m,
        ".TH {} 1 \"\" \"gridspool {}\" \"gridspool manual\"",
        doc.name.to_uppercase(),
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(m, ".SH NAME\n{} \\- {}", doc.name, roff(doc.summary));
    let _ = writeln!(m, ".SH SYNOPSIS\n.B {}\n{}", doc.name, roff(doc.synopsis));
    m.push_str(".SH DESCRIPTION\n");
    for (i, p) in doc.description.iter().enumerate() {
        if i > 0 {
            m.push_str(".PP\n");
        }
        let _ = writeln!(m, "{}", roff(p));
    }
    m.push_str(".SH OPTIONS\n");
    for o in doc.options {
        let _ = writeln!(m, ".TP\n.B {}", roff(o.usage));
        let _ = writeln!(m, "{}", roff(&one_line(o.help)));
        if let Some((_, more)) = doc.option_details.iter().find(|(n, _)| *n == o.name) {
            let _ = writeln!(m, ".IP\n{}", roff(more));
        }
        if o.support == Support::Unsupported {
            m.push_str(".IP\nRefused by gridspool with an error message: it is listed so that \\-help matches SGE.\n");
        }
    }
    if let Some((usage, help)) = doc.operand {
        let _ = writeln!(m, ".TP\n.I {}\n{}", roff(usage), roff(&one_line(help)));
    }
    if !doc.syntax.is_empty() {
        m.push_str(".SH SYNTAX\n");
        for s in doc.syntax {
            let _ = writeln!(m, ".TP\n.I {}\n{}", roff(s.name), roff(s.definition));
        }
    }
    if !doc.exit_status.is_empty() {
        m.push_str(".SH EXIT STATUS\n");
        for (code, meaning) in doc.exit_status {
            let _ = writeln!(m, ".TP\n.B {}\n{}", roff(code), roff(meaning));
        }
    }
    m.push_str(".SH ENVIRONMENT\n.TP\n.B SGE_ROOT\nThe directory holding the cell; required unless \\-\\-spool DIR is given first.\n.TP\n.B SGE_CELL\nThe cell (default: default). The spool is $SGE_ROOT/$SGE_CELL.\n");
    if !doc.compatibility.is_empty() {
        m.push_str(".SH COMPATIBILITY\nMessages and exit codes follow Son of Grid Engine 8.1.9. Differences:\n");
        for c in doc.compatibility {
            let _ = writeln!(m, ".IP \\(bu 2\n{}", roff(c));
        }
    }
    if !doc.see_also.is_empty() {
        let refs: Vec<String> = doc
            .see_also
            .iter()
            .map(|s| format!(".BR {} (1)", roff(s)))
            .collect();
        let _ = writeln!(m, ".SH SEE ALSO\n{}", refs.join(",\n"));
    }
    m
}

/// Shell code listing current job ids: the first column of `qstat` after its two header lines.
const JOB_IDS_SH: &str = "qstat 2>/dev/null | awk 'NR>2 {print $1}' | sort -u";

/// bash completion: options after `-`, values after options that take one, job ids otherwise.
pub fn bash_completion(doc: &CommandDoc) -> String {
    let func = format!("_gridspool_{}", doc.name);
    let mut s = format!(
        "# bash completion for {name}; generated by gridspool from its option table, do not edit.\n\
         {func}() {{\n    local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n    case \"$prev\" in\n",
        name = doc.name
    );
    for o in supported(doc).filter(|o| o.arity != Arity::Flag) {
        let action = match hint_for(doc, o.name) {
            ValueHint::Users => "COMPREPLY=($(compgen -u -- \"$cur\"))".to_string(),
            ValueHint::Words(w) => {
                format!("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))", w.join(" "))
            }
            ValueHint::Jobs => format!("COMPREPLY=($(compgen -W \"$({JOB_IDS_SH})\" -- \"$cur\"))"),
            ValueHint::Files => "COMPREPLY=($(compgen -f -- \"$cur\"))".to_string(),
            ValueHint::Text => "COMPREPLY=()".to_string(),
        };
        let _ = writeln!(s, "        {}) {action}; return ;;", o.name);
    }
    let names: Vec<&str> = supported(doc).map(|o| o.name).collect();
    let _ = write!(
        s,
        "    esac\n    if [[ \"$cur\" == -* ]]; then\n        COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n",
        names.join(" ")
    );
    match doc.operand_hint {
        ValueHint::Jobs => {
            let _ = writeln!(
                s,
                "    else\n        COMPREPLY=($(compgen -W \"$({JOB_IDS_SH})\" -- \"$cur\"))"
            );
        }
        ValueHint::Files => {
            s.push_str("    else\n        COMPREPLY=($(compgen -f -- \"$cur\"))\n");
        }
        _ => {}
    }
    let _ = writeln!(s, "    fi\n}}\ncomplete -F {func} {}", doc.name);
    s
}

/// Escapes a description for a zsh `_arguments` spec (`[`, `]`, `:` and `'`).
fn zsh_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '[' | ']' | ':' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\'' => out.push_str("'\\''"),
            c => out.push(c),
        }
    }
    out
}

fn zsh_action(hint: ValueHint) -> String {
    match hint {
        ValueHint::Users => "_users".into(),
        ValueHint::Words(w) => format!("({})", w.join(" ")),
        ValueHint::Jobs => "_gridspool_jobs".into(),
        ValueHint::Files => "_files".into(),
        ValueHint::Text => " ".into(),
    }
}

/// zsh completion (`_<cmd>`, for a directory in `$fpath`).
pub fn zsh_completion(doc: &CommandDoc) -> String {
    let mut s = format!(
        "#compdef {name}\n# zsh completion for {name}; generated by gridspool from its option table, do not edit.\n\n\
         _gridspool_jobs() {{\n  local -a ids\n  ids=(${{(f)\"$({JOB_IDS_SH})\"}})\n  compadd -a ids\n}}\n\n_arguments \\\n",
        name = doc.name
    );
    for o in supported(doc) {
        let desc = zsh_escape(&one_line(o.help));
        match o.arity {
            Arity::Flag => {
                let _ = writeln!(s, "  '{}[{desc}]' \\", o.name);
            }
            _ => {
                let value = o.usage.trim_matches(['[', ']']);
                let value = value.split_once(' ').map_or(value, |(_, v)| v);
                let _ = writeln!(
                    s,
                    "  '{}[{desc}]:{}:{}' \\",
                    o.name,
                    zsh_escape(value),
                    zsh_action(hint_for(doc, o.name))
                );
            }
        }
    }
    match doc.operand {
        Some((usage, _)) => {
            let _ = writeln!(
                s,
                "  '*:{}:{}'",
                zsh_escape(usage),
                zsh_action(doc.operand_hint)
            );
        }
        None => s.push_str("  '*: :'\n"),
    }
    s
}

/// Escapes a description for a single-quoted fish string.
fn fish_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\'', "\\'")
}

/// fish completion. SGE's options are single-dash long options: fish's `-o`.
pub fn fish_completion(doc: &CommandDoc) -> String {
    let mut s = format!(
        "# fish completion for {name}; generated by gridspool from its option table, do not edit.\n",
        name = doc.name
    );
    let jobs = format!("({})", JOB_IDS_SH.replace('\'', "\\'"));
    for o in supported(doc) {
        let opt = o.name.trim_start_matches('-');
        let desc = fish_escape(&one_line(o.help));
        let values = match (o.arity, hint_for(doc, o.name)) {
            (Arity::Flag, _) => String::new(),
            (_, ValueHint::Users) => " -x -a '(__fish_complete_users)'".into(),
            (_, ValueHint::Words(w)) => format!(" -x -a '{}'", w.join(" ")),
            (_, ValueHint::Jobs) => format!(" -x -a '{jobs}'"),
            (_, ValueHint::Files) => " -r -F".into(),
            (_, ValueHint::Text) => " -x".into(),
        };
        let _ = writeln!(s, "complete -c {} -o {opt}{values} -d '{desc}'", doc.name);
    }
    match doc.operand_hint {
        ValueHint::Jobs => {
            let _ = writeln!(s, "complete -c {} -f -a '{jobs}'", doc.name);
        }
        ValueHint::Files => {
            let _ = writeln!(s, "complete -c {} -F", doc.name);
        }
        _ => {
            let _ = writeln!(s, "complete -c {} -f", doc.name);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_escapes_what_roff_would_interpret() {
        assert_eq!(roff("-f a\\b"), "\\-f a\\eb");
        assert_eq!(roff(".x\n'y"), "\\&.x\n\\&'y");
    }

    #[test]
    fn zsh_escapes_brackets_and_colons() {
        assert_eq!(zsh_escape("a[b]:c"), "a\\[b\\]\\:c");
    }
}
