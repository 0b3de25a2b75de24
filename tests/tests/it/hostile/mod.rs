//! Hostile inputs: every way a `.npy` file can lie, each checked to fail with the right error,
//! without a panic, and — where a declared size could make a naive reader allocate — with the
//! peak allocation of the failing call measured by the binary's counting global allocator
//! ([`crate::alloc`], which counts per thread: a measurement only sees what the code under test
//! allocated on the calling thread).
//!
//! By door: `header` (the magic, version, length, dict, shape and descr, as the header parser
//! meets them), `data` (the readers of the data: huge shapes over tiny data, lying content,
//! truncation), `npz` (archives: CRCs, deflate streams, bombs, lying sizes). The builders of
//! hostile files are here.

mod data;
mod header;
mod npz;

use std::io::Read;

use npy_serde::header::{parse_header, read_header, Limits, MAGIC};
use npy_serde::npz::{Compression, NpzArchive, NpzReaderBuilder, NpzWriter};
use npy_serde::{Array, Error, Header, MmapArray, NpyRecord, ReaderBuilder, Value};
use serde::Deserialize;

use crate::alloc::peak_alloc;

pub(super) const MIB: u64 = 1 << 20;

/// Asserts that `f` fails with `code` (or one of `a|b`) while allocating less than `budget`
/// bytes.
pub(super) fn fails_small<T: std::fmt::Debug>(
    what: &str,
    code: &str,
    budget: u64,
    f: impl FnOnce() -> Result<T, Error>,
) {
    let (r, peak) = peak_alloc(f);
    match r {
        Ok(v) => panic!("{what}: expected {code}, got Ok({v:?})"),
        Err(e) => assert!(
            code.split('|').any(|c| c == e.kind().code()),
            "{what}: expected {code}, got {e}"
        ),
    }
    assert!(
        peak < budget,
        "{what}: allocated {peak} bytes (budget {budget})"
    );
}

// ---------------------------------------------------------------------------------------------
// Building hostile files
// ---------------------------------------------------------------------------------------------

/// A `.npy` with the given version, raw header text (no padding added) and data.
pub(super) fn npy(version: (u8, u8), text: &[u8], data: &[u8]) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend_from_slice(&[version.0, version.1]);
    if version.0 == 1 {
        v.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        v.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    v.extend_from_slice(text);
    v.extend_from_slice(data);
    v
}

/// A v1.0 `.npy` with a header dict built from descr, fortran_order and shape text.
pub(super) fn npy_dict(descr: &str, fortran: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let text = format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}\n");
    npy((1, 0), text.as_bytes(), data)
}

pub(super) fn header_err(bytes: &[u8]) -> Error {
    match parse_header(bytes, &Limits::default()) {
        Ok(p) => panic!("expected an error, parsed {:?}", p.header),
        Err(e) => e,
    }
}

pub(super) fn big_header_limits() -> Limits {
    Limits {
        max_header_size: 16 * MIB,
        ..Limits::default()
    }
}

/// A reader of unknown length: yields `data`, then (optionally) an endless stream of `fill`
/// bytes up to `tail` bytes, in small chunks — as a socket or pipe would.
pub(super) struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(self.chunk)
            .min(self.data.len() - self.pos.min(self.data.len()));
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

pub(super) fn chunked(data: Vec<u8>, chunk: usize) -> Chunked {
    Chunked {
        data,
        pos: 0,
        chunk,
    }
}

/// A 10^12-element array header followed by 16 data bytes.
pub(super) fn huge_shape(descr: &str, fortran: bool, shape: &str) -> Vec<u8> {
    npy_dict(
        descr,
        if fortran { "True" } else { "False" },
        shape,
        &[1; 16],
    )
}
