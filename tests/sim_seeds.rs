//! The seeds' worked examples as `gridspool-sim` workloads (`docs/sim/`): each replay shows
//! the outcome its seed promises, or, where the implementation does otherwise, what it does
//! (`docs/sim/README.md`). The assertions read the JSON report and the `--runs` CSV files.

use crate::support::bin_path;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/sim")
        .join(name)
}

/// One finished run of a `--runs` CSV (times in seconds from the workload's start).
#[derive(Debug, Clone, PartialEq)]
struct Run {
    job: u64,
    user: String,
    queue: String,
    project: String,
    cluster: String,
    slots: u32,
    submit: i64,
    start: i64,
    end: i64,
    wait: i64,
    preempted: u32,
}

/// One row of a `--runs` preemptions CSV.
#[derive(Debug, Clone, PartialEq)]
struct Preemption {
    time: i64,
    job: u64,
    for_job: u64,
    host: String,
    kill: bool,
}

/// What one configuration did: its JSON report, its runs in the order of their starts, its
/// preemptions.
struct Replayed {
    report: Value,
    runs: Vec<Run>,
    preemptions: Vec<Preemption>,
}

/// The rows of a CSV file as maps from its header's names.
fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .collect()
}

fn field<T: std::str::FromStr>(row: &BTreeMap<String, String>, name: &str) -> T {
    row[name]
        .parse()
        .unwrap_or_else(|_| panic!("{name}: {:?}", row[name]))
}

/// `gridspool-sim --workload WORKLOAD --compare CONFIGS… --json - --runs DIR`, one
/// [`Replayed`] per configuration.
fn replay(workload: &Path, configs: &[&Path]) -> Vec<Replayed> {
    let dir = tempfile::tempdir().expect("dir");
    let out = std::process::Command::new(bin_path("gridspool-sim"))
        .arg("--workload")
        .arg(workload)
        .arg("--compare")
        .args(configs)
        .args(["--json", "-", "--runs"])
        .arg(dir.path())
        .output()
        .expect("gridspool-sim");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reports.len(), configs.len());
    configs
        .iter()
        .zip(reports)
        .map(|(config, report)| {
            let base = config.file_stem().expect("name").to_string_lossy();
            let runs = csv(&dir.path().join(format!("{base}.csv")))
                .iter()
                .map(|r| Run {
                    job: field(r, "job"),
                    user: r["user"].clone(),
                    queue: r["queue"].clone(),
                    project: r["project"].clone(),
                    cluster: r["cluster"].clone(),
                    slots: field(r, "slots"),
                    submit: field(r, "submit"),
                    start: field(r, "start"),
                    end: field(r, "end"),
                    wait: field(r, "wait"),
                    preempted: field(r, "preempted"),
                })
                .collect();
            let preemptions = csv(&dir.path().join(format!("{base}.preemptions.csv")))
                .iter()
                .map(|r| Preemption {
                    time: field(r, "time"),
                    job: field(r, "job"),
                    for_job: field(r, "for_job"),
                    host: r["host"].clone(),
                    kill: r["kill"] == "yes",
                })
                .collect();
            Replayed {
                report,
                runs,
                preemptions,
            }
        })
        .collect()
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The last start of any job of `key`'s value `of`: until then it had pending work.
fn last_start(runs: &[Run], key: fn(&Run) -> &str, of: &str) -> i64 {
    runs.iter()
        .filter(|r| key(r) == of)
        .map(|r| r.start)
        .max()
        .unwrap_or_else(|| panic!("no run of {of}"))
}

/// The part of the slot-seconds used between `from` and `to` that went to `key`'s value `of`.
fn share_between(runs: &[Run], key: fn(&Run) -> &str, of: &str, from: i64, to: i64) -> f64 {
    let (mut mine, mut all) = (0.0, 0.0);
    for r in runs {
        let held = (r.end.min(to) - r.start.max(from)).max(0) as f64 * f64::from(r.slots);
        all += held;
        if key(r) == of {
            mine += held;
        }
    }
    mine / all
}

/// `entity`'s share in each interval of the report that ended before `until` (seconds from
/// the workload's start).
fn shares_before(report: &Value, entity: &str, until: i64) -> Vec<f64> {
    let shares = &report["shares"];
    let interval = shares["interval"].as_i64().expect("interval");
    shares["by_entity"][entity]["over_time"]
        .as_array()
        .expect("over_time")
        .iter()
        .enumerate()
        .take_while(|(b, _)| (*b as i64 + 1) * interval <= until)
        .map(|(_, s)| number(s))
        .collect()
}

