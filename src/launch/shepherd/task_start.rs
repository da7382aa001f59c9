//! Starting a task's supervisor by an `exec` (`run`, and a local launcher's in-process
//! [`start_reply`]): the check that this shepherd may run the owner's job, the new task
//! directory (shared with the start server), and the wait for the supervisor to announce the
//! job's pid.

use super::procs::supervisor_alive;
use super::start_server::failed_reply;
use super::{RunReply, print_line};
use crate::launch::LaunchError;
use crate::launch::spec::{LaunchSpec, SPEC_VERSION};
use crate::launch::taskdir::{TaskDir, active_jobs};
use nix::unistd::User;
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

pub(super) fn run_mode() -> Result<(), LaunchError> {
    let mut input = Vec::new();
    std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| LaunchError::io("read", "<stdin>", e))?;
    let reply = match serde_json::from_slice::<LaunchSpec>(&input) {
        Ok(spec) => {
            let exe = std::env::current_exe()
                .map_err(|e| LaunchError::io("locate", "/proc/self/exe", e))?;
            // The supervisor outlives this process, which ends now: it is reparented, and
            // whoever inherits it reaps it.
            start_reply(&spec, &exe).0
        }
        Err(e) => RunReply::Failed {
            error: format!("bad launch spec: {e}"),
            host_fault: false,
        },
    };
    print_line(&reply).map_err(|e| LaunchError::io("write", "<stdout>", e))
}

/// What `run` does, in the calling process: creates the task directory and starts the
/// detached supervisor (`shepherd supervise`, from the binary `shepherd`). Returns the reply
/// `run` would print and the supervisor, which the caller must reap (`try_wait`) once it has
/// exited, or leave to be reparented by ending. A local launcher calls this directly instead
/// of executing `gridspool-shepherd run`: one process and one `exec` fewer per task.
pub fn start_reply(spec: &LaunchSpec, shepherd: &Path) -> (RunReply, Option<std::process::Child>) {
    match start_task(spec, shepherd) {
        Ok((pid, child)) => (RunReply::Started { pid }, child),
        Err(e) => (failed_reply(e), None),
    }
}

/// Checks that this shepherd may run the job: root runs anyone's job; anyone else only their
/// own, and the owner's uid on this host must be the one the job was submitted with.
pub(super) fn check_identity(spec: &LaunchSpec) -> Result<User, LaunchError> {
    let owner = &spec.submitter.owner;
    let user = User::from_name(owner).ok().flatten().ok_or_else(|| {
        LaunchError::Refused(format!("can't get password entry for user \"{owner}\""))
    })?;
    if user.uid.as_raw() != spec.submitter.uid {
        return Err(LaunchError::Refused(format!(
            "user \"{owner}\" has uid {} on this host, but the job was submitted with uid {}",
            user.uid, spec.submitter.uid
        )));
    }
    let me = nix::unistd::geteuid();
    if !me.is_root() && me != user.uid {
        return Err(LaunchError::Refused(format!(
            "the shepherd runs as uid {me}, not as root, and can only run that user's jobs, not jobs of user \"{owner}\""
        )));
    }
    Ok(user)
}

fn mkdir_p(path: &Path, mode: u32) -> Result<(), LaunchError> {
    std::fs::create_dir_all(path).map_err(|e| LaunchError::io("mkdir", path, e))?;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    Ok(())
}

/// Creates the task directory and the detached supervisor; returns the job's pid and the
/// supervisor process (when it is still to be reaped).
fn start_task(
    spec: &LaunchSpec,
    shepherd: &Path,
) -> Result<(u32, Option<std::process::Child>), LaunchError> {
    let dir = prepare_task_dir(spec, true, None)?;
    let outcome = supervise_task(spec, &dir, shepherd);
    if outcome.is_err() {
        // Nothing runs: leave no directory that a watcher would report as a lost task
        // after the launcher has already reported the failure.
        let _ = std::fs::remove_dir_all(&dir.path);
    }
    outcome
}

