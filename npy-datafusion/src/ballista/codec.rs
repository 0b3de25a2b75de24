//! The extension codecs: [`NpyLogicalCodec`] carries [`NpyTable`]s (with the write options of
//! their `INSERT INTO`s) and the [`NpyFormatFactory`] / [`NpzFormatFactory`] of `COPY ... TO`
//! plans from the client to the scheduler; [`NpyPhysicalCodec`] carries the scan nodes (a
//! `DataSourceExec` over a `FileScanConfig` with [`NpySource`], or with a column table's
//! source, whose file groups are runs of rows) and the sink of `COPY TO` and `INSERT INTO` (a
//! `DataSinkExec` with an [`NpySink`]) from the scheduler to the executors. Every other node
//! goes to Ballista's own codecs.
//!
//! Our messages are protobuf (prost) behind a tag that starts with a zero byte, which no
//! protobuf message starts with (field number 0 is invalid), so a buffer is ours or
//! Ballista's without ambiguity. The scan's file groups, byte ranges, projection, limit,
//! statistics and schema are datafusion-proto's own `FileScanExecConf`, written and read by
//! its helpers; only the read options are ours: their key/value entries (the table options
//! declared once in `datafusion/options.rs`), set again on the other side. A filter pushed
//! into the scan travels as datafusion-proto's physical expression (a dynamic filter as its
//! value when the plan is sent). The sink's output (URL, table paths, the files an `INSERT`
//! found, partition columns, output schema) is datafusion-proto's `FileSinkConfig`, as for
//! DataFusion's own `CsvSink` and `ParquetSink`; its write options ([`NpyWriteOptions`]'s
//! entries) and file kind (`.npy`, an archive's member, an archive of columns) are ours. The
//! tags end in the message version (`/2`: options as entries; the format's `/3`: read and
//! write options and the archive flag; the table's `/3`: its partition columns, and its
//! declared orders applied to the rebuilt listing table); a cluster and its clients are one
//! build. A message under one of our tags of another version (a peer of another build) is
//! refused, saying so, rather than handed to Ballista's codec or read without what it
//! lacks.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSink, FileSinkConfig, FileSource};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion::physical_expr::{LexRequirement, PhysicalSortExpr};
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::from_proto::{
    parse_protobuf_file_scan_config, parse_table_schema_from_proto,
};
use datafusion_proto::physical_plan::to_proto::serialize_file_scan_config;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::{
    FileScanExecConf, FileSinkConfig as FileSinkConfigProto, PhysicalExprNode,
    PhysicalSortExprNode, PhysicalSortExprNodeCollection,
};
use prost::Message;

use super::columns::{
    column_scan, scan_options, scan_proto, scan_source, table_from, table_proto, ColumnScanProto,
    COLUMN_SCAN_TAG, COLUMN_TABLE_TAG,
};
use super::errors::as_text;
use super::prefilter::{prefilter_from, prefilter_proto, PREFILTER_TAG};
use super::table::NpyTable;
use super::wire::{
    malformed, options_from_proto, options_to_proto, write_options_from_proto,
    write_options_to_proto, OptionsProto,
};
use crate::write::file::Kind;
use crate::write::order::planned_order;
use crate::{
    NpyFormat, NpyFormatFactory, NpyReadOptions, NpySink, NpySource, NpyWriteOptions,
    NpzFormatFactory,
};

/// The tags our buffers start with (a zero byte first: see the module docs).
/// Version 3 carries the partition columns: a peer of version 2 would rebuild the table
/// without them (its scans would look for them in the files).
const TABLE_TAG: &[u8] = b"\0npy-serde/table/3\0";
const FORMAT_TAG: &[u8] = b"\0npy-serde/format/3\0";
const SCAN_TAG: &[u8] = b"\0npy-serde/scan/2\0";
const SINK_TAG: &[u8] = b"\0npy-serde/sink/1\0";
/// What every tag of ours starts with.
const TAG_PREFIX: &[u8] = b"\0npy-serde/";

