//! Accounting and `qacct` against the SGE 8.1.9 captures: the writer reproduces the captured
//! accounting lines byte for byte from shepherd results, and `qacct` run on those lines prints
//! what the real `qacct` printed.

use crate::support::*;
use gridspool::acct::{self, AccountingRecord, Entry, Reader};
use gridspool::config::ClusterConfig;
use gridspool::model::{
    JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange, Submitter,
    TaskIdRange,
};
use gridspool::model::{Placement, Rusage, TaskResult};
use std::path::Path;

/// The accounting lines of the captures (jobs 2, 3, 9, 28, 29, 30, 35, 36, 38, 39).
fn captured_lines() -> Vec<String> {
    let mut lines = Vec::new();
    for f in ["file-head.txt", "file-lines.txt", "file-array.txt"] {
        for line in Capture::load(&format!("accounting/{f}")).stdout.lines() {
            if !line.starts_with('#') && !lines.iter().any(|l| l == line) {
                lines.push(line.to_string());
            }
        }
    }
    lines
}

fn submitter(owner: &str, group: &str, time: i64) -> Submitter {
    Submitter {
        owner: owner.into(),
        uid: 1001,
        group: group.into(),
        gid: 1001,
        submission_time: time,
        sge_o_home: "/home/sgeuser".into(),
        sge_o_log_name: owner.into(),
        sge_o_path: "/usr/bin:/bin".into(),
        sge_o_shell: "/bin/bash".into(),
        sge_o_workdir: "/home/sgeuser".into(),
        sge_o_host: "vm".into(),
        sge_o_mail: None,
        sge_o_tz: None,
    }
}

/// The job, placement and shepherd result behind a captured line: what the scheduler and the
/// shepherd know, from which the writer must rebuild the line. The job's requests are those
/// the capture's jobs were submitted with (`-l h_rt=1200`, `-pe smp 2`, `-t`).
fn task_behind(line: &str) -> (JobRecord, Placement, TaskResult) {
    let f: Vec<&str> = line.split(':').collect();
    let num = |i: usize| f[i].parse::<f64>().expect("number");
    let job_id: u32 = f[5].parse().expect("job");
    let task: u32 = f[35].parse().expect("task");
    let mut spec = JobSpec {
        name: f[4].into(),
        account: f[6].into(),
        priority: f[7].parse().expect("priority"),
        ..JobSpec::default()
    };
    if f[39].starts_with("-l ") {
        let (name, value) = f[39][3..].split_once('=').expect("name=value");
        spec.hard_resources.push(ResourceRequest {
            name: name.into(),
            value: value.into(),
        });
    }
    if let Some(pe) = f[39].strip_prefix("-pe ") {
        let (name, n) = pe.split_once(' ').expect("pe n");
        let n: u32 = n.parse().expect("slots");
        spec.pe = Some(PeRequest {
            name: name.into(),
            range: SlotRange { min: n, max: n },
        });
    }
    if task != 0 {
        spec.array = Some(TaskIdRange::new(1, 3, 1));
    }
    let job = JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(job_id),
        submitter: submitter(f[3], f[2], f[8].parse().expect("time")),
        spec,
        holds: Default::default(),
    });
    let slots: u32 = f[34].parse().expect("slots");
    let placement = Placement {
        host: f[1].into(),
        queue: f[0].into(),
        slots,
        granted: vec![(f[1].into(), f[0].into(), slots)],
        pe: (f[33] != "NONE").then(|| f[33].to_string()),
    };
    let result = TaskResult {
        job: JobId(job_id),
        task: if task == 0 { 1 } else { task },
        host: f[1].into(),
        start_time: num(9) + 0.25,
        end_time: num(10) + 0.75,
        exit_status: f[12].parse().expect("exit"),
        signal: None,
        failed: f[11].parse().expect("failed"),
        error: None,
        job_error: false,
        supervisor_lost: false,
        rusage: Rusage {
            utime: num(14),
            stime: num(15),
            maxrss: num(16),
            ixrss: num(17),
            ismrss: num(18),
            idrss: num(19),
            isrss: num(20),
            minflt: num(21) as u64,
            majflt: num(22) as u64,
            nswap: num(23) as u64,
            inblock: num(24),
            oublock: num(25) as u64,
            msgsnd: num(26) as u64,
            msgrcv: num(27) as u64,
            nsignals: num(28) as u64,
            nvcsw: num(29) as u64,
            nivcsw: num(30) as u64,
        },
        mem: num(37),
        io: num(38),
        iow: num(40),
        maxvmem: num(42),
        pe_task: (f[41] != "NONE").then(|| f[41].to_string()),
    };
    (job, placement, result)
}

fn default_config() -> ClusterConfig {
    ClusterConfig::parse(&ClusterConfig::default_text("vm", 2)).expect("config")
}

