//! The checks of a whole job against the cluster's configuration and the submitter's rights:
//! queues and hosts that exist, what the submitter may ask for, and `-w` verification.

use super::SubmitError;
use super::values::{MAX_ARRAY_TASKS, job_name_valid, time_value};
use crate::compat::pattern;
use crate::config::ClusterConfig;
use crate::model::JobSpec;

/// Whether a `wc_queue` (`cq`, `cq@host`, `cq@@hostgroup`, wildcards allowed) names some
/// queue instance of the configuration.
pub fn queue_exists(config: &ClusterConfig, wc_queue: &str) -> bool {
    let (cq, host) = match wc_queue.split_once('@') {
        Some((c, h)) => (c, Some(h)),
        None => (wc_queue, None),
    };
    config
        .queues
        .iter()
        .filter(|q| pattern::matches(cq, &q.name))
        .any(|q| match host {
            None => true,
            // A host of the queue in the group (or a subgroup of it), as SGE resolves it.
            Some(h) if h.starts_with('@') => {
                let hosts = config.queue_hosts(q);
                config
                    .hostgroups
                    .keys()
                    .filter(|g| pattern::matches(h, g))
                    .any(|g| {
                        config
                            .host_group_hosts(g)
                            .iter()
                            .any(|m| hosts.iter().any(|x| x.name == *m))
                    })
            }
            Some(h) => config
                .queue_hosts(q)
                .iter()
                .any(|x| pattern::matches(h, &x.name)),
        })
}

/// Whether a host named in a path list is known: configured, this host, or resolvable.
fn host_known(config: &ClusterConfig, host: &str, this_host: &str) -> bool {
    if config.host(host).is_some() || host == this_host {
        return true;
    }
    use std::net::ToSocketAddrs;
    (host, 0u16).to_socket_addrs().is_ok()
}

/// Who submits, with what the configuration grants.
#[derive(Debug, Clone)]
pub struct SubmitterRights {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    /// The name of the submitter's group, for access lists' `@group` entries.
    pub group: String,
    pub operator: bool,
    pub manager: bool,
    pub host: String,
}

/// qmaster's acceptance checks of a new job, in SGE's order, with its words.
pub fn validate_job(
    spec: &JobSpec,
    config: &ClusterConfig,
    who: &SubmitterRights,
) -> Result<(), SubmitError> {
    if who.uid < config.min_uid {
        return Err(SubmitError::Rejected(format!(
            "job rejected: your user id {} is lower than minimum user id {} of cluster configuration",
            who.uid, config.min_uid
        )));
    }
    if who.gid < config.min_gid {
        return Err(SubmitError::Rejected(format!(
            "job rejected: your group id {} is lower than minimum group id {} of cluster configuration",
            who.gid, config.min_gid
        )));
    }
    // A concurrency limit for a job that is not an array (checked on SGE 8.1.9).
    if spec.task_concurrency.is_some() && spec.array.is_none() {
        return Err(SubmitError::Rejected(
            "invalid \"task concurrency\" value in job request".into(),
        ));
    }
    // sge_conf(5)'s user_lists and xuser_lists: who may submit at all.
    let global = &config.cluster_access;
    if !config.has_access(
        &who.user,
        &who.group,
        &global.user_lists,
        &global.xuser_lists,
    ) {
        return Err(SubmitError::Rejected(format!(
            "job rejected: {}@{} is not allowed to submit jobs",
            who.user, who.host
        )));
    }
    job_name_valid(&spec.name)?;
    if spec.array.is_some_and(|r| r.len() > MAX_ARRAY_TASKS) {
        return Err(SubmitError::Rejected(format!(
            "job rejected: you tried to submit a job with more than {MAX_ARRAY_TASKS} tasks"
        )));
    }
    if spec.priority > 0 && !who.operator {
        return Err(SubmitError::Rejected(
            "job rejected: positive submission priority requires operator privileges".into(),
        ));
    }
    validate_attributes(spec, config, who)
}

