//! The TopK prefilter: rows that cannot be in a `ORDER BY ... LIMIT k` answer dropped
//! batch by batch, in a vectorised pass, before DataFusion's TopK sees them.
//!
//! DataFusion's TopK (a `SortExec` with a fetch) keeps a heap of the best `k` rows and turns
//! each batch's sort keys into its row format; a row better than the heap's worst replaces it,
//! one row at a time. Over data that arrives in the reverse of the asked order (a table
//! written in rising `ts`, asked `ORDER BY ts DESC LIMIT 10`) every row is better than the
//! heap's worst, so every row is a replacement (about 20 ns each). In one process the
//! partitions' TopKs share one threshold and push it into the scan as a dynamic filter, which
//! cuts the partitions that lag; on a Ballista cluster each task has its own TopK and no filter
//! in its scan (Ballista turns dynamic filter pushdown off), so there all of them replace.
//!
//! [`TopKPrefilterExec`] sits under such a sort and keeps, from each batch, only the rows whose
//! first sort key is at least as good as the `k`-th best first key seen in any one batch so
//! far (the bound), and, when more than `k` rows pass, as good as this batch's own `k`-th best
//! (a selection, linear in the batch). Every row it drops has `k` rows strictly better on the
//! first key, so the answer is the same; ties on the first key all pass, and the sort above
//! decides them on its further keys. It keeps the order of the rows it keeps.
//!
//! Where a session does not push dynamic filters into scans (Ballista turns it off), the
//! prefilter pushes its bound into its input when that is a scan which takes filters (the
//! `.npy` and column-table scans do): as a dynamic filter that tightens with the bound, so the
//! scan drops those rows before it reads a column the filter does not need.
//!
//! [`TopKPrefilter`] is the physical optimizer rule that puts it there: under every `SortExec`
//! with a fetch of at most a quarter of the session's batch size whose first key is a
//! primitive, temporal, decimal, string or binary column. [`with_topk_prefilter`] gives a
//! session state the rule; `npy sql` sessions have it, and so do the schedulers' sessions this
//! crate makes for Ballista, whose adaptive planner replaces the session's rule list (the rule
//! then runs as part of the state's query planner, after the physical planner).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, Scalar};
use datafusion::arrow::compute::kernels::cmp::{gt_eq, lt_eq};
use datafusion::arrow::compute::{filter_record_batch, is_null, or_kleene, sort_to_indices};
use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::ScalarValue;
use datafusion::config::ConfigOptions;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    lit, BinaryExpr, DynamicFilterPhysicalExpr, IsNullExpr,
};
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::CardinalityEffect;
use datafusion::physical_plan::filter_pushdown::PushedDown;
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PhysicalExpr,
    PlanProperties,
};
use futures::StreamExt;

/// Drops, batch by batch, the rows of its input that cannot be among the first `fetch` rows in
/// the order `expr`. Its output is a subset of its input, in the input's order, on the same
/// partitions.
///
/// DataFusion's TopK (a `SortExec` with a fetch) turns each batch's sort keys into its row
/// format and replaces its heap's worst row with each better one, one at a time. Over data
/// that arrives in the reverse of the asked order (a table written in rising `ts`, asked
/// `ORDER BY ts DESC LIMIT 10`) every row is such a replacement. This node keeps, from each
/// batch, the rows whose first sort key is at least as good as the `fetch`-th best first key
/// of any one batch so far, and as this batch's own `fetch`-th best when more pass (a
/// selection, linear in the batch). Every row it drops has `fetch` rows strictly better on the
/// first key; ties all pass, for the sort above to decide on its further keys.
///
/// Where the session pushes no dynamic filters into scans (Ballista turns that off), it also
/// pushes its bound into its input when that is a scan which takes filters (the `.npy` and
/// column-table scans do), as a dynamic filter, so the scan drops those rows before reading
/// the columns the filter does not need. [`TopKPrefilter`] is the rule that plans it.
#[derive(Debug, Clone)]
pub struct TopKPrefilterExec {
    input: Arc<dyn ExecutionPlan>,
    expr: LexOrdering,
    fetch: usize,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// What its partitions share (a new node, as `reset_state` makes, shares nothing).
    shared: Arc<Shared>,
}

