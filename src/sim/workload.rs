//! A workload for [`super::replay`]: the jobs of an SWF trace ([`super::swf`]), of a cell's
//! accounting file, or of a file of `qsub` command lines, which says what a site submits
//! with every option it uses (projects, parallel environments, resources, `-ac cluster=`,
//! `-R y`, …):
//!
//! ```text
//! # submit  run time  user[:group]  [cpu=TIME]  qsub options…
//! 0         3600      alice         cpu=13500   qsub -P chemistry -pe smp 4 -l h_rt=2:0:0
//! 0:10:0    600       bob:staff                 qsub -q short.q -p -100
//! ```
//!
//! Times are seconds or `h:m:s`, the submission counted from the workload's start; the
//! options are SGE's, read by `qsub`'s own parser (a script name after them is allowed and
//! ignored: nothing runs). `cpu=` is the CPU time the job used, all its slots together (of
//! each task of an array job), as the daemon measures and charges it to the share tree: a
//! job that mostly waits on I/O or sleeps is charged little there, and a replay that charged
//! it in full would order the share tree's users differently. A job without `cpu=` is
//! charged its run time on all its slots (full CPU), each task of an array job (`-t`) too;
//! the report says how many jobs that was. `-hold_jid` and `-hold_jid_ad` name
//! jobs submitted earlier in the workload (by number, or by name or pattern among the same
//! user's), `-now y` jobs that cannot start at once are dropped, as `sched_d` drops them; the
//! wall clock's dates (`-a`, `-dl`) and user holds (`-h`) are refused.

use crate::compat::options::{OperandMode, Origin, parse, split_words};
use crate::compat::qsub_options::QSUB_OPTIONS;
use crate::compat::submit::{FoldContext, check_option, fold};
use crate::config::ClusterConfig;
use crate::model::JobSpec;

/// One job of a workload, the fields the simulator uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceJob {
    /// SWF field 1; an accounting file's or a `qsub` file's jobs are numbered from 1.
    pub number: u64,
    /// Seconds from the workload's start (SWF field 2).
    pub submit: i64,
    /// The wait the trace recorded, `-1` when unknown (SWF field 3).
    pub wait: i64,
    /// Seconds it ran (SWF field 4).
    pub run_time: i64,
    /// SWF field 8, else field 5: processors (slots).
    pub processors: u32,
    /// SWF field 9: the run time it asked for (`h_rt`), if known.
    pub requested_time: Option<i64>,
    /// SWF fields 12, 13, 15 (`u3`, `g1`, `q2`), or the names of an accounting record, or a
    /// `qsub` line's user, group and first `-q` queue.
    pub user: String,
    pub group: String,
    pub queue: String,
    /// A `qsub` line's options: the job is what they make of it under each configuration
    /// (the other fields above then only say who submitted it, when, and for how long).
    pub qsub: Option<Vec<String>>,
    /// CPU seconds it used, all processors together (SWF field 6 times the processors; an
    /// accounting record's `cpu`), if known: what the share tree is charged. Unknown, the
    /// replay charges its run time on every slot.
    pub cpu: Option<f64>,
    /// An accounting record's integral memory (GB·s) and I/O (GB), charged with the CPU.
    pub mem: f64,
    pub io: f64,
    /// An accounting record's project and POSIX priority (`-P`, `-p`).
    pub project: Option<String>,
    pub priority: i32,
    /// The job's name: an accounting record's, or `app<N>` for an SWF job's application
    /// number (field 14); else the replay names it after its number.
    pub name: Option<String>,
}

/// Why a workload cannot be read or replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct WorkloadError {
    pub line: usize,
    pub reason: String,
}

/// Reads a workload file, telling its format by its content: an accounting file begins with
/// its `# Version` header, a `qsub` file's lines have `qsub` as their fourth word, anything
/// else is read as SWF.
pub fn load(path: &std::path::Path) -> Result<Vec<TraceJob>, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError {
        line: 0,
        reason: e.to_string(),
    })?;
    if text.starts_with("# Version:") {
        return super::swf::from_accounting(path);
    }
    let first = text
        .lines()
        .map(split_words)
        .find(|w| !w.is_empty() && !w[0].starts_with(';'));
    if first.is_some_and(|w| qsub_at(&w).is_some()) {
        parse_qsub_lines(&text)
    } else {
        super::swf::parse(&text)
    }
}