/// The error for a buffer under a tag of ours that this build does not read (another version
/// of a message, or none of ours), instead of handing it to Ballista's codec.
fn unknown_tag(buf: &[u8]) -> Option<DataFusionError> {
    let name = |tag: &[u8]| {
        let rest = tag.strip_prefix(TAG_PREFIX).unwrap_or(tag);
        let end = rest.iter().take(64).position(|&b| b == 0).unwrap_or(0);
        String::from_utf8_lossy(&rest[..end]).into_owned()
    };
    buf.strip_prefix(TAG_PREFIX)?;
    let ours = [
        TABLE_TAG,
        FORMAT_TAG,
        SCAN_TAG,
        SINK_TAG,
        COLUMN_TABLE_TAG,
        COLUMN_SCAN_TAG,
        PREFILTER_TAG,
    ];
    Some(DataFusionError::Internal(format!(
        "npy-serde codec: a message {:?}, which this build does not read (it reads {}): a \
         Ballista cluster and its clients must run the same build of npy-datafusion",
        name(buf),
        ours.map(name).join(", ")
    )))
}

/// An [`NpyTable`]: its URLs, the extension of the files a directory's table reads, and
/// the read and write options (the schema travels in datafusion-proto's own message).
#[derive(Clone, PartialEq, Message)]
struct TableProto {
    #[prost(string, repeated, tag = "1")]
    paths: Vec<String>,
    #[prost(string, tag = "2")]
    file_extension: String,
    #[prost(message, optional, tag = "3")]
    options: Option<OptionsProto>,
    /// Each path's glob (`""` for none): a `ListingTableUrl`'s text is its prefix alone, so
    /// without them a glob's table read every file under its prefix.
    #[prost(string, repeated, tag = "4")]
    globs: Vec<String>,
    /// The write options of its `INSERT INTO`s (the options it was created with).
    #[prost(message, optional, tag = "5")]
    write: Option<OptionsProto>,
    /// Its partition columns' names, in order: the last columns of the table's schema (which
    /// datafusion-proto carries, with their types).
    #[prost(string, repeated, tag = "6")]
    partition_columns: Vec<String>,
}

/// A format factory of `COPY ... TO` ([`NpyFormatFactory`], or [`NpzFormatFactory`] when
/// `archives`): the options its formats start from, the statement's `OPTIONS` applied on the
/// client (see [`NpyTableRule`](super::NpyTableRule)).
#[derive(Clone, PartialEq, Message)]
struct FormatProto {
    #[prost(message, optional, tag = "1")]
    options: Option<OptionsProto>,
    #[prost(message, optional, tag = "2")]
    write: Option<OptionsProto>,
    #[prost(bool, tag = "3")]
    archives: bool,
}

/// The sink node (a `DataSinkExec` with an [`NpySink`]): datafusion-proto's `FileSinkConfig`,
/// the statement's URL (which that message leaves out: plans show it), the write options, what
/// each file is, and the order the input must have (if any). The input plan is the node's one
/// child, encoded by datafusion-proto.
#[derive(Clone, PartialEq, Message)]
struct SinkProto {
    #[prost(message, optional, tag = "1")]
    config: Option<FileSinkConfigProto>,
    #[prost(string, tag = "2")]
    original_url: String,
    #[prost(message, optional, tag = "3")]
    write: Option<OptionsProto>,
    /// The archives' one member of rows (`Kind::Member`).
    #[prost(string, optional, tag = "4")]
    member: Option<String>,
    /// Archives of one member per column (`Kind::Columns`).
    #[prost(bool, tag = "5")]
    columns: bool,
    #[prost(message, optional, tag = "6")]
    sort_order: Option<PhysicalSortExprNodeCollection>,
}

/// The scan node: datafusion-proto's `FileScanExecConf`, our options and the batch size.
#[derive(Clone, PartialEq, Message)]
struct ScanProto {
    #[prost(message, optional, tag = "1")]
    conf: Option<FileScanExecConf>,
    #[prost(message, optional, tag = "2")]
    options: Option<OptionsProto>,
    #[prost(uint64, tag = "3")]
    batch_size: u64,
    /// The filter pushed into the scan, over the table's columns.
    #[prost(message, optional, tag = "4")]
    predicate: Option<PhysicalExprNode>,
}

