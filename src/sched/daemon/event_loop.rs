//! The event loop: [`Daemon::run`] (recovery, watcher, signals, the wait for inputs and
//! timers), what each input does ([`Daemon::handle`], the spool path hints), and
//! [`Daemon::act`], the one place that decides, after a wake-up, whether to record ends,
//! apply requests and run a scheduling pass, or wait out a storage block. Apart because it
//! is the order of everything else; the work itself is in the other parts.

use super::priority_refresh::{
    PRIORITY_REFRESH_BUSY_EVERY, PRIORITY_REFRESH_PER_PASS, PRIORITY_REFRESH_QUIET,
};
use super::{Daemon, DaemonError, Input, RELEASE_AFTER_JOBS, io, load_config, now};
use crate::mail::Mailer;
use crate::model::JobId;
use notify::Watcher;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use tracing::{error, info};

/// What a changed path in the spool announces: the request queue to read, or a job file.
enum SpoolInput {
    Requests,
    Job(JobId),
    /// `ars/<id>.ar`: an advance reservation submitted.
    Ar(u32),
}

/// The input a path names, if any: a request, or a job file (`jobs/<id>.job`); temporary
/// names (a leading `.`) and everything else are `sched_d`'s own writes or of no interest.
fn spool_input(path: &Path) -> Option<SpoolInput> {
    let name = path.file_name().and_then(|n| n.to_str())?;
    if name.starts_with('.') {
        return None;
    }
    match path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
    {
        Some("requests") => Some(SpoolInput::Requests),
        Some("ars") => name
            .strip_suffix(".ar")
            .and_then(|s| s.parse::<u32>().ok())
            .map(SpoolInput::Ar),
        Some("jobs") => name
            .strip_suffix(".job")
            .and_then(|s| s.parse::<JobId>().ok())
            .map(SpoolInput::Job),
        _ => None,
    }
}

/// Whether a watcher event may announce an input ([`spool_input`]): a job file or a request
/// that appeared (created, linked or renamed into place). Most events in `jobs/` are
/// `sched_d`'s own writes (a state file's temporary name created, written, closed and
/// renamed; an exits line appended; retired files removed) and so are the removals in
/// `requests/`: passed on, each would wake the main loop for nothing. Events are hints
/// either way; the periodic rescan catches anything missed.
fn announces_input(ev: &notify::Event) -> bool {
    use notify::EventKind;
    if matches!(ev.kind, EventKind::Remove(_) | EventKind::Access(_)) {
        return false;
    }
    ev.paths.iter().any(|p| {
        // A name that is not text cannot be judged here: passed on.
        p.file_name().and_then(|n| n.to_str()).is_none() || spool_input(p).is_some()
    })
}

/// How often an otherwise idle loop looks whether the listing index's merge has finished.
const LISTING_MERGE_POLL: Duration = Duration::from_millis(200);

