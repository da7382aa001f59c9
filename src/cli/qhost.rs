//! `qhost`: execution hosts, their load and their queues, as SGE 8.1.9's `qhost(1)` prints
//! them (plain, `-q`, `-F`, `-xml`, `-h`, `-l`, `-ncb`).
//!
//! Hosts come from the cluster configuration. The host `qhost` runs on is measured from
//! `/proc` (or from the directory in `GRIDSPOOL_PROC_DIR`, which tests point at fixed
//! files); other hosts show what `sched_d` last reported in `daemon/hosts/<name>.json`
//! (see [`crate::acct::load`]) or `-` when nothing recent is known, and their queues then
//! carry SGE's `au` state. `-j` and `-u` list the running jobs of each queue instance on the
//! host, as SGE prints them (per queue instance, one line per granted slot).

use super::Output;
use crate::acct::load::{self, HostLoad, HostReport, MAX_UNHEARD_SECS};
use crate::compat::host_attributes::{HostStatus, known_attribute, satisfies};
use crate::compat::options::{self, ArgError, Arity, OperandMode, OptionSpec, Origin, help_lines};
use crate::config::{ClusterConfig, HostConfig, QueueConfig};
use crate::model::JobRecord;
use crate::units::{memory1, memory3};
use std::collections::BTreeMap;
use std::path::PathBuf;

mod jobs;

/// `qhost`'s options in SGE 8.1.9's `-help` order: the one table behind parsing, `-help`,
/// and the generated man page and completions.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-F",
        Arity::Optional,
        "[-F [resource_attribute]]",
        "show (selected) resources",
    ),
    OptionSpec::new(
        "-h",
        Arity::One,
        "[-h hostlist]",
        "display only selected hosts",
    ),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new("-j", Arity::Flag, "[-j]", "display jobs hosted by host"),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l attr=val,...]",
        "request the given resources",
    ),
    OptionSpec::new(
        "-ncb",
        Arity::Flag,
        "[-ncb]",
        "suppress host topology based information",
    ),
    OptionSpec::new("-q", Arity::Flag, "[-q]", "display queues hosted by host"),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user[,user,...]]",
        "show only jobs for user",
    ),
    OptionSpec::new(
        "-xml",
        Arity::Flag,
        "[-xml]",
        "display the information in XML format",
    ),
];

/// `qhost`'s man page and completions (its `-help` keeps SGE's own layout: [`usage`]).
pub const DOC: crate::compat::docs::CommandDoc = crate::compat::docs::CommandDoc {
    name: "qhost",
    summary: "show the status of gridspool execution hosts",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: OPTIONS,
    operand: None,
    operand_hint: crate::compat::docs::ValueHint::Text,
    syntax: &[],
    description: &[
        "qhost lists the execution hosts of the cluster configuration with their architecture, processors, load and memory, in SGE 8.1.9's columns. The host qhost runs on is measured from /proc at once; other hosts show what sched_d last reported for them, or - when nothing recent is known.",
        "With -q each host is followed by its queue instances: type, reserved/used/total slots and state (au when the host has not been heard from). -j lists the running jobs of each queue instance of the host (job, priority, name, owner, state, start time, queue instance, MASTER or SLAVE for each granted slot, task id); -u user[,user...] does the same for those users' jobs only (patterns allowed, '*' for all). -json, a gridspool extension (not listed by -help), prints one JSON object {\"hosts\": [...]} with per host name, known, arch, num_proc, sockets, cores, threads, load_avg, mem_total, mem_used, swap_total and swap_used (bytes; null for a host not heard from), its queue instances (name, type, slots_used, slots_total, state; with -j or -u also jobs: per granted slot job, task, name, owner, state, priority, started, queue and master, MASTER or SLAVE) and with -F its resources as {\"hl:load_avg\": \"0.12\", ...}. -F lists a host's resources (hl: load values, hc: complex values) as SGE does, optionally only the named ones, and, a gridspool extension, each device complex's ids with the running task that holds each (rm:gpu=0(7.1) 1); -l selects hosts whose values satisfy the requests; -h selects hosts by name or pattern; -ncb leaves out the socket, core and thread columns and the topology values.",
    ],
    option_details: &[],
    value_hints: &[],
    exit_status: &[
        ("0", "The listing was printed."),
        (
            "1",
            "The command line is wrong or the cell's configuration cannot be read.",
        ),
    ],
    compatibility: &[
        "With -j, a task the scheduler has handed to its host but whose start is not yet written down (state t) is listed too; SGE 8.1.9 lists running tasks only.",
    ],
    see_also: &["qstat", "qacct", "sched_d"],
};

