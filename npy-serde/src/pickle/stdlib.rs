//! The standard library's data types a pickle may hold: `datetime.date`, `datetime.time`,
//! `datetime.datetime`, `datetime.timedelta`, `datetime.timezone` and `decimal.Decimal`, as
//! checked values (constructors that refuse what Python refuses) and their text forms
//! (`isoformat()`, `tzname()`, `str(Decimal)`). `stdstate.rs` builds them from the arguments
//! CPython's pickler writes for them, never by importing or calling anything.
//!
//! What CPython writes (`pickletools.dis`), protocols 0-5:
//!
//! | value | pickled as |
//! |---|---|
//! | `date` | `datetime.date(state)`: 4 bytes, year (2, big-endian), month, day |
//! | `time` | `datetime.time(state[, tzinfo])`: 6 bytes, hour, minute, second, microsecond (3, big-endian); at protocol 4 and up the hour's high bit is `fold` |
//! | `datetime` | `datetime.datetime(state[, tzinfo])`: 10 bytes, a date's 4 then a time's 6; at protocol 4 and up the month's high bit is `fold` |
//! | `timedelta` | `datetime.timedelta(days, seconds, microseconds)` |
//! | `timezone` | `datetime.timezone(offset[, name])`, `offset` a `timedelta`; `timezone.utc` is `timezone(timedelta(0))` |
//! | `Decimal` | `decimal.Decimal(str)` |
//!
//! At protocols 0-2 Python 3 writes the `bytes` of a state through `_codecs.encode(str,
//! 'latin1')`, which reads as bytes; a Python 2 pickle writes them as a Python 2 `str`, which
//! reads as bytes or as a `str` of Latin-1 code points depending on the encoding chosen: both
//! are taken, as CPython's constructors take both.

/// The standard library types this reader builds, each from the global that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StdType {
    Date,
    Time,
    DateTime,
    TimeDelta,
    TimeZone,
    Decimal,
}

impl StdType {
    /// The type named by `module.name`, if it is one of these.
    pub(crate) fn of(module: &str, name: &str) -> Option<StdType> {
        Some(match (module, name) {
            ("datetime", "date") => StdType::Date,
            ("datetime", "time") => StdType::Time,
            ("datetime", "datetime") => StdType::DateTime,
            ("datetime", "timedelta") => StdType::TimeDelta,
            ("datetime", "timezone") => StdType::TimeZone,
            ("decimal", "Decimal") => StdType::Decimal,
            _ => return None,
        })
    }

    /// Its module and name.
    pub(crate) fn name(self) -> (&'static str, &'static str) {
        match self {
            StdType::Date => ("datetime", "date"),
            StdType::Time => ("datetime", "time"),
            StdType::DateTime => ("datetime", "datetime"),
            StdType::TimeDelta => ("datetime", "timedelta"),
            StdType::TimeZone => ("datetime", "timezone"),
            StdType::Decimal => ("decimal", "Decimal"),
        }
    }
}

/// A `datetime.date` (`1 <= year <= 9999`, a valid month and day).
///
/// ```
/// use npy_serde::pickle::PyDate;
/// let d = PyDate::new(2020, 2, 29)?;
/// assert_eq!(d.isoformat(), "2020-02-29");
/// assert!(PyDate::new(2021, 2, 29).is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PyDate {
    /// 1 to 9999.
    pub year: u16,
    /// 1 to 12.
    pub month: u8,
    /// 1 to the month's length.
    pub day: u8,
}

/// A `datetime.time`: a time of day, its `fold` (which of two equal wall times, at a clock
/// turned back) and its time zone, if any.
///
/// ```
/// use npy_serde::pickle::PyTime;
/// let t = PyTime::new(1, 2, 3, 4)?;
/// assert_eq!(t.isoformat(), "01:02:03.000004");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PyTime {
    /// 0 to 23.
    pub hour: u8,
    /// 0 to 59.
    pub minute: u8,
    /// 0 to 59.
    pub second: u8,
    /// 0 to 999999.
    pub microsecond: u32,
    /// Python's `fold` (0 or 1).
    pub fold: bool,
    /// The `tzinfo`: `None`, or a fixed offset (the only `tzinfo` this reader reads).
    pub tzinfo: Option<PyTimeZone>,
}

