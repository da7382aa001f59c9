//! The Armada `armada` policy in the pass (seed `armada-fair-share.txt`).
//!
//! A *queue* is the job's project, or its owner when it has no project. A queue's usage is
//! the cpu units its running tasks hold, through [`ResourceFactors`] from the cluster's totals
//! (gridspool's scheduler resource is the slot, so one slot is one cpu unit). Each pass:
//!
//! 1. decays every queue's priority toward its usage with `scheduler.armada.halftime`
//!    ([`armada::update_priority`]: `new = β·old + (1−β)·usage`, see docs/policies.md);
//! 2. effective priority = max(priority, 0.5) × `priority_factors[queue]`;
//! 3. lays out each queue's pending tasks in (priority, job id) order and runs one
//!    [`armada::allocation_round`] over the free slots with a [`SplitMix64`] seeded from
//!    `scheduler.armada.seed` (the pass clock when unset), or [`armada::drf_round`] in
//!    `mode: drf`;
//! 4. dispatches the allocated tasks in allocation order through the real fit, one task per
//!    allocation; then, if slots are still free (an allocation did not fit the real cluster),
//!    the remaining candidates in order, so no slot idles while work that fits waits.
//!
//! Jobs held back because their queue's slice is used up get the reason and the terms
//! `queue`, `share`, `effective priority` in `qstat -j`.
//!
//! Cost: O(candidates + free slots × queues) on top of the sort.

use super::pass::{Candidate, PassReasons, PassResult, Verdicts};
use super::rows::NO_QUEUE;
use super::state::SchedState;
use crate::config::ArmadaMode;
use crate::model::JobId;
use gridspool_policy::armada::{
    self, ArmadaJob, DEFAULT_MIN_PRIORITY, DrfQueue, Halftime, ResourceFactors, RoundConfig,
};
use gridspool_policy::rng::SplitMix64;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The evolving part of the policy: decayed priorities per queue, kept by the daemon in
/// `daemon/armada.json` so that a restart does not forget who used the cluster.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ArmadaState {
    pub v: u32,
    pub priorities: BTreeMap<String, f64>,
    pub last_update: Option<i64>,
    /// Each queue's usage (slots held) since `last_update`: what the next pass decays the
    /// priorities toward, over the time gone by. The usage found at that pass would be
    /// wrong after a quiet while: the tasks that ended just before it held their slots all
    /// along.
    pub usage: BTreeMap<String, f64>,
    /// Passes run (mixed into the seed so successive passes draw differently).
    pub passes: u64,
    /// When it was last written (seconds since the epoch; not saved).
    #[serde(skip)]
    saved_at: Option<i64>,
}

/// The file the daemon keeps [`ArmadaState`] in, under `daemon/`.
pub const ARMADA_FILE: &str = "armada.json";

/// The priorities change at every pass (they decay continuously); writing them at most this
/// often keeps a pass free of an fsync. A crash loses at most this much decay, which the
/// halftime-scale priorities do not notice.
pub const ARMADA_SAVE_INTERVAL_SECS: i64 = 60;

impl ArmadaState {
    /// Reads `daemon/armada.json`; missing or unreadable is a fresh start (every queue at
    /// priority 0, as a new Armada cluster).
    pub fn load(daemon_dir: &std::path::Path) -> Option<Self> {
        super::policy_files::load(daemon_dir, ARMADA_FILE)
    }

    /// Writes `daemon/armada.json` atomically when it has changed and was last written at
    /// least [`ARMADA_SAVE_INTERVAL_SECS`] ago, or always with `force` (the daemon stopping).
    pub fn save_if_due(
        &mut self,
        daemon_dir: &std::path::Path,
        now: i64,
        force: bool,
    ) -> Result<(), crate::spool::SpoolError> {
        let changed = self.last_update.is_some();
        let due = self
            .saved_at
            .is_none_or(|t| now - t >= ARMADA_SAVE_INTERVAL_SECS);
        if !changed || !(due || force) {
            return Ok(());
        }
        self.v = 1;
        super::policy_files::save(daemon_dir, ARMADA_FILE, self)?;
        self.saved_at = Some(now);
        Ok(())
    }
}

impl SchedState {
    /// The Armada priorities, for the daemon to persist.
    pub fn armada_state_mut(&mut self) -> &mut ArmadaState {
        &mut self.armada
    }

