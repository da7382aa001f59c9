//! The status page's start-time estimates (issue 28): the `estimated start` column of its
//! jobs table and the "Pending work by user" section, from the forecast `sched_d`'s forecast
//! process last wrote (`daemon/estimates`).
//!
//! The HTTP thread reads the forecast ([`PageForecast::read`], a file of a line per pending
//! job, 100,000 of them in a large cell) and hands it to the daemon's loop with the request,
//! so that the loop, which owns the jobs, only looks estimates up and never waits on a disk.

use crate::compat::qstat::start::{StartView, of_tasks};
use crate::model::{JobId, StartEstimate, StartForecast, TaskSet};
use crate::time::qstat_date;
use std::collections::BTreeMap;
use std::fmt::Write;

use super::status_page::esc;

/// The forecast as the page found it.
#[derive(Debug)]
pub enum PageForecast {
    /// None has been written yet (or one of another version).
    Missing,
    /// The file is there but could not be read: why.
    Unreadable(String),
    Made(Box<StartForecast>),
}

impl PageForecast {
    /// Reads `daemon/estimates` (by the HTTP thread, not the daemon's loop).
    pub fn read(spool: &crate::spool::Spool) -> Self {
        match spool.read_estimates() {
            Ok(Some(f)) => PageForecast::Made(Box::new(f)),
            Ok(None) => PageForecast::Missing,
            Err(e) => PageForecast::Unreadable(e.to_string()),
        }
    }

    fn view(&self) -> StartView<'_> {
        StartView {
            forecast: match self {
                PageForecast::Made(f) => Some(f),
                PageForecast::Missing | PageForecast::Unreadable(_) => None,
            },
        }
    }
}

/// The `estimated start` cell of a pending group (`tasks` of job `id`): the time in
/// `qstat`'s date format (with the seconds since the epoch as `data-start`), or `unknown` /
/// `never` with the reason beside it and as the title. An array's group whose tasks start
/// at different times lists each part with its tasks.
pub fn start_cell(forecast: &PageForecast, id: JobId, tasks: &TaskSet, array: bool) -> String {
    let parts = of_tasks(forecast.view(), id, tasks);
    let many = parts.len() > 1;
    let mut out = String::new();
    for (i, (set, e)) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        if array && many {
            let _ = write!(out, "{}: ", esc(&set.to_string()));
        }
        match e {
            StartEstimate::At { time, .. } => {
                let _ = write!(
                    out,
                    "<span class=\"start\" data-start=\"{time}\">{}</span>",
                    qstat_date(*time)
                );
            }
            StartEstimate::Unknown { why } | StartEstimate::Never { why } => {
                let word = if matches!(e, StartEstimate::Never { .. }) {
                    "never"
                } else {
                    "unknown"
                };
                let _ = write!(
                    out,
                    "<span class=\"start\" data-start=\"{word}\" title=\"{w}\">{word}</span> <small class=\"why\">{w}</small>",
                    w = esc(why),
                );
            }
        }
    }
    out
}

/// One user's pending tasks by when they are expected to start.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct UserPending {
    pub tasks: u64,
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub within_hour: u64,
    pub within_day: u64,
    pub later: u64,
    pub unknown: u64,
    pub never: u64,
    /// Tasks by the minute they start in (for the timeline of the next day).
    starts: BTreeMap<i64, u64>,
}

/// Every user's pending work, added job by job.
#[derive(Debug, Default)]
pub struct PendingWork {
    now: i64,
    pub users: BTreeMap<String, UserPending>,
}

const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

impl PendingWork {
    pub fn new(now: i64) -> Self {
        PendingWork {
            now,
            users: BTreeMap::new(),
        }
    }

    /// Adds `n` pending tasks of `owner` expected to start as `e` says. A time already past
    /// (the forecast is a few seconds old) counts as within the hour.
    pub fn add(&mut self, owner: &str, n: u64, e: &StartEstimate) {
        let u = self.users.entry(owner.to_string()).or_default();
        u.tasks += n;
        match e {
            StartEstimate::At { time, .. } => {
                let t = *time;
                u.first = Some(u.first.map_or(t, |f| f.min(t)));
                u.last = Some(u.last.map_or(t, |l| l.max(t)));
                let ahead = t - self.now;
                if ahead <= HOUR {
                    u.within_hour += n;
                } else if ahead <= DAY {
                    u.within_day += n;
                } else {
                    u.later += n;
                }
                if ahead <= DAY {
                    *u.starts.entry(ahead.max(0) / 60).or_default() += n;
                }
            }
            StartEstimate::Unknown { .. } => u.unknown += n,
            StartEstimate::Never { .. } => u.never += n,
        }
    }

