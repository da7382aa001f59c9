//! The main job of `cargo run --release`: a fresh sandbox cell in the checkout (`var/`), the
//! local host as the execution host, `sched_d` started on it, a mixed workload from several
//! users, `qstat -urg` and `qstat -ext` while it runs, and `qacct` at the end.
//!
//! It drives the real binaries (found next to this one) exactly as a user would type them.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Where the sandbox lives: `var/` of the checkout this binary was built from.
fn default_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("var")
}

/// The programs of this build (`cargo run` builds only this one): built once, by the
/// cargo that is running the demo, in the profile of this program's directory.
fn build_siblings(exe: &Path) -> anyhow::Result<()> {
    static BUILT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *BUILT.get_or_init(|| {
        let release = exe
            .parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == "release");
        eprintln!("gridspool-demo: building the other programs (cargo build --bins)");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--bins", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
        if release {
            cmd.arg("--release");
        }
        cmd.status().is_ok_and(|s| s.success())
    });
    if ok {
        Ok(())
    } else {
        bail!("cannot build the other programs (cargo build --release --bins)")
    }
}

fn sibling(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating this program")?;
    let path = exe.with_file_name(name);
    if !path.exists() {
        build_siblings(&exe)?;
    }
    if !path.exists() {
        bail!(
            "{} not found next to {}: build all binaries (cargo build --release)",
            name,
            exe.display()
        );
    }
    Ok(path)
}

/// A user of the demo workload: name, and uid/gid to switch to when running as root.
struct DemoUser {
    name: String,
    ids: Option<(u32, u32)>,
    home: String,
}

fn demo_users() -> Vec<DemoUser> {
    let me = crate::identity::Caller::from_kernel().ok();
    let mut users = Vec::new();
    if let Some(c) = &me {
        users.push(DemoUser {
            name: c.user.clone(),
            ids: None,
            home: c.home.clone(),
        });
    }
    if nix::unistd::geteuid().is_root() {
        for name in ["sgeuser", "sgeuser2"] {
            if let Some((uid, gid, home)) = crate::identity::user_by_name(name) {
                users.push(DemoUser {
                    name: name.into(),
                    ids: Some((uid, gid)),
                    home,
                });
            }
        }
    }
    users
}

struct Demo {
    root: PathBuf,
    cell: PathBuf,
    work: PathBuf,
    /// Where the clients and the daemon run from: the build directory, or, for a demo with
    /// several users, a shared installation made by `scripts/install-multiuser.sh`.
    bin: Option<(PathBuf, PathBuf)>,
}

impl Demo {
    fn program(&self, bin: &str) -> anyhow::Result<PathBuf> {
        match &self.bin {
            Some((clients, daemon)) => {
                let dir = if bin == "sched_d" { daemon } else { clients };
                Ok(dir.join(bin))
            }
            None => sibling(bin),
        }
    }

    fn command(&self, bin: &str, user: Option<&DemoUser>) -> anyhow::Result<Command> {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(self.program(bin)?);
        cmd.env("SGE_ROOT", &self.root)
            .env("SGE_CELL", "default")
            .current_dir(&self.work);
        if let Some(u) = user {
            cmd.env("USER", &u.name)
                .env("LOGNAME", &u.name)
                .env("HOME", &u.home);
            if let Some((uid, gid)) = u.ids {
                cmd.uid(uid).gid(gid);
            }
        }
        Ok(cmd)
    }

