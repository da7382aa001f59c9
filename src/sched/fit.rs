//! Fitting one task of a category onto the cluster as it is now: slots, consumables at the
//! queue, host and global level, reservations made earlier in the pass, and the parallel
//! environment's allocation rule (`sge_pe(5)`).

use super::cluster::{AllocationRule, Booking, Cluster, ConsumableRequest, Demand, Level};
use super::quota::QuotaMiss;
use crate::model::Placement;

/// Why a category does not fit now; the pass turns it into the `qstat -j` reason.
#[derive(Debug, Clone, PartialEq)]
pub enum FitMiss {
    /// No queue instance offers enough free slots (for the job's duration, given reservations).
    Slots { wanted: u32 },
    /// A consumable is exhausted at every candidate (name, amount per slot or per job).
    Consumable { name: String, amount: f64 },
    /// The global pool of a consumable is short.
    Global { name: String, amount: f64 },
    /// Every candidate queue instance is disabled or on an unreachable host.
    Unavailable,
    /// The parallel environment has too few free slots.
    PeSlots { pe: String, wanted: u32 },
    /// A resource quota set refuses it where resources would be free: this says something
    /// of the job's owner and project, not of its category.
    Quota(super::quota::QuotaMiss),
}

impl FitMiss {
    /// SGE-style wording for `qstat -j`'s scheduling info.
    pub fn describe(&self) -> String {
        match self {
            FitMiss::Slots { wanted } => format!(
                "cannot run because no queue instance offers {wanted} free slot{}",
                if *wanted == 1 { "" } else { "s" }
            ),
            FitMiss::Consumable { name, amount } => format!(
                "(-l {name}={}) cannot run because no queue instance or host offers enough free {name}",
                fmt_amount(*amount)
            ),
            FitMiss::Global { name, amount } => format!(
                "(-l {name}={}) cannot run globally because it offers only too little {name}",
                fmt_amount(*amount)
            ),
            FitMiss::Unavailable => {
                "cannot run because all matching queue instances are disabled or their hosts unreachable"
                    .to_string()
            }
            FitMiss::PeSlots { pe, wanted } => format!(
                "cannot run in PE \"{pe}\" because it only offers fewer than {wanted} free slots"
            ),
            FitMiss::Quota(miss) => miss.describe(),
        }
    }
}

fn fmt_amount(a: f64) -> String {
    if a.fract() == 0.0 {
        format!("{}", a as i64)
    } else {
        format!("{a}")
    }
}

/// A successful fit: what to book and where the task goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub booking: Booking,
    pub placement: Placement,
    /// Index into the candidate list where the master queue instance was found (serial jobs
    /// resume the next search there: within a pass resources only shrink).
    pub cursor: usize,
}

/// The inputs of one fit.
pub struct FitQuery<'a> {
    pub demand: &'a Demand,
    /// Queue instances that statically match the category, in try order.
    pub candidates: &'a [usize],
    /// Start searching at this candidate (serial jobs only).
    pub cursor: usize,
    pub now: i64,
    /// When the task would end (now + h_rt or default_duration; `i64::MAX` if unknown).
    /// Reservations starting before this time are respected (backfilling).
    pub end: i64,
    /// Treat every host as up and every queue as enabled (reservation planning).
    pub ignore_availability: bool,
    /// Whose task it is, when resource quota sets are enabled (checked and charged).
    pub owner: Option<&'a super::quota::QuotaOwner>,
}

/// Slots the resource quota sets allow the query's owner on `qi` (in PE `pe`).
fn quota_cap(c: &Cluster, q: &FitQuery, pe: Option<&str>, qi: usize) -> Result<u32, QuotaMiss> {
    match q.owner {
        Some(owner) => c.quotas.cap(c, owner, pe, qi, q.demand),
        None => Ok(u32::MAX),
    }
}

/// The quota debits of a grant, when the query has an owner.
fn with_debits(c: &Cluster, q: &FitQuery, pe: Option<&str>, mut b: Booking) -> Booking {
    if let Some(owner) = q.owner {
        b.quota = c.quotas.debits(c, owner, pe, &b.slots, Some(q.demand));
    }
    b
}

