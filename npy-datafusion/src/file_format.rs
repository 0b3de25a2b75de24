//! [`NpyFormat`] (DataFusion's `FileFormat` for `.npy` files and `.npz` members) and its
//! factory: schema inference and exact row counts from the headers, fetched through the
//! object store (a row count only for a file or member that holds the data its header
//! declares); and the writer plan of `COPY ... TO` and `INSERT INTO` ([`NpySink`]), with
//! [`NpzFormatFactory`] for `.npz` outputs.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{GetExt, Statistics};
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory};
use datafusion::datasource::listing::ListingOptions;
use datafusion::datasource::physical_plan::{
    FileScanConfig, FileScanConfigBuilder, FileSinkConfig, FileSource,
};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::physical_expr::LexRequirement;
use datafusion::physical_plan::ExecutionPlan;
use object_store::{ObjectMeta, ObjectStore};

use super::archive::table_contents;
use super::error::{df_err, df_err_in};
use super::extent::{data_extent, held_extent};
use super::header::typed;
use super::objects::object_schema;
use super::options::NpyReadOptions;
use super::recorded::sidecar_records;
use super::schema::{check_same, table_schema};
use super::source::NpySource;
use super::stats::{apply_recorded, recorded_columns};
use super::write::file::Kind;
use super::write::options::DEFAULT_MEMBER;
use super::write::order::{planned_order, FileOrder};
use super::write::{NpySink, NpyWriteOptions};
use npy_serde::header::Contents;

/// The `.npy` file format for DataFusion's listing tables; see the [module docs](super). It
/// also writes: `COPY ... TO` and `INSERT INTO` a table of it (see
/// [Writing](crate#writing-copy-to-and-insert-into)).
#[derive(Clone, Debug, Default)]
pub struct NpyFormat {
    options: NpyReadOptions,
    write: NpyWriteOptions,
}

impl NpyFormat {
    /// A format reading with `options` (header and data limits, an `.npz` member).
    pub fn new(options: NpyReadOptions) -> Self {
        NpyFormat {
            options,
            write: NpyWriteOptions::default(),
        }
    }

    /// The format writing with `write` (`COPY ... TO`, `INSERT INTO`).
    pub fn with_write_options(mut self, write: NpyWriteOptions) -> Self {
        self.write = write;
        self
    }

    /// The options.
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The write options.
    pub fn write_options(&self) -> &NpyWriteOptions {
        &self.write
    }

    /// What each file this format writes is: a `.npy` file of rows, an archive of one member of
    /// rows (the `member` option), or an archive of columns (`layout=columns`, archives only).
    fn kind(&self) -> DfResult<Kind> {
        match (self.write.layout, &self.options.member) {
            (super::options::TableLayout::Columns, Some(_)) => Ok(Kind::Columns),
            (super::options::TableLayout::Columns, None) => Err(DataFusionError::Configuration(
                "npy write option layout=columns: a .npy file holds one array of rows; the \
                 columns layout (one member per column) is an .npz archive: write to a .npz \
                 path or STORED AS NPZ"
                    .into(),
            )),
            (_, Some(key)) => Ok(Kind::Member(key.clone())),
            (_, None) => Ok(Kind::Npy),
        }
    }
}

/// The format of `read` and `write` with SQL's `OPTIONS` applied: each key (`format.` prefix
/// or not) is a write option ([`NpyWriteOptions::set`]), `layout` or `sort_order` (both), or a
/// read option ([`NpyReadOptions::set`]); keys of DataFusion's other namespaces
/// (`execution.`) are not the format's.
fn format_with(
    mut read: NpyReadOptions,
    mut write: NpyWriteOptions,
    format_options: &HashMap<String, String>,
) -> DfResult<NpyFormat> {
    let mut keys: Vec<(&String, &String)> = format_options.iter().collect();
    keys.sort();
    for (full, value) in keys {
        let key = full.strip_prefix("format.").unwrap_or(full);
        if NpyWriteOptions::is_write_key(key) {
            write = write.set(key, value)?;
        } else if super::write::options::SHARED_KEYS.contains(&key) {
            read = read.set(key, value)?;
            write = write.set(key, value)?;
        } else if full.starts_with("format.") || !full.contains('.') {
            read = read.set(key, value)?;
        }
    }
    Ok(NpyFormat::new(read).with_write_options(write))
}

/// Creates [`NpyFormat`]s for `CREATE EXTERNAL TABLE ... STORED AS NPY` and `COPY ... TO
/// 'x.npy'` (register it with [`register_npy_format`](super::register_npy_format)). `OPTIONS`
/// keys: those of [`NpyReadOptions::set`], as [`table_spec_help`](super::table_spec_help) lists
/// them (`member`, an `.npz` member's key: the table reads, and writes, that member of each
/// archive; `max_header_size`, `max_data_size`, ...), and the write options of
/// [`NpyWriteOptions`] (`nulls`, `decimals`, `string_width`, ...).
#[derive(Clone, Debug, Default)]
pub struct NpyFormatFactory {
    options: NpyReadOptions,
    write: NpyWriteOptions,
}

