//! Declared orders (feature `datafusion`): a table whose rows are sorted by `k`, declared so
//! through every door (SQL's `WITH ORDER` and `OPTIONS ('sort_order' ..)`, `register_npy`'s
//! [`NpyReadOptions::sorted_by`], a table spec's `sort_order=`), in every layout (row files,
//! a column archive, a column directory): the scan reports the order (`output_ordering` in
//! `EXPLAIN`), an `ORDER BY k` plans no `SortExec` (the partitions are merged), an aggregate
//! by `k` runs in order, and every answer equals the undeclared table's.

use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{NpyReadOptions, NpySessionExt, SortColumn, TableLayout, TableSpec};
use npy_serde::npz::NpzWriter;
use npy_serde_tests::sql::{rt, session, split_small_files, sql, sql_err};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

#[derive(serde::Serialize, npy_serde::NpyRecord)]
pub(crate) struct Rec {
    pub(crate) k: i64,
    pub(crate) v: i64,
    pub(crate) g: u8,
}

pub(crate) const ROWS: i64 = 5_003;

/// Row `i`: `k` ascending with repeats (three rows a key), `v` descending within a key but
/// not over the table: the rows are sorted by `(k, v DESC)`.
pub(crate) fn rec(i: i64) -> Rec {
    Rec {
        k: i / 3,
        v: ((i / 3) * 7919) % 1000 * 3 + (2 - i % 3),
        g: (i % 4) as u8,
    }
}

/// The table sorted by `k`, `v DESC` in every layout: `rows.npy`, `cols.npz` (members
/// `k`, `v`, `g`) and `cols/` (`k.npy`, `v.npy`, `g.npy`).
pub(crate) fn tables(label: &str) -> TempDir {
    let dir = TempDir::new(label);
    let recs: Vec<Rec> = (0..ROWS).map(rec).collect();
    npy_serde::to_path(dir.join("rows.npy"), &recs).unwrap();
    let k: Vec<i64> = recs.iter().map(|r| r.k).collect();
    let v: Vec<i64> = recs.iter().map(|r| r.v).collect();
    let g: Vec<u8> = recs.iter().map(|r| r.g).collect();
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("cols.npz")).unwrap());
    npz.add("k", &k).unwrap();
    npz.add("v", &v).unwrap();
    npz.add("g", &g).unwrap();
    npz.finish().unwrap();
    std::fs::create_dir_all(dir.join("cols")).unwrap();
    npy_serde::to_path(dir.join("cols/k.npy"), &k).unwrap();
    npy_serde::to_path(dir.join("cols/v.npy"), &v).unwrap();
    npy_serde::to_path(dir.join("cols/g.npy"), &g).unwrap();
    dir
}

/// A session of `partitions` target partitions (row files split into byte ranges even when
/// small, so that one sorted file is several sorted partitions).
pub(crate) fn ctx(partitions: usize) -> SessionContext {
    session(split_small_files(
        SessionConfig::new()
            .with_target_partitions(partitions)
            .with_batch_size(512),
    ))
}

/// The physical plan of `query`, as `EXPLAIN` shows it.
pub(crate) fn plan(ctx: &SessionContext, rt: &Runtime, query: &str) -> String {
    let rows = sql(ctx, rt, &format!("EXPLAIN {query}"));
    let physical = rows
        .iter()
        .find(|r| r[0] == "physical_plan")
        .unwrap_or_else(|| panic!("{query}: no physical plan in {rows:?}"));
    physical[1].clone()
}

/// Queries whose answers do not depend on the partitioning (ordered, or one row).
pub(crate) const QUERIES: [&str; 8] = [
    "SELECT k, v FROM t ORDER BY k, v DESC LIMIT 11",
    "SELECT k, v FROM t ORDER BY k, v",
    "SELECT k, sum(v), count(*) FROM t GROUP BY k ORDER BY k",
    "SELECT k FROM t ORDER BY k LIMIT 7",
    "SELECT k, v FROM t WHERE g = 1 ORDER BY k, v",
    "SELECT k, v FROM t ORDER BY k DESC, v LIMIT 9",
    "SELECT count(*), sum(k), min(v), max(v) FROM t",
    "SELECT g, count(DISTINCT k) FROM t GROUP BY g ORDER BY g",
];

