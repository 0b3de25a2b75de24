//! The values of an object array (the data-only pickle reader's [`PyValue`]s) as Python
//! objects, built from a fixed allow-list: `None`, `bool`, `int`, `float`, `complex`, `str`,
//! `bytes`, `list`, `tuple`, `set`, `dict`, NumPy scalars and arrays, `datetime.datetime`,
//! `.date`, `.time`, `.timedelta`, `.timezone` and `decimal.Decimal` (made by
//! `npy_serde._build` from the modules it imports itself, out of the checked fields). Nothing
//! named by the pickle is imported or called: a class or function it names (`range`, say) is
//! refused.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyComplex, PyDict, PyList, PySet, PyTuple};

use npy_serde::pickle::{PyArray, PyTime, PyTimeDelta, PyTimeZone, PyValue};
use npy_serde::Value;

use crate::errors::value_error;

/// `npy_serde._build`, the Python half of building NumPy values.
static BUILD: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn build(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(BUILD
        .get_or_try_init(py, || py.import("npy_serde._build").map(Bound::unbind))?
        .bind(py))
}

/// The values as a Python list, in order.
pub fn values_to_py<'py>(py: Python<'py>, values: &[PyValue]) -> PyResult<Bound<'py, PyList>> {
    let items = values
        .iter()
        .map(|v| to_py(py, v))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// One value as a Python object.
pub fn to_py<'py>(py: Python<'py>, v: &PyValue) -> PyResult<Bound<'py, PyAny>> {
    let all = |v: &[PyValue]| v.iter().map(|x| to_py(py, x)).collect::<PyResult<Vec<_>>>();
    Ok(match v {
        PyValue::None => py.None().into_bound(py),
        PyValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        PyValue::Int(i) => i.into_pyobject(py)?.into_any(),
        // Digits the pickle reader checked: `int(str)` makes them a Python int.
        PyValue::BigInt(digits) => py
            .get_type::<pyo3::types::PyInt>()
            .call1((digits.as_str(),))?,
        PyValue::Float(f) => f.into_pyobject(py)?.into_any(),
        PyValue::Complex(re, im) => PyComplex::from_doubles(py, *re, *im).into_any(),
        PyValue::Str(s) => s.into_pyobject(py)?.into_any(),
        PyValue::Bytes(b) => PyBytes::new(py, b).into_any(),
        PyValue::List(v) => PyList::new(py, all(v)?)?.into_any(),
        PyValue::Tuple(v) => PyTuple::new(py, all(v)?)?.into_any(),
        PyValue::Set(v) => PySet::new(py, all(v)?)?.into_any(),
        PyValue::Dict(pairs) => {
            let d = PyDict::new(py);
            for (k, x) in pairs {
                d.set_item(to_py(py, k)?, to_py(py, x)?)?;
            }
            d.into_any()
        }
        // A record element (of a record dtype with object fields): its fields in order, as
        // the tuple NumPy assigns to a structured element.
        PyValue::Record(fields) => PyTuple::new(
            py,
            fields
                .iter()
                .map(|(_, x)| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        PyValue::Scalar(x) => build(py)?.getattr("scalar")?.call1(scalar(py, x)?)?,
        // A NumPy scalar of its own dtype (`np.float32(1.5)` stays a float32).
        PyValue::NumpyScalar { descr, value } => build(py)?
            .getattr("typed_scalar")?
            .call1((descr.as_str(), element(py, value)?))?,
        PyValue::Array(a) => array(py, a)?,
        PyValue::DateTime(d) => {
            let t = &d.time;
            build(py)?.getattr("datetime")?.call1((
                d.date.year,
                d.date.month,
                d.date.day,
                t.hour,
                t.minute,
                t.second,
                t.microsecond,
                t.fold,
                tzinfo(py, t)?,
            ))?
        }
        PyValue::Date(d) => build(py)?
            .getattr("date")?
            .call1((d.year, d.month, d.day))?,
        PyValue::Time(t) => build(py)?.getattr("time")?.call1((
            t.hour,
            t.minute,
            t.second,
            t.microsecond,
            t.fold,
            tzinfo(py, t)?,
        ))?,
        PyValue::TimeDelta(d) => timedelta(py, d)?,
        PyValue::TimeZone(tz) => timezone(py, tz)?,
        PyValue::Decimal(text) => build(py)?.getattr("decimal")?.call1((text.as_str(),))?,
        PyValue::Global { module, name } => {
            return Err(value_error(format!(
                "an element is the Python class or function {module}.{name}, named in the \
                 pickle: it is never imported (np.load(allow_pickle=True) would import it)"
            )));
        }
    })
}

/// `datetime.timedelta(days, seconds, microseconds)`.
fn timedelta<'py>(py: Python<'py>, d: &PyTimeDelta) -> PyResult<Bound<'py, PyAny>> {
    build(py)?
        .getattr("timedelta")?
        .call1((d.days, d.seconds, d.microseconds))
}

