//! `scipy.sparse` matrices as `.npz` archives (feature `sprs`): [`NpzArchive::load_sparse`]
//! reads what `scipy.sparse.save_npz` writes, in each of its formats (csr, csc, coo, bsr, dia),
//! into [`sprs`] matrices; [`NpzWriter::save_sparse`] and
//! [`NpzWriter::save_sparse_triplets`] write [`CsMat`](sprs::CsMat) (CSR or CSC) and
//! [`TriMat`](sprs::TriMat) matrices as archives `scipy.sparse.load_npz` reads.
//!
//! scipy's archive holds `format` (`b'csr'`, ...), `shape` and `data`, plus `indices` and
//! `indptr` (csr, csc, bsr), `row` and `col` (coo; `coords` in newer scipy for N-d) or
//! `offsets` (dia). Index arrays may be `int32` or `int64`; values any number dtype `N` reads
//! (`f32`, `f64`, integers, `Complex` with feature `complex`).
//!
//! Every structural property is checked before a `sprs` constructor sees the arrays (which
//! panic or fail on bad input): lengths, `indptr` starting at 0, never decreasing and ending at
//! the number of stored values, indices within the shape, block and diagonal shapes. A
//! malformed archive is an [`ErrorKind::InvalidValue`](crate::ErrorKind::InvalidValue) error
//! saying what is wrong, never a panic.
//!
//! ```
//! use npy_serde::npz::{NpzArchive, NpzWriter, SparseMatrix};
//! use sprs::{CsMat, TriMat};
//!
//! let mut tri = TriMat::new((3, 4));
//! tri.add_triplet(0, 1, 2.5f64);
//! tri.add_triplet(2, 3, -1.0);
//! let csr: CsMat<f64> = tri.to_csr();
//!
//! // scipy.sparse.save_npz(f, csr) / load_npz(f)
//! let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
//! w.save_sparse(&csr)?;
//! let bytes = w.finish()?.into_inner();
//! let m = NpzArchive::from_bytes(&bytes)?.load_sparse::<f64>()?;
//! assert!(matches!(m, SparseMatrix::Csr(_)));
//! assert_eq!(m.into_csr(), csr);
//! # Ok::<(), npy_serde::Error>(())
//! ```

use std::io::{Read, Seek, Write};
use std::ops::{Add, Deref};

use serde::de::DeserializeOwned;
use serde::Serialize;
use sprs::{CsMat, CsMatBase, SpIndex, TriMat, TriMatBase};

use super::read::NpzArchive;
use super::write::NpzWriter;
use crate::error::{Error, Result};
use crate::record::NpyRecord;
use crate::value::{Array, Value};

/// A matrix read from a `scipy.sparse.save_npz` archive, in the `sprs` form closest to the
/// archive's format: csr and bsr (blocks expanded) as CSR, csc as CSC, coo and dia (each
/// stored diagonal element a triplet) as triplets.
#[derive(Debug, PartialEq)]
pub enum SparseMatrix<N> {
    /// A csr (or bsr) matrix.
    Csr(CsMat<N>),
    /// A csc matrix.
    Csc(CsMat<N>),
    /// A coo (or dia) matrix; duplicates are kept, and summed by conversions, as in scipy.
    Coo(TriMat<N>),
}

impl<N: Clone + Add<Output = N>> SparseMatrix<N> {
    /// The matrix in CSR form (converted if needed; duplicate entries summed).
    pub fn into_csr(self) -> CsMat<N>
    where
        N: Default,
    {
        match self {
            SparseMatrix::Csr(m) => m,
            SparseMatrix::Csc(m) => m.to_other_storage(),
            SparseMatrix::Coo(t) => t.to_csr(),
        }
    }

    /// The matrix in CSC form (converted if needed; duplicate entries summed).
    pub fn into_csc(self) -> CsMat<N>
    where
        N: Default,
    {
        match self {
            SparseMatrix::Csr(m) => m.to_other_storage(),
            SparseMatrix::Csc(m) => m,
            SparseMatrix::Coo(t) => t.to_csc(),
        }
    }

    /// `(rows, columns)`.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            SparseMatrix::Csr(m) | SparseMatrix::Csc(m) => (m.rows(), m.cols()),
            SparseMatrix::Coo(t) => (t.rows(), t.cols()),
        }
    }
}

