//! Share-tree usage from accounting: what each user and project consumed, decayed over time.
//!
//! SGE's share-tree policy (`sge_priority(5)`, `sched_conf(5)` `halftime`) compares each
//! node's *decayed* usage with its share: usage recorded `halftime` hours ago counts half.
//! qmaster keeps that usage in memory and spools it; gridspool has no qmaster, so `sched_d`
//! rebuilds it on start-up from the accounting file — one streaming pass, each record's usage
//! decayed from its end time to "now" — and then keeps it up to date with
//! [`UsageTable::add`] as tasks end. The clock and the halftime are injected, so the fold is
//! pure and testable.

use super::file::{AcctError, Entry, Reader};
use super::record::AccountingRecord;
use std::collections::BTreeMap;
use std::path::Path;

/// The usage of one record (or a sum): CPU seconds, memory GB·s, I/O GB — the three
/// quantities of SGE's `usage_weight_list`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Usage {
    pub fn of(record: &AccountingRecord) -> Self {
        Usage {
            cpu: record.cpu,
            mem: record.mem,
            io: record.io,
        }
    }

    pub fn scaled(self, factor: f64) -> Self {
        Usage {
            cpu: self.cpu * factor,
            mem: self.mem * factor,
            io: self.io * factor,
        }
    }

    pub fn add(&mut self, other: Usage) {
        self.cpu += other.cpu;
        self.mem += other.mem;
        self.io += other.io;
    }

    /// The single number the share tree compares: `cpu·w_cpu + mem·w_mem + io·w_io` with the
    /// weights of `usage_weight_list` (missing weights count 0; SGE's default is cpu=1).
    pub fn combined(&self, weights: &BTreeMap<String, f64>) -> f64 {
        let w = |k: &str| weights.get(k).copied().unwrap_or(0.0);
        self.cpu * w("cpu") + self.mem * w("mem") + self.io * w("io")
    }
}

/// The factor by which usage recorded at `then` has decayed by `now`: `2^(-(now-then)/h)`.
/// A halftime of 0 means no decay (SGE: usage is never forgotten); usage from the future
/// (clock skew between hosts) is not amplified.
pub fn decay_factor(halftime_secs: f64, then: i64, now: i64) -> f64 {
    if halftime_secs <= 0.0 || now <= then {
        return 1.0;
    }
    (-((now - then) as f64) / halftime_secs).exp2()
}

/// Decayed usage of one user or project, valid as of `as_of`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecayedUsage {
    pub usage: Usage,
    pub as_of: i64,
}

/// Decayed usage per user and per project (share-tree leaves are users, inner nodes may be
/// projects); `NONE` is not a project.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageTable {
    /// Seconds (SGE's `halftime` is in hours; the caller converts).
    pub halftime_secs: f64,
    pub users: BTreeMap<String, DecayedUsage>,
    pub projects: BTreeMap<String, DecayedUsage>,
}

/// What the start-up fold saw besides the usage: lines it could not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldReport {
    pub records: u64,
    pub invalid_lines: Vec<u64>,
}

impl UsageTable {
    pub fn new(halftime_secs: f64) -> Self {
        UsageTable {
            halftime_secs,
            users: BTreeMap::new(),
            projects: BTreeMap::new(),
        }
    }

