//! `qrsh [options] command [args]`: a job whose command runs on the host the scheduler
//! grants, with its standard input, output and error connected to `qrsh`'s and its exit
//! status returned as `qrsh`'s, as SGE's `qrsh` does.
//!
//! `qrsh` listens on a TCP port, submits the job through `qsub`'s code (`-b y`, `-now y`
//! unless told otherwise, named `QRSH`) with the port and a secret cookie, and waits. On the
//! execution host the shepherd starts the job as any other, but its first process is the
//! shepherd's `relay`, which connects back, puts the connections on its standard streams and
//! becomes the command (`launch::relay`). `qrsh` copies its input to the job and the job's
//! output to its own, then takes the exit status from the job's exits line.

use super::Output;
use super::qsub::{Dispatch, ExitLog, Submitted};
use crate::compat::docs::{CommandDoc, ValueHint};
use crate::compat::options::{Arity, OptionSpec};
use crate::model::{InteractiveSession, JobId};
use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// qrsh's own options; every `qsub` option is taken too.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-inherit",
        Arity::Flag,
        "[-inherit]",
        "start command on host as a task of the running parallel job (qrsh -inherit host command)",
    ),
    OptionSpec::new(
        "-now",
        Arity::One,
        "[-now y[es]|n[o]]",
        "start the job immediately or not at all (default: y)",
    ),
    OptionSpec::new(
        "-verbose",
        Arity::Flag,
        "[-verbose]",
        "say on standard error how the session comes about",
    ),
    OptionSpec::new(
        "-nostdin",
        Arity::Flag,
        "[-nostdin]",
        "do not pass standard input to the command",
    ),
    OptionSpec::new(
        "-noshell",
        Arity::Flag,
        "[-noshell]",
        "start the command without a shell",
    ),
    OptionSpec::new(
        "-pty",
        Arity::One,
        "[-pty y[es]|n[o]]",
        "start the command in a pseudo terminal",
    ),
];

pub const DOC: CommandDoc = CommandDoc {
    name: "qrsh",
    summary: "run a command on a gridspool execution host, interactively",
    synopsis: "[options] command [args]",
    help_indent: "   ",
    help_width: 34,
    syntax_width: 20,
    options: OPTIONS,
    operand: Some(("command [args]", "the command and its arguments")),
    operand_hint: ValueHint::Files,
    syntax: &[],
    description: &[
        "qrsh submits an interactive job that runs command with its arguments on the execution host the scheduler grants, with qrsh's standard input, output and error connected to it, and exits with the command's exit status. qrsh takes every qsub option (-l, -q, -pe, -cwd, -V, -v, -N…); the job is named QRSH unless -N names it, and shows in qstat as any job, its accounting record written when it ends.",
        "With -pty y, or without a command (an interactive login: the user's login shell), the command runs on a pseudo terminal of the size of qrsh's terminal, which follows it when it is resized, and which qrsh puts in raw mode meanwhile: keys such as Ctrl-C reach the command.",
        "With -now y (the default) the job must start at once: when no queue instance can take it, qrsh says so and exits 1, the job removed. With -now n it waits in the queue.",
        "The execution host connects back to qrsh's host on a TCP port qrsh listens on, with a secret only the job's files hold (they are not readable by other users).",
        "qrsh -inherit [-nostdin] [-noshell] [-cwd] [-V] [-v var[=value],...] host command [args], run inside a task of a parallel job (JOB_ID and SGE_TASK_ID set), starts command on host as a task of that job, as mpirun does under Grid Engine's tight integration: host must be one the job was granted, with a slot of its grant there not yet used by another such task (on the master task's host, one slot is the master task's own when the PE's job_is_first_task is TRUE), the PE must have control_slaves TRUE, and only the job's owner may. The task runs with the job's environment and the -v/-V variables, in the job's working directory (or qrsh's with -cwd), is accounted on its own (pe_taskid 1.host, 2.host...), and ends when the job does.",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        (
            "0..255",
            "The command's exit status (128 + the signal that ended it).",
        ),
        (
            "1",
            "The job could not be submitted, scheduled at once (-now y) or started, or qrsh's options are wrong.",
        ),
    ],
    compatibility: &[
        "-help prints SGE's text, which lists options of qsub and qconf qrsh does not take (-astnode, -mattr, -srqs, -sss) and leaves out -verbose.",
        "-verbose says where the session goes but not the pe task id of qrsh -inherit. Without a pseudo terminal, Ctrl-C (and SIGTERM, SIGHUP) makes qrsh delete its job, which kills the command, where SGE passes the signal itself on. The transport is a TCP connection from the execution host back to qrsh, not rsh or ssh.",
    ],
    see_also: &["qsub", "qstat", "qdel"],
};

