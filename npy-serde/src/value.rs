//! A dynamically typed element value, like `serde_json::Value`, for reading files whose schema
//! is not known at compile time, and [`decode_value`]: one value's bytes into it, straight
//! from the dtype (the ground floor that the readers and the pickle machine both stand on).

use crate::binary16;
use crate::dtype::{DType, PlainType, Scalar};
use crate::error::{Error, Result};
use crate::header::count_of;
use crate::text::{decode_ucs4, longdouble_to_f64, strip_nuls};

/// One element (or part of one) of a NumPy array.
///
/// Scalars map to the variant of their kind; subarrays and array dimensions are `List`s in C
/// order; records are `Record`s with fields in dtype order (padding omitted).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `b1`.
    Bool(bool),
    /// `i1`..`i8`.
    Int(i64),
    /// `u1`..`u8`.
    UInt(u64),
    /// `f2`, `f4`, `f8`, and longdouble rounded to the nearest `f64`.
    Float(f64),
    /// `c8`, `c16`, `c32`: `(re, im)`.
    Complex(f64, f64),
    /// `S<n>`: bytes with trailing NULs stripped (as NumPy does).
    Bytes(Vec<u8>),
    /// `U<n>`: the string with trailing NULs stripped.
    String(String),
    /// `V<n>`: raw bytes.
    Void(Vec<u8>),
    /// `M8`: the raw int64 count of the dtype's unit since the epoch; `i64::MIN` is NaT.
    DateTime(i64),
    /// `m8`: the raw int64 count of the dtype's unit; `i64::MIN` is NaT.
    TimeDelta(i64),
    /// A subarray, or one axis of the array.
    List(Vec<Value>),
    /// A record: `(name, value)` in dtype order.
    Record(Vec<(String, Value)>),
}

impl Value {
    /// The NaT (not-a-time) marker of `datetime64`/`timedelta64`.
    pub const NAT: i64 = i64::MIN;

    /// The field `name` of a record value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Record(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A whole array whose schema is only known at run time: its dtype, shape, order and values.
///
/// `values` holds one [`Value`] per element, flat, in logical C order (a Fortran-order file's
/// values are reordered on reading), so `values.len()` is the product of `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The element type.
    pub dtype: crate::dtype::DType,
    /// The shape; empty for 0-d.
    pub shape: Vec<u64>,
    /// Whether the file stores the data in Fortran order (the values here are in C order).
    pub fortran_order: bool,
    /// The elements, flat, in logical C order.
    pub values: Vec<Value>,
}

/// Decodes one value of `dtype` from exactly its bytes; `offset` is the stream offset of
/// `bytes[0]` (for errors).
pub fn decode_value(dtype: &DType, bytes: &[u8], offset: u64, max_empty: u64) -> Result<Value> {
    let short =
        || Error::eof("a value", dtype.itemsize() as u64, bytes.len() as u64).at_byte(offset);
    match dtype {
        DType::Plain(p) => decode_plain(*p, bytes, offset).ok_or_else(short)?,
        DType::Record(r) => {
            let mut out = Vec::with_capacity(r.fields().len());
            for f in r.fields() {
                let end = f.offset.checked_add(f.dtype.itemsize()).ok_or_else(short)?;
                let b = bytes.get(f.offset..end).ok_or_else(short)?;
                let v = decode_value(&f.dtype, b, offset + f.offset as u64, max_empty)
                    .map_err(|e| e.in_field(&f.name))?;
                out.push((f.name.clone(), v));
            }
            Ok(Value::Record(out))
        }
        DType::Array(base, shape) => decode_sub(base, shape, bytes, offset, max_empty),
    }
}

