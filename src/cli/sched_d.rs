//! `sched_d`: the daemon's command line. `--init` creates a spool with the default
//! configuration; otherwise the daemon runs (in the foreground unless `--daemon`); the
//! daemon itself lives in `crate::sched`.

use super::{ClientError, locate_spool};
use crate::config::ClusterConfig;
use crate::file::durable;
use crate::identity::short_hostname;
use crate::sched::daemon::{Daemon, DaemonOptions};
use crate::spool::Spool;
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
    /// host with as many slots as CPUs, a queue all.q) and common/settings.sh and
    /// settings.csh for users to source, then exit. Existing files are kept.
    #[arg(long)]
    pub init: bool,
    /// With --init: make the cell the SGE 8.1.9 cell that sge-export.sh saved in DIR (its
    /// configuration, share-tree usage and accounting file), printing every value it could not
    /// carry. Refused while sched_d runs on the cell, or while it holds jobs unless --force.
    #[arg(long, value_name = "DIR", requires = "init")]
    pub from_sge: Option<PathBuf>,
    /// With --from-sge: import into a cell that holds jobs or advance reservations (they are
    /// kept; the configuration changes under them).
    #[arg(long, requires = "from_sge")]
    pub force: bool,
    /// With --from-sge: print what the import would do and not carry, changing nothing (it
    /// imports into a copy of the cell's configuration).
    #[arg(long, requires = "from_sge")]
    pub dry_run: bool,
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
    /// Run as the shadow of the cell's master, as SGE's sge_shadowd, on another host sharing
    /// the cell: watch the master's heartbeat (daemon/heartbeat) and, when it has not changed
    /// for --takeover-after, take the cell over: name this daemon in daemon/act_master, take
    /// the lock, recover from the spool as a restart does and carry on as the master.
    #[arg(long)]
    pub shadow: bool,
    /// With --shadow: take over when the master's heartbeat has not changed for this long
    /// (seconds, fractions allowed).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub takeover_after: f64,
    /// How often the master rewrites daemon/heartbeat for a shadow to watch (seconds,
    /// fractions allowed).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub heartbeat_interval: f64,
    /// Serve Prometheus metrics at http://ADDR/metrics and a read-only status page at
    /// http://ADDR/ (off unless given; without ADDR on 127.0.0.1:9464, the loopback only).
    /// What they show: `src/sched/metrics.rs`, `src/sched/status_page.rs`. Both answer GET
    /// and HEAD only (405 otherwise) and close the connection after each answer; at most 64
    /// connections (a quarter of the descriptor limit when that is fewer) are held while they
    /// send their request, each for 10 seconds at most, a new one closing the oldest; out of
    /// descriptors, the server closes what it holds or waits, and keeps serving.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:9464")]
    pub metrics: Option<String>,
    /// Log level: error, warn, info, debug, trace.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Internal: this process is the detached child of `--daemon`.
    #[arg(long, hide = true)]
    pub detached: bool,
    /// Internal: make the start-time forecast of the cell once (daemon/estimates) and exit;
    /// the running sched_d starts this after the events that move the estimates.
    #[arg(long, hide = true)]
    pub forecast: bool,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sched_d: {e}");
            let taken = matches!(
                e.downcast_ref::<crate::sched::daemon::DaemonError>(),
                Some(crate::sched::daemon::DaemonError::AlreadyRunning { .. })
            );
            ExitCode::from(if taken {
                crate::sched::mastership::EXIT_CELL_TAKEN
            } else {
                1
            })
        }
    }
}

