//! Replays a workload through the real scheduling state and pass ([`SchedState`]) on a
//! virtual clock: each job is submitted at its time, started when a pass starts it (on the
//! configured hosts, by the configured policy), and ends its recorded run time later; its
//! end is charged to the share-tree usage as `sched_d`'s accounting charges it. Passes come
//! at events, as in the daemon: a pass after arrivals and ends, a full one (priorities
//! recomputed) when `schedule_interval` has gone by since the last. Unlike the daemon, no
//! pass runs on the clock alone: between events nothing frees resources, so such a pass
//! could only start what a reservation's window let through (a month of 15-second passes
//! over a long queue would cost hours and change nothing else). No processes, no files.

use super::swf::SwfJob;
use crate::config::ClusterConfig;
use crate::model::{
    Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange,
    Submitter,
};
use crate::sched::SchedState;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

/// What became of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRun {
    pub number: u64,
    pub user: String,
    pub group: String,
    pub queue: String,
    pub slots: u32,
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    /// The host its (master) task ran on.
    pub host: String,
}

impl JobRun {
    pub fn wait(&self) -> i64 {
        self.start - self.submit
    }
}

/// A replay's result: the runs, and what the workload could not do here.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub runs: Vec<JobRun>,
    /// Jobs that never started (asked for more than the cluster has, or no queue took them).
    pub never_started: Vec<u64>,
    /// Scheduling passes run.
    pub passes: u64,
    /// The first submission and the last end.
    pub span: (i64, i64),
}

/// The start of the virtual clock: SWF times are offsets; priorities look at ages, so they
/// need a plausible epoch.
const EPOCH: i64 = 1_800_000_000;

fn job_record(id: u32, j: &SwfJob, config: &ClusterConfig) -> JobRecord {
    let (user, group) = (j.user.clone(), j.group.clone());
    let mut spec = JobSpec {
        name: format!("swf{}", j.number),
        script_file: "true".into(),
        binary: true,
        ..JobSpec::default()
    };
    if j.processors > 1 {
        // The first parallel environment of the configuration takes the job's processors
        // (without one, every job is a one-slot job).
        if let Some(pe) = config.parallel_environments.first() {
            spec.pe = Some(PeRequest {
                name: pe.name.clone(),
                range: SlotRange {
                    min: j.processors,
                    max: j.processors,
                },
            });
        }
    }
    spec.project = j.project.clone();
    spec.priority = j.priority;
    if let Some(t) = j.requested_time {
        spec.hard_resources.push(ResourceRequest {
            name: "h_rt".into(),
            value: t.to_string(),
        });
    }
    // A queue of the trace that the configuration has too is asked for (`-q`).
    if config.queue(&j.queue).is_some() {
        spec.hard_queues.push(j.queue.clone());
    }
    JobRecord::from_submission(JobSubmission {
        v: 1,
        id: JobId(id),
        submitter: Submitter {
            owner: user.clone(),
            uid: id_of(&user),
            gid: id_of(&group),
            group,
            submission_time: EPOCH + j.submit,
            sge_o_home: "/".into(),
            sge_o_log_name: user,
            sge_o_path: "/bin".into(),
            sge_o_shell: "/bin/sh".into(),
            sge_o_workdir: "/".into(),
            sge_o_host: "sim".into(),
            sge_o_mail: None,
            sge_o_tz: None,
        },
        spec,
        holds: Holds::NONE,
    })
}

/// A stable numeric id for a trace's user or group name (the records want one; the
/// policies go by name).
fn id_of(name: &str) -> u32 {
    100_000 + crate::launch::stable_hash(name) % 1_000_000
}

/// Replays `jobs` (in submission order) on `config`.
pub fn replay(config: &ClusterConfig, jobs: &[SwfJob]) -> Replay {
    replay_with_progress(config, jobs, &mut |_| {})
}

