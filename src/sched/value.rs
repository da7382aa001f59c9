//! Complex values as Grid Engine reads and compares them (`complex(5)`, `sge_types(1)`).
//!
//! A hard `-l name=value` request is met by a host or queue when `requested relop offered`
//! holds, with the complex's relop: `-l h_vmem=2G` (relop `<=`) fits a queue whose `h_vmem`
//! limit is 4G. Numbers carry SGE's multipliers (`k`=1000, `K`=1024, … `m`/`M`, `g`/`G`,
//! `t`/`T`), times are `[[h:]m:]s` or seconds, `INFINITY` is larger than everything, and strings
//! compare as wildcard patterns with `|` alternatives (`-l arch=lx*|sol*`).

use crate::compat::pattern;
use crate::config::{Complex, ComplexType};

/// A numeric complex value, `f64::INFINITY` for `INFINITY`; `None` when it does not parse.
pub fn parse_numeric(kind: ComplexType, text: &str) -> Option<f64> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("infinity") {
        return Some(f64::INFINITY);
    }
    match kind {
        ComplexType::Time => crate::time::parse_time(t).map(|s| s as f64),
        ComplexType::Bool => parse_bool(t).map(|b| if b { 1.0 } else { 0.0 }),
        _ => crate::units::parse_with_multiplier(t),
    }
}

/// `true`/`false`/`1`/`0` (any case), as `sge_types(1)` accepts for BOOL.
pub fn parse_bool(t: &str) -> Option<bool> {
    match t.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" => Some(true),
        "false" | "0" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// Whether a request `requested` of `complex` is met by the value `offered`
/// (`requested relop offered`, `complex(5)`). Strings are patterns matched against the
/// offered value; `HOST` and `CSTRING` ignore case.
pub fn request_met(complex: &Complex, requested: &str, offered: &str) -> bool {
    if complex.kind.is_numeric() || complex.kind == ComplexType::Bool {
        let (Some(r), Some(o)) = (
            parse_numeric(complex.kind, requested),
            parse_numeric(complex.kind, offered),
        ) else {
            return false;
        };
        return compare(&complex.relop, r, o);
    }
    let fold = matches!(complex.kind, ComplexType::Host | ComplexType::Cstring);
    let offered = if fold {
        offered.to_ascii_lowercase()
    } else {
        offered.to_string()
    };
    requested.split('|').any(|alt| {
        let alt = if fold {
            alt.trim().to_ascii_lowercase()
        } else {
            alt.trim().to_string()
        };
        pattern::matches(&alt, &offered)
    })
}

/// `a relop b` for numbers; `EXCL` behaves as `==` for the values compared here.
pub fn compare(relop: &str, a: f64, b: f64) -> bool {
    match relop {
        "<=" => a <= b,
        "<" => a < b,
        ">=" => a >= b,
        ">" => a > b,
        "!=" => a != b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::builtin_complexes;

    fn cx(name: &str) -> Complex {
        builtin_complexes()
            .into_iter()
            .find(|c| c.name == name)
            .expect("builtin complex")
    }

    #[test]
    fn numbers_times_and_multipliers() {
        assert_eq!(parse_numeric(ComplexType::Memory, "1K"), Some(1024.0));
        assert_eq!(parse_numeric(ComplexType::Memory, "2k"), Some(2000.0));
        assert_eq!(parse_numeric(ComplexType::Memory, "1G"), Some(1073741824.0));
        assert_eq!(parse_numeric(ComplexType::Int, "x"), None);
    }

    #[test]
    fn requests_compare_with_the_complex_relop() {
        assert!(request_met(&cx("h_vmem"), "2G", "4G"));
        assert!(!request_met(&cx("h_vmem"), "8G", "4G"));
        assert!(request_met(&cx("h_rt"), "1:00:00", "INFINITY"));
        assert!(request_met(&cx("arch"), "lx*|sol*", "lx-amd64"));
        assert!(!request_met(&cx("arch"), "sol*", "lx-amd64"));
        assert!(request_met(&cx("hostname"), "NODE1", "node1"));
    }
}
