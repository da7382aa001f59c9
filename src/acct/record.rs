//! One line of SGE's accounting file (`accounting(5)` of SGE 8.1.9): 45 colon-separated fields.
//!
//! The field list and each field's number format (`%f` for times and sizes that SGE keeps as
//! doubles, plain integers elsewhere) are checked byte for byte against the captures in
//! `tests/compat/accounting/`. Reading is as tolerant as SGE's own `qacct`: missing trailing
//! fields take their defaults and numbers are read like C's `atol`/`atof` (a leading numeric
//! prefix, else 0), so files written by SGE itself, by older versions or edited by hand load.

use crate::config::ClusterConfig;
use crate::model::JobRecord;
use crate::model::{Placement, TaskResult};
use std::fmt::Write as _;

/// The number of fields SGE 8.1.9 writes.
pub const FIELD_COUNT: usize = 45;

/// Fields up to and including `department` are required; SGE's reader rejects shorter lines,
/// and everything after (`granted_pe` …) was added by later versions and defaults.
pub const REQUIRED_FIELDS: usize = 32;

/// SGE's placeholder for "no value" in string fields.
pub const NONE: &str = "NONE";

/// The department of every job: gridspool has no department user sets, so every user is in
/// SGE's built-in `defaultdepartment`.
pub const DEFAULT_DEPARTMENT: &str = "defaultdepartment";

/// One finished task (or, for tightly integrated parallel jobs, one PE task), in the order and
/// with the meaning of `accounting(5)`. Serialized (`qacct -json`) with those names and units.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AccountingRecord {
    pub qname: String,
    pub hostname: String,
    pub group: String,
    pub owner: String,
    pub job_name: String,
    pub job_number: u32,
    pub account: String,
    pub priority: i32,
    pub submission_time: i64,
    pub start_time: i64,
    pub end_time: i64,
    /// SGE's failure code (0: the job ran; 100: "assumedly after job", e.g. killed by qdel).
    pub failed: u32,
    /// The job's exit code, or 128 + signal.
    pub exit_status: i32,
    /// Whole seconds between start and end.
    pub ru_wallclock: i64,
    pub ru_utime: f64,
    pub ru_stime: f64,
    /// As `getrusage(2)` reports it (kilobytes on Linux); `qacct` prints it as bytes, as SGE
    /// does.
    pub ru_maxrss: f64,
    pub ru_ixrss: i64,
    pub ru_ismrss: i64,
    pub ru_idrss: i64,
    pub ru_isrss: i64,
    pub ru_minflt: i64,
    pub ru_majflt: i64,
    pub ru_nswap: i64,
    pub ru_inblock: f64,
    pub ru_oublock: i64,
    pub ru_msgsnd: i64,
    pub ru_msgrcv: i64,
    pub ru_nsignals: i64,
    pub ru_nvcsw: i64,
    pub ru_nivcsw: i64,
    pub project: String,
    pub department: String,
    pub granted_pe: String,
    pub slots: u32,
    /// The array task number; 0 for a job that is not an array job.
    pub task_number: u32,
    /// CPU seconds (user + system).
    pub cpu: f64,
    /// Integral memory usage, GB·s.
    pub mem: f64,
    /// I/O, GB.
    pub io: f64,
    /// The job's category: its hard requests as SGE summarises them (`-l h_rt=1200`,
    /// `-pe smp 2`), or `NONE`.
    pub category: String,
    /// I/O wait, seconds.
    pub iow: f64,
    /// The PE task id of a slave task, `NONE` for the master task.
    pub pe_taskid: String,
    /// Peak virtual memory, bytes.
    pub maxvmem: f64,
    /// Advance reservation id, 0 for none.
    pub arid: u32,
    pub ar_submission_time: i64,
}

