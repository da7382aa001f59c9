//! `qstat`: parses the command line, reads the spool once and prints what SGE 8.1.9 would.
//! The formats are in `compat::qstat`; this module only gathers the inputs.

use crate::acct::load::{self, HostReport};
use crate::compat::qstat::{self, HostLoad, QstatArgError, QstatArgs, View};
use crate::model::JobRecord;
use crate::time;
use std::collections::BTreeMap;
use std::path::Path;

/// Runs `qstat` with `args` (without the program name) and returns its exit code.
pub fn main(mut args: Vec<String>) -> std::process::ExitCode {
    run(&mut args).finish()
}

fn run(args: &mut Vec<String>) -> super::Output {
    let spool_dir = super::take_spool_arg(args);
    // gridspool's own: the state server of a DRMAA session (`libdrmaa.so`).
    if args.len() == 1 && args[0] == "--drmaa-agent" {
        return super::drmaa_agent::serve(spool_dir);
    }
    let parsed = match QstatArgs::parse(args) {
        Ok(p) => p,
        Err(QstatArgError::Usage(msg)) => {
            // SGE prints its usage to stderr before the complaint.
            let mut o = super::Output {
                code: 1,
                ..Default::default()
            };
            o.stderr.push_str(&qstat::help_text());
            o.err(msg);
            return o;
        }
        Err(e @ QstatArgError::UnknownQueueState { .. }) => {
            // As SGE: its error, then the answer it failed on, and no usage.
            let mut o = super::Output {
                code: 1,
                ..Default::default()
            };
            o.err(format!("error: {e}"));
            o.err(e.to_string());
            return o;
        }
    };
    if parsed.help {
        return super::Output {
            stdout: qstat::help_text(),
            ..Default::default()
        };
    }
    let env = match super::load_env(spool_dir) {
        Ok(env) => env,
        Err(o) => return o,
    };
    if qstat::plain::serves(&parsed) {
        return plain_table(&parsed, &env);
    }
    // `-j` and `-r` show what a listing leaves out: only they read whole records.
    let whole = parsed.job_detail.is_some() || parsed.requests;
    let scanned = if whole {
        env.spool.scan_jobs()
    } else {
        env.spool.scan_job_listing()
    };
    let mut scan = match scanned {
        Ok(s) => s,
        Err(e) => {
            return super::Output::failure(format!("error: {e}"));
        }
    };
    if parsed.ext || parsed.job_detail.is_some() {
        attach_usage(&mut scan.jobs, &env.spool.daemon_dir());
    }
    // SGE answers `-l` with an unknown resource with nothing at all and exit status 1.
    if parsed.resource_requests.iter().any(|(name, _)| {
        !matches!(
            name.as_str(),
            "qname" | "q" | "hostname" | "h" | "slots" | "s"
        ) && !crate::compat::host_attributes::known_attribute(&env.config, name)
    }) {
        return super::Output {
            code: 1,
            ..Default::default()
        };
    }
    // Only the queue listings (`-f`, `-g c`, `-qs`, `-F`, `-l`) look at the hosts' loads.
    let queue_listing = parsed.full
        || parsed.group.cluster_summary
        || parsed.queue_states.is_some()
        || parsed.resources.is_some()
        || !parsed.resource_requests.is_empty();
    let load = if queue_listing {
        HostLoad::local(&env.host)
    } else {
        HostLoad::not_read(&env.host)
    };
    let host_loads = if queue_listing {
        match super::qhost::host_loads(&env, &super::qhost::proc_dir(), time::now()) {
            Ok(l) => l,
            Err(message) => {
                return super::Output::failure(message);
            }
        }
    } else {
        Default::default()
    };
    let storage_blocked = env.spool.storage_blocked();
    let instance_states = if queue_listing {
        env.spool.queue_instance_states()
    } else {
        Default::default()
    };
    let forecast = if parsed.start {
        match read_forecast(&env.spool, parsed.job_detail.as_deref()) {
            Ok(f) => f,
            Err(e) => return super::Output::failure(format!("error: {e}")),
        }
    } else {
        None
    };
    let view = View {
        estimates: parsed.start.then_some(qstat::start::StartView {
            forecast: forecast.as_ref(),
        }),
        instance_states: &instance_states,
        storage_blocked: storage_blocked.as_deref(),
        host_loads: &host_loads,
        jobs: &scan.jobs,
        ended: &scan.ended,
        config: &env.config,
        caller: &env.caller.user,
        now: time::now(),
        load: &load,
    };
    let r = qstat::render(&parsed, &view);
    let mut o = super::Output {
        stdout: r.stdout,
        stderr: r.stderr,
        code: r.code,
    };
    // A job that cannot be read is not silently missing from the list: say so, once (a
    // spool with wrong permissions would otherwise print one line per job).
    if let Some(first) = scan.problems.first() {
        o.err(format!(
            "warning: {} spool file(s) could not be read, first {}: {}",
            scan.problems.len(),
            first.path.display(),
            first.reason
        ));
    }
    // The process ends right after printing: freeing 100,000 records one by one would only
    // delay the exit.
    std::mem::forget(scan);
    o
}

