//! A host's attributes as `-l name=value` requests see them: the same matching for `qhost -l`,
//! `qstat -l` and `qselect -l`, from the host's configuration and its last load report.

use crate::acct::load::HostLoad;
use crate::config::{ClusterConfig, HostConfig};

/// What is known about one host.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStatus {
    pub load: Option<HostLoad>,
    /// Known and reachable: the host's queues are not in state `u`.
    pub known: bool,
}

/// The value of a complex attribute on a host, for `-l`; `None` when the host does not
/// know it.
fn attribute(host: &HostConfig, l: Option<&HostLoad>, name: &str) -> Option<String> {
    match name {
        "arch" | "a" => Some(host.arch.clone()),
        "hostname" | "h" => Some(host.name.clone()),
        _ => {
            if let Some(v) = host.complex_values.get(name) {
                return Some(v.clone());
            }
            let l = l?;
            let v = match name {
                "num_proc" | "p" => f64::from(l.num_proc),
                "m_socket" => f64::from(l.m_socket),
                "m_core" => f64::from(l.m_core),
                "m_thread" => f64::from(l.m_thread),
                "mem_total" | "mt" => l.mem_total,
                "mem_free" | "mf" => l.mem_free,
                "mem_used" | "mu" => l.mem_used(),
                "swap_total" | "st" => l.swap_total,
                "swap_free" | "sf" => l.swap_free,
                "load_avg" | "la" => l.load_medium,
                _ => return None,
            };
            Some(v.to_string())
        }
    }
}

/// SGE's memory and number syntax: `1.5G`, `512M`, `100k` (k/m/g are powers of 1000,
/// K/M/G of 1024).
fn number(text: &str) -> Option<f64> {
    let (digits, mult) = match text.chars().last()? {
        'k' => (&text[..text.len() - 1], 1e3),
        'm' => (&text[..text.len() - 1], 1e6),
        'g' => (&text[..text.len() - 1], 1e9),
        'K' => (&text[..text.len() - 1], 1024.0),
        'M' => (&text[..text.len() - 1], 1024.0 * 1024.0),
        'G' => (&text[..text.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (text, 1.0),
    };
    digits.parse::<f64>().ok().map(|v| v * mult)
}

/// Whether a host satisfies a `-l name=value` request: names compare as text, capacities
/// (memory) must be at least the request, counts must be equal — the relations of SGE's
/// built-in complexes.
pub fn satisfies(host: &HostConfig, l: Option<&HostLoad>, name: &str, want: &str) -> bool {
    let Some(have) = attribute(host, l, name) else {
        return false;
    };
    match name {
        "arch" | "a" => crate::compat::pattern::matches(want, &have),
        "hostname" | "h" => have.eq_ignore_ascii_case(want),
        "num_proc" | "p" | "m_socket" | "m_core" | "m_thread" => {
            number(want).zip(number(&have)).is_some_and(|(w, h)| w == h)
        }
        _ => match (number(want), number(&have)) {
            (Some(w), Some(h)) => w <= h,
            _ => want == have,
        },
    }
}

pub fn known_attribute(config: &ClusterConfig, name: &str) -> bool {
    matches!(
        name,
        "arch"
            | "a"
            | "hostname"
            | "h"
            | "num_proc"
            | "p"
            | "m_socket"
            | "m_core"
            | "m_thread"
            | "mem_total"
            | "mt"
            | "mem_free"
            | "mf"
            | "mem_used"
            | "mu"
            | "swap_total"
            | "st"
            | "swap_free"
            | "sf"
            | "load_avg"
            | "la"
    ) || config.complex(name).is_some()
}
