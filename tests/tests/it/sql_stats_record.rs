//! Statistics recorded with column tables and row files (feature `datafusion`): the column
//! table writer (`npy convert --layout columns`, `COPY ... TO` in column layout) records each
//! column's least and greatest values, null count and distinct-value estimate (npy-arrow's
//! `RecordedStats`, in the archive's comment or the directory's `_npy_order`), and so does `npy
//! convert` to a `.npy` file (`NpyBatchWriter::write_collecting`, in `FILE.npy.order`); the
//! scan reports them to DataFusion as inexact statistics while the record holds. They change plans,
//! never answers: a semi join builds on its small side (the shape of TPC-H Q18), `min` and
//! `max` are still read, and a stale record (files rewritten since) is ignored or, where it
//! cannot be told, only misleads the planner.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringViewArray};
use datafusion::common::stats::Precision;
use datafusion::common::{ScalarValue, Statistics};
use datafusion::physical_plan::{StatisticsArgs, StatisticsContext};
use datafusion::prelude::SessionContext;
use npy_arrow::order::{
    read_archive_records, read_directory_records, sidecar_of, write_table_record, StatsCollector,
    TableRecord, DIRECTORY_RECORD,
};
use npy_arrow::{BatchWriterBuilder, NullPolicy};
use npy_datafusion::{NpyReadOptions, NpySessionExt, TableLayout};
use npy_serde_tests::sql::{rt, sql};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

use crate::sql_order::{ctx, plan};

/// Rows of the table `big`.
const N: i64 = 4000;
/// Its distinct keys: each key is on four rows.
const KEYS: i64 = 1000;

/// The table `big`: `k` (each of `0..KEYS` four times, in no order), `q` (floats, a null every
/// 500 rows: written as NaN), `s` (strings, as Arrow's string views: Parquet's strings, which
/// the column table reads back as `Utf8`).
fn big() -> RecordBatch {
    let k: Vec<i64> = (0..N).map(|i| (i * 7919) % KEYS).collect();
    let q: Vec<Option<f64>> = (0..N)
        .map(|i| (i % 500 != 7).then_some((i % 97) as f64))
        .collect();
    let s: Vec<String> = k.iter().map(|k| format!("name {k:04}")).collect();
    RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("q", Arc::new(Float64Array::from(q)) as ArrayRef),
        ("s", Arc::new(StringViewArray::from(s)) as ArrayRef),
    ])
    .unwrap()
}

/// Writes `big` as the column table `path` (an archive or a directory), in batches of 700
/// rows, floats' nulls as NaN.
fn write(path: &Path) {
    let b = big();
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Nan)
        .column_table(path, &b.schema())
        .unwrap();
    let mut at = 0;
    while at < b.num_rows() {
        let n = 700.min(b.num_rows() - at);
        w.write(&b.slice(at, n)).unwrap();
        at += n;
    }
    w.finish().unwrap();
}

/// A session of `partitions` with the column table `t` at `location`.
fn table(location: &Path, partitions: usize, rt: &Runtime) -> SessionContext {
    let ctx = ctx(partitions);
    let options = NpyReadOptions::new().with_layout(TableLayout::Columns);
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), options))
        .unwrap();
    ctx
}

/// The statistics of the whole plan of `query` (the scan's, for a plain `SELECT`).
fn statistics(ctx: &SessionContext, rt: &Runtime, query: &str) -> Statistics {
    rt.block_on(async {
        let plan = ctx
            .sql(query)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let stats = StatisticsContext::new().compute(plan.as_ref(), &StatisticsArgs::new());
        stats.unwrap().as_ref().clone()
    })
}

/// Whether `d` is within 5% of `want`.
fn near(d: &Precision<usize>, want: i64) -> bool {
    matches!(d, Precision::Inexact(d) if (*d as f64 / want as f64 - 1.0).abs() < 0.05)
}

