//! The data a pickle holds once interpreted: [`PyValue`] (a Python value made only of data)
//! and [`PyArray`] (a NumPy array found inside one, such as an element of a ragged array).

use super::stdlib::{PyDate, PyDateTime, PyTime, PyTimeDelta, PyTimeZone};
use crate::value::Value;

/// A Python value rebuilt from a pickle without running any code.
///
/// ```
/// use npy_serde::pickle::{load, PickleOptions, PyValue};
/// // pickle.dumps(['a', None, 3], protocol=2)
/// let bytes = b"\x80\x02]q\x00(X\x01\x00\x00\x00aq\x01NK\x03e.";
/// let v = load(bytes, &PickleOptions::default())?;
/// assert_eq!(v, PyValue::List(vec![PyValue::Str("a".into()), PyValue::None, PyValue::Int(3)]));
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An `int` that fits an `i64`.
    Int(i64),
    /// An `int` outside `i64`, as its decimal text (`"-1180591620717411303424"`).
    BigInt(String),
    /// A `float`.
    Float(f64),
    /// A `complex` (`builtins.complex(re, im)`).
    Complex(f64, f64),
    /// A `str` (or a Python 2 `str` decoded by the chosen [`Encoding`](super::Encoding)).
    Str(String),
    /// `bytes` or `bytearray` (or a Python 2 `str` read with `Encoding::Bytes`).
    Bytes(Vec<u8>),
    /// A `list`.
    List(Vec<PyValue>),
    /// A `tuple`.
    Tuple(Vec<PyValue>),
    /// A `set` or `frozenset`, in pickle order.
    Set(Vec<PyValue>),
    /// A `dict`, in insertion order (a repeated key keeps its last value, as Python does).
    Dict(Vec<(PyValue, PyValue)>),
    /// One element of a NumPy array of a fixed-size dtype (see [`PyArray::values`]), decoded as
    /// the crate's [`Value`]; the array's [`PyArray::descr`] gives its type.
    Scalar(Value),
    /// A NumPy scalar pickled on its own, such as an element of an object array
    /// (`np.float32(1.5)`, `np.datetime64('2020-01-01')`): its dtype and its value, so a reader
    /// can give back the same type (a `float32` stays a `float32`).
    NumpyScalar {
        /// The dtype as NumPy's `descr` text: `'<f4'`, `'<M8[D]'`, `[('a', '<i2')]`.
        descr: String,
        /// The value, decoded as the crate's [`Value`].
        value: Value,
    },
    /// One element of a structured array whose dtype has an object field: `(name, value)` in
    /// dtype order.
    Record(Vec<(String, PyValue)>),
    /// A NumPy array (an element of a ragged object array, say).
    Array(Box<PyArray>),
    /// A `datetime.datetime`, from the state CPython pickles (fields checked).
    DateTime(PyDateTime),
    /// A `datetime.date`.
    Date(PyDate),
    /// A `datetime.time`.
    Time(PyTime),
    /// A `datetime.timedelta`.
    TimeDelta(PyTimeDelta),
    /// A `datetime.timezone` (a fixed offset from UTC; `timezone.utc` is the offset 0 without
    /// a name).
    TimeZone(PyTimeZone),
    /// A `decimal.Decimal`, as the text `str()` gives for it (`1.10`, `-Infinity`, `1E+3`):
    /// exact, never a float.
    Decimal(String),
    /// A global the pickle names but this reader does not turn into data (a class or function,
    /// such as `builtins.range`): kept by name, never imported.
    Global {
        /// The module, e.g. `builtins`.
        module: String,
        /// The name in it, e.g. `range`.
        name: String,
    },
}

