//! queue_conf(5)'s values per host group and per host (`slots 4,[@big=16],[node01=32]`):
//! each queue's `per_host` maps a `@group` or a host to a partial queue, written with the
//! queue's own keys (`{slots: 16, pe_list: [smp], limits: {h_rt: "1:00:00"}}`), and the
//! queue instance on a host is the queue with those applied, its groups' first, its own last
//! (a host's value beats its group's, as in SGE).
//!
//! Why partial queues merged as serde values rather than a per-host variant of each field:
//! every field of [`QueueConfig`], those added later included, gets per-host values with no
//! code of its own, and the file says them in the words it says the queue's.

use super::{ClusterConfig, QueueConfig};
use serde_json::{Map, Value};

/// The keys whose value is a table of attributes of their own (`limits: {h_rt, h_vmem…}`,
/// `fbsng: {qpi…}`): an override of one entry keeps the others, and `null` removes one.
/// Every other key is one attribute, replaced whole (`complex_values` as SGE replaces it).
pub const MERGED_BY_KEY: &[&str] = &["limits", "fbsng"];

/// The keys that have no per-host value (SGE's `qname` and `hostlist`).
const NOT_PER_HOST: &[&str] = &["name", "hostlist", "per_host"];

/// The names of [`QueueConfig`]'s fields, as serde knows them.
pub fn queue_fields() -> &'static [&'static str] {
    static FIELDS: std::sync::OnceLock<&'static [&'static str]> = std::sync::OnceLock::new();
    FIELDS.get_or_init(|| {
        let mut fields: &'static [&'static str] = &[];
        let _ = <QueueConfig as serde::Deserialize>::deserialize(FieldNames(&mut fields));
        fields
    })
}

/// A deserializer that only records the field names a struct asks for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("field names only"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("field names only"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Whether `key` is a field of the queue that may have per-host values.
pub fn is_per_host_field(key: &str) -> bool {
    !NOT_PER_HOST.contains(&key) && queue_fields().contains(&key)
}

