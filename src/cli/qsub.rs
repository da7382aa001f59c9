//! `qsub`: submit a batch job, as SGE 8.1.9's `qsub(1)` does, into the spool.
//!
//! Options come from, in increasing precedence (`qsub(1)`, `sge_request(5)`):
//! `$SGE_ROOT/$SGE_CELL/common/sge_request`, `~/.sge_request`, `./.sge_request`, the script's
//! `#$` lines (or the `-C` prefix), then the command line (with `-@` files spliced in where
//! they appear). One table (`compat::qsub_options`) parses all of them; `compat::submit` folds
//! them into the job. There is no qmaster: the checks qmaster would make are made here, with its
//! words, and the job is published whole with `Spool::publish_job` (the script is copied into
//! the spool, so the user's file may go away the moment `qsub` returns).
//!
//! Multi-user installs run `qsub` setgid to the spool's group so that it can write the spool.
//! Everything read on the user's behalf (the script, `-@` files, `sge_request` files) is read
//! with the effective gid dropped to the caller's real gid ([`with_real_gid`]): otherwise a user
//! could submit, and so read, a file only the spool group may read.

use super::{ClientEnv, Output, take_spool_arg};
use crate::compat::options::{OperandMode, Origin, ParsedArgs, ParsedOption, parse};
use crate::compat::pattern;
use crate::compat::qsub_options::{QSUB_OPTIONS, qsub_help};
use crate::compat::submit::{
    FoldContext, SubmitError, SubmitterRights, Touched, Verify, check_option, expand_option_files,
    fold, option_file_text, option_file_words, script_directives, validate_job,
    verify_against_config,
};
use crate::compat::sync;
use crate::model::{
    EnvVar, FinishedTask, Holds, JOB_SCHEMA_VERSION, JobId, JobRecord, JobSpec, JobSubmission,
    RequestAction, Submitter, TaskId, TaskSelector,
};
use crate::spool::{Spool, SpoolError};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

const PROG: &str = "qsub";

/// Entry point of the `qsub` binary.
pub fn main(mut args: Vec<String>) -> ExitCode {
    let spool = take_spool_arg(&mut args);
    match run(args, spool) {
        Ok(out) => out.finish(),
        Err(e) => fail(&e).finish(),
    }
}

pub(crate) fn fail(e: &SubmitError) -> Output {
    Output {
        stdout: String::new(),
        stderr: e.render(PROG),
        code: e.code(),
    }
}

/// Runs `f` with the effective group id set to the real one, then restores the saved
/// effective gid. A no-op when `qsub` is not setgid. Used for every read of a user's file.
pub fn with_real_gid<T>(f: impl FnOnce() -> T) -> Result<T, SubmitError> {
    use nix::unistd::{getegid, getgid, setegid};
    let saved = getegid();
    let real = getgid();
    if saved == real {
        return Ok(f());
    }
    setegid(real).map_err(|e| {
        SubmitError::Rejected(format!(
            "cannot drop the spool group to read your files: {e}"
        ))
    })?;
    let out = f();
    setegid(saved).map_err(|e| {
        SubmitError::Rejected(format!("cannot restore the spool group after reading: {e}"))
    })?;
    Ok(out)
}

/// `strerror` text of an I/O error (SGE prints `No such file or directory`, without Rust's
/// `(os error 2)`).
pub(crate) fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => nix::errno::Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

