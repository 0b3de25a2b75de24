//! Scalars as text, shared by the JSON, CSV and plain-text writers: floats as the shortest text
//! that round-trips, complex numbers as Python parses them, bytes as latin-1 or hex, and
//! Python-like `repr`s of strings and bytes.

use crate::format::lenient;

/// The shortest text that round-trips `x` (`1.0`, `1e-320`, `-0.0`); `nan`, `inf`, `-inf`.
pub fn float_text(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // Rust's `Debug` for f64 is the shortest round-trip representation, with an exponent
        // for very large or small magnitudes: always a valid JSON number.
        format!("{x:?}")
    }
}

/// `re+imj`, as Python's `complex()` parses it.
pub fn complex_text(re: f64, im: f64) -> String {
    let sign = if im.is_sign_negative() && !im.is_nan() {
        '-'
    } else {
        '+'
    };
    format!("{}{sign}{}j", float_text(re), float_text(im.abs()))
}

pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

pub fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// Python-like `repr` of a string: `'...'` with escapes for quotes, backslashes and
/// non-printable characters.
pub fn repr_str(s: &str) -> String {
    let body = lenient::unmark(s, |part, out| {
        for c in part.chars() {
            match c {
                '\'' => out.push_str("\\'"),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
    });
    format!("'{body}'")
}

pub fn repr_bytes(b: &[u8]) -> String {
    let mut out = String::from("b'");
    for &c in b {
        match c {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_round_trip() {
        for x in [
            0.5,
            -0.0,
            1e-320,
            1.401298464324817e-45,
            1e16,
            0.1,
            123456789.125,
        ] {
            let t = float_text(x);
            assert_eq!(t.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{t}");
            let j: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert!(j.is_f64(), "{t}");
        }
        assert_eq!(float_text(f64::NAN), "nan");
        assert_eq!(float_text(f64::NEG_INFINITY), "-inf");
        assert_eq!(complex_text(1.0, -2.0), "1.0-2.0j");
        assert_eq!(complex_text(f64::NAN, f64::INFINITY), "nan+infj");
    }
}
