//! Arrays of the [`ndarray`](https://docs.rs/ndarray) crate read from and written to `.npy`
//! files (feature `ndarray`).
//!
//! The names are `ndarray-npy`'s, so switching is a one-line change: [`read_npy`] and
//! [`write_npy`] for paths, [`ReadNpyExt`] and [`WriteNpyExt`] for readers and writers, plus
//! [`NpzArchive::read_ndarray`](crate::NpzArchive::read_ndarray) /
//! [`NpzWriter::add_ndarray`](crate::NpzWriter::add_ndarray) for `.npz` members and
//! [`MmapArray::view`](crate::MmapArray::view) /
//! [`MmapArrayMut::view_mut`](crate::MmapArrayMut::view_mut) for zero-copy views of a mapped
//! file. Limits for untrusted files and other writing options go through
//! [`ReaderBuilder::ndarray_from_path`] (`_reader`, `_slice`) and
//! [`WriterBuilder::write_ndarray`] ([`ndarray_to_path`](WriterBuilder::ndarray_to_path)).
//!
//! ```
//! use ndarray::{array, s, Array2, ArrayD};
//! use npy_serde::ndarray::{read_npy, write_npy, ReadNpyExt, WriteNpyExt};
//!
//! # let dir = std::env::temp_dir().join(format!("nd-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("a.npy");
//! let a: Array2<f32> = array![[1., 2., 3.], [4., 5., 6.]];
//! write_npy(&path, &a)?; // the bytes of np.save(path, a)
//! let b: Array2<f32> = read_npy(&path)?;
//! assert_eq!(a, b);
//! // Any rank, and any element type the crate reads: `ArrayD<T>` takes the file's shape.
//! let d: ArrayD<f64> = read_npy(&path)?; // f4 -> f64 is exact, so allowed
//! assert_eq!(d.shape(), [2, 3]);
//!
//! // Readers and writers; a strided view is written in logical order, as np.save does.
//! let mut bytes = Vec::new();
//! a.slice(s![.., ..;2]).write_npy(&mut bytes)?;
//! let c = Array2::<f32>::read_npy(bytes.as_slice())?;
//! assert_eq!(c, array![[1., 3.], [4., 6.]]);
//!
//! // The wrong number of dimensions is an error naming both.
//! let err = read_npy::<_, ndarray::Array3<f32>>(&path).unwrap_err();
//! assert_eq!(err.to_string(), "expected a 3-D array, the file's shape is (2, 3)");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Elements, layouts and bytes
//!
//! Elements are the types the crate reads and writes as records (`T: NpyRecord`): `bool`, the
//! integers, `f32`, `f64`, `half::f16` (feature `half`), `num_complex::Complex` (feature `complex`), `[T; N]`
//! and `#[derive(NpyRecord)]` structs, so `Array1<Rec>` and `Array2<Rec>` hold record arrays.
//! Reading converts what [`from_path`](crate::from_path) converts (a
//! big-endian file, a wider type); plain data in native byte order is read with one copy
//! straight into the array's buffer, in parallel for large files.
//!
//! A Fortran-order file becomes a Fortran-layout array (`a.t().is_standard_layout()`) with its
//! elements where the file has them: no transposing copy. When reading fails on an element,
//! the error's record index counts in that storage order.
//!
//! Writing picks the order as `np.save` does: a C-contiguous array (`is_standard_layout`) is
//! written as it is; an array that is Fortran-contiguous and not C-contiguous is written in
//! its memory order with `fortran_order: True`; anything else (a strided or reversed view, a
//! permutation of the axes) in logical C order. The bytes are those of `np.save` of the same
//! array. An element type with a subarray dtype (`[f32; 3]`) adds its axes at the end of the
//! shape, as NumPy folds them, and is always written in C order.
//!
//! # How this module is built
//!
//! | file | owns | calls |
//! |---|---|---|
//! | `mod.rs` | [`FromNpy`], the doors and the extension traits; the write-order choice | `crate::read` (its storage-order entry points), `crate::write` |
//! | `view.rs` | `MmapArray::view`, `MmapArrayMut::view_mut` | `crate::pod` (the typed views' checks), `crate::read`, `crate::write` |
//!
//! `crate::npz` calls this module for its `read_ndarray`/`add_ndarray` members.

use std::borrow::Cow;
use std::io::{Read, Write};
use std::path::Path;

use ::ndarray::{Array, ArrayBase, Data, Dimension, ShapeBuilder};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::pyliteral::repr_shape;
use crate::read::ReaderBuilder;
use crate::record::NpyRecord;
use crate::write::WriterBuilder;

mod view;

/// An array type that can be read from a `.npy` file: `Array<T, D>` (so `Array1<T>`,
/// `Array2<T>`, ..., `ArrayD<T>`) for every `T: DeserializeOwned + NpyRecord + Send`.
pub trait FromNpy: Sized {
    /// The element type.
    type Elem: DeserializeOwned + NpyRecord + Send;

