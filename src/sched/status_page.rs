//! The status page of `sched_d --metrics` (`http://ADDR/`): a read-only view of the cell for
//! people — queue instances and their slots, jobs with their state and why they wait, the
//! share tree's targets against the usage it decays, and CPU usage per day by user and by
//! project from the accounting file, as charts. It shows what `qstat -u '*'` shows to
//! everyone (no login), changes nothing, and runs no script: plain HTML and inline SVG.
//!
//! The daemon's loop renders the parts that come from its state ([`render_state`], on
//! request, as for a scrape); the HTTP thread adds the charts ([`usage_charts`]), which read
//! the accounting file's last records, and reads the start-time forecast that the loop's
//! part shows ([`super::status_estimates`]).

use crate::config::{ClusterConfig, ShareTreeNode};
use crate::model::{JobRecord, RunState};
use gridspool_policy::sharetree::UsageStore;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// HTML text.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin-bottom:1.5em}th,td{border:1px solid #ccc;padding:.2em .6em;text-align:left}th{background:#eee}td.num{text-align:right}.bar{background:#4a7;height:.8em;display:inline-block}.target{background:#47a;height:.8em;display:inline-block}small.why{color:#666}";

/// The page's head, up to the opening of its body.
pub fn head(cell: &str, now: i64) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>gridspool: {cell}</title><style>{STYLE}</style></head><body>\n<h1>gridspool cell {cell}</h1>\n<p id=\"time\">as of {}</p>\n",
        crate::time::ctime(now),
        cell = esc(cell),
    )
}

/// The slots running tasks hold, by queue instance (`all.q@node1`), counted job by job.
#[derive(Debug, Default)]
pub struct SlotsUsed(pub HashMap<String, u32>);

impl SlotsUsed {
    pub fn add(&mut self, job: &JobRecord) {
        for t in &job.tasks.running {
            for (host, queue, slots) in t.grants() {
                let q = queue.split('@').next().unwrap_or(&queue);
                *self.0.entry(format!("{q}@{host}")).or_default() += slots;
            }
        }
    }

    pub fn of(&self, instance: &str) -> u32 {
        self.0.get(instance).copied().unwrap_or(0)
    }
}

/// A task's state letters as `qstat` prints the common ones.
fn letters(job: &JobRecord, held: bool) -> &'static str {
    if job.error.is_some() {
        "Eqw"
    } else if held {
        "hqw"
    } else {
        "qw"
    }
}

