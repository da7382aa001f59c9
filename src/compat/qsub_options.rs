//! The option tables of `qsub` and `qalter`, in SGE 8.1.9's `-help` order.
//!
//! One table per command drives argv, `#$` lines, `-@` files and `sge_request` files
//! (`compat::options::parse`) and `-help`. Options SGE accepts but leaves out of its help
//! (`-clear`, `-dl`, `-R`, `-tc`, `-terse`, `-w`, …) have an empty usage and are not printed.
//! Options marked unsupported print in `-help` exactly as SGE prints them but are refused with a
//! clear message when used (see `tests/compat/DIVERGENCES.md`).

use super::options::{Arity, OptionSpec, help_lines};

/// `qsub`'s options.
pub static QSUB_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-a", Arity::One, "[-a date_time]", "request a start time"),
    OptionSpec::new(
        "-ac",
        Arity::One,
        "[-ac context_list]",
        "add context variable(s)",
    ),
    OptionSpec::new(
        "-Ap",
        Arity::One,
        "[-Ap fname]",
        "add a new parallel environment from file",
    )
    .unsupported(),
    OptionSpec::new(
        "-astnode",
        Arity::One,
        "[-astnode node_shares_list]",
        "add sharetree node(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-at",
        Arity::One,
        "[-at thread_name]",
        "add/start qmaster thread",
    )
    .unsupported(),
    OptionSpec::new(
        "-A",
        Arity::One,
        "[-A account_string]",
        "account string in accounting record",
    ),
    OptionSpec::new(
        "-b",
        Arity::One,
        "[-b y[es]|n[o]]",
        "handle command as binary",
    ),
    OptionSpec::new(
        "-binding",
        Arity::One,
        "[-binding [env|pe|set] exp|lin|str]",
        "binds job to processor cores",
    )
    .unsupported(),
    OptionSpec::new(
        "-c",
        Arity::One,
        "[-c ckpt_selector]",
        "define type of checkpointing for job",
    )
    .unsupported(),
    OptionSpec::new(
        "-cwd",
        Arity::Flag,
        "[-cwd]",
        "use current working directory",
    ),
    OptionSpec::new(
        "-C",
        Arity::One,
        "[-C directive_prefix]",
        "define command prefix for job script",
    ),
    OptionSpec::new(
        "-dc",
        Arity::One,
        "[-dc simple_context_list]",
        "delete context variable(s)",
    ),
    OptionSpec::new(
        "-dul",
        Arity::One,
        "[-dul listname_list]",
        "delete userset list(s) completely",
    )
    .unsupported(),
    OptionSpec::new(
        "-e",
        Arity::One,
        "[-e path_list]",
        "specify standard error stream path(s)",
    ),
    OptionSpec::new("-h", Arity::Flag, "[-h]", "place user hold on job"),
    OptionSpec::new(
        "-hard",
        Arity::Flag,
        "[-hard]",
        "consider following requests \"hard\"",
    ),
    OptionSpec::new(
        "-he",
        Arity::One,
        "[-he  y[es]|n[o]]",
        "enable/disable hard error handling",
    )
    .unsupported(),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-hold_jid",
        Arity::One,
        "[-hold_jid job_identifier_list]",
        "define jobnet interdependencies",
    ),
    OptionSpec::new(
        "-hold_jid_ad",
        Arity::One,
        "[-hold_jid_ad job_identifier_list]",
        "define jobnet array interdependencies",
    ),
    OptionSpec::new(
        "-i",
        Arity::One,
        "[-i file_list]",
        "specify standard input stream file(s)",
    ),
    OptionSpec::new(
        "-j",
        Arity::One,
        "[-j y[es]|n[o]]",
        "merge stdout and stderr stream of job",
    ),
    OptionSpec::new(
        "-js",
        Arity::One,
        "[-js job_share]",
        "share tree or functional job share",
    ),
    OptionSpec::new(
        "-jsv",
        Arity::One,
        "[-jsv jsv_url]",
        "job submission verification script to be used",
    )
    .unsupported(),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_list]",
        "request the given resources",
    ),
    OptionSpec::new(
        "-M",
        Arity::One,
        "[-M mail_list]",
        "notify these e-mail addresses",
    ),
    OptionSpec::new(
        "-m",
        Arity::One,
        "[-m mail_options]",
        "define mail notification events",
    ),
    OptionSpec::new(
        "-masterq",
        Arity::One,
        "[-masterq wc_queue_list]",
        "bind master task to queue(s)",
    ),
    OptionSpec::new(
        "-mattr",
        Arity::One,
        "[-mattr obj_nm attr_nm val obj_id_list]",
        "modify an attribute (or element in a sublist) of an object",
    )
    .unsupported(),
    OptionSpec::new("-N", Arity::One, "[-N name]", "specify job name"),
    OptionSpec::new(
        "-notify",
        Arity::Flag,
        "[-notify]",
        "notify job before killing/suspending it",
    ),
    OptionSpec::new(
        "-now",
        Arity::One,
        "[-now y[es]|n[o]]",
        "start job immediately or not at all",
    ),
    OptionSpec::new(
        "-o",
        Arity::One,
        "[-o path_list]",
        "specify standard output stream path(s)",
    ),
    OptionSpec::new(
        "-ot",
        Arity::One,
        "[-ot tickets]",
        "set job's override tickets",
    )
    .unsupported(),
    OptionSpec::new("-P", Arity::One, "[-P project_name]", "set job's project"),
    OptionSpec::new(
        "-p",
        Arity::One,
        "[-p priority]",
        "define job's relative priority",
    ),
    OptionSpec::new(
        "-pe",
        Arity::Two,
        "[-pe wc_pe_name slot_range]",
        "request slot range for parallel jobs",
    ),
    OptionSpec::new(
        "-q",
        Arity::One,
        "[-q wc_queue_list]",
        "bind job to queue(s)",
    ),
    OptionSpec::new(
        "-r",
        Arity::One,
        "[-r y[es]|n[o]]",
        "define job as (not) restartable",
    ),
    OptionSpec::new(
        "-sc",
        Arity::One,
        "[-sc context_list]",
        "set job context (replaces old context)",
    ),
    OptionSpec::new(
        "-shell",
        Arity::One,
        "[-shell y[es]|n[o]]",
        "start command with or without wrapping <loginshell> -c",
    ),
    OptionSpec::new(
        "-soft",
        Arity::Flag,
        "[-soft]",
        "consider following requests as soft",
    ),
    OptionSpec::new(
        "-srqs",
        Arity::Optional,
        "[-srqs [rqs_list]]",
        "show resource quota set(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-sync",
        Arity::One,
        "[-sync y[es]|n[o]]",
        "wait for job to end and return exit code",
    ),
    OptionSpec::new(
        "-S",
        Arity::One,
        "[-S path_list]",
        "command interpreter to be used",
    ),
    OptionSpec::new(
        "-t",
        Arity::One,
        "[-t task_id_range]",
        "create a job-array with these tasks",
    ),
    OptionSpec::new(
        "-v",
        Arity::One,
        "[-v variable_list]",
        "export these environment variables",
    ),
    OptionSpec::new(
        "-verify",
        Arity::Flag,
        "[-verify]",
        "do not submit, just verify",
    )
    .unsupported(),
    OptionSpec::new(
        "-V",
        Arity::Flag,
        "[-V]",
        "export all environment variables",
    ),
    OptionSpec::new(
        "-wd",
        Arity::One,
        "[-wd working_directory]",
        "use working_directory",
    ),
    OptionSpec::new(
        "-@",
        Arity::One,
        "[-@ file]",
        "read commandline input from file",
    ),
    OptionSpec::new("-clear", Arity::Flag, "", ""),
    OptionSpec::new("-dl", Arity::One, "", ""),
    OptionSpec::new("-R", Arity::One, "", ""),
    OptionSpec::new("-tc", Arity::One, "", ""),
    OptionSpec::new("-terse", Arity::Flag, "", ""),
    OptionSpec::new("-w", Arity::One, "", ""),
    OptionSpec::new("-ckpt", Arity::One, "", "").unsupported(),
    OptionSpec::new("-pty", Arity::One, "", "").unsupported(),
    OptionSpec::new("-ar", Arity::One, "", "").unsupported(),
    OptionSpec::new("-display", Arity::One, "", "").unsupported(),
];

