//! `qhost` against the SGE 8.1.9 captures. This host's `/proc` is replaced by fixed files
//! holding the values the capture's host reported (load 2.18, 23.5G of memory, 2 cores), so the
//! output compares exactly; remote hosts are shown from the reports `sched_d` writes.

use crate::support::*;
use gridspool::acct::load::{self, HostLoad, HostReport};
use gridspool::cli::qhost::{HostStatus, QhostInput, run_with};
use gridspool::config::ClusterConfig;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

/// A `/proc` with the capture host's values: load_avg (5 min) 2.176270, 23.541G total and
/// 573.781M used memory, no swap, one socket of two cores, CPU fully busy.
pub(crate) fn fixture_proc(dir: &Path) {
    std::fs::write(
        dir.join("loadavg"),
        "2.731445 2.176270 1.058105 2/300 4242\n",
    )
    .expect("w");
    std::fs::write(
        dir.join("meminfo"),
        "MemTotal:       24684100 kB\nMemFree:        20996548 kB\nMemAvailable:   24096548 kB\nBuffers:          100000 kB\nCached:          3000000 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n",
    )
    .expect("w");
    std::fs::write(
        dir.join("cpuinfo"),
        "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n",
    )
    .expect("w");
    std::fs::write(dir.join("stat"), "cpu  1000 0 500 0 0 0 0 0 0 0\n").expect("w");
}