impl Default for AccountingRecord {
    fn default() -> Self {
        AccountingRecord {
            qname: String::new(),
            hostname: String::new(),
            group: String::new(),
            owner: String::new(),
            job_name: String::new(),
            job_number: 0,
            account: "sge".to_string(),
            priority: 0,
            submission_time: 0,
            start_time: 0,
            end_time: 0,
            failed: 0,
            exit_status: 0,
            ru_wallclock: 0,
            ru_utime: 0.0,
            ru_stime: 0.0,
            ru_maxrss: 0.0,
            ru_ixrss: 0,
            ru_ismrss: 0,
            ru_idrss: 0,
            ru_isrss: 0,
            ru_minflt: 0,
            ru_majflt: 0,
            ru_nswap: 0,
            ru_inblock: 0.0,
            ru_oublock: 0,
            ru_msgsnd: 0,
            ru_msgrcv: 0,
            ru_nsignals: 0,
            ru_nvcsw: 0,
            ru_nivcsw: 0,
            project: NONE.to_string(),
            department: DEFAULT_DEPARTMENT.to_string(),
            granted_pe: NONE.to_string(),
            slots: 1,
            task_number: 0,
            cpu: 0.0,
            mem: 0.0,
            io: 0.0,
            category: NONE.to_string(),
            iow: 0.0,
            pe_taskid: NONE.to_string(),
            maxvmem: 0.0,
            arid: 0,
            ar_submission_time: 0,
        }
    }
}

/// Why a line is not an accounting record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("empty line")]
    Empty,
    #[error("{found} fields, at least {REQUIRED_FIELDS} needed")]
    TooFewFields { found: usize },
    #[error("not UTF-8 text")]
    NotText,
}

/// The job's category as SGE builds it (`sge_build_job_category_dstring`): the hard requests
/// that decide where a job may run, in a fixed order, separated by blanks — `-l` resources as
/// requested, `-q` hard queues, `-masterq`, `-pe name range`, `-P project` — or `NONE` when
/// there are none. Jobs of one category are interchangeable for the scheduler, which is why
/// SGE records it.
pub fn category(job: &JobRecord) -> String {
    let spec = &job.spec;
    let mut parts: Vec<String> = Vec::new();
    if !spec.hard_resources.is_empty() {
        let list: Vec<String> = spec
            .hard_resources
            .iter()
            .map(|r| format!("{}={}", r.name, r.value))
            .collect();
        parts.push(format!("-l {}", list.join(",")));
    }
    if !spec.hard_queues.is_empty() {
        parts.push(format!("-q {}", spec.hard_queues.join(",")));
    }
    if !spec.master_queues.is_empty() {
        parts.push(format!("-masterq {}", spec.master_queues.join(",")));
    }
    if let Some(pe) = &spec.pe {
        let range = if pe.range.min == pe.range.max {
            pe.range.min.to_string()
        } else if pe.range.max == u32::MAX {
            format!("{}-", pe.range.min)
        } else {
            format!("{}-{}", pe.range.min, pe.range.max)
        };
        parts.push(format!("-pe {} {range}", pe.name));
    }
    if let Some(project) = &spec.project {
        parts.push(format!("-P {project}"));
    }
    // A job of an advance reservation (`tests/compat/accounting/ar-job-lines.txt`).
    if let Some(ar) = spec.ar {
        parts.push(format!("-ar {ar}"));
    }
    if parts.is_empty() {
        NONE.to_string()
    } else {
        parts.join(" ")
    }
}

/// A field value safe for the colon-separated file: SGE refuses colons in names at
/// submission, but a record must never shift the fields of the line, so any that slip
/// through are written as `_`. (The category is the exception: it is parsed back from both
/// ends of the line, see [`AccountingRecord::parse_line`].)
fn field(s: &str) -> String {
    let s = s.replace([':', '\n', '\r'], "_");
    if s.is_empty() { NONE.to_string() } else { s }
}