    /// The array of a file with this `header` whose elements, in *storage* order (column-major
    /// for a Fortran-order file), are `elements`. Fails if the number of dimensions is not the
    /// array type's ([`ErrorKind::Dimension`]).
    fn from_elements(header: &Header, elements: Vec<Self::Elem>) -> Result<Self>;
}

impl<T: DeserializeOwned + NpyRecord + Send, D: Dimension> FromNpy for Array<T, D> {
    type Elem = T;

    fn from_elements(header: &Header, elements: Vec<T>) -> Result<Self> {
        let dim = dim_of::<D>(&header.shape)?;
        Array::from_shape_vec(dim.set_f(header.fortran_order), elements)
            .map_err(|e| shape_error(&header.shape, e))
    }
}

/// The dimension of an array of `shape`, as `D`; a [`ErrorKind::Dimension`] error if `D` has a
/// fixed number of axes that is not `shape`'s.
pub(crate) fn dim_of<D: Dimension>(shape: &[u64]) -> Result<D> {
    if let Some(n) = D::NDIM
        && n != shape.len()
    {
        return Err(Error::new(ErrorKind::Dimension {
            expected: n,
            shape: repr_shape(shape),
        }));
    }
    let mut dim = D::zeros(shape.len());
    for (d, &len) in dim.slice_mut().iter_mut().zip(shape) {
        *d = usize::try_from(len)
            .map_err(|_| Error::overflow(format!("the ndarray shape {}", repr_shape(shape))))?;
    }
    Ok(dim)
}

/// ndarray refused a shape (more than `isize::MAX` elements or bytes, possible for an empty
/// array with huge axes).
pub(crate) fn shape_error(shape: &[u64], e: ::ndarray::ShapeError) -> Error {
    Error::overflow(format!("the ndarray shape {} ({e})", repr_shape(shape)))
}

/// Reads the `.npy` file at `path` into the array type the caller names (default limits).
///
/// ```
/// # use ndarray::{Array1, ArrayD};
/// # let path = std::env::temp_dir().join(format!("nd-read-{}.npy", std::process::id()));
/// npy_serde::to_path(&path, &[1.5f64, 2.5])?;
/// let a: Array1<f64> = npy_serde::ndarray::read_npy(&path)?;
/// let d = npy_serde::ndarray::read_npy::<_, ArrayD<f64>>(&path)?;
/// assert_eq!(a.into_dyn(), d);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn read_npy<P: AsRef<Path>, A: FromNpy>(path: P) -> Result<A> {
    ReaderBuilder::new().ndarray_from_path(path)
}

/// Writes `array` to a new `.npy` file at `path`, with the bytes `np.save` writes for the same
/// array (see the [module docs](self) for the order chosen).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("nd-write-{}.npy", std::process::id()));
/// let a = ndarray::Array2::<u16>::zeros((3, 4).f()); // Fortran layout
/// # use ndarray::ShapeBuilder;
/// npy_serde::ndarray::write_npy(&path, &a)?;
/// assert!(npy_serde::MmapArray::open(&path)?.fortran_order());
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn write_npy<P, S, D>(path: P, array: &ArrayBase<S, D>) -> Result<()>
where
    P: AsRef<Path>,
    S: Data,
    S::Elem: Serialize + NpyRecord + Sync + Clone,
    D: Dimension,
{
    WriterBuilder::new().ndarray_to_path(path, array)
}

/// Reading an array type from a reader or bytes: `Array2::<f32>::read_npy(reader)`.
pub trait ReadNpyExt: Sized {
    /// Reads one `.npy` array from `reader` (default limits), leaving the reader just after
    /// its data.
    fn read_npy<R: Read>(reader: R) -> Result<Self>;

    /// Reads the array of a whole `.npy` file in memory (default limits).
    fn read_npy_slice(bytes: &[u8]) -> Result<Self>;
}

impl<A: FromNpy> ReadNpyExt for A {
    fn read_npy<R: Read>(reader: R) -> Result<Self> {
        ReaderBuilder::new().ndarray_from_reader(reader)
    }

    fn read_npy_slice(bytes: &[u8]) -> Result<Self> {
        ReaderBuilder::new().ndarray_from_slice(bytes)
    }
}

/// Writing an array to a writer: `array.write_npy(writer)`, the bytes of `np.save`.
pub trait WriteNpyExt {
    /// Writes the array as a `.npy` file to `writer` (see the [module docs](self) for the
    /// order chosen). `writer` gets a few large writes; a `BufWriter` gains nothing.
    fn write_npy<W: Write>(&self, writer: W) -> Result<()>;
}

impl<S, D> WriteNpyExt for ArrayBase<S, D>
where
    S: Data,
    S::Elem: Serialize + NpyRecord + Sync + Clone,
    D: Dimension,
{
    fn write_npy<W: Write>(&self, writer: W) -> Result<()> {
        WriterBuilder::new().write_ndarray(writer, self)
    }
}

