//! Job mail (`qsub -m b|e|a`, `-M`): the messages SGE 8.1.9 sends when a task starts, ends or
//! is aborted, and their delivery through the configured `mailer` (SGE's `sge_conf(5)`
//! parameter, `/usr/bin/mail` by default).
//!
//! Subjects and bodies are SGE's, recorded on the oracle with a mailer that saved its
//! arguments and input: one `mailer -s SUBJECT RECIPIENT` per recipient, the body on standard
//! input. Recipients are the job's `-M` list, else `owner@submit_host`.
//!
//! Delivery must never slow the scheduler down or make it wait on a stuck mailer: each mail is
//! handed to a short-lived thread that starts the mailer, writes the body and reaps it. A
//! mailer that cannot be started is logged; the job is not affected.

use crate::model::TaskResult;
use crate::model::{ArRecord, JobRecord, RunningTask, TaskId};
use crate::time::qstat_date;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use tracing::warn;

/// One message, before it is addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub body: String,
}

/// What happened to a task, in `-m` terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailEvent {
    /// `b`: the task started.
    Begin,
    /// `e`: the task ended without a failure.
    End,
    /// `a`: the task failed (killed, limit reached, could not run).
    Abort,
}

impl MailEvent {
    fn letter(self) -> char {
        match self {
            MailEvent::Begin => 'b',
            MailEvent::End => 'e',
            MailEvent::Abort => 'a',
        }
    }

    /// The event for a task's end: SGE mails "Aborted" when the task failed (any non-zero
    /// `failed` code: killed by `qdel`, a limit, a start failure) and "Complete" otherwise,
    /// whatever the exit status.
    pub fn for_end(result: &TaskResult) -> MailEvent {
        if result.failed == 0 {
            MailEvent::End
        } else {
            MailEvent::Abort
        }
    }
}

/// Whether the job asked for mail at this event (`-m`; `n` or nothing: never).
pub fn wanted(job: &JobRecord, event: MailEvent) -> bool {
    job.spec.mail_options.contains(event.letter())
}

/// Who gets the job's mail: `-M`, else `owner@submit_host` (SGE's default).
pub fn recipients(job: &JobRecord) -> Vec<String> {
    if job.spec.mail_list.is_empty() {
        vec![format!(
            "{}@{}",
            job.submitter.owner, job.submitter.sge_o_host
        )]
    } else {
        job.spec.mail_list.clone()
    }
}

/// `Job 42 (name)` or `Job-array task 42.3 (name)`.
fn title(job: &JobRecord, task: TaskId) -> String {
    if job.is_array() {
        format!("Job-array task {}.{} ({})", job.id, task, job.spec.name)
    } else {
        format!("Job {} ({})", job.id, job.spec.name)
    }
}

/// `hh:mm:ss` of a number of seconds, as SGE's mails print times.
fn clock(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn max_vmem(bytes: f64) -> String {
    if bytes > 0.0 {
        crate::units::memory3(bytes)
    } else {
        "NA".into()
    }
}

/// The cluster queue of a queue instance (`all.q@vm` → `all.q`).
fn cluster_queue(queue: &str) -> &str {
    queue.split('@').next().unwrap_or(queue)
}

/// The queue instance (`all.q@vm`) of a task.
fn instance(task: &RunningTask) -> String {
    if task.queue.contains('@') {
        task.queue.clone()
    } else {
        format!("{}@{}", task.queue, task.host)
    }
}

/// "Started" mail (`-m b`).
pub fn begin(job: &JobRecord, task: &RunningTask) -> Mail {
    let title = title(job, task.task);
    Mail {
        subject: format!("{title} Started"),
        body: format!(
            "{title} Started\n User       = {}\n Queue      = {}\n Host       = {}\n Start Time = {}\n",
            job.submitter.owner,
            cluster_queue(&task.queue),
            task.host,
            qstat_date(task.start_time),
        ),
    }
}

/// "Complete" (`-m e`) or "Aborted" (`-m a`) mail for a task's end.
pub fn end(job: &JobRecord, task: &RunningTask, result: &TaskResult) -> Mail {
    let title = title(job, task.task);
    let start = qstat_date(result.start_time as i64);
    let end = qstat_date(result.end_time as i64);
    let cpu = result.rusage.utime + result.rusage.stime;
    if MailEvent::for_end(result) == MailEvent::End {
        return Mail {
            subject: format!("{title} Complete"),
            body: format!(
                "{title} Complete\n User             = {}\n Queue            = {}\n Host             = {}\n Start Time       = {start}\n End Time         = {end}\n User Time        = {}\n System Time      = {}\n Wallclock Time   = {}\n CPU              = {}\n Max vmem         = {}\n Exit Status      = {}\n",
                job.submitter.owner,
                instance(task),
                task.host,
                clock(result.rusage.utime),
                clock(result.rusage.stime),
                clock(result.end_time - result.start_time),
                clock(cpu),
                max_vmem(result.maxvmem),
                result.exit_status,
            ),
        };
    }
    let mut body = format!(
        "{title} Aborted\n Exit Status      = {}\n",
        result.exit_status
    );
    if let Some(sig) = result.signal {
        body.push_str(&format!(" Signal           = {}\n", signal_name(sig)));
    }
    body.push_str(&format!(
        " User             = {}\n Queue            = {}\n Host             = {}\n Start Time       = {start}\n End Time         = {end}\n CPU              = {}\n Max vmem         = {}\nfailed {} because:\n",
        job.submitter.owner,
        instance(task),
        task.host,
        clock(cpu),
        max_vmem(result.maxvmem),
        crate::acct::report::failure_description(result.failed),
    ));
    match (&result.error, result.signal) {
        (Some(e), _) => body.push_str(&format!("{e}\n")),
        (None, Some(sig)) => body.push_str(&format!(
            "job {}.{} died through signal {} ({sig})\n",
            job.id,
            task.task,
            signal_name(sig)
        )),
        (None, None) => body.push_str(&format!(
            "job {}.{} exited with status {}\n",
            job.id, task.task, result.exit_status
        )),
    }
    Mail {
        subject: format!("{title} Aborted"),
        body,
    }
}

/// "Killed" mail: sent with `-m a` when `qdel` kills a running task.
pub fn killed(job: &JobRecord, by_user: &str, by_host: &str) -> Mail {
    let title = format!("Job {} ({})", job.id, job.spec.name);
    Mail {
        subject: format!("{title} Killed"),
        // SGE's text has the double space.
        body: format!("{title}  was killed by {by_user}@{by_host}\n"),
    }
}

/// `KILL` for 9: SGE names signals without the `SIG` prefix.
fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().trim_start_matches("SIG").to_string())
        .unwrap_or_else(|_| sig.to_string())
}

