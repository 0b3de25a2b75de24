//! The general tier: every request serde can make of an element, with every lossless
//! conversion and errors that name the byte offset, record and field. [`FastDe`] is its
//! planned entrance: requests that match the element's [`Plan`] (a scalar as its own type, a
//! record read positionally, a 1-D subarray) decode straight from the bytes, and anything
//! else builds the full [`ElemDe`].
//!
//! Calls the element decoders (`super::elem`) and the plans (`super::plan`) below it.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::elem::{ElemDe, Float};
use super::plan::{FieldPlan, Plan, StructPlan};
use super::source::count_of;
use crate::dtype::{DType, Field, PlainType, Record, Scalar};
use crate::error::{Error, Result};
use crate::kind::{load, numbers, Kind};
use crate::text::utf8;

impl<'a, 'de, 'c> ElemDe<'a, 'de, 'c> {
    pub(super) fn visit_seq_value<V: Visitor<'de>>(
        self,
        visitor: V,
        raw: bool,
    ) -> Result<V::Value> {
        if let Some((base, dims)) = self.subarray() {
            let Some((&n, rest)) = dims.split_first() else {
                // A subarray with shape (): just the item.
                return visitor.visit_seq(OneSeq(Some(ElemDe {
                    dims: &[],
                    dtype: base,
                    ..self
                })));
            };
            let items = count_of(rest)?.saturating_mul(n);
            if base.itemsize() == 0 && items > self.ctx.max_empty_items {
                return Err(Error::limit(
                    "the number of zero-byte subarray items",
                    self.ctx.max_empty_items,
                    items,
                )
                .at_byte(self.offset));
            }
            let child = if n == 0 {
                0
            } else if rest.is_empty() {
                match base {
                    DType::Plain(p) => p.itemsize(),
                    other => other.itemsize(),
                }
            } else {
                self.bytes.len() / n as usize
            };
            return visitor.visit_seq(SubSeq {
                de: self,
                base,
                rest,
                n,
                i: 0,
                child,
            });
        }
        match self.dtype {
            DType::Record(rec) => visitor.visit_seq(FieldSeq {
                de: self,
                rec,
                i: 0,
            }),
            &DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                    let parts = self.complex(p)?;
                    visitor.visit_seq(ComplexSeq {
                        parts,
                        i: 0,
                        offset: self.offset,
                        found: p,
                    })
                }
                Scalar::Bytes(_) | Scalar::Void(_) => {
                    let b = if raw || matches!(p.scalar(), Scalar::Void(_)) {
                        self.bytes
                    } else {
                        self.s_bytes().0
                    };
                    let mut seq = de::value::SeqDeserializer::<_, Error>::new(b.iter().copied());
                    let v = visitor.visit_seq(&mut seq)?;
                    seq.end()?;
                    Ok(v)
                }
                _ => Err(self.mismatch("a sequence")),
            },
            // Subarrays were handled above.
            DType::Array(..) => Err(self.mismatch("a sequence")),
        }
    }

    pub(super) fn visit_map_value<V: Visitor<'de>>(
        self,
        visitor: V,
        select: Option<&[(u32, usize)]>,
        want: &str,
    ) -> Result<V::Value> {
        match (self.dtype, self.dims) {
            (DType::Record(rec), []) => visitor.visit_map(FieldMap {
                de: self,
                rec,
                select,
                i: 0,
                current: 0,
                current_size: 0,
            }),
            _ => Err(self.mismatch(want)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sequence and map accesses over one element
// ---------------------------------------------------------------------------------------------

/// The items of a subarray axis.
pub(super) struct SubSeq<'a, 'de, 'c> {
    pub(super) de: ElemDe<'a, 'de, 'c>,
    pub(super) base: &'a DType,
    pub(super) rest: &'a [u64],
    pub(super) n: u64,
    pub(super) i: u64,
    pub(super) child: usize,
}

impl<'de> SeqAccess<'de> for SubSeq<'_, 'de, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.i >= self.n {
            return Ok(None);
        }
        let i = self.i;
        self.i += 1;
        let start = (i as usize).wrapping_mul(self.child);
        let d = self.de.sub(start, self.child, self.base, self.rest)?;
        seed.deserialize(d).map(Some).map_err(|e| e.in_index(i))
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.n - self.i).ok()
    }
}

