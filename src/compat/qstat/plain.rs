//! The plain job table (`qstat`, `-u`, `-s`, `-g d`) from [`JobLine`]s: the jobs as the
//! listing index holds them, read in place (`Spool::with_job_lines`), instead of a
//! `JobRecord` per job. What a user and a workflow tool's poll type most is this table, and
//! building 1.4 kB records it prints a dozen fields of was half its cost.
//!
//! The rows and the line are those of [`super::rows::select`] and `table::jobs` for these
//! options, byte for byte (`qstat::the_plain_table_is_the_full_paths` compares both over a
//! varied cell); every other output keeps the records ([`serves`]).

use super::fmt::{number, pad, right, spaces};
use super::rows::{PendingState, StateCode, UserSelection, pending_selected, task_code};
use super::{QstatArgs, Rendered, UserFilter, View};
use crate::model::{JobId, RunState, TaskId, TaskSet};
use crate::spool::{JobLine, JobLines, RunningLine, TaskRanges};
use std::cmp::Ordering;

/// Whether the output of `args` is the plain job table alone, which [`render`] prints.
pub fn serves(args: &QstatArgs) -> bool {
    !args.help
        && args.job_detail.is_none()
        && !args.requests
        && !args.xml
        && !args.json
        && !args.start
        && !args.ext
        && !args.urg
        && !args.pri
        && !args.full
        && args.explain.is_none()
        && !args.tasks
        && !args.group.cluster_summary
        && !args.group.pe_tasks
        && args.resources.is_none()
        && !super::queues::queue_selection_active(args)
}

/// The tasks a pending line stands for: as stored, or (when some were restarted) the part
/// of its group the line shows.
enum Tasks<'b> {
    Stored(TaskRanges<'b>),
    Owned(TaskSet),
}

/// What a line shows, small enough that sorting 100,000 pending lines moves little: a
/// pending line names its group, whose tasks are read again when the line is written, as
/// `rows::RowKind` does; a running task (at most one per slot) is kept whole.
enum Kind<'b> {
    Running(Box<RunningLine<'b>>),
    Pending {
        group: u32,
        /// One task of the group, with `-g d`.
        task: Option<TaskId>,
        state: PendingState,
    },
    Zombie,
}

struct Row<'j, 'b> {
    job: &'j JobLine<'b>,
    kind: Kind<'b>,
}

impl Row<'_, '_> {
    fn state_code(&self) -> StateCode {
        match &self.kind {
            Kind::Running(t) => task_code(
                t.state,
                t.deleting,
                t.queue_suspended,
                t.holds.any(),
                t.restarted,
            ),
            Kind::Pending { state, .. } => state.code().into(),
            Kind::Zombie => "z".into(),
        }
    }
}

/// The part of pending group `ranges` a line shows: its restarted tasks, or the others.
fn pending_tasks<'b>(job: &JobLine<'b>, ranges: TaskRanges<'b>, restarted: bool) -> Tasks<'b> {
    if job.restarted.is_empty() {
        return Tasks::Stored(ranges);
    }
    let again = job.restarted.to_task_set();
    let group = ranges.to_task_set();
    if restarted {
        Tasks::Owned(group.intersection(&again))
    } else {
        let mut rest = group;
        rest.remove_all(&again);
        Tasks::Owned(rest)
    }
}

fn running_selected(args: &QstatArgs, t: &RunningLine<'_>) -> bool {
    match t.state {
        _ if t.stopped() => args.states.suspended,
        RunState::Running | RunState::Transferring => args.states.running,
        RunState::Suspended => args.states.suspended,
    }
}

