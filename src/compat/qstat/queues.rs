//! Queue instances as `qstat -f` and `-g c` show them: one per (cluster queue, host), with
//! slots used by running tasks, the host's load and SGE's state letters.

use super::{QstatArgs, View};
use crate::compat::pattern;
use crate::config::{ClusterConfig, QueueConfig};

/// The load of the host `qstat` runs on: gridspool has no execd load reports, so `qstat`
/// reads `/proc/loadavg` for its own host and shows `-NA-` for the others (as SGE does for a
/// host whose execd does not report).
#[derive(Debug, Clone, PartialEq)]
pub struct HostLoad {
    pub host: String,
    /// One-minute load average (`load_avg`).
    pub load_avg: Option<f64>,
    /// Processors, for `np_load_avg` (`-g c`'s CQLOAD).
    pub num_proc: u32,
}

/// Environment variable that replaces the local host's load, `LOAD[,NPROC]` (for example
/// `2.17627,2`). Only the tests set it, to recreate the load of SGE's captures.
pub const LOAD_OVERRIDE_ENV: &str = "GRIDSPOOL_QSTAT_LOADAVG";

impl HostLoad {
    /// The figures of a listing that shows no queue instance, and so no load: reading
    /// them (`/proc/loadavg`, the processors the process may use) would be wasted.
    pub fn not_read(host: &str) -> HostLoad {
        HostLoad {
            host: host.to_string(),
            load_avg: None,
            num_proc: 1,
        }
    }

    /// The local host's load: [`LOAD_OVERRIDE_ENV`] if set, else `/proc/loadavg`.
    pub fn local(host: &str) -> HostLoad {
        let nproc = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        if let Ok(text) = std::env::var(LOAD_OVERRIDE_ENV) {
            let mut parts = text.split(',');
            let load = parts.next().and_then(|l| l.trim().parse().ok());
            let np = parts
                .next()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(nproc);
            return HostLoad {
                host: host.to_string(),
                load_avg: load,
                num_proc: np.max(1),
            };
        }
        // SGE's `load_avg` is the five-minute average (`load_medium`), the second field.
        let load = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| t.split_whitespace().nth(1).and_then(|l| l.parse().ok()));
        HostLoad {
            host: host.to_string(),
            load_avg: load,
            num_proc: nproc.max(1),
        }
    }
}

/// One queue instance (`all.q@vm`).
#[derive(Debug, Clone)]
pub struct QueueInstance<'a> {
    /// The queue's values on this host (its per-host values applied).
    pub queue: std::borrow::Cow<'a, QueueConfig>,
    pub host: String,
    pub name: String,
    pub slots_total: u32,
    pub slots_used: u32,
    pub load_avg: Option<f64>,
    pub num_proc: u32,
    pub arch: String,
    /// The host's state is known: it is the host `qstat` runs on, or `sched_d` reported it
    /// reachable recently.
    pub known: bool,
    /// Disabled: the queue in the configuration, or this instance by `qmod -d`.
    pub disabled: bool,
    /// Suspended by `qmod -sq`.
    pub suspended: bool,
    /// In error state, with why (`-explain E`).
    pub error: Option<&'a str>,
    /// Disabled (`D`) or suspended (`C`) by its queue's calendar.
    pub calendar_disabled: bool,
    pub calendar_suspended: bool,
}

impl QueueInstance<'_> {
    /// SGE's `qtype` letters: B(atch), I(nteractive), P(arallel) when the queue has PEs.
    pub fn qtype(&self) -> String {
        let mut t = String::new();
        let q = self.queue.qtype.to_ascii_uppercase();
        if q.contains("BATCH") {
            t.push('B');
        }
        if q.contains("INTERACTIVE") {
            t.push('I');
        }
        if !self.queue.pe_list.is_empty() {
            t.push('P');
        }
        if t.is_empty() {
            t.push_str("NONE");
        }
        t
    }

    /// State letters in SGE's order (`a A C D d u E S s c o`): `a` and `u` (SGE's load alarm
    /// and unknown) when nothing recent is known of the host — no fresh report from
    /// `sched_d`, or the host did not answer — as SGE marks the queues of an execd that
    /// stopped reporting; `C` and `D` suspended and disabled by the queue's calendar; `d`
    /// disabled, `E` in error, `s` suspended. gridspool has no suspend-threshold,
    /// subordinate or configuration states for queues.
    pub fn states(&self) -> String {
        let mut out = String::new();
        for (on, letter) in [
            (!self.known, 'a'),
            (self.calendar_suspended, 'C'),
            (self.calendar_disabled, 'D'),
            (self.disabled, 'd'),
            (!self.known, 'u'),
            (self.error.is_some(), 'E'),
            (self.suspended, 's'),
        ] {
            if on {
                out.push(letter);
            }
        }
        out
    }

    /// It takes no new work (`qstat -g c` counts it apart from the available slots).
    pub fn closed(&self) -> bool {
        self.disabled
            || self.suspended
            || self.error.is_some()
            || self.calendar_disabled
            || self.calendar_suspended
    }

    /// `np_load_avg`: the load divided by the processors.
    pub fn np_load(&self) -> Option<f64> {
        self.load_avg.map(|l| l / f64::from(self.num_proc.max(1)))
    }
}

