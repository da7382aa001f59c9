//! The plain-text tables: the job table with its `-ext`, `-urg`, `-pri`, `-r` and `-t`
//! columns, the `-f` queue listing, and the `-g c` cluster queue summary. Column widths,
//! truncation and padding are SGE 8.1.9's (`qstat(1)` output as captured).

use super::fmt::{LineCx, pad, right, spaces};
use super::queues::{self, QueueInstance};
use super::rows::{Row, RowKind};
use super::{QstatArgs, View};
use crate::model::TaskUsage;
use std::collections::HashMap;
use std::fmt::Write;

/// SGE's minimum width of the queue column.
const MIN_QUEUE_WIDTH: usize = 30;

/// `d:hh:mm:ss` of `qstat -ext`'s cpu column.
fn cpu_days(out: &mut String, secs: f64) {
    let s = secs.max(0.0) as u64;
    let _ = write!(
        out,
        "{}:{:02}:{:02}:{:02} ",
        s / 86400,
        s % 86400 / 3600,
        s % 3600 / 60,
        s % 60
    );
}

/// The width of the queue column: the longest queue instance name, at least 30.
pub(crate) fn queue_width(view: &View<'_>) -> usize {
    let mut w = MIN_QUEUE_WIDTH;
    for q in &view.config.queues {
        for h in view.config.queue_hosts(q) {
            w = w.max(q.name.chars().count() + 1 + h.name.chars().count());
        }
    }
    w
}

/// The column header and its underline.
pub(super) fn header(out: &mut String, args: &QstatArgs, qw: usize) {
    out.push_str("job-ID  prior  ");
    if args.pri || args.urg {
        out.push_str(" nurg   ");
    }
    if args.pri {
        out.push_str(" npprior");
    }
    if args.pri || args.ext {
        out.push_str(" ntckts ");
    }
    if args.urg {
        out.push_str(" urg      rrcontr  wtcontr  dlcontr ");
    }
    if args.pri {
        out.push_str("  ppri");
    }
    out.push_str(" name       user         ");
    if args.ext {
        out.push_str("project          department ");
    }
    out.push_str("state ");
    if args.show_time() {
        out.push_str("submit/start at     ");
    }
    if args.urg {
        out.push_str(" deadline           ");
    }
    if args.ext {
        out.push_str("cpu        mem     io      tckts ovrts otckt ftckt stckt share ");
    }
    pad(out, "queue", qw);
    out.push(' ');
    out.push_str(if args.group.pe_tasks {
        "master"
    } else {
        "slots"
    });
    out.push_str(" ja-task-ID ");
    if args.tasks {
        out.push_str("task-ID state cpu        mem     io      stat failed ");
    }
    out.push('\n');
    // SGE's underline is not the header's length: a base for the fixed columns plus a
    // fixed stretch per optional column group (measured on SGE 8.1.9's output).
    let mut dashes = 83 + qw;
    if args.group.pe_tasks {
        dashes += 1;
    }
    if args.ext {
        dashes += 79;
    }
    if args.tasks {
        dashes += 53;
    }
    if args.urg {
        dashes += 64;
    }
    if args.pri {
        dashes += 35;
    }
    for _ in 0..dashes {
        out.push('-');
    }
    out.push('\n');
}

