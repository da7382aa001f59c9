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

use super::queues;
use super::rows::Row;
use super::{QstatArgs, View};
use serde_json::{Map, Value, json};

fn job(args: &QstatArgs, row: &Row<'_>) -> Value {
    let j = row.job;
    let p = row.priority();
    let running = row.running();
    let mut task = String::new();
    let task = row.task_text(&mut task).then_some(task);
    let mut o = Map::new();
    o.insert("job".into(), json!(j.id.0));
    o.insert("name".into(), json!(j.spec.name));
    o.insert("owner".into(), json!(j.submitter.owner));
    o.insert("state".into(), json!(row.state_code().as_str()));
    o.insert("priority".into(), json!(p.prio));
    o.insert("submitted".into(), json!(j.submitter.submission_time));
    o.insert("started".into(), json!(running.map(|t| t.start_time)));
    o.insert(
        "queue".into(),
        json!(running.map(|t| format!("{}@{}", t.queue, t.host))),
    );
    o.insert("slots".into(), json!(row.slots()));
    o.insert("task".into(), json!(task));
    if args.ext {
        let usage = running.and_then(|t| t.usage.as_ref());
        o.insert("project".into(), json!(j.spec.project));
        o.insert("cpu_seconds".into(), json!(usage.map(|u| u.cpu)));
        o.insert("mem_gbs".into(), json!(usage.map(|u| u.mem)));
        o.insert("io_gb".into(), json!(usage.map(|u| u.io)));
        o.insert("tickets".into(), json!(p.tickets));
        o.insert("override_tickets".into(), json!(p.otickets));
        o.insert("functional_tickets".into(), json!(p.ftickets));
        o.insert("share_tickets".into(), json!(p.stickets));
        o.insert("share".into(), json!(p.share));
    }
    if args.urg {
        o.insert("urgency".into(), json!(p.urg));
        o.insert("resource_urgency".into(), json!(p.rrcontr));
        o.insert("waiting_urgency".into(), json!(p.wtcontr));
        o.insert("deadline_urgency".into(), json!(p.dlcontr));
        o.insert("deadline".into(), json!(j.spec.deadline));
    }
    if args.pri {
        o.insert("posix_priority".into(), json!(j.spec.priority));
        o.insert("normalized_posix_priority".into(), json!(p.npprior));
        o.insert("normalized_urgency".into(), json!(p.nurg));
        o.insert("normalized_tickets".into(), json!(p.ntckts));
    }
    Value::Object(o)
}

/// The listing of `rows` (and with `-f` the queue instances), one line of JSON.
pub fn jobs(out: &mut String, args: &QstatArgs, view: &View<'_>, rows: &[Row<'_>]) {
    let mut top = Map::new();
    top.insert(
        "jobs".into(),
        Value::Array(rows.iter().map(|r| job(args, r)).collect()),
    );
    if args.full {
        let queues: Vec<Value> = queues::instances(args, view)
            .iter()
            .map(|q| {
                json!({
                    "name": q.name,
                    "type": q.qtype(),
                    "slots_used": q.slots_used,
                    "slots_total": q.slots_total,
                    "load_avg": q.load_avg,
                    "arch": q.arch,
                    "states": q.states(),
                })
            })
            .collect();
        top.insert("queues".into(), Value::Array(queues));
    }
    out.push_str(&Value::Object(top).to_string());
    out.push('\n');
}
