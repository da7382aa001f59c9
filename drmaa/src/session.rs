//! The DRMAA session: one per process, between `drmaa_init` and `drmaa_exit`. It knows the
//! jobs it submitted (those `DRMAA_JOB_IDS_SESSION_ALL`/`_ANY` mean, and the ones
//! `drmaa_wait` may reap) and follows their ends.

use crate::drm::{Cell, Ends, JobRef, ps};
use crate::error::{DrmaaError, DrmaaResult, Errno};
use crate::template::JobTemplate;
use gridspool::acct::AccountingRecord;
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub const SESSION_ANY: &str = "DRMAA_JOB_IDS_SESSION_ANY";
pub const SESSION_ALL: &str = "DRMAA_JOB_IDS_SESSION_ALL";

/// How often a waiting call looks at the cell.
const POLL: Duration = Duration::from_millis(200);

pub struct Session {
    cell: Cell,
    contact: String,
    /// Submitted in this session and not reaped yet.
    jobs: BTreeSet<JobRef>,
    ends: Ends,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

fn session() -> MutexGuard<'static, Option<Session>> {
    SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

fn no_session() -> DrmaaError {
    DrmaaError::new(Errno::NoActiveSession, "there is no active DRMAA session")
}

/// Runs `f` on the active session.
pub fn with<T>(f: impl FnOnce(&mut Session) -> DrmaaResult<T>) -> DrmaaResult<T> {
    let mut guard = session();
    let s = guard.as_mut().ok_or_else(no_session)?;
    f(s)
}

/// `drmaa_init`: `contact` empty, or the one `drmaa_get_contact` gave (sessions do not
/// outlive their process here: a contact names the cell, nothing to reconnect to).
pub fn init(contact: Option<&str>) -> DrmaaResult<()> {
    let mut guard = session();
    if guard.is_some() {
        return Err(DrmaaError::new(
            Errno::AlreadyActiveSession,
            "a DRMAA session is already active",
        ));
    }
    let cell = Cell::locate()?;
    let own = default_contact(&cell);
    if let Some(c) = contact.filter(|c| !c.is_empty())
        && !c.starts_with("session=")
    {
        return Err(DrmaaError::new(
            Errno::InvalidContactString,
            format!("invalid contact string \"{c}\""),
        ));
    }
    let ends = Ends::from_now(&cell);
    *guard = Some(Session {
        cell,
        contact: own,
        jobs: BTreeSet::new(),
        ends,
    });
    Ok(())
}

fn default_contact(_cell: &Cell) -> String {
    format!(
        "session={}.{}",
        gridspool::identity::short_hostname(),
        std::process::id()
    )
}

pub fn exit() -> DrmaaResult<()> {
    session().take().map(|_| ()).ok_or_else(no_session)
}

/// The contact of the active session, or the one a session would get.
pub fn contact() -> String {
    match session().as_ref() {
        Some(s) => s.contact.clone(),
        None => String::new(),
    }
}

/// How a job ended, in Grid Engine's wait status bits (`sge_report.h`): exited 0x1,
/// signaled 0x2, core dumped 0x4, never ran (aborted) 0x8, the exit status at bit 4, the
/// signal at bit 12. As Grid Engine's library reports them (tests/compat/drmaa): a job
/// deleted while it ran (`failed` 100, killed by `qdel`) is aborted with status 0, not
/// signaled; one that could not start (`failed` 1–99 before running) is aborted too.
pub fn wait_status(r: &AccountingRecord) -> i32 {
    let never_ran = r.start_time == 0 || (r.failed != 0 && r.failed < 100 && r.exit_status == 0);
    if never_ran || r.failed == 100 {
        return 0x8;
    }
    let code = r.exit_status & 0xff;
    if code > 128 && code < 128 + 65 {
        0x2 | ((code - 128) << 12)
    } else {
        0x1 | (code << 4)
    }
}

/// The wait status of a job that ended without an accounting record (deleted while it
/// waited): it never ran.
pub const ABORTED: i32 = 0x8;

/// `drmaa_wait`'s resource usage as Grid Engine's library gives it: these names, each value
/// with four decimals (`exit_status=4.0000`), from the job's accounting record (the
/// `acct_` values and the others alike: the record is all there is of an ended job).
pub fn rusage(r: &AccountingRecord) -> Vec<String> {
    let signal = if r.exit_status > 128 && r.exit_status < 128 + 65 {
        r.exit_status - 128
    } else {
        0
    };
    let values: [(&str, f64); 35] = [
        ("acct_cpu", r.cpu),
        ("acct_io", r.io),
        ("acct_iow", r.iow),
        ("acct_maxvmem", r.maxvmem),
        ("acct_mem", r.mem),
        ("cpu", r.cpu),
        ("end_time", r.end_time as f64),
        ("exit_status", f64::from(r.exit_status)),
        ("io", r.io),
        ("iow", r.iow),
        ("maxvmem", r.maxvmem),
        ("mem", r.mem),
        ("priority", f64::from(r.priority)),
        ("ru_idrss", r.ru_idrss as f64),
        ("ru_inblock", r.ru_inblock),
        ("ru_ismrss", r.ru_ismrss as f64),
        ("ru_isrss", r.ru_isrss as f64),
        ("ru_ixrss", r.ru_ixrss as f64),
        ("ru_majflt", r.ru_majflt as f64),
        ("ru_maxrss", r.ru_maxrss),
        ("ru_minflt", r.ru_minflt as f64),
        ("ru_msgrcv", r.ru_msgrcv as f64),
        ("ru_msgsnd", r.ru_msgsnd as f64),
        ("ru_nivcsw", r.ru_nivcsw as f64),
        ("ru_nsignals", r.ru_nsignals as f64),
        ("ru_nswap", r.ru_nswap as f64),
        ("ru_nvcsw", r.ru_nvcsw as f64),
        ("ru_oublock", r.ru_oublock as f64),
        ("ru_stime", r.ru_stime),
        ("ru_utime", r.ru_utime),
        ("ru_wallclock", r.ru_wallclock as f64),
        ("signal", f64::from(signal)),
        ("start_time", r.start_time as f64),
        ("submission_time", r.submission_time as f64),
        ("vmem", 0.0),
    ];
    values
        .iter()
        .map(|(name, v)| format!("{name}={v:.4}"))
        .collect()
}

/// What `drmaa_wait` returns of an ended job.
#[derive(Debug, Clone)]
pub struct Ended {
    pub job: JobRef,
    pub stat: i32,
    /// `None`: it ended without a record (no usage).
    pub rusage: Option<Vec<String>>,
}

impl Session {
    pub fn run(
        &mut self,
        t: &JobTemplate,
        bulk: Option<(u32, u32, u32)>,
    ) -> DrmaaResult<Vec<JobRef>> {
        let category = match t.get("drmaa_job_category")? {
            Some(name) => crate::template::category_options(name, &self.cell.qtask_files())?,
            None => Vec::new(),
        };
        let args = t.qsub_args(bulk, &self.cell.home, &category)?;
        let ids = self.cell.submit(args)?;
        self.jobs.extend(ids.iter().copied());
        Ok(ids)
    }