    /// Restores the Armada priorities read back from the spool.
    pub fn set_armada_state(&mut self, state: ArmadaState) {
        self.armada = state;
    }

    /// Dispatch under the `armada` policy (see the module documentation).
    pub(super) fn dispatch_armada(
        &mut self,
        cands: &[Candidate],
        job_reasons: &mut PassReasons,
        now: i64,
        durations: &[Option<i64>],
        result: &mut PassResult,
    ) {
        let aconf = self.config.scheduler.armada.clone();
        // 1. Usage per queue from the running tasks, and priorities decayed toward the
        // usage since the last pass.
        let (usage_of, _) = self.armada_usage();
        let total_slots: f64 = self
            .cluster
            .hosts
            .iter()
            .map(|h| f64::from(h.slots_cap))
            .sum();
        let free_slots = self.cluster.free_slots(now);
        let Ok(factors) = ResourceFactors::from_totals(&[total_slots.max(1.0)], 0) else {
            return;
        };
        let elapsed = self
            .armada
            .last_update
            .map_or(0.0, |t| (now - t).max(0) as f64);
        if let Ok(ht) = Halftime::from_secs(aconf.halftime) {
            // One decay step per pass: every queue with a priority decays toward its usage
            // (0 when it holds nothing), in place; a queue holding slots without a priority
            // yet starts from 0. A second step for a queue found in both would halve the
            // configured halftime.
            let held = std::mem::take(&mut self.armada.usage);
            let usage_by_name: HashMap<&str, f64> =
                held.iter().map(|(q, u)| (q.as_str(), *u)).collect();
            let update = |old: f64, u: f64| {
                armada::update_priority(old, factors.usage(&[u]), elapsed, ht).ok()
            };
            let priorities = &mut self.armada.priorities;
            for (q, p) in priorities.iter_mut() {
                let u = usage_by_name.get(q.as_str()).copied().unwrap_or(0.0);
                if let Some(new) = update(*p, u) {
                    *p = new;
                }
            }
            for (&q, &u) in &usage_by_name {
                if !priorities.contains_key(q)
                    && let Some(new) = update(0.0, u)
                {
                    priorities.insert(q.to_string(), new);
                }
            }
        }
        self.armada.last_update = Some(now);
        self.armada.passes += 1;

        // 2. Queues with pending work and their tasks, in candidate order. A queue is an
        // interned name (project, else owner): indexed by the name's number, not hashed, and
        // each candidate's queue kept for the terms below.
        let mut qindex: Vec<u32> = vec![NO_QUEUE; self.name_list.len()];
        // Each row's queue, for the terms below (the last pass's allocation reused).
        let mut queue_at = std::mem::take(&mut self.rows.term_queue);
        queue_at.clear();
        queue_at.resize(self.rows.len(), NO_QUEUE);
        // Each queue's interned name (its words read through `name` where needed).
        let mut qkeys: Vec<u32> = Vec::new();
        let mut qjobs: Vec<Vec<ArmadaJob>> = Vec::new();
        let mut qslots: Vec<u32> = Vec::new();
        for (i, c) in cands.iter().enumerate() {
            let key = c.project.unwrap_or(c.owner);
            if qindex.len() <= key as usize {
                qindex.resize(key as usize + 1, NO_QUEUE);
            }
            if qindex[key as usize] == NO_QUEUE {
                qindex[key as usize] = qkeys.len() as u32;
                qkeys.push(key);
                qjobs.push(Vec::new());
                qslots.push(0);
            }
            let q = qindex[key as usize] as usize;
            if let Some(slot) = queue_at.get_mut(c.pos) {
                *slot = q as u32;
            }
            // A queue never gets more than the free slots in one round (on a full cluster,
            // the usual periodic pass, no room: no category read and no division).
            if qslots[q] >= free_slots {
                continue;
            }
            let slots = self.categories[c.cat]
                .demand
                .as_ref()
                .map_or(1, |d| d.urgency_slots.max(1));
            let room = (free_slots - qslots[q]) / slots;
            let n = c.pending_tasks.min(u64::from(room)) as usize;
            for _ in 0..n {
                qjobs[q].push(ArmadaJob {
                    id: i as u64,
                    request: vec![f64::from(slots)],
                });
            }
            qslots[q] += slots * n as u32;
        }
        let factor_of = |name: &str| aconf.priority_factors.get(name).copied().unwrap_or(1.0);
        let effective: Vec<f64> = qkeys
            .iter()
            .map(|&k| {
                let n = self.name(k);
                let p = self.armada.priorities.get(n).copied().unwrap_or(0.0);
                armada::effective_priority(p.max(DEFAULT_MIN_PRIORITY), factor_of(n))
            })
            .collect();
        let shares = armada::inverse_priority_shares(&effective);

        // 3. One round.
        let refs: Vec<&[ArmadaJob]> = qjobs.iter().map(Vec::as_slice).collect();
        let available = [f64::from(free_slots)];
        let order: Vec<usize> = match aconf.mode {
            ArmadaMode::Slices => {
                let seed = aconf.seed.unwrap_or(now as u64) ^ self.armada.passes;
                let mut rng = SplitMix64::new(seed);
                let rc = RoundConfig {
                    use_probabilistic_scheduling_for_all_resources: aconf.probabilistic_for_all,
                    ..RoundConfig::default()
                };
                armada::allocation_round(&refs, &effective, &available, &factors, rc, &mut rng)
                    .map(|r| r.allocations.iter().map(|a| a.job as usize).collect())
                    .unwrap_or_default()
            }
            ArmadaMode::Drf => {
                let queues: Vec<DrfQueue<'_>> = qjobs
                    .iter()
                    .zip(&qkeys)
                    .map(|(jobs, &k)| DrfQueue {
                        usage: vec![usage_of.get(k as usize).copied().unwrap_or(0.0)],
                        weight: 1.0 / factor_of(self.name(k)).max(f64::MIN_POSITIVE),
                        jobs,
                    })
                    .collect();
                armada::drf_round(&queues, &[total_slots], &available, usize::MAX)
                    .map(|r| {
                        r.allocations
                            .iter()
                            .map(|&(q, j)| qjobs[q][j].id as usize)
                            .collect()
                    })
                    .unwrap_or_default()
            }
        };

        // 4. Dispatch the allocations, then fill what is left in order.
        let mut verdicts = Verdicts::new(self.categories.len());
        let mut reservations_left = self.config.scheduler.max_reservation;
        for &i in &order {
            let c = &cands[i];
            if verdicts[c.cat].failed.is_some() {
                continue;
            }
            self.dispatch_job(
                c,
                now,
                durations[c.cat],
                &mut verdicts,
                &mut reservations_left,
                result,
                1,
                job_reasons,
            );
        }
        let mut free_left = self.cluster.free_slots(now);
        let slice_used = job_reasons.add(Arc::from(vec![
            "cannot run in this pass: its queue's slice is used up (policy armada)".to_string(),
        ]));
        for c in cands {
            if free_left > 0 && verdicts[c.cat].failed.is_none() {
                let pending = self
                    .jobs
                    .get(&c.id)
                    .is_some_and(|e| e.hot.has_pending && e.hot.pending_unheld);
                if !pending {
                    continue;
                }
                let before = result.starts.len();
                self.dispatch_job(
                    c,
                    now,
                    durations[c.cat],
                    &mut verdicts,
                    &mut reservations_left,
                    result,
                    usize::MAX,
                    job_reasons,
                );
                free_left = free_left.saturating_sub((result.starts.len() - before) as u32);
                continue;
            }
            if job_reasons.id_at(c.pos).is_none() {
                job_reasons.give(c.pos, verdicts[c.cat].failed.unwrap_or(slice_used));
            }
        }

        // 5. Policy terms, one allocation per queue: each candidate's row refers to its
        // queue (`JobRows::term_queue`), and `JobRows::terms_of` reads them when a record is
        // written (`priority.policy_terms`); a pass writes one `u32` per row, not a
        // reference-counted pointer (the words change every pass as the priorities decay).
        // The words mostly stay the same from one pass to the next (a priority decays
        // slowly at two decimals): a queue whose words did not change keeps its allocation.
        let old_terms = std::mem::take(&mut self.rows.queue_terms);
        let old_by_name: HashMap<&str, &Arc<[(String, String)]>> = old_terms
            .iter()
            .filter_map(|t| t.first().map(|(_, n)| (n.as_str(), t)))
            .collect();
        let (mut share, mut eff) = (String::new(), String::new());
        let terms: Vec<Arc<[(String, String)]>> = qkeys
            .iter()
            .enumerate()
            .map(|(q, &k)| {
                use std::fmt::Write as _;
                let n = self.name(k);
                share.clear();
                eff.clear();
                let _ = write!(share, "{:.4}", shares[q]);
                let _ = write!(eff, "{:.2}", effective[q]);
                match old_by_name.get(n) {
                    Some(old)
                        if old.len() == 3
                            && old[0].0 == "queue"
                            && old[1].0 == "share"
                            && old[1].1 == share
                            && old[2].0 == "effective priority"
                            && old[2].1 == eff =>
                    {
                        Arc::clone(old)
                    }
                    _ => Arc::from(vec![
                        ("queue".to_string(), n.to_string()),
                        ("share".to_string(), share.clone()),
                        ("effective priority".to_string(), eff.clone()),
                    ]),
                }
            })
            .collect();
        drop(old_by_name);
        drop(old_terms);
        for t in &mut self.rows.terms {
            if t.is_some() {
                *t = None;
            }
        }
        self.rows.term_queue = queue_at;
        self.rows.queue_terms = terms;
        // The usage from now until the next pass.
        let (usage_of, used_keys) = self.armada_usage();
        self.armada.usage = used_keys
            .iter()
            .map(|&k| (self.name(k).to_string(), usage_of[k as usize]))
            .collect();
    }