fn seconds(word: &str) -> Option<i64> {
    crate::launch::parse_time(word)
        .ok()
        .flatten()
        .and_then(|t| i64::try_from(t).ok())
}

/// Where a `qsub` line's `qsub` is: the fourth word, or the fifth after a `cpu=` field.
fn qsub_at(words: &[String]) -> Option<usize> {
    match (
        words.get(3).map(String::as_str),
        words.get(4).map(String::as_str),
    ) {
        (Some("qsub"), _) => Some(3),
        (Some(cpu), Some("qsub")) if cpu.starts_with("cpu=") => Some(4),
        _ => None,
    }
}

/// A `cpu=` field's time: seconds (with a fraction, as accounting records them) or `h:m:s`.
fn cpu_seconds(word: &str) -> Option<f64> {
    match word.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => Some(s),
        Ok(_) => None,
        Err(_) => seconds(word).map(|s| s as f64),
    }
}

/// The jobs of a file of `qsub` lines, in submission order.
pub fn parse_qsub_lines(text: &str) -> Result<Vec<TraceJob>, WorkloadError> {
    let mut jobs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let words = split_words(line);
        if words.is_empty() {
            continue;
        }
        let bad = |reason: String| WorkloadError {
            line: i + 1,
            reason,
        };
        let Some(at) = qsub_at(&words) else {
            return Err(bad(
                "want: submit time, run time, user[:group], [cpu=TIME,] qsub and its options"
                    .into(),
            ));
        };
        let cpu = match words[3].strip_prefix("cpu=") {
            Some(time) if at == 4 => Some(
                cpu_seconds(time).ok_or_else(|| bad(format!("not a CPU time: {:?}", words[3])))?,
            ),
            _ => None,
        };
        let submit =
            seconds(&words[0]).ok_or_else(|| bad(format!("not a time: {:?}", words[0])))?;
        let run_time =
            seconds(&words[1]).ok_or_else(|| bad(format!("not a time: {:?}", words[1])))?;
        let (user, group) = match words[2].split_once(':') {
            Some((u, g)) => (u.to_string(), g.to_string()),
            None => (words[2].clone(), words[2].clone()),
        };
        let options = words[at + 1..].to_vec();
        // Read now, so that a bad option is named with its line before any replay.
        let parsed = parse(
            QSUB_OPTIONS,
            &options,
            OperandMode::StopAtFirst,
            &Origin::CommandLine,
        )
        .map_err(|e| bad(format!("qsub: {e}")))?;
        let mut queue = String::new();
        let mut processors = 1;
        for o in &parsed.options {
            check_option(o, "qsub").map_err(|e| bad(e.render("qsub").trim_end().to_string()))?;
            match o.spec.name {
                // Dates are of the wall clock, which a replay does not have; a held job would
                // wait for a `qrls` that never comes.
                "-a" | "-dl" => {
                    return Err(bad(format!(
                        "qsub {}: a date has no meaning in a replay (give the job's submission time instead)",
                        o.spec.name
                    )));
                }
                "-h" => {
                    return Err(bad(
                        "qsub -h: a held job would never be released in a replay".into(),
                    ));
                }
                "-q" if queue.is_empty() => {
                    queue = o.values[0].split(',').next().unwrap_or("").to_string();
                }
                "-pe" => {
                    processors = crate::compat::submit::slot_range(&o.values[1])
                        .map(|r| r.min)
                        .map_err(|e| bad(e.render("qsub").trim_end().to_string()))?;
                }
                _ => {}
            }
        }
        jobs.push(TraceJob {
            number: jobs.len() as u64 + 1,
            submit,
            wait: -1,
            run_time,
            processors,
            requested_time: None,
            user,
            group,
            queue,
            qsub: Some(options),
            cpu,
            ..TraceJob::default()
        });
    }
    jobs.sort_by_key(|j| (j.submit, j.number));
    Ok(jobs)
}

