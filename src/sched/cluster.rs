//! The resources the scheduler hands out: execution hosts, queue instances (a cluster queue on
//! one host, `queue_conf(5)`), consumables at the global, host and queue level
//! (`complex(5)`), and parallel environments (`sge_pe(5)`). Pure data and arithmetic; the pass
//! decides, this module books.
//!
//! Global consumables are the `complex_values` of a host named `global`, as in SGE, where the
//! global host is `qconf -se global`; that host offers no slots and is in no queue.

use super::value::{parse_numeric, request_met};
use crate::compat::pattern;
use crate::config::{ClusterConfig, Complex, Consumable};
use std::collections::HashMap;

/// The name of the pseudo-host that carries cluster-wide consumables.
pub const GLOBAL_HOST: &str = crate::config::GLOBAL_HOST;

/// Capacities and current use of consumables at one level.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    pub cap: HashMap<String, f64>,
    pub used: HashMap<String, f64>,
}

impl Pool {
    /// Free amount of `name`, `None` when this level does not define it.
    pub fn free(&self, name: &str) -> Option<f64> {
        self.cap
            .get(name)
            .map(|c| c - self.used.get(name).copied().unwrap_or(0.0))
    }

    fn add(&mut self, name: &str, amount: f64) {
        if self.cap.contains_key(name) {
            *self.used.entry(name.to_string()).or_insert(0.0) += amount;
        }
    }
}

/// An execution host.
#[derive(Debug, Clone)]
pub struct HostState {
    pub name: String,
    pub slots_cap: u32,
    pub slots_used: u32,
    pub consumables: Pool,
    /// Non-consumable `complex_values` plus `arch` and `hostname`.
    pub values: HashMap<String, String>,
    /// Host groups (`@name`) the host belongs to, for `-q queue@@group`.
    pub groups: Vec<String>,
    /// Marked unreachable by the launcher until this time (seconds since the epoch).
    pub down_until: Option<i64>,
    /// Consecutive failures to reach it: the retry backoff doubles with each.
    pub failures: u32,
    /// Nothing heard from it for `max_unheard` (`au`): no new work until it is heard again.
    pub unknown: bool,
    /// It has devices to grant (`hosts[].devices`): a start there looks them up.
    pub devices: bool,
}

/// A cluster queue on one host.
#[derive(Debug, Clone)]
pub struct QueueInstance {
    pub queue: String,
    pub host: usize,
    pub slots_cap: u32,
    pub slots_used: u32,
    pub seq_no: u32,
    pub urgency: f64,
    /// Takes no new work: disabled (the configuration, `qmod -d`), suspended or in error.
    pub disabled: bool,
    pub pe_list: Vec<String>,
    /// Bit `i` set when the `i`-th parallel environment ([`Cluster::pes`]) is in
    /// `pe_list`, for the first 64: a PE fit tests thousands of queue instances, and a bit
    /// test costs less than comparing names ([`QueueInstance::has_pe`]).
    pub pe_mask: u64,
    pub consumables: Pool,
    /// Non-consumable `complex_values`, the queue's limits (`h_rt`, …) and `qname`.
    pub values: HashMap<String, String>,
    /// Slots promised to reservations made in this pass: (from, slots). Added through
    /// [`Cluster::reserve`], which keeps the list of instances to clear.
    pub reserved: Vec<(i64, u32)>,
}

impl QueueInstance {
    /// Whether parallel environment `pe` (an index into [`Cluster::pes`], named `name`) is
    /// in the queue's `pe_list`.
    pub fn has_pe(&self, pe: usize, name: &str) -> bool {
        if pe < 64 {
            self.pe_mask & (1 << pe) != 0
        } else {
            self.pe_list.iter().any(|n| n == name)
        }
    }

    pub fn full_name(&self, hosts: &[HostState]) -> String {
        format!("{}@{}", self.queue, hosts[self.host].name)
    }
}

/// Where a consumable is booked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Global,
    Host(usize),
    Queue(usize),
}

/// Everything one running task holds, so that it can be given back when it ends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Booking {
    /// (queue instance, slots).
    pub slots: Vec<(usize, u32)>,
    pub consumables: Vec<(Level, String, f64)>,
    /// Parallel environment index and its slots.
    pub pe: Option<(usize, u32)>,
    /// What it takes from the resource quota sets' counters.
    pub quota: Vec<super::quota::QuotaDebit>,
}

