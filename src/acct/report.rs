//! What `qacct` prints, in SGE 8.1.9's exact layout: the `-j` detail block and the usage
//! tables (the "Total System Usage" summary and the tables grouped by host, queue, group,
//! owner, project, department, PE, slots and account).
//!
//! Widths, units and messages were taken from captures of the real `qacct` (tests/compat/
//! qacct) and from running it on crafted files.

use super::record::AccountingRecord;
use crate::time::ctime;
use std::fmt::Write as _;

/// SGE's description of a `failed` code (`qacct -j`, `accounting(5)`).
pub fn failure_description(code: u32) -> &'static str {
    match code {
        0 => "",
        1 => "assumedly before job",
        2 => "on executing shepherd",
        3 => "before writing config",
        4 => "before writing pid",
        5 => "on reading config file",
        6 => "setting processor set",
        7 => "before prolog",
        8 => "in prolog",
        9 => "before pestart",
        10 => "in pestart",
        11 => "before job",
        12 => "before pestop",
        13 => "in pestop",
        14 => "before epilog",
        15 => "in epilog",
        16 => "releasing processor set",
        17 => "through signal",
        18 => "shepherd returned error",
        19 => "before writing exit_status",
        20 => "found unexpected error file",
        21 => "in recognizing job",
        22 => "removed manually",
        24 => "migrating",
        25 => "rescheduling",
        26 => "opening input/output file",
        27 => "searching requested shell",
        28 => "changing into working directory",
        29 => "AFS setup",
        30 => "application error returned",
        31 => "accessing sgepasswd file",
        32 => "entry is missing in sgepasswd file",
        33 => "wrong password",
        34 => "communicating with Grid Engine Helper Service",
        35 => "before job in Grid Engine Helper Service",
        36 => "checking configured daemons",
        37 => "qmaster enforced h_rt, h_cpu, or h_vmem limit",
        38 => "adding supplementary group",
        100 => "assumedly after job",
        _ => "invalid execution state",
    }
}

/// The C library's `strsignal` text on Linux, which `qacct -j` appends to an exit status of
/// 128 or more.
pub fn signal_description(signal: i32) -> String {
    let known = match signal {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        16 => "Stack fault",
        17 => "Child exited",
        18 => "Continued",
        19 => "Stopped (signal)",
        20 => "Stopped",
        21 => "Stopped (tty input)",
        22 => "Stopped (tty output)",
        23 => "Urgent I/O condition",
        24 => "CPU time limit exceeded",
        25 => "File size limit exceeded",
        26 => "Virtual timer expired",
        27 => "Profiling timer expired",
        28 => "Window changed",
        29 => "I/O possible",
        30 => "Power failure",
        31 => "Bad system call",
        34..=64 => return format!("Real-time signal {}", signal - 34),
        _ => return format!("Unknown signal {signal}"),
    };
    known.to_string()
}

/// A byte count the way SGE prints memory: three decimals and the largest binary unit that
/// keeps the number at or above 1 (`4.316KB`, `3.270MB`, `0.000B`).
pub fn memory(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut v = bytes;
    let mut unit = 0;
    while v.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.3}{}", UNITS[unit])
}

