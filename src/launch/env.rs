//! The environment a job sees, as SGE 8.1.9's execd writes it and its shepherd sets it
//! (`exec_job.c`; captures `tests/compat/job/*.txt`).
//!
//! The order is SGE's: the job's `-v`/`-V` variables (with `TERM` empty unless they pass one:
//! qsub's `job_initialize_env` sets it before reading `-v`), then `PATH` = `$TMPDIR:` and the
//! job's own `PATH` or SGE's built-in default, then SGE's own variables, which replace the
//! job's (`HOME`, `JOB_ID`, `SHELL`, every `SGE_*` SGE sets…; any other `SGE_FOO` passes).
//! `PWD` is SGE's only when `-cwd` is given; otherwise the job's own, else the one the shepherd
//! inherited (its task directory): a shell corrects it to its working directory, a program
//! run with `-shell no` sees it as it is. A login shell's `/etc/profile` may reset `PATH`
//! afterwards, as under SGE (`login_shells`). Values differ from SGE only where paths do:
//!
//! | variable | SGE 8.1.9 | gridspool |
//! |---|---|---|
//! | `JOB_SCRIPT` | `<execd spool>/job_scripts/<job>` | `<exec spool>/active_jobs/<job>.<task>/job_script` |
//! | `SGE_JOB_SPOOL_DIR`, `PWD` (above) | `<execd spool>/active_jobs/<job>.<task>` | `<exec spool>/active_jobs/<job>.<task>` |
//! | `SGE_BINARY_PATH` | `/usr/sbin/lx-amd64` | the directory of `gridspool-shepherd` |
//! | `SGE_ROOT`, `SGE_CELL` | the installation | the spool's parent and name |

use super::paths::OutputPaths;
use super::spec::LaunchSpec;

/// The `PATH` behind `$TMPDIR:` when the job passes none: SGE 8.1.9's `SGE_DEFAULT_PATH`
/// (`source/libs/uti/sge_stdio.h`, Linux). Not the execd's `PATH`, nor Debian's user path,
/// which a login shell's `/etc/profile` sets on its own.
pub const SGE_DEFAULT_PATH: &str = "/usr/local/bin:/bin:/usr/bin";

