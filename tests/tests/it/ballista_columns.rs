//! Column tables on Ballista (feature `ballista`): the logical codec carries a column table
//! (an `.npz` archive of columns, a directory of per-column `.npy` files) to the scheduler and
//! the physical codec refuses its scan (Ballista would send it to every task whole, a wrong
//! answer), so a query over one fails saying so.

use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionConfig;
use datafusion_proto::physical_plan::AsExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;
use npy_serde::ballista::{session_config, standalone, NpyPhysicalCodec};
use npy_serde::datafusion::{NpySessionExt, TableSpec};
use npy_serde::npz::NpzWriter;
use npy_serde_tests::sql::{rt, session, sql, sql_err};
use npy_serde_tests::TempDir;

const ROWS: i64 = 5_000;

/// An aligned archive and a directory of the columns `id`, `flag` and `x`.
fn tables(dir: &TempDir) -> (TableSpec, TableSpec) {
    let id: Vec<i64> = (0..ROWS).collect();
    let flag: Vec<u8> = (0..ROWS).map(|i| (i % 5) as u8).collect();
    let x: Vec<f64> = (0..ROWS).map(|i| (i % 13) as f64 * 0.25 - 1.0).collect();
    let archive = dir.join("t.npz");
    let mut w = NpzWriter::new(std::fs::File::create(&archive).unwrap()).align(true);
    w.add("id", &id).unwrap();
    w.add("flag", &flag).unwrap();
    w.add("x", &x).unwrap();
    w.finish().unwrap();
    let columns = dir.join("columns");
    std::fs::create_dir_all(&columns).unwrap();
    npy_serde::to_path(columns.join("id.npy"), &id).unwrap();
    npy_serde::to_path(columns.join("flag.npy"), &flag).unwrap();
    npy_serde::to_path(columns.join("x.npy"), &x).unwrap();
    let spec = |text: String| text.parse::<TableSpec>().unwrap();
    (
        spec(format!("npz('{}', layout=columns)", archive.display())),
        spec(format!("npy('{}', layout=columns)", columns.display())),
    )
}

const QUERIES: [&str; 3] = [
    "SELECT flag, count(*), sum(id), sum(x) FROM t GROUP BY flag ORDER BY flag",
    "SELECT count(*), sum(x) FROM t WHERE id % 7 = 0",
    "SELECT count(*) FROM (SELECT id FROM t LIMIT 17)",
];

/// What the physical codec answers for a column scan.
const REFUSED: &str = "column tables (layout=columns) cannot run on a Ballista cluster yet";

/// Ballista's scheduler restricts only `DataSourceExec` leaves to a task's partitions: sent
/// whole, the column scan would have every task read rows other tasks read (a GROUP BY counted
/// each row 3 times on this cluster). Until the scan is planned as a `DataSourceExec`, the
/// codec refuses it, so a query fails with a message saying so instead of a wrong answer; the
/// table itself still registers (the logical codec carries it).
#[test]
fn column_tables_on_the_cluster_are_refused_not_answered_wrongly() {
    let dir = TempDir::new("ballista-columns");
    let (archive, directory) = tables(&dir);
    let rt = rt();
    let config = |c: SessionConfig| c.with_target_partitions(4);
    let ballista = rt
        .block_on(standalone(config(session_config()), 2))
        .expect("a standalone Ballista cluster");
    let local = session(config(SessionConfig::new()));
    for spec in [&archive, &directory] {
        for ctx in [&ballista, &local] {
            ctx.deregister_table("t").unwrap();
            rt.block_on(ctx.register_spec("t", spec)).unwrap();
        }
        // Queries that scan are refused; one DataFusion answers from the exact row count
        // (`count(*)` over a `LIMIT`) runs no scan and answers right.
        for q in &QUERIES[..2] {
            let err = sql_err(&ballista, &rt, q);
            assert!(err.contains(REFUSED), "{q}: {err}");
            assert!(!sql(&local, &rt, q).is_empty(), "{q}");
        }
        assert_eq!(
            sql(&ballista, &rt, QUERIES[2]),
            sql(&local, &rt, QUERIES[2])
        );
    }
    assert_eq!(sql(&local, &rt, QUERIES[2]), [["17"]]);
}

#[test]
fn the_physical_codec_refuses_a_column_scan() {
    let dir = TempDir::new("ballista-columns-codec");
    let (archive, _) = tables(&dir);
    let rt = rt();
    let ctx = session(SessionConfig::new().with_target_partitions(3));
    rt.block_on(ctx.register_spec("t", &archive)).unwrap();
    let codec = NpyPhysicalCodec::default();
    for q in [
        "SELECT id, x FROM t LIMIT 7",
        "SELECT flag, sum(x) FROM t WHERE id > 3 GROUP BY flag",
    ] {
        let plan = rt
            .block_on(async { ctx.sql(q).await?.create_physical_plan().await })
            .unwrap();
        let text = displayable(plan.as_ref()).indent(true).to_string();
        assert!(text.contains("ColumnScanExec"), "{text}");
        let err = PhysicalPlanNode::try_from_physical_plan(plan.clone(), &codec)
            .unwrap_err()
            .to_string();
        assert!(err.contains(REFUSED), "{q}: {err}");
    }
}
