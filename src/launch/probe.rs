//! Host load reports: what `qhost` and `qstat -F` show about hosts other than their own.
//!
//! SGE's execution daemons report their load to qmaster every `load_report_time` (40 s).
//! gridspool has no execution daemon, so `sched_d` runs this probe: every interval it reads
//! each configured host's `/proc/loadavg`, `meminfo`, `cpuinfo` and `stat` — locally, or as a
//! request over the launcher's session with the host (for a host with an older shepherd, one
//! `cat` over its ssh master connection) — and
//! publishes the values as `daemon/hosts/<name>.json` ([`crate::acct::load::HostReport`]).
//! Whether a host is reachable is not the probe's to say: a host is unknown (`au` in `qhost`
//! and `qstat -f`) when nothing was heard from it for `max_unheard` ([`HostLiveness`]). A
//! probe that fails leaves the last report as it is; the launcher publishes the host as
//! unreachable when it goes unknown, and asks for a round at once when it returns.
//! The same round collects the online usage that the shepherds of the host's running tasks
//! leave in their task directories (`launch::usage`), as SGE's execd sends it with its load.
//!
//! The probe re-reads the configuration each round, so hosts added with a SIGHUP reload are
//! probed without a restart. It runs in its own thread and never blocks scheduling.

use super::liveness::HostLiveness;
use super::ssh::SshTarget;
use super::taskdir::{active_jobs, exec_spool_dir};
use super::usage;
use crate::acct::load::{self, HOST_REPORT_VERSION, HostLoad, HostReport, ProcTexts};
use crate::config::ClusterConfig;
use crate::model::UsageReport;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::{debug, warn};

/// SGE's default `load_report_time`.
pub const LOAD_REPORT_INTERVAL: Duration = Duration::from_secs(40);

/// Separates the four files in the output of the remote `cat`.
const SEPARATOR: &str = "--gridspool-probe--";

