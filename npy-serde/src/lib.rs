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
//! | I want to … | call |
//! |---|---|
//! | read a record array into `Vec<T>`, `T: Deserialize + NpyRecord` (fastest: the compile-time layout) | [`records_from_path`] / [`records_from_reader`] / [`records_from_slice`] |
//! | read every element into `Vec<T>` for any `T: Deserialize` (only `#[derive(Deserialize)]`) | [`vec_from_path`] / [`vec_from_reader`] / [`vec_from_slice`] |
//! | read the whole array as any serde type: `Vec<Vec<f32>>`, `Vec<[u8; 4]>`, a 0-d scalar, a borrowed `Vec<&str>` | [`from_path`] / [`from_reader`] / [`from_slice`] |
//! | stream a file larger than memory, element by element (seek with a `Seek` reader) | [`RecordReader::new_records`] for `NpyRecord` types (several times faster), [`RecordReader::new`] for any `Deserialize` |
//! | write records one at a time into a file | [`NpyWriter::create`] (blocks written on a second thread), then [`write_record`](NpyWriter::write_record) for `NpyRecord` types, [`write`](NpyWriter::write) for any `Serialize` value |
//! | use a file in place: borrow `&str`/`&[u8]` fields, read one record, iterate | [`MmapArray::open`], then [`to_records`](MmapArray::to_records) / [`to_vec`](MmapArray::to_vec) / [`deserialize`](MmapArray::deserialize) / [`record`](MmapArray::record) / [`iter_records`](MmapArray::iter_records) (`NpyRecord` types) / [`records`](MmapArray::records) |
//! | view a file's numbers or `#[repr(C)]` records as `&[T]` without copying | [`MmapArray::as_slice`] |
//! | update a file in place, or create one larger than memory and fill it | [`MmapArrayMut::open_rw`] / [`open_cow`](MmapArrayMut::open_cow) / [`create`](MmapArrayMut::create) |
//! | read a file whose dtype I don't know at compile time | [`Array::from_path`] (values as [`Value`]) |
//! | set limits for untrusted files (header size, data size, empty items) | [`ReaderBuilder`], then the same doors as its methods |
//! | write `&[T]`, `T: Serialize + NpyRecord` (bytes identical to `np.save`) | [`to_path`] / [`to_writer`] / [`to_vec`] |
//! | write with another dtype, shape, byte order, Fortran order or version, or a nested `Serialize` value | [`WriterBuilder`] (`to_*`, [`serialize`](WriterBuilder::serialize), [`write_array`](WriterBuilder::write_array)) |
//! | write records one at a time (counted, uncounted, appending) | [`NpyWriter`], [`WriterBuilder::writer`] / [`writer_with_len`](WriterBuilder::writer_with_len) / [`append_path`](WriterBuilder::append_path) |
//! | read or write `.npz` archives | [`NpzArchive`], [`NpzWriter`], [`NpzStreamWriter`]; a member record by record: `start_records`, then `write_record` (`NpyRecord` types) or `write` |
//! | read an N-d file into an `ndarray` array: `Array2<f32>`, `ArrayD<T>`, `Array1<Rec>` (feature `ndarray`) | `ndarray::read_npy`, `ndarray::ReadNpyExt`, `ReaderBuilder::ndarray_from_path` (`_reader`, `_slice`), `NpzArchive::read_ndarray` |
//! | write any `ndarray` `ArrayBase` (owned, view, strided; bytes identical to `np.save`) (feature `ndarray`) | `ndarray::write_npy`, `ndarray::WriteNpyExt`, `WriterBuilder::write_ndarray`, `NpzWriter::add_ndarray` |
//! | view a mapped file as an `ArrayView`/`ArrayViewMut` without copying (feature `ndarray`) | `MmapArray::view`, `MmapArrayMut::view_mut` |
//! | parse or write just a header | [`header::read_header`], [`header::parse_header`], [`Header::to_bytes`] |
//!
//! `records_from_*` and `vec_from_*` give the same values and errors; the first needs
//! `#[derive(NpyRecord)]` on the type and is several times faster on records. Every door picks its
//! fastest tier inside and falls back, element by element, to the general one.
//!
//! Every fallible function returns this crate's [`Error`], which says what went wrong, where
//! (byte offset, record index, field path) and what was expected versus found.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod dtype;
pub mod error;
pub mod header;
pub mod pod;
mod pyliteral;
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
    decode_value, from_path, from_reader, from_slice, longdouble_to_f64, read_array,
    records_from_path, records_from_reader, records_from_slice, vec_from_path, vec_from_reader,
    vec_from_slice, MmapArray, MmapRecords, ReaderBuilder, RecordReader,
};

// ---- writing: the mirror of reading (see `write`) ----
pub mod write;
pub use write::{to_path, to_vec, to_writer, MmapArrayMut, NpyWriter, WriterBuilder};

// ---- ndarray (feature `ndarray`): reads, writes and views through the doors above ----
#[cfg(feature = "ndarray")]
pub mod ndarray;

// ---- Arrow (feature `arrow`): record batches from and to the doors above ----
#[cfg(feature = "arrow")]
pub mod arrow;

// ---- npz ----
pub mod npz;
pub use npz::{NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
