//! The jobs `qhost -j` and `qhost -u` list under each host: for every queue instance of the
//! host, the running tasks that hold slots there, in job-id and task order, as SGE 8.1.9
//! prints them (its `sge_print_jobs_queue`): one line per granted slot; the first line of a
//! task on an instance carries the job's columns, the others are blank up to the queue
//! column; the first slot of the task's first instance is its `MASTER`, every other one a
//! `SLAVE`.

use crate::compat::pattern;
use crate::compat::qstat::fmt::{pad, spaces};
use crate::compat::qstat::rows::running_code;
use crate::compat::qstat::table::granted;
use crate::model::{JobRecord, RunningTask};
use crate::time::qstat_date;
use std::collections::HashMap;

/// One line: one granted slot of a running task on one queue instance.
pub(super) struct JobLine<'a> {
    job: &'a JobRecord,
    task: &'a RunningTask,
    /// `queue@host`.
    instance: String,
    /// The task's first line on this instance: the job's own columns are printed.
    first: bool,
    master: bool,
}

/// The lines of each queue instance (`queue@host`) of the selected owners' running tasks
/// (`users` empty: everybody's).
pub(super) fn by_instance<'a>(
    jobs: &'a [JobRecord],
    users: &[String],
) -> HashMap<String, Vec<JobLine<'a>>> {
    let mut sorted: Vec<&JobRecord> = jobs
        .iter()
        .filter(|j| !j.tasks.running.is_empty())
        .filter(|j| {
            users.is_empty()
                || users
                    .iter()
                    .any(|u| pattern::matches(u, &j.submitter.owner))
        })
        .collect();
    sorted.sort_by_key(|j| j.id);
    let mut out: HashMap<String, Vec<JobLine<'a>>> = HashMap::new();
    for job in sorted {
        let mut tasks: Vec<&RunningTask> = job.tasks.running.iter().collect();
        tasks.sort_by_key(|t| t.task);
        for task in tasks {
            for (i, (instance, slots)) in granted(task).into_iter().enumerate() {
                let lines = out.entry(instance.clone()).or_default();
                lines.extend((0..slots.max(1)).map(|k| JobLine {
                    job,
                    task,
                    instance: instance.clone(),
                    first: k == 0,
                    master: i == 0 && k == 0,
                }));
            }
        }
    }
    out
}

/// The column titles SGE prints once, before the first job line (not with `-q`).
pub(super) const HEADER: &str = "   job-ID  prior   name       user         state submit/start at     queue      master ja-task-ID ";

/// Blanks standing for the job's columns on a task's further lines: the indent, then job-ID,
/// prior, name, user, state and submit/start at with their separating blanks.
const JOB_COLUMNS: usize = 69;

impl JobLine<'_> {
    fn label(&self) -> &'static str {
        if self.master { "MASTER" } else { "SLAVE" }
    }

    fn priority(&self) -> f64 {
        self.job.priority.as_ref().map_or(0.0, |p| p.prio)
    }

    /// The text line; with `-q` (`full`) the queue column is left out, the queue line above
    /// names it.
    pub(super) fn text(&self, full: bool) -> String {
        let mut s = String::with_capacity(100);
        if self.first {
            s.push_str(&format!(
                "   {:>7} {:.5} ",
                self.job.id.to_string(),
                self.priority()
            ));
            pad(&mut s, &self.job.spec.name, 10);
            s.push(' ');
            pad(&mut s, &self.job.submitter.owner, 12);
            s.push(' ');
            pad(&mut s, running_code(self.task).as_str(), 5);
            s.push(' ');
            s.push_str(&qstat_date(self.task.start_time));
            s.push(' ');
        } else {
            spaces(&mut s, JOB_COLUMNS);
        }
        if !full {
            pad(&mut s, &self.instance, 10);
            s.push(' ');
        }
        pad(&mut s, self.label(), 6);
        s.push(' ');
        if self.job.is_array() {
            s.push_str(&self.task.task.to_string());
        } else {
            spaces(&mut s, 7);
        }
        s
    }

    /// The line for `-json`: the job's values by name (`task` null unless an array job).
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "job": self.job.id.0,
            "task": self.job.is_array().then_some(self.task.task),
            "name": self.job.spec.name,
            "owner": self.job.submitter.owner,
            "state": running_code(self.task).as_str(),
            "priority": self.priority(),
            "started": self.task.start_time,
            "queue": self.instance,
            "master": self.label(),
        })
    }

    /// The `<job>` element of `-xml` (every line gets all of the job's values).
    pub(super) fn xml(&self, escape: impl Fn(&str) -> String) -> Vec<String> {
        let id = self.job.id.to_string();
        let value =
            |name: &str, v: &str| format!("   <jobvalue jobid='{id}' name='{name}'>{v}</jobvalue>");
        let instance = escape(&self.instance);
        let mut lines = vec![
            format!(" <job name='{id}'>"),
            value("priority", &format!("'{:.6}'", self.priority())),
            value("qinstance_name", &instance),
            value("job_name", &escape(&self.job.spec.name)),
            value("job_owner", &escape(&self.job.submitter.owner)),
            value("job_state", running_code(self.task).as_str()),
            value("start_time", &self.task.start_time.to_string()),
            value("queue_name", &instance),
            value("pe_master", self.label()),
        ];
        if self.job.is_array() {
            lines.push(value("taskid", &self.task.task.to_string()));
        }
        lines.push(" </job>".to_string());
        lines
    }
}