/// SGE 8.1.9's `qrsh -help` and `qlogin -help`: the options and syntax items SGE lists, in
/// its order, each line as `qsub -help` prints it, but for qrsh's own options.
const SGE_QRSH_HELP: (&[&str], &[&str]) = (
    &[
        "-ac",
        "-astnode",
        "-A",
        "-b",
        "-cwd",
        "-dc",
        "-h",
        "-hard",
        "-he",
        "-help",
        "-hold_jid",
        "-hold_jid_ad",
        "-inherit",
        "-js",
        "-jsv",
        "-l",
        "-M",
        "-m",
        "-masterq",
        "-mattr",
        "-N",
        "-nostdin",
        "-noshell",
        "-notify",
        "-now",
        "-ot",
        "-p",
        "-pe",
        "-pty",
        "-q",
        "-sc",
        "-soft",
        "-srqs",
        "-sss",
        "-v",
        "-verify",
        "-V",
        "-wd",
        "-@",
    ],
    &[
        "account_string",
        "complex_list",
        "context_list",
        "job_identifier_list",
        "jsv_url",
        "rqs_list",
        "mail_address",
        "mail_list",
        "mail_options",
        "node_path",
        "node_shares_list",
        "working_directory",
        "priority",
        "resource_list",
        "simple_context_list",
        "slot_range",
        "variable_list",
        "obj_nm",
        "attr_nm",
        "obj_id_list",
        "wc_cqueue",
        "wc_host",
        "wc_hostgroup",
        "wc_qinstance",
        "wc_qdomain",
        "wc_queue",
        "wc_queue_list",
    ],
);
const SGE_QLOGIN_HELP: &[&str] = &[
    "-ac", "-astnode", "-A", "-dc", "-hard", "-he", "-help", "-js", "-l", "-M", "-m", "-masterq",
    "-mattr", "-N", "-now", "-ot", "-p", "-pe", "-q", "-sc", "-soft", "-srqs", "-verify", "-@",
];
/// The syntax items of `qrsh -help` that `qlogin -help` leaves out (their options are not
/// qlogin's).
const NOT_QLOGIN_SYNTAX: &[&str] = &[
    "job_identifier_list",
    "jsv_url",
    "working_directory",
    "variable_list",
];

/// The lines SGE's `qrsh -help` has for the options `qsub -help` does not list.
static SGE_QRSH_ONLY: &[OptionSpec] = &[
    OptionSpec::new(
        "-inherit",
        Arity::Flag,
        "[-inherit]",
        "inherit existing job environment JOB_ID for rsh",
    ),
    OptionSpec::new(
        "-nostdin",
        Arity::Flag,
        "[-nostdin]",
        "suppress stdin for rsh",
    ),
    OptionSpec::new(
        "-noshell",
        Arity::Flag,
        "[-noshell]",
        "start command without wrapping <loginshell> -c",
    ),
    OptionSpec::new(
        "-pty",
        Arity::One,
        "[-pty y[es]|n[o]]",
        "start job in a pty",
    ),
    OptionSpec::new("-sss", Arity::Flag, "[-sss]", "show scheduler state"),
];

