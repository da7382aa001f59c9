//! The scheduler's in-memory state: every job of the spool, the cluster's resources with the
//! bookings of running tasks, and the job categories. Pure: no files, no clock (times are
//! passed in), so the pass can be tested with table cases.
//!
//! One file over 1,000 lines: every change of the state (a job added, started, ended,
//! altered; a host's or instance's state) keeps the same derived indexes (rows, categories,
//! bookings) consistent, and those invariants are read here together.

use super::cluster::{Booking, Cluster, Demand, StaticMiss};
use super::fit;
use super::priority::PriorityPolicy;
use crate::compat::pattern;
use crate::config::ClusterConfig;
use crate::model::{
    ErrorInfo, Holds, JobId, JobRecord, PendingGroup, PriorityInfo, RunState, RunningTask, TaskId,
    TaskSet,
};
use crate::time::parse_time;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Index of a category in [`SchedState`].
pub type CatId = usize;

/// Jobs with identical hard requirements (`-l`, `-q`, `-pe`) share a category: its demand,
/// its statically matching queue instances and, within a pass, one fit verdict (SGE's
/// job categories, `sched_conf(5)`), so that one failed fit is not retried for each job.
#[derive(Debug, Clone)]
pub struct Category {
    pub key: String,
    pub demand: Result<Demand, String>,
    /// Queue instances that can ever take the category, in try order.
    pub candidates: Vec<usize>,
    /// Why no queue instance matches statically (when `candidates` is empty).
    pub static_reason: Option<String>,
    /// Jobs currently in the category.
    pub jobs: usize,
    /// The reason of the category's last failed fit, reused while the words stay the same.
    pub last_failure: Option<Arc<[String]>>,
    /// The first category that fits exactly as this one does, but for the run time (the
    /// same consumables, parallel environment and candidate instances): while a pass has
    /// made no reservation, the run time changes no fit, so one of them failing tells the
    /// others (traces where every job asks for its own `h_rt` have a category per job).
    pub shape: CatId,
}

/// One job and what the scheduler derives from it.
#[derive(Debug, Clone)]
///
/// The priority, "why pending" reasons and policy terms of the last pass live in the job's
/// row ([`super::rows`], at index `row`), not in the record: reasons are shared per category
/// (one allocation, not one per job), terms per policy group, and all are put into the
/// record only when it is written ([`SchedState::record_for_write`]).
///
/// The record is boxed and the fields a pass reads for every job are copied into [`Hot`]
/// (and from there into the row), so that a pass over 100,000 jobs streams over dense rows
/// instead of map entries and 1.2 KB records.
pub struct JobEntry {
    pub record: Rec,
    pub cat: CatId,
    pub hot: Hot,
    /// Index of the job's row in [`SchedState::rows`].
    pub row: u32,
    /// What the last write to the spool showed of the priority
    /// ([`PriorityInfo::shown_fingerprint`]), to refresh stale state files a few at a time.
    pub written_priority: Option<u64>,
}

/// A job record, decoded ("warm") while the scheduler works with it, else kept as the
/// difference of its JSON from a reference record of the same owner ("cold",
/// [`super::cold`]): a decoded record takes about 1.9 KB with its strings, its JSON about
/// 530 bytes, the difference 40–80, and 100,000 pending jobs must fit in `sched_d`'s
/// memory. Pending jobs are cooled after each pass; a job is warmed when it is dispatched,
/// altered or written.
#[derive(Debug, Clone)]
pub enum Rec {
    Warm(Box<JobRecord>),
    Cold(Arc<super::cold::Base>, Box<[u8]>),
}

impl Rec {
    /// The record, decoding a cold one (`None` only if our own encoding failed to decode).
    pub fn get(&self) -> Option<std::borrow::Cow<'_, JobRecord>> {
        match self {
            Rec::Warm(b) => Some(std::borrow::Cow::Borrowed(&**b)),
            Rec::Cold(base, delta) => {
                let json = super::cold::decode(base, delta)?;
                serde_json::from_slice(&json)
                    .ok()
                    .map(std::borrow::Cow::Owned)
            }
        }
    }

    /// Decodes in place and gives mutable access.
    pub fn warm(&mut self) -> Option<&mut JobRecord> {
        if let Rec::Cold(base, delta) = self {
            let json = super::cold::decode(base, delta)?;
            let r: JobRecord = serde_json::from_slice(&json).ok()?;
            *self = Rec::Warm(Box::new(r));
        }
        match self {
            Rec::Warm(b) => Some(&mut **b),
            Rec::Cold(..) => None,
        }
    }

    /// Encodes a warm record against `owner`'s reference record (kept warm if encoding
    /// fails); returns the decoded record, for the caller to free when it is done
    /// encoding ([`SchedState::cool_idle`]).
    pub fn cool(&mut self, bases: &mut super::cold::Bases, owner: u32) -> Option<Box<JobRecord>> {
        if let Rec::Warm(b) = self
            && let Ok(v) = serde_json::to_vec(&**b)
        {
            let (base, delta) = bases.encode(owner, &v);
            if let Rec::Warm(old) = std::mem::replace(self, Rec::Cold(base, delta)) {
                return Some(old);
            }
        }
        None
    }

    pub fn is_warm(&self) -> bool {
        matches!(self, Rec::Warm(_))
    }
}

/// What a pass reads for every job, kept beside the boxed record and refreshed whenever the
/// record changes ([`SchedState::job_changed`] and the task transitions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hot {
    pub uid: u32,
    /// Interned owner and project names ([`SchedState::name`]).
    pub owner: u32,
    /// Interned name of the owner's department (a `DEPT` access list, else
    /// `defaultdepartment`).
    pub department: u32,
    /// Interned name of the owner's group (`@group` entries of access lists).
    pub group: u32,
    pub project: Option<u32>,
    pub submitted: i64,
    pub posix_priority: i32,
    pub deadline: Option<i64>,
    pub start_time: Option<i64>,
    pub reserve: bool,
    pub array_deps: bool,
    pub has_predecessors: bool,
    pub error: bool,
    pub has_pending: bool,
    /// Some pending task is not held.
    pub pending_unheld: bool,
    /// Every hold on some pending task (for the reason of a held job).
    pub holds: Holds,
    /// `-hold_jid` predecessors (empty, without allocation, for most jobs).
    pub predecessors: Box<[JobId]>,
    pub running: u32,
    pub running_since: Option<i64>,
    /// Urgency bonus of the queue its first running task is in.
    pub running_queue_urgency: f64,
    /// Interned Qube! cluster path of the job (`spec.cluster`, else the `-ac cluster=` context
    /// variable, else `/`), for the `cluster` policy.
    pub cluster: u32,
    /// Interned `-ac requires=a,b` context value: FBSNG node attributes the job requires.
    pub requires: Option<u32>,
    /// `spec.no_preempt`: never a preemption victim.
    pub no_preempt: bool,
    /// Pending tasks (held ones included).
    pub pending_tasks: u64,
}

