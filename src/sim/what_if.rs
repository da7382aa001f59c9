//! `gridspool-sim --what-if`: what a change of the live cell would do to its queue. The cell
//! is read once (`sched::forecast::cell`), as the daemon's own forecast reads it and without
//! its lock (the daemon keeps running); two copies of it are played forward from the same
//! moment through the scheduling pass (`sched::forecast`), one as the cell stands and one
//! changed (a configuration key, a whole configuration, hosts added like an existing one,
//! hosts drained as by `qmod -d`), and every pending task's estimated start under both is
//! compared, per user and per queue.
//!
//! The changed copy is built anew on the changed configuration, as `sched_d` rebuilds its
//! state from a changed `config.yaml`: the jobs, the queue instance states and the share-tree
//! usage stay the live cell's, so the change is all that differs between the two plays.

use crate::config::{ClusterConfig, RunTimeSource};
use crate::model::{JobId, StartEstimate, StartForecast, TaskId};
use crate::sched::forecast::cell::{CellError, CellState, copy_of, copy_with_config};
use crate::sched::forecast::{
    ExpectedRunTimes, ForecastOptions, LearnedRunTimes, RunTimeLimits, forecast,
};
use crate::sched::{SchedState, SharedUsage};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Why a what-if could not be played.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    /// A `--set KEY=VALUE` that names no key of the configuration, or gives it a value it
    /// does not take.
    #[error("--set {arg}: {why}")]
    Set { arg: String, why: String },
    #[error("--like {0}: no host of that name in the configuration")]
    NoSuchModel(String),
    #[error("--add-host {0}: a host of that name is in the configuration already")]
    HostExists(String),
    #[error("--drain {0}: no host of that name in the configuration")]
    NoSuchHost(String),
    /// The configuration with every change made does not pass `ClusterConfig::parse`.
    #[error("the changed configuration is not valid: {0}")]
    Invalid(String),
    #[error(transparent)]
    Cell(#[from] CellError),
}

/// The names of the hosts `--add-hosts`/`--add-host` add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewHostNames {
    /// This many, named after the model host so that none is a name the cell has.
    Count(u32),
    Named(Vec<String>),
}

/// Hosts added like an existing one: its slots, complex values and the rest of its
/// configuration, in the queues and host groups that name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddHosts {
    pub like: String,
    pub names: NewHostNames,
}

/// Everything changed, applied in this order: the whole configuration, the keys, the added
/// hosts, the drained hosts.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// `--config FILE`: instead of the live configuration (with the file's name).
    pub config: Option<(String, ClusterConfig)>,
    /// `--set KEY=VALUE`, in order.
    pub set: Vec<String>,
    pub add_hosts: Option<AddHosts>,
    /// `--drain HOST`: its queue instances take no new work.
    pub drain: Vec<String>,
}

/// The waits (estimated start − now, seconds) of the tasks of a group that have a time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Waits {
    /// Tasks with an estimated start (the others are unknown or never).
    pub timed: usize,
    pub median: Option<f64>,
    pub mean: Option<f64>,
}

/// What the change does to one group of pending tasks (a user's, a queue's, all).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GroupChange {
    /// Pending tasks (held, in error and never-starting ones too).
    pub tasks: usize,
    pub before: Waits,
    pub after: Waits,
    /// The mean of (start after − start before) over the tasks with a time in both: how
    /// much sooner (negative) or later the same tasks start.
    pub change: Option<f64>,
    /// Tasks with a time in both that start sooner, later.
    pub earlier: usize,
    pub later: usize,
    /// Tasks that got a time (unknown or never before), lost theirs.
    pub gained: usize,
    pub lost: usize,
}

/// One job's first pending task before and after, and how its tasks moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobChange {
    pub job: JobId,
    pub user: String,
    pub queue: String,
    pub tasks: usize,
    pub before: StartEstimate,
    pub after: StartEstimate,
    /// The mean move of its tasks with a time in both (seconds; negative: sooner).
    pub change: Option<f64>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// The moment both plays start from (seconds since the epoch).
    pub now: i64,
    /// `limits` or `learned`.
    pub run_times: String,
    /// What was changed, in words (`scheduler.weight_ticket=0.1`, `hosts added like n1: …`).
    pub changes: Vec<String>,
    /// Jobs the cell holds that could not be read (left out of both plays).
    pub unreadable: usize,
    pub all: GroupChange,
    pub by_user: BTreeMap<String, GroupChange>,
    pub by_queue: BTreeMap<String, GroupChange>,
    /// The jobs that move most (`--jobs N`), most first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobChange>,
}

