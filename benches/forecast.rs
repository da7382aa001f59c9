//! Start-time forecast benchmark (issue 28): a cell of 1,000 hosts of 8 slots, every slot
//! taken by a running job, and 100,000 pending jobs of 1,000 users (one in ten a parallel job
//! of 2–8 slots, run time limits from 10 minutes to 30 hours), and an accounting file of
//! the runs before (a week of this cell: 500,000 records, each a share of its limit); the
//! full refresh that `sched_d --forecast` makes of it with the default configuration
//! (learned run times): reading the cell from the spool (the accounting file for the usage
//! and the run times), then playing it forward until every pending job has started. Prints
//! figures; asserts nothing about time.
//!
//! `cargo bench --bench forecast` (release profile); `FORECAST_JOBS`, `FORECAST_HOSTS`,
//! `FORECAST_RECORDS` and `FORECAST_POLICY` (`sge`, `fifo`…) change the load. The cell is
//! written under `$TMPDIR` without the per-file syncs of a real submission (it need not
//! survive a crash).

use gridspool::model::{
    Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, RunningTask,
    SlotRange, StartEstimate, Submitter,
};
use gridspool::sched::forecast::{self, ExpectedRunTimes, ForecastOptions};
use gridspool::spool::Spool;
use std::time::Instant;

#[path = "../bench/fixture.rs"]
mod fixture;

/// Every job's script.
const SCRIPT: &str = "#!/bin/sh\ntrue\n";

