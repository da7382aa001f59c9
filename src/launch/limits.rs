//! Resource limits of `queue_conf(5)` (`RESOURCE LIMITS`) and `qsub -l`: what the shepherd
//! enforces, and how SGE's time and memory values read.
//!
//! The effective limit is the smaller of the queue's and the job's request, as in SGE. `h_rt`
//! and `s_rt` are enforced by the shepherd's clock (SIGKILL resp. SIGUSR1); the others become
//! `setrlimit(2)` limits of the job (`s_*` the soft, `h_*` the hard limit): `*_vmem` →
//! `RLIMIT_AS`, `*_cpu` → `RLIMIT_CPU`, `*_rss` → `RLIMIT_RSS`, `*_fsize` → `RLIMIT_FSIZE`,
//! `*_data` → `RLIMIT_DATA`, `*_stack` → `RLIMIT_STACK`, `*_core` → `RLIMIT_CORE`. Memory limits
//! are per slot, as SGE applies them: a job with `n` slots on the host gets `n` times the value.

use serde::{Deserialize, Serialize};

/// A `setrlimit(2)` resource that an SGE limit maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RLimit {
    /// Address space (`*_vmem`).
    As,
    Cpu,
    Rss,
    Fsize,
    Data,
    Stack,
    Core,
}

impl RLimit {
    /// The SGE name stem (`vmem` for `h_vmem`) and whether the value is a memory size.
    const ALL: [(RLimit, &'static str, bool); 7] = [
        (RLimit::As, "vmem", true),
        (RLimit::Cpu, "cpu", false),
        (RLimit::Rss, "rss", true),
        (RLimit::Fsize, "fsize", true),
        (RLimit::Data, "data", true),
        (RLimit::Stack, "stack", true),
        (RLimit::Core, "core", true),
    ];
}

/// One rlimit: `None` leaves that side unlimited (`INFINITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RLimitValue {
    pub resource: RLimit,
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// The limits one task runs under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// `h_rt`, seconds of wallclock: SIGKILL at the limit (`failed 37`, exit 137 in SGE 8.1.9).
    pub h_rt: Option<u64>,
    /// `s_rt`, seconds: SIGUSR1 at the limit.
    pub s_rt: Option<u64>,
    pub rlimits: Vec<RLimitValue>,
    /// The task's memory as a whole, in bytes: the smallest of `h_vmem`, `h_rss` and a
    /// `mem_free` request, times the slots. Enforced where the task has a cgroup
    /// (`launch::cgroup`); the rlimits hold either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_max: Option<u64>,
    /// The task's slots on its host (a cgroup's CPU quota).
    pub slots: u32,
}

/// Seconds from SGE's time format ([`crate::time::parse_time`]: `INFINITY`, `[[h:]m:]s` with
/// empty fields as 0, or a number of seconds), as a limit: `None` for INFINITY; `Err` for
/// anything else.
pub fn parse_time(text: &str) -> Result<Option<u64>, String> {
    match crate::time::parse_time(text.trim()) {
        Some(i64::MAX) => Ok(None),
        Some(seconds) => u64::try_from(seconds).map(Some).map_err(|_| bad_time(text)),
        None => Err(bad_time(text)),
    }
}

fn bad_time(text: &str) -> String {
    format!("invalid time value {text:?}")
}