/// `qrsh -help` (`qlogin -help`), byte for byte as SGE 8.1.9 prints it.
pub fn sge_help(qlogin: bool) -> String {
    use crate::compat::qsub_options::{QSUB_DOC, QSUB_OPTIONS, QSUB_SYNTAX};
    let (name, options) = if qlogin {
        ("qlogin", SGE_QLOGIN_HELP)
    } else {
        ("qrsh", SGE_QRSH_HELP.0)
    };
    let syntax = SGE_QRSH_HELP
        .1
        .iter()
        .filter(|n| !(qlogin && NOT_QLOGIN_SYNTAX.contains(n)));
    let rows: Vec<OptionSpec> = options
        .iter()
        .filter_map(|n| {
            SGE_QRSH_ONLY
                .iter()
                .chain(QSUB_OPTIONS)
                .find(|o| o.name == *n)
        })
        .map(|o| OptionSpec { listed: true, ..*o })
        .collect();
    let mut out = format!(
        "SGE 8.1.9\nusage: {name} [options]\n{}\n",
        crate::compat::options::help_lines(&rows, QSUB_DOC.help_indent, QSUB_DOC.help_width)
    );
    for item in syntax.filter_map(|n| QSUB_SYNTAX.iter().find(|i| i.name == *n)) {
        out.push_str(&format!(
            "{:<width$}{}\n",
            item.name,
            item.definition,
            width = QSUB_DOC.syntax_width
        ));
    }
    out
}

/// `qlogin [options]`: an interactive login on the granted host, as `qrsh` without a
/// command (the job named `QLOGIN`).
pub const QLOGIN_DOC: CommandDoc = CommandDoc {
    name: "qlogin",
    summary: "log in to a gridspool execution host, interactively",
    synopsis: "[options]",
    operand: None,
    description: &[
        "qlogin submits an interactive job that runs the user's login shell on the execution host the scheduler grants, on a pseudo terminal of the size of qlogin's terminal, which it puts in raw mode meanwhile. It takes qsub's options (-l, -q, -pe, -now…) and qrsh's; the job is named QLOGIN. qlogin exits with the shell's exit status.",
    ],
    compatibility: &[
        "The session goes over a TCP connection from the execution host back to qlogin, not over rlogin or ssh.",
    ],
    see_also: &["qrsh", "qsub", "qstat"],
    // Without -inherit, which is qrsh's alone.
    options: OPTIONS.split_at(1).1,
    ..DOC
};

/// `qsh`: SGE's X11 session (an `xterm` on the execution host, displayed on `-display`).
/// Refused: compute nodes rarely have X11 libraries, nor a way back to the user's display;
/// `qrsh -pty y` and `qlogin` give a terminal session.
pub const QSH_DOC: CommandDoc = CommandDoc {
    name: "qsh",
    summary: "an X11 session on an execution host: not offered by gridspool",
    synopsis: "[options]",
    operand: None,
    options: &[],
    description: &[
        "qsh, which in Grid Engine starts an xterm on an execution host displayed on the user's X server, is refused by gridspool with a message and exit status 1: use qlogin, or qrsh -pty y, for an interactive terminal session, and ssh -X to a host for X11 programs.",
    ],
    exit_status: &[("1", "Always: qsh is not offered.")],
    compatibility: &["SGE's qsh starts an xterm; gridspool refuses it."],
    see_also: &["qlogin", "qrsh"],
    ..DOC
};

/// The `qsh` binary: says that X11 sessions are not offered, and what to use instead.
pub fn qsh_main(args: Vec<String>) -> std::process::ExitCode {
    if args.iter().any(|a| a == "-help") {
        print!("{}", crate::compat::docs::help_text(&QSH_DOC));
        return std::process::ExitCode::SUCCESS;
    }
    refuse(
        "qsh: X11 sessions (qsh) are not offered by gridspool: use qlogin or qrsh -pty y for a terminal session",
    )
    .finish()
}