    /// Slots held per Armada queue (project, else owner), indexed by the queue's interned
    /// name, and the queues that hold any. From the running bookings (thousands), not a walk
    /// over every job; gathered and sorted by job so that each job is looked up once, in id
    /// order (the map's upper levels stay in cache), not once per task at random.
    fn armada_usage(&self) -> (Vec<f64>, Vec<u32>) {
        let mut usage_of: Vec<f64> = vec![0.0; self.name_list.len()];
        let mut used_keys: Vec<u32> = Vec::new();
        let mut held: Vec<(JobId, u32)> = self
            .running
            .iter()
            .map(|(&(j, _), b)| (j, b.booking.slots.iter().map(|s| s.1).sum::<u32>().max(1)))
            .collect();
        held.sort_unstable_by_key(|&(j, _)| j);
        for tasks in held.chunk_by(|a, b| a.0 == b.0) {
            let slots: f64 = tasks.iter().map(|&(_, n)| f64::from(n)).sum();
            if let Some(e) = self.jobs.get(&tasks[0].0) {
                let k = e.hot.project.unwrap_or(e.hot.owner);
                if usage_of.len() <= k as usize {
                    usage_of.resize(k as usize + 1, 0.0);
                }
                // A job holds at least one slot: 0 means not seen yet.
                if usage_of[k as usize] == 0.0 {
                    used_keys.push(k);
                }
                usage_of[k as usize] += slots;
            }
        }
        (usage_of, used_keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The priorities survive a restart; between saves a pass writes nothing until the
    /// interval is over, and stopping writes at once.
    #[test]
    fn priorities_are_saved_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = ArmadaState::default();
        a.save_if_due(dir.path(), 100, false).expect("save");
        assert!(
            ArmadaState::load(dir.path()).is_none(),
            "nothing to save yet"
        );
        a.priorities.insert("physics".into(), 3.5);
        a.last_update = Some(100);
        a.passes = 7;
        a.save_if_due(dir.path(), 100, false).expect("save");
        let back = ArmadaState::load(dir.path()).expect("saved");
        assert_eq!(
            (
                back.priorities.get("physics"),
                back.last_update,
                back.passes
            ),
            (Some(&3.5), Some(100), 7)
        );
        a.priorities.insert("physics".into(), 2.0);
        a.save_if_due(dir.path(), 130, false).expect("save");
        let back = ArmadaState::load(dir.path()).expect("saved");
        assert_eq!(back.priorities.get("physics"), Some(&3.5), "not due yet");
        a.save_if_due(dir.path(), 131, true).expect("save");
        let back = ArmadaState::load(dir.path()).expect("saved");
        assert_eq!(back.priorities.get("physics"), Some(&2.0), "forced");
    }
}
