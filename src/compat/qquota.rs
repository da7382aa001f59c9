//! `qquota`'s report (SGE 8.1.9): the usage of every enabled resource quota rule that
//! applies to the selection, counted from the cell's running tasks as the scheduler counts
//! it (each task charged to the first matching rule of each set, a braced filter's elements
//! each on their own), printed as SGE's table or its `-xml`.

use crate::config::resource_quotas::{QuotaFilter, QuotaRule, QuotaSubject};
use crate::config::{ClusterConfig, Consumable};
use crate::model::JobRecord;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What `-u -P -pe -q -h -l` select (each a list of wildcard words; empty: any).
#[derive(Debug, Clone, Default)]
pub struct QquotaSelection {
    pub users: Vec<String>,
    pub projects: Vec<String>,
    pub pes: Vec<String>,
    pub queues: Vec<String>,
    pub hosts: Vec<String>,
    pub resources: Vec<String>,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaLine {
    /// `set/rule`.
    pub rule: String,
    pub resource: String,
    pub used: f64,
    pub limit: String,
    /// (filter keyword, what it shows): the element for a braced filter, else its text.
    pub filters: Vec<(&'static str, String)>,
}

/// Whether a selection word list admits a filter: some selected name passes it (a filter
/// of the rule that no selected name passes keeps the rule out of the report).
fn admits(
    filter: &Option<QuotaFilter>,
    selected: &[String],
    members: &dyn Fn(&str) -> Vec<String>,
) -> bool {
    let Some(f) = filter else {
        return true;
    };
    selected.is_empty()
        || selected
            .iter()
            .any(|s| s == "*" || f.matches(Some(s), members))
}

/// The report's lines for `config`'s enabled sets over `jobs`' running tasks.
pub fn report(config: &ClusterConfig, jobs: &[JobRecord], sel: &QquotaSelection) -> Vec<QuotaLine> {
    let hg = |g: &str| config.host_group_hosts(g);
    let complexes = config.complexes();
    // Usage by (set, rule, element), per resource.
    let mut usage: BTreeMap<(usize, usize, String), BTreeMap<String, f64>> = BTreeMap::new();
    let mut elements: BTreeMap<(usize, usize, String), QuotaSubjectOwned> = BTreeMap::new();
    for job in jobs {
        let (owner, group) = (&job.submitter.owner, &job.submitter.group);
        let acl = |g: &str| {
            crate::config::resource_quotas::acl_members_for(
                &config.rqs_acl_members(g),
                owner,
                group,
            )
        };
        for task in &job.tasks.running {
            for (k, (host, queue, slots)) in task.grants().into_iter().enumerate() {
                let subject = QuotaSubject {
                    user: &job.submitter.owner,
                    project: job.spec.project.as_deref(),
                    pe: job.spec.pe.as_ref().map(|p| p.name.as_str()),
                    queue: &queue,
                    host: &host,
                };
                for (s, set) in config.resource_quotas.iter().enumerate() {
                    if !set.enabled {
                        continue;
                    }
                    let Some(r) = set
                        .rules
                        .iter()
                        .position(|r| r.matches(&subject, &acl, &hg))
                    else {
                        continue;
                    };
                    let rule = &set.rules[r];
                    let key = (s, r, rule.element_key(&subject));
                    elements
                        .entry(key.clone())
                        .or_insert_with(|| QuotaSubjectOwned::of(&subject));
                    let u = usage.entry(key).or_default();
                    for (name, _) in &rule.to.0 {
                        let complex = complexes
                            .iter()
                            .find(|c| &c.name == name || &c.shortcut == name);
                        let amount = if name == "slots" {
                            f64::from(slots)
                        } else {
                            match complex {
                                Some(c) if c.consumable != Consumable::No => {
                                    let asked = job
                                        .spec
                                        .hard_resources
                                        .iter()
                                        .find(|q| q.name == c.name || q.name == c.shortcut)
                                        .map(|q| q.value.as_str())
                                        .unwrap_or(c.default.as_str());
                                    let per =
                                        crate::units::parse_with_multiplier(asked).unwrap_or(0.0);
                                    if c.consumable == Consumable::Job {
                                        if k == 0 { per } else { 0.0 }
                                    } else {
                                        per * f64::from(slots)
                                    }
                                }
                                _ => 0.0,
                            }
                        };
                        *u.entry(name.clone()).or_insert(0.0) += amount;
                    }
                }
            }
        }
    }
    let mut lines = Vec::new();
    for (s, set) in config.resource_quotas.iter().enumerate() {
        if !set.enabled {
            continue;
        }
        for (r, rule) in set.rules.iter().enumerate() {
            if !admits(&rule.users, &sel.users, &|g| config.rqs_acl_members(g))
                || !admits(&rule.projects, &sel.projects, &|_| Vec::new())
                || !admits(&rule.pes, &sel.pes, &|_| Vec::new())
                || !admits(&rule.queues, &sel.queues, &|_| Vec::new())
                || !admits(&rule.hosts, &sel.hosts, &hg)
            {
                continue;
            }
            let label = format!("{}/{}", set.name, rule.label(r));
            let braced = rule
                .filters()
                .iter()
                .any(|(_, f)| f.as_ref().is_some_and(|f| f.expand));
            let counters: Vec<(String, Option<&QuotaSubjectOwned>)> = if braced {
                elements
                    .iter()
                    .filter(|((es, er, _), _)| *es == s && *er == r)
                    .filter(|(_, e)| e.selected(sel, rule, &hg))
                    .map(|((_, _, key), e)| (key.clone(), Some(e)))
                    .collect()
            } else {
                vec![(rule.element_key_static(), None)]
            };
            for (key, element) in counters {
                let used = usage.get(&(s, r, key.clone()));
                for (name, limit) in &rule.to.0 {
                    if !sel.resources.is_empty() && !sel.resources.iter().any(|x| x == name) {
                        continue;
                    }
                    let amount = used.and_then(|u| u.get(name)).copied().unwrap_or(0.0);
                    if braced && amount == 0.0 {
                        continue;
                    }
                    lines.push(QuotaLine {
                        rule: label.clone(),
                        resource: name.clone(),
                        used: amount,
                        limit: limit.clone(),
                        filters: shown_filters(rule, element),
                    });
                }
            }
        }
    }
    lines
}

/// A counter's subject, kept to show a braced filter's element.
#[derive(Debug, Clone)]
struct QuotaSubjectOwned {
    user: String,
    project: Option<String>,
    pe: Option<String>,
    queue: String,
    host: String,
}

impl QuotaSubjectOwned {
    fn of(s: &QuotaSubject) -> Self {
        QuotaSubjectOwned {
            user: s.user.to_string(),
            project: s.project.map(str::to_string),
            pe: s.pe.map(str::to_string),
            queue: s.queue.to_string(),
            host: s.host.to_string(),
        }
    }

    /// Whether the selection's words name this counter's subject (a host group word
    /// names its hosts).
    fn selected(
        &self,
        sel: &QquotaSelection,
        rule: &QuotaRule,
        hostgroup: &dyn Fn(&str) -> Vec<String>,
    ) -> bool {
        let pick = |words: &[String], v: Option<&str>| {
            words.is_empty()
                || words.iter().any(|w| {
                    w == "*"
                        || v.is_some_and(|v| {
                            crate::compat::pattern::matches(w, v)
                                || (w.starts_with('@') && hostgroup(w).iter().any(|h| h == v))
                        })
                })
        };
        // Only what a braced filter names tells counters apart.
        let braced = |f: &Option<QuotaFilter>| f.as_ref().is_some_and(|f| f.expand);
        (!braced(&rule.users) || pick(&sel.users, Some(&self.user)))
            && (!braced(&rule.queues) || pick(&sel.queues, Some(&self.queue)))
            && (!braced(&rule.hosts) || pick(&sel.hosts, Some(&self.host)))
            && (!braced(&rule.projects) || pick(&sel.projects, self.project.as_deref()))
            && (!braced(&rule.pes) || pick(&sel.pes, self.pe.as_deref()))
    }
}

trait StaticKey {
    fn element_key_static(&self) -> String;
}

impl StaticKey for QuotaRule {
    /// The one counter of a rule without braced filters.
    fn element_key_static(&self) -> String {
        "/////".to_string()
    }
}

/// The filter column: each filter of the rule, a braced one as the counter's element.
fn shown_filters(
    rule: &QuotaRule,
    element: Option<&QuotaSubjectOwned>,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (key, f) in rule.filters() {
        let Some(f) = f else {
            continue;
        };
        let shown = match (f.expand, element) {
            (true, Some(e)) => match key {
                "users" => e.user.clone(),
                "projects" => e.project.clone().unwrap_or_default(),
                "pes" => e.pe.clone().unwrap_or_default(),
                "queues" => e.queue.clone(),
                _ => e.host.clone(),
            },
            _ => f.items.join(","),
        };
        out.push((key, shown));
    }
    out
}

fn amount(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// SGE's table; nothing at all when there is no line.
pub fn table(lines: &[QuotaLine]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::from("resource quota rule limit                filter\n");
    out.push_str(&"-".repeat(80));
    out.push('\n');
    for l in lines {
        let limit = format!("{}={}/{}", l.resource, amount(l.used), l.limit);
        let filter: Vec<String> = l.filters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(out, "{:<18} {:<20} {}", l.rule, limit, filter.join(" "));
    }
    out
}

/// `-xml`: a `qquota_rule` per rule and counter, its limits inside.
pub fn xml(lines: &[QuotaLine]) -> String {
    let mut out = String::from(
        "<?xml version='1.0'?>\n<qquota_result xmlns=\"http://arc.liv.ac.uk/repos/darcs/sge/source/source/dist/util/resources/schemas/qquota/qquota.xsd\">\n",
    );
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        let _ = writeln!(out, " <qquota_rule name='{}'>", l.rule);
        for (k, v) in &l.filters {
            let _ = writeln!(out, "   <{k}>{v}</{k}>");
        }
        // The limits of one counter (same rule and filters) stand together.
        while i < lines.len() && lines[i].rule == l.rule && lines[i].filters == l.filters {
            let m = &lines[i];
            let _ = writeln!(
                out,
                "   <limit resource='{}' limit='{}' value='{}'/>",
                m.resource,
                m.limit,
                amount(m.used)
            );
            i += 1;
        }
        out.push_str(" </qquota_rule>\n");
    }
    out.push_str("</qquota_result>\n");
    out
}