impl Daemon {
    /// Runs until SIGTERM/SIGINT: recovery, watching, passes. Returns after draining.
    pub fn run(mut self) -> Result<(), DaemonError> {
        // Watch before reading the spool: a file published during recovery is then either
        // listed or announced (and loading a job twice is harmless), never missed.
        self.forward_signals()?;
        let _watcher = self.watch()?;
        // An index left by an earlier sched_d goes before any state file changes; this one's
        // is written once every job has been read.
        self.index = crate::spool::IndexWriter::begin(&self.spool);
        // A marker left by a daemon that died blocked; this one puts its own up if need be.
        self.spool.clear_storage_blocked();
        self.recover();
        if let Some(why) = self.failure.take() {
            self.block(why);
        }
        self.index.publish();
        info!(spool = %self.spool.root().display(), jobs = self.state.job_count(), "sched_d running");
        let periodic = self.opts.periodic.unwrap_or_else(|| {
            Duration::from_secs(
                crate::time::parse_time(&self.state.config.scheduler.schedule_interval)
                    .filter(|s| *s > 0 && *s < 86_400)
                    .unwrap_or(15) as u64,
            )
        });
        let mut next_periodic = Instant::now() + periodic;
        let mut next_rescan = Instant::now() + self.opts.rescan;
        loop {
            self.act();
            if self.terminate {
                break;
            }
            self.refresh_estimates();
            let t = now();
            let mut deadline = next_periodic.min(next_rescan);
            let mut soonest = self.retire_at.values().copied().min();
            if let Some(w) = self.wakeup {
                soonest = Some(soonest.map_or(w, |s| s.min(w)));
            }
            if let Some(s) = soonest {
                let at = Instant::now() + Duration::from_secs((s - t).max(0) as u64);
                deadline = deadline.min(at);
            }
            if let Some((at, _)) = self.running_deadlines.front() {
                deadline = deadline.min(*at);
            }
            if let Some(b) = &self.blocked {
                deadline = deadline.min(b.retry_at);
            }
            if let Some(at) = self.reschedule_due.values().min() {
                deadline = deadline.min(*at);
            }
            if let Some(at) = self.settling.values().min() {
                deadline = deadline.min(*at);
            }
            if let Some(at) = self.estimates.due_at(self.estimates_refresh()) {
                deadline = deadline.min(at);
            }
            // A finished merge of the listing index is put in place by the next wake-up.
            if self.index.merging() {
                deadline = deadline.min(Instant::now() + LISTING_MERGE_POLL);
            }
            // Refreshing priorities is background work: inputs go first, and it goes on
            // once none has come for a moment, or now and then while they keep coming.
            if self.refresh_budget > 0 {
                deadline = deadline.min(
                    (self.last_input + PRIORITY_REFRESH_QUIET)
                        .min(self.last_refresh + PRIORITY_REFRESH_BUSY_EVERY),
                );
            }
            let timeout = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(timeout) {
                Ok(input) => {
                    let mut work = self.handle(input);
                    while let Ok(more) = self.rx.try_recv() {
                        work |= self.handle(more);
                    }
                    if work {
                        self.last_input = Instant::now();
                        self.estimates.prompt();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if self.refresh_budget > 0 {
                let at = Instant::now();
                if at >= self.last_input + PRIORITY_REFRESH_QUIET
                    || at >= self.last_refresh + PRIORITY_REFRESH_BUSY_EVERY
                {
                    self.last_refresh = at;
                    self.refresh_some();
                }
            }
            let at = Instant::now();
            if at >= next_periodic {
                next_periodic = at + periodic;
                self.pass_needed = true;
                self.periodic_due = true;
                self.full_pass = true;
            }
            if at >= next_rescan {
                next_rescan = at + self.opts.rescan;
                self.rescan_needed = true;
            }
            if self.wakeup.is_some_and(|w| now() >= w) {
                self.wakeup = None;
                self.estimates.prompt();
                self.pass_needed = true;
                self.full_pass = true;
            }
            self.running_due(at);
            self.reschedule_due_hosts(at);
            self.settling_due_hosts(at);
        }
        self.drain();
        Ok(())
    }

    /// Does what the inputs asked for, in a fixed order. The ends taken are recorded first;
    /// their states are written with the pass's (one batch, one sync of `jobs/`, before
    /// anything starts on the slots they freed), and their hosts told at the end.
    ///
    /// Blocked, it only retries what could not be written (at the backoff's time, on a
    /// spool event, when stopping); once that passes, it goes on as usual. A failure on the
    /// way ([`Self::storage_failed`]) stops what would build on it: no requests applied,
    /// no jobs retired, no pass (nothing starts), requests not removed.
    fn act(&mut self) {
        self.still_master();
        if let Some(b) = &self.blocked {
            let due = self.terminate
                || std::mem::take(&mut self.spool_event)
                || Instant::now() >= b.retry_at;
            if !due {
                return;
            }
            self.failure = None;
            self.settle();
            if let Some(why) = self.failure.take() {
                self.block(why);
                return;
            }
            self.unblock();
            if self.terminate {
                return;
            }
        }
        self.failure = None;
        self.act_unblocked();
        if let Some(why) = self.failure.take() {
            self.block(why);
        }
    }

    fn act_unblocked(&mut self) {
        self.record_ends();
        if self.failure.is_none() && self.recorded.iter().any(|e| e.exit.is_none()) {
            // A preempted task is pending again and may start in this pass, in a new
            // directory of the same name on the same host: its old one must go first, and
            // only once its state no longer says it runs (it has no exits line to tell a
            // restarted daemon it ended).
            self.settle();
        }
        if self.terminate {
            return;
        }
        if self.rescan_needed {
            self.rescan_needed = false;
            self.scan_jobs_dir();
            self.requests_needed = true;
        }
        if self.failure.is_some() {
            // Ends not durable: nothing may build on them (their results stay on their
            // hosts); requests, retirement and the pass wait for the retry.
            self.settle();
            return;
        }
        if self.requests_needed {
            self.requests_needed = false;
            self.process_requests();
            // `qdel -f` accounts the tasks it takes out of their records: recorded before
            // those records are written.
            self.record_ends();
        }
        // After the requests: a `qconf` change they carry (a reload or a configuration
        // edit) holds for the pass that follows, so a job submitted just after it runs under it.
        if self.reload_needed {
            self.reload_needed = false;
            match load_config(&self.spool) {
                Ok(c) => {
                    self.runner.reconfigure(&c);
                    self.acct.reconfigure(&c);
                    self.mailer = Mailer::new(c.mailer());
                    self.state.reload_config(c);
                    info!("configuration reloaded");
                    self.pass_needed = true;
                }
                Err(e) => error!("configuration not reloaded, keeping the old one: {e}"),
            }
        }
        if self.failure.is_none() {
            self.retire_due();
        }
        if self.pass_needed && self.failure.is_none() {
            self.pass_needed = false;
            self.run_pass();
        }
        // The pass has written the states that the requests and the ends changed with its
        // own (a job released and dispatched in one wake-up is written once, as `t`); this
        // covers a wake-up without a pass. Only then do the requests go and the hosts learn
        // that their results may go.
        self.settle();
        if self.failure.is_some() {
            // The states these requests changed are not all on disk: they stay, to be
            // removed after the retry that writes them (applying one again changes nothing).
            return;
        }
        for (seq, name) in std::mem::take(&mut self.absorbed) {
            if let Err(e) = self.spool.remove_request(seq) {
                error!("cannot remove request {name}: {e}");
            }
        }
        self.jobs_high = self.jobs_high.max(self.state.job_count());
        if self.periodic_due {
            self.periodic_due = false;
            // Repack the job map when it grew by a quarter since the last time.
            let n = self.state.job_count();
            if n > 1000 && n > self.compacted_at + self.compacted_at / 4 {
                self.state.compact();
                self.compacted_at = n;
            }
            // A queue of thousands that drained to a quarter: what was sized for it goes back
            // to the kernel (the freed pieces are spread over the heap, which glibc keeps).
            if self.jobs_high >= RELEASE_AFTER_JOBS && n * 4 <= self.jobs_high {
                self.state.release_spare_memory();
                crate::launch::trim_heap();
                self.compacted_at = n;
                self.jobs_high = n;
            }
            self.refresh_budget = PRIORITY_REFRESH_PER_PASS;
        }
    }

    /// Takes one input; false when it asked for nothing (a watcher event of `sched_d`'s own
    /// writes in `jobs/`).
    fn handle(&mut self, input: Input) -> bool {
        match input {
            Input::Fs(paths) => {
                self.spool_event = true;
                let mut work = false;
                for p in paths {
                    work |= self.hint(&p);
                }
                return work;
            }
            Input::Rescan => {
                self.spool_event = true;
                self.rescan_needed = true;
            }
            Input::Launch(ev) => self.launch_event(*ev),
            Input::Scrape(answer) => {
                self.refresh_metrics();
                let _ = answer.send(());
                return false;
            }
            Input::StatusPage(answer, forecast) => {
                let _ = answer.send(self.status_page(&forecast));
                return false;
            }
            Input::ForecastDone(done) => {
                self.forecast_done(done);
                return false;
            }
            Input::Signal(sig) => {
                if sig == signal_hook::consts::SIGHUP {
                    info!("SIGHUP: reloading the configuration");
                    self.reload_needed = true;
                } else {
                    info!(signal = sig, "draining and exiting");
                    self.terminate = true;
                }
            }
        }
        true
    }

    /// One changed path: a new job file is loaded, a request makes the queue be read.
    /// Returns whether it was one of those.
    fn hint(&mut self, path: &Path) -> bool {
        match spool_input(path) {
            Some(SpoolInput::Requests) => {
                self.requests_needed = true;
                true
            }
            Some(SpoolInput::Ar(id)) => {
                self.load_ar(id);
                true
            }
            Some(SpoolInput::Job(id))
                if self.state.job(id).is_none()
                    && !self.refused.contains(&id)
                    && path.symlink_metadata().is_ok() =>
            {
                self.load_job(id);
                true
            }
            _ => false,
        }
    }

    fn watch(&self) -> Result<Box<dyn Watcher>, DaemonError> {
        let tx = self.tx.clone();
        let handler = move |res: notify::Result<notify::Event>| {
            let input = match res {
                Ok(ev) if ev.need_rescan() => Input::Rescan,
                Ok(ev) if !announces_input(&ev) => return,
                Ok(ev) => Input::Fs(ev.paths),
                Err(_) => Input::Rescan,
            };
            let _ = tx.send(input);
        };
        let mut watcher: Box<dyn Watcher> = match self.opts.poll {
            Some(interval) => Box::new(notify::PollWatcher::new(
                handler,
                notify::Config::default().with_poll_interval(interval),
            )?),
            None => Box::new(notify::recommended_watcher(handler)?),
        };
        let ars = self.spool.ars_dir();
        if let Err(e) = self.spool.ensure_ars_dir() {
            tracing::warn!("cannot create {}: {e}", ars.display());
        }
        for dir in [self.spool.jobs_dir(), self.spool.requests_dir(), ars] {
            watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
        }
        Ok(watcher)
    }

    fn forward_signals(&self) -> Result<(), DaemonError> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
            .map_err(|e| io("install signal handlers", Path::new("signals"), e))?;
        let tx = self.tx.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for sig in signals.forever() {
                    if tx.send(Input::Signal(sig)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| io("spawn thread", Path::new("signals"), e))?;
        Ok(())
    }
}
