//! `RemoteNpy::batches`: a row range as Arrow record batches of the projected columns (feature
//! `arrow`), one GET per batch, decoded by the batch reader's own code
//! (`npy_arrow::RowDecoder`).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::npy::RemoteNpy;
use npy_arrow::RowDecoder;
use npy_serde::error::{Error, Result};

impl RemoteNpy {
    /// The Arrow schema of the columns at `projection` (all of them for `None`), as
    /// [`schema_for`](npy_arrow::schema_for) maps the header.
    pub fn schema(&self, projection: Option<&[usize]>) -> Result<SchemaRef> {
        let d = RowDecoder::new(self.header(), projection, false)?;
        Ok(Self::schema_of(&d, projection))
    }

    fn schema_of(d: &RowDecoder, projection: Option<&[usize]>) -> SchemaRef {
        let all: Vec<usize> = (0..d.column_count()).collect();
        Arc::new(d.schema_of(projection.unwrap_or(&all)))
    }

    /// Rows `rows` as Arrow record batches of the columns at `projection` (all of them for
    /// `None`; columns not asked for are never decoded), `batch_rows` rows each (0: as many
    /// as fit in [`FetchOptions::chunk_bytes`](super::FetchOptions::chunk_bytes)); one GET per
    /// batch, up to [`FetchOptions::concurrency`](super::FetchOptions::concurrency) in flight,
    /// the batches in order. Values and errors are [`NpyBatchReader`](npy_arrow::NpyBatchReader)'s;
    /// a Fortran-order array with more than one axis longer than 1 is refused (its rows are
    /// not contiguous).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arrow_array::{cast::AsArray, types::Float32Type};
    /// use futures::TryStreamExt;
    /// use npy_remote::RemoteNpy;
    /// use npy_serde::NpyRecord;
    /// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
    /// use serde::Serialize;
    ///
    /// #[derive(Serialize, NpyRecord)]
    /// struct Rec { id: i64, x: f32 }
    ///
    /// let recs: Vec<Rec> = (0..100).map(|i| Rec { id: i, x: i as f32 / 2.0 }).collect();
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// rt.block_on(async {
    ///     let mem = Arc::new(InMemory::new());
    ///     let path = Path::from("r.npy");
    ///     mem.put(&path, PutPayload::from(npy_serde::to_vec(&recs)?)).await.unwrap();
    ///     let store: Arc<dyn ObjectStore> = mem;
    ///     let npy = RemoteNpy::open(store, path, "memory:///r.npy", &Default::default()).await?;
    ///
    ///     let batches: Vec<_> = npy.batches(10..30, Some(&[1]), 8)?.try_collect().await?;
    ///     assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [8, 8, 4]);
    ///     assert_eq!(batches[0].schema().field(0).name(), "x");
    ///     assert_eq!(batches[0].column(0).as_primitive::<Float32Type>().value(0), 5.0);
    ///     Ok::<(), npy_serde::Error>(())
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn batches(
        &self,
        rows: Range<u64>,
        projection: Option<&[usize]>,
        batch_rows: usize,
    ) -> Result<BoxStream<'_, Result<RecordBatch>>> {
        if rows.start > rows.end || rows.end > self.len() {
            return Err(Error::invalid_value(format!(
                "{}: rows {rows:?} asked for, the array has {} rows",
                self.url(),
                self.len()
            )));
        }
        let decoder = Arc::new(RowDecoder::new(self.header(), projection, false)?);
        let row_bytes = decoder.row_bytes() as u64;
        let per_row = decoder.per_row();
        let per = match batch_rows {
            0 => (self.obj.opts.chunk / row_bytes.max(1)).max(1),
            n => n as u64,
        };
        let starts = (rows.start..rows.end).step_by(usize::try_from(per).unwrap_or(usize::MAX));
        let ranges: Vec<Range<u64>> = starts.map(|s| s..(s + per).min(rows.end)).collect();
        let stream = futures::stream::iter(ranges)
            .map(move |r| {
                let decoder = decoder.clone();
                async move {
                    let elems = r.start * per_row..r.end * per_row;
                    let bytes = self.obj.get(self.byte_range(&elems)).await?;
                    let offset = self.header.data_offset + r.start * row_bytes;
                    let n =
                        usize::try_from(r.end - r.start).map_err(|_| Error::overflow("rows"))?;
                    decoder.decode(&bytes, r.start, n, offset)
                }
            })
            .buffered(self.obj.opts.concurrency);
        Ok(stream.boxed())
    }
}
