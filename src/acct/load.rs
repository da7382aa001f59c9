//! Host load reports: what `qhost` shows about each execution host.
//!
//! SGE's execution daemons send load reports (`load_avg`, memory, topology…) to qmaster every
//! `load_report_time`; `qhost` asks qmaster. gridspool has neither, so:
//!
//! - for the host `qhost` runs on, the values are measured directly from `/proc`
//!   ([`HostLoad::measure`]; the directory is injectable so tests compare exactly);
//! - for remote hosts, `sched_d` writes what it learns (from the shepherd or an ssh probe) into
//!   the spool as `daemon/hosts/<name>.json` ([`HostReport`], written whole with the spool's
//!   durable publish), including whether the host is currently unreachable;
//! - a host without a report, or whose report is older than [`MAX_UNHEARD_SECS`], shows `-`
//!   and SGE's `u` (unknown) state, as SGE does after `max_unheard`.
//!
//! The file format (schema version 1, unknown fields ignored):
//!
//! ```json
//! {"v":1,"host":"node1","time":1795301101,"reachable":true,
//!  "load":{"arch":"lx-amd64","num_proc":8,"m_socket":1,"m_core":4,"m_thread":8,
//!          "load_short":0.5,"load_medium":0.4,"load_long":0.3,
//!          "mem_total":16777216000,"mem_free":8000000000,"swap_total":0,"swap_free":0,
//!          "cpu":12.5,"m_topology":"SCTTCTTCTTCTT"}}
//! ```

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// SGE's default `max_unheard` (5 minutes): a report older than this means "unknown".
pub const MAX_UNHEARD_SECS: i64 = 300;

/// Schema version of [`HostReport`].
pub const HOST_REPORT_VERSION: u32 = 1;

/// The load values of one host, in SGE's units (bytes for memory; load averages as the
/// kernel reports them; `cpu` in percent busy).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostLoad {
    pub arch: String,
    pub num_proc: u32,
    pub m_socket: u32,
    pub m_core: u32,
    pub m_thread: u32,
    pub load_short: f64,
    pub load_medium: f64,
    pub load_long: f64,
    pub mem_total: f64,
    pub mem_free: f64,
    pub swap_total: f64,
    pub swap_free: f64,
    pub cpu: f64,
    /// SGE's topology string: `S` per socket, `C` per core, `T` per hardware thread when a
    /// core has more than one (`SCC`, `SCTTCTT`).
    pub m_topology: String,
}

/// The texts of `/proc/loadavg`, `/proc/meminfo`, `/proc/cpuinfo` and `/proc/stat` (empty
/// when unavailable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcTexts {
    pub loadavg: String,
    pub meminfo: String,
    pub cpuinfo: String,
    pub stat: String,
}

/// What `sched_d` publishes about a remote host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    pub v: u32,
    pub host: String,
    /// When the values were measured (seconds since the epoch).
    pub time: i64,
    /// `false` when the scheduler could not reach the host (its tasks were requeued); `qhost`
    /// shows the host's queues in state `au`.
    #[serde(default = "yes")]
    pub reachable: bool,
    #[serde(default)]
    pub load: Option<HostLoad>,
    /// The usage of the tasks running on the host, as their shepherds last sampled it
    /// (`qstat -ext`, `qstat -j`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<crate::model::UsageReport>,
}

fn yes() -> bool {
    true
}

/// Why `/proc` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: unexpected content")]
    Parse { path: PathBuf },
}

fn read(path: &Path) -> Result<String, LoadError> {
    // `/proc` files of this host; not the spool.
    std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })
}

impl HostLoad {
    /// The load of this host from a `/proc`-like directory holding `loadavg`, `meminfo`,
    /// `cpuinfo` and (optionally) `stat`.
    pub fn measure(proc_dir: &Path, arch: &str) -> Result<Self, LoadError> {
        let loadavg_path = proc_dir.join("loadavg");
        let texts = ProcTexts {
            loadavg: read(&loadavg_path)?,
            meminfo: read(&proc_dir.join("meminfo"))?,
            cpuinfo: read(&proc_dir.join("cpuinfo"))?,
            stat: std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default(),
        };
        Self::from_texts(&texts, arch).ok_or(LoadError::Parse { path: loadavg_path })
    }

    /// The load from the texts of the four `/proc` files, however they were fetched (the
    /// launcher can `cat` them over its ssh connection to a remote host). `None` when
    /// `loadavg` does not start with three numbers.
    pub fn from_texts(t: &ProcTexts, arch: &str) -> Option<Self> {
        let mut fields = t.loadavg.split_whitespace().map(str::parse::<f64>);
        let mut next = || fields.next().and_then(Result::ok);
        let (load_short, load_medium, load_long) = (next()?, next()?, next()?);
        let kb = |key: &str| -> f64 {
            t.meminfo
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .map_or(0.0, |v| v * 1024.0)
        };
        let mem_total = kb("MemTotal");
        // SGE's Linux load sensor counts free memory plus buffers and page cache as free
        // (not the kernel's newer MemAvailable estimate).
        let mem_free = kb("MemFree") + kb("Buffers") + kb("Cached");
        let (swap_total, swap_free) = (kb("SwapTotal"), kb("SwapFree"));
        let topo = Topology::from_cpuinfo(&t.cpuinfo);
        let cpu = cpu_busy_percent(&t.stat).unwrap_or(0.0);
        Some(HostLoad {
            arch: arch.to_string(),
            num_proc: topo.threads,
            m_socket: topo.sockets,
            m_core: topo.cores,
            m_thread: topo.threads,
            load_short,
            load_medium,
            load_long,
            mem_total,
            mem_free,
            swap_total,
            swap_free,
            cpu,
            m_topology: topo.string,
        })
    }

