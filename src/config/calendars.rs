//! Calendars (`calendar_conf(5)`): when the queue instances of a queue that names one are
//! enabled, disabled (`D`) or suspended (`C`).
//!
//! A calendar is kept in `config.yaml` as the administrator wrote it (`year` and `week` as
//! `qconf -scal` shows them back, case and all, as SGE does) and read here into entries, with
//! SGE 8.1.9's messages for what does not parse: scripts that feed `qconf -Acal` see the same
//! refusals. The grammar and the tie-breaking are SGE's (`libs/sgeobj/sge_calendar.c`):
//!
//! - an entry without a state switches the queue `off`; without days it holds every day;
//!   without daytimes, the whole day; `20-6` wraps over midnight, `fri-mon` over the week;
//! - where entries overlap, `on` beats `suspended`, which beats `off`;
//! - the year entries that hold at a moment decide it alone; only when none holds do the
//!   week entries; when none of either holds, the queue is enabled.
//!
//! Times are local (the system's time zone, as SGE's qmaster reads them with `localtime`).
//! A daytime range holds from its first second up to, not including, its end (`8-17` ends at
//! 17:00:00, as calendar_conf(5) says of `12-11`).

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

/// `calendars[]` in `config.yaml`: one calendar, as `qconf -scal` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarConfig {
    pub name: String,
    /// calendar_conf(5)'s `year`: entries by day of the year, `NONE` for none.
    #[serde(default = "none")]
    pub year: String,
    /// calendar_conf(5)'s `week`: entries by day of the week, `NONE` for none.
    #[serde(default = "none")]
    pub week: String,
}

fn none() -> String {
    "NONE".to_string()
}

/// What a calendar says of its queue instances at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalendarState {
    /// `off`: disabled by the calendar (`D`), no new work; running jobs go on.
    Off,
    /// `suspended`: (`C`), no new work, running jobs stopped until it opens.
    Suspended,
    /// `on`: enabled.
    On,
}

/// A day of a `year` entry as written: the month 1–12, the day 1–31 (31.2. is accepted, as
/// SGE accepts it, and matches no day).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct YearDay {
    year: i16,
    month: i8,
    day: i8,
}

impl YearDay {
    fn of(d: Date) -> YearDay {
        YearDay {
            year: d.year(),
            month: d.month(),
            day: d.day(),
        }
    }

    /// The first real date on or after this one.
    fn first_date(self) -> Option<Date> {
        Date::new(self.year, self.month, self.day).ok().or_else(|| {
            let (y, m) = if self.month == 12 {
                (self.year + 1, 1)
            } else {
                (self.year, self.month + 1)
            };
            Date::new(y, m, 1).ok()
        })
    }
}

/// Seconds of the day, `[begin, end)`, `end` up to 86,400.
type Daytimes = Vec<(u32, u32)>;

#[derive(Debug, Clone, PartialEq, Eq)]
struct YearEntry {
    /// Inclusive ranges of days; `None`: every day.
    days: Option<Vec<(YearDay, YearDay)>>,
    times: Daytimes,
    state: CalendarState,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct WeekEntry {
    /// By `weekday().to_sunday_zero_offset()`.
    days: [bool; 7],
    times: Daytimes,
    state: CalendarState,
}

/// A parsed calendar: what [`Calendar::state_at`] and [`Calendar::next_change`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calendar {
    pub name: String,
    year: Vec<YearEntry>,
    week: Vec<WeekEntry>,
}

const DAY: u32 = 86_400;

fn in_times(times: &Daytimes, secs: u32) -> bool {
    times.iter().any(|&(b, e)| b <= secs && secs < e)
}

/// The strongest of the states that hold (`on` over `suspended` over `off`).
fn strongest(states: impl Iterator<Item = CalendarState>) -> Option<CalendarState> {
    states.max()
}

impl Calendar {
    /// Reads `config`'s `year` and `week` as SGE does; `Err` is SGE's message.
    pub fn parse(config: &CalendarConfig) -> Result<Calendar, String> {
        let year = parse_year(&config.year).map_err(|e| {
            // SGE's message names the calendar where the error goes and the error where the
            // name goes (MSG_ANSWER_ERRORINDISABLYEAROFCALENDARXY_SS): kept, as scripts see it.
            format!(
                "error in disabled_year of calendar \"{e}\": {}",
                config.name
            )
        })?;
        let week = parse_week(&config.week).map_err(|e| {
            format!(
                "error in disabled_week of calendar \"{}\": {e}",
                config.name
            )
        })?;
        Ok(Calendar {
            name: config.name.clone(),
            year,
            week,
        })
    }