/// The start-time forecast for `-start`: for `-j` with job numbers only their lines of it.
fn read_forecast(
    spool: &crate::spool::Spool,
    detail: Option<&[String]>,
) -> Result<Option<crate::model::StartForecast>, crate::spool::SpoolError> {
    let numbers: Option<Vec<crate::model::JobId>> = detail
        .filter(|w| !w.is_empty())
        .and_then(|words| words.iter().map(|w| w.parse().ok()).collect());
    match numbers {
        Some(ids) => spool.read_estimates_of(&ids),
        None => spool.read_estimates(),
    }
}

/// The plain job table: the jobs read in place from the listing index
/// (`Spool::with_job_lines`), no record built per job.
fn plain_table(parsed: &QstatArgs, env: &super::ClientEnv) -> super::Output {
    let load = HostLoad::not_read(&env.host);
    let host_loads = BTreeMap::new();
    let instance_states = Default::default();
    let now = time::now();
    let listed = env.spool.with_job_lines(|lines| {
        let view = View {
            instance_states: &instance_states,
            estimates: None,
            storage_blocked: None,
            host_loads: &host_loads,
            jobs: &[],
            ended: &[],
            config: &env.config,
            caller: &env.caller.user,
            now,
            load: &load,
        };
        let r = qstat::plain::render(parsed, &view, lines);
        (r, lines.problems.len(), lines.problems.first().cloned())
    });
    let (r, problems, first) = match listed {
        Ok(x) => x,
        Err(e) => {
            return super::Output::failure(format!("error: {e}"));
        }
    };
    let mut o = super::Output {
        stdout: r.stdout,
        stderr: r.stderr,
        code: r.code,
    };
    if let Some(first) = first {
        o.err(format!(
            "warning: {problems} spool file(s) could not be read, first {}: {}",
            first.path.display(),
            first.reason
        ));
    }
    o
}

/// The online usage of the running tasks (`-ext` columns, the `usage` line of `-j`), from the
/// host reports that `sched_d` publishes every `load_report_time`: a task gets the figures
/// its host last reported for it, if they were taken since it (re)started. Until then it has
/// none, which SGE shows as `NA` too. A parallel task shows its master host's figures.
fn attach_usage(jobs: &mut [JobRecord], daemon_dir: &Path) {
    let mut reports: BTreeMap<String, Option<HostReport>> = BTreeMap::new();
    for job in jobs {
        for task in &mut job.tasks.running {
            let report = reports
                .entry(task.host.clone())
                .or_insert_with(|| load::read_report(daemon_dir, &task.host));
            let Some(report) = report else { continue };
            // The probe publishes the reports sorted by job and task.
            if let Ok(i) = report
                .tasks
                .binary_search_by_key(&(job.id, task.task), |u| (u.job, u.task))
                && report.tasks[i].time >= task.start_time
            {
                task.usage = Some(report.tasks[i].usage);
            }
        }
    }
}
