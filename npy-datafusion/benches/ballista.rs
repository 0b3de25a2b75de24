//! Distributed SQL over `.npy` shards: a Ballista cluster in this process
//! (`npy_datafusion::ballista::standalone`: one scheduler and 2 executors, each bound to a free
//! port on localhost and running one task at a time; the second executor is an in-process
//! executor like the first, registered with the same scheduler) against single-process
//! DataFusion (`npy_datafusion`, 2 partitions) on the same shards: 8 files of W2
//! (`[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]`), 20M records
//! (660 MB) at scale 1, page cache warm, timed in the same run:
//!
//! - Q1 `SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag`
//! - Q2 `SELECT sum(x) FROM w2 WHERE id % 7 = 0`
//! - Q3 `SELECT id, x FROM w2 ORDER BY x DESC, id LIMIT 10`
//!
//! It prints how the scheduler's plan splits the scan (the file groups and byte ranges of each
//! task of the scan stage, from the same DataFusion planner and config the scheduler uses) and
//! Ballista's `EXPLAIN ANALYZE` of Q1 (its stages and their metrics).
//!
//! Environment: `NPY_BENCH_SCALE` (default 0.5), `NPY_BENCH_REPS` (default 5).
//! Run: `cargo bench -p npy-datafusion --features ballista --bench ballista`

use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{NpyReadOptions, NpySessionExt};

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, time, write_w2};

const QUERIES: [(&str, &str); 3] = [
    (
        "Q1",
        "SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag",
    ),
    ("Q2", "SELECT sum(x) FROM w2 WHERE id % 7 = 0"),
    ("Q3", "SELECT id, x FROM w2 ORDER BY x DESC, id LIMIT 10"),
];

const SHARDS: u64 = 8;
const EXECUTORS: usize = 2;

/// The scan's tasks: each partition's files and byte ranges.
fn print_scan_split(plan: &Arc<dyn ExecutionPlan>) {
    if let Some(exec) = plan.downcast_ref::<DataSourceExec>()
        && let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>()
    {
        println!(
            "  scan stage: {} tasks over {} shards",
            config.file_groups.len(),
            SHARDS
        );
        for (i, group) in config.file_groups.iter().enumerate() {
            let files: Vec<String> = group
                .files()
                .iter()
                .map(|f| {
                    let name = f.object_meta.location.filename().unwrap_or("?").to_string();
                    match &f.range {
                        Some(r) => format!("{name}[{}..{}]", r.start, r.end),
                        None => name,
                    }
                })
                .collect();
            println!("    task {i}: {}", files.join(" "));
        }
        return;
    }
    for child in plan.children() {
        print_scan_split(child);
    }
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 0.5);
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let per = (20_000_000.0 * scale) as u64 / SHARDS;
    let dir = std::env::temp_dir().join(format!("npy-ballista-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = 0;
    for k in 0..SHARDS {
        let path = dir.join(format!("w2-{k:02}.npy"));
        write_w2(&path, per);
        bytes += std::fs::metadata(&path).unwrap().len();
    }
    println!(
        "W2: {SHARDS} shards of {per} records, {} MB; {EXECUTORS} executors x 1 task slot",
        bytes >> 20
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let local = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(cores));
    // One task slot per executor, and as many partitions as slots in the cluster.
    let config = npy_datafusion::ballista::session_config()
        .with_target_partitions(EXECUTORS)
        .with_ballista_standalone_parallelism(1);
    let cluster = rt
        .block_on(npy_datafusion::ballista::standalone(config, EXECUTORS))
        .expect("a standalone cluster");
    let path = format!("{}/", dir.display());
    for ctx in [&local, &cluster] {
        rt.block_on(ctx.register_npy("w2", &path, NpyReadOptions::new()))
            .unwrap();
    }

    // The scan split, as the scheduler plans it (same planner, same config).
    let planner =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(EXECUTORS));
    rt.block_on(planner.register_npy("w2", &path, NpyReadOptions::new()))
        .unwrap();
    let plan = rt
        .block_on(async {
            planner
                .sql(QUERIES[0].1)
                .await?
                .create_physical_plan()
                .await
        })
        .unwrap();
    println!("How the plan splits Q1's scan ({EXECUTORS} partitions):");
    print_scan_split(&plan);

    let analyzed = rt
        .block_on(async {
            let q = format!("EXPLAIN ANALYZE {}", QUERIES[0].1);
            cluster.sql(&q).await?.collect().await
        })
        .map(|batches| {
            // The `plan` column's text, without the table's frame.
            let mut text = String::new();
            for b in &batches {
                for r in 0..b.num_rows() {
                    let cell = datafusion::arrow::util::display::array_value_to_string(
                        b.column(b.num_columns() - 1),
                        r,
                    );
                    text.push_str(&cell.unwrap_or_default());
                    text.push('\n');
                }
            }
            text
        });
    match analyzed {
        Ok(text) => println!("Ballista EXPLAIN ANALYZE Q1:\n{text}"),
        Err(e) => println!("Ballista EXPLAIN ANALYZE Q1 failed: {e}"),
    }

    println!(
        "{:<4} {:>16} {:>16} {:>8}",
        "", "DataFusion (ms)", "Ballista (ms)", "ratio"
    );
    for (name, q) in QUERIES {
        let run = |ctx: &SessionContext| {
            time(reps, || {
                rt.block_on(async { ctx.sql(q).await?.collect().await })
                    .unwrap()
            })
        };
        // Same answer first.
        let answer = |ctx: &SessionContext| {
            let b = rt
                .block_on(async { ctx.sql(q).await?.collect().await })
                .unwrap();
            let mut lines: Vec<String> = datafusion::arrow::util::pretty::pretty_format_batches(&b)
                .unwrap()
                .to_string()
                .lines()
                .map(str::to_string)
                .collect();
            lines.sort();
            lines
        };
        assert_eq!(answer(&local), answer(&cluster), "{name}");
        let (d, b) = (run(&local), run(&cluster));
        println!(
            "{name:<4} {:>16.1} {:>16.1} {:>8.2}",
            d.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / d.as_secs_f64()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