/// Seed fbsng-dynamic-priorities.txt, goal 2: QPD 3 and 7 (QPI 1) share the farm 70/30 for as
/// long as both queues have work; equal QPDs share it 50/50 until B's queue runs dry.
#[test]
fn fbsng_queues_share_the_farm_70_30_while_both_have_work() {
    let replayed = replay(
        &example("fbsng-70-30.txt"),
        &[&example("fbsng-70-30.yaml"), &example("fbsng-equal.yaml")],
    );
    let (seventy, equal) = (&replayed[0], &replayed[1]);
    for r in &replayed {
        assert_eq!(r.report["all"]["jobs"], 1000);
        assert_eq!(r.report["never_started"], 0);
        assert_eq!(r.report["shares"]["entity"], "queue");
    }
    let queue: fn(&Run) -> &str = |r| &r.queue;

    // 70/30 promised, and delivered in every interval while both queues have work (over the
    // whole run it is also the workload's own 700:300, as under equal QPDs).
    let by = &seventy.report["shares"]["by_entity"];
    for (q, promised) in [("A.q", 0.7), ("B.q", 0.3)] {
        assert!(
            (number(&by[q]["configured"]) - promised).abs() < 1e-9,
            "{q}"
        );
        assert!(
            (number(&by[q]["achieved"]) - promised).abs() <= 0.02,
            "{q}: {}",
            by[q]["achieved"]
        );
    }
    let (a_end, b_end) = (
        last_start(&seventy.runs, queue, "A.q"),
        last_start(&seventy.runs, queue, "B.q"),
    );
    let both = a_end.min(b_end);
    let a = shares_before(&seventy.report, "A.q", both);
    assert!(a.len() >= 20, "both queues busy for {} intervals", a.len());
    for (b, s) in a.iter().enumerate() {
        assert!((s - 0.7).abs() <= 0.05, "interval {b}: A.q had {s}");
    }
    // At 70/30 the 700 and 300 sections run out together: A.q and B.q wait alike.
    let span = seventy.runs.iter().map(|r| r.end).max().expect("runs");
    assert!(
        (a_end - b_end).abs() < span / 50,
        "A.q {a_end} s, B.q {b_end} s"
    );
    let waits = &seventy.report["by_queue"];
    let (wa, wb) = (
        number(&waits["A.q"]["wait_mean"]),
        number(&waits["B.q"]["wait_mean"]),
    );
    assert!((wa / wb - 1.0).abs() < 0.05, "A.q {wa} s, B.q {wb} s");

    // Equal QPDs: 50/50 while both have work, so B.q's 300 sections are done after about
    // 600 of the farm's 1000 sections' time, and A.q has the farm alone after.
    let by = &equal.report["shares"]["by_entity"];
    assert!((number(&by["A.q"]["configured"]) - 0.5).abs() < 1e-9);
    let (a_end, b_end) = (
        last_start(&equal.runs, queue, "A.q"),
        last_start(&equal.runs, queue, "B.q"),
    );
    assert!(
        b_end < a_end * 65 / 100,
        "B.q last start {b_end}, A.q {a_end}"
    );
    let a = shares_before(&equal.report, "A.q", b_end);
    assert!(a.len() >= 10, "both queues busy for {} intervals", a.len());
    for (b, s) in a.iter().enumerate() {
        assert!((s - 0.5).abs() <= 0.05, "interval {b}: A.q had {s}");
    }
    let last = by["A.q"]["over_time"]
        .as_array()
        .and_then(|s| s.last())
        .map(number);
    assert_eq!(last, Some(1.0));
}

