//! `sched_d`'s own ssh client for the hosts' sessions: every host's connection in one process,
//! on one small tokio runtime, instead of an OpenSSH client process per host (≈ 1.4 MB and, with
//! OpenSSH 9.2's default key exchange, ≈ 100 ms of CPU per connection: at 1,000 hosts 1.4 GB and
//! minutes to re-attach; bench/cluster.md).
//!
//! It reaches a host as `ssh -o BatchMode=yes` would for `sched_d`'s user, or not at all: a host
//! whose options it cannot honour uses OpenSSH ([`BuiltinPlan::for_target`] says why, logged
//! once per host). It honours, from the same words OpenSSH gets (the first value of a setting
//! wins, as in OpenSSH):
//! - `-i` / `IdentityFile` (else `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`; keys without a
//!   passphrase, no agent), `-l` / `User` (else the user's name), `-p` / `Port`, `HostName`;
//! - `UserKnownHostsFile` (else `~/.ssh/known_hosts`, `known_hosts2`), `GlobalKnownHostsFile`
//!   (else `/etc/ssh/ssh_known_hosts`, `ssh_known_hosts2`), with plain, wildcard, negated and
//!   hashed names and `@revoked`; `StrictHostKeyChecking` `yes`/`ask` (an unknown or changed key
//!   is refused, never asked about), `accept-new` (an unknown key is recorded, a changed one
//!   refused), `no`/`off` (both accepted; an unknown one recorded);
//! - `ConnectTimeout`, `ServerAliveInterval`, `ServerAliveCountMax`;
//! - settings that change nothing here: `BatchMode`, `LogLevel`, `IdentitiesOnly`, the
//!   `Control*` ones, `KexAlgorithms`, `Ciphers`, `MACs`, `HostKeyAlgorithms`, `Compression`,
//!   `HashKnownHosts`, `CheckHostIP`, `TCPKeepAlive`, `SendEnv`, password, keyboard-interactive
//!   and GSSAPI authentication, agent and X11 forwarding, `-q -v -T -n -x -a -k -C`, `-F
//!   /dev/null`.
//!
//! Anything else (`ProxyJump`/`-J`, `ProxyCommand`, another `-F` file, any other option or flag,
//! a `%` token in a file name) and a `~/.ssh/config` with any setting in it (it reads no ssh
//! configuration file; `/etc/ssh/ssh_config` is not read either: what matters for a host goes in
//! its `options`) sends the host to OpenSSH, as does `ssh_client: openssh`.
//!
//! Each session is bridged to the launcher's line reader and writer through two socket pairs: the
//! launcher keeps blocking `File`s, the runtime copies between the other ends and the channel.

use super::LaunchError;
use crate::config::SshClient;
use russh::ChannelMsg;
use russh::keys::{PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What `StrictHostKeyChecking` lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// `yes`, `ask` (in batch mode nobody is asked): known keys only.
    Known,
    /// `accept-new`: an unknown key is recorded; a changed one refused.
    AcceptNew,
    /// `no`, `off`: anything; an unknown key is recorded.
    Any,
}

/// How the builtin client reaches one host, read from the words OpenSSH would be given.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinPlan {
    pub host: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    pub identities: Vec<PathBuf>,
    pub user_known_hosts: Vec<PathBuf>,
    pub global_known_hosts: Vec<PathBuf>,
    pub strictness: Strictness,
    pub connect_timeout: Duration,
    pub alive_interval: Option<Duration>,
    pub alive_count_max: usize,
}

/// Flags that change nothing for a batch session without a terminal.
const HARMLESS_FLAGS: &str = "qvTnxakC";

