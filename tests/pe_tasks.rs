//! `qrsh -inherit` (tight integration) on the namespace cluster: a parallel job's script
//! starts commands on its granted hosts as `mpirun` does, each a pe task with its own
//! accounting record; hosts it was not granted, slots it does not have, a PE without
//! `control_slaves` and another user are refused with SGE's words; `qmod -sj`/`-usj` of the
//! job stop and continue its pe tasks on the other hosts, and `qdel` ends them.

use crate::cluster::{output, qsub};
use crate::sched::{SchedD, accounting_records, wait_for};
use crate::support::cluster::Cluster;
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

/// Three hosts of one slot each; `mpi` controls its slaves, `loose` does not. A TMPDIR of
/// its own: the hosts share the file system, and other cells run jobs of the same ids.
fn cell(cluster: &Cluster) -> TestCell {
    let hosts = cluster.hosts_yaml(1);
    let names = cluster.names_yaml();
    TestCell::with_config(|_| {
        format!(
            "{hosts}hostgroups:\n  \"@allhosts\": {names}\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 1, pe_list: [mpi, loose], tmpdir: \"{{{{tmpdir}}}}\"}}\n\
             parallel_environments:\n  - {{name: mpi, slots: 999, allocation_rule: $round_robin, control_slaves: true, job_is_first_task: true}}\n\
             \x20 - {{name: loose, slots: 999, allocation_rule: $round_robin}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// The output of job `id` once its master task is accounted (its pe tasks' records come
/// before it).
fn master_output(cell: &TestCell, user: &TestUser, name: &str, id: u32) -> String {
    wait_for(
        &format!("job {id}'s master task accounted"),
        Duration::from_secs(60),
        || {
            accounting_records(cell, JobId(id))
                .iter()
                .any(|f| f[41] == "NONE")
        },
    );
    output(cell, user, name, id)
}

/// What `mpirun` does under SGE: one command per other granted host through `qrsh -inherit`.
const SCRIPT: &str = r#"#!/bin/sh
master=$(hostname)
other=$(awk -v m="$master" '$1 != m {print $1; exit}' "$PE_HOSTFILE")
spare=$(for h in node01 node02 node03; do grep -q "^$h " "$PE_HOSTFILE" || echo $h; done)
echo "master $master other $other"
out=$(echo piped | QRSH -inherit $other 'echo "$(hostname) $JOB_ID $(cat)"; exit 5')
echo "slave: $out status $?"
QRSH -inherit -nostdin -noshell $other /bin/sh -c 'exit 0'
echo "noshell: $?"
QRSH -inherit -nostdin $spare hostname 2>err.spare
echo "spare: $? $(cat err.spare)"
QRSH -inherit -nostdin $master hostname 2>err.master
echo "master: $? $(cat err.master)"
"#;

#[test]
fn qrsh_inherit_starts_pe_tasks_on_granted_hosts_only() {
    const TEST: &str = "qrsh_inherit_starts_pe_tasks_on_granted_hosts_only";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 3) else {
        return;
    };
    let cell = cell(&cluster);
    let _d = SchedD::start(&cell, &[]);
    let qrsh = client_path("qrsh").to_string_lossy().into_owned();
    cell.write_file(&user, "mpi.sh", &SCRIPT.replace("QRSH", &qrsh));
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-pe", "mpi", "2", "mpi.sh"],
    );
    let out = master_output(&cell, &user, "mpi.sh", id);
    let mut lines = out.lines();
    let head: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let (master, other) = (head[1], head[3]);
    assert_ne!(master, other, "{out}");
    let rest: Vec<&str> = lines.collect();
    let errors = std::fs::read_to_string(cell.workdir(&user).join(format!("mpi.sh.e{id}")))
        .unwrap_or_default();
    assert_eq!(
        rest[..2],
        [
            format!("slave: {other} {id} piped status 5").as_str(),
            "noshell: 0"
        ],
        "{out}{errors}"
    );
    // A host the job was not granted, and the master's host whose one slot is the master
    // task's own (job_is_first_task): SGE's execd refuses both so.
    let refusal = |host: &str| {
        format!(
            "1 error: executing task of job {id} failed: no free queue for job {id} of user {}@{master} (localhost = {host})",
            user.name
        )
    };
    let spare = ["node01", "node02", "node03"]
        .into_iter()
        .find(|h| *h != master && *h != other)
        .unwrap_or_default();
    assert_eq!(rest[2], format!("spare: {}", refusal(spare)), "{out}");
    assert_eq!(rest[3], format!("master: {}", refusal(master)), "{out}");
    // The master task's record and one per pe task, named as SGE names them.
    let records = accounting_records(&cell, JobId(id));
    let mut pe_tasks: Vec<(String, String, String)> = records
        .iter()
        .map(|f| (f[41].clone(), f[1].clone(), f[12].clone()))
        .collect();
    pe_tasks.sort();
    assert_eq!(
        pe_tasks,
        [
            (format!("1.{other}"), other.to_string(), "5".to_string()),
            (format!("2.{other}"), other.to_string(), "0".to_string()),
            ("NONE".to_string(), master.to_string(), "0".to_string()),
        ],
        "{records:?}"
    );
    let qacct = cell.run(&user, "qacct", &["-j", &id.to_string()]);
    assert_eq!(qacct.stdout.matches("jobnumber").count(), 3, "{qacct:?}");
}

#[test]
fn qrsh_inherit_is_refused_without_control_slaves_and_outside_a_job() {
    const TEST: &str = "qrsh_inherit_is_refused_without_control_slaves_and_outside_a_job";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    let cell = cell(&cluster);
    let _d = SchedD::start(&cell, &[]);
    let run = cell.run(&user, "qrsh", &["-inherit", "node02", "hostname"]);
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment\n",
            1
        ),
        "{run:?}"
    );
    let qrsh = client_path("qrsh").to_string_lossy().into_owned();
    cell.write_file(
        &user,
        "loose.sh",
        &format!(
            "#!/bin/sh\nother=$(awk -v m=$(hostname) '$1 != m {{print $1; exit}}' \"$PE_HOSTFILE\")\n{qrsh} -inherit -nostdin $other hostname\necho \"status $?\"\n"
        ),
    );
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-pe", "loose", "2", "loose.sh"],
    );
    assert_eq!(master_output(&cell, &user, "loose.sh", id), "status 1\n");
    let errors = std::fs::read_to_string(cell.workdir(&user).join(format!("loose.sh.e{id}")))
        .unwrap_or_default();
    assert_eq!(
        errors,
        format!(
            "error: executing task of job {id} failed: received task belongs to job {id} but that job is not suited for starting tasks\n"
        )
    );
    // Another user's job: the request names it, sched_d refuses it by the caller's uid.
    let Some(other_user) = user2() else {
        return skip(TEST, "needs the second test user");
    };
    cell.write_file(&user, "long.sh", "#!/bin/sh\nsleep 60\n");
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-pe", "mpi", "2", "long.sh"],
    );
    wait_for("the job runs", Duration::from_secs(30), || {
        cell.run(&user, "qstat", &[]).stdout.contains(" r ")
    });
    let mut command = cell.command("qrsh", &other_user);
    command
        .env("JOB_ID", id.to_string())
        .env("SGE_TASK_ID", "undefined")
        .args(["-inherit", "-nostdin", "node01", "hostname"]);
    let run = Run::from(command.output().expect("qrsh"));
    assert_eq!(
        (run.stderr.as_str(), run.code),
        (
            format!(
                "error: executing task of job {id} failed: denied request of user \"{}\" to start a PE task in job of user \"{}\"\n",
                other_user.name, user.name
            )
            .as_str(),
            1
        ),
        "{run:?}"
    );
    let _ = cell.run(&user, "qdel", &[&id.to_string()]);
}

