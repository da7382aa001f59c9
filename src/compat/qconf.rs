//! `qconf`'s show forms: the cluster configuration (`config.yaml`) in SGE 8.1.9's own text
//! formats (queue_conf(5), sge_pe(5), hostgroup(5), user(5), project(5), sched_conf(5),
//! share_tree(5)), as scripts parse them, and qconf's option table.
//!
//! Attributes SGE has and gridspool does not (checkpointing, suspend thresholds…) are
//! shown with the value a fresh SGE 8.1.9 shows, so that a script reading
//! them sees what it would see on an SGE cell with the same configuration.
//!
//! One file over 1,000 lines: the show forms are one mapping between `config.yaml` and SGE's
//! texts, object by object, each short and read in the same way.

use crate::compat::docs::SyntaxItem;
use crate::compat::options::{Arity, OptionSpec};
use crate::config::{ClusterConfig, PeConfig, QueueConfig, ShareTreeNode};
use std::fmt::Write as _;

/// qconf's options, in SGE 8.1.9's `-help` order; those gridspool does not implement yet are
/// listed (so that `-help` matches SGE) and refused with a message.
pub static OPTIONS: &[OptionSpec] = &[
    OptionSpec::new(
        "-aattr",
        Arity::One,
        "[-aattr obj_nm attr_nm val obj_id_list]",
        "add to a list attribute of an object",
    ),
    OptionSpec::new(
        "-Aattr",
        Arity::One,
        "[-Aattr obj_nm fname obj_id_list]",
        "add to a list attribute of an object",
    )
    .unsupported(),
    OptionSpec::new(
        "-acal",
        Arity::One,
        "[-acal calendar_name]",
        "add a new calendar",
    ),
    OptionSpec::new(
        "-Acal",
        Arity::One,
        "[-Acal fname]",
        "add a new calendar from file",
    ),
    OptionSpec::new(
        "-Ackpt",
        Arity::One,
        "[-Ackpt fname]",
        "add a checkpointing interface definition from file",
    )
    .unsupported(),
    OptionSpec::new(
        "-aconf",
        Arity::One,
        "[-aconf host_list]",
        "add configurations",
    ),
    OptionSpec::new(
        "-Aconf",
        Arity::One,
        "[-Aconf file_list]",
        "add configurations from file_list",
    ),
    OptionSpec::new(
        "-ae",
        Arity::Optional,
        "[-ae [exec_server_template]]",
        "add an exec host using a template",
    ),
    OptionSpec::new(
        "-Ae",
        Arity::One,
        "[-Ae fname]",
        "add an exec host from file",
    ),
    OptionSpec::new(
        "-ah",
        Arity::One,
        "[-ah hostname_list]",
        "add an administrative host",
    )
    .unsupported(),
    OptionSpec::new(
        "-ahgrp",
        Arity::One,
        "[-ahgrp group]",
        "add new host group entry",
    ),
    OptionSpec::new(
        "-Ahgrp",
        Arity::One,
        "[-Ahgrp file]",
        "add new host group entry from file",
    ),
    OptionSpec::new(
        "-arqs",
        Arity::Optional,
        "[-arqs [rqs_list]]",
        "add resource quota set(s)",
    ),
    OptionSpec::new(
        "-Arqs",
        Arity::One,
        "[-Arqs fname]",
        "add resource quota set(s) from file",
    ),
    OptionSpec::new(
        "-am",
        Arity::One,
        "[-am user_list]",
        "add user to manager list",
    ),
    OptionSpec::new(
        "-ao",
        Arity::One,
        "[-ao user_list]",
        "add user to operator list",
    ),
    OptionSpec::new(
        "-ap",
        Arity::One,
        "[-ap pe-name]",
        "add a new parallel environment",
    )
    .unsupported(),
    // In SGE 8.1.9's qconf (its -help leaves it out): what -sp prints, as a new PE.
    OptionSpec::new(
        "-Ap",
        Arity::One,
        "[-Ap fname]",
        "add a new parallel environment from file",
    )
    .unlisted(),
    OptionSpec::new("-aprj", Arity::Flag, "[-aprj]", "add project"),
    OptionSpec::new(
        "-Aprj",
        Arity::One,
        "[-Aprj fname]",
        "add project from file",
    ),
    OptionSpec::new(
        "-aq",
        Arity::Optional,
        "[-aq [queue_name]]",
        "add a new cluster queue",
    )
    .unsupported(),
    OptionSpec::new("-Aq", Arity::One, "[-Aq fname]", "add a queue from file"),
    OptionSpec::new(
        "-ar",
        Arity::One,
        "[-ar ar_id]",
        "bind job to advance reservation",
    )
    .unsupported(),
    OptionSpec::new(
        "-as",
        Arity::One,
        "[-as hostname_list]",
        "add a submit host",
    )
    .unsupported(),
    OptionSpec::new(
        "-astree",
        Arity::Flag,
        "[-astree]",
        "create/modify the sharetree",
    ),
    OptionSpec::new(
        "-Astree",
        Arity::One,
        "[-Astree fname]",
        "create/modify the sharetree from file",
    ),
    OptionSpec::new(
        "-au",
        Arity::One,
        "[-au user_list listname_list]",
        "add user(s) to userset list(s)",
    ),
    OptionSpec::new("-Au", Arity::One, "[-Au fname]", "add userset from file"),
    OptionSpec::new("-auser", Arity::Flag, "[-auser]", "add user"),
    OptionSpec::new("-Auser", Arity::One, "[-Auser fname]", "add user from file"),
    OptionSpec::new(
        "-ckpt",
        Arity::One,
        "[-ckpt ckpt-name]",
        "request checkpoint method",
    )
    .unsupported(),
    OptionSpec::new(
        "-clear",
        Arity::Flag,
        "[-clear]",
        "skip previous definitions for job",
    )
    .unsupported(),
    OptionSpec::new(
        "-clearusage",
        Arity::Optional,
        "[-clearusage [user_list]]",
        "clear sharetree usage for user_list or all users/projects",
    )
    .unsupported(),
    OptionSpec::new("-cq", Arity::One, "[-cq wc_queue_list]", "clean queue").unsupported(),
    OptionSpec::new(
        "-dattr",
        Arity::One,
        "[-dattr obj_nm attr_nm val obj_id_list]",
        "delete from a list attribute of an object",
    ),
    OptionSpec::new(
        "-Dattr",
        Arity::One,
        "[-Dattr obj_nm fname obj_id_list]",
        "delete from a list attribute of an object",
    )
    .unsupported(),
    OptionSpec::new(
        "-dcal",
        Arity::One,
        "[-dcal calendar_name]",
        "delete calendar",
    ),
    OptionSpec::new(
        "-dckpt",
        Arity::One,
        "[-dckpt ckpt_name]",
        "delete checkpointing interface definition",
    )
    .unsupported(),
    OptionSpec::new(
        "-dconf",
        Arity::One,
        "[-dconf host_list]",
        "delete local configurations",
    ),
    OptionSpec::new("-de", Arity::One, "[-de host_list]", "delete exec host"),
    OptionSpec::new(
        "-display",
        Arity::One,
        "[-display display]",
        "set DISPLAY variable inside interactive job (not available for qrsh without command)",
    )
    .unsupported(),
    OptionSpec::new(
        "-dh",
        Arity::One,
        "[-dh host_list]",
        "delete administrative host",
    )
    .unsupported(),
    OptionSpec::new(
        "-dhgrp",
        Arity::One,
        "[-dhgrp group]",
        "delete host group entry",
    ),
    OptionSpec::new(
        "-dl",
        Arity::One,
        "[-dl date_time]",
        "request a deadline initiation time",
    )
    .unsupported(),
    OptionSpec::new(
        "-drqs",
        Arity::One,
        "[-drqs rqs_list]",
        "delete resource quota set(s)",
    ),
    OptionSpec::new(
        "-dm",
        Arity::One,
        "[-dm user_list]",
        "delete user from manager list",
    ),
    OptionSpec::new(
        "-do",
        Arity::One,
        "[-do user_list]",
        "delete user from operator list",
    ),
    OptionSpec::new(
        "-dp",
        Arity::One,
        "[-dp pe-name]",
        "delete parallel environment",
    ),
    OptionSpec::new(
        "-dprj",
        Arity::One,
        "[-dprj project_list]",
        "delete project",
    ),
    OptionSpec::new("-dq", Arity::One, "[-dq wc_queue_list]", "delete queue"),
    OptionSpec::new("-ds", Arity::One, "[-ds host_list]", "delete submit host").unsupported(),
    OptionSpec::new(
        "-dstnode",
        Arity::One,
        "[-dstnode node_list]",
        "delete sharetree node(s)",
    )
    .unsupported(),
    OptionSpec::new("-dstree", Arity::Flag, "[-dstree]", "delete the sharetree"),
    OptionSpec::new(
        "-du",
        Arity::One,
        "[-du user_list listname_list]",
        "delete user(s) from userset list(s)",
    ),
    // SGE 8.1.9's -help leaves -dul out; its man page has it.
    OptionSpec::new(
        "-dul",
        Arity::One,
        "[-dul listname_list]",
        "delete userset list(s) completely",
    )
    .unlisted(),
    OptionSpec::new("-duser", Arity::One, "[-duser user_list]", "delete user(s)"),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-ke",
        Arity::One,
        "[-ke[j] host_list",
        "shutdown execution daemon(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-km",
        Arity::Flag,
        "[-k{m|s}]",
        "shutdown master|scheduling thread",
    )
    .unsupported(),
    OptionSpec::new("-kec", Arity::One, "[-kec evid_list]", "kill event client").unsupported(),
    OptionSpec::new(
        "-kt",
        Arity::One,
        "[-kt thread_name]",
        "kill qmaster thread",
    )
    .unsupported(),
    OptionSpec::new(
        "-Mattr",
        Arity::One,
        "[-Mattr obj_nm fname obj_id_list]",
        "modify an attribute (or element in a sublist) of an object",
    )
    .unsupported(),
    // SGE 8.1.9's -help leaves -mattr out; its man page has it.
    OptionSpec::new(
        "-mattr",
        Arity::One,
        "[-mattr obj_nm attr_nm val obj_id_list]",
        "modify an attribute (or element in a sublist) of an object",
    )
    .unlisted(),
    OptionSpec::new("-mc", Arity::Flag, "[-mc ]", "modify complex attributes"),
    OptionSpec::new(
        "-Mc",
        Arity::One,
        "[-Mc fname]",
        "modify complex attributes from file",
    ),
    OptionSpec::new(
        "-mcal",
        Arity::One,
        "[-mcal calendar_name]",
        "modify calendar",
    ),
    OptionSpec::new(
        "-Mcal",
        Arity::One,
        "[-Mcal fname]",
        "modify calendar from file",
    ),
    OptionSpec::new(
        "-mckpt",
        Arity::One,
        "[-mckpt ckpt_name]",
        "modify a checkpointing interface definition",
    )
    .unsupported(),
    OptionSpec::new(
        "-Mckpt",
        Arity::One,
        "[-Mckpt fname]",
        "modify a checkpointing interface definition from file",
    )
    .unsupported(),
    OptionSpec::new(
        "-mconf",
        Arity::Optional,
        "[-mconf [host_list|global]]",
        "modify configurations",
    ),
    OptionSpec::new(
        "-Mconf",
        Arity::One,
        "[-Mconf file_list]",
        "modify configurations from file_list",
    ),
    OptionSpec::new("-me", Arity::One, "[-me server]", "modify exec server"),
    OptionSpec::new(
        "-Me",
        Arity::One,
        "[-Me fname]",
        "modify exec server from file",
    ),
    OptionSpec::new(
        "-mhgrp",
        Arity::One,
        "[-mhgrp group]",
        "modify host group entry",
    ),
    OptionSpec::new(
        "-Mhgrp",
        Arity::One,
        "[-Mhgrp file]",
        "modify host group entry from file",
    ),
    OptionSpec::new(
        "-mrqs",
        Arity::Optional,
        "[-mrqs [rqs_list]]",
        "modify resource quota set(s)",
    ),
    OptionSpec::new(
        "-Mrqs",
        Arity::Optional,
        "[-Mrqs fname [rqs_list]]",
        "modify resource quota set(s) from file",
    ),
    OptionSpec::new(
        "-mp",
        Arity::One,
        "[-mp pe-name]",
        "modify a parallel environment",
    ),
    OptionSpec::new(
        "-Mp",
        Arity::One,
        "[-Mp fname]",
        "modify a parallel environment from file",
    ),
    OptionSpec::new("-mprj", Arity::One, "[-mprj project]", "modify a project"),
    OptionSpec::new(
        "-Mprj",
        Arity::One,
        "[-Mprj fname]",
        "modify project from file",
    ),
    OptionSpec::new("-mq", Arity::One, "[-mq queue]", "modify a queue"),
    OptionSpec::new("-Mq", Arity::One, "[-Mq fname]", "modify a queue from file"),
    OptionSpec::new(
        "-msconf",
        Arity::Flag,
        "[-msconf]",
        "modify scheduler configuration",
    ),
    OptionSpec::new(
        "-Msconf",
        Arity::One,
        "[-Msconf fname]",
        "modify scheduler configuration from file",
    ),
    OptionSpec::new(
        "-mstnode",
        Arity::One,
        "[-mstnode node_shares_list]",
        "modify sharetree node(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-mstree",
        Arity::Flag,
        "[-mstree]",
        "modify/create the sharetree",
    ),
    OptionSpec::new(
        "-Mstree",
        Arity::One,
        "[-Mstree fname]",
        "modify/create the sharetree from file",
    ),
    OptionSpec::new(
        "-mu",
        Arity::One,
        "[-mu listname_list]",
        "modify the given userset list",
    ),
    OptionSpec::new("-Mu", Arity::One, "[-Mu fname]", "modify userset from file"),
    OptionSpec::new("-muser", Arity::One, "[-muser user]", "modify a user"),
    OptionSpec::new(
        "-Muser",
        Arity::One,
        "[-Muser fname]",
        "modify a user from file",
    ),
    OptionSpec::new(
        "-purge",
        Arity::One,
        "[-purge obj_nm3 attr_nm objectname]",
        "deletes attribute from object_instance",
    ),
    OptionSpec::new(
        "-R",
        Arity::Optional,
        "[-R y[es]|n[o]]",
        "reservation desired",
    )
    .unsupported(),
    OptionSpec::new(
        "-rattr",
        Arity::One,
        "[-rattr obj_nm attr_nm val obj_id_list]",
        "replace a list attribute of an object",
    ),
    OptionSpec::new(
        "-Rattr",
        Arity::One,
        "[-Rattr obj_nm fname obj_id_list]",
        "replace a list attribute of an object",
    )
    .unsupported(),
    OptionSpec::new(
        "-rsstnode",
        Arity::One,
        "[-rsstnode node_list]",
        "show sharetree node(s) and its children",
    ),
    OptionSpec::new("-sc", Arity::Flag, "[-sc]", "show complex attributes"),
    OptionSpec::new(
        "-scal",
        Arity::One,
        "[-scal calendar_name]",
        "show given calendar",
    ),
    OptionSpec::new(
        "-scall",
        Arity::Flag,
        "[-scall]",
        "show a list of all calendar names",
    ),
    OptionSpec::new(
        "-sckpt",
        Arity::One,
        "[-sckpt ckpt_name]",
        "show checkpointing interface definition",
    ),
    OptionSpec::new(
        "-sckptl",
        Arity::Flag,
        "[-sckptl]",
        "show all checkpointing interface definitions",
    ),
    OptionSpec::new(
        "-sconf",
        Arity::Optional,
        "[-sconf [host_list|global]]",
        "show configurations",
    ),
    OptionSpec::new(
        "-sconfl",
        Arity::Flag,
        "[-sconfl]",
        "show a list of all local configurations",
    ),
    OptionSpec::new("-sds", Arity::Flag, "[-sds]", "show detached settings").unsupported(),
    OptionSpec::new("-se", Arity::One, "[-se server]", "show given exec server"),
    OptionSpec::new("-secl", Arity::Flag, "[-secl]", "show event client list").unsupported(),
    OptionSpec::new(
        "-sel",
        Arity::Flag,
        "[-sel]",
        "show a list of all exec servers",
    ),
    OptionSpec::new(
        "-sh",
        Arity::Flag,
        "[-sh]",
        "show a list of all administrative hosts",
    ),
    OptionSpec::new("-shgrp", Arity::One, "[-shgrp group]", "show host group"),
    OptionSpec::new(
        "-shgrp_tree",
        Arity::One,
        "[-shgrp_tree group]",
        "show host group and used hostgroups as tree",
    ),
    OptionSpec::new(
        "-shgrp_resolved",
        Arity::One,
        "[-shgrp_resolved group]",
        "show host group with resolved hostlist",
    ),
    OptionSpec::new("-shgrpl", Arity::Flag, "[-shgrpl]", "show host group list"),
    OptionSpec::new("-sm", Arity::Flag, "[-sm]", "show a list of all managers"),
    OptionSpec::new("-so", Arity::Flag, "[-so]", "show a list of all operators"),
    OptionSpec::new(
        "-sobjl",
        Arity::One,
        "[-sobjl obj_nm2 attr_nm val]",
        "show objects which match the given value",
    )
    .unsupported(),
    OptionSpec::new(
        "-sp",
        Arity::One,
        "[-sp pe-name]",
        "show a parallel environment",
    ),
    OptionSpec::new(
        "-spl",
        Arity::Flag,
        "[-spl]",
        "show all parallel environments",
    ),
    OptionSpec::new("-sprj", Arity::One, "[-sprj project]", "show a project"),
    OptionSpec::new(
        "-sprjl",
        Arity::Flag,
        "[-sprjl]",
        "show a list of all projects",
    ),
    OptionSpec::new(
        "-sq",
        Arity::Optional,
        "[-sq [wc_queue_list]]",
        "show the given queue",
    ),
    OptionSpec::new("-sql", Arity::Flag, "[-sql]", "show a list of all queues"),
    OptionSpec::new(
        "-srqsl",
        Arity::Flag,
        "[-srqsl]",
        "show resource quota set list",
    ),
    // In SGE 8.1.9's qconf but not in its -help.
    OptionSpec::new(
        "-srqs",
        Arity::Optional,
        "[-srqs [rqs_list]]",
        "show resource quota set(s)",
    )
    .unlisted(),
    OptionSpec::new(
        "-ss",
        Arity::Flag,
        "[-ss]",
        "show a list of all submit hosts",
    ),
    OptionSpec::new(
        "-ssconf",
        Arity::Flag,
        "[-ssconf]",
        "show scheduler configuration",
    ),
    OptionSpec::new(
        "-sstnode",
        Arity::One,
        "[-sstnode node_list]",
        "show sharetree node(s)",
    ),
    OptionSpec::new("-sst", Arity::Flag, "[-sst]", "show a formatted sharetree"),
    OptionSpec::new("-sstree", Arity::Flag, "[-sstree]", "show the sharetree"),
    OptionSpec::new(
        "-su",
        Arity::One,
        "[-su listname_list]",
        "show the given userset list",
    ),
    OptionSpec::new(
        "-sul",
        Arity::Flag,
        "[-sul]",
        "show a list of all userset lists",
    ),
    OptionSpec::new("-suser", Arity::One, "[-suser user_list]", "show user(s)"),
    OptionSpec::new(
        "-suserl",
        Arity::Flag,
        "[-suserl]",
        "show a list of all users",
    ),
    OptionSpec::new(
        "-tc",
        Arity::One,
        "[-tc max_running_tasks]",
        "throttle the number of concurrent tasks",
    )
    .unsupported(),
    OptionSpec::new(
        "-tsm",
        Arity::Flag,
        "[-tsm]",
        "trigger scheduler monitoring",
    )
    .unsupported(),
    OptionSpec::new(
        "-verbose",
        Arity::Flag,
        "[-verbose]",
        "verbose information output",
    )
    .unsupported(),
    OptionSpec::new(
        "-w",
        Arity::One,
        "[-w e|w|n|v|p]",
        "verify mode (error|warning|none|just verify|poke) for jobs",
    )
    .unsupported(),
];

