//! Cells for the benchmarks, written fast: shared by `bench/qstat_fill.rs` and
//! `benches/forecast.rs` (each includes this file as a module).

use gridspool::model::{Holds, JobRecord, JobSubmission};
use gridspool::spool::Spool;

/// Writes `job` into `spool` as a submission (its job file, with `script`) and its state
/// file, through the spool's paths but without the per-file syncs of
/// `Spool::publish_job`: a benchmark cell need not survive a crash, and 100,000 durable
/// publishes would take minutes and measure the disk. Returns the state file's bytes.
pub fn write_job_unsynced(spool: &Spool, job: &JobRecord, script: &str) -> anyhow::Result<Vec<u8>> {
    let sub = JobSubmission {
        v: 1,
        id: job.id,
        submitter: job.submitter.clone(),
        spec: job.spec.clone(),
        holds: Holds::NONE,
    };
    let mut bytes = serde_json::to_vec(&sub)?;
    bytes.push(b'\n');
    bytes.extend_from_slice(script.as_bytes());
    std::fs::write(spool.job_file(job.id), &bytes)?;
    let state = gridspool::spool::encode_state(job)?;
    std::fs::write(spool.state_file(job.id), &state)?;
    Ok(state)
}
