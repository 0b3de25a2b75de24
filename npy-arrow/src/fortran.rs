//! Rows written into a Fortran-order `.npy` array: how [`NpyBatchWriter`](super::NpyBatchWriter)
//! gives a Fortran-order file back (its schema's `numpy.fortran_order` says `True` and its
//! `numpy.shape` the shape), in bounded memory.
//!
//! In Fortran order the first axis varies fastest: the element `(i0, i1, .., ik)` of an array of
//! shape `(n0, n1, .., nk)` is element `i0 + n0 * (i1 + n1 * (i2 + ..))` of the data. The rows
//! `r0..r1` (items along the first axis) are therefore, for each index `j` of the other axes
//! (taken in Fortran order), one contiguous run of `r1 - r0` elements at element
//! `j * n0 + r0`. The writer buffers the rows it is given (in C order, as the batch encoder
//! makes them) up to [`FORTRAN_BUFFER`] bytes (or one row), then writes each run at its offset
//! with a seek and a write: positioned writes through the `Write + Seek` the batch writer
//! already needs, rather than a temporary file, because they need no second copy of the data
//! on disk and no second pass, and the buffer keeps the runs long (a buffer of `m` rows gives
//! runs of `m` elements, so `n1 * .. * nk` writes per buffer).
//!
//! The shape, and so the row count, must be known up front (the offsets depend on `n0`): the
//! writer refuses more rows than `n0`, and [`finish`](FortranWriter::finish) fewer.

use std::io::{Seek, SeekFrom, Write};

use npy_serde::dtype::DType;
use npy_serde::error::{Error, Result};
use npy_serde::header::{Header, Version};
use npy_serde::pyliteral;

/// Bytes of rows buffered before their runs are written out (at least one row is).
pub(crate) const FORTRAN_BUFFER: usize = 16 << 20;

/// Writes rows, given in C order, as a Fortran-order array of a known shape.
pub(crate) struct FortranWriter<W: Write + Seek> {
    inner: W,
    shape: Vec<u64>,
    /// Bytes of one element.
    itemsize: usize,
    /// Elements per row (the product of the shape after the first axis).
    per_row: usize,
    /// Where the data starts in `inner`.
    data_start: u64,
    /// Rows buffered, in C order, from row `first`.
    buf: Vec<u8>,
    first: u64,
    /// Rows given so far (buffered or written).
    rows: u64,
    /// Most bytes buffered before a flush.
    limit: usize,
    /// One run being gathered.
    run: Vec<u8>,
}

