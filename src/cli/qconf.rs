//! `qconf`: the cluster configuration shown in SGE 8.1.9's formats (`compat::qconf`) and
//! changed by managers (`qconf_change`), with its messages and exit codes. Options are taken
//! in order, as SGE's qconf takes them; the first error ends the command.

use super::Output;
use crate::compat::docs::{self, CommandDoc, ValueHint};
use crate::compat::qconf;
use crate::config::ClusterConfig;

pub const DOC: CommandDoc = CommandDoc {
    name: "qconf",
    summary: "show and change the gridspool cluster configuration in Grid Engine's formats",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: qconf::OPTIONS,
    operand: None,
    operand_hint: ValueHint::Text,
    syntax: qconf::SYNTAX,
    description: &[
        "-json, a gridspool extension (not listed by -help), prints what a show form (-s...) shows as JSON: a list of names (-sql, -sel, -spl...) as an array of strings; SGE's name value objects (-sq, -sp, -se, -sconf, -ssconf...) as an object of strings (values as the text form prints them, continuation lines joined), or an array of objects when several are shown.",
        "qconf shows the cluster configuration (config.yaml in the cell) in the text formats of SGE 8.1.9: -sq a cluster queue (queue_conf(5)) or, as queue@host, one queue instance; -sp a parallel environment (sge_pe(5)); -shgrp a host group, -shgrp_tree with its subgroups as a tree and -shgrp_resolved as its hosts; -suser and -sprj a user or project entry; -sc the complexes (complex(5)); -sconf the global configuration (sge_conf(5): gridspool's mailer, prolog, epilog, min_uid, min_gid, user_lists, xuser_lists, projects, xprojects, load_report_time, max_unheard, reschedule_unknown and qmaster_params, the cell's execd directory as execd_spool_dir, SGE's defaults elsewhere) or a host's local configuration (its reschedule_unknown), and -sconfl the hosts that have one; -sckptl and -sckpt say, in SGE's words, that there is no checkpointing interface; -ssconf the scheduler configuration (sched_conf(5)); -sstree the share tree (share_tree(5), its nodes numbered depth first as SGE numbers them), -sst as a tree of name=shares lines and -sstnode and -rsstnode the nodes of paths (/project/user, a name found at any depth, * for any name) with their subtrees; -se an execution host (host_conf(5)) with the load values of its last report (this host's measured now), or the global pseudo-host (-se global: its complex_values are the cluster's global consumables; it is never an execution host, and is not in -sel or qhost's host list); -su an access list (access_list(5)); -scal a calendar (calendar_conf(5)) and -scall the list of calendars; -srqs resource quota sets (sge_resource_quota(5)) and -srqsl their names; -sql, -spl, -shgrpl, -sel, -suserl, -sprjl, -sul, -sm and -so the lists of queues, parallel environments, host groups, execution hosts, users, projects, access lists, managers and operators; -sh and -ss the configured hosts (gridspool keeps no administrative or submit host lists: any host that shares the cell may use it). Attributes gridspool does not have show the value of a fresh SGE cell.",
        "Managers change the configuration with the attribute forms -mattr, -aattr, -dattr and -rattr (obj_nm queue, exechost, hostgroup or pe; -aattr and -dattr add and remove elements of a list such as pe_list, hostlist or complex_values; an obj_id queue@host or queue@@group changes the value of that host or host group, queue_conf(5)'s slots 4,[@big=16],[node01=32], and -purge queue attr_nm queue@host, or * for every attribute, removes it), the file forms -Mq, -Aq, -Mp and -Ap (the text -sq and -sp print), the editor forms -mq and -mp ($EDITOR, else vi, on that text), -dq and -dp, -ahgrp, -Ahgrp, -mhgrp, -Mhgrp and -dhgrp for host groups (hostgroup(5)), and -am, -dm, -ao and -do for the manager and operator lists, -Msconf and -msconf for the scheduler configuration (sched_conf(5)), -Mconf and -mconf for the global configuration (sge_conf(5): a file named global, or the editor, gives the whole configuration, what it leaves out of what gridspool keeps going back to gridspool's default; an attribute gridspool does not have takes only the value -sconf shows, and every other value is refused at once with a line naming its attribute) and -Aconf, -aconf, -Mconf, -mconf and -dconf for a host's local configuration (a file named after the host; it holds only reschedule_unknown in gridspool), -Ae, -Me, -ae, -me and -de for execution hosts (host_conf(5): a new host is reached over ssh, or locally if it is this host, a slots=N of its complex_values bounds all its queue instances together, as in SGE; -Me global and -mattr exechost complex_values NAME=N global set the global consumables, and the global host takes nothing else and cannot be deleted), -Auser, -Muser, -auser, -muser, -duser and -Aprj, -Mprj, -aprj, -mprj, -dprj for users and projects, -Astree, -Mstree, -astree and -mstree for the share tree (share_tree(5)) and -dstree to remove it, -Mc and -mc for the complexes (complex(5): what differs from SGE's built-in table is kept; the built-in complexes cannot be removed), -Acal, -Mcal, -acal, -mcal and -dcal for calendars (calendar_conf(5); a calendar a queue names cannot be deleted); -arqs, -Arqs, -mrqs, -Mrqs and -drqs for resource quota sets (sge_resource_quota(5): enforced by the scheduling pass under every policy, shown against running jobs by qquota); operators change access lists with -au and -du (users and @groups into and out of lists, a list made on first use), -Au, -Mu and -mu (a whole list) and -dul (SGE's arusers, deadlineusers and defaultdepartment cannot be removed, nor a list a queue, host, project or the global configuration refers to). Queues' and hosts' user_lists, xuser_lists, projects and xprojects (and projects' acl and xacl) decide whose jobs run where. A queue's priority (queue_conf(5), -20 to 20, per host too) is the nice value its jobs, prologs and epilogs start at, set by the shepherd before it becomes the job's owner. A queue's calendar disables (D) or suspends (C) its instances at the times it says, in the local time zone; sched_d applies it at each change, stopping the jobs of a suspended instance with SIGSTOP and continuing them with SIGCONT when it opens. Attributes gridspool does not have take only the value -sq shows for them, so that -Mq of a -sq output changes nothing and anything else is refused.",
        "A change is written to config.yaml in the cell: only the keys that change are rewritten, the administrator's comments, order and style are kept, and nothing is written unless the new file parses, by sched_d's own rules, to exactly the configuration meant. sched_d reloads it at once. config.yaml stays the configuration's source and may still be edited by hand (then reloaded with SIGHUP). Root, or the administrator who owns config.yaml, writes it directly; for any other manager sched_d writes it (the request says who asks, from the kernel's uid), if the file has not changed since qconf read it, and qconf waits up to 15 s for its answer.",
    ],
    option_details: &[
        (
            "-Mconf",
            "Each file holds one configuration (sge_conf(5), as -sconf prints it) and is named after it: global, or a host's name for its local configuration. The global one is the whole configuration: an attribute gridspool keeps that the file leaves out goes back to gridspool's default. An attribute gridspool does not have takes only the value -sconf shows; any other value, an unknown attribute or a value that does not parse is refused with a line naming the attribute (all of them at once), and nothing is changed. execd_spool_dir is always execd in the cell.",
        ),
        (
            "-mconf",
            "Edits the global configuration (no argument, or global), or a host's local configuration (a host without one gets one, as in SGE), with the rules of -Mconf; left as it was: configuration unchanged, exit 1.",
        ),
        (
            "-Aconf",
            "Adds the local configuration of the host each file is named after (it holds only reschedule_unknown in gridspool); configuration HOST already exists if it has one.",
        ),
        (
            "-dconf",
            "Removes the hosts' local configurations (their reschedule_unknown); the global configuration cannot be removed.",
        ),
        (
            "-se",
            "global is the global pseudo-host: its complex_values are the cluster's global consumables (set with -Me global or -mattr exechost complex_values NAME=N global); it has no load values and no other attribute in gridspool.",
        ),
        (
            "-sckptl",
            "gridspool has no checkpointing interfaces: no ckpt interface definition defined, exit 1, as SGE says of a cell without one.",
        ),
    ],
    value_hints: &[],
    exit_status: &[
        (
            "0",
            "Shown or changed (also -suser of an unknown user, and -dconf of a host without a local configuration or of global, as SGE does).",
        ),
        (
            "1",
            "An unknown or unsupported option, a missing argument, an object that does not exist or an empty list, or a configuration that cannot be read.",
        ),
    ],
    compatibility: &[
        "The options for objects gridspool does not have (checkpointing interfaces: -Ackpt, -dckpt, -mckpt, -Mckpt; administrative and submit hosts) and those not carried out yet (-mstnode, -Mattr and the other file forms of attributes) are refused with a message. The messages of a value that does not parse leave out SGE's line about its temporary file.",
        "-Mconf and -mconf refuse what gridspool cannot hold (an attribute sge_conf(5) does not have, a value that does not parse, a value of an attribute gridspool does not have other than the one -sconf shows, such as execd_spool_dir: the execution spool is always execd in the cell), where SGE 8.1.9 takes any text; a host's local configuration holds only reschedule_unknown, where SGE's may hold any attribute a host may override.",
    ],
    see_also: &["qstat", "qhost", "sched_d"],
};

