//! Decoding whole arrays into the dynamic [`Array`]/[`Value`] model, straight from the dtype
//! (exact variants: `S` -> [`Value::Bytes`], `V` -> [`Value::Void`], `M8` ->
//! [`Value::DateTime`], ...), and `impl Deserialize for Value` for use inside serde types.
//!
//! ```
//! # fn main() -> npy_serde::Result<()> {
//! # let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
//! # let dict = "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 2), }";
//! # file.extend_from_slice(dict.as_bytes());
//! # file.resize(127, b' ');
//! # file.push(b'\n');
//! # for v in [1i16, 3, 2, 4] { file.extend_from_slice(&v.to_be_bytes()); }
//! use npy_serde::{Array, Value};
//! let a = Array::from_slice(&file)?;
//! assert_eq!(a.shape, [2, 2]);
//! // values are flat, in logical C order
//! assert_eq!(a.values, [1, 2, 3, 4].map(Value::Int));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::decode::{data_of, open_checked};
use super::options::ReaderBuilder;
use super::source::{BlockReader, FortranWalk};
use crate::error::{Error, Result};
use crate::header::{parse_header, read_header, ParsedHeader};
use crate::value::{decode_value, Array, Value};

impl Array {
    /// Reads one array from `reader`, leaving it just after the array's data.
    pub fn from_reader<R: Read>(reader: R) -> Result<Array> {
        ReaderBuilder::new().read_array(reader)
    }

    /// Reads the array of a whole `.npy` file in memory.
    pub fn from_slice(bytes: &[u8]) -> Result<Array> {
        ReaderBuilder::new().array_from_slice(bytes)
    }

    /// Reads the `.npy` file at `path`.
    pub fn from_path<P: AsRef<Path>>(path: P) -> Result<Array> {
        ReaderBuilder::new().array_from_path(path)
    }

    /// The values nested by the shape, like `ndarray.tolist()`: a `List` per axis, or the bare
    /// value for a 0-d array.
    pub fn to_nested(&self) -> Value {
        fn nest(vals: &[Value], dims: &[u64]) -> Value {
            match dims.split_first() {
                None => vals.first().cloned().unwrap_or(Value::List(Vec::new())),
                Some((&n, rest)) => {
                    // Saturating: with a 0 further down the product is 0, but the axes before
                    // that 0 may overflow (the file's element count is 0 and was accepted).
                    let per = rest.iter().fold(1u64, |a, &d| a.saturating_mul(d)) as usize;
                    Value::List(
                        (0..n as usize)
                            .map(|i| {
                                let lo = i.saturating_mul(per).min(vals.len());
                                let hi = lo.saturating_add(per).min(vals.len());
                                nest(&vals[lo..hi], rest)
                            })
                            .collect(),
                    )
                }
            }
        }
        nest(&self.values, &self.shape)
    }
}

/// Reads one array from `reader` into an [`Array`] (same as [`Array::from_reader`]).
pub fn read_array<R: Read>(reader: R) -> Result<Array> {
    Array::from_reader(reader)
}

impl ReaderBuilder {
    /// [`Array::from_reader`] with these options.
    pub fn read_array<R: Read>(&self, mut reader: R) -> Result<Array> {
        let header = read_header(&mut reader, &self.limits)?;
        self.array_from_reader_with_header(reader, &header)
    }

    /// [`Array::from_reader`] for an array whose header was already read from `reader`
    /// (positioned at the first data byte): a `.npz` member.
    pub(crate) fn array_from_reader_with_header<R: Read>(
        &self,
        reader: R,
        header: &ParsedHeader,
    ) -> Result<Array> {
        let h = &header.header;
        let (count, len) = self.check(h)?;
        let mut block = BlockReader::new(reader, header.data_offset, len);
        if h.fortran_order && FortranWalk::new(&h.shape).is_some() {
            let data = block.read_all()?;
            return decode_all(&data, header, self);
        }
        let itemsize = h.dtype.itemsize();
        // Grows as elements arrive; never sized from the declared count alone.
        let mut values = Vec::with_capacity(count.min(4096) as usize);
        for index in 0..count {
            let offset = block.offset();
            let bytes = block.next(itemsize).map_err(|e| e.at_record(index))?;
            let v = decode_value(&h.dtype, bytes, offset, self.max_empty_items)
                .map_err(|e| e.at_record(index))?;
            values.push(v);
        }
        Ok(Array {
            dtype: h.dtype.clone(),
            shape: h.shape.clone(),
            fortran_order: h.fortran_order,
            values,
        })
    }

