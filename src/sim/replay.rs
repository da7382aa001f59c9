//! Replays a workload through the real scheduling state and pass ([`SchedState`]) on a
//! virtual clock: each job (each task of an array job) is submitted at its time, started when
//! a pass starts it (on the configured hosts, by the configured policy), and ends its
//! recorded run time later; its end is charged to the share-tree usage as `sched_d`'s
//! accounting charges it. A preemption the pass decides kills its victim at once and
//! requeues it, as the daemon's kill and the task's end do. Passes come at events, as in the
//! daemon: a pass after arrivals and ends, a full one (priorities recomputed) when
//! `schedule_interval` has gone by since the last. Unlike the daemon, no pass runs on the
//! clock alone: between events nothing frees resources, so such a pass could only start what
//! a reservation's window let through (a month of 15-second passes over a long queue would
//! cost hours and change nothing else; the policies' decays count the time between passes,
//! however far apart). No processes, no files.

use super::workload::TraceJob;
use crate::config::ClusterConfig;
use crate::model::{
    Holds, JobId, JobRecord, JobSpec, JobSubmission, PeRequest, ResourceRequest, SlotRange,
    Submitter,
};
use crate::sched::SchedState;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

/// What became of one job (one task of an array job).
#[derive(Debug, Clone, PartialEq)]
pub struct JobRun {
    pub number: u64,
    /// The array task (1 for a job that is not an array).
    pub task: u32,
    pub user: String,
    pub group: String,
    /// The trace's queue, else (a `qsub` workload without `-q`) the queue it ran in.
    pub queue: String,
    /// `-P`, and the Qube! cluster (`-cluster`, `-ac cluster=`; `/` for none).
    pub project: Option<String>,
    pub cluster: String,
    pub slots: u32,
    pub submit: i64,
    /// The start of the run that finished (a preempted run started earlier).
    pub start: i64,
    pub end: i64,
    /// The host its (master) task ran on.
    pub host: String,
    /// Runs of it killed by preemption before this one.
    pub preempted: u32,
}

/// A preemption the policy decided (`scheduler.preemption`).
#[derive(Debug, Clone, PartialEq)]
pub struct PreemptionEvent {
    pub time: i64,
    /// The victim's and the preemptor's numbers in the workload.
    pub job: u64,
    pub for_job: u64,
    pub host: String,
    /// Killed and requeued (`aggressive`), else left to finish and not started there again
    /// while the preemptor waits (`passive`).
    pub kill: bool,
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
    pub preemptions: Vec<PreemptionEvent>,
    /// Runs that preemption killed (the slots they held count in the shares over time).
    pub preempted_runs: Vec<JobRun>,
    /// Jobs that never started (asked for more than the cluster has, or no queue took them).
    pub never_started: Vec<u64>,
    /// Scheduling passes run.
    pub passes: u64,
    /// The first submission and the last end.
    pub span: (i64, i64),
    /// Finished runs whose CPU time the workload did not give: charged to the share tree
    /// as their run time on every slot (full CPU), where the daemon charges what it measured.
    pub cpu_assumed: usize,
}

/// The start of the virtual clock: SWF times are offsets; priorities look at ages, so they
/// need a plausible epoch.
const EPOCH: i64 = 1_800_000_000;

fn job_record(id: u32, j: &TraceJob, config: &ClusterConfig) -> Option<JobRecord> {
    let (user, group) = (j.user.clone(), j.group.clone());
    let spec = match &j.qsub {
        // A `qsub` line: its options, as under this configuration (checked before the replay).
        Some(options) => {
            let mut spec = super::workload::qsub_spec(options, config).ok()?;
            if spec.name.is_empty() {
                spec.name = format!("job{}", j.number);
            }
            spec.script_file = "true".into();
            spec.binary = true;
            spec
        }
        None => trace_spec(j, config),
    };
    Some(JobRecord::from_submission(JobSubmission {
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
    }))
}

