//! serde for pickled values: a [`PyValue`] is a `Deserializer` (so an object array reads into
//! `Vec<Option<String>>`, `Vec<String>`, `Vec<serde_json::Value>` or any serde type) and is
//! `Serialize` (to JSON and the like). A `str` reads as a string, `bytes` as bytes, `None` as
//! a unit or `Option::None`, lists, tuples and sets as sequences, dicts and record elements as
//! maps, a nested array as nested sequences by its shape (as `ndarray.tolist()`), a NumPy
//! scalar as its value. An `int` past `i64` reads as a `u64` when it fits, as an `i128`/`u128`
//! when asked for one and it fits, else as its decimal text (as in JSON); `bytes` as a sequence of
//! bytes (`Vec<u8>`), or as bytes when asked for them (`serde_bytes`). A `datetime`, `date` or
//! `time` reads as its `isoformat()` text, a `timezone` as its `tzname()` (`UTC`, `UTC+05:30`,
//! its name), a `timedelta` as its `total_seconds()` (an `f64`), a `Decimal` as its exact text
//! (`1.10`, `NaN`). A global (a class or function the pickle names) is an error naming it.

use super::value::{PyArray, PyValue};
use crate::error::{Error, ErrorKind};
use crate::value::Value;
use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// A NumPy scalar's value as the Python value `.item()` gives.
fn scalar_value(v: Value) -> PyValue {
    match v {
        Value::Bool(b) => PyValue::Bool(b),
        Value::Int(i) | Value::DateTime(i) | Value::TimeDelta(i) => PyValue::Int(i),
        Value::UInt(u) => i64::try_from(u)
            .map(PyValue::Int)
            .unwrap_or_else(|_| PyValue::BigInt(u.to_string())),
        Value::Float(f) => PyValue::Float(f),
        Value::Complex(re, im) => PyValue::Complex(re, im),
        Value::Bytes(b) | Value::Void(b) => PyValue::Bytes(b),
        Value::String(s) => PyValue::Str(s),
        Value::List(v) => PyValue::List(v.into_iter().map(scalar_value).collect()),
        Value::Record(f) => {
            PyValue::Record(f.into_iter().map(|(n, v)| (n, scalar_value(v))).collect())
        }
    }
}

/// An array's values nested by its shape, as `ndarray.tolist()`.
fn nested(a: PyArray) -> PyValue {
    fn build(it: &mut std::vec::IntoIter<PyValue>, dims: &[u64]) -> PyValue {
        match dims.split_first() {
            None => it.next().unwrap_or(PyValue::None),
            Some((&d, rest)) => PyValue::List((0..d).map(|_| build(it, rest)).collect()),
        }
    }
    let mut it = a.values.into_iter();
    build(&mut it, &a.shape)
}

fn global_error(module: &str, name: &str) -> Error {
    Error::new(ErrorKind::Pickle(format!(
        "the value is the global {module}.{name} (a class or function, never imported), \
         which no Rust type holds"
    )))
}

