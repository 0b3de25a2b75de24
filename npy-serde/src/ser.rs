//! The serde side of writing: a `Serializer` that encodes one array element into its bytes,
//! driven by a per-dtype `Plan` compiled once, plus the shape-level serializers used when the
//! array's shape comes from nested sequences, and `impl Serialize for Value`.
//!
//! # How Rust values map onto a dtype
//!
//! | dtype | accepted serde values |
//! |---|---|
//! | record | a struct or a map (matched by field name, or title), or a tuple (positional) |
//! | subarray `(base, shape)` | nested sequences/tuples of exactly `shape`; for `u1`/`i1` bases also bytes of the right length |
//! | `b1` | `bool` only |
//! | `i1`..`u8` | any integer whose *value* fits; floats are refused |
//! | `f2`, `f4`, `f8`, `f16` (longdouble) | floats and integers whose value the target represents *exactly* (NaN and ±inf always); `half::f16` is taken bit for bit |
//! | `c8`, `c16`, `c32` | a 2-sequence/tuple `(re, im)` (so `num_complex::Complex`), or a real number (imaginary part 0); parts as for floats |
//! | `S<n>` | a `str` (its UTF-8 bytes), bytes, a char, a unit enum variant (its name) or a sequence of `u8`; at most `n` bytes, NUL-padded |
//! | `U<n>` | a `str`, a char or a unit enum variant; at most `n` characters, stored as UCS-4 in the dtype's byte order, NUL-padded |
//! | `V<n>` | bytes or a sequence of `u8` of exactly `n` bytes |
//! | `M8`, `m8` | an integer fitting `i64` (the raw count of the dtype's unit), or the string `"NaT"` |
//!
//! Conversions never lose information silently: a value out of range for the field, a float
//! that does not round-trip through the field's float type, or a string longer than the field
//! is an [`ErrorKind::Write`](crate::ErrorKind::Write) error naming the record index and field
//! path. `Option::None` is refused (NumPy has no null: use NaN, a sentinel or a separate mask
//! field); `Some(v)` writes `v`. Newtype structs are transparent. Data-carrying enum variants,
//! unit and `()` are refused.
//!
//! The serializer reports `is_human_readable() == false`, as binary formats do.

use std::fmt::Display;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::ser::{self, Impossible, Serialize};

use crate::dtype::{ByteOrder, DType, Scalar};
use crate::error::{Error, Result};
use crate::pyliteral;
use crate::value::Value;

// ---------------------------------------------------------------------------------------------
// The plan: a dtype compiled into the tree the serializer walks.

/// One dtype node compiled for writing.
#[derive(Debug)]
pub(crate) enum Node {
    /// A scalar. `big` is true for `>` byte order (ignored for one-byte types, `S`, `V`).
    Leaf { scalar: Scalar, big: bool },
    /// One axis of a subarray: `len` items of `base`, `stride` bytes each (a multi-dimensional
    /// subarray is nested `Sub`s, outermost axis first).
    Sub {
        base: Box<Node>,
        len: usize,
        stride: usize,
    },
    /// A record.
    Record(RecordPlan),
}

/// A record compiled for writing.
#[derive(Debug)]
pub(crate) struct RecordPlan {
    fields: Vec<FieldPlan>,
    /// Byte ranges not covered by any field: zeroed for every record written.
    pads: Vec<(usize, usize)>,
}

#[derive(Debug)]
struct FieldPlan {
    name: String,
    /// Address of a `&'static str` key already found equal to `name` (0: none yet), so the
    /// serde-derived keys of a struct match by address after the first record.
    key_addr: AtomicUsize,
    title: Option<String>,
    start: usize,
    end: usize,
    node: Node,
}

/// A compiled element dtype: what one element (record) is and how many bytes it takes.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) root: Node,
    pub(crate) itemsize: usize,
}

impl Plan {
    /// Compiles `dtype` (the dtype of one element, possibly a subarray or a record).
    pub(crate) fn new(dtype: &DType) -> Result<Plan> {
        Ok(Plan {
            root: Node::compile(dtype)?,
            itemsize: dtype.itemsize(),
        })
    }
}

impl Node {
    fn compile(dt: &DType) -> Result<Node> {
        Ok(match dt {
            DType::Plain(p) => Node::Leaf {
                scalar: p.scalar(),
                big: p.order() == ByteOrder::Big,
            },
            DType::Array(base, shape) => {
                let mut node = Node::compile(base)?;
                let mut stride = base.itemsize();
                for &d in shape.iter().rev() {
                    let len = usize::try_from(d).map_err(|_| Error::overflow("subarray shape"))?;
                    node = Node::Sub {
                        base: Box::new(node),
                        len,
                        stride,
                    };
                    stride = stride.saturating_mul(len);
                }
                node
            }
            DType::Record(r) => {
                let mut fields = Vec::with_capacity(r.fields().len());
                let mut pads = Vec::new();
                let mut pos = 0usize;
                for f in r.fields() {
                    if f.offset > pos {
                        pads.push((pos, f.offset));
                    }
                    let end = f.offset + f.dtype.itemsize();
                    fields.push(FieldPlan {
                        name: f.name.clone(),
                        key_addr: AtomicUsize::new(0),
                        title: f.title.clone(),
                        start: f.offset,
                        end,
                        node: Node::compile(&f.dtype)?,
                    });
                    pos = end;
                }
                if r.itemsize() > pos {
                    pads.push((pos, r.itemsize()));
                }
                Node::Record(RecordPlan { fields, pads })
            }
        })
    }

    /// Describes what this node expects, for errors.
    fn describe(&self) -> String {
        match self {
            Node::Leaf { scalar, big } => leaf_typestr(*scalar, *big),
            Node::Sub { .. } => {
                let mut shape = Vec::new();
                let mut n = self;
                while let Node::Sub { base, len, .. } = n {
                    shape.push(*len as u64);
                    n = base;
                }
                format!(
                    "a subarray of shape {} of {}",
                    pyliteral::repr_shape(&shape),
                    n.describe()
                )
            }
            Node::Record(r) => {
                let names: Vec<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
                format!("a record with fields ({})", names.join(", "))
            }
        }
    }

    /// The innermost base of a subarray (the node itself otherwise).
    fn innermost(&self) -> &Node {
        let mut n = self;
        while let Node::Sub { base, .. } = n {
            n = base;
        }
        n
    }
}

fn leaf_typestr(scalar: Scalar, big: bool) -> String {
    let order = if !scalar.has_byte_order() {
        '|'
    } else if big {
        '>'
    } else {
        '<'
    };
    format!("{order}{}", scalar.type_code())
}

// Component leaves of complex numbers, and the byte leaf used for sequences of `u8` into
// `S`/`V` fields.
static F32_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::F32,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::F32,
        big: true,
    },
];
static F64_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::F64,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::F64,
        big: true,
    },
];
static LD_PART: [Node; 2] = [
    Node::Leaf {
        scalar: Scalar::LongDouble,
        big: false,
    },
    Node::Leaf {
        scalar: Scalar::LongDouble,
        big: true,
    },
];
static BYTE: Node = Node::Leaf {
    scalar: Scalar::U8,
    big: false,
};

// ---------------------------------------------------------------------------------------------
// Scalar encoding.

macro_rules! put {
    ($buf:expr, $v:expr, $big:expr) => {{
        let v = $v;
        $buf.copy_from_slice(&if $big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }};
}

/// Encodes `v` as an x87 80-bit extended float: 8 mantissa bytes (explicit integer bit) then
/// sign and 15-bit exponent, little-endian. Exact for every `f64`, including subnormals (which
/// are normal numbers in the wider exponent range), infinities and NaN payloads.
pub(crate) fn f64_to_x87(v: f64) -> [u8; 10] {
    let bits = v.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (e, mant): (u16, u64) = if exp == 0x7ff {
        (0x7fff, (1u64 << 63) | (frac << 11))
    } else if exp == 0 {
        if frac == 0 {
            (0, 0)
        } else {
            let lz = frac.leading_zeros() as i32;
            // value = frac * 2^-1074 with the top set bit at position 63 - lz.
            let e = (63 - lz) - 1074 + 16383;
            (e as u16, frac << lz)
        }
    } else {
        ((exp - 1023 + 16383) as u16, (1u64 << 63) | (frac << 11))
    };
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | e).to_le_bytes());
    out
}

