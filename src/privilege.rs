//! The setgid bracket of a multi-user installation (see `docs/security.md`).
//!
//! In a shared installation the spool belongs to a dedicated group (`gridspool`) and only that
//! group may write to it; the client binaries are installed setgid to that group, as `crontab`
//! and `at` are. A client therefore runs with the caller's real uid and gid (which identify
//! the user, and which the kernel stamps on every file it creates) plus the spool group as its
//! effective gid. Two rules keep that extra group from being abused:
//!
//! 1. The group is only used on the real spool. If the cell directory a user points
//!    `SGE_ROOT` at is not owned by the effective group, or is owned by the caller, the
//!    client drops the group for good before touching it: a user cannot steer a privileged
//!    client into a directory tree they built (symlinks into the real spool, a forged
//!    sequence counter).
//! 2. Files that belong to the user (the job script, `-@` files, `sge_request` files) are
//!    read with the group dropped ([`with_real_gid`]), so the spool group cannot be used to
//!    read other users' job scripts through `qsub`.

use nix::unistd::{getegid, getgid, getuid, setegid, setresgid};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Whether this process runs with an effective gid other than its real one (setgid).
pub fn is_setgid() -> bool {
    getegid() != getgid()
}

/// Drops the setgid group permanently unless `cell` is a spool owned by that group.
pub fn confine_to_spool(cell: &Path) {
    if !is_setgid() {
        return;
    }
    let trusted = std::fs::metadata(cell)
        .map(|m| m.gid() == getegid().as_raw() && m.uid() != getuid().as_raw())
        .unwrap_or(false);
    if !trusted {
        drop_group();
    }
}

/// Gives up the setgid group for the rest of the process.
pub fn drop_group() {
    let gid = getgid();
    // Failing to drop is only possible if we never had it; nothing to do then.
    let _ = setresgid(gid, gid, gid);
}

/// Runs `f` with the effective gid set to the real gid, then restores the spool group.
pub fn with_real_gid<T>(f: impl FnOnce() -> T) -> T {
    if !is_setgid() {
        return f();
    }
    let saved = getegid();
    let lowered = setegid(getgid()).is_ok();
    let out = f();
    if lowered {
        let _ = setegid(saved);
    }
    out
}
