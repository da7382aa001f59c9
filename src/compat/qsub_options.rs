//! The option tables of `qsub` and `qalter`, in SGE 8.1.9's `-help` order.
//!
//! One table per command drives argv, `#$` lines, `-@` files and `sge_request` files
//! (`compat::options::parse`) and `-help`. Options SGE accepts but leaves out of its help
//! (`-clear`, `-dl`, `-R`, `-tc`, `-terse`, `-w`, …) have an empty usage and are not printed.
//! Options marked unsupported print in `-help` exactly as SGE prints them but are refused with a
//! clear message when used (see `tests/compat/DIVERGENCES.md`).

use super::docs::{CommandDoc, SyntaxItem, ValueHint, help_text};
use super::options::{Arity, OptionSpec};
use super::syntax;

/// `-cluster`, unlisted in both `qsub -help` and `qalter -help`.
const CLUSTER: OptionSpec = OptionSpec::new(
    "-cluster",
    Arity::One,
    "[-cluster cluster_path]",
    "Qube! cluster of the job (/, /A/B)",
)
.unlisted();

/// `-no_preempt`, unlisted in both `qsub -help` and `qalter -help`.
const NO_PREEMPT: OptionSpec = OptionSpec::new(
    "-no_preempt",
    Arity::One,
    "[-no_preempt y[es]|n[o]]",
    "never preempt the job",
)
.unlisted();

/// `-clear`, unlisted in both `qsub -help` and `qalter -help`.
const CLEAR: OptionSpec = OptionSpec::new(
    "-clear",
    Arity::Flag,
    "[-clear]",
    "skip previous definitions for job",
)
.unlisted();

/// `-dl`, unlisted in both `qsub -help` and `qalter -help`.
const DEADLINE: OptionSpec = OptionSpec::new(
    "-dl",
    Arity::One,
    "[-dl date_time]",
    "request a deadline initiation time",
)
.unlisted();

/// `-R`, unlisted in both `qsub -help` and `qalter -help`.
const RESERVE: OptionSpec =
    OptionSpec::new("-R", Arity::One, "[-R y[es]|n[o]]", "reservation desired").unlisted();

/// `-tc`, unlisted in both `qsub -help` and `qalter -help`.
const TASK_CONCURRENCY: OptionSpec = OptionSpec::new(
    "-tc",
    Arity::One,
    "[-tc max_running_tasks]",
    "throttle the number of concurrent tasks",
)
.unlisted();

/// `-w`, unlisted in both `qsub -help` and `qalter -help`.
const VERIFY: OptionSpec = OptionSpec::new(
    "-w",
    Arity::One,
    "[-w e|w|n|v|p]",
    "verify mode (error|warning|none|just verify|poke) for jobs",
)
.unlisted();

/// `-ckpt`, unlisted in both `qsub -help` and `qalter -help`.
const CHECKPOINT: OptionSpec = OptionSpec::new(
    "-ckpt",
    Arity::One,
    "[-ckpt ckpt-name]",
    "request checkpoint method",
)
.unsupported()
.unlisted();

/// `-ar`, unlisted in both `qsub -help` and `qalter -help`.
const ADVANCE_RESERVATION: OptionSpec = OptionSpec::new(
    "-ar",
    Arity::One,
    "[-ar ar_id]",
    "bind job to advance reservation",
)
.unlisted();

/// `qalter -ar`: moving a job between reservations is not supported.
const ADVANCE_RESERVATION_ALTER: OptionSpec = ADVANCE_RESERVATION.unsupported();

// Options that qsub and qalter print alike in `-help`.
const START_TIME: OptionSpec =
    OptionSpec::new("-a", Arity::One, "[-a date_time]", "request a start time");