impl<'de> de::Deserializer<'de> for PyValue {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self {
            PyValue::None => v.visit_unit(),
            PyValue::Bool(b) => v.visit_bool(b),
            PyValue::Int(i) => v.visit_i64(i),
            PyValue::BigInt(s) => match s.parse::<u64>() {
                Ok(u) => v.visit_u64(u),
                // Past 64 bits: the decimal text (an `i128`/`u128` asks for it by type).
                Err(_) => v.visit_string(s),
            },
            PyValue::Float(f) => v.visit_f64(f),
            PyValue::Complex(re, im) => v.visit_seq(SeqDeserializer::new(
                [PyValue::Float(re), PyValue::Float(im)].into_iter(),
            )),
            PyValue::Str(s) => v.visit_string(s),
            // A sequence of bytes (what `Vec<u8>` and JSON take); `serde_bytes` asks by type.
            PyValue::Bytes(b) => {
                let mut seq = SeqDeserializer::<_, Error>::new(b.into_iter());
                let out = v.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            PyValue::List(items) | PyValue::Tuple(items) | PyValue::Set(items) => {
                let mut seq = SeqDeserializer::new(items.into_iter());
                let out = v.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(out)
            }
            PyValue::Dict(pairs) => {
                let mut map = MapDeserializer::new(pairs.into_iter());
                let out = v.visit_map(&mut map)?;
                map.end()?;
                Ok(out)
            }
            PyValue::Record(fields) => {
                let mut map =
                    MapDeserializer::new(fields.into_iter().map(|(n, x)| (PyValue::Str(n), x)));
                let out = v.visit_map(&mut map)?;
                map.end()?;
                Ok(out)
            }
            PyValue::Scalar(x) | PyValue::NumpyScalar { value: x, .. } => {
                scalar_value(x).deserialize_any(v)
            }
            PyValue::Array(a) => nested(*a).deserialize_any(v),
            PyValue::DateTime(d) => v.visit_string(d.isoformat()),
            PyValue::Date(d) => v.visit_string(d.isoformat()),
            PyValue::Time(t) => v.visit_string(t.isoformat()),
            PyValue::TimeZone(tz) => v.visit_string(tz.tzname()),
            PyValue::TimeDelta(d) => v.visit_f64(d.total_seconds()),
            PyValue::Decimal(s) => v.visit_string(s),
            PyValue::Global { module, name } => Err(global_error(&module, &name)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self {
            PyValue::None => v.visit_none(),
            // A 0-d array is its one value, which may be None.
            PyValue::Array(a) if a.shape.is_empty() => nested(*a).deserialize_option(v),
            other => v.visit_some(other),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.deserialize_byte_buf(v)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self {
            PyValue::Bytes(b) => v.visit_byte_buf(b),
            other => other.deserialize_any(v),
        }
    }

    fn deserialize_i128<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match &self {
            PyValue::BigInt(s) => match s.parse::<i128>() {
                Ok(i) => v.visit_i128(i),
                Err(_) => self.deserialize_any(v),
            },
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_u128<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match &self {
            PyValue::BigInt(s) => match s.parse::<u128>() {
                Ok(i) => v.visit_u128(i),
                Err(_) => self.deserialize_any(v),
            },
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string
        unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> IntoDeserializer<'de, Error> for PyValue {
    type Deserializer = PyValue;

    fn into_deserializer(self) -> PyValue {
        self
    }
}

impl Serialize for PyValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PyValue::None => s.serialize_unit(),
            PyValue::Bool(b) => s.serialize_bool(*b),
            PyValue::Int(i) => s.serialize_i64(*i),
            PyValue::BigInt(t) => match t.parse::<u64>() {
                Ok(u) => s.serialize_u64(u),
                Err(_) => s.serialize_str(t),
            },
            PyValue::Float(f) => s.serialize_f64(*f),
            PyValue::Complex(re, im) => (re, im).serialize(s),
            PyValue::Str(t) => s.serialize_str(t),
            PyValue::Bytes(b) => s.serialize_bytes(b),
            PyValue::List(v) | PyValue::Tuple(v) | PyValue::Set(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            PyValue::Dict(pairs) => {
                let mut m = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            PyValue::Record(fields) => {
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
            PyValue::Scalar(v) | PyValue::NumpyScalar { value: v, .. } => {
                scalar_value(v.clone()).serialize(s)
            }
            PyValue::Array(a) => nested((**a).clone()).serialize(s),
            PyValue::DateTime(d) => s.serialize_str(&d.isoformat()),
            PyValue::Date(d) => s.serialize_str(&d.isoformat()),
            PyValue::Time(t) => s.serialize_str(&t.isoformat()),
            PyValue::TimeZone(tz) => s.serialize_str(&tz.tzname()),
            PyValue::TimeDelta(d) => s.serialize_f64(d.total_seconds()),
            PyValue::Decimal(t) => s.serialize_str(t),
            PyValue::Global { module, name } => {
                Err(serde::ser::Error::custom(global_error(module, name)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn values_read_into_rust_types() {
        let v = PyValue::List(vec![PyValue::Str("a".into()), PyValue::None]);
        let got: Vec<Option<String>> = Deserialize::deserialize(v).unwrap();
        assert_eq!(got, [Some("a".to_string()), None]);
        let e = <String as Deserialize>::deserialize(PyValue::Global {
            module: "os".into(),
            name: "system".into(),
        })
        .unwrap_err();
        assert!(e.to_string().contains("os.system"), "{e}");
        let big: i128 =
            Deserialize::deserialize(PyValue::BigInt("-1180591620717411303424".into())).unwrap();
        assert_eq!(big, -(1i128 << 70));
        let s: f32 = Deserialize::deserialize(PyValue::Scalar(Value::Float(1.5))).unwrap();
        assert_eq!(s, 1.5);
    }

    #[test]
    fn datetimes_and_decimals_read_as_their_text() {
        use super::super::{PyDate, PyTimeDelta};
        let d = PyValue::Date(PyDate::new(2020, 2, 29).unwrap());
        let got: String = Deserialize::deserialize(d).unwrap();
        assert_eq!(got, "2020-02-29");
        let td = PyValue::TimeDelta(PyTimeDelta::new(0, 90, 500_000).unwrap());
        let got: f64 = Deserialize::deserialize(td.clone()).unwrap();
        assert_eq!(got, 90.5);
        let v = PyValue::List(vec![PyValue::Decimal("1.10".into()), td]);
        let json: Vec<serde_json::Value> = Deserialize::deserialize(v.clone()).unwrap();
        assert_eq!(json, [serde_json::json!("1.10"), serde_json::json!(90.5)]);
        assert_eq!(serde_json::to_string(&v).unwrap(), r#"["1.10",90.5]"#);
    }

    #[test]
    fn arrays_nest_by_shape() {
        let a = PyArray {
            descr: "'<i8'".into(),
            shape: vec![2, 2],
            values: (1..=4).map(|i| PyValue::Scalar(Value::Int(i))).collect(),
        };
        let got: Vec<Vec<i64>> = Deserialize::deserialize(PyValue::Array(Box::new(a))).unwrap();
        assert_eq!(got, [[1, 2], [3, 4]]);
    }
}