/// The legend under qconf's `-help`.
pub static SYNTAX: &[SyntaxItem] = &[
    SyntaxItem {
        name: "complex_list",
        definition: "complex[,complex,...]",
    },
    SyntaxItem {
        name: "date_time",
        definition: "[[CC]YY]MMDDhhmm[.SS]",
    },
    SyntaxItem {
        name: "wc_queue_list",
        definition: "wc_queue[,wc_queue,...]",
    },
    SyntaxItem {
        name: "hostname_list",
        definition: "hostname[,hostname,...]",
    },
    SyntaxItem {
        name: "listname_list",
        definition: "listname[,listname,...]",
    },
    SyntaxItem {
        name: "rqs_list",
        definition: "rqs_name[,rqs_name,...]",
    },
    SyntaxItem {
        name: "node_list",
        definition: "node_path[,node_path,...]",
    },
    SyntaxItem {
        name: "node_path",
        definition: "[/]node_name[[/.]node_name...]",
    },
    SyntaxItem {
        name: "node_shares_list",
        definition: "node_path=shares[,node_path=shares,...]",
    },
    SyntaxItem {
        name: "user_list",
        definition: "user[,user,...]",
    },
    SyntaxItem {
        name: "obj_nm",
        definition: "\"queue\"|\"exechost\"|\"pe\"|\"ckpt\"|\"hostgroup\"|\"resource_quota\"",
    },
    SyntaxItem {
        name: "attr_nm",
        definition: "(see man pages)",
    },
    SyntaxItem {
        name: "obj_id_list",
        definition: "objectname [ objectname ...]",
    },
    SyntaxItem {
        name: "project_list",
        definition: "project[,project,...]",
    },
    SyntaxItem {
        name: "evid_list",
        definition: "all | evid[,evid,...]",
    },
    SyntaxItem {
        name: "host_list",
        definition: "all | hostname[,hostname,...]",
    },
    SyntaxItem {
        name: "obj_nm2",
        definition: "\"queue\"|\"queue_domain\"|\"queue_instance\"|\"exechost\"",
    },
    SyntaxItem {
        name: "obj_nm3",
        definition: "\"queue\"",
    },
    SyntaxItem {
        name: "ar_id",
        definition: "advance reservation id",
    },
    SyntaxItem {
        name: "thread_name",
        definition: "\"scheduler\"|\"jvm\"",
    },
    SyntaxItem {
        name: "max_running_tasks",
        definition: "maximum number of simultaneously running tasks",
    },
];

