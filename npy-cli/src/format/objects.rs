//! Python objects (the elements of an object array, read as data) written as the tool writes
//! typed values: in the JSON convention (`str` a string, `bytes` latin-1 text, `None` null,
//! lists, tuples and sets as lists, dicts and records as objects, NumPy arrays as nested
//! lists; `datetime`, `date` and `time` as their `isoformat()` text, a `timezone` as its
//! `tzname()`, a `timedelta` as its exact seconds, a `Decimal` as its exact number, `"NaN"` and
//! `"Infinity"` as strings) and as readable text (Python's `repr`: `'a'`, `None`,
//! `[1, (2, 'x')]`, `datetime.date(2020, 2, 29)`, `Decimal('1.10')`).
//!
//! A class or function named as a value (`range`, which NumPy's own test files hold) is
//! refused: [`first_global`] finds it before anything is written.

use std::io::{self, Write};

use npy_serde::pickle::{PyArray, PyTime, PyTimeDelta, PyTimeZone, PyValue};
use npy_serde::Value;

use crate::format::json::{json_str, write_json};
use crate::format::scalar::{complex_text, float_text, hex, latin1, repr_bytes, repr_str};

/// The first class or function `v` names as a value (`module.name`), which no output holds.
pub fn first_global(v: &PyValue) -> Option<String> {
    match v {
        PyValue::Global { module, name } => Some(format!("{module}.{name}")),
        PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => v.iter().find_map(first_global),
        PyValue::Dict(p) => p
            .iter()
            .find_map(|(k, v)| first_global(k).or_else(|| first_global(v))),
        PyValue::Record(f) => f.iter().find_map(|(_, v)| first_global(v)),
        PyValue::Array(a) => a.values.iter().find_map(first_global),
        _ => None,
    }
}

/// The refusal of a value that names a class or function.
pub fn global_refusal(name: &str) -> String {
    format!(
        "an element is the Python class or function {name}, named in the pickle (never \
         imported): only data is printed or converted"
    )
}

/// Writes `v` in the JSON convention (`npy --help`, JSON CONVENTIONS).
pub fn object_json(out: &mut dyn Write, v: &PyValue) -> io::Result<()> {
    let list = |out: &mut dyn Write, items: &[PyValue]| -> io::Result<()> {
        out.write_all(b"[")?;
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.write_all(b", ")?;
            }
            object_json(out, x)?;
        }
        out.write_all(b"]")
    };
    match v {
        PyValue::None => out.write_all(b"null"),
        PyValue::Bool(b) => write_json(out, &Value::Bool(*b)),
        PyValue::Int(i) => write!(out, "{i}"),
        PyValue::BigInt(digits) => out.write_all(digits.as_bytes()),
        PyValue::Float(x) => write_json(out, &Value::Float(*x)),
        PyValue::Complex(re, im) => write_json(out, &Value::Complex(*re, *im)),
        PyValue::Str(s) => json_str(out, s),
        PyValue::Bytes(b) => json_str(out, &latin1(b)),
        PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => list(out, v),
        PyValue::Dict(pairs) => {
            out.write_all(b"{")?;
            for (i, (k, x)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                json_str(out, &key_text(k))?;
                out.write_all(b": ")?;
                object_json(out, x)?;
            }
            out.write_all(b"}")
        }
        PyValue::Record(fields) => {
            out.write_all(b"{")?;
            for (i, (name, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                json_str(out, name)?;
                out.write_all(b": ")?;
                object_json(out, x)?;
            }
            out.write_all(b"}")
        }
        PyValue::Scalar(x) | PyValue::NumpyScalar { value: x, .. } => write_json(out, x),
        PyValue::Array(a) => nested(out, a, &a.shape, &mut 0),
        PyValue::DateTime(d) => json_str(out, &d.isoformat()),
        PyValue::Date(d) => json_str(out, &d.isoformat()),
        PyValue::Time(t) => json_str(out, &t.isoformat()),
        PyValue::TimeZone(tz) => json_str(out, &tz.tzname()),
        // Exact seconds, a JSON number (`-86394.999993`).
        PyValue::TimeDelta(d) => out.write_all(d.total_seconds_text().as_bytes()),
        // A finite decimal's text is a JSON number (`1.10`, `-0`, `1E+3`); NaN and the
        // infinities are strings, as floats' are.
        PyValue::Decimal(t) if is_finite_decimal(t) => out.write_all(t.as_bytes()),
        PyValue::Decimal(t) => json_str(out, t),
        // Refused before writing (first_global); written as its name if it gets here.
        PyValue::Global { module, name } => json_str(out, &format!("{module}.{name}")),
    }
}