/// A parallel environment and how many of its slots are in use.
#[derive(Debug, Clone)]
pub struct PeState {
    pub name: String,
    pub slots_cap: u32,
    pub slots_used: u32,
    pub rule: AllocationRule,
}

/// `allocation_rule` of `sge_pe(5)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocationRule {
    /// `$pe_slots`: every slot on one host.
    PeSlots,
    /// `$fill_up`: fill each host before the next.
    FillUp,
    /// `$round_robin`: one slot per host in turn.
    RoundRobin,
    /// A fixed number of slots per host.
    PerHost(u32),
}

impl AllocationRule {
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "$pe_slots" => Some(AllocationRule::PeSlots),
            "$fill_up" => Some(AllocationRule::FillUp),
            "$round_robin" => Some(AllocationRule::RoundRobin),
            n => n
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(AllocationRule::PerHost),
        }
    }
}

/// The cluster's resources, built from the configuration; bookings are added and removed as
/// tasks start and end.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    pub hosts: Vec<HostState>,
    /// Queue instances in the order the scheduler tries them: `seq_no`, then configuration
    /// order of queues, then of hosts (`queue_sort_method seqno`).
    pub qis: Vec<QueueInstance>,
    pub global: Pool,
    pub pes: Vec<PeState>,
    /// Every complex by full name, and shortcuts to full names.
    pub complexes: HashMap<String, Complex>,
    pub shortcuts: HashMap<String, String>,
    /// Bit `qi` set when queue instance `qi` and its host both have a free slot. A fit tests
    /// this bit before reading the instance (a few hundred bytes with its host, its
    /// reservations and consumables): on a full cluster, where every category fails once per
    /// pass, a failed fit costs one bit test per candidate instead of two cache misses.
    /// Kept by [`Cluster::apply`], the only code that changes `slots_used`; a bit set says
    /// only that there may be room (reservations and consumables are the fit's to check).
    room: Vec<u64>,
    /// Free slots of each queue instance (the smaller of its own and its host's), and how
    /// many instances have each positive count: the largest key bounds what any one
    /// instance can give, so that a `$pe_slots` job larger than every instance's free slots
    /// fails without a walk over the instances (on a busy cluster, most of a pass's fits).
    free: Vec<u32>,
    free_count: std::collections::BTreeMap<u32, u32>,
    /// Free slots of all hosts together: a parallel job wanting more fails without a walk.
    free_total: u64,
    /// The queue instances of each host, to update `room` when a host fills up or frees.
    host_qis: Vec<Vec<usize>>,
    /// Queue instances holding a reservation of this pass ([`Cluster::reserve`]), so that
    /// clearing them and asking whether there are any do not walk every instance.
    reserved_qis: Vec<usize>,
    /// The enabled resource quota sets and their counters (`sge_resource_quota(5)`).
    pub quotas: super::quota::Quotas,
}

