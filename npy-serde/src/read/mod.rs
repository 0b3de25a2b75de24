//! Reading `.npy` data through serde: the doors ([`from_path`] and its siblings, see the crate
//! docs' table) and the configurable [`ReaderBuilder`].
//!
//! Through [`deserialize_path`] and its siblings, the whole array deserializes as nested
//! sequences following its shape, like `ndarray.tolist()`: `Vec<T>` for 1-D, `Vec<Vec<T>>` or `Vec<[T; N]>` for 2-D, a bare `T` for
//! 0-d. Fortran-order data comes out in logical C order. A record (structured element) is a
//! map keyed by field name, so a `#[derive(Deserialize)]` struct picks its fields by name (in
//! any order; file fields it does not name are skipped without being decoded), or a sequence of
//! field values for tuples.
//!
//! ```
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, Debug, PartialEq)]
//! struct Point { y: f32, x: f64 }
//!
//! // np.save(f, np.array([(1.5, 2.5)], dtype=[('x', '<f8'), ('y', '<f4')]))
//! let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
//! let dict = "{'descr': [('x', '<f8'), ('y', '<f4')], 'fortran_order': False, 'shape': (1,), }";
//! file.extend_from_slice(dict.as_bytes());
//! file.resize(127, b' ');
//! file.push(b'\n');
//! file.extend_from_slice(&1.5f64.to_le_bytes());
//! file.extend_from_slice(&2.5f32.to_le_bytes());
//!
//! let points: Vec<Point> = npy_serde::deserialize_slice(&file)?;
//! assert_eq!(points, [Point { x: 1.5, y: 2.5 }]);
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! # Conversions
//!
//! A scalar converts to the requested Rust type only when every value of the file's type does
//! so exactly: the same type, a wider integer (`i4` -> `i64`, `u4` -> `i64`, `u1` -> `u16`), a
//! wider float (`f2` -> `f32`, `f4` -> `f64`), or an integer into a float that holds it exactly
//! (`i2` -> `f32`, `i4` -> `f64`). Anything else (`f8` -> `f32`, `i8` -> `f64`, `i4` -> `u32`)
//! is a [`TypeMismatch`](crate::ErrorKind::TypeMismatch) error naming the record, field path,
//! file dtype and requested type. Two documented exceptions round: long double (`f16`, x87
//! 80-bit) reads as `f64` rounded to nearest, ties to even (see [`longdouble_to_f64`]).
//!
//! - `b1` -> `bool`; a byte other than 0 or 1 is an `InvalidValue` error (NumPy reads any
//!   nonzero byte as `True`; a Rust `bool` cannot hold it, so typed reads stay strict; the `npy`
//!   tool prints NumPy's value with a warning).
//! - `f2` -> `f32`, `f64` or, with feature `half` (default), `half::f16` (its serde form is a
//!   newtype around an f32, which is exact for every half value).
//! - complex -> `(re, im)`, `[f64; 2]`, or `num_complex::Complex` (a 2-tuple in serde).
//! - `S<n>` -> `String`/`&str` (UTF-8 checked), `Vec<u8>`, `serde_bytes`, `&[u8]`, with
//!   trailing NULs stripped as NumPy does; `[u8; n]` gets all `n` raw bytes. Borrowing (`&str`,
//!   `&[u8]`) works from [`deserialize_slice`] and memory maps.
//! - `U<n>` -> `String` or `char` (invalid code points, UTF-16 surrogates among them, are
//!   `InvalidValue` errors: NumPy gives a Python `str` holding the surrogate, which a Rust
//!   `String` cannot; the `npy` tool prints it as `\udXXX`, as Python does).
//! - `V<n>` -> bytes. `M8`/`m8` -> `i64` (the raw count; NaT is `i64::MIN`).
//! - Big-endian data is decoded transparently.
//! - A unit-only enum reads from an `S`/`U` field holding the variant name.
//! - `Option<T>` is always `Some` for a present field; a missing field is `None`.
//!
//! Because file fields the struct does not name are never shown to it,
//! `#[serde(deny_unknown_fields)]` has no effect.
//!
//! # Arrays of elements: `from_*` and `from_*_serde`
//!
//! [`from_path`], [`from_reader`], [`from_slice`] (and
//! [`MmapArray::to_vec`](crate::MmapArray::to_vec)) read every element into a `Vec<T>` for a
//! type that knows its dtype ([`NpyRecord`]); [`from_path_serde`], [`from_reader_serde`],
//! [`from_slice_serde`] (and [`MmapArray::to_vec_serde`](crate::MmapArray::to_vec_serde)) do
//! the same for any `Deserialize` type. Both allocate the `Vec` once at its final size, backed
//! by huge pages from 4 MiB, which `deserialize_*::<Vec<T>>` cannot do through serde's `Vec`
//! impl. From a plain reader, whose data is not known to exist, the `Vec` grows as elements
//! arrive instead.
//!
//! The `_serde` doors first decode each element on a runtime-planned path that handles only
//! exact requests (a scalar as its own Rust type, a struct whose fields are the file's fields
//! in order, 1-D subarrays); any other request decodes the element again through the general
//! path described here, which then serves the rest of the array. The plain doors add an
//! *exact* tier in front: the type's layout is a compile-time constant, so when the file's
//! element layout is the type's, every check of the decoding is resolved at compile time and a
//! record costs about what a hand-written decoder spends on it (on 33-byte records, 2-3x less
//! than the `_serde` doors). Results and errors are the same on every tier.
//!
//! When the file's fields are exactly the struct's fields (the `fields` list serde passes to
//! `deserialize_struct`), in the same order, the record is handed to the struct's visitor as a
//! sequence of field values instead (`visit_seq`), which skips matching keys; `serde_derive`
//! structs accept both forms. A hand-written `Deserialize` that calls `deserialize_struct`
//! must therefore implement `visit_seq` as well as `visit_map`, as serde's own impls do. A
//! struct whose visitor takes fewer fields than `fields` names (a derived struct with a
//! `#[serde(alias)]`, which serde lists in `fields`, or a visitor that stops early) is read by
//! name instead, from the element where that is seen on: with the flat readers
//! (`from_*_serde`, `from_*`), streaming and `deserialize_*::<Vec<T>>` that is the first
//! element.
//!
//! # How this module is built
//!
//! One file per layer; each calls only the layers below it (a test keeps the crate's module
//! graph free of cycles):
//!
//! | file | owns | calls |
//! |---|---|---|
//! | `mod.rs` | the doors: `deserialize_*`, `from_*_serde`, `from_*`, [`ReaderBuilder`]'s methods; their storage-order forms for `crate::ndarray` | `decode`, `stream`, `mmap`, `array` |
//! | `stream.rs`, `mmap.rs`, `array.rs` | [`RecordReader`], [`MmapArray`], the dynamic [`Array`](crate::Array) | `decode`, the tiers, `source` |
//! | `decode.rs` | checking data against the header and limits; whole-array or flat-`Vec` decoding | `shape`, `source` |
//! | `shape.rs` | the array's axes as serde sequences; every element into a `Vec`, tier by tier | `exact`, `planned`, `general` |
//! | `exact.rs` | the compile-time-layout tier (`T: NpyRecord`) | `crate::record`, `crate::layout` |
//! | `planned.rs` | the runtime-planned tier (any `Deserialize`, exact requests only) | `plan` |
//! | `general.rs` | the general tier: every request, every lossless conversion, errors with position | `access`, `entry`, `elem`, `plan` |
//! | `entry.rs` | the general tier's planned entrance (`FastDe`): exact requests straight from the bytes | `elem`, `plan` |
//! | `access.rs` | the general tier's serde accessors: subarray items, record fields, complex parts | `elem` |
//! | `bulk.rs` | plain data (`crate::pod`) read with one copy | `decode`, `vecalloc` |
//! | `parallel.rs` | large arrays decoded on all cores, chunk by chunk into the result | `exact`, `vecalloc` |
//! | `elem.rs` | one element's bytes decoded per scalar kind | `plan`, `crate::text` |
//! | `plan.rs` | per-array plans and their cache | `crate::kind` |
//! | `source.rs` | byte sources: slice, blocks from `io::Read`, Fortran walks | |
//! | `objects.rs` | object arrays (the header's kind [`Contents::Objects`](crate::header::Contents)): the pickle after the header read as data, whole, by the doors that read whole arrays | `crate::pickle` |
//! | `options.rs`, `vecalloc.rs` | limits; the result `Vec`'s allocation | |
//!
//! The three tiers give the same values and errors: a tier that cannot decode an element
//! exactly *misses* (`crate::miss`), and the next one decodes that element again and serves
//! the rest of the array.
//!
//! # Untrusted input
//!
//! Declared sizes are checked (with overflow checks) against the bytes actually available
//! before anything is allocated from them; from a plain `io::Read` the data is read in blocks as
//! it arrives, so a header claiming terabytes costs nothing until the bytes exist. A truncated
//! file is an `UnexpectedEof` error with the expected and found byte counts.

