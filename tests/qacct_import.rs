//! Issue 26: `qacct` over the accounting file of a real SGE 8.1.9 cell (the import fixture,
//! `tests/compat/import/sge-cell/accounting`, with the oracle's earlier jobs: records of jobs
//! whose prolog failed, of a job of an advance reservation, per-project and PE jobs) prints
//! what SGE's `qacct` printed over the same file, byte for byte: the fixture's own `qacct-*.txt`
//! and the captures of `record-issue26-qacct.sh` (`tests/compat/qacct/issue26-*.txt`).
//!
//! The captures were made on a machine whose zone is UTC (TZ unset, `/etc/localtime`
//! `Etc/UTC`): the commands run here with `TZ=UTC`, so that `-j`'s dates and `-b`/`-e`'s
//! local times read the same on any machine.

use crate::support::*;
use gridspool::acct::{AccountingRecord, Entry, Reader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn fixture_dir() -> PathBuf {
    PathBuf::from(crate::import::FIXTURE)
}

fn fixture_accounting() -> PathBuf {
    fixture_dir().join("accounting")
}

/// Runs gridspool's `qacct` with `args` in the zone `tz`, with no cell in its environment.
fn qacct_in(tz: &str, args: &[String]) -> Run {
    let out = Command::new(client_path("qacct"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", tz)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run qacct");
    Run::from(out)
}

fn qacct_f(args: &[&str]) -> Run {
    let mut all = vec!["-f".to_string(), fixture_accounting().display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    qacct_in("UTC", &all)
}

fn assert_exact(run: &Run, stdout: &str, stderr: &str, code: i32, what: &str) {
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.code),
        (stdout, stderr, code),
        "\n--- for `{what}`\n--- actual stdout:\n{}\n--- expected stdout:\n{stdout}\n--- actual stderr:\n{}",
        run.stdout,
        run.stderr
    );
}

/// One of the fixture's `qacct-*.txt` (SGE's stdout; it printed nothing on stderr).
fn fixture_golden(file: &str, args: &[&str]) {
    let expected = std::fs::read_to_string(fixture_dir().join(file)).expect("fixture output");
    assert_exact(&qacct_f(args), &expected, "", 0, file);
}

macro_rules! fixture_tests {
    ($($name:ident: $file:literal, [$($arg:literal),*];)*) => {$(
        #[test]
        fn $name() {
            fixture_golden($file, &[$($arg),*]);
        }
    )*};
}

fixture_tests! {
    qacct_import_fixture_o: "qacct-o.txt", ["-o"];
    qacct_import_fixture_big_p: "qacct-P.txt", ["-P"];
    qacct_import_fixture_g: "qacct-g.txt", ["-g"];
    qacct_import_fixture_q: "qacct-q.txt", ["-q"];
    qacct_import_fixture_h: "qacct-h.txt", ["-h"];
    qacct_import_fixture_j_145: "qacct-j-145.txt", ["-j", "145"];
    qacct_import_fixture_j_146: "qacct-j-146.txt", ["-j", "146"];
    qacct_import_fixture_j_147: "qacct-j-147.txt", ["-j", "147"];
    qacct_import_fixture_j_148: "qacct-j-148.txt", ["-j", "148"];
    qacct_import_fixture_j_149: "qacct-j-149.txt", ["-j", "149"];
    qacct_import_fixture_j_150: "qacct-j-150.txt", ["-j", "150"];
}

/// The fixture's usage jobs are exactly those with a `-j` output, so none is left untested.
#[test]
fn qacct_import_every_usage_job_has_its_golden_test() {
    let ids = std::fs::read_to_string(fixture_dir().join("usage-job-ids.txt")).expect("ids");
    let ids: Vec<&str> = ids.split_whitespace().collect();
    assert_eq!(ids, ["145", "146", "147", "148", "149", "150"]);
}

/// A cell with the oracle's queue at the time of the captures, for `-l`: all.q on a host
/// named `vm` (whatever this host's name), 2 slots, no limits; the fixture's own queues are
/// gone, as they were from the oracle.
fn oracle_like_cell() -> TestCell {
    let host = gridspool::identity::short_hostname();
    TestCell::with_config(|c| {
        if host == "vm" {
            c
        } else {
            c.replace(&format!("\"{host}\""), "\"vm\"")
        }
    })
}

/// A capture of `record-issue26-qacct.sh`, run in [`oracle_like_cell`]: its command line with
/// the fixture's path in place of the copy the oracle read (`accounting`), or the crafted
/// file of the same name under `tests/compat/qacct/`.
fn capture_golden(case: &str) {
    let cap = Capture::load(&format!("qacct/issue26-{case}.txt"));
    let words = gridspool::compat::options::split_words(&cap.command);
    assert_eq!(words[0], "qacct", "{}", cap.command);
    let mut args: Vec<String> = words[1..].to_vec();
    let f = args.iter().position(|a| a == "-f").expect("-f") + 1;
    let name = std::path::Path::new(&args[f])
        .file_name()
        .and_then(|n| n.to_str())
        .expect("file name")
        .to_string();
    args[f] = if name == "accounting" {
        fixture_accounting()
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/compat/qacct")
            .join(name)
    }
    .display()
    .to_string();
    let cell = oracle_like_cell();
    let out = Command::new(client_path("qacct"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TZ", "UTC")
        .env("SGE_ROOT", &cell.root)
        .env("SGE_CELL", "default")
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run qacct");
    assert_exact(
        &Run::from(out),
        &cap.stdout,
        &cap.stderr,
        cap.code,
        &cap.command,
    );
}

macro_rules! capture_tests {
    ($($name:ident: $case:literal;)*) => {$(
        #[test]
        fn $name() {
            capture_golden($case);
        }
    )*};
}

capture_tests! {
    qacct_import_summary: "summary";
    qacct_import_o: "o";
    qacct_import_u: "u";
    qacct_import_g: "g";
    qacct_import_big_p: "P";
    qacct_import_q: "q";
    qacct_import_h: "h";
    qacct_import_big_d: "D";
    qacct_import_big_a: "A";
    qacct_import_pe: "pe";
    qacct_import_slots: "slots";
    qacct_import_ar: "ar";
    qacct_import_o_sgeuser: "o-sgeuser";
    qacct_import_u_sgeuser2: "u-sgeuser2";
    qacct_import_g_sgeuser2: "g-sgeuser2";
    qacct_import_big_p_fx_proj: "P-fx_proj";
    qacct_import_big_p_none: "P-NONE";
    qacct_import_q_fx_batch: "q-fx_batch.q";
    qacct_import_q_instance: "q-fx_long.q-at-vm";
    qacct_import_q_pattern: "q-pattern";
    qacct_import_h_vm: "h-vm";
    qacct_import_big_d_fx_phys: "D-fx_phys";
    qacct_import_big_a_sge: "A-sge";
    qacct_import_pe_smp: "pe-smp";
    qacct_import_slots_2: "slots-2";
    qacct_import_ar_11: "ar-11";
    qacct_import_ar_0: "ar-0";
    qacct_import_ar_not_a_number: "ar-bad";
    qacct_import_o_big_p: "o-P";
    qacct_import_o_sgeuser_big_p: "o-sgeuser-P";
    qacct_import_q_o_big_p_big_d: "q-o-P-D";
    qacct_import_all_columns: "all-columns";
    qacct_import_big_p_pe_slots: "P-pe-slots";
    qacct_import_b: "b";
    qacct_import_e: "e";
    qacct_import_b_e: "b-e";
    qacct_import_b_big_e: "b-E";
    qacct_import_e_big_e_o: "e-E-o";
    qacct_import_b_d: "b-d";
    qacct_import_e_d: "e-d";
    qacct_import_m: "m";
    qacct_import_j_all: "j-all";
    qacct_import_j_deleted_before_it_ran: "j-10";
    qacct_import_j_prolog_failed: "j-20";
    qacct_import_j_advance_reservation: "j-94";
    qacct_import_j_by_name: "j-fx_a1";
    qacct_import_j_pattern: "j-pattern-fx_b";
    qacct_import_j_name_and_queue: "j-sleep-q-cal25";
    qacct_import_j_t_of_a_job_that_is_no_array: "j-145-t";
    qacct_import_j_unknown_id: "j-999";
    qacct_import_j_unknown_name: "j-nosuch";
    qacct_import_j_filtered_out: "j-145-o-sgeuser2";
    qacct_import_j_ar: "j-94-ar-11";
    qacct_import_j_all_ar: "j-ar-11";
    qacct_import_j_all_project_pe: "j-P-fx_other-pe-smp";
    qacct_import_h_unknown_host: "h-nosuch";
    qacct_import_q_unknown_queue: "q-nosuch";
    qacct_import_o_unknown_owner: "o-nosuch";
    qacct_import_big_p_unknown_o: "P-nosuch-o";
    qacct_import_slots_0: "slots-0";
    qacct_import_pe_none: "pe-NONE";
    qacct_import_ar_11_o: "ar-11-o";
    qacct_import_ar_big_a: "ar-A";
    qacct_import_ar_unknown: "ar-12";
    qacct_import_j_all_by_ar: "j-ar";
    qacct_import_j_t_range_of_a_job_that_is_no_array: "j-145-t-range";
    qacct_import_j_name_t: "j-fx_a1-t";
    qacct_import_j_0: "j-0";
    qacct_import_j_owner_and_queue: "j-o-sgeuser2-q-fx_long.q";
    qacct_import_big_e_alone: "E";
    qacct_import_m_o: "m-o";
    qacct_import_big_d_j_by_name: "D-j-fx_p1";
    qacct_import_h_upper_case: "h-upper";
    qacct_import_q_upper_case: "q-upper";
    qacct_import_slots_not_a_number: "slots-abc";
    qacct_import_d_not_a_number: "d-abc";
    qacct_import_t_without_j: "t-without-j";
    qacct_import_j_t_without_range: "j-t-without-range";
    qacct_import_b_two_digit_year: "b-yy";
    qacct_import_b_bad_seconds: "b-bad-seconds";
    qacct_import_b_after_e: "b-after-e";
    qacct_import_o_then_u: "o-then-u";
    qacct_import_big_p_twice: "P-twice";
    qacct_import_j_twice: "j-twice";
    qacct_import_j_pattern_then_t: "j-pattern-then-t";
    qacct_import_l_h_rt: "l-h_rt";
    qacct_import_l_h_rt_hms_o: "l-h_rt-hms-o";
    qacct_import_l_qname_and_h_rt: "l-qname-and-h_rt";
    qacct_import_l_q_pattern: "l-q-pattern";
    qacct_import_l_h: "l-h";
    qacct_import_l_hostname_pattern: "l-hostname-pattern";
    qacct_import_l_slots_2: "l-slots-2";
    qacct_import_l_slots_3_o: "l-slots-3-o";
    qacct_import_l_h_vmem: "l-h_vmem";
    qacct_import_l_s_rt_big_p: "l-s_rt-P";
    qacct_import_l_qname_nosuch_o: "l-qname-nosuch-o";
    qacct_import_l_unknown_resource: "l-unknown";
    qacct_import_l_not_a_time: "l-not-a-time";
    qacct_import_l_last_request_wins: "l-last-wins";
    qacct_import_l_not_a_memory: "l-not-a-memory";
    qacct_import_l_not_an_integer: "l-not-an-integer";
    qacct_import_l_not_a_double: "l-not-a-double";
    qacct_import_l_unknown_host: "l-unknown-host";
    qacct_import_l_no_value: "l-no-value";
    qacct_import_l_j_9: "l-j-9";
    qacct_import_l_j_of_a_gone_queue: "l-j-145";
    qacct_import_l_j_all_q: "l-j-all-q";
    qacct_import_l_slots_column: "l-slots-column";
    qacct_import_l_j_of_a_job_that_never_started: "l-j-10";
    qacct_import_l_j_unknown_name: "l-j-nosuch";
    qacct_import_l_crafted_j: "l-crafted-j";
    qacct_import_l_crafted_big_e_j: "l-crafted-E-j";
    qacct_import_l_crafted_j_902: "l-crafted-j-902";
    qacct_import_crafted_j: "crafted-j";
}

/// Every line of the file SGE wrote is a record gridspool reads (none is reported invalid:
/// the four comment lines of the head, the records of jobs that never ran with their zero
/// times and slots, the reservation job's `arid`), and each is written back byte for byte,
/// so that an imported file goes on growing in the same format.
#[test]
fn qacct_import_every_line_reads_and_writes_back_as_sge_wrote_it() {
    let text = std::fs::read_to_string(fixture_accounting()).expect("accounting");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        text.lines().take(4).filter(|l| l.starts_with('#')).count(),
        4
    );
    let records: Vec<AccountingRecord> = Reader::open(&fixture_accounting())
        .expect("open")
        .map(|e| match e.expect("read") {
            Entry::Record(r) => *r,
            Entry::Invalid { line, error, .. } => panic!("line {line} invalid: {error:?}"),
        })
        .collect();
    assert_eq!(records.len(), lines.len());
    for (r, line) in records.iter().zip(&lines) {
        assert_eq!(r.to_line(), *line);
    }
    let never_ran: Vec<u32> = records
        .iter()
        .filter(|r| r.start_time == 0)
        .map(|r| r.job_number)
        .collect();
    assert_eq!(never_ran, [10, 20]);
    assert_eq!(
        records
            .iter()
            .filter(|r| r.arid != 0)
            .map(|r| (r.job_number, r.arid, r.ar_submission_time))
            .collect::<Vec<_>>(),
        [(94, 11, 1795744951)]
    );
}

/// The dates of `-j` are local times: the same record read in another zone moves its dates
/// (Tokyo is UTC+9 all year), so the goldens hold only because the tests fix the zone.
#[test]
fn qacct_import_dates_follow_the_time_zone() {
    let args = [
        "-f".to_string(),
        fixture_accounting().display().to_string(),
        "-j".to_string(),
        "145".to_string(),
    ];
    let run = qacct_in("Asia/Tokyo", &args);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout
            .contains("\nqsub_time    Fri Nov 27 12:31:11 2026\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\nend_time     Fri Nov 27 12:31:32 2026\n"),
        "{}",
        run.stdout
    );
}

/// The file in an imported cell's own accounting path: `qacct` without `-f` reads it.
#[test]
fn qacct_import_the_cells_own_accounting_file() {
    let Some(user) = user1() else {
        return skip(
            "qacct_import_the_cells_own_accounting_file",
            "needs sgeuser (run as root)",
        );
    };
    let cell = TestCell::new();
    let path = cell.spool.accounting_path();
    std::fs::copy(fixture_accounting(), &path).expect("copy accounting");
    set_mode(&path, 0o644);
    let run_as = |args: &[&str]| {
        let out = cell
            .command("qacct", &user)
            .env("TZ", "UTC")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run qacct");
        Run::from(out)
    };
    let summary = Capture::load("qacct/issue26-summary.txt");
    assert_exact(&run_as(&[]), &summary.stdout, "", 0, "qacct");
    let j = std::fs::read_to_string(fixture_dir().join("qacct-j-150.txt")).expect("j");
    assert_exact(&run_as(&["-j", "150"]), &j, "", 0, "qacct -j 150");
}

/// `-json` has the table's groups: with `-slots -ar`, the jobs that never ran (slots 0, no
/// wallclock) are a group of their own, and the reservation's job another.
#[test]
fn qacct_import_json_groups_are_the_tables_rows() {
    let table = Capture::load("qacct/issue26-slots.txt");
    let run = qacct_f(&["-slots", "-ar", "-json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let groups: Vec<(u64, u64, f64)> = v["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["slots"].as_u64().expect("slots"),
                g["ar"].as_u64().expect("ar"),
                g["totals"]["wallclock"].as_f64().expect("wallclock"),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [(0, 0, 0.0), (1, 0, 866.0), (1, 11, 2.0), (2, 0, 20.0)]
    );
    // The table's slot groups, summed over the reservations.
    let rows: Vec<(u64, f64)> = table
        .stdout
        .lines()
        .skip(2)
        .map(|l| {
            let mut w = l.split_whitespace();
            let slots = w.next().and_then(|s| s.parse().ok()).expect("slots");
            let wall = w.next().and_then(|s| s.parse().ok()).expect("wallclock");
            (slots, wall)
        })
        .collect();
    assert_eq!(rows, [(0, 0.0), (1, 868.0), (2, 20.0)]);
}