/// The `qrsh` binary.
pub fn main(mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    run(args, spool, false).finish()
}

/// The `qlogin` binary.
pub fn qlogin_main(mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    run(args, spool, true).finish()
}

fn refuse(text: impl Into<String>) -> Output {
    let mut o = Output {
        code: 1,
        ..Output::default()
    };
    o.err(text.into());
    o
}

/// A secret for the job's connections: 16 random bytes, in hex.
fn cookie() -> Result<String, std::io::Error> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn run(args: Vec<String>, spool: Option<std::path::PathBuf>, qlogin: bool) -> Output {
    if args.iter().any(|a| a == "-help") {
        return Output {
            stdout: sge_help(qlogin),
            ..Output::default()
        };
    }
    if !qlogin && args.iter().any(|a| a == "-inherit") {
        return inherit(args, spool);
    }
    // qrsh's own options, up to the command (the first word that is neither an option nor
    // one of its values); the rest goes to qsub's parser.
    let mut qsub_args = vec![
        "-b".to_string(),
        "y".to_string(),
        "-now".to_string(),
        "y".to_string(),
    ];
    let mut stdin = true;
    let mut pty = None;
    let mut verbose = false;
    let mut words = args.into_iter().peekable();
    let mut command: Vec<String> = Vec::new();
    while let Some(w) = words.next() {
        match w.as_str() {
            "-nostdin" => stdin = false,
            "-noshell" => qsub_args.extend(["-shell".to_string(), "no".to_string()]),
            "-pty" => match words.next().as_deref() {
                Some(v) if v.starts_with('n') => pty = Some(false),
                Some(v) if v.starts_with('y') => pty = Some(true),
                _ => return refuse("qrsh: -pty needs y or n"),
            },
            "-verbose" => verbose = true,
            _ if w.starts_with('-') => {
                let arity = crate::compat::qsub_options::QSUB_OPTIONS
                    .iter()
                    .find(|o| o.name == w)
                    .map(|o| o.arity);
                qsub_args.push(w);
                let values = match arity {
                    Some(Arity::One) => 1,
                    Some(Arity::Two) => 2,
                    Some(Arity::Optional) => {
                        usize::from(words.peek().is_some_and(|v| !v.starts_with('-')))
                    }
                    _ => 0,
                };
                for _ in 0..values {
                    if let Some(v) = words.next() {
                        qsub_args.push(v);
                    }
                }
            }
            _ if qlogin => {
                return refuse(format!("qlogin: {w}: qlogin takes no command; use qrsh"));
            }
            _ => {
                command.push(w);
                command.extend(words.by_ref());
            }
        }
    }
    let login = command.is_empty();
    if login {
        // An interactive login: the user's login shell, on a terminal.
        let shell = nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|u| u.shell.to_string_lossy().into_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".to_string());
        qsub_args.extend([
            "-shell".to_string(),
            "no".to_string(),
            "-N".to_string(),
            if qlogin { "QLOGIN" } else { "QRLOGIN" }.to_string(),
        ]);
        command = vec![shell, "-l".to_string()];
        pty.get_or_insert(true);
    }
    let pty = (pty == Some(true)).then(terminal_size);
    let (listener, session) = match listen(pty) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let secret = session.cookie.clone();
    qsub_args.extend(command);
    let (env, id, now, interrupts) = match super::qsub::submit(qsub_args, spool, Some(session)) {
        Ok(Submitted::Interactive {
            env,
            id,
            now,
            interrupts,
        }) => (env, id, now, interrupts),
        Ok(Submitted::Done(o)) => return o,
        Err(e) => {
            let (stderr, code) = e.render_interactive(if qlogin { "qlogin" } else { "qrsh" });
            return Output {
                stderr,
                code,
                ..Output::default()
            };
        }
    };
    // Interrupted (Ctrl-C without a terminal, a hang-up, a kill), qrsh deletes its job: the
    // command is killed, as SGE's qrsh passes the signal on.
    if let Some(rx) = interrupts {
        let spool = env.spool.clone();
        let who = env.requester();
        std::thread::spawn(move || {
            if rx.recv().is_ok() {
                let _ = spool.publish_request(
                    who,
                    vec![crate::model::RequestAction::Delete {
                        job: id,
                        tasks: crate::model::TaskSelector::All,
                        force: false,
                    }],
                );
            }
        });
    }
    // qlogin always tells what it does, as qrsh does with -verbose (SGE's qsh.c): the job
    // it submitted on stdout, then that it waits, on the same line as what comes of it.
    let verbose = verbose || qlogin;
    if verbose {
        let name = env
            .spool
            .read_job(id)
            .ok()
            .flatten()
            .map_or_else(String::new, |job| job.spec.name);
        println!("Your job {id} (\"{name}\") has been submitted");
        eprint!("waiting for interactive job to be scheduled ...");
        let _ = std::io::Write::flush(&mut std::io::stderr());
    }
    let mut outcome = JobOutcome {
        env: &env,
        id,
        log: ExitLog::new(env.spool.exits_file(id)),
        verbose,
    };
    if now {
        match super::qsub::wait_for_dispatch(&env, None, id) {
            Dispatch::Scheduled => outcome.scheduled(),
            Dispatch::Refused | Dispatch::Interrupted => {
                let prog = if qlogin { "qlogin" } else { "qrsh" };
                return refuse(format!(
                    "Your \"{prog}\" request could not be scheduled, try again later."
                ));
            }
        }
    }
    // Raw mode while the command runs on its terminal; restored however qrsh ends.
    let _raw = pty.and_then(|_| RawMode::enter());
    match serve(&listener, &secret, stdin, pty.is_some(), &mut outcome) {
        Ok(code) => Output {
            code,
            ..Output::default()
        },
        Err(message) => refuse(message),
    }
}

