//! Resource quota sets (`sge_resource_quota(5)`): `resource_quotas` in `config.yaml`, and
//! SGE's own text of them (`qconf -srqs`, `-Arqs`), read and printed here so that the YAML and
//! the text say the same words: a filter is written as SGE writes it (`{sgeuser}`,
//! `!a,@acl`, `*`) and a rule's limits as its `to` clause (`slots=4,h_vmem=2G`,
//! `slots=$num_proc*2`).
//!
//! What the rules mean for a job (which rule of a set applies, which counter it is charged
//! to) is decided here too, on names only, so that the scheduler and `qquota` agree.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One rule set (`{ name … limit … }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceQuotaSet {
    pub name: String,
    /// `NONE` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A set that is not enabled is kept and shown, never applied (SGE's default: false).
    #[serde(default)]
    pub enabled: bool,
    pub rules: Vec<QuotaRule>,
}

/// One `limit` line: filters, then the limits (`to`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<QuotaFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projects: Option<QuotaFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pes: Option<QuotaFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<QuotaFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<QuotaFilter>,
    /// The `to` clause; `NONE` (no limit) when empty.
    #[serde(default)]
    pub to: QuotaLimits,
}

/// A filter: its elements (each maybe `!`-prefixed, `*`, `@group`), and whether it is the
/// braced form, which limits each element on its own instead of all of them together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuotaFilter {
    pub expand: bool,
    pub items: Vec<String>,
}

impl TryFrom<String> for QuotaFilter {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        QuotaFilter::parse(&text)
    }
}

impl From<QuotaFilter> for String {
    fn from(f: QuotaFilter) -> String {
        f.to_string()
    }
}

impl QuotaFilter {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (expand, inner) = match t.strip_prefix('{') {
            Some(rest) => match rest.strip_suffix('}') {
                Some(inner) => (true, inner),
                None => return Err(format!("filter \"{t}\" has no closing \"}}\"")),
            },
            None => (false, t),
        };
        // SGE keeps the included and the excluded elements apart and shows the excluded ones
        // last (`!sgeuser2,@arusers` reads back as `@arusers,!sgeuser2`).
        let (excluded, mut items): (Vec<String>, Vec<String>) = inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .partition(|s| s.starts_with('!'));
        items.extend(excluded);
        if items.is_empty() {
            return Err(format!("filter \"{t}\" is empty"));
        }
        Ok(QuotaFilter { expand, items })
    }
}

impl std::fmt::Display for QuotaFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = self.items.join(",");
        if self.expand {
            write!(f, "{{{list}}}")
        } else {
            f.write_str(&list)
        }
    }
}

/// The `to` clause: `resource=value` pairs in order, a value either static (`4`, `2G`) or
/// dynamic (`$num_proc*2`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuotaLimits(pub Vec<(String, String)>);

impl TryFrom<String> for QuotaLimits {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        QuotaLimits::parse(&text)
    }
}

impl From<QuotaLimits> for String {
    fn from(l: QuotaLimits) -> String {
        l.to_string()
    }
}

impl QuotaLimits {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() || t.eq_ignore_ascii_case("NONE") {
            return Ok(QuotaLimits::default());
        }
        let mut out = Vec::new();
        for pair in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = pair.split_once('=') else {
                return Err(format!("limit \"{pair}\" is not resource=value"));
            };
            out.push((name.trim().to_string(), value.trim().to_string()));
        }
        Ok(QuotaLimits(out))
    }
}

impl std::fmt::Display for QuotaLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("NONE");
        }
        let pairs: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&pairs.join(","))
    }
}

/// A dynamic limit (`$num_proc*2`, `2*$num_proc+1`): a sum of weighted terms, each a
/// constant or a complex's value on the host (`sge_resource_quota(5)`).
pub fn is_dynamic(value: &str) -> bool {
    value.contains('$')
}

/// The value of a dynamic limit, with `lookup` giving a complex's numeric value on the host;
/// a complex without a value counts as very large (SGE: "a large value is used for it to
/// suggest an overloaded condition").
pub fn eval_dynamic(value: &str, lookup: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
    let mut total = 0.0;
    let mut sign = 1.0;
    let mut term = String::new();
    let flush = |term: &str, sign: f64, total: &mut f64| -> Option<()> {
        let mut product = 1.0;
        for factor in term.split('*').map(str::trim) {
            let v = match factor.strip_prefix('$') {
                Some(name) => lookup(name).unwrap_or(f64::from(u32::MAX)),
                None => factor.parse::<f64>().ok()?,
            };
            product *= v;
        }
        *total += sign * product;
        Some(())
    };
    for ch in value.chars() {
        if ch == '+' || ch == '-' {
            if !term.trim().is_empty() {
                flush(&term, sign, &mut total)?;
            }
            term.clear();
            sign = if ch == '-' { -1.0 } else { 1.0 };
        } else {
            term.push(ch);
        }
    }
    if term.trim().is_empty() {
        return None;
    }
    flush(&term, sign, &mut total)?;
    Some(total)
}