/// A file the user names (the script, a `-@` file), read as SGE reads it: as many bytes as
/// `stat` says it has when it is opened. A device or a socket has none, so `/dev/zero` is an
/// empty script rather than an endless one, and the open does not block, so a FIFO with no
/// writer is read as empty too where SGE would wait for one for ever
/// (`tests/compat/DIVERGENCES.md`).
pub(crate) fn read_user_file(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    use nix::fcntl::OFlag;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::from_raw_os_error(
            nix::errno::Errno::EISDIR as i32,
        ));
    }
    if !meta.is_file() {
        return Ok(Vec::new());
    }
    let mut bytes = Vec::new();
    file.take(meta.len()).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn parse_source(
    words: &[String],
    origin: Origin,
    stray_words_allowed: bool,
) -> Result<ParsedArgs, SubmitError> {
    let mode = if stray_words_allowed {
        OperandMode::StopAtFirst
    } else {
        OperandMode::Interleaved
    };
    let parsed =
        parse(QSUB_OPTIONS, words, mode, &origin).map_err(|e| SubmitError::Usage(e.to_string()))?;
    if !stray_words_allowed && !parsed.operands.is_empty() {
        return Err(SubmitError::StrayWords(parsed.operands.len()));
    }
    for opt in &parsed.options {
        check_option(opt, PROG)?;
    }
    Ok(parsed)
}

/// Reads one of the user's `sge_request` files if it exists, as the script is read
/// ([`read_user_file`]); missing or unreadable files are skipped, as SGE skips them.
fn defaults_file(path: &Path) -> Result<Vec<ParsedOption>, SubmitError> {
    let text = with_real_gid(|| read_user_file(path))?;
    defaults_from(path, text)
}

/// The cluster's `common/sge_request`, read as every spool file is (`file::open`): a FIFO
/// or link there is skipped like an unreadable file, never waited on.
fn cluster_defaults_file(path: &Path) -> Result<Vec<ParsedOption>, SubmitError> {
    defaults_from(
        path,
        crate::file::open::read(path).map_err(std::io::Error::from),
    )
}

fn defaults_from(
    path: &Path,
    text: std::io::Result<Vec<u8>>,
) -> Result<Vec<ParsedOption>, SubmitError> {
    let Ok(bytes) = text else {
        return Ok(Vec::new());
    };
    let name = path.display().to_string();
    let words = option_file_words(&option_file_text(&name, bytes)?);
    let origin = Origin::DefaultsFile(name);
    Ok(parse_source(&words, origin, false)?.options)
}

/// The script and what it says about itself.
struct Script {
    /// `script_file` of `qstat -j`: the path as given, the command of `-b y`, or `STDIN`.
    file: String,
    bytes: Vec<u8>,
    args: Vec<String>,
}

fn read_script(operands: &[String], binary: bool) -> Result<Script, SubmitError> {
    let args = operands.iter().skip(1).cloned().collect();
    match operands.first().map(String::as_str) {
        Some(cmd) if binary => Ok(Script {
            file: cmd.to_string(),
            bytes: Vec::new(),
            args,
        }),
        None if binary => Err(SubmitError::Usage(
            "command required for a binary job".into(),
        )),
        None | Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| SubmitError::Script {
                    msg: format!("error reading from stdin: {}", strerror(&e)),
                    code: 4,
                })?;
            if bytes.is_empty() {
                return Err(SubmitError::Script {
                    msg: "no input read from stdin".into(),
                    code: 4,
                });
            }
            Ok(Script {
                file: "STDIN".into(),
                bytes,
                args,
            })
        }
        Some(path) => {
            let bytes =
                with_real_gid(|| read_user_file(path))?.map_err(|e| SubmitError::Script {
                    msg: format!("error opening {path}: {}", strerror(&e)),
                    code: 14,
                })?;
            if bytes.is_empty() {
                return Err(SubmitError::Rejected(
                    "job rejected: no script in your request".into(),
                ));
            }
            Ok(Script {
                file: path.to_string(),
                bytes,
                args,
            })
        }
    }
}

/// The submit environment, in `environ` order, and the names of the variables left out of it
/// because their name or value is not UTF-8 (see `FoldContext::environ_not_utf8`).
pub(crate) fn environ() -> (Vec<(String, String)>, Vec<String>) {
    let mut text = Vec::new();
    let mut not_utf8 = Vec::new();
    for (k, v) in std::env::vars_os() {
        match (k.into_string(), v.into_string()) {
            (Ok(k), Ok(v)) => text.push((k, v)),
            (Ok(k), Err(_)) => not_utf8.push(k),
            (Err(k), _) => not_utf8.push(k.to_string_lossy().into_owned()),
        }
    }
    (text, not_utf8)
}

