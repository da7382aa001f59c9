//! What `qsub -sync y` prints when a task of its job ends, and the exit code it takes from it
//! (SGE 8.1.9's `report_exit_status` in `source/clients/qsub/qsub.c`, over JAPI's wait status;
//! captures `tests/compat/qsub/sync-y-*.txt`).

use crate::model::FinishedTask;

/// One task's report: the line and whether it goes to stdout, and the exit code it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskReport {
    /// `None` when nothing is printed (exit 0 under `-terse`).
    pub line: Option<String>,
    pub to_stdout: bool,
    /// What qsub exits with when this is the first task that did not exit 0: the exit code, 1
    /// for a signal, 0 for a task that never ran (SGE returns 0 there).
    pub code: i32,
}

/// SGE's report of a finished task `jobid` (`28`, or `28.2` for an array task):
///
/// * deleted (`qdel`) before or while it ran, which SGE's qmaster commits as "never ran":
///   `Unable to run job 28`, exit 0;
/// * ended by a signal: `Job 28 exited because of signal SIGKILL`, exit 1 (`h_rt`, the
///   `s_rt` warning `SIGUSR1`, a job that kills itself);
/// * otherwise `Job 28 exited with exit code 3.`, that code; on stdout when 0 (nothing with
///   `-terse`), on stderr otherwise.
pub fn task_report(jobid: &str, task: &FinishedTask, terse: bool) -> TaskReport {
    if task.never_ran {
        return TaskReport {
            line: Some(format!("Unable to run job {jobid}")),
            to_stdout: false,
            code: 0,
        };
    }
    if let Some(sig) = task.signal {
        return TaskReport {
            line: Some(format!(
                "Job {jobid} exited because of signal {}",
                signal_name(sig)
            )),
            to_stdout: false,
            code: 1,
        };
    }
    let code = task.exit_status;
    TaskReport {
        line: (code != 0 || !terse).then(|| format!("Job {jobid} exited with exit code {code}.")),
        to_stdout: code == 0,
        code,
    }
}

/// SGE's name for a Linux signal: `SIG` and its `sig_map` name (`source/libs/uti/sge_signal.c`;
/// 6 is `ABRT`, not `IOT`, the first entry that matches); SGE maps a signal missing from its
/// table to no name and prints `unknown signal`.
pub fn signal_name(sig: i32) -> String {
    use nix::sys::signal::Signal::*;
    let known = [
        (SIGHUP, "HUP"),
        (SIGINT, "INT"),
        (SIGQUIT, "QUIT"),
        (SIGILL, "ILL"),
        (SIGTRAP, "TRAP"),
        (SIGABRT, "ABRT"),
        (SIGFPE, "FPE"),
        (SIGKILL, "KILL"),
        (SIGSEGV, "SEGV"),
        (SIGPIPE, "PIPE"),
        (SIGALRM, "ALRM"),
        (SIGTERM, "TERM"),
        (SIGURG, "URG"),
        (SIGSTOP, "STOP"),
        (SIGTSTP, "TSTP"),
        (SIGCONT, "CONT"),
        (SIGCHLD, "CHLD"),
        (SIGTTIN, "TTIN"),
        (SIGTTOU, "TTOU"),
        (SIGIO, "IO"),
        (SIGXCPU, "XCPU"),
        (SIGXFSZ, "XFSZ"),
        (SIGWINCH, "WINCH"),
        (SIGUSR1, "USR1"),
        (SIGUSR2, "USR2"),
        (SIGBUS, "BUS"),
    ];
    match known.iter().find(|(s, _)| *s as i32 == sig) {
        Some((_, name)) => format!("SIG{name}"),
        None => "SIGunknown signal".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(exit_status: i32, signal: Option<i32>, never_ran: bool) -> FinishedTask {
        FinishedTask {
            task: 1,
            exit_status,
            failed: 0,
            end_time: 0,
            signal,
            never_ran,
        }
    }

    #[test]
    fn reports_follow_sge_report_exit_status() {
        let r = task_report("22", &ended(137, Some(9), false), false);
        assert_eq!(
            (r.line.as_deref(), r.to_stdout, r.code),
            (Some("Job 22 exited because of signal SIGKILL"), false, 1)
        );
        let r = task_report("32", &ended(137, Some(9), true), true);
        assert_eq!(
            (r.line.as_deref(), r.to_stdout, r.code),
            (Some("Unable to run job 32"), false, 0)
        );
        let r = task_report("35.1", &ended(0, None, false), false);
        assert_eq!(
            (r.line.as_deref(), r.to_stdout, r.code),
            (Some("Job 35.1 exited with exit code 0."), true, 0)
        );
        assert_eq!(task_report("35.1", &ended(0, None, false), true).line, None);
        let r = task_report("29", &ended(3, None, false), true);
        assert_eq!(
            (r.line.as_deref(), r.to_stdout, r.code),
            (Some("Job 29 exited with exit code 3."), false, 3)
        );
        assert_eq!(signal_name(6), "SIGABRT");
        assert_eq!(signal_name(10), "SIGUSR1");
        assert_eq!(signal_name(34), "SIGunknown signal");
    }
}