fn run(args: Args) -> Result<ExitCode, anyhow::Error> {
    // One malloc arena for all threads, unless the environment sets it (issue 27: the
    // launcher's and the index's threads each grew an arena of their own, whose free top
    // `malloc_trim` does not give back; after 10,000 jobs ran, 43 MB stayed resident instead
    // of 15, against 11 empty).
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        crate::launch::limit_malloc_arenas(1);
    }
    if args.init {
        let dir = match args.spool {
            Some(d) => d,
            None => init_target()?,
        };
        if let Some(export) = args.from_sge {
            let opts = super::sge_import::ImportOptions {
                export,
                force: args.force,
                dry_run: args.dry_run,
            };
            let report = super::sge_import::import(&dir, &opts)?;
            print!("{}", report.text());
            return Ok(ExitCode::SUCCESS);
        }
        let created = init(&dir)?;
        println!(
            "{} spool {}",
            if created { "created" } else { "kept existing" },
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dir = locate_spool(args.spool.clone())?;
    let seconds = |flag: &str, v: f64| {
        Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| anyhow::anyhow!("--{flag} {v}: not a positive number of seconds"))
    };
    if args.forecast {
        return forecast(&dir);
    }
    let takeover_after = seconds("takeover-after", args.takeover_after)?;
    let heartbeat_interval = seconds("heartbeat-interval", args.heartbeat_interval)?;
    if args.daemon {
        return detach(&dir, args.shadow);
    }
    if args.detached {
        // A new session without a controlling terminal (we are not a group leader: the
        // parent spawned us in its own group).
        nix::unistd::setsid().map_err(|e| anyhow::anyhow!("setsid: {e}"))?;
    }
    let spool = Spool::open(&dir)?;
    use crate::sched::mastership;
    let lock = if args.shadow {
        init_logging(&spool, !args.detached, &args.log_level)?;
        mastership::watch_as_shadow(&spool, &mastership::ShadowOptions { takeover_after })?
    } else {
        let lock = crate::sched::daemon::SpoolLock::acquire(&spool)?;
        init_logging(&spool, !args.detached, &args.log_level)?;
        lock
    };
    let master = mastership::Mastership::claim(&spool, heartbeat_interval)?;
    let heartbeat = mastership::Heartbeat::start(master.clone())?;
    let accounting_fence = master.clone();
    let opts = DaemonOptions {
        mastership: Some(master),
        poll: args.poll.map(Duration::from_millis),
        rescan: Duration::from_secs(args.rescan.max(1)),
        retention: Duration::from_secs(args.retention),
        periodic: args.interval.map(|s| Duration::from_secs(s.max(1))),
        running_state_delay: Duration::from_millis(args.running_state_delay),
        forecast_program: std::env::current_exe().ok(),
    };
    let config = crate::config::ClusterConfig::load(&spool.config_path())?;
    // Share-tree usage from the whole accounting history (or from the usage imported from
    // SGE and the records after the part of the file it covers), then charged as tasks end.
    let decay = crate::acct::decay_config(&config);
    let (usage, report) = crate::acct::load_usage_from(
        &spool.accounting_path(),
        &spool.usage_baseline_path(),
        &decay,
    )?;
    if let Some(b) = report.baseline {
        if b.replaced {
            tracing::warn!(
                covered_bytes = b.covered_bytes,
                "the accounting file no longer starts with the records the usage baseline covers (rotated or replaced since the import): all its records are charged on top of the baseline"
            );
        } else {
            tracing::info!(
                covered_bytes = b.covered_bytes,
                "share-tree usage starts from the imported baseline"
            );
        }
    }
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
    // What sched_d hears from each host: the launcher's sessions feed it, the probe reads it.
    let liveness = std::sync::Arc::new(crate::launch::HostLiveness::new());
    let runner_liveness = liveness.clone();
    let mut daemon = Daemon::new(
        spool.clone(),
        opts,
        move |spool, events| {
            let runner =
                crate::sched::LaunchRunner::new(spool, runner_config, events, runner_liveness)?;
            Ok(Box::new(runner) as Box<dyn crate::sched::TaskRunner>)
        },
        Box::new(
            crate::sched::Accounting::new(spool.accounting_path(), config.clone(), usage.clone())
                .fenced_by(accounting_fence),
        ),
    )?;
    if let Some(addr) = &args.metrics {
        let metrics = std::sync::Arc::new(crate::sched::metrics::Metrics::new());
        daemon.set_metrics(metrics.clone(), usage.clone());
        let page = crate::sched::metrics::PageSource {
            cell: spool
                .root()
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            accounting: spool.accounting_path(),
            spool: spool.clone(),
        };
        crate::sched::metrics::serve(addr, metrics, daemon.sender(), page)?;
    }
    daemon.set_policy(Box::new(crate::sched::SgePriority::new(&config, usage)));
    // Load and usage reports for qhost and qstat, over the launcher's ssh connections.
    let probe = crate::launch::HostProbe::start(
        spool.root().to_path_buf(),
        spool.config_path(),
        spool.daemon_dir(),
        crate::launch::LauncherOptions::defaults(&spool)?.control_dir,
        liveness,
    )?;
    let result = daemon.run();
    drop(probe);
    // Stopped on purpose: the last heartbeat says so, and no shadow takes over.
    if result.is_ok() {
        heartbeat.stop();
    }
    drop(lock);
    if let Err(e) = &result {
        tracing::error!("sched_d stopped: {e}");
    }
    result?;
    Ok(ExitCode::SUCCESS)
}