/// `qhost -help`, exactly as SGE 8.1.9 prints it.
pub fn usage() -> String {
    format!(
        "SGE 8.1.9\nusage: qhost [options]\n{}",
        help_lines(OPTIONS, "  ", 27)
    )
}

/// Everything `qhost` needs besides its arguments, gathered by [`main`] (or a test).
#[derive(Debug, Clone)]
pub struct QhostInput {
    pub config: ClusterConfig,
    /// The jobs of the spool (for the used slots of each queue instance).
    pub jobs: Vec<JobRecord>,
    /// Measured load of hosts known right now: this host's from `/proc`, others' from their
    /// reports.
    pub loads: BTreeMap<String, HostStatus>,
    /// What `qmod` set on queue instances (`d`, `s`, `E` of `-q`).
    pub instance_states: crate::spool::QueueInstanceStates,
}

#[derive(Debug, Default)]
struct Options {
    queues: bool,
    /// `-F`: `Some(empty)` for all resources, else the selected names.
    resources: Option<Vec<String>>,
    hosts: Option<Vec<String>>,
    requests: Vec<(String, String)>,
    no_topology: bool,
    xml: bool,
    /// `-j`, or `-u`: list the jobs of each queue instance.
    jobs: bool,
    /// `-u`: only these owners' jobs (names or patterns).
    users: Vec<String>,
}

enum ParseError {
    /// The usage on stderr, then the message.
    UsageThen(String),
    /// The message alone.
    Message(String),
    Help,
}

fn parse(args: &[String]) -> Result<Options, ParseError> {
    let parsed = options::parse(
        OPTIONS,
        args,
        OperandMode::Interleaved,
        &Origin::CommandLine,
    )
    .map_err(|e| match e {
        ArgError::Unknown(_) => ParseError::UsageThen(format!("error: {e}")),
        ArgError::MissingValue(_) => ParseError::Message(format!("error: {e}")),
    })?;
    if let Some(word) = parsed.operands.first() {
        return Err(ParseError::UsageThen(format!(
            "error: invalid option argument \"{word}\""
        )));
    }
    let mut o = Options::default();
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    for opt in &parsed.options {
        let value = opt.values.first().map(String::as_str);
        match opt.spec.name {
            "-q" => o.queues = true,
            "-j" => o.jobs = true,
            "-u" => {
                o.jobs = true;
                o.users.extend(list(value.unwrap_or_default()));
            }
            "-xml" => o.xml = true,
            "-ncb" => o.no_topology = true,
            "-help" => return Err(ParseError::Help),
            "-F" => o
                .resources
                .get_or_insert_with(Vec::new)
                .extend(value.map(list).unwrap_or_default()),
            "-h" => o
                .hosts
                .get_or_insert_with(Vec::new)
                .extend(list(value.unwrap_or_default())),
            "-l" => {
                for req in list(value.unwrap_or_default()) {
                    let (k, val) = req.split_once('=').unwrap_or((&req, "TRUE"));
                    o.requests.push((k.to_string(), val.to_string()));
                }
            }
            other => {
                return Err(ParseError::UsageThen(format!(
                    "error: invalid option argument \"{other}\""
                )));
            }
        }
    }
    Ok(o)
}

/// The host line's values, `-` when unknown.
struct HostValues {
    arch: String,
    ncpu: String,
    nsoc: String,
    ncor: String,
    nthr: String,
    load: String,
    memtot: String,
    memuse: String,
    swapto: String,
    swapus: String,
}

impl HostValues {
    fn unknown() -> Self {
        let d = || "-".to_string();
        HostValues {
            arch: d(),
            ncpu: d(),
            nsoc: d(),
            ncor: d(),
            nthr: d(),
            load: d(),
            memtot: d(),
            memuse: d(),
            swapto: d(),
            swapus: d(),
        }
    }

