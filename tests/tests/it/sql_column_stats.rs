//! Statistics of column tables (feature `datafusion`): where a column table's scan reports an
//! order (declared, or recorded while the record holds), the least and greatest values of the
//! order's first column are its first and last rows, the scan's and each run's, exact. So
//! `min(k)` and `max(k)` are answered without a scan, and a range filter on `k` leaves the
//! runs it cannot match unread (`runs_pruned`, no column bytes read for them). No order, a
//! stale record, a float or nullable key: no bounds, and the same answers.

use datafusion::prelude::SessionContext;
use npy_arrow::order::{write_sidecar, RecordedOrder, SortColumn, DIRECTORY_RECORD};
use npy_datafusion::{NpyReadOptions, NpySessionExt, TableLayout};
use npy_serde_tests::sql::{rt, sql};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

use crate::sql_layouts::scanned_by_column;
use crate::sql_order::{ctx, plan, tables, ROWS};

/// `k`'s least and greatest values in `sql_order`'s table.
fn min_max() -> Vec<Vec<String>> {
    vec![vec!["0".to_string(), ((ROWS - 1) / 3).to_string()]]
}

/// A session of `partitions` with the column table `t` at `location`, declared sorted by
/// `order` (none: `""`).
fn table(
    location: &std::path::Path,
    order: &str,
    partitions: usize,
    rt: &Runtime,
) -> SessionContext {
    let ctx = ctx(partitions);
    let mut options = NpyReadOptions::new().with_layout(TableLayout::Columns);
    if !order.is_empty() {
        options = options.set("sort_order", order).unwrap();
    }
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), options))
        .unwrap();
    ctx
}

/// Whether the plan of `query` reads the table (has a scan of it).
fn scans(ctx: &SessionContext, rt: &Runtime, query: &str) -> bool {
    plan(ctx, rt, query).contains("DataSourceExec")
}

const MIN_MAX: &str = "SELECT min(k), max(k) FROM t";

#[test]
fn min_and_max_of_a_sorted_column_come_from_statistics() {
    let rt = rt();
    let dir = tables("sql-column-stats");
    for name in ["cols.npz", "cols"] {
        let location = dir.join(name);
        for partitions in [1, 4] {
            // No order: the columns are read.
            let t = table(&location, "", partitions, &rt);
            assert!(scans(&t, &rt, MIN_MAX), "{name}");
            assert_eq!(sql(&t, &rt, MIN_MAX), min_max());
            // Declared sorted by `k` (and `k, v DESC`): answered from the statistics.
            for order in ["k", "k, v DESC"] {
                let t = table(&location, order, partitions, &rt);
                let p = plan(&t, &rt, MIN_MAX);
                assert!(
                    !p.contains("DataSourceExec") && p.contains("PlaceholderRowExec"),
                    "{name} {order}: {p}"
                );
                assert_eq!(sql(&t, &rt, MIN_MAX), min_max(), "{name} {order}");
                // `v` is not the order's first column: read.
                assert!(scans(&t, &rt, "SELECT min(v) FROM t"), "{name}");
            }
        }
    }

    // Recorded: the record holds, then it is stale (it counts other rows).
    let cols = dir.join("cols");
    let record = RecordedOrder::new(vec![SortColumn::asc("k")], ROWS as u64);
    write_sidecar(&cols.join(DIRECTORY_RECORD), &record).unwrap();
    let t = table(&cols, "", 2, &rt);
    assert!(!scans(&t, &rt, MIN_MAX));
    assert_eq!(sql(&t, &rt, MIN_MAX), min_max());
    let stale = RecordedOrder::new(vec![SortColumn::asc("k")], ROWS as u64 + 1);
    write_sidecar(&cols.join(DIRECTORY_RECORD), &stale).unwrap();
    assert!(scans(&t, &rt, MIN_MAX));
    assert_eq!(sql(&t, &rt, MIN_MAX), min_max());
}

