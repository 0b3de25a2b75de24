//! SQL over Parquet, Arrow IPC and CSV files beside `.npy` ones (`register_spec`; npy-serde's
//! `datafusion` and `parquet` features): the same rows in every format give the same answers,
//! one query joins all four, a directory is one format by its files' extension (or named when
//! they differ), and CSV tables take their header and delimiter from the spec.

use std::fs::File;
use std::path::Path;

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{NpySessionExt, TableFormat, TableSpec};
use npy_serde::NpyRecord;
use npy_serde_tests::sql::{rt, session, split_small_files, sql};
use npy_serde_tests::TempDir;
use serde::Serialize;
use tokio::runtime::Runtime;

#[derive(Serialize, NpyRecord, Clone, Debug)]
struct Rec {
    id: i64,
    flag: u8,
    x: f64,
    #[npy(dtype = "<U3")]
    name: String,
}

fn rec(i: i64) -> Rec {
    Rec {
        id: i,
        flag: (i % 4) as u8,
        x: (i % 17) as f64 * 0.5 - 3.0,
        name: format!("n{}", i % 7),
    }
}

fn new_ctx() -> SessionContext {
    session(split_small_files(
        SessionConfig::new().with_target_partitions(3),
    ))
}

/// Registers the table of `spec` as `name`.
fn register(ctx: &SessionContext, rt: &Runtime, name: &str, spec: &str) {
    let spec: TableSpec = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
    rt.block_on(ctx.register_spec(name, &spec))
        .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
}

/// The message `spec` fails to register with.
fn register_err(ctx: &SessionContext, rt: &Runtime, spec: &str) -> String {
    let spec: TableSpec = spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"));
    match rt.block_on(ctx.register_spec("bad", &spec)) {
        Ok(()) => panic!("{spec:?} registers"),
        Err(e) => e.to_string(),
    }
}

/// The batches of `query`.
fn batches(ctx: &SessionContext, rt: &Runtime, query: &str) -> Vec<RecordBatch> {
    rt.block_on(async { ctx.sql(query).await?.collect().await })
        .unwrap_or_else(|e| panic!("{query}: {e}"))
}

/// Writes `batches` to `path` as Parquet, an Arrow IPC file or CSV (with a header), by the
/// path's extension, with arrow-rs's writers.
fn write(path: &Path, batches: &[RecordBatch]) {
    let schema = batches[0].schema();
    let file = File::create(path).unwrap();
    match TableFormat::of_file(path.to_str().unwrap()) {
        Some(TableFormat::Parquet) => {
            let mut w =
                datafusion::parquet::arrow::ArrowWriter::try_new(file, schema, None).unwrap();
            for b in batches {
                w.write(b).unwrap();
            }
            w.close().unwrap();
        }
        Some(TableFormat::Arrow) => {
            let mut w = datafusion::arrow::ipc::writer::FileWriter::try_new(file, &schema).unwrap();
            for b in batches {
                w.write(b).unwrap();
            }
            w.finish().unwrap();
        }
        Some(TableFormat::Csv) => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(file);
            for b in batches {
                w.write(b).unwrap();
            }
        }
        other => panic!("{}: not a format written here ({other:?})", path.display()),
    }
}

/// `t.npy` of 1000 records in `dir`, and its rows written as `t.parquet`, `t.arrow`,
/// `t.feather` and `t.csv`.
fn tables(dir: &TempDir, rt: &Runtime) {
    let recs: Vec<Rec> = (0..1000).map(rec).collect();
    npy_serde::to_path(dir.join("t.npy"), &recs).unwrap();
    let ctx = new_ctx();
    register(&ctx, rt, "t", dir.join("t.npy").to_str().unwrap());
    let all = batches(&ctx, rt, "SELECT * FROM t ORDER BY id");
    for name in ["t.parquet", "t.arrow", "t.feather", "t.csv"] {
        write(&dir.join(name), &all);
    }
}

const QUERIES: [&str; 4] = [
    "SELECT flag, count(*), sum(id), sum(x), min(name), max(name) FROM t GROUP BY flag \
     ORDER BY flag",
    "SELECT count(*), avg(x) FROM t WHERE x > 1 AND name <> 'n3'",
    "SELECT id, x, name FROM t ORDER BY x DESC, id LIMIT 4",
    "SELECT count(*) FROM (SELECT id FROM t LIMIT 17)",
];

