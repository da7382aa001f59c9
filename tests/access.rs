//! Access lists at work (issue 25): `qsub`'s answers against the SGE 8.1.9 captures of
//! `tests/compat/record-issue25-acl.sh` (a queue no list admits the user to, a project's
//! `acl`/`xacl`, the global `user_lists`), and real jobs through `sched_d`: a queue fenced
//! by `user_lists` or `xuser_lists` never runs an outsider's job, which stays pending with
//! SGE's reason, while the members' run.

use crate::sched::{SchedD, accounting_records, qconf_reloaded as qconf, state, wait_for};
use crate::support::*;
use gridspool::model::JobId;
use std::time::Duration;

/// This host with two slots, `all.q` on it, the captures' lists (`acl25a`: sgeuser and
/// `@sgeuser`; `acl25d`, a department: sgeuser2) and project `prj25` (acl acl25a, xacl
/// acl25d), with `extra` for the case.
fn cell(queue: &str, host_extra: &str, extra: &str) -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2{host_extra}}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2{queue}}}\n\
             access_lists:\n\
             \x20 - {{name: acl25a, type: ACL, entries: [sgeuser, \"@sgeuser\"]}}\n\
             \x20 - {{name: acl25d, type: DEPT, fshare: 20, entries: [sgeuser2]}}\n\
             projects:\n  - {{name: prj25, acl: [acl25a], xacl: [acl25d]}}\n\
             {extra}\
             scheduler: {{policy: sge, schedd_job_info: true, schedule_interval: \"0:0:1\"}}\n"
        )
    })
}

/// Runs the qsub capture `case` as `user` in `cell`, the next job id the capture's.
fn qsub(cell: &TestCell, user: &TestUser, case: &str) {
    let cap = Capture::load(&format!("qsub/{case}.txt"));
    let id = cap.stdout.lines().chain(cap.stderr.lines()).find_map(|l| {
        l.strip_prefix("Your job ")?
            .split(' ')
            .next()?
            .parse::<u32>()
            .ok()
    });
    if let Some(id) = id {
        cell.set_next_job_id(id);
    }
    let args = gridspool::compat::options::split_words(
        cap.command.strip_prefix("qsub").unwrap_or(&cap.command),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = cell.run(user, "qsub", &args);
    assert_matches(&run, &cap);
}

#[test]
fn qsub_answers_as_sge_does_to_a_user_the_lists_keep_out() {
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        return skip(
            "qsub_answers_as_sge_does_to_a_user_the_lists_keep_out",
            "needs the test users",
        );
    };
    // all.q user_lists acl25a: sgeuser2's job is submitted, with SGE's warning and exit 1.
    let fenced = cell(", user_lists: [acl25a]", "", "");
    qsub(&fenced, &u2, "acl-outsider");
    qsub(&fenced, &u2, "acl-outsider-q");
    qsub(&fenced, &u1, "acl-member");
    let excluded = cell(", xuser_lists: [acl25a]", "", "");
    qsub(&excluded, &u1, "xacl-excluded");
    // A host's lists are the scheduler's business only.
    let host = cell("", ", user_lists: [acl25a]", "");
    qsub(&host, &u2, "host-acl-outsider");
    // A project's acl and xacl, and one that does not exist: refused.
    let open = cell("", "", "");
    qsub(&open, &u2, "P-no-access");
    qsub(&open, &u2, "P-nosuch");
    qsub(&open, &u1, "P-member");
    let projects = cell(", projects: [prj25]", "", "");
    qsub(&projects, &u1, "no-project");
    let xprojects = cell(", xprojects: [prj25]", "", "");
    qsub(&xprojects, &u1, "xproject");
    // The global configuration's user_lists.
    let global = cell("", "", "cluster_access: {user_lists: [acl25a]}\n");
    qsub(&global, &u2, "global-acl-outsider");
    assert!(
        global.run(&u1, "qsub", &["-b", "y", "-h", "true"]).code == 0,
        "a member submits"
    );
}

/// The `scheduling info:` lines of `qstat -j` output.
fn scheduling_info(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut on = false;
    for l in text.lines() {
        if let Some(r) = l.strip_prefix("scheduling info:") {
            on = true;
            out.push(r.trim().to_string());
        } else if on && l.starts_with(' ') {
            out.push(l.trim().to_string());
        } else {
            on = false;
        }
    }
    out
}

fn job_id(run: &Run) -> JobId {
    let text = format!("{}{}", run.stdout, run.stderr);
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("Your job ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no job id in {run:?}"));
    JobId(id)
}

