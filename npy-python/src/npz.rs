//! `.npz` archives for the package's `NpzFile`: the central directory read once, members read
//! by key when asked (each CRC-checked as it is read), and a stored member's data offset in the
//! file, for `np.memmap` to map it in place (what `np.load` ignores `mmap_mode` for).

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use npy_serde::header::{header_literal, Contents};
use npy_serde::npz::NpzArchive;
use npy_serde::{MmapNpz, NpzReaderBuilder};

use crate::errors::{guard, value_error, IntoPy};
use crate::load::{literal_to_py, Options};

/// What an archive is read from.
trait Source: Read + Seek {}
impl<T: Read + Seek> Source for T {}

/// An opened archive.
#[pyclass(unsendable, module = "npy_serde._native")]
pub struct Npz {
    archive: NpzArchive<Box<dyn Source>>,
    path: Option<String>,
    max_header_size: u64,
}

#[pymethods]
impl Npz {
    /// Opens the archive at `path` (a `str`) or held in `data` (`bytes`).
    #[new]
    #[pyo3(signature = (path, data, max_header_size))]
    fn new(
        path: Option<String>,
        data: Option<&Bound<'_, PyBytes>>,
        max_header_size: u64,
    ) -> PyResult<Npz> {
        guard(|| {
            let source: Box<dyn Source> = match (&path, data) {
                (Some(p), _) => Box::new(BufReader::new(
                    File::open(p).map_err(|e| crate::errors::to_py(e.into()))?,
                )),
                (None, Some(d)) => Box::new(Cursor::new(d.as_bytes().to_vec())),
                (None, None) => return Err(value_error("an archive needs a path or bytes")),
            };
            let archive = NpzReaderBuilder::new()
                .max_header_size(max_header_size)
                .max_member_size(u64::MAX)
                .from_reader(source)
                .py()?;
            Ok(Npz {
                archive,
                path,
                max_header_size,
            })
        })
    }

    /// The members' keys (names without `.npy`), in archive order.
    fn keys(&self) -> Vec<String> {
        self.archive.keys().map(str::to_string).collect()
    }

    /// The member `key` read whole (CRC-checked): what `load` gives for a `.npy`, or
    /// `("raw", bytes)` for a member that is not one (NumPy returns its bytes).
    #[pyo3(signature = (key, allow_pickle_data, encoding))]
    fn read<'py>(
        &mut self,
        py: Python<'py>,
        key: &str,
        allow_pickle_data: bool,
        encoding: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let o = Options::new(allow_pickle_data, encoding, self.max_header_size)?;
            let info = self
                .archive
                .member(key)
                .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))?
                .clone();
            if !info.name.ends_with(".npy") {
                let bytes = self.archive.by_index(info.index).py()?.read_raw().py()?;
                return Ok(("raw", PyBytes::new(py, &bytes))
                    .into_pyobject(py)?
                    .into_any());
            }
            let mut m = self.archive.by_index(info.index).py()?;
            let contents = m.contents().py()?.clone();
            let head = m.header_bytes().unwrap_or_default().to_vec();
            match contents {
                Contents::Objects(h) => {
                    let pickle = m.read_raw().py()?;
                    crate::load::objects_of(py, &h, &pickle, &o)
                }
                other => {
                    let p = other.typed().py()?;
                    let descr = header_literal(&head, &o.limits()).py()?;
                    let descr = descr
                        .get("descr")
                        .ok_or_else(|| value_error("the header has no descr"))?
                        .clone();
                    // The data, CRC-checked: no reservation from the declared size.
                    let data = m.read_raw().py()?;
                    if (data.len() as u64) != p.header.data_len().py()? {
                        return Err(value_error(format!(
                            "member {key}: the data is not the size the header declares"
                        )));
                    }
                    crate::load::typed_of(py, &descr, &p.header.shape, p.header.fortran_order, data)
                }
            }
        })
    }

    /// `("mapped", descr, shape, fortran_order, offset)` for a stored member whose data can be
    /// mapped in place from the archive's file (offset: of its first data byte in the file),
    /// or `None` (a compressed member, an archive held in memory, an object array).
    fn mapped<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(|| {
            let Some(path) = &self.path else {
                return Ok(None);
            };
            let options = NpzReaderBuilder::new().max_header_size(self.max_header_size);
            let mapped = MmapNpz::open_with(path, &options).py()?;
            let Ok(array) = mapped.array(key) else {
                return Ok(None);
            };
            let bytes = mapped.stored_bytes(key).py()?;
            let limits = npy_serde::Limits {
                max_header_size: self.max_header_size,
                ..npy_serde::Limits::default()
            };
            let descr = header_literal(bytes, &limits).py()?;
            let descr = descr
                .get("descr")
                .ok_or_else(|| value_error("the header has no descr"))?
                .clone();
            let h = array.header();
            Ok(Some(
                (
                    "mapped",
                    literal_to_py(py, &descr)?,
                    pyo3::types::PyTuple::new(py, &h.shape)?,
                    h.fortran_order,
                    array.data_offset_in_file(),
                )
                    .into_pyobject(py)?
                    .into_any(),
            ))
        })
    }
}
