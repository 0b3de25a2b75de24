//! Encoding one value into its slot: [`ElemSer`]'s state and the lossless conversions of
//! numbers into each scalar kind (range checks, exact float conversions, x87).
//!
//! The serde `Serializer` impl of [`ElemSer`] is in `super::general`; this module calls only
//! the plan (`super::plan`) and the text codecs (`crate::text`) below it.

use std::fmt::Display;

use super::plan::{leaf_typestr, Node, F32_PART, F64_PART, LD_PART};
use crate::binary16;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kind::put;
use crate::text::{f64_to_x87, int_to_x87, put_sbytes, put_ustr, put_x87};

#[cold]
pub(super) fn inexact(v: impl Display, to: &str) -> Error {
    Error::write(format!(
        "{v} is not exactly representable as {to}: only lossless conversions are done"
    ))
}

#[cold]
pub(super) fn out_of_range(v: i128, to: &str) -> Error {
    Error::write(format!("{v} is out of range for {to}"))
}

/// Writes a real number into a float slot (`f2`, `f4`, `f8`, longdouble), exactly or not at all.
pub(super) fn put_float(buf: &mut [u8], scalar: Scalar, big: bool, v: f64) -> Result<()> {
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
            let h = binary16::from_f64_exact(v)
                .ok_or_else(|| inexact(v, &leaf_typestr(scalar, big)))?;
            put!(buf, h, big)
        }
        Scalar::LongDouble => put_x87(buf, f64_to_x87(v), big),
        _ => unreachable!("put_float on a non-float slot"),
    }
    Ok(())
}

/// Writes an integer into a float slot if the float represents it exactly.
pub(super) fn put_int_as_float(buf: &mut [u8], scalar: Scalar, big: bool, v: i128) -> Result<()> {
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

pub(super) fn complex_part(scalar: Scalar) -> Option<(&'static [Node; 2], Scalar)> {
    match scalar {
        Scalar::Complex64 => Some((&F32_PART, Scalar::F32)),
        Scalar::Complex128 => Some((&F64_PART, Scalar::F64)),
        Scalar::ComplexLongDouble => Some((&LD_PART, Scalar::LongDouble)),
        _ => None,
    }
}

/// Serializes one value into `buf`, the bytes of `node`.
pub(crate) struct ElemSer<'p, 'b> {
    pub(super) node: &'p Node,
    pub(super) buf: &'b mut [u8],
}

impl<'p, 'b> ElemSer<'p, 'b> {
    /// A serializer for one value of `node` into `buf` (exactly the node's itemsize).
    #[inline]
    pub(crate) fn new(node: &'p Node, buf: &'b mut [u8]) -> Self {
        ElemSer { node, buf }
    }

    #[cold]
    pub(super) fn unexpected(&self, what: &str) -> Error {
        Error::write(format!(
            "{what} cannot be stored as {}",
            self.node.describe()
        ))
    }

    /// The scalar slot, or an error naming `what` was given.
    #[inline]
    pub(super) fn leaf(&self, what: &str) -> Result<(Scalar, bool)> {
        match self.node {
            Node::Leaf { scalar, big } => Ok((*scalar, *big)),
            _ => Err(self.unexpected(what)),
        }
    }

    #[inline(never)]
    pub(super) fn int(self, v: i128) -> Result<()> {
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
    pub(super) fn float(self, v: f64) -> Result<()> {
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
    pub(super) fn f16_bits(self, bits: u16) -> Result<()> {
        let (scalar, big) = self.leaf("a half-precision float")?;
        if scalar == Scalar::F16 {
            put!(self.buf, bits, big);
            Ok(())
        } else {
            self.float(binary16::to_f64(bits))
        }
    }

    pub(super) fn text(self, s: &str) -> Result<()> {
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

    #[cold]
    pub(super) fn wrong_len(&self, len: usize) -> Error {
        Error::write(format!(
            "a sequence of {len} items cannot be stored as {}",
            self.node.describe()
        ))
    }
}

#[cold]
pub(super) fn self_unexpected(scalar: Scalar, big: bool, what: &str) -> Error {
    Error::write(format!(
        "{what} cannot be stored as {}",
        leaf_typestr(scalar, big)
    ))
}