/// Applies the configuration part of `change` (all but the drained hosts) to `live`; returns
/// the changed configuration and what was changed, in words.
pub fn changed_config(
    live: &ClusterConfig,
    change: &Change,
) -> Result<(ClusterConfig, Vec<String>), WhatIfError> {
    let mut words = Vec::new();
    let mut config = match &change.config {
        Some((name, c)) => {
            words.push(format!("configuration of {name}"));
            c.clone()
        }
        None => live.clone(),
    };
    for arg in &change.set {
        config = set_key(&config, arg)?;
        words.push(arg.clone());
    }
    if let Some(add) = &change.add_hosts {
        let names = add_hosts(&mut config, add)?;
        // Added hosts are checked as any configuration is, by its parser.
        config = reparse(&to_value(&config)).map_err(WhatIfError::Invalid)?;
        words.push(format!(
            "hosts added like {}: {}",
            add.like,
            names.join(" ")
        ));
    }
    for host in &change.drain {
        if !config.hosts.iter().any(|h| &h.name == host) {
            return Err(WhatIfError::NoSuchHost(host.clone()));
        }
        words.push(format!("drained: {host}"));
    }
    Ok((config, words))
}

fn to_value(config: &ClusterConfig) -> Value {
    serde_json::to_value(config).unwrap_or(Value::Null)
}

/// The configuration a value stands for, through the parser `sched_d` uses (JSON is YAML).
fn reparse(value: &Value) -> Result<ClusterConfig, String> {
    ClusterConfig::parse(&value.to_string())
}

/// One step of a key's path: a mapping's key, or a list's entry by index or by `name`.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Select(String),
}

/// `scheduler.weight_ticket`, `queues[all.q].slots`, `hosts[0].complex_values.gpu`,
/// `hostgroups.@big`: keys separated by dots, `[…]` selecting a list's entry by its index
/// or its `name` (or a mapping's key with dots in it, `per_host[node1.example.com]`).
fn parse_path(key: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    let mut rest = key;
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('[') {
            let end = inner
                .find(']')
                .ok_or_else(|| format!("{key:?}: a [ without its ]"))?;
            steps.push(Step::Select(inner[..end].to_string()));
            rest = &inner[end + 1..];
            rest = rest.strip_prefix('.').unwrap_or(rest);
            continue;
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        if end == 0 {
            return Err(format!("{key:?}: an empty key"));
        }
        steps.push(Step::Key(rest[..end].to_string()));
        rest = &rest[end..];
        rest = rest.strip_prefix('.').unwrap_or(rest);
    }
    if steps.is_empty() {
        return Err("no key before the =".into());
    }
    Ok(steps)
}

/// The entry `step` names in `node`, created (as an empty mapping) where a mapping lacks it
/// and `create` is set.
fn child<'a>(
    node: &'a mut Value,
    parent: &str,
    step: &Step,
    create: bool,
) -> Result<&'a mut Value, String> {
    match (node, step) {
        (Value::Object(map), Step::Key(k) | Step::Select(k)) => {
            if !map.contains_key(k) {
                if !create {
                    return Err(format!("no key {k:?}"));
                }
                map.insert(k.clone(), Value::Object(Default::default()));
            }
            map.get_mut(k).ok_or_else(|| format!("no key {k:?}"))
        }
        (Value::Array(list), Step::Select(sel)) => {
            let len = list.len();
            let at = match sel.parse::<usize>() {
                Ok(i) if i < len => i,
                Ok(i) => return Err(format!("no entry [{i}]: the list has {len}")),
                Err(_) => list
                    .iter()
                    .position(|e| e.get("name").and_then(Value::as_str) == Some(sel.as_str()))
                    .ok_or_else(|| format!("no entry named {sel:?}"))?,
            };
            Ok(&mut list[at])
        }
        (Value::Array(_), Step::Key(_)) => Err(format!(
            "{parent:?} is a list: name an entry as {parent}[NAME] or {parent}[INDEX]"
        )),
        (other, _) => Err(format!(
            "{parent:?} is a value ({other}), not a mapping or a list"
        )),
    }
}

