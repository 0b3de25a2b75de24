//! The column tables in Ballista's codecs: a [`ColumnTable`] (its location and read options;
//! the schema travels in the plan) and its scan, a `DataSourceExec` over a `FileScanConfig`
//! with [`ColumnSource`] (datafusion-proto's `FileScanExecConf`, whose file groups are the
//! runs of rows Ballista's scheduler gives each task; the location, options, row counts and
//! batch size beside it). The decoded scan surveys the table again where it runs, and fails
//! naming a file that changed.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::datasource::physical_plan::{FileScanConfig, FileSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result as DfResult;
use datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use datafusion_proto::protobuf::{FileScanExecConf, PhysicalExprNode};
use prost::Message;

use super::errors::as_text;
use crate::columns::{ColumnSource, ColumnTable};
use crate::NpyReadOptions;

/// Tags of the column messages (after the codec's own tags are tried).
pub(super) const COLUMN_TABLE_TAG: &[u8] = b"\0npy-serde/column-table/1\0";
/// Version 3 carries the scan's predicate: a peer of version 2 would ignore it and return
/// every row of a scan DataFusion no longer filters above, so it fails to decode instead.
pub(super) const COLUMN_SCAN_TAG: &[u8] = b"\0npy-serde/column-scan/3\0";

#[derive(Clone, PartialEq, Message)]
pub(super) struct ColumnTableProto {
    #[prost(string, tag = "1")]
    location: String,
    #[prost(message, optional, tag = "2")]
    options: Option<super::wire::OptionsProto>,
}

/// A column table's scan: datafusion-proto's `FileScanExecConf` (its file groups are the runs
/// of rows, each file's range the rows) and what the source holds besides.
#[derive(Clone, PartialEq, Message)]
pub(super) struct ColumnScanProto {
    #[prost(message, optional, tag = "1")]
    pub(super) conf: Option<FileScanExecConf>,
    #[prost(string, tag = "2")]
    location: String,
    #[prost(message, optional, tag = "3")]
    options: Option<super::wire::OptionsProto>,
    /// The table's rows when the scan was planned, and the rows it reads.
    #[prost(uint64, tag = "4")]
    rows: u64,
    #[prost(uint64, tag = "5")]
    read: u64,
    #[prost(uint64, tag = "6")]
    batch_size: u64,
    /// The filter pushed into the scan, over the table's columns.
    #[prost(message, optional, tag = "7")]
    pub(super) predicate: Option<PhysicalExprNode>,
}

/// The message of `node`, if it is a column table.
pub(super) fn table_proto(node: &Arc<dyn TableProvider>) -> Option<ColumnTableProto> {
    let table = node.downcast_ref::<ColumnTable>()?;
    Some(ColumnTableProto {
        location: table.location().to_string(),
        options: Some(super::wire::options_to_proto(table.options())),
    })
}

/// The column table of `proto`, with `schema`.
pub(super) fn table_from(
    proto: ColumnTableProto,
    schema: SchemaRef,
) -> DfResult<Arc<dyn TableProvider>> {
    let options = super::wire::options_from_proto(proto.options)?;
    Ok(Arc::new(ColumnTable::from_parts(
        proto.location,
        options,
        schema,
    )))
}

/// The config and source of `node`, if it is a column table's scan.
pub(super) fn column_scan(node: &dyn ExecutionPlan) -> Option<(&FileScanConfig, &ColumnSource)> {
    let exec = node.downcast_ref::<DataSourceExec>()?;
    let config = exec.data_source().downcast_ref::<FileScanConfig>()?;
    let source = config.file_source().downcast_ref::<ColumnSource>()?;
    Some((config, source))
}

/// The message of a column table's scan whose config datafusion-proto wrote as `conf`.
pub(super) fn scan_proto(
    source: &ColumnSource,
    conf: FileScanExecConf,
    predicate: Option<PhysicalExprNode>,
) -> ColumnScanProto {
    let (rows, read) = source.rows();
    ColumnScanProto {
        conf: Some(conf),
        location: source.location().to_string(),
        options: Some(super::wire::options_to_proto(source.options())),
        rows,
        read,
        batch_size: source.batch_size() as u64,
        predicate,
    }
}

/// The source of `proto`'s scan over the table `table`, read with `options` (the executor's
/// limits applied) under `predicate` (`proto`'s, decoded), its errors as text (see
/// [`as_text`]).
pub(super) fn scan_source(
    proto: &ColumnScanProto,
    table: SchemaRef,
    options: NpyReadOptions,
    predicate: Option<Arc<dyn PhysicalExpr>>,
) -> DfResult<Arc<dyn FileSource>> {
    let source = ColumnSource::new(&proto.location, options, table, proto.rows, proto.read)
        .with_error_map(as_text)
        .with_predicate(predicate);
    let source: Arc<dyn FileSource> = Arc::new(source);
    Ok(match usize::try_from(proto.batch_size) {
        Ok(n) if n > 0 => source.with_batch_size(n),
        _ => source,
    })
}

/// The read options of `proto`.
pub(super) fn scan_options(proto: &ColumnScanProto) -> DfResult<NpyReadOptions> {
    super::wire::options_from_proto(proto.options.clone())
}
