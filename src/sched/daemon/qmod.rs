//! The daemon's side of `qmod`: queue instance states (`-d/-e`, `-sq/-usq`, `-cq`), and the
//! jobs' suspension (`-sj/-usj`) and rescheduling (`-rj`, `-rq`). The client words SGE's
//! messages from the same decisions ([`crate::model::Request::apply`],
//! [`crate::model::Request::reschedule`]); here they are carried out: signals to the tasks'
//! hosts, kills, requeues, the states made durable in `daemon/qinstances.json`.

use super::{Daemon, EndedTask, now};
use crate::model::TaskResult;
use crate::model::{JobId, QmodEvent, Request, Requester, RescheduleRules, TaskId, TaskSelector};
use tracing::{error, info, warn};

/// SGE's `failed` code of a run ended by rescheduling (`SSTATE_AGAIN`).
pub(super) const FAILED_RESCHEDULED: u32 = 25;

/// The error text of SGE's pseudo job report for a rescheduled run (`MSG_RU_JR_ERRSTR`).
pub(super) const RESCHEDULED_ERROR: &str = "manual/auto rescheduling";

/// A change of queue instance states by `qmod`.
pub(super) enum InstanceChange {
    Disable(bool),
    Suspend(bool),
    ClearError,
}

impl Daemon {
    /// `qmod -d/-e/-sq/-usq/-cq` of queue instances: operators and managers only (the
    /// client refused the others already); durable in `daemon/qinstances.json`. A
    /// suspension stops or continues the tasks running in the instance.
    pub(super) fn change_instances(
        &mut self,
        who: &Requester,
        instances: &[String],
        change: InstanceChange,
    ) {
        if !(who.manager || who.operator) {
            warn!(user = %who.user, "qmod by a user who is neither operator nor manager: ignored");
            return;
        }
        for name in instances {
            let changed = match change {
                InstanceChange::Disable(d) => self.state.set_instance_disabled(name, d),
                InstanceChange::Suspend(s) => self.state.set_instance_suspended(name, s),
                InstanceChange::ClearError => self.state.set_instance_error(name, None),
            };
            if !changed {
                continue;
            }
            info!(instance = %name, user = %who.user, "queue instance state changed");
            if let InstanceChange::Suspend(_) = change {
                // Stopped while `qmod -sq` or its calendar suspends the instance.
                let suspended = self.state.instance_states.stops_tasks(name);
                for (id, task) in self.state.tasks_in_instance(name) {
                    self.set_stopped(id, task, false, |r| r.queue_suspended = suspended);
                }
            }
        }
        self.write_instance_states();
        self.pass_needed = true;
        self.full_pass = true;
    }

    /// `qconf` by a manager who may not write `config.yaml`: the new text replaces the
    /// file if it is still the text `qconf` edited and parses by the same rules as a reload;
    /// the answer goes to `daemon/replies/<seq>.json` for `qconf` to print.
    pub(super) fn config_edit(
        &mut self,
        req: &crate::model::Request,
        base: &str,
        text: &str,
        expires: i64,
    ) {
        if now() > expires {
            info!(seq = req.seq, user = %req.requester.user, "configuration change expired: qconf stopped waiting");
            return;
        }
        let path = self.spool.config_path();
        let outcome = if !req.requester.manager {
            Err(format!(
                "denied: \"{}\" must be manager for this operation",
                req.requester.user
            ))
        } else {
            match crate::file::open::read(&path) {
                Err(e) => Err(format!("error: cannot read {}: {e}", path.display())),
                Ok(now) if now != base.as_bytes() => Err(
                    "error: config.yaml changed while qconf edited it: nothing was written, try again"
                        .to_string(),
                ),
                Ok(_) => match crate::config::ClusterConfig::parse(text) {
                    Err(reason) => Err(format!("error: {reason}")),
                    Ok(_) => crate::config::edit::write_config(&path, text)
                        .map_err(|e| format!("error: {e}")),
                },
            }
        };
        let reply = crate::spool::Reply {
            v: 1,
            ok: outcome.is_ok(),
            message: outcome.clone().err().unwrap_or_default(),
            exit_status: None,
        };
        match &outcome {
            Ok(()) => {
                info!(user = %req.requester.user, "qconf changed the configuration: reloading it");
                self.reload_needed = true;
            }
            Err(e) => warn!(user = %req.requester.user, "configuration change refused: {e}"),
        }
        if let Err(e) = self.spool.write_reply(req.seq, &reply) {
            error!(seq = req.seq, "cannot answer qconf: {e}");
        }
    }

