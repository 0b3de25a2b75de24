//! The standard library's values (`stdlib.rs`) built from the arguments CPython's pickler
//! writes for them (the table in `stdlib.rs`): `REDUCE` of `datetime.date` and its kin, as
//! data, every field checked; nothing is imported or called.

use super::stdlib::{decimal_text, PyDate, PyDateTime, PyTime, PyTimeDelta, PyTimeZone, StdType};
use super::value::PyValue;

/// A state of `bytes` (or a `str` of Latin-1 code points, from a Python 2 pickle).
fn state_bytes(v: Option<&PyValue>) -> Option<Vec<u8>> {
    match v? {
        PyValue::Bytes(b) => Some(b.clone()),
        PyValue::Str(s) => s.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect(),
        _ => None,
    }
}

/// A `tzinfo` argument: absent (`None` here) or `None`, or a `timezone`; `Some(None)` is an
/// argument that is not a plain value (a list, a dict, an array), refused.
fn tzinfo(v: Option<Option<&PyValue>>, what: &str) -> Result<Option<PyTimeZone>, String> {
    match v {
        None | Some(Some(PyValue::None)) => Ok(None),
        Some(Some(PyValue::TimeZone(tz))) => Ok(Some(tz.clone())),
        Some(Some(other)) => Err(format!(
            "the tzinfo of a {what} is a {}: only datetime.timezone (a fixed offset) is read",
            other.type_name()
        )),
        Some(None) => Err(format!(
            "the tzinfo of a {what} is a container: only datetime.timezone (a fixed offset) \
             is read"
        )),
    }
}

/// A time of day from its 6 state bytes (fold in the hour's high bit).
fn time_of(b: &[u8]) -> Result<PyTime, String> {
    let us = (u32::from(b[3]) << 16) | (u32::from(b[4]) << 8) | u32::from(b[5]);
    let mut t = PyTime::new(b[0] & 0x7f, b[1], b[2], us)?;
    t.fold = b[0] & 0x80 != 0;
    Ok(t)
}

/// A date from its 4 state bytes.
fn date_of(b: &[u8]) -> Result<PyDate, String> {
    PyDate::new((u16::from(b[0]) << 8) | u16::from(b[1]), b[2], b[3])
}