fn bad(format: &str, msg: impl std::fmt::Display) -> Error {
    Error::invalid_value(format!("scipy.sparse {format} archive: {msg}"))
}

/// One member's elements (C order) and shape.
fn column<R: Read + Seek, T: DeserializeOwned>(
    npz: &mut NpzArchive<R>,
    key: &str,
) -> Result<(Vec<u64>, Vec<T>)> {
    let mut it = npz.records_serde::<T>(key)?;
    let shape = it.header().shape.clone();
    let v = it.by_ref().collect::<Result<Vec<T>>>()?;
    it.finish()?;
    Ok((shape, v))
}

/// An index array as `usize`s, each below `bound` (`what` names it in errors).
fn indices<R: Read + Seek>(
    npz: &mut NpzArchive<R>,
    format: &str,
    key: &str,
    bound: usize,
    what: &str,
) -> Result<Vec<usize>> {
    let (_, raw) = column::<R, i64>(npz, key)?;
    raw.iter()
        .enumerate()
        .map(|(i, &v)| match usize::try_from(v) {
            Ok(u) if u < bound => Ok(u),
            _ => Err(bad(
                format,
                format!(
                    "{key}[{i}] = {v} is not a valid {what} (0 to {})",
                    bound as i64 - 1
                ),
            )),
        })
        .collect()
}

/// `indptr` of a compressed matrix with `outer` rows (columns) and `nnz` stored values.
fn indptr<R: Read + Seek>(
    npz: &mut NpzArchive<R>,
    format: &str,
    outer: usize,
    nnz: usize,
) -> Result<Vec<usize>> {
    let (_, raw) = column::<R, i64>(npz, "indptr")?;
    if raw.len() != outer.saturating_add(1) {
        return Err(bad(
            format,
            format!(
                "indptr has {} entries, the shape needs {} (one more than its {outer} rows or \
                 columns)",
                raw.len(),
                outer.saturating_add(1)
            ),
        ));
    }
    if raw[0] != 0 {
        return Err(bad(format, format!("indptr starts at {}, not 0", raw[0])));
    }
    for (i, w) in raw.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(bad(
                format,
                format!(
                    "indptr is not monotone: indptr[{i}] = {} > indptr[{}] = {}",
                    w[0],
                    i + 1,
                    w[1]
                ),
            ));
        }
    }
    let last = *raw.last().expect("at least one entry");
    if usize::try_from(last).ok() != Some(nnz) {
        return Err(bad(
            format,
            format!("indptr ends at {last}, but there are {nnz} stored indices and values"),
        ));
    }
    Ok(raw.into_iter().map(|v| v as usize).collect())
}

fn dim(format: &str, v: i64) -> Result<usize> {
    usize::try_from(v).map_err(|_| bad(format, format!("the shape has a negative length {v}")))
}

/// True if every outer slice's indices strictly increase (what `sprs` requires; scipy allows
/// unsorted and duplicate indices, which then go through triplets).
fn canonical(indptr: &[usize], indices: &[usize]) -> bool {
    indptr
        .windows(2)
        .all(|w| indices[w[0]..w[1]].windows(2).all(|p| p[0] < p[1]))
}

/// A compressed matrix from checked parts: directly if canonical, else through triplets
/// (duplicates summed, as scipy's `toarray` does).
fn compressed<N: Clone + Add<Output = N>>(
    csr: bool,
    shape: (usize, usize),
    indptr: Vec<usize>,
    indices: Vec<usize>,
    data: Vec<N>,
    format: &str,
) -> Result<CsMat<N>> {
    if canonical(&indptr, &indices) {
        let made = if csr {
            CsMat::try_new(shape, indptr, indices, data)
        } else {
            CsMat::try_new_csc(shape, indptr, indices, data)
        };
        return made.map_err(|(_, _, _, e)| bad(format, e));
    }
    let mut rows = Vec::with_capacity(indices.len());
    let mut cols = Vec::with_capacity(indices.len());
    for (outer, w) in indptr.windows(2).enumerate() {
        for &inner in &indices[w[0]..w[1]] {
            let (r, c) = if csr { (outer, inner) } else { (inner, outer) };
            rows.push(r);
            cols.push(c);
        }
    }
    let t = TriMat::from_triplets(shape, rows, cols, data);
    Ok(if csr { t.to_csr() } else { t.to_csc() })
}

