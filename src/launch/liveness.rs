//! [`HostLiveness`]: which ssh execution hosts `sched_d` has heard from lately.
//!
//! SGE's qmaster declares a host unknown when its execd has not reported for `max_unheard`.
//! gridspool has no execd; what it hears from a host is every line that comes back over the
//! host's ssh session: the start server's heartbeat (every
//! [`crate::config::ClusterConfig::heartbeat_interval`]), replies, results and answers (for a
//! host with an older shepherd, its watcher session's heartbeat and results, and answered
//! queries). A host silent for `max_unheard` is
//! *unknown*: its queue instances show `au`, it gets no new work, and after
//! `reschedule_unknown` its tasks are rescheduled (`sched::daemon`). The first word from it
//! afterwards makes it known again.
//!
//! Silence is measured on this machine's monotonic clock only, never by comparing clocks of
//! two hosts. Local hosts are this machine: never unknown.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Where a connection to a host stands ([`HostLiveness::connection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connection {
    Connecting,
    Made,
    Failed,
}

/// What the launcher answers for the host probe: the probe's text read over the host's
/// session (`None`: the host has no session of that kind, the probe uses ssh itself).
pub trait HostRequests: Send + Sync {
    fn probe_text(&self, host: &str) -> Option<Result<String, String>>;
}

/// Last word heard from each ssh host, shared by the launcher and the host probe.
#[derive(Default)]
pub struct HostLiveness {
    /// The launcher, through which the probe reaches hosts (set by the launcher).
    requests: Mutex<Option<std::sync::Weak<dyn HostRequests>>>,
    hosts: Mutex<HashMap<String, Heard>>,
    /// A host came back: the probe should publish its load now rather than at its next round.
    probe_wanted: AtomicBool,
    /// Hosts whose session was just opened: the probe asks them at once (it asks a host
    /// only over its open session).
    probe_hosts: Mutex<HashSet<String>>,
}

impl fmt::Debug for HostLiveness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostLiveness")
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
struct Heard {
    at: Instant,
    unknown: bool,
    /// A connection to it is being made (bounded by ssh's `ConnectTimeout`): silence while
    /// it is is not the host's. After a restart, a master with many hosts may take minutes
    /// to connect to them all; none of them is declared unknown for waiting its turn.
    connecting: bool,
}

impl HostLiveness {
    pub fn new() -> Self {
        Self::default()
    }

    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Heard>> {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Something came from `host`. Returns `true` when the host was unknown: it has returned.
    pub fn heard(&self, host: &str) -> bool {
        let now = Instant::now();
        let mut hosts = self.hosts();
        match hosts.get_mut(host) {
            Some(h) => {
                h.at = now;
                h.connecting = false;
                std::mem::take(&mut h.unknown)
            }
            None => {
                hosts.insert(
                    host.to_string(),
                    Heard {
                        at: now,
                        unknown: false,
                        connecting: false,
                    },
                );
                false
            }
        }
    }

    /// Whether `host` is unknown now.
    pub fn is_unknown(&self, host: &str) -> bool {
        self.hosts().get(host).is_some_and(|h| h.unknown)
    }

    /// Marks unknown the hosts among `hosts` not heard from for `max_unheard`, and returns
    /// those that were not unknown yet. A host seen here for the first time counts as heard
    /// now: a host gets `max_unheard` from the moment `sched_d` starts following it.
    pub fn expire<'a>(
        &self,
        hosts: impl IntoIterator<Item = &'a str>,
        max_unheard: Duration,
    ) -> Vec<String> {
        let now = Instant::now();
        let mut known = self.hosts();
        let mut newly = Vec::new();
        for name in hosts {
            let h = known.entry(name.to_string()).or_insert(Heard {
                at: now,
                unknown: false,
                connecting: false,
            });
            if !h.unknown && !h.connecting && now.duration_since(h.at) >= max_unheard {
                h.unknown = true;
                newly.push(name.to_string());
            }
        }
        newly
    }

    /// A connection to `host` is being made (`Connecting`), was made, or failed: see
    /// `Heard::connecting`. One made restarts the count of `max_unheard` (the host's first
    /// words are on their way) without making an unknown host known: only words do.
    pub fn connection(&self, host: &str, state: Connection) {
        let now = Instant::now();
        let mut hosts = self.hosts();
        let h = hosts.entry(host.to_string()).or_insert(Heard {
            at: now,
            unknown: false,
            connecting: false,
        });
        h.connecting = state == Connection::Connecting;
        if state == Connection::Made {
            h.at = now;
        }
    }

    /// The launcher serves the probe's requests from now on.
    pub fn serve_requests(&self, launcher: std::sync::Weak<dyn HostRequests>) {
        *self.requests.lock().unwrap_or_else(|e| e.into_inner()) = Some(launcher);
    }

    /// The probe's text of `host`, asked over the launcher's session with it; `None` when
    /// there is no launcher or the host has no such session.
    pub fn probe_text(&self, host: &str) -> Option<Result<String, String>> {
        let launcher = self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()?
            .upgrade()?;
        launcher.probe_text(host)
    }

    /// Asks the probe for a round now (a host returned).
    pub fn want_probe(&self) {
        self.probe_wanted.store(true, Ordering::SeqCst);
    }

    /// Asks the probe to ask `host` now (its session was just opened).
    pub fn want_probe_of(&self, host: &str) {
        self.probe_hosts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host.to_string());
    }

    /// The hosts asked for with [`HostLiveness::want_probe_of`] since the last call.
    pub fn take_probe_hosts(&self) -> Option<HashSet<String>> {
        let hosts =
            std::mem::take(&mut *self.probe_hosts.lock().unwrap_or_else(|e| e.into_inner()));
        (!hosts.is_empty()).then_some(hosts)
    }

    /// Whether a round was asked for since the last call.
    pub fn take_probe_request(&self) -> bool {
        self.probe_wanted.swap(false, Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_host_goes_unknown_once_and_returns_at_its_first_word() {
        let l = HostLiveness::new();
        assert!(l.expire(["a", "b"], Duration::from_secs(60)).is_empty());
        assert!(!l.heard("a"), "a known host does not return");
        std::thread::sleep(Duration::from_millis(20));
        l.heard("b");
        assert_eq!(
            l.expire(["a", "b"], Duration::from_millis(15)),
            vec!["a".to_string()]
        );
        assert!(l.is_unknown("a"));
        assert!(!l.is_unknown("b"));
        assert!(
            l.expire(["a"], Duration::from_millis(15)).is_empty(),
            "reported once"
        );
        assert!(l.heard("a"), "the first word after: returned");
        assert!(!l.is_unknown("a"));
        assert!(!l.heard("a"));
    }

    #[test]
    fn a_host_being_connected_to_is_not_unknown_until_the_attempt_fails() {
        let l = HostLiveness::new();
        l.connection("a", Connection::Connecting);
        std::thread::sleep(Duration::from_millis(20));
        assert!(l.expire(["a"], Duration::from_millis(10)).is_empty());
        l.connection("a", Connection::Failed);
        assert_eq!(
            l.expire(["a"], Duration::from_millis(10)),
            vec!["a".to_string()]
        );
        l.connection("a", Connection::Made);
        assert!(
            l.is_unknown("a"),
            "a connection is not a word from the host"
        );
    }
}