/// `--forecast`: one start-time forecast of the cell, written to `daemon/estimates`, at a
/// lower CPU priority than the daemon's (it runs beside it and must not slow a dispatch).
fn forecast(dir: &std::path::Path) -> Result<ExitCode, anyhow::Error> {
    crate::launch::lower_own_priority(10);
    let spool = Spool::open(dir)?;
    crate::sched::forecast::refresh(&spool, crate::time::now())?;
    Ok(ExitCode::SUCCESS)
}

/// Logs to `daemon/sched_d.log` (appended) and, in the foreground, to stderr.
///
/// The log is read by people with `less` and `grep` and by tools that take a line for an
/// event, so both streams are plain text, one event per line ([`OneLine`]): colour only when
/// stderr is a terminal (tracing's default colours whatever the stream, so a redirected
/// stderr was full of escapes), and the newlines inside an event (a configuration error
/// quotes several lines of YAML) are written as `\n`.
fn init_logging(spool: &Spool, stderr: bool, level: &str) -> Result<(), anyhow::Error> {
    use std::io::IsTerminal;
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
        .with_writer(OneLine::new(std::sync::Arc::new(file)));
    let stderr_layer = stderr.then(|| {
        let terminal = std::io::stderr().is_terminal();
        let layer = tracing_subscriber::fmt::layer().with_ansi(terminal);
        if terminal {
            layer.with_writer(tracing_subscriber::fmt::writer::BoxMakeWriter::new(
                std::io::stderr,
            ))
        } else {
            layer.with_writer(tracing_subscriber::fmt::writer::BoxMakeWriter::new(
                OneLine::new(std::sync::Arc::new(std::io::stderr())),
            ))
        }
    });
    tracing_subscriber::registry()
        .with(level)
        .with(file_layer)
        .with(stderr_layer)
        .try_init()
        .map_err(|e| anyhow::anyhow!("logging: {e}"))
}

/// A log destination that receives each event as one line: the formatter's output for one
/// event is collected ([`EventLine`]) and written with one `write` when the event is done, its
/// inner newlines, carriage returns and other control bytes (ESC among them) escaped
/// ([`one_line`]). One write per event on an `O_APPEND` file also keeps the lines of
/// concurrent events whole.
#[derive(Clone)]
struct OneLine<W> {
    out: std::sync::Arc<W>,
}

impl<W> OneLine<W> {
    fn new(out: std::sync::Arc<W>) -> Self {
        OneLine { out }
    }
}

impl<'a, W: Send + Sync + 'static> tracing_subscriber::fmt::MakeWriter<'a> for OneLine<W>
where
    for<'w> &'w W: std::io::Write,
{
    type Writer = EventLine<W>;

    fn make_writer(&'a self) -> Self::Writer {
        EventLine {
            out: self.out.clone(),
            buf: Vec::new(),
        }
    }
}

/// One event being formatted; written out, as one line, when dropped.
struct EventLine<W>
where
    for<'w> &'w W: std::io::Write,
{
    out: std::sync::Arc<W>,
    buf: Vec<u8>,
}

impl<W> std::io::Write for EventLine<W>
where
    for<'w> &'w W: std::io::Write,
{
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W> Drop for EventLine<W>
where
    for<'w> &'w W: std::io::Write,
{
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = one_line(&self.buf);
        // Nowhere to report a failed log write; the event is lost, as with any logger.
        let _ = std::io::Write::write_all(&mut &*self.out, &line);
    }
}

/// `event` as one line ending in `\n`: a newline inside it becomes `\n`, a carriage return
/// `\r`, a backslash stays as it is, and any other control byte but tab `\xNN` (so ESC is
/// `\x1b`). Bytes that are not UTF-8 pass through.
fn one_line(event: &[u8]) -> Vec<u8> {
    let body = event.strip_suffix(b"\n").unwrap_or(event);
    let mut out = Vec::with_capacity(body.len() + 1);
    for &b in body {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.push(b),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'\n');
    out
}

/// `--daemon`: starts this program again, detached, and returns once it holds the lock
/// (its pid is in the pid file) or says why it could not.
fn detach(dir: &std::path::Path, shadow: bool) -> Result<ExitCode, anyhow::Error> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    args.retain(|a| a != "--daemon");
    if !args.iter().any(|a| a == "--spool") {
        args.push("--spool".into());
        args.push(dir.as_os_str().to_owned());
    }
    args.push("--detached".into());
    // Named sched_d whatever the file is called: an installation's file is the multicall
    // program (`cli::multicall`), which reads its command from argv[0].
    let mut child = std::process::Command::new(exe)
        .arg0("sched_d")
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
        // A shadow holds no lock until it takes over: running a moment is its start.
        if shadow && std::time::Instant::now() + Duration::from_secs(9) > deadline {
            println!("sched_d shadow running as pid {}", child.id());
            return Ok(ExitCode::SUCCESS);
        }
        let running = crate::file::open::read_to_string(&pid_file)
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
    Ok(PathBuf::from(root).join(super::cell_name()))
}