#[test]
fn qacct_writer_reproduces_the_captured_lines() {
    let config = default_config();
    let lines = captured_lines();
    assert_eq!(lines.len(), 11);
    for line in &lines {
        let (job, placement, result) = task_behind(line);
        let record = AccountingRecord::from_task(&job, &placement, &result, &config);
        assert_eq!(&record.to_line(), line);
        let parsed = AccountingRecord::parse_line(line).expect("parse");
        assert_eq!(&parsed.to_line(), line);
    }
}

#[test]
fn qacct_append_writes_sge_header_then_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("accounting");
    let records: Vec<AccountingRecord> = captured_lines()
        .iter()
        .map(|l| AccountingRecord::parse_line(l).expect("parse"))
        .collect();
    acct::append(&path, &records[..3]).expect("append");
    acct::append(&path, &records[3..]).expect("append");
    let text = std::fs::read_to_string(&path).expect("read");
    let head = Capture::load("accounting/file-head.txt").stdout;
    let expected_head: String = head.lines().take(4).map(|l| format!("{l}\n")).collect();
    assert!(text.starts_with(&expected_head), "{text}");
    assert_eq!(acct::HEADER, expected_head);
    let body: Vec<&str> = text.lines().skip(4).collect();
    assert_eq!(body, captured_lines());
}

#[test]
fn qacct_concurrent_appends_never_interleave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("accounting");
    let record = AccountingRecord::parse_line(&captured_lines()[0]).expect("parse");
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (path, mut record) = (&path, record.clone());
            s.spawn(move || {
                for i in 0..50 {
                    record.job_number = t * 1000 + i;
                    acct::append(path, std::slice::from_ref(&record)).expect("append");
                }
            });
        }
    });
    let mut n = 0;
    for e in Reader::open(&path).expect("open") {
        match e.expect("io") {
            Entry::Record(_) => n += 1,
            Entry::Invalid { line, .. } => panic!("torn line {line}"),
        }
    }
    assert_eq!(n, 200);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.matches("# Version: 8.1.9").count(), 1);
}

/// Job 37 (`envjob`) is in the qacct captures but not in the accounting captures: its line
/// rebuilt from `qacct -j envjob`.
const JOB37: &str = "all.q:vm:sgeuser:sgeuser:envjob:37:sge:0:1795301143:1795301144:1795301144:0:0:0:0.003000:0.007000:4660.000000:0:0:0:0:637:0:0:0.000000:16:0:0:0:11:4:NONE:defaultdepartment:NONE:1:0:0.010000:0.000000:0.000000:NONE:0.000000:NONE:0.000000:0:0";

/// The captured file held more records than were captured line by line; their sums (the
/// difference between `qacct`'s totals and the captured lines) stand in one filler record of
/// a job nobody asks for.
fn filler(lines: &[String]) -> String {
    let sum = |i: usize| -> f64 {
        lines
            .iter()
            .map(|l| {
                l.split(':')
                    .nth(i)
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            })
            .sum()
    };
    let (wall, utime, stime, cpu) = (
        29.0 - sum(13),
        0.052 - sum(14),
        0.105 - sum(15),
        0.157 - sum(36),
    );
    format!(
        "all.q:vm:sgeuser:sgeuser:others:99999:sge:0:1795301100:1795301101:{}:0:0:{wall}:{utime:.6}:{stime:.6}:0.000000:0:0:0:0:0:0:0:0.000000:0:0:0:0:0:0:NONE:defaultdepartment:NONE:1:0:{cpu:.6}:0.000000:0.000000:NONE:0.000000:NONE:0.000000:0:0",
        1795301101 + wall as i64
    )
}

/// A cell whose accounting file holds the captured records, written by `acct::append`.
fn cell_with_accounting() -> TestCell {
    let cell = TestCell::new();
    let mut lines = captured_lines();
    lines.insert(9, JOB37.to_string());
    lines.push(filler(&lines));
    let records: Vec<AccountingRecord> = lines
        .iter()
        .map(|l| AccountingRecord::parse_line(l).expect("parse"))
        .collect();
    acct::append(&cell.spool.accounting_path(), &records).expect("append");
    cell
}

fn golden(case: &str) {
    let Some(user) = user1() else {
        return skip(case, "needs sgeuser (run as root)");
    };
    let cell = cell_with_accounting();
    let cap = Capture::load(&format!("qacct/{case}.txt"));
    let args: Vec<&str> = cap.command.split_whitespace().skip(1).collect();
    let run = cell.run(&user, "qacct", &args);
    assert_matches(&run, &cap);
}

#[test]
fn qacct_j() {
    golden("j");
}

#[test]
fn qacct_j_array() {
    golden("j-array");
}

