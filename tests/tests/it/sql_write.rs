//! Writing from SQL (npy-datafusion's `NpySink`): `COPY ... TO` a `.npy` file, an `.npz`
//! archive of one member or of columns, a directory and hive partitions, and `INSERT INTO` a
//! `STORED AS NPY` directory table. The files are the bytes the library's writers (those of
//! `npy convert`) write for the same rows; the write options are those of `npy convert
//! --nulls/--decimals`, and a bad one fails naming it; a failing query or write leaves no file
//! and an existing target as it was.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};
use npy_arrow::order::{RecordedOrder, SortColumn};
use npy_arrow::BatchWriterBuilder;
use npy_datafusion::{NpyReadOptions, NpySessionExt};
use npy_serde_tests::sql::{
    files_under, obs, register_bad_bools, rows, rt, session, sql, sql_err, Obs,
};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

/// A session of one partition (rows keep their file order) with the NPY format.
fn ctx1() -> SessionContext {
    session(SessionConfig::new().with_target_partitions(1))
}

/// Writes `n` [`obs`] records to `path`; returns them.
fn write_obs(path: &Path, n: i64) -> Vec<Obs> {
    let recs: Vec<Obs> = (0..n).map(obs).collect();
    npy_serde::to_path(path, &recs).unwrap();
    recs
}

/// The batches of `query`.
fn batches(ctx: &SessionContext, rt: &Runtime, query: &str) -> Vec<RecordBatch> {
    rt.block_on(async { ctx.sql(query).await?.collect().await })
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// `COPY (SELECT * ...) TO 'out.npy'` writes the records back byte for byte (the dtype from
/// the schema's NumPy metadata: the nested record, the `|S4` bytes, the NaT datetimes), which
/// are also what npy-arrow's batch writer (`npy convert`'s) writes from the same batches.
#[test]
fn copy_to_npy_is_the_file_read() {
    let dir = TempDir::new("sqlw-npy");
    let src = dir.join("obs.npy");
    write_obs(&src, 500);
    let (ctx, rt) = (ctx1(), rt());
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let out = dir.join("out.npy");
    let copied = sql(
        &ctx,
        &rt,
        &format!("COPY (SELECT * FROM t ORDER BY id) TO '{}'", out.display()),
    );
    assert_eq!(copied, [["500"]]);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&src).unwrap());

    // The same bytes as the batch writer writes from the batches of the same query.
    let got = batches(&ctx, &rt, "SELECT * FROM t ORDER BY id");
    let converted = dir.join("converted.npy");
    let mut w = BatchWriterBuilder::new()
        .create(&converted, &got[0].schema())
        .unwrap();
    for b in &got {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&converted).unwrap()
    );

    // STORED AS NPY where the path has another extension; a projection and a filter.
    let other = dir.join("part.dat");
    sql(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT id, x FROM t WHERE flag = 1 ORDER BY id) TO '{}' STORED AS NPY",
            other.display()
        ),
    );
    let rt2 = ctx1();
    rt.block_on(rt2.register_npy(
        "back",
        other.to_str().unwrap(),
        NpyReadOptions::new().file_extension(".dat"),
    ))
    .unwrap();
    assert_eq!(
        sql(&rt2, &rt, "SELECT count(*), sum(id), sum(x) FROM back"),
        sql(
            &ctx,
            &rt,
            "SELECT count(*), sum(id), sum(x) FROM t WHERE flag = 1"
        )
    );
}