impl AccountingRecord {
    /// The record of a finished task: who and what from the job, where from the placement,
    /// how it ended from the shepherd's report.
    pub fn from_task(
        job: &JobRecord,
        placement: &Placement,
        result: &TaskResult,
        config: &ClusterConfig,
    ) -> Self {
        let start = result.start_time.floor() as i64;
        let end = result.end_time.floor() as i64;
        let r = &result.rusage;
        let project = job.spec.project.clone().or_else(|| {
            config
                .users
                .iter()
                .find(|u| u.name == job.submitter.owner)
                .and_then(|u| u.default_project.clone())
        });
        AccountingRecord {
            qname: placement.queue.clone(),
            hostname: if result.host.is_empty() {
                placement.host.clone()
            } else {
                result.host.clone()
            },
            group: job.submitter.group.clone(),
            owner: job.submitter.owner.clone(),
            job_name: job.spec.name.clone(),
            job_number: job.id.0,
            account: job.spec.account.clone(),
            priority: job.spec.priority,
            submission_time: job.submitter.submission_time,
            start_time: start,
            end_time: end,
            failed: result.failed,
            exit_status: result.exit_status,
            ru_wallclock: (end - start).max(0),
            ru_utime: r.utime,
            ru_stime: r.stime,
            ru_maxrss: r.maxrss,
            ru_ixrss: r.ixrss.round() as i64,
            ru_ismrss: r.ismrss.round() as i64,
            ru_idrss: r.idrss.round() as i64,
            ru_isrss: r.isrss.round() as i64,
            ru_minflt: r.minflt as i64,
            ru_majflt: r.majflt as i64,
            ru_nswap: r.nswap as i64,
            ru_inblock: r.inblock,
            ru_oublock: r.oublock as i64,
            ru_msgsnd: r.msgsnd as i64,
            ru_msgrcv: r.msgrcv as i64,
            ru_nsignals: r.nsignals as i64,
            ru_nvcsw: r.nvcsw as i64,
            ru_nivcsw: r.nivcsw as i64,
            project: project.unwrap_or_else(|| NONE.to_string()),
            department: DEFAULT_DEPARTMENT.to_string(),
            granted_pe: placement.pe.clone().unwrap_or_else(|| NONE.to_string()),
            slots: placement.slots.max(1),
            task_number: if job.spec.array.is_some() {
                result.task
            } else {
                0
            },
            cpu: r.utime + r.stime,
            mem: result.mem,
            io: result.io,
            category: category(job),
            iow: result.iow,
            // A pe task (`qrsh -inherit`) has a record of its own; the master task's
            // includes whatever it started itself (a loosely integrated PE's slaves).
            pe_taskid: result.pe_task.clone().unwrap_or_else(|| NONE.to_string()),
            maxvmem: result.maxvmem,
            arid: job.spec.ar.unwrap_or(0),
            ar_submission_time: if job.spec.ar.is_some() {
                job.spec.ar_submission_time
            } else {
                0
            },
        }
    }

    /// The record of a task that never started (its prolog failed), as SGE 8.1.9 writes it:
    /// no submission, start or end time, no slots, no exit status and no usage, so that
    /// nothing reads it as a run (`qacct` shows `-/-`, summaries count no time).
    pub fn never_started(self) -> Self {
        // What names the job and where it was sent stays; every time, status and usage is
        // the default's zero.
        AccountingRecord {
            qname: self.qname,
            hostname: self.hostname,
            group: self.group,
            owner: self.owner,
            job_name: self.job_name,
            job_number: self.job_number,
            account: self.account,
            priority: self.priority,
            failed: self.failed,
            project: self.project,
            department: self.department,
            granted_pe: self.granted_pe,
            slots: 0,
            task_number: self.task_number,
            category: self.category,
            pe_taskid: self.pe_taskid,
            arid: self.arid,
            ar_submission_time: self.ar_submission_time,
            ..Self::default()
        }
    }