#[test]
fn qmod_and_qdel_of_a_parallel_job_reach_its_pe_tasks_on_other_hosts() {
    const TEST: &str = "qmod_and_qdel_of_a_parallel_job_reach_its_pe_tasks_on_other_hosts";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    let cell = cell(&cluster);
    let _d = SchedD::start(&cell, &[]);
    let qrsh = client_path("qrsh").to_string_lossy().into_owned();
    // A number no other test sleeps for: the slave's process is found by it.
    cell.write_file(
        &user,
        "hang.sh",
        &format!(
            "#!/bin/sh\nother=$(awk -v m=$(hostname) '$1 != m {{print $1; exit}}' \"$PE_HOSTFILE\")\n{qrsh} -inherit -nostdin $other sleep 6127 &\nwait\n"
        ),
    );
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-pe", "mpi", "2", "hang.sh"],
    );
    let slave_running = || {
        std::process::Command::new("pgrep")
            .args(["-f", "^sleep 6127$"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    wait_for("the pe task runs", Duration::from_secs(30), slave_running);
    // `qmod -sj` stops the pe task on its host with the job, `-usj` continues it (the
    // namespace hosts share the process table: its state is read here).
    let slave_state = || {
        let pid = std::process::Command::new("pgrep")
            .args(["-f", "^sleep 6127$"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|t| t.lines().next().map(str::to_string))
            .unwrap_or_default();
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| t.rsplit_once(") ").map(|(_, rest)| rest.chars().next()))
            .flatten()
    };
    for (option, stopped) in [("-sj", true), ("-usj", false)] {
        let run = cell.run(&user, "qmod", &[option, &id.to_string()]);
        assert_eq!(run.code, 0, "{run:?}");
        wait_for(
            &format!("qmod {option} reaches the pe task"),
            Duration::from_secs(30),
            || (slave_state() == Some('T')) == stopped,
        );
    }
    let run = cell.run(&user, "qdel", &[&id.to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("the pe task is killed", Duration::from_secs(30), || {
        !slave_running()
    });
    wait_for("both ends accounted", Duration::from_secs(30), || {
        accounting_records(&cell, JobId(id)).len() == 2
    });
    let records = accounting_records(&cell, JobId(id));
    let pe_task = records
        .iter()
        .find(|f| f[41] != "NONE")
        .expect("the pe task's record");
    // Killed as by qdel: SGE's "assumedly after job", SIGKILL.
    assert_eq!(
        (pe_task[11].as_str(), pe_task[12].as_str()),
        ("100", "137"),
        "{records:?}"
    );
}

/// Open MPI's own gridengine support (Debian's `openmpi-bin`): `mpirun` in a job reads
/// `PE_HOSTFILE` and starts its daemon on the other host with `qrsh -inherit -nostdin -V
/// host orted …` (the `qrsh` of `PATH`, as `settings.sh` sets it, else
/// `$SGE_ROOT/bin/$ARC/qrsh`); the ranks' output comes back through it.
#[test]
fn open_mpi_starts_its_ranks_through_qrsh_inherit() {
    const TEST: &str = "open_mpi_starts_its_ranks_through_qrsh_inherit";
    let Some(user) = user1() else {
        return skip(TEST, "needs root");
    };
    let Some(mpirun) = ["/usr/bin/mpirun"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        return skip(TEST, "Open MPI (openmpi-bin) is not installed");
    };
    let Some(cluster) = Cluster::start(TEST, 2) else {
        return;
    };
    let cell = cell(&cluster);
    // Where Open MPI looks for qrsh, as an SGE installation has it.
    let arch_bin = cell.root.join("bin/lx-amd64");
    std::fs::create_dir_all(&arch_bin).expect("bin dir");
    std::os::unix::fs::symlink(client_path("qrsh"), arch_bin.join("qrsh")).expect("link");
    let _d = SchedD::start(&cell, &[]);
    cell.write_file(
        &user,
        "mpi.sh",
        &format!("#!/bin/sh\nexport PATH=$SGE_ROOT/bin/lx-amd64:$PATH\n{mpirun} -np 2 hostname 2>&1 | sort\necho \"status $?\"\n"),
    );
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-pe", "mpi", "2", "mpi.sh"],
    );
    let out = master_output(&cell, &user, "mpi.sh", id);
    // Through a pipe that qrsh's standard error shares (a `splice` from the daemon's socket
    // into it held the pipe's lock and blocked mpirun's own writes).
    assert_eq!(out, "node01\nnode02\nstatus 0\n");
    // orted ran as a pe task of the job, accounted as such.
    let records = accounting_records(&cell, JobId(id));
    assert!(
        records.iter().any(|f| f[41].starts_with("1.node0")),
        "{records:?}"
    );
}