    /// [`Array::from_slice`] with these options.
    pub fn array_from_slice(&self, bytes: &[u8]) -> Result<Array> {
        let header = parse_header(bytes, &self.limits)?;
        let data = data_of(bytes, &header, self)?;
        decode_all(data, &header, self)
    }

    /// [`Array::from_path`] with these options.
    pub fn array_from_path<P: AsRef<Path>>(&self, path: P) -> Result<Array> {
        let (file, header) = open_checked(path.as_ref(), self)?;
        self.array_from_reader_with_header(file, &header)
    }
}

/// Decodes all elements from complete data bytes, in logical C order.
pub(crate) fn decode_all(data: &[u8], header: &ParsedHeader, rb: &ReaderBuilder) -> Result<Array> {
    let h = &header.header;
    let (count, len) = rb.check(h)?;
    if (data.len() as u64) < len {
        return Err(Error::eof("the array data", len, data.len() as u64)
            .at_byte(header.data_offset + data.len() as u64));
    }
    let itemsize = h.dtype.itemsize();
    let mut walk = if h.fortran_order {
        FortranWalk::new(&h.shape)
    } else {
        None
    };
    // count <= data.len() / itemsize (checked above), or <= max_empty_items for empty items.
    let mut values = Vec::with_capacity(count as usize);
    for index in 0..count {
        let pos = match &mut walk {
            Some(w) => {
                let p = w.pos();
                w.advance();
                p
            }
            None => index,
        };
        let start = (pos as usize).wrapping_mul(itemsize);
        let bytes = data
            .get(start..start.wrapping_add(itemsize))
            .ok_or_else(|| Error::eof("an element", itemsize as u64, 0).at_record(index))?;
        let offset = header.data_offset + start as u64;
        values.push(
            decode_value(&h.dtype, bytes, offset, rb.max_empty_items)
                .map_err(|e| e.at_record(index))?,
        );
    }
    Ok(Array {
        dtype: h.dtype.clone(),
        shape: h.shape.clone(),
        fortran_order: h.fortran_order,
        values,
    })
}

// ---------------------------------------------------------------------------------------------
// Deserialize for Value
// ---------------------------------------------------------------------------------------------

/// Reads any self-describing serde value, mapping it to the nearest [`Value`]: serde has no
/// complex, void or datetime types, so from this crate's deserializer a complex number becomes
/// a two-item `List`, `V` becomes `Bytes` and `M8`/`m8` become `Int`. (Decode a whole file with
/// [`Array::from_reader`] to get the exact variants.) Maps become `Record`s with string keys.
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any NumPy value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> std::result::Result<Value, E> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => Ok(Value::Int(i)),
            (_, Ok(u)) => Ok(Value::UInt(u)),
            _ => Err(E::custom(format!("integer {v} does not fit in 64 bits"))),
        }
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::UInt(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> std::result::Result<Value, E> {
        u64::try_from(v)
            .map(Value::UInt)
            .map_err(|_| E::custom(format!("integer {v} does not fit in 64 bits")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_char<E: de::Error>(self, v: char) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<Value, E> {
        Ok(Value::Bytes(v.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> std::result::Result<Value, E> {
        Ok(Value::Bytes(v))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Value, E> {
        Ok(Value::Record(Vec::new()))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::List(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            out.push((k, v));
        }
        Ok(Value::Record(out))
    }
}
