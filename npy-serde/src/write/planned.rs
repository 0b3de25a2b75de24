//! The runtime-planned tier of writing: the twin of `crate::read::planned` for the serde
//! doors (`NpyWriter::write_serde`, `write_all_serde`, `WriterBuilder::serialize`).
//!
//! Each record is first offered to [`PlannedSer`]: a minimal serializer over the same plan
//! as the general tier ([`Node`]) that only knows the exact cases (a scalar given as its own
//! Rust type, a struct whose fields come in the dtype's order, a subarray given as a sequence
//! of its length) and whose one error is a zero-sized miss. Anything else (a conversion, a
//! key out of order, an `Option::None`, strings, dates, complex numbers) is a miss, and the
//! writer serializes that record again on the general tier (`super::general`), which writes
//! every byte of the slot or reports the error with its position; the records after a miss
//! go straight to the general tier.
//!
//! The point is code size, as when reading: with no error to build and no conversion to
//! consider, serde's derived `Serialize` and these methods inline into a few instructions
//! per field. Measured with callgrind on W2 (33-byte records of five fields, one of them a
//! subarray of three), `NpyWriter::write_serde` took 465 instructions a record on the general
//! tier and 229 on this one (`write`, on the exact tier of `NpyRecord` types: 111).
//!
//! Serializing a record twice is safe for any `Serialize` impl that gives the same calls
//! each time: a miss only leaves bytes in the slot that the general tier overwrites.
//!
//! Calls the plan (`super::plan`) and `crate::miss`; nothing above them.

use std::sync::atomic::Ordering;

use serde::ser::{self, Impossible, Serialize};

use super::plan::{FieldPlan, Node};
use crate::datetime::time_of_name;
use crate::dtype::Scalar;
use crate::kind::put;
use crate::miss::{miss, Miss, Result};

/// Serializes `value` into `slot` (exactly the root's itemsize) on this tier; false on a miss
/// (the slot's bytes are then unspecified).
#[inline(always)]
pub(super) fn encode<T: ?Sized + Serialize>(root: &Node, slot: &mut [u8], value: &T) -> bool {
    value
        .serialize(PlannedSer {
            node: root,
            buf: slot,
        })
        .is_ok()
}

/// One value of `node` into `buf` (exactly the node's itemsize).
struct PlannedSer<'p, 'b> {
    node: &'p Node,
    buf: &'b mut [u8],
}

macro_rules! scalar {
    ($method:ident, $t:ty, $scalar:ident) => {
        #[inline(always)]
        fn $method(self, v: $t) -> Result<()> {
            match self.node {
                Node::Leaf {
                    scalar: Scalar::$scalar,
                    big,
                } => {
                    put!(self.buf, v, *big);
                    Ok(())
                }
                _ => Err(miss()),
            }
        }
    };
}

/// The methods that always miss.
macro_rules! misses {
    ($($method:ident($($arg:ty),*);)*) => {
        $(
            #[inline]
            fn $method(self, $(_: $arg),*) -> Result<()> {
                Err(miss())
            }
        )*
    };
}

impl<'p, 'b> ser::Serializer for PlannedSer<'p, 'b> {
    type Ok = ();
    type Error = Miss;
    type SerializeSeq = PlannedSeq<'p, 'b>;
    type SerializeTuple = PlannedSeq<'p, 'b>;
    type SerializeTupleStruct = PlannedSeq<'p, 'b>;
    type SerializeTupleVariant = Impossible<(), Miss>;
    type SerializeMap = Impossible<(), Miss>;
    type SerializeStruct = PlannedRecord<'p, 'b>;
    type SerializeStructVariant = Impossible<(), Miss>;

    #[inline(always)]
    fn serialize_bool(self, v: bool) -> Result<()> {
        match self.node {
            Node::Leaf {
                scalar: Scalar::Bool,
                ..
            } => {
                self.buf[0] = u8::from(v);
                Ok(())
            }
            _ => Err(miss()),
        }
    }

    scalar!(serialize_i8, i8, I8);
    scalar!(serialize_i16, i16, I16);
    scalar!(serialize_i32, i32, I32);
    scalar!(serialize_i64, i64, I64);
    scalar!(serialize_u8, u8, U8);
    scalar!(serialize_u16, u16, U16);
    scalar!(serialize_u32, u32, U32);
    scalar!(serialize_u64, u64, U64);
    scalar!(serialize_f32, f32, F32);
    scalar!(serialize_f64, f64, F64);

