//! The general tier of writing: serde's `Serializer` for one element ([`ElemSer`]), with
//! every lossless conversion and errors naming the record and field; records, subarrays and
//! complex numbers are handed to the compound serializers of `super::compound`.
//!
//! Calls the compound serializers, the element encoders (`super::elem`) and the plan.

use serde::ser::{self, Impossible, Serialize};

use super::compound::{self_struct_err, ElemSeq, RecordSer, SeqMode, U16Capture};
use super::elem::{complex_part, self_unexpected, ElemSer};
use super::plan::Node;
use crate::datetime::{describe, is_time_scalar, time_of_name, NAT};
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::kind::put;
use crate::text::put_sbytes;

impl<'p, 'b> ElemSer<'p, 'b> {
    #[inline(always)]
    pub(super) fn compound_seq(
        self,
        len: Option<usize>,
        positional_record: bool,
    ) -> Result<ElemSeq<'p, 'b>> {
        if let Node::Sub {
            base,
            len: n,
            stride,
        } = self.node
            && len.is_none_or(|len| len == *n)
        {
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
        self.compound_seq_slow(len, positional_record)
    }

    #[inline(never)]
    pub(super) fn compound_seq_slow(
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

    pub(super) fn record(self, what: &str) -> Result<RecordSer<'p, 'b>> {
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
        if let Node::Leaf { scalar, big } = self.node
            && matches!(
                scalar,
                Scalar::I64 | Scalar::DateTime(..) | Scalar::TimeDelta(..)
            )
        {
            put!(self.buf, v, *big);
            return Ok(());
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
        // NaT is the missing value of datetimes and timedeltas.
        if let Node::Leaf { scalar, big } = self.node
            && is_time_scalar(*scalar)
        {
            put!(self.buf, NAT, *big);
            return Ok(());
        }
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
        if name == "f16"
            && let Ok(Some(bits)) = value.serialize(U16Capture)
        {
            return self.f16_bits(bits);
        }
        // `DateTime64<U>` / `TimeDelta64<U>`: only into a datetime / timedelta of unit `U`.
        if let Some((delta, unit)) = time_of_name(name) {
            let want = if delta {
                Scalar::TimeDelta(unit, 1)
            } else {
                Scalar::DateTime(unit, 1)
            };
            match self.node {
                Node::Leaf { scalar, .. } if *scalar == want => {}
                _ => return Err(self.unexpected(&format!("a {}", describe(delta, unit)))),
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

#[cfg(test)]
mod tests;
