//! The installation of a site (README.md "Installing on a site"): one program for every
//! command, linked under each name (`src/cli/multicall.rs`), laid out by
//! `scripts/install-multiuser.sh` and packaged by `scripts/build-deb.sh`. Both tests take the
//! program `cargo test` has already built (a debug build, larger than the release one), so
//! they cost a strip and a copy, not a build.

use crate::support::{Capture, Run, TEST_GROUP, TestUser, assert_matches, is_root, skip, user1};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const CLIENTS: [&str; 18] = [
    "qsub", "qstat", "qdel", "qalter", "qhold", "qrls", "qacct", "qhost", "qconf", "qmod",
    "qselect", "qquota", "qrsub", "qrstat", "qrdel", "qrsh", "qlogin", "qsh",
];
const DAEMONS: [&str; 2] = ["sched_d", "gridspool-shepherd"];
/// Tools users run on their own files, in `bin` beside the clients.
const TOOLS: [&str; 1] = ["gridspool-sim"];
/// The ceiling for the installed set, which `scripts/install-multiuser.sh` builds
/// with `cargo build --release` (`bench/README.md`). Tests built without optimisation
/// (`cargo test`) install their own program, unoptimised code about three times the size:
/// there the ceiling guards against growth at that scale (45.8 MB since `sched_d`'s own ssh
/// client, russh and its crypto, came in on 2026-11-27).
const MAX_INSTALLED_BYTES: u64 = if cfg!(debug_assertions) {
    52 * 1024 * 1024
} else {
    30 * 1024 * 1024
};

fn built_program_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_gridspool"))
        .parent()
        .expect("target dir")
        .to_path_buf()
}

/// A directory with what `cargo build --release --bin gridspool -p gridspool-drmaa` leaves
/// in `target/release`: the program, and `libdrmaa.so` (which `cargo test --workspace` builds
/// in `deps/`).
fn built_dir_with_drmaa(tmp: &Path) -> PathBuf {
    let dir = tmp.join("built");
    std::fs::create_dir_all(&dir).expect("dir");
    let built = built_program_dir();
    std::os::unix::fs::symlink(built.join("gridspool"), dir.join("gridspool")).expect("link");
    let lib = built.join("deps/libdrmaa.so");
    assert!(
        lib.exists(),
        "{} is not built: run `cargo test --workspace`",
        lib.display()
    );
    std::os::unix::fs::symlink(lib, dir.join("libdrmaa.so")).expect("link");
    dir
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

fn output(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("run");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn as_user(user: &TestUser, program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.uid(user.uid)
        .gid(user.gid)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &user.home)
        .current_dir("/");
    cmd
}

/// Bytes of the regular files under `dir` (links count nothing, as on disk).
fn installed_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let m = e.path().symlink_metadata().expect("stat");
        if m.is_dir() {
            total += installed_bytes(&e.path());
        } else if m.is_file() {
            total += m.len();
        }
    }
    total
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

/// Every command of `prefix` is a link to the one program.
fn assert_links(prefix: &Path) {
    let mut bin = sorted(&CLIENTS);
    bin.extend(TOOLS.iter().map(|s| s.to_string()));
    bin.sort();
    assert_eq!(names_in(&prefix.join("bin")), bin);
    assert_eq!(names_in(&prefix.join("sbin")), sorted(&DAEMONS));
    for (dir, names) in [
        ("bin", &CLIENTS[..]),
        ("bin", &TOOLS[..]),
        ("sbin", &DAEMONS[..]),
    ] {
        for name in names {
            let link = prefix.join(dir).join(name);
            assert_eq!(
                std::fs::read_link(&link).expect("a link"),
                Path::new("../lib/gridspool/gridspool"),
                "{}",
                link.display()
            );
            let beside = prefix.join("lib/gridspool").join(name);
            assert_eq!(
                std::fs::read_link(&beside).expect("a link"),
                Path::new("gridspool")
            );
        }
    }
}