use std::io::Read;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{Deserialize, DeserializeOwned};

mod access;
mod array;
mod bulk;
mod decode;
mod elem;
mod entry;
mod exact;
mod general;
mod mmap;
pub(crate) mod objects;
mod options;
mod parallel;
#[cfg(all(feature = "parallel", feature = "npz"))]
pub(crate) use parallel::worth as parallel_worth;
mod placed;
mod plan;
mod planned;
mod shape;
mod source;
mod stream;
mod vecalloc;

pub use crate::text::longdouble_to_f64;
pub use crate::value::decode_value;
pub use array::read_array;
pub use exact::{Exact, General};
pub use mmap::{MmapArray, MmapRecords};
pub use options::ReaderBuilder;
pub use stream::RecordReader;

#[doc(hidden)]
pub use decode::{data_of, open_checked, open_contents};
pub(crate) use mmap::as_elements;
#[doc(hidden)]
pub use placed::PlacedRecords;
#[doc(hidden)]
pub use source::BlockReader;

use crate::error::Result;
use crate::header::{
    parse_contents, parse_header, read_contents, read_header, Contents, ObjectHeader, ParsedHeader,
};
use crate::NpyRecord;
use decode::{deserialize_data, vec_from_data, Elements, Whole};

/// Reads every element of the array from `reader` into a `Vec<T>`, for a type that knows its
/// dtype (`#[derive(Deserialize, NpyRecord)]`, numbers, `bool`, `[T; N]`): the fastest way to
/// a `Vec`. Elements come in logical C order whatever the shape (like `arr.ravel()`); the
/// reader is left just after the array.
///
/// When the file's element layout is `T::dtype()`'s (its fields, types, offsets and itemsize,
/// in the same byte order or in the opposite one throughout, and serde's field list for the
/// struct is the file's field names in order), each record decodes through `T`'s `Deserialize`
/// impl with every check resolved at compile time, about as fast as a hand-written decoder;
/// plain data (`#[repr(C)]` records, numbers) is copied once. Otherwise, and from the first
/// element that tier cannot decode exactly (a bool byte other than 0 or 1, a hand-written
/// `Deserialize` asking for another type), the array continues as [`from_reader_serde`]
/// reads it: the same values and errors either way.
///
/// ```
/// use npy_serde::NpyRecord;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Debug, PartialEq, Serialize, Deserialize, NpyRecord)]
/// struct Rec { id: i64, x: f64, v: [f32; 3] }
///
/// let rows = vec![Rec { id: 1, x: 0.5, v: [1.0, 2.0, 3.0] }, Rec { id: 2, x: -1.5, v: [0.0; 3] }];
/// let file = npy_serde::to_vec(&rows)?;
/// let back: Vec<Rec> = npy_serde::from_reader(file.as_slice())?;
/// assert_eq!(back, rows);
/// # Ok::<(), npy_serde::Error>(())
/// ```
///
/// `reader` is read in large blocks; wrapping it in a `BufReader` gains nothing.
pub fn from_reader<R: Read, T: DeserializeOwned + NpyRecord>(reader: R) -> Result<Vec<T>> {
    ReaderBuilder::new().from_reader(reader)
}