/// Whether a decimal's text (`str(Decimal)`) is a finite number, not `NaN` or `Infinity`.
fn is_finite_decimal(t: &str) -> bool {
    t.trim_start_matches('-')
        .starts_with(|c: char| c.is_ascii_digit())
}

/// A NumPy array inside an object array, nested by its shape as `tolist()` nests it.
fn nested(out: &mut dyn Write, a: &PyArray, dims: &[u64], at: &mut usize) -> io::Result<()> {
    let Some((&n, rest)) = dims.split_first() else {
        let v = a.values.get(*at).unwrap_or(&PyValue::None);
        *at += 1;
        return object_json(out, v);
    };
    out.write_all(b"[")?;
    for i in 0..n {
        if i > 0 {
            out.write_all(b", ")?;
        }
        nested(out, a, rest, at)?;
    }
    out.write_all(b"]")
}

/// A dict key as a JSON object key: a `str` as itself, `bytes` as latin-1 text, anything else
/// as its text form (`1`, `(1, 'a')`).
fn key_text(k: &PyValue) -> String {
    match k {
        PyValue::Str(s) => s.clone(),
        PyValue::Bytes(b) => latin1(b),
        other => {
            let mut s = String::new();
            object_text(&mut s, other);
            s
        }
    }
}

/// Appends `v` as Python's `repr` writes it (NumPy values as `npy cat` writes them).
pub fn object_text(out: &mut String, v: &PyValue) {
    let seq = |out: &mut String, items: &[PyValue], open: &str, close: &str| {
        out.push_str(open);
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            object_text(out, x);
        }
        out.push_str(close);
    };
    match v {
        PyValue::None => out.push_str("None"),
        PyValue::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        PyValue::Int(i) => out.push_str(&i.to_string()),
        PyValue::BigInt(digits) => out.push_str(digits),
        PyValue::Float(x) => out.push_str(&float_text(*x)),
        PyValue::Complex(re, im) => out.push_str(&format!("({})", complex_text(*re, *im))),
        PyValue::Str(s) => out.push_str(&repr_str(s)),
        PyValue::Bytes(b) => out.push_str(&repr_bytes(b)),
        PyValue::List(v) => seq(out, v, "[", "]"),
        PyValue::Tuple(v) if v.len() == 1 => seq(out, v, "(", ",)"),
        PyValue::Tuple(v) => seq(out, v, "(", ")"),
        PyValue::Set(v) if v.is_empty() => out.push_str("set()"),
        PyValue::Set(v) => seq(out, v, "{", "}"),
        PyValue::Dict(pairs) => {
            out.push('{');
            for (i, (k, x)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                object_text(out, k);
                out.push_str(": ");
                object_text(out, x);
            }
            out.push('}');
        }
        PyValue::Record(fields) => {
            out.push('{');
            for (i, (name, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(": ");
                object_text(out, x);
            }
            out.push('}');
        }
        PyValue::Scalar(x) | PyValue::NumpyScalar { value: x, .. } => scalar_text(out, x),
        PyValue::Array(a) => {
            // As nested lists (tolist()), in the text form of its elements.
            let mut buf = Vec::new();
            let mut at = 0;
            let _ = text_nested(&mut buf, a, &a.shape, &mut at);
            out.push_str(&String::from_utf8_lossy(&buf));
        }
        PyValue::Global { module, name } => out.push_str(&format!("<class '{module}.{name}'>")),
        PyValue::DateTime(d) => {
            let t = &d.time;
            out.push_str(&format!(
                "datetime.datetime({}, {}, {}, {}",
                d.date.year,
                d.date.month,
                d.date.day,
                clock_args(t)
            ));
            // Python's order: fold, then tzinfo (a time's is the other way round).
            if t.fold {
                out.push_str(", fold=1");
            }
            if let Some(tz) = &t.tzinfo {
                out.push_str(&format!(", tzinfo={}", timezone_repr(tz)));
            }
            out.push(')');
        }
        PyValue::Date(d) => out.push_str(&format!(
            "datetime.date({}, {}, {})",
            d.year, d.month, d.day
        )),
        PyValue::Time(t) => {
            out.push_str(&format!("datetime.time({}", clock_args(t)));
            if let Some(tz) = &t.tzinfo {
                out.push_str(&format!(", tzinfo={}", timezone_repr(tz)));
            }
            if t.fold {
                out.push_str(", fold=1");
            }
            out.push(')');
        }
        PyValue::TimeDelta(d) => out.push_str(&timedelta_repr(d)),
        PyValue::TimeZone(tz) => out.push_str(&timezone_repr(tz)),
        PyValue::Decimal(t) => out.push_str(&format!("Decimal({})", repr_str(t))),
    }
}