/// x87 encoding of an integer, exact when it fits the 64-bit mantissa (every `i64`/`u64`).
fn int_to_x87(v: i128) -> Option<[u8; 10]> {
    if v == 0 {
        return Some([0; 10]);
    }
    let sign: u16 = if v < 0 { 0x8000 } else { 0 };
    let mag = v.unsigned_abs();
    let lz = mag.leading_zeros();
    let top = 127 - lz; // position of the highest set bit
    let norm = mag << lz; // highest bit at 127
    if norm as u64 != 0 {
        return None; // more than 64 significant bits
    }
    let mant = (norm >> 64) as u64;
    let e = 16383 + top as u16;
    let mut out = [0u8; 10];
    out[..8].copy_from_slice(&mant.to_le_bytes());
    out[8..].copy_from_slice(&(sign | e).to_le_bytes());
    Some(out)
}

fn put_x87(buf: &mut [u8], x: [u8; 10], big: bool) {
    // NumPy stores the 10 bytes in a 16-byte slot; a byte-swapped (`>f16`) value reverses all 16.
    let mut slot = [0u8; 16];
    slot[..10].copy_from_slice(&x);
    if big {
        slot.reverse();
    }
    buf.copy_from_slice(&slot);
}

#[cold]
fn inexact(v: impl Display, to: &str) -> Error {
    Error::write(format!(
        "{v} is not exactly representable as {to}: only lossless conversions are done"
    ))
}

#[cold]
fn out_of_range(v: i128, to: &str) -> Error {
    Error::write(format!("{v} is out of range for {to}"))
}

/// Writes a real number into a float slot (`f2`, `f4`, `f8`, longdouble), exactly or not at all.
fn put_float(buf: &mut [u8], scalar: Scalar, big: bool, v: f64) -> Result<()> {
    match scalar {
        Scalar::F64 => put!(buf, v, big),
        Scalar::F32 => {
            let f = v as f32;
            if f as f64 != v && !v.is_nan() {
                return Err(inexact(v, &leaf_typestr(scalar, big)));
            }
            put!(buf, f, big)
        }
        Scalar::F16 => {
            let h = half::f16::from_f64(v);
            if h.to_f64() != v && !v.is_nan() {
                return Err(inexact(v, &leaf_typestr(scalar, big)));
            }
            put!(buf, h.to_bits(), big)
        }
        Scalar::LongDouble => put_x87(buf, f64_to_x87(v), big),
        _ => unreachable!("put_float on a non-float slot"),
    }
    Ok(())
}

/// Writes an integer into a float slot if the float represents it exactly.
fn put_int_as_float(buf: &mut [u8], scalar: Scalar, big: bool, v: i128) -> Result<()> {
    if scalar == Scalar::LongDouble {
        let x = int_to_x87(v).ok_or_else(|| inexact(v, &leaf_typestr(scalar, big)))?;
        put_x87(buf, x, big);
        return Ok(());
    }
    let f = v as f64;
    // |v| < 2^127 keeps `f as i128` from saturating into a false match.
    if v.unsigned_abs() >= 1u128 << 127 || f as i128 != v {
        return Err(inexact(v, &leaf_typestr(scalar, big)));
    }
    put_float(buf, scalar, big, f)
}

fn complex_part(scalar: Scalar) -> Option<(&'static [Node; 2], Scalar)> {
    match scalar {
        Scalar::Complex64 => Some((&F32_PART, Scalar::F32)),
        Scalar::Complex128 => Some((&F64_PART, Scalar::F64)),
        Scalar::ComplexLongDouble => Some((&LD_PART, Scalar::LongDouble)),
        _ => None,
    }
}

/// Writes `bytes` into an `S<n>` slot, NUL-padded.
fn put_sbytes(buf: &mut [u8], bytes: &[u8], scalar: Scalar) -> Result<()> {
    if bytes.len() > buf.len() {
        return Err(Error::write(format!(
            "a string of {} bytes does not fit in |{} ({} bytes): it would be truncated",
            bytes.len(),
            scalar.type_code(),
            buf.len()
        )));
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()..].fill(0);
    Ok(())
}

/// Writes `s` into a `U<n>` slot as UCS-4, NUL-padded.
fn put_ustr(buf: &mut [u8], s: &str, n: usize, big: bool) -> Result<()> {
    let mut i = 0;
    for c in s.chars() {
        if i == n {
            return Err(Error::write(format!(
                "a string of {} characters does not fit in {} ({n} characters): it would be truncated",
                s.chars().count(),
                leaf_typestr(Scalar::Unicode(n), big)
            )));
        }
        put!(buf[4 * i..4 * i + 4], c as u32, big);
        i += 1;
    }
    buf[4 * i..].fill(0);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The element serializer.

/// Serializes one value into `buf`, the bytes of `node`.
pub(crate) struct ElemSer<'p, 'b> {
    node: &'p Node,
    buf: &'b mut [u8],
}

impl<'p, 'b> ElemSer<'p, 'b> {
    /// A serializer for one value of `node` into `buf` (exactly the node's itemsize).
    #[inline]
    pub(crate) fn new(node: &'p Node, buf: &'b mut [u8]) -> Self {
        ElemSer { node, buf }
    }

    #[cold]
    fn unexpected(&self, what: &str) -> Error {
        Error::write(format!(
            "{what} cannot be stored as {}",
            self.node.describe()
        ))
    }

    /// The scalar slot, or an error naming `what` was given.
    #[inline]
    fn leaf(&self, what: &str) -> Result<(Scalar, bool)> {
        match self.node {
            Node::Leaf { scalar, big } => Ok((*scalar, *big)),
            _ => Err(self.unexpected(what)),
        }
    }

    #[inline(never)]
    fn int(self, v: i128) -> Result<()> {
        let (scalar, big) = self.leaf("an integer")?;
        let buf = self.buf;
        macro_rules! to {
            ($t:ty) => {{
                let x =
                    <$t>::try_from(v).map_err(|_| out_of_range(v, &leaf_typestr(scalar, big)))?;
                put!(buf, x, big)
            }};
        }
        match scalar {
            Scalar::I8 => to!(i8),
            Scalar::I16 => to!(i16),
            Scalar::I32 => to!(i32),
            Scalar::I64 | Scalar::DateTime(..) | Scalar::TimeDelta(..) => to!(i64),
            Scalar::U8 => to!(u8),
            Scalar::U16 => to!(u16),
            Scalar::U32 => to!(u32),
            Scalar::U64 => to!(u64),
            Scalar::F16 | Scalar::F32 | Scalar::F64 | Scalar::LongDouble => {
                put_int_as_float(buf, scalar, big, v)?
            }
            Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                let (_, part) = complex_part(scalar).expect("complex");
                let half = buf.len() / 2;
                let (re, im) = buf.split_at_mut(half);
                put_int_as_float(re, part, big, v)?;
                put_float(im, part, big, 0.0)?;
            }
            Scalar::Bool => {
                return Err(Error::write(format!(
                    "the integer {v} cannot be stored as |b1: only a bool can"
                )))
            }
            Scalar::Bytes(_) | Scalar::Unicode(_) | Scalar::Void(_) => {
                return Err(self_unexpected(scalar, big, "an integer"))
            }
        }
        Ok(())
    }

    #[inline(never)]
    fn float(self, v: f64) -> Result<()> {
        let (scalar, big) = self.leaf("a float")?;
        match scalar {
            Scalar::F16 | Scalar::F32 | Scalar::F64 | Scalar::LongDouble => {
                put_float(self.buf, scalar, big, v)
            }
            Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                let (_, part) = complex_part(scalar).expect("complex");
                let half = self.buf.len() / 2;
                let (re, im) = self.buf.split_at_mut(half);
                put_float(re, part, big, v)?;
                put_float(im, part, big, 0.0)
            }
            _ => Err(Error::write(format!(
                "the float {v} cannot be stored as {}: only lossless conversions are done",
                leaf_typestr(scalar, big)
            ))),
        }
    }

    /// A half-precision value, bit for bit (from `half::f16`'s newtype serialization).
    fn f16_bits(self, bits: u16) -> Result<()> {
        let (scalar, big) = self.leaf("a half-precision float")?;
        if scalar == Scalar::F16 {
            put!(self.buf, bits, big);
            Ok(())
        } else {
            self.float(half::f16::from_bits(bits).to_f64())
        }
    }

    fn text(self, s: &str) -> Result<()> {
        let (scalar, big) = self.leaf("a string")?;
        match scalar {
            Scalar::Bytes(_) => put_sbytes(self.buf, s.as_bytes(), scalar),
            Scalar::Unicode(n) => put_ustr(self.buf, s, n, big),
            Scalar::DateTime(..) | Scalar::TimeDelta(..) if s == "NaT" => {
                put!(self.buf, i64::MIN, big);
                Ok(())
            }
            _ => Err(self_unexpected(scalar, big, "a string")),
        }
    }

    #[inline(always)]
    fn compound_seq(self, len: Option<usize>, positional_record: bool) -> Result<ElemSeq<'p, 'b>> {
        if let Node::Sub {
            base,
            len: n,
            stride,
        } = self.node
        {
            if len.is_none_or(|len| len == *n) {
                return Ok(ElemSeq {
                    mode: SeqMode::Sub {
                        base,
                        stride: *stride,
                        len: *n,
                    },
                    buf: self.buf,
                    i: 0,
                });
            }
        }
        self.compound_seq_slow(len, positional_record)
    }

    #[inline(never)]
    fn compound_seq_slow(
        self,
        len: Option<usize>,
        positional_record: bool,
    ) -> Result<ElemSeq<'p, 'b>> {
        let mode = match self.node {
            Node::Leaf { scalar, big } => match scalar {
                Scalar::Bytes(n) | Scalar::Void(n) => SeqMode::Bytes {
                    n: *n,
                    exact: matches!(scalar, Scalar::Void(_)),
                    scalar: *scalar,
                },
                s => match complex_part(*s) {
                    Some((parts, _)) => SeqMode::Complex {
                        part: &parts[usize::from(*big)],
                    },
                    None => return Err(self.unexpected("a sequence")),
                },
            },
            Node::Record(r) if positional_record => SeqMode::Record(r),
            Node::Record(_) => {
                return Err(self.unexpected("a sequence (use a struct, a map or a tuple)"))
            }
            Node::Sub { .. } => return Err(self.wrong_len(len.unwrap_or(0))),
        };
        Ok(ElemSeq {
            mode,
            buf: self.buf,
            i: 0,
        })
    }

    #[cold]
    fn wrong_len(&self, len: usize) -> Error {
        Error::write(format!(
            "a sequence of {len} items cannot be stored as {}",
            self.node.describe()
        ))
    }

    fn record(self, what: &str) -> Result<RecordSer<'p, 'b>> {
        match self.node {
            Node::Record(rec) => Ok(RecordSer {
                rec,
                buf: self.buf,
                next: 0,
                seen: Vec::new(),
                pending: usize::MAX,
            }),
            _ => Err(self.unexpected(what)),
        }
    }
}