/// Whether `path` leads to a value in `root`.
fn has_path(root: &Value, path: &[Step]) -> bool {
    let mut node = root.clone();
    for step in path {
        match child(&mut node, "", step, false) {
            Ok(next) => node = next.take(),
            Err(_) => return false,
        }
    }
    true
}

/// What the parser says, without where in the text it read (the text is the generated JSON,
/// which the user never saw).
fn parse_error(message: &str) -> &str {
    let first = message.lines().next().unwrap_or("");
    match first.find(" column ") {
        Some(at) => first[at + 8..]
            .split_once(": ")
            .map_or(first, |(_, why)| why),
        None => first.strip_prefix("error: ").unwrap_or(first),
    }
}

/// `config` with `arg` (`KEY=VALUE`, the value in YAML) set, parsed again as a whole.
fn set_key(config: &ClusterConfig, arg: &str) -> Result<ClusterConfig, WhatIfError> {
    let fail = |why: String| WhatIfError::Set {
        arg: arg.to_string(),
        why,
    };
    let (key, text) = arg
        .split_once('=')
        .ok_or_else(|| fail("not KEY=VALUE".into()))?;
    let path = parse_path(key.trim()).map_err(&fail)?;
    let value: Value = if text.trim().is_empty() {
        Value::String(String::new())
    } else {
        serde_saphyr::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
    };
    let original = to_value(config);
    let mut root = original.clone();
    let (last, parents) = path.split_last().ok_or_else(|| fail("no key".into()))?;
    let mut node = &mut root;
    let mut parent = "";
    for step in parents {
        node = child(node, parent, step, true).map_err(|e| fail(format!("{key}: {e}")))?;
        parent = match step {
            Step::Key(k) | Step::Select(k) => k,
        };
    }
    match (node, last) {
        (Value::Object(map), Step::Key(k) | Step::Select(k)) => {
            map.insert(k.clone(), value);
        }
        (node, step) => {
            *child(node, parent, step, false).map_err(|e| fail(format!("{key}: {e}")))? = value;
        }
    }
    let changed = reparse(&root).map_err(|e| {
        fail(format!(
            "{key}: the configuration does not take {text:?}: {}",
            parse_error(&e)
        ))
    })?;
    // A key the configuration does not have is dropped by its parser: it must be there
    // after the round trip (or have been there before, for a value its writer leaves out).
    if !has_path(&to_value(&changed), &path) && !has_path(&original, &path) {
        return Err(fail(format!("{key}: no such key in the configuration")));
    }
    Ok(changed)
}

/// Adds the hosts of `add` to `config`; returns their names.
fn add_hosts(config: &mut ClusterConfig, add: &AddHosts) -> Result<Vec<String>, WhatIfError> {
    let model = config
        .hosts
        .iter()
        .find(|h| h.name == add.like)
        .cloned()
        .ok_or_else(|| WhatIfError::NoSuchModel(add.like.clone()))?;
    let taken = |config: &ClusterConfig, name: &str| config.hosts.iter().any(|h| h.name == name);
    let names: Vec<String> = match &add.names {
        NewHostNames::Named(names) => {
            if let Some(n) = names.iter().find(|n| taken(config, n)) {
                return Err(WhatIfError::HostExists(n.clone()));
            }
            names.clone()
        }
        NewHostNames::Count(n) => {
            let mut names = Vec::new();
            let mut i = 0;
            while names.len() < *n as usize {
                i += 1;
                let name = format!("{}-whatif-{i}", add.like);
                if !taken(config, &name) {
                    names.push(name);
                }
            }
            names
        }
    };
    for name in &names {
        let mut host = model.clone();
        host.name = name.clone();
        config.hosts.push(host);
        for members in config.hostgroups.values_mut() {
            if members.contains(&add.like) {
                members.push(name.clone());
            }
        }
        for q in &mut config.queues {
            if q.hostlist.contains(&add.like) {
                q.hostlist.push(name.clone());
            }
            if let Some(values) = q.per_host.get(&add.like).cloned() {
                q.per_host.insert(name.clone(), values);
            }
        }
    }
    Ok(names)
}

