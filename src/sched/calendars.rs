//! Queue calendars (calendar_conf(5)) as states of the queue instances at a time: which
//! instances a calendar disables (`D`) or suspends (`C`) at `t`, and when the next change
//! comes. The daemon applies them at each pass (and stops or continues the tasks of the
//! instances they suspend); the forecast applies them at each played step, so a job waits
//! for the night queue to open as it will.

use super::SchedState;
use crate::config::{Calendar, CalendarState};
use std::collections::{HashMap, HashSet};
use tracing::warn;

/// An instance whose calendar state changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarChange {
    /// `queue@host`.
    pub instance: String,
    pub state: Option<CalendarState>,
    /// Whether its tasks were stopped (by any state) before the change.
    pub stopped_before: bool,
}

impl SchedState {
    /// Sets every queue instance's calendar state for `t` (the instances of queues without
    /// one lose any they had); returns the instances that changed and the next time a
    /// calendar changes.
    pub fn apply_calendars(&mut self, t: i64) -> (Vec<CalendarChange>, Option<i64>) {
        let (wanted, next) = self.calendar_states_at(t);
        let mut changes = Vec::new();
        for (instance, state) in wanted {
            let stopped_before = self.instance_states.stops_tasks(&instance);
            if self.set_instance_calendar(&instance, state) {
                changes.push(CalendarChange {
                    instance,
                    state,
                    stopped_before,
                });
            }
        }
        (changes, next)
    }

    /// What each instance's calendar says at `t`, and when a calendar changes next.
    fn calendar_states_at(&self, t: i64) -> (Vec<(String, Option<CalendarState>)>, Option<i64>) {
        let config = &self.config;
        let tz = crate::time::local_zone();
        let mut next: Option<i64> = None;
        let mut wanted = Vec::new();
        let mut parsed: HashMap<&str, Option<CalendarState>> = HashMap::new();
        let mut state_of = |name: &str, next: &mut Option<i64>| -> Option<CalendarState> {
            let c = config.calendar(name)?;
            *parsed
                .entry(c.name.as_str())
                .or_insert_with(|| match Calendar::parse(c) {
                    Ok(cal) => {
                        if let Some(at) = cal.next_change(t, &tz) {
                            *next = Some(next.map_or(at, |n| n.min(at)));
                        }
                        Some(cal.state_at(t, &tz))
                    }
                    Err(e) => {
                        // The configuration was checked when it was loaded: not reached.
                        warn!(calendar = %c.name, "calendar not applied: {e}");
                        None
                    }
                })
        };
        for q in &config.queues {
            // A host or host group may name a calendar of its own (`calendar NONE,[@night=n]`).
            if q.per_host
                .values()
                .any(|over| over.contains_key("calendar"))
            {
                for (h, inst) in config.queue_instances(q) {
                    if let Some(c) = inst.calendar.as_deref() {
                        let state = state_of(c, &mut next);
                        wanted.push((format!("{}@{}", q.name, h.name), state));
                    }
                }
                continue;
            }
            let Some(c) = q.calendar.as_deref() else {
                continue;
            };
            let state = state_of(c, &mut next);
            for h in config.queue_hosts(q) {
                wanted.push((format!("{}@{}", q.name, h.name), state));
            }
        }
        // Instances that keep a calendar state their queue no longer gives them (its
        // calendar removed, the queue or host gone).
        let named: HashSet<&str> = wanted.iter().map(|(n, _)| n.as_str()).collect();
        let states = &self.instance_states;
        let gone: Vec<String> = states
            .calendar_disabled
            .iter()
            .chain(&states.calendar_suspended)
            .filter(|n| !named.contains(n.as_str()))
            .cloned()
            .collect();
        wanted.extend(gone.into_iter().map(|n| (n, None)));
        (wanted, next)
    }
}
