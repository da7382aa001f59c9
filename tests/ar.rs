//! Advance reservations through the real `sched_d` with real jobs: a reservation's jobs
//! start at its start and not before, other jobs never hold its slots during its window,
//! `qrdel` ends it with its jobs, it survives a restart of `sched_d`; and `qrsub`, `qrstat`
//! and `qrdel` against the SGE 8.1.9 captures in `tests/compat/`.

use crate::sched::{RecordingMailer, SchedD, cell, wait_for};
use crate::support::*;
use std::time::Duration;

/// Puts the test users into `arusers`, the access list whose members may reserve (as
/// `record-issue25-ar.sh` does on the oracle).
fn admit_to_arusers(cell: &TestCell) {
    let root = root().expect("root");
    let run = cell.run(&root, "qconf", &["-au", "sgeuser,sgeuser2", "arusers"]);
    assert_eq!(run.code, 0, "{run:?}");
}

/// `[[CC]YY]MMDDhhmm.SS` of `epoch`, in local time, as `qrsub -a` takes it.
fn sge_time(epoch: i64) -> String {
    let out = std::process::Command::new("date")
        .arg("-d")
        .arg(format!("@{epoch}"))
        .arg("+%Y%m%d%H%M.%S")
        .output()
        .expect("date");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn granted_id(run: &Run) -> u32 {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .strip_prefix("Your advance reservation ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not granted: {run:?}"))
}

fn job_id(run: &Run) -> u32 {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .split_whitespace()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no job id: {run:?}"))
}

fn running(cell: &TestCell, id: u32) -> bool {
    cell.job(id).is_some_and(|j| !j.tasks.running.is_empty())
}

