//! `sched_d`'s builtin ssh client (issue 27) reaching namespace hosts as OpenSSH would in batch
//! mode: the identities the host's options name, and a host key checked against known_hosts,
//! an unknown one refused with the reason in the log and the host unknown to the user.

use crate::cluster::{processes, qsub, ssh_connections_of};
use crate::host_failure::qi_states;
use crate::sched::{SchedD, wait_for};
use crate::support::cluster::Cluster;
use crate::support::*;
use std::time::Duration;

/// The value of the quoted option word that starts with `prefix` in a hosts line.
fn option_value(line: &str, prefix: &str) -> String {
    let start = line.find(prefix).expect("option") + prefix.len();
    line[start..].split('"').next().expect("value").to_string()
}

/// The ssh processes that are descendants of `pid`.
fn ssh_processes_below(pid: u32) -> Vec<String> {
    let all = processes();
    let mut below = std::collections::BTreeSet::from([pid]);
    loop {
        let before = below.len();
        for (p, ppid, ..) in &all {
            if below.contains(ppid) {
                below.insert(*p);
            }
        }
        if below.len() == before {
            break;
        }
    }
    all.iter()
        .filter(|(p, _, comm, _)| comm == "ssh" && below.contains(p))
        .map(|(p, _, _, words)| format!("{p}: {}", words.join(" ")))
        .collect()
}

#[test]
fn a_host_whose_key_is_not_in_known_hosts_is_refused_says_so_and_goes_unknown() {
    const TEST: &str = "a_host_whose_key_is_not_in_known_hosts_is_refused_says_so_and_goes_unknown";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    let hosts = cluster.hosts_yaml(1);
    let known_hosts = option_value(&hosts, "UserKnownHostsFile=");
    let stranger = &cluster.hosts[1];
    // node02 is checked against a known_hosts file without its key.
    let partial = std::path::Path::new(&known_hosts).with_file_name("known_hosts_partial");
    let kept: String = std::fs::read_to_string(&known_hosts)
        .expect("known_hosts")
        .lines()
        .filter(|l| l.split_whitespace().next() != Some(stranger.address.as_str()))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&partial, kept).expect("partial known_hosts");
    let hosts: String = hosts
        .lines()
        .map(|l| {
            if l.contains(&format!("{{name: {},", stranger.name)) {
                l.replace(&known_hosts, &partial.display().to_string())
            } else {
                l.to_string()
            }
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let names = cluster.names_yaml();
    let cell = TestCell::with_config(|_| {
        format!(
            "max_unheard: \"0:0:2\"\n{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 1}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let d = SchedD::start(&cell, &[]);
    let refusal = format!(
        "no host key is known for {} (ssh-ed25519 SHA256:",
        stranger.address
    );
    d.wait_for("the refusal logged", Duration::from_secs(30), || {
        d.log_text().contains(&refusal)
    });
    let qi = format!("all.q@{}", stranger.name);
    d.wait_for(&format!("{qi} unknown"), Duration::from_secs(30), || {
        qi_states(&cell, &user, &qi) == "au"
    });
    // The host whose key is known takes the work; the stranger none.
    cell.write_file(&user, "where.sh", "#!/bin/sh\nhostname\n");
    let id = qsub(&cell, &user, &["-terse", "-cwd", "where.sh"]);
    let out = crate::cluster::output(&cell, &user, "where.sh", id);
    assert_eq!(out.trim(), cluster.hosts[0].name);
    assert_eq!(qi_states(&cell, &user, &qi), "au");
}

#[test]
fn the_identity_files_a_host_names_are_tried_in_turn_by_the_builtin_client() {
    const TEST: &str = "the_identity_files_a_host_names_are_tried_in_turn_by_the_builtin_client";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    // `-i` names a key the hosts do not accept, `IdentityFile` the one they do.
    let yaml = cluster.hosts_yaml(1);
    let key = option_value(&yaml, "\"-i\", \"");
    let keys = tempfile::tempdir().expect("tempdir");
    let wrong = keys.path().join("not_authorized");
    crate::support::sshd::keygen(&wrong);
    let hosts = yaml.replace(
        &format!("\"-i\", \"{key}\""),
        &format!(
            "\"-i\", \"{}\", \"-o\", \"IdentityFile={key}\"",
            wrong.display()
        ),
    );
    assert_ne!(hosts, yaml);
    let names = cluster.names_yaml();
    let cell = TestCell::with_config(|_| {
        format!(
            "{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 1}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let d = SchedD::start(&cell, &[]);
    cell.write_file(&user, "hang.sh", "#!/bin/sh\nexec sleep 6140\n");
    let ids: Vec<u32> = cluster
        .hosts
        .iter()
        .map(|h| {
            qsub(
                &cell,
                &user,
                &["-terse", "-cwd", "-l", &format!("h={}", h.name), "hang.sh"],
            )
        })
        .collect();
    wait_for("both jobs run", Duration::from_secs(60), || {
        processes()
            .iter()
            .filter(|(.., words)| words.join(" ") == "sleep 6140")
            .count()
            == 2
    });
    assert_eq!(ssh_processes_below(d.pid()), Vec::<String>::new());
    let connections = ssh_connections_of(d.pid());
    for h in &cluster.hosts {
        assert_eq!(connections.get(&h.address), Some(&1), "{connections:?}");
    }
    for id in ids {
        assert_eq!(cell.run(&user, "qdel", &[&id.to_string()]).code, 0);
    }
}
