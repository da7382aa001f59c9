//! The clock, and the dates Grid Engine prints (in the local time zone, as SGE does): every
//! layer reads the time, so it stands at the ground, below the configuration.

use jiff::{Timestamp, tz::TimeZone};

/// The local time zone, as C's `localtime` finds it: `TZ` when set, else `/etc/localtime`,
/// read once per process. Read as a zone without a name: jiff's `TimeZone::system()` names
/// it by walking the whole zoneinfo database (some 1,800 files, a good part of a `qstat`'s
/// time), and no SGE output shows the zone's name. `sched_d` too reads it once: restart it
/// after changing the host's zone.
pub fn local_zone() -> TimeZone {
    static LOCAL: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();
    LOCAL
        .get_or_init(|| {
            if std::env::var_os("TZ").is_some() {
                return TimeZone::system();
            }
            std::fs::read("/etc/localtime")
                .ok()
                .and_then(|data| TimeZone::tzif("localtime", &data).ok())
                .unwrap_or_else(TimeZone::system)
        })
        .clone()
}

fn zoned(epoch: i64) -> jiff::Zoned {
    let ts = Timestamp::from_second(epoch).unwrap_or(Timestamp::UNIX_EPOCH);
    ts.to_zoned(local_zone())
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

/// Why a `[[CC]YY]MMDDhhmm[.SS]` date (`qsub -a`, `-dl`, `qacct -b`, `-e`) was refused, in
/// SGE's words: scripts and users see the same message for the same mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DateTimeError {
    #[error("Invalid format of seconds field.")]
    SecondsField,
    #[error("Invalid format of date/hour-minute field.")]
    Format,
    #[error("Invalid month specification.")]
    Month,
    #[error("Invalid day specification.")]
    Day,
    #[error("Invalid hour specification.")]
    Hour,
    #[error("Invalid minute specification.")]
    Minute,
    #[error("Invalid seconds specification.")]
    Second,
    #[error("Couldn't generate date from input. Perhaps a date before 1970 was specified.")]
    BeforeEpoch,
}

/// C's `atoi` of a field: leading blanks, a sign, digits, the rest ignored (`"no"` is 0,
/// `"1a"` 1). SGE reads each two-digit field so; only the field lengths are checked first.
fn atoi(field: &[u8]) -> i32 {
    let mut rest = field
        .iter()
        .skip_while(|b| b.is_ascii_whitespace())
        .peekable();
    let negative = match rest.peek() {
        Some(b'-') => {
            rest.next();
            true
        }
        Some(b'+') => {
            rest.next();
            false
        }
        _ => false,
    };
    let n = rest.take_while(|b| b.is_ascii_digit()).fold(0i32, |n, b| {
        n.saturating_mul(10).saturating_add(i32::from(b - b'0'))
    });
    if negative { -n } else { n }
}

/// `[[CC]YY]MMDDhhmm[.SS]` in local time, read as SGE reads it (`sge_parse_date_time`): the
/// lengths first (8, 10 or 12 before the dot, 2 after), then each field by its value, in
/// order; out-of-month days and the like roll over as `mktime` rolls them. `now` gives the
/// year when it is left out; a two-digit year below 70 is 20YY.
pub fn sge_date_time(text: &str, now: i64) -> Result<i64, DateTimeError> {
    let mut tokens = text.split('.').filter(|t| !t.is_empty());
    let main = tokens.next().ok_or(DateTimeError::Format)?.as_bytes();
    let seconds = tokens.next().map(str::as_bytes);
    if seconds.is_some_and(|s| s.len() != 2) {
        return Err(DateTimeError::SecondsField);
    }
    if ![8, 10, 12].contains(&main.len()) {
        return Err(DateTimeError::Format);
    }
    let (year, rest) = match main.len() {
        12 => (atoi(&main[..4]), &main[4..]),
        10 => {
            let yy = atoi(&main[..2]);
            (if yy < 70 { 2000 + yy } else { 1900 + yy }, &main[2..])
        }
        _ => (i32::from(zoned(now).year()), main),
    };
    let month = atoi(&rest[..2]);
    if !(1..=12).contains(&month) {
        return Err(DateTimeError::Month);
    }
    let day = atoi(&rest[2..4]);
    if !(1..=31).contains(&day) {
        return Err(DateTimeError::Day);
    }
    let hour = atoi(&rest[4..6]);
    if !(0..=23).contains(&hour) {
        return Err(DateTimeError::Hour);
    }
    let minute = atoi(&rest[6..8]);
    if !(0..=59).contains(&minute) {
        return Err(DateTimeError::Minute);
    }
    let second = seconds.map_or(0, atoi);
    if second > 59 {
        return Err(DateTimeError::Second);
    }
    let first_of_month = jiff::civil::DateTime::new(
        i16::try_from(year).map_err(|_| DateTimeError::BeforeEpoch)?,
        i8::try_from(month).map_err(|_| DateTimeError::Month)?,
        1,
        0,
        0,
        0,
        0,
    )
    .map_err(|_| DateTimeError::BeforeEpoch)?;
    let offset = jiff::Span::new()
        .days(i64::from(day - 1))
        .hours(i64::from(hour))
        .minutes(i64::from(minute))
        .seconds(i64::from(second));
    let epoch = first_of_month
        .checked_add(offset)
        .and_then(|dt| dt.to_zoned(local_zone()))
        .map(|z| z.timestamp().as_second())
        .map_err(|_| DateTimeError::BeforeEpoch)?;
    if epoch < 0 {
        return Err(DateTimeError::BeforeEpoch);
    }
    Ok(epoch)
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
    fn dates_are_refused_with_sge_s_message_for_the_first_field_that_is_wrong() {
        let now = 1_795_734_000;
        for (text, error) in [
            ("notadate", DateTimeError::Month),
            ("abc", DateTimeError::Format),
            ("202701011200.3", DateTimeError::SecondsField),
            ("13011200", DateTimeError::Month),
            ("01321200", DateTimeError::Day),
            ("01012400", DateTimeError::Hour),
            ("01010060", DateTimeError::Minute),
            ("01010000.60", DateTimeError::Second),
            ("196001010000", DateTimeError::BeforeEpoch),
        ] {
            assert_eq!(sge_date_time(text, now), Err(error), "{text}");
        }
        let day = |text| zoned(sge_date_time(text, now).expect(text)).date();
        // mktime's roll-over: 31 February is 3 March; a two-digit year below 70 is 20YY.
        assert_eq!(day("2702311200"), jiff::civil::date(2027, 3, 3));
        assert_eq!(day("6901011200"), jiff::civil::date(2069, 1, 1));
        assert_eq!(day("7001021200"), jiff::civil::date(1970, 1, 2));
        // Each field as C's atoi reads it.
        assert_eq!(day("0101 1a 00"), jiff::civil::date(2001, 1, 1));
        assert_eq!(day("0102no00"), jiff::civil::date(2026, 1, 2));
    }

    #[test]
    fn the_local_zone_read_once_gives_the_system_zone_offsets() {
        // Across a year and its daylight-saving changes, wherever the machine is.
        let system = TimeZone::system();
        for day in 0..400 {
            let ts = Timestamp::from_second(1_767_225_600 + day * 86_400 + 3_600).expect("ts");
            assert_eq!(
                local_zone().to_offset(ts),
                system.to_offset(ts),
                "day {day}"
            );
        }
    }

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