/// The job a trace's fields describe.
fn trace_spec(j: &TraceJob, config: &ClusterConfig) -> JobSpec {
    let mut spec = JobSpec {
        name: j.name.clone().unwrap_or_else(|| format!("swf{}", j.number)),
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
    spec
}

/// A stable numeric id for a trace's user or group name (the records want one; the
/// policies go by name).
fn id_of(name: &str) -> u32 {
    100_000 + crate::launch::stable_hash(name) % 1_000_000
}

/// Replays `jobs` (in submission order) on `config`.
pub fn replay(config: &ClusterConfig, jobs: &[TraceJob]) -> Replay {
    replay_with_progress(config, jobs, &mut |_| {})
}

/// What a measurement made during a replay is told (`sim::accuracy`).
pub trait ReplayObserver {
    /// Jobs `ids` (numbered from 1 in the workload's order) were submitted at `t`; the pass
    /// at `t` has not run yet.
    fn submitted(
        &mut self,
        _state: &SchedState,
        _usage: &crate::sched::SharedUsage,
        _t: i64,
        _ids: &[JobId],
    ) {
    }
    /// A run ended and was accounted as the daemon accounts it.
    fn accounted(&mut self, _record: &crate::acct::AccountingRecord) {}
}

/// Observes nothing.
struct Unobserved;

impl ReplayObserver for Unobserved {}

/// The run of a job in progress.
struct Run {
    start: i64,
    end: i64,
    host: String,
    /// Killed by preemption: its end requeues the job.
    killed: bool,
}

/// The replay's state besides the scheduler's: the clock's events and what they did.
struct Replayer<'a> {
    config: &'a ClusterConfig,
    observer: &'a mut dyn ReplayObserver,
    jobs: &'a [TraceJob],
    state: SchedState,
    usage: crate::sched::SharedUsage,
    decay: gridspool_policy::sharetree::DecayConfig,
    /// (end, job, task) of the runs in progress.
    ends: BinaryHeap<Reverse<(i64, u32, u32)>>,
    running: HashMap<(u32, u32), Run>,
    preempted: HashMap<(u32, u32), u32>,
    /// Tasks submitted and not started (or requeued).
    waiting: usize,
    /// The jobs submitted so far, by number and by (owner, name): what `-hold_jid` refers to.
    by_number: HashMap<u64, u32>,
    by_name: HashMap<String, Vec<(u32, String)>>,
    out: Replay,
}