/// `qalter`'s options (`-h` takes a hold list here, `-t` qualifies the job before it).
pub static QALTER_OPTIONS: &[OptionSpec] = &[
    OptionSpec::new("-a", Arity::One, "[-a date_time]", "request a start time"),
    OptionSpec::new(
        "-ac",
        Arity::One,
        "[-ac context_list]",
        "add context variable(s)",
    ),
    OptionSpec::new(
        "-ackpt",
        Arity::One,
        "[-ackpt ckpt_name]",
        "add a checkpointing interface definition",
    )
    .unsupported(),
    OptionSpec::new(
        "-astnode",
        Arity::One,
        "[-astnode node_shares_list]",
        "add sharetree node(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-A",
        Arity::One,
        "[-A account_string]",
        "account string in accounting record",
    ),
    OptionSpec::new(
        "-binding",
        Arity::One,
        "[-binding [env|pe|set] exp|lin|str]",
        "binds job to processor cores",
    )
    .unsupported(),
    OptionSpec::new(
        "-c",
        Arity::One,
        "[-c ckpt_selector]",
        "define type of checkpointing for job",
    )
    .unsupported(),
    OptionSpec::new(
        "-cwd",
        Arity::Flag,
        "[-cwd]",
        "use current working directory",
    ),
    OptionSpec::new(
        "-dc",
        Arity::One,
        "[-dc simple_context_list]",
        "delete context variable(s)",
    ),
    OptionSpec::new(
        "-dul",
        Arity::One,
        "[-dul listname_list]",
        "delete userset list(s) completely",
    )
    .unsupported(),
    OptionSpec::new(
        "-e",
        Arity::One,
        "[-e path_list]",
        "specify standard error stream path(s)",
    ),
    OptionSpec::new(
        "-h",
        Arity::One,
        "[-h hold_list]",
        "list of hold types concerned",
    ),
    OptionSpec::new(
        "-hard",
        Arity::Flag,
        "[-hard]",
        "consider following requests \"hard\"",
    ),
    OptionSpec::new(
        "-he",
        Arity::One,
        "[-he  y[es]|n[o]]",
        "enable/disable hard error handling",
    )
    .unsupported(),
    OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help"),
    OptionSpec::new(
        "-hold_jid",
        Arity::One,
        "[-hold_jid job_identifier_list]",
        "define jobnet interdependencies",
    ),
    OptionSpec::new(
        "-hold_jid_ad",
        Arity::One,
        "[-hold_jid_ad job_identifier_list]",
        "define jobnet array interdependencies",
    ),
    OptionSpec::new(
        "-i",
        Arity::One,
        "[-i file_list]",
        "specify standard input stream file(s)",
    ),
    OptionSpec::new(
        "-j",
        Arity::One,
        "[-j y[es]|n[o]]",
        "merge stdout and stderr stream of job",
    ),
    OptionSpec::new(
        "-js",
        Arity::One,
        "[-js job_share]",
        "share tree or functional job share",
    ),
    OptionSpec::new(
        "-l",
        Arity::One,
        "[-l resource_list]",
        "request the given resources",
    ),
    OptionSpec::new(
        "-M",
        Arity::One,
        "[-M mail_list]",
        "notify these e-mail addresses",
    ),
    OptionSpec::new(
        "-m",
        Arity::One,
        "[-m mail_options]",
        "define mail notification events",
    ),
    OptionSpec::new(
        "-masterq",
        Arity::One,
        "[-masterq wc_queue_list]",
        "bind master task to queue(s)",
    ),
    OptionSpec::new("-N", Arity::One, "[-N name]", "specify job name"),
    OptionSpec::new(
        "-notify",
        Arity::Flag,
        "[-notify]",
        "notify job before killing/suspending it",
    ),
    OptionSpec::new(
        "-o",
        Arity::One,
        "[-o path_list]",
        "specify standard output stream path(s)",
    ),
    OptionSpec::new(
        "-ot",
        Arity::One,
        "[-ot tickets]",
        "set job's override tickets",
    )
    .unsupported(),
    OptionSpec::new("-P", Arity::One, "[-P project_name]", "set job's project"),
    OptionSpec::new(
        "-p",
        Arity::One,
        "[-p priority]",
        "define job's relative priority",
    ),
    OptionSpec::new(
        "-pe",
        Arity::Two,
        "[-pe wc_pe_name slot_range]",
        "request slot range for parallel jobs",
    ),
    OptionSpec::new(
        "-q",
        Arity::One,
        "[-q wc_queue_list]",
        "bind job to queue(s)",
    ),
    OptionSpec::new(
        "-r",
        Arity::One,
        "[-r y[es]|n[o]]",
        "define job as (not) restartable",
    ),
    OptionSpec::new(
        "-sc",
        Arity::One,
        "[-sc context_list]",
        "set job context (replaces old context)",
    ),
    OptionSpec::new(
        "-soft",
        Arity::Flag,
        "[-soft]",
        "consider following requests as soft",
    ),
    OptionSpec::new(
        "-srqs",
        Arity::Optional,
        "[-srqs [rqs_list]]",
        "show resource quota set(s)",
    )
    .unsupported(),
    OptionSpec::new(
        "-S",
        Arity::One,
        "[-S path_list]",
        "command interpreter to be used",
    ),
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "specify a list of users\n(not allowed in combination with job_task_list)",
    ),
    OptionSpec::new(
        "-v",
        Arity::One,
        "[-v variable_list]",
        "export these environment variables",
    ),
    OptionSpec::new(
        "-verify",
        Arity::Flag,
        "[-verify]",
        "do not submit, just verify",
    )
    .unsupported(),
    OptionSpec::new(
        "-V",
        Arity::Flag,
        "[-V]",
        "export all environment variables",
    ),
    OptionSpec::new(
        "-wd",
        Arity::One,
        "[-wd working_directory]",
        "use working_directory",
    ),
    OptionSpec::new("-clear", Arity::Flag, "", ""),
    OptionSpec::new("-dl", Arity::One, "", ""),
    OptionSpec::new("-R", Arity::One, "", ""),
    OptionSpec::new("-tc", Arity::One, "", ""),
    OptionSpec::new("-t", Arity::One, "", ""),
    OptionSpec::new("-w", Arity::One, "", ""),
    OptionSpec::new("-ckpt", Arity::One, "", "").unsupported(),
    OptionSpec::new("-ar", Arity::One, "", "").unsupported(),
];