/// `COPY TO 'out.npz'`: the records as the archive's member `arr_0` (or the `member` named),
/// as `write_npz_member` (`npy convert IN OUT.npz`) writes them; with `layout=columns` one
/// plain array per column, the bytes of `ColumnTableWriter` (`npy convert --layout columns`),
/// which a column table reads back.
#[test]
fn copy_to_npz_member_and_columns() {
    let dir = TempDir::new("sqlw-npz");
    let src = dir.join("obs.npy");
    write_obs(&src, 300);
    let (ctx, rt) = (ctx1(), rt());
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let got = batches(&ctx, &rt, "SELECT * FROM t ORDER BY id");
    let schema = got[0].schema();

    // One member, default key.
    let out = dir.join("rows.npz");
    sql(
        &ctx,
        &rt,
        &format!("COPY (SELECT * FROM t ORDER BY id) TO '{}'", out.display()),
    );
    let want = dir.join("want.npz");
    let mut npz = npy_serde::NpzWriter::new(BufWriter::new(File::create(&want).unwrap()));
    let reader = datafusion::arrow::array::RecordBatchIterator::new(
        got.iter().cloned().map(Ok),
        schema.clone(),
    );
    npy_arrow::write_npz_member(&mut npz, "arr_0", reader, &BatchWriterBuilder::new()).unwrap();
    // The rows' order (the query's `ORDER BY id`, verified) is recorded in the comment.
    let record = RecordedOrder::new(vec![SortColumn::asc("id")], 300);
    let comment = record.clone().with_member("arr_0").to_string();
    npz.set_comment(comment.as_bytes()).unwrap();
    npz.finish().unwrap().into_inner().unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&want).unwrap());
    let member: Vec<Obs> = {
        let mut a = npy_serde::NpzArchive::open(&out).unwrap();
        a.read("arr_0").unwrap()
    };
    assert_eq!(member, (0..300).map(obs).collect::<Vec<_>>());

    // A member named.
    let named = dir.join("named.npz");
    sql(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT id, x FROM t ORDER BY id) TO '{}' OPTIONS ('member' 'obs')",
            named.display()
        ),
    );
    let back = ctx1();
    let sql_create = format!(
        "CREATE EXTERNAL TABLE n STORED AS NPZ LOCATION '{}' OPTIONS ('member' 'obs')",
        named.display()
    );
    sql(&back, &rt, &sql_create);
    assert_eq!(
        sql(&back, &rt, "SELECT count(*), sum(x) FROM n"),
        sql(&ctx, &rt, "SELECT count(*), sum(x) FROM t")
    );

    // Columns.
    let cols = dir.join("cols.npz");
    sql(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT * FROM t ORDER BY id) TO '{}' OPTIONS ('layout' 'columns')",
            cols.display()
        ),
    );
    let want = dir.join("want_cols.npz");
    let mut w = BatchWriterBuilder::new()
        .column_table(&want, &schema)
        .unwrap();
    for b in &got {
        w.write(b).unwrap();
    }
    w.record_order(record);
    w.finish().unwrap();
    assert_eq!(std::fs::read(&cols).unwrap(), std::fs::read(&want).unwrap());
    let back = ctx1();
    sql(
        &back,
        &rt,
        &format!(
            "CREATE EXTERNAL TABLE c STORED AS NPZ LOCATION '{}' OPTIONS ('layout' 'columns')",
            cols.display()
        ),
    );
    let q = "SELECT count(*), sum(id), sum(x), sum(pos.a), count(ts) FROM";
    assert_eq!(
        sql(&back, &rt, &format!("{q} c")),
        sql(&ctx, &rt, &format!("{q} t"))
    );
    // A column table is not appended to.
    let e = sql_err(&back, &rt, "INSERT INTO c SELECT * FROM c");
    assert!(e.contains("column table") && e.contains("COPY"), "{e}");
}