/// Seed armada-fair-share.txt: a round divides the free resources in proportion to the
/// inverse of the queues' priorities, so on an empty cluster factors 1 and 2 give 2/3 and
/// 1/3. As the priorities track usage, the running slots settle where the effective
/// priorities' inverse split matches the queues' own usage: slots_a / slots_b = √(factor_b /
/// factor_a), 58.6/41.4 for factors 1 and 2; factors 1 and 4 give 2/3–1/3 over time, and so
/// does `mode: drf` with factors 1 and 2.
#[test]
fn armada_round_divides_by_inverse_priority_and_usage_settles_at_its_root() {
    let replayed = replay(
        &example("armada.txt"),
        &[
            &example("armada-1-2.yaml"),
            &example("armada-1-4.yaml"),
            &example("armada-drf-1-2.yaml"),
        ],
    );
    let project: fn(&Run) -> &str = |r| &r.project;
    for (r, factor_b, first_round, settled) in [
        (
            &replayed[0],
            2.0_f64,
            (20, 10),
            2f64.sqrt() / (2f64.sqrt() + 1.0),
        ),
        (&replayed[1], 4.0, (24, 6), 2.0 / 3.0),
        (&replayed[2], 2.0, (20, 10), 2.0 / 3.0),
    ] {
        assert_eq!(r.report["all"]["jobs"], 1200);
        assert_eq!(r.report["never_started"], 0);
        assert_eq!(r.report["shares"]["entity"], "armada queue");
        // The report's promise is what the mode holds to over time, where the replay
        // settles (∝ 1/√factor under slices, 1/factor under DRF), not a round's 1/factor.
        let by = &r.report["shares"]["by_entity"];
        assert!((number(&by["a"]["configured"]) - settled).abs() < 1e-9);
        // The first pass, on the empty cluster: 30 slots cut 2:1 (4:1), slices or DRF.
        let started = |p: &str| {
            r.runs
                .iter()
                .filter(|j| j.start == 0 && j.project == p)
                .count()
        };
        assert_eq!(
            (started("a"), started("b")),
            first_round,
            "factor 1:{factor_b}"
        );
        assert!(
            r.runs
                .iter()
                .all(|j| j.user == if j.project == "a" { "alice" } else { "bob" })
        );
        // Over time, after two halftimes (1800 s each) and while both queues have work.
        let both = last_start(&r.runs, project, "a").min(last_start(&r.runs, project, "b"));
        assert!(both > 3 * 3600, "both queues busy until {both} s");
        let a = share_between(&r.runs, project, "a", 3600, both);
        eprintln!("factor 1:{factor_b}: a had {a:.4} of the slots from 1 h to {both} s");
        assert!(
            (a - settled).abs() <= 0.02,
            "factor 1:{factor_b}: a had {a} of the slots, expected about {settled}"
        );
    }
    // Under factors 1 and 2 that is clearly not the 2/3 of a round.
    let runs = &replayed[0].runs;
    let both = last_start(runs, project, "a").min(last_start(runs, project, "b"));
    let a = share_between(runs, project, "a", 3600, both);
    assert!(a < 0.62, "a had {a}");
}

/// Seed sge-urgency-and-tickets.txt: an s64 job outranks a just-submitted t2 job after about
/// 34 hours of waiting and a u2 job after about 74 (urgency = slots·100 + 40,000 in a t queue
/// + 80,000 in a u queue + 0.278 per second waited).
#[test]
fn sge_s64_job_outranks_t2_after_34_hours_and_u2_after_74() {
    let replayed = replay(&example("sge-urgency.txt"), &[&example("sge-urgency.yaml")]);
    let runs = &replayed[0].runs;
    assert_eq!(replayed[0].report["never_started"], 0);
    let job = |n: u64| {
        runs.iter()
            .find(|r| r.job == n)
            .unwrap_or_else(|| panic!("job {n} did not run"))
    };
    let (blocker, j1, j2, j3) = (job(1), job(2), job(3), job(4));
    let (t2_early, u2_early, t2_late, u2_late) = (job(5), job(6), job(7), job(8));
    assert_eq!(
        (
            j1.queue.as_str(),
            t2_early.queue.as_str(),
            u2_late.queue.as_str()
        ),
        ("s64.q", "t2.q", "u2.q")
    );
    let h = 3600;
    // 33:30:00: J1 has waited 33.5 h; both small jobs outrank it, start, and keep it out.
    assert_eq!(blocker.end, 33 * h + 1800);
    assert_eq!((t2_early.start, u2_early.start), (blocker.end, blocker.end));
    assert_eq!(j1.start, t2_early.end);
    // 34:10:00: J2 has waited 34.17 h and outranks t2-late, submitted a minute before.
    assert_eq!(j1.end, 34 * h + 600);
    assert_eq!(t2_late.submit, 34 * h + 540);
    assert_eq!(j2.start, j1.end);
    assert_eq!(j2.wait, 34 * h + 599);
    assert!(t2_late.start > j2.start);
    // 74:10:00: J3 has waited 74.17 h and outranks u2-late, submitted a minute before.
    assert_eq!(j2.end, 74 * h + 600);
    assert_eq!(u2_late.submit, 74 * h + 540);
    assert_eq!(j3.start, j2.end);
    assert_eq!(j3.wait, 74 * h + 599);
    assert_eq!((u2_late.start, t2_late.start), (j3.end, j3.end));
    let starts: Vec<u64> = runs.iter().map(|r| r.job).collect();
    assert_eq!(starts, [1, 5, 6, 2, 3, 4, 7, 8]);

    // The crossovers to the second, against a rival that has waited 60 s: the s64 job wins
    // from the first whole second its urgency is above the rival's.
    let dir = tempfile::tempdir().expect("dir");
    let workload = dir.path().join("crossover.txt");
    for (queue, bonus) in [("t2.q", 40_000.0_f64), ("u2.q", 80_000.0)] {
        let rival: f64 = 2.0 * 100.0 + bonus + 0.278 * 60.0;
        let crossover = (rival - 64.0 * 100.0) / 0.278;
        for (wait, s64_first) in [
            (crossover.floor() as i64, false),
            (crossover.ceil() as i64, true),
        ] {
            // The blocker ends when the s64 job (submitted at 1) has waited `wait`.
            let end = wait + 1;
            std::fs::write(
                &workload,
                format!(
                    "0 {end} ops qsub -q s64.q -pe smp 64\n\
                     1 100 sam qsub -q s64.q -pe smp 64\n\
                     {} 100 tom qsub -q {queue} -pe smp 2\n",
                    end - 60
                ),
            )
            .expect("workload");
            let r = replay(&workload, &[&example("sge-urgency.yaml")]);
            let first = &r[0].runs[1];
            assert_eq!(first.start, end);
            assert_eq!(
                first.job == 2,
                s64_first,
                "{queue}: s64 waited {wait} s (crossover {crossover:.2} s): {:?}",
                r[0].runs
            );
        }
        assert!(
            (crossover / 3600.0 - if bonus < 50_000.0 { 33.79 } else { 73.76 }).abs() < 0.01,
            "{crossover}"
        );
    }
}