/// Two slots; a reservation of one of them from a few seconds ahead. Two long jobs without
/// a run time (they would overlap the window) take one slot, not two; the reservation's
/// job waits for its start and then starts in the reserved slot; `qrdel` ends the
/// reservation and kills its job.
#[test]
fn an_ar_holds_its_slot_and_its_job_starts_at_its_start() {
    let (Some(user), Some(other)) = (user1(), user2()) else {
        return skip(
            "an_ar_holds_its_slot_and_its_job_starts_at_its_start",
            "needs sgeuser and sgeuser2 (run as root)",
        );
    };
    let cell = cell(2);
    admit_to_arusers(&cell);
    let _d = SchedD::start(&cell, &[]);
    let start = gridspool::time::now() + 8;
    let ar = granted_id(&cell.run(
        &user,
        "qrsub",
        &["-N", "course", "-a", &sge_time(start), "-d", "600"],
    ));
    let listed = cell.run(&user, "qrstat", &[]);
    assert!(listed.stdout.contains(" course "), "{listed:?}");
    assert!(listed.stdout.contains(" w "), "{listed:?}");
    // A second reservation of both slots over the same window cannot be granted.
    let full = cell.run(
        &user,
        "qrsub",
        &["-a", &sge_time(start), "-d", "600", "-pe", "smp", "2"],
    );
    assert_eq!(full.code, 1, "{full:?}");
    assert_eq!(full.stdout, "advance_reservation: no suitable queues\n");

    let a = job_id(&cell.run(&other, "qsub", &["-b", "y", "sleep", "300"]));
    let b = job_id(&cell.run(&other, "qsub", &["-b", "y", "sleep", "300"]));
    let in_ar = job_id(&cell.run(
        &user,
        "qsub",
        &["-ar", &ar.to_string(), "-b", "y", "sleep", "300"],
    ));
    wait_for("one long job to run", Duration::from_secs(20), || {
        running(&cell, a) || running(&cell, b)
    });
    // The other long job never gets the reserved slot, before or after the start.
    wait_for("the reservation to open", Duration::from_secs(30), || {
        running(&cell, in_ar)
    });
    let job = cell.job(in_ar).expect("job in the reservation");
    assert!(
        job.tasks.running[0].start_time >= start,
        "started at {} before the reservation's start {start}",
        job.tasks.running[0].start_time
    );
    assert_eq!(
        [running(&cell, a), running(&cell, b)]
            .iter()
            .filter(|r| **r)
            .count(),
        1,
        "both long jobs run: one took the reserved slot"
    );
    let detail = cell.run(&user, "qrstat", &["-ar", &ar.to_string()]);
    assert!(
        detail.stdout.contains("state                          r\n"),
        "{detail:?}"
    );
    // More slots than it holds: refused at submission, as SGE refuses it.
    let cap = Capture::load("qsub/ar-pe-beyond.txt");
    assert_matches(
        &cell.run(
            &user,
            "qsub",
            &["-ar", &ar.to_string(), "-pe", "smp", "2", "-b", "y", "true"],
        ),
        &cap,
    );
    let shown = cell.run(&user, "qstat", &["-j", &in_ar.to_string()]);
    assert!(
        shown
            .stdout
            .contains(&format!("ar_id:                      {ar}\n")),
        "{shown:?}"
    );

    let del = cell.run(&user, "qrdel", &[&ar.to_string()]);
    assert_eq!(
        del.stdout,
        format!(
            "{} has registered the advance_reservation {ar} for deletion\n",
            user.name
        ),
        "{del:?}"
    );
    wait_for(
        "the reservation's job to go",
        Duration::from_secs(20),
        || !running(&cell, in_ar),
    );
    wait_for("the reservation to go", Duration::from_secs(20), || {
        cell.run(&user, "qrstat", &[]).stdout.is_empty()
    });
    // The killed job's record names its reservation as SGE's does
    // (`tests/compat/accounting/ar-job-lines.txt`: `-ar N` category, arid, its submission).
    let mut record = None;
    wait_for(
        "the reservation job's record",
        Duration::from_secs(20),
        || {
            let text = std::fs::read_to_string(cell.spool.accounting_path()).unwrap_or_default();
            record = text
                .lines()
                .filter_map(|l| gridspool::acct::AccountingRecord::parse_line(l).ok())
                .find(|r| r.job_number == in_ar);
            record.is_some()
        },
    );
    let record = record.expect("record");
    assert_eq!(record.arid, ar);
    assert_eq!(record.category, format!("-ar {ar}"));
    assert!(record.ar_submission_time > 0 && record.ar_submission_time <= start);
    // Its slot is free again: the second long job starts in it.
    wait_for("both long jobs to run", Duration::from_secs(20), || {
        running(&cell, a) && running(&cell, b)
    });
    cell.run(&other, "qdel", &["-u", &other.name]);
}

/// A granted reservation is read back by a new `sched_d` and holds its slot still.
#[test]
fn an_ar_survives_a_restart_of_sched_d() {
    let (Some(user), Some(other)) = (user1(), user2()) else {
        return skip(
            "an_ar_survives_a_restart_of_sched_d",
            "needs sgeuser and sgeuser2 (run as root)",
        );
    };
    let cell = cell(2);
    admit_to_arusers(&cell);
    let mut d = SchedD::start(&cell, &[]);
    let ar = granted_id(&cell.run(&user, "qrsub", &["-d", "3600"]));
    d.signal(nix::sys::signal::Signal::SIGKILL);
    d.wait();
    let _d = SchedD::start(&cell, &[]);
    let detail = cell.run(&user, "qrstat", &["-ar", &ar.to_string()]);
    assert_eq!(detail.code, 0, "{detail:?}");
    still_held(&cell, &user, &other, ar, Duration::from_secs(20), "restart");
}

/// Checks that reservation `ar` (one slot of a two-slot cell, held by `user`) still holds
/// its slot after a `when` of the master: its job runs (within `start`), and of two long
/// jobs of `other` only one does. Deletes them all after.
fn still_held(
    cell: &TestCell,
    user: &TestUser,
    other: &TestUser,
    ar: u32,
    start: Duration,
    when: &str,
) {
    let a = job_id(&cell.run(other, "qsub", &["-b", "y", "sleep", "300"]));
    let b = job_id(&cell.run(other, "qsub", &["-b", "y", "sleep", "300"]));
    let in_ar = job_id(&cell.run(
        user,
        "qsub",
        &["-ar", &ar.to_string(), "-b", "y", "sleep", "300"],
    ));
    wait_for("the reservation's job to run", start, || {
        running(cell, in_ar)
    });
    wait_for("one long job to run", Duration::from_secs(20), || {
        running(cell, a) || running(cell, b)
    });
    assert!(
        !(running(cell, a) && running(cell, b)),
        "a job took the reserved slot after the {when}"
    );
    cell.run(other, "qdel", &["-u", &other.name]);
    cell.run(user, "qrdel", &[&ar.to_string()]);
}