/// The null and decimal policies as options, for the whole output or one column; without
/// them a null is an error naming the column and the options.
#[test]
fn null_and_decimal_options() {
    let dir = TempDir::new("sqlw-policies");
    let (ctx, rt) = (ctx1(), rt());
    let query = "SELECT column1 AS n, CAST(column2 AS DECIMAL(10, 2)) AS p, column3 AS f \
                 FROM (VALUES (1, 1.25, 0.5), (NULL, 2.5, NULL), (3, NULL, 1.5))";
    let out = dir.join("p.npy");
    let e = sql_err(&ctx, &rt, &format!("COPY ({query}) TO '{}'", out.display()));
    assert!(e.contains("null") && e.contains("p.npy"), "{e}");
    assert!(!out.exists());
    assert_eq!(files_under(dir.path()), Vec::<PathBuf>::new());

    sql(
        &ctx,
        &rt,
        &format!(
            "COPY ({query}) TO '{}' OPTIONS ('nulls' 'nan', 'nulls.n' 'fill=-1', \
             'decimals' 'f8')",
            out.display()
        ),
    );
    let bytes = std::fs::read(&out).unwrap();
    let h = npy_serde::header::parse_header(&bytes, &Default::default()).unwrap();
    let descr = h.header.dtype.descr();
    assert!(descr.contains("('n', '<i8')"), "{descr}");
    assert!(descr.contains("'p'), '<f8')"), "{descr}");
    assert!(descr.contains("('f', '<f8')"), "{descr}");
    let back = ctx1();
    rt.block_on(back.register_npy("b", out.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let r = sql(&back, &rt, "SELECT n, f FROM b");
    assert_eq!(r[1][0], "-1");
    assert_eq!(r[1][1], "NaN");
    assert_eq!(r[2][0], "3");
    // Scaled decimals have no NaN: the null is refused, naming the column and the policies.
    let e = sql_err(
        &ctx,
        &rt,
        &format!(
            "COPY ({query}) TO '{}' OPTIONS ('nulls' 'nan', 'nulls.n' 'fill=-1', \
             'decimals' 'scaled')",
            out.display()
        ),
    );
    assert!(e.contains("column `p`") && e.contains("fill=VALUE"), "{e}");
    let r = sql(&back, &rt, "SELECT count(*) FROM b");
    assert_eq!(r, [["3"]]);
}

/// Per-column options with `layout=columns`: each column's array is written with its own
/// options and the table-wide ones, never handed another column's (which it once refused as
/// naming no column of its own): `x`'s fill, `d`'s scaled decimals and `s`'s width go to
/// those members only, `y` gets the table's NaN. The archive is the bytes `ColumnTableWriter`
/// (`npy convert --layout columns`) writes with the same options, as `NpyWriteOptions` gives
/// them too; a row archive and a `.npy` of the same statement hold the same values. An option
/// naming no column still fails naming it; `mask` is a column table's refusal, naming the
/// column it was given for.
#[test]
fn per_column_options_with_layout_columns() {
    use npy_datafusion::{NpyDataFrameExt, NpyWriteOptions, TableLayout};
    let dir = TempDir::new("sqlw-percolumn");
    let (ctx, rt) = (ctx1(), rt());
    let query = "SELECT column1 AS x, column2 AS y, CAST(column3 AS DECIMAL(20, 2)) AS d, \
                 column4 AS s FROM (VALUES (1, 0.5, 1.25, 'a'), (NULL, NULL, 2.5, 'bb'), \
                 (3, 1.5, -0.05, 'ccc'))";
    let options = "'nulls' 'nan', 'nulls.x' 'fill=-1', 'decimals.d' 'scaled', \
                   'string_width.s' '5'";
    let cols = dir.join("cols.npz");
    let copied = sql(
        &ctx,
        &rt,
        &format!(
            "COPY ({query}) TO '{}' OPTIONS ('layout' 'columns', {options})",
            cols.display()
        ),
    );
    assert_eq!(copied, [["3"]]);
    let mut a = npy_serde::NpzArchive::open(&cols).unwrap();
    let mut keys: Vec<String> = a.keys().map(str::to_string).collect();
    keys.sort();
    assert_eq!(keys, ["d", "s", "x", "y"]);
    let mut descr = |k: &str| a.header(k).unwrap().header.dtype.descr();
    assert_eq!(
        ["x", "y", "d", "s"].map(&mut descr),
        ["'<i8'", "'<f8'", "'<i8'", "'<U5'"]
    );
    assert_eq!(a.read::<i64>("x").unwrap(), [1, -1, 3]);
    let y = a.read::<f64>("y").unwrap();
    assert!(y[0] == 0.5 && y[1].is_nan() && y[2] == 1.5, "{y:?}");
    assert_eq!(a.read::<i64>("d").unwrap(), [125, 250, -5]);
    let s: Vec<String> = a.deserialize("s").unwrap();
    assert_eq!(s, ["a", "bb", "ccc"]);

    // The bytes of the column table writer with the same options, from the same rows.
    let got = batches(&ctx, &rt, query);
    let want = dir.join("want.npz");
    let mut w = BatchWriterBuilder::new()
        .nulls(npy_arrow::NullPolicy::Nan)
        .nulls_for("x", npy_arrow::NullPolicy::Fill("-1".into()))
        .decimals_for("d", npy_arrow::DecimalPolicy::Scaled)
        .string_width("s", 5)
        .column_table(&want, &got[0].schema())
        .unwrap();
    for b in &got {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(std::fs::read(&cols).unwrap(), std::fs::read(&want).unwrap());

    // The same options through NpyWriteOptions (the DataFrame's write_npy).
    let framed = dir.join("framed.npz");
    let write = NpyWriteOptions::new()
        .layout(TableLayout::Columns)
        .nulls(npy_arrow::NullPolicy::Nan)
        .nulls_for("x", npy_arrow::NullPolicy::Fill("-1".into()))
        .decimals_for("d", npy_arrow::DecimalPolicy::Scaled)
        .string_width_for("s", 5);
    rt.block_on(async {
        let df = ctx.sql(query).await?;
        df.write_npy(framed.to_str().unwrap(), write).await
    })
    .unwrap();
    assert_eq!(
        std::fs::read(&framed).unwrap(),
        std::fs::read(&want).unwrap()
    );

    // A row archive and a .npy of the same statement: the same values, fields of one record
    // (the scaled decimals read back as decimals, from their field's title).
    for name in ["rows.npz", "rows.npy"] {
        let out = dir.join(name);
        sql(
            &ctx,
            &rt,
            &format!("COPY ({query}) TO '{}' OPTIONS ({options})", out.display()),
        );
        let back = ctx1();
        let ddl = format!(
            "CREATE EXTERNAL TABLE b STORED AS {} LOCATION '{}'",
            if name.ends_with("npz") { "NPZ" } else { "NPY" },
            out.display()
        );
        sql(&back, &rt, &ddl);
        assert_eq!(
            sql(&back, &rt, "SELECT x, y, d, s FROM b"),
            [
                ["1", "0.5", "1.25", "a"],
                ["-1", "NaN", "2.50", "bb"],
                ["3", "1.5", "-0.05", "ccc"]
            ],
            "{name}"
        );
    }

    // An option naming no column fails, naming it; mask is refused for the column given it.
    let e = sql_err(
        &ctx,
        &rt,
        &format!(
            "COPY ({query}) TO '{}' OPTIONS ('layout' 'columns', {options}, 'nulls.nope' 'nan')",
            dir.join("bad.npz").display()
        ),
    );
    assert!(
        e.contains("nulls.nope") && e.contains("no column \"nope\""),
        "{e}"
    );
    let e = sql_err(
        &ctx,
        &rt,
        &format!(
            "COPY ({query}) TO '{}' OPTIONS ('layout' 'columns', {options}, 'nulls.y' 'mask')",
            dir.join("bad.npz").display()
        ),
    );
    assert!(
        e.contains("column y") && e.contains("`mask` null policy") && !e.contains("no column"),
        "{e}"
    );
    assert!(!dir.join("bad.npz").exists());
}

/// A bad key or value fails the statement naming the option, what was expected and what was
/// found; so does a per-column option naming no column, and the columns layout for a `.npy`.
#[test]
fn option_errors_are_clear() {
    let dir = TempDir::new("sqlw-errors");
    let (ctx, rt) = (ctx1(), rt());
    let out = dir.join("e.npy");
    let copy = |options: &str| {
        sql_err(
            &ctx,
            &rt,
            &format!(
                "COPY (SELECT 1 AS a, 'x' AS s) TO '{}' OPTIONS ({options})",
                out.display()
            ),
        )
    };
    let e = copy("'nulls' 'zero'");
    assert!(
        e.contains("nulls") && e.contains("\"zero\"") && e.contains("fill=VALUE"),
        "{e}"
    );
    let e = copy("'decimals' 'exact'");
    assert!(e.contains("decimals") && e.contains("\"exact\""), "{e}");
    let e = copy("'string_width' '0'");
    assert!(
        e.contains("string_width") && e.contains("at least 1"),
        "{e}"
    );
    let e = copy("'compression' 'zstd'");
    assert!(
        e.contains("unknown npy option \"compression\"") && e.contains("max_header_size"),
        "{e}"
    );
    let e = copy("'nulls.nope' 'nan'");
    assert!(
        e.contains("nulls.nope") && e.contains("no column \"nope\"") && e.contains("a, s"),
        "{e}"
    );
    let e = copy("'layout' 'columns'");
    assert!(e.contains("layout=columns") && e.contains(".npz"), "{e}");
    let e = copy("'layout' 'diagonal'");
    assert!(e.contains("layout") && e.contains("\"diagonal\""), "{e}");
    // A width for one column (named in any case), then one too narrow for a value.
    sql(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT 1 AS a, 'x' AS s) TO '{}' OPTIONS ('string_width.S' '3')",
            out.display()
        ),
    );
    let bytes = std::fs::read(&out).unwrap();
    let h = npy_serde::header::parse_header(&bytes, &Default::default()).unwrap();
    assert!(
        h.header.dtype.descr().contains("('s', '<U3')"),
        "{}",
        h.header.dtype.descr()
    );
    std::fs::remove_file(&out).unwrap();
    let e = sql_err(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT 'toolong' AS s) TO '{}' OPTIONS ('string_width' '3')",
            out.display()
        ),
    );
    assert!(e.contains("e.npy") && e.contains("string_width"), "{e}");
    assert_eq!(files_under(dir.path()), Vec::<PathBuf>::new());
}

