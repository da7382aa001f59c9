//! Task ends, from the launcher's events to disk: the start and end events
//! ([`Daemon::launch_event`]), the accounting record and exits line of each end
//! ([`Daemon::task_ended`], [`Daemon::record_ends`]), the acknowledgement to its host once
//! both are durable, mail, and the storage-blocked state (issue 12) in which ends wait, in
//! order, until their writes pass.

use super::{Daemon, now};
use crate::launch::LaunchEvent;
use crate::mail::{self, MailEvent};
use crate::model::{ErrorInfo, FinishedTask, JobId, JobRecord, TaskId};
use crate::sched::runner::append_exit;
use std::time::{Duration, Instant};
use tracing::{debug, error, info, warn};

/// The storage-blocked state: since when, and when the writes are tried again.
#[derive(Debug)]
pub(super) struct Blocked {
    since: Instant,
    backoff: Duration,
    pub(super) retry_at: Instant,
}

/// The first retry of a blocked daemon comes this soon; each failed one doubles the wait,
/// up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(4);

/// A task end on its way to disk: accounted (in the hook's buffer), its exits line still to
/// write, its host still to be told that the result may go.
#[derive(Debug)]
pub(super) struct EndedTask {
    pub(super) job: JobId,
    pub(super) task: crate::model::TaskId,
    host: String,
    /// `None`: nothing to write (a preempted task, which is pending again, or an end the
    /// daemon had no running task for); only the acknowledgement is due.
    pub(super) exit: Option<FinishedTask>,
    /// Its exits line is durable (the accounting record, before it, too).
    exit_written: bool,
    /// The host reported this end and may now forget the task.
    acknowledge: bool,
}

/// The exits line of a task that ended with `result`.
pub(super) fn exits_line(result: &crate::model::TaskResult, never_ran: bool) -> FinishedTask {
    FinishedTask {
        task: result.task,
        exit_status: result.exit_status,
        failed: result.failed,
        end_time: result.end_time as i64,
        signal: result.signal,
        never_ran,
    }
}

impl EndedTask {
    /// An end the host reported: nothing recorded yet, the host to be told when it is.
    pub(super) fn reported(job: JobId, task: crate::model::TaskId, host: &str) -> Self {
        EndedTask {
            job,
            task,
            host: host.to_string(),
            exit: None,
            exit_written: false,
            acknowledge: true,
        }
    }

    /// An end decided here (no report from the host to acknowledge), with its exits line.
    pub(super) fn decided(
        job: JobId,
        task: crate::model::TaskId,
        host: &str,
        exit: Option<FinishedTask>,
    ) -> Self {
        EndedTask {
            job,
            task,
            host: host.to_string(),
            exit,
            exit_written: false,
            acknowledge: false,
        }
    }
}

impl Daemon {
    /// Makes the wake-up's changes durable: the accounting records of the tasks that ended
    /// (one append, one `fdatasync`), then their exits lines, then every changed state; only
    /// then are the hosts told that those results may go. A crash before the exits line is
    /// written leaves the result on its host, so the next daemon records it (once: recovery
    /// does not record a task whose exits line exists).
    ///
    /// No state is written while an end is not recorded (or anything failed in this
    /// attempt): a state that shows the task finished, with no exits line or accounting
    /// record behind it, would make a restarted daemon take the result its host still
    /// holds for the end of a task not running, and drop it.
    pub(super) fn settle(&mut self) {
        self.record_ends();
        if self.failure.is_none() {
            self.flush();
        }
        for e in std::mem::take(&mut self.recorded) {
            if e.acknowledge {
                self.runner.acknowledge(e.job, e.task, &e.host);
            }
        }
    }

