//! The real launcher (`crate::launch`) behind the daemon's [`TaskRunner`] seam: local hosts
//! run shepherds directly, ssh hosts through OpenSSH, as the configuration says.

use super::runner::{PeTaskStart, Reattached, RunnerError, TaskRunner};
use crate::config::{ClusterConfig, LaunchMethod};
use crate::launch::{LaunchEvent, LaunchSpec, Launcher, shepherd};
use crate::model::Placement;
use crate::model::{JobId, JobRecord, RunState, RunningTask, TaskId};
use crate::spool::Spool;
use std::sync::mpsc::Sender;

/// Starts, kills and re-attaches tasks through [`Launcher`].
pub struct LaunchRunner {
    launcher: Launcher,
    spool: Spool,
    config: ClusterConfig,
    /// The specs of the tasks held on their hosts ([`TaskRunner::hold`]), until started or
    /// released.
    held: std::collections::HashMap<(JobId, TaskId), LaunchSpec>,
}

impl LaunchRunner {
    /// A runner whose launcher records what it hears from hosts in `liveness` (shared with
    /// the host probe).
    pub fn new(
        spool: &Spool,
        config: ClusterConfig,
        events: Sender<LaunchEvent>,
        liveness: std::sync::Arc<crate::launch::HostLiveness>,
    ) -> Result<Self, RunnerError> {
        let opts = crate::launch::LauncherOptions::defaults(spool).map_err(other)?;
        let launcher = Launcher::with_liveness(&config, spool, events, opts, liveness)
            .map_err(|e| RunnerError::Other(e.to_string()))?;
        Ok(LaunchRunner {
            launcher,
            spool: spool.clone(),
            config,
            held: std::collections::HashMap::new(),
        })
    }

    /// Whether a local host's execution spool shows no trace of the task: its shepherd never
    /// ran (the daemon stopped between deciding the start and starting it).
    fn never_reached_local_host(&self, job: JobId, task: &RunningTask) -> bool {
        let local = self
            .config
            .host(&task.host)
            .is_some_and(|h| matches!(h.launch, LaunchMethod::Local));
        if !local {
            return false;
        }
        let exec_spool = crate::launch::exec_spool_dir(self.spool.root(), &task.host);
        // The previous master's start server first: once it is gone, a start it was handed
        // (or a held one it was told to commit) has its directory or never will.
        shepherd::displace_start_server(&exec_spool, self.launcher.master_id());
        !shepherd::task_dirs(&exec_spool)
            .iter()
            .any(|(j, t, _)| *j == job && *t == task.task)
    }
}

fn other(e: impl std::fmt::Display) -> RunnerError {
    RunnerError::Other(e.to_string())
}

impl TaskRunner for LaunchRunner {
    fn start(
        &mut self,
        job: &JobRecord,
        task: TaskId,
        placement: &Placement,
        restarted: bool,
    ) -> Result<(), RunnerError> {
        let held = self.held.remove(&(job.id, task));
        let held_on = held.as_ref().map(|spec| spec.host.clone());
        let spec = match held {
            Some(spec) => spec,
            None => LaunchSpec::build(&self.spool, &self.config, job, task, placement, restarted)
                .map_err(other)?,
        };
        let started = self.launcher.start(spec).map_err(other);
        if started.is_err()
            && let Some(host) = held_on
        {
            // Not started: not left held either.
            self.launcher.release(job.id, task, &host);
        }
        started
    }

    fn hold(&mut self, job: &JobRecord, task: TaskId, placement: &Placement, restarted: bool) {
        if let Ok(spec) =
            LaunchSpec::build(&self.spool, &self.config, job, task, placement, restarted)
            && self.launcher.hold(&spec)
        {
            self.held.insert((job.id, task), spec);
        }
    }

    fn release(&mut self, job: JobId, task: TaskId) {
        if let Some(spec) = self.held.remove(&(job, task)) {
            self.launcher.release(job, task, &spec.host);
        }
    }

    fn kill(&mut self, job: JobId, task: TaskId, notify: bool) -> Result<(), RunnerError> {
        self.launcher.kill(job, task, notify).map_err(other)
    }

    fn suspend(&mut self, job: JobId, task: TaskId, stop: bool) -> Result<(), RunnerError> {
        self.launcher.suspend(job, task, stop).map_err(other)
    }

    /// A task that was only being handed over (`t`) and left no trace on its local host never
    /// started: it goes back to pending. Everything else is followed again; the launcher
    /// reports a task its host has no trace of as ended with `failed 100`, never runs it twice.
    fn reattach(&mut self, job: &JobRecord, task: &RunningTask) -> Reattached {
        if task.state == RunState::Transferring && self.never_reached_local_host(job.id, task) {
            return Reattached::NeverStarted;
        }
        match self.launcher.reattach(&[crate::launch::Reattach {
            job: job.id,
            task: task.task,
            host: task.host.clone(),
            transferring: task.state == RunState::Transferring,
        }]) {
            Ok(()) => Reattached::Attached,
            Err(e) => {
                tracing::warn!(job = %job.id, task = task.task, "cannot re-attach: {e}");
                Reattached::Unknown
            }
        }
    }

    fn reconfigure(&mut self, config: &ClusterConfig) {
        self.config = config.clone();
        self.launcher.reconfigure(config);
    }

    fn acknowledge(&mut self, job: JobId, task: TaskId, host: &str) {
        self.launcher.acknowledge(job, task, host);
    }

    fn forget(&mut self, job: JobId, task: TaskId) {
        self.launcher.forget(job, task);
    }

    fn sweep(&mut self, host: &str, tasks: Vec<(JobId, TaskId)>) {
        if let Err(e) = self.launcher.sweep(host, tasks) {
            tracing::warn!(host, "cannot settle the runs rescheduled off the host: {e}");
        }
    }

    /// The pe task's spec is its task's, placed on its own host (the host's architecture,
    /// execution spool, queue and share of the slots for its limits), with the command of
    /// `qrsh -inherit`, no prolog or epilog (SGE runs them for the job, not per pe task),
    /// the variables it passed over the job's, and the devices of the task when it runs on
    /// the task's host (`LaunchSpec::build`).
    fn start_pe_task(
        &mut self,
        job: &JobRecord,
        task: &RunningTask,
        start: &PeTaskStart,
    ) -> Result<(), RunnerError> {
        let request = &start.request;
        let placement = Placement {
            host: start.host.clone(),
            queue: start.queue.clone(),
            slots: task.slots,
            granted: task.grants(),
            pe: job.spec.pe.as_ref().map(|p| p.name.clone()),
        };
        let mut spec = LaunchSpec::build(
            &self.spool,
            &self.config,
            job,
            task.task,
            &placement,
            task.restarted,
        )
        .map_err(other)?;
        let (command, args) = request
            .command
            .split_first()
            .ok_or_else(|| other("no command"))?;
        spec.command = crate::launch::JobCommand::Binary {
            command: command.clone(),
            args: args.to_vec(),
            shell: request.shell,
        };
        spec.interactive = Some(request.session.clone());
        spec.prolog = None;
        spec.epilog = None;
        if request.cwd.is_some() {
            spec.cwd = request.cwd.clone();
        }
        for var in &request.env {
            spec.env.retain(|v| v.name != var.name);
            spec.env.push(var.clone());
        }
        spec.pe_task = Some(start.id.clone());
        self.launcher.start_pe_task(spec).map_err(other)
    }

    fn end_pe_tasks(&mut self, job: JobId, task: TaskId) {
        self.launcher.end_pe_tasks(job, task);
    }
}
