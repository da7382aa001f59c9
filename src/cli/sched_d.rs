//! `sched_d`: the daemon's command line. `--init` creates a spool with the default
//! configuration; running the daemon itself lives in `crate::sched`.

use super::{ClientError, locate_spool};
use crate::config::ClusterConfig;
use crate::identity::short_hostname;
use crate::spool::{Spool, durable};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

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
    let dir = locate_spool(args.spool)?;
    anyhow::bail!(
        "running the daemon on {} is not implemented yet",
        dir.display()
    )
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
        ClusterConfig::load(&spool.config_path())?;
        return Ok(false);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let text = ClusterConfig::default_text(&short_hostname(), cpus);
    ClusterConfig::parse(&text).map_err(|e| anyhow::anyhow!("default configuration: {e}"))?;
    durable::write_new(spool.root(), "config.yaml", text.as_bytes(), 0o644)?;
    Ok(true)
}
