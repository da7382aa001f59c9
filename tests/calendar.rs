//! Calendars (calendar_conf(5)): `qconf`'s calendar forms and a queue's `calendar` against
//! the SGE 8.1.9 captures of `tests/compat/record-issue25-cal.sh`, replayed in order on one
//! cell as they were recorded; and a calendar closing, suspending and opening a queue
//! instance through the real `sched_d` with real jobs.

use crate::support::*;

/// The oracle's cell with `cal25.q` (all.q's copy with one slot), as the recording left it.
fn oracle_cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "managers: [sgeadmin]\n\
             hosts:\n  - {{name: \"{host}\", slots: 2}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n\
             \x20 - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, pe_list: [make, smp, mpi]}}\n\
             \x20 - {{name: cal25.q, hostlist: [\"@allhosts\"], slots: 1, pe_list: [make, smp, mpi]}}\n\
             parallel_environments:\n\
             \x20 - {{name: make, slots: 999, allocation_rule: $round_robin}}\n\
             \x20 - {{name: mpi, slots: 999, allocation_rule: $fill_up}}\n\
             \x20 - {{name: smp, slots: 999, allocation_rule: $pe_slots}}\n\
             scheduler: {{policy: sge}}\n"
        )
    })
}

/// The capture `case` with the recording's scratch directory (`/tmp/issue25-cal.XXXXXX`)
/// replaced by `files`.
fn capture(case: &str, files: &std::path::Path) -> Capture {
    let mut cap = Capture::load(case);
    let dir = files.display().to_string();
    for text in [&mut cap.command, &mut cap.stdout, &mut cap.stderr] {
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("/tmp/issue25-cal.") {
            out.push_str(&rest[..at]);
            out.push_str(&dir);
            rest = &rest[at + "/tmp/issue25-cal.".len() + 6..];
        }
        out.push_str(rest);
        *text = out;
    }
    cap
}

/// Runs capture `case` (`qconf/…`) as `user` and compares; `NAME=value` words before the
/// command go to its environment.
fn replay(cell: &TestCell, user: &TestUser, case: &str, files: &std::path::Path) {
    let cap = capture(&format!("qconf/{case}.txt"), files);
    replay_capture(cell, user, &cap);
}

/// The recording script's `calfile`.
fn calfile(files: &std::path::Path, name: &str, year: &str, week: &str) {
    std::fs::write(
        files.join(name),
        format!("calendar_name    {name}\nyear             {year}\nweek             {week}\n"),
    )
    .expect("calendar file");
}

fn editor(files: &std::path::Path, name: &str, body: &str) {
    let path = files.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("editor");
    set_mode(&path, 0o755);
}

