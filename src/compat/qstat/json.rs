//! `qstat -json`, a gridspool extension: the job listing (and with `-f` the queue
//! instances) as one JSON object, for scripts that would otherwise parse fixed columns.
//! The same information as `-xml`, under names that say what they are and will stay:
//!
//! ```text
//! {"jobs": [{"job": 7, "name": "sleep", "owner": "alice", "state": "r",
//!            "priority": 0.555, "submitted": 1795671992, "started": 1795671995,
//!            "queue": "all.q@node1", "slots": 1, "task": "3",
//!            … with -ext: "project", "cpu_seconds", "mem_gbs", "io_gb", "tickets",
//!              "override_tickets", "functional_tickets", "share_tickets", "share";
//!            … with -urg: "urgency", "resource_urgency", "waiting_urgency",
//!              "deadline_urgency", "deadline";
//!            … with -pri: "posix_priority", "normalized_posix_priority",
//!              "normalized_urgency", "normalized_tickets"}],
//!  "queues": [{"name": "all.q@node1", "type": "BIP", "slots_used": 1, "slots_total": 4,
//!              "load_avg": 0.12, "arch": "lx-amd64", "states": ""}]}   (with -f)
//! ```
//!
//! Times are seconds since the epoch (`started` is null for a pending job), usage in the
//! accounting file's units (CPU seconds, GB·s of memory, GB of I/O); `task` is the task id of
//! a running array task or the task range of a pending group, null for a job that is no
//! array; `queue` is null for a pending job. A job is one entry per line that `qstat` would
//! print (a parallel job once, its master queue named).
//!
//! With `-start`, each entry has `estimated_start`: null for a running task, else a list of
//! `{"tasks": "1-3" or null, "kind": "at", "time": …, "queue": "all.q", "hosts": […],
//! "slots": 1}` or `{"tasks": …, "kind": "unknown" or "never", "why": "…"}`.

//!
//! With `-j job_list`: `{"jobs": [{"job_number": "7", "exec_file": "job_scripts/7", …,
//! "scheduling_info": ["…", "…"]}]}`, every line `qstat -j` prints as a field (its label
//! without the colon, blanks written `_`), its value as printed; a field printed on several
//! lines, or more than once, is a list of them.

use super::queues;
use super::rows::{Row, StateCode};
use super::{QstatArgs, View};
use serde::Serialize;

fn state_letters<S: serde::Serializer>(state: &StateCode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(state.as_str())
}

/// One job line. Written straight to the output with serde (no map per job: `-json` is as
/// fast as the table). The optional groups are left out unless their option asks for them;
/// within a group, a value not known is `null`.
#[derive(Serialize)]
struct Job<'a> {
    job: u32,
    name: &'a str,
    owner: &'a str,
    #[serde(serialize_with = "state_letters")]
    state: StateCode,
    priority: f64,
    submitted: i64,
    started: Option<i64>,
    queue: Option<String>,
    slots: u32,
    task: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    project: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_seconds: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mem_gbs: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    io_gb: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tickets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    override_tickets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    functional_tickets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_tickets: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    urgency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_urgency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting_urgency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline_urgency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline: Option<Option<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    posix_priority: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    normalized_posix_priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    normalized_urgency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    normalized_tickets: Option<f64>,
    /// With `-start`: a pending row's estimates, null for a running one.
    #[serde(skip_serializing_if = "Option::is_none")]
    estimated_start: Option<Option<Vec<super::start::RowEstimate>>>,
}

#[derive(Serialize)]
struct QueueInstance {
    name: String,
    #[serde(rename = "type")]
    qtype: String,
    slots_used: u32,
    slots_total: u32,
    load_avg: Option<f64>,
    arch: String,
    states: String,
}

/// The rows, each serialized as it is reached (not a vector of 100,000 jobs first).
struct Jobs<'r, 'a> {
    args: &'r QstatArgs,
    rows: &'r [Row<'a>],
    start: Option<super::start::StartView<'r>>,
}

impl Serialize for Jobs<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.rows.iter().map(|r| job(self.args, self.start, r)))
    }
}

#[derive(Serialize)]
struct Listing<'r, 'a> {
    jobs: Jobs<'r, 'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queues: Option<Vec<QueueInstance>>,
}

