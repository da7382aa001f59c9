//! The system OpenSSH client, as the launcher uses it: one connection per host that lasts
//! ([`Transport`], carrying the start server's session; `ControlMaster=no`, so nothing
//! detached stays behind), `BatchMode` (never a password prompt), the host's own options.
//! For a host whose shepherd is older than the session protocol, the older ways: a master
//! connection (`ControlMaster`/`ControlPath`/`ControlPersist`) whose short sessions run each
//! kill, query and probe, with a cap on concurrent sessions per host.

use super::LaunchError;
use super::ssh_builtin::{self, BuiltinPlan, Outcome, SessionControl};
use crate::config::{LaunchMethod, SshClient};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};

/// How long an idle master connection stays up after its last session.
const CONTROL_PERSIST_SECS: u32 = 600;

/// ssh's exit status when the connection (not the remote command) failed.
pub const SSH_CONNECTION_FAILED: i32 = 255;

/// The lock of one master connection (its control path and the host it reaches), shared by
/// every [`SshTarget`] of this process.
fn master_lock(key: String) -> std::sync::Arc<Mutex<()>> {
    static LOCKS: std::sync::OnceLock<
        Mutex<std::collections::HashMap<String, std::sync::Arc<Mutex<()>>>>,
    > = std::sync::OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    std::sync::Arc::clone(locks.entry(key).or_default())
}

/// One ssh-reachable host.
#[derive(Debug, Clone)]
pub struct SshTarget {
    pub host: String,
    pub address: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub options: Vec<String>,
    pub max_sessions: u32,
    pub control_path: PathBuf,
    /// The host's `ssh_client` (the session's client; the older ways always use OpenSSH).
    pub client: SshClient,
}

impl SshTarget {
    /// The target for a host configured with `LaunchMethod::Ssh`; `None` for local hosts.
    pub fn from_config(host: &str, method: &LaunchMethod, control_dir: &Path) -> Option<Self> {
        match method {
            LaunchMethod::Local => None,
            LaunchMethod::Ssh {
                address,
                port,
                user,
                options,
                max_sessions,
                ssh_client,
            } => Some(SshTarget {
                host: host.to_string(),
                address: address.clone().unwrap_or_else(|| host.to_string()),
                port: *port,
                user: user.clone(),
                options: options.clone(),
                max_sessions: (*max_sessions).max(1),
                // `%C` is a hash of host, port and user: short enough for a socket path.
                control_path: control_dir.join("cm-%C"),
                client: *ssh_client,
            }),
        }
    }

    /// `ssh` with the common options, ready for a destination and a command.
    fn base(&self, master: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(["-o", "BatchMode=yes"])
            .args(["-o", &format!("ControlMaster={master}")])
            .args([
                "-o",
                &format!("ControlPath={}", self.control_path.display()),
            ])
            .args(["-o", &format!("ControlPersist={CONTROL_PERSIST_SECS}")]);
        self.common_options(cmd)
    }

    /// What every connection has: timeouts, keep-alives, quiet, the port, user and the
    /// host's own options.
    fn common_options(&self, mut cmd: Command) -> Command {
        cmd.args(self.common_words());
        cmd
    }

    /// The words of [`SshTarget::common_options`], which the builtin client reads too.
    fn common_words(&self) -> Vec<String> {
        let mut words: Vec<String> = [
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "LogLevel=ERROR",
        ]
        .map(String::from)
        .into();
        if let Some(p) = self.port {
            words.extend(["-p".to_string(), p.to_string()]);
        }
        if let Some(u) = &self.user {
            words.extend(["-l".to_string(), u.clone()]);
        }
        words.extend(self.options.iter().cloned());
        words
    }

    /// How the builtin client would reach the host, or why it cannot (the host's session then
    /// uses OpenSSH).
    pub fn builtin_plan(&self) -> Result<BuiltinPlan, String> {
        BuiltinPlan::for_target(&self.host, &self.address, &self.common_words(), self.client)
    }

