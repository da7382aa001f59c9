//! `gridspool-sim`: replays a workload (a Standard Workload Format trace) under one or more
//! cell configurations and puts what each policy did to it side by side (`crate::sim`).

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Replays a workload under each configuration, on a virtual clock, through gridspool's own
/// scheduling code, and reports waits, slowdowns, shares and utilisation.
#[derive(Debug, Parser)]
#[command(name = "gridspool-sim", version, about)]
pub struct Args {
    /// The workload: a trace in the Standard Workload Format (`.swf`), a cell's accounting
    /// file (`common/accounting`: what ran there), or `qsub` lines (`SUBMIT RUNTIME USER [cpu=CPU] qsub
    /// OPTIONS…`), told apart by their content.
    #[arg(long, value_name = "FILE")]
    pub workload: PathBuf,
    /// Cell configurations (`config.yaml`) to compare; each one's name in the report is its
    /// file name (its path, `/` written `_`, when two have the same file name).
    #[arg(long, value_name = "CONFIG", num_args = 1.., required = true)]
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
    /// Also write the reports as JSON to FILE (`-` for standard output instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also measure start-time estimates (`qstat -start`): at every submission the forecast
    /// is made on a copy of the replay, with run times by the limits (the requested time)
    /// and with run times learned from the runs ended so far, and each job's estimate is
    /// compared with its start in the replay; prints the median and 90th-percentile errors
    /// of both after the report. Costs a forecast per submission.
    #[arg(long)]
    pub estimates: bool,
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
    let jobs = crate::sim::workload::load(&args.workload)
        .map_err(|e| format!("{}: {e}", args.workload.display()))?;
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
                        args.workload.display()
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