fn compare(cell: &TestCell, user: &TestUser, dir: &str, case: &str, bin: &str) {
    let cap = Capture::load(&format!("{dir}/{case}.txt"));
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix(bin).unwrap_or(&cap.command),
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_matches(&cell.run(user, bin, &refs), &cap);
}

/// What needs no reservation of the oracle's state: help, refusals, an empty list.
#[test]
fn qrsub_qrstat_qrdel_match_sge() {
    let Some(user) = user1() else {
        return skip(
            "qrsub_qrstat_qrdel_match_sge",
            "needs sgeuser (run as root)",
        );
    };
    let cell = TestCell::new();
    let _d = SchedD::start(&cell, &[]);
    compare(&cell, &user, "qrsub", "not-in-arusers", "qrsub");
    admit_to_arusers(&cell);
    compare(&cell, &user, "qrsub", "help", "qrsub");
    compare(&cell, &user, "qrstat", "help", "qrstat");
    compare(&cell, &user, "qrdel", "help", "qrdel");
    compare(&cell, &user, "qrstat", "empty", "qrstat");
    compare(&cell, &user, "qrsub", "no-time", "qrsub");
    compare(&cell, &user, "qrsub", "pe-nosuch", "qrsub");
    compare(&cell, &user, "qrsub", "q-nosuch", "qrsub");
    compare(&cell, &user, "qrsub", "l-nosuch", "qrsub");
    compare(&cell, &user, "qrstat", "ar-nosuch", "qrstat");
    compare(&cell, &user, "qrdel", "nosuch", "qrdel");
    compare(&cell, &user, "qsub", "ar-nosuch", "qsub");
}

/// The oracle's session of `record-issue25-ar.sh` replayed with fresh times: grants and
/// refusals, `qrstat`'s list, detail and XML, `qrdel`'s messages. The ids are the
/// oracle's (the counter set to 6 first); the group of a reservation is its owner's where
/// SGE 8.1.9 shows its qmaster's (`sgeadmin`: `tests/compat/DIVERGENCES.md`).
#[test]
fn granted_reservations_show_as_in_sge() {
    let (Some(user), Some(other)) = (user1(), user2()) else {
        return skip(
            "granted_reservations_show_as_in_sge",
            "needs sgeuser and sgeuser2 (run as root)",
        );
    };
    let cell = TestCell::new();
    admit_to_arusers(&cell);
    let _d = SchedD::start(&cell, &[]);
    for _ in 0..6 {
        cell.spool.allocate_ar_id().expect("ar id");
    }
    let start = sge_time(gridspool::time::now() + 3600);
    let end = sge_time(gridspool::time::now() + 4200);
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(user.gid))
        .ok()
        .flatten()
        .map(|g| g.name)
        .expect("group");
    let check = |who: &TestUser, case: &str, args: &[&str]| {
        let bin = case.split('/').next().unwrap_or(case);
        let mut cap = Capture::load(&format!("{case}.txt"));
        cap.stdout = cap.stdout.replace("sgeadmin", &group);
        assert_matches(&cell.run(who, bin, args), &cap);
    };
    check(
        &user,
        "qrsub/granted",
        &["-N", "ar25a", "-a", &start, "-e", &end],
    );
    check(
        &user,
        "qrsub/granted-d",
        &["-N", "ar25b", "-a", &start, "-d", "600", "-pe", "smp", "1"],
    );
    check(
        &user,
        "qrsub/full",
        &["-N", "ar25c", "-a", &start, "-d", "600", "-pe", "smp", "2"],
    );
    check(&user, "qrstat/list", &[]);
    check(&user, "qrstat/list-u-all", &["-u", "*"]);
    check(&other, "qrstat/list-other-user", &[]);
    check(&user, "qrstat/ar", &["-ar", "7"]);
    check(&user, "qrstat/ar-pe", &["-ar", "8"]);
    check(&user, "qrstat/ar-xml", &["-xml", "-ar", "7"]);
    check(&user, "qrstat/list-xml", &["-xml"]);
    check(&user, "qrstat/explain", &["-explain", "-ar", "7"]);
    check(&user, "qrdel/granted", &["7"]);
    check(&user, "qrdel/by-name", &["ar25b"]);
    wait_for("both reservations to go", Duration::from_secs(20), || {
        cell.run(&user, "qrstat", &[]).stdout.is_empty()
    });
    check(&user, "qrstat/after-delete", &[]);
}