impl ReaderBuilder {
    /// [`read_npy`] with these options (limits for untrusted files, parallel decoding).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("nd-limits-{}.npy", std::process::id()));
    /// npy_serde::to_path(&path, &vec![0u8; 4096])?;
    /// let rb = npy_serde::ReaderBuilder::new().max_data_size(1024);
    /// let err = rb.ndarray_from_path::<_, ndarray::Array1<u8>>(&path).unwrap_err();
    /// assert_eq!(err.kind().code(), "limit_exceeded");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn ndarray_from_path<P: AsRef<Path>, A: FromNpy>(&self, path: P) -> Result<A> {
        let (header, v) = self.stored_from_path(path.as_ref())?;
        A::from_elements(&header, v)
    }

    /// [`ReadNpyExt::read_npy`] with these options.
    pub fn ndarray_from_reader<R: Read, A: FromNpy>(&self, reader: R) -> Result<A> {
        let (header, v) = self.stored_from_reader(reader)?;
        A::from_elements(&header, v)
    }

    /// [`ReadNpyExt::read_npy_slice`] with these options.
    pub fn ndarray_from_slice<A: FromNpy>(&self, bytes: &[u8]) -> Result<A> {
        let (header, v) = self.stored_from_slice(bytes)?;
        A::from_elements(&header, v)
    }
}

impl WriterBuilder {
    /// [`WriteNpyExt::write_npy`] with these options: byte order, dtype (values converted and
    /// checked), header version, buffer size. The shape and the order are the array's (this
    /// builder's [`shape`](Self::shape) and [`fortran_order`](Self::fortran_order) are not
    /// used).
    ///
    /// ```
    /// use npy_serde::{ByteOrder, WriterBuilder};
    /// let a = ndarray::array![[1.0f64, 2.0], [3.0, 4.0]];
    /// let mut bytes = Vec::new();
    /// WriterBuilder::new().byte_order(ByteOrder::Big).write_ndarray(&mut bytes, &a)?;
    /// let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
    /// assert_eq!(h.header.dtype.descr(), "'>f8'");
    /// // Read back (converted to native byte order).
    /// use npy_serde::ndarray::ReadNpyExt;
    /// assert_eq!(ndarray::Array2::<f64>::read_npy(bytes.as_slice())?, a);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn write_ndarray<W, S, D>(&self, writer: W, array: &ArrayBase<S, D>) -> Result<()>
    where
        W: Write,
        S: Data,
        S::Elem: Serialize + NpyRecord + Sync + Clone,
        D: Dimension,
    {
        let (wb, elements) = self.for_array(array);
        wb.to_writer(writer, &elements)
    }

    /// [`write_npy`] with these options (see [`write_ndarray`](Self::write_ndarray)).
    pub fn ndarray_to_path<P, S, D>(&self, path: P, array: &ArrayBase<S, D>) -> Result<()>
    where
        P: AsRef<Path>,
        S: Data,
        S::Elem: Serialize + NpyRecord + Sync + Clone,
        D: Dimension,
    {
        let (wb, elements) = self.for_array(array);
        wb.to_path(path, &elements)
    }

    /// These options with `array`'s shape and `np.save`'s order, and the elements in that
    /// order: borrowed when the array is contiguous in it, gathered otherwise.
    fn for_array<'a, S, D>(&self, array: &'a ArrayBase<S, D>) -> (WriterBuilder, Cow<'a, [S::Elem]>)
    where
        S: Data,
        S::Elem: NpyRecord + Clone,
        D: Dimension,
    {
        let mut shape: Vec<u64> = array.shape().iter().map(|&d| d as u64).collect();
        let sub = sub_shape(&S::Elem::dtype());
        shape.extend_from_slice(&sub);
        let mut wb = self.clone().shape(shape).fortran_order(false);
        // np.save: `fortran_order = a.flags.f_contiguous and not a.flags.c_contiguous`, the
        // data then in memory order; any other array in logical C order.
        if let Some(c) = array.as_slice() {
            return (wb, Cow::Borrowed(c));
        }
        if sub.is_empty()
            && array.ndim() > 1
            && let Some(f) = array.view().reversed_axes().to_slice()
        {
            wb = wb.fortran_order(true);
            wb.stored_order = true;
            return (wb, Cow::Borrowed(f));
        }
        (wb, Cow::Owned(array.iter().cloned().collect()))
    }
}

/// The axes a subarray dtype adds at the end of the shape (`[[f32; 3]; 2]` adds `(2, 3)`).
fn sub_shape(dtype: &DType) -> Vec<u64> {
    let mut sub = Vec::new();
    let mut d = dtype;
    while let DType::Array(base, s) = d {
        sub.extend_from_slice(s);
        d = base;
    }
    sub
}