/// The names a `@group` (ACL or host group) stands for, for a filter's matching.
pub type Members<'a> = &'a dyn Fn(&str) -> Vec<String>;

impl QuotaFilter {
    /// Whether `value` (a user, project, PE, queue or host name; `None` for a job without a
    /// project or PE) passes the filter: some positive element matches it and no `!` one does.
    /// A `@name` element stands for its members (`members`); `*` for any value present.
    pub fn matches(&self, value: Option<&str>, members: Members) -> bool {
        let mut positive = false;
        let mut any_positive = false;
        for item in &self.items {
            let (neg, pat) = match item.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, item.as_str()),
            };
            let hit = match value {
                None => false,
                Some(v) => element_matches(pat, v, members),
            };
            if neg {
                // `!*`: only jobs without the attribute.
                if hit || (pat == "*" && value.is_some()) {
                    return false;
                }
            } else {
                any_positive = true;
                positive |= hit;
            }
        }
        // A filter of exclusions only admits everything else (`!*` admits only "none").
        !any_positive || positive
    }

    /// The element of a braced filter `value` is charged to: the value itself (each user,
    /// project… has its own counter).
    pub fn element(&self, value: Option<&str>) -> String {
        value.unwrap_or("").to_string()
    }
}

/// An access list's entries as a `users` filter matches them for one owner: a `@unixgroup`
/// entry stands for the owner when it is the owner's (primary) group, as queues' lists
/// admit users (`access_list(5)`).
pub fn acl_members_for(entries: &[String], user: &str, group: &str) -> Vec<String> {
    entries
        .iter()
        .map(|e| match e.strip_prefix('@') {
            Some(unix) if unix == group => user.to_string(),
            _ => e.clone(),
        })
        .collect()
}

fn element_matches(pat: &str, value: &str, members: Members) -> bool {
    if pat.starts_with('@') {
        return members(pat).iter().any(|m| m == value);
    }
    wildcard(pat, value)
}

/// SGE's wildcard names in filters (`*`, `?`; `node*`), on bytes.
fn wildcard(pat: &str, text: &str) -> bool {
    let (p, t) = (pat.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// What a job is, for the rules: its owner, project and parallel environment, and the queue
/// and host it would run in.
#[derive(Debug, Clone, Copy)]
pub struct QuotaSubject<'a> {
    pub user: &'a str,
    pub project: Option<&'a str>,
    pub pe: Option<&'a str>,
    pub queue: &'a str,
    pub host: &'a str,
}

impl QuotaRule {
    /// Whether the rule applies to `s`; users' `@acl`s through `acl`, hosts' `@group`s
    /// through `hostgroup`.
    pub fn matches(&self, s: &QuotaSubject, acl: Members, hostgroup: Members) -> bool {
        let none: Members = &|_| Vec::new();
        self.users
            .as_ref()
            .is_none_or(|f| f.matches(Some(s.user), acl))
            && self
                .projects
                .as_ref()
                .is_none_or(|f| f.matches(s.project, none))
            && self.pes.as_ref().is_none_or(|f| f.matches(s.pe, none))
            && self
                .queues
                .as_ref()
                .is_none_or(|f| f.matches(Some(s.queue), none))
            && self
                .hosts
                .as_ref()
                .is_none_or(|f| f.matches(Some(s.host), hostgroup))
    }

    /// Whether the rule's owner filters (`users`, `projects`) admit `user` and `project`:
    /// what a job's placement cannot change, decided once per job.
    pub fn matches_owner(&self, user: &str, project: Option<&str>, acl: Members) -> bool {
        let none: Members = &|_| Vec::new();
        self.users
            .as_ref()
            .is_none_or(|f| f.matches(Some(user), acl))
            && self
                .projects
                .as_ref()
                .is_none_or(|f| f.matches(project, none))
    }

    /// Whether the rule's placement filters (`pes`, `queues`, `hosts`) admit `s`.
    pub fn matches_place(&self, s: &QuotaSubject, hostgroup: Members) -> bool {
        let none: Members = &|_| Vec::new();
        self.pes.as_ref().is_none_or(|f| f.matches(s.pe, none))
            && self
                .queues
                .as_ref()
                .is_none_or(|f| f.matches(Some(s.queue), none))
            && self
                .hosts
                .as_ref()
                .is_none_or(|f| f.matches(Some(s.host), hostgroup))
    }

    /// Whether some filter is braced (more than one counter).
    pub fn braced(&self) -> bool {
        self.filters()
            .iter()
            .any(|(_, f)| f.as_ref().is_some_and(|f| f.expand))
    }

    /// The counter of the rule `s` is charged to, as SGE names it in a pending reason:
    /// `user/project/pe/queue/host/`, each field the subject's value where that filter is
    /// braced (one counter per element) and empty where the filter counts all together
    /// (`sgeuser/////`, `////vm/`).
    pub fn element_key(&self, s: &QuotaSubject) -> String {
        let field = |f: &Option<QuotaFilter>, v: Option<&str>| match f {
            Some(f) if f.expand => f.element(v),
            _ => String::new(),
        };
        format!(
            "{}/{}/{}/{}/{}/",
            field(&self.users, Some(s.user)),
            field(&self.projects, s.project),
            field(&self.pes, s.pe),
            field(&self.queues, Some(s.queue)),
            field(&self.hosts, Some(s.host)),
        )
    }

    /// Whether a limit of the rule may be dynamic: only where each host has its own counter
    /// (a braced `hosts` filter).
    pub fn per_host(&self) -> bool {
        self.hosts.as_ref().is_some_and(|h| h.expand)
    }

    /// The rule's name as `qquota` and the reasons print it: its name, else its number in the
    /// set (from 1).
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| (index + 1).to_string())
    }
}

