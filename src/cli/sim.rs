//! `gridspool-sim`: replays a workload (a Standard Workload Format trace) under one or more
//! cell configurations and puts what each policy did to it side by side (`crate::sim`); with
//! `--what-if`, plays the live cell forward as it stands and changed, and compares the
//! estimated starts of its pending work (`crate::sim::what_if`).

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Replays a workload under each configuration, on a virtual clock, through gridspool's own
/// scheduling code, and reports waits, slowdowns, shares and utilisation.
#[derive(Debug, Parser)]
#[command(name = "gridspool-sim", version, about)]
#[command(group(clap::ArgGroup::new("new_hosts").args(["add_hosts", "add_host"])))]
pub struct Args {
    /// The workload: a trace in the Standard Workload Format (`.swf`), a cell's accounting
    /// file (`common/accounting`: what ran there), or `qsub` lines (`SUBMIT RUNTIME USER [cpu=CPU] qsub
    /// OPTIONS…`), told apart by their content.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "what_if",
        conflicts_with = "what_if"
    )]
    pub workload: Option<PathBuf>,
    /// Cell configurations (`config.yaml`) to compare; each one's name in the report is its
    /// file name (its path, `/` written `_`, when two have the same file name).
    #[arg(long, value_name = "CONFIG", num_args = 1.., required_unless_present = "what_if", conflicts_with = "what_if")]
    pub compare: Vec<PathBuf>,
    /// Draw charts into DIR: `waits.svg` (the distribution of waits per configuration) and
    /// `shares-<configuration>.svg` (each entity's share over time against its promise: the
    /// six with the most slot-seconds one by one, the others as one line, their mean, as a
    /// line under the caption says; the y axis scaled to the data).
    #[arg(long, value_name = "DIR")]
    pub charts: Option<PathBuf>,
    /// Write every job's run under each configuration to DIR/<configuration>.csv (job,
    /// task, user, group, queue, project, cluster, slots, submit, start, end, wait, host, preempted;
    /// times in seconds from the workload's start), and the preemptions to
    /// DIR/<configuration>.preemptions.csv.
    #[arg(long, value_name = "DIR")]
    pub runs: Option<PathBuf>,
    /// Also write the reports (the what-if's answer) as JSON to FILE (`-` for standard
    /// output instead of the tables).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also measure start-time estimates (`qstat -start`): at every submission the forecast
    /// is made on a copy of the replay, with run times by the limits (the requested time)
    /// and with run times learned from the runs ended so far, and each job's estimate is
    /// compared with its start in the replay; prints the median and 90th-percentile errors
    /// of both after the report. Costs a forecast per submission.
    #[arg(long, conflicts_with = "what_if")]
    pub estimates: bool,
    /// Instead of a workload, the live cell: its jobs, hosts, usage and configuration are
    /// read (never written, and without the daemon's lock: sched_d keeps running), played
    /// forward from now through the scheduling pass as it stands and with the changes given
    /// (--set, --config, --add-hosts/--add-host, --drain), and the estimated start of every
    /// pending task is compared: per user and per queue (the queue it is estimated to start
    /// in, else its hard queue request, else -), the pending tasks, the median and mean
    /// estimated wait (start - now) before and after, the mean move of the tasks with a time
    /// in both, and how many start earlier, later, got a time (were unknown or never) or lost
    /// theirs. Needs read access to the whole cell (root, or the spool's group).
    #[arg(long)]
    pub what_if: bool,
    /// The cell of --what-if (default: $SGE_ROOT/$SGE_CELL, as the clients find it).
    #[arg(long, value_name = "DIR", requires = "what_if")]
    pub cell: Option<PathBuf>,
    /// Change one key of the cell's configuration, by its path in config.yaml, the value in
    /// YAML: scheduler.weight_ticket=0.1, queues[all.q].slots=4 (a list's entry by its name
    /// or its index: hosts[0].slots=8), hostgroups.@big=[n1,n2]. Repeatable, applied in
    /// order; the result is checked as sched_d checks config.yaml.
    #[arg(long, value_name = "KEY=VALUE", requires = "what_if")]
    pub set: Vec<String>,
    /// Compare the cell under this whole configuration instead of its own (--set applies
    /// on top of it).
    #[arg(long, value_name = "FILE", requires = "what_if")]
    pub config: Option<PathBuf>,
    /// Add N hosts like --like's: its slots, complex values and other settings, in the
    /// queues and host groups that name it; named HOST-whatif-1, HOST-whatif-2… (skipping
    /// names the cell has).
    #[arg(
        long,
        value_name = "N",
        requires = "like",
        conflicts_with = "add_host",
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub add_hosts: Option<u32>,
    /// Add hosts of these names like --like's.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',', requires = "like")]
    pub add_host: Vec<String>,
    /// The host that --add-hosts and --add-host copy.
    #[arg(
        long,
        value_name = "HOST",
        requires = "what_if",
        requires = "new_hosts"
    )]
    pub like: Option<String>,
    /// Drain a host: its queue instances take no new work, as after qmod -d; what runs there
    /// ends as forecast. Repeatable.
    #[arg(long, value_name = "HOST", requires = "what_if")]
    pub drain: Vec<String>,
    /// Where the plays' run times come from (default: the cell's
    /// scheduler.start_estimates.run_times): limits (h_rt, s_rt, the queue's,
    /// default_duration) or learned (past runs in the cell's accounting file, capped by the
    /// limits).
    #[arg(long, value_name = "SOURCE", value_parser = ["limits", "learned"], requires = "what_if")]
    pub run_times: Option<String>,
    /// Also list the N jobs whose estimated starts move most (a time gained or lost first).
    #[arg(long, value_name = "N", requires = "what_if")]
    pub jobs: Option<usize>,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridspool-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if args.what_if {
        return what_if(args);
    }
    let workload = args
        .workload
        .as_ref()
        .ok_or("--workload FILE is required without --what-if")?;
    let jobs =
        crate::sim::workload::load(workload).map_err(|e| format!("{}: {e}", workload.display()))?;
    let mut reports = Vec::new();
    let mut replays = Vec::new();
    let mut accuracies = Vec::new();
    for path in &args.compare {
        let yaml = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let config = crate::config::ClusterConfig::parse(&yaml)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // A `qsub` line's options must make a job under this configuration too.
        for j in &jobs {
            if let Some(options) = &j.qsub {
                crate::sim::workload::qsub_spec(options, &config).map_err(|e| {
                    format!(
                        "{}: job {} of {}: {e}",
                        path.display(),
                        j.number,
                        workload.display()
                    )
                })?;
            }
        }
        // A progress bar on a terminal (indicatif draws nothing elsewhere).
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:40}] {pos}/{len} jobs ended, {per_sec}, {eta} left",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(path.display().to_string());
        let (replay, accuracy) = if args.estimates {
            let (replay, accuracy) = crate::sim::accuracy::measure(&config, &jobs);
            (replay, Some(accuracy))
        } else {
            let replay = crate::sim::replay::replay_with_progress(&config, &jobs, &mut |n| {
                bar.set_position(n as u64);
            });
            (replay, None)
        };
        bar.finish_and_clear();
        // Its file name, unless another configuration has the same: then its path (the
        // names also name the files of --runs and --charts).
        let file_name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = match file_name(path) {
            Some(n)
                if args
                    .compare
                    .iter()
                    .filter(|p| file_name(p).as_ref() == Some(&n))
                    .count()
                    == 1 =>
            {
                n
            }
            _ => path.display().to_string().replace('/', "_"),
        };
        reports.push(crate::sim::report::report(&name, &config, &replay));
        if let Some(a) = accuracy {
            accuracies.push(crate::sim::accuracy::table(&name, &a));
        }
        replays.push((name, replay));
    }
    if let Some(dir) = &args.runs {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, replay) in &replays {
            let base = name.strip_suffix(".yaml").unwrap_or(name);
            let write = |file: String, text: String| {
                let path = dir.join(file);
                std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
            };
            write(format!("{base}.csv"), crate::sim::report::runs_csv(replay))?;
            write(
                format!("{base}.preemptions.csv"),
                crate::sim::report::preemptions_csv(replay),
            )?;
        }
    }
    if let Some(dir) = &args.charts {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let named: Vec<(String, &crate::sim::replay::Replay)> =
            replays.iter().map(|(n, r)| (n.clone(), r)).collect();
        crate::sim::charts::waits(&dir.join("waits.svg"), &named)?;
        for report in &reports {
            let base = report.name.strip_suffix(".yaml").unwrap_or(&report.name);
            crate::sim::charts::shares(
                &dir.join(format!("shares-{base}.svg")),
                &report.name,
                &report.shares,
            )?;
        }
    }
    let json = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
    match &args.json {
        Some(p) if p.as_os_str() == "-" => println!("{json}"),
        Some(p) => {
            std::fs::write(p, format!("{json}\n")).map_err(|e| format!("{}: {e}", p.display()))?;
            print!("{}", crate::sim::report::text(&reports));
        }
        None => print!("{}", crate::sim::report::text(&reports)),
    }
    for a in &accuracies {
        print!("\n{a}");
    }
    Ok(())
}