/// A port for the command's connections, and the session that tells the command where it
/// is and the secret to open them with.
fn listen(pty: Option<(u16, u16)>) -> Result<(TcpListener, InteractiveSession), Output> {
    let listener = TcpListener::bind(("0.0.0.0", 0))
        .map_err(|e| refuse(format!("error: qrsh cannot listen for the job: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| refuse(format!("error: {e}")))?
        .port();
    let cookie = cookie().map_err(|e| refuse(format!("error: /dev/urandom: {e}")))?;
    Ok((
        listener,
        InteractiveSession {
            host: reachable_as(),
            port,
            cookie,
            pty,
        },
    ))
}

/// `qrsh -inherit [-nostdin] [-noshell] [-cwd] [-V] [-v var[=value],...] host command
/// [args]`, from inside a running task of a parallel job (`JOB_ID`, `SGE_TASK_ID`): the
/// command runs as a pe task on `host`, one of the task's granted hosts
/// (`sched::daemon::pe_tasks` decides), connected to this process as `qrsh`'s command is.
fn inherit(args: Vec<String>, spool: Option<std::path::PathBuf>) -> Output {
    let job: JobId = match std::env::var("JOB_ID") {
        Err(_) => {
            return refuse(
                "error: \"qrsh\" called with option \"-inherit\", but \"JOB_ID\" not set in environment",
            );
        }
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(n) => JobId(n),
            Err(_) => return refuse(format!("error: invalid \"JOB_ID\" {v}")),
        },
    };
    // `undefined` outside an array job.
    let task = std::env::var("SGE_TASK_ID")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(1);
    let (mut stdin, mut shell, mut cwd, mut env) = (true, true, None, Vec::new());
    let mut verbose = false;
    let mut words = args.into_iter();
    let mut host = None;
    while let Some(w) = words.next() {
        match w.as_str() {
            "-inherit" => {}
            "-nostdin" => stdin = false,
            "-noshell" => shell = false,
            "-verbose" => verbose = true,
            "-cwd" => match std::env::current_dir() {
                Ok(d) => cwd = Some(d.to_string_lossy().into_owned()),
                Err(e) => return refuse(format!("error: cannot read the working directory: {e}")),
            },
            "-V" => env.extend(std::env::vars().map(|(name, value)| crate::model::EnvVar {
                name,
                value: Some(value),
            })),
            "-v" => {
                let Some(list) = words.next() else {
                    return refuse("error: ERROR! -v option must have argument");
                };
                for item in list.split(',').filter(|i| !i.is_empty()) {
                    let (name, value) = match item.split_once('=') {
                        Some((n, v)) => (n.to_string(), Some(v.to_string())),
                        None => (item.to_string(), std::env::var(item).ok()),
                    };
                    env.push(crate::model::EnvVar { name, value });
                }
            }
            // SGE: "qrsh -inherit only allows -cwd and setting of environment".
            _ if w.starts_with('-') => return refuse(format!("error: Unknown option {w}")),
            _ => {
                host = Some(w);
                break;
            }
        }
    }
    let command: Vec<String> = words.collect();
    let Some(host) = host.filter(|_| !command.is_empty()) else {
        return refuse(
            "error: usage with \"-inherit\" option: \"qrsh -inherit ... <host> <command> [args]\"",
        );
    };
    let client = match super::load_env(spool) {
        Ok(e) => e,
        Err(o) => return o,
    };
    let (listener, session) = match listen(None) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let secret = session.cookie.clone();
    if verbose {
        eprintln!("Starting server daemon at host \"{host}\"");
    }
    let asked_host = host.clone();
    let asked = crate::model::PeTaskRequest {
        job,
        task,
        host,
        command,
        shell,
        cwd,
        env,
        session,
    };
    let request = match client.spool.publish_request(
        client.requester(),
        vec![crate::model::RequestAction::StartPeTask(Box::new(asked))],
    ) {
        Ok(r) => r,
        Err(e) => return refuse(format!("error: {e}")),
    };
    let mut outcome = PeTaskOutcome {
        spool: &client.spool,
        job,
        seq: request.seq,
        verbose: verbose.then_some(asked_host),
    };
    match serve(&listener, &secret, stdin, false, &mut outcome) {
        Ok(code) => Output {
            code,
            ..Output::default()
        },
        Err(message) => refuse(message),
    }
}

/// A pe task: `sched_d`'s reply to the request.
struct PeTaskOutcome<'a> {
    spool: &'a crate::spool::Spool,
    job: JobId,
    seq: u64,
    /// `-verbose`: the host, to say the session is established.
    verbose: Option<String>,
}

impl Outcome for PeTaskOutcome<'_> {
    fn never_connects(&mut self) -> Option<String> {
        match self.exit_status()? {
            Err(why) => Some(why),
            Ok(status) => Some(format!(
                "error: the task of job {} ended before it connected (exit status {status})",
                self.job
            )),
        }
    }

    fn exit_status(&mut self) -> Option<Result<u8, String>> {
        let reply = self.spool.read_reply(self.seq)?;
        Some(match (reply.ok, reply.exit_status) {
            (true, Some(status)) => Ok((status & 0xff) as u8),
            _ => Err(format!(
                "error: executing task of job {} failed: {}",
                self.job, reply.message
            )),
        })
    }

    fn connected(&mut self) {
        if let Some(host) = self.verbose.take() {
            eprintln!("Establishing builtin session to host {host} ...");
        }
    }
}

