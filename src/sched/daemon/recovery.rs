//! Recovery at start and on rescans: temporary files swept, every job file loaded, running
//! tasks reattached to their hosts (or their ends recorded), and unreadable jobs
//! quarantined. Apart because it is the one place that trusts nothing in memory and
//! rebuilds the state from the spool.

use super::task_ends::EndedTask;
use super::{Daemon, now};
use crate::model::JobId;
use crate::sched::runner::{Reattached, recorded_exits};
use std::fs::{self};
use std::time::Duration;
use tracing::{error, info, warn};

impl Daemon {
    /// Everything from the spool: jobs, their running tasks (re-attached or accounted for),
    /// finished jobs awaiting retirement, leftover temporary files.
    pub(super) fn recover(&mut self) {
        self.sweep_temp_files();
        let states = self.spool.queue_instance_states();
        for name in &states.disabled {
            self.state.set_instance_disabled(name, true);
        }
        for name in &states.enabled {
            self.state.set_instance_disabled(name, false);
        }
        for name in &states.suspended {
            self.state.set_instance_suspended(name, true);
        }
        for (name, why) in states.errors {
            self.state.set_instance_error(&name, Some(why));
        }
        let ids = self.list_job_ids();
        for id in ids {
            self.load_job(id);
        }
        self.recover_ars();
        self.state.compact();
        self.compacted_at = self.state.job_count();
        // Issue 4: the FBSNG and Armada priorities survive a restart.
        self.state.restore_policy_states(&self.spool.daemon_dir());
        let t = now();
        let retention = self.opts.retention.as_secs() as i64;
        for id in self.state.done_jobs() {
            self.retire_at.entry(id).or_insert(t + retention);
        }
    }

    fn sweep_temp_files(&self) {
        for dir in [self.spool.jobs_dir(), self.spool.requests_dir()] {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.starts_with(crate::file::durable::TEMP_PREFIX) {
                    continue;
                }
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|m| m.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(600));
                if old {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }

    fn list_job_ids(&self) -> Vec<JobId> {
        let dir = self.spool.jobs_dir();
        let mut ids = Vec::new();
        match fs::read_dir(&dir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if let Some(id) = name.strip_suffix(".job").and_then(|s| s.parse().ok()) {
                        ids.push(id);
                    }
                }
            }
            Err(e) => error!("cannot list {}: {e}", dir.display()),
        }
        ids.sort_unstable();
        ids
    }

    pub(super) fn scan_jobs_dir(&mut self) {
        for id in self.list_job_ids() {
            if self.state.job(id).is_none() && !self.refused.contains(&id) {
                self.load_job(id);
            }
        }
        // Advance reservations submitted while an event was lost.
        if let Ok(scan) = self.spool.scan_ars() {
            for (sub, _) in scan.undecided {
                self.load_ar(sub.id);
            }
        }
    }

    /// Reads one job (its state if `sched_d` wrote one, else its submission), checks that
    /// the job file belongs to the uid inside it, and adds it; running tasks are re-attached.
    pub(super) fn load_job(&mut self, id: JobId) {
        // The owner comes from the descriptor that was read (`Spool::read_job_owned`); a
        // FIFO, link or directory in the job's place is set aside unread.
        let (record, entry, owner) = match self.spool.read_job_owned(id) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                self.quarantine_job(id, &format!("malformed job: {e}"));
                return;
            }
        };
        if record.id != id {
            self.quarantine_job(id, &format!("file of job {id} holds job {}", record.id));
            return;
        }
        if owner != record.submitter.uid {
            self.quarantine_job(
                id,
                &format!(
                    "foreign job file: owned by uid {owner} but submitted as uid {}",
                    record.submitter.uid
                ),
            );
            return;
        }
        let running = record.tasks.running.clone();
        let fresh = record.priority.is_none() && running.is_empty() && record.tasks.finished == 0;
        let immediate = fresh && record.spec.now;
        if !self.state.add_job(record) {
            return;
        }
        if immediate {
            self.immediate.insert(id);
        }
        self.index.put(id, entry);
        if fresh {
            info!(job = %id, "job submitted");
            if let Some((m, _)) = &self.metrics {
                m.submissions.inc();
            }
        } else {
            info!(job = %id, running = running.len(), "job recovered");
        }
        if !running.is_empty() {
            self.reattach(id, running);
        }
        self.sweep_rescheduled_of(id);
        // Keep waiting jobs encoded (see `sched::state::Rec`).
        self.state.cool_idle();
        self.pass_needed = true;
    }

    fn reattach(&mut self, id: JobId, running: Vec<crate::model::RunningTask>) {
        let recorded = recorded_exits(&self.spool, id);
        for r in running {
            if recorded.contains(&r.task) {
                // Ended and recorded before the crash; only the state write (and perhaps the
                // acknowledgement to the host) was lost.
                let _ = self.state.task_ended(id, r.task);
                info!(job = %id, task = r.task, "task had ended before the restart");
                self.ended.push(EndedTask::reported(id, r.task, &r.host));
                continue;
            }
            let Some(job) = self.state.job(id) else {
                return;
            };
            match self.runner.reattach(&job, &r) {
                Reattached::Attached => {
                    info!(job = %id, task = r.task, host = %r.host, "task re-attached")
                }
                Reattached::NeverStarted => {
                    info!(job = %id, task = r.task, "task had not started: pending again");
                    let _ = self.state.requeue_task(id, r.task, None);
                }
                Reattached::Unknown => {
                    warn!(job = %id, task = r.task, "task lost while sched_d was down: recorded as failed (100), not run again");
                    let result = crate::model::TaskResult {
                        job: id,
                        task: r.task,
                        host: r.host.clone(),
                        start_time: r.start_time as f64,
                        end_time: now() as f64,
                        exit_status: 137,
                        failed: 100,
                        error: Some("task lost while sched_d was down".into()),
                        ..Default::default()
                    };
                    self.task_ended(result);
                }
            }
        }
        self.settle();
    }

    fn quarantine_job(&mut self, id: JobId, reason: &str) {
        warn!(job = %id, "{reason}: quarantined");
        if let Some((m, _)) = &self.metrics {
            m.quarantined.inc();
        }
        self.refused.insert(id);
        self.index.forget(id);
        for path in [self.spool.job_file(id), self.spool.state_file(id)] {
            // `symlink_metadata`: a link is set aside itself, dangling or not, never followed.
            if path.symlink_metadata().is_ok()
                && let Err(e) = self.spool.quarantine(&path, reason)
            {
                error!(job = %id, "cannot quarantine {}: {e}", path.display());
            }
        }
    }
}
