//! Recorded orders (feature `datafusion`): the table of `sql_order` (rows sorted by `k`,
//! `v DESC`) written with its order verified and recorded, as `npy convert --sorted-by` writes
//! it (npy-arrow's `order` module: an archive's comment, a directory's `_npy_order`, a row
//! file's `FILE.npy.order`), and registered with no order declared: the scan reports the
//! recorded order, `ORDER BY k` plans no sort, and every answer equals the undeclared table's.
//! A record that no longer holds (the table rewritten with another number of rows, the comment
//! or the file kept) is ignored, a declared order wins, and NumPy loads every table as it is.

use std::sync::Arc;

use arrow_array::RecordBatch;
use npy_arrow::order::{
    read_archive_record, sidecar_of, write_sidecar, OrderCheck, RecordedOrder, SortColumn,
    DIRECTORY_RECORD,
};
use npy_arrow::BatchWriterBuilder;
use npy_datafusion::{NpyReadOptions, NpySessionExt, TableLayout, TableSpec};
use npy_serde::npz::NpzWriter;
use npy_serde_tests::sql::{rt, sql};
use npy_serde_tests::{live_python, run_python, TempDir};
use tokio::runtime::Runtime;

use crate::sql_order::{answers, ctx, declared, plan, reference, tables, ROWS};

/// The order the rows are in.
pub(crate) fn order() -> Vec<SortColumn> {
    vec![SortColumn::asc("k"), SortColumn::desc("v")]
}

/// What the scan reports for it.
pub(crate) const REPORTED: &str = "k@0 ASC NULLS LAST, v@1 DESC";

/// The rows of `rows.npy` in `dir`, as one batch.
fn batch(dir: &TempDir) -> RecordBatch {
    npy_arrow::read_batch(dir.join("rows.npy")).unwrap()
}

/// The tables of `sql_order::tables`, their orders recorded: `cols.npz` and `cols/` written
/// again by the column writer with `sorted_by`, `rows.npy` with its `rows.npy.order`, and
/// `rows.npz` (member `rows`) with the record in its comment; and the reference answers
/// (`sql_order::reference`, of `rows.npy` before its order is recorded).
pub(crate) fn recorded(label: &str, rt: &Runtime) -> (TempDir, Vec<Vec<Vec<String>>>) {
    let dir = tables(label);
    let want = reference(&dir, rt);
    let b = batch(&dir);
    for name in ["cols.npz", "cols"] {
        let mut w = BatchWriterBuilder::new()
            .column_table(dir.join(name), &b.schema())
            .unwrap();
        w.sorted_by(&order()).unwrap();
        // In two writes, so that the check runs across batches.
        w.write(&b.slice(0, 1000)).unwrap();
        w.write(&b.slice(1000, b.num_rows() - 1000)).unwrap();
        w.finish().unwrap();
    }
    let mut check = OrderCheck::new(&order(), &b.schema()).unwrap();
    check.check(&b).unwrap();
    let record = check.record();
    assert_eq!(record.rows(), ROWS as u64);
    write_sidecar(&sidecar_of(&dir.join("rows.npy")), &record).unwrap();
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("rows.npz")).unwrap());
    npz.add_raw("rows.npy", &std::fs::read(dir.join("rows.npy")).unwrap())
        .unwrap();
    let comment = record.with_member("rows").to_string();
    npz.set_comment(comment.as_bytes()).unwrap();
    npz.finish().unwrap();
    (dir, want)
}

