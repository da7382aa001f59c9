//! `qstat` against SGE 8.1.9 captures (`tests/compat/qstat/`).
//!
//! Each test recreates a capture's situation in a cell through the library (jobs published
//! with `Spool::publish_job`, scheduler-computed state written with `TestCell::set_state`),
//! runs the real `qstat` binary as the capture's user and compares byte for byte (dates
//! normalised). The local host's load comes from `GRIDSPOOL_QSTAT_LOADAVG`, set to the load
//! the capture shows.

use crate::support::*;
use gridspool::identity::short_hostname;
use gridspool::model::{
    EnvVar, ErrorInfo, Holds, JobId, JobRecord, JobSpec, JobSubmission, PathSpec, PeRequest,
    PriorityInfo, ResourceRequest, RunState, RunningTask, SlotRange, Submitter, TaskIdRange,
    TaskSet, TaskUsage,
};

/// 22:45:00 UTC on the day of the captures.
const T0: i64 = 1795301100;

/// Load of the captures' host (`load_avg 2.18`, `CQLOAD 1.09`, `<load_avg>2.17627`).
const LOAD: &str = "2.17627,2";

/// A cell like the captures' cluster: one host, `all.q` with 2 slots.
fn cell() -> TestCell {
    TestCell::with_config(|c| {
        c.lines()
            .map(|l| {
                let t = l.trim_start();
                if t.starts_with("slots: ") && t[7..].trim().parse::<u32>().is_ok() {
                    format!("{}slots: 2", &l[..l.len() - t.len()])
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    })
}

fn submitter(user: &TestUser, submitted: i64) -> Submitter {
    Submitter {
        owner: user.name.clone(),
        uid: user.uid,
        group: user.name.clone(),
        gid: user.gid,
        submission_time: submitted,
        sge_o_home: format!("/home/{}", user.name),
        sge_o_log_name: user.name.clone(),
        sge_o_path: "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games".into(),
        sge_o_shell: "/bin/bash".into(),
        sge_o_workdir: format!("/home/{}", user.name),
        sge_o_host: short_hostname(),
        sge_o_mail: None,
        sge_o_tz: None,
    }
}

/// What the captures' `qsub job.sh` makes: name and script `job.sh`, `-v TERM`.
pub(crate) fn spec(name: &str) -> JobSpec {
    JobSpec {
        name: name.into(),
        script_file: name.into(),
        env: vec![EnvVar {
            name: "TERM".into(),
            value: None,
        }],
        ..JobSpec::default()
    }
}

/// The scheduler's figures for an ordinary pending or running job of the captures.
pub(crate) fn prio(prio: f64, npprior: f64) -> PriorityInfo {
    PriorityInfo {
        prio,
        nurg: 0.0,
        npprior,
        ntckts: 0.5,
        urg: 1000.0,
        rrcontr: 1000.0,
        ..PriorityInfo::default()
    }
}

/// Publishes a job and writes its state, as `qsub` then `sched_d` would.
pub(crate) fn put(
    cell: &TestCell,
    id: u32,
    user: &TestUser,
    submitted: i64,
    spec: JobSpec,
    edit: impl FnOnce(&mut JobRecord),
) -> JobRecord {
    let sub = JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: submitter(user, submitted),
        spec,
        holds: Holds::NONE,
    };
    cell.spool
        .publish_job(&sub, b"#!/bin/sh\n")
        .expect("publish");
    let mut job = JobRecord::from_submission(sub);
    edit(&mut job);
    set_state(cell, &job);
    job
}

/// Writes a job's state as `sched_d` would, readable by the test users (an installed
/// spool gives the clients the spool group instead).
fn set_state(cell: &TestCell, job: &JobRecord) {
    cell.set_state(job);
    for f in [cell.spool.state_file(job.id), cell.spool.job_file(job.id)] {
        set_mode(&f, 0o644);
    }
}

pub(crate) fn start(job: &mut JobRecord, at: i64, usage: Option<TaskUsage>) {
    let task = job.tasks.pending[0].tasks.pop_first().expect("a task");
    job.tasks.pending.retain(|g| !g.tasks.is_empty());
    job.tasks.running.push(RunningTask {
        task,
        state: RunState::Running,
        start_time: at,
        queue: "all.q".into(),
        host: short_hostname(),
        slots: 1,
        granted: Vec::new(),
        deleting: false,
        usage,
        ..RunningTask::running(task, "all.q", &short_hostname(), 1, at)
    });
}

fn h_rt(secs: &str) -> Vec<ResourceRequest> {
    vec![ResourceRequest {
        name: "h_rt".into(),
        value: secs.into(),
    }]
}

/// The captures' main context: "2 running (2 3), many pending incl. holds, array 10, job of
/// sgeuser2 27".
fn main_context(u1: &TestUser, u2: &TestUser) -> TestCell {
    let c = cell();
    let p = prio(0.505, 0.5);
    put(&c, 2, u1, T0 + 1, spec("job.sh"), |j| {
        start(j, T0 + 2, None);
        j.priority = Some(p.clone());
    });
    put(&c, 3, u1, T0 + 1, spec("job.sh"), |j| {
        start(
            j,
            T0 + 2,
            Some(TaskUsage {
                io: 0.00003,
                ..TaskUsage::default()
            }),
        );
        j.priority = Some(p.clone());
    });
    let mut sleep = spec("sleep");
    sleep.binary = true;
    sleep.args = vec!["600".into()];
    put(&c, 4, u1, T0 + 2, sleep, |j| j.priority = Some(p.clone()));
    put(&c, 5, u1, T0 + 2, spec_named("myname", "job.sh"), |j| {
        j.priority = Some(p.clone())
    });
    let mut s6 = spec("job.sh");
    s6.priority = -100;
    put(&c, 6, u1, T0 + 2, s6, |j| {
        j.priority = Some(prio(0.45617, 0.45117))
    });
    let mut s7 = spec("job.sh");
    s7.hard_resources = h_rt("600");
    put(&c, 7, u1, T0 + 2, s7, |j| j.priority = Some(p.clone()));
    let mut s8 = spec("job.sh");
    s8.pe = Some(PeRequest {
        name: "smp".into(),
        range: SlotRange { min: 2, max: 2 },
    });
    put(&c, 8, u1, T0 + 2, s8, |j| {
        j.priority = Some(PriorityInfo {
            nurg: 1.0,
            urg: 2000.0,
            rrcontr: 2000.0,
            ..prio(0.605, 0.5)
        })
    });
    let mut s9 = spec("job.sh");
    s9.hold_jid = vec!["2".into()];
    s9.predecessors = vec![JobId(2)];
    put(&c, 9, u1, T0 + 2, s9, |_| {});
    let mut s10 = spec("job.sh");
    s10.array = Some(TaskIdRange::new(1, 5, 1));
    put(&c, 10, u1, T0 + 3, s10, |j| j.priority = Some(p.clone()));
    let mut s11 = spec("job.sh");
    s11.array = Some(TaskIdRange::new(1, 3, 2));
    put(&c, 11, u1, T0 + 3, s11, |j| j.priority = Some(p.clone()));
    put(&c, 12, u1, T0 + 3, spec("job.sh"), |j| {
        j.tasks.pending[0].holds.user = true
    });
    let mut s13 = spec_named("embedded_name", "directives.sh");
    s13.hard_resources = h_rt("300");
    s13.priority = -10;
    put(&c, 13, u1, T0 + 3, s13, |j| {
        j.priority = Some(prio(0.50012, 0.49512))
    });
    put(&c, 14, u1, T0 + 3, spec("STDIN"), |j| {
        j.priority = Some(p.clone())
    });
    let mut s15 = spec_named("witharg", "job.sh");
    s15.args = vec!["hello".into()];
    put(&c, 15, u1, T0 + 3, s15, |j| j.priority = Some(p.clone()));
    let mut s16 = spec_named("after_myname", "job.sh");
    s16.hold_jid = vec!["myname".into()];
    s16.predecessors = vec![JobId(5)];
    put(&c, 16, u1, T0 + 3, s16, |_| {});
    let mut s17 = spec("job.sh");
    s17.hold_jid = vec!["999999".into()];
    put(&c, 17, u1, T0 + 3, s17, |j| j.priority = Some(p.clone()));
    let mut s18 = spec("binary");
    s18.binary = true;
    put(&c, 18, u1, T0 + 4, s18, |j| j.priority = Some(p.clone()));
    let mut s24 = spec("job.sh");
    s24.array = Some(TaskIdRange::new(1, 5, 1));
    put(&c, 24, u1, T0 + 4, s24, |j| j.priority = Some(p.clone()));
    put(&c, 27, u2, T0 + 5, spec("job.sh"), |j| {
        j.priority = Some(p.clone())
    });
    c
}

fn spec_named(name: &str, script: &str) -> JobSpec {
    JobSpec {
        script_file: script.into(),
        ..spec(name)
    }
}

/// Changes a job's state in place (as `sched_d` would after a request).
fn update(c: &TestCell, id: u32, edit: impl FnOnce(&mut JobRecord)) {
    let mut j = c.job(id).expect("job");
    edit(&mut j);
    set_state(c, &j);
}

/// "same state; qalter on pending 5/6/7, running 2".
fn after_qalter(c: &TestCell) {
    update(c, 2, |j| {
        j.spec.name = "renamed_running".into();
        j.spec.priority = -5;
        j.version = 1;
        j.priority = Some(prio(0.50256, 0.49756));
    });
    update(c, 5, |j| {
        j.spec.priority = 10;
        j.version = 1;
        j.priority = Some(prio(0.50988, 0.50488));
    });
    update(c, 6, |j| {
        j.spec.name = "renamed".into();
        j.version = 1;
    });
    update(c, 7, |j| {
        j.spec.hard_resources = h_rt("1200");
        j.version = 1;
    });
    update(c, 10, |j| {
        j.spec.priority = -7;
        j.version = 1;
        j.priority = Some(prio(0.50158, 0.49658));
    });
}

fn users() -> Option<(TestUser, TestUser)> {
    match (user1(), user2()) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    }
}

/// Runs `qstat` as `user` with the captures' load.
fn qstat_with_load(c: &TestCell, user: &TestUser, args: &[&str], load: &str) -> Run {
    let out = c
        .command("qstat", user)
        .env("GRIDSPOOL_QSTAT_LOADAVG", load)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run qstat");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn qstat(c: &TestCell, user: &TestUser, args: &[&str]) -> Run {
    qstat_with_load(c, user, args, LOAD)
}

/// The capture's arguments (after `qstat`), split like a shell would for these simple cases.
fn capture_args(cap: &Capture) -> Vec<String> {
    let cmd = cap.command.strip_prefix("qstat").unwrap_or(&cap.command);
    gridspool::compat::options::split_words(cmd)
}

fn check(c: &TestCell, user: &TestUser, case: &str) {
    check_with_load(c, user, case, LOAD);
}

fn check_with_load(c: &TestCell, user: &TestUser, case: &str, load: &str) {
    let cap = Capture::load(&format!("qstat/{case}.txt"));
    let args = capture_args(&cap);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = qstat_with_load(c, user, &args, load);
    assert_matches(&run, &cap);
}

/// The deliberate divergence of `qstat -j` (DIVERGENCES.md): the capture's
/// `scheduling info:` line replaced by what gridspool says instead.
fn check_detail(c: &TestCell, user: &TestUser, case: &str, args: &[&str], reasons: &[&str]) {
    let mut cap = Capture::load(&format!("qstat/{case}.txt"));
    with_our_reasons(&mut cap, reasons);
    let run = qstat(c, user, args);
    assert_matches(&run, &cap);
}

/// Replaces the capture's `scheduling info:` line (SGE's `schedd_job_info false`) with the
/// reasons gridspool always gives (DIVERGENCES.md).
fn with_our_reasons(cap: &mut Capture, reasons: &[&str]) {
    let off =
        "scheduling info:            (Collecting of scheduler job information is turned off)\n";
    let mut ours = String::new();
    for (i, r) in reasons.iter().enumerate() {
        ours.push_str(if i == 0 {
            "scheduling info:            "
        } else {
            "                            "
        });
        ours.push_str(r);
        ours.push('\n');
    }
    assert!(
        cap.stdout.contains(off),
        "{}: no scheduling info line",
        cap.command
    );
    cap.stdout = cap.stdout.replace(off, &ours);
}

macro_rules! main_case {
    ($name:ident, $case:literal) => {
        #[test]
        fn $name() {
            let Some((u1, u2)) = users() else {
                return skip(stringify!($name), "needs sgeuser and sgeuser2");
            };
            let c = main_context(&u1, &u2);
            check(&c, &u1, $case);
        }
    };
}

main_case!(qstat_as_sgeuser, "as-sgeuser");
main_case!(qstat_u_all, "u-all");
main_case!(qstat_u_nobody, "u-nobody");
main_case!(qstat_f, "f");
main_case!(qstat_f_u_all, "f-u-all");
main_case!(qstat_xml, "xml");
main_case!(qstat_f_xml, "f-xml");
main_case!(qstat_ext, "ext");
main_case!(qstat_ext_xml, "ext-xml");
main_case!(qstat_urg, "urg");
main_case!(qstat_pri, "pri");
main_case!(qstat_ext_urg, "ext-urg");
main_case!(qstat_s_p, "s-p");
main_case!(qstat_s_r, "s-r");
main_case!(qstat_s_h, "s-h");
main_case!(qstat_s_hu, "s-hu");
main_case!(qstat_r, "r");
main_case!(qstat_g_c, "g-c");
main_case!(qstat_g_d, "g-d");
main_case!(qstat_t, "t");
main_case!(qstat_bad_option, "bad-option");

/// `-qs` with a letter that is no queue state (SGE: its error twice, no usage) and `-l` of
/// a resource nothing offers (SGE: nothing, exit 1).
#[test]
fn qstat_refusals_of_states_and_resources_are_sges() {
    let Some(user) = user1() else {
        return skip(
            "qstat_refusals_of_states_and_resources_are_sges",
            "needs sgeuser (run as root)",
        );
    };
    let c = TestCell::new();
    for case in ["qs-e", "f-qs-de", "l-nosuch"] {
        check(&c, &user, case);
    }
}

#[test]
fn qstat_as_root_shows_nothing() {
    let (Some((u1, u2)), Some(root)) = (users(), root()) else {
        return skip(
            "qstat_as_root_shows_nothing",
            "needs root and the test users",
        );
    };
    let c = main_context(&u1, &u2);
    check(&c, &root, "as-root");
    check(&c, &root, "u-sgeuser");
}

#[test]
fn qstat_as_sgeuser2() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_as_sgeuser2", "needs sgeuser and sgeuser2");
    };
    let c = main_context(&u1, &u2);
    check(&c, &u2, "as-sgeuser2");
}

