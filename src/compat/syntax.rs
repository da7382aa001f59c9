//! The legend of value syntaxes under SGE's `-help` (`job_task_list  job_tasks[,...]`).
//!
//! SGE prints overlapping legends for qsub, qalter, qdel, qhold and qrls; each entry is
//! defined here once, with SGE's wording, and every command lists the ones it prints, in
//! its order.

use super::docs::SyntaxItem;

const fn item(name: &'static str, definition: &'static str) -> SyntaxItem {
    SyntaxItem { name, definition }
}

pub const ACCOUNT_STRING: SyntaxItem = item("account_string", "account_name");
pub const COMPLEX_LIST: SyntaxItem = item("complex_list", "complex[,complex,...]");
pub const CONTEXT_LIST: SyntaxItem =
    item("context_list", "variable[=value][,variable[=value],...]");
pub const CKPT_SELECTOR: SyntaxItem = item("ckpt_selector", "`n' `s' `m' `x' `r' <interval>");
pub const DATE_TIME: SyntaxItem = item("date_time", "[[CC]YY]MMDDhhmm[.SS]");
pub const JOB_IDENTIFIER_LIST: SyntaxItem = item(
    "job_identifier_list",
    "{job_id|job_name|reg_exp}[,{job_id|job_name|reg_exp},...]",
);
pub const JSV_URL: SyntaxItem = item("jsv_url", "[script:][username@]path");
pub const LISTNAME_LIST: SyntaxItem = item("listname_list", "listname[,listname,...]");
pub const RQS_LIST: SyntaxItem = item("rqs_list", "rqs_name[,rqs_name,...]");
pub const MAIL_ADDRESS: SyntaxItem = item("mail_address", "username[@host]");
pub const MAIL_LIST: SyntaxItem = item("mail_list", "mail_address[,mail_address,...]");
pub const MAIL_OPTIONS: SyntaxItem = item("mail_options", "`e' `b' `a' `n' `s'");
pub const NODE_PATH: SyntaxItem = item("node_path", "[/]node_name[[/.]node_name...]");
pub const NODE_SHARES_LIST: SyntaxItem = item(
    "node_shares_list",
    "node_path=shares[,node_path=shares,...]",
);
pub const WORKING_DIRECTORY: SyntaxItem = item("working_directory", "path");
pub const PATH_LIST: SyntaxItem = item("path_list", "[host:]path[,[host:]path,...]");
pub const PRIORITY: SyntaxItem = item("priority", "-1023 - 1024");
pub const RESOURCE_LIST: SyntaxItem =
    item("resource_list", "resource[=value][,resource[=value],...]");
pub const SIMPLE_CONTEXT_LIST: SyntaxItem = item("simple_context_list", "variable[,variable,...]");
pub const SLOT_RANGE: SyntaxItem = item("slot_range", "[n[-m]|[-]m] - n,m > 0");
pub const TASK_ID_RANGE: SyntaxItem = item("task_id_range", "task_id['-'task_id[':'step]]");
pub const VARIABLE_LIST: SyntaxItem =
    item("variable_list", "variable[=value][,variable[=value],...]");
pub const OBJ_NM: SyntaxItem = item(
    "obj_nm",
    "\"queue\"|\"exechost\"|\"pe\"|\"ckpt\"|\"hostgroup\"|\"resource_quota\"",
);
pub const ATTR_NM: SyntaxItem = item("attr_nm", "(see man pages)");
pub const OBJ_ID_LIST: SyntaxItem = item("obj_id_list", "objectname [ objectname ...]");
pub const WC_CQUEUE: SyntaxItem = item("wc_cqueue", "wildcard expression matching a cluster queue");
pub const WC_HOST: SyntaxItem = item("wc_host", "wildcard expression matching a host");
pub const WC_HOSTGROUP: SyntaxItem =
    item("wc_hostgroup", "wildcard expression matching a hostgroup");
pub const WC_QINSTANCE: SyntaxItem = item("wc_qinstance", "wc_cqueue@wc_host");
pub const WC_QDOMAIN: SyntaxItem = item("wc_qdomain", "wc_cqueue@wc_hostgroup");
pub const WC_QUEUE: SyntaxItem = item("wc_queue", "wc_cqueue|wc_qdomain|wc_qinstance");
pub const WC_QUEUE_LIST: SyntaxItem = item("wc_queue_list", "wc_queue[,wc_queue,...]");
pub const THREAD_NAME: SyntaxItem = item("thread_name", "\"scheduler\"|\"jvm\"");
pub const EXP: SyntaxItem = item("exp", "explicit:<socket>,<core>[:...]");
pub const LIN: SyntaxItem = item("lin", "linear[:<amount>[:<socket>,<core>]]");
pub const STR: SyntaxItem = item("str", "striding:<amount>:<stepsize>[:<socket>,<core>]");
pub const HOLD_LIST: SyntaxItem = item("hold_list", "`n' `u' `s' `o' `U' `S' `O'");
pub const JOB_TASK_LIST: SyntaxItem = item("job_task_list", "job_tasks[,job_tasks,...]");
pub const JOB_TASKS: SyntaxItem = item(
    "job_tasks",
    "[job_id['.'task_id_range]|job_name|pattern][' -t 'task_id_range]",
);
pub const USER_LIST: SyntaxItem = item("user_list", "user[,user,...]");

/// qhold's and qrls's `-h`, which offer fewer letters than qalter's.
pub const HOLD_LIST_USER_OPERATOR_SYSTEM: SyntaxItem = item("hold_list", "`u' `s' `o'");