/// The run times the forecast uses: `choice`, else what the cell's configuration says. The
/// learned ones come from the cell's read of the accounting file when its configuration
/// learns them, else from a read of their own.
pub fn run_times(
    choice: Option<RunTimeSource>,
    cell: &mut CellState,
    accounting: &std::path::Path,
) -> Result<Box<dyn ExpectedRunTimes>, WhatIfError> {
    let configured = cell.state.config.scheduler.start_estimates.run_times;
    Ok(match choice.unwrap_or(configured) {
        RunTimeSource::Limits => Box::new(RunTimeLimits),
        RunTimeSource::Learned if configured == RunTimeSource::Learned => {
            Box::new(std::mem::take(&mut cell.learned))
        }
        RunTimeSource::Learned => Box::new(
            LearnedRunTimes::from_accounting(accounting)
                .map_err(|e| WhatIfError::Cell(CellError::Accounting(e)))?,
        ),
    })
}

/// Plays `cell` as it stands and changed by `change` from `now`, and compares the two;
/// `jobs`: how many of the jobs that move most to list.
pub fn what_if(
    cell: &CellState,
    change: &Change,
    now: i64,
    run_times: &dyn ExpectedRunTimes,
    jobs: usize,
) -> Result<WhatIf, WhatIfError> {
    let live = &cell.state.config;
    let (config, changes) = changed_config(live, change)?;
    let opts = ForecastOptions {
        horizon: live.scheduler.start_estimates.horizon_secs(),
        ..ForecastOptions::default()
    };
    // Each play starts from its own copy of the usage, as it is now.
    let usage = || -> SharedUsage {
        Arc::new(Mutex::new(
            cell.usage.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        ))
    };
    let mut before_state = copy_of(&cell.state, usage());
    let mut after_state = copy_with_config(&cell.state, usage(), config);
    drain(&mut after_state, &change.drain);
    let (before, _) = forecast(&mut before_state, now, run_times, &opts);
    let (after, _) = forecast(&mut after_state, now, run_times, &opts);
    let mut answer = compare(&cell.state, &before, &after, now, jobs);
    answer.changes = changes;
    answer.unreadable = cell.unreadable;
    Ok(answer)
}

/// The queue instances of `hosts` take no new work, as after `qmod -d QUEUE@HOST`.
fn drain(state: &mut SchedState, hosts: &[String]) {
    if hosts.is_empty() {
        return;
    }
    let mut states = state.instance_states.clone();
    for q in &state.config.queues {
        for h in state.config.queue_hosts(q) {
            if hosts.contains(&h.name) {
                states.disabled.insert(format!("{}@{}", q.name, h.name));
            }
        }
    }
    state.restore_instance_states(states);
}

/// A task's estimated wait, if it has a time.
fn wait(e: &StartEstimate, now: i64) -> Option<i64> {
    match e {
        StartEstimate::At { time, .. } => Some(time - now),
        StartEstimate::Unknown { .. } | StartEstimate::Never { .. } => None,
    }
}

/// One pending task under both plays.
struct TaskPair<'a> {
    before: &'a StartEstimate,
    after: &'a StartEstimate,
}

fn median(sorted: &[i64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2] as f64),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0),
    }
}

fn waits(mut w: Vec<i64>) -> Waits {
    w.sort_unstable();
    Waits {
        timed: w.len(),
        median: median(&w),
        mean: (!w.is_empty()).then(|| w.iter().sum::<i64>() as f64 / w.len() as f64),
    }
}

