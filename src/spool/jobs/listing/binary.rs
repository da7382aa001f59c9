//! The binary form of a summary, as the listing index (`spool::index`) stores it: the
//! same fields as the JSON line, in the same order, little-endian, strings as a `u32`
//! length and UTF-8 bytes, options as a `0`/`1` byte, floats as their IEEE bits (so that
//! what a listing shows is exactly what the JSON line gave, without parsing a float).
//! Decoding checks every length: a short or over-long entry is an error, never a panic.

use super::*;
use crate::model::{RunState, SlotRange, TaskUsage};

fn u32_(out: &mut Vec<u8>, x: u32) {
    out.extend_from_slice(&x.to_le_bytes());
}
fn u64_(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}
fn i64_(out: &mut Vec<u8>, x: i64) {
    out.extend_from_slice(&x.to_le_bytes());
}
fn f64_(out: &mut Vec<u8>, x: f64) {
    out.extend_from_slice(&x.to_bits().to_le_bytes());
}
fn len(out: &mut Vec<u8>, n: usize) {
    u32_(out, u32::try_from(n).unwrap_or(u32::MAX));
}
fn str_(out: &mut Vec<u8>, s: &str) {
    len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}
fn opt_i64(out: &mut Vec<u8>, x: Option<i64>) {
    match x {
        Some(x) => {
            out.push(1);
            i64_(out, x);
        }
        None => out.push(0),
    }
}
fn holds(out: &mut Vec<u8>, h: Holds) {
    out.push(u8::from(h.user) | u8::from(h.operator) << 1 | u8::from(h.system) << 2);
}
fn ranges(out: &mut Vec<u8>, rs: &[Range]) {
    len(out, rs.len());
    for r in rs {
        u32_(out, r.0);
        u32_(out, r.1);
        u32_(out, r.2);
    }
}
fn ids(out: &mut Vec<u8>, ids: &[JobId]) {
    len(out, ids.len());
    for id in ids {
        u32_(out, id.0);
    }
}

/// Appends the binary form of `s` to `out`.
pub(in crate::spool) fn encode(s: &Summary<'_>, out: &mut Vec<u8>) {
    u32_(out, s.1);
    u32_(out, s.2.0);
    str_(out, &s.3);
    u32_(out, s.4);
    u32_(out, s.5);
    i64_(out, s.6);
    str_(out, &s.7);
    out.extend_from_slice(&s.8.to_le_bytes());
    match &s.9 {
        Some(p) => {
            out.push(1);
            str_(out, p);
        }
        None => out.push(0),
    }
    opt_i64(out, s.10);
    opt_i64(out, s.11);
    ids(out, &s.12);
    ids(out, &s.13);
    match &s.14 {
        Some(r) => {
            out.push(1);
            ranges(out, std::slice::from_ref(r));
        }
        None => out.push(0),
    }
    match &s.15 {
        Some(pe) => {
            out.push(1);
            str_(out, &pe.name);
            u32_(out, pe.range.min);
            u32_(out, pe.range.max);
        }
        None => out.push(0),
    }
    len(out, s.16.len());
    for (rs, h) in &s.16 {
        ranges(out, rs);
        holds(out, *h);
    }
    len(out, s.17.len());
    for r in s.17.iter() {
        u32_(out, r.task);
        out.push(match r.state {
            RunState::Transferring => 0,
            RunState::Running => 1,
            RunState::Suspended => 2,
        });
        i64_(out, r.start_time);
        str_(out, &r.queue);
        str_(out, &r.host);
        u32_(out, r.slots);
        len(out, r.granted.len());
        for (host, queue, slots) in &r.granted {
            str_(out, host);
            str_(out, queue);
            u32_(out, *slots);
        }
        out.push(
            u8::from(r.deleting)
                | u8::from(r.restarted) << 1
                | u8::from(r.queue_suspended) << 2
                | u8::from(r.rescheduling) << 3,
        );
        holds(out, r.holds);
        match &r.usage {
            Some(u) => {
                out.push(1);
                for x in [u.cpu, u.mem, u.io, u.vmem, u.maxvmem] {
                    f64_(out, x);
                }
            }
            None => out.push(0),
        }
        len(out, r.devices.len());
        for (kind, ids) in &r.devices {
            str_(out, kind);
            len(out, ids.len());
            for id in ids {
                str_(out, id);
            }
        }
    }
    u64_(out, s.18);
    match &s.19 {
        Some(e) => {
            out.push(1);
            i64_(out, e.time);
            str_(out, &e.message);
        }
        None => out.push(0),
    }
    match &s.20 {
        Some(p) => {
            out.push(1);
            for x in [
                p.0, p.1, p.2, p.3, p.4, p.5, p.6, p.7, p.8, p.9, p.10, p.11, p.12,
            ] {
                f64_(out, x);
            }
            len(out, p.13.len());
            for (k, v) in p.13.iter() {
                str_(out, k);
                str_(out, v);
            }
        }
        None => out.push(0),
    }
    u32_(out, s.21);
    u64_(out, s.22);
    ranges(out, &s.23);
    ranges(out, &s.24);
}