    /// Rebuilds the table from the accounting file as of `now`, in one streaming pass. A
    /// missing file is an empty history.
    pub fn from_file(
        path: &Path,
        halftime_secs: f64,
        now: i64,
    ) -> Result<(Self, FoldReport), AcctError> {
        let mut table = UsageTable::new(halftime_secs);
        let mut report = FoldReport::default();
        let reader = match Reader::open(path) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((table, report)),
            Err(e) => return Err(e),
        };
        for entry in reader {
            match entry? {
                Entry::Record(r) => {
                    table.fold(&r, now);
                    report.records += 1;
                }
                Entry::Invalid { line, .. } => report.invalid_lines.push(line),
            }
        }
        Ok((table, report))
    }

    /// The start-up fold of one record: its usage decayed from its end to `now`, added to
    /// entries that are all kept as of `now`.
    fn fold(&mut self, r: &AccountingRecord, now: i64) {
        let u = Usage::of(r).scaled(decay_factor(self.halftime_secs, r.end_time, now));
        for (map, key) in [
            (&mut self.users, &r.owner),
            (&mut self.projects, &r.project),
        ] {
            if map_key_counts(key) {
                let e = map.entry(key.clone()).or_insert(DecayedUsage {
                    usage: Usage::default(),
                    as_of: now,
                });
                e.usage.add(u);
            }
        }
    }

    /// The incremental update for a record just written: earlier usage is decayed to the
    /// record's end time, then the record's usage is added.
    pub fn add(&mut self, r: &AccountingRecord) {
        let halftime = self.halftime_secs;
        let t = r.end_time;
        let u = Usage::of(r);
        for (map, key) in [
            (&mut self.users, &r.owner),
            (&mut self.projects, &r.project),
        ] {
            if map_key_counts(key) {
                let e = map.entry(key.clone()).or_insert(DecayedUsage {
                    usage: Usage::default(),
                    as_of: t,
                });
                if t > e.as_of {
                    e.usage = e.usage.scaled(decay_factor(halftime, e.as_of, t));
                    e.as_of = t;
                }
                // A record that ended before `as_of` (out of order) is decayed itself.
                e.usage.add(u.scaled(decay_factor(halftime, t, e.as_of)));
            }
        }
    }

    /// A user's usage decayed to `now`.
    pub fn user(&self, name: &str, now: i64) -> Usage {
        Self::at(&self.users, name, self.halftime_secs, now)
    }

    /// A project's usage decayed to `now`.
    pub fn project(&self, name: &str, now: i64) -> Usage {
        Self::at(&self.projects, name, self.halftime_secs, now)
    }

    fn at(map: &BTreeMap<String, DecayedUsage>, name: &str, h: f64, now: i64) -> Usage {
        map.get(name).map_or_else(Usage::default, |d| {
            d.usage.scaled(decay_factor(h, d.as_of, now))
        })
    }
}

fn map_key_counts(key: &str) -> bool {
    !key.is_empty() && key != super::record::NONE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(owner: &str, project: &str, cpu: f64, end: i64) -> AccountingRecord {
        AccountingRecord {
            owner: owner.into(),
            project: project.into(),
            cpu,
            mem: cpu / 2.0,
            io: 1.0,
            end_time: end,
            ..AccountingRecord::default()
        }
    }

    #[test]
    fn usage_halves_every_halftime() {
        assert_eq!(decay_factor(3600.0, 0, 3600), 0.5);
        assert_eq!(decay_factor(3600.0, 0, 7200), 0.25);
        assert_eq!(decay_factor(0.0, 0, 7200), 1.0);
        assert_eq!(decay_factor(3600.0, 100, 50), 1.0);
    }

    #[test]
    fn fold_and_incremental_updates_agree() {
        let records = [
            rec("alice", "p1", 100.0, 1000),
            rec("bob", "NONE", 10.0, 2000),
            rec("alice", "p1", 50.0, 4600),
        ];
        let now = 8200;
        let mut folded = UsageTable::new(3600.0);
        for r in &records {
            folded.fold(r, now);
        }
        let mut incremental = UsageTable::new(3600.0);
        for r in &records {
            incremental.add(r);
        }
        let a = folded.user("alice", now);
        let b = incremental.user("alice", now);
        assert!((a.cpu - b.cpu).abs() < 1e-9, "{a:?} {b:?}");
        assert!((a.cpu - 50.0).abs() < 1e-9, "100 decayed twice, 50 once");
        assert!(!folded.projects.contains_key("NONE"));
        assert!((folded.project("p1", now).cpu - a.cpu).abs() < 1e-9);
        let w = BTreeMap::from([("cpu".to_string(), 1.0), ("mem".to_string(), 2.0)]);
        assert!((a.combined(&w) - 2.0 * a.cpu).abs() < 1e-9);
    }

    #[test]
    fn fold_streams_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accounting");
        super::super::file::append(
            &path,
            &[rec("alice", "p1", 8.0, 0), rec("alice", "p1", 8.0, 3600)],
        )
        .expect("append");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"broken\n"))
            .expect("append junk");
        let (t, report) = UsageTable::from_file(&path, 3600.0, 3600).expect("fold");
        assert_eq!(report.records, 2);
        assert_eq!(report.invalid_lines, vec![7]);
        assert_eq!(t.user("alice", 3600).cpu, 12.0);
        let (empty, _) =
            UsageTable::from_file(&dir.path().join("missing"), 3600.0, 0).expect("missing");
        assert!(empty.users.is_empty());
    }
}