#[test]
fn a_written_table_records_its_statistics_and_the_scan_reports_them_inexact() {
    let rt = rt();
    let dir = TempDir::new("sql-stats-record");
    for name in ["big.npz", "big"] {
        let location = dir.join(name);
        write(&location);
        let record = match name {
            "big.npz" => read_archive_records(&location).unwrap(),
            _ => read_directory_records(&location),
        };
        assert_eq!(record.order, None, "{name}");
        let stats = record.stats.unwrap();
        assert_eq!(stats.rows(), N as u64);
        let k = stats.column("k").unwrap();
        assert_eq!((k.data_type(), k.nulls()), ("Int64", Some(0)));
        assert_eq!((k.min(), k.max()), (Some("0"), Some("999")));
        // `q`'s nulls are NaN in the file: no nulls, and NaN is no least or greatest value.
        let q = stats.column("q").unwrap();
        assert_eq!(
            (q.nulls(), q.min(), q.max()),
            (Some(0), Some("0"), Some("96"))
        );
        let s = stats.column("s").unwrap();
        assert_eq!((s.min(), s.max()), (Some("name 0000"), Some("name 0999")));

        for partitions in [1, 3] {
            let t = table(&location, partitions, &rt);
            let st = statistics(&t, &rt, "SELECT k, q, s FROM t");
            assert_eq!(st.num_rows, Precision::Exact(N as usize));
            let [k, q, s] = &st.column_statistics[..] else {
                panic!("{st:?}")
            };
            assert_eq!(k.min_value, Precision::Inexact(ScalarValue::Int64(Some(0))));
            assert_eq!(
                k.max_value,
                Precision::Inexact(ScalarValue::Int64(Some(999)))
            );
            assert_eq!(k.null_count, Precision::Inexact(0));
            assert!(near(&k.distinct_count, KEYS), "{k:?}");
            assert_eq!(
                q.max_value,
                Precision::Inexact(ScalarValue::Float64(Some(96.0)))
            );
            assert!(near(&q.distinct_count, 98), "{q:?}");
            assert_eq!(
                s.min_value,
                Precision::Inexact(ScalarValue::Utf8(Some("name 0000".into())))
            );
            // EXPLAIN shows them.
            let shown = sql(&t, &rt, "SET datafusion.explain.show_statistics = true");
            assert!(shown.is_empty());
            let p = plan(&t, &rt, "SELECT k FROM t");
            assert!(
                p.contains("Min=Inexact(Int64(0)) Max=Inexact(Int64(999))"),
                "{p}"
            );
            // Inexact: `min` and `max` are read, not answered from the record.
            let q = "SELECT min(k), max(k) FROM t";
            assert!(plan(&t, &rt, q).contains("DataSourceExec"), "{name}");
            assert_eq!(sql(&t, &rt, q), [["0", "999"]]);
        }
    }
}

