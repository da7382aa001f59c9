//! Setting up the job's processes as its owner: the output paths, environment, `TMPDIR` and
//! limits prepared before the fork ([`JobStart`]), the fork and `exec` of the job itself
//! ([`Supervisor::spawn_job`]), and the prolog and epilog run the same way
//! ([`Supervisor::procedure`]). Apart from the supervisor's wait loop because this is where
//! the job's identity, files and failure codes before the job runs (SGE's 26, 27, 28...) are
//! decided; everything here happens before the job's pid exists.

use super::supervisor::Supervisor;
use super::task_start::check_identity;
use super::tmpdir::TaskTmpdir;
use super::{SetupFailure, failed};
use crate::launch::env::{ExecContext, job_environment, pe_hostfile};
use crate::launch::limits::RLimit;
use crate::launch::paths::{OutputPaths, PathContext, resolve_output_paths};
use crate::launch::spawn;
use crate::launch::spec::JobCommand;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Pid, User};
use std::ffi::CString;
use std::path::Path;

impl Supervisor {
    /// Runs the prolog or epilog `command` (`[user@]path [args]`, with queue_conf(5)'s
    /// `$host`, `$job_owner`, `$job_id`, `$job_name`, `$processors`, `$queue`, `$sge_root`
    /// and `$sge_cell`) as the job's owner, or as `user`, with the job's environment, working
    /// directory and output files, and waits for it. Its exit status decides as in
    /// sge_shepherd: 0 goes on; 99 asks for the job to be rescheduled (`failed` 25), 100
    /// puts it in error (30); any other is the procedure's failure (8 for a prolog, 15 for
    /// an epilog: the queue goes to error state); one that cannot be started is 7 or 14.
    pub(super) fn procedure(
        &mut self,
        which: Procedure,
        command: &str,
        prepared: &Prepared,
    ) -> Result<(), SetupFailure> {
        let (name, before, failed_code) = match which {
            Procedure::Prolog => ("prolog", failed::BEFORE_PROLOG, failed::PROLOG_FAILED),
            Procedure::Epilog => ("epilog", failed::BEFORE_EPILOG, failed::EPILOG_FAILED),
        };
        let spec = &self.spec;
        let command = command.trim();
        let (who, rest) = match command.split_once('@') {
            Some((u, r)) if !u.is_empty() && !u.contains('/') && !u.contains(' ') => (Some(u), r),
            _ => (None, command),
        };
        let words: Vec<String> = rest
            .split_whitespace()
            .map(|w| {
                w.replace("$host", &spec.host)
                    .replace("$job_owner", &spec.submitter.owner)
                    .replace("$job_id", &spec.job.to_string())
                    .replace("$job_name", &spec.name)
                    .replace("$processors", "UNDEFINED")
                    .replace("$queue", spec.queue_name())
                    .replace("$sge_root", &spec.sge_root)
                    .replace("$sge_cell", &spec.sge_cell)
            })
            .collect();
        let Some((program, args)) = words.split_first() else {
            return Ok(());
        };
        let user = match who {
            None => prepared.user.clone(),
            Some(u) => match User::from_name(u) {
                Ok(Some(user)) => user,
                _ => return Err(fail(before, format!("unknown user \"{u}\" of {name}"))),
            },
        };
        let mut paths = prepared.paths.clone();
        paths.stdin = "/dev/null".to_string();
        let start = JobStart::prepare(
            &user,
            prepared.workdir.clone(),
            paths,
            &[],
            spec.nice,
            JobProgram {
                program: program.clone(),
                argv0: program.clone(),
                args: args.to_vec(),
                stdin_override: None,
                search: false,
            },
            &prepared.env,
        )
        .map_err(|f| fail(before, f.error))?;
        let pid = match spawn::spawn(&start.exec) {
            Err(e) => {
                return Err(fail(
                    before,
                    format!("can't start {name}: {}", std::io::Error::from(e)),
                ));
            }
            Ok(Err((pid, failure))) => {
                let _ = waitpid(pid, None);
                return Err(fail(before, start.failure(failure).error));
            }
            Ok(Ok(pid)) => pid,
        };
        let status = loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => break code,
                Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(fail(before, format!("waiting for the {name}: {e}"))),
            }
        };
        let error = format!("exit_status of {name} = {status}");
        match status {
            0 => Ok(()),
            99 => Err(fail(failed::AGAIN, error)),
            100 => Err(fail(failed::APPERROR, error)),
            _ => Err(fail(failed_code, error)),
        }
    }

    /// Prepares the job's files and what it runs with (its prolog and epilog too).
    pub(super) fn prepare_job(&mut self) -> Result<Prepared, SetupFailure> {
        let before = |error: String| SetupFailure {
            failed: failed::BEFORE_JOB,
            error,
        };
        let spec = self.spec.clone();
        let user = check_identity(&spec).map_err(|e| before(e.to_string()))?;
        let home = user.dir.to_string_lossy().into_owned();
        let workdir = spec.cwd.clone().unwrap_or_else(|| home.clone());
        // TMPDIR: <tmpdir>/<job>.<task>.<queue>, owned by the job's owner; a pe task's has
        // its id after that: it is removed when the pe task ends, while the task goes on.
        let mut tmpdir_name = format!("{}.{}.{}", spec.job, spec.task, spec.queue_name());
        if let Some(id) = &spec.pe_task {
            tmpdir_name = format!("{tmpdir_name}.{id}");
        }
        let owner = nix::unistd::geteuid()
            .is_root()
            .then_some((user.uid, user.gid));
        let task_tmpdir = TaskTmpdir::create(Path::new(&spec.tmpdir), &tmpdir_name, owner)
            .map_err(|e| {
                before(format!(
                    "can't create tmpdir {}: {e}",
                    Path::new(&spec.tmpdir).join(&tmpdir_name).display()
                ))
            })?;
        let tmpdir = task_tmpdir.path().to_path_buf();
        self.tmpdir = Some(task_tmpdir);
        let script_path = self.dir.script().to_string_lossy().into_owned();
        let pe_hostfile_path = self.dir.pe_hostfile().to_string_lossy().into_owned();
        if let JobCommand::Script { script, .. } = &spec.command {
            self.files_dir()
                .write_unsynced("job_script", script, 0o755)
                .map_err(|e| before(e.to_string()))?;
        }
        if spec.placement.pe.is_some() {
            self.files_dir()
                .write_unsynced("pe_hostfile", pe_hostfile(&spec).as_bytes(), 0o644)
                .map_err(|e| before(e.to_string()))?;
        }
        let job_spool_dir = self.dir.path.to_string_lossy().into_owned();
        let task = spec.array.is_some().then_some(spec.task);
        let path_ctx = PathContext {
            job: spec.job,
            task,
            job_name: &spec.name,
            user: &spec.submitter.owner,
            home: &home,
            hostname: &spec.host,
            workdir: &workdir,
        };
        let mut paths = resolve_output_paths(
            &path_ctx,
            &spec.stdout,
            &spec.stderr,
            &spec.stdin,
            spec.merge_stderr,
            |p| Path::new(p).is_dir(),
        );
        if spec.interactive.is_some() {
            // A qrsh job's input and output are its client's, through `relay`.
            paths = crate::launch::paths::OutputPaths {
                stdin: "/dev/null".into(),
                stdout: "/dev/null".into(),
                stderr: "/dev/null".into(),
                merged: false,
            };
        }
        // What runs, per shell_start_mode (queue_conf(5)) and -b/-shell.
        let shell = spec
            .interpreter
            .clone()
            .unwrap_or_else(|| spec.queue_shell.clone());
        let shell_argv0 = {
            let base = shell.rsplit('/').next().unwrap_or(&shell);
            if spec.login_shells.iter().any(|s| s == base) {
                format!("-{base}")
            } else {
                shell.clone()
            }
        };
        let mut stdin_override = None;
        let mut search_path = false;
        let (program, argv0, args) = match &spec.command {
            JobCommand::Script { script, args } => match spec.shell_start_mode.as_str() {
                "unix_behavior" if script.starts_with(b"#!") => {
                    (script_path.clone(), script_path.clone(), args.clone())
                }
                "script_from_stdin" => {
                    stdin_override = Some(script_path.clone());
                    let mut a = Vec::new();
                    if !args.is_empty() {
                        a.push("-s".to_string());
                        a.extend(args.iter().cloned());
                    }
                    (shell.clone(), shell_argv0.clone(), a)
                }
                _ => {
                    let mut a = vec![script_path.clone()];
                    a.extend(args.iter().cloned());
                    (shell.clone(), shell_argv0.clone(), a)
                }
            },
            JobCommand::Binary {
                command,
                args,
                shell: true,
            } => {
                let mut line = command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                (
                    shell.clone(),
                    shell_argv0.clone(),
                    vec!["-c".to_string(), line],
                )
            }
            JobCommand::Binary {
                command,
                args,
                shell: false,
            } => {
                search_path = true;
                (command.clone(), command.clone(), args.clone())
            }
        };
        let ctx = ExecContext {
            home: &home,
            workdir: &workdir,
            cwd_requested: spec.cwd.is_some(),
            paths: &paths,
            job_spool_dir: &job_spool_dir,
            // SGE 8.1.9: the script's copy in the spool, or the command of `-b y`.
            job_script: match &spec.command {
                JobCommand::Script { .. } => &script_path,
                JobCommand::Binary { command, .. } => command,
            },
            pe_hostfile: &pe_hostfile_path,
            tmpdir: &tmpdir.to_string_lossy(),
            binary_path: &binary_path(),
            shell: &shell,
        };
        let mut env = job_environment(&spec, &ctx);
        // queue_conf(5)'s starter_method starts the job instead of its shell, with the job's
        // command and arguments, and is told the shell it replaces.
        let (program, argv0, args, search_path) = match &spec.starter_method {
            None => (program, argv0, args, search_path),
            Some(starter) => {
                env.push(("SGE_STARTER_SHELL_PATH".into(), shell.clone()));
                env.push((
                    "SGE_STARTER_SHELL_START_MODE".into(),
                    spec.shell_start_mode.clone(),
                ));
                env.push((
                    "SGE_STARTER_USE_LOGIN_SHELL".into(),
                    shell_argv0.starts_with('-').to_string(),
                ));
                let mut job_args = Vec::new();
                match &spec.command {
                    JobCommand::Script { args, .. } => {
                        job_args.push(script_path.clone());
                        job_args.extend(args.iter().cloned());
                    }
                    JobCommand::Binary { command, args, .. } => {
                        job_args.push(command.clone());
                        job_args.extend(args.iter().cloned());
                    }
                }
                (starter.clone(), starter.clone(), job_args, false)
            }
        };
        // A qrsh job: the shepherd's `relay` connects to the client, then becomes the command.
        let (program, argv0, args, search_path) = match &spec.interactive {
            None => (program, argv0, args, search_path),
            Some(session) => {
                let me = std::env::current_exe()
                    .map(|p| p.to_string_lossy().into_owned())
                    .map_err(|e| before(format!("can't find the shepherd: {e}")))?;
                let mut relay = vec![
                    "relay".to_string(),
                    session.host.clone(),
                    session.port.to_string(),
                    session.cookie.clone(),
                ];
                if let Some((rows, cols)) = session.pty {
                    relay.extend(["--pty".to_string(), format!("{rows}x{cols}")]);
                }
                // The relay `exec`s the program as a shell would, by PATH when it names no
                // directory: what both `search_path` and a bare queue shell mean.
                relay.extend(["--".to_string(), program, argv0]);
                relay.extend(args);
                (me, crate::launch::SHEPHERD_BINARY.to_string(), relay, false)
            }
        };
        let start = JobStart::prepare(
            &user,
            workdir.clone(),
            paths.clone(),
            &spec.limits.rlimits,
            spec.nice,
            JobProgram {
                program,
                argv0,
                args,
                stdin_override,
                search: search_path,
            },
            &env,
        )?;
        Ok(Prepared {
            start,
            user,
            workdir,
            paths,
            env,
        })
    }

    /// Forks the job's process ([`spawn`]); returns its pid once it has `exec`ed the job,
    /// or the failure it reported.
    pub(super) fn spawn_job(&self, start: &JobStart) -> Result<Pid, SetupFailure> {
        let before = |error: String| SetupFailure {
            failed: failed::BEFORE_JOB,
            error,
        };
        // Born in the task's cgroup: by `clone3` into a cgroup v2 group; else (a v1 group on
        // a hybrid host, or a kernel before 5.7) with the supervisor in the group while it
        // forks, and only then.
        let born_there = self.cgroup.as_ref().and_then(|g| g.v2_only());
        let spawned = match born_there
            .as_ref()
            .map(|dir| spawn::spawn_into(&start.exec, Some(std::os::fd::AsFd::as_fd(dir))))
        {
            Some(Err(
                nix::errno::Errno::ENOSYS | nix::errno::Errno::EINVAL | nix::errno::Errno::E2BIG,
            ))
            | None => {
                if let Some(group) = &self.cgroup
                    && let Err(e) = group.enter()
                {
                    group.leave();
                    return Err(before(format!("can't enter the task's cgroup: {e}")));
                }
                let spawned = spawn::spawn(&start.exec);
                if let Some(group) = &self.cgroup {
                    group.leave();
                }
                spawned
            }
            Some(spawned) => spawned,
        };
        match spawned {
            Err(e) => Err(before(format!(
                "can't start the job: {}",
                std::io::Error::from(e)
            ))),
            Ok(Ok(pid)) => Ok(pid),
            Ok(Err((pid, failure))) => {
                // The child failed before `exec`: reap it and pass its reason on.
                let _ = waitpid(pid, None);
                Err(start.failure(failure))
            }
        }
    }
}

