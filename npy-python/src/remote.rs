//! `load` of object-store URLs (`s3://bucket/key`, `http(s)://host/path`; feature `remote`):
//! the object read by ranged GETs through `npy_remote::RemoteFile` (credentials and endpoint
//! from the standard `AWS_*` environment), the GIL released while it is fetched. An archive is
//! handed to `NpzFile`, which reads its directory and then only the members asked for.

use std::io::{Read, Seek, SeekFrom};

use pyo3::prelude::*;

use crate::errors::{guard, IntoPy};
use crate::load::{read_stream, to_loaded, Options};

/// The object at `url`, opened for reading (one ranged GET, which also gives its size).
#[cfg(feature = "remote")]
pub fn open(url: &str) -> npy_serde::Result<npy_remote::RemoteFile> {
    npy_remote::RemoteFile::open(url, &npy_remote::RemoteOptions::default())
}

/// Without the feature: the refusal naming it.
#[cfg(not(feature = "remote"))]
pub fn open(url: &str) -> npy_serde::Result<std::io::Cursor<Vec<u8>>> {
    Err(npy_serde::Error::remote(
        url,
        "this npy_serde was built without the `remote` feature, which reads object-store URLs",
    ))
}

/// `load` of the object at `url`: what `load` gives for a `.npy`, or `("npz",)` for an
/// archive (opened by `NpzFile`).
#[pyfunction]
#[pyo3(signature = (url, allow_pickle_data, encoding, max_header_size))]
pub fn read_npy_url<'py>(
    py: Python<'py>,
    url: &str,
    allow_pickle_data: bool,
    encoding: &str,
    max_header_size: u64,
) -> PyResult<Bound<'py, PyAny>> {
    guard(|| {
        let o = Options::new(allow_pickle_data, encoding, max_header_size)?;
        let limits = o.limits();
        let raw = py
            .detach(|| -> npy_serde::Result<_> {
                let mut f = open(url)?;
                let mut magic = [0u8; 4];
                let n = f.read(&mut magic)?;
                if n == 4 && (&magic == b"PK\x03\x04" || &magic == b"PK\x05\x06") {
                    return Ok(None);
                }
                f.seek(SeekFrom::Start(0))?;
                read_stream(&mut f, &limits).map(Some)
            })
            .py()?;
        match raw {
            Some(raw) => to_loaded(py, raw, &o),
            None => Ok(("npz",).into_pyobject(py)?.into_any()),
        }
    })
}
