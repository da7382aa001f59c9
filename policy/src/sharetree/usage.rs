//! Share-tree usage (`sched_conf(5)` `usage_weight_list`, `halftime`, `halflife_decay_list`):
//! what a job consumed, kept per user, project and user-in-project as SGE keeps it, and how it
//! decays over time.

use std::collections::HashMap;

/// SGE's `SGE_USAGE_INTERVAL`: decay constants are per 60 seconds.
pub const USAGE_INTERVAL_SECS: f64 = 60.0;

/// Resource usage of the three kinds SGE's share tree accounts (`sched_conf(5)`
/// `usage_weight_list`): CPU seconds, memory (GB·s) and IO.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Usage {
    fn scaled(self, f: [f64; 3]) -> Self {
        Self {
            cpu: self.cpu * f[0],
            mem: self.mem * f[1],
            io: self.io * f[2],
        }
    }

    pub(super) fn plus(self, o: Self) -> Self {
        Self {
            cpu: self.cpu + o.cpu,
            mem: self.mem + o.mem,
            io: self.io + o.io,
        }
    }
}

/// `usage_weight_list` (`sched_conf(5)`), default `cpu=1,mem=0,io=0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageWeights {
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
}

impl Default for UsageWeights {
    fn default() -> Self {
        Self {
            cpu: 1.0,
            mem: 0.0,
            io: 0.0,
        }
    }
}

impl UsageWeights {
    /// The single usage value: each kind times its weight over the sum of weights (SGE divides
    /// by the sum, so weights need not add up to 1 as the man page suggests). Zero weights give 0.
    pub fn combine(&self, u: &Usage) -> f64 {
        let sum = self.cpu + self.mem + self.io;
        if sum <= 0.0 {
            return 0.0;
        }
        u.cpu * (self.cpu / sum) + u.mem * (self.mem / sum) + u.io * (self.io / sum)
    }
}

/// How usage ages (`sched_conf(5)` `halftime` and `halflife_decay_list`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecayConfig {
    /// `halftime` in hours; 0 means "not decayed". Default 168.
    pub halftime_hours: f64,
    /// `halflife_decay_list` per kind, in minutes: `Some(-1)` keeps only the usage of running
    /// jobs (past usage vanishes at the next decay), `Some(0)` no decay, `None` uses `halftime`.
    pub halflife_minutes: [Option<f64>; 3],
}

impl Default for DecayConfig {
    fn default() -> Self {
        Self {
            halftime_hours: 168.0,
            halflife_minutes: [None; 3],
        }
    }
}

/// SGE's `calculate_decay_constant` for a half-life in minutes: the fraction of usage left
/// after one 60-second usage interval. Negative half-life gives 0, zero gives 1 (no decay).
pub fn decay_constant(halflife_minutes: f64) -> f64 {
    if halflife_minutes < 0.0 {
        0.0
    } else if halflife_minutes == 0.0 {
        1.0
    } else {
        let rate = -(0.5_f64.ln()) / (halflife_minutes * 60.0);
        1.0 - rate * USAGE_INTERVAL_SECS
    }
}

impl DecayConfig {
    /// The factors by which cpu, mem and io usage shrink over `elapsed_secs` (SGE's
    /// `decay_usage`: `constant^(elapsed / 60)`).
    pub fn factors(&self, elapsed_secs: f64) -> [f64; 3] {
        let default = decay_constant(self.halftime_hours * 60.0);
        let mut out = [1.0; 3];
        for (k, slot) in out.iter_mut().enumerate() {
            let c = self.halflife_minutes[k].map_or(default, decay_constant);
            *slot = c.powf(elapsed_secs / USAGE_INTERVAL_SECS);
        }
        out
    }
}

/// The usage SGE keeps for one user, project or user-in-project.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageRecord {
    /// Decayed usage as of `stamp`.
    pub usage: Usage,
    /// Undecayed total (`ltcpu`, `ltmem`, `ltio` in `sge_share_mon`).
    pub long_term: Usage,
    /// When `usage` was last decayed, seconds since the epoch.
    pub stamp: Option<i64>,
}