/// Seed qube-cluster-priority.txt: a worker in /A/B/C takes jobs by the table's cluster order
/// (1: /A/B/C; 2: /A/B/C/D, /A/B/C/D/E; 3: /A/B, /A/B/F; 4: /A; 5: /, /G), then priority,
/// then job id, whatever order they were submitted in.
#[test]
fn qube_worker_runs_jobs_in_the_tables_cluster_order() {
    let replayed = replay(
        &example("qube-clusters.txt"),
        &[&example("qube-clusters.yaml")],
    );
    let r = &replayed[0];
    assert_eq!(r.report["never_started"], 0);
    let runs: Vec<&Run> = r.runs.iter().filter(|j| j.job != 1).collect();
    let order: Vec<&str> = runs.iter().map(|j| j.cluster.as_str()).collect();
    // Submitted as /G, /, /A, /A/B/F, /A/B, /A/B/C/D/E, /A/B/C/D, /A/B/C; within an order
    // the earlier submitted first.
    assert_eq!(
        order,
        [
            "/A/B/C",
            "/A/B/C/D/E",
            "/A/B/C/D",
            "/A/B/F",
            "/A/B",
            "/A",
            "/G",
            "/"
        ]
    );
    // One after the other on the one slot, from the blocker's end.
    let mut free = r.runs[0].end;
    for j in &runs {
        assert_eq!(j.start, free, "{j:?}");
        free = j.end;
    }
    // So the mean wait per cluster grows with the cluster order.
    let waits: Vec<f64> = order
        .iter()
        .map(|c| number(&r.report["by_cluster"][c]["wait_mean"]))
        .collect();
    assert!(waits.windows(2).all(|w| w[0] < w[1]), "{waits:?}");
}

