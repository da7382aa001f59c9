//! `qstat -j`: the job detail, as text and as `-xml`.
//!
//! One deliberate divergence (tests/compat/DIVERGENCES.md): SGE prints
//! `(Collecting of scheduler job information is turned off)` unless `schedd_job_info` is
//! set; gridspool always says why a pending job is not running: the scheduler's reasons
//! (`JobRecord::pending_reasons`), else the holds, dependencies and start time the record
//! itself shows.
//!
//! One file over 1,000 lines: `qstat -j`'s text and its `-xml` are the same fields in the
//! same order, kept side by side so that they cannot drift apart.

use super::rows::{self, DerivedHolds};
use super::{QstatArgs, Rendered, View};
use crate::compat::job_list::{self, JobRef};
use crate::config::ComplexType;
use crate::model::{JobId, JobRecord, PathSpec, SlotRange};
use crate::time;
use std::fmt::Write;

/// SGE's message when there is nothing to say about a job.
const NO_MESSAGES: &str = "there are no messages available";

/// `2`, `2-4`, `2-` (open upper end): a `-pe` slot range.
pub fn slot_range(r: SlotRange) -> String {
    if r.min == r.max {
        r.min.to_string()
    } else if r.max >= 9_999_999 {
        format!("{}-", r.min)
    } else if r.min + 1 == r.max {
        // SGE's range_to_dstring: a range of two ids prints as both (oracle: `-pe smp 1-2`
        // shows `range: 1,2`).
        format!("{},{}", r.min, r.max)
    } else {
        format!("{}-{}", r.min, r.max)
    }
}

/// Why the job is not running, one line each: first, while `sched_d` starts nothing because
/// job ends cannot be recorded, that.
pub fn scheduling_reasons(job: &JobRecord, view: &View<'_>) -> Vec<String> {
    let mut out = record_reasons(job, view);
    if let Some(why) = view.storage_blocked
        && job.tasks.pending.iter().any(|g| !g.tasks.is_empty())
    {
        out.insert(0, why.to_string());
    }
    out
}

/// Why the job is not running, from its record.
fn record_reasons(job: &JobRecord, view: &View<'_>) -> Vec<String> {
    if !job.pending_reasons.is_empty() {
        return job.pending_reasons.clone();
    }
    let mut out = Vec::new();
    if job.tasks.pending.iter().all(|g| g.tasks.is_empty()) {
        return out;
    }
    if job.error.is_some() {
        out.push("job is in error state".to_string());
    }
    let derived: DerivedHolds = rows::derived_holds(job, view);
    if job.tasks.pending.iter().any(|g| g.holds.any()) {
        out.push("Job is in hold state".to_string());
    }
    if derived.dependency || derived.array_dependency {
        out.push("job dropped because of job dependencies".to_string());
    }
    if derived.start_time {
        out.push("execution time not reached".to_string());
    }
    out
}

/// The jobs a `-j` list names, and the words that named none.
fn resolve<'a>(words: &[String], view: &View<'a>) -> (Vec<&'a JobRecord>, Vec<String>) {
    let mut found: Vec<&'a JobRecord> = Vec::new();
    let mut missing = Vec::new();
    for w in words {
        let refs = match job_list::parse_word(w) {
            Ok(r) => r,
            Err(_) => {
                missing.push(w.clone());
                continue;
            }
        };
        for r in refs {
            let before = found.len();
            match &r.job {
                JobRef::Id(id) => {
                    if let Some(j) = view.job(*id) {
                        found.push(j);
                    }
                }
                JobRef::Name(_) => {
                    found.extend(view.jobs.iter().filter(|j| r.selects(j)));
                }
            }
            if found.len() == before {
                missing.push(r.text.clone());
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|j| seen.insert(j.id));
    (found, missing)
}

/// Renders `qstat -j [list]`.
pub fn render(args: &QstatArgs, words: &[String], view: &View<'_>) -> Rendered {
    let mut r = Rendered::default();
    if words.is_empty() {
        if args.xml {
            xml_overview(&mut r.stdout, view);
        } else {
            overview(&mut r.stdout, view);
        }
        return r;
    }
    let (jobs, missing) = resolve(words, view);
    if args.xml {
        if jobs.is_empty() && !missing.is_empty() {
            // SGE's answer for unknown jobs in XML: a list on stdout, exit 0.
            r.stdout
                .push_str("<?xml version='1.0'?>\n<unknown_jobs >\n");
            for m in &missing {
                el(&mut r.stdout, 4, "ST_name", m);
            }
            r.stdout.push_str("</unknown_jobs>\n");
            return r;
        }
        xml(&mut r.stdout, &jobs, view);
        return r;
    } else if args.json {
        let details: Vec<String> = jobs
            .iter()
            .map(|job| {
                let mut t = String::new();
                text(&mut t, job, view);
                t
            })
            .collect();
        super::json::job_details(&mut r.stdout, &details);
    } else {
        for job in &jobs {
            text(&mut r.stdout, job, view);
        }
    }
    // As SGE's `qstat_show_job`: the words that named nothing are reported only when none
    // named a job (`qstat -j 10,12` with 10 gone shows 12 and exits 0: `ended-j-with-live`).
    if jobs.is_empty() && !missing.is_empty() {
        r.stderr = format!("Following jobs do not exist: \n{}\n", missing.join(", "));
        r.code = 1;
    }
    r
}

/// `qstat -j` without a list: the reasons of every pending job, each followed by the jobs
/// it applies to.
fn overview(out: &mut String, view: &View<'_>) {
    let mut reasons: Vec<(String, Vec<JobId>)> = Vec::new();
    for job in view.jobs {
        for reason in scheduling_reasons(job, view) {
            match reasons.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, ids)) => ids.push(job.id),
                None => reasons.push((reason, vec![job.id])),
            }
        }
    }
    if reasons.is_empty() {
        let _ = writeln!(out, "scheduling info:            {NO_MESSAGES}");
    }
    for (i, (reason, ids)) in reasons.iter().enumerate() {
        out.push_str(if i == 0 {
            "scheduling info:            "
        } else {
            "                            "
        });
        let list: Vec<String> = ids.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "{reason}: {}", list.join(", "));
    }
    out.push('\n');
}

