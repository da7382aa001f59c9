//! Queue calendars (calendar_conf(5)) applied: at each pass the instances of a queue that
//! names a calendar take the state it gives them now (`D` disabled, `C` suspended, or
//! enabled), the tasks of a suspended one are stopped (SIGSTOP, as `qmod -sq` stops them)
//! and continued when it opens; the pass wakes again at the calendar's next change, so no
//! timer polls.

use super::Daemon;
use tracing::info;

impl Daemon {
    /// Sets every queue instance's calendar state for time `t` (`SchedState::apply_calendars`),
    /// stops or continues the tasks of those it suspends or opens, and returns the next time
    /// a calendar changes.
    pub(super) fn apply_calendars(&mut self, t: i64) -> Option<i64> {
        let (changes, next) = self.state.apply_calendars(t);
        for change in &changes {
            info!(instance = %change.instance, state = ?change.state, "queue instance state set by its calendar");
            let stopped = self.state.instance_states.stops_tasks(&change.instance);
            if stopped != change.stopped_before {
                for (id, task) in self.state.tasks_in_instance(&change.instance) {
                    self.set_stopped(id, task, false, |r| r.queue_suspended = stopped);
                }
            }
        }
        if !changes.is_empty() {
            self.write_instance_states();
        }
        next
    }
}
