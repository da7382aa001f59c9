//! The job side of `qrsh`: the shepherd's `relay` mode runs as the job's first process (after
//! the supervisor's fork dropped to the owner), connects to the waiting client, puts the
//! connections on its standard input, output and error, and `exec`s the command. The
//! supervisor sees an ordinary job: its limits, usage, accounting and `qdel` apply.
//!
//! Two TCP connections to `host:port`, each opened with a line `<cookie> stdio` or
//! `<cookie> stderr`: the first carries the command's standard input and output, the second
//! its standard error, or on a terminal (`--pty`) the terminal's new sizes from `qrsh`. The command's exit status reaches the client through the job's exits
//! line, as for `qsub -sync y`.

use super::LaunchError;
use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::time::Duration;

/// Copies `from` to `to` until the end of `from` (or an error), with `read` and `write`.
/// Not `std::io::copy`: between a socket and a pipe it uses `splice(2)`, which holds the
/// pipe's lock while it waits for the socket — a `qrsh` whose standard error is the pipe
/// that also takes `mpirun`'s output (`mpirun … 2>&1 | sort`) would then block `mpirun`'s
/// writes for as long as the remote command writes nothing to its standard error.
pub fn pump(from: &mut impl std::io::Read, to: &mut impl Write) -> std::io::Result<u64> {
    let mut buf = [0u8; 8192];
    let mut total = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
        total += n as u64;
    }
}

/// How long the job tries each address of its client.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the first of `hosts` (comma-separated addresses and names) that answers.
fn connect(hosts: &str, port: u16, cookie: &str, stream: &str) -> Result<TcpStream, LaunchError> {
    let refused =
        |e: String| LaunchError::Refused(format!("cannot reach qrsh at {hosts} port {port}: {e}"));
    let mut addrs = Vec::new();
    for host in hosts.split(',').filter(|h| !h.is_empty()) {
        if let Ok(found) = (host, port).to_socket_addrs() {
            addrs.extend(found);
        }
    }
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            Ok(mut s) => {
                s.write_all(format!("{cookie} {stream}\n").as_bytes())
                    .map_err(|e| refused(e.to_string()))?;
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(refused(last))
}

/// `relay <host> <port> <cookie> [--pty ROWSxCOLS] -- <program> <argv0> [args...]`: the
/// program is found by PATH when it names no directory.
pub fn relay_mode(rest: &[String]) -> Result<(), LaunchError> {
    let usage = || {
        LaunchError::Protocol(
            "usage: gridspool-shepherd relay <host> <port> <cookie> [--pty ROWSxCOLS] -- <program> <argv0> [args...]"
                .into(),
        )
    };
    let (pty, rest): (Option<(u16, u16)>, Vec<String>) = match rest {
        [h, p, c, flag, size, more @ ..] if flag == "--pty" => {
            let (rows, cols) = size.split_once('x').ok_or_else(usage)?;
            let size = (
                rows.parse().map_err(|_| usage())?,
                cols.parse().map_err(|_| usage())?,
            );
            let mut v = vec![h.clone(), p.clone(), c.clone()];
            v.extend(more.iter().cloned());
            (Some(size), v)
        }
        _ => (None, rest.to_vec()),
    };
    let [host, port, cookie, dashes, program, argv0, args @ ..] = &rest[..] else {
        return Err(usage());
    };
    if dashes != "--" {
        return Err(usage());
    }
    let port: u16 = port.parse().map_err(|_| usage())?;
    // An installed shepherd may be the setgid multicall program: the command must not keep
    // its group (nor any effective id the job's owner does not have).
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    nix::unistd::setresgid(gid, gid, gid)
        .and_then(|()| nix::unistd::setresuid(uid, uid, uid))
        .map_err(|e| LaunchError::Protocol(format!("cannot drop privileges: {e}")))?;
    let stdio = connect(host, port, cookie, "stdio")?;
    let stderr = connect(host, port, cookie, "stderr")?;
    if let Some(size) = pty {
        return with_pty(stdio, stderr, size, program, args);
    }
    let dup = |e: nix::Error| LaunchError::Protocol(format!("dup2: {e}"));
    nix::unistd::dup2_stdin(&stdio).map_err(dup)?;
    nix::unistd::dup2_stdout(&stdio).map_err(dup)?;
    nix::unistd::dup2_stderr(&stderr).map_err(dup)?;
    drop((stdio, stderr));
    let mut command = std::process::Command::new(program);
    command.arg0(argv0).args(args);
    let e = command.exec();
    // Told on the connection the user sees, as a shell says it.
    eprintln!("{argv0}: {e}");
    std::process::exit(if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    });
}