/// The hour, minute and, when not zero, second and microsecond, as `repr` lists them.
fn clock_args(t: &PyTime) -> String {
    let mut s = format!("{}, {}", t.hour, t.minute);
    if t.second != 0 || t.microsecond != 0 {
        s.push_str(&format!(", {}", t.second));
    }
    if t.microsecond != 0 {
        s.push_str(&format!(", {}", t.microsecond));
    }
    s
}

/// `repr(timedelta)`: its fields that are not zero, by name; `datetime.timedelta(0)` for zero.
fn timedelta_repr(d: &PyTimeDelta) -> String {
    let mut parts = Vec::new();
    if d.days != 0 {
        parts.push(format!("days={}", d.days));
    }
    if d.seconds != 0 {
        parts.push(format!("seconds={}", d.seconds));
    }
    if d.microseconds != 0 {
        parts.push(format!("microseconds={}", d.microseconds));
    }
    if parts.is_empty() {
        parts.push("0".into());
    }
    format!("datetime.timedelta({})", parts.join(", "))
}

/// `repr(timezone)`: `datetime.timezone.utc`, or the offset and the name given.
fn timezone_repr(tz: &PyTimeZone) -> String {
    if tz.is_utc() {
        return "datetime.timezone.utc".into();
    }
    match &tz.name {
        Some(n) => format!(
            "datetime.timezone({}, {})",
            timedelta_repr(&tz.offset),
            repr_str(n)
        ),
        None => format!("datetime.timezone({})", timedelta_repr(&tz.offset)),
    }
}

fn text_nested(out: &mut Vec<u8>, a: &PyArray, dims: &[u64], at: &mut usize) -> io::Result<()> {
    let Some((&n, rest)) = dims.split_first() else {
        let mut s = String::new();
        object_text(&mut s, a.values.get(*at).unwrap_or(&PyValue::None));
        *at += 1;
        return out.write_all(s.as_bytes());
    };
    out.write_all(b"[")?;
    for i in 0..n {
        if i > 0 {
            out.write_all(b", ")?;
        }
        text_nested(out, a, rest, at)?;
    }
    out.write_all(b"]")
}

