//! Issue 26, the usage part: SGE 8.1.9's share-tree usage and accounting history imported into
//! a cell (`acct::read_usage_dumps`, `acct::import_history`, the usage baseline), checked
//! against what the real SGE showed in the fixture `tests/compat/import/sge-cell/`:
//! `sge_share_mon`'s node usages, and the share-tree tickets of `qstat -ext` for the same
//! jobs, through the policy and through a real `sched_d`.

use crate::sched::{SchedD, wait_for};
use crate::support::*;
use gridspool::acct::{
    Entry, Reader, UsageBaseline, import_history, load_usage_from, read_share_mon, read_usage_dumps,
};
use gridspool::config::ClusterConfig;
use gridspool::model::JobId;
use gridspool::sched::{PriorityInput, PriorityPolicy, SgePriority};
use gridspool_policy::sharetree::{DecayConfig, UsageRecord, UsageStore};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn fixture() -> PathBuf {
    PathBuf::from(crate::import::FIXTURE)
}

fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture().join(name)).expect("fixture file")
}

/// The fixture's `halftime 168`.
fn decay() -> DecayConfig {
    DecayConfig {
        halftime_hours: 168.0,
        ..DecayConfig::default()
    }
}

/// `sge_share_mon -n`: one map of name=value per node.
fn share_mon() -> Vec<BTreeMap<String, String>> {
    fixture_text("sge_share_mon-n.txt")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split('\t')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Whether `ours`, from `terms` values of the dumps, is what SGE printed: the dumps and
/// `sge_share_mon` print `%f` (six decimals), each rounding by up to half a millionth.
fn same_printed(ours: f64, terms: u32, printed: &str) -> bool {
    let sge: f64 = printed.parse().expect("number");
    (ours - sge).abs() <= 0.5e-6 * f64::from(terms + 1) + 1e-12
}

/// The usage read from SGE's spool is what `sge_share_mon` showed for every user-in-project
/// node and every project node (the sum of its users' usage in it), decayed from the spool's
/// time stamp to share_mon's `curr_time`; the long-term usage undecayed.
#[test]
fn spooled_usage_is_what_sge_share_mon_showed() {
    let got = read_usage_dumps(&fixture().join("bdb"), &decay()).expect("dumps");
    assert_eq!((got.users, got.projects), (2, 2));
    // 8.1.9's BerkeleyDB spool keeps no usage in the project objects.
    assert_eq!(got.projects_summed, vec!["fx_other", "fx_proj"]);
    // The jobs running under SGE (151, 152, 154): their usage so far is not carried.
    let mut debited = got.debited_jobs.clone();
    debited.sort();
    assert_eq!(
        debited,
        [
            ("sgeuser".to_string(), 151),
            ("sgeuser".to_string(), 152),
            ("sgeuser2".to_string(), 154)
        ]
    );
    let mut checked = Vec::new();
    for node in share_mon() {
        let (path, user, project) = (
            &node["node_name"],
            &node["user_name"],
            &node["project_name"],
        );
        let record = if !user.is_empty() && !project.is_empty() {
            got.store.user_in_project(user, project)
        } else if user.is_empty() && !project.is_empty() && *path == format!("/{project}") {
            got.store.project(project)
        } else {
            continue;
        };
        let record = record.unwrap_or_else(|| panic!("no usage for {path}"));
        // A project node's usage is the sum of its two users' in it.
        let terms = if user.is_empty() { 2 } else { 1 };
        let now: i64 = node["curr_time"].parse().expect("curr_time");
        let u = record.usage_at(now, &decay());
        let lt = record.long_term;
        for (kind, ours) in [
            ("cpu", u.cpu),
            ("mem", u.mem),
            ("io", u.io),
            // usage_weight_list cpu=1: the combined usage is the cpu.
            ("usage", u.cpu),
            ("ltcpu", lt.cpu),
            ("ltmem", lt.mem),
            ("ltio", lt.io),
        ] {
            assert!(
                same_printed(ours, terms, &node[kind]),
                "{path} {kind}: ours {ours:.6}, SGE {}",
                node[kind]
            );
        }
        checked.push(path.clone());
    }
    assert_eq!(
        checked,
        [
            "/fx_proj",
            "/fx_proj/sgeuser",
            "/fx_proj/sgeuser2",
            "/fx_other",
            "/fx_other/default/sgeuser",
            "/fx_other/default/sgeuser2"
        ]
    );
}

/// The fixture's export imported into a cell: SGE's records at the head of the cell's file,
/// the baseline covering exactly them, and `sched_d`'s start-up fold giving SGE's usage (no
/// record of SGE charged again) plus what the cell's own records add.
#[test]
fn fixture_history_and_usage_import_into_a_cell() {
    let cell = TestCell::new();
    let acct = cell.spool.accounting_path();
    let base = cell.spool.usage_baseline_path();
    let sge_records = Reader::open(&fixture().join("accounting"))
        .expect("open")
        .filter(|e| matches!(e, Ok(Entry::Record(_))))
        .count() as u64;
    let got = import_history(&fixture(), &acct, &base, &decay()).expect("import");
    assert_eq!(
        (
            got.records_imported,
            got.records_kept,
            got.records_skipped,
            got.users_with_usage,
            got.projects_with_usage
        ),
        (sge_records, 0, 0, 2, 2)
    );
    assert_eq!(got.usage_from, Some(fixture().join("bdb")));
    assert!(got.invalid_lines.is_empty());
    let sge_text = fixture_text("accounting");
    assert_eq!(std::fs::read_to_string(&acct).expect("read"), sge_text);
    assert_eq!(got.covered_bytes, sge_text.len() as u64);
    // qacct reads the history: the record of a job of SGE's as SGE's qacct showed it.
    if let Some(root) = root() {
        let run = cell.run(&root, "qacct", &["-j", "145"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            normalise_dates(&run.stdout),
            normalise_dates(&fixture_text("qacct-j-145.txt"))
        );
    }
    let dumps = read_usage_dumps(&fixture().join("bdb"), &decay()).expect("dumps");
    let (store, report) = load_usage_from(&acct, &base, &decay()).expect("fold");
    assert_eq!(report.records, 0, "SGE's records are in its usage already");
    assert!(!report.baseline.expect("baseline").replaced);
    assert_same_store(&store, &dumps.store);
    // A record of the cell's own after the import is charged on top.
    let mut line = sge_text
        .lines()
        .rfind(|l| l.contains(":sgeuser2:") && l.contains(":fx_other:"))
        .expect("a record of sgeuser2 in fx_other")
        .to_string();
    line = line.replacen(":150:", ":9150:", 1);
    let mut r = gridspool::acct::AccountingRecord::parse_line(&line).expect("record");
    r.job_number = 9150;
    r.cpu = 100.0;
    r.end_time = 1_795_750_518;
    gridspool::acct::append(&acct, &[r]).expect("append");
    let (store, report) = load_usage_from(&acct, &base, &decay()).expect("fold");
    assert_eq!(report.records, 1);
    let before = dumps
        .store
        .user_in_project("sgeuser2", "fx_other")
        .expect("usage");
    let after = store
        .user_in_project("sgeuser2", "fx_other")
        .expect("usage");
    assert!((after.usage.cpu - before.usage.cpu - 100.0).abs() < 1e-9);
    // Importing again changes nothing, and keeps the cell's record.
    let again = import_history(&fixture(), &acct, &base, &decay()).expect("import");
    assert_eq!(
        (
            again.records_imported,
            again.records_kept,
            again.records_skipped
        ),
        (sge_records, 1, sge_records)
    );
    let (store2, _) = load_usage_from(&acct, &base, &decay()).expect("fold");
    assert_same_store(&store2, &store);
}

/// The store with every time stamp `by` seconds later.
fn shifted(store: &UsageStore, by: i64) -> UsageStore {
    let shift = |r: &UsageRecord| UsageRecord {
        stamp: r.stamp.map(|s| s + by),
        ..*r
    };
    let mut out = UsageStore::new();
    for (n, r) in store.users() {
        out.set_user(n, shift(r));
    }
    for (n, r) in store.projects() {
        out.set_project(n, shift(r));
    }
    for ((u, p), r) in store.user_projects() {
        out.set_user_in_project(u, p, shift(r));
    }
    out
}

fn assert_same_store(a: &UsageStore, b: &UsageStore) {
    let mut ua: Vec<_> = a.users().map(|(n, r)| (n.to_string(), *r)).collect();
    let mut ub: Vec<_> = b.users().map(|(n, r)| (n.to_string(), *r)).collect();
    ua.sort_by(|x, y| x.0.cmp(&y.0));
    ub.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(ua, ub);
    let mut pa: Vec<_> = a.projects().map(|(n, r)| (n.to_string(), *r)).collect();
    let mut pb: Vec<_> = b.projects().map(|(n, r)| (n.to_string(), *r)).collect();
    pa.sort_by(|x, y| x.0.cmp(&y.0));
    pb.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(pa, pb);
    let mut xa: Vec<_> = a
        .user_projects()
        .map(|((u, p), r)| (format!("{u}/{p}"), *r))
        .collect();
    let mut xb: Vec<_> = b
        .user_projects()
        .map(|((u, p), r)| (format!("{u}/{p}"), *r))
        .collect();
    xa.sort_by(|x, y| x.0.cmp(&y.0));
    xb.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(xa, xb);
}

/// One job of the fixture's `qstat -ext`: the columns the share tree decides.
#[derive(Debug, Clone, PartialEq)]
struct ExtRow {
    job: u32,
    prior: String,
    ntckts: String,
    user: String,
    department: String,
    project: String,
    state: String,
    tckts: String,
    stckt: String,
    share: String,
}

/// `qstat -ext` rows (running ones have cpu, mem and io columns, pending ones not).
fn ext_rows(text: &str) -> Vec<ExtRow> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let job = w.first()?.parse().ok()?;
            let state = w.get(7)?.to_string();
            let t = if state.contains('r') { 11 } else { 8 };
            Some(ExtRow {
                job,
                prior: w.get(1)?.to_string(),
                ntckts: w.get(2)?.to_string(),
                user: w.get(4)?.to_string(),
                department: w.get(6)?.to_string(),
                project: w.get(5)?.to_string(),
                state,
                tckts: w.get(t)?.to_string(),
                stckt: w.get(t + 4)?.to_string(),
                share: w.get(t + 5)?.to_string(),
            })
        })
        .collect()
}

