//! Values as CSV cells (RFC 4180 quoting), and the column paths of an element's leaves.

use npy_serde::{DType, Value};

use crate::format::lenient;
use crate::format::scalar::{complex_text, float_text, hex, latin1};

/// Column paths of one element of `dt`: record fields joined with `.`, subarray items as `[i]`.
pub fn leaf_paths(dt: &DType, prefix: &str, out: &mut Vec<String>) {
    match dt {
        DType::Plain(_) => out.push(prefix.to_string()),
        DType::Record(r) => {
            for f in r.fields() {
                let p = if prefix.is_empty() {
                    f.name.clone()
                } else {
                    format!("{prefix}.{}", f.name)
                };
                leaf_paths(&f.dtype, &p, out);
            }
        }
        DType::Array(base, dims) => sub_paths(base, dims, prefix, out),
    }
}

fn sub_paths(base: &DType, dims: &[u64], prefix: &str, out: &mut Vec<String>) {
    match dims.split_first() {
        None => leaf_paths(base, prefix, out),
        Some((&n, rest)) => {
            for i in 0..n {
                sub_paths(base, rest, &format!("{prefix}[{i}]"), out);
            }
        }
    }
}

pub fn csv_cell(v: &Value, out: &mut Vec<String>) {
    let text = match v {
        Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => float_text(*x),
        Value::Complex(re, im) => complex_text(*re, *im),
        Value::Bytes(b) => csv_quote(&latin1(b)),
        Value::String(s) => csv_quote(s),
        Value::Void(b) => hex(b),
        Value::DateTime(t) | Value::TimeDelta(t) => {
            if *t == Value::NAT {
                "NaT".into()
            } else {
                t.to_string()
            }
        }
        Value::List(items) => {
            for x in items {
                csv_cell(x, out);
            }
            return;
        }
        Value::Record(fields) => {
            for (_, x) in fields {
                csv_cell(x, out);
            }
            return;
        }
    };
    out.push(text);
}

/// Quotes a CSV field if it holds a comma, quote or line break (RFC 4180).
pub fn csv_quote(s: &str) -> String {
    let s = &lenient::unmark(s, |part, out| out.push_str(part));
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_paths() {
        let dt: DType =
            "[('pos', [('x', '<f8'), ('y', '<f8')]), ('v', '<i4', (2,)), ('m', '|u1', (1, 2))]"
                .parse()
                .unwrap();
        let mut p = Vec::new();
        leaf_paths(&dt, "", &mut p);
        assert_eq!(p, ["pos.x", "pos.y", "v[0]", "v[1]", "m[0][0]", "m[0][1]"]);
        assert_eq!(csv_quote("a,b"), "\"a,b\"");
        assert_eq!(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
