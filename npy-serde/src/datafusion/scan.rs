//! The scan: [`NpySource`] (DataFusion's `FileSource`) and its opener, which reads a file's
//! header, then the byte ranges of whole records its partition owns, and decodes only the
//! projected columns.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use bytes::Bytes;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    FileOpenFuture, FileOpener, FileScanConfig, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::PhysicalExpr;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::fetch::{blocking, check_same, fetch_header, open_archive, table_schema};
use super::{df_err, NpyReadOptions};
use crate::arrow::{needs_gather, BatchReaderBuilder, RowDecoder, MAX_BATCH_BYTES};
use crate::error::{Error, Result};
use crate::header::ParsedHeader;

/// Ranged reads in flight per partition while earlier ones are decoded.
const PREFETCH: usize = 2;
/// The size of one ranged read of a `.npy` file's records (rounded to whole batches).
const FETCH_BYTES: u64 = 4 << 20;

/// DataFusion's `FileSource` for `.npy` files (and `.npz` members); made by
/// [`NpyFormat`](super::NpyFormat).
#[derive(Clone)]
pub struct NpySource {
    table_schema: TableSchema,
    options: NpyReadOptions,
    projection: SplitProjection,
    metrics: ExecutionPlanMetricsSet,
    batch_size: usize,
    /// Errors as text (see [`NpySource::errors_as_text`]).
    text_errors: bool,
}

impl std::fmt::Debug for NpySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpySource")
            .field("options", &self.options)
            .field("file_indices", &self.projection.file_indices)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl NpySource {
    /// A scan of tables with this schema, every column, reading with `options`.
    pub fn new(table_schema: TableSchema, options: NpyReadOptions) -> Self {
        NpySource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            options,
            metrics: ExecutionPlanMetricsSet::new(),
            batch_size: crate::arrow::DEFAULT_BATCH_SIZE,
            text_errors: false,
        }
    }

    /// The scan's errors as DataFusion execution errors holding this crate's message as text
    /// (`file <path>: <message> (at record r, field f, byte b)`) instead of the error value:
    /// for scans whose errors leave the process as text. Ballista's executors send a failed
    /// task's error to the client in its `Debug` form, which for a wrapped error value is the
    /// struct's fields rather than the message.
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))] // the Ballista codec's
    pub(crate) fn errors_as_text(mut self) -> Self {
        self.text_errors = true;
        self
    }

    /// The options the scan reads with (header and data limits, an `.npz` member).
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The rows per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
}

impl FileSource for NpySource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        _partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let indices = self.projection.file_indices.clone();
        let opener = NpyOpener(Arc::new(Parts {
            store: object_store,
            options: self.options.clone(),
            table: file_schema.clone(),
            projected: Arc::new(file_schema.project(&indices)?),
            indices,
            batch_size: self.batch_size.max(1),
            limit: base_config.limit,
            text_errors: self.text_errors,
        }));
        ProjectionOpener::try_new(self.projection.clone(), Arc::new(opener), file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(NpySource {
            batch_size,
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "npy"
    }

    /// `.npy` files split into byte ranges of whole records; an `.npz` member is read by one
    /// partition (its bytes may be compressed).
    fn supports_repartitioning(&self) -> bool {
        self.options.member.is_none()
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> DfResult<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &source.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }
}

/// Opens one file (or one byte range of it) of a scan.
struct NpyOpener(Arc<Parts>);

/// What every file of a scan is read with.
struct Parts {
    store: Arc<dyn ObjectStore>,
    options: NpyReadOptions,
    /// The table's columns (every file has them).
    table: SchemaRef,
    /// The columns read, and their schema.
    indices: Vec<usize>,
    projected: SchemaRef,
    batch_size: usize,
    limit: Option<usize>,
    text_errors: bool,
}

impl FileOpener for NpyOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let scan = Scan {
            parts: self.0.clone(),
            meta: file.object_meta,
            range: file.range.map(|r| {
                (
                    u64::try_from(r.start).unwrap_or(0),
                    u64::try_from(r.end).unwrap_or(0),
                )
            }),
        };
        let text_errors = scan.text_errors;
        Ok(Box::pin(async move {
            let batches = match scan.options.member.clone() {
                None => scan.npy().await,
                Some(key) => scan.npz_member(key).await,
            };
            if !text_errors {
                return batches;
            }
            Ok(batches
                .map_err(as_text)?
                .map(|b| b.map_err(as_text))
                .boxed())
        }))
    }
}

