//! A cluster of execution hosts on this one machine, for tests (and benchmarks) of what crosses
//! a network: each host is its own network namespace with a veth into a bridge of the root
//! namespace, its own address, and its own `sshd` on port 22 of that address with a host key of
//! its own, run in a UTS namespace of its own so that `hostname` there is the host's name. The
//! file system is the machine's, shared as NFS would share `/home` and the cell, so `sched_d`
//! (in the root namespace) reaches each host by ssh exactly as on a real cluster and finds the
//! shepherd at the same path there.
//!
//! Addresses are `10.231.K.0/24` (the root namespace's bridge is `.1`, host `i` is `.10+i`;
//! hosts past the 240th go on in `10.232.K.0/24` and so on, the bridge holding `.1` of each),
//! used only on these veths: traffic stays between this machine's namespaces. Hosts resolve by
//! the addresses in the gridspool host configuration ([`Cluster::hosts_yaml`]), not through
//! `/etc/hosts`. `K` is the first bridge number free on the machine (`ip link add` is the
//! atomic claim), so several clusters, of one test process or several, coexist.
//!
//! Everything is removed when the [`Cluster`] is dropped (also when its test panics); what a
//! killed test process left (namespaces named `gridspool-<pid>-…` whose process is gone, and
//! their bridge) is removed by the next [`Cluster::start`]. [`Cluster::start`] returns `None`,
//! and the test says SKIPPED, when not root or when `ip`, `unshare` or `sshd` is missing.

use super::sshd::{SSHD, keygen};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One execution host of the cluster.
pub struct ClusterHost {
    /// Its name: the UTS name inside it and its name in the gridspool configuration.
    pub name: String,
    pub address: String,
    /// Its network namespace (`ip netns exec NAME …`).
    pub netns: String,
}

/// A running cluster; see the module documentation.
pub struct Cluster {
    pub hosts: Vec<ClusterHost>,
    /// The bridge's number `K` (addresses `10.231.K.0/24`).
    pub net: u8,
    bridge: String,
    dir: tempfile::TempDir,
    client_key: PathBuf,
    known_hosts: PathBuf,
}

const NETNS_PREFIX: &str = "gridspool-";

