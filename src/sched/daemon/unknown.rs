//! The daemon's side of hosts that go unknown and come back (SGE's `max_unheard` and
//! `reschedule_unknown`; the state's side is `sched::unknown_hosts`).
//!
//! - Unknown (`LaunchEvent::HostUnknown`): the host takes no new work; after its
//!   `reschedule_unknown` its tasks are rescheduled ([`Daemon::reschedule_host`]).
//! - Returned (`LaunchEvent::HostReturned`): it takes work again, and the runs given up there
//!   are settled: the launcher kills those still going ([`super::TaskRunner::sweep`]).
//! - A result the host kept for a given-up run ([`Daemon::kept_result`]) is the task's end,
//!   recorded once: the requeued copy is cancelled — taken out of pending, or killed if it
//!   runs already. (The other choice, holding the requeue until the result comes, would leave
//!   the task waiting for a host that may never return.)

use super::{Daemon, EndedTask, now};
use crate::model::TaskResult;
use crate::model::{FinishedTask, JobId, RunningTask};
use std::time::Instant;
use tracing::{error, info, warn};

use super::qmod::{FAILED_RESCHEDULED, RESCHEDULED_ERROR};

impl Daemon {
    pub(super) fn host_unknown(&mut self, host: String) {
        self.state.set_host_unknown(&host, true);
        match self.state.config.reschedule_unknown(&host) {
            Some(after) => {
                info!(host = %host, ?after, "host unknown: its tasks are rescheduled if it stays so");
                self.reschedule_due.insert(host, Instant::now() + after);
            }
            None => {
                info!(host = %host, "host unknown; reschedule_unknown is 0:0:0: its tasks wait for it")
            }
        }
        self.pass_needed = true;
    }

    pub(super) fn host_returned(&mut self, host: String) {
        info!(host = %host, "host known again: it takes work");
        self.state.set_host_unknown(&host, false);
        self.reschedule_due.remove(&host);
        let given_up = self.state.rescheduled_on(&host);
        if !given_up.is_empty() {
            self.runner.sweep(&host, given_up);
        }
        self.pass_needed = true;
    }

    /// After a restart, the given-up runs of a recovered job are settled as when their host
    /// returns (the host may have returned while no `sched_d` ran).
    pub(super) fn sweep_rescheduled_of(&mut self, id: JobId) {
        let runs = self
            .state
            .job(id)
            .map(|j| j.tasks.rescheduled.clone())
            .unwrap_or_default();
        for run in runs {
            self.runner.sweep(&run.host, vec![(id, run.task)]);
        }
    }

    pub(super) fn reschedule_due_hosts(&mut self, at: Instant) {
        let due: Vec<String> = self
            .reschedule_due
            .iter()
            .filter(|(_, t)| **t <= at)
            .map(|(h, _)| h.clone())
            .collect();
        for host in due {
            self.reschedule_due.remove(&host);
            self.reschedule_host(&host);
        }
    }