impl Hot {
    /// Nothing pending or running: the job is over (a zombie until retired).
    pub fn is_done(&self) -> bool {
        !self.has_pending && self.running == 0
    }
}

/// How many running jobs' records [`SchedState::cool_idle`] keeps decoded (≈ 1.9 KB each).
pub(crate) const WARM_RUNNING_MAX: usize = 1024;

/// (expected end, job, task) of a running task, and a copy of what it holds (so that
/// planning a reservation releases and re-books it without a lookup of the task).
pub type EndOfTask = (i64, JobId, TaskId, super::cluster::Booking);

/// Bookkeeping of one running task: what it holds and when it is expected to end.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningBooking {
    pub booking: Booking,
    pub uid: u32,
    /// start + h_rt (or default_duration); `i64::MAX` when unknown.
    pub expected_end: i64,
    /// The devices it holds, given back when it ends.
    pub devices: Option<Box<HeldDevices>>,
}

/// Devices a running task holds: its host, and the ids granted by complex.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldDevices {
    pub host: String,
    pub grants: Vec<(String, Vec<String>)>,
}

/// The whole in-memory state of `sched_d`.
pub struct SchedState {
    pub config: ClusterConfig,
    pub cluster: Cluster,
    pub(crate) jobs: BTreeMap<JobId, JobEntry>,
    pub(crate) categories: Vec<Category>,
    cat_index: HashMap<String, CatId>,
    /// Some queue or host has access lists or projects ([`ClusterConfig::instances_fenced`]):
    /// a job's owner, group and project then belong to its category.
    fenced: bool,
    /// The first category of each fit shape ([`Category::shape`]), by its consumables and
    /// parallel environment and a hash of its candidate instances.
    shape_index: HashMap<(String, u64), CatId>,
    pub(crate) running: HashMap<(JobId, TaskId), RunningBooking>,
    pub(crate) user_running: HashMap<u32, u32>,
    /// Jobs with runs given up on an unknown host (`unknown_hosts`), so that finding them
    /// never walks every job.
    pub(crate) rescheduled_jobs: BTreeSet<JobId>,
    /// Device ids held by running tasks, by (host, complex): what a new task may not get.
    pub(crate) devices_used: HashMap<(String, String), BTreeSet<String>>,
    /// What `qmod` and errors set on queue instances (`all.q@node1`): disabled, suspended,
    /// in error; kept over configuration reloads, durable in `daemon/qinstances.json`.
    pub instance_states: crate::spool::QueueInstanceStates,
    pub(crate) policy: Box<dyn PriorityPolicy>,
    dirty: BTreeSet<JobId>,
    names: HashMap<String, u32>,
    pub(crate) name_list: Vec<String>,
    /// The ordered candidates of the last full pass, while still valid (see
    /// [`SchedState::schedule_event`]); `None` after any change to the set of jobs, a
    /// record, or the configuration.
    pub(crate) order_cache: Option<Vec<super::pass::Candidate>>,
    pub(crate) started_in_pass: std::collections::HashSet<JobId>,
    /// Buffers a full pass reuses instead of allocating (and page-faulting) tens of MB anew.
    pub(crate) scratch: super::pass::PassScratch,
    /// Jobs with `-hold_jid`/`-hold_jid_ad` predecessors: while there are any, a task's end
    /// may unblock another job, so it invalidates the order cache.
    dependent_jobs: usize,
    /// Running tasks sorted by expected end, for reservations within one pass (with the
    /// number of running tasks it was built from).
    pub(crate) ends_cache: Option<(usize, Vec<EndOfTask>)>,
    /// Jobs whose record was decoded since the last [`SchedState::cool_idle`].
    pub(crate) warm: BTreeSet<JobId>,
    /// Running jobs whose record [`SchedState::cool_idle`] kept decoded.
    warm_running: BTreeSet<JobId>,
    /// The reference records cold records are kept against ([`super::cold`]).
    pub(crate) cold_bases: super::cold::Bases,
    /// Per-job rows in job-id order, with the last pass's priorities, reasons and terms.
    pub(crate) rows: super::rows::JobRows,
    /// The Armada policy's decayed queue priorities and random state.
    pub(crate) armada: super::armada::ArmadaState,
    /// The FBSNG policy's dynamic queue and section priorities (persisted by the daemon).
    pub(crate) fbsng: super::fbsng::FbsngState,
    /// Qube! preemption: triggers, passive exclusions, kills in flight, restarts.
    pub(crate) qube: super::qube::QubeState,
    /// Advance reservations and what their jobs use of them (`sched::ar`).
    pub(crate) ars: super::ar::ArBook,
    /// No usage is charged at ends (the forecast's play, `sched::forecast`): an end then
    /// moves no tickets and keeps the order of the pending jobs.
    pub(crate) usage_frozen: bool,
    /// Every running job's record stays decoded until it ends, not [`WARM_RUNNING_MAX`]
    /// of them (the forecast: a record decoded to start the job is needed again at its end,
    /// and a cell runs at most as many jobs as it has slots).
    pub(crate) keep_running_warm: bool,
}

impl std::fmt::Debug for SchedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedState")
            .field("jobs", &self.jobs.len())
            .field("categories", &self.categories.len())
            .field("running", &self.running.len())
            .finish()
    }
}

/// Problems the state reports to the daemon (never fatal).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("job {0} is not known")]
    NoSuchJob(JobId),
    #[error("task {0}.{1} is not running")]
    NotRunning(JobId, TaskId),
}

fn category_key(spec: &crate::model::JobSpec) -> String {
    let mut res: Vec<(&str, &str)> = spec
        .hard_resources
        .iter()
        .map(|r| (r.name.as_str(), r.value.as_str()))
        .collect();
    res.sort_unstable();
    let pe = spec
        .pe
        .as_ref()
        .map(|p| (p.name.as_str(), p.range.min, p.range.max));
    serde_json::to_string(&(res, &spec.hard_queues, pe, spec.ar)).unwrap_or_default()
}