/// Bytes from SGE's memory format (`sge_types(1)`): a number with an optional multiplier
/// `k`/`m`/`g`/`t` (powers of 1000) or `K`/`M`/`G`/`T` (powers of 1024); `INFINITY` → `None`.
pub fn parse_memory(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("infinity") {
        return Ok(None);
    }
    let bad = || format!("invalid memory value {text:?}");
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        Some('K') => (&t[..t.len() - 1], 1024.0),
        Some('M') => (&t[..t.len() - 1], 1024.0 * 1024.0),
        Some('G') => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        Some('T') => (&t[..t.len() - 1], 1024.0f64.powi(4)),
        Some(_) => (t, 1.0),
        None => return Err(bad()),
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    if !n.is_finite() || n < 0.0 {
        return Err(bad());
    }
    Ok(Some((n * mult) as u64))
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Limits {
    /// The limits of a task: for each SGE limit name, the smaller of the queue's value
    /// (`queue_limits`, queue_conf(5) names) and the job's hard request (`job_requests`).
    /// `slots` multiplies the memory limits. Unparsable values are an error naming the limit.
    pub fn from_requests<'a>(
        queue_limits: impl IntoIterator<Item = (&'a str, &'a str)>,
        job_requests: impl IntoIterator<Item = (&'a str, &'a str)>,
        slots: u32,
    ) -> Result<Limits, String> {
        let mut values: std::collections::BTreeMap<String, Option<u64>> = Default::default();
        let mut add = |name: &str, value: &str| -> Result<(), String> {
            let Some(kind) = limit_kind(name) else {
                return Ok(());
            };
            let parsed = match kind {
                LimitKind::Time => parse_time(value),
                LimitKind::Memory => parse_memory(value),
            }
            .map_err(|e| format!("{name}: {e}"))?;
            let entry = values.entry(name.to_string()).or_insert(parsed);
            *entry = min_opt(*entry, parsed);
            Ok(())
        };
        for (n, v) in queue_limits {
            add(n, v)?;
        }
        for (n, v) in job_requests {
            add(n, v)?;
        }
        let get = |n: &str| values.get(n).copied().flatten();
        let slots = slots.max(1);
        let memory_max = ["h_vmem", "h_rss", "mem_free"]
            .into_iter()
            .fold(None, |m, n| min_opt(m, get(n)))
            .map(|b| b.saturating_mul(u64::from(slots)));
        let mut limits = Limits {
            h_rt: get("h_rt"),
            s_rt: get("s_rt"),
            rlimits: Vec::new(),
            memory_max,
            slots,
        };
        for (resource, stem, memory) in RLimit::ALL {
            let scale = |v: Option<u64>| {
                v.map(|b| {
                    if memory {
                        b.saturating_mul(u64::from(slots))
                    } else {
                        b
                    }
                })
            };
            let soft = scale(get(&format!("s_{stem}")));
            let hard = scale(get(&format!("h_{stem}")));
            if soft.is_none() && hard.is_none() {
                continue;
            }
            // A soft limit above the hard one is clamped, as setrlimit requires.
            let soft = min_opt(soft, hard);
            limits.rlimits.push(RLimitValue {
                resource,
                soft,
                hard,
            });
        }
        Ok(limits)
    }
}

enum LimitKind {
    Time,
    Memory,
}

fn limit_kind(name: &str) -> Option<LimitKind> {
    match name {
        "h_rt" | "s_rt" | "h_cpu" | "s_cpu" => Some(LimitKind::Time),
        "h_vmem" | "s_vmem" | "h_rss" | "s_rss" | "h_fsize" | "s_fsize" | "h_data" | "s_data"
        | "h_stack" | "s_stack" | "h_core" | "s_core" | "mem_free" => Some(LimitKind::Memory),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_memory_read_like_sge() {
        assert_eq!(parse_time("0:0:3"), Ok(Some(3)));
        assert_eq!(parse_time("1:00:00"), Ok(Some(3600)));
        assert_eq!(parse_time("::5"), Ok(Some(5)));
        assert_eq!(parse_time("90"), Ok(Some(90)));
        assert_eq!(parse_time("INFINITY"), Ok(None));
        assert!(parse_time("1:2:3:4").is_err());
        assert_eq!(parse_memory("1G"), Ok(Some(1 << 30)));
        assert_eq!(parse_memory("1g"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_memory("512M"), Ok(Some(512 << 20)));
        assert_eq!(parse_memory("100"), Ok(Some(100)));
        assert!(parse_memory("lots").is_err());
    }

    #[test]
    fn the_smaller_of_queue_and_job_wins_and_memory_scales_with_slots() {
        let l = Limits::from_requests(
            [("h_rt", "1:00:00"), ("h_vmem", "4G")],
            [
                ("h_rt", "0:0:10"),
                ("h_vmem", "1G"),
                ("s_cpu", "60"),
                ("arch", "x"),
            ],
            2,
        )
        .expect("limits");
        assert_eq!(l.h_rt, Some(10));
        assert_eq!(l.s_rt, None);
        assert_eq!((l.memory_max, l.slots), (Some(2 << 30), 2));
        assert!(l.rlimits.contains(&RLimitValue {
            resource: RLimit::As,
            soft: Some(2 << 30),
            hard: Some(2 << 30)
        }));
        assert!(l.rlimits.contains(&RLimitValue {
            resource: RLimit::Cpu,
            soft: Some(60),
            hard: None
        }));
    }
}
