//! Where a job's stdin, stdout and stderr go, by `qsub(1)`'s rules for `-o`, `-e`, `-i`, `-j`.
//!
//! - Default: `<name>.o<job>` / `<name>.e<job>` (`.<task>` appended for array tasks) in the job's
//!   working directory (`-cwd`/`-wd`, else the owner's home).
//! - `-o`/`-e`/`-i` take `[host:]path`; the entry for the execution host wins over one without a
//!   host. The pseudo variables `$HOME $USER $JOB_ID $JOB_NAME $HOSTNAME $TASK_ID` are expanded
//!   (`$TASK_ID` is `undefined` outside arrays, as SGE prints it). A relative path is relative to
//!   the working directory. A path naming a directory means the default file name inside it.
//! - `-j y`: stderr goes to the stdout file; `SGE_STDERR_PATH` then names the stdout file, as
//!   SGE 8.1.9 does.
//! - stdin is `-i`'s file, else `/dev/null`.

use crate::model::{JobId, PathSpec, TaskId};
use serde::{Deserialize, Serialize};

/// The resolved paths of one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputPaths {
    pub stdin: String,
    pub stdout: String,
    pub stderr: String,
    /// `-j y`: stderr is written to the stdout file (one open file for both).
    pub merged: bool,
}

/// What the pseudo variables stand for.
#[derive(Debug, Clone)]
pub struct PathContext<'a> {
    pub job: JobId,
    /// `None` outside array jobs.
    pub task: Option<TaskId>,
    pub job_name: &'a str,
    pub user: &'a str,
    pub home: &'a str,
    pub hostname: &'a str,
    pub workdir: &'a str,
}

/// Expands `$HOME $USER $JOB_ID $JOB_NAME $HOSTNAME $TASK_ID` (also as `${NAME}`); other `$`
/// text is kept as it is, as SGE does.
pub fn expand_pseudo_variables(path: &str, ctx: &PathContext<'_>) -> String {
    let task = ctx
        .task
        .map_or_else(|| "undefined".to_string(), |t| t.to_string());
    let job = ctx.job.to_string();
    let vars: [(&str, &str); 6] = [
        ("HOSTNAME", ctx.hostname),
        ("JOB_NAME", ctx.job_name),
        ("JOB_ID", &job),
        ("TASK_ID", &task),
        ("HOME", ctx.home),
        ("USER", ctx.user),
    ];
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    'outer: while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        for (name, value) in vars {
            let braced = format!("{{{name}}}");
            if let Some(r) = after.strip_prefix(braced.as_str()) {
                out.push_str(value);
                rest = r;
                continue 'outer;
            }
            if let Some(r) = after.strip_prefix(name)
                && !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                out.push_str(value);
                rest = r;
                continue 'outer;
            }
        }
        out.push('$');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The entry of a `[host:]path` list that applies on `host`.
pub fn select_path<'a>(list: &'a [PathSpec], host: &str) -> Option<&'a str> {
    list.iter()
        .find(|p| p.host.as_deref() == Some(host))
        .or_else(|| list.iter().find(|p| p.host.is_none()))
        .map(|p| p.path.as_str())
}

fn absolute(path: String, workdir: &str) -> String {
    if path.starts_with('/') {
        path
    } else if workdir.ends_with('/') {
        format!("{workdir}{path}")
    } else {
        format!("{workdir}/{path}")
    }
}

/// Resolves the three paths. `is_dir` says whether a path names a directory; the shepherd asks
/// the file system as the job's owner, tests may answer themselves.
pub fn resolve_output_paths(
    ctx: &PathContext<'_>,
    stdout: &[PathSpec],
    stderr: &[PathSpec],
    stdin: &[PathSpec],
    merge_stderr: bool,
    is_dir: impl Fn(&str) -> bool,
) -> OutputPaths {
    let default_name = |letter: char| match ctx.task {
        Some(t) => format!("{}.{letter}{}.{t}", ctx.job_name, ctx.job),
        None => format!("{}.{letter}{}", ctx.job_name, ctx.job),
    };
    let one = |list: &[PathSpec], letter: char| -> String {
        match select_path(list, ctx.hostname) {
            Some(p) => {
                let p = absolute(expand_pseudo_variables(p, ctx), ctx.workdir);
                if is_dir(&p) {
                    absolute(default_name(letter), &p)
                } else {
                    p
                }
            }
            None => absolute(default_name(letter), ctx.workdir),
        }
    };
    let out = one(stdout, 'o');
    let err = if merge_stderr {
        out.clone()
    } else {
        one(stderr, 'e')
    };
    let input = match select_path(stdin, ctx.hostname) {
        Some(p) => absolute(expand_pseudo_variables(p, ctx), ctx.workdir),
        None => "/dev/null".to_string(),
    };
    OutputPaths {
        stdin: input,
        stdout: out,
        stderr: err,
        merged: merge_stderr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(task: Option<TaskId>) -> PathContext<'static> {
        PathContext {
            job: JobId(7),
            task,
            job_name: "job.sh",
            user: "sgeuser",
            home: "/home/sgeuser",
            hostname: "vm",
            workdir: "/home/sgeuser",
        }
    }

    fn p(path: &str) -> Vec<PathSpec> {
        vec![PathSpec {
            host: None,
            path: path.to_string(),
        }]
    }

    #[test]
    fn defaults_follow_sge_names() {
        let o = resolve_output_paths(&ctx(None), &[], &[], &[], false, |_| false);
        assert_eq!(o.stdout, "/home/sgeuser/job.sh.o7");
        assert_eq!(o.stderr, "/home/sgeuser/job.sh.e7");
        assert_eq!(o.stdin, "/dev/null");
        let o = resolve_output_paths(&ctx(Some(2)), &[], &[], &[], false, |_| false);
        assert_eq!(o.stdout, "/home/sgeuser/job.sh.o7.2");
    }

    #[test]
    fn pseudo_variables_directories_and_join() {
        let o = resolve_output_paths(
            &ctx(Some(3)),
            &p("out.$TASK_ID.$JOB_NAME"),
            &p("odir"),
            &p("$HOME/in"),
            false,
            |d| d == "/home/sgeuser/odir",
        );
        assert_eq!(o.stdout, "/home/sgeuser/out.3.job.sh");
        assert_eq!(o.stderr, "/home/sgeuser/odir/job.sh.e7.3");
        assert_eq!(o.stdin, "/home/sgeuser/in");
        let o = resolve_output_paths(&ctx(None), &p("/t/${USER}_$JOB_ID"), &[], &[], true, |_| {
            false
        });
        assert_eq!(o.stdout, "/t/sgeuser_7");
        assert_eq!(o.stderr, "/t/sgeuser_7");
        assert_eq!(
            expand_pseudo_variables("$TASK_ID $HOSTNAMEX $X", &ctx(None)),
            "undefined $HOSTNAMEX $X"
        );
    }

    #[test]
    fn the_entry_for_the_execution_host_wins() {
        let list = vec![
            PathSpec {
                host: None,
                path: "/any".into(),
            },
            PathSpec {
                host: Some("vm".into()),
                path: "/mine".into(),
            },
        ];
        assert_eq!(select_path(&list, "vm"), Some("/mine"));
        assert_eq!(select_path(&list, "other"), Some("/any"));
    }
}