/// Reads what [`encode`] wrote, checking every length.
pub(super) struct Cursor<'b> {
    pub(super) b: &'b [u8],
}

pub(super) type R<T> = Result<T, &'static str>;

impl<'b> Cursor<'b> {
    pub(super) fn take(&mut self, n: usize) -> R<&'b [u8]> {
        if n > self.b.len() {
            return Err("entry cut short");
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    pub(super) fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        self.take(N)?.try_into().map_err(|_| "entry cut short")
    }
    pub(super) fn u8(&mut self) -> R<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub(super) fn flag(&mut self) -> R<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err("bad option tag"),
        }
    }
    pub(super) fn u32(&mut self) -> R<u32> {
        self.array().map(u32::from_le_bytes)
    }
    pub(super) fn i32(&mut self) -> R<i32> {
        self.array().map(i32::from_le_bytes)
    }
    pub(super) fn u64(&mut self) -> R<u64> {
        self.array().map(u64::from_le_bytes)
    }
    pub(super) fn i64(&mut self) -> R<i64> {
        self.array().map(i64::from_le_bytes)
    }
    pub(super) fn f64(&mut self) -> R<f64> {
        self.u64().map(f64::from_bits)
    }
    /// A count of items of at least `min_size` bytes each: bounded by what is left, so
    /// that a damaged count cannot make us reserve gigabytes.
    pub(super) fn count(&mut self, min_size: usize) -> R<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size) > self.b.len() {
            return Err("count beyond the entry");
        }
        Ok(n)
    }
    pub(super) fn string(&mut self) -> R<String> {
        self.str().map(str::to_owned)
    }
    /// A string borrowed from the entry.
    pub(super) fn str(&mut self) -> R<&'b str> {
        let n = self.count(1)?;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).map_err(|_| "string not UTF-8")
    }
    pub(super) fn opt_i64(&mut self) -> R<Option<i64>> {
        if self.flag()? {
            self.i64().map(Some)
        } else {
            Ok(None)
        }
    }
    pub(super) fn holds(&mut self) -> R<Holds> {
        let b = self.u8()?;
        if b > 7 {
            return Err("bad holds");
        }
        Ok(Holds {
            user: b & 1 != 0,
            operator: b & 2 != 0,
            system: b & 4 != 0,
        })
    }
    pub(super) fn range(&mut self) -> R<Range> {
        Ok((self.u32()?, self.u32()?, self.u32()?))
    }
    pub(super) fn ranges(&mut self) -> R<Vec<Range>> {
        let n = self.count(12)?;
        (0..n).map(|_| self.range()).collect()
    }
    pub(super) fn ids(&mut self) -> R<Vec<JobId>> {
        let n = self.count(4)?;
        (0..n).map(|_| self.u32().map(JobId)).collect()
    }
    /// A running task's state, as `encode` writes it.
    pub(super) fn run_state(&mut self) -> R<RunState> {
        match self.u8()? {
            0 => Ok(RunState::Transferring),
            1 => Ok(RunState::Running),
            2 => Ok(RunState::Suspended),
            _ => Err("bad run state"),
        }
    }
    /// A running task's flags: deleting 1, restarted 2, queue suspended 4, rescheduling 8.
    pub(super) fn task_flags(&mut self) -> R<u8> {
        match self.u8()? {
            f if f <= 15 => Ok(f),
            _ => Err("bad task flags"),
        }
    }
    pub(super) fn running(&mut self) -> R<RunningTask> {
        let task = self.u32()?;
        let state = self.run_state()?;
        let start_time = self.i64()?;
        let queue = self.string()?;
        let host = self.string()?;
        let slots = self.u32()?;
        let n = self.count(12)?;
        let granted = (0..n)
            .map(|_| Ok((self.string()?, self.string()?, self.u32()?)))
            .collect::<R<Vec<_>>>()?;
        let flags = self.task_flags()?;
        let holds = self.holds()?;
        let usage = if self.flag()? {
            Some(TaskUsage {
                cpu: self.f64()?,
                mem: self.f64()?,
                io: self.f64()?,
                vmem: self.f64()?,
                maxvmem: self.f64()?,
            })
        } else {
            None
        };
        let n = self.count(8)?;
        let devices = (0..n)
            .map(|_| {
                let kind = self.string()?;
                let m = self.count(4)?;
                let ids = (0..m).map(|_| self.string()).collect::<R<Vec<_>>>()?;
                Ok((kind, ids))
            })
            .collect::<R<Vec<_>>>()?;
        Ok(RunningTask {
            task,
            state,
            start_time,
            queue,
            host,
            slots,
            granted,
            deleting: flags & 1 != 0,
            restarted: flags & 2 != 0,
            queue_suspended: flags & 4 != 0,
            rescheduling: flags & 8 != 0,
            devices,
            holds,
            usage,
        })
    }
}

