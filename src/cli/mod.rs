//! The q-commands. Each module has a `run(args) -> ExitCode`-like entry that the thin binary in
//! `src/bin/` calls; everything they share (finding the spool, the caller, printing) is here.

use crate::config::{ClusterConfig, ConfigError};
use crate::identity::{Caller, IdentityError, short_hostname};
use crate::model::Requester;
use crate::spool::{Spool, SpoolError};
use std::io::Write;
use std::path::{Path, PathBuf};

pub mod demo;
mod drmaa_agent;
pub mod generated_docs;
pub mod multicall;
pub mod qacct;
pub mod qalter;
pub mod qconf;
mod qconf_acl;
mod qconf_calendar;
mod qconf_change;
mod qconf_conf;
mod qconf_hostgroup;
mod qconf_rqs;
pub mod qdel;
pub mod qhold;
pub mod qhost;
pub mod qmod;
pub mod qquota;
pub mod qrdel;
pub mod qrls;
pub mod qrsh;
pub mod qrstat;
pub mod qrsub;
pub mod qselect;
pub mod qstat;
pub mod qsub;
pub mod sched_d;
pub mod sge_import;
pub mod sim;

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

/// A command-line word that is not UTF-8.
///
/// SGE hands the bytes on: a job name or a `-v` value of such bytes breaks its qmaster's answer
/// (`Unable to run job: Error reading answer list from qmaster`), and a job id or user name of
/// such bytes names nothing. gridspool keeps names, paths and values in UTF-8 records (JSON), so
/// every client refuses such a word before it reads or writes the spool, with this message
/// and exit status 1 (`tests/compat/DIVERGENCES.md`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{prog}: {what} {word:?} is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text"
)]
pub struct NotUtf8Arg {
    pub prog: String,
    /// `argument 2` or `the value of -N`.
    pub what: String,
    pub word: std::ffi::OsString,
}

