//! `qstat -xml`: SGE's element structure for the job tables, `-f` and `-g c`.

use super::detail::{esc, slot_range};
use super::fmt::{Dates, LineCx, spaces};
use super::queues;
use super::rows::{Row, RowKind};
use super::table::{QueueLines, Role, granted, summaries};
use super::{QstatArgs, View};
use std::fmt::Write;

const HEAD: &str = "<?xml version='1.0'?>\n<job_info  xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd\">\n";

fn ind(out: &mut String, n: usize) {
    spaces(out, n);
}

fn open_tag(out: &mut String, indent: usize, name: &str) {
    ind(out, indent);
    out.push('<');
    out.push_str(name);
    out.push('>');
}

fn close_tag(out: &mut String, name: &str) {
    out.push_str("</");
    out.push_str(name);
    out.push_str(">\n");
}

/// `<name>value</name>` for values that need no escaping (numbers, fixed words).
fn num(out: &mut String, indent: usize, name: &str, value: impl std::fmt::Display) {
    open_tag(out, indent, name);
    let _ = write!(out, "{value}");
    close_tag(out, name);
}

/// `<name>text</name>` with the text escaped.
fn text(out: &mut String, indent: usize, name: &str, value: &str) {
    open_tag(out, indent, name);
    esc(out, value);
    close_tag(out, name);
}

/// `<name>date</name>` in `qstat -xml`'s date form.
fn date(out: &mut String, indent: usize, name: &str, epoch: i64, dates: &mut Dates) {
    open_tag(out, indent, name);
    dates.iso(out, epoch);
    close_tag(out, name);
}

/// One `<job_list>`; `in_queue` is true inside `-f`'s `<Queue-List>` and for pending jobs of
/// `-f`, where SGE leaves out `<queue_name>`.
// The arguments are one line's coordinates (queue, slots, role) plus the shared output
// state; a struct for them would only be unpacked again on the next line.
#[allow(clippy::too_many_arguments)]
fn job_list(
    out: &mut String,
    args: &QstatArgs,
    row: &Row<'_>,
    indent: usize,
    queue: Option<&str>,
    slots: u32,
    role: Role,
    cx: &mut LineCx<'_, '_>,
) {
    let job = row.job;
    let p = row.priority();
    let running = row.running();
    let i = indent + 2;
    ind(out, indent);
    let _ = writeln!(
        out,
        "<job_list state=\"{}\">",
        match row.kind {
            RowKind::Running(_) => "running",
            RowKind::Pending { .. } => "pending",
            RowKind::Zombie => "zombie",
        }
    );
    num(out, i, "JB_job_number", job.id);
    num(out, i, "JAT_prio", format_args!("{:.5}", p.prio));
    if args.ext || args.pri {
        num(out, i, "JAT_ntix", format_args!("{:.5}", p.ntckts));
    }
    if args.pri {
        num(out, i, "JB_nppri", format_args!("{:.5}", p.npprior));
    }
    if args.pri || args.urg {
        num(out, i, "JB_nurg", format_args!("{:.5}", p.nurg));
    }
    if args.urg {
        num(out, i, "JB_rrcontr", format_args!("{:.0}", p.rrcontr));
        num(out, i, "JB_wtcontr", format_args!("{:.0}", p.wtcontr));
        num(out, i, "JB_dlcontr", format_args!("{:.0}", p.dlcontr));
    }
    if args.pri {
        num(out, i, "JB_priority", job.spec.priority);
    }
    text(out, i, "JB_name", &job.spec.name);
    text(out, i, "JB_owner", &job.submitter.owner);
    if args.ext {
        text(
            out,
            i,
            "JB_project",
            job.spec.project.as_deref().unwrap_or(""),
        );
        let department = cx
            .view
            .config
            .department_of(&job.submitter.owner, &job.submitter.group);
        text(out, i, "JB_department", &department);
    }
    num(out, i, "state", row.state_code().as_str());
    if args.show_time() {
        match running {
            Some(t) => date(out, i, "JAT_start_time", t.start_time, &mut cx.dates),
            None => date(
                out,
                i,
                "JB_submission_time",
                job.submitter.submission_time,
                &mut cx.dates,
            ),
        }
    }
    if args.urg
        && let Some(d) = job.spec.deadline
    {
        date(out, i, "JB_deadline", d, &mut cx.dates);
    }
    if args.ext {
        if let Some(u) = running.and_then(|t| t.usage.as_ref()) {
            num(out, i, "cpu_usage", format_args!("{:.5}", u.cpu));
            num(out, i, "mem_usage", format_args!("{:.5}", u.mem));
            num(out, i, "io_usage", format_args!("{:.5}", u.io));
        }
        num(out, i, "tickets", p.tickets as i64);
        num(out, i, "JB_override_tickets", 0);
        num(out, i, "JB_jobshare", 0);
        num(out, i, "otickets", p.otickets as i64);
        num(out, i, "ftickets", p.ftickets as i64);
        num(out, i, "stickets", p.stickets as i64);
        num(out, i, "JAT_share", format_args!("{:.5}", p.share));
    }
    if let Some(q) = queue {
        text(out, i, "queue_name", q);
    }
    match role {
        Role::Master => num(out, i, "master", "MASTER"),
        Role::Slave => num(out, i, "master", "SLAVE"),
        Role::Job => {}
    }
    num(out, i, "slots", slots);
    let mut tasks = String::new();
    if row.task_text(&mut tasks) {
        num(out, i, "tasks", tasks);
    }
    if args.requests {
        requests(out, row, i, cx.view);
    }
    ind(out, indent);
    out.push_str("</job_list>\n");
}