/// `e` as an execution error whose text is its context and this crate's message:
/// `file <path>: <message>`.
fn as_text(e: DataFusionError) -> DataFusionError {
    fn text(e: &DataFusionError) -> String {
        match e {
            DataFusionError::Context(what, inner) => format!("{what}: {}", text(inner)),
            DataFusionError::External(inner) => inner.to_string(),
            DataFusionError::Shared(inner) => text(inner),
            other => other.to_string(),
        }
    }
    DataFusionError::Execution(text(&e))
}

/// One opened file (or range of it), owned by its stream.
struct Scan {
    parts: Arc<Parts>,
    meta: ObjectMeta,
    /// The partition's byte range of the file (`None`: the whole file).
    range: Option<(u64, u64)>,
}

type Batches = BoxStream<'static, DfResult<RecordBatch>>;

impl std::ops::Deref for Scan {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.parts
    }
}

impl Scan {
    /// Checks the file's columns against the table's, and its sizes against the limits and
    /// the file's length; returns the data's byte length.
    fn check(&self, header: &ParsedHeader) -> DfResult<u64> {
        let schema = table_schema(header).map_err(|e| df_err(e, &self.meta))?;
        check_same(&self.table, "the table's schema", &schema, &self.meta)?;
        let (_, len) = self
            .options
            .reader
            .check(&header.header)
            .map_err(|e| df_err(e, &self.meta))?;
        Ok(len)
    }

    /// Whether this partition owns byte `at` of the file.
    fn owns(&self, at: u64) -> bool {
        self.range.is_none_or(|(s, e)| s <= at && at < e)
    }

    async fn npy(self) -> DfResult<Batches> {
        let header = fetch_header(&self.store, &self.meta, &self.options).await?;
        let data_len = self.check(&header)?;
        let start = header.data_offset;
        let end = start
            .checked_add(data_len)
            .ok_or_else(|| df_err(Error::overflow("the data's end"), &self.meta))?;
        if end > self.meta.size {
            let e = Error::eof("the array data", end, self.meta.size);
            return Err(df_err(e, &self.meta));
        }
        if needs_gather(&header.header) {
            return self.gathered(end).await;
        }
        let decoder = RowDecoder::new(&header.header, Some(&self.indices), false)
            .map_err(|e| df_err(e, &self.meta))?;
        let rows = decoder.layout.rows;
        let row_bytes = decoder.layout.row_bytes as u64;
        // A row belongs to the partition whose range holds its first byte; rows of no bytes
        // all start at the data offset.
        let first_at = |at: u64| -> u64 {
            if row_bytes == 0 {
                if at <= start {
                    0
                } else {
                    rows
                }
            } else {
                at.saturating_sub(start).div_ceil(row_bytes).min(rows)
            }
        };
        let (mut lo, mut hi) = match self.range {
            None => (0, rows),
            Some((s, e)) => (first_at(s), first_at(e)),
        };
        if row_bytes == 0 && !self.owns(start) {
            (lo, hi) = (0, 0);
        }
        if let Some(limit) = self.limit {
            hi = hi.min(lo.saturating_add(limit as u64));
        }
        let per_batch = (self.batch_size as u64)
            .min((MAX_BATCH_BYTES as u64 / row_bytes.max(1)).max(1))
            .max(1);
        // Ranged reads of about FETCH_BYTES (a whole number of batches each), decoded a batch
        // at a time: one read per batch cost a file open and a blocking task per 8192 rows.
        let per_fetch = per_batch * (FETCH_BYTES / (per_batch * row_bytes.max(1))).max(1);
        let fetches: Vec<(u64, u64)> = (lo..hi)
            .step_by(usize::try_from(per_fetch).unwrap_or(usize::MAX))
            .map(|first| (first, per_fetch.min(hi - first)))
            .collect();
        let store = self.store.clone();
        let projected = self.projected.clone();
        let meta = self.meta.clone();
        let decoder = Arc::new(decoder);
        let stream = stream::iter(fetches)
            .map(move |(first, n)| {
                let store = store.clone();
                let meta = meta.clone();
                let at = start + first * row_bytes;
                let len = n * row_bytes;
                async move {
                    let bytes = if len == 0 {
                        Bytes::new()
                    } else {
                        store.get_range(&meta.location, at..at + len).await?
                    };
                    Ok::<_, datafusion::error::DataFusionError>((first, n, at, bytes, meta))
                }
            })
            .buffered(PREFETCH)
            .flat_map(move |fetched| {
                let batches: Batches = match fetched {
                    Err(e) => stream::once(async { Err(e) }).boxed(),
                    Ok((first, n, at, bytes, meta)) => {
                        let decoder = decoder.clone();
                        let projected = projected.clone();
                        let step = usize::try_from(per_batch).unwrap_or(usize::MAX);
                        let batches = (0..n).step_by(step).map(move |k| {
                            let m = per_batch.min(n - k);
                            let (s, e) = ((k * row_bytes) as usize, ((k + m) * row_bytes) as usize);
                            decoder
                                .decode(
                                    &bytes.slice(s..e),
                                    first + k,
                                    m as usize,
                                    at + k * row_bytes,
                                )
                                .and_then(|b| retag(&projected, b))
                                .map_err(|e| df_err(e, &meta))
                        });
                        stream::iter(batches).boxed()
                    }
                };
                batches
            });
        Ok(stream.boxed())
    }

