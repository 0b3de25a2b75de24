//! [`RowDecoder`]: whole rows of stored bytes (C order) into a record batch of the selected
//! columns. The piece of a batch reader that needs no byte source: the DataFusion scan fetches
//! its own byte ranges from an object store and hands them here.

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, SchemaRef};

use super::decode::{self, arrow_err, At, Pre, Slots};
use super::foreign::restore;
use super::schema::{Layout, Node, TimeTarget};
use npy_serde::error::Error;
use npy_serde::error::Result;
use npy_serde::header::Header;
use std::sync::Arc;

/// Batches with at least this many record bytes decode their columns on all cores.
const PARALLEL_BYTES: usize = 1 << 20;

/// Decodes runs of whole rows of one array into record batches of some of its columns.
#[derive(Clone, Debug)]
pub struct RowDecoder {
    pub(crate) layout: Layout,
    selected: Vec<usize>,
    schema: SchemaRef,
    parallel: bool,
}

impl RowDecoder {
    /// A decoder of the columns at `selected` (all of them for `None`) of `header`'s array.
    /// Refuses arrays whose stored order is not the rows' order (Fortran order with more
    /// than one axis longer than 1): their rows are not contiguous runs of bytes.
    pub fn new(header: &Header, selected: Option<&[usize]>, parallel: bool) -> Result<Self> {
        if needs_gather(header) {
            return Err(Error::invalid_value(
                "a Fortran-order array with more than one axis longer than 1 has no contiguous \
                 rows",
            ));
        }
        let layout = Layout::of(header)?;
        let n = layout.columns.len();
        let selected = match selected {
            Some(idx) => {
                if let Some(&bad) = idx.iter().find(|&&i| i >= n) {
                    return Err(Error::invalid_value(format!(
                        "no column {bad}: the array has {n} column(s)"
                    )));
                }
                idx.to_vec()
            }
            None => (0..n).collect(),
        };
        let schema = Arc::new(layout.schema(&selected));
        Ok(RowDecoder {
            layout,
            selected,
            schema,
            parallel,
        })
    }

    /// The schema of its batches.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The schema of the columns at `indices` of the whole array (selected or not).
    pub fn schema_of(&self, indices: &[usize]) -> arrow_schema::Schema {
        self.layout.schema(indices)
    }

    /// The number of columns of the whole array (selected or not).
    pub fn column_count(&self) -> usize {
        self.layout.columns.len()
    }

    /// Where column `i` of the whole array (selected or not) holds one `U<n>` string a row
    /// that is read as it is stored (a `Utf8` value: the characters without the trailing
    /// NULs; no title or mask changes it): its byte offset in a row, `n`, and whether its
    /// code units are big-endian. What a scan needs to compare the strings on their bytes.
    pub fn utf32_column(&self, i: usize) -> Option<(usize, usize, bool)> {
        let c = self.layout.columns.get(i)?;
        match c.node {
            Node::Unicode { chars, big }
                if self.layout.per_row == 1
                    && c.restore.is_none()
                    && chars > 0
                    && *c.field.data_type() == arrow_schema::DataType::Utf8 =>
            {
                Some((c.offset, chars, big))
            }
            _ => None,
        }
    }

    /// Where column `i` of the whole array (selected or not) holds one integer a row whose
    /// Arrow value is the number stored (Int8 to Int64, UInt8 to UInt64), or one
    /// `datetime64[D]` count made Date32 days (its Arrow type then Date32; NaT is null), read
    /// as stored (no title or mask changes it): its byte offset in a row, its Arrow type and
    /// whether it is big-endian. What a scan needs to compare the values on their bytes.
    pub fn int_column(&self, i: usize) -> Option<(usize, DataType, bool)> {
        let c = self.layout.columns.get(i)?;
        if self.layout.per_row != 1 || c.restore.is_some() {
            return None;
        }
        let native_big = cfg!(target_endian = "big");
        match &c.node {
            Node::Fixed { swap, dt, .. } if dt.is_integer() && c.field.data_type() == dt => {
                Some((c.offset, dt.clone(), *swap != native_big))
            }
            Node::Time {
                big,
                factor: 1,
                target: TimeTarget::Date32,
            } if *c.field.data_type() == DataType::Date32 => {
                Some((c.offset, DataType::Date32, *big))
            }
            _ => None,
        }
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.layout.row_bytes
    }

    /// Elements per row (the product of the shape after the first axis).
    pub fn per_row(&self) -> u64 {
        self.layout.per_row
    }

    /// Rows in the array.
    pub fn rows(&self) -> u64 {
        self.layout.rows
    }