impl NpyFormatFactory {
    /// A factory whose formats start from `options` (SQL `OPTIONS` override them).
    pub fn new(options: NpyReadOptions) -> Self {
        NpyFormatFactory {
            options,
            write: NpyWriteOptions::default(),
        }
    }

    /// The factory whose formats write with `write` unless SQL `OPTIONS` say otherwise.
    pub fn with_write_options(mut self, write: NpyWriteOptions) -> Self {
        self.write = write;
        self
    }

    /// The options its formats start from.
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The write options its formats start from.
    pub fn write_options(&self) -> &NpyWriteOptions {
        &self.write
    }

    /// This factory with a statement's SQL `OPTIONS` applied, as [`create`] applies them: what
    /// a Ballista client sends for a `COPY ... TO` (datafusion-proto's `COPY` message carries
    /// the format, not the statement's options). A bad key or value is the error `create`
    /// gives.
    ///
    /// [`create`]: FileFormatFactory::create
    // For the Ballista codecs.
    #[cfg(feature = "ballista")]
    pub(crate) fn with_format_options(
        &self,
        format_options: &HashMap<String, String>,
    ) -> DfResult<Self> {
        let format = format_with(self.options.clone(), self.write.clone(), format_options)?;
        Ok(NpyFormatFactory {
            options: format.options,
            write: format.write,
        })
    }
}

/// Creates [`NpyFormat`]s over `.npz` archives, for `COPY ... TO 'x.npz'`, `STORED AS NPZ`
/// and `CREATE EXTERNAL TABLE ... STORED AS NPZ` (registered by
/// [`register_npy_format`](super::register_npy_format)): the rows are the member `member`
/// of each archive (default `arr_0`, NumPy's name for `np.savez(path, a)`'s array), or, with
/// `OPTIONS ('layout' 'columns')`, each member is a column (what `npy convert --layout
/// columns` writes; a table of them is a column table). The other options are
/// [`NpyFormatFactory`]'s.
#[derive(Clone, Debug, Default)]
pub struct NpzFormatFactory {
    options: NpyReadOptions,
    write: NpyWriteOptions,
}

impl NpzFormatFactory {
    /// A factory whose formats start from `options` and `write` (SQL `OPTIONS` override
    /// them).
    pub fn new(options: NpyReadOptions, write: NpyWriteOptions) -> Self {
        NpzFormatFactory { options, write }
    }

    /// The options its formats start from.
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The write options its formats start from.
    pub fn write_options(&self) -> &NpyWriteOptions {
        &self.write
    }

    /// This factory with a statement's SQL `OPTIONS` applied (see
    /// [`NpyFormatFactory::with_format_options`]).
    // For the Ballista codecs.
    #[cfg(feature = "ballista")]
    pub(crate) fn with_format_options(
        &self,
        format_options: &HashMap<String, String>,
    ) -> DfResult<Self> {
        let format = self.archives(format_options)?;
        Ok(NpzFormatFactory {
            options: format.options,
            write: format.write,
        })
    }

    /// The format of these options: archives, of the member `arr_0` unless one is named.
    fn archives(&self, format_options: &HashMap<String, String>) -> DfResult<NpyFormat> {
        let mut format = format_with(self.options.clone(), self.write.clone(), format_options)?;
        if format.options.member.is_none() {
            format.options.member = Some(DEFAULT_MEMBER.to_string());
        }
        Ok(format)
    }
}

impl GetExt for NpzFormatFactory {
    fn get_ext(&self) -> String {
        "npz".to_string()
    }
}

impl FileFormatFactory for NpzFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> DfResult<Arc<dyn FileFormat>> {
        Ok(Arc::new(self.archives(format_options)?))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        let format = self.archives(&HashMap::new());
        Arc::new(format.unwrap_or_else(|_| NpyFormat::new(self.options.clone())))
    }
}

impl GetExt for NpyFormatFactory {
    fn get_ext(&self) -> String {
        "npy".to_string()
    }
}

impl FileFormatFactory for NpyFormatFactory {
    fn create(
        &self,
        _state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> DfResult<Arc<dyn FileFormat>> {
        let format = format_with(self.options.clone(), self.write.clone(), format_options)?;
        Ok(Arc::new(format))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(NpyFormat::new(self.options.clone()).with_write_options(self.write.clone()))
    }
}

#[async_trait]
impl FileFormat for NpyFormat {
    fn get_ext(&self) -> String {
        self.options.extension().trim_start_matches('.').to_string()
    }

    fn get_ext_with_compression(&self, c: &FileCompressionType) -> DfResult<String> {
        if c.is_compressed() {
            return Err(DataFusionError::NotImplemented(
                "compressed .npy files (an .npz archive's members are read with the `member` \
                 option)"
                    .into(),
            ));
        }
        Ok(self.get_ext())
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        None
    }

