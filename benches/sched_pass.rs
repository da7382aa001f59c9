//! Scheduling-pass benchmark (issue 3): 100,000 pending jobs of 1,000 users in 100 categories
//! on 1,000 hosts. Prints figures; asserts nothing about time.
//!
//! `cargo bench --bench sched_pass` (release profile). Scenarios:
//! - first pass on an empty cluster (fills every slot: thousands of starts);
//! - an event pass on a full cluster after one task ended (the common case under load);
//! - a periodic pass on a full cluster (priorities recomputed, nothing fits);
//! - resident memory of the process holding the state.

use gridspool::config::ClusterConfig;
use gridspool::model::{
    JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange, Submitter,
};
use gridspool::sched::SchedState;
use std::time::Instant;

const HOSTS: usize = 1000;
const SLOTS: u32 = 8;
const JOBS: u32 = 100_000;
const USERS: u32 = 1000;
const NOW: i64 = 1_800_000_000;

fn config() -> ClusterConfig {
    config_for("{policy: sge, max_reservation: 10}")
}

/// The benchmark cluster under a scheduler configuration (hosts spread over ten Qube!
/// clusters `/site/r0` … `/site/r9`, FBSNG parameters on the queues).
fn config_for(scheduler: &str) -> ClusterConfig {
    let mut t = String::from("hosts:\n");
    for i in 0..HOSTS {
        t.push_str(&format!(
            "  - {{name: node{i:04}, slots: {SLOTS}, cluster: /site/r{}}}\n",
            i % 10
        ));
    }
    t.push_str("hostgroups:\n  \"@all\": [");
    t.push_str(
        &(0..HOSTS)
            .map(|i| format!("node{i:04}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    t.push_str("]\n");
    t.push_str(&format!(
        "queues:\n  - {{name: all.q, hostlist: [\"@all\"], slots: {SLOTS}, pe_list: [smp, mpi], fbsng: {{qpd: 3}}}}\n  - {{name: t.q, hostlist: [\"@all\"], slots: {SLOTS}, seq_no: 1, urgency: 40000, pe_list: [smp], fbsng: {{qpd: 7, qpg: 20}}}}\n"
    ));
    t.push_str("parallel_environments:\n  - {name: smp, slots: 99999, allocation_rule: $pe_slots}\n  - {name: mpi, slots: 99999, allocation_rule: $fill_up}\n");
    t.push_str(&format!("scheduler: {scheduler}\n"));
    ClusterConfig::parse(&t).expect("config")
}

fn job(id: u32) -> JobRecord {
    let cat = id % 100;
    let user = id % USERS;
    let mut spec = JobSpec {
        name: format!("job{cat}.sh"),
        script_file: format!("job{cat}.sh"),
        priority: -((id % 7) as i32) * 10,
        cluster: Some(format!("/site/r{}", id % 13 % 10)),
        ..JobSpec::default()
    };
    spec.hard_resources.push(ResourceRequest {
        name: "h_rt".into(),
        value: format!("{}", 600 * (cat + 1)),
    });
    match cat / 10 {
        0..=4 => {}
        5 => {
            spec.pe = Some(PeRequest {
                name: "smp".into(),
                range: SlotRange { min: 2, max: 2 },
            })
        }
        6 => {
            spec.pe = Some(PeRequest {
                name: "smp".into(),
                range: SlotRange { min: 4, max: 4 },
            })
        }
        7 => {
            spec.pe = Some(PeRequest {
                name: "mpi".into(),
                range: SlotRange { min: 16, max: 16 },
            })
        }
        8 => spec.hard_queues = vec!["t.q".into()],
        _ => spec.hard_resources.push(ResourceRequest {
            name: "arch".into(),
            value: "lx*".into(),
        }),
    }
    spec.reserve = cat == 71;
    JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: format!("user{user}"),
            uid: 10_000 + user,
            group: "users".into(),
            gid: 100,
            submission_time: NOW - 3600 + i64::from(id % 3600),
            sge_o_home: format!("/home/user{user}"),
            sge_o_log_name: format!("user{user}"),
            sge_o_path: "/usr/local/bin:/usr/bin:/bin".into(),
            sge_o_shell: "/bin/bash".into(),
            sge_o_workdir: format!("/home/user{user}/work"),
            sge_o_host: "login1".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec,
        holds: Default::default(),
    })
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU time of this process in ms (user + system): the machine is shared, so wall time
/// alone overstates the cost when other builds run.
fn cpu_ms() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(f64::NAN, |u| {
        let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 * 1e3 + tv.tv_usec() as f64 / 1e3;
        t(u.user_time()) + t(u.system_time())
    })
}

