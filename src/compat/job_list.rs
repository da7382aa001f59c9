//! SGE's `job_task_list` (`qdel`, `qalter`, `qhold`, `qrls`, `qstat -j`):
//! `job_tasks[,job_tasks,...]` where `job_tasks` is
//! `[job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]`.

use super::options::ParsedArgs;
use super::pattern;
use crate::model::{JobId, JobRecord, TaskIdRange, TaskRangeError};

/// How a job is named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRef {
    Id(JobId),
    /// A job name or a wildcard pattern over job names.
    Name(String),
}

/// One element of a job_task_list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTaskRef {
    /// The word as typed (for messages such as `denied: job "999999" does not exist`).
    pub text: String,
    pub job: JobRef,
    pub tasks: Option<TaskIdRange>,
}

impl JobTaskRef {
    /// Whether `job` is one this reference names.
    pub fn selects(&self, job: &JobRecord) -> bool {
        match &self.job {
            JobRef::Id(id) => job.id == *id,
            JobRef::Name(name) => pattern::matches(name, &job.spec.name),
        }
    }
}

/// Parses one comma-separated word of a job_task_list.
pub fn parse_word(word: &str) -> Result<Vec<JobTaskRef>, TaskRangeError> {
    let mut out = Vec::new();
    for part in word.split(',').filter(|p| !p.is_empty()) {
        let (head, tasks) = match part.split_once('.') {
            Some((id, range)) if id.chars().all(|c| c.is_ascii_digit()) && !id.is_empty() => {
                (id, Some(TaskIdRange::parse(range)?))
            }
            _ => (part, None),
        };
        let job = match head.parse::<u32>() {
            Ok(n) => JobRef::Id(JobId(n)),
            Err(_) => JobRef::Name(head.to_string()),
        };
        out.push(JobTaskRef {
            text: part.to_string(),
            job,
            tasks,
        });
    }
    Ok(out)
}

/// The job_task_list of a parsed command line: every operand, with each `-t range` option
/// applied to the job named just before it (SGE: `qdel 10 -t 4`).
pub fn from_args(args: &ParsedArgs) -> Result<Vec<JobTaskRef>, TaskRangeError> {
    let mut refs: Vec<(usize, JobTaskRef)> = Vec::new();
    for (i, word) in args.operands.iter().enumerate() {
        for r in parse_word(word)? {
            refs.push((i, r));
        }
    }
    for opt in args.options.iter().filter(|o| o.spec.name == "-t") {
        let range = TaskIdRange::parse(opt.values.first().map_or("", String::as_str))?;
        // The operand typed just before this `-t`.
        if let Some((_, r)) = refs
            .iter_mut()
            .rev()
            .find(|(i, _)| *i < opt.operands_before)
        {
            r.tasks = Some(range);
        }
    }
    Ok(refs.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::options::{Arity, OperandMode, OptionSpec, Origin, parse};

    static TABLE: &[OptionSpec] = &[OptionSpec::new("-t", Arity::One, "[-t range]", "")];

    #[test]
    fn ids_tasks_names_and_dash_t() {
        let words: Vec<String> = ["8,12", "10.2", "myname", "10", "-t", "4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let args = parse(
            TABLE,
            &words,
            OperandMode::Interleaved,
            &Origin::CommandLine,
        )
        .expect("parse");
        let refs = from_args(&args).expect("refs");
        assert_eq!(refs.len(), 5);
        assert_eq!(refs[0].job, JobRef::Id(JobId(8)));
        assert_eq!(refs[2].tasks, Some(TaskIdRange::single(2)));
        assert_eq!(refs[3].job, JobRef::Name("myname".into()));
        assert_eq!(refs[4].tasks, Some(TaskIdRange::single(4)));
        assert_eq!(refs[4].text, "10");
        assert!(parse_word("5.x").is_err());
    }
}