/// Asserts that `ORDER BY k` over `t` of `ctx` plans no sort, the scan reporting `want`
/// (e.g. `k@0 ASC NULLS LAST`), and that the answers equal those of `reference`.
pub(crate) fn declared(
    ctx: &SessionContext,
    rt: &Runtime,
    want: &str,
    reference: &[Vec<Vec<String>>],
) {
    let p = plan(ctx, rt, "SELECT k, v FROM t ORDER BY k");
    assert!(p.contains(&format!("output_ordering=[{want}")), "{p}");
    assert!(!p.contains("SortExec"), "{p}");
    let p = plan(ctx, rt, "SELECT k FROM t WHERE g = 2 ORDER BY k LIMIT 5");
    assert!(!p.contains("SortExec:"), "{p}");
    for (q, w) in QUERIES.iter().zip(reference) {
        assert_eq!(&sql(ctx, rt, q), w, "{q}");
    }
}

pub(crate) fn answers(ctx: &SessionContext, rt: &Runtime) -> Vec<Vec<Vec<String>>> {
    QUERIES.iter().map(|q| sql(ctx, rt, q)).collect()
}

/// The reference answers: the row file, no order declared (and its plan sorts).
pub(crate) fn reference(dir: &TempDir, rt: &Runtime) -> Vec<Vec<Vec<String>>> {
    let ctx = ctx(3);
    let path = dir.join("rows.npy");
    rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let p = plan(&ctx, rt, "SELECT k, v FROM t ORDER BY k");
    assert!(
        p.contains("SortExec") && !p.contains("output_ordering"),
        "{p}"
    );
    let want = answers(&ctx, rt);
    assert_eq!(want[2].len(), (ROWS as usize).div_ceil(3));
    want
}

#[test]
fn row_tables_created_with_order_plan_no_sort() {
    let dir = tables("sql-order-ddl-rows");
    let rt = rt();
    let want = reference(&dir, &rt);
    let path = dir.join("rows.npy");
    for partitions in [1, 3] {
        // DataFusion's listing factory reads WITH ORDER.
        let ctx = ctx(partitions);
        let ddl = format!(
            "CREATE EXTERNAL TABLE t STORED AS NPY WITH ORDER (k ASC) LOCATION '{}'",
            path.display()
        );
        sql(&ctx, &rt, &ddl);
        declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);
        if partitions > 1 {
            // One file, three sorted byte ranges, merged.
            let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k");
            assert!(p.contains("SortPreservingMergeExec"), "{p}");
        }
        // The option says the same.
        let ctx = self::ctx(partitions);
        let ddl = format!(
            "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}' OPTIONS ('sort_order' 'k')",
            path.display()
        );
        sql(&ctx, &rt, &ddl);
        declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);
    }
    // A column the table lacks fails the statement, naming it.
    let ctx = ctx(2);
    let ddl = format!(
        "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}' OPTIONS ('sort_order' 'kk')",
        path.display()
    );
    // (DataFusion's listing factory checks the option's order with the statement's.)
    let e = sql_err(&ctx, &rt, &ddl);
    assert!(e.contains("Column kk is not in schema"), "{e}");
}

#[test]
fn row_tables_registered_sorted_plan_no_sort() {
    let dir = tables("sql-order-rows");
    let rt = rt();
    let want = reference(&dir, &rt);
    let path = dir.join("rows.npy");
    let path = path.to_str().unwrap();
    for partitions in [1, 2, 4] {
        let ctx = ctx(partitions);
        let options = NpyReadOptions::new().sorted_by([SortColumn::asc("k")]);
        rt.block_on(ctx.register_npy("t", path, options)).unwrap();
        declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);

        let ctx = self::ctx(partitions);
        let spec: TableSpec = format!("npy({path}, sort_order=k)").parse().unwrap();
        rt.block_on(ctx.register_spec("t", &spec)).unwrap();
        declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);
    }
    let ctx = ctx(2);
    let spec: TableSpec = format!("npy({path}, sort_order=z)").parse().unwrap();
    let e = rt
        .block_on(ctx.register_spec("t", &spec))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no column \"z\"; its columns are k, v, g"),
        "{e}"
    );
}

