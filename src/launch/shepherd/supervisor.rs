//! The supervisor of one task (`supervise <taskdir>`, or the start server's fork): starts the
//! job and its cgroup, takes signals with `sigwait` (kills, `h_rt`/`s_rt`, notify, the start
//! server's end), samples memory, reaps, and makes the result (usage, exit status, `failed`)
//! durable in `result.json` or passes it to the start server. How the job's process is set
//! up as its owner is in [`super::job_start`].

use super::failed;
use super::job_start::Procedure;
use super::procs::{
    descendants, now_secs, proc_start_time, reaped_children_cpu, reaped_children_io,
    supervisor_signals,
};
use super::start_server::{RESULT_ACK_SIGNAL, ResultChannel, SERVER_GONE_SIGNAL};
use super::task_start::announce_started;
use crate::launch::LaunchError;
use crate::launch::spec::LaunchSpec;
use crate::launch::taskdir::TaskDir;
use crate::launch::usage::{self};
use crate::model::UsageReport;
use crate::model::{Rusage, TaskResult};
use nix::sys::signal::{SigSet, Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub(super) fn supervise_mode(dir: &Path) -> Result<(), LaunchError> {
    let dir = TaskDir {
        path: dir.to_path_buf(),
    };
    supervise(dir, None, None, None)
}

/// A held start's supervisor (`HELD_START`): where its directory is prepared, and the pipe
/// its server wakes it on.
pub(super) struct Held {
    wake: std::os::fd::OwnedFd,
    staging: TaskDir,
    /// The staging directory reached through a descriptor (`/proc/self/fd/N`): the server
    /// may rename the directory into place at any moment after the `hold`, also while the
    /// supervisor is still writing its files there.
    files: TaskDir,
    _open: std::os::fd::OwnedFd,
}

impl Held {
    /// `open`: the staging directory, opened by the server before the fork.
    pub(super) fn new(
        wake: std::os::fd::OwnedFd,
        open: std::os::fd::OwnedFd,
        staging: PathBuf,
    ) -> Held {
        use std::os::fd::AsRawFd;
        Held {
            wake,
            files: TaskDir {
                path: PathBuf::from(format!("/proc/self/fd/{}", open.as_raw_fd())),
            },
            staging: TaskDir { path: staging },
            _open: open,
        }
    }
}

/// The supervisor, in a process of its own: `supervise <taskdir>` after its `exec`, or the
/// start server's fork (which passes the spec it has already parsed, and with `--results`
/// the channel to pass the result back on).
pub(super) fn supervise(
    dir: TaskDir,
    spec: Option<LaunchSpec>,
    channel: Option<ResultChannel>,
    held: Option<Held>,
) -> Result<(), LaunchError> {
    let signals = supervisor_signals();
    signals
        .thread_block()
        .map_err(|e| LaunchError::Protocol(format!("sigprocmask: {e}")))?;
    // Told when the server ends (its session closed: `sched_d` stopped or died), by a
    // signal taken with the others; a server that ended before this is seen by the parent
    // having changed.
    let mut server_gone = match &channel {
        Some(c) => {
            nix::sys::prctl::set_pdeathsig(SERVER_GONE_SIGNAL).is_err()
                || nix::unistd::getppid() != c.server
        }
        None => true,
    };
    // Fails only when already a session leader, which is as good.
    let _ = nix::unistd::setsid();
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let me = std::process::id();
    let start = proc_start_time(me).unwrap_or(0);
    held.as_ref().map_or(&dir, |h| &h.files).write_unsynced(
        "shepherd.pid",
        format!("{me} {start}\n").as_bytes(),
        0o644,
    )?;
    let spec = match spec {
        Some(spec) => spec,
        None => {
            let bytes = crate::file::open::read(&dir.spec())
                .map_err(|e| LaunchError::io("read", dir.spec(), e.into()))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| LaunchError::Protocol(format!("bad spec: {e}")))?
        }
    };
    let mut sup = Supervisor::new(spec, dir.clone(), signals);
    sup.held = held;
    let result = sup.run();
    if sup.dropped {
        // Never committed: nothing ran, nothing is reported.
        sup.cleanup();
        return Ok(());
    }
    server_gone |= sup.server_gone;
    // TMPDIR goes before the result is published: once it is out, the task is over for
    // everyone watching.
    sup.cleanup();
    let json = serde_json::to_vec(&result).map_err(|e| LaunchError::Protocol(e.to_string()))?;
    if let Some(c) = channel
        && !server_gone
        && report_to_server(&c, &json, &signals)
    {
        // `sched_d` has recorded it, and the server has removed the task directory.
        return Ok(());
    }
    write_result_until_stored(&dir, &json)?;
    if let Some(active_jobs) = dir.path.parent() {
        crate::launch::wake::announce_result(active_jobs);
    }
    Ok(())
}