    misses! {
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    #[inline(always)]
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    #[inline(always)]
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<()> {
        // `half::f16` and the crate's date-time types are encoded by the general tier.
        if name == "f16" || time_of_name(name).is_some() {
            return Err(miss());
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(miss())
    }

    #[inline(always)]
    fn serialize_seq(self, len: Option<usize>) -> Result<PlannedSeq<'p, 'b>> {
        match self.node {
            Node::Sub {
                base,
                len: n,
                stride,
            } if len.is_none_or(|l| l == *n) => Ok(PlannedSeq {
                base,
                stride: *stride,
                len: *n,
                i: 0,
                buf: self.buf,
            }),
            _ => Err(miss()),
        }
    }

    #[inline(always)]
    fn serialize_tuple(self, len: usize) -> Result<PlannedSeq<'p, 'b>> {
        self.serialize_seq(Some(len))
    }

    #[inline(always)]
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<PlannedSeq<'p, 'b>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Miss>> {
        Err(miss())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Impossible<(), Miss>> {
        Err(miss())
    }

    #[inline(always)]
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<PlannedRecord<'p, 'b>> {
        match self.node {
            Node::Record(rec) if rec.fields.len() == len => {
                for &(a, b) in &rec.pads {
                    self.buf[a..b].fill(0);
                }
                Ok(PlannedRecord {
                    fields: rec.fields.iter(),
                    buf: self.buf,
                })
            }
            _ => Err(miss()),
        }
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Impossible<(), Miss>> {
        Err(miss())
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// True if `key` is `f`'s name, which then matches by address from now on (as in the general
/// tier, which shares the plan and its addresses).
#[cold]
#[inline(never)]
fn verify(f: &FieldPlan, key: &'static str) -> bool {
    let equal = f.name == key;
    if equal {
        f.key_addr.store(key.as_ptr() as usize, Ordering::Relaxed);
    }
    equal
}

/// The items of one subarray axis, in order.
struct PlannedSeq<'p, 'b> {
    base: &'p Node,
    stride: usize,
    len: usize,
    i: usize,
    buf: &'b mut [u8],
}

impl PlannedSeq<'_, '_> {
    #[inline(always)]
    fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        let i = self.i;
        if i >= self.len {
            return Err(miss());
        }
        let at = i * self.stride;
        let slot = self.buf.get_mut(at..at + self.stride).ok_or_else(miss)?;
        value.serialize(PlannedSer {
            node: self.base,
            buf: slot,
        })?;
        self.i = i + 1;
        Ok(())
    }

    #[inline(always)]
    fn done(self) -> Result<()> {
        if self.i == self.len {
            Ok(())
        } else {
            Err(miss())
        }
    }
}

/// The sequence traits, all [`PlannedSeq::item`] and [`PlannedSeq::done`].
macro_rules! seq_impls {
    ($($trait:ident :: $method:ident;)*) => {
        $(
            impl ser::$trait for PlannedSeq<'_, '_> {
                type Ok = ();
                type Error = Miss;

                #[inline(always)]
                fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
                    self.item(value)
                }

                #[inline(always)]
                fn end(self) -> Result<()> {
                    self.done()
                }
            }
        )*
    };
}

seq_impls! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
}

/// A record's fields, which must come in the dtype's order.
struct PlannedRecord<'p, 'b> {
    fields: std::slice::Iter<'p, FieldPlan>,
    buf: &'b mut [u8],
}

impl ser::SerializeStruct for PlannedRecord<'_, '_> {
    type Ok = ();
    type Error = Miss;

    #[inline(always)]
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        let f = self.fields.next().ok_or_else(miss)?;
        // serde's derived keys are `&'static str`s: the same address every record, once a
        // key was found equal to the field's name by content.
        if (f.key_addr.load(Ordering::Relaxed) != key.as_ptr() as usize
            || f.name.len() != key.len())
            && !verify(f, key)
        {
            return Err(miss());
        }
        let slot = self.buf.get_mut(f.start..f.end).ok_or_else(miss)?;
        value.serialize(PlannedSer {
            node: &f.node,
            buf: slot,
        })
    }

    fn skip_field(&mut self, _key: &'static str) -> Result<()> {
        Err(miss())
    }

    #[inline(always)]
    fn end(self) -> Result<()> {
        if self.fields.len() == 0 {
            Ok(())
        } else {
            Err(miss())
        }
    }
}