    /// The jobs an id list names: the session's for `DRMAA_JOB_IDS_SESSION_ALL`.
    fn named(&self, id: &str) -> DrmaaResult<Vec<JobRef>> {
        if id == SESSION_ALL {
            return Ok(self.jobs.iter().copied().collect());
        }
        Ok(vec![JobRef::parse(id)?])
    }

    pub fn control(&mut self, id: &str, action: i32) -> DrmaaResult<()> {
        let jobs = self.named(id)?;
        // One call per job: a bulk job's tasks go by job where they all are named.
        let mut by_job: BTreeSet<JobRef> = BTreeSet::new();
        for j in jobs {
            by_job.insert(j);
        }
        for job in by_job {
            self.cell.control(job, action)?;
        }
        Ok(())
    }

    /// `drmaa_job_ps`.
    pub fn status(&mut self, id: &str) -> DrmaaResult<i32> {
        let job = JobRef::parse(id)?;
        if let Some(done) = self.ended(job)? {
            return Ok(if done.stat & 0x8 != 0 || done.stat & 0x2 != 0 {
                ps::FAILED
            } else {
                ps::DONE
            });
        }
        let lines = self.cell.active()?;
        match lines.iter().find(|l| l.covers(job)) {
            Some(l) => Ok(l.ps()),
            None => Err(DrmaaError::new(
                Errno::InvalidJob,
                format!("job \"{job}\" does not exist"),
            )),
        }
    }