/// Writes `result.json`, waiting out a full disk (issue 12): the result is the one copy of
/// how the task ended, and a supervisor that gave up would leave a directory without a live
/// supervisor or a result, which is reported as ended with `failed` 100. So it retries,
/// with a backoff up to a few seconds, for as long as the storage refuses (`sched_d` does
/// not record anything meanwhile either); any other error is final.
fn write_result_until_stored(dir: &TaskDir, json: &[u8]) -> Result<(), LaunchError> {
    let mut wait = Duration::from_millis(100);
    loop {
        match dir.write("result.json", json, 0o644) {
            Err(LaunchError::Spool(e)) if e.is_storage_failure() => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// Passes the result to the start server, which sends it to `sched_d`, and waits for the
/// acknowledgement that `sched_d` gives once the accounting record and exits line are
/// durable (the server then removes the task directory and signals us). `false` when the
/// result did not get through or the server ended before the acknowledgement: then the
/// result goes into the task directory, durably, as without a server, for a watcher (of
/// this `sched_d`, or of the next one) to report. A result is reported twice at most, never
/// lost; `sched_d` records it once (the exits line tells).
fn report_to_server(channel: &ResultChannel, json: &[u8], signals: &SigSet) -> bool {
    /// `PIPE_BUF` on Linux: a write up to this size is never interleaved with another.
    const PIPE_BUF: usize = 4096;
    let mut line = Vec::with_capacity(json.len() + 1);
    line.extend_from_slice(json);
    line.push(b'\n');
    if line.len() > PIPE_BUF || json.contains(&b'\n') {
        return false;
    }
    // SIGPIPE is blocked: a server that has gone makes this EPIPE.
    match nix::unistd::write(&channel.pipe, &line) {
        Ok(n) if n == line.len() => {}
        _ => return false,
    }
    loop {
        match signals.wait() {
            Ok(s) if s == RESULT_ACK_SIGNAL => return true,
            Ok(s) if s == SERVER_GONE_SIGNAL => return false,
            // A kill that came too late, a stray child: the job is over already.
            _ => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillReason {
    Qdel,
    HardRuntime,
}

pub(in crate::launch) struct Supervisor {
    pub(super) spec: LaunchSpec,
    pub(super) dir: TaskDir,
    signals: SigSet,
    pub(super) tmpdir: Option<super::tmpdir::TaskTmpdir>,
    start_wall: f64,
    started: Instant,
    job_pid: Option<Pid>,
    status: Option<WaitStatus>,
    kill_reason: Option<KillReason>,
    kill_at: Option<Instant>,
    s_rt_sent: bool,
    maxvmem: u64,
    mem_integral: f64,
    last_sample: Instant,
    /// The start server's parent-death signal came while the job ran.
    server_gone: bool,
    /// The task's cgroup, where the host has them (`launch::cgroup`).
    pub(super) cgroup: Option<crate::launch::cgroup::TaskCgroup>,
    /// A held start not yet committed: the files written before `go` go to its staging
    /// directory ([`Self::files_dir`]).
    held: Option<Held>,
    /// The held start was dropped: the task never was on this host.
    dropped: bool,
}

impl Supervisor {
    pub(in crate::launch) fn new(spec: LaunchSpec, dir: TaskDir, signals: SigSet) -> Self {
        Supervisor {
            spec,
            dir,
            signals,
            tmpdir: None,
            start_wall: now_secs(),
            started: Instant::now(),
            job_pid: None,
            status: None,
            kill_reason: None,
            kill_at: None,
            s_rt_sent: false,
            maxvmem: 0,
            mem_integral: 0.0,
            last_sample: Instant::now(),
            server_gone: false,
            cgroup: None,
            held: None,
            dropped: false,
        }
    }

    /// Where the task's files are written now: its staging directory until a held start is
    /// committed, then its own. (What the job is told, `JOB_SCRIPT` and the like, names its
    /// own: the job runs only after the commit.)
    pub(super) fn files_dir(&self) -> &TaskDir {
        self.held.as_ref().map_or(&self.dir, |h| &h.files)
    }

    /// A held start waits here for its server's word: `true` once the server has renamed its
    /// directory into place (the commit; the byte that wakes us only says so), `false` when
    /// it was dropped (the pipe closed without the rename: `drop`, the server's end, or its
    /// input's), after its staging directory is gone. Without a held start, `true` at once.
    fn committed(&mut self) -> bool {
        let Some(held) = self.held.take() else {
            return true;
        };
        let mut byte = [0u8; 1];
        while let Err(nix::errno::Errno::EINTR) = nix::unistd::read(&held.wake, &mut byte) {}
        if !held.staging.path.exists() && self.dir.path.exists() {
            return true;
        }
        let _ = std::fs::remove_dir_all(&held.staging.path);
        false
    }

    fn base_result(&self) -> TaskResult {
        TaskResult {
            job: self.spec.job,
            task: self.spec.task,
            host: self.spec.host.clone(),
            start_time: self.start_wall,
            end_time: now_secs(),
            pe_task: self.spec.pe_task.clone(),
            ..TaskResult::default()
        }
    }

    fn setup_failure(&self, failed: u32, error: String) -> TaskResult {
        eprintln!("job {}: {error}", self.spec.task_name());
        TaskResult {
            failed,
            error: Some(error),
            job_error: failed::caused_by_job(failed, &self.spec),
            ..self.base_result()
        }
    }

    pub(in crate::launch) fn run(&mut self) -> TaskResult {
        let prepared = self.prepare_job();
        if prepared.is_ok() {
            self.cgroup = self.spec.cgroups.as_ref().and_then(|policy| {
                crate::launch::cgroup::TaskCgroup::create(
                    policy,
                    &crate::launch::cgroup::cell_group(&self.spec.sge_root, &self.spec.sge_cell),
                    &self.spec.task_name(),
                    self.spec.limits.memory_max,
                    self.spec.limits.slots,
                    &self.spec.denied_device_files,
                )
            });
        }
        // A held start's failure to prepare is reported only once it is committed: before,
        // the task is not on this host.
        if !self.committed() {
            self.dropped = true;
            return self.base_result();
        }
        let prepared = match prepared {
            Ok(p) => p,
            Err(f) => {
                announce_started(0);
                return self.setup_failure(f.failed, f.error);
            }
        };
        // sge_shepherd: the prolog first; when it fails the job does not start, but the
        // epilog still runs, for cleanup (its own failure is not reported then).
        if let Some(command) = self.spec.prolog.clone()
            && let Err(f) = self.procedure(Procedure::Prolog, &command, &prepared)
        {
            announce_started(0);
            if let Some(epilog) = self.spec.epilog.clone() {
                let _ = self.procedure(Procedure::Epilog, &epilog, &prepared);
            }
            return self.setup_failure(f.failed, f.error);
        }
        let job_pid = match self.spawn_job(&prepared.start) {
            Ok(pid) => pid,
            Err(f) => {
                announce_started(0);
                return self.setup_failure(f.failed, f.error);
            }
        };
        self.job_pid = Some(job_pid);
        // Setup failures were read before the job was announced (see spawn_job).
        announce_started(job_pid.as_raw() as u32);
        self.wait_loop();
        let mut result = self.finish();
        if let Some(command) = self.spec.epilog.clone()
            && let Err(f) = self.procedure(Procedure::Epilog, &command, &prepared)
            && result.failed == 0
        {
            eprintln!("job {}: {}", self.spec.task_name(), f.error);
            result.failed = f.failed;
            result.error = Some(f.error);
        }
        result
    }

    fn wait_loop(&mut self) {
        nix::unistd::alarm::set(1);
        while self.status.is_none() {
            let sig = match self.signals.wait() {
                Ok(s) => s,
                Err(_) => continue,
            };
            match sig {
                Signal::SIGTERM | Signal::SIGINT | Signal::SIGQUIT => {
                    self.kill_reason.get_or_insert(KillReason::Qdel);
                    self.kill_tree();
                }
                Signal::SIGUSR1 => {
                    // A kill with notification (`-notify`): SIGUSR2 now, SIGKILL after the
                    // queue's notify time. A second request does not restart the clock.
                    self.kill_reason.get_or_insert(KillReason::Qdel);
                    if self.kill_at.is_none() {
                        self.signal_job(Signal::SIGUSR2);
                        self.kill_at =
                            Some(Instant::now() + Duration::from_secs(self.spec.notify_secs));
                    }
                }
                Signal::SIGALRM => {
                    self.tick();
                    nix::unistd::alarm::set(1);
                }
                s if s == SERVER_GONE_SIGNAL => self.server_gone = true,
                _ => {}
            }
            self.reap();
        }
        nix::unistd::alarm::cancel();
        // The job is over: take down what it left behind, as SGE kills the job's processes,
        // and what is left in its cgroup (also what a subreaper of the job's own took).
        if let Some(group) = &self.cgroup {
            group.kill_all();
        }
        for _ in 0..100 {
            // As a child subreaper the supervisor inherits every orphaned descendant, so with
            // no child left there is no descendant either, and no /proc scan is needed.
            if !self.reap() {
                break;
            }
            let left = descendants(std::process::id());
            if left.is_empty() {
                break;
            }
            for p in &left {
                let _ = kill(Pid::from_raw(*p as i32), Signal::SIGKILL);
            }
            self.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reap();
    }

    /// Reaps every exited child; records the job's status. `false` when no child is left.
    fn reap(&mut self) -> bool {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => return true,
                Err(nix::errno::Errno::ECHILD) => return false,
                Err(_) => return true,
                Ok(status) => {
                    if status.pid() == self.job_pid
                        && matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..))
                    {
                        self.status = Some(status);
                    }
                }
            }
        }
    }

    fn tick(&mut self) {
        let elapsed = self.started.elapsed().as_secs();
        // The job's processes are sampled every second at first, then every 5 s: a /proc scan
        // per task per second is too much on a host with many tasks (SGE samples even less
        // often).
        if elapsed < 10 || elapsed.is_multiple_of(5) {
            self.sample_usage();
        }
        if let Some(s_rt) = self.spec.limits.s_rt
            && elapsed >= s_rt
            && !self.s_rt_sent
        {
            self.s_rt_sent = true;
            self.signal_job(Signal::SIGUSR1);
        }
        if let Some(h_rt) = self.spec.limits.h_rt
            && elapsed >= h_rt
            && self.kill_reason.is_none()
        {
            self.kill_reason = Some(KillReason::HardRuntime);
            self.kill_tree();
        }
        if self.kill_at.is_some_and(|t| Instant::now() >= t) {
            self.kill_tree();
        }
    }

    /// Samples the job's processes: peak and integral memory for the accounting record, and
    /// the online usage that `qstat` shows while the job runs (left in the task directory).
    fn sample_usage(&mut self) {
        let live = usage::sample_tree(&descendants(std::process::id()));
        let dt = self.last_sample.elapsed().as_secs_f64();
        self.last_sample = Instant::now();
        self.maxvmem = self.maxvmem.max(live.vmem);
        self.mem_integral += live.vmem as f64 / 1e9 * dt;
        let report = UsageReport {
            job: self.spec.job,
            task: self.spec.task,
            time: now_secs() as i64,
            usage: usage::task_usage(
                live,
                reaped_children_cpu(),
                reaped_children_io().unwrap_or(0),
                self.mem_integral,
                self.maxvmem,
            ),
        };
        if let Err(e) = usage::publish(&self.dir, &report) {
            tracing::debug!("cannot leave the usage report: {e}");
        }
    }

    /// Sends a signal to the job's process group and every other descendant.
    fn signal_job(&self, sig: Signal) {
        if let Some(pid) = self.job_pid {
            let _ = killpg(pid, sig);
        }
        for p in descendants(std::process::id()) {
            let _ = kill(Pid::from_raw(p as i32), sig);
        }
    }

    fn kill_tree(&mut self) {
        tracing::info!(job = %self.spec.job, task = self.spec.task, "killing the job's processes");
        self.signal_job(Signal::SIGKILL);
        if let Some(group) = &self.cgroup {
            group.kill_all();
        }
    }

    fn finish(&mut self) -> TaskResult {
        let mut result = self.base_result();
        match self.status {
            Some(WaitStatus::Exited(_, code)) => result.exit_status = code,
            Some(WaitStatus::Signaled(_, sig, _)) => {
                result.exit_status = 128 + sig as i32;
                result.signal = Some(sig as i32);
            }
            _ => {}
        }
        result.failed = match (self.kill_reason, result.signal) {
            (Some(KillReason::HardRuntime), _) => failed::LIMIT_ENFORCED,
            (Some(KillReason::Qdel), _) => failed::AFTER_JOB,
            // SGE 8.1.9 records 100 for a job that died of the s_rt warning.
            (None, Some(_)) if self.s_rt_sent => failed::AFTER_JOB,
            _ => 0,
        };
        if let Ok(u) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        {
            let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            result.rusage = Rusage {
                utime: secs(u.user_time()),
                stime: secs(u.system_time()),
                maxrss: u.max_rss() as f64,
                ixrss: u.shared_integral() as f64,
                ismrss: 0.0,
                idrss: u.unshared_data_integral() as f64,
                isrss: u.unshared_stack_integral() as f64,
                minflt: u.minor_page_faults() as u64,
                majflt: u.major_page_faults() as u64,
                nswap: u.full_swaps() as u64,
                inblock: u.block_reads() as f64,
                oublock: u.block_writes() as u64,
                msgsnd: u.ipc_sends() as u64,
                msgrcv: u.ipc_receives() as u64,
                nsignals: u.signals() as u64,
                nvcsw: u.voluntary_context_switches() as u64,
                nivcsw: u.involuntary_context_switches() as u64,
            };
        }
        if let Some(group) = &self.cgroup {
            // The kernel's count: also processes nobody waited for.
            if let Some((user, system)) = group.cpu_seconds() {
                result.rusage.utime = result.rusage.utime.max(user);
                result.rusage.stime = result.rusage.stime.max(system);
            }
            if let Some(peak) = group.memory_peak() {
                self.maxvmem = self.maxvmem.max(peak);
            }
            // Killed at its memory limit (itself, or the command its `-b y` shell waited
            // for): as SGE accounts a job killed for its limits.
            if result.exit_status == 128 + Signal::SIGKILL as i32 && group.oom_killed() {
                tracing::info!(job = %self.spec.job, task = self.spec.task, "killed at its memory limit");
                result.failed = failed::AFTER_JOB;
            }
        }
        result.maxvmem = self.maxvmem as f64;
        result.mem = self.mem_integral;
        // In GB as the accounting file keeps it (`qacct` prints it as a memory size).
        if let Some(bytes) = reaped_children_io() {
            result.io = bytes as f64 / (1024.0 * 1024.0 * 1024.0);
        }
        result
    }

    pub(in crate::launch) fn cleanup(&mut self) {
        if let Some(t) = self.tmpdir.take() {
            t.remove();
        }
        if let Some(group) = self.cgroup.take() {
            group.remove();
        }
    }
}