impl Replayer<'_> {
    /// Job `id`'s `-hold_jid` and `-hold_jid_ad` as jobs of the workload submitted before it
    /// (a number, or a name or pattern among its owner's jobs, as `qsub` resolves them); a
    /// reference to no such job waits for nothing.
    fn resolve_predecessors(&mut self, id: u32, record: &mut JobRecord) {
        let job = &self.jobs[id as usize - 1];
        self.by_number.insert(job.number, id);
        let owner = &record.submitter.owner;
        let resolve = |list: &[String]| -> Vec<JobId> {
            let mut ids: Vec<JobId> = list
                .iter()
                .flat_map(|entry| match entry.parse::<u64>() {
                    Ok(n) => self.by_number.get(&n).copied().into_iter().collect(),
                    // A plain name is looked up, a pattern matched against every name.
                    Err(_) if !entry.contains(['*', '?', '[']) => self
                        .by_name
                        .get(entry.as_str())
                        .into_iter()
                        .flatten()
                        .filter(|(_, o)| o == owner)
                        .map(|(j, _)| *j)
                        .collect::<Vec<_>>(),
                    Err(_) => self
                        .by_name
                        .iter()
                        .filter(|(name, _)| crate::compat::pattern::matches(entry, name))
                        .flat_map(|(_, jobs)| {
                            jobs.iter().filter(|(_, o)| o == owner).map(|(j, _)| *j)
                        })
                        .collect::<Vec<_>>(),
                })
                .filter(|&j| j != id)
                .map(JobId)
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        };
        record.spec.predecessors = resolve(&record.spec.hold_jid);
        record.spec.array_predecessors = resolve(&record.spec.hold_jid_ad);
        self.by_name
            .entry(record.spec.name.clone())
            .or_default()
            .push((id, owner.clone()));
    }

    /// The end of task `task` of job `id` at `at`: charged to the share-tree usage as the
    /// daemon's accounting charges it, and the task done (the job too after its last), or
    /// pending again when preemption killed it.
    fn end(&mut self, id: u32, task: u32, at: i64) {
        let Some(run) = self.running.remove(&(id, task)) else {
            return;
        };
        let job = &self.jobs[id as usize - 1];
        let ran = if run.killed {
            self.state.preempted_task_ended(JobId(id), task).ok_or(())
        } else {
            self.state.task_ended(JobId(id), task).map_err(|_| ())
        };
        let (Ok(ran), Some(record)) = (ran, self.state.job(JobId(id))) else {
            return;
        };
        let record = record.into_owned();
        let wall = (at - run.start).max(0);
        // The recorded CPU time (a killed run's part of it), else the run time on every slot.
        let cpu = match job.cpu {
            Some(cpu) if job.run_time > 0 => cpu * wall as f64 / job.run_time as f64,
            Some(cpu) => cpu,
            None => wall as f64 * f64::from(ran.slots),
        };
        let result = crate::model::TaskResult {
            job: JobId(id),
            task,
            host: run.host.clone(),
            start_time: run.start as f64,
            end_time: at as f64,
            rusage: crate::model::Rusage {
                utime: cpu,
                ..Default::default()
            },
            mem: job.mem,
            io: job.io,
            ..Default::default()
        };
        let placement = crate::sched::accounting::placement_of(&record, &ran);
        let acct =
            crate::acct::AccountingRecord::from_task(&record, &placement, &result, self.config);
        crate::acct::charge(
            &mut self.usage.lock().unwrap_or_else(|e| e.into_inner()),
            &acct,
            &self.decay,
        );
        self.observer.accounted(&acct);
        let done = JobRun {
            number: job.number,
            task,
            user: record.submitter.owner.clone(),
            group: record.submitter.group.clone(),
            queue: if job.queue.is_empty() {
                ran.queue.clone()
            } else {
                job.queue.clone()
            },
            project: record.spec.project.clone(),
            cluster: record.spec.cluster_path(),
            slots: ran.slots,
            submit: EPOCH + job.submit,
            start: run.start,
            end: at,
            host: run.host,
            preempted: self.preempted.get(&(id, task)).copied().unwrap_or(0),
        };
        self.out.span.1 = self.out.span.1.max(at);
        if run.killed {
            *self.preempted.entry((id, task)).or_default() += 1;
            self.waiting += 1;
            self.out.preempted_runs.push(done);
        } else {
            if job.cpu.is_none() {
                self.out.cpu_assumed += 1;
            }
            self.out.runs.push(done);
            if self.state.job(JobId(id)).is_some_and(|j| j.tasks.is_done()) {
                self.state.remove_job(JobId(id));
            }
        }
    }
}

/// [`replay`], telling `progress` how many jobs have ended so far (after each round of
/// events).
pub fn replay_with_progress(
    config: &ClusterConfig,
    jobs: &[TraceJob],
    progress: &mut dyn FnMut(usize),
) -> Replay {
    replay_observed(config, jobs, progress, &mut Unobserved)
}

