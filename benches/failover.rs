//! What a failure costs (issue 13), on the namespace cluster of the tests
//! (`tests/support/cluster.rs`), with the documented defaults and tuned:
//!
//! - *host death*: the time from an execution host's death to its rerunnable task running
//!   again elsewhere. Three hosts, a `-r y` job running on `node01`, a free slot waiting on
//!   `node02`; then `node01` dies — crashed (every process of its namespace killed) or cut
//!   off (its link down, everything on it running on) — and the clock runs until the rerun's
//!   first command has written its line on `node02`. Defaults: `max_unheard` 20 s,
//!   `reschedule_unknown` 5 s; tuned: 2 s, 1 s.
//! - *master death*: the time from the master's death to the shadow's first dispatch. The
//!   master runs on `node01`, a shadow on `node02` (each in its host's namespaces), the
//!   execution hosts are `node03` and `node04`; the master is killed (`kill -9`) or cut off
//!   and frozen (its link down, SIGSTOP: a master hung on its NFS mount), a job is submitted
//!   at once, and the clock runs until its first command has run. Defaults: heartbeat 2 s,
//!   takeover after 10 s; tuned: 0.5 s, 2 s.
//!
//! ```text
//! cargo bench --bench failover          # needs root; says why not otherwise
//! FAILOVER_ROUNDS=3 cargo bench --bench failover
//! ```
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
    let Some(cluster) = Cluster::start("failover", 3) else {
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

/// How the master dies.
#[derive(Clone, Copy, Debug)]
enum MasterDeath {
    Killed,
    CutAndFrozen,
}

fn takeover(
    master_args: &[&str],
    shadow_args: &[&str],
    death: MasterDeath,
) -> Result<Duration, String> {
    let Some(cluster) = Cluster::start("failover", 4) else {
        return Err("no cluster".into());
    };
    let hosts = cluster.hosts_yaml_of(&[2, 3], 2);
    let cell = support::TestCell::with_config(|_| {
        format!(
            "{hosts}hostgroups:\n  \"@allhosts\": [node03, node04]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let user = support::user1().ok_or("needs root")?;
    let daemon = |host: usize, args: &[&str]| {
        let prefix = cluster.on_host(host);
        Command::new(&prefix[0])
            .args(&prefix[1..])
            .arg(env!("CARGO_BIN_EXE_sched_d"))
            .arg("--spool")
            .arg(&cell.cell)
            .args(["--log-level", "warn"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())
    };
    let mut master = daemon(0, master_args)?;
    let mut shadow = daemon(1, shadow_args)?;
    let result = (|| {
        let log = cell.workdir(&user).join("runs.log");
        cell.write_file(&user, "job.sh", "#!/bin/sh\necho \"$JOB_ID\" >> runs.log\n");
        let qsub = || -> Result<String, String> {
            let r = cell.run(&user, "qsub", &["-terse", "-cwd", "job.sh"]);
            if r.code == 0 {
                Ok(r.stdout.trim().to_string())
            } else {
                Err(format!("qsub: {r:?}"))
            }
        };
        let ran = |id: &str| {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .any(|l| l == id)
        };
        let wait = |what: &str, cond: &dyn Fn() -> bool| {
            let t = Instant::now();
            while !cond() {
                if t.elapsed() > Duration::from_secs(120) {
                    return Err(format!("timed out waiting for {what}"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        };
        // The master runs jobs on both execution hosts (their connections are warm), and
        // the shadow has seen a few beats.
        for _ in 0..2 {
            let id = qsub()?;
            wait("a job under the master", &|| ran(&id))?;
        }
        std::thread::sleep(Duration::from_secs(3));
        let pid = nix::unistd::Pid::from_raw(master.id() as i32);
        let t = Instant::now();
        match death {
            MasterDeath::Killed => {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
            MasterDeath::CutAndFrozen => {
                cluster.set_link(0, false);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP);
            }
        }
        let id = qsub()?;
        wait("the job under the shadow", &|| ran(&id))?;
        Ok(t.elapsed())
    })();
    for child in [&mut master, &mut shadow] {
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT);
        let _ = child.wait();
    }
    result
}

fn main() {
    if !support::is_root() {
        println!("failover: needs root (network namespaces); nothing measured");
        return;
    }
    let rounds: usize = std::env::var("FAILOVER_ROUNDS")
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
    println!("master death → the shadow's first dispatch");
    let tuned_master: &[&str] = &["--heartbeat-interval", "0.5"];
    let tuned_shadow: &[&str] = &["--shadow", "--takeover-after", "2"];
    for (name, master, shadow) in [
        (
            "defaults (heartbeat 2 s, takeover after 10 s)",
            &[][..],
            &["--shadow"][..],
        ),
        (
            "tuned (heartbeat 0.5 s, takeover after 2 s)",
            tuned_master,
            tuned_shadow,
        ),
    ] {
        for death in [MasterDeath::Killed, MasterDeath::CutAndFrozen] {
            let times: Vec<String> = (0..rounds)
                .map(|_| match takeover(master, shadow, death) {
                    Ok(t) => format!("{:.1} s", t.as_secs_f64()),
                    Err(e) => format!("failed: {e}"),
                })
                .collect();
            println!("  {name}, {death:?}: {}", times.join(", "));
        }
    }
}