impl<R: Read + Seek> NpzArchive<R> {
    /// Reads the matrix a `scipy.sparse.save_npz` archive holds (`scipy.sparse.load_npz`),
    /// in any of the formats scipy writes; see [`SparseMatrix`] for the form each becomes.
    /// Feature `sprs`.
    ///
    /// `N` is the value type, read through serde as this crate's readers convert (a float or
    /// complex dtype widens: an `f4` archive reads as `f64` too; integers do not become
    /// floats: read an `i8` matrix as `i64`); index arrays may be `int32` or `int64`. Every structural property is
    /// checked before a `sprs` constructor sees the arrays: lengths, `indptr` starting at 0,
    /// never decreasing and ending at the number of values, indices within the shape, block
    /// and diagonal shapes. An archive that is not a sparse matrix or is malformed is an
    /// [`ErrorKind::InvalidValue`](crate::ErrorKind::InvalidValue) error saying what is wrong
    /// (a missing member, a `Zip` error), never a panic. Unsorted or duplicate indices (scipy's
    /// non-canonical form) are sorted, and duplicates summed, as scipy's `toarray` does.
    ///
    /// Expanding a bsr matrix allocates one index pointer per row: a shape whose pointers
    /// would take more than [`NpzReaderBuilder::max_member_size`](super::NpzReaderBuilder::max_member_size)
    /// bytes is refused. [`SparseMatrix::into_csr`] of a coo matrix allocates them too.
    pub fn load_sparse<N>(&mut self) -> Result<SparseMatrix<N>>
    where
        N: DeserializeOwned + Clone + Add<Output = N>,
    {
        let format = self.sparse_format()?;
        let f = format.as_str();
        let (shape_dims, shape) = column::<R, i64>(self, "shape")?;
        if shape.len() != 2 || shape_dims.len() != 1 {
            return Err(bad(
                f,
                format!(
                    "shape is {shape:?}: only 2-D matrices can be read (sprs has no N-d sparse \
                     arrays)"
                ),
            ));
        }
        let (rows, cols) = (dim(f, shape[0])?, dim(f, shape[1])?);
        let (data_shape, data) = column::<R, N>(self, "data")?;
        match f {
            "csr" | "csc" => {
                let csr = f == "csr";
                let (outer, inner) = if csr { (rows, cols) } else { (cols, rows) };
                let what = if csr { "column index" } else { "row index" };
                let indices = indices(self, f, "indices", inner, what)?;
                if indices.len() != data.len() {
                    return Err(bad(
                        f,
                        format!(
                            "{} indices but {} values: they must be as many",
                            indices.len(),
                            data.len()
                        ),
                    ));
                }
                let indptr = indptr(self, f, outer, indices.len())?;
                let m = compressed(csr, (rows, cols), indptr, indices, data, f)?;
                Ok(if csr {
                    SparseMatrix::Csr(m)
                } else {
                    SparseMatrix::Csc(m)
                })
            }
            "coo" => {
                let (row, col) = if self.contains_key("coords") {
                    let (cshape, coords) = column::<R, i64>(self, "coords")?;
                    if cshape.len() != 2 || cshape[0] != 2 {
                        return Err(bad(f, format!("coords has shape {cshape:?}, not (2, nnz)")));
                    }
                    let n = coords.len() / 2;
                    (coords[..n].to_vec(), coords[n..].to_vec())
                } else {
                    (
                        column::<R, i64>(self, "row")?.1,
                        column::<R, i64>(self, "col")?.1,
                    )
                };
                if row.len() != data.len() || col.len() != data.len() {
                    return Err(bad(
                        f,
                        format!(
                            "{} row and {} column indices for {} values: they must be as many",
                            row.len(),
                            col.len(),
                            data.len()
                        ),
                    ));
                }
                let check = |v: &[i64], bound: usize, what: &str| -> Result<Vec<usize>> {
                    v.iter()
                        .enumerate()
                        .map(|(i, &x)| match usize::try_from(x) {
                            Ok(u) if u < bound => Ok(u),
                            _ => Err(bad(
                                f,
                                format!(
                                    "{what} index {x} (entry {i}) is outside the {bound} {what}s"
                                ),
                            )),
                        })
                        .collect()
                };
                let r = check(&row, rows, "row")?;
                let c = check(&col, cols, "column")?;
                Ok(SparseMatrix::Coo(TriMat::from_triplets(
                    (rows, cols),
                    r,
                    c,
                    data,
                )))
            }
            "bsr" => self.bsr(rows, cols, &data_shape, data),
            "dia" => self.dia(rows, cols, &data_shape, data),
            other => Err(bad(
                other,
                "unknown sparse format (scipy writes csr, csc, coo, bsr and dia)",
            )),
        }
    }

