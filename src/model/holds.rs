use serde::{Deserialize, Serialize};

/// The three holds a user or administrator can place (`qhold -h u|o|s`).
///
/// Dependency holds (`-hold_jid`), array dependency holds and start-time holds (`-a`) are not
/// stored here: they are derived from the job's predecessors and start time, as SGE does
/// (`qstat -s hj|ha|hd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoldType {
    /// `u`: set and released by the owner, operators and managers.
    User,
    /// `o`: set and released by operators and managers only.
    Operator,
    /// `s`: set and released by managers only.
    System,
}

impl HoldType {
    pub fn letter(self) -> char {
        match self {
            HoldType::User => 'u',
            HoldType::Operator => 'o',
            HoldType::System => 's',
        }
    }

    pub fn from_letter(c: char) -> Option<Self> {
        match c {
            'u' => Some(HoldType::User),
            'o' => Some(HoldType::Operator),
            's' => Some(HoldType::System),
            _ => None,
        }
    }
}

/// A set of holds, stored as SGE's letters (`"uo"`), so spool files stay readable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Holds {
    pub user: bool,
    pub operator: bool,
    pub system: bool,
}

impl Holds {
    pub const NONE: Holds = Holds {
        user: false,
        operator: false,
        system: false,
    };

    /// No hold at all (for `skip_serializing_if`).
    pub fn is_none(&self) -> bool {
        !self.any()
    }

    pub fn any(self) -> bool {
        self.user || self.operator || self.system
    }

    pub fn has(self, t: HoldType) -> bool {
        match t {
            HoldType::User => self.user,
            HoldType::Operator => self.operator,
            HoldType::System => self.system,
        }
    }

    pub fn set(&mut self, t: HoldType, on: bool) {
        match t {
            HoldType::User => self.user = on,
            HoldType::Operator => self.operator = on,
            HoldType::System => self.system = on,
        }
    }

    pub fn letters(self) -> String {
        let mut s = String::new();
        for t in [HoldType::User, HoldType::Operator, HoldType::System] {
            if self.has(t) {
                s.push(t.letter());
            }
        }
        s
    }
}

impl From<HoldType> for Holds {
    fn from(t: HoldType) -> Self {
        let mut h = Holds::NONE;
        h.set(t, true);
        h
    }
}

impl Serialize for Holds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.letters())
    }
}

impl<'de> Deserialize<'de> for Holds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor rather than `String::deserialize`: no allocation per pending group, which
        // `qstat` pays once per job.
        struct Letters;
        impl serde::de::Visitor<'_> for Letters {
            type Value = Holds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("hold letters")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Holds, E> {
                let mut h = Holds::NONE;
                for c in text.chars() {
                    let t = HoldType::from_letter(c)
                        .ok_or_else(|| E::custom(format!("unknown hold type {c:?}")))?;
                    h.set(t, true);
                }
                Ok(h)
            }
        }
        d.deserialize_str(Letters)
    }
}
