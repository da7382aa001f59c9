//! `gridspool-sim --what-if` on a live cell, beside its running `sched_d` (issue 28): the
//! change in estimated starts that one more host would make, read as a user who may read the
//! cell, with the cell left as it was.

use crate::estimates::{one_slot_cell, qsub};
use crate::sched::SchedD;
use crate::support::*;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

/// Every file of the cell but those its daemon and shepherds write as they run (`daemon/`,
/// `execd/`, job states and exits, the accounting file): path → (size, mtime, mode, owner
/// and group).
fn listing(cell: &Path) -> BTreeMap<String, (u64, i64, i64, u32, u32, u32)> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, (u64, i64, i64, u32, u32, u32)>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("in the cell")
                .to_string_lossy()
                .into_owned();
            let daemons = rel == "daemon"
                || rel == "execd"
                || rel == "common/accounting"
                || rel.ends_with(".state")
                || rel.ends_with(".exits");
            if daemons {
                continue;
            }
            let m = std::fs::symlink_metadata(&path).expect("metadata");
            // A directory's times and size change as the daemon writes job states in it:
            // what is in it is listed instead.
            let (size, sec, nsec) = if m.is_dir() {
                (0, 0, 0)
            } else {
                (m.len(), m.mtime(), m.mtime_nsec())
            };
            out.insert(rel, (size, sec, nsec, m.mode(), m.uid(), m.gid()));
            if m.is_dir() {
                walk(&path, root, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(cell, cell, &mut out);
    out
}

/// One slot, taken since S by a job of `h_rt` 600; behind it a job of 300 s and one of 60 s,
/// all sgeuser's; sgeuser2 asks what one more host would do.
/// As the cell stands they start at S+600 and S+900. With one more host like this one, the
/// first starts now on it and the second when the first ends there, now+300: waits of
/// S+600−now and S+900−now become 0 and 300.
#[test]
fn what_if_one_more_host_shows_the_queue_start_sooner_and_leaves_the_cell_alone() {
    let Some(user) = user1() else {
        skip(
            "what_if_one_more_host_shows_the_queue_start_sooner_and_leaves_the_cell_alone",
            "needs root to run jobs as sgeuser",
        );
        return;
    };
    let cell = one_slot_cell();
    let d = SchedD::start(&cell, &[]);
    let running = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=600", "sleep", "600"]);
    let started = || {
        cell.job(running)
            .and_then(|j| j.tasks.running.first().map(|r| r.start_time))
    };
    d.wait_for("the first job runs", Duration::from_secs(30), || {
        started().is_some()
    });
    let s = started().expect("start time");
    let first = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=300", "true"]);
    let second = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=60", "true"]);
    d.wait_for(
        "a pass over the waiting jobs",
        Duration::from_secs(30),
        || {
            [first, second]
                .iter()
                .all(|&id| cell.job(id).is_some_and(|j| j.priority.is_some()))
        },
    );
    let host = gridspool::identity::short_hostname();
    // Another user reads the cell (the jobs are sgeuser's) through the spool's group, as a
    // member of it would.
    let viewer = user2().expect("root makes sgeuser2");
    let spool_gid = std::fs::metadata(&cell.cell).expect("cell").gid();
    let sim = |args: &[&str]| -> Run {
        let mut cmd = cell.command("gridspool-sim", &viewer);
        cmd.gid(spool_gid).arg("--what-if").args(args);
        cmd.output().expect("gridspool-sim").into()
    };
    let before = listing(&cell.cell);

    let run = sim(&[
        "--add-hosts",
        "1",
        "--like",
        &host,
        "--run-times",
        "limits",
        "--jobs",
        "5",
        "--json",
        "-",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let w: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let now = w["now"].as_i64().expect("now");
    assert!(now >= s && now < s + 300, "{w}");
    assert_eq!(w["run_times"], "limits");
    assert_eq!(
        w["changes"],
        serde_json::json!([format!("hosts added like {host}: {host}-whatif-1")])
    );
    let mine = &w["by_user"][&user.name];
    let (b1, b2) = ((s + 600 - now) as f64, (s + 900 - now) as f64);
    assert_eq!(mine["tasks"], 2, "{w}");
    assert_eq!(mine["before"]["median"], (b1 + b2) / 2.0, "{w}");
    assert_eq!(mine["after"]["median"], 150.0, "{w}");
    assert_eq!(mine["change"], ((0.0 - b1) + (300.0 - b2)) / 2.0, "{w}");
    assert_eq!((&mine["earlier"], &mine["later"]), (&2.into(), &0.into()));
    assert_eq!(w["by_queue"]["all.q"], *mine, "{w}");
    assert_eq!(w["all"], *mine, "{w}");
    let job = |id: u32| {
        w["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["job"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("job {id} in {w}"))
    };
    assert_eq!(job(first)["before"]["time"], s + 600, "{w}");
    assert_eq!(job(first)["after"]["time"], now, "{w}");
    assert_eq!(
        job(first)["after"]["hosts"],
        serde_json::json!([format!("{host}-whatif-1")])
    );
    assert_eq!(job(second)["before"]["time"], s + 900, "{w}");
    assert_eq!(job(second)["after"]["time"], now + 300, "{w}");

    // The same as a table.
    let table = sim(&["--add-hosts", "1", "--like", &host, "--run-times", "limits"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains(&format!(
            "  changed: hosts added like {host}: {host}-whatif-1\n"
        )),
        "{table:?}"
    );
    let row = table
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("{} ", user.name)))
        .unwrap_or_else(|| panic!("a row of {} in {table:?}", user.name));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1], "2", "{row}");
    assert_eq!(cells[3], "0:02:30", "{row}: the median after, 150 s");
    assert_eq!(&cells[7..], ["2", "0", "0", "0"], "{row}");

    // A key the configuration does not have.
    let bad = sim(&["--set", "scheduler.weight_tickt=0.1"]);
    assert_ne!(bad.code, 0, "{bad:?}");
    assert_eq!(
        bad.stderr,
        "gridspool-sim: --set scheduler.weight_tickt=0.1: scheduler.weight_tickt: no such key in the configuration\n"
    );
    assert_eq!(bad.stdout, "");

    assert_eq!(listing(&cell.cell), before, "the what-if changed the cell");
    // The daemon kept the cell: its job runs on.
    assert_eq!(started(), Some(s));
}