    /// The archive's `format` member: `b'csr'` as scipy writes it (a 0-d `S3` array), or a
    /// unicode string (scipy before 1.0).
    fn sparse_format(&mut self) -> Result<String> {
        if !self.contains_key("format") {
            return Err(Error::invalid_value(
                "not a scipy.sparse archive: it has no \"format\" member \
                 (scipy.sparse.save_npz writes format, shape, data and the index arrays)",
            ));
        }
        let a = self.read_array("format")?;
        match a.values.as_slice() {
            [Value::Bytes(b)] => Ok(String::from_utf8_lossy(b).into_owned()),
            [Value::String(s)] => Ok(s.clone()),
            _ => Err(Error::invalid_value(format!(
                "not a scipy.sparse archive: its \"format\" member is a {} array of shape \
                 {:?}, not one string",
                a.dtype.descr(),
                a.shape
            ))),
        }
    }

    /// bsr: `data` of shape `(blocks, R, C)`, block indices and block `indptr`; expanded into
    /// CSR.
    fn bsr<N: Clone + Add<Output = N>>(
        &mut self,
        rows: usize,
        cols: usize,
        data_shape: &[u64],
        data: Vec<N>,
    ) -> Result<SparseMatrix<N>> {
        let f = "bsr";
        let [blocks, br, bc] = *data_shape else {
            return Err(bad(
                f,
                format!("data has shape {data_shape:?}, not (blocks, R, C)"),
            ));
        };
        let (br, bc) = (br as usize, bc as usize);
        if br == 0 || bc == 0 || !rows.is_multiple_of(br) || !cols.is_multiple_of(bc) {
            return Err(bad(
                f,
                format!("blocks of {br}x{bc} do not tile the {rows}x{cols} matrix"),
            ));
        }
        let most = self.options().max_member_size / 8;
        if rows as u64 >= most {
            return Err(bad(
                f,
                format!(
                    "its {rows} rows would need more index pointers than the \
                     max_member_size limit ({} bytes) allows",
                    self.options().max_member_size
                ),
            ));
        }
        let (brows, bcols) = (rows / br, cols / bc);
        let bind = indices(self, f, "indices", bcols, "block column index")?;
        if bind.len() as u64 != blocks {
            return Err(bad(
                f,
                format!("{} block indices for {blocks} blocks", bind.len()),
            ));
        }
        let bptr = indptr(self, f, brows, bind.len())?;
        // Expanded row by row: every stored block contributes one run of `bc` values to each
        // of its `br` rows. All sizes below come from arrays in the archive.
        let nnz = data.len();
        let mut indptr = Vec::with_capacity(rows + 1);
        let mut indices = Vec::with_capacity(nnz);
        let mut values = Vec::with_capacity(nnz);
        indptr.push(0);
        for b in 0..brows {
            for r in 0..br {
                for k in bptr[b]..bptr[b + 1] {
                    for c in 0..bc {
                        indices.push(bind[k] * bc + c);
                        values.push(data[(k * br + r) * bc + c].clone());
                    }
                }
                indptr.push(indices.len());
            }
        }
        compressed(true, (rows, cols), indptr, indices, values, f).map(SparseMatrix::Csr)
    }

    /// dia: `data` of shape `(diagonals, L)` and one offset per diagonal; `data[k, j]` is the
    /// element at `(j - offsets[k], j)`, kept if inside the matrix. As triplets.
    fn dia<N: Clone + Add<Output = N>>(
        &mut self,
        rows: usize,
        cols: usize,
        data_shape: &[u64],
        data: Vec<N>,
    ) -> Result<SparseMatrix<N>> {
        let f = "dia";
        let [ndiag, len] = *data_shape else {
            return Err(bad(
                f,
                format!("data has shape {data_shape:?}, not (diagonals, L)"),
            ));
        };
        let (offshape, offsets) = column::<R, i64>(self, "offsets")?;
        if offsets.len() as u64 != ndiag || offshape.len() != 1 {
            return Err(bad(
                f,
                format!("{} offsets for {ndiag} diagonals", offsets.len()),
            ));
        }
        let len = len as usize;
        let mut r = Vec::new();
        let mut c = Vec::new();
        let mut v = Vec::new();
        for (k, &off) in offsets.iter().enumerate() {
            for j in 0..len.min(cols) {
                let i = j as i128 - i128::from(off);
                if i >= 0 && (i as u128) < rows as u128 {
                    r.push(i as usize);
                    c.push(j);
                    v.push(data[k * len + j].clone());
                }
            }
        }
        Ok(SparseMatrix::Coo(TriMat::from_triplets(
            (rows, cols),
            r,
            c,
            v,
        )))
    }
}

