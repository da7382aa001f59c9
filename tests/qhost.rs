//! `qhost` against the SGE 8.1.9 captures. This host's `/proc` is replaced by fixed files
//! holding the values the capture's host reported (load 2.18, 23.5G of memory, 2 cores), so the
//! output compares exactly; remote hosts are shown from the reports `sched_d` writes.

use crate::qstat::{prio, put, spec, start};
use crate::support::*;
use gridspool::acct::load::{self, HostLoad, HostReport};
use gridspool::cli::qhost::{QhostInput, run_with};
use gridspool::compat::host_attributes::HostStatus;
use gridspool::config::ClusterConfig;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

/// A `/proc` with the capture host's values: load_avg (5 min) 2.176270, 23.541G total and
/// 573.781M used memory, no swap, one socket of two cores, CPU fully busy.
pub(crate) fn fixture_proc(dir: &Path) {
    fixture_proc_with(dir, "2.176270", 20996548);
}

/// The same host with another five-minute load and `MemFree` (kB): used memory is total
/// less free, buffers and cache.
fn fixture_proc_with(dir: &Path, load5: &str, mem_free_kb: u64) {
    std::fs::write(
        dir.join("loadavg"),
        format!("2.731445 {load5} 1.058105 2/300 4242\n"),
    )
    .expect("w");
    std::fs::write(
        dir.join("meminfo"),
        format!("MemTotal:       24684100 kB\nMemFree:        {mem_free_kb} kB\nMemAvailable:   24096548 kB\nBuffers:          100000 kB\nCached:          3000000 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n"),
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
    compare(&cell, &user, proc_dir.path(), case);
}

/// Runs the capture's command as `user` on `cell`, measuring this host from `proc_dir`.
fn compare(cell: &TestCell, user: &TestUser, proc_dir: &Path, case: &str) {
    let cap = Capture::load(&format!("qhost/{case}.txt"));
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix("qhost").unwrap_or(&cap.command),
    );
    let out = cell
        .command("qhost", user)
        .env("GRIDSPOOL_PROC_DIR", proc_dir)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run qhost");
    assert_matches(&Run::from(out), &cap);
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
        "hosts:\n  - name: \"vm\"\n    launch: {method: local}\n",
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
        instance_states: Default::default(),
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
        instance_states: Default::default(),
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
        instance_states: Default::default(),
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
        instance_states: Default::default(),
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
    let out = run(&["-u"]);
    assert_eq!(
        (out.stderr.as_str(), out.code),
        ("error: -u option must have argument\n", 1)
    );
}

/// The captures' running jobs, made as `sched_d` would record them: the context line of
/// each `qhost/j*.txt` and `qhost/u*.txt` says what ran. Their start times are the
/// captures' own (`-xml` shows them as epoch seconds).
mod jobs {
    use super::*;
    use gridspool::model::{PeRequest, SlotRange, TaskIdRange};

    /// "140 (sleeper) and 141.1 (arr, -t 1-3) running since 12:50:40; 141.2-3 pending",
    /// both sgeuser's; the host at load 4.96 with 2.0G used.
    fn sleeper_and_array(case: &str, queue_config: Option<&str>) {
        let (Some(u1), Some(_)) = (user1(), user2()) else {
            return skip(case, "needs sgeuser and sgeuser2 (run as root)");
        };
        let cell = cell(queue_config);
        let mut s = spec("sleeper");
        s.binary = true;
        put(&cell, 140, &u1, 1795351831, s, |j| {
            start(j, 1795351840, None);
            j.priority = Some(prio(0.555, 0.5));
        });
        let mut s = spec("arr");
        s.binary = true;
        s.array = Some(TaskIdRange::new(1, 3, 1));
        put(&cell, 141, &u1, 1795351831, s, |j| {
            start(j, 1795351840, None);
            j.priority = Some(prio(0.555, 0.5));
        });
        check(&cell, &u1, case, "4.96", 2.0);
    }

    /// A cell with the captures' 2-slot all.q, and another queue when asked.
    fn cell(extra_queue: Option<&str>) -> TestCell {
        let cell = two_slot_cell();
        if let Some(q) = extra_queue {
            let path = cell.cell.join("config.yaml");
            let text = std::fs::read_to_string(&path).expect("config");
            let host = gridspool::identity::short_hostname();
            // After all.q, the last queue, with the PE that makes it `BIP` too: before the
            // first top-level key that follows `queues:`.
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            let queues = lines.iter().position(|l| l == "queues:").expect("queues");
            let end = (queues + 1..lines.len())
                .find(|&k| !lines[k].starts_with(' '))
                .unwrap_or(lines.len());
            lines.insert(
                end,
                format!("  - {{name: {q}, hostlist: [\"{host}\"], slots: 2, pe_list: [smp]}}"),
            );
            let text = lines.join("\n") + "\n";
            std::fs::write(&path, text).expect("config");
        }
        cell
    }

