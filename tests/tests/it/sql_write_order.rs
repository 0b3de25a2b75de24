//! Orders and SQL writes (feature `datafusion`): `COPY ... TO` and `INSERT INTO` never leave
//! the record of an earlier file in place (a `.npy` file's `FILE.npy.order`, an archive's
//! comment, a column directory's `_npy_order`), and record the order they verified while
//! writing (the plan's `ORDER BY`, the order an `INSERT` sorts its rows in, the write option
//! `sort_order`) where `npy convert --sorted-by` records it; a failed write changes neither a
//! file nor a record.

use std::path::Path;

use datafusion::prelude::SessionContext;
use npy_arrow::order::{
    read_archive_record, read_directory_record, read_file_record, sidecar_of, write_sidecar,
    OrderCheck, RecordedOrder, SortColumn,
};
use npy_datafusion::{NpyReadOptions, NpySessionExt, TableLayout, TableSpec};
use npy_serde_tests::sql::{rt, sql, sql_err};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

use crate::sql_order::{ctx, declared, plan, rec, Rec, ROWS};
use crate::sql_recorded::{order, recorded, unordered, REPORTED};

/// Writes `rev.npy` in `dir`, the rows of `sql_order`'s table in reverse (no order recorded),
/// and registers it as `src` in `ctx`.
fn reversed(dir: &TempDir, ctx: &SessionContext, rt: &Runtime) {
    let recs: Vec<Rec> = (0..ROWS).rev().map(rec).collect();
    let path = dir.join("rev.npy");
    npy_serde::to_path(&path, &recs).unwrap();
    rt.block_on(ctx.register_npy("src", path.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
}

/// A session of three partitions with the table `t` at `location` read with `options` (no
/// order declared).
fn table(location: &Path, options: NpyReadOptions, rt: &Runtime) -> SessionContext {
    let ctx = ctx(3);
    rt.block_on(ctx.register_npy("t", location.to_str().unwrap(), options))
        .unwrap();
    ctx
}

fn columns() -> NpyReadOptions {
    NpyReadOptions::new().with_layout(TableLayout::Columns)
}

/// The names of the files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_copy_over_a_recorded_table_leaves_no_stale_record() {
    let rt = rt();
    let (dir, want) = recorded("sql-write-order-stale", &rt);
    let w = ctx(3);
    reversed(&dir, &w, &rt);
    let rows_npy = dir.join("rows.npy");
    declared(
        &table(&rows_npy, NpyReadOptions::new(), &rt),
        &rt,
        REPORTED,
        &want,
    );
    // The same rows reversed: as many as each record counts, out of its order, and in no
    // order the plan knows.
    let copy = |to: &str, options: &str| {
        let to = dir.join(to);
        let statement = format!(
            "COPY (SELECT k, v, g FROM src) TO '{}' {options}",
            to.display()
        );
        sql(&w, &rt, &statement)
    };
    copy("rows.npy", "");
    assert!(!sidecar_of(&rows_npy).exists());
    let t = table(&rows_npy, NpyReadOptions::new(), &rt);
    unordered(&t, &rt, &want, "rows.npy copied over");

    copy("cols.npz", "OPTIONS ('layout' 'columns')");
    assert_eq!(read_archive_record(&dir.join("cols.npz")).unwrap(), None);
    let t = table(&dir.join("cols.npz"), columns(), &rt);
    unordered(&t, &rt, &want, "cols.npz copied over");

    copy("rows.npz", "OPTIONS ('member' 'rows')");
    assert_eq!(read_archive_record(&dir.join("rows.npz")).unwrap(), None);
    let t = table(
        &dir.join("rows.npz"),
        NpyReadOptions::new().npz_member("rows"),
        &rt,
    );
    unordered(&t, &rt, &want, "rows.npz copied over");

    // A column of the directory table replaced (as many rows, reversed): its `_npy_order` goes.
    let cols = dir.join("cols");
    assert!(read_directory_record(&cols).is_some());
    let k = cols.join("k.npy");
    sql(
        &w,
        &rt,
        &format!("COPY (SELECT k FROM src) TO '{}'", k.display()),
    );
    assert_eq!(names(&cols), ["g.npy", "k.npy", "v.npy"]);
    let t = table(&cols, columns(), &rt);
    let p = plan(&t, &rt, "SELECT k, v FROM t ORDER BY k");
    assert!(
        p.contains("SortExec") && !p.contains("output_ordering"),
        "{p}"
    );
    // The query of `k` alone answers as over the table before (its values are the same).
    assert_eq!(sql(&t, &rt, "SELECT k FROM t ORDER BY k LIMIT 7"), want[3]);
}

#[test]
fn a_copy_with_order_by_records_the_order_in_every_layout() {
    let rt = rt();
    let (dir, want) = recorded("sql-write-order-copy", &rt);
    for partitions in [1, 3] {
        let w = ctx(partitions);
        reversed(&dir, &w, &rt);
        let copy = |to: &str, query: &str, options: &str| {
            let to = dir.join(to);
            let statement = format!("COPY ({query}) TO '{}' {options}", to.display());
            sql(&w, &rt, &statement)
        };
        let sorted = "SELECT k, v, g FROM src ORDER BY k, v DESC";
        copy("out.npy", sorted, "");
        let record = read_file_record(&dir.join("out.npy")).unwrap();
        assert_eq!(record, RecordedOrder::new(order(), ROWS as u64));
        let t = table(&dir.join("out.npy"), NpyReadOptions::new(), &rt);
        declared(&t, &rt, REPORTED, &want);
        let spec: TableSpec = format!("npy({})", dir.join("out.npy").display())
            .parse()
            .unwrap();
        let t = ctx(partitions);
        rt.block_on(t.register_spec("t", &spec)).unwrap();
        declared(&t, &rt, REPORTED, &want);

        copy("out.npz", sorted, "OPTIONS ('layout' 'columns')");
        let record = read_archive_record(&dir.join("out.npz")).unwrap().unwrap();
        assert_eq!(record, RecordedOrder::new(order(), ROWS as u64));
        let t = table(&dir.join("out.npz"), columns(), &rt);
        declared(&t, &rt, REPORTED, &want);

        copy("outrows.npz", sorted, "OPTIONS ('member' 'rows')");
        let record = read_archive_record(&dir.join("outrows.npz"))
            .unwrap()
            .unwrap();
        let rows = RecordedOrder::new(order(), ROWS as u64).with_member("rows");
        assert_eq!(record, rows);
        let t = table(
            &dir.join("outrows.npz"),
            NpyReadOptions::new().npz_member("rows"),
            &rt,
        );
        declared(&t, &rt, REPORTED, &want);

        // The order of an expression is not a column's: of `k, v % 7` only `k` is recorded.
        copy("expr.npy", "SELECT k, v, g FROM src ORDER BY k, v % 7", "");
        let record = read_file_record(&dir.join("expr.npy")).unwrap();
        assert_eq!(record.order(), [SortColumn::asc("k")]);
    }
    // Sorted rows the plan knows nothing of (a file with no record, read as one partition):
    // none is recorded, unless the option `sort_order` declares the order, which is verified.
    let plain = dir.join("plain.npy");
    std::fs::copy(dir.join("rows.npy"), &plain).unwrap();
    let w = table(&plain, NpyReadOptions::new(), &rt);
    let w1 = ctx(1);
    rt.block_on(w1.register_npy("t", plain.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let copy = |w: &SessionContext, options: &str| {
        let to = dir.join("opt.npy");
        let statement = format!(
            "COPY (SELECT k, v, g FROM t) TO '{}' {options}",
            to.display()
        );
        sql(w, &rt, &statement)
    };
    copy(&w1, "");
    assert_eq!(read_file_record(&dir.join("opt.npy")), None);
    copy(&w1, "OPTIONS ('sort_order' 'k, v DESC')");
    let record = read_file_record(&dir.join("opt.npy")).unwrap();
    assert_eq!(record, RecordedOrder::new(order(), ROWS as u64));
    let t = table(&dir.join("opt.npy"), NpyReadOptions::new(), &rt);
    declared(&t, &rt, REPORTED, &want);
    // Rows out of the option's order fail the copy.
    let e = sql_err(
        &w,
        &rt,
        &format!(
            "COPY (SELECT k, v, g FROM t ORDER BY g, k) TO '{}' OPTIONS ('sort_order' 'k, v DESC')",
            dir.join("opt.npy").display()
        ),
    );
    assert!(e.contains("the rows are not in the order k, v"), "{e}");
    assert_eq!(read_file_record(&dir.join("opt.npy")), Some(record));
}

#[test]
fn a_failed_write_changes_no_file_and_no_record() {
    let rt = rt();
    let (dir, _) = recorded("sql-write-order-failed", &rt);
    let w = ctx(2);
    reversed(&dir, &w, &rt);
    let before = names(dir.path());
    let bytes = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let saved: Vec<(String, Vec<u8>)> = before
        .iter()
        .filter(|n| !n.ends_with("cols"))
        .map(|n| (n.clone(), bytes(n)))
        .collect();
    // Rows out of the order the option declares: the statement fails naming the rows.
    for (to, options) in [
        ("rows.npy", "OPTIONS ('sort_order' 'k')"),
        ("cols.npz", "OPTIONS ('sort_order' 'k', 'layout' 'columns')"),
        ("rows.npz", "OPTIONS ('sort_order' 'k', 'member' 'rows')"),
    ] {
        let statement = format!(
            "COPY (SELECT k, v, g FROM src) TO '{}' {options}",
            dir.join(to).display()
        );
        let e = sql_err(&w, &rt, &statement);
        assert!(
            e.contains("sort_order") && e.contains("the rows are not in the order k: row "),
            "{to}: {e}"
        );
    }
    // A key with nulls written as values.
    let statement = format!(
        "COPY (SELECT CASE WHEN k < 5 THEN NULL ELSE k END AS k FROM src ORDER BY k NULLS FIRST) \
         TO '{}' OPTIONS ('sort_order' 'k NULLS FIRST', 'nulls' 'fill=-1')",
        dir.join("rows.npy").display()
    );
    let e = sql_err(&w, &rt, &statement);
    assert!(
        e.contains("has nulls, which the null policy writes as values"),
        "{e}"
    );
    // A query that fails midway.
    let statement = format!(
        "COPY (SELECT CAST(CASE WHEN k < 1000 THEN '1' ELSE 'x' END AS INT) AS k FROM src \
         ORDER BY k) TO '{}'",
        dir.join("rows.npy").display()
    );
    sql_err(&w, &rt, &statement);
    // A declared order naming a column the output has not: refused before anything is written.
    let statement = format!(
        "COPY (SELECT k FROM src) TO '{}' OPTIONS ('sort_order' 'v')",
        dir.join("rows.npy").display()
    );
    let e = sql_err(&w, &rt, &statement);
    assert!(e.contains("\"v\", which the table has not"), "{e}");
    assert_eq!(names(dir.path()), before);
    for (name, was) in &saved {
        assert_eq!(&bytes(name), was, "{name}");
    }
    assert_eq!(
        read_file_record(&dir.join("rows.npy")),
        Some(RecordedOrder::new(order(), ROWS as u64))
    );
}

#[test]
fn an_insert_into_a_recorded_table_records_its_new_file() {
    let rt = rt();
    let dir = TempDir::new("sql-write-order-insert");
    let t = dir.join("t");
    std::fs::create_dir_all(&t).unwrap();
    // Two files of the table, each sorted by `k, v DESC` and recorded so.
    let half = ROWS / 2;
    for (name, range) in [("a.npy", 0..half), ("b.npy", half..ROWS)] {
        let recs: Vec<Rec> = range.map(rec).collect();
        let path = t.join(name);
        npy_serde::to_path(&path, &recs).unwrap();
        let b = npy_arrow::read_batch(&path).unwrap();
        let mut check = OrderCheck::new(&order(), &b.schema()).unwrap();
        check.check(&b).unwrap();
        write_sidecar(&sidecar_of(&path), &check.record()).unwrap();
    }
    let w = ctx(2);
    reversed(&dir, &w, &rt);
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}/'",
        t.display()
    );
    sql(&w, &rt, &create);
    let p = plan(&w, &rt, "SELECT k, v FROM t ORDER BY k, v DESC");
    assert!(
        p.contains("output_ordering=[k@0 ASC NULLS LAST, v@1 DESC]"),
        "{p}"
    );
    // Rows in reverse: the insert sorts them in the table's order, verified and recorded.
    let inserted = sql(
        &w,
        &rt,
        "INSERT INTO t SELECT k, v, g FROM src WHERE k < 100",
    );
    assert_eq!(inserted, [["300".to_string()]]);
    let files = names(&t);
    assert_eq!(files.len(), 6, "{files:?}");
    let new: Vec<&String> = files
        .iter()
        .filter(|n| !n.starts_with("a.") && !n.starts_with("b."))
        .collect();
    let npy = new.iter().find(|n| n.ends_with(".npy")).unwrap();
    assert!(
        new.iter().any(|n| *n == &format!("{npy}.order")),
        "{files:?}"
    );
    let record = read_file_record(&t.join(npy)).unwrap();
    assert_eq!(record, RecordedOrder::new(order(), 300));

    // Registered again, every file's record holds: the order is the table's, and the answers
    // are those of the rows sorted here. (Over as many partitions as files: DataFusion keeps a
    // listing table's order only where each partition reads one file.)
    let again = ctx(3);
    sql(&again, &rt, &create);
    let query = "SELECT k, v FROM t ORDER BY k, v DESC";
    let p = plan(&again, &rt, query);
    assert!(
        p.contains("output_ordering=[k@0 ASC NULLS LAST, v@1 DESC]"),
        "{p}"
    );
    let mut all: Vec<(i64, i64)> = (0..ROWS)
        .chain(0..300)
        .map(|i| {
            let r = rec(i);
            (r.k, r.v)
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let want: Vec<Vec<String>> = all
        .iter()
        .map(|(k, v)| vec![k.to_string(), v.to_string()])
        .collect();
    assert_eq!(sql(&again, &rt, query), want);

    // A table with no order: an insert records the order of its rows only if the plan gives
    // one, and a plain insert records nothing.
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::copy(t.join("a.npy"), plain.join("a.npy")).unwrap();
    let create = format!(
        "CREATE EXTERNAL TABLE p STORED AS NPY LOCATION '{}/'",
        plain.display()
    );
    sql(&w, &rt, &create);
    sql(
        &w,
        &rt,
        "INSERT INTO p SELECT k, v, g FROM src WHERE k < 100",
    );
    let files = names(&plain);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.iter().all(|n| !n.ends_with(".order")), "{files:?}");
}
