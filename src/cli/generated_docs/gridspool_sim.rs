//! `man/gridspool-sim.1`: the policy simulator's manual page, its options from the program's
//! own command line definition (`cli::sim::Args`).

use super::{options, page_start, roff};
use clap::CommandFactory;
use std::fmt::Write;

const DESCRIPTION: &[&str] = &[
    "gridspool\\-sim shows what a scheduling policy would do to a site's workload before the site switches to it. It replays the workload under each configuration given (a cell's config.yaml: hosts, queues, parallel environments, complexes, share tree, scheduler policy) through gridspool's own scheduling code, the pass sched_d runs, on a virtual clock: each job is submitted at its time, started when a pass starts it, on the hosts that pass chooses, and ends its recorded run time later; its end is charged to the share\\-tree usage as sched_d's accounting charges it. Passes come when sched_d's would: after submissions and ends, and a full one every schedule_interval while jobs wait. Preemptions (scheduler.preemption) kill and requeue as in the daemon. No process runs and no file is written per job: a month of 100,000 jobs on 1,000 hosts takes a minute or two.",
    "With \\-\\-what\\-if it starts from the live cell instead of a workload: it reads the cell's jobs, hosts, queue instance states, share\\-tree usage and configuration as sched_d's own start\\-time forecast does (read only, without the daemon's lock; it needs read access to the whole spool: root, or the spool's group), plays the cell forward from now through the scheduling pass once as it stands and once with the changes given, and prints how the estimated start of every pending task moves, per user and per queue.",
    "For each configuration it reports, per user, group, queue, project and Qube! cluster, the wait (mean, median, 95th percentile), the bounded slowdown, the share of the CPU time and the runs preemption killed; the utilisation and the jobs that never started; and the share each sharing entity got of the slot\\-seconds used, overall and in 24 intervals, against the share the configuration promises it: the share tree's leaves under the sge policy with share\\-tree tickets, the queues under fbsng (in proportion to 1/QPD), Armada's queues (the project, else the owner) under armada (what the policy holds to over time: in inverse proportion to the square root of the priority factor under mode: slices, to the priority factor itself under mode: drf; a single round divides in inverse proportion to the factor under both), the users under the other policies (no promise).",
];

const WORKLOADS: &[(&str, &str)] = &[
    (
        "An SWF trace",
        "The Parallel Workloads Archive's Standard Workload Format: 18 fields per line, ; comments. Jobs that never ran are left out. A job of several processors asks the configuration's first parallel environment for them, its requested time becomes h_rt, its queue number q1, q2… is asked for with \\-q when the configuration has a queue of that name, its user and group numbers become users u1… and groups g1…; its CPU time (field 6, per processor), when recorded, is charged to the share tree, else its run time on every processor.",
    ),
    (
        "An accounting file",
        "A cell's common/accounting (it begins with # Version:): what ran there. Each master task is a job of its number, owner, group, queue, project, priority, slots, run time and usage.",
    ),
    (
        "qsub lines",
        "One job per line: SUBMIT RUNTIME USER[:GROUP] [cpu=CPU] qsub OPTIONS..., times in seconds or h:m:s, the submission counted from the workload's start, # comments. CPU is the CPU time the job used, all its slots together (each task's, for an array job), in seconds (a fraction allowed) or h:m:s: what sched_d measures and charges to the share tree. A job without cpu= is assumed to have used its run time on every slot (full CPU), which overcharges jobs that sleep or wait on I/O and can reorder a share tree's users against the daemon; the report says how many jobs were charged so. The options are qsub's, read by its own parser under each configuration (\\-P, \\-pe, \\-l, \\-q, \\-p, \\-R, \\-t, \\-tc, \\-ac cluster=…); a script name after them is ignored. \\-hold_jid and \\-hold_jid_ad name jobs submitted earlier in the workload (by number, or by name or pattern among the same user's jobs); a \\-now y job that cannot start at once is dropped, as sched_d drops it; \\-a, \\-dl (dates of the wall clock) and \\-h (a hold nothing would release) are refused.",
    ),
];

/// The roff page (section 1).
pub fn man_page() -> String {
    let mut m = page_start(
        (
            "gridspool-sim",
            1,
            "replay a workload under scheduling policies before switching to one",
        ),
        ".B gridspool\\-sim\n\\-\\-workload FILE \\-\\-compare CONFIG... [\\-\\-json FILE] [\\-\\-charts DIR] [\\-\\-runs DIR]\n.br\n.B gridspool\\-sim\n\\-\\-what\\-if [\\-\\-cell DIR] [\\-\\-set KEY=VALUE]... [\\-\\-config FILE] [\\-\\-add\\-hosts N | \\-\\-add\\-host NAME,... \\-\\-like HOST] [\\-\\-drain HOST]... [\\-\\-run\\-times limits|learned] [\\-\\-jobs N] [\\-\\-json FILE]",
        DESCRIPTION,
    );
    m.push_str(".SH OPTIONS\n");
    m.push_str(&options(&crate::cli::sim::Args::command()));
    m.push_str(".TP\n.B \\-\\-help, \\-\\-version\nPrint the options, or the version, and exit.\n");
    m.push_str(".SH WORKLOADS\nThe format is told from the file's content.\n");
    for (name, what) in WORKLOADS {
        let _ = writeln!(m, ".TP\n.B {}\n{what}", roff(name));
    }
    m.push_str(".SH EXAMPLES\nThe seed documents' worked examples, as workloads and configurations, are in the repository's docs/sim/, for example:\n.PP\n.nf\ngridspool\\-sim \\-\\-workload docs/sim/fbsng\\-70\\-30.txt \\e\n    \\-\\-compare docs/sim/fbsng\\-70\\-30.yaml docs/sim/fbsng\\-equal.yaml \\-\\-charts charts\n.fi\n");
    m.push_str(".PP\nOne more host like node1, and the jobs that move most, on the cell of $SGE_ROOT/$SGE_CELL:\n.PP\n.nf\ngridspool\\-sim \\-\\-what\\-if \\-\\-add\\-hosts 1 \\-\\-like node1 \\-\\-jobs 10\n.fi\n.PP\nThe tickets weighing 0.05 in the priority, and node3 drained:\n.PP\n.nf\ngridspool\\-sim \\-\\-what\\-if \\-\\-set scheduler.weight_ticket=0.05 \\-\\-drain node3\n.fi\n");
    m.push_str(".SH EXIT STATUS\n.TP\n.B 0\nEvery configuration was replayed (with \\-\\-what\\-if: both plays were made).\n.TP\n.B 1\nA file cannot be read, a line of the workload or a configuration is not valid (named with its line), or an output cannot be written; with \\-\\-what\\-if, the cell cannot be read, or a change names a key, a value or a host the configuration does not take (named in the message).\n.TP\n.B 2\nThe command line is wrong.\n");
    m.push_str(".SH SEE ALSO\n.BR sched_d (8),\n.BR qsub (1),\n.BR qacct (1),\n.BR sched_conf (5),\n.BR share_tree (5)\n");
    m
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_visible_flag_of_gridspool_sim_is_in_its_page() {
        use clap::CommandFactory;
        let page = super::man_page();
        for arg in crate::cli::sim::Args::command().get_arguments() {
            if let (Some(long), false) = (arg.get_long(), arg.is_hide_set()) {
                let flag = format!(".B \\-\\-{}", long.replace('-', "\\-"));
                assert!(page.contains(&flag), "{flag} missing");
            }
        }
    }
}
