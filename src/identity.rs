//! Who is calling, as the kernel says: the real uid and gid, never an option or an
//! environment variable. Clients installed setgid to the spool group keep their caller's real
//! uid, and `sched_d` checks it again against the owner of every file a client publishes.

use nix::unistd::{Gid, Group, Uid, User, getgid, getuid};

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot look up user id {uid}: {reason}")]
    NoUser { uid: u32, reason: String },
}

/// The calling user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
    pub home: String,
    pub shell: String,
}

impl Caller {
    /// The real uid and gid of this process and their names from the user database.
    pub fn from_kernel() -> Result<Self, IdentityError> {
        Self::for_ids(getuid().as_raw(), getgid().as_raw())
    }

    /// Looks up a user by uid (and group by gid).
    pub fn for_ids(uid: u32, gid: u32) -> Result<Self, IdentityError> {
        let user = User::from_uid(Uid::from_raw(uid))
            .map_err(|e| IdentityError::NoUser {
                uid,
                reason: e.to_string(),
            })?
            .ok_or_else(|| IdentityError::NoUser {
                uid,
                reason: "no such user".to_string(),
            })?;
        let group = Group::from_gid(Gid::from_raw(gid))
            .ok()
            .flatten()
            .map_or_else(|| gid.to_string(), |g| g.name);
        Ok(Caller {
            uid,
            gid,
            user: user.name,
            group,
            home: user.dir.to_string_lossy().into_owned(),
            shell: user.shell.to_string_lossy().into_owned(),
        })
    }
}

/// Looks a user up by name: (uid, primary gid, home).
pub fn user_by_name(name: &str) -> Option<(u32, u32, String)> {
    User::from_name(name).ok().flatten().map(|u| {
        (
            u.uid.as_raw(),
            u.gid.as_raw(),
            u.dir.to_string_lossy().into_owned(),
        )
    })
}

/// This host's short name, as SGE prints host names (`vm`, not `vm.example.org`).
pub fn short_hostname() -> String {
    let full = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "localhost".to_string());
    full.split('.').next().unwrap_or(&full).to_string()
}