    /// The first part of [`Self::settle`]: the accounting records of the ends taken (one
    /// commit), then their exits lines. What cannot be written stays in `ended`, in order,
    /// unacknowledged, for the next attempt ([`Self::storage_failed`]): a failed commit
    /// keeps its records in the hook and leaves the file as it was, and an exits line is
    /// appended whole or not at all, so a retry writes each once.
    pub(super) fn record_ends(&mut self) {
        if self.ended.is_empty() {
            return;
        }
        if let Err(e) = self.acct.commit() {
            debug!(tasks = self.ended.len(), "accounting: {e}");
            self.storage_failed(format!("cannot write accounting records: {e}"));
            return;
        }
        let spool = &self.spool;
        let appended = crate::file::durable::in_parallel(&self.ended, |e| match &e.exit {
            Some(line) if !e.exit_written => Some(append_exit(spool, e.job, line)),
            _ => None,
        });
        let mut failed = None;
        for (e, outcome) in self.ended.iter_mut().zip(appended) {
            match outcome {
                Some(Ok(())) => e.exit_written = true,
                Some(Err(err)) => {
                    debug!(job = %e.job, task = e.task, "cannot append exit: {err}");
                    failed.get_or_insert_with(|| format!("cannot append exit: {err}"));
                }
                None => {}
            }
        }
        if let Some(why) = failed {
            self.storage_failed(why);
        }
        let (done, waiting): (Vec<EndedTask>, Vec<EndedTask>) = std::mem::take(&mut self.ended)
            .into_iter()
            .partition(|e| e.exit.is_none() || e.exit_written);
        self.ended = waiting;
        self.recorded.extend(done);
    }

    /// Notes a write that failed in this attempt; the first one is the reason given.
    fn storage_failed(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }

    /// Enters the storage-blocked state (one log line and the marker for `qstat -j`), or
    /// stays in it with a doubled wait before the next retry.
    pub(super) fn block(&mut self, why: String) {
        let now = Instant::now();
        if let Some((m, _)) = &self.metrics {
            m.spool_errors.inc();
        }
        match &mut self.blocked {
            None => {
                error!(
                    unrecorded = self.ended.len(),
                    "storage blocked: {why}; job ends stay on their hosts unacknowledged and nothing starts until they are recorded"
                );
                self.spool.set_storage_blocked(&why);
                self.blocked = Some(Blocked {
                    since: now,
                    backoff: RETRY_FIRST,
                    retry_at: now + RETRY_FIRST,
                });
            }
            Some(b) => {
                b.backoff = (b.backoff * 2).min(RETRY_MAX);
                b.retry_at = now + b.backoff;
                debug!(retry_in = ?b.backoff, "still blocked: {why}");
            }
        }
    }

    /// Leaves the storage-blocked state: everything held is on disk and acknowledged.
    pub(super) fn unblock(&mut self) {
        if let Some(b) = self.blocked.take() {
            info!(
                blocked_for = ?b.since.elapsed(),
                "storage unblocked: job ends recorded, dispatching again"
            );
            self.spool.clear_storage_blocked();
            self.pass_needed = true;
            self.full_pass = true;
            self.requests_needed = true;
        }
    }

    /// Writes every changed record durably.
    /// Written in parallel with one sync of `jobs/` (`Spool::write_states`): the cost of a
    /// batch is about that of one write.
    pub(super) fn flush(&mut self) {
        let records: Vec<JobRecord> = self
            .state
            .take_dirty()
            .into_iter()
            .filter_map(|id| self.state.record_for_write(id))
            .collect();
        for (job, outcome) in records.iter().zip(self.spool.write_states(&records)) {
            match outcome {
                Ok(entry) => {
                    self.state.note_written(job.id);
                    self.index.put(job.id, entry);
                    self.running_unwritten.remove(&job.id);
                }
                Err(e) => {
                    debug!(job = %job.id, "cannot write state: {e}");
                    // Whatever the file holds now, listings read it.
                    self.index.forget(job.id);
                    // Written again by the next attempt; meanwhile nothing starts.
                    self.state.mark_dirty(job.id);
                    self.storage_failed(format!("cannot write job state: {e}"));
                }
            }
        }
        // After the state files: a listing never shows what is not on disk yet.
        self.index.commit();
    }