/// What comes from the daemon's state: queue instances, jobs (with `reasons` of each pending
/// one, and when `forecast` expects it to start), the share tree with `usage`.
pub fn render_state(
    config: &ClusterConfig,
    jobs: &[(JobRecord, Vec<String>)],
    usage: &UsageStore,
    forecast: &super::status_estimates::PageForecast,
    now: i64,
) -> String {
    let mut out = String::new();
    // Queue instances.
    let mut used = SlotsUsed::default();
    for (job, _) in jobs {
        used.add(job);
    }
    out.push_str("<h2>Queue instances</h2>\n<table id=\"queues\"><tr><th>queue instance</th><th>slots used</th><th>slots</th><th>use</th></tr>\n");
    for q in &config.queues {
        for h in config.queue_hosts(q) {
            let name = format!("{}@{}", q.name, h.name);
            let u = used.of(&name);
            let slots = config.queue_instance(q, &h.name).slots;
            let width = (u * 100).checked_div(slots).unwrap_or(0).min(100);
            let _ = writeln!(
                out,
                "<tr data-queue=\"{n}\"><td>{n}</td><td class=\"num\">{u}</td><td class=\"num\">{}</td><td><span class=\"bar\" style=\"width:{width}px\"></span></td></tr>",
                slots,
                n = esc(&name),
            );
        }
    }
    out.push_str("</table>\n");
    // Jobs: running tasks, then pending groups with why they wait.
    out.push_str("<h2>Jobs</h2>\n<table id=\"jobs\"><tr><th>job</th><th>name</th><th>owner</th><th>state</th><th>tasks</th><th>slots</th><th>queue</th><th>estimated start</th><th>why pending</th></tr>\n");
    for (job, reasons) in jobs {
        for t in &job.tasks.running {
            let state = match (t.state, t.queue_suspended) {
                (RunState::Transferring, _) => "t",
                (RunState::Suspended, true) => "Ss",
                (RunState::Suspended, false) => "s",
                (RunState::Running, true) => "S",
                (RunState::Running, false) => "r",
            };
            let _ = writeln!(
                out,
                "<tr data-job=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{state}</td><td>{}</td><td class=\"num\">{}</td><td>{}@{}</td><td></td><td></td></tr>",
                job.id,
                job.id,
                esc(&job.spec.name),
                esc(&job.submitter.owner),
                if job.is_array() {
                    t.task.to_string()
                } else {
                    String::new()
                },
                t.slots,
                esc(&t.queue),
                esc(&t.host),
            );
        }
        for g in &job.tasks.pending {
            let _ = writeln!(
                out,
                "<tr data-job=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td></td><td class=\"start\">{}</td><td>{}</td></tr>",
                job.id,
                job.id,
                esc(&job.spec.name),
                esc(&job.submitter.owner),
                letters(job, !g.holds.is_none()),
                if job.is_array() {
                    esc(&g.tasks.to_string())
                } else {
                    String::new()
                },
                job.spec.slots(),
                super::status_estimates::start_cell(forecast, job.id, &g.tasks, job.is_array()),
                esc(&reasons.join("; ")),
            );
        }
    }
    out.push_str("</table>\n");
    // The share tree: each node's share of the whole against its share of the decayed usage.
    out.push_str("<h2>Share tree</h2>\n");
    match &config.share_tree {
        None => out.push_str("<p>No share tree is configured.</p>\n"),
        Some(root) => {
            let decay = crate::acct::decay_config(config);
            let cpu_of = |name: &str| -> f64 {
                usage
                    .user(name)
                    .or_else(|| usage.project(name))
                    .map_or(0.0, |r| r.usage_at(now, &decay).cpu)
            };
            let mut rows = Vec::new();
            share_rows(root, 1.0, 0, &mut rows);
            let total: f64 = rows
                .iter()
                .filter(|r| r.leaf)
                .map(|r| cpu_of(&r.name))
                .sum();
            out.push_str("<table id=\"sharetree\"><tr><th>node</th><th>target</th><th>usage</th><th></th></tr>\n");
            for r in rows {
                let used = if r.leaf && total > 0.0 {
                    cpu_of(&r.name) / total
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    "<tr data-node=\"{n}\"><td>{pad}{n}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{}</td><td><span class=\"target\" style=\"width:{}px\"></span><br><span class=\"bar\" style=\"width:{}px\"></span></td></tr>",
                    r.target * 100.0,
                    if r.leaf {
                        format!("{:.1}%", used * 100.0)
                    } else {
                        String::new()
                    },
                    (r.target * 200.0).round(),
                    (used * 200.0).round(),
                    n = esc(&r.name),
                    pad = "&nbsp;&nbsp;".repeat(r.depth),
                );
            }
            out.push_str("</table>\n");
        }
    }
    out
}

struct ShareRow {
    name: String,
    depth: usize,
    target: f64,
    leaf: bool,
}

fn share_rows(node: &ShareTreeNode, target: f64, depth: usize, out: &mut Vec<ShareRow>) {
    out.push(ShareRow {
        name: node.name.clone(),
        depth,
        target,
        leaf: node.children.is_empty(),
    });
    let sum: u32 = node.children.iter().map(|c| c.shares).sum();
    for c in &node.children {
        let part = if sum == 0 {
            0.0
        } else {
            f64::from(c.shares) / f64::from(sum)
        };
        share_rows(c, target * part, depth + 1, out);
    }
}

/// How much of the accounting file's end the charts read.
const CHART_TAIL_BYTES: u64 = 32 << 20;
/// Days the charts show.
const CHART_DAYS: i64 = 14;