/// The index dtype scipy picks: `int32` when every index and count fits, else `int64`.
fn needs_i64(max: usize) -> bool {
    max > i32::MAX as usize
}

impl<W: Write + Seek> NpzWriter<W> {
    /// Writes a `CsMat` (CSR or CSC, by its storage) as `scipy.sparse.save_npz` does, so that
    /// `scipy.sparse.load_npz` reads it back as a `csr_matrix` or `csc_matrix`: members
    /// `indices`, `indptr`, `format`, `shape` and `data`. Index arrays are `int32` when they
    /// fit, else `int64`, as scipy chooses. The archive should hold nothing else (scipy
    /// ignores other members, but one archive holds one matrix). Feature `sprs`.
    ///
    /// scipy's default is compressed: use [`NpzWriter::new_compressed`] for that.
    pub fn save_sparse<N, I, Iptr, IptrS, IndS, DataS>(
        &mut self,
        m: &CsMatBase<N, I, IptrS, IndS, DataS, Iptr>,
    ) -> Result<()>
    where
        N: Serialize + NpyRecord + Sync,
        I: SpIndex,
        Iptr: SpIndex,
        IptrS: Deref<Target = [Iptr]>,
        IndS: Deref<Target = [I]>,
        DataS: Deref<Target = [N]>,
    {
        let indptr = m.proper_indptr();
        let wide = needs_i64(m.rows().max(m.cols()).max(m.nnz()));
        self.index_member("indices", m.indices().iter().map(|i| i.index()), wide)?;
        self.index_member("indptr", indptr.iter().map(|i| i.index()), wide)?;
        let format = if m.is_csr() { "csr" } else { "csc" };
        self.sparse_header(format, m.rows(), m.cols())?;
        self.add("data", m.data())
    }

    /// Writes a `TriMat` as `scipy.sparse.save_npz` writes a `coo_matrix` (members `row`,
    /// `col`, `format`, `shape`, `data`); duplicate entries are written as they are (scipy sums
    /// them). Feature `sprs`.
    pub fn save_sparse_triplets<N, I, IS, DS>(&mut self, m: &TriMatBase<IS, DS>) -> Result<()>
    where
        N: Serialize + NpyRecord + Sync,
        I: SpIndex,
        IS: Deref<Target = [I]>,
        DS: Deref<Target = [N]>,
    {
        let wide = needs_i64(m.rows().max(m.cols()).max(m.nnz()));
        self.index_member("row", m.row_inds().iter().map(|i| i.index()), wide)?;
        self.index_member("col", m.col_inds().iter().map(|i| i.index()), wide)?;
        self.sparse_header("coo", m.rows(), m.cols())?;
        self.add("data", m.data())
    }

    fn index_member(
        &mut self,
        key: &str,
        values: impl Iterator<Item = usize>,
        wide: bool,
    ) -> Result<()> {
        if wide {
            let v: Vec<i64> = values.map(|i| i as i64).collect();
            self.add(key, &v)
        } else {
            let v: Vec<i32> = values.map(|i| i as i32).collect();
            self.add(key, &v)
        }
    }

    fn sparse_header(&mut self, format: &str, rows: usize, cols: usize) -> Result<()> {
        let fmt = Array {
            dtype: "|S3".parse()?,
            shape: vec![],
            fortran_order: false,
            values: vec![Value::Bytes(format.as_bytes().to_vec())],
        };
        self.add_array("format", &fmt)?;
        let shape = [i64::try_from(rows), i64::try_from(cols)];
        let [Ok(r), Ok(c)] = shape else {
            return Err(Error::write("a matrix dimension does not fit an int64"));
        };
        self.add("shape", &[r, c])
    }
}