    /// The state at local civil time `at`.
    pub fn state_at_civil(&self, at: DateTime) -> CalendarState {
        let date = at.date();
        let secs = at.time().hour() as u32 * 3600
            + at.time().minute() as u32 * 60
            + at.time().second() as u32;
        let today = YearDay::of(date);
        let year = strongest(
            self.year
                .iter()
                .filter(|e| {
                    e.days
                        .as_ref()
                        .is_none_or(|r| r.iter().any(|&(b, e)| b <= today && today <= e))
                        && in_times(&e.times, secs)
                })
                .map(|e| e.state),
        );
        if let Some(s) = year {
            return s;
        }
        let wday = date.weekday().to_sunday_zero_offset() as usize;
        strongest(
            self.week
                .iter()
                .filter(|e| e.days[wday] && in_times(&e.times, secs))
                .map(|e| e.state),
        )
        .unwrap_or(CalendarState::On)
    }

    /// The state at `epoch` (seconds) in time zone `tz`.
    pub fn state_at(&self, epoch: i64, tz: &TimeZone) -> CalendarState {
        self.state_at_civil(civil(epoch, tz))
    }

    /// The first second after `epoch` at which the state differs from the state at `epoch`,
    /// in `tz`; `None` when it never changes again (before 2038, SGE's last year).
    pub fn next_change(&self, epoch: i64, tz: &TimeZone) -> Option<i64> {
        let now = self.state_at(epoch, tz);
        // The state changes only at midnight and at the ends of daytime ranges; between the
        // days where year entries begin or end, the days repeat weekly, so the search jumps
        // from a week past one such day to the next.
        let mut bounds: Vec<u32> = vec![0];
        for (b, e) in self
            .year
            .iter()
            .flat_map(|e| &e.times)
            .chain(self.week.iter().flat_map(|e| &e.times))
        {
            bounds.extend([*b, *e]);
        }
        bounds.retain(|&s| s < DAY);
        bounds.sort_unstable();
        bounds.dedup();
        let mut marks: Vec<Date> = Vec::new();
        for (b, e) in self.year.iter().flat_map(|e| e.days.iter().flatten()) {
            marks.extend(b.first_date());
            if let Some(d) = e.first_date() {
                marks.extend(if YearDay::of(d) == *e {
                    d.tomorrow().ok()
                } else {
                    Some(d)
                });
            }
        }
        marks.sort_unstable();
        marks.dedup();
        let start = civil(epoch, tz).date();
        let last = Date::new(2038, 1, 1).ok()?;
        let mut day = start;
        let mut quiet_days = 0;
        while day < last {
            for &secs in &bounds {
                let at =
                    day.to_datetime(Time::midnight()) + jiff::Span::new().seconds(i64::from(secs));
                let Ok(zoned) = at.to_zoned(tz.clone()) else {
                    continue;
                };
                let t = zoned.timestamp().as_second();
                if t > epoch && self.state_at(t, tz) != now {
                    return Some(t);
                }
            }
            quiet_days += 1;
            if marks.binary_search(&day).is_ok() {
                quiet_days = 1;
            }
            day = day.tomorrow().ok()?;
            if quiet_days > 7 {
                // A week with no year entry beginning or ending went by: only the next such
                // day can bring a change.
                match marks.iter().find(|&&m| m > day) {
                    Some(&m) => {
                        day = m;
                        quiet_days = 0;
                    }
                    None => return None,
                }
            }
        }
        None
    }
}

fn civil(epoch: i64, tz: &TimeZone) -> DateTime {
    let ts = jiff::Timestamp::from_second(epoch).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    tz.to_datetime(ts)
}

// ---- parsing: SGE's tokens, grammar and messages ----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Dot,
    Colon,
    Equal,
    Minus,
    Comma,
    Space,
    Number(u64),
    Word,
    End,
    Error,
}

