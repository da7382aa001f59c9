//! Where a job's owner and project may run: the access lists and projects of queues and
//! hosts (`queue_conf(5)`, `host_conf(5)`), checked when a category's candidate queue
//! instances are found, with SGE 8.1.9's pending reasons (`sge_select_queue.c`: the cluster
//! queue first, then the host).

use crate::config::{ClusterConfig, Refusal};
use crate::model::{JobSpec, Submitter};
use std::collections::HashMap;

/// The verdict of every queue and host on one owner, group and project, found once per
/// category.
pub struct Fences {
    queues: HashMap<String, Option<Refusal>>,
    /// The verdicts of the instances of queues whose hosts or host groups have fences of
    /// their own (queue, host); other queues' instances take their queue's.
    instances: HashMap<(String, String), Option<Refusal>>,
    hosts: HashMap<String, Option<Refusal>>,
    project: Option<String>,
}

impl Fences {
    pub fn new(config: &ClusterConfig, who: &Submitter, spec: &JobSpec) -> Self {
        let project = spec.project.as_deref();
        let verdict =
            |f: crate::config::Fence<'_>| config.admits(f, &who.owner, &who.group, project).err();
        Fences {
            queues: config
                .queues
                .iter()
                .map(|q| (q.name.clone(), verdict(q.fence())))
                .collect(),
            instances: config
                .queues
                .iter()
                .filter(|q| q.fenced_per_host())
                .flat_map(|q| {
                    config
                        .queue_instances(q)
                        .into_iter()
                        .map(|(h, inst)| ((q.name.clone(), h.name.clone()), verdict(inst.fence())))
                })
                .collect(),
            hosts: config
                .hosts
                .iter()
                .map(|h| (h.name.clone(), verdict(h.fence())))
                .collect(),
            project: spec.project.clone(),
        }
    }

