use super::*;
use crate::acct::AccountingRecord;

fn record(owner: &str, job: u32, ran: i64, cpu: f64) -> String {
    AccountingRecord {
        qname: "all.q".into(),
        hostname: "h".into(),
        group: "g".into(),
        owner: owner.into(),
        job_name: "j".into(),
        job_number: job,
        start_time: 1_000_000 + i64::from(job) * 10,
        end_time: 1_000_000 + i64::from(job) * 10 + ran,
        cpu,
        category: "-l h_rt=1000".into(),
        pe_taskid: "NONE".into(),
        ..AccountingRecord::default()
    }
    .to_line()
        + "\n"
}

fn append(spool: &Spool, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(spool.accounting_path())
        .expect("accounting");
    f.write_all(text.as_bytes()).expect("append");
}

/// No decay: usage is the sum of the records'.
fn decay() -> DecayConfig {
    DecayConfig {
        halftime_hours: 0.0,
        ..DecayConfig::default()
    }
}

/// What a forecast sees: alice's usage and her learned run time.
fn seen(h: &History) -> (f64, Option<i64>) {
    (
        h.usage.user("alice").map_or(0.0, |u| u.usage.cpu),
        h.learned.of("alice", "j", "-l h_rt=1000", Some(1000)),
    )
}

/// A kept history goes on with the records after it alone, and gives what reading the whole
/// file gives; one that no longer holds (the file rotated, the decay changed) is read whole.
#[test]
fn a_kept_history_goes_on_from_its_end_and_gives_what_a_whole_read_gives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::create(dir.path()).expect("spool");
    append(
        &spool,
        &format!(
            "{}{}{}",
            crate::acct::HEADER,
            record("alice", 1, 100, 10.0),
            record("alice", 2, 200, 20.0)
        ),
    );
    let first = load(&spool, &decay(), true, true).expect("history");
    assert_eq!(first.records_read, 2);
    // Two more, one of them still being written when the next forecast reads.
    let third = record("alice", 3, 300, 30.0);
    append(&spool, &format!("{}{}", third, &third[..20]));
    let next = load(&spool, &decay(), true, true).expect("history");
    assert_eq!(next.records_read, 1, "only the record after the kept end");
    append(&spool, &third[20..]);
    let last = load(&spool, &decay(), true, true).expect("history");
    assert_eq!(last.records_read, 1, "the record finished since");
    // Read whole without a kept history (`gridspool-sim` reads it but keeps none).
    std::fs::remove_file(spool.daemon_dir().join(FILE)).expect("rm");
    let fresh = load(&spool, &decay(), true, false).expect("history");
    assert_eq!(fresh.records_read, 4);
    assert_eq!(seen(&last), seen(&fresh));
    assert_eq!(seen(&fresh), (90.0, Some(250)));
    assert!(
        !spool.daemon_dir().join(FILE).exists(),
        "kept only when asked"
    );

    // Kept again, then the decay changes: read whole.
    load(&spool, &decay(), true, true).expect("history");
    let other = DecayConfig {
        halftime_hours: 1.0,
        ..DecayConfig::default()
    };
    assert_eq!(load(&spool, &other, true, true).expect("h").records_read, 4);
    // Rotated: a new file (another inode) with one record.
    let rotated = spool.accounting_path().with_extension("0");
    std::fs::rename(spool.accounting_path(), &rotated).expect("rotate");
    append(
        &spool,
        &format!("{}{}", crate::acct::HEADER, record("alice", 9, 50, 5.0)),
    );
    let after = load(&spool, &other, true, true).expect("history");
    assert_eq!(after.records_read, 1);
    assert_eq!(seen(&after).0, 5.0);
    // Changed in place before the kept end (same inode, same length): read whole.
    let text = std::fs::read_to_string(spool.accounting_path()).expect("read");
    std::fs::write(
        spool.accounting_path(),
        text.replacen(":alice:", ":alicf:", 1),
    )
    .expect("write");
    let changed = load(&spool, &other, true, true).expect("history");
    assert_eq!(changed.records_read, 1);
    assert_eq!(seen(&changed).0, 0.0, "the record is alicf's now");
}