/// The rows, in `rows::select`'s order: running tasks by queue instance, job and task, then
/// pending groups by priority, submission and job id, then zombies.
fn select<'j, 'b>(args: &QstatArgs, view: &View<'_>, lines: &'j JobLines<'b>) -> Vec<Row<'j, 'b>> {
    let no_names = Vec::new();
    let users = UserSelection::new(match &args.users {
        UserFilter::Names(n) => n,
        _ => &no_names,
    });
    let selected = |job: &JobLine<'_>| match &args.users {
        UserFilter::Caller => job.owner == view.caller,
        UserFilter::All => true,
        UserFilter::Names(_) => users.selects_owner(job.owner, job.gid),
    };
    let alive = |id: JobId| lines.jobs.binary_search_by_key(&id, |j| j.id).is_ok();
    let mut running: Vec<Row<'j, 'b>> = Vec::new();
    // Sized for one line per job: growing it would copy it, into fresh pages each time.
    let mut pending: Vec<Row<'j, 'b>> = Vec::with_capacity(lines.jobs.len());
    let mut zombies: Vec<Row<'j, 'b>> = Vec::new();
    // A job's pending groups as its lines show them: one vector for all jobs.
    let mut groups: Vec<(u32, TaskRanges<'b>, PendingState)> = Vec::new();
    for job in &lines.jobs {
        if !selected(job) {
            continue;
        }
        if args.states.zombie && job.finished > 0 {
            zombies.push(Row {
                job,
                kind: Kind::Zombie,
            });
        }
        for t in job.running.iter() {
            if running_selected(args, &t) {
                running.push(Row {
                    job,
                    kind: Kind::Running(Box::new(t)),
                });
            }
        }
        if job.pending.is_empty() {
            continue;
        }
        let start_time = job.start_time.is_some_and(|t| t > view.now);
        let dependency = job.predecessors.iter().any(alive);
        let array_dependency = job.array_predecessors.iter().any(alive);
        groups.clear();
        for (group, (ranges, holds)) in (0u32..).zip(job.pending.iter()) {
            if ranges.is_empty() {
                continue;
            }
            let state = PendingState {
                holds,
                start_time,
                dependency,
                array_dependency,
                error: job.error,
                restarted: false,
            };
            if !job.restarted.is_empty() {
                let tasks = ranges.to_task_set();
                let again = tasks.intersection(&job.restarted.to_task_set());
                if !again.is_empty() {
                    groups.push((
                        group,
                        ranges,
                        PendingState {
                            restarted: true,
                            ..state
                        },
                    ));
                }
                if again.len() == tasks.len() {
                    continue;
                }
            }
            groups.push((group, ranges, state));
        }
        groups.retain(|(_, _, s)| pending_selected(args, s));
        groups.sort_by_key(|(_, _, s)| s.held());
        for &(group, ranges, state) in &groups {
            if args.group.each_task && job.is_array() {
                let each: Vec<TaskId> = match &pending_tasks(job, ranges, state.restarted) {
                    Tasks::Stored(r) => r
                        .iter()
                        .flat_map(|r| (r.first..=r.last).step_by(r.step as usize))
                        .collect(),
                    Tasks::Owned(set) => set.iter().collect(),
                };
                for t in each {
                    pending.push(Row {
                        job,
                        kind: Kind::Pending {
                            group,
                            task: Some(t),
                            state,
                        },
                    });
                }
            } else {
                pending.push(Row {
                    job,
                    kind: Kind::Pending {
                        group,
                        task: None,
                        state,
                    },
                });
            }
        }
    }
    let task_of = |r: &Row<'_, 'b>| match &r.kind {
        Kind::Running(t) => (t.queue, t.host, t.task),
        _ => ("", "", 0),
    };
    running.sort_by(|a, b| {
        let (aq, ah, at) = task_of(a);
        let (bq, bh, bt) = task_of(b);
        aq.cmp(bq)
            .then_with(|| ah.cmp(bh))
            .then_with(|| a.job.id.cmp(&b.job.id))
            .then_with(|| at.cmp(&bt))
    });
    // Stable: groups and tasks of one job keep their order.
    pending.sort_by(|a, b| {
        b.job
            .prio
            .partial_cmp(&a.job.prio)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.job.submission_time.cmp(&b.job.submission_time))
            .then_with(|| a.job.id.cmp(&b.job.id))
    });
    if args.states.zombie {
        for job in &lines.ended {
            if job.finished > 0 && selected(job) {
                zombies.push(Row {
                    job,
                    kind: Kind::Zombie,
                });
            }
        }
        zombies.sort_by_key(|r| r.job.id);
    }
    // Running lines first: the few moved in before the many, which move once, in place.
    pending.reserve(running.len() + zombies.len());
    pending.splice(0..0, running);
    pending.append(&mut zombies);
    pending
}

