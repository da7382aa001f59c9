//! Starting the job from its supervisor: one `fork`, then in the child only async-signal-safe
//! system calls on data prepared before the fork, then `execve` of the job.
//!
//! This is gridspool's one audited module with `unsafe` (ENGINEERING.md: "`unsafe_code =
//! "deny"` outside one audited module"). It replaces a second `exec` of the shepherd binary
//! (the former `gridspool-shepherd exec` helper), whose dynamic loading, relocation and page
//! faults cost about as much CPU as the trivial jobs it started.
//!
//! # Why this is sound
//!
//! - `fork` is called by the supervisor, a single-threaded process (it never starts a
//!   thread), so no lock of another thread is held in the child; nonetheless the child does
//!   nothing but what POSIX lists as async-signal-safe (`signal-safety(7)`): `sigprocmask`,
//!   `signal`, `setsid`, `setgroups`, `setgid`, `setuid`, `setrlimit`, `umask`, `chdir`,
//!   `open`, `dup2`, `stat`, `access`, `write`, `execve`, `_exit`, and `setpriority`, which
//!   POSIX does not list but which glibc makes a bare system call, as it makes `setrlimit`
//!   (no lock, no allocation). Everything that allocates
//!   or reads `/etc` (the group list, the C strings, the `argv`/`envp` pointer arrays) is
//!   built before the fork, in [`JobExec::new`].
//! - The pointer arrays point into `CString`s owned by the same [`JobExec`], which outlives
//!   the `execve` call (the child never returns from [`spawn`] but by `execve` or `_exit`).
//! - Where the task has a cgroup v2 group, the child is made by `clone3` with
//!   `CLONE_INTO_CGROUP` instead of `fork` ([`fork_into_cgroup`]): the same copy of the
//!   single-threaded supervisor, born in the group, and the same child code after it.
//! - A failure in the child is written as a fixed-size record to a close-on-exec pipe and the
//!   child `_exit`s (no destructors, no atexit handlers, no stdio flush of the parent's
//!   buffers); a successful `execve` closes the pipe, so end-of-file without a record means
//!   the job is running. The supervisor turns a record into SGE's failure code and message.
//!
//! # The start server's fork
//!
//! [`fork_supervisor`] is the other fork of this module: `gridspool-shepherd start-server`
//! forks (without `exec`) the supervisor of each task. Its child runs ordinary Rust code
//! (allocations, file I/O, `getpwnam`), which is sound only because the parent is
//! single-threaded at the moment of the fork: no other thread can hold the allocator's or
//! stdio's locks, or be half-way through anything, in the copy of its memory the child gets.
//! The start server never starts a thread, and [`fork_supervisor`] checks that the process
//! has exactly one thread (`/proc/self/stat`) before it forks, refusing otherwise. The child
//! gets `/dev/null` on stdin and the two given pipes on stdout and stderr, keeps the
//! descriptors it is given (the write end of the server's result pipe; a held start's wake
//! pipe and staging directory) from descriptor 3 up, close-on-exec, closes every
//! other descriptor it inherited (the server's session pipes, the other tasks' pipes), and never
//! returns into the server's code: it ends with `_exit`, so no destructor of the server's
//! objects (whose descriptors it closed) ever runs in it.
#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::resource::{Resource, rlim_t};
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::sys::stat::Mode;
use nix::unistd::{ForkResult, Gid, Pid, Uid};
use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The step of the child's set-up that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Sigmask,
    Groups,
    Setgid,
    Setuid,
    /// The index into [`JobExec`]'s rlimits.
    Rlimit(usize),
    Chdir,
    OpenStdout,
    OpenStderr,
    Dup,
    OpenStdin,
    /// `-shell n`: no candidate is a regular file.
    Search,
    /// The program (the candidate at this index) is not executable for the owner.
    Access(usize),
    /// `execve` of the candidate at this index failed.
    Execve(usize),
}

impl Step {
    fn encode(self) -> (u32, u32) {
        match self {
            Step::Sigmask => (0, 0),
            Step::Groups => (1, 0),
            Step::Setgid => (2, 0),
            Step::Setuid => (3, 0),
            Step::Rlimit(i) => (4, i as u32),
            Step::Chdir => (5, 0),
            Step::OpenStdout => (6, 0),
            Step::OpenStderr => (7, 0),
            Step::Dup => (8, 0),
            Step::OpenStdin => (9, 0),
            Step::Search => (10, 0),
            Step::Access(i) => (11, i as u32),
            Step::Execve(i) => (12, i as u32),
        }
    }