fn encode(tag: &[u8], message: &impl Message, buf: &mut Vec<u8>) -> DfResult<()> {
    buf.extend_from_slice(tag);
    message
        .encode(buf)
        .map_err(|e| DataFusionError::Internal(format!("npy-serde codec: {e}")))
}

fn decode<M: Message + Default>(bytes: &[u8]) -> DfResult<M> {
    M::decode(bytes).map_err(|e| malformed(&e.to_string()))
}

/// Ballista's logical codec, plus the `.npy` table ([`NpyTable`]) and file format
/// ([`NpyFormatFactory`]). Give it to the client session (done by
/// [`session_config`](super::session_config)) and to the scheduler
/// ([`scheduler_config`](super::scheduler_config)).
///
/// ```
/// use std::sync::Arc;
/// use ballista_core::extension::SessionConfigExt;
/// use npy_datafusion::ballista::{NpyLogicalCodec, NpyPhysicalCodec};
///
/// let config = datafusion::prelude::SessionConfig::new_with_ballista()
///     .with_ballista_logical_extension_codec(Arc::new(NpyLogicalCodec::default()))
///     .with_ballista_physical_extension_codec(Arc::new(NpyPhysicalCodec::default()));
/// # let _ = config;
/// ```
#[derive(Debug)]
pub struct NpyLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl Default for NpyLogicalCodec {
    fn default() -> Self {
        NpyLogicalCodec::new(Arc::new(BallistaLogicalExtensionCodec::default()))
    }
}

impl NpyLogicalCodec {
    /// The `.npy` table and format over `inner`, which gets every other node (default:
    /// Ballista's codec).
    pub fn new(inner: Arc<dyn LogicalExtensionCodec>) -> Self {
        NpyLogicalCodec { inner }
    }
}

/// The user-defined function methods of a codec trait (the same in the logical and the
/// physical one), handed to `self.inner`: this crate adds no functions.
macro_rules! delegate_functions {
    () => {
        fn try_decode_udf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<ScalarUDF>> {
            self.inner.try_decode_udf(name, buf)
        }

        fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udf(node, buf)
        }

        fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<AggregateUDF>> {
            self.inner.try_decode_udaf(name, buf)
        }

        fn try_encode_udaf(&self, node: &AggregateUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udaf(node, buf)
        }

        fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> DfResult<Arc<WindowUDF>> {
            self.inner.try_decode_udwf(name, buf)
        }

        fn try_encode_udwf(&self, node: &WindowUDF, buf: &mut Vec<u8>) -> DfResult<()> {
            self.inner.try_encode_udwf(node, buf)
        }
    };
}