/// The columns of `qstat -ext -xml`'s jobs that the policy decides, job by job in order
/// (`JAT_share` with five decimals where the text form has two).
fn ext_xml_rows(text: &str) -> Vec<Vec<(String, String)>> {
    const TAGS: [&str; 12] = [
        "JB_job_number",
        "JAT_prio",
        "JAT_ntix",
        "JB_owner",
        "JB_project",
        "JB_department",
        "state",
        "tickets",
        "otickets",
        "ftickets",
        "stickets",
        "JAT_share",
    ];
    let mut rows = Vec::new();
    let mut row = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("<job_list") {
            row = Vec::new();
        } else if line == "</job_list>" {
            rows.push(std::mem::take(&mut row));
        } else if let Some((tag, rest)) = line.strip_prefix('<').and_then(|l| l.split_once('>'))
            && TAGS.contains(&tag)
            && let Some(value) = rest.strip_suffix(&format!("</{tag}>"))
        {
            row.push((tag.to_string(), value.to_string()));
        }
    }
    rows
}

/// The fixture's jobs, by number.
fn sge_rows() -> BTreeMap<u32, ExtRow> {
    let rows = ext_rows(&fixture_text("qstat-ext.txt"));
    assert_eq!(rows.len(), 8);
    rows.into_iter().map(|r| (r.job, r)).collect()
}