    /// Compares with the capture, the host measured at `load` with `used_g` GiB in use.
    fn check(cell: &TestCell, user: &TestUser, case: &str, load: &str, used_g: f64) {
        let proc_dir = tempfile::tempdir().expect("tempdir");
        let free = 24684100 - 3100000 - (used_g * 1024.0 * 1024.0) as u64;
        fixture_proc_with(proc_dir.path(), load, free);
        compare(cell, user, proc_dir.path(), case);
    }

    #[test]
    fn qhost_j() {
        sleeper_and_array("j", None);
    }

    #[test]
    fn qhost_j_q() {
        sleeper_and_array("j-q", None);
    }

    #[test]
    fn qhost_j_xml() {
        sleeper_and_array("j-xml", None);
    }

    #[test]
    fn qhost_j_h() {
        sleeper_and_array("j-h", None);
    }

    #[test]
    fn qhost_j_h_unknown() {
        sleeper_and_array("j-h-unknown", None);
    }

    #[test]
    fn qhost_u_selects_owners() {
        for case in [
            "u",
            "u-xml",
            "u-other",
            "j-u-other",
            "u-all",
            "u-list",
            "u-missing",
        ] {
            sleeper_and_array(case, None);
        }
    }

    /// "142 (other, sgeuser2, -pe smp 2) running since 12:50:32 (MASTER and SLAVE)".
    #[test]
    fn qhost_j_of_a_parallel_job() {
        let (Some(_), Some(u2)) = (user1(), user2()) else {
            return skip("qhost_j_of_a_parallel_job", "needs sgeuser2 (run as root)");
        };
        let c = cell(None);
        let mut s = spec("other");
        s.binary = true;
        s.pe = Some(PeRequest {
            name: "smp".into(),
            range: SlotRange { min: 2, max: 2 },
        });
        put(&c, 142, &u2, 1795351831, s, |j| {
            start(j, 1795351832, None);
            j.tasks.running[0].slots = 2;
            j.priority = Some(prio(0.605, 0.5));
        });
        for case in ["j-pe", "j-q-pe", "j-pe-xml"] {
            check(&c, &u2, case, "4.96", 2.0);
        }
    }

    /// "143 (averyveryverylongname, sgeuser2, -t 10-11 -p -5) tasks 10 and 11 running".
    #[test]
    fn qhost_j_truncates_names_and_shows_task_ids() {
        let (Some(_), Some(u2)) = (user1(), user2()) else {
            return skip("qhost_j_truncates_names", "needs sgeuser2 (run as root)");
        };
        let c = cell(None);
        let mut s = spec("averyveryverylongname");
        s.binary = true;
        s.priority = -5;
        s.array = Some(TaskIdRange::new(10, 11, 1));
        put(&c, 143, &u2, 1795351870, s, |j| {
            start(j, 1795351871, None);
            start(j, 1795351871, None);
            j.priority = Some(prio(0.55256, 0.49756));
        });
        check(&c, &u2, "j-long", "4.82", 1.6);
    }

    /// "144 (lq, sgeuser, -q averylongqueue.q, a copy of all.q) running since 12:51:20": the
    /// queue column cut at 10 characters; with -q, the job under its queue's line.
    #[test]
    fn qhost_j_with_a_long_queue_name() {
        let Some(u1) = user1() else {
            return skip(
                "qhost_j_with_a_long_queue_name",
                "needs sgeuser (run as root)",
            );
        };
        let c = cell(Some("averylongqueue.q"));
        let mut s = spec("lq");
        s.binary = true;
        s.hard_queues = vec!["averylongqueue.q".into()];
        put(&c, 144, &u1, 1795351879, s, |j| {
            start(j, 1795351880, None);
            j.tasks.running[0].queue = "averylongqueue.q".into();
            j.priority = Some(prio(0.555, 0.5));
        });
        for case in ["j-long-queue", "j-q-long-queue"] {
            check(&c, &u1, case, "4.82", 1.6);
        }
    }
}
