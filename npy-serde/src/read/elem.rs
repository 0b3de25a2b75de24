//! One element's bytes and what they hold: [`ElemDe`], the general tier's deserializer state,
//! with the decoding of each scalar kind (integers, floats, complex, bool, `S`, `U`, datetimes)
//! and the checks that a conversion to the requested Rust type is lossless.
//!
//! The serde `Deserializer` impl of [`ElemDe`] is in `super::general`; this module calls
//! only the text decoders (`crate::text`) and the plan cache below it.

use serde::de::Visitor;

use super::plan::Ctx;
use crate::binary16;
use crate::dtype::{DType, PlainType, Scalar};
use crate::error::{Error, Result};
use crate::text::{decode_ucs4, longdouble_to_f64, strip_nuls, utf8};

// ---------------------------------------------------------------------------------------------
// One element
// ---------------------------------------------------------------------------------------------

/// Deserializes one value of `dtype` (with the extra leading subarray axes `dims`) from
/// `bytes`, which hold exactly its bytes.
pub(crate) struct ElemDe<'a, 'de, 'c> {
    pub(crate) bytes: &'a [u8],
    pub(crate) borrowed: Option<&'de [u8]>,
    pub(crate) dtype: &'a DType,
    pub(crate) dims: &'a [u64],
    pub(crate) offset: u64,
    pub(crate) ctx: &'c Ctx,
}

/// A float read from the data, remembering its width for `deserialize_any`.
#[derive(Clone, Copy)]
pub(super) enum Float {
    F32(f32),
    F64(f64),
}

impl<'a, 'de, 'c> ElemDe<'a, 'de, 'c> {
    /// The scalar type, if this is a scalar (not a subarray or record).
    #[inline(always)]
    pub(super) fn plain(&self) -> Option<PlainType> {
        match self.dtype {
            DType::Plain(p) if self.dims.is_empty() => Some(*p),
            _ => None,
        }
    }

    /// What the file holds, for error messages.
    pub(super) fn found(&self) -> String {
        match (self.dtype, self.dims) {
            (DType::Plain(p), []) => p.typestr(),
            (d, []) => d.descr(),
            (d, dims) => format!("({d}, {})", shape_text(dims)),
        }
    }

    #[cold]
    pub(super) fn mismatch(&self, expected: &str) -> Error {
        Error::mismatch(expected, self.found()).at_byte(self.offset)
    }

    #[cold]
    pub(super) fn short(&self) -> Error {
        Error::eof(
            "an element",
            self.dtype.itemsize() as u64,
            self.bytes.len() as u64,
        )
        .at_byte(self.offset)
    }

    /// The first `N` bytes in native order.
    #[inline(always)]
    pub(super) fn arr<const N: usize>(&self, swap: bool) -> Result<[u8; N]> {
        match self.bytes.first_chunk::<N>() {
            Some(a) => {
                let mut a = *a;
                if swap {
                    a.reverse();
                }
                Ok(a)
            }
            None => Err(self.short()),
        }
    }