/// A `datetime.datetime`: a date and a time of day (with its `fold` and time zone).
///
/// ```
/// use npy_serde::pickle::{PyDate, PyDateTime, PyTime, PyTimeZone};
/// let mut time = PyTime::new(3, 4, 5, 0)?;
/// time.tzinfo = Some(PyTimeZone::utc());
/// let dt = PyDateTime { date: PyDate::new(2020, 1, 2)?, time };
/// assert_eq!(dt.isoformat(), "2020-01-02T03:04:05+00:00");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PyDateTime {
    /// The date.
    pub date: PyDate,
    /// The time of day, its `fold` and `tzinfo`.
    pub time: PyTime,
}

/// A `datetime.timedelta`, normalised as Python keeps it: `-999999999 <= days <= 999999999`,
/// `0 <= seconds < 86400`, `0 <= microseconds < 1000000`.
///
/// ```
/// use npy_serde::pickle::PyTimeDelta;
/// // timedelta(seconds=-1)
/// let d = PyTimeDelta::new(0, -1, 0)?;
/// assert_eq!((d.days, d.seconds, d.microseconds), (-1, 86399, 0));
/// assert_eq!(d.total_seconds(), -1.0);
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PyTimeDelta {
    /// -999999999 to 999999999.
    pub days: i32,
    /// 0 to 86399.
    pub seconds: u32,
    /// 0 to 999999.
    pub microseconds: u32,
}

/// A `datetime.timezone`: a fixed offset from UTC, strictly within a day, and the name it was
/// given, if any (`timezone.utc` is the offset 0 without a name).
///
/// ```
/// use npy_serde::pickle::{PyTimeDelta, PyTimeZone};
/// let ist = PyTimeZone::new(PyTimeDelta::new(0, 19800, 0)?, None)?;
/// assert_eq!(ist.tzname(), "UTC+05:30");
/// assert_eq!(PyTimeZone::utc().tzname(), "UTC");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PyTimeZone {
    /// The offset from UTC.
    pub offset: PyTimeDelta,
    /// The name given to `timezone(offset, name)`.
    pub name: Option<String>,
}

