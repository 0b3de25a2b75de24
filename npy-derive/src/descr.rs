//! The type strings `#[npy(dtype = "...")]` accepts, parsed at compile time (this crate cannot
//! call npy-serde's parser): NumPy's `dtype.str` forms of the types a field's Rust type cannot
//! say itself.
//!
//! `[<>|=]?` then `M8`/`m8` with an optional `[<multiple><unit>]` (datetime64/timedelta64),
//! `V<n>` (raw bytes), `S<n>` (byte string) or `U<n>` (unicode string).

/// A field dtype set by the attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FieldDType {
    /// `M8[...]` (`delta == false`) or `m8[...]`; `unit` is the `TimeUnit` variant's name
    /// (`None` for generic), `big` the byte order (`None`: native).
    Time {
        delta: bool,
        unit: Option<&'static str>,
        mult: u32,
        big: Option<bool>,
    },
    /// `V<n>`.
    Void(usize),
    /// `S<n>`.
    Bytes(usize),
    /// `U<n>`.
    Unicode(usize),
}

/// NumPy's unit codes and the `TimeUnit` variants they name.
const UNITS: [(&str, &str); 13] = [
    ("Y", "Year"),
    ("M", "Month"),
    ("W", "Week"),
    ("D", "Day"),
    ("h", "Hour"),
    ("m", "Minute"),
    ("s", "Second"),
    ("ms", "Millisecond"),
    ("us", "Microsecond"),
    ("ns", "Nanosecond"),
    ("ps", "Picosecond"),
    ("fs", "Femtosecond"),
    ("as", "Attosecond"),
];

/// The largest itemsize NumPy accepts (`NPY_MAX_INT`).
const MAX_ITEMSIZE: u64 = i32::MAX as u64;

/// Parses a type string, or says why not.
pub(crate) fn parse(s: &str) -> Result<FieldDType, String> {
    let (big, body) = match s.as_bytes().first() {
        Some(b'<') => (Some(false), &s[1..]),
        Some(b'>') => (Some(true), &s[1..]),
        Some(b'|' | b'=') => (None, &s[1..]),
        _ => (None, s),
    };
    let supported =
        "#[npy(dtype = ...)] takes a datetime64/timedelta64 (\"<M8[ns]\", \"<m8[10s]\"), \
                     raw bytes (\"|V16\") or string (\"|S8\", \"<U8\") type string; a number \
                     field's dtype is its Rust type's";
    let mut chars = body.chars();
    let kind = chars
        .next()
        .ok_or_else(|| format!("empty type string: {supported}"))?;
    let rest = chars.as_str();
    match kind {
        'M' | 'm' => {
            let delta = kind == 'm';
            let tail = rest.strip_prefix('8').ok_or_else(|| {
                format!("{s:?}: a datetime64/timedelta64 is 8 bytes (\"{kind}8[unit]\")")
            })?;
            let (unit, mult) = time_unit(tail).ok_or_else(|| {
                format!(
                    "{s:?}: invalid unit {tail:?}, expected [<unit>] or [<multiple><unit>] with a unit \
                     of Y, M, W, D, h, m, s, ms, us, ns, ps, fs, as (or none: generic)"
                )
            })?;
            Ok(FieldDType::Time {
                delta,
                unit,
                mult,
                big,
            })
        }
        'V' | 'S' | 'U' => {
            let n: u64 = rest.parse().map_err(|_| {
                format!("{s:?}: expected a size after {kind:?}, like \"|{kind}16\"")
            })?;
            let bytes = if kind == 'U' { n.saturating_mul(4) } else { n };
            if n == 0 {
                return Err(format!("{s:?}: the size must be at least 1"));
            }
            if bytes > MAX_ITEMSIZE {
                return Err(format!(
                    "{s:?}: {bytes} bytes exceed NumPy's itemsize limit of {MAX_ITEMSIZE}"
                ));
            }
            let n = n as usize;
            Ok(match kind {
                'V' => FieldDType::Void(n),
                'S' => FieldDType::Bytes(n),
                _ => FieldDType::Unicode(n),
            })
        }
        _ => Err(format!("{s:?}: {supported}")),
    }
}

/// `[10s]` -> (`Second`, 10); empty or `[generic]` -> generic.
fn time_unit(tail: &str) -> Option<(Option<&'static str>, u32)> {
    if tail.is_empty() {
        return Some((None, 1));
    }
    let inner = tail.strip_prefix('[')?.strip_suffix(']')?;
    if inner == "generic" {
        return Some((None, 1));
    }
    let split = inner
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(inner.len());
    let (num, code) = inner.split_at(split);
    let mult = if num.is_empty() {
        1
    } else {
        num.parse::<u32>()
            .ok()
            .filter(|m| *m > 0 && *m <= i32::MAX as u32)?
    };
    let unit = UNITS.iter().find(|(c, _)| *c == code)?.1;
    Some((Some(unit), mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(
            parse("<M8[ns]"),
            Ok(FieldDType::Time {
                delta: false,
                unit: Some("Nanosecond"),
                mult: 1,
                big: Some(false)
            })
        );
        assert_eq!(
            parse(">m8[10s]"),
            Ok(FieldDType::Time {
                delta: true,
                unit: Some("Second"),
                mult: 10,
                big: Some(true)
            })
        );
        assert_eq!(
            parse("M8"),
            Ok(FieldDType::Time {
                delta: false,
                unit: None,
                mult: 1,
                big: None
            })
        );
        assert_eq!(parse("|V16"), Ok(FieldDType::Void(16)));
        assert_eq!(parse("S3"), Ok(FieldDType::Bytes(3)));
        assert_eq!(parse("<U2"), Ok(FieldDType::Unicode(2)));
        for bad in [
            "",
            "<f8",
            "i4",
            "<M8[xs]",
            "<M4",
            "<M8[0s]",
            "|V",
            "|V0",
            "|Vx",
            "<U999999999999",
            "<M8[ns",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
