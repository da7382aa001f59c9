//! `qstat -F [names]` and `qstat -l requests`: the resources of each queue instance, in the
//! order and formats SGE 8.1.9 prints them (recorded on the oracle): the host's load values
//! (`hl:`), its complex values (`hc:`/`hf:`), then the queue's fixed attributes (`qf:`), its
//! free slots (`qc:slots`) and its limits.
//!
//! Load values come from the same place as `qhost`'s: this host measured from `/proc`, other
//! hosts from `sched_d`'s reports; a host without fresh values lists only its configured ones.

use super::queues::QueueInstance;
use crate::acct::load::HostLoad;
use crate::config::{ClusterConfig, HostConfig};
use crate::units::memory3;

/// One line of `-F`: `hl:load_avg=0.120000` is (`hl`, `load_avg`, `0.120000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub kind: &'static str,
    pub name: String,
    pub value: String,
}

fn r(kind: &'static str, name: &str, value: String) -> Resource {
    Resource {
        kind,
        name: name.to_string(),
        value,
    }
}

/// SGE's limits of a queue, in its order (`queue_conf(5)`); `infinity` when not set.
const LIMITS: [&str; 16] = [
    "s_rt", "h_rt", "s_cpu", "h_cpu", "s_fsize", "h_fsize", "s_data", "h_data", "s_stack",
    "h_stack", "s_core", "h_core", "s_rss", "h_rss", "s_vmem", "h_vmem",
];

/// Every resource of a queue instance, in SGE's order.
pub fn of_instance(
    config: &ClusterConfig,
    q: &QueueInstance<'_>,
    host: Option<&HostConfig>,
    load: Option<&HostLoad>,
) -> Vec<Resource> {
    let mut out = Vec::with_capacity(64);
    if let Some(l) = load {
        let f = |v: f64| format!("{v:.6}");
        let n = f64::from(l.num_proc.max(1));
        let arch = if l.arch.is_empty() {
            host.map_or_else(String::new, |h| h.arch.clone())
        } else {
            l.arch.clone()
        };
        out.extend([
            r("hl", "arch", arch),
            r("hl", "num_proc", l.num_proc.to_string()),
            r("hl", "mem_total", memory3(l.mem_total)),
            r("hl", "swap_total", memory3(l.swap_total)),
            r("hl", "virtual_total", memory3(l.mem_total + l.swap_total)),
            r("hl", "m_topology", l.m_topology.clone()),
            r("hl", "m_socket", l.m_socket.to_string()),
            r("hl", "m_core", l.m_core.to_string()),
            r("hl", "m_thread", l.m_thread.to_string()),
            r("hl", "load_avg", f(l.load_medium)),
            r("hl", "load_short", f(l.load_short)),
            r("hl", "load_medium", f(l.load_medium)),
            r("hl", "load_long", f(l.load_long)),
            r("hl", "mem_free", memory3(l.mem_free)),
            r("hl", "swap_free", memory3(l.swap_free)),
            r("hl", "virtual_free", memory3(l.mem_free + l.swap_free)),
            r("hl", "mem_used", memory3(l.mem_used())),
            r("hl", "swap_used", memory3(l.swap_used())),
            r("hl", "virtual_used", memory3(l.mem_used() + l.swap_used())),
            r("hl", "cpu", f(l.cpu)),
            r("hl", "m_topology_inuse", l.m_topology.clone()),
            r("hl", "np_load_avg", f(l.load_medium / n)),
            r("hl", "np_load_short", f(l.load_short / n)),
            r("hl", "np_load_medium", f(l.load_medium / n)),
            r("hl", "np_load_long", f(l.load_long / n)),
        ]);
    }
    let consumable = |name: &str| {
        config
            .complex(name)
            .is_some_and(|c| c.consumable != crate::config::Consumable::No)
    };
    if let Some(h) = host {
        for (k, v) in &h.complex_values {
            out.push(r(if consumable(k) { "hc" } else { "hf" }, k, v.clone()));
        }
    }
    out.push(r("qf", "qname", q.queue.name.clone()));
    out.push(r("qf", "hostname", q.host.clone()));
    out.push(r(
        "qc",
        "slots",
        q.slots_total.saturating_sub(q.slots_used).to_string(),
    ));
    for (k, v) in &q.queue.complex_values {
        out.push(r(if consumable(k) { "qc" } else { "qf" }, k, v.clone()));
    }
    out.push(r("qf", "tmpdir", q.queue.tmpdir.clone()));
    out.push(r("qf", "seq_no", q.queue.seq_no.to_string()));
    out.push(r(
        "qf",
        "rerun",
        format!("{:.6}", if q.queue.rerun { 1.0 } else { 0.0 }),
    ));
    out.push(r(
        "qf",
        "calendar",
        q.queue.calendar.clone().unwrap_or_else(|| "NONE".into()),
    ));
    for limit in LIMITS {
        let v = q
            .queue
            .limits
            .get(limit)
            .cloned()
            .unwrap_or_else(|| "infinity".into());
        out.push(r("qf", limit, v));
    }
    out.push(r("qf", "min_cpu_interval", "00:05:00".into()));
    out
}

