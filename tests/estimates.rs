//! Start-time estimates through the real daemon (issue 28): `sched_d`'s forecast process
//! writes them, `qstat -start`, `-j … -start` and `-json -start` show them.

use crate::sched::SchedD;
use crate::support::*;
use std::time::Duration;

/// A cell of this host with one slot, forecasts at most once a second.
pub(crate) fn one_slot_cell() -> TestCell {
    one_slot_cell_with("", "")
}

/// [`one_slot_cell`] with more of the scheduler's settings (`schedule_interval: …, `) and of
/// its `start_estimates` (`enabled: false, `).
fn one_slot_cell_with(scheduler: &str, estimates: &str) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [\"{host}\"], slots: 1, tmpdir: \"{{{{tmpdir}}}}\"}}\nscheduler: {{policy: sge, {scheduler}start_estimates: {{{estimates}refresh: \"1\"}}}}\n"
        )
    })
}

pub(crate) fn qsub(cell: &TestCell, user: &TestUser, args: &[&str]) -> u32 {
    let run = cell.run(user, "qsub", args);
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {run:?}"))
}

/// `qstat -json -start`'s jobs, by number.
fn listing(cell: &TestCell, user: &TestUser) -> Vec<serde_json::Value> {
    let run = cell.run(user, "qstat", &["-json", "-start"]);
    assert_eq!(run.code, 0, "{run:?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    v["jobs"].as_array().cloned().unwrap_or_default()
}

fn entry(jobs: &[serde_json::Value], id: u32) -> Option<&serde_json::Value> {
    jobs.iter().find(|j| j["job"] == id)
}

/// The one estimate of pending job `id`: its start time, else its kind and reason.
fn estimate(jobs: &[serde_json::Value], id: u32) -> Option<Result<i64, (String, String)>> {
    let e = entry(jobs, id)?["estimated_start"].get(0)?.clone();
    Some(match e["time"].as_i64() {
        Some(t) => Ok(t),
        None => Err((
            e["kind"].as_str().unwrap_or("").to_string(),
            e["why"].as_str().unwrap_or("").to_string(),
        )),
    })
}

/// One slot, taken by a job of `h_rt` 600 s that started at S. Behind it wait a job of 300 s
/// and one of 60 s (submitted in that order, equal priorities), one asking for an
/// architecture no host has, and a held one. The forecast says: the first at S+600, the
/// second at S+900; the third never, with its reason; the held one unknown. Once the first
/// waiting job is deleted, the second moves up to S+600.
#[test]
fn estimates_follow_the_queue_and_move_when_a_job_ahead_is_deleted() {
    let Some(user) = user1() else {
        skip(
            "estimates_follow_the_queue_and_move_when_a_job_ahead_is_deleted",
            "needs root to run jobs as sgeuser",
        );
        return;
    };
    let cell = one_slot_cell();
    let d = SchedD::start(&cell, &[]);
    let running = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=600", "sleep", "600"]);
    let started = || entry(&listing(&cell, &user), running).and_then(|j| j["started"].as_i64());
    d.wait_for("the first job runs", Duration::from_secs(30), || {
        started().is_some()
    });
    let s = started().expect("start time");
    let first = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=300", "true"]);
    let second = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=60", "true"]);
    let never = qsub(
        &cell,
        &user,
        &["-b", "y", "-l", "h_rt=60,arch=nowhere", "true"],
    );
    let held = qsub(&cell, &user, &["-b", "y", "-h", "-l", "h_rt=60", "true"]);
    d.wait_for("a forecast of every job", Duration::from_secs(30), || {
        let jobs = listing(&cell, &user);
        [first, second, never, held].iter().all(|&id| {
            estimate(&jobs, id).is_some_and(|e| {
                e.as_ref()
                    .err()
                    .is_none_or(|(_, why)| !why.starts_with("not in the last forecast"))
            })
        })
    });
    let jobs = listing(&cell, &user);
    assert_eq!(estimate(&jobs, first), Some(Ok(s + 600)), "{jobs:?}");
    assert_eq!(estimate(&jobs, second), Some(Ok(s + 900)), "{jobs:?}");
    let (kind, why) = estimate(&jobs, never)
        .expect("estimate")
        .expect_err("no time");
    assert_eq!(kind, "never");
    assert!(why.contains("arch=nowhere"), "{why}");
    let (kind, why) = estimate(&jobs, held)
        .expect("estimate")
        .expect_err("no time");
    assert_eq!(kind, "unknown");
    assert!(why.contains("held"), "{why}");
    assert_eq!(
        entry(&jobs, running).expect("running")["estimated_start"],
        serde_json::Value::Null
    );

    // The table and `-j` say the same.
    let table = cell.run(&user, "qstat", &["-start"]);
    assert_eq!(table.code, 0, "{table:?}");
    let never_line = table
        .stdout
        .lines()
        .position(|l| l.trim_start().starts_with(&format!("{never} ")))
        .expect("row of the job that never starts");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[never_line].contains(" never "), "{table:?}");
    assert!(lines[never_line + 1].contains("arch=nowhere"), "{table:?}");
    let detail = cell.run(&user, "qstat", &["-j", &second.to_string(), "-start"]);
    let host = gridspool::identity::short_hostname();
    let line = format!(
        "estimated start:            {} in all.q on {host} (1 slot)",
        gridspool::time::qstat_date(s + 900)
    );
    assert!(detail.stdout.contains(&line), "{detail:?}");
    // Without `-start`, `qstat -j` is SGE's.
    let plain = cell.run(&user, "qstat", &["-j", &second.to_string()]);
    assert!(!plain.stdout.contains("estimated start"), "{plain:?}");

    let del = cell.run(&user, "qdel", &[&first.to_string()]);
    assert_eq!(del.code, 0, "{del:?}");
    d.wait_for(
        "the estimate of the job behind the deleted one",
        Duration::from_secs(30),
        || estimate(&listing(&cell, &user), second) == Some(Ok(s + 600)),
    );
}

