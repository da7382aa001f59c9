//! Option tables and the parser they drive.
//!
//! Each q-command declares its options once, as a table of [`OptionSpec`] in SGE's `-help`
//! order. The same table drives argv parsing, `#$` lines in job scripts, `-@` files and
//! `sge_request` files (one grammar), `-help` output, the man pages in `man/` and the shell
//! completions in `completions/` (see `cli::generated_docs`). This is ripgrep's approach; clap cannot
//! parse SGE's single-dash long options (`-hold_jid`, `-pe smp 4`).

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// `-cwd`
    Flag,
    /// `-N name`
    One,
    /// `-pe name slots`
    Two,
    /// `qstat -j [list]`: takes the next word unless it starts with `-`.
    Optional,
}

/// Whether gridspool implements an option of SGE's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Supported,
    /// In SGE's help (so `-help` matches SGE) but refused with a clear message, never
    /// silently ignored.
    Unsupported,
}

/// One option of one command.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// As typed: `-N`, `-hold_jid`.
    pub name: &'static str,
    pub arity: Arity,
    /// Left column of `-help`: `[-N name]`.
    pub usage: &'static str,
    /// Right column of `-help`; further lines after `\n` are indented to the column.
    pub help: &'static str,
    pub support: Support,
    /// Whether `-help` lists it. SGE 8.1.9's `qsub -help` leaves out some options that its man
    /// page documents (`-dl`, `-tc`, `-terse`…); they stay out of our `-help` too, but the
    /// generated man page and completions have them.
    pub listed: bool,
}

impl OptionSpec {
    pub const fn new(
        name: &'static str,
        arity: Arity,
        usage: &'static str,
        help: &'static str,
    ) -> Self {
        OptionSpec {
            name,
            arity,
            usage,
            help,
            support: Support::Supported,
            listed: true,
        }
    }

    pub const fn unsupported(self) -> Self {
        OptionSpec {
            support: Support::Unsupported,
            ..self
        }
    }

    /// Left out of `-help`, as SGE leaves it out (see [`OptionSpec::listed`]).
    pub const fn unlisted(self) -> Self {
        OptionSpec {
            listed: false,
            ..self
        }
    }
}

/// Where an option came from; later sources override earlier ones (`qsub(1)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `$SGE_ROOT/$SGE_CELL/common/sge_request`, `~/.sge_request`, `./.sge_request`.
    DefaultsFile(String),
    /// A `#$` line of the job script (line number).
    Script(usize),
    /// `-@ file`.
    OptionsFile(String),
    CommandLine,
}

/// An option as found, with its values.
#[derive(Debug, Clone)]
pub struct ParsedOption {
    pub spec: &'static OptionSpec,
    pub values: Vec<String>,
    pub origin: Origin,
    /// How many operands came before it (`qdel 10 -t 4`: the `-t` follows operand `10`).
    pub operands_before: usize,
}

/// Options and operands of one command line (or one file of options).
#[derive(Debug, Clone, Default)]
pub struct ParsedArgs {
    pub options: Vec<ParsedOption>,
    /// Words that are not options: job ids, or the script and its arguments.
    pub operands: Vec<String>,
}

/// A word that is not a valid option, or an option without its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    #[error("invalid option argument \"{0}\"")]
    Unknown(String),
    #[error("{0} option must have argument")]
    MissingValue(&'static str),
}

/// How operands end option parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperandMode {
    /// `qsub`: the first operand is the script; it and everything after are operands.
    StopAtFirst,
    /// `qdel`, `qalter`: options and operands may interleave (`qdel 10 -t 4`).
    Interleaved,
}

/// Takes a flag of gridspool's own (`-json`) out of `words`, so that SGE's option table
/// (and its `-help`) stays SGE's: whether it was there, and the other words.
pub fn take_flag(words: &[String], flag: &str) -> (bool, Vec<String>) {
    let found = words.iter().any(|w| w == flag);
    (
        found,
        words.iter().filter(|w| *w != flag).cloned().collect(),
    )
}

/// Parses `words` against `table`.
pub fn parse(
    table: &'static [OptionSpec],
    words: &[String],
    mode: OperandMode,
    origin: &Origin,
) -> Result<ParsedArgs, ArgError> {
    let mut out = ParsedArgs::default();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if !word.starts_with('-') || word == "-" {
            out.operands.push(word.clone());
            if mode == OperandMode::StopAtFirst {
                out.operands.extend(words[i..].iter().cloned());
                break;
            }
            continue;
        }
        let spec = table
            .iter()
            .find(|s| s.name == word)
            .ok_or_else(|| ArgError::Unknown(word.clone()))?;
        let wanted = match spec.arity {
            Arity::Flag => 0,
            Arity::One => 1,
            Arity::Two => 2,
            Arity::Optional => usize::from(words.get(i).is_some_and(|w| !w.starts_with('-'))),
        };
        if i + wanted > words.len() {
            return Err(ArgError::MissingValue(spec.name));
        }
        out.options.push(ParsedOption {
            spec,
            values: words[i..i + wanted].to_vec(),
            origin: origin.clone(),
            operands_before: out.operands.len(),
        });
        i += wanted;
    }
    Ok(out)
}