/// `qconf -sq QUEUE`: a cluster queue as queue_conf(5) shows it, with its per-host values
/// (`slots 4,[@big=16],[node01=32]`).
pub fn queue(q: &QueueConfig) -> String {
    if !q.per_host.is_empty() {
        return queue_with_host_values(q);
    }
    let mut rows: Vec<(&str, String)> = vec![
        ("qname", q.name.clone()),
        ("hostlist", words_or_none(&q.hostlist)),
        ("seq_no", q.seq_no.to_string()),
        ("load_thresholds", "NONE".into()),
        ("suspend_thresholds", "NONE".into()),
        ("nsuspend", "1".into()),
        ("suspend_interval", "00:05:00".into()),
        ("priority", q.priority.clone().unwrap_or_else(|| "0".into())),
        ("min_cpu_interval", "00:05:00".into()),
        ("processors", "UNDEFINED".into()),
        ("qtype", q.qtype.to_ascii_uppercase()),
        ("ckpt_list", "NONE".into()),
        ("pe_list", words_or_none(&q.pe_list)),
        ("rerun", if q.rerun { "TRUE" } else { "FALSE" }.into()),
        ("slots", q.slots.to_string()),
        ("tmpdir", q.tmpdir.clone()),
        ("shell", q.shell.clone()),
        ("prolog", q.prolog.clone().unwrap_or_else(|| "NONE".into())),
        ("epilog", q.epilog.clone().unwrap_or_else(|| "NONE".into())),
        ("shell_start_mode", q.shell_start_mode.clone()),
        (
            "starter_method",
            q.starter_method.clone().unwrap_or_else(|| "NONE".into()),
        ),
        ("suspend_method", "NONE".into()),
        ("resume_method", "NONE".into()),
        ("terminate_method", "NONE".into()),
        ("notify", q.notify.clone()),
        ("owner_list", "NONE".into()),
        ("user_lists", words_or_none(&q.user_lists)),
        ("xuser_lists", words_or_none(&q.xuser_lists)),
        ("subordinate_list", "NONE".into()),
        ("complex_values", pairs_or_none(&q.complex_values)),
        ("projects", words_or_none(&q.projects)),
        ("xprojects", words_or_none(&q.xprojects)),
        (
            "calendar",
            q.calendar.clone().unwrap_or_else(|| "NONE".into()),
        ),
        (
            "initial_state",
            if q.disabled { "disabled" } else { "default" }.into(),
        ),
    ];
    for limit in LIMITS {
        let value = q
            .limits
            .get(*limit)
            .cloned()
            .unwrap_or_else(|| "INFINITY".to_string());
        rows.push((limit, value));
    }
    columns(&rows, 22)
}

