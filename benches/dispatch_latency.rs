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

use gridspool::identity::Caller;
use gridspool::model::{JobSpec, JobSubmission, Submitter};
use gridspool::spool::Spool;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn ns_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = tempfile::tempdir()?;
    let cell = root.path().join("default");
    gridspool::cli::sched_d::init(&cell)?;
    let cgroups = std::env::var("DISPATCH_CGROUPS").unwrap_or_else(|_| "auto".into());
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
    let work = root.path().join("work");
    std::fs::create_dir_all(&work)?;
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_sched_d"))
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
    let caller = Caller::from_kernel()?;
    // (login shell, not a login shell)
    let mut latencies: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..100 {
        let plain = round % 2 == 1;
        let id = spool.allocate_job_id()?;
        let mark = work.join(format!("t.{id}"));
        let script = format!("date +%s%N > {}.tmp && mv {0}.tmp {0}\n", mark.display());
        let sub = JobSubmission {
            v: 1,
            id,
            submitter: Submitter {
                sge_o_path: "/usr/bin:/bin".into(),
                ..Submitter::new(
                    &caller,
                    &gridspool::identity::short_hostname(),
                    &work.display().to_string(),
                )
            },
            spec: JobSpec {
                name: "lat".into(),
                script_file: "lat".into(),
                cwd: Some(work.display().to_string()),
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
        spool.publish_job(&sub, script.as_bytes())?;
        let published = ns_now();
        let t = Instant::now();
        let started = loop {
            if let Ok(text) = std::fs::read_to_string(&mark)
                && let Ok(ns) = text.trim().parse::<u128>()
            {
                break ns;
            }
            if t.elapsed() > Duration::from_secs(10) {
                let _ = daemon.kill();
                return Err(format!("job {id} did not start").into());
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        latencies[usize::from(plain)].push(started.saturating_sub(published) as f64 / 1e6);
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = daemon.wait();
    for (series, plain) in latencies.iter_mut().zip([false, true]) {
        series.sort_by(f64::total_cmp);
        let n = series.len();
        println!(
            "dispatch latency, publish → first command, {n} jobs, cgroups {cgroups}, {}: median {:.1} ms, min {:.1} ms, p90 {:.1} ms, max {:.1} ms (target: median ≤ 5 ms with cgroups on)",
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
    Ok(())
}
