//! Advance reservations in the scheduler (`sge_ar(5)`): a reservation is granted only if
//! what it asks for is free for its whole window, given the running tasks' expected ends
//! (`h_rt`, else `default_duration`) and the other reservations; once granted, no other
//! job takes that capacity during the window, and the jobs bound to it (`qsub -ar`) run
//! only inside it, only while it is open.
//!
//! How the pass sees them: a reservation is a booking ([`Booking`]: slots per queue
//! instance, consumables, PE slots) that is put on the cluster before each fit of a job
//! whose run `[now, now + duration)` overlaps its window ([`SchedState::ar_window`]), and
//! taken off at the end of the pass. A job without a known run time overlaps every
//! reservation to come, as SGE plans it. Jobs bound to a reservation do not book the
//! cluster: they are fitted against a copy of the cluster cut down to what the
//! reservation holds, minus what its other running jobs use ([`SchedState::ar_view`]).

use super::cluster::{Booking, Cluster, Demand, Level};
use super::fit::{self, FitQuery};
use super::state::SchedState;
use crate::model::{
    ArGrant, ArRecord, ArState, ArSubmission, JobId, JobSpec, PeRequest, SlotRange, TaskId,
};
use std::collections::{BTreeMap, HashMap};

/// SGE's refusal when no queue can hold the reservation (`qrsub` prints it).
pub const NO_SUITABLE_QUEUES: &str = "advance_reservation: no suitable queues";

/// A reservation the scheduler knows, with what it holds resolved against the cluster.
#[derive(Debug, Clone)]
pub struct ArHold {
    pub record: ArRecord,
    pub booking: Booking,
    /// Whether `booking` is on the cluster now (within a pass).
    booked: bool,
}

/// The advance reservations of a [`SchedState`], and the tasks running in them.
#[derive(Debug, Clone, Default)]
pub struct ArBook {
    pub holds: BTreeMap<u32, ArHold>,
    /// What each running task bound to a reservation uses of it.
    pub(crate) used: BTreeMap<(JobId, TaskId), (u32, Booking)>,
}

/// The job spec the reservation's request stands for: its `-l`, `-q` and `-pe`.
fn spec_of(sub: &ArSubmission) -> JobSpec {
    JobSpec {
        hard_resources: sub.resources.clone(),
        hard_queues: sub.queues.clone(),
        pe: sub.pe.as_ref().map(|p| PeRequest {
            name: p.name.clone(),
            range: SlotRange {
                min: sub.slots(),
                max: sub.slots(),
            },
        }),
        ..JobSpec::default()
    }
}

impl SchedState {
    /// Decides on a submitted reservation at `now`: granted (and held from then on) when
    /// its request fits for its whole window, else refused with SGE's message.
    pub fn decide_ar(&mut self, sub: ArSubmission, now: i64) -> ArRecord {
        let refused = |sub: ArSubmission, why: &str| ArRecord {
            v: crate::model::AR_SCHEMA_VERSION,
            submission: sub,
            state: ArState::Deleted,
            granted: Vec::new(),
            granted_pe: None,
            refused: Some(why.to_string()),
            messages: Vec::new(),
        };
        if sub.end <= now || sub.end <= sub.start {
            return refused(sub, NO_SUITABLE_QUEUES);
        }
        let Some((booking, placement)) = self.fit_window(&sub, now) else {
            return refused(sub, NO_SUITABLE_QUEUES);
        };
        let record = ArRecord {
            v: crate::model::AR_SCHEMA_VERSION,
            state: if sub.start <= now {
                ArState::Running
            } else {
                ArState::Waiting
            },
            granted: placement
                .granted
                .iter()
                .map(|(host, queue, slots)| ArGrant {
                    queue: queue.clone(),
                    host: host.clone(),
                    slots: *slots,
                })
                .collect(),
            granted_pe: placement.pe.clone(),
            submission: sub,
            refused: None,
            messages: Vec::new(),
        };
        self.ars.holds.insert(
            record.id(),
            ArHold {
                record: record.clone(),
                booking,
                booked: false,
            },
        );
        self.invalidate_order();
        record
    }