#[cold]
fn self_unexpected(scalar: Scalar, big: bool, what: &str) -> Error {
    Error::write(format!(
        "{what} cannot be stored as {}",
        leaf_typestr(scalar, big)
    ))
}

impl<'p, 'b> ser::Serializer for ElemSer<'p, 'b> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ElemSeq<'p, 'b>;
    type SerializeTuple = ElemSeq<'p, 'b>;
    type SerializeTupleStruct = ElemSeq<'p, 'b>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = RecordSer<'p, 'b>;
    type SerializeStruct = RecordSer<'p, 'b>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn is_human_readable(&self) -> bool {
        false
    }

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<()> {
        match self.leaf("a bool")? {
            (Scalar::Bool, _) => {
                self.buf[0] = u8::from(v);
                Ok(())
            }
            (s, big) => Err(self_unexpected(s, big, "a bool")),
        }
    }

    #[inline]
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.int(v.into())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.int(v.into())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.int(v.into())
    }
    #[inline(always)]
    fn serialize_i64(self, v: i64) -> Result<()> {
        if let Node::Leaf { scalar, big } = self.node {
            if matches!(
                scalar,
                Scalar::I64 | Scalar::DateTime(..) | Scalar::TimeDelta(..)
            ) {
                put!(self.buf, v, *big);
                return Ok(());
            }
        }
        self.int(v.into())
    }
    #[inline]
    fn serialize_i128(self, v: i128) -> Result<()> {
        self.int(v)
    }
    #[inline(always)]
    fn serialize_u8(self, v: u8) -> Result<()> {
        if let Node::Leaf {
            scalar: Scalar::U8, ..
        } = self.node
        {
            self.buf[0] = v;
            return Ok(());
        }
        self.int(v.into())
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.int(v.into())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.int(v.into())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<()> {
        self.int(v.into())
    }
    fn serialize_u128(self, v: u128) -> Result<()> {
        match i128::try_from(v) {
            Ok(v) => self.int(v),
            Err(_) => Err(Error::write(format!(
                "{v} is out of range for {}",
                self.node.describe()
            ))),
        }
    }

    #[inline(always)]
    fn serialize_f32(self, v: f32) -> Result<()> {
        if let Node::Leaf {
            scalar: Scalar::F32,
            big,
        } = self.node
        {
            put!(self.buf, v, *big);
            return Ok(());
        }
        self.float(v.into())
    }

    #[inline(always)]
    fn serialize_f64(self, v: f64) -> Result<()> {
        if let Node::Leaf {
            scalar: Scalar::F64,
            big,
        } = self.node
        {
            put!(self.buf, v, *big);
            return Ok(());
        }
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<()> {
        let mut b = [0u8; 4];
        self.text(v.encode_utf8(&mut b))
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        self.text(v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        if let Node::Sub { .. } = self.node {
            // Bytes for a whole `u1`/`i1` subarray.
            if matches!(
                self.node.innermost(),
                Node::Leaf {
                    scalar: Scalar::U8 | Scalar::I8,
                    ..
                }
            ) && v.len() == self.buf.len()
            {
                self.buf.copy_from_slice(v);
                return Ok(());
            }
            return Err(self.unexpected(&format!("{} bytes", v.len())));
        }
        let (scalar, big) = self.leaf("bytes")?;
        match scalar {
            Scalar::Bytes(_) => put_sbytes(self.buf, v, scalar),
            Scalar::Void(n) if v.len() == n => {
                self.buf.copy_from_slice(v);
                Ok(())
            }
            Scalar::Void(n) => Err(Error::write(format!(
                "{} bytes cannot be stored as |V{n}: exactly {n} are needed",
                v.len()
            ))),
            _ => Err(self_unexpected(scalar, big, "bytes")),
        }
    }

    fn serialize_none(self) -> Result<()> {
        Err(Error::write(format!(
            "None cannot be stored as {}: NumPy arrays have no null \
             (use NaN, a sentinel value or a separate mask field)",
            self.node.describe()
        )))
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        Err(self.unexpected("`()`"))
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<()> {
        Err(self.unexpected(&format!("the unit struct `{name}`")))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        match self.node {
            Node::Leaf {
                scalar: Scalar::Bytes(_) | Scalar::Unicode(_),
                ..
            } => self.text(variant),
            _ => Err(self.unexpected(&format!("the enum variant `{variant}`"))),
        }
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        // `half::f16` derives Serialize as a newtype struct "f16" around its bits.
        if name == "f16" {
            if let Ok(Some(bits)) = value.serialize(U16Capture) {
                return self.f16_bits(bits);
            }
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(self.unexpected(&format!("the enum variant `{name}::{variant}`")))
    }

    #[inline(always)]
    fn serialize_seq(self, len: Option<usize>) -> Result<ElemSeq<'p, 'b>> {
        self.compound_seq(len, false)
    }

    #[inline(always)]
    fn serialize_tuple(self, len: usize) -> Result<ElemSeq<'p, 'b>> {
        self.compound_seq(Some(len), true)
    }

    #[inline(always)]
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<ElemSeq<'p, 'b>> {
        self.compound_seq(Some(len), true)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(self.unexpected(&format!("the enum variant `{name}::{variant}`")))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<RecordSer<'p, 'b>> {
        self.record("a map")
    }

    #[inline(always)]
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<RecordSer<'p, 'b>> {
        match self.node {
            Node::Record(rec) => Ok(RecordSer {
                rec,
                buf: self.buf,
                next: 0,
                seen: Vec::new(),
                pending: usize::MAX,
            }),
            _ => Err(self_struct_err(name, self.node)),
        }
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(self.unexpected(&format!("the enum variant `{name}::{variant}`")))
    }
}

#[cold]
fn self_struct_err(name: &str, node: &Node) -> Error {
    Error::write(format!(
        "the struct `{name}` cannot be stored as {}",
        node.describe()
    ))
}

// ---------------------------------------------------------------------------------------------
// Sequences inside an element: subarray axes, bytes, complex pairs, positional records.

enum SeqMode<'p> {
    Sub {
        base: &'p Node,
        stride: usize,
        len: usize,
    },
    Bytes {
        n: usize,
        exact: bool,
        scalar: Scalar,
    },
    Complex {
        part: &'p Node,
    },
    Record(&'p RecordPlan),
}

pub(crate) struct ElemSeq<'p, 'b> {
    mode: SeqMode<'p>,
    buf: &'b mut [u8],
    i: usize,
}

#[cold]
#[inline(never)]
fn at_index(e: Error, i: usize) -> Error {
    e.in_index(i as u64)
}

impl ElemSeq<'_, '_> {
    #[inline(always)]
    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let i = self.i;
        if let SeqMode::Sub { base, stride, len } = self.mode {
            if i < len {
                let slot = &mut self.buf[i * stride..(i + 1) * stride];
                if let Err(e) = value.serialize(ElemSer::new(base, slot)) {
                    return Err(at_index(e, i));
                }
                self.i += 1;
                return Ok(());
            }
        }
        self.item_slow(value)
    }

    #[inline(never)]
    fn item_slow<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let i = self.i;
        match &self.mode {
            SeqMode::Sub { base, stride, len } => {
                if i >= *len {
                    return Err(Error::write(format!(
                        "more than {len} items for a subarray axis of length {len}"
                    )));
                }
                let slot = &mut self.buf[i * stride..(i + 1) * stride];
                value
                    .serialize(ElemSer::new(base, slot))
                    .map_err(|e| e.in_index(i as u64))?;
            }
            SeqMode::Bytes { n, scalar, .. } => {
                if i >= *n {
                    return Err(Error::write(format!(
                        "more than {n} bytes for |{}: it would be truncated",
                        scalar.type_code()
                    )));
                }
                value.serialize(ElemSer::new(&BYTE, &mut self.buf[i..i + 1]))?;
            }
            SeqMode::Complex { part } => {
                if i >= 2 {
                    return Err(Error::write(
                        "a complex number is a pair (re, im): more than 2 items given",
                    ));
                }
                let half = self.buf.len() / 2;
                value
                    .serialize(ElemSer::new(part, &mut self.buf[i * half..(i + 1) * half]))
                    .map_err(|e| e.in_field(if i == 0 { "real" } else { "imag" }))?;
            }
            SeqMode::Record(rec) => {
                let Some(f) = rec.fields.get(i) else {
                    return Err(Error::write(format!(
                        "a tuple of more than {} items for a record of {} fields",
                        rec.fields.len(),
                        rec.fields.len()
                    )));
                };
                value
                    .serialize(ElemSer::new(&f.node, &mut self.buf[f.start..f.end]))
                    .map_err(|e| e.in_field(&f.name))?;
            }
        }
        self.i += 1;
        Ok(())
    }

    #[inline(always)]
    fn finish(self) -> Result<()> {
        match self.mode {
            SeqMode::Sub { len, .. } if self.i == len => Ok(()),
            _ => self.finish_slow(),
        }
    }

    #[inline(never)]
    fn finish_slow(self) -> Result<()> {
        let i = self.i;
        match self.mode {
            SeqMode::Sub { len, .. } if i != len => Err(Error::write(format!(
                "{i} items for a subarray axis of length {len}"
            ))),
            SeqMode::Bytes { n, exact, .. } => {
                if exact && i != n {
                    return Err(Error::write(format!(
                        "{i} bytes cannot be stored as |V{n}: exactly {n} are needed"
                    )));
                }
                self.buf[i..].fill(0);
                Ok(())
            }
            SeqMode::Complex { .. } if i != 2 => Err(Error::write(format!(
                "a complex number is a pair (re, im): {i} items given"
            ))),
            SeqMode::Record(rec) => {
                if i != rec.fields.len() {
                    return Err(Error::write(format!(
                        "a tuple of {i} items for a record of {} fields",
                        rec.fields.len()
                    )));
                }
                rec.zero_pads(self.buf);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl ser::SerializeSeq for ElemSeq<'_, '_> {
    type Ok = ();
    type Error = Error;
    #[inline(always)]
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    #[inline(always)]
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeTuple for ElemSeq<'_, '_> {
    type Ok = ();
    type Error = Error;
    #[inline(always)]
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    #[inline(always)]
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for ElemSeq<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Records from structs and maps.

impl RecordPlan {
    #[inline]
    fn zero_pads(&self, buf: &mut [u8]) {
        for &(a, b) in &self.pads {
            buf[a..b].fill(0);
        }
    }

    fn find(&self, key: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == key).or_else(|| {
            self.fields
                .iter()
                .position(|f| f.title.as_deref() == Some(key))
        })
    }
}

#[cold]
#[inline(never)]
fn in_field(e: Error, name: &str) -> Error {
    e.in_field(name)
}

pub(crate) struct RecordSer<'p, 'b> {
    rec: &'p RecordPlan,
    buf: &'b mut [u8],
    /// Fields seen so far while they come in dtype order (the fast path).
    next: usize,
    /// Which fields were seen, once they stop coming in order (empty until then).
    seen: Vec<bool>,
    /// Field index of a map key waiting for its value (`usize::MAX`: none).
    pending: usize,
}

impl RecordSer<'_, '_> {
    /// The field for a struct's `&'static str` key, by content; remembers the key's address
    /// for the positional fast path of `serialize_field`.
    #[inline(never)]
    fn locate_static_slow(&mut self, key: &'static str) -> Result<usize> {
        let idx = self.locate(key)?;
        let f = &self.rec.fields[idx];
        if f.name == key {
            // Equal content at this address: a `&'static str` never changes.
            f.key_addr.store(key.as_ptr() as usize, Ordering::Relaxed);
        }
        Ok(idx)
    }

    #[inline]
    fn locate(&mut self, key: &str) -> Result<usize> {
        let fields = &self.rec.fields;
        if self.seen.is_empty() && self.next < fields.len() && fields[self.next].name == key {
            self.next += 1;
            return Ok(self.next - 1);
        }
        self.locate_slow(key)
    }

    #[cold]
    fn locate_slow(&mut self, key: &str) -> Result<usize> {
        let Some(idx) = self.rec.find(key) else {
            let names: Vec<&str> = self.rec.fields.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::write(format!(
                "the dtype has no field `{key}` (fields: {})",
                names.join(", ")
            )));
        };
        if self.seen.is_empty() {
            let next = self.next;
            self.seen = (0..self.rec.fields.len()).map(|i| i < next).collect();
        }
        if self.seen[idx] {
            return Err(Error::write(format!(
                "field `{}` given more than once",
                self.rec.fields[idx].name
            )));
        }
        self.seen[idx] = true;
        Ok(idx)
    }

    #[inline(always)]
    fn write_field<T: ?Sized + Serialize>(&mut self, idx: usize, value: &T) -> Result<()> {
        let f = &self.rec.fields[idx];
        match value.serialize(ElemSer::new(&f.node, &mut self.buf[f.start..f.end])) {
            Ok(()) => Ok(()),
            Err(e) => Err(in_field(e, &f.name)),
        }
    }

    #[inline(always)]
    fn finish(self) -> Result<()> {
        if self.seen.is_empty() && self.next == self.rec.fields.len() && self.rec.pads.is_empty() {
            return Ok(());
        }
        self.finish_slow()
    }

    #[inline(never)]
    fn finish_slow(self) -> Result<()> {
        let complete = if self.seen.is_empty() {
            self.next == self.rec.fields.len()
        } else {
            self.seen.iter().all(|&s| s)
        };
        if !complete {
            return Err(self.missing());
        }
        self.rec.zero_pads(self.buf);
        Ok(())
    }

    #[cold]
    fn missing(&self) -> Error {
        let missing: Vec<&str> = self
            .rec
            .fields
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                if self.seen.is_empty() {
                    *i >= self.next
                } else {
                    !self.seen[*i]
                }
            })
            .map(|(_, f)| f.name.as_str())
            .collect();
        Error::write(format!(
            "no value for field(s) {} of the dtype (missing or skipped in the serialized struct)",
            missing.join(", ")
        ))
    }
}

impl ser::SerializeStruct for RecordSer<'_, '_> {
    type Ok = ();
    type Error = Error;

    #[inline(always)]
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        // The common case, fields in dtype order with keys already seen: write the field found
        // by the positional guess directly (no second lookup by index).
        if let Some(f) = self.rec.fields.get(self.next) {
            if f.key_addr.load(Ordering::Relaxed) == key.as_ptr() as usize
                && f.name.len() == key.len()
                && self.seen.is_empty()
            {
                self.next += 1;
                let r = match self.buf.get_mut(f.start..f.end) {
                    Some(slot) => value.serialize(ElemSer::new(&f.node, slot)),
                    None => Err(Error::write("a field outside its record")),
                };
                return r.map_err(|e| in_field(e, &f.name));
            }
        }
        let idx = self.locate_static_slow(key)?;
        self.write_field(idx, value)
    }

    #[inline(always)]
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl ser::SerializeMap for RecordSer<'_, '_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<()> {
        let key = key.serialize(KeySer)?;
        self.pending = self.locate(&key)?;
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let idx = std::mem::replace(&mut self.pending, usize::MAX);
        if idx == usize::MAX {
            return Err(Error::write("a map value without a key"));
        }
        self.write_field(idx, value)
    }

    fn end(self) -> Result<()> {
        self.finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Small helper serializers: map keys, `half::f16` bits.

/// Defines the scalar methods of a helper serializer as "not accepted".
macro_rules! refuse_scalars {
    ($err:expr) => {
        fn serialize_bool(self, _: bool) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_i8(self, _: i8) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_i16(self, _: i16) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_i32(self, _: i32) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_i64(self, _: i64) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_u8(self, _: u8) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_u32(self, _: u32) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_u64(self, _: u64) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_f32(self, _: f32) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_f64(self, _: f64) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_bytes(self, _: &[u8]) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_none(self) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_unit(self) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<Self::Ok> {
            Err($err)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
            Err($err)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
            Err($err)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct> {
            Err($err)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant> {
            Err($err)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
            Err($err)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
            Err($err)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant> {
            Err($err)
        }
    };
}

/// Serializes a map key to the field name it names.
struct KeySer;

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    #[rustfmt::skip]
    refuse_scalars!(Error::write("a record's map keys must be field names (strings)"));

    fn serialize_u16(self, _: u16) -> Result<String> {
        Err(Error::write(
            "a record's map keys must be field names (strings)",
        ))
    }
    fn serialize_char(self, v: char) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<String> {
        Ok(v.to_string())
    }
}

/// Captures the `u16` inside `half::f16`'s newtype serialization.
struct U16Capture;

impl ser::Serializer for U16Capture {
    type Ok = Option<u16>;
    type Error = Error;
    type SerializeSeq = Impossible<Option<u16>, Error>;
    type SerializeTuple = Impossible<Option<u16>, Error>;
    type SerializeTupleStruct = Impossible<Option<u16>, Error>;
    type SerializeTupleVariant = Impossible<Option<u16>, Error>;
    type SerializeMap = Impossible<Option<u16>, Error>;
    type SerializeStruct = Impossible<Option<u16>, Error>;
    type SerializeStructVariant = Impossible<Option<u16>, Error>;

    #[rustfmt::skip]
    refuse_scalars!(Error::write("not f16 bits"));

    fn serialize_u16(self, v: u16) -> Result<Option<u16>> {
        Ok(Some(v))
    }
    fn serialize_char(self, _: char) -> Result<Option<u16>> {
        Ok(None)
    }
    fn serialize_str(self, _: &str) -> Result<Option<u16>> {
        Ok(None)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<Self::Ok> {
        Ok(None)
    }
}

// ---------------------------------------------------------------------------------------------
// The array level: nested sequences over the array's shape, down to the elements.

/// Receives the elements of an array in C order.
pub(crate) trait Sink {
    /// Writes one element.
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()>;
    /// Index of the next element (for error positions).
    fn position(&self) -> u64;
}

/// Serializes `value` as an array of `shape`: nested sequences down to the elements, each of
/// the length the shape says (checked: non-rectangular input is an error).
pub(crate) fn serialize_nested<S: Sink, T: ?Sized + Serialize>(
    sink: &mut S,
    shape: &[u64],
    value: &T,
) -> Result<()> {
    if shape.is_empty() {
        return sink.element(value);
    }
    value.serialize(NestSer {
        sink,
        shape,
        depth: 0,
    })
}

struct NestSer<'a, S> {
    sink: &'a mut S,
    shape: &'a [u64],
    depth: usize,
}

impl<'a, S: Sink> NestSer<'a, S> {
    #[cold]
    fn not_seq(&self, what: &str) -> Error {
        Error::write(format!(
            "expected a sequence of {} items for axis {} of shape {}, found {what}",
            self.shape[self.depth],
            self.depth,
            pyliteral::repr_shape(self.shape)
        ))
        .at_record(self.sink.position())
    }

    fn seq(self, len: Option<usize>) -> Result<NestSeq<'a, S>> {
        let expected = self.shape[self.depth];
        if let Some(len) = len {
            if len as u64 != expected {
                return Err(non_rectangular(
                    self.shape,
                    self.depth,
                    len as u64,
                    self.sink.position(),
                ));
            }
        }
        Ok(NestSeq {
            sink: self.sink,
            shape: self.shape,
            depth: self.depth,
            count: 0,
        })
    }
}

#[cold]
fn non_rectangular(shape: &[u64], depth: usize, found: u64, at: u64) -> Error {
    Error::write(format!(
        "the nested sequences are not rectangular: axis {depth} of shape {} needs {} items, found {found}",
        pyliteral::repr_shape(shape),
        shape[depth]
    ))
    .at_record(at)
}

struct NestSeq<'a, S> {
    sink: &'a mut S,
    shape: &'a [u64],
    depth: usize,
    count: u64,
}

impl<S: Sink> NestSeq<'_, S> {
    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if self.count >= self.shape[self.depth] {
            return Err(non_rectangular(
                self.shape,
                self.depth,
                self.count + 1,
                self.sink.position(),
            ));
        }
        if self.depth + 1 == self.shape.len() {
            self.sink.element(value)?;
        } else {
            value.serialize(NestSer {
                sink: &mut *self.sink,
                shape: self.shape,
                depth: self.depth + 1,
            })?;
        }
        self.count += 1;
        Ok(())
    }

    fn finish(self) -> Result<()> {
        if self.count != self.shape[self.depth] {
            return Err(non_rectangular(
                self.shape,
                self.depth,
                self.count,
                self.sink.position(),
            ));
        }
        Ok(())
    }
}

impl<S: Sink> ser::SerializeSeq for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<S: Sink> ser::SerializeTuple for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<S: Sink> ser::SerializeTupleStruct for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

macro_rules! nest_refuse {
    ($($m:ident($($t:ty),*) => $what:expr;)*) => {
        $(fn $m(self $(, _: $t)*) -> Result<()> { Err(self.not_seq($what)) })*
    };
}

impl<'a, S: Sink> ser::Serializer for NestSer<'a, S> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = NestSeq<'a, S>;
    type SerializeTuple = NestSeq<'a, S>;
    type SerializeTupleStruct = NestSeq<'a, S>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn is_human_readable(&self) -> bool {
        false
    }

    nest_refuse! {
        serialize_bool(bool) => "a bool";
        serialize_i8(i8) => "an integer";
        serialize_i16(i16) => "an integer";
        serialize_i32(i32) => "an integer";
        serialize_i64(i64) => "an integer";
        serialize_i128(i128) => "an integer";
        serialize_u8(u8) => "an integer";
        serialize_u16(u16) => "an integer";
        serialize_u32(u32) => "an integer";
        serialize_u64(u64) => "an integer";
        serialize_u128(u128) => "an integer";
        serialize_f32(f32) => "a float";
        serialize_f64(f64) => "a float";
        serialize_char(char) => "a char";
        serialize_str(&str) => "a string";
        serialize_bytes(&[u8]) => "bytes";
        serialize_none() => "None";
        serialize_unit() => "`()`";
        serialize_unit_struct(&'static str) => "a unit struct";
        serialize_unit_variant(&'static str, u32, &'static str) => "an enum variant";
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(self.not_seq("an enum variant"))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<NestSeq<'a, S>> {
        self.seq(len)
    }

    fn serialize_tuple(self, len: usize) -> Result<NestSeq<'a, S>> {
        self.seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<NestSeq<'a, S>> {
        self.seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(self.not_seq("an enum variant"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(self.not_seq("a map"))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(self.not_seq("a struct"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(self.not_seq("an enum variant"))
    }
}

// ---------------------------------------------------------------------------------------------
// Shape inference: how deep do sequences nest before reaching elements of the dtype?

/// What kind of serde value is an element of the dtype, for shape inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElemKind {
    /// A record: structs and maps are elements, so are tuples of scalars (positional records).
    Record,
    /// Complex: a 2-sequence of numbers is one element.
    Complex,
    /// `S`/`V`: a sequence of numbers (bytes) is one element.
    ByteLike,
    /// Other scalars: any sequence is an axis.
    Scalar,
}

impl ElemKind {
    pub(crate) fn of(dtype: &DType) -> ElemKind {
        match dtype {
            DType::Record(_) => ElemKind::Record,
            DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                    ElemKind::Complex
                }
                Scalar::Bytes(_) | Scalar::Void(_) => ElemKind::ByteLike,
                _ => ElemKind::Scalar,
            },
            DType::Array(b, _) => ElemKind::of(b),
        }
    }
}

/// The largest number of array dimensions (NumPy's `NPY_MAXDIMS`).
const MAX_DIMS: usize = 64;

/// Infers the array shape of `value`: the lengths of nested sequences along the first item of
/// each, down to values that are elements of `kind`. Rectangularity is checked when writing.
pub(crate) fn infer_shape<T: ?Sized + Serialize>(value: &T, kind: ElemKind) -> Result<Vec<u64>> {
    match value.serialize(Probe { kind, depth: 0 })? {
        Probed::Dims(mut v) => {
            v.reverse();
            Ok(v)
        }
        Probed::Number | Probed::Element | Probed::Record => Ok(Vec::new()),
    }
}

enum Probed {
    Number,
    /// A scalar that is not a number (bool, string, bytes...).
    Element,
    /// A struct or map (a record element).
    Record,
    /// Axis lengths, innermost first.
    Dims(Vec<u64>),
}

struct Probe {
    kind: ElemKind,
    depth: usize,
}

struct ProbeSeq {
    kind: ElemKind,
    depth: usize,
    tuple: bool,
    count: u64,
    first: Option<Probed>,
}

impl ProbeSeq {
    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if self.count == 0 {
            self.first = Some(value.serialize(Probe {
                kind: self.kind,
                depth: self.depth + 1,
            })?);
        }
        self.count += 1;
        Ok(())
    }

    fn finish(self) -> Result<Probed> {
        let first_is_number = matches!(self.first, Some(Probed::Number));
        let first_is_scalar = matches!(self.first, Some(Probed::Number | Probed::Element));
        match self.kind {
            ElemKind::Complex if first_is_number && self.count == 2 => return Ok(Probed::Element),
            ElemKind::ByteLike if first_is_number => return Ok(Probed::Element),
            ElemKind::Record if self.tuple && first_is_scalar => return Ok(Probed::Record),
            _ => {}
        }
        Ok(Probed::Dims(match self.first {
            Some(Probed::Dims(mut inner)) => {
                inner.push(self.count);
                inner
            }
            _ => vec![self.count],
        }))
    }
}

impl ser::SerializeSeq for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

impl ser::SerializeTuple for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

/// An element found by the probe: its contents are checked when it is written.
struct ProbeElement;

impl ser::SerializeMap for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Record)
    }
}

