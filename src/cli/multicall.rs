//! One program for every command, dispatched on the name it is started under (`argv[0]`), as
//! busybox and uutils/coreutils do: an installation holds one copy of the library instead of
//! one per command (each separate binary carries all of it). The installed file is named
//! `gridspool` and the commands are links to it (`scripts/install-multiuser.sh`); the
//! separate binaries of `src/bin/` call [`run`] with their own name, so both take one path.
//!
//! A shared installation makes that file setgid to the spool group, which the clients need
//! (`docs/security.md`) and the daemon and the shepherd must not have: they run as root and
//! switch to job owners, and a user could start the file under their names (`exec -a sched_d`).
//! So a [`Role::Daemon`] or [`Role::Tool`] command gives up a set-group-id group for good
//! before it does anything else, and refuses to run if it cannot.

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitCode;

/// Whether a command may keep the spool group of a setgid installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client (`qsub`, `qstat`, …): keeps the group, under `crate::privilege`'s rules.
    Client,
    /// `sched_d` and the shepherd: never run with a group they were not started with.
    Daemon,
    /// `gridspool-sim`: reads and writes only the user's own files, and must not write them
    /// with the spool's group (into the spool).
    Tool,
}

/// A command of the multicall program.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    pub name: &'static str,
    pub role: Role,
    main: fn() -> ExitCode,
}

/// Every command the program answers to, by the name of its link.
pub const COMMANDS: &[Command] = &[
    QSUB,
    QSTAT,
    QDEL,
    QALTER,
    QHOLD,
    QRLS,
    QACCT,
    QHOST,
    QCONF,
    QMOD,
    QSELECT,
    QQUOTA,
    QRSUB,
    QRSTAT,
    QRDEL,
    QRSH,
    QLOGIN,
    QSH,
    SCHED_D,
    SHEPHERD_COMMAND,
    SIM,
];

// One constant per command, so that a separate binary of `src/bin/` names only its own: the
// linker then leaves the other commands out, and a client starts as cheaply as before the
// multicall program (the table above pulls in every command's code and its dynamic symbols:
// ≈ 140,000 more instructions of relocation per `qsub`, +20% of its CPU).
pub const QSUB: Command = client("qsub", || {
    super::run_with_text_args("qsub", super::qsub::main)
});
pub const QSTAT: Command = client("qstat", || {
    super::run_with_text_args("qstat", super::qstat::main)
});
pub const QDEL: Command = client("qdel", || {
    super::run_with_text_args("qdel", super::qdel::main)
});
pub const QALTER: Command = client("qalter", || {
    super::run_with_text_args("qalter", super::qalter::main)
});
pub const QHOLD: Command = client("qhold", || {
    super::run_with_text_args("qhold", super::qhold::main)
});
pub const QRLS: Command = client("qrls", || {
    super::run_with_text_args("qrls", super::qrls::main)
});
pub const QACCT: Command = client("qacct", || {
    super::run_with_text_args("qacct", super::qacct::main)
});
pub const QHOST: Command = client("qhost", || {
    super::run_with_text_args("qhost", super::qhost::main)
});
pub const QCONF: Command = client("qconf", || {
    super::run_with_text_args("qconf", super::qconf::main)
});
pub const QMOD: Command = client("qmod", || {
    super::run_with_text_args("qmod", super::qmod::main)
});
pub const QSELECT: Command = client("qselect", || {
    super::run_with_text_args("qselect", super::qselect::main)
});
pub const QRSUB: Command = client("qrsub", || {
    super::run_with_text_args("qrsub", super::qrsub::main)
});
pub const QRSTAT: Command = client("qrstat", || {
    super::run_with_text_args("qrstat", super::qrstat::main)
});
pub const QRDEL: Command = client("qrdel", || {
    super::run_with_text_args("qrdel", super::qrdel::main)
});
pub const QQUOTA: Command = client("qquota", || {
    super::run_with_text_args("qquota", super::qquota::main)
});
pub const QRSH: Command = client("qrsh", || {
    super::run_with_text_args("qrsh", super::qrsh::main)
});
pub const QLOGIN: Command = client("qlogin", || {
    super::run_with_text_args("qlogin", super::qrsh::qlogin_main)
});
pub const QSH: Command = client("qsh", || {
    super::run_with_text_args("qsh", super::qrsh::qsh_main)
});
pub const SCHED_D: Command = Command {
    name: "sched_d",
    role: Role::Daemon,
    main: super::sched_d::main,
};
pub const SHEPHERD_COMMAND: Command = Command {
    name: SHEPHERD,
    role: Role::Daemon,
    main: shepherd_main,
};

pub const SIM: Command = Command {
    name: "gridspool-sim",
    role: Role::Tool,
    main: super::sim::main,
};

/// The shepherd's name, which `sched_d` also looks for beside itself
/// (`crate::launch::LauncherOptions::defaults`).
pub const SHEPHERD: &str = crate::launch::SHEPHERD_BINARY;

const fn client(name: &'static str, main: fn() -> ExitCode) -> Command {
    Command {
        name,
        role: Role::Client,
        main,
    }
}

fn shepherd_main() -> ExitCode {
    // Its arguments are paths in the spool, which sched_d passes; the shepherd's main wants
    // the program name first, as args() gives it.
    super::run_with_text_args(SHEPHERD, |args| {
        let mut all = vec![SHEPHERD.to_string()];
        all.extend(args);
        crate::launch::shepherd::main(all)
    })
}

/// The command a program name stands for: the last component of `argv[0]`.
pub fn lookup(argv0: &OsStr) -> Option<&'static Command> {
    let name = Path::new(argv0).file_name()?;
    COMMANDS.iter().find(|c| OsStr::new(c.name) == name)
}

/// `main` of the multicall program: the command named by `argv[0]`; any other name gets a
/// usage message listing the commands (exit 2).
pub fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    match lookup(&argv0) {
        Some(cmd) => start(cmd),
        None => {
            let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
            eprintln!(
                "gridspool: started as {:?}, which is none of its commands; run it through a \
                 link named after one of: {}",
                Path::new(&argv0)
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy(),
                names.join(" ")
            );
            ExitCode::from(2)
        }
    }
}

/// Runs one command: a separate binary's `main` (`run(&QSUB)`), with the same checks as the
/// multicall program.
pub fn run(cmd: &Command) -> ExitCode {
    start(cmd)
}

fn start(cmd: &Command) -> ExitCode {
    if cmd.role != Role::Client && crate::privilege::is_setgid() {
        crate::privilege::drop_group();
        if crate::privilege::is_setgid() {
            eprintln!(
                "{}: cannot give up the set-group-id group of this program; refusing to run",
                cmd.name
            );
            return ExitCode::from(1);
        }
    }
    (cmd.main)()
}