/// `qconf -scal NAME`: a calendar as calendar_conf(5) shows it (its `year` and `week` as
/// they were written).
pub fn calendar(c: &crate::config::CalendarConfig) -> String {
    columns(
        &[
            ("calendar_name", c.name.clone()),
            ("year", c.year.clone()),
            ("week", c.week.clone()),
        ],
        17,
    )
}

/// A queue's text with the values of each host and host group after its own: each shown
/// as the queue's text with only that host's values applied shows it. Sorted by name, as
/// SGE sorts them (`@` groups first); wrapped as SGE wraps long values.
fn queue_with_host_values(q: &QueueConfig) -> String {
    let split = |text: &str| -> Vec<(String, String)> {
        text.lines()
            .map(|l| match l.split_once(' ') {
                Some((n, v)) => (n.to_string(), v.trim().to_string()),
                None => (l.to_string(), String::new()),
            })
            .collect()
    };
    let Ok(plain) = crate::config::per_host::apply(q, &[]) else {
        return String::new();
    };
    let base = split(&queue(&plain));
    type Shown<'q> = (
        &'q String,
        Vec<(String, String)>,
        &'q serde_json::Map<String, serde_json::Value>,
    );
    let hosts: Vec<Shown> = q
        .per_host
        .iter()
        .filter_map(|(key, over)| {
            let inst = crate::config::per_host::apply(q, &[over]).ok()?;
            Some((key, split(&queue(&inst)), over))
        })
        .collect();
    let mut out = String::new();
    for (i, (name, value)) in base.iter().enumerate() {
        let mut items = vec![value.clone()];
        if !matches!(name.as_str(), "qname" | "hostlist") {
            for (key, rows, over) in &hosts {
                let theirs = rows.get(i).map_or("", |(_, v)| v.as_str());
                if crate::compat::qconf_attrs::host_value_touches(over, name) || theirs != value {
                    items.push(format!("[{key}={theirs}]"));
                }
            }
        }
        let _ = writeln!(out, "{name:<22}{}", wrapped(&items, 22));
    }
    out
}