impl Cluster {
    pub fn from_config(config: &ClusterConfig) -> Self {
        let mut complexes = HashMap::new();
        let mut shortcuts = HashMap::new();
        for c in config.complexes() {
            shortcuts.insert(c.shortcut.clone(), c.name.clone());
            complexes.insert(c.name.clone(), c);
        }
        let split = |values: &std::collections::BTreeMap<String, String>| {
            let mut pool = Pool::default();
            let mut fixed = HashMap::new();
            for (k, v) in values {
                let name = shortcuts.get(k).cloned().unwrap_or_else(|| k.clone());
                match complexes.get(&name) {
                    Some(c) if c.consumable != Consumable::No => {
                        if let Some(n) = parse_numeric(c.kind, v) {
                            pool.cap.insert(name, n);
                        }
                    }
                    _ => {
                        fixed.insert(name, v.clone());
                    }
                }
            }
            (pool, fixed)
        };
        let mut global = Pool::default();
        let mut hosts = Vec::new();
        // Each group's hosts, resolved once (not once per host).
        let group_hosts: Vec<(&str, std::collections::HashSet<String>)> = config
            .hostgroups
            .keys()
            .map(|g| (g.as_str(), config.host_group_hosts(g).into_iter().collect()))
            .collect();
        let mut caps = Vec::new();
        for h in &config.hosts {
            // A host's `slots` bound its queue instances' (`slots_cap`), not a consumable
            // jobs book.
            let mut complex_values = h.complex_values.clone();
            complex_values.remove("slots");
            let (pool, mut values) = split(&complex_values);
            if h.name == GLOBAL_HOST {
                global = pool;
                continue;
            }
            let slots_cap = ClusterConfig::host_slots_cap(h);
            values.insert("hostname".into(), h.name.clone());
            values.insert("arch".into(), h.arch.clone());
            let groups = group_hosts
                .iter()
                .filter(|(_, members)| members.contains(h.name.as_str()))
                .map(|(g, _)| g.to_string())
                .collect();
            caps.push(slots_cap);
            hosts.push(HostState {
                name: h.name.clone(),
                slots_cap: slots_cap.unwrap_or(u32::MAX),
                slots_used: 0,
                consumables: pool,
                values,
                groups,
                down_until: None,
                failures: 0,
                unknown: false,
                devices: !h.devices.is_empty(),
            });
        }
        let mut qis = Vec::new();
        let mut order: Vec<(u32, usize)> = config
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| (q.seq_no, i))
            .collect();
        order.sort();
        let host_at: HashMap<&str, usize> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (h.name.as_str(), i))
            .collect();
        for (_, qi) in order {
            for (h, q) in config.queue_instances(&config.queues[qi]) {
                let Some(&host) = host_at.get(h.name.as_str()) else {
                    continue;
                };
                let q = &q;
                let (pool, mut values) = split(&q.complex_values);
                for (k, v) in &q.limits {
                    values.insert(k.clone(), v.clone());
                }
                values.insert("qname".into(), q.name.clone());
                values.insert("seq_no".into(), q.seq_no.to_string());
                qis.push(QueueInstance {
                    queue: q.name.clone(),
                    host,
                    slots_cap: q.slots,
                    slots_used: 0,
                    seq_no: q.seq_no,
                    urgency: q.urgency,
                    disabled: q.disabled,
                    pe_list: q.pe_list.clone(),
                    pe_mask: config
                        .parallel_environments
                        .iter()
                        .take(64)
                        .enumerate()
                        .filter(|(_, p)| q.pe_list.contains(&p.name))
                        .fold(0, |m, (i, _)| m | 1 << i),
                    consumables: pool,
                    values,
                    reserved: Vec::new(),
                });
            }
        }
        // A host's own seq_no (a per-host value) places its instance among the others; the
        // sort is stable, so equal ones keep the queues' and hosts' configuration order.
        qis.sort_by_key(|q| q.seq_no);
        // A host without a cap of its own is bounded by its queue instances' slots together;
        // without a load report, it is taken to have as many processors as its slots, else
        // as the most slots any of its queues gives it.
        let mut together = vec![0u32; hosts.len()];
        let mut most = vec![0u32; hosts.len()];
        for q in &qis {
            together[q.host] = together[q.host].saturating_add(q.slots_cap);
            most[q.host] = most[q.host].max(q.slots_cap);
        }
        for (h, host) in hosts.iter_mut().enumerate() {
            if caps[h].is_none() {
                host.slots_cap = together[h];
            }
            let num_proc = caps[h].unwrap_or(most[h]);
            host.values
                .entry("num_proc".into())
                .or_insert(num_proc.to_string());
        }
        let pes = config
            .parallel_environments
            .iter()
            .map(|p| PeState {
                name: p.name.clone(),
                slots_cap: p.slots,
                slots_used: 0,
                rule: AllocationRule::parse(&p.allocation_rule).unwrap_or(AllocationRule::FillUp),
            })
            .collect();
        let mut host_qis = vec![Vec::new(); hosts.len()];
        for (qi, q) in qis.iter().enumerate() {
            host_qis[q.host].push(qi);
        }
        let mut cluster = Cluster {
            room: vec![0; qis.len().div_ceil(64)],
            free: vec![0; qis.len()],
            free_count: Default::default(),
            free_total: hosts
                .iter()
                .map(|h| u64::from(h.slots_cap.saturating_sub(h.slots_used)))
                .sum(),
            hosts,
            qis,
            global,
            pes,
            complexes,
            shortcuts,
            host_qis,
            reserved_qis: Vec::new(),
            quotas: super::quota::Quotas::from_config(config),
        };
        for qi in 0..cluster.qis.len() {
            cluster.update_room(qi);
        }
        cluster
    }

    /// Recomputes the free-slot indexes after capacities were changed directly (a view of
    /// the cluster cut down to what an advance reservation holds, `sched::ar`).
    pub fn reindex(&mut self) {
        self.free = vec![0; self.qis.len()];
        self.free_count.clear();
        self.room = vec![0; self.qis.len().div_ceil(64)];
        self.free_total = self
            .hosts
            .iter()
            .map(|h| u64::from(h.slots_cap.saturating_sub(h.slots_used)))
            .sum();
        for qi in 0..self.qis.len() {
            self.update_room(qi);
        }
    }

    /// Whether queue instance `qi` and its host both have a free slot; when not, the
    /// instance can take nothing. `true` for an instance the index does not cover.
    pub fn has_room(&self, qi: usize) -> bool {
        self.room
            .get(qi / 64)
            .is_none_or(|w| w & (1 << (qi % 64)) != 0)
    }

    /// The most free slots any one queue instance has (reservations and consumables may
    /// leave it fewer).
    pub fn max_free_slots(&self) -> u32 {
        self.free_count.last_key_value().map_or(0, |(k, _)| *k)
    }

    /// Free slots of all hosts together (reachable or not).
    pub fn free_slots_total(&self) -> u64 {
        self.free_total
    }

    fn update_room(&mut self, qi: usize) {
        let q = &self.qis[qi];
        let h = &self.hosts[q.host];
        let free = q
            .slots_cap
            .saturating_sub(q.slots_used)
            .min(h.slots_cap.saturating_sub(h.slots_used));
        let room = free > 0;
        let old = std::mem::replace(&mut self.free[qi], free);
        if old != free {
            if old > 0
                && let std::collections::btree_map::Entry::Occupied(mut e) =
                    self.free_count.entry(old)
            {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
            if free > 0 {
                *self.free_count.entry(free).or_default() += 1;
            }
        }
        if let Some(w) = self.room.get_mut(qi / 64) {
            if room {
                *w |= 1 << (qi % 64);
            } else {
                *w &= !(1 << (qi % 64));
            }
        }
    }

    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    pub fn qi_index(&self, queue: &str, host: &str) -> Option<usize> {
        let h = self.host_index(host)?;
        self.qis
            .iter()
            .position(|q| q.host == h && q.queue == queue)
    }

    /// The complex a `-l` name (full name or shortcut) refers to.
    pub fn complex(&self, name: &str) -> Option<&Complex> {
        self.complexes.get(name).or_else(|| {
            self.shortcuts
                .get(name)
                .and_then(|full| self.complexes.get(full))
        })
    }

    fn pool_mut(&mut self, level: Level) -> &mut Pool {
        match level {
            Level::Global => &mut self.global,
            Level::Host(h) => &mut self.hosts[h].consumables,
            Level::Queue(q) => &mut self.qis[q].consumables,
        }
    }

    /// Takes what a booking holds.
    pub fn book(&mut self, b: &Booking) {
        self.apply(b, 1.0);
    }

    /// Gives back what a booking held.
    pub fn release(&mut self, b: &Booking) {
        self.apply(b, -1.0);
    }

    fn apply(&mut self, b: &Booking, sign: f64) {
        for &(qi, n) in &b.slots {
            let host = self.qis[qi].host;
            let h = &self.hosts[host];
            let host_free = h.slots_cap.saturating_sub(h.slots_used);
            if sign > 0.0 {
                self.qis[qi].slots_used += n;
                self.hosts[host].slots_used += n;
            } else {
                self.qis[qi].slots_used = self.qis[qi].slots_used.saturating_sub(n);
                self.hosts[host].slots_used = self.hosts[host].slots_used.saturating_sub(n);
            }
            let h = &self.hosts[host];
            let host_free_now = h.slots_cap.saturating_sub(h.slots_used);
            self.free_total = self.free_total + u64::from(host_free_now) - u64::from(host_free);
            if host_free_now != host_free {
                // The host's free slots bound every instance on it.
                for k in 0..self.host_qis.get(host).map_or(0, Vec::len) {
                    self.update_room(self.host_qis[host][k]);
                }
            } else {
                self.update_room(qi);
            }
        }
        for (level, name, amount) in &b.consumables {
            self.pool_mut(*level).add(name, sign * amount);
        }
        if !b.quota.is_empty() {
            self.quotas.apply(&b.quota, sign);
        }
        if let Some((pe, n)) = b.pe
            && let Some(p) = self.pes.get_mut(pe)
        {
            if sign > 0.0 {
                p.slots_used += n;
            } else {
                p.slots_used = p.slots_used.saturating_sub(n);
            }
        }
    }

    /// Forgets every reservation (each pass makes its own, as SGE does).
    pub fn clear_reservations(&mut self) {
        for qi in std::mem::take(&mut self.reserved_qis) {
            if let Some(q) = self.qis.get_mut(qi) {
                q.reserved.clear();
            }
        }
    }

    /// Promises `slots` of queue instance `qi` to a reservation from `from` on, until the
    /// next [`Cluster::clear_reservations`].
    pub fn reserve(&mut self, qi: usize, from: i64, slots: u32) {
        if let Some(q) = self.qis.get_mut(qi) {
            if q.reserved.is_empty() {
                self.reserved_qis.push(qi);
            }
            q.reserved.push((from, slots));
        }
    }

    /// Whether a reservation was made since the last [`Cluster::clear_reservations`].
    pub fn has_reservations(&self) -> bool {
        !self.reserved_qis.is_empty()
    }

    /// Whether host `h` can be used at `now` (not marked unreachable, not unknown).
    pub fn host_up(&self, h: usize, now: i64) -> bool {
        !self.hosts[h].unknown && self.hosts[h].down_until.is_none_or(|t| now >= t)
    }

    /// Slots free at `now` on the hosts that can be used.
    pub fn free_slots(&self, now: i64) -> u32 {
        (0..self.hosts.len())
            .filter(|&h| self.host_up(h, now))
            .map(|h| {
                self.hosts[h]
                    .slots_cap
                    .saturating_sub(self.hosts[h].slots_used)
            })
            .sum()
    }
}