/// Why a rule-set text cannot be read; the words are SGE's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QuotaTextError(pub String);

fn err(s: impl Into<String>) -> QuotaTextError {
    QuotaTextError(s.into())
}

/// Reads one or more rule sets in SGE's text (`{` … `}` blocks; `\` continues a line).
pub fn parse_text(text: &str) -> Result<Vec<ResourceQuotaSet>, QuotaTextError> {
    let joined = text.replace("\\\n", " ");
    let mut sets = Vec::new();
    let mut current: Option<ResourceQuotaSet> = None;
    let mut named = false;
    for (n, raw) in joined.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line == "{" {
            current = Some(ResourceQuotaSet {
                name: String::new(),
                description: None,
                enabled: false,
                rules: Vec::new(),
            });
            named = false;
            continue;
        }
        if line == "}" {
            let Some(set) = current.take() else {
                return Err(err(format!(
                    "each value in the attribute value list in line {} should begin with \"{{\"",
                    n + 1
                )));
            };
            if !named {
                return Err(err("required attribute \"name\" is missing"));
            }
            if set.rules.is_empty() {
                return Err(err("resource quota set has no rules"));
            }
            sets.push(set);
            continue;
        }
        let Some(set) = current.as_mut() else {
            return Err(err(format!(
                "each value in the attribute value list in line {} should begin with \"{{\"",
                n + 1
            )));
        };
        let (key, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(k, r)| (k, r.trim()));
        match key {
            "name" => {
                set.name = rest.to_string();
                named = true;
            }
            "description" => {
                let d = rest.trim_matches('"');
                set.description = (!d.is_empty() && d != "NONE").then(|| d.to_string());
            }
            "enabled" => {
                set.enabled = match rest.to_ascii_lowercase().as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(err(format!("error parsing value \"{rest}\""))),
                }
            }
            "limit" => set.rules.push(parse_rule(rest)?),
            other => return Err(err(format!("unknown attribute name \"{other}\""))),
        }
    }
    if current.is_some() {
        return Err(err("resource quota set has no closing \"}\""));
    }
    Ok(sets)
}