    /// Where the request fits for its whole window, on a copy of the cluster that holds
    /// what will still run at its start and every other reservation overlapping it.
    fn fit_window(
        &self,
        sub: &ArSubmission,
        now: i64,
    ) -> Option<(Booking, crate::model::Placement)> {
        let spec = spec_of(sub);
        let demand = Demand::build(&self.cluster, &self.config, &spec).ok()?;
        // `-now y`: only queues of type INTERACTIVE (`qrsub(1)`).
        let interactive = |qi: usize| {
            !sub.now
                || self
                    .config
                    .queue(&self.cluster.qis[qi].queue)
                    .is_some_and(|q| q.qtype.to_ascii_uppercase().contains("INTERACTIVE"))
        };
        let candidates: Vec<usize> = (0..self.cluster.qis.len())
            .filter(|&qi| demand.static_fit(&self.cluster, qi).is_ok() && interactive(qi))
            .collect();
        let mut c = self.cluster.clone();
        c.clear_reservations();
        // Everything booked now is a running task outside reservations (reservations are
        // on the cluster only within a pass). One expected to end by the start frees its
        // share for the window; one without a known end never does.
        for b in self.running.values() {
            if b.expected_end <= sub.start {
                c.release(&b.booking);
            }
        }
        for h in self.ars.holds.values() {
            if h.record.holds()
                && h.record.submission.start < sub.end
                && h.record.submission.end > sub.start
            {
                c.book(&h.booking);
            }
        }
        let f = fit::fit(
            &c,
            &FitQuery {
                demand: &demand,
                candidates: &candidates,
                cursor: 0,
                now: now.max(sub.start),
                end: i64::MAX,
                ignore_availability: false,
                // Quotas bound jobs, not reservations: `tests/compat/DIVERGENCES.md`.
                owner: None,
            },
        )
        .ok()?;
        Some((f.booking, f.placement))
    }

    /// Puts on the cluster exactly the reservations whose window overlaps a run of
    /// `[now, end)`, so that the fit that follows leaves them alone.
    pub(crate) fn ar_window(&mut self, now: i64, end: i64) {
        if self.ars.holds.is_empty() {
            return;
        }
        for h in self.ars.holds.values_mut() {
            let s = &h.record.submission;
            let overlaps = h.record.holds() && s.start < end && s.end > now;
            if overlaps && !h.booked {
                self.cluster.book(&h.booking);
                h.booked = true;
            } else if !overlaps && h.booked {
                self.cluster.release(&h.booking);
                h.booked = false;
            }
        }
    }

    /// Takes every reservation off the cluster (the end of a pass).
    pub(crate) fn ar_window_clear(&mut self) {
        for h in self.ars.holds.values_mut() {
            if h.booked {
                self.cluster.release(&h.booking);
                h.booked = false;
            }
        }
    }

    /// Whether reservations may change a fit's verdict by the run time of the job (then
    /// fits of one shape do not stand for each other).
    pub(crate) fn has_ars(&self) -> bool {
        !self.ars.holds.is_empty()
    }

    /// A copy of the cluster that offers only what reservation `ar` holds, less what its
    /// running jobs use: what a job bound to it is fitted against.
    pub(crate) fn ar_view(&self, ar: u32) -> Option<Cluster> {
        let hold = self.ars.holds.get(&ar)?;
        let mut c = self.cluster.clone();
        c.clear_reservations();
        for q in c.qis.iter_mut() {
            q.slots_cap = 0;
            q.slots_used = 0;
            q.consumables.cap.clear();
            q.consumables.used.clear();
        }
        for h in c.hosts.iter_mut() {
            h.slots_cap = 0;
            h.slots_used = 0;
            h.consumables.cap.clear();
            h.consumables.used.clear();
            // Reserved is reserved: the host's state decides nothing more here.
            h.down_until = None;
            h.unknown = false;
        }
        c.global.cap.clear();
        c.global.used.clear();
        for p in c.pes.iter_mut() {
            p.slots_cap = 0;
            p.slots_used = 0;
        }
        for &(qi, n) in &hold.booking.slots {
            c.qis[qi].slots_cap += n;
            let host = c.qis[qi].host;
            c.hosts[host].slots_cap += n;
        }
        for (level, name, amount) in &hold.booking.consumables {
            let pool = match *level {
                Level::Global => &mut c.global,
                Level::Host(h) => &mut c.hosts[h].consumables,
                Level::Queue(q) => &mut c.qis[q].consumables,
            };
            *pool.cap.entry(name.clone()).or_insert(0.0) += amount;
        }
        if let Some((pe, n)) = hold.booking.pe {
            c.pes[pe].slots_cap = n;
        }
        c.reindex();
        for (owner, b) in self.ars.used.values() {
            if *owner == ar {
                c.book(b);
            }
        }
        Some(c)
    }