/// One `-q` entry: `queue`, `queue@host`, `queue@@hostgroup`, `*@host`, with wildcards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePattern {
    pub queue: String,
    pub host: Option<String>,
}

impl QueuePattern {
    pub fn parse(text: &str) -> Self {
        match text.split_once('@') {
            Some((q, h)) => QueuePattern {
                queue: if q.is_empty() { "*".into() } else { q.into() },
                host: Some(h.into()),
            },
            None => QueuePattern {
                queue: text.into(),
                host: None,
            },
        }
    }

    pub fn matches(&self, qi: &QueueInstance, hosts: &[HostState]) -> bool {
        if !pattern::matches(&self.queue, &qi.queue) {
            return false;
        }
        match &self.host {
            None => true,
            Some(h) if h.starts_with('@') => hosts[qi.host].groups.iter().any(|g| g == h),
            Some(h) => pattern::matches(
                &h.to_ascii_lowercase(),
                &hosts[qi.host].name.to_ascii_lowercase(),
            ),
        }
    }
}

/// A consumable request resolved against its complex.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumableRequest {
    pub name: String,
    pub amount: f64,
    /// `consumable JOB`: taken once per task (on the master host), not per slot.
    pub per_job: bool,
    /// Implied by the complex's default, not requested: only booked where a capacity exists.
    pub implicit: bool,
}

