//! The usage baseline: share-tree usage imported from SGE, and the part of the accounting file
//! it already accounts for.
//!
//! `sched_d` rebuilds usage at start-up by charging every accounting record. After an import
//! from SGE that would be wrong twice over: SGE's records at the head of the file are already
//! in the usage SGE kept (read from its spool, [`super::sge_usage`]), and SGE's usage is not
//! what charging its records gives (`qconf -clearusage`, `-Muser`, changed decay settings, a
//! rotated file all leave their mark on it). So the import writes a baseline,
//! `Spool::usage_baseline_path()`: the imported [`UsageStore`], and how many bytes at the
//! head of the accounting file it covers with a fingerprint of those bytes; the start-up fold
//! ([`load_usage_from`]) starts from the store and charges only the records after them.
//!
//! The fingerprint (FNV-1a over the covered bytes) tells a file that was rotated or replaced
//! since the import: its head is no longer SGE's records, so none of its records is
//! accounted for, and every one is charged on top of the baseline (with a warning).
//!
//! The file is text, one record a line, with numbers printed so that they read back exactly
//! (Rust's shortest round-trip form):
//!
//! ```text
//! covers 123456 9f3b2c…            (bytes, FNV-1a 64 of them in hex)
//! user NAME - STAMP CPU MEM IO LTCPU LTMEM LTIO
//! project NAME - STAMP …
//! user_project USER PROJECT STAMP …
//! ```
//!
//! (`-` for a missing stamp.)

use super::file::{AcctError, Entry, Reader};
use super::usage::{FoldReport, charge};
use gridspool_policy::sharetree::{DecayConfig, Usage, UsageRecord, UsageStore};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The first line of a baseline file.
const MAGIC: &str = "# gridspool usage baseline 1";

/// How many bytes at the head of the accounting file a baseline accounts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Covered {
    pub bytes: u64,
    /// FNV-1a (64 bits) of those bytes.
    pub fingerprint: u64,
}

/// The imported usage and the part of the accounting file it covers.
#[derive(Debug, Clone, Default)]
pub struct UsageBaseline {
    pub store: UsageStore,
    pub covered: Covered,
}

/// FNV-1a, 64 bits, fed in pieces.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprint(u64);

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint(0xcbf2_9ce4_8422_2325)
    }
}

impl Fingerprint {
    pub fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn value(&self) -> u64 {
        self.0
    }
}

fn syntax(path: &Path, line: u64, what: impl Into<String>) -> AcctError {
    AcctError::Baseline {
        path: path.to_path_buf(),
        line,
        what: what.into(),
    }
}

fn usage_fields(u: &Usage) -> String {
    format!("{} {} {}", u.cpu, u.mem, u.io)
}

fn record_line(kind: &str, name: &str, project: &str, r: &UsageRecord) -> String {
    let stamp = r.stamp.map_or_else(|| "-".to_string(), |s| s.to_string());
    format!(
        "{kind} {name} {project} {stamp} {} {}\n",
        usage_fields(&r.usage),
        usage_fields(&r.long_term)
    )
}

impl UsageBaseline {
    /// The file's text; records sorted, so that the same store gives the same text.
    pub fn to_text(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        lines.extend(
            self.store
                .users()
                .map(|(n, r)| record_line("user", n, "-", r)),
        );
        lines.extend(
            self.store
                .projects()
                .map(|(n, r)| record_line("project", n, "-", r)),
        );
        lines.extend(
            self.store
                .user_projects()
                .map(|((u, p), r)| record_line("user_project", u, p, r)),
        );
        lines.sort();
        let mut text = format!(
            "{MAGIC}\n# The share-tree usage imported from SGE; sched_d starts from it and charges only\n\
             # the accounting records after the part of the file it covers. Written by the import.\n\
             covers {} {:016x}\n# kind name project stamp cpu mem io ltcpu ltmem ltio\n",
            self.covered.bytes, self.covered.fingerprint
        );
        for l in lines {
            text.push_str(&l);
        }
        text
    }

