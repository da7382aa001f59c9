//! Advance reservations (`sched::ar`): submissions decided as they arrive (granted or
//! refused, the answer `qrsub` waits for in `ars/<id>.state`), reservations read back at a
//! restart or a shadow's takeover, their starts written, their ends and `qrdel` carried
//! out (their jobs deleted as `qdel` deletes them, the reservation's files removed).

use super::{Daemon, now};
use crate::mail::ArMailEvent;
use crate::model::{ArRecord, Outcome, Request, RequestAction, Requester, TaskSelector};
use tracing::{error, info, warn};

/// How long a refusal stays in `ars/` for `qrsub` to read it.
const REFUSAL_KEPT: i64 = 60;

impl Daemon {
    /// At start: every reservation of the spool held again, every undecided submission
    /// decided (after the jobs are loaded, so that their running tasks count).
    pub(super) fn recover_ars(&mut self) {
        let scan = match self.spool.scan_ars() {
            Ok(s) => s,
            Err(e) => {
                error!("cannot read the advance reservations: {e}");
                return;
            }
        };
        for p in scan.problems {
            self.quarantine_ar_file(&p.path, &p.reason);
        }
        let t = now();
        for r in scan.records {
            match &r.refused {
                Some(_) => {
                    self.ar_refusals
                        .insert(r.id(), r.submission.submission_time + REFUSAL_KEPT);
                }
                None => {
                    info!(
                        ar = r.id(),
                        state = r.state.letter(),
                        "advance reservation recovered"
                    );
                    self.state.restore_ar(r);
                }
            }
        }
        for (sub, owner) in scan.undecided {
            self.decide_ar(sub, owner, t);
        }
    }

    fn quarantine_ar_file(&self, path: &std::path::Path, reason: &str) {
        warn!("{}: {reason}: quarantined", path.display());
        if let Err(e) = self.spool.quarantine(path, reason) {
            error!("cannot quarantine {}: {e}", path.display());
        }
    }