/// What a category of jobs needs: computed once per category, not per job.
#[derive(Debug, Clone, PartialEq)]
pub struct Demand {
    pub consumables: Vec<ConsumableRequest>,
    /// Non-consumable hard requests: (complex, requested value).
    pub fixed: Vec<(Complex, String)>,
    pub queues: Vec<QueuePattern>,
    /// `-pe`: candidate PE indices (the name may be a pattern), min and max slots.
    pub pe: Option<(Vec<usize>, u32, u32)>,
    /// `h_rt` in seconds, if requested.
    pub h_rt: Option<i64>,
    /// Resource-requirement urgency without the queue bonus (`sge_priority(5)`'s rrcontr
    /// for `slots` and the hard requests).
    pub rr_urgency: f64,
    /// The slots urgency counts (PE `urgency_slots`, default `min`).
    pub urgency_slots: u32,
    /// The highest urgency among queues the hard queue list allows (0 without `-q`).
    pub queue_urgency: f64,
}

/// Why a category cannot be built: the job can never run as requested.
pub type DemandError = String;

impl Demand {
    /// Resolves a job's hard requests against the cluster's complexes and PEs.
    pub fn build(
        cluster: &Cluster,
        config: &ClusterConfig,
        spec: &crate::model::JobSpec,
    ) -> Result<Demand, DemandError> {
        let mut consumables = Vec::new();
        let mut fixed = Vec::new();
        let mut rr = 0.0;
        let mut h_rt = None;
        let pe = match &spec.pe {
            None => None,
            Some(p) => {
                let idx: Vec<usize> = cluster
                    .pes
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| pattern::matches(&p.name, &s.name))
                    .map(|(i, _)| i)
                    .collect();
                if idx.is_empty() {
                    return Err(format!(
                        "cannot run because parallel environment \"{}\" does not exist",
                        p.name
                    ));
                }
                Some((idx, p.range.min.max(1), p.range.max.max(p.range.min.max(1))))
            }
        };
        let urgency_slots = match &spec.pe {
            None => 1,
            Some(p) => {
                let how = config
                    .parallel_environments
                    .iter()
                    .find(|c| pattern::matches(&p.name, &c.name))
                    .map(|c| c.urgency_slots.as_str())
                    .unwrap_or("min");
                let (min, max) = (p.range.min.max(1), p.range.max.max(p.range.min.max(1)));
                match how {
                    "max" => max,
                    "avg" => (min + max) / 2,
                    "min" => min,
                    n => n.parse().unwrap_or(min),
                }
            }
        };
        let slots_cx = cluster.complex("slots").cloned();
        if let Some(s) = &slots_cx {
            rr += urgency_slots as f64 * s.urgency;
        }
        let mut requested = std::collections::HashSet::new();
        for r in &spec.hard_resources {
            let Some(c) = cluster.complex(&r.name).cloned() else {
                return Err(format!(
                    "cannot run because it requests unknown resource \"{}\"",
                    r.name
                ));
            };
            requested.insert(c.name.clone());
            if c.name == "h_rt" {
                h_rt = crate::time::parse_time(&r.value);
            }
            if c.consumable != Consumable::No {
                let Some(amount) = parse_numeric(c.kind, &r.value) else {
                    return Err(format!(
                        "cannot run because \"{}={}\" is not a valid value",
                        r.name, r.value
                    ));
                };
                let per_job = c.consumable == Consumable::Job;
                rr += c.urgency * amount * if per_job { 1.0 } else { urgency_slots as f64 };
                if c.name != "slots" {
                    consumables.push(ConsumableRequest {
                        name: c.name.clone(),
                        amount,
                        per_job,
                        implicit: false,
                    });
                }
            } else {
                if c.kind.is_numeric() {
                    rr += c.urgency * parse_numeric(c.kind, &r.value).unwrap_or(0.0);
                } else {
                    rr += c.urgency;
                }
                fixed.push((c, r.value.clone()));
            }
        }
        // Consumables with a non-zero default are consumed by every job (complex(5)).
        for c in cluster.complexes.values() {
            if c.consumable == Consumable::No || c.name == "slots" || requested.contains(&c.name) {
                continue;
            }
            if let Some(d) = parse_numeric(c.kind, &c.default).filter(|d| *d > 0.0) {
                consumables.push(ConsumableRequest {
                    name: c.name.clone(),
                    amount: d,
                    per_job: c.consumable == Consumable::Job,
                    implicit: true,
                });
            }
        }
        consumables.sort_by(|a, b| a.name.cmp(&b.name));
        let queues: Vec<QueuePattern> = spec
            .hard_queues
            .iter()
            .flat_map(|q| q.split(','))
            .filter(|q| !q.is_empty())
            .map(QueuePattern::parse)
            .collect();
        let queue_urgency = if queues.is_empty() {
            0.0
        } else {
            config
                .queues
                .iter()
                .filter(|q| queues.iter().any(|p| pattern::matches(&p.queue, &q.name)))
                .map(|q| q.urgency)
                .fold(0.0, f64::max)
        };
        Ok(Demand {
            consumables,
            fixed,
            queues,
            pe,
            h_rt,
            rr_urgency: rr,
            urgency_slots,
            queue_urgency,
        })
    }

    /// Whether the queue instance can ever host the category (static checks: queue list,
    /// fixed requests, PE list); `Err` says why not, for the pending reason.
    pub fn static_fit(&self, cluster: &Cluster, qi: usize) -> Result<(), StaticMiss> {
        let q = &cluster.qis[qi];
        if !self.queues.is_empty() && !self.queues.iter().any(|p| p.matches(q, &cluster.hosts)) {
            return Err(StaticMiss::QueueList);
        }
        let host = &cluster.hosts[q.host];
        for (c, want) in &self.fixed {
            let offered = q.values.get(&c.name).or_else(|| host.values.get(&c.name));
            let ok = match offered {
                Some(v) => request_met(c, want, v),
                // Limits not set on the queue are INFINITY (queue_conf(5)).
                None if c.kind == crate::config::ComplexType::Time
                    || c.kind == crate::config::ComplexType::Memory =>
                {
                    request_met(c, want, "INFINITY")
                }
                None => false,
            };
            if !ok {
                return Err(StaticMiss::Fixed(format!("{}={}", c.name, want)));
            }
        }
        for r in self.consumables.iter().filter(|r| !r.implicit) {
            let defined = q.consumables.cap.contains_key(&r.name)
                || host.consumables.cap.contains_key(&r.name)
                || cluster.global.cap.contains_key(&r.name);
            if !defined {
                return Err(StaticMiss::Fixed(format!("{}={}", r.name, r.amount)));
            }
        }
        if let Some((pes, _, _)) = &self.pe
            && !pes
                .iter()
                .any(|p| q.pe_list.iter().any(|n| n == &cluster.pes[*p].name))
        {
            return Err(StaticMiss::Pe);
        }
        Ok(())
    }
}