/// Slots queue instance `qi` can give one task of `demand`.
fn qi_capacity(c: &Cluster, d: &Demand, qi: usize, end: i64) -> u32 {
    let q = &c.qis[qi];
    let h = &c.hosts[q.host];
    let mut cap = q
        .slots_cap
        .saturating_sub(q.slots_used)
        .min(h.slots_cap.saturating_sub(h.slots_used));
    // Nothing below can raise it: a full instance (the common case on a busy cluster, where a
    // pass tests thousands of them) costs no walk over its reservations and consumables.
    if cap == 0 {
        return 0;
    }
    let reserved: u32 = q
        .reserved
        .iter()
        .filter(|(from, _)| *from < end)
        .map(|(_, n)| *n)
        .sum();
    cap = cap.saturating_sub(reserved);
    for r in &d.consumables {
        for pool in [&q.consumables, &h.consumables] {
            if let Some(free) = pool.free(&r.name) {
                if r.per_job {
                    if free + 1e-9 < r.amount {
                        return 0;
                    }
                } else if r.amount > 0.0 {
                    let n = ((free + 1e-9) / r.amount).floor().max(0.0);
                    cap = cap.min(n.min(u32::MAX as f64) as u32);
                }
            }
        }
    }
    cap
}

/// Which resource limits `qi` for the reason text, when its capacity is 0.
fn limiting(c: &Cluster, d: &Demand, qi: usize) -> Option<FitMiss> {
    let q = &c.qis[qi];
    let h = &c.hosts[q.host];
    for r in &d.consumables {
        for pool in [&q.consumables, &h.consumables] {
            if let Some(free) = pool.free(&r.name)
                && free + 1e-9 < r.amount
            {
                return Some(FitMiss::Consumable {
                    name: r.name.clone(),
                    amount: r.amount,
                });
            }
        }
    }
    None
}

fn global_ok(c: &Cluster, d: &Demand, slots: u32) -> Result<(), FitMiss> {
    for r in &d.consumables {
        if let Some(free) = c.global.free(&r.name) {
            let need = if r.per_job {
                r.amount
            } else {
                r.amount * slots as f64
            };
            if free + 1e-9 < need {
                return Err(FitMiss::Global {
                    name: r.name.clone(),
                    amount: r.amount,
                });
            }
        }
    }
    Ok(())
}

fn usable(c: &Cluster, qi: usize, q: &FitQuery) -> bool {
    q.ignore_availability || (!c.qis[qi].disabled && c.host_up(c.qis[qi].host, q.now))
}

/// Finds room for one task of the category, or says why there is none.
pub fn fit(c: &Cluster, q: &FitQuery) -> Result<Fit, FitMiss> {
    let d = q.demand;
    match &d.pe {
        None => fit_serial(c, q),
        Some((pes, min, max)) => {
            let mut best_miss = None;
            for &pe in pes {
                match fit_pe(c, q, pe, *min, *max) {
                    Ok(f) => return Ok(f),
                    Err(m) => best_miss = Some(m),
                }
            }
            Err(best_miss.unwrap_or(FitMiss::Slots { wanted: *min }))
        }
    }
}

fn fit_serial(c: &Cluster, q: &FitQuery) -> Result<Fit, FitMiss> {
    global_ok(c, q.demand, 1)?;
    // The first usable candidate from the cursor with capacity. An instance without a free
    // slot (the room bit) has none whatever its reservations and consumables say, so on a
    // full cluster the walk reads only the candidate list and the bit set.
    let walk = if c.max_free_slots() == 0 {
        0
    } else {
        usize::MAX
    };
    // An instance a quota refuses may suit the category's next job, of another owner: the
    // next search starts no later than the first one refused.
    let mut quota_miss: Option<(usize, QuotaMiss)> = None;
    for (i, &qi) in q.candidates.iter().enumerate().skip(q.cursor).take(walk) {
        if !c.has_room(qi) || !usable(c, qi, q) {
            continue;
        }
        if qi_capacity(c, q.demand, qi, q.end) >= 1 {
            if let Err(miss) = quota_cap(c, q, None, qi) {
                quota_miss.get_or_insert((i, miss));
                continue;
            }
            return Ok(Fit {
                booking: with_debits(c, q, None, booking(c, q.demand, &[(qi, 1)], None)),
                placement: placement(c, &[(qi, 1)], None),
                cursor: quota_miss.as_ref().map_or(i, |(first, _)| *first),
            });
        }
    }
    if let Some((_, miss)) = quota_miss {
        return Err(FitMiss::Quota(miss));
    }
    // Nothing fits: why. Every usable candidate from the cursor has no capacity; the first
    // of them that a consumable limits names it (only a demand with consumables can be
    // limited by one, so the others need no second walk).
    if q.cursor == 0 && !q.candidates.is_empty() && !q.candidates.iter().any(|&qi| usable(c, qi, q))
    {
        return Err(FitMiss::Unavailable);
    }
    let miss = if q.demand.consumables.is_empty() {
        None
    } else {
        q.candidates
            .iter()
            .skip(q.cursor)
            .filter(|&&qi| usable(c, qi, q))
            .find_map(|&qi| limiting(c, q.demand, qi))
    };
    Err(miss.unwrap_or(FitMiss::Slots { wanted: 1 }))
}