    /// The end of `job` if it has ended: its record, or, for a job of the session that is
    /// no longer in the cell and has none, an end without usage (deleted while waiting).
    fn ended(&mut self, job: JobRef) -> DrmaaResult<Option<Ended>> {
        self.ends.catch_up();
        if let Some(r) = self.ends.get(job) {
            return Ok(Some(Ended {
                job,
                stat: wait_status(r),
                rusage: Some(rusage(r)),
            }));
        }
        if !self.jobs.contains(&job) {
            return Ok(None);
        }
        let active = self.cell.active()?;
        if active.iter().any(|l| l.covers(job)) {
            return Ok(None);
        }
        // Gone from the cell: its record, written before it left, is there now if any.
        self.ends.catch_up();
        Ok(Some(match self.ends.get(job) {
            Some(r) => Ended {
                job,
                stat: wait_status(r),
                rusage: Some(rusage(r)),
            },
            None => Ended {
                job,
                stat: ABORTED,
                rusage: None,
            },
        }))
    }

    fn reap(&mut self, job: JobRef) {
        self.jobs.remove(&job);
        self.ends.forget(job);
    }
}

/// Waits, without holding the session between looks, until `look` gives a value or
/// `timeout` (seconds; negative: forever) runs out.
fn wait_for<T>(
    timeout: i64,
    mut look: impl FnMut(&mut Session) -> DrmaaResult<Option<T>>,
) -> DrmaaResult<T> {
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_secs(timeout as u64));
    loop {
        if let Some(v) = with(&mut look)? {
            return Ok(v);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(DrmaaError::new(
                Errno::ExitTimeout,
                "the time-out ran out before the job(s) ended",
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// `drmaa_wait`: the end of `id` (or of any job of the session), reaped.
pub fn wait(id: &str, timeout: i64) -> DrmaaResult<Ended> {
    let any = id == SESSION_ANY;
    let wanted = if any { None } else { Some(JobRef::parse(id)?) };
    if let Some(job) = wanted {
        // A job of another session (or none) cannot be waited for.
        with(|s| {
            if s.jobs.contains(&job) || s.ends.get(job).is_some() {
                Ok(())
            } else {
                Err(DrmaaError::new(
                    Errno::InvalidJob,
                    format!("job \"{job}\" is not a job of this session"),
                ))
            }
        })?;
    }
    wait_for(timeout, |s| {
        let candidates: Vec<JobRef> = match wanted {
            Some(j) => vec![j],
            None => {
                if s.jobs.is_empty() {
                    return Err(DrmaaError::new(
                        Errno::InvalidJob,
                        "the session has no job left to wait for",
                    ));
                }
                s.jobs.iter().copied().collect()
            }
        };
        for job in candidates {
            if let Some(end) = s.ended(job)? {
                s.reap(job);
                return Ok(Some(end));
            }
        }
        Ok(None)
    })
}

/// `drmaa_synchronize`: waits for all of `ids` (the session's with
/// `DRMAA_JOB_IDS_SESSION_ALL`); `dispose` reaps them.
pub fn synchronize(ids: &[String], timeout: i64, dispose: bool) -> DrmaaResult<()> {
    let jobs: Vec<JobRef> = with(|s| {
        let mut all = Vec::new();
        for id in ids {
            all.extend(s.named(id)?);
        }
        Ok(all)
    })?;
    let mut left: BTreeSet<JobRef> = jobs.into_iter().collect();
    wait_for(timeout, |s| {
        let pending: Vec<JobRef> = left.iter().copied().collect();
        for job in pending {
            if s.ended(job)?.is_some() || !s.jobs.contains(&job) && s.ends.get(job).is_none() {
                left.remove(&job);
                if dispose {
                    s.reap(job);
                }
            }
        }
        Ok(left.is_empty().then_some(()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(exit_status: i32, failed: u32, start: i64) -> AccountingRecord {
        let mut r = AccountingRecord::parse_line(
            "all.q:h:g:u:n:7:sge:0:1:1:2:0:0:1:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:NONE:defaultdepartment:NONE:1:0:0:0:0:NONE:0:NONE:0:0:0",
        )
        .expect("record");
        r.exit_status = exit_status;
        r.failed = failed;
        r.start_time = start;
        r
    }

    #[test]
    fn wait_status_bits_are_grid_engines() {
        assert_eq!(wait_status(&record(3, 0, 5)), 0x1 | (3 << 4));
        assert_eq!(wait_status(&record(137, 0, 5)), 0x2 | (9 << 12));
        // Deleted while it ran: aborted, as Grid Engine's library says.
        assert_eq!(wait_status(&record(137, 100, 5)), 0x8);
        assert_eq!(wait_status(&record(0, 26, 5)), 0x8);
        assert_eq!(wait_status(&record(0, 0, 0)), 0x8);
    }
}