/// `-o` settings that change nothing here (lower case).
const HARMLESS_SETTINGS: &[&str] = &[
    "batchmode",
    "loglevel",
    "identitiesonly",
    "controlmaster",
    "controlpath",
    "controlpersist",
    "kexalgorithms",
    "ciphers",
    "macs",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "compression",
    "hashknownhosts",
    "checkhostip",
    "tcpkeepalive",
    "sendenv",
    "setenv",
    "passwordauthentication",
    "kbdinteractiveauthentication",
    "challengeresponseauthentication",
    "gssapiauthentication",
    "gssapidelegatecredentials",
    "forwardagent",
    "forwardx11",
    "forwardx11trusted",
    "requesttty",
    "connectionattempts",
    "addkeystoagent",
    "updatehostkeys",
    "visualhostkey",
    "numberofpasswordprompts",
];

impl BuiltinPlan {
    /// The plan for `host` at `address` given OpenSSH's words (options before the
    /// destination), or why the builtin client cannot honour them. `home`: the user's home
    /// directory (from the password database, as OpenSSH takes it).
    pub fn from_words(
        host: &str,
        address: &str,
        words: &[String],
        home: &Path,
        local_user: &str,
    ) -> Result<Self, String> {
        let mut identities = Vec::new();
        let mut user = None;
        let mut port = None;
        let mut hostname = None;
        let mut user_known: Option<Vec<PathBuf>> = None;
        let mut global_known: Option<Vec<PathBuf>> = None;
        let mut strictness = None;
        let mut connect_timeout = None;
        let mut alive_interval = None;
        let mut alive_count = None;
        let mut config_file = None;
        let path = |v: &str| -> Result<PathBuf, String> {
            if v.contains('%') {
                return Err(format!("the file name {v:?} has a % token"));
            }
            Ok(match v.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(v),
            })
        };
        let paths = |v: &str| -> Result<Vec<PathBuf>, String> {
            v.split_whitespace()
                .filter(|p| *p != "none")
                .map(path)
                .collect()
        };
        let number = |key: &str, v: &str| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("{key}={v} is not a number"))
        };
        let mut i = 0;
        while i < words.len() {
            let word = &words[i];
            i += 1;
            let Some(flags) = word.strip_prefix('-').filter(|f| !f.is_empty()) else {
                return Err(format!("the word {word:?}"));
            };
            let letter = flags.chars().next().unwrap_or('-');
            if "FiloJp".contains(letter) {
                let value = if flags.len() > 1 {
                    flags[1..].to_string()
                } else if i < words.len() {
                    i += 1;
                    words[i - 1].clone()
                } else {
                    return Err(format!("{word} without its value"));
                };
                match letter {
                    'F' => {
                        config_file.get_or_insert(value);
                    }
                    'i' => identities.push(path(&value)?),
                    'l' => {
                        user.get_or_insert(value);
                    }
                    'p' => {
                        port.get_or_insert(number("Port", &value)?);
                    }
                    'J' => return Err("ProxyJump (-J)".to_string()),
                    _ => {
                        let (key, v) = match value.split_once('=') {
                            Some((k, v)) => (k.trim(), v.trim()),
                            None => value
                                .trim()
                                .split_once(char::is_whitespace)
                                .map_or((value.trim(), ""), |(k, v)| (k, v.trim())),
                        };
                        let v = v.trim_matches('"');
                        match key.to_ascii_lowercase().as_str() {
                            "identityfile" => identities.push(path(v)?),
                            "user" => {
                                user.get_or_insert(v.to_string());
                            }
                            "port" => {
                                port.get_or_insert(number(key, v)?);
                            }
                            "hostname" => {
                                hostname.get_or_insert(v.to_string());
                            }
                            "userknownhostsfile" => {
                                if user_known.is_none() {
                                    user_known = Some(paths(v)?);
                                }
                            }
                            "globalknownhostsfile" => {
                                if global_known.is_none() {
                                    global_known = Some(paths(v)?);
                                }
                            }
                            "stricthostkeychecking" => {
                                let s = match v.to_ascii_lowercase().as_str() {
                                    "yes" | "ask" => Strictness::Known,
                                    "accept-new" => Strictness::AcceptNew,
                                    "no" | "off" => Strictness::Any,
                                    _ => return Err(format!("{key}={v}")),
                                };
                                strictness.get_or_insert(s);
                            }
                            "connecttimeout" => {
                                connect_timeout.get_or_insert(number(key, v)?);
                            }
                            "serveraliveinterval" => {
                                alive_interval.get_or_insert(number(key, v)?);
                            }
                            "serveralivecountmax" => {
                                alive_count.get_or_insert(number(key, v)?);
                            }
                            "proxyjump" | "proxycommand" => return Err(key.to_string()),
                            k if HARMLESS_SETTINGS.contains(&k) => {}
                            _ => return Err(format!("the option {key}")),
                        }
                    }
                }
            } else if let Some(c) = flags.chars().find(|c| !HARMLESS_FLAGS.contains(*c)) {
                return Err(format!("the flag -{c}"));
            }
        }
        match config_file.as_deref() {
            Some("/dev/null" | "none") => {}
            Some(other) => return Err(format!("the configuration file -F {other}")),
            None => {
                let user_config = home.join(".ssh/config");
                if let Ok(text) = std::fs::read_to_string(&user_config)
                    && text
                        .lines()
                        .any(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
                {
                    return Err(format!(
                        "{} has settings (the builtin client reads no ssh configuration file)",
                        user_config.display()
                    ));
                }
            }
        }
        if identities.is_empty() {
            identities = ["id_ed25519", "id_ecdsa", "id_rsa"]
                .iter()
                .map(|f| home.join(".ssh").join(f))
                .collect();
        }
        let port = port.unwrap_or(22);
        Ok(BuiltinPlan {
            host: host.to_string(),
            address: hostname.unwrap_or_else(|| address.to_string()),
            port: u16::try_from(port).map_err(|_| format!("the port {port}"))?,
            user: user.unwrap_or_else(|| local_user.to_string()),
            identities,
            user_known_hosts: user_known.unwrap_or_else(|| {
                vec![
                    home.join(".ssh/known_hosts"),
                    home.join(".ssh/known_hosts2"),
                ]
            }),
            global_known_hosts: global_known.unwrap_or_else(|| {
                vec![
                    PathBuf::from("/etc/ssh/ssh_known_hosts"),
                    PathBuf::from("/etc/ssh/ssh_known_hosts2"),
                ]
            }),
            strictness: strictness.unwrap_or(Strictness::Known),
            connect_timeout: Duration::from_secs(connect_timeout.unwrap_or(0)),
            alive_interval: alive_interval.filter(|&s| s > 0).map(Duration::from_secs),
            alive_count_max: usize::try_from(alive_count.unwrap_or(3)).unwrap_or(3),
        })
    }

    /// The plan for an ssh target: `words` are the options OpenSSH would get, `choice` the
    /// host's `ssh_client`.
    pub fn for_target(
        host: &str,
        address: &str,
        words: &[String],
        choice: SshClient,
    ) -> Result<Self, String> {
        if choice == SshClient::Openssh {
            return Err("ssh_client: openssh".to_string());
        }
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .ok_or_else(|| "this user has no entry in the password database".to_string())?;
        Self::from_words(host, address, words, &me.dir, &me.name)
    }

    /// The name known_hosts files record the host under.
    fn known_as(&self) -> String {
        if self.port == 22 {
            self.address.clone()
        } else {
            format!("[{}]:{}", self.address, self.port)
        }
    }
}