#[test]
fn qconf_calendar_forms_match_sge() {
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "qconf_calendar_forms_match_sge",
            "needs root (a manager) and the test users",
        );
    };
    let cell = oracle_cell();
    let dir = tempfile::tempdir().expect("tempdir");
    let files = dir.path();
    set_mode(files, 0o755);
    let r = |case: &str| replay(&cell, &root, case, files);
    r("scall-none");
    r("scal-nosuch");
    calfile(
        files,
        "cal25_night",
        "1.1.1999,6.1.1999,28.3.1999,30.3.1999-31.3.1999=on",
        "mon-fri=6-20",
    );
    r("Acal");
    r("Acal-again");
    r("scal");
    calfile(
        files,
        "cal25_night",
        "NONE",
        "mon-fri=20-6=suspended sat-sun=suspended",
    );
    r("Mcal");
    r("scal-after-Mcal");
    calfile(files, "cal25_other", "NONE", "NONE");
    r("Mcal-nosuch");
    r("Acal-nofile");
    replay(&cell, &user, "Acal-by-user", files);
    editor(
        files,
        "copy-editor",
        &format!("cp \"$1\" {}/template", files.display()),
    );
    editor(
        files,
        "week-editor",
        "sed -i \"s/^week .*/week mon=off/\" \"$1\"",
    );
    editor(
        files,
        "week2-editor",
        "sed -i \"s/^week .*/week tue=off/\" \"$1\"",
    );
    r("acal");
    assert_eq!(
        std::fs::read_to_string(files.join("template")).expect("template"),
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/compat/qconf/acal-template.txt")
        )
        .expect("capture"),
        "-acal's template"
    );
    for case in [
        "acal-edited",
        "scal-template",
        "acal-again",
        "mcal-nosuch",
        "mcal-unchanged",
        "mcal",
        "scal-after-mcal",
        "scall",
        "scal-two",
    ] {
        r(case);
    }
    let bad = [
        ("year", "32.1.2020"),
        ("year", "1.13.2020"),
        ("year", "1.1.2040"),
        ("year", "1.1"),
        ("year", "2.1.2020-1.1.2020"),
        ("year", "1.1.2020=on=off"),
        ("year", "1.1.2020=bogus"),
        ("year", "1.1.2020=25-26"),
        ("year", "1.1.2020=10-10"),
        ("year", "1.jan.2020=10:61-11"),
        ("year", "1.1.2020 x"),
        ("year", "=on"),
        ("week", "mon-mon"),
        ("week", "funday"),
        ("week", "mon=6"),
        ("week", "mon=bogus"),
        ("week", "24:30-1"),
        ("week", "mon-fri=6-20=on=x"),
        ("week", "mon,"),
        ("week", "on off"),
        ("week", "7-"),
    ];
    for (n, (field, value)) in bad.iter().enumerate() {
        if *field == "year" {
            calfile(files, "cal25_bad", value, "NONE");
        } else {
            calfile(files, "cal25_bad", "NONE", value);
        }
        r(&format!("Acal-bad-{field}-{}", n + 1));
        let _ = cell.run(&root, "qconf", &["-dcal", "cal25_bad"]);
    }
    calfile(
        files,
        "cal25_forms",
        "1.jan.2020,3.FEB.2021-5.3.2021=8:30-17:45:10=suspended",
        "tue-mon=12-11 Sat=on 9-17 off",
    );
    r("Acal-forms");
    r("scal-forms");
    let _ = cell.run(&root, "qconf", &["-dcal", "cal25_forms"]);
    // A queue's calendar.
    r("mattr-calendar-nosuch");
    calfile(files, "cal25_off", "NONE", "off");
    calfile(files, "cal25_susp", "NONE", "suspended");
    for c in ["cal25_off", "cal25_susp"] {
        let path = files.join(c);
        let run = cell.run(&root, "qconf", &["-Acal", path.to_str().expect("path")]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    r("mattr-calendar");
    r("sq-calendar");
    r("dcal-in-use");
    let run = cell.run(
        &root,
        "qconf",
        &["-mattr", "queue", "calendar", "NONE", "cal25.q"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    r("dcal");
    r("dcal-nosuch");
    replay(&cell, &user, "dcal-by-user", files);
    for c in ["cal25_susp", "cal25_night", "cal25_tmpl"] {
        let run = cell.run(&root, "qconf", &["-dcal", c]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    r("scall-after");
}

/// `H:M:S`, local, `secs` from now (as the calendar reads the clock: the system's zone).
fn local_daytime(secs: i64) -> String {
    let at = jiff::Zoned::now()
        .checked_add(jiff::Span::new().seconds(secs))
        .expect("time");
    format!("{}:{:02}:{:02}", at.hour(), at.minute(), at.second())
}

/// The letters of `instance`'s states in `qstat -f`.
fn instance_states(cell: &TestCell, user: &TestUser, instance: &str) -> String {
    let run = cell.run(user, "qstat", &["-f"]);
    run.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(instance))
        .and_then(|l| l.split_whitespace().nth(5))
        .unwrap_or("")
        .to_string()
}

fn sleep_stopped(cell: &TestCell, id: u32) -> Option<bool> {
    let procs: Vec<char> = crate::qmod::job_processes(cell)
        .into_iter()
        .filter(|(j, comm, _, _)| *j == id && comm == "sleep")
        .map(|(_, _, s, _)| s)
        .collect();
    (!procs.is_empty()).then(|| procs.iter().all(|s| *s == 'T'))
}

/// A calendar suspends a queue instance (its job stopped, `C`) and its next change opens it
/// again (the job continued), then closes it at a time ahead (`D`: no new work, the running
/// job goes on) and opens it at the end of that window, when the job that waited starts.
/// The windows are computed from the local clock a few seconds ahead; the test only polls
/// for states, and asserts no durations.
#[test]
fn a_calendar_suspends_closes_and_opens_a_queue_instance() {
    use crate::sched::{SchedD, wait_for};
    use std::time::Duration;
    let (Some(root), Some(user)) = (root(), user1()) else {
        return skip(
            "a_calendar_suspends_closes_and_opens_a_queue_instance",
            "needs root and the test users",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2}}\nhostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2, tmpdir: \"{{{{tmpdir}}}}\"}}\n\
             scheduler: {{policy: sge, schedule_interval: \"0:10:0\"}}\n"
        )
    });
    // No periodic pass comes within the test: only the calendar's next change wakes sched_d.
    let instance = format!("all.q@{host}");
    let _reaper = crate::qmod::Reaper(&cell);
    let _d = SchedD::start(&cell, &[]);
    let dir = tempfile::tempdir().expect("tempdir");
    set_mode(dir.path(), 0o755);
    let qconf = |args: &[&str]| {
        let run = cell.run(&root, "qconf", args);
        assert_eq!(run.code, 0, "qconf {args:?}: {run:?}");
    };
    let run = cell.run(&user, "qsub", &["-b", "y", "sleep", "600"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for("job 1 runs", Duration::from_secs(30), || {
        crate::qmod::running_jobs(&cell, &[1]) && sleep_stopped(&cell, 1) == Some(false)
    });

    // Suspended from an hour ago to an hour ahead: `C` at once, the job stopped.
    let file = dir.path().join("cal");
    let write = |week: &str| {
        std::fs::write(
            &file,
            format!("calendar_name cal\nyear NONE\nweek {week}\n"),
        )
        .expect("calendar");
    };
    write(&format!(
        "{}-{}=suspended",
        local_daytime(-3600),
        local_daytime(3600)
    ));
    qconf(&["-Acal", file.to_str().expect("path")]);
    qconf(&["-mattr", "queue", "calendar", "cal", "all.q"]);
    wait_for(
        "all.q suspended by its calendar",
        Duration::from_secs(15),
        || instance_states(&cell, &user, &instance) == "C" && sleep_stopped(&cell, 1) == Some(true),
    );
    assert!(
        cell.run(&user, "qselect", &["-qs", "C"])
            .stdout
            .contains(&instance)
    );
    // `qmod -usq` ends an operator's suspension, not the calendar's: the job stays stopped.
    for (args, suspended) in [
        (["-sq", &instance[..]], true),
        (["-usq", &instance[..]], false),
    ] {
        let run = cell.run(&root, "qmod", &args);
        assert_eq!(run.code, 0, "{run:?}");
        wait_for("qmod applied", Duration::from_secs(15), || {
            cell.spool
                .queue_instance_states()
                .suspended
                .contains(&instance)
                == suspended
        });
        assert_eq!(sleep_stopped(&cell, 1), Some(true), "after qmod {args:?}");
    }
    assert_eq!(instance_states(&cell, &user, &instance), "C");
    // Suspended until 10 s ahead.
    write(&format!(
        "{}-{}=suspended",
        local_daytime(-3600),
        local_daytime(10)
    ));
    qconf(&["-Mcal", file.to_str().expect("path")]);
    // Its next change opens it: nothing else wakes sched_d.
    wait_for("all.q open again", Duration::from_secs(40), || {
        instance_states(&cell, &user, &instance).is_empty()
            && sleep_stopped(&cell, 1) == Some(false)
    });

    // Off from 5 s to 15 s ahead: `D`, the running job goes on, a new one waits.
    let opens = jiff::Timestamp::now().as_second() + 15;
    write(&format!("{}-{}", local_daytime(5), local_daytime(15)));
    qconf(&["-Mcal", file.to_str().expect("path")]);
    wait_for(
        "all.q disabled by its calendar",
        Duration::from_secs(30),
        || instance_states(&cell, &user, &instance) == "D",
    );
    assert_eq!(
        sleep_stopped(&cell, 1),
        Some(false),
        "a disabled instance's job goes on"
    );
    let run = cell.run(&user, "qsub", &["-b", "y", "sleep", "600"]);
    assert_eq!(run.code, 0, "{run:?}");
    wait_for(
        "job 2 runs once all.q opens",
        Duration::from_secs(40),
        || crate::qmod::running_jobs(&cell, &[2]),
    );
    let started = crate::sched::state(&cell.spool, gridspool::model::JobId(2))
        .and_then(|s| s.tasks.running.first().map(|r| r.start_time))
        .expect("job 2's start");
    assert!(
        started >= opens,
        "job 2 started at {started}, while all.q was closed (until {opens})"
    );
    assert!(instance_states(&cell, &user, &instance).is_empty());
}

/// The load a capture's `qstat -f` shows (`8.27`), for `GRIDSPOOL_QSTAT_LOADAVG`.
fn capture_load(cap: &Capture) -> String {
    let load = cap
        .stdout
        .lines()
        .find(|l| l.starts_with("all.q@") || l.starts_with("cal25.q@"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap_or("1.00");
    format!("{load},2")
}

/// `qstat -f`, `qstat -f -qs D`, `qselect -qs D/C` and `qhost -q` of instances a calendar
/// disables or suspends (as `sched_d` records them) against the SGE 8.1.9 captures.
#[test]
fn calendar_states_show_as_sge_shows_them() {
    let Some(user) = user1() else {
        return skip("calendar_states_show_as_sge_shows_them", "needs sgeuser");
    };
    let cell = oracle_cell();
    let host = gridspool::identity::short_hostname();
    let instance = format!("cal25.q@{host}");
    let mut states = cell.spool.queue_instance_states();
    states.calendar_disabled.insert(instance.clone());
    cell.spool
        .write_queue_instance_states(&states)
        .expect("states");
    for case in ["qstat/f-calendar-disabled", "qstat/f-qs-D", "qselect/qs-D"] {
        let cap = Capture::load(&format!("{case}.txt"));
        let words = gridspool::compat::options::split_words(&cap.command);
        let refs: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let out = cell
            .command(&words[0], &user)
            .env("GRIDSPOOL_QSTAT_LOADAVG", capture_load(&cap))
            .args(&refs)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        assert_matches(&Run::from(out), &cap);
    }
    let qstat_with_load = |args: &[&str], load: &str| {
        let out = cell
            .command("qstat", &user)
            .env("GRIDSPOOL_QSTAT_LOADAVG", load)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("qstat");
        Run::from(out)
    };
    let gc = Capture::load("qstat/g-c-calendar-disabled.txt");
    assert_matches(&qstat_with_load(&["-g", "c"], "9.32,2"), &gc);
    // Disabled by an operator too: `Dd`, counted in `cdsuE`.
    let mut both = states.clone();
    both.disabled.insert(instance.clone());
    cell.spool
        .write_queue_instance_states(&both)
        .expect("states");
    for case in [
        "f-calendar-and-qmod-disabled",
        "g-c-calendar-and-qmod-disabled",
    ] {
        let cap = Capture::load(&format!("qstat/{case}.txt"));
        let words = gridspool::compat::options::split_words(&cap.command);
        let refs: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        assert_matches(&qstat_with_load(&refs, "9.32,2"), &cap);
    }
    cell.spool
        .write_queue_instance_states(&states)
        .expect("states");
    // qhost -q: the queue lines (the host's own values are this machine's).
    let queue_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("   "))
            .map(str::to_string)
            .collect()
    };
    let qhost = cell.run(&user, "qhost", &["-q"]);
    assert_eq!(
        queue_lines(&qhost.stdout),
        queue_lines(&Capture::load("qhost/q-calendar-disabled.txt").stdout),
        "{qhost:?}"
    );
    let mut states = cell.spool.queue_instance_states();
    states.calendar_disabled.clear();
    states.calendar_suspended.insert(instance.clone());
    cell.spool
        .write_queue_instance_states(&states)
        .expect("states");
    let cap = Capture::load("qselect/qs-C.txt");
    assert_matches(&cell.run(&user, "qselect", &["-qs", "C"]), &cap);
    let qhost = cell.run(&user, "qhost", &["-q"]);
    let want: Vec<String> = queue_lines(&Capture::load("qhost/q-calendar-suspended.txt").stdout)
        .into_iter()
        // The capture's job held cal25.q's slot; none runs here.
        .map(|l| l.replace("0/1/1", "0/0/1"))
        .collect();
    assert_eq!(queue_lines(&qhost.stdout), want, "{qhost:?}");
}