fn parse_rule(text: &str) -> Result<QuotaRule, QuotaTextError> {
    let mut rule = QuotaRule {
        name: None,
        users: None,
        projects: None,
        pes: None,
        queues: None,
        hosts: None,
        to: QuotaLimits::default(),
    };
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let key = words[i];
        if key == "to" {
            let rest = words[i + 1..].join("");
            rule.to = QuotaLimits::parse(&rest).map_err(err)?;
            return Ok(rule);
        }
        // A filter's list may hold spaces after its commas (`{a, b}`): its words run to
        // the next keyword.
        let mut value = String::new();
        i += 1;
        while i < words.len() && !is_rule_keyword(words[i]) {
            value.push_str(words[i]);
            i += 1;
        }
        if value.is_empty() && key != "name" {
            return Err(err(format!("unknown attribute name \"{key}\"")));
        }
        let filter = || QuotaFilter::parse(&value).map_err(err);
        match key {
            "name" => rule.name = Some(value.clone()),
            "users" => rule.users = Some(filter()?),
            "projects" => rule.projects = Some(filter()?),
            "pes" => rule.pes = Some(filter()?),
            "queues" => rule.queues = Some(filter()?),
            "hosts" => rule.hosts = Some(filter()?),
            other => return Err(err(format!("unknown attribute name \"{other}\""))),
        }
    }
    Ok(rule)
}

fn is_rule_keyword(w: &str) -> bool {
    matches!(
        w,
        "name" | "users" | "projects" | "pes" | "queues" | "hosts" | "to"
    )
}

/// One rule set in `qconf -srqs`'s text.
pub fn set_text(set: &ResourceQuotaSet) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(s, "   {:<12} {}", "name", set.name);
    let desc = match &set.description {
        Some(d) => format!("\"{d}\""),
        None => "NONE".to_string(),
    };
    let _ = writeln!(s, "   {:<12} {desc}", "description");
    let enabled = if set.enabled { "TRUE" } else { "FALSE" };
    let _ = writeln!(s, "   {:<12} {enabled}", "enabled");
    for r in &set.rules {
        // SGE folds a rule longer than a line before the clause that would pass column 80,
        // going on after a `\` three columns in.
        let mut line = format!("   {:<12}", "limit");
        for clause in rule_clauses(r) {
            if line.len() + 1 + clause.len() > 80 && line.trim_start() != "limit" {
                s.push_str(&line);
                s.push_str(" \\\n");
                line = format!("   {clause}");
            } else {
                line.push(' ');
                line.push_str(&clause);
            }
        }
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str("}\n");
    s
}

/// A rule's words after `limit`.
pub fn rule_text(r: &QuotaRule) -> String {
    rule_clauses(r).join(" ")
}

/// A rule's clauses (`name X`, `users X`… `to X`), each a unit SGE never splits.
fn rule_clauses(r: &QuotaRule) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(n) = &r.name {
        parts.push(format!("name {n}"));
    }
    for (key, f) in r.filters() {
        if let Some(f) = f {
            parts.push(format!("{key} {f}"));
        }
    }
    parts.push(format!("to {}", r.to));
    parts
}

impl QuotaRule {
    /// The filters by their keyword, in SGE's order.
    pub fn filters(&self) -> [(&'static str, &Option<QuotaFilter>); 5] {
        [
            ("users", &self.users),
            ("projects", &self.projects),
            ("pes", &self.pes),
            ("queues", &self.queues),
            ("hosts", &self.hosts),
        ]
    }
}

/// The rule set `qconf -arqs NAME` offers to edit.
pub fn template(name: &str) -> ResourceQuotaSet {
    ResourceQuotaSet {
        name: name.to_string(),
        description: None,
        enabled: false,
        rules: vec![QuotaRule {
            name: None,
            users: None,
            projects: None,
            pes: None,
            queues: None,
            hosts: None,
            to: QuotaLimits(vec![("slots".to_string(), "0".to_string())]),
        }],
    }
}

/// Checks a rule set against the cell's complexes, in SGE's words: every limited resource
/// exists, a static value has its complex's type, a dynamic one stands only in a rule with
/// a braced `hosts` filter.
pub fn check(set: &ResourceQuotaSet, complexes: &[super::Complex]) -> Result<(), QuotaTextError> {
    use super::ComplexType;
    if set.rules.is_empty() {
        return Err(err("resource quota set has no rules"));
    }
    for rule in &set.rules {
        for (name, value) in &rule.to.0 {
            let Some(c) = complexes
                .iter()
                .find(|c| &c.name == name || &c.shortcut == name)
            else {
                return Err(err(format!(
                    "\"resource_quota\" references not existing complex attribute \"{name}\""
                )));
            };
            if is_dynamic(value) {
                if !rule.per_host() {
                    return Err(err("dynamic limits are only supported for per host rules"));
                }
                if eval_dynamic(value, &|_| Some(1.0)).is_none() {
                    return Err(err(format!("error parsing value \"{value}\"")));
                }
                continue;
            }
            let kind = match c.kind {
                ComplexType::Int => Some(("integer", value.parse::<i64>().is_ok())),
                ComplexType::Double => Some(("double", value.parse::<f64>().is_ok())),
                ComplexType::Memory => Some((
                    "memory",
                    crate::units::parse_with_multiplier(value).is_some(),
                )),
                ComplexType::Time => Some(("time", crate::time::parse_time(value).is_some())),
                _ => None,
            };
            if let Some((kind, false)) = kind
                && !is_infinity(value)
            {
                return Err(err(format!("attribute \"{name}\" is not a {kind} value")));
            }
        }
    }
    Ok(())
}

fn is_infinity(v: &str) -> bool {
    v.eq_ignore_ascii_case("INFINITY")
}

#[cfg(test)]
mod tests {
    use super::*;