/// The checks `qsub` and `qalter` share: references to configured objects.
pub fn validate_attributes(
    spec: &JobSpec,
    config: &ClusterConfig,
    who: &SubmitterRights,
) -> Result<(), SubmitError> {
    if spec.deadline.is_some() && !who.manager {
        // gridspool has no deadlineusers list: as in SGE's default (empty list), only
        // managers may set deadlines.
        return Err(SubmitError::Rejected(format!(
            "job rejected: the user \"{}\" is not a deadline initiation user",
            who.user
        )));
    }
    project_allowed(spec, config, who)?;
    if let Some(pe) = &spec.pe {
        if !config
            .parallel_environments
            .iter()
            .any(|p| pattern::matches(&pe.name, &p.name))
        {
            return Err(SubmitError::Rejected(format!(
                "job rejected: the requested parallel environment \"{}\" does not exist",
                pe.name
            )));
        }
        if pe.range.min == 0 || pe.range.max == 0 {
            return Err(SubmitError::Rejected(
                "\"job\" rejected: pe range must be greater than zero".into(),
            ));
        }
    }
    let mut unknown = Vec::new();
    for q in spec.hard_queues.iter().chain(&spec.soft_queues) {
        if !queue_exists(config, q) {
            unknown.push(format!(
                "Job was rejected because job requests unknown queue \"{q}\""
            ));
        }
    }
    if !spec.master_queues.is_empty() {
        let mut lines = Vec::new();
        if spec.pe.is_none() {
            lines.push(
                "job rejected: specification of master queue is not allowed for non-parallel jobs"
                    .to_string(),
            );
        }
        for q in &spec.master_queues {
            if !queue_exists(config, q) {
                lines.push(format!(
                    "Job was rejected because job requests unknown queue \"{q}\""
                ));
            }
        }
        if !lines.is_empty() {
            return Err(SubmitError::Rejected(lines.join("\n")));
        }
    }
    if !unknown.is_empty() {
        return Err(SubmitError::Rejected(unknown.join("\n")));
    }
    if !spec.hold_jid_ad.is_empty() && spec.array.is_none() {
        return Err(SubmitError::Rejected(
            "Can only specify \"-hold_jid_ad\" option with an array job (using \"-t\" option)"
                .into(),
        ));
    }
    for p in spec
        .stdout
        .iter()
        .chain(&spec.stderr)
        .chain(&spec.stdin)
        .chain(&spec.interpreter)
    {
        if let Some(h) = &p.host
            && !host_known(config, h, &who.host)
        {
            return Err(SubmitError::Rejected(format!(
                "can't resolve hostname \"{h}\""
            )));
        }
    }
    Ok(())
}

/// The outcome of `-w` verification: whether some queue could ever run the job, and SGE's
/// reasons when none can.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub suitable: bool,
    pub reasons: Vec<String>,
}

fn seconds(v: &str) -> Option<f64> {
    if v.eq_ignore_ascii_case("infinity") {
        return Some(f64::INFINITY);
    }
    time_value(v).and_then(|s| s.parse::<f64>().ok())
}

/// Checks the job against the configuration as an empty cluster (SGE's `-w e`/`-w v`): a
/// queue it may use, on a host it may use, offering its slots, its PE and its fixed resources.
pub fn verify_against_config(spec: &JobSpec, config: &ClusterConfig, job: u32) -> Verification {
    let wanted = |name: &str| spec.hard_resources.iter().find(|r| r.name == name);
    let needed = spec.pe.as_ref().map_or(1, |p| p.range.min.max(1));
    let mut best_offer = 0u32;
    let mut pe_reason = None;
    for q in &config.queues {
        if !spec.hard_queues.is_empty()
            && !spec.hard_queues.iter().any(|wq| {
                let cq = wq.split('@').next().unwrap_or(wq);
                pattern::matches(cq, &q.name)
            })
        {
            continue;
        }
        if let Some(r) = wanted("qname")
            && !pattern::matches(&r.value, &q.name)
        {
            continue;
        }
        let limits_ok = |q: &crate::config::QueueConfig| {
            ["h_rt", "s_rt", "h_cpu", "s_cpu"].iter().all(|lim| {
                match (wanted(lim), q.limits.get(*lim)) {
                    (Some(r), Some(l)) => match (seconds(&r.value), seconds(l)) {
                        (Some(a), Some(b)) => a <= b,
                        _ => true,
                    },
                    _ => true,
                }
            })
        };
        // Each host's queue instance (its per-host values), where the job's limits fit.
        let hosts: Vec<_> = config
            .queue_hosts(q)
            .into_iter()
            .filter(|h| wanted("hostname").is_none_or(|r| pattern::matches(&r.value, &h.name)))
            .filter(|h| wanted("arch").is_none_or(|r| pattern::matches(&r.value, &h.arch)))
            .map(|h| (h, config.queue_instance(q, &h.name)))
            .filter(|(_, qi)| limits_ok(qi))
            .collect();
        if hosts.is_empty() {
            continue;
        }
        let per_host = |(h, qi): &(&crate::config::HostConfig, crate::config::QueueConfig)| {
            crate::config::ClusterConfig::host_slots_cap(h)
                .map_or(qi.slots, |cap| qi.slots.min(cap))
        };
        match &spec.pe {
            None => {
                return Verification {
                    suitable: true,
                    reasons: Vec::new(),
                };
            }
            Some(pe) => {
                let Some(pconf) = config.parallel_environments.iter().find(|p| {
                    pattern::matches(&pe.name, &p.name)
                        && hosts.iter().any(|(_, qi)| qi.pe_list.contains(&p.name))
                }) else {
                    continue;
                };
                let hosts: Vec<_> = hosts
                    .into_iter()
                    .filter(|(_, qi)| qi.pe_list.contains(&pconf.name))
                    .collect();
                let offer = if pconf.allocation_rule == "$pe_slots" {
                    hosts
                        .iter()
                        .map(per_host)
                        .filter(|s| *s >= needed)
                        .max()
                        .unwrap_or(0)
                } else {
                    hosts.iter().map(per_host).sum()
                }
                .min(pconf.slots);
                if offer >= needed {
                    return Verification {
                        suitable: true,
                        reasons: Vec::new(),
                    };
                }
                best_offer = best_offer.max(offer);
                pe_reason = Some(pconf.name.clone());
            }
        }
    }
    let reasons = pe_reason
        .map(|pe| {
            vec![format!(
                "Job {job} cannot run in PE \"{pe}\" because it only offers {best_offer} slots"
            )]
        })
        .unwrap_or_default();
    Verification {
        suitable: false,
        reasons,
    }
}