/// A query that fails after rows were written, or a write that fails (a null in a late batch),
/// leaves no file, an existing target as it was, and no directory the statement made.
#[test]
fn failing_statement_leaves_no_file() {
    let dir = TempDir::new("sqlw-fail");
    let ctx = session(
        SessionConfig::new()
            .with_target_partitions(1)
            .with_batch_size(100),
    );
    let rt = rt();
    register_bad_bools(&ctx, &rt, &dir, "bad");
    let src = dir.join("obs.npy");
    write_obs(&src, 1000);
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let before = files_under(dir.path());

    let out = dir.join("out.npy");
    std::fs::write(&out, b"old").unwrap();
    let e = sql_err(
        &ctx,
        &rt,
        &format!("COPY (SELECT * FROM bad) TO '{}'", out.display()),
    );
    assert!(e.contains("bad_bool.npy"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    // The query fails in its ninth batch: eight were written.
    let failing = "SELECT id, CAST(CASE WHEN id < 850 THEN '1' ELSE 'x' END AS INT) AS v \
                   FROM t ORDER BY id";
    let e = sql_err(
        &ctx,
        &rt,
        &format!("COPY ({failing}) TO '{}'", out.display()),
    );
    assert!(e.contains("'x'") || e.contains("Cannot cast"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    // The write fails (a null in a late batch) after rows were written.
    let late_null = "SELECT CASE WHEN id = 950 THEN NULL ELSE id END AS v FROM t ORDER BY id";
    let e = sql_err(
        &ctx,
        &rt,
        &format!("COPY ({late_null}) TO '{}'", out.display()),
    );
    assert!(e.contains("null") && e.contains("out.npy"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    // A directory output the statement would make, and an archive.
    let new_dir = dir.join("made/deeper/");
    let e = sql_err(
        &ctx,
        &rt,
        &format!("COPY ({failing}) TO '{}/' STORED AS NPY", new_dir.display()),
    );
    assert!(e.contains("'x'") || e.contains("Cannot cast"), "{e}");
    assert!(!dir.join("made").exists());
    let npz = dir.join("out.npz");
    for options in ["", "OPTIONS ('layout' 'columns')"] {
        sql_err(
            &ctx,
            &rt,
            &format!("COPY ({late_null}) TO '{}' {options}", npz.display()),
        );
    }
    assert!(!npz.exists());
    std::fs::remove_file(&out).unwrap();
    assert_eq!(files_under(dir.path()), before);
}

/// `COPY TO 'dir/'` writes a directory of files (DataFusion's parallel output), and
/// `PARTITIONED BY` hive-style directories; every row is there once.
#[test]
fn copy_to_directory_and_partitions() {
    let dir = TempDir::new("sqlw-dir");
    let src = dir.join("obs.npy");
    write_obs(&src, 2000);
    let ctx = session(
        SessionConfig::new()
            .with_target_partitions(2)
            .with_batch_size(256)
            .set_usize("datafusion.execution.soft_max_rows_per_output_file", 600),
    );
    let rt = rt();
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let out = dir.join("shards");
    assert_eq!(
        sql(
            &ctx,
            &rt,
            &format!("COPY t TO '{}/' STORED AS NPY", out.display())
        ),
        [["2000"]]
    );
    let files = files_under(&out);
    assert!(files.len() > 1, "{files:?}");
    assert!(
        files.iter().all(|f| f.extension().unwrap() == "npy"),
        "{files:?}"
    );
    let back = ctx1();
    rt.block_on(back.register_npy("b", out.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let q = "SELECT count(*), count(DISTINCT id), sum(x), count(ts) FROM";
    assert_eq!(
        sql(&back, &rt, &format!("{q} b")),
        sql(&ctx, &rt, &format!("{q} t"))
    );

    let parts = dir.join("parts");
    sql(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT id, x, flag FROM t) TO '{}/' STORED AS NPZ PARTITIONED BY (flag) \
             OPTIONS ('layout' 'columns')",
            parts.display()
        ),
    );
    let mut subdirs: Vec<String> = std::fs::read_dir(&parts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    subdirs.sort();
    assert_eq!(subdirs, ["flag=0", "flag=1", "flag=2", "flag=3", "flag=4"]);
    let mut total = 0;
    for f in files_under(&parts) {
        let t = npy_arrow::BatchReaderBuilder::new()
            .open_column_table(&f)
            .unwrap();
        assert_eq!(t.schema_ref().fields().len(), 2, "{}", f.display());
        total += t.num_rows();
    }
    assert_eq!(total, 2000);
}

/// A per-column write option naming a partition column of a `PARTITIONED BY` output (its
/// values are the `COLUMN=value/` directory names, not data in a file) fails the statement
/// saying so, not that there is no such column, before anything is written: for column
/// tables, row archives and `.npy` files, the column named in any case. Kept in the files
/// (`keep_partition_by_columns`), the column takes its option.
#[test]
fn a_per_column_option_on_a_partition_column_says_so() {
    let dir = TempDir::new("sqlw-partition-option");
    let src = dir.join("obs.npy");
    write_obs(&src, 40);
    let (ctx, rt) = (ctx1(), rt());
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let parts = dir.join("parts");
    for (stored, options) in [
        ("NPZ", "'layout' 'columns', 'nulls.flag' 'fill=0'"),
        ("NPZ", "'layout' 'columns', 'decimals.FLAG' 'f8'"),
        ("NPZ", "'string_width.flag' '4'"),
        ("NPY", "'nulls.flag' 'nan'"),
    ] {
        let e = sql_err(
            &ctx,
            &rt,
            &format!(
                "COPY (SELECT id, x, flag FROM t) TO '{}/' STORED AS {stored} \
                 PARTITIONED BY (flag) OPTIONS ({options})",
                parts.display()
            ),
        );
        assert!(
            e.contains("flag is a partition column")
                && e.contains("flag=VALUE/")
                && e.contains("no per-column option")
                && e.contains("id, x")
                && !e.contains("no column"),
            "{stored} {options}: {e}"
        );
        assert!(!parts.exists(), "{stored} {options}");
    }
    // A column neither in the files nor a partition column is still no column.
    let e = sql_err(
        &ctx,
        &rt,
        &format!(
            "COPY (SELECT id, x, flag FROM t) TO '{}/' STORED AS NPZ PARTITIONED BY (flag) \
             OPTIONS ('layout' 'columns', 'nulls.nope' 'nan')",
            parts.display()
        ),
    );
    assert!(e.contains("no column \"nope\""), "{e}");
    assert!(!parts.exists());

    // Kept in the files, the partition column is a column like the others.
    let keep = session(
        SessionConfig::new()
            .with_target_partitions(1)
            .set_bool("datafusion.execution.keep_partition_by_columns", true),
    );
    rt.block_on(keep.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    sql(
        &keep,
        &rt,
        &format!(
            "COPY (SELECT id, x, flag FROM t) TO '{}/' STORED AS NPZ PARTITIONED BY (flag) \
             OPTIONS ('layout' 'columns', 'nulls.flag' 'fill=0')",
            parts.display()
        ),
    );
    let files = files_under(&parts);
    assert!(!files.is_empty());
    for f in files {
        let t = npy_arrow::BatchReaderBuilder::new()
            .open_column_table(&f)
            .unwrap();
        let names: Vec<&str> = (t.schema_ref().fields().iter())
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["id", "x", "flag"], "{}", f.display());
    }
}

/// `INSERT INTO` a `STORED AS NPY` directory table (created with write options) adds a file
/// beside its shards; the table reads the new rows back.
#[test]
fn insert_into_appends() {
    let dir = TempDir::new("sqlw-insert");
    let table = dir.join("table");
    std::fs::create_dir_all(&table).unwrap();
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Row {
        id: i64,
        x: f64,
    }
    let first: Vec<Row> = (0..10).map(|i| Row { id: i, x: i as f64 }).collect();
    npy_serde::to_path(table.join("first.npy"), &first).unwrap();
    let (ctx, rt) = (ctx1(), rt());
    sql(
        &ctx,
        &rt,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}/' OPTIONS ('nulls' 'nan')",
            table.display()
        ),
    );
    assert_eq!(
        sql(
            &ctx,
            &rt,
            "INSERT INTO t VALUES (100, 0.5), (101, 1.5), (102, 2.5)"
        ),
        [["3"]]
    );
    assert_eq!(
        sql(
            &ctx,
            &rt,
            "INSERT INTO t SELECT id + 1000, x FROM t WHERE id < 3"
        ),
        [["3"]]
    );
    let files = files_under(&table);
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(
        files.iter().all(|f| f.extension().unwrap() == "npy"),
        "{files:?}"
    );
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*), sum(id), count(x) FROM t"),
        [["16", &(45 + 303 + 3003).to_string(), "16"]]
    );
    assert_eq!(sql(&ctx, &rt, "SELECT x FROM t WHERE id = 101"), [["1.5"]]);
    // A fresh session reads the directory the same.
    let back = ctx1();
    rt.block_on(back.register_npy("b", table.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    assert_eq!(
        rows(&batches(&back, &rt, "SELECT count(*) FROM b")),
        [["16"]]
    );
    // An overwrite is refused, saying what is written.
    let e = sql_err(&ctx, &rt, "INSERT OVERWRITE t VALUES (1, 1.0)");
    assert!(e.contains("only appends"), "{e}");
}

/// `DataFrame::write_npy` (npy-datafusion's `NpyDataFrameExt`) writes what `COPY TO` writes.
#[test]
fn dataframe_write_npy_is_copy_to() {
    use npy_datafusion::{NpyDataFrameExt, NpyWriteOptions, TableLayout};
    let dir = TempDir::new("sqlw-frame");
    let src = dir.join("obs.npy");
    write_obs(&src, 200);
    let (ctx, rt) = (ctx1(), rt());
    rt.block_on(ctx.register_npy("t", src.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    for (name, options, sql_options) in [
        ("a.npy", NpyWriteOptions::new(), ""),
        (
            "b.npz",
            NpyWriteOptions::new().layout(TableLayout::Columns),
            "OPTIONS ('layout' 'columns')",
        ),
    ] {
        let framed = dir.join(format!("framed_{name}"));
        let df = rt
            .block_on(ctx.sql("SELECT id, x, ts FROM t ORDER BY id"))
            .unwrap();
        rt.block_on(df.write_npy(framed.to_str().unwrap(), options))
            .unwrap();
        let copied = dir.join(format!("copied_{name}"));
        sql(
            &ctx,
            &rt,
            &format!(
                "COPY (SELECT id, x, ts FROM t ORDER BY id) TO '{}' {sql_options}",
                copied.display()
            ),
        );
        assert_eq!(
            std::fs::read(&framed).unwrap(),
            std::fs::read(&copied).unwrap(),
            "{name}"
        );
    }
}
