//! `sched_d` driving a cluster of execution hosts, each its own network and UTS namespace with
//! its own sshd ([`crate::support::cluster`]): jobs spread over the hosts, parallel jobs whose
//! allocation spans several of them, `-l h=` and `-q queue@host` binding, and `qhost` showing
//! what each host reports of itself. Jobs run as sgeuser, submitted with the real `qsub`.

use crate::sched::{SchedD, wait_for};
use crate::support::cluster::Cluster;
use crate::support::*;
use std::collections::BTreeSet;
use std::time::Duration;

/// A cell whose execution hosts are the cluster's (`slots` each), with PEs `rr`
/// (`$round_robin`) and `fu` (`$fill_up`); `sched_d`'s own host runs nothing.
fn cluster_cell(cluster: &Cluster, slots: u32) -> TestCell {
    cluster_cell_with(cluster, slots, "")
}

/// [`cluster_cell`] with `extra` top-level configuration lines.
pub(crate) fn cluster_cell_with(cluster: &Cluster, slots: u32, extra: &str) -> TestCell {
    let hosts = cluster.hosts_yaml(slots);
    let names = cluster.names_yaml();
    TestCell::with_config(|_| {
        format!(
            "{extra}{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: {slots}, pe_list: [rr, fu]}}\n\
             parallel_environments:\n  - {{name: rr, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: fu, slots: 999, allocation_rule: $fill_up}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// Submits `args` as `user` with `-terse`; returns the job id.
pub(crate) fn qsub(cell: &TestCell, user: &TestUser, args: &[&str]) -> u32 {
    let run = cell.run(user, "qsub", args);
    assert_eq!(run.code, 0, "qsub {args:?}: {run:?}");
    run.stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{run:?}"))
}

/// The standard output of job `id` named `name` in the user's working directory, once the job
/// has been accounted (its output is complete then).
pub(crate) fn output(cell: &TestCell, user: &TestUser, name: &str, id: u32) -> String {
    let path = cell.workdir(user).join(format!("{name}.o{id}"));
    wait_for(
        &format!("job {id} accounted"),
        Duration::from_secs(60),
        || !crate::sched::accounting_records(cell, gridspool::model::JobId(id)).is_empty(),
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs a client as `user` on a submit host that is no execution host: a network and UTS
/// namespace of its own (no network at all: a client only reads and writes the shared cell),
/// named `login01`.
fn run_on_submit_host(cell: &TestCell, user: &TestUser, bin: &str, args: &[&str]) -> Run {
    let inner = cell.command(bin, user);
    let mut cmd = std::process::Command::new("unshare");
    cmd.env_clear();
    for (k, v) in inner.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.current_dir(inner.get_current_dir().expect("workdir"))
        .args(["--uts", "--net", "sh", "-c"])
        .arg(
            "hostname login01 && uid=$1 gid=$2 && shift 2 && \
             exec setpriv --reuid=\"$uid\" --regid=\"$gid\" --clear-groups -- \"$@\"",
        )
        .arg("sh")
        .arg(user.uid.to_string())
        .arg(user.gid.to_string())
        .arg(inner.get_program())
        .args(args);
    let out = cmd.output().expect("unshare");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

#[test]
fn jobs_spread_over_eight_namespace_hosts_and_bind_to_a_host() {
    const TEST: &str = "jobs_spread_over_eight_namespace_hosts_and_bind_to_a_host";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 8) else {
        return;
    };
    let cell = cluster_cell(&cluster, 2);
    let d = SchedD::start(&cell, &[]);
    cell.write_file(&user, "where.sh", "#!/bin/sh\nsleep 1\nhostname\n");

    // 16 jobs on 16 slots: every host runs two, and each says the name it has there.
    let ids: Vec<u32> = (0..16)
        .map(|_| qsub(&cell, &user, &["-terse", "-cwd", "where.sh"]))
        .collect();
    let mut seen = BTreeSet::new();
    for &id in &ids {
        let host = output(&cell, &user, "where.sh", id).trim().to_string();
        let record = &crate::sched::accounting_records(&cell, gridspool::model::JobId(id))[0];
        assert_eq!(
            record[1], host,
            "job {id} ran on {host}, accounted on {}",
            record[1]
        );
        seen.insert(host);
    }
    let all: BTreeSet<String> = cluster.hosts.iter().map(|h| h.name.clone()).collect();
    assert_eq!(seen, all, "{}", d.log_text());

    // Binding by host name and by queue instance.
    let on5 = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-l", "h=node05", "where.sh"],
    );
    let on7 = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-q", "all.q@node07", "where.sh"],
    );
    assert_eq!(output(&cell, &user, "where.sh", on5).trim(), "node05");
    assert_eq!(output(&cell, &user, "where.sh", on7).trim(), "node07");

    // From a submit host: the job says where it was submitted, and runs on the cluster.
    let run = run_on_submit_host(&cell, &user, "qsub", &["-terse", "-cwd", "-h", "where.sh"]);
    assert_eq!(run.code, 0, "{run:?}");
    let held: u32 = run.stdout.trim().parse().expect("job id");
    let run = run_on_submit_host(&cell, &user, "qstat", &["-j", &held.to_string()]);
    assert!(
        run.code == 0
            && run
                .stdout
                .contains("\nsge_o_host:                 login01\n"),
        "{run:?}"
    );
    assert_eq!(cell.run(&user, "qrls", &[&held.to_string()]).code, 0);
    let ran_on = output(&cell, &user, "where.sh", held);
    assert!(all.contains(ran_on.trim()), "{ran_on}");

    // qhost: every host's load as the host reported it (its own /proc), none unreachable.
    let daemon_dir = cell.cell.join("daemon");
    wait_for("every host's report", Duration::from_secs(30), || {
        cluster.hosts.iter().all(|h| {
            gridspool::acct::load::read_report(&daemon_dir, &h.name)
                .is_some_and(|r| r.reachable && r.load.is_some())
        })
    });
    let run = cell.run(&user, "qhost", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    for h in &cluster.hosts {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(h.name.as_str()))
            .unwrap_or_else(|| panic!("{} missing:\n{}", h.name, run.stdout));
        let fields: Vec<&str> = line.split_whitespace().collect();
        // HOSTNAME ARCH NCPU NSOC NCOR NTHR LOAD MEMTOT MEMUSE SWAPTO SWAPUS
        assert_eq!(fields[1], "lx-amd64", "{line}");
        assert!(
            fields[2].parse::<u32>().is_ok_and(|n| n >= 1) && fields[6] != "-" && fields[7] != "-",
            "{line}"
        );
    }
}

/// `$round_robin` and `$fill_up` allocations over several hosts: `PE_HOSTFILE` names the
/// granted hosts (master first), `NHOSTS` counts them, and the master task runs on the first.
#[test]
fn parallel_jobs_span_namespace_hosts_with_a_pe_hostfile() {
    const TEST: &str = "parallel_jobs_span_namespace_hosts_with_a_pe_hostfile";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 4) else {
        return;
    };
    let cell = cluster_cell(&cluster, 2);
    let _d = SchedD::start(&cell, &[]);
    cell.write_file(
        &user,
        "pe.sh",
        "#!/bin/sh\necho \"$NHOSTS $NSLOTS $(hostname)\"\ncat \"$PE_HOSTFILE\"\n",
    );
    for (pe, slots, hosts, per_host) in [("rr", "4", 4, 1), ("fu", "4", 2, 2)] {
        let id = qsub(&cell, &user, &["-terse", "-cwd", "-pe", pe, slots, "pe.sh"]);
        let out = output(&cell, &user, "pe.sh", id);
        let mut lines = out.lines();
        let head: Vec<&str> = lines
            .next()
            .expect("first line")
            .split_whitespace()
            .collect();
        let hostfile: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(hostfile.len(), hosts, "{pe}: {out}");
        let names: BTreeSet<&str> = hostfile.iter().map(|l| l[0]).collect();
        assert_eq!(names.len(), hosts, "{pe}: distinct hosts: {out}");
        for l in &hostfile {
            assert_eq!(l[1], per_host.to_string(), "{pe}: {out}");
            assert_eq!(l[2], format!("all.q@{}", l[0]), "{pe}: {out}");
        }
        assert_eq!(head[0], hosts.to_string(), "{pe}: NHOSTS: {out}");
        assert_eq!(head[1], slots, "{pe}: NSLOTS: {out}");
        assert_eq!(
            head[2], hostfile[0][0],
            "{pe}: the master runs on the first host: {out}"
        );
    }
}

#[test]
fn qrsh_runs_on_a_granted_namespace_host_and_connects_back() {
    const TEST: &str = "qrsh_runs_on_a_granted_namespace_host_and_connects_back";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    let cell = cluster_cell(&cluster, 2);
    let _d = SchedD::start(&cell, &[]);
    // The command runs on node02 and its output, from that namespace, comes back to qrsh
    // here over the cluster's bridge (node02 does not resolve this host's name).
    let run = cell.run(&user, "qrsh", &["-l", "h=node02", "hostname; exit 4"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        ("node02\n", "", 4),
        "{run:?}"
    );
}

/// The processes of this machine: (pid, parent pid, `comm`, command-line words).
pub(crate) fn processes() -> Vec<(u32, u32, String, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((left, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = left.split_once(" (").map_or("", |(_, c)| c).to_string();
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let words = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                c.split(|&b| b == 0)
                    .filter(|w| !w.is_empty())
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        out.push((pid, ppid, comm, words));
    }
    out
}

/// The state letter of the process whose command line is exactly `command`.
fn state_of(command: &str) -> Option<char> {
    let (pid, ..) = processes()
        .into_iter()
        .find(|(_, _, _, words)| words.join(" ") == command)?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// sched_d's established TCP connections to port 22, by remote address (IPv4).
pub(crate) fn ssh_connections_of(pid: u32) -> std::collections::BTreeMap<String, usize> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let link = std::fs::read_link(e.path()).ok()?;
            let link = link.to_str()?;
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let mut out = std::collections::BTreeMap::new();
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
        if f.len() < 10 || f[3] != "01" || !inodes.contains(f[9]) {
            continue;
        }
        let Some((addr, port)) = f[2].split_once(':') else {
            continue;
        };
        if u16::from_str_radix(port, 16) != Ok(22) {
            continue;
        }
        let Ok(a) = u32::from_str_radix(addr, 16) else {
            continue;
        };
        *out.entry(std::net::Ipv4Addr::from(a.to_le_bytes()).to_string())
            .or_insert(0) += 1;
    }
    out
}

/// Issue 27: an ssh host costs `sched_d` one connection, the start server's session, which
/// carries the starts, the results, the heartbeat, `qmod -sj` and `qdel`; no ssh master
/// connection (`ControlMaster`) exists, detached or not. With the builtin client (the
/// default) that connection is a TCP connection of `sched_d` itself: no ssh process at all.
#[test]
fn each_host_has_one_builtin_ssh_connection_in_sched_d_carrying_qdel_and_suspension_and_no_ssh_process()
 {
    one_connection_per_host(
        "each_host_has_one_builtin_ssh_connection_in_sched_d_carrying_qdel_and_suspension_and_no_ssh_process",
        false,
    );
}

/// [`each_host_has_one_builtin_ssh_connection_in_sched_d_carrying_qdel_and_suspension_and_no_ssh_process`]
/// with `ssh_client: openssh`: one OpenSSH client process below `sched_d` per host.
#[test]
fn with_ssh_client_openssh_each_host_has_one_ssh_session_below_sched_d_and_no_master() {
    one_connection_per_host(
        "with_ssh_client_openssh_each_host_has_one_ssh_session_below_sched_d_and_no_master",
        true,
    );
}

fn one_connection_per_host(test: &str, openssh: bool) {
    let Some(user) = user1() else {
        return skip(test, "needs root");
    };
    let Some(cluster) = Cluster::start(test, 3) else {
        return;
    };
    let cell = if openssh {
        let hosts = cluster
            .hosts_yaml(2)
            .replace("method: ssh,", "method: ssh, ssh_client: openssh,");
        let names = cluster.names_yaml();
        TestCell::with_config(|_| {
            format!(
                "{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
                 queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
                 scheduler: {{policy: sge}}\n"
            )
        })
    } else {
        cluster_cell(&cluster, 2)
    };
    let d = SchedD::start(&cell, &[]);
    // One job on each host, each its own `sleep` to find it by.
    let mut ids = Vec::new();
    for (i, h) in cluster.hosts.iter().enumerate() {
        let script = format!("hang{i}.sh");
        cell.write_file(&user, &script, &format!("#!/bin/sh\nexec sleep 613{i}\n"));
        ids.push(qsub(
            &cell,
            &user,
            &["-terse", "-cwd", "-l", &format!("h={}", h.name), &script],
        ));
    }
    for (i, id) in ids.iter().enumerate() {
        wait_for(&format!("job {id} runs"), Duration::from_secs(60), || {
            state_of(&format!("sleep 613{i}")).is_some()
        });
    }
    let ssh_processes = || -> (std::collections::BTreeMap<String, usize>, Vec<String>) {
        let all = processes();
        // Below sched_d: its descendants.
        let mut below = BTreeSet::from([d.pid()]);
        loop {
            let before = below.len();
            for (pid, ppid, ..) in &all {
                if below.contains(ppid) {
                    below.insert(*pid);
                }
            }
            if below.len() == before {
                break;
            }
        }
        let mut per_host = std::collections::BTreeMap::new();
        let mut masters = Vec::new();
        for (pid, _, comm, words) in &all {
            if comm != "ssh" {
                continue;
            }
            let line = words.join(" ");
            if line.contains("[mux]")
                || line.contains("ControlMaster=yes")
                || line.contains("ControlMaster=auto")
            {
                masters.push(format!("{pid}: {line}"));
            }
            if below.contains(pid) {
                let host = cluster
                    .hosts
                    .iter()
                    .find(|h| words.iter().any(|w| w == &h.address))
                    .map_or_else(|| format!("? {line}"), |h| h.name.clone());
                *per_host.entry(host).or_insert(0) += 1;
            }
        }
        (per_host, masters)
    };
    let one_each: std::collections::BTreeMap<String, usize> =
        cluster.hosts.iter().map(|h| (h.name.clone(), 1)).collect();
    let one_connection_each: std::collections::BTreeMap<String, usize> = cluster
        .hosts
        .iter()
        .map(|h| (h.address.clone(), 1))
        .collect();
    let check = || {
        let (per_host, masters) = ssh_processes();
        assert!(masters.is_empty(), "ssh master connections: {masters:?}");
        if openssh {
            assert_eq!(per_host, one_each, "ssh processes below sched_d, by host");
        } else {
            assert!(
                per_host.is_empty(),
                "ssh processes below sched_d: {per_host:?}"
            );
            assert_eq!(
                ssh_connections_of(d.pid()),
                one_connection_each,
                "sched_d's ssh connections, by host address"
            );
        }
    };
    check();

    // Suspension and its end, then qdel, reach the job through that session.
    let suspended = |stopped: bool| state_of("sleep 6130").is_some_and(|s| (s == 'T') == stopped);
    for (option, stopped) in [("-sj", true), ("-usj", false)] {
        let run = cell.run(&user, "qmod", &[option, &ids[0].to_string()]);
        assert_eq!(run.code, 0, "{run:?}");
        wait_for(
            &format!("qmod {option} {}", ids[0]),
            Duration::from_secs(30),
            || suspended(stopped),
        );
    }
    let run = cell.run(&user, "qdel", &[&ids[1].to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the deleted job accounted", Duration::from_secs(30), || {
        !crate::sched::accounting_records(&cell, gridspool::model::JobId(ids[1])).is_empty()
    });
    let record = &crate::sched::accounting_records(&cell, gridspool::model::JobId(ids[1]))[0];
    assert_eq!(
        (record[1].as_str(), record[11].as_str(), record[12].as_str()),
        (cluster.hosts[1].name.as_str(), "100", "137"),
        "{record:?}"
    );
    assert!(state_of("sleep 6131").is_none());
    check();
    for (i, id) in ids.iter().enumerate() {
        if i != 1 {
            assert_eq!(cell.run(&user, "qdel", &[&id.to_string()]).code, 0);
        }
    }
}
