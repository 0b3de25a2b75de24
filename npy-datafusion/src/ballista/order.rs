//! Orders kept across Ballista's shuffles.
//!
//! DataFusion keeps a sorted input sorted through a hash repartition by merging the sorted
//! streams of each output partition (`RepartitionExec` with `preserve_order`), and the plan
//! above it then relies on that order: an aggregate in sorted mode, a `SortPreservingMergeExec`
//! with a limit. Ballista cuts the plan into stages at every repartition and replaces it with
//! a shuffle, whose reader hands over the map tasks' outputs one after another: each partition
//! is no longer sorted, while the plan above still says it is. Over a table with a declared or
//! recorded order, `SELECT id, sum(x) FROM t GROUP BY id ORDER BY id LIMIT 9` then returned rows
//! from the middle of the table, one run in three.
//!
//! [`OrderAcrossShuffles`], a physical optimizer rule of every session this crate builds for
//! Ballista (the client's, the in-process scheduler's and `npy-scheduler`'s), replaces each
//! order-preserving repartition with a plain one followed by a sort of each partition on the
//! same order: after the shuffle, each partition is sorted again before anything reads it.
//! One process keeps DataFusion's merge (this rule is not in its sessions).
//!
//! Ballista's adaptive planner (on by default) plans each stage again with a rule list of its
//! own (`AdaptivePlanner::default_optimizers`), which has no place for this rule and whose
//! exchange drops the merge the same way. Under it, `recorded::orders_usable` is false: the
//! `.npy` tables of this crate (row and column) then report no order to the plan, and a query
//! sorts where it needs an order. The answers are right at the price of those sorts; with
//! `ballista.planner.adaptive.enabled` set to false, orders are reported and this rule keeps
//! them right across shuffles.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

/// Replaces every order-preserving `RepartitionExec` with a plain one and a `SortExec` of each
/// of its partitions on the input's order: Ballista's shuffle reader hands the map tasks' outputs
/// over one after another, where DataFusion's merge kept each partition sorted.
///
/// ```
/// use datafusion::physical_optimizer::PhysicalOptimizerRule;
/// let rule = npy_datafusion::ballista::OrderAcrossShuffles;
/// assert_eq!(rule.name(), "npy_order_across_shuffles");
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct OrderAcrossShuffles;