    /// The line as SGE writes it, without the newline.
    pub fn to_line(&self) -> String {
        let mut s = String::with_capacity(320);
        // Writing into a String cannot fail.
        let _ = write!(
            s,
            "{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}:",
            field(&self.qname),
            field(&self.hostname),
            field(&self.group),
            field(&self.owner),
            field(&self.job_name),
            self.job_number,
            field(&self.account),
            self.priority,
            self.submission_time,
            self.start_time,
            self.end_time,
            self.failed,
            self.exit_status,
            self.ru_wallclock,
        );
        let _ = write!(
            s,
            "{:.6}:{:.6}:{:.6}:{}:{}:{}:{}:{}:{}:{}:{:.6}:{}:{}:{}:{}:{}:{}:",
            self.ru_utime,
            self.ru_stime,
            self.ru_maxrss,
            self.ru_ixrss,
            self.ru_ismrss,
            self.ru_idrss,
            self.ru_isrss,
            self.ru_minflt,
            self.ru_majflt,
            self.ru_nswap,
            self.ru_inblock,
            self.ru_oublock,
            self.ru_msgsnd,
            self.ru_msgrcv,
            self.ru_nsignals,
            self.ru_nvcsw,
            self.ru_nivcsw,
        );
        let category = self.category.replace(['\n', '\r'], " ");
        let _ = write!(
            s,
            "{}:{}:{}:{}:{}:{:.6}:{:.6}:{:.6}:{}:{:.6}:{}:{:.6}:{}:{}",
            field(&self.project),
            field(&self.department),
            field(&self.granted_pe),
            self.slots,
            self.task_number,
            self.cpu,
            self.mem,
            self.io,
            if category.is_empty() { NONE } else { &category },
            self.iow,
            field(&self.pe_taskid),
            self.maxvmem,
            self.arid,
            self.ar_submission_time,
        );
        s
    }

    /// Reads one record. Comment lines are the caller's business (see
    /// [`crate::acct::Reader`]). A line with more than 45 fields has colons inside its
    /// category (e.g. `-l h_rt=1:00:00`): the fields after the category are taken from the
    /// end of the line and the rest is the category.
    pub fn parse_line(line: &str) -> Result<Self, RecordError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return Err(RecordError::Empty);
        }
        let mut f: Vec<&str> = line.split(':').collect();
        if f.len() < REQUIRED_FIELDS {
            return Err(RecordError::TooFewFields { found: f.len() });
        }
        let joined;
        // Categories start with an option (`-l …`); anything else is a line with extra
        // trailing fields (a later format), whose extras are ignored as SGE does.
        if f.len() > FIELD_COUNT && f[39].starts_with('-') {
            let extra = f.len() - FIELD_COUNT;
            joined = f[39..=39 + extra].join(":");
            let mut rebuilt: Vec<&str> = f[..39].to_vec();
            rebuilt.push(&joined);
            rebuilt.extend_from_slice(&f[40 + extra..]);
            f = rebuilt;
        }
        let s = |i: usize, default: &str| -> String {
            f.get(i)
                .map_or_else(|| default.to_string(), |v| v.to_string())
        };
        let int = |i: usize| f.get(i).map_or(0, |v| atol(v));
        let float = |i: usize| f.get(i).map_or(0.0, |v| atof(v));
        Ok(AccountingRecord {
            qname: s(0, ""),
            hostname: s(1, ""),
            group: s(2, ""),
            owner: s(3, ""),
            job_name: s(4, ""),
            job_number: int(5) as u32,
            account: s(6, ""),
            priority: int(7) as i32,
            submission_time: int(8),
            start_time: int(9),
            end_time: int(10),
            failed: int(11) as u32,
            exit_status: int(12) as i32,
            ru_wallclock: int(13),
            ru_utime: float(14),
            ru_stime: float(15),
            ru_maxrss: float(16),
            ru_ixrss: int(17),
            ru_ismrss: int(18),
            ru_idrss: int(19),
            ru_isrss: int(20),
            ru_minflt: int(21),
            ru_majflt: int(22),
            ru_nswap: int(23),
            ru_inblock: float(24),
            ru_oublock: int(25),
            ru_msgsnd: int(26),
            ru_msgrcv: int(27),
            ru_nsignals: int(28),
            ru_nvcsw: int(29),
            ru_nivcsw: int(30),
            project: s(31, NONE),
            department: s(32, DEFAULT_DEPARTMENT),
            granted_pe: s(33, NONE),
            slots: f.get(34).map_or(1, |v| atol(v) as u32),
            task_number: int(35) as u32,
            cpu: float(36),
            mem: float(37),
            io: float(38),
            category: s(39, NONE),
            iow: float(40),
            pe_taskid: s(41, NONE),
            maxvmem: float(42),
            arid: int(43) as u32,
            ar_submission_time: int(44),
        })
    }

    /// Whether this is the master task of its job (`qacct -m`): not a PE slave task.
    pub fn is_master_task(&self) -> bool {
        self.pe_taskid == NONE || self.pe_taskid.is_empty()
    }
}

