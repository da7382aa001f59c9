//! Access lists (`access_list(5)`): named sets of user names and `@unixgroup`s that fence
//! queues, hosts, projects and the whole cell (`user_lists`/`xuser_lists`), and, as `DEPT`
//! lists, give users their department for the functional policy.
//!
//! Every SGE cell has `arusers`, `deadlineusers` (ACL) and `defaultdepartment` (DEPT); they
//! exist here too without being written in `config.yaml`, which holds only the lists an
//! administrator made or changed, as `complexes` holds only what differs from SGE's table.

use super::ClusterConfig;
use serde::{Deserialize, Serialize};

/// The department of a user in no `DEPT` list.
pub const DEFAULT_DEPARTMENT: &str = "defaultdepartment";

/// One access list, as `qconf -su` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessList {
    pub name: String,
    /// `ACL`, `DEPT` or both (`ACL DEPT`): SGE's `type`.
    #[serde(rename = "type", default = "acl_type")]
    pub kind: String,
    #[serde(default)]
    pub fshare: u32,
    #[serde(default)]
    pub oticket: u32,
    /// User names and `@group` names.
    #[serde(default)]
    pub entries: Vec<String>,
}

fn acl_type() -> String {
    "ACL".to_string()
}

impl AccessList {
    pub fn new(name: &str, kind: &str) -> Self {
        AccessList {
            name: name.to_string(),
            kind: kind.to_string(),
            fshare: 0,
            oticket: 0,
            entries: Vec::new(),
        }
    }

    pub fn is_dept(&self) -> bool {
        self.kind.split_whitespace().any(|k| k == "DEPT")
    }

    /// Whether `user`, whose group is `group`, is in the list: by name, or by `@group`.
    /// Only the job's (primary) group counts, as in SGE 8.1.9's
    /// `sge_contained_in_access_list`: on the oracle, `@g` did not admit a user whose
    /// supplementary group `g` is.
    pub fn contains(&self, user: &str, group: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e == user || e.strip_prefix('@') == Some(group))
    }

    /// `type` as SGE writes it back: the words it knows in its order, `ACL DEPT`.
    pub fn normalized_kind(words: &str) -> Result<String, String> {
        let mut acl = false;
        let mut dept = false;
        for w in words.split([' ', ',', '\t']).filter(|w| !w.is_empty()) {
            match w.to_ascii_uppercase().as_str() {
                "ACL" => acl = true,
                "DEPT" => dept = true,
                _ => return Err(w.to_string()),
            }
        }
        match (acl, dept) {
            (true, true) => Ok("ACL DEPT".into()),
            (false, true) => Ok("DEPT".into()),
            _ => Ok("ACL".into()),
        }
    }
}

/// SGE's lists of a new cell.
pub fn builtin() -> Vec<AccessList> {
    vec![
        AccessList::new("arusers", "ACL"),
        AccessList::new("deadlineusers", "ACL"),
        AccessList::new(DEFAULT_DEPARTMENT, "DEPT"),
    ]
}

/// What fences one object: `user_lists`/`xuser_lists` and `projects`/`xprojects`.
#[derive(Debug, Clone, Copy)]
pub struct Fence<'a> {
    pub user_lists: &'a [String],
    pub xuser_lists: &'a [String],
    pub projects: &'a [String],
    pub xprojects: &'a [String],
}

/// The queue_conf(5) attributes that fence a queue (per host too: `[@big=acl1]`).
pub const FENCE_KEYS: [&str; 4] = ["user_lists", "xuser_lists", "projects", "xprojects"];

impl super::QueueConfig {
    /// Whether some host or host group of the queue has fences of its own.
    pub fn fenced_per_host(&self) -> bool {
        self.per_host
            .values()
            .any(|over| FENCE_KEYS.iter().any(|k| over.contains_key(*k)))
    }
}

impl Fence<'_> {
    pub fn is_open(&self) -> bool {
        self.user_lists.is_empty()
            && self.xuser_lists.is_empty()
            && self.projects.is_empty()
            && self.xprojects.is_empty()
    }
}

/// Why a fence keeps a job out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its owner is in an `xuser_lists` list, or in none of the `user_lists`.
    User,
    /// It has no project and `projects` names some.
    NoProject,
    /// Its project is not in `projects`.
    WrongProject,
    /// Its project is in `xprojects`.
    ExcludedProject,
}

