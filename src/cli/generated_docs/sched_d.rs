//! `man/sched_d.8`: the daemon's manual page. Its options come from `sched_d`'s own command
//! line definition (`cli::sched_d::Args`), so the page cannot list a flag the program lacks
//! or miss one it has; the rest says what an administrator needs of the daemon: what it
//! does, its files, signals, and how hosts that die are handled.

use super::{options, page_start, roff};
use clap::CommandFactory;
use std::fmt::Write;

const DESCRIPTION: &[&str] = &[
    "sched_d is gridspool's scheduler and the only daemon of a cell: it takes the place of SGE's sge_qmaster, sge_schedd and, with the shepherd, sge_execd. The commands (qsub, qstat, qdel, qalter, qhold, qrls, qacct, qhost) write and read files in the cell; sched_d watches it (inotify, or polling with \\-\\-poll), keeps the state in memory, computes priorities with the configured policy, and starts each task on its host: directly on a host configured as local, through OpenSSH on the others: one ssh connection per host, the session of the host's start server, which carries the starts, the results, the heartbeat, qdel and qmod (a host whose shepherd is older gets a ControlMaster and a watcher session over it instead). Its shepherd runs each job as its owner and reports its exit and usage, which become SGE-format accounting records in common/accounting.",
    "One sched_d runs per cell: it holds the lock daemon/sched_d.lock and writes its pid to daemon/sched_d.pid; a second one exits with a message naming the first. After a crash or a restart it recovers from the spool alone: every task the spool records as running is followed again on its host, a result a host kept is recorded once, and nothing is started twice.",
    "The cell is created with sched_d \\-\\-init: the configuration config.yaml (the local host as the one execution host with as many slots as processors, a queue all.q), and common/settings.sh and settings.csh for users to source. config.yaml is documented key by key in the repository's spool/README.md; names follow sge_conf(5), sched_conf(5), queue_conf(5), host_conf(5), sge_pe(5) and complex(5).",
    "A queue whose calendar (calendar_conf(5), qconf \\-acal) says off or suspended has its instances disabled (D in qstat \\-f: no new work, running jobs go on) or suspended (C: running jobs stopped with SIGSTOP as by qmod \\-sq, continued with SIGCONT when the calendar opens), in the local time zone. sched_d applies each change when it comes: it wakes at the calendar's next change, not on a timer.",
];

const HOSTS: &str = "Every ssh host is followed by its session, whose start server sends a heartbeat (every quarter of max_unheard, between 0.25 and 5 s). A host nothing was heard from for max_unheard (default 20 s) is unknown: its queue instances show au in qstat \\-f and qhost, and it gets no new work until it is heard again. After reschedule_unknown (default 5 s; 0:0:0 never; per host too) its tasks are rescheduled as SGE does: a rerunnable one (qsub \\-r y, or the queue's rerun) is pending again, with a failed 25 (rescheduling) accounting record for the run given up, and runs again with RESTARTED=1; one that is not is given up when enable_reschedule_kill is true (the default): its slots are free and the job counts it finished, but its end is its host's to tell, so its exits line (what qsub \\-sync y reports) and its one accounting record wait for the host, and the job stays in the spool until then; else it stays r until the host returns. When the host returns, a result it kept for a rescheduled run is the task's end, recorded once (for a given-up task that is the real exit status; a requeued copy is cancelled); a run still going there is killed, and a given-up task whose run was killed or lost there ends with failed 25 (rescheduling) and one accounting record of that, from its start to then. A host heard again takes no new work until the runs given up there are settled (killed and collected, or found gone; at most 90 s), so that a task requeued from it is not sent back while its old run is still there. A host that cannot be reached, or keeps dropping its connection, is tried again ever later, but at most 30 s after the last attempt began (1 s, 2 s, 4 s... 30 s), and a start that could not reach it keeps new work off it for at most 30 s too; the first word heard from it makes it take work at once. SGE's defaults (max_unheard 5 min, reschedule_unknown 0:0:0, ENABLE_RESCHEDULE_KILL off) can be set in config.yaml.";