/// How the job's host may reach this one: its addresses that are not loopback (an
/// execution host need not resolve this host's name, and a name that resolves to a loopback
/// address there would lead the job to its own host), then the host name.
fn reachable_as() -> String {
    let mut out: Vec<String> = Vec::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for a in addrs {
            let Some(addr) = a.address else { continue };
            let ip: Option<std::net::IpAddr> = if let Some(v4) = addr.as_sockaddr_in() {
                Some(std::net::IpAddr::V4(v4.ip()))
            } else {
                addr.as_sockaddr_in6()
                    .filter(|v6| v6.scope_id() == 0)
                    .map(|v6| std::net::IpAddr::V6(v6.ip()))
            };
            if let Some(ip) = ip
                && !ip.is_loopback()
                && !out.contains(&ip.to_string())
            {
                out.push(ip.to_string());
            }
        }
    }
    out.push(crate::identity::short_hostname());
    out.join(",")
}

/// The size of qrsh's terminal (rows, columns), as `stty size` reads it from standard
/// input, else 24x80.
fn terminal_size() -> (u16, u16) {
    std::process::Command::new("stty")
        .arg("size")
        .stdin(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8(o.stdout).ok()?;
            let mut w = text.split_whitespace();
            let rows: u16 = w.next()?.parse().ok()?;
            let cols: u16 = w.next()?.parse().ok()?;
            (rows > 0 && cols > 0).then_some((rows, cols))
        })
        .unwrap_or((24, 80))
}