    pub(super) fn write_instance_states(&mut self) {
        let mut states = self.state.instance_states.clone();
        states.v = 1;
        if let Err(e) = self.spool.write_queue_instance_states(&states) {
            error!("cannot write the queue instance states: {e}");
        }
    }

    /// Changes a running task with `change` and, if that stops or continues it (or `force`),
    /// signals its processes.
    pub(super) fn set_stopped(
        &mut self,
        id: JobId,
        task: TaskId,
        force: bool,
        change: impl FnOnce(&mut crate::model::RunningTask),
    ) {
        let Some(job) = self.state.job_mut(id) else {
            return;
        };
        let Some(r) = job.tasks.running.iter_mut().find(|r| r.task == task) else {
            return;
        };
        let before = r.stopped();
        change(r);
        let after = r.stopped();
        self.state.mark_dirty(id);
        if before != after || force {
            self.signal_task(id, task, after);
        }
    }

    fn signal_task(&mut self, id: JobId, task: TaskId, stop: bool) {
        info!(job = %id, task, stop, "suspension");
        if let Err(e) = self.runner.suspend(id, task, stop) {
            warn!(job = %id, task, stop, "cannot signal the task: {e}");
        }
    }

    /// The running tasks a `qmod -sj/-usj` applied to [`Request::apply`] changed (or, with
    /// `-f`, asked to signal again): their processes are stopped or continued.
    pub(super) fn suspended(&mut self, id: JobId, events: &[QmodEvent]) {
        for e in events {
            let task = match *e {
                QmodEvent::Suspended { task, .. }
                | QmodEvent::Unsuspended { task, .. }
                | QmodEvent::AlreadySuspended { task, forced: true }
                | QmodEvent::AlreadyUnsuspended { task, forced: true } => task,
                _ => continue,
            };
            // The task's processes as its two states say (a task of a suspended queue stays
            // stopped when the job is resumed).
            let stopped = self
                .state
                .job(id)
                .and_then(|j| j.tasks.running.iter().find(|r| r.task == task).cloned())
                .map(|r| r.stopped());
            if let Some(stop) = stopped {
                self.signal_task(id, task, stop);
            }
        }
    }

    /// `qmod -rj` of one job, decided as the client decided it: rescheduled tasks are killed
    /// (their end requeues them, [`Self::rescheduled_task_ended`]), reaped ones killed as by
    /// `qdel`.
    pub(super) fn reschedule(
        &mut self,
        who: &Requester,
        id: JobId,
        tasks: &TaskSelector,
        force: bool,
    ) {
        let config = &self.state.config;
        let queue_rerun = |q: &str| config.queue_instance_named(q).is_some_and(|q| q.rerun);
        let rules = RescheduleRules {
            queue_rerun: &queue_rerun,
            reap: config.enable_reschedule_kill(),
        };
        let Some(mut job) = self.state.job(id).map(std::borrow::Cow::into_owned) else {
            return;
        };
        let events = match Request::reschedule(&mut job, who, tasks, force, &rules) {
            Ok(events) => events,
            Err(denied) => {
                info!(job = %id, user = %who.user, "request denied: {denied}");
                return;
            }
        };
        let notify = job.spec.notify;
        if let Some(record) = self.state.job_mut(id) {
            record.tasks.running = job.tasks.running;
        }
        self.state.mark_dirty(id);
        for e in events {
            let task = match e {
                QmodEvent::Rescheduled { task, .. } => {
                    info!(job = %id, task, user = %who.user, "rescheduling");
                    task
                }
                QmodEvent::Reaped(task) => {
                    info!(job = %id, task, user = %who.user, "not restartable: killed (enable_reschedule_kill)");
                    task
                }
                _ => continue,
            };
            if let Err(e) = self.runner.kill(id, task, notify) {
                warn!(job = %id, task, "kill: {e}");
            }
        }
    }