    /// The reservations whose state changes by `now` (a start reached: `r`; an end
    /// reached: gone; a held queue instance disabled, in error or on a host gone unknown:
    /// `W` while waiting, `E` while running, as SGE's `sge_ar_state_set_waiting/running`),
    /// with the state each had before. Returns the records that changed and the ids of
    /// those that ended.
    pub fn ar_transitions(&mut self, now: i64) -> (Vec<(ArState, ArRecord)>, Vec<u32>) {
        let mut changed = Vec::new();
        let mut ended = Vec::new();
        let troubles: HashMap<u32, Vec<String>> = self
            .ars
            .holds
            .iter()
            .map(|(id, h)| (*id, self.ar_troubles(&h.record)))
            .collect();
        for (id, h) in self.ars.holds.iter_mut() {
            if h.record.submission.end <= now {
                h.record.state = ArState::Exited;
                ended.push(*id);
                continue;
            }
            let messages = troubles.get(id).cloned().unwrap_or_default();
            let open = h.record.submission.start <= now;
            let state = match (open, messages.is_empty()) {
                (false, true) => ArState::Waiting,
                (false, false) => ArState::Warning,
                (true, true) => ArState::Running,
                (true, false) => ArState::Error,
            };
            if state != h.record.state || messages != h.record.messages {
                let before = h.record.state;
                h.record.state = state;
                h.record.messages = messages;
                changed.push((before, h.record.clone()));
            }
        }
        if !ended.is_empty() || !changed.is_empty() {
            self.invalidate_order();
        }
        (changed, ended)
    }

    /// SGE's messages for the reserved queue instances that cannot run its jobs now.
    fn ar_troubles(&self, r: &ArRecord) -> Vec<String> {
        let mut out = Vec::new();
        for g in &r.granted {
            let name = g.instance();
            let unknown = self
                .cluster
                .host_index(&g.host)
                .is_none_or(|h| self.cluster.hosts[h].unknown);
            let configured = self.configured_disabled(&name);
            for (bad, what) in [
                (
                    self.instance_states.is_disabled(&name, configured),
                    "disabled",
                ),
                (unknown, "unknown"),
                (self.instance_states.errors.contains_key(&name), "error"),
            ] {
                if bad {
                    out.push(format!("reserved queue {name} is {what}"));
                }
            }
        }
        out
    }

    /// The next start or end of a reservation after `now`: the pass's wake-up.
    pub fn ar_next_change(&self, now: i64) -> Option<i64> {
        self.ars
            .holds
            .values()
            .flat_map(|h| [h.record.submission.start, h.record.submission.end])
            .filter(|&t| t > now)
            .min()
    }

    /// Forgets a reservation (ended or deleted); its jobs are the daemon's to delete.
    pub fn remove_ar(&mut self, id: u32) -> Option<ArRecord> {
        let mut h = self.ars.holds.remove(&id)?;
        if h.booked {
            self.cluster.release(&h.booking);
            h.booked = false;
        }
        self.invalidate_order();
        Some(h.record)
    }