/// qrsh's terminal in raw mode (keys go to the command as typed), restored on drop.
struct RawMode {
    saved: nix::sys::termios::Termios,
}

impl RawMode {
    fn enter() -> Option<RawMode> {
        use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
        Some(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = nix::sys::termios::tcsetattr(
            std::io::stdin(),
            nix::sys::termios::SetArg::TCSANOW,
            &self.saved,
        );
    }
}

/// How the command a session waits for ends, besides its connections: a job's exits line,
/// or the reply `sched_d` gives to `qrsh -inherit`.
trait Outcome {
    /// Checked while waiting for the connections: why the command never will connect.
    fn never_connects(&mut self) -> Option<String>;
    /// The command's exit status, once known; an error when it never will be.
    fn exit_status(&mut self) -> Option<Result<u8, String>>;
    /// The command has connected (`-verbose` says so).
    fn connected(&mut self) {}
}

/// A `qrsh` job: its exits line, its error state, its files.
struct JobOutcome<'a> {
    env: &'a super::ClientEnv,
    id: JobId,
    log: ExitLog,
    /// `-verbose`: SGE's messages on the way, on standard error; cleared once said.
    verbose: bool,
}

impl JobOutcome<'_> {
    /// `-verbose`: the job runs, and where.
    fn scheduled(&mut self) {
        if !std::mem::take(&mut self.verbose) {
            return;
        }
        eprintln!(
            "\nYour interactive job {} has been successfully scheduled.",
            self.id
        );
        let host = self
            .env
            .spool
            .read_job(self.id)
            .ok()
            .flatten()
            .and_then(|job| job.tasks.running.first().map(|t| t.host.clone()));
        if let Some(host) = host {
            eprintln!("Establishing builtin session to host {host} ...");
        }
    }
}

impl Outcome for JobOutcome<'_> {
    fn never_connects(&mut self) -> Option<String> {
        let (env, id) = (self.env, self.id);
        if let Some(end) = self.log.read_new().into_iter().next() {
            return Some(format!(
                "error: job {id} ended before it connected (exit status {}, failed {})",
                end.exit_status, end.failed
            ));
        }
        match env.spool.read_job(id) {
            Ok(Some(job)) if job.error.is_some() => {
                let why = job.error.map(|e| e.message).unwrap_or_default();
                let _ = env.spool.publish_request(
                    env.requester(),
                    vec![crate::model::RequestAction::Delete {
                        job: id,
                        tasks: crate::model::TaskSelector::All,
                        force: false,
                    }],
                );
                Some(format!("error: job {id} could not start: {why}"))
            }
            Ok(None) => Some(format!("error: job {id} is gone")),
            _ => None,
        }
    }

    fn exit_status(&mut self) -> Option<Result<u8, String>> {
        if let Some(end) = self.log.read_new().into_iter().next() {
            return Some(Ok((end.exit_status & 0xff) as u8));
        }
        let (spool, id) = (&self.env.spool, self.id);
        (!spool.job_file(id).exists() && !spool.state_file(id).exists())
            .then(|| Err(format!("error: job {id} ended without an exit status")))
    }

    fn connected(&mut self) {
        self.scheduled();
    }
}

