//! `.npy` / `.npz` arrays as Arrow record batches, and record batches back into `.npy` files
//! (feature `arrow`; arrow-rs 59, the version DataFusion 55 uses, so batches pass into it as
//! they are).
//!
//! - Reading: [`NpyBatchReader`] (from a path, any `Read`, a slice, a [`MmapArray`](npy_serde::MmapArray),
//!   shared or borrowed, or an `.npz` member), configured by [`BatchReaderBuilder`] (batch size,
//!   projection: fields not asked for are never decoded). Streamed in bounded memory: a batch
//!   holds at most [`MAX_BATCH_BYTES`] of record bytes. [`read_batch`] reads a whole file as one
//!   batch, [`read_batches`] as a `Vec`. [`schema_for`] gives the schema a header maps to.
//! - Column tables (feature `npz`): an `.npz` of columns or a directory of `COLUMN.npy` files
//!   read as batches by [`ColumnTableReader`] and written by [`ColumnTableWriter`].
//! - Writing: [`NpyBatchWriter`] (any `Write + Seek`, a path, or an `.npz` member through
//!   [`write_npz_member`]), configured by [`BatchWriterBuilder`]; [`write_batches`] writes a
//!   whole `RecordBatchReader` to a path. The count need not be known up front: the header is
//!   patched when the writer finishes.
//!
//! Values are gathered straight from the record bytes into Arrow buffers (for each column its
//! offset, byte swap and width; the fixed-width columns together, a few KiB of records at a
//! time while they are in the cache), not value by value through serde. A plain 1-D
//! little-endian number array read from a shared map ([`NpyBatchReader::from_mmap_arc`]) is not
//! copied at all: the batches' buffers borrow the map.
//!
//! # Rows and columns
//!
//! A record array has one column per field (padding dropped); a plain array has one column,
//! named `value`. A 1-D array has one row per element; an N-d array one row per item along the
//! first axis, the other axes as nested `FixedSizeList`s (a `(100, 3, 4)` array of `f4` is 100
//! rows of `FixedSizeList<FixedSizeList<Float32, 4>, 3>`; a record array's fields each get
//! those lists); a 0-d array is one row. Fortran-order data comes out in logical C order, and
//! big-endian data is swapped to native.
//!
//! # The type mapping
//!
//! | NumPy | Arrow | notes |
//! |---|---|---|
//! | `b1` | `Boolean` | a byte other than 0 or 1 is an `InvalidValue` error, as for the other doors |
//! | `i1` `i2` `i4` `i8` | `Int8` `Int16` `Int32` `Int64` | |
//! | `u1` `u2` `u4` `u8` | `UInt8` `UInt16` `UInt32` `UInt64` | |
//! | `f2` `f4` `f8` | `Float16` `Float32` `Float64` | |
//! | `f16` (long double) | `Float64` | rounded to nearest, as [`longdouble_to_f64`](npy_serde::longdouble_to_f64) |
//! | `c8` `c16` | `Struct {real: Float32, imag: Float32}`, `Struct {real: Float64, imag: Float64}` | Arrow has no complex type; the parts by name, as NumPy's `.real` / `.imag` |
//! | `c32` | `Struct {real: Float64, imag: Float64}` | each part rounded as `f16` |
//! | `S<n>` | `Binary` | trailing NULs stripped, as NumPy does |
//! | `U<n>` | `Utf8` | trailing NULs stripped; an invalid code point is an `InvalidValue` error |
//! | `V<n>` | `FixedSizeBinary(n)` | |
//! | `M8[D]`, `M8[W]` | `Date32` | weeks times 7; a count outside Date32's range is an error |
//! | `M8[s]` `M8[ms]` `M8[us]` `M8[ns]` | `Timestamp(unit, None)` | |
//! | `M8[h]`, `M8[m]` | `Timestamp(Second, None)` | times 3600, 60 |
//! | `m8[s\|ms\|us\|ns]` | `Duration(unit)` | `m8[W\|D\|h\|m]` as `Duration(Second)`, converted exactly |
//! | `M8`/`m8` in `Y`, `M`, `ps`, `fs`, `as`, generic | `Int64` | the raw count; the unit in the field's `numpy.unit` metadata |
//! | a multiplier (`M8[10s]`, `m8[25ms]`) | `Int64` | the raw count (scaled it could overflow); the unit in `numpy.unit` |
//! | NaT | null | datetime columns are the only nullable ones (and the fields restored below) |
//! | record | `Struct` | nested records; a field's NumPy title in its `numpy.title` metadata |
//! | subarray `(base, (a, b))` | `FixedSizeList<FixedSizeList<base, b>, a>` | the shape is the list sizes |
//! | `O` (object), `StringDType` | `Utf8` / `Binary` | only with [`BatchReaderBuilder::allow_pickle_data`]: the pickle read as data, every element a `str` (`bytes`), `None` a null; any other element an error naming it (`objects.rs`) |
//!
//! Every field carries its exact NumPy descr in the metadata key `numpy.descr` (`'>f4'`,
//! `('<i2', (3,))`, a nested record's list); the schema carries the whole element's descr, the
//! array's shape (`numpy.shape`) and `numpy.fortran_order`. [`NpyBatchWriter`] reads them back,
//! so `.npy` -> Arrow -> `.npy` gives the original dtype, byte order, padding and titles: the
//! same bytes `np.save` wrote, a Fortran-order array in Fortran order (written with its shape
//! known from `numpy.shape`: runs of rows at their offsets, in bounded memory).
//!
//! ```
//! use arrow_array::{cast::AsArray, types::Int64Type};
//! use npy_arrow::{NpyBatchReader, NpyBatchWriter};
//! use npy_serde::NpyRecord;
//! use serde::Serialize;
//!
//! #[derive(Serialize, NpyRecord)]
//! struct Rec { id: i64, pos: [f32; 3], name: [u8; 4] }
//!
//! let recs = [Rec { id: 7, pos: [1.0, 2.0, 3.0], name: *b"ab\0\0" }];
//! let file = npy_serde::to_vec(&recs)?;
//!
//! let mut reader = NpyBatchReader::from_slice(&file)?;
//! let batch = reader.next_batch()?.unwrap();
//! assert_eq!(batch.column(0).as_primitive::<Int64Type>().value(0), 7);
//! assert_eq!(batch.schema().field(1).metadata()["numpy.descr"], "('<f4', (3,))");
//!
//! let mut w = NpyBatchWriter::new(std::io::Cursor::new(Vec::new()), &batch.schema())?;
//! w.write(&batch)?;
//! assert_eq!(w.finish()?.into_inner(), file);
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! # Writing without NumPy metadata: every Arrow type
//!
//! A batch from elsewhere (Parquet, pyarrow, polars, DuckDB, a query) maps by this table, for
//! every type arrow-rs 59 has. **exact**: the type the dtype reads back as, value for value.
//! **reversible**: exact values, the Arrow type kept in the field's title (below) and restored
//! on reading. **decoded**: the values exact, the encoding not kept (it comes back as the plain
//! type). **refused**: an error naming the column, the type and the option.
//!
//! | Arrow | NumPy | |
//! |---|---|---|
//! | `Boolean`, `Int8`..`Int64`, `UInt8`..`UInt64`, `Float16/32/64` | `b1`, `i1`..`i8`, `u1`..`u8`, `f2/f4/f8` | exact |
//! | `Utf8`, `Utf8View` | `U<n>` | exact; the view decoded |
//! | a lone `Utf8`, `LargeUtf8`, `Utf8View` column | `O` | with [`BatchWriterBuilder::strings_as_objects`], or a `numpy.descr` of `'|O'`: an object array of `str`, `None` for null (`object_writer.rs`) |
//! | `LargeUtf8` | `U<n>` | reversible |
//! | `Binary`, `BinaryView` / `LargeBinary` | `S<n>` | exact; decoded / reversible |
//! | `FixedSizeBinary(n)` | `V<n>` | exact |
//! | `Date32` / `Date64` | `M8[D]` / `M8[ms]` | exact / reversible |
//! | `Timestamp(unit)` | `M8[unit]` | exact |
//! | `Timestamp(unit, zone)` | `M8[unit]` | reversible: the UTC instants (what the values are), the zone in the title |
//! | `Duration(unit)` | `m8[unit]` | exact |
//! | `Time32(s\|ms)`, `Time64(us\|ns)` | `m8[unit]` | reversible: the time since midnight |
//! | `Decimal32/64/128/256(p, s)`, `p <= 15` (`p + \|s\| <= 15` for `s < 0`) | `<f8` | reversible: the nearest double; `round(x * 10^s)` gives the decimal back ([`DecimalPolicy::Auto`]) |
//! | wider decimals | | refused, naming [`DecimalPolicy::F8`] (the nearest double, lossy, reversible in type) and [`DecimalPolicy::Scaled`] (`<i8` holding the unscaled value, exact and reversible; a value past `i64` is an error naming the row) |
//! | `Dictionary(any key, values)`, `RunEndEncoded` | the values' dtype | decoded; a key past the dictionary is an error naming the column and row |
//! | `Struct` | a record | as its fields |
//! | `FixedSizeList(item, n)` | subarray `(item, (n,))` | exact |
//! | `List`, `LargeList`, `ListView`, `LargeListView` | subarray `(item, (n,))` | reversible (a view as `List`/`LargeList`) when every list of the column has one length `n` (settled by the first batch); refused, naming `exclude`, when they differ |
//! | `Map`, `Union`, `Interval` | | refused, naming [`BatchWriterBuilder::exclude`] / `--exclude` |
//! | `Null` | | refused, naming `exclude`: no null policy gives an all-null column a dtype |
//!
//! A string column's width is the widest value in the first batch, or the one given with
//! [`BatchWriterBuilder::string_width`]; a longer value later is an error that says so.
//! [`BatchWriterBuilder::columns`] and [`exclude`](BatchWriterBuilder::exclude) choose the
//! top-level columns; [`decimals`](BatchWriterBuilder::decimals) and
//! [`decimals_for`](BatchWriterBuilder::decimals_for) the [`DecimalPolicy`].
//!
//! ## Nulls
//!
//! NaT is the null of datetime columns, always. Elsewhere a null is what the [`NullPolicy`]
//! says ([`BatchWriterBuilder::nulls`] for the run, [`nulls_for`](BatchWriterBuilder::nulls_for)
//! per column): `error` (the default: an error naming the column, the row and the policies),
//! `nan` (floats NaN; an integer column with nulls in the first batch becomes `<f8`,
//! reversible, refused if a value is not exact in `<f8`; bool, text and bytes refused naming
//! `mask` and `fill`), `fill=VALUE` (the value parsed per column type; refused where it also
//! occurs as data), `mask` (a `b1` field `NAME_valid` beside each nullable field, so
//! `np.ma.masked_array(a['x'], ~a['x_valid'])` rebuilds the column; the reader folds it back
//! into the nulls and marks the field with [`MASK_KEY`], so writing it again brings the mask
//! back).
//!
//! ## The title marker
//!
//! NumPy refuses extra header keys; the one per-field text it keeps is a field's title. A
//! written field whose Arrow type is not the default mapping of its dtype is titled
//! `arrow:NAME:TYPE`, TYPE being arrow-rs's `Display` of the type (the decoded type: a
//! dictionary of `LargeUtf8` as `LargeUtf8`), with `us` for `µs` so the header stays ASCII:
//! `('arrow:price:Decimal128(15, 2)', 'price')`. [`NpyBatchReader`] and [`schema_for`] (and so
//! Parquet output and SQL over the file) parse it back with `DataType::from_str` and restore
//! the type: a decimal from its doubles exactly (a value that does not fit is an error, never a
//! null; NaN is a null, as the `nan` policy writes one), a time from its duration, the zone onto
//! the timestamps. A field that has a NumPy title of its own keeps it (the type is then not
//! kept); so does a plain (non-record) array, which has no titles: its Arrow type is lost. A
//! title that does not parse, or names a type the dtype cannot come back as, is left as it is
//! (in `numpy.title`) and the field maps as any other. Only the fields of 1-D record arrays are
//! restored.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod choose;
#[cfg(feature = "npz")]
mod columns;
mod decode;
mod encode;
mod foreign;
mod fortran;
mod object_writer;
mod objects;
pub mod order;
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(unix)]
mod pread;
mod reader;
mod rows;
mod schema;
mod widths;
mod writer;

pub use choose::{choose_columns, ColumnChoiceError};
#[cfg(feature = "npz")]
pub use columns::{ColumnTableReader, ColumnTableWriter};
#[doc(hidden)]
pub use decode::arrow_err;
#[doc(hidden)]
pub use decode::fixed_array;
pub use foreign::title::MASK_KEY;
pub use npy_serde::policy::{DecimalPolicy, NullPolicy};
pub use reader::{
    read_batch, read_batches, schema_of_path, to_arrow, BatchReaderBuilder, NpyBatchReader,
    DEFAULT_BATCH_SIZE, MAX_BATCH_BYTES,
};
#[doc(hidden)]
pub use rows::RowDecoder;
#[doc(hidden)]
pub use rows::{needs_gather, rows_of};
pub use schema::{
    data_type_for, schema_for, DESCR_KEY, FORTRAN_KEY, PLAIN_COLUMN, SHAPE_KEY, TITLE_KEY, UNIT_KEY,
};
pub use widths::{needs_width, string_widths};
#[cfg(feature = "npz")]
pub use writer::write_npz_member;
pub use writer::{dtype_for_field, write_batches, BatchWriterBuilder, NpyBatchWriter};

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