#[test]
fn every_format_gives_the_answers_of_the_npy_file() {
    let dir = TempDir::new("sql-formats-same");
    let rt = rt();
    tables(&dir, &rt);
    let answers = |spec: &str| -> Vec<Vec<Vec<String>>> {
        let ctx = new_ctx();
        register(&ctx, &rt, "t", spec);
        QUERIES.iter().map(|q| sql(&ctx, &rt, q)).collect()
    };
    let want = answers(dir.join("t.npy").to_str().unwrap());
    assert_eq!(want[0].len(), 4);
    assert_eq!(want[3], [["17"]]);
    let d = dir.path().display();
    for spec in [
        format!("{d}/t.parquet"),
        format!("{d}/t.arrow"),
        format!("{d}/t.feather"),
        format!("{d}/t.csv"),
        format!("parquet({d}/t.parquet)"),
        format!("csv({d}/t.csv, header=true, delimiter=',')"),
        format!("{d}/*.parquet"),
    ] {
        assert_eq!(answers(&spec), want, "{spec}");
    }
}

#[test]
fn one_query_joins_npy_parquet_arrow_and_csv_tables() {
    let dir = TempDir::new("sql-formats-join");
    let rt = rt();
    tables(&dir, &rt);
    let ctx = new_ctx();
    for (name, file) in [
        ("n", "t.npy"),
        ("p", "t.parquet"),
        ("a", "t.arrow"),
        ("c", "t.csv"),
    ] {
        register(&ctx, &rt, name, dir.join(file).to_str().unwrap());
    }
    let got = sql(
        &ctx,
        &rt,
        "SELECT count(*), sum(n.x + p.x + a.x + c.x), count(DISTINCT c.name) FROM n \
         JOIN p ON p.id = n.id JOIN a ON a.id = n.id AND a.name = p.name \
         JOIN c ON c.id = n.id AND c.flag = n.flag WHERE n.flag < 3",
    );
    let sel: Vec<Rec> = (0..1000).map(rec).filter(|r| r.flag < 3).collect();
    let sum: f64 = sel.iter().map(|r| 4.0 * r.x).sum();
    assert_eq!(
        got,
        [[sel.len().to_string(), format!("{sum:.1}"), "7".to_string()]]
    );
    // The same through SQL's own DDL for the built-in formats, beside STORED AS NPY.
    let create = format!(
        "CREATE EXTERNAL TABLE q STORED AS PARQUET LOCATION '{}'",
        dir.join("t.parquet").display()
    );
    sql(&ctx, &rt, &create);
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*) FROM q JOIN n USING (id)"),
        [["1000"]]
    );
}

#[test]
fn a_directory_is_one_format_by_its_files_extension() {
    let dir = TempDir::new("sql-formats-dirs");
    let rt = rt();
    tables(&dir, &rt);
    let ctx = new_ctx();
    register(&ctx, &rt, "t", dir.join("t.npy").to_str().unwrap());
    let low = batches(&ctx, &rt, "SELECT * FROM t WHERE id < 600 ORDER BY id");
    let high = batches(&ctx, &rt, "SELECT * FROM t WHERE id >= 600 ORDER BY id");
    let shards = |sub: &str, ext: &str| -> String {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        write(&d.join(format!("s0.{ext}")), &low);
        write(&d.join(format!("s1.{ext}")), &high);
        // Files of no known extension are neither read nor in the way.
        std::fs::write(d.join("README.txt"), "shards").unwrap();
        d.to_str().unwrap().to_string()
    };
    let count = "SELECT count(*), sum(id) FROM s";
    for (sub, ext) in [("pq", "parquet"), ("ipc", "feather"), ("csv", "csv")] {
        let location = shards(sub, ext);
        let ctx = new_ctx();
        register(&ctx, &rt, "s", &location);
        assert_eq!(sql(&ctx, &rt, count), [["1000", "499500"]], "{location}");
        let ctx = new_ctx();
        register(&ctx, &rt, "s", &format!("{location}/s*"));
        assert_eq!(sql(&ctx, &rt, count), [["1000", "499500"]], "{location}/s*");
    }

    // Two formats in one directory: name the one the table reads.
    let mixed = shards("pq", "parquet");
    npy_serde::to_path(
        dir.join("pq").join("extra.npy"),
        &(0..5).map(rec).collect::<Vec<_>>(),
    )
    .unwrap();
    let err = register_err(&ctx, &rt, &mixed);
    assert!(
        err.contains(&mixed) && err.contains(".npy, .parquet") && err.contains("FORMAT("),
        "{err}"
    );
    let ctx = new_ctx();
    register(&ctx, &rt, "s", &format!("parquet({mixed})"));
    assert_eq!(sql(&ctx, &rt, count), [["1000", "499500"]]);
    register(&ctx, &rt, "n", &format!("npy({mixed})"));
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*), sum(id) FROM n"),
        [["5", "10"]]
    );

    // A directory of archives is an npz table, which names its member.
    let npz = dir.join("npz");
    std::fs::create_dir_all(&npz).unwrap();
    let mut w = npy_serde::npz::NpzWriter::new(File::create(npz.join("a.npz")).unwrap());
    w.add("x", &[1i64, 2]).unwrap();
    w.finish().unwrap();
    let err = register_err(&ctx, &rt, npz.to_str().unwrap());
    assert!(err.contains("name the member it reads"), "{err}");
    register(&ctx, &rt, "z", &format!("npz({}, member=x)", npz.display()));
    assert_eq!(sql(&ctx, &rt, "SELECT sum(value) FROM z"), [["3"]]);
}

