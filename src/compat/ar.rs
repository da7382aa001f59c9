//! What SGE users see of advance reservations: who may make one (`qrsub`), who may use
//! one (`qsub -ar`, the `-u` list), in SGE 8.1.9's words.

use crate::config::ClusterConfig;
use crate::model::ArRecord;

/// The access list whose members may submit reservations (`sge_ar(5)`, `qrsub(1)`).
pub const AR_USERS_ACL: &str = "arusers";

/// THE CONNECTION POINT TO ACCESS LISTS (`access_list(5)`), for the lead to connect once the
/// access-list work is merged: whether `user` is in the access list `acl`, `None` when the
/// cell defines no such list. Every `@acl` of a reservation (`qrsub -u`) and the
/// `arusers` check of `qrsub` come through here, and nothing else resolves them.
pub fn access_list_contains(_config: &ClusterConfig, _acl: &str, _user: &str) -> Option<bool> {
    None
}

/// Whether `user` may submit a reservation: a manager, or a member of `arusers`, as in
/// SGE. A cell that defines no `arusers` list lets every user (gridspool's choice while a
/// cell may have no access lists at all: `tests/compat/DIVERGENCES.md`).
pub fn may_reserve(config: &ClusterConfig, user: &str, uid: u32) -> Result<(), String> {
    if config.is_manager(user, uid) {
        return Ok(());
    }
    match access_list_contains(config, AR_USERS_ACL, user) {
        Some(false) => Err(format!(
            "denied: \"{user}\" must be manager or in userset \"{AR_USERS_ACL}\""
        )),
        Some(true) | None => Ok(()),
    }
}

/// Whether `user` may submit jobs into `ar` (its `-u` list, `@acl` entries resolved by
/// [`access_list_contains`]).
pub fn may_use(config: &ClusterConfig, ar: &ArRecord, user: &str, uid: u32) -> bool {
    ar.admits(user, uid, &|acl, u| {
        access_list_contains(config, acl, u).unwrap_or(false)
    })
}