    fn decode(code: u32, index: u32) -> Option<Step> {
        let i = index as usize;
        Some(match code {
            0 => Step::Sigmask,
            1 => Step::Groups,
            2 => Step::Setgid,
            3 => Step::Setuid,
            4 => Step::Rlimit(i),
            5 => Step::Chdir,
            6 => Step::OpenStdout,
            7 => Step::OpenStderr,
            8 => Step::Dup,
            9 => Step::OpenStdin,
            10 => Step::Search,
            11 => Step::Access(i),
            12 => Step::Execve(i),
            _ => return None,
        })
    }
}

/// Why the job could not be started: the step and the `errno` of the failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ChildFailure {
    pub step: Step,
    pub errno: Errno,
}

/// The identity the job runs as.
pub(super) enum Identity {
    /// The supervisor runs as root: `setgroups(groups)`, `setgid`, `setuid`.
    Switch {
        uid: Uid,
        gid: Gid,
        groups: Vec<Gid>,
    },
    /// The supervisor already runs as the owner.
    Keep,
}

/// Everything the child needs, prepared before the fork.
pub(super) struct JobExec {
    pub identity: Identity,
    /// The nice value the job starts at (queue_conf(5)'s `priority`).
    pub nice: i32,
    pub rlimits: Vec<(Resource, rlim_t, rlim_t)>,
    pub workdir: CString,
    pub stdout: CString,
    /// `None`: stderr goes to the stdout file (`-j y`), through the same descriptor.
    pub stderr: Option<CString>,
    pub stdin: CString,
    /// The program, or with `search` the `PATH` candidates in order.
    pub candidates: Vec<CString>,
    /// `-b y -shell n`: the first candidate that is a regular file is the program.
    pub search: bool,
    /// For a program without a slash (not searched): the directories of the job's `PATH`
    /// joined with it, tried in order as `execvp` does with the job's environment.
    pub exec_path: Vec<CString>,
    /// The signals to set back to their default action ([`ignored_signals`], asked before
    /// the fork: the child makes no call it need not).
    ignored_signals: &'static [i32],
    /// The strings `argv_ptrs` and `envp_ptrs` point into, owned here so that they live as
    /// long as the pointers.
    _strings: (Vec<CString>, Vec<CString>),
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
}

/// A string with an interior NUL cannot be passed to the kernel.
pub(super) fn c_string(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"))
}

impl JobExec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        identity: Identity,
        nice: i32,
        rlimits: Vec<(Resource, rlim_t, rlim_t)>,
        workdir: CString,
        stdout: CString,
        stderr: Option<CString>,
        stdin: CString,
        candidates: Vec<CString>,
        search: bool,
        exec_path: Vec<CString>,
        argv: Vec<CString>,
        envp: Vec<CString>,
    ) -> Self {
        let nul_terminated = |v: &[CString]| {
            v.iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect::<Vec<_>>()
        };
        let argv_ptrs = nul_terminated(&argv);
        let envp_ptrs = nul_terminated(&envp);
        JobExec {
            identity,
            nice,
            rlimits,
            workdir,
            stdout,
            stderr,
            stdin,
            candidates,
            search,
            exec_path,
            ignored_signals: ignored_signals(),
            _strings: (argv, envp),
            argv_ptrs,
            envp_ptrs,
        }
    }
}

/// Forks and execs the job. `Ok(Ok(pid))`: the job runs as `pid` (its own session and process
/// group). `Ok(Err((pid, failure)))`: the child (still to be reaped, it has `_exit`ed or is
/// about to) could not start the job. `Err`: no child (the pipe or the fork failed).
pub(super) fn spawn(exec: &JobExec) -> Result<Result<Pid, (Pid, ChildFailure)>, Errno> {
    spawn_into(exec, None)
}

