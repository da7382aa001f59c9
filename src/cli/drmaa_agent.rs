//! `qstat --drmaa-agent`: the state of the caller's jobs for `libdrmaa.so`, one process per
//! DRMAA session instead of one `qstat` per call.
//!
//! The library runs inside the user's program (Galaxy, snakemake), which may not read the
//! spool: only the clients may, setgid to its group (`docs/security.md`). So the session
//! starts this client once and asks it on its standard input, one request a line; it reads
//! the listing (the listing index, as `qstat` does), keeps it while the spool is unchanged,
//! and blocks on the spool's events for a waiting session. It answers about the jobs of its
//! real uid only: less than `qstat` shows the same user.
//!
//! Requests and answers (each answer ends with a line `.`; a line `! why` is a failure):
//!
//! - `jobs`: a line per running task and per pending group of each of the caller's jobs in
//!   the system: `JOB ARRAY TASKS STATE HOLDS` (`ARRAY` 1 or 0; `TASKS` `-` for a job that
//!   is no array, else `3` or `1-9:2,12`; `STATE` qstat's letters, `Eqw`, `hqw`, `r`, `s`…;
//!   `HOLDS` `-` or the letters of what holds a pending group: `u`, `o`, `s` (`qhold -h`),
//!   `d` (a start time ahead, `-a`), `j` and `a` (predecessors, `-hold_jid`, `-hold_jid_ad`)).
//! - `job ID`: the lines of one job, read from its own file alone (what a session asks most:
//!   it costs the same with ten jobs in the cell or a hundred thousand).
//! - `wait MS`: returns `changed` as soon as the spool differs from what the last `jobs` or
//!   `job` answer was read from, else `timeout` after `MS` milliseconds.
//! - `start ID`: when `sched_d`'s forecast (`daemon/estimates`, issue 28) expects the pending
//!   tasks of the caller's job ID to start, a line per outcome: `TASKS at TIME QUEUE HOSTS
//!   SLOTS` (`TIME` seconds since the epoch, `HOSTS` comma-separated, the master's first),
//!   `TASKS unknown WHY` or `TASKS never WHY` (`TASKS` as above). No lines for a job that is
//!   not the caller's or has no pending task. For `drmaa_gridspool_estimated_start`.

use crate::compat::qstat::rows::{DerivedHolds, pending_state, running_code};
use crate::model::{JobId, JobRecord};
use crate::spool::Spool;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// What identifies a version of the spool's job states: a state written, a job submitted or
/// retired, a request filed, an end recorded (each renames a file into `jobs/` or
/// `requests/`, or appends to the listing log). On NFS, where no event comes from other
/// hosts, a change of it is what a wait sees.
fn stamp(spool: &Spool) -> Vec<i64> {
    let mut out = Vec::with_capacity(12);
    let dirs = [spool.jobs_dir(), spool.requests_dir()];
    let daemon = spool.daemon_dir();
    let files = [
        daemon.join(crate::spool::index::BASE_NAME),
        daemon.join(crate::spool::index::LOG_NAME),
    ];
    for p in dirs.iter().chain(files.iter()) {
        match std::fs::metadata(p) {
            Ok(m) => out.extend([m.ino() as i64, m.mtime(), m.mtime_nsec(), m.size() as i64]),
            Err(_) => out.extend([0, 0, 0, 0]),
        }
    }
    out
}

/// How long an answer is given again while the stamp is unchanged: a file system whose
/// times are coarser than nanoseconds (NFS, a second) can change twice under one stamp.
const CACHE_LIFE: Duration = Duration::from_secs(1);

/// The caller's jobs as last read, by job id, each as its answer lines.
struct Listing {
    stamp: Vec<i64>,
    read: Instant,
    jobs: BTreeMap<u32, String>,
    /// Some job waits for a start time (`-a`): its hold ends with the clock, not with a
    /// change of the spool, so the listing is read again at each request.
    clock_bound: bool,
}

