//! The DRMAA session: one per process, between `drmaa_init` and `drmaa_exit`. It knows the
//! jobs it submitted (those `DRMAA_JOB_IDS_SESSION_ALL`/`_ANY` mean, and the ones
//! `drmaa_wait` may reap) and follows their ends. A session outlives its process as Grid
//! Engine's does (its qmaster keeps each job's session): `drmaa_init` with the contact of an
//! earlier session takes up its jobs not yet reaped, kept in the user's
//! `~/.gridspool/drmaa/<session>`.

use crate::drm::{ActiveLine, Cell, Ends, JobRef, States, ps};
use crate::error::{DrmaaError, DrmaaResult, Errno};
use crate::template::JobTemplate;
use gridspool::acct::AccountingRecord;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub const SESSION_ANY: &str = "DRMAA_JOB_IDS_SESSION_ANY";
pub const SESSION_ALL: &str = "DRMAA_JOB_IDS_SESSION_ALL";

/// The longest a waiting call holds the session while it waits for the cell to change: other
/// threads of the program (Galaxy's) use the session meanwhile.
const WAIT_SLICE: Duration = Duration::from_millis(100);

pub struct Session {
    cell: Cell,
    contact: String,
    /// Submitted in this session and not reaped yet.
    jobs: BTreeSet<JobRef>,
    ends: Ends,
    states: States,
    /// Where the session's jobs are kept for a later `drmaa_init` with its contact (`None`
    /// where the home directory cannot keep it: the session then ends with its process).
    journal: Option<Journal>,
}

/// `~/.gridspool/drmaa/<session>`: the offset of the accounting file when the session began,
/// then a line per job submitted and per job reaped.
struct Journal {
    path: PathBuf,
}

impl Journal {
    fn path(cell: &Cell, key: &str) -> PathBuf {
        Path::new(&cell.home)
            .join(".gridspool")
            .join("drmaa")
            .join(key)
    }

    /// A new journal (an earlier one of that name is replaced).
    fn create(path: PathBuf, offset: u64) -> Option<Journal> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = path.parent()?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .ok()?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .ok()?;
        f.write_all(format!("accounting {offset}\n").as_bytes())
            .ok()?;
        Some(Journal { path })
    }

    /// The offset and the jobs not reaped of an earlier session's journal.
    fn load(path: &Path) -> Option<(u64, BTreeSet<JobRef>)> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut offset = None;
        let mut jobs = BTreeSet::new();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("accounting", n)) => offset = n.parse().ok(),
                Some(("job", id)) => {
                    if let Ok(j) = JobRef::parse(id) {
                        jobs.insert(j);
                    }
                }
                Some(("reaped", id)) => {
                    if let Ok(j) = JobRef::parse(id) {
                        jobs.remove(&j);
                    }
                }
                _ => {}
            }
        }
        Some((offset?, jobs))
    }

    /// Best effort: a line that cannot be written costs a later session the job it names,
    /// never this session anything.
    fn note(&self, lines: &str) {
        let _ = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(lines.as_bytes()));
    }
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

/// The session name of a contact (`session=NAME`): a file name of letters, digits, `.`, `_`
/// and `-`, not starting with a dot.
fn session_key(contact: &str) -> Option<&str> {
    let key = contact.strip_prefix("session=")?;
    let fine = !key.is_empty()
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    fine.then_some(key)
}

/// `drmaa_init`: `contact` empty (a new session), or the one `drmaa_get_contact` gave, in
/// this process or an earlier one: that session's jobs not yet reaped are this one's again,
/// and their ends since it began are found.
pub fn init(contact: Option<&str>) -> DrmaaResult<()> {
    let mut guard = session();
    if guard.is_some() {
        return Err(DrmaaError::new(
            Errno::AlreadyActiveSession,
            "a DRMAA session is already active",
        ));
    }
    let cell = Cell::locate()?;
    let given = contact.filter(|c| !c.is_empty());
    let key = match given {
        Some(c) => session_key(c)
            .ok_or_else(|| {
                DrmaaError::new(
                    Errno::InvalidContactString,
                    format!("invalid contact string \"{c}\""),
                )
            })?
            .to_string(),
        None => new_session_key(),
    };
    let path = Journal::path(&cell, &key);
    let earlier = given.and_then(|_| Journal::load(&path));
    let (ends, jobs, journal) = match earlier {
        Some((offset, jobs)) => (
            Ends::from_offset(&cell, offset),
            jobs,
            Some(Journal { path }),
        ),
        None => {
            let ends = Ends::from_now(&cell);
            let journal = Journal::create(path, ends.offset());
            (ends, BTreeSet::new(), journal)
        }
    };
    *guard = Some(Session {
        cell,
        contact: format!("session={key}"),
        jobs,
        ends,
        states: States::new(),
        journal,
    });
    Ok(())
}

