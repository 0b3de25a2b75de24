use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, Int64Array, ListArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::datasource::MemTable;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::{collect, displayable, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};

use super::{with_topk_prefilter, TopKPrefilterExec};

/// A small linear congruential generator: the tests' data, the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// `rows` records (id, x, s, l) in `batches` batches: `x` rising when `rising`, otherwise
/// drawn from few values (ties), with nulls and NaNs; `s` strings with nulls; `l` a list.
fn table(rows: usize, batches: usize, rising: bool, seed: u64) -> MemTable {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("l", DataType::new_list(DataType::Int64, true), true),
    ]));
    let mut rng = Lcg(seed);
    let per = rows.div_ceil(batches);
    let mut parts = vec![vec![], vec![]];
    for b in 0..batches {
        let ids: Vec<i64> = (b * per..((b + 1) * per).min(rows))
            .map(|i| i as i64)
            .collect();
        let x: Float64Array = (ids.iter())
            .map(|&i| match rng.next() % 50 {
                0 => None,
                1 => Some(f64::NAN),
                r if rising => Some(i as f64 + (r % 2) as f64 * 0.5),
                r => Some((r % 7) as f64 - 3.0),
            })
            .collect();
        let s: StringArray = (ids.iter())
            .map(|_| match rng.next() % 30 {
                0 => None,
                r => Some(format!("s{:02}", r % 13)),
            })
            .collect();
        let l = ListArray::from_iter_primitive::<Int64Type, _, _>(
            ids.iter().map(|&i| Some(vec![Some(i), None])),
        );
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(x),
                Arc::new(s),
                Arc::new(l),
            ],
        )
        .unwrap();
        parts[b % 2].push(batch);
    }
    MemTable::try_new(schema, parts).unwrap()
}

/// A session with `config`, with the prefilter (the rule and the query planner both: a plan
/// gets one prefilter) or without it.
fn session(config: SessionConfig, prefilter: bool) -> SessionContext {
    let state = (SessionStateBuilder::new().with_config(config))
        .with_default_features()
        .build();
    let state = if prefilter {
        with_topk_prefilter(state)
    } else {
        state
    };
    SessionContext::new_with_state(state)
}