/// SGE's scanner over one field: a token is looked at (`peek`) until it is taken (`eat`).
/// `text` is what SGE's messages quote as "the current string": the text of the token last
/// scanned (at the end, the one before it; for a character no token starts with, that one).
struct Scanner<'a> {
    rest: &'a str,
    year: bool,
    current: Option<Tok>,
    text: String,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str, year: bool) -> Self {
        Scanner {
            rest: s,
            year,
            current: None,
            text: String::new(),
        }
    }

    fn peek(&mut self) -> Tok {
        if let Some(t) = self.current {
            return t;
        }
        let s = self.rest;
        let (tok, len) = match s.chars().next() {
            None => (Tok::End, 0),
            Some('.') if self.year => (Tok::Dot, 1),
            Some(':') => (Tok::Colon, 1),
            Some('=') => (Tok::Equal, 1),
            Some('-') => (Tok::Minus, 1),
            Some(',') => (Tok::Comma, 1),
            Some(' ') => (Tok::Space, 1),
            Some(c) if c.is_ascii_alphabetic() => {
                let n = s
                    .find(|c: char| !c.is_ascii_alphanumeric())
                    .unwrap_or(s.len());
                (Tok::Word, n)
            }
            Some(c) if c.is_ascii_digit() => {
                let n = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
                let v = s[..n].bytes().fold(0u64, |v, b| {
                    v.saturating_mul(10).saturating_add(u64::from(b - b'0'))
                });
                (Tok::Number(v), n)
            }
            Some(c) => {
                self.text = c.to_string();
                self.current = Some(Tok::Error);
                return Tok::Error;
            }
        };
        if tok != Tok::End {
            self.text = s[..len].to_string();
            self.rest = &s[len..];
        }
        self.current = Some(tok);
        tok
    }

    fn eat(&mut self) {
        self.current = None;
    }
}

/// SGE's `cheap_scan`: a word of three letters or more names the first entry it begins
/// (any case); a shorter one only an entry it spells whole.
fn cheap_scan<T: Copy>(word: &str, table: &[(&str, T)]) -> Option<T> {
    let w = word.to_ascii_lowercase();
    table
        .iter()
        .find(|(name, _)| {
            if w.len() < 3 {
                *name == w
            } else {
                name.starts_with(&w)
            }
        })
        .map(|(_, v)| *v)
}

const STATES: &[(&str, CalendarState)] = &[
    ("on", CalendarState::On),
    ("off", CalendarState::Off),
    ("suspended", CalendarState::Suspended),
];

const WEEKDAYS: &[(&str, usize)] = &[
    ("sunday", 0),
    ("monday", 1),
    ("tuesday", 2),
    ("wednesday", 3),
    ("thursday", 4),
    ("friday", 5),
    ("saturday", 6),
];

const MONTHS: &[(&str, i8)] = &[
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("may", 5),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
];

fn is_none(s: &str) -> bool {
    s.trim().eq_ignore_ascii_case("none")
}

/// Blanks between entries as SGE's reader leaves them: one space each.
fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn parse_year(field: &str) -> Result<Vec<YearEntry>, String> {
    if is_none(field) {
        return Ok(Vec::new());
    }
    let text = normalized(field);
    let mut sc = Scanner::new(&text, true);
    let mut out = vec![year_entry(&mut sc)?];
    while sc.peek() == Tok::Space {
        sc.eat();
        out.push(year_entry(&mut sc)?);
    }
    if sc.peek() != Tok::End {
        return Err(format!("unrecognized string \"{}\"", sc.text));
    }
    Ok(out)
}

fn parse_week(field: &str) -> Result<Vec<WeekEntry>, String> {
    if is_none(field) {
        return Ok(Vec::new());
    }
    let text = normalized(field);
    let mut sc = Scanner::new(&text, false);
    let mut out = vec![week_entry(&mut sc)?];
    while sc.peek() == Tok::Space {
        sc.eat();
        out.push(week_entry(&mut sc)?);
    }
    if sc.peek() != Tok::End {
        return Err("unrecognized token at end".to_string());
    }
    Ok(out)
}

const GOT_EQUAL: &str = "got \"=\" without daytime_range/state";