const GB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The `qacct -j` block of one record.
pub fn detail(r: &AccountingRecord) -> String {
    let mut s = String::with_capacity(1600);
    s.push_str("==============================================================\n");
    let mut line = |label: &str, value: &str| {
        let _ = writeln!(s, "{label:<13}{value}");
    };
    let pad = |v: &dyn std::fmt::Display| format!("{:<20}", v.to_string());
    line("qname", &pad(&r.qname));
    line("hostname", &pad(&r.hostname));
    line("group", &pad(&r.group));
    line("owner", &pad(&r.owner));
    line("project", &pad(&r.project));
    line("department", &pad(&r.department));
    line("jobname", &pad(&r.job_name));
    line("jobnumber", &pad(&r.job_number));
    if r.task_number == 0 {
        line("taskid", "undefined");
    } else {
        line("taskid", &pad(&r.task_number));
    }
    line("account", &pad(&r.account));
    line("priority", &pad(&r.priority));
    let time = |t: i64| if t == 0 { "-/-".to_string() } else { ctime(t) };
    // SGE writes `-/-` for a run that has no start or end, never for the submission: a
    // record without one (a prolog that failed) shows the epoch.
    line("qsub_time", &ctime(r.submission_time));
    line("start_time", &time(r.start_time));
    line("end_time", &time(r.end_time));
    line("granted_pe", &pad(&r.granted_pe));
    line("slots", &pad(&r.slots));
    let colon = if r.failed != 0 { ":" } else { "" };
    line(
        "failed",
        &format!("{:<3} {colon} {}", r.failed, failure_description(r.failed)),
    );
    if r.exit_status >= 128 {
        line(
            "exit_status",
            &format!(
                "{:<20} ({})",
                r.exit_status,
                signal_description(r.exit_status - 128)
            ),
        );
    } else {
        line("exit_status", &pad(&r.exit_status));
    }
    line("ru_wallclock", &format!("{}s", r.ru_wallclock));
    line("ru_utime", &format!("{:.3}s", r.ru_utime));
    line("ru_stime", &format!("{:.3}s", r.ru_stime));
    line("ru_maxrss", &memory(r.ru_maxrss));
    line("ru_ixrss", &memory(r.ru_ixrss as f64));
    line("ru_ismrss", &memory(r.ru_ismrss as f64));
    line("ru_idrss", &memory(r.ru_idrss as f64));
    line("ru_isrss", &memory(r.ru_isrss as f64));
    line("ru_minflt", &pad(&r.ru_minflt));
    line("ru_majflt", &pad(&r.ru_majflt));
    line("ru_nswap", &pad(&r.ru_nswap));
    line("ru_inblock", &pad(&(r.ru_inblock as i64)));
    line("ru_oublock", &pad(&r.ru_oublock));
    line("ru_msgsnd", &pad(&r.ru_msgsnd));
    line("ru_msgrcv", &pad(&r.ru_msgrcv));
    line("ru_nsignals", &pad(&r.ru_nsignals));
    line("ru_nvcsw", &pad(&r.ru_nvcsw));
    line("ru_nivcsw", &pad(&r.ru_nivcsw));
    line("cpu", &format!("{:.3}s", r.cpu));
    line("mem", &format!("{}s", memory(r.mem * GB)));
    line("io", &memory(r.io * GB));
    line("iow", &format!("{:.3}s", r.iow));
    line("maxvmem", &memory(r.maxvmem));
    if r.arid == 0 {
        line("arid", "undefined");
        line("ar_sub_time", "undefined");
    } else {
        line("arid", &pad(&r.arid));
        line("ar_sub_time", &time(r.ar_submission_time));
    }
    line("category", &r.category);
    s
}

/// Sums of the table columns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub wallclock: f64,
    pub utime: f64,
    pub stime: f64,
    pub cpu: f64,
    pub mem: f64,
    pub io: f64,
    pub iow: f64,
}

impl Totals {
    pub fn add(&mut self, r: &AccountingRecord) {
        self.wallclock += r.ru_wallclock as f64;
        self.utime += r.ru_utime;
        self.stime += r.ru_stime;
        self.cpu += r.cpu;
        self.mem += r.mem;
        self.io += r.io;
        self.iow += r.iow;
    }

    pub fn merge(&mut self, t: &Totals) {
        self.wallclock += t.wallclock;
        self.utime += t.utime;
        self.stime += t.stime;
        self.cpu += t.cpu;
        self.mem += t.mem;
        self.io += t.io;
        self.iow += t.iow;
    }
}

/// The numeric columns' title, as SGE prints it after the grouping columns.
pub const TITLE: &str = "    WALLCLOCK         UTIME         STIME           CPU             MEMORY                 IO                IOW";

/// One row's numbers.
pub fn numbers(t: &Totals) -> String {
    format!(
        "{:13.0} {:13.3} {:13.3} {:13.3} {:18.3} {:18.3} {:18.3}",
        t.wallclock, t.utime, t.stime, t.cpu, t.mem, t.io, t.iow
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(memory(4420.0), "4.316KB");
        assert_eq!(memory(0.0), "0.000B");
        assert_eq!(memory(3428352.0), "3.270MB");
        assert_eq!(memory(0.00003 * GB), "31.457KB");
        assert_eq!(memory(1024.0 * GB), "1.000TB");
    }

    #[test]
    fn signals_and_failures() {
        assert_eq!(signal_description(9), "Killed");
        assert_eq!(signal_description(0), "Unknown signal 0");
        assert_eq!(signal_description(34), "Real-time signal 0");
        assert_eq!(failure_description(100), "assumedly after job");
        assert_eq!(failure_description(23), "invalid execution state");
    }
}