/// Whether `name` is one of queue_conf(5)'s resource limits.
pub fn is_limit(name: &str) -> bool {
    LIMITS.contains(&name)
}

/// The resource limits of queue_conf(5), in its order.
const LIMITS: &[&str] = &[
    "s_rt", "h_rt", "s_cpu", "h_cpu", "s_fsize", "h_fsize", "s_data", "h_data", "s_stack",
    "h_stack", "s_core", "h_core", "s_rss", "h_rss", "s_vmem", "h_vmem",
];

/// `qconf -sp PE`: a parallel environment as sge_pe(5) shows it.
pub fn pe(p: &PeConfig) -> String {
    let rows: Vec<(&str, String)> = vec![
        ("pe_name", p.name.clone()),
        ("slots", p.slots.to_string()),
        ("user_lists", "NONE".into()),
        ("xuser_lists", "NONE".into()),
        ("start_proc_args", "NONE".into()),
        ("stop_proc_args", "NONE".into()),
        ("allocation_rule", p.allocation_rule.clone()),
        ("control_slaves", bool_word(p.control_slaves).into()),
        ("job_is_first_task", bool_word(p.job_is_first_task).into()),
        ("urgency_slots", p.urgency_slots.clone()),
        ("accounting_summary", "FALSE".into()),
        ("qsort_args", "NONE".into()),
    ];
    columns(&rows, 19)
}

/// `qconf -se HOST`: an execution host as host_conf(5) shows it, with the load values of
/// its last report (`None`: none known, SGE's `NONE`), wrapped as SGE wraps them.
pub fn exechost(
    host: &crate::config::HostConfig,
    load: Option<&crate::acct::load::HostLoad>,
) -> String {
    let mut rows: Vec<(&str, String)> = vec![
        ("hostname", host.name.clone()),
        ("load_scaling", "NONE".into()),
        (
            "complex_values",
            pairs_or_none(&crate::config::ClusterConfig::shown_complex_values(host)),
        ),
    ];
    let (values, processors) = match load {
        Some(l) => {
            let mb = |bytes: f64| format!("{:.6}M", bytes / 1_048_576.0);
            let per = |v: f64| format!("{:.6}", v / f64::from(l.num_proc.max(1)));
            let items = [
                format!("load_avg={:.6}", l.load_medium),
                format!("load_short={:.6}", l.load_short),
                format!("load_medium={:.6}", l.load_medium),
                format!("load_long={:.6}", l.load_long),
                format!("arch={}", l.arch),
                format!("num_proc={}", l.num_proc),
                format!("mem_free={}", mb(l.mem_free)),
                format!("swap_free={}", mb(l.swap_free)),
                format!("virtual_free={}", mb(l.mem_free + l.swap_free)),
                format!("mem_total={}", mb(l.mem_total)),
                format!("swap_total={}", mb(l.swap_total)),
                format!("virtual_total={}", mb(l.mem_total + l.swap_total)),
                format!("mem_used={}", mb(l.mem_used())),
                format!("swap_used={}", mb(l.swap_used())),
                format!("virtual_used={}", mb(l.mem_used() + l.swap_used())),
                format!("cpu={:.6}", l.cpu),
                format!("m_topology={}", l.m_topology),
                format!("m_topology_inuse={}", l.m_topology),
                format!("m_socket={}", l.m_socket),
                format!("m_core={}", l.m_core),
                format!("m_thread={}", l.m_thread),
                format!("np_load_avg={}", per(l.load_medium)),
                format!("np_load_short={}", per(l.load_short)),
                format!("np_load_medium={}", per(l.load_medium)),
                format!("np_load_long={}", per(l.load_long)),
            ];
            (wrapped(&items, 22), l.num_proc.to_string())
        }
        None => ("NONE".to_string(), "0".to_string()),
    };
    rows.push(("load_values", values));
    rows.push(("processors", processors));
    rows.push(("user_lists", words_or_none(&host.user_lists)));
    rows.push(("xuser_lists", words_or_none(&host.xuser_lists)));
    rows.push(("projects", words_or_none(&host.projects)));
    rows.push(("xprojects", words_or_none(&host.xprojects)));
    for name in ["usage_scaling", "report_variables"] {
        rows.push((name, "NONE".into()));
    }
    columns(&rows, 22)
}