impl SchedState {
    /// An empty state over `config`, with Grid Engine's priority and no usage history yet
    /// (`sched_d` installs one fed from the accounting file).
    pub fn new(config: ClusterConfig) -> Self {
        let policy = super::sge_policy::SgePriority::new(&config, Default::default());
        Self::with_policy(config, Box::new(policy))
    }

    /// An empty state with the given priority policy (the seam the policy crate plugs into).
    pub fn with_policy(config: ClusterConfig, policy: Box<dyn PriorityPolicy>) -> Self {
        let fenced = config.instances_fenced();
        SchedState {
            cluster: Cluster::from_config(&config),
            config,
            jobs: BTreeMap::new(),
            categories: Vec::new(),
            cat_index: HashMap::new(),
            fenced,
            shape_index: HashMap::new(),
            running: HashMap::new(),
            user_running: HashMap::new(),
            rescheduled_jobs: BTreeSet::new(),
            instance_states: Default::default(),
            devices_used: HashMap::new(),
            policy,
            dirty: BTreeSet::new(),
            names: HashMap::new(),
            name_list: Vec::new(),
            order_cache: None,
            started_in_pass: std::collections::HashSet::new(),
            scratch: Default::default(),
            dependent_jobs: 0,
            ends_cache: None,
            warm: BTreeSet::new(),
            warm_running: BTreeSet::new(),
            cold_bases: Default::default(),
            rows: Default::default(),
            armada: super::armada::ArmadaState::default(),
            fbsng: super::fbsng::FbsngState::default(),
            qube: super::qube::QubeState::default(),
            ars: Default::default(),
            usage_frozen: false,
            keep_running_warm: false,
        }
    }

    /// Rebuilds the job map with full nodes. Jobs arrive in id order, which leaves a B-tree's
    /// nodes half empty; rebuilding from the sorted entries packs them (about 30 MB less
    /// for 100,000 jobs). Positions change, so the cached order goes.
    pub fn compact(&mut self) {
        let jobs = std::mem::take(&mut self.jobs);
        self.jobs = jobs.into_iter().collect();
        self.invalidate_order();
    }

    /// After most jobs left (a queue drained): gives back what was sized for the largest
    /// queue and is kept between passes: the job map's and the rows' room (repacked), the
    /// pass buffers, the ordered candidates, the policy's per-job caches and the hash maps'
    /// spare buckets. The next pass rebuilds what it needs, for the jobs there are. What the
    /// allocator then holds free is for the daemon to give back ([`crate::launch::trim_heap`]).
    pub fn release_spare_memory(&mut self) {
        self.compact();
        self.tidy_rows();
        self.order_cache = None;
        self.scratch = Default::default();
        self.ends_cache = None;
        self.policy.forget_caches();
        self.running.shrink_to_fit();
        self.user_running.shrink_to_fit();
        self.started_in_pass.shrink_to_fit();
        self.devices_used.shrink_to_fit();
    }

    /// Forgets the cached order: the next event pass is a full one.
    pub fn invalidate_order(&mut self) {
        // The allocation is kept for the next full pass's order.
        if let Some(v) = self.order_cache.take() {
            self.scratch.order = v;
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        let i = self.name_list.len() as u32;
        self.name_list.push(name.to_string());
        self.names.insert(name.to_string(), i);
        i
    }

    /// An interned user or project name.
    pub fn name(&self, i: u32) -> &str {
        self.name_list.get(i as usize).map_or("", String::as_str)
    }

    /// Recomputes a job's [`Hot`] fields from its record.
    pub(crate) fn refresh_hot(&mut self, id: JobId) {
        // Everything is read while the record is borrowed (no copy of it); names are
        // interned after.
        let (mut hot, owner, project, cluster, requires, department) = {
            let Some(r) = self.jobs.get(&id).and_then(|e| e.record.get()) else {
                return;
            };
            let running_queue_urgency = r
                .tasks
                .running
                .first()
                .and_then(|t| self.cluster.qi_index(&t.queue, &t.host))
                .map_or(0.0, |qi| self.cluster.qis[qi].urgency);
            let mut holds = Holds::NONE;
            for g in r.tasks.pending.iter().filter(|g| !g.tasks.is_empty()) {
                holds.user |= g.holds.user;
                holds.operator |= g.holds.operator;
                holds.system |= g.holds.system;
            }
            let hot = Hot {
                uid: r.submitter.uid,
                owner: 0,
                department: 0,
                group: 0,
                project: None,
                submitted: r.submitter.submission_time,
                posix_priority: r.spec.priority,
                deadline: r.spec.deadline,
                start_time: r.spec.start_time,
                reserve: r.spec.reserve,
                array_deps: !r.spec.array_predecessors.is_empty(),
                has_predecessors: !r.spec.predecessors.is_empty(),
                error: r.error.is_some(),
                has_pending: r.tasks.pending.iter().any(|g| !g.tasks.is_empty()),
                pending_unheld: r
                    .tasks
                    .pending
                    .iter()
                    .any(|g| !g.tasks.is_empty() && !g.holds.any()),
                holds,
                predecessors: r.spec.predecessors.clone().into_boxed_slice(),
                running: r.tasks.running.len() as u32,
                running_since: r.tasks.running.iter().map(|t| t.start_time).min(),
                running_queue_urgency,
                cluster: 0,
                requires: None,
                no_preempt: r.spec.no_preempt,
                pending_tasks: r.tasks.pending_count(),
            };
            let cluster = r.spec.cluster_path();
            let requires = r.spec.context.get("requires").cloned();
            let department = self
                .config
                .department_of(&r.submitter.owner, &r.submitter.group);
            (
                hot,
                r.submitter.owner.clone(),
                r.spec.project.clone(),
                cluster,
                requires,
                (department, r.submitter.group.clone()),
            )
        };
        hot.department = self.intern(&department.0);
        hot.group = self.intern(&department.1);
        hot.cluster = self.intern(&cluster);
        hot.requires = requires.as_deref().map(|q| self.intern(q));
        hot.owner = self.intern(&owner);
        hot.project = project.as_deref().map(|p| self.intern(p));
        let Some(e) = self.jobs.get_mut(&id) else {
            return;
        };
        let was_dependent = e.hot.has_predecessors || e.hot.array_deps;
        if let Some(row) = self.rows.rows.get_mut(e.row as usize) {
            *row = super::rows::Row::of(id, e.cat, &hot);
        }
        e.hot = hot;
        let dependent = e.hot.has_predecessors || e.hot.array_deps;
        match (was_dependent, dependent) {
            (false, true) => self.dependent_jobs += 1,
            (true, false) => self.dependent_jobs = self.dependent_jobs.saturating_sub(1),
            _ => {}
        }
    }

    /// Replaces the priority policy.
    pub fn set_policy(&mut self, policy: Box<dyn PriorityPolicy>) {
        self.policy = policy;
    }

    /// A job's record (decoded if it was cold).
    pub fn job(&self, id: JobId) -> Option<std::borrow::Cow<'_, JobRecord>> {
        self.jobs.get(&id).and_then(|e| e.record.get())
    }

