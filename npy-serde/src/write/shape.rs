//! Shapes on the write side: a `Serialize` value whose nested sequences give the array's
//! shape, inferred ([`infer_shape`]) and then walked ([`serialize_nested`]) into elements for
//! a [`Sink`]; the mirror of the read side's shape walk.
//!
//! Calls nothing above the error type; the sink encodes each element.

use serde::ser::{self, Impossible, Serialize};

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::pyliteral;

/// Receives the elements of an array in C order.
pub(crate) trait Sink {
    /// Writes one element.
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()>;
    /// Index of the next element (for error positions).
    fn position(&self) -> u64;
}

/// Serializes `value` as an array of `shape`: nested sequences down to the elements, each of
/// the length the shape says (checked: non-rectangular input is an error).
pub(crate) fn serialize_nested<S: Sink, T: ?Sized + Serialize>(
    sink: &mut S,
    shape: &[u64],
    value: &T,
) -> Result<()> {
    if shape.is_empty() {
        return sink.element(value);
    }
    value.serialize(NestSer {
        sink,
        shape,
        depth: 0,
    })
}

pub(super) struct NestSer<'a, S> {
    pub(super) sink: &'a mut S,
    pub(super) shape: &'a [u64],
    pub(super) depth: usize,
}

impl<'a, S: Sink> NestSer<'a, S> {
    #[cold]
    pub(super) fn not_seq(&self, what: &str) -> Error {
        Error::write(format!(
            "expected a sequence of {} items for axis {} of shape {}, found {what}",
            self.shape[self.depth],
            self.depth,
            pyliteral::repr_shape(self.shape)
        ))
        .at_record(self.sink.position())
    }

    pub(super) fn seq(self, len: Option<usize>) -> Result<NestSeq<'a, S>> {
        let expected = self.shape[self.depth];
        if let Some(len) = len
            && len as u64 != expected
        {
            return Err(non_rectangular(
                self.shape,
                self.depth,
                len as u64,
                self.sink.position(),
            ));
        }
        Ok(NestSeq {
            sink: self.sink,
            shape: self.shape,
            depth: self.depth,
            count: 0,
        })
    }
}

#[cold]
pub(super) fn non_rectangular(shape: &[u64], depth: usize, found: u64, at: u64) -> Error {
    Error::write(format!(
        "the nested sequences are not rectangular: axis {depth} of shape {} needs {} items, found {found}",
        pyliteral::repr_shape(shape),
        shape[depth]
    ))
    .at_record(at)
}

pub(super) struct NestSeq<'a, S> {
    pub(super) sink: &'a mut S,
    pub(super) shape: &'a [u64],
    pub(super) depth: usize,
    pub(super) count: u64,
}

impl<S: Sink> NestSeq<'_, S> {
    pub(super) fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if self.count >= self.shape[self.depth] {
            return Err(non_rectangular(
                self.shape,
                self.depth,
                self.count + 1,
                self.sink.position(),
            ));
        }
        if self.depth + 1 == self.shape.len() {
            self.sink.element(value)?;
        } else {
            value.serialize(NestSer {
                sink: &mut *self.sink,
                shape: self.shape,
                depth: self.depth + 1,
            })?;
        }
        self.count += 1;
        Ok(())
    }

    pub(super) fn finish(self) -> Result<()> {
        if self.count != self.shape[self.depth] {
            return Err(non_rectangular(
                self.shape,
                self.depth,
                self.count,
                self.sink.position(),
            ));
        }
        Ok(())
    }
}

impl<S: Sink> ser::SerializeSeq for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<S: Sink> ser::SerializeTuple for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

impl<S: Sink> ser::SerializeTupleStruct for NestSeq<'_, S> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<()> {
        self.finish()
    }
}

macro_rules! nest_refuse {
    ($($m:ident($($t:ty),*) => $what:expr;)*) => {
        $(fn $m(self $(, _: $t)*) -> Result<()> { Err(self.not_seq($what)) })*
    };
}