/// The listing record an entry stands for (as [`Summary::into_record`] builds it from
/// the JSON line).
pub(in crate::spool) fn decode(bytes: &[u8]) -> Result<JobRecord, String> {
    decode_summary(bytes)
        .map(Summary::into_record)
        .map_err(|e| format!("bad listing index entry: {e}"))
}

fn decode_summary(bytes: &[u8]) -> R<Summary<'static>> {
    let mut c = Cursor { b: bytes };
    let v = c.u32()?;
    let id = JobId(c.u32()?);
    let owner = c.string()?;
    let uid = c.u32()?;
    let gid = c.u32()?;
    let submission_time = c.i64()?;
    let name = c.string()?;
    let priority = c.i32()?;
    let project = if c.flag()? { Some(c.string()?) } else { None };
    let start_time = c.opt_i64()?;
    let deadline = c.opt_i64()?;
    let predecessors = c.ids()?;
    let array_predecessors = c.ids()?;
    let array = if c.flag()? {
        let n = c.count(12)?;
        if n != 1 {
            return Err("bad array range");
        }
        Some(c.range()?)
    } else {
        None
    };
    let pe = if c.flag()? {
        Some(PeRequest {
            name: c.string()?,
            range: SlotRange {
                min: c.u32()?,
                max: c.u32()?,
            },
        })
    } else {
        None
    };
    let n = c.count(5)?;
    let pending = (0..n)
        .map(|_| Ok((c.ranges()?, c.holds()?)))
        .collect::<R<Vec<_>>>()?;
    let n = c.count(30)?;
    let running = (0..n).map(|_| c.running()).collect::<R<Vec<_>>>()?;
    let finished = c.u64()?;
    let error = if c.flag()? {
        Some(ErrorInfo {
            time: c.i64()?,
            message: c.string()?,
        })
    } else {
        None
    };
    let prio = if c.flag()? {
        let mut x = [0f64; 13];
        for slot in &mut x {
            *slot = c.f64()?;
        }
        let n = c.count(8)?;
        let terms = (0..n)
            .map(|_| Ok((c.string()?, c.string()?)))
            .collect::<R<Vec<_>>>()?;
        Some((
            x[0],
            x[1],
            x[2],
            x[3],
            x[4],
            x[5],
            x[6],
            x[7],
            x[8],
            x[9],
            x[10],
            x[11],
            x[12],
            Cow::Owned(terms),
        ))
    } else {
        None
    };
    let version = c.u32()?;
    let applied_request = c.u64()?;
    let finished_tasks = c.ranges()?;
    let restarted = c.ranges()?;
    if !c.b.is_empty() {
        return Err("bytes after the entry");
    }
    Ok(Summary(
        Tag,
        v,
        id,
        Cow::Owned(owner),
        uid,
        gid,
        submission_time,
        Cow::Owned(name),
        priority,
        project.map(Cow::Owned),
        start_time,
        deadline,
        Cow::Owned(predecessors),
        Cow::Owned(array_predecessors),
        array,
        pe.map(Cow::Owned),
        pending,
        Cow::Owned(running),
        finished,
        error.map(Cow::Owned),
        prio,
        version,
        applied_request,
        finished_tasks,
        restarted,
    ))
}
