//! Values in the tool's JSON convention (`npy --help`, JSON CONVENTIONS), written as they are
//! produced, without an intermediate JSON tree.

use std::io::{self, Write};

use npy_serde::Value;

use crate::format::lenient;
use crate::format::scalar::{float_text, hex, latin1};

/// Writes `v` in the JSON convention.
pub fn write_json(out: &mut dyn Write, v: &Value) -> io::Result<()> {
    match v {
        Value::Bool(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Int(i) => write!(out, "{i}"),
        Value::UInt(u) => write!(out, "{u}"),
        Value::Float(x) => write_json_float(out, *x),
        Value::Complex(re, im) => {
            out.write_all(b"[")?;
            write_json_float(out, *re)?;
            out.write_all(b", ")?;
            write_json_float(out, *im)?;
            out.write_all(b"]")
        }
        Value::Bytes(b) => json_str(out, &latin1(b)),
        Value::String(s) => json_str(out, s),
        Value::Void(b) => write!(out, "\"{}\"", hex(b)),
        Value::DateTime(t) | Value::TimeDelta(t) => {
            if *t == Value::NAT {
                out.write_all(b"\"NaT\"")
            } else {
                write!(out, "{t}")
            }
        }
        Value::List(items) => {
            out.write_all(b"[")?;
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                write_json(out, x)?;
            }
            out.write_all(b"]")
        }
        Value::Record(fields) => {
            out.write_all(b"{")?;
            for (i, (k, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.write_all(b", ")?;
                }
                json_str(out, k)?;
                out.write_all(b": ")?;
                write_json(out, x)?;
            }
            out.write_all(b"}")
        }
    }
}

fn write_json_float(out: &mut dyn Write, x: f64) -> io::Result<()> {
    if x.is_finite() {
        out.write_all(float_text(x).as_bytes())
    } else {
        write!(out, "\"{}\"", float_text(x))
    }
}

/// A JSON string literal.
pub fn json_str(out: &mut dyn Write, s: &str) -> io::Result<()> {
    lenient::json_str(out, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_convention() {
        let v = Value::Record(vec![
            ("a".into(), Value::UInt(u64::MAX)),
            (
                "b".into(),
                Value::List(vec![Value::Float(f64::NAN), Value::Float(1.5)]),
            ),
            ("s".into(), Value::Bytes(vec![b'x', 0xe9])),
            ("v".into(), Value::Void(vec![0, 0xff])),
            ("t".into(), Value::DateTime(Value::NAT)),
            ("c".into(), Value::Complex(0.0, f64::INFINITY)),
        ]);
        let mut out = Vec::new();
        write_json(&mut out, &v).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a": 18446744073709551615, "b": ["nan", 1.5], "s": "xé", "v": "00ff", "t": "NaT", "c": [0.0, "inf"]}"#
        );
    }
}