fn main() {
    println!(
        "size_of JobRecord {} B, JobSpec {} B, Submitter {} B (inline, before heap strings)",
        std::mem::size_of::<JobRecord>(),
        std::mem::size_of::<JobSpec>(),
        std::mem::size_of::<Submitter>()
    );
    let t = Instant::now();
    let mut state = SchedState::new(config());
    for id in 1..=JOBS {
        state.add_job(job(id));
        // As sched_d does after loading a waiting job: keep its record encoded.
        state.cool_idle();
    }
    println!(
        "after adding {JOBS} jobs one by one: resident {:.0} MB",
        rss_mb()
    );
    state.compact();
    println!(
        "state: {} jobs, {} categories, {} hosts built in {:.0} ms; resident {:.0} MB",
        state.job_count(),
        state.category_count(),
        HOSTS,
        t.elapsed().as_secs_f64() * 1e3,
        rss_mb()
    );

    let t = Instant::now();
    let c0 = cpu_ms();
    let r = state.schedule(NOW);
    let first = t.elapsed();
    let first_cpu = cpu_ms() - c0;
    let running = r.starts.len();
    println!(
        "first pass (empty cluster): {:.1} ms wall, {first_cpu:.1} ms cpu, {} starts, {} reservations, {} fits, {} considered; phases us {:?} (classify+priority, order, dispatch, reasons)",
        first.as_secs_f64() * 1e3,
        r.starts.len(),
        r.reservations.len(),
        r.fits,
        r.considered,
        r.phase_us
    );
    let _ = state.take_dirty();
    // As sched_d does after each pass: waiting jobs decoded by the pass are encoded again.
    state.cool_idle();

    let mut event_ms = Vec::new();
    let mut event_cpu = Vec::new();
    for i in 0..20 {
        let (job, task, _) = state.running_tasks()[i * 37 % running.max(1)];
        state.task_ended(job, task).expect("running task");
        let t = Instant::now();
        let c0 = cpu_ms();
        let r = state.schedule_event(NOW + 1 + i as i64);
        event_ms.push(t.elapsed().as_secs_f64() * 1e3);
        event_cpu.push(cpu_ms() - c0);
        let _ = state.take_dirty();
        state.cool_idle();
        if i == 0 {
            println!(
                "event pass (full cluster, one task ended, order of the last full pass reused): {} starts, {} fits, {} considered; phases us {:?}",
                r.starts.len(),
                r.fits,
                r.considered,
                r.phase_us
            );
        }
    }
    event_ms.sort_by(f64::total_cmp);
    event_cpu.sort_by(f64::total_cmp);
    println!(
        "event pass: median {:.1} ms wall ({:.1} ms cpu), min {:.1} ms wall, max {:.1} ms wall over {} passes",
        event_ms[event_ms.len() / 2],
        event_cpu[event_cpu.len() / 2],
        event_ms[0],
        event_ms[event_ms.len() - 1],
        event_ms.len()
    );

    let t = Instant::now();
    let c0 = cpu_ms();
    let r = state.schedule(NOW + 60);
    let cpu = cpu_ms() - c0;
    println!(
        "periodic pass (full cluster, priorities recomputed): {:.1} ms wall, {cpu:.1} ms cpu, {} starts, {} fits; phases us {:?}",
        t.elapsed().as_secs_f64() * 1e3,
        r.starts.len(),
        r.fits,
        r.phase_us
    );
    println!(
        "resident after passes: {:.0} MB (target: sched_d under 200 MB)",
        rss_mb()
    );
    drop(state);

    // The other policies (issue 4): the same jobs and hosts, each policy's first pass (empty
    // cluster), an event pass and a periodic pass (full cluster). Target: ≤ 50 ms like SGE's.
    for (name, sched) in [
        ("cluster", "{policy: cluster}"),
        ("fbsng", "{policy: fbsng}"),
        ("armada", "{policy: armada, armada: {seed: 1}}"),
        ("armada-drf", "{policy: armada, armada: {mode: drf}}"),
        ("fifo", "{policy: fifo}"),
    ] {
        let mut state = SchedState::new(config_for(sched));
        for id in 1..=JOBS {
            state.add_job(job(id));
            state.cool_idle();
        }
        state.compact();
        let t = Instant::now();
        let c0 = cpu_ms();
        let r = state.schedule(NOW);
        let first = (
            t.elapsed().as_secs_f64() * 1e3,
            cpu_ms() - c0,
            r.starts.len(),
        );
        let _ = state.take_dirty();
        state.cool_idle();
        let (job, task, _) = state.running_tasks()[0];
        state.task_ended(job, task).expect("running task");
        let t = Instant::now();
        let r = state.schedule_event(NOW + 1);
        let event = (t.elapsed().as_secs_f64() * 1e3, r.starts.len());
        let _ = state.take_dirty();
        state.cool_idle();
        let t = Instant::now();
        let c0 = cpu_ms();
        let r = state.schedule(NOW + 60);
        let periodic = (
            t.elapsed().as_secs_f64() * 1e3,
            cpu_ms() - c0,
            r.starts.len(),
        );
        println!(
            "policy {name}: first pass {:.1} ms wall ({:.1} ms cpu, {} starts); event pass {:.1} ms ({} starts); periodic pass {:.1} ms wall ({:.1} ms cpu, {} starts); phases us {:?}",
            first.0,
            first.1,
            first.2,
            event.0,
            event.1,
            periodic.0,
            periodic.1,
            periodic.2,
            r.phase_us
        );
    }
}