/// What the partitions of one prefilter share: the best bound any of them found (every
/// partition's bound holds for all of them: `fetch` rows of one batch are at least as good),
/// and its input as every partition executes it (with the scan filter, if it pushed one: all
/// partitions must execute the same scan, whose partitions may share their files' work).
#[derive(Debug, Default)]
struct Shared {
    bound: std::sync::Mutex<Option<ArrayRef>>,
    input: std::sync::Mutex<Option<Planned>>,
}

impl TopKPrefilterExec {
    /// The prefilter of `input` for the first `fetch` rows in the order `expr`.
    pub fn new(input: Arc<dyn ExecutionPlan>, expr: LexOrdering, fetch: usize) -> Self {
        let properties = Arc::new(PlanProperties::new(
            input.equivalence_properties().clone(),
            input.output_partitioning().clone(),
            input.pipeline_behavior(),
            input.boundedness(),
        ));
        Self {
            input,
            expr,
            fetch,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            shared: Arc::default(),
        }
    }

    /// The input.
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    /// The order of the answer it serves.
    pub fn expr(&self) -> &LexOrdering {
        &self.expr
    }

    /// The number of rows of the answer it serves.
    pub fn fetch_rows(&self) -> usize {
        self.fetch
    }
}

impl DisplayAs for TopKPrefilterExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "TopKPrefilterExec: expr=[{}], fetch={}",
                    self.expr, self.fetch
                )
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "expr=[{}]", self.expr)?;
                writeln!(f, "fetch={}", self.fetch)
            }
        }
    }
}

impl ExecutionPlan for TopKPrefilterExec {
    fn name(&self) -> &str {
        "TopKPrefilterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        f(&self.expr.first().expr)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).map_err(|c| {
            DataFusionError::Internal(format!(
                "TopKPrefilterExec has one input, given {}",
                c.len()
            ))
        })?;
        Ok(Arc::new(Self::new(input, self.expr.clone(), self.fetch)))
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        CardinalityEffect::LowerEqual
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let key = self.expr.first().clone();
        let (input, scan_filter) = {
            let mut planned = lock(&self.shared.input)?;
            if planned.is_none() {
                let config = context.session_config().options();
                *planned = Some(match config.optimizer.enable_dynamic_filter_pushdown {
                    true => (Arc::clone(&self.input), None),
                    false => self.with_bound_in_scan(&key, config)?,
                });
            }
            planned
                .clone()
                .unwrap_or_else(|| (Arc::clone(&self.input), None))
        };
        let input = input.execute(partition, context)?;
        let schema = input.schema();
        let mut state = Prefilter {
            key,
            fetch: self.fetch,
            shared: Arc::clone(&self.shared),
            scan_filter,
            baseline: BaselineMetrics::new(&self.metrics, partition),
            dropped: MetricBuilder::new(&self.metrics).counter("rows_dropped", partition),
        };
        let stream = input.map(move |batch| state.batch(batch?));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// The dynamic filter a prefilter pushed into its scan.
type ScanFilter = Arc<DynamicFilterPhysicalExpr>;

/// The input as the partitions execute it, and the filter pushed into it if any.
type Planned = (Arc<dyn ExecutionPlan>, Option<ScanFilter>);

impl TopKPrefilterExec {
    /// The input, with a dynamic filter that the prefilter updates as its bound tightens
    /// pushed into it, if the input is a scan that takes it; the input as it is otherwise.
    fn with_bound_in_scan(
        &self,
        key: &PhysicalSortExpr,
        config: &ConfigOptions,
    ) -> DfResult<Planned> {
        let unchanged = || Ok((Arc::clone(&self.input), None));
        let Some(scan) = self.input.downcast_ref::<DataSourceExec>() else {
            return unchanged();
        };
        let filter = Arc::new(DynamicFilterPhysicalExpr::new(
            vec![Arc::clone(&key.expr)],
            lit(true),
        ));
        let pushed = (scan.data_source())
            .try_pushdown_filters(vec![Arc::clone(&filter) as Arc<dyn PhysicalExpr>], config)?;
        match (pushed.filters.first(), pushed.updated_node) {
            (Some(PushedDown::Yes), Some(source)) => {
                let scan = scan.clone().with_data_source(source);
                Ok((Arc::new(scan), Some(filter)))
            }
            _ => unchanged(),
        }
    }
}