    /// A task whose prolog or epilog failed (`failed` 7, 8, 14, 15): its queue instance goes to
    /// error state (`E`, with SGE's reason for `qstat -explain E`) and takes no new work
    /// until `qmod -cq`.
    pub(super) fn queue_fault(&mut self, id: JobId, task: TaskId, result: &TaskResult) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        let Some(ran) = job.tasks.running.iter().find(|r| r.task == task) else {
            return;
        };
        let instance = format!("{}@{}", ran.queue, ran.host);
        let why = format!(
            "queue {} marked QERROR as result of job {id}'s failure at host {}",
            ran.queue, ran.host
        );
        warn!(job = %id, task, instance = %instance, failed = result.failed, "queue instance in error state: {}", result.error.as_deref().unwrap_or(""));
        if self.state.set_instance_error(&instance, Some(why)) {
            self.write_instance_states();
        }
    }

    /// A task its prolog sent back (`failed` 7 or 8), or whose prolog or epilog asked for a
    /// rerun (25): accounted as SGE accounts it, and pending again. `Err`: not one.
    pub(super) fn requeued_task_ended(
        &mut self,
        id: JobId,
        task: TaskId,
        result: &TaskResult,
        ended: EndedTask,
    ) -> Result<(), EndedTask> {
        if !crate::launch::shepherd::failed::requeued(result.failed) {
            return Err(ended);
        }
        let restart = result.failed == FAILED_RESCHEDULED;
        self.requeue_ended(id, task, |r| !r.deleting, result.clone(), restart, ended)
    }

    /// The end of a task `qmod -r` rescheduled: accounted with SGE's `failed 25` and pending
    /// again, its next run a restart. `Err`: it was not one.
    pub(super) fn rescheduled_task_ended(
        &mut self,
        id: JobId,
        task: TaskId,
        result: &TaskResult,
        ended: EndedTask,
    ) -> Result<(), EndedTask> {
        let mut accounted = result.clone();
        accounted.failed = FAILED_RESCHEDULED;
        accounted.error = Some(RESCHEDULED_ERROR.to_string());
        self.requeue_ended(id, task, |r| r.rescheduling, accounted, true, ended)
    }

    /// The end of running task `id.task`, if `which` says it is one to requeue: accounted
    /// as `accounted` says, pending again (its next run a restart with `restart`).
    fn requeue_ended(
        &mut self,
        id: JobId,
        task: TaskId,
        which: impl Fn(&crate::model::RunningTask) -> bool,
        accounted: TaskResult,
        restart: bool,
        ended: EndedTask,
    ) -> Result<(), EndedTask> {
        let Some(job) = self.state.job(id) else {
            return Err(ended);
        };
        let Some(ran) = job
            .tasks
            .running
            .iter()
            .find(|r| r.task == task && which(r))
            .cloned()
        else {
            return Err(ended);
        };
        if let Err(e) = self.acct.record(&job, &ran, &accounted) {
            error!(job = %id, task, "accounting: {e}");
        }
        let requeued = if restart {
            self.state.requeue_restarted(id, task)
        } else {
            self.state.requeue_task(id, task, None)
        };
        if let Err(e) = requeued {
            warn!(job = %id, task, "requeue: {e}");
        }
        info!(job = %id, task, failed = accounted.failed, at = now(), "task pending again: {}", accounted.error.as_deref().unwrap_or(""));
        self.ended.push(ended);
        self.pass_needed = true;
        Ok(())
    }
}
