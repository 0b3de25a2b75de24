//! The general tier: serde's `Deserializer` for one element ([`ElemDe`]): every request serde
//! can make, with every lossless conversion and errors that name the byte offset, record and
//! field. Records and subarrays are handed out through the accessors of `super::access`; a
//! struct goes through the planned entrance (`super::entry`) for its field plan.
//!
//! Calls the accessors, the entrance, the element decoders (`super::elem`) and the plans.

use serde::de::{self, IntoDeserializer, Visitor};

use super::access::{ComplexSeq, FieldMap, FieldSeq, OneSeq, SubSeq};
use super::elem::{ElemDe, Float};
use super::entry::FastDe;
use super::plan::Plan;
use super::source::count_of;
use crate::datetime::{describe, is_time_scalar, time_of_name, NAT};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
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
        // NaT is the missing value of datetimes and timedeltas.
        if let Some(p) = self.plain()
            && is_time_scalar(p.scalar())
            && i64::from_ne_bytes(self.arr(p.order().needs_swap())?) == NAT
        {
            return visitor.visit_none();
        }
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
        // `DateTime64<U>` / `TimeDelta64<U>`: only a datetime / timedelta of unit `U`.
        if let Some((delta, unit)) = time_of_name(name) {
            return match self.plain() {
                Some(p)
                    if p.scalar()
                        == if delta {
                            Scalar::TimeDelta(unit, 1)
                        } else {
                            Scalar::DateTime(unit, 1)
                        } =>
                {
                    visitor.visit_i64(i64::from_ne_bytes(self.arr(p.order().needs_swap())?))
                }
                _ => Err(self.mismatch(&describe(delta, unit))),
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
