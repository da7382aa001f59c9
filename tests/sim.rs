//! `gridspool-sim`: a small trace replayed under two configurations, as text and JSON.

use crate::support::*;
use serde_json::Value;

const TRACE: &str = "; two users, one slot\n\
    1 0 -1 100 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
    2 10 -1 50 1 -1 -1 1 -1 -1 1 2 1 -1 1 -1 -1 -1\n\
    3 20 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
    4 30 -1 10 4 -1 -1 4 -1 -1 1 2 1 -1 1 -1 -1 -1\n";

/// `gridspool-sim --workload TRACE --compare CONFIGS… EXTRA…`, run to its end.
fn gridspool_sim(
    trace: &std::path::Path,
    configs: &[&std::path::Path],
    extra: &[&std::ffi::OsStr],
) -> std::process::Output {
    std::process::Command::new(bin_path("gridspool-sim"))
        .arg("--workload")
        .arg(trace)
        .arg("--compare")
        .args(configs)
        .args(extra)
        .output()
        .expect("gridspool-sim")
}

fn cell_yaml(policy: &str) -> String {
    format!(
        "hosts:\n  - {{name: n1, slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [n1], slots: 1, pe_list: [smp]}}\nparallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\nscheduler: {{policy: {policy}}}\n"
    )
}

#[test]
fn gridspool_sim_compares_configurations_on_a_trace() {
    let dir = tempfile::tempdir().expect("dir");
    let trace = dir.path().join("small.swf");
    std::fs::write(&trace, TRACE).expect("trace");
    let (fifo, sge) = (dir.path().join("fifo.yaml"), dir.path().join("sge.yaml"));
    std::fs::write(&fifo, cell_yaml("fifo")).expect("config");
    std::fs::write(&sge, cell_yaml("sge")).expect("config");
    let out = gridspool_sim(&trace, &[&fifo, &sge], &["--json".as_ref(), "-".as_ref()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let reports = v.as_array().expect("one report per configuration");
    assert_eq!(reports.len(), 2);
    let first = &reports[0];
    assert_eq!(first["name"], "fifo.yaml");
    // One after the other: waits 0, 90, 130; the 4-slot job never fits on one slot.
    assert_eq!(first["all"]["jobs"], 3);
    assert_eq!(first["all"]["wait_median"], 90.0);
    assert_eq!(first["all"]["wait_p95"], 130.0);
    assert_eq!(first["never_started"], 1);
    assert_eq!(first["by_user"]["u1"]["jobs"], 2);
    // The text table names both; the chart of the waits has a line for each.
    let charts = dir.path().join("charts");
    let out = gridspool_sim(
        &trace,
        &[&fifo, &sge],
        &["--charts".as_ref(), charts.as_os_str()],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fifo.yaml") && text.contains("sge.yaml"),
        "{text}"
    );
    let svg = std::fs::read_to_string(charts.join("waits.svg")).expect("waits.svg");
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(
        svg.contains("fifo.yaml") && svg.contains("sge.yaml"),
        "{svg}"
    );
    // The shares over time, a chart per configuration, with a line per user.
    let svg = std::fs::read_to_string(charts.join("shares-sge.svg")).expect("shares-sge.svg");
    assert!(svg.contains("u1") && svg.contains("u2"), "{svg}");
    // Every run, in the order of the starts.
    let runs = dir.path().join("runs");
    let out = gridspool_sim(&trace, &[&fifo], &["--runs".as_ref(), runs.as_os_str()]);
    assert!(out.status.success());
    let csv = std::fs::read_to_string(runs.join("fifo.csv")).expect("fifo.csv");
    assert_eq!(
        csv,
        "job,task,user,group,queue,project,cluster,slots,submit,start,end,wait,host,preempted\n\
         1,1,u1,g1,q1,,/,1,0,0,100,0,n1,0\n\
         2,1,u2,g1,q1,,/,1,10,100,150,90,n1,0\n\
         3,1,u1,g1,q1,,/,1,20,150,160,130,n1,0\n"
    );
    assert_eq!(
        std::fs::read_to_string(runs.join("fifo.preemptions.csv")).expect("preemptions"),
        "time,job,for_job,host,kill\n"
    );
    // A bad trace is named.
    std::fs::write(&trace, "1 2 3\n").expect("trace");
    let out = gridspool_sim(&trace, &[&fifo], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1: 3 fields"));
}

#[test]
fn gridspool_sim_replays_a_cells_accounting_file() {
    let dir = tempfile::tempdir().expect("dir");
    // Two records of the accounting file's format: what ran here.
    let accounting = dir.path().join("accounting");
    std::fs::write(
        &accounting,
        "# Version: 8.1.9\n# \n# DO NOT MODIFY THIS FILE MANUALLY!\n# \n\
         all.q:n1:staff:alice:a:1:sge:0:1000:1000:1100:0:0:100:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:NONE:defaultdepartment:NONE:1:0:0:0:0:NONE:0:NONE:0:0:0\n\
         all.q:n1:staff:bob:b:2:sge:0:1010:1100:1150:0:0:50:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:0:NONE:defaultdepartment:NONE:1:0:0:0:0:NONE:0:NONE:0:0:0\n",
    )
    .expect("accounting");
    let config = dir.path().join("one-slot.yaml");
    std::fs::write(&config, cell_yaml("fifo")).expect("config");
    let out = gridspool_sim(&accounting, &[&config], &["--json".as_ref(), "-".as_ref()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let r = &v[0];
    // bob's job (submitted 10 s after alice's 100 s one) waits 90 s, as it did.
    assert_eq!(r["by_user"]["bob"]["wait_mean"], 90.0, "{v}");
    assert_eq!(r["by_user"]["alice"]["wait_mean"], 0.0, "{v}");
    assert_eq!(r["by_queue"]["all.q"]["jobs"], 2, "{v}");
}
