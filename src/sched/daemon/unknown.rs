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
//! - A task that cannot be rerun is reaped at `reschedule_unknown` (SGE's "Reaping not
//!   restartable job"): over for the cluster, but its exits line and its one accounting
//!   record wait for its host, which may have kept the real result (a job that succeeded
//!   behind a cut link was reported failed, its result dropped). The result it kept is the
//!   task's end; a run killed or lost there ends it with `failed` 25 ([`Daemon::swept`]).
//!   The job is not retired until then.

use super::{Daemon, EndedTask, now};
use crate::model::TaskResult;
use crate::model::{FinishedTask, JobId, RunningTask};
use std::time::Instant;
use tracing::{error, info, warn};

use super::qmod::{FAILED_RESCHEDULED, RESCHEDULED_ERROR};

/// How long a host heard again may wait for its given-up runs to settle before it takes
/// work anyway: the sweep asks the host, kills and waits for the killed runs to be
/// collected, each step bounded.
const SETTLING_AT_MOST: std::time::Duration = std::time::Duration::from_secs(90);

impl Daemon {
    pub(super) fn host_unknown(&mut self, host: String) {
        self.state.set_host_unknown(&host, true);
        self.settling.remove(&host);
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
        // Heard again: a start that failed to reach it while it was gone does not keep it
        // out of the schedule any longer.
        self.state.host_reachable(&host);
        self.reschedule_due.remove(&host);
        let given_up = self.state.rescheduled_on(&host);
        if given_up.is_empty() {
            info!(host = %host, "host known again: it takes work");
            self.state.set_host_unknown(&host, false);
        } else {
            // A task requeued from there and sent back before its old run is killed and
            // collected would be refused ("already running on this host") and put in
            // error: no new work goes there until those runs are settled.
            info!(host = %host, runs = given_up.len(), "host known again: it takes work once the runs given up there are settled");
            self.settling
                .insert(host.clone(), Instant::now() + SETTLING_AT_MOST);
            self.runner.sweep(&host, given_up);
        }
        self.pass_needed = true;
    }

    /// A host heard again whose given-up runs are all settled takes work.
    pub(super) fn settled(&mut self, host: &str) {
        if self.settling.contains_key(host) && self.state.rescheduled_on(host).is_empty() {
            self.settling.remove(host);
            info!(host, "the runs given up there are settled: it takes work");
            self.state.set_host_unknown(host, false);
            self.pass_needed = true;
        }
    }

    /// Hosts that took longer than [`SETTLING_AT_MOST`] to settle take work anyway (a run
    /// still there then refuses its task's new start, which goes to error as before).
    pub(super) fn settling_due_hosts(&mut self, at: Instant) {
        let due: Vec<String> = self
            .settling
            .iter()
            .filter(|(_, t)| **t <= at)
            .map(|(h, _)| h.clone())
            .collect();
        for host in due {
            self.settling.remove(&host);
            warn!(host = %host, "the runs given up there are not all settled yet: it takes work all the same");
            self.state.set_host_unknown(&host, false);
            self.pass_needed = true;
        }
    }