    /// A sub-deserializer for `len` bytes at `start` (relative to this value).
    #[inline(always)]
    pub(super) fn sub<'b>(
        &'b mut self,
        start: usize,
        len: usize,
        dtype: &'b DType,
        dims: &'b [u64],
    ) -> Result<ElemDe<'b, 'de, 'b>> {
        let range = start..start.checked_add(len).ok_or_else(|| self.short())?;
        let Some(bytes) = self.bytes.get(range.clone()) else {
            return Err(self.short());
        };
        Ok(ElemDe {
            bytes,
            borrowed: self.borrowed.and_then(|b| b.get(range)),
            dtype,
            dims,
            offset: self.offset + start as u64,
            ctx: self.ctx,
        })
    }

    /// Any integer (or datetime, if `allow_time`) in the file, as i128, with its signedness
    /// and width; `None` if the dtype is not an integer.
    #[inline(always)]
    pub(super) fn int_value(&self, allow_time: bool) -> Result<Option<(i128, bool, u32)>> {
        let Some(p) = self.plain() else {
            return Ok(None);
        };
        let s = p.order().needs_swap();
        Ok(Some(match p.scalar() {
            Scalar::I8 => (self.arr::<1>(false)?[0] as i8 as i128, true, 8),
            Scalar::I16 => (i16::from_ne_bytes(self.arr(s)?) as i128, true, 16),
            Scalar::I32 => (i32::from_ne_bytes(self.arr(s)?) as i128, true, 32),
            Scalar::I64 => (i64::from_ne_bytes(self.arr(s)?) as i128, true, 64),
            Scalar::U8 => (self.arr::<1>(false)?[0] as i128, false, 8),
            Scalar::U16 => (u16::from_ne_bytes(self.arr(s)?) as i128, false, 16),
            Scalar::U32 => (u32::from_ne_bytes(self.arr(s)?) as i128, false, 32),
            Scalar::U64 => (u64::from_ne_bytes(self.arr(s)?) as i128, false, 64),
            Scalar::DateTime(..) | Scalar::TimeDelta(..) if allow_time => {
                (i64::from_ne_bytes(self.arr(s)?) as i128, true, 64)
            }
            _ => return Ok(None),
        }))
    }

    /// An integer for a request of the given signedness and width: the file's integer type
    /// must convert losslessly for every value (`i4` -> `i64`, `u4` -> `i64`; not `i8` -> `u64`).
    #[inline(always)]
    pub(super) fn int(&self, want: &str, signed: bool, bits: u32) -> Result<i128> {
        if let Some((v, fs, fb)) = self.int_value(signed && bits >= 64)? {
            let ok = if signed {
                fb < bits || (fs && fb == bits)
            } else {
                !fs && fb <= bits
            };
            if ok {
                return Ok(v);
            }
        }
        Err(self.mismatch(want))
    }

    /// A float for an `f32` (`wide == false`) or `f64` request: floats no wider than asked
    /// (long double to `f64` rounds to nearest even), and integers whose every value is exact.
    #[inline(always)]
    pub(super) fn float(&self, want: &str, wide: bool) -> Result<Float> {
        if let Some(p) = self.plain() {
            let s = p.order().needs_swap();
            match p.scalar() {
                Scalar::F64 if wide => return Ok(Float::F64(f64::from_ne_bytes(self.arr(s)?))),
                Scalar::F32 => return Ok(Float::F32(f32::from_ne_bytes(self.arr(s)?))),
                Scalar::F16 => {
                    let h = u16::from_ne_bytes(self.arr(s)?);
                    return Ok(Float::F32(binary16::to_f32(h)));
                }
                Scalar::LongDouble if wide => {
                    return Ok(Float::F64(longdouble_to_f64(self.arr::<16>(s)?)));
                }
                _ => {}
            }
        }
        if let Some((v, _, fb)) = self.int_value(false)? {
            // f32 has a 24-bit significand, f64 53 bits.
            if fb <= if wide { 32 } else { 16 } {
                return Ok(Float::F64(v as f64));
            }
        }
        Err(self.mismatch(want))
    }

    pub(super) fn bool(&self) -> Result<bool> {
        match self.plain() {
            Some(p) if p.scalar() == Scalar::Bool => match self.arr::<1>(false)?[0] {
                0 => Ok(false),
                1 => Ok(true),
                b => Err(
                    Error::invalid_value(format!("bool byte {b} is neither 0 nor 1"))
                        .at_byte(self.offset),
                ),
            },
            _ => Err(self.mismatch("bool")),
        }
    }

    /// `S` bytes without trailing NULs, as NumPy returns them.
    pub(super) fn s_bytes(&self) -> (&'a [u8], Option<&'de [u8]>) {
        let n = strip_nuls(self.bytes);
        (
            &self.bytes[..n],
            self.borrowed.map(|b| &b[..n.min(b.len())]),
        )
    }

    /// Decodes a `U` value (UCS-4 in the dtype's byte order, trailing NULs stripped).
    pub(super) fn unicode(&self, p: PlainType) -> Result<String> {
        decode_ucs4(self.bytes, p.order(), self.offset)
    }

    pub(super) fn visit_str_value<V: Visitor<'de>>(
        self,
        visitor: V,
        want: &str,
    ) -> Result<V::Value> {
        let Some(p) = self.plain() else {
            return Err(self.mismatch(want));
        };
        match p.scalar() {
            Scalar::Bytes(_) => {
                let (b, borrowed) = self.s_bytes();
                match borrowed {
                    Some(b) => visitor.visit_borrowed_str(utf8(b, self.offset)?),
                    None => visitor.visit_str(utf8(b, self.offset)?),
                }
            }
            Scalar::Unicode(_) => visitor.visit_string(self.unicode(p)?),
            _ => Err(self.mismatch(want)),
        }
    }

    pub(super) fn visit_bytes_value<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if let Some(p) = self.plain() {
            match p.scalar() {
                Scalar::Bytes(_) => {
                    let (b, borrowed) = self.s_bytes();
                    return match borrowed {
                        Some(b) => visitor.visit_borrowed_bytes(b),
                        None => visitor.visit_bytes(b),
                    };
                }
                Scalar::Void(_) => {
                    return match self.borrowed {
                        Some(b) => visitor.visit_borrowed_bytes(b),
                        None => visitor.visit_bytes(self.bytes),
                    };
                }
                _ => {}
            }
        }
        // A subarray of single bytes reads as its raw bytes.
        if let Some((base, _)) = self.subarray()
            && matches!(base, DType::Plain(p) if p.scalar() == Scalar::U8)
        {
            return match self.borrowed {
                Some(b) => visitor.visit_borrowed_bytes(b),
                None => visitor.visit_bytes(self.bytes),
            };
        }
        Err(self.mismatch("bytes"))
    }

    /// The subarray view of this value: its item dtype and the axes, if it has any.
    pub(super) fn subarray(&self) -> Option<(&'a DType, &'a [u64])> {
        if !self.dims.is_empty() {
            return Some((self.dtype, self.dims));
        }
        match self.dtype {
            DType::Array(base, shape) => Some((base, shape)),
            _ => None,
        }
    }

    /// The length of the value viewed as a sequence, or `None` if it is not one.
    pub(super) fn seq_len(&self) -> Option<u64> {
        if let Some((_, dims)) = self.subarray() {
            return dims.first().copied().or(Some(1));
        }
        match self.dtype {
            DType::Record(r) => Some(r.fields().len() as u64),
            DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => Some(2),
                Scalar::Bytes(n) | Scalar::Void(n) => Some(n as u64),
                _ => None,
            },
            DType::Array(..) => None,
        }
    }

    /// Visits the value as a sequence: subarray items, record fields in order, the two parts of
    /// a complex number, or the bytes of `S` (NULs stripped unless `raw`) and `V`.
    pub(super) fn complex(&self, p: PlainType) -> Result<[Float; 2]> {
        let s = p.order().needs_swap();
        Ok(match p.scalar() {
            Scalar::Complex64 => {
                let a: [u8; 8] = self.arr(false)?;
                let mut re: [u8; 4] = [a[0], a[1], a[2], a[3]];
                let mut im: [u8; 4] = [a[4], a[5], a[6], a[7]];
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F32(f32::from_ne_bytes(re)),
                    Float::F32(f32::from_ne_bytes(im)),
                ]
            }
            Scalar::Complex128 => {
                let a: [u8; 16] = self.arr(false)?;
                let (r, i) = split_arr::<8, 16>(&a);
                let (mut re, mut im) = (r, i);
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F64(f64::from_ne_bytes(re)),
                    Float::F64(f64::from_ne_bytes(im)),
                ]
            }
            _ => {
                let a: [u8; 32] = self.arr(false)?;
                let (mut re, mut im) = split_arr::<16, 32>(&a);
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F64(longdouble_to_f64(re)),
                    Float::F64(longdouble_to_f64(im)),
                ]
            }
        })
    }
}

pub(super) fn split_arr<const H: usize, const N: usize>(a: &[u8; N]) -> ([u8; H], [u8; H]) {
    let mut x = [0u8; H];
    let mut y = [0u8; H];
    x.copy_from_slice(&a[..H]);
    y.copy_from_slice(&a[H..2 * H]);
    (x, y)
}

pub(super) fn shape_text(dims: &[u64]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