    pub(super) fn launch_event(&mut self, ev: LaunchEvent) {
        match ev {
            LaunchEvent::Started {
                job,
                task,
                host,
                pid,
            } => {
                self.state.host_reachable(&host);
                // Written with the job's next write, or after `RUNNING_STATE_DELAY`: a
                // restarted daemon learns from the host, not from this state, whether the
                // task started.
                match self.state.task_started(job, task) {
                    Ok(()) => {
                        if let std::collections::btree_map::Entry::Vacant(e) =
                            self.running_unwritten.entry(job)
                        {
                            let at = Instant::now() + self.opts.running_state_delay;
                            e.insert(at);
                            self.running_deadlines.push_back((at, job));
                        }
                        info!(job = %job, task, host = %host, pid, "task running");
                        self.mail_begin(job, task);
                    }
                    Err(e) => warn!(job = %job, task, "started event: {e}"),
                }
            }
            LaunchEvent::Ended(result) => {
                self.task_ended(*result);
                self.pass_needed = true;
            }
            LaunchEvent::PeTaskEnded(result) => self.pe_task_ended(*result),
            LaunchEvent::NeverStarted { job, task, host } => {
                info!(job = %job, task, host = %host, "task never reached its host: pending again");
                let _ = self.state.requeue_task(job, task, None);
                self.pass_needed = true;
            }
            LaunchEvent::HostUnknown { host } => self.host_unknown(host),
            LaunchEvent::HostReturned { host } => self.host_returned(host),
            LaunchEvent::Swept { host, tasks } => self.swept(&host, &tasks),
            LaunchEvent::Failed {
                job,
                task,
                host,
                error,
                host_unreachable,
            } => {
                if host_unreachable {
                    let retry = self.state.host_unreachable(&host, now());
                    warn!(job = %job, task, host = %host, retry_at = ?retry, "host unreachable: task pending again: {error}");
                    let _ = self.state.requeue_task(job, task, None);
                } else {
                    warn!(job = %job, task, host = %host, "task failed to start, job in error state: {error}");
                    let _ = self.state.requeue_task(
                        job,
                        task,
                        Some(ErrorInfo {
                            time: now(),
                            message: error,
                        }),
                    );
                }
                self.pass_needed = true;
            }
        }
    }