/// An execution host's configuration as `-Me` reads it: `-se` without the host's reports
/// (`load_values`, `processors`).
pub fn exechost_conf(host: &crate::config::HostConfig) -> String {
    exechost(host, None)
        .lines()
        .filter(|l| !l.starts_with("load_values") && !l.starts_with("processors"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Comma-separated `items` on lines of at most 80 columns (the first starting at `indent`),
/// each but the last ending in ` \` and the next indented to `indent`, as SGE's flat files
/// wrap long lists.
fn wrapped(items: &[String], indent: usize) -> String {
    let mut out = String::new();
    let mut col = indent;
    for (i, item) in items.iter().enumerate() {
        let last = i + 1 == items.len();
        let width = item.len() + usize::from(!last);
        if col > indent && col + width > 78 {
            out.push_str(" \\\n");
            out.push_str(&" ".repeat(indent));
            col = indent;
        }
        out.push_str(item);
        if !last {
            out.push(',');
        }
        col += width;
    }
    out
}

/// `qconf -sst`: the share tree as SGE's `show_sharetree` prints it, `name=shares`, each
/// level indented three more blanks.
pub fn share_tree_formatted(root: &ShareTreeNode) -> String {
    fn walk(n: &ShareTreeNode, level: usize, out: &mut String) {
        let _ = writeln!(out, "{}{}={}", "   ".repeat(level), n.name, n.shares);
        for c in &n.children {
            walk(c, level + 1, out);
        }
    }
    let mut out = String::new();
    walk(root, 0, &mut out);
    out
}

/// `qconf -shgrp @GROUP`.
pub fn hostgroup(name: &str, members: &[String]) -> String {
    format!("group_name {name}\nhostlist {}\n", words_or_none(members))
}

/// `qconf -suser USER`: a user as user(5) shows it. gridspool keeps no deletion time: SGE's
/// `delete_time` of a user entered by hand is 0.
pub fn user(name: &str, oticket: u32, fshare: u32, default_project: Option<&str>) -> String {
    format!(
        "name {name}\noticket {oticket}\nfshare {fshare}\ndelete_time 0\ndefault_project {}\n",
        default_project.unwrap_or("NONE")
    )
}

/// `qconf -sprj PROJECT`: a project as project(5) shows it.
pub fn project(p: &crate::config::ProjectConfig) -> String {
    format!(
        "name {}\noticket {}\nfshare {}\nacl {}\nxacl {}\n",
        p.name,
        p.oticket,
        p.fshare,
        words_or_none(&p.acl),
        words_or_none(&p.xacl)
    )
}

/// A list of the global configuration as sge_conf(5) shows it: `none` when empty.
fn conf_list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(",")
    }
}

/// `qconf -su LIST`: an access list as access_list(5) shows it.
pub fn access_list(l: &crate::config::AccessList) -> String {
    let entries = if l.entries.is_empty() {
        "NONE".to_string()
    } else {
        l.entries.join(",")
    };
    format!(
        "name    {}\ntype    {}\nfshare  {}\noticket {}\nentries {entries}\n",
        l.name, l.kind, l.fshare, l.oticket
    )
}

/// `qconf -sstree`: the share tree as share_tree(5) shows it. SGE's qmaster numbers the nodes
/// depth first (the root 0, then each child's whole subtree before the next child) and its
/// flat-file writer prints them in that order; a node's `type` is the one it was given,
/// except that a leaf naming a project (one of `projects`) is a project node, 1.
pub fn share_tree(root: &ShareTreeNode, projects: &[crate::config::ProjectConfig]) -> String {
    fn walk(
        node: &ShareTreeNode,
        id: usize,
        projects: &[crate::config::ProjectConfig],
        out: &mut String,
    ) -> usize {
        // The ids of the children: each after the whole subtree of the one before.
        let mut child_ids = Vec::with_capacity(node.children.len());
        let mut next = id + 1;
        for c in &node.children {
            child_ids.push(next.to_string());
            next += subtree_size(c);
        }
        let leaf_project = node.children.is_empty() && projects.iter().any(|p| p.name == node.name);
        let _ = write!(
            out,
            "id={id}\nname={}\ntype={}\nshares={}\nchildnodes={}\n",
            node.name,
            if leaf_project { 1 } else { node.node_type },
            node.shares,
            if child_ids.is_empty() {
                "NONE".to_string()
            } else {
                child_ids.join(",")
            }
        );
        let mut next = id + 1;
        for c in &node.children {
            next = walk(c, next, projects, out);
        }
        next
    }
    fn subtree_size(node: &ShareTreeNode) -> usize {
        1 + node.children.iter().map(subtree_size).sum::<usize>()
    }
    let mut out = String::new();
    walk(root, 0, projects, &mut out);
    out
}

/// The node that `qconf -sstnode PATH` names, with the names of the nodes from the root's
/// child down to it (empty for the root itself), as SGE's `search_named_node_path` finds it:
/// components separated by `/` (the next one must be a child) or `.` (the next one may be
/// any descendant; a path that starts with neither is searched at any depth), `*` matching
/// any name, the first match depth first.
pub fn share_tree_node<'t>(
    root: &'t ShareTreeNode,
    path: &str,
) -> Option<(&'t ShareTreeNode, Vec<&'t str>)> {
    /// `name`: the component `node` must match (`None` at the root, which matches);
    /// `rest`: the path after it; `child_only`: a `/` came before `name`.
    fn search<'t>(
        node: &'t ShareTreeNode,
        name: Option<&str>,
        rest: &str,
        child_only: bool,
        trail: &mut Vec<&'t str>,
        depth: usize,
    ) -> Option<&'t ShareTreeNode> {
        let (name, rest, child_only) = match name {
            Some(n) if n != "*" && n != node.name => {
                if child_only {
                    return None;
                }
                (Some(n), rest, child_only)
            }
            _ => {
                if rest.is_empty() {
                    return name.map(|_| node);
                }
                let (slash, rest) = match rest.as_bytes()[0] {
                    b'/' => (true, &rest[1..]),
                    b'.' => (false, &rest[1..]),
                    _ => (child_only && name.is_some(), rest),
                };
                let end = rest.find(['/', '.']).unwrap_or(rest.len());
                (Some(&rest[..end]), &rest[end..], slash)
            }
        };
        for c in &node.children {
            if depth > 0 {
                trail.push(&node.name);
            }
            if let Some(found) = search(c, name, rest, child_only, trail, depth + 1) {
                return Some(found);
            }
            if depth > 0 {
                trail.pop();
            }
        }
        None
    }
    if path == "/" || path.eq_ignore_ascii_case("Root") {
        return Some((root, Vec::new()));
    }
    let mut trail = Vec::new();
    let node = search(root, None, path, false, &mut trail, 0)?;
    trail.push(&node.name);
    Some((node, trail))
}