fn getenv<'a>(environ: &'a [(String, String)], name: &str) -> Option<&'a str> {
    environ
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The `SGE_O_*` values and the owner, as SGE computes them: from the kernel (uid, gid) and
/// the submit environment, falling back to the user database.
fn submitter(env: &ClientEnv, environ: &[(String, String)], cwd: &str) -> Submitter {
    let mut submitter = Submitter::new(&env.caller, &env.host, cwd);
    for (field, name) in [
        (&mut submitter.sge_o_home, "HOME"),
        (&mut submitter.sge_o_log_name, "LOGNAME"),
        (&mut submitter.sge_o_path, "PATH"),
        (&mut submitter.sge_o_shell, "SHELL"),
    ] {
        if let Some(value) = getenv(environ, name) {
            *field = value.to_string();
        }
    }
    submitter.sge_o_mail = getenv(environ, "MAIL").map(String::from);
    submitter.sge_o_tz = getenv(environ, "TZ").map(String::from);
    submitter
}

/// Resolves `-hold_jid`/`-hold_jid_ad` words to existing jobs: ids that exist, and the jobs
/// of the same owner whose names match a name or pattern. A word naming nothing stays in the
/// request (`qstat -j` shows it) without becoming a predecessor, as in SGE.
fn resolve_predecessors(
    spool: &Spool,
    words: &[String],
    owner_uid: u32,
    scan: &mut Option<crate::spool::JobScan>,
) -> Result<Vec<JobRecord>, SubmitError> {
    let mut out: Vec<JobRecord> = Vec::new();
    let mut push = |job: JobRecord| {
        if !out.iter().any(|j| j.id == job.id) {
            out.push(job);
        }
    };
    for w in words {
        if let Ok(id) = w.parse::<JobId>() {
            let job = match scan {
                Some(s) => s.get(id).cloned(),
                None => spool.read_job(id).map_err(spool_error)?,
            };
            // A job whose tasks have all ended has left the system, though `sched_d`
            // keeps its files a while: it is no predecessor (SGE: only the request stays).
            if let Some(job) = job.filter(|j| !j.tasks.is_done()) {
                push(job);
            }
            continue;
        }
        // `42.1-3:1` (what `qsub -terse` prints for an array job) names tasks, which
        // dependencies cannot: SGE refuses it.
        let (digits, rest) = w.split_at(w.find(|c: char| !c.is_ascii_digit()).unwrap_or(w.len()));
        if !digits.is_empty() && rest.starts_with('.') {
            return Err(SubmitError::Rejected(format!(
                "denied: job \"{w}\" not found"
            )));
        }
        if scan.is_none() {
            *scan = Some(spool.scan_jobs().map_err(spool_error)?);
        }
        if let Some(s) = scan {
            for job in &s.jobs {
                if job.submitter.uid == owner_uid && pattern::matches(w, &job.spec.name) {
                    push(job.clone());
                }
            }
        }
    }
    Ok(out)
}

fn spool_error(e: SpoolError) -> SubmitError {
    SubmitError::Rejected(format!("error: {e}"))
}

fn run(args: Vec<String>, spool_dir: Option<PathBuf>) -> Result<Output, SubmitError> {
    match submit(args, spool_dir, None)? {
        Submitted::Done(o) => Ok(o),
        // Only a qrsh submission is interactive.
        Submitted::Interactive { .. } => Ok(Output::default()),
    }
}