    fn of(host: &HostConfig, load: Option<&HostLoad>) -> Self {
        match load {
            None => HostValues {
                arch: host.arch.clone(),
                ..HostValues::unknown()
            },
            Some(l) => HostValues {
                arch: if l.arch.is_empty() {
                    host.arch.clone()
                } else {
                    l.arch.clone()
                },
                ncpu: l.num_proc.to_string(),
                nsoc: l.m_socket.to_string(),
                ncor: l.m_core.to_string(),
                nthr: l.m_thread.to_string(),
                load: format!("{:.2}", l.load_medium),
                memtot: memory1(l.mem_total),
                memuse: memory1(l.mem_used()),
                swapto: memory1(l.swap_total),
                swapus: memory1(l.swap_used()),
            },
        }
    }
}

fn table_line(name: &str, v: &HostValues, topology: bool) -> String {
    let name: String = name.chars().take(23).collect();
    let arch: String = v.arch.chars().take(13).collect();
    let mut s = format!("{name:<23} {arch:<13}{:>4}", v.ncpu);
    if topology {
        s.push_str(&format!(" {:>4} {:>4} {:>4}", v.nsoc, v.ncor, v.nthr));
    }
    s.push_str(&format!(
        " {:>5} {:>7} {:>7} {:>7} {:>7}",
        v.load, v.memtot, v.memuse, v.swapto, v.swapus
    ));
    s
}

/// Who holds each device of each host, by (host, complex): `id` → `job.task`.
type DeviceHolders = BTreeMap<(String, String), BTreeMap<String, String>>;

fn device_holders(jobs: &[JobRecord]) -> DeviceHolders {
    let mut held = DeviceHolders::new();
    for job in jobs {
        for task in &job.tasks.running {
            for (name, ids) in &task.devices {
                let of = held.entry((task.host.clone(), name.clone())).or_default();
                for id in ids {
                    of.insert(id.clone(), format!("{}.{}", job.id, task.task));
                }
            }
        }
    }
    held
}

/// The host's resources for `-F`, in the order SGE's load report lists them; then, a
/// gridspool extension, each device complex's ids (`rm:gpu=0(7.1) 1`), with the running task
/// that holds each in parentheses.
fn resources(host: &HostConfig, l: &HostLoad, held: &DeviceHolders) -> Vec<(String, String)> {
    let n = f64::from(l.num_proc.max(1));
    let f = |v: f64| format!("{v:.6}");
    let mut r = vec![
        ("hl:load_avg".into(), f(l.load_medium)),
        ("hl:load_short".into(), f(l.load_short)),
        ("hl:load_medium".into(), f(l.load_medium)),
        ("hl:load_long".into(), f(l.load_long)),
        (
            "hl:arch".into(),
            if l.arch.is_empty() {
                host.arch.clone()
            } else {
                l.arch.clone()
            },
        ),
        ("hl:num_proc".into(), f(f64::from(l.num_proc))),
        ("hl:mem_free".into(), memory3(l.mem_free)),
        ("hl:swap_free".into(), memory3(l.swap_free)),
        ("hl:virtual_free".into(), memory3(l.mem_free + l.swap_free)),
        ("hl:mem_total".into(), memory3(l.mem_total)),
        ("hl:swap_total".into(), memory3(l.swap_total)),
        (
            "hl:virtual_total".into(),
            memory3(l.mem_total + l.swap_total),
        ),
        ("hl:mem_used".into(), memory3(l.mem_used())),
        ("hl:swap_used".into(), memory3(l.swap_used())),
        (
            "hl:virtual_used".into(),
            memory3(l.mem_used() + l.swap_used()),
        ),
        ("hl:cpu".into(), f(l.cpu)),
        ("hl:m_topology".into(), l.m_topology.clone()),
        ("hl:m_topology_inuse".into(), l.m_topology.clone()),
        ("hl:m_socket".into(), f(f64::from(l.m_socket))),
        ("hl:m_core".into(), f(f64::from(l.m_core))),
        ("hl:m_thread".into(), f(f64::from(l.m_thread))),
        ("hl:np_load_avg".into(), f(l.load_medium / n)),
        ("hl:np_load_short".into(), f(l.load_short / n)),
        ("hl:np_load_medium".into(), f(l.load_medium / n)),
        ("hl:np_load_long".into(), f(l.load_long / n)),
    ];
    for (k, v) in &host.complex_values {
        r.push((format!("hc:{k}"), v.clone()));
    }
    for (name, ids) in &host.devices {
        let holders = held.get(&(host.name.clone(), name.clone()));
        let shown: Vec<String> = ids
            .iter()
            .map(|id| match holders.and_then(|h| h.get(id)) {
                Some(task) => format!("{id}({task})"),
                None => id.clone(),
            })
            .collect();
        r.push((format!("rm:{name}"), shown.join(" ")));
    }
    r
}

