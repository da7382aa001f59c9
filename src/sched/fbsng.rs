//! The FBSNG `fbsng` policy in the pass (seed `fbsng-dynamic-priorities.txt`).
//!
//! - An FBSNG *queue* is a cluster queue with its `queues[].fbsng` parameters (QPmin, QPmax,
//!   QPI, QPD, QPG, SPG). A job belongs to the queue of its first candidate queue instance:
//!   the queue it is bound to with `-q`, else the first (by `seq_no`) that can take it.
//! - A *section* is one task; a job offers at most one section more per pass than the free
//!   slots can take (the one more keeps its queue pending for the gaps). Sections are listed in submission order and started by
//!   [`fbsng::run_pass`], whose [`Placement`] is the real fit of the pass
//!   ([`SchedState::dispatch_job`] with one task), so categories, consumables, `-tc`,
//!   `maxujobs` and queue instances all hold.
//! - *Process types* are projects: `projects[].max_slots` is the quota of slots their running
//!   tasks may hold.
//! - *Node attributes* are the hosts' `attributes`; a job requires them with
//!   `-ac requires=a,b` (qsub stores it in the job context): only hosts carrying all of them
//!   are tried.
//! - The dynamic queue priorities and section priorities are [`FbsngState`], owned by the
//!   scheduler state and persisted by the daemon in `daemon/fbsng.json`.
//!
//! The gaps are the seed's: a queue more than QPG above another holds it, a section SPG
//! below its queue's best blocks; both may leave slots idle on purpose, and the held jobs say
//! so in `qstat -j`.

