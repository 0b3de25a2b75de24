//! The text forms inside pickles: protocol-0 quoted strings (Python 2 `repr`), raw-unicode-
//! escape text, and integers of any size (as `i64`, or as decimal text past it).

use super::value::PyValue;

/// Python's `sys.int_info.str_digits_check_threshold` default (`int_max_str_digits`): larger
/// integers are refused here, as Python refuses to print them.
pub(crate) const MAX_INT_DIGITS: usize = 4300;

/// An integer from little-endian two's-complement bytes (LONG1/LONG4).
pub(crate) fn int_from_le_bytes(b: &[u8]) -> Result<PyValue, String> {
    if b.is_empty() {
        return Ok(PyValue::Int(0));
    }
    if b.len() <= 8 {
        let neg = b[b.len() - 1] & 0x80 != 0;
        let mut a = if neg { [0xffu8; 8] } else { [0u8; 8] };
        a[..b.len()].copy_from_slice(b);
        return Ok(PyValue::Int(i64::from_le_bytes(a)));
    }
    // Each byte adds at most 2.41 decimal digits: refuse before converting.
    if b.len().saturating_mul(241) / 100 > MAX_INT_DIGITS + 3 {
        return Err(format!(
            "an integer of {} bytes has more than {MAX_INT_DIGITS} digits (Python's \
             int_max_str_digits)",
            b.len()
        ));
    }
    let neg = b[b.len() - 1] & 0x80 != 0;
    // Magnitude, little-endian: negate two's complement if negative.
    let mut mag: Vec<u8> = b.to_vec();
    if neg {
        let mut carry = 1u16;
        for x in mag.iter_mut() {
            let v = (!*x) as u16 + carry;
            *x = v as u8;
            carry = v >> 8;
        }
    }
    // Repeated division by 10^9 of a big-endian base-256 number.
    let mut be: Vec<u32> = mag.iter().rev().map(|&x| x as u32).collect();
    let mut chunks: Vec<u32> = Vec::new();
    while be.iter().any(|&x| x != 0) {
        let mut rem = 0u64;
        for x in be.iter_mut() {
            let cur = (rem << 8) | *x as u64;
            *x = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
        while be.first() == Some(&0) {
            be.remove(0);
        }
    }
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    let mut it = chunks.iter().rev();
    if let Some(first) = it.next() {
        s.push_str(&first.to_string());
    }
    for c in it {
        s.push_str(&format!("{c:09}"));
    }
    if s.is_empty() || s == "-" {
        s.push('0');
    }
    Ok(big_or_small(s))
}

/// An integer from decimal text (INT, LONG without its `L`).
pub(crate) fn int_from_text(t: &str) -> Result<PyValue, String> {
    let t = t.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("{t:?} is not an integer"));
    }
    if digits.len() > MAX_INT_DIGITS {
        return Err(format!(
            "an integer of {} digits is more than {MAX_INT_DIGITS} (Python's int_max_str_digits)",
            digits.len()
        ));
    }
    let digits = digits.trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let s = if neg && digits != "0" {
        format!("-{digits}")
    } else {
        digits.to_string()
    };
    Ok(big_or_small(s))
}

fn big_or_small(s: String) -> PyValue {
    match s.parse::<i64>() {
        Ok(v) => PyValue::Int(v),
        Err(_) => PyValue::BigInt(s),
    }
}

/// The bytes of a protocol-0 STRING argument: a Python 2 `repr` of a `str`, quoted with `'`
/// or `"`, with its backslash escapes.
pub(crate) fn decode_py2_string(l: &[u8]) -> Result<Vec<u8>, String> {
    let l = l.strip_suffix(b"\r").unwrap_or(l);
    let q = *l.first().ok_or("an empty STRING argument")?;
    if l.len() < 2 || (q != b'\'' && q != b'"') || l[l.len() - 1] != q {
        return Err("a STRING argument is not quoted".into());
    }
    let body = &l[1..l.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = *body.get(i).ok_or("a STRING ends in a backslash")?;
        i += 1;
        match e {
            b'\\' | b'\'' | b'"' => out.push(e),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\n' => {}
            b'x' => {
                let h = body
                    .get(i..i + 2)
                    .ok_or("a \\x escape needs two hex digits")?;
                let s = std::str::from_utf8(h).map_err(|_| "a bad \\x escape")?;
                out.push(u8::from_str_radix(s, 16).map_err(|_| "a bad \\x escape")?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                for _ in 0..2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + (d - b'0') as u32;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// A protocol-0 UNICODE argument: `raw-unicode-escape` (bytes are Latin-1 code points,
/// `\uXXXX` and `\UXXXXXXXX` escapes).
pub(crate) fn decode_raw_unicode_escape(l: &[u8]) -> Result<String, String> {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        let c = l[i];
        if c == b'\\' && matches!(l.get(i + 1), Some(b'u') | Some(b'U')) {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            let h = l.get(i + 2..i + 2 + n).ok_or("a truncated \\u escape")?;
            let s = std::str::from_utf8(h).map_err(|_| "a bad \\u escape")?;
            let v = u32::from_str_radix(s, 16).map_err(|_| "a bad \\u escape")?;
            out.push(
                char::from_u32(v).ok_or_else(|| format!("\\u escape {v:#x} is not a character"))?,
            );
            i += 2 + n;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_integers_as_python_prints_them() {
        // (2**70).to_bytes(9, 'little', signed=True), and its negation.
        let mut b = vec![0u8; 9];
        b[8] = 0x40;
        assert_eq!(
            int_from_le_bytes(&b).unwrap(),
            PyValue::BigInt("1180591620717411303424".into())
        );
        let neg = (-(1i128 << 70)).to_le_bytes();
        assert_eq!(
            int_from_le_bytes(&neg[..9]).unwrap(),
            PyValue::BigInt("-1180591620717411303424".into())
        );
        assert_eq!(int_from_le_bytes(&[0xff]).unwrap(), PyValue::Int(-1));
        assert_eq!(
            int_from_le_bytes(&(i64::MIN).to_le_bytes()).unwrap(),
            PyValue::Int(i64::MIN)
        );
        assert_eq!(int_from_text("-0042").unwrap(), PyValue::Int(-42));
        assert_eq!(
            int_from_text("99999999999999999999").unwrap(),
            PyValue::BigInt("99999999999999999999".into())
        );
        assert!(int_from_le_bytes(&vec![1u8; 5000]).is_err());
        assert!(int_from_text("12a").is_err());
    }

    #[test]
    fn python2_string_escapes() {
        assert_eq!(
            decode_py2_string(b"'a\\'b\\x00\\n\\\\'").unwrap(),
            b"a'b\x00\n\\"
        );
        assert_eq!(
            decode_py2_string(b"\"\\303\\251\"").unwrap(),
            "é".as_bytes()
        );
        assert!(decode_py2_string(b"'abc").is_err());
        assert_eq!(
            decode_raw_unicode_escape(b"caf\xe9 \\u2603").unwrap(),
            "café ☃"
        );
    }
}
