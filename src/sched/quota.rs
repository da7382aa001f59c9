//! Resource quota sets in the scheduling pass (`sge_resource_quota(5)`): every enabled set
//! must admit a task; within a set the first rule whose filters match the task's owner,
//! project, PE, queue and host decides, and its limits bound what the task's counter (the
//! rule's element: one per braced filter value, `sgeuser/////`) already holds plus what the
//! task asks.
//!
//! Usage is kept as running counters, changed when a booking is taken or given back
//! ([`super::cluster::Cluster::book`]): a booking carries its quota debits, computed once
//! when the task is placed, so a pass never walks the running tasks, and the reservation
//! planner's releases and re-bookings move the counters as they move slots.

use super::cluster::{Cluster, Demand};
use crate::config::resource_quotas::{self as rq, QuotaRule, QuotaSubject};
use crate::config::{ClusterConfig, Consumable};
use std::collections::HashMap;
use std::sync::Arc;

/// Whose task is placed, for the rules' `users` and `projects` filters, with the rules of
/// each set those filters admit (decided once per job, so that a fit tests only the
/// placement filters of a rule or two per set instead of walking every rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaOwner {
    pub user: String,
    pub project: Option<String>,
    /// Per enabled set: the indices of its rules that admit this owner, in order.
    rules: Vec<Vec<u16>>,
}

/// A limit of a rule, resolved against the complexes.
#[derive(Debug, Clone)]
enum LimitValue {
    Static(f64),
    /// `$num_proc*2`: per host.
    Dynamic(String),
}

#[derive(Debug, Clone)]
struct Limit {
    resource: String,
    value: LimitValue,
    consumable: bool,
}

#[derive(Debug, Clone)]
struct Rule {
    rule: QuotaRule,
    label: String,
    limits: Vec<Limit>,
    /// Some filter is braced: the counter depends on the subject.
    braced: bool,
}

#[derive(Debug, Clone)]
struct Set {
    name: String,
    rules: Vec<Rule>,
}

/// One counter's share of a booking: the rule's element and, per limit of the rule, the
/// amount taken.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaDebit {
    set: u16,
    rule: u16,
    element: Arc<str>,
    amounts: Vec<(u16, f64)>,
}

/// A rule set's refusal, as `qstat -j` words it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaMiss {
    /// The counter: `user/project/pe/queue/host/`.
    pub limit: String,
    /// `set/rule` (the rule's name, else its number).
    pub rule: String,
}

/// The enabled rule sets and their counters.
#[derive(Debug, Clone, Default)]
pub struct Quotas {
    sets: Vec<Set>,
    /// Per (set, rule): per element, the usage of each limit.
    usage: HashMap<(u16, u16), HashMap<Arc<str>, Vec<f64>>>,
    acls: HashMap<String, Vec<String>>,
    hostgroups: HashMap<String, Vec<String>>,
}