/// What follows an entry's days (and their `=`): `daytime_range_list=state`, either part
/// optional (the state `off` when absent), the same in year and week entries.
fn times_and_state(sc: &mut Scanner) -> Result<(Option<Daytimes>, CalendarState), String> {
    let mut times = None;
    if let Tok::Number(_) = sc.peek() {
        times = Some(daytime_range_list(sc)?);
        if sc.peek() != Tok::Equal {
            return Ok((times, CalendarState::Off));
        }
        sc.eat();
    }
    if sc.peek() == Tok::Word {
        Ok((times, action(sc)?))
    } else {
        Err(GOT_EQUAL.to_string())
    }
}

/// `year_day_range_list=daytime_range_list=state`, each part optional as calendar_conf(5)
/// says; the state `off` when absent.
fn year_entry(sc: &mut Scanner) -> Result<YearEntry, String> {
    let mut days = None;
    let mut times = None;
    let mut state = CalendarState::Off;
    'entry: {
        if let Tok::Number(_) = sc.peek() {
            days = Some(list(sc, year_day_range)?);
            if sc.peek() != Tok::Equal {
                break 'entry;
            }
            sc.eat();
        }
        (times, state) = times_and_state(sc)?;
    }
    Ok(YearEntry {
        days,
        times: times.unwrap_or_else(|| vec![(0, DAY)]),
        state,
    })
}