/// Logs once per host (and reason) that it goes through OpenSSH.
pub fn log_openssh_once(host: &str, reason: &str) {
    static LOGGED: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    let fresh = LOGGED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((host.to_string(), reason.to_string()));
    if fresh {
        tracing::info!(host, "the host's session uses OpenSSH: {reason}");
    }
}

/// What the known_hosts files say about a host's key.
#[derive(Debug, PartialEq, Eq)]
pub enum HostKeyVerdict {
    Known,
    Unknown,
    /// Another key of the same type is recorded for the host (file and line).
    Changed(PathBuf, usize),
    Revoked(PathBuf, usize),
}

/// Looks `key` up for `name` (`host` or `[host]:port`) in `files`, as OpenSSH does.
pub fn check_host_key(files: &[PathBuf], name: &str, key: &PublicKey) -> HostKeyVerdict {
    let mut changed = None;
    let mut known = false;
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let mut fields = line.split_whitespace();
            let Some(mut first) = fields.next() else {
                continue;
            };
            if first.starts_with('#') {
                continue;
            }
            let marker = first.strip_prefix('@');
            if marker.is_some() {
                let Some(next) = fields.next() else { continue };
                first = next;
            }
            let (Some(_algorithm), Some(base64)) = (fields.next(), fields.next()) else {
                continue;
            };
            if marker == Some("cert-authority") || !hosts_match(first, name) {
                continue;
            }
            let Ok(recorded) = russh::keys::parse_public_key_base64(base64) else {
                continue;
            };
            let same = recorded.key_data() == key.key_data();
            if marker == Some("revoked") {
                if same {
                    return HostKeyVerdict::Revoked(file.clone(), n + 1);
                }
                continue;
            }
            known |= same;
            if recorded.algorithm() == key.algorithm() && changed.is_none() {
                changed = Some((file.clone(), n + 1));
            }
        }
    }
    match changed {
        _ if known => HostKeyVerdict::Known,
        Some((file, line)) => HostKeyVerdict::Changed(file, line),
        None => HostKeyVerdict::Unknown,
    }
}