/// One job line; `with_queue` is false in `-f`, where the queue heads the group.
// The arguments are one line's coordinates (queue, slots, role) plus the shared output
// state; a struct for them would only be unpacked again on the next line.
#[allow(clippy::too_many_arguments)]
fn job_line(
    out: &mut String,
    args: &QstatArgs,
    row: &Row<'_>,
    queue: Option<&str>,
    qw: usize,
    slots: u32,
    role: Role,
    cx: &mut LineCx<'_, '_>,
) {
    if role == Role::Slave {
        return slave_line(out, args, row, queue, qw);
    }
    let job = row.job;
    let p = row.priority();
    let running = row.running();
    right(out, job.id.0.into(), 7);
    out.push(' ');
    cx.prio.write(out, p.prio);
    out.push(' ');
    if args.pri || args.urg {
        let _ = write!(out, "{:7.5} ", p.nurg);
    }
    if args.pri {
        let _ = write!(out, "{:7.5} ", p.npprior);
    }
    if args.pri || args.ext {
        let _ = write!(out, "{:7.5} ", p.ntckts);
    }
    if args.urg {
        let _ = write!(
            out,
            "{:8.0} {:8.0} {:8.0} {:8.0} ",
            p.urg, p.rrcontr, p.wtcontr, p.dlcontr
        );
    }
    if args.pri {
        let _ = write!(out, "{:5} ", job.spec.priority);
    }
    pad(out, &job.spec.name, 10);
    out.push(' ');
    pad(out, &job.submitter.owner, 12);
    out.push(' ');
    if args.ext {
        pad(out, job.spec.project.as_deref().unwrap_or("NA"), 16);
        out.push(' ');
        let department = cx
            .view
            .config
            .department_of(&job.submitter.owner, &job.submitter.group);
        pad(out, &department, 10);
        out.push(' ');
    }
    pad(out, row.state_code().as_str(), 5);
    out.push(' ');
    if args.show_time() {
        let t = running.map_or(job.submitter.submission_time, |t| t.start_time);
        cx.dates.plain(out, t);
        out.push(' ');
    }
    if args.urg {
        match job.spec.deadline {
            Some(d) => {
                cx.dates.plain(out, d);
                out.push(' ');
            }
            None => spaces(out, 20),
        }
    }
    if args.ext {
        let usage: Option<&TaskUsage> = running.and_then(|t| t.usage.as_ref());
        let na = if running.is_some() { "NA" } else { "" };
        match usage {
            Some(u) => {
                cpu_days(out, u.cpu);
                let _ = write!(out, "{:<5.5} {:<5.5} ", u.mem, u.io);
            }
            None => {
                pad(out, na, 10);
                out.push(' ');
                pad(out, na, 7);
                out.push(' ');
                pad(out, na, 7);
                out.push(' ');
            }
        }
        let _ = write!(
            out,
            "{:5} {:5} {:5} {:5} {:5} {:<5.2} ",
            p.tickets as i64, 0, p.otickets as i64, p.ftickets as i64, p.stickets as i64, p.share
        );
    }
    if let Some(q) = queue {
        pad(out, q, qw);
        out.push(' ');
    }
    if args.group.pe_tasks {
        if role == Role::Master {
            out.push_str("MASTER ");
        } else {
            spaces(out, 7);
        }
    } else {
        let _ = write!(out, "{slots:5} ");
    }
    if !row.task_text(out) {
        spaces(out, 7);
    }
    // `-pri` and `-ext` end with the active policy's own terms as `name=value` words; the
    // SGE policy has none, so its lines stay SGE's.
    if args.pri || args.ext {
        for (k, v) in &p.policy_terms {
            out.push(' ');
            out.extend(k.chars().map(|c| if c == ' ' { '_' } else { c }));
            out.push('=');
            out.push_str(v);
        }
    }
    out.push('\n');
    if args.requests {
        requests(out, row, cx.view);
    }
}

/// What a line of `-g t` stands for: the master task of a job, or one more slot of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A job line without `-g t`, or a pending job with it.
    Job,
    /// The first slot of a running task (`MASTER`).
    Master,
    /// Each further slot of a parallel task (`SLAVE`), printed without the job's columns.
    Slave,
}

/// One line of a queue instance's job list under `-f`: which row, how many of its task's
/// slots sit in that instance, and the line's role.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueLine {
    pub row: usize,
    pub slots: u32,
    pub role: Role,
}

/// The job lines of every queue instance under `-f`, gathered in one walk over the rows: with
/// 1,000 queue instances, searching every running task for each instance would be a million
/// `granted` calls.
pub(crate) struct QueueLines(HashMap<String, Vec<QueueLine>>);