/// One partition's state: the bound (the best `k`-th first key of any batch so far), and the
/// scan's filter that follows it.
struct Prefilter {
    key: PhysicalSortExpr,
    fetch: usize,
    shared: Arc<Shared>,
    scan_filter: Option<ScanFilter>,
    baseline: BaselineMetrics,
    dropped: Count,
}

impl Prefilter {
    fn batch(&mut self, batch: RecordBatch) -> DfResult<RecordBatch> {
        let timer = self.baseline.elapsed_compute().timer();
        let rows = batch.num_rows();
        let out = if rows <= self.fetch {
            batch
        } else {
            let keys = self.key.expr.evaluate(&batch)?.into_array(rows)?;
            let bound = lock(&self.shared.bound)?.clone();
            let mut keep = match &bound {
                Some(bound) => Some(self.at_least(&keys, bound)?),
                None => None,
            };
            let passing = keep.as_ref().map_or(rows, BooleanArray::true_count);
            if passing > self.fetch {
                // This batch alone holds more than k candidates: its own k-th best is a bound
                // at least as good as the one so far (every row it passes, the old one does).
                let order = sort_to_indices(&keys, Some(self.key.options), Some(self.fetch))?;
                let kth = keys.slice(order.value(self.fetch - 1) as usize, 1);
                if kth.is_valid(0) || self.key.options.nulls_first {
                    let best = self.offer(kth)?;
                    keep = Some(self.at_least(&keys, &best)?);
                }
            }
            match keep {
                Some(keep) if keep.true_count() < rows => filter_record_batch(&batch, &keep)?,
                _ => batch,
            }
        };
        self.dropped.add(rows - out.num_rows());
        timer.done();
        self.baseline.record_output(out.num_rows());
        Ok(out)
    }

    /// Makes `kth` the shared bound (and the scan filter's) if it is at least as good as the
    /// shared one (another partition may have found a better one meanwhile): the best of the
    /// two.
    fn offer(&self, kth: ArrayRef) -> DfResult<ArrayRef> {
        let mut bound = lock(&self.shared.bound)?;
        if let Some(best) = bound.as_ref()
            && !self.at_least(&kth, best)?.value(0)
        {
            return Ok(Arc::clone(best));
        }
        if let Some(filter) = &self.scan_filter {
            filter.update(self.at_least_expr(&kth)?)?;
        }
        *bound = Some(Arc::clone(&kth));
        Ok(kth)
    }

    /// The rows whose key is at least as good as `bound` (a one-value array) in the order.
    fn at_least(&self, keys: &ArrayRef, bound: &ArrayRef) -> DfResult<BooleanArray> {
        let nulls_first = self.key.options.nulls_first;
        if bound.is_null(0) {
            // Only with nulls first: a null bound means k null keys, so only nulls may pass.
            return Ok(is_null(keys)?);
        }
        let bound = Scalar::new(Arc::clone(bound));
        let at_least = if self.key.options.descending {
            gt_eq(keys, &bound)?
        } else {
            lt_eq(keys, &bound)?
        };
        // A null key compares as null (dropped by the filter) unless nulls come first.
        Ok(if nulls_first && keys.null_count() > 0 {
            or_kleene(&is_null(keys)?, &at_least)?
        } else {
            at_least
        })
    }
}

