//! Scalar element types: [`Scalar`] with its byte order ([`ByteOrder`]) as a [`PlainType`]
//! (`<f8`), and the units of datetimes ([`TimeUnit`]). Owns their `descr` text and sizes;
//! calls only the crate's error type. Records and subarrays of them are in the parent module.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};
use crate::pyliteral;

/// The refusal of an object dtype (`O`) by the dtype model, naming the option that reads the
/// data of an object array.
pub(crate) const OBJECT_REFUSAL: &str = "object arrays ('|O') hold Python pickles: read their \
     data (no code runs) with ReaderBuilder::allow_pickle_data(true)";

/// The largest itemsize (bytes per element) accepted, NumPy's own limit (`NPY_MAX_INT`).
pub const MAX_ITEMSIZE: u64 = i32::MAX as u64;

/// Byte order of a multi-byte scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `|`: single bytes, byte strings, void and bool, where order does not apply.
    NotApplicable,
}

impl ByteOrder {
    /// The byte order of the machine this code runs on (what NumPy's `=` and a missing order mean).
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "little") {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };

    /// The character NumPy writes: `<`, `>` or `|`.
    pub fn as_char(self) -> char {
        match self {
            ByteOrder::Little => '<',
            ByteOrder::Big => '>',
            ByteOrder::NotApplicable => '|',
        }
    }

    /// True if multi-byte values in this order must be byte-swapped on this machine.
    pub fn needs_swap(self) -> bool {
        self != ByteOrder::NotApplicable && self != ByteOrder::NATIVE
    }
}

/// The unit of a `datetime64`/`timedelta64` dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// No unit: NumPy's generic `M8` / `m8`.
    Generic,
    /// `Y`
    Year,
    /// `M`
    Month,
    /// `W`
    Week,
    /// `D`
    Day,
    /// `h`
    Hour,
    /// `m`
    Minute,
    /// `s`
    Second,
    /// `ms`
    Millisecond,
    /// `us`
    Microsecond,
    /// `ns`
    Nanosecond,
    /// `ps`
    Picosecond,
    /// `fs`
    Femtosecond,
    /// `as`
    Attosecond,
}

impl TimeUnit {
    const ALL: [(TimeUnit, &'static str); 13] = [
        (TimeUnit::Year, "Y"),
        (TimeUnit::Month, "M"),
        (TimeUnit::Week, "W"),
        (TimeUnit::Day, "D"),
        (TimeUnit::Hour, "h"),
        (TimeUnit::Minute, "m"),
        (TimeUnit::Second, "s"),
        (TimeUnit::Millisecond, "ms"),
        (TimeUnit::Microsecond, "us"),
        (TimeUnit::Nanosecond, "ns"),
        (TimeUnit::Picosecond, "ps"),
        (TimeUnit::Femtosecond, "fs"),
        (TimeUnit::Attosecond, "as"),
    ];

    /// The unit's code as NumPy writes it (`"D"`, `"ms"`, ...); empty for generic.
    pub fn code(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(u, _)| *u == self)
            .map(|(_, s)| *s)
            .unwrap_or("")
    }

    pub(crate) fn from_code(s: &str) -> Option<TimeUnit> {
        Self::ALL.iter().find(|(_, c)| *c == s).map(|(u, _)| *u)
    }
}

/// A scalar element type (without byte order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `b1`: one byte, 0 or 1.
    Bool,
    /// `i1`
    I8,
    /// `i2`
    I16,
    /// `i4`
    I32,
    /// `i8`
    I64,
    /// `u1`
    U8,
    /// `u2`
    U16,
    /// `u4`
    U32,
    /// `u8`
    U64,
    /// `f2`: IEEE half precision.
    F16,
    /// `f4`
    F32,
    /// `f8`
    F64,
    /// `f16`: `np.longdouble` on x86-64 Linux, an x87 80-bit extended float in 16 bytes.
    LongDouble,
    /// `c8`: two `f4`.
    Complex64,
    /// `c16`: two `f8`.
    Complex128,
    /// `c32`: two x87 long doubles.
    ComplexLongDouble,
    /// `S<n>`: `n` bytes, trailing NULs stripped on reading.
    Bytes(usize),
    /// `U<n>`: `n` UCS-4 code points (`4 * n` bytes).
    Unicode(usize),
    /// `V<n>`: `n` raw bytes.
    Void(usize),
    /// `M8[<mult><unit>]`: datetime64, an `i64` count of `mult * unit` since the epoch.
    DateTime(TimeUnit, u32),
    /// `m8[<mult><unit>]`: timedelta64, an `i64` count of `mult * unit`.
    TimeDelta(TimeUnit, u32),
}

