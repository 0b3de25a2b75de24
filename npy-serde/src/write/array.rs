//! Writing the dynamic model: [`WriterBuilder::write_array`] for an [`Array`], and
//! `impl Serialize for Value` (the mirror of the read side's `impl Deserialize for Value`).

use std::io::Write;

use serde::ser::{self, Serialize};

use super::options::{fold, WriterBuilder};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::pyliteral;
use crate::value::{Array, Value};

impl WriterBuilder {
    /// Writes a dynamic [`Array`]: its dtype (or the builder's, converting values), its shape
    /// (or the builder's), and Fortran order if the array or the builder says so.
    ///
    /// Each value is one element of the dtype (a [`Value::List`](crate::Value::List) per
    /// element for a subarray dtype, a [`Value::Record`](crate::Value::Record) for a record).
    pub fn write_array<W: Write>(&self, writer: W, array: &Array) -> Result<()> {
        let elem = self.element_dtype(|| Some(array.dtype.clone()))?;
        let count = Header::new(elem.clone(), array.shape.clone()).count()?;
        if count != array.values.len() as u64 {
            return Err(Error::write(format!(
                "the array has {} values but its shape {} holds {count}",
                array.values.len(),
                pyliteral::repr_shape(&array.shape)
            )));
        }
        let (_, sub) = fold(&elem);
        let mut shape = array.shape.clone();
        shape.extend_from_slice(&sub);
        self.write_flat(
            writer,
            elem,
            Some(shape),
            &array.values,
            None,
            None,
            self.fortran_order || array.fortran_order,
            |_| {},
        )
    }
}

/// Serializes as the matching serde shape: numbers as themselves, `Complex` as a `(re, im)`
/// tuple, `Bytes`/`Void` as bytes, `String` as a string, datetimes as their raw `i64`, `List`
/// as a sequence and `Record` as a map from field name to value (in dtype order). Writing a
/// `Value` with this crate's writer therefore stores it back into the dtype it was read from.
impl Serialize for Value {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(v) => s.serialize_i64(*v),
            Value::UInt(v) => s.serialize_u64(*v),
            Value::Float(v) => s.serialize_f64(*v),
            Value::Complex(re, im) => (re, im).serialize(s),
            Value::Bytes(b) | Value::Void(b) => s.serialize_bytes(b),
            Value::String(v) => s.serialize_str(v),
            Value::DateTime(v) | Value::TimeDelta(v) => s.serialize_i64(*v),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Record(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