impl QueueLines {
    /// Lines in row order and, within a task, master first; with `-g t` (`pe_tasks`) one line
    /// per slot (`MASTER`, then `SLAVE`s), else one line per instance with its slot count.
    pub(crate) fn gather(rows: &[Row<'_>], pe_tasks: bool) -> Self {
        let mut by_queue: HashMap<String, Vec<QueueLine>> = HashMap::new();
        for (row, r) in rows.iter().enumerate() {
            let Some(t) = r.running() else { continue };
            for (i, (name, n)) in granted(t).into_iter().enumerate() {
                let lines = by_queue.entry(name).or_default();
                if pe_tasks {
                    lines.extend((0..n).map(|k| QueueLine {
                        row,
                        slots: 1,
                        role: if i == 0 && k == 0 {
                            Role::Master
                        } else {
                            Role::Slave
                        },
                    }));
                } else {
                    lines.push(QueueLine {
                        row,
                        slots: n,
                        role: Role::Job,
                    });
                }
            }
        }
        QueueLines(by_queue)
    }

    /// The lines of the queue instance `name` (`queue@host`).
    pub(crate) fn of(&self, name: &str) -> &[QueueLine] {
        self.0.get(name).map_or(&[], Vec::as_slice)
    }
}

/// The `(queue instance, slots)` of a running task, master first.
pub(crate) fn granted(t: &crate::model::RunningTask) -> Vec<(String, u32)> {
    if t.granted.is_empty() {
        vec![(format!("{}@{}", t.queue, t.host), t.slots)]
    } else {
        t.granted
            .iter()
            .map(|(h, q, n)| (format!("{q}@{h}"), *n))
            .collect()
    }
}

/// A `SLAVE` line of `-g t`: SGE leaves the job's own columns blank (its widths, including
/// its 18 blanks for the 6-wide `ppri` column).
fn slave_line(out: &mut String, args: &QstatArgs, row: &Row<'_>, queue: Option<&str>, qw: usize) {
    let mut blank = 16;
    if args.pri || args.urg {
        blank += 8;
    }
    if args.pri {
        blank += 8;
    }
    if args.pri || args.ext {
        blank += 8;
    }
    if args.urg {
        blank += 36;
    }
    if args.pri {
        blank += 18;
    }
    blank += 24;
    if args.ext {
        blank += 28;
    }
    blank += 6;
    if args.show_time() {
        blank += 20;
    }
    if args.urg {
        blank += 20;
    }
    if args.ext {
        blank += 28 + 36;
    }
    spaces(out, blank);
    if let Some(q) = queue {
        pad(out, q, qw);
        out.push(' ');
    }
    out.push_str("SLAVE  ");
    if !row.task_text(out) {
        spaces(out, 7);
    }
    out.push('\n');
}

/// `-r`: the requests of a job, under its line.
fn requests(out: &mut String, row: &Row<'_>, view: &View<'_>) {
    let job = row.job;
    let spec = &job.spec;
    let _ = writeln!(out, "       Full jobname:     {}", spec.name);
    if let Some(t) = row.running() {
        let _ = writeln!(out, "       Master Queue:     {}@{}", t.queue, t.host);
    }
    if let Some(pe) = &spec.pe {
        let _ = writeln!(
            out,
            "       Requested PE:     {} {}",
            pe.name,
            detail::slot_range(pe.range)
        );
        if let Some(t) = row.running() {
            let _ = writeln!(out, "       Granted PE:       {} {}", pe.name, t.slots);
        }
    }
    out.push_str("       Hard Resources:   ");
    if spec.hard_resources.is_empty() {
        out.push('\n');
    }
    for (i, r) in spec.hard_resources.iter().enumerate() {
        if i > 0 {
            spaces(out, 25);
        }
        let uc = detail::urgency_contribution(view, r, row.slots());
        let _ = writeln!(out, "{}={} ({uc:.6})", r.name, r.value);
    }
    out.push_str("       Soft Resources:   ");
    if spec.soft_resources.is_empty() {
        out.push('\n');
    }
    for (i, r) in spec.soft_resources.iter().enumerate() {
        if i > 0 {
            spaces(out, 25);
        }
        let _ = writeln!(out, "{}={}", r.name, r.value);
    }
    if !spec.hard_queues.is_empty() {
        let _ = writeln!(
            out,
            "       Hard requested queues: {}",
            spec.hard_queues.join(", ")
        );
    }
    if !spec.soft_queues.is_empty() {
        let _ = writeln!(
            out,
            "       Soft requested queues: {}",
            spec.soft_queues.join(", ")
        );
    }
    if !spec.master_queues.is_empty() {
        let _ = writeln!(
            out,
            "       Master task hard requested queues: {}",
            spec.master_queues.join(", ")
        );
    }
    if !spec.hold_jid.is_empty() {
        let _ = writeln!(
            out,
            "       Predecessor Jobs (request): {}",
            spec.hold_jid.join(", ")
        );
    }
    if !spec.predecessors.is_empty() {
        out.push_str("       Predecessor Jobs: ");
        join_ids(out, &spec.predecessors);
        out.push('\n');
    }
    if !spec.hold_jid_ad.is_empty() {
        let _ = writeln!(
            out,
            "       Predecessor Array Jobs (request): {}",
            spec.hold_jid_ad.join(", ")
        );
    }
    if !spec.array_predecessors.is_empty() {
        out.push_str("       Predecessor Array Jobs: ");
        join_ids(out, &spec.array_predecessors);
        out.push('\n');
    }
    out.push_str("       Binding:          NONE\n");
}

fn join_ids(out: &mut String, ids: &[crate::model::JobId]) {
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{id}");
    }
}

