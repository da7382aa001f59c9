//! Throughput over a cluster of namespace hosts (issue 13): 2,000 `-b y true` jobs through ssh
//! to 16 and to 64 execution hosts, each its own network and UTS namespace with its own sshd
//! (the test harness's `tests/support/cluster.rs`, shared, not copied). As `bench/throughput.sh`
//! does for the local host, the jobs are submitted held with the real `qsub` and timed from one
//! `qrls -u '*'` to the last accounting record; every job must be accounted once with exit 0.
//!
//! Also printed, for the limits of one `sched_d` over many hosts: its peak resident memory,
//! its own CPU per job and the whole machine's (every sshd, shepherd and job included), and,
//! while the jobs run, its file descriptors and the processes below it (the ssh processes
//! among them, and their proportional resident memory together). Then the re-attach of a
//! restarted master (issue 27): with a task running on every host but the last, `sched_d` is
//! killed with SIGKILL and a new one started; printed are the time until every host's session
//! is up (the shepherd it runs there for the new master has started) and until a job bound to the last host has
//! run and been accounted, the new `sched_d`'s CPU meanwhile, and its ssh processes then.
//! Needs root; prints why not otherwise.
//!
//!     cargo bench --bench cluster_throughput                  # 16 and 64 hosts, 2,000 jobs
//!     CLUSTER_HOSTS=8,32 CLUSTER_JOBS=500 cargo bench --bench cluster_throughput
//!     CLUSTER_HOSTS=256 GRIDSPOOL_SSH_CONNECTS=8 cargo bench --bench cluster_throughput
//!     CLUSTER_SCHED_D=/path/to/sched_d ...   # another build's sched_d (and its shepherd)
//!     CLUSTER_SSH_OPTIONS="-o KexAlgorithms=curve25519-sha256" ...   # more ssh options
//!     CLUSTER_SSH_CLIENTS=builtin ...   # only the builtin client (default: builtin,openssh,
//!                                       # alternated at each number of hosts)
//!
//! The master's memory for the connections: `sched_d`'s resident and proportional memory
//! once it has read the cell, and again once every host has its session (after the warm-up),
//! plus its ssh processes' proportional memory: the growth per host.
//!
//! Prints figures; asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cluster::Cluster;

/// Clock ticks of the machine's non-idle CPU time since boot (`/proc/stat`).
fn busy_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    f.iter().take(8).sum::<u64>() - f.get(3).copied().unwrap_or(0) - f.get(4).copied().unwrap_or(0)
}

/// A process's own CPU ticks (user + system) from `/proc/PID/stat`.
fn own_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after.split_whitespace().collect();
    // fields 14 and 15 of stat(5), counted from the state (field 3) at index 0
    f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
}

fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A process's proportional share of resident memory (shared pages divided among their
/// users), kB: summed over many ssh processes it does not count their libraries many times.
fn pss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Processes below `pid` (children, grandchildren…): their names and proportional kB.
fn descendants(pid: u32) -> Vec<(String, u64)> {
    support::descendants_of(pid)
        .into_iter()
        .map(|p| {
            let name = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            (name.trim().to_string(), pss_kb(p))
        })
        .collect()
}

/// The ssh processes of the cell anywhere on the machine, below `sched_d` or detached (an
/// older `sched_d`'s ControlMasters): those whose command line names the cell's directory or
/// a control directory of gridspool's. Their number and proportional kB together.
fn cell_ssh(cell: &std::path::Path) -> (usize, u64) {
    let cell = cell.to_string_lossy();
    let mut n = 0;
    let mut kb = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "ssh" {
            continue;
        }
        let line = String::from_utf8_lossy(
            &std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default(),
        )
        .into_owned();
        if line.contains(cell.as_ref()) || line.contains("gridspool-ssh-") {
            n += 1;
            kb += pss_kb(pid);
        }
    }
    (n, kb)
}