const ADD_CONTEXT: OptionSpec = OptionSpec::new(
    "-ac",
    Arity::One,
    "[-ac context_list]",
    "add context variable(s)",
);
const ADD_SHARETREE_NODE: OptionSpec = OptionSpec::new(
    "-astnode",
    Arity::One,
    "[-astnode node_shares_list]",
    "add sharetree node(s)",
)
.unsupported();
const ACCOUNT: OptionSpec = OptionSpec::new(
    "-A",
    Arity::One,
    "[-A account_string]",
    "account string in accounting record",
);
const BINDING: OptionSpec = OptionSpec::new(
    "-binding",
    Arity::One,
    "[-binding [env|pe|set] exp|lin|str]",
    "binds job to processor cores",
)
.unsupported();
const CHECKPOINT_SELECTOR: OptionSpec = OptionSpec::new(
    "-c",
    Arity::One,
    "[-c ckpt_selector]",
    "define type of checkpointing for job",
)
.unsupported();
const CWD: OptionSpec = OptionSpec::new(
    "-cwd",
    Arity::Flag,
    "[-cwd]",
    "use current working directory",
);
const DELETE_CONTEXT: OptionSpec = OptionSpec::new(
    "-dc",
    Arity::One,
    "[-dc simple_context_list]",
    "delete context variable(s)",
);
const DELETE_USERSET_LIST: OptionSpec = OptionSpec::new(
    "-dul",
    Arity::One,
    "[-dul listname_list]",
    "delete userset list(s) completely",
)
.unsupported();
const STDERR_PATH: OptionSpec = OptionSpec::new(
    "-e",
    Arity::One,
    "[-e path_list]",
    "specify standard error stream path(s)",
);
const HARD: OptionSpec = OptionSpec::new(
    "-hard",
    Arity::Flag,
    "[-hard]",
    "consider following requests \"hard\"",
);
const HARD_ERROR: OptionSpec = OptionSpec::new(
    "-he",
    Arity::One,
    "[-he  y[es]|n[o]]",
    "enable/disable hard error handling",
)
.unsupported();
const HELP: OptionSpec = OptionSpec::new("-help", Arity::Flag, "[-help]", "print this help");
const HOLD_JID: OptionSpec = OptionSpec::new(
    "-hold_jid",
    Arity::One,
    "[-hold_jid job_identifier_list]",
    "define jobnet interdependencies",
);
const HOLD_JID_AD: OptionSpec = OptionSpec::new(
    "-hold_jid_ad",
    Arity::One,
    "[-hold_jid_ad job_identifier_list]",
    "define jobnet array interdependencies",
);
const STDIN_PATH: OptionSpec = OptionSpec::new(
    "-i",
    Arity::One,
    "[-i file_list]",
    "specify standard input stream file(s)",
);
const JOIN: OptionSpec = OptionSpec::new(
    "-j",
    Arity::One,
    "[-j y[es]|n[o]]",
    "merge stdout and stderr stream of job",
);
const JOB_SHARE: OptionSpec = OptionSpec::new(
    "-js",
    Arity::One,
    "[-js job_share]",
    "share tree or functional job share",
);
const RESOURCES: OptionSpec = OptionSpec::new(
    "-l",
    Arity::One,
    "[-l resource_list]",
    "request the given resources",
);
const MAIL_LIST: OptionSpec = OptionSpec::new(
    "-M",
    Arity::One,
    "[-M mail_list]",
    "notify these e-mail addresses",
);
const MAIL_OPTIONS: OptionSpec = OptionSpec::new(
    "-m",
    Arity::One,
    "[-m mail_options]",
    "define mail notification events",
);
const MASTER_QUEUE: OptionSpec = OptionSpec::new(
    "-masterq",
    Arity::One,
    "[-masterq wc_queue_list]",
    "bind master task to queue(s)",
);
const NAME: OptionSpec = OptionSpec::new("-N", Arity::One, "[-N name]", "specify job name");
const NOTIFY: OptionSpec = OptionSpec::new(
    "-notify",
    Arity::Flag,
    "[-notify]",
    "notify job before killing/suspending it",
);
const STDOUT_PATH: OptionSpec = OptionSpec::new(
    "-o",
    Arity::One,
    "[-o path_list]",
    "specify standard output stream path(s)",
);
const OVERRIDE_TICKETS: OptionSpec = OptionSpec::new(
    "-ot",
    Arity::One,
    "[-ot tickets]",
    "set job's override tickets",
)
.unsupported();
const PROJECT: OptionSpec =
    OptionSpec::new("-P", Arity::One, "[-P project_name]", "set job's project");
