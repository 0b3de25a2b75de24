//! Where `load` reads from: a path, a bytes-like object, or a binary file object (read through
//! its `read` method, from its current position, leaving it right after the array as
//! `np.load` does).

use std::io::{self, Read};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A Python binary file object as a [`Read`]: each `read` calls `fileobj.read(n)`.
pub struct PyFileReader<'py> {
    file: Bound<'py, PyAny>,
}

impl<'py> PyFileReader<'py> {
    /// Reads through `file.read`.
    pub fn new(file: Bound<'py, PyAny>) -> Self {
        PyFileReader { file }
    }
}

impl Read for PyFileReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let got = self
            .file
            .call_method1("read", (buf.len(),))
            .map_err(|e| io::Error::other(format!("the file object's read failed: {e}")))?;
        let bytes = got.cast::<PyBytes>().map_err(|_| {
            io::Error::other("the file object's read returned no bytes (open it in binary mode)")
        })?;
        let b = bytes.as_bytes();
        // A read may return fewer bytes than asked (a pipe, a socket), never more.
        let n = b.len().min(buf.len());
        buf[..n].copy_from_slice(&b[..n]);
        Ok(n)
    }
}

/// Copies what is read through it (the header's bytes, parsed again as a literal).
pub struct Tee<'a, R: ?Sized> {
    inner: &'a mut R,
    /// What was read.
    pub seen: Vec<u8>,
}

impl<'a, R: Read + ?Sized> Tee<'a, R> {
    /// A tee over `inner`.
    pub fn new(inner: &'a mut R) -> Self {
        Tee {
            inner,
            seen: Vec::new(),
        }
    }
}

impl<R: Read + ?Sized> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}