const QSUB_HELP_TAIL: &str = "   [{command|-} [command_args]]

account_string          account_name
complex_list            complex[,complex,...]
context_list            variable[=value][,variable[=value],...]
ckpt_selector           `n' `s' `m' `x' `r' <interval>
date_time               [[CC]YY]MMDDhhmm[.SS]
job_identifier_list     {job_id|job_name|reg_exp}[,{job_id|job_name|reg_exp},...]
jsv_url                 [script:][username@]path
listname_list           listname[,listname,...]
rqs_list                rqs_name[,rqs_name,...]
mail_address            username[@host]
mail_list               mail_address[,mail_address,...]
mail_options            `e' `b' `a' `n' `s'
node_path               [/]node_name[[/.]node_name...]
node_shares_list        node_path=shares[,node_path=shares,...]
working_directory       path
path_list               [host:]path[,[host:]path,...]
priority                -1023 - 1024
resource_list           resource[=value][,resource[=value],...]
simple_context_list     variable[,variable,...]
slot_range              [n[-m]|[-]m] - n,m > 0
task_id_range           task_id['-'task_id[':'step]]
variable_list           variable[=value][,variable[=value],...]
obj_nm                  \"queue\"|\"exechost\"|\"pe\"|\"ckpt\"|\"hostgroup\"|\"resource_quota\"
attr_nm                 (see man pages)
obj_id_list             objectname [ objectname ...]
wc_cqueue               wildcard expression matching a cluster queue
wc_host                 wildcard expression matching a host
wc_hostgroup            wildcard expression matching a hostgroup
wc_qinstance            wc_cqueue@wc_host
wc_qdomain              wc_cqueue@wc_hostgroup
wc_queue                wc_cqueue|wc_qdomain|wc_qinstance
wc_queue_list           wc_queue[,wc_queue,...]
thread_name             \"scheduler\"|\"jvm\"
exp                     explicit:<socket>,<core>[:...]
lin                     linear[:<amount>[:<socket>,<core>]]
str                     striding:<amount>:<stepsize>[:<socket>,<core>]
";

