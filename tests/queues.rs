//! The queue model as SGE has it (issue 25): per-host and per-host-group queue values, host
//! groups and a host's slots, against the oracle's captures `tests/compat/*/i25-*.txt`
//! (recorded by `tests/compat/record-issue25-queues.sh`), replayed in their order on a
//! gridspool cell made like the oracle's.

use crate::support::*;

/// The oracle's cell: this host (no slots of its own, as SGE's), `@allhosts`, `all.q` with
/// 2 slots and the PEs make, smp and mpi.
fn oracle_cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\"}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, pe_list: [make, smp, mpi]}}\n\
             parallel_environments:\n\
             \x20 - {{name: make, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: mpi, slots: 999, allocation_rule: $fill_up}}\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// The recording's scratch directory (`/tmp/issue25q-cap.XXXXXX/`) as it appears in a
/// capture, replaced by `dir`.
fn with_files(text: &str, dir: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("/tmp/issue25q-cap.") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + "/tmp/issue25q-cap.".len()..];
        let end = tail.find('/').map_or(tail.len(), |e| e + 1);
        out.push_str(dir);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Runs capture `case` (`qconf/i25-NAME`) as `user` with its files under `files`, and
/// compares; `patch` adjusts what is expected (a divergence of DIVERGENCES.md).
fn replay(
    cell: &TestCell,
    user: &TestUser,
    case: &str,
    files: &std::path::Path,
    patch: impl Fn(&mut Capture),
) {
    let mut cap = Capture::load(&format!("{case}.txt"));
    let dir = format!("{}/", files.display());
    for text in [&mut cap.command, &mut cap.stdout, &mut cap.stderr] {
        *text = with_files(text, &dir);
    }
    patch(&mut cap);
    replay_capture(cell, user, &cap);
}

fn same(_: &mut Capture) {}