/// `SGE_BINARY_PATH`: where the gridspool binaries are on this host.
fn binary_path() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .map_or_else(String::new, |p| p.to_string_lossy().into_owned())
}

// ---------------------------------------------------------------------------------------
// the job's first process

/// What runs: the program, its `argv[0]` and arguments, and how it is found.
struct JobProgram {
    program: String,
    argv0: String,
    args: Vec<String>,
    /// `script_from_stdin`: the script is the job's stdin.
    stdin_override: Option<String>,
    /// `-b y -shell n`: the program is searched in `PATH`, and missing is failure 27.
    search: bool,
}

/// A prolog or an epilog.
#[derive(Debug, Clone, Copy)]
pub(super) enum Procedure {
    Prolog,
    Epilog,
}

/// What the job runs with, prepared once for it and for its prolog and epilog.
pub(super) struct Prepared {
    pub(super) start: JobStart,
    user: User,
    workdir: String,
    paths: OutputPaths,
    env: Vec<(String, String)>,
}

/// The job's start, prepared in the supervisor before the fork ([`spawn`]), with what its
/// failure messages name.
pub(super) struct JobStart {
    exec: spawn::JobExec,
    user: String,
    uid: nix::unistd::Uid,
    gid: nix::unistd::Gid,
    rlimits: Vec<RLimit>,
    workdir: String,
    paths: OutputPaths,
    stdin: String,
    program: String,
    candidates: Vec<String>,
}

