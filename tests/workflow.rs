//! Workflow tools that drive Grid Engine through its commands, run against a real `sched_d`.
//!
//! Toil's `grid_engine` batch system submits each job with `qsub -V -b y -terse -j y -cwd -N …
//! -v …` (plus `TOIL_GRIDENGINE_ARGS`, here `-shell no`: its worker `_toil_worker` is found only
//! on the submitter's `PATH`, a virtualenv's `bin/`), polls `qstat` and `qstat -j ID` until the
//! job has left the system (`Following jobs do not exist:`), then reads `qacct -j ID` for the
//! exit status. The same workflow completes on SGE 8.1.9 (checked on the oracle: 64 s).

use crate::sched::SchedD;
use crate::support::*;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Toil 8.2.0: the newest release whose `grid_engine` batch system runs (9.x passes a walltime
/// argument that its `prepareSubmission` does not take: `TypeError` before the first qsub).
const TOIL: &str = "toil==8.2.0";

/// A virtualenv with Toil that every test user can execute, made once per machine (as root,
/// from the package index). `None` when it cannot be made here.
fn toil_venv() -> Result<PathBuf, String> {
    let venv = PathBuf::from("/opt/gridspool-test/toil-8.2.0");
    if venv.join("bin/_toil_worker").exists() {
        return Ok(venv);
    }
    let parent = venv.parent().expect("parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    set_mode(parent, 0o755);
    let building = parent.join(format!(".toil-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    // Debian's python3, not a per-user one under /root that the test users cannot reach.
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv"])
        .arg(&building)
        .status()
        .map_err(|e| format!("/usr/bin/python3: {e}"))?;
    if !made.success() {
        return Err("python3 -m venv failed (Debian package python3-venv)".into());
    }
    let pip = Command::new(building.join("bin/pip"))
        .args(["install", "--quiet", TOIL])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        let _ = std::fs::remove_dir_all(&building);
        return Err(format!(
            "pip install {TOIL} failed: {}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    // The venv's scripts name the interpreter by the path they were installed under.
    for entry in std::fs::read_dir(building.join("bin")).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if let Ok(text) = std::fs::read_to_string(&path) {
            let fixed = text.replace(
                building.to_str().expect("utf-8 path"),
                venv.to_str().expect("utf-8 path"),
            );
            if fixed != text {
                std::fs::write(&path, fixed).map_err(|e| e.to_string())?;
            }
        }
    }
    let cfg = building.join("pyvenv.cfg");
    if let Ok(text) = std::fs::read_to_string(&cfg) {
        let fixed = text.replace(
            building.to_str().expect("utf-8 path"),
            venv.to_str().expect("utf-8 path"),
        );
        std::fs::write(&cfg, fixed).map_err(|e| e.to_string())?;
    }
    match std::fs::rename(&building, &venv) {
        Ok(()) => Ok(venv),
        // Another test process made it first.
        Err(_) if venv.join("bin/_toil_worker").exists() => {
            let _ = std::fs::remove_dir_all(&building);
            Ok(venv)
        }
        Err(e) => Err(format!("{}: {e}", venv.display())),
    }
}

/// Accounting records (fields split at `:`) of the cell, comments left out.
fn accounting(cell: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(cell.join("common/accounting"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(':').map(str::to_string).collect())
        .collect()
}

#[test]
fn toil_grid_engine_workflow_completes_with_v_and_shell_no() {
    const TEST: &str = "toil_grid_engine_workflow_completes_with_v_and_shell_no";
    let Some(user) = user1() else {
        return skip(TEST, "needs root to run the workflow as sgeuser");
    };
    let venv = match toil_venv() {
        Ok(v) => v,
        Err(why) => return skip(TEST, &format!("no Toil: {why}")),
    };
    let cell = TestCell::new();
    // The daemon's own retention of ended jobs (what `qsub -sync` needs), not the tests' 3 s.
    let _daemon = SchedD::start(&cell, &["--retention", "60"]);
    let work = cell.workdir(&user);
    let script = cell.write_file(
        &user,
        "toil_fanout.py",
        include_str!("workflow/toil_fanout.py"),
    );
    // Every command Toil calls, installed where `client_path` puts them (setgid as root).
    let clients = ["qsub", "qstat", "qdel", "qacct"].map(client_path);
    let clients = clients[0].parent().expect("client dir");
    let out = work.join("sum.txt");
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        clients.display(),
        venv.join("bin").display()
    );
    let mut toil = Command::new(venv.join("bin/python"));
    toil.env_clear()
        .env("PATH", path)
        .env("HOME", &user.home)
        .env("USER", &user.name)
        .env("LOGNAME", &user.name)
        .env("SGE_ROOT", &cell.root)
        .env("SGE_CELL", "default")
        .env("TOIL_GRIDENGINE_ARGS", "-shell no")
        .current_dir(&work)
        .arg(&script)
        .args(["--batchSystem", "grid_engine", "--logLevel", "INFO"])
        .arg("--workDir")
        .arg(&work)
        .arg(work.join("jobstore"))
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if user.uid != 0 {
        toil.uid(user.uid).gid(user.gid);
    }
    let mut child = toil.spawn().expect("spawn toil");
    // A guard against a hang, not a measurement: the workflow takes seconds when qstat -j
    // answers as SGE does (a minute a job when it printed ended jobs for the retention window).
    let deadline = Instant::now() + Duration::from_secs(600);
    while child.try_wait().expect("wait toil").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = child.wait_with_output().expect("toil output");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "toil failed:\n{log}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap_or_default(),
        "14\n",
        "{log}"
    );
    // Every job Toil submitted ran once and was accounted once, successfully.
    let records = accounting(&cell.cell);
    assert!(!records.is_empty(), "no accounting records:\n{log}");
    let mut jobs: Vec<&str> = records.iter().map(|r| r[5].as_str()).collect();
    jobs.sort_unstable();
    jobs.dedup();
    assert_eq!(
        jobs.len(),
        records.len(),
        "a job accounted twice: {records:?}"
    );
    for r in &records {
        assert!(r[4].starts_with("toil_job_"), "job name {}", r[4]);
        assert_eq!(
            (r[11].as_str(), r[12].as_str()),
            ("0", "0"),
            "failed / exit_status of {r:?}"
        );
    }
}