fn group(tasks: &[TaskPair], now: i64) -> GroupChange {
    let mut g = GroupChange {
        tasks: tasks.len(),
        ..GroupChange::default()
    };
    let mut moves = Vec::new();
    for t in tasks {
        match (wait(t.before, now), wait(t.after, now)) {
            (Some(b), Some(a)) => {
                moves.push(a - b);
                g.earlier += usize::from(a < b);
                g.later += usize::from(a > b);
            }
            (None, Some(_)) => g.gained += 1,
            (Some(_), None) => g.lost += 1,
            (None, None) => {}
        }
    }
    g.before = waits(tasks.iter().filter_map(|t| wait(t.before, now)).collect());
    g.after = waits(tasks.iter().filter_map(|t| wait(t.after, now)).collect());
    g.change = (!moves.is_empty()).then(|| moves.iter().sum::<i64>() as f64 / moves.len() as f64);
    g
}

/// The comparison of the two forecasts of the jobs of `state`.
fn compare(
    state: &SchedState,
    before: &StartForecast,
    after: &StartForecast,
    now: i64,
    top: usize,
) -> WhatIf {
    let unknown = StartEstimate::Unknown {
        why: "not in the forecast".into(),
    };
    let mut all = Vec::new();
    let mut by_user: BTreeMap<String, Vec<TaskPair>> = BTreeMap::new();
    let mut by_queue: BTreeMap<String, Vec<TaskPair>> = BTreeMap::new();
    let mut jobs = Vec::new();
    let after_of: HashMap<JobId, &crate::model::JobStartEstimate> =
        after.jobs.iter().map(|j| (j.job, j)).collect();
    for b in &before.jobs {
        let Some(record) = state.job(b.job) else {
            continue;
        };
        let user = record.submitter.owner.clone();
        let requested = record.spec.hard_queues.join(",");
        let a = after_of.get(&b.job);
        let mut pairs: Vec<(TaskId, TaskPair)> = Vec::new();
        for t in &b.tasks {
            for task in t.tasks.iter() {
                let after = a.and_then(|a| a.task(task)).unwrap_or(&unknown);
                pairs.push((
                    task,
                    TaskPair {
                        before: &t.start,
                        after,
                    },
                ));
            }
        }
        let queue_of = |p: &TaskPair| match (p.before, p.after) {
            (StartEstimate::At { queue, .. }, _) | (_, StartEstimate::At { queue, .. }) => {
                queue.clone()
            }
            _ if !requested.is_empty() => requested.clone(),
            _ => "-".to_string(),
        };
        let Some((_, first)) = pairs.first() else {
            continue;
        };
        let moves: Vec<i64> = pairs
            .iter()
            .filter_map(|(_, p)| Some(wait(p.after, now)? - wait(p.before, now)?))
            .collect();
        jobs.push(JobChange {
            job: b.job,
            user: user.clone(),
            queue: queue_of(first),
            tasks: pairs.len(),
            before: first.before.clone(),
            after: first.after.clone(),
            change: (!moves.is_empty())
                .then(|| moves.iter().sum::<i64>() as f64 / moves.len() as f64),
        });
        for (_, p) in pairs {
            let copy = || TaskPair {
                before: p.before,
                after: p.after,
            };
            by_user.entry(user.clone()).or_default().push(copy());
            by_queue.entry(queue_of(&p)).or_default().push(copy());
            all.push(p);
        }
    }
    // Most moved first: a time gained or lost before any move, then by the size of the move.
    let weight = |j: &JobChange| match (wait(&j.before, now), wait(&j.after, now)) {
        (Some(_), Some(_)) => j.change.map_or(0.0, f64::abs),
        (None, None) => -1.0,
        _ => f64::INFINITY,
    };
    jobs.retain(|j| weight(j) > 0.0);
    jobs.sort_by(|x, y| weight(y).total_cmp(&weight(x)).then(x.job.cmp(&y.job)));
    jobs.truncate(top);
    WhatIf {
        now,
        run_times: before.run_times.clone(),
        changes: Vec::new(),
        unreadable: 0,
        all: group(&all, now),
        by_user: by_user
            .iter()
            .map(|(k, v)| (k.clone(), group(v, now)))
            .collect(),
        by_queue: by_queue
            .iter()
            .map(|(k, v)| (k.clone(), group(v, now)))
            .collect(),
        jobs,
    }
}