/// What a submission left to do: nothing (`qsub`'s output), or, for `qrsh`, serving the
/// interactive job `id` of `env`'s cell.
pub(crate) enum Submitted {
    Done(Output),
    Interactive {
        env: Box<ClientEnv>,
        id: JobId,
        now: bool,
        /// Told when qrsh is interrupted (SIGINT, SIGTERM, SIGHUP).
        interrupts: Option<Receiver<()>>,
    },
}

/// `qsub args`, or with `interactive` the job of a `qrsh` (named `QRSH` unless `-N` says
/// otherwise), which is published and handed back to `qrsh` to serve.
pub(crate) fn submit(
    args: Vec<String>,
    spool_dir: Option<PathBuf>,
    interactive: Option<crate::model::InteractiveSession>,
) -> Result<Submitted, SubmitError> {
    // 1. The command line, with `-@` files spliced in where they appear.
    let mut read_option_file = |file: &str| -> Result<String, SubmitError> {
        let bytes = with_real_gid(|| read_user_file(file))?.map_err(|e| {
            SubmitError::Usage(format!(
                "can't open option file \"{file}\": {}",
                strerror(&e)
            ))
        })?;
        option_file_text(file, bytes)
    };
    let words = expand_option_files(&args, QSUB_OPTIONS, &mut read_option_file, 0)?;
    let cmdline = parse(
        QSUB_OPTIONS,
        &words,
        OperandMode::StopAtFirst,
        &Origin::CommandLine,
    )
    .map_err(|e| SubmitError::Usage(e.to_string()))?;
    if cmdline.options.iter().any(|o| o.spec.name == "-help") {
        return Ok(Submitted::Done(Output {
            stdout: qsub_help(),
            ..Output::default()
        }));
    }
    for opt in &cmdline.options {
        check_option(opt, PROG)?;
    }

    // 2. The cell, its configuration, the caller.
    let env = match super::load_env(spool_dir) {
        Ok(env) => env,
        Err(out) => return Ok(Submitted::Done(out)),
    };
    let (environ, environ_not_utf8) = environ();
    // The directory as text (SGE_O_WORKDIR, -cwd), and whether it was; `.sge_request` is read
    // from the directory itself.
    let (cwd, cwd_is_text) = match std::env::current_dir() {
        Ok(p) => match p.into_os_string().into_string() {
            Ok(text) => (text, true),
            Err(os) => (os.to_string_lossy().into_owned(), false),
        },
        Err(_) => (
            getenv(&environ, "PWD").map_or_else(|| "/".to_string(), String::from),
            true,
        ),
    };

    // 3. Defaults files: cluster, home, working directory.
    let mut options: Vec<ParsedOption> = Vec::new();
    let home_file = Path::new(&env.caller.home).join(".sge_request");
    let cwd_file = std::env::current_dir()
        .unwrap_or_else(|_| PathBuf::from(&cwd))
        .join(".sge_request");
    options.extend(cluster_defaults_file(&env.spool.cluster_sge_request())?);
    options.extend(defaults_file(&home_file)?);
    if cwd_file != home_file {
        options.extend(defaults_file(&cwd_file)?);
    }

    // 4. The script (never for -b y) and its directives. `-b` and `-C` cannot come from it.
    let before_script = options.iter().chain(&cmdline.options);
    let mut binary = false;
    let mut prefix = "#$".to_string();
    for o in before_script {
        match o.spec.name {
            "-b" => binary = o.values.first().is_some_and(|v| v.starts_with('y')),
            "-C" => prefix = o.values.first().cloned().unwrap_or_default(),
            "-clear" => {
                binary = false;
                prefix = "#$".to_string();
            }
            _ => {}
        }
    }
    let script = read_script(&cmdline.operands, binary)?;
    if script.bytes.contains(&0) {
        // SGE reads the script as a C string and refuses one with a NUL byte.
        return Err(SubmitError::Rejected(
            "Script length does not match declared length".into(),
        ));
    }
    if !binary {
        for (line, words) in script_directives(&script.bytes, &prefix)? {
            let parsed = parse_source(&words, Origin::Script(line), false)?;
            options.extend(
                parsed
                    .options
                    .into_iter()
                    .filter(|o| !matches!(o.spec.name, "-C" | "-b")),
            );
        }
    }
    options.extend(cmdline.options.iter().cloned());

    // 5. The job.
    let ctx = FoldContext {
        config: &env.config,
        environ: &environ,
        environ_not_utf8: &environ_not_utf8,
        cwd: &cwd,
    };
    let folded = fold(&options, ctx)?;
    if !cwd_is_text
        && folded.touched.contains(&Touched::Cwd)
        && folded.spec.cwd.as_deref() == Some(&cwd)
    {
        return Err(SubmitError::NotUtf8(format!(
            "the current directory {cwd:?}, which -cwd makes the job's,"
        )));
    }
    if !folded.warnings.is_empty() {
        let mut err = std::io::stderr().lock();
        for w in &folded.warnings {
            let _ = writeln!(err, "{PROG}: {w}");
        }
    }
    let mut spec = folded.spec;
    let named = folded.touched.contains(&Touched::Name);
    finish_spec(&mut spec, &script, binary, named, &env);
    if let Some(session) = interactive {
        spec.interactive = Some(session);
        if !named {
            spec.name = "QRSH".to_string();
        }
    }
    let requester = env.requester();
    let rights = SubmitterRights {
        uid: env.caller.uid,
        gid: env.caller.gid,
        user: env.caller.user.clone(),
        group: env.caller.group.clone(),
        operator: requester.is_operator(),
        manager: requester.manager,
        host: env.host.clone(),
    };
    // As qmaster (`sge_job_verify.c`): a job without `-P` is in its owner's default project
    // (`user(5)`), checked as a requested one; the share tree and `qstat` see that project.
    if spec.project.is_none() {
        spec.project = env
            .config
            .users
            .iter()
            .find(|u| u.name == env.caller.user)
            .and_then(|u| u.default_project.clone());
    }
    validate_job(&spec, &env.config, &rights)?;
    if let Some(ar) = spec.ar {
        // As qmaster: the reservation must exist (granted, not over); SGE checks the
        // job's queues against it (`-w e`, shown as `verify_suitable_queues 2`).
        match env.spool.read_ar_state(ar) {
            Ok(Some(r)) if r.holds() => {
                // What can never fit in it is refused as qmaster refuses it (`-w e`): more
                // slots than it holds, or a parallel environment it does not hold.
                let held: u32 = r.granted.iter().map(|g| g.slots).sum();
                let fits = match (&spec.pe, &r.granted_pe) {
                    (None, _) => held >= 1,
                    (Some(p), Some(granted)) => {
                        crate::compat::pattern::matches(&p.name, granted)
                            && p.range.min.max(1) <= held
                    }
                    (Some(_), None) => false,
                };
                if !fits {
                    return Err(SubmitError::Rejected("error: no suitable queues".into()));
                }
                spec.ar_submission_time = r.submission.submission_time;
                if spec.verify_suitable_queues == 0 {
                    spec.verify_suitable_queues = 2;
                }
            }
            _ => {
                return Err(SubmitError::Rejected(format!(
                    "the advance reservation id {ar} is invalid"
                )));
            }
        }
    }

    let mut scan = None;
    if !spec.hold_jid.is_empty() {
        spec.predecessors =
            resolve_predecessors(&env.spool, &spec.hold_jid, env.caller.uid, &mut scan)?
                .iter()
                .map(|j| j.id)
                .collect();
    }
    if !spec.hold_jid_ad.is_empty() {
        let preds = resolve_predecessors(&env.spool, &spec.hold_jid_ad, env.caller.uid, &mut scan)?;
        if preds
            .iter()
            .any(|p| p.spec.task_range() != spec.task_range())
        {
            return Err(SubmitError::Rejected(
                "This array job must have the same range of sub-tasks as the dependent array job specified with -hold_jid_ad".into(),
            ));
        }
        spec.array_predecessors = preds.iter().map(|j| j.id).collect();
    }

    // 6. Verification (-w), then publication.
    match folded.verify {
        Verify::Error => {
            if !verify_against_config(&spec, &env.config, 0).suitable {
                return Err(SubmitError::Rejected("error: no suitable queues".into()));
            }
        }
        Verify::Verify | Verify::Poke => {
            // SGE spends a job id on a verification run.
            let id = env.spool.allocate_job_id().map_err(spool_error)?;
            let v = verify_against_config(&spec, &env.config, id.0);
            if v.suitable {
                return Ok(Submitted::Done(Output {
                    stdout: "verification: found suitable queue(s)\n".into(),
                    ..Output::default()
                }));
            }
            let mut lines = v.reasons;
            lines.push("verification: no suitable queues".into());
            return Err(SubmitError::Rejected(lines.join("\n")));
        }
        Verify::None | Verify::Warning => {}
    }
    // With -sync y, Ctrl-C must delete the job from the moment it exists (qsub(1)).
    let interrupts = if folded.sync || spec.now || spec.interactive.is_some() {
        interrupt_channel()
    } else {
        None
    };
    // The id is shown only once the job file carrying it is durable (`publish_job`).
    let id = env
        .spool
        .allocate_job_id_for_publication()
        .map_err(spool_error)?;
    let holds = Holds {
        user: folded.user_hold,
        ..Holds::NONE
    };
    let sub = JobSubmission {
        v: JOB_SCHEMA_VERSION,
        id,
        submitter: submitter(&env, &environ, &cwd),
        spec,
        holds,
    };
    env.spool
        .publish_job(&sub, &script.bytes)
        .map_err(spool_error)?;

    if sub.spec.interactive.is_some() {
        return Ok(Submitted::Interactive {
            env: Box::new(env),
            id,
            now: sub.spec.now,
            interrupts,
        });
    }
    let line = submitted_line(&sub, folded.terse);
    let immediate = sub.spec.now;
    if !folded.sync
        && !immediate
        && let Some(warning) = crate::compat::submit::no_queue_admits(&env.config, &rights)
    {
        // Submitted all the same: SGE's answer is an error holding the warning.
        let mut o = Output {
            code: 1,
            ..Output::default()
        };
        o.err(format!("Unable to run job: {warning}"));
        o.err(line);
        o.err("Exiting.");
        return Ok(Submitted::Done(o));
    }
    if !folded.sync && !immediate {
        return Ok(Submitted::Done(Output {
            stdout: format!("{line}\n"),
            ..Output::default()
        }));
    }
    // -sync y / -now y: the submission line goes out now, then qsub waits.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    drop(out);
    if immediate {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "Waiting for immediate job to be scheduled.");
        drop(err);
        match wait_for_dispatch(&env, interrupts.as_ref(), id) {
            Dispatch::Scheduled => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(
                    err,
                    "\nYour immediate job {id} has been successfully scheduled."
                );
            }
            Dispatch::Refused => {
                let mut o = Output {
                    code: 1,
                    ..Output::default()
                };
                o.err("\nYour qsub request could not be scheduled; try again later.");
                return Ok(Submitted::Done(o));
            }
            Dispatch::Interrupted => return Ok(Submitted::Done(interrupted_output(&env, id))),
        }
        if !folded.sync {
            return Ok(Submitted::Done(Output::default()));
        }
    }
    Ok(Submitted::Done(wait_for_job(
        &env,
        interrupts,
        id,
        sub.spec.array.is_some(),
        &sub.spec.task_range().iter().collect::<Vec<_>>(),
        folded.terse,
    )))
}

