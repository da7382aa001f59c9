//! Tasks in cgroups of their own (`launch::cgroup`), where this machine has a cgroup v2
//! hierarchy and the tests run as root: a job over its memory limit is killed by the kernel
//! and accounted as SGE accounts a job killed for its limits; `qdel` kills what left the
//! job's process group; the CPU time of processes nobody waited for is counted.

use crate::qrsh::cell;
use crate::sched::{SchedD, accounting_records, wait_for};
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

/// How this machine confines tasks; `None` (the test skipped, saying why) when not with
/// cgroups, or without a memory controller if `memory` is needed.
fn confinement(test: &str, memory: bool) -> Option<String> {
    if !is_root() {
        skip(test, "needs root to create cgroups");
        return None;
    }
    let policy = gridspool::config::CgroupPolicy {
        parent: "gridspool".into(),
        cpu_quota: false,
    };
    let how = gridspool::launch::describe_cgroups(Some(&policy));
    if !how.starts_with("cgroups v2") || (memory && how.contains("no memory controller")) {
        skip(test, &format!("this machine: {how}"));
        return None;
    }
    Some(how)
}

fn record(cell: &TestCell, id: u32) -> Vec<String> {
    wait_for(
        &format!("job {id} accounted"),
        Duration::from_secs(60),
        || !accounting_records(cell, JobId(id)).is_empty(),
    );
    accounting_records(cell, JobId(id)).remove(0)
}

fn qsub(cell: &TestCell, user: &TestUser, args: &[&str]) -> u32 {
    let run = cell.run(user, "qsub", args);
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout.trim().parse().expect("job id")
}

#[test]
fn a_job_over_its_memory_limit_is_killed_and_accounted_as_sge_does() {
    const TEST: &str = "a_job_over_its_memory_limit_is_killed_and_accounted_as_sge_does";
    let Some(_) = confinement(TEST, true) else {
        return;
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    // 256 MB written, against an h_rss of 64 MB: Linux ignores RLIMIT_RSS, the cgroup not.
    cell.write_file(
        &user,
        "grow.sh",
        "#!/bin/sh\npython3 -c 'b = b\"x\" * (256 << 20); import time; time.sleep(2)'\necho survived\n",
    );
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-l", "h_rss=64M", "grow.sh"],
    );
    let f = record(&cell, id);
    // The python process died of the OOM killer's SIGKILL; the script went on and ended 0.
    // SGE accounts the job by its own end: a job whose *shell* is killed is `100`/`137`.
    let out = std::fs::read_to_string(cell.workdir(&user).join(format!("grow.sh.o{id}")))
        .unwrap_or_default();
    assert_eq!(out, "survived\n", "{f:?}");
    let maxvmem: f64 = f[42].parse().expect("maxvmem");
    assert!(
        maxvmem >= 60.0 * 1024.0 * 1024.0,
        "maxvmem {maxvmem}: {f:?}"
    );
    // The job's own process over the limit: killed, `failed 100`, `exit_status 137`.
    let id = qsub(
        &cell,
        &user,
        &[
            "-terse",
            "-cwd",
            "-b",
            "y",
            "-l",
            "h_rss=64M",
            "python3",
            "-c",
            "'b = b\"x\" * (256 << 20)'",
        ],
    );
    let f = record(&cell, id);
    assert_eq!((f[11].as_str(), f[12].as_str()), ("100", "137"), "{f:?}");
    let maxvmem: f64 = f[42].parse().expect("maxvmem");
    assert!(
        maxvmem >= 60.0 * 1024.0 * 1024.0,
        "maxvmem {maxvmem}: {f:?}"
    );
}