/// Whether a queue instance matches one `wc_queue` of `-q` (`all.q`, `all.q@host`,
/// `*@host`, `all.q@@group`).
pub(crate) fn matches_wc_queue(config: &ClusterConfig, wc: &str, queue: &str, host: &str) -> bool {
    let (qpat, hpat) = match wc.split_once('@') {
        Some((q, h)) => (q, Some(h)),
        None => (wc, None),
    };
    let qpat = if qpat.is_empty() { "*" } else { qpat };
    if !pattern::matches(qpat, queue) {
        return false;
    }
    match hpat {
        None => true,
        // Through subgroups, as SGE resolves a group.
        Some(h) if h.starts_with('@') => config
            .hostgroups
            .keys()
            .filter(|g| pattern::matches(h, g))
            .any(|g| config.host_group_hosts(g).iter().any(|m| m == host)),
        Some(h) => pattern::matches(h, host),
    }
}

/// The queue instances `-q`, `-pe` and `-qs` select, sorted by name, with their slots used.
pub fn instances<'a>(args: &QstatArgs, view: &View<'a>) -> Vec<QueueInstance<'a>> {
    let config: &'a ClusterConfig = view.config;
    let mut out = Vec::new();
    for q in &config.queues {
        for h in config.queue_hosts(q) {
            if let Some(wcs) = &args.queues
                && !wcs
                    .iter()
                    .any(|w| matches_wc_queue(config, w, &q.name, &h.name))
            {
                continue;
            }
            let local = view.load.host == h.name;
            let report = view.host_loads.get(&h.name);
            let reported = report.and_then(|r| r.load.as_ref());
            let name = format!("{}@{}", q.name, h.name);
            let q: std::borrow::Cow<'a, QueueConfig> = if q.per_host.is_empty() {
                std::borrow::Cow::Borrowed(q)
            } else {
                std::borrow::Cow::Owned(config.queue_instance(q, &h.name))
            };
            // `-pe`: the instance's own pe_list (its per-host values).
            if let Some(pes) = &args.pes
                && !q
                    .pe_list
                    .iter()
                    .any(|p| pes.iter().any(|w| pattern::matches(w, p)))
            {
                continue;
            }
            let inst = QueueInstance {
                host: h.name.clone(),
                slots_total: q.slots,
                slots_used: 0,
                load_avg: if local {
                    view.load.load_avg
                } else {
                    reported.map(|l| l.load_medium)
                },
                num_proc: if local {
                    view.load.num_proc
                } else {
                    reported
                        .map_or_else(|| config.host_slots(h), |l| l.num_proc)
                        .max(1)
                },
                arch: h.arch.clone(),
                known: local || report.is_some_and(|r| r.known),
                disabled: view.instance_states.is_disabled(&name, q.disabled),
                suspended: view.instance_states.suspended.contains(&name),
                error: view.instance_states.errors.get(&name).map(String::as_str),
                calendar_disabled: view.instance_states.calendar_disabled.contains(&name),
                calendar_suspended: view.instance_states.calendar_suspended.contains(&name),
                name,
                queue: q,
            };
            if let Some(states) = &args.queue_states
                && !states.chars().any(|c| inst.states().contains(c))
            {
                continue;
            }
            out.push(inst);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    count_used_slots(&mut out, view);
    if !args.resource_requests.is_empty() {
        out.retain(|i| {
            super::resources::satisfies(
                config,
                i,
                config.host(&i.host),
                host_load(view, &i.host),
                &args.resource_requests,
            )
        });
    }
    out
}

/// A host's measured or reported load values (`-F`, `-l`), if known.
pub fn host_load<'a>(view: &View<'a>, host: &str) -> Option<&'a crate::acct::load::HostLoad> {
    view.host_loads.get(host).and_then(|s| s.load.as_ref())
}

/// Adds the slots of every running task to the instance it runs in (one map lookup per
/// task: 1,000 hosts and 100,000 running tasks stay linear).
fn count_used_slots(out: &mut [QueueInstance<'_>], view: &View<'_>) {
    let index: std::collections::HashMap<(String, String), usize> = out
        .iter()
        .enumerate()
        .map(|(k, i)| ((i.queue.name.clone(), i.host.clone()), k))
        .collect();
    let mut add = |queue: &str, host: &str, slots: u32| {
        if let Some(&k) = index.get(&(queue.to_string(), host.to_string())) {
            out[k].slots_used += slots;
        }
    };
    for job in view.jobs {
        for t in &job.tasks.running {
            if t.granted.is_empty() {
                add(&t.queue, &t.host, t.slots);
            } else {
                for (host, queue, slots) in &t.granted {
                    add(queue, host, *slots);
                }
            }
        }
    }
}

/// Whether `-q`/`-pe`/`-qs`/`-l` restrict the queues (then only jobs running in selected
/// instances are listed).
pub fn queue_selection_active(args: &QstatArgs) -> bool {
    args.queues.is_some()
        || args.pes.is_some()
        || args.queue_states.is_some()
        || !args.resource_requests.is_empty()
}
