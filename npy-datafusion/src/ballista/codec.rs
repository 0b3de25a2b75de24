//! The extension codecs: [`NpyLogicalCodec`] carries [`NpyTable`]s (and the
//! [`NpyFormatFactory`] of `COPY ... STORED AS NPY` plans) from the client to the scheduler;
//! [`NpyPhysicalCodec`] carries the scan nodes (a `DataSourceExec` over a `FileScanConfig` with
//! [`NpySource`], or with a column table's source, whose file groups are runs of rows) from the
//! scheduler to the executors. Every other node goes to Ballista's
//! own codecs.
//!
//! Our messages are protobuf (prost) behind a tag that starts with a zero byte, which no
//! protobuf message starts with (field number 0 is invalid), so a buffer is ours or
//! Ballista's without ambiguity. The scan's file groups, byte ranges, projection, limit,
//! statistics and schema are datafusion-proto's own `FileScanExecConf`, written and read by
//! its helpers; only the read options are ours: their key/value entries (the table options
//! declared once in `datafusion/options.rs`), set again on the other side. A filter pushed
//! into the scan travels as datafusion-proto's physical expression (a dynamic filter as its
//! value when the plan is sent). The tags end in the message version (`/2`: options as
//! entries); a cluster and its clients are one build.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
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
use datafusion_proto::protobuf::{FileScanExecConf, PhysicalExprNode};
use prost::Message;

use super::columns::{
    column_scan, scan_options, scan_proto, scan_source, table_from, table_proto, ColumnScanProto,
    COLUMN_SCAN_TAG, COLUMN_TABLE_TAG,
};
use super::errors::as_text;
use super::table::NpyTable;
use super::wire::{malformed, options_from_proto, options_to_proto, OptionsProto};
use crate::{NpyFormatFactory, NpyReadOptions, NpySource};

/// The tags our buffers start with (a zero byte first: see the module docs).
const TABLE_TAG: &[u8] = b"\0npy-serde/table/2\0";
const FORMAT_TAG: &[u8] = b"\0npy-serde/format/2\0";
const SCAN_TAG: &[u8] = b"\0npy-serde/scan/2\0";

/// An [`NpyTable`]: its URLs, the extension of the files a directory's table reads, and
/// the read options (the schema travels in datafusion-proto's own message).
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
            return self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx);
        };
        let proto: TableProto = decode(bytes)?;
        let options = options_from_proto(proto.options)?;
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
        let listing = options
            .listing_options()
            .with_file_extension(&proto.file_extension);
        let config = ListingTableConfig::new_with_multi_paths(paths.clone())
            .with_listing_options(listing)
            .with_schema(schema);
        let table = ListingTable::try_new(config)?
            .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache());
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
        };
        encode(TABLE_TAG, &proto, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> DfResult<Arc<dyn FileFormatFactory>> {
        let Some(bytes) = buf.strip_prefix(FORMAT_TAG) else {
            return self.inner.try_decode_file_format(buf, ctx);
        };
        let options = options_from_proto(Some(decode(bytes)?))?;
        Ok(Arc::new(NpyFormatFactory::new(options)))
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> DfResult<()> {
        let Some(factory) = node.downcast_ref::<NpyFormatFactory>() else {
            return self.inner.try_encode_file_format(buf, node);
        };
        encode(FORMAT_TAG, &options_to_proto(factory.options()), buf)
    }

    delegate_functions!();
}

/// Ballista's physical codec, plus the `.npy` scan: a `DataSourceExec` over a
/// `FileScanConfig` whose source is [`NpySource`], with its file groups and byte ranges,
/// projection, limit, pushed filter and read options (header, data and empty-value limits, `.npz`
/// member). Give it to the client session (done by [`session_config`](super::session_config)),
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
        let Some(bytes) = buf.strip_prefix(SCAN_TAG) else {
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
mod tests {
    use super::*;

    fn limits(o: &NpyReadOptions) -> Vec<(String, Option<String>)> {
        o.entries()
            .into_iter()
            .filter(|e| e.key.starts_with("max_") && e.key.ends_with("_size"))
            .map(|e| (e.key, e.value))
            .collect()
    }

    #[test]
    fn an_executor_ceiling_lowers_the_clients_limits_never_raises_them() {
        let codec = NpyPhysicalCodec::default().with_read_ceiling(Some(20_000), Some(5000));
        let asked = NpyReadOptions::new()
            .max_header_size(50_000)
            .max_data_size(100);
        let got = limits(&codec.limit_options(asked).unwrap());
        assert!(
            got.contains(&("max_header_size".into(), Some("20000".into()))),
            "{got:?}"
        );
        assert!(
            got.contains(&("max_data_size".into(), Some("100".into()))),
            "{got:?}"
        );
        // The client set no data limit: the executor's applies.
        let got = limits(&codec.limit_options(NpyReadOptions::new()).unwrap());
        assert!(
            got.contains(&("max_data_size".into(), Some("5000".into()))),
            "{got:?}"
        );
        // Without a ceiling the client's options pass as they are.
        let plain = NpyPhysicalCodec::default();
        let asked = NpyReadOptions::new().max_header_size(50_000);
        assert_eq!(
            limits(&plain.limit_options(asked.clone()).unwrap()),
            limits(&asked)
        );
    }
}