/// [`spawn`], the child born in the cgroup v2 directory `cgroup` (`clone3`'s
/// `CLONE_INTO_CGROUP`, Linux 5.7): a process written into a new group's `cgroup.procs`
/// costs 5–20 ms (the kernel's migration of a task into a group it has no css_set for yet;
/// measured on 6.18, `bench/README.md`), a child born there 0.3 ms. `Err(ENOSYS)`,
/// `Err(EINVAL)` or `Err(E2BIG)`: this kernel cannot, and no child was made.
pub(super) fn spawn_into(
    exec: &JobExec,
    cgroup: Option<std::os::fd::BorrowedFd<'_>>,
) -> Result<Result<Pid, (Pid, ChildFailure)>, Errno> {
    let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let forked = match cgroup {
        None => {
            // SAFETY: the supervisor is single-threaded, and the child runs only `child`,
            // which makes async-signal-safe calls on memory prepared before the fork and
            // ends in execve or _exit.
            unsafe { nix::unistd::fork() }
        }
        Some(dir) => fork_into_cgroup(dir),
    };
    match forked? {
        ForkResult::Child => {
            let failure = child(exec);
            report(&write_end, failure);
            // SAFETY: `_exit` ends the child without running anything of the parent's.
            unsafe { libc::_exit(1) }
        }
        ForkResult::Parent { child } => {
            drop(write_end);
            let mut record = Vec::with_capacity(12);
            let _ = std::fs::File::from(read_end).read_to_end(&mut record);
            if record.len() < 12 {
                return Ok(Ok(child));
            }
            let word = |i: usize| {
                u32::from_ne_bytes([record[i], record[i + 1], record[i + 2], record[i + 3]])
            };
            let step = Step::decode(word(0), word(4)).unwrap_or(Step::Execve(0));
            let errno = Errno::from_raw(word(8) as i32);
            Ok(Err((child, ChildFailure { step, errno })))
        }
    }
}

/// `struct clone_args` of `clone3(2)` up to `cgroup` (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `CLONE_INTO_CGROUP` (`linux/sched.h`).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// A `fork` whose child starts in the cgroup v2 directory `dir`: `clone3` with only
/// `CLONE_INTO_CGROUP` and `SIGCHLD` is `fork` otherwise (a copy of the memory, no shared
/// anything), made as a bare system call, as Rust's own `Command` makes it when it asks for a
/// pidfd. The child skips the C library's `fork` bookkeeping (its atfork handlers, of which
/// a single-threaded supervisor has none to run, and its cached thread id, which nothing the
/// child calls reads).
fn fork_into_cgroup(dir: std::os::fd::BorrowedFd<'_>) -> Result<ForkResult, Errno> {
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: dir.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: the arguments are a valid `clone_args` of the size passed, with no stack (the
    // child continues on a copy of this one, as after `fork`); the caller is the
    // single-threaded supervisor, and its child runs only `child` (see `spawn_into`).
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match r {
        -1 => Err(Errno::last()),
        0 => Ok(ForkResult::Child),
        pid => Ok(ForkResult::Parent {
            child: Pid::from_raw(pid as i32),
        }),
    }
}

/// The number of threads of this process (field 20 of `/proc/self/stat`).
fn thread_count() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    // after ")": state(3) … num_threads(20) → index 17 from state.
    after.split_whitespace().nth(17)?.parse().ok()
}