#[test]
fn an_installed_tree_runs_every_command_from_one_setgid_program() {
    let Some(user) = user1().filter(|_| is_root()) else {
        skip(
            "an_installed_tree_runs_every_command_from_one_setgid_program",
            "needs root",
        );
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    crate::support::set_mode(tmp.path(), 0o755);
    let prefix = tmp.path().join("usr");
    let cell = tmp.path().join("sge").join("default");
    let run = output(
        Command::new(script("install-multiuser.sh"))
            .arg("--bin-dir")
            .arg(built_dir_with_drmaa(tmp.path()))
            .arg(&prefix)
            .arg(&cell)
            .arg(TEST_GROUP),
    );
    assert_eq!(run.code, 0, "{run:?}");

    // One file, setgid to the spool group; every command a link to it.
    let group = nix::unistd::Group::from_name(TEST_GROUP)
        .expect("group lookup")
        .expect("the script creates the group");
    let program = prefix.join("lib/gridspool/gridspool");
    let meta = std::fs::symlink_metadata(&program).expect("the program");
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o7777, 0o2755);
    assert_eq!((meta.uid(), meta.gid()), (0, group.gid.as_raw()));
    assert_links(&prefix);
    let mut lib = sorted(&CLIENTS);
    lib.extend(DAEMONS.iter().chain(&TOOLS).map(|s| s.to_string()));
    lib.extend(["gridspool", "libdrmaa.so", "libdrmaa.so.1.0"].map(String::from));
    lib.sort();
    assert_eq!(names_in(&prefix.join("lib/gridspool")), lib);
    // $SGE_ROOT/bin/<arch>, where Open MPI looks for qrsh, as in an SGE installation.
    if std::env::consts::ARCH == "x86_64" {
        let arch_bin = tmp.path().join("sge/bin/lx-amd64");
        assert_eq!(names_in(&arch_bin), sorted(&CLIENTS));
        assert_eq!(
            std::fs::read_link(arch_bin.join("qrsh")).expect("link"),
            prefix.join("bin/qrsh")
        );
        // DRMAA where programs built for Grid Engine look for it.
        let drmaa = tmp.path().join("sge/lib/lx-amd64/libdrmaa.so");
        assert_eq!(
            std::fs::canonicalize(&drmaa).expect("libdrmaa.so"),
            prefix.join("lib/gridspool/libdrmaa.so.1.0")
        );
        assert!(tmp.path().join("sge/include/drmaa.h").exists());
    }
    let bytes = installed_bytes(&prefix);
    assert!(
        bytes < MAX_INSTALLED_BYTES,
        "installed {bytes} bytes, over {MAX_INSTALLED_BYTES}"
    );

    // Each client link is that client: SGE's help text, as recorded.
    for name in CLIENTS {
        let run = output(as_user(&user, &prefix.join("bin").join(name)).arg("-help"));
        let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/compat")
            .join(name)
            .join("help.txt");
        if capture.exists() {
            assert_matches(&run, &Capture::load(&format!("{name}/help.txt")));
        } else {
            assert!(
                run.stdout
                    .starts_with(&format!("SGE 8.1.9\nusage: {name} ")),
                "{name}: {run:?}"
            );
        }
    }
    let run = output(as_user(&user, &prefix.join("sbin/sched_d")).arg("--version"));
    assert!(run.stdout.starts_with("sched_d "), "{run:?}");
    let run = output(&mut as_user(&user, &prefix.join("sbin/gridspool-shepherd")));
    assert!(
        run.stderr.starts_with("gridspool-shepherd: usage:"),
        "{run:?}"
    );

    // The daemon gives the group up: a user's sched_d --init through the setgid program
    // creates files of the user's own group, not the spool's.
    let own = tmp.path().join("own");
    std::fs::create_dir(&own).expect("mkdir");
    std::os::unix::fs::chown(&own, Some(user.uid), Some(user.gid)).expect("chown");
    let run = output(
        as_user(&user, &prefix.join("sbin/sched_d"))
            .args(["--init", "--spool"])
            .arg(own.join("default")),
    );
    assert_eq!(run.code, 0, "{run:?}");
    for f in ["config.yaml", "seq", "common/settings.sh"] {
        let m = std::fs::metadata(own.join("default").join(f)).expect("created");
        assert_eq!(m.gid(), user.gid, "{f} has the spool group");
    }

    // gridspool-sim writes the user's files with the user's group too.
    let trace = own.join("one.swf");
    std::fs::write(&trace, "1 0 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 -1 -1 -1\n").expect("trace");
    let run = output(
        as_user(&user, &prefix.join("bin/gridspool-sim"))
            .arg("--workload")
            .arg(&trace)
            .arg("--compare")
            .arg(own.join("default/config.yaml"))
            .arg("--json")
            .arg(own.join("report.json")),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let m = std::fs::metadata(own.join("report.json")).expect("the report");
    assert_eq!(
        m.gid(),
        user.gid,
        "gridspool-sim wrote with the spool group"
    );

    // settings.sh, written by the installation's sched_d --init: a user who sources it reaches
    // the cell with the installed commands, and a job runs through them. The daemon started
    // from the setgid program runs without its group.
    // --daemon starts the program again, as sched_d (argv[0]) whatever its file's name.
    let run = output(
        Command::new(prefix.join("sbin/sched_d"))
            .arg("--spool")
            .arg(&cell)
            .arg("--daemon")
            .env_remove("SGE_ROOT"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let pid: u32 = std::fs::read_to_string(cell.join("daemon/sched_d.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let gids = status
        .lines()
        .find_map(|l| l.strip_prefix("Gid:"))
        .expect("Gid line");
    let stop = || {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    };
    let all_root = gids.split_whitespace().all(|g| g == "0");
    if !all_root {
        stop();
    }
    assert!(all_root, "sched_d runs with groups {gids}");

    let settings = cell.join("common/settings.sh");
    let run = output(as_user(&user, Path::new("/bin/sh")).arg("-c").arg(format!(
        ". '{}' && echo \"$SGE_ROOT\" && echo \"$SGE_CELL\" && command -v qstat && \
         qsub -h -b y -N installed true && qstat && \
         qsub -sync y -b y -o /dev/null -j y -N ran true",
        settings.display()
    )));
    stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], cell.parent().expect("root").to_string_lossy());
    assert_eq!(lines[1], "default");
    assert_eq!(
        Path::new(lines[2]),
        std::fs::canonicalize(prefix.join("lib/gridspool"))
            .expect("lib")
            .join("qstat")
    );
    assert!(lines[3].starts_with("Your job "), "{run:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("installed") && l.contains("hqw")),
        "{run:?}"
    );
    // The daemon found the shepherd beside itself, a link to the same program, and the
    // shepherd its supervisor (an exec of the program under the shepherd's name).
    let last = lines.last().expect("qsub -sync y");
    assert!(last.ends_with("exited with exit code 0."), "{run:?}");
}

#[test]
fn the_debian_package_holds_the_installation() {
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        skip("the_debian_package_holds_the_installation", "no dpkg-deb");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = output(
        Command::new(script("build-deb.sh"))
            .arg("--bin-dir")
            .arg(built_program_dir())
            .arg(tmp.path()),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let deb = PathBuf::from(run.stdout.trim());
    let root = tmp.path().join("root");
    let run = output(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root));
    assert_eq!(run.code, 0, "{run:?}");
    let usr = root.join("usr");
    assert_links(&usr);
    assert!(
        installed_bytes(&root) < MAX_INSTALLED_BYTES,
        "{} bytes",
        installed_bytes(&root)
    );
    let qsub = output(Command::new(usr.join("bin/qsub")).arg("-help"));
    assert_matches(&qsub, &Capture::load("qsub/help.txt"));
    assert!(usr.join("lib/gridspool/install-multiuser.sh").is_file());

    let unit = std::fs::read_to_string(root.join("lib/systemd/system/gridspool.service"))
        .expect("systemd unit");
    assert!(unit.contains("ExecStart=/usr/sbin/sched_d --foreground $SCHED_D_ARGS"));
    assert!(unit.contains("KillMode=process"), "jobs survive a restart");
    assert!(
        unit.contains("RestartPreventExitStatus=3"),
        "not restarted once replaced"
    );
    let shadow = std::fs::read_to_string(root.join("lib/systemd/system/gridspool-shadow.service"))
        .expect("shadow unit");
    assert!(shadow.contains("ExecStart=/usr/sbin/sched_d --foreground --shadow"));
    // Manual pages compressed, as Debian's policy has them; every page of man/.
    let pages = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    for page in std::fs::read_dir(&pages).expect("man/") {
        let name = page
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let section = name.rsplit('.').next().unwrap_or("");
        let installed = usr.join(format!("share/man/man{section}/{name}.gz"));
        assert!(installed.is_file(), "{} missing", installed.display());
        assert!(
            !usr.join(format!("share/man/man{section}/{name}")).exists(),
            "{name} uncompressed"
        );
    }
    assert!(
        usr.join("share/man/man8/sched_d.8.gz").is_file(),
        "sched_d(8)"
    );
    // Every command's completions, where bash-completion, zsh and fish look for a vendor's.
    for command in CLIENTS {
        for path in [
            format!("share/bash-completion/completions/{command}"),
            format!("share/zsh/vendor-completions/_{command}"),
            format!("share/fish/vendor_completions.d/{command}.fish"),
        ] {
            assert!(usr.join(&path).is_file(), "{path} missing");
        }
    }
    let rotate =
        std::fs::read_to_string(root.join("etc/logrotate.d/gridspool")).expect("logrotate");
    assert!(rotate.contains("/var/lib/gridspool/*/daemon/sched_d.log"));
    assert!(rotate.contains("/var/lib/gridspool/*/common/accounting"));

    let control = tmp.path().join("control");
    let run = output(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(&control));
    assert_eq!(run.code, 0, "{run:?}");
    let fields = std::fs::read_to_string(control.join("control")).expect("control");
    assert!(fields.contains("Package: gridspool\n"));
    let postinst = std::fs::read_to_string(control.join("postinst")).expect("postinst");
    assert!(postinst.contains("addgroup --system gridspool"));
    assert!(postinst.contains(
        "dpkg-statoverride --update --add root gridspool 2755 /usr/lib/gridspool/gridspool"
    ));
}

/// `lintian`, Debian's package checker, on the package as a site builds it: nothing but the
/// tags `scripts/deb/lintian-overrides` accepts, each with its reason, at any level
/// (errors, warnings, and the informational tags a maintainer reads too).
#[test]
fn lintian_has_nothing_to_say_of_the_debian_package() {
    const TEST: &str = "lintian_has_nothing_to_say_of_the_debian_package";
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        return skip(TEST, "no dpkg-deb");
    }
    if Command::new("lintian").arg("--version").output().is_err() {
        return skip(TEST, "no lintian (apt-get install lintian; .ci/run does)");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = built_dir_with_drmaa(tmp.path());
    let run = output(
        Command::new(script("build-deb.sh"))
            .arg("--bin-dir")
            .arg(&bin)
            .arg(tmp.path()),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let deb = PathBuf::from(run.stdout.trim());
    let run = output(
        Command::new("lintian")
            .args([
                "--display-info",
                "--tag-display-limit",
                "0",
                "--fail-on",
                "error,warning,info",
            ])
            .arg(&deb),
    );
    // The spelling override covers words that meet across Rust's string literals, which
    // differ from build to build: a build where none meet leaves it unused, and says so.
    let varying = |l: &&str| l.contains("unused-override spelling-error-in-binary");
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.starts_with("N: "))
        .collect();
    let tags: Vec<&&str> = lines.iter().filter(|l| !varying(l)).collect();
    let only_varying = lines.iter().any(varying);
    assert!(
        tags.is_empty() && (run.code == 0 || only_varying),
        "{run:?}"
    );
}

#[test]
fn settings_files_set_sge_root_and_cell_as_sge_writes_them() {
    // The oracle's settings.sh/.csh (Debian's gridengine) against those of `sched_d --init`
    // for a cell of the same name: every line of SGE's that sets SGE_ROOT or SGE_CELL is
    // there, in the same form (gridspool quotes the value); SGE_ARCH is a divergence.
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(tmp.path()).expect("canonical");
    let run = output(
        Command::new(env!("CARGO_BIN_EXE_sched_d"))
            .args(["--init", "--spool"])
            .arg(root.join("default")),
    );
    assert_eq!(run.code, 0, "{run:?}");
    for file in ["settings.sh", "settings.csh"] {
        let sge = Capture::load(&format!("misc/{file}-file.txt")).stdout;
        let ours = std::fs::read_to_string(root.join("default/common").join(file))
            .expect("settings written")
            .replace('\'', "");
        let mut checked = 0;
        for line in sge.lines().filter(|l| !l.contains("SGE_ARCH")) {
            let expected = line.replace("/var/lib/gridengine", &root.to_string_lossy());
            assert!(
                ours.lines().any(|l| l == expected),
                "{file}: no line {expected:?} in\n{ours}"
            );
            checked += 1;
        }
        assert_eq!(checked, 2, "{file}: SGE_ROOT and SGE_CELL");
        let bin = Path::new(env!("CARGO_BIN_EXE_sched_d"))
            .parent()
            .expect("dir")
            .to_string_lossy()
            .into_owned();
        assert!(ours.contains(&bin), "{file}: PATH has {bin}:\n{ours}");
    }
}