fn fit_pe(c: &Cluster, q: &FitQuery, pe: usize, min: u32, max: u32) -> Result<Fit, FitMiss> {
    let p = &c.pes[pe];
    let pe_free = p.slots_cap.saturating_sub(p.slots_used);
    if pe_free < min {
        return Err(FitMiss::PeSlots {
            pe: p.name.clone(),
            wanted: min,
        });
    }
    // Fewer free slots on any one instance (`$pe_slots`) or on all hosts together than the
    // job's least: no grant is possible, and nothing below needs to look.
    let bound = if p.rule == AllocationRule::PeSlots {
        u64::from(c.max_free_slots())
    } else {
        c.free_slots_total()
    };
    if bound < u64::from(min) {
        return Err(FitMiss::Slots { wanted: min });
    }
    let want = max.min(pe_free);
    // Capacity per candidate in this PE, hosts' shared free slots accounted below.
    // An instance without a free slot (the room bit) is left out before it is read.
    let mut cands: Vec<(usize, u32)> = q
        .candidates
        .iter()
        .copied()
        .filter(|&qi| c.has_room(qi) && usable(c, qi, q) && c.qis[qi].has_pe(pe, &p.name))
        .map(|qi| (qi, qi_capacity(c, q.demand, qi, q.end)))
        .filter(|(_, cap)| *cap > 0)
        .collect();
    if cands.is_empty() {
        // No grant is possible (what the allocation below would find, without its work).
        return Err(FitMiss::Slots { wanted: min });
    }
    let mut grant = allocate(c, p.rule, &cands, min, want);
    // The quotas bound what each granted instance may take. Asked only of the instances
    // granted (a pass's parallel fits would otherwise test every candidate's rules); when
    // one is bound below its grant, every candidate is bounded and the allocation redone.
    let mut quota_miss: Option<QuotaMiss> = None;
    if q.owner.is_some() {
        let within = grant
            .iter()
            .all(|&(qi, n)| quota_cap(c, q, Some(&p.name), qi).is_ok_and(|cap| cap >= n));
        if !within {
            cands = cands
                .into_iter()
                .map(|(qi, cap)| match quota_cap(c, q, Some(&p.name), qi) {
                    Ok(n) => (qi, cap.min(n)),
                    Err(miss) => {
                        quota_miss.get_or_insert(miss);
                        (qi, 0)
                    }
                })
                .filter(|(_, cap)| *cap > 0)
                .collect();
            grant = allocate(c, p.rule, &cands, min, want);
        }
    }
    let total: u32 = grant.iter().map(|(_, n)| n).sum();
    let valid = match p.rule {
        AllocationRule::PerHost(per) => total >= min && total.is_multiple_of(per),
        _ => total >= min,
    };
    if !valid || total == 0 {
        if let Some(miss) = quota_miss {
            return Err(FitMiss::Quota(miss));
        }
        return Err(FitMiss::Slots { wanted: min });
    }
    global_ok(c, q.demand, total)?;
    let booked = with_debits(
        c,
        q,
        Some(&p.name),
        booking(c, q.demand, &grant, Some((pe, total))),
    );
    // Each instance was within the limits alone; the grant as a whole must be too (a
    // limit of all hosts together, spread over several).
    if !booked.quota.is_empty() {
        c.quotas
            .admits(c, &grant, &booked.quota)
            .map_err(FitMiss::Quota)?;
    }
    Ok(Fit {
        booking: booked,
        placement: placement(c, &grant, Some(p.name.clone())),
        cursor: 0,
    })
}