/// [`replay_with_progress`], telling `observer` of each submission and end.
pub fn replay_observed(
    config: &ClusterConfig,
    jobs: &[TraceJob],
    progress: &mut dyn FnMut(usize),
    observer: &mut dyn ReplayObserver,
) -> Replay {
    let usage: crate::sched::SharedUsage = Arc::new(Mutex::new(Default::default()));
    let policy = crate::sched::SgePriority::new(config, usage.clone());
    let mut r = Replayer {
        config,
        observer,
        jobs,
        state: SchedState::with_policy(config.clone(), Box::new(policy)),
        usage,
        decay: crate::acct::decay_config(config),
        ends: BinaryHeap::new(),
        running: HashMap::new(),
        preempted: HashMap::new(),
        waiting: 0,
        by_number: HashMap::new(),
        by_name: HashMap::new(),
        out: Replay::default(),
    };
    let interval = crate::launch::parse_time(&config.scheduler.schedule_interval)
        .ok()
        .flatten()
        .unwrap_or(15)
        .max(1) as i64;
    let mut next = 0usize;
    let Some(first) = jobs.first() else {
        return r.out;
    };
    let mut t = EPOCH + first.submit;
    r.out.span.0 = t;
    let mut next_full = t;
    let mut wakeup: Option<i64> = None;
    loop {
        // Arrivals, then ends, at `t`.
        let mut immediate = Vec::new();
        let mut arrived = Vec::new();
        while next < jobs.len() && EPOCH + jobs[next].submit <= t {
            let id = next as u32 + 1;
            match job_record(id, &jobs[next], config) {
                Some(mut record) => {
                    r.resolve_predecessors(id, &mut record);
                    r.waiting += record.tasks.pending_count() as usize;
                    if record.spec.now {
                        immediate.push(id);
                    }
                    r.state.add_job(record);
                    arrived.push(JobId(id));
                }
                // Options this configuration refuses (`gridspool-sim` checks them first).
                None => r.out.never_started.push(jobs[next].number),
            }
            next += 1;
        }
        let mut freed = false;
        while let Some(Reverse((at, id, task))) = r.ends.peek().copied() {
            if at > t {
                break;
            }
            r.ends.pop();
            // An end planned for a run that preemption cut short is no longer due.
            if r.running.get(&(id, task)).is_some_and(|run| run.end == at) {
                r.end(id, task, at);
                freed = true;
            }
        }
        if freed {
            progress(r.out.runs.len());
        }
        if !arrived.is_empty() {
            r.observer.submitted(&r.state, &r.usage, t, &arrived);
        }
        // A pass: a full one when due (and jobs wait), else one for the events. Arrivals on a
        // cluster with no free slot start nothing: that pass is left out (the daemon's would
        // find nothing either), unless the policy preempts (an arrival may preempt).
        let full = r.waiting > 0 && t >= next_full;
        let idle = !full
            && !freed
            && wakeup.is_none_or(|w| w > t)
            && r.state.cluster.free_slots(t) == 0
            && !r.state.preempting();
        let result = if idle {
            crate::sched::PassResult::default()
        } else {
            r.out.passes += 1;
            let result = if full {
                next_full = t + interval;
                r.state.schedule(t)
            } else {
                r.state.schedule_event(t)
            };
            wakeup = result.next_wakeup;
            result
        };
        for s in &result.starts {
            if r.state.task_started(s.job, s.task).is_ok() {
                let end = t + jobs[s.job.0 as usize - 1].run_time.max(0);
                r.running.insert(
                    (s.job.0, s.task),
                    Run {
                        start: t,
                        end,
                        host: s.placement.host.clone(),
                        killed: false,
                    },
                );
                r.ends.push(Reverse((end, s.job.0, s.task)));
                r.waiting = r.waiting.saturating_sub(1);
            }
        }
        // `-now y` jobs that this pass did not start are dropped, as `sched_d` drops them.
        for id in immediate {
            if r.state
                .job(JobId(id))
                .is_some_and(|j| j.tasks.running.is_empty())
            {
                if let Some(record) = r.state.remove_job(JobId(id)) {
                    r.waiting = r
                        .waiting
                        .saturating_sub(record.tasks.pending_count() as usize);
                }
                r.out.never_started.push(jobs[id as usize - 1].number);
            }
        }
        // Preemptions: a killed run ends now (the daemon's kill, then the task's end).
        for p in &result.preemptions {
            r.out.preemptions.push(PreemptionEvent {
                time: t,
                job: jobs[p.job.0 as usize - 1].number,
                for_job: jobs[p.for_job.0 as usize - 1].number,
                host: p.host.clone(),
                kill: p.kill,
            });
            if let Some(run) = r.running.get_mut(&(p.job.0, p.task)).filter(|_| p.kill) {
                run.killed = true;
                run.end = t;
                r.ends.push(Reverse((t, p.job.0, p.task)));
            }
        }
        // The next moment anything happens.
        let candidates = [
            jobs.get(next).map(|j| EPOCH + j.submit),
            r.ends.peek().map(|Reverse((at, _, _))| *at),
            wakeup.filter(|w| *w > t),
        ];
        // Every candidate is later than `t`, but for the end of a job that started now and
        // ran no time, or was killed now, which the next round takes.
        match candidates.into_iter().flatten().min() {
            Some(at) => t = at.max(t),
            None => break,
        }
    }
    // Jobs still in the state never finished (never started, or killed and not started
    // again).
    let unfinished = (1..=jobs.len() as u32)
        .filter(|&id| r.state.job(JobId(id)).is_some())
        .map(|id| jobs[id as usize - 1].number);
    r.out.never_started.extend(unfinished);
    r.out
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

    fn job(number: u64, submit: i64, run_time: i64, user: i64) -> TraceJob {
        TraceJob {
            number,
            submit,
            wait: -1,
            run_time,
            processors: 1,
            requested_time: None,
            user: format!("u{user}"),
            group: "g1".into(),
            queue: "q1".into(),
            ..TraceJob::default()
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
        let rep = super::super::report::report("fifo", &config("fifo"), &r);
        assert_eq!(rep.utilisation, 1.0);
        assert_eq!(rep.by_user["u1"].jobs, 2);
        assert_eq!(rep.all.wait_median, 90.0);
    }

    #[test]
    fn each_task_of_an_array_job_runs_its_time() {
        // `-t 1-3` on one slot: the tasks one after the other, each a run of its own.
        let mut array = job(1, 0, 100, 1);
        array.qsub = Some(vec!["-t".into(), "1-3".into()]);
        let r = replay(&config("fifo"), &[array, job(2, 5, 10, 2)]);
        let runs: Vec<(u64, u32, i64, i64)> = r
            .runs
            .iter()
            .map(|j| (j.number, j.task, j.start - EPOCH, j.end - EPOCH))
            .collect();
        assert_eq!(
            runs,
            [
                (1, 1, 0, 100),
                (1, 2, 100, 200),
                (1, 3, 200, 300),
                (2, 1, 300, 310)
            ]
        );
        assert!(r.never_started.is_empty());
    }

    fn qsub_job(number: u64, submit: i64, run_time: i64, options: &str) -> TraceJob {
        TraceJob {
            qsub: Some(options.split_whitespace().map(String::from).collect()),
            ..job(number, submit, run_time, 1)
        }
    }

    #[test]
    fn hold_jid_waits_for_earlier_jobs_and_now_y_jobs_that_cannot_start_are_dropped() {
        // Two slots. `post` waits for both `pre` jobs (by name), `last` for job 1 by number;
        // the `-now y` job finds both slots taken and is dropped.
        let mut two = config("fifo");
        two.hosts[0].slots = Some(2);
        two.queues[0].slots = 2;
        let jobs = [
            qsub_job(1, 0, 100, "-N pre"),
            qsub_job(2, 0, 50, "-N pre"),
            qsub_job(3, 1, 10, "-N post -hold_jid pre"),
            qsub_job(4, 2, 10, "-now y"),
            qsub_job(5, 3, 10, "-hold_jid 1"),
        ];
        let r = replay(&two, &jobs);
        let start = |n: u64| {
            r.runs
                .iter()
                .find(|j| j.number == n)
                .map(|j| j.start - EPOCH)
        };
        assert_eq!(start(3), Some(100));
        assert_eq!(start(5), Some(100));
        assert_eq!(start(4), None);
        assert_eq!(r.never_started, [4]);
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