fn job<'a>(args: &QstatArgs, start: Option<super::start::StartView<'_>>, row: &Row<'a>) -> Job<'a> {
    let j = row.job;
    let p = row.priority();
    let running = row.running();
    let mut task = String::new();
    let task = row.task_text(&mut task).then_some(task);
    let usage = running.and_then(|t| t.usage.as_ref());
    let ext = |v: f64| args.ext.then_some(v);
    let urg = |v: f64| args.urg.then_some(v);
    let pri = |v: f64| args.pri.then_some(v);
    Job {
        job: j.id.0,
        name: &j.spec.name,
        owner: &j.submitter.owner,
        state: row.state_code(),
        priority: p.prio,
        submitted: j.submitter.submission_time,
        started: running.map(|t| t.start_time),
        queue: running.map(|t| format!("{}@{}", t.queue, t.host)),
        slots: row.slots(),
        task,
        project: args.ext.then_some(j.spec.project.as_deref()),
        cpu_seconds: args.ext.then_some(usage.map(|u| u.cpu)),
        mem_gbs: args.ext.then_some(usage.map(|u| u.mem)),
        io_gb: args.ext.then_some(usage.map(|u| u.io)),
        tickets: ext(p.tickets),
        override_tickets: ext(p.otickets),
        functional_tickets: ext(p.ftickets),
        share_tickets: ext(p.stickets),
        share: ext(p.share),
        urgency: urg(p.urg),
        resource_urgency: urg(p.rrcontr),
        waiting_urgency: urg(p.wtcontr),
        deadline_urgency: urg(p.dlcontr),
        deadline: args.urg.then_some(j.spec.deadline),
        posix_priority: args.pri.then_some(j.spec.priority),
        normalized_posix_priority: pri(p.npprior),
        normalized_urgency: pri(p.nurg),
        normalized_tickets: pri(p.ntckts),
        estimated_start: start.map(|s| super::start::row_estimates(s, row)),
    }
}

/// The listing of `rows` (and with `-f` the queue instances), one line of JSON.
pub fn jobs(out: &mut String, args: &QstatArgs, view: &View<'_>, rows: &[Row<'_>]) {
    let listing = Listing {
        jobs: Jobs {
            args,
            rows,
            start: view.estimates.filter(|_| args.start),
        },
        queues: args.full.then(|| {
            queues::instances(args, view)
                .iter()
                .map(|q| QueueInstance {
                    name: q.name.clone(),
                    qtype: q.qtype(),
                    slots_used: q.slots_used,
                    slots_total: q.slots_total,
                    load_avg: q.load_avg,
                    arch: q.arch.clone(),
                    states: q.states(),
                })
                .collect()
        }),
    };
    let mut bytes = std::mem::take(out).into_bytes();
    bytes.reserve(rows.len() * 200 + 64);
    // Writing into memory fails only on a value serde cannot write, which these are not.
    let _ = serde_json::to_writer(&mut bytes, &listing);
    bytes.push(b'\n');
    // serde_json writes UTF-8 only.
    *out = String::from_utf8(bytes).unwrap_or_default();
}

/// `qstat -j job_list -json`: each job's `qstat -j` text (`details`) as one object of its
/// fields.
pub fn job_details(out: &mut String, details: &[String]) {
    let jobs: Vec<serde_json::Map<String, serde_json::Value>> =
        details.iter().map(|text| detail_fields(text)).collect();
    let v = serde_json::json!({ "jobs": jobs });
    out.push_str(&v.to_string());
    out.push('\n');
}

/// The fields of one job's `qstat -j` text: `label:   value` lines, and lines that begin
/// with blanks continuing the field above.
fn detail_fields(text: &str) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::Value;
    let mut fields = serde_json::Map::new();
    let mut last: Option<String> = None;
    let add = |fields: &mut serde_json::Map<String, Value>, key: &str, value: &str| {
        let value = Value::String(value.to_string());
        match fields.get_mut(key) {
            Some(Value::Array(list)) => list.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                fields.insert(key.to_string(), value);
            }
        }
    };
    for line in text.lines() {
        if line.is_empty() || line.starts_with("=====") {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(key) = &last {
                add(&mut fields, key, line.trim());
            }
            continue;
        }
        let Some((label, value)) = line.split_once(':') else {
            continue;
        };
        let key = label.split_whitespace().collect::<Vec<_>>().join("_");
        add(&mut fields, &key, value.trim());
        last = Some(key);
    }
    fields
}

#[cfg(test)]
mod detail_tests {
    #[test]
    fn every_line_of_qstat_j_is_a_field() {
        let text = "==============================================================\n\
            job_number:                 7\n\
            sge_o_workdir:              /home/a\n\
            hard resource_list:         h_rt=60,mem_free=1G\n\
            usage         1:            cpu=00:00:01, mem=0.00000 GB s\n\
            scheduling info:            queue instance \"all.q@n1\" dropped because it is full\n\
            \x20                           cannot run in PE \"mpi\"\n";
        let f = super::detail_fields(text);
        assert_eq!(f["job_number"], "7");
        assert_eq!(f["hard_resource_list"], "h_rt=60,mem_free=1G");
        assert_eq!(f["usage_1"], "cpu=00:00:01, mem=0.00000 GB s");
        assert_eq!(
            f["scheduling_info"],
            serde_json::json!([
                "queue instance \"all.q@n1\" dropped because it is full",
                "cannot run in PE \"mpi\""
            ])
        );
    }
}
