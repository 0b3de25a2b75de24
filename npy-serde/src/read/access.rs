//! The general tier's serde accessors: a subarray's items ([`SubSeq`], [`OneSeq`]), a
//! record's fields in order ([`FieldSeq`]) or by name ([`FieldMap`]), a complex number's parts
//! ([`ComplexSeq`], [`PartDe`]). Each hands out [`ElemDe`]s for the parts of an element.
//!
//! Calls the element decoders (`super::elem`) below it.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::elem::{ElemDe, Float};
use crate::dtype::{DType, PlainType, Record};
use crate::error::{Error, Result};

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
pub(super) struct OneSeq<'a, 'de, 'c>(pub(super) Option<ElemDe<'a, 'de, 'c>>);

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