#[test]
fn recorded_orders_spare_the_sort_in_every_layout_and_door() {
    let rt = rt();
    let (dir, want) = recorded("sql-recorded", &rt);
    assert!(dir.join("cols").join(DIRECTORY_RECORD).exists());
    let record = read_archive_record(&dir.join("cols.npz")).unwrap().unwrap();
    assert_eq!((record.order(), record.rows()), (&order()[..], ROWS as u64));
    for partitions in [1, 3] {
        for (format, file, layout) in [
            ("npz", "cols.npz", TableLayout::Columns),
            ("npy", "cols", TableLayout::Columns),
            ("npy", "rows.npy", TableLayout::Rows),
        ] {
            let location = dir.join(file);
            let location = location.to_str().unwrap();
            let ctx = ctx(partitions);
            let options = NpyReadOptions::new().with_layout(layout);
            rt.block_on(ctx.register_npy("t", location, options))
                .unwrap();
            declared(&ctx, &rt, REPORTED, &want);
            let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k, v DESC");
            assert!(!p.contains("SortExec"), "{file}: {p}");

            let ctx = self::ctx(partitions);
            let layout = match layout {
                TableLayout::Columns => ", layout=columns",
                _ => "",
            };
            let spec: TableSpec = format!("{format}({location}{layout})").parse().unwrap();
            rt.block_on(ctx.register_spec("t", &spec)).unwrap();
            declared(&ctx, &rt, REPORTED, &want);

            let ctx = self::ctx(partitions);
            let options = match layout {
                "" => String::new(),
                _ => "OPTIONS ('layout' 'columns')".to_string(),
            };
            let ddl =
                format!("CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{location}' {options}");
            sql(&ctx, &rt, &ddl);
            declared(&ctx, &rt, REPORTED, &want);
        }
        // The archive of rows, its member named.
        let location = dir.join("rows.npz");
        let ctx = ctx(partitions);
        let options = NpyReadOptions::new().npz_member("rows");
        rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), options))
            .unwrap();
        declared(&ctx, &rt, REPORTED, &want);
    }
}

/// An aggregate by the recorded key runs in order, as by a declared one.
#[test]
fn an_aggregate_by_the_recorded_key_runs_in_order() {
    let rt = rt();
    let (dir, _) = recorded("sql-recorded-aggregate", &rt);
    let ctx = ctx(2);
    let spec: TableSpec = format!("npz({}, layout=columns)", dir.join("cols.npz").display())
        .parse()
        .unwrap();
    rt.block_on(ctx.register_spec("t", &spec)).unwrap();
    let query = "SELECT k, sum(v) FROM t GROUP BY k ORDER BY k";
    let p = plan(&ctx, &rt, query);
    assert!(
        p.contains("ordering_mode=Sorted") && !p.contains("SortExec"),
        "{p}"
    );
    let want = sql(&ctx, &rt, query);
    assert_eq!(want.len(), (ROWS as usize).div_ceil(3));
}

/// Asserts that `t` of `ctx` reports no order (its `ORDER BY k` sorts) and answers `want`.
pub(crate) fn unordered(
    ctx: &datafusion::prelude::SessionContext,
    rt: &Runtime,
    want: &[Vec<Vec<String>>],
    what: &str,
) {
    let p = plan(ctx, rt, "SELECT k, v FROM t ORDER BY k");
    assert!(
        p.contains("SortExec") && !p.contains("output_ordering"),
        "{what}: {p}"
    );
    assert_eq!(answers(ctx, rt), want, "{what}");
}