    pub fn mem_used(&self) -> f64 {
        (self.mem_total - self.mem_free).max(0.0)
    }

    pub fn swap_used(&self) -> f64 {
        (self.swap_total - self.swap_free).max(0.0)
    }
}

/// Sockets, cores and threads as SGE's `m_socket`, `m_core`, `m_thread`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    pub string: String,
}

impl Topology {
    /// From `/proc/cpuinfo`: processors are threads, distinct `physical id`s are sockets and
    /// distinct (`physical id`, `core id`) pairs are cores. Virtual machines and some
    /// architectures omit those keys: then there is one socket and a core per processor.
    pub fn from_cpuinfo(text: &str) -> Self {
        use std::collections::BTreeMap;
        let mut cores: BTreeMap<(u32, u32), u32> = BTreeMap::new();
        let mut threads = 0u32;
        let mut complete = true;
        for block in text.split("\n\n").filter(|b| b.contains("processor")) {
            threads += 1;
            let get = |key: &str| {
                block.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim() == key).then(|| v.trim().parse::<u32>().ok())?
                })
            };
            match (get("physical id"), get("core id")) {
                (Some(s), Some(c)) => *cores.entry((s, c)).or_default() += 1,
                _ => complete = false,
            }
        }
        let threads = threads.max(1);
        if !complete || cores.is_empty() {
            return Topology {
                sockets: 1,
                cores: threads,
                threads,
                string: format!("S{}", "C".repeat(threads as usize)),
            };
        }
        let mut string = String::new();
        let mut last_socket = None;
        for ((socket, _), n) in &cores {
            if last_socket != Some(*socket) {
                string.push('S');
                last_socket = Some(*socket);
            }
            string.push('C');
            if *n > 1 {
                string.push_str(&"T".repeat(*n as usize));
            }
        }
        let sockets = cores
            .keys()
            .map(|(s, _)| *s)
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u32;
        Topology {
            sockets,
            cores: cores.len() as u32,
            threads,
            string,
        }
    }
}

/// Percent of CPU time not idle since boot, from `/proc/stat`'s `cpu` line. (SGE averages
/// over its load report interval; a one-shot client has only the since-boot counters.)
pub fn cpu_busy_percent(stat: &str) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: f64 = v.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let idle = v.get(3).copied().unwrap_or(0.0) + v.get(4).copied().unwrap_or(0.0);
    Some(100.0 * (total - idle) / total)
}

/// The report file of `host` in the spool's daemon directory.
pub fn report_path(daemon_dir: &Path, host: &str) -> PathBuf {
    daemon_dir.join("hosts").join(format!("{host}.json"))
}

/// Reads a host's report; `None` when there is none or it cannot be read (a report is a
/// hint: a broken one shows the host as unknown rather than failing `qhost`).
pub fn read_report(daemon_dir: &Path, host: &str) -> Option<HostReport> {
    let text = crate::file::open::read_to_string(&report_path(daemon_dir, host)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Publishes a host's report whole (temp file, sync, rename, directory sync).
pub fn write_report(
    daemon_dir: &Path,
    report: &HostReport,
) -> Result<(), crate::spool::SpoolError> {
    let dir = daemon_dir.join("hosts");
    std::fs::create_dir_all(&dir).map_err(|e| crate::spool::SpoolError::io("mkdir", &dir, e))?;
    let text = serde_json::to_vec(report)
        .map_err(|e| crate::spool::SpoolError::io("serialize", &dir, std::io::Error::other(e)))?;
    crate::file::durable::write_replace(&dir, &format!("{}.json", report.host), &text, 0o644)
        .map_err(crate::spool::SpoolError::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topology_from_cpuinfo() {
        let two_cores = "processor\t: 0\nphysical id\t: 0\ncore id\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t: 1\n";
        let t = Topology::from_cpuinfo(two_cores);
        assert_eq!((t.sockets, t.cores, t.threads), (1, 2, 2));
        assert_eq!(t.string, "SCC");
        let smt = "processor : 0\nphysical id : 0\ncore id : 0\n\nprocessor : 1\nphysical id : 0\ncore id : 0\n";
        assert_eq!(Topology::from_cpuinfo(smt).string, "SCTT");
        let vm = "processor : 0\n\nprocessor : 1\n\nprocessor : 2\n";
        let t = Topology::from_cpuinfo(vm);
        assert_eq!((t.sockets, t.cores, t.threads), (1, 3, 3));
    }

    #[test]
    fn reports_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = HostReport {
            v: HOST_REPORT_VERSION,
            host: "node1".into(),
            time: 5,
            reachable: false,
            load: None,
            tasks: vec![crate::model::UsageReport {
                job: crate::model::JobId(3),
                task: 1,
                time: 4,
                usage: crate::model::TaskUsage {
                    cpu: 2.5,
                    ..Default::default()
                },
            }],
        };
        write_report(dir.path(), &r).expect("write");
        assert_eq!(read_report(dir.path(), "node1"), Some(r));
        assert_eq!(read_report(dir.path(), "node2"), None);
    }

    #[test]
    fn cpu_percent() {
        assert_eq!(
            cpu_busy_percent("cpu  10 0 10 70 10 0 0 0 0 0\ncpu0 1\n"),
            Some(20.0)
        );
    }
}