#[test]
fn a_stale_record_is_ignored_and_never_changes_an_answer() {
    let rt = rt();
    let dir = TempDir::new("sql-stats-record-stale");
    let location = dir.join("big");
    write(&location);
    let k = |t: &SessionContext| statistics(t, &rt, "SELECT k, q FROM t").column_statistics;

    // Rewritten by NumPy with other values, the same rows and types: the record cannot tell,
    // the planner is misled (k's range is the old one), the answers are the new values'.
    let shifted: Vec<i64> = (0..N).map(|i| 5000 + (i * 7919) % KEYS).collect();
    npy_serde::to_path(location.join("k.npy"), &shifted).unwrap();
    let t = table(&location, 3, &rt);
    assert_eq!(
        k(&t)[0].max_value,
        Precision::Inexact(ScalarValue::Int64(Some(999)))
    );
    for (q, want) in [
        ("SELECT min(k), max(k) FROM t", ["5000", "5999"]),
        (
            "SELECT count(*), max(k) FROM t WHERE k > 4999",
            ["4000", "5999"],
        ),
        ("SELECT count(*), min(k) FROM t WHERE k < 1000", ["0", ""]),
    ] {
        let got = sql(&t, &rt, q);
        let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        // An empty min is SQL's NULL, which the harness prints as it does.
        assert_eq!(got[0][0], want[0], "{q}");
        if !want[1].is_empty() {
            assert_eq!(got[0][1], want[1], "{q}");
        }
    }

    // `k` rewritten as int32: its entry no longer holds (another type); `q`'s does.
    let narrow: Vec<i32> = (0..N as i32).collect();
    npy_serde::to_path(location.join("k.npy"), &narrow).unwrap();
    let t = table(&location, 3, &rt);
    let st = k(&t);
    assert_eq!(st[0].min_value, Precision::Absent);
    assert_eq!(st[0].distinct_count, Precision::Absent);
    assert_eq!(
        st[1].max_value,
        Precision::Inexact(ScalarValue::Float64(Some(96.0)))
    );

    // Every column rewritten with another number of rows: the record is stale, ignored.
    let more = N as usize + 1;
    npy_serde::to_path(location.join("k.npy"), &vec![1i64; more]).unwrap();
    npy_serde::to_path(location.join("q.npy"), &vec![2.0f64; more]).unwrap();
    std::fs::remove_file(location.join("s.npy")).unwrap();
    let t = table(&location, 3, &rt);
    for c in k(&t) {
        assert_eq!(c.min_value, Precision::Absent);
        assert_eq!(c.null_count, Precision::Absent);
        assert_eq!(c.distinct_count, Precision::Absent);
    }
    assert_eq!(
        sql(&t, &rt, "SELECT max(k), sum(q) FROM t"),
        [["1", "8002.0"]]
    );
}

/// TPC-H Q18's shape: the rows whose key's group passes a `HAVING`, an `IN` subquery over the
/// same table (a semi join of the table with its groups).
const Q18: &str = "SELECT count(*), sum(q), min(s), max(s) FROM t \
                   WHERE k IN (SELECT k FROM t GROUP BY k HAVING sum(q) > 150)";

/// The join type of the plan's hash join.
fn join_type(plan: &str) -> &str {
    let at = plan.find("join_type=").unwrap_or_else(|| panic!("{plan}"));
    let rest = &plan[at + "join_type=".len()..];
    &rest[..rest.find([',', ' ']).unwrap_or(rest.len())]
}

#[test]
fn the_semi_join_of_q18s_shape_builds_on_its_small_side_with_statistics() {
    let rt = rt();
    let dir = TempDir::new("sql-stats-record-join");
    let with = dir.join("big");
    write(&with);
    // The same columns without the record.
    let without = dir.join("plain");
    std::fs::create_dir_all(&without).unwrap();
    for c in ["k", "q", "s"] {
        let file = format!("{c}.npy");
        std::fs::copy(with.join(&file), without.join(&file)).unwrap();
    }
    assert!(with.join(DIRECTORY_RECORD).exists());
    assert!(!without.join(DIRECTORY_RECORD).exists());

    for partitions in [1, 3] {
        let plain = table(&without, partitions, &rt);
        let p = plan(&plain, &rt, Q18);
        // No statistics: the groups are estimated as many as the rows, the table is the
        // hash join's build side (its left), a left semi join.
        assert_eq!(join_type(&p), "LeftSemi", "{p}");
        let stats = table(&with, partitions, &rt);
        let p = plan(&stats, &rt, Q18);
        // The recorded distinct keys (1000 of 4000 rows) make the groups the small side:
        // DataFusion swaps the inputs, building on the groups.
        assert_eq!(join_type(&p), "RightSemi", "{p}");
        let answer = sql(&stats, &rt, Q18);
        assert_eq!(answer, sql(&plain, &rt, Q18));
        // And the answer is right: the keys whose four rows' q sum above 150.
        let b = big();
        let (k, q) = (b.column(0), b.column(1));
        let k = k.as_any().downcast_ref::<Int64Array>().unwrap();
        let q = q.as_any().downcast_ref::<Float64Array>().unwrap();
        let mut sums = vec![0.0f64; KEYS as usize];
        for i in 0..N as usize {
            // A null is NaN in the file, which makes its key's sum NaN (above every number
            // in SQL's order, so > 150).
            sums[k.value(i) as usize] += if q.is_null(i) { f64::NAN } else { q.value(i) };
        }
        let keep = |key: i64| {
            let s = sums[key as usize];
            s.is_nan() || s > 150.0
        };
        let count = (0..N as usize).filter(|&i| keep(k.value(i))).count();
        assert_eq!(answer[0][0], count.to_string(), "{answer:?}");
    }
}