    /// `-m b`: the task is running now.
    fn mail_begin(&self, id: JobId, task: TaskId) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        if !mail::wanted(&job, MailEvent::Begin) {
            return;
        }
        if let Some(t) = job.tasks.running.iter().find(|r| r.task == task) {
            self.mailer
                .send(&mail::recipients(&job), &mail::begin(&job, t));
        }
    }

    /// A task ended: accounted, state changed; [`Self::settle`] makes it durable (accounting,
    /// exits line, state, in that order) at the end of the wake-up. A job with nothing left
    /// is retired later.
    pub(super) fn task_ended(&mut self, result: crate::model::TaskResult) {
        let (id, task) = (result.job, result.task);
        self.end_pe_tasks(id, task);
        if let Some((m, _)) = &self.metrics {
            m.task_ends.inc();
        }
        let ended = EndedTask::reported(id, task, &result.host);
        if let Some(run) = self.state.take_rescheduled(id, task, &result.host) {
            let host = result.host.clone();
            self.kept_result(run, result);
            self.settled(&host);
            return;
        }
        if self.earlier_run(&result) {
            warn!(job = %id, task, host = %result.host, "the result of an earlier run, rescheduled off that host, is not the task's: dropped");
            self.ended.push(ended);
            return;
        }
        let ended = match self.rescheduled_task_ended(id, task, &result, ended) {
            Ok(()) => return,
            Err(ended) => ended,
        };
        // Issue 14: a failed prolog or epilog puts its queue instance in error state.
        if crate::launch::shepherd::failed::queue_fault(result.failed) {
            self.queue_fault(id, task, &result);
        }
        let mut ended = match self.requeued_task_ended(id, task, &result, ended) {
            Ok(()) => return,
            Err(ended) => ended,
        };
        // Issue 4: an aggressively preempted task is accounted and pending again.
        if let Some(ran) = self.state.preempted_task_ended(id, task) {
            if let Some(job) = self.state.job(id)
                && let Err(e) = self.acct.record(&job, &ran, &result)
            {
                error!(job = %id, task, "accounting: {e}");
            }
            info!(job = %id, task, "preempted task requeued");
            self.ended.push(ended);
            return;
        }
        // SGE's job_exit.c, case 2: a job that could not start through its own fault is
        // accounted and goes to error state (`Eqw`), its task pending again; a task being
        // deleted ends as every deleted task does (below).
        if result.job_error
            && let Some(job) = self.state.job(id)
            && let Some(ran) = job.tasks.running.iter().find(|r| r.task == task)
            && !ran.deleting
        {
            let ran = ran.clone();
            if let Err(e) = self.acct.record(&job, &ran, &result) {
                error!(job = %id, task, "accounting: {e}");
            }
            let message = result.error.clone().unwrap_or_default();
            warn!(job = %id, task, failed = result.failed, "job could not start, job in error state: {message}");
            let error = ErrorInfo {
                time: now(),
                message,
            };
            if let Err(e) = self.state.requeue_task(id, task, Some(error)) {
                warn!(job = %id, task, "error state: {e}");
            }
            self.ended.push(ended);
            return;
        }
        let ran = match self.state.task_ended(id, task) {
            Ok(r) => r,
            Err(e) => {
                // Nothing to record; the host may forget it.
                warn!(job = %id, task, "end of a task not running: {e}");
                self.ended.push(ended);
                return;
            }
        };
        let Some(job) = self.state.job(id) else {
            self.ended.push(ended);
            return;
        };
        if let Err(e) = self.acct.record(&job, &ran, &result) {
            error!(job = %id, task, "accounting: {e}");
        }
        if mail::wanted(&job, MailEvent::for_end(&result)) {
            self.mailer
                .send(&mail::recipients(&job), &mail::end(&job, &ran, &result));
        }
        ended.exit = Some(exits_line(&result, ran.deleting));
        self.ended.push(ended);
        info!(job = %id, task, exit_status = result.exit_status, failed = result.failed, "task ended");
        if job.tasks.is_done() {
            let at = now() + self.opts.retention.as_secs() as i64;
            self.retire_at.insert(id, at);
            info!(job = %id, "job finished");
        }
    }

    /// `qdel -f` ended a running task as far as the cluster is concerned: it is accounted
    /// now (`failed` 100, exit status 137, as a killed job), whether or not its host ever
    /// reports — the host may be unreachable. A later report from the host finds the task no
    /// longer running and is not recorded again.
    pub(super) fn forced_end(&mut self, id: JobId, ran: &crate::model::RunningTask) {
        let t = now();
        let result = crate::model::TaskResult {
            job: id,
            task: ran.task,
            host: ran.host.clone(),
            start_time: ran.start_time as f64,
            end_time: t as f64,
            exit_status: 137,
            signal: Some(9),
            failed: crate::launch::shepherd::failed::AFTER_JOB,
            error: Some("forced deletion (qdel -f)".to_string()),
            ..Default::default()
        };
        if let Some(job) = self.state.job(id)
            && let Err(e) = self.acct.record(&job, ran, &result)
        {
            error!(job = %id, task = ran.task, "accounting: {e}");
        }
        info!(job = %id, task = ran.task, host = %ran.host, "task accounted as deleted by force");
        // The task may still be running there; its directory goes when it reports.
        self.ended.push(EndedTask::decided(
            id,
            ran.task,
            &ran.host,
            Some(FinishedTask {
                task: ran.task,
                exit_status: result.exit_status,
                failed: result.failed,
                end_time: t,
                signal: result.signal,
                // A forced deletion, as any deletion, is a task that never ran to SGE.
                never_ran: true,
            }),
        ));
    }
}