/// What happened to an advance reservation, in `qrsub -m` terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArMailEvent {
    /// `b`: its window began.
    Started,
    /// `e`: its window ended.
    Finished,
    /// `e` too: `qrdel` deleted it (at `at`).
    Deleted { at: i64 },
    /// `a`: a queue instance it holds went wrong while its window is open (state `E`).
    Error { at: i64 },
    /// `a` too: the instances it holds are well again (`E` to `r`).
    Resolved { at: i64 },
}

/// The mail SGE 8.1.9's qmaster sends for `event` (`sge_ar_send_mail`), addressed to the
/// reservation's `-M` list (SGE sends none without one), or `None` when its `-m` did not ask
/// for it.
pub fn advance_reservation(ar: &ArRecord, event: ArMailEvent) -> Option<(Vec<String>, Mail)> {
    let s = &ar.submission;
    let letter = match event {
        ArMailEvent::Started => 'b',
        ArMailEvent::Finished | ArMailEvent::Deleted { .. } => 'e',
        ArMailEvent::Error { .. } | ArMailEvent::Resolved { .. } => 'a',
    };
    if !s.mail_options.contains(letter) || s.mail_list.is_empty() {
        return None;
    }
    let title = format!(
        "Advance Reservation {} ({})",
        s.id,
        s.name.as_deref().unwrap_or("none")
    );
    let (what, when, at) = match event {
        ArMailEvent::Started => ("Started", "Start Time", s.start),
        ArMailEvent::Finished => ("Finished", "End Time", s.end),
        ArMailEvent::Deleted { at } => ("Deleted", "Delete Time", at),
        ArMailEvent::Error { at } => ("Error", "Error Time", at),
        ArMailEvent::Resolved { at } => ("Error resolved", "Error resolved Time", at),
    };
    let mail = Mail {
        subject: format!("{title} {what}"),
        body: format!(
            "{title} {what}\n User       = {}\n {when} = {}\n",
            s.owner.user,
            qstat_date(at)
        ),
    };
    Some((s.mail_list.clone(), mail))
}

/// Sends mail through the configured mailer.
#[derive(Debug, Clone)]
pub struct Mailer {
    program: PathBuf,
}

impl Mailer {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Mailer {
            program: program.into(),
        }
    }

    /// Sends `mail` to every recipient, one mailer run each, without waiting for them.
    pub fn send(&self, to: &[String], mail: &Mail) {
        for rcpt in to {
            let (program, mail, rcpt) = (self.program.clone(), mail.clone(), rcpt.clone());
            let spawned = std::thread::Builder::new()
                .name("mailer".into())
                .spawn(move || deliver(&program, &rcpt, &mail));
            if let Err(e) = spawned {
                warn!("cannot start a mail thread: {e}");
            }
        }
    }
}

