//! Spool requests (`qdel`, `qalter`, `qhold`, `qmod`...): read in order from `requests/`,
//! applied in memory, the affected states made durable, and only then the request removed
//! (or a bad one quarantined), per the durability order of [`super`].

use super::qmod::InstanceChange;
use super::{Daemon, now};
use crate::mail::{self, MailEvent};
use crate::model::{JobId, Outcome, Request, RequestAction, RunningDeletion};
use std::collections::HashSet;
use std::fs::{self};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use tracing::{debug, error, info, warn};

impl Daemon {
    /// Applies every request file in sequence order: verified and applied; their states
    /// are written and the requests removed at the end of the wake-up ([`Self::act`]).
    pub(super) fn process_requests(&mut self) {
        let dir = self.spool.requests_dir();
        let mut names: Vec<String> = match fs::read_dir(&dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect(),
            Err(e) => {
                error!("cannot list {}: {e}", dir.display());
                return;
            }
        };
        names.sort();
        for name in names {
            let path = dir.join(&name);
            if !name.ends_with(".req") {
                self.quarantine_file(&path, "not a gridspool request");
                continue;
            }
            // Owner and bytes from one descriptor, opened by the spool's one safe open: a
            // FIFO, socket, device, directory or link is set aside unread.
            let read = crate::file::open::open(&path).and_then(|mut f| {
                use std::io::Read;
                let owner = f.metadata()?.uid();
                let mut bytes = Vec::new();
                f.read_to_end(&mut bytes)?;
                Ok((bytes, owner))
            });
            let (bytes, owner) = match read {
                Ok(x) => x,
                Err(e) if e.is_not_found() => continue,
                Err(e @ crate::file::open::OpenError::NotRegular(_)) => {
                    self.quarantine_file(&path, &format!("malformed request: {e}"));
                    continue;
                }
                Err(e) => {
                    error!("cannot read {}: {e}", path.display());
                    continue;
                }
            };
            let req: Request = match serde_json::from_slice(&bytes) {
                Ok(r) => r,
                Err(e) => {
                    self.quarantine_file(&path, &format!("malformed request: {e}"));
                    continue;
                }
            };
            if owner != req.requester.uid {
                warn!(
                    seq = req.seq,
                    "forged request refused: file owned by uid {owner}, claims uid {} ({})",
                    req.requester.uid,
                    req.requester.user
                );
                self.quarantine_file(
                    &path,
                    &format!(
                        "forged request: file owned by uid {owner} but requester uid is {}",
                        req.requester.uid
                    ),
                );
                continue;
            }
            let seq = req.seq;
            self.apply_request(req);
            self.absorbed.push((seq, name));
        }
    }

    fn quarantine_file(&self, path: &Path, reason: &str) {
        warn!("{}: {reason}: quarantined", path.display());
        if let Some((m, _)) = &self.metrics {
            m.quarantined.inc();
        }
        if let Err(e) = self.spool.quarantine(path, reason) {
            error!("cannot quarantine {}: {e}", path.display());
        }
    }

