//! [`FastDe`]: the general tier's planned entrance. Requests that match the element's
//! [`Plan`] (a scalar as its own type, a record read positionally, a 1-D subarray) decode
//! straight from the bytes; anything else builds the full [`ElemDe`] and goes through the
//! general deserializer.
//!
//! Calls the element decoders (`super::elem`), the plans (`super::plan`) and the table of
//! kinds below it.

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

use super::elem::ElemDe;
use super::plan::{FieldPlan, Plan, StructPlan};
use crate::datetime::{is_time_scalar, time_of_name};
use crate::dtype::{DType, Field};
use crate::error::{Error, Result};
use crate::kind::{load, numbers, Kind};

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
        // A datetime's NaT is `None`: the general path looks.
        match self.dtype {
            DType::Plain(p) if is_time_scalar(p.scalar()) => {
                self.elem()?.deserialize_option(visitor)
            }
            _ => visitor.visit_some(self),
        }
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == "f16" || time_of_name(name).is_some() {
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
