//! What the forecast takes from the accounting file, the share-tree usage and the learned run
//! times, kept between forecasts (`daemon/forecast-history`) with how much of the file they
//! cover, so that each forecast reads only the records written since the last one: a cell of
//! a million records is read whole once, not at every refresh. The accounting file only grows
//! between rotations; a kept history is used only while the file is the same one (device and
//! inode), at least as long as what it covers, with the same bytes before that point (a
//! fingerprint of the last 4 KiB), and while nothing else the fold depends on changed (the
//! decay settings, whether run times are learned, the usage baseline file). Otherwise the file
//! is read whole again. A cache: written without a sync (a torn or missing one is rebuilt),
//! never by `gridspool-sim`, which reads a cell without changing it.

use super::LearnedRunTimes;
use super::run_times::LearnedEntries;
use crate::acct::{AcctError, Entry, Reader, UsageBaseline};
use crate::spool::Spool;
use gridspool_policy::sharetree::{DecayConfig, UsageStore};
use serde::{Deserialize, Serialize};
use std::io::{BufReader, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

const FILE: &str = "forecast-history";
const VERSION: u32 = 1;
/// The bytes before the covered end whose fingerprint tells the same file.
const TAIL: u64 = 4096;

/// The usage and the learned run times of the accounting file's records.
#[derive(Debug, Default)]
pub struct History {
    pub usage: UsageStore,
    pub learned: LearnedRunTimes,
    /// How many records were read for it (all of them, or those after the kept history).
    pub records_read: u64,
}

#[derive(Serialize, Deserialize)]
struct Kept {
    v: u32,
    /// What the fold depends on besides the records ([`depends`]).
    depends: String,
    dev: u64,
    ino: u64,
    covered: u64,
    tail: u64,
    /// The usage, in the usage baseline's text form.
    usage: String,
    learned: LearnedEntries,
}

/// Reads the history of the cell in `spool`, from the kept one when it still holds; with
/// `keep`, keeps the result for the next forecast.
pub fn load(
    spool: &Spool,
    decay: &DecayConfig,
    learn: bool,
    keep: bool,
) -> Result<History, AcctError> {
    let accounting = spool.accounting_path();
    let kept_path = spool.daemon_dir().join(FILE);
    let depends = depends(&spool.usage_baseline_path(), decay, learn);
    let file = match crate::file::open::open(&accounting) {
        Ok(f) => Some(f),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(AcctError::io("open", &accounting, e.into())),
    };
    let identity = file
        .as_ref()
        .and_then(|f| f.metadata().ok())
        .map(|m| (m.dev(), m.ino(), m.len()));
    let resumed = match (&file, identity) {
        (Some(f), Some((dev, ino, len))) => read_kept(&kept_path)
            .filter(|k| {
                k.depends == depends
                    && (k.dev, k.ino) == (dev, ino)
                    && k.covered <= len
                    && tail_of(f, k.covered).is_some_and(|t| t == k.tail)
            })
            .and_then(|k| {
                let usage = UsageBaseline::parse(&kept_path, &k.usage).ok()?.store;
                Some((usage, LearnedRunTimes::from(k.learned), k.covered))
            }),
        _ => None,
    };
    let (history, covered) = match (resumed, file.as_ref()) {
        (Some((usage, learned, covered)), Some(mut f)) => {
            let mut history = History {
                usage,
                learned,
                records_read: 0,
            };
            f.seek(SeekFrom::Start(covered))
                .map_err(|e| AcctError::io("seek", &accounting, e))?;
            let mut reader = Reader::new(BufReader::with_capacity(1 << 16, f), &accounting);
            while let Some(entry) = reader.next_entry() {
                if let Entry::Record(r) = entry? {
                    crate::acct::charge(&mut history.usage, &r, decay);
                    if learn {
                        history.learned.learn(&r);
                    }
                    history.records_read += 1;
                }
            }
            let covered = covered + reader.consumed();
            (history, covered)
        }
        _ => {
            let mut learned = LearnedRunTimes::default();
            let (usage, report) = crate::acct::load_usage_observing(
                &accounting,
                &spool.usage_baseline_path(),
                decay,
                &mut |r| {
                    if learn {
                        learned.learn(r)
                    }
                },
            )?;
            let history = History {
                usage,
                learned,
                records_read: report.records,
            };
            (history, report.read_to)
        }
    };
    // The file whose identity is kept (a rotation since it was opened does not matter: the
    // next forecast finds another inode).
    if keep
        && let (Some((dev, ino, _)), Some(f)) = (identity, file.as_ref())
        && let Some(tail) = tail_of(f, covered)
    {
        let kept = Kept {
            v: VERSION,
            depends,
            dev,
            ino,
            covered,
            tail,
            usage: UsageBaseline {
                store: history.usage.clone(),
                covered: Default::default(),
            }
            .to_text(),
            learned: LearnedEntries::from(&history.learned),
        };
        if let Err(e) = write_kept(&kept_path, &kept) {
            tracing::warn!(path = %kept_path.display(), "cannot keep the forecast's history: {e}");
        }
    }
    Ok(history)
}

/// What the fold depends on besides the records: the decay settings, whether run times are
/// learned, and the usage baseline file (its size and time; an import replaces it).
fn depends(baseline: &Path, decay: &DecayConfig, learn: bool) -> String {
    let baseline = std::fs::metadata(baseline)
        .map(|m| format!("{} {}.{}", m.len(), m.mtime(), m.mtime_nsec()))
        .unwrap_or_else(|_| "none".into());
    format!("{decay:?} learn={learn} baseline={baseline}")
}

/// The fingerprint of the (up to) [`TAIL`] bytes before `end`.
fn tail_of(file: &std::fs::File, end: u64) -> Option<u64> {
    let start = end.saturating_sub(TAIL);
    let mut buf = vec![0u8; (end - start) as usize];
    file.read_exact_at(&mut buf, start).ok()?;
    let mut fp = crate::acct::baseline::Fingerprint::default();
    fp.add(&buf);
    Some(fp.value())
}

fn read_kept(path: &Path) -> Option<Kept> {
    let bytes = crate::file::open::read(path).ok()?;
    serde_json::from_slice::<Kept>(&bytes)
        .ok()
        .filter(|k| k.v == VERSION)
}

/// Replaces the kept history whole (a temporary name, then a rename), without a sync.
fn write_kept(path: &Path, kept: &Kept) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(FILE);
    let tmp = path.with_file_name(format!(".{name}.{}", std::process::id()));
    let bytes = serde_json::to_vec(kept).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests;