#[test]
fn qstat_without_jobs() {
    let Some((u1, _)) = users() else {
        return skip("qstat_without_jobs", "needs sgeuser");
    };
    let c = cell();
    for case in ["nojobs", "xml-nojobs", "f-nojobs", "g-c-nojobs", "help"] {
        check(&c, &u1, case);
    }
}

#[test]
fn qstat_j_details() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_j_details", "needs sgeuser and sgeuser2");
    };
    let c = main_context(&u1, &u2);
    let none: &[&str] = &["there are no messages available"];
    check_detail(&c, &u1, "j-running", &["-j", "2"], none);
    check_detail(&c, &u1, "j-pending-hrt", &["-j", "7"], none);
    check_detail(&c, &u1, "j-pe", &["-j", "8"], none);
    check_detail(
        &c,
        &u1,
        "j-hold_jid",
        &["-j", "9"],
        &["job dropped because of job dependencies"],
    );
    check_detail(&c, &u1, "j-array", &["-j", "10"], none);
    check_detail(&c, &u1, "j-directives", &["-j", "13"], none);
    check_detail(&c, &u1, "j-b-y", &["-j", "4"], none);
    check_detail(&c, &u1, "j-multiple", &["-j", "2,5"], none);
    check(&c, &u1, "j-nonexistent");
}