/// Host, process and time: no other session has it.
fn new_session_key() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}.{}.{}{:03}",
        gridspool::identity::short_hostname(),
        std::process::id(),
        now.as_secs(),
        now.subsec_millis()
    )
}

/// `drmaa_exit`. The session's journal stays while it has jobs not reaped, for a later
/// `drmaa_init` with its contact.
pub fn exit() -> DrmaaResult<()> {
    let s = session().take().ok_or_else(no_session)?;
    if s.jobs.is_empty()
        && let Some(j) = &s.journal
    {
        let _ = std::fs::remove_file(&j.path);
    }
    Ok(())
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
        let ids = self.cell.submit(args, &t.qsub_environment())?;
        self.jobs.extend(ids.iter().copied());
        if let Some(j) = &self.journal {
            j.note(
                &ids.iter()
                    .map(|id| format!("job {id}\n"))
                    .collect::<String>(),
            );
        }
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

    /// Whether the session knows `job` as a bulk job (`Some(true)`), a single one
    /// (`Some(false)`), or not at all.
    fn session_array(&self, job: u32) -> Option<bool> {
        self.jobs
            .range(
                JobRef { job, task: None }..=JobRef {
                    job,
                    task: Some(u32::MAX),
                },
            )
            .next()
            .map(|j| j.task.is_some())
    }

    /// `drmaa_job_ps`: from one look at the cell. A job not in it has ended (its end is
    /// recorded before it leaves): DONE, or FAILED if it never ran, as Grid Engine's library
    /// says of a job of the session not yet reaped; a job the session never knew, with no
    /// recorded end, does not exist. A bulk job's bare id names none of its tasks, and a
    /// task id none of a single job.
    pub fn status(&mut self, id: &str) -> DrmaaResult<i32> {
        let (job, lines) = self.look_up(id)?;
        if let Some(l) = lines.iter().find(|l| l.covers(job)) {
            return Ok(l.ps());
        }
        match self.end_of(job) {
            Some(end) if end.stat & ABORTED != 0 => Ok(ps::FAILED),
            Some(_) => Ok(ps::DONE),
            None => Err(no_such_job(job)),
        }
    }

    /// Job `id` and the cell's lines of its job, from one look; a bare id of a bulk job, or
    /// a task id of a single job, names no job.
    fn look_up(&mut self, id: &str) -> DrmaaResult<(JobRef, Vec<crate::drm::ActiveLine>)> {
        let job = JobRef::parse(id)?;
        let lines = self.states.lines(&self.cell, Some(job.job))?;
        let array = lines
            .first()
            .map(|l| l.array)
            .or_else(|| self.session_array(job.job));
        if array.is_some_and(|a| a != job.task.is_some()) {
            return Err(no_such_job(job));
        }
        Ok((job, lines))
    }

    /// `drmaa_gridspool_estimated_start`: what the cell's forecast says of the pending job
    /// or bulk-job task `id`. Its ids are those of `drmaa_job_ps` (a bulk job's bare id names
    /// none of its tasks); one that is in the cell but not pending (it started) or not in it
    /// (it ended, or never was) has no estimate: `DRMAA_ERRNO_INVALID_JOB`, saying which.
    pub fn estimated_start(&mut self, id: &str) -> DrmaaResult<crate::drm::StartEstimate> {
        let (job, lines) = self.look_up(id)?;
        let invalid =
            |what: &str| DrmaaError::new(Errno::InvalidJob, format!("job \"{job}\" {what}"));
        let started = || invalid("is not pending: it has started, so it has no estimated start");
        match lines.iter().find(|l| l.covers(job)) {
            Some(l) if !l.state.contains('q') => return Err(started()),
            Some(_) => {}
            None if self.end_of(job).is_some() => {
                return Err(invalid("is not pending: it has ended"));
            }
            None => return Err(no_such_job(job)),
        }
        self.states
            .estimates(&self.cell, job.job)?
            .into_iter()
            .find(|l| l.covers(job.task))
            .map(|l| l.estimate)
            // It left the pending tasks between the two looks.
            .ok_or_else(started)
    }

    /// The end of `job`, which the last look did not find in the cell: its record, or, for a
    /// job of the session with none, an end without usage (deleted while it waited).
    fn end_of(&mut self, job: JobRef) -> Option<Ended> {
        self.ends.catch_up();
        if let Some(r) = self.ends.get(job) {
            return Some(Ended {
                job,
                stat: wait_status(r),
                rusage: Some(rusage(r)),
            });
        }
        self.jobs.contains(&job).then_some(Ended {
            job,
            stat: ABORTED,
            rusage: None,
        })
    }

    /// The first of `candidates` that has ended, from one look at the cell. A job in the
    /// cell has not, whatever its records say: one that could not start sits in `Eqw` with
    /// the record of that attempt, and may yet run.
    fn first_ended(&mut self, candidates: &[JobRef]) -> DrmaaResult<Option<Ended>> {
        let numbers: BTreeSet<u32> = candidates.iter().map(|j| j.job).collect();
        let lines = by_job(self.states.lines_of(&self.cell, &numbers)?);
        for job in candidates {
            if in_cell(&lines, *job) {
                continue;
            }
            if let Some(end) = self.end_of(*job) {
                return Ok(Some(end));
            }
        }
        Ok(None)
    }

    fn reap(&mut self, job: JobRef) {
        if self.jobs.remove(&job)
            && let Some(j) = &self.journal
        {
            j.note(&format!("reaped {job}\n"));
        }
        self.ends.forget(job);
    }
}