/// `-r -xml`: the requests of a job.
fn requests(out: &mut String, row: &Row<'_>, i: usize, view: &View<'_>) {
    let spec = &row.job.spec;
    text(out, i, "full_job_name", &spec.name);
    for r in &spec.hard_resources {
        ind(out, i);
        out.push_str("<hard_request name=\"");
        esc(out, &r.name);
        let uc = super::detail::urgency_contribution(view, r, row.slots());
        let _ = write!(out, "\" resource_contribution=\"{uc:.6}\">");
        esc(out, &r.value);
        out.push_str("</hard_request>\n");
    }
    for r in &spec.soft_resources {
        ind(out, i);
        out.push_str("<soft_request name=\"");
        esc(out, &r.name);
        out.push_str("\">");
        esc(out, &r.value);
        out.push_str("</soft_request>\n");
    }
    if let Some(pe) = &spec.pe {
        ind(out, i);
        out.push_str("<requested_pe name=\"");
        esc(out, &pe.name);
        out.push_str("\">");
        out.push_str(&slot_range(pe.range));
        out.push_str("</requested_pe>\n");
        if let Some(t) = row.running() {
            ind(out, i);
            out.push_str("<granted_pe name=\"");
            esc(out, &pe.name);
            let _ = writeln!(out, "\">{}</granted_pe>", t.slots);
        }
    }
    for q in &spec.hard_queues {
        text(out, i, "hard_req_queue", q);
    }
    for q in &spec.soft_queues {
        text(out, i, "soft_req_queue", q);
    }
    for q in &spec.master_queues {
        text(out, i, "master_hard_req_queue", q);
    }
    for w in &spec.hold_jid {
        text(out, i, "predecessor_jobs_req", w);
    }
    for p in &spec.predecessors {
        num(out, i, "predecessor_jobs", p);
    }
    for w in &spec.hold_jid_ad {
        text(out, i, "ad_predecessor_jobs_req", w);
    }
    for p in &spec.array_predecessors {
        num(out, i, "ad_predecessor_jobs", p);
    }
    num(out, i, "binding", "NONE");
}

/// The job tables in XML: running tasks under `<queue_info>`, pending under `<job_info>`
/// (with `-f`, running tasks inside each `<Queue-List>`).
pub fn jobs(out: &mut String, args: &QstatArgs, view: &View<'_>, rows: &[Row<'_>]) {
    out.reserve(rows.len() * 400 + 512);
    out.push_str(HEAD);
    let mut cx = LineCx::new(view);
    out.push_str("  <queue_info>\n");
    if args.full {
        let by_queue = QueueLines::gather(rows, args.group.pe_tasks);
        for q in queues::instances(args, view) {
            let start = out.len();
            out.push_str("    <Queue-List>\n");
            text(out, 6, "name", &q.name);
            num(out, 6, "qtype", q.qtype());
            num(out, 6, "slots_used", q.slots_used);
            num(out, 6, "slots_resv", 0);
            num(out, 6, "slots_total", q.slots_total);
            if let Some(l) = q.load_avg {
                num(out, 6, "load_avg", format_args!("{l:.5}"));
            }
            text(out, 6, "arch", &q.arch);
            if !q.states().is_empty() {
                num(out, 6, "state", q.states());
            }
            if let Some(names) = &args.resources {
                let all = super::resources::of_instance(
                    view.config,
                    &q,
                    view.config.host(&q.host),
                    queues::host_load(view, &q.host),
                );
                for r in super::resources::selected(view.config, &all, names) {
                    ind(out, 6);
                    let _ = write!(out, "<resource name=\"{}\" type=\"{}\">", r.name, r.kind);
                    super::fmt::esc(out, &r.value);
                    out.push_str("</resource>\n");
                }
            }
            let lines = by_queue.of(&q.name);
            for line in lines {
                let row = &rows[line.row];
                job_list(out, args, row, 6, None, line.slots, line.role, &mut cx);
            }
            out.push_str("    </Queue-List>\n");
            if args.hide_empty && lines.is_empty() && q.slots_used == 0 {
                out.truncate(start);
            }
        }
    } else {
        for row in rows {
            let Some(t) = row.running() else { continue };
            if args.group.pe_tasks {
                let mut first = true;
                for (q, n) in granted(t) {
                    for _ in 0..n {
                        let role = if first { Role::Master } else { Role::Slave };
                        first = false;
                        job_list(out, args, row, 4, Some(&q), 1, role, &mut cx);
                    }
                }
            } else {
                job_list(
                    out,
                    args,
                    row,
                    4,
                    Some(&granted(t)[0].0),
                    row.slots(),
                    Role::Job,
                    &mut cx,
                );
            }
        }
    }
    out.push_str("  </queue_info>\n  <job_info>\n");
    let queue = (!args.full).then_some("");
    super::fmt::rows_in_order(out, view, rows, 400, |out, row, cx| {
        if row.running().is_none() {
            job_list(out, args, row, 4, queue, row.slots(), Role::Job, cx);
        }
    });
    out.push_str("  </job_info>\n</job_info>\n");
}

/// `-g c -xml`.
pub fn cluster_summary(out: &mut String, args: &QstatArgs, view: &View<'_>) {
    out.push_str(HEAD);
    for s in summaries(args, view) {
        out.push_str("  <cluster_queue_summary>\n");
        text(out, 4, "name", &s.name);
        if let Some(l) = s.load {
            num(out, 4, "load", format_args!("{l:.5}"));
        }
        num(out, 4, "used", s.used);
        num(out, 4, "resv", s.reserved);
        num(out, 4, "available", s.available);
        num(out, 4, "total", s.total);
        num(out, 4, "temp_disabled", s.alarm);
        num(out, 4, "manual_intervention", s.disabled);
        out.push_str("  </cluster_queue_summary>\n");
    }
    out.push_str("</job_info>\n");
}