#[test]
fn qstat_j_shows_the_schedulers_reasons() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_j_shows_the_schedulers_reasons", "needs test users");
    };
    let c = main_context(&u1, &u2);
    let reasons = [
        "cannot run in queue \"all.q\" because it is not contained in its hard queue list (-q)",
        "(-l h_rt=600) cannot run at host \"vm\" because it offers only hc:h_rt=0",
    ];
    update(&c, 7, |j| {
        j.pending_reasons = reasons.iter().map(|s| s.to_string()).collect()
    });
    check_detail(&c, &u1, "j-pending-hrt", &["-j", "7"], &reasons);
    // `qstat -j` alone lists every reason with the jobs it applies to.
    let run = qstat(&c, &u1, &["-j"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .starts_with(&format!("scheduling info:            {}: 7\n", reasons[0])),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Job is in hold state: 12\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("job dropped because of job dependencies: 9, 16\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn qstat_j_xml() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_j_xml", "needs test users");
    };
    let c = main_context(&u1, &u2);
    let mut cap = Capture::load("qstat/j-xml.txt");
    cap.stdout = cap
        .stdout
        .replace(
            "<MES_message_number>83</MES_message_number>\n          <MES_message>(Collecting of scheduler job information is turned off)</MES_message>",
            "<MES_message_number>0</MES_message_number>\n          <MES_message>there are no messages available</MES_message>",
        );
    let run = qstat(&c, &u1, &["-j", "2", "-xml"]);
    assert_matches(&run, &cap);
}

#[test]
fn qstat_after_qalter() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_after_qalter", "needs test users");
    };
    let c = main_context(&u1, &u2);
    after_qalter(&c);
    check(&c, &u1, "pri-after-qalter");
    check_detail(
        &c,
        &u1,
        "j-after-qalter",
        &["-j", "7"],
        &["there are no messages available"],
    );
}

#[test]
fn qstat_after_qhold_and_task_hold() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_after_qhold_and_task_hold", "needs test users");
    };
    let c = main_context(&u1, &u2);
    after_qalter(&c);
    update(&c, 5, |j| j.tasks.pending[0].holds.user = true);
    check(&c, &u1, "after-qhold");
    // qrls 5 and 12 (the scheduler has not seen 12 since), qhold 10.2.
    update(&c, 5, |j| j.tasks.pending[0].holds.user = false);
    update(&c, 12, |j| j.tasks.pending[0].holds.user = false);
    update(&c, 10, |j| {
        let sel = TaskSet::from_range(TaskIdRange::single(2));
        for g in j.pending_groups_for(Some(&sel)) {
            g.holds.user = true;
        }
    });
    check(&c, &u1, "array-after-task-hold");
}

#[test]
fn qstat_after_qdel() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_after_qdel", "needs test users");
    };
    let c = main_context(&u1, &u2);
    for id in [2, 4, 5, 6, 7, 8, 12, 27] {
        c.spool.remove_job(JobId(id)).expect("remove");
    }
    let p = prio(0.555, 0.5);
    for id in [3, 11, 14, 15, 16, 17, 18, 24] {
        let p = p.clone();
        update(&c, id, move |j| j.priority = Some(p));
    }
    update(&c, 9, |j| {
        start(j, T0 + 15, None);
        j.priority = Some(prio(0.555, 0.5));
    });
    update(&c, 10, |j| {
        j.tasks.pending[0].tasks.remove(2);
        j.tasks.pending[0].tasks.remove(4);
        j.priority = Some(prio(0.55158, 0.5));
    });
    update(&c, 13, |j| j.priority = Some(prio(0.55012, 0.5)));
    check(&c, &u1, "after-qdel");
}

/// "job 33 could not open its -o file".
fn error_context(u1: &TestUser) -> TestCell {
    let c = cell();
    let mut s = spec("true");
    s.binary = true;
    s.stdout = vec![PathSpec {
        host: None,
        path: "/nonexistent-dir/out.txt".into(),
    }];
    put(&c, 33, u1, T0 + 29, s, |j| {
        j.error = Some(ErrorInfo {
            time: T0 + 30,
            message: "[1001:22800]: error: can't open output file \"/nonexistent-dir/out.txt\": No such file or directory".into(),
        });
        j.priority = Some(prio(0.555, 0.5));
    });
    c
}