impl<'a, S: Sink> ser::Serializer for NestSer<'a, S> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = NestSeq<'a, S>;
    type SerializeTuple = NestSeq<'a, S>;
    type SerializeTupleStruct = NestSeq<'a, S>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn is_human_readable(&self) -> bool {
        false
    }

    nest_refuse! {
        serialize_bool(bool) => "a bool";
        serialize_i8(i8) => "an integer";
        serialize_i16(i16) => "an integer";
        serialize_i32(i32) => "an integer";
        serialize_i64(i64) => "an integer";
        serialize_i128(i128) => "an integer";
        serialize_u8(u8) => "an integer";
        serialize_u16(u16) => "an integer";
        serialize_u32(u32) => "an integer";
        serialize_u64(u64) => "an integer";
        serialize_u128(u128) => "an integer";
        serialize_f32(f32) => "a float";
        serialize_f64(f64) => "a float";
        serialize_char(char) => "a char";
        serialize_str(&str) => "a string";
        serialize_bytes(&[u8]) => "bytes";
        serialize_none() => "None";
        serialize_unit() => "`()`";
        serialize_unit_struct(&'static str) => "a unit struct";
        serialize_unit_variant(&'static str, u32, &'static str) => "an enum variant";
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<()> {
        Err(self.not_seq("an enum variant"))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<NestSeq<'a, S>> {
        self.seq(len)
    }

    fn serialize_tuple(self, len: usize) -> Result<NestSeq<'a, S>> {
        self.seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<NestSeq<'a, S>> {
        self.seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(self.not_seq("an enum variant"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(self.not_seq("a map"))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(self.not_seq("a struct"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(self.not_seq("an enum variant"))
    }
}

// ---------------------------------------------------------------------------------------------
// Shape inference: how deep do sequences nest before reaching elements of the dtype?

/// What kind of serde value is an element of the dtype, for shape inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElemKind {
    /// A record: structs and maps are elements, so are tuples of scalars (positional records).
    Record,
    /// Complex: a 2-sequence of numbers is one element.
    Complex,
    /// `S`/`V`: a sequence of numbers (bytes) is one element.
    ByteLike,
    /// Other scalars: any sequence is an axis.
    Scalar,
}

impl ElemKind {
    pub(crate) fn of(dtype: &DType) -> ElemKind {
        match dtype {
            DType::Record(_) => ElemKind::Record,
            DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                    ElemKind::Complex
                }
                Scalar::Bytes(_) | Scalar::Void(_) => ElemKind::ByteLike,
                _ => ElemKind::Scalar,
            },
            DType::Array(b, _) => ElemKind::of(b),
        }
    }
}

/// The largest number of array dimensions (NumPy's `NPY_MAXDIMS`).
pub(super) const MAX_DIMS: usize = 64;

/// Infers the array shape of `value`: the lengths of nested sequences along the first item of
/// each, down to values that are elements of `kind`. Rectangularity is checked when writing.
pub(crate) fn infer_shape<T: ?Sized + Serialize>(value: &T, kind: ElemKind) -> Result<Vec<u64>> {
    match value.serialize(Probe { kind, depth: 0 })? {
        Probed::Dims(mut v) => {
            v.reverse();
            Ok(v)
        }
        Probed::Number | Probed::Element | Probed::Record => Ok(Vec::new()),
    }
}

pub(super) enum Probed {
    Number,
    /// A scalar that is not a number (bool, string, bytes...).
    Element,
    /// A struct or map (a record element).
    Record,
    /// Axis lengths, innermost first.
    Dims(Vec<u64>),
}

pub(super) struct Probe {
    pub(super) kind: ElemKind,
    pub(super) depth: usize,
}

pub(super) struct ProbeSeq {
    pub(super) kind: ElemKind,
    pub(super) depth: usize,
    pub(super) tuple: bool,
    pub(super) count: u64,
    pub(super) first: Option<Probed>,
}

impl ProbeSeq {
    pub(super) fn item<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        if self.count == 0 {
            self.first = Some(value.serialize(Probe {
                kind: self.kind,
                depth: self.depth + 1,
            })?);
        }
        self.count += 1;
        Ok(())
    }

    pub(super) fn finish(self) -> Result<Probed> {
        let first_is_number = matches!(self.first, Some(Probed::Number));
        let first_is_scalar = matches!(self.first, Some(Probed::Number | Probed::Element));
        match self.kind {
            ElemKind::Complex if first_is_number && self.count == 2 => return Ok(Probed::Element),
            ElemKind::ByteLike if first_is_number => return Ok(Probed::Element),
            ElemKind::Record if self.tuple && first_is_scalar => return Ok(Probed::Record),
            _ => {}
        }
        Ok(Probed::Dims(match self.first {
            Some(Probed::Dims(mut inner)) => {
                inner.push(self.count);
                inner
            }
            _ => vec![self.count],
        }))
    }
}