    /// The pid of the running master connection (`ssh -O check` says `Master running
    /// (pid=N)`), `None` when there is none.
    pub fn master_pid(&self) -> Option<u32> {
        let out = self
            .base("auto")
            .args(["-O", "check", &self.address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stderr);
        let start = text.find("pid=")? + 4;
        let digits: String = text[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    /// Makes sure the master connection is up, starting it if needed; returns its pid.
    /// Serialised per master ([`master_lock`]): the launcher and the host probe both call
    /// this, and of two masters started at once the second finds the socket taken, disables
    /// multiplexing and stays up as a plain connection that nobody would ever close.
    pub fn ensure_master(&self) -> Result<Option<u32>, LaunchError> {
        if let Some(pid) = self.master_pid() {
            return Ok(Some(pid));
        }
        let lock = master_lock(format!(
            "{}\0{}\0{:?}\0{:?}",
            self.control_path.display(),
            self.address,
            self.port,
            self.user
        ));
        let _creating = lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pid) = self.master_pid() {
            return Ok(Some(pid));
        }
        // `-f -N`: authenticate, then go to the background as the master. Its stderr goes to a
        // file, not a pipe: the backgrounded master keeps its descriptors open. The file has
        // no name (`O_TMPFILE`): a name in the shared temporary directory, predictable from
        // the pid and host, let any local user plant a link there for root to truncate.
        let mut err_file = anonymous_temp_file()?;
        let for_ssh = err_file
            .try_clone()
            .map_err(|e| LaunchError::io("dup", std::env::temp_dir(), e))?;
        let status = self
            .base("yes")
            .args(["-f", "-N", &self.address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(for_ssh)
            .status()
            .map_err(|e| LaunchError::io("spawn", "ssh", e))?;
        let mut text = String::new();
        {
            use std::io::{Read, Seek};
            let _ = err_file
                .rewind()
                .and_then(|()| err_file.read_to_string(&mut text));
        }
        if status.success() {
            Ok(self.master_pid())
        } else {
            Err(LaunchError::Unreachable {
                host: self.host.clone(),
                reason: text.trim().to_string(),
            })
        }
    }

    /// `ssh … address -- words…` with the words quoted for the remote shell.
    pub fn command(&self, words: &[String]) -> Command {
        let mut cmd = self.base("auto");
        let line: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        cmd.arg(&self.address).arg("--").arg(line.join(" "));
        cmd
    }

    /// `ssh … address -- words…` over a connection of its own, not the master's: for a
    /// session that lasts (a pe task), which would hold one of the master's sessions.
    pub fn separate_command(&self, words: &[String]) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(["-o", "BatchMode=yes"])
            .args(["-o", "ControlMaster=no"])
            .args(["-o", "ControlPath=none"]);
        let mut cmd = self.common_options(cmd);
        let line: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        cmd.arg(&self.address).arg("--").arg(line.join(" "));
        cmd
    }

    /// Runs a remote command to completion with `input` on its stdin.
    pub fn run(&self, words: &[String], input: &[u8]) -> Result<Output, LaunchError> {
        use std::io::Write;
        let mut child = self
            .command(words)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| LaunchError::io("spawn", "ssh", e))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| LaunchError::io("wait", "ssh", e))?;
        if out.status.code() == Some(SSH_CONNECTION_FAILED) {
            return Err(LaunchError::Unreachable {
                host: self.host.clone(),
                reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(out)
    }

    /// Closes the master connection (`ssh -O exit`).
    pub fn close_master(&self) {
        let _ = self
            .base("auto")
            .args(["-O", "exit", &self.address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// What carries a host's session: its input and output are the start server's. The builtin
/// ssh client's connection (`ssh_builtin`: no process, one TCP connection in `sched_d`), an
/// OpenSSH client of its own (about 1.4 MB each) for an ssh host whose options only OpenSSH
/// honours, the start server itself for a local host. Everything that knows what carries the
/// session is here.
pub struct Transport {
    via: Via,
}

enum Via {
    Process(std::process::Child),
    Builtin {
        id: u64,
        io: Option<(std::fs::File, std::fs::File)>,
        control: Arc<SessionControl>,
    },
}

/// Names a session to end it from elsewhere ([`SessionId::end`]): a process (ours) or a
/// builtin client's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionId {
    Process(u32),
    Builtin(u64),
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionId::Process(pid) => write!(f, "pid {pid}"),
            SessionId::Builtin(n) => write!(f, "builtin session {n}"),
        }
    }
}

impl SessionId {
    /// Ends the session: SIGTERM to the process, or the builtin connection closed.
    pub fn end(self) {
        match self {
            SessionId::Process(pid) => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            SessionId::Builtin(id) => ssh_builtin::end_session(id),
        }
    }
}

/// A pipe end as a `File`: the launcher reads and writes sessions through `File`s whatever
/// carries them.
fn as_file(fd: impl Into<std::os::fd::OwnedFd>) -> std::fs::File {
    std::fs::File::from(fd.into())
}

impl Transport {
    /// `words` run on `target` over a connection of their own, their stderr discarded: the
    /// builtin client's where it honours the host's options, else OpenSSH's.
    pub fn ssh(target: &SshTarget, words: &[String]) -> Result<Self, LaunchError> {
        match target.builtin_plan() {
            Ok(plan) => {
                let line: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
                let opened = ssh_builtin::open(plan, line.join(" "))?;
                Ok(Transport {
                    via: Via::Builtin {
                        id: opened.id,
                        io: Some((opened.input, opened.output)),
                        control: opened.control,
                    },
                })
            }
            Err(reason) => {
                ssh_builtin::log_openssh_once(&target.host, &reason);
                let child = target
                    .separate_command(words)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| LaunchError::io("spawn", "ssh", e))?;
                Ok(Transport {
                    via: Via::Process(child),
                })
            }
        }
    }

    /// A local process (the caller sets its arguments and stderr).
    pub fn local(mut command: Command) -> Result<Self, LaunchError> {
        let child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| LaunchError::io("spawn", command.get_program(), e))?;
        Ok(Transport {
            via: Via::Process(child),
        })
    }

    /// Its input and output (once).
    pub fn take_io(&mut self) -> Option<(std::fs::File, std::fs::File)> {
        match &mut self.via {
            Via::Process(child) => {
                let (stdin, stdout) = (child.stdin.take()?, child.stdout.take()?);
                Some((as_file(stdin), as_file(stdout)))
            }
            Via::Builtin { io, .. } => io.take(),
        }
    }

    /// What names it, to end it from elsewhere ([`SessionId::end`]).
    pub fn id(&self) -> SessionId {
        match &self.via {
            Via::Process(child) => SessionId::Process(child.id()),
            Via::Builtin { id, .. } => SessionId::Builtin(*id),
        }
    }

    /// Ends it at once.
    pub fn kill(&mut self) {
        match &mut self.via {
            Via::Process(child) => {
                let _ = child.kill();
            }
            Via::Builtin { control, .. } => control.end(),
        }
    }

    /// Waits for its end; `Some(why)` when the connection (not the remote command) failed.
    pub fn wait(&mut self) -> Option<String> {
        match &mut self.via {
            Via::Process(child) => child
                .wait()
                .is_ok_and(|s| s.code() == Some(SSH_CONNECTION_FAILED))
                .then(|| "the ssh connection failed".to_string()),
            Via::Builtin { io, control, .. } => {
                // Our ends closed first: a session whose output nobody reads anymore ends.
                io.take();
                match control.wait() {
                    Outcome::ConnectionFailed(why) => Some(why),
                    Outcome::Exited(_) | Outcome::Ended => None,
                }
            }
        }
    }
}

/// Quotes a word for a POSIX shell (the remote side runs the command through the user's
/// shell).
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A counting semaphore: at most `max_sessions` concurrent sessions per host.
#[derive(Debug)]
pub struct Sessions {
    free: Mutex<u32>,
    cv: Condvar,
}

/// Holds one session slot until dropped.
pub struct SessionPermit<'a>(&'a Sessions);

impl Sessions {
    pub fn new(n: u32) -> Self {
        Sessions {
            free: Mutex::new(n.max(1)),
            cv: Condvar::new(),
        }
    }

    pub fn acquire(&self) -> SessionPermit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.cv.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SessionPermit(self)
    }
}

impl Drop for SessionPermit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        self.0.cv.notify_one();
    }
}

/// A file without a name in the temporary directory (`O_TMPFILE`), for a child's stderr.
fn anonymous_temp_file() -> Result<std::fs::File, LaunchError> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let dir = std::env::temp_dir();
    nix::fcntl::open(
        &dir,
        OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map(std::fs::File::from)
    .map_err(|e| LaunchError::io("create a temporary file in", dir, e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_the_remote_shell() {
        assert_eq!(shell_quote("/usr/bin/x"), "/usr/bin/x");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