/// Grants up to `want` slots over `cands` (instance, capacity) by the PE's allocation rule.
fn allocate(
    c: &Cluster,
    rule: AllocationRule,
    cands: &[(usize, u32)],
    min: u32,
    want: u32,
) -> Vec<(usize, u32)> {
    // Free slots per host, shared by the host's queue instances (indexed by host; `$pe_slots`
    // grants on one instance and does not need them).
    let mut host_left: Vec<u32> = if rule == AllocationRule::PeSlots {
        Vec::new()
    } else {
        c.hosts
            .iter()
            .map(|h| h.slots_cap.saturating_sub(h.slots_used))
            .collect()
    };
    let mut grant: Vec<(usize, u32)> = Vec::new();
    match rule {
        AllocationRule::PeSlots => {
            let mut best: Option<(usize, u32)> = None;
            for &(qi, cap) in cands {
                let n = cap.min(want);
                if n >= min && best.is_none_or(|(_, b)| n > b) {
                    best = Some((qi, n));
                    if n == want {
                        break;
                    }
                }
            }
            if let Some(b) = best {
                grant.push(b);
            }
        }
        AllocationRule::FillUp => {
            let mut left = want;
            for &(qi, cap) in cands {
                if left == 0 {
                    break;
                }
                let h = c.qis[qi].host;
                let n = cap.min(host_left[h]).min(left);
                if n > 0 {
                    grant.push((qi, n));
                    host_left[h] -= n;
                    left -= n;
                }
            }
        }
        AllocationRule::RoundRobin => {
            let mut given: Vec<u32> = vec![0; cands.len()];
            let mut left = want;
            let mut progress = true;
            while left > 0 && progress {
                progress = false;
                let mut hosts_this_round = std::collections::HashSet::new();
                for (i, &(qi, cap)) in cands.iter().enumerate() {
                    if left == 0 {
                        break;
                    }
                    let h = c.qis[qi].host;
                    if hosts_this_round.contains(&h) || given[i] >= cap {
                        continue;
                    }
                    if host_left[h] == 0 {
                        continue;
                    }
                    hosts_this_round.insert(h);
                    given[i] += 1;
                    host_left[h] -= 1;
                    left -= 1;
                    progress = true;
                }
            }
            grant = cands
                .iter()
                .zip(given)
                .filter(|(_, n)| *n > 0)
                .map(|(&(qi, _), n)| (qi, n))
                .collect();
        }
        AllocationRule::PerHost(per) => {
            let mut left = want - want % per;
            let mut used_hosts = std::collections::HashSet::new();
            for &(qi, cap) in cands {
                if left == 0 {
                    break;
                }
                let h = c.qis[qi].host;
                if used_hosts.contains(&h) || cap < per {
                    continue;
                }
                if host_left[h] < per {
                    continue;
                }
                used_hosts.insert(h);
                grant.push((qi, per));
                left -= per;
            }
        }
    }
    grant
}

fn push_levels(
    c: &Cluster,
    out: &mut Vec<(Level, String, f64)>,
    qi: usize,
    r: &ConsumableRequest,
    amount: f64,
) {
    let q = &c.qis[qi];
    if q.consumables.cap.contains_key(&r.name) {
        out.push((Level::Queue(qi), r.name.clone(), amount));
    }
    if c.hosts[q.host].consumables.cap.contains_key(&r.name) {
        out.push((Level::Host(q.host), r.name.clone(), amount));
    }
}

/// What a grant books: slots per queue instance, per-slot consumables on every granted
/// instance, per-job consumables on the master, global amounts once.
pub fn booking(
    c: &Cluster,
    d: &Demand,
    grant: &[(usize, u32)],
    pe: Option<(usize, u32)>,
) -> Booking {
    let total: u32 = grant.iter().map(|(_, n)| n).sum();
    let mut consumables = Vec::new();
    for r in &d.consumables {
        if r.per_job {
            if let Some(&(master, _)) = grant.first() {
                push_levels(c, &mut consumables, master, r, r.amount);
            }
        } else {
            for &(qi, n) in grant {
                push_levels(c, &mut consumables, qi, r, r.amount * n as f64);
            }
        }
        if c.global.cap.contains_key(&r.name) {
            let amount = if r.per_job {
                r.amount
            } else {
                r.amount * total as f64
            };
            consumables.push((Level::Global, r.name.clone(), amount));
        }
    }
    Booking {
        slots: grant.to_vec(),
        consumables,
        pe,
        quota: Vec::new(),
    }
}

fn placement(c: &Cluster, grant: &[(usize, u32)], pe: Option<String>) -> Placement {
    let granted: Vec<(String, String, u32)> = grant
        .iter()
        .map(|&(qi, n)| {
            (
                c.hosts[c.qis[qi].host].name.clone(),
                c.qis[qi].queue.clone(),
                n,
            )
        })
        .collect();
    let (host, queue) = granted
        .first()
        .map(|(h, q, _)| (h.clone(), q.clone()))
        .unwrap_or_default();
    Placement {
        host,
        queue,
        slots: grant.iter().map(|(_, n)| n).sum(),
        granted,
        pe,
    }
}
