//! The bodies of the fuzz targets, one public function per target in a file of its own
//! (`src/<target>.rs`), and their shared helpers here.
//!
//! Each `fuzz_targets/<name>.rs` is a one-line `fuzz_target!` calling [`header`], [`npy`],
//! [`npz`], [`mmap_npz`], [`records`], [`roundtrip`], [`writers`], [`pickle`] or
//! [`table_record`]. These files
//! depend only on `npy-serde` (and `npy-arrow` for `arrow`), `serde`, `arbitrary` and `std`,
//! so that `tests/tests/it/fuzz_regressions.rs` can include this one (and with it the others)
//! with `#[path]` and replay every saved crash input through exactly the code the fuzzer ran,
//! on stable, in `cargo test` ([`writers_from_bytes`] for the `writers` target's structured
//! input). The roundtrip target decodes its dtype and values from the fuzz bytes with the
//! small [`ByteSource`] below; `writers` takes its typed records from `arbitrary`.
//!
//! Every function panics on a broken invariant; a returned error from the library is fine.

use std::io::{Cursor, Read};

use npy_serde::dtype::{ByteOrder, DType, Field, Record, Scalar, TimeUnit};
use npy_serde::header::{
    parse_contents, parse_header, read_contents, read_header, Contents, Limits,
};
use npy_serde::npz::{
    Compression, MmapNpz, NpzAppender, NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter,
};
use npy_serde::{Array, NpyRecord, ReaderBuilder, Value, WriterBuilder};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A reader of unknown length that hands out at most `chunk` bytes per `read`, like a pipe or
/// socket (and exercises every short-read path).
pub struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl<'a> Chunked<'a> {
    /// A reader over `data` returning at most `chunk` (>= 1) bytes per call.
    pub fn new(data: &'a [u8], chunk: usize) -> Self {
        Chunked {
            data,
            chunk: chunk.max(1),
        }
    }
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Value equality where every NaN equals every NaN (a NaN's payload may change in a long double
/// or half conversion, and `NaN != NaN` would make a correct round trip look wrong).
pub fn same_value(a: &Value, b: &Value) -> bool {
    fn f(x: f64, y: f64) -> bool {
        (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => f(*x, *y),
        (Value::Complex(xr, xi), Value::Complex(yr, yi)) => f(*xr, *yr) && f(*xi, *yi),
        (Value::List(x), Value::List(y)) => same_values(x, y),
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((n, v), (m, w))| n == m && same_value(v, w))
        }
        _ => a == b,
    }
}

/// [`same_value`] over two slices.
pub fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

fn raised_limits() -> Limits {
    Limits {
        max_header_size: 1 << 24,
        max_depth: 10_000,
        max_dims: 1024,
    }
}

fn check_same(want: &Array, got: npy_serde::Result<Array>, how: &str) {
    let got = got.unwrap_or_else(|e| panic!("{how}: reading back {}: {e}", want.dtype));
    assert_eq!(got.dtype, want.dtype, "{how}: dtype");
    assert_eq!(got.shape, want.shape, "{how}: shape");
    assert_eq!(got.fortran_order, want.fortran_order, "{how}: order");
    assert!(
        same_values(&got.values, &want.values),
        "{how}: values differ\nwrote {:?}\nread  {:?}",
        want.values,
        got.values
    );
}

/// The data offset an `.npy` file's preamble gives (magic, version, header length; the header
/// text itself is parsed by the read-back) is a multiple of 64 inside the file.
fn check_data_offset(bytes: &[u8], how: &str) {
    assert!(bytes.starts_with(b"\x93NUMPY"), "{how}: magic");
    let offset = match bytes.get(6) {
        Some(1) => 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize,
        Some(2 | 3) => 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
        v => panic!("{how}: version {v:?}"),
    };
    assert_eq!(offset % 64, 0, "{how}: data offset");
    assert!(offset <= bytes.len(), "{how}: data offset");
}

// One file per target (each `fuzz_targets/<name>.rs` calls its function), over the helpers
// above; everything re-exported here, so that the targets and the tests see one flat API.
mod header;
pub use header::*;
mod npy;
pub use npy::*;
mod records;
pub use records::*;
mod npz;
pub use npz::*;
mod mmap_npz;
pub use mmap_npz::*;
mod roundtrip;
pub use roundtrip::*;
mod writers;
pub use writers::*;
#[cfg(feature = "arrow")]
mod arrow;
#[cfg(feature = "arrow")]
pub use arrow::*;
#[cfg(feature = "arrow")]
mod table_record;
#[cfg(feature = "arrow")]
pub use table_record::*;
mod pickle;
pub use pickle::*;