const PRIORITY: OptionSpec = OptionSpec::new(
    "-p",
    Arity::One,
    "[-p priority]",
    "define job's relative priority",
);
const PARALLEL_ENVIRONMENT: OptionSpec = OptionSpec::new(
    "-pe",
    Arity::Two,
    "[-pe wc_pe_name slot_range]",
    "request slot range for parallel jobs",
);
const QUEUE: OptionSpec = OptionSpec::new(
    "-q",
    Arity::One,
    "[-q wc_queue_list]",
    "bind job to queue(s)",
);
const RERUN: OptionSpec = OptionSpec::new(
    "-r",
    Arity::One,
    "[-r y[es]|n[o]]",
    "define job as (not) restartable",
);
const SET_CONTEXT: OptionSpec = OptionSpec::new(
    "-sc",
    Arity::One,
    "[-sc context_list]",
    "set job context (replaces old context)",
);
const SOFT: OptionSpec = OptionSpec::new(
    "-soft",
    Arity::Flag,
    "[-soft]",
    "consider following requests as soft",
);
const SHOW_RQS: OptionSpec = OptionSpec::new(
    "-srqs",
    Arity::Optional,
    "[-srqs [rqs_list]]",
    "show resource quota set(s)",
)
.unsupported();
const SHELL: OptionSpec = OptionSpec::new(
    "-S",
    Arity::One,
    "[-S path_list]",
    "command interpreter to be used",
);
const VARIABLES: OptionSpec = OptionSpec::new(
    "-v",
    Arity::One,
    "[-v variable_list]",
    "export these environment variables",
);
const VERIFY_ONLY: OptionSpec = OptionSpec::new(
    "-verify",
    Arity::Flag,
    "[-verify]",
    "do not submit, just verify",
)
.unsupported();
const EXPORT_ENVIRONMENT: OptionSpec = OptionSpec::new(
    "-V",
    Arity::Flag,
    "[-V]",
    "export all environment variables",
);
const WORKING_DIRECTORY: OptionSpec = OptionSpec::new(
    "-wd",
    Arity::One,
    "[-wd working_directory]",
    "use working_directory",
);

/// `qsub`'s options.
pub static QSUB_OPTIONS: &[OptionSpec] = &[
    START_TIME,
    ADD_CONTEXT,
    OptionSpec::new(
        "-Ap",
        Arity::One,
        "[-Ap fname]",
        "add a new parallel environment from file",
    )
    .unsupported(),
    ADD_SHARETREE_NODE,
    OptionSpec::new(
        "-at",
        Arity::One,
        "[-at thread_name]",
        "add/start qmaster thread",
    )
    .unsupported(),
    ACCOUNT,
    OptionSpec::new(
        "-b",
        Arity::One,
        "[-b y[es]|n[o]]",
        "handle command as binary",
    ),
    BINDING,
    CHECKPOINT_SELECTOR,
    CWD,
    OptionSpec::new(
        "-C",
        Arity::One,
        "[-C directive_prefix]",
        "define command prefix for job script",
    ),
    DELETE_CONTEXT,
    DELETE_USERSET_LIST,
    STDERR_PATH,
    OptionSpec::new("-h", Arity::Flag, "[-h]", "place user hold on job"),
    HARD,
    HARD_ERROR,
    HELP,
    HOLD_JID,
    HOLD_JID_AD,
    STDIN_PATH,
    JOIN,
    JOB_SHARE,
    OptionSpec::new(
        "-jsv",
        Arity::One,
        "[-jsv jsv_url]",
        "job submission verification script to be used",
    )
    .unsupported(),
    RESOURCES,
    MAIL_LIST,
    MAIL_OPTIONS,
    MASTER_QUEUE,
    OptionSpec::new(
        "-mattr",
        Arity::One,
        "[-mattr obj_nm attr_nm val obj_id_list]",
        "modify an attribute (or element in a sublist) of an object",
    )
    .unsupported(),
    NAME,
    NOTIFY,
    OptionSpec::new(
        "-now",
        Arity::One,
        "[-now y[es]|n[o]]",
        "start job immediately or not at all",
    ),
    STDOUT_PATH,
    OVERRIDE_TICKETS,
    PROJECT,
    PRIORITY,
    PARALLEL_ENVIRONMENT,
    QUEUE,
    RERUN,
    SET_CONTEXT,
    OptionSpec::new(
        "-shell",
        Arity::One,
        "[-shell y[es]|n[o]]",
        "start command with or without wrapping <loginshell> -c",
    ),
    SOFT,
    SHOW_RQS,
    OptionSpec::new(
        "-sync",
        Arity::One,
        "[-sync y[es]|n[o]]",
        "wait for job to end and return exit code",
    ),
    SHELL,
    OptionSpec::new(
        "-t",
        Arity::One,
        "[-t task_id_range]",
        "create a job-array with these tasks",
    ),
    VARIABLES,
    VERIFY_ONLY,
    EXPORT_ENVIRONMENT,
    WORKING_DIRECTORY,
    OptionSpec::new(
        "-@",
        Arity::One,
        "[-@ file]",
        "read commandline input from file",
    ),
    CLUSTER,
    NO_PREEMPT,
    CLEAR,
    DEADLINE,
    RESERVE,
    TASK_CONCURRENCY,
    OptionSpec::new(
        "-terse",
        Arity::Flag,
        "[-terse]",
        "tersed output, print only the job-id",
    )
    .unlisted(),
    VERIFY,
    CHECKPOINT,
    OptionSpec::new(
        "-pty",
        Arity::One,
        "[-pty y[es]|n[o]]",
        "start job in a pty",
    )
    .unsupported()
    .unlisted(),
    ADVANCE_RESERVATION,
    OptionSpec::new(
        "-display",
        Arity::One,
        "[-display display]",
        "set display to display interactive job",
    )
    .unsupported()
    .unlisted(),
];

