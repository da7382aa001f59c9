//! Wakes result watchers when something changes in a host's `active_jobs` directory, so a
//! finished task is reported within milliseconds of its shepherd writing `result.json`. The
//! watchers still rescan on a timer: notification is a hint (it can overflow, and it does not
//! work on every filesystem, NFS among them).
//!
//! The watch is on `active_jobs` alone, not recursive: a recursive watch puts a watch on
//! every task directory and wakes the watcher for every file a shepherd writes there (spec,
//! pid, temporary files…), each time for a rescan of all tasks. Instead a supervisor that
//! has published its result touches `active_jobs` ([`announce_result`]), which is one event.

use std::path::Path;

/// Keeps the notification alive; dropping it stops it.
pub struct DirWatch {
    _watcher: Option<notify::RecommendedWatcher>,
}

/// Calls `on_change` when `dir` changes in a way that may mean a new result (see the filter
/// below). Without working notification the returned guard does nothing and the caller's
/// timer does the work.
pub fn watch_dir(dir: &Path, on_change: impl Fn() + Send + 'static) -> DirWatch {
    use notify::Watcher;
    let _ = std::fs::create_dir_all(dir);
    let watched = dir.to_path_buf();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reading the task directories (which the woken watcher does) is itself an
        // event: only changes wake it, or it would keep waking itself. A task directory
        // created (a task starting) or removed (a result acknowledged) has no result to
        // collect: those events would only make the watcher rescan every task, about twice
        // per task, for nothing. What is left is the result announced by
        // [`announce_result`] (an attribute change of `active_jobs`), and anything else
        // (a rename, an overflow of the event queue, an error) as a hint.
        // An attribute change of a task directory (its mode set when it is created) is
        // not the announcement either, which changes `active_jobs` itself.
        let idle = event.as_ref().is_ok_and(|e| {
            let child_attributes = matches!(
                e.kind,
                notify::EventKind::Modify(notify::event::ModifyKind::Metadata(_))
            ) && !e.paths.is_empty()
                && e.paths.iter().all(|p| p != &watched);
            (child_attributes
                || matches!(
                    e.kind,
                    notify::EventKind::Access(_)
                        | notify::EventKind::Create(_)
                        | notify::EventKind::Remove(_)
                ))
                && !e.need_rescan()
        });
        if !idle {
            on_change()
        }
    })
    .and_then(|mut w| {
        w.watch(dir, notify::RecursiveMode::NonRecursive)
            .map(|()| w)
    });
    match watcher {
        Ok(w) => DirWatch { _watcher: Some(w) },
        Err(e) => {
            tracing::debug!(dir = %dir.display(), "no change notification, polling only: {e}");
            DirWatch { _watcher: None }
        }
    }
}

/// Tells the watchers of `active_jobs` that a result was published in one of its task
/// directories: sets the directory's times to now (an attribute change of the watched
/// directory itself). Failing is harmless: watchers also rescan on a timer.
pub fn announce_result(active_jobs: &Path) {
    use nix::sys::stat::{UtimensatFlags, utimensat};
    use nix::sys::time::TimeSpec;
    let _ = utimensat(
        nix::fcntl::AT_FDCWD,
        active_jobs,
        &TimeSpec::UTIME_NOW,
        &TimeSpec::UTIME_NOW,
        UtimensatFlags::FollowSymlink,
    );
}
