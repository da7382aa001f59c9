//! Devices a host gives jobs for their own (`hosts[].devices`): two `-l gpu=1` jobs on a
//! two-GPU host get different ids, in `CUDA_VISIBLE_DEVICES` and `SGE_HGR_gpu`; a third
//! waits until one is given back; the grants survive a restart of `sched_d`.

use crate::sched::{SchedD, accounting_records, state, wait_for};
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

#[test]
fn two_gpu_jobs_get_different_devices_and_a_third_waits() {
    let Some(user) = user1() else {
        return skip(
            "two_gpu_jobs_get_different_devices_and_a_third_waits",
            "needs the test users",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 4, devices: {{gpu: [\"0\", \"1\"]}}}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 4, tmpdir: \"{{{{tmpdir}}}}\"}}\ncomplexes:\n  - {{name: gpu, shortcut: gpu, type: INT, relop: \"<=\", requestable: YES, consumable: YES, default: \"0\", urgency: 0}}\nscheduler: {{policy: sge}}\n"
        )
    });
    let mut d = SchedD::start(&cell, &[]);
    cell.write_file(
        &user,
        "gpu.sh",
        "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES $SGE_HGR_gpu\" > gpu.$JOB_ID\nsleep 3\n",
    );
    let submit = || {
        let run = cell.run(&user, "qsub", &["-terse", "-cwd", "-l", "gpu=1", "gpu.sh"]);
        assert_eq!(run.code, 0, "{run:?}");
        JobId(run.stdout.trim().parse().expect("id"))
    };
    let (a, b) = (submit(), submit());
    let dir = cell.workdir(&user);
    let seen = |id: JobId| std::fs::read_to_string(dir.join(format!("gpu.{id}"))).ok();
    wait_for("both GPU jobs run", Duration::from_secs(20), || {
        seen(a).is_some() && seen(b).is_some()
    });
    let mut got = vec![seen(a).expect("a"), seen(b).expect("b")];
    got.sort();
    assert_eq!(got, ["0 0\n", "1 1\n"]);
    // qstat -j shows which device the job holds.
    let id_of_a = seen(a)
        .expect("a")
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let run = cell.run(&user, "qstat", &["-j", &a.to_string()]);
    assert!(
        run.stdout.contains(&format!(
            "\nresource_map  1:            gpu={host}=({id_of_a})\n"
        )),
        "{run:?}"
    );
    // qhost -F shows which task holds which device of the host.
    let run = cell.run(&user, "qhost", &["-F", "gpu", "-h", &host]);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("rm:gpu="))
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut holders = [format!("{a}.1"), format!("{b}.1")];
    if id_of_a == "1" {
        holders.reverse();
    }
    assert_eq!(
        line,
        format!("rm:gpu=0({}) 1({})", holders[0], holders[1]),
        "{run:?}"
    );
    // A restart: the grants are read back from the records, so the third job still waits.
    d.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(d.wait(), Some(0));
    let _d = SchedD::start(&cell, &[]);
    let c = submit();
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        state(&cell.spool, c).is_some_and(|s| s.tasks.running.is_empty()),
        "no GPU is free"
    );
    wait_for("the third job ran", Duration::from_secs(30), || {
        !accounting_records(&cell, c).is_empty()
    });
    let third = seen(c).expect("c");
    assert!(third == "0 0\n" || third == "1 1\n", "{third}");
}
