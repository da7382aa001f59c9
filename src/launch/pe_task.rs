//! Pe tasks: what `qrsh -inherit host command` starts from inside a running parallel job
//! (SGE's tight integration, how `mpirun` reaches the job's other hosts).
//!
//! `sched_d` checks the request (the job's owner, a PE with `control_slaves`, a host the
//! task was granted and a slot free there) and starts `gridspool-shepherd pe-task` on the
//! host: over an ssh connection of its own (not the host's multiplexed one, whose sessions
//! are few and short), or as a local child. The pe task's spec comes as one line on the
//! shepherd's standard input, which then stays open: its end (the launcher closed it, because
//! the job's task ended, or `sched_d` went away) kills the pe task; a `suspend` or `resume`
//! line on it stops or continues the pe task with its job. The shepherd supervises
//! the command as it does a task (limits, usage, the `relay` to `qrsh -inherit`), in the
//! foreground, and answers on its standard output with the command's pid, then with its
//! result: an accounting record of its own (`pe_taskid` `1.node2`), and the exit status that
//! `qrsh -inherit` returns.
//!
//! A pe task lives as long as the session that started it: a `sched_d` restart ends the pe
//! tasks of every running job (their tasks carry on), where SGE's execd keeps them.

use super::shepherd::{Supervisor, prepare_task_dir, supervisor_signals};
use super::{LaunchError, LaunchSpec};
use crate::model::TaskResult;
use std::io::{BufRead, Read, Write};
use std::os::fd::AsFd;

/// The lines `sched_d` sends a pe-task shepherd after the spec: stop or continue the pe
/// task's processes, as `qmod -s`/`-us` do its job's.
pub const SUSPEND: &str = "suspend";
pub const RESUME: &str = "resume";

/// `gridspool-shepherd pe-task`: one spec line on standard input, the job's pid and then its
/// result (JSON) as lines on standard output.
pub(super) fn pe_task_mode() -> Result<(), LaunchError> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| LaunchError::io("read", "standard input", e))?;
    let spec: LaunchSpec = serde_json::from_str(line.trim())
        .map_err(|e| LaunchError::Protocol(format!("bad spec: {e}")))?;
    if spec.pe_task.is_none() {
        return Err(LaunchError::Protocol("the spec is not a pe task's".into()));
    }
    // The supervisor points its standard output at /dev/null once it has told the pid: the
    // result goes on a copy.
    let results = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| LaunchError::io("dup", "standard output", e))?;
    let signals = supervisor_signals();
    signals
        .thread_block()
        .map_err(|e| LaunchError::Protocol(format!("sigprocmask: {e}")))?;
    let _ = nix::unistd::setsid();
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let dir = prepare_task_dir(&spec, false, None)?;
    // The session's further lines suspend and resume the pe task with its job (`qmod -s`,
    // `-us`), and its end is the order to end (a thread started after the signals were
    // blocked: the SIGTERM goes to the supervisor's `sigwait`).
    std::thread::spawn(|| {
        use nix::sys::signal::Signal;
        let me = nix::unistd::getpid();
        for line in std::io::stdin().lock().lines() {
            match line.as_deref().map(str::trim) {
                Ok(SUSPEND) => super::suspend::signal_tree(me.as_raw() as u32, Signal::SIGSTOP),
                Ok(RESUME) => super::suspend::signal_tree(me.as_raw() as u32, Signal::SIGCONT),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = nix::sys::signal::kill(me, Signal::SIGTERM);
    });
    let mut supervisor = Supervisor::new(spec, dir.clone(), signals);
    let result = supervisor.run();
    supervisor.cleanup();
    let _ = std::fs::remove_dir_all(&dir.path);
    let mut json = serde_json::to_vec(&result).map_err(|e| LaunchError::Protocol(e.to_string()))?;
    json.push(b'\n');
    std::fs::File::from(results)
        .write_all(&json)
        .map_err(|e| LaunchError::io("write", "standard output", e))
}

/// Reads a pe-task shepherd's answers (its pid, then its result) until it ends; a shepherd
/// that ended without a result (it could not start the task, its host or session failed)
/// gives a result with the reason as its error and `failed` 1.
pub(super) fn read_result(
    spec: &LaunchSpec,
    stdout: impl Read,
    stderr: impl Read + Send + 'static,
) -> TaskResult {
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let mut result = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if line.starts_with('{')
            && let Ok(r) = serde_json::from_str::<TaskResult>(&line)
        {
            result = Some(r);
        }
    }
    let errors = errors.join().unwrap_or_default();
    result.unwrap_or_else(|| {
        let reason = errors
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| {
                l.trim()
                    .trim_start_matches("gridspool-shepherd: ")
                    .to_string()
            })
            .unwrap_or_else(|| "the shepherd ended without a result".to_string());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        TaskResult {
            job: spec.job,
            task: spec.task,
            host: spec.host.clone(),
            start_time: now,
            end_time: now,
            failed: super::shepherd::failed::BEFORE_JOB,
            error: Some(reason),
            pe_task: spec.pe_task.clone(),
            ..TaskResult::default()
        }
    })
}