impl UsageRecord {
    /// The decayed usage as seen at `now` (no mutation).
    pub fn usage_at(&self, now: i64, decay: &DecayConfig) -> Usage {
        match self.stamp {
            Some(s) if now > s => self.usage.scaled(decay.factors((now - s) as f64)),
            _ => self.usage,
        }
    }

    fn decay_to(&mut self, now: i64, decay: &DecayConfig) {
        self.usage = self.usage_at(now, decay);
        self.stamp = Some(match self.stamp {
            Some(s) => s.max(now),
            None => now,
        });
    }

    fn add(&mut self, u: Usage, at: i64, decay: &DecayConfig) {
        self.decay_to(at, decay);
        self.usage = self.usage.plus(u);
        self.long_term = self.long_term.plus(u);
    }
}

/// Accumulated usage, keyed as SGE keys it (`user(5)` and `project(5)` usage lists).
#[derive(Debug, Clone, Default)]
pub struct UsageStore {
    users: HashMap<String, UsageRecord>,
    projects: HashMap<String, UsageRecord>,
    user_projects: HashMap<(String, String), UsageRecord>,
}

impl UsageStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Debits usage a job of `user` (and `project`) consumed, reported at `at`.
    ///
    /// Like SGE's `update_userprj_usage`: usage of a job with a project goes to the project and
    /// to the user's sub-record for that project, *not* to the user's own record; usage of a job
    /// without a project goes to the user's record. Existing usage is first decayed to `at`, so
    /// the store stays correct whatever the order of calls for different keys.
    pub fn add_usage(
        &mut self,
        user: &str,
        project: Option<&str>,
        usage: Usage,
        at: i64,
        decay: &DecayConfig,
    ) {
        match project {
            Some(p) => {
                self.user_projects
                    .entry((user.to_string(), p.to_string()))
                    .or_default()
                    .add(usage, at, decay);
                self.projects
                    .entry(p.to_string())
                    .or_default()
                    .add(usage, at, decay);
                // The user object exists even if all its usage is in projects.
                self.users.entry(user.to_string()).or_default();
            }
            None => self
                .users
                .entry(user.to_string())
                .or_default()
                .add(usage, at, decay),
        }
    }

    /// Sets a record outright (loading persisted state, or tests replaying `sge_share_mon`).
    pub fn set_user(&mut self, user: &str, record: UsageRecord) {
        self.users.insert(user.to_string(), record);
    }

    /// Sets a project's record.
    pub fn set_project(&mut self, project: &str, record: UsageRecord) {
        self.projects.insert(project.to_string(), record);
    }

    /// Sets a user's record within a project.
    pub fn set_user_in_project(&mut self, user: &str, project: &str, record: UsageRecord) {
        self.user_projects
            .insert((user.to_string(), project.to_string()), record);
    }

    /// A user's own record (jobs without project).
    /// Every user's record (for reports: `sched_d --metrics`).
    pub fn users(&self) -> impl Iterator<Item = (&str, &UsageRecord)> {
        self.users.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Every project's record.
    pub fn projects(&self) -> impl Iterator<Item = (&str, &UsageRecord)> {
        self.projects.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Every user's record within a project, as ((user, project), record).
    pub fn user_projects(&self) -> impl Iterator<Item = ((&str, &str), &UsageRecord)> {
        self.user_projects
            .iter()
            .map(|((u, p), v)| ((u.as_str(), p.as_str()), v))
    }

    pub fn user(&self, user: &str) -> Option<&UsageRecord> {
        self.users.get(user)
    }

    /// A project's record.
    pub fn project(&self, project: &str) -> Option<&UsageRecord> {
        self.projects.get(project)
    }

    /// A user's record within a project.
    pub fn user_in_project(&self, user: &str, project: &str) -> Option<&UsageRecord> {
        self.user_projects
            .get(&(user.to_string(), project.to_string()))
    }
}