    /// Adds the pending `tasks` of job `id` of `owner` as `forecast` sees them.
    pub fn add_job(&mut self, forecast: &PageForecast, owner: &str, id: JobId, tasks: &TaskSet) {
        for (set, e) in of_tasks(forecast.view(), id, tasks) {
            self.add(owner, set.len(), &e);
        }
    }

    /// What the forecast says of job `id`'s tasks (how many, and their estimate), if it has
    /// the job: when that many are still pending, the daemon counts them without decoding
    /// the job's record.
    pub fn forecast_of(forecast: &PageForecast, id: JobId) -> Option<Vec<(u64, &StartEstimate)>> {
        match forecast {
            PageForecast::Made(f) => f
                .job(id)
                .map(|j| j.tasks.iter().map(|t| (t.tasks.len(), &t.start)).collect()),
            PageForecast::Missing | PageForecast::Unreadable(_) => None,
        }
    }

    /// The "Pending work by user" section: each user with pending tasks, when the first and
    /// the last of them start, how many start within the hour, the day, later, at no known
    /// time or never, and a timeline of the next 24 hours (a tick per minute with starts).
    pub fn render(&self, forecast: &PageForecast, estimates_enabled: bool) -> String {
        let mut out = String::from("<h2>Pending work by user</h2>\n");
        match forecast {
            PageForecast::Made(f) => {
                let _ = writeln!(
                    out,
                    "<p id=\"forecast\">Forecast made at {} in {} ms, run times from {}.</p>",
                    qstat_date(f.made_at),
                    f.took_ms,
                    esc(&f.run_times)
                );
            }
            PageForecast::Missing if estimates_enabled => out.push_str(
                "<p id=\"forecast\">No forecast yet: sched_d makes one after its next scheduling pass.</p>\n",
            ),
            PageForecast::Missing => out.push_str(
                "<p id=\"forecast\">No forecast yet: start-time estimates are off (scheduler.start_estimates.enabled).</p>\n",
            ),
            PageForecast::Unreadable(why) => {
                let _ = writeln!(
                    out,
                    "<p id=\"forecast\">The forecast could not be read: {}</p>",
                    esc(why)
                );
            }
        }
        if self.users.is_empty() {
            out.push_str("<p>No pending jobs.</p>\n");
            return out;
        }
        out.push_str("<table id=\"pending-work\"><tr><th>user</th><th>pending tasks</th><th>first start</th><th>last start</th><th>within 1 h</th><th>within 24 h</th><th>later</th><th>unknown</th><th>never</th><th>next 24 h</th></tr>\n");
        let date = |t: Option<i64>| t.map(qstat_date).unwrap_or_default();
        for (user, u) in &self.users {
            let _ = writeln!(
                out,
                "<tr data-user=\"{n}\"><td>{n}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                u.tasks,
                date(u.first),
                date(u.last),
                u.within_hour,
                u.within_day,
                u.later,
                u.unknown,
                u.never,
                timeline(u),
                n = esc(user),
            );
        }
        out.push_str("</table>\n");
        out
    }
}

/// Width of the timeline in pixels: the 24 hours ahead, 6 minutes a pixel.
const TIMELINE_WIDTH: i64 = 240;