fn context(prefilter: bool, table: MemTable) -> SessionContext {
    let config = SessionConfig::new()
        .with_target_partitions(2)
        .with_batch_size(256);
    let ctx = session(config, prefilter);
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

async fn plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

async fn answer(ctx: &SessionContext, sql: &str) -> String {
    let plan = plan(ctx, sql).await;
    let batches = collect(plan, ctx.task_ctx()).await.unwrap();
    pretty_format_batches(&batches).unwrap().to_string()
}

/// The prefilter nodes of `plan`, with their dropped rows once it ran.
fn prefilters(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<usize>) {
    if let Some(p) = plan.downcast_ref::<TopKPrefilterExec>() {
        let dropped =
            (p.metrics().unwrap().sum_by_name("rows_dropped")).map_or(0, |m| m.as_usize());
        out.push(dropped);
    }
    for child in plan.children() {
        prefilters(child, out);
    }
}

fn metric(p: &TopKPrefilterExec, name: &str) -> usize {
    (p.metrics().unwrap().sum_by_name(name)).map_or(0, |m| m.as_usize())
}

/// The first prefilter of `plan`.
fn prefilter(plan: &Arc<dyn ExecutionPlan>) -> Option<&TopKPrefilterExec> {
    if let Some(p) = plan.downcast_ref::<TopKPrefilterExec>() {
        return Some(p);
    }
    plan.children().into_iter().find_map(prefilter)
}

#[tokio::test]
async fn every_order_and_limit_answers_as_without_it() {
    let orders = [
        "x DESC, id",
        "x ASC, id",
        "x DESC NULLS LAST, id DESC",
        "x ASC NULLS FIRST, id",
        "s DESC NULLS FIRST, id",
        "s, x DESC, id",
        "id DESC",
    ];
    for (seed, rising) in [(1, true), (2, false), (3, false)] {
        let with = context(true, table(5000, 20, rising, seed));
        let without = context(false, table(5000, 20, rising, seed));
        for order in orders {
            for k in [1, 3, 10, 64] {
                let sql = format!("SELECT id, x, s FROM t ORDER BY {order} LIMIT {k}");
                let got = answer(&with, &sql).await;
                assert_eq!(got, answer(&without, &sql).await, "{sql} (seed {seed})");
                let mut nodes = vec![];
                prefilters(&plan(&with, &sql).await, &mut nodes);
                assert_eq!(nodes.len(), 1, "{sql}");
            }
        }
    }
}

#[tokio::test]
async fn rising_data_asked_in_reverse_is_cut_in_the_prefilter() {
    let ctx = context(true, table(20_000, 40, true, 7));
    let sql = "SELECT id, x FROM t ORDER BY x DESC, id LIMIT 10";
    let plan = plan(&ctx, sql).await;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    assert!(
        text.contains("TopKPrefilterExec: expr=[x@1 DESC, id@0 ASC NULLS LAST], fetch=10"),
        "{text}"
    );
    collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    let mut dropped = vec![];
    prefilters(&plan, &mut dropped);
    // 40 batches of 500 rows (cut to 256-row batches or not), each keeping about 10 of its
    // rows and its nulls: more than 90% of the rows never reach the TopK.
    assert!(dropped[0] > 18_000, "dropped {dropped:?}");
}

#[tokio::test]
async fn large_limits_and_unsupported_keys_are_left_alone() {
    let ctx = context(true, table(1000, 4, false, 5));
    for sql in [
        // More than a quarter of the batch size (256).
        "SELECT id FROM t ORDER BY x LIMIT 65",
        // A list key: no selection kernel for it.
        "SELECT id FROM t ORDER BY l, id LIMIT 5",
        // No limit.
        "SELECT id FROM t ORDER BY x",
    ] {
        let mut nodes = vec![];
        prefilters(&plan(&ctx, sql).await, &mut nodes);
        assert!(nodes.is_empty(), "{sql}");
    }
    let mut nodes = vec![];
    prefilters(
        &plan(&ctx, "SELECT id FROM t ORDER BY x LIMIT 64").await,
        &mut nodes,
    );
    assert_eq!(nodes.len(), 1);
}

/// Where the session pushes no dynamic filters into scans (as on Ballista), the prefilter
/// pushes its bound into an `.npy` scan: over ten rising runs of the same values, the rows of
/// the runs after the first that are below the bound never leave the scan.
#[tokio::test]
async fn without_dynamic_filters_the_bound_goes_into_the_npy_scan() {
    let dir = std::env::temp_dir().join(format!("npy-topk-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Each run a sixteenth above the one before: the top five are distinct (a row read twice
    // would show).
    let values: Vec<f64> = (0..10)
        .flat_map(|t| (0..1000).map(move |i| f64::from(i) + f64::from(t) / 16.0))
        .collect();
    let file = dir.join("teeth.npy");
    npy_serde::to_path(&file, &values).unwrap();
    let sql = "SELECT value FROM t ORDER BY value DESC LIMIT 5";
    let mut answers = vec![];
    // One partition, and three byte ranges of the file (whose partitions must all execute
    // the one scan the bound went into: each a scan of its own read every row three times).
    let cases = [
        (1, true, false),
        (1, true, true),
        (1, false, false),
        (3, true, false),
    ];
    for (partitions, with, pushdown) in cases {
        let config = (SessionConfig::new().with_target_partitions(partitions))
            .with_batch_size(256)
            .set_usize("datafusion.optimizer.repartition_file_min_size", 1)
            .set_bool(
                "datafusion.optimizer.enable_dynamic_filter_pushdown",
                pushdown,
            );
        let ctx = session(config, with);
        let options = crate::NpyReadOptions::new();
        crate::NpySessionExt::register_npy(&ctx, "t", file.to_str().unwrap(), options)
            .await
            .unwrap();
        let plan = plan(&ctx, sql).await;
        let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
        answers.push(pretty_format_batches(&batches).unwrap().to_string());
        if let (Some(p), false) = (prefilter(&plan), pushdown) {
            let parts = p.properties().output_partitioning().partition_count();
            assert_eq!(parts, partitions);
            let seen = metric(p, "rows_dropped") + metric(p, "output_rows");
            // The first run of each partition, and the top of the others, reach the prefilter.
            let most = 1_500 * partitions;
            assert!(
                seen < most,
                "{partitions}: the prefilter saw {seen} of 10000 rows"
            );
        }
    }
    let top: Vec<&str> = answers[0].lines().skip(3).take(5).collect();
    let want = [
        "| 999.5625 |",
        "| 999.5    |",
        "| 999.4375 |",
        "| 999.375  |",
        "| 999.3125 |",
    ];
    assert_eq!(top, want, "{}", answers[0]);
    for a in &answers[1..] {
        assert_eq!(&answers[0], a);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
