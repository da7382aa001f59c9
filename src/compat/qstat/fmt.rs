//! Fast building blocks for the tables: padding without per-character work for ASCII text,
//! and date formatting that calls the time zone database once per local hour instead of once
//! per line (`qstat` of 100,000 jobs prints 100,000 dates).

use crate::time;

const SPACES: &str = "                                                                ";

/// Appends `n` spaces.
pub(crate) fn spaces(out: &mut String, mut n: usize) {
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// `%-W.Ws`: left-aligned, padded and cut to `width` characters.
pub(crate) fn pad(out: &mut String, s: &str, width: usize) {
    if s.is_ascii() {
        let take = s.len().min(width);
        out.push_str(&s[..take]);
        spaces(out, width - take);
        return;
    }
    let mut n = 0;
    for c in s.chars() {
        if n == width {
            break;
        }
        out.push(c);
        n += 1;
    }
    spaces(out, width - n);
}

/// Escapes text for XML, copying runs without special characters whole.
pub(crate) fn esc(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let rep = match b {
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'&' => "&amp;",
            b'"' => "&quot;",
            b'\'' => "&apos;",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        out.push_str(rep);
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// Formats SGE's dates, remembering the local hour of the last one: within that hour only
/// minutes and seconds change (time zone offsets change on hour boundaries).
#[derive(Debug, Default)]
pub(crate) struct Dates {
    /// Epoch second where the cached local hour starts, and its two prefixes:
    /// `MM/DD/YYYY HH:` and `YYYY-MM-DDTHH:`.
    hour: Option<(i64, String, String)>,
}

impl Dates {
    fn hour(&mut self, epoch: i64) -> (i64, &str, &str) {
        let hit =
            matches!(&self.hour, Some((start, _, _)) if epoch >= *start && epoch < start + 3600);
        if !hit {
            let plain = time::qstat_date(epoch);
            let iso = time::xml_date(epoch);
            // `MM/DD/YYYY HH:MM:SS`: minutes at 14..16, seconds at 17..19.
            let mm: i64 = plain[14..16].parse().unwrap_or(0);
            let ss: i64 = plain[17..19].parse().unwrap_or(0);
            let start = epoch - mm * 60 - ss;
            self.hour = Some((start, plain[..14].to_string(), iso[..14].to_string()));
        }
        match &self.hour {
            Some((start, p, i)) => (*start, p.as_str(), i.as_str()),
            None => (epoch, "", ""),
        }
    }

    fn tail(out: &mut String, offset: i64) {
        let (m, s) = (offset / 60, offset % 60);
        let digit = |n: i64| char::from(b'0' + n as u8);
        out.extend([
            digit(m / 10),
            digit(m % 10),
            ':',
            digit(s / 10),
            digit(s % 10),
        ]);
    }

    /// `11/21/2026 22:45:02` (`qstat`'s submit/start column).
    pub(crate) fn plain(&mut self, out: &mut String, epoch: i64) {
        let (start, prefix, _) = self.hour(epoch);
        out.push_str(prefix);
        Self::tail(out, epoch - start);
    }

    /// `2026-11-21T22:45:02` (`qstat -xml`).
    pub(crate) fn iso(&mut self, out: &mut String, epoch: i64) {
        let (start, _, prefix) = self.hour(epoch);
        out.push_str(prefix);
        Self::tail(out, epoch - start);
    }
}

/// Appends `n` right-aligned in `width` columns (`{n:width}`), without the formatting
/// machinery: the tables print several numbers a line.
pub(crate) fn right(out: &mut String, n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let len = digits.len() - at;
    if len < width {
        spaces(out, width - len);
    }
    // ASCII digits pushed as they are: cheaper than a UTF-8 check of the few bytes.
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// `n` as `{n}`.
pub(crate) fn number(out: &mut String, n: u64) {
    right(out, n, 0);
}

/// Appends `x` as `{x:7.5}` when that is plain to compute: a non-negative `x` whose
/// hundred-thousandths are not near a half, so that rounding the product `x * 1e5` (off
/// by less than a millionth) rounds as the exact value does. Returns false, and appends
/// nothing, for the others (halves, negative, huge, NaN), which `fmt` writes.
fn fixed5(out: &mut String, x: f64) -> bool {
    if !(x.is_sign_positive() && x < 1e9) {
        return false;
    }
    let scaled = x * 100_000.0;
    let rounded = scaled.round();
    if (scaled - rounded).abs() > 0.49 {
        return false;
    }
    let n = rounded as u64;
    let whole = n / 100_000;
    right(out, whole, 1);
    out.push('.');
    let frac = n % 100_000;
    let digits = [10_000, 1_000, 100, 10, 1].map(|p| char::from(b'0' + (frac / p % 10) as u8));
    out.extend(digits);
    true
}

/// The last priority written as `{:7.5}` and its text: a listing's neighbouring jobs mostly
/// share their priority (all zeros before the scheduler's first pass), and a float's
/// formatting is the dearest part of a line.
#[derive(Debug, Default)]
pub(crate) struct LastPriority {
    /// The bits of the last value and its text (the string reused, not reallocated).
    bits: Option<u64>,
    text: String,
}

impl LastPriority {
    /// Appends `x` as `{:7.5}`.
    pub(crate) fn write(&mut self, out: &mut String, x: f64) {
        use std::fmt::Write;
        let bits = x.to_bits();
        if self.bits != Some(bits) {
            self.text.clear();
            // Below 10 the number fills the 7 columns; from 10 on it is wider.
            if !fixed5(&mut self.text, x) {
                let _ = write!(self.text, "{x:7.5}");
            }
            self.bits = Some(bits);
        }
        out.push_str(&self.text);
    }
}

/// What every line of a table shares: the view it is drawn from and the caches.
pub(crate) struct LineCx<'v, 'a> {
    pub view: &'v super::View<'a>,
    pub dates: Dates,
    pub prio: LastPriority,
}

impl<'v, 'a> LineCx<'v, 'a> {
    pub(crate) fn new(view: &'v super::View<'a>) -> Self {
        LineCx {
            view,
            dates: Dates::default(),
            prio: LastPriority::default(),
        }
    }
}

/// Below this many rows a listing is formatted on the calling thread alone: starting a
/// thread costs more than it saves.
const PARALLEL_ROWS: usize = 4096;

/// Appends `line(row)` for every row of `rows`, in order, to `out`. Large listings are cut
/// into one run of consecutive rows per core, each formatted into a string of its own (with
/// its own [`LineCx`]: the date cache is per thread) by a scoped thread, the first run
/// directly into `out`; the runs are then appended in order, so the text is the same bytes
/// as one thread would write. `bytes_per_row` sizes each run's string.
pub(crate) fn rows_in_order<'v, 'a, R, F>(
    out: &mut String,
    view: &'v super::View<'a>,
    rows: &[R],
    bytes_per_row: usize,
    line: F,
) where
    R: Sync,
    F: Fn(&mut String, &R, &mut LineCx<'v, 'a>) + Sync,
{
    let threads = if rows.len() < PARALLEL_ROWS {
        1
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8)
    };
    let run = |out: &mut String, part: &[R]| {
        let mut cx = LineCx::new(view);
        for row in part {
            line(out, row, &mut cx);
        }
    };
    if threads == 1 {
        return run(out, rows);
    }
    let per = rows.len().div_ceil(threads);
    let mut parts = rows.chunks(per);
    let first = parts.next().unwrap_or(&[]);
    out.reserve(rows.len() * bytes_per_row);
    std::thread::scope(|scope| {
        let run = &run;
        let others: Vec<_> = parts
            .map(|part| {
                scope.spawn(move || {
                    let mut s = String::with_capacity(part.len() * bytes_per_row);
                    run(&mut s, part);
                    s
                })
            })
            .collect();
        run(out, first);
        for t in others {
            match t.join() {
                Ok(s) => out.push_str(&s),
                // A formatting thread that panicked: let the panic go on, as it would have
                // on one thread.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_dates_equal_direct_ones() {
        let mut d = Dates::default();
        let base = 1795301101;
        for e in [
            base,
            base + 1,
            base + 59,
            base + 3599,
            base + 3600,
            base - 7200,
            base + 86_399,
        ] {
            let mut a = String::new();
            d.plain(&mut a, e);
            assert_eq!(a, time::qstat_date(e));
            let mut b = String::new();
            d.iso(&mut b, e);
            assert_eq!(b, time::xml_date(e));
        }
    }

    #[test]
    fn numbers_are_formatted_as_std_does() {
        let mut last = LastPriority::default();
        for n in [0u64, 7, 10, 999_999, 1_000_000, 12_345_678, u64::MAX] {
            for w in [0, 5, 7] {
                let mut s = String::new();
                right(&mut s, n, w);
                assert_eq!(s, format!("{n:w$}"));
            }
        }
        for x in [
            0.0,
            -0.0,
            0.5,
            0.5,
            0.123456789,
            1.0,
            -0.25,
            12345.678,
            f64::NAN,
            0.5,
            0.000005,
            0.000015,
            0.100005,
            0.015625,
            2.5e-6,
            0.99999999,
            9.999995,
            1e9,
            1e300,
            f64::INFINITY,
        ] {
            let mut s = String::new();
            last.write(&mut s, x);
            assert_eq!(s, format!("{x:7.5}"), "{x:e}");
        }
    }

    proptest::proptest! {
        /// The plain path of `{:7.5}` writes what `fmt` writes, for priorities as the
        /// scheduler makes them (0 to 1, some beyond) and for any float.
        #[test]
        fn priorities_are_written_as_fmt_does(
            a in 0.0f64..1.0,
            b in 0.0f64..20_000.0,
            steps in 0u32..200_000,
            any in proptest::num::f64::ANY,
        ) {
            let half_steps = f64::from(steps) / 200_000.0;
            for x in [a, b, f64::from(steps) / 100_000.0, half_steps, any] {
                let mut s = String::new();
                LastPriority::default().write(&mut s, x);
                proptest::prop_assert_eq!(s, format!("{x:7.5}"));
            }
        }
    }

    #[test]
    fn padding_and_escaping() {
        let mut s = String::new();
        pad(&mut s, "embedded_name", 10);
        pad(&mut s, "ä", 3);
        esc(&mut s, "a<b&'c'");
        assert_eq!(s, "embedded_nä  a&lt;b&amp;&apos;c&apos;");
    }
}