/// A user's starts over the next 24 hours as a small inline SVG: a tick per pixel with
/// starts, taller for more, marks at every 6 hours.
fn timeline(u: &UserPending) -> String {
    let mut by_pixel: BTreeMap<i64, u64> = BTreeMap::new();
    for (minute, n) in &u.starts {
        *by_pixel
            .entry(minute * 60 * TIMELINE_WIDTH / DAY)
            .or_default() += n;
    }
    let most = by_pixel.values().copied().max().unwrap_or(1).max(1) as f64;
    let mut svg = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"18\" role=\"img\"><line x1=\"0\" y1=\"17\" x2=\"{TIMELINE_WIDTH}\" y2=\"17\" stroke=\"#888\"/>",
        TIMELINE_WIDTH + 1
    );
    for h in (0..=24).step_by(6) {
        let x = h * TIMELINE_WIDTH / 24;
        let _ = write!(
            svg,
            "<line x1=\"{x}\" y1=\"13\" x2=\"{x}\" y2=\"17\" stroke=\"#888\"/>"
        );
    }
    for (x, n) in by_pixel {
        let height = 3.0 + 11.0 * (n as f64 / most);
        let _ = write!(
            svg,
            "<line x1=\"{x}\" y1=\"{:.1}\" x2=\"{x}\" y2=\"17\" stroke=\"#47a\" stroke-width=\"1.5\"><title>{n} at +{}:{:02}</title></line>",
            17.0 - height,
            x * DAY / TIMELINE_WIDTH / HOUR,
            x * DAY / TIMELINE_WIDTH % HOUR / 60,
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FORECAST_SCHEMA_VERSION, JobStartEstimate, TaskIdRange, TaskStartEstimate};

    fn at(time: i64) -> StartEstimate {
        StartEstimate::At {
            time,
            queue: "all.q".into(),
            hosts: vec!["node1".into()],
            slots: 1,
        }
    }

    #[test]
    fn pending_tasks_fall_in_the_buckets_of_their_start() {
        let now = 1_800_000_000;
        let mut w = PendingWork::new(now);
        w.add("ann", 2, &at(now - 5));
        w.add("ann", 1, &at(now + 2 * HOUR));
        w.add("ann", 3, &at(now + 2 * DAY));
        w.add("ann", 1, &StartEstimate::Unknown { why: "held".into() });
        w.add("bob", 4, &StartEstimate::Never { why: "no".into() });
        let ann = &w.users["ann"];
        assert_eq!(
            (ann.tasks, ann.within_hour, ann.within_day, ann.later),
            (7, 2, 1, 3)
        );
        assert_eq!((ann.unknown, ann.never), (1, 0));
        assert_eq!((ann.first, ann.last), (Some(now - 5), Some(now + 2 * DAY)));
        // The timeline holds the next day only: the start now and the one in two hours.
        assert_eq!(ann.starts.values().sum::<u64>(), 3);
        let bob = &w.users["bob"];
        assert_eq!((bob.tasks, bob.never, bob.first), (4, 4, None));
        let page = w.render(&PageForecast::Missing, true);
        assert!(page.contains("No forecast yet"), "{page}");
        assert!(page.contains("<tr data-user=\"ann\"><td>ann</td><td class=\"num\">7</td>"));
        assert_eq!(timeline(ann).matches("<title>").count(), 2);
    }

    #[test]
    fn an_array_group_lists_each_part_of_its_tasks() {
        let range = |a, b| TaskSet::from_range(TaskIdRange::new(a, b, 1));
        let forecast = PageForecast::Made(Box::new(StartForecast {
            v: FORECAST_SCHEMA_VERSION,
            made_at: 1_800_000_000,
            took_ms: 1,
            run_times: "limits".into(),
            jobs: vec![JobStartEstimate {
                job: JobId(7),
                tasks: vec![
                    TaskStartEstimate {
                        tasks: range(1, 2),
                        start: at(1_800_000_600),
                    },
                    TaskStartEstimate {
                        tasks: range(3, 3),
                        start: StartEstimate::Never {
                            why: "a <queue>".into(),
                        },
                    },
                ],
            }],
        }));
        let cell = start_cell(&forecast, JobId(7), &range(1, 3), true);
        assert!(
            cell.starts_with("1,2: <span class=\"start\" data-start=\"1800000600\">"),
            "{cell}"
        );
        assert!(
            cell.contains("3: <span class=\"start\" data-start=\"never\" title=\"a &lt;queue&gt;\">never</span>"),
            "{cell}"
        );
        // A job the forecast has not seen yet waits for the next one.
        let cell = start_cell(&forecast, JobId(8), &range(1, 1), false);
        assert!(cell.contains("data-start=\"unknown\""), "{cell}");
        assert!(cell.contains("not in the last forecast"), "{cell}");
    }
}
