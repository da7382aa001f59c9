//! Each task in a control group of its own, where the execution host has them: memory limits
//! that hold for the job as a whole, a kill that reaches every process of the job, and
//! usage counted by the kernel.
//!
//! # What a task gets
//!
//! - **Membership**: `<unified>/<parent>/<job>.<task>` in the cgroup v2 hierarchy (a pe task's
//!   name has its id after it). The supervisor enters it just before it forks the job and
//!   leaves right after, so the job is born inside it and nothing it starts gets out (a
//!   process cannot leave a cgroup it may not write), while the supervisor is outside what
//!   it kills.
//! - **Memory**: the smallest of the task's `h_vmem`, `h_rss` and `mem_free` (per slot, times
//!   the slots on the host, as the rlimits) becomes `memory.max` with `memory.swap.max` 0 — or,
//!   on a host whose memory controller is still on cgroup v1 (hybrid hierarchies),
//!   `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` of a v1 group of the same
//!   name. The rlimits stay as SGE sets them (`h_vmem` is each process's `RLIMIT_AS`: an
//!   allocation beyond it fails), so the cgroup limit is what SGE never had: a bound on the
//!   job's processes *together*, and teeth for `h_rss` (Linux ignores `RLIMIT_RSS`). It
//!   counts memory in use (resident and page cache that cannot be reclaimed), not address
//!   space. A job the kernel's OOM killer ended inside its group is accounted as SGE
//!   accounts a job killed for its limits: `failed 100`, `exit_status 137`, `maxvmem` at
//!   least the group's peak.
//! - **Devices**: the files of the host's devices the task was not granted
//!   (`hosts[].device_files`) are denied (`devices.deny` of a v1 group of the same name, where
//!   the host has the v1 `devices` controller; v2 has device control only as eBPF programs,
//!   which gridspool does not load).
//! - **CPU**: with `cpu_quota`, `cpu.max` (or v1 `cpu.cfs_quota_us`) of the task's slots on
//!   the host, in whole CPUs.
//! - **Kill**: `cgroup.kill`, every process of the group at once (including those that left
//!   the job's process group or session); before kernel 5.14, each pid of `cgroup.procs`.
//! - **Usage**: `cpu.stat` (user and system time of every process that ran in the group, also
//!   those nobody waited for), and the memory peak.
//!
//! # When
//!
//! The host's `cgroups` setting (`auto` by default) and what the shepherd finds: a cgroup v2
//! mount in `/proc/self/mountinfo` whose `<parent>` it may create and write (root), else
//! nothing, and the task runs as before, with its rlimits alone. `describe` says which mode a
//! host is in; the launcher logs it when it reaches the host.

use super::LaunchError;
use crate::config::CgroupPolicy;
use std::path::{Path, PathBuf};

/// The cgroup hierarchies mounted on this host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Hierarchies {
    unified: Option<PathBuf>,
    memory_v1: Option<PathBuf>,
    cpu_v1: Option<PathBuf>,
    devices_v1: Option<PathBuf>,
}

impl Hierarchies {
    /// From `/proc/self/mountinfo`: the mount point (field 5) of each `cgroup2` file system,
    /// and of the v1 ones whose super options name `memory` or `cpu`.
    fn parse(mountinfo: &str) -> Self {
        let mut found = Hierarchies::default();
        for line in mountinfo.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(point) = left.split(' ').nth(4) else {
                continue;
            };
            let mut right = right.split(' ');
            let (fstype, options) = (right.next(), right.nth(1).unwrap_or(""));
            let point = PathBuf::from(unescape_octal(point));
            match fstype {
                Some("cgroup2") if found.unified.is_none() => found.unified = Some(point),
                Some("cgroup") => {
                    let has = |c: &str| options.split(',').any(|o| o == c);
                    if has("memory") && found.memory_v1.is_none() {
                        found.memory_v1 = Some(point.clone());
                    }
                    if has("cpu") && found.cpu_v1.is_none() {
                        found.cpu_v1 = Some(point.clone());
                    }
                    if has("devices") && found.devices_v1.is_none() {
                        found.devices_v1 = Some(point);
                    }
                }
                _ => {}
            }
        }
        found
    }

    fn of_this_host() -> Self {
        std::fs::read_to_string("/proc/self/mountinfo")
            .map(|t| Self::parse(&t))
            .unwrap_or_default()
    }
}