    /// Every job id, in order.
    pub fn job_ids(&self) -> Vec<JobId> {
        self.jobs.keys().copied().collect()
    }

    /// Encodes the records decoded since the last call of jobs that only wait (no running
    /// task), and those of running jobs that were kept decoded at the last call and not
    /// touched since; returns how many. The daemon calls it after each pass. A running job's
    /// record is read again at its end (and by usage reports and writes), so it stays
    /// decoded for one call; one that runs for long would otherwise hold its 1.4 KB decoded
    /// for hours (6,000 running tasks: 12 MB). At most [`WARM_RUNNING_MAX`] stay so: after
    /// a pass that started thousands, their decoded records held through the next full
    /// pass were the top of `sched_d`'s heap, which is what stays resident.
    pub fn cool_idle(&mut self) -> usize {
        let touched = std::mem::take(&mut self.warm);
        let carried = std::mem::take(&mut self.warm_running);
        // The decoded records are freed once every delta is made: freed one by one, each
        // record's room took the next small delta, and thousands of such plugs left no run
        // of free heap long enough for the next pass's vectors, which then grew the heap.
        let mut decoded = Vec::new();
        for id in carried.difference(&touched) {
            if let Some(e) = self.jobs.get_mut(id) {
                if self.keep_running_warm && e.hot.running > 0 {
                    self.warm_running.insert(*id);
                } else {
                    decoded.extend(e.record.cool(&mut self.cold_bases, e.hot.owner));
                }
            }
        }
        for id in touched {
            if let Some(e) = self.jobs.get_mut(&id) {
                if e.hot.running == 0
                    || (!self.keep_running_warm && self.warm_running.len() >= WARM_RUNNING_MAX)
                {
                    decoded.extend(e.record.cool(&mut self.cold_bases, e.hot.owner));
                } else {
                    self.warm_running.insert(id);
                }
            }
        }
        decoded.len()
    }

    /// Why the job is not running, as of the last pass (`qstat -j`).
    pub fn pending_reasons(&self, id: JobId) -> &[String] {
        self.jobs
            .get(&id)
            .and_then(|e| self.rows.reasons.get(e.row as usize))
            .map_or(&[], |r| &r[..])
    }

    /// The last pass's priority of an entry's job.
    pub(crate) fn priority_of(&self, e: &JobEntry) -> Option<&PriorityInfo> {
        self.rows
            .priority
            .get(e.row as usize)
            .and_then(Option::as_ref)
    }

    /// The priority of the last pass (`qstat -pri`/`-urg`/`-ext`); zeros for held jobs.
    pub fn priority(&self, id: JobId) -> Option<&PriorityInfo> {
        self.jobs.get(&id).and_then(|e| self.priority_of(e))
    }

    /// The active policy's terms for a job (`PriorityInfo::policy_terms` once written).
    pub fn policy_terms(&self, id: JobId) -> &[(String, String)] {
        self.jobs
            .get(&id)
            .and_then(|e| self.rows.terms_of(e.row as usize))
            .map_or(&[], |t| &t[..])
    }

    /// The record as it is to be written to the spool: with the last pass's priority and
    /// pending reasons.
    pub fn record_for_write(&self, id: JobId) -> Option<JobRecord> {
        let e = self.jobs.get(&id)?;
        let mut r = e.record.get()?.into_owned();
        let row = e.row as usize;
        r.pending_reasons = self
            .rows
            .reasons
            .get(row)
            .map_or(Vec::new(), |r| r.to_vec());
        r.priority = self.priority_of(e).cloned();
        if let (Some(p), Some(t)) = (r.priority.as_mut(), self.rows.terms_of(row)) {
            p.policy_terms = t.to_vec();
        }
        Some(r)
    }

    /// What a state file written now would show of the job's priority.
    fn shown_priority(&self, e: &JobEntry) -> Option<u64> {
        let p = self.priority_of(e)?;
        let terms = self
            .rows
            .terms_of(e.row as usize)
            .map_or(&[][..], |t| &t[..]);
        Some(p.shown_fingerprint(terms))
    }

    /// Notes that the record was written as [`SchedState::record_for_write`] gave it.
    pub fn note_written(&mut self, id: JobId) {
        let shown = self.jobs.get(&id).and_then(|e| self.shown_priority(e));
        if let Some(e) = self.jobs.get_mut(&id) {
            e.written_priority = shown;
        }
    }

    /// Marks at most `limit` jobs whose priority as `qstat` shows it (any column, not only
    /// `prio`) changed since their state was written (waiting time grows, tickets move),
    /// continuing after `*cursor`, so that `qstat`'s priority columns follow without
    /// rewriting 100,000 state files per periodic pass. Returns how many.
    pub fn refresh_stale_priorities(&mut self, cursor: &mut JobId, limit: usize) -> usize {
        let mut marked = Vec::new();
        let start = *cursor;
        let after = self.jobs.range(JobId(start.0.saturating_add(1))..);
        let before = self.jobs.range(..=start);
        for (id, e) in after.chain(before) {
            if marked.len() >= limit {
                break;
            }
            let stale = match (self.shown_priority(e), e.written_priority) {
                (Some(a), b) => Some(a) != b,
                (None, _) => false,
            };
            if stale {
                marked.push(*id);
            }
            *cursor = *id;
        }
        let n = marked.len();
        for id in marked {
            self.dirty.insert(id);
        }
        n
    }

    pub fn job_count(&self) -> usize {
        self.jobs.len()
    }

    pub fn category_count(&self) -> usize {
        self.categories.iter().filter(|c| c.jobs > 0).count()
    }