const SHADOW: &str = "A second sched_d started with \\-\\-shadow on another host that shares the cell (SGE's sge_shadowd) replaces the master when it dies. The master rewrites daemon/heartbeat every \\-\\-heartbeat\\-interval (2 s) from a thread of its own; the shadow reads it (its content, never its time: NFS attribute caches) and, when it has not changed for \\-\\-takeover\\-after (10 s), names itself in daemon/act_master, takes the lock and recovers from the spool as a restart does: every running task is followed again, the start servers the old master left on the hosts are ended (their tasks' results go to result.json for the new master), a task the old master was only handing over goes back to pending, nothing runs twice. A master that is frozen (stopped, or hung on a hard NFS mount) keeps its lock: the shadow waits for it another \\-\\-takeover\\-after, then goes on without it, and the old master, the moment it runs again, reads daemon/act_master and exits (status 3) before it writes or starts anything. A master stopped on purpose (SIGTERM) writes a last heartbeat that says so, and is not replaced. With the defaults the shadow dispatches about 10 s after the master died (20 s when it is frozen and keeps its lock); with \\-\\-heartbeat\\-interval 0.5 and \\-\\-takeover\\-after 2, 2.5 s (4.5 s). On NFS the server must provide locks (NFSv4, or NFSv3 with lockd; never the nolock mount option): a dead client's lock is released when its lease expires (90 s by default on NFSv4), which the shadow does not wait for beyond \\-\\-takeover\\-after; run both daemons with \\-\\-poll, as inotify does not see other hosts' writes.";

/// How a site moves from SGE 8.1.9 (issue 26): the steps, as tried on Debian's SGE.
const MOVING: &[&str] = &[
    "sched_d \\-\\-init \\-\\-from\\-sge DIR makes a cell the SGE cell that sge\\-export.sh saved in DIR: complexes, calendars, access lists, projects, users, execution hosts (the global host's consumables too), host groups, parallel environments, queues with their per\\-host values, resource quota sets, the share tree, the scheduler and global configurations, managers and operators, each through gridspool's own qconf, as an administrator would give it the file SGE's qconf \\-s* printed; the share tree's accumulated usage, so that fair share goes on where it stood; and the accounting file, which qacct then reads with SGE's history in it; job and reservation ids go on above SGE's last. The cell's own objects that the SGE cell has not are removed. Every value not carried is printed with its reason (an attribute gridspool keeps one value of, an object its qconf refused); nothing is left out silently. The import is refused while sched_d runs on the cell, and while the cell holds jobs or advance reservations unless \\-\\-force (they are kept). Importing the same export again changes nothing.",
    "Jobs stay with SGE: a pending job is not moved, a running one runs to its end there. The steps: (1) on the SGE master, disable every queue (qmod \\-d \\(aq*\\(aq) and let the running jobs end (qstat \\-s r \\-u \\(aq*\\(aq shows none); users resubmit their pending jobs to gridspool afterwards, or delete them (qdel). (2) Wait 4 minutes after the last job ended (the qmaster writes the share tree's usage to its spool that often), then, as root with the SGE cell's settings sourced, run /usr/lib/gridspool/sge\\-export.sh DIR (from the gridspool package, or dpkg\\-deb \\-x of it, on the SGE master; it reads qconf, the accounting file and, with BerkeleyDB spooling, spooledit's dump of the usage; it changes nothing). (3) Stop SGE (qconf \\-ke all; qconf \\-km, or systemctl stop gridengine\\-exec gridengine\\-master) and, on Debian, remove its packages (apt\\-get remove gridengine\\-master gridengine\\-exec gridengine\\-client: gridspool's commands have the same names), then install gridspool's. (4) On the master: /usr/lib/gridspool/install\\-multiuser.sh \\-\\-cell\\-only /usr /var/lib/gridspool/default, then sched_d \\-\\-init \\-\\-spool /var/lib/gridspool/default \\-\\-from\\-sge DIR, and read what it did not carry. Execution hosts are reached over ssh as root (a new host that is not the master is given the ssh launch): install gridspool there and give the master's root a key. (5) Check: qconf \\-sql, qconf \\-sq Q, qacct \\-o, qhost; then systemctl enable \\-\\-now gridspool. (6) Submit hosts: the gridspool package (same command names). Users who never set SGE_ROOT, as with Debian's SGE, need nothing more: without SGE_ROOT the commands take the cell under /var/lib/gridspool. Where users source SGE's settings.sh or settings.csh (a $SGE_ROOT of SGE's own), make it source /var/lib/gridspool/default/common/settings.sh (settings.csh) instead, or set SGE_ROOT=/var/lib/gridspool where the site sets its environment.",
];

const SIGNALS: &[(&str, &str)] = &[
    (
        "SIGHUP",
        "Reload config.yaml; hosts, queues and policies change at once, running tasks carry on. A configuration that does not parse is refused and the old one kept.",
    ),
    (
        "SIGTERM, SIGINT",
        "Stop: nothing more is dispatched, every state is written, and sched_d exits. Running tasks carry on; the next sched_d follows them again.",
    ),
];