const QALTER_HELP_TAIL: &str =
    "   job_task_list                            jobids (and taskids) of jobs to be altered

account_string          account_name
complex_list            complex[,complex,...]
context_list            variable[=value][,variable[=value],...]
ckpt_selector           `n' `s' `m' `x' `r' <interval>
date_time               [[CC]YY]MMDDhhmm[.SS]
hold_list               `n' `u' `s' `o' `U' `S' `O'
job_identifier_list     {job_id|job_name|reg_exp}[,{job_id|job_name|reg_exp},...]
listname_list           listname[,listname,...]
rqs_list                rqs_name[,rqs_name,...]
mail_address            username[@host]
mail_list               mail_address[,mail_address,...]
mail_options            `e' `b' `a' `n' `s'
node_path               [/]node_name[[/.]node_name...]
node_shares_list        node_path=shares[,node_path=shares,...]
working_directory       path
path_list               [host:]path[,[host:]path,...]
priority                -1023 - 1024
resource_list           resource[=value][,resource[=value],...]
simple_context_list     variable[,variable,...]
slot_range              [n[-m]|[-]m] - n,m > 0
job_task_list           job_tasks[,job_tasks,...]
job_tasks               [job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]
task_id_range           task_id['-'task_id[':'step]]
user_list               user[,user,...]
variable_list           variable[=value][,variable[=value],...]
wc_cqueue               wildcard expression matching a cluster queue
wc_host                 wildcard expression matching a host
wc_hostgroup            wildcard expression matching a hostgroup
wc_qinstance            wc_cqueue@wc_host
wc_qdomain              wc_cqueue@wc_hostgroup
wc_queue                wc_cqueue|wc_qdomain|wc_qinstance
wc_queue_list           wc_queue[,wc_queue,...]
exp                     explicit:<socket>,<core>[:...]
lin                     linear[:<amount>[:<socket>,<core>]]
str                     striding:<amount>:<stepsize>[:<socket>,<core>]
";

/// The options shown by `-help` (hidden ones have an empty usage).
fn visible(table: &[OptionSpec]) -> Vec<OptionSpec> {
    table
        .iter()
        .filter(|s| !s.usage.is_empty())
        .copied()
        .collect()
}

/// `qsub -help`, byte for byte as SGE 8.1.9 prints it.
pub fn qsub_help() -> String {
    format!(
        "SGE 8.1.9\nusage: qsub [options]\n{}{QSUB_HELP_TAIL}",
        help_lines(&visible(QSUB_OPTIONS), "   ", 41)
    )
}

/// `qalter -help`, byte for byte as SGE 8.1.9 prints it.
pub fn qalter_help() -> String {
    format!(
        "SGE 8.1.9\nusage: qalter [options] job_task_list\n{}{QALTER_HELP_TAIL}",
        help_lines(&visible(QALTER_OPTIONS), "   ", 41)
    )
}