use super::detail;

/// The default job table (and `-ext`, `-urg`, `-pri`, `-r`, `-t`, `-g d`): nothing at all
/// when there are no rows, as SGE prints no header for an empty list.
pub fn jobs(out: &mut String, args: &QstatArgs, view: &View<'_>, rows: &[Row<'_>]) {
    if rows.is_empty() {
        return;
    }
    let qw = queue_width(view);
    out.reserve(rows.len() * 128);
    header(out, args, qw);
    super::fmt::rows_in_order(out, view, rows, 128, |out, row, cx| match row.running() {
        Some(t) if args.group.pe_tasks => {
            let mut first = true;
            for (q, n) in granted(t) {
                for _ in 0..n {
                    let role = if first { Role::Master } else { Role::Slave };
                    first = false;
                    job_line(out, args, row, Some(&q), qw, 1, role, cx);
                }
            }
        }
        Some(t) => {
            let mut queue = String::with_capacity(t.queue.len() + 1 + t.host.len());
            queue.push_str(&t.queue);
            queue.push('@');
            queue.push_str(&t.host);
            job_line(out, args, row, Some(&queue), qw, row.slots(), Role::Job, cx);
        }
        None => job_line(out, args, row, Some(""), qw, row.slots(), Role::Job, cx),
    });
}

/// The queue line of `-f`.
fn queue_line(out: &mut String, q: &QueueInstance<'_>, qw: usize) {
    pad(out, &q.name, qw);
    out.push(' ');
    pad(out, &q.qtype(), 5);
    out.push(' ');
    pad(out, &format!("0/{}/{}", q.slots_used, q.slots_total), 14);
    out.push(' ');
    match q.load_avg {
        Some(l) => pad(out, &format!("{l:.2}"), 8),
        None => pad(out, "-NA-", 8),
    }
    out.push(' ');
    pad(out, &q.arch, 13);
    out.push(' ');
    out.push_str(&q.states());
    out.push('\n');
}

/// `-F`: the queue instance's resources, one `\ttype:name=value` line each.
fn resource_lines(out: &mut String, view: &View<'_>, q: &QueueInstance<'_>, names: &[String]) {
    let all = super::resources::of_instance(
        view.config,
        q,
        view.config.host(&q.host),
        queues::host_load(view, &q.host),
    );
    for r in super::resources::selected(view.config, &all, names) {
        let _ = writeln!(out, "\t{}:{}={}", r.kind, r.name, r.value);
    }
}