    /// Takes back a reservation read from the spool (a restart, a shadow's takeover): what
    /// it was granted is booked again by name.
    pub fn restore_ar(&mut self, record: ArRecord) {
        if !record.holds() {
            return;
        }
        let spec = spec_of(&record.submission);
        let grant: Vec<(usize, u32)> = record
            .granted
            .iter()
            .filter_map(|g| {
                self.cluster
                    .qi_index(&g.queue, &g.host)
                    .map(|qi| (qi, g.slots))
            })
            .collect();
        let total: u32 = grant.iter().map(|(_, n)| n).sum();
        let pe = record
            .granted_pe
            .as_ref()
            .and_then(|name| self.cluster.pes.iter().position(|p| &p.name == name))
            .map(|i| (i, total));
        let booking = match Demand::build(&self.cluster, &self.config, &spec) {
            Ok(d) => fit::booking(&self.cluster, &d, &grant, pe),
            Err(_) => Booking {
                slots: grant,
                consumables: Vec::new(),
                pe,
                quota: Vec::new(),
            },
        };
        self.ars.holds.insert(
            record.id(),
            ArHold {
                record,
                booking,
                booked: false,
            },
        );
        self.invalidate_order();
    }

    /// The reservation `id`, if the scheduler holds it.
    pub fn ar(&self, id: u32) -> Option<&ArRecord> {
        self.ars.holds.get(&id).map(|h| &h.record)
    }

    /// Every reservation the scheduler holds.
    pub fn ar_records(&self) -> impl Iterator<Item = &ArRecord> {
        self.ars.holds.values().map(|h| &h.record)
    }

