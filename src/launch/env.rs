//! The environment a job sees, as SGE 8.1.9's shepherd sets it (captures
//! `tests/compat/job/env-output*.txt`).
//!
//! The job's `-v`/`-V` variables come first and SGE's own variables replace them (SGE 8.1.9 keeps
//! `HOME`, `PATH`, `JOB_ID`, `SHELL`… its own even when `-v` names them), except `TERM`, which
//! SGE leaves empty unless the job passes one. Values differ from SGE only where paths do:
//!
//! | variable | SGE 8.1.9 | gridspool |
//! |---|---|---|
//! | `JOB_SCRIPT` | `<execd spool>/job_scripts/<job>` | `<exec spool>/active_jobs/<job>.<task>/job_script` |
//! | `SGE_JOB_SPOOL_DIR` | `<execd spool>/active_jobs/<job>.<task>` | `<exec spool>/active_jobs/<job>.<task>` |
//! | `SGE_BINARY_PATH` | `/usr/sbin/lx-amd64` | the directory of `gridspool-shepherd` |
//! | `SGE_ROOT`, `SGE_CELL` | the installation | the spool's parent and name |
//! | `PATH` | execd's `PATH` | [`DEFAULT_JOB_PATH`] (the same value on Debian) |

use super::paths::OutputPaths;
use super::spec::LaunchSpec;

/// The job's `PATH`: SGE passes its execd's, which on the reference system is Debian's
/// standard user path; a login shell's `/etc/profile` sets the same for ordinary users.
pub const DEFAULT_JOB_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games";

/// What only the execution host knows.
#[derive(Debug, Clone)]
pub struct ExecContext<'a> {
    pub home: &'a str,
    pub workdir: &'a str,
    pub paths: &'a OutputPaths,
    pub job_spool_dir: &'a str,
    pub job_script: &'a str,
    pub pe_hostfile: &'a str,
    pub tmpdir: &'a str,
    pub binary_path: &'a str,
    /// The shell that runs the job (`SHELL`).
    pub shell: &'a str,
}

/// The complete environment, sorted by name (what `env | sort` shows).
pub fn job_environment(spec: &LaunchSpec, ctx: &ExecContext<'_>) -> Vec<(String, String)> {
    let mut env: std::collections::BTreeMap<String, String> = Default::default();
    env.insert("TERM".into(), String::new());
    for v in &spec.env {
        let value = match &v.value {
            Some(val) => val.clone(),
            // `-v NAME` without a value: SGE sends the submit environment's value, which qsub
            // resolved already; an unresolved name is empty.
            None => String::new(),
        };
        env.insert(v.name.clone(), value);
    }
    let s = &spec.submitter;
    let p = &spec.placement;
    let undefined = || "undefined".to_string();
    let (first, last, step) = match spec.array {
        Some(r) => (r.first.to_string(), r.last.to_string(), r.step.to_string()),
        None => (undefined(), undefined(), undefined()),
    };
    let task_id = if spec.array.is_some() {
        spec.task.to_string()
    } else {
        undefined()
    };
    let mut hosts: Vec<&str> = p.granted.iter().map(|(h, _, _)| h.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let nhosts = hosts.len().max(1);
    let nqueues = p.granted.len().max(1);
    let nslots: u32 = if p.granted.is_empty() {
        p.slots.max(1)
    } else {
        p.granted.iter().map(|(_, _, n)| *n).sum()
    };
    let ours: Vec<(&str, String)> = vec![
        ("ARC", spec.arch.clone()),
        ("ENVIRONMENT", "BATCH".into()),
        ("HOME", ctx.home.into()),
        ("HOSTNAME", spec.host.clone()),
        ("JOB_ID", spec.job.to_string()),
        ("JOB_NAME", spec.name.clone()),
        ("JOB_SCRIPT", ctx.job_script.into()),
        ("LOGNAME", s.owner.clone()),
        ("NHOSTS", nhosts.to_string()),
        ("NQUEUES", nqueues.to_string()),
        ("NSLOTS", nslots.to_string()),
        ("PATH", DEFAULT_JOB_PATH.into()),
        ("PWD", ctx.workdir.into()),
        ("QUEUE", spec.queue_name().into()),
        ("REQNAME", spec.name.clone()),
        ("REQUEST", spec.name.clone()),
        ("RESTARTED", if spec.restarted { "1" } else { "0" }.into()),
        ("SGE_ACCOUNT", spec.account.clone()),
        ("SGE_ARCH", spec.arch.clone()),
        ("SGE_BINARY_PATH", ctx.binary_path.into()),
        ("SGE_CELL", spec.sge_cell.clone()),
        ("SGE_CWD_PATH", ctx.workdir.into()),
        ("SGE_JOB_SPOOL_DIR", ctx.job_spool_dir.into()),
        ("SGE_O_HOME", s.sge_o_home.clone()),
        ("SGE_O_HOST", s.sge_o_host.clone()),
        ("SGE_O_LOGNAME", s.sge_o_log_name.clone()),
        ("SGE_O_PATH", s.sge_o_path.clone()),
        ("SGE_O_SHELL", s.sge_o_shell.clone()),
        ("SGE_O_WORKDIR", s.sge_o_workdir.clone()),
        ("SGE_ROOT", spec.sge_root.clone()),
        ("SGE_STDERR_PATH", ctx.paths.stderr.clone()),
        ("SGE_STDIN_PATH", ctx.paths.stdin.clone()),
        ("SGE_STDOUT_PATH", ctx.paths.stdout.clone()),
        ("SGE_TASK_FIRST", first),
        ("SGE_TASK_ID", task_id),
        ("SGE_TASK_LAST", last),
        ("SGE_TASK_STEPSIZE", step),
        ("SHELL", ctx.shell.into()),
        ("TMP", ctx.tmpdir.into()),
        ("TMPDIR", ctx.tmpdir.into()),
        ("USER", s.owner.clone()),
    ];
    for (k, v) in ours {
        env.insert(k.to_string(), v);
    }
    if let Some(mail) = &s.sge_o_mail {
        env.insert("SGE_O_MAIL".into(), mail.clone());
    }
    if let Some(tz) = &s.sge_o_tz {
        env.insert("SGE_O_TZ".into(), tz.clone());
    }
    if let Some(pe) = &p.pe {
        env.insert("PE".into(), pe.clone());
        env.insert("PE_HOSTFILE".into(), ctx.pe_hostfile.into());
    }
    env.into_iter().collect()
}

/// `PE_HOSTFILE` per `sge_pe(5)`: one line per host, `host slots queue@host processor-range`
/// (`UNDEFINED` when no binding), master host first.
pub fn pe_hostfile(spec: &LaunchSpec) -> String {
    let mut out = String::new();
    for (host, queue, slots) in &spec.placement.granted {
        let q = queue.split('@').next().unwrap_or(queue);
        out.push_str(&format!("{host} {slots} {q}@{host} UNDEFINED\n"));
    }
    out
}