/// A cell with the fixture's share tree, projects, users, access lists and scheduler
/// configuration, applied with gridspool's own `qconf` from SGE's texts, on this host with
/// `slots` slots; `None` when not root (qconf's changes need a manager).
fn fixture_cell(slots: u32) -> Option<TestCell> {
    let root = root()?;
    let cell = crate::sched::cell(slots);
    for (opt, file) in [
        ("-Au", "qconf-su-fx_staff.txt"),
        ("-Au", "qconf-su-fx_phys.txt"),
        ("-Aprj", "qconf-sprj-fx_proj.txt"),
        ("-Aprj", "qconf-sprj-fx_other.txt"),
        ("-Auser", "qconf-suser-sgeuser.txt"),
        ("-Auser", "qconf-suser-sgeuser2.txt"),
        ("-Astree", "qconf-sstree.txt"),
        ("-Msconf", "qconf-ssconf.txt"),
    ] {
        let path = fixture().join(file);
        let run = cell.run(&root, "qconf", &[opt, &path.to_string_lossy()]);
        assert_eq!(run.code, 0, "qconf {opt} {file}: {run:?}");
    }
    Some(cell)
}

/// The tickets, columns as `qstat -ext` prints them.
fn printed_tickets(tckts: f64) -> String {
    format!("{}", tckts as i64)
}