/// The test cell with queue and host slots of the capture's 2-CPU host.
fn two_slot_cell() -> TestCell {
    TestCell::with_config(|c| {
        c.lines()
            .map(|l| {
                if l.trim_start().starts_with("slots: ") && !l.contains('{') {
                    let indent = &l[..l.len() - l.trim_start().len()];
                    format!("{indent}slots: 2\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    })
}

fn golden(case: &str) {
    let Some(user) = user1() else {
        return skip(case, "needs sgeuser (run as root)");
    };
    let cell = two_slot_cell();
    let proc_dir = tempfile::tempdir().expect("tempdir");
    fixture_proc(proc_dir.path());
    let cap = Capture::load(&format!("qhost/{case}.txt"));
    let args: Vec<&str> = cap.command.split_whitespace().skip(1).collect();
    let out = cell
        .command("qhost", &user)
        .env("GRIDSPOOL_PROC_DIR", proc_dir.path())
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run qhost");
    let run = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    };
    assert_matches(&run, &cap);
}

#[test]
fn qhost_plain() {
    golden("qhost");
}

#[test]
fn qhost_q() {
    golden("q");
}

#[test]
fn qhost_f() {
    golden("F");
}

#[test]
fn qhost_xml() {
    golden("xml");
}

fn two_host_config() -> ClusterConfig {
    let text = ClusterConfig::default_text("vm", 2).replace(
        "hosts:\n  - name: \"vm\"\n    slots: 2\n    launch: {method: local}\n",
        "hosts:\n  - name: \"vm\"\n    slots: 2\n    launch: {method: local}\n  - name: \"node1\"\n    slots: 4\n    launch: {method: ssh}\n",
    ).replace("\"@allhosts\": [\"vm\"]", "\"@allhosts\": [\"vm\", \"node1\"]");
    ClusterConfig::parse(&text).expect("config")
}

fn load(proc_dir: &Path) -> HostLoad {
    HostLoad::measure(proc_dir, "lx-amd64").expect("measure")
}

#[test]
fn qhost_remote_hosts_without_reports_are_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture_proc(dir.path());
    let config = two_host_config();
    assert_eq!(config.hosts.len(), 2, "fixture config has node1");
    let mut loads = BTreeMap::new();
    loads.insert(
        "vm".to_string(),
        HostStatus {
            load: Some(load(dir.path())),
            known: true,
        },
    );
    loads.insert(
        "node1".to_string(),
        HostStatus {
            load: None,
            known: false,
        },
    );
    let input = QhostInput {
        config,
        jobs: Vec::new(),
        loads,
    };
    let out = run_with(&["-q".to_string()], &input);
    assert_eq!(
        out.stdout,
        "\
HOSTNAME                ARCH         NCPU NSOC NCOR NTHR  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS
----------------------------------------------------------------------------------------------
global                  -               -    -    -    -     -       -       -       -       -
node1                   lx-amd64        -    -    -    -     -       -       -       -       -
   all.q                BIP   0/0/2         au
vm                      lx-amd64        2    1    2    2  2.18   23.5G  573.8M     0.0     0.0
   all.q                BIP   0/0/2         
"
    );
}

#[test]
fn qhost_shows_reports_and_marks_unreachable_hosts() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture_proc(dir.path());
    let daemon = tempfile::tempdir().expect("tempdir");
    let mut remote = load(dir.path());
    remote.num_proc = 8;
    remote.m_core = 4;
    remote.m_thread = 8;
    remote.load_medium = 0.5;
    load::write_report(
        daemon.path(),
        &HostReport {
            v: 1,
            host: "node1".into(),
            time: 100,
            reachable: true,
            load: Some(remote),
            tasks: Vec::new(),
        },
    )
    .expect("write");
    let report = load::read_report(daemon.path(), "node1").expect("report");
    let mut config = two_host_config();
    config.queues[0].disabled = true;
    let mut loads = BTreeMap::new();
    loads.insert(
        "vm".to_string(),
        HostStatus {
            load: Some(load(dir.path())),
            known: true,
        },
    );
    loads.insert(
        "node1".to_string(),
        HostStatus {
            load: report.load.clone(),
            known: true,
        },
    );
    let input = QhostInput {
        config: config.clone(),
        jobs: Vec::new(),
        loads: loads.clone(),
    };
    let out = run_with(
        &["-q".to_string(), "-h".to_string(), "node1".to_string()],
        &input,
    );
    assert_eq!(
        out.stdout.lines().nth(3),
        Some(
            "node1                   lx-amd64        8    1    4    8  0.50   23.5G  573.8M     0.0     0.0"
        )
    );
    assert_eq!(
        out.stdout.lines().nth(4),
        Some("   all.q                BIP   0/0/2         d")
    );

    // The scheduler marked node1 unreachable: SGE's alarm + unknown, with the disabled flag.
    loads.insert(
        "node1".to_string(),
        HostStatus {
            load: None,
            known: false,
        },
    );
    let input = QhostInput {
        config,
        jobs: Vec::new(),
        loads,
    };
    let out = run_with(&["-q".to_string(), "-xml".to_string()], &input);
    assert!(
        out.stdout
            .contains("<queuevalue qname='all.q' name='state_string'>adu</queuevalue>"),
        "{}",
        out.stdout
    );
}

#[test]
fn qhost_options_like_sge() {
    let dir = tempfile::tempdir().expect("tempdir");
    fixture_proc(dir.path());
    let mut loads = BTreeMap::new();
    loads.insert(
        "vm".to_string(),
        HostStatus {
            load: Some(load(dir.path())),
            known: true,
        },
    );
    let input = QhostInput {
        config: ClusterConfig::parse(&ClusterConfig::default_text("vm", 2)).expect("config"),
        jobs: Vec::new(),
        loads,
    };
    let run = |args: &[&str]| {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        run_with(&a, &input)
    };
    let out = run(&["-ncb", "-F", "num_proc"]);
    assert_eq!(
        out.stdout,
        "\
HOSTNAME                ARCH         NCPU  LOAD  MEMTOT  MEMUSE  SWAPTO  SWAPUS
-------------------------------------------------------------------------------
global                  -               -     -       -       -       -       -
vm                      lx-amd64        2  2.18   23.5G  573.8M     0.0     0.0
    Host Resource(s):      hl:num_proc=2.000000
"
    );
    let out = run(&["-l", "arch=lx-amd64"]);
    assert!(!out.stdout.contains("global"));
    assert!(out.stdout.contains("\nvm "));
    let out = run(&["-l", "num_proc=3"]);
    assert_eq!((out.stdout.as_str(), out.code), ("", 0));
    let out = run(&["-l", "nosuch=1"]);
    assert_eq!(
        (out.stderr.as_str(), out.code),
        ("error: unknown resource \"nosuch\"\n", 1)
    );
    let out = run(&["-h", "nosuch"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .ends_with("error: can't resolve hostname \"nosuch\"\n")
    );
    let out = run(&["-x"]);
    assert_eq!(
        out.stderr,
        format!(
            "{}error: invalid option argument \"-x\"\n",
            gridspool::cli::qhost::usage()
        )
    );
    let out = run(&["-help"]);
    assert_eq!(
        (out.stdout.as_str(), out.code),
        (gridspool::cli::qhost::usage().as_str(), 0)
    );
    let out = run(&["-j"]);
    assert_eq!(out.code, 1);
}