    /// After a restart, the given-up runs of a recovered job are settled as when their host
    /// returns (the host may have returned while no `sched_d` ran), and their host takes no
    /// new work until they are, as then.
    pub(super) fn sweep_rescheduled_of(&mut self, id: JobId) {
        let runs = self
            .state
            .job(id)
            .map(|j| j.tasks.rescheduled.clone())
            .unwrap_or_default();
        for run in runs {
            if !self.settling.contains_key(&run.host) && !self.state.host_is_unknown(&run.host) {
                self.settling
                    .insert(run.host.clone(), Instant::now() + SETTLING_AT_MOST);
                self.state.set_host_unknown(&run.host, true);
            }
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
            let rerun = job.spec.restartable.unwrap_or_else(|| {
                self.state
                    .config
                    .queue_instance_named(&format!("{}@{}", run.queue, run.host))
                    .is_some_and(|q| q.rerun)
            });
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
            } else if run.deleting {
                // A task being deleted ends as never run, with no accounting record: its
                // deletion was asked, and its host may never return to confirm it.
                if let Err(e) = self.state.reap_task(id, task) {
                    warn!(job = %id, task, "reap: {e}");
                    continue;
                }
                self.runner.forget(id, task);
                info!(job = %id, task, host, "task being deleted on an unknown host: ended as never run");
                self.ended.push(EndedTask::decided(
                    id,
                    task,
                    &run.host,
                    Some(reaped_exit(task, now())),
                ));
                self.retire_if_done(id);
            } else if reap {
                // SGE's "Reaping not restartable job": the task is over for the cluster (its
                // slots are free, the job may finish), but how its run ended is its host's
                // to tell: its exits line and its one accounting record wait for the host
                // (`awaiting_host`), which may have kept the real result.
                if let Err(e) = self.state.reap_task(id, task) {
                    warn!(job = %id, task, "reap: {e}");
                    continue;
                }
                self.runner.forget(id, task);
                info!(job = %id, task, host, "task not restartable: given up, its end waits for its host");
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
        // A reaped run's end is whatever its host tells, a lost supervisor included.
        if result.supervisor_lost && !self.awaiting_host(id, task) {
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
        } else if self.awaiting_host(id, task) {
            info!(job = %id, task, host = %result.host, "the run given up on the host (not restartable) ended there: its result is the task's end");
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

    /// A task reaped on an unknown host whose end is still its host's to tell: over for the
    /// cluster, no exits line yet. (Its given-up run is on the job's `rescheduled` list
    /// until the host answers.)
    pub(super) fn awaiting_host(&self, id: JobId, task: crate::model::TaskId) -> bool {
        self.state.job(id).is_some_and(|j| {
            !j.tasks.running.iter().any(|r| r.task == task)
                && !j.tasks.pending.iter().any(|g| g.tasks.contains(task))
        }) && !self
            .ended
            .iter()
            .any(|e| e.job == id && e.task == task && e.exit.is_some())
            && !super::recorded_exits(&self.spool, id).contains(&task)
    }

    /// Whether a finished job still waits for the end of a run reaped on an unknown host:
    /// it is not retired until its host tells, so that the result it kept has a job to be
    /// recorded for.
    pub(super) fn awaits_reaped_end(&self, id: JobId) -> bool {
        let runs = self
            .state
            .job(id)
            .map(|j| j.tasks.rescheduled.clone())
            .unwrap_or_default();
        runs.iter().any(|r| self.awaiting_host(id, r.task))
    }

    /// The host of given-up runs has answered for `tasks`: killed there, or not there (it
    /// went down with them). A reaped run among them that still waits for its end ends now,
    /// with its one accounting record: `failed` 25, from its start to now.
    pub(super) fn swept(&mut self, host: &str, tasks: &[(JobId, crate::model::TaskId)]) {
        for &(id, task) in tasks {
            if !self.awaiting_host(id, task) {
                continue;
            }
            let Some(run) = self.state.take_rescheduled(id, task, host) else {
                continue;
            };
            let t = now();
            let result = TaskResult {
                job: id,
                task,
                host: run.host.clone(),
                start_time: run.start_time as f64,
                end_time: t as f64,
                failed: FAILED_RESCHEDULED,
                error: Some(RESCHEDULED_ERROR.to_string()),
                ..TaskResult::default()
            };
            if let Some(job) = self.state.job(id).map(std::borrow::Cow::into_owned)
                && let Err(e) = self.acct.record(&job, &run, &result)
            {
                error!(job = %id, task, "accounting: {e}");
            }
            info!(job = %id, task, host, "the run given up on the host did not end there with a result: ended as rescheduled");
            self.ended.push(EndedTask::decided(
                id,
                task,
                host,
                Some(reaped_exit(task, t)),
            ));
            self.retire_if_done(id);
        }
        self.state.drop_rescheduled(host, tasks);
        self.settled(host);
    }

    fn retire_if_done(&mut self, id: JobId) {
        if self.state.job(id).is_some_and(|j| j.tasks.is_done()) {
            let at = now() + self.opts.retention.as_secs() as i64;
            self.retire_at.insert(id, at);
            info!(job = %id, "job finished");
        }
    }
}

/// The exits line of a task whose run was given up on an unknown host without a result:
/// `failed` 25 (rescheduling), as one that never ran.
fn reaped_exit(task: crate::model::TaskId, end_time: i64) -> FinishedTask {
    FinishedTask {
        task,
        exit_status: 0,
        failed: FAILED_RESCHEDULED,
        end_time,
        signal: None,
        never_ran: true,
    }
}