/// The arguments as text, or the first that is not UTF-8 (named with the option it is the value
/// of, when the word before it is an option).
pub fn text_args(
    prog: &str,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<Vec<String>, NotUtf8Arg> {
    let mut out: Vec<String> = Vec::new();
    for (i, arg) in args.into_iter().enumerate() {
        match arg.into_string() {
            Ok(text) => out.push(text),
            Err(word) => {
                let what = match out.last() {
                    Some(prev) if prev.starts_with('-') && prev.len() > 1 => {
                        format!("the value of {prev}")
                    }
                    _ => format!("argument {}", i + 1),
                };
                return Err(NotUtf8Arg {
                    prog: prog.to_string(),
                    what,
                    word,
                });
            }
        }
    }
    Ok(out)
}

/// What every binary's `main` does: the arguments after the program name as text
/// ([`text_args`]), handed to `run`; a word that is not UTF-8 ends the command with exit
/// status 1 before anything is read or written.
pub fn run_with_text_args(
    prog: &str,
    run: impl FnOnce(Vec<String>) -> std::process::ExitCode,
) -> std::process::ExitCode {
    match text_args(prog, std::env::args_os().skip(1)) {
        Ok(args) => run(args),
        Err(e) => {
            let mut o = Output {
                code: 1,
                ..Output::default()
            };
            o.err(e.to_string());
            o.finish()
        }
    }
}

/// `$SGE_CELL`, `default` when unset or empty. A cell name is a directory name: its bytes are
/// used as they are.
pub fn cell_name() -> std::ffi::OsString {
    std::env::var_os("SGE_CELL")
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "default".into())
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

/// Where the Debian package keeps its cells (`scripts/build-deb.sh`).
pub const PACKAGE_ROOT: &str = "/var/lib/gridspool";

/// The cell directory: `--spool DIR`, else `$SGE_ROOT/$SGE_CELL` (`SGE_CELL` defaults to
/// `default`), with SGE's messages when either is missing.
pub fn locate_spool(explicit: Option<PathBuf>) -> Result<PathBuf, ClientError> {
    if let Some(dir) = explicit {
        return Ok(dir);
    }
    let root = sge_root(
        std::env::var_os("SGE_ROOT"),
        Path::new(PACKAGE_ROOT),
        &cell_name(),
    )?;
    if !root.is_dir() {
        return Err(ClientError::RootMissing(root));
    }
    let dir = root.join(cell_name());
    if !dir.is_dir() {
        return Err(ClientError::CellMissing(dir));
    }
    Ok(dir)
}

/// `$SGE_ROOT`, else the package's root when it holds the cell: Debian's SGE finds its cell
/// without `SGE_ROOT` (its compiled-in `/var/lib/gridengine`), so its users never set it, and
/// their commands keep working once gridspool's package replaced SGE's.
fn sge_root(
    from_env: Option<std::ffi::OsString>,
    package_root: &Path,
    cell: &std::ffi::OsStr,
) -> Result<PathBuf, ClientError> {
    match from_env.filter(|r| !r.is_empty()) {
        Some(root) => Ok(PathBuf::from(root)),
        None if package_root.join(cell).is_dir() => Ok(package_root.to_path_buf()),
        None => Err(ClientError::NoRoot),
    }
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

    /// Exit code 1 with `line` on stderr and nothing else.
    pub fn failure(line: impl AsRef<str>) -> Output {
        let mut o = Output {
            code: 1,
            ..Default::default()
        };
        o.err(line);
        o
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

/// `main` of an SGE administration command (`qconf`, `qmod`): `-help` prints the help; an
/// empty command line prints it to stderr with `ERROR! no option argument` (exit 1), as SGE
/// 8.1.9 does; otherwise `run` over the cell.
pub fn admin_main(
    args: Vec<String>,
    doc: &crate::compat::docs::CommandDoc,
    run: impl FnOnce(&[String], &ClientEnv) -> Output,
) -> std::process::ExitCode {
    let mut rest = args.clone();
    take_spool_arg(&mut rest);
    if rest.is_empty() {
        let mut o = Output::default();
        o.stderr.push_str(&crate::compat::docs::help_text(doc));
        o.err("ERROR! no option argument");
        o.code = 1;
        return o.finish();
    }
    client_main(args, doc, run)
}

/// A client's `main`: the cell from `--spool` or the environment, `-help` anywhere prints
/// the command's help (exit 0), else `run` over the cell.
pub fn client_main(
    mut args: Vec<String>,
    doc: &crate::compat::docs::CommandDoc,
    run: impl FnOnce(&[String], &ClientEnv) -> Output,
) -> std::process::ExitCode {
    let spool = take_spool_arg(&mut args);
    if args.iter().any(|a| a == "-help") {
        let mut o = Output::default();
        o.stdout.push_str(&crate::compat::docs::help_text(doc));
        return o.finish();
    }
    match load_env(spool) {
        Ok(env) => run(&args, &env).finish(),
        Err(o) => o.finish(),
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// Issue 12: any bytes as arguments are text, or refused with the word named; never a
        /// panic (`std::env::args` panicked on them).
        #[test]
        fn arguments_of_any_bytes_are_text_or_named(
            args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..8), 0..6),
        ) {
            use std::os::unix::ffi::OsStringExt;
            let os: Vec<std::ffi::OsString> =
                args.iter().cloned().map(std::ffi::OsString::from_vec).collect();
            let all_text = args.iter().all(|a| std::str::from_utf8(a).is_ok());
            match super::text_args("qsub", os) {
                Ok(text) => prop_assert!(all_text && text.len() == args.len()),
                Err(e) => {
                    prop_assert!(!all_text);
                    prop_assert!(e.to_string().contains("is not valid UTF-8"));
                }
            }
        }
    }

    #[test]
    fn without_sge_root_a_client_takes_the_packages_cell_if_there_is_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cell = std::ffi::OsStr::new("default");
        let none = super::sge_root(None, dir.path(), cell);
        assert!(matches!(none, Err(super::ClientError::NoRoot)), "{none:?}");
        std::fs::create_dir(dir.path().join("default")).expect("cell");
        let found = super::sge_root(Some("".into()), dir.path(), cell).expect("package root");
        assert_eq!(found, dir.path());
        let set = super::sge_root(Some("/elsewhere".into()), dir.path(), cell).expect("set");
        assert_eq!(set, std::path::Path::new("/elsewhere"));
    }

    #[test]
    fn a_value_that_is_not_text_is_named_with_its_option() {
        use std::os::unix::ffi::OsStringExt;
        let args = [
            "-N".into(),
            std::ffi::OsString::from_vec(b"bad\xffname".to_vec()),
        ];
        let e = super::text_args("qsub", args).expect_err("not text");
        assert_eq!(
            e.to_string(),
            "qsub: the value of -N \"bad\\xFFname\" is not valid UTF-8: gridspool keeps names, paths and values as UTF-8 text"
        );
    }
}
