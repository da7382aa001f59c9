//! `qstat -start` (gridspool's own; SGE 8.1.9 has no start-time estimates): the pending jobs
//! with when `sched_d`'s forecast expects them to start and where, or why it cannot say. The
//! same estimates are an `estimated start:` line of `qstat -j … -start` and an
//! `estimated_start` field of `qstat -json -start`.
//!
//! The table keeps the plain table's first columns; `submit at` and `estimated start` are
//! in `qstat`'s date format, `where` is `queue@host` (with `+N` for the N other hosts of a
//! parallel job). A job with no time gets `unknown` or `never`, and its reason on the next
//! line, indented.

use super::fmt::pad;
use super::rows::{Row, RowKind};
use super::{QstatArgs, View};
use crate::model::{JobId, StartEstimate, StartForecast, TaskSet};
use crate::time::qstat_date;
use serde::Serialize;
use std::fmt::Write as _;

/// What `-start` shows the estimates from: the forecast `sched_d` last wrote, if any.
#[derive(Debug, Clone, Copy)]
pub struct StartView<'a> {
    pub forecast: Option<&'a StartForecast>,
}

/// The estimates covering `tasks` of job `id`: each with the tasks it holds for. Tasks the
/// forecast does not know (it was made before they were submitted, or there is none) get an
/// unknown start that says so.
pub fn of_tasks(view: StartView<'_>, id: JobId, tasks: &TaskSet) -> Vec<(TaskSet, StartEstimate)> {
    let mut out = Vec::new();
    let mut rest = tasks.clone();
    if let Some(job) = view.forecast.and_then(|f| f.job(id)) {
        for e in &job.tasks {
            let both = rest.intersection(&e.tasks);
            if !both.is_empty() {
                rest.remove_all(&both);
                out.push((both, e.start.clone()));
            }
        }
    }
    if !rest.is_empty() {
        let why = match view.forecast {
            Some(f) => format!(
                "not in the last forecast (made at {}): the next one has it",
                qstat_date(f.made_at)
            ),
            None => "no forecast has been made: sched_d makes one after its scheduling passes when scheduler.start_estimates is enabled".to_string(),
        };
        out.push((rest, StartEstimate::Unknown { why }));
    }
    out
}

/// One estimate in words: `11/27/2026 13:05:00 in all.q on node1 (1 slot)`, `unknown: why`,
/// `never: why` (the `estimated start:` line of `qstat -j`).
pub fn describe(e: &StartEstimate) -> String {
    match e {
        StartEstimate::At {
            time,
            queue,
            hosts,
            slots,
        } => format!(
            "{} in {queue} on {} ({slots} slot{})",
            qstat_date(*time),
            hosts.join(","),
            if *slots == 1 { "" } else { "s" }
        ),
        StartEstimate::Unknown { why } => format!("unknown: {why}"),
        StartEstimate::Never { why } => format!("never: {why}"),
    }
}

/// The tasks of a pending row (a group, or one task with `-g d`).
fn row_tasks(row: &Row<'_>) -> Option<TaskSet> {
    match row.kind {
        RowKind::Pending { task: Some(t), .. } => {
            Some(TaskSet::from_range(crate::model::TaskIdRange::single(t)))
        }
        RowKind::Pending { group, state, .. } => {
            Some(super::rows::pending_tasks(row.job, group, state.restarted).into_owned())
        }
        RowKind::Running(_) | RowKind::Zombie => None,
    }
}

/// `qstat -start`: the pending rows that `args` selects, each with its estimates.
pub fn table(out: &mut String, args: &QstatArgs, view: &View<'_>, start: StartView<'_>) {
    let rows: Vec<Row<'_>> = super::rows::select(args, view)
        .into_iter()
        .filter(|r| matches!(r.kind, RowKind::Pending { .. }))
        .collect();
    if rows.is_empty() {
        return;
    }
    let qw = super::table::queue_width(view);
    out.push_str(
        "job-ID  prior   name       user         state submit at           estimated start     ",
    );
    pad(out, "where", qw);
    out.push_str(" slots ja-task-ID \n");
    out.push_str(&"-".repeat(103 + qw));
    out.push('\n');
    for row in &rows {
        let Some(tasks) = row_tasks(row) else {
            continue;
        };
        let job = row.job;
        for (set, e) in of_tasks(start, job.id, &tasks) {
            let _ = write!(out, "{:>7} {:7.5} ", job.id.0, row.priority().prio);
            pad(out, &job.spec.name, 10);
            out.push(' ');
            pad(out, &job.submitter.owner, 12);
            out.push(' ');
            pad(out, row.state_code().as_str(), 5);
            out.push(' ');
            out.push_str(&qstat_date(job.submitter.submission_time));
            out.push(' ');
            let (when, place, why) = match &e {
                StartEstimate::At {
                    time, queue, hosts, ..
                } => {
                    let mut place = format!("{queue}@{}", hosts.first().map_or("", |h| h.as_str()));
                    if hosts.len() > 1 {
                        let _ = write!(place, "+{}", hosts.len() - 1);
                    }
                    (qstat_date(*time), place, None)
                }
                StartEstimate::Unknown { why } => ("unknown".to_string(), String::new(), Some(why)),
                StartEstimate::Never { why } => ("never".to_string(), String::new(), Some(why)),
            };
            pad(out, &when, 19);
            out.push(' ');
            pad(out, &place, qw);
            let _ = write!(out, " {:>5} ", row.slots());
            if job.is_array() {
                let _ = write!(out, "{set}");
            }
            out.push('\n');
            if let Some(why) = why {
                let _ = writeln!(out, "        {why}");
            }
        }
    }
}

/// One estimate of a `-json -start` row.
#[derive(Debug, Serialize)]
pub struct RowEstimate {
    /// The tasks it holds for (an array job's), else null.
    pub tasks: Option<String>,
    #[serde(flatten)]
    pub start: StartEstimate,
}

/// The `estimated_start` of a `-json -start` row: its estimates when it is pending, else
/// `None` (null).
pub fn row_estimates(start: StartView<'_>, row: &Row<'_>) -> Option<Vec<RowEstimate>> {
    let tasks = row_tasks(row)?;
    Some(
        of_tasks(start, row.job.id, &tasks)
            .into_iter()
            .map(|(set, e)| RowEstimate {
                tasks: row.job.is_array().then(|| set.to_string()),
                start: e,
            })
            .collect(),
    )
}

/// The `estimated start:` lines of `qstat -j … -start` for `job`'s pending tasks (none when
/// it has none).
pub fn detail_lines(out: &mut String, start: StartView<'_>, job: &crate::model::JobRecord) {
    let tasks = job.tasks.pending_tasks();
    if tasks.is_empty() {
        return;
    }
    for (i, (set, e)) in of_tasks(start, job.id, &tasks).iter().enumerate() {
        out.push_str(if i == 0 {
            "estimated start:            "
        } else {
            "                            "
        });
        if job.is_array() {
            let _ = write!(out, "{set}: ");
        }
        out.push_str(&describe(e));
        out.push('\n');
    }
}