impl ClusterConfig {
    /// Every access list: SGE's built-in ones with the configuration's applied by name.
    pub fn access_lists(&self) -> Vec<AccessList> {
        let mut all = builtin();
        for l in &self.access_lists {
            match all.iter_mut().find(|b| b.name == l.name) {
                Some(b) => *b = l.clone(),
                None => all.push(l.clone()),
            }
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    pub fn access_list(&self, name: &str) -> Option<AccessList> {
        self.access_lists
            .iter()
            .find(|l| l.name == name)
            .cloned()
            .or_else(|| builtin().into_iter().find(|l| l.name == name))
    }

    /// SGE's `sge_has_access_`: not in any of `xacl`, and in one of `acl` if there are any.
    /// A list that does not exist holds nobody.
    pub fn has_access(&self, user: &str, group: &str, acl: &[String], xacl: &[String]) -> bool {
        let member = |name: &String| {
            self.access_list(name)
                .is_some_and(|l| l.contains(user, group))
        };
        !xacl.iter().any(member) && (acl.is_empty() || acl.iter().any(member))
    }

    /// Whether `fence` admits a job of `user` (group `group`) with `project`, in SGE's order
    /// (`sge_queue_match_static`): the user lists, then `projects`, then `xprojects`.
    pub fn admits(
        &self,
        fence: Fence<'_>,
        user: &str,
        group: &str,
        project: Option<&str>,
    ) -> Result<(), Refusal> {
        if !self.has_access(user, group, fence.user_lists, fence.xuser_lists) {
            return Err(Refusal::User);
        }
        if !fence.projects.is_empty() {
            match project {
                None => return Err(Refusal::NoProject),
                Some(p) if !fence.projects.iter().any(|x| x == p) => {
                    return Err(Refusal::WrongProject);
                }
                Some(_) => {}
            }
        }
        if let Some(p) = project
            && fence.xprojects.iter().any(|x| x == p)
        {
            return Err(Refusal::ExcludedProject);
        }
        Ok(())
    }

    /// Whether any queue or host is fenced: only then do a job's owner and project bear on
    /// where it may run (and on its scheduling category).
    pub fn instances_fenced(&self) -> bool {
        self.queues
            .iter()
            .any(|q| !q.fence().is_open() || q.fenced_per_host())
            || self.hosts.iter().any(|h| !h.fence().is_open())
    }

    /// The department of `user` (group `group`): the first `DEPT` list that holds the user,
    /// else `defaultdepartment`.
    pub fn department_of(&self, user: &str, group: &str) -> String {
        self.access_lists
            .iter()
            .filter(|l| l.is_dept() && l.name != DEFAULT_DEPARTMENT)
            .find(|l| l.contains(user, group))
            .map_or_else(|| DEFAULT_DEPARTMENT.to_string(), |l| l.name.clone())
    }

    /// Every object that names access list `name`, as SGE's refusal of `qconf -dul` says
    /// it: (what list, object kind, object name).
    pub fn access_list_references(&self, name: &str) -> Vec<(&'static str, &'static str, String)> {
        let mut out = Vec::new();
        let has = |v: &[String]| v.iter().any(|x| x == name);
        for q in &self.queues {
            if has(&q.user_lists) {
                out.push(("user list", "queue", q.name.clone()));
            }
            if has(&q.xuser_lists) {
                out.push(("xuser list", "queue", q.name.clone()));
            }
        }
        for h in &self.hosts {
            if has(&h.user_lists) {
                out.push(("user list", "exechost", h.name.clone()));
            }
            if has(&h.xuser_lists) {
                out.push(("xuser list", "exechost", h.name.clone()));
            }
        }
        for p in &self.projects {
            if has(&p.acl) {
                out.push(("user list", "project", p.name.clone()));
            }
            if has(&p.xacl) {
                out.push(("xuser list", "project", p.name.clone()));
            }
        }
        if has(&self.cluster_access.user_lists) {
            out.push(("user list", "configuration", "global".to_string()));
        }
        if has(&self.cluster_access.xuser_lists) {
            out.push(("xuser list", "configuration", "global".to_string()));
        }
        out
    }

    /// The references to access lists and projects that do not exist, for `validate`.
    pub(super) fn check_access_references(&self) -> Result<(), String> {
        for l in &self.access_lists {
            AccessList::normalized_kind(&l.kind)
                .map_err(|w| format!("access list {}: unknown type {w}", l.name))?;
        }
        let lists = |what: &str, v: &[String]| -> Result<(), String> {
            match v.iter().find(|n| self.access_list(n).is_none()) {
                Some(n) => Err(format!("{what}: unknown access list {n}")),
                None => Ok(()),
            }
        };
        let projects = |what: &str, v: &[String]| -> Result<(), String> {
            match v
                .iter()
                .find(|n| !self.projects.iter().any(|p| &p.name == *n))
            {
                Some(n) => Err(format!("{what}: unknown project {n}")),
                None => Ok(()),
            }
        };
        let mut fences: Vec<(String, Fence<'_>)> = Vec::new();
        for q in &self.queues {
            fences.push((format!("queue {}", q.name), q.fence()));
        }
        for h in &self.hosts {
            fences.push((format!("host {}", h.name), h.fence()));
        }
        fences.push(("cluster_access".to_string(), self.cluster_access.fence()));
        for (what, f) in fences {
            lists(&format!("{what} user_lists"), f.user_lists)?;
            lists(&format!("{what} xuser_lists"), f.xuser_lists)?;
            projects(&format!("{what} projects"), f.projects)?;
            projects(&format!("{what} xprojects"), f.xprojects)?;
        }
        for p in &self.projects {
            lists(&format!("project {} acl", p.name), &p.acl)?;
            lists(&format!("project {} xacl", p.name), &p.xacl)?;
        }
        Ok(())
    }
}

/// The global configuration's fences (`sge_conf(5)`: `user_lists`, `xuser_lists`,
/// `projects`, `xprojects`): who may submit at all, and with which projects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterAccess {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_lists: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub xuser_lists: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub xprojects: Vec<String>,
}

impl ClusterAccess {
    pub fn fence(&self) -> Fence<'_> {
        Fence {
            user_lists: &self.user_lists,
            xuser_lists: &self.xuser_lists,
            projects: &self.projects,
            xprojects: &self.xprojects,
        }
    }

    pub fn is_default(&self) -> bool {
        *self == ClusterAccess::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> ClusterConfig {
        let text = ClusterConfig::default_text("node1", 4) + extra;
        ClusterConfig::parse(&text).expect("parses")
    }

    #[test]
    fn membership_is_by_name_or_group_and_exclusion_wins() {
        let c = config(
            "access_lists:\n  - {name: a, entries: [sgeuser, \"@staff\"]}\n  - {name: x, entries: [bob]}\n",
        );
        let a = vec!["a".to_string()];
        let x = vec!["x".to_string()];
        assert!(c.has_access("sgeuser", "users", &a, &[]));
        assert!(c.has_access("carol", "staff", &a, &[]));
        assert!(!c.has_access("bob", "users", &a, &[]));
        assert!(c.has_access("bob", "users", &[], &[]));
        assert!(!c.has_access("bob", "staff", &a, &x));
        assert!(c.has_access("carol", "users", &[], &x));
    }

    #[test]
    fn builtin_lists_exist_and_departments_default() {
        let c = config(
            "access_lists:\n  - {name: physics, type: DEPT, fshare: 10, entries: [sgeuser2]}\n",
        );
        let names: Vec<String> = c.access_lists().into_iter().map(|l| l.name).collect();
        assert_eq!(
            names,
            ["arusers", "deadlineusers", "defaultdepartment", "physics"]
        );
        assert_eq!(c.department_of("sgeuser2", "g"), "physics");
        assert_eq!(c.department_of("sgeuser", "g"), DEFAULT_DEPARTMENT);
    }

    #[test]
    fn references_to_unknown_lists_and_projects_are_refused() {
        let text = ClusterConfig::default_text("node1", 4).replace(
            "hostlist: [\"@allhosts\"]",
            "hostlist: [\"@allhosts\"]\n    user_lists: [nosuch]",
        );
        let err = ClusterConfig::parse(&text).expect_err("must fail");
        assert!(err.contains("unknown access list nosuch"), "{err}");
        assert_eq!(
            AccessList::normalized_kind("dept,acl"),
            Ok("ACL DEPT".to_string())
        );
        assert_eq!(AccessList::normalized_kind("FOO"), Err("FOO".to_string()));
    }
}