/// How an immediate (`-now y`) job fared.
pub(crate) enum Dispatch {
    Scheduled,
    Refused,
    Interrupted,
}

/// `-now y`: waits until `sched_d` has started the job (a running or finished task, or an exit
/// line) or has removed it because it could not start it at once.
pub(crate) fn wait_for_dispatch(
    env: &ClientEnv,
    interrupts: Option<&Receiver<()>>,
    id: JobId,
) -> Dispatch {
    let mut delay = Duration::from_millis(10);
    loop {
        match env.spool.read_job(id) {
            Ok(Some(job)) if !job.tasks.running.is_empty() || job.tasks.finished > 0 => {
                return Dispatch::Scheduled;
            }
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => {
                return if ExitLog::new(env.spool.exits_file(id)).read_new().is_empty() {
                    Dispatch::Refused
                } else {
                    Dispatch::Scheduled
                };
            }
        }
        if let Some(rx) = interrupts {
            if rx.recv_timeout(delay).is_ok() {
                return Dispatch::Interrupted;
            }
        } else {
            std::thread::sleep(delay);
        }
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

/// Fills in what SGE derives: the script's name and arguments, the default job name, `TERM`
/// (SGE always exports `TERM=NONE` unless `-v`/`-V` give one), and the default mail address.
/// `named`: some `-N` was given (`-N ''` is then refused, not replaced by the default).
fn finish_spec(spec: &mut JobSpec, script: &Script, binary: bool, named: bool, env: &ClientEnv) {
    spec.script_file = script.file.clone();
    spec.args = script.args.clone();
    spec.binary = binary;
    if !named {
        spec.name = script
            .file
            .rsplit('/')
            .next()
            .unwrap_or(&script.file)
            .to_string();
    }
    if !spec.env.iter().any(|v| v.name == "TERM") {
        spec.env.insert(
            0,
            EnvVar {
                name: "TERM".into(),
                value: None,
            },
        );
    }
    if spec.mail_list.is_empty() {
        spec.mail_list
            .push(format!("{}@{}", env.caller.user, env.host));
    }
}

/// `Your job 42 ("name") has been submitted`, the array form, or the `-terse` id.
fn submitted_line(sub: &JobSubmission, terse: bool) -> String {
    let name = crate::compat::messages::sfq(&sub.spec.name);
    match (sub.spec.array, terse) {
        (None, true) => sub.id.to_string(),
        (Some(r), true) => format!("{}.{r}", sub.id),
        (None, false) => format!("Your job {} (\"{name}\") has been submitted", sub.id),
        (Some(r), false) => format!(
            "Your job-array {}.{r} (\"{name}\") has been submitted",
            sub.id
        ),
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP and hands them to a thread waiting in `sigwait`, which
/// reports them on the returned channel: `-sync y` can then delete its job on Ctrl-C, without
/// an async signal handler (and without `unsafe`).
fn interrupt_channel() -> Option<Receiver<()>> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set.add(Signal::SIGHUP);
    set.thread_block().ok()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if set.wait().is_ok() {
            let _ = tx.send(());
        }
    });
    Some(rx)
}

/// SGE's words when `qsub -sync y` is interrupted; the job is deleted, exit 1.
fn interrupted_output(env: &ClientEnv, id: JobId) -> Output {
    let mut o = Output {
        code: 1,
        ..Output::default()
    };
    o.err("\nInterrupted!\nPlease wait while qsub shuts down.");
    let delete = RequestAction::Delete {
        job: id,
        tasks: TaskSelector::All,
        force: false,
    };
    if let Err(e) = env.spool.publish_request(env.requester(), vec![delete]) {
        o.err(format!("error: cannot delete job {id}: {e}"));
    }
    o
}

/// Reads a job's exit log as `sched_d` appends to it (one JSON line per finished task, in the
/// order the tasks ended, fsynced): each call returns the tasks of the complete lines added
/// since the last one, a task's first line only. A line still being written has no newline
/// yet and is left for the next call. Reading from where it stopped keeps a wait on a large
/// array linear in its size.
pub(crate) struct ExitLog {
    path: PathBuf,
    offset: u64,
    seen: BTreeSet<TaskId>,
}

impl ExitLog {
    pub(crate) fn new(path: PathBuf) -> Self {
        ExitLog {
            path,
            offset: 0,
            seen: BTreeSet::new(),
        }
    }

    pub(crate) fn read_new(&mut self) -> Vec<FinishedTask> {
        use std::io::{Seek, SeekFrom};
        let mut bytes = Vec::new();
        // The spool's open: a FIFO or link planted as the exits file never blocks or is followed.
        let read = crate::file::open::open(&self.path)
            .map_err(std::io::Error::from)
            .and_then(|mut f| {
                f.seek(SeekFrom::Start(self.offset))?;
                f.read_to_end(&mut bytes)
            });
        if read.is_err() {
            return Vec::new();
        }
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return Vec::new();
        };
        self.offset += end as u64 + 1;
        let mut out = Vec::new();
        for line in bytes[..end]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
        {
            if let Ok(t) = serde_json::from_slice::<FinishedTask>(line)
                && self.seen.insert(t.task)
            {
                out.push(t);
            }
        }
        out
    }
}