/// Forks a child that runs `supervise` and `_exit`s with the code it returns; returns the
/// child's pid. The child's stdin is `/dev/null`, its stdout and stderr are `stdout` and
/// `stderr` (the write ends of the caller's pipes), and it holds no other descriptor but
/// those of `kept`, each on descriptor 3 + its index, close-on-exec (the job, which the
/// supervisor forks and `exec`s, never holds them), and passed to `supervise` in the same
/// order: the write end of the start server's result pipe, shared by all its supervisors,
/// and for a held start the pipe it waits on and its staging directory.
/// `EDEADLK` without forking when this process has more than one thread (see the module
/// documentation: the child runs ordinary code, which is sound only after the fork of a
/// single-threaded process).
pub(super) fn fork_supervisor<const N: usize>(
    stdout: &OwnedFd,
    stderr: &OwnedFd,
    kept: [Option<&OwnedFd>; N],
    supervise: impl FnOnce([Option<OwnedFd>; N]) -> i32,
) -> Result<Pid, Errno> {
    if thread_count() != Some(1) {
        return Err(Errno::EDEADLK);
    }
    let null = nix::fcntl::open(
        c"/dev/null",
        OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    // SAFETY: the process is single-threaded (checked above; the start server never starts
    // a thread), so the child's copy of memory has no lock held by a thread that does not
    // exist in it, and the child may run ordinary code. It never returns from this block.
    match unsafe { nix::unistd::fork() }? {
        ForkResult::Child => {
            let ok = nix::unistd::dup2_stdin(&null)
                .and_then(|()| nix::unistd::dup2_stdout(stdout))
                .and_then(|()| nix::unistd::dup2_stderr(stderr));
            if ok.is_err() {
                // SAFETY: `_exit` ends the child without running anything of the parent's.
                unsafe { libc::_exit(1) }
            }
            let first = 3;
            let past = first + N as i32;
            // Each kept descriptor first goes to a fresh number above the targets, so that
            // placing one cannot close another; what is left from `past` up is closed below.
            // SAFETY (these calls): plain descriptor calls on descriptors this child holds.
            let copies = kept.map(|fd| {
                fd.map(|fd| {
                    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, past) };
                    if copy < 0 {
                        // SAFETY: as above.
                        unsafe { libc::_exit(1) }
                    }
                    copy
                })
            });
            for (i, copy) in copies.iter().enumerate() {
                let target = first + i as i32;
                // SAFETY: as above; a target without a descriptor to keep is not this
                // child's to keep either.
                let r = unsafe {
                    match copy {
                        Some(copy) => libc::dup3(*copy, target, libc::O_CLOEXEC),
                        None => {
                            libc::close(target);
                            0
                        }
                    }
                };
                if r < 0 {
                    // SAFETY: as above.
                    unsafe { libc::_exit(1) }
                }
            }
            close_from(past as u32);
            let mut target = first;
            // SAFETY: each target given is open (placed above) and owned by nothing else in
            // this child (every other owner's descriptor was closed or is another number).
            let owned = copies.map(|copy| {
                let fd = copy.map(|_| unsafe { OwnedFd::from_raw_fd(target) });
                target += 1;
                fd
            });
            let code = supervise(owned);
            // SAFETY: as above; the supervisor has made its result durable before returning.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => Ok(child),
    }
}

/// Closes every descriptor from `first` up (`close_range(2)`, or one by one from
/// `/proc/self/fd` on kernels older than 5.9). Only in a child that will never drop the
/// owners of those descriptors.
fn close_from(first: u32) {
    // SAFETY: close_range takes no pointers; the descriptors it closes are never used again
    // by this child (see `fork_supervisor`).
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) };
    if r == 0 {
        return;
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for fd in fds.into_iter().filter(|&fd| fd >= first as i32) {
        // SAFETY: as above; closing a descriptor read from /proc (the directory's own
        // descriptor, closed already, gives EBADF, which is ignored).
        let _ = unsafe { libc::close(fd) };
    }
}

/// Writes the failure record (12 bytes: step, index, errno) in one `write`.
fn report(fd: &OwnedFd, failure: ChildFailure) {
    let (code, index) = failure.step.encode();
    let mut record = [0u8; 12];
    record[0..4].copy_from_slice(&code.to_ne_bytes());
    record[4..8].copy_from_slice(&index.to_ne_bytes());
    record[8..12].copy_from_slice(&(failure.errno as i32).to_ne_bytes());
    // SAFETY: a plain write(2) of a stack buffer to a descriptor this process owns.
    let _ = unsafe { libc::write(fd.as_raw_fd(), record.as_ptr().cast(), record.len()) };
}