/// `ty(*args)`, as data: the value CPython would build, or why it is refused.
pub(crate) fn reduce(ty: StdType, args: &[Option<&PyValue>]) -> Result<PyValue, String> {
    let (module, name) = ty.name();
    let what = format!("{module}.{name}");
    let arg = |i: usize| args.get(i).copied().flatten();
    let wrong = || {
        format!(
            "unexpected arguments to {what} ({} of them): only the state CPython pickles is read",
            args.len()
        )
    };
    let bad_state = |e: String| format!("an invalid {what} state: {e}");
    Ok(match ty {
        StdType::Date => match (state_bytes(arg(0)), args.len()) {
            (Some(b), 1) if b.len() == 4 => PyValue::Date(date_of(&b).map_err(bad_state)?),
            _ => return Err(wrong()),
        },
        StdType::Time => match (state_bytes(arg(0)), args.len()) {
            (Some(b), 1 | 2) if b.len() == 6 => {
                let mut t = time_of(&b).map_err(bad_state)?;
                t.tzinfo = tzinfo(args.get(1).copied(), &what)?;
                PyValue::Time(t)
            }
            _ => return Err(wrong()),
        },
        StdType::DateTime => match (state_bytes(arg(0)), args.len()) {
            (Some(b), 1 | 2) if b.len() == 10 => {
                // The fold bit is the month's high bit.
                let fold = b[2] & 0x80 != 0;
                let date = date_of(&[b[0], b[1], b[2] & 0x7f, b[3]]).map_err(bad_state)?;
                let mut time = time_of(&b[4..]).map_err(bad_state)?;
                time.fold = fold;
                time.tzinfo = tzinfo(args.get(1).copied(), &what)?;
                PyValue::DateTime(PyDateTime { date, time })
            }
            _ => return Err(wrong()),
        },
        StdType::TimeDelta => {
            if args.len() > 3 {
                return Err(wrong());
            }
            let mut n = [0i64; 3];
            for (i, slot) in n.iter_mut().enumerate().take(args.len()) {
                *slot = match arg(i) {
                    Some(PyValue::Int(v)) => *v,
                    Some(PyValue::Bool(b)) => i64::from(*b),
                    Some(other) => {
                        return Err(format!(
                            "argument {i} of {what} is a {}: only int is read",
                            other.type_name()
                        ))
                    }
                    None => return Err(wrong()),
                };
            }
            PyValue::TimeDelta(PyTimeDelta::new(n[0], n[1], n[2])?)
        }
        StdType::TimeZone => {
            let name = match (arg(1), args.len()) {
                (_, 1) => None,
                (Some(PyValue::Str(s)), 2) => Some(s.clone()),
                _ => return Err(wrong()),
            };
            match arg(0) {
                Some(PyValue::TimeDelta(d)) => PyValue::TimeZone(PyTimeZone::new(*d, name)?),
                _ => return Err(wrong()),
            }
        }
        StdType::Decimal => match (arg(0), args.len()) {
            (Some(PyValue::Str(s)), 1) => PyValue::Decimal(decimal_text(s)?),
            (Some(PyValue::Int(i)), 1) => PyValue::Decimal(i.to_string()),
            (Some(PyValue::BigInt(i)), 1) => PyValue::Decimal(i.clone()),
            _ => return Err(wrong()),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_checked_field_by_field() {
        let b = |v: &[u8]| PyValue::Bytes(v.to_vec());
        let date = |v: &[u8]| reduce(StdType::Date, &[Some(&b(v))]);
        assert_eq!(
            date(&[7, 228, 2, 29]),
            Ok(PyValue::Date(PyDate {
                year: 2020,
                month: 2,
                day: 29
            }))
        );
        for (state, part) in [
            (&[7, 229, 2, 29][..], "day 29"),
            (&[7, 228, 13, 1], "month 13"),
            (&[7, 228, 0x81, 1], "month 129"),
            (&[0, 0, 1, 1], "year 0"),
            (&[39, 16, 1, 1], "year 10000"),
        ] {
            let e = date(state).unwrap_err();
            assert!(e.contains(part), "{e}");
        }
        assert!(date(&[7, 228, 2]).is_err());
        let time = |v: &[u8]| reduce(StdType::Time, &[Some(&b(v))]);
        assert!(time(&[24, 0, 0, 0, 0, 0]).unwrap_err().contains("hour 24"));
        assert!(time(&[1, 60, 0, 0, 0, 0])
            .unwrap_err()
            .contains("minute 60"));
        assert!(time(&[1, 0, 60, 0, 0, 0])
            .unwrap_err()
            .contains("second 60"));
        assert!(time(&[1, 0, 0, 0x0f, 0x42, 0x40])
            .unwrap_err()
            .contains("microsecond 1000000"));
        let PyValue::Time(t) = time(&[0x81, 2, 3, 0, 0, 4]).unwrap() else {
            panic!("a time")
        };
        assert_eq!((t.hour, t.fold, t.microsecond), (1, true, 4));
        // A datetime's fold is the month's high bit; a Latin-1 str state reads as bytes.
        let s = PyValue::Str("\u{7}\u{e4}\u{81}\u{2}\u{3}\u{4}\u{5}\0\0\u{6}".into());
        let PyValue::DateTime(dt) =
            reduce(StdType::DateTime, &[Some(&s), Some(&PyValue::None)]).unwrap()
        else {
            panic!("a datetime")
        };
        assert_eq!(dt.isoformat(), "2020-01-02T03:04:05.000006");
        assert!(dt.time.fold);
        let tz = PyValue::Int(3);
        let e = reduce(StdType::DateTime, &[Some(&s), Some(&tz)]).unwrap_err();
        assert!(e.contains("tzinfo"), "{e}");
        let e = reduce(StdType::DateTime, &[Some(&s), None]).unwrap_err();
        assert!(e.contains("tzinfo"), "{e}");
        let wide = PyValue::Str("\u{100}".repeat(10));
        assert!(reduce(StdType::DateTime, &[Some(&wide)]).is_err());
    }

    #[test]
    fn timedeltas_normalise_and_timezones_stay_within_a_day() {
        let i = PyValue::Int;
        let td = |d, s, u| reduce(StdType::TimeDelta, &[Some(&i(d)), Some(&i(s)), Some(&i(u))]);
        assert_eq!(
            td(0, 0, -1),
            Ok(PyValue::TimeDelta(PyTimeDelta {
                days: -1,
                seconds: 86399,
                microseconds: 999_999
            }))
        );
        assert!(td(1_000_000_000, 0, 0)
            .unwrap_err()
            .contains("out of range"));
        assert!(td(i64::MAX, i64::MAX, i64::MAX).is_err());
        assert!(td(i64::MIN, i64::MIN, i64::MIN).is_err());
        assert_eq!(
            reduce(StdType::TimeDelta, &[]),
            Ok(PyValue::TimeDelta(PyTimeDelta::new(0, 0, 0).unwrap()))
        );
        let f = PyValue::Float(1.5);
        assert!(reduce(StdType::TimeDelta, &[Some(&f)]).is_err());
        let day = PyValue::TimeDelta(PyTimeDelta::new(1, 0, 0).unwrap());
        assert!(reduce(StdType::TimeZone, &[Some(&day)])
            .unwrap_err()
            .contains("24 hours"));
        let less = PyValue::TimeDelta(PyTimeDelta::new(-1, 0, 1).unwrap());
        let name = PyValue::Str("far west".into());
        let PyValue::TimeZone(tz) = reduce(StdType::TimeZone, &[Some(&less), Some(&name)]).unwrap()
        else {
            panic!("a timezone")
        };
        assert_eq!(tz.utcoffset_text(), "-23:59:59.999999");
        assert_eq!(tz.tzname(), "far west");
        let odd = PyTimeZone::new(PyTimeDelta::new(0, -3 * 3600 + 7, 1).unwrap(), None).unwrap();
        assert_eq!(odd.tzname(), "UTC-02:59:52.999999");
        assert_eq!(
            PyTimeDelta::new(-1, 5, 7).unwrap().total_seconds_text(),
            "-86394.999993"
        );
        assert_eq!(
            PyTimeDelta::new(0, 0, 500_000).unwrap().total_seconds(),
            0.5
        );
    }
}