fn running(cell: &TestCell, id: JobId) -> bool {
    state(&cell.spool, id).is_some_and(|s| !s.tasks.running.is_empty())
}

fn ended(cell: &TestCell, id: JobId) -> bool {
    !accounting_records(cell, id).is_empty()
}

/// Waits for the pass's verdict on `id` and checks `qstat -j`'s reason against capture
/// `case` (`qstat/CASE.txt`).
fn pends_with_the_reason_of(cell: &TestCell, user: &TestUser, id: JobId, case: &str) {
    wait_for("the pending job's verdict", Duration::from_secs(10), || {
        state(&cell.spool, id).is_some_and(|s| !s.pending_reasons.is_empty())
    });
    assert!(!running(cell, id), "{id} runs");
    let run = cell.run(user, "qstat", &["-j", &id.to_string()]);
    let cap = Capture::load(&format!("qstat/{case}.txt"));
    let host = gridspool::identity::short_hostname();
    let expected: Vec<String> = scheduling_info(&cap.stdout)
        .into_iter()
        .map(|l| l.replace("\"vm\"", &format!("\"{host}\"")))
        .collect();
    assert_eq!(scheduling_info(&run.stdout), expected, "{run:?}");
}

#[test]
fn a_fenced_queue_never_runs_an_outsiders_job() {
    let (Some(root), Some(u1), Some(u2)) = (root(), user1(), user2()) else {
        return skip(
            "a_fenced_queue_never_runs_an_outsiders_job",
            "needs root and the test users",
        );
    };
    let cell = cell(", user_lists: [acl25a]", "", "");
    let _d = SchedD::start(&cell, &[]);
    let sub = |u: &TestUser, args: &[&str]| {
        let mut all = vec!["-b", "y", "-o", "/dev/null", "-j", "y"];
        all.extend_from_slice(args);
        cell.run(u, "qsub", &all)
    };
    let outsider = sub(&u2, &["true"]);
    assert_eq!(outsider.code, 1, "{outsider:?}");
    let outsider = job_id(&outsider);
    let members: Vec<JobId> = (0..4).map(|_| job_id(&sub(&u1, &["true"]))).collect();
    for &m in &members {
        wait_for("a member's job ends", Duration::from_secs(30), || {
            ended(&cell, m)
        });
    }
    pends_with_the_reason_of(&cell, &u2, outsider, "j-acl-outsider");
    assert!(!ended(&cell, outsider));

    // The list turns into the queue's xuser_lists: the outsider's job runs, a member's waits.
    qconf(
        &cell,
        &root,
        &["-rattr", "queue", "user_lists", "NONE", "all.q"],
    );
    qconf(
        &cell,
        &root,
        &["-aattr", "queue", "xuser_lists", "acl25a", "all.q"],
    );
    wait_for("the outsider's job ends", Duration::from_secs(30), || {
        ended(&cell, outsider)
    });
    let excluded = sub(&u1, &["true"]);
    assert_eq!(excluded.code, 1, "{excluded:?}");
    pends_with_the_reason_of(&cell, &u1, job_id(&excluded), "j-xacl-excluded");

    // The queue takes only project prj25's jobs: a job of no project waits; prj25's acl
    // admits sgeuser, its xacl refuses sgeuser2 at submission.
    qconf(
        &cell,
        &root,
        &["-rattr", "queue", "xuser_lists", "NONE", "all.q"],
    );
    qconf(
        &cell,
        &root,
        &["-aattr", "queue", "projects", "prj25", "all.q"],
    );
    let in_project = sub(&u1, &["-P", "prj25", "true"]);
    assert_eq!(in_project.code, 0, "{in_project:?}");
    let in_project = job_id(&in_project);
    wait_for("the project's job ends", Duration::from_secs(30), || {
        ended(&cell, in_project)
    });
    let no_project = sub(&u1, &["true"]);
    pends_with_the_reason_of(&cell, &u1, job_id(&no_project), "j-no-project");
    let refused = sub(&u2, &["-P", "prj25", "true"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(
        refused.stderr,
        "Unable to run job: job rejected: no access to project \"prj25\" for user \"sgeuser2\"\nExiting.\n"
    );
    // An execution host's user_lists keep sgeuser2 off it.
    qconf(
        &cell,
        &root,
        &["-rattr", "queue", "projects", "NONE", "all.q"],
    );
    let host = gridspool::identity::short_hostname();
    qconf(
        &cell,
        &root,
        &["-aattr", "exechost", "user_lists", "acl25a", &host],
    );
    let off_host = sub(&u2, &["true"]);
    assert_eq!(off_host.code, 0, "{off_host:?}");
    pends_with_the_reason_of(&cell, &u2, job_id(&off_host), "j-host-acl-outsider");
    let run = cell.run(&root, "qdel", &["-u", "*"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn qstat_ext_shows_the_owners_department_as_sge_does() {
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        return skip(
            "qstat_ext_shows_the_owners_department_as_sge_does",
            "needs the test users",
        );
    };
    // acl25d (type DEPT) holds sgeuser2: her department.
    let dept = cell("", "", "");
    qsub(&dept, &u2, "dept-member");
    let run = dept.run(&u2, "qstat", &["-ext"]);
    assert_matches(&run, &Capture::load("qstat/ext-dept.txt"));
    // sgeuser is in no DEPT list: defaultdepartment.
    let plain = cell("", "", "");
    qsub(&plain, &u1, "P-member");
    let run = plain.run(&u1, "qstat", &["-ext"]);
    assert_matches(&run, &Capture::load("qstat/ext-P-member.txt"));
}

/// The columns of a `qstat -ext` job line that the functional policy decides: user,
/// department, state, ntckts and tckts ovrts otckt ftckt stckt share.
fn ticket_columns(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .skip(2)
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().filter(|w| !w.contains('@')).collect();
            let n = t.len();
            // The last word is the slots; the six before it the tickets and share.
            let mut row = vec![
                t[4].to_string(),
                t[6].to_string(),
                t[7].to_string(),
                t[2].to_string(),
            ];
            row.extend(t[n - 7..n - 1].iter().map(|w| w.to_string()));
            row
        })
        .collect()
}

/// A worked example against the oracle (capture `qstat/ext-dept-tickets`): departments of
/// 75 and 25 functional shares, 1,000 functional tickets, a running and a pending job in
/// each: SGE gives the running ones 750 and 250, the pending ones 93 and 31.
#[test]
fn departments_share_the_functional_tickets_as_sge_does() {
    let (Some(root), Some(u1), Some(u2)) = (root(), user1(), user2()) else {
        return skip(
            "departments_share_the_functional_tickets_as_sge_does",
            "needs root and the test users",
        );
    };
    let host = gridspool::identity::short_hostname();
    let cell = TestCell::with_config(|_| {
        format!(
            "hosts:\n  - {{name: \"{host}\", slots: 2}}\n\
             hostgroups:\n  \"@allhosts\": [\"{host}\"]\n\
             queues:\n  - {{name: all.q, hostlist: [\"@allhosts\"], slots: 2}}\n\
             access_lists:\n\
             \x20 - {{name: physics25, type: DEPT, fshare: 75, entries: [sgeuser]}}\n\
             \x20 - {{name: chem25, type: DEPT, fshare: 25, entries: [sgeuser2]}}\n\
             users:\n  - {{name: sgeuser}}\n  - {{name: sgeuser2}}\n\
             scheduler:\n  policy: sge\n  schedule_interval: \"0:0:1\"\n  halftime: 168\n\
             \x20 weight_tickets_share: 0\n  weight_tickets_functional: 1000\n\
             \x20 weight_ticket: 0.01\n  weight_waiting_time: 0\n\
             \x20 weight_urgency: 0.1\n  weight_priority: 1.0\n"
        )
    });
    let _d = SchedD::start(&cell, &[]);
    let sub = |u: &TestUser| {
        let run = cell.run(
            u,
            "qsub",
            &["-b", "y", "-o", "/dev/null", "-j", "y", "sleep", "120"],
        );
        assert_eq!(run.code, 0, "{run:?}");
        job_id(&run)
    };
    let first = [sub(&u1), sub(&u2)];
    for id in first {
        wait_for("a running job", Duration::from_secs(20), || {
            running(&cell, id)
        });
    }
    let pending = [sub(&u1), sub(&u2)];
    let cap = Capture::load("qstat/ext-dept-tickets.txt");
    let expected = ticket_columns(&cap.stdout);
    let mut last = Vec::new();
    let settled = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        let run = cell.run(&u1, "qstat", &["-ext", "-u", "*"]);
        last = ticket_columns(&run.stdout);
        last == expected
    });
    let run = cell.run(&root, "qdel", &["-u", "*"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        settled,
        "qstat -ext columns\n{last:?}\nexpected\n{expected:?} ({pending:?})"
    );
}