/// [`from_reader`] for a whole `.npy` file in memory. Arrays of 16 MiB and more are decoded on
/// all cores (feature `parallel`, [`ReaderBuilder::parallel`]), with the same values and errors.
pub fn from_slice<'de, T: Deserialize<'de> + NpyRecord + Send>(bytes: &'de [u8]) -> Result<Vec<T>> {
    ReaderBuilder::new().from_slice(bytes)
}

/// [`from_reader`] for the `.npy` file at `path`: the `Vec` is allocated once at its final
/// size and, from 4 MiB, backed by huge pages as NumPy does; arrays of 16 MiB and more are read
/// and decoded on all cores (feature `parallel`, [`ReaderBuilder::parallel`]).
///
/// ```
/// # use npy_serde::NpyRecord;
/// # use serde::{Deserialize, Serialize};
/// #[derive(Serialize, Deserialize, NpyRecord)]
/// struct Rec { id: i64, x: f64 }
///
/// # let path = std::env::temp_dir().join(format!("from-path-{}.npy", std::process::id()));
/// npy_serde::to_path(&path, &[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
/// let recs: Vec<Rec> = npy_serde::from_path(&path)?;
/// assert_eq!(recs[1].id, 2);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn from_path<P: AsRef<Path>, T: DeserializeOwned + NpyRecord + Send>(
    path: P,
) -> Result<Vec<T>> {
    ReaderBuilder::new().from_path(path)
}