    /// Runs a client and returns its stdout (its stderr goes to ours).
    fn run(&self, bin: &str, user: Option<&DemoUser>, args: &[&str]) -> anyhow::Result<String> {
        let out = self
            .command(bin, user)?
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running {bin}"))?;
        if !out.status.success() {
            bail!("{bin} {} failed: {}", args.join(" "), out.status);
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn show(&self, title: &str, bin: &str, args: &[&str]) -> anyhow::Result<()> {
        println!("\n$ {bin} {}    # {title}", args.join(" "));
        print!("{}", self.run(bin, None, args)?);
        Ok(())
    }
}

/// Stops the daemon when the demo ends, however it ends.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridspool-demo: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run() -> anyhow::Result<()> {
    let root = std::env::var_os("GRIDSPOOL_DEMO_ROOT").map_or_else(default_root, PathBuf::from);
    let cell = root.join("default");
    if cell.exists() {
        std::fs::remove_dir_all(&cell)
            .with_context(|| format!("removing the old sandbox {}", cell.display()))?;
    }
    std::fs::create_dir_all(&root)?;
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    // Jobs of every demo user write their output here (-cwd).
    set_mode(&root, 0o755)?;
    set_mode(&work, 0o1777)?;
    let users = demo_users();
    let bin = if users.len() > 1 {
        Some(install_shared(&root, &cell)?)
    } else {
        super::sched_d::init(&cell)?;
        None
    };
    let demo = Demo {
        root: root.clone(),
        cell: cell.clone(),
        work,
        bin,
    };
    println!("gridspool demo: a fresh cell in {}", cell.display());
    let config_path = cell.join("config.yaml");
    let config =
        crate::config::ClusterConfig::parse(&crate::file::open::read_to_string(&config_path)?)
            .map_err(|e| anyhow::anyhow!("{}: {e}", config_path.display()))?;
    println!("{}", cell_summary(&config, &config_path));

    let log = std::fs::File::create(root.join("sched_d.demo.log"))?;
    let daemon = Daemon(
        demo.command("sched_d", None)?
            .args(["--spool", &cell.to_string_lossy()])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .context("starting sched_d")?,
    );
    std::thread::sleep(Duration::from_millis(300));

    println!(
        "submitting a mixed workload as {}",
        users
            .iter()
            .map(|u| u.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let started = Instant::now();
    let mut submitted = 0;
    for (i, u) in users.iter().enumerate() {
        let sleep = format!("0.{}", 2 + i);
        let jobs: Vec<Vec<&str>> = vec![
            vec![
                "-cwd", "-N", "sweep", "-t", "1-40", "-b", "y", "sleep", &sleep,
            ],
            vec![
                "-cwd", "-N", "wide", "-pe", "smp", "2", "-b", "y", "sleep", "1",
            ],
            vec!["-cwd", "-N", "quick", "-l", "h_rt=0:1:0", "-b", "y", "true"],
            vec![
                "-cwd", "-N", "lowprio", "-p", "-100", "-t", "1-10", "-b", "y", "sleep", "0.1",
            ],
            vec![
                "-cwd",
                "-N",
                "after",
                "-hold_jid",
                "sweep",
                "-b",
                "y",
                "echo",
                "done",
            ],
        ];
        for args in jobs {
            print!("{}: {}", u.name, demo.run("qsub", Some(u), &args)?);
            submitted += 1;
        }
    }
    println!("{submitted} submissions");
    std::thread::sleep(Duration::from_millis(500));
    demo.show("urgency while it runs", "qstat", &["-urg", "-u", "*"])?;
    demo.show(
        "tickets and usage while it runs",
        "qstat",
        &["-ext", "-u", "*"],
    )?;

    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = demo.run("qstat", None, &["-u", "*"])?;
        if left.trim().is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!("jobs still not finished after 5 minutes:\n{left}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    println!(
        "\nall jobs finished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    drop(daemon);
    demo.show("accounting per owner", "qacct", &["-o"])?;
    demo.show("accounting summary", "qacct", &[])?;
    demo.show("one job in detail", "qacct", &["-j", "quick"])?;
    println!(
        "\nthe sandbox stays in {} (SGE_ROOT={} SGE_CELL=default)",
        demo.cell.display(),
        demo.root.display()
    );
    Ok(())
}

/// Several users share the cell as they would in production: `scripts/install-multiuser.sh`
/// installs the clients setgid to a `gridspool-demo` group under `var/install` and lays the
/// cell out for them. Returns the client and daemon directories.
fn install_shared(root: &Path, cell: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-multiuser.sh");
    let built = sibling("qsub")?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let prefix = root.join("install");
    let status = Command::new("bash")
        .arg(&script)
        .arg("--bin-dir")
        .arg(&built)
        .arg(&prefix)
        .arg(cell)
        .arg("gridspool-demo")
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    if !status.success() {
        bail!("{} failed: {status}", script.display());
    }
    println!(
        "a shared installation in {} (clients setgid to gridspool-demo)",
        prefix.display()
    );
    Ok((prefix.join("bin"), prefix.join("sbin")))
}

/// The cell in one line (its hosts, queues, parallel environments and policy) and where its
/// configuration is: a reader new to the demo learns what it runs on before anything runs,
/// without reading YAML out of context.
fn cell_summary(config: &crate::config::ClusterConfig, path: &Path) -> String {
    // "host a (2 slots)", "hosts a (2 slots), b (4 slots)".
    let named = |what: &str, items: Vec<String>| {
        let plural = if items.len() == 1 { "" } else { "s" };
        format!("{what}{plural} {}", items.join(", "))
    };
    let mut parts = vec![
        named(
            "host",
            config
                .hosts
                .iter()
                .map(|h| format!("{} ({} slots)", h.name, config.host_slots(h)))
                .collect(),
        ),
        named(
            "queue",
            config.queues.iter().map(|q| q.name.clone()).collect(),
        ),
    ];
    if !config.parallel_environments.is_empty() {
        parts.push(named(
            "parallel environment",
            config
                .parallel_environments
                .iter()
                .map(|p| p.name.clone())
                .collect(),
        ));
    }
    let policy = serde_json::to_value(config.scheduler.policy)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    parts.push(format!("scheduling policy {policy}"));
    format!(
        "the cell: {} (configuration: {})",
        parts.join("; "),
        path.display()
    )
}

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("chmod {}", path.display()))
}
