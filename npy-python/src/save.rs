//! What `save`, `savez` and `savez_compressed` need from the crate: the header `numpy.save`
//! writes for a dtype (given as `numpy.lib.format.dtype_to_descr` spells it), shape and order,
//! byte for byte; archives of `.npy` members written by the crate's zip writer (stored, or
//! deflated); and object arrays of strings through the crate's pickle writer.

use std::io::{Cursor, Write};

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use npy_serde::npz::NpzWriter;
use npy_serde::pickle::PyValue;
use npy_serde::{AlignedWriter, DType, Header, StagedFile};

use crate::errors::{guard, to_py, value_error, IntoPy};

/// The `.npy` header of an array of dtype `descr` (a Python literal), `shape` and order,
/// as `numpy.save` writes it (format version 1.0, or the first that can hold it).
#[pyfunction]
pub fn npy_header<'py>(
    py: Python<'py>,
    descr: &str,
    shape: Vec<u64>,
    fortran_order: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    guard(|| {
        let dtype = DType::from_descr(descr).py()?;
        let header = Header {
            dtype,
            shape,
            fortran_order,
        };
        Ok(PyBytes::new(py, &header.to_bytes().py()?))
    })
}

/// The `.npy` bytes of a 1-D object array of `str` / `None` (`stringdtype`: NumPy 2's
/// `StringDType`, with `na_object=None` if `na`), through the crate's pickle writer.
#[pyfunction]
pub fn strings_npy<'py>(
    py: Python<'py>,
    values: Vec<Option<String>>,
    stringdtype: bool,
    na: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    guard(|| {
        let it = values.iter().map(|v| v.as_deref());
        let bytes = if stringdtype {
            npy_serde::pickle::strings_to_vec_stringdtype(it, na).py()?
        } else {
            npy_serde::pickle::strings_to_vec(it)
        };
        Ok(PyBytes::new(py, &bytes))
    })
}

/// The `.npy` bytes of an object array of `shape` whose elements, in C order, are `values`:
/// `str`, `bytes`, `int`, `float`, `complex`, `bool`, `None`, and `list`s, `tuple`s and `dict`s
/// of them (exactly those types: a subclass, a NumPy scalar say, would come back as its base
/// type, so it is refused), through the crate's pickle writer.
#[pyfunction]
pub fn objects_npy<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
    shape: Vec<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    guard(|| {
        let values = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                to_value(v, 0).map_err(|e| {
                    let e = e.value(py).to_string();
                    value_error(format!("saving an object array: element {i}: {e}"))
                })
            })
            .collect::<PyResult<Vec<PyValue>>>()?;
        let bytes = npy_serde::pickle::objects_to_vec(&values, &shape).py()?;
        Ok(PyBytes::new(py, &bytes))
    })
}

/// `v` as the pickle writer's value, if it is one of the plain types.
fn to_value(v: &Bound<'_, PyAny>, depth: usize) -> PyResult<PyValue> {
    use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
    let deeper = |items: &mut dyn Iterator<Item = Bound<'_, PyAny>>| {
        if depth >= npy_serde::pickle::MAX_WRITE_DEPTH {
            return Err(value_error(format!(
                "lists, tuples and dicts nested more than {} deep",
                npy_serde::pickle::MAX_WRITE_DEPTH
            )));
        }
        items
            .map(|x| to_value(&x, depth + 1))
            .collect::<PyResult<Vec<_>>>()
    };
    Ok(if v.is_none() {
        PyValue::None
    } else if v.is_exact_instance_of::<PyBool>() {
        PyValue::Bool(v.is_truthy()?)
    } else if v.is_exact_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(n) => PyValue::Int(n),
            Err(_) => PyValue::BigInt(v.str()?.to_string()),
        }
    } else if v.is_exact_instance_of::<PyFloat>() {
        PyValue::Float(v.extract()?)
    } else if let Ok(c) = v.cast_exact::<PyComplex>() {
        PyValue::Complex(c.real(), c.imag())
    } else if let Ok(s) = v.cast_exact::<PyString>() {
        PyValue::Str(s.to_str()?.to_owned())
    } else if let Ok(b) = v.cast_exact::<PyBytes>() {
        PyValue::Bytes(b.as_bytes().to_vec())
    } else if let Ok(l) = v.cast_exact::<PyList>() {
        PyValue::List(deeper(&mut l.iter())?)
    } else if let Ok(t) = v.cast_exact::<PyTuple>() {
        PyValue::Tuple(deeper(&mut t.iter())?)
    } else if let Ok(d) = v.cast_exact::<PyDict>() {
        let flat: Vec<Bound<'_, PyAny>> = d.iter().flat_map(|(k, v)| [k, v]).collect();
        let flat = deeper(&mut flat.into_iter())?;
        let mut pairs = Vec::with_capacity(flat.len() / 2);
        let mut it = flat.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            pairs.push((k, v));
        }
        PyValue::Dict(pairs)
    } else {
        let t = v.get_type();
        return Err(value_error(format!(
            "a {t}: this writer takes str, bytes, int, float, complex, bool, None, and lists, \
             tuples and dicts of them (np.save pickles any object, for \
             np.load(allow_pickle=True) to read)"
        )));
    })
}

/// One member: its name in the archive (`key.npy`), then its `.npy` header and data.
type Member<'py> = (String, Bound<'py, PyBytes>, PyReadonlyArray1<'py, u8>);

fn write_members<W: Write + std::io::Seek>(
    w: W,
    members: &[Member<'_>],
    compressed: bool,
) -> npy_serde::Result<W> {
    let mut z = if compressed {
        NpzWriter::new_compressed(w)
    } else {
        NpzWriter::new(w)
    };
    for (name, header, data) in members {
        let data = data
            .as_slice()
            .map_err(|e| npy_serde::Error::invalid_value(format!("member {name}: {e}")))?;
        if compressed {
            // Queued: deflated on all cores (pigz-style chunks), several members at once.
            z.add_raw_parts(name, &[header.as_bytes(), data])?;
        } else {
            let mut m = z.start_raw(name)?;
            m.write_all(header.as_bytes())?;
            m.write_all(data)?;
        }
    }
    z.finish()
}

/// Writes an `.npz` archive of `members` to the file at `path`, or returns its bytes (for a
/// file object) when `path` is `None`.
#[pyfunction]
#[pyo3(signature = (path, members, compressed))]
pub fn write_npz<'py>(
    py: Python<'py>,
    path: Option<&str>,
    members: Vec<Member<'py>>,
    compressed: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    guard(|| {
        let mut seen = std::collections::HashSet::new();
        for (name, _, _) in &members {
            if !seen.insert(name.as_str()) {
                return Err(value_error(format!("two arrays would be stored as {name}")));
            }
        }
        match path {
            Some(p) => {
                // Under a temporary name, renamed over `p` when complete.
                let f = StagedFile::create(p).map_err(|e| to_py(e.into()))?;
                let w = write_members(AlignedWriter::new(f), &members, compressed).py()?;
                let f = w.into_inner().map_err(|e| to_py(e.into()))?;
                f.commit().map_err(|e| to_py(e.into()))?;
                Ok(None)
            }
            None => {
                let c = write_members(Cursor::new(Vec::new()), &members, compressed).py()?;
                Ok(Some(PyBytes::new(py, &c.into_inner())))
            }
        }
    })
}
