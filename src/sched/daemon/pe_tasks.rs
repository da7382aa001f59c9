//! `qrsh -inherit`: pe tasks in running tasks of parallel jobs, checked as SGE's execd
//! checks them (`handle_task` in execd_job_exec.c): the job's owner asks, its PE has
//! `control_slaves`, the host is one the task was granted and a slot of the grant there is
//! free (one on the master host is the master task's own when `job_is_first_task`). Each
//! pe task gets the id SGE gives it (`<n>.<host>`, numbered per host), its own accounting
//! record, and its exit status goes to `qrsh` in the request's reply.

use super::Daemon;
use crate::model::TaskResult;
use crate::model::{JobId, PeTaskRequest, Request, RunningTask, TaskId};
use crate::sched::runner::PeTaskStart;
use std::collections::HashMap;
use tracing::{error, info, warn};

/// The pe tasks of running tasks.
#[derive(Debug, Default)]
pub(super) struct PeTasks {
    by_task: HashMap<(JobId, TaskId), TaskPeTasks>,
}

/// Kept from the first pe task of a task until the task has ended and its last pe task too:
/// ids are never given twice in a task's run.
#[derive(Debug, Default)]
struct TaskPeTasks {
    /// The last id given on each host.
    numbered: HashMap<String, u32>,
    live: Vec<LivePeTask>,
    /// The task has ended.
    ended: bool,
}

#[derive(Debug)]
struct LivePeTask {
    id: String,
    /// The task's run as the pe task's record shows it: its host and queue, one slot.
    ran: RunningTask,
    /// The request to answer when it ends.
    seq: u64,
}

/// `node2` for `node2.example.org`: hosts are matched on their first label, as SGE's
/// unqualified host names are.
fn short(host: &str) -> &str {
    host.split('.').next().unwrap_or(host)
}

impl Daemon {
    /// Checks a `qrsh -inherit` request and starts the pe task, or answers with why not.
    pub(super) fn start_pe_task(&mut self, req: &Request, asked: &PeTaskRequest) {
        let refused = match self.accept_pe_task(req, asked) {
            Ok(()) => return,
            Err(why) => why,
        };
        warn!(job = %asked.job, task = asked.task, host = %asked.host, user = %req.requester.user, "pe task refused: {refused}");
        self.answer_pe_task(req.seq, Err(refused));
    }

    fn accept_pe_task(&mut self, req: &Request, asked: &PeTaskRequest) -> Result<(), String> {
        let (id, task) = (asked.job, asked.task);
        let job = self
            .state
            .job(id)
            .ok_or_else(|| format!("received task belongs to job {id} but that job is not here"))?
            .into_owned();
        if req.requester.uid != job.submitter.uid {
            return Err(format!(
                "denied request of user \"{}\" to start a PE task in job of user \"{}\"",
                req.requester.user, job.submitter.owner
            ));
        }
        let running = job
            .tasks
            .running
            .iter()
            .find(|r| r.task == task && !r.deleting)
            .ok_or_else(|| format!("received task belongs to job {id} but that job is not here"))?
            .clone();
        let pe = job
            .spec
            .pe
            .as_ref()
            .and_then(|p| self.state.config.pe(&p.name))
            .filter(|p| p.control_slaves)
            .ok_or_else(|| {
                format!(
                    "received task belongs to job {id} but that job is not suited for starting tasks"
                )
            })?;
        let first_is_master = pe.job_is_first_task;
        let granted = running.grants();
        let no_free_queue = || {
            format!(
                "no free queue for job {id} of user {}@{} (localhost = {})",
                job.submitter.owner, running.host, asked.host
            )
        };
        let (host, queue, slots) = granted
            .iter()
            .find(|(h, _, _)| h.eq_ignore_ascii_case(&asked.host))
            .or_else(|| {
                granted
                    .iter()
                    .find(|(h, _, _)| short(h).eq_ignore_ascii_case(short(&asked.host)))
            })
            .cloned()
            .ok_or_else(no_free_queue)?;
        let entry = self.pe_tasks.by_task.entry((id, task)).or_default();
        let busy = entry.live.iter().filter(|t| t.ran.host == host).count() as u32
            + u32::from(first_is_master && host == running.host);
        if busy >= slots {
            return Err(no_free_queue());
        }
        let n = entry.numbered.entry(host.clone()).or_insert(0);
        *n += 1;
        let start = PeTaskStart {
            id: format!("{n}.{}", short(&host)),
            host: host.clone(),
            queue,
            request: asked.clone(),
        };
        self.runner
            .start_pe_task(&job, &running, &start)
            .map_err(|e| e.to_string())?;
        info!(job = %id, task, pe_task = %start.id, host = %host, "pe task starting");
        let ran = RunningTask {
            host,
            queue: start.queue.clone(),
            slots: 1,
            ..running
        };
        self.pe_tasks
            .by_task
            .entry((id, task))
            .or_default()
            .live
            .push(LivePeTask {
                id: start.id,
                ran,
                seq: req.seq,
            });
        Ok(())
    }

    /// A pe task ended: its accounting record, then `qrsh`'s answer (the exit status, or
    /// why it could not start).
    pub(super) fn pe_task_ended(&mut self, result: TaskResult) {
        let (id, task) = (result.job, result.task);
        let pe_task = result.pe_task.clone().unwrap_or_default();
        let Some(entry) = self.pe_tasks.by_task.get_mut(&(id, task)) else {
            warn!(job = %id, task, pe_task, "end of an unknown pe task: dropped");
            return;
        };
        let Some(at) = entry.live.iter().position(|t| t.id == pe_task) else {
            warn!(job = %id, task, pe_task, "end of an unknown pe task: dropped");
            return;
        };
        let live = entry.live.remove(at);
        if entry.ended && entry.live.is_empty() {
            self.pe_tasks.by_task.remove(&(id, task));
        }
        match self.state.job(id) {
            Some(job) => {
                if let Err(e) = self
                    .acct
                    .record(&job, &live.ran, &result)
                    .and_then(|()| self.acct.commit())
                {
                    error!(job = %id, task, pe_task, "accounting: {e}");
                }
            }
            None => {
                warn!(job = %id, task, pe_task, "the job is gone: the pe task's end is not accounted")
            }
        }
        info!(job = %id, task, pe_task, exit_status = result.exit_status, failed = result.failed, "pe task ended");
        let answer = match result.error {
            None => Ok(result.exit_status),
            Some(why) => Err(why),
        };
        self.answer_pe_task(live.seq, answer);
    }

    /// The task ended: its pe tasks end (their ends come later, each with its record).
    pub(super) fn end_pe_tasks(&mut self, id: JobId, task: TaskId) {
        let Some(entry) = self.pe_tasks.by_task.get_mut(&(id, task)) else {
            return;
        };
        entry.ended = true;
        if entry.live.is_empty() {
            self.pe_tasks.by_task.remove(&(id, task));
        } else {
            self.runner.end_pe_tasks(id, task);
        }
    }

    fn answer_pe_task(&self, seq: u64, answer: Result<i32, String>) {
        let reply = crate::spool::Reply {
            v: 1,
            ok: answer.is_ok(),
            exit_status: answer.as_ref().ok().copied(),
            message: answer.err().unwrap_or_default(),
        };
        if let Err(e) = self.spool.write_reply(seq, &reply) {
            error!(seq, "cannot answer qrsh -inherit: {e}");
        }
    }
}
