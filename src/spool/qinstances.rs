//! `daemon/qinstances.json`: the states of queue instances that `qmod` and `sched_d` set (SGE
//! keeps them in its qmaster's spool, not in the configuration): disabled (`qmod -d`),
//! suspended (`qmod -sq`), and in error (`E`, set by `sched_d`, cleared by `qmod -cq`).
//! Written by `sched_d` as it applies a `qmod` request, read by it at start and by `qstat`
//! and `qmod` to show and decide.

use super::{Spool, SpoolError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

const FILE: &str = "qinstances.json";

/// What `qmod` has set on queue instances (`all.q@node1`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueInstanceStates {
    pub v: u32,
    /// Disabled by `qmod -d`: no new work (a queue's own `disabled` in the configuration is
    /// apart from these).
    #[serde(default)]
    pub disabled: BTreeSet<String>,
    /// Suspended by `qmod -sq`: their tasks are stopped (`S`), they take no new work.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub suspended: BTreeSet<String>,
    /// In error state (`E`), with why (`qstat -explain E`): no new work until `qmod -cq`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
}

impl QueueInstanceStates {
    /// The instance takes no new work: disabled, suspended or in error (a queue disabled in
    /// the configuration is apart).
    pub fn closed(&self, instance: &str) -> bool {
        self.disabled.contains(instance)
            || self.suspended.contains(instance)
            || self.errors.contains_key(instance)
    }
}

impl Spool {
    /// The states; none when the file is missing or unreadable (a malformed file is logged by
    /// nobody here: `sched_d` rewrites it at its next `qmod`).
    pub fn queue_instance_states(&self) -> QueueInstanceStates {
        super::open::read(&self.daemon_dir().join(FILE))
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
        super::durable::write_replace(&self.daemon_dir(), FILE, &json, 0o644)
    }
}