    /// The jobs bound to reservation `id`.
    pub fn jobs_in_ar(&self, id: u32) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|(_, e)| e.record.get().is_some_and(|r| r.spec.ar == Some(id)))
            .map(|(j, _)| *j)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ArOwner, ResourceRequest};
    use crate::sched::tests::{NOW, config, job};

    fn sub(id: u32, start: i64, end: i64, slots: u32) -> ArSubmission {
        ArSubmission {
            v: 1,
            id,
            name: None,
            owner: ArOwner {
                uid: 1001,
                user: "alice".into(),
                gid: 1001,
                group: "alice".into(),
                host: "n1".into(),
            },
            submission_time: NOW,
            start,
            end,
            account: None,
            resources: Vec::new(),
            pe: (slots > 1).then(|| PeRequest {
                name: "smp".into(),
                range: SlotRange {
                    min: slots,
                    max: slots,
                },
            }),
            queues: Vec::new(),
            master_queues: Vec::new(),
            users: Vec::new(),
            mail_options: String::new(),
            mail_list: Vec::new(),
            now: false,
        }
    }

    fn h_rt(secs: &str) -> impl FnOnce(&mut JobSpec, &mut crate::model::Holds) {
        let value = secs.to_string();
        move |s, _| {
            s.hard_resources.push(ResourceRequest {
                name: "h_rt".into(),
                value,
            })
        }
    }

    /// Reservations are granted while the window has room, given each other and the
    /// running tasks' expected ends; a task without a known end never frees its slot.
    #[test]
    fn a_reservation_is_granted_only_when_its_whole_window_has_room() {
        let mut st = SchedState::new(config(1, 2, ""));
        // A task ending at NOW + 50 (h_rt) and one with no known end.
        assert!(st.add_job(job(1, h_rt("50"))));
        assert!(st.add_job(job(2, |_, _| {})));
        assert_eq!(st.schedule(NOW).starts.len(), 2);
        // Both slots after NOW + 50: one is never free.
        let r = st.decide_ar(sub(1, NOW + 60, NOW + 100, 2), NOW);
        assert_eq!(r.refused.as_deref(), Some(NO_SUITABLE_QUEUES));
        let r = st.decide_ar(sub(2, NOW + 60, NOW + 100, 1), NOW);
        assert!(r.refused.is_none(), "{r:?}");
        assert_eq!(r.state, ArState::Waiting);
        assert_eq!(r.granted[0].slots, 1);
        // That slot is taken over [60, 100): an overlapping one is refused, a later one not.
        let r = st.decide_ar(sub(3, NOW + 90, NOW + 120, 1), NOW);
        assert!(r.refused.is_some());
        let r = st.decide_ar(sub(4, NOW + 100, NOW + 120, 1), NOW);
        assert!(r.refused.is_none());
        // Before the running task's end, no slot at all.
        let r = st.decide_ar(sub(5, NOW + 10, NOW + 20, 1), NOW);
        assert!(r.refused.is_some());
    }

    /// `-now y` reserves only queues of type INTERACTIVE.
    #[test]
    fn now_y_reserves_only_interactive_queues() {
        let mut config = config(1, 2, "");
        config.queues[0].qtype = "BATCH".into();
        let mut st = SchedState::new(config);
        let mut batch_only = sub(1, NOW + 10, NOW + 20, 1);
        batch_only.now = true;
        assert!(st.decide_ar(batch_only, NOW).refused.is_some());
        assert!(
            st.decide_ar(sub(2, NOW + 10, NOW + 20, 1), NOW)
                .refused
                .is_none()
        );
    }

    /// A job whose run would overlap a reservation does not take its slot; one that ends
    /// before its start does; the reservation's own job waits for its start, then runs.
    #[test]
    fn the_pass_plans_around_a_reservation_and_its_job_waits_for_its_start() {
        let mut st = SchedState::new(config(1, 1, ""));
        let r = st.decide_ar(sub(1, NOW + 100, NOW + 200, 1), NOW);
        assert!(r.refused.is_none());
        assert!(st.add_job(job(1, |_, _| {})));
        assert!(st.add_job(job(2, |s, _| s.ar = Some(1))));
        let pass = st.schedule(NOW);
        assert!(pass.starts.is_empty(), "{:?}", pass.starts);
        assert_eq!(pass.next_wakeup, Some(NOW + 100));
        // A short job fits before the window.
        assert!(st.add_job(job(3, h_rt("60"))));
        let pass = st.schedule(NOW);
        assert_eq!(pass.starts.len(), 1);
        assert_eq!(pass.starts[0].job, JobId(3));
        // At the start the reservation's job runs in it (job 3 still holds the cluster's
        // slot: the reservation's capacity is its own), and job 1 still waits.
        let (started, ended) = st.ar_transitions(NOW + 100);
        assert_eq!((started.len(), ended.len()), (1, 0));
        let pass = st.schedule(NOW + 100);
        let ids: Vec<JobId> = pass.starts.iter().map(|s| s.job).collect();
        assert_eq!(ids, vec![JobId(2)]);
        assert_eq!(st.ar_transitions(NOW + 200).1, vec![1]);
        assert!(st.remove_ar(1).is_some());
        assert!(st.ars.holds.is_empty());
    }

    /// A held queue instance disabled by `qmod -d` puts a waiting reservation in `W` with
    /// SGE's message, and in `E` once its window opens; enabled again, it is `r`.
    #[test]
    fn a_disabled_reserved_instance_puts_the_reservation_in_warning_then_error() {
        let mut st = SchedState::new(config(1, 1, ""));
        let r = st.decide_ar(sub(1, NOW + 100, NOW + 200, 1), NOW);
        assert!(r.refused.is_none());
        let instance = r.granted[0].instance();
        assert!(st.set_instance_disabled(&instance, true));
        let (changed, _) = st.ar_transitions(NOW);
        assert_eq!(changed.len(), 1);
        let (before, now) = &changed[0];
        assert_eq!((*before, now.state), (ArState::Waiting, ArState::Warning));
        assert_eq!(
            now.messages,
            [format!("reserved queue {instance} is disabled")]
        );
        let (changed, _) = st.ar_transitions(NOW + 100);
        assert_eq!(changed[0].1.state, ArState::Error);
        assert!(st.set_instance_disabled(&instance, false));
        let (changed, _) = st.ar_transitions(NOW + 101);
        assert_eq!(
            (changed[0].0, changed[0].1.state),
            (ArState::Error, ArState::Running)
        );
        assert!(changed[0].1.messages.is_empty());
        assert!(st.ar_transitions(NOW + 102).0.is_empty());
    }
}
