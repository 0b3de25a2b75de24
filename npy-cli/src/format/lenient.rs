//! The values NumPy shows for bytes the library's typed reads refuse: a `bool` byte other than
//! 0 or 1 (NumPy reads it as `True`) and a `U` string holding UTF-16 surrogates (NumPy gives a
//! Python `str` with them). `cat` and `convert` to text print those values, with a warning on
//! stderr; `check` keeps reporting them as invalid.
//!
//! A Rust `String` cannot hold a lone surrogate, so one is carried inside [`Value::String`] as
//! [`MARK`] (a Unicode noncharacter, reserved for such internal use) followed by its four hex
//! digits; a real `MARK` in the data is carried the same way. The writers turn each into
//! `\udXXX` ([`unmark`], [`json_str`]).

use std::io::{self, Write};

use npy_serde::{decode_value, ByteOrder, DType, Error, ErrorKind, Scalar, Value};

/// Starts a code point carried as hex in a decoded string.
pub const MARK: char = '\u{FDD0}';

/// What [`decode`] printed differently from the typed reads, for one warning each.
#[derive(Default, Debug)]
pub struct Lenient {
    /// A bool byte other than 0 or 1 was printed as true.
    pub bools: bool,
    /// A string held a UTF-16 surrogate.
    pub surrogates: bool,
}

/// The element of `dtype` in `bytes` as NumPy shows it: [`decode_value`]'s value, or, where that
/// refuses a bool byte or a surrogate, the value NumPy gives (recorded in `seen`).
pub fn decode(
    dtype: &DType,
    bytes: &[u8],
    offset: u64,
    max_empty: u64,
    seen: &mut Lenient,
) -> npy_serde::Result<Value> {
    match decode_value(dtype, bytes, offset, max_empty) {
        Err(e) if matches!(e.kind(), ErrorKind::InvalidValue(_)) => {
            lenient(dtype, bytes, offset, max_empty, seen).map_err(|_| e)
        }
        other => other,
    }
}

fn lenient(
    dtype: &DType,
    bytes: &[u8],
    offset: u64,
    max_empty: u64,
    seen: &mut Lenient,
) -> npy_serde::Result<Value> {
    match dtype {
        DType::Plain(p) => match p.scalar() {
            Scalar::Bool => {
                let b = *bytes
                    .first()
                    .ok_or_else(|| Error::new(ErrorKind::Message("short".into())))?;
                seen.bools |= b > 1;
                Ok(Value::Bool(b != 0))
            }
            Scalar::Unicode(n) => {
                let s = ucs4(bytes, n, p.order(), seen)?;
                Ok(Value::String(s))
            }
            _ => decode_value(dtype, bytes, offset, max_empty),
        },
        DType::Record(rec) => {
            let mut fields = Vec::with_capacity(rec.fields().len());
            for f in rec.fields() {
                let size = f.dtype.itemsize();
                let b = bytes
                    .get(f.offset..f.offset + size)
                    .ok_or_else(|| Error::new(ErrorKind::Message("short".into())))?;
                let v = lenient(&f.dtype, b, offset + f.offset as u64, max_empty, seen)?;
                fields.push((f.name.clone(), v));
            }
            Ok(Value::Record(fields))
        }
        DType::Array(base, shape) => sub(base, shape, bytes, offset, max_empty, seen),
    }
}

/// A subarray as nested lists, as `decode_value` gives it.
fn sub(
    base: &DType,
    shape: &[u64],
    bytes: &[u8],
    offset: u64,
    max_empty: u64,
    seen: &mut Lenient,
) -> npy_serde::Result<Value> {
    let Some((&n, rest)) = shape.split_first() else {
        return lenient(base, bytes, offset, max_empty, seen);
    };
    // Saturating: after a 0 axis the axes below may multiply past `usize` (the subarray is
    // empty and its size checked); with no 0 their product is at most the checked size.
    let per = usize::try_from(crate::input::layout::product(rest))
        .unwrap_or(usize::MAX)
        .saturating_mul(base.itemsize());
    let mut items = Vec::new();
    for i in 0..n as usize {
        let b = bytes
            .get(i * per..(i + 1) * per)
            .ok_or_else(|| Error::new(ErrorKind::Message("short".into())))?;
        items.push(sub(
            base,
            rest,
            b,
            offset + (i * per) as u64,
            max_empty,
            seen,
        )?);
    }
    Ok(Value::List(items))
}

