//! `man/gridspool-shepherd.8`: the shepherd's manual page. People do not run the shepherd;
//! the page says what it is, so that an administrator who finds it in `/usr/sbin`, in `ps`
//! or in an ssh log knows what started it and what it does (`launch::shepherd`).

use super::{page_start, roff};
use std::fmt::Write;

const DESCRIPTION: &[&str] = &[
    "gridspool\\-shepherd runs the jobs of a gridspool cell on an execution host, as SGE's sge_execd and sge_shepherd do. sched_d(8) starts it, as a child on a host configured as local, and over OpenSSH, as root, on the others (its path there is the master's, or $GRIDSPOOL_SHEPHERD); it is not meant to be run by hand. It is a link to the one gridspool program, which runs as the shepherd under this name.",
    "For each task it keeps a directory in the host's execution spool (execd/HOST/active_jobs/ in the cell), starts a supervisor in a session of its own, and the job as its owner (the owner's groups, gid and uid, limits, umask, working directory, output files); it enforces the run\\-time limits, samples the job's usage, carries out kills, suspensions and resumptions of the whole process tree, and reports the exit status and usage, which sched_d turns into the accounting record. A result is kept in the task's directory until sched_d has recorded it, so that a restart or a lost connection loses none.",
];

/// The modes, as sched_d uses them.
const MODES: &[(&str, &str)] = &[
    (
        "run",
        "Read a task's launch specification on standard input, start it, and print one line: the job's process id, or why it did not start.",
    ),
    (
        "start-server [--results] [--master HOST] [--spool DIR] [--cgroups PARENT]",
        "Start many tasks over one session: one specification per line on standard input, one reply per task; with --results, the tasks' results on the same session, each removed once sched_d acknowledges it.",
    ),
    (
        "watch EXEC_SPOOL [INTERVAL_MS [HEARTBEAT_MS]] [--master HOST]",
        "Print a line for every task that ends and remove its directory once sched_d acknowledges it; with HEARTBEAT_MS, a line when nothing else was printed for that long, which tells sched_d that the host is there.",
    ),
    (
        "kill [--notify] EXEC_SPOOL JOB TASK",
        "Kill a task's process tree; with --notify, send SIGUSR2 first and kill after the queue's notify time.",
    ),
    (
        "suspend | resume EXEC_SPOOL JOB TASK SEQ",
        "Stop or continue a task's process tree (qmod -s, qmod -us and their queue forms).",
    ),
    (
        "query EXEC_SPOOL [--master HOST]",
        "Print the state of every task of the host, for a sched_d that restarts or takes over from another.",
    ),
    (
        "supervise, relay, pe-task",
        "Internal: a task's supervisor, the relay of an interactive job (qrsh, qlogin) and a parallel job's task started with qrsh -inherit.",
    ),
];

/// The roff page (section 8).
pub fn man_page() -> String {
    let mut m = page_start(
        (
            "gridspool-shepherd",
            8,
            "run and watch the jobs of a gridspool cell on an execution host",
        ),
        ".B gridspool\\-shepherd\n.I mode\n[arguments]",
        DESCRIPTION,
    );
    m.push_str(".SH MODES\n");
    for (mode, what) in MODES {
        let _ = writeln!(m, ".TP\n.B {}\n{}", roff(mode), roff(what));
    }
    m.push_str(".SH EXIT STATUS\n.TP\n.B 0\nThe mode did what was asked.\n.TP\n.B 1\nIt could not (the reason is printed), or the mode or its arguments are wrong.\n");
    m.push_str(".SH FILES\n.TP\n.I $SGE_ROOT/$SGE_CELL/execd/HOST/active_jobs/\nA directory per task running on the host, with its result until sched_d has recorded it.\n");
    m.push_str(".SH SEE ALSO\n.BR sched_d (8),\n.BR qsub (1),\n.BR qmod (1)\n");
    m
}
