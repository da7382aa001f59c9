//! A job as the plain `qstat` table reads it: the entry of the listing index read in place.
//!
//! [`decode`](super::binary::decode) builds a whole listing `JobRecord` per job (1.4 kB,
//! with owned strings and vectors), most of which the plain table never looks at. A
//! [`JobLine`] holds the few fields it prints as they sit in the entry's bytes: strings
//! borrowed, the variable parts (pending groups, running tasks, task ranges) as the slices
//! that hold them, walked when a row needs them. Decoding one checks the whole entry as
//! `decode` does, so an entry one refuses the other refuses too, and the walks that
//! follow cannot fail.

use super::binary::{Cursor, R};
use crate::model::{Holds, JobId, RunState, TaskId, TaskIdRange, TaskSet};

/// One job of a listing, borrowed from the bytes of its index entry.
#[derive(Debug, Clone, Copy)]
pub struct JobLine<'b> {
    pub id: JobId,
    pub owner: &'b str,
    pub gid: u32,
    pub submission_time: i64,
    pub name: &'b str,
    /// `qsub -a`.
    pub start_time: Option<i64>,
    pub predecessors: JobIds<'b>,
    pub array_predecessors: JobIds<'b>,
    pub array: Option<TaskIdRange>,
    /// The lower end of the `-pe` range (`JobSpec::slots`).
    pub pe_min: Option<u32>,
    pub pending: PendingGroups<'b>,
    pub running: RunningTasks<'b>,
    pub finished: u64,
    pub error: bool,
    /// The scheduler's `prio`, 0 for a job it has not seen (SGE's zeros).
    pub prio: f64,
    pub finished_tasks: TaskRanges<'b>,
    pub restarted: TaskRanges<'b>,
}

impl JobLine<'_> {
    pub fn is_array(&self) -> bool {
        self.array.is_some()
    }

    /// Slots per task as a pending job shows them (`JobSpec::slots`).
    pub fn slots(&self) -> u32 {
        self.pe_min.map_or(1, |m| m.max(1))
    }

    /// No task pending or running (`TaskStates::is_done`).
    pub fn is_done(&self) -> bool {
        self.running.is_empty() && self.pending.iter().all(|(r, _)| r.is_empty())
    }
}

/// Job ids as stored: `u32`s.
#[derive(Debug, Clone, Copy)]
pub struct JobIds<'b>(&'b [u8]);

impl<'b> JobIds<'b> {
    pub fn iter(&self) -> impl Iterator<Item = JobId> + use<'b> {
        self.0
            .chunks_exact(4)
            .map(|c| JobId(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
    }
}

/// Task ranges as stored: `[first, last, step]` as three `u32`s each.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskRanges<'b>(&'b [u8]);

impl<'b> TaskRanges<'b> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = TaskIdRange> + use<'b> {
        self.0.chunks_exact(12).map(|c| {
            let n = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
            TaskIdRange {
                first: n(0),
                last: n(4),
                step: n(8),
            }
        })
    }

    /// The ranges as a task set (for the rare rows that take set operations).
    pub fn to_task_set(&self) -> TaskSet {
        TaskSet::from_stored_ranges(self.iter().collect())
    }
}

/// The pending groups: `(ranges, holds)` each.
#[derive(Debug, Clone, Copy)]
pub struct PendingGroups<'b> {
    bytes: &'b [u8],
    len: usize,
}

impl<'b> PendingGroups<'b> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (TaskRanges<'b>, Holds)> + use<'b> {
        let mut c = Cursor { b: self.bytes };
        (0..self.len).map_while(move |_| pending_group(&mut c).ok())
    }
}

fn pending_group<'b>(c: &mut Cursor<'b>) -> R<(TaskRanges<'b>, Holds)> {
    let n = c.count(12)?;
    let ranges = TaskRanges(c.take(n * 12)?);
    Ok((ranges, c.holds()?))
}

/// A running task as the table shows it (its granted slots, usage and devices skipped).
#[derive(Debug, Clone, Copy)]
pub struct RunningLine<'b> {
    pub task: TaskId,
    pub state: RunState,
    pub start_time: i64,
    pub queue: &'b str,
    pub host: &'b str,
    pub slots: u32,
    pub deleting: bool,
    pub restarted: bool,
    pub queue_suspended: bool,
    pub holds: Holds,
}

impl RunningLine<'_> {
    /// Suspended, by itself or with its queue (`RunningTask::stopped`).
    pub fn stopped(&self) -> bool {
        self.state == RunState::Suspended || self.queue_suspended
    }
}

