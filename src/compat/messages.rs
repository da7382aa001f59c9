//! SGE's words for refusals that several commands print (`qalter`, `qhold`, `qrls`): they come
//! from the qmaster in SGE, so every client says them the same way.

use crate::model::Denied;

/// `denied: …` as SGE prints it for a refused change to a job.
pub fn denied(d: &Denied) -> String {
    let verb = |release: bool| if release { "remove" } else { "set" };
    match d {
        Denied::NoSuchJob(id) => format!("denied: job \"{id}\" does not exist"),
        Denied::NotOwner { user, job } | Denied::DeletePrivilege { user, job } => format!(
            "denied: \"{user}\" must be at least owner of job {job} to change job attributes"
        ),
        Denied::PriorityIncrease { user } => {
            format!("denied: \"{user}\" must be operator to increase job priority")
        }
        Denied::OperatorHold { user, release } => {
            format!(
                "denied: \"{user}\" must be operator to {} operator hold",
                verb(*release)
            )
        }
        Denied::SystemHold { user, release } => {
            format!(
                "denied: \"{user}\" must be manager to {} manager hold",
                verb(*release)
            )
        }
        Denied::ForcedDelete { user, job } => {
            format!("denied: \"{user}\" must be manager to force the deletion of job {job}")
        }
        Denied::Shove { user } => format!("denied: \"{user}\" must be operator to shove a job"),
        Denied::NotForJobs => "denied: not an action on a job".to_string(),
        Denied::Qmod { .. } => d.to_string(),
    }
}

/// qconf's words for an object put into one of its lists: `root@vm added "x" to calendar
/// list`, or `... modified "x" in calendar list` when one of that name was there.
pub fn put_in_list(me: &str, name: &str, replaced: bool, list: &str) -> String {
    if replaced {
        format!("{me} modified \"{name}\" in {list}")
    } else {
        format!("{me} added \"{name}\" to {list}")
    }
}

/// A quoted value of SGE's messages (`SFQ`, `"%-.100s"`): at most its first 100 bytes (cut at
/// a character boundary), so `Your job 5 ("…")` shows 100 characters of a 511-character name.
pub fn sfq(text: &str) -> &str {
    let mut end = text.len().min(100);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
