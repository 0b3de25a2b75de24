//! The crate's errors as Python exceptions of `npy_serde.errors`: `NpyValueError` (a subclass of
//! `NpyError` and `ValueError`, what NumPy raises for a malformed file) for what is wrong with
//! the data, `NpyOSError` (also an `OSError`) for what the system refused. The message is the
//! crate's own, with its position (byte offset, record, field path).
//!
//! A Rust panic never crosses into Python: [`guard`] turns one into an `NpyError` naming it as
//! an internal error.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The exception classes, imported once from `npy_serde.errors` (defined in Python, where a
/// class can subclass both `NpyError` and `ValueError` / `OSError`).
static CLASSES: PyOnceLock<[Py<PyType>; 3]> = PyOnceLock::new();

fn class(py: Python<'_>, which: usize) -> PyResult<Bound<'_, PyType>> {
    let classes = CLASSES.get_or_try_init(py, || -> PyResult<_> {
        let m = py.import("npy_serde.errors")?;
        let get = |name: &str| -> PyResult<Py<PyType>> {
            Ok(m.getattr(name)?.cast_into::<PyType>()?.unbind())
        };
        Ok([get("NpyError")?, get("NpyValueError")?, get("NpyOSError")?])
    })?;
    Ok(classes[which].bind(py).clone())
}

/// `e` as the exception Python sees.
pub fn to_py(e: npy_serde::Error) -> PyErr {
    raise(&e, e.to_string())
}

/// `e` as the exception Python sees, its message naming the file it is about.
pub fn to_py_in(e: npy_serde::Error, file: &str) -> PyErr {
    raise(&e, format!("{file}: {e}"))
}

fn raise(e: &npy_serde::Error, msg: String) -> PyErr {
    Python::attach(|py| {
        let which = match e.kind() {
            npy_serde::ErrorKind::Io(_) | npy_serde::ErrorKind::Remote { .. } => 2,
            _ => 1,
        };
        match class(py, which) {
            Ok(cls) => PyErr::from_type(cls, msg),
            Err(import_failed) => import_failed,
        }
    })
}

/// An `NpyValueError` with `msg`.
pub fn value_error(msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match class(py, 1) {
        Ok(cls) => PyErr::from_type(cls, msg),
        Err(e) => e,
    })
}

/// Runs `f`; a panic becomes an `NpyError` ("internal error: ..."), never a `PanicException`.
pub fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            let msg = format!("internal error in npy_serde (please report it): {what}");
            Err(Python::attach(|py| match class(py, 0) {
                Ok(cls) => PyErr::from_type(cls, msg),
                Err(e) => e,
            }))
        }
    }
}

/// `npy_serde::Result` into `PyResult`.
pub trait IntoPy<T> {
    /// The error as its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for npy_serde::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