/// A subarray of shape `()`: one item.
pub(super) struct OneSeq<'a, 'de, 'c>(Option<ElemDe<'a, 'de, 'c>>);

impl<'de> SeqAccess<'de> for OneSeq<'_, 'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.0.take() {
            Some(d) => seed.deserialize(d).map(Some),
            None => Ok(None),
        }
    }
}

/// A record's fields, positionally.
pub(super) struct FieldSeq<'a, 'de, 'c> {
    pub(super) de: ElemDe<'a, 'de, 'c>,
    pub(super) rec: &'a Record,
    pub(super) i: usize,
}

impl<'de> SeqAccess<'de> for FieldSeq<'_, 'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(f) = self.rec.fields().get(self.i) else {
            return Ok(None);
        };
        self.i += 1;
        let d = self.de.sub(f.offset, f.dtype.itemsize(), &f.dtype, &[])?;
        seed.deserialize(d)
            .map(Some)
            .map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rec.fields().len() - self.i)
    }
}

/// A record as a map from field name to value.
pub(super) struct FieldMap<'a, 'de, 'c, 's> {
    pub(super) de: ElemDe<'a, 'de, 'c>,
    pub(super) rec: &'a Record,
    /// Only these (field index, byte size) pairs (the fields the target struct names), or all.
    pub(super) select: Option<&'s [(u32, usize)]>,
    pub(super) i: usize,
    pub(super) current: usize,
    pub(super) current_size: usize,
}

impl<'de> MapAccess<'de> for FieldMap<'_, 'de, '_, '_> {
    type Error = Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let (idx, size) = match &self.select {
            Some(s) => match s.get(self.i) {
                Some(&(k, size)) => (k as usize, size),
                None => return Ok(None),
            },
            None => match self.rec.fields().get(self.i) {
                Some(f) => (self.i, f.dtype.itemsize()),
                None => return Ok(None),
            },
        };
        let Some(f) = self.rec.fields().get(idx) else {
            return Ok(None);
        };
        self.i += 1;
        self.current = idx;
        self.current_size = size;
        seed.deserialize(de::value::StrDeserializer::<Error>::new(&f.name))
            .map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let Some(f) = self.rec.fields().get(self.current) else {
            return Err(Error::invalid_value("next_value called before next_key"));
        };
        let d = self.de.sub(f.offset, self.current_size, &f.dtype, &[])?;
        seed.deserialize(d).map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(match &self.select {
            Some(s) => s.len().saturating_sub(self.i),
            None => self.rec.fields().len().saturating_sub(self.i),
        })
    }
}

/// The real and imaginary parts of a complex number.
pub(super) struct ComplexSeq {
    pub(super) parts: [Float; 2],
    pub(super) i: usize,
    pub(super) offset: u64,
    pub(super) found: PlainType,
}

impl<'de> SeqAccess<'de> for ComplexSeq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(&v) = self.parts.get(self.i) else {
            return Ok(None);
        };
        let half = self.found.itemsize() as u64 / 2;
        let d = PartDe {
            v,
            offset: self.offset + half * self.i as u64,
            found: self.found,
        };
        let i = self.i;
        self.i += 1;
        seed.deserialize(d)
            .map(Some)
            .map_err(|e| e.in_field(if i == 0 { "real" } else { "imag" }))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(2 - self.i)
    }
}

/// One part of a complex number.
pub(super) struct PartDe {
    pub(super) v: Float,
    pub(super) offset: u64,
    pub(super) found: PlainType,
}

impl PartDe {
    pub(super) fn mismatch(&self, want: &str) -> Error {
        Error::mismatch(want, format!("a part of {}", self.found.typestr())).at_byte(self.offset)
    }
}

