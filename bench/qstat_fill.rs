//! Fills a new cell with N jobs, fast, for `bench/qstat.sh`.
//!
//! Usage: `qstat_fill [--no-index] CELL_DIR N`, or `qstat_fill --render N` to time only the
//! formatting of N such jobs held in memory (no spool), which separates `qstat`'s own cost
//! from the scan. The cell gets the listing index a `sched_d` leaves when it stops
//! (`spool::index`), so that `qstat` reads it as it would on a live cell; `--no-index`
//! leaves it out, to measure the scan of the job files that `qstat` falls back to.
//! Jobs are written through the spool's paths but without
//! the per-file fsync of `Spool::publish_job` (a benchmark cell need not survive a crash):
//! 100,000 durable publishes would take minutes and measure the disk, not `qstat`.
//! The mix resembles a busy cluster: every 50th job an array of 1-100, every 20th held,
//! every 10th with a `-hold_jid`, the first 2 running, and the scheduler's priorities on all
//! others (a state file per job, as `sched_d` leaves them).

use anyhow::Context;
use gridspool::model::{
    EnvVar, Holds, JobId, JobRecord, JobSpec, JobSubmission, PriorityInfo, RunningTask, Submitter,
    TaskIdRange,
};
use gridspool::spool::Spool;

#[path = "fixture.rs"]
mod fixture;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    let with_index = args.next_if(|a| a == "--no-index").is_none();
    let dir = args.next().context("usage: qstat_fill CELL_DIR N")?;
    let n: u32 = args
        .next()
        .context("usage: qstat_fill CELL_DIR N")?
        .parse()
        .context("N must be a number")?;
    if dir == "--render" {
        return render_only(n);
    }
    gridspool::cli::sched_d::init(std::path::Path::new(&dir))?;
    let spool = Spool::open(&dir)?;
    let mut entries = Vec::new();
    for job in jobs(n) {
        let state = fixture::write_job_unsynced(&spool, &job, "#!/bin/sh\nsleep 60\n")?;
        if with_index {
            let entry =
                gridspool::spool::listing_entry(&state, true).map_err(anyhow::Error::msg)?;
            entries.push((job.id, entry));
        }
    }
    if with_index {
        gridspool::spool::index::write_stopped(&spool, &entries)?;
    }
    Ok(())
}

/// Times `render` of `qstat -u '*'` and `-xml` over `n` jobs in memory.
fn render_only(n: u32) -> anyhow::Result<()> {
    use gridspool::compat::qstat::{self, HostLoad, QstatArgs, View};
    let jobs = jobs(n);
    let host = gridspool::identity::short_hostname();
    let config = gridspool::config::ClusterConfig::parse(
        &gridspool::config::ClusterConfig::default_text(&host, 2),
    )
    .map_err(anyhow::Error::msg)?;
    let load = HostLoad::local(&host);
    let view = View {
        storage_blocked: None,
        jobs: &jobs,
        ended: &[],
        config: &config,
        caller: "alice",
        now: gridspool::time::now(),
        load: &load,
        host_loads: &Default::default(),
        instance_states: &Default::default(),
        estimates: None,
    };
    for extra in [&[][..], &["-xml".to_string()][..]] {
        let mut words = vec!["-u".to_string(), "*".to_string()];
        words.extend_from_slice(extra);
        let args = QstatArgs::parse(&words)?;
        let start = std::time::Instant::now();
        let out = qstat::render(&args, &view);
        let took = start.elapsed();
        println!(
            "render qstat {}: {n} jobs, {} bytes in {:.1} ms",
            words.join(" "),
            out.stdout.len(),
            took.as_secs_f64() * 1000.0
        );
    }
    Ok(())
}

/// The benchmark's jobs, as `sched_d` would leave them in the spool.
fn jobs(n: u32) -> Vec<JobRecord> {
    let host = gridspool::identity::short_hostname();
    let users = ["alice", "bob", "carol", "dave"];
    let t0 = gridspool::time::now() - 86_400;
    let mut out = Vec::with_capacity(n as usize);
    for i in 1..=n {
        let owner = users[(i as usize) % users.len()];
        let mut spec = JobSpec {
            name: format!("job{i}.sh"),
            script_file: format!("job{i}.sh"),
            env: vec![EnvVar {
                name: "TERM".into(),
                value: None,
            }],
            priority: -((i % 7) as i32),
            ..JobSpec::default()
        };
        if i % 50 == 0 {
            spec.array = Some(TaskIdRange::new(1, 100, 1));
        }
        if i % 10 == 0 && i > 1 {
            spec.hold_jid = vec![(i - 1).to_string()];
            spec.predecessors = vec![JobId(i - 1)];
        }
        let sub = JobSubmission {
            v: 1,
            id: JobId(i),
            submitter: Submitter {
                owner: owner.into(),
                uid: 2000 + (i % 4),
                group: owner.into(),
                gid: 2000,
                submission_time: t0 + i64::from(i / 10),
                sge_o_home: format!("/home/{owner}"),
                sge_o_log_name: owner.into(),
                sge_o_path: "/usr/local/bin:/usr/bin:/bin".into(),
                sge_o_shell: "/bin/bash".into(),
                sge_o_workdir: format!("/home/{owner}"),
                sge_o_host: host.clone(),
                sge_o_mail: None,
                sge_o_tz: None,
            },
            spec,
            holds: Holds {
                user: i % 20 == 0,
                ..Holds::NONE
            },
        };
        let mut job = JobRecord::from_submission(sub);
        if i <= 2 {
            let task = job.tasks.pending[0].tasks.pop_first().unwrap_or(1);
            job.tasks.pending.clear();
            job.tasks
                .running
                .push(RunningTask::running(task, "all.q", &host, 1, t0 + 60));
        }
        job.priority = Some(PriorityInfo {
            prio: 0.5 + f64::from(i % 997) / 10_000.0,
            nurg: 0.5,
            npprior: 0.5,
            ntckts: 0.5,
            urg: 1000.0,
            rrcontr: 1000.0,
            ..PriorityInfo::default()
        });
        out.push(job);
    }
    out
}