#[test]
fn csv_tables_take_header_and_delimiter_from_the_spec() {
    let dir = TempDir::new("sql-formats-csv");
    let rt = rt();
    let tsv = dir.join("t.tsv");
    std::fs::write(&tsv, "1\tx\n2\ty\n3\tz\n").unwrap();
    let semi = dir.join("s.csv");
    std::fs::write(&semi, "a;b\n1;x\n2;y\n").unwrap();
    let ctx = new_ctx();
    register(
        &ctx,
        &rt,
        "t",
        &format!("csv({}, header=false, delimiter=\\t)", tsv.display()),
    );
    assert_eq!(
        sql(&ctx, &rt, "SELECT sum(column_1), max(column_2) FROM t"),
        [["6", "z"]]
    );
    register(
        &ctx,
        &rt,
        "s",
        &format!("csv({}, delimiter=;)", semi.display()),
    );
    assert_eq!(sql(&ctx, &rt, "SELECT sum(a), min(b) FROM s"), [["3", "x"]]);
    // A directory of .tsv files is read with their extension named.
    register(
        &ctx,
        &rt,
        "d",
        &format!(
            "csv({}, header=false, delimiter=tab, file_extension=.tsv)",
            dir.path().display()
        ),
    );
    assert_eq!(sql(&ctx, &rt, "SELECT count(*) FROM d"), [["3"]]);
    // A bad file is DataFusion's error, naming it.
    let bad = dir.join("bad.parquet");
    std::fs::write(&bad, b"not parquet at all").unwrap();
    let err = register_err(&ctx, &rt, bad.to_str().unwrap());
    assert!(err.to_lowercase().contains("parquet"), "{err}");
}

/// On a Ballista cluster a Parquet or CSV table goes through Ballista's own codecs (the
/// `.npy` codec hands every other table and scan to them): one query joins them with an
/// `.npy` table, with the answer of a single process.
#[cfg(feature = "ballista")]
#[test]
fn a_ballista_cluster_joins_parquet_and_csv_tables_with_npy_ones() {
    use npy_datafusion::ballista::{session_config, standalone};
    let dir = TempDir::new("sql-formats-ballista");
    let rt = rt();
    tables(&dir, &rt);
    let config = split_small_files(session_config().with_target_partitions(4));
    let cluster = rt
        .block_on(standalone(config, 2))
        .expect("a standalone Ballista cluster");
    let local = new_ctx();
    for ctx in [&cluster, &local] {
        for (name, file) in [("n", "t.npy"), ("p", "t.parquet"), ("c", "t.csv")] {
            register(ctx, &rt, name, dir.join(file).to_str().unwrap());
        }
    }
    let query = "SELECT n.flag, count(*), sum(p.x), max(c.name) FROM n \
                 JOIN p ON p.id = n.id JOIN c ON c.id = n.id WHERE n.x > 0 \
                 GROUP BY n.flag ORDER BY n.flag";
    let want = sql(&local, &rt, query);
    assert_eq!(want.len(), 4);
    assert_eq!(sql(&cluster, &rt, query), want);
}