#[test]
fn column_tables_declared_sorted_plan_no_sort_through_every_door() {
    let dir = tables("sql-order-columns");
    let rt = rt();
    let want = reference(&dir, &rt);
    for (format, file) in [("npz", "cols.npz"), ("npy", "cols")] {
        let location = dir.join(file);
        let location = location.to_str().unwrap();
        for partitions in [1, 2, 5] {
            // The undeclared column table sorts, and answers the same.
            let ctx = ctx(partitions);
            let spec: TableSpec = format!("{format}({location}, layout=columns)")
                .parse()
                .unwrap();
            rt.block_on(ctx.register_spec("t", &spec)).unwrap();
            let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k");
            assert!(
                p.contains("SortExec") && !p.contains("output_ordering"),
                "{p}"
            );
            assert_eq!(answers(&ctx, &rt), want, "{file}, {partitions}");

            // A spec.
            let ctx = self::ctx(partitions);
            let spec: TableSpec =
                format!("{format}({location}, layout=columns, sort_order='k, v DESC')")
                    .parse()
                    .unwrap();
            rt.block_on(ctx.register_spec("t", &spec)).unwrap();
            let want_order = "k@0 ASC NULLS LAST, v@1 DESC";
            declared(&ctx, &rt, want_order, &want);
            let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k, v DESC");
            assert!(!p.contains("SortExec"), "{p}");
            if partitions > 1 {
                let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k");
                assert!(p.contains("SortPreservingMergeExec"), "{p}");
            }

            // register_npy's options.
            let ctx = self::ctx(partitions);
            let options = NpyReadOptions::new()
                .with_layout(TableLayout::Columns)
                .sorted_by([SortColumn::asc("k")]);
            rt.block_on(ctx.register_npy("t", location, options))
                .unwrap();
            declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);

            // SQL: WITH ORDER, with the columns declared or not.
            for columns in ["", "(k BIGINT, v BIGINT, g TINYINT UNSIGNED)"] {
                let ctx = self::ctx(partitions);
                let ddl = format!(
                    "CREATE EXTERNAL TABLE t {columns} STORED AS NPY WITH ORDER (k ASC) \
                     LOCATION '{location}' OPTIONS ('layout' 'columns')"
                );
                sql(&ctx, &rt, &ddl);
                declared(&ctx, &rt, "k@0 ASC NULLS LAST", &want);
            }
        }
    }
}

/// An aggregate by the declared key runs in order (TPC-H Q18's `GROUP BY l_orderkey`): with
/// one partition the whole aggregate streams, with several each partial aggregate does.
#[test]
fn an_aggregate_by_the_declared_key_runs_in_order() {
    let dir = tables("sql-order-aggregate");
    let rt = rt();
    let location = dir.join("cols.npz");
    let spec: TableSpec = format!("npz({}, layout=columns, sort_order=k)", location.display())
        .parse()
        .unwrap();
    let query = "SELECT k, sum(v) FROM t GROUP BY k HAVING sum(v) > 6000 ORDER BY k";
    let mut answers = Vec::new();
    for partitions in [1, 3] {
        let ctx = ctx(partitions);
        rt.block_on(ctx.register_spec("t", &spec)).unwrap();
        let p = plan(&ctx, &rt, query);
        assert!(p.contains("ordering_mode=Sorted"), "{p}");
        assert!(!p.contains("SortExec"), "{p}");
        answers.push(sql(&ctx, &rt, query));
    }
    let ctx = ctx(3);
    let undeclared: TableSpec = format!("npz({}, layout=columns)", location.display())
        .parse()
        .unwrap();
    rt.block_on(ctx.register_spec("t", &undeclared)).unwrap();
    assert!(!plan(&ctx, &rt, query).contains("ordering_mode=Sorted"));
    let want = sql(&ctx, &rt, query);
    assert!(!want.is_empty());
    assert_eq!(answers, [want.clone(), want]);
}

#[test]
fn a_column_table_order_of_expressions_or_missing_columns_is_refused_naming_it() {
    let dir = tables("sql-order-refusals");
    let rt = rt();
    let location = dir.join("cols.npz");
    let ctx = ctx(2);
    let ddl = format!(
        "CREATE EXTERNAL TABLE t STORED AS NPY WITH ORDER (k + 1) LOCATION '{}' OPTIONS \
         ('layout' 'columns')",
        location.display()
    );
    let e = sql_err(&ctx, &rt, &ddl);
    assert!(
        e.contains("WITH ORDER") && e.contains("of its columns"),
        "{e}"
    );
    let ddl = format!(
        "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}' OPTIONS ('layout' 'columns', \
         'sort_order' 'k, w')",
        location.display()
    );
    let e = sql_err(&ctx, &rt, &ddl);
    assert!(e.contains("no column \"w\"; its columns are"), "{e}");
    let options = NpyReadOptions::new()
        .with_layout(TableLayout::Columns)
        .sorted_by([SortColumn::desc("nope")]);
    let e = rt
        .block_on(ctx.register_npy("u", location.to_str().unwrap(), options))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no column \"nope\""), "{e}");
    let e = "npz(t.npz, layout=columns, sort_order=k sideways)"
        .parse::<TableSpec>()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("COLUMN [ASC|DESC] [NULLS FIRST|NULLS LAST]"),
        "{e}"
    );
}