/// The command on a new pseudo terminal of `size`: started by util-linux's `setsid --ctty`
/// (a new session whose controlling terminal is the one on its standard input: this keeps
/// the shepherd free of `unsafe`), its standard streams the terminal's slave side; this
/// process copies between the master side and the connection until the command has ended,
/// then ends as it did. `setsid` sets no `argv[0]`: the command sees its path there.
fn with_pty(
    stdio: TcpStream,
    stderr: TcpStream,
    (rows, cols): (u16, u16),
    program: &str,
    args: &[String],
) -> Result<(), LaunchError> {
    use nix::pty::{Winsize, openpty};
    use std::os::unix::process::ExitStatusExt;
    let size = Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty =
        openpty(Some(&size), None).map_err(|e| LaunchError::Protocol(format!("openpty: {e}")))?;
    let slave = std::fs::File::from(pty.slave);
    let io = |what: &'static str, e: std::io::Error| LaunchError::io(what, "pty", e);
    // The second connection carries no standard error here (the terminal has it all): qrsh
    // sends the new size of its terminal on it, `ROWSxCOLS` lines, which the terminal takes
    // (`stty` on its slave side; the kernel tells the command with SIGWINCH).
    // By its name, opened for each change: a descriptor of the slave side kept open here
    // would keep the master side from ever reading the end of the session.
    let resized = {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd()))
            .map_err(|e| io("readlink", e))?
    };
    std::thread::spawn(move || {
        use std::io::BufRead;
        use std::os::unix::fs::OpenOptionsExt;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let Some((rows, cols)) = line.trim().split_once('x') else {
                continue;
            };
            if rows.parse::<u16>().is_err() || cols.parse::<u16>().is_err() {
                continue;
            }
            // Not as this process's controlling terminal.
            let Ok(tty) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(nix::fcntl::OFlag::O_NOCTTY.bits())
                .open(&resized)
            else {
                break;
            };
            let _ = std::process::Command::new("stty")
                .args(["rows", rows, "cols", cols])
                .stdin(tty)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    });
    let mut child = std::process::Command::new("setsid")
        .arg("--ctty")
        .arg(program)
        .args(args)
        .stdin(slave.try_clone().map_err(|e| io("dup", e))?)
        .stdout(slave.try_clone().map_err(|e| io("dup", e))?)
        .stderr(slave)
        .spawn()
        .map_err(|e| io("start setsid", e))?;
    let master = std::fs::File::from(pty.master);
    let mut to_terminal = master.try_clone().map_err(|e| io("dup", e))?;
    let mut from_client = stdio.try_clone().map_err(|e| io("dup", e))?;
    std::thread::spawn(move || {
        let _ = pump(&mut from_client, &mut to_terminal);
    });
    let mut from_terminal = master;
    let mut to_client = stdio;
    // Ends with EIO once the command and its descendants closed the terminal.
    let _ = pump(&mut from_terminal, &mut to_client);
    let _ = to_client.shutdown(std::net::Shutdown::Both);
    let status = child.wait().map_err(|e| io("wait", e))?;
    std::process::exit(
        status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(1),
    );
}