/// Takes the job's two connections, relays, and returns the command's exit status.
fn serve(
    listener: &TcpListener,
    secret: &str,
    stdin: bool,
    terminal: bool,
    outcome: &mut dyn Outcome,
) -> Result<u8, String> {
    let (stdio, stderr) = accept_both(listener, secret, outcome)?;
    outcome.connected();
    if terminal {
        // The command's terminal follows qrsh's: each new size (SIGWINCH) goes to the relay.
        let mut sizes = stderr.try_clone().map_err(|e| e.to_string())?;
        if let Ok(mut signals) =
            signal_hook::iterator::Signals::new([signal_hook::consts::SIGWINCH])
        {
            std::thread::spawn(move || {
                use std::io::Write;
                for _ in signals.forever() {
                    let (rows, cols) = terminal_size();
                    if writeln!(sizes, "{rows}x{cols}").is_err() {
                        break;
                    }
                }
            });
        }
    }
    if stdin {
        let mut to_job = stdio.try_clone().map_err(|e| e.to_string())?;
        std::thread::spawn(move || {
            let _ = crate::launch::pump(&mut std::io::stdin().lock(), &mut to_job);
            let _ = to_job.shutdown(Shutdown::Write);
        });
    } else {
        let _ = stdio.shutdown(Shutdown::Write);
    }
    let errors = std::thread::spawn(move || {
        let mut from = stderr;
        let _ = crate::launch::pump(&mut from, &mut std::io::stderr().lock());
    });
    let _ = crate::launch::pump(&mut { stdio }, &mut std::io::stdout().lock());
    let _ = errors.join();
    // The exit status, once sched_d has recorded the end.
    let mut delay = Duration::from_millis(5);
    loop {
        if let Some(status) = outcome.exit_status() {
            return status;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    }
}

/// The job's `stdio` and `stderr` connections, each opened with the secret; gives up when
/// the command will never connect.
fn accept_both(
    listener: &TcpListener,
    secret: &str,
    outcome: &mut dyn Outcome,
) -> Result<(TcpStream, TcpStream), String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let (mut stdio, mut stderr) = (None, None);
    let mut checked = Instant::now();
    let mut given_up = None;
    loop {
        match listener.accept() {
            Ok((mut conn, _)) => {
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut line = Vec::new();
                let mut byte = [0u8; 1];
                while line.len() < 128 {
                    match conn.read(&mut byte) {
                        Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
                        _ => break,
                    }
                }
                let _ = conn.set_read_timeout(None);
                let line = String::from_utf8_lossy(&line).into_owned();
                match line.split_once(' ') {
                    Some((c, "stdio")) if c == secret => stdio = Some(conn),
                    Some((c, "stderr")) if c == secret => stderr = Some(conn),
                    // Anything else is not the job: dropped.
                    _ => {}
                }
                match (stdio.take(), stderr.take()) {
                    (Some(a), Some(b)) => return Ok((a, b)),
                    (a, b) => (stdio, stderr) = (a, b),
                }
            }
            // Only with no connection waiting: a command that connected and ended at once
            // has its end recorded while its connections may still wait to be accepted, so
            // an end seen is final only once the queue has been found empty after it.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(why) = given_up.take() {
                    return Err(why);
                }
                if checked.elapsed() > Duration::from_millis(200) {
                    checked = Instant::now();
                    given_up = outcome.never_connects();
                    if given_up.is_some() {
                        continue;
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("error: {e}")),
        }
    }
}