/// `qalter`'s options (`-h` takes a hold list here, `-t` qualifies the job before it).
pub static QALTER_OPTIONS: &[OptionSpec] = &[
    START_TIME,
    ADD_CONTEXT,
    OptionSpec::new(
        "-ackpt",
        Arity::One,
        "[-ackpt ckpt_name]",
        "add a checkpointing interface definition",
    )
    .unsupported(),
    ADD_SHARETREE_NODE,
    ACCOUNT,
    BINDING,
    CHECKPOINT_SELECTOR,
    CWD,
    DELETE_CONTEXT,
    DELETE_USERSET_LIST,
    STDERR_PATH,
    OptionSpec::new(
        "-h",
        Arity::One,
        "[-h hold_list]",
        "list of hold types concerned",
    ),
    HARD,
    HARD_ERROR,
    HELP,
    HOLD_JID,
    HOLD_JID_AD,
    STDIN_PATH,
    JOIN,
    JOB_SHARE,
    RESOURCES,
    MAIL_LIST,
    MAIL_OPTIONS,
    MASTER_QUEUE,
    NAME,
    NOTIFY,
    STDOUT_PATH,
    OVERRIDE_TICKETS,
    PROJECT,
    PRIORITY,
    PARALLEL_ENVIRONMENT,
    QUEUE,
    RERUN,
    SET_CONTEXT,
    SOFT,
    SHOW_RQS,
    SHELL,
    OptionSpec::new(
        "-u",
        Arity::One,
        "[-u user_list]",
        "specify a list of users\n(not allowed in combination with job_task_list)",
    ),
    VARIABLES,
    VERIFY_ONLY,
    EXPORT_ENVIRONMENT,
    WORKING_DIRECTORY,
    OptionSpec::new(
        "-shove",
        Arity::Flag,
        "[-shove]",
        "re-evaluate the jobs now (operators)",
    )
    .unlisted(),
    CLUSTER,
    NO_PREEMPT,
    CLEAR,
    DEADLINE,
    RESERVE,
    TASK_CONCURRENCY,
    OptionSpec::new(
        "-t",
        Arity::One,
        "[-t task_id_range]",
        "the tasks of an array job the other options apply to",
    )
    .unlisted(),
    VERIFY,
    CHECKPOINT,
    ADVANCE_RESERVATION_ALTER,
];

pub static QSUB_SYNTAX: &[SyntaxItem] = &[
    syntax::ACCOUNT_STRING,
    syntax::COMPLEX_LIST,
    syntax::CONTEXT_LIST,
    syntax::CKPT_SELECTOR,
    syntax::DATE_TIME,
    syntax::JOB_IDENTIFIER_LIST,
    syntax::JSV_URL,
    syntax::LISTNAME_LIST,
    syntax::RQS_LIST,
    syntax::MAIL_ADDRESS,
    syntax::MAIL_LIST,
    syntax::MAIL_OPTIONS,
    syntax::NODE_PATH,
    syntax::NODE_SHARES_LIST,
    syntax::WORKING_DIRECTORY,
    syntax::PATH_LIST,
    syntax::PRIORITY,
    syntax::RESOURCE_LIST,
    syntax::SIMPLE_CONTEXT_LIST,
    syntax::SLOT_RANGE,
    syntax::TASK_ID_RANGE,
    syntax::VARIABLE_LIST,
    syntax::OBJ_NM,
    syntax::ATTR_NM,
    syntax::OBJ_ID_LIST,
    syntax::WC_CQUEUE,
    syntax::WC_HOST,
    syntax::WC_HOSTGROUP,
    syntax::WC_QINSTANCE,
    syntax::WC_QDOMAIN,
    syntax::WC_QUEUE,
    syntax::WC_QUEUE_LIST,
    syntax::THREAD_NAME,
    syntax::EXP,
    syntax::LIN,
    syntax::STR,
];

