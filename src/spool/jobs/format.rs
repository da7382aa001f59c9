//! The bytes of job and state files: a state file's summary line and record, and how
//! each is parsed, whole or for a listing. Writers and readers of `jobs/` share these, so
//! that what is written is exactly what is read back.

use super::listing;
use crate::model::{JobRecord, JobSubmission};
use crate::spool::ListingEntry;
use crate::spool::index;

/// The bytes of a state file (`sched_d` writes them, `qstat_fill` imitates it): the listing
/// summary on one line ([`listing::Summary`]), then the whole record. JSON never holds a raw
/// newline, so the summary line ends at the first one; a file written before summaries existed
/// is the record alone, which starts with `{` where a summary starts with `[`.
pub fn encode_state(job: &JobRecord) -> serde_json::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(2048);
    serde_json::to_writer(&mut bytes, &listing::Summary::of(job))?;
    bytes.push(b'\n');
    serde_json::to_writer(&mut bytes, job)?;
    Ok(bytes)
}

/// The listing-index entry of a state file's bytes (`state`) or of a job file's header
/// line: the listing record a scan would read from those bytes, in binary
/// (`listing::binary`), so that a listing from the index shows exactly what one from the
/// files shows.
pub fn listing_entry(bytes: &[u8], state: bool) -> Result<ListingEntry, String> {
    let record = if state {
        parse_state(bytes, true)?
    } else {
        parse_submission(bytes, true)?
    };
    let mut out = Vec::with_capacity(256);
    listing::binary::encode(&listing::Summary::of(&record), &mut out);
    Ok(ListingEntry {
        kind: if state {
            index::FROM_STATE_FILE
        } else {
            index::FROM_JOB_FILE
        },
        bytes: out,
    })
}

/// A state file split into its summary line (if any) and the whole record.
fn split_state(bytes: &[u8]) -> Result<(Option<&[u8]>, &[u8]), String> {
    if bytes.first() != Some(&b'[') {
        return Ok((None, bytes));
    }
    match memchr_newline(bytes) {
        Some(i) => Ok((Some(&bytes[..i]), &bytes[i + 1..])),
        None => Err("bad job state: a summary line and no record".into()),
    }
}

/// The file as text: checked as UTF-8 once, so that the parser (`from_str`) need not check
/// each string again, which `from_slice` does.
fn utf8<'b>(bytes: &'b [u8], what: &str) -> Result<&'b str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("bad {what}: {e}"))
}

pub(super) fn parse_state(bytes: &[u8], listing: bool) -> Result<JobRecord, String> {
    let (summary, record) = split_state(bytes)?;
    if listing
        && let Some(line) = summary
        && line.starts_with(listing::SUMMARY_TAG)
    {
        let text = utf8(line, "job state summary")?;
        return serde_json::from_str::<listing::Summary>(text)
            .map(listing::Summary::into_record)
            .map_err(|e| format!("bad job state summary: {e}"));
    }
    // No summary (an older file), or one of a later layout: the record itself.
    let text = utf8(record, "job state")?;
    let r = if listing {
        serde_json::from_str::<listing::Record>(text).map(listing::Record::into_record)
    } else {
        serde_json::from_str::<JobRecord>(text)
    };
    r.map_err(|e| format!("bad job state: {e}"))
}

pub(super) fn parse_submission(bytes: &[u8], listing: bool) -> Result<JobRecord, String> {
    let Some(end) = memchr_newline(bytes) else {
        return Err("job file has no header line".into());
    };
    let header = utf8(&bytes[..end], "job header")?;
    let r = if listing {
        serde_json::from_str::<listing::Submission>(header)
            .map(listing::Submission::into_submission)
    } else {
        serde_json::from_str::<JobSubmission>(header)
    };
    r.map(JobRecord::from_submission)
        .map_err(|e| format!("bad job header: {e}"))
}

pub(super) fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}