/// Hosts per `/24` (addresses `.10` to `.249`).
const HOSTS_PER_NET: usize = 240;

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    run(Command::new("ip").args(args))
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The processes of a network namespace.
fn netns_pids(netns: &str) -> Vec<i32> {
    Command::new("ip")
        .args(["netns", "pids", netns])
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Kills every process of a network namespace (again, until none is left: a dying
/// supervisor's children are reparented, not killed).
fn kill_netns_processes(netns: &str) {
    for _ in 0..20 {
        let pids = netns_pids(netns);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills every process of a network namespace and deletes it.
fn remove_netns(netns: &str) {
    kill_netns_processes(netns);
    let _ = ip(&["netns", "del", netns]);
}

/// Removes what killed test processes left: their namespaces (named after their pid) and the
/// bridges those were attached to.
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        // gridspool-<pid>-<K>-<i>
        let Some(rest) = name.strip_prefix(NETNS_PREFIX) else {
            continue;
        };
        let mut parts = rest.split('-');
        let (Some(pid), Some(net)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        remove_netns(name);
        let _ = ip(&["link", "del", &format!("gs{net}br")]);
    }
}

impl Cluster {
    /// Builds `n` hosts named `node01`, `node02`, … (at most 960).
    pub fn start(test: &str, n: usize) -> Option<Cluster> {
        if !super::is_root() {
            super::skip(test, "needs root for network and UTS namespaces");
            return None;
        }
        for program in ["ip", "unshare", "ssh-keygen"] {
            if !have(program) {
                super::skip(test, &format!("{program} is not installed"));
                return None;
            }
        }
        if !Path::new(SSHD).exists() {
            super::skip(
                test,
                "sshd is not installed (apt-get install openssh-server)",
            );
            return None;
        }
        assert!(n <= 4 * HOSTS_PER_NET, "at most 960 hosts");
        remove_stale();
        // Claim a bridge number: the first `ip link add` that succeeds.
        let (net, bridge) = (1u8..=250)
            .find_map(|k| {
                let bridge = format!("gs{k}br");
                ip(&["link", "add", &bridge, "type", "bridge"])
                    .ok()
                    .map(|()| (k, bridge))
            })
            .expect("a free bridge number");
        // The bridge is the claim: veths of that number are what a dead cluster left behind
        // (a namespace's teardown is asynchronous and may not have taken its pair along).
        remove_links(&format!("gs{net}v"));
        let dir = tempfile::Builder::new()
            .prefix("gridspool-cluster")
            .tempdir()
            .expect("tempdir");
        super::set_mode(dir.path(), 0o755);
        let mut cluster = Cluster {
            hosts: Vec::new(),
            net,
            bridge,
            client_key: dir.path().join("client_ed25519"),
            known_hosts: dir.path().join("known_hosts"),
            dir,
        };
        if let Err(e) = cluster.build(n) {
            panic!("building the cluster: {e}");
        }
        Some(cluster)
    }

    fn build(&mut self, n: usize) -> Result<(), String> {
        let net = self.net;
        for block in 0..n.div_ceil(HOSTS_PER_NET).max(1) {
            ip(&[
                "addr",
                "add",
                &format!("10.{}.{net}.1/24", 231 + block),
                "dev",
                &self.bridge,
            ])?;
        }
        ip(&["link", "set", &self.bridge, "up"])?;
        keygen(&self.client_key);
        let authorized = self.dir.path().join("authorized_keys");
        std::fs::copy(self.client_key.with_extension("pub"), &authorized)
            .map_err(|e| e.to_string())?;
        super::set_mode(&authorized, 0o644);
        // Privilege separation needs it; Debian creates it at service start only.
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut known = String::new();
        for i in 0..n {
            let host = ClusterHost {
                name: format!("node{:02}", i + 1),
                address: format!(
                    "10.{}.{net}.{}",
                    231 + i / HOSTS_PER_NET,
                    10 + i % HOSTS_PER_NET
                ),
                netns: format!("{NETNS_PREFIX}{}-{net}-{i}", std::process::id()),
            };
            // Registered first, so that a failure below still removes it.
            self.hosts.push(host);
            let host = self.hosts.last().expect("host");
            let (outer, inner) = (format!("gs{net}v{i}"), format!("gs{net}p{i}"));
            ip(&["netns", "add", &host.netns])?;
            ip(&[
                "link",
                "add",
                &outer,
                "type",
                "veth",
                "peer",
                "name",
                &inner,
                "netns",
                &host.netns,
            ])?;
            ip(&["link", "set", &outer, "master", &self.bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &host.netns, "ip"];
                all.extend_from_slice(args);
                ip(&all)
            };
            inside(&["link", "set", "lo", "up"])?;
            inside(&["link", "set", &inner, "name", "eth0"])?;
            inside(&[
                "addr",
                "add",
                &format!("{}/24", host.address),
                "dev",
                "eth0",
            ])?;
            inside(&["link", "set", "eth0", "up"])?;
            let host_key = self.dir.path().join(format!("host_{}", host.name));
            keygen(&host_key);
            let host_pub = std::fs::read_to_string(host_key.with_extension("pub"))
                .map_err(|e| e.to_string())?;
            known.push_str(&format!("{} {host_pub}", host.address));
            let config = self.dir.path().join(format!("sshd_config_{}", host.name));
            std::fs::write(
                &config,
                format!(
                    "ListenAddress {addr}:22\nHostKey {hk}\nPidFile none\nAuthorizedKeysFile {ak}\n\
                     StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM yes\n\
                     MaxSessions 30\nMaxStartups 50\nLogLevel ERROR\nSetEnv HOME={home}\n",
                    home = super::sshd::session_home(self.dir.path()).display(),
                    addr = host.address,
                    hk = host_key.display(),
                    ak = authorized.display(),
                ),
            )
            .map_err(|e| e.to_string())?;
            self.spawn_sshd(i)?;
        }
        std::fs::write(&self.known_hosts, known).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(20);
        for host in &self.hosts {
            let addr: std::net::SocketAddr = format!("{}:22", host.address)
                .parse()
                .map_err(|e| format!("{e}"))?;
            while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
                if Instant::now() > deadline {
                    return Err(format!(
                        "sshd of {} did not listen: {}",
                        host.name,
                        self.sshd_log(&host.name)
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// Starts host `i`'s sshd (again) in its namespaces: a UTS namespace of its own, named
    /// after the host, inherited by every session.
    fn spawn_sshd(&self, i: usize) -> Result<(), String> {
        let host = &self.hosts[i];
        let config = self.dir.path().join(format!("sshd_config_{}", host.name));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("sshd_{}.log", host.name)))
            .map_err(|e| e.to_string())?;
        Command::new("ip")
            .args(["netns", "exec", &host.netns, "unshare", "--uts", "sh", "-c"])
            .arg(format!(
                "hostname {} && exec {SSHD} -D -e -f {}",
                host.name,
                config.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("sshd of {}: {e}", host.name))?;
        Ok(())
    }

    /// Host `i` crashes: every process in its namespace (its sshd, the sessions, the
    /// shepherds and their jobs) is killed at once; its address stays, and answers with
    /// refused connections, as a rebooting host's would.
    pub fn crash(&self, i: usize) {
        kill_netns_processes(&self.hosts[i].netns);
    }

    /// Host `i` is back after a crash: its sshd runs again (waits until it listens).
    pub fn reboot(&self, i: usize) {
        self.spawn_sshd(i).expect("sshd");
        let addr: std::net::SocketAddr = format!("{}:22", self.hosts[i].address)
            .parse()
            .expect("address");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd of {} did not listen",
                self.hosts[i].name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Host `i`'s link goes down (`false`) or up again (`true`): everything on it runs on,
    /// unreachable, as behind a cut cable.
    pub fn set_link(&self, i: usize, up: bool) {
        ip(&[
            "netns",
            "exec",
            &self.hosts[i].netns,
            "ip",
            "link",
            "set",
            "eth0",
            if up { "up" } else { "down" },
        ])
        .expect("ip link set");
    }

    /// How many processes of host `i` have `needle` in their command line.
    pub fn count(&self, i: usize, needle: &str) -> usize {
        netns_pids(&self.hosts[i].netns)
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
            })
            .count()
    }

    /// Whether a process of host `i`'s namespace has `needle` in its command line.
    pub fn runs(&self, i: usize, needle: &str) -> bool {
        netns_pids(&self.hosts[i].netns).into_iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
    }

    /// What a host's sshd wrote (errors only).
    pub fn sshd_log(&self, host: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("sshd_{host}.log")))
            .unwrap_or_default()
    }

    /// The `hosts:` entries of a gridspool configuration for these hosts (`slots` each),
    /// launched over ssh as root (which runs each job as its owner) with this cluster's keys.
    pub fn hosts_yaml(&self, slots: u32) -> String {
        let mut options = super::sshd::client_options(&self.client_key, &self.known_hosts);
        options.extend(["-o".into(), "ConnectTimeout=5".into()]);
        let options = options
            .iter()
            .map(|o| format!("\"{o}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let mut out = String::from("hosts:\n");
        for h in &self.hosts {
            out.push_str(&format!(
                "  - {{name: {}, slots: {slots}, launch: {{method: ssh, address: \"{}\", port: 22, user: root, options: [{options}]}}}}\n",
                h.name, h.address
            ));
        }
        out
    }

    /// [`Cluster::hosts_yaml`] for the hosts `which` only.
    pub fn hosts_yaml_of(&self, which: &[usize], slots: u32) -> String {
        let names: Vec<&str> = which.iter().map(|&i| self.hosts[i].name.as_str()).collect();
        self.hosts_yaml(slots)
            .lines()
            .filter(|l| {
                !l.starts_with("  - ") || names.iter().any(|n| l.contains(&format!("{{name: {n},")))
            })
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// A command prefix that runs a program on host `i`: in its network namespace and in a
    /// UTS namespace of its own named after it (as a master host's daemon would run there).
    pub fn on_host(&self, i: usize) -> Vec<String> {
        let h = &self.hosts[i];
        [
            "ip",
            "netns",
            "exec",
            &h.netns,
            "unshare",
            "--uts",
            "sh",
            "-c",
            &format!("hostname {} && exec \"$0\" \"$@\"", h.name),
        ]
        .map(String::from)
        .to_vec()
    }

    /// The host names, as a YAML flow list.
    pub fn names_yaml(&self) -> String {
        let names: Vec<&str> = self.hosts.iter().map(|h| h.name.as_str()).collect();
        format!("[{}]", names.join(", "))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for h in &self.hosts {
            remove_netns(&h.netns);
        }
        // Deleting one end of a veth deletes the pair at once; the namespaces' own teardown
        // would take them along only later.
        remove_links(&format!("gs{}v", self.net));
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// Deletes the links of the root namespace whose names start with `prefix`.
fn remove_links(prefix: &str) {
    let Ok(out) = Command::new("ip").args(["-o", "link", "show"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // "126: gs1v28@if2: <BROADCAST,…"
        let Some(name) = line.split(": ").nth(1) else {
            continue;
        };
        let name = name.split('@').next().unwrap_or(name);
        if name
            .strip_prefix(prefix)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        {
            let _ = ip(&["link", "del", name]);
        }
    }
}