/// [`from_reader`] for any `Deserialize` element type (`String`, `&str`, tuples, [`Value`],
/// a struct that only derives `Deserialize`): every element into a `Vec<T>` allocated once,
/// in logical C order, leaving the reader just after the array.
///
/// The same values and errors as [`from_reader`], which is several times faster on records for
/// types that also derive `NpyRecord`. From a plain reader, whose data is not known to exist,
/// the `Vec` grows as elements arrive.
///
/// ```
/// # use serde::Deserialize;
/// #[derive(Deserialize)]
/// struct Point { x: f64, y: f32 }
/// # let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
/// # let dict = "{'descr': [('x', '<f8'), ('y', '<f4')], 'fortran_order': False, 'shape': (2,), }";
/// # file.extend_from_slice(dict.as_bytes());
/// # file.resize(127, b' ');
/// # file.push(b'\n');
/// # for (x, y) in [(1.5f64, 2.5f32), (3.0, 4.0)] {
/// #     file.extend_from_slice(&x.to_le_bytes());
/// #     file.extend_from_slice(&y.to_le_bytes());
/// # }
/// # let reader = std::io::Cursor::new(file);
/// let points: Vec<Point> = npy_serde::from_reader_serde(reader)?;
/// assert_eq!((points[1].x, points[1].y), (3.0, 4.0));
/// # Ok::<(), npy_serde::Error>(())
/// ```
///
/// [`Value`]: crate::Value
pub fn from_reader_serde<R: Read, T: DeserializeOwned>(reader: R) -> Result<Vec<T>> {
    ReaderBuilder::new().from_reader_serde(reader)
}

/// [`from_reader_serde`] for a whole `.npy` file in memory; `T` may borrow `&str` and `&[u8]`
/// from `S` fields. Arrays of 16 MiB and more are decoded on all cores (feature `parallel`,
/// [`ReaderBuilder::parallel`]), with the same values and errors.
pub fn from_slice_serde<'de, T: Deserialize<'de> + Send>(bytes: &'de [u8]) -> Result<Vec<T>> {
    ReaderBuilder::new().from_slice_serde(bytes)
}

/// [`from_reader_serde`] for the `.npy` file at `path`, the `Vec` allocated once at its final
/// size (huge pages from 4 MiB). Arrays of 16 MiB and more are read and decoded on all cores
/// (feature `parallel`, [`ReaderBuilder::parallel`]), with the same values and errors.
pub fn from_path_serde<P: AsRef<Path>, T: DeserializeOwned + Send>(path: P) -> Result<Vec<T>> {
    ReaderBuilder::new().from_path_serde(path)
}

/// Deserializes the whole array from `reader` as one serde value shaped like
/// `ndarray.tolist()` (for a `Vec` of elements, [`from_reader`] is several times faster: through
/// this door `Vec<T>` goes through serde's `Vec` visitor, which grows it element by element).
///
/// `T` follows the shape: `Vec<T>` for 1-D, `Vec<Vec<f32>>` or `Vec<[f32; 3]>` for 2-D, a bare
/// value for 0-d. The reader is left just after the array's data (so arrays saved back to back
/// read in turn); it is read in large blocks, so wrapping it in a `BufReader` gains nothing.
pub fn deserialize_reader<R: Read, T: DeserializeOwned>(reader: R) -> Result<T> {
    ReaderBuilder::new().deserialize_reader(reader)
}

/// Deserializes the whole `.npy` file in `bytes` as one serde value shaped like
/// `ndarray.tolist()`, which may borrow `&str` and `&[u8]` from `S` fields (for a `Vec` of
/// elements, [`from_slice`] / [`from_slice_serde`] are several times faster: `Vec<T>` through
/// this door goes through serde's `Vec` visitor). Bytes after the array are ignored.
pub fn deserialize_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    ReaderBuilder::new().deserialize_slice(bytes)
}