impl LogicalExtensionCodec for NpyLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> DfResult<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> DfResult<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: arrow_schema::SchemaRef,
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn TableProvider>> {
        if let Some(bytes) = buf.strip_prefix(COLUMN_TABLE_TAG) {
            return table_from(decode(bytes)?, schema);
        }
        let Some(bytes) = buf.strip_prefix(TABLE_TAG) else {
            if let Some(e) = unknown_tag(buf) {
                return Err(e);
            }
            return self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let proto: TableProto = decode(bytes)?;
        let options = options_from_proto(proto.options)?;
        let write = write_options_from_proto(proto.write)?;
        let globs = proto.globs.iter().map(Some).chain(std::iter::repeat(None));
        let paths = proto
            .paths
            .iter()
            .zip(globs)
            .map(|(path, glob)| match glob.filter(|g| !g.is_empty()) {
                Some(glob) => ListingTableUrl::parse(path)?.with_glob(glob),
                None => ListingTableUrl::parse(path),
            })
            .collect::<DfResult<Vec<_>>>()?;
        // The scheduler's session decides the file groups (`target_partitions`), as for
        // the listing tables datafusion-proto decodes.
        let (file_schema, partitions) = split_partitions(&schema, &proto.partition_columns)?;
        let format = NpyFormat::new(options.clone()).with_write_options(write);
        let listing = ListingOptions::new(Arc::new(format))
            .with_file_extension(&proto.file_extension)
            .with_table_partition_cols(partitions)
            .with_file_sort_order(options.sort_exprs());
        let config = ListingTableConfig::new_with_multi_paths(paths.clone())
            .with_listing_options(listing)
            .with_schema(file_schema);
        let table = ListingTable::try_new(config)?
            .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache());
        if field_names(&table.schema()) != field_names(&schema) {
            return Err(malformed(&format!(
                "the table's columns with its partition columns are {:?}, not the plan's {:?}",
                field_names(&table.schema()),
                field_names(&schema)
            )));
        }
        Ok(Arc::new(NpyTable::from_parts(
            table,
            options,
            paths,
            proto.file_extension,
        )))
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> DfResult<()> {
        if let Some(proto) = table_proto(&node) {
            return encode(COLUMN_TABLE_TAG, &proto, buf);
        }
        let Some(table) = node.downcast_ref::<NpyTable>() else {
            return self.inner.try_encode_table_provider(table_ref, node, buf);
        };
        let proto = TableProto {
            paths: table.paths().iter().map(|u| u.to_string()).collect(),
            globs: (table.paths().iter())
                .map(|u| {
                    u.get_glob()
                        .as_ref()
                        .map_or(String::new(), |g| g.to_string())
                })
                .collect(),
            file_extension: table.file_extension().to_string(),
            options: Some(options_to_proto(table.options())),
            write: Some(write_options_to_proto(table.write_options())),
            partition_columns: table.partition_columns().to_vec(),
        };
        encode(TABLE_TAG, &proto, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        let Some(bytes) = buf.strip_prefix(FORMAT_TAG) else {
            if let Some(e) = unknown_tag(buf) {
                return Err(e);
            }
            return self.inner.try_decode_file_format(buf, ctx);
        };
        let proto: FormatProto = decode(bytes)?;
        let options = options_from_proto(proto.options)?;
        let write = write_options_from_proto(proto.write)?;
        Ok(if proto.archives {
            Arc::new(NpzFormatFactory::new(options, write))
        } else {
            Arc::new(NpyFormatFactory::new(options).with_write_options(write))
        })
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        let proto = if let Some(f) = node.downcast_ref::<NpyFormatFactory>() {
            format_proto(f.options(), f.write_options(), false)
        } else if let Some(f) = node.downcast_ref::<NpzFormatFactory>() {
            format_proto(f.options(), f.write_options(), true)
        } else {
            return self.inner.try_encode_file_format(buf, node);
        };
        encode(FORMAT_TAG, &proto, buf)
    }

    delegate_functions!();
}

/// A table's schema (from the plan) split into the schema of its files and its partition
/// columns `names` (with their types), which must be its last columns, each once.
fn split_partitions(
    schema: &arrow_schema::Schema,
    names: &[String],
) -> DfResult<(
    arrow_schema::SchemaRef,
    Vec<(String, arrow_schema::DataType)>,
)> {
    let fields = schema.fields();
    let files = fields.len().checked_sub(names.len()).ok_or_else(|| {
        malformed(&format!(
            "{} partition columns in a table of {} columns",
            names.len(),
            fields.len()
        ))
    })?;
    let mut partitions = Vec::with_capacity(names.len());
    for (name, field) in names.iter().zip(&fields[files..]) {
        if field.name() != name {
            return Err(malformed(&format!(
                "the partition column {name:?} is not among the table's last columns {:?}",
                field_names(schema)[files..].to_vec()
            )));
        }
        partitions.push((name.clone(), field.data_type().clone()));
    }
    let file_fields: Vec<_> = fields[..files].to_vec();
    let file_schema =
        arrow_schema::Schema::new_with_metadata(file_fields, schema.metadata().clone());
    Ok((Arc::new(file_schema), partitions))
}

fn field_names(schema: &arrow_schema::Schema) -> Vec<&str> {
    schema.fields().iter().map(|f| f.name().as_str()).collect()
}

fn format_proto(options: &NpyReadOptions, write: &NpyWriteOptions, archives: bool) -> FormatProto {
    FormatProto {
        options: Some(options_to_proto(options)),
        write: Some(write_options_to_proto(write)),
        archives,
    }
}

/// Ballista's physical codec, plus the `.npy` scan: a `DataSourceExec` over a
/// `FileScanConfig` whose source is [`NpySource`], with its file groups and byte ranges,
/// projection, limit, pushed filter and read options (header, data and empty-value limits, `.npz`
/// member); and the sink of `COPY ... TO` and `INSERT INTO`: a `DataSinkExec` with an
/// [`NpySink`], with its output (URL, the files an `INSERT` found, partition columns, schema),
/// write options ([`NpyWriteOptions`]) and file kind. The executor that runs the sink writes
/// the files through the object store its own runtime has for the output URL. Give it to the client session (done by [`session_config`](super::session_config)),
/// the scheduler ([`scheduler_config`](super::scheduler_config)) and every executor
/// ([`executor_config`](super::executor_config)).
///
/// ```
/// use datafusion_proto::physical_plan::PhysicalExtensionCodec;
/// let codec = npy_datafusion::ballista::NpyPhysicalCodec::default();
/// let _: &dyn PhysicalExtensionCodec = &codec;
/// ```
#[derive(Debug)]
pub struct NpyPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
    /// The largest `max_header_size` and `max_data_size` a decoded scan may read with.
    ceiling: [(&'static str, Option<u64>); 2],
}

impl Default for NpyPhysicalCodec {
    fn default() -> Self {
        NpyPhysicalCodec::new(Arc::new(BallistaPhysicalExtensionCodec::default()))
    }
}

impl NpyPhysicalCodec {
    /// The `.npy` scan over `inner`, which gets every other node (default: Ballista's
    /// codec).
    pub fn new(inner: Arc<dyn PhysicalExtensionCodec>) -> Self {
        NpyPhysicalCodec {
            inner,
            ceiling: [("max_header_size", None), ("max_data_size", None)],
        }
    }

    /// An executor's own read limits: every scan it decodes reads with at most
    /// `max_header_size` header bytes and `max_data_size` data bytes per file, whatever
    /// the client's table options ask for (`None`: the client's, unbounded here).
    ///
    /// ```
    /// let codec = npy_datafusion::ballista::NpyPhysicalCodec::default()
    ///     .with_read_ceiling(Some(20_000), Some(1 << 30));
    /// # let _ = codec;
    /// ```
    pub fn with_read_ceiling(
        mut self,
        max_header_size: Option<u64>,
        max_data_size: Option<u64>,
    ) -> Self {
        self.ceiling = [
            ("max_header_size", max_header_size),
            ("max_data_size", max_data_size),
        ];
        self
    }

    /// `options` with each limit at most this codec's ceiling.
    fn limit_options(&self, mut options: NpyReadOptions) -> DfResult<NpyReadOptions> {
        for (key, ceiling) in self.ceiling {
            let Some(ceiling) = ceiling else { continue };
            let asked = options
                .entries()
                .into_iter()
                .find(|e| e.key == key)
                .and_then(|e| e.value)
                .and_then(|v| v.parse::<u64>().ok());
            let limit = asked.map_or(ceiling, |a| a.min(ceiling));
            options = options.set(key, &limit.to_string())?;
        }
        Ok(options)
    }
}

impl NpyPhysicalCodec {
    /// A scan's pushed filter as datafusion-proto's message. A dynamic filter (a join's, a
    /// TopK's) goes as its value now: its producer stays on this side.
    fn predicate_proto(
        &self,
        predicate: Option<Arc<dyn PhysicalExpr>>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Option<PhysicalExprNode>> {
        match predicate {
            Some(p) => Ok(Some(
                proto_converter.physical_expr_to_proto(&snapshot_physical_expr(p)?, self)?,
            )),
            None => Ok(None),
        }
    }
}

/// A scan's pushed filter from its message, over the table's columns.
fn predicate_from(
    proto: Option<&PhysicalExprNode>,
    table_schema: &TableSchema,
    decode_ctx: &PhysicalPlanDecodeContext<'_>,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> DfResult<Option<Arc<dyn PhysicalExpr>>> {
    proto
        .map(|p| proto_converter.proto_to_physical_expr(p, table_schema.table_schema(), decode_ctx))
        .transpose()
}

/// The sink node and its sink, if `node` writes `.npy` files or `.npz` archives.
fn npy_sink(node: &dyn ExecutionPlan) -> Option<(&DataSinkExec, &NpySink)> {
    let exec = node.downcast_ref::<DataSinkExec>()?;
    let sink = exec.sink().downcast_ref::<NpySink>()?;
    Some((exec, sink))
}

impl NpyPhysicalCodec {
    /// The sink node's message.
    fn sink_proto(
        &self,
        exec: &DataSinkExec,
        sink: &NpySink,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<SinkProto> {
        let config = FileSink::config(sink);
        let (member, columns) = match sink.kind() {
            Kind::Npy => (None, false),
            Kind::Member(key) => (Some(key.clone()), false),
            Kind::Columns => (None, true),
        };
        let sort_order = match exec.sort_order() {
            Some(requirement) => {
                let nodes = (requirement.iter())
                    .map(|r| {
                        let e = PhysicalSortExpr::from(r.clone());
                        Ok(PhysicalSortExprNode {
                            expr: Some(Box::new(
                                proto_converter.physical_expr_to_proto(&e.expr, self)?,
                            )),
                            asc: !e.options.descending,
                            nulls_first: e.options.nulls_first,
                        })
                    })
                    .collect::<DfResult<Vec<_>>>()?;
                Some(PhysicalSortExprNodeCollection {
                    physical_sort_expr_nodes: nodes,
                })
            }
            None => None,
        };
        Ok(SinkProto {
            config: Some(FileSinkConfigProto::try_from(config)?),
            original_url: config.original_url.clone(),
            write: Some(write_options_to_proto(sink.options())),
            member,
            columns,
            sort_order,
        })
    }

    /// The sink node of a message, over its decoded `input`. Its write errors reach the
    /// client as text (see `errors.rs`).
    fn sink_from(
        &self,
        proto: SinkProto,
        input: &Arc<dyn ExecutionPlan>,
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let conf =
            (proto.config.as_ref()).ok_or_else(|| malformed("the sink's config is missing"))?;
        let mut config = FileSinkConfig::try_from(conf)?;
        config.original_url = proto.original_url;
        let write =
            (proto.write).ok_or_else(|| malformed("the sink's write options are missing"))?;
        let write = write_options_from_proto(Some(write))?;
        let kind = match (proto.member, proto.columns) {
            (None, false) => Kind::Npy,
            (Some(key), false) => Kind::Member(key),
            (None, true) => Kind::Columns,
            (Some(_), true) => {
                return Err(malformed(
                    "a sink writes archives of one member or of columns, not both",
                ))
            }
        };
        let sort_order = match &proto.sort_order {
            Some(collection) => {
                let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
                let schema = input.schema();
                let exprs = (collection.physical_sort_expr_nodes.iter())
                    .map(|node| {
                        let expr = (node.expr.as_deref())
                            .ok_or_else(|| malformed("a sort expression of the sink is missing"))?;
                        Ok(PhysicalSortExpr {
                            expr: proto_converter.proto_to_physical_expr(
                                expr,
                                &schema,
                                &decode_ctx,
                            )?,
                            options: arrow_schema::SortOptions {
                                descending: !node.asc,
                                nulls_first: node.nulls_first,
                            },
                        })
                    })
                    .collect::<DfResult<Vec<_>>>()?;
                LexRequirement::new(exprs.into_iter().map(Into::into))
            }
            None => None,
        };
        let planned = planned_order(input, sort_order.as_ref());
        let sink = NpySink::new(config, write, kind)
            .with_planned_order(planned)
            .with_error_map(as_text);
        Ok(Arc::new(DataSinkExec::new(
            Arc::clone(input),
            Arc::new(sink),
            sort_order,
        )))
    }
}

/// The scan's config and source, if `node` is an `.npy` scan.
fn npy_scan(node: &dyn ExecutionPlan) -> Option<(&FileScanConfig, &NpySource)> {
    let exec = node.downcast_ref::<DataSourceExec>()?;
    let config = exec.data_source().downcast_ref::<FileScanConfig>()?;
    let source = config.file_source().downcast_ref::<NpySource>()?;
    Some((config, source))
}

impl PhysicalExtensionCodec for NpyPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if let Some(bytes) = buf.strip_prefix(COLUMN_SCAN_TAG) {
            let proto: ColumnScanProto = decode(bytes)?;
            let conf = (proto.conf.as_ref())
                .ok_or_else(|| malformed("the column scan's config is missing"))?;
            let options = self.limit_options(scan_options(&proto)?)?;
            let table_schema = parse_table_schema_from_proto(conf)?;
            let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
            let predicate = predicate_from(
                proto.predicate.as_ref(),
                &table_schema,
                &decode_ctx,
                proto_converter,
            )?;
            let table = table_schema.file_schema().clone();
            let source = scan_source(&proto, table, options, predicate)?;
            let config =
                parse_protobuf_file_scan_config(conf, &decode_ctx, proto_converter, source)?;
            return Ok(DataSourceExec::from_data_source(config));
        }
        if let Some(bytes) = buf.strip_prefix(PREFILTER_TAG) {
            return prefilter_from(decode(bytes)?, inputs, ctx, self, proto_converter);
        }
        if let Some(bytes) = buf.strip_prefix(SINK_TAG) {
            let [input] = inputs else {
                return Err(malformed(&format!(
                    "a sink has one input, found {}",
                    inputs.len()
                )));
            };
            return self.sink_from(decode(bytes)?, input, ctx, proto_converter);
        }
        let Some(bytes) = buf.strip_prefix(SCAN_TAG) else {
            if let Some(e) = unknown_tag(buf) {
                return Err(e);
            }
            return self.inner.try_decode(buf, inputs, ctx, proto_converter);
        };
        let proto: ScanProto = decode(bytes)?;
        let conf = proto
            .conf
            .ok_or_else(|| malformed("the scan config is missing"))?;
        let options = self.limit_options(options_from_proto(proto.options)?)?;
        let table_schema = parse_table_schema_from_proto(&conf)?;
        let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
        let predicate = predicate_from(
            proto.predicate.as_ref(),
            &table_schema,
            &decode_ctx,
            proto_converter,
        )?;
        // Executors send a failed task's error to the client as text: ours as its message.
        let mut source: Arc<dyn FileSource> = Arc::new(
            NpySource::new(table_schema, options)
                .with_error_map(as_text)
                .with_predicate(predicate),
        );
        if let Ok(batch_size) = usize::try_from(proto.batch_size) {
            source = source.with_batch_size(batch_size);
        }
        let config = parse_protobuf_file_scan_config(&conf, &decode_ctx, proto_converter, source)?;
        Ok(DataSourceExec::from_data_source(config))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> DfResult<()> {
        if let Some((config, source)) = column_scan(node.as_ref()) {
            let conf = serialize_file_scan_config(config, self, proto_converter)?;
            let predicate = self.predicate_proto(source.filter(), proto_converter)?;
            return encode(COLUMN_SCAN_TAG, &scan_proto(source, conf, predicate), buf);
        }
        if let Some(proto) = prefilter_proto(node.as_ref(), self, proto_converter) {
            return encode(PREFILTER_TAG, &proto?, buf);
        }
        if let Some((exec, sink)) = npy_sink(node.as_ref()) {
            return encode(
                SINK_TAG,
                &self.sink_proto(exec, sink, proto_converter)?,
                buf,
            );
        }
        let Some((config, source)) = npy_scan(node.as_ref()) else {
            return self.inner.try_encode(node, buf, proto_converter);
        };
        let predicate = self.predicate_proto(source.filter(), proto_converter)?;
        let proto = ScanProto {
            conf: Some(serialize_file_scan_config(config, self, proto_converter)?),
            options: Some(options_to_proto(source.options())),
            batch_size: source.batch_size() as u64,
            predicate,
        };
        encode(SCAN_TAG, &proto, buf)
    }

    delegate_functions!();
}

#[cfg(test)]
mod tests;