    /// Rows `first..first + rows` from `chunk`, which holds exactly their bytes and starts at
    /// byte `offset` of the file (for error positions).
    pub fn decode(
        &self,
        chunk: &[u8],
        first: u64,
        rows: usize,
        offset: u64,
    ) -> Result<RecordBatch> {
        let row_bytes = self.layout.row_bytes;
        let len = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| Error::overflow("a batch's bytes"))?;
        if chunk.len() != len {
            return Err(Error::eof(
                "the array data",
                offset + len as u64,
                offset + chunk.len() as u64,
            ));
        }
        let at = At {
            first_elem: first * self.layout.per_row,
            itemsize: self.layout.elem.itemsize(),
            offset: Some(offset),
        };
        let cols = Columns {
            layout: &self.layout,
            selected: &self.selected,
            schema: &self.schema,
            parallel: self.parallel,
        };
        cols.decode(chunk, rows, &at)
    }
}

/// Selected columns of a layout, decoded from a chunk of whole rows into a batch: shared by
/// [`RowDecoder`] and the batch reader.
pub(crate) struct Columns<'a> {
    pub(crate) layout: &'a Layout,
    pub(crate) selected: &'a [usize],
    pub(crate) schema: &'a SchemaRef,
    pub(crate) parallel: bool,
}

impl Columns<'_> {
    /// The batch of the `rows` rows whose bytes are `chunk` (positions in errors from `at`).
    /// The fixed-width values of every column are gathered together a tile of rows at a time
    /// (on all cores for large chunks); strings, bytes and long doubles column by column.
    pub fn decode(&self, chunk: &[u8], rows: usize, at: &At) -> Result<RecordBatch> {
        let row_bytes = self.layout.row_bytes;
        let columns = &self.layout.columns;
        let slots = |i: usize| Slots {
            base: columns[i].offset,
            axes: vec![(rows, row_bytes)],
        };
        // Each column's fixed-width leaves, gathered ahead; none for a column decoded on its
        // own (strings, bytes, long doubles).
        let mut leaves = Vec::new();
        let mut counts = Vec::with_capacity(self.selected.len());
        let mut own = 0;
        for &i in self.selected {
            let before = leaves.len();
            if !decode::leaves(&columns[i].node, &slots(i), &mut leaves) {
                leaves.truncate(before);
                own += 1;
            }
            counts.push(leaves.len() - before);
        }
        let parallel = cfg!(feature = "parallel") && self.parallel && chunk.len() >= PARALLEL_BYTES;
        let mut raws =
            decode::gather_leaves(&leaves, chunk, rows, row_bytes, parallel)?.into_iter();
        let jobs: Vec<(usize, Pre)> = self
            .selected
            .iter()
            .zip(&counts)
            .map(|(&i, &k)| (i, raws.by_ref().take(k).collect::<Vec<_>>().into_iter()))
            .collect();
        let decode_one = |(i, mut pre): (usize, Pre)| -> Result<ArrayRef> {
            let c = &columns[i];
            let a =
                decode::decode_gathered(&c.node, chunk, &slots(i), at, c.field.name(), &mut pre)?;
            let Some(r) = &c.restore else { return Ok(a) };
            // A field titled with its Arrow type, or with a mask beside it (1-D records only).
            let mask = match r.mask {
                Some(base) => {
                    let s = Slots {
                        base,
                        axes: vec![(rows, row_bytes)],
                    };
                    let name = c.field.name();
                    Some(decode::decode_gathered(
                        &Node::Bool,
                        chunk,
                        &s,
                        at,
                        name,
                        &mut Vec::new().into_iter(),
                    )?)
                }
                None => None,
            };
            let first_row = at.first_elem / self.layout.per_row.max(1);
            restore::apply(r, a, mask, c.field.name(), first_row)
        };
        // The columns decoded on their own are the slow ones: on all cores if there are some.
        #[cfg(feature = "parallel")]
        let cols: Result<Vec<ArrayRef>> = if parallel && own > 1 {
            use rayon::prelude::*;
            jobs.into_par_iter().map(decode_one).collect()
        } else {
            jobs.into_iter().map(decode_one).collect()
        };
        #[cfg(not(feature = "parallel"))]
        let cols: Result<Vec<ArrayRef>> = {
            let _ = own;
            jobs.into_iter().map(decode_one).collect()
        };
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols?,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(arrow_err)
    }
}

/// Rows of the array `h` describes (its first axis; 1 for a 0-d array).
pub fn rows_of(h: &Header) -> Result<u64> {
    Ok(Layout::of(h)?.rows)
}

/// Fortran order with more than one axis longer than 1: logical C order needs a gather.
pub fn needs_gather(h: &Header) -> bool {
    h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() >= 2
}
