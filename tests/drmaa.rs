//! `libdrmaa.so.1.0` (the `gridspool-drmaa` crate) against a live cell: a C program compiled
//! against `drmaa/include/drmaa.h` runs a small workflow (a job and its usage, a bulk job,
//! hold and release, suspend, resume and terminate, a job that ended before the wait, a second
//! session), as the test user, through the installed clients.

use crate::qrsh::cell;
use crate::sched::SchedD;
use crate::support::*;
use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/deps/libdrmaa.so`: `cargo test --workspace` builds it there with the
/// other members (the crate's own test needs it); `cargo build` puts a copy in
/// `target/<profile>`. The newer of the two.
fn library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe
        .ancestors()
        .find(|d| d.join("deps").is_dir())?
        .to_path_buf();
    [
        profile.join("deps/libdrmaa.so"),
        profile.join("libdrmaa.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command as `user` in the cell's environment, with the clients (the setgid copies the
/// other tests run) first in `PATH`, as `settings.sh` puts the installed ones.
fn as_user(cell: &TestCell, user: &TestUser, program: &std::path::Path) -> Command {
    // The copies are made as they are first asked for.
    for c in ["qstat", "qdel", "qhold", "qrls", "qmod"] {
        client_path(c);
    }
    let clients = client_path("qsub").parent().expect("dir").to_path_buf();
    let mut c = Command::new(program);
    c.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", clients.display()),
        )
        .env("HOME", &user.home)
        .env("USER", &user.name)
        .env("SGE_ROOT", &cell.root)
        .env("SGE_CELL", "default")
        .current_dir(cell.workdir(user));
    if is_root() && user.uid != 0 {
        use std::os::unix::process::CommandExt;
        c.uid(user.uid).gid(user.gid);
    }
    c
}

#[test]
fn a_c_program_runs_a_drmaa_workflow() {
    const TEST: &str = "a_c_program_runs_a_drmaa_workflow";
    let Some(lib) = library() else {
        panic!(
            "libdrmaa.so is not built: run `cargo test --workspace` (or `cargo build -p gridspool-drmaa`) first"
        );
    };
    if Command::new("gcc").arg("--version").output().is_err() {
        return skip(TEST, "no C compiler (gcc)");
    }
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    let exe = cell.root.join("workflow");
    let cc = Command::new("gcc")
        .arg("-std=c99")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-D_DEFAULT_SOURCE")
        .arg("-I")
        .arg(repo().join("drmaa/include"))
        .arg(repo().join("tests/drmaa/workflow.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(lib.parent().expect("dir"))
        .arg("-ldrmaa")
        .output()
        .expect("gcc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    // The library beside the program, under its soname, as an installation has it.
    std::fs::copy(&lib, cell.root.join("libdrmaa.so.1.0")).expect("copy");
    set_mode(&cell.root, 0o755);
    let run = Run::from(
        as_user(&cell, &user, &exe)
            .env("LD_LIBRARY_PATH", &cell.root)
            .output()
            .expect("run"),
    );
    let acct = std::fs::read_to_string(cell.cell.join("common/accounting")).unwrap_or_default();
    eprintln!("ACCT {acct}");
    // What the same program printed against SGE 8.1.9's libdrmaa (Debian's
    // gridengine-drmaa1.0; tests/compat/drmaa), but for the name of the DRM system.
    let sge =
        std::fs::read_to_string(repo().join("tests/compat/drmaa/c-workflow.out")).expect("capture");
    assert_eq!(
        run.stdout,
        sge.replace("drm SGE 8.1.9\n", "drm gridspool\n"),
        "{run:?}"
    );
}

/// A virtualenv with drmaa-python (PyPI's `drmaa`) that the test users can run, made once
/// per machine (Debian's python3 with venv, as `.ci/run` installs it). `Err` when it cannot be
/// made (no package index).
fn drmaa_python() -> Result<PathBuf, String> {
    let venv = PathBuf::from("/opt/gridspool-test/drmaa-venv-0.7.9");
    if venv.join("bin/python3").exists() && venv.join(".complete").exists() {
        return Ok(venv);
    }
    let parent = venv.parent().expect("parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    set_mode(parent, 0o755);
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("/usr/bin/python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("/usr/bin/python3: {e}"))?;
    if !made.success() {
        return Err("python3 -m venv failed (Debian package python3-venv)".into());
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "drmaa==0.7.9"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install drmaa failed: {}",
            String::from_utf8_lossy(&pip.stderr)
        ));
    }
    Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&venv)
        .status()
        .map_err(|e| e.to_string())?;
    std::fs::write(venv.join(".complete"), "").map_err(|e| e.to_string())?;
    Ok(venv)
}

#[test]
fn drmaa_python_runs_a_workflow_with_our_library() {
    const TEST: &str = "drmaa_python_runs_a_workflow_with_our_library";
    let Some(lib) = library() else {
        panic!(
            "libdrmaa.so is not built: run `cargo test --workspace` (or `cargo build -p gridspool-drmaa`) first"
        );
    };
    let Some(user) = user1() else {
        return skip(TEST, "needs the test users");
    };
    let venv = match drmaa_python() {
        Ok(p) => p,
        Err(e) => return skip(TEST, &format!("drmaa-python could not be installed: {e}")),
    };
    let cell = cell(2);
    let _d = SchedD::start(&cell, &[]);
    // $drmaa_hd_ph$/single.out: in the user's home, appended to (as `-o` files are).
    let _ = std::fs::remove_file(user.home.join("single.out"));
    // What a user changes to use gridspool: DRMAA_LIBRARY_PATH.
    let installed = cell.root.join("libdrmaa.so.1.0");
    std::fs::copy(&lib, &installed).expect("copy");
    set_mode(&cell.root, 0o755);
    let run = Run::from(
        as_user(&cell, &user, &venv.join("bin/python3"))
            .arg(repo().join("tests/drmaa/workflow.py"))
            .env("DRMAA_LIBRARY_PATH", &installed)
            .output()
            .expect("python3"),
    );
    // What the same program printed against SGE 8.1.9 with Debian's gridengine-drmaa1.0
    // (tests/compat/drmaa), but for the name of the DRM system.
    let sge = std::fs::read_to_string(repo().join("tests/compat/drmaa/python-workflow.out"))
        .expect("capture");
    assert_eq!(
        run.stdout,
        sge.replace("drm SGE\n", "drm gridspool\n"),
        "{run:?}"
    );
    let out = std::fs::read_to_string(user.home.join("single.out")).unwrap_or_default();
    assert_eq!(out, "hello from drmaa\n");
}