pub static QALTER_SYNTAX: &[SyntaxItem] = &[
    syntax::ACCOUNT_STRING,
    syntax::COMPLEX_LIST,
    syntax::CONTEXT_LIST,
    syntax::CKPT_SELECTOR,
    syntax::DATE_TIME,
    syntax::HOLD_LIST,
    syntax::JOB_IDENTIFIER_LIST,
    syntax::LISTNAME_LIST,
    syntax::RQS_LIST,
    syntax::MAIL_ADDRESS,
    syntax::MAIL_LIST,
    syntax::MAIL_OPTIONS,
    syntax::NODE_PATH,
    syntax::NODE_SHARES_LIST,
    syntax::WORKING_DIRECTORY,
    syntax::PATH_LIST,
    syntax::PRIORITY,
    syntax::RESOURCE_LIST,
    syntax::SIMPLE_CONTEXT_LIST,
    syntax::SLOT_RANGE,
    syntax::JOB_TASK_LIST,
    syntax::JOB_TASKS,
    syntax::TASK_ID_RANGE,
    syntax::USER_LIST,
    syntax::VARIABLE_LIST,
    syntax::WC_CQUEUE,
    syntax::WC_HOST,
    syntax::WC_HOSTGROUP,
    syntax::WC_QINSTANCE,
    syntax::WC_QDOMAIN,
    syntax::WC_QUEUE,
    syntax::WC_QUEUE_LIST,
    syntax::EXP,
    syntax::LIN,
    syntax::STR,
];

/// `qsub`: its `-help`, man page and completions.
pub const QSUB_DOC: CommandDoc = CommandDoc {
    name: "qsub",
    summary: "submit a batch job to gridspool",
    synopsis: "[options]",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: QSUB_OPTIONS,
    operand: Some(("[{command|-} [command_args]]", "")),
    operand_hint: ValueHint::Files,
    syntax: QSUB_SYNTAX,
    description: &[
        "qsub submits a job script (or, with -b y, a command) to the spool of the cell $SGE_ROOT/$SGE_CELL. The script is copied into the spool at once, so it may be changed or deleted as soon as qsub returns. Without a script argument the script is read from standard input and the job is named STDIN.",
        "Options come from, in increasing precedence: $SGE_ROOT/$SGE_CELL/common/sge_request, ~/.sge_request, ./.sge_request, the #$ lines of the script (another prefix with -C), files named with -@, and the command line. Single-valued options take the last value; -l merges by resource, -v, -M, -hold_jid and context options accumulate, -q is replaced per source.",
        "The job belongs to the caller's real user and group, as the kernel reports them; its submission time is taken by qsub. sched_d starts it as soon as a slot and the requested resources are free, in the priority order of the configured policy.",
        "Options that SGE lists but gridspool does not implement are refused with a message naming the option; none is silently ignored.",
    ],
    option_details: &[
        (
            "-cluster",
            "gridspool's own option, for the cluster policy (docs/policies.md): the Qube! cluster the job is submitted into, a path such as / (the default) or /A/B. Hosts prefer jobs of their own cluster, then of clusters below it, then those further up. qalter -cluster moves a job; -ac cluster=/A/B is read as well. Not listed by -help, which stays SGE's.",
        ),
        (
            "-no_preempt",
            "gridspool's own option: with y, the job is never chosen as a preemption victim (scheduler.preemption). Not listed by -help.",
        ),
        (
            "-sync",
            "qsub waits until the job (every task of an array) has ended, printing one line per task as it ends (its exit code, the signal that ended it, or Unable to run job N for a deleted task), and exits with the first non-zero exit code, 1 for a signal. A job in error state (Eqw) is waited for until it is deleted.",
        ),
        (
            "-now",
            "With y, the job must start in sched_d's next scheduling pass or it is removed; qsub reports which happened.",
        ),
        (
            "-w",
            "e refuses a job that no queue of the configuration could ever run; w warns; v and p only report and do not submit; n checks nothing.",
        ),
    ],
    value_hints: &[
        ("-@", ValueHint::Files),
        ("-e", ValueHint::Files),
        ("-o", ValueHint::Files),
        ("-i", ValueHint::Files),
        ("-S", ValueHint::Files),
        ("-wd", ValueHint::Files),
        ("-b", ValueHint::Words(&["y", "n"])),
        ("-j", ValueHint::Words(&["y", "n"])),
        ("-r", ValueHint::Words(&["y", "n"])),
        ("-R", ValueHint::Words(&["y", "n"])),
        ("-now", ValueHint::Words(&["y", "n"])),
        ("-sync", ValueHint::Words(&["y", "n"])),
        ("-shell", ValueHint::Words(&["y", "n"])),
        ("-w", ValueHint::Words(&["e", "w", "n", "v", "p"])),
        ("-hold_jid", ValueHint::Jobs),
        ("-hold_jid_ad", ValueHint::Jobs),
    ],
    exit_status: &[
        (
            "0",
            "The job was submitted (with -sync y: the job ended with exit status 0).",
        ),
        (
            "1",
            "The job was rejected (unknown resource, queue or parallel environment, priority not allowed, user id below min_uid, ...).",
        ),
        (
            "2",
            "The command line is wrong (unknown or unsupported option, missing argument).",
        ),
        ("4", "No script was read from standard input."),
        ("7", "The priority is not a number from -1023 to 1024."),
        ("14", "The script file cannot be read."),
        (
            "other",
            "With -sync y, the exit code of the first task that did not exit 0 (1 if a signal ended it; 0 if it was deleted).",
        ),
    ],
    compatibility: &[
        "Options of SGE's table that gridspool does not implement (-ckpt, -c, -binding, -jsv, -ot, -he, -pty, -ar, -display, -verify and the qconf-like -Ap -astnode -at -dul -mattr -srqs) are refused; SGE would accept them.",
        "A missing -@ file is an error; SGE ignores it and reads the script from standard input.",
        "Arguments, #$ lines, option files, the values -v copies and the directory of -cwd must be UTF-8 text (exit status 1 naming what is not); -V leaves out a variable that is not, with a warning. SGE passes the bytes on.",
    ],
    see_also: &[
        "qstat", "qdel", "qalter", "qhold", "qrls", "qacct", "sched_d",
    ],
};

