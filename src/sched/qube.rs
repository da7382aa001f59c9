//! The Qube! `cluster` policy in the pass (seeds `qube-cluster-priority.txt`,
//! `qube-host-selection.txt`): each host takes, slot by slot, the first job in *its* order
//! that fits — cluster priority order for the host's cluster, then job priority, then job id.
//! "The worst job of order 1 beats the best of order 2."
//!
//! # Cost
//!
//! Candidates arrive sorted by (priority, job id) — O(jobs log jobs), as for every policy.
//! They are split into groups of one job cluster and one category, keeping that order. The
//! cluster order of each group is computed once per distinct *host* cluster with
//! [`gridspool_policy::qube::ClusterTable`] (not per job). A host then merges the heads of
//! its groups bucket by bucket (ascending cluster order) with a heap; a group whose category
//! does not fit on the host is dropped for that host in O(1), so a host costs
//! O(groups log groups + starts) and a pass O(jobs log jobs + hosts × groups), never
//! O(jobs × hosts).
//!
//! Parallel jobs are placed over all their candidate hosts when their turn comes on a host;
//! `-R y` reservations are not made under this policy (a job is tried host by host).

use super::pass::{Candidate, CatVerdict, PassReasons, PassResult, Verdicts};
use super::state::{CatId, SchedState};
use crate::config::{PolicyOrder, PreemptionSetting};
use crate::model::{JobId, RunningTask, TaskId};
use gridspool_policy::qube::{
    ClusterId, ClusterPath, ClusterTable, HostId, HostView, JobId as QJobId, JobPriority,
    PreemptingJob, PreemptionPolicy, RunningInstance, cluster_priority_order, plan_preemption,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

/// The pending reason of a job no host reached in this pass.
pub const NOT_REACHED: &str = "cannot run: every host with a free slot took jobs of a better cluster order or priority (policy cluster)";

/// Parses a cluster path of the configuration or of a job; an invalid one is the root.
pub fn path_or_root(text: Option<&str>) -> ClusterPath {
    text.and_then(|t| ClusterPath::parse(t).ok())
        .unwrap_or_else(ClusterPath::root)
}

/// (the job's place in the pass order, group, position in the group): the candidates are
/// in order and their keys unique, so the index orders them as their keys do.
type HeapEntry = (usize, usize, usize);

/// Jobs of one cluster and one category, in (priority, job id) order.
struct Group {
    cluster: ClusterId,
    cat: CatId,
    members: Vec<usize>,
    /// Members before this are done for the whole pass.
    head: usize,
}

impl SchedState {
    /// The cluster path of every host (index of `cluster.hosts`). The configured hosts are
    /// indexed by name first: a lookup per host by scanning the list was 500,000 name
    /// comparisons per call at 1,000 hosts (two calls per pass).
    fn host_paths(&self) -> Vec<ClusterPath> {
        // The first configured host of a name wins, as `ClusterConfig::host` finds it.
        let mut by_name: HashMap<&str, Option<&str>> =
            HashMap::with_capacity(self.config.hosts.len());
        for h in &self.config.hosts {
            by_name
                .entry(h.name.as_str())
                .or_insert(h.cluster.as_deref());
        }
        self.cluster
            .hosts
            .iter()
            .map(|h| path_or_root(by_name.get(h.name.as_str()).copied().flatten()))
            .collect()
    }

    /// The policy terms of a job under `cluster`: its cluster and its best order over the
    /// hosts' clusters (`qstat -j`, `-pri`).
    pub(super) fn qube_policy_terms(&mut self, cands: &[Candidate]) {
        let hosts = self.host_paths();
        let mut workers: Vec<ClusterPath> = hosts;
        workers.sort();
        workers.dedup();
        // Indexed by interned cluster name: no hashing per job.
        type Terms = Arc<[(String, String)]>;
        let mut cache: Vec<Option<Terms>> = vec![None; self.name_list.len()];
        for c in cands {
            let Some(slot) = cache.get_mut(c.cluster as usize) else {
                continue;
            };
            if slot.is_none() {
                let path = path_or_root(Some(self.name(c.cluster)));
                let best = workers
                    .iter()
                    .map(|w| cluster_priority_order(w, &path))
                    .min()
                    .unwrap_or(1);
                *slot = Some(Arc::from(vec![
                    ("cluster".to_string(), path.to_string()),
                    ("cluster order".to_string(), best.to_string()),
                ]));
            }
        }
        // A cluster's terms that read as the first of its rows' last ones (they change only
        // with the hosts) share that allocation instead, so that the rows holding it already
        // are not written (no reference count changed per row and pass).
        let mut checked = vec![false; cache.len()];
        self.rows.drop_queue_terms();
        let rows = &mut self.rows;
        for (r, t) in rows.rows.iter().zip(rows.terms.iter_mut()) {
            let slot = r.cluster as usize;
            let new = match cache.get_mut(slot) {
                Some(Some(new)) if r.live() && (r.has_pending() || r.running()) => new,
                _ => {
                    *t = None;
                    continue;
                }
            };
            if !checked[slot] {
                checked[slot] = true;
                if let Some(old) = t.as_ref()
                    && old[..] == new[..]
                {
                    *new = old.clone();
                }
            }
            if !t.as_ref().is_some_and(|old| Arc::ptr_eq(old, new)) {
                *t = Some(new.clone());
            }
        }
    }

    /// Dispatch under the `cluster` policy: host by host, each taking the first job of its
    /// own order that fits. `cands` must be sorted by (priority, job id).
    pub(super) fn dispatch_by_host(
        &mut self,
        cands: &[Candidate],
        job_reasons: &mut PassReasons,
        now: i64,
        durations: &[Option<i64>],
        result: &mut PassResult,
    ) {
        // No host can take anything (a full cluster: the usual periodic pass): the jobs are
        // not grouped, and each is left with the reason that it was not reached.
        let any_room = self
            .cluster
            .hosts
            .iter()
            .enumerate()
            .any(|(h, hs)| hs.slots_used < hs.slots_cap && self.cluster.host_up(h, now));
        if any_room {
            self.dispatch_to_hosts(cands, job_reasons, now, durations, result);
        }
        let reached = job_reasons.add(Arc::from(vec![NOT_REACHED.to_string()]));
        // A candidate without a reason was never dispatched in this pass (`dispatch_job`
        // gives every job it sees its reasons), so it started nothing and is pending and
        // unheld as it was when classified.
        for c in cands {
            if job_reasons.id_at(c.pos).is_none() {
                debug_assert!(!self.started_in_pass.contains(&c.id), "job {}", c.id);
                job_reasons.give(c.pos, reached);
            }
        }
    }

    /// The host-by-host walk of [`SchedState::dispatch_by_host`], when a host has room.
    fn dispatch_to_hosts(
        &mut self,
        cands: &[Candidate],
        job_reasons: &mut PassReasons,
        now: i64,
        durations: &[Option<i64>],
        result: &mut PassResult,
    ) {
        let mut table = ClusterTable::new();
        // Indexed by interned cluster name and category: no hashing per candidate.
        let mut cluster_ids: Vec<Option<ClusterId>> = vec![None; self.name_list.len()];
        let mut groups: Vec<Group> = Vec::new();
        let ncat = self.categories.len();
        let mut group_of: Vec<Vec<usize>> = Vec::new();
        // Each candidate's group, then the members placed in lists of the right size (no
        // list grown by doubling over 100,000 candidates).
        let mut group_at: Vec<u32> = Vec::with_capacity(cands.len());
        let mut group_len: Vec<usize> = Vec::new();
        for c in cands {
            let slot = c.cluster as usize;
            if slot >= cluster_ids.len() {
                cluster_ids.resize(slot + 1, None);
            }
            let cid = match cluster_ids[slot] {
                Some(id) => id,
                None => {
                    let id = table.intern(&path_or_root(Some(self.name(c.cluster))));
                    cluster_ids[slot] = Some(id);
                    id
                }
            };
            let row = cid.0 as usize;
            if row >= group_of.len() {
                group_of.resize(row + 1, Vec::new());
            }
            if group_of[row].is_empty() {
                group_of[row] = vec![usize::MAX; ncat];
            }
            let g = match group_of[row][c.cat] {
                usize::MAX => {
                    groups.push(Group {
                        cluster: cid,
                        cat: c.cat,
                        members: Vec::new(),
                        head: 0,
                    });
                    group_of[row][c.cat] = groups.len() - 1;
                    group_len.push(0);
                    groups.len() - 1
                }
                g => g,
            };
            group_len[g] += 1;
            group_at.push(g as u32);
        }
        for (gr, &n) in groups.iter_mut().zip(&group_len) {
            gr.members.reserve_exact(n);
        }
        for (i, &g) in group_at.iter().enumerate() {
            groups[g as usize].members.push(i);
        }
        drop(group_at);
        let host_paths = self.host_paths();
        // Per distinct host cluster: the groups bucketed by ascending cluster order.
        let mut buckets_of: HashMap<ClusterPath, Vec<Vec<usize>>> = HashMap::new();
        // Per category: its candidate queue instances on each host (built on first use).
        let nhosts = self.cluster.hosts.len();
        let mut on_host: HashMap<CatId, Vec<Vec<usize>>> = HashMap::new();
        let mut verdicts = Verdicts::new(self.categories.len());
        let mut no_reservations = 0u32;
        for h in 0..nhosts {
            let hs = &self.cluster.hosts[h];
            if hs.slots_used >= hs.slots_cap || !self.cluster.host_up(h, now) {
                continue;
            }
            let buckets = buckets_of
                .entry(host_paths[h].clone())
                .or_insert_with(|| {
                    let orders = table.orders_for_worker(&host_paths[h]);
                    let mut by: Vec<(u32, usize)> = groups
                        .iter()
                        .enumerate()
                        .map(|(g, gr)| (orders[gr.cluster.0 as usize], g))
                        .collect();
                    by.sort_unstable();
                    let mut out: Vec<Vec<usize>> = Vec::new();
                    let mut last = None;
                    for (o, g) in by {
                        if last != Some(o) {
                            out.push(Vec::new());
                            last = Some(o);
                        }
                        if let Some(b) = out.last_mut() {
                            b.push(g);
                        }
                    }
                    out
                })
                .clone();
            let mut touched: Vec<CatId> = Vec::new();
            'host: for bucket in &buckets {
                let mut heap: BinaryHeap<Reverse<HeapEntry>> = BinaryHeap::new();
                for &g in bucket {
                    let gr = &groups[g];
                    if let Some(&i) = gr.members.get(gr.head) {
                        heap.push(Reverse((i, g, gr.head)));
                    }
                }
                while let Some(Reverse((_, g, pos))) = heap.pop() {
                    let cat = groups[g].cat;
                    let i = groups[g].members[pos];
                    let c = cands[i];
                    let pending = self
                        .jobs
                        .get(&c.id)
                        .is_some_and(|e| e.hot.has_pending && e.hot.pending_unheld);
                    let next = |groups: &[Group], heap: &mut BinaryHeap<_>, p: usize| {
                        if let Some(&j) = groups[g].members.get(p) {
                            heap.push(Reverse((j, g, p)));
                        }
                    };
                    if pending && self.passively_excluded(c.id, h) {
                        next(&groups, &mut heap, pos + 1);
                        continue;
                    }
                    if !pending {
                        if groups[g].head == pos {
                            groups[g].head = pos + 1;
                        }
                        next(&groups, &mut heap, pos + 1);
                        continue;
                    }
                    let Ok(demand) = &self.categories[cat].demand else {
                        continue;
                    };
                    let parallel = demand.pe.is_some();
                    let lists = on_host.entry(cat).or_insert_with(|| {
                        let mut v = vec![Vec::new(); nhosts];
                        for &q in &self.categories[cat].candidates {
                            v[self.cluster.qis[q].host].push(q);
                        }
                        v
                    });
                    if lists[h].is_empty() {
                        continue; // this group cannot run here
                    }
                    let restricted = lists[h].clone();
                    let saved = if parallel {
                        None
                    } else {
                        Some(std::mem::replace(
                            &mut self.categories[cat].candidates,
                            restricted,
                        ))
                    };
                    touched.push(cat);
                    self.dispatch_job(
                        &c,
                        now,
                        durations[cat],
                        &mut verdicts,
                        &mut no_reservations,
                        result,
                        usize::MAX,
                        job_reasons,
                    );
                    if let Some(saved) = saved {
                        self.categories[cat].candidates = saved;
                    }
                    let still = self
                        .jobs
                        .get(&c.id)
                        .is_some_and(|e| e.hot.has_pending && e.hot.pending_unheld);
                    if !still {
                        if groups[g].head == pos {
                            groups[g].head = pos + 1;
                        }
                        next(&groups, &mut heap, pos + 1);
                    } else if verdicts[cat].failed.is_none() {
                        // Held back by its own limits (-tc, maxujobs): the next job may run.
                        next(&groups, &mut heap, pos + 1);
                    }
                    let hs = &self.cluster.hosts[h];
                    if hs.slots_used >= hs.slots_cap {
                        break 'host;
                    }
                }
            }
            for cat in touched {
                verdicts[cat] = CatVerdict::default();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Preemption (seed `qube-host-selection.txt`, `scheduler.preemption`)
// ---------------------------------------------------------------------------------------------

/// Jobs planned per full pass at most; the others wait for the next pass (nothing is dropped).
const TRIGGERS_PER_PASS: usize = 16;

/// The preemption bookkeeping of the `cluster` policy.
#[derive(Debug, Clone, Default)]
pub struct QubeState {
    /// Jobs whose state changed (submitted, altered, released, shoved) since the last plan.
    pub triggers: Vec<JobId>,
    /// Passive victims: (job, host index) where the job starts nothing more while the job
    /// it was preempted for (the value) still waits. Once that job started or left, the
    /// victim may start there again: an exclusion for as long as the victim had pending
    /// tasks would keep the rest of an array off the host for good.
    pub passive_excluded: HashMap<(JobId, usize), JobId>,
    /// Aggressive victims being killed: their end requeues them.
    pub preempted: HashSet<(JobId, TaskId)>,
}

/// One preemption decision for the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preemption {
    /// The job that preempts.
    pub for_job: JobId,
    pub job: JobId,
    pub task: TaskId,
    pub host: String,
    /// Kill now and requeue (`aggressive`); else the task finishes and the job starts no more
    /// there (`passive`, already recorded in the state).
    pub kill: bool,
}

impl SchedState {
    /// Whether the configuration preempts: `cluster` with `passive` or `aggressive`, or
    /// `sge` with `aggressive` (validated in `config`).
    pub(crate) fn preempting(&self) -> bool {
        let s = &self.config.scheduler;
        s.preemption != PreemptionSetting::None
            && matches!(s.policy, PolicyOrder::Cluster | PolicyOrder::Sge)
    }

    /// A job changed state: with preemption on, plan for it after the next full pass.
    pub(crate) fn preemption_trigger(&mut self, id: JobId) {
        if self.preempting() && !self.qube.triggers.contains(&id) {
            self.qube.triggers.push(id);
        }
    }

    /// Whether `job` may not start on host `h`: it was a passive victim there for a job that
    /// still waits.
    pub(super) fn passively_excluded(&self, job: JobId, h: usize) -> bool {
        !self.qube.passive_excluded.is_empty()
            && self
                .qube
                .passive_excluded
                .get(&(job, h))
                .is_some_and(|&for_job| self.still_waits(for_job))
    }

    /// Whether a job has pending tasks (a preemptor that no longer has any started or left).
    fn still_waits(&self, id: JobId) -> bool {
        self.jobs.get(&id).is_some_and(|e| e.hot.has_pending)
    }

    /// The end of an aggressively preempted task: `Some(run)` when `(id, task)` was one — it
    /// is pending again (a restart next time) and `run` is what accounting records for the
    /// preempted run. `None`: an ordinary end, for [`SchedState::task_ended`].
    pub fn preempted_task_ended(&mut self, id: JobId, task: TaskId) -> Option<RunningTask> {
        if !self.qube.preempted.remove(&(id, task)) {
            return None;
        }
        let ran = self
            .job(id)?
            .tasks
            .running
            .iter()
            .find(|r| r.task == task)
            .cloned()?;
        self.requeue_restarted(id, task).ok()?;
        Some(ran)
    }

    /// Plans preemption for the jobs whose state changed and that are still pending after the
    /// pass, with [`gridspool_policy::qube::plan_preemption`]: hosts that satisfy the job
    /// statically, running tasks of a worse key on their host that are not `-no_preempt`.
    /// Under `cluster` the key is (cluster order, priority); under `sge` every host and job
    /// counts as the root cluster, so the key is SGE's priority alone.
    pub(super) fn plan_preemptions(&mut self, now: i64) -> Vec<Preemption> {
        let by_cluster = self.config.scheduler.policy == PolicyOrder::Cluster;
        let mode = match self.config.scheduler.preemption {
            PreemptionSetting::None => return Vec::new(),
            PreemptionSetting::Passive => PreemptionPolicy::Passive,
            PreemptionSetting::Aggressive => PreemptionPolicy::Aggressive,
        };
        // Forget exclusions of victims that have nothing pending, and those whose preemptor
        // no longer waits.
        let jobs = &self.jobs;
        let waits = |id: &JobId| jobs.get(id).is_some_and(|e| e.hot.has_pending);
        self.qube
            .passive_excluded
            .retain(|(victim, _), for_job| waits(victim) && waits(for_job));
        let mut triggers = std::mem::take(&mut self.qube.triggers);
        triggers.retain(|id| {
            self.jobs
                .get(id)
                .is_some_and(|e| e.hot.has_pending && e.hot.pending_unheld)
        });
        triggers.sort_by_key(|id| {
            let p = self
                .jobs
                .get(id)
                .and_then(|e| self.priority_of(e))
                .map_or(0.0, |p| p.prio);
            (-(p * 1e12).round() as i64, *id)
        });
        if triggers.len() > TRIGGERS_PER_PASS {
            self.qube.triggers = triggers.split_off(TRIGGERS_PER_PASS);
        }
        if triggers.is_empty() {
            return Vec::new();
        }
        let mut table = ClusterTable::new();
        let root = table.intern(&path_or_root(None));
        let host_cluster: Vec<ClusterId> = if by_cluster {
            self.host_paths().iter().map(|p| table.intern(p)).collect()
        } else {
            vec![root; self.cluster.hosts.len()]
        };
        let priorities = &self.rows.priority;
        let prio_of = |e: &super::state::JobEntry| {
            JobPriority(
                priorities
                    .get(e.row as usize)
                    .and_then(Option::as_ref)
                    .map_or(0, |p| (p.prio * 1e12).round() as i64),
            )
        };
        let mut cluster_of: HashMap<u32, ClusterId> = HashMap::new();
        let mut running: Vec<RunningInstance> = Vec::new();
        let mut running_task: Vec<(JobId, TaskId)> = Vec::new();
        let mut keys: Vec<(&(JobId, TaskId), &super::state::RunningBooking)> =
            self.running.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        for (&(j, t), b) in keys {
            let Some(e) = self.jobs.get(&j) else {
                continue;
            };
            let Some(&(qi, _)) = b.booking.slots.first() else {
                continue;
            };
            let host = self.cluster.qis[qi].host;
            let cid = if by_cluster {
                *cluster_of
                    .entry(e.hot.cluster)
                    .or_insert_with(|| table.intern(&path_or_root(Some(self.name(e.hot.cluster)))))
            } else {
                root
            };
            running.push(RunningInstance {
                job: QJobId(u64::from(j.0)),
                instance: t,
                cluster: cid,
                priority: prio_of(e),
                host: HostId(host as u32),
                preemptible: !e.hot.no_preempt
                    && !self.qube.preempted.contains(&(j, t))
                    && !self.passively_excluded(j, host),
                slots: b.booking.slots.iter().map(|s| s.1).sum(),
            });
            running_task.push((j, t));
        }
        let mut out = Vec::new();
        for id in triggers {
            let Some(e) = self.jobs.get(&id) else {
                continue;
            };
            let cat = &self.categories[e.cat];
            let Ok(demand) = &cat.demand else {
                continue;
            };
            let mut on_host = vec![false; self.cluster.hosts.len()];
            for &q in &cat.candidates {
                on_host[self.cluster.qis[q].host] = true;
            }
            let hosts: Vec<HostView> = (0..self.cluster.hosts.len())
                .map(|h| {
                    let hs = &self.cluster.hosts[h];
                    HostView {
                        id: HostId(h as u32),
                        cluster: host_cluster[h],
                        idle_slots: hs.slots_cap.saturating_sub(hs.slots_used),
                        satisfies_job: on_host[h] && self.cluster.host_up(h, now),
                    }
                })
                .collect();
            let cid = if by_cluster {
                *cluster_of
                    .entry(e.hot.cluster)
                    .or_insert_with(|| table.intern(&path_or_root(Some(self.name(e.hot.cluster)))))
            } else {
                root
            };
            let job = PreemptingJob {
                id: QJobId(u64::from(id.0)),
                cluster: cid,
                priority: prio_of(e),
                pending_instances: e.hot.pending_tasks.min(u64::from(u32::MAX)) as u32,
                slots_per_instance: demand.urgency_slots.max(1),
            };
            let plan = plan_preemption(&job, &hosts, &running, &table, mode);
            for v in plan.victims {
                let (vj, vt) = running_task[v.running_index];
                running[v.running_index].preemptible = false;
                let h = v.host.0 as usize;
                let kill = mode == PreemptionPolicy::Aggressive;
                if kill {
                    self.qube.preempted.insert((vj, vt));
                } else {
                    self.qube.passive_excluded.insert((vj, h), id);
                }
                out.push(Preemption {
                    for_job: id,
                    job: vj,
                    task: vt,
                    host: self.cluster.hosts[h].name.clone(),
                    kill,
                });
            }
        }
        out
    }
}
