//! A dynamically typed element value, like `serde_json::Value`, for reading files whose schema
//! is not known at compile time.

/// One element (or part of one) of a NumPy array.
///
/// Scalars map to the variant of their kind; subarrays and array dimensions are `List`s in C
/// order; records are `Record`s with fields in dtype order (padding omitted).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `b1`.
    Bool(bool),
    /// `i1`..`i8`.
    Int(i64),
    /// `u1`..`u8`.
    UInt(u64),
    /// `f2`, `f4`, `f8`, and longdouble rounded to the nearest `f64`.
    Float(f64),
    /// `c8`, `c16`, `c32`: `(re, im)`.
    Complex(f64, f64),
    /// `S<n>`: bytes with trailing NULs stripped (as NumPy does).
    Bytes(Vec<u8>),
    /// `U<n>`: the string with trailing NULs stripped.
    String(String),
    /// `V<n>`: raw bytes.
    Void(Vec<u8>),
    /// `M8`: the raw int64 count of the dtype's unit since the epoch; `i64::MIN` is NaT.
    DateTime(i64),
    /// `m8`: the raw int64 count of the dtype's unit; `i64::MIN` is NaT.
    TimeDelta(i64),
    /// A subarray, or one axis of the array.
    List(Vec<Value>),
    /// A record: `(name, value)` in dtype order.
    Record(Vec<(String, Value)>),
}

impl Value {
    /// The NaT (not-a-time) marker of `datetime64`/`timedelta64`.
    pub const NAT: i64 = i64::MIN;

    /// The field `name` of a record value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Record(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A whole array whose schema is only known at run time: its dtype, shape, order and values.
///
/// `values` holds one [`Value`] per element, flat, in logical C order (a Fortran-order file's
/// values are reordered on reading), so `values.len()` is the product of `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The element type.
    pub dtype: crate::dtype::DType,
    /// The shape; empty for 0-d.
    pub shape: Vec<u64>,
    /// Whether the file stores the data in Fortran order (the values here are in C order).
    pub fortran_order: bool,
    /// The elements, flat, in logical C order.
    pub values: Vec<Value>,
}
