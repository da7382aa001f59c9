//! Importing SGE's accounting history and share-tree usage into a cell.
//!
//! SGE 8.1.9's accounting file is in the format gridspool writes, so the history moves as it
//! is: SGE's file becomes the head of the cell's, followed by the cell's own lines that are not
//! already among SGE's (an exact line match, so that a second import of the same export adds
//! nothing and loses nothing). `qacct` then reads the whole history. SGE's usage, read from
//! its spool dumps ([`super::sge_usage`]), becomes the cell's usage baseline, covering SGE's
//! part of the file ([`super::baseline`]): `sched_d` charges only what follows it.
//!
//! The import runs with `sched_d` stopped: it replaces the accounting file `sched_d` appends
//! to.

use super::baseline::{Covered, Fingerprint, UsageBaseline, split};
use super::file::AcctError;
use super::record::AccountingRecord;
use super::sge_usage::{read_share_mon, read_usage_dumps};
use gridspool_policy::sharetree::DecayConfig;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What [`import_history`] did, for the import to print.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryImport {
    /// SGE's records, now at the head of the cell's accounting file.
    pub records_imported: u64,
    /// The cell's own records, kept after SGE's.
    pub records_kept: u64,
    /// The cell's records that were already among SGE's (an earlier import of it).
    pub records_skipped: u64,
    /// Lines of SGE's file (1-based) that are not records: kept as they are, `qacct` skips
    /// them as SGE's does.
    pub invalid_lines: Vec<u64>,
    /// The bytes at the head of the cell's file that are SGE's (what the baseline covers).
    pub covered_bytes: u64,
    /// Where SGE's usage was read: the export's `bdb/` dumps, else its `sge_share_mon`
    /// text (`sge_share_mon-n.txt` or `-h.txt`: the tree's nodes only). `None`: the export
    /// has neither, no baseline is written (an old one is removed) and `sched_d` charges
    /// every record of the file, SGE's too.
    pub usage_from: Option<PathBuf>,
    /// Users whose usage was imported.
    pub users_with_usage: usize,
    /// Projects whose usage was imported.
    pub projects_with_usage: usize,
    /// Projects whose usage is the sum of their users' usage in them (SGE's spool had none
    /// for the project itself).
    pub projects_summed: Vec<String>,
    /// (user or project, job): jobs running under SGE whose usage so far SGE had debited;
    /// not carried (their records come when they end, under SGE).
    pub debited_jobs_not_carried: Vec<(String, u64)>,
}

/// Imports the SGE export at `export_dir` (laid out as `tests/compat/import/sge-cell/`: its
/// `accounting`, and `bdb/USER:*.txt`, `bdb/PROJECT:*.txt`, or else `sge_share_mon-n.txt`)
/// into the cell whose accounting
/// file is `accounting` and whose usage baseline is `baseline`
/// (`Spool::accounting_path()`, `Spool::usage_baseline_path()`); `decay` is the cell's
/// (`acct::decay_config`), for projects whose usage is summed from users stamped at
/// different times. Both files are replaced atomically; the dumps are read first, so that an
/// unreadable one changes nothing.
pub fn import_history(
    export_dir: &Path,
    accounting: &Path,
    baseline: &Path,
    decay: &DecayConfig,
) -> Result<HistoryImport, AcctError> {
    let dumps = export_dir.join("bdb");
    let share_mon = ["sge_share_mon-n.txt", "sge_share_mon-h.txt"]
        .iter()
        .map(|n| export_dir.join(n))
        .find(|p| p.is_file());
    let (usage, usage_from) = if dumps.is_dir() {
        (Some(read_usage_dumps(&dumps, decay)?), Some(dumps))
    } else if let Some(path) = share_mon {
        (Some(read_share_mon(&path)?), Some(path))
    } else {
        (None, None)
    };
    let (mut out, fingerprint) = merge_accounting(&export_dir.join("accounting"), accounting)?;
    out.usage_from = usage_from;
    let (dir, name) = split(baseline)?;
    match usage {
        Some(u) => {
            out.users_with_usage = u.users;
            out.projects_with_usage = u.projects;
            out.projects_summed = u.projects_summed;
            out.debited_jobs_not_carried = u.debited_jobs;
            UsageBaseline {
                store: u.store,
                covered: Covered {
                    bytes: out.covered_bytes,
                    fingerprint,
                },
            }
            .write(baseline)?;
        }
        None => {
            crate::file::durable::remove(dir, name).map_err(|e| AcctError::File(Box::new(e)))?
        }
    }
    Ok(out)
}