/// Writes one line to stdout or stderr at once (a closed pipe is not an error).
fn print_now(to_stdout: bool, line: &str) {
    if to_stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// `-sync y`: waits until every task has an exit line, polling with a backing-off interval
/// (10 ms doubling to 500 ms; an inotify watch would not see writes from other NFS clients).
/// Prints SGE's line for each task as it is seen ended, in the order the tasks ended, as
/// SGE's `japi_wait` for any task returns them ([`sync::task_report`]); the exit code is that
/// of the first task that reported a non-zero one. A job deleted before its tasks ended (its
/// files vanish) gets SGE's `Unable to run job 28` for each missing task and, as SGE 8.1.9
/// does, exit 0.
fn wait_for_job(
    env: &ClientEnv,
    interrupts: Option<Receiver<()>>,
    id: JobId,
    array: bool,
    tasks: &[TaskId],
    terse: bool,
) -> Output {
    let spool = &env.spool;
    let mut log = ExitLog::new(spool.exits_file(id));
    let wanted: BTreeSet<TaskId> = tasks.iter().copied().collect();
    let mut remaining = wanted.len();
    let mut delay = Duration::from_millis(10);
    let mut code = 0;
    let name = |t: TaskId| {
        if array {
            format!("{id}.{t}")
        } else {
            id.to_string()
        }
    };
    let mut report = |ended: Vec<FinishedTask>, remaining: &mut usize| {
        for f in ended.iter().filter(|f| wanted.contains(&f.task)) {
            *remaining -= 1;
            let r = sync::task_report(&name(f.task), f, terse);
            if let Some(line) = r.line {
                print_now(r.to_stdout, &line);
            }
            if code == 0 {
                code = r.code;
            }
        }
    };
    loop {
        report(log.read_new(), &mut remaining);
        if remaining == 0 {
            break;
        }
        let alive = spool.job_file(id).exists() || spool.state_file(id).exists();
        if !alive {
            // Gone: read the log once more, as it is removed last.
            report(log.read_new(), &mut remaining);
            for t in tasks.iter().filter(|t| !log.seen.contains(t)) {
                print_now(false, &format!("Unable to run job {}", name(*t)));
            }
            break;
        }
        let interrupted = match &interrupts {
            Some(rx) => match rx.recv_timeout(delay) {
                Ok(()) => true,
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(delay);
                    false
                }
            },
            None => {
                std::thread::sleep(delay);
                false
            }
        };
        if interrupted {
            return interrupted_output(env, id);
        }
        delay = (delay * 2).min(Duration::from_millis(500));
    }
    Output {
        code: (code & 0xff) as u8,
        ..Output::default()
    }
}
