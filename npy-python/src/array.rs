//! The NumPy array `load` returns, built over the bytes the crate read (no copy): a dtype from
//! the header's descr (`numpy.lib.format.descr_to_dtype`, as `np.load` builds it), then
//! `PyArray_NewFromDescr` over the buffer with C or Fortran strides, writeable, its base an
//! [`ArrayMemory`] that owns the buffer. rust-numpy's safe constructors take only plain element
//! types; record, big-endian, datetime and string dtypes need the descr-based call.

use std::ffi::c_int;
use std::ptr;

use numpy::npyffi::{self, npy_intp, NpyTypes, NPY_ARRAY_F_CONTIGUOUS, NPY_ARRAY_WRITEABLE};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PY_ARRAY_API};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};

use npy_serde::header::Literal;

use crate::errors::value_error;

/// The memory of an array `load` built: the bytes read from the file, the array's base object.
/// The array views them (from the data offset on); they are freed with the last array or view
/// of them, as NumPy frees an array's own memory.
#[pyclass(frozen, module = "npy_serde._native")]
pub struct ArrayMemory {
    // Never read or written through the Vec once the array exists: NumPy writes through the
    // pointer taken before the Vec moved here (a Vec's heap buffer does not move with it).
    bytes: Vec<u8>,
}

#[pymethods]
impl ArrayMemory {
    fn __repr__(&self) -> String {
        format!("<npy_serde memory of {} bytes>", self.bytes.len())
    }
}

/// The dtype `np.load` builds from `descr`: `numpy.lib.format.descr_to_dtype`'s.
pub fn dtype_of<'py>(py: Python<'py>, descr: &Literal) -> PyResult<Bound<'py, PyArrayDescr>> {
    static DESCR_TO_DTYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let f = DESCR_TO_DTYPE.import(py, "numpy.lib.format", "descr_to_dtype")?;
    let dtype = f.call1((literal_to_py(py, descr)?,))?;
    Ok(dtype.cast_into::<PyArrayDescr>()?)
}

/// Dtypes by descr, for many files of few descrs (`load_many`).
#[derive(Default)]
pub struct Dtypes<'py> {
    seen: Vec<(Literal, Bound<'py, PyArrayDescr>)>,
}

/// Distinct descrs kept by [`Dtypes`]; others are built for each file.
const DTYPES: usize = 64;