/// [`replay`], telling `progress` how many jobs have ended so far (after each round of
/// events).
pub fn replay_with_progress(
    config: &ClusterConfig,
    jobs: &[SwfJob],
    progress: &mut dyn FnMut(usize),
) -> Replay {
    let usage: crate::sched::SharedUsage = Arc::new(Mutex::new(Default::default()));
    let policy = crate::sched::SgePriority::new(config, usage.clone());
    let mut state = SchedState::with_policy(config.clone(), Box::new(policy));
    let decay = crate::acct::decay_config(config);
    let interval = crate::launch::parse_time(&config.scheduler.schedule_interval)
        .ok()
        .flatten()
        .unwrap_or(15)
        .max(1) as i64;
    let mut out = Replay::default();
    let mut ends: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
    let mut started: HashMap<u32, (i64, String)> = HashMap::new();
    let mut next = 0usize;
    let mut waiting = 0usize;
    let Some(first) = jobs.first() else {
        return out;
    };
    let mut t = EPOCH + first.submit;
    out.span.0 = t;
    let mut next_full = t;
    let mut wakeup: Option<i64> = None;
    loop {
        let mut freed = false;
        // Arrivals, then ends, at `t`.
        while next < jobs.len() && EPOCH + jobs[next].submit <= t {
            let id = next as u32 + 1;
            state.add_job(job_record(id, &jobs[next], config));
            waiting += 1;
            next += 1;
        }
        while let Some(Reverse((at, id))) = ends.peek().copied() {
            if at > t {
                break;
            }
            ends.pop();
            freed = true;
            let job = &jobs[id as usize - 1];
            if let (Ok(ran), Some(record)) = (state.task_ended(JobId(id), 1), state.job(JobId(id)))
            {
                let placement = crate::launch::Placement {
                    host: ran.host.clone(),
                    queue: ran.queue.clone(),
                    slots: ran.slots,
                    granted: ran.grants(),
                    pe: record.spec.pe.as_ref().map(|p| p.name.clone()),
                };
                let (start, host) = started.remove(&id).unwrap_or((at, ran.host.clone()));
                let cpu = job
                    .cpu
                    .unwrap_or_else(|| (at - start) as f64 * f64::from(ran.slots));
                let result = crate::launch::TaskResult {
                    job: JobId(id),
                    task: 1,
                    host: host.clone(),
                    start_time: start as f64,
                    end_time: at as f64,
                    rusage: crate::launch::Rusage {
                        utime: cpu,
                        ..Default::default()
                    },
                    mem: job.mem,
                    io: job.io,
                    ..Default::default()
                };
                let acct =
                    crate::acct::AccountingRecord::from_task(&record, &placement, &result, config);
                crate::acct::charge(
                    &mut usage.lock().unwrap_or_else(|e| e.into_inner()),
                    &acct,
                    &decay,
                );
                out.runs.push(JobRun {
                    number: job.number,
                    user: record.submitter.owner.clone(),
                    group: record.submitter.group.clone(),
                    queue: job.queue.clone(),
                    slots: ran.slots,
                    submit: EPOCH + job.submit,
                    start,
                    end: at,
                    host,
                });
                out.span.1 = out.span.1.max(at);
            }
            state.remove_job(JobId(id));
        }
        if freed {
            progress(out.runs.len());
        }
        // A pass: a full one when due (and jobs wait), else one for the events. Arrivals on a
        // cluster with no free slot start nothing: that pass is left out (the daemon's would
        // find nothing either).
        let full = waiting > 0 && t >= next_full;
        let idle =
            !full && !freed && wakeup.is_none_or(|w| w > t) && state.cluster.free_slots(t) == 0;
        let result = if idle {
            crate::sched::PassResult::default()
        } else {
            out.passes += 1;
            let r = if full {
                next_full = t + interval;
                state.schedule(t)
            } else {
                state.schedule_event(t)
            };
            wakeup = r.next_wakeup;
            r
        };
        for s in &result.starts {
            if state.task_started(s.job, s.task).is_ok() {
                let job = &jobs[s.job.0 as usize - 1];
                started.insert(s.job.0, (t, s.placement.host.clone()));
                ends.push(Reverse((t + job.run_time.max(0), s.job.0)));
                waiting = waiting.saturating_sub(1);
            }
        }
        // The next moment anything happens.
        let candidates = [
            jobs.get(next).map(|j| EPOCH + j.submit),
            ends.peek().map(|Reverse((at, _))| *at),
            wakeup.filter(|w| *w > t),
        ];
        // Every candidate is later than `t`, but for the end of a job that started now and
        // ran no time, which the next round takes: the clock never stands still twice.
        match candidates.into_iter().flatten().min() {
            Some(at) => t = at.max(t),
            None => break,
        }
    }
    let ran: std::collections::HashSet<u64> = out.runs.iter().map(|r| r.number).collect();
    out.never_started = jobs
        .iter()
        .map(|j| j.number)
        .filter(|n| !ran.contains(n))
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(policy: &str) -> ClusterConfig {
        ClusterConfig::parse(&format!(
            "hosts:\n  - {{name: n1, slots: 1}}\nqueues:\n  - {{name: all.q, hostlist: [n1], slots: 1, pe_list: [smp]}}\nparallel_environments:\n  - {{name: smp, slots: 99, allocation_rule: $pe_slots}}\nscheduler: {{policy: {policy}, schedule_interval: \"0:0:15\"}}\n"
        ))
        .expect("config")
    }

    fn job(number: u64, submit: i64, run_time: i64, user: i64) -> SwfJob {
        SwfJob {
            number,
            submit,
            wait: -1,
            run_time,
            processors: 1,
            requested_time: None,
            user: format!("u{user}"),
            group: "g1".into(),
            queue: "q1".into(),
            cpu: None,
            mem: 0.0,
            io: 0.0,
            project: None,
            priority: 0,
        }
    }

    #[test]
    fn one_slot_runs_the_jobs_one_after_another_in_submission_order() {
        let jobs = [job(1, 0, 100, 1), job(2, 10, 50, 2), job(3, 20, 10, 1)];
        let r = replay(&config("fifo"), &jobs);
        let waits: Vec<(u64, i64)> = r.runs.iter().map(|j| (j.number, j.wait())).collect();
        assert_eq!(waits, [(1, 0), (2, 90), (3, 130)]);
        assert!(r.never_started.is_empty());
        assert_eq!(r.span.1 - r.span.0, 160);
        let rep = super::super::report::report("fifo", &r, 1);
        assert_eq!(rep.utilisation, 1.0);
        assert_eq!(rep.by_user["u1"].jobs, 2);
        assert_eq!(rep.all.wait_median, 90.0);
    }

    #[test]
    fn a_job_larger_than_the_cluster_never_starts() {
        let mut big = job(1, 0, 10, 1);
        big.processors = 4;
        let r = replay(&config("fifo"), &[big, job(2, 5, 10, 1)]);
        assert_eq!(r.never_started, [1]);
        assert_eq!(r.runs.len(), 1);
    }
}