fn lines_of(job: &JobRecord, alive: &dyn Fn(JobId) -> bool, now: i64) -> (String, bool) {
    use std::fmt::Write as _;
    let mut out = String::new();
    let array = job.is_array();
    let tasks = |t: &dyn std::fmt::Display| {
        if array {
            t.to_string()
        } else {
            "-".to_string()
        }
    };
    for t in &job.tasks.running {
        let _ = writeln!(
            out,
            "{} {} {} {} -",
            job.id,
            u8::from(array),
            tasks(&t.task),
            running_code(t).as_str()
        );
    }
    let derived = DerivedHolds {
        start_time: job.spec.start_time.is_some_and(|t| t > now),
        dependency: job.spec.predecessors.iter().any(|p| alive(*p)),
        array_dependency: job.spec.array_predecessors.iter().any(|p| alive(*p)),
    };
    for g in job.tasks.pending.iter().filter(|g| !g.tasks.is_empty()) {
        let state = pending_state(job, g.holds, derived);
        let mut holds = g.holds.letters();
        for (on, letter) in [
            (derived.start_time, 'd'),
            (derived.dependency, 'j'),
            (derived.array_dependency, 'a'),
        ] {
            if on {
                holds.push(letter);
            }
        }
        if holds.is_empty() {
            holds.push('-');
        }
        let _ = writeln!(
            out,
            "{} {} {} {} {holds}",
            job.id,
            u8::from(array),
            tasks(&g.tasks),
            state.code()
        );
    }
    (out, derived.start_time)
}

fn read_listing(spool: &Spool, uid: u32) -> Result<Listing, String> {
    // The stamp first: a change during the scan makes the next request read again.
    let stamp = stamp(spool);
    let scan = spool.scan_job_listing().map_err(|e| e.to_string())?;
    let alive = |id: JobId| scan.get(id).is_some();
    let now = crate::time::now();
    let mut jobs = BTreeMap::new();
    let mut clock_bound = false;
    for job in scan.jobs.iter().filter(|j| j.submitter.uid == uid) {
        let (text, timed) = lines_of(job, &alive, now);
        clock_bound |= timed;
        jobs.insert(job.id.0, text);
    }
    Ok(Listing {
        stamp,
        read: Instant::now(),
        jobs,
        clock_bound,
    })
}

/// The lines of one job of the caller, read alone (its file and the pending requests: no
/// listing of the others), and whether it waits for a start time.
fn read_one(spool: &Spool, uid: u32, id: JobId) -> Result<(String, bool), String> {
    let job = match spool.read_job_in_system(id).map_err(|e| e.to_string())? {
        Some(j) if j.submitter.uid == uid => j,
        _ => return Ok((String::new(), false)),
    };
    let alive = |p: JobId| matches!(spool.read_job_in_system(p), Ok(Some(_)));
    Ok(lines_of(&job, &alive, crate::time::now()))
}

/// The `start ID` answer: the estimates of the caller's job's pending tasks.
fn estimates_of(spool: &Spool, uid: u32, id: JobId) -> Result<String, String> {
    use crate::compat::qstat::start::{StartView, of_tasks};
    use crate::model::StartEstimate;
    use std::fmt::Write as _;
    let job = match spool.read_job_in_system(id).map_err(|e| e.to_string())? {
        Some(j) if j.submitter.uid == uid => j,
        _ => return Ok(String::new()),
    };
    let tasks = job.tasks.pending_tasks();
    if tasks.is_empty() {
        return Ok(String::new());
    }
    let forecast = spool.read_estimates_of(&[id]).map_err(|e| e.to_string())?;
    let view = StartView {
        forecast: forecast.as_ref(),
    };
    let mut out = String::new();
    for (set, e) in of_tasks(view, id, &tasks) {
        let set = if job.is_array() {
            set.to_string()
        } else {
            "-".to_string()
        };
        // One line each: a reason with a line break would end the answer early.
        let one_line = |why: &str| why.replace(['\n', '\r'], " ");
        let _ = match e {
            StartEstimate::At {
                time,
                queue,
                hosts,
                slots,
            } => writeln!(out, "{set} at {time} {queue} {} {slots}", hosts.join(",")),
            StartEstimate::Unknown { why } => writeln!(out, "{set} unknown {}", one_line(&why)),
            StartEstimate::Never { why } => writeln!(out, "{set} never {}", one_line(&why)),
        };
    }
    Ok(out)
}