    /// `reschedule_unknown` has passed and `host` is still unknown: SGE's
    /// `reschedule_jobs` for its tasks (those whose master task runs there, or with
    /// `enable_reschedule_slave` any of whose tasks does).
    fn reschedule_host(&mut self, host: &str) {
        if !self.state.host_is_unknown(host) {
            return;
        }
        let config = &self.state.config;
        let reap = config.enable_reschedule_kill();
        let slaves = config.enable_reschedule_slave.unwrap_or(false);
        let tasks = self.state.running_on_host(host, slaves);
        warn!(
            host,
            tasks = tasks.len(),
            "host still unknown after reschedule_unknown: rescheduling its tasks"
        );
        for (id, run) in tasks {
            let Some(job) = self.state.job(id).map(std::borrow::Cow::into_owned) else {
                continue;
            };
            let rerun = job
                .spec
                .restartable
                .unwrap_or_else(|| self.state.config.queue(&run.queue).is_some_and(|q| q.rerun));
            let task = run.task;
            if rerun && !run.deleting {
                let result = TaskResult {
                    job: id,
                    task,
                    host: run.host.clone(),
                    start_time: run.start_time as f64,
                    end_time: now() as f64,
                    failed: FAILED_RESCHEDULED,
                    error: Some(RESCHEDULED_ERROR.to_string()),
                    ..TaskResult::default()
                };
                if let Err(e) = self.acct.record(&job, &run, &result) {
                    error!(job = %id, task, "accounting: {e}");
                }
                if let Err(e) = self.state.reschedule_task(id, task) {
                    warn!(job = %id, task, "reschedule: {e}");
                    continue;
                }
                self.runner.forget(id, task);
                info!(job = %id, task, host, "task rescheduled: pending again");
                self.ended
                    .push(EndedTask::decided(id, task, &run.host, None));
            } else if reap || run.deleting {
                // SGE's "Reaping not restartable job": finished as one that never ran, with
                // no accounting record (a task being deleted ends so too: its deletion was
                // asked, and its host may never return to confirm it).
                if let Err(e) = self.state.reap_task(id, task) {
                    warn!(job = %id, task, "reap: {e}");
                    continue;
                }
                self.runner.forget(id, task);
                info!(job = %id, task, host, "task not restartable: ended as never run");
                let exit = FinishedTask {
                    task,
                    exit_status: 0,
                    failed: FAILED_RESCHEDULED,
                    end_time: now(),
                    signal: None,
                    never_ran: true,
                };
                self.ended
                    .push(EndedTask::decided(id, task, &run.host, Some(exit)));
                self.retire_if_done(id);
            } else {
                info!(job = %id, task, host, "task not restartable (enable_reschedule_kill is off): it stays until its host returns");
            }
        }
        self.pass_needed = true;
    }

    /// The result a host kept for a run given up there (`run`): the task's end, recorded
    /// once (unless it only says that the run died with its host). The requeued copy is cancelled; a task that has ended otherwise since (its rerun
    /// finished, or it was reaped or deleted) keeps that end, and this result is dropped.
    pub(super) fn kept_result(&mut self, run: RunningTask, result: TaskResult) {
        let (id, task) = (result.job, result.task);
        let mut ended = EndedTask::reported(id, task, &result.host);
        if result.supervisor_lost {
            info!(job = %id, task, host = %result.host, "the run rescheduled off the host did not survive there: its rerun stands");
            self.ended.push(ended);
            return;
        }
        let copy_running = self
            .state
            .job(id)
            .is_some_and(|j| j.tasks.running.iter().any(|r| r.task == task));
        if copy_running {
            info!(job = %id, task, host = %result.host, "the run rescheduled off the host ended there after all: its rerun is cancelled");
            if let Err(e) = self.runner.kill(id, task, false) {
                warn!(job = %id, task, "kill of the rerun: {e}");
            }
            // Its slots are free now; its own end, when it comes, finds it not running.
            let _ = self.state.task_ended(id, task);
        } else if self.state.finish_pending_task(id, task) {
            info!(job = %id, task, host = %result.host, "the run rescheduled off the host ended there after all: not run again");
        } else {
            info!(job = %id, task, host = %result.host, "the result of a run rescheduled off the host came after the task had ended otherwise: dropped");
            self.ended.push(ended);
            return;
        }
        // Recorded before a crash that lost only the state: not again.
        if !super::recorded_exits(&self.spool, id).contains(&task)
            && let Some(job) = self.state.job(id).map(std::borrow::Cow::into_owned)
        {
            if let Err(e) = self.acct.record(&job, &run, &result) {
                error!(job = %id, task, "accounting: {e}");
            }
            ended.exit = Some(super::exits_line(&result, false));
        }
        info!(job = %id, task, exit_status = result.exit_status, failed = result.failed, "task ended (kept result)");
        self.ended.push(ended);
        self.retire_if_done(id);
    }

    /// Whether a result is from a run on another host than the one the task runs on now: an
    /// earlier run, rescheduled off its host, whose given-up record did not survive (the
    /// task's own run goes on).
    pub(super) fn earlier_run(&self, result: &TaskResult) -> bool {
        !result.host.is_empty()
            && self.state.job(result.job).is_some_and(|j| {
                j.tasks
                    .running
                    .iter()
                    .any(|r| r.task == result.task && r.host != result.host)
            })
    }

    fn retire_if_done(&mut self, id: JobId) {
        if self.state.job(id).is_some_and(|j| j.tasks.is_done()) {
            let at = now() + self.opts.retention.as_secs() as i64;
            self.retire_at.insert(id, at);
            info!(job = %id, "job finished");
        }
    }
}