/// A `U<n>` string with trailing NULs stripped; surrogates (and [`MARK`]) carried as hex.
/// Code points above U+10FFFF are still refused (NumPy cannot make a `str` of them either).
fn ucs4(bytes: &[u8], n: usize, order: ByteOrder, seen: &mut Lenient) -> npy_serde::Result<String> {
    let mut cps: Vec<u32> = bytes
        .chunks_exact(4)
        .take(n)
        .map(|c| {
            let a = [c[0], c[1], c[2], c[3]];
            match order {
                ByteOrder::Big => u32::from_be_bytes(a),
                _ => u32::from_le_bytes(a),
            }
        })
        .collect();
    while cps.last() == Some(&0) {
        cps.pop();
    }
    let mut s = String::with_capacity(cps.len());
    for cp in cps {
        match char::from_u32(cp) {
            Some(MARK) => s.push_str(&format!("{MARK}{cp:04x}")),
            Some(c) => s.push(c),
            None if (0xD800..0xE000).contains(&cp) => {
                seen.surrogates = true;
                s.push_str(&format!("{MARK}{cp:04x}"));
            }
            None => {
                return Err(Error::new(ErrorKind::InvalidValue(format!(
                    "code point {cp:#x} is not a character"
                ))))
            }
        }
    }
    Ok(s)
}

/// `s` with every carried code point written as `\uXXXX` (Python's repr of a surrogate);
/// `escape` writes the text between them.
pub fn unmark(s: &str, mut escape: impl FnMut(&str, &mut String)) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(MARK) {
        escape(&rest[..at], &mut out);
        let hex = rest[at + MARK.len_utf8()..].get(..4).unwrap_or("");
        out.push_str("\\u");
        out.push_str(hex);
        rest = rest.get(at + MARK.len_utf8() + 4..).unwrap_or("");
    }
    escape(rest, &mut out);
    out
}

/// A JSON string: carried code points as `\uXXXX` escapes (JSON allows lone surrogates in
/// escapes; parsers such as Python's read them back as the same `str`).
pub fn json_str(out: &mut dyn Write, s: &str) -> io::Result<()> {
    if !s.contains(MARK) {
        return serde_json::to_writer(&mut *out, s).map_err(io::Error::from);
    }
    let text = unmark(s, |part, out| {
        let quoted = serde_json::to_string(part).unwrap_or_default();
        out.push_str(&quoted[1..quoted.len() - 1]);
    });
    write!(out, "\"{text}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(cps: &[u32]) -> Vec<u8> {
        cps.iter().flat_map(|c| c.to_le_bytes()).collect()
    }

    #[test]
    fn surrogates_and_bools_as_numpy_shows_them() {
        let dt: DType = "<U4".parse().unwrap();
        let mut seen = Lenient::default();
        let v = decode(&dt, &u(&[0x61, 0xD834, 0xFDD0, 0]), 0, 16, &mut seen).unwrap();
        assert!(seen.surrogates);
        let Value::String(s) = v else { panic!() };
        let mut out = Vec::new();
        json_str(&mut out, &s).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#""a\ud834\ufdd0""#);
        let back: String = serde_json::from_str(r#""a\ufdd0""#).unwrap();
        assert_eq!(back.chars().nth(1), Some(MARK));

        let dt: DType = "[('ok', '?'), ('s', '<U1')]".parse().unwrap();
        let mut seen = Lenient::default();
        let mut bytes = vec![2u8];
        bytes.extend(u(&[0x62]));
        let v = decode(&dt, &bytes, 0, 16, &mut seen).unwrap();
        assert!(seen.bools && !seen.surrogates);
        assert_eq!(
            v,
            Value::Record(vec![
                ("ok".into(), Value::Bool(true)),
                ("s".into(), Value::String("b".into()))
            ])
        );
        // Not characters at all: still an error.
        let dt: DType = "<U1".parse().unwrap();
        assert!(decode(&dt, &u(&[0x110000]), 0, 16, &mut Lenient::default()).is_err());
    }

    #[test]
    fn an_empty_subarray_whose_other_axes_overflow() {
        // A 0 first, then axes whose product overflows: an empty subarray NumPy accepts too;
        // the lenient decode (here for the bool byte 2) multiplied the axes and overflowed.
        let dt: DType = "[('b', '?'), ('a', '<f8', (0, 1099511627776, 1099511627776))]"
            .parse()
            .unwrap();
        let v = decode(&dt, &[2], 0, 16, &mut Lenient::default()).unwrap();
        assert_eq!(
            v,
            Value::Record(vec![
                ("b".into(), Value::Bool(true)),
                ("a".into(), Value::List(Vec::new()))
            ])
        );
    }
}