impl Scalar {
    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        use Scalar::*;
        match self {
            Bool | I8 | U8 => 1,
            I16 | U16 | F16 => 2,
            I32 | U32 | F32 => 4,
            I64 | U64 | F64 | Complex64 | DateTime(..) | TimeDelta(..) => 8,
            LongDouble | Complex128 => 16,
            ComplexLongDouble => 32,
            Bytes(n) | Void(n) => n,
            Unicode(n) => n.saturating_mul(4),
        }
    }

    /// Alignment NumPy gives this type in an `align=True` struct (x86-64).
    pub fn alignment(self) -> usize {
        use Scalar::*;
        match self {
            Bool | I8 | U8 | Bytes(_) | Void(_) => 1,
            I16 | U16 | F16 => 2,
            I32 | U32 | F32 | Complex64 | Unicode(_) => 4,
            I64 | U64 | F64 | Complex128 | DateTime(..) | TimeDelta(..) => 8,
            LongDouble | ComplexLongDouble => 16,
        }
    }

    /// True if the byte order matters for this type (multi-byte numbers, `U`, datetimes).
    pub fn has_byte_order(self) -> bool {
        use Scalar::*;
        !matches!(self, Bool | I8 | U8 | Bytes(_) | Void(_))
    }

    /// The type part of the typestr, without byte order: `"f8"`, `"S5"`, `"M8[10s]"`.
    pub fn type_code(self) -> String {
        use Scalar::*;
        match self {
            Bool => "b1".into(),
            I8 => "i1".into(),
            I16 => "i2".into(),
            I32 => "i4".into(),
            I64 => "i8".into(),
            U8 => "u1".into(),
            U16 => "u2".into(),
            U32 => "u4".into(),
            U64 => "u8".into(),
            F16 => "f2".into(),
            F32 => "f4".into(),
            F64 => "f8".into(),
            LongDouble => "f16".into(),
            Complex64 => "c8".into(),
            Complex128 => "c16".into(),
            ComplexLongDouble => "c32".into(),
            Bytes(n) => format!("S{n}"),
            Unicode(n) => format!("U{n}"),
            Void(n) => format!("V{n}"),
            DateTime(u, m) => format!("M8{}", unit_suffix(u, m)),
            TimeDelta(u, m) => format!("m8{}", unit_suffix(u, m)),
        }
    }
}

fn unit_suffix(unit: TimeUnit, mult: u32) -> String {
    match (unit, mult) {
        (TimeUnit::Generic, _) => String::new(),
        (u, 1) => format!("[{}]", u.code()),
        (u, m) => format!("[{m}{}]", u.code()),
    }
}

/// A scalar type with its byte order, e.g. `<f8`. Construct with [`PlainType::new`], which
/// normalises the order exactly as NumPy does (`>u1` is `|u1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlainType {
    scalar: Scalar,
    order: ByteOrder,
}

impl PlainType {
    /// A scalar in the given byte order; `NotApplicable` on a type that has an order means native.
    pub fn new(scalar: Scalar, order: ByteOrder) -> Self {
        let order = if !scalar.has_byte_order() {
            ByteOrder::NotApplicable
        } else if order == ByteOrder::NotApplicable {
            ByteOrder::NATIVE
        } else {
            order
        };
        PlainType { scalar, order }
    }

    /// The scalar type.
    pub fn scalar(self) -> Scalar {
        self.scalar
    }

    /// The byte order (`NotApplicable` for single-byte types, `S`, `V` and bool).
    pub fn order(self) -> ByteOrder {
        self.order
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        self.scalar.itemsize()
    }

    /// NumPy's `dtype.str`: `"<f8"`, `"|S5"`, `"<M8[10s]"`.
    pub fn typestr(self) -> String {
        format!("{}{}", self.order.as_char(), self.scalar.type_code())
    }

