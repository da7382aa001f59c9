//! What a command's documentation is made of: one [`CommandDoc`] per command, whose options
//! are the same [`OptionSpec`] table that parses the command line (ripgrep's approach: one
//! declaration, every view generated), and SGE's `-help` text made from it. Each command
//! declares its `CommandDoc` next to its parser; the man pages and shell completions made from
//! all of them are `cli::generated_docs`, above every command.

use super::options::{Arity, OptionSpec, help_lines};
use std::fmt::Write as _;

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