impl JobStart {
    /// Resolves everything the child needs (the owner's groups, C strings, the `PATH`
    /// candidates) so that the child only makes system calls. Fails with `failed` 1.
    fn prepare(
        user: &User,
        workdir: String,
        paths: OutputPaths,
        rlimits: &[crate::launch::limits::RLimitValue],
        nice: i32,
        job: JobProgram,
        env: &[(String, String)],
    ) -> Result<JobStart, SetupFailure> {
        let before = |e: String| fail(failed::BEFORE_JOB, e);
        let c = |s: &str| spawn::c_string(s).map_err(before);
        let name = user.name.clone();
        let (uid, gid) = (user.uid, user.gid);
        let identity = if nix::unistd::geteuid().is_root() {
            let Ok(cname) = CString::new(name.clone()) else {
                return Err(before(format!("bad user name {name:?}")));
            };
            let groups = nix::unistd::getgrouplist(&cname, gid)
                .map_err(|e| before(format!("initgroups({name}) failed: {e}")))?;
            spawn::Identity::Switch { uid, gid, groups }
        } else if nix::unistd::geteuid() != uid {
            return Err(before(format!(
                "the shepherd is not root and cannot run a job of user \"{name}\""
            )));
        } else {
            spawn::Identity::Keep
        };
        let limits = rlimits
            .iter()
            .map(|l| {
                let inf = nix::sys::resource::RLIM_INFINITY;
                let (soft, hard) = (l.soft.unwrap_or(inf), l.hard.unwrap_or(inf));
                (rlimit_resource(l.resource), soft, hard)
            })
            .collect();
        let stdin = job
            .stdin_override
            .clone()
            .unwrap_or_else(|| paths.stdin.clone());
        // The job's PATH, as the former helper (which ran with the job's environment) saw it.
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or("", |(_, v)| v.as_str());
        let in_path = |command: &str| -> Vec<String> {
            path_var
                .split(':')
                .map(|d| Path::new(if d.is_empty() { "." } else { d }).join(command))
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        let candidates = if job.search && !job.program.contains('/') {
            in_path(&job.program)
        } else {
            vec![job.program.clone()]
        };
        let exec_path = if !job.search && !job.program.contains('/') {
            in_path(&job.program)
        } else {
            Vec::new()
        };
        let strings = |v: &[String]| v.iter().map(|s| c(s)).collect::<Result<Vec<_>, _>>();
        let mut argv = vec![job.argv0.clone()];
        argv.extend(job.args.iter().cloned());
        let envp: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let exec = spawn::JobExec::new(
            identity,
            nice,
            limits,
            c(&workdir)?,
            c(&paths.stdout)?,
            if paths.merged {
                None
            } else {
                Some(c(&paths.stderr)?)
            },
            c(&stdin)?,
            strings(&candidates)?,
            job.search,
            strings(&exec_path)?,
            strings(&argv)?,
            strings(&envp)?,
        );
        Ok(JobStart {
            exec,
            user: name,
            uid,
            gid,
            rlimits: rlimits.iter().map(|l| l.resource).collect(),
            workdir,
            paths,
            stdin,
            program: job.program,
            candidates,
        })
    }

    /// SGE's failure code and message for a failed step of the child.
    fn failure(&self, f: spawn::ChildFailure) -> SetupFailure {
        use spawn::Step;
        let e = f.errno;
        let text = errno_text(&std::io::Error::from_raw_os_error(e as i32));
        let candidate = |i: usize| {
            self.candidates
                .get(i)
                .map_or(self.program.as_str(), String::as_str)
        };
        match f.step {
            Step::Sigmask => fail(failed::BEFORE_JOB, format!("sigprocmask: {e}")),
            Step::Groups => fail(
                failed::BEFORE_JOB,
                format!("initgroups({}) failed: {e}", self.user),
            ),
            Step::Setgid => fail(
                failed::BEFORE_JOB,
                format!("setgid({}) failed: {e}", self.gid),
            ),
            Step::Setuid => fail(
                failed::BEFORE_JOB,
                format!("setuid({}) failed: {e}", self.uid),
            ),
            Step::Rlimit(i) => fail(
                failed::BEFORE_JOB,
                match self.rlimits.get(i) {
                    Some(r) => format!("setrlimit {r:?} failed: {e}"),
                    None => format!("setrlimit failed: {e}"),
                },
            ),
            Step::Chdir => fail(
                failed::NO_CWD,
                format!("can't chdir to {}: {text}", self.workdir),
            ),
            Step::OpenStdout => fail(
                failed::OPEN_OUTPUT,
                format!("can't open output file \"{}\": {text}", self.paths.stdout),
            ),
            Step::OpenStderr => fail(
                failed::OPEN_OUTPUT,
                format!("can't open output file \"{}\": {text}", self.paths.stderr),
            ),
            Step::Dup => fail(failed::BEFORE_JOB, format!("dup: {text}")),
            Step::OpenStdin => fail(
                failed::OPEN_OUTPUT,
                format!("can't open input file \"{}\": {text}", self.stdin),
            ),
            Step::Search => fail(
                failed::NO_SHELL,
                format!(
                    "can't execute \"{}\": No such file or directory",
                    self.program
                ),
            ),
            Step::Access(i) => fail(
                failed::NO_SHELL,
                format!("unable to find shell \"{}\": {}", candidate(i), e.desc()),
            ),
            Step::Execve(i) => fail(
                failed::NO_SHELL,
                format!("execve({}) failed: {text}", candidate(i)),
            ),
        }
    }
}

fn fail(failed: u32, error: String) -> SetupFailure {
    SetupFailure { failed, error }
}

fn errno_text(e: &std::io::Error) -> String {
    // "No such file or directory", without Rust's " (os error 2)".
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn rlimit_resource(r: RLimit) -> nix::sys::resource::Resource {
    use nix::sys::resource::Resource;
    match r {
        RLimit::As => Resource::RLIMIT_AS,
        RLimit::Cpu => Resource::RLIMIT_CPU,
        RLimit::Rss => Resource::RLIMIT_RSS,
        RLimit::Fsize => Resource::RLIMIT_FSIZE,
        RLimit::Data => Resource::RLIMIT_DATA,
        RLimit::Stack => Resource::RLIMIT_STACK,
        RLimit::Core => Resource::RLIMIT_CORE,
    }
}

// ---------------------------------------------------------------------------------------
// watch, kill, query