use super::pass::{Candidate, CatVerdict, PassReasons, PassResult, ReasonId, Verdicts, packed_key};
use super::state::{CatId, SchedState};
use crate::config::FbsngStartRule;
use crate::model::JobId;
use gridspool_policy::fbsng::{
    self, FbsngQueue, Placement, ProcessType, QueueParams, Section, SectionId, StartRule,
    StopReason,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The evolving FBSNG priorities (`daemon/fbsng.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FbsngState {
    pub v: u32,
    /// Dynamic priority per queue name.
    pub queues: BTreeMap<String, i64>,
    /// Dynamic section priority per job (its tasks share it).
    pub sections: BTreeMap<JobId, i64>,
    /// Changed since last written.
    #[serde(skip)]
    pub dirty: bool,
}

/// Terms and gap reason shared by the jobs of one queue and section priority.
type SharedTerms = (Terms, Option<ReasonId>);

/// A job's policy terms, shared.
type Terms = Arc<[(String, String)]>;

/// What the sections of one candidate are made from, in submission order.
struct SectionSource {
    submitted: i64,
    id: JobId,
    /// Index of the candidate, and its row.
    cand: u32,
    pos: u32,
    cat: u32,
    /// Its FBSNG queue.
    queue: u32,
    /// How many sections (tasks) it offers.
    sections: u32,
    process_type: Option<u32>,
}

/// A section source's place in submission order, `(submitted, id)`, as one integer with
/// the same order and `k` (the source's index) in its low 32 bits (the pass's
/// [`packed_key`], whose second component, a job id, always fits).
fn submission_key(submitted: i64, id: JobId, k: u32) -> u128 {
    packed_key(submitted, i64::from(id.0), k)
}

/// The file the daemon keeps [`FbsngState`] in, under `daemon/`.
pub const FBSNG_FILE: &str = "fbsng.json";

impl FbsngState {
    /// Reads `daemon/fbsng.json`; a missing or unreadable file is a fresh start (every
    /// queue at its QPmin), which the seed's priorities recover from within a few starts.
    pub fn load(daemon_dir: &std::path::Path) -> Option<Self> {
        super::policy_files::load(daemon_dir, FBSNG_FILE)
    }

    /// Writes `daemon/fbsng.json` atomically (temp file, fsync, rename, fsync of the
    /// directory) when the priorities changed since the last write.
    pub fn save_if_changed(
        &mut self,
        daemon_dir: &std::path::Path,
    ) -> Result<(), crate::spool::SpoolError> {
        if !self.dirty {
            return Ok(());
        }
        self.v = 1;
        super::policy_files::save(daemon_dir, FBSNG_FILE, self)?;
        self.dirty = false;
        Ok(())
    }
}

impl SchedState {
    /// The FBSNG priorities, for the daemon to persist.
    pub fn fbsng_state(&self) -> &FbsngState {
        &self.fbsng
    }

    /// Mutable access for the daemon (to save them).
    pub fn fbsng_state_mut(&mut self) -> &mut FbsngState {
        &mut self.fbsng
    }

    /// Takes the policies' priorities saved in `daemon_dir` (FBSNG's dynamic queue and section
    /// priorities, Armada's decayed queue priorities): what a restart, and the forecast's copy
    /// of the cell, start from.
    pub fn restore_policy_states(&mut self, daemon_dir: &std::path::Path) {
        if let Some(f) = FbsngState::load(daemon_dir) {
            self.set_fbsng_state(f);
        }
        if let Some(a) = super::armada::ArmadaState::load(daemon_dir) {
            self.set_armada_state(a);
        }
    }

    /// Restores the FBSNG priorities read back from the spool.
    pub fn set_fbsng_state(&mut self, state: FbsngState) {
        self.fbsng = state;
    }
}

/// The real cluster as an FBSNG placement: one task of the section's job through the fit.
struct RealFit<'a> {
    st: &'a mut SchedState,
    cands: &'a [Candidate],
    /// Section id → (candidate index, its category): a section whose category already
    /// failed is refused without reading the candidate.
    sec_cand: &'a [(u32, u32)],
    verdicts: Verdicts,
    reservations_left: u32,
    now: i64,
    durations: &'a [Option<i64>],
    result: &'a mut PassResult,
    job_reasons: &'a mut PassReasons,
    /// Attribute bit per name, and each host's attribute mask.
    attr_bits: HashMap<String, u64>,
    host_mask: Vec<u64>,
    /// (category, required mask) → candidate queue instances on hosts that carry them.
    restricted: HashMap<(CatId, u64), Vec<usize>>,
    /// Per job: the required mask (u64::MAX when it requires an attribute no host has).
    required: HashMap<u32, u64>,
}

impl RealFit<'_> {
    fn mask_of(&mut self, requires: Option<u32>) -> u64 {
        let Some(r) = requires else {
            return 0;
        };
        if let Some(m) = self.required.get(&r) {
            return *m;
        }
        let mut m = 0u64;
        for a in self
            .st
            .name(r)
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            m |= self.attr_bits.get(a).copied().unwrap_or(u64::MAX);
        }
        self.required.insert(r, m);
        m
    }
}

impl Placement for RealFit<'_> {
    type Placed = ();

    fn try_start(&mut self, section: &Section) -> Option<()> {
        let &(i, cat) = self.sec_cand.get(section.id.0 as usize)?;
        if self.verdicts[cat as usize].failed.is_some() {
            return None;
        }
        let c = self.cands[i as usize];
        let requires = self.st.jobs.get(&c.id).and_then(|e| e.hot.requires);
        let mask = self.mask_of(requires);
        let saved = if mask != 0 {
            let st = &*self.st;
            let host_mask = &self.host_mask;
            let list = self
                .restricted
                .entry((c.cat, mask))
                .or_insert_with(|| {
                    st.categories[c.cat]
                        .candidates
                        .iter()
                        .copied()
                        .filter(|&q| host_mask[st.cluster.qis[q].host] & mask == mask)
                        .collect()
                })
                .clone();
            if list.is_empty() {
                self.job_reasons.set(
                    c.pos,
                    Arc::from(vec![format!(
                        "cannot run: no host carries the required node attributes ({}) (policy fbsng)",
                        requires.map_or("", |r| self.st.name(r))
                    )]),
                );
                return None;
            }
            Some(std::mem::replace(
                &mut self.st.categories[c.cat].candidates,
                list,
            ))
        } else {
            None
        };
        let before = self.result.starts.len();
        self.st.dispatch_job(
            &c,
            self.now,
            self.durations[c.cat],
            &mut self.verdicts,
            &mut self.reservations_left,
            self.result,
            1,
            self.job_reasons,
        );
        if let Some(saved) = saved {
            self.st.categories[c.cat].candidates = saved;
            // A restricted failure says nothing about the job's other sections' category.
            self.verdicts[c.cat] = CatVerdict::default();
        }
        (self.result.starts.len() > before).then_some(())
    }
}

impl SchedState {
    /// Dispatch under the `fbsng` policy (see the module documentation).
    pub(super) fn dispatch_fbsng(
        &mut self,
        cands: &[Candidate],
        job_reasons: &mut PassReasons,
        now: i64,
        durations: &[Option<i64>],
        result: &mut PassResult,
    ) {
        // Queues from the configuration, at their stored priorities.
        let qnames: Vec<String> = self.config.queues.iter().map(|q| q.name.clone()).collect();
        let qidx: HashMap<&str, usize> = qnames
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut queues: Vec<FbsngQueue> = self
            .config
            .queues
            .iter()
            .map(|q| {
                let f = q.fbsng;
                let params = QueueParams {
                    qp_min: f.qp_min,
                    qp_max: f.qp_max,
                    qpi: f.qpi,
                    qpd: f.qpd,
                    qpg: f.qpg,
                    spg: f.spg,
                    rule: match f.rule {
                        FbsngStartRule::Share => StartRule::Share,
                        FbsngStartRule::Update => StartRule::Update,
                    },
                };
                let mut fq = FbsngQueue::new(params);
                if let Some(p) = self.fbsng.queues.get(&q.name) {
                    fq.priority = (*p).clamp(f.qp_min, f.qp_max.max(f.qp_min));
                }
                fq
            })
            .collect();
        // Process types: projects with quotas, charged with their running slots.
        let pidx: HashMap<&str, usize> = self
            .config
            .projects
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        let mut ptypes: Vec<ProcessType> = self
            .config
            .projects
            .iter()
            .map(|p| ProcessType {
                quota: p.max_slots.map(|m| vec![u64::from(m)]).unwrap_or_default(),
                in_use: vec![0],
            })
            .collect();
        let slots_of = |st: &SchedState, cat: CatId| {
            st.categories[cat]
                .demand
                .as_ref()
                .map_or(1, |d| d.urgency_slots.max(1))
        };
        // Without process types there is nothing to charge: no walk over every job (a
        // filter on the walk would still visit all 100,000 entries of the map).
        let charged = if pidx.is_empty() {
            None
        } else {
            Some(self.jobs.values())
        };
        for e in charged.into_iter().flatten() {
            if e.hot.running == 0 {
                continue;
            }
            if let Some(&p) = e.hot.project.and_then(|p| pidx.get(self.name(p))) {
                ptypes[p].in_use[0] += u64::from(e.hot.running) * u64::from(slots_of(self, e.cat));
            }
        }
        let free_slots = u64::from(self.cluster.free_slots(now));
        // Sections, in submission order within each queue.
        let queue_of_cat: Vec<Option<usize>> = self
            .categories
            .iter()
            .map(|cat| {
                cat.candidates
                    .first()
                    .and_then(|&qi| qidx.get(self.cluster.qis[qi].queue.as_str()).copied())
            })
            .collect();
        let queue_of: Vec<Option<usize>> = cands.iter().map(|c| queue_of_cat[c.cat]).collect();
        let slots_of_cat: Vec<u32> = (0..self.categories.len())
            .map(|cat| slots_of(self, cat))
            .collect();
        // One shared demand per category: no allocation per section.
        let need_of_cat: Vec<Arc<[u64]>> = slots_of_cat
            .iter()
            .map(|&s| Arc::from(vec![u64::from(s)]))
            .collect();
        // Process type per interned project name (no string hashing per job).
        let pt_of_name: Vec<Option<usize>> = self
            .name_list
            .iter()
            .map(|n| pidx.get(n.as_str()).copied())
            .collect();
        // With no free slot nothing can start and no priority changes: no sections needed
        // (and no sort). What the sections need of each candidate is copied out in one
        // sequential walk and sorted with it, so that the submission order does not read
        // the candidates (≈ 90 bytes each, in priority order) at random.
        let mut build: Vec<SectionSource> = Vec::new();
        if free_slots > 0 {
            build.reserve_exact(cands.len());
            for (i, c) in cands.iter().enumerate() {
                let Some(q) = queue_of[i] else {
                    continue;
                };
                let slots = slots_of_cat[c.cat];
                build.push(SectionSource {
                    submitted: c.submitted,
                    id: c.id,
                    cand: i as u32,
                    pos: c.pos as u32,
                    cat: c.cat as u32,
                    queue: q as u32,
                    // One more than the free slots can take: a queue whose offered sections
                    // all started would count as having none pending, and its gap would stop
                    // holding the other queues for the rest of the pass while its job still
                    // has tasks waiting.
                    sections: c
                        .pending_tasks
                        .min(free_slots / u64::from(slots) + 1)
                        .max(1) as u32,
                    process_type: c
                        .project
                        .and_then(|p| pt_of_name.get(p as usize).copied().flatten())
                        .map(|p| p as u32),
                });
            }
        }
        // Submission order, (submitted, id): packed into one integer with the entry's index
        // in its low bits (the time's sign bit flipped so that unsigned order is signed
        // order), so that the sort moves 16-byte integers instead of 40-byte entries.
        let mut submission_order: Vec<u128> = build
            .iter()
            .enumerate()
            .map(|(k, b)| submission_key(b.submitted, b.id, k as u32))
            .collect();
        submission_order.sort_unstable();
        // Sections per queue counted first, so that the lists are allocated once (growing
        // them by doubling over 100,000 sections leaves the heap fragmented).
        let mut per_queue: Vec<usize> = vec![0; queues.len()];
        let mut total = 0usize;
        for b in &build {
            per_queue[b.queue as usize] += b.sections as usize;
            total += b.sections as usize;
        }
        for (q, n) in per_queue.into_iter().enumerate() {
            queues[q].sections.reserve_exact(n);
        }
        let mut sec_cand: Vec<(u32, u32)> = Vec::with_capacity(total);
        // Each candidate's stored section priority when the pass began, so that only the
        // priorities the pass changed are written back.
        let mut stored_prio: Vec<Option<i64>> = if free_slots == 0 {
            Vec::new()
        } else {
            vec![None; cands.len()]
        };
        // The kept section priorities by row: one job lookup per kept priority (thousands),
        // not one search of the section map per candidate (100,000).
        let mut stored_at: Vec<Option<i64>> = Vec::new();
        if !build.is_empty() && !self.fbsng.sections.is_empty() {
            stored_at = vec![None; self.rows.len()];
            for (id, p) in &self.fbsng.sections {
                if let Some(slot) = self
                    .jobs
                    .get(id)
                    .and_then(|e| stored_at.get_mut(e.row as usize))
                {
                    *slot = Some(*p);
                }
            }
        }
        for b in submission_order.iter().map(|&k| &build[k as u32 as usize]) {
            let stored = stored_at.get(b.pos as usize).copied().flatten();
            stored_prio[b.cand as usize] = stored;
            let prio = stored.unwrap_or(0);
            let need = &need_of_cat[b.cat as usize];
            for _ in 0..b.sections {
                queues[b.queue as usize].sections.push(Section {
                    id: SectionId(sec_cand.len() as u64),
                    ready: true,
                    priority: prio,
                    process_type: b.process_type.map(|p| p as usize),
                    need: need.clone(),
                    requires: fbsng::NodeAttributes(0),
                });
                sec_cand.push((b.cand, b.cat));
            }
        }
        drop(build);
        drop(submission_order);
        // Node attributes.
        let mut attr_bits: HashMap<String, u64> = HashMap::new();
        for h in &self.config.hosts {
            for a in &h.attributes {
                let next = attr_bits.len();
                if next < 64 {
                    attr_bits.entry(a.clone()).or_insert(1u64 << next);
                }
            }
        }
        // Configured hosts by name (the first of a name, as `ClusterConfig::host` finds it):
        // not a scan of the host list per host.
        let mut host_config: HashMap<&str, &crate::config::HostConfig> =
            HashMap::with_capacity(self.config.hosts.len());
        for h in &self.config.hosts {
            host_config.entry(h.name.as_str()).or_insert(h);
        }
        let host_mask: Vec<u64> = self
            .cluster
            .hosts
            .iter()
            .map(|h| {
                host_config.get(h.name.as_str()).map_or(0, |c| {
                    c.attributes
                        .iter()
                        .filter_map(|a| attr_bits.get(a))
                        .fold(0, |m, b| m | b)
                })
            })
            .collect();
        let report = {
            let mut placement = RealFit {
                reservations_left: self.config.scheduler.max_reservation,
                verdicts: Verdicts::new(self.categories.len()),
                st: self,
                cands,
                sec_cand: &sec_cand,
                now,
                durations,
                result,
                job_reasons,
                attr_bits,
                host_mask,
                restricted: HashMap::new(),
                required: HashMap::new(),
            };
            if free_slots == 0 {
                // Nothing can start, so no priority changes: the pass would only fail fits.
                fbsng::PassReport {
                    starts: Vec::new(),
                    stop: StopReason::NothingFits,
                }
            } else {
                fbsng::run_pass(&mut queues, &mut ptypes, &mut placement, usize::MAX)
            }
        };
        // Write the priorities back: queues by name, sections per job (the highest of its
        // sections still pending); a job with nothing pending is forgotten.
        let before = (self.fbsng.queues.clone(), self.fbsng.sections.len());
        for (q, fq) in queues.iter().enumerate() {
            self.fbsng.queues.insert(qnames[q].clone(), fq.priority);
        }
        // The highest section priority per candidate (by candidate index: no hashing).
        let mut best_at: Vec<Option<i64>> = vec![None; cands.len()];
        for fq in &queues {
            for s in &fq.sections {
                if let Some(&(i, _)) = sec_cand.get(s.id.0 as usize) {
                    let b = best_at[i as usize].get_or_insert(s.priority);
                    *b = (*b).max(s.priority);
                }
            }
        }
        // Only non-zero section priorities are kept (most sections are never passed).
        let jobs = &self.jobs;
        self.fbsng
            .sections
            .retain(|id, _| jobs.get(id).is_some_and(|e| e.hot.has_pending));
        for (i, p) in best_at.iter().enumerate() {
            let (Some(p), Some(c)) = (*p, cands.get(i)) else {
                continue;
            };
            // Unchanged since the pass began (most sections are never passed): the map
            // already says so (no entry for 0), unless the retain above just forgot the job.
            let unchanged = match stored_prio[i] {
                None => p == 0,
                Some(s) => s == p && p != 0 && self.fbsng.sections.contains_key(&c.id),
            };
            if unchanged {
                continue;
            }
            if p == 0 {
                self.fbsng.sections.remove(&c.id);
            } else if self.fbsng.sections.insert(c.id, p) != Some(p) {
                self.fbsng.dirty = true;
            }
        }
        // Each candidate's section priority as the reasons and terms see it.
        let best: Vec<i64> = if free_slots == 0 {
            if self.fbsng.sections.is_empty() {
                vec![0; cands.len()]
            } else {
                // By row: one job lookup per kept section priority (thousands), not one
                // search of the section map per candidate (100,000).
                let mut by_row: Vec<i64> = vec![0; self.rows.len()];
                for (id, p) in &self.fbsng.sections {
                    if let Some(slot) = self
                        .jobs
                        .get(id)
                        .and_then(|e| by_row.get_mut(e.row as usize))
                    {
                        *slot = *p;
                    }
                }
                cands
                    .iter()
                    .map(|c| by_row.get(c.pos).copied().unwrap_or(0))
                    .collect()
            }
        } else {
            best_at.iter().map(|p| p.unwrap_or(0)).collect()
        };
        if before.0 != self.fbsng.queues || before.1 != self.fbsng.sections.len() {
            self.fbsng.dirty = true;
        }
        // Reasons and terms.
        let mut top_section: Vec<i64> = vec![0; queues.len()];
        let mut has_work: Vec<bool> = vec![false; queues.len()];
        for (i, q) in queue_of.iter().enumerate() {
            if let Some(q) = *q {
                has_work[q] = true;
                top_section[q] = top_section[q].max(best[i]);
            }
        }
        let threshold = queues
            .iter()
            .enumerate()
            .filter(|(i, _)| has_work[*i])
            .map(|(_, q)| q.priority.saturating_sub(q.params.qpg))
            .max()
            .unwrap_or(i64::MIN);
        // The queue gap is structural: the pending queue with the highest `p − QPG` holds
        // every pending queue below that (whether or not the pass stopped on it).
        let _ = report.stop;
        let holder = queues
            .iter()
            .enumerate()
            .filter(|(i, _)| has_work[*i])
            .max_by(|a, b| {
                let ka = a.1.priority.saturating_sub(a.1.params.qpg);
                let kb = b.1.priority.saturating_sub(b.1.params.qpg);
                ka.cmp(&kb).then(b.0.cmp(&a.0))
            })
            .map(|(i, _)| i);
        // Shared per (queue, section priority): the terms and the gap reason, so 100,000
        // waiting jobs cost no allocation each. Rows refer to an entry by index, so that a
        // row whose terms are already the shared ones costs no reference count.
        let mut shared_terms: Vec<SharedTerms> = Vec::new();
        let mut shared: HashMap<(usize, i64), usize> = HashMap::new();
        let not_reached = job_reasons.add(Arc::from(vec![
            "not reached in this pass (policy fbsng: queue and section priority order)".to_string(),
        ]));
        // A job's own reasons followed by its gap reason, one list per pair.
        let mut joined: HashMap<(ReasonId, ReasonId), ReasonId> = HashMap::new();
        // Which candidate each row is (by position), so that the terms and reasons are
        // given in one walk over the rows in position order (sequential writes, instead of
        // one random write into each of three arrays per candidate in priority order).
        const NO_CAND: u32 = u32::MAX;
        let mut cand_at: Vec<u32> = vec![NO_CAND; self.rows.len()];
        for (i, c) in cands.iter().enumerate() {
            if queue_of[i].is_some()
                && let Some(slot) = cand_at.get_mut(c.pos)
            {
                *slot = i as u32;
            }
        }
        let mut last: Option<((usize, i64), usize)> = None;
        let mut word_bufs: [String; 3] = Default::default();
        let none = job_reasons.add(Arc::from(Vec::new()));
        self.rows.drop_queue_terms();
        let rows = &mut self.rows;
        let reasons = &rows.reasons;
        for (pos, ((r, t), &i)) in rows
            .rows
            .iter()
            .zip(rows.terms.iter_mut())
            .zip(&cand_at)
            .enumerate()
        {
            let Some(q) = queue_of.get(i as usize).copied().flatten() else {
                *t = None;
                continue;
            };
            let sp = best[i as usize];
            // Neighbours mostly share a queue and section priority: one hash lookup per
            // change of key, not per job.
            let entry = match last {
                Some((k, v)) if k == (q, sp) => v,
                _ => {
                    let v = *shared.entry((q, sp)).or_insert_with(|| {
                        use std::fmt::Write as _;
                        let fq = &queues[q];
                        let gap = if let Some(h) = holder.filter(|_| fq.priority < threshold) {
                            Some(format!(
                                "held by the queue priority gap: queue {} has priority {} > {} + QPG {} (policy fbsng)",
                                qnames[h], queues[h].priority, fq.priority, queues[h].params.qpg
                            ))
                        } else if top_section[q].saturating_sub(sp) >= fq.params.spg {
                            Some(format!(
                                "blocked by the section priority gap: a section of queue {} has priority {} >= {} + SPG {} (policy fbsng)",
                                qnames[q], top_section[q], sp, fq.params.spg
                            ))
                        } else {
                            None
                        };
                        // The words, written into buffers kept for the pass.
                        let mut words = std::mem::take(&mut word_bufs);
                        for w in &mut words {
                            w.clear();
                        }
                        let _ = write!(words[0], "{}", fq.priority);
                        let _ = write!(words[1], "{}", fq.params.qpg);
                        let _ = write!(words[2], "{sp}");
                        let keys = ["queue", "queue priority", "queue gap", "section priority"];
                        let values = [qnames[q].as_str(), &words[0], &words[1], &words[2]];
                        // The same words as this row's last terms (the usual case from one
                        // pass to the next): that allocation is shared instead, and the rows
                        // that hold it already are not written.
                        let same = t.as_ref().is_some_and(|old| {
                            old.len() == 4 + usize::from(gap.is_some())
                                && old.iter().zip(keys.iter().zip(values)).all(
                                    |((k, v), (nk, nv))| k == nk && v == nv,
                                )
                                && gap.as_ref().is_none_or(|g| old[4].0 == "gap" && &old[4].1 == g)
                        });
                        let terms: Arc<[(String, String)]> = match t.as_ref() {
                            Some(old) if same => old.clone(),
                            _ => {
                                let mut terms: Vec<(String, String)> = keys
                                    .iter()
                                    .zip(values)
                                    .map(|(k, v)| (k.to_string(), v.to_string()))
                                    .collect();
                                if let Some(g) = &gap {
                                    terms.push(("gap".to_string(), g.clone()));
                                }
                                Arc::from(terms)
                            }
                        };
                        word_bufs = words;
                        // The gap reason: this row's last reasons when they say just that.
                        let gap = gap.map(|g| {
                            let kept = &reasons[pos];
                            if kept.len() == 1 && kept[0] == g {
                                job_reasons.add(kept.clone())
                            } else {
                                job_reasons.add(Arc::from(vec![g]))
                            }
                        });
                        shared_terms.push((terms, gap));
                        shared_terms.len() - 1
                    });
                    last = Some(((q, sp), v));
                    v
                }
            };
            let (terms, gap) = &shared_terms[entry];
            let gap = *gap;
            if !t.as_ref().is_some_and(|old| Arc::ptr_eq(old, terms)) {
                *t = Some(terms.clone());
            }
            let id = match (gap, job_reasons.id_at(pos)) {
                (Some(g), None) => g,
                (Some(g), Some(r)) => *joined.entry((r, g)).or_insert_with(|| {
                    let mut all = job_reasons.list(r).to_vec();
                    all.extend(job_reasons.list(g).iter().cloned());
                    job_reasons.add(Arc::from(all))
                }),
                (None, None) => not_reached,
                (None, Some(r)) => r,
            };
            // No "why pending" for what is not pending.
            job_reasons.give(
                pos,
                if r.has_pending() && r.pending_unheld() {
                    id
                } else {
                    none
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{JobId, submission_key};
    use proptest::prelude::*;

    proptest! {
        /// The packed key orders like (submitted, id), with the index only breaking ties
        /// that job ids never leave, and gives the index back.
        #[test]
        fn submission_key_orders_like_the_pair(
            a in (any::<i64>(), any::<u32>(), any::<u32>()),
            b in (any::<i64>(), any::<u32>(), any::<u32>()),
        ) {
            let ka = submission_key(a.0, JobId(a.1), a.2);
            let kb = submission_key(b.0, JobId(b.1), b.2);
            prop_assert_eq!(ka as u32, a.2);
            if (a.0, a.1) != (b.0, b.1) {
                prop_assert_eq!(ka.cmp(&kb), (a.0, a.1).cmp(&(b.0, b.1)));
            }
        }
    }
}