/// The running tasks of a job.
#[derive(Debug, Clone, Copy)]
pub struct RunningTasks<'b> {
    bytes: &'b [u8],
    len: usize,
}

impl<'b> RunningTasks<'b> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = RunningLine<'b>> + use<'b> {
        let mut c = Cursor { b: self.bytes };
        (0..self.len).map_while(move |_| running(&mut c).ok())
    }
}

/// Reads one running task as `binary`'s `Cursor::running` does, with the same checks.
fn running<'b>(c: &mut Cursor<'b>) -> R<RunningLine<'b>> {
    let task = c.u32()?;
    let state = c.run_state()?;
    let start_time = c.i64()?;
    let queue = c.str()?;
    let host = c.str()?;
    let slots = c.u32()?;
    for _ in 0..c.count(12)? {
        c.str()?;
        c.str()?;
        c.u32()?;
    }
    let flags = c.task_flags()?;
    let holds = c.holds()?;
    if c.flag()? {
        c.take(5 * 8)?;
    }
    for _ in 0..c.count(8)? {
        c.str()?;
        for _ in 0..c.count(4)? {
            c.str()?;
        }
    }
    Ok(RunningLine {
        task,
        state,
        start_time,
        queue,
        host,
        slots,
        deleting: flags & 1 != 0,
        restarted: flags & 2 != 0,
        queue_suspended: flags & 4 != 0,
        holds,
    })
}

/// The bytes `c` moved over since it held `from`.
fn passed<'b>(from: &'b [u8], c: &Cursor<'b>) -> &'b [u8] {
    &from[..from.len() - c.b.len()]
}

fn ranges<'b>(c: &mut Cursor<'b>) -> R<TaskRanges<'b>> {
    let n = c.count(12)?;
    c.take(n * 12).map(TaskRanges)
}

fn ids<'b>(c: &mut Cursor<'b>) -> R<JobIds<'b>> {
    let n = c.count(4)?;
    c.take(n * 4).map(JobIds)
}

/// Reads an entry of the listing index (or any bytes `binary::encode` wrote) in place,
/// checking all of it as `binary::decode` does.
pub(in crate::spool) fn decode(bytes: &[u8]) -> Result<JobLine<'_>, &'static str> {
    let mut c = Cursor { b: bytes };
    let _v = c.u32()?;
    let id = JobId(c.u32()?);
    let owner = c.str()?;
    let _uid = c.u32()?;
    let gid = c.u32()?;
    let submission_time = c.i64()?;
    let name = c.str()?;
    let _priority = c.i32()?;
    if c.flag()? {
        c.str()?;
    }
    let start_time = c.opt_i64()?;
    let _deadline = c.opt_i64()?;
    let predecessors = ids(&mut c)?;
    let array_predecessors = ids(&mut c)?;
    let array = if c.flag()? {
        if c.count(12)? != 1 {
            return Err("bad array range");
        }
        let (first, last, step) = c.range()?;
        Some(TaskIdRange { first, last, step })
    } else {
        None
    };
    let pe_min = if c.flag()? {
        c.str()?;
        let min = c.u32()?;
        c.u32()?;
        Some(min)
    } else {
        None
    };
    let len = c.count(5)?;
    let from = c.b;
    for _ in 0..len {
        pending_group(&mut c)?;
    }
    let pending = PendingGroups {
        bytes: passed(from, &c),
        len,
    };
    let len = c.count(30)?;
    let from = c.b;
    for _ in 0..len {
        running(&mut c)?;
    }
    let running = RunningTasks {
        bytes: passed(from, &c),
        len,
    };
    let finished = c.u64()?;
    let error = c.flag()?;
    if error {
        c.i64()?;
        c.str()?;
    }
    let prio = if c.flag()? {
        let prio = c.f64()?;
        c.take(12 * 8)?;
        for _ in 0..c.count(8)? {
            c.str()?;
            c.str()?;
        }
        prio
    } else {
        0.0
    };
    let _version = c.u32()?;
    let _applied_request = c.u64()?;
    let finished_tasks = ranges(&mut c)?;
    let restarted = ranges(&mut c)?;
    if !c.b.is_empty() {
        return Err("bytes after the entry");
    }
    Ok(JobLine {
        id,
        owner,
        gid,
        submission_time,
        name,
        start_time,
        predecessors,
        array_predecessors,
        array,
        pe_min,
        pending,
        running,
        finished,
        error,
        prio,
        finished_tasks,
        restarted,
    })
}