const LIMITS: [i64; 6] = [600, 1800, 3600, 4 * 3600, 12 * 3600, 30 * 3600];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config_text(hosts: usize, policy: &str) -> String {
    let mut t = String::from("hosts:\n");
    for i in 1..=hosts {
        t.push_str(&format!("  - {{name: n{i}, slots: 8}}\n"));
    }
    t.push_str("hostgroups:\n  \"@all\": [");
    t.push_str(
        &(1..=hosts)
            .map(|i| format!("n{i}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    t.push_str("]\nqueues:\n  - {name: all.q, hostlist: [\"@all\"], slots: 8, pe_list: [smp]}\n");
    t.push_str(
        "parallel_environments:\n  - {name: smp, slots: 999999, allocation_rule: $pe_slots}\n",
    );
    t.push_str(&format!("scheduler: {{policy: {policy}}}\n"));
    t
}

/// Job `id`: of user `u<id % 1000>` (all with this process's uid: the forecast reads only
/// files whose owner is the uid inside), its limit and slots from its number.
fn job(id: u32, uid: u32, gid: u32, now: i64) -> JobRecord {
    let user = format!("u{}", id % 1000);
    let limit = LIMITS[(id as usize / 7) % LIMITS.len()];
    let mut spec = JobSpec {
        name: format!("job{}", id % 97),
        hard_resources: vec![ResourceRequest {
            name: "h_rt".into(),
            value: limit.to_string(),
        }],
        ..JobSpec::default()
    };
    if id % 10 == 3 {
        let n = 2 + id % 7;
        spec.pe = Some(PeRequest {
            name: "smp".into(),
            range: SlotRange { min: n, max: n },
        });
    }
    JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: user.clone(),
            uid,
            group: "users".into(),
            gid,
            submission_time: now - 86_400 + i64::from(id % 80_000),
            sge_o_home: format!("/home/{user}"),
            sge_o_log_name: user,
            sge_o_path: "/bin".into(),
            sge_o_shell: "/bin/sh".into(),
            sge_o_workdir: "/tmp".into(),
            sge_o_host: "n1".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec,
        holds: Holds::NONE,
    })
}

/// `records` accounting lines of this cell's users and job kinds, ended over the week before
/// `now`: each ran a share of its limit (10–100%, by its number).
fn write_accounting(spool: &Spool, records: usize, now: i64) -> anyhow::Result<()> {
    std::fs::write(spool.accounting_path(), gridspool::acct::HEADER)?;
    append_accounting(spool, 0, records, now)
}

/// Records `from..from + n` of [`write_accounting`]'s, appended.
fn append_accounting(spool: &Spool, from: usize, n: usize, now: i64) -> anyhow::Result<()> {
    use std::io::Write;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(spool.accounting_path())?;
    let mut out = std::io::BufWriter::new(file);
    let records = from + n;
    for i in from..records {
        let id = i as u32;
        let limit = LIMITS[(i / 7) % LIMITS.len()];
        let ran = limit * (10 + (i as i64 * 37) % 91) / 100;
        let end = now - 7 * 86_400 + (i as i64 * 604_800) / records.max(1) as i64;
        let record = gridspool::acct::AccountingRecord {
            qname: "all.q".into(),
            hostname: format!("n{}", i % 1000 + 1),
            group: "users".into(),
            owner: format!("u{}", id % 1000),
            job_name: format!("job{}", id % 97),
            job_number: id + 1,
            submission_time: end - ran - 60,
            start_time: end - ran,
            end_time: end,
            slots: 1,
            category: format!("-l h_rt={limit}"),
            pe_taskid: "NONE".into(),
            ..gridspool::acct::AccountingRecord::default()
        };
        out.write_all(record.to_line().as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let pending = env_usize("FORECAST_JOBS", 100_000) as u32;
    let hosts = env_usize("FORECAST_HOSTS", 1000);
    let records = env_usize("FORECAST_RECORDS", 500_000);
    let policy = std::env::var("FORECAST_POLICY").unwrap_or_else(|_| "sge".into());
    let dir = tempfile::Builder::new()
        .prefix("gridspool-forecast")
        .tempdir()?;
    let cell = dir.path().join("default");
    gridspool::cli::sched_d::init(&cell)?;
    std::fs::write(cell.join("config.yaml"), config_text(hosts, &policy))?;
    let spool = Spool::open(&cell)?;
    let (uid, gid) = (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    );
    let now = gridspool::time::now();
    let written = Instant::now();
    // Every slot taken: one running single-slot job per slot, started within its limit.
    let running = (hosts * 8) as u32;
    for id in 1..=running {
        let mut j = job(id, uid, gid, now);
        j.spec.pe = None;
        let limit = LIMITS[(id as usize / 7) % LIMITS.len()];
        let host = format!("n{}", (id - 1) / 8 + 1);
        j.tasks.pending.clear();
        j.tasks.running.push(RunningTask::running(
            1,
            "all.q",
            &host,
            1,
            now - i64::from(id) * 7919 % limit,
        ));
        fixture::write_job_unsynced(&spool, &j, SCRIPT)?;
    }
    for id in running + 1..=running + pending {
        fixture::write_job_unsynced(&spool, &job(id, uid, gid, now), SCRIPT)?;
    }
    write_accounting(&spool, records, now)?;
    println!(
        "cell: {hosts} hosts of 8 slots, {running} running, {pending} pending, {records} accounting records ({:.0} MB), policy {policy} (written in {:.1} s)",
        std::fs::metadata(spool.accounting_path())?.len() as f64 / 1e6,
        written.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    let mut loaded = forecast::cell::load_keeping_history(&spool)?;
    let load_s = t0.elapsed().as_secs_f64();
    let opts = ForecastOptions {
        horizon: loaded.state.config.scheduler.start_estimates.horizon_secs(),
        ..ForecastOptions::default()
    };
    let learned = std::mem::take(&mut loaded.learned);
    let t1 = Instant::now();
    let (made, stats) = forecast::forecast(
        &mut loaded.state,
        now,
        &learned as &dyn ExpectedRunTimes,
        &opts,
    );
    let play_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    spool.write_estimates(&made)?;
    let write_s = t2.elapsed().as_secs_f64();
    let (mut at, mut unknown, mut never) = (0usize, 0usize, 0usize);
    let mut latest = now;
    for j in &made.jobs {
        for t in &j.tasks {
            match &t.start {
                StartEstimate::At { time, .. } => {
                    at += 1;
                    latest = latest.max(*time);
                }
                StartEstimate::Unknown { .. } => unknown += 1,
                StartEstimate::Never { .. } => never += 1,
            }
        }
    }
    println!(
        "full refresh: {:.2} s (load {load_s:.2} s, play {play_s:.2} s: {} passes, {} starts, to {:.1} days ahead; write {write_s:.2} s); peak resident {:.0} MB",
        load_s + play_s + write_s,
        stats.passes,
        stats.starts,
        (latest - now) as f64 / 86_400.0,
        peak_rss_mb()
    );
    println!("estimates: {at} with a time, {unknown} unknown, {never} never");
    // The next refresh: 1,000 jobs ended since; the accounting file is read from where the
    // kept history ends.
    drop(loaded);
    append_accounting(&spool, records, 1000, now)?;
    let t3 = Instant::now();
    let again = forecast::cell::load_keeping_history(&spool)?;
    println!(
        "next refresh's load, 1,000 records later: {:.2} s ({} jobs)",
        t3.elapsed().as_secs_f64(),
        again.state.job_count()
    );
    Ok(())
}