impl Quotas {
    pub fn from_config(config: &ClusterConfig) -> Self {
        let complexes = config.complexes();
        let mut acls = HashMap::new();
        let mut hostgroups = HashMap::new();
        let sets: Vec<Set> = config
            .resource_quotas
            .iter()
            .filter(|s| s.enabled)
            .map(|s| Set {
                name: s.name.clone(),
                rules: s
                    .rules
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        for f in r.users.iter().flat_map(|f| f.items.iter()) {
                            let g = f.trim_start_matches('!');
                            if g.starts_with('@') {
                                acls.entry(g.to_string())
                                    .or_insert_with(|| config.rqs_acl_members(g));
                            }
                        }
                        for f in r.hosts.iter().flat_map(|f| f.items.iter()) {
                            let g = f.trim_start_matches('!');
                            if g.starts_with('@') {
                                hostgroups
                                    .entry(g.to_string())
                                    .or_insert_with(|| config.host_group_hosts(g));
                            }
                        }
                        Rule {
                            braced: r.braced(),
                            label: r.label(i),
                            limits: r
                                .to
                                .0
                                .iter()
                                .map(|(name, value)| {
                                    let complex = complexes
                                        .iter()
                                        .find(|c| &c.name == name || &c.shortcut == name);
                                    Limit {
                                        resource: complex.map_or(name.clone(), |c| c.name.clone()),
                                        consumable: name == "slots"
                                            || complex
                                                .is_some_and(|c| c.consumable != Consumable::No),
                                        value: if rq::is_dynamic(value) {
                                            LimitValue::Dynamic(value.clone())
                                        } else {
                                            LimitValue::Static(static_value(value))
                                        },
                                    }
                                })
                                .collect(),
                            rule: r.clone(),
                        }
                    })
                    .collect(),
            })
            .collect();
        Quotas {
            sets,
            usage: HashMap::new(),
            acls,
            hostgroups,
        }
    }

    /// No enabled set: nothing to check or count.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// `user` and `project` as a [`QuotaOwner`], with the rules their filters admit.
    pub fn owner(&self, user: &str, group: &str, project: Option<&str>) -> QuotaOwner {
        let acl = |g: &str| {
            self.acls
                .get(g)
                .map(|entries| {
                    crate::config::resource_quotas::acl_members_for(entries, user, group)
                })
                .unwrap_or_default()
        };
        QuotaOwner {
            user: user.to_string(),
            project: project.map(str::to_string),
            rules: self
                .sets
                .iter()
                .map(|set| {
                    set.rules
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.rule.matches_owner(user, project, &acl))
                        .map(|(i, _)| i as u16)
                        .collect()
                })
                .collect(),
        }
    }

    /// The rule of set `s` that applies to `subject` (of `owner`), if any.
    fn rule_for(&self, owner: &QuotaOwner, s: usize, subject: &QuotaSubject) -> Option<usize> {
        let hg = |g: &str| self.hostgroups.get(g).cloned().unwrap_or_default();
        owner
            .rules
            .get(s)?
            .iter()
            .map(|&r| r as usize)
            .find(|&r| self.sets[s].rules[r].rule.matches_place(subject, &hg))
    }

    /// The counter of `rule` for `subject`: one for a rule without braces.
    fn element(rule: &Rule, subject: &QuotaSubject) -> Arc<str> {
        if rule.braced {
            Arc::from(rule.rule.element_key(subject))
        } else {
            Arc::from("/////")
        }
    }

    fn limit_value(c: &Cluster, host: usize, l: &Limit) -> f64 {
        match &l.value {
            LimitValue::Static(v) => *v,
            LimitValue::Dynamic(expr) => {
                let h = &c.hosts[host];
                rq::eval_dynamic(expr, &|name| {
                    h.values
                        .get(name)
                        .and_then(|v| crate::units::parse_with_multiplier(v))
                        .or_else(|| h.consumables.cap.get(name).copied())
                })
                .unwrap_or(f64::INFINITY)
            }
        }
    }

    /// How many slots of `demand` the sets allow on queue instance `qi` for `owner` (in PE
    /// `pe`), or the first refusal.
    pub fn cap(
        &self,
        c: &Cluster,
        owner: &QuotaOwner,
        pe: Option<&str>,
        qi: usize,
        demand: &Demand,
    ) -> Result<u32, QuotaMiss> {
        let q = &c.qis[qi];
        let subject = QuotaSubject {
            user: &owner.user,
            project: owner.project.as_deref(),
            pe,
            queue: &q.queue,
            host: &c.hosts[q.host].name,
        };
        let mut cap = u32::MAX;
        for s in 0..self.sets.len() {
            let Some(r) = self.rule_for(owner, s, &subject) else {
                continue;
            };
            let rule = &self.sets[s].rules[r];
            let element = Self::element(rule, &subject);
            let used = self
                .usage
                .get(&(s as u16, r as u16))
                .and_then(|m| m.get(&element));
            let mut allowed = u32::MAX;
            for (i, l) in rule.limits.iter().enumerate() {
                let limit = Self::limit_value(c, q.host, l);
                let held = used.and_then(|u| u.get(i)).copied().unwrap_or(0.0);
                let left = limit - held;
                let n = if l.resource == "slots" {
                    floor_u32(left)
                } else if l.consumable {
                    match demand.consumables.iter().find(|r| r.name == l.resource) {
                        None => u32::MAX,
                        Some(r) if r.per_job && r.amount > left + 1e-9 => 0,
                        Some(r) if r.per_job => u32::MAX,
                        Some(r) if r.amount > 0.0 => floor_u32((left + 1e-9) / r.amount),
                        Some(_) => u32::MAX,
                    }
                } else {
                    // A fixed value: what the job asks must not pass it.
                    match demand.fixed.iter().find(|(cx, _)| cx.name == l.resource) {
                        Some((_, v)) if static_value(v) > limit + 1e-9 => 0,
                        _ => u32::MAX,
                    }
                };
                allowed = allowed.min(n);
            }
            if allowed == 0 {
                return Err(QuotaMiss {
                    limit: element.to_string(),
                    rule: format!("{}/{}", self.sets[s].name, rule.label),
                });
            }
            cap = cap.min(allowed);
        }
        Ok(cap)
    }

    /// What a grant of `demand` for `owner` takes from the counters.
    pub fn debits(
        &self,
        c: &Cluster,
        owner: &QuotaOwner,
        pe: Option<&str>,
        grant: &[(usize, u32)],
        demand: Option<&Demand>,
    ) -> Vec<QuotaDebit> {
        let mut out: Vec<QuotaDebit> = Vec::new();
        for (k, &(qi, n)) in grant.iter().enumerate() {
            let q = &c.qis[qi];
            let subject = QuotaSubject {
                user: &owner.user,
                project: owner.project.as_deref(),
                pe,
                queue: &q.queue,
                host: &c.hosts[q.host].name,
            };
            for s in 0..self.sets.len() {
                let Some(r) = self.rule_for(owner, s, &subject) else {
                    continue;
                };
                let rule = &self.sets[s].rules[r];
                let mut amounts = Vec::new();
                for (i, l) in rule.limits.iter().enumerate() {
                    let amount = if l.resource == "slots" {
                        f64::from(n)
                    } else if l.consumable {
                        match demand
                            .and_then(|d| d.consumables.iter().find(|r| r.name == l.resource))
                        {
                            Some(r) if r.per_job && k == 0 => r.amount,
                            Some(r) if r.per_job => 0.0,
                            Some(r) => r.amount * f64::from(n),
                            None => 0.0,
                        }
                    } else {
                        0.0
                    };
                    if amount != 0.0 {
                        amounts.push((i as u16, amount));
                    }
                }
                if amounts.is_empty() {
                    continue;
                }
                let element = Self::element(rule, &subject);
                match out
                    .iter_mut()
                    .find(|d| d.set == s as u16 && d.rule == r as u16 && d.element == element)
                {
                    Some(d) => {
                        for (i, a) in amounts {
                            match d.amounts.iter_mut().find(|(j, _)| *j == i) {
                                Some((_, v)) => *v += a,
                                None => d.amounts.push((i, a)),
                            }
                        }
                    }
                    None => out.push(QuotaDebit {
                        set: s as u16,
                        rule: r as u16,
                        element,
                        amounts,
                    }),
                }
            }
        }
        out
    }

    /// Whether the counters can take `debits` whole (a parallel job's grant over several
    /// instances, where each instance alone was within the limits), else the first refusal.
    pub fn admits(
        &self,
        c: &Cluster,
        grant: &[(usize, u32)],
        debits: &[QuotaDebit],
    ) -> Result<(), QuotaMiss> {
        let host = grant.first().map_or(0, |&(qi, _)| c.qis[qi].host);
        for d in debits {
            let rule = &self.sets[d.set as usize].rules[d.rule as usize];
            let used = self
                .usage
                .get(&(d.set, d.rule))
                .and_then(|m| m.get(&d.element));
            for &(i, a) in &d.amounts {
                let l = &rule.limits[i as usize];
                let held = used.and_then(|u| u.get(i as usize)).copied().unwrap_or(0.0);
                if held + a > Self::limit_value(c, host, l) + 1e-9 {
                    return Err(QuotaMiss {
                        limit: d.element.to_string(),
                        rule: format!("{}/{}", self.sets[d.set as usize].name, rule.label),
                    });
                }
            }
        }
        Ok(())
    }

    /// Takes (`sign` 1) or gives back (-1) what a booking's debits hold.
    pub fn apply(&mut self, debits: &[QuotaDebit], sign: f64) {
        for d in debits {
            let Some(rule) = self
                .sets
                .get(d.set as usize)
                .and_then(|s| s.rules.get(d.rule as usize))
            else {
                continue;
            };
            let width = rule.limits.len();
            // A counter back at zero is kept (not removed and made again): the reservation
            // planner gives back and re-takes thousands of bookings per pass.
            let by_element = self.usage.entry((d.set, d.rule)).or_default();
            let u = match by_element.get_mut(&d.element) {
                Some(u) => u,
                None => by_element
                    .entry(d.element.clone())
                    .or_insert_with(|| vec![0.0; width]),
            };
            for &(i, a) in &d.amounts {
                if let Some(v) = u.get_mut(i as usize) {
                    *v += sign * a;
                    if v.abs() < 1e-9 {
                        *v = 0.0;
                    }
                }
            }
        }
    }
}

fn floor_u32(v: f64) -> u32 {
    if v <= 0.0 {
        0
    } else if v >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        v.floor() as u32
    }
}

/// A static limit or request as a number (`2G`, `INFINITY`, `1:0:0`).
fn static_value(v: &str) -> f64 {
    if v.eq_ignore_ascii_case("INFINITY") {
        return f64::INFINITY;
    }
    crate::units::parse_with_multiplier(v)
        .or_else(|| crate::time::parse_time(v).map(|t| t as f64))
        .unwrap_or(f64::INFINITY)
}

impl QuotaMiss {
    /// `qstat -j`'s words (SGE 8.1.9).
    pub fn describe(&self) -> String {
        format!(
            "cannot run because it exceeds limit \"{}\" in rule \"{}\"",
            self.limit, self.rule
        )
    }
}