/// A known_hosts host field (comma-separated patterns, `!` negations, `|1|salt|hash` hashed
/// names) against a name.
fn hosts_match(field: &str, name: &str) -> bool {
    let mut matched = false;
    for pattern in field.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        let hit = match pattern.strip_prefix("|1|") {
            Some(hashed) => hashed_match(hashed, name),
            None => glob(
                pattern.to_ascii_lowercase().as_bytes(),
                name.to_ascii_lowercase().as_bytes(),
            ),
        };
        if hit && negated {
            return false;
        }
        matched |= hit;
    }
    matched
}

fn hashed_match(hashed: &str, name: &str) -> bool {
    let Some((salt, hash)) = hashed.split_once('|') else {
        return false;
    };
    let decode = |s: &str| data_encoding::BASE64.decode(s.as_bytes()).ok();
    let (Some(salt), Some(hash)) = (decode(salt), decode(hash)) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt);
    ring::hmac::verify(&key, name.as_bytes(), &hash).is_ok()
}

/// `*` and `?` wildcards.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|k| glob(rest, &name[k..])),
        Some((b'?', rest)) => !name.is_empty() && glob(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && glob(rest, &name[1..]),
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The remote command exited with this status.
    Exited(u32),
    /// The connection failed or was lost (OpenSSH's exit status 255), and why.
    ConnectionFailed(String),
    /// Ended from here ([`SessionControl::end`]).
    Ended,
}

/// The launcher's hold on one builtin session.
pub struct SessionControl {
    end: tokio::sync::Notify,
    outcome: Mutex<Option<Outcome>>,
    cv: Condvar,
}

impl SessionControl {
    /// Ends the session: its connection is closed (the remote side sees it go, as when an
    /// OpenSSH client is killed).
    pub fn end(&self) {
        self.end.notify_one();
    }

    /// Waits for the session's end.
    pub fn wait(&self) -> Outcome {
        let mut outcome = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = outcome.as_ref() {
                return o.clone();
            }
            outcome = self.cv.wait(outcome).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn finish(&self, outcome: Outcome) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.cv.notify_all();
    }
}

/// The sessions open now, by number, to end one by its number from elsewhere.
fn sessions() -> &'static Mutex<HashMap<u64, Weak<SessionControl>>> {
    static SESSIONS: OnceLock<Mutex<HashMap<u64, Weak<SessionControl>>>> = OnceLock::new();
    SESSIONS.get_or_init(Default::default)
}