/// SGE's share-tree tickets from the imported usage, in the policy: the fixture's seven jobs
/// that are not held (151, 152 of sgeuser and 154 of sgeuser2 running; 153, 155, 156, 158
/// pending), with the fixture's configuration applied by qconf and the usage of the imported
/// baseline, give the tckts, stckt and share `qstat -ext` showed under SGE. Usage decays
/// from the spool's stamp alike for every node (all have the same stamp), so the tickets stay
/// SGE's until the usage of an active node falls below its long-term target (SGE's
/// `SGE_MIN_USAGE`): here after about 33 days without new usage.
#[test]
fn imported_usage_gives_sges_tickets_in_the_policy() {
    let Some(cell) = fixture_cell(3) else {
        return skip(
            "imported_usage_gives_sges_tickets_in_the_policy",
            "qconf's changes need root",
        );
    };
    let config = ClusterConfig::load(&cell.spool.config_path()).expect("config");
    let acct = cell.spool.accounting_path();
    let base = cell.spool.usage_baseline_path();
    import_history(&fixture(), &acct, &base, &decay()).expect("import");
    let (store, _) = load_usage_from(&acct, &base, &decay()).expect("fold");
    let mut policy = SgePriority::new(&config, Arc::new(Mutex::new(store)));
    let expected = sge_policy_rows();
    let capture = capture_time();
    assert_eq!(policy_rows(&mut policy, &config, capture), expected);
    // A month later, without new usage: every node's usage decayed alike, the same tickets.
    let day = 86_400;
    assert_eq!(
        policy_rows(&mut policy, &config, capture + 30 * day),
        expected
    );
    // Once usage falls below the long-term targets it no longer decides: the tickets move
    // towards the shares (fx_proj 60 against fx_other 40).
    assert_ne!(
        policy_rows(&mut policy, &config, capture + 60 * day),
        expected
    );
    // Charging SGE's records instead (what sched_d did without a baseline) is not SGE's
    // usage: the file also holds the jobs of earlier users and projects of the same names
    // (jobs 103 to 140, of earlier recordings), whose usage SGE dropped with them.
    let (folded, _) = gridspool::acct::load_usage(&acct, &decay()).expect("fold");
    let mut charged = SgePriority::new(&config, Arc::new(Mutex::new(folded)));
    assert_ne!(policy_rows(&mut charged, &config, capture), expected);
}