    /// Parses a type string as `np.dtype(str)` does for the forms found in `.npy` headers:
    /// NumPy's `dtype.str` (`<f8`, `|S5`, `>M8[10s]`), without or with `=`/`|` order (native),
    /// the deprecated `a<n>` for `S<n>`, and the single-character codes (`'d'`, `'?'`, `'b'`...).
    pub fn from_typestr(s: &str) -> Result<PlainType> {
        let bad =
            |why: &str| Error::descr(format!("{why} in type string {}", pyliteral::repr_str(s)));
        let (order, body) = match s.chars().next() {
            Some('<') => (ByteOrder::Little, &s[1..]),
            Some('>') => (ByteOrder::Big, &s[1..]),
            Some('=') | Some('|') => (ByteOrder::NotApplicable, &s[1..]),
            _ => (ByteOrder::NotApplicable, s),
        };
        let mut chars = body.chars();
        let kind = chars.next().ok_or_else(|| bad("empty type"))?;
        let rest = chars.as_str();
        if kind == 'O' {
            return Err(Error::new(ErrorKind::UnsupportedDType(
                OBJECT_REFUSAL.into(),
            )));
        }
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (digits, tail) = rest.split_at(digits_end);
        let size = if digits.is_empty() {
            None
        } else {
            Some(digits.parse::<u64>().map_err(|_| bad("size too large"))?)
        };
        use Scalar::*;
        let scalar = match (kind, size) {
            ('M' | 'm', Some(8) | None) => {
                let (unit, mult) =
                    parse_time_unit(tail).ok_or_else(|| bad("invalid datetime unit"))?;
                return Ok(PlainType::new(
                    if kind == 'M' {
                        DateTime(unit, mult)
                    } else {
                        TimeDelta(unit, mult)
                    },
                    order,
                ));
            }
            _ if !tail.is_empty() => return Err(bad("unexpected characters")),
            ('b', Some(1)) | ('?', None) => Bool,
            ('i', Some(1)) | ('b', None) => I8,
            ('i', Some(2)) | ('h', None) => I16,
            ('i', Some(4)) | ('i', None) => I32,
            ('i', Some(8)) | ('l' | 'q' | 'p', None) => I64,
            ('u', Some(1)) | ('B', None) => U8,
            ('u', Some(2)) | ('H', None) => U16,
            ('u', Some(4)) | ('I', None) => U32,
            ('u', Some(8)) | ('L' | 'Q' | 'P', None) => U64,
            ('f', Some(2)) | ('e', None) => F16,
            ('f', Some(4)) | ('f', None) => F32,
            ('f', Some(8)) | ('d', None) => F64,
            ('f', Some(16)) | ('g', None) => LongDouble,
            ('c', Some(8)) | ('F', None) => Complex64,
            ('c', Some(16)) | ('D', None) => Complex128,
            ('c', Some(32)) | ('G', None) => ComplexLongDouble,
            ('S' | 'a', n) => {
                Bytes(checked_size(n.unwrap_or(0), 1).ok_or_else(|| bad("size too large"))?)
            }
            ('V', n) => Void(checked_size(n.unwrap_or(0), 1).ok_or_else(|| bad("size too large"))?),
            ('U', n) => {
                Unicode(checked_size(n.unwrap_or(0), 4).ok_or_else(|| bad("size too large"))?)
            }
            _ => return Err(bad("unknown type")),
        };
        Ok(PlainType::new(scalar, order))
    }
}

fn checked_size(n: u64, unit: u64) -> Option<usize> {
    let bytes = n.checked_mul(unit)?;
    if bytes > MAX_ITEMSIZE {
        return None;
    }
    usize::try_from(n).ok()
}

fn parse_time_unit(tail: &str) -> Option<(TimeUnit, u32)> {
    if tail.is_empty() {
        return Some((TimeUnit::Generic, 1));
    }
    let inner = tail.strip_prefix('[')?.strip_suffix(']')?;
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
    if code == "generic" {
        return Some((TimeUnit::Generic, 1));
    }
    Some((TimeUnit::from_code(code)?, mult))
}

impl fmt::Display for PlainType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.typestr())
    }
}