/// Ends session `id` if it is still open.
pub fn end_session(id: u64) {
    let control = sessions()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .and_then(Weak::upgrade);
    if let Some(c) = control {
        c.end();
    }
}

/// The runtime that carries every host's connection: made with the first builtin session
/// (only a launcher with an ssh host has one), one worker thread, kept for the process.
fn runtime() -> Result<&'static tokio::runtime::Runtime, LaunchError> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("ssh-sessions")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| LaunchError::io("start", "the ssh runtime", e))?;
    Ok(RUNTIME.get_or_init(|| rt))
}

/// A session being opened: its number, the launcher's ends (input, output) and its control.
pub struct Opened {
    pub id: u64,
    pub input: std::fs::File,
    pub output: std::fs::File,
    pub control: Arc<SessionControl>,
}

/// Opens a session running `command` (one line for the remote shell) with `plan`. It returns
/// at once; the connection is made on the runtime, and a failure shows as the end of the
/// output and [`Outcome::ConnectionFailed`].
pub fn open(plan: BuiltinPlan, command: String) -> Result<Opened, LaunchError> {
    use std::os::unix::net::UnixStream;
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let rt = runtime()?;
    let pair = || UnixStream::pair().map_err(|e| LaunchError::io("socketpair", "ssh session", e));
    let (input_ours, input_theirs) = pair()?;
    let (output_ours, output_theirs) = pair()?;
    for s in [&input_theirs, &output_theirs] {
        s.set_nonblocking(true)
            .map_err(|e| LaunchError::io("set nonblocking", "ssh session", e))?;
    }
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let control = Arc::new(SessionControl {
        end: tokio::sync::Notify::new(),
        outcome: Mutex::new(None),
        cv: Condvar::new(),
    });
    sessions()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, Arc::downgrade(&control));
    let ctl = Arc::clone(&control);
    rt.spawn(async move {
        let outcome = match (
            tokio::net::UnixStream::from_std(input_theirs),
            tokio::net::UnixStream::from_std(output_theirs),
        ) {
            (Ok(from_launcher), Ok(to_launcher)) => {
                tokio::select! {
                    o = run(&plan, &command, from_launcher, to_launcher) => o,
                    () = ctl.end.notified() => Outcome::Ended,
                }
            }
            (Err(e), _) | (_, Err(e)) => Outcome::ConnectionFailed(e.to_string()),
        };
        if let Outcome::ConnectionFailed(why) = &outcome {
            tracing::warn!(host = %plan.host, "ssh session: {why}");
        }
        sessions()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        ctl.finish(outcome);
    });
    Ok(Opened {
        id,
        input: std::fs::File::from(std::os::fd::OwnedFd::from(input_ours)),
        output: std::fs::File::from(std::os::fd::OwnedFd::from(output_ours)),
        control,
    })
}

/// Checks the host's key against the known_hosts files; the refusal, if any, is kept for the
/// session's outcome.
struct HostKeyCheck {
    plan: BuiltinPlan,
    refusal: Arc<Mutex<Option<String>>>,
}

impl HostKeyCheck {
    fn verdict(&self, key: &PublicKey) -> Result<(), String> {
        let name = self.plan.known_as();
        let files: Vec<PathBuf> = self
            .plan
            .user_known_hosts
            .iter()
            .chain(&self.plan.global_known_hosts)
            .cloned()
            .collect();
        let fingerprint = key.fingerprint(Default::default());
        match check_host_key(&files, &name, key) {
            HostKeyVerdict::Known => Ok(()),
            HostKeyVerdict::Revoked(file, line) => Err(format!(
                "the host key of {name} ({fingerprint}) is marked as revoked in {}:{line}",
                file.display()
            )),
            HostKeyVerdict::Changed(file, line) if self.plan.strictness != Strictness::Any => {
                Err(format!(
                    "the host key of {name} has changed ({fingerprint}, another in {}:{line}): refused",
                    file.display()
                ))
            }
            HostKeyVerdict::Changed(file, line) => {
                tracing::warn!(host = %self.plan.host, "the host key of {name} has changed ({fingerprint}, another in {}:{line}); accepted (StrictHostKeyChecking=no)", file.display());
                Ok(())
            }
            HostKeyVerdict::Unknown if self.plan.strictness == Strictness::Known => Err(format!(
                "no host key is known for {name} ({} {fingerprint}) and StrictHostKeyChecking asks for one: refused",
                key.algorithm()
            )),
            HostKeyVerdict::Unknown => {
                self.record(&name, key);
                Ok(())
            }
        }
    }