const FILES: &[(&str, &str)] = &[
    ("config.yaml", "the cluster configuration"),
    (
        "daemon/sched_d.lock, daemon/sched_d.pid",
        "the lock that makes one sched_d per cell, and its pid",
    ),
    ("daemon/sched_d.log", "the log, one event per line"),
    (
        "daemon/heartbeat, daemon/act_master",
        "the master's heartbeat (COUNTER HOST PID, and stopped after a stop on purpose) and who the master is (HOST PID), for a shadow",
    ),
    (
        "daemon/hosts/HOST.json",
        "each host's load and the usage of its running tasks (every load_report_time), for qhost and qstat; unreachable while the host is unknown",
    ),
    (
        "execd/HOST/active_jobs/",
        "the execution spool of a host: a directory per running task, where the shepherd keeps the task's result until sched_d has recorded it",
    ),
    (
        "jobs/, requests/",
        "job files and the requests of qdel, qalter, qhold and qrls",
    ),
    (
        "common/accounting",
        "SGE's accounting file (sge_accounting(5)), read by qacct",
    ),
    (
        "common/settings.sh, common/settings.csh",
        "what users source: SGE_ROOT, SGE_CELL and the PATH of the commands",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Stopped by a signal after writing everything, or \\-\\-init done.",
    ),
    (
        "1",
        "The cell cannot be opened, its configuration is not valid, or the daemon failed; the reason is printed and logged.",
    ),
    (
        "3",
        "Another sched_d holds the cell, or a shadow took it over from this one: starting it again would only find the cell taken (systemd: RestartPreventExitStatus=3).",
    ),
    ("2", "The command line is wrong."),
];

/// The roff page (section 8).
pub fn man_page() -> String {
    let mut m = page_start(
        ("sched_d", 8, "the gridspool scheduler daemon"),
        ".B sched_d\n[options]",
        DESCRIPTION,
    );
    m.push_str(".SH OPTIONS\n");
    m.push_str(&options(&crate::cli::sched_d::Args::command()));
    m.push_str(".TP\n.B \\-\\-help, \\-\\-version\nPrint the options, or the version, and exit.\n");
    let _ = writeln!(m, ".SH HOSTS THAT DIE\n{HOSTS}");
    let _ = writeln!(m, ".SH SHADOW\n{SHADOW}");
    m.push_str(".SH MOVING FROM SGE\n");
    for (i, p) in MOVING.iter().enumerate() {
        if i > 0 {
            m.push_str(".PP\n");
        }
        let _ = writeln!(m, "{p}");
    }
    m.push_str(".SH SIGNALS\n");
    for (sig, what) in SIGNALS {
        let _ = writeln!(m, ".TP\n.B {sig}\n{what}");
    }
    m.push_str(".SH FILES\nRelative to the cell, $SGE_ROOT/$SGE_CELL:\n");
    for (file, what) in FILES {
        let _ = writeln!(m, ".TP\n.I {}\n{}", roff(file), roff(what));
    }
    m.push_str(".SH EXIT STATUS\n");
    for (code, what) in EXIT_STATUS {
        let _ = writeln!(m, ".TP\n.B {code}\n{what}");
    }
    m.push_str(".SH ENVIRONMENT\n.TP\n.B SGE_ROOT, SGE_CELL\nThe cell is $SGE_ROOT/$SGE_CELL (SGE_CELL default: default) unless \\-\\-spool names it.\n.TP\n.B GRIDSPOOL_SHEPHERD\nThe shepherd program (default: gridspool\\-shepherd beside sched_d); on ssh hosts the same path.\n");
    m.push_str(".SH SEE ALSO\n.BR qsub (1),\n.BR qstat (1),\n.BR qhost (1),\n.BR qacct (1),\n.BR sge_conf (5),\n.BR sched_conf (5),\n.BR sge_accounting (5)\n");
    m
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_visible_flag_of_sched_d_is_in_its_page() {
        use clap::CommandFactory;
        let page = super::man_page();
        for arg in crate::cli::sched_d::Args::command().get_arguments() {
            if let (Some(long), false) = (arg.get_long(), arg.is_hide_set()) {
                let flag = format!(".B \\-\\-{}", long.replace('-', "\\-"));
                assert!(page.contains(&flag), "{flag} missing");
            }
        }
    }
}
