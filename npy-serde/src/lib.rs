//! Read and write NumPy `.npy` and `.npz` files, with structured (record) arrays mapped to
//! ordinary Rust structs through serde.
//!
//! The format is NumPy's (`numpy.lib.format`, NEP 1): a magic string, a version, a header that
//! is a Python dict literal (`descr`, `fortran_order`, `shape`), then the raw element bytes.
//!
//! - [`dtype`]: the element-type model ([`DType`]), parsed from and printed as NumPy's `descr`.
//! - [`header`]: reading (with limits, for untrusted input) and writing (byte-identical to
//!   `numpy.save`) of the header.
//! - [`NpyRecord`]: Rust types that know their dtype (derive it for structs).
//!
//! Every fallible function returns this crate's [`Error`], which says what went wrong, where
//! (byte offset, record index, field path) and what was expected versus found.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod dtype;
pub mod error;
pub mod header;
mod pyliteral;
pub mod record;
pub mod value;

pub use dtype::{ByteOrder, DType, Field, PlainType, Record, Scalar, TimeUnit};
pub use error::{Error, ErrorKind, Position, Result};
pub use header::{Header, Limits, ParsedHeader, Version};
pub use record::NpyRecord;
pub use value::{Array, Value};

// ---- derive re-export (feature `derive`) ----
#[cfg(feature = "derive")]
pub use npy_derive::NpyRecord;

// ---- the shared layer under both directions ----
mod kind;
mod layout;
mod miss;
mod text;
#[cfg(feature = "tier-hook")]
pub mod tier;
#[cfg(not(feature = "tier-hook"))]
mod tier;

// ---- reading: the doors, then byte sources, the shape walk and the tiers (see `read`) ----
pub mod read;
pub use read::{
    decode_value, from_path, from_reader, from_reader_with_header, from_slice, longdouble_to_f64,
    read_array, records_from_path, records_from_reader, records_from_slice, vec_from_path,
    vec_from_reader, vec_from_slice, MmapArray, MmapRecords, ReaderBuilder, RecordReader,
};

// ---- writing: the mirror of reading (see `write`) ----
pub mod write;
pub use write::{to_path, to_vec, to_writer, NpyWriter, WriterBuilder};

// ---- npz ----
pub mod npz;
pub use npz::{NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