/// Deserializes the `.npy` file at `path` as one serde value shaped like `ndarray.tolist()`
/// (for a `Vec` of elements, [`from_path`] / [`from_path_serde`] are 5-10x faster: `Vec<T>`
/// through this door goes through serde's `Vec` visitor, which cannot know the length).
pub fn deserialize_path<P: AsRef<Path>, T: DeserializeOwned>(path: P) -> Result<T> {
    ReaderBuilder::new().deserialize_path(path)
}

impl ReaderBuilder {
    /// [`deserialize_reader`] with these options. An object array (with
    /// [`allow_pickle_data`](ReaderBuilder::allow_pickle_data)) is read to the stream's end:
    /// its data is one pickle, read whole.
    pub fn deserialize_reader<R: Read, T: DeserializeOwned>(&self, mut reader: R) -> Result<T> {
        match read_contents(&mut reader, &self.limits)? {
            Contents::Typed(header) => self.from_reader_with_header(reader, &header),
            Contents::Objects(h) => {
                let data = objects::pickle_of(&h, self, reader)?;
                objects::whole(self.read_objects_with_header(&h, &data)?)
            }
        }
    }

    /// [`deserialize_reader`] for an array whose header was already read from `reader` (positioned
    /// at the first data byte): a `.npz` member.
    // Named as the door it continues (`deserialize_reader`), which takes `&self` as well.
    #[allow(clippy::wrong_self_convention)]
    pub(crate) fn from_reader_with_header<R: Read, T: DeserializeOwned>(
        &self,
        reader: R,
        header: &ParsedHeader,
    ) -> Result<T> {
        self.read_data(reader, header, Whole::<T>(PhantomData), false)
    }