/// share_mon's `curr_time`: when SGE showed the fixture's usage and tickets.
fn capture_time() -> i64 {
    share_mon()[0]["curr_time"].parse().expect("curr_time")
}

/// One job's priority columns: (job, prior, ntckts, tckts, stckt, share to five decimals).
type PolicyRow = (u32, String, String, String, String, String);

/// The fixture's jobs that are not held, as SGE showed them (`JAT_share` of the XML form).
fn sge_policy_rows() -> Vec<PolicyRow> {
    let xml_share: BTreeMap<u32, String> = ext_xml_rows(&fixture_text("qstat-ext-xml.txt"))
        .into_iter()
        .map(|row| {
            let get = |t: &str| {
                row.iter()
                    .find(|(k, _)| k == t)
                    .map(|(_, v)| v.clone())
                    .expect("tag")
            };
            (get("JB_job_number").parse().expect("job"), get("JAT_share"))
        })
        .collect();
    sge_rows()
        .values()
        .filter(|r| !r.state.contains('h'))
        .map(|r| {
            (
                r.job,
                r.prior.clone(),
                r.ntckts.clone(),
                r.tckts.clone(),
                r.stckt.clone(),
                xml_share[&r.job].clone(),
            )
        })
        .collect()
}

/// The same jobs through the policy at `now` (running ones started just before the capture).
fn policy_rows(policy: &mut SgePriority, config: &ClusterConfig, now: i64) -> Vec<PolicyRow> {
    let capture = capture_time();
    let sge = sge_rows();
    let rows: Vec<&ExtRow> = sge.values().filter(|r| !r.state.contains('h')).collect();
    let inputs: Vec<PriorityInput<'_>> = rows
        .iter()
        .map(|r| PriorityInput {
            job: JobId(r.job),
            uid: if r.user == USER1 { 1001 } else { 1002 },
            owner: &r.user,
            project: Some(&r.project),
            department: Some(if r.user == USER2 {
                "fx_phys"
            } else {
                "defaultdepartment"
            }),
            submission_time: capture - 60 + i64::from(r.job),
            posix_priority: 0,
            slots: 1,
            rrcontr: 1000.0,
            deadline: None,
            running_since: r.state.contains('r').then_some(capture - 30),
        })
        .collect();
    let got = policy.compute(&config.scheduler, now, &inputs);
    rows.iter()
        .zip(got)
        .map(|(r, p)| {
            (
                r.job,
                format!("{:.5}", p.prio),
                format!("{:.5}", p.ntckts),
                printed_tickets(p.tickets),
                printed_tickets(p.stickets),
                format!("{:.5}", p.share),
            )
        })
        .collect()
}

