//! The TopK prefilter ([`TopKPrefilterExec`]) on the wire: a scheduler plans it under the
//! sorts with a fetch of a job's first stage, and each executor runs it in its task, where
//! Ballista's TopKs have no threshold shared across tasks and none pushed into the scan.

use std::sync::Arc;

use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf::{PhysicalSortExprNode, PhysicalSortExprNodeCollection};
use prost::Message;

use super::wire::malformed;
use crate::TopKPrefilterExec;

/// The prefilter's tag.
pub(super) const PREFILTER_TAG: &[u8] = b"\0npy-serde/topk-prefilter/1\0";

/// The prefilter node: its fetch and order (over its input's columns).
#[derive(Clone, PartialEq, Message)]
pub(super) struct PrefilterProto {
    #[prost(uint64, tag = "1")]
    pub(super) fetch: u64,
    #[prost(message, optional, tag = "2")]
    pub(super) order: Option<PhysicalSortExprNodeCollection>,
}

/// The message of `node`, if it is a prefilter.
pub(super) fn prefilter_proto(
    node: &dyn ExecutionPlan,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> Option<DfResult<PrefilterProto>> {
    let exec = node.downcast_ref::<TopKPrefilterExec>()?;
    let nodes = (exec.expr().iter())
        .map(|e| {
            Ok(PhysicalSortExprNode {
                expr: Some(Box::new(
                    proto_converter.physical_expr_to_proto(&e.expr, codec)?,
                )),
                asc: !e.options.descending,
                nulls_first: e.options.nulls_first,
            })
        })
        .collect::<DfResult<Vec<_>>>();
    Some(nodes.map(|nodes| PrefilterProto {
        fetch: exec.fetch_rows() as u64,
        order: Some(PhysicalSortExprNodeCollection {
            physical_sort_expr_nodes: nodes,
        }),
    }))
}

/// The prefilter of a message, over its decoded `input`.
pub(super) fn prefilter_from(
    proto: PrefilterProto,
    inputs: &[Arc<dyn ExecutionPlan>],
    ctx: &TaskContext,
    codec: &dyn PhysicalExtensionCodec,
    proto_converter: &dyn PhysicalProtoConverterExtension,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let [input] = inputs else {
        return Err(malformed(&format!(
            "a TopK prefilter has one input, found {}",
            inputs.len()
        )));
    };
    let fetch = usize::try_from(proto.fetch)
        .ok()
        .filter(|&f| f > 0)
        .ok_or_else(|| malformed(&format!("a TopK prefilter's fetch of {}", proto.fetch)))?;
    let decode_ctx = PhysicalPlanDecodeContext::new(ctx, codec);
    let schema = input.schema();
    let nodes = proto
        .order
        .map(|o| o.physical_sort_expr_nodes)
        .unwrap_or_default();
    let exprs = (nodes.iter())
        .map(|node| {
            let expr = (node.expr.as_deref())
                .ok_or_else(|| malformed("a sort expression of the TopK prefilter is missing"))?;
            Ok(PhysicalSortExpr {
                expr: proto_converter.proto_to_physical_expr(expr, &schema, &decode_ctx)?,
                options: arrow_schema::SortOptions {
                    descending: !node.asc,
                    nulls_first: node.nulls_first,
                },
            })
        })
        .collect::<DfResult<Vec<_>>>()?;
    let order = LexOrdering::new(exprs)
        .ok_or_else(|| malformed("a TopK prefilter without a sort expression"))?;
    Ok(Arc::new(TopKPrefilterExec::new(
        Arc::clone(input),
        order,
        fetch,
    )))
}