/// A look's lines by job number: a session of thousands of jobs finds each in its own.
fn by_job(lines: Vec<ActiveLine>) -> BTreeMap<u32, Vec<ActiveLine>> {
    let mut out: BTreeMap<u32, Vec<ActiveLine>> = BTreeMap::new();
    for l in lines {
        out.entry(l.job).or_default().push(l);
    }
    out
}

fn in_cell(lines: &BTreeMap<u32, Vec<ActiveLine>>, job: JobRef) -> bool {
    lines
        .get(&job.job)
        .is_some_and(|ls| ls.iter().any(|l| l.covers(job)))
}

/// Waits, without holding the session longer than [`WAIT_SLICE`], until `look` gives a
/// value or `timeout` (seconds; negative: forever) runs out. Between looks it waits for the
/// cell to change (the spool's events, through the session's agent).
fn wait_for<T>(
    timeout: i64,
    mut look: impl FnMut(&mut Session) -> DrmaaResult<Option<T>>,
) -> DrmaaResult<T> {
    let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_secs(timeout as u64));
    loop {
        if let Some(v) = with(&mut look)? {
            return Ok(v);
        }
        let slice = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(DrmaaError::new(
                        Errno::ExitTimeout,
                        "the time-out ran out before the job(s) ended",
                    ));
                }
                left.min(WAIT_SLICE)
            }
            None => WAIT_SLICE,
        };
        with(|s| {
            s.states.wait_change(&s.cell, slice);
            Ok(())
        })?;
    }
}

/// `drmaa_wait`: the end of `id` (or of any job of the session), reaped.
pub fn wait(id: &str, timeout: i64) -> DrmaaResult<Ended> {
    let any = id == SESSION_ANY;
    let wanted = if any { None } else { Some(JobRef::parse(id)?) };
    if let Some(job) = wanted {
        // A job of another session (or none) cannot be waited for.
        with(|s| {
            s.ends.catch_up();
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
        let end = s.first_ended(&candidates)?;
        if let Some(end) = &end {
            s.reap(end.job);
        }
        Ok(end)
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
        let numbers: BTreeSet<u32> = left.iter().map(|j| j.job).collect();
        let lines = by_job(s.states.lines_of(&s.cell, &numbers)?);
        let pending: Vec<JobRef> = left.iter().copied().collect();
        for job in pending {
            if in_cell(&lines, job) {
                continue;
            }
            // Ended, or a job neither of the session nor with a recorded end: nothing to
            // wait for.
            s.end_of(job);
            left.remove(&job);
            if dispose {
                s.reap(job);
            }
        }
        Ok(left.is_empty().then_some(()))
    })
}

/// `DRMAA_ERRNO_INVALID_JOB` for a job the cell does not hold.
fn no_such_job(job: JobRef) -> DrmaaError {
    DrmaaError::new(Errno::InvalidJob, format!("job \"{job}\" does not exist"))
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
