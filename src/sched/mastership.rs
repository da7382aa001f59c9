//! Which `sched_d` is the cell's master, and the shadow that takes over when it dies (SGE's
//! `sge_shadowd`).
//!
//! Two files in `daemon/`, both replaced atomically (write, rename):
//! - `heartbeat`: `COUNTER HOST PID` (and ` stopped` after a stop on purpose), rewritten by
//!   the master every heartbeat interval from a thread of its own, so a long pass never
//!   stops it. A shadow decides by the *content* changing, read by opening the file, never by
//!   its modification time or by comparing two hosts' clocks: on NFS, attribute caches make
//!   mtimes lie, while an open revalidates the file (close-to-open consistency).
//! - `act_master`: `HOST PID` of the master (SGE's `act_qmaster`). The master writes it when
//!   it starts; a shadow that takes over writes itself there *before* anything else. A master
//!   that finds another daemon named there has been replaced: it stops at once, before
//!   writing or starting anything more ([`Mastership::check`], called by the daemon at every
//!   wake-up and before every start), and exits with a message.
//!
//! The spool lock (`daemon/sched_d.lock`) still makes one master per cell. A shadow whose
//! master's heartbeat stopped waits for that lock — on NFS a dead client's lock is released
//! when its lease expires (NFSv4: the server's lease time, 90 s by default; NFSv3: lockd's
//! grace) — but no longer than a second takeover delay: a master that is frozen (stopped, or
//! hung on a hard NFS mount) keeps its lock as long as it lives, and is fenced by
//! `act_master` instead: the moment it runs again it reads that it was replaced and exits,
//! and the shadow, which went on meanwhile, gets the lock then.

use super::daemon::{DaemonError, SpoolLock};
use crate::spool::Spool;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// The heartbeat file in `daemon/`.
pub const HEARTBEAT: &str = "heartbeat";
/// The file naming the master in `daemon/`.
pub const ACT_MASTER: &str = "act_master";

/// `sched_d`'s exit code when another daemon holds the cell, or has taken it over from this
/// one: a service manager should not start it again (`RestartPreventExitStatus=3`), as it
/// would only find the cell taken again.
pub const EXIT_CELL_TAKEN: u8 = 3;

/// The master's heartbeat interval unless configured (`sched_d --heartbeat-interval`).
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(2);
/// How long a shadow waits for a heartbeat that stopped (`sched_d --takeover-after`).
pub const DEFAULT_TAKEOVER_AFTER: Duration = Duration::from_secs(10);

/// A `sched_d` process: its host and pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonId {
    pub host: String,
    pub pid: u32,
}

impl DaemonId {
    /// This process.
    pub fn me() -> Self {
        DaemonId {
            host: crate::identity::short_hostname(),
            pid: std::process::id(),
        }
    }

    /// Writes this daemon into `daemon/act_master`.
    fn name_as_master(&self, daemon_dir: &Path) -> Result<(), DaemonError> {
        crate::file::durable::write_replace(
            daemon_dir,
            ACT_MASTER,
            format!("{} {}\n", self.host, self.pid).as_bytes(),
            0o644,
        )
        .map_err(crate::spool::SpoolError::from)?;
        Ok(())
    }

    fn parse(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        Some(DaemonId {
            host: words.next()?.to_string(),
            pid: words.next()?.parse().ok()?,
        })
    }
}

impl std::fmt::Display for DaemonId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (pid {})", self.host, self.pid)
    }
}

/// The daemon named in `daemon/act_master`, if any.
pub fn act_master(daemon_dir: &Path) -> Option<DaemonId> {
    crate::file::open::read_to_string(&daemon_dir.join(ACT_MASTER))
        .ok()
        .and_then(|text| DaemonId::parse(&text))
}

/// What `daemon/heartbeat` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    pub counter: u64,
    pub master: DaemonId,
    /// The master stopped on purpose (SIGTERM): a shadow does not replace it.
    pub stopped: bool,
}

/// Reads `daemon/heartbeat`.
pub fn read_heartbeat(daemon_dir: &Path) -> Option<Beat> {
    let text = crate::file::open::read_to_string(&daemon_dir.join(HEARTBEAT)).ok()?;
    let mut words = text.split_whitespace();
    let counter = words.next()?.parse().ok()?;
    let host = words.next()?.to_string();
    let pid = words.next()?.parse().ok()?;
    Some(Beat {
        counter,
        master: DaemonId { host, pid },
        stopped: words.next() == Some("stopped"),
    })
}

