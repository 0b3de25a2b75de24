//! The native module of the `npy_serde` Python package (`npy_serde._native`): the crate's
//! header parser, limits, data-only pickle reader and `.npz` reader behind the package's
//! `load`, `save`, `savez` and `NpzFile` (`python/npy_serde/__init__.py`). Typed arrays are built
//! here as `np.load` builds them (`array.rs`), object arrays by the package from their values.
//!
//! | file | owns |
//! |---|---|
//! | `array.rs` | the NumPy array over the bytes read: `PyArray_NewFromDescr`, its memory the base |
//! | `arrow.rs` | `scan`: files as Arrow record batches through the PyCapsule interface |
//! | `convert.rs` | `convert`: tables from one format to another (`.npy`, `.npz`, column tables, Parquet, Arrow IPC) |
//! | `filter.rs` | `scan_npy`'s filter: a Polars predicate's column-literal conjuncts, evaluated on each batch |
//! | `errors.rs` | the crate's errors as `npy_serde.errors` exceptions; panics kept out of Python |
//! | `interrupt.rs` | Ctrl-C: work on a worker thread, signals polled by the caller |
//! | `reader.rs` | a Python file object as a `Read` |
//! | `load.rs` | one `.npy` array: header, data buffer, memory-map offset, object values |
//! | `objects.rs` | an object array's values as Python objects, from an allow-list |
//! | `remote.rs` | `s3://` and `http(s)://` URLs through npy-remote (feature `remote`) |
//! | `npz.rs` | `.npz` archives: members by key, CRC-checked, stored ones mapped in place |
//! | `sql.rs` | `sql`: queries over table specs on DataFusion (feature `sql`) |
//! | `save.rs` | headers as `numpy.save` writes them; archives written by the crate |

mod array;
mod arrow;
mod convert;
mod errors;
mod filter;
mod interrupt;
mod load;
mod npz;
mod objects;
mod reader;
mod remote;
mod save;
#[cfg(feature = "sql")]
mod sql;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::guard;
use crate::load::Options;
use crate::reader::PyFileReader;

/// `load` of the `.npy` file at `path` (the package's `load` dispatches archives to `NpzFile`).
#[pyfunction]
#[pyo3(signature = (path, mmap, allow_pickle_data, encoding, max_header_size))]
fn read_npy_path<'py>(
    py: Python<'py>,
    path: &str,
    mmap: bool,
    allow_pickle_data: bool,
    encoding: &str,
    max_header_size: u64,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let o = Options::new(allow_pickle_data, encoding, max_header_size)?;
        load::from_path(py, path, mmap, &o)
    })
}

/// `load` of a `.npy` held in `data` (bytes-like).
#[pyfunction]
#[pyo3(signature = (data, allow_pickle_data, encoding, max_header_size))]
fn read_npy_bytes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    allow_pickle_data: bool,
    encoding: &str,
    max_header_size: u64,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let o = Options::new(allow_pickle_data, encoding, max_header_size)?;
        let mut r = data.as_bytes();
        load::from_reader(py, &mut r, &o)
    })
}

/// `load` of a `.npy` read from a binary file object, left right after the array.
#[pyfunction]
#[pyo3(signature = (file, allow_pickle_data, encoding, max_header_size))]
fn read_npy_file<'py>(
    py: Python<'py>,
    file: Bound<'py, PyAny>,
    allow_pickle_data: bool,
    encoding: &str,
    max_header_size: u64,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let o = Options::new(allow_pickle_data, encoding, max_header_size)?;
        let mut r = PyFileReader::new(file);
        load::from_reader(py, &mut r, &o)
    })
}

/// `load_many`: the `.npy` files at `paths` read on `threads` threads (all cores by default)
/// without the GIL, in order.
#[pyfunction]
#[pyo3(signature = (paths, threads, allow_pickle_data, encoding, max_header_size))]
fn read_npy_many<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    threads: Option<usize>,
    allow_pickle_data: bool,
    encoding: &str,
    max_header_size: u64,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    guard(|| {
        let o = Options::new(allow_pickle_data, encoding, max_header_size)?;
        load::many(py, &paths, threads, &o)
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_npy_path, m)?)?;
    m.add_function(wrap_pyfunction!(read_npy_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(read_npy_file, m)?)?;
    m.add_function(wrap_pyfunction!(read_npy_many, m)?)?;
    m.add_function(wrap_pyfunction!(remote::read_npy_url, m)?)?;
    m.add_function(wrap_pyfunction!(save::npy_header, m)?)?;
    m.add_function(wrap_pyfunction!(save::write_npz, m)?)?;
    m.add_function(wrap_pyfunction!(save::strings_npy, m)?)?;
    m.add_function(wrap_pyfunction!(save::objects_npy, m)?)?;
    m.add_function(wrap_pyfunction!(convert::convert, m)?)?;
    m.add_class::<npz::Npz>()?;
    m.add_class::<array::ArrayMemory>()?;
    m.add_class::<arrow::Scan>()?;
    m.add_class::<arrow::Batches>()?;
    m.add_class::<arrow::OneBatch>()?;
    #[cfg(feature = "sql")]
    m.add_class::<sql::Query>()?;
    Ok(())
}
