//! Scheduling-pass benchmark (issues 3 and 4): 100,000 pending jobs of 1,000 users in 100
//! categories on 1,000 hosts, for each policy. Prints figures; asserts nothing about time.
//!
//! `cargo bench --bench sched_pass` (release profile). Per policy (SGE with the default
//! configuration's share tree, then cluster, fbsng, armada, armada-drf, fifo):
//! - first pass on an empty cluster (fills every slot: thousands of starts);
//! - event passes on a full cluster after one task ended (the common case under load);
//! - periodic passes on a full cluster, each a minute later than the last (every waiting
//!   time grew: priorities recomputed for all jobs and the jobs re-ordered; nothing fits);
//! - resident memory of the process holding the state.
//!
//! `SCHED_PASS_POLICIES=sge,fifo` runs only the named policies; `SCHED_PASS_EVENTS` and
//! `SCHED_PASS_PERIODIC` set how many event and periodic passes are timed (best and median
//! are printed). Memory: the resident set and the heap's live bytes (a counting allocator),
//! and the resident set once `malloc_trim` gave the free heap back; `SCHED_PASS_KEEP=1`
//! leaves each state unfreed (for `heaptrack`'s report of what is still allocated);
//! `SCHED_PASS_TRIM=1` gives the heap back after every pass (what that costs the passes).

use gridspool::config::ClusterConfig;
use gridspool::model::{
    JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange, Submitter,
};
use gridspool::sched::SchedState;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts the bytes the process holds from the allocator, so that the resident set can be
/// told apart from what is live (the rest is the allocator's free lists and fragmentation).
struct CountingAlloc;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

