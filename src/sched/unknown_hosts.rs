//! Hosts in state unknown, and SGE's `reschedule_unknown`, in the scheduler's state.
//!
//! A host nothing was heard from for `max_unheard` is unknown (`launch::liveness`): it takes
//! no new work until it is heard again. After `reschedule_unknown` its tasks are rescheduled
//! as SGE's qmaster does (`reschedule.c`): a rerunnable task is requeued (`RESTARTED=1` when
//! it runs again), one that is not is ended when `enable_reschedule_kill` is on (its exits
//! line and accounting record wait for its host: `daemon::unknown`), or else stays `r` until
//! the host returns. Either way the given-up run is kept in the job's
//! `rescheduled` list (SGE's `reschedule_unknown_list` of the host) until the host tells what
//! became of it; see `daemon::unknown` for the rest.

use super::state::{SchedState, StateError};
use crate::model::{JobId, RunningTask, TaskId};

impl SchedState {
    /// Marks `host` unknown (no new work) or known again.
    pub fn set_host_unknown(&mut self, host: &str, unknown: bool) {
        if let Some(h) = self.cluster.host_index(host) {
            self.cluster.hosts[h].unknown = unknown;
            self.invalidate_order();
        }
    }

    /// The hosts that are unknown, in configuration order.
    pub fn unknown_hosts(&self) -> Vec<String> {
        self.cluster
            .hosts
            .iter()
            .filter(|h| h.unknown)
            .map(|h| h.name.clone())
            .collect()
    }

    /// Whether `host` is unknown.
    pub fn host_is_unknown(&self, host: &str) -> bool {
        self.cluster
            .host_index(host)
            .is_some_and(|h| self.cluster.hosts[h].unknown)
    }

    /// The tasks running with `host` as their master host, or (`slaves`) as any of their
    /// hosts: what rescheduling `host` concerns. O(running tasks): done once per host that
    /// goes unknown, not per event.
    pub fn running_on_host(&self, host: &str, slaves: bool) -> Vec<(JobId, RunningTask)> {
        let mut jobs: Vec<JobId> = self.running.keys().map(|(j, _)| *j).collect();
        jobs.sort_unstable();
        jobs.dedup();
        let mut found = Vec::new();
        for id in jobs {
            let Some(job) = self.job(id) else { continue };
            for r in &job.tasks.running {
                let there = r.host == host || slaves && r.granted.iter().any(|(h, _, _)| h == host);
                if there {
                    found.push((id, r.clone()));
                }
            }
        }
        found
    }

    /// A rerunnable task on an unknown host: pending again, its next start a restart, the
    /// run given up kept in `rescheduled`. Returns that run.
    pub fn reschedule_task(&mut self, id: JobId, task: TaskId) -> Result<RunningTask, StateError> {
        let ran = self.running_task(id, task)?;
        self.requeue_restarted(id, task)?;
        self.keep_rescheduled(id, ran.clone());
        Ok(ran)
    }

    /// A task on an unknown host that cannot be rerun, with `enable_reschedule_kill`: ended
    /// (it counts as finished), the run given up kept in `rescheduled`.
    pub fn reap_task(&mut self, id: JobId, task: TaskId) -> Result<RunningTask, StateError> {
        let ran = self.task_ended(id, task)?;
        self.keep_rescheduled(id, ran.clone());
        Ok(ran)
    }

    fn running_task(&self, id: JobId, task: TaskId) -> Result<RunningTask, StateError> {
        self.job(id)
            .ok_or(StateError::NoSuchJob(id))?
            .tasks
            .running
            .iter()
            .find(|r| r.task == task)
            .cloned()
            .ok_or(StateError::NotRunning(id, task))
    }

    fn keep_rescheduled(&mut self, id: JobId, ran: RunningTask) {
        if let Some(job) = self.job_mut(id) {
            job.tasks
                .rescheduled
                .retain(|r| !(r.task == ran.task && r.host == ran.host));
            job.tasks.rescheduled.push(ran);
        }
        self.rescheduled_jobs.insert(id);
        self.mark_dirty(id);
    }

    /// The given-up run of `(id, task)` on `host`, taken out of the list: its result came.
    pub fn take_rescheduled(&mut self, id: JobId, task: TaskId, host: &str) -> Option<RunningTask> {
        let has = self.job(id).is_some_and(|j| {
            j.tasks
                .rescheduled
                .iter()
                .any(|r| r.task == task && r.host == host)
        });
        if !has {
            return None;
        }
        let job = self.job_mut(id)?;
        let pos = job
            .tasks
            .rescheduled
            .iter()
            .position(|r| r.task == task && r.host == host)?;
        let ran = job.tasks.rescheduled.remove(pos);
        if job.tasks.rescheduled.is_empty() {
            self.rescheduled_jobs.remove(&id);
        }
        self.mark_dirty(id);
        Some(ran)
    }

    /// Drops given-up runs on `host` whose end will not come (killed there, or not there).
    pub fn drop_rescheduled(&mut self, host: &str, tasks: &[(JobId, TaskId)]) {
        for &(id, task) in tasks {
            self.take_rescheduled(id, task, host);
        }
    }

    /// The given-up runs on `host`, as (job, task).
    pub fn rescheduled_on(&self, host: &str) -> Vec<(JobId, TaskId)> {
        self.jobs_with_rescheduled()
            .into_iter()
            .flat_map(|(id, runs)| {
                runs.into_iter()
                    .filter(|r| r.host == host)
                    .map(move |r| (id, r.task))
            })
            .collect()
    }

    /// Every job's given-up runs.
    pub fn jobs_with_rescheduled(&self) -> Vec<(JobId, Vec<RunningTask>)> {
        self.rescheduled_jobs
            .iter()
            .filter_map(|&id| {
                let job = self.job(id)?;
                (!job.tasks.rescheduled.is_empty()).then(|| (id, job.tasks.rescheduled.clone()))
            })
            .collect()
    }

    /// A pending task whose earlier run's result came after all: it is finished, not to run
    /// again. `false` when the task is not pending.
    pub fn finish_pending_task(&mut self, id: JobId, task: TaskId) -> bool {
        let pending = self
            .job(id)
            .is_some_and(|j| j.tasks.pending.iter().any(|g| g.tasks.contains(task)));
        if !pending {
            return false;
        }
        let Some(job) = self.job_mut(id) else {
            return false;
        };
        for g in &mut job.tasks.pending {
            g.tasks.remove(task);
        }
        job.tasks.pending.retain(|g| !g.tasks.is_empty());
        job.tasks.finished += 1;
        job.tasks.finished_tasks.insert(task);
        job.tasks.restarted.remove(task);
        self.refresh_hot(id);
        self.invalidate_order();
        self.mark_dirty(id);
        true
    }
}