/// Seed qube-host-selection.txt, preemption when a job is submitted: a better job on a full
/// worker preempts the worst running one; `aggressive` kills it, and it is requeued and runs
/// again in full; `passive` lets it finish.
#[test]
fn qube_preemption_kills_and_requeues_or_lets_the_victim_finish() {
    let replayed = replay(
        &example("qube-preemption.txt"),
        &[
            &example("qube-preemption-aggressive.yaml"),
            &example("qube-preemption-passive.yaml"),
        ],
    );
    let (aggressive, passive) = (&replayed[0], &replayed[1]);
    let span = |r: &Replayed, n: u64| {
        let j = r.runs.iter().find(|j| j.job == n).expect("ran");
        (j.start, j.end, j.preempted)
    };
    // Aggressive: low2 (job 2) is killed when the urgent job (3) arrives, at 100 s; the urgent
    // job runs at once, and low2 starts again from the beginning when it ends.
    assert_eq!(aggressive.report["preemptions"], 1);
    assert_eq!(
        aggressive.preemptions,
        [Preemption {
            time: 100,
            job: 2,
            for_job: 3,
            host: "worker01".into(),
            kill: true,
        }]
    );
    assert_eq!(span(aggressive, 1), (0, 1000, 0));
    assert_eq!(span(aggressive, 3), (100, 300, 0));
    assert_eq!(span(aggressive, 2), (300, 1300, 1));
    assert_eq!(aggressive.report["never_started"], 0);
    assert_eq!(aggressive.report["all"]["jobs"], 3);
    assert_eq!(aggressive.report["by_user"]["lee"]["preempted"], 1);
    assert_eq!(aggressive.report["all"]["preempted"], 1);
    // The killed run's 100 slot-seconds count in the shares: lee 2100 of 2300.
    let lee = number(&aggressive.report["shares"]["by_entity"]["lee"]["achieved"]);
    assert!((lee - 2100.0 / 2300.0).abs() < 1e-9, "{lee}");

    // Passive: low2 is marked at 100 s, not killed, and finishes; the urgent job takes the
    // first slot that frees.
    assert_eq!(passive.report["preemptions"], 1);
    assert_eq!(
        passive.preemptions,
        [Preemption {
            time: 100,
            job: 2,
            for_job: 3,
            host: "worker01".into(),
            kill: false,
        }]
    );
    assert_eq!(span(passive, 2), (0, 1000, 0));
    assert_eq!(span(passive, 3), (1000, 1200, 0));
    assert_eq!(passive.report["by_user"]["lee"]["preempted"], 0);
}

/// The urgent job of qube-preemption.txt arriving 10 s after the first pass instead of 100 s,
/// on the full cluster and before the next periodic pass: `sched_d` runs a pass for the
/// submission and preempts then, and so does the replay (it leaves out passes for arrivals on
/// a full cluster only when nothing preempts).
#[test]
fn qube_preemption_also_when_the_job_arrives_within_the_schedule_interval() {
    let dir = tempfile::tempdir().expect("dir");
    let workload = dir.path().join("soon.txt");
    let text = std::fs::read_to_string(example("qube-preemption.txt")).expect("workload");
    let soon = text.replace("100  200   hana", "10   200   hana");
    assert_ne!(soon, text);
    std::fs::write(&workload, soon).expect("workload");
    let r = replay(&workload, &[&example("qube-preemption-aggressive.yaml")]);
    let urgent = r[0].runs.iter().find(|j| j.job == 3).expect("ran");
    assert_eq!(r[0].preemptions.len(), 1, "{:?}", r[0].runs);
    assert!(urgent.start <= 10 + 15, "{urgent:?}");
}

/// Armada's priorities decay, at each pass, toward the usage held since the last pass, over
/// the time gone by (`ArmadaState::usage`). Here a holds the whole cluster for 10 h while a
/// and b wait with 30 jobs each: when a's jobs end, b gets nearly all the slots (a's priority
/// ≈ 30, b's 0.5), whether the waiting jobs arrived long before (no pass in between: the
/// replay has no passes on the clock alone) or shortly before the end (a pass saw a's usage).
/// Decayed toward the usage found at the pass (none: a's jobs have just ended), a would
/// count as having used nothing after a quiet gap.
#[test]
fn armada_priorities_count_usage_across_a_quiet_gap() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("gap.yaml");
    let yaml = std::fs::read_to_string(example("armada-1-2.yaml")).expect("config");
    std::fs::write(&config, yaml.replace("{a: 1, b: 2}", "{a: 1, b: 1}")).expect("config");
    let mut starts = Vec::new();
    for waiting_from in [1, 35_940] {
        let mut text = String::new();
        for _ in 0..30 {
            text.push_str("0 36000 alice qsub -P a\n");
        }
        for _ in 0..30 {
            text.push_str(&format!("{waiting_from} 600 alice qsub -P a\n"));
            text.push_str(&format!("{waiting_from} 600 bob qsub -P b\n"));
        }
        let workload = dir.path().join("gap.txt");
        std::fs::write(&workload, text).expect("workload");
        let r = replay(&workload, &[&config]);
        let b = r[0]
            .runs
            .iter()
            .filter(|j| j.start == 36_000 && j.project == "b")
            .count();
        starts.push(b);
    }
    assert!(starts[1] >= 28, "{starts:?}");
    assert_eq!(starts[0], starts[1], "b's slots at 10 h");
}