// The one unsafe item of the benchmark: a global allocator must implement the unsafe trait;
// it forwards every call to the system allocator unchanged and only counts.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Gives the heap's free pages back to the kernel (glibc's `malloc_trim`): between two
/// policies, so that each one's resident set is not inflated by the previous state's freed
/// heap (`sched_d` holds one state), and after the passes, to tell the live heap from what
/// the allocator keeps.
#[allow(unsafe_code)]
fn trim_heap() {
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// Bytes live on the heap, in MB.
fn live_mb() -> f64 {
    LIVE_BYTES.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
}

const HOSTS: usize = 1000;
const SLOTS: u32 = 8;
const JOBS: u32 = 100_000;
const USERS: u32 = 1000;
const NOW: i64 = 1_800_000_000;

/// The benchmark cluster under a scheduler configuration (hosts spread over ten Qube!
/// clusters `/site/r0` … `/site/r9`, FBSNG parameters on the queues).
fn config_for(scheduler: &str) -> ClusterConfig {
    config_with(scheduler, "")
}

/// 100 resource quota rules (issue 25) in two enabled sets: 98 users with a cap of their
/// own and everyone else capped per user (a user not named walks 99 rules to find the last),
/// and a per-host limit of every host's slots.
fn hundred_rules() -> String {
    let mut t =
        String::from("resource_quotas:\n  - name: per_user\n    enabled: true\n    rules:\n");
    for u in 0..98 {
        t.push_str(&format!("      - {{users: user{}, to: slots=60}}\n", u * 7));
    }
    t.push_str("      - {users: \"{*}\", to: slots=40}\n");
    t.push_str(&format!(
        "  - name: per_host\n    enabled: true\n    rules:\n      - {{hosts: \"{{*}}\", to: slots={SLOTS}}}\n"
    ));
    t
}

fn config_with(scheduler: &str, extra: &str) -> ClusterConfig {
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
    // The share tree of spool/default-config.yaml (every user a copy of `default` under the
    // root): share-tree tickets are on in the default configuration.
    t.push_str("share_tree: {name: Root, shares: 1, children: [{name: default, shares: 1}]}\n");
    t.push_str(&format!("scheduler: {scheduler}\n"));
    t.push_str(extra);
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

/// Best and median of a set of figures.
fn best_median(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    (v[0], v[v.len() / 2])
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One policy: the state as `sched_d` keeps it, a first pass on the empty cluster, event
/// passes after one task ended each, and periodic passes (the clock moves on by a
/// `schedule_interval`-like minute each, so every waiting time grows and the priorities of all
/// 100,000 jobs are recomputed and the jobs re-ordered).
fn run_policy(name: &str, sched: &str, events: usize, periodics: usize) -> (f64, f64, f64) {
    // SCHED_PASS_TRIM=1: the heap is given back after every pass, outside the timed part
    // (what the next pass then pays in page faults is in its time).
    let trim_each = std::env::var_os("SCHED_PASS_TRIM").is_some();
    let config = if name.ends_with("+rqs") {
        config_with(sched, &hundred_rules())
    } else {
        config_for(sched)
    };
    let t = Instant::now();
    let mut state = SchedState::new(config);
    for id in 1..=JOBS {
        state.add_job(job(id));
        // As sched_d does after loading a waiting job: keep its record encoded.
        state.cool_idle();
    }
    state.compact();
    println!(
        "[{name}] state: {} jobs, {} categories, {} hosts built in {:.0} ms; resident {:.0} MB, heap live {:.0} MB",
        state.job_count(),
        state.category_count(),
        HOSTS,
        t.elapsed().as_secs_f64() * 1e3,
        rss_mb(),
        live_mb()
    );

    let t = Instant::now();
    let c0 = cpu_ms();
    let r = state.schedule(NOW);
    let first = t.elapsed();
    let first_cpu = cpu_ms() - c0;
    let running = r.starts.len();
    println!(
        "[{name}] first pass (empty cluster): {:.1} ms wall, {first_cpu:.1} ms cpu, {} starts, {} reservations, {} fits, {} considered; phases us {:?} (classify+priority, order, dispatch, reasons)",
        first.as_secs_f64() * 1e3,
        r.starts.len(),
        r.reservations.len(),
        r.fits,
        r.considered,
        r.phase_us
    );
    // As sched_d does after each pass: changed records written, waiting jobs' records
    // decoded by the pass encoded again.
    let _ = state.take_dirty();
    state.cool_idle();

    let mut event_ms = Vec::new();
    let mut event_cpu = Vec::new();
    for i in 0..events {
        let tasks = state.running_tasks();
        if tasks.is_empty() {
            break;
        }
        let (job, task, _) = tasks[i * 37 % running.max(1).min(tasks.len())];
        state.task_ended(job, task).expect("running task");
        let t = Instant::now();
        let c0 = cpu_ms();
        let r = state.schedule_event(NOW + 1 + i as i64);
        event_ms.push(t.elapsed().as_secs_f64() * 1e3);
        event_cpu.push(cpu_ms() - c0);
        let _ = state.take_dirty();
        state.cool_idle();
        if trim_each {
            trim_heap();
        }
        if i == 0 {
            println!(
                "[{name}] event pass (full cluster, one task ended): {} starts, {} fits, {} considered; phases us {:?}",
                r.starts.len(),
                r.fits,
                r.considered,
                r.phase_us
            );
        }
    }
    let n_events = event_ms.len();
    let (ev_best, ev_median) = best_median(&mut event_ms);
    let (evc_best, evc_median) = best_median(&mut event_cpu);

    let mut periodic_ms = Vec::new();
    let mut periodic_cpu = Vec::new();
    let mut periodic_phases: [Vec<f64>; 4] = Default::default();
    for i in 0..periodics {
        let t = Instant::now();
        let c0 = cpu_ms();
        let r = state.schedule(NOW + 60 * (i as i64 + 1));
        periodic_ms.push(t.elapsed().as_secs_f64() * 1e3);
        periodic_cpu.push(cpu_ms() - c0);
        for (v, &us) in periodic_phases.iter_mut().zip(&r.phase_us) {
            v.push(us as f64 / 1e3);
        }
        let _ = state.take_dirty();
        state.cool_idle();
        if trim_each {
            trim_heap();
        }
        if i == 0 {
            println!(
                "[{name}] periodic pass (full cluster, one minute later: priorities recomputed, jobs re-ordered): {} starts, {} fits; phases us {:?}",
                r.starts.len(),
                r.fits,
                r.phase_us
            );
        }
    }
    // The median wall time of each phase over the periodic passes (classify+priority, order,
    // dispatch, reasons), to see where a pass's time goes.
    let phase_median: Vec<String> = periodic_phases
        .iter_mut()
        .map(|v| format!("{:.1}", best_median(v).1))
        .collect();
    println!(
        "[{name}] periodic phases, median ms (classify+priority, order, dispatch, reasons): {}",
        phase_median.join(" / ")
    );
    let (p_best, p_median) = best_median(&mut periodic_ms);
    let (pc_best, pc_median) = best_median(&mut periodic_cpu);
    println!(
        "[{name}] SUMMARY first {:.1} ms wall ({first_cpu:.1} cpu); event best {ev_best:.1} / median {ev_median:.1} ms wall (cpu {evc_best:.1} / {evc_median:.1}) over {n_events}; periodic best {p_best:.1} / median {p_median:.1} ms wall (cpu {pc_best:.1} / {pc_median:.1}) over {periodics}; resident {:.0} MB, heap live {:.0} MB",
        first.as_secs_f64() * 1e3,
        rss_mb(),
        live_mb()
    );
    let resident = rss_mb();
    trim_heap();
    println!(
        "[{name}] resident {resident:.0} MB after the passes, {:.0} MB once the allocator gave its free pages back (malloc_trim)",
        rss_mb()
    );
    // SCHED_PASS_KEEP=1: the state is not freed, so that a heap profiler's "leaked" report
    // (`heaptrack`) is what the state holds after its passes.
    if std::env::var_os("SCHED_PASS_KEEP").is_some() {
        std::mem::forget(state);
    }
    (first.as_secs_f64() * 1e3, ev_median, p_median)
}

fn main() {
    println!(
        "size_of JobRecord {} B, JobSpec {} B, Submitter {} B (inline, before heap strings)",
        std::mem::size_of::<JobRecord>(),
        std::mem::size_of::<JobSpec>(),
        std::mem::size_of::<Submitter>()
    );
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", l.trim());
    }
    // SCHED_PASS_POLICIES=sge,fifo runs only those (for profiling one policy).
    let only = std::env::var("SCHED_PASS_POLICIES").ok();
    let events = env_usize("SCHED_PASS_EVENTS", 20);
    let periodics = env_usize("SCHED_PASS_PERIODIC", 7);
    let mut results: Vec<(&str, (f64, f64, f64))> = Vec::new();
    // SGE with share-tree tickets (the default configuration), then the other policies
    // (issue 4): the same jobs and hosts. Target: ≤ 50 ms per pass, under 200 MB, for each.
    for (name, sched) in [
        ("sge", "{policy: sge, max_reservation: 10}"),
        ("cluster", "{policy: cluster}"),
        ("fbsng", "{policy: fbsng}"),
        ("armada", "{policy: armada, armada: {seed: 1}}"),
        ("armada-drf", "{policy: armada, armada: {mode: drf}}"),
        ("fifo", "{policy: fifo}"),
        // The same cluster with 100 resource quota rules (issue 25: within twice the time of
        // the cluster without them).
        ("sge+rqs", "{policy: sge, max_reservation: 10}"),
        ("fifo+rqs", "{policy: fifo}"),
    ] {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|p| p == name))
        {
            continue;
        }
        // Each policy in a fresh state; the memory figure is the process's resident set
        // with that state alive (earlier states are dropped, and their freed heap given back
        // to the kernel, as a `sched_d` holding one state would not have it).
        let figures = run_policy(name, sched, events, periodics);
        trim_heap();
        results.push((name, figures));
    }
    for (name, (first, event, periodic)) in &results {
        let Some(base) = name.strip_suffix("+rqs") else {
            continue;
        };
        if let Some((_, (bf, be, bp))) = results.iter().find(|(n, _)| n == &base) {
            println!(
                "[rqs] {base}: first pass {bf:.1} ms without rules, {first:.1} ms with 100 (x{:.2}); event median {be:.1} / {event:.1} ms (x{:.2}); periodic median {bp:.1} / {periodic:.1} ms (x{:.2})",
                first / bf,
                event / be.max(1e-9),
                periodic / bp.max(1e-9)
            );
        }
    }
}