impl ser::SerializeStruct for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Record)
    }
}

impl ser::SerializeTupleVariant for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Element)
    }
}

impl ser::SerializeStructVariant for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Element)
    }
}

macro_rules! probe_leaf {
    ($($m:ident($($t:ty),*) => $r:expr;)*) => {
        $(fn $m(self $(, _: $t)*) -> Result<Probed> { Ok($r) })*
    };
}

impl ser::Serializer for Probe {
    type Ok = Probed;
    type Error = Error;
    type SerializeSeq = ProbeSeq;
    type SerializeTuple = ProbeSeq;
    type SerializeTupleStruct = ProbeSeq;
    type SerializeTupleVariant = ProbeElement;
    type SerializeMap = ProbeElement;
    type SerializeStruct = ProbeElement;
    type SerializeStructVariant = ProbeElement;

    fn is_human_readable(&self) -> bool {
        false
    }

    probe_leaf! {
        serialize_bool(bool) => Probed::Element;
        serialize_i8(i8) => Probed::Number;
        serialize_i16(i16) => Probed::Number;
        serialize_i32(i32) => Probed::Number;
        serialize_i64(i64) => Probed::Number;
        serialize_i128(i128) => Probed::Number;
        serialize_u8(u8) => Probed::Number;
        serialize_u16(u16) => Probed::Number;
        serialize_u32(u32) => Probed::Number;
        serialize_u64(u64) => Probed::Number;
        serialize_u128(u128) => Probed::Number;
        serialize_f32(f32) => Probed::Number;
        serialize_f64(f64) => Probed::Number;
        serialize_char(char) => Probed::Element;
        serialize_str(&str) => Probed::Element;
        serialize_bytes(&[u8]) => Probed::Element;
        serialize_none() => Probed::Element;
        serialize_unit() => Probed::Element;
        serialize_unit_struct(&'static str) => Probed::Element;
        serialize_unit_variant(&'static str, u32, &'static str) => Probed::Element;
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Probed> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Probed> {
        if name == "f16" {
            return Ok(Probed::Number);
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Probed> {
        Ok(Probed::Element)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<ProbeSeq> {
        self.seq(false)
    }

    fn serialize_tuple(self, _: usize) -> Result<ProbeSeq> {
        self.seq(true)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<ProbeSeq> {
        self.seq(true)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }
}

impl Probe {
    fn seq(self, tuple: bool) -> Result<ProbeSeq> {
        if self.depth >= MAX_DIMS {
            return Err(Error::limit(
                "array dimensions",
                MAX_DIMS as u64,
                self.depth as u64 + 1,
            ));
        }
        Ok(ProbeSeq {
            kind: self.kind,
            depth: self.depth,
            tuple,
            count: 0,
            first: None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// `Value` is Serialize.

/// Serializes as the matching serde shape: numbers as themselves, `Complex` as a `(re, im)`
/// tuple, `Bytes`/`Void` as bytes, `String` as a string, datetimes as their raw `i64`, `List`
/// as a sequence and `Record` as a map from field name to value (in dtype order). Writing a
/// `Value` with this crate's writer therefore stores it back into the dtype it was read from.
impl Serialize for Value {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(v) => s.serialize_i64(*v),
            Value::UInt(v) => s.serialize_u64(*v),
            Value::Float(v) => s.serialize_f64(*v),
            Value::Complex(re, im) => (re, im).serialize(s),
            Value::Bytes(b) | Value::Void(b) => s.serialize_bytes(b),
            Value::String(v) => s.serialize_str(v),
            Value::DateTime(v) | Value::TimeDelta(v) => s.serialize_i64(*v),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Record(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// Encodes `value` as one element of `dtype`.
    fn enc<T: Serialize + ?Sized>(dtype: &str, value: &T) -> Result<Vec<u8>> {
        let dt: DType = dtype.parse().unwrap();
        let plan = Plan::new(&dt).unwrap();
        let mut buf = vec![0xAAu8; plan.itemsize];
        value.serialize(ElemSer::new(&plan.root, &mut buf))?;
        Ok(buf)
    }

    fn ok<T: Serialize + ?Sized>(dtype: &str, value: &T) -> Vec<u8> {
        enc(dtype, value).unwrap_or_else(|e| panic!("{dtype}: {e}"))
    }

    fn err<T: Serialize + ?Sized>(dtype: &str, value: &T) -> String {
        match enc(dtype, value) {
            Ok(b) => panic!("{dtype}: expected an error, wrote {b:?}"),
            Err(e) => {
                assert_eq!(e.kind().code(), "write", "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn integers_both_orders_value_checked() {
        assert_eq!(ok("|b1", &true), [1]);
        assert_eq!(ok("|b1", &false), [0]);
        assert_eq!(ok("|i1", &-2i64), [0xfe]);
        assert_eq!(ok("|u1", &255u32), [255]);
        assert_eq!(ok("<i2", &-2i8), [0xfe, 0xff]);
        assert_eq!(ok(">i2", &-2i8), [0xff, 0xfe]);
        assert_eq!(ok("<u2", &0x1234u64), [0x34, 0x12]);
        assert_eq!(ok(">u2", &0x1234u64), [0x12, 0x34]);
        assert_eq!(ok("<i4", &7u64), 7i32.to_le_bytes());
        assert_eq!(ok(">i4", &-7i128), (-7i32).to_be_bytes());
        assert_eq!(ok("<u4", &7u8), 7u32.to_le_bytes());
        assert_eq!(ok(">u4", &7u8), 7u32.to_be_bytes());
        assert_eq!(ok("<i8", &i64::MIN), i64::MIN.to_le_bytes());
        assert_eq!(ok(">i8", &i64::MIN), i64::MIN.to_be_bytes());
        assert_eq!(ok("<u8", &u64::MAX), u64::MAX.to_le_bytes());
        assert_eq!(ok(">u8", &u64::MAX), u64::MAX.to_be_bytes());
        assert!(err("|i1", &128i32).contains("128 is out of range for |i1"));
        assert!(err("<u4", &-1i32).contains("out of range for <u4"));
        assert!(err("<i4", &(u64::MAX)).contains("out of range"));
        assert!(err("<u8", &u128::MAX).contains("out of range"));
        assert!(err("|b1", &1).contains("only a bool"));
        assert!(err("<i4", &1.0f64).contains("only lossless"));
        assert!(err("|u1", &true).contains("a bool cannot be stored as |u1"));
    }

    #[test]
    fn floats_exact_only() {
        assert_eq!(ok("<f8", &1.5f64), 1.5f64.to_le_bytes());
        assert_eq!(ok(">f8", &1.5f64), 1.5f64.to_be_bytes());
        assert_eq!(ok("<f4", &1.5f64), 1.5f32.to_le_bytes());
        assert_eq!(ok(">f4", &0.1f32), 0.1f32.to_be_bytes());
        assert_eq!(ok("<f8", &0.1f32), (0.1f32 as f64).to_le_bytes());
        assert!(err("<f4", &0.1f64).contains("not exactly representable as <f4"));
        assert_eq!(ok("<f4", &f64::NAN)[..], f32::NAN.to_le_bytes());
        assert_eq!(ok("<f4", &f64::INFINITY), f32::INFINITY.to_le_bytes());
        // Integers into floats when exact.
        assert_eq!(ok("<f8", &3i32), 3.0f64.to_le_bytes());
        assert_eq!(ok("<f4", &16777216i64), 16777216f32.to_le_bytes());
        assert!(err("<f4", &16777217i64).contains("not exactly representable"));
        assert!(err("<f8", &(i64::MAX)).contains("not exactly representable"));
        // f2
        assert_eq!(
            ok("<f2", &1.5f64),
            half::f16::from_f32(1.5).to_bits().to_le_bytes()
        );
        assert_eq!(
            ok(">f2", &-2.0f32),
            half::f16::from_f32(-2.0).to_bits().to_be_bytes()
        );
        assert!(err("<f2", &0.1f32).contains("<f2"));
        assert!(err("<f2", &70000.0f64).contains("<f2"));
    }

    /// `half::f16` derives Serialize as a newtype "f16" around its bits (when its `serde`
    /// feature is on); emulate exactly that shape.
    struct F16(u16);
    impl Serialize for F16 {
        fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            s.serialize_newtype_struct("f16", &self.0)
        }
    }

    #[test]
    fn half_bits_taken_exactly() {
        let h = half::f16::from_f32(0.1);
        assert_eq!(ok("<f2", &F16(h.to_bits())), h.to_bits().to_le_bytes());
        assert_eq!(ok(">f2", &F16(h.to_bits())), h.to_bits().to_be_bytes());
        assert_eq!(ok("<f4", &F16(h.to_bits())), h.to_f32().to_le_bytes());
        // A NaN with payload survives bit for bit.
        assert_eq!(ok("<f2", &F16(0x7e01)), 0x7e01u16.to_le_bytes());
    }

    fn x87(v: f64) -> Vec<u8> {
        ok("<f16", &v)
    }

    #[test]
    fn longdouble_encoding() {
        // Reference bytes from NumPy: np.array([...], dtype='<f16').tobytes()[:10].
        assert_eq!(x87(1.0)[..10], [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
        assert_eq!(x87(-2.0)[..10], [0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0xc0]);
        assert_eq!(
            x87(1e300)[..10],
            [0, 224, 172, 3, 64, 228, 33, 191, 227, 67]
        );
        assert_eq!(
            x87(0.1)[..10],
            [0, 208, 204, 204, 204, 204, 204, 204, 251, 63]
        );
        assert_eq!(x87(0.0), [0u8; 16]);
        assert_eq!(x87(-0.0)[9], 0x80);
        assert_eq!(
            x87(f64::INFINITY)[..10],
            [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x7f]
        );
        assert_eq!(x87(f64::NAN)[..10], [0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x7f]);
        // Smallest subnormal f64 2^-1074 is normal in x87: exponent 16383-1074.
        let e = 16383u16 - 1074;
        let mut want = vec![0, 0, 0, 0, 0, 0, 0, 0x80];
        want.extend_from_slice(&e.to_le_bytes());
        assert_eq!(x87(f64::from_bits(1))[..10], want[..]);
        // Padding bytes are zero; big-endian reverses all 16 bytes.
        assert_eq!(x87(1.0)[10..], [0u8; 6]);
        let mut be = ok(">f16", &1.0f64);
        be.reverse();
        assert_eq!(be, x87(1.0));
        // Integers: exact up to 64 bits of mantissa.
        assert_eq!(ok("<f16", &1i32), x87(1.0));
        let m = ok("<f16", &u64::MAX);
        assert_eq!(m[..8], [0xff; 8]);
        assert_eq!(u16::from_le_bytes([m[8], m[9]]), 16383 + 63);
        assert!(err("<f16", &((1i128 << 65) + 1)).contains("not exactly"));
    }

    #[test]
    fn complex_pairs() {
        let mut want = 1.5f32.to_le_bytes().to_vec();
        want.extend_from_slice(&(-2f32).to_le_bytes());
        assert_eq!(ok("<c8", &(1.5f32, -2.0f32)), want);
        assert_eq!(ok("<c8", &[1.5f64, -2.0]), want);
        let mut want = 1.5f64.to_be_bytes().to_vec();
        want.extend_from_slice(&0f64.to_be_bytes());
        assert_eq!(ok(">c16", &1.5f64), want);
        let c = ok(">c32", &(1.0f64, 2.0f64));
        let mut re = x87(1.0);
        re.reverse();
        let mut im = x87(2.0);
        im.reverse();
        assert_eq!(c[..16], re[..]);
        assert_eq!(c[16..], im[..]);
        assert!(err("<c8", &(1.0f64, 0.1f64)).contains("imag"));
        assert!(err("<c16", &[1.0f64, 2.0, 3.0]).contains("pair"));
        assert!(err("<c16", &[1.0f64]).contains("1 items"));
    }

    #[test]
    fn strings_exact_width_and_too_long() {
        assert_eq!(ok("|S5", "abc"), b"abc\0\0");
        assert_eq!(ok("|S5", "abcde"), b"abcde");
        assert_eq!(ok("|S3", &serde_bytes_like(b"a\0b")), b"a\0b");
        assert_eq!(ok("|S3", &[104u8, 105]), b"hi\0");
        assert_eq!(ok("|S2", &'x'), b"x\0");
        let e = err("|S5", "abcdef");
        assert!(e.contains("6 bytes") && e.contains("|S5"), "{e}");
        assert!(err("|S2", &[1u8, 2, 3]).contains("truncated"));
        let mut want = Vec::new();
        for c in ['é', '€', 0 as char] {
            want.extend_from_slice(&(c as u32).to_le_bytes());
        }
        assert_eq!(ok("<U3", "é€"), want);
        let mut want = Vec::new();
        for c in ['é', '€', 0 as char] {
            want.extend_from_slice(&(c as u32).to_be_bytes());
        }
        assert_eq!(ok(">U3", "é€"), want);
        assert_eq!(ok("<U2", "ab").len(), 8);
        let e = err("<U2", "abc");
        assert!(e.contains("3 characters") && e.contains("<U2"), "{e}");
        assert_eq!(ok("|V2", &serde_bytes_like(b"\x01\x02")), [1, 2]);
        assert_eq!(ok("|V2", &[1u8, 2]), [1, 2]);
        assert!(err("|V3", &serde_bytes_like(b"\x01")).contains("exactly 3"));
        assert!(err("<U3", &serde_bytes_like(b"x")).contains("bytes cannot be stored as <U3"));
    }

    /// Serializes as serde bytes.
    struct Bytes<'a>(&'a [u8]);
    impl Serialize for Bytes<'_> {
        fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    fn serde_bytes_like(b: &[u8]) -> Bytes<'_> {
        Bytes(b)
    }

    #[test]
    fn datetimes_and_nat() {
        assert_eq!(ok("<M8[D]", &5i64), 5i64.to_le_bytes());
        assert_eq!(ok(">m8[25ms]", &-5i32), (-5i64).to_be_bytes());
        assert_eq!(ok("<M8[ns]", "NaT"), i64::MIN.to_le_bytes());
        assert!(err("<M8[D]", &u64::MAX).contains("out of range"));
        assert!(err("<M8[D]", "2020-01-01").contains("string"));
    }

    #[test]
    fn none_refused_some_written() {
        let e = err("<f8", &None::<f64>);
        assert!(e.contains("no null"), "{e}");
        assert_eq!(ok("<f8", &Some(1.0f64)), 1.0f64.to_le_bytes());
        assert!(err("<f8", &()).contains("`()`"));
    }

    #[derive(Serialize, Clone)]
    struct Inner {
        x: u8,
        y: i16,
    }

    #[derive(Serialize)]
    struct Outer {
        a: i32,
        inner: Inner,
        name: &'static str,
        v: [f32; 2],
    }

    const OUTER: &str = "[('a', '<i4'), ('inner', [('x', '|u1'), ('', '|V1'), ('y', '>i2')]), \
                         ('', '|V2'), ('name', '|S4'), ('v', '<f4', (2,))]";

    #[test]
    fn nested_records_with_zeroed_padding() {
        let rec = Outer {
            a: -1,
            inner: Inner { x: 7, y: 0x102 },
            name: "ab",
            v: [1.0, 2.0],
        };
        let b = ok(OUTER, &rec);
        let mut want = (-1i32).to_le_bytes().to_vec();
        want.extend_from_slice(&[7, 0, 1, 2]); // x, pad, y big-endian
        want.extend_from_slice(&[0, 0]); // pad
        want.extend_from_slice(b"ab\0\0");
        want.extend_from_slice(&1f32.to_le_bytes());
        want.extend_from_slice(&2f32.to_le_bytes());
        assert_eq!(b, want);
    }

    #[test]
    fn record_errors_name_the_field_path() {
        let rec = Outer {
            a: 1,
            inner: Inner { x: 1, y: 2 },
            name: "toolong",
            v: [0.0; 2],
        };
        let e = enc(OUTER, &rec).unwrap_err();
        assert_eq!(e.position().field.as_deref(), Some("name"));
        assert!(e.to_string().contains("7 bytes"), "{e}");

        let dt = "[('inner', [('x', '|i1'), ('y', '<i2')])]";
        #[derive(Serialize)]
        struct W {
            inner: Inner,
        }
        let e = enc(
            dt,
            &W {
                inner: Inner { x: 200, y: 0 },
            },
        )
        .unwrap_err();
        assert_eq!(e.position().field.as_deref(), Some("inner.x"));

        let e = enc(
            "[('v', '<i2', (2, 2))]",
            &serde_json::json!({"v": [[1, 2], [3, 70000]]}),
        )
        .unwrap_err();
        assert_eq!(e.position().field.as_deref(), Some("v[1][1]"));
    }

    #[test]
    fn records_by_name_map_tuple_and_missing_fields() {
        let dt = "[('a', '<i4'), ('b', '|u1')]";
        #[derive(Serialize)]
        struct Rev {
            b: u8,
            a: i32,
        }
        let want = [1, 0, 0, 0, 2];
        assert_eq!(ok(dt, &Rev { b: 2, a: 1 }), want);
        assert_eq!(ok(dt, &serde_json::json!({"b": 2, "a": 1})), want);
        assert_eq!(ok(dt, &(1i32, 2u8)), want);
        #[derive(Serialize)]
        struct OnlyA {
            a: i32,
        }
        assert!(err(dt, &OnlyA { a: 1 }).contains("no value for field(s) b"));
        #[derive(Serialize)]
        struct Extra {
            a: i32,
            b: u8,
            c: u8,
        }
        assert!(err(dt, &Extra { a: 1, b: 2, c: 3 }).contains("no field `c`"));
        assert!(err(dt, &(1i32,)).contains("1 items"));
        assert!(err("<f8", &Rev { b: 1, a: 1 }).contains("struct `Rev`"));
        // Titles are accepted as keys.
        let titled = DType::Record(
            crate::dtype::Record::packed([("a", DType::scalar(Scalar::U8))])
                .unwrap()
                .with_title("a", "Alpha")
                .unwrap(),
        );
        assert_eq!(ok(&titled.descr(), &serde_json::json!({"Alpha": 9})), [9]);
    }

    #[test]
    fn subarrays_nested_and_bytes() {
        assert_eq!(
            ok("('<i2', (2, 2))", &[[1i16, 2], [3, 4]]),
            [1, 0, 2, 0, 3, 0, 4, 0]
        );
        assert!(err("('<i2', (2, 2))", &[1i16, 2, 3, 4]).contains("4 items"));
        assert!(err("('<i2', (2, 2))", &vec![vec![1i16, 2], vec![3]]).contains("1 items"));
        assert_eq!(ok("('|u1', (3,))", &serde_bytes_like(b"abc")), b"abc");
        assert!(err("('|u1', (3,))", &serde_bytes_like(b"ab")).contains("2 bytes"));
        // A nested subarray descr flattens.
        assert_eq!(
            ok("(('|u1', (2,)), (2,))", &[[1u8, 2], [3, 4]]),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn unit_variants_into_strings() {
        #[derive(Serialize)]
        enum Color {
            Red,
        }
        assert_eq!(ok("|S4", &Color::Red), b"Red\0");
        assert!(err("<i4", &Color::Red).contains("Red"));
    }

    #[test]
    fn value_serializes_back() {
        let v = Value::Record(vec![
            ("a".into(), Value::Int(-1)),
            ("c".into(), Value::Complex(1.0, 2.0)),
            ("s".into(), Value::Bytes(b"hi".to_vec())),
            ("u".into(), Value::String("é".into())),
            ("t".into(), Value::DateTime(Value::NAT)),
            (
                "l".into(),
                Value::List(vec![Value::Float(0.5), Value::UInt(2)]),
            ),
            ("v".into(), Value::Void(vec![9, 8])),
            ("b".into(), Value::Bool(true)),
        ]);
        let dt = "[('a', '<i2'), ('c', '<c8'), ('s', '|S3'), ('u', '<U1'), ('t', '<M8[s]'), \
                  ('l', '<f4', (2,)), ('v', '|V2'), ('b', '|b1')]";
        let b = ok(dt, &v);
        let mut want = (-1i16).to_le_bytes().to_vec();
        want.extend_from_slice(&1f32.to_le_bytes());
        want.extend_from_slice(&2f32.to_le_bytes());
        want.extend_from_slice(b"hi\0");
        want.extend_from_slice(&0xe9u32.to_le_bytes());
        want.extend_from_slice(&i64::MIN.to_le_bytes());
        want.extend_from_slice(&0.5f32.to_le_bytes());
        want.extend_from_slice(&2f32.to_le_bytes());
        want.extend_from_slice(&[9, 8, 1]);
        assert_eq!(b, want);
    }

    #[test]
    fn shape_inference() {
        let k = ElemKind::Scalar;
        assert_eq!(infer_shape(&1.0f64, k).unwrap(), Vec::<u64>::new());
        assert_eq!(infer_shape(&vec![1.0f64; 3], k).unwrap(), [3]);
        assert_eq!(infer_shape(&vec![[1i32; 2]; 3], k).unwrap(), [3, 2]);
        assert_eq!(infer_shape(&Vec::<f64>::new(), k).unwrap(), [0]);
        assert_eq!(infer_shape(&vec![Vec::<f64>::new(); 2], k).unwrap(), [2, 0]);
        // Complex: pairs of numbers are elements.
        let c = vec![(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)];
        assert_eq!(infer_shape(&c, ElemKind::Complex).unwrap(), [3]);
        assert_eq!(
            infer_shape(&[[1.0, 2.0]; 2], ElemKind::Scalar).unwrap(),
            [2, 2]
        );
        // Byte strings from sequences of u8.
        assert_eq!(
            infer_shape(&vec![[1u8, 2]; 4], ElemKind::ByteLike).unwrap(),
            [4]
        );
        assert_eq!(
            infer_shape(&vec!["ab"; 4], ElemKind::ByteLike).unwrap(),
            [4]
        );
        // Records: structs and positional tuples are elements.
        assert_eq!(
            infer_shape(&vec![(1, 2.0); 5], ElemKind::Record).unwrap(),
            [5]
        );
        let recs = vec![vec![Inner { x: 1, y: 2 }]; 2];
        assert_eq!(infer_shape(&recs, ElemKind::Record).unwrap(), [2, 1]);
        // A fixed-size array (a tuple) of structs is an axis, not a positional record.
        assert_eq!(
            infer_shape(&[Inner { x: 1, y: 2 }], ElemKind::Record).unwrap(),
            [1]
        );
        let mut deep = serde_json::json!(1);
        for _ in 0..70 {
            deep = serde_json::json!([deep]);
        }
        assert_eq!(
            infer_shape(&deep, k).unwrap_err().kind().code(),
            "limit_exceeded"
        );
    }
}
