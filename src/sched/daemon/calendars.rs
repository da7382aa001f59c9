//! Queue calendars (calendar_conf(5)) applied: at each pass the instances of a queue that
//! names a calendar take the state it gives them now (`D` disabled, `C` suspended, or
//! enabled), the tasks of a suspended one are stopped (SIGSTOP, as `qmod -sq` stops them)
//! and continued when it opens; the pass wakes again at the calendar's next change, so no
//! timer polls.

use super::Daemon;
use crate::config::{Calendar, CalendarState};
use tracing::{info, warn};

impl Daemon {
    /// Sets every queue instance's calendar state for time `t` (the instances of queues
    /// without one lose any they had) and returns the next time a calendar changes.
    pub(super) fn apply_calendars(&mut self, t: i64) -> Option<i64> {
        let config = &self.state.config;
        let tz = crate::time::local_zone();
        let mut next: Option<i64> = None;
        let mut wanted = Vec::new();
        let mut parsed: std::collections::HashMap<&str, Option<CalendarState>> =
            std::collections::HashMap::new();
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
        let named: std::collections::HashSet<&str> =
            wanted.iter().map(|(n, _)| n.as_str()).collect();
        let states = &self.state.instance_states;
        let gone: Vec<String> = states
            .calendar_disabled
            .iter()
            .chain(&states.calendar_suspended)
            .filter(|n| !named.contains(n.as_str()))
            .cloned()
            .collect();
        wanted.extend(gone.into_iter().map(|n| (n, None)));
        let mut changed = false;
        for (name, state) in wanted {
            let stopped_before = self.state.instance_states.stops_tasks(&name);
            if !self.state.set_instance_calendar(&name, state) {
                continue;
            }
            changed = true;
            info!(instance = %name, state = ?state, "queue instance state set by its calendar");
            let stopped = self.state.instance_states.stops_tasks(&name);
            if stopped != stopped_before {
                for (id, task) in self.state.tasks_in_instance(&name) {
                    self.set_stopped(id, task, false, |r| r.queue_suspended = stopped);
                }
            }
        }
        if changed {
            self.write_instance_states();
        }
        next
    }
}
