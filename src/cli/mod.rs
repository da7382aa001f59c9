//! The q-commands. Each module has a `run(args) -> ExitCode`-like entry that the thin binary in
//! `src/bin/` calls; everything they share (finding the spool, the caller, printing) is here.

use crate::config::{ClusterConfig, ConfigError};
use crate::identity::{Caller, IdentityError, short_hostname};
use crate::model::Requester;
use crate::spool::{Spool, SpoolError};
use std::io::Write;
use std::path::PathBuf;

pub mod demo;
pub mod qacct;
pub mod qalter;
pub mod qdel;
pub mod qhold;
pub mod qhost;
pub mod qrls;
pub mod qstat;
pub mod qsub;
pub mod sched_d;

/// Why a client could not even start.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "error: SGE_ROOT is not set: point it at the directory holding the cell, or pass --spool DIR"
    )]
    NoRoot,
    #[error("error: SGE_ROOT directory \"{0}\" doesn't exist")]
    RootMissing(PathBuf),
    #[error("error: cell directory \"{0}\" doesn't exist")]
    CellMissing(PathBuf),
    #[error("error: {0}")]
    Spool(#[from] SpoolError),
    #[error("error: {0}")]
    Config(#[from] ConfigError),
    #[error("error: {0}")]
    Identity(#[from] IdentityError),
}

/// What every client needs: the spool, its configuration, the caller and this host.
#[derive(Debug, Clone)]
pub struct ClientEnv {
    pub spool: Spool,
    pub config: ClusterConfig,
    pub caller: Caller,
    pub host: String,
}

/// Takes gridspool's own `--spool DIR` off the front of the arguments, if present.
pub fn take_spool_arg(args: &mut Vec<String>) -> Option<PathBuf> {
    if args.first().map(String::as_str) == Some("--spool") && args.len() >= 2 {
        let dir = args.remove(1);
        args.remove(0);
        return Some(PathBuf::from(dir));
    }
    None
}

/// The cell directory: `--spool DIR`, else `$SGE_ROOT/$SGE_CELL` (`SGE_CELL` defaults to
/// `default`), with SGE's messages when either is missing.
pub fn locate_spool(explicit: Option<PathBuf>) -> Result<PathBuf, ClientError> {
    if let Some(dir) = explicit {
        return Ok(dir);
    }
    let root = std::env::var_os("SGE_ROOT")
        .filter(|r| !r.is_empty())
        .ok_or(ClientError::NoRoot)?;
    let root = PathBuf::from(root);
    if !root.is_dir() {
        return Err(ClientError::RootMissing(root));
    }
    let cell = std::env::var("SGE_CELL")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "default".into());
    let dir = root.join(cell);
    if !dir.is_dir() {
        return Err(ClientError::CellMissing(dir));
    }
    Ok(dir)
}

impl ClientEnv {
    pub fn load(explicit_spool: Option<PathBuf>) -> Result<Self, ClientError> {
        let dir = locate_spool(explicit_spool)?;
        crate::privilege::confine_to_spool(&dir);
        let spool = Spool::open(dir)?;
        let config = spool.load_config()?;
        let caller = Caller::from_kernel()?;
        Ok(ClientEnv {
            spool,
            config,
            caller,
            host: short_hostname(),
        })
    }

    /// The caller as a requester, with the privileges the configuration grants.
    pub fn requester(&self) -> Requester {
        Requester {
            uid: self.caller.uid,
            user: self.caller.user.clone(),
            host: self.host.clone(),
            manager: self.config.is_manager(&self.caller.user, self.caller.uid),
            operator: self.config.is_operator(&self.caller.user, self.caller.uid),
        }
    }
}

/// Collected output of a command, written at the end; a closed pipe is not an error.
#[derive(Debug, Default)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

impl Output {
    pub fn out(&mut self, line: impl AsRef<str>) {
        self.stdout.push_str(line.as_ref());
        self.stdout.push('\n');
    }

    pub fn err(&mut self, line: impl AsRef<str>) {
        self.stderr.push_str(line.as_ref());
        self.stderr.push('\n');
    }

    /// Writes both streams and returns the exit code.
    pub fn finish(self) -> std::process::ExitCode {
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(self.stdout.as_bytes())
            .and_then(|()| out.flush());
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(self.stderr.as_bytes());
        std::process::ExitCode::from(self.code)
    }
}

/// `ClientEnv::load` or an `Output` carrying the failure (exit 1, message on stderr).
pub fn load_env(explicit_spool: Option<PathBuf>) -> Result<ClientEnv, Output> {
    ClientEnv::load(explicit_spool).map_err(|e| {
        let mut o = Output {
            code: 1,
            ..Output::default()
        };
        o.err(e.to_string());
        o
    })
}