/// Splits a line of options (a `#$` line, a line of an `sge_request` or `-@` file) into words:
/// white space separates, single and double quotes group, a backslash escapes the next
/// character, and an unquoted `#` starts a comment.
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// The option lines of `-help`: `indent`, the usage padded to `width` (at least one space),
/// the help text; continuation lines of the help indented to the help column.
pub fn help_lines(table: &[OptionSpec], indent: &str, width: usize) -> String {
    let mut out = String::new();
    for spec in table.iter().filter(|s| s.listed) {
        let mut lines = spec.help.split('\n');
        let first = lines.next().unwrap_or("");
        if first.is_empty() {
            // A row without help text (qsub's `[{command|-} [command_args]]`) has no padding.
            out.push_str(&format!("{indent}{}\n", spec.usage));
        } else {
            let pad = width.saturating_sub(spec.usage.len()).max(1);
            out.push_str(&format!(
                "{indent}{}{}{first}\n",
                spec.usage,
                " ".repeat(pad)
            ));
        }
        for more in lines {
            out.push_str(&format!("{indent}{}{more}\n", " ".repeat(width)));
        }
    }
    out
}

/// Words for the parsers' property tests (issue 12): each command's option names, values that
/// broke parsers before (empty, lone separators, zeros, huge numbers) and arbitrary text.
#[cfg(test)]
pub(crate) fn hostile_words(
    names: &'static [&'static str],
) -> impl proptest::strategy::Strategy<Value = Vec<String>> {
    use proptest::prelude::*;
    const TRICKY: &[&str] = &[
        "",
        ",",
        ",,",
        "-",
        "--",
        "0",
        "0.0",
        "1.0-0",
        "5.",
        ".",
        "5.a",
        "1-3:0",
        "5-1",
        "1-",
        "-1",
        ":",
        "=",
        "4294967296",
        "99999999999999999999",
        "1.1-4294967295:4294967295",
        "@",
        "*",
        "[",
        "\\",
        "'",
        "\"",
        "\u{fffd}",
        "é",
        "-t",
        "-u",
        "-j",
        "-f",
        "-h",
        "-help",
    ];
    let word = prop_oneof![
        proptest::sample::select(names).prop_map(String::from),
        proptest::sample::select(TRICKY).prop_map(String::from),
        any::<String>(),
    ];
    proptest::collection::vec(word, 0..10)
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: &[OptionSpec] = &[
        OptionSpec::new(
            "-cwd",
            Arity::Flag,
            "[-cwd]",
            "use current working directory",
        ),
        OptionSpec::new("-N", Arity::One, "[-N name]", "specify job name"),
        OptionSpec::new(
            "-pe",
            Arity::Two,
            "[-pe wc_pe_name slot_range]",
            "request slot range",
        ),
        OptionSpec::new(
            "-j",
            Arity::Optional,
            "[-j [job_identifier_list]]",
            "show\nmore",
        ),
    ];

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_arities_and_stops_at_the_script() {
        let p = parse(
            TABLE,
            &words("-cwd -N x -pe smp 2 job.sh -N arg"),
            OperandMode::StopAtFirst,
            &Origin::CommandLine,
        )
        .expect("parse");
        assert_eq!(p.options.len(), 3);
        assert_eq!(p.options[2].values, vec!["smp", "2"]);
        assert_eq!(p.operands, vec!["job.sh", "-N", "arg"]);
        let p = parse(
            TABLE,
            &words("-j -cwd"),
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .expect("parse");
        assert!(p.options[0].values.is_empty());
        let p = parse(
            TABLE,
            &words("5 -j 2,3 7"),
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .expect("parse");
        assert_eq!(p.options[0].values, vec!["2,3"]);
        assert_eq!(p.operands, vec!["5", "7"]);
    }

    #[test]
    fn reports_unknown_options_and_missing_values() {
        let e = parse(
            TABLE,
            &words("-badopt x"),
            OperandMode::StopAtFirst,
            &Origin::CommandLine,
        );
        assert_eq!(
            e.expect_err("unknown").to_string(),
            "invalid option argument \"-badopt\""
        );
        let e = parse(
            TABLE,
            &words("-pe smp"),
            OperandMode::StopAtFirst,
            &Origin::CommandLine,
        );
        assert_eq!(
            e.expect_err("missing").to_string(),
            "-pe option must have argument"
        );
    }

    #[test]
    fn splits_option_lines_like_a_shell() {
        assert_eq!(
            split_words(r#" -N "a b" -v X='1 2',Y=\"  # comment"#),
            vec!["-N", "a b", "-v", "X=1 2,Y=\""]
        );
        assert_eq!(
            split_words("-l h_rt=1:0:0#not-a-comment"),
            vec!["-l", "h_rt=1:0:0#not-a-comment"]
        );
    }

    #[test]
    fn help_lines_pad_and_continue() {
        let text = help_lines(&TABLE[..1], "   ", 41);
        assert_eq!(
            text,
            format!("   [-cwd]{}use current working directory\n", " ".repeat(35))
        );
        let text = help_lines(&TABLE[3..], "        ", 34);
        assert!(
            text.ends_with(&format!("\n{}more\n", " ".repeat(42))),
            "{text:?}"
        );
    }
}