    /// Job ids whose record changed since the last call (to be written with `write_state`).
    pub fn take_dirty(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.dirty).into_iter().collect()
    }

    pub fn mark_dirty(&mut self, id: JobId) {
        self.dirty.insert(id);
    }

    fn category_for(
        &mut self,
        spec: &crate::model::JobSpec,
        who: &crate::model::Submitter,
    ) -> CatId {
        let mut key = category_key(spec);
        let who = self.fenced.then_some(who);
        if let Some(w) = who {
            // SGE's categories also carry the user where access lists are in use.
            use std::fmt::Write as _;
            let _ = write!(
                key,
                "\u{1f}{}\u{1f}{}\u{1f}{}",
                w.owner,
                w.group,
                spec.project.as_deref().unwrap_or("")
            );
        }
        if let Some(&c) = self.cat_index.get(&key) {
            return c;
        }
        let mut cat = self.build_category(key.clone(), spec, who);
        let id = self.categories.len();
        cat.shape = id;
        if let Ok(d) = &cat.demand {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            cat.candidates.hash(&mut h);
            let shape_key = (format!("{:?} {:?}", d.consumables, d.pe), h.finish());
            match self.shape_index.get(&shape_key) {
                // The same hash of other instances would be a collision: no sharing then.
                Some(&first) if self.categories[first].candidates == cat.candidates => {
                    cat.shape = first;
                }
                Some(_) => {}
                None => {
                    self.shape_index.insert(shape_key, id);
                }
            }
        }
        self.categories.push(cat);
        self.cat_index.insert(key, id);
        id
    }

    fn build_category(
        &self,
        key: String,
        spec: &crate::model::JobSpec,
        who: Option<&crate::model::Submitter>,
    ) -> Category {
        let demand = Demand::build(&self.cluster, &self.config, spec);
        let mut candidates = Vec::new();
        let mut static_reason = None;
        if let Ok(d) = &demand {
            let mut first_miss = None;
            let fences = who.map(|w| super::access::Fences::new(&self.config, w, spec));
            let mut refusals: Vec<String> = Vec::new();
            for qi in 0..self.cluster.qis.len() {
                match d.static_fit(&self.cluster, qi) {
                    Ok(()) => {
                        let q = &self.cluster.qis[qi];
                        match fences
                            .as_ref()
                            .map(|f| f.refusal(&q.queue, &self.cluster.hosts[q.host].name))
                        {
                            Some(Some(why)) => {
                                if !refusals.contains(&why) {
                                    refusals.push(why);
                                }
                            }
                            _ => candidates.push(qi),
                        }
                    }
                    Err(m) => {
                        if first_miss.is_none() {
                            first_miss = Some(m);
                        }
                    }
                }
            }
            if candidates.is_empty() && !refusals.is_empty() {
                static_reason = Some(refusals.join("\n"));
            } else if candidates.is_empty() {
                static_reason = Some(match first_miss {
                    Some(StaticMiss::QueueList) => format!(
                        "cannot run in any queue instance because none is contained in its hard queue list (-q {})",
                        spec.hard_queues.join(",")
                    ),
                    Some(StaticMiss::Fixed(r)) => {
                        format!(
                            "(-l {r}) cannot run in any queue instance: no host or queue offers it"
                        )
                    }
                    Some(StaticMiss::Pe) => format!(
                        "cannot run because no queue instance offers parallel environment \"{}\"",
                        spec.pe.as_ref().map(|p| p.name.as_str()).unwrap_or("")
                    ),
                    None => "cannot run because there are no queue instances".to_string(),
                });
            }
        }
        Category {
            key,
            demand,
            candidates,
            static_reason,
            jobs: 0,
            last_failure: None,
            shape: 0,
        }
    }

    /// Expected run time of a job's tasks for reservations: `h_rt`, else the scheduler's
    /// `default_duration` (`sched_conf(5)`); `None` for INFINITY.
    pub(crate) fn duration(&self, cat: CatId) -> Option<i64> {
        let h_rt = self.categories[cat]
            .demand
            .as_ref()
            .ok()
            .and_then(|d| d.h_rt);
        let d = h_rt.or_else(|| parse_time(&self.config.scheduler.default_duration))?;
        (d != i64::MAX).then_some(d)
    }

    /// Adds a job (new submission or recovered record). Its running tasks are booked again
    /// from their recorded placement. Returns false when the id is already known.
    pub fn add_job(&mut self, mut record: JobRecord) -> bool {
        if self.jobs.contains_key(&record.id) {
            return false;
        }
        let cat = self.category_for(&record.spec, &record.submitter);
        self.categories[cat].jobs += 1;
        let id = record.id;
        if !record.tasks.rescheduled.is_empty() {
            self.rescheduled_jobs.insert(id);
        }
        let running: Vec<RunningTask> = record.tasks.running.clone();
        let reasons: Arc<[String]> = Arc::from(std::mem::take(&mut record.pending_reasons));
        let priority = record.priority.take();
        let written_priority = priority
            .as_ref()
            .map(|p| p.shown_fingerprint(&p.policy_terms));
        let row = self.rows.push(id, priority, reasons);
        self.jobs.insert(
            id,
            JobEntry {
                record: Rec::Warm(Box::new(record)),
                cat,
                hot: Hot::default(),
                row,
                written_priority,
            },
        );
        self.refresh_hot(id);
        self.preemption_trigger(id);
        self.warm.insert(id);
        for r in running {
            self.book_recovered(id, &r);
        }
        self.invalidate_order();
        true
    }

    fn book_recovered(&mut self, id: JobId, r: &RunningTask) {
        let Some(entry) = self.jobs.get(&id) else {
            return;
        };
        let grant_names = r.grants();
        let grant: Vec<(usize, u32)> = grant_names
            .iter()
            .filter_map(|(h, q, n)| self.cluster.qi_index(q, h).map(|qi| (qi, *n)))
            .collect();
        let cat = entry.cat;
        let uid = entry.hot.uid;
        let pe_request = entry.record.get().and_then(|r| r.spec.pe.clone());
        let in_ar = entry.record.get().and_then(|r| r.spec.ar);
        let pe = pe_request.as_ref().and_then(|p| {
            let first = grant.first()?;
            self.cluster
                .pes
                .iter()
                .position(|s| {
                    pattern::matches(&p.name, &s.name)
                        && self.cluster.qis[first.0].pe_list.contains(&s.name)
                })
                .map(|i| (i, r.slots))
        });
        let owner = self.quota_owner(id);
        let mut booking = match &self.categories[cat].demand {
            Ok(d) => fit::booking(&self.cluster, d, &grant, pe),
            Err(_) => Booking {
                slots: grant.clone(),
                consumables: Vec::new(),
                pe,
                quota: Vec::new(),
            },
        };
        if let Some(owner) = owner {
            // A task running when the daemon (re)starts counts against the quotas as one
            // it starts does.
            let pe_name = pe.map(|(i, _)| self.cluster.pes[i].name.clone());
            booking.quota = self.cluster.quotas.debits(
                &self.cluster,
                &owner,
                pe_name.as_deref(),
                &grant,
                self.categories[cat].demand.as_ref().ok(),
            );
        }
        let expected_end = self
            .duration(cat)
            .map_or(i64::MAX, |d| r.start_time.saturating_add(d));
        // A task in an advance reservation uses the reservation's capacity, not the
        // cluster's (`sched::ar`).
        let booking = match in_ar {
            Some(ar) => {
                self.ars.used.insert((id, r.task), (ar, booking));
                Booking::default()
            }
            None => booking,
        };
        self.cluster.book(&booking);
        let devices = self.hold_devices(&r.host, &r.devices);
        *self.user_running.entry(uid).or_insert(0) += 1;
        self.running.insert(
            (id, r.task),
            RunningBooking {
                booking,
                uid,
                expected_end,
                devices,
            },
        );
    }

    /// Whose job `id` is for the resource quota sets; `None` when no set is enabled (no
    /// name is copied then).
    pub(crate) fn quota_owner(&self, id: JobId) -> Option<super::quota::QuotaOwner> {
        if self.cluster.quotas.is_empty() {
            return None;
        }
        let e = self.jobs.get(&id)?;
        Some(self.cluster.quotas.owner(
            self.name(e.hot.owner),
            self.name(e.hot.group),
            e.hot.project.map(|p| self.name(p)),
        ))
    }

    /// Marks `grants` on `host` as held; what a booking keeps to give them back.
    pub(crate) fn hold_devices(
        &mut self,
        host: &str,
        grants: &[(String, Vec<String>)],
    ) -> Option<Box<HeldDevices>> {
        if grants.is_empty() {
            return None;
        }
        for (kind, ids) in grants {
            self.devices_used
                .entry((host.to_string(), kind.clone()))
                .or_default()
                .extend(ids.iter().cloned());
        }
        Some(Box::new(HeldDevices {
            host: host.to_string(),
            grants: grants.to_vec(),
        }))
    }

    /// The devices a task of `id` placed on `placement` is granted: for each complex the host
    /// has devices of and the job requests, its count per slot (per job for a `JOB`
    /// consumable) of the lowest ids no running task holds. Not yet held (see
    /// [`SchedState::hold_devices`]).
    pub(crate) fn grant_devices(
        &self,
        id: JobId,
        placement: &crate::model::Placement,
    ) -> Vec<(String, Vec<String>)> {
        let Some(host) = self.config.host(&placement.host) else {
            return Vec::new();
        };
        if host.devices.is_empty() {
            return Vec::new();
        }
        let Some(record) = self.jobs.get(&id).and_then(|e| e.record.get()) else {
            return Vec::new();
        };
        let requests = &record.spec.hard_resources;
        let mut out = Vec::new();
        for (kind, ids) in &host.devices {
            let Some(c) = self.config.complex(kind) else {
                continue;
            };
            let requested = requests
                .iter()
                .find(|r| r.name == c.name || r.name == c.shortcut)
                .and_then(|r| r.value.parse::<f64>().ok())
                .map_or(0, |v| v.max(0.0) as u32);
            if requested == 0 {
                continue;
            }
            let count = if c.consumable == crate::config::Consumable::Job {
                requested
            } else {
                requested.saturating_mul(placement.slots)
            };
            let used = self.devices_used.get(&(host.name.clone(), kind.clone()));
            let chosen: Vec<String> = ids
                .iter()
                .filter(|i| used.is_none_or(|u| !u.contains(*i)))
                .take(count as usize)
                .cloned()
                .collect();
            out.push((kind.clone(), chosen));
        }
        out
    }

    /// Removes a job entirely (retired or deleted); its running bookings are released.
    pub fn remove_job(&mut self, id: JobId) -> Option<JobRecord> {
        let entry = self.jobs.remove(&id)?;
        self.rescheduled_jobs.remove(&id);
        self.rows.kill(entry.row, &Arc::from(Vec::new()));
        self.invalidate_order();
        if entry.hot.has_predecessors || entry.hot.array_deps {
            self.dependent_jobs = self.dependent_jobs.saturating_sub(1);
        }
        self.categories[entry.cat].jobs = self.categories[entry.cat].jobs.saturating_sub(1);
        let record = entry.record.get().map(std::borrow::Cow::into_owned);
        for r in record.iter().flat_map(|r| r.tasks.running.iter()) {
            self.release(id, r.task);
        }
        self.warm.remove(&id);
        self.warm_running.remove(&id);
        self.dirty.remove(&id);
        record
    }

    fn release(&mut self, id: JobId, task: TaskId) {
        self.ars.used.remove(&(id, task));
        if let Some(b) = self.running.remove(&(id, task)) {
            self.cluster.release(&b.booking);
            if let Some(d) = &b.devices {
                for (kind, ids) in &d.grants {
                    if let Some(used) = self.devices_used.get_mut(&(d.host.clone(), kind.clone())) {
                        for i in ids {
                            used.remove(i);
                        }
                    }
                }
            }
            if let Some(n) = self.user_running.get_mut(&b.uid) {
                *n = n.saturating_sub(1);
            }
        }
    }

    /// Mutable access to a record for a request; call [`SchedState::job_changed`] after.
    pub fn job_mut(&mut self, id: JobId) -> Option<&mut JobRecord> {
        let e = self.jobs.get_mut(&id)?;
        self.warm.insert(id);
        e.record.warm()
    }

    /// Re-derives what depends on a record after it changed (`qalter` may change the
    /// category) and marks it to be written.
    pub fn job_changed(&mut self, id: JobId) {
        let Some(entry) = self.jobs.get(&id) else {
            return;
        };
        let old = entry.cat;
        let Some((spec, who)) = entry
            .record
            .get()
            .map(|r| (r.spec.clone(), r.submitter.clone()))
        else {
            return;
        };
        let cat = self.category_for(&spec, &who);
        if cat != old {
            self.categories[old].jobs = self.categories[old].jobs.saturating_sub(1);
            self.categories[cat].jobs += 1;
            if let Some(e) = self.jobs.get_mut(&id) {
                e.cat = cat;
            }
        }
        self.refresh_hot(id);
        self.preemption_trigger(id);
        self.invalidate_order();
        self.dirty.insert(id);
    }

    /// `t` → `r`: the launcher confirmed the task runs. The record is not marked to be
    /// written: the daemon writes it lazily (`RUNNING_STATE_DELAY` in `daemon.rs`).
    pub fn task_started(&mut self, id: JobId, task: TaskId) -> Result<(), StateError> {
        let job = self.job_mut(id).ok_or(StateError::NoSuchJob(id))?;
        let r = job
            .tasks
            .running
            .iter_mut()
            .find(|r| r.task == task)
            .ok_or(StateError::NotRunning(id, task))?;
        if r.state == RunState::Transferring {
            r.state = RunState::Running;
        }
        Ok(())
    }

    /// The task ended: it leaves the running list, its resources are free again and the
    /// job's finished count grows. Returns the task as it ran.
    pub fn task_ended(&mut self, id: JobId, task: TaskId) -> Result<RunningTask, StateError> {
        let job = self.job_mut(id).ok_or(StateError::NoSuchJob(id))?;
        let pos = job
            .tasks
            .running
            .iter()
            .position(|r| r.task == task)
            .ok_or(StateError::NotRunning(id, task))?;
        let r = job.tasks.running.remove(pos);
        job.tasks.finished += 1;
        job.tasks.finished_tasks.insert(task);
        self.release(id, task);
        self.refresh_hot(id);
        // A successor may be released; and the end's usage, charged to the share tree by the
        // accounting, moves the tickets: the next pass is a full one, as SGE's scheduler run
        // after a job's end sees its usage (an event pass would reuse an order computed
        // before it).
        if self.dependent_jobs > 0 || self.ends_move_tickets() {
            self.invalidate_order();
        }
        self.dirty.insert(id);
        Ok(r)
    }

    /// Whether share-tree tickets count in the priority that orders the jobs (SGE's, which
    /// `cluster` and `armada` use inside their own order too), so that usage charged at a
    /// task's end changes the order of the pending jobs.
    fn ends_move_tickets(&self) -> bool {
        use crate::config::PolicyOrder;
        if self.usage_frozen {
            return false;
        }
        let s = &self.config.scheduler;
        matches!(
            s.policy,
            PolicyOrder::Sge | PolicyOrder::Cluster | PolicyOrder::Armada
        ) && self.config.share_tree.is_some()
            && s.weight_tickets_share > 0.0
            && s.weight_ticket > 0.0
    }

    /// A running task that a forced `qdel -f` took out of its record: its slots are free at
    /// once (SGE forgets the task in the qmaster and lets execd finish killing it).
    pub fn forget_running(&mut self, id: JobId, task: TaskId) {
        self.release(id, task);
        if let Some(job) = self.job_mut(id) {
            job.tasks.finished += 1;
            job.tasks.finished_tasks.insert(task);
        }
        self.refresh_hot(id);
        self.dirty.insert(id);
    }

    /// Puts a running task back to pending (its host was unreachable, or it never started
    /// before a crash): not lost, not failed. With `error`, the job goes to error state
    /// (`Eqw`), as SGE does when a job cannot be started.
    pub fn requeue_task(
        &mut self,
        id: JobId,
        task: TaskId,
        error: Option<ErrorInfo>,
    ) -> Result<(), StateError> {
        let job = self.job_mut(id).ok_or(StateError::NoSuchJob(id))?;
        let pos = job
            .tasks
            .running
            .iter()
            .position(|r| r.task == task)
            .ok_or(StateError::NotRunning(id, task))?;
        // A restart that did not get going is still a restart.
        if job.tasks.running.remove(pos).restarted {
            job.tasks.restarted.insert(task);
        }
        if let Some(g) = job
            .tasks
            .pending
            .iter_mut()
            .find(|g| g.holds == Holds::NONE)
        {
            g.tasks.insert(task);
        } else {
            let mut tasks = TaskSet::new();
            tasks.insert(task);
            job.tasks.pending.push(PendingGroup {
                tasks,
                holds: Holds::NONE,
            });
        }
        if error.is_some() {
            job.error = error;
        }
        self.release(id, task);
        self.refresh_hot(id);
        // The task is pending again: its job may not be among the cached candidates.
        self.invalidate_order();
        self.dirty.insert(id);
        Ok(())
    }

    /// A task that ran is pending again and its next run a restart (`Rq`, then `Rr` with
    /// `RESTARTED=1`): preempted, given up on a lost host, or rescheduled by `qmod -r`.
    pub fn requeue_restarted(&mut self, id: JobId, task: TaskId) -> Result<(), StateError> {
        self.requeue_task(id, task, None)?;
        if let Some(job) = self.job_mut(id) {
            job.tasks.restarted.insert(task);
        }
        Ok(())
    }

    /// The launcher could not reach `host`: no task goes there until the backoff expires
    /// (10 s, doubling per consecutive failure, at most [`crate::launch::MAX_HOST_RETRY`]:
    /// `sched_d(8)` promises a host that is down is tried again at least that often).
    pub fn host_unreachable(&mut self, host: &str, now: i64) -> Option<i64> {
        let h = self.cluster.host_index(host)?;
        let hs = &mut self.cluster.hosts[h];
        hs.failures = hs.failures.saturating_add(1);
        let most = crate::launch::MAX_HOST_RETRY.as_secs() as i64;
        let backoff = (10i64 << hs.failures.min(6).saturating_sub(1)).min(most);
        hs.down_until = Some(now + backoff);
        Some(now + backoff)
    }

    /// A task started on `host`: it is reachable again.
    pub fn host_reachable(&mut self, host: &str) {
        if let Some(h) = self.cluster.host_index(host) {
            self.cluster.hosts[h].failures = 0;
            self.cluster.hosts[h].down_until = None;
        }
    }

    /// `qmod -d`/`-e` of a queue instance (`all.q@node1`): whether it changed. An instance
    /// the configuration does not have is remembered all the same (it may come with a
    /// reload).
    pub fn set_instance_disabled(&mut self, name: &str, disabled: bool) -> bool {
        let configured = self.configured_disabled(name);
        let changed = self
            .instance_states
            .set_disabled(name, disabled, configured);
        self.apply_instance_state(name);
        changed
    }

    /// Whether the configuration disables queue instance `name`'s queue (its initial state).
    pub(super) fn configured_disabled(&self, name: &str) -> bool {
        self.config
            .queue_instance_named(name)
            .is_some_and(|q| q.disabled)
    }

    /// `qmod -sq`/`-usq` of a queue instance: whether it changed. The daemon stops or
    /// continues its tasks ([`SchedState::tasks_in_instance`]).
    pub fn set_instance_suspended(&mut self, name: &str, suspended: bool) -> bool {
        let set = &mut self.instance_states.suspended;
        let changed = if suspended {
            set.insert(name.to_string())
        } else {
            set.remove(name)
        };
        self.apply_instance_state(name);
        changed
    }

    /// What queue instance `name`'s calendar says of it now (`None`: it has none): whether
    /// its calendar state changed. The daemon stops or continues its tasks.
    pub fn set_instance_calendar(
        &mut self,
        name: &str,
        state: Option<crate::config::CalendarState>,
    ) -> bool {
        let changed = self.instance_states.set_calendar(name, state);
        if changed {
            self.apply_instance_state(name);
        }
        changed
    }

    /// Puts a queue instance in error state (`E`, with why) or, with `None`, clears it
    /// (`qmod -cq`): whether it changed.
    pub fn set_instance_error(&mut self, name: &str, why: Option<String>) -> bool {
        let errors = &mut self.instance_states.errors;
        let changed = match why {
            Some(w) => errors.insert(name.to_string(), w).is_none(),
            None => errors.remove(name).is_some(),
        };
        self.apply_instance_state(name);
        changed
    }

    /// The running tasks that hold slots of queue instance `name` (`all.q@node1`), as their
    /// master or as a slave of a parallel job.
    pub fn tasks_in_instance(&self, name: &str) -> Vec<(JobId, TaskId)> {
        let Some((queue, host)) = name.split_once('@') else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (id, task, _) in self.running_tasks() {
            let Some(job) = self.job(id) else { continue };
            if let Some(r) = job.tasks.running.iter().find(|r| r.task == task)
                && ((r.queue == queue && r.host == host)
                    || r.granted.iter().any(|(h, q, _)| h == host && q == queue))
            {
                out.push((id, task));
            }
        }
        out
    }

    /// Whether queue instance `name` takes new work after a change of its states: only its
    /// own entry is looked at, so `qmod -sq` of every instance stays linear.
    fn apply_instance_state(&mut self, name: &str) {
        let Some((queue, host)) = name.split_once('@') else {
            return;
        };
        if let Some(qi) = self.cluster.qi_index(queue, host) {
            let configured = self.configured_disabled(name);
            self.cluster.qis[qi].disabled = self.instance_states.closed(name, configured);
            self.invalidate_order();
        }
    }

    /// The cluster's queue instances that take no new work, as the configuration and
    /// `qmod` say (disabled, suspended, in error).
    fn apply_instance_states(&mut self) {
        for qi in 0..self.cluster.qis.len() {
            let q = &self.cluster.qis[qi];
            let name = format!("{}@{}", q.queue, self.cluster.hosts[q.host].name);
            let configured = self.configured_disabled(&name);
            self.cluster.qis[qi].disabled = self.instance_states.closed(&name, configured);
        }
        self.invalidate_order();
    }

    /// Takes the queue instances' states as the spool holds them (the forecast's copy of the
    /// cell, `sched::forecast::cell`), calendars' included.
    pub(crate) fn restore_instance_states(&mut self, states: crate::spool::QueueInstanceStates) {
        self.instance_states = states;
        self.apply_instance_states();
    }

    /// Hosts marked unreachable, with the time they will be retried.
    pub fn hosts_down(&self) -> Vec<(String, i64)> {
        self.cluster
            .hosts
            .iter()
            .filter_map(|h| h.down_until.map(|t| (h.name.clone(), t)))
            .collect()
    }

    /// Applies a new configuration (SIGHUP): resources and categories are rebuilt and the
    /// running tasks booked again where their queue instances still exist.
    pub fn reload_config(&mut self, config: ClusterConfig) {
        let down: Vec<(String, Option<i64>, u32, bool)> = self
            .cluster
            .hosts
            .iter()
            .map(|h| (h.name.clone(), h.down_until, h.failures, h.unknown))
            .collect();
        self.policy.reconfigure(&config);
        self.fenced = config.instances_fenced();
        self.config = config;
        self.cluster = Cluster::from_config(&self.config);
        for (name, until, failures, unknown) in down {
            if let Some(i) = self.cluster.host_index(&name) {
                self.cluster.hosts[i].down_until = until;
                self.cluster.hosts[i].failures = failures;
                self.cluster.hosts[i].unknown = unknown;
            }
        }
        self.apply_instance_states();
        self.invalidate_order();
        self.categories.clear();
        self.cat_index.clear();
        self.shape_index.clear();
        self.running.clear();
        self.user_running.clear();
        // Reservations are booked again by name on the new cluster.
        let ars: Vec<crate::model::ArRecord> = std::mem::take(&mut self.ars.holds)
            .into_values()
            .map(|h| h.record)
            .collect();
        self.ars.used.clear();
        for r in ars {
            self.restore_ar(r);
        }
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            let Some((spec, who)) = self
                .jobs
                .get(&id)
                .and_then(|e| e.record.get())
                .map(|r| (r.spec.clone(), r.submitter.clone()))
            else {
                continue;
            };
            let cat = self.category_for(&spec, &who);
            self.categories[cat].jobs += 1;
            let running = match self.jobs.get_mut(&id) {
                Some(e) => {
                    e.cat = cat;
                    e.record
                        .get()
                        .map(|r| r.tasks.running.clone())
                        .unwrap_or_default()
                }
                None => continue,
            };
            for r in running {
                self.book_recovered(id, &r);
            }
            self.refresh_hot(id);
        }
    }

    /// Jobs whose every task has ended (zombies until the daemon retires them).
    pub fn done_jobs(&self) -> Vec<JobId> {
        self.jobs
            .iter()
            .filter(|(_, e)| e.hot.is_done())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Sets when a running task is expected to end: the forecast (`sched::forecast`) plays
    /// run times of its own, where a start books its limit.
    pub(crate) fn set_expected_end(&mut self, id: JobId, task: TaskId, end: i64) {
        if let Some(b) = self.running.get_mut(&(id, task)) {
            b.expected_end = end;
        }
        self.ends_cache = None;
    }

    /// Running tasks as (job, task, expected end).
    pub fn running_tasks(&self) -> Vec<(JobId, TaskId, i64)> {
        let mut v: Vec<_> = self
            .running
            .iter()
            .map(|(&(j, t), b)| (j, t, b.expected_end))
            .collect();
        v.sort_unstable();
        v
    }

    /// The category verdict inputs for tests and `qstat`: (key, jobs).
    pub fn categories(&self) -> Vec<(String, usize)> {
        self.categories
            .iter()
            .filter(|c| c.jobs > 0)
            .map(|c| (c.key.clone(), c.jobs))
            .collect()
    }
}