/// The `qconf` binary.
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    super::admin_main(args, &DOC, run)
}

/// Runs `qconf args` over the cell of `env` (`-help` and an empty command line are
/// [`super::admin_main`]'s).
pub fn run(args: &[String], env: &super::ClientEnv) -> Output {
    // `-json` is gridspool's (not in SGE's `-help`): what the show forms print, as JSON.
    if let (true, rest) = crate::compat::options::take_flag(args, "-json") {
        let mut o = run(&rest, env);
        if o.code == 0 {
            o.stdout = show_as_json(&o.stdout);
        }
        return o;
    }
    let mut o = Output::default();
    let mut words = args.iter().peekable();
    while let Some(word) = words.next() {
        let Some(spec) = qconf::OPTIONS.iter().find(|s| s.name == word.as_str()) else {
            o.err(format!("error: invalid option argument \"{word}\""));
            o.err("Usage: qconf -help");
            o.code = 1;
            return o;
        };
        if spec.support == crate::compat::options::Support::Unsupported && word.contains("ckpt") {
            o.err(format!(
                "qconf: the {word} option is not supported by gridspool: it has no checkpointing interfaces (checkpoint(5))"
            ));
            o.code = 1;
            return o;
        }
        if spec.support == crate::compat::options::Support::Unsupported {
            o.err(format!(
                "qconf: the {word} option is not supported by gridspool yet: edit config.yaml in the cell and send SIGHUP to sched_d"
            ));
            o.code = 1;
            return o;
        }
        if super::qconf_change::handles(word) {
            // The option's words: none (-msconf), one, or for the attribute forms
            // obj_nm attr_nm val and the names up to the next option.
            let wanted = match spec.arity {
                crate::compat::options::Arity::Flag => 0,
                _ if word.ends_with("attr") => 4,
                _ if word == "-au" || word == "-du" => 2,
                _ if word == "-purge" => 3,
                // `-arqs [rqs_list]`, `-mrqs [rqs_list]`: a name list or nothing.
                _ if word == "-arqs" || word == "-mrqs" => 0,
                // `-mconf [host_list|global]`.
                _ if word == "-mconf" => 0,
                _ => 1,
            };
            let mut taken: Vec<String> = Vec::new();
            while taken.len() < wanted {
                match words.next() {
                    Some(w) => taken.push(w.clone()),
                    None => {
                        let last = taken.last().map_or(word.as_str(), String::as_str);
                        o.err(format!("error: no option argument provided to \"{last}\""));
                        o.stderr.push_str(&docs::help_text(&DOC));
                        o.code = 1;
                        return o;
                    }
                }
            }
            if wanted == 4 || matches!(word.as_str(), "-arqs" | "-mrqs" | "-Mrqs" | "-mconf") {
                // The attribute forms' object names; the rule-set names of -arqs, -mrqs and
                // -Mrqs fname [rqs_list].
                while let Some(w) = words.next_if(|w| !w.starts_with('-')) {
                    taken.push(w.clone());
                    if wanted != 4 {
                        break;
                    }
                }
            }
            let (first, more) = match taken.split_first() {
                Some((f, m)) => (f.as_str(), m),
                None => ("", &[][..]),
            };
            if let Err(super::qconf_change::Stop(lines)) =
                super::qconf_change::change(word, first, more, env, &mut o)
            {
                for l in lines {
                    o.err(l);
                }
                o.code = 1;
                return o;
            }
            continue;
        }
        let value = match spec.arity {
            crate::compat::options::Arity::One => match words.next() {
                Some(v) => Some(v.as_str()),
                None => {
                    o.err(format!("error: no option argument provided to \"{word}\""));
                    o.stderr.push_str(&docs::help_text(&DOC));
                    o.code = 1;
                    return o;
                }
            },
            crate::compat::options::Arity::Optional => {
                words.next_if(|w| !w.starts_with('-')).map(String::as_str)
            }
            _ => None,
        };
        if matches!(word.as_str(), "-sstnode" | "-rsstnode") {
            let last = words.peek().is_none();
            if share_tree_nodes(word, value.unwrap_or_default(), last, env, &mut o) {
                o.code = 1;
                return o;
            }
            continue;
        }
        if let Err(message) = show(word, value, env, &mut o) {
            o.err(message);
            o.code = 1;
            return o;
        }
    }
    o
}

