//! Zero-copy `ArrayView`s of memory-mapped files: [`MmapArray::view`] and
//! [`MmapArrayMut::view_mut`], the N-d forms of the typed slice views
//! ([`MmapArray::as_slice`]), with the same checks and refusal reasons
//! ([`ErrorKind::View`](crate::ErrorKind::View)).
//!
//! A Fortran-order file is viewed as a Fortran-layout array, which a slice view cannot offer.
//! Calls the typed views' checks and casts (`crate::pod`).

use ::ndarray::{ArrayView, ArrayViewMut, Dimension, ShapeBuilder};

use super::{dim_of, shape_error};
use crate::error::Result;
use crate::header::Header;
use crate::pod::{self, Pod};
use crate::read::MmapArray;
use crate::record::NpyRecord;
use crate::write::MmapArrayMut;

/// The dimension of a view of an array with header `h` (Fortran layout for a Fortran-order
/// file) and `T`'s proof that the data can be seen as `T`s.
fn view_parts<T: NpyRecord, D: Dimension>(h: &Header) -> Result<(::ndarray::Shape<D>, Pod<T>)> {
    let dim = dim_of::<D>(&h.shape)?;
    // Any storage order: the view's strides follow it.
    let proof = pod::check_view::<T>(&h.dtype, &h.shape, false)?;
    Ok((dim.set_f(h.fortran_order), proof))
}

impl MmapArray {
    /// The mapped data in place as an `ArrayView<T, D>` with the file's shape: no copy, no
    /// decoding (`np.load(path, mmap_mode='r')`). Feature `ndarray`.
    ///
    /// `T` must be plain data whose layout is the file's element layout in native byte order,
    /// as for [`as_slice`](Self::as_slice), whose errors this returns; a Fortran-order file is
    /// viewed with Fortran strides. `D` must have the file's number of dimensions (`IxDyn`
    /// takes any), or the error is [`ErrorKind::Dimension`](crate::ErrorKind::Dimension).
    ///
    /// ```
    /// use ndarray::{Array2, Ix2, ShapeBuilder};
    /// # let path = std::env::temp_dir().join(format!("nd-view-{}.npy", std::process::id()));
    /// let a = Array2::from_shape_vec((2, 3).f(), vec![1i32, 2, 3, 4, 5, 6]).unwrap();
    /// npy_serde::ndarray::write_npy(&path, &a)?; // fortran_order: True
    /// let map = npy_serde::MmapArray::open(&path)?;
    /// let v = map.view::<i32, Ix2>()?;
    /// assert_eq!(v, a);
    /// assert!(map.view::<i64, Ix2>().is_err()); // the dtype is <i4
    /// # drop(map);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn view<T: NpyRecord, D: Dimension>(&self) -> Result<ArrayView<'_, T, D>> {
        let (shape, proof) = view_parts::<T, D>(self.header())?;
        let slice = self.cast(proof)?;
        ArrayView::from_shape(shape, slice).map_err(|e| shape_error(self.shape(), e))
    }
}

impl MmapArrayMut {
    /// The mapped data in place as an `ArrayViewMut<T, D>`: writes go to the file (or to the
    /// private copy of [`open_cow`](Self::open_cow)). The checks are those of
    /// [`MmapArray::view`]. Feature `ndarray`.
    ///
    /// ```
    /// use ndarray::Ix2;
    /// # let path = std::env::temp_dir().join(format!("nd-view-mut-{}.npy", std::process::id()));
    /// let mut map = npy_serde::MmapArrayMut::create::<f32>(&path, &[2, 3])?;
    /// map.view_mut::<f32, Ix2>()?.row_mut(1).fill(7.0);
    /// map.flush()?;
    /// # drop(map);
    /// let a: ndarray::Array2<f32> = npy_serde::ndarray::read_npy(&path)?;
    /// assert_eq!(a, ndarray::array![[0., 0., 0.], [7., 7., 7.]]);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn view_mut<T: NpyRecord, D: Dimension>(&mut self) -> Result<ArrayViewMut<'_, T, D>> {
        let (shape, proof) = view_parts::<T, D>(self.header())?;
        let dims = self.shape().to_vec();
        let offset = self.data_offset();
        let slice = pod::cast_mut(proof, self.data_mut(), offset)?;
        ArrayViewMut::from_shape(shape, slice).map_err(|e| shape_error(&dims, e))
    }
}