/// Creates the spool tree and, when absent, the default configuration. Returns whether a new
/// configuration was written.
pub fn init(dir: &std::path::Path) -> Result<bool, anyhow::Error> {
    let spool = Spool::create(dir)?;
    write_settings(&spool)?;
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

/// Writes `common/settings.sh` and `common/settings.csh` unless they exist (an
/// administrator's edits are kept; remove them to have them written again). As on SGE sites,
/// users source them to reach the cell: they set `SGE_ROOT` and `SGE_CELL` from the cell's
/// absolute path and put the directory of this program (where an installation links every
/// command, `/usr/lib/gridspool`) first on `PATH`.
fn write_settings(spool: &Spool) -> Result<(), anyhow::Error> {
    let cell = std::fs::canonicalize(spool.root())?;
    let (Some(root), Some(name)) = (cell.parent(), cell.file_name()) else {
        anyhow::bail!(
            "{}: a cell directory needs a parent ($SGE_ROOT)",
            cell.display()
        );
    };
    let exe = std::env::current_exe()?;
    let bin = exe.parent().unwrap_or(std::path::Path::new("/"));
    let (sh, csh) = settings_text(root.as_os_str(), name, bin.as_os_str());
    for (file, text) in [("settings.sh", sh), ("settings.csh", csh)] {
        match durable::write_new(&spool.common_dir(), file, &text, 0o644) {
            Ok(()) | Err(crate::file::FileError::Exists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The texts of `settings.sh` and `settings.csh` (SGE's `util/create_settings.sh` writes the
/// same variables; gridspool has no architecture directories, ports or DRMAA library).
fn settings_text(
    root: &std::ffi::OsStr,
    cell: &std::ffi::OsStr,
    bin: &std::ffi::OsStr,
) -> (Vec<u8>, Vec<u8>) {
    let (root, cell, bin) = (quote(root), quote(cell), quote(bin));
    let header = b"# gridspool: source this file to use this cell (as SGE's common/settings.*)\n";
    let mut sh = header.to_vec();
    for line in [
        [b"SGE_ROOT=".as_slice(), &root, b"; export SGE_ROOT\n"].concat(),
        [b"SGE_CELL=".as_slice(), &cell, b"; export SGE_CELL\n"].concat(),
        [b"PATH=".as_slice(), &bin, b":$PATH; export PATH\n"].concat(),
    ] {
        sh.extend_from_slice(&line);
    }
    let mut csh = header.to_vec();
    for line in [
        [b"setenv SGE_ROOT ".as_slice(), &root, b"\n"].concat(),
        [b"setenv SGE_CELL ".as_slice(), &cell, b"\n"].concat(),
        [b"set path = ( ".as_slice(), &bin, b" $path )\n"].concat(),
    ] {
        csh.extend_from_slice(&line);
    }
    (sh, csh)
}

/// A word in single quotes for both sh and csh; a quote inside is closed, written in double
/// quotes, and reopened.
fn quote(word: &std::ffi::OsStr) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &b in word.as_encoded_bytes() {
        if b == b'\'' {
            out.extend_from_slice(b"'\"'\"'");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn settings_quote_every_path() {
        let (sh, csh) =
            super::settings_text("/srv/it's".as_ref(), "c".as_ref(), "/opt/g q".as_ref());
        let sh = String::from_utf8(sh).expect("text");
        assert!(sh.contains("SGE_ROOT='/srv/it'\"'\"'s'; export SGE_ROOT\n"));
        assert!(sh.contains("PATH='/opt/g q':$PATH; export PATH\n"));
        let csh = String::from_utf8(csh).expect("text");
        assert!(csh.contains("setenv SGE_CELL 'c'\n"));
        assert!(csh.contains("set path = ( '/opt/g q' $path )\n"));
    }

    #[test]
    fn an_event_is_one_line_without_escapes() {
        assert_eq!(one_line(b"plain\n"), b"plain\n");
        assert_eq!(
            one_line(b"bad config:\n58 | hosts: [\r\n\x1b[1mx\ty\n"),
            b"bad config:\\n58 | hosts: [\\r\\n\\x1b[1mx\ty\n"
        );
        assert_eq!(one_line(b"no newline"), b"no newline\n");
        assert_eq!(one_line(b"\xff\xfe\n"), b"\xff\xfe\n");
    }
}