    /// Parses a baseline file's text (`path` names it in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, AcctError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i as u64 + 1, l));
        match lines.next() {
            Some((_, l)) if l == MAGIC => {}
            _ => return Err(syntax(path, 1, format!("not a usage baseline (`{MAGIC}`)"))),
        }
        let mut baseline = UsageBaseline::default();
        let mut covers = false;
        for (n, line) in lines {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split(' ').collect();
            match words[0] {
                "covers" => {
                    let [_, bytes, fp] = words[..] else {
                        return Err(syntax(path, n, "expected `covers BYTES FINGERPRINT`"));
                    };
                    baseline.covered = Covered {
                        bytes: bytes
                            .parse()
                            .map_err(|_| syntax(path, n, format!("not a length: `{bytes}`")))?,
                        fingerprint: u64::from_str_radix(fp, 16)
                            .map_err(|_| syntax(path, n, format!("not a fingerprint: `{fp}`")))?,
                    };
                    covers = true;
                }
                kind @ ("user" | "project" | "user_project") => {
                    let [_, name, project, stamp, ref usage @ ..] = words[..] else {
                        return Err(syntax(path, n, "a record line is too short"));
                    };
                    if usage.len() != 6 {
                        return Err(syntax(
                            path,
                            n,
                            format!("expected 6 usage values, found {}", usage.len()),
                        ));
                    }
                    let mut v = [0.0; 6];
                    for (slot, w) in v.iter_mut().zip(usage) {
                        *slot = w
                            .parse::<f64>()
                            .ok()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| syntax(path, n, format!("not a number: `{w}`")))?;
                    }
                    let record = UsageRecord {
                        usage: Usage {
                            cpu: v[0],
                            mem: v[1],
                            io: v[2],
                        },
                        long_term: Usage {
                            cpu: v[3],
                            mem: v[4],
                            io: v[5],
                        },
                        stamp: match stamp {
                            "-" => None,
                            s => Some(s.parse().map_err(|_| {
                                syntax(path, n, format!("not a time stamp: `{s}`"))
                            })?),
                        },
                    };
                    match kind {
                        "user" => baseline.store.set_user(name, record),
                        "project" => baseline.store.set_project(name, record),
                        _ => baseline.store.set_user_in_project(name, project, record),
                    }
                }
                other => return Err(syntax(path, n, format!("unknown line kind `{other}`"))),
            }
        }
        if !covers {
            return Err(syntax(path, 1, "no `covers` line"));
        }
        Ok(baseline)
    }

    /// Reads the baseline at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Self>, AcctError> {
        match crate::file::open::read_to_string(path) {
            Ok(text) => Self::parse(path, &text).map(Some),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(AcctError::Io {
                op: "read",
                path: path.to_path_buf(),
                source: e.into(),
            }),
        }
    }

    /// Writes the baseline at `path` atomically and durably (its directory is created).
    pub fn write(&self, path: &Path) -> Result<(), AcctError> {
        let (dir, name) = split(path)?;
        std::fs::create_dir_all(dir).map_err(|source| AcctError::Io {
            op: "mkdir",
            path: dir.to_path_buf(),
            source,
        })?;
        crate::file::durable::write_replace(dir, name, self.to_text().as_bytes(), 0o644)
            .map_err(|e| AcctError::File(Box::new(e)))
    }
}

/// A path's directory and file name.
pub(super) fn split(path: &Path) -> Result<(&Path, &str), AcctError> {
    let name = path.file_name().and_then(|n| n.to_str());
    match (path.parent(), name) {
        (Some(dir), Some(name)) => Ok((
            if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            },
            name,
        )),
        _ => Err(AcctError::Io {
            op: "write",
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        }),
    }
}

/// How the start-up fold used a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaselineStart {
    /// The bytes at the head of the accounting file the baseline accounts for.
    pub covered_bytes: u64,
    /// The accounting file no longer starts with them (rotated or replaced since the import):
    /// every record of it was charged on top of the baseline.
    pub replaced: bool,
}

/// Share-tree usage at `sched_d`'s start: the baseline at `baseline` (if there is one) and the
/// accounting records after the part of the file it covers; without a baseline, exactly
/// [`super::load_usage`] (every record). Lines that are not records are reported by their
/// physical line numbers.
pub fn load_usage_from(
    accounting: &Path,
    baseline: &Path,
    decay: &DecayConfig,
) -> Result<(UsageStore, FoldReport), AcctError> {
    load_usage_observing(accounting, baseline, decay, &mut |_| {})
}