/// Every signal back to its default action, as SGE's shepherd does for its job
/// (`sge_set_def_sig_mask`). A signal ignored here stays ignored across `exec`: the Rust
/// runtime ignores SIGPIPE, and a `sched_d` started in the background of a script (`sched_d &`)
/// has SIGINT and SIGQUIT ignored, which every job would inherit. Handlers need no reset (exec
/// drops them), so only the ignored signals are reset ([`ignored_signals`]): one system call
/// each instead of one for every signal (62 on the job's critical path).
fn reset_signal_dispositions(ignored: &[i32]) {
    for &sig in ignored {
        // SAFETY: signal(2) with SIG_DFL installs no handler and is async-signal-safe.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// The signals this process ignores, asked of the kernel once per process and before any
/// fork (a start server asks before it forks its first supervisor, which inherits the
/// answer with the dispositions it describes; nothing here ever ignores a signal later).
/// glibc refuses its two internal signals, 32 and 33, and SIGKILL and SIGSTOP cannot change.
pub(super) fn ignored_signals() -> &'static [i32] {
    static IGNORED: std::sync::OnceLock<Vec<i32>> = std::sync::OnceLock::new();
    IGNORED.get_or_init(|| {
        (1..=libc::SIGRTMAX())
            .filter(|&sig| sig != libc::SIGKILL && sig != libc::SIGSTOP)
            .filter(|&sig| {
                let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
                // SAFETY: sigaction(2) with no new action only reads the disposition into
                // `old`, a zeroed `struct sigaction` of the right size.
                let r = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
                // SAFETY: zero-initialised, and filled in by the kernel when `r` is 0.
                r == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
            })
            .collect()
    })
}

/// The child: set-up in the order the former `exec` helper followed; returns only on failure.
fn child(exec: &JobExec) -> ChildFailure {
    let fail = |step: Step, errno: Errno| ChildFailure { step, errno };
    // The supervisor's blocked signals are inherited across exec: a job must start with
    // nothing blocked (or its SIGTERM, SIGUSR1/2 traps would never fire). The Rust runtime
    // ignores SIGPIPE, which exec would also keep: the job gets the default, as from
    // `std::process::Command`.
    if let Err(e) =
        nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
    {
        return fail(Step::Sigmask, e);
    }
    reset_signal_dispositions(exec.ignored_signals);
    // Its own session and process group: kills and signals address the job as a whole.
    let _ = nix::unistd::setsid();
    // queue_conf(5)'s priority, set while still root (a value below the current one needs
    // it), as SGE's shepherd sets it for each of its children; a failure is ignored there too.
    // SAFETY: setpriority(2) of this process, with no memory passed.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, exec.nice) };
    if let Identity::Switch { uid, gid, groups } = &exec.identity {
        if let Err(e) = nix::unistd::setgroups(groups) {
            return fail(Step::Groups, e);
        }
        if let Err(e) = nix::unistd::setgid(*gid) {
            return fail(Step::Setgid, e);
        }
        if let Err(e) = nix::unistd::setuid(*uid) {
            return fail(Step::Setuid, e);
        }
    }
    for (i, (resource, soft, hard)) in exec.rlimits.iter().enumerate() {
        if let Err(e) = nix::sys::resource::setrlimit(*resource, *soft, *hard) {
            return fail(Step::Rlimit(i), e);
        }
    }
    nix::sys::stat::umask(Mode::from_bits_truncate(0o022));
    if let Err(e) = nix::unistd::chdir(exec.workdir.as_c_str()) {
        return fail(Step::Chdir, e);
    }
    let out_flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_APPEND | OFlag::O_CLOEXEC;
    let out_mode = Mode::from_bits_truncate(0o644);
    let stdout = match nix::fcntl::open(exec.stdout.as_c_str(), out_flags, out_mode) {
        Ok(fd) => fd,
        Err(e) => return fail(Step::OpenStdout, e),
    };
    let stderr = match &exec.stderr {
        Some(path) => match nix::fcntl::open(path.as_c_str(), out_flags, out_mode) {
            Ok(fd) => Some(fd),
            Err(e) => return fail(Step::OpenStderr, e),
        },
        None => None,
    };
    let stdin = match nix::fcntl::open(
        exec.stdin.as_c_str(),
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => return fail(Step::OpenStdin, e),
    };
    // The program must exist and be executable for the owner; else SGE's failure 27.
    let index = if exec.search {
        match exec.candidates.iter().position(|c| is_regular_file(c)) {
            Some(i) => i,
            None => return fail(Step::Search, Errno::ENOENT),
        }
    } else {
        0
    };
    let Some(program) = exec.candidates.get(index) else {
        return fail(Step::Search, Errno::ENOENT);
    };
    if let Err(e) = nix::unistd::access(program.as_c_str(), nix::unistd::AccessFlags::X_OK) {
        return fail(Step::Access(index), e);
    }
    // The three standard descriptors last: the set-up above could still fail and report.
    // (The supervisor's 0, 1 and 2 are open, so the descriptors opened above are > 2 and
    // close on exec; dup2 gives the copies on 0, 1 and 2 no close-on-exec flag.)
    let dup = nix::unistd::dup2_stdin(&stdin)
        .and_then(|()| nix::unistd::dup2_stdout(&stdout))
        .and_then(|()| nix::unistd::dup2_stderr(stderr.as_ref().unwrap_or(&stdout)));
    if let Err(e) = dup {
        return fail(Step::Dup, e);
    }
    let errno = if program.as_bytes().contains(&b'/') || exec.exec_path.is_empty() {
        execve(program, exec)
    } else {
        // `execvp` with the job's PATH: the first directory where execve works; EACCES
        // from any of them wins over ENOENT, as in glibc.
        let mut errno = Errno::ENOENT;
        for candidate in &exec.exec_path {
            match execve(candidate, exec) {
                Errno::EACCES => errno = Errno::EACCES,
                Errno::ENOENT
                | Errno::ENOTDIR
                | Errno::ESTALE
                | Errno::ENODEV
                | Errno::ETIMEDOUT => {}
                other => {
                    errno = other;
                    break;
                }
            }
        }
        errno
    };
    fail(Step::Execve(index), errno)
}

/// `execve(path, argv, envp)`; returns only on failure, with its errno.
fn execve(path: &CStr, exec: &JobExec) -> Errno {
    // SAFETY: the path, argv and envp are NUL-terminated strings owned by `exec`, and the
    // pointer arrays end in a null pointer (built in `JobExec::new`).
    unsafe {
        libc::execve(
            path.as_ptr(),
            exec.argv_ptrs.as_ptr(),
            exec.envp_ptrs.as_ptr(),
        )
    };
    Errno::last()
}

/// `stat` follows symbolic links: what `Path::is_file` answers.
fn is_regular_file(path: &CStr) -> bool {
    nix::sys::stat::stat(path).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
}

/// Gives the heap's free pages back to the kernel (glibc's `malloc_trim(0)`).
///
/// `sched_d` calls it after most of its jobs left: the state of a large queue is freed in
/// pieces spread over the heap, which glibc keeps (it returns only free memory at the top
/// of the heap), so a daemon that once held 10,000 jobs kept three times the resident set
/// of an empty one. Sound: `malloc_trim` takes glibc's arena locks like any allocation and
/// touches nothing of the caller's; it is not async-signal-safe and is never called from a
/// signal handler or between `fork` and `exec`.
pub fn trim_heap() {
    // SAFETY: see above; the argument is the padding to leave at the top of the heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Lowers this process's CPU priority to `nice` (`setpriority(2)`): for background work
/// beside `sched_d` (its start-time forecast), which must not slow a dispatch.
pub fn lower_own_priority(nice: i32) {
    // SAFETY: setpriority(2) of this process, with no memory passed.
    let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) };
}

/// Sets how many arenas glibc's malloc may make (`mallopt(M_ARENA_MAX, n)`); called by
/// `sched_d` before it starts any thread.
///
/// By default every thread that allocates while another holds an arena gets an arena of its
/// own (up to eight per core), and [`trim_heap`] gives back only the free pages inside an
/// arena's chunks, never a thread arena's free top: what `sched_d`'s launcher and index
/// threads once used stayed resident. Its threads allocate little at once (the
/// scheduling runs on one), and small blocks come from each thread's cache without the
/// arena's lock. Sound: `mallopt` only sets a parameter under glibc's own lock.
pub fn limit_malloc_arenas(n: i32) {
    // SAFETY: see above.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_survive_the_pipe() {
        for step in [
            Step::Sigmask,
            Step::Groups,
            Step::Setgid,
            Step::Setuid,
            Step::Rlimit(3),
            Step::Chdir,
            Step::OpenStdout,
            Step::OpenStderr,
            Step::Dup,
            Step::OpenStdin,
            Step::Search,
            Step::Access(2),
            Step::Execve(5),
        ] {
            let (code, index) = step.encode();
            assert_eq!(Step::decode(code, index), Some(step));
        }
        assert_eq!(Step::decode(99, 0), None);
    }
}
