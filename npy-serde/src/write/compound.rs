//! Compound values of the general tier of writing: subarrays, complex numbers and byte
//! sequences ([`ElemSeq`]), records by field name, title or position ([`RecordSer`]), and the
//! serializers of map keys and `half::f16` bits.
//!
//! Calls the element encoders (`super::elem`) and the plan (`super::plan`) below it.

use std::sync::atomic::Ordering;

use serde::ser::{self, Impossible, Serialize};

use super::elem::ElemSer;
use super::plan::{Node, RecordPlan, BYTE};
use crate::dtype::Scalar;
use crate::error::{Error, Result};

#[cold]
pub(super) fn self_struct_err(name: &str, node: &Node) -> Error {
    Error::write(format!(
        "the struct `{name}` cannot be stored as {}",
        node.describe()
    ))
}

// ---------------------------------------------------------------------------------------------
// Sequences inside an element: subarray axes, bytes, complex pairs, positional records.

pub(super) enum SeqMode<'p> {
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
    pub(super) mode: SeqMode<'p>,
    pub(super) buf: &'b mut [u8],
    pub(super) i: usize,
}

#[cold]
#[inline(never)]
pub(super) fn at_index(e: Error, i: usize) -> Error {
    e.in_index(i as u64)
}

impl ElemSeq<'_, '_> {
    #[inline(always)]
    pub(super) fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let i = self.i;
        if let SeqMode::Sub { base, stride, len } = self.mode
            && i < len
        {
            let slot = &mut self.buf[i * stride..(i + 1) * stride];
            if let Err(e) = value.serialize(ElemSer::new(base, slot)) {
                return Err(at_index(e, i));
            }
            self.i += 1;
            return Ok(());
        }
        self.item_slow(value)
    }

    #[inline(never)]
    pub(super) fn item_slow<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
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
    pub(super) fn finish(self) -> Result<()> {
        match self.mode {
            SeqMode::Sub { len, .. } if self.i == len => Ok(()),
            _ => self.finish_slow(),
        }
    }

    #[inline(never)]
    pub(super) fn finish_slow(self) -> Result<()> {
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
    pub(super) fn zero_pads(&self, buf: &mut [u8]) {
        for &(a, b) in &self.pads {
            buf[a..b].fill(0);
        }
    }

    pub(super) fn find(&self, key: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == key).or_else(|| {
            self.fields
                .iter()
                .position(|f| f.title.as_deref() == Some(key))
        })
    }
}

#[cold]
#[inline(never)]
pub(super) fn in_field(e: Error, name: &str) -> Error {
    e.in_field(name)
}

pub(crate) struct RecordSer<'p, 'b> {
    pub(super) rec: &'p RecordPlan,
    pub(super) buf: &'b mut [u8],
    /// Fields seen so far while they come in dtype order (the fast path).
    pub(super) next: usize,
    /// Which fields were seen, once they stop coming in order (empty until then).
    pub(super) seen: Vec<bool>,
    /// Field index of a map key waiting for its value (`usize::MAX`: none).
    pub(super) pending: usize,
}

impl RecordSer<'_, '_> {
    /// The field for a struct's `&'static str` key, by content; remembers the key's address
    /// for the positional fast path of `serialize_field`.
    #[inline(never)]
    pub(super) fn locate_static_slow(&mut self, key: &'static str) -> Result<usize> {
        let idx = self.locate(key)?;
        let f = &self.rec.fields[idx];
        if f.name == key {
            // Equal content at this address: a `&'static str` never changes.
            f.key_addr.store(key.as_ptr() as usize, Ordering::Relaxed);
        }
        Ok(idx)
    }

    #[inline]
    pub(super) fn locate(&mut self, key: &str) -> Result<usize> {
        let fields = &self.rec.fields;
        if self.seen.is_empty() && self.next < fields.len() && fields[self.next].name == key {
            self.next += 1;
            return Ok(self.next - 1);
        }
        self.locate_slow(key)
    }

    #[cold]
    pub(super) fn locate_slow(&mut self, key: &str) -> Result<usize> {
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
    pub(super) fn write_field<T: ?Sized + Serialize>(
        &mut self,
        idx: usize,
        value: &T,
    ) -> Result<()> {
        let f = &self.rec.fields[idx];
        match value.serialize(ElemSer::new(&f.node, &mut self.buf[f.start..f.end])) {
            Ok(()) => Ok(()),
            Err(e) => Err(in_field(e, &f.name)),
        }
    }

    #[inline(always)]
    pub(super) fn finish(self) -> Result<()> {
        if self.seen.is_empty() && self.next == self.rec.fields.len() && self.rec.pads.is_empty() {
            return Ok(());
        }
        self.finish_slow()
    }

    #[inline(never)]
    pub(super) fn finish_slow(self) -> Result<()> {
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
    pub(super) fn missing(&self) -> Error {
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
        if let Some(f) = self.rec.fields.get(self.next)
            && f.key_addr.load(Ordering::Relaxed) == key.as_ptr() as usize
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
pub(super) struct KeySer;

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
pub(super) struct U16Capture;

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