/// Writes `big` as the row file `path` in batches of 700 rows, floats' nulls as NaN, with the
/// statistics of what it wrote recorded beside it (`path.order`), as `npy convert` does.
fn write_rows(path: &Path) {
    let b = big();
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Nan)
        .create(path, &b.schema())
        .unwrap();
    let names = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect::<Vec<_>>();
    let mut stats = StatsCollector::new(names);
    let mut at = 0;
    while at < b.num_rows() {
        let n = 700.min(b.num_rows() - at);
        w.write_collecting(&b.slice(at, n), &mut stats).unwrap();
        at += n;
    }
    w.finish().unwrap();
    let record = TableRecord {
        order: None,
        stats: Some(stats.finish()),
    };
    write_table_record(&sidecar_of(path), &record).unwrap();
}

/// A session of `partitions` with the row table `t` at `location`.
fn row_table(location: &Path, partitions: usize, rt: &Runtime) -> SessionContext {
    let ctx = ctx(partitions);
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    ctx
}

#[test]
fn a_row_files_recorded_statistics_order_its_joins_while_they_hold() {
    let rt = rt();
    let dir = TempDir::new("sql-stats-record-rows");
    let rows = dir.join("big.npy");
    write_rows(&rows);
    let sidecar = sidecar_of(&rows);
    let text = std::fs::read_to_string(&sidecar).unwrap();
    // What the row writer saw is what the column writer records of the same batches.
    let cols = dir.join("cols");
    write(&cols);
    assert_eq!(
        text,
        std::fs::read_to_string(cols.join(DIRECTORY_RECORD)).unwrap()
    );

    for partitions in [1, 3] {
        let t = row_table(&rows, partitions, &rt);
        let st = statistics(&t, &rt, "SELECT k, q, s FROM t");
        let [k, q, s] = &st.column_statistics[..] else {
            panic!("{st:?}")
        };
        assert_eq!(k.min_value, Precision::Inexact(ScalarValue::Int64(Some(0))));
        assert_eq!(
            k.max_value,
            Precision::Inexact(ScalarValue::Int64(Some(999)))
        );
        assert!(near(&k.distinct_count, KEYS), "{k:?}");
        assert_eq!(q.null_count, Precision::Inexact(0));
        assert!(
            matches!(s.max_value, Precision::Inexact(ScalarValue::Utf8(_))),
            "{s:?}"
        );
        assert_eq!(join_type(&plan(&t, &rt, Q18)), "RightSemi");
        let answer = sql(&t, &rt, Q18);
        assert_eq!(answer, sql(&table(&cols, partitions, &rt), &rt, Q18));
    }

    // A stale record (another number of rows), one of another type, or none: no statistics,
    // the same answer.
    let want = sql(&row_table(&rows, 1, &rt), &rt, Q18);
    let stale = text.replace(&format!("rows={N}"), &format!("rows={}", N + 1));
    let retyped = text.replace("\"k\",\"Int64\"", "\"k\",\"Int32\"");
    assert_ne!(retyped, text);
    for record in [Some(stale), Some(retyped), None] {
        match &record {
            Some(r) => std::fs::write(&sidecar, r).unwrap(),
            None => std::fs::remove_file(&sidecar).unwrap(),
        }
        let t = row_table(&rows, 1, &rt);
        let st = statistics(&t, &rt, "SELECT k FROM t");
        assert_eq!(
            st.column_statistics[0].min_value,
            Precision::Absent,
            "{record:?}"
        );
        assert_eq!(st.column_statistics[0].distinct_count, Precision::Absent);
        assert_eq!(sql(&t, &rt, Q18), want);
    }
}