/// This daemon as the cell's master: what its heartbeat thread and its event loop share.
#[derive(Debug)]
pub struct Mastership {
    daemon_dir: PathBuf,
    me: DaemonId,
    interval: Duration,
    counter: AtomicU64,
    /// When the heartbeat was last written: a master that has not beaten for a while may
    /// have been frozen, and looks at `act_master` itself before it acts.
    last_beat: Mutex<Instant>,
    deposed: AtomicBool,
}

/// A master found another daemon in `act_master`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shadow on {by} took over this cell; exiting")]
pub struct Replaced {
    pub by: DaemonId,
}

impl Mastership {
    /// Takes the mastership of a locked cell: writes `act_master` and a first heartbeat
    /// (its counter goes on from the last one, so a shadow sees the change).
    pub fn claim(spool: &Spool, interval: Duration) -> Result<Arc<Self>, DaemonError> {
        let daemon_dir = spool.daemon_dir();
        let me = DaemonId::me();
        me.name_as_master(&daemon_dir)?;
        let counter = read_heartbeat(&daemon_dir).map_or(0, |b| b.counter);
        let m = Arc::new(Mastership {
            daemon_dir,
            me,
            interval,
            counter: AtomicU64::new(counter),
            last_beat: Mutex::new(Instant::now()),
            deposed: AtomicBool::new(false),
        });
        m.beat(false)?;
        Ok(m)
    }

    /// Whether this daemon is still the master: `Err` once another has written itself into
    /// `act_master`. Cheap while the heartbeat thread keeps beating (it reads the file every
    /// beat); after a pause longer than two beats (this process was frozen) it reads the
    /// file itself, before the daemon acts on a state that may no longer be its own.
    pub fn check(&self) -> Result<(), Replaced> {
        if !self.deposed.load(Ordering::SeqCst) {
            let since = self
                .last_beat
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .elapsed();
            if since <= self.interval * 2 {
                return Ok(());
            }
            self.look();
        }
        match act_master(&self.daemon_dir) {
            Some(other) if self.deposed.load(Ordering::SeqCst) => Err(Replaced { by: other }),
            _ => Ok(()),
        }
    }

    /// Reads `act_master`: another daemon there deposes this one.
    fn look(&self) {
        if let Some(named) = act_master(&self.daemon_dir)
            && named != self.me
        {
            self.deposed.store(true, Ordering::SeqCst);
        }
    }

    /// Writes the next heartbeat (`stopped`: the last one, after a stop on purpose).
    fn beat(&self, stopped: bool) -> Result<(), DaemonError> {
        self.look();
        if self.deposed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        let line = format!(
            "{n} {} {}{}\n",
            self.me.host,
            self.me.pid,
            if stopped { " stopped" } else { "" }
        );
        crate::file::durable::write_replace(&self.daemon_dir, HEARTBEAT, line.as_bytes(), 0o644)
            .map_err(crate::spool::SpoolError::from)?;
        *self.last_beat.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        Ok(())
    }
}

/// Ends this process because another daemon took the cell over: nothing of this one may be
/// written any more (not even its pid file's removal: the pid file is the new master's).
pub fn exit_replaced(why: &Replaced) -> ! {
    error!("{why}");
    eprintln!("sched_d: {why}");
    std::process::exit(i32::from(EXIT_CELL_TAKEN))
}

/// The master's heartbeat thread; [`Heartbeat::stop`] writes the last beat of a stop on
/// purpose.
pub struct Heartbeat {
    mastership: Arc<Mastership>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    pub fn start(mastership: Arc<Mastership>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (m, flag) = (Arc::clone(&mastership), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("heartbeat".into())
            .spawn(move || {
                // One line when beats start failing (a full disk would repeat it every beat),
                // one when they pass again.
                let mut failing = false;
                while !flag.load(Ordering::SeqCst) {
                    match m.beat(false) {
                        Err(e) if !failing => {
                            warn!("heartbeat not written (a shadow may take over): {e}");
                            failing = true;
                        }
                        Ok(()) if failing => {
                            info!("heartbeat written again");
                            failing = false;
                        }
                        _ => {}
                    }
                    if let Err(replaced) = m.check() {
                        exit_replaced(&replaced);
                    }
                    let next = Instant::now() + m.interval;
                    while !flag.load(Ordering::SeqCst) && Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(50).min(m.interval));
                    }
                }
            })?;
        Ok(Heartbeat {
            mastership,
            stop,
            thread: Some(thread),
        })
    }

    /// A stop on purpose: the last heartbeat says so, and no shadow replaces this master.
    pub fn stop(mut self) {
        self.halt();
        if let Err(e) = self.mastership.beat(true) {
            warn!("last heartbeat not written: {e}");
        }
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.halt();
    }
}