#[test]
fn qacct_j_by_name() {
    golden("j-by-name");
}

#[test]
fn qacct_j_exit3() {
    golden("j-exit3");
}

#[test]
fn qacct_j_failed_binary() {
    golden("j-failed-binary");
}

#[test]
fn qacct_j_killed() {
    golden("j-killed");
}

#[test]
fn qacct_j_nonexistent() {
    golden("j-nonexistent");
}

#[test]
fn qacct_j_pe() {
    golden("j-pe");
}

#[test]
fn qacct_o() {
    golden("o");
}

#[test]
fn qacct_summary() {
    golden("summary");
}

#[test]
fn qacct_help() {
    golden("help");
}

/// A date SGE's parser reads field by field: `notadate` has a date's length, and its month
/// (`no`, 0) is what is wrong with it.
#[test]
fn qacct_b_not_a_date() {
    golden("b-notadate");
}

/// What the real qacct printed for files and options the captures do not show (recorded by
/// running `/usr/bin/qacct -f` on crafted files).
fn run_f(file: &Path, args: &[&str]) -> gridspool::cli::Output {
    let mut all = vec!["-f".to_string(), file.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    gridspool::cli::qacct::run_with(&all, Err("no cell".into()), 1795400000)
}

fn crafted_file(extra: &[&str]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp");
    let mut text = String::from(acct::HEADER);
    for l in captured_lines() {
        text.push_str(&l);
        text.push('\n');
    }
    for l in extra {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(f.path(), text).expect("write");
    let _ = &mut f;
    f
}

const ALICE: &str = "q2.q:h2:grp:alice:jobA:50:acct1:-5:1795301100:1795301200:1795301300:1:139:100:12.5:3.25:2097152.000000:1:2:3:4:5:6:7:8.5:9:10:11:12:13:14:projX:dep1:mpi:4:7:15.75:1.5:2.25:-q q2.q -pe mpi 4:3.5:host1:5368709120.000000:5:1795301000";

#[test]
fn qacct_grouped_tables_match_sge() {
    let f = crafted_file(&[ALICE]);
    let out = run_f(
        f.path(),
        &["-o", "-g", "-P", "-D", "-A", "-q", "-h", "-pe", "-slots"],
    );
    assert_eq!(out.stdout, "\
HOST CLUSTER QUEUE GROUP   OWNER   PROJECT DEPARTMENT        PE   SLOTS ACCOUNT     WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW
================================================================================================================================================================================================
h2   q2.q          grp     alice   projX   dep1              mpi      4 acct1             100        12.500         3.250        15.750              1.500              2.250              3.500
vm   all.q         sgeuser sgeuser NONE    defaultdepartment NONE     1 sge                28         0.034         0.059         0.093              0.000              0.000              0.000
vm   all.q         sgeuser sgeuser NONE    defaultdepartment smp      2 sge                 0         0.003         0.009         0.012              0.000              0.000              0.000
");
    let out = run_f(f.path(), &["-slots", "4"]);
    assert_eq!(out.stdout, "\
SLOTS    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW
=====================================================================================================================
    4          100        12.500         3.250        15.750              1.500              2.250              3.500
");
    let out = run_f(f.path(), &["-o", "nobody"]);
    assert_eq!(out.stdout, "\
OWNER      WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW
=======================================================================================================================
");
}

#[test]
fn qacct_detail_of_a_failed_pe_task_matches_sge() {
    let f = crafted_file(&[ALICE]);
    let out = run_f(f.path(), &["-j", "50"]);
    assert_eq!(out.code, 0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.contains(&"failed       1   : assumedly before job"));
    assert!(lines.contains(&"exit_status  139                  (Segmentation fault)"));
    assert!(lines.contains(&"ru_maxrss    2.000MB"));
    assert!(lines.contains(&"mem          1.500GBs"));
    assert!(lines.contains(&"io           2.250GB"));
    assert!(lines.contains(&"maxvmem      5.000GB"));
    assert!(lines.contains(&"arid         5                   "));
    assert!(lines.contains(&"category     -q q2.q -pe mpi 4"));
}

#[test]
fn qacct_invalid_lines_are_reported_and_skipped() {
    // SGE numbers the entries it parses: the four header comments and empty lines do not
    // count, lines of blanks do.
    let f = crafted_file(&["garbage line here", "", "  "]);
    let out = run_f(f.path(), &[]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr,
        "error: ignoring invalid entry in line 12\nerror: ignoring invalid entry in line 13\n"
    );
    assert!(out.stdout.ends_with(
        "           28         0.037         0.068         0.105              0.000              0.000              0.000\n"
    ));
}

#[test]
fn qacct_missing_and_empty_files() {
    let out = run_f(Path::new("/nonexistent/accounting"), &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "no jobs running since startup\n");
    assert_eq!(
        out.stderr,
        "/nonexistent/accounting: No such file or directory\n"
    );
    let empty = tempfile::NamedTempFile::new().expect("temp");
    let out = run_f(empty.path(), &[]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout,
        "Total System Usage\n    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW\n================================================================================================================\n"
    );
}

#[test]
fn qacct_task_ranges_names_and_errors() {
    let f = crafted_file(&[]);
    let out = run_f(f.path(), &["-j", "39", "-t", "3"]);
    assert_eq!(out.stdout.matches("taskid       3 ").count(), 1);
    assert!(!out.stdout.contains("taskid       2 "));
    let out = run_f(f.path(), &["-j", "39", "-t", "5"]);
    assert_eq!(out.stderr, "error: Job-array tasks 39.5-5:1 not found\n");
    let out = run_f(f.path(), &["-j", "envarr", "-t", "5-9:2"]);
    assert_eq!(
        out.stderr,
        "error: Job-array tasks \"envarr\".5-9:2 not found\n"
    );
    let out = run_f(f.path(), &["-j", "nosuch"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "error: job name nosuch not found\n")
    );
    let out = run_f(f.path(), &["-j", "env*"]);
    assert_eq!(out.stdout.matches("jobname      env").count(), 3);
    let out = run_f(f.path(), &["-t", "3"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("error: -t option requires -j option with an argument\nSGE 8.1.9\n")
    );
}

#[test]
fn qacct_time_windows() {
    let f = crafted_file(&[]);
    // Jobs started at or before 22:45:10 (UTC captures): 2, 3 and 9.
    let tz_utc = jiff::tz::TimeZone::system() == jiff::tz::TimeZone::UTC;
    if tz_utc {
        let out = run_f(f.path(), &["-e", "202611212245.10", "-o"]);
        assert!(
            out.stdout
                .contains("\nsgeuser            26         0.004         0.012         0.016"),
            "{}",
            out.stdout
        );
        let out = run_f(f.path(), &["-E", "-b", "202611212245.20"]);
        assert!(out.stdout.ends_with("=\n"), "{}", out.stdout);
    }
    let out = run_f(f.path(), &["-b", "2026"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("\nInvalid format of date/hour-minute field.\nSGE 8.1.9\n")
    );
}

/// `-l` reads the cell's queues (SGE asks its qmaster): without a cell it fails before the
/// file is read.
#[test]
fn qacct_refuses_what_it_cannot_do() {
    let f = crafted_file(&[]);
    let out = run_f(f.path(), &["-l", "h_rt=1"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "error: -l needs the cell's queues, and no cell was found\n"
    );
    assert_eq!(out.stdout, "");
    let out = run_f(f.path(), &["-x"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, gridspool::cli::qacct::usage());
}

#[test]
fn qacct_share_tree_usage_from_the_captured_file() {
    let cell = cell_with_accounting();
    let now = 1795301200;
    let decay = gridspool_policy::sharetree::DecayConfig {
        halftime_hours: 1.0,
        ..Default::default()
    };
    let (store, report) = acct::load_usage(&cell.spool.accounting_path(), &decay).expect("fold");
    assert_eq!(report.records, 13);
    assert!(report.invalid_lines.is_empty());
    let u = store
        .user("sgeuser")
        .expect("sgeuser")
        .usage_at(now, &decay);
    assert!(u.cpu > 0.1 && u.cpu < 0.157, "{u:?}");
    assert!(store.project("NONE").is_none());
}

#[test]
fn qacct_scheduler_accounts_a_finished_task() {
    let cell = TestCell::new();
    let config = default_config();
    let path = cell.spool.accounting_path();
    let mut usage = gridspool_policy::sharetree::UsageStore::new();
    assert_eq!(acct::decay_config(&config).halftime_hours, 336.0);
    let line = captured_lines()
        .into_iter()
        .find(|l| l.contains(":exit3.sh:29:"))
        .expect("job 29");
    let (job, placement, result) = task_behind(&line);
    let record =
        acct::account_task(&path, &job, &placement, &result, &config, &mut usage).expect("account");
    assert_eq!(record.to_line(), line);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text, format!("{}{line}\n", acct::HEADER));
    let decay = acct::decay_config(&config);
    let charged = usage
        .user("sgeuser")
        .expect("charged")
        .usage_at(record.end_time, &decay);
    assert!((charged.cpu - record.cpu).abs() < 1e-9, "{charged:?}");
    let out = gridspool::cli::qacct::run_with(
        &["-j".into(), "29".into()],
        Ok(path.clone()),
        record.end_time,
    );
    let cap = Capture::load("qacct/j-exit3.txt");
    assert_eq!(normalise_dates(&out.stdout), normalise_dates(&cap.stdout));
}
