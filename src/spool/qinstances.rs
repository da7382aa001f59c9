//! `daemon/qinstances.json`: the states of queue instances that `qmod` and `sched_d` set (SGE
//! keeps them in its qmaster's spool, not in the configuration): disabled (`qmod -d`),
//! enabled against the configuration's `disabled` (`qmod -e`), suspended (`qmod -sq`), and in error (`E`, set by `sched_d`, cleared by `qmod -cq`); and what their queue's calendar
//! says (`D`, `C`), set by `sched_d`.
//! Written by `sched_d` as it applies a `qmod` request, read by it at start and by `qstat`
//! and `qmod` to show and decide.

use super::{Spool, SpoolError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

const FILE: &str = "qinstances.json";

/// `daemon/replies/`: `sched_d`'s answers to requests that wait for one (`qconf` by a
/// manager who may not write `config.yaml`, `qrsh -inherit`), `<seq>.json` each.
pub(super) const REPLIES: &str = "replies";

/// `sched_d`'s answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub v: u32,
    pub ok: bool,
    /// What the requester prints when `ok` is false (SGE's words).
    #[serde(default)]
    pub message: String,
    /// A pe task's (`qrsh -inherit`): the exit status of its command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
}

/// What `qmod` has set on queue instances (`all.q@node1`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueInstanceStates {
    pub v: u32,
    /// Disabled by `qmod -d`: no new work.
    #[serde(default)]
    pub disabled: BTreeSet<String>,
    /// Enabled by `qmod -e` although their queue is `disabled` in the configuration: that
    /// setting is SGE's `initial_state disabled` (what `qconf -sq` shows), a state the
    /// instances start in and `qmod -e` ends, not a lock.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub enabled: BTreeSet<String>,
    /// Suspended by `qmod -sq`: their tasks are stopped (`S`), they take no new work.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub suspended: BTreeSet<String>,
    /// In error state (`E`, with why (`qstat -explain E`): no new work until `qmod -cq`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
    /// Disabled by their queue's calendar (`D`): no new work; set by `sched_d` as the
    /// calendar says, at each of its changes.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub calendar_disabled: BTreeSet<String>,
    /// Suspended by their queue's calendar (`C`): their tasks are stopped, no new work.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub calendar_suspended: BTreeSet<String>,
}

impl QueueInstanceStates {
    /// Whether the instance is disabled (`d`): by `qmod -d`, or by its queue's `disabled`
    /// in the configuration (`configured`) unless `qmod -e` enabled it since.
    pub fn is_disabled(&self, instance: &str, configured: bool) -> bool {
        self.disabled.contains(instance) || (configured && !self.enabled.contains(instance))
    }

    /// The instance takes no new work: disabled (see [`Self::is_disabled`]), suspended or
    /// in error, by `qmod` or by its calendar.
    pub fn closed(&self, instance: &str, configured: bool) -> bool {
        self.is_disabled(instance, configured)
            || self.suspended.contains(instance)
            || self.errors.contains_key(instance)
            || self.calendar_disabled.contains(instance)
            || self.calendar_suspended.contains(instance)
    }

    /// Its running tasks are stopped: suspended by `qmod -sq` or by its calendar.
    pub fn stops_tasks(&self, instance: &str) -> bool {
        self.suspended.contains(instance) || self.calendar_suspended.contains(instance)
    }

    /// Sets what the instance's calendar says of it now (`None`: it has none): whether that
    /// changed its calendar state.
    pub fn set_calendar(
        &mut self,
        instance: &str,
        state: Option<crate::config::CalendarState>,
    ) -> bool {
        use crate::config::CalendarState;
        let disabled = state == Some(CalendarState::Off);
        let suspended = state == Some(CalendarState::Suspended);
        let mut changed = false;
        for (set, on) in [
            (&mut self.calendar_disabled, disabled),
            (&mut self.calendar_suspended, suspended),
        ] {
            changed |= if on {
                set.insert(instance.to_string())
            } else {
                set.remove(instance)
            };
        }
        changed
    }

    /// `qmod -d` (`disabled`) or `-e` of an instance whose queue the configuration disables
    /// or not (`configured`): whether its state changed.
    pub fn set_disabled(&mut self, instance: &str, disabled: bool, configured: bool) -> bool {
        let before = self.is_disabled(instance, configured);
        if disabled {
            self.disabled.insert(instance.to_string());
            self.enabled.remove(instance);
        } else {
            self.disabled.remove(instance);
            if configured {
                self.enabled.insert(instance.to_string());
            }
        }
        before != self.is_disabled(instance, configured)
    }
}

impl Spool {
    /// The answer to request `seq`, once `sched_d` has written it.
    pub fn read_reply(&self, seq: u64) -> Option<Reply> {
        let path = self.daemon_dir().join(REPLIES).join(format!("{seq}.json"));
        crate::file::open::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }

    /// Writes the answer to request `seq` (`sched_d`); answers older than a day go.
    pub fn write_reply(&self, seq: u64, reply: &Reply) -> Result<(), SpoolError> {
        let dir = self.daemon_dir().join(REPLIES);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir).map_err(|e| SpoolError::io("mkdir", &dir, e))?;
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let day = std::time::Duration::from_secs(86_400);
            for e in entries.flatten() {
                if e.metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > day))
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let json = serde_json::to_vec(reply).map_err(|e| SpoolError::Malformed {
            path: dir.join(format!("{seq}.json")),
            reason: e.to_string(),
        })?;
        crate::file::durable::write_replace(&dir, &format!("{seq}.json"), &json, 0o644)
            .map_err(SpoolError::from)
    }

    /// The states; none when the file is missing or unreadable (a malformed file is logged by
    /// nobody here: `sched_d` rewrites it at its next `qmod`).
    pub fn queue_instance_states(&self) -> QueueInstanceStates {
        crate::file::open::read(&self.daemon_dir().join(FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Replaces the states durably (`sched_d`).
    pub fn write_queue_instance_states(
        &self,
        states: &QueueInstanceStates,
    ) -> Result<(), SpoolError> {
        let json = serde_json::to_vec(states).map_err(|e| SpoolError::Malformed {
            path: self.daemon_dir().join(FILE),
            reason: e.to_string(),
        })?;
        crate::file::durable::write_replace(&self.daemon_dir(), FILE, &json, 0o644)
            .map_err(SpoolError::from)
    }
}