/// A cell whose forecasts are off shows no time, and says why.
#[test]
fn with_estimates_disabled_qstat_says_none_was_made() {
    let Some(user) = user1() else {
        skip(
            "with_estimates_disabled_qstat_says_none_was_made",
            "needs root to run jobs as sgeuser",
        );
        return;
    };
    let cell = one_slot_cell_with("", "enabled: false, ");
    let d = SchedD::start(&cell, &[]);
    let held = qsub(&cell, &user, &["-b", "y", "-h", "true"]);
    d.wait_for("a pass over the held job", Duration::from_secs(30), || {
        cell.job(held).is_some_and(|j| j.priority.is_some())
    });
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!cell.cell.join("daemon/estimates").exists());
    let (kind, why) = estimate(&listing(&cell, &user), held)
        .expect("estimate")
        .expect_err("no time");
    assert_eq!(kind, "unknown");
    assert!(why.starts_with("no forecast has been made"), "{why}");
}

/// `daemon/estimates`' `made_at`, once there is one.
fn made_at(cell: &TestCell) -> Option<i64> {
    let text = std::fs::read_to_string(cell.cell.join("daemon/estimates")).ok()?;
    let header: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    header["made_at"].as_i64()
}

/// Periodic passes (every second here) do not make the forecast again while nothing happens;
/// a submission does.
#[test]
fn only_events_make_the_forecast_again() {
    let Some(user) = user1() else {
        skip(
            "only_events_make_the_forecast_again",
            "needs root to run jobs as sgeuser",
        );
        return;
    };
    let cell = one_slot_cell_with("schedule_interval: \"0:0:1\", ", "");
    let d = SchedD::start(&cell, &[]);
    qsub(&cell, &user, &["-b", "y", "-l", "h_rt=600", "sleep", "600"]);
    let waiting = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=60", "true"]);
    d.wait_for(
        "a forecast of the waiting job",
        Duration::from_secs(30),
        || estimate(&listing(&cell, &user), waiting).is_some_and(|e| e.is_ok()),
    );
    // The forecast of the last event may still be on its way: the one after it stays.
    std::thread::sleep(Duration::from_millis(2500));
    let settled = made_at(&cell).expect("a forecast");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        made_at(&cell),
        Some(settled),
        "four periodic passes without an event made the forecast again"
    );
    std::thread::sleep(Duration::from_secs(1));
    let next = qsub(&cell, &user, &["-b", "y", "-l", "h_rt=60", "true"]);
    d.wait_for(
        "a forecast with the new job",
        Duration::from_secs(30),
        || estimate(&listing(&cell, &user), next).is_some_and(|e| e.is_ok()),
    );
    assert!(made_at(&cell).expect("a forecast") > settled);
}
