//! Advance reservations (`sge_ar(5)`, `qrsub(1)`): slots, resources, a parallel environment
//! and queues held for one user's jobs from a start to an end time.
//!
//! `qrsub` publishes the submission ([`ArSubmission`]) once, as `qsub` publishes a job;
//! `sched_d` alone decides whether it is granted (the capacity must be free for the whole
//! window) and writes the reservation as it is now ([`ArRecord`]). Plain data: the spool
//! decides where it lives, `compat` how it looks, `sched` what it holds.

use super::{PeRequest, ResourceRequest};
use serde::{Deserialize, Serialize};

/// The schema version of AR files.
pub const AR_SCHEMA_VERSION: u32 = 1;

/// Who submitted the reservation. The uid is checked against the owner of the file (the
/// kernel's record) by `sched_d`; the name is looked up again from the uid there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArOwner {
    pub uid: u32,
    pub user: String,
    pub gid: u32,
    pub group: String,
    pub host: String,
}

/// What `qrsub` asked for (`qrsub(1)`), with its times resolved to seconds since the epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArSubmission {
    pub v: u32,
    pub id: u32,
    /// `-N`; SGE shows none when it was not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub owner: ArOwner,
    pub submission_time: i64,
    /// `-a`, else the submission time.
    pub start: i64,
    /// `-e`, else start + `-d`.
    pub end: i64,
    /// `-A`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `-l`: resources reserved per slot (per job for `consumable JOB`).
    #[serde(default)]
    pub resources: Vec<ResourceRequest>,
    /// `-pe`: the parallel environment and its slots; without it one slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pe: Option<PeRequest>,
    /// `-q`: the queues (`queue`, `queue@host`, `queue@@hostgroup`) it may hold.
    #[serde(default)]
    pub queues: Vec<String>,
    /// `-masterq`.
    #[serde(default)]
    pub master_queues: Vec<String>,
    /// `-u`: who may submit jobs into it (users, `@acl`, `!` exclusions); empty: the owner.
    #[serde(default)]
    pub users: Vec<String>,
    /// `-m`: `b`, `e`, `a`, `n` as given.
    #[serde(default)]
    pub mail_options: String,
    /// `-M`.
    #[serde(default)]
    pub mail_list: Vec<String>,
    /// `-now y` (the default): only queue instances of type INTERACTIVE may be reserved.
    #[serde(default)]
    pub now: bool,
}

impl ArSubmission {
    /// The reservation's length (`-d`, or `-e` minus the start).
    pub fn duration(&self) -> i64 {
        self.end - self.start
    }

    /// Slots reserved: the PE's (its range's maximum, as SGE books it), else 1.
    pub fn slots(&self) -> u32 {
        self.pe
            .as_ref()
            .map_or(1, |p| p.range.max.max(p.range.min).max(1))
    }
}

/// `sge_ar(5)`'s states, as `qrstat` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArState {
    /// `w`: granted, its start not reached.
    Waiting,
    /// `r`: its window is open.
    Running,
    /// `x`: its end passed; removed at once, shown by nobody but the accounting.
    Exited,
    /// `d`: deleted by `qrdel`.
    Deleted,
    /// `E`: a reserved queue instance went into error (or its host unknown) while running.
    Error,
    /// `W`: the same while waiting.
    Warning,
}

impl ArState {
    /// The letter `qrstat` shows.
    pub fn letter(self) -> &'static str {
        match self {
            ArState::Waiting => "w",
            ArState::Running => "r",
            ArState::Exited => "x",
            ArState::Deleted => "d",
            ArState::Error => "E",
            ArState::Warning => "W",
        }
    }
}

/// One queue instance's share of a granted reservation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArGrant {
    pub queue: String,
    pub host: String,
    pub slots: u32,
}

impl ArGrant {
    /// `all.q@node1`.
    pub fn instance(&self) -> String {
        format!("{}@{}", self.queue, self.host)
    }
}

/// The reservation as `sched_d` keeps it (`ars/<id>.state`): granted with what it holds, or
/// refused with the message `qrsub` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArRecord {
    pub v: u32,
    pub submission: ArSubmission,
    pub state: ArState,
    /// The queue instances and slots it holds.
    #[serde(default)]
    pub granted: Vec<ArGrant>,
    /// The parallel environment granted, when `-pe` was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_pe: Option<String>,
    /// Why it was refused (SGE's words, what `qrsub` prints); a refused AR is no AR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// What is wrong with the queue instances it holds (`reserved queue all.q@n1 is
    /// disabled`): its state is `W` or `E` while there is any (`qrstat -ar`, `-explain`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
}

impl ArRecord {
    pub fn id(&self) -> u32 {
        self.submission.id
    }

    /// Granted and not over: it holds its capacity (from now or from its start).
    pub fn holds(&self) -> bool {
        self.refused.is_none()
            && matches!(
                self.state,
                ArState::Waiting | ArState::Running | ArState::Error | ArState::Warning
            )
    }

    /// Whether `user` (with `uid`) may submit jobs into it: the owner, or one `-u` names
    /// (after the last matching entry, `!user` excludes). `in_acl` resolves `@acl` entries
    /// ([`crate::config`]'s access lists, connected by the caller).
    pub fn admits(&self, user: &str, uid: u32, in_acl: &dyn Fn(&str, &str) -> bool) -> bool {
        let users = &self.submission.users;
        if users.is_empty() {
            return uid == self.submission.owner.uid;
        }
        let mut admitted = false;
        for entry in users {
            let (negated, name) = match entry.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, entry.as_str()),
            };
            let hit = match name.strip_prefix('@') {
                Some(acl) => in_acl(acl, user),
                None => name == user || name == "*",
            };
            if hit {
                if negated {
                    return false;
                }
                admitted = true;
            }
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(users: &[&str]) -> ArRecord {
        ArRecord {
            v: 1,
            submission: ArSubmission {
                v: 1,
                id: 1,
                name: None,
                owner: ArOwner {
                    uid: 1000,
                    user: "alice".into(),
                    gid: 1000,
                    group: "alice".into(),
                    host: "vm".into(),
                },
                submission_time: 0,
                start: 10,
                end: 20,
                account: None,
                resources: vec![],
                pe: None,
                queues: vec![],
                master_queues: vec![],
                users: users.iter().map(|s| s.to_string()).collect(),
                mail_options: String::new(),
                mail_list: vec![],
                now: false,
            },
            state: ArState::Waiting,
            granted: vec![],
            granted_pe: None,
            refused: None,
            messages: Vec::new(),
        }
    }

    #[test]
    fn the_owner_alone_without_a_user_list_and_exclusions_win() {
        let none = |_: &str, _: &str| false;
        assert!(record(&[]).admits("alice", 1000, &none));
        assert!(!record(&[]).admits("bob", 1001, &none));
        assert!(record(&["bob"]).admits("bob", 1001, &none));
        assert!(!record(&["bob"]).admits("alice", 1000, &none));
        let staff = |acl: &str, u: &str| acl == "staff" && u == "carol";
        assert!(record(&["@staff"]).admits("carol", 1002, &staff));
        assert!(!record(&["@staff", "!carol"]).admits("carol", 1002, &staff));
        assert!(record(&["*"]).admits("dave", 1003, &none));
    }
}