fn week_entry(sc: &mut Scanner) -> Result<WeekEntry, String> {
    let mut days = None;
    let mut times = None;
    let mut state = CalendarState::Off;
    'entry: {
        if sc.peek() == Tok::Word && cheap_scan(&sc.text, STATES).is_none() {
            let mut set = [false; 7];
            for (b, e) in list(sc, week_day_range)? {
                let mut d = b;
                loop {
                    set[d] = true;
                    if d == e {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            }
            days = Some(set);
            if sc.peek() != Tok::Equal {
                break 'entry;
            }
            sc.eat();
        }
        (times, state) = times_and_state(sc)?;
    }
    Ok(WeekEntry {
        days: days.unwrap_or([true; 7]),
        times: times.unwrap_or_else(|| vec![(0, DAY)]),
        state,
    })
}

/// `item[,item...]`.
fn list<T>(
    sc: &mut Scanner,
    item: fn(&mut Scanner) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut out = vec![item(sc)?];
    while sc.peek() == Tok::Comma {
        sc.eat();
        out.push(item(sc)?);
    }
    Ok(out)
}

fn action(sc: &mut Scanner) -> Result<CalendarState, String> {
    if sc.peek() != Tok::Word {
        return Err(format!("\"{}\" is not a state specifier", sc.text));
    }
    let state = cheap_scan(&sc.text, STATES)
        .ok_or_else(|| format!("\"{}\" is not a state specifier", sc.text))?;
    sc.eat();
    Ok(state)
}

/// A number in `min..=max`, or SGE's message naming `what`.
fn range_number(sc: &mut Scanner, min: u64, max: u64, what: &str) -> Result<u64, String> {
    match sc.peek() {
        Tok::Number(n) => {
            sc.eat();
            if n < min || n > max {
                Err(format!(
                    "\"{}\" outside of range {min}-{max} of {what}",
                    sc.text
                ))
            } else {
                Ok(n)
            }
        }
        _ => Err(format!("\"{}\" is not a {what}", sc.text)),
    }
}

fn year_day(sc: &mut Scanner) -> Result<YearDay, String> {
    let day = range_number(sc, 1, 31, "day")?;
    if sc.peek() != Tok::Dot {
        return Err("missing \".\" after day".to_string());
    }
    sc.eat();
    let month = if sc.peek() == Tok::Word {
        // SGE leaves its message empty for a month name it does not know.
        let m = cheap_scan(&sc.text, MONTHS).ok_or_else(String::new)?;
        sc.eat();
        m
    } else {
        range_number(sc, 1, 12, "month")? as i8
    };
    if sc.peek() != Tok::Dot {
        return Err("missing \".\" after month".to_string());
    }
    sc.eat();
    let year = range_number(sc, 1970, 2037, "year")?;
    Ok(YearDay {
        year: year as i16,
        month,
        day: day as i8,
    })
}

fn year_day_range(sc: &mut Scanner) -> Result<(YearDay, YearDay), String> {
    let begin = year_day(sc)?;
    if sc.peek() != Tok::Minus {
        return Ok((begin, begin));
    }
    sc.eat();
    let end = year_day(sc)?;
    if begin > end {
        return Err("first yearday in range must be before second yearday".to_string());
    }
    Ok((begin, end))
}

fn week_day(sc: &mut Scanner) -> Result<usize, String> {
    if sc.peek() != Tok::Word {
        return Err("expected string for weekday".to_string());
    }
    let d = cheap_scan(&sc.text, WEEKDAYS)
        .ok_or_else(|| format!("\"{}\" is not a weekday", sc.text))?;
    sc.eat();
    Ok(d)
}

fn week_day_range(sc: &mut Scanner) -> Result<(usize, usize), String> {
    let begin = week_day(sc)?;
    if sc.peek() != Tok::Minus {
        return Ok((begin, begin));
    }
    sc.eat();
    let end = week_day(sc)?;
    if begin == end {
        return Err("found useless weekday range".to_string());
    }
    Ok((begin, end))
}

/// `hour[:minute[:second]]` as seconds of the day.
fn daytime(sc: &mut Scanner) -> Result<u32, String> {
    let h = range_number(sc, 0, 24, "hour specification")?;
    let mut m = 0;
    let mut s = 0;
    if sc.peek() == Tok::Colon {
        sc.eat();
        m = range_number(sc, 0, 59, "minute specification")?;
        if sc.peek() == Tok::Colon {
            sc.eat();
            s = range_number(sc, 0, 59, "seconds specification")?;
        }
    }
    if h == 24 && (m != 0 || s != 0) {
        return Err("daytimes may not be beyond 24:00".to_string());
    }
    Ok((h * 3600 + m * 60 + s) as u32)
}

/// Ranges as `[begin, end)`; one that ends before it begins wraps over midnight.
fn daytime_range_list(sc: &mut Scanner) -> Result<Daytimes, String> {
    let mut out = Vec::new();
    for (b, e) in list(sc, daytime_range)? {
        if b < e {
            out.push((b, e));
        } else {
            out.push((b, DAY));
            out.push((0, e));
        }
    }
    Ok(out)
}

fn daytime_range(sc: &mut Scanner) -> Result<(u32, u32), String> {
    let begin = daytime(sc)?;
    if sc.peek() != Tok::Minus {
        return Err("missing '-' in daytime range".to_string());
    }
    sc.eat();
    let end = daytime(sc)?;
    if begin == end {
        return Err("range begin is equal to end - use 0-24 instead".to_string());
    }
    Ok((begin, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CalendarState::*;

    fn cal(year: &str, week: &str) -> Calendar {
        Calendar::parse(&CalendarConfig {
            name: "c".into(),
            year: year.into(),
            week: week.into(),
        })
        .unwrap_or_else(|e| panic!("{year:?} {week:?}: {e}"))
    }

    fn err(year: &str, week: &str) -> String {
        Calendar::parse(&CalendarConfig {
            name: "cal25_bad".into(),
            year: year.into(),
            week: week.into(),
        })
        .expect_err("refused")
    }

    fn at(s: &str) -> DateTime {
        s.parse().expect("civil date time")
    }

    #[test]
    fn sge_refusals_have_sge_s_words() {
        // tests/compat/qconf/Acal-bad-*.txt, recorded from SGE 8.1.9.
        let y = |e: &str| format!("error in disabled_year of calendar \"{e}\": cal25_bad");
        let w = |e: &str| format!("error in disabled_week of calendar \"cal25_bad\": {e}");
        let cases = [
            (
                "32.1.2020",
                "NONE",
                y("\"32\" outside of range 1-31 of day"),
            ),
            (
                "1.13.2020",
                "NONE",
                y("\"13\" outside of range 1-12 of month"),
            ),
            (
                "1.1.2040",
                "NONE",
                y("\"2040\" outside of range 1970-2037 of year"),
            ),
            ("1.1", "NONE", y("missing \".\" after month")),
            (
                "2.1.2020-1.1.2020",
                "NONE",
                y("first yearday in range must be before second yearday"),
            ),
            ("1.1.2020=on=off", "NONE", y("unrecognized string \"=\"")),
            (
                "1.1.2020=bogus",
                "NONE",
                y("\"bogus\" is not a state specifier"),
            ),
            (
                "1.1.2020=25-26",
                "NONE",
                y("\"25\" outside of range 0-24 of hour specification"),
            ),
            (
                "1.1.2020=10-10",
                "NONE",
                y("range begin is equal to end - use 0-24 instead"),
            ),
            (
                "1.jan.2020=10:61-11",
                "NONE",
                y("\"61\" outside of range 0-59 of minute specification"),
            ),
            ("1.1.2020 x", "NONE", y("\"x\" is not a state specifier")),
            ("=on", "NONE", y("got \"=\" without daytime_range/state")),
            ("NONE", "mon-mon", w("found useless weekday range")),
            ("NONE", "funday", w("\"funday\" is not a weekday")),
            ("NONE", "mon=6", w("missing '-' in daytime range")),
            ("NONE", "mon=bogus", w("\"bogus\" is not a state specifier")),
            ("NONE", "24:30-1", w("daytimes may not be beyond 24:00")),
            ("NONE", "mon-fri=6-20=on=x", w("unrecognized token at end")),
            ("NONE", "mon,", w("expected string for weekday")),
            ("NONE", "7-", w("\"-\" is not a hour specification")),
        ];
        for (year, week, want) in cases {
            assert_eq!(err(year, week), want, "year {year:?} week {week:?}");
        }
        // What SGE took.
        cal("NONE", "on off");
        cal(
            "1.jan.2020,3.FEB.2021-5.3.2021=8:30-17:45:10=suspended",
            "tue-mon=12-11 Sat=on 9-17 off",
        );
        cal(
            "1.1.1999,6.1.1999,28.3.1999,30.3.1999-31.3.1999=on",
            "mon-fri=6-20",
        );
    }

    #[test]
    fn week_entries_overlap_as_the_man_page_says() {
        // calendar_conf(5): disabled 12-18 all week, except Tuesday 13-17.
        let c = cal("NONE", "12-18 tue=13-17=on");
        // 2026-11-24 is a Tuesday.
        assert_eq!(c.state_at_civil(at("2026-11-24T12:30")), Off);
        assert_eq!(c.state_at_civil(at("2026-11-24T13:00")), On);
        assert_eq!(c.state_at_civil(at("2026-11-24T16:59:59")), On);
        assert_eq!(c.state_at_civil(at("2026-11-24T17:00")), Off);
        assert_eq!(c.state_at_civil(at("2026-11-24T18:00")), On);
        assert_eq!(c.state_at_civil(at("2026-11-25T14:00")), Off);
        assert_eq!(c.state_at_civil(at("2026-11-25T11:59:59")), On);
        // suspended over off, on over suspended.
        let c = cal("NONE", "off 9-17=suspended 12-13=on");
        assert_eq!(c.state_at_civil(at("2026-11-25T08:00")), Off);
        assert_eq!(c.state_at_civil(at("2026-11-25T10:00")), Suspended);
        assert_eq!(c.state_at_civil(at("2026-11-25T12:10")), On);
    }

    #[test]
    fn ranges_wrap_over_midnight_and_the_week() {
        // calendar_conf(5)'s `day` calendar: closed at night on working days and all weekend.
        let c = cal("NONE", "mon-fri=20-6 sat-sun");
        assert_eq!(c.state_at_civil(at("2026-11-23T05:59:59")), Off); // Monday
        assert_eq!(c.state_at_civil(at("2026-11-23T06:00")), On);
        assert_eq!(c.state_at_civil(at("2026-11-23T20:00")), Off);
        assert_eq!(c.state_at_civil(at("2026-11-28T12:00")), Off); // Saturday
        let c = cal("NONE", "fri-mon");
        assert_eq!(c.state_at_civil(at("2026-11-29T12:00")), Off); // Sunday
        assert_eq!(c.state_at_civil(at("2026-11-24T12:00")), On); // Tuesday
        // year: 12-11 is off but for 11:00:00 to 11:59:59.
        let c = cal("12.3.2004=12-11=off", "NONE");
        assert_eq!(c.state_at_civil(at("2004-03-12T10:59:59")), Off);
        assert_eq!(c.state_at_civil(at("2004-03-12T11:00")), On);
        assert_eq!(c.state_at_civil(at("2004-03-12T12:00")), Off);
        assert_eq!(c.state_at_civil(at("2004-03-13T10:00")), On);
    }

    #[test]
    fn year_entries_that_hold_decide_alone() {
        // calendar_conf(5)'s `night`: enabled on holidays, closed 6-20 on working days.
        let c = cal("1.1.1999,6.1.1999,30.3.1999-31.3.1999=on", "mon-fri=6-20");
        assert_eq!(c.state_at_civil(at("1999-01-06T10:00")), On); // a Wednesday
        assert_eq!(c.state_at_civil(at("1999-01-07T10:00")), Off);
        assert_eq!(c.state_at_civil(at("1999-03-31T10:00")), On);
        // A year entry that does not hold at this time leaves it to the week entries (SGE's
        // state_at), whatever calendar_conf(5) says of a day with a year entry.
        let c = cal("1.1.2020=10-12=on", "off");
        assert_eq!(c.state_at_civil(at("2020-01-01T11:00")), On);
        assert_eq!(c.state_at_civil(at("2020-01-01T09:00")), Off);
        // Month names, any case, three letters or more.
        let c = cal("3.FEB.2021-5.mar.2021=suspended", "NONE");
        assert_eq!(c.state_at_civil(at("2021-03-05T23:00")), Suspended);
        assert_eq!(c.state_at_civil(at("2021-03-06T00:00")), On);
    }

    #[test]
    fn the_next_change_is_the_first_second_the_state_differs() {
        let tz = TimeZone::UTC;
        let t = |s: &str| {
            at(s)
                .to_zoned(TimeZone::UTC)
                .expect("zoned")
                .timestamp()
                .as_second()
        };
        let c = cal("NONE", "mon-fri=6-20");
        // Monday 2026-11-23.
        assert_eq!(
            c.next_change(t("2026-11-23T05:00"), &tz),
            Some(t("2026-11-23T06:00"))
        );
        assert_eq!(
            c.next_change(t("2026-11-23T06:00"), &tz),
            Some(t("2026-11-23T20:00"))
        );
        // Friday night: open until Monday 6:00.
        assert_eq!(
            c.next_change(t("2026-11-27T21:00"), &tz),
            Some(t("2026-11-30T06:00"))
        );
        // Adjacent entries of the same state are one stretch.
        let c = cal("NONE", "mon-fri=6-20 fri=20-22");
        assert_eq!(
            c.next_change(t("2026-11-27T19:00"), &tz),
            Some(t("2026-11-27T22:00"))
        );
        // Never changes.
        assert_eq!(
            cal("NONE", "off").next_change(t("2026-11-27T19:00"), &tz),
            None
        );
        assert_eq!(
            cal("NONE", "NONE").next_change(t("2026-11-27T19:00"), &tz),
            None
        );
        // A year entry years ahead is found without walking every day.
        let c = cal("24.12.2030-26.12.2030", "NONE");
        assert_eq!(
            c.next_change(t("2026-11-27T19:00"), &tz),
            Some(t("2030-12-24T00:00"))
        );
        assert_eq!(
            c.next_change(t("2030-12-24T00:00"), &tz),
            Some(t("2030-12-27T00:00"))
        );
        assert_eq!(c.next_change(t("2030-12-27T00:00"), &tz), None);
        // A day that does not exist (31.2.) matches none.
        let c = cal("31.2.2027", "NONE");
        assert_eq!(c.next_change(t("2027-01-01T00:00"), &tz), None);
    }

    #[test]
    fn local_time_is_the_time_zone_s() {
        let tz = TimeZone::get("Europe/Berlin").expect("tzdata");
        let c = cal("NONE", "8-17");
        // 07:30 UTC is 08:30 in Berlin in November.
        let epoch = at("2026-11-25T07:30")
            .to_zoned(TimeZone::UTC)
            .expect("zoned")
            .timestamp()
            .as_second();
        assert_eq!(c.state_at(epoch, &tz), Off);
        assert_eq!(c.state_at(epoch, &TimeZone::UTC), On);
        assert_eq!(c.next_change(epoch, &tz), Some(epoch + 8 * 3600 + 1800));
    }
}