/// CPU seconds per day of the last [`CHART_DAYS`], by owner and by project, from the
/// accounting file's last records, as two inline SVG charts.
pub fn usage_charts(accounting: &std::path::Path, now: i64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut tail = Vec::new();
    if let Ok(mut f) = std::fs::File::open(accounting) {
        let len = f.metadata().map_or(0, |m| m.len());
        let from = len.saturating_sub(CHART_TAIL_BYTES);
        if f.seek(SeekFrom::Start(from)).is_ok() {
            let _ = f.read_to_end(&mut tail);
        }
        if from > 0 {
            let cut = tail
                .iter()
                .position(|&b| b == b'\n')
                .map_or(tail.len(), |i| i + 1);
            tail.drain(..cut);
        }
    }
    let today = now.div_euclid(86_400);
    let first = today - CHART_DAYS + 1;
    let mut by_owner: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_project: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&tail).lines() {
        if line.starts_with('#') {
            continue;
        }
        let Ok(r) = crate::acct::AccountingRecord::parse_line(line) else {
            continue;
        };
        let day = r.end_time.div_euclid(86_400);
        if day < first || day > today {
            continue;
        }
        let i = (day - first) as usize;
        for (map, key) in [(&mut by_owner, &r.owner), (&mut by_project, &r.project)] {
            map.entry(key.clone())
                .or_insert_with(|| vec![0.0; CHART_DAYS as usize])[i] += r.cpu;
        }
    }
    let mut out = String::from("<h2>CPU usage per day</h2>\n");
    out.push_str(&chart("by-user", "by user", &by_owner, first));
    out.push_str(&chart("by-project", "by project", &by_project, first));
    out
}

const COLOURS: [&str; 8] = [
    "#47a", "#4a7", "#a74", "#a47", "#7a4", "#74a", "#777", "#aa4",
];

/// A line chart of the eight largest series (CPU seconds per day).
fn chart(id: &str, title: &str, series: &BTreeMap<String, Vec<f64>>, first_day: i64) -> String {
    let (w, h, left, bottom) = (640.0, 220.0, 60.0, 30.0);
    let mut ranked: Vec<(&String, &Vec<f64>)> = series.iter().collect();
    ranked.sort_by(|a, b| {
        b.1.iter()
            .sum::<f64>()
            .total_cmp(&a.1.iter().sum::<f64>())
            .then(a.0.cmp(b.0))
    });
    ranked.truncate(COLOURS.len());
    let max = ranked
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1.0);
    let mut svg = format!(
        "<h3>{title}</h3>\n<svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">\n<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#888\"/><line x1=\"{left}\" y1=\"10\" x2=\"{left}\" y2=\"{}\" stroke=\"#888\"/>\n<text x=\"4\" y=\"16\" font-size=\"11\">{max:.0} s</text><text x=\"4\" y=\"{}\" font-size=\"11\">0</text>\n",
        w + 160.0,
        h + bottom,
        h,
        w,
        h,
        h,
        h,
    );
    let step = (w - left) / (CHART_DAYS - 1) as f64;
    for d in [0, CHART_DAYS - 1] {
        let _ = writeln!(
            svg,
            "<text x=\"{:.0}\" y=\"{}\" font-size=\"11\">{}</text>",
            left + step * d as f64 - 20.0,
            h + 18.0,
            crate::time::ctime((first_day + d) * 86_400)
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    for (i, (name, values)) in ranked.iter().enumerate() {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(d, v)| {
                format!(
                    "{:.1},{:.1}",
                    left + step * d as f64,
                    h - (v / max) * (h - 10.0)
                )
            })
            .collect();
        let _ = writeln!(
            svg,
            "<polyline data-series=\"{n}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{c}\">{n}</text>",
            points.join(" "),
            w + 10.0,
            20.0 + 16.0 * i as f64,
            n = esc(name),
            c = COLOURS[i],
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_targets_multiply_down_the_tree() {
        let tree = ShareTreeNode {
            name: "Root".into(),
            shares: 1,
            node_type: 0,
            children: vec![
                ShareTreeNode {
                    name: "a".into(),
                    shares: 3,
                    node_type: 0,
                    children: vec![],
                },
                ShareTreeNode {
                    name: "b".into(),
                    shares: 1,
                    node_type: 0,
                    children: vec![ShareTreeNode {
                        name: "c".into(),
                        shares: 1,
                        node_type: 0,
                        children: vec![],
                    }],
                },
            ],
        };
        let mut rows = Vec::new();
        share_rows(&tree, 1.0, 0, &mut rows);
        let t: Vec<(String, f64)> = rows.iter().map(|r| (r.name.clone(), r.target)).collect();
        assert_eq!(
            t,
            [
                ("Root".to_string(), 1.0),
                ("a".to_string(), 0.75),
                ("b".to_string(), 0.25),
                ("c".to_string(), 0.25)
            ]
        );
        assert_eq!(esc("<a&'\">"), "&lt;a&amp;&#39;&quot;&gt;");
    }
}