#[test]
fn descending_float_and_nullable_keys() {
    let rt = rt();
    let dir = TempDir::new("sql-column-stats-keys");
    let n = 1000i64;
    // `d` descending, `x` ascending floats.
    let d: Vec<i64> = (0..n).map(|i| 5000 - 3 * i).collect();
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 7.0).collect();
    std::fs::create_dir_all(dir.join("t")).unwrap();
    npy_serde::to_path(dir.join("t/d.npy"), &d).unwrap();
    npy_serde::to_path(dir.join("t/x.npy"), &x).unwrap();
    let location = dir.join("t");
    let ctx = ctx(3);
    let options = NpyReadOptions::new()
        .with_layout(TableLayout::Columns)
        .set("sort_order", "d DESC; x")
        .unwrap();
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), options))
        .unwrap();
    let q = "SELECT min(d), max(d) FROM t";
    assert!(!scans(&ctx, &rt, q), "{}", plan(&ctx, &rt, q));
    assert_eq!(
        sql(&ctx, &rt, q),
        [[(5000 - 3 * (n - 1)).to_string(), "5000".to_string()]]
    );
    // Floats get no bounds: read.
    let q = "SELECT min(x), max(x) FROM t";
    assert!(scans(&ctx, &rt, q));
    assert_eq!(
        sql(&ctx, &rt, q),
        [["-7.0".to_string(), "492.5".to_string()]]
    );
    // A range of the descending key (rows 234..=266): the runs outside it are not read.
    let q = "SELECT count(*), sum(d) FROM t WHERE d BETWEEN 4200 AND 4300";
    let (bytes, _, _) = scanned_by_column(&ctx, &rt, q);
    let want: Vec<i64> = d
        .iter()
        .copied()
        .filter(|v| (4200..=4300).contains(v))
        .collect();
    assert_eq!(
        sql(&ctx, &rt, q),
        [[want.len().to_string(), want.iter().sum::<i64>().to_string()]]
    );
    // The range lies in the first of the three runs (rows 0..333): the others are not read.
    assert_eq!(bytes["d"], 333 * 8, "{bytes:?}");
}

#[test]
fn a_range_filter_on_the_sorted_column_reads_only_the_runs_it_can_match() {
    let rt = rt();
    let dir = tables("sql-column-stats-prune");
    let rows = ROWS as usize;
    for name in ["cols.npz", "cols"] {
        let location = dir.join(name);
        // Four runs of about 1250 rows (k of about 417 each): 100..=200 lies in the first.
        let q = "SELECT count(*), sum(v) FROM t WHERE k BETWEEN 100 AND 200";
        let plain = table(&location, "", 4, &rt);
        let want = sql(&plain, &rt, q);
        assert_eq!(want[0][0], "303");
        let (every, _, _) = scanned_by_column(&plain, &rt, q);
        assert_eq!(every["k"], rows * 8, "{name}: {every:?}");

        let sorted = table(&location, "k", 4, &rt);
        assert_eq!(sql(&sorted, &rt, q), want, "{name}");
        let (bytes, p, _) = scanned_by_column(&sorted, &rt, q);
        let first_run = rows / 4;
        assert_eq!(bytes["k"], first_run * 8, "{name}: {bytes:?}\n{p}");
        // `v` is read for the rows that pass only, which are all in the run read.
        assert_eq!(bytes["v"], every["v"], "{name}: {bytes:?}");
        let analyzed = sql(&sorted, &rt, &format!("EXPLAIN ANALYZE {q}"));
        let text = format!("{analyzed:?}");
        assert!(text.contains("runs_pruned=3"), "{name}: {text}");

        // Past the greatest value: no run is read, the count is 0.
        let past = "SELECT count(*) FROM t WHERE k > 1667";
        assert_eq!(sql(&sorted, &rt, past), [["0"]]);
        let (bytes, _, _) = scanned_by_column(&sorted, &rt, past);
        assert_eq!(bytes.values().sum::<usize>(), 0, "{name}: {bytes:?}");
    }
}