/// `--what-if`: the live cell as it stands against the cell changed.
fn what_if(args: &Args) -> Result<(), String> {
    use crate::sim::what_if::{AddHosts, Change, NewHostNames};
    // The clients' words name their own `--spool DIR`, which is `--cell DIR` here.
    let dir = crate::cli::locate_spool(args.cell.clone())
        .map_err(|e| e.to_string().replace("--spool DIR", "--cell DIR"))?;
    let spool = crate::spool::Spool::open(&dir).map_err(|e| e.to_string())?;
    let config = match &args.config {
        Some(path) => {
            let yaml =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let config = crate::config::ClusterConfig::parse(&yaml)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Some((path.display().to_string(), config))
        }
        None => None,
    };
    let names = match (args.add_hosts, args.add_host.is_empty()) {
        (Some(n), _) => Some(NewHostNames::Count(n)),
        (None, false) => Some(NewHostNames::Named(args.add_host.clone())),
        (None, true) => None,
    };
    let add_hosts = match (names, &args.like) {
        (Some(names), Some(like)) => Some(AddHosts {
            like: like.clone(),
            names,
        }),
        // clap requires --like with either (and either with --like).
        _ => None,
    };
    let change = Change {
        config,
        set: args.set.clone(),
        add_hosts,
        drain: args.drain.clone(),
    };
    let run_times = match args.run_times.as_deref() {
        Some("limits") => Some(crate::config::RunTimeSource::Limits),
        Some("learned") => Some(crate::config::RunTimeSource::Learned),
        _ => None,
    };
    let answer = crate::sim::what_if::run(
        &spool,
        &change,
        run_times,
        crate::time::now(),
        args.jobs.unwrap_or(0),
    )
    .map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())?;
    let text = crate::sim::what_if::text(&answer, &dir.display().to_string());
    let out = match &args.json {
        Some(p) if p.as_os_str() == "-" => format!("{json}\n"),
        Some(p) => {
            std::fs::write(p, format!("{json}\n")).map_err(|e| format!("{}: {e}", p.display()))?;
            text
        }
        None => text,
    };
    // A reader that stopped early (`| head`) is not an error.
    use std::io::Write;
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("standard output: {e}"))
        }
        _ => Ok(()),
    }
}
