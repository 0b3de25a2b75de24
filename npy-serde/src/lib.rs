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
//! # Which function
//!
//! One naming rule: for a type that knows its dtype ([`NpyRecord`]: numbers, `bool`, `[T; N]`,
//! structs that `#[derive(NpyRecord)]`), the plain name is the door, and it is the fast one
//! (the compile-time layout). The same door for any serde type has `_serde` appended: the same
//! values, bytes and errors, several times slower on records.
//!
//! | I want to … | `T: NpyRecord` | any serde type |
//! |---|---|---|
//! | read a file into `Vec<T>` (elements in C order) | [`from_path`] / [`from_reader`] / [`from_slice`] | [`from_path_serde`] / [`from_reader_serde`] / [`from_slice_serde`] |
//! | stream a file larger than memory, element by element | [`RecordReader::new`] | [`RecordReader::new_serde`] |
//! | map a file: all of it, iterate, one element | [`MmapArray::to_vec`] / [`records`](MmapArray::records) / [`record`](MmapArray::record) | [`to_vec_serde`](MmapArray::to_vec_serde) / [`records_serde`](MmapArray::records_serde) / [`record_serde`](MmapArray::record_serde) |
//! | write `&[T]` (bytes identical to `np.save`) | [`to_path`] / [`to_writer`] / [`to_vec`] | [`WriterBuilder::serialize`] |
//! | write a file record by record | [`NpyWriter::create`], then [`write`](NpyWriter::write) / [`write_all`](NpyWriter::write_all) | [`write_serde`](NpyWriter::write_serde) / [`write_all_serde`](NpyWriter::write_all_serde) |
#![cfg_attr(
    feature = "npz",
    doc = "| read an `.npz` member (feature `npz`, default) | [`NpzArchive::read`] / [`records`](NpzArchive::records) | [`deserialize`](NpzArchive::deserialize) / [`records_serde`](NpzArchive::records_serde) |"
)]
#![cfg_attr(
    feature = "npz",
    doc = "| write an `.npz` member (feature `npz`, default) | [`NpzWriter::add`]; record by record: `start_records`, then `write` | `write_serde` |"
)]
//!
//! And the doors that take no element type:
//!
//! | I want to … | call |
//! |---|---|
//! | the whole array as one serde value: `Vec<Vec<f32>>`, `Vec<[u8; 4]>`, a 0-d scalar, a borrowed `Vec<&str>` | [`deserialize_path`] / [`deserialize_reader`] / [`deserialize_slice`], [`MmapArray::deserialize`] |
//! | view a file's numbers or `#[repr(C)]` records as `&[T]` without copying | [`MmapArray::as_slice`] |
//! | update a file in place, or create one larger than memory and fill it | [`MmapArrayMut::open_rw`] / [`open_cow`](MmapArrayMut::open_cow) / [`create`](MmapArrayMut::create) |
//! | read a file whose dtype I don't know at compile time | [`Array::from_path`] (values as [`Value`]) |
//! | set limits for untrusted files (header size, data size, empty items) | [`ReaderBuilder`], then the same doors as its methods |
//! | write with another dtype, shape, byte order, Fortran order or version | [`WriterBuilder`] (`to_*`, [`serialize`](WriterBuilder::serialize), [`write_array`](WriterBuilder::write_array)); record by record: [`WriterBuilder::writer`] / [`writer_with_len`](WriterBuilder::writer_with_len) / [`append_path`](WriterBuilder::append_path) |
//! | read or write `ndarray` arrays, or view a map as an `ArrayView` (feature `ndarray`) | `ndarray::read_npy` / `write_npy`, `ReadNpyExt` / `WriteNpyExt`, `MmapArray::view`, `NpzArchive::read_ndarray`, `NpzWriter::add_ndarray` |
//! | parse or write just a header; what a file holds (typed or objects) | [`header::read_header`], [`header::parse_header`], [`Header::to_bytes`]; [`header::read_contents`], [`header::parse_contents`] |
//!
//! Every door picks its fastest tier inside and falls back, element by element, to the general
//! one, with the same values and errors.
//!
//! Every fallible function returns this crate's [`Error`], which says what went wrong, where
//! (byte offset, record index, field path) and what was expected versus found.
//!
//! # Features
//!
//! The default features are `derive`, `parallel`, `npz` (`.npz` archives, the `zip` crate) and
//! `half` (`half::f16` as an element type). With `default-features = false` the crate is the
//! `.npy` core, which builds no proc-macro crate: every door above but the `.npz` ones, `f2`
//! files included (read as `f32`/`f64`). The README's feature table says what each feature
//! adds and what it costs to build.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod datetime;
pub mod dtype;
pub mod error;
pub mod header;
pub mod pickle;
pub mod pod;
pub mod policy;
#[doc(hidden)]
pub mod pyliteral;
pub mod record;
pub mod value;

pub use dtype::{ByteOrder, DType, Field, PlainType, Record, Scalar, TimeUnit};
pub use error::{Error, ErrorKind, Position, Result};
pub use header::{Header, Limits, ParsedHeader, Version};
pub use pod::Pod;
pub use record::NpyRecord;
pub use value::{Array, Value};

// ---- derive re-export (feature `derive`) ----
#[cfg(feature = "derive")]
pub use npy_derive::NpyRecord;

// ---- the shared layer under both directions ----
pub mod aligned;
#[doc(hidden)]
pub mod binary16;
mod kind;
mod layout;
mod miss;
pub mod staged;
#[doc(hidden)]
pub mod text;
#[cfg(feature = "tier-hook")]
pub mod tier;
#[cfg(not(feature = "tier-hook"))]
mod tier;
pub use aligned::AlignedWriter;
pub use staged::StagedFile;

// ---- reading: the doors, then byte sources, the shape walk and the tiers (see `read`) ----
pub mod read;
pub use read::{
    decode_value, deserialize_path, deserialize_reader, deserialize_slice, from_path,
    from_path_serde, from_reader, from_reader_serde, from_slice, from_slice_serde,
    longdouble_to_f64, read_array, MmapArray, MmapRecords, ReaderBuilder, RecordReader,
};

// ---- writing: the mirror of reading (see `write`) ----
pub mod write;
pub use write::{to_path, to_vec, to_writer, Background, MmapArrayMut, NpyWriter, WriterBuilder};

// ---- ndarray (feature `ndarray`): reads, writes and views through the doors above ----
#[cfg(feature = "ndarray")]
pub mod ndarray;

// ---- npz (feature `npz`, default): archives of `.npy` members through the doors above ----
#[cfg(feature = "npz")]
pub mod npz;
#[cfg(feature = "npz")]
pub use npz::{MmapNpz, NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