/// `\040` (a blank) and the like in mountinfo's paths.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's group in a hierarchy, from `/proc/self/cgroup`: `0::/path` for v2, or the
/// line whose controllers include `controller` for v1.
fn own_group(controller: Option<&str>) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        matches.then(|| path.to_string())
    })
}

fn write(path: &Path, value: &str) -> Result<(), LaunchError> {
    std::fs::write(path, value).map_err(|e| LaunchError::io("write", path, e))
}

/// A group's directory, made if missing; `None` when it cannot be made.
fn make_group(root: &Path, relative: &str) -> Option<PathBuf> {
    let dir = root.join(relative.trim_start_matches('/'));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

/// Turns `controllers` on for the children of every group from `root` down to `dir`
/// (`cgroup.subtree_control`), where they are available; what cannot be turned on stays off.
fn delegate(root: &Path, dir: &Path, controllers: &[&str]) {
    let Ok(rest) = dir.strip_prefix(root) else {
        return;
    };
    let mut at = root.to_path_buf();
    let mut levels = vec![at.clone()];
    for part in rest.components() {
        at.push(part);
        levels.push(at.clone());
    }
    for level in levels {
        let available =
            std::fs::read_to_string(level.join("cgroup.controllers")).unwrap_or_default();
        let enabled =
            std::fs::read_to_string(level.join("cgroup.subtree_control")).unwrap_or_default();
        for c in controllers {
            let there = |t: &str| t.split_whitespace().any(|x| x == *c);
            if there(&available) && !there(&enabled) {
                let _ = std::fs::write(level.join("cgroup.subtree_control"), format!("+{c}"));
            }
        }
    }
}

/// How this host would confine tasks under `policy`: `cgroups v2`, with which controllers
/// and which ones from v1, or why not at all.
pub fn describe(policy: Option<&CgroupPolicy>) -> String {
    let Some(policy) = policy else {
        return "rlimits only (cgroups off in the configuration)".into();
    };
    let h = Hierarchies::of_this_host();
    let Some(unified) = &h.unified else {
        return "rlimits only (no cgroup v2 hierarchy mounted)".into();
    };
    let parent = unified.join(&policy.parent);
    if std::fs::create_dir_all(&parent).is_err()
        || std::fs::metadata(parent.join("cgroup.procs"))
            .map(|m| m.permissions().readonly())
            .unwrap_or(true)
    {
        return format!("rlimits only (cannot create {})", parent.display());
    }
    delegate(unified, &parent, &["memory", "cpu"]);
    let controllers =
        std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    let memory = if has("memory") {
        "memory"
    } else if h.memory_v1.is_some() {
        "memory from v1"
    } else {
        "no memory controller"
    };
    let devices = if h.devices_v1.is_some() {
        "devices from v1"
    } else {
        "devices not denied"
    };
    format!("cgroups v2 at {} ({memory}, {devices})", parent.display())
}

/// The group of a cell's tasks under the parent: `<cell>.<hash of $SGE_ROOT>` (`default.
/// 1f3a09c2`), as job ids are a cell's own and two cells may share hosts.
pub fn cell_group(sge_root: &str, sge_cell: &str) -> String {
    format!("{sge_cell}.{:08x}", stable_hash(sge_root))
}

/// FNV-1a of `text`: stable across builds and machines, unlike std's hasher.
pub fn stable_hash(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// A task's groups, made before its job starts and removed after it ended.
#[derive(Debug, Default)]
pub struct TaskCgroup {
    /// The task's v2 group, and the group the supervisor came from (it returns there).
    v2: Option<PathBuf>,
    v2_home: Option<PathBuf>,
    /// v1 groups (memory, cpu) when their controller is not on v2, each with its home.
    v1: Vec<(PathBuf, PathBuf)>,
    /// The memory limit is on the v2 group, else on this v1 group.
    memory_v2: bool,
    memory_v1: Option<PathBuf>,
}

impl TaskCgroup {
    /// Makes the groups of task `name` of the cell `cell` (see [`cell_group`]) with
    /// `memory_limit` (bytes), `cpus` (the slots, for `cpu_quota`) and the device files it
    /// may not open (`denied`). `None` when this host has no cgroup v2 hierarchy that can be
    /// used: the task runs without.
    pub fn create(
        policy: &CgroupPolicy,
        cell: &str,
        name: &str,
        memory_limit: Option<u64>,
        cpus: u32,
        denied: &[String],
    ) -> Option<TaskCgroup> {
        let h = Hierarchies::of_this_host();
        let unified = h.unified.as_ref()?;
        let parent_name = format!("{}/{cell}", policy.parent);
        let parent = make_group(unified, &parent_name)?;
        delegate(unified, &parent, &["memory", "cpu"]);
        let dir = parent.join(name);
        // What an earlier run of the task left (its processes are gone: the task is not
        // running, or the launcher would not start it).
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).ok()?;
        let home = own_group(None).map(|g| unified.join(g.trim_start_matches('/')))?;
        let mut group = TaskCgroup {
            v2: Some(dir.clone()),
            v2_home: Some(home),
            ..TaskCgroup::default()
        };
        if let Some(limit) = memory_limit {
            if dir.join("memory.max").exists() {
                group.memory_v2 = write(&dir.join("memory.max"), &limit.to_string()).is_ok();
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
            } else if let Some(root) = &h.memory_v1
                && let Some(v1) = group.v1_group(root, &parent_name, name, "memory")
                && write(&v1.join("memory.limit_in_bytes"), &limit.to_string()).is_ok()
            {
                let _ = std::fs::write(v1.join("memory.memsw.limit_in_bytes"), limit.to_string());
                group.memory_v1 = Some(v1);
            }
        }
        // Device control is v1's `devices.deny` (cgroup v2 has it only as eBPF programs,
        // which gridspool does not load).
        let rules: Vec<String> = denied.iter().filter_map(|f| device_rule(f)).collect();
        if !rules.is_empty()
            && let Some(root) = &h.devices_v1
            && let Some(v1) = group.v1_group(root, &parent_name, name, "devices")
        {
            for rule in rules {
                let _ = write(&v1.join("devices.deny"), &rule);
            }
        }
        if policy.cpu_quota {
            let period = 100_000u64;
            let quota = period * u64::from(cpus.max(1));
            if dir.join("cpu.max").exists() {
                let _ = write(&dir.join("cpu.max"), &format!("{quota} {period}"));
            } else if let Some(root) = &h.cpu_v1
                && let Some(v1) = group.v1_group(root, &parent_name, name, "cpu")
            {
                let _ = write(&v1.join("cpu.cfs_period_us"), &period.to_string());
                let _ = write(&v1.join("cpu.cfs_quota_us"), &quota.to_string());
            }
        }
        Some(group)
    }

    /// A v1 group `<root>/<parent>/<name>` for `controller`, remembered with the group the
    /// supervisor is in there.
    fn v1_group(
        &mut self,
        root: &Path,
        parent: &str,
        name: &str,
        controller: &str,
    ) -> Option<PathBuf> {
        let dir = make_group(root, parent)?.join(name);
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).ok()?;
        let home = own_group(Some(controller)).map_or_else(
            || root.to_path_buf(),
            |g| root.join(g.trim_start_matches('/')),
        );
        self.v1.push((dir.clone(), home));
        Some(dir)
    }

    fn groups(&self) -> impl Iterator<Item = (&PathBuf, &PathBuf)> {
        self.v2
            .iter()
            .zip(self.v2_home.iter())
            .chain(self.v1.iter().map(|(d, h)| (d, h)))
    }

    /// The task's group when it is a cgroup v2 group only (no v1 group of a hybrid host):
    /// its directory, open, for a child to be born in (`spawn::spawn_into`).
    pub fn v2_only(&self) -> Option<std::fs::File> {
        if !self.v1.is_empty() {
            return None;
        }
        std::fs::File::open(self.v2.as_ref()?).ok()
    }

    /// Moves this process into the task's groups: what it forks now is born there.
    pub fn enter(&self) -> Result<(), LaunchError> {
        for (group, _) in self.groups() {
            write(&group.join("cgroup.procs"), "0")?;
        }
        Ok(())
    }

    /// Moves this process back to where it came from.
    pub fn leave(&self) {
        for (_, home) in self.groups() {
            let _ = std::fs::write(home.join("cgroup.procs"), "0");
        }
    }

    /// Kills every process in the task's groups.
    pub fn kill_all(&self) {
        if let Some(dir) = &self.v2
            && std::fs::write(dir.join("cgroup.kill"), "1").is_ok()
        {
            return;
        }
        for (group, _) in self.groups() {
            for pid in pids(group) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }

    /// User and system seconds of every process that ran in the group (`cpu.stat`).
    pub fn cpu_seconds(&self) -> Option<(f64, f64)> {
        let stat = std::fs::read_to_string(self.v2.as_ref()?.join("cpu.stat")).ok()?;
        let field = |name: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        };
        Some((field("user_usec")? / 1e6, field("system_usec")? / 1e6))
    }

    /// The most memory the group held, in bytes.
    pub fn memory_peak(&self) -> Option<u64> {
        let read = |p: PathBuf| std::fs::read_to_string(p).ok()?.trim().parse().ok();
        match (&self.v2, &self.memory_v1) {
            (Some(dir), _) if self.memory_v2 => read(dir.join("memory.peak")),
            (_, Some(v1)) => read(v1.join("memory.max_usage_in_bytes")),
            _ => None,
        }
    }

    /// The kernel's OOM killer killed a process of the group at its memory limit.
    pub fn oom_killed(&self) -> bool {
        let count = |text: String| {
            text.lines()
                .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        match (&self.v2, &self.memory_v1) {
            (Some(dir), _) if self.memory_v2 => {
                std::fs::read_to_string(dir.join("memory.events")).is_ok_and(|t| count(t) > 0)
            }
            (_, Some(v1)) => {
                std::fs::read_to_string(v1.join("memory.oom_control")).is_ok_and(|t| count(t) > 0)
            }
            _ => false,
        }
    }

    /// Removes the groups (once empty; a group with a process left cannot go, and stays for
    /// the next run of the task to remove).
    pub fn remove(&self) {
        for (group, _) in self.groups() {
            for _ in 0..50 {
                match std::fs::remove_dir(group) {
                    Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    _ => break,
                }
            }
        }
    }
}

/// `c 195:1 rwm` for a character device file (`b` for a block device); `None` for anything
/// else (a missing file: nothing to deny).
fn device_rule(file: &str) -> Option<String> {
    use nix::sys::stat::{SFlag, major, minor, stat};
    let st = stat(file).ok()?;
    let kind = match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFCHR => 'c',
        SFlag::S_IFBLK => 'b',
        _ => return None,
    };
    Some(format!(
        "{kind} {}:{} rwm",
        major(st.st_rdev),
        minor(st.st_rdev)
    ))
}

fn pids(group: &Path) -> Vec<i32> {
    std::fs::read_to_string(group.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hierarchies_are_read_from_mountinfo_pure_and_hybrid() {
        let pure = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        assert_eq!(
            Hierarchies::parse(pure),
            Hierarchies {
                unified: Some("/sys/fs/cgroup".into()),
                ..Hierarchies::default()
            }
        );
        let hybrid = "\
25 24 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
29 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
31 25 0:29 / /sys/fs/cgroup/my\\040pids rw - cgroup cgroup rw,pids
";
        assert_eq!(
            Hierarchies::parse(hybrid),
            Hierarchies {
                unified: Some("/sys/fs/cgroup/unified".into()),
                memory_v1: Some("/sys/fs/cgroup/memory".into()),
                cpu_v1: Some("/sys/fs/cgroup/cpu,cpuacct".into()),
                devices_v1: None,
            }
        );
        assert_eq!(unescape_octal("a\\040b"), "a b");
    }
}