#[test]
fn a_stale_record_is_ignored_and_a_declared_order_wins() {
    let rt = rt();
    let (dir, want) = recorded("sql-recorded-stale", &rt);
    let b = batch(&dir);
    // Another tool rewrites the archive with fewer rows and keeps the comment.
    let comment = npy_serde::npz::MmapNpz::open(dir.join("cols.npz"))
        .unwrap()
        .comment()
        .to_vec();
    let short = b.slice(0, b.num_rows() - 2);
    let mut npz = NpzWriter::new(std::fs::File::create(dir.join("short.npz")).unwrap());
    for (i, f) in short.schema().fields().iter().enumerate() {
        let one = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(vec![f.as_ref().clone()])),
            vec![short.column(i).clone()],
        )
        .unwrap();
        let builder = BatchWriterBuilder::new();
        let reader = arrow_array::RecordBatchIterator::new([Ok(one.clone())], one.schema());
        npy_arrow::write_npz_member(&mut npz, f.name(), reader, &builder).unwrap();
    }
    npz.set_comment(&comment).unwrap();
    npz.finish().unwrap();
    // The reference answers of the short table, from a row file of its rows.
    let short_rows = dir.join("short.npy");
    npy_arrow::write_batches(
        &short_rows,
        arrow_array::RecordBatchIterator::new([Ok(short.clone())], short.schema()),
    )
    .unwrap();
    let ctx = ctx(2);
    rt.block_on(ctx.register_npy("t", short_rows.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let want_short = answers(&ctx, &rt);
    let columns = NpyReadOptions::new().with_layout(TableLayout::Columns);
    let ctx = self::ctx(2);
    let location = dir.join("short.npz");
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), columns.clone()))
        .unwrap();
    unordered(&ctx, &rt, &want_short, "an archive with a stale comment");

    // A row file whose record counts other rows: the record of the full file beside the short one.
    std::fs::copy(sidecar_of(&dir.join("rows.npy")), sidecar_of(&short_rows)).unwrap();
    let ctx = self::ctx(2);
    rt.block_on(ctx.register_npy("t", short_rows.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    unordered(&ctx, &rt, &want_short, "a row file with a stale record");

    // A directory table registered while its record holds drops the order at the next query
    // once its columns are rewritten shorter (each query surveys the table again).
    let ctx = self::ctx(2);
    let cols = dir.join("cols");
    rt.block_on(ctx.register_npy("t", cols.to_str().unwrap(), columns.clone()))
        .unwrap();
    declared(&ctx, &rt, REPORTED, &want);
    let mut w = BatchWriterBuilder::new()
        .column_table(dir.join("rewritten"), &b.schema())
        .unwrap();
    w.write(&short).unwrap();
    w.finish().unwrap();
    for c in ["k", "v", "g"] {
        let name = format!("{c}.npy");
        std::fs::rename(dir.join("rewritten").join(&name), cols.join(&name)).unwrap();
    }
    assert!(cols.join(DIRECTORY_RECORD).exists(), "the record stays");
    unordered(
        &ctx,
        &rt,
        &want_short,
        "a directory rewritten after registration",
    );

    // A declared order wins over a recorded one (here: a weaker one, `k` alone).
    let ctx = self::ctx(2);
    let options = columns.sorted_by([SortColumn::asc("k")]);
    rt.block_on(ctx.register_npy("t", dir.join("cols.npz").to_str().unwrap(), options))
        .unwrap();
    let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k");
    assert!(p.contains("output_ordering=[k@0 ASC NULLS LAST]"), "{p}");
    let p = plan(&ctx, &rt, "SELECT k, v FROM t ORDER BY k, v DESC");
    assert!(p.contains("SortExec"), "{p}");

    // Rewritten without an order, the directory loses its record.
    let mut w = BatchWriterBuilder::new()
        .column_table(&cols, &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    // (It keeps the statistics of its columns there.)
    let kept = npy_arrow::order::read_directory_records(&cols);
    assert_eq!(kept.order, None);
    assert_eq!(kept.stats.map(|s| s.rows()), Some(b.num_rows() as u64));
}

#[test]
fn rows_out_of_order_fail_the_column_writer_naming_the_row_and_leave_nothing() {
    let dir = tables("sql-recorded-unsorted");
    let b = batch(&dir);
    let target = dir.join("out");
    let mut w = BatchWriterBuilder::new()
        .column_table(&target, &b.schema())
        .unwrap();
    w.sorted_by(&[SortColumn::asc("v")]).unwrap();
    let e = w.write(&b).unwrap_err().to_string();
    assert!(
        e.starts_with("the rows are not in the order v: row 1 (v = ")
            && e.contains("comes after row 0"),
        "{e}"
    );
    drop(w);
    assert!(!target.exists());
    let mut w = BatchWriterBuilder::new()
        .column_table(&target, &b.schema())
        .unwrap();
    let e = w
        .sorted_by(&[SortColumn::asc("x")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"x\", which the table does not write; its columns are k, v, g"),
        "{e}"
    );
}

/// NumPy loads the recorded tables as any: the archive's comment is ignored by `np.load` (and
/// is what `zipfile` reads as the comment), the record files are not arrays.
#[test]
fn numpy_loads_the_recorded_tables() {
    if live_python().is_none() {
        return;
    }
    let (dir, _) = recorded("sql-recorded-numpy", &rt());
    let script = r#"
import sys, zipfile
import numpy as np
d = sys.argv[1]
rows = np.load(d + "/rows.npy")
cols = np.load(d + "/cols.npz")
assert cols.files == ["k", "v", "g"], cols.files
for name in ["k", "v", "g"]:
    assert (cols[name] == rows[name]).all(), name
    assert (np.load(d + "/cols/" + name + ".npy") == rows[name]).all(), name
assert (np.load(d + "/rows.npz")["rows"] == rows).all()
print(zipfile.ZipFile(d + "/cols.npz").comment.decode())
print(zipfile.ZipFile(d + "/rows.npz").comment.decode())
"#;
    let out = run_python(script, &[dir.path().as_os_str()]);
    let lines: Vec<&str> = out.lines().collect();
    let text = RecordedOrder::new(order(), ROWS as u64).to_string();
    // The archive of columns: the order's line, then its statistics'.
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[0], text);
    assert!(lines[1].starts_with("npy-serde/stats1:rows="), "{out}");
    assert_eq!(lines[2], format!("{text};member=rows"));
}