impl Prefilter {
    /// [`at_least`](Self::at_least) as an expression, for the scan.
    fn at_least_expr(&self, bound: &ArrayRef) -> DfResult<Arc<dyn PhysicalExpr>> {
        let key = Arc::clone(&self.key.expr);
        let is_null = || Arc::new(IsNullExpr::new(Arc::clone(&key))) as Arc<dyn PhysicalExpr>;
        if bound.is_null(0) {
            return Ok(is_null());
        }
        let op = match self.key.options.descending {
            true => Operator::GtEq,
            false => Operator::LtEq,
        };
        let value = lit(ScalarValue::try_from_array(bound, 0)?);
        let at_least =
            Arc::new(BinaryExpr::new(Arc::clone(&key), op, value)) as Arc<dyn PhysicalExpr>;
        Ok(match self.key.options.nulls_first {
            true => Arc::new(BinaryExpr::new(is_null(), Operator::Or, at_least)),
            false => at_least,
        })
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> DfResult<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| DataFusionError::Internal("a TopK prefilter's partition panicked".into()))
}

/// Whether the prefilter can order and compare keys of this type (the types Arrow's selection
/// and comparison kernels both take).
fn supported(t: &DataType) -> bool {
    t.is_primitive()
        || matches!(
            t,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::Boolean
        )
}

/// The physical optimizer rule that puts a [`TopKPrefilterExec`] under every `SortExec` with a
/// fetch of at most a quarter of the batch size whose first key is a primitive, temporal,
/// decimal, boolean, string or binary column. Add it last: `SessionStateBuilder::with_physical_optimizer_rule`.
///
/// ```
/// use datafusion::physical_optimizer::PhysicalOptimizerRule;
/// assert_eq!(npy_datafusion::TopKPrefilter.name(), "npy_topk_prefilter");
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct TopKPrefilter;

impl PhysicalOptimizerRule for TopKPrefilter {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let most = config.execution.batch_size.get() / 4;
        plan.transform_up(|node| {
            let Some(sort) = node.downcast_ref::<SortExec>() else {
                return Ok(Transformed::no(node));
            };
            let (Some(fetch), input) = (sort.fetch(), sort.input()) else {
                return Ok(Transformed::no(node));
            };
            let key = &sort.expr().first().expr;
            if fetch == 0
                || fetch > most
                || input.downcast_ref::<TopKPrefilterExec>().is_some()
                || !supported(&key.data_type(&input.schema())?)
            {
                return Ok(Transformed::no(node));
            }
            let prefilter = TopKPrefilterExec::new(Arc::clone(input), sort.expr().clone(), fetch);
            let sort = SortExec::new(sort.expr().clone(), Arc::new(prefilter))
                .with_fetch(Some(fetch))
                .with_preserve_partitioning(sort.preserve_partitioning());
            Ok(Transformed::yes(Arc::new(sort) as Arc<dyn ExecutionPlan>))
        })
        .data()
    }

    fn name(&self) -> &str {
        "npy_topk_prefilter"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `state` with [`TopKPrefilter`]: as its last physical optimizer rule, and in its query
/// planner (after the physical planner's own rules), which sessions that plan with a rule list
/// of their own keep (Ballista's adaptive planner). The rule leaves a sort it already serves
/// alone, so a plan gets one prefilter either way.
///
/// ```
/// use datafusion::execution::session_state::SessionStateBuilder;
/// let state = npy_datafusion::with_topk_prefilter(SessionStateBuilder::new().with_default_features().build());
/// assert!(state.physical_optimizers().iter().any(|r| r.name() == "npy_topk_prefilter"));
/// ```
pub fn with_topk_prefilter(state: SessionState) -> SessionState {
    let id = state.session_id().to_string();
    let inner = Arc::clone(state.query_planner());
    SessionStateBuilder::new_from_existing(state)
        .with_session_id(id)
        .with_physical_optimizer_rule(Arc::new(TopKPrefilter))
        .with_query_planner(Arc::new(PrefilterPlanner { inner }))
        .build()
}

/// A query planner that runs [`TopKPrefilter`] on what `inner` planned.
#[derive(Debug)]
struct PrefilterPlanner {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
}

#[async_trait]
impl QueryPlanner for PrefilterPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self
            .inner
            .create_physical_plan(logical_plan, session)
            .await?;
        TopKPrefilter.optimize(plan, session.config_options())
    }
}

#[cfg(test)]
mod tests;