    const B2: &str = "{\n   name         rqs25_b2\n   description  NONE\n   enabled      FALSE\n   limit        name perhost users * hosts {*} to slots=2\n   limit        users !sgeuser2,@arusers projects * pes !* queues all.q,!foo.q \\\n                hosts @allhosts to slots=1,h_vmem=2G\n}\n";

    #[test]
    fn text_round_trips_with_sge_layout() {
        let sets = parse_text(B2).expect("valid");
        assert_eq!(sets.len(), 1);
        let s = &sets[0];
        assert_eq!(s.rules.len(), 2);
        assert_eq!(s.rules[0].name.as_deref(), Some("perhost"));
        assert!(s.rules[0].hosts.as_ref().expect("valid").expand);
        assert_eq!(
            set_text(s),
            "{\n   name         rqs25_b2\n   description  NONE\n   enabled      FALSE\n   limit        name perhost users * hosts {*} to slots=2\n   limit        users @arusers,!sgeuser2 projects * pes !* queues all.q,!foo.q \\\n   hosts @allhosts to slots=1,h_vmem=2G\n}\n"
        );
    }

    #[test]
    fn filters_match_as_the_man_page_says() {
        let none: Members = &|_| Vec::new();
        let f = QuotaFilter::parse("!*").expect("valid");
        assert!(f.matches(None, none));
        assert!(!f.matches(Some("p"), none));
        let f = QuotaFilter::parse("*").expect("valid");
        assert!(!f.matches(None, none));
        assert!(f.matches(Some("p"), none));
        let f = QuotaFilter::parse("!sgeuser2,@arusers").expect("valid");
        let acl: Members = &|g| {
            if g == "@arusers" {
                vec!["a".to_string()]
            } else {
                Vec::new()
            }
        };
        assert!(f.matches(Some("a"), acl));
        assert!(!f.matches(Some("b"), acl));
        assert!(!f.matches(Some("sgeuser2"), acl));
        let f = QuotaFilter::parse("!sgeuser2").expect("valid");
        assert!(f.matches(Some("b"), none));
    }

    #[test]
    fn element_keys_name_only_braced_filters() {
        let r = &parse_text("{\nname x\nlimit users {sgeuser} to slots=1\nlimit name perhost users sgeuser2 queues all.q hosts {*} to slots=1\n}\n").expect("valid")[0];
        let s = QuotaSubject {
            user: "sgeuser",
            project: None,
            pe: None,
            queue: "all.q",
            host: "vm",
        };
        assert_eq!(r.rules[0].element_key(&s), "sgeuser/////");
        assert_eq!(r.rules[1].element_key(&s), "////vm/");
    }

    #[test]
    fn dynamic_limits_evaluate_per_host() {
        let v = eval_dynamic("$num_proc*2", &|n| (n == "num_proc").then_some(4.0));
        assert_eq!(v, Some(8.0));
        assert_eq!(eval_dynamic("2*$num_proc+1", &|_| Some(3.0)), Some(7.0));
        assert_eq!(eval_dynamic("$x*", &|_| Some(3.0)), None);
    }

    #[test]
    fn sge_refusals() {
        assert_eq!(
            parse_text("{\nname a\nenabled maybe\nlimit to slots=1\n}\n")
                .expect_err("refused")
                .0,
            "error parsing value \"maybe\""
        );
        assert_eq!(
            parse_text("{\nname a\nlimit names x to slots=1\n}\n")
                .expect_err("refused")
                .0,
            "unknown attribute name \"names\""
        );
        assert_eq!(
            parse_text("{\nname a\nenabled true\n}\n")
                .expect_err("refused")
                .0,
            "resource quota set has no rules"
        );
        assert_eq!(
            parse_text("name a\nlimit to slots=1\n")
                .expect_err("refused")
                .0,
            "each value in the attribute value list in line 1 should begin with \"{\""
        );
    }
}