/// A wait or a move in seconds as `h:mm:ss`, or in days from two days up; `signed` puts
/// `+` before a move later.
pub fn span(seconds: f64, signed: bool) -> String {
    let s = seconds.round() as i64;
    let sign = match s {
        _ if s < 0 => "-",
        _ if s > 0 && signed => "+",
        _ => "",
    };
    let a = s.unsigned_abs();
    if a >= 2 * 86_400 {
        format!("{sign}{:.1} days", a as f64 / 86_400.0)
    } else {
        format!("{sign}{}:{:02}:{:02}", a / 3600, a / 60 % 60, a % 60)
    }
}

fn opt_span(v: Option<f64>, signed: bool) -> String {
    v.map_or_else(|| "-".to_string(), |s| span(s, signed))
}

/// What a task's estimate says, as a wait.
fn shown(e: &StartEstimate, now: i64) -> String {
    match e {
        StartEstimate::At { time, .. } => span((time - now) as f64, false),
        StartEstimate::Unknown { .. } => "unknown".into(),
        StartEstimate::Never { .. } => "never".into(),
    }
}

/// The answer as tables, in the manner of the replay's report (`super::report::text`).
pub fn text(w: &WhatIf, cell: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "what-if on {cell} at {} (run times: {}): {} pending tasks",
        crate::time::qstat_date(w.now),
        w.run_times,
        w.all.tasks
    );
    for c in &w.changes {
        let _ = writeln!(out, "  changed: {c}");
    }
    if w.changes.is_empty() {
        let _ = writeln!(
            out,
            "  changed: nothing (both plays are the cell as it stands)"
        );
    }
    if w.unreadable > 0 {
        let _ = writeln!(
            out,
            "  {} jobs of the cell could not be read and are left out",
            w.unreadable
        );
    }
    let row = |out: &mut String, name: &str, g: &GroupChange| {
        let _ = writeln!(
            out,
            "{:<16} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>6} {:>6} {:>5}",
            name,
            g.tasks,
            opt_span(g.before.median, false),
            opt_span(g.after.median, false),
            opt_span(g.before.mean, false),
            opt_span(g.after.mean, false),
            opt_span(g.change, true),
            g.earlier,
            g.later,
            g.gained,
            g.lost
        );
    };
    for (title, groups) in [("user", &w.by_user), ("queue", &w.by_queue)] {
        let _ = writeln!(out, "\nby {title} (estimated wait: start - now)");
        let _ = writeln!(
            out,
            "{:<16} {:>6} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>6} {:>6} {:>5}",
            title,
            "tasks",
            "med before",
            "med after",
            "mean before",
            "mean after",
            "change",
            "earlier",
            "later",
            "gained",
            "lost"
        );
        for (k, g) in groups {
            row(&mut out, k, g);
        }
        row(&mut out, "total", &w.all);
    }
    if !w.jobs.is_empty() {
        let _ = writeln!(out, "\njobs that move most");
        let _ = writeln!(
            out,
            "{:<10} {:<16} {:<16} {:>6} {:>11} {:>11} {:>11}",
            "job", "user", "queue", "tasks", "wait before", "wait after", "change"
        );
        for j in &w.jobs {
            let _ = writeln!(
                out,
                "{:<10} {:<16} {:<16} {:>6} {:>11} {:>11} {:>11}",
                j.job.to_string(),
                j.user,
                j.queue,
                j.tasks,
                shown(&j.before, w.now),
                shown(&j.after, w.now),
                opt_span(j.change, true)
            );
        }
    }
    out
}

/// Reads the cell in `spool` and answers `change` as of `now`; `run_times`: the forecast's
/// source of run times (the cell's configured one when `None`).
pub fn run(
    spool: &crate::spool::Spool,
    change: &Change,
    run_times_choice: Option<RunTimeSource>,
    now: i64,
    jobs: usize,
) -> Result<WhatIf, WhatIfError> {
    let mut cell = crate::sched::forecast::cell::load(spool)?;
    let times = run_times(run_times_choice, &mut cell, &spool.accounting_path())?;
    what_if(&cell, change, now, times.as_ref(), jobs)
}

#[cfg(test)]
mod tests;
