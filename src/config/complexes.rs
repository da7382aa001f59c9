//! Grid Engine's complex attributes (`qconf -sc`): what `-l` may request, how values are typed
//! and compared, and their urgency. The built-in table is SGE 8.1.9's (capture `qconf-sc`);
//! the configuration adds to it or overrides entries by name.

use serde::{Deserialize, Serialize};

/// `type` column of `complex(5)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ComplexType {
    Int,
    Double,
    Memory,
    Time,
    String,
    Cstring,
    Restring,
    Host,
    Bool,
}

impl ComplexType {
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            ComplexType::Int | ComplexType::Double | ComplexType::Memory | ComplexType::Time
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            ComplexType::Int => "INT",
            ComplexType::Double => "DOUBLE",
            ComplexType::Memory => "MEMORY",
            ComplexType::Time => "TIME",
            ComplexType::String => "STRING",
            ComplexType::Cstring => "CSTRING",
            ComplexType::Restring => "RESTRING",
            ComplexType::Host => "HOST",
            ComplexType::Bool => "BOOL",
        }
    }
}

/// `requestable` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Requestable {
    Yes,
    No,
    Forced,
}

/// `consumable` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Consumable {
    No,
    /// Consumed per slot.
    Yes,
    /// Consumed once per job.
    Job,
}

/// One line of `qconf -sc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Complex {
    pub name: String,
    pub shortcut: String,
    #[serde(rename = "type")]
    pub kind: ComplexType,
    pub relop: String,
    pub requestable: Requestable,
    pub consumable: Consumable,
    pub default: String,
    pub urgency: f64,
}

/// SGE 8.1.9's built-in complexes, in `qconf -sc` order.
pub fn builtin() -> Vec<Complex> {
    use ComplexType::*;
    use Consumable as C;
    use Requestable as R;
    type Row = (
        &'static str,
        &'static str,
        ComplexType,
        &'static str,
        Requestable,
        Consumable,
        &'static str,
        f64,
    );
    let rows: &[Row] = &[
        ("arch", "a", String, "==", R::Yes, C::No, "NONE", 0.0),
        ("calendar", "c", String, "==", R::Yes, C::No, "NONE", 0.0),
        ("cpu", "cpu", Double, ">=", R::Yes, C::No, "0", 0.0),
        (
            "display_win_gui",
            "dwg",
            Bool,
            "==",
            R::Yes,
            C::No,
            "0",
            0.0,
        ),
        ("h_core", "h_core", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("h_cpu", "h_cpu", Time, "<=", R::Yes, C::No, "0:0:0", 0.0),
        ("h_data", "h_data", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("h_fsize", "h_fsize", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("h_rss", "h_rss", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("h_rt", "h_rt", Time, "<=", R::Yes, C::No, "0:0:0", 0.0),
        ("h_stack", "h_stack", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("h_vmem", "h_vmem", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("hostname", "h", Host, "==", R::Yes, C::No, "NONE", 0.0),
        ("load_avg", "la", Double, ">=", R::No, C::No, "0", 0.0),
        ("load_long", "ll", Double, ">=", R::No, C::No, "0", 0.0),
        ("load_medium", "lm", Double, ">=", R::No, C::No, "0", 0.0),
        ("load_short", "ls", Double, ">=", R::No, C::No, "0", 0.0),
        ("m_core", "core", Int, "<=", R::Yes, C::No, "0", 0.0),
        ("m_socket", "socket", Int, "<=", R::Yes, C::No, "0", 0.0),
        ("m_thread", "thread", Int, "<=", R::Yes, C::No, "0", 0.0),
        (
            "m_topology",
            "topo",
            String,
            "==",
            R::Yes,
            C::No,
            "NONE",
            0.0,
        ),
        (
            "m_topology_inuse",
            "utopo",
            String,
            "==",
            R::Yes,
            C::No,
            "NONE",
            0.0,
        ),
        ("mem_free", "mf", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("mem_total", "mt", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("mem_used", "mu", Memory, ">=", R::Yes, C::No, "0", 0.0),
        (
            "min_cpu_interval",
            "mci",
            Time,
            "<=",
            R::No,
            C::No,
            "0:0:0",
            0.0,
        ),
        ("np_load_avg", "nla", Double, ">=", R::No, C::No, "0", 0.0),
        ("np_load_long", "nll", Double, ">=", R::No, C::No, "0", 0.0),
        (
            "np_load_medium",
            "nlm",
            Double,
            ">=",
            R::No,
            C::No,
            "0",
            0.0,
        ),
        ("np_load_short", "nls", Double, ">=", R::No, C::No, "0", 0.0),
        ("num_proc", "p", Int, "==", R::Yes, C::No, "0", 0.0),
        ("qname", "q", String, "==", R::Yes, C::No, "NONE", 0.0),
        ("rerun", "re", Bool, "==", R::No, C::No, "0", 0.0),
        ("s_core", "s_core", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("s_cpu", "s_cpu", Time, "<=", R::Yes, C::No, "0:0:0", 0.0),
        ("s_data", "s_data", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("s_fsize", "s_fsize", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("s_rss", "s_rss", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("s_rt", "s_rt", Time, "<=", R::Yes, C::No, "0:0:0", 0.0),
        ("s_stack", "s_stack", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("s_vmem", "s_vmem", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("seq_no", "seq", Int, "==", R::No, C::No, "0", 0.0),
        ("slots", "s", Int, "<=", R::Yes, C::Yes, "1", 1000.0),
        ("swap_free", "sf", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("swap_rate", "sr", Memory, ">=", R::Yes, C::No, "0", 0.0),
        ("swap_rsvd", "srsv", Memory, ">=", R::Yes, C::No, "0", 0.0),
        ("swap_total", "st", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("swap_used", "su", Memory, ">=", R::Yes, C::No, "0", 0.0),
        ("tmpdir", "tmp", String, "==", R::No, C::No, "NONE", 0.0),
        ("virtual_free", "vf", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("virtual_total", "vt", Memory, "<=", R::Yes, C::No, "0", 0.0),
        ("virtual_used", "vu", Memory, ">=", R::Yes, C::No, "0", 0.0),
    ];
    rows.iter()
        .map(
            |&(name, short, kind, relop, requestable, consumable, default, urgency)| Complex {
                name: name.to_string(),
                shortcut: short.to_string(),
                kind,
                relop: relop.to_string(),
                requestable,
                consumable,
                default: default.to_string(),
                urgency,
            },
        )
        .collect()
}
