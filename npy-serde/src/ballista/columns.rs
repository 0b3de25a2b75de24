//! The column tables in Ballista's codecs: a [`ColumnTable`] (its location and read options;
//! the schema travels in the plan) and its scan, [`ColumnScanExec`] (location, options, the
//! table's schema, projection, limit, row count, partitions and batch size). The decoded scan
//! surveys the table again where it runs, and fails naming a file that changed.

use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::protobuf;
use prost::Message;

use super::errors::as_text;
use crate::datafusion::columns::{ColumnScan, ColumnScanExec, ColumnTable};

/// Tags of the column messages (after the codec's own tags are tried).
pub(super) const COLUMN_TABLE_TAG: &[u8] = b"\0npy-serde/column-table/1\0";
pub(super) const COLUMN_SCAN_TAG: &[u8] = b"\0npy-serde/column-scan/1\0";

#[derive(Clone, PartialEq, Message)]
pub(super) struct ColumnTableProto {
    #[prost(string, tag = "1")]
    location: String,
    #[prost(message, optional, tag = "2")]
    options: Option<super::wire::OptionsProto>,
}

#[derive(Clone, PartialEq, Message)]
pub(super) struct ColumnScanProto {
    #[prost(string, tag = "1")]
    location: String,
    #[prost(message, optional, tag = "2")]
    options: Option<super::wire::OptionsProto>,
    #[prost(message, optional, tag = "3")]
    schema: Option<protobuf::Schema>,
    /// Projected column indices, when `projected`.
    #[prost(uint64, repeated, tag = "4")]
    projection: Vec<u64>,
    #[prost(bool, tag = "5")]
    projected: bool,
    #[prost(uint64, optional, tag = "6")]
    limit: Option<u64>,
    #[prost(uint64, tag = "7")]
    rows: u64,
    #[prost(uint64, tag = "8")]
    partitions: u64,
    #[prost(uint64, tag = "9")]
    batch_size: u64,
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

fn number(n: u64, what: &str) -> DfResult<usize> {
    usize::try_from(n).map_err(|_| super::wire::malformed(what))
}

/// The message of `node`, if it is a column table's scan.
pub(super) fn scan_proto(node: &dyn ExecutionPlan) -> DfResult<Option<ColumnScanProto>> {
    let Some(exec) = node.downcast_ref::<ColumnScanExec>() else {
        return Ok(None);
    };
    let scan = &exec.scan;
    let schema = protobuf::Schema::try_from(scan.table.as_ref())
        .map_err(|e| DataFusionError::Internal(format!("npy-serde codec: {e}")))?;
    Ok(Some(ColumnScanProto {
        location: scan.location.clone(),
        options: Some(super::wire::options_to_proto(&scan.options)),
        schema: Some(schema),
        projection: scan
            .projection
            .iter()
            .flatten()
            .map(|&i| i as u64)
            .collect(),
        projected: scan.projection.is_some(),
        limit: scan.limit.map(|l| l as u64),
        rows: scan.rows,
        partitions: scan.partitions as u64,
        batch_size: scan.batch_size as u64,
    }))
}

/// The scan of `proto`, its errors as text (see [`as_text`]).
pub(super) fn scan_from(proto: ColumnScanProto) -> DfResult<Arc<dyn ExecutionPlan>> {
    let schema = proto
        .schema
        .as_ref()
        .ok_or_else(|| super::wire::malformed("the column table's schema is missing"))?;
    let table: Schema = schema
        .try_into()
        .map_err(|e| super::wire::malformed(&format!("the column table's schema: {e}")))?;
    let projection = if proto.projected {
        let p = proto.projection.iter();
        Some(
            p.map(|&i| number(i, "a projected column"))
                .collect::<DfResult<Vec<_>>>()?,
        )
    } else {
        None
    };
    let scan = ColumnScan {
        location: proto.location,
        options: super::wire::options_from_proto(proto.options)?,
        table: Arc::new(table),
        projection,
        limit: proto.limit.map(|l| number(l, "the limit")).transpose()?,
        rows: proto.rows,
        partitions: number(proto.partitions, "the partitions")?,
        batch_size: number(proto.batch_size, "the batch size")?,
        map_err: Some(as_text),
    };
    Ok(Arc::new(ColumnScanExec::new(scan)?))
}
