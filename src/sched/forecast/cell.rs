//! The live cell as a state to play forward, read from the spool as a restarting `sched_d`
//! reads it (configuration, queue instance states, jobs, advance reservations, the policies'
//! saved states, share-tree usage from the accounting file), changing nothing in it: the
//! forecast runs beside the daemon, in a process of its own, and `gridspool-sim` starts from
//! the same copy.

use super::LearnedRunTimes;
use crate::config::{ClusterConfig, ConfigError};
use crate::sched::{SchedState, SgePriority, SharedUsage};
use crate::spool::{Spool, SpoolError};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// The accounting file (share-tree usage, learned run times).
    #[error("accounting: {0}")]
    Accounting(#[from] crate::acct::AcctError),
    #[error("{0}")]
    Spool(#[from] SpoolError),
}

/// The cell's state now, with the share-tree usage its priorities start from.
pub struct CellState {
    pub state: SchedState,
    pub usage: SharedUsage,
    /// The run times learned from the accounting file, if the configuration's
    /// `start_estimates.run_times` is `learned` (else none are learned).
    pub learned: LearnedRunTimes,
    /// Jobs whose files could not be read or belong to no one they name (the daemon sets
    /// them aside; the copy leaves them out).
    pub unreadable: usize,
    /// Execution hosts that `sched_d` last found unreachable (`qhost`'s `au`): played as
    /// taking no work, since when they come back is not known.
    pub down: Vec<String>,
}

/// Reads the cell in `spool`, changing nothing in it (`gridspool-sim`): the accounting file
/// is read from where the last forecast's kept history ends, if it still holds.
pub fn load(spool: &Spool) -> Result<CellState, CellError> {
    load_with(spool, false)
}

/// [`load`], keeping the accounting history read for the next forecast
/// (`forecast::history`; `sched_d --forecast`).
pub fn load_keeping_history(spool: &Spool) -> Result<CellState, CellError> {
    load_with(spool, true)
}

/// Reads the cell in `spool`. Three threads: the accounting file (usage, learned run times)
/// and the job files are read beside each other, while this one adds the jobs read to the
/// state; the forecast runs at a low priority, so the second core it takes is one the
/// daemon does not need.
fn load_with(spool: &Spool, keep_history: bool) -> Result<CellState, CellError> {
    let config = spool.load_config()?;
    let decay = crate::acct::decay_config(&config);
    let learn = config.scheduler.start_estimates.run_times == crate::config::RunTimeSource::Learned;
    // The policy holds the usage from the start; it is filled in before any pass reads it.
    let usage: SharedUsage = Arc::new(Mutex::new(Default::default()));
    let policy = SgePriority::new(&config, usage.clone());
    let mut state = SchedState::with_policy(config, Box::new(policy));
    state.restore_instance_states(spool.queue_instance_states());
    let down = down_hosts(spool, &state.config, crate::time::now());
    for host in &down {
        state.set_host_unknown(host, true);
    }
    let ids = spool.job_ids()?;
    let mut unreadable = 0;
    let history = std::thread::scope(|scope| {
        // One read of the accounting file (of its new records) gives the usage and, when
        // they are wanted, the learned run times.
        let history = scope.spawn(|| super::history::load(spool, &decay, learn, keep_history));
        let (tx, rx) = std::sync::mpsc::sync_channel(256);
        scope.spawn(move || {
            for id in ids {
                if tx.send((id, spool.read_job_owned(id))).is_err() {
                    break;
                }
            }
        });
        for (n, (id, read)) in rx.into_iter().enumerate() {
            match read {
                Ok(Some((record, _, owner)))
                    if record.id == id && owner == record.submitter.uid =>
                {
                    state.add_job(record);
                }
                Ok(None) => {}
                Ok(Some(_)) | Err(_) => unreadable += 1,
            }
            // Waiting jobs are kept encoded, as in the daemon (`sched::cold`).
            if n % 1024 == 1023 {
                state.cool_idle();
            }
        }
        history.join()
    });
    let history = match history {
        Ok(read) => read?,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    *usage.lock().unwrap_or_else(|e| e.into_inner()) = history.usage;
    let learned = history.learned;
    state.cool_idle();
    if let Ok(scan) = spool.scan_ars() {
        for r in scan.records.into_iter().filter(|r| r.refused.is_none()) {
            state.restore_ar(r);
        }
    }
    state.compact();
    state.restore_policy_states(&spool.daemon_dir());
    Ok(CellState {
        state,
        usage,
        learned,
        unreadable,
        down,
    })
}

/// The execution hosts whose latest report (`daemon/hosts/<host>.json`, recent as `qhost`
/// takes it) says `sched_d` could not reach them.
fn down_hosts(spool: &Spool, config: &ClusterConfig, now: i64) -> Vec<String> {
    let dir = spool.daemon_dir();
    config
        .exec_hosts()
        .filter(|h| {
            crate::acct::load::read_report(&dir, &h.name).is_some_and(|r| {
                !r.reachable && now - r.time <= crate::acct::load::MAX_UNHEARD_SECS
            })
        })
        .map(|h| h.name.clone())
        .collect()
}

/// A copy of `state` to play forward, leaving `state` as it is (`gridspool-sim`'s estimates
/// at each submission): the same configuration, queue instance states, jobs (running ones
/// booked where they run), unknown hosts, advance reservations and policies' states,
/// priorities from `usage`. Qube! preemption's bookkeeping is not copied.
pub fn copy_of(state: &SchedState, usage: SharedUsage) -> SchedState {
    copy_with_config(state, usage, state.config.clone())
}

/// [`copy_of`] under another configuration (`gridspool-sim --what-if`): the state is built
/// anew on `config`, as `sched_d` rebuilds it when it starts on a changed `config.yaml`, so
/// that added hosts, changed slots and weights are what the copy's passes see, while the
/// jobs, the instance states and the usage stay the live cell's.
pub fn copy_with_config(
    state: &SchedState,
    usage: SharedUsage,
    config: ClusterConfig,
) -> SchedState {
    let policy = SgePriority::new(&config, usage);
    let mut copy = SchedState::with_policy(config, Box::new(policy));
    copy.restore_instance_states(state.instance_states.clone());
    for host in state.unknown_hosts() {
        copy.set_host_unknown(&host, true);
    }
    for id in state.job_ids() {
        if let Some(record) = state.job(id) {
            copy.add_job(record.into_owned());
        }
    }
    // As `load` does: reservations after the jobs, which are booked against them.
    for hold in state.ars.holds.values() {
        copy.restore_ar(hold.record.clone());
    }
    copy.fbsng = state.fbsng.clone();
    copy.armada = state.armada.clone();
    copy
}
