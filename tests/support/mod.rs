//! The test harness: a temporary cell with the default configuration, commands run against it
//! as a chosen user, and comparison with Grid Engine captures.
//!
//! Golden tests run the commands as `sgeuser` (uid 1001), like the captures were made. As root
//! the harness creates that user (and `sgeuser2`) when missing; as anyone else those tests say
//! they are skipped and pass.

#![allow(dead_code)]

pub mod cluster;
pub mod sshd;

use gridspool::model::{JobId, JobRecord};
use gridspool::spool::Spool;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The users of the captures.
pub const USER1: &str = "sgeuser";
pub const USER2: &str = "sgeuser2";

/// A user the harness can run commands as.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

fn ensure_user(name: &str, uid: u32) -> Option<TestUser> {
    if let Some((uid, gid, home)) = gridspool::identity::user_by_name(name) {
        return Some(TestUser {
            name: name.into(),
            uid,
            gid,
            home: home.into(),
        });
    }
    if !is_root() {
        return None;
    }
    let status = Command::new("useradd")
        .args(["-m", "-u", &uid.to_string(), "-U", "-s", "/bin/bash", name])
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let (uid, gid, home) = gridspool::identity::user_by_name(name)?;
    Some(TestUser {
        name: name.into(),
        uid,
        gid,
        home: home.into(),
    })
}

/// A process's parent (`/proc/<pid>/stat`), `None` once it is gone.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `sgeuser`, created if needed; `None` (test skipped) when that is impossible.
pub fn user1() -> Option<TestUser> {
    static U: OnceLock<Option<TestUser>> = OnceLock::new();
    U.get_or_init(|| ensure_user(USER1, 1001)).clone()
}

/// `sgeuser2`, created if needed.
pub fn user2() -> Option<TestUser> {
    static U: OnceLock<Option<TestUser>> = OnceLock::new();
    U.get_or_init(|| ensure_user(USER2, 1002)).clone()
}

/// Root, when the tests run as root.
pub fn root() -> Option<TestUser> {
    is_root().then(|| TestUser {
        name: "root".into(),
        uid: 0,
        gid: 0,
        home: "/root".into(),
    })
}

/// Says a test is skipped and why, on stderr (visible with `--nocapture` and in CI logs).
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
}

/// The result of running a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl From<std::process::Output> for Run {
    fn from(out: std::process::Output) -> Self {
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }
}

/// A temporary `$SGE_ROOT` with cell `default`, created by `sched_d --init`'s code.
pub struct TestCell {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub cell: PathBuf,
    pub spool: Spool,
}

impl TestCell {
    pub fn new() -> Self {
        Self::with_config(|c| c)
    }

