//! What a replay did to the workload: per user, group and queue the wait (mean, median,
//! 95th percentile), the bounded slowdown, the share of the CPU time each got; the cluster's
//! utilisation. As text for people and as JSON for scripts.

use super::replay::{JobRun, Replay};
use crate::config::ClusterConfig;
use serde::Serialize;
use std::collections::BTreeMap;

/// Waits and slowdowns of one set of jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub jobs: usize,
    pub wait_mean: f64,
    pub wait_median: f64,
    pub wait_p95: f64,
    /// Bounded slowdown: (wait + run) / max(run, 10 s), averaged.
    pub slowdown_mean: f64,
    /// This set's part of all the CPU time (slot-seconds) delivered.
    pub cpu_share: f64,
    /// Runs of these jobs that preemption killed.
    pub preempted: u32,
}

/// The whole report of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub name: String,
    pub all: Stats,
    pub by_user: BTreeMap<String, Stats>,
    pub by_group: BTreeMap<String, Stats>,
    pub by_queue: BTreeMap<String, Stats>,
    /// By `-P` project, and by Qube! cluster (when some job has one other than `/`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_project: BTreeMap<String, Stats>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_cluster: BTreeMap<String, Stats>,
    /// The shares promised and achieved, over time.
    pub shares: super::shares::Shares,
    /// Preemptions decided (killed or passive).
    pub preemptions: usize,
    /// Slot-seconds used (by killed runs too) over slot-seconds offered between the first
    /// submission and the last end.
    pub utilisation: f64,
    pub never_started: usize,
    pub passes: u64,
    /// Jobs (array tasks) whose CPU time the workload does not give (a `qsub` line without
    /// `cpu=`, an SWF job without field 6), charged to the share tree as their run time on
    /// every slot; 0 under a configuration without a share tree (nothing is charged CPU).
    pub cpu_assumed: usize,
}

