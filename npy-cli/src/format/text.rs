//! Values as readable text (`npy cat` without `--json`/`--csv`), as NumPy prints them: `True`,
//! `'str'`, `b'bytes'`, `(1.0+2.0j)`, ISO dates, `5 ms`.

use npy_serde::{DType, PlainType, Scalar, TimeUnit, Value};

use crate::format::calendar::{datetime_text, unit_text};
use crate::format::json::write_json;
use crate::format::scalar::{complex_text, float_text, hex, repr_bytes, repr_str};

/// Readable text for a value of dtype `base` with subarray dimensions `dims`.
pub fn text_value(out: &mut String, v: &Value, base: &DType, dims: &[u64]) {
    match (v, dims.split_first(), base) {
        (Value::List(items), Some((_, rest)), _) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                text_value(out, x, base, rest);
            }
            out.push(']');
        }
        (_, None, DType::Array(b, d)) => text_value(out, v, b, d),
        (Value::Record(fields), None, DType::Record(r)) => {
            out.push('{');
            for (i, ((name, x), f)) in fields.iter().zip(r.fields()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(": ");
                text_value(out, x, &f.dtype, &[]);
            }
            out.push('}');
        }
        (_, None, DType::Plain(p)) => out.push_str(&text_scalar(v, *p)),
        // Value and dtype disagree (cannot happen with the library's decoder): fall back to
        // the JSON form, which needs no dtype.
        _ => {
            let mut buf = Vec::new();
            if write_json(&mut buf, v).is_ok() {
                out.push_str(&String::from_utf8_lossy(&buf));
            }
        }
    }
}

fn text_scalar(v: &Value, p: PlainType) -> String {
    match v {
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => float_text(*x),
        Value::Complex(re, im) => format!("({})", complex_text(*re, *im)),
        Value::Bytes(b) => repr_bytes(b),
        Value::String(s) => repr_str(s),
        Value::Void(b) => format!("0x{}", hex(b)),
        Value::DateTime(t) => {
            if *t == Value::NAT {
                return "NaT".into();
            }
            match p.scalar() {
                Scalar::DateTime(unit, mult) => {
                    datetime_text(*t, unit, mult).unwrap_or_else(|| t.to_string())
                }
                _ => t.to_string(),
            }
        }
        Value::TimeDelta(t) => {
            if *t == Value::NAT {
                return "NaT".into();
            }
            match p.scalar() {
                Scalar::TimeDelta(unit, mult) if unit != TimeUnit::Generic => {
                    format!("{t} {}", unit_text(unit, mult))
                }
                _ => t.to_string(),
            }
        }
        Value::List(_) | Value::Record(_) => {
            let mut buf = Vec::new();
            let _ = write_json(&mut buf, v);
            String::from_utf8_lossy(&buf).into_owned()
        }
    }
}