impl<W: Write + Seek> FortranWriter<W> {
    /// Writes the header of a Fortran-order array of `elem` with `shape` (at least one axis) at
    /// the current position of `inner`.
    pub(crate) fn new(
        mut inner: W,
        elem: DType,
        shape: Vec<u64>,
        version: Option<Version>,
    ) -> Result<Self> {
        let itemsize = elem.itemsize();
        let header = Header {
            dtype: elem,
            shape: shape.clone(),
            fortran_order: true,
        };
        header.data_len()?;
        let per_row = shape[1..]
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::overflow("the elements per row"))?;
        let row_bytes = per_row
            .checked_mul(itemsize)
            .ok_or_else(|| Error::overflow("the bytes per row"))?;
        inner.write_all(&header.to_bytes_with_version(version)?)?;
        let data_start = inner.stream_position()?;
        Ok(FortranWriter {
            inner,
            shape,
            itemsize,
            per_row,
            data_start,
            buf: Vec::new(),
            first: 0,
            rows: 0,
            limit: FORTRAN_BUFFER.max(row_bytes),
            run: Vec::new(),
        })
    }

    /// Takes `n` rows, `bytes` in C order (`n` times the bytes of a row).
    pub(crate) fn write_rows(&mut self, bytes: &[u8], n: u64) -> Result<()> {
        let total = self
            .rows
            .checked_add(n)
            .ok_or_else(|| Error::overflow("the row count"))?;
        if total > self.shape[0] {
            return Err(Error::write(format!(
                "the Fortran-order array of shape {} (the schema's numpy.shape) has {} rows, \
                 got {total}: its data is placed by the row count, so it cannot grow (write it \
                 in C order: BatchWriterBuilder::ignore_metadata, or a schema without \
                 numpy.fortran_order)",
                pyliteral::repr_shape(&self.shape),
                self.shape[0]
            )));
        }
        let row_bytes = self.per_row * self.itemsize;
        let mut rest = bytes;
        while !rest.is_empty() {
            let room = self.limit - self.buf.len();
            let take = match room.checked_div(row_bytes) {
                Some(rows) => (rows * row_bytes).min(rest.len()),
                None => rest.len(),
            };
            self.buf.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.buf.len() + row_bytes > self.limit {
                self.flush()?;
            }
        }
        self.rows = total;
        Ok(())
    }

    /// Writes the buffered rows' runs at their offsets.
    fn flush(&mut self) -> Result<()> {
        let row_bytes = self.per_row * self.itemsize;
        if self.buf.is_empty() || row_bytes == 0 {
            return Ok(());
        }
        let m = self.buf.len() / row_bytes;
        let isz = self.itemsize;
        let n0 = self.shape[0];
        let inner = &self.shape[1..];
        // C strides (in elements) of the axes after the first.
        let mut cstride = vec![1usize; inner.len()];
        for a in (0..inner.len().saturating_sub(1)).rev() {
            cstride[a] = cstride[a + 1] * inner[a + 1] as usize;
        }
        let mut idx = vec![0u64; inner.len()];
        self.run.resize(m * isz, 0);
        for j in 0..self.per_row {
            // `idx` is the j-th multi-index of the inner axes in Fortran order.
            let c: usize = idx
                .iter()
                .zip(&cstride)
                .map(|(&i, &s)| i as usize * s)
                .sum();
            for (r, out) in self.run.chunks_exact_mut(isz).enumerate() {
                let at = r * row_bytes + c * isz;
                out.copy_from_slice(&self.buf[at..at + isz]);
            }
            let elem = (j as u64) * n0 + self.first;
            self.inner
                .seek(SeekFrom::Start(self.data_start + elem * isz as u64))?;
            self.inner.write_all(&self.run)?;
            for (i, &d) in idx.iter_mut().zip(inner) {
                *i += 1;
                if *i < d {
                    break;
                }
                *i = 0;
            }
        }
        self.first += m as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the last runs; fails unless every row of the shape was given. Returns the writer,
    /// positioned at the end of the data.
    pub(crate) fn finish(mut self) -> Result<W> {
        self.flush()?;
        if self.rows != self.shape[0] {
            return Err(Error::write(format!(
                "the Fortran-order array of shape {} (the schema's numpy.shape) has {} rows, \
                 got {}: its data is placed by the row count (write it in C order: \
                 BatchWriterBuilder::ignore_metadata, or a schema without numpy.fortran_order)",
                pyliteral::repr_shape(&self.shape),
                self.shape[0],
                self.rows
            )));
        }
        let len = self
            .shape
            .iter()
            .try_fold(self.itemsize as u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::overflow("the data length"))?;
        self.inner.seek(SeekFrom::Start(self.data_start + len))?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::{BatchReaderBuilder, BatchWriterBuilder, NpyBatchReader};

    /// The bytes of a C-order array of `shape` (u16 values 0, 1, ..) and of the same array in
    /// Fortran order.
    fn both_orders(shape: &[u64]) -> (Vec<u8>, Vec<u8>) {
        let n: u64 = shape.iter().product();
        let c: Vec<u16> = (0..n as u16).collect();
        let mut f = vec![0u16; n as usize];
        for (k, &v) in c.iter().enumerate() {
            // The multi-index of C position k, then its Fortran position.
            let mut rest = k as u64;
            let mut idx = vec![0u64; shape.len()];
            for a in (0..shape.len()).rev() {
                idx[a] = rest % shape[a];
                rest /= shape[a];
            }
            let mut pos = 0u64;
            for a in (0..shape.len()).rev() {
                pos = pos * shape[a] + idx[a];
            }
            f[pos as usize] = v;
        }
        let bytes = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect();
        (bytes(&c), bytes(&f))
    }

    fn file(shape: &[u64], fortran: bool, data: &[u8]) -> Vec<u8> {
        let h = Header {
            dtype: "<u2".parse().unwrap(),
            shape: shape.to_vec(),
            fortran_order: fortran,
        };
        let mut out = h.to_bytes().unwrap();
        out.extend_from_slice(data);
        out
    }

    /// Rows in batches of `batch` through a buffer of `limit` bytes: the Fortran bytes, for
    /// every split of the rows into buffers.
    #[test]
    fn runs_land_at_their_offsets() {
        for shape in [&[5u64, 3, 4][..], &[7, 2], &[4, 1, 3, 2], &[6]] {
            let (c, f) = both_orders(shape);
            let row = c.len() / shape[0] as usize;
            for limit in [row, 2 * row, 3 * row + 1, 1 << 20] {
                let mut w = FortranWriter::new(
                    Cursor::new(Vec::new()),
                    "<u2".parse().unwrap(),
                    shape.to_vec(),
                    None,
                )
                .unwrap();
                w.limit = limit;
                for chunk in c.chunks(2 * row) {
                    w.write_rows(chunk, (chunk.len() / row) as u64).unwrap();
                }
                let out = w.finish().unwrap().into_inner();
                assert_eq!(out, file(shape, true, &f), "shape {shape:?}, limit {limit}");
            }
        }
    }

    #[test]
    fn row_count_must_match_the_shape() {
        let new = || {
            FortranWriter::new(
                Cursor::new(Vec::new()),
                "<u2".parse().unwrap(),
                vec![2, 3],
                None,
            )
            .unwrap()
        };
        let mut w = new();
        let err = w.write_rows(&[0; 18], 3).unwrap_err().to_string();
        assert!(err.contains("has 2 rows, got 3"), "{err}");
        let mut w = new();
        w.write_rows(&[0; 6], 1).unwrap();
        let err = w.finish().unwrap_err().to_string();
        assert!(err.contains("has 2 rows, got 1"), "{err}");
    }

    /// `.npy` (Fortran) -> Arrow -> `.npy`: the same bytes, in batches of any size.
    #[test]
    fn fortran_file_round_trips_through_batches() {
        for shape in [&[5u64, 3, 4][..], &[7, 2], &[3, 1]] {
            let (_, f) = both_orders(shape);
            let original = file(shape, true, &f);
            for batch in [1, 2, 5, 1000] {
                let mut r = BatchReaderBuilder::new()
                    .batch_size(batch)
                    .from_slice(&original)
                    .unwrap();
                let schema = r.schema_ref().clone();
                let mut w = BatchWriterBuilder::new()
                    .writer(Cursor::new(Vec::new()), &schema)
                    .unwrap();
                while let Some(b) = r.next_batch().unwrap() {
                    w.write(&b).unwrap();
                }
                let out = w.finish().unwrap().into_inner();
                assert_eq!(out, original, "shape {shape:?}, batches of {batch}");
            }
        }
    }

    /// A header-only file `np.zeros((0, 42949, 7296, 16))` makes (a fuzz find): its rows
    /// would be 40 GB each, more than a subarray dtype may be, but it has none, and converts
    /// back to the same bytes.
    #[test]
    fn empty_array_with_huge_rows_round_trips() {
        let h = Header::new("<f8".parse().unwrap(), vec![0, 42949, 7296, 16]);
        let original = h.to_bytes().unwrap();
        let mut r = NpyBatchReader::from_slice(&original).unwrap();
        let schema = r.schema_ref().clone();
        let mut w = BatchWriterBuilder::new()
            .writer(Cursor::new(Vec::new()), &schema)
            .unwrap();
        while let Some(b) = r.next_batch().unwrap() {
            w.write(&b).unwrap();
        }
        assert_eq!(w.finish().unwrap().into_inner(), original);
    }
}