#[test]
fn qstat_error_state() {
    let Some((u1, _)) = users() else {
        return skip("qstat_error_state", "needs sgeuser");
    };
    let c = error_context(&u1);
    check(&c, &u1, "error-state");
    check(&c, &u1, "f-error");
    check(&c, &u1, "explain-E");
    check_detail(
        &c,
        &u1,
        "j-error",
        &["-j", "33"],
        &["job is in error state"],
    );
}

/// "share tree; queue disabled; pending jobs of both users after usage".
fn share_context(u1: &TestUser, u2: &TestUser) -> TestCell {
    let c = TestCell::with_config(|text| {
        let text = text.replace(
            "    tmpdir: /tmp\n",
            "    tmpdir: /tmp\n    disabled: true\n",
        );
        text.lines()
            .map(|l| {
                let t = l.trim_start();
                if t.starts_with("slots: ") && t[7..].trim().parse::<u32>().is_ok() {
                    format!("{}slots: 2", &l[..l.len() - t.len()])
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    });
    let figures = [
        (43, 0.56, 1.0, 5837.0, 0.32),
        (44, 0.55713, 0.71292, 4162.0, 0.23),
        (45, 0.555, 0.5, 2918.0, 0.16),
        (46, 0.55356, 0.35646, 2081.0, 0.11),
        (47, 0.55333, 0.33333, 1945.0, 0.11),
        (48, 0.55238, 0.23764, 1387.0, 0.08),
    ];
    for (id, p, ntckts, tickets, share) in figures {
        let (user, name) = if id % 2 == 1 {
            (u1, "u1job")
        } else {
            (u2, "u2job")
        };
        put(&c, id, user, T0 + 102, spec_named(name, "job.sh"), |j| {
            j.priority = Some(PriorityInfo {
                prio: p,
                nurg: 0.5,
                npprior: 0.5,
                ntckts,
                urg: 1000.0,
                rrcontr: 1000.0,
                tickets,
                stickets: tickets,
                share,
                ..PriorityInfo::default()
            })
        });
    }
    c
}

#[test]
fn qstat_share_tree_and_disabled_queue() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_share_tree_and_disabled_queue", "needs test users");
    };
    let c = share_context(&u1, &u2);
    check_with_load(&c, &u1, "f-disabled", "1.93,2");
    check(&c, &u1, "ext-share");
    check(&c, &u1, "ext-urg-share");
    check(&c, &u1, "pri-share");
    check_detail(
        &c,
        &u1,
        "j-share",
        &["-j", "43"],
        &["there are no messages available"],
    );
}

/// `-l` with a resource nobody knows: SGE prints nothing and exits 1 (oracle).
#[test]
fn qstat_l_unknown_resource() {
    let Some((u1, _)) = users() else {
        return skip("qstat_l_unknown_resource", "needs sgeuser");
    };
    let c = cell();
    let run = qstat(&c, &u1, &["-l", "foo=1"]);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        ("", "", 1)
    );
    let run = qstat(&c, &u1, &["-l", "h_rt=1"]);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn qstat_start_time_hold_and_queue_selection() {
    let Some((u1, u2)) = users() else {
        return skip(
            "qstat_start_time_hold_and_queue_selection",
            "needs test users",
        );
    };
    let c = main_context(&u1, &u2);
    let mut s = spec("later");
    s.start_time = Some(gridspool::time::now() + 3600);
    put(&c, 30, &u1, T0 + 9, s, |_| {});
    let run = qstat(&c, &u1, &["-s", "hd"]);
    assert_eq!(run.stdout.lines().count(), 3, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("     30 0.00000 later      sgeuser      hqw")
    );
    // -q selects the running jobs of matching queue instances; pending jobs stay.
    let run = qstat(&c, &u1, &["-q", "nosuch.q", "-s", "r"]);
    assert_eq!(run.stdout, "");
    let run = qstat(&c, &u1, &["-q", "all.q", "-s", "r"]);
    assert_eq!(run.stdout.lines().count(), 4, "{}", run.stdout);
    // -qs d: no queue is disabled, so no queue instance is listed; pending jobs still are.
    let run = qstat(&c, &u1, &["-f", "-qs", "d"]);
    assert!(!run.stdout.contains("all.q@"), "{}", run.stdout);
    assert!(run.stdout.contains("PENDING JOBS"), "{}", run.stdout);
}

/// The context of the `oracle-*` captures: 103 running (`-p -5 -l h_rt=3600`), array 104
/// (1-3, submitted held, task 2 released and running), 105 (`-pe smp 2 -hold_jid orarun`).
fn oracle_context(u1: &TestUser) -> TestCell {
    let c = cell();
    let t = T0 + 3600;
    let mut s103 = spec("orarun");
    s103.binary = true;
    s103.args = vec!["600".into()];
    s103.script_file = "sleep".into();
    s103.priority = -5;
    s103.hard_resources = h_rt("3600");
    put(&c, 103, u1, t, s103, |j| {
        start(j, t + 1, None);
        j.priority = Some(PriorityInfo {
            nurg: 0.5,
            ..prio(0.55256, 0.49756)
        });
    });
    let mut s104 = spec("oraarr");
    s104.binary = true;
    s104.args = vec!["600".into()];
    s104.script_file = "sleep".into();
    s104.array = Some(TaskIdRange::new(1, 3, 1));
    put(&c, 104, u1, t, s104, |j| {
        j.tasks.pending[0].holds.user = true;
        let sel = TaskSet::from_range(TaskIdRange::single(2));
        for g in j.pending_groups_for(Some(&sel)) {
            g.holds.user = false;
        }
        j.tasks.pending.retain(|g| g.holds.user);
        let mut running = j.clone();
        running.tasks.pending = vec![gridspool::model::PendingGroup {
            tasks: sel.clone(),
            holds: Holds::NONE,
        }];
        start(&mut running, t + 2, None);
        j.tasks.running = running.tasks.running;
        j.version = 1;
        j.priority = Some(PriorityInfo {
            urg: 0.0,
            rrcontr: 0.0,
            ..prio(0.555, 0.0)
        });
    });
    let mut s105 = spec("orape");
    s105.binary = true;
    s105.args = vec!["2".into()];
    s105.script_file = "sleep".into();
    s105.pe = Some(PeRequest {
        name: "smp".into(),
        range: SlotRange { min: 2, max: 2 },
    });
    s105.hold_jid = vec!["orarun".into()];
    s105.predecessors = vec![JobId(103)];
    put(&c, 105, u1, t + 1, s105, |_| {});
    c
}

/// gridspool keeps the priority figures per job; SGE per array task, so its held tasks of
/// array 104 (never seen by its scheduler) show zeros where gridspool shows the job's
/// figures (DIVERGENCES.md). Rewrites the capture's held 104 rows accordingly.
fn per_job_priority(cap: &mut Capture) {
    let text = &mut cap.stdout;
    for (from, to) in [
        (
            "    104 0.00000 0.00000 0.00000 0.00000     0 oraarr",
            "    104 0.55500 0.00000 0.00000 0.50000     0 oraarr",
        ),
        ("    104 0.00000 oraarr", "    104 0.55500 oraarr"),
        (
            "<JB_job_number>104</JB_job_number>\n      <JAT_prio>0.00000</JAT_prio>\n      <JAT_ntix>0.00000</JAT_ntix>",
            "<JB_job_number>104</JB_job_number>\n      <JAT_prio>0.55500</JAT_prio>\n      <JAT_ntix>0.50000</JAT_ntix>",
        ),
        (
            "<JB_job_number>104</JB_job_number>\n      <JAT_prio>0.00000</JAT_prio>",
            "<JB_job_number>104</JB_job_number>\n      <JAT_prio>0.55500</JAT_prio>",
        ),
    ] {
        *text = text.replace(from, to);
    }
}

#[test]
fn qstat_oracle_formats() {
    let Some((u1, _)) = users() else {
        return skip("qstat_oracle_formats", "needs sgeuser");
    };
    let c = oracle_context(&u1);
    for case in [
        "oracle-urg-xml",
        "oracle-pri-xml",
        "oracle-r",
        "oracle-r-xml",
        "oracle-g-t",
        "oracle-t",
        "oracle-ext-pri",
    ] {
        let mut cap = Capture::load(&format!("qstat/{case}.txt"));
        per_job_priority(&mut cap);
        let args = capture_args(&cap);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_matches(&qstat(&c, &u1, &args), &cap);
    }
    check_with_load(&c, &u1, "oracle-g-c-xml", "6.87548,2");
    check_detail(
        &c,
        &u1,
        "oracle-j-array-holds",
        &["-j", "104"],
        &["Job is in hold state"],
    );
}

#[test]
fn qstat_g_t_lists_every_slot_of_a_parallel_job() {
    let Some((u1, _)) = users() else {
        return skip(
            "qstat_g_t_lists_every_slot_of_a_parallel_job",
            "needs sgeuser",
        );
    };
    let c = cell();
    let mut s = spec("pe2");
    s.binary = true;
    s.args = vec!["60".into()];
    s.script_file = "sleep".into();
    s.pe = Some(PeRequest {
        name: "smp".into(),
        range: SlotRange { min: 2, max: 2 },
    });
    put(&c, 107, &u1, T0, s, |j| {
        start(j, T0 + 1, None);
        j.tasks.running[0].slots = 2;
        j.priority = Some(prio(0.555, 0.5));
    });
    check(&c, &u1, "oracle-g-t-pe");
    check_with_load(&c, &u1, "oracle-f-g-t-pe", "8.60,2");
    check(&c, &u1, "oracle-g-t-pe-xml");
}

#[test]
fn qstat_j_of_an_array_with_options() {
    let Some((u1, _)) = users() else {
        return skip("qstat_j_of_an_array_with_options", "needs sgeuser");
    };
    let c = cell();
    let mut s = spec("xarr");
    s.binary = true;
    s.args = vec!["1".into()];
    s.script_file = "sleep".into();
    s.array = Some(TaskIdRange::new(1, 4, 1));
    s.hard_resources = h_rt("100");
    s.hold_jid = vec!["99999".into()];
    s.cwd = Some("/home/sgeuser".into());
    s.priority = -3;
    s.merge_stderr = true;
    s.stdout = vec![PathSpec {
        host: None,
        path: "/tmp/x.out".into(),
    }];
    // The capture's own times: `-xml` shows them as epoch seconds.
    let t = 1795307411;
    put(&c, 108, &u1, t, s, |j| {
        j.tasks.pending[0].holds.user = true;
        let sel = TaskSet::from_range(TaskIdRange::single(2));
        for g in j.pending_groups_for(Some(&sel)) {
            g.holds.user = false;
        }
        let mut running = j.clone();
        running.tasks.pending.retain(|g| !g.holds.user);
        start(&mut running, t + 1, None);
        j.tasks.pending.retain(|g| g.holds.user);
        j.tasks.running = running.tasks.running;
        j.version = 1;
        j.priority = Some(PriorityInfo {
            npprior: 0.0,
            ..prio(0.555, 0.0)
        });
    });
    check_detail(
        &c,
        &u1,
        "oracle-j-array-options",
        &["-j", "108"],
        &["Job is in hold state"],
    );
    let mut cap = Capture::load("qstat/oracle-j-array-options-xml.txt");
    cap.stdout = cap.stdout.replace(
        "<MES_message_number>83</MES_message_number>\n          <MES_message>(Collecting of scheduler job information is turned off)</MES_message>",
        "<MES_message_number>0</MES_message_number>\n          <MES_message>Job is in hold state</MES_message>",
    );
    assert_matches(&qstat(&c, &u1, &["-j", "108", "-xml"]), &cap);
}

#[test]
fn qstat_u_accepts_groups_and_lists() {
    let Some((u1, u2)) = users() else {
        return skip("qstat_u_accepts_groups_and_lists", "needs test users");
    };
    let c = main_context(&u1, &u2);
    let ids = |run: &Run| -> Vec<String> {
        run.stdout
            .lines()
            .skip(2)
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect()
    };
    // sgeuser2's primary group is sgeuser2.
    assert_eq!(ids(&qstat(&c, &u1, &["-u", "@sgeuser2"])), vec!["27"]);
    let both = qstat(&c, &u1, &["-u", "sgeuser2,sgeuser", "-s", "r"]);
    assert_eq!(ids(&both), vec!["2", "3"]);
    assert_eq!(qstat(&c, &u1, &["-u", "@nosuchgroup"]).stdout, "");
}

#[test]
fn qstat_j_unknown_jobs_and_overview_xml() {
    let Some((u1, _)) = users() else {
        return skip("qstat_j_unknown_jobs_and_overview_xml", "needs sgeuser");
    };
    let c = cell();
    for case in [
        "oracle-j-nonexistent-xml",
        "oracle-j-nonexistent-two",
        "oracle-j-nonexistent-name",
    ] {
        check(&c, &u1, case);
    }
    let mut cap = Capture::load("qstat/oracle-j-all-xml.txt");
    cap.stdout = cap.stdout.replace(
        "<MES_message_number>83</MES_message_number>\n        <MES_message>(Collecting of scheduler job information is turned off)</MES_message>",
        "<MES_message_number>0</MES_message_number>\n        <MES_message>there are no messages available</MES_message>",
    );
    assert_matches(&qstat(&c, &u1, &["-j", "-xml"]), &cap);
}

/// A policy other than SGE's shows its own terms: words at the end of `-pri`/`-ext` lines and
/// a `policy:` line in `-j`; SGE's policy has none, so its outputs stay SGE's (the captures).
#[test]
fn qstat_shows_the_active_policys_terms() {
    let Some((u1, _)) = users() else {
        return skip("qstat_shows_the_active_policys_terms", "needs test users");
    };
    let c = cell();
    let terms = vec![
        ("queue".to_string(), "bulk".to_string()),
        ("queue priority".to_string(), "37".to_string()),
        ("queue gap".to_string(), "5".to_string()),
    ];
    put(&c, 3, &u1, T0, spec("fb"), |j| {
        j.priority = Some(PriorityInfo {
            policy_terms: terms.clone(),
            ..prio(0.5, 0.5)
        })
    });
    for flag in ["-pri", "-ext"] {
        let run = qstat(&c, &u1, &[flag]);
        let line = run.stdout.lines().nth(2).expect("job line");
        assert!(
            line.ends_with("        queue=bulk queue_priority=37 queue_gap=5"),
            "{flag}: {line:?}"
        );
    }
    // The plain listing keeps SGE's columns.
    let run = qstat(&c, &u1, &[]);
    assert!(!run.stdout.contains("queue="), "{}", run.stdout);
    let run = qstat(&c, &u1, &["-j", "3"]);
    assert!(
        run.stdout
            .contains("\npolicy:                     queue bulk, queue priority 37, queue gap 5\nscheduling info:"),
        "{}",
        run.stdout
    );
}

/// `-s z`: a job is listed as a zombie with the tasks that finished as soon as one has, also
/// while others still wait (SGE 8.1.9 on the oracle: `137 … z … 1 1,2` beside `137 … hqw … 3,4`).
#[test]
fn qstat_s_z_lists_finished_tasks() {
    let Some((u1, _)) = users() else {
        return skip("qstat_s_z_lists_finished_tasks", "needs test users");
    };
    let c = cell();
    let mut arr = spec("zarr");
    arr.array = Some(TaskIdRange::new(1, 4, 1));
    put(&c, 137, &u1, T0, arr, |j| {
        j.tasks.pending[0].tasks = TaskSet::from_range(TaskIdRange::new(3, 4, 1));
        j.tasks.finished = 2;
        j.tasks.finished_tasks = TaskSet::from_range(TaskIdRange::new(1, 2, 1));
    });
    put(&c, 138, &u1, T0, spec("done"), |j| {
        j.tasks.pending.clear();
        j.tasks.finished = 1;
        j.tasks.finished_tasks = TaskSet::from_range(TaskIdRange::single(1));
    });
    let run = qstat(&c, &u1, &["-s", "z"]);
    let rows: Vec<&str> = run.stdout.lines().skip(2).collect();
    assert_eq!(rows.len(), 2, "{}", run.stdout);
    assert!(
        rows[0].starts_with("    137 0.00000 zarr       sgeuser      z "),
        "{}",
        rows[0]
    );
    assert!(rows[0].ends_with("    1 1,2"), "{:?}", rows[0]);
    assert!(
        rows[1].starts_with("    138 0.00000 done       sgeuser      z "),
        "{}",
        rows[1]
    );
    // Without -s z the finished tasks are not listed; the waiting ones are.
    let run = qstat(&c, &u1, &[]);
    let rows: Vec<&str> = run.stdout.lines().skip(2).collect();
    assert_eq!(rows.len(), 1, "{}", run.stdout);
    assert!(rows[0].ends_with("    1 3,4"), "{:?}", rows[0]);
    let run = qstat(&c, &u1, &["-s", "z", "-xml"]);
    assert!(
        run.stdout
            .contains("<job_list state=\"zombie\">\n      <JB_job_number>137</JB_job_number>"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("<tasks>1,2</tasks>"), "{}", run.stdout);
}

/// `-F`: each queue instance's resources in SGE 8.1.9's order and formats (the order, types
/// and formats were recorded from the oracle; the values are those of the fixed `/proc` of
/// `tests/qhost.rs`, the capture host's). `-F names` keeps only those; `-l` selects instances.
#[test]
fn qstat_f_shows_resources() {
    let Some((u1, _)) = users() else {
        return skip("qstat_f_shows_resources", "needs test users");
    };
    let c = cell();
    let proc_dir = tempfile::tempdir().expect("tempdir");
    crate::qhost::fixture_proc(proc_dir.path());
    let run = |args: &[&str]| {
        let out = c
            .command("qstat", &u1)
            .env("GRIDSPOOL_QSTAT_LOADAVG", LOAD)
            .env("GRIDSPOOL_PROC_DIR", proc_dir.path())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run qstat");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let host = short_hostname();
    let head = format!(
        "queuename                      qtype resv/used/tot. load_avg arch          states\n---------------------------------------------------------------------------------\n{:<30} BIP   0/0/2          2.18     lx-amd64      \n",
        format!("all.q@{host}")
    );
    let all = run(&["-F"]);
    let expected = format!(
        "{head}\thl:arch=lx-amd64\n\thl:num_proc=2\n\thl:mem_total=23.541G\n\thl:swap_total=0.000\n\thl:virtual_total=23.541G\n\thl:m_topology=SCC\n\thl:m_socket=1\n\thl:m_core=2\n\thl:m_thread=2\n\thl:load_avg=2.176270\n\thl:load_short=2.731445\n\thl:load_medium=2.176270\n\thl:load_long=1.058105\n\thl:mem_free=22.980G\n\thl:swap_free=0.000\n\thl:virtual_free=22.980G\n\thl:mem_used=573.781M\n\thl:swap_used=0.000\n\thl:virtual_used=573.781M\n\thl:cpu=100.000000\n\thl:m_topology_inuse=SCC\n\thl:np_load_avg=1.088135\n\thl:np_load_short=1.365722\n\thl:np_load_medium=1.088135\n\thl:np_load_long=0.529053\n\tqf:qname=all.q\n\tqf:hostname={host}\n\tqc:slots=2\n\tqf:tmpdir=/tmp\n\tqf:seq_no=0\n\tqf:rerun=0.000000\n\tqf:calendar=NONE\n\tqf:s_rt=infinity\n\tqf:h_rt=infinity\n\tqf:s_cpu=infinity\n\tqf:h_cpu=infinity\n\tqf:s_fsize=infinity\n\tqf:h_fsize=infinity\n\tqf:s_data=infinity\n\tqf:h_data=infinity\n\tqf:s_stack=infinity\n\tqf:h_stack=infinity\n\tqf:s_core=infinity\n\tqf:h_core=infinity\n\tqf:s_rss=infinity\n\tqf:h_rss=infinity\n\tqf:s_vmem=infinity\n\tqf:h_vmem=infinity\n\tqf:min_cpu_interval=00:05:00\n"
    );
    assert_eq!(all, expected);
    // The oracle's `qstat -F h_vmem,slots,load_avg`: the full list's order, not the request's.
    assert_eq!(
        run(&["-F", "h_vmem,slots,load_avg"]),
        format!("{head}\thl:load_avg=2.176270\n\tqc:slots=2\n\tqf:h_vmem=infinity\n")
    );
    let xml = run(&["-F", "arch", "-xml"]);
    assert!(
        xml.contains(
            "<arch>lx-amd64</arch>\n      <resource name=\"arch\" type=\"hl\">lx-amd64</resource>\n"
        ),
        "{xml}"
    );
    // -l selects the instances that offer the request.
    assert_eq!(run(&["-f", "-l", "slots=2"]), head);
    assert_eq!(
        run(&["-f", "-l", "slots=3"]),
        "queuename                      qtype resv/used/tot. load_avg arch          states\n"
    );
    assert_eq!(run(&["-f", "-l", "mem_free=1G"]), head);
    assert_eq!(run(&["-f", "-l", "mem_free=100G"]).lines().count(), 1);
    // Queue limits: infinity offers any amount.
    assert_eq!(run(&["-f", "-l", "h_rt=1:0:0,h_vmem=2G"]), head);
}

/// Issue 12: `JB_type` of `qstat -j -xml` has SGE's `JOB_TYPE_*` bits (a `-b y` job showed 128,
/// SGE 64), and `job_type:` of `qstat -j` names each of them. The captures
/// (`oracle-jb-type-*`) are of jobs submitted with the same options on the oracle.
#[test]
fn qstat_j_shows_sges_job_type_bits() {
    let Some((u1, _)) = users() else {
        return skip("qstat_j_shows_sges_job_type_bits", "needs sgeuser");
    };
    let c = cell();
    c.write_file(&u1, "jt.sh", "#!/bin/sh\nsleep 1\n");
    let tagged = |text: &str, tag: &str| -> String {
        text.lines()
            .find(|l| l.trim_start().starts_with(tag))
            .unwrap_or_else(|| panic!("no {tag} in:\n{text}"))
            .to_string()
    };
    let submit = |args: &str| -> String {
        let mut words = vec!["-terse", "-a", "203012312359"];
        words.extend(args.split(' '));
        let run = c.run(&u1, "qsub", &words);
        assert_eq!(run.code, 0, "{run:?}");
        run.stdout
            .trim()
            .split('.')
            .next()
            .unwrap_or("")
            .to_string()
    };
    for (case, args) in [
        ("script", "jt.sh"),
        ("binary", "-b y sleep 1"),
        ("array", "-t 1-3 jt.sh"),
        ("binary-array", "-t 1-3 -b y sleep 1"),
        ("shell-no", "-b y -shell no sleep 1"),
        ("shell-no-script", "-shell no jt.sh"),
        ("pe", "-pe smp 2 jt.sh"),
    ] {
        let cap = Capture::load(&format!("qstat/oracle-jb-type-{case}.txt"));
        let id = submit(args);
        let run = qstat(&c, &u1, &["-j", &id, "-xml"]);
        assert_eq!(
            tagged(&run.stdout, "<JB_type>"),
            tagged(&cap.stdout, "<JB_type>"),
            "{case}"
        );
    }
    let cap = Capture::load("qstat/oracle-j-noshell.txt");
    let id = submit("-b y -shell no sleep 1");
    let run = qstat(&c, &u1, &["-j", &id]);
    assert_eq!(
        tagged(&run.stdout, "job_type:"),
        tagged(&cap.stdout, "job_type:")
    );
    // `-now y` (a qsub that waits for dispatch: the job as sched_d writes it once running).
    let mut now = spec("jtnow");
    now.binary = true;
    now.now = true;
    put(&c, 126, &u1, T0, now, |j| start(j, T0 + 1, None));
    for (case, args, tag) in [
        (
            "oracle-jb-type-now",
            &["-j", "126", "-xml"][..],
            "<JB_type>",
        ),
        ("oracle-j-now", &["-j", "126"][..], "job_type:"),
    ] {
        let cap = Capture::load(&format!("qstat/{case}.txt"));
        let run = qstat(&c, &u1, args);
        assert_eq!(tagged(&run.stdout, tag), tagged(&cap.stdout, tag), "{case}");
    }
}

/// Issue 12: the task lists of partly held arrays are printed as SGE prints them, whose form
/// depends on the order in which tasks joined a list (SGE's `sge_range.c`: `1,3-5:1` for task
/// 2 released from `1-5`, but `1,3,4,5` for tasks 1, 3, 4, 5 held one by one). The same
/// commands as on the oracle (`oracle-ranges-*`), without a daemon (the clients apply their
/// requests when they list).
#[test]
fn qstat_prints_sges_task_ranges_of_partly_held_arrays() {
    let Some((u1, _)) = users() else {
        return skip(
            "qstat_prints_sges_task_ranges_of_partly_held_arrays",
            "needs sgeuser",
        );
    };
    let c = cell();
    let run = |bin: &str, args: &str| {
        let words: Vec<&str> = args.split(' ').collect();
        let r = c.run(&u1, bin, &words);
        assert!(r.code == 0, "{bin} {args}: {r:?}");
    };
    c.set_next_job_id(26);
    for (name, range) in [
        ("rngA", "1-5"),
        ("rngB", "1-10:3"),
        ("rngC", "1-8"),
        ("rngD", "1-8"),
    ] {
        run("qsub", &format!("-N {name} -t {range} -h -b y true"));
    }
    run("qrls", "26.2");
    run("qrls", "27.4");
    run("qrls", "28.2-3");
    run("qrls", "28.5");
    run("qhold", "28.2");
    run("qrls", "29.1-7:2");
    check(&c, &u1, "oracle-ranges-hu");
    check(&c, &u1, "oracle-ranges-hu-xml");
    c.set_next_job_id(41);
    for name in ["rngF", "rngG"] {
        run(
            "qsub",
            &format!("-N {name} -a 203012312359 -t 1-5 -b y true"),
        );
    }
    for t in [1, 3, 4, 5] {
        run("qhold", &format!("41.{t}"));
    }
    run("qhold", "42.1-5:2");
    run("qhold", "42.4");
    check(&c, &u1, "oracle-ranges-history");
}

/// Issue 12: every optional line of SGE's `qstat -j` (`cull_show_job`) that a submission
/// option adds, in SGE's order and format: three jobs submitted on the oracle with most
/// options between them (`oracle-j-options-*`; their context lines give the `qsub` commands)
/// and here with the same commands.
#[test]
fn qstat_j_prints_the_optional_lines_sge_prints() {
    let Some((u1, _)) = users() else {
        return skip(
            "qstat_j_prints_the_optional_lines_sge_prints",
            "needs sgeuser",
        );
    };
    let c = cell();
    let host = short_hostname();
    let submit = |args: &str| {
        let words: Vec<String> = gridspool::compat::options::split_words(args);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let r = c.run(&u1, "qsub", &words);
        assert_eq!(r.code, 0, "qsub {args}: {r:?}");
    };
    c.set_next_job_id(117);
    submit(
        "-N optA -h -A myacct -M a@b,c@d -m bea -notify -r y -l h_rt=100,h_vmem=1G -soft -l arch=lx-amd64 -hard -q all.q -p -5 -js 10 -cwd -e /tmp/e.txt -o /tmp/o.txt -j y -S /bin/bash -v FOO=bar,BAZ -ac k1=v1 -ac k2=v2 -dc k1 -R y -t 1-10:2 -tc 3 -i /dev/null -b y sleep 1",
    );
    submit(
        "-N optB -h -pe smp 1-2 -masterq all.q -a 203012312359 -shell no -w n -r n -m n -soft -q all.q -b y sleep 1",
    );
    c.set_next_job_id(120);
    submit(&format!(
        "-N optC -h -t 1-10:2 -hold_jid_ad 117 -hold_jid 118 -l h_rt=0:1:0 -m a -o {host}:/tmp/x -e /tmp/y -b y sleep 1"
    ));
    c.set_next_job_id(123);
    submit("-N optE -h -w e -b y sleep 1");
    c.write_file(&u1, "jt.sh", "#!/bin/sh\nsleep 1\n");
    // (A `#` would start a comment for `split_words`.)
    let r = c.run(
        &u1,
        "qsub",
        &[
            "-N", "optD", "-h", "-C", "#%", "-w", "w", "-wd", "/tmp", "jt.sh",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    // The oracle's jobs ran in sgeuser's home; these in the test's working directory.
    let workdir = c.workdir(&u1).to_string_lossy().into_owned();
    for (case, id, reasons) in [
        ("a", "117", &["Job is in hold state"][..]),
        (
            "b",
            "118",
            &["Job is in hold state", "execution time not reached"][..],
        ),
        (
            "c",
            "120",
            &[
                "Job is in hold state",
                "job dropped because of job dependencies",
            ][..],
        ),
        ("d", "124", &["Job is in hold state"][..]),
        ("e", "123", &["Job is in hold state"][..]),
    ] {
        let mut cap = Capture::load(&format!("qstat/oracle-j-options-{case}.txt"));
        with_our_reasons(&mut cap, reasons);
        let mut run = qstat(&c, &u1, &["-j", id]);
        run.stdout = run.stdout.replace(&workdir, "/home/sgeuser");
        assert_matches(&run, &cap);
        // The same job in XML; the scheduler's messages as `-j` shows them (DIVERGENCES.md).
        let mut cap = Capture::load(&format!("qstat/oracle-j-options-{case}-xml.txt"));
        let mut ours = String::new();
        for (i, r) in reasons.iter().enumerate() {
            if i > 0 {
                ours.push_str("\n        </element>\n        <element>\n          ");
            }
            ours.push_str(&format!("<MES_message_number>0</MES_message_number>\n          <MES_message>{r}</MES_message>"));
        }
        cap.stdout = cap.stdout.replace(
            "<MES_message_number>83</MES_message_number>\n          <MES_message>(Collecting of scheduler job information is turned off)</MES_message>",
            &ours,
        );
        let mut run = qstat(&c, &u1, &["-j", id, "-xml"]);
        run.stdout = run.stdout.replace(&workdir, "/home/sgeuser");
        // Submission times are epoch seconds in XML: the oracle's, not ours.
        let time_of = |text: &str| {
            text.split_once("<JB_submission_time>")
                .and_then(|(_, rest)| rest.split_once('<'))
                .map(|(t, _)| t.to_string())
                .unwrap_or_default()
        };
        run.stdout = run.stdout.replace(
            &format!("<JB_submission_time>{}<", time_of(&run.stdout)),
            &format!("<JB_submission_time>{}<", time_of(&cap.stdout)),
        );
        assert_matches(&run, &cap);
    }
}

/// Issue 12: `project:` (`-P`) and `deadline:` (`-dl`) of `qstat -j`, and their XML elements
/// (`oracle-j-options-f*`: the oracle had the project added and sgeuser in `deadlineusers`
/// for the capture; gridspool allows `-dl` to managers, DIVERGENCES.md).
#[test]
fn qstat_j_shows_project_and_deadline() {
    let Some((u1, _)) = users() else {
        return skip("qstat_j_shows_project_and_deadline", "needs sgeuser");
    };
    let c = TestCell::with_config(|t| {
        t.replace("managers: []", "managers: [sgeuser]")
            .replace("projects: []", "projects: [{name: qoproj}]")
    });
    c.set_next_job_id(125);
    let r = c.run(
        &u1,
        "qsub",
        &[
            "-N",
            "optF",
            "-h",
            "-P",
            "qoproj",
            "-dl",
            "203012312359",
            "-b",
            "y",
            "sleep",
            "1",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let workdir = c.workdir(&u1).to_string_lossy().into_owned();
    let mut cap = Capture::load("qstat/oracle-j-options-f.txt");
    cap.stdout = cap.stdout.replace(
        "(Collecting of scheduler job information is turned off)",
        "Job is in hold state",
    );
    let mut run = qstat(&c, &u1, &["-j", "125"]);
    run.stdout = run.stdout.replace(&workdir, "/home/sgeuser");
    assert_matches(&run, &cap);
    let cap = Capture::load("qstat/oracle-j-options-f-xml.txt");
    let run = qstat(&c, &u1, &["-j", "125", "-xml"]);
    let element = |text: &str, tag: &str| {
        let at = text
            .lines()
            .position(|l| l.trim_start().starts_with(tag))
            .unwrap_or_else(|| panic!("no {tag} in:\n{text}"));
        // The element and the one before it: its place.
        text.lines()
            .skip(at - 1)
            .take(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    for tag in ["<JB_project>", "<JB_deadline>"] {
        assert_eq!(
            element(&run.stdout, tag),
            element(&cap.stdout, tag),
            "{tag}"
        );
    }
}

/// Issue 12: a partly running array with a step (`-t 1-10:3`, tasks 1 and 4 started by the
/// scheduler one after the other) lists its pending tasks as SGE does (`7,10`).
#[test]
fn qstat_prints_the_pending_range_of_a_partly_running_stepped_array() {
    let Some((u1, _)) = users() else {
        return skip(
            "qstat_prints_the_pending_range_of_a_partly_running_stepped_array",
            "needs sgeuser",
        );
    };
    let c = cell();
    let mut s = spec("rngS");
    s.binary = true;
    s.script_file = "sleep".into();
    s.args = vec!["40".into()];
    s.array = Some(TaskIdRange::new(1, 10, 3));
    put(&c, 127, &u1, T0, s, |j| {
        start(j, T0 + 1, None);
        start(j, T0 + 1, None);
        j.priority = Some(PriorityInfo {
            npprior: 0.0,
            ..prio(0.555, 0.0)
        });
    });
    check(&c, &u1, "oracle-ranges-running");
    check(&c, &u1, "oracle-ranges-running-xml");
}