/// A NumPy scalar (its dtype is not kept: datetimes show their raw count).
fn scalar_text(out: &mut String, v: &Value) {
    match v {
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Int(i) | Value::DateTime(i) | Value::TimeDelta(i) => out.push_str(&i.to_string()),
        Value::UInt(u) => out.push_str(&u.to_string()),
        Value::Float(x) => out.push_str(&float_text(*x)),
        Value::Complex(re, im) => out.push_str(&format!("({})", complex_text(*re, *im))),
        Value::Bytes(b) => out.push_str(&repr_bytes(b)),
        Value::String(s) => out.push_str(&repr_str(s)),
        Value::Void(b) => out.push_str(&format!("0x{}", hex(b))),
        Value::List(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                scalar_text(out, x);
            }
            out.push(']');
        }
        Value::Record(fields) => {
            out.push('{');
            for (i, (name, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(": ");
                scalar_text(out, x);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(v: &PyValue) -> String {
        let mut out = Vec::new();
        object_json(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn text(v: &PyValue) -> String {
        let mut out = String::new();
        object_text(&mut out, v);
        out
    }

    #[test]
    fn python_values_in_the_json_convention_and_as_repr() {
        let v = PyValue::List(vec![
            PyValue::Str("a".into()),
            PyValue::None,
            PyValue::Bytes(b"caf\xe9".to_vec()),
            PyValue::Float(f64::NAN),
            PyValue::Tuple(vec![PyValue::Int(1)]),
            PyValue::Dict(vec![(PyValue::Int(2), PyValue::Bool(true))]),
            PyValue::BigInt("1180591620717411303424".into()),
        ]);
        assert_eq!(
            json(&v),
            r#"["a", null, "café", "nan", [1], {"2": true}, 1180591620717411303424]"#
        );
        assert_eq!(
            text(&v),
            "['a', None, b'caf\\xe9', nan, (1,), {2: True}, 1180591620717411303424]"
        );
        assert_eq!(text(&PyValue::Set(vec![])), "set()");
    }

    #[test]
    fn datetimes_and_decimals_as_python_writes_them() {
        use npy_serde::pickle::{PyDate, PyDateTime};
        let est = PyTimeZone::new(
            PyTimeDelta::new(0, -5 * 3600, 0).unwrap(),
            Some("EST".into()),
        )
        .unwrap();
        let mut time = PyTime::new(1, 30, 0, 0).unwrap();
        time.fold = true;
        time.tzinfo = Some(est.clone());
        let folded = PyValue::DateTime(PyDateTime {
            date: PyDate::new(2021, 11, 7).unwrap(),
            time,
        });
        let plain = PyValue::DateTime(PyDateTime {
            date: PyDate::new(2020, 1, 2).unwrap(),
            time: PyTime::new(3, 4, 5, 0).unwrap(),
        });
        let mut t = PyTime::new(1, 2, 0, 5).unwrap();
        t.fold = true;
        t.tzinfo = Some(PyTimeZone::utc());
        let v = PyValue::List(vec![
            plain,
            folded,
            PyValue::Date(PyDate::new(2020, 2, 29).unwrap()),
            PyValue::Time(t),
            PyValue::Time(PyTime::new(0, 0, 0, 0).unwrap()),
            PyValue::TimeDelta(PyTimeDelta::new(-1, 5, 7).unwrap()),
            PyValue::TimeDelta(PyTimeDelta::new(0, 0, 0).unwrap()),
            PyValue::TimeZone(est),
            PyValue::TimeZone(
                PyTimeZone::new(PyTimeDelta::new(0, 0, 0).unwrap(), Some("UTC".into())).unwrap(),
            ),
            PyValue::Decimal("1.10".into()),
            PyValue::Decimal("-Infinity".into()),
        ]);
        // Python 3.11's repr of the same values.
        assert_eq!(
            text(&v),
            "[datetime.datetime(2020, 1, 2, 3, 4, 5), \
             datetime.datetime(2021, 11, 7, 1, 30, fold=1, tzinfo=datetime.timezone(\
             datetime.timedelta(days=-1, seconds=68400), 'EST')), \
             datetime.date(2020, 2, 29), \
             datetime.time(1, 2, 0, 5, tzinfo=datetime.timezone.utc, fold=1), \
             datetime.time(0, 0), \
             datetime.timedelta(days=-1, seconds=5, microseconds=7), datetime.timedelta(0), \
             datetime.timezone(datetime.timedelta(days=-1, seconds=68400), 'EST'), \
             datetime.timezone(datetime.timedelta(0), 'UTC'), \
             Decimal('1.10'), Decimal('-Infinity')]"
        );
        assert_eq!(
            json(&v),
            "[\"2020-01-02T03:04:05\", \"2021-11-07T01:30:00-05:00\", \"2020-02-29\", \
             \"01:02:00.000005+00:00\", \"00:00:00\", -86394.999993, 0, \"EST\", \"UTC\", 1.10, \
             \"-Infinity\"]"
        );
    }

    #[test]
    fn arrays_nest_by_their_shape_and_globals_are_found() {
        let a = PyValue::Array(Box::new(PyArray {
            descr: "'<i8'".into(),
            shape: vec![2, 2],
            values: (1..=4).map(|i| PyValue::Scalar(Value::Int(i))).collect(),
        }));
        assert_eq!(json(&a), "[[1, 2], [3, 4]]");
        assert_eq!(text(&a), "[[1, 2], [3, 4]]");
        let g = PyValue::Dict(vec![(
            PyValue::Str("k".into()),
            PyValue::Global {
                module: "builtins".into(),
                name: "range".into(),
            },
        )]);
        assert_eq!(first_global(&g).as_deref(), Some("builtins.range"));
        assert_eq!(first_global(&a), None);
    }
}