/// `qconf -s… -json`: a list of names (one word per line) as a JSON array of strings; SGE's
/// `name value` objects as JSON objects of strings (values as `qconf` prints them, a `\`
/// continuation joined), one object, or an array when several were shown (a name seen again
/// starts the next object).
fn show_as_json(text: &str) -> String {
    use serde_json::{Map, Value};
    let mut lines: Vec<String> = Vec::new();
    for raw in text.lines() {
        match lines.last_mut() {
            Some(prev) if prev.ends_with('\\') => {
                prev.pop();
                prev.push_str(raw.trim_start());
            }
            _ => lines.push(raw.to_string()),
        }
    }
    let lines: Vec<&String> = lines.iter().filter(|l| !l.trim().is_empty()).collect();
    let value = if lines.iter().all(|l| l.split_whitespace().count() <= 1) {
        Value::Array(
            lines
                .iter()
                .map(|l| Value::String(l.trim().to_string()))
                .collect(),
        )
    } else {
        let mut objects: Vec<Map<String, Value>> = vec![Map::new()];
        for l in lines {
            let (k, v) = l
                .trim()
                .split_once(char::is_whitespace)
                .unwrap_or((l.trim(), ""));
            if objects.last().is_some_and(|o| o.contains_key(k)) {
                objects.push(Map::new());
            }
            if let Some(o) = objects.last_mut() {
                o.insert(k.to_string(), Value::String(v.trim().to_string()));
            }
        }
        match objects.len() {
            1 => Value::Object(objects.remove(0)),
            _ => Value::Array(objects.into_iter().map(Value::Object).collect()),
        }
    };
    format!("{value}\n")
}