/// `datetime.timezone(offset[, name])` (`timezone.utc` for the offset 0 without a name).
fn timezone<'py>(py: Python<'py>, tz: &PyTimeZone) -> PyResult<Bound<'py, PyAny>> {
    build(py)?
        .getattr("timezone")?
        .call1((timedelta(py, &tz.offset)?, tz.name.as_deref()))
}

/// A time's `tzinfo`: `None` or its `datetime.timezone`.
fn tzinfo<'py>(py: Python<'py>, t: &PyTime) -> PyResult<Bound<'py, PyAny>> {
    match &t.tzinfo {
        Some(tz) => timezone(py, tz),
        None => Ok(py.None().into_bound(py)),
    }
}

/// A NumPy scalar as `(kind, value)` for `npy_serde._build.scalar`: the pickle keeps its
/// value, not its dtype, so the kind picks NumPy's 64-bit type of that kind.
fn scalar<'py>(py: Python<'py>, x: &Value) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    Ok(match x {
        Value::Bool(b) => ("bool", b.into_pyobject(py)?.to_owned().into_any()),
        Value::Int(i) => ("int", i.into_pyobject(py)?.into_any()),
        Value::UInt(u) => ("uint", u.into_pyobject(py)?.into_any()),
        Value::Float(f) => ("float", f.into_pyobject(py)?.into_any()),
        Value::Complex(re, im) => ("complex", PyComplex::from_doubles(py, *re, *im).into_any()),
        Value::String(s) => ("str", s.into_pyobject(py)?.into_any()),
        Value::Bytes(b) => ("bytes", PyBytes::new(py, b).into_any()),
        Value::Void(b) => ("void", PyBytes::new(py, b).into_any()),
        Value::DateTime(t) | Value::TimeDelta(t) => ("int", t.into_pyobject(py)?.into_any()),
        other => ("object", element(py, other)?),
    })
}

/// An element of a typed array, as the plain value `numpy.array(.., dtype)` takes for it.
fn element<'py>(py: Python<'py>, x: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match x {
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) | Value::DateTime(i) | Value::TimeDelta(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Complex(re, im) => PyComplex::from_doubles(py, *re, *im).into_any(),
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Bytes(b) | Value::Void(b) => PyBytes::new(py, b).into_any(),
        Value::List(v) => PyList::new(
            py,
            v.iter()
                .map(|e| element(py, e))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        Value::Record(fields) => PyTuple::new(
            py,
            fields
                .iter()
                .map(|(_, e)| element(py, e))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
    })
}

/// A NumPy array inside an object array: its values in C order, built by
/// `npy_serde._build.array(descr, shape, values)` with NumPy's own dtype of the descr.
fn array<'py>(py: Python<'py>, a: &PyArray) -> PyResult<Bound<'py, PyAny>> {
    let values = a
        .values
        .iter()
        .map(|v| match v {
            PyValue::Scalar(x) => element(py, x),
            other => to_py(py, other),
        })
        .collect::<PyResult<Vec<_>>>()?;
    build(py)?.getattr("array")?.call1((
        a.descr.as_str(),
        PyTuple::new(py, &a.shape)?,
        PyList::new(py, values)?,
    ))
}
