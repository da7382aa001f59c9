//! A real OpenSSH server on 127.0.0.1 for launch tests: its own host key, an authorized client
//! key, a free port, started with `sshd -D` as our child and stopped by its PID.
//!
//! As root it can log in as root or any test user; as anyone else only as that user.
//! [`Sshd::start`] returns `None` (and the test says SKIPPED) when `/usr/sbin/sshd` or
//! `ssh-keygen` is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    /// The client's private key.
    pub client_key: PathBuf,
    pub known_hosts: PathBuf,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A new ed25519 key pair at `path` (and `path.pub`), without a passphrase.
pub fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "gridspool-test",
            "-f",
        ])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(status.success(), "ssh-keygen failed");
}

/// An empty directory that test sessions get as `HOME` (sshd's `SetEnv`), so that the remote
/// shell reads none of the logging-in user's start-up files: root's `.bashrc` on the
/// reference machine runs `pyenv init`, whose `rehash` takes a lock file in root's home; a
/// session killed in the middle of it (a test stopping its hosts) left the lock behind, and
/// every later root session then waited 60 s for it, longer than a start server may take to
/// answer. The shepherd takes the job's `HOME` from the password database, not from here.
pub fn session_home(dir: &Path) -> PathBuf {
    let home = dir.join("session-home");
    let _ = std::fs::create_dir_all(&home);
    super::set_mode(&home, 0o755);
    home
}

/// `ssh` options that use only this key and these known hosts, whatever the user's config.
pub fn client_options(key: &Path, known_hosts: &Path) -> Vec<String> {
    vec![
        "-F".into(),
        "/dev/null".into(),
        "-i".into(),
        key.display().to_string(),
        "-o".into(),
        "IdentitiesOnly=yes".into(),
        "-o".into(),
        format!("UserKnownHostsFile={}", known_hosts.display()),
        "-o".into(),
        "StrictHostKeyChecking=yes".into(),
    ]
}

impl Sshd {
    pub fn start(test: &str) -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            super::skip(
                test,
                "sshd is not installed (apt-get install openssh-server)",
            );
            return None;
        }
        if Command::new("ssh-keygen").arg("-?").output().is_err() {
            super::skip(test, "ssh-keygen is not installed (openssh-client)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("gridspool-sshd")
            .tempdir()
            .expect("tempdir");
        // The server reads authorized_keys as the logging-in user.
        super::set_mode(dir.path(), 0o755);
        let host_key = dir.path().join("host_ed25519");
        let client_key = dir.path().join("client_ed25519");
        keygen(&host_key);
        keygen(&client_key);
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(client_key.with_extension("pub"), &authorized).expect("authorized_keys");
        super::set_mode(&authorized, 0o644);
        let port = free_port();
        let host_pub = std::fs::read_to_string(host_key.with_extension("pub")).expect("host pub");
        let known_hosts = dir.path().join("known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_pub}")).expect("known");
        let config = dir.path().join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nStrictModes no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nUsePAM {pam}\nMaxSessions 30\nMaxStartups 50\n\
                 LogLevel ERROR\nSetEnv HOME={home}\n",
                home = session_home(dir.path()).display(),
                hk = host_key.display(),
                pid = dir.path().join("sshd.pid").display(),
                ak = authorized.display(),
                // Without PAM sshd refuses accounts whose password is locked, as `useradd`
                // leaves the test users; PAM needs root.
                pam = if super::is_root() { "yes" } else { "no" },
            ),
        )
        .expect("sshd_config");
        if super::is_root() {
            // Privilege separation needs it; Debian creates it at service start only.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let log = std::fs::File::create(dir.path().join("sshd.log")).expect("log");
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn sshd");
        let sshd = Sshd {
            child,
            port,
            dir,
            client_key,
            known_hosts,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd did not listen: {}",
                sshd.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(sshd)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// The `ssh` options a host entry needs to reach this server without any user config.
    pub fn client_options(&self) -> Vec<String> {
        client_options(&self.client_key, &self.known_hosts)
    }
}

impl Drop for Sshd {
    /// Ends the connections too: each is a child process of the listening sshd that would
    /// outlive it, and keep alive the ssh ControlMaster at its other end (a `-N` master does
    /// not end by itself; a test that SIGKILLs `sched_d` leaves its master behind).
    fn drop(&mut self) {
        let listener = self.child.id();
        let connections: Vec<u32> = std::fs::read_dir("/proc")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter(|&pid| super::parent_of(pid) == Some(listener))
                    .collect()
            })
            .unwrap_or_default();
        for pid in connections.into_iter().chain([listener]) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let _ = self.child.wait();
    }
}