macro_rules! part_refuse {
    ($($method:ident ( $($arg:ident : $ty:ty),* ) => $what:expr;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* _visitor: V) -> Result<V::Value> {
                $(let _ = $arg;)*
                Err(self.mismatch($what))
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for PartDe {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(_) => Err(self.mismatch("f32")),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f64(v as f64),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    part_refuse! {
        deserialize_bool() => "bool";
        deserialize_i8() => "i8";
        deserialize_i16() => "i16";
        deserialize_i32() => "i32";
        deserialize_i64() => "i64";
        deserialize_i128() => "i128";
        deserialize_u8() => "u8";
        deserialize_u16() => "u16";
        deserialize_u32() => "u32";
        deserialize_u64() => "u64";
        deserialize_u128() => "u128";
        deserialize_char() => "char";
        deserialize_str() => "a string";
        deserialize_string() => "a string";
        deserialize_bytes() => "bytes";
        deserialize_byte_buf() => "bytes";
        deserialize_unit() => "unit";
        deserialize_unit_struct(name: &'static str) => "unit struct";
        deserialize_seq() => "a sequence";
        deserialize_tuple(len: usize) => "a tuple";
        deserialize_tuple_struct(name: &'static str, len: usize) => "a tuple struct";
        deserialize_map() => "a map";
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) => "a struct";
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) => "an enum";
        deserialize_identifier() => "an identifier";
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// The element Deserializer
// ---------------------------------------------------------------------------------------------

macro_rules! de_int {
    ($($method:ident => $visit:ident, $t:ty, $name:literal, $signed:expr, $bits:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                let v = self.int($name, $signed, $bits)?;
                visitor.$visit(v as $t)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for ElemDe<'_, 'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let Some(p) = self.plain() else {
            return match self.dtype {
                DType::Record(_) if self.dims.is_empty() => {
                    self.visit_map_value(visitor, None, "a map")
                }
                _ => self.visit_seq_value(visitor, false),
            };
        };
        let s = p.order().needs_swap();
        match p.scalar() {
            Scalar::Bool => visitor.visit_bool(self.bool()?),
            Scalar::I8 => visitor.visit_i8(self.arr::<1>(false)?[0] as i8),
            Scalar::I16 => visitor.visit_i16(i16::from_ne_bytes(self.arr(s)?)),
            Scalar::I32 => visitor.visit_i32(i32::from_ne_bytes(self.arr(s)?)),
            Scalar::I64 | Scalar::DateTime(..) | Scalar::TimeDelta(..) => {
                visitor.visit_i64(i64::from_ne_bytes(self.arr(s)?))
            }
            Scalar::U8 => visitor.visit_u8(self.arr::<1>(false)?[0]),
            Scalar::U16 => visitor.visit_u16(u16::from_ne_bytes(self.arr(s)?)),
            Scalar::U32 => visitor.visit_u32(u32::from_ne_bytes(self.arr(s)?)),
            Scalar::U64 => visitor.visit_u64(u64::from_ne_bytes(self.arr(s)?)),
            Scalar::F16 | Scalar::F32 | Scalar::F64 | Scalar::LongDouble => {
                match self.float("a float", true)? {
                    Float::F32(v) => visitor.visit_f32(v),
                    Float::F64(v) => visitor.visit_f64(v),
                }
            }
            Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                self.visit_seq_value(visitor, false)
            }
            Scalar::Bytes(_) | Scalar::Void(_) => self.visit_bytes_value(visitor),
            Scalar::Unicode(_) => visitor.visit_string(self.unicode(p)?),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_bool(self.bool()?)
    }

    de_int! {
        deserialize_i8 => visit_i8, i8, "i8", true, 8;
        deserialize_i16 => visit_i16, i16, "i16", true, 16;
        deserialize_i32 => visit_i32, i32, "i32", true, 32;
        deserialize_i64 => visit_i64, i64, "i64", true, 64;
        deserialize_i128 => visit_i128, i128, "i128", true, 128;
        deserialize_u8 => visit_u8, u8, "u8", false, 8;
        deserialize_u16 => visit_u16, u16, "u16", false, 16;
        deserialize_u32 => visit_u32, u32, "u32", false, 32;
        deserialize_u64 => visit_u64, u64, "u64", false, 64;
        deserialize_u128 => visit_u128, u128, "u128", false, 128;
    }

    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.float("f32", false)? {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(v) => visitor.visit_f32(v as f32),
        }
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.float("f64", true)? {
            Float::F32(v) => visitor.visit_f64(v as f64),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.plain() {
            Some(p) if matches!(p.scalar(), Scalar::Unicode(_)) => {
                let s = self.unicode(p)?;
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => visitor.visit_char(c),
                    _ => Err(Error::invalid_value(format!(
                        "expected a single character, found {s:?}"
                    ))
                    .at_byte(self.offset)),
                }
            }
            _ => Err(self.mismatch("char")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "a string")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "a string")
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_bytes_value(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_bytes_value(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let empty = match (self.dtype, self.dims) {
            (DType::Record(r), []) => r.fields().is_empty(),
            (DType::Plain(p), []) => p.scalar() == Scalar::Void(0),
            _ => false,
        };
        if empty {
            visitor.visit_unit()
        } else {
            Err(self.mismatch("unit"))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        // `half::f16` deserializes as a newtype struct named "f16" that accepts an f32; give it
        // the exact value of an `f2`, and refuse narrowing from wider floats.
        if name == "f16" {
            return match self.plain() {
                Some(p) if p.scalar() == Scalar::F16 => match self.float("half::f16", false)? {
                    Float::F32(v) => visitor.visit_f32(v),
                    Float::F64(v) => visitor.visit_f64(v),
                },
                _ => Err(self.mismatch("half::f16")),
            };
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_seq_value(visitor, false)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        match self.seq_len() {
            Some(n) if n == len as u64 => self.visit_seq_value(visitor, true),
            _ => Err(self.mismatch(&format!("a tuple of {len}"))),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        match self.seq_len() {
            Some(n) if n == len as u64 => self.visit_seq_value(visitor, true),
            _ => Err(self.mismatch(&format!("{name} (a tuple of {len})"))),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_map_value(visitor, None, "a map")
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match (self.dtype, self.dims) {
            (DType::Record(_), []) => {
                let mut de = self;
                FastDe::whole(&mut de, Plan::OTHER).deserialize_struct(name, fields, visitor)
            }
            _ => Err(self.mismatch(name)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // A unit variant from its name in an `S` or `U` field, as serde_json reads a string.
        let s = match self.plain() {
            Some(p) if matches!(p.scalar(), Scalar::Bytes(_)) => {
                utf8(self.s_bytes().0, self.offset)?.to_owned()
            }
            Some(p) if matches!(p.scalar(), Scalar::Unicode(_)) => self.unicode(p)?,
            _ => return Err(self.mismatch(name)),
        };
        visitor.visit_enum(IntoDeserializer::<Error>::into_deserializer(s))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "an identifier")
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// A deserializer for the value at `start..start + len` of `bytes` (its parent's bytes), with
/// a precomputed [`Plan`]: requests for the plan's exact Rust type decode directly from
/// `bytes`, and so do records read positionally and 1-D subarrays of such scalars; everything
/// else (and every error) goes through an [`ElemDe`] built from `parent` only then.
pub(crate) struct FastDe<'p, 'a, 'de, 'c> {
    /// The parent's bytes (only read by the fast paths).
    pub(super) bytes: &'a [u8],
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) dtype: &'a DType,
    pub(super) plan: Plan,
    pub(super) parent: &'p mut ElemDe<'a, 'de, 'c>,
}

impl<'p, 'a, 'de, 'c> FastDe<'p, 'a, 'de, 'c> {
    /// The whole of `de` (which has no extra subarray axes).
    #[inline]
    pub(crate) fn whole(de: &'p mut ElemDe<'a, 'de, 'c>, plan: Plan) -> Self {
        FastDe {
            bytes: de.bytes,
            start: 0,
            len: de.bytes.len(),
            dtype: de.dtype,
            parent: de,
            plan,
        }
    }

    /// The general deserializer for this value.
    #[inline]
    pub(super) fn elem(self) -> Result<ElemDe<'p, 'de, 'p>> {
        self.parent.sub(self.start, self.len, self.dtype, &[])
    }

    /// The items of a planned 1-D subarray (of length `len`, if given), or `None`.
    #[inline]
    pub(super) fn vector(
        self,
        len: Option<usize>,
    ) -> std::result::Result<VectorSeq<'p, 'a, 'de, 'c>, Self> {
        match (self.plan.vector(), self.dtype) {
            (Some((item, n, size)), DType::Array(base, _)) if len.is_none_or(|l| l == n) => {
                Ok(VectorSeq {
                    bytes: self.bytes,
                    at: self.start,
                    parent: self.parent,
                    base,
                    item,
                    n,
                    size,
                    i: 0,
                })
            }
            _ => Err(self),
        }
    }
}

/// The general path of a [`FastDe`], kept out of line. Takes the fields separately (in
/// registers) so that the fast path need not build a `FastDe` in memory.
#[cold]
#[inline(never)]
pub(super) fn slow<'p, 'a, 'de, 'c, R, V>(
    parent: &'p mut ElemDe<'a, 'de, 'c>,
    start: usize,
    len: usize,
    dtype: &'a DType,
    visitor: V,
    f: impl FnOnce(ElemDe<'p, 'de, 'p>, V) -> Result<R>,
) -> Result<R> {
    f(parent.sub(start, len, dtype, &[])?, visitor)
}

macro_rules! fast_scalar {
    ($($k:ident $t:ty, $u:ty, $code:literal, $method:ident, $visit:ident, $ser:ident, $conv:expr, $to:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                if let Some(swap) = self.plan.scalar(Kind::$k) {
                    if let Some(x) = load!(self.bytes, self.start, $u, swap) {
                        #[allow(clippy::redundant_closure_call)]
                        return visitor.$visit(($conv)(x));
                    }
                }
                slow(self.parent, self.start, self.len, self.dtype, visitor, |d, v| d.$method(v))
            }
        )*
    };
}

macro_rules! fast_forward {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value> {
                self.elem()?.$method($($arg,)* visitor)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for FastDe<'_, '_, 'de, '_> {
    type Error = Error;

    numbers!(fast_scalar);

    fast_forward! {
        deserialize_any();
        deserialize_bool();
        deserialize_i128();
        deserialize_u128();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    /// A record read positionally (see [`StructPlan::Seq`]) decodes its fields straight from
    /// the parent's bytes, without building a general deserializer for the record.
    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let DType::Record(rec) = self.dtype else {
            return self.elem()?.deserialize_struct(name, fields, visitor);
        };
        let ctx = self.parent.ctx;
        let owned;
        let plan = match ctx.plan(rec, fields) {
            Some(plan) => plan,
            None => {
                owned = StructPlan::new(rec, fields);
                &owned
            }
        };
        match plan {
            StructPlan::Seq(plan) => visitor.visit_seq(PlanSeq {
                bytes: self.bytes,
                base: self.start,
                parent: self.parent,
                fields: rec.fields().iter(),
                plan: plan.iter(),
            }),
            StructPlan::Map(select) => self.elem()?.visit_map_value(visitor, Some(select), name),
        }
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == "f16" {
            self.elem()?.deserialize_newtype_struct(name, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.vector(None) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_seq(v)
            }),
        }
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        match self.vector(Some(len)) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_tuple(len, v)
            }),
        }
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        match self.vector(Some(len)) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_tuple_struct(name, len, v)
            }),
        }
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The items of a 1-D subarray of plain scalars: `n` items of `size` bytes from `at` of the
/// parent's `bytes`.
pub(super) struct VectorSeq<'p, 'a, 'de, 'c> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
    pub(super) parent: &'p mut ElemDe<'a, 'de, 'c>,
    pub(super) base: &'a DType,
    pub(super) item: Plan,
    pub(super) n: usize,
    pub(super) size: usize,
    pub(super) i: usize,
}

impl<'de> SeqAccess<'de> for VectorSeq<'_, '_, 'de, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.i >= self.n {
            return Ok(None);
        }
        let i = self.i;
        let at = self.at;
        self.i += 1;
        self.at = at.wrapping_add(self.size);
        seed.deserialize(FastDe {
            bytes: self.bytes,
            start: at,
            len: self.size,
            dtype: self.base,
            plan: self.item,
            parent: &mut *self.parent,
        })
        .map(Some)
        .map_err(|e| e.in_index(i as u64))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.n - self.i)
    }
}

/// A record's fields, positionally, for a struct whose fields are exactly the file's: the
/// record is at `base` of the parent's `bytes`, and `plan` has one entry per field of `rec`.
pub(super) struct PlanSeq<'p, 'a, 'de, 'c, 's> {
    pub(super) bytes: &'a [u8],
    pub(super) base: usize,
    pub(super) parent: &'p mut ElemDe<'a, 'de, 'c>,
    /// The record's fields not yet handed out, and their plans.
    pub(super) fields: std::slice::Iter<'a, Field>,
    pub(super) plan: std::slice::Iter<'s, FieldPlan>,
}

impl<'de> SeqAccess<'de> for PlanSeq<'_, '_, 'de, '_, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let (Some(f), Some(fp)) = (self.fields.next(), self.plan.next()) else {
            return Ok(None);
        };
        seed.deserialize(FastDe {
            bytes: self.bytes,
            start: self.base.wrapping_add(fp.offset),
            len: fp.size,
            dtype: &f.dtype,
            plan: fp.plan,
            parent: &mut *self.parent,
        })
        .map(Some)
        .map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}