/// SGE's queue type letters: `B`atch, `I`nteractive, `P`arallel (a PE is attached).
fn qtype_string(q: &QueueConfig) -> String {
    let t = q.qtype.to_ascii_uppercase();
    let mut s = String::new();
    if t.contains("BATCH") {
        s.push('B');
    }
    if t.contains("INTERACTIVE") {
        s.push('I');
    }
    if !q.pe_list.is_empty() {
        s.push('P');
    }
    if s.is_empty() {
        s.push('N');
    }
    s
}

/// Slots used on each queue instance (queue, host) by running tasks.
fn used_slots(jobs: &[JobRecord]) -> BTreeMap<(String, String), u32> {
    let mut used = BTreeMap::new();
    for j in jobs {
        for t in &j.tasks.running {
            if t.granted.is_empty() {
                *used.entry((t.queue.clone(), t.host.clone())).or_insert(0) += t.slots;
            }
            for (h, q, s) in &t.granted {
                *used.entry((q.clone(), h.clone())).or_insert(0) += *s;
            }
        }
    }
    used
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Runs `qhost` on gathered input.
pub fn run_with(args: &[String], input: &QhostInput) -> Output {
    let mut out = Output::default();
    // `-json` is gridspool's (not in SGE's `-help`).
    let (json, args) = crate::compat::options::take_flag(args, "-json");
    let args = &args[..];
    let o = match parse(args) {
        Ok(o) => o,
        Err(ParseError::Help) => {
            out.stdout.push_str(&usage());
            return out;
        }
        Err(ParseError::UsageThen(m)) => {
            out.stderr.push_str(&usage());
            out.err(m);
            out.code = 1;
            return out;
        }
        Err(ParseError::Message(m)) => {
            out.err(m);
            out.code = 1;
            return out;
        }
    };
    let config = &input.config;
    if let Some(hosts) = &o.hosts {
        for h in hosts {
            if config.exec_hosts().all(|c| !c.name.eq_ignore_ascii_case(h)) {
                out.stderr.push_str(&usage());
                out.err(format!("error: can't resolve hostname \"{h}\""));
                out.code = 1;
                return out;
            }
        }
    }
    for (name, _) in &o.requests {
        if !known_attribute(config, name) {
            out.err(format!("error: unknown resource \"{name}\""));
            out.code = 1;
            return out;
        }
    }
    let mut hosts: Vec<&HostConfig> = config
        .exec_hosts()
        .filter(|h| {
            o.hosts
                .as_ref()
                .is_none_or(|l| l.iter().any(|n| n.eq_ignore_ascii_case(&h.name)))
        })
        .filter(|h| {
            let l = input.loads.get(&h.name).and_then(|s| s.load.as_ref());
            o.requests.iter().all(|(k, v)| satisfies(h, l, k, v))
        })
        .collect();
    hosts.sort_by(|a, b| a.name.cmp(&b.name));
    // With -l, SGE lists only the hosts that match (no global pseudo host), and nothing at
    // all when none does.
    if !o.requests.is_empty() && hosts.is_empty() {
        return out;
    }
    let show_global = o.requests.is_empty();
    let used = used_slots(&input.jobs);
    let held = device_holders(&input.jobs);
    let job_lines = if o.jobs {
        jobs::by_instance(&input.jobs, &o.users)
    } else {
        Default::default()
    };
    let lines_of = |queue: &str, host: &str| {
        job_lines
            .get(&format!("{queue}@{host}"))
            .map_or(&[][..], Vec::as_slice)
    };
    let topology = !o.no_topology;

    let status = |h: &HostConfig| {
        input.loads.get(&h.name).cloned().unwrap_or(HostStatus {
            load: None,
            known: false,
        })
    };
    let queue_rows = |h: &HostConfig, st: &HostStatus| -> Vec<(String, String, u32, u32, String)> {
        let mut rows = Vec::new();
        for q in &config.queues {
            if !config.queue_hosts(q).iter().any(|qh| qh.name == h.name) {
                continue;
            }
            let q = &config.queue_instance(q, &h.name);
            // SGE's letters in its order (`a C D d u E s`), as `qstat -f` shows them.
            let instance = format!("{}@{}", q.name, h.name);
            let states = &input.instance_states;
            let mut state = String::new();
            for (on, letter) in [
                (!st.known, 'a'),
                (states.calendar_suspended.contains(&instance), 'C'),
                (states.calendar_disabled.contains(&instance), 'D'),
                (states.is_disabled(&instance, q.disabled), 'd'),
                (!st.known, 'u'),
                (states.errors.contains_key(&instance), 'E'),
                (states.suspended.contains(&instance), 's'),
            ] {
                if on {
                    state.push(letter);
                }
            }
            let u = used
                .get(&(q.name.clone(), h.name.clone()))
                .copied()
                .unwrap_or(0);
            rows.push((q.name.clone(), qtype_string(q), u, q.slots, state));
        }
        rows
    };
    let selected = |name: &str| {
        o.resources
            .as_ref()
            .is_some_and(|sel| sel.is_empty() || sel.iter().any(|s| s == name))
    };

    if json {
        let list: Vec<serde_json::Value> = hosts
            .iter()
            .map(|h| {
                let st = status(h);
                let l = st.load.as_ref();
                let queues: Vec<serde_json::Value> = queue_rows(h, &st)
                    .into_iter()
                    .map(|(q, t, u, total, state)| {
                        let mut v = serde_json::json!({"name": q, "type": t, "slots_used": u,
                            "slots_total": total, "state": state});
                        // -j, -u: the instance's jobs, a line per granted slot as in the table.
                        if o.jobs
                            && let Some(obj) = v.as_object_mut()
                        {
                            let lines = lines_of(&q, &h.name).iter().map(|l| l.json()).collect();
                            obj.insert("jobs".into(), serde_json::Value::Array(lines));
                        }
                        v
                    })
                    .collect();
                let mut v = serde_json::json!({
                    "name": h.name,
                    "known": st.known,
                    "arch": l.map(|l| l.arch.clone()).filter(|a| !a.is_empty()).unwrap_or_else(|| h.arch.clone()),
                    "num_proc": l.map(|l| l.num_proc),
                    "sockets": l.map(|l| l.m_socket),
                    "cores": l.map(|l| l.m_core),
                    "threads": l.map(|l| l.m_thread),
                    "load_avg": l.map(|l| l.load_medium),
                    "mem_total": l.map(|l| l.mem_total),
                    "mem_used": l.map(|l| l.mem_used()),
                    "swap_total": l.map(|l| l.swap_total),
                    "swap_used": l.map(|l| l.swap_used()),
                    "queues": queues,
                });
                if let (Some(l), Some(obj)) = (l, v.as_object_mut())
                    && o.resources.is_some()
                {
                    let resources: serde_json::Map<String, serde_json::Value> = resources(h, l, &held)
                        .into_iter()
                        .filter(|(k, _)| selected(k.split_once(':').map_or(k.as_str(), |(_, n)| n)))
                        .map(|(k, v)| (k, serde_json::Value::String(v)))
                        .collect();
                    obj.insert("resources".into(), serde_json::Value::Object(resources));
                }
                v
            })
            .collect();
        out.out(serde_json::json!({ "hosts": list }).to_string());
        return out;
    }
    if o.xml {
        out.out("<?xml version='1.0'?>");
        out.out("<qhost xmlns:xsd=\"http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qhost/qhost.xsd\">");
        let value = |out: &mut Output, n: &str, v: &str| {
            out.out(format!(
                "   <hostvalue name='{n}'>{}</hostvalue>",
                xml_escape(v)
            ));
        };
        let host_values = |out: &mut Output, v: &HostValues| {
            value(out, "arch_string", &v.arch);
            value(out, "num_proc", &v.ncpu);
            if topology {
                value(out, "m_socket", &v.nsoc);
                value(out, "m_core", &v.ncor);
                value(out, "m_thread", &v.nthr);
            }
            value(out, "load_avg", &v.load);
            value(out, "mem_total", &v.memtot);
            value(out, "mem_used", &v.memuse);
            value(out, "swap_total", &v.swapto);
            value(out, "swap_used", &v.swapus);
        };
        if show_global {
            out.out(" <host name='global'>");
            host_values(&mut out, &HostValues::unknown());
            out.out(" </host>");
        }
        for h in &hosts {
            let st = status(h);
            out.out(format!(" <host name='{}'>", xml_escape(&h.name)));
            host_values(&mut out, &HostValues::of(h, st.load.as_ref()));
            if let Some(l) = &st.load {
                for (k, v) in resources(h, l, &held) {
                    let (dom, name) = k.split_once(':').unwrap_or(("hl", &k));
                    if selected(name) {
                        out.out(format!(
                            "   <resourcevalue name='{}' dominance='{dom}'>{}</resourcevalue>",
                            xml_escape(name),
                            xml_escape(&v)
                        ));
                    }
                }
            }
            for (q, t, u, total, state) in queue_rows(h, &st) {
                if o.queues {
                    let q = xml_escape(&q);
                    out.out(format!(" <queue name='{q}'>"));
                    let qv = |out: &mut Output, n: &str, v: &str| {
                        out.out(format!(
                            "   <queuevalue qname='{q}' name='{n}'>{v}</queuevalue>"
                        ));
                    };
                    qv(&mut out, "qtype_string", &t);
                    qv(&mut out, "slots_used", &u.to_string());
                    qv(&mut out, "slots", &total.to_string());
                    qv(&mut out, "slots_resv", "0");
                    qv(&mut out, "state_string", &state);
                    out.out(" </queue>");
                }
                // A queue instance's jobs follow it (SGE's order, with or without -q).
                for line in lines_of(&q, &h.name) {
                    for l in line.xml(xml_escape) {
                        out.out(l);
                    }
                }
            }
            out.out(" </host>");
        }
        out.out("</qhost>");
        return out;
    }

    let header = HostValues {
        arch: "ARCH".into(),
        ncpu: "NCPU".into(),
        nsoc: "NSOC".into(),
        ncor: "NCOR".into(),
        nthr: "NTHR".into(),
        load: "LOAD".into(),
        memtot: "MEMTOT".into(),
        memuse: "MEMUSE".into(),
        swapto: "SWAPTO".into(),
        swapus: "SWAPUS".into(),
    };
    let head = table_line("HOSTNAME", &header, topology);
    out.out(&head);
    out.out("-".repeat(head.len()));
    if show_global {
        out.out(table_line("global", &HostValues::unknown(), topology));
    }
    let mut job_header_done = false;
    for h in &hosts {
        let st = status(h);
        out.out(table_line(
            &h.name,
            &HostValues::of(h, st.load.as_ref()),
            topology,
        ));
        if let (Some(sel), Some(l)) = (&o.resources, &st.load) {
            let mut first = true;
            for (k, v) in resources(h, l, &held) {
                let name = k.split_once(':').map_or(k.as_str(), |(_, n)| n);
                if !selected(name) {
                    continue;
                }
                // With a selection, SGE introduces the first line with a title.
                let prefix = if !sel.is_empty() && first {
                    "    Host Resource(s):      "
                } else {
                    "   "
                };
                first = false;
                out.out(format!("{prefix}{k}={v}"));
            }
        }
        for (q, t, u, total, state) in queue_rows(h, &st) {
            if o.queues {
                out.out(format!(
                    "   {q:<20} {t:<5} {:<14}{state}",
                    format!("0/{u}/{total}")
                ));
            }
            for line in lines_of(&q, &h.name) {
                // Without -q, SGE titles the job columns once, before the first job line
                // of the whole listing.
                if !o.queues && !job_header_done {
                    job_header_done = true;
                    out.out(jobs::HEADER);
                    out.out(format!("   {}", "-".repeat(94)));
                }
                out.out(line.text(o.queues));
            }
        }
    }
    out
}

/// Gathers the input: the configuration, the spool's job listing, this host's load and the other
/// hosts' reports (stale ones, older than `max_unheard`, count as unknown).
pub fn gather(
    env: &super::ClientEnv,
    proc_dir: &std::path::Path,
    now: i64,
) -> Result<QhostInput, String> {
    // What a listing shows of each job is all qhost needs (running tasks, owner, name,
    // priority): the listing index, not 100,000 job files, when `sched_d` keeps it.
    let jobs = env
        .spool
        .scan_job_listing()
        .map_err(|e| format!("error: {e}"))?
        .jobs;
    Ok(QhostInput {
        config: env.config.clone(),
        jobs,
        loads: host_loads(env, proc_dir, now)?,
        instance_states: env.spool.queue_instance_states(),
    })
}

/// What is known of every configured host's load: this host's measured from `proc_dir`,
/// the others' from `sched_d`'s reports (unknown when missing, stale or unreachable).
/// Also `qstat -F`'s source.
pub fn host_loads(
    env: &super::ClientEnv,
    proc_dir: &std::path::Path,
    now: i64,
) -> Result<BTreeMap<String, HostStatus>, String> {
    let mut loads = BTreeMap::new();
    for h in env.config.exec_hosts() {
        let status = if h.name.eq_ignore_ascii_case(&env.host) {
            let load = HostLoad::measure(proc_dir, &h.arch).map_err(|e| format!("error: {e}"))?;
            HostStatus {
                load: Some(load),
                known: true,
            }
        } else {
            match load::read_report(&env.spool.daemon_dir(), &h.name) {
                Some(HostReport {
                    time,
                    reachable,
                    load,
                    ..
                }) if now - time <= MAX_UNHEARD_SECS => HostStatus {
                    known: reachable,
                    load: if reachable { load } else { None },
                },
                _ => HostStatus {
                    load: None,
                    known: false,
                },
            }
        };
        loads.insert(h.name.clone(), status);
    }
    Ok(loads)
}

/// The directory `qhost` and `qstat -F` measure this host from: `/proc`, or
/// `GRIDSPOOL_PROC_DIR` (tests point it at fixed files).
pub fn proc_dir() -> PathBuf {
    std::env::var_os("GRIDSPOOL_PROC_DIR").map_or_else(|| PathBuf::from("/proc"), PathBuf::from)
}

/// The `qhost` binary.
pub fn main(mut args: Vec<String>) -> std::process::ExitCode {
    let spool = super::take_spool_arg(&mut args);
    if args.iter().any(|a| a == "-help") {
        return run_with(&args, &empty_input()).finish();
    }
    let env = match super::load_env(spool) {
        Ok(env) => env,
        Err(out) => return out.finish(),
    };
    match gather(&env, &proc_dir(), crate::time::now()) {
        Ok(input) => run_with(&args, &input).finish(),
        Err(message) => {
            let mut out = Output {
                code: 1,
                ..Output::default()
            };
            out.err(message);
            out.finish()
        }
    }
}

fn empty_input() -> QhostInput {
    QhostInput {
        config: ClusterConfig {
            managers: Vec::new(),
            operators: Vec::new(),
            min_uid: 0,
            min_gid: 0,
            hosts: Vec::new(),
            hostgroups: BTreeMap::new(),
            queues: Vec::new(),
            complexes: Vec::new(),
            parallel_environments: Vec::new(),
            projects: Vec::new(),
            users: Vec::new(),
            access_lists: Vec::new(),
            cluster_access: Default::default(),
            share_tree: None,
            scheduler: Default::default(),
            prolog: None,
            epilog: None,
            mailer: None,
            load_report_time: None,
            max_unheard: None,
            reschedule_unknown: None,
            enable_reschedule_kill: None,
            enable_reschedule_slave: None,
            calendars: Vec::new(),
            resource_quotas: Vec::new(),
        },
        jobs: Vec::new(),
        loads: BTreeMap::new(),
        instance_states: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Issue 12: any words parse or are refused; never a panic.
        #[test]
        fn any_words_parse_or_are_refused(
            words in crate::compat::options::hostile_words(&["-F", "-h", "-help", "-j", "-l", "-ncb", "-q", "-u", "-xml"]),
        ) {
            let _ = parse(&words);
        }
    }
}