/// `qstat`'s `ja-task-ID` form of stored ranges (`TaskSet`'s `Display`).
fn write_ranges(out: &mut String, ranges: impl Iterator<Item = crate::model::TaskIdRange>) {
    for (i, r) in ranges.enumerate() {
        if i > 0 {
            out.push(',');
        }
        number(out, r.first.into());
        if r.is_single() {
            continue;
        }
        out.push(if r.first + r.step == r.last { ',' } else { '-' });
        number(out, r.last.into());
        if r.first + r.step != r.last {
            out.push(':');
            number(out, r.step.into());
        }
    }
}

/// The `ja-task-ID` column of an array job's row (`Row::task_text`).
fn task_text(out: &mut String, row: &Row<'_, '_>) -> bool {
    let job = row.job;
    let Some(array) = job.array else {
        return false;
    };
    match &row.kind {
        Kind::Running(t) => number(out, t.task.into()),
        Kind::Pending { task: Some(t), .. } => number(out, (*t).into()),
        Kind::Pending {
            group,
            task: None,
            state,
        } => {
            let ranges = job.pending.iter().nth(*group as usize).map(|(r, _)| r);
            match pending_tasks(job, ranges.unwrap_or_default(), state.restarted) {
                Tasks::Stored(r) => write_ranges(out, r.iter()),
                Tasks::Owned(set) => write_ranges(out, set.ranges().iter().copied()),
            }
        }
        Kind::Zombie if job.finished_tasks.is_empty() => {
            write_ranges(out, TaskSet::from_range(array).ranges().iter().copied())
        }
        Kind::Zombie => write_ranges(out, job.finished_tasks.iter()),
    }
    true
}

/// The plain job table of `args` (which [`serves`] accepted) over `lines`; `view` gives
/// the configuration, the caller and the clock (its jobs are not read).
pub fn render(args: &QstatArgs, view: &View<'_>, lines: &JobLines<'_>) -> Rendered {
    let mut r = Rendered::default();
    let rows = select(args, view, lines);
    if rows.is_empty() {
        return r;
    }
    let out = &mut r.stdout;
    let qw = super::table::queue_width(view);
    out.reserve(rows.len() * 128);
    super::table::header(out, args, qw);
    super::fmt::rows_in_order(out, view, &rows, 128, |out, row, cx| {
        let job = row.job;
        right(out, job.id.0.into(), 7);
        out.push(' ');
        cx.prio.write(out, job.prio);
        out.push(' ');
        pad(out, job.name, 10);
        out.push(' ');
        pad(out, job.owner, 12);
        out.push(' ');
        pad(out, row.state_code().as_str(), 5);
        out.push(' ');
        let (time, slots) = match &row.kind {
            Kind::Running(t) => (t.start_time, t.slots),
            _ => (job.submission_time, job.slots()),
        };
        cx.dates.plain(out, time);
        out.push(' ');
        match &row.kind {
            Kind::Running(t) if t.queue.is_ascii() && t.host.is_ascii() => {
                let len = t.queue.len() + 1 + t.host.len();
                if len <= qw {
                    out.push_str(t.queue);
                    out.push('@');
                    out.push_str(t.host);
                    spaces(out, qw - len);
                } else {
                    pad(out, &format!("{}@{}", t.queue, t.host), qw);
                }
            }
            Kind::Running(t) => pad(out, &format!("{}@{}", t.queue, t.host), qw),
            _ => spaces(out, qw),
        }
        out.push(' ');
        right(out, slots.into(), 5);
        out.push(' ');
        if !task_text(out, row) {
            spaces(out, 7);
        }
        out.push('\n');
    });
    r
}