/// qmaster's checks of a job's project (`job_verify_project`): it exists, its `acl`/`xacl`
/// admit the submitter, the global `projects`/`xprojects` admit it; without a project, the
/// global `projects` must be empty.
fn project_allowed(
    spec: &JobSpec,
    config: &ClusterConfig,
    who: &SubmitterRights,
) -> Result<(), SubmitError> {
    let global = &config.cluster_access;
    let Some(p) = &spec.project else {
        if !global.projects.is_empty() {
            return Err(SubmitError::Rejected(
                "job rejected: no project was supplied and only certain projects are allowed to submit jobs"
                    .into(),
            ));
        }
        return Ok(());
    };
    let Some(project) = config.projects.iter().find(|x| &x.name == p) else {
        return Err(SubmitError::Rejected(format!(
            "job rejected: the requested project \"{p}\" does not exist"
        )));
    };
    if !config.has_access(&who.user, &who.group, &project.acl, &project.xacl) {
        return Err(SubmitError::Rejected(format!(
            "job rejected: no access to project \"{p}\" for user \"{}\"",
            who.user
        )));
    }
    if global.xprojects.contains(p) || !global.projects.is_empty() && !global.projects.contains(p) {
        return Err(SubmitError::Rejected(format!(
            "job rejected: project \"{p}\" is not allowed to submit jobs"
        )));
    }
    Ok(())
}

/// SGE's warning for a job whose owner no queue admits (`user_lists`/`xuser_lists` of the
/// queues, not their projects nor the hosts'): the job is still submitted, and `qsub` says
/// so and exits 1.
pub fn no_queue_admits(config: &ClusterConfig, who: &SubmitterRights) -> Option<String> {
    let admitted = config.queues.iter().any(|q| {
        !config.queue_hosts(q).is_empty()
            && config.has_access(&who.user, &who.group, &q.user_lists, &q.xuser_lists)
    });
    (!admitted).then(|| {
        format!(
            "warning: {}'s job is not allowed to run in any queue",
            who.user
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PeRequest, SlotRange};

    fn config() -> ClusterConfig {
        ClusterConfig::parse(&ClusterConfig::default_text("vm", 2)).expect("config")
    }

    #[test]
    fn queues_and_verification() {
        let c = config();
        assert!(queue_exists(&c, "all.q"));
        assert!(queue_exists(&c, "*@vm"));
        assert!(queue_exists(&c, "all.q@@allhosts"));
        assert!(!queue_exists(&c, "nosuch.q"));
        assert!(!queue_exists(&c, "all.q@nosuchhost"));
        let mut spec = JobSpec {
            pe: Some(PeRequest {
                name: "smp".into(),
                range: SlotRange { min: 64, max: 64 },
            }),
            ..JobSpec::default()
        };
        let v = verify_against_config(&spec, &c, 67);
        assert!(!v.suitable);
        assert_eq!(
            v.reasons,
            ["Job 67 cannot run in PE \"smp\" because it only offers 0 slots"]
        );
        spec.pe = None;
        assert!(verify_against_config(&spec, &c, 1).suitable);
    }
}
