//! What the daemon shows of itself with `--metrics`: the cell's gauges refreshed for a
//! scrape and the status page's part drawn from the state. Apart because it only reads.

use super::{Daemon, now};
use crate::sched::status_estimates::{PageForecast, PendingWork};

/// Jobs the status page lists at most (a page of 100,000 rows helps nobody).
const STATUS_PAGE_JOBS: usize = 2000;

impl Daemon {
    /// The status page's part from the state: the first [`STATUS_PAGE_JOBS`] jobs (by id)
    /// with why each waits and when `forecast` expects it to start, the share tree against
    /// the usage, and every user's pending work by when it starts.
    pub(super) fn status_page(&self, forecast: &PageForecast) -> String {
        let mut ids = self.state.job_ids();
        ids.sort();
        let total = ids.len();
        let jobs: Vec<(crate::model::JobRecord, Vec<String>)> = ids
            .into_iter()
            .take(STATUS_PAGE_JOBS)
            .filter_map(|id| {
                let job = self.state.job(id)?.into_owned();
                Some((job, self.state.pending_reasons(id).to_vec()))
            })
            .collect();
        let empty = gridspool_policy::sharetree::UsageStore::new();
        let guard = self
            .metrics
            .as_ref()
            .map(|(_, u)| u.lock().unwrap_or_else(|e| e.into_inner()));
        let usage = guard.as_deref().unwrap_or(&empty);
        let t = now();
        let mut page =
            crate::sched::status_page::render_state(&self.state.config, &jobs, usage, forecast, t);
        if total > STATUS_PAGE_JOBS {
            page.push_str(&format!(
                "<p>The first {STATUS_PAGE_JOBS} of {total} jobs; qstat lists them all.</p>\n"
            ));
        }
        page.push_str(&self.pending_work(forecast, t).render(
            forecast,
            self.state.config.scheduler.start_estimates.enabled,
        ));
        page
    }

    /// Every job's pending tasks by owner and expected start. A job whose pending tasks are
    /// as many as the forecast saw is counted from the forecast and the job's [`Hot`] fields
    /// alone; only one that started tasks since (or otherwise changed its count) is decoded,
    /// so that a page of a cell of 100,000 waiting jobs does not decode them all in the loop.
    ///
    /// [`Hot`]: crate::sched::state::Hot
    fn pending_work(&self, forecast: &PageForecast, now: i64) -> PendingWork {
        let mut work = PendingWork::new(now);
        for (&id, e) in &self.state.jobs {
            if !e.hot.has_pending || e.hot.pending_tasks == 0 {
                continue;
            }
            let owner = self.state.name(e.hot.owner);
            match PendingWork::forecast_of(forecast, id) {
                Some(parts) if parts.iter().map(|p| p.0).sum::<u64>() == e.hot.pending_tasks => {
                    for (n, estimate) in parts {
                        work.add(owner, n, estimate);
                    }
                }
                Some(_) => {
                    let Some(job) = e.record.get() else {
                        continue;
                    };
                    let mut tasks = crate::model::TaskSet::new();
                    for g in &job.tasks.pending {
                        for task in g.tasks.iter() {
                            tasks.insert(task);
                        }
                    }
                    work.add_job(forecast, owner, id, &tasks);
                }
                None => {
                    let why = match forecast {
                        PageForecast::Made(_) => "not in the last forecast",
                        PageForecast::Missing | PageForecast::Unreadable(_) => "no forecast",
                    };
                    work.add(
                        owner,
                        e.hot.pending_tasks,
                        &crate::model::StartEstimate::Unknown { why: why.into() },
                    );
                }
            }
        }
        work
    }

    /// A scrape: the gauges that describe the whole cell, from the state (a walk over every
    /// job, once per scrape, not per event).
    pub(super) fn refresh_metrics(&self) {
        use crate::sched::metrics::{JobLabels, QueueLabels, UsageLabels};
        let Some((m, usage)) = &self.metrics else {
            return;
        };
        let mut jobs: std::collections::HashMap<(&'static str, String), i64> = Default::default();
        let mut used = crate::sched::status_page::SlotsUsed::default();
        for id in self.state.job_ids() {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            used.add(&job);
            let owner = job.submitter.owner.clone();
            for g in &job.tasks.pending {
                let state = if job.error.is_some() {
                    "error"
                } else if !g.holds.is_none() {
                    "held"
                } else {
                    "pending"
                };
                *jobs.entry((state, owner.clone())).or_default() += g.tasks.len() as i64;
            }
            for t in &job.tasks.running {
                let state = if t.state == crate::model::RunState::Suspended || t.queue_suspended {
                    "suspended"
                } else {
                    "running"
                };
                *jobs.entry((state, owner.clone())).or_default() += 1;
            }
        }
        m.jobs.clear();
        for ((state, user), n) in jobs {
            m.jobs
                .get_or_create(&JobLabels {
                    state: state.to_string(),
                    user,
                })
                .set(n);
        }
        m.slots_used.clear();
        m.slots_total.clear();
        let config = &self.state.config;
        for q in &config.queues {
            for h in config.queue_hosts(q) {
                let name = format!("{}@{}", q.name, h.name);
                let labels = QueueLabels {
                    queue: name.clone(),
                };
                m.slots_total
                    .get_or_create(&labels)
                    .set(i64::from(config.queue_instance(q, &h.name).slots));
                m.slots_used
                    .get_or_create(&labels)
                    .set(i64::from(used.of(&name)));
            }
        }
        m.share_usage.clear();
        let decay = crate::acct::decay_config(config);
        let t = now();
        let store = usage.lock().unwrap_or_else(|e| e.into_inner());
        let kinds = store
            .users()
            .map(|(n, r)| ("user", n, r))
            .chain(store.projects().map(|(n, r)| ("project", n, r)));
        for (kind, name, record) in kinds {
            let u = record.usage_at(t, &decay);
            for (resource, value) in [("cpu", u.cpu), ("mem", u.mem), ("io", u.io)] {
                m.share_usage
                    .get_or_create(&UsageLabels {
                        kind: kind.to_string(),
                        name: name.to_string(),
                        resource: resource.to_string(),
                    })
                    .set(value);
            }
        }
    }
}
