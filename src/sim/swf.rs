//! The Standard Workload Format of the Parallel Workloads Archive (Feitelson et al.): one job
//! per line, 18 whitespace-separated fields, `-1` for unknown; lines starting with `;` are the
//! header's comments. Also a cell's accounting file, read as a trace.

use super::workload::{TraceJob, WorkloadError};

/// The jobs of a trace, in the order of their submission; jobs that never ran (run time
/// unknown or negative) are left out, as workload studies do.
pub fn parse(text: &str) -> Result<Vec<TraceJob>, WorkloadError> {
    let mut jobs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let bad = |reason: String| WorkloadError {
            line: i + 1,
            reason,
        };
        let f: Vec<i64> = line
            .split_whitespace()
            .map(|w| {
                w.parse::<f64>()
                    .map(|v| v as i64)
                    .map_err(|_| bad(format!("not a number: {w:?}")))
            })
            .collect::<Result<_, _>>()?;
        if f.len() < 18 {
            return Err(bad(format!("{} fields, SWF has 18", f.len())));
        }
        if f[3] < 0 {
            continue;
        }
        let processors = if f[7] > 0 { f[7] } else { f[4] };
        jobs.push(TraceJob {
            number: f[0].max(0) as u64,
            submit: f[1],
            wait: f[2],
            run_time: f[3],
            processors: processors.max(1) as u32,
            requested_time: (f[8] > 0).then_some(f[8]),
            user: format!("u{}", f[11].max(0)),
            group: format!("g{}", f[12].max(0)),
            queue: format!("q{}", f[14].max(0)),
            cpu: (f[5] >= 0).then(|| f[5] as f64 * processors.max(1) as f64),
            name: (f[13] >= 0).then(|| format!("app{}", f[13])),
            ..TraceJob::default()
        });
    }
    jobs.sort_by_key(|j| (j.submit, j.number));
    Ok(jobs)
}

/// The jobs of an accounting file (`accounting(5)`: what ran in a cell), as a workload: each
/// master task's number, submission (from the first one's), run time, slots, owner, group,
/// queue, project, priority and usage (the tasks of an array job are jobs of one number).
/// PE slave task records (`qrsh -inherit`) are part of their job, not jobs of their own.
pub fn from_accounting(path: &std::path::Path) -> Result<Vec<TraceJob>, WorkloadError> {
    let reader = crate::acct::Reader::open(path).map_err(|e| WorkloadError {
        line: 0,
        reason: e.to_string(),
    })?;
    let mut records = Vec::new();
    for entry in reader {
        if let Ok(crate::acct::Entry::Record(r)) = entry
            && r.is_master_task()
            && r.start_time > 0
        {
            records.push(r);
        }
    }
    let first = records.iter().map(|r| r.submission_time).min().unwrap_or(0);
    let mut jobs: Vec<TraceJob> = records
        .into_iter()
        .map(|r| TraceJob {
            number: u64::from(r.job_number),
            submit: r.submission_time - first,
            wait: r.start_time - r.submission_time,
            run_time: (r.end_time - r.start_time).max(0),
            processors: r.slots.max(1),
            user: r.owner.clone(),
            group: r.group.clone(),
            queue: r.qname.clone(),
            cpu: Some(r.cpu),
            mem: r.mem,
            io: r.io,
            project: Some(r.project.clone()).filter(|p| !p.is_empty() && p != "NONE"),
            priority: r.priority,
            // The run time it asked for, from its category (`-l h_rt=…`).
            requested_time: crate::sched::forecast::run_times::limit_in_category(&r.category),
            name: Some(r.job_name.clone()),
            ..TraceJob::default()
        })
        .collect();
    jobs.sort_by_key(|j| (j.submit, j.number));
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_read_as_the_archive_defines_them() {
        let text = "; Version: 2.2\n; MaxProcs: 4\n\
            1 0 5 100 1 -1 -1 1 200 -1 1 3 1 -1 1 -1 -1 -1\n\
            2 10 -1 -1 2 -1 -1 2 -1 -1 0 4 1 -1 2 -1 -1 -1\n\
            3 5 0 50 4 -1 -1 -1 -1 -1 1 3 2 -1 1 -1 -1 -1\n";
        let jobs = parse(text).expect("trace");
        assert_eq!(jobs.len(), 2, "job 2 never ran");
        assert_eq!((jobs[0].number, jobs[0].submit), (1, 0));
        assert_eq!((jobs[1].number, jobs[1].processors), (3, 4));
        assert_eq!(jobs[0].requested_time, Some(200));
        assert_eq!(
            (jobs[0].user.as_str(), jobs[1].queue.as_str()),
            ("u3", "q1")
        );
        assert_eq!(parse("1 2 3\n").map_err(|e| e.line), Err(1));
    }

    /// An accounting record's job name and the run time its category asked for are the
    /// replayed job's (what learned run times and the requested-time estimate go by).
    #[test]
    fn an_accounting_record_gives_its_name_and_requested_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("accounting");
        std::fs::write(
            &path,
            "all.q:n1:g0:alice:align0:7:sge:0:1790002689:1790002689:1790005307:0:0:2618:9424.800000:523.600000:4420.000000:0:0:0:0:441:0:0:0.000000:8:0:0:0:7:3:NONE:defaultdepartment:smp:4:0:9948.400000:0.000000:0.000000:-l h_rt=3600 -pe smp 4:0.000000:NONE:0.000000:0:0\n",
        )
        .expect("write");
        let jobs = from_accounting(&path).expect("workload");
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].name.as_deref(), Some("align0"));
        assert_eq!(jobs[0].requested_time, Some(3600));
        assert_eq!((jobs[0].run_time, jobs[0].processors), (2618, 4));
    }
}