/// The job a `qsub` line's options make under `config` (its complexes decide what `-l` may
/// ask for).
pub fn qsub_spec(options: &[String], config: &ClusterConfig) -> Result<JobSpec, String> {
    let parsed = parse(
        QSUB_OPTIONS,
        options,
        OperandMode::StopAtFirst,
        &Origin::CommandLine,
    )
    .map_err(|e| e.to_string())?;
    let ctx = FoldContext {
        config,
        environ: &[],
        environ_not_utf8: &[],
        cwd: "/",
    };
    let folded = fold(&parsed.options, ctx).map_err(|e| e.render("qsub").trim_end().to_string())?;
    Ok(folded.spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qsub_lines_say_who_submitted_what_when_and_for_how_long() {
        let text = "# a comment\n\n\
            0:10:0 600 bob:staff qsub -q short.q,long.q -p -100 job.sh\n\
            0 3600 alice qsub -P chemistry -pe smp 4 -l h_rt=2:0:0\n";
        let jobs = parse_qsub_lines(text).expect("workload");
        assert_eq!(jobs.len(), 2);
        let (alice, bob) = (&jobs[0], &jobs[1]);
        assert_eq!(
            (alice.submit, alice.run_time, alice.processors),
            (0, 3600, 4)
        );
        assert_eq!(
            (alice.user.as_str(), alice.group.as_str()),
            ("alice", "alice")
        );
        assert_eq!(
            (bob.submit, bob.group.as_str(), bob.queue.as_str()),
            (600, "staff", "short.q")
        );
        let config = ClusterConfig::parse(
            "hosts: [{name: n1, slots: 1}]\nqueues: [{name: all.q, hostlist: [n1], slots: 1}]\n",
        )
        .expect("config");
        let spec = qsub_spec(alice.qsub.as_deref().unwrap_or_default(), &config).expect("spec");
        assert_eq!(spec.project.as_deref(), Some("chemistry"));
        assert_eq!(spec.pe.as_ref().map(|p| p.range.min), Some(4));
        let bad = parse_qsub_lines("0 10 alice qsub -pe smp\n").expect_err("no range");
        assert_eq!(bad.line, 1);
        assert!(bad.reason.contains("-pe"), "{bad}");
        let bad = parse_qsub_lines("0 ten alice qsub\n").expect_err("no time");
        assert_eq!(bad.reason, "not a time: \"ten\"");
        let bad = parse_qsub_lines("0 10 alice qsub -h\n").expect_err("held");
        assert_eq!(
            bad.reason,
            "qsub -h: a held job would never be released in a replay"
        );
        let bad = parse_qsub_lines("0 10 alice cpu=lots qsub\n").expect_err("cpu");
        assert_eq!(bad.reason, "not a CPU time: \"cpu=lots\"");
        let bad = parse_qsub_lines("0 10 alice qsub -a 202701011200\n").expect_err("date");
        assert!(bad.reason.starts_with("qsub -a: a date"), "{bad}");
    }

    #[test]
    fn a_qsub_line_may_say_the_cpu_time_its_job_used() {
        let text = "0 600 alice cpu=12.5 qsub -N a\n0 600 bob cpu=0:2:0 qsub\n0 600 carol qsub\n";
        let jobs = parse_qsub_lines(text).expect("workload");
        let cpu: Vec<Option<f64>> = jobs.iter().map(|j| j.cpu).collect();
        assert_eq!(cpu, [Some(12.5), Some(120.0), None]);
        assert_eq!(
            jobs[0].qsub.as_deref(),
            Some(&["-N".to_string(), "a".into()][..])
        );
        // The format is told by `qsub` after the optional field too.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.txt");
        std::fs::write(&path, "0 600 alice cpu=1 qsub\n").expect("write");
        assert_eq!(load(&path).expect("load")[0].cpu, Some(1.0));
    }
}