/// Waits until the spool's stamp differs from `since` or `timeout` has passed: woken by the
/// spool's events where the file system gives them, and looking at the stamp at least every
/// 100 ms for those it does not (NFS).
fn wait_change(
    spool: &Spool,
    events: &std::sync::mpsc::Receiver<()>,
    since: &[i64],
    timeout: Duration,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if stamp(spool) != since {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        match events.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(()) => while events.try_recv().is_ok() {},
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(left.min(Duration::from_millis(100)));
            }
        }
    }
}

/// Serves the session on standard input and output until standard input ends.
pub fn serve(spool_dir: Option<std::path::PathBuf>) -> super::Output {
    let env = match super::load_env(spool_dir) {
        Ok(env) => env,
        Err(o) => return o,
    };
    let spool = env.spool;
    let uid = env.caller.uid;
    let (tx, events) = std::sync::mpsc::channel();
    // Kept for the life of the loop: dropping it ends the watch.
    let _watcher = {
        use notify::Watcher;
        let watcher = notify::recommended_watcher(move |_: notify::Result<notify::Event>| {
            let _ = tx.send(());
        });
        watcher.ok().map(|mut w| {
            for dir in [spool.jobs_dir(), spool.requests_dir(), spool.daemon_dir()] {
                let _ = w.watch(&dir, notify::RecursiveMode::NonRecursive);
            }
            w
        })
    };
    let mut listing: Option<Listing> = None;
    // `job` answers read since the spool last changed, the stamp they stand for and when
    // they were read.
    let mut single: (Vec<i64>, Instant, BTreeMap<u32, String>) =
        (Vec::new(), Instant::now(), BTreeMap::new());
    // What the last answer was read from: a wait is for a change since.
    let mut last_stamp: Vec<i64> = Vec::new();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let mut answer = match words.as_slice() {
            ["jobs"] => {
                let now = stamp(&spool);
                let fresh = listing.as_ref().is_some_and(|l| {
                    !l.clock_bound && l.stamp == now && l.read.elapsed() < CACHE_LIFE
                });
                let read = if fresh {
                    Ok(())
                } else {
                    read_listing(&spool, uid).map(|l| listing = Some(l))
                };
                match (read, &listing) {
                    (Ok(()), Some(l)) => {
                        last_stamp = l.stamp.clone();
                        l.jobs.values().map(String::as_str).collect()
                    }
                    (Err(why), _) => format!("! {why}\n"),
                    (Ok(()), None) => String::new(),
                }
            }
            ["job", id] => match id.parse::<u32>() {
                Ok(id) => {
                    let now = stamp(&spool);
                    if single.0 != now || single.1.elapsed() >= CACHE_LIFE {
                        single = (now.clone(), Instant::now(), BTreeMap::new());
                    }
                    last_stamp = now;
                    match single.2.get(&id) {
                        Some(text) => text.clone(),
                        None => match read_one(&spool, uid, JobId(id)) {
                            Ok((text, timed)) => {
                                if !timed {
                                    single.2.insert(id, text.clone());
                                }
                                text
                            }
                            Err(why) => format!("! {why}\n"),
                        },
                    }
                }
                Err(_) => format!("! invalid job id {id}\n"),
            },
            ["start", id] => match id.parse::<u32>() {
                Ok(id) => {
                    estimates_of(&spool, uid, JobId(id)).unwrap_or_else(|why| format!("! {why}\n"))
                }
                Err(_) => format!("! invalid job id {id}\n"),
            },
            ["wait", ms] => match ms.parse::<u64>() {
                Ok(ms) => {
                    let changed =
                        wait_change(&spool, &events, &last_stamp, Duration::from_millis(ms));
                    if changed { "changed\n" } else { "timeout\n" }.to_string()
                }
                Err(_) => format!("! invalid time {ms}\n"),
            },
            _ => format!("! unknown request \"{line}\"\n"),
        };
        answer.push_str(".\n");
        if out
            .write_all(answer.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
    super::Output::default()
}