/// `-f`: every queue instance with the tasks running in it, then the pending jobs.
pub fn full(out: &mut String, args: &QstatArgs, view: &View<'_>, rows: &[Row<'_>]) {
    let qw = queue_width(view);
    let instances = queues::instances(args, view);
    let mut cx = LineCx::new(view);
    out.reserve(rows.len() * 100);
    pad(out, "queuename", qw);
    out.push_str(" qtype resv/used/tot. load_avg arch          states\n");
    let dashes = qw + 51;
    let by_queue = QueueLines::gather(rows, args.group.pe_tasks);
    for q in &instances {
        let start = out.len();
        for _ in 0..dashes {
            out.push('-');
        }
        out.push('\n');
        queue_line(out, q, qw);
        if args.explain == Some('E')
            && let Some(why) = q.error
        {
            let _ = writeln!(out, "\t{why}");
        }
        if let Some(names) = &args.resources {
            resource_lines(out, view, q, names);
        }
        let lines = by_queue.of(&q.name);
        for line in lines {
            let row = &rows[line.row];
            job_line(out, args, row, None, qw, line.slots, line.role, &mut cx);
        }
        if args.hide_empty && lines.is_empty() && q.slots_used == 0 {
            out.truncate(start);
        }
    }
    let mut pending = rows
        .iter()
        .filter(|r| matches!(r.kind, RowKind::Pending { .. }))
        .peekable();
    if pending.peek().is_some() {
        out.push_str(
            "\n############################################################################\n - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS\n############################################################################\n",
        );
        for row in pending {
            job_line(out, args, row, None, qw, row.slots(), Role::Job, &mut cx);
        }
    }
    let mut zombies = rows
        .iter()
        .filter(|r| matches!(r.kind, RowKind::Zombie))
        .peekable();
    if zombies.peek().is_some() {
        out.push_str(
            "\n############################################################################\n --  FINISHED JOBS  -  FINISHED JOBS  -  FINISHED JOBS  -  FINISHED JOBS  --  \n############################################################################\n",
        );
        for row in zombies {
            job_line(out, args, row, None, qw, row.slots(), Role::Job, &mut cx);
        }
    }
}

/// The numbers of one line of `-g c`.
pub(crate) struct ClusterQueueSummary {
    pub name: String,
    pub load: Option<f64>,
    pub used: u32,
    pub reserved: u32,
    pub available: u32,
    pub total: u32,
    /// Slots of instances in an alarm state or disabled or suspended by their calendar
    /// (`aoACDS`).
    pub alarm: u32,
    /// Slots of instances disabled, suspended, unknown or in error (`cdsuE`).
    pub disabled: u32,
}

/// Sums the queue instances per cluster queue, in configuration order.
pub(crate) fn summaries(args: &QstatArgs, view: &View<'_>) -> Vec<ClusterQueueSummary> {
    let instances = queues::instances(args, view);
    let mut out: Vec<ClusterQueueSummary> = Vec::new();
    let mut names: Vec<&str> = instances.iter().map(|i| i.queue.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mut s = ClusterQueueSummary {
            name: name.to_string(),
            load: None,
            used: 0,
            reserved: 0,
            available: 0,
            total: 0,
            alarm: 0,
            disabled: 0,
        };
        let (mut load_sum, mut load_n) = (0.0, 0u32);
        for i in instances.iter().filter(|i| i.queue.name == name) {
            s.used += i.slots_used;
            s.total += i.slots_total;
            // SGE's order: a state an operator set or must clear counts in `cdsuE`, else a
            // calendar's in `aoACDS`; by slots, as SGE counts them.
            if i.disabled || i.suspended || i.error.is_some() {
                s.disabled += i.slots_total;
            } else if i.calendar_disabled || i.calendar_suspended {
                s.alarm += i.slots_total;
            } else {
                s.available += i.slots_total.saturating_sub(i.slots_used);
            }
            if let Some(l) = i.np_load() {
                load_sum += l;
                load_n += 1;
            }
        }
        if load_n > 0 {
            s.load = Some(load_sum / f64::from(load_n));
        }
        out.push(s);
    }
    out
}

/// `-g c`: the cluster queue summary.
pub fn cluster_summary(out: &mut String, args: &QstatArgs, view: &View<'_>) {
    out.push_str(
        "CLUSTER QUEUE                   CQLOAD   USED    RES  AVAIL  TOTAL aoACDS  cdsuE  \n",
    );
    out.push_str(&"-".repeat(80));
    out.push('\n');
    for s in summaries(args, view) {
        pad(out, &s.name, 30);
        out.push(' ');
        match s.load {
            Some(l) => {
                let _ = write!(out, "{l:7.2} ");
            }
            None => out.push_str("   -NA- "),
        }
        let _ = writeln!(
            out,
            "{:6} {:6} {:6} {:6} {:6} {:6} ",
            s.used, s.reserved, s.available, s.total, s.alarm, s.disabled
        );
    }
}
