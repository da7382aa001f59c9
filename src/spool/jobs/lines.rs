//! Every job of `jobs/` as the plain job table reads it ([`JobLine`]s), for `qstat` without
//! the options that show more than that table: the same jobs, with the same requests
//! applied, as [`Spool::scan_job_listing`] gives, without building a record per job.
//!
//! Jobs the listing index stands for are read in place from its bytes. The others (no
//! index, an entry older than the job's file, a job with pending requests) are read from
//! their files as a listing scan reads them, the requests applied, and put into the
//! index's binary form in a buffer of their own, from which they are read in the same way:
//! one reading of a line for every job, however it was found.

use super::ScanProblem;
use super::listing::{self, line::JobLine};
use super::scan::{WantedJob, apply_pending, jobs_named_in, list_job_files};
use crate::model::{JobId, JobRecord};
use crate::spool::index::IndexView;
use crate::spool::{Spool, SpoolError};

/// The jobs of one scan, borrowed from the buffers [`Spool::with_job_lines`] holds.
#[derive(Debug, Default)]
pub struct JobLines<'b> {
    /// The jobs in the system, by job id (`JobScan::jobs`).
    pub jobs: Vec<JobLine<'b>>,
    /// Jobs whose every task has ended and some finished (`-s z`'s), by job id.
    pub ended: Vec<JobLine<'b>>,
    /// Malformed or foreign files met on the way.
    pub problems: Vec<ScanProblem>,
}

/// From this many jobs on, index entries are read on every core.
const PARALLEL_FROM: usize = 8192;

impl Spool {
    /// Reads every job as a [`JobLine`] and gives them to `f` (they borrow the index and
    /// the buffers read here, which live only for the call).
    ///
    /// Requests are listed before the jobs are read, as in [`Spool::scan_jobs`].
    pub fn with_job_lines<T>(&self, f: impl FnOnce(&JobLines<'_>) -> T) -> Result<T, SpoolError> {
        let (requests, mut problems) = self.scan_requests()?;
        let full_for = jobs_named_in(&requests);
        let index = IndexView::load(self);
        let (wanted, mut listed) = list_job_files(&self.jobs_dir())?;
        problems.append(&mut listed);
        let (mut jobs, missing) = match &index {
            Some(index) => from_index(index, &wanted, &full_for),
            None => (Vec::new(), (0..wanted.len()).collect()),
        };
        // The jobs read from their files, in the index's form.
        let mut side: Vec<u8> = Vec::new();
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        if !missing.is_empty() {
            let part: Vec<WantedJob> = missing.iter().map(|&i| wanted[i]).collect();
            let (read, mut read_problems) = self.read_job_files(&part, &full_for)?;
            problems.append(&mut read_problems);
            let mut records: Vec<JobRecord> = read.into_iter().flatten().collect();
            // Only jobs read from their files have requests to apply (`full_for`).
            apply_pending(&mut records, &requests);
            for job in &records {
                let start = side.len();
                listing::binary::encode(&listing::Summary::of(job), &mut side);
                spans.push((job.id.0 as usize, start, side.len()));
            }
        }
        let mut from_files = Vec::with_capacity(spans.len());
        for &(id, start, end) in &spans {
            match listing::line::decode(&side[start..end]) {
                Ok(line) => from_files.push(line),
                Err(reason) => problems.push(ScanProblem {
                    path: self.job_file(JobId(id as u32)),
                    reason: format!("listing of the job: {reason}"),
                }),
            }
        }
        merge_by_id(&mut jobs, from_files);
        // A job all of whose tasks were deleted before any ran is gone; one with finished
        // tasks is a zombie of `-s z`.
        let ended: Vec<JobLine<'_>> = jobs
            .extract_if(.., |j| j.is_done())
            .filter(|j| j.finished > 0)
            .collect();
        let scan = JobLines {
            jobs,
            ended,
            problems,
        };
        Ok(f(&scan))
    }
}

/// The lines the index gives for `wanted` (in its order), and the places of the jobs it
/// does not stand for: no entry, an entry of the job file while a state file exists (or the
/// other way), a bad entry, or a job with pending requests (`full_for`). The lines go
/// straight into one vector sized for all: at 100,000 jobs each copy of them is 20 MB of
/// fresh pages.
fn from_index<'b>(
    index: &'b IndexView,
    wanted: &[WantedJob],
    full_for: &[JobId],
) -> (Vec<JobLine<'b>>, Vec<usize>) {
    let read = |first: usize, part: &[WantedJob], lines: &mut Vec<JobLine<'b>>| {
        let mut missing = Vec::new();
        for (k, &(id, has_state)) in part.iter().enumerate() {
            let entry = if full_for.binary_search(&id).is_ok() {
                None
            } else {
                index.get(id)
            };
            match entry
                .map(|(from_state, bytes)| (from_state == has_state, listing::line::decode(bytes)))
            {
                Some((true, Ok(line))) if line.id == id => lines.push(line),
                _ => missing.push(first + k),
            }
        }
        missing
    };
    let mut lines = Vec::with_capacity(wanted.len());
    let threads = if wanted.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    };
    if threads <= 1 {
        let missing = read(0, wanted, &mut lines);
        return (lines, missing);
    }
    let per = wanted.len().div_ceil(threads);
    let missing = std::thread::scope(|s| {
        let read = &read;
        let mut parts = wanted.chunks(per).enumerate();
        let first = parts.next();
        let others: Vec<_> = parts
            .map(|(i, part)| {
                s.spawn(move || {
                    let mut lines = Vec::with_capacity(part.len());
                    let missing = read(i * per, part, &mut lines);
                    (lines, missing)
                })
            })
            .collect();
        let mut missing = first.map_or_else(Vec::new, |(_, p)| read(0, p, &mut lines));
        for t in others {
            let (mut l, mut m) = t.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            lines.append(&mut l);
            missing.append(&mut m);
        }
        missing
    });
    (lines, missing)
}

/// Puts `more` (by id, none of whose ids is in `lines`) into `lines` (by id): in place when
/// they are few (a submission the index has not seen, a job with a request), by one merge
/// otherwise (no index: `lines` is empty).
fn merge_by_id<'b>(lines: &mut Vec<JobLine<'b>>, more: Vec<JobLine<'b>>) {
    if more.len() <= 64 {
        for line in more {
            let at = lines.partition_point(|l| l.id < line.id);
            lines.insert(at, line);
        }
        return;
    }
    let old = std::mem::take(lines);
    lines.reserve(old.len() + more.len());
    let mut a = old.into_iter().peekable();
    let mut b = more.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.id < y.id,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        lines.extend(if take_a { a.next() } else { b.next() });
    }
}