    /// A submission that appeared in `ars/` (a watcher event, a rescan).
    pub(super) fn load_ar(&mut self, id: u32) {
        if self.state.ar(id).is_some() || self.ar_refusals.contains_key(&id) {
            return;
        }
        if self.spool.ar_state_file(id).exists() {
            return;
        }
        match self.spool.read_ar_submission(id) {
            Ok((sub, owner)) => self.decide_ar(sub, owner, now()),
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                self.quarantine_ar_file(&self.spool.ar_submission_file(id), &e.to_string());
            }
        }
    }

    /// Grants or refuses one submission and writes the answer.
    fn decide_ar(&mut self, mut sub: crate::model::ArSubmission, owner: u32, t: i64) {
        let id = sub.id;
        if owner != sub.owner.uid {
            self.quarantine_ar_file(
                &self.spool.ar_submission_file(id),
                &format!(
                    "foreign advance reservation: file owned by uid {owner} but submitted as uid {}",
                    sub.owner.uid
                ),
            );
            return;
        }
        // The name, and the group `arusers` is checked with, are the kernel's, never the
        // file's.
        let mut group = String::new();
        if let Ok(Some(u)) = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(owner)) {
            if let Ok(c) = crate::identity::Caller::for_ids(owner, u.gid.as_raw()) {
                group = c.group;
            }
            sub.owner.user = u.name;
        }
        let permitted =
            crate::compat::ar::may_reserve(&self.state.config, &sub.owner.user, &group, owner);
        let record = match permitted {
            Err(why) => ArRecord {
                v: crate::model::AR_SCHEMA_VERSION,
                submission: sub,
                state: crate::model::ArState::Deleted,
                granted: Vec::new(),
                granted_pe: None,
                refused: Some(why),
                messages: Vec::new(),
            },
            Ok(()) => self.state.decide_ar(sub, t),
        };
        match &record.refused {
            Some(why) => {
                info!(ar = id, "advance reservation refused: {why}");
                self.ar_refusals.insert(id, t + REFUSAL_KEPT);
            }
            None => {
                info!(
                    ar = id,
                    state = record.state.letter(),
                    "advance reservation granted"
                );
                self.pass_needed = true;
                self.full_pass = true;
            }
        }
        if let Err(e) = self.spool.write_ar_state(&record) {
            error!(ar = id, "cannot write the advance reservation: {e}");
            if !self.spool.ar_state_file(id).exists() {
                // Not durable: not granted either; the next rescan decides again.
                self.state.remove_ar(id);
                self.ar_refusals.remove(&id);
            }
        }
    }

    /// Before a pass: reservations whose start came are written as running; those whose
    /// end came are over, their jobs deleted (SGE kills them at the end); refusals read
    /// long enough ago go.
    pub(super) fn advance_ars(&mut self) {
        let t = now();
        let (started, ended) = self.state.ar_transitions(t);
        for (before, r) in started {
            info!(
                ar = r.id(),
                state = r.state.letter(),
                "advance reservation changed state"
            );
            use crate::model::ArState::{Error, Running, Waiting, Warning};
            match (before, r.state) {
                (Waiting | Warning, Running) => self.mail_ar(&r, ArMailEvent::Started),
                (Waiting | Warning, Error) => {
                    self.mail_ar(&r, ArMailEvent::Started);
                    self.mail_ar(&r, ArMailEvent::Error { at: t });
                }
                (Running, Error) => self.mail_ar(&r, ArMailEvent::Error { at: t }),
                (Error, Running) => self.mail_ar(&r, ArMailEvent::Resolved { at: t }),
                _ => {}
            }
            if let Err(e) = self.spool.write_ar_state(&r) {
                error!(ar = r.id(), "cannot write the advance reservation: {e}");
            }
        }
        for id in ended {
            info!(ar = id, "advance reservation ended");
            if let Some(r) = self.state.ar(id).cloned() {
                self.mail_ar(&r, ArMailEvent::Finished);
            }
            self.end_ar(id, &Self::system_requester(), false);
        }
        let due: Vec<u32> = self
            .ar_refusals
            .iter()
            .filter(|(_, at)| **at <= t)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.ar_refusals.remove(&id);
            if let Err(e) = self.spool.remove_ar(id) {
                error!(
                    ar = id,
                    "cannot remove the advance reservation's files: {e}"
                );
            }
        }
    }

    /// `sched_d` itself, for what the end of a reservation does to its jobs.
    fn system_requester() -> Requester {
        Requester {
            uid: 0,
            user: "root".into(),
            host: crate::identity::short_hostname(),
            manager: true,
            operator: true,
        }
    }

    /// `qrdel`: the owner, an operator or a manager ends the reservation.
    pub(super) fn qrdel(&mut self, who: &Requester, id: u32, force: bool) {
        let Some(r) = self.state.ar(id) else {
            info!(ar = id, user = %who.user, "qrdel of an advance reservation that does not exist");
            return;
        };
        if r.submission.owner.uid != who.uid && !who.is_operator() {
            info!(ar = id, user = %who.user, "qrdel refused: not the owner");
            return;
        }
        info!(ar = id, user = %who.user, "advance reservation deleted (qrdel)");
        let r = r.clone();
        self.mail_ar(&r, ArMailEvent::Deleted { at: now() });
        self.end_ar(id, who, force);
    }

    /// `qrsub -m`/`-M`: the mail SGE sends at a reservation's start, end or deletion.
    fn mail_ar(&self, r: &ArRecord, event: ArMailEvent) {
        if let Some((to, mail)) = crate::mail::advance_reservation(r, event) {
            self.mailer.send(&to, &mail);
        }
    }

    /// Deletes the reservation's jobs as `who` would with `qdel`, then the reservation.
    fn end_ar(&mut self, id: u32, who: &Requester, force: bool) {
        for job in self.state.jobs_in_ar(id) {
            let Some(rec) = self.state.job_mut(job) else {
                continue;
            };
            let running_before = rec.tasks.running.clone();
            let action = RequestAction::Delete {
                job,
                tasks: TaskSelector::All,
                force: force && who.manager,
            };
            match Request::apply(&action, who, rec) {
                Ok(Outcome::Delete(d)) => self.carry_out_delete(job, d, who, &running_before),
                Ok(_) => {}
                Err(denied) => {
                    info!(job = %job, ar = id, "not deleted with its reservation: {denied}")
                }
            }
        }
        self.state.remove_ar(id);
        if let Err(e) = self.spool.remove_ar(id) {
            error!(
                ar = id,
                "cannot remove the advance reservation's files: {e}"
            );
        }
        self.pass_needed = true;
        self.full_pass = true;
    }
}