/// `-sstnode node_list`, `-rsstnode node_list`: each node ([`qconf::share_tree_path`]) with
/// its subtree. Whether qconf stops there with exit status 1, as SGE's does: `-sstnode` when
/// the last path of its list names no node, `-rsstnode` whenever it is the last option (its
/// `found` is never set); neither when there is no share tree ("No sharetree", and on).
fn share_tree_nodes(
    option: &str,
    list: &str,
    last: bool,
    env: &super::ClientEnv,
    o: &mut Output,
) -> bool {
    let Some(tree) = &env.config.share_tree else {
        o.err("No sharetree");
        return false;
    };
    let mut found = true;
    let mut missing = Vec::new();
    for path in list.split([',', ' ']).filter(|p| !p.is_empty()) {
        found = qconf::share_tree_path(tree, path, &mut o.stdout, &mut missing);
        for line in missing.drain(..) {
            o.err(line);
        }
    }
    if option == "-sstnode" { !found } else { last }
}

/// Prints one show form; `Err` is SGE's message for what does not exist.
fn show(
    option: &str,
    value: Option<&str>,
    env: &super::ClientEnv,
    o: &mut Output,
) -> Result<(), String> {
    let config = &env.config;
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let list = |o: &mut Output, names: Vec<String>, empty: &str| {
        if names.is_empty() {
            return Err(empty.to_string());
        }
        for n in sorted(names) {
            o.out(n);
        }
        Ok(())
    };
    let value = value.unwrap_or_default();
    match option {
        "-sel" => list(
            o,
            config.exec_hosts().map(|h| h.name.clone()).collect(),
            "no execution host defined",
        ),
        "-sql" => list(
            o,
            config.queues.iter().map(|q| q.name.clone()).collect(),
            "no cqueue list defined",
        ),
        "-spl" => list(
            o,
            config
                .parallel_environments
                .iter()
                .map(|p| p.name.clone())
                .collect(),
            "no parallel environment defined",
        ),
        "-shgrpl" => list(
            o,
            config.hostgroups.keys().cloned().collect(),
            "no host group list defined",
        ),
        "-sm" => {
            let mut managers = vec!["root".to_string()];
            managers.extend(config.managers.iter().filter(|m| *m != "root").cloned());
            list(o, managers, "no manager defined")
        }
        "-so" => list(o, config.operators.clone(), "no operator defined"),
        "-suserl" => list(
            o,
            config.users.iter().map(|u| u.name.clone()).collect(),
            "no user list defined",
        ),
        "-sprjl" => list(
            o,
            config.projects.iter().map(|p| p.name.clone()).collect(),
            "no project list defined",
        ),
        "-scall" => list(
            o,
            config.calendars.iter().map(|c| c.name.clone()).collect(),
            "no calendar defined",
        ),
        "-scal" => {
            let c = config
                .calendar(value)
                .ok_or_else(|| format!("{value} is not a calendar"))?;
            o.stdout.push_str(&qconf::calendar(c));
            Ok(())
        }
        "-sp" => {
            let p = config
                .parallel_environments
                .iter()
                .find(|p| p.name == value)
                .ok_or_else(|| format!("{value} is not a parallel environment"))?;
            o.stdout.push_str(&qconf::pe(p));
            Ok(())
        }
        "-shgrp" => {
            let members = config
                .hostgroups
                .get(value)
                .ok_or_else(|| format!("Host group \"{value}\" does not exist"))?;
            o.stdout.push_str(&qconf::hostgroup(value, members));
            Ok(())
        }
        "-suser" => {
            for name in value.split(',') {
                match config.users.iter().find(|u| u.name == name) {
                    Some(u) => o.stdout.push_str(&qconf::user(
                        &u.name,
                        u.oticket,
                        u.fshare,
                        u.default_project.as_deref(),
                    )),
                    // SGE says so and exits 0.
                    None => o.err(format!("{name} is not known as a user")),
                }
            }
            Ok(())
        }
        "-sprj" => {
            let p = config
                .projects
                .iter()
                .find(|p| p.name == value)
                .ok_or_else(|| format!("{value} is not known as a project"))?;
            o.stdout.push_str(&qconf::project(p));
            Ok(())
        }
        "-sq" => show_queues(value, config, o),
        "-su" | "-sul" => super::qconf_acl::show(option, value, config, o),
        "-shgrp_tree" => {
            o.stdout
                .push_str(&super::qconf_hostgroup::tree(config, value)?);
            Ok(())
        }
        "-shgrp_resolved" => {
            o.stdout
                .push_str(&super::qconf_hostgroup::resolved(config, value)?);
            Ok(())
        }
        "-srqsl" => list(
            o,
            config
                .resource_quotas
                .iter()
                .map(|r| r.name.clone())
                .collect(),
            "no resource quota set list defined",
        ),
        "-srqs" => {
            // The sets named (all when none is), in the configuration's order; names that
            // do not exist are passed over, as SGE does while one exists.
            let wanted: Vec<&str> = value.split(',').filter(|n| !n.is_empty()).collect();
            let shown: Vec<_> = config
                .resource_quotas
                .iter()
                .filter(|r| wanted.is_empty() || wanted.contains(&r.name.as_str()))
                .collect();
            if shown.is_empty() {
                return Err("No resource quota set found".to_string());
            }
            for r in shown {
                o.stdout
                    .push_str(&crate::config::resource_quotas::set_text(r));
            }
            Ok(())
        }
        "-sconf" | "-sconfl" => super::qconf_conf::show(option, value, env, o),
        // gridspool has no checkpointing interfaces (docs/sge-objects.md): SGE's words for
        // none.
        "-sckptl" => Err("no ckpt interface definition defined".to_string()),
        "-sckpt" => Err(format!(
            "{value} is not a checkpointing interface definition"
        )),
        "-sc" => {
            o.stdout.push_str(&qconf::complexes(config));
            Ok(())
        }
        // The global pseudo-host always exists, as in SGE, and reports no load.
        "-se" if value == crate::config::GLOBAL_HOST => {
            o.stdout.push_str(&qconf::exechost(
                &crate::config::ClusterConfig::global_host_or_blank(config),
                None,
            ));
            Ok(())
        }
        "-se" => {
            let host = config
                .host(value)
                .ok_or_else(|| format!("can't resolve hostname \"{value}\""))?;
            let loads =
                super::qhost::host_loads(env, std::path::Path::new("/proc"), crate::time::now())?;
            let load = loads
                .get(&host.name)
                .filter(|s| s.known)
                .and_then(|s| s.load.as_ref());
            o.stdout.push_str(&qconf::exechost(host, load));
            Ok(())
        }
        // gridspool keeps no host lists of its own: any host that shares the cell may
        // administer it and submit to it; these are the configured hosts.
        "-sh" | "-ss" => list(
            o,
            config.exec_hosts().map(|h| h.name.clone()).collect(),
            if option == "-sh" {
                "no administrative host defined"
            } else {
                "no submit host defined"
            },
        ),
        "-sst" => {
            match &config.share_tree {
                Some(tree) => o.stdout.push_str(&qconf::share_tree_formatted(tree)),
                // SGE says so on stderr and goes on, exit 0.
                None => o.err("No sharetree"),
            }
            Ok(())
        }
        "-ssconf" => {
            o.stdout.push_str(&qconf::sched_conf(config));
            Ok(())
        }
        "-sstree" => {
            let tree = config
                .share_tree
                .as_ref()
                .ok_or_else(|| "no sharetree element".to_string())?;
            o.stdout
                .push_str(&qconf::share_tree(tree, &config.projects));
            Ok(())
        }
        other => Err(format!("qconf: {other} is not implemented")),
    }
}