/// A shadow that takes over a killed master holds the master's reservation and runs its
/// job inside it, while the other jobs still keep out of the reserved slot.
#[test]
fn a_shadow_taking_over_holds_the_reservation() {
    let (Some(user), Some(other)) = (user1(), user2()) else {
        return skip(
            "a_shadow_taking_over_holds_the_reservation",
            "needs sgeuser and sgeuser2 (run as root)",
        );
    };
    let cell = cell(2);
    admit_to_arusers(&cell);
    let mut master = SchedD::start(&cell, &["--heartbeat-interval", "0.2"]);
    let shadow = SchedD::spawn(&cell, &["--shadow", "--takeover-after", "1"]);
    let ar = granted_id(&cell.run(&user, "qrsub", &["-d", "3600"]));
    master.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = master.wait();
    wait_for("the shadow holds the cell", Duration::from_secs(30), || {
        std::fs::read_to_string(cell.cell.join("daemon/sched_d.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok())
            == Some(shadow.pid())
    });
    still_held(
        &cell,
        &user,
        &other,
        ar,
        Duration::from_secs(30),
        "takeover",
    );
}

/// `qrsub -m be -M`: the mails SGE's qmaster sends at a reservation's start and end
/// ("Started", "Finished") and at its `qrdel` ("Deleted"), through the configured mailer
/// (which saves its arguments and input here).
#[test]
fn a_reservation_mails_its_start_its_end_and_its_deletion() {
    let Some(user) = user1() else {
        return skip(
            "a_reservation_mails_its_start_its_end_and_its_deletion",
            "needs sgeuser (run as root)",
        );
    };
    let cell = cell(2);
    admit_to_arusers(&cell);
    let mailer = RecordingMailer::install(&cell);
    let subjects = || -> Vec<String> {
        mailer
            .mails()
            .iter()
            .filter_map(|t| t.lines().next().map(str::to_string))
            .collect()
    };
    let _d = SchedD::start(&cell, &[]);
    let start = gridspool::time::now() + 2;
    let short = granted_id(&cell.run(
        &user,
        "qrsub",
        &[
            "-N",
            "brief",
            "-a",
            &sge_time(start),
            "-d",
            "3",
            "-m",
            "be",
            "-M",
            "x@y",
        ],
    ));
    let long = granted_id(&cell.run(
        &user,
        "qrsub",
        &["-N", "long", "-d", "3600", "-m", "e", "-M", "z@w"],
    ));
    wait_for(
        "the brief reservation's two mails",
        Duration::from_secs(30),
        || subjects().len() == 2,
    );
    let del = cell.run(&user, "qrdel", &[&long.to_string()]);
    assert_eq!(del.code, 0, "{del:?}");
    wait_for("the deletion's mail", Duration::from_secs(30), || {
        subjects().len() == 3
    });
    assert_eq!(
        subjects(),
        [
            format!("-s|Advance Reservation {short} (brief) Finished|x@y|"),
            format!("-s|Advance Reservation {short} (brief) Started|x@y|"),
            format!("-s|Advance Reservation {long} (long) Deleted|z@w|"),
        ]
    );
}
