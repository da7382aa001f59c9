//! The clock, and the dates Grid Engine prints (in the local time zone, as SGE does): every
//! layer reads the time, so it stands at the ground, below the configuration.

use jiff::{Timestamp, tz::TimeZone};

fn zoned(epoch: i64) -> jiff::Zoned {
    let ts = Timestamp::from_second(epoch).unwrap_or(Timestamp::UNIX_EPOCH);
    ts.to_zoned(TimeZone::system())
}

/// `11/21/2026 22:45:02`: qstat's `submit/start at` column.
pub fn qstat_date(epoch: i64) -> String {
    zoned(epoch).strftime("%m/%d/%Y %H:%M:%S").to_string()
}

/// `Sat Nov 21 22:45:01 2026`: `qstat -j` and `qacct` (C's `ctime` without the newline).
pub fn ctime(epoch: i64) -> String {
    let z = zoned(epoch);
    format!(
        "{} {:>2} {}",
        z.strftime("%a %b"),
        z.day(),
        z.strftime("%H:%M:%S %Y")
    )
}

/// `2026-11-21T22:45:02`: qstat -xml.
pub fn xml_date(epoch: i64) -> String {
    zoned(epoch).strftime("%Y-%m-%dT%H:%M:%S").to_string()
}

/// The current time in seconds since the epoch.
pub fn now() -> i64 {
    Timestamp::now().as_second()
}

/// A time value in seconds: `h:m:s` (fields may be empty: `::30`), or plain seconds.
pub fn parse_time(t: &str) -> Option<i64> {
    if t.eq_ignore_ascii_case("infinity") {
        return Some(i64::MAX);
    }
    if t.contains(':') {
        let parts: Vec<&str> = t.split(':').collect();
        if parts.len() > 3 {
            return None;
        }
        let mut total: i64 = 0;
        for p in &parts {
            let v = if p.is_empty() {
                0
            } else {
                p.parse::<i64>().ok()?
            };
            total = total.checked_mul(60)?.checked_add(v)?;
        }
        // `m:s` has two fields: scale as if an hour field of 0 came first (done by the loop).
        return Some(total);
    }
    let v = crate::units::parse_with_multiplier(t)?;
    (v.is_finite() && v >= 0.0).then_some(v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_match_sge_in_utc() {
        // The captures were made in UTC: job 2 was submitted at 1795301101.
        if TimeZone::system() != TimeZone::UTC {
            return;
        }
        assert_eq!(qstat_date(1795301101), "11/21/2026 22:45:01");
        assert_eq!(ctime(1795301101), "Sat Nov 21 22:45:01 2026");
        assert_eq!(xml_date(1795301101), "2026-11-21T22:45:01");
        assert_eq!(ctime(1795301101 - 13 * 86400), "Sun Nov  8 22:45:01 2026");
    }

    #[test]
    fn times_are_seconds_or_fields() {
        assert_eq!(parse_time("1:00:00"), Some(3600));
        assert_eq!(parse_time("::30"), Some(30));
        assert_eq!(parse_time("90"), Some(90));
        assert_eq!(parse_time("INFINITY"), Some(i64::MAX));
    }
}
