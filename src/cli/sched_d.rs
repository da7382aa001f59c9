//! `sched_d`: the daemon's command line. `--init` creates a spool with the default
//! configuration; otherwise the daemon runs (in the foreground unless `--daemon`); the
//! daemon itself lives in `crate::sched`.

use super::{ClientError, locate_spool};
use crate::config::ClusterConfig;
use crate::identity::short_hostname;
use crate::sched::daemon::{Daemon, DaemonOptions};
use crate::spool::{Spool, durable};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// gridspool's scheduler daemon.
#[derive(Debug, Parser)]
#[command(name = "sched_d", version, about)]
pub struct Args {
    /// The cell directory (default: $SGE_ROOT/$SGE_CELL).
    #[arg(long)]
    pub spool: Option<PathBuf>,
    /// Create the spool with the default configuration (the local host as the one execution
    /// host with as many slots as CPUs, a queue all.q), then exit. Existing files are kept.
    #[arg(long)]
    pub init: bool,
    /// Run in the foreground, logging to stderr and to daemon/sched_d.log (the default, as
    /// services under systemd expect).
    #[arg(long, conflicts_with = "daemon")]
    pub foreground: bool,
    /// Detach: start in a new session with no terminal, log to daemon/sched_d.log only, and
    /// return once the daemon holds the spool lock.
    #[arg(long)]
    pub daemon: bool,
    /// Poll the spool every MS milliseconds instead of using inotify (spools on NFS, where
    /// inotify does not see other hosts' writes).
    #[arg(long, value_name = "MS")]
    pub poll: Option<u64>,
    /// Re-list jobs/ and requests/ this often even without events (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub rescan: u64,
    /// Keep a finished job's files this long so `qsub -sync` can read its exit and `qstat -s z`
    /// list it (seconds); the other commands treat it as gone at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub retention: u64,
    /// Periodic pass interval in seconds (default: the scheduler's schedule_interval).
    #[arg(long, value_name = "SECONDS")]
    pub interval: Option<u64>,
    /// Write a started task's `r` into its job's state file at most this late (milliseconds;
    /// the job's next write takes it along sooner). Tests set it high to see a state file
    /// that still says `t`.
    #[arg(long, value_name = "MS", default_value_t = 1000, hide = true)]
    pub running_state_delay: u64,
    /// Log level: error, warn, info, debug, trace.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Internal: this process is the detached child of `--daemon`.
    #[arg(long, hide = true)]
    pub detached: bool,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sched_d: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: Args) -> Result<ExitCode, anyhow::Error> {
    if args.init {
        let dir = match args.spool {
            Some(d) => d,
            None => init_target()?,
        };
        let created = init(&dir)?;
        println!(
            "{} spool {}",
            if created { "created" } else { "kept existing" },
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dir = locate_spool(args.spool.clone())?;
    if args.daemon {
        return detach(&dir);
    }
    if args.detached {
        // A new session without a controlling terminal (we are not a group leader: the
        // parent spawned us in its own group).
        nix::unistd::setsid().map_err(|e| anyhow::anyhow!("setsid: {e}"))?;
    }
    let spool = Spool::open(&dir)?;
    let lock = crate::sched::daemon::SpoolLock::acquire(&spool)?;
    init_logging(&spool, !args.detached, &args.log_level)?;
    let opts = DaemonOptions {
        poll: args.poll.map(Duration::from_millis),
        rescan: Duration::from_secs(args.rescan.max(1)),
        retention: Duration::from_secs(args.retention),
        periodic: args.interval.map(|s| Duration::from_secs(s.max(1))),
        running_state_delay: Duration::from_millis(args.running_state_delay),
    };
    let config = crate::config::ClusterConfig::load(&spool.config_path())?;
    // Share-tree usage from the whole accounting history, then charged as tasks end.
    let decay = crate::acct::decay_config(&config);
    let (usage, report) = crate::acct::load_usage(&spool.accounting_path(), &decay)?;
    if !report.invalid_lines.is_empty() {
        tracing::warn!(
            lines = ?report.invalid_lines,
            "accounting file lines that are not records were skipped"
        );
    }
    tracing::info!(
        records = report.records,
        "share-tree usage loaded from the accounting file"
    );
    let usage: crate::sched::SharedUsage = std::sync::Arc::new(std::sync::Mutex::new(usage));
    let runner_config = config.clone();
    let mut daemon = Daemon::new(
        spool.clone(),
        opts,
        move |spool, events| {
            let runner = crate::sched::LaunchRunner::new(spool, runner_config, events)?;
            Ok(Box::new(runner) as Box<dyn crate::sched::TaskRunner>)
        },
        Box::new(crate::sched::Accounting::new(
            spool.accounting_path(),
            config.clone(),
            usage.clone(),
        )),
    )?;
    daemon.set_policy(Box::new(crate::sched::SgePriority::new(&config, usage)));
    // Load and usage reports for qhost and qstat, over the launcher's ssh connections.
    let probe = crate::launch::HostProbe::start(
        spool.root().to_path_buf(),
        spool.config_path(),
        spool.daemon_dir(),
        crate::launch::LauncherOptions::defaults(&spool)?.control_dir,
    )?;
    let result = daemon.run();
    drop(probe);
    drop(lock);
    if let Err(e) = &result {
        tracing::error!("sched_d stopped: {e}");
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

/// Logs to `daemon/sched_d.log` (appended) and, in the foreground, to stderr.
fn init_logging(spool: &Spool, stderr: bool, level: &str) -> Result<(), anyhow::Error> {
    use tracing_subscriber::prelude::*;
    let level: tracing_subscriber::filter::LevelFilter = level
        .parse()
        .map_err(|e| anyhow::anyhow!("--log-level {level}: {e}"))?;
    let path = spool.daemon_dir().join("sched_d.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("open {}: {e}", path.display()))?;
    let file_layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file));
    let stderr_layer =
        stderr.then(|| tracing_subscriber::fmt::layer().with_writer(std::io::stderr));
    tracing_subscriber::registry()
        .with(level)
        .with(file_layer)
        .with(stderr_layer)
        .try_init()
        .map_err(|e| anyhow::anyhow!("logging: {e}"))
}

/// `--daemon`: starts this program again, detached, and returns once it holds the lock
/// (its pid is in the pid file) or says why it could not.
fn detach(dir: &std::path::Path) -> Result<ExitCode, anyhow::Error> {
    let exe = std::env::current_exe()?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.retain(|a| a != "--daemon");
    if !args.iter().any(|a| a == "--spool") {
        args.push("--spool".into());
        args.push(dir.as_os_str().to_owned());
    }
    args.push("--detached".into());
    let mut child = std::process::Command::new(exe)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let pid_file = dir.join("daemon").join("sched_d.pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait()? {
            let mut msg = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut msg);
            }
            anyhow::bail!("daemon exited at start ({status}): {}", msg.trim());
        }
        let running = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if running == Some(child.id()) {
            println!("sched_d running as pid {}", child.id());
            return Ok(ExitCode::SUCCESS);
        }
        if std::time::Instant::now() > deadline {
            anyhow::bail!("daemon did not start within 10 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `$SGE_ROOT/$SGE_CELL` for `--init`, which may create the cell directory.
fn init_target() -> Result<PathBuf, ClientError> {
    let root = std::env::var_os("SGE_ROOT")
        .filter(|r| !r.is_empty())
        .ok_or(ClientError::NoRoot)?;
    let cell = std::env::var("SGE_CELL")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "default".into());
    Ok(PathBuf::from(root).join(cell))
}

/// Creates the spool tree and, when absent, the default configuration. Returns whether a new
/// configuration was written.
pub fn init(dir: &std::path::Path) -> Result<bool, anyhow::Error> {
    let spool = Spool::create(dir)?;
    if spool.config_path().exists() {
        let (text, config) = ClusterConfig::load_text(&spool.config_path())?;
        // Only a time saving for clients: a cell this user may not write keeps working.
        if let Err(e) = spool.write_config_snapshot(&text, &config) {
            eprintln!("warning: configuration snapshot not written: {e}");
        }
        return Ok(false);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let text = ClusterConfig::default_text(&short_hostname(), cpus);
    let config =
        ClusterConfig::parse(&text).map_err(|e| anyhow::anyhow!("default configuration: {e}"))?;
    durable::write_new(spool.root(), "config.yaml", text.as_bytes(), 0o644)?;
    spool.write_config_snapshot(&text, &config)?;
    Ok(true)
}