#[test]
fn qdel_kills_what_left_the_process_group_and_unwaited_cpu_is_counted() {
    const TEST: &str = "qdel_kills_what_left_the_process_group_and_unwaited_cpu_is_counted";
    let Some(_) = confinement(TEST, false) else {
        return;
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    // A process in a session of its own, whose parent has gone: not in the job's process
    // group, not the supervisor's descendant once reparented elsewhere.
    cell.write_file(
        &user,
        "escape.sh",
        "#!/bin/sh\ncat /proc/self/cgroup > cgroup.txt\nsetsid sh -c 'sleep 6129' &\nsleep 600\n",
    );
    let id = qsub(&cell, &user, &["-terse", "-cwd", "escape.sh"]);
    let escaped = || {
        std::process::Command::new("pgrep")
            .args(["-f", "^sleep 6129$"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    wait_for("the job runs", Duration::from_secs(30), escaped);
    let groups =
        std::fs::read_to_string(cell.workdir(&user).join("cgroup.txt")).unwrap_or_default();
    assert!(
        groups
            .lines()
            .any(|l| l.starts_with("0::/gridspool/default.") && l.ends_with(&format!("/{id}.1"))),
        "{groups}"
    );
    let run = cell.run(&user, "qdel", &[&id.to_string()]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for(
        "everything of the job killed",
        Duration::from_secs(30),
        || !escaped(),
    );
    record(&cell, id);
    // A child whose parent ignores SIGCHLD is reaped by the kernel: getrusage(2) of the
    // supervisor never sees its second of CPU; the cgroup does. The parent waits for the
    // child's word, not for a time: on a loaded machine two seconds held less than one of CPU.
    cell.write_file(
        &user,
        "burn.py",
        "import os, signal, time\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\nif os.fork() == 0:\n    end = time.process_time() + 1.0\n    while time.process_time() < end:\n        pass\n    open('burnt', 'w').close()\n    os._exit(0)\nwhile not os.path.exists('burnt'):\n    time.sleep(0.05)\n",
    );
    let id = qsub(
        &cell,
        &user,
        &["-terse", "-cwd", "-b", "y", "python3", "burn.py"],
    );
    let f = record(&cell, id);
    let cpu: f64 = f[36].parse().expect("cpu");
    assert!(cpu >= 0.9, "cpu {cpu}: {f:?}");
}

/// Prints the CPUs the job's cgroup allows: `cpu.max` on v2, `cpu.cfs_quota_us` on v1.
const CPU_QUOTA_PY: &str = r#"
mounts = {}
for line in open("/proc/self/mountinfo"):
    left, right = line.split(" - ")
    fstype, _, options = right.split()[:3]
    point = left.split()[4]
    if fstype == "cgroup2":
        mounts["v2"] = point
    elif fstype == "cgroup" and "cpu" in options.split(","):
        mounts["cpu"] = point
quota = None
for line in open("/proc/self/cgroup"):
    _, controllers, path = line.strip().split(":", 2)
    if controllers == "" and "v2" in mounts:
        try:
            q, p = open(mounts["v2"] + path + "/cpu.max").read().split()
            quota = int(q) / int(p)
        except OSError:
            pass
    elif "cpu" in controllers.split(",") and "cpu" in mounts and quota is None:
        base = mounts["cpu"] + path
        quota = int(open(base + "/cpu.cfs_quota_us").read()) / int(open(base + "/cpu.cfs_period_us").read())
print(quota)
"#;

#[test]
fn cpu_quota_gives_a_task_its_slots_worth_of_cpu() {
    const TEST: &str = "cpu_quota_gives_a_task_its_slots_worth_of_cpu";
    let Some(_) = confinement(TEST, false) else {
        return;
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 4, cgroups: {{cpu_quota: true}}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 4, pe_list: [smp], tmpdir: \"{{{{tmpdir}}}}\"}}\nparallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\nscheduler: {{policy: sge}}\n"
        )
    });
    let _d = SchedD::start(&cell, &[]);
    cell.write_file(&user, "quota.py", CPU_QUOTA_PY);
    let id = qsub(
        &cell,
        &user,
        &[
            "-terse", "-cwd", "-pe", "smp", "3", "-b", "y", "python3", "quota.py",
        ],
    );
    record(&cell, id);
    let out = std::fs::read_to_string(cell.workdir(&user).join(format!("python3.o{id}")))
        .unwrap_or_default();
    assert_eq!(out, "3.0\n");
}

#[test]
fn a_gpu_job_cannot_open_the_devices_it_was_not_granted() {
    const TEST: &str = "a_gpu_job_cannot_open_the_devices_it_was_not_granted";
    let Some(how) = confinement(TEST, false) else {
        return;
    };
    if how.contains("devices not denied") {
        return skip(TEST, &format!("this machine: {how}"));
    }
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let host = gridspool::identity::short_hostname();
    // Two "GPUs": character devices with the numbers of /dev/zero and /dev/full.
    let devices = tempfile::tempdir().expect("tempdir");
    let dev = devices.path().to_path_buf();
    set_mode(&dev, 0o755);
    for (name, minor) in [("gpu0", 5), ("gpu1", 7)] {
        let path = dev.join(name);
        nix::sys::stat::mknod(
            &path,
            nix::sys::stat::SFlag::S_IFCHR,
            nix::sys::stat::Mode::from_bits_truncate(0o666),
            nix::sys::stat::makedev(1, minor),
        )
        .expect("mknod");
        set_mode(&path, 0o666);
    }
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2, devices: {{gpu: [\"0\", \"1\"]}}, device_files: {{gpu: \"{}/gpu{{id}}\"}}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 2, tmpdir: \"{{{{tmpdir}}}}\"}}\ncomplexes:\n  - {{name: gpu, shortcut: gpu, type: INT, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}}\nscheduler: {{policy: sge}}\n",
            dev.display()
        )
    });
    let _d = SchedD::start(&cell, &[]);
    cell.write_file(
        &user,
        "gpu.sh",
        &format!(
            "#!/bin/sh\nfor g in 0 1; do\n  if head -c 1 {dev}/gpu$g >/dev/null 2>&1; then echo \"gpu$g open\"; else echo \"gpu$g denied\"; fi\ndone\necho \"granted $CUDA_VISIBLE_DEVICES\"\n",
            dev = dev.display()
        ),
    );
    let id = qsub(&cell, &user, &["-terse", "-cwd", "-l", "gpu=1", "gpu.sh"]);
    record(&cell, id);
    let out = std::fs::read_to_string(cell.workdir(&user).join(format!("gpu.sh.o{id}")))
        .unwrap_or_default();
    let granted = out
        .lines()
        .find_map(|l| l.strip_prefix("granted "))
        .unwrap_or_default()
        .to_string();
    let other = if granted == "0" { "1" } else { "0" };
    assert!(
        out.contains(&format!("gpu{granted} open\n"))
            && out.contains(&format!("gpu{other} denied\n")),
        "{out}"
    );
}