/// C's `atol`: optional blanks, an optional sign, the leading digits; 0 when there are none.
/// Integer fields written by SGE as `%f` (some versions do) read as their integer part.
pub fn atol(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut n: i64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            break;
        }
        n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
    }
    if neg { -n } else { n }
}

/// C's `atof`: the longest leading prefix that is a decimal number (with exponent); 0 when
/// there is none.
pub fn atof(s: &str) -> f64 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        end = 1;
    }
    let digits_start = end;
    while end < b.len() && b[end].is_ascii_digit() {
        end += 1;
    }
    if end < b.len() && b[end] == b'.' {
        end += 1;
        while end < b.len() && b[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_start || (end == digits_start + 1 && b[digits_start] == b'.') {
        return 0.0;
    }
    let mantissa_end = end;
    if end < b.len() && matches!(b[end], b'e' | b'E') {
        let mut e = end + 1;
        if e < b.len() && matches!(b[e], b'-' | b'+') {
            e += 1;
        }
        let exp_digits = e;
        while e < b.len() && b[e].is_ascii_digit() {
            e += 1;
        }
        if e > exp_digits {
            end = e;
        }
    }
    t[..end]
        .parse()
        .or_else(|_| t[..mantissa_end].parse())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB2: &str = "all.q:vm:sgeuser:sgeuser:renamed_running:2:sge:0:1795301101:1795301102:1795301113:100:137:11:0.001513:0.006070:4496.000000:0:0:0:0:439:0:0:0.000000:32:0:0:0:11:7:NONE:defaultdepartment:NONE:1:0:0.007583:0.000000:0.000030:-l h_rt=1200:0.000000:NONE:3428352.000000:0:0";

    #[test]
    fn a_captured_line_round_trips() {
        let r = AccountingRecord::parse_line(JOB2).expect("parse");
        assert_eq!(r.job_number, 2);
        assert_eq!(r.failed, 100);
        assert_eq!(r.exit_status, 137);
        assert_eq!(r.category, "-l h_rt=1200");
        assert_eq!(r.maxvmem, 3428352.0);
        assert_eq!(r.to_line(), JOB2);
        assert_eq!(JOB2.split(':').count(), FIELD_COUNT);
    }

    #[test]
    fn colons_in_the_category_are_recovered() {
        let line = JOB2.replace("h_rt=1200", "h_rt=0:20:00");
        let r = AccountingRecord::parse_line(&line).expect("parse");
        assert_eq!(r.category, "-l h_rt=0:20:00");
        assert_eq!(r.iow, 0.0);
        assert_eq!(r.maxvmem, 3428352.0);
        assert_eq!(r.to_line(), line);
    }

    #[test]
    fn extra_trailing_fields_are_ignored() {
        let line = JOB2.replace("-l h_rt=1200", "NONE") + ":extra";
        let r = AccountingRecord::parse_line(&line).expect("parse");
        assert_eq!(r.category, "NONE");
        assert_eq!(r.ar_submission_time, 0);
    }

    #[test]
    fn short_and_sloppy_lines_read_like_sge() {
        assert_eq!(AccountingRecord::parse_line(""), Err(RecordError::Empty));
        assert!(matches!(
            AccountingRecord::parse_line("a:b:c"),
            Err(RecordError::TooFewFields { found: 3 })
        ));
        let short: Vec<&str> = JOB2.split(':').take(33).collect();
        let r = AccountingRecord::parse_line(&short.join(":")).expect("parse");
        assert_eq!(r.granted_pe, NONE);
        assert_eq!(r.slots, 1);
        let sloppy = JOB2.replace(":2:sge:", ":x2:sge:");
        assert_eq!(
            AccountingRecord::parse_line(&sloppy)
                .expect("parse")
                .job_number,
            0
        );
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(atol(" 42abc"), 42);
        assert_eq!(atol("-7"), -7);
        assert_eq!(atol("x"), 0);
        assert_eq!(atof("1e3"), 1000.0);
        assert_eq!(atof("0.5x"), 0.5);
        assert_eq!(atof("abc"), 0.0);
        assert_eq!(atof("3e"), 3.0);
        assert_eq!(atof("."), 0.0);
    }
}