    /// A cell whose default configuration text is first passed through `edit`.
    pub fn with_config(edit: impl FnOnce(String) -> String) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("gridspool-test")
            .tempdir()
            .expect("tempdir");
        // Others must traverse to the cell when commands run as sgeuser.
        set_mode(dir.path(), 0o755);
        let root = dir.path().to_path_buf();
        let cell = root.join("default");
        gridspool::cli::sched_d::init(&cell).expect("init spool");
        let config = std::fs::read_to_string(cell.join("config.yaml")).expect("config");
        // `{{tmpdir}}`: a queue tmpdir of the cell's own. Tests run in parallel, each cell
        // numbering its jobs from 1, and SGE's TMPDIR of job 1's task 1 in all.q is
        // `<tmpdir>/1.1.all.q` in every cell: two such jobs at once in the same /tmp would
        // take each other's (the second then fails to start, `failed 1`).
        let config = edit(config);
        let config = if config.contains("{{tmpdir}}") {
            let tmp = root.join("tmp");
            std::fs::create_dir_all(&tmp).expect("tmpdir");
            set_mode(&tmp, 0o1777);
            config.replace("{{tmpdir}}", &tmp.to_string_lossy())
        } else {
            config
        };
        std::fs::write(cell.join("config.yaml"), config).expect("write config");
        // As root, the cell is laid out as scripts/install-multiuser.sh lays out a shared
        // installation, and the clients run as setgid copies (see `client_path`); otherwise
        // everything runs as the one user there is.
        if let Some(gid) = spool_group() {
            share_like_an_installation(&cell, gid);
        }
        let spool = Spool::open(&cell).expect("open spool");
        TestCell {
            _dir: dir,
            root,
            cell,
            spool,
        }
    }

    /// A working directory for a user inside the cell's root (their "current directory").
    pub fn workdir(&self, user: &TestUser) -> PathBuf {
        let d = self.root.join(format!("work-{}", user.name));
        if !d.exists() {
            std::fs::create_dir_all(&d).expect("workdir");
            let _ = nix::unistd::chown(
                &d,
                Some(nix::unistd::Uid::from_raw(user.uid)),
                Some(nix::unistd::Gid::from_raw(user.gid)),
            );
        }
        d
    }

    /// Writes a file in the user's working directory (readable by everyone).
    pub fn write_file(&self, user: &TestUser, name: &str, content: &str) -> PathBuf {
        let p = self.workdir(user).join(name);
        std::fs::write(&p, content).expect("write file");
        set_mode(&p, 0o755);
        p
    }

    /// Makes the next job id `next`.
    pub fn set_next_job_id(&self, next: u32) {
        let path = self.cell.join("seq/jobid");
        std::fs::write(&path, format!("{}\n", next - 1)).expect("seq");
        // Every client rewrites the counter in place (spool::sequence), as the group does.
        set_mode(&path, 0o660);
    }

    pub fn command(&self, bin: &str, user: &TestUser) -> Command {
        let mut cmd = Command::new(client_path(bin));
        cmd.env_clear()
            .env(
                "PATH",
                "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games",
            )
            .env("HOME", &user.home)
            .env("USER", &user.name)
            .env("LOGNAME", &user.name)
            .env("SHELL", "/bin/bash")
            .env("TERM", "NONE")
            .env("SGE_ROOT", &self.root)
            .env("SGE_CELL", "default")
            .current_dir(self.workdir(user));
        if is_root() && user.uid != 0 {
            // std drops root's supplementary groups when it sets the uid.
            cmd.uid(user.uid).gid(user.gid);
        }
        cmd
    }

    /// Runs `bin args…` as `user`.
    pub fn run(&self, user: &TestUser, bin: &str, args: &[&str]) -> Run {
        self.run_with_stdin(user, bin, args, None)
    }

    pub fn run_with_stdin(
        &self,
        user: &TestUser,
        bin: &str,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Run {
        let mut cmd = self.command(bin, user);
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = spawn_retrying(&mut cmd).unwrap_or_else(|e| panic!("spawn {bin}: {e}"));
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        let out = child.wait_with_output().expect("wait");
        Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        }
    }

    /// The job as the spool holds it now (pending requests applied), also when all its
    /// tasks have ended (the commands treat it as gone; its files stay for a while).
    pub fn job(&self, id: u32) -> Option<JobRecord> {
        let scan = self.spool.scan_jobs().expect("scan");
        scan.get(JobId(id))
            .or_else(|| scan.ended.iter().find(|j| j.id == JobId(id)))
            .cloned()
    }

    /// Overwrites a job's state, as `sched_d` would (to show scheduler-computed values).
    pub fn set_state(&self, job: &JobRecord) {
        self.spool.write_state(job).expect("write state");
    }
}

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The group of the test installation (`gridspool-test`), created when running as root.
fn spool_group() -> Option<u32> {
    static G: OnceLock<Option<u32>> = OnceLock::new();
    *G.get_or_init(|| {
        if !is_root() {
            return None;
        }
        let lookup = || nix::unistd::Group::from_name(TEST_GROUP).ok().flatten();
        if lookup().is_none() {
            let _ = Command::new("groupadd")
                .args(["-f", "--system", TEST_GROUP])
                .status();
        }
        lookup().map(|g| g.gid.as_raw())
    })
}

/// The spool group of the harness's emulated shared installation.
pub const TEST_GROUP: &str = "gridspool-test";

/// Modes and groups of `scripts/install-multiuser.sh`: users reach the spool only through
/// the setgid clients.
fn share_like_an_installation(cell: &Path, gid: u32) {
    use std::os::unix::fs::chown;
    for (sub, mode) in [
        ("", 0o755),
        ("seq", 0o2770),
        ("jobs", 0o3770),
        ("requests", 0o3770),
        ("ars", 0o3770),
        ("daemon", 0o2750),
        ("quarantine", 0o2750),
        ("common", 0o755),
    ] {
        let dir = cell.join(sub);
        chown(&dir, Some(0), Some(gid)).expect("chown cell");
        set_mode(&dir, mode);
    }
}