/// Runs `program -s SUBJECT RCPT` with the body on stdin and waits for it.
fn deliver(program: &PathBuf, rcpt: &str, mail: &Mail) {
    let child = Command::new(program)
        .arg("-s")
        .arg(&mail.subject)
        .arg(rcpt)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            warn!(mailer = %program.display(), to = rcpt, "cannot run the mailer: {e}");
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take()
        && let Err(e) = stdin.write_all(mail.body.as_bytes())
    {
        warn!(mailer = %program.display(), to = rcpt, "mailer input: {e}");
    }
    match child.wait() {
        Ok(s) if !s.success() => {
            warn!(mailer = %program.display(), to = rcpt, "mailer failed: {s}")
        }
        Ok(_) => {}
        Err(e) => warn!(mailer = %program.display(), to = rcpt, "mailer: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Rusage;
    use crate::model::{Holds, JobId, JobSpec, JobSubmission, Submitter, TaskIdRange};

    fn job(array: bool) -> JobRecord {
        let spec = JobSpec {
            name: "mjob".into(),
            array: array.then(|| TaskIdRange::new(1, 2, 1)),
            ..JobSpec::default()
        };
        JobRecord::from_submission(JobSubmission {
            v: 1,
            id: JobId(130),
            submitter: Submitter {
                owner: "sgeuser".into(),
                uid: 1001,
                group: "sgeuser".into(),
                gid: 1001,
                submission_time: 0,
                sge_o_home: "/home/sgeuser".into(),
                sge_o_log_name: "sgeuser".into(),
                sge_o_path: "/usr/bin:/bin".into(),
                sge_o_shell: "/bin/sh".into(),
                sge_o_workdir: "/tmp".into(),
                sge_o_host: "vm".into(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            spec,
            holds: Holds::NONE,
        })
    }

    fn task(t: TaskId, start: i64) -> RunningTask {
        RunningTask::running(t, "all.q", "vm", 1, start)
    }

    fn result(start: i64, end: i64, exit: i32, signal: Option<i32>, failed: u32) -> TaskResult {
        TaskResult {
            job: JobId(130),
            task: 1,
            host: "vm".into(),
            start_time: start as f64,
            end_time: end as f64,
            exit_status: exit,
            signal,
            failed,
            error: None,
            job_error: false,
            supervisor_lost: false,
            rusage: Rusage::default(),
            mem: 0.0,
            io: 0.0,
            iow: 0.0,
            maxvmem: 0.0,
            pe_task: None,
        }
    }

    /// The oracle's mails (dates as the local time zone prints them).
    #[test]
    fn messages_are_sges() {
        let t0 = 1_795_315_415;
        let d = qstat_date(t0);
        let m = begin(&job(false), &task(1, t0));
        assert_eq!(m.subject, "Job 130 (mjob) Started");
        assert_eq!(
            m.body,
            format!(
                "Job 130 (mjob) Started\n User       = sgeuser\n Queue      = all.q\n Host       = vm\n Start Time = {d}\n"
            )
        );
        let m = begin(&job(true), &task(2, t0));
        assert_eq!(m.subject, "Job-array task 130.2 (mjob) Started");

        let m = end(&job(false), &task(1, t0), &result(t0, t0, 3, None, 0));
        assert_eq!(m.subject, "Job 130 (mjob) Complete");
        assert_eq!(
            m.body,
            format!(
                "Job 130 (mjob) Complete\n User             = sgeuser\n Queue            = all.q@vm\n Host             = vm\n Start Time       = {d}\n End Time         = {d}\n User Time        = 00:00:00\n System Time      = 00:00:00\n Wallclock Time   = 00:00:00\n CPU              = 00:00:00\n Max vmem         = NA\n Exit Status      = 3\n"
            )
        );

        let mut r = result(t0, t0 + 5, 137, Some(9), 100);
        r.maxvmem = 3.113 * 1024.0 * 1024.0;
        let m = end(&job(false), &task(1, t0), &r);
        assert_eq!(m.subject, "Job 130 (mjob) Aborted");
        let e = qstat_date(t0 + 5);
        assert_eq!(
            m.body,
            format!(
                "Job 130 (mjob) Aborted\n Exit Status      = 137\n Signal           = KILL\n User             = sgeuser\n Queue            = all.q@vm\n Host             = vm\n Start Time       = {d}\n End Time         = {e}\n CPU              = 00:00:00\n Max vmem         = 3.113M\nfailed assumedly after job because:\njob 130.1 died through signal KILL (9)\n"
            )
        );

        let m = killed(&job(false), "sgeuser", "vm");
        assert_eq!(
            (m.subject.as_str(), m.body.as_str()),
            (
                "Job 130 (mjob) Killed",
                "Job 130 (mjob)  was killed by sgeuser@vm\n"
            )
        );
    }

    #[test]
    fn options_and_recipients() {
        let mut j = job(false);
        assert!(!wanted(&j, MailEvent::Begin));
        assert_eq!(recipients(&j), ["sgeuser@vm"]);
        j.spec.mail_options = "be".into();
        j.spec.mail_list = vec!["x@y".into(), "z@w".into()];
        assert!(wanted(&j, MailEvent::Begin) && wanted(&j, MailEvent::End));
        assert!(!wanted(&j, MailEvent::Abort));
        assert_eq!(recipients(&j), ["x@y", "z@w"]);
        assert_eq!(clock(3725.0), "01:02:05");
    }
}
