//! The scheduling pass and the timed work around it: the mastership check before starting
//! anything, the pass itself (starts, preemptions), `-now y` jobs that could not start,
//! finished jobs retired after their retention, `t` written as `r` after the delay, and the
//! armada state saved.

use super::{Daemon, now};
use crate::model::{ErrorInfo, JobId};
use std::time::Instant;
use tracing::{debug, error, info, warn};

impl Daemon {
    /// Exits at once if another daemon has taken this cell over (`sched::mastership`).
    pub(super) fn still_master(&self) {
        if let Some(m) = &self.opts.mastership
            && let Err(replaced) = m.check()
        {
            crate::sched::mastership::exit_replaced(&replaced);
        }
    }

    pub(super) fn run_pass(&mut self) {
        self.still_master();
        self.advance_ars();
        let started = Instant::now();
        let t = now();
        let calendar_change = self.apply_calendars(t);
        let result = if std::mem::take(&mut self.full_pass) {
            self.state.schedule(t)
        } else {
            self.state.schedule_event(t)
        };
        self.wakeup = [
            result.next_wakeup,
            calendar_change,
            self.state.hosts_down().iter().map(|(_, t)| *t).min(),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some((m, _)) = &self.metrics {
            m.pass_seconds.observe(started.elapsed().as_secs_f64());
            for s in &result.starts {
                if let Some(job) = self.state.job(s.job) {
                    m.dispatch_latency_seconds
                        .observe((t - job.submitter.submission_time).max(0) as f64);
                }
            }
        }
        // Transferring is durable before anything starts; meanwhile the hosts prepare the
        // starts (`TaskRunner::hold`), which start only after the flush.
        for s in &result.starts {
            if let Some(job) = self.state.job(s.job) {
                self.runner.hold(&job, s.task, &s.placement, s.restarted);
            }
        }
        self.flush();
        if self.failure.is_some() {
            // Not durable: none of these starts, they are pending again.
            for s in &result.starts {
                self.runner.release(s.job, s.task);
                let _ = self.state.requeue_task(s.job, s.task, None);
            }
            self.pass_needed = true;
            return;
        }
        self.still_master();
        for s in &result.starts {
            let Some(job) = self.state.job(s.job) else {
                self.runner.release(s.job, s.task);
                continue;
            };
            info!(job = %s.job, task = s.task, host = %s.placement.host, queue = %s.placement.queue, slots = s.placement.slots, "dispatching");
            if let Err(e) = self.runner.start(&job, s.task, &s.placement, s.restarted) {
                error!(job = %s.job, task = s.task, "cannot start: {e}");
                let _ = self.state.requeue_task(
                    s.job,
                    s.task,
                    Some(ErrorInfo {
                        time: t,
                        message: e.to_string(),
                    }),
                );
            }
        }
        // Issue 4: Qube! preemption (aggressive victims are killed; their end requeues them,
        // see `task_ended`) and the FBSNG priorities.
        for p in &result.preemptions {
            info!(job = %p.job, task = p.task, host = %p.host, for_job = %p.for_job, kill = p.kill, "preempted");
            if p.kill
                && let Err(e) = self.runner.kill(p.job, p.task, false)
            {
                warn!(job = %p.job, task = p.task, "kill (preemption): {e}");
            }
        }
        if let Err(e) = self
            .state
            .fbsng_state_mut()
            .save_if_changed(&self.spool.daemon_dir())
        {
            error!("cannot write the FBSNG priorities: {e}");
        }
        self.save_armada(false);
        self.drop_immediate_not_started();
        self.flush();
        self.state.cool_idle();
        self.estimates_moved(!result.starts.is_empty() || !result.preemptions.is_empty());
        debug!(
            considered = result.considered,
            started = result.starts.len(),
            reserved = result.reservations.len(),
            fits = result.fits,
            ms = started.elapsed().as_secs_f64() * 1e3,
            "scheduling pass"
        );
    }

    /// After a pass: the `-now y` jobs it could not start are removed (no accounting record,
    /// as SGE drops them); their `qsub -now y` or `qrsh` sees the job gone and says so.
    fn drop_immediate_not_started(&mut self) {
        for id in std::mem::take(&mut self.immediate) {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            if !job.tasks.running.is_empty() || job.tasks.finished > 0 {
                continue;
            }
            info!(job = %id, "immediate job could not be scheduled: removed");
            self.state.remove_job(id);
            self.retire_at.remove(&id);
            if let Err(e) = self.spool.remove_job(id) {
                error!(job = %id, "cannot remove job files: {e}");
            }
            self.index.forget(id);
        }
    }

    pub(super) fn retire_due(&mut self) {
        let t = now();
        let due: Vec<JobId> = self
            .retire_at
            .iter()
            .filter(|(_, at)| **at <= t)
            .map(|(id, _)| *id)
            .collect();
        let mut retired = Vec::new();
        for id in due {
            self.retire_at.remove(&id);
            if self.state.job(id).is_some_and(|j| !j.tasks.is_done()) || self.awaits_reaped_end(id)
            {
                continue;
            }
            self.state.remove_job(id);
            retired.push(id);
            self.pass_needed = true;
        }
        if retired.is_empty() {
            return;
        }
        for id in &retired {
            self.index.forget(*id);
        }
        match self.spool.remove_jobs(&retired) {
            Ok(()) => {
                for id in &retired {
                    info!(job = %id, "job retired");
                }
            }
            Err(e) => {
                // One by one, to say which.
                for id in retired {
                    match self.spool.remove_job(id) {
                        Ok(()) => info!(job = %id, "job retired"),
                        Err(_) => error!(job = %id, "cannot remove job files: {e}"),
                    }
                }
            }
        }
    }

    /// Marks the jobs whose `r` has waited [`DaemonOptions::running_state_delay`] to be
    /// written with this wake-up's changes.
    pub(super) fn running_due(&mut self, at: Instant) {
        while let Some(&(t, id)) = self.running_deadlines.front() {
            if t > at {
                break;
            }
            self.running_deadlines.pop_front();
            if self.running_unwritten.get(&id) == Some(&t) {
                self.running_unwritten.remove(&id);
                // A job removed meanwhile is not written (`record_for_write` has none).
                self.state.mark_dirty(id);
            }
        }
    }

    /// Writes the Armada priorities when due (`force`: now, the daemon is stopping).
    pub(super) fn save_armada(&mut self, force: bool) {
        let dir = self.spool.daemon_dir();
        if let Err(e) = self
            .state
            .armada_state_mut()
            .save_if_due(&dir, now(), force)
        {
            error!("cannot write the Armada priorities: {e}");
        }
    }
}