fn run(hosts: usize, jobs: usize, client: &str) -> Result<(), String> {
    let t = Instant::now();
    let Some(cluster) = Cluster::start("cluster_throughput", hosts) else {
        return Ok(());
    };
    let built = t.elapsed();
    let names = cluster.names_yaml();
    let mut hosts_yaml = cluster.hosts_yaml(1);
    // `CLUSTER_SSH_OPTIONS="-o KexAlgorithms=curve25519-sha256"`: more ssh options per host.
    if let Ok(extra) = std::env::var("CLUSTER_SSH_OPTIONS") {
        let words: Vec<String> = extra
            .split_whitespace()
            .map(|w| format!("\"{w}\", "))
            .collect();
        hosts_yaml = hosts_yaml.replace("options: [", &format!("options: [{}", words.concat()));
    }
    hosts_yaml = hosts_yaml.replace(
        "method: ssh,",
        &format!("method: ssh, ssh_client: {client},"),
    );
    let cell = support::TestCell::with_config(|_| {
        format!(
            "{hosts_yaml}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 1}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let root = support::root().ok_or("needs root")?;
    let sched_d = std::env::var("CLUSTER_SCHED_D")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_sched_d").to_string());
    let start_daemon = || {
        Command::new(&sched_d)
            .arg("--spool")
            .arg(&cell.cell)
            .args(["--log-level", "warn", "--retention", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())
    };
    let mut daemon = start_daemon()?;
    let pid = daemon.id();
    let result = (|| {
        let acct = cell.cell.join("common/accounting");
        let records = || {
            std::fs::read_to_string(&acct)
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        // Warm-up: one job per host, so that every host has its ssh connection and start server
        // (their start is timed apart: it is a once-per-host cost, not a per-job one).
        let t = Instant::now();
        let qsub_command = |extra: &[&str], command: &[&str]| {
            let mut args = extra.to_vec();
            args.extend(["-b", "y", "-o", "/dev/null", "-e", "/dev/null"]);
            args.extend(command);
            let r = cell.run(&root, "qsub", &args);
            if r.code == 0 {
                Ok(())
            } else {
                Err(format!("qsub: {r:?}"))
            }
        };
        let qsub = |extra: &[&str]| qsub_command(extra, &["true"]);
        // Memory before any connection: sched_d has read the cell (its pid file is written).
        let pid_file = cell.cell.join("daemon/sched_d.pid");
        while std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            != Some(pid)
        {
            if t.elapsed() > Duration::from_secs(30) {
                return Err("sched_d wrote no pid file".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(500));
        let (rss0, pss0) = (status_kb(pid, "VmRSS:"), pss_kb(pid));
        let t = Instant::now();
        for h in &cluster.hosts {
            qsub(&["-l", &format!("h={}", h.name)])?;
        }
        while records().len() < hosts {
            if t.elapsed() > Duration::from_secs(300) {
                return Err(format!("warm-up: {} of {hosts} jobs ran", records().len()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let warm_up = t.elapsed();
        let (rss1, pss1) = (status_kb(pid, "VmRSS:"), pss_kb(pid));
        let below = descendants(pid);
        let ssh_now: u64 = below
            .iter()
            .filter(|(n, _)| n == "ssh")
            .map(|(_, kb)| *kb)
            .sum();
        let fds_now = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
        let threads_now = status_kb(pid, "Threads:");
        println!(
            "{hosts} hosts, ssh_client {client}: connections' memory: sched_d resident {:.1} → {:.1} MB, \
             proportional {:.1} → {:.1} MB, plus {} ssh processes {:.1} MB proportional: \
             {:.1} MB in all for the connections, {:.0} kB per host; {fds_now} file descriptors, \
             {threads_now} threads, {} processes below sched_d",
            rss0 as f64 / 1024.0,
            rss1 as f64 / 1024.0,
            pss0 as f64 / 1024.0,
            pss1 as f64 / 1024.0,
            below.iter().filter(|(n, _)| n == "ssh").count(),
            ssh_now as f64 / 1024.0,
            (pss1.saturating_sub(pss0) + ssh_now) as f64 / 1024.0,
            (pss1.saturating_sub(pss0) + ssh_now) as f64 / hosts as f64,
            below.len(),
        );
        let t = Instant::now();
        for _ in 0..jobs {
            qsub(&["-h"])?;
        }
        let submitted = t.elapsed();
        // sched_d has read every held job when each has its state file.
        let jobs_dir = cell.cell.join("jobs");
        let known = || {
            std::fs::read_dir(&jobs_dir).map_or(0, |d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".state"))
                    .count()
            })
        };
        let t = Instant::now();
        while known() < jobs {
            if t.elapsed() > Duration::from_secs(120) {
                return Err(format!("sched_d read {} of {jobs} jobs", known()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (busy0, own0) = (busy_ticks(), own_ticks(pid));
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let start = Instant::now();
        let r = cell.run(&root, "qrls", &["-u", "*"]);
        if r.code != 0 {
            return Err(format!("qrls: {r:?}"));
        }
        let (mut fds, mut procs, mut masters, mut ssh_kb) = (0usize, 0usize, 0usize, 0u64);
        let (mut all_ssh, mut all_ssh_kb) = (0usize, 0u64);
        let mut next_sample = Instant::now();
        loop {
            if Instant::now() >= next_sample {
                fds =
                    fds.max(std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count()));
                let below = descendants(pid);
                procs = procs.max(below.len());
                let ssh: Vec<u64> = below
                    .iter()
                    .filter(|(n, _)| n == "ssh")
                    .map(|(_, kb)| *kb)
                    .collect();
                masters = masters.max(ssh.len());
                ssh_kb = ssh_kb.max(ssh.iter().sum());
                let (n, kb) = cell_ssh(&cell.cell);
                all_ssh = all_ssh.max(n);
                all_ssh_kb = all_ssh_kb.max(kb);
                next_sample = Instant::now() + Duration::from_millis(500);
            }
            let n = records().len() - hosts;
            if n >= jobs {
                break;
            }
            if start.elapsed() > Duration::from_secs(600) {
                return Err(format!("{n} of {jobs} jobs accounted after 600 s"));
            }
            if daemon.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Err("sched_d died".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let elapsed = start.elapsed();
        let (busy1, own1) = (busy_ticks(), own_ticks(pid));
        let lines: Vec<String> = records().split_off(hosts);
        let mut ids: Vec<&str> = lines.iter().filter_map(|l| l.split(':').nth(5)).collect();
        let bad = lines
            .iter()
            .filter(|l| {
                let f: Vec<&str> = l.split(':').collect();
                f.get(11) != Some(&"0") || f.get(12) != Some(&"0")
            })
            .count();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != jobs || lines.len() != jobs || bad != 0 {
            return Err(format!(
                "accounting check FAILED: {} records of {} jobs, {bad} not exit 0 / failed 0",
                lines.len(),
                ids.len()
            ));
        }
        let tick_ms = 1000.0 / 100.0; // USER_HZ
        println!(
            "  {hosts} hosts, ssh_client {client} (built in {:.1} s; the first job on every host, with its ssh connection and \
             start server, {:.1} s), {jobs} jobs of 1 slot per host: submitted at {:.0} qsub/s; \
             executed in {:.2} s: {:.0} jobs/s from qrls to the last accounting record \
             (load {})",
            built.as_secs_f64(),
            warm_up.as_secs_f64(),
            jobs as f64 / submitted.as_secs_f64(),
            elapsed.as_secs_f64(),
            jobs as f64 / elapsed.as_secs_f64(),
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        );
        println!(
            "  sched_d: peak resident {} MB, CPU {:.2} ms per job; the machine's CPU {:.2} ms per job; \
             while running: {fds} file descriptors, {procs} processes below it ({masters} ssh, \
             {} MB proportional resident together, {:.2} MB per ssh process); the cell's ssh \
             processes anywhere (ControlMasters included): {all_ssh}, {:.1} MB",
            status_kb(pid, "VmHWM:") / 1024,
            (own1 - own0) as f64 * tick_ms / jobs as f64,
            (busy1 - busy0) as f64 * tick_ms / jobs as f64,
            ssh_kb / 1024,
            ssh_kb as f64 / 1024.0 / masters.max(1) as f64,
            all_ssh_kb as f64 / 1024.0,
        );

        // Re-attach: a task running on every host but the last, then sched_d killed.
        let sleepers = &cluster.hosts[..hosts - 1];
        for h in sleepers {
            qsub_command(&["-l", &format!("h={}", h.name)], &["sleep", "300"])?;
        }
        let exec_spool = |name: &str| gridspool::launch::exec_spool_dir(&cell.cell, name);
        let running = || {
            sleepers
                .iter()
                .filter(|h| {
                    std::fs::read_dir(exec_spool(&h.name).join("active_jobs"))
                        .is_ok_and(|mut d| d.next().is_some())
                })
                .count()
        };
        let t = Instant::now();
        while running() < sleepers.len() {
            if t.elapsed() > Duration::from_secs(120) {
                return Err(format!("{} of {} sleepers run", running(), sleepers.len()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let accounted = records().len();
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let _ = daemon.kill();
        let _ = daemon.wait();
        let start = Instant::now();
        let busy0 = busy_ticks();
        daemon = start_daemon()?;
        let new_pid = daemon.id();
        let own0 = own_ticks(new_pid);
        // A host's session is up when the shepherd it runs there for the new master (the
        // start server's session, or an older master's watcher) has started: a process
        // whose own words name the new master after `--master` and the host's execution
        // spool (the ssh client and the remote shell have the command as one word).
        let master = format!(":{new_pid}");
        let execd = exec_spool("X")
            .to_string_lossy()
            .trim_end_matches('X')
            .to_string();
        let up = || {
            let mut seen = std::collections::HashSet::new();
            for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let Ok(line) = std::fs::read(e.path().join("cmdline")) else {
                    continue;
                };
                let words: Vec<String> = line
                    .split(|&b| b == 0)
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect();
                let ours = words
                    .iter()
                    .position(|w| w == "--master")
                    .and_then(|i| words.get(i + 1))
                    .is_some_and(|m| m.ends_with(&master));
                if ours && let Some(h) = words.iter().find_map(|w| w.strip_prefix(&execd)) {
                    seen.insert(h.to_string());
                }
            }
            seen.len()
        };
        while up() < hosts {
            if start.elapsed() > Duration::from_secs(600) {
                return Err(format!(
                    "re-attach: {} of {hosts} sessions after 600 s",
                    up()
                ));
            }
            if daemon.try_wait().map_err(|e| e.to_string())?.is_some() {
                return Err("the new sched_d died".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let sessions_up = start.elapsed();
        let sessions_cpu = own_ticks(new_pid) - own0;
        let machine_cpu = busy_ticks() - busy0;
        // The master's side of the connections: the ssh clients' CPU so far.
        let clients_cpu: u64 = support::descendants_of(new_pid)
            .into_iter()
            .filter(|&p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "ssh")
            })
            .map(own_ticks)
            .sum();
        let last = &cluster.hosts[hosts - 1].name;
        qsub(&["-l", &format!("h={last}")])?;
        while records().len() <= accounted {
            if start.elapsed() > Duration::from_secs(900) {
                return Err("re-attach: the job on the last host did not run".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let job_ran = start.elapsed();
        let all = cell_ssh(&cell.cell);
        let ssh: Vec<u64> = descendants(new_pid)
            .iter()
            .filter(|(n, _)| n == "ssh")
            .map(|(_, kb)| *kb)
            .collect();
        println!(
            "  re-attach after kill -9 (tasks running on {} hosts, load {}): every host's session \
             up in {:.2} s ({:.0} ms of sched_d CPU, {:.0} ms of its ssh clients' and {:.0} ms of the \
             machine's per host), a \
             new job on the last host run and accounted at {:.2} s; {} ssh processes below the \
             new sched_d, {:.1} MB proportional resident together; the cell's anywhere: {}, \
             {:.1} MB",
            sleepers.len(),
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            sessions_up.as_secs_f64(),
            sessions_cpu as f64 * tick_ms / hosts as f64,
            clients_cpu as f64 * tick_ms / hosts as f64,
            machine_cpu as f64 * tick_ms / hosts as f64,
            job_ran.as_secs_f64(),
            ssh.len(),
            ssh.iter().sum::<u64>() as f64 / 1024.0,
            all.0,
            all.1 as f64 / 1024.0,
        );
        Ok(())
    })();
    let pid = daemon.id();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let t = Instant::now();
    while daemon.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    result
}

fn main() {
    if !support::is_root() {
        println!("cluster_throughput: needs root (network and UTS namespaces); nothing measured");
        return;
    }
    let hosts: Vec<usize> = std::env::var("CLUSTER_HOSTS")
        .unwrap_or_else(|_| "16,64".into())
        .split(',')
        .filter_map(|h| h.trim().parse().ok())
        .collect();
    let jobs: usize = std::env::var("CLUSTER_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2000);
    let clients: Vec<String> = std::env::var("CLUSTER_SSH_CLIENTS")
        .unwrap_or_else(|_| "builtin,openssh".into())
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    for h in hosts {
        for client in &clients {
            if let Err(e) = run(h, jobs, client) {
                eprintln!("{h} hosts, ssh_client {client}: {e}");
                std::process::exit(1);
            }
        }
    }
}
