//! `.npz` archives for the package's `NpzFile`: the central directory read once, members read
//! by key when asked (each CRC-checked as it is read), and a stored member's data offset in the
//! file, for `np.memmap` to map it in place (what `np.load` ignores `mmap_mode` for).

use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use npy_serde::header::Contents;
use npy_serde::npz::{MemberInfo, NpzArchive};
use npy_serde::{Limits, MmapNpz, NpzReaderBuilder};

use crate::array::literal_to_py;
use crate::errors::{guard, value_error, IntoPy};
use crate::load::{descr_of, to_loaded, Head, Options, Raw};

/// What an archive is read from.
trait Source: Read + Seek + Send {}
impl<T: Read + Seek + Send> Source for T {}

/// Reads the member `info` whole, its CRC checked (no Python object touched).
fn read_member(
    archive: &mut NpzArchive<Box<dyn Source>>,
    info: &MemberInfo,
    limits: &Limits,
) -> npy_serde::Result<Raw> {
    let mut m = archive.by_index(info.index)?;
    if !info.name.ends_with(".npy") {
        return m.read_raw().map(Raw::Bytes);
    }
    let contents = m.contents()?.clone();
    let head = m.header_bytes().unwrap_or_default().to_vec();
    match contents {
        Contents::Objects(h) => Ok(Raw::Objects(h, m.read_raw()?)),
        contents => {
            let (p, descr) = Head {
                contents,
                descr: descr_of(&head, limits)?,
            }
            .typed()?;
            // The data, CRC-checked: no reservation from the declared size.
            let data = m.read_raw()?;
            if data.len() as u64 != p.header.data_len()? {
                return Err(npy_serde::Error::invalid_value(format!(
                    "member {}: the data is not the size the header declares",
                    info.name
                )));
            }
            Ok(Raw::Typed(
                descr,
                p.header.shape,
                p.header.fortran_order,
                data,
            ))
        }
    }
}

/// An opened archive.
#[pyclass(unsendable, module = "npy_serde._native")]
pub struct Npz {
    archive: NpzArchive<Box<dyn Source>>,
    path: Option<String>,
    max_header_size: u64,
}

#[pymethods]
impl Npz {
    /// Opens the archive at `path` (a `str`), held in `data` (`bytes`), or (feature
    /// `remote`) behind `url` (read by ranged GETs: the directory, then each member asked for).
    #[new]
    #[pyo3(signature = (path, data, max_header_size, url=None))]
    fn new(
        py: Python<'_>,
        path: Option<String>,
        data: Option<&Bound<'_, PyBytes>>,
        max_header_size: u64,
        url: Option<String>,
    ) -> PyResult<Npz> {
        guard(|| {
            if let Some(url) = &url {
                let source: Box<dyn Source> =
                    Box::new(py.detach(|| crate::remote::open(url)).py()?);
                let archive = py
                    .detach(|| {
                        NpzReaderBuilder::new()
                            .max_header_size(max_header_size)
                            .max_member_size(u64::MAX)
                            .from_reader(source)
                    })
                    .py()?;
                return Ok(Npz {
                    archive,
                    path: None,
                    max_header_size,
                });
            }
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

    /// The member `key` read whole (CRC-checked), the GIL released: what `load` gives for a
    /// `.npy`, or `("raw", bytes)` for a member that is not one (NumPy returns its bytes).
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
            let limits = o.limits();
            let archive = &mut self.archive;
            let raw =
                crate::interrupt::interruptible(py, |_| read_member(archive, &info, &limits))?;
            to_loaded(py, raw, &o)
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
            let descr = descr_of(bytes, &limits)
                .py()?
                .ok_or_else(|| value_error("the header has no descr"))?;
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