/// Where each of SGE's lines is in its file, by a hash of the line: the cell's lines are
/// looked up in it and compared with the line itself (read back), so that only an exact
/// match counts and SGE's file need not be held in memory.
struct LineIndex {
    file: File,
    at: HashMap<u64, Vec<(u64, usize)>>,
}

impl LineIndex {
    fn contains(&self, line: &[u8]) -> std::io::Result<bool> {
        let Some(places) = self.at.get(&hash(line)) else {
            return Ok(false);
        };
        let mut buf = vec![0u8; line.len()];
        for &(offset, len) in places {
            if len == line.len() {
                self.file.read_exact_at(&mut buf, offset)?;
                if buf == line {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

fn hash(line: &[u8]) -> u64 {
    let mut fp = Fingerprint::default();
    fp.add(line);
    fp.value()
}

/// A line without its end (`\n`, and a `\r` before it).
fn content(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether a line is a record rather than a comment or blank (SGE's reader's rule).
fn is_record(line: &[u8]) -> Option<bool> {
    let text = content(line);
    if text.is_empty() || text.starts_with(b"#") {
        return None;
    }
    Some(
        std::str::from_utf8(text)
            .ok()
            .is_some_and(|t| AccountingRecord::parse_line(t).is_ok()),
    )
}

/// Writes SGE's file followed by the cell's own lines into the cell's file, atomically;
/// returns what it did and the fingerprint of SGE's part (as the start-up fold computes it).
fn merge_accounting(sge: &Path, cell: &Path) -> Result<(HistoryImport, u64), AcctError> {
    let sge_file = match File::open(sge) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(AcctError::io("open", sge, e)),
    };
    let cell_file = match crate::file::open::open(cell) {
        Ok(f) => Some(f),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(AcctError::io("open", cell, e.into())),
    };
    let old = match &cell_file {
        Some(f) => Some(f.metadata().map_err(|e| AcctError::io("stat", cell, e))?),
        None => None,
    };
    let mode = old.as_ref().map_or(0o644, |m| m.mode() & 0o7777);
    let (dir, name) = split(cell)?;
    let mut out = HistoryImport::default();
    let mut fp = Fingerprint::default();
    // Errors inside the writer are I/O errors of one of the two inputs: say which.
    let mut failed: Option<AcctError> = None;
    let written = crate::file::durable::write_replace_with(dir, name, mode, |w| {
        let mut index = None;
        if let Some(f) = &sge_file {
            let reader = f.try_clone()?;
            match copy_sge(reader, w, &mut out, &mut fp) {
                Ok(at) => {
                    index = Some(LineIndex {
                        file: f.try_clone()?,
                        at,
                    })
                }
                Err(e) => {
                    failed = Some(AcctError::io("read", sge, e));
                    return Err(std::io::Error::other("reading SGE's accounting file"));
                }
            }
        }
        if let Some(f) = &cell_file {
            let reader = f.try_clone()?;
            if let Err(e) = copy_cell(reader, index.as_ref(), w, &mut out) {
                failed = Some(AcctError::io("read", cell, e));
                return Err(std::io::Error::other("reading the cell's accounting file"));
            }
        }
        Ok(())
    });
    if let Err(e) = written {
        return Err(failed.unwrap_or(AcctError::File(Box::new(e))));
    }
    if let Some(m) = old {
        // The file keeps its owner (the import runs as root, `sched_d` may not).
        let now = std::fs::metadata(cell).map_err(|e| AcctError::io("stat", cell, e))?;
        if (now.uid(), now.gid()) != (m.uid(), m.gid()) {
            std::os::unix::fs::chown(cell, Some(m.uid()), Some(m.gid()))
                .map_err(|e| AcctError::io("chown", cell, e))?;
        }
    }
    Ok((out, fp.value()))
}

/// Copies SGE's lines (a last one without its end gets one), adding what it writes to `fp`;
/// returns where each line is.
fn copy_sge(
    file: File,
    w: &mut dyn Write,
    out: &mut HistoryImport,
    fp: &mut Fingerprint,
) -> std::io::Result<HashMap<u64, Vec<(u64, usize)>>> {
    let mut at: HashMap<u64, Vec<(u64, usize)>> = HashMap::new();
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    let mut offset = 0u64;
    let mut number = 0u64;
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = content(&line);
        at.entry(hash(text)).or_default().push((offset, text.len()));
        offset += n as u64;
        match is_record(&line) {
            Some(true) => out.records_imported += 1,
            Some(false) => out.invalid_lines.push(number),
            None => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        w.write_all(&line)?;
        fp.add(&line);
        out.covered_bytes += line.len() as u64;
    }
    Ok(at)
}

/// Copies the cell's lines that are not SGE's. A last line without its end (a record being
/// written when `sched_d` stopped) stays last, as it was.
fn copy_cell(
    file: File,
    sge: Option<&LineIndex>,
    w: &mut dyn Write,
    out: &mut HistoryImport,
) -> std::io::Result<()> {
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let present = match sge {
            Some(index) => index.contains(content(&line))?,
            None => false,
        };
        // A record, or a line that should be one (comments and blank lines are not).
        let entry = is_record(&line).is_some();
        match (present, entry) {
            (true, true) => out.records_skipped += 1,
            // SGE's header again, say.
            (true, false) => {}
            (false, entry) => {
                if entry {
                    out.records_kept += 1;
                }
                w.write_all(&line)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acct::{Entry, HEADER, Reader};

    fn record(owner: &str, job: u32) -> String {
        AccountingRecord {
            qname: "all.q".into(),
            hostname: "h".into(),
            group: "g".into(),
            owner: owner.into(),
            job_name: "j".into(),
            job_number: job,
            end_time: 1_000_000 + i64::from(job),
            ..AccountingRecord::default()
        }
        .to_line()
            + "\n"
    }

    fn jobs(path: &Path) -> Vec<u32> {
        Reader::open(path)
            .expect("open")
            .filter_map(|e| match e.expect("io") {
                Entry::Record(r) => Some(r.job_number),
                Entry::Invalid { .. } => None,
            })
            .collect()
    }

    #[test]
    fn sge_records_first_then_the_cells_own_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let export = dir.path().join("export");
        std::fs::create_dir(&export).expect("mkdir");
        // SGE's file, its last line without its end.
        let sge = format!("{HEADER}{}{}", record("a", 1), record("b", 2));
        std::fs::write(export.join("accounting"), sge.trim_end()).expect("write");
        let cell = dir.path().join("accounting");
        // The cell already has a record of its own and, from an earlier import, one of SGE's.
        std::fs::write(
            &cell,
            format!("{HEADER}{}# a note\n{}", record("c", 7), record("b", 2)),
        )
        .expect("write");
        let base = dir.path().join("usage/baseline");
        let decay = DecayConfig::default();
        let got = import_history(&export, &cell, &base, &decay).expect("import");
        assert_eq!(
            (
                got.records_imported,
                got.records_kept,
                got.records_skipped,
                got.covered_bytes
            ),
            (2, 1, 1, sge.len() as u64)
        );
        // No bdb/: no usage, no baseline.
        assert!(got.usage_from.is_none() && !base.exists());
        let text = std::fs::read_to_string(&cell).expect("read");
        assert_eq!(text, format!("{sge}{}# a note\n", record("c", 7)));
        assert_eq!(jobs(&cell), vec![1, 2, 7]);
        // Again: nothing added, nothing lost.
        let again = import_history(&export, &cell, &base, &decay).expect("import");
        assert_eq!(
            (
                again.records_imported,
                again.records_kept,
                again.records_skipped
            ),
            (2, 1, 2)
        );
        assert_eq!(std::fs::read_to_string(&cell).expect("read"), text);
    }
}