    /// A Fortran-order N-d file: its rows are not contiguous, so the partition that owns the
    /// data's first byte reads the file whole and gathers the rows.
    async fn gathered(self, end: u64) -> DfResult<Batches> {
        if !self.owns(0) {
            return Ok(stream::empty().boxed());
        }
        let bytes = self.store.get_range(&self.meta.location, 0..end).await?;
        let builder = self.batch_builder();
        let reader = builder
            .from_reader(Cursor::new(bytes))
            .map_err(|e| df_err(e, &self.meta))?;
        Ok(self.forward(reader))
    }

    /// One member of an `.npz` archive, read by one partition.
    async fn npz_member(self, key: String) -> DfResult<Batches> {
        let mut npz = open_archive(&self.store, &self.meta, &self.options).await?;
        let header = {
            let meta = self.meta.clone();
            let key = key.clone();
            let (npz2, header) = blocking(move || {
                let h = npz.header(&key).map_err(|e| df_err(e, &meta));
                (npz, h)
            })
            .await;
            npz = npz2;
            header?
        };
        self.check(&header)?;
        let builder = self.batch_builder();
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(PREFETCH);
        let projected = self.projected.clone();
        let meta = self.meta.clone();
        tokio::task::spawn_blocking(move || {
            let result = npz
                .by_key(&key)
                .and_then(|member| builder.from_npz_member(member));
            let mut reader = match result {
                Ok(r) => r,
                Err(e) => {
                    let _ = tx.blocking_send(Err(df_err(e, &meta)));
                    return;
                }
            };
            loop {
                let item = match reader.next_batch() {
                    Ok(None) => return,
                    Ok(Some(b)) => retag(&projected, b).map_err(|e| df_err(e, &meta)),
                    Err(e) => Err(df_err(e, &meta)),
                };
                let failed = item.is_err();
                // A closed channel: the query stopped reading (a limit, an error elsewhere).
                if tx.blocking_send(item).is_err() || failed {
                    return;
                }
            }
        });
        let stream = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(stream.boxed())
    }

    /// A batch reader of the projected columns with the scan's batch size.
    fn batch_builder(&self) -> BatchReaderBuilder {
        BatchReaderBuilder::new()
            .reader_options(self.options.reader.clone())
            .column_indices(self.indices.clone())
            .batch_size(self.batch_size)
            .parallel(false)
    }

    /// The batches of a reader held in memory, retagged with the table's schema.
    fn forward(self, mut reader: crate::arrow::NpyBatchReader<'static>) -> Batches {
        let projected = self.projected.clone();
        let meta = self.meta;
        let batches = std::iter::from_fn(move || reader.next_batch().transpose());
        stream::iter(batches.map(move |b| retag(&projected, b?)))
            .map(move |r: Result<RecordBatch>| r.map_err(|e| df_err(e, &meta)))
            .boxed()
    }
}

/// `batch` with the table's (projected) schema: the same columns; the file's own schema
/// differs in its metadata (the shape).
fn retag(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    RecordBatch::try_new_with_options(
        schema.clone(),
        batch.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(crate::arrow::arrow_err)
}