    /// [`from_reader_serde`] with these options. An object array (with
    /// [`allow_pickle_data`](ReaderBuilder::allow_pickle_data)) is read to the stream's end:
    /// its data is one pickle, read whole.
    pub fn from_reader_serde<R: Read, T: DeserializeOwned>(&self, mut reader: R) -> Result<Vec<T>> {
        let header = match read_contents(&mut reader, &self.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                let data = objects::pickle_of(&h, self, reader)?;
                return self.object_elements_of(&h, &data);
            }
        };
        // The data may not exist: reserve only as elements arrive.
        self.read_data(reader, &header, Elements::<T>::plain(), false)
    }

    /// [`from_slice_serde`] with these options.
    pub fn from_slice_serde<'de, T: Deserialize<'de> + Send>(
        &self,
        bytes: &'de [u8],
    ) -> Result<Vec<T>> {
        let header = match parse_contents(bytes, &self.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                return self.object_elements_of(&h, pickle_in(bytes, &h));
            }
        };
        let data = data_of(bytes, &header, self)?;
        if let Some(v) = self.vec_fast::<T>(&header, data) {
            return Ok(v);
        }
        vec_from_data(data, true, &header, self, Elements::plain())
    }

    /// [`from_path_serde`] with these options.
    pub fn from_path_serde<P: AsRef<Path>, T: DeserializeOwned + Send>(
        &self,
        path: P,
    ) -> Result<Vec<T>> {
        let (file, header) = match open_contents(path.as_ref(), self)? {
            (file, Contents::Typed(h)) => (file, h),
            (file, Contents::Objects(h)) => {
                let data = objects::pickle_of(&h, self, file)?;
                return self.object_elements_of(&h, &data);
            }
        };
        let h = &header.header;
        let (count, len) = self.check(h)?;
        if parallel::worth(len, self) && !needs_walk(h) {
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            let v = parallel::planned_from_file(&file, header.data_offset, &h.dtype, count, self);
            if let Some(v) = v {
                return Ok(v);
            }
        }
        // Positional reads left the file at the first data byte.
        // The file holds all the data (checked): reserve for all of it at once.
        self.read_data(file, &header, Elements::<T>::plain(), true)
    }

    /// [`from_reader`] with these options.
    pub fn from_reader<R: Read, T: DeserializeOwned + NpyRecord>(
        &self,
        mut reader: R,
    ) -> Result<Vec<T>> {
        let header = read_header(&mut reader, &self.limits)?;
        self.records_after_header(reader, &header)
    }

    /// [`from_reader`] for a reader positioned just after `header`.
    fn records_after_header<R: Read, T: DeserializeOwned + NpyRecord>(
        &self,
        reader: R,
        header: &ParsedHeader,
    ) -> Result<Vec<T>> {
        match bulk::plain::<T>(&header.header) {
            Some(proof) => bulk::from_reader(self, proof, reader, header, false),
            None => self.read_data(reader, header, Elements::<T>::records(), false),
        }
    }

    /// [`from_slice`] with these options.
    pub fn from_slice<'de, T: Deserialize<'de> + NpyRecord + Send>(
        &self,
        bytes: &'de [u8],
    ) -> Result<Vec<T>> {
        let header = parse_header(bytes, &self.limits)?;
        self.records_in_slice(bytes, &header)
    }

    /// [`from_slice`] for the file `bytes` whose header is `header` (also a chunk of data
    /// alone, with a header of `data_offset` 0: npy-remote).
    #[doc(hidden)]
    pub fn records_in_slice<'de, T: Deserialize<'de> + NpyRecord + Send>(
        &self,
        bytes: &'de [u8],
        header: &ParsedHeader,
    ) -> Result<Vec<T>> {
        let data = data_of(bytes, header, self)?;
        if let Some(v) = self.records_fast::<T>(header, data) {
            return Ok(v);
        }
        vec_from_data(data, true, header, self, Elements::records())
    }

    /// [`from_path`] with these options.
    pub fn from_path<P: AsRef<Path>, T: DeserializeOwned + NpyRecord + Send>(
        &self,
        path: P,
    ) -> Result<Vec<T>> {
        let (file, header) = open_checked(path.as_ref(), self)?;
        self.records_from_file(file, &header)
    }

    /// [`from_path`] for an opened, checked file positioned just after `header`.
    fn records_from_file<T: DeserializeOwned + NpyRecord + Send>(
        &self,
        file: std::fs::File,
        header: &ParsedHeader,
    ) -> Result<Vec<T>> {
        let h = &header.header;
        let (count, len) = self.check(h)?;
        let plain = bulk::plain::<T>(h);
        if parallel::worth(len, self) && !needs_walk(h) {
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            // Plain data: one copy on all cores, positional reads straight into the result
            // (the exact tier's decode copies twice: measured in the same runs on a loaded
            // 2-core machine, 0.77x of one copy on one core for it, 0.92x for this).
            let v = match plain {
                Some(proof) => bulk::from_file_parallel(proof, &file, header.data_offset, count),
                None => parallel::from_file(&file, header.data_offset, &h.dtype, count),
            };
            if let Some(v) = v {
                return Ok(v);
            }
        }
        // Positional reads left the file at the first data byte.
        if let Some(proof) = plain {
            return bulk::from_reader(self, proof, file, header, true);
        }
        self.read_data(file, header, Elements::<T>::records(), true)
    }

    /// [`deserialize_slice`] with these options.
    pub fn deserialize_slice<'de, T: Deserialize<'de>>(&self, bytes: &'de [u8]) -> Result<T> {
        let header = match parse_contents(bytes, &self.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                return objects::whole(self.read_objects_with_header(&h, pickle_in(bytes, &h))?);
            }
        };
        deserialize_data(data_of(bytes, &header, self)?, true, &header, self)
    }

    /// [`deserialize_path`] with these options.
    pub fn deserialize_path<P: AsRef<Path>, T: DeserializeOwned>(&self, path: P) -> Result<T> {
        let (file, header) = match open_contents(path.as_ref(), self)? {
            (file, Contents::Typed(h)) => (file, h),
            (file, Contents::Objects(h)) => {
                let data = objects::pickle_of(&h, self, file)?;
                return objects::whole(self.read_objects_with_header(&h, &data)?);
            }
        };
        self.from_reader_with_header(file, &header)
    }

    /// A streaming reader yielding the array's elements one at a time, in logical C order.
    pub fn records_serde<R: Read, T: DeserializeOwned>(
        &self,
        reader: R,
    ) -> Result<RecordReader<R, T, General>> {
        RecordReader::with_builder(reader, self)
    }

    /// A streaming reader yielding the array's elements one at a time, in logical C order, for
    /// a type that knows its dtype: [`RecordReader::new_with`].
    pub fn records<R: Read, T: DeserializeOwned + NpyRecord>(
        &self,
        reader: R,
    ) -> Result<RecordReader<R, T>> {
        RecordReader::new_with(reader, self)
    }
}