fn label(out: &mut String, name: &str) {
    out.push_str(name);
    let n = name.chars().count();
    for _ in n..28 {
        out.push(' ');
    }
    if n >= 28 {
        out.push(' ');
    }
}

fn line(out: &mut String, name: &str, value: impl std::fmt::Display) {
    label(out, name);
    let _ = writeln!(out, "{value}");
}

fn path_list(paths: &[PathSpec]) -> String {
    paths
        .iter()
        .map(|p| format!("{}:NONE:{}", p.host.as_deref().unwrap_or("NONE"), p.path))
        .collect::<Vec<_>>()
        .join(",")
}

/// The jobs whose predecessors include `id` (`jid_successor_list`).
fn successors(id: JobId, view: &View<'_>) -> Vec<JobId> {
    view.jobs
        .iter()
        .filter(|j| j.spec.predecessors.contains(&id))
        .map(|j| j.id)
        .collect()
}

/// The jobs whose array predecessors (`-hold_jid_ad`) include `id` (`ja_ad_successor_list`).
fn array_successors(id: JobId, view: &View<'_>) -> Vec<JobId> {
    view.jobs
        .iter()
        .filter(|j| j.spec.array_predecessors.contains(&id))
        .map(|j| j.id)
        .collect()
}

fn ids_text(ids: &[JobId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// `00:00:05`, or `1:00:00:05` past a day: SGE's cpu time of the usage line.
fn cpu_time(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    let (d, h, m, s) = (s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}:{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// `1.234G`, `56.000M`: SGE's memory sizes.
fn memory(bytes: f64) -> String {
    const UNITS: [(f64, &str); 3] = [
        (1024.0 * 1024.0 * 1024.0, "G"),
        (1024.0 * 1024.0, "M"),
        (1024.0, "K"),
    ];
    for (size, unit) in UNITS {
        if bytes >= size {
            return format!("{:.3}{unit}", bytes / size);
        }
    }
    format!("{bytes:.0}")
}

/// SGE's `JOB_TYPE_*` bits (`sge_job.h`): what `JB_type` of `-xml` shows and `job_type:`
/// spells out (not the interactive bits). Every gridspool interactive job is `QRSH`'s kind:
/// a `qlogin` or a `qrsh` without a command (SGE's `QLOGIN`, `QRLOGIN`) is a `qrsh` of the
/// login shell; `qsh` does not exist.
mod job_type_bits {
    pub const IMMEDIATE: u32 = 0x01;
    pub const QRSH: u32 = 0x08;
    pub const BINARY: u32 = 0x40;
    pub const ARRAY: u32 = 0x80;
    pub const NO_SHELL: u32 = 0x100;
}

/// The `JOB_TYPE_*` bits of a job: `-now y`, `-b y`, `-t`, `-shell no` (oracle: a script 0,
/// `-b y` 64, an array 128, both 192, `-b y -shell no` 320, `-shell no` alone 256).
pub fn job_type(job: &JobRecord) -> u32 {
    use job_type_bits::*;
    let s = &job.spec;
    [
        (s.now, IMMEDIATE),
        (s.interactive.is_some(), QRSH),
        (s.binary, BINARY),
        (job.is_array(), ARRAY),
        (!s.shell, NO_SHELL),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |bits, (_, bit)| bits | bit)
}

/// `job_type:` of `qstat -j`: `binary`, `noshell`, `immediate` in SGE's order, comma-joined,
/// or `NONE` (`cull_show_job`).
fn job_type_text(bits: u32) -> String {
    use job_type_bits::*;
    let words: Vec<&str> = [
        (BINARY, "binary"),
        (NO_SHELL, "noshell"),
        (IMMEDIATE, "immediate"),
    ]
    .iter()
    .filter(|(bit, _)| bits & bit != 0)
    .map(|(_, w)| *w)
    .collect();
    if words.is_empty() {
        "NONE".into()
    } else {
        words.join(",")
    }
}

/// The text of one job.
fn text(out: &mut String, job: &JobRecord, view: &View<'_>) {
    let s = &job.spec;
    let sub = &job.submitter;
    out.push_str("==============================================================\n");
    line(out, "job_number:", job.id);
    line(out, "exec_file:", format_args!("job_scripts/{}", job.id));
    line(out, "submission_time:", time::ctime(sub.submission_time));
    if let Some(d) = s.deadline {
        line(out, "deadline:", time::ctime(d));
    }
    line(out, "owner:", &sub.owner);
    line(out, "uid:", sub.uid);
    line(out, "group:", &sub.group);
    line(out, "gid:", sub.gid);
    line(out, "sge_o_home:", &sub.sge_o_home);
    line(out, "sge_o_log_name:", &sub.sge_o_log_name);
    line(out, "sge_o_path:", &sub.sge_o_path);
    line(out, "sge_o_shell:", &sub.sge_o_shell);
    if let Some(tz) = &sub.sge_o_tz {
        line(out, "sge_o_tz:", tz);
    }
    line(out, "sge_o_workdir:", &sub.sge_o_workdir);
    line(out, "sge_o_host:", &sub.sge_o_host);
    if let Some(t) = s.start_time {
        line(out, "execution_time:", time::ctime(t));
    }
    line(out, "account:", &s.account);
    if let Some(cwd) = &s.cwd {
        line(out, "cwd:", cwd);
    }
    if let Some(p) = &s.directive_prefix {
        line(out, "directive_prefix:", p);
    }
    if !s.stderr.is_empty() {
        line(out, "stderr_path_list:", path_list(&s.stderr));
    }
    if s.reserve {
        line(out, "reserve:", "y");
    }
    if s.merge_stderr {
        line(out, "merge:", "y");
    }
    let resources = |list: &[crate::model::ResourceRequest]| {
        list.iter()
            .map(|r| format!("{}={}", r.name, r.value))
            .collect::<Vec<_>>()
            .join(",")
    };
    if !s.hard_resources.is_empty() {
        line(out, "hard resource_list:", resources(&s.hard_resources));
    }
    if !s.soft_resources.is_empty() {
        line(out, "soft resource_list:", resources(&s.soft_resources));
    }
    if !s.mail_options.is_empty() && s.mail_options != "n" {
        line(out, "mail_options:", &s.mail_options);
    }
    let mail = if s.mail_list.is_empty() {
        format!("{}@{}", sub.owner, sub.sge_o_host)
    } else {
        s.mail_list.join(",")
    };
    line(out, "mail_list:", mail);
    line(out, "notify:", if s.notify { "TRUE" } else { "FALSE" });
    line(out, "job_name:", &s.name);
    if !s.stdout.is_empty() {
        line(out, "stdout_path_list:", path_list(&s.stdout));
    }
    if !s.stdin.is_empty() {
        line(out, "stdin_path_list:", path_list(&s.stdin));
    }
    if s.priority != 0 {
        line(out, "priority:", s.priority);
    }
    line(out, "jobshare:", s.job_share);
    if !s.hard_queues.is_empty() {
        line(out, "hard_queue_list:", s.hard_queues.join(","));
    }
    if !s.soft_queues.is_empty() {
        line(out, "soft_queue_list:", s.soft_queues.join(","));
    }
    if let Some(r) = s.restartable {
        line(out, "restart:", if r { "y" } else { "n" });
    }
    if !s.interpreter.is_empty() {
        let shells: Vec<String> = s
            .interpreter
            .iter()
            .map(|p| format!("{}:{}", p.host.as_deref().unwrap_or("NONE"), p.path))
            .collect();
        line(out, "shell_list:", shells.join(","));
    }
    let env: Vec<String> = s
        .env
        .iter()
        .map(|v| format!("{}={}", v.name, v.value.as_deref().unwrap_or("NONE")))
        .collect();
    line(out, "env_list:", env.join(","));
    if !s.args.is_empty() {
        line(out, "job_args:", s.args.join(","));
    }
    if !s.master_queues.is_empty() {
        line(out, "master hard queue_list:", s.master_queues.join(","));
    }
    line(out, "script_file:", &s.script_file);
    if let Some(pe) = &s.pe {
        let _ = writeln!(
            out,
            "parallel environment:  {} range: {}",
            pe.name,
            slot_range(pe.range)
        );
    }
    if !s.hold_jid.is_empty() {
        line(out, "jid_predecessor_list (req):", s.hold_jid.join(","));
    }
    let live: Vec<JobId> = s
        .predecessors
        .iter()
        .copied()
        .filter(|p| view.job(*p).is_some())
        .collect();
    if !live.is_empty() {
        line(out, "jid_predecessor_list:", ids_text(&live));
    }
    let succ = successors(job.id, view);
    if !succ.is_empty() {
        line(out, "jid_successor_list:", ids_text(&succ));
    }
    // No `ja_ad_predecessor_list (req):` line: SGE 8.1.9 has it compiled out (`#if 0` in
    // `cull_show_job`; the oracle shows none for `-hold_jid_ad`).
    let live_ad: Vec<JobId> = s
        .array_predecessors
        .iter()
        .copied()
        .filter(|p| view.job(*p).is_some())
        .collect();
    if !live_ad.is_empty() {
        line(out, "ja_ad_predecessor_list:", ids_text(&live_ad));
    }
    let succ_ad = array_successors(job.id, view);
    if !succ_ad.is_empty() {
        line(out, "ja_ad_successor_list:", ids_text(&succ_ad));
    }
    if s.verify_suitable_queues > 0 {
        line(out, "verify_suitable_queues:", s.verify_suitable_queues);
    }
    if let Some(ar) = s.ar {
        line(out, "ar_id:", ar);
    }
    if job.version > 0 {
        line(out, "version:", job.version);
    }
    if let Some(p) = &s.project {
        line(out, "project:", p);
    }
    if let Some(a) = s.array {
        line(out, "job-array tasks:", a);
    }
    if let Some(n) = s.task_concurrency.filter(|n| *n > 0) {
        line(out, "maximum concurrency:", n);
    }
    if !s.context.is_empty() {
        let ctx: Vec<String> = s.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        line(out, "context:", ctx.join(","));
    }
    line(out, "binding:", "NONE");
    line(out, "job_type:", job_type_text(job_type(job)));
    for (i, t) in job.tasks.running.iter().enumerate() {
        let u = t.usage.unwrap_or_default();
        let _ = writeln!(
            out,
            "{} {:9}:            cpu={}, mem={:.5} GB s, io={:.5} GB, vmem={}, maxvmem={}",
            if i == 0 { "usage" } else { "     " },
            t.task,
            cpu_time(u.cpu),
            u.mem,
            u.io,
            if u.vmem == 0.0 {
                "N/A".to_string()
            } else {
                memory(u.vmem)
            },
            if u.maxvmem == 0.0 {
                "N/A".to_string()
            } else {
                memory(u.maxvmem)
            },
        );
    }
    for (i, t) in job.tasks.running.iter().enumerate() {
        let _ = writeln!(
            out,
            "{} {:7}:            NONE",
            if i == 0 { "binding" } else { "       " },
            t.task
        );
    }
    // The devices granted to each running task, as Univa's resource maps are shown (SGE
    // 8.1.9 has none): `resource_map 1: gpu=node1=(0 1)`.
    let mut first = true;
    for t in job.tasks.running.iter().filter(|t| !t.devices.is_empty()) {
        let maps: Vec<String> = t
            .devices
            .iter()
            .map(|(kind, ids)| format!("{kind}={}=({})", t.host, ids.join(" ")))
            .collect();
        let _ = writeln!(
            out,
            "{} {:2}:            {}",
            if first {
                "resource_map"
            } else {
                "            "
            },
            t.task,
            maps.join(",")
        );
        first = false;
    }
    if let Some(e) = &job.error {
        let task = job
            .tasks
            .pending
            .iter()
            .find_map(|g| g.tasks.first())
            .unwrap_or(1);
        let _ = writeln!(
            out,
            "error reason {task:10}:      {} {}",
            time::qstat_date(e.time),
            e.message
        );
    }
    // The active policy's own terms (cluster order, queue priority and gap, share…); the
    // SGE policy has none, so its output stays SGE's.
    if let Some(p) = job.priority.as_ref().filter(|p| !p.policy_terms.is_empty()) {
        let terms: Vec<String> = p
            .policy_terms
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        line(out, "policy:", terms.join(", "));
    }
    let reasons = scheduling_reasons(job, view);
    if reasons.is_empty() {
        let _ = writeln!(out, "scheduling info:            {NO_MESSAGES}");
    }
    for (i, r) in reasons.iter().enumerate() {
        out.push_str(if i == 0 {
            "scheduling info:            "
        } else {
            "                            "
        });
        out.push_str(r);
        out.push('\n');
    }
    if let Some(start) = view.estimates {
        super::start::detail_lines(out, start, job);
    }
}

/// Escapes text for an XML element.
pub(crate) fn esc(out: &mut String, s: &str) {
    super::fmt::esc(out, s);
}

fn el(out: &mut String, indent: usize, name: &str, value: impl std::fmt::Display) {
    for _ in 0..indent {
        out.push(' ');
    }
    let v = value.to_string();
    let _ = write!(out, "<{name}>");
    esc(out, &v);
    let _ = writeln!(out, "</{name}>");
}

fn open(out: &mut String, indent: usize, name: &str) {
    for _ in 0..indent {
        out.push(' ');
    }
    let _ = writeln!(out, "<{name}>");
}

fn close(out: &mut String, indent: usize, name: &str) {
    for _ in 0..indent {
        out.push(' ');
    }
    let _ = writeln!(out, "</{name}>");
}

const DETAIL_HEAD: &str = "<?xml version='1.0'?>\n<detailed_job_info  xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/detailed_job_info.xsd\">\n";

/// `<messages>`: the scheduling reasons, SGE's global message list.
fn xml_messages(out: &mut String, reasons: &[String]) {
    open(out, 2, "messages");
    open(out, 4, "element");
    if reasons.is_empty() {
        open(out, 6, "SME_global_message_list");
        open(out, 8, "element");
        el(out, 10, "MES_message_number", 0);
        el(out, 10, "MES_message", NO_MESSAGES);
        close(out, 8, "element");
        close(out, 6, "SME_global_message_list");
    } else {
        open(out, 6, "SME_global_message_list");
        for r in reasons {
            open(out, 8, "element");
            el(out, 10, "MES_message_number", 0);
            el(out, 10, "MES_message", r);
            close(out, 8, "element");
        }
        close(out, 6, "SME_global_message_list");
    }
    close(out, 4, "element");
    close(out, 2, "messages");
}

fn xml_overview(out: &mut String, view: &View<'_>) {
    out.push_str("<?xml version='1.0'?>\n<message  xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/message.xsd\">\n");
    let mut reasons: Vec<(String, Vec<JobId>)> = Vec::new();
    for job in view.jobs {
        for reason in scheduling_reasons(job, view) {
            match reasons.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, ids)) => ids.push(job.id),
                None => reasons.push((reason, vec![job.id])),
            }
        }
    }
    let lines: Vec<String> = if reasons.is_empty() {
        vec![NO_MESSAGES.to_string()]
    } else {
        reasons
            .iter()
            .map(|(r, ids)| format!("{r}: {}", ids_text(ids).replace(',', ", ")))
            .collect()
    };
    open(out, 2, "element");
    open(out, 4, "SME_global_message_list");
    for l in &lines {
        open(out, 6, "element");
        el(out, 8, "MES_message_number", 0);
        el(out, 8, "MES_message", l);
        close(out, 6, "element");
    }
    close(out, 4, "SME_global_message_list");
    close(out, 2, "element");
    out.push_str("</message>\n");
}

/// `qstat -j list -xml`.
fn xml(out: &mut String, jobs: &[&JobRecord], view: &View<'_>) {
    out.push_str(DETAIL_HEAD);
    open(out, 2, "djob_info");
    let mut reasons = Vec::new();
    for job in jobs {
        xml_job(out, job, view);
        reasons.extend(scheduling_reasons(job, view));
    }
    close(out, 2, "djob_info");
    xml_messages(out, &reasons);
    out.push_str("</detailed_job_info>\n");
}

fn xml_job(out: &mut String, job: &JobRecord, view: &View<'_>) {
    let s = &job.spec;
    let sub = &job.submitter;
    open(out, 4, "element");
    el(out, 6, "JB_job_number", job.id);
    el(out, 6, "JB_ar", 0);
    el(
        out,
        6,
        "JB_exec_file",
        format_args!("job_scripts/{}", job.id),
    );
    el(out, 6, "JB_submission_time", sub.submission_time);
    el(out, 6, "JB_owner", &sub.owner);
    el(out, 6, "JB_uid", sub.uid);
    el(out, 6, "JB_group", &sub.group);
    el(out, 6, "JB_gid", sub.gid);
    el(out, 6, "JB_account", &s.account);
    el(out, 6, "JB_merge_stderr", s.merge_stderr);
    // SGE names the elements of a list `-M` gave `mail_list`, those of the default it makes
    // itself (the owner at the submit host) `element` (oracle).
    let default_mail = format!("{}@{}", sub.owner, sub.sge_o_host);
    let (mail_tag, mails): (&str, Vec<(String, String)>) =
        if s.mail_list.is_empty() || s.mail_list == [default_mail] {
            ("element", vec![(sub.owner.clone(), sub.sge_o_host.clone())])
        } else {
            let split = s
                .mail_list
                .iter()
                .map(|m| match m.split_once('@') {
                    Some((u, h)) => (u.to_string(), h.to_string()),
                    None => (m.clone(), String::new()),
                })
                .collect();
            ("mail_list", split)
        };
    open(out, 6, "JB_mail_list");
    for (u, h) in &mails {
        open(out, 8, mail_tag);
        el(out, 10, "MR_user", u);
        el(out, 10, "MR_host", h);
        close(out, 8, mail_tag);
    }
    close(out, 6, "JB_mail_list");
    if let Some(p) = &s.project {
        el(out, 6, "JB_project", p);
    }
    el(out, 6, "JB_notify", s.notify);
    el(out, 6, "JB_job_name", &s.name);
    // The elements below follow SGE's job descriptor order (oracle `oracle-j-options-*-xml`).
    xml_paths(out, "JB_stdout_path_list", &s.stdout);
    el(out, 6, "JB_jobshare", s.job_share);
    xml_resources(out, "JB_hard_resource_list", &s.hard_resources, view);
    xml_resources(out, "JB_soft_resource_list", &s.soft_resources, view);
    xml_queues(out, "JB_hard_queue_list", &s.hard_queues);
    xml_queues(out, "JB_soft_queue_list", &s.soft_queues);
    xml_paths(out, "JB_shell_list", &s.interpreter);
    open(out, 6, "JB_env_list");
    let env_el = |out: &mut String, name: &str, value: Option<&str>| {
        open(out, 8, "job_sublist");
        el(out, 10, "VA_variable", name);
        if let Some(v) = value {
            el(out, 10, "VA_value", v);
        }
        close(out, 8, "job_sublist");
    };
    // SGE's job_initialize_env: the submitter's variables, TERM, O_HOST and O_WORKDIR, then
    // the `-v`/`-V` variables.
    env_el(out, "__SGE_PREFIX__O_HOME", Some(&sub.sge_o_home));
    env_el(out, "__SGE_PREFIX__O_LOGNAME", Some(&sub.sge_o_log_name));
    env_el(out, "__SGE_PREFIX__O_PATH", Some(&sub.sge_o_path));
    env_el(out, "__SGE_PREFIX__O_SHELL", Some(&sub.sge_o_shell));
    if let Some(tz) = &sub.sge_o_tz {
        env_el(out, "__SGE_PREFIX__O_TZ", Some(tz));
    }
    if let Some(mail) = &sub.sge_o_mail {
        env_el(out, "__SGE_PREFIX__O_MAIL", Some(mail));
    }
    for v in s.env.iter().filter(|v| v.name == "TERM") {
        env_el(out, &v.name, v.value.as_deref());
    }
    env_el(out, "__SGE_PREFIX__O_HOST", Some(&sub.sge_o_host));
    env_el(out, "__SGE_PREFIX__O_WORKDIR", Some(&sub.sge_o_workdir));
    for v in s.env.iter().filter(|v| v.name != "TERM") {
        env_el(out, &v.name, v.value.as_deref());
    }
    close(out, 6, "JB_env_list");
    if !s.args.is_empty() {
        open(out, 6, "JB_job_args");
        for a in &s.args {
            open(out, 8, "element");
            el(out, 10, "ST_name", a);
            close(out, 8, "element");
        }
        close(out, 6, "JB_job_args");
    }
    el(out, 6, "JB_script_file", &s.script_file);
    if !job.tasks.running.is_empty() {
        open(out, 6, "JB_ja_tasks");
        for t in &job.tasks.running {
            open(out, 8, "ulong_sublist");
            el(out, 10, "JAT_status", 128);
            el(out, 10, "JAT_task_number", t.task);
            el(out, 10, "JAT_start_time", t.start_time);
            let ntix = job.priority.as_ref().map_or(0.0, |p| p.ntckts);
            el(out, 10, "JAT_ntix", format_args!("{ntix:.6}"));
            close(out, 8, "ulong_sublist");
        }
        close(out, 6, "JB_ja_tasks");
    }
    if !s.context.is_empty() {
        open(out, 6, "JB_context");
        for (k, v) in &s.context {
            open(out, 8, "context_list");
            el(out, 10, "VA_variable", k);
            el(out, 10, "VA_value", v);
            close(out, 8, "context_list");
        }
        close(out, 6, "JB_context");
    }
    if let Some(cwd) = &s.cwd {
        el(out, 6, "JB_cwd", cwd);
    }
    xml_paths(out, "JB_stderr_path_list", &s.stderr);
    let live = |ids: &[JobId]| -> Vec<JobId> {
        ids.iter()
            .copied()
            .filter(|p| view.job(*p).is_some())
            .collect()
    };
    xml_job_numbers(
        out,
        "JB_jid_predecessor_list",
        "job_predecessors",
        &live(&s.predecessors),
    );
    xml_job_numbers(
        out,
        "JB_ja_ad_predecessor_list",
        "job_predecessors_ad",
        &live(&s.array_predecessors),
    );
    xml_requests(out, &s.hold_jid);
    if !s.hold_jid_ad.is_empty() {
        // SGE 8.1.9 shows each `-hold_jid_ad` request by number 0 alone (oracle).
        open(out, 6, "JB_ja_ad_request_list");
        for _ in &s.hold_jid_ad {
            open(out, 8, "element");
            el(out, 10, "JRE_job_number", 0);
            close(out, 8, "element");
        }
        close(out, 6, "JB_ja_ad_request_list");
    }
    xml_job_numbers(
        out,
        "JB_jid_successor_list",
        "ulong_sublist",
        &successors(job.id, view),
    );
    xml_job_numbers(
        out,
        "JB_ja_ad_successor_list",
        "ulong_sublist",
        &array_successors(job.id, view),
    );
    el(out, 6, "JB_deadline", s.deadline.unwrap_or(0));
    el(out, 6, "JB_execution_time", s.start_time.unwrap_or(0));
    el(out, 6, "JB_checkpoint_attr", 0);
    el(out, 6, "JB_checkpoint_interval", 0);
    if let Some(p) = &s.directive_prefix {
        el(out, 6, "JB_directive_prefix", p);
    }
    el(out, 6, "JB_reserve", s.reserve);
    el(out, 6, "JB_mail_options", mail_option_bits(&s.mail_options));
    xml_paths(out, "JB_stdin_path_list", &s.stdin);
    el(out, 6, "JB_priority", 1024 + s.priority);
    el(
        out,
        6,
        "JB_restart",
        match s.restartable {
            None => 0,
            Some(true) => 1,
            Some(false) => 2,
        },
    );
    el(out, 6, "JB_verify", 0);
    xml_queues(out, "JB_master_hard_queue_list", &s.master_queues);
    el(out, 6, "JB_script_size", 0);
    if let Some(pe) = &s.pe {
        el(out, 6, "JB_pe", &pe.name);
        open(out, 6, "JB_pe_range");
        open(out, 8, "ranges");
        el(out, 10, "RN_min", pe.range.min);
        el(out, 10, "RN_max", pe.range.max);
        el(out, 10, "RN_step", 1);
        close(out, 8, "ranges");
        close(out, 6, "JB_pe_range");
    }
    // SGE 8.1.9 prints the request list a second time here.
    xml_requests(out, &s.hold_jid);
    el(
        out,
        6,
        "JB_verify_suitable_queues",
        s.verify_suitable_queues,
    );
    el(out, 6, "JB_soft_wallclock_gmt", 0);
    el(out, 6, "JB_hard_wallclock_gmt", 0);
    el(out, 6, "JB_override_tickets", 0);
    el(out, 6, "JB_version", job.version);
    let range = s.task_range();
    open(out, 6, "JB_ja_structure");
    open(out, 8, "task_id_range");
    el(out, 10, "RN_min", range.first);
    el(out, 10, "RN_max", range.last);
    el(out, 10, "RN_step", range.step);
    close(out, 8, "task_id_range");
    close(out, 6, "JB_ja_structure");
    el(out, 6, "JB_type", job_type(job));
    open(out, 6, "JB_binding");
    open(out, 8, "element");
    el(out, 10, "BN_strategy", "no_job_binding");
    el(out, 10, "BN_type", 0);
    el(out, 10, "BN_parameter_n", 0);
    el(out, 10, "BN_parameter_socket_offset", 0);
    el(out, 10, "BN_parameter_core_offset", 0);
    el(out, 10, "BN_parameter_striding_step_size", 0);
    el(out, 10, "BN_parameter_explicit", "no_explicit_binding");
    close(out, 8, "element");
    close(out, 6, "JB_binding");
    el(
        out,
        6,
        "JB_ja_task_concurrency",
        s.task_concurrency.unwrap_or(0),
    );
    let nurg = job.priority.as_ref().map_or(0.0, |p| p.nurg);
    el(out, 6, "JB_nurg", format_args!("{nurg:.6}"));
    close(out, 4, "element");
}

fn xml_paths(out: &mut String, name: &str, paths: &[PathSpec]) {
    if paths.is_empty() {
        return;
    }
    open(out, 6, name);
    for p in paths {
        open(out, 8, "path_list");
        el(out, 10, "PN_path", &p.path);
        el(out, 10, "PN_host", p.host.as_deref().unwrap_or(""));
        el(out, 10, "PN_file_host", "");
        el(out, 10, "PN_file_staging", false);
        close(out, 8, "path_list");
    }
    close(out, 6, name);
}

fn xml_requests(out: &mut String, words: &[String]) {
    if words.is_empty() {
        return;
    }
    open(out, 6, "JB_jid_request_list");
    for w in words {
        open(out, 8, "element");
        el(out, 10, "JRE_job_number", 0);
        el(out, 10, "JRE_job_name", w);
        close(out, 8, "element");
    }
    close(out, 6, "JB_jid_request_list");
}

/// A list of job numbers, each in an element named `tag` (SGE names them after the list
/// they were made from: `job_predecessors`, `job_predecessors_ad`, `ulong_sublist`).
fn xml_job_numbers(out: &mut String, name: &str, tag: &str, ids: &[JobId]) {
    if ids.is_empty() {
        return;
    }
    open(out, 6, name);
    for p in ids {
        open(out, 8, tag);
        el(out, 10, "JRE_job_number", p);
        close(out, 8, tag);
    }
    close(out, 6, name);
}

/// A queue list (`-q`, `-masterq`): `destin_ident_list` elements of `QR_name`.
fn xml_queues(out: &mut String, name: &str, queues: &[String]) {
    if queues.is_empty() {
        return;
    }
    open(out, 6, name);
    for q in queues {
        open(out, 8, "destin_ident_list");
        el(out, 10, "QR_name", q);
        close(out, 8, "destin_ident_list");
    }
    close(out, 6, name);
}

/// `-m` as SGE's `JB_mail_options` bits (`sge_mailrec.h`: `a` 0x40000, `b` 0x80000, `e`
/// 0x100000, `n` 0x200000, `s` 0x400000; oracle: `-m bea` 1835008).
fn mail_option_bits(options: &str) -> u32 {
    options
        .chars()
        .map(|c| match c {
            'a' => 0x4_0000,
            'b' => 0x8_0000,
            'e' => 0x10_0000,
            'n' => 0x20_0000,
            's' => 0x40_0000,
            _ => 0,
        })
        .fold(0, |bits, b| bits | b)
}

/// A request's share of the job's urgency (`-r`'s figure in parentheses): the complex's
/// urgency, times the requested amount and the slots for numeric complexes.
pub(crate) fn urgency_contribution(
    view: &View<'_>,
    r: &crate::model::ResourceRequest,
    slots: u32,
) -> f64 {
    let Some(c) = view.config.complex(&r.name) else {
        return 0.0;
    };
    if c.urgency == 0.0 {
        0.0
    } else if c.kind.is_numeric() {
        numeric_value(&r.value) * c.urgency * f64::from(slots)
    } else {
        c.urgency
    }
}

/// SGE's `CE_valtype` numbers (`complex(5)` types).
fn valtype(kind: ComplexType) -> u32 {
    match kind {
        ComplexType::Int => 1,
        ComplexType::String => 2,
        ComplexType::Time => 3,
        ComplexType::Memory => 4,
        ComplexType::Bool => 5,
        ComplexType::Cstring => 6,
        ComplexType::Host => 7,
        ComplexType::Double => 8,
        ComplexType::Restring => 9,
    }
}

/// The numeric value of a request (`100`, `1:00:00`, `2G`, `512m`, `true`), 0 if none.
pub(crate) fn numeric_value(text: &str) -> f64 {
    let t = text.trim();
    if t.contains(':') {
        return t.split(':').fold(0.0, |acc, part| {
            acc * 60.0 + part.parse::<f64>().unwrap_or(0.0)
        });
    }
    if t.eq_ignore_ascii_case("true") {
        return 1.0;
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c {
                'k' => 1e3,
                'K' => 1024.0,
                'm' => 1e6,
                'M' => 1024.0 * 1024.0,
                'g' => 1e9,
                'G' => 1024.0 * 1024.0 * 1024.0,
                't' => 1e12,
                'T' => 1024.0_f64.powi(4),
                _ => 0.0,
            };
            (&t[..i], m)
        }
        _ => (t, 1.0),
    };
    num.parse::<f64>().map_or(0.0, |n| n * mult)
}