const MAX_DAYS: i64 = 999_999_999;
const US_PER_DAY: i128 = 86_400_000_000;

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl PyDate {
    /// A date, checked as `datetime.date(year, month, day)` checks it.
    pub fn new(year: u16, month: u8, day: u8) -> Result<PyDate, String> {
        if !(1..=9999).contains(&year) {
            return Err(format!("year {year} is out of range (1 to 9999)"));
        }
        if !(1..=12).contains(&month) {
            return Err(format!("month {month} is out of range (1 to 12)"));
        }
        let last = days_in_month(year, month);
        if !(1..=last).contains(&day) {
            return Err(format!(
                "day {day} is out of range for {year:04}-{month:02} (1 to {last})"
            ));
        }
        Ok(PyDate { year, month, day })
    }

    /// `date.isoformat()`: `YYYY-MM-DD`.
    pub fn isoformat(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl PyTime {
    /// A naive time of day (`fold` 0), checked as `datetime.time(..)` checks it.
    pub fn new(hour: u8, minute: u8, second: u8, microsecond: u32) -> Result<PyTime, String> {
        if hour > 23 {
            return Err(format!("hour {hour} is out of range (0 to 23)"));
        }
        if minute > 59 {
            return Err(format!("minute {minute} is out of range (0 to 59)"));
        }
        if second > 59 {
            return Err(format!("second {second} is out of range (0 to 59)"));
        }
        if microsecond > 999_999 {
            return Err(format!(
                "microsecond {microsecond} is out of range (0 to 999999)"
            ));
        }
        Ok(PyTime {
            hour,
            minute,
            second,
            microsecond,
            fold: false,
            tzinfo: None,
        })
    }

    /// `time.isoformat()`: `HH:MM:SS`, `.ffffff` if there are microseconds, then the UTC
    /// offset (`+05:30`) if the time has a time zone.
    pub fn isoformat(&self) -> String {
        let mut s = format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second);
        if self.microsecond != 0 {
            s.push_str(&format!(".{:06}", self.microsecond));
        }
        if let Some(tz) = &self.tzinfo {
            s.push_str(&tz.utcoffset_text());
        }
        s
    }
}

impl PyDateTime {
    /// `datetime.isoformat()`: the date, `T`, the time's `isoformat()`.
    pub fn isoformat(&self) -> String {
        format!("{}T{}", self.date.isoformat(), self.time.isoformat())
    }
}

impl PyTimeDelta {
    /// `timedelta(days, seconds, microseconds)`, normalised as Python normalises it, refused
    /// past Python's range (`timedelta.min` to `timedelta.max`).
    pub fn new(days: i64, seconds: i64, microseconds: i64) -> Result<PyTimeDelta, String> {
        // i64 inputs: |days * 86400e6| < 2^127, no overflow in i128.
        let total = i128::from(days) * US_PER_DAY
            + i128::from(seconds) * 1_000_000
            + i128::from(microseconds);
        Self::from_microseconds(total).ok_or_else(|| {
            format!(
                "timedelta(days={days}, seconds={seconds}, microseconds={microseconds}) is out \
                 of range (|days| <= 999999999)"
            )
        })
    }

    /// The timedelta of `total` microseconds, if it is within Python's range.
    fn from_microseconds(total: i128) -> Option<PyTimeDelta> {
        let days = total.div_euclid(US_PER_DAY);
        let rest = total.rem_euclid(US_PER_DAY);
        if days.abs() > i128::from(MAX_DAYS) {
            return None;
        }
        Some(PyTimeDelta {
            days: i32::try_from(days).ok()?,
            seconds: u32::try_from(rest / 1_000_000).ok()?,
            microseconds: u32::try_from(rest % 1_000_000).ok()?,
        })
    }

    /// The whole duration in microseconds.
    pub fn total_microseconds(&self) -> i128 {
        i128::from(self.days) * US_PER_DAY
            + i128::from(self.seconds) * 1_000_000
            + i128::from(self.microseconds)
    }

    /// The duration in seconds, exactly, as decimal text: `86405.000007`, `-1`, `0.5`.
    pub fn total_seconds_text(&self) -> String {
        let t = self.total_microseconds();
        let sign = if t < 0 { "-" } else { "" };
        let a = t.unsigned_abs();
        let (whole, frac) = (a / 1_000_000, a % 1_000_000);
        if frac == 0 {
            format!("{sign}{whole}")
        } else {
            let f = format!("{frac:06}");
            format!("{sign}{whole}.{}", f.trim_end_matches('0'))
        }
    }

    /// `timedelta.total_seconds()`: the duration in seconds, correctly rounded to an `f64`.
    pub fn total_seconds(&self) -> f64 {
        // The exact decimal text, parsed: correctly rounded, as Python's int division is.
        self.total_seconds_text().parse().unwrap_or(f64::NAN)
    }
}

impl PyTimeZone {
    /// `datetime.timezone.utc`.
    pub fn utc() -> PyTimeZone {
        PyTimeZone {
            offset: PyTimeDelta {
                days: 0,
                seconds: 0,
                microseconds: 0,
            },
            name: None,
        }
    }

    /// `timezone(offset, name)`, checked as Python checks it: the offset strictly between
    /// `-timedelta(hours=24)` and `timedelta(hours=24)`.
    pub fn new(offset: PyTimeDelta, name: Option<String>) -> Result<PyTimeZone, String> {
        if offset.total_microseconds().abs() >= US_PER_DAY {
            return Err(format!(
                "the offset of a timezone must be strictly between -24 and 24 hours, not {} s",
                offset.total_seconds_text()
            ));
        }
        Ok(PyTimeZone { offset, name })
    }

    /// Whether this is `timezone.utc` (the offset 0 without a name).
    pub fn is_utc(&self) -> bool {
        self.name.is_none() && self.offset.total_microseconds() == 0
    }

    /// The offset as `isoformat()` writes it: `+HH:MM`, with `:SS` and `.ffffff` when needed.
    pub fn utcoffset_text(&self) -> String {
        let t = self.offset.total_microseconds();
        let sign = if t < 0 { '-' } else { '+' };
        let a = t.unsigned_abs();
        let (secs, us) = (a / 1_000_000, a % 1_000_000);
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        if us != 0 {
            format!("{sign}{h:02}:{m:02}:{s:02}.{us:06}")
        } else if s != 0 {
            format!("{sign}{h:02}:{m:02}:{s:02}")
        } else {
            format!("{sign}{h:02}:{m:02}")
        }
    }

    /// `tzname()` (and `str()`): the name given, else `UTC` for the offset 0, else
    /// `UTC+05:30` and the like.
    pub fn tzname(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None if self.offset.total_microseconds() == 0 => "UTC".into(),
            None => format!("UTC{}", self.utcoffset_text()),
        }
    }
}