/// `qalter`: its `-help`, man page and completions.
pub const QALTER_DOC: CommandDoc = CommandDoc {
    name: "qalter",
    summary: "change the attributes of pending and running gridspool jobs",
    synopsis: "[options] job_task_list",
    help_indent: "   ",
    help_width: 41,
    syntax_width: 24,
    options: QALTER_OPTIONS,
    operand: Some((
        "job_task_list",
        "jobids (and taskids) of jobs to be altered",
    )),
    operand_hint: ValueHint::Jobs,
    syntax: QALTER_SYNTAX,
    description: &[
        "qalter changes the attributes of jobs: the options mean what they mean to qsub. The job owner may change their own jobs; operators and managers any job. Only operators may raise a priority.",
        "Every change is checked against the current state of the job before anything is written; a refusal prints SGE's words and changes nothing. The accepted changes are written to the spool as one request, which qstat shows at once and sched_d applies.",
    ],
    option_details: &[
        (
            "-h",
            "u, o and s set the user, operator and system hold; U, O and S release them; n releases every hold.",
        ),
        (
            "-cluster",
            "Moves the job to another Qube! cluster (gridspool's own option, see qsub(1)).",
        ),
        (
            "-no_preempt",
            "Marks the job as never (y) or again (n) preemptible (gridspool's own option).",
        ),
        (
            "-shove",
            "Qube!'s shove (gridspool's own option, for operators and managers): sched_d re-evaluates the named jobs at once, as on any other job event, and qalter prints \"shoved job N\". It changes nothing else and can be combined with other options.",
        ),
    ],
    value_hints: &[
        ("-e", ValueHint::Files),
        ("-o", ValueHint::Files),
        ("-h", ValueHint::Words(&["u", "o", "s", "U", "O", "S", "n"])),
        ("-hold_jid", ValueHint::Jobs),
        ("-u", ValueHint::Users),
    ],
    exit_status: &[
        ("0", "Every change was made."),
        (
            "1",
            "A change was refused or a job does not exist (the messages on standard output say which).",
        ),
        ("2", "The command line is wrong."),
    ],
    compatibility: &[
        "qalter -w e refuses the change when no queue could run the altered job; SGE prints the same error but applies the change.",
    ],
    see_also: &["qsub", "qstat", "qhold", "qrls", "qdel"],
};

/// `qsub -help`, byte for byte as SGE 8.1.9 prints it.
pub fn qsub_help() -> String {
    help_text(&QSUB_DOC)
}

/// `qalter -help`, byte for byte as SGE 8.1.9 prints it.
pub fn qalter_help() -> String {
    help_text(&QALTER_DOC)
}