impl ser::SerializeSeq for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

impl ser::SerializeTuple for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for ProbeSeq {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.item(value)
    }
    fn end(self) -> Result<Probed> {
        self.finish()
    }
}

/// An element found by the probe: its contents are checked when it is written.
pub(super) struct ProbeElement;

impl ser::SerializeMap for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Record)
    }
}

impl ser::SerializeStruct for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Record)
    }
}

impl ser::SerializeTupleVariant for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Element)
    }
}

impl ser::SerializeStructVariant for ProbeElement {
    type Ok = Probed;
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, _: &'static str, _: &T) -> Result<()> {
        Ok(())
    }
    fn end(self) -> Result<Probed> {
        Ok(Probed::Element)
    }
}

macro_rules! probe_leaf {
    ($($m:ident($($t:ty),*) => $r:expr;)*) => {
        $(fn $m(self $(, _: $t)*) -> Result<Probed> { Ok($r) })*
    };
}

impl ser::Serializer for Probe {
    type Ok = Probed;
    type Error = Error;
    type SerializeSeq = ProbeSeq;
    type SerializeTuple = ProbeSeq;
    type SerializeTupleStruct = ProbeSeq;
    type SerializeTupleVariant = ProbeElement;
    type SerializeMap = ProbeElement;
    type SerializeStruct = ProbeElement;
    type SerializeStructVariant = ProbeElement;

    fn is_human_readable(&self) -> bool {
        false
    }

    probe_leaf! {
        serialize_bool(bool) => Probed::Element;
        serialize_i8(i8) => Probed::Number;
        serialize_i16(i16) => Probed::Number;
        serialize_i32(i32) => Probed::Number;
        serialize_i64(i64) => Probed::Number;
        serialize_i128(i128) => Probed::Number;
        serialize_u8(u8) => Probed::Number;
        serialize_u16(u16) => Probed::Number;
        serialize_u32(u32) => Probed::Number;
        serialize_u64(u64) => Probed::Number;
        serialize_u128(u128) => Probed::Number;
        serialize_f32(f32) => Probed::Number;
        serialize_f64(f64) => Probed::Number;
        serialize_char(char) => Probed::Element;
        serialize_str(&str) => Probed::Element;
        serialize_bytes(&[u8]) => Probed::Element;
        serialize_none() => Probed::Element;
        serialize_unit() => Probed::Element;
        serialize_unit_struct(&'static str) => Probed::Element;
        serialize_unit_variant(&'static str, u32, &'static str) => Probed::Element;
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Probed> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<Probed> {
        if name == "f16" {
            return Ok(Probed::Number);
        }
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Probed> {
        Ok(Probed::Element)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<ProbeSeq> {
        self.seq(false)
    }

    fn serialize_tuple(self, _: usize) -> Result<ProbeSeq> {
        self.seq(true)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<ProbeSeq> {
        self.seq(true)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<ProbeElement> {
        Ok(ProbeElement)
    }
}

impl Probe {
    pub(super) fn seq(self, tuple: bool) -> Result<ProbeSeq> {
        if self.depth >= MAX_DIMS {
            return Err(Error::limit(
                "array dimensions",
                MAX_DIMS as u64,
                self.depth as u64 + 1,
            ));
        }
        Ok(ProbeSeq {
            kind: self.kind,
            depth: self.depth,
            tuple,
            count: 0,
            first: None,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// `Value` is Serialize.