    /// Why the job may not run in queue `queue` on host `host`, in SGE's words; `None`
    /// when it may.
    pub fn refusal(&self, queue: &str, host: &str) -> Option<String> {
        let at_queue = match self.instances.get(&(queue.to_string(), host.to_string())) {
            Some(v) => v.as_ref(),
            None => self.queues.get(queue).and_then(Option::as_ref),
        };
        if let Some(r) = at_queue {
            // At the cluster queue SGE says "(no project)" of every project refusal.
            return Some(match r {
                Refusal::User => format!("has no permission for cluster queue \"{queue}\""),
                _ => format!(
                    "(no project) does not have the correct project to run in cluster queue \"{queue}\""
                ),
            });
        }
        let r = self.hosts.get(host)?.as_ref()?;
        let project = self.project.as_deref().unwrap_or("");
        Some(match r {
            Refusal::User => format!("has no permission for host \"{host}\""),
            Refusal::NoProject => {
                format!("(no project) does not have the correct project to run in host \"{host}\"")
            }
            Refusal::WrongProject => format!(
                "(project {project}) does not have the correct project to run in host \"{host}\""
            ),
            Refusal::ExcludedProject => format!(
                "(project {project}) is not allowed to run in host \"{host}\" based on the excluded project list"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{NOW, config, job, state};
    use crate::config::{AccessList, PolicyOrder};
    use crate::model::JobId;

    fn owned(id: u32, owner: &str, group: &str, project: Option<&str>) -> crate::model::JobRecord {
        let mut r = job(id, |s, _| s.project = project.map(str::to_string));
        r.submitter.owner = owner.into();
        r.submitter.group = group.into();
        r
    }

    #[test]
    fn fenced_queues_and_hosts_never_run_outsiders_under_every_policy() {
        for policy in [
            PolicyOrder::Sge,
            PolicyOrder::Cluster,
            PolicyOrder::Fbsng,
            PolicyOrder::Armada,
            PolicyOrder::Fifo,
        ] {
            let mut c = config(2, 2, "projects:\n  - {name: p1}\n  - {name: p2}\n");
            c.scheduler.policy = policy;
            let mut acl = AccessList::new("acl25", "ACL");
            acl.entries = vec!["alice".into(), "@staff".into()];
            let mut xl = AccessList::new("xl25", "ACL");
            xl.entries = vec!["carol".into()];
            c.access_lists = vec![acl, xl];
            c.queues[0].user_lists = vec!["acl25".into()];
            c.hosts[1].xuser_lists = vec!["xl25".into()];
            c.hosts[0].xprojects = vec!["p2".into()];
            let jobs = vec![
                owned(1, "bob", "bob", None),
                owned(2, "carol", "staff", None),
                owned(3, "carol", "staff", None),
                owned(4, "alice", "alice", Some("p2")),
                owned(5, "dave", "staff", None),
            ];
            let mut s = state(c, jobs);
            let starts = s.schedule(NOW).starts;
            let on = |id: u32| -> Vec<String> {
                starts
                    .iter()
                    .filter(|st| st.job == JobId(id))
                    .flat_map(|st| st.placement.granted.iter().map(|(h, _, _)| h.clone()))
                    .collect()
            };
            assert!(on(1).is_empty(), "{policy:?}");
            assert_eq!(
                s.pending_reasons(JobId(1)),
                ["has no permission for cluster queue \"all.q\"".to_string()],
                "{policy:?}"
            );
            // carol is kept off n2 by its xuser_lists (a fair-share policy may leave her
            // second job for a later pass).
            assert_eq!(on(2), ["n1"], "{policy:?}");
            assert!(on(3).iter().all(|h| h == "n1"), "{policy:?}");
            // Project p2 is excluded from n1.
            assert_eq!(on(4), ["n2"], "{policy:?}");
            assert_eq!(on(5).len(), 1, "{policy:?}");
        }
    }

    /// Departments feed the functional policy: with only `weight_department`, two running
    /// jobs of users in departments of 75 and 25 shares get 750 and 250 of 1,000 functional
    /// tickets (SGE's `sgeee.c`: share over the running jobs' sum); a user in no `DEPT`
    /// list is in `defaultdepartment`, of no shares.
    #[test]
    fn departments_share_the_functional_tickets() {
        let mut c = config(3, 1, "");
        c.scheduler.policy = PolicyOrder::Sge;
        c.scheduler.weight_tickets_functional = 1000.0;
        c.scheduler.weight_tickets_share = 0.0;
        c.scheduler.weight_user = 0.0;
        c.scheduler.weight_project = 0.0;
        c.scheduler.weight_job = 0.0;
        c.scheduler.weight_department = 1.0;
        let mut d1 = AccessList::new("physics", "DEPT");
        d1.fshare = 75;
        d1.entries = vec!["alice".into()];
        let mut d2 = AccessList::new("chemistry", "ACL DEPT");
        d2.fshare = 25;
        d2.entries = vec!["@chem".into()];
        c.access_lists = vec![d1, d2];
        let jobs = vec![
            owned(1, "alice", "alice", None),
            owned(2, "bob", "chem", None),
            owned(3, "carol", "carol", None),
        ];
        let mut s = state(c, jobs);
        let started = s.schedule(NOW).starts;
        assert_eq!(started.len(), 3);
        for id in 1..=3 {
            s.task_started(JobId(id), 1).expect("running");
        }
        s.schedule(NOW + 1);
        let ftickets = |id: u32| s.priority(JobId(id)).map(|p| p.ftickets);
        assert_eq!(ftickets(1), Some(750.0));
        assert_eq!(ftickets(2), Some(250.0));
        assert_eq!(ftickets(3), Some(0.0));
    }

    #[test]
    fn a_job_kept_off_every_instance_gets_a_reason_per_queue_and_host() {
        let mut c = config(2, 1, "projects:\n  - {name: p1}\n");
        let mut xl = AccessList::new("xl25", "ACL");
        xl.entries = vec!["bob".into()];
        c.access_lists = vec![xl];
        c.hosts[0].xuser_lists = vec!["xl25".into()];
        c.hosts[1].projects = vec!["p1".into()];
        let mut s = state(c, vec![owned(1, "bob", "bob", None)]);
        assert!(s.schedule(NOW).starts.is_empty());
        assert_eq!(
            s.pending_reasons(JobId(1)),
            [
                "has no permission for host \"n1\"".to_string(),
                "(no project) does not have the correct project to run in host \"n2\"".to_string()
            ]
        );
    }

    /// queue_conf(5)'s `user_lists NONE,[n2=acl25]`: the fence holds on that host only.
    #[test]
    fn a_hosts_own_fence_keeps_outsiders_off_that_instance_only() {
        let mut c = config(2, 1, "");
        let mut acl = AccessList::new("acl25", "ACL");
        acl.entries = vec!["alice".into()];
        c.access_lists = vec![acl];
        let over = serde_json::json!({"user_lists": ["acl25"]});
        c.queues[0]
            .per_host
            .insert("n2".into(), over.as_object().expect("object").clone());
        let jobs = vec![owned(1, "bob", "bob", None), owned(2, "bob", "bob", None)];
        let mut s = state(c, jobs);
        let started = s.schedule(NOW).starts;
        assert_eq!(started.len(), 1, "{started:?}");
        assert_eq!(started[0].placement.host, "n1");
        assert_eq!(s.job(JobId(2)).map(|j| j.tasks.pending_count()), Some(1));
    }
}