/// `over` applied to `base` (a queue as a JSON object).
pub fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (MERGED_BY_KEY.contains(&k.as_str()), v, base.get_mut(k)) {
            (true, Value::Object(entries), Some(Value::Object(now))) => {
                for (ek, ev) in entries {
                    if ev.is_null() {
                        now.remove(ek);
                    } else {
                        now.insert(ek.clone(), ev.clone());
                    }
                }
            }
            (true, Value::Object(entries), _) => {
                let kept = entries
                    .iter()
                    .filter(|(_, ev)| !ev.is_null())
                    .map(|(ek, ev)| (ek.clone(), ev.clone()))
                    .collect();
                base.insert(k.clone(), Value::Object(kept));
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `q` with `overrides` applied in order, without per-host values of its own.
pub fn apply(q: &QueueConfig, overrides: &[&Map<String, Value>]) -> Result<QueueConfig, String> {
    let mut plain = q.clone();
    plain.per_host.clear();
    if overrides.is_empty() {
        return Ok(plain);
    }
    let Value::Object(mut object) = serde_json::to_value(&plain).map_err(|e| e.to_string())? else {
        return Err("a queue is not an object".into());
    };
    for over in overrides {
        merge(&mut object, over);
    }
    let mut out: QueueConfig =
        serde_json::from_value(Value::Object(object)).map_err(|e| e.to_string())?;
    out.per_host.clear();
    Ok(out)
}

impl ClusterConfig {
    /// The hosts of host group `group` (`@name`), its subgroups resolved, each once, in
    /// configuration order; empty for an unknown group.
    pub fn host_group_hosts(&self, group: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.expand_host_entry(group, &mut out, 0);
        let mut seen = std::collections::HashSet::new();
        out.retain(|h| seen.insert(h.clone()));
        out
    }

    /// The host groups `host` is in (directly or through a subgroup), by name.
    pub fn host_groups_of(&self, host: &str) -> Vec<&str> {
        self.hostgroups
            .keys()
            .filter(|g| self.host_group_hosts(g).iter().any(|h| h == host))
            .map(String::as_str)
            .collect()
    }

    /// The queue instance of `q` on `host`: the queue's values with those of `host`'s host
    /// groups and then of `host` itself applied (queue_conf(5): a host's value beats its
    /// group's). Every value read for one host is read from this.
    pub fn queue_instance(&self, q: &QueueConfig, host: &str) -> QueueConfig {
        if q.per_host.is_empty() {
            return q.clone();
        }
        // Only the groups the queue has values for are resolved.
        let mut overrides: Vec<&Map<String, Value>> = q
            .per_host
            .iter()
            .filter(|(k, _)| {
                k.starts_with('@') && self.host_group_hosts(k).iter().any(|h| h == host)
            })
            .map(|(_, over)| over)
            .collect();
        overrides.extend(q.per_host.get(host));
        // Checked when the configuration was read (`validate_per_host`).
        apply(q, &overrides).unwrap_or_else(|_| {
            let mut plain = q.clone();
            plain.per_host.clear();
            plain
        })
    }

    /// Every instance of `q`, with its host, as [`Self::queue_instance`] gives it, each host
    /// group resolved once (for the thousands of hosts of a cluster).
    pub fn queue_instances<'c>(
        &'c self,
        q: &QueueConfig,
    ) -> Vec<(&'c super::HostConfig, QueueConfig)> {
        let hosts = self.queue_hosts(q);
        if q.per_host.is_empty() {
            return hosts.into_iter().map(|h| (h, q.clone())).collect();
        }
        let groups: Vec<(&Map<String, Value>, std::collections::HashSet<String>)> = q
            .per_host
            .iter()
            .filter(|(k, _)| k.starts_with('@'))
            .map(|(k, over)| (over, self.host_group_hosts(k).into_iter().collect()))
            .collect();
        hosts
            .into_iter()
            .map(|h| {
                let mut overrides: Vec<&Map<String, Value>> = groups
                    .iter()
                    .filter(|(_, members)| members.contains(&h.name))
                    .map(|(over, _)| *over)
                    .collect();
                overrides.extend(q.per_host.get(&h.name));
                let instance = apply(q, &overrides).unwrap_or_else(|_| {
                    let mut plain = q.clone();
                    plain.per_host.clear();
                    plain
                });
                (h, instance)
            })
            .collect()
    }

    /// The queue instance `queue@host` (or the cluster queue `queue`, its own values), if the
    /// queue exists.
    pub fn queue_instance_named(&self, name: &str) -> Option<QueueConfig> {
        let (queue, host) = match name.split_once('@') {
            Some((q, h)) => (q, Some(h)),
            None => (name, None),
        };
        let q = self.queue(queue)?;
        Some(match host {
            Some(h) => self.queue_instance(q, h),
            None => q.clone(),
        })
    }

    /// Every queue's `per_host`: known hosts and groups, keys that are queue fields with
    /// per-host values and values of their type, and no host that two of its groups give
    /// different values of one key (SGE's "configuration ambiguous").
    pub(super) fn validate_per_host(&self) -> Result<(), String> {
        for q in &self.queues {
            for (key, over) in &q.per_host {
                if key.starts_with('@') {
                    if !self.hostgroups.contains_key(key) {
                        return Err(format!(
                            "queue {}: per_host: unknown host group {key}",
                            q.name
                        ));
                    }
                } else if self.host(key).is_none() {
                    return Err(format!("queue {}: per_host: unknown host {key}", q.name));
                }
                if let Some(bad) = over.keys().find(|k| !is_per_host_field(k)) {
                    return Err(format!(
                        "queue {}: per_host {key}: {bad} has no per-host values",
                        q.name
                    ));
                }
                let instance = apply(q, &[over])
                    .map_err(|e| format!("queue {}: per_host {key}: {e}", q.name))?;
                for pe in &instance.pe_list {
                    if self.pe(pe).is_none() {
                        return Err(format!(
                            "queue {}: per_host {key}: unknown parallel environment {pe}",
                            q.name
                        ));
                    }
                }
            }
            let groups: Vec<&String> = q.per_host.keys().filter(|k| k.starts_with('@')).collect();
            for (i, a) in groups.iter().enumerate() {
                for b in &groups[i + 1..] {
                    let (oa, ob) = (&q.per_host[*a], &q.per_host[*b]);
                    let clash = oa.iter().find(|(k, v)| ob.get(*k).is_some_and(|w| w != *v));
                    let Some((field, _)) = clash else { continue };
                    let hosts_b = self.host_group_hosts(b);
                    if let Some(h) = self.host_group_hosts(a).iter().find(|h| {
                        hosts_b.contains(h)
                            && !q.per_host.get(*h).is_some_and(|o| o.contains_key(field))
                    }) {
                        return Err(format!(
                            "queue {}: per_host: host {h} is in host groups {a} and {b}, which give {field} different values (give {h} its own)",
                            q.name
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Result<ClusterConfig, String> {
        let text = ClusterConfig::default_text("node1", 2)
            .replace(
                "hostgroups:\n  \"@allhosts\": [\"node1\"]",
                "hostgroups:\n  \"@allhosts\": [\"node1\", \"node2\"]\n  \"@big\": [\"node2\"]\n  \"@top\": [\"@big\"]",
            )
            .replace(
                "hosts:\n",
                "hosts:\n  - {name: node2, launch: {method: local}}\n",
            )
            .replace("    tmpdir: /tmp\n", &format!("    tmpdir: /tmp\n{extra}"));
        ClusterConfig::parse(&text)
    }

    #[test]
    fn field_names_come_from_serde() {
        let fields = queue_fields();
        assert!(
            fields.contains(&"slots") && fields.contains(&"limits"),
            "{fields:?}"
        );
        assert!(is_per_host_field("prolog"));
        assert!(!is_per_host_field("hostlist") && !is_per_host_field("nosuch"));
    }

    #[test]
    fn a_host_beats_its_group_and_limits_merge_entry_by_entry() {
        let c = config(
            "    limits: {h_rt: \"1:00:00\", s_rt: \"0:50:00\"}\n    per_host:\n      \"@big\": {slots: 16, pe_list: [smp], limits: {h_rt: \"2:00:00\"}}\n      node2: {slots: 32, prolog: /bin/true, limits: {s_rt: null}}\n",
        )
        .expect("parses");
        let q = c.queue("all.q").expect("all.q");
        let one = c.queue_instance(q, "node1");
        assert_eq!(one.slots, 2);
        assert_eq!(one.pe_list, ["make", "smp", "mpi"]);
        assert!(one.per_host.is_empty());
        let two = c.queue_instance(q, "node2");
        assert_eq!(two.slots, 32);
        assert_eq!(two.pe_list, ["smp"]);
        assert_eq!(two.prolog.as_deref(), Some("/bin/true"));
        assert_eq!(two.limits.get("h_rt").map(String::as_str), Some("2:00:00"));
        assert_eq!(two.limits.get("s_rt"), None);
        assert_eq!(c.host_group_hosts("@top"), ["node2"]);
        assert_eq!(c.host_groups_of("node2"), ["@allhosts", "@big", "@top"]);
    }

    #[test]
    fn unknown_hosts_groups_fields_and_bad_values_are_refused() {
        for (extra, wanted) in [
            (
                "    per_host: {nosuch: {slots: 3}}\n",
                "unknown host nosuch",
            ),
            (
                "    per_host: {\"@nosuch\": {slots: 3}}\n",
                "unknown host group @nosuch",
            ),
            (
                "    per_host: {node2: {hostlist: [node1]}}\n",
                "hostlist has no per-host values",
            ),
            (
                "    per_host: {node2: {nosuch: 1}}\n",
                "nosuch has no per-host values",
            ),
            ("    per_host: {node2: {slots: many}}\n", "per_host node2"),
            (
                "    per_host: {node2: {pe_list: [nope]}}\n",
                "unknown parallel environment nope",
            ),
            (
                "    per_host: {\"@big\": {slots: 3}, \"@allhosts\": {slots: 4}}\n",
                "host node2 is in host groups @allhosts and @big",
            ),
        ] {
            let err = config(extra).expect_err(extra);
            assert!(err.contains(wanted), "{extra}: {err}");
        }
        // Two groups that agree, or a host that settles it, are fine.
        config("    per_host: {\"@big\": {slots: 3}, \"@allhosts\": {slots: 3}}\n").expect("agree");
        config(
            "    per_host: {\"@big\": {slots: 3}, \"@allhosts\": {slots: 4}, node2: {slots: 5}}\n",
        )
        .expect("settled by the host");
    }
}