/// Why a queue instance can never take a category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaticMiss {
    QueueList,
    Fixed(String),
    Pe,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Three hosts of 4 slots, each with two queue instances of 3 slots (so that a host can
    /// be full while each of its instances still has a free slot).
    fn cluster() -> Cluster {
        let text = "hosts:\n  - {name: a, slots: 4}\n  - {name: b, slots: 4}\n  - {name: c, slots: 4}\n\
                    queues:\n  - {name: x.q, hostlist: [a, b, c], slots: 3}\n  - {name: y.q, hostlist: [a, b, c], slots: 3}\n";
        Cluster::from_config(&ClusterConfig::parse(text).expect("config"))
    }

    /// Each queue instance takes its host's values (a host's beating its group's); a host
    /// is bounded by a `slots=N` of its complex_values, else by its instances together.
    #[test]
    fn instances_take_their_hosts_values_and_hosts_their_own_slots() {
        let text = "hosts:\n  - {name: a, complex_values: {slots: \"5\"}}\n  - {name: b}\n  - {name: c}\n\
                    hostgroups:\n  \"@big\": [b, c]\n\
                    parallel_environments:\n  - {name: smp, slots: 99, allocation_rule: $pe_slots}\n\
                    queues:\n  - {name: x.q, hostlist: [a, \"@big\"], slots: 3, per_host: {\"@big\": {slots: 16, pe_list: [smp], limits: {h_rt: \"1:00:00\"}}, c: {slots: 32, disabled: true}}}\n\
                    \x20 - {name: y.q, hostlist: [a], slots: 4}\n";
        let c = Cluster::from_config(&ClusterConfig::parse(text).expect("config"));
        let qi = |q: &str, h: &str| &c.qis[c.qi_index(q, h).expect("instance")];
        assert_eq!(qi("x.q", "a").slots_cap, 3);
        assert!(qi("x.q", "a").pe_list.is_empty());
        assert_eq!(qi("x.q", "b").slots_cap, 16);
        assert_eq!(qi("x.q", "b").pe_list, ["smp"]);
        assert_eq!(
            qi("x.q", "b").values.get("h_rt").map(String::as_str),
            Some("1:00:00")
        );
        assert_eq!(
            (qi("x.q", "c").slots_cap, qi("x.q", "c").disabled),
            (32, true)
        );
        let host = |n: &str| c.hosts.iter().find(|h| h.name == n).expect("host");
        assert_eq!(host("a").slots_cap, 5, "its slots=5, not 3 + 4");
        assert!(!host("a").consumables.cap.contains_key("slots"));
        assert_eq!(host("b").slots_cap, 16);
        assert_eq!(host("b").groups, ["@big"]);
        // A per-host seq_no orders that instance among the others.
        let text = "hosts:\n  - {name: a}\n  - {name: b}\n\
                    queues:\n  - {name: x.q, hostlist: [a, b], slots: 1, per_host: {b: {seq_no: 9}}}\n\
                    \x20 - {name: y.q, hostlist: [a, b], slots: 1, seq_no: 5}\n";
        let c = Cluster::from_config(&ClusterConfig::parse(text).expect("config"));
        let order: Vec<String> = c.qis.iter().map(|q| q.full_name(&c.hosts)).collect();
        assert_eq!(order, ["x.q@a", "y.q@a", "y.q@b", "x.q@b"]);
    }

    /// The room bit as the fit reads it, against the slot counts it stands for.
    fn check_room(c: &Cluster) -> Result<(), TestCaseError> {
        for (qi, q) in c.qis.iter().enumerate() {
            let h = &c.hosts[q.host];
            let room = q.slots_used < q.slots_cap && h.slots_used < h.slots_cap;
            prop_assert_eq!(
                c.has_room(qi),
                room,
                "instance {} ({:?})",
                qi,
                c.qis[qi].queue
            );
        }
        let free = |q: &QueueInstance| {
            let h = &c.hosts[q.host];
            q.slots_cap
                .saturating_sub(q.slots_used)
                .min(h.slots_cap.saturating_sub(h.slots_used))
        };
        prop_assert_eq!(
            c.max_free_slots(),
            c.qis.iter().map(free).max().unwrap_or(0),
            "the most free slots of an instance"
        );
        prop_assert_eq!(
            c.free_slots_total(),
            c.hosts
                .iter()
                .map(|h| u64::from(h.slots_cap.saturating_sub(h.slots_used)))
                .sum::<u64>(),
            "the free slots of all hosts"
        );
        Ok(())
    }

    proptest! {
        /// Whatever is booked and released, in whatever order, an instance has the room bit
        /// exactly when it and its host both have a free slot, and the free-slot bounds are
        /// those of the counts.
        #[test]
        fn room_bit_follows_bookings(
            steps in proptest::collection::vec((0usize..6, 1u32..4, any::<bool>()), 1..60)
        ) {
            let mut c = cluster();
            prop_assert_eq!(c.qis.len(), 6);
            check_room(&c)?;
            let mut held: Vec<Booking> = Vec::new();
            for (qi, n, release) in steps {
                if release && !held.is_empty() {
                    let b = held.remove(qi % held.len());
                    c.release(&b);
                } else {
                    let b = Booking {
                        slots: vec![(qi, n)],
                        ..Booking::default()
                    };
                    c.book(&b);
                    held.push(b);
                }
                check_room(&c)?;
            }
            for b in held.drain(..) {
                c.release(&b);
            }
            check_room(&c)?;
            prop_assert!((0..6).all(|qi| c.has_room(qi)), "all free again");
        }
    }

    /// Reservations are listed as they are made and all of them go at the next clear.
    #[test]
    fn reservations_are_listed_and_cleared() {
        let mut c = cluster();
        assert!(!c.has_reservations());
        c.reserve(1, 100, 2);
        c.reserve(1, 200, 1);
        c.reserve(4, 100, 3);
        assert!(c.has_reservations());
        assert_eq!(c.qis[1].reserved, vec![(100, 2), (200, 1)]);
        c.clear_reservations();
        assert!(!c.has_reservations());
        assert!(c.qis.iter().all(|q| q.reserved.is_empty()));
    }
}
