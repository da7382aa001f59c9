//! Dispatch latency (issue 3): `qsub` returning → the job's first command, on the local host
//! with the default local process runner. Publishes 100 jobs one after another through the
//! library (as qsub does) to a fresh spool served by a real `sched_d`, and prints the median.
//! Prints figures; asserts nothing about time. `DISPATCH_CGROUPS=off` measures the same
//! with the host's `cgroups: {mode: off}` (the default, `auto`, puts each task in a cgroup
//! where root may), for the two side by side.
//!
//! Jobs alternate between SGE's default shell, `/bin/sh` started as a login shell
//! (`login_shells`: it reads `/etc/profile` and `~/.profile` before the first command, as
//! under SGE), and `-S /bin/dash`, which is not a login shell: the difference is the time
//! the job's own start-up files take, the rest is gridspool's.
//!
//! `DISPATCH_BASELINE=<another build's sched_d>` (with its `gridspool-shepherd` beside it)
//! runs that build too, on a cell of its own, each job alternately on one and the other, so
//! that both see the same load; `DISPATCH_JOBS` changes the number of jobs per build.

use gridspool::identity::Caller;
use gridspool::model::{JobSpec, JobSubmission, Submitter};
use gridspool::spool::Spool;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn ns_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// One build under test: its cell, its daemon, and the latencies measured with it (login
/// shell, not a login shell).
struct Cell {
    name: String,
    spool: Spool,
    work: PathBuf,
    daemon: Child,
    latencies: [Vec<f64>; 2],
}

fn start_cell(
    root: &Path,
    name: &str,
    sched_d: &Path,
    cgroups: &str,
) -> Result<Cell, Box<dyn std::error::Error>> {
    let cell = root.join(name).join("default");
    gridspool::cli::sched_d::init(&cell)?;
    if cgroups != "auto" {
        let path = cell.join("config.yaml");
        let text = std::fs::read_to_string(&path)?.replacen(
            "    launch: {method: local}",
            &format!("    launch: {{method: local}}\n    cgroups: {{mode: {cgroups}}}"),
            1,
        );
        std::fs::write(&path, text)?;
    }
    let spool = Spool::open(&cell)?;
    let work = root.join(name).join("work");
    std::fs::create_dir_all(&work)?;
    let mut daemon = Command::new(sched_d)
        .arg("--spool")
        .arg(&cell)
        .args(["--log-level", "warn", "--retention", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid_file = cell.join("daemon/sched_d.pid");
    let t = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |p| p.trim() != daemon.id().to_string()) {
        if t.elapsed() > Duration::from_secs(10) {
            let _ = daemon.kill();
            return Err("sched_d did not start".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Cell {
        name: name.to_string(),
        spool,
        work,
        daemon,
        latencies: [Vec::new(), Vec::new()],
    })
}

/// Publishes one job and waits for its first command; returns the latency in ms.
fn one_job(
    cell: &mut Cell,
    caller: &Caller,
    plain: bool,
) -> Result<f64, Box<dyn std::error::Error>> {
    let id = cell.spool.allocate_job_id()?;
    let mark = cell.work.join(format!("t.{id}"));
    let script = format!("date +%s%N > {}.tmp && mv {0}.tmp {0}\n", mark.display());
    let sub = JobSubmission {
        v: 1,
        id,
        submitter: Submitter {
            sge_o_path: "/usr/bin:/bin".into(),
            ..Submitter::new(
                caller,
                &gridspool::identity::short_hostname(),
                &cell.work.display().to_string(),
            )
        },
        spec: JobSpec {
            name: "lat".into(),
            script_file: "lat".into(),
            cwd: Some(cell.work.display().to_string()),
            interpreter: if plain {
                vec![gridspool::model::PathSpec {
                    host: None,
                    path: "/bin/dash".into(),
                }]
            } else {
                Vec::new()
            },
            ..JobSpec::default()
        },
        holds: Default::default(),
    };
    cell.spool.publish_job(&sub, script.as_bytes())?;
    let published = ns_now();
    let t = Instant::now();
    let started = loop {
        if let Ok(text) = std::fs::read_to_string(&mark)
            && let Ok(ns) = text.trim().parse::<u128>()
        {
            break ns;
        }
        if t.elapsed() > Duration::from_secs(10) {
            return Err(format!("job {id} did not start ({})", cell.name).into());
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    Ok(started.saturating_sub(published) as f64 / 1e6)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let cgroups = std::env::var("DISPATCH_CGROUPS").unwrap_or_else(|_| "auto".into());
    let jobs: usize = std::env::var("DISPATCH_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let mut cells = vec![start_cell(
        root.path(),
        "this-build",
        Path::new(env!("CARGO_BIN_EXE_sched_d")),
        &cgroups,
    )?];
    if let Some(base) = std::env::var_os("DISPATCH_BASELINE") {
        match start_cell(root.path(), "baseline", Path::new(&base), &cgroups) {
            Ok(c) => cells.push(c),
            Err(e) => {
                for c in &mut cells {
                    let _ = c.daemon.kill();
                }
                return Err(e);
            }
        }
    }
    let caller = Caller::from_kernel()?;
    let mut failure = None;
    'rounds: for round in 0..jobs {
        let plain = round % 2 == 1;
        // Which build goes first alternates too.
        let n = cells.len();
        for k in 0..n {
            let cell = &mut cells[(round / 2 + k) % n];
            match one_job(cell, &caller, plain) {
                Ok(ms) => cell.latencies[usize::from(plain)].push(ms),
                Err(e) => {
                    failure = Some(e);
                    break 'rounds;
                }
            }
        }
    }
    for c in &mut cells {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(c.daemon.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = c.daemon.wait();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for c in &mut cells {
        for (series, plain) in c.latencies.iter_mut().zip([false, true]) {
            series.sort_by(f64::total_cmp);
            let n = series.len();
            if n == 0 {
                continue;
            }
            println!(
                "dispatch latency, publish → first command, {} ({n} jobs), cgroups {cgroups}, {}: median {:.1} ms, min {:.1} ms, p90 {:.1} ms, max {:.1} ms (target: median ≤ 5 ms with cgroups on)",
                c.name,
                if plain {
                    "-S /bin/dash (no login shell)"
                } else {
                    "/bin/sh as a login shell (SGE's default)"
                },
                series[n / 2],
                series[0],
                series[n * 9 / 10],
                series[n - 1]
            );
        }
    }
    Ok(())
}