/// [`load_usage_from`], showing every record of the file to `observe` as well, in the file's
/// order, the head the baseline covers included (parsed for it alone): the forecast learns
/// run times from the same read.
pub fn load_usage_observing(
    accounting: &Path,
    baseline: &Path,
    decay: &DecayConfig,
    observe: &mut dyn FnMut(&super::AccountingRecord),
) -> Result<(UsageStore, FoldReport), AcctError> {
    let Some(base) = UsageBaseline::read(baseline)? else {
        return super::usage::load_observing(accounting, decay, observe);
    };
    let mut store = base.store;
    let covered = base.covered;
    let mut report = FoldReport {
        baseline: Some(BaselineStart {
            covered_bytes: covered.bytes,
            replaced: false,
        }),
        ..FoldReport::default()
    };
    let mut file = match crate::file::open::open(accounting) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => {
            // No file at all: nothing to charge; it is not the file the baseline covers.
            if covered.bytes > 0 {
                report.baseline = Some(BaselineStart {
                    covered_bytes: covered.bytes,
                    replaced: true,
                });
            }
            return Ok((store, report));
        }
        Err(e) => {
            return Err(AcctError::Io {
                op: "open",
                path: accounting.to_path_buf(),
                source: e.into(),
            });
        }
    };
    let io = |op: &'static str| {
        move |source: std::io::Error| AcctError::Io {
            op,
            path: accounting.to_path_buf(),
            source,
        }
    };
    // The covered head: its fingerprint, and its lines (to number the lines after it).
    let mut fp = Fingerprint::default();
    let mut head_lines = 0u64;
    let mut read = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    while read < covered.bytes {
        let want = usize::try_from((covered.bytes - read).min(buf.len() as u64)).unwrap_or(0);
        let n = file.read(&mut buf[..want]).map_err(io("read"))?;
        if n == 0 {
            break;
        }
        fp.add(&buf[..n]);
        head_lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        read += n as u64;
    }
    let intact = read == covered.bytes && fp.value() == covered.fingerprint;
    if !intact {
        report.baseline = Some(BaselineStart {
            covered_bytes: covered.bytes,
            replaced: true,
        });
        head_lines = 0;
        file.seek(SeekFrom::Start(0)).map_err(io("seek"))?;
    } else if covered.bytes > 0 {
        // The head's records are in the baseline's usage, not charged; shown all the same.
        file.seek(SeekFrom::Start(0)).map_err(io("seek"))?;
        let head = BufReader::with_capacity(1 << 16, (&mut file).take(covered.bytes));
        for entry in Reader::new(head, accounting) {
            if let Entry::Record(r) = entry? {
                observe(&r);
            }
        }
        file.seek(SeekFrom::Start(covered.bytes))
            .map_err(io("seek"))?;
    }
    let start = if intact { covered.bytes } else { 0 };
    report.read_to = start;
    let mut input = BufReader::with_capacity(1 << 16, file);
    // Nothing to do at the end of the file: saves the reader a read.
    if input.fill_buf().map_err(io("read"))?.is_empty() {
        return Ok((store, report));
    }
    let mut reader = Reader::new(input, accounting);
    while let Some(entry) = reader.next_entry() {
        match entry? {
            Entry::Record(r) => {
                charge(&mut store, &r, decay);
                observe(&r);
                report.records += 1;
            }
            Entry::Invalid { line, .. } => report.invalid_lines.push(head_lines + line),
        }
    }
    report.read_to = start + reader.consumed();
    Ok((store, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acct::AccountingRecord;

    fn record(owner: &str, project: &str, job: u32, end: i64, cpu: f64) -> String {
        AccountingRecord {
            qname: "all.q".into(),
            hostname: "h".into(),
            group: "g".into(),
            owner: owner.into(),
            job_name: "j".into(),
            job_number: job,
            project: project.into(),
            end_time: end,
            cpu,
            ..AccountingRecord::default()
        }
        .to_line()
            + "\n"
    }

    fn baseline_with(cpu: f64, covered: &[u8]) -> UsageBaseline {
        let mut store = UsageStore::new();
        store.set_user(
            "alice",
            UsageRecord {
                usage: Usage {
                    cpu,
                    mem: 0.1,
                    io: 1e-9,
                },
                long_term: Usage {
                    cpu: cpu * 2.0,
                    mem: 0.0,
                    io: 0.0,
                },
                stamp: Some(1_000_000),
            },
        );
        store.set_user_in_project(
            "alice",
            "p",
            UsageRecord {
                stamp: None,
                ..UsageRecord::default()
            },
        );
        let mut fp = Fingerprint::default();
        fp.add(covered);
        UsageBaseline {
            store,
            covered: Covered {
                bytes: covered.len() as u64,
                fingerprint: fp.value(),
            },
        }
    }

    #[test]
    fn text_reads_back_exactly() {
        let b = baseline_with(0.1 + 0.2, b"abc\n");
        let text = b.to_text();
        let back = UsageBaseline::parse(Path::new("b"), &text).expect("parse");
        assert_eq!(back.covered, b.covered);
        assert_eq!(back.store.user("alice"), b.store.user("alice"));
        assert_eq!(
            back.store.user_in_project("alice", "p"),
            b.store.user_in_project("alice", "p")
        );
        assert_eq!(back.to_text(), text);
        let bad = text.replace("user alice - 1000000", "user alice - soon");
        let e = UsageBaseline::parse(Path::new("b"), &bad).expect_err("bad stamp");
        let line = bad.lines().position(|l| l.contains("soon")).expect("line") + 1;
        assert_eq!(e.to_string(), format!("b:{line}: not a time stamp: `soon`"));
    }

    #[test]
    fn fold_charges_only_what_follows_the_covered_head() {
        let dir = tempfile::tempdir().expect("tempdir");
        let acct = dir.path().join("accounting");
        let base_path = dir.path().join("usage/baseline");
        let decay = DecayConfig {
            halftime_hours: 0.0,
            ..DecayConfig::default()
        };
        let head = format!(
            "{}{}",
            crate::acct::HEADER,
            record("alice", "NONE", 1, 1_000_000, 100.0)
        );
        let tail = format!(
            "not a record\n{}",
            record("alice", "NONE", 2, 1_000_100, 5.0)
        );
        std::fs::write(&acct, format!("{head}{tail}")).expect("write");
        // Without a baseline: every record, as before.
        let (store, report) = load_usage_from(&acct, &base_path, &decay).expect("fold");
        assert_eq!(store.user("alice").expect("alice").usage.cpu, 105.0);
        assert_eq!((report.records, report.baseline), (2, None));
        // With one covering the head: the baseline's 7 and the tail's 5.
        baseline_with(7.0, head.as_bytes())
            .write(&base_path)
            .expect("write baseline");
        let (store, report) = load_usage_from(&acct, &base_path, &decay).expect("fold");
        let alice = store.user("alice").expect("alice");
        assert_eq!((alice.usage.cpu, alice.long_term.cpu), (12.0, 19.0));
        assert_eq!(report.records, 1);
        assert_eq!(report.invalid_lines, vec![6]);
        assert_eq!(
            report.baseline,
            Some(BaselineStart {
                covered_bytes: head.len() as u64,
                replaced: false
            })
        );
        // Shown every record, the covered head's first, in the file's order, once each.
        let mut seen = Vec::new();
        let (store, _) =
            load_usage_observing(&acct, &base_path, &decay, &mut |r| seen.push(r.job_number))
                .expect("fold");
        assert_eq!(seen, [1, 2]);
        assert_eq!(store.user("alice").expect("alice").usage.cpu, 12.0);
        // Rotated: a new file without the head; all of it is charged on the baseline.
        std::fs::write(&acct, format!("{}{tail}", crate::acct::HEADER)).expect("write");
        let (store, report) = load_usage_from(&acct, &base_path, &decay).expect("fold");
        assert_eq!(store.user("alice").expect("alice").usage.cpu, 12.0);
        assert_eq!(report.invalid_lines, vec![5]);
        assert!(report.baseline.expect("baseline").replaced);
        // Replaced by a file of the same length whose head differs by one byte.
        let changed = format!("{head}{tail}").replacen(":1:", ":3:", 1);
        std::fs::write(&acct, &changed).expect("write");
        let (store, report) = load_usage_from(&acct, &base_path, &decay).expect("fold");
        assert!(report.baseline.expect("baseline").replaced);
        assert_eq!(store.user("alice").expect("alice").usage.cpu, 112.0);
        // Gone: the baseline alone.
        std::fs::remove_file(&acct).expect("rm");
        let (store, report) = load_usage_from(&acct, &base_path, &decay).expect("fold");
        assert_eq!(store.user("alice").expect("alice").usage.cpu, 7.0);
        assert!(report.baseline.expect("baseline").replaced);
    }
}