/// Checks that this shepherd may run the task and creates its new directory: what comes
/// before the supervisor, however it is started. With `write_spec`, the spec goes into it as
/// `spec.json`, for a supervisor started by an `exec` (`supervise <taskdir>`), which reads it
/// there; the start server's forked supervisors have it in memory, and nothing else reads it
/// (a watcher that reports a supervisor's death takes the host from `spec.json` when there
/// is one, else the launcher names the host it watches). With `staging`, a held start's
/// (`HELD_START`): the directory is made under that name beside where it goes, and the
/// path returned is where it goes.
pub(in crate::launch) fn prepare_task_dir(
    spec: &LaunchSpec,
    write_spec: bool,
    staging: Option<&str>,
) -> Result<TaskDir, LaunchError> {
    if spec.v > SPEC_VERSION {
        return Err(LaunchError::Protocol(format!(
            "launch spec version {} is newer than this shepherd's {SPEC_VERSION}",
            spec.v
        )));
    }
    check_identity(spec)?;
    let spool = Path::new(&spec.exec_spool);
    // Made (and its mode set) only when missing: a `chmod` per start would be an attribute
    // change of `active_jobs`, which wakes its watchers for a rescan of every task.
    let active = active_jobs(spool);
    if !active.is_dir() {
        mkdir_p(&active, 0o755)?;
    }
    let dir = TaskDir {
        path: active.join(spec.task_name()),
    };
    if dir.path.exists() {
        if supervisor_alive(&dir) {
            return Err(LaunchError::Refused(format!(
                "task {} is already running on this host",
                spec.task_name()
            )));
        }
        // What is left of an earlier run that was collected or lost.
        std::fs::remove_dir_all(&dir.path).map_err(|e| LaunchError::io("remove", &dir.path, e))?;
    }
    let made = TaskDir {
        path: staging.map_or_else(|| dir.path.clone(), |name| active.join(name)),
    };
    if staging.is_some() && made.path.symlink_metadata().is_ok() {
        // Left by a server of the same pid before a reboot, or by a supervisor killed while
        // held: never committed, nobody's.
        std::fs::remove_dir_all(&made.path)
            .map_err(|e| LaunchError::io("remove", &made.path, e))?;
    }
    std::fs::create_dir(&made.path).map_err(|e| LaunchError::io("mkdir", &made.path, e))?;
    let written = (|| {
        let _ = std::fs::set_permissions(&made.path, std::fs::Permissions::from_mode(0o755));
        if !write_spec {
            return Ok(());
        }
        let json = serde_json::to_vec(spec).map_err(|e| LaunchError::Protocol(e.to_string()))?;
        made.write_unsynced("spec.json", &json, 0o600)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&made.path);
        return Err(e);
    }
    Ok(dir)
}

/// Starts the supervisor of a prepared task (an `exec` of `gridspool-shepherd supervise`);
/// returns the job's pid once the supervisor has announced it, and the supervisor unless it
/// was reaped already.
fn supervise_task(
    spec: &LaunchSpec,
    dir: &TaskDir,
    exe: &Path,
) -> Result<(u32, Option<std::process::Child>), LaunchError> {
    use std::os::unix::process::CommandExt;
    // Its stdout and stderr are pipes to us until it announces the job (then it points both
    // at /dev/null): stdout carries the job's pid, stderr why it could not get that far.
    // argv[0] names the shepherd: `exe` may be the multicall program (`cli::multicall`).
    let mut child = Command::new(exe)
        .arg0(crate::launch::SHEPHERD_BINARY)
        .arg("supervise")
        .arg(&dir.path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LaunchError::io("spawn", exe, e))?;
    let diagnostics = child.stderr.take();
    // Wait for the supervisor to say the job exists: it prints the pid on the pipe the
    // moment the job runs (0 when it could not be started: its result says why), or closes
    // the pipe by exiting.
    let mut announced = None;
    if let Some(out) = child.stdout.take() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => announced = Some(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(LaunchError::Protocol(format!(
                    "the supervisor of task {} did not start the job within 120 s",
                    spec.task_name()
                )));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {}
        }
    }
    if let Some(pid) = announced.and_then(|l| l.trim().parse::<u32>().ok()) {
        return Ok((pid, Some(child)));
    }
    // It closed its stdout without a pid, that is, it ended before saying anything: it may
    // have written a result (then the watcher reports it) or died.
    let mut log = String::new();
    if let Some(mut err) = diagnostics {
        let _ = err.read_to_string(&mut log);
    }
    let status = child
        .wait()
        .map_err(|e| LaunchError::io("wait for", exe, e))?;
    if dir.result().exists() {
        return Ok((0, None));
    }
    Err(LaunchError::Protocol(format!(
        "the supervisor of task {} exited ({status}) before starting the job: {}",
        spec.task_name(),
        log.trim()
    )))
}

/// Tells the launcher waiting on our stdout that the job exists (`0`: it could not be
/// started), then lets go of both pipes to it for good (the supervisor outlives the launcher;
/// nothing else is ever written there, and later diagnostics go to the result).
pub(super) fn announce_started(pid: u32) {
    let mut out = std::io::stdout();
    let _ = out.write_all(format!("{pid}\n").as_bytes());
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}