pub(crate) fn percentile(sorted: &[i64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

fn cpu(r: &JobRun) -> f64 {
    (r.end - r.start) as f64 * f64::from(r.slots)
}

fn stats(runs: &[&JobRun], total_cpu: f64) -> Stats {
    let mut waits: Vec<i64> = runs.iter().map(|r| r.wait()).collect();
    waits.sort_unstable();
    let n = runs.len().max(1) as f64;
    let median = if waits.is_empty() {
        0.0
    } else if waits.len() % 2 == 1 {
        waits[waits.len() / 2] as f64
    } else {
        (waits[waits.len() / 2 - 1] + waits[waits.len() / 2]) as f64 / 2.0
    };
    Stats {
        jobs: runs.len(),
        wait_mean: waits.iter().sum::<i64>() as f64 / n,
        wait_median: median,
        wait_p95: percentile(&waits, 0.95),
        slowdown_mean: runs
            .iter()
            .map(|r| {
                let run = (r.end - r.start).max(0) as f64;
                (r.wait() as f64 + run) / run.max(10.0)
            })
            .sum::<f64>()
            / n,
        cpu_share: if total_cpu > 0.0 {
            runs.iter().map(|r| cpu(r)).sum::<f64>() / total_cpu
        } else {
            0.0
        },
        preempted: runs.iter().map(|r| r.preempted).sum(),
    }
}

fn grouped(
    runs: &[JobRun],
    key: impl Fn(&JobRun) -> Option<&str>,
    total_cpu: f64,
) -> BTreeMap<String, Stats> {
    let mut groups: BTreeMap<String, Vec<&JobRun>> = BTreeMap::new();
    for r in runs {
        if let Some(k) = key(r) {
            groups.entry(k.to_string()).or_default().push(r);
        }
    }
    groups
        .into_iter()
        .map(|(k, v)| (k, stats(&v, total_cpu)))
        .collect()
}

/// The report of `replay` under the configuration called `name`.
pub fn report(name: &str, config: &ClusterConfig, replay: &Replay) -> Report {
    let total_slots: u32 = config.hosts.iter().map(|h| config.host_slots(h)).sum();
    let total_cpu: f64 = replay.runs.iter().map(cpu).sum();
    let all: Vec<&JobRun> = replay.runs.iter().collect();
    let span = (replay.span.1 - replay.span.0).max(1) as f64;
    let clusters = replay.runs.iter().any(|r| r.cluster != "/");
    Report {
        name: name.to_string(),
        all: stats(&all, total_cpu),
        by_user: grouped(&replay.runs, |r| Some(&r.user), total_cpu),
        by_group: grouped(&replay.runs, |r| Some(&r.group), total_cpu),
        by_queue: grouped(&replay.runs, |r| Some(&r.queue), total_cpu),
        by_project: grouped(&replay.runs, |r| r.project.as_deref(), total_cpu),
        by_cluster: grouped(
            &replay.runs,
            |r| clusters.then_some(r.cluster.as_str()),
            total_cpu,
        ),
        shares: super::shares::shares(config, replay),
        preemptions: replay.preemptions.len(),
        // Killed runs held their slots too.
        utilisation: (total_cpu + replay.preempted_runs.iter().map(cpu).sum::<f64>())
            / (span * f64::from(total_slots.max(1))),
        never_started: replay.never_started.len(),
        passes: replay.passes,
        cpu_assumed: if config.share_tree.is_some() {
            replay.cpu_assumed
        } else {
            0
        },
    }
}

/// The reports side by side, a table per grouping.
pub fn text(reports: &[Report]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24} {:>8} {:>10} {:>10} {:>10} {:>9} {:>7} {:>6} {:>8}",
        "configuration",
        "jobs",
        "wait mean",
        "median",
        "p95",
        "slowdown",
        "util",
        "unrun",
        "preempt"
    );
    for r in reports {
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>9.2} {:>6.1}% {:>6} {:>8}",
            r.name,
            r.all.jobs,
            r.all.wait_mean,
            r.all.wait_median,
            r.all.wait_p95,
            r.all.slowdown_mean,
            r.utilisation * 100.0,
            r.never_started,
            r.preemptions
        );
    }
    // What the share tree was charged where the workload says nothing.
    for r in reports.iter().filter(|r| r.cpu_assumed > 0) {
        let _ = writeln!(
            out,
            "{}: {} of {} jobs without a CPU time in the workload: charged to the share tree as their run time on every slot (full CPU)",
            r.name, r.cpu_assumed, r.all.jobs
        );
    }
    for (title, pick) in [
        (
            "user",
            (|r: &Report| &r.by_user) as fn(&Report) -> &BTreeMap<String, Stats>,
        ),
        ("group", |r: &Report| &r.by_group),
        ("queue", |r: &Report| &r.by_queue),
        ("project", |r: &Report| &r.by_project),
        ("cluster", |r: &Report| &r.by_cluster),
    ] {
        if reports.iter().all(|r| pick(r).is_empty()) {
            continue;
        }
        let _ = writeln!(out, "\nby {title}");
        let _ = writeln!(
            out,
            "{:<24} {:<12} {:>6} {:>10} {:>10} {:>10} {:>9} {:>7}",
            "configuration", title, "jobs", "wait mean", "median", "p95", "slowdown", "cpu"
        );
        for r in reports {
            for (k, s) in pick(r) {
                let _ = writeln!(
                    out,
                    "{:<24} {:<12} {:>6} {:>10.1} {:>10.1} {:>10.1} {:>9.2} {:>6.1}%",
                    r.name,
                    k,
                    s.jobs,
                    s.wait_mean,
                    s.wait_median,
                    s.wait_p95,
                    s.slowdown_mean,
                    s.cpu_share * 100.0
                );
            }
        }
    }
    let _ = writeln!(out, "\nshares (of the slot-seconds used)");
    let _ = writeln!(
        out,
        "{:<24} {:<16} {:<20} {:>10} {:>9} {:>7} {:>7}",
        "configuration", "entity", "name", "configured", "achieved", "first", "last"
    );
    for r in reports {
        let s = &r.shares;
        for (name, e) in &s.by_entity {
            // In the first and the last interval in which anything ran.
            let busy = |i: &usize| s.used[*i] > 0.0;
            let at = |i: Option<usize>| i.and_then(|i| e.over_time.get(i)).copied();
            let first = at((0..s.used.len()).find(busy)).unwrap_or(0.0);
            let last = at((0..s.used.len()).rev().find(busy)).unwrap_or(0.0);
            let _ = writeln!(
                out,
                "{:<24} {:<16} {:<20} {:>10} {:>8.1}% {:>6.1}% {:>6.1}%",
                r.name,
                s.entity,
                name,
                e.configured
                    .map_or_else(|| "-".to_string(), |c| format!("{:.1}%", c * 100.0)),
                e.achieved * 100.0,
                first * 100.0,
                last * 100.0
            );
        }
    }
    out
}

/// Every finished run of a replay, in the order of their starts, as CSV (times in seconds
/// from the replay's first submission).
pub fn runs_csv(replay: &Replay) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "job,task,user,group,queue,project,cluster,slots,submit,start,end,wait,host,preempted\n",
    );
    let mut runs: Vec<&JobRun> = replay.runs.iter().collect();
    runs.sort_by_key(|r| (r.start, r.submit, r.number, r.task));
    let t0 = replay.span.0;
    for r in runs {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.number,
            r.task,
            r.user,
            r.group,
            r.queue,
            r.project.as_deref().unwrap_or(""),
            r.cluster,
            r.slots,
            r.submit - t0,
            r.start - t0,
            r.end - t0,
            r.wait(),
            r.host,
            r.preempted
        );
    }
    out
}

/// The preemptions of a replay as CSV: when, the victim, the job it was preempted for, the
/// host, and whether it was killed (`aggressive`) or left to finish (`passive`).
pub fn preemptions_csv(replay: &Replay) -> String {
    use std::fmt::Write;
    let mut out = String::from("time,job,for_job,host,kill\n");
    for p in &replay.preemptions {
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            p.time - replay.span.0,
            p.job,
            p.for_job,
            p.host,
            if p.kill { "yes" } else { "no" }
        );
    }
    out
}
