//! `daemon/estimates`: the latest start-time forecast ([`StartForecast`]), written whole by
//! `sched_d`'s forecast and read by `qstat --start`, `-json` and the status page.
//!
//! JSON lines: the forecast's header (version, time, source of run times), then one line per
//! job in job-id order, so that `qstat -j N --start` parses one line of a file that holds a
//! hundred thousand. Replaced atomically; not synced (it is made again from the spool after a
//! crash, and a reader that finds none says so).

use super::{Spool, SpoolError};
use crate::file::{durable, open};
use crate::model::{FORECAST_SCHEMA_VERSION, JobId, JobStartEstimate, StartForecast};
use serde::{Deserialize, Serialize};

const FILE: &str = "estimates";

/// The first line: everything of the forecast but its jobs.
#[derive(Serialize, Deserialize)]
struct Header {
    v: u32,
    made_at: i64,
    took_ms: u64,
    run_times: String,
}

impl Spool {
    pub fn estimates_path(&self) -> std::path::PathBuf {
        self.daemon_dir().join(FILE)
    }

    /// Replaces the forecast (`sched_d`'s forecast process).
    pub fn write_estimates(&self, forecast: &StartForecast) -> Result<(), SpoolError> {
        let dir = self.daemon_dir();
        let header = Header {
            v: forecast.v,
            made_at: forecast.made_at,
            took_ms: forecast.took_ms,
            run_times: forecast.run_times.clone(),
        };
        durable::write_replace_with(&dir, FILE, 0o644, |w| {
            serde_json::to_writer(&mut *w, &header)?;
            w.write_all(b"\n")?;
            for job in &forecast.jobs {
                serde_json::to_writer(&mut *w, job)?;
                w.write_all(b"\n")?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// The whole forecast; `None` when there is none yet, or of another version.
    pub fn read_estimates(&self) -> Result<Option<StartForecast>, SpoolError> {
        self.read_estimates_where(|_| true)
    }

    /// The forecast's header and the estimates of the jobs in `ids` alone (each parsed only
    /// if its line is one of theirs); `None` as [`Spool::read_estimates`].
    pub fn read_estimates_of(&self, ids: &[JobId]) -> Result<Option<StartForecast>, SpoolError> {
        let prefixes: Vec<String> = ids.iter().map(|id| format!("{{\"job\":{id},")).collect();
        self.read_estimates_where(|line| prefixes.iter().any(|p| line.starts_with(p.as_str())))
    }

    /// The forecast with the job lines `wanted` keeps.
    fn read_estimates_where(
        &self,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Option<StartForecast>, SpoolError> {
        let Some(text) = self.estimates_text()? else {
            return Ok(None);
        };
        let mut lines = text.lines();
        let Some(header) = self.header(lines.next())? else {
            return Ok(None);
        };
        let jobs = lines
            .filter(|l| !l.is_empty() && wanted(l))
            .map(|l| self.job_line(l))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(StartForecast {
            v: header.v,
            made_at: header.made_at,
            took_ms: header.took_ms,
            run_times: header.run_times,
            jobs,
        }))
    }

    fn estimates_text(&self) -> Result<Option<String>, SpoolError> {
        let path = self.estimates_path();
        match open::read(&path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| SpoolError::Malformed {
                    path,
                    reason: "not UTF-8".into(),
                }),
            Err(open::OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SpoolError::open("read", &path, e)),
        }
    }

    fn header(&self, line: Option<&str>) -> Result<Option<Header>, SpoolError> {
        let Some(line) = line else {
            return Ok(None);
        };
        let header: Header = serde_json::from_str(line).map_err(|e| SpoolError::Malformed {
            path: self.estimates_path(),
            reason: format!("header: {e}"),
        })?;
        Ok((header.v == FORECAST_SCHEMA_VERSION).then_some(header))
    }

    fn job_line(&self, line: &str) -> Result<JobStartEstimate, SpoolError> {
        serde_json::from_str(line).map_err(|e| SpoolError::Malformed {
            path: self.estimates_path(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StartEstimate, TaskIdRange, TaskSet, TaskStartEstimate};

    #[test]
    fn a_forecast_reads_back_whole_and_job_by_job() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        assert_eq!(spool.read_estimates().expect("read"), None);
        let job = |id: u32, start: StartEstimate| JobStartEstimate {
            job: JobId(id),
            tasks: vec![TaskStartEstimate {
                tasks: TaskSet::from_range(TaskIdRange::new(1, 3, 1)),
                start,
            }],
        };
        let forecast = StartForecast {
            v: FORECAST_SCHEMA_VERSION,
            made_at: 1_800_000_000,
            took_ms: 12,
            run_times: "limits".into(),
            jobs: vec![
                job(
                    1,
                    StartEstimate::At {
                        time: 1_800_000_100,
                        queue: "all.q".into(),
                        hosts: vec!["node1".into()],
                        slots: 1,
                    },
                ),
                job(11, StartEstimate::Never { why: "no".into() }),
                job(111, StartEstimate::Unknown { why: "held".into() }),
            ],
        };
        spool.write_estimates(&forecast).expect("write");
        assert_eq!(
            spool.read_estimates().expect("read"),
            Some(forecast.clone())
        );
        let one = spool
            .read_estimates_of(&[JobId(11)])
            .expect("read")
            .expect("forecast");
        assert_eq!(one.jobs, vec![forecast.jobs[1].clone()]);
        assert_eq!(
            one.job(JobId(11)).and_then(|j| j.task(2)),
            Some(&StartEstimate::Never { why: "no".into() })
        );
        assert_eq!(one.job(JobId(1)), None);
    }
}