/// Spawns `cmd`, again while the kernel says `ETXTBSY`: a client copied in by
/// [`client_path`] is briefly still open for writing in the child of another thread's fork,
/// until that child's `exec` closes it (the classic race of writing and running a program in
/// one multi-threaded process; Go's `os/exec` retries the same way).
pub fn spawn_retrying(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(nix::libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// The binary to run for a client: as root, a copy installed setgid to the test group, so
/// that tests exercise exactly what a shared installation runs; otherwise the built binary.
/// The daemon and shepherd run as root and are used as built.
pub fn client_path(bin: &str) -> PathBuf {
    let Some(gid) = spool_group() else {
        return bin_path(bin);
    };
    if bin == "sched_d" {
        return bin_path(bin);
    }
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        remove_dead_client_dirs();
        let d = std::env::temp_dir().join(format!("{CLIENT_DIR_PREFIX}{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("setgid bin dir");
        set_mode(&d, 0o755);
        d
    });
    let target = dir.join(bin);
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !target.exists() {
        let tmp = dir.join(format!(".{bin}.tmp"));
        // Copied by `cp`, not by this process: a file this process held open for writing
        // would be inherited by the children that other threads fork meanwhile, and their
        // `exec` of it would fail with ETXTBSY (see `spawn_retrying`).
        let copied = Command::new("cp")
            .arg(bin_path(bin))
            .arg(&tmp)
            .status()
            .expect("cp");
        assert!(copied.success(), "copy client {bin}");
        std::os::unix::fs::chown(&tmp, Some(0), Some(gid)).expect("chown client");
        set_mode(&tmp, 0o2755);
        std::fs::rename(&tmp, &target).expect("install client");
    }
    target
}

/// The setgid copies live in the temporary directory (which every test user can reach), one
/// directory per test process, named by its pid.
const CLIENT_DIR_PREFIX: &str = "gridspool-test-bin-";

/// Removes the setgid copies of test processes that have ended: a process cannot remove its
/// own at exit (statics are not dropped), and each is as large as the clients.
fn remove_dead_client_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(CLIENT_DIR_PREFIX))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Path of one of the package's binaries, as built.
pub fn bin_path(bin: &str) -> PathBuf {
    let exe = match bin {
        "qsub" => env!("CARGO_BIN_EXE_qsub"),
        "qstat" => env!("CARGO_BIN_EXE_qstat"),
        "qdel" => env!("CARGO_BIN_EXE_qdel"),
        "qalter" => env!("CARGO_BIN_EXE_qalter"),
        "qhold" => env!("CARGO_BIN_EXE_qhold"),
        "qrls" => env!("CARGO_BIN_EXE_qrls"),
        "sched_d" => env!("CARGO_BIN_EXE_sched_d"),
        "qacct" => env!("CARGO_BIN_EXE_qacct"),
        "qhost" => env!("CARGO_BIN_EXE_qhost"),
        "qconf" => env!("CARGO_BIN_EXE_qconf"),
        "qmod" => env!("CARGO_BIN_EXE_qmod"),
        "qselect" => env!("CARGO_BIN_EXE_qselect"),
        "qrsub" => env!("CARGO_BIN_EXE_qrsub"),
        "qrstat" => env!("CARGO_BIN_EXE_qrstat"),
        "qrdel" => env!("CARGO_BIN_EXE_qrdel"),
        "qquota" => env!("CARGO_BIN_EXE_qquota"),
        "qrsh" => env!("CARGO_BIN_EXE_qrsh"),
        "qlogin" => env!("CARGO_BIN_EXE_qlogin"),
        "qsh" => env!("CARGO_BIN_EXE_qsh"),
        "gridspool-sim" => env!("CARGO_BIN_EXE_gridspool-sim"),
        other => panic!("unknown binary {other}"),
    };
    PathBuf::from(exe)
}

/// A capture of the real SGE 8.1.9 (`tests/compat/<command>/<case>.txt`, copied from the
/// oracle's `sge-captures/`): the command line, stdout, stderr and exit code.
#[derive(Debug, Clone)]
pub struct Capture {
    pub command: String,
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Capture {
    pub fn load(rel: &str) -> Capture {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/compat")
            .join(rel);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut command = String::new();
        let (mut stdout, mut stderr) = (String::new(), String::new());
        let mut code = None;
        let mut section = 0;
        for line in text.split_inclusive('\n') {
            if let Some(c) = line.strip_prefix("$ ") {
                command = c.trim_end().to_string();
            } else if line.starts_with("# ---- stdout ----") {
                section = 1;
            } else if line.starts_with("# ---- stderr ----") {
                section = 2;
            } else if let Some(n) = line.strip_prefix("exit=").filter(|_| section == 2) {
                code = n.trim().parse().ok();
                section = 3;
            } else if section == 1 {
                stdout.push_str(line);
            } else if section == 2 {
                stderr.push_str(line);
            }
        }
        Capture {
            command,
            stdout,
            stderr,
            code: code.expect("capture has exit="),
        }
    }
}

/// Puts dates (which differ run to run) into a fixed form, keeping widths, in SGE's formats.
pub fn normalise_dates(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    let is = |j: usize, pat: &str| {
        pat.bytes().enumerate().all(|(k, p)| {
            b.get(j + k).is_some_and(|c| {
                if p == b'9' {
                    c.is_ascii_digit()
                } else {
                    *c == p
                }
            })
        })
    };
    while i < b.len() {
        if is(i, "99/99/9999 99:99:99") {
            out.push_str("MM/DD/YYYY hh:mm:ss");
            i += 19;
        } else if is(i, "9999-99-99T99:99:99") {
            out.push_str("YYYY-MM-DDThh:mm:ss");
            i += 19;
        } else if i + 24 <= b.len()
            && b[i].is_ascii_uppercase()
            && b[i + 3] == b' '
            && b[i + 7] == b' '
            && is(i + 11, "99:99:99 9999")
        {
            out.push_str("Www Mmm DD hh:mm:ss YYYY");
            i += 24;
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Runs a capture's command line as `user` in `cell` and compares: the command is its first
/// word that is not a `NAME=value`, and those before it go to its environment (the record
/// scripts' `EDITOR=…` of the editor forms); standard input is empty.
pub fn replay_capture(cell: &TestCell, user: &TestUser, cap: &Capture) {
    let words = gridspool::compat::options::split_words(&cap.command);
    let at = words
        .iter()
        .position(|w| !w.contains('='))
        .expect("a command");
    let mut cmd = cell.command(&words[at], user);
    for w in &words[..at] {
        if let Some((k, v)) = w.split_once('=') {
            cmd.env(k, v);
        }
    }
    let out = cmd
        .args(&words[at + 1..])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_matches(&Run::from(out), cap);
}

/// Compares a run with a capture after normalising dates; the host name of the captures
/// (`vm`) is replaced by this host's when they differ.
pub fn assert_matches(run: &Run, cap: &Capture) {
    let host = gridspool::identity::short_hostname();
    let fix = |s: &str| {
        let s = normalise_dates(s);
        if host == "vm" {
            s
        } else {
            replace_host(&s, &host)
        }
    };
    let expected = (fix(&cap.stdout), fix(&cap.stderr), cap.code);
    let actual = (
        normalise_dates(&run.stdout),
        normalise_dates(&run.stderr),
        run.code,
    );
    assert_eq!(
        actual, expected,
        "\n--- for `{}`\n--- actual stdout:\n{}\n--- expected stdout:\n{}\n--- actual stderr:\n{}\n--- expected stderr:\n{}",
        cap.command, actual.0, expected.0, actual.1, expected.1
    );
}

/// Replaces the captures' host `vm` (as a whole word) by `host`, taking the width difference
/// out of the padding that follows, so table columns stay aligned.
fn replace_host(text: &str, host: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let word_start = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if word_start
            && chars[i] == 'v'
            && chars.get(i + 1) == Some(&'m')
            && chars
                .get(i + 2)
                .is_none_or(|c| !(c.is_alphanumeric() || *c == '_'))
        {
            out.push_str(host);
            i += 2;
            let mut extra = host.chars().count().saturating_sub(2);
            while extra > 0 && chars.get(i) == Some(&' ') && chars.get(i + 1) == Some(&' ') {
                i += 1;
                extra -= 1;
            }
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Waits for a spawned command with piped output and gathers what it printed.
pub fn collect(mut child: std::process::Child) -> Run {
    use std::io::Read;
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut stdout).expect("stdout");
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr).expect("stderr");
    }
    let status = child.wait().expect("wait");
    Run {
        stdout,
        stderr,
        code: status.code().unwrap_or(-1),
    }
}

/// The processes descended from `pid`, from `/proc`.
pub fn descendants_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    while let Some(p) = stack.pop() {
        for &c in &all {
            if parent_of(c) == Some(p) {
                out.push(c);
                stack.push(c);
            }
        }
    }
    out
}
