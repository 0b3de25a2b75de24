//! What the openers of one scan share ([`ScanFiles`]): the store, the options, the table's
//! columns and the projected ones, the batch size and the limit; the check of a file's header
//! against the table; and the batches' schema.
//!
//! Each access path has its own opener, chosen by [`NpySource`](super::NpySource) when the
//! scan is planned: [`RowFileOpener`](super::rows::RowFileOpener) for `.npy` files,
//! [`MemberOpener`](super::member::MemberOpener) for an `.npz` member. Each reads and parses a
//! file's header once.

use std::future::Future;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use datafusion::datasource::physical_plan::FileOpenFuture;
use datafusion::error::{DataFusionError, Result as DfResult};
use futures::stream::{self, BoxStream, StreamExt};
use object_store::{ObjectMeta, ObjectStore};

use super::error::{df_err, df_err_in};
use super::extent::data_extent;
use super::filter::ScanFilter;
use super::options::NpyReadOptions;
use super::schema::check_file;
use npy_arrow::{BatchReaderBuilder, NpyBatchReader};
use npy_serde::error::Result;
use npy_serde::header::ParsedHeader;

/// Reads in flight (ranged reads, or batches of a member) per partition while earlier ones
/// are decoded.
pub(crate) const PREFETCH: usize = 2;

/// A scan's batches.
pub(crate) type Batches = BoxStream<'static, DfResult<RecordBatch>>;

/// What a scan's errors go through before DataFusion sees them (see
/// [`NpySource::with_error_map`](super::NpySource::with_error_map)).
pub(crate) type ErrorMap = fn(DataFusionError) -> DataFusionError;

/// What every file of one scan is read with.
pub(crate) struct ScanFiles {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) options: NpyReadOptions,
    /// The table's columns (every file has them).
    pub(crate) table: SchemaRef,
    /// The columns read (indices into `table`), and their schema.
    pub(crate) indices: Vec<usize>,
    pub(crate) projected: SchemaRef,
    pub(crate) batch_size: usize,
    /// The query's `LIMIT`: a partition reads no more rows (without a filter: under one, the
    /// limit counts the rows that pass, and DataFusion's file stream stops at it).
    pub(crate) limit: Option<usize>,
    /// The filter pushed into the scan, if any.
    pub(crate) filter: Option<Arc<ScanFilter>>,
    /// Local `.npy` row files are mapped (a local store, and not `access=read`).
    pub(crate) map_local: bool,
    pub(crate) map_err: Option<ErrorMap>,
}

impl ScanFiles {
    /// Checks the columns of `object` (whose header is `header`) against the table's, its
    /// sizes against the limits, and that its `size` bytes (the file's, or its member's) hold
    /// the data the header declares, as the statistics do; returns where the data starts and
    /// ends.
    pub(crate) fn check(
        &self,
        header: &ParsedHeader,
        object: &ObjectMeta,
        size: u64,
    ) -> DfResult<(u64, u64)> {
        check_file(&self.table, header, object)?;
        data_extent(&self.options, header, size)
            .map_err(|e| df_err_in(e, object, self.options.member()))
    }

    /// A batch reader of the projected columns (and a filter's) with the scan's batch size;
    /// [`forward`](Self::forward) and [`filtered`](Self::filtered) filter its batches.
    pub(crate) fn batch_builder(&self) -> BatchReaderBuilder {
        let columns = match &self.filter {
            None => self.indices.clone(),
            Some(f) => f.read_columns(&self.indices),
        };
        BatchReaderBuilder::new()
            .reader_options(self.options.reader.clone())
            .column_indices(columns)
            .batch_size(self.batch_size)
            .parallel(false)
    }

    /// The future an opener hands DataFusion: `open`'s batches, every error (of the opening
    /// and of each batch) through the scan's error map.
    pub(crate) fn opened(
        &self,
        open: impl Future<Output = DfResult<Batches>> + Send + 'static,
    ) -> FileOpenFuture {
        let map_err = self.map_err;
        Box::pin(async move {
            let batches = open.await;
            let Some(f) = map_err else {
                return batches;
            };
            Ok(batches.map_err(f)?.map(move |b| b.map_err(f)).boxed())
        })
    }

    /// The batches of a reader of [`batch_builder`](Self::batch_builder), filtered, with the
    /// table's schema.
    pub(crate) fn forward(
        self: &Arc<Self>,
        mut reader: NpyBatchReader<'static>,
        object: ObjectMeta,
    ) -> Batches {
        let scan = self.clone();
        let batches = std::iter::from_fn(move || reader.next_batch().transpose());
        stream::iter(batches.map(move |b| scan.filtered(b, &object))).boxed()
    }

    /// A batch of a reader of [`batch_builder`](Self::batch_builder) (or its error, about
    /// `object`): the rows the scan's filter keeps, with the table's (projected) schema.
    pub(crate) fn filtered(
        &self,
        batch: Result<RecordBatch>,
        object: &ObjectMeta,
    ) -> DfResult<RecordBatch> {
        let batch = batch.map_err(|e| df_err(e, object))?;
        match &self.filter {
            None => retag(&self.projected, batch).map_err(|e| df_err(e, object)),
            Some(f) => f.apply(&batch, &self.indices, &self.projected),
        }
    }
}

/// `batch` with the table's (projected) schema: the same columns; the file's own schema
/// differs in its metadata (the shape).
pub(crate) fn retag(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(npy_arrow::arrow_err)
}