/// The text `str(Decimal(text))` gives, for text in Python's decimal syntax (surrounding
/// whitespace allowed; digits ASCII, no `_` grouping): `'001.500'` is `1.500`, `'1e-7'` is
/// `1E-7`, `'inf'` is `Infinity`, `'-snan012'` is `-sNaN12`.
pub(crate) fn decimal_text(text: &str) -> Result<String, String> {
    let refuse = || format!("{text:?} is not a decimal number (decimal.Decimal)");
    let t = text.trim();
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let sign = if negative { "-" } else { "" };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Ok(format!("{sign}Infinity"));
    }
    let nan = lower
        .strip_prefix("snan")
        .map(|d| ("sNaN", d))
        .or_else(|| lower.strip_prefix("nan").map(|d| ("NaN", d)));
    if let Some((kind, diag)) = nan {
        if !diag.bytes().all(|c| c.is_ascii_digit()) {
            return Err(refuse());
        }
        return Ok(format!("{sign}{kind}{}", diag.trim_start_matches('0')));
    }
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return Err(refuse());
    }
    let exp: i128 = match exp {
        None => 0,
        Some(e) => {
            let (neg, d) = match e.as_bytes().first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            let d = d.trim_start_matches('0');
            if !digits(d) || (d.is_empty() && !e.ends_with('0')) {
                return Err(refuse());
            }
            // Python's decimal refuses exponents past 10^18 (InvalidOperation).
            if d.len() > 18 {
                return Err(format!("{text:?}: the exponent is out of range"));
            }
            let v: i128 = if d.is_empty() {
                0
            } else {
                d.parse().map_err(|_| refuse())?
            };
            if neg {
                -v
            } else {
                v
            }
        }
    };
    let coeff = format!("{int}{frac}");
    let coeff = match coeff.trim_start_matches('0') {
        "" => "0",
        c => c,
    };
    // Lengths are below the input's length: no overflow in i128.
    let exp = exp - frac.len() as i128;
    let n = coeff.len() as i128;
    // `Decimal.__str__` (scientific notation).
    let left = exp + n;
    let dot = if exp <= 0 && left > -6 { left } else { 1 };
    let mut out = String::from(sign);
    if dot <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-dot) as usize));
        out.push_str(coeff);
    } else if dot >= n {
        // Only reached with exp > 0 (dot = 1 = n) or exp = 0 (dot = n): no padding.
        out.push_str(coeff);
    } else {
        out.push_str(&coeff[..dot as usize]);
        out.push('.');
        out.push_str(&coeff[dot as usize..]);
    }
    if left != dot {
        out.push_str(&format!("E{:+}", left - dot));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_text_is_what_str_of_decimal_gives() {
        // Python 3.11: str(Decimal(s)).
        for (s, want) in [
            ("1.10", "1.10"),
            ("1.1e1", "11"),
            ("-0", "-0"),
            ("0E-7", "0E-7"),
            ("001.500", "1.500"),
            (".5", "0.5"),
            ("5.", "5"),
            ("1e-7", "1E-7"),
            ("123456789e-3", "123456.789"),
            ("1E+3", "1E+3"),
            ("nan", "NaN"),
            ("-snan012", "-sNaN12"),
            ("inf", "Infinity"),
            ("-Infinity", "-Infinity"),
            ("NaN0", "NaN"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1E-7"),
            (" 7 ", "7"),
            ("0.000", "0.000"),
            ("1e0", "1"),
            ("12e+00", "12"),
            ("-1.5e-3", "-0.0015"),
        ] {
            assert_eq!(decimal_text(s).as_deref(), Ok(want), "{s}");
        }
        for s in [
            "",
            ".",
            "e5",
            "1e",
            "1e+",
            "1.2.3",
            "--1",
            "nanx",
            "1_000",
            "١",
            "1e99999999999999999999",
        ] {
            assert!(decimal_text(s).is_err(), "{s}");
        }
    }
}