/// Where SGE's spool cannot be dumped, `sge_share_mon`'s text (either form) gives the same
/// usage for the tree's users and projects, within its six decimals, and an export with it
/// instead of `bdb/` imports to the same tickets.
#[test]
fn share_mon_text_gives_the_spools_usage_and_tickets() {
    let dumps = read_usage_dumps(&fixture().join("bdb"), &decay()).expect("dumps");
    let capture = capture_time();
    for file in ["sge_share_mon-n.txt", "sge_share_mon-h.txt"] {
        let mon = read_share_mon(&fixture().join(file)).expect("share_mon");
        assert_eq!((mon.users, mon.projects), (2, 2), "{file}");
        let mut pairs = 0;
        for ((u, p), r) in dumps.store.user_projects() {
            let m = mon.store.user_in_project(u, p).expect("in share_mon");
            let (a, b) = (r.usage_at(capture, &decay()), m.usage_at(capture, &decay()));
            for (x, y) in [(a.cpu, b.cpu), (a.mem, b.mem), (a.io, b.io)] {
                assert!((x - y).abs() <= 1e-6, "{file} {u}/{p}: {x} {y}");
            }
            assert!((r.long_term.cpu - m.long_term.cpu).abs() <= 1e-6);
            pairs += 1;
        }
        assert_eq!(pairs, 4);
        for (p, r) in dumps.store.projects() {
            let m = mon.store.project(p).expect("project in share_mon");
            let (a, b) = (r.usage_at(capture, &decay()), m.usage_at(capture, &decay()));
            assert!((a.cpu - b.cpu).abs() <= 1.5e-6, "{file} {p}");
        }
    }
    let Some(cell) = fixture_cell(3) else {
        return skip(
            "share_mon_text_gives_the_spools_usage_and_tickets",
            "qconf's changes need root",
        );
    };
    let export = cell.root.join("export");
    std::fs::create_dir(&export).expect("mkdir");
    for f in ["accounting", "sge_share_mon-n.txt"] {
        std::fs::copy(fixture().join(f), export.join(f)).expect("copy");
    }
    let acct = cell.spool.accounting_path();
    let base = cell.spool.usage_baseline_path();
    let got = import_history(&export, &acct, &base, &decay()).expect("import");
    assert_eq!(got.usage_from, Some(export.join("sge_share_mon-n.txt")));
    let config = ClusterConfig::load(&cell.spool.config_path()).expect("config");
    let (store, report) = load_usage_from(&acct, &base, &decay()).expect("fold");
    assert_eq!(report.records, 0);
    let mut policy = SgePriority::new(&config, Arc::new(Mutex::new(store)));
    assert_eq!(
        policy_rows(&mut policy, &config, capture),
        sge_policy_rows()
    );
}

/// The tickets through a real `sched_d` on the imported cell: the fixture's jobs submitted
/// again as sgeuser and sgeuser2 (one held; `-P` only for 158, the others are in their
/// owner's default project), 151, 152 and 154 running on the cell's
/// three slots, and `qstat -ext -u '*'` shows SGE's rows: the same order, priorities,
/// normalised tickets, states, and tckts, stckt and share for every job. (A `sched_d` that
/// charged SGE's records instead of starting from the baseline showed 2620 tickets for 151
/// and 152, 4759 for 154, and 158 ahead of 156.)
#[test]
fn imported_usage_gives_sges_qstat_ext_tickets() {
    let (Some(u1), Some(u2)) = (user1(), user2()) else {
        return skip(
            "imported_usage_gives_sges_qstat_ext_tickets",
            "needs root and the test users",
        );
    };
    let Some(cell) = fixture_cell(3) else {
        return skip(
            "imported_usage_gives_sges_qstat_ext_tickets",
            "qconf's changes need root",
        );
    };
    let acct = cell.spool.accounting_path();
    let base = cell.spool.usage_baseline_path();
    import_history(&fixture(), &acct, &base, &decay()).expect("import");
    // The test must not depend on the day it runs: the usage is stamped as if SGE had
    // spooled it as long before now as it had before share_mon's capture (how decay over
    // time changes the tickets is the policy test's).
    let mut baseline = UsageBaseline::read(&base).expect("read").expect("baseline");
    let capture = capture_time();
    baseline.store = shifted(&baseline.store, gridspool::time::now() - capture);
    baseline.write(&base).expect("write");
    cell.set_next_job_id(151);
    let d = SchedD::start(&cell, &[]);
    let sge = sge_rows();
    let running = |id: u32| cell.job(id).is_some_and(|j| !j.tasks.running.is_empty());
    // In SGE's order; a job that must not start yet is held until the slots are taken. A
    // job in its owner's default project (`qconf-suser-*.txt`) is submitted without `-P`, as
    // a site's users do: SGE's qmaster puts it in that project (`sge_job_verify.c`).
    let default_project = |user: &str| if user == USER1 { "fx_proj" } else { "fx_other" };
    for (id, row) in &sge {
        let user = if row.user == USER1 { &u1 } else { &u2 };
        let mut args = vec!["-terse", "-o", "/dev/null", "-j", "y"];
        if row.project != default_project(&row.user) {
            args.extend(["-P", row.project.as_str()]);
        }
        let hold = row.state.contains('h') || *id == 153;
        if hold {
            args.push("-h");
        }
        args.extend(["-N", "fx", "-b", "y", "sleep", "3600"]);
        let run = cell.run(user, "qsub", &args);
        assert_eq!(run.code, 0, "qsub {id}: {run:?}");
        assert_eq!(run.stdout.trim(), id.to_string());
        if row.state.contains('r') {
            wait_for(
                &format!("job {id} running"),
                Duration::from_secs(30),
                || running(*id),
            );
        }
    }
    let run = cell.run(&u1, "qrls", &["153"]);
    assert_eq!(run.code, 0, "{run:?}");
    // Every row as SGE printed it, in its order (by priority), but for the job names, the
    // queues and the usage sampled so far.
    let expected: Vec<ExtRow> = ext_rows(&fixture_text("qstat-ext.txt"));
    let mut last = String::new();
    let matched = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(200));
        let run = cell.run(&u1, "qstat", &["-ext", "-u", "*"]);
        last = run.stdout.clone();
        ext_rows(&run.stdout) == expected
    });
    assert!(
        matched,
        "qstat -ext -u '*':\n{last}\nSGE's:\n{}\nlog:\n{}",
        fixture_text("qstat-ext.txt"),
        d.log_text()
    );
    let expected = ext_xml_rows(&fixture_text("qstat-ext-xml.txt"));
    assert_eq!(expected.len(), 8);
    let run = cell.run(&u1, "qstat", &["-ext", "-xml", "-u", "*"]);
    assert_eq!(ext_xml_rows(&run.stdout), expected, "{}", run.stdout);
    // Nothing left running when the cell goes.
    for (id, row) in &sge {
        let user = if row.user == USER1 { &u1 } else { &u2 };
        cell.run(user, "qdel", &[&id.to_string()]);
    }
    wait_for("the jobs deleted", Duration::from_secs(30), || {
        sge.keys().all(|&id| !running(id))
    });
    drop(d);
}