/// The probe thread; stopped (and joined) when dropped.
#[derive(Debug)]
pub struct HostProbe {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HostProbe {
    /// Starts probing the hosts of the cell at `spool_root` (its configuration at
    /// `config_path`) every `load_report_time`, publishing into `daemon_dir/hosts/`; ssh hosts
    /// use the control sockets in `control_dir`.
    pub fn start(
        spool_root: PathBuf,
        config_path: PathBuf,
        daemon_dir: PathBuf,
        control_dir: PathBuf,
        liveness: Arc<HostLiveness>,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("host-probe".into())
            .spawn(move || {
                // The hosts of a partial round: those whose session was just opened.
                let mut only: Option<HashSet<String>> = None;
                let mut round = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    if only.is_none() {
                        round = Instant::now();
                    }
                    let interval = match ClusterConfig::load(&config_path) {
                        Ok(config) => {
                            probe_all(
                                &config,
                                &spool_root,
                                &daemon_dir,
                                &control_dir,
                                &liveness,
                                only.as_ref(),
                            );
                            config.load_report_interval()
                        }
                        Err(e) => {
                            warn!("host probe: {e}");
                            LOAD_REPORT_INTERVAL
                        }
                    };
                    only = None;
                    // Sleep in short steps so that a stop is quick.
                    while !flag.load(Ordering::Relaxed) && round.elapsed() < interval {
                        if liveness.take_probe_request() {
                            break;
                        }
                        if let Some(hosts) = liveness.take_probe_hosts() {
                            only = Some(hosts);
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })?;
        Ok(HostProbe {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for HostProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Probes the hosts of the cell, or with `only` those among them.
fn probe_all(
    config: &ClusterConfig,
    spool_root: &Path,
    daemon_dir: &Path,
    control_dir: &Path,
    liveness: &HostLiveness,
    only: Option<&HashSet<String>>,
) {
    for host in config.exec_hosts() {
        if only.is_some_and(|hosts| !hosts.contains(&host.name)) {
            continue;
        }
        // An unknown host is published as such already; asking it would only make the round
        // wait for its ssh timeouts. It is probed again once it is heard from.
        if liveness.is_unknown(&host.name) {
            continue;
        }
        let now = crate::time::now();
        let exec_spool = exec_spool_dir(spool_root, &host.name);
        let load = match SshTarget::from_config(&host.name, &host.launch, control_dir) {
            None => HostLoad::measure(Path::new("/proc"), &host.arch)
                .map(|load| (load, usage::collect(&exec_spool)))
                .map_err(|e| e.to_string()),
            Some(target) => remote_load(&target, &host.arch, &exec_spool, liveness),
        };
        let report = match load {
            Ok((load, tasks)) => HostReport {
                v: HOST_REPORT_VERSION,
                host: host.name.clone(),
                time: now,
                reachable: !liveness.is_unknown(&host.name),
                load: Some(load),
                tasks,
            },
            Err(why) => {
                debug!(host = %host.name, "host probe: {why}");
                if !liveness.is_unknown(&host.name) {
                    continue;
                }
                HostReport {
                    v: HOST_REPORT_VERSION,
                    host: host.name.clone(),
                    time: now,
                    reachable: false,
                    load: None,
                    tasks: Vec::new(),
                }
            }
        };
        if let Err(e) = load::write_report(daemon_dir, &report) {
            warn!(host = %host.name, "cannot publish the host report: {e}");
        }
    }
}

/// What [`remote_load`] reads on a host, read here: the four `/proc` files, each followed by
/// the separator line, then each running task's usage file and a newline. What a start
/// server's session answers a probe with (`shepherd::SessionOp::Probe`).
pub(crate) fn local_text(exec_spool: &Path) -> String {
    let mut text = String::new();
    for f in ["loadavg", "meminfo", "cpuinfo", "stat"] {
        if let Ok(t) = std::fs::read_to_string(Path::new("/proc").join(f)) {
            text.push_str(&t);
        }
        text.push_str(SEPARATOR);
        text.push('\n');
    }
    for (_, _, dir) in super::shepherd::task_dirs(exec_spool) {
        if let Ok(t) = std::fs::read_to_string(dir.path.join(usage::USAGE_FILE)) {
            text.push_str(&t);
            text.push('\n');
        }
    }
    text
}

/// The load and usage of an ssh host: asked over the launcher's session with the host
/// ([`HostLiveness::probe_text`]), or, for a host whose shepherd has no session (an older
/// one), with one command over its master connection.
fn remote_load(
    target: &SshTarget,
    arch: &str,
    exec_spool: &Path,
    liveness: &HostLiveness,
) -> Result<(HostLoad, Vec<UsageReport>), String> {
    if let Some(text) = liveness.probe_text(&target.host) {
        return parse_load(&text?, arch);
    }
    target.ensure_master().map_err(|e| e.to_string())?;
    let usage_files = active_jobs(exec_spool).join("*").join(usage::USAGE_FILE);
    let script = format!(
        "for f in loadavg meminfo cpuinfo stat; do cat /proc/$f; echo {SEPARATOR}; done; \
         for u in {}; do [ -f \"$u\" ] && cat \"$u\" && echo; done; true",
        shell_quote_glob(&usage_files)
    );
    let out = target
        .run(&["sh".into(), "-c".into(), script], b"")
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "reading /proc failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_load(&String::from_utf8_lossy(&out.stdout), arch)
}

fn parse_load(text: &str, arch: &str) -> Result<(HostLoad, Vec<UsageReport>), String> {
    let (texts, usage_lines) = split_proc_texts(text);
    let load =
        HostLoad::from_texts(&texts, arch).ok_or_else(|| "unexpected /proc/loadavg".to_string())?;
    Ok((load, usage::parse_lines(usage_lines)))
}

/// `path` quoted for `sh`, but for its `*`, which the remote shell expands.
fn shell_quote_glob(path: &Path) -> String {
    path.to_string_lossy()
        .split('*')
        .map(|part| format!("'{}'", part.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join("*")
}

/// The four `/proc` files, and what follows them (the usage files).
fn split_proc_texts(text: &str) -> (ProcTexts, &str) {
    let separator = format!("{SEPARATOR}\n");
    let mut parts = text.splitn(5, separator.as_str());
    let mut next = || parts.next().unwrap_or_default().to_string();
    let texts = ProcTexts {
        loadavg: next(),
        meminfo: next(),
        cpuinfo: next(),
        stat: next(),
    };
    (texts, parts.next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_output_splits_into_the_four_files_and_the_usage_lines() {
        let text = format!(
            "0.5 0.4 0.3 1/2 3\n{SEPARATOR}\nMemTotal: 1 kB\n{SEPARATOR}\nprocessor : 0\n{SEPARATOR}\ncpu 1 2\n{SEPARATOR}\n{{\"usage\"}}\n"
        );
        let (t, rest) = split_proc_texts(&text);
        assert_eq!(rest, "{\"usage\"}\n");
        assert_eq!(t.loadavg, "0.5 0.4 0.3 1/2 3\n");
        assert_eq!(t.meminfo, "MemTotal: 1 kB\n");
        assert_eq!(t.cpuinfo, "processor : 0\n");
        assert_eq!(t.stat, "cpu 1 2\n");
    }
}