/// The resources `-F` asked for: all of them, or those named (by name or shortcut), in SGE's
/// order either way.
pub fn selected<'r>(
    config: &ClusterConfig,
    all: &'r [Resource],
    names: &[String],
) -> Vec<&'r Resource> {
    if names.is_empty() {
        return all.iter().collect();
    }
    all.iter()
        .filter(|res| {
            names.iter().any(|n| {
                *n == res.name
                    || config
                        .complex(n)
                        .is_some_and(|c| c.name == res.name || c.shortcut == res.name)
            })
        })
        .collect()
}

/// Whether a queue instance satisfies every `-l name=value` request: queue attributes
/// (`qname`, `hostname`, free `slots`, the queue's complex values) by their value, host
/// attributes as `qhost -l` compares them.
pub fn satisfies(
    config: &ClusterConfig,
    q: &QueueInstance<'_>,
    host: Option<&HostConfig>,
    load: Option<&HostLoad>,
    requests: &[(String, String)],
) -> bool {
    requests.iter().all(|(name, want)| {
        let canonical = config.complex(name).map(|c| c.name);
        let name = canonical.as_deref().unwrap_or(name);
        match name {
            "qname" | "q" => crate::compat::pattern::matches(want, &q.queue.name),
            "hostname" | "h" => crate::compat::pattern::matches(want, &q.host),
            "slots" | "s" => want
                .parse::<u32>()
                .is_ok_and(|w| w <= q.slots_total.saturating_sub(q.slots_used)),
            limit if LIMITS.contains(&limit) => {
                let have = q.queue.limits.get(limit).map_or("infinity", String::as_str);
                let parse = if limit.ends_with("_rt") || limit.ends_with("_cpu") {
                    crate::launch::parse_time
                } else {
                    crate::launch::parse_memory
                };
                at_most(parse(want), parse(have))
            }
            _ => match q.queue.complex_values.get(name) {
                Some(have) => capacity_at_least(want, have),
                None => host.is_some_and(|h| {
                    crate::compat::host_attributes::satisfies(h, load, name, want)
                }),
            },
        }
    })
}

/// `want <= have` for numbers and memory sizes, equality for text.
fn capacity_at_least(want: &str, have: &str) -> bool {
    use crate::launch::parse_memory;
    let (w, h) = (parse_memory(want), parse_memory(have));
    if w.is_err() || h.is_err() {
        return want == have;
    }
    at_most(w, h)
}

/// `want <= have` of two parsed amounts, `None` being `infinity`; unparsable: no.
fn at_most(want: Result<Option<u64>, String>, have: Result<Option<u64>, String>) -> bool {
    match (want, have) {
        (Ok(_), Ok(None)) => true,
        (Ok(None), Ok(Some(_))) => false,
        (Ok(Some(w)), Ok(Some(h))) => w <= h,
        _ => false,
    }
}