fn decode_sub(
    base: &DType,
    dims: &[u64],
    bytes: &[u8],
    offset: u64,
    max_empty: u64,
) -> Result<Value> {
    let Some((&n, rest)) = dims.split_first() else {
        return decode_value(base, bytes, offset, max_empty);
    };
    let items = count_of(rest)?.saturating_mul(n);
    if base.itemsize() == 0 && items > max_empty {
        return Err(
            Error::limit("the number of zero-byte subarray items", max_empty, items)
                .at_byte(offset),
        );
    }
    let child = if n == 0 { 0 } else { bytes.len() / n as usize };
    let mut out = Vec::with_capacity(n.min(1 << 16) as usize);
    for i in 0..n as usize {
        let start = i * child;
        let b = bytes.get(start..start + child).ok_or_else(|| {
            Error::eof("a subarray item", child as u64, 0).at_byte(offset + start as u64)
        })?;
        out.push(
            decode_sub(base, rest, b, offset + start as u64, max_empty)
                .map_err(|e| e.in_index(i as u64))?,
        );
    }
    Ok(Value::List(out))
}

fn decode_plain(p: PlainType, b: &[u8], offset: u64) -> Option<Result<Value>> {
    let swap = p.order().needs_swap();
    fn arr<const N: usize>(b: &[u8], swap: bool) -> Option<[u8; N]> {
        let mut a = *b.first_chunk::<N>()?;
        if swap {
            a.reverse();
        }
        Some(a)
    }
    let ld = |b: &[u8]| -> Option<f64> { arr::<16>(b, swap).map(longdouble_to_f64) };
    Some(Ok(match p.scalar() {
        Scalar::Bool => match *b.first()? {
            0 => Value::Bool(false),
            1 => Value::Bool(true),
            x => {
                return Some(Err(Error::invalid_value(format!(
                    "bool byte {x} is neither 0 nor 1"
                ))
                .at_byte(offset)))
            }
        },
        Scalar::I8 => Value::Int(*b.first()? as i8 as i64),
        Scalar::I16 => Value::Int(i16::from_ne_bytes(arr(b, swap)?) as i64),
        Scalar::I32 => Value::Int(i32::from_ne_bytes(arr(b, swap)?) as i64),
        Scalar::I64 => Value::Int(i64::from_ne_bytes(arr(b, swap)?)),
        Scalar::U8 => Value::UInt(*b.first()? as u64),
        Scalar::U16 => Value::UInt(u16::from_ne_bytes(arr(b, swap)?) as u64),
        Scalar::U32 => Value::UInt(u32::from_ne_bytes(arr(b, swap)?) as u64),
        Scalar::U64 => Value::UInt(u64::from_ne_bytes(arr(b, swap)?)),
        Scalar::F16 => Value::Float(binary16::to_f64(u16::from_ne_bytes(arr(b, swap)?))),
        Scalar::F32 => Value::Float(f32::from_ne_bytes(arr(b, swap)?) as f64),
        Scalar::F64 => Value::Float(f64::from_ne_bytes(arr(b, swap)?)),
        Scalar::LongDouble => Value::Float(ld(b)?),
        Scalar::Complex64 => Value::Complex(
            f32::from_ne_bytes(arr(b, swap)?) as f64,
            f32::from_ne_bytes(arr(b.get(4..)?, swap)?) as f64,
        ),
        Scalar::Complex128 => Value::Complex(
            f64::from_ne_bytes(arr(b, swap)?),
            f64::from_ne_bytes(arr(b.get(8..)?, swap)?),
        ),
        Scalar::ComplexLongDouble => Value::Complex(ld(b)?, ld(b.get(16..)?)?),
        Scalar::Bytes(n) => {
            let b = b.get(..n)?;
            Value::Bytes(b[..strip_nuls(b)].to_vec())
        }
        Scalar::Unicode(n) => match decode_ucs4(b.get(..n.checked_mul(4)?)?, p.order(), offset) {
            Ok(s) => Value::String(s),
            Err(e) => return Some(Err(e)),
        },
        Scalar::Void(n) => Value::Void(b.get(..n)?.to_vec()),
        Scalar::DateTime(..) => Value::DateTime(i64::from_ne_bytes(arr(b, swap)?)),
        Scalar::TimeDelta(..) => Value::TimeDelta(i64::from_ne_bytes(arr(b, swap)?)),
    }))
}