/// A job without `-P` is in its owner's default project, as SGE's qmaster puts it: `qstat
/// -ext` shows the project; and a default project whose acl does not admit the owner refuses
/// the job as a `-P` of it would (`record-issue26-usage.sh`).
#[test]
fn jobs_without_p_are_in_the_default_project() {
    let (Some(root), Some(u1)) = (root(), user1()) else {
        return skip(
            "jobs_without_p_are_in_the_default_project",
            "needs root and sgeuser",
        );
    };
    let cell = TestCell::new();
    let qconf = |opt: &str, text: &str| {
        let path = cell.root.join("object.txt");
        std::fs::write(&path, text).expect("write");
        let run = cell.run(&root, "qconf", &[opt, &path.to_string_lossy()]);
        assert_eq!(run.code, 0, "qconf {opt} {text}: {run:?}");
    };
    qconf(
        "-Au",
        "name    us_acl\ntype    ACL\nfshare  0\noticket 0\nentries sgeuser2\n",
    );
    qconf(
        "-Aprj",
        "name us_proj\noticket 0\nfshare 0\nacl NONE\nxacl NONE\n",
    );
    qconf(
        "-Aprj",
        "name us_closed\noticket 0\nfshare 0\nacl us_acl\nxacl NONE\n",
    );
    let user = |project: &str| {
        format!("name sgeuser\noticket 0\nfshare 0\ndelete_time 0\ndefault_project {project}\n")
    };
    qconf("-Auser", &user("us_proj"));
    cell.set_next_job_id(159);
    replay_capture(&cell, &u1, &Capture::load("qsub/default-project.txt"));
    replay_capture(&cell, &u1, &Capture::load("qstat/ext-default-project.txt"));
    qconf("-Muser", &user("us_closed"));
    replay_capture(
        &cell,
        &u1,
        &Capture::load("qsub/default-project-no-access.txt"),
    );
}