impl<'py> Dtypes<'py> {
    /// The dtype of `descr`, for one array. A dtype with fields is a fresh copy for each array
    /// (`PyArray_DescrNew`): its `names` can be set, which must not rename another array's
    /// fields. Others are immutable and shared, as NumPy shares its builtin dtypes.
    pub fn get(&mut self, py: Python<'py>, descr: &Literal) -> PyResult<Bound<'py, PyArrayDescr>> {
        let dtype = match self.seen.iter().find(|(d, _)| d == descr) {
            Some((_, dtype)) => dtype.clone(),
            None => {
                let dtype = dtype_of(py, descr)?;
                if self.seen.len() < DTYPES {
                    self.seen.push((descr.clone(), dtype.clone()));
                }
                return Ok(dtype);
            }
        };
        if !dtype.has_fields() {
            return Ok(dtype);
        }
        // SAFETY: `dtype` is a valid descr, kept alive by the borrow for the call; the call
        // returns a new reference (or NULL with a Python error set, turned into `Err`).
        unsafe {
            let copy = PY_ARRAY_API.PyArray_DescrNew(py, dtype.as_dtype_ptr());
            Ok(Bound::from_owned_ptr_or_err(py, copy.cast())?.cast_into_unchecked())
        }
    }
}

/// The array of `dtype` and `shape` (`fortran`: column-major) whose data is
/// `bytes[offset..]`, which it then owns (through an [`ArrayMemory`] base), as `np.load`
/// returns it: writeable, C- or F-contiguous, aligned.
pub fn array_of<'py>(
    py: Python<'py>,
    dtype: Bound<'py, PyArrayDescr>,
    shape: &[u64],
    fortran: bool,
    mut bytes: Vec<u8>,
    mut offset: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let count = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| value_error("the shape's element count overflows"))?;
    // A subarray descr such as `('<f4', (3,))`: NumPy's constructors fold the subarray into the
    // shape, and `np.load` then fails to give the array the header's shape, unless it is empty,
    // where it keeps the subarray's base dtype and the header's shape.
    let dtype = match dtype.has_subarray() {
        false => dtype,
        true if count == 0 => dtype.base(),
        true => {
            return Err(value_error(format!(
                "the descr is a subarray type ({}): np.load cannot give its {count} elements \
                 the header's shape {shape:?} either",
                dtype.str()?
            )));
        }
    };
    let dims = shape
        .iter()
        .map(|&d| npy_intp::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| value_error("the array is too large for this machine"))?;
    let nd = c_int::try_from(dims.len()).map_err(|_| value_error("too many dimensions"))?;
    let itemsize = dtype.itemsize();
    let nbytes = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(itemsize))
        .ok_or_else(|| value_error("the array is too large for this machine"))?;
    // SAFETY: the type object is NumPy's `ndarray`, read from its C API table (imported by
    // rust-numpy on first use; an import failure panics there, caught by `guard`).
    let subtype = unsafe { npyffi::get_type_object(py, NpyTypes::PyArray_Type) };
    if nbytes == 0 {
        // No data (an empty array, or a zero-size dtype): NumPy allocates what it needs, as
        // `np.load` leaves it to `np.ndarray`.
        let flags = if fortran { NPY_ARRAY_F_CONTIGUOUS } else { 0 };
        let mut dims = dims;
        // SAFETY: `dtype.into_dtype_ptr()` is a new reference, which the call steals; `dims`
        // holds `nd` dimensions and outlives the call (NumPy copies them); NULL strides and
        // data make NumPy compute the strides and allocate the memory. A NULL result is an
        // error set by NumPy, turned into `Err`.
        return unsafe {
            let array = PY_ARRAY_API.PyArray_NewFromDescr(
                py,
                subtype,
                dtype.into_dtype_ptr(),
                nd,
                dims.as_mut_ptr(),
                ptr::null_mut(),
                ptr::null_mut(),
                flags,
                ptr::null_mut(),
            );
            Bound::from_owned_ptr_or_err(py, array)
        };
    }
    if bytes
        .len()
        .checked_sub(offset)
        .is_none_or(|have| have < nbytes)
    {
        return Err(value_error(format!(
            "internal error: {} bytes of data for a dtype of {itemsize} bytes and shape {shape:?}",
            bytes.len().saturating_sub(offset)
        )));
    }
    // The data where a file's header left it: moved to a fresh allocation (malloc's, 16-byte
    // aligned) when it is not 16-byte aligned, so NumPy sees it aligned as np.load's own arrays.
    if !(bytes.as_ptr() as usize + offset).is_multiple_of(16) {
        bytes = bytes[offset..offset + nbytes].to_vec();
        offset = 0;
    }
    let mut strides = vec![0 as npy_intp; dims.len()];
    let mut step = itemsize as npy_intp;
    // Every dimension is nonzero here (`nbytes > 0`) and the product of all of them times the
    // item size fits in memory, so no partial product overflows.
    if fortran {
        for (s, &d) in strides.iter_mut().zip(&dims) {
            *s = step;
            step *= d;
        }
    } else {
        for (s, &d) in strides.iter_mut().zip(&dims).rev() {
            *s = step;
            step *= d;
        }
    }
    // SAFETY: `offset + nbytes <= bytes.len()` (checked above), so the pointer and the
    // `nbytes` after it lie in the Vec's buffer, which stays where it is when the Vec moves
    // into the `ArrayMemory` below.
    let data = unsafe { bytes.as_mut_ptr().add(offset) };
    let memory = Bound::new(py, ArrayMemory { bytes })?;
    let mut dims = dims;
    // SAFETY: `dtype.into_dtype_ptr()` is a new reference, stolen by the call. `dims` and
    // `strides` hold `nd` values each and outlive the call (NumPy copies them). The strides
    // are the C or Fortran ones of `dims` with the dtype's item size, so every element NumPy
    // addresses lies in the `nbytes` at `data`, which `memory` owns and keeps alive: it
    // becomes the array's base (`PyArray_SetBaseObject` steals the reference `into_ptr`
    // gives, also when it fails, which then leaves the array to be dropped here without
    // freeing the memory, not its own). NULL or -1 results are errors set by NumPy, turned
    // into `Err`.
    unsafe {
        let array = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            dtype.into_dtype_ptr(),
            nd,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data.cast(),
            NPY_ARRAY_WRITEABLE,
            ptr::null_mut(),
        );
        let array = Bound::from_owned_ptr_or_err(py, array)?;
        if PY_ARRAY_API.PyArray_SetBaseObject(py, array.as_ptr().cast(), memory.into_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(array)
    }
}

/// Header literals (a tuple's or a list's items) as Python objects.
fn literals_to_py<'py>(py: Python<'py>, v: &[Literal]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    v.iter().map(|x| literal_to_py(py, x)).collect()
}

/// A header literal as the Python object it spells.
pub fn literal_to_py<'py>(py: Python<'py>, l: &Literal) -> PyResult<Bound<'py, PyAny>> {
    Ok(match l {
        Literal::Str(s) => s.into_pyobject(py)?.into_any(),
        Literal::Int(i) => i.into_pyobject(py)?.into_any(),
        Literal::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Literal::None => py.None().into_bound(py),
        Literal::Tuple(v) => PyTuple::new(py, literals_to_py(py, v)?)?.into_any(),
        Literal::List(v) => PyList::new(py, literals_to_py(py, v)?)?.into_any(),
        Literal::Dict(pairs) => {
            let d = pyo3::types::PyDict::new(py);
            for (k, v) in pairs {
                d.set_item(literal_to_py(py, k)?, literal_to_py(py, v)?)?;
            }
            d.into_any()
        }
        // `Literal` may grow: nothing a header holds today is left.
        #[allow(unreachable_patterns)]
        other => {
            return Err(value_error(format!(
                "an unexpected literal in the header: {other:?}"
            )))
        }
    })
}
