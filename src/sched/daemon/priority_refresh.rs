//! Writing the state files of pending jobs whose priority columns changed, a chunk at a
//! time when the daemon is quiet (or every so often when it never is), so that `qstat`'s
//! priorities stay current without holding up dispatches and ends behind durable writes.

use super::Daemon;
use std::time::Duration;
use tracing::debug;

/// State files refreshed per periodic pass only for their priority columns.
pub(super) const PRIORITY_REFRESH_PER_PASS: usize = 1000;

/// How many of them are written in one go: a chunk is what an event that arrives meanwhile
/// may have to wait for (1,000 durable writes at once once held a dispatch up for 1.7 s).
const PRIORITY_REFRESH_CHUNK: usize = 50;

/// Chunks are written once no input has come for this long: a stream of dispatches and ends
/// (2,000 short jobs) would otherwise interleave a chunk between every two inputs and rewrite
/// most pending jobs' state files for their priority columns alone, ahead of the writes
/// (`t`, the end) that take the new priority along anyway.
pub(super) const PRIORITY_REFRESH_QUIET: Duration = Duration::from_millis(250);

/// While inputs keep coming, one chunk this often: priorities still reach the state files
/// of a cluster that is never quiet, at 25 files a second.
pub(super) const PRIORITY_REFRESH_BUSY_EVERY: Duration = Duration::from_secs(2);

impl Daemon {
    /// Refreshes the priority columns of one chunk of state files whose priority changed,
    /// when no input waits.
    pub(super) fn refresh_some(&mut self) {
        // Not while ends wait to be recorded: their states go after their records
        // ([`Self::settle`]), which the next wake-up writes.
        if self.refresh_budget == 0 || self.blocked.is_some() || !self.ended.is_empty() {
            return;
        }
        let chunk = self.refresh_budget.min(PRIORITY_REFRESH_CHUNK);
        let n = self
            .state
            .refresh_stale_priorities(&mut self.refresh_cursor, chunk);
        // Fewer than asked: every job was looked at, nothing else is stale.
        self.refresh_budget = if n < chunk {
            0
        } else {
            self.refresh_budget - chunk
        };
        if n > 0 {
            debug!(jobs = n, "refreshing priorities in state files");
            self.failure = None;
            self.flush();
            if let Some(why) = self.failure.take() {
                self.block(why);
            }
        }
    }
}
