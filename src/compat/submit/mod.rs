//! What `qsub` and `qalter` make of their options: the value grammars of `sge_types(5)`, SGE's
//! messages and exit codes for bad values, and the fold of options from every source
//! (`sge_request` files, `#$` lines, `-@` files, the command line) into a [`JobSpec`](crate::model::JobSpec).
//!
//! Merge rules, as SGE 8.1.9 applies them (checked against the oracle, see `tests/qsub.rs`):
//! single-valued options take the last value; `-l` lists merge across all sources and a later
//! request of the same resource replaces the earlier one; `-q` and `-masterq` merge within one
//! source but a later source replaces the list of an earlier one; `-v`, `-M`, `-hold_jid` and the
//! context options merge; path lists (`-o`, `-e`, `-i`, `-S`) merge by host, a later path for
//! the same host replacing the earlier; `-m` letters accumulate until `-m n` clears them.
//!
//! The parts, each in its own file: the value grammars and the checks of one option
//! (`values`), the sources options are read from (`sge_request` and `-@` files, `#$` lines:
//! `sources`), the fold of all of them into a job (`fold`) and the checks of a job
//! against the configuration and the submitter's rights (`validate`). The refusal they all
//! return, [`SubmitError`], is here.

mod fold;
#[cfg(test)]
mod hostile;
mod sources;
mod validate;
mod values;

pub use fold::{FoldContext, Folded, Touched, fold};
pub use sources::{expand_option_files, option_file_text, option_file_words, script_directives};
pub use validate::{
    SubmitterRights, Verification, no_queue_admits, queue_exists, validate_attributes,
    validate_job, verify_against_config,
};
pub use values::{
    MAX_ARRAY_TASKS, SLOTS_INFINITY, Verify, check_option, cluster_path, comma_list, context_list,
    date_time, env_list, hold_jid_list, hold_list, is_memory_value, job_name_syntax,
    job_name_valid, job_share, mail_options, path_list, priority, resource_list, slot_range,
    task_concurrency, task_range, time_value, verify_level, yes_no,
};

/// A refusal, worded and coded as SGE 8.1.9 does. `render` gives the exact stderr text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// A malformed command line: `qsub: …`, exit 2.
    #[error("{0}")]
    Usage(String),
    /// A value that does not parse: `qsub: …`, exit 7.
    #[error("{0}")]
    BadValue(String),
    /// A malformed `-a`/`-dl` date: SGE prints a blank line and the detail first, exit 7.
    #[error("Wrong date/time format \"{value}\" specified to {option} option")]
    BadDate {
        detail: String,
        value: String,
        option: &'static str,
    },
    /// Non-option words in a `#$` line or a defaults file: SGE's empty "Unknown option", exit 5.
    #[error("Unknown option")]
    StrayWords(usize),
    /// The script could not be read: exit 14 for a file, 4 for stdin.
    #[error("Unable to read script file because of error: {msg}")]
    Script { msg: String, code: u8 },
    /// Refused as qmaster refuses a job: `Unable to run job: …` then `Exiting.`, exit 1.
    #[error("Unable to run job: {0}")]
    Rejected(String),
    /// Bytes that are not UTF-8 where gridspool keeps text (a `#$` line, a line of an
    /// `sge_request` or `-@` file, a variable `-v` copies, the directory of `-cwd`): SGE passes
    /// them on, gridspool's records are UTF-8 (`tests/compat/DIVERGENCES.md`). Exit 1.
    #[error("{0} is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text")]
    NotUtf8(String),
}

impl SubmitError {
    pub fn code(&self) -> u8 {
        match self {
            SubmitError::Usage(_) => 2,
            SubmitError::BadValue(_) | SubmitError::BadDate { .. } => 7,
            SubmitError::StrayWords(_) => 5,
            SubmitError::Script { code, .. } => *code,
            SubmitError::Rejected(_) | SubmitError::NotUtf8(_) => 1,
        }
    }

    /// The whole stderr text SGE prints for this error (`prog` is `qsub` or `qalter`).
    pub fn render(&self, prog: &str) -> String {
        match self {
            SubmitError::Usage(m) | SubmitError::BadValue(m) => format!("{prog}: {m}\n"),
            SubmitError::BadDate { detail, .. } => format!("\n{detail}\n{prog}: {self}\n"),
            SubmitError::StrayWords(n) => format!("{prog}: Unknown option \n\n").repeat(*n),
            SubmitError::Script { .. } => format!("{self}\n"),
            SubmitError::Rejected(_) => format!("{self}\nExiting.\n"),
            SubmitError::NotUtf8(_) => format!("{prog}: {self}\n"),
        }
    }
}

impl SubmitError {
    /// The whole stderr text and exit code of `qrsh` and `qlogin` (`prog`) for this error:
    /// they parse qsub's options, but report as interactive clients do, without qsub's name
    /// or `Unable to run job`, and exit 1.
    pub fn render_interactive(&self, prog: &str) -> (String, u8) {
        let text = match self {
            SubmitError::Usage(m) => format!("error: {m}\n"),
            SubmitError::BadValue(m) => format!("{m}\n"),
            SubmitError::BadDate { detail, .. } => format!("\n{detail}\nerror: {self}\n"),
            SubmitError::Rejected(m) => format!("{m}\n"),
            SubmitError::StrayWords(_) | SubmitError::Script { .. } | SubmitError::NotUtf8(_) => {
                return (self.render(prog), self.code());
            }
        };
        (text, 1)
    }
}

fn invalid_argument(option: &str, value: &str) -> SubmitError {
    SubmitError::BadValue(format!("invalid option argument \"{option} {value}\""))
}

fn numeric_invalid(value: &str) -> SubmitError {
    SubmitError::BadValue(format!(
        "Numerical value invalid!\nThe initial portion of string \"{value}\" contains no decimal number"
    ))
}