    /// Adds an accepted new key to the first user known_hosts file, as OpenSSH does.
    fn record(&self, name: &str, key: &PublicKey) {
        use std::io::Write;
        let Some(file) = self.plan.user_known_hosts.first() else {
            return;
        };
        let Ok(text) = key.to_openssh() else { return };
        let mut words = text.split_whitespace();
        let (Some(algorithm), Some(base64)) = (words.next(), words.next()) else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(file)
            .and_then(|mut f| writeln!(f, "{name} {algorithm} {base64}"));
        match written {
            Ok(()) => {
                tracing::info!(host = %self.plan.host, "added the host key of {name} to {}", file.display())
            }
            Err(e) => {
                tracing::warn!(host = %self.plan.host, "cannot add the host key of {name} to {}: {e}", file.display())
            }
        }
    }
}

impl russh::client::Handler for HostKeyCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let verdict = match server_public_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => self.verdict(key),
            PublicKeyOrCertificate::Certificate(_) => Err(
                "the host offered a certificate, which the builtin client does not check: refused"
                    .to_string(),
            ),
        };
        match verdict {
            Ok(()) => Ok(true),
            Err(why) => {
                *self.refusal.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                Ok(false)
            }
        }
    }
}

/// Connects, authenticates, runs `command` and copies between the channel and the launcher
/// until the remote command ends or the connection does.
async fn run(
    plan: &BuiltinPlan,
    command: &str,
    mut from_launcher: tokio::net::UnixStream,
    mut to_launcher: tokio::net::UnixStream,
) -> Outcome {
    let failed = Outcome::ConnectionFailed;
    let timeout = plan.connect_timeout;
    let within = |d: Duration| {
        if d.is_zero() {
            Duration::from_secs(3600)
        } else {
            d
        }
    };
    let destination = format!("{} port {}", plan.address, plan.port);
    let tcp = match tokio::time::timeout(
        within(timeout),
        tokio::net::TcpStream::connect((plan.address.as_str(), plan.port)),
    )
    .await
    {
        Ok(Ok(tcp)) => tcp,
        Ok(Err(e)) => return failed(format!("connect to host {destination}: {e}")),
        Err(_) => {
            return failed(format!(
                "connect to host {destination}: Connection timed out"
            ));
        }
    };
    let _ = tcp.set_nodelay(true);
    let config = Arc::new(russh::client::Config {
        inactivity_timeout: None,
        keepalive_interval: plan.alive_interval,
        keepalive_max: plan.alive_count_max,
        nodelay: true,
        ..Default::default()
    });
    let refusal = Arc::new(Mutex::new(None));
    let check = HostKeyCheck {
        plan: plan.clone(),
        refusal: Arc::clone(&refusal),
    };
    let handshake = tokio::time::timeout(
        within(timeout),
        russh::client::connect_stream(config, tcp, check),
    )
    .await;
    let refused = || refusal.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut handle = match handshake {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => return failed(refused().unwrap_or_else(|| format!("{destination}: {e}"))),
        Err(_) => {
            return failed(
                refused().unwrap_or_else(|| format!("{destination}: the key exchange timed out")),
            );
        }
    };
    if !authenticate(plan, &mut handle).await {
        return failed(format!(
            "{}@{}: Permission denied (publickey)",
            plan.user, plan.address
        ));
    }
    let channel = match handle.channel_open_session().await {
        Ok(c) => c,
        Err(e) => return failed(format!("{destination}: cannot open a session: {e}")),
    };
    if let Err(e) = channel.exec(false, command).await {
        return failed(format!("{destination}: cannot run the command: {e}"));
    }
    let (mut incoming, outgoing) = channel.split();
    let mut buf = vec![0u8; 32 * 1024];
    let mut input_open = true;
    let mut status = None;
    loop {
        tokio::select! {
            read = from_launcher.read(&mut buf), if input_open => match read {
                Ok(0) | Err(_) => {
                    input_open = false;
                    let _ = outgoing.eof().await;
                }
                Ok(n) => {
                    if outgoing.data(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            },
            msg = incoming.wait() => match msg {
                Some(ChannelMsg::Data { data }) => {
                    // A launcher that stopped reading ends the session, as a closed pipe
                    // ends an OpenSSH client.
                    if to_launcher.write_all(&data).await.is_err() {
                        return Outcome::Ended;
                    }
                }
                Some(ChannelMsg::ExitStatus { exit_status }) => status = Some(exit_status),
                Some(_) => {}
                None => break,
            },
        }
    }
    let _ = handle
        .disconnect(russh::Disconnect::ByApplication, "", "")
        .await;
    match status {
        Some(code) => Outcome::Exited(code),
        None => failed(format!("the connection to {destination} ended")),
    }
}

/// Public key authentication with the plan's identities in turn (those that exist and need
/// no passphrase).
async fn authenticate(
    plan: &BuiltinPlan,
    handle: &mut russh::client::Handle<HostKeyCheck>,
) -> bool {
    for path in &plan.identities {
        if !path.exists() {
            continue;
        }
        let key = match russh::keys::load_secret_key(path, None) {
            Ok(k) => k,
            Err(e) => {
                tracing::debug!(host = %plan.host, "identity {}: {e}", path.display());
                continue;
            }
        };
        let hash = if key.algorithm().is_rsa() {
            handle
                .best_supported_rsa_hash()
                .await
                .ok()
                .flatten()
                .flatten()
        } else {
            None
        };
        let answer = handle
            .authenticate_publickey(
                plan.user.clone(),
                PrivateKeyWithHashAlg::new(Arc::new(key), hash),
            )
            .await;
        match answer {
            Ok(result) if result.success() => return true,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(host = %plan.host, "identity {}: {e}", path.display());
                return false;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    fn plan(list: &[&str]) -> Result<BuiltinPlan, String> {
        let home = tempfile::tempdir().expect("tempdir");
        BuiltinPlan::from_words("n1", "10.0.0.1", &words(list), home.path(), "root")
    }

    #[test]
    fn the_first_value_of_a_setting_wins_as_in_openssh() {
        let p = plan(&[
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=15",
            "-p",
            "2222",
            "-l",
            "sge",
            "-F",
            "/dev/null",
            "-i",
            "/k1",
            "-oIdentityFile=/k2",
            "-o",
            "UserKnownHostsFile=/kh /kh2",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "Port 22",
            "-q",
        ])
        .expect("honoured");
        assert_eq!(p.port, 2222);
        assert_eq!(p.user, "sge");
        assert_eq!(p.connect_timeout, Duration::from_secs(10));
        assert_eq!(p.alive_interval, Some(Duration::from_secs(15)));
        assert_eq!(p.identities, [PathBuf::from("/k1"), PathBuf::from("/k2")]);
        assert_eq!(
            p.user_known_hosts,
            [PathBuf::from("/kh"), PathBuf::from("/kh2")]
        );
        assert_eq!(p.strictness, Strictness::AcceptNew);
        assert_eq!(p.known_as(), "[10.0.0.1]:2222");
    }

    #[test]
    fn what_the_builtin_client_cannot_honour_goes_to_openssh() {
        for list in [
            &["-J", "gw"][..],
            &["-o", "ProxyCommand=nc %h %p"],
            &["-o", "ProxyJump gw"],
            &["-F", "/etc/ssh/special"],
            &["-o", "AddressFamily=inet"],
            &["-4"],
            &["-i", "~/.ssh/id_%h"],
            &["-o", "StrictHostKeyChecking=maybe"],
        ] {
            assert!(plan(list).is_err(), "{list:?} honoured");
        }
        let home = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(home.path().join(".ssh")).expect("mkdir");
        std::fs::write(home.path().join(".ssh/config"), "# nothing\n\n").expect("write");
        let p = BuiltinPlan::from_words("n1", "n1", &[], home.path(), "me").expect("comments only");
        assert_eq!(p.identities[0], home.path().join(".ssh/id_ed25519"));
        assert_eq!(p.user, "me");
        std::fs::write(home.path().join(".ssh/config"), "Host n*\n  User x\n").expect("write");
        let why =
            BuiltinPlan::from_words("n1", "n1", &[], home.path(), "me").expect_err("a Host block");
        assert!(why.contains(".ssh/config"), "{why}");
        // `-F /dev/null`: OpenSSH reads no configuration file, nor does the builtin client.
        BuiltinPlan::from_words("n1", "n1", &words(&["-F", "/dev/null"]), home.path(), "me")
            .expect("no configuration");
    }

    #[test]
    fn known_hosts_names_match_plainly_by_wildcard_negation_and_hash() {
        assert!(hosts_match("a,b", "b"));
        assert!(hosts_match("*.cluster", "n1.cluster"));
        assert!(!hosts_match("*.cluster,!n1.cluster", "n1.cluster"));
        assert!(hosts_match("[10.0.0.?]:2222", "[10.0.0.7]:2222"));
        assert!(!hosts_match("10.0.0.7", "[10.0.0.7]:2222"));
        // `ssh-keygen -H` of "n1" with this salt.
        let salt = [7u8; 20];
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &salt);
        let tag = ring::hmac::sign(&key, b"n1");
        let field = format!(
            "|1|{}|{}",
            data_encoding::BASE64.encode(&salt),
            data_encoding::BASE64.encode(tag.as_ref())
        );
        assert!(hosts_match(&field, "n1"));
        assert!(!hosts_match(&field, "n2"));
    }

    #[test]
    fn a_host_key_is_known_unknown_changed_or_revoked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = "AAAAC3NzaC1lZDI1NTE5AAAAIBE1Lk8pXu4GwLuXttANV6z6Qc8aVXE9wOMEBcmxNeX3";
        let b = "AAAAC3NzaC1lZDI1NTE5AAAAICH3/l9kUoXBR3pgxcF0dQTR3Y5Uffc7Y7yT6gPMrzZg";
        let key = russh::keys::parse_public_key_base64(a).expect("key");
        let file = dir.path().join("known_hosts");
        let files = [file.clone()];
        std::fs::write(&file, format!("# c\nother ssh-ed25519 {a}\n")).expect("write");
        assert_eq!(check_host_key(&files, "n1", &key), HostKeyVerdict::Unknown);
        std::fs::write(&file, format!("n1,n2 ssh-ed25519 {b}\n")).expect("write");
        assert_eq!(
            check_host_key(&files, "n1", &key),
            HostKeyVerdict::Changed(file.clone(), 1)
        );
        std::fs::write(
            &file,
            format!("n1 ssh-ed25519 {b}\nn*  ssh-ed25519 {a} c\n"),
        )
        .expect("w");
        assert_eq!(check_host_key(&files, "n1", &key), HostKeyVerdict::Known);
        std::fs::write(
            &file,
            format!("n1 ssh-ed25519 {a}\n@revoked * ssh-ed25519 {a}\n"),
        )
        .expect("write");
        assert_eq!(
            check_host_key(&files, "n1", &key),
            HostKeyVerdict::Revoked(file.clone(), 2)
        );
    }
}