fn xml_resources(
    out: &mut String,
    name: &str,
    list: &[crate::model::ResourceRequest],
    view: &View<'_>,
) {
    if list.is_empty() {
        return;
    }
    open(out, 6, name);
    for r in list {
        let kind = view
            .config
            .complex(&r.name)
            .map_or(ComplexType::String, |c| c.kind);
        open(out, 8, "qstat_l_requests");
        el(out, 10, "CE_name", &r.name);
        el(out, 10, "CE_valtype", valtype(kind));
        el(out, 10, "CE_stringval", &r.value);
        el(
            out,
            10,
            "CE_doubleval",
            format_args!("{:.6}", numeric_value(&r.value)),
        );
        for (n, v) in [
            ("CE_relop", "0"),
            ("CE_consumable", "0"),
            ("CE_dominant", "0"),
            ("CE_pj_doubleval", "0.000000"),
            ("CE_pj_dominant", "0"),
            ("CE_requestable", "0"),
            ("CE_tagged", "0"),
        ] {
            el(out, 10, n, v);
        }
        close(out, 8, "qstat_l_requests");
    }
    close(out, 6, name);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_format_like_sge() {
        assert_eq!(slot_range(SlotRange { min: 2, max: 2 }), "2");
        assert_eq!(slot_range(SlotRange { min: 2, max: 4 }), "2-4");
        assert_eq!(cpu_time(5.0), "00:00:05");
        assert_eq!(cpu_time(90_061.0), "1:01:01:01");
        assert_eq!(memory(0.0), "0");
        assert_eq!(memory(1536.0 * 1024.0 * 1024.0), "1.500G");
        assert_eq!(numeric_value("1:00:00"), 3600.0);
        assert_eq!(numeric_value("2G"), 2.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(numeric_value("100"), 100.0);
        assert_eq!(numeric_value("x"), 0.0);
    }
}