/// How a shadow watches.
#[derive(Debug, Clone)]
pub struct ShadowOptions {
    /// Take over when the heartbeat has not changed for this long.
    pub takeover_after: Duration,
}

/// `sched_d --shadow`: waits while the master's heartbeat changes; when it has not changed
/// for `takeover_after` (and the master did not stop on purpose), writes this daemon into
/// `act_master` and takes the spool lock — waiting for it at most another `takeover_after`,
/// then going on without it (the frozen master that holds it is fenced by `act_master`, and
/// the lock is taken as soon as it is released). Returns the lock held, or to be held.
pub fn watch_as_shadow(spool: &Spool, opts: &ShadowOptions) -> Result<SpoolLock, DaemonError> {
    let daemon_dir = spool.daemon_dir();
    std::fs::create_dir_all(&daemon_dir).map_err(|e| DaemonError::Io {
        op: "mkdir",
        path: daemon_dir.clone(),
        source: e,
    })?;
    let step = (opts.takeover_after / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    info!(?opts.takeover_after, "shadow: watching the master's heartbeat");
    let me = DaemonId::me();
    let mut watch = Watch::new(&daemon_dir);
    loop {
        while !watch.silent_for(opts.takeover_after) {
            std::thread::sleep(step);
            watch.look();
        }
        warn!(
            master = ?watch.last.as_ref().map(|b| b.master.to_string()),
            "shadow: the master's heartbeat stopped; taking over"
        );
        me.name_as_master(&daemon_dir)?;
        // The lock, while the heartbeat stays silent: one that beats again is another
        // daemon's (a second shadow was faster, or the master came back), and this one
        // goes back to watching.
        let asked = Instant::now();
        loop {
            match SpoolLock::acquire(spool) {
                Ok(lock) => return Ok(lock),
                Err(DaemonError::AlreadyRunning { pid, .. }) => {
                    std::thread::sleep(step);
                    if watch.look() {
                        info!("shadow: another master beats: watching again");
                        break;
                    }
                    if asked.elapsed() >= opts.takeover_after {
                        warn!(
                            holder = ?pid,
                            "shadow: the lock is still held (a frozen master, or an NFS lease not yet expired): going on, fenced by act_master; the lock is taken once released"
                        );
                        return SpoolLock::acquire_when_released(spool);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// What a shadow has seen of the heartbeat.
struct Watch<'a> {
    daemon_dir: &'a Path,
    last: Option<Beat>,
    changed_at: Instant,
}

impl<'a> Watch<'a> {
    fn new(daemon_dir: &'a Path) -> Self {
        Watch {
            daemon_dir,
            last: read_heartbeat(daemon_dir),
            changed_at: Instant::now(),
        }
    }

    /// Reads the heartbeat; `true` when it changed, to a master's beat.
    fn look(&mut self) -> bool {
        let now = read_heartbeat(self.daemon_dir);
        if now == self.last {
            return false;
        }
        if let Some(b) = &now {
            if b.stopped {
                info!(master = %b.master, "shadow: the master stopped on purpose; waiting for the next");
            } else if self.last.as_ref().is_none_or(|l| l.master != b.master) {
                info!(master = %b.master, "shadow: following the master's heartbeat");
            }
        }
        self.last = now;
        self.changed_at = Instant::now();
        self.last.as_ref().is_some_and(|b| !b.stopped)
    }

    /// The heartbeat has not changed for `long`, and its master did not stop on purpose.
    fn silent_for(&self, long: Duration) -> bool {
        !self.last.as_ref().is_some_and(|b| b.stopped) && self.changed_at.elapsed() >= long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_sees_it_was_replaced_and_a_shadow_reads_its_beats() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spool = Spool::create(dir.path()).expect("spool");
        let m = Mastership::claim(&spool, Duration::from_millis(10)).expect("claim");
        let first = read_heartbeat(&spool.daemon_dir()).expect("beat");
        assert_eq!(first.master, DaemonId::me());
        assert!(!first.stopped);
        m.beat(false).expect("beat");
        assert_eq!(
            read_heartbeat(&spool.daemon_dir()).expect("beat").counter,
            first.counter + 1
        );
        assert!(m.check().is_ok());
        let other = DaemonId {
            host: "shadowhost".into(),
            pid: 42,
        };
        std::fs::write(spool.daemon_dir().join(ACT_MASTER), "shadowhost 42\n").expect("write");
        // A master that kept beating learns at its next beat; one that was frozen, at once.
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(m.check().map_err(|r| r.by), Err(other));
        let before = read_heartbeat(&spool.daemon_dir());
        m.beat(false).expect("no beat once replaced");
        assert_eq!(read_heartbeat(&spool.daemon_dir()), before);
    }
}
