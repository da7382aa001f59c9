//! Grid Engine's numbers: the multipliers of `sge_types(1)` (`k`=1000, `K`=1024, ... `t`/`T`)
//! that requests, limits and times are written with, and the binary units memory is printed in.
//! Commands, mail and the configuration all read and print them, so they stand at the ground.

/// A number with an optional multiplier suffix; `None` when it does not parse.
pub fn parse_with_multiplier(t: &str) -> Option<f64> {
    let (num, mult) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 1e3),
        'K' => (&t[..t.len() - 1], 1024.0),
        'm' => (&t[..t.len() - 1], 1e6),
        'M' => (&t[..t.len() - 1], 1024.0 * 1024.0),
        'g' => (&t[..t.len() - 1], 1e9),
        'G' => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        't' => (&t[..t.len() - 1], 1e12),
        'T' => (&t[..t.len() - 1], 1024.0_f64.powi(4)),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    v.is_finite().then_some(v * mult)
}

/// `23.5G`, `573.8M`, `0.0`: memory in the table, one decimal and a binary unit.
pub fn memory1(bytes: f64) -> String {
    memory_with(bytes, 1)
}

/// `22.980G`, `0.000`: memory in `-F` resource lines.
pub fn memory3(bytes: f64) -> String {
    memory_with(bytes, 3)
}

fn memory_with(bytes: f64, decimals: usize) -> String {
    const K: f64 = 1024.0;
    let (v, unit) = if bytes >= K * K * K * K {
        (bytes / (K * K * K * K), "T")
    } else if bytes >= K * K * K {
        (bytes / (K * K * K), "G")
    } else if bytes >= K * K {
        (bytes / (K * K), "M")
    } else if bytes >= K {
        (bytes / K, "K")
    } else {
        (bytes, "")
    };
    format!("{v:.decimals$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_formats() {
        assert_eq!(memory1(0.0), "0.0");
        assert_eq!(memory1(24684100.0 * 1024.0), "23.5G");
        assert_eq!(memory1(587552.0 * 1024.0), "573.8M");
        assert_eq!(memory3(24096548.0 * 1024.0), "22.980G");
        assert_eq!(memory3(587552.0 * 1024.0), "573.781M");
    }
}