    /// Applies one verified request. The requester's name and privileges are recomputed from
    /// the uid and the configuration, never taken from the file.
    fn apply_request(&mut self, mut req: Request) {
        let uid = req.requester.uid;
        if let Ok(Some(u)) = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
            req.requester.user = u.name;
        }
        req.requester.manager = self.state.config.is_manager(&req.requester.user, uid);
        req.requester.operator = self.state.config.is_operator(&req.requester.user, uid);
        // The jobs this request has reached so far. One request may hold several actions on
        // one job (`qdel 5.1 5.3`): every one of them applies, although the first marks the
        // job as having absorbed the request (a record that had absorbed it before, read back
        // after a restart, skips them all).
        let mut absorbing: HashSet<JobId> = HashSet::new();
        for action in &req.actions {
            let Some(id) = action.job() else {
                let (instances, change) = match action {
                    RequestAction::QueueState {
                        instances,
                        disabled,
                    } => (instances, InstanceChange::Disable(*disabled)),
                    RequestAction::QueueSuspend {
                        instances,
                        suspended,
                    } => (instances, InstanceChange::Suspend(*suspended)),
                    RequestAction::QueueClearError { instances } => {
                        (instances, InstanceChange::ClearError)
                    }
                    RequestAction::ConfigEdit {
                        base,
                        text,
                        expires,
                    } => {
                        self.config_edit(&req, base, text, *expires);
                        continue;
                    }
                    RequestAction::StartPeTask(asked) => {
                        self.start_pe_task(&req, asked);
                        continue;
                    }
                    RequestAction::DeleteAr { ar, force } => {
                        self.qrdel(&req.requester, *ar, *force);
                        continue;
                    }
                    RequestAction::ReloadConfig => {
                        if req.requester.manager {
                            info!(user = %req.requester.user, "qconf changed the configuration: reloading it");
                            self.reload_needed = true;
                        } else {
                            warn!(user = %req.requester.user, "reload asked by a user who is not a manager: ignored");
                        }
                        continue;
                    }
                    _ => continue,
                };
                self.change_instances(&req.requester, instances, change);
                continue;
            };
            let Some(job) = self.state.job_mut(id) else {
                debug!(job = %id, seq = req.seq, "request for a job that is gone");
                continue;
            };
            if job.applied_request >= req.seq && !absorbing.contains(&id) {
                continue;
            }
            absorbing.insert(id);
            if let RequestAction::Reschedule { tasks, force, .. } = action {
                job.applied_request = req.seq;
                self.reschedule(&req.requester, id, tasks, *force);
                continue;
            }
            // `qdel -f` takes running tasks out of the record: what they were is needed for
            // their accounting records.
            let running_before = job.tasks.running.clone();
            let outcome = Request::apply(action, &req.requester, job);
            job.applied_request = req.seq;
            match outcome {
                Err(denied) => {
                    info!(job = %id, seq = req.seq, user = %req.requester.user, "request denied: {denied}");
                    self.state.mark_dirty(id);
                }
                Ok(Outcome::Delete(d)) => {
                    self.carry_out_delete(id, d, &req.requester, &running_before);
                }
                Ok(Outcome::Qmod(events)) => {
                    info!(job = %id, user = %req.requester.user, "qmod applied: {events:?}");
                    // A cleared error makes the job a candidate again.
                    self.state.job_changed(id);
                    self.suspended(id, &events);
                }
                Ok(o) => {
                    info!(job = %id, user = %req.requester.user, "request applied: {o:?}");
                    self.state.job_changed(id);
                }
            }
        }
        self.pass_needed = true;
    }

    /// Carries out what `qdel` (or the end of an advance reservation) did to job `id`'s
    /// record: mail, tasks forced out accounted, the job retired or its tasks killed.
    pub(super) fn carry_out_delete(
        &mut self,
        id: JobId,
        d: crate::model::DeleteOutcome,
        requester: &crate::model::Requester,
        running_before: &[crate::model::RunningTask],
    ) {
        let req_user = &requester.user;
        let Some(job) = self.state.job(id) else {
            return;
        };
        let job = job.into_owned();
        info!(job = %id, user = %req_user, pending = %d.pending, "deleted");
        let notify = job.spec.notify;
        let finished = job.tasks.finished;
        let kill_mail = mail::wanted(&job, MailEvent::Abort).then(|| {
            let m = mail::killed(&job, req_user, &requester.host);
            (mail::recipients(&job), m)
        });
        let mut victims = Vec::new();
        let mut forced = Vec::new();
        for (t, how) in &d.running {
            match how {
                RunningDeletion::Registered => victims.push(*t),
                // `qdel -f` by a manager took the task out of the record: its
                // slots are free now, and what is left of it is killed.
                RunningDeletion::Forced => {
                    victims.push(*t);
                    forced.push(*t);
                }
                RunningDeletion::AlreadyDeleting => {}
            }
        }
        for t in forced {
            self.state.forget_running(id, t);
            if let Some(ran) = running_before.iter().find(|r| r.task == t) {
                self.forced_end(id, ran);
            }
        }
        if d.gone && finished == 0 && victims.is_empty() {
            self.state.remove_job(id);
            self.retire_at.remove(&id);
            if let Err(e) = self.spool.remove_job(id) {
                error!(job = %id, "cannot remove job files: {e}");
            }
            self.index.forget(id);
        } else {
            self.state.job_changed(id);
            if d.gone {
                self.retire_at
                    .insert(id, now() + self.opts.retention.as_secs() as i64);
            }
        }
        if !victims.is_empty()
            && let Some((to, m)) = kill_mail
        {
            self.mailer.send(&to, &m);
        }
        for t in victims {
            info!(job = %id, task = t, user = %req_user, "killing task (qdel)");
            if let Err(e) = self.runner.kill(id, t, notify) {
                warn!(job = %id, task = t, "kill: {e}");
            }
        }
    }
}