/// `-sq [wc_queue_list]`: every cluster queue, or the named ones (`queue`, `queue@host`).
fn show_queues(list: &str, config: &ClusterConfig, o: &mut Output) -> Result<(), String> {
    let names: Vec<&str> = if list.is_empty() {
        config.queues.iter().map(|q| q.name.as_str()).collect()
    } else {
        list.split(',').collect()
    };
    for (i, phrase) in names.iter().enumerate() {
        let (queue, host) = match phrase.split_once('@') {
            Some((q, h)) => (q, Some(h)),
            None => (*phrase, None),
        };
        let no_match =
            || format!("No cluster queue or queue instance matches the phrase \"{phrase}\"");
        let q = config
            .queues
            .iter()
            .find(|q| q.name == queue)
            .ok_or_else(no_match)?;
        if i > 0 {
            o.out("");
        }
        match host {
            None => o.stdout.push_str(&qconf::queue(q)),
            Some(h) => {
                if !config.queue_hosts(q).iter().any(|c| c.name == h) {
                    return Err(no_match());
                }
                // Its values on that host.
                let text = qconf::queue(&config.queue_instance(q, h));
                // A queue instance: its host instead of the host list (and SGE 8.1.9 ends
                // an instance's qtype with a space).
                for line in text.lines() {
                    if line.starts_with("hostlist ") {
                        o.out(format!("{:<22}{h}", "hostname"));
                    } else if line.starts_with("qtype ") {
                        o.out(format!("{line} "));
                    } else {
                        o.out(line);
                    }
                }
            }
        }
    }
    Ok(())
}