    async fn infer_schema(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> DfResult<SchemaRef> {
        if self.options.layout == super::options::TableLayout::Columns {
            return Err(DataFusionError::Configuration(
                "a column table (layout=columns) is not a listing table of row files: register \
                 it with register_npy, register_spec or CREATE EXTERNAL TABLE (after \
                 register_npy_format)"
                    .into(),
            ));
        }
        let mut table: Option<(Schema, String)> = None;
        for object in objects {
            let schema = match self.contents(store, object).await? {
                // Its schema depends on its values: read whole.
                (Contents::Objects(_), _) if self.options.reader.allow_pickle_data => {
                    object_schema(store, object, &self.options).await?
                }
                (contents, size) => {
                    let header = typed(contents, object, self.options.member())?;
                    held_extent(&header, size)
                        .map_err(|e| df_err_in(e, object, self.options.member()))?;
                    table_schema(&header).map_err(|e| df_err(e, object))?
                }
            };
            match &table {
                None => table = Some((schema, object.location.to_string())),
                Some((first, first_path)) => check_same(first, first_path, &schema, object)?,
            }
        }
        let schema = table.map(|(s, _)| s).unwrap_or_else(Schema::empty);
        Ok(Arc::new(schema))
    }

    async fn infer_stats(
        &self,
        _state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> DfResult<Statistics> {
        // The exact row count answers `count(*)` without a scan: it is the header's only for
        // a file (member) that holds the data the header declares.
        let (header, size) = match self.contents(store, object).await? {
            // An object array's rows are known once its pickle is read: not here.
            (Contents::Objects(_), _) if self.options.reader.allow_pickle_data => {
                return Ok(Statistics::new_unknown(&table_schema));
            }
            (contents, size) => (typed(contents, object, self.options.member())?, size),
        };
        let (start, end) = data_extent(&self.options, &header, size)
            .map_err(|e| df_err_in(e, object, self.options.member()))?;
        let data_len = end - start;
        let rows = npy_arrow::rows_of(&header.header).map_err(|e| df_err(e, object))?;
        let mut stats = Statistics::new_unknown(&table_schema).with_num_rows(Precision::Exact(
            usize::try_from(rows).unwrap_or(usize::MAX),
        ));
        stats.total_byte_size = Precision::Exact(usize::try_from(data_len).unwrap_or(usize::MAX));
        // The columns' statistics recorded beside the file (`FILE.npy.order`, as `npy convert`
        // writes it), inexact, while the record holds for the file's rows and each column's
        // name and type: DataFusion orders joins by them.
        if self.options.member().is_none()
            && let Some(recorded) = sidecar_records(store, &object.location).await.stats
        {
            let columns = recorded_columns(&recorded, rows, &table_schema, |_, _| true);
            apply_recorded(&mut stats, &columns, rows, 0, rows);
        }
        Ok(stats)
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut source: Arc<dyn FileSource> = Arc::new(NpySource::new(
            conf.file_source.table_schema().clone(),
            self.options.clone(),
        ));
        if let Some(projection) = conf.file_source.projection()
            && let Some(projected) = source.try_pushdown_projection(projection)?
        {
            source = projected;
        }
        let config = FileScanConfigBuilder::from(conf)
            .with_source(source)
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(NpySource::new(table_schema, self.options.clone()))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if conf.insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{} into .npy/.npz files: only appends are written (INSERT INTO, COPY TO)",
                conf.insert_op
            )));
        }
        // An option naming a column the files have not (or a partition column) fails the
        // statement here, before any file is written.
        let files = datafusion::datasource::file_format::write::get_writer_schema(&conf);
        let partitions = super::write::partition_names(&conf);
        (self.write).builder_over(npy_arrow::BatchWriterBuilder::new(), &files, &partitions)?;
        FileOrder::new(&self.write, None, &files)?;
        let planned = planned_order(&input, order_requirements.as_ref());
        let sink = NpySink::new(conf, self.write.clone(), self.kind()?).with_planned_order(planned);
        let sink = Arc::new(sink);
        Ok(Arc::new(DataSinkExec::new(input, sink, order_requirements)))
    }
}

impl NpyFormat {
    /// What `object` holds (its member, for an `.npz` table), from its header, and the size of
    /// the file (of the member) it heads.
    async fn contents(
        &self,
        store: &Arc<dyn ObjectStore>,
        object: &ObjectMeta,
    ) -> DfResult<(Contents, u64)> {
        table_contents(store, object, &self.options).await
    }
}

impl NpyReadOptions {
    /// DataFusion's listing options for a table of these files (the format [`NpyFormat`]),
    /// each file sorted in the declared orders ([`sorted_by`](Self::sorted_by)).
    pub fn listing_options(&self) -> ListingOptions {
        ListingOptions::new(Arc::new(NpyFormat::new(self.clone())))
            .with_file_extension(self.extension())
            .with_file_sort_order(self.sort_exprs())
    }
}