/// `qconf -sstnode PATH`: `/a/b=shares` of the node and, after it, of each node of its
/// subtree, each found again by its path (`PATH/child`) as SGE does, onto `out`; SGE's
/// line for a path that names no node onto `err`. Whether `path` named a node.
pub fn share_tree_path(
    root: &ShareTreeNode,
    path: &str,
    out: &mut String,
    err: &mut Vec<String>,
) -> bool {
    let Some((node, trail)) = share_tree_node(root, path) else {
        err.push(format!("Unable to locate {path} in sharetree"));
        return false;
    };
    let at_root = path == "/" || path.eq_ignore_ascii_case("Root");
    for name in &trail {
        out.push('/');
        out.push_str(name);
    }
    if at_root {
        out.push('/');
    }
    let _ = writeln!(out, "={}", node.shares);
    for c in &node.children {
        let child = if at_root {
            format!("/{}", c.name)
        } else {
            format!("{path}/{}", c.name)
        };
        share_tree_path(root, &child, out, err);
    }
    true
}

/// `qconf -ssconf`: the scheduler configuration as sched_conf(5) shows it. gridspool's own
/// policies (`policy`, `preemption`, `armada`, …) are not SGE's and not shown; parameters
/// gridspool does not have show SGE's defaults.
pub fn sched_conf(config: &ClusterConfig) -> String {
    let s = &config.scheduler;
    let usage = ["cpu", "mem", "io"]
        .iter()
        .map(|k| {
            format!(
                "{k}={:.6}",
                s.usage_weight_list.get(*k).copied().unwrap_or(0.0)
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let rows: Vec<(&str, String)> = vec![
        ("algorithm", "default".into()),
        ("schedule_interval", s.schedule_interval.clone()),
        ("maxujobs", s.maxujobs.to_string()),
        ("queue_sort_method", "load".into()),
        ("job_load_adjustments", "np_load_avg=0.50".into()),
        ("load_adjustment_decay_time", "0:7:30".into()),
        ("load_formula", "np_load_avg".into()),
        ("schedd_job_info", s.schedd_job_info.to_string()),
        ("flush_submit_sec", "0".into()),
        ("flush_finish_sec", "0".into()),
        ("params", "none".into()),
        ("reprioritize_interval", "0:0:0".into()),
        ("halftime", number(s.halftime)),
        ("usage_weight_list", usage),
        (
            "compensation_factor",
            format!("{:.6}", s.compensation_factor),
        ),
        ("weight_user", format!("{:.6}", s.weight_user)),
        ("weight_project", format!("{:.6}", s.weight_project)),
        ("weight_department", format!("{:.6}", s.weight_department)),
        ("weight_job", format!("{:.6}", s.weight_job)),
        (
            "weight_tickets_functional",
            number(s.weight_tickets_functional),
        ),
        ("weight_tickets_share", number(s.weight_tickets_share)),
        (
            "share_override_tickets",
            bool_word(s.share_override_tickets).into(),
        ),
        (
            "share_functional_shares",
            bool_word(s.share_functional_shares).into(),
        ),
        (
            "max_functional_jobs_to_schedule",
            s.max_functional_jobs_to_schedule.to_string(),
        ),
        (
            "report_pjob_tickets",
            bool_word(s.report_pjob_tickets).into(),
        ),
        (
            "max_pending_tasks_per_job",
            s.max_pending_tasks_per_job.to_string(),
        ),
        ("halflife_decay_list", "none".into()),
        ("policy_hierarchy", s.policy_hierarchy.clone()),
        ("weight_ticket", format!("{:.6}", s.weight_ticket)),
        (
            "weight_waiting_time",
            format!("{:.6}", s.weight_waiting_time),
        ),
        ("weight_deadline", format!("{:.6}", s.weight_deadline)),
        ("weight_urgency", format!("{:.6}", s.weight_urgency)),
        ("weight_priority", format!("{:.6}", s.weight_priority)),
        ("max_reservation", s.max_reservation.to_string()),
        ("default_duration", s.default_duration.clone()),
    ];
    columns(&rows, 34)
}

/// `qconf -sc`: every complex (SGE's built-in table with the configuration's entries), as
/// complex(5) shows them.
pub fn complexes(config: &ClusterConfig) -> String {
    let mut out = String::from(
        "#name               shortcut   type      relop requestable consumable default  urgency \n",
    );
    out.push_str(&format!("#{}\n", "-".repeat(86)));
    for c in config.complexes() {
        let requestable = match c.requestable {
            crate::config::Requestable::Yes => "YES",
            crate::config::Requestable::No => "NO",
            crate::config::Requestable::Forced => "FORCED",
        };
        let consumable = match c.consumable {
            crate::config::Consumable::Yes => "YES",
            crate::config::Consumable::No => "NO",
            crate::config::Consumable::Job => "JOB",
        };
        let _ = writeln!(
            out,
            "{:<20}{:<11}{:<10}{:<6}{:<12}{:<11}{:<9}{}",
            c.name,
            c.shortcut,
            c.kind.name(),
            c.relop,
            requestable,
            consumable,
            c.default,
            number(c.urgency)
        );
    }
    out.push_str("# >#< starts a comment but comments are not saved across edits --------\n");
    out
}

/// `qconf -sconf [global]`: the global configuration as sge_conf(5) shows it, with
/// gridspool's values where it has them (`mailer`, `min_uid`, `min_gid`,
/// `load_report_time`, `max_unheard`, `reschedule_unknown`, `qmaster_params`, the execution
/// spool under the cell) and a fresh SGE 8.1.9's elsewhere.
pub fn global_conf(config: &ClusterConfig, exec_spool_dir: &str) -> String {
    let hms = |d: std::time::Duration| {
        let s = d.as_secs();
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    };
    let reschedule_unknown = config
        .reschedule_unknown
        .as_deref()
        .map_or(Some(crate::config::DEFAULT_RESCHEDULE_UNKNOWN), |t| {
            crate::time::parse_time(t)
                .filter(|&s| s > 0)
                .map(|s| std::time::Duration::from_secs(s as u64))
        })
        .map_or("00:00:00".to_string(), hms);
    let mut params = Vec::new();
    if config.enable_reschedule_kill.unwrap_or(true) {
        params.push("ENABLE_RESCHEDULE_KILL=1");
    }
    if config.enable_reschedule_slave.unwrap_or(false) {
        params.push("ENABLE_RESCHEDULE_SLAVE=1");
    }
    let rows: Vec<(&str, String)> = vec![
        ("execd_spool_dir", exec_spool_dir.to_string()),
        ("mailer", config.mailer().display().to_string()),
        ("xterm", "/usr/bin/xterm".into()),
        ("load_sensor", "none".into()),
        ("prolog", config.prolog.clone().unwrap_or_else(|| "none".into())),
        ("epilog", config.epilog.clone().unwrap_or_else(|| "none".into())),
        ("shell_start_mode", "posix_compliant".into()),
        ("login_shells", crate::launch::LOGIN_SHELLS.join(",")),
        ("min_uid", config.min_uid.to_string()),
        ("min_gid", config.min_gid.to_string()),
        ("user_lists", conf_list(&config.cluster_access.user_lists)),
        ("xuser_lists", conf_list(&config.cluster_access.xuser_lists)),
        ("projects", conf_list(&config.cluster_access.projects)),
        ("xprojects", conf_list(&config.cluster_access.xprojects)),
        ("enforce_project", "false".into()),
        ("enforce_user", "auto".into()),
        ("load_report_time", hms(config.load_report_interval())),
        ("max_unheard", hms(config.max_unheard())),
        ("reschedule_unknown", reschedule_unknown),
        ("loglevel", "log_warning".into()),
        ("administrator_mail", "root".into()),
        ("set_token_cmd", "none".into()),
        ("pag_cmd", "none".into()),
        ("token_extend_time", "none".into()),
        ("shepherd_cmd", "none".into()),
        (
            "qmaster_params",
            if params.is_empty() {
                "none".to_string()
            } else {
                params.join(",")
            },
        ),
        ("execd_params", "none".into()),
        (
            "reporting_params",
            "accounting=true reporting=false \\\n                             flush_time=00:00:15 joblog=false sharelog=00:00:00".into(),
        ),
        ("finished_jobs", "100".into()),
        ("gid_range", "65400-65500".into()),
        ("qlogin_command", "builtin".into()),
        ("qlogin_daemon", "builtin".into()),
        ("rlogin_command", "builtin".into()),
        ("rlogin_daemon", "builtin".into()),
        ("rsh_command", "builtin".into()),
        ("rsh_daemon", "builtin".into()),
        ("max_aj_instances", "2000".into()),
        ("max_aj_tasks", "75000".into()),
        ("max_u_jobs", "0".into()),
        ("max_jobs", "0".into()),
        ("auto_user_oticket", "0".into()),
        ("auto_user_fshare", "0".into()),
        ("auto_user_default_project", "none".into()),
        ("auto_user_delete_time", "86400".into()),
        ("delegated_file_staging", "false".into()),
        ("reprioritize", "0".into()),
        ("jsv_url", "none".into()),
        ("jsv_allowed_mod", "ac,h,i,e,o,j,M,N,p,w".into()),
    ];
    format!("#global:\n{}\n", columns(&rows, 29))
}

/// `NAME VALUE` lines, the value in column `width`.
fn columns(rows: &[(&str, String)], width: usize) -> String {
    let mut out = String::new();
    for (name, value) in rows {
        let _ = writeln!(out, "{name:<width$}{value}");
    }
    out
}

fn bool_word(b: bool) -> &'static str {
    if b { "TRUE" } else { "FALSE" }
}

/// A whole number as an integer (`168`), else with SGE's six decimals.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.6}")
    }
}

/// Words joined by blanks, or `NONE`.
pub fn words_or_none(words: &[String]) -> String {
    if words.is_empty() {
        "NONE".into()
    } else {
        words.join(" ")
    }
}

/// `name=value,...`, or `NONE`.
pub fn pairs_or_none(pairs: &std::collections::BTreeMap<String, String>) -> String {
    if pairs.is_empty() {
        "NONE".into()
    } else {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}