#[test]
fn per_host_queue_values_and_host_groups_as_sge_shows_and_changes_them() {
    let Some(root) = root() else {
        return skip("per_host_queue_values", "needs root (a manager)");
    };
    let cell = oracle_cell();
    let files = tempfile::tempdir().expect("tempdir");
    let write =
        |name: &str, text: &str| std::fs::write(files.path().join(name), text).expect("write");
    let host = gridspool::identity::short_hostname();
    write("hgrp-q25", &format!("group_name @q25\nhostlist {host}\n"));
    write("hgrp-q25top", "group_name @q25top\nhostlist @q25\n");
    write("hgrp-q25b", &format!("group_name @q25b\nhostlist {host}\n"));
    write("hgrp-q25-nosuch", "group_name @q25x\nhostlist nosuchhost\n");
    // The script's fixed queue text is gridspool's -sq of all.q renamed.
    let allq = cell.run(&root, "qconf", &["-sq", "all.q"]);
    assert_eq!(allq.code, 0, "{allq:?}");
    let with = |text: &str, key: &str, value: &str| -> String {
        text.lines()
            .map(|l| {
                if l.split_whitespace().next() == Some(key) {
                    format!("{key:<22}{value}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect()
    };
    let q25 = with(
        &with(&with(&allq.stdout, "qname", "q25.q"), "hostlist", "@q25"),
        "slots",
        "1",
    );
    write("q25.q", &q25);
    write(
        "q25-nosuchgroup",
        &with(&q25, "slots", "1,[@nosuchgroup=2]"),
    );
    write(
        "q25-badvalue",
        &with(&q25, "slots", &format!("1,[{host}=x]")),
    );
    write(
        "q25-overrides",
        &with(
            &with(
                &with(&q25, "slots", &format!("1,[{host}=2],[@q25=3]")),
                "h_rt",
                &format!("1:00:00,[{host}=2:00:00]"),
            ),
            "pe_list",
            &format!("make smp mpi,[{host}=smp]"),
        ),
    );
    for case in [
        "Ahgrp-q25",
        "Ahgrp-q25top",
        "Ahgrp-again",
        "Ahgrp-nosuch-host",
        "shgrp-q25top",
        "shgrp_tree-q25top",
        "shgrp_resolved-q25top",
        "shgrp_tree-nosuch",
        "shgrp_resolved-nosuch",
        "mhgrp-editor-true",
        "Mhgrp-q25",
        "ahgrp-editor-true",
        "Aq-q25",
        "mattr-q25-instance",
        "mattr-q25-group",
        "sq-q25-slots",
        "mattr-q25-default",
        "sq-q25-after-default",
        "sq-q25-instance",
        "mattr-q25-hrt-instance",
        "aattr-q25-pe-instance",
        "aattr-q25-pe-group",
        "dattr-q25-pe-instance",
        "mattr-q25-cv-instance",
        "mattr-q25-prolog-long",
        "mattr-q25-prolog-long2",
        "sq-q25-many",
        "sq-q25-many-instance",
        "mattr-q25-nosuch-group",
        "mattr-q25-qname-instance",
        "purge-q25-instance",
        "purge-q25-again",
        "purge-q25-group",
        "purge-q25-cqueue",
        "purge-q25-star",
    ] {
        replay(
            &cell,
            &root,
            &format!("qconf/i25-{case}"),
            files.path(),
            same,
        );
    }
    // gridspool writes no temporary file for -mattr (DIVERGENCES.md).
    replay(
        &cell,
        &root,
        "qconf/i25-mattr-q25-bad-value",
        files.path(),
        |c| c.stderr = c.stderr.lines().take(2).map(|l| format!("{l}\n")).collect(),
    );
    // A value for a host that is not an execution host is refused (SGE keeps it).
    let run = cell.run(
        &root,
        "qconf",
        &["-mattr", "queue", "slots", "3", "q25.q@nosuchhost"],
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "Did not modify \"slots\" for host \"nosuchhost\" which is not an execution host.\n"
        ),
        "{run:?}"
    );
    replay(
        &cell,
        &root,
        "qconf/i25-sq-q25-after-purge",
        files.path(),
        |c| {
            c.stdout = c.stdout.replace("4,[nosuchhost=3]", "4");
        },
    );
    for case in ["Mq-q25-nosuchgroup", "Mq-q25-badvalue"] {
        replay(
            &cell,
            &root,
            &format!("qconf/i25-{case}"),
            files.path(),
            same,
        );
    }
    // Two host groups of one host giving one attribute different values: SGE takes the
    // queue and marks the instance ambiguous; gridspool refuses it.
    let run = cell.run(
        &root,
        "qconf",
        &[
            "-Ahgrp",
            &files.path().join("hgrp-q25b").display().to_string(),
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    write(
        "q25-twogroups",
        &with(&q25, "slots", "1,[@q25=2],[@q25b=3]"),
    );
    let run = cell.run(
        &root,
        "qconf",
        &[
            "-Mq",
            &files.path().join("q25-twogroups").display().to_string(),
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "host {host} is in host groups @q25 and @q25b, which give slots different values"
        )),
        "{run:?}"
    );
    let run = cell.run(&root, "qconf", &["-dhgrp", "@q25b"]);
    assert_eq!(run.code, 0, "{run:?}");
    for case in [
        "Mq-q25-overrides",
        "sq-q25-overrides",
        "dhgrp-referenced",
        "dq-q25",
        "dhgrp-q25top",
        "dhgrp-q25",
        "dhgrp-nosuch",
        "mattr-exechost-slots",
    ] {
        replay(
            &cell,
            &root,
            &format!("qconf/i25-{case}"),
            files.path(),
            same,
        );
    }
    // `qconf -se vm | grep -v …`: the host's own lines, without its load.
    let se = cell.run(&root, "qconf", &["-se", &host]);
    let cap = Capture::load("qconf/i25-se-slots.txt");
    let own: String = se
        .stdout
        .lines()
        .filter(|l| {
            !l.starts_with(' ') && !l.starts_with("load_values") && !l.starts_with("processors")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(own, cap.stdout.replace("vm", &host));
    replay(
        &cell,
        &root,
        "qconf/i25-dattr-exechost-slots",
        files.path(),
        same,
    );
}

/// Issue 25: on a host of two CPUs, with the configuration `sched_d --init` writes (SGE's
/// install: all.q with as many slots as CPUs, no cap of the host's own), raising all.q's
/// slots to 3 starts a third job at once, as in SGE.
#[test]
fn raising_a_queues_slots_starts_a_third_job_on_a_host_of_two_cpus() {
    let Some(root) = root() else {
        return skip(
            "raising_a_queues_slots_starts_a_third_job",
            "qconf changes need a manager (root)",
        );
    };
    use crate::sched::{SchedD, cwd, state, submit, wait_for, workdir};
    use std::time::Duration;
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        gridspool::config::ClusterConfig::default_text(&host, 2)
            .replace("tmpdir: /tmp", "tmpdir: \"{{tmpdir}}\"")
    });
    let se = cell.run(&root, "qconf", &["-se", &host]);
    assert!(
        se.stdout.contains("complex_values        NONE\n"),
        "no cap of the host's own: {se:?}"
    );
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let jobs: Vec<_> = (0..3)
        .map(|_| submit(&cell.spool, "sleep 60\n", |s, _| s.cwd = cwd(&dir)))
        .collect();
    let running = |id| state(&cell.spool, id).is_some_and(|s| !s.tasks.running.is_empty());
    wait_for("two jobs run", Duration::from_secs(20), || {
        running(jobs[0]) && running(jobs[1])
    });
    wait_for("the third job's verdict", Duration::from_secs(20), || {
        state(&cell.spool, jobs[2]).is_some_and(|s| !s.pending_reasons.is_empty())
    });
    assert!(!running(jobs[2]), "all.q has two slots");
    let run = cell.run(&root, "qconf", &["-mattr", "queue", "slots", "3", "all.q"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the third job runs", Duration::from_secs(20), || {
        running(jobs[2])
    });
    let qstat = cell.run(&root, "qstat", &["-f"]);
    assert!(
        qstat.stdout.contains("0/3/3"),
        "all.q@{host} full with three: {qstat:?}"
    );
    let run = cell.run(&root, "qdel", &["-u", "*"]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// A `slots=N` in a host's complex_values bounds all its queue instances together, and
/// `qconf -se` shows it; an older configuration's `hosts[].slots` does the same and shows
/// the same.
#[test]
fn a_hosts_slots_bound_its_queue_instances_only_where_the_administrator_says() {
    let Some(root) = root() else {
        return skip("a_hosts_slots_bound", "qconf changes need a manager (root)");
    };
    use crate::sched::{SchedD, cwd, state, submit, wait_for, workdir};
    use std::time::Duration;
    let host = gridspool::identity::short_hostname();
    // Two queues of two slots each on one host capped at three (the old way).
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 3}}\n\
             queues:\n  - {{name: a.q, hostlist: [\"{host}\"], slots: 2, tmpdir: \"{{{{tmpdir}}}}\"}}\n\
             \x20 - {{name: b.q, hostlist: [\"{host}\"], slots: 2, tmpdir: \"{{{{tmpdir}}}}\"}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let se = cell.run(&root, "qconf", &["-se", &host]);
    assert!(
        se.stdout.contains("complex_values        slots=3\n"),
        "{se:?}"
    );
    let dir = workdir(&cell);
    let _d = SchedD::start(&cell, &[]);
    let jobs: Vec<_> = (0..4)
        .map(|_| submit(&cell.spool, "sleep 60\n", |s, _| s.cwd = cwd(&dir)))
        .collect();
    let running = |id| state(&cell.spool, id).is_some_and(|s| !s.tasks.running.is_empty());
    let count = || jobs.iter().filter(|&&j| running(j)).count();
    wait_for("three jobs run", Duration::from_secs(20), || count() == 3);
    wait_for("the fourth job's verdict", Duration::from_secs(20), || {
        jobs.iter()
            .any(|&j| state(&cell.spool, j).is_some_and(|s| !s.pending_reasons.is_empty()))
    });
    assert_eq!(count(), 3, "the host's slots=3 holds");
    // The cap raised through the host's complex_values: the old key moves there.
    let run = cell.run(
        &root,
        "qconf",
        &["-mattr", "exechost", "complex_values", "slots=4", &host],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let config = std::fs::read_to_string(cell.cell.join("config.yaml")).expect("config");
    assert!(!config.contains("slots: 3"), "{config}");
    wait_for("the fourth job runs", Duration::from_secs(20), || {
        count() == 4
    });
    let se = cell.run(&root, "qconf", &["-se", &host]);
    assert!(
        se.stdout.contains("complex_values        slots=4\n"),
        "{se:?}"
    );
    let run = cell.run(&root, "qdel", &["-u", "*"]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// `-q queue@@group` and `-q '*@@group'` (host groups resolved through subgroups) in
/// qselect, qstat, qmod and qsub, as the oracle answers them.
#[test]
fn host_groups_select_queue_instances_as_sge_does() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip("host_groups_select", "needs root and the test users");
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\"}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n  \"@q25\": [\"{host}\"]\n  \"@q25top\": [\"@q25\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
             \x20 - {{name: q25.q, hostlist: [\"@q25\"], slots: 1, per_host: {{\"@q25\": {{slots: 2, pe_list: [smp]}}}}}}\n\
             parallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    });
    let files = tempfile::tempdir().expect("tempdir");
    // qmod's changes are sched_d's to make.
    let _d = crate::sched::SchedD::start(&cell, &[]);
    for case in [
        "qselect/i25-q-group",
        "qselect/i25-q-star-group",
        "qsub/i25-q-nosuch-group",
    ] {
        replay(&cell, &user, case, files.path(), same);
    }
    // The load column is this host's load now.
    let run = cell.run(&user, "qstat", &["-f", "-q", "q25.q@@q25"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with(&format!("{:<31}BIP   0/0/2", format!("q25.q@{host}")))),
        "{run:?}"
    );
    // -pe selects by each instance's own pe_list.
    let run = cell.run(&user, "qstat", &["-f", "-pe", "smp"]);
    let names: Vec<&str> = run
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, [format!("q25.q@{host}")], "{run:?}");
    // Each change seen (`qselect -qs d`) before the next.
    let disabled = || {
        let run = cell.run(&root, "qselect", &["-qs", "d"]);
        run.stdout.lines().count()
    };
    for (case, count) in [
        ("qmod/i25-d-group", 1),
        ("qmod/i25-e-group", 0),
        ("qmod/i25-d-star-group", 2),
        ("qmod/i25-e-star-group", 0),
        ("qmod/i25-d-nosuch-group", 0),
    ] {
        replay(&cell, &root, case, files.path(), same);
        crate::sched::wait_for(case, std::time::Duration::from_secs(10), || {
            disabled() == count
        });
    }
    // The oracle's job number is this cell's first.
    let oracle_job = |c: &Capture| {
        c.stdout
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_string()
    };
    let qsub_job = oracle_job(&Capture::load("qsub/i25-q-group.txt"));
    let as_first = |c: &mut Capture| {
        for text in [&mut c.command, &mut c.stdout] {
            *text = text.replace(&qsub_job, "1");
        }
    };
    replay(&cell, &user, "qsub/i25-q-group", files.path(), as_first);
    let run = cell.run(&user, "qstat", &["-j", "1"]);
    assert!(
        run.stdout
            .contains("hard_queue_list:            q25.q@@q25\n"),
        "{run:?}"
    );
    for case in ["qalter/i25-q-star-group", "qalter/i25-q-nosuch-group"] {
        replay(&cell, &user, case, files.path(), as_first);
    }
    let run = cell.run(&user, "qstat", &["-j", "1"]);
    let lines: String = run
        .stdout
        .lines()
        .filter(|l| l.contains("queue_list"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(lines, Capture::load("qstat/i25-j-q-star-group.txt").stdout);
}