impl PyValue {
    /// The Python type name of the value, for messages: `str`, `int`, `list`, `numpy.ndarray`.
    ///
    /// ```
    /// assert_eq!(npy_serde::pickle::PyValue::None.type_name(), "NoneType");
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            PyValue::None => "NoneType",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) | PyValue::BigInt(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Complex(..) => "complex",
            PyValue::Str(_) => "str",
            PyValue::Bytes(_) => "bytes",
            PyValue::List(_) => "list",
            PyValue::Tuple(_) => "tuple",
            PyValue::Set(_) => "set",
            PyValue::Dict(_) => "dict",
            PyValue::Scalar(_) | PyValue::NumpyScalar { .. } => "numpy scalar",
            PyValue::Record(_) => "numpy.void",
            PyValue::Array(_) => "numpy.ndarray",
            PyValue::DateTime(_) => "datetime.datetime",
            PyValue::Date(_) => "datetime.date",
            PyValue::Time(_) => "datetime.time",
            PyValue::TimeDelta(_) => "datetime.timedelta",
            PyValue::TimeZone(_) => "datetime.timezone",
            PyValue::Decimal(_) => "decimal.Decimal",
            PyValue::Global { .. } => "global",
        }
    }

    /// The decoded value of a NumPy scalar or of an element of a fixed-size array
    /// ([`PyValue::NumpyScalar`] or [`PyValue::Scalar`]).
    ///
    /// ```
    /// use npy_serde::{pickle::PyValue, Value};
    /// let x = PyValue::NumpyScalar { descr: "'<f4'".into(), value: Value::Float(1.5) };
    /// assert_eq!(x.scalar(), Some(&Value::Float(1.5)));
    /// assert_eq!(PyValue::Float(1.5).scalar(), None);
    /// ```
    pub fn scalar(&self) -> Option<&Value> {
        match self {
            PyValue::Scalar(v) | PyValue::NumpyScalar { value: v, .. } => Some(v),
            _ => None,
        }
    }

    /// The string, if the value is a `str`.
    ///
    /// ```
    /// assert_eq!(npy_serde::pickle::PyValue::Str("a".into()).as_str(), Some("a"));
    /// ```
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PyValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// A NumPy array rebuilt from its pickle (`numpy.core.multiarray._reconstruct` and the state
/// `ndarray.__setstate__` takes), its elements decoded.
///
/// ```
/// use npy_serde::pickle::{PyArray, PyValue};
/// let a = PyArray { descr: "|O".into(), shape: vec![1], values: vec![PyValue::None] };
/// assert_eq!(a.values.len(), 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PyArray {
    /// The dtype as NumPy's `descr` (`'<f8'`, `'|O'`, a record list), or
    /// `StringDType()` / `StringDType(na_object=...)` for NumPy 2's variable-width strings.
    pub descr: String,
    /// The shape; empty for 0-d.
    pub shape: Vec<u64>,
    /// The elements, flat, in logical C order. Elements of fixed-size dtypes are
    /// [`PyValue::Scalar`]; of object dtypes whatever was pickled; of `StringDType` a
    /// [`PyValue::Str`] or, for the missing value (`na_object`), [`PyValue::None`].
    pub values: Vec<PyValue>,
}

/// An object array read from a `.npy` file (`descr '|O'`, a record dtype with an `O` field, or
/// NumPy 2's `StringDType`, which `np.save` also pickles): see
/// [`ReaderBuilder::allow_pickle_data`](crate::ReaderBuilder::allow_pickle_data).
///
/// ```
/// use npy_serde::pickle::{ObjectArray, PyValue};
/// let a = ObjectArray {
///     descr: "'|O'".into(),
///     shape: vec![2],
///     fortran_order: false,
///     values: vec![PyValue::Str("a".into()), PyValue::None],
/// };
/// assert_eq!(a.values[1], PyValue::None);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectArray {
    /// The dtype of the pickled array: `'|O'`, a record list with `'|O'` fields, or
    /// `StringDType()` / `StringDType(na_object=None)`.
    pub descr: String,
    /// The shape; empty for 0-d.
    pub shape: Vec<u64>,
    /// Whether the header says Fortran order (the values are in logical C order either way).
    pub fortran_order: bool,
    /// The elements, flat, in logical C order.
    pub values: Vec<PyValue>,
}