/// What only the execution host knows.
#[derive(Debug, Clone)]
pub struct ExecContext<'a> {
    pub home: &'a str,
    pub workdir: &'a str,
    /// Whether the job asked for its working directory (`-cwd`, `-wd`): only then does SGE
    /// set `PWD`.
    pub cwd_requested: bool,
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
    // exec_job.c: `PATH=<tmpdir>:<the job's PATH or SGE_DEFAULT_PATH>`.
    let path = match env.get("PATH") {
        Some(user_path) => format!("{}:{user_path}", ctx.tmpdir),
        None => format!("{}:{SGE_DEFAULT_PATH}", ctx.tmpdir),
    };
    env.insert("PATH".into(), path);
    // The shepherd's own PWD (its task directory) is inherited unless the job passed one.
    env.entry("PWD".into())
        .or_insert_with(|| ctx.job_spool_dir.to_string());
    if ctx.cwd_requested {
        env.insert("PWD".into(), ctx.workdir.into());
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
    // Granted devices: SGE's resource map variable, and CUDA's for GPUs.
    for (kind, ids) in &spec.devices {
        env.insert(format!("SGE_HGR_{kind}"), ids.join(" "));
        if kind == "gpu" {
            env.insert("CUDA_VISIBLE_DEVICES".into(), ids.join(","));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::{JobCommand, Limits};
    use crate::model::Placement;
    use crate::model::{EnvVar, JobId, Submitter};

    fn spec() -> LaunchSpec {
        LaunchSpec {
            v: 1,
            job: JobId(5),
            task: 1,
            array: None,
            name: "j".into(),
            submitter: Submitter {
                owner: "u".into(),
                uid: 1,
                group: "g".into(),
                gid: 1,
                submission_time: 0,
                sge_o_home: "/home/u".into(),
                sge_o_log_name: "u".into(),
                sge_o_path: "/bin".into(),
                sge_o_shell: "/bin/bash".into(),
                sge_o_workdir: "/w".into(),
                sge_o_host: "h".into(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            host: "h".into(),
            arch: "lx-amd64".into(),
            placement: Placement {
                host: "h".into(),
                queue: "all.q@h".into(),
                slots: 4,
                granted: vec![
                    ("h".into(), "all.q".into(), 3),
                    ("k".into(), "all.q".into(), 1),
                ],
                pe: Some("mpi".into()),
            },
            restarted: true,
            account: "sge".into(),
            cwd: None,
            stdout: vec![],
            stderr: vec![],
            stdin: vec![],
            merge_stderr: false,
            command: JobCommand::Binary {
                command: "true".into(),
                args: vec![],
                shell: true,
            },
            interpreter: None,
            queue_shell: "/bin/sh".into(),
            shell_start_mode: "posix_compliant".into(),
            login_shells: vec![],
            tmpdir: "/tmp".into(),
            limits: Limits::default(),
            notify: false,
            notify_secs: 60,
            env: vec![
                EnvVar {
                    name: "FOO".into(),
                    value: Some("1".into()),
                },
                EnvVar {
                    name: "PATH".into(),
                    value: Some("/mine".into()),
                },
                EnvVar {
                    name: "TERM".into(),
                    value: Some("xterm".into()),
                },
            ],
            sge_root: "/r".into(),
            sge_cell: "default".into(),
            exec_spool: "/r/default/execd/h".into(),
            prolog: None,
            starter_method: None,
            nice: 0,
            interactive: None,
            devices: Vec::new(),
            pe_task: None,
            denied_device_files: Vec::new(),
            cgroups: None,
            epilog: None,
        }
    }

    #[test]
    fn sge_variables_win_over_user_ones_but_term_and_others_pass() {
        let paths = OutputPaths {
            stdin: "/dev/null".into(),
            stdout: "/o".into(),
            stderr: "/e".into(),
            merged: false,
        };
        let ctx = ExecContext {
            home: "/home/u",
            workdir: "/home/u",
            cwd_requested: false,
            paths: &paths,
            job_spool_dir: "/s",
            job_script: "true",
            pe_hostfile: "/s/pe_hostfile",
            tmpdir: "/tmp/5.1.all.q",
            binary_path: "/bin",
            shell: "/bin/sh",
        };
        let env: std::collections::BTreeMap<_, _> =
            job_environment(&spec(), &ctx).into_iter().collect();
        assert_eq!(env["FOO"], "1");
        assert_eq!(env["PATH"], "/tmp/5.1.all.q:/mine");
        assert_eq!(env["PWD"], "/s");
        assert_eq!(env["TERM"], "xterm");
        assert_eq!(env["QUEUE"], "all.q");
        assert_eq!(env["RESTARTED"], "1");
        assert_eq!(
            (
                env["NHOSTS"].as_str(),
                env["NQUEUES"].as_str(),
                env["NSLOTS"].as_str()
            ),
            ("2", "2", "4")
        );
        assert_eq!(
            (env["PE"].as_str(), env["PE_HOSTFILE"].as_str()),
            ("mpi", "/s/pe_hostfile")
        );
        assert_eq!(env["SGE_TASK_ID"], "undefined");
        assert_eq!(
            pe_hostfile(&spec()),
            "h 3 all.q@h UNDEFINED\nk 1 all.q@k UNDEFINED\n"
        );
    }

    #[test]
    fn path_is_tmpdir_then_the_jobs_or_sges_default_and_pwd_follows_cwd() {
        let paths = OutputPaths {
            stdin: "/dev/null".into(),
            stdout: "/o".into(),
            stderr: "/e".into(),
            merged: false,
        };
        let ctx = ExecContext {
            home: "/home/u",
            workdir: "/w",
            cwd_requested: true,
            paths: &paths,
            job_spool_dir: "/s",
            job_script: "true",
            pe_hostfile: "/s/pe_hostfile",
            tmpdir: "/tmp/5.1.all.q",
            binary_path: "/bin",
            shell: "/bin/sh",
        };
        let mut spec = spec();
        spec.env = vec![EnvVar {
            name: "PWD".into(),
            value: Some("/elsewhere".into()),
        }];
        let env: std::collections::BTreeMap<_, _> =
            job_environment(&spec, &ctx).into_iter().collect();
        assert_eq!(env["PATH"], "/tmp/5.1.all.q:/usr/local/bin:/bin:/usr/bin");
        assert_eq!(env["PWD"], "/w");
        assert_eq!(env["TERM"], "");
        let ctx = ExecContext {
            cwd_requested: false,
            ..ctx
        };
        let env: std::collections::BTreeMap<_, _> =
            job_environment(&spec, &ctx).into_iter().collect();
        assert_eq!(env["PWD"], "/elsewhere");
    }
}