/// The elements of an array in *storage* order, with the file's header: for a Fortran-order
/// array, column-major, so that `crate::ndarray` builds a Fortran-layout array around them
/// without a transposing copy. The same tiers (parallel, one copy, exact, general) as the
/// `from_*` doors, values and errors; an error's record index counts in storage order.
#[cfg(feature = "ndarray")]
impl ReaderBuilder {
    /// `from_path` in storage order.
    pub(crate) fn stored_from_path<T: DeserializeOwned + NpyRecord + Send>(
        &self,
        path: &Path,
    ) -> Result<(crate::header::Header, Vec<T>)> {
        let (file, header) = open_checked(path, self)?;
        let v = self.records_from_file(file, &storage_order(&header))?;
        Ok((header.header, v))
    }

    /// `from_reader` in storage order.
    pub(crate) fn stored_from_reader<R: Read, T: DeserializeOwned + NpyRecord>(
        &self,
        mut reader: R,
    ) -> Result<(crate::header::Header, Vec<T>)> {
        let header = read_header(&mut reader, &self.limits)?;
        self.stored_after_header(reader, &header)
    }

    /// `from_reader` in storage order, for a reader positioned just after `header`
    /// (a `.npz` member).
    pub(crate) fn stored_after_header<R: Read, T: DeserializeOwned + NpyRecord>(
        &self,
        reader: R,
        header: &ParsedHeader,
    ) -> Result<(crate::header::Header, Vec<T>)> {
        let v = self.records_after_header(reader, &storage_order(header))?;
        Ok((header.header.clone(), v))
    }

    /// `from_slice` in storage order.
    pub(crate) fn stored_from_slice<'de, T: Deserialize<'de> + NpyRecord + Send>(
        &self,
        bytes: &'de [u8],
    ) -> Result<(crate::header::Header, Vec<T>)> {
        let header = parse_header(bytes, &self.limits)?;
        let v = self.records_in_slice(bytes, &storage_order(&header))?;
        Ok((header.header, v))
    }
}

/// A header whose logical C order is `header`'s storage order: a Fortran-order array of shape
/// `(a, b, c)` is stored as the C-order array of shape `(c, b, a)`.
#[cfg(feature = "ndarray")]
fn storage_order(header: &ParsedHeader) -> ParsedHeader {
    let mut stored = header.clone();
    if needs_walk(&header.header) {
        stored.header.fortran_order = false;
        stored.header.shape.reverse();
    }
    stored
}

impl ReaderBuilder {
    /// The one-copy and parallel paths of `from_slice` / `MmapArray::to_vec` for
    /// complete data in memory; `None` when neither applies (or the parallel one missed).
    pub(crate) fn records_fast<'de, T: Deserialize<'de> + NpyRecord + Send>(
        &self,
        header: &ParsedHeader,
        data: &'de [u8],
    ) -> Option<Vec<T>> {
        let h = &header.header;
        // Large data on all cores first, plain data too: from a memory map, the page faults
        // of the source and of the result are then taken on both cores (one copy on one core
        // ran W1 at 0.79x np.load, the parallel decode at 1.5x).
        if parallel::worth(data.len() as u64, self) && !needs_walk(h) {
            let count = usize::try_from(h.count().ok()?).ok()?;
            if let Some(v) = parallel::from_bytes(data, &h.dtype, count) {
                return Some(v);
            }
        }
        bulk::plain::<T>(h).and_then(|p| bulk::from_bytes(p, data))
    }

    /// The parallel path of `from_slice_serde` / `MmapArray::to_vec` (the runtime-planned tier
    /// on all cores) for complete data in memory; `None` when it does not apply or missed.
    pub(crate) fn vec_fast<'de, T: Deserialize<'de> + Send>(
        &self,
        header: &ParsedHeader,
        data: &'de [u8],
    ) -> Option<Vec<T>> {
        let h = &header.header;
        if !parallel::worth(data.len() as u64, self) || needs_walk(h) {
            return None;
        }
        let count = usize::try_from(h.count().ok()?).ok()?;
        parallel::planned_from_bytes(data, &h.dtype, count, self)
    }
}

/// True if the elements' storage order is not their logical order (Fortran order with more
/// than one axis longer than 1).
fn needs_walk(h: &crate::header::Header) -> bool {
    h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1
}

#[cfg(test)]
mod tests;

/// The pickle of an object array in a whole-file slice: the bytes after its header.
fn pickle_in<'a>(bytes: &'a [u8], h: &ObjectHeader) -> &'a [u8] {
    bytes.get(h.data_offset as usize..).unwrap_or(&[])
}
