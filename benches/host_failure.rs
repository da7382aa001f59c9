//! Time from an execution host's death to its rerunnable task running again elsewhere
//! (issue 13), on the namespace cluster of the tests (`tests/support/cluster.rs`): three hosts,
//! a `-r y` job running on `node01`, a free slot waiting on `node02`; then `node01` dies —
//! crashed (every process of its namespace killed) or cut off (its link down, everything on
//! it running on) — and the clock runs until the rerun's first command has written its line
//! on `node02`. With the documented defaults (`max_unheard` 20 s, `reschedule_unknown` 5 s)
//! and tuned (`max_unheard` 2 s, `reschedule_unknown` 1 s).
//!
//!     cargo bench --bench host_failure          # needs root; says why not otherwise
//!     HOST_FAILURE_ROUNDS=3 cargo bench --bench host_failure
//!
//! Prints figures; asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cluster::Cluster;

/// How the host dies.
#[derive(Clone, Copy, Debug)]
enum Death {
    Crash,
    LinkCut,
}

fn round(config: &str, death: Death) -> Result<Duration, String> {
    let Some(cluster) = Cluster::start("host_failure", 3) else {
        return Err("no cluster".into());
    };
    let hosts = cluster.hosts_yaml(1);
    let names = cluster.names_yaml();
    let cell = support::TestCell::with_config(|_| {
        format!(
            "{config}{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 1}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let user = support::user1().ok_or("needs root")?;
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_sched_d"))
        .arg("--spool")
        .arg(&cell.cell)
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let result = (|| {
        let qsub = |args: &[&str]| -> Result<String, String> {
            let r = cell.run(&user, "qsub", args);
            if r.code == 0 {
                Ok(r.stdout.trim().to_string())
            } else {
                Err(format!("qsub: {r:?}"))
            }
        };
        let log = cell.workdir(&user).join("runs.log");
        let lines = || std::fs::read_to_string(&log).unwrap_or_default();
        let wait = |what: &str, limit: Duration, cond: &dyn Fn() -> bool| {
            let t = Instant::now();
            while !cond() {
                if t.elapsed() > limit {
                    return Err(format!("timed out waiting for {what}"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(t.elapsed())
        };
        cell.write_file(
            &user,
            "mark.sh",
            "#!/bin/sh\necho \"$JOB_ID $(hostname) ${RESTARTED:-0}\" >> runs.log\nexec sleep 600\n",
        );
        // node03 busy, node02 held free by a job that waits for its release: the rerunnable
        // job can only start on node01.
        qsub(&["-terse", "-cwd", "-l", "h=node03", "mark.sh"])?;
        let holder = qsub(&["-terse", "-cwd", "-l", "h=node02", "-h", "mark.sh"])?;
        let id = qsub(&[
            "-terse",
            "-cwd",
            "-r",
            "y",
            "-l",
            "h=node01|node02",
            "mark.sh",
        ])?;
        wait("the job on node01", Duration::from_secs(60), &|| {
            lines().contains(&format!("{id} node01 0"))
        })?;
        // The holder goes: node02 is free (and its ssh connection warm).
        let _ = cell.run(&user, "qdel", &[&holder]);
        std::thread::sleep(Duration::from_secs(3));
        let t = Instant::now();
        match death {
            Death::Crash => cluster.crash(0),
            Death::LinkCut => cluster.set_link(0, false),
        }
        wait("the rerun on node02", Duration::from_secs(120), &|| {
            lines().contains(&format!("{id} node02 1"))
        })?;
        Ok(t.elapsed())
    })();
    let _ = daemon.kill();
    let _ = daemon.wait();
    result
}

fn main() {
    if !support::is_root() {
        println!("host_failure: needs root (network namespaces); nothing measured");
        return;
    }
    let rounds: usize = std::env::var("HOST_FAILURE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "host death → its -r y task running on another host (load {})",
        load.split_whitespace().next().unwrap_or("?")
    );
    for (name, config) in [
        ("defaults (max_unheard 20 s, reschedule_unknown 5 s)", ""),
        (
            "tuned (max_unheard 2 s, reschedule_unknown 1 s)",
            "max_unheard: \"0:0:2\"\nreschedule_unknown: \"0:0:1\"\n",
        ),
    ] {
        for death in [Death::Crash, Death::LinkCut] {
            let times: Vec<String> = (0..rounds)
                .map(|_| match round(config, death) {
                    Ok(t) => format!("{:.1} s", t.as_secs_f64()),
                    Err(e) => format!("failed: {e}"),
                })
                .collect();
            println!("  {name}, {death:?}: {}", times.join(", "));
        }
    }
}