impl PhysicalOptimizerRule for OrderAcrossShuffles {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(r) = node.downcast_ref::<RepartitionExec>() else {
                return Ok(Transformed::no(node));
            };
            let Some(order) = r.input().output_ordering().filter(|_| r.preserve_order()) else {
                return Ok(Transformed::no(node));
            };
            let order = order.clone();
            let plain = RepartitionExec::try_new(Arc::clone(r.input()), r.partitioning().clone())?;
            let sorted = SortExec::new(order, Arc::new(plain)).with_preserve_partitioning(true);
            Ok(Transformed::yes(Arc::new(sorted) as Arc<dyn ExecutionPlan>))
        })
        .data()
    }

    fn name(&self) -> &str {
        "npy_order_across_shuffles"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `plan` with its file scans reporting no output ordering.
pub(crate) fn without_orders(plan: Arc<dyn ExecutionPlan>) -> DfResult<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(scan) = node.downcast_ref::<DataSourceExec>() else {
            return Ok(Transformed::no(node));
        };
        let Some(config) = scan.data_source().downcast_ref::<FileScanConfig>() else {
            return Ok(Transformed::no(node));
        };
        if config.output_ordering.is_empty() {
            return Ok(Transformed::no(node));
        }
        let config = FileScanConfigBuilder::from(config.clone())
            .with_output_ordering(Vec::new())
            .build();
        let plan: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
        Ok(Transformed::yes(plan))
    })
    .data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_expr::{LexOrdering, Partitioning, PhysicalSortExpr};
    use datafusion::physical_plan::displayable;
    use datafusion::physical_plan::empty::EmptyExec;

    fn sorted_input() -> (Arc<dyn ExecutionPlan>, LexOrdering) {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let empty: Arc<dyn ExecutionPlan> =
            Arc::new(EmptyExec::new(Arc::clone(&schema)).with_partitions(3));
        let order =
            LexOrdering::new([PhysicalSortExpr::new_default(col("id", &schema).unwrap())]).unwrap();
        let sorted: Arc<dyn ExecutionPlan> =
            Arc::new(SortExec::new(order.clone(), empty).with_preserve_partitioning(true));
        (sorted, order)
    }

    fn text(plan: &Arc<dyn ExecutionPlan>) -> String {
        displayable(plan.as_ref()).indent(false).to_string()
    }

    #[test]
    fn an_order_preserving_repartition_becomes_a_plain_one_and_a_sort_per_partition() {
        let (input, order) = sorted_input();
        let hash = Partitioning::Hash(vec![col("id", &input.schema()).unwrap()], 4);
        let merging: Arc<dyn ExecutionPlan> = Arc::new(
            RepartitionExec::try_new(Arc::clone(&input), hash)
                .unwrap()
                .with_preserve_order(),
        );
        assert!(
            text(&merging).contains("preserve_order=true"),
            "{}",
            text(&merging)
        );
        let out = OrderAcrossShuffles
            .optimize(merging, &ConfigOptions::default())
            .unwrap();
        let lines = text(&out);
        let first = lines.lines().next().unwrap();
        assert!(first.starts_with("SortExec: expr=[id@0 ASC"), "{lines}");
        assert!(first.contains("preserve_partitioning=[true]"), "{lines}");
        assert!(
            lines.contains("RepartitionExec: partitioning=Hash([id@0], 4)"),
            "{lines}"
        );
        assert!(!lines.contains("preserve_order=true"), "{lines}");
        assert_eq!(out.output_ordering(), Some(&order));
        assert_eq!(out.output_partitioning().partition_count(), 4);
    }

    /// A table declared sorted, registered in one process with a Ballista session's config:
    /// under the adaptive planner (the default) no order is declared and the plan sorts;
    /// with the static planner the order is declared and the plan does not sort.
    #[test]
    fn declared_orders_are_dropped_where_the_adaptive_planner_plans() {
        use crate::{NpySessionExt, TableSpec};
        use datafusion::prelude::SessionContext;
        let dir = std::env::temp_dir().join(format!("npy-order-aqe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("t.csv");
        std::fs::write(&csv, "a,b\n1,x\n2,y\n3,z\n").unwrap();
        let spec: TableSpec = format!("csv('{}', sort_order=a)", csv.display())
            .parse()
            .unwrap();
        let adaptive = super::super::session_config();
        let fixed = super::super::session_config().set_bool(
            ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED,
            false,
        );
        use crate::recorded::orders_usable;
        use datafusion::prelude::SessionConfig;
        assert!(!orders_usable(&adaptive));
        assert!(orders_usable(&fixed));
        assert!(orders_usable(&SessionConfig::new()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (config, sorts) in [(adaptive, true), (fixed, false)] {
            let ctx = SessionContext::new_with_config(config);
            rt.block_on(ctx.register_spec("t", &spec)).unwrap();
            let plan = rt.block_on(async {
                let df = ctx.sql("EXPLAIN SELECT a, b FROM t ORDER BY a").await?;
                df.collect().await
            });
            let plan = datafusion::arrow::util::pretty::pretty_format_batches(&plan.unwrap())
                .unwrap()
                .to_string();
            assert_eq!(plan.contains("SortExec"), sorts, "{plan}");
            assert_eq!(!plan.contains("output_ordering"), sorts, "{plan}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn other_repartitions_are_left_alone() {
        let (input, _) = sorted_input();
        let hash = Partitioning::Hash(vec![col("id", &input.schema()).unwrap()], 4);
        let plain: Arc<dyn ExecutionPlan> =
            Arc::new(RepartitionExec::try_new(input, hash).unwrap());
        let before = text(&plain);
        let out = OrderAcrossShuffles
            .optimize(plain, &ConfigOptions::default())
            .unwrap();
        assert_eq!(text(&out), before);
    }
}
