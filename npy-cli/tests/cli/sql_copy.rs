//! `npy sql` writing (features `datafusion` and `parquet`): `COPY (query) TO 'x.npy' | 'x.npz'`
//! gives the bytes `npy convert` writes for the same table with the same options (rows,
//! an archive member, the columns layout, null policies), `INSERT INTO` a `STORED AS NPY`
//! directory table adds to it, and a failing statement or a bad option exits with a message
//! and leaves no file.

use crate::harness::{npy, npy_ok, Dir};

#[derive(serde::Serialize, npy_serde::NpyRecord)]
struct Rec {
    id: i64,
    flag: u8,
    x: f64,
    #[npy(dtype = "<U6")]
    name: String,
}

/// `in.npy` (records id, flag, x, name) and the same table as `in.arrow`, converted by the
/// tool.
fn table(d: &Dir, n: i64) -> String {
    let recs: Vec<Rec> = (0..n)
        .map(|i| Rec {
            id: i,
            flag: (i % 3) as u8,
            x: i as f64 * 0.25,
            name: format!("r{}", i % 97),
        })
        .collect();
    npy_serde::to_path(d.file("in.npy"), &recs).unwrap();
    npy_ok(["convert", &d.join("in.npy"), &d.join("in.arrow")]);
    d.join("in.arrow")
}

/// Bytes of the file `name` in `d`.
fn bytes(d: &Dir, name: &str) -> Vec<u8> {
    std::fs::read(d.file(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn copy_writes_what_convert_writes() {
    let d = Dir::new("copy-convert");
    let arrow = table(&d, 1000);
    let t = format!("t={arrow}");
    let copy = |query: &str, out: &str, options: &str| {
        let sql = format!("COPY ({query}) TO '{}' {options}", d.join(out));
        npy_ok(["sql", &sql, "-t", &t])
    };
    // Rows: a .npy file.
    let printed = copy("SELECT * FROM t", "copy.npy", "");
    assert!(printed.contains("| 1000  |"), "{printed}");
    npy_ok(["convert", &arrow, &d.join("conv.npy")]);
    assert_eq!(bytes(&d, "copy.npy"), bytes(&d, "conv.npy"));
    assert_eq!(bytes(&d, "copy.npy"), bytes(&d, "in.npy"));

    // An archive of one member (convert names it by the input's stem).
    copy("SELECT * FROM t", "copy.npz", "OPTIONS ('member' 'in')");
    npy_ok(["convert", &arrow, &d.join("conv.npz")]);
    assert_eq!(bytes(&d, "copy.npz"), bytes(&d, "conv.npz"));

    // The columns layout.
    copy(
        "SELECT * FROM t",
        "cols.npz",
        "OPTIONS ('layout' 'columns')",
    );
    npy_ok([
        "convert",
        &arrow,
        &d.join("conv_cols.npz"),
        "--layout",
        "columns",
    ]);
    assert_eq!(bytes(&d, "cols.npz"), bytes(&d, "conv_cols.npz"));
    // Which `npy sql` reads as a column table.
    let sum = npy_ok([
        "sql",
        "SELECT count(*) AS n, sum(id) AS s FROM c",
        "-t",
        &format!("c=npz({}, layout=columns)", d.join("cols.npz")),
        "--csv",
    ]);
    assert_eq!(sum, "n,s\n1000,499500\n");

    // Nulls: a table with some, written with the same policy both ways.
    npy_ok([
        "sql",
        "SELECT id, CASE WHEN id % 7 = 0 THEN NULL ELSE x END AS x, \
         CASE WHEN id % 5 = 0 THEN NULL ELSE id END AS k FROM t ORDER BY id",
        "-t",
        &t,
        "-o",
        &d.join("nulls.arrow"),
    ]);
    let n = format!("n={}", d.join("nulls.arrow"));
    let sql = format!(
        "COPY (SELECT * FROM n) TO '{}' OPTIONS ('nulls' 'nan', 'nulls.k' 'fill=-1')",
        d.join("copy_nulls.npy")
    );
    npy_ok(["sql", &sql, "-t", &n]);
    npy_ok([
        "convert",
        &d.join("nulls.arrow"),
        &d.join("conv_nulls.npy"),
        "--nulls",
        "nan",
        "--nulls",
        "k:fill=-1",
    ]);
    assert_eq!(bytes(&d, "copy_nulls.npy"), bytes(&d, "conv_nulls.npy"));
}

#[test]
fn insert_into_a_directory_table() {
    let d = Dir::new("copy-insert");
    table(&d, 10);
    let shards = d.file("shards");
    std::fs::create_dir_all(&shards).unwrap();
    std::fs::copy(d.file("in.npy"), shards.join("first.npy")).unwrap();
    let script = format!(
        "CREATE EXTERNAL TABLE s STORED AS NPY LOCATION '{}/';\n\
         INSERT INTO s SELECT id + 100, flag, x, name FROM s WHERE id < 4;\n\
         SELECT count(*) AS n, sum(id) AS total FROM s;",
        shards.display()
    );
    let out = npy_ok(["sql", &script, "--csv"]);
    // The INSERT's count, then the query's.
    assert!(out.ends_with("n,total\n14,451\n"), "{out}");
    let files = std::fs::read_dir(&shards).unwrap().count();
    assert_eq!(files, 2);
}

#[test]
fn failing_copy_exits_with_a_message_and_leaves_no_file() {
    let d = Dir::new("copy-fail");
    let arrow = table(&d, 300);
    let t = format!("t={arrow}");
    let out = d.join("out.npy");
    let run = |sql: &str| {
        let o = npy(["sql", sql, "-t", &t]);
        assert!(!o.status.success(), "{sql} succeeded");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = run(&format!(
        "COPY (SELECT CAST(CASE WHEN id < 250 THEN '1' ELSE 'x' END AS INT) AS v FROM t) \
         TO '{out}'"
    ));
    assert!(e.contains("Cannot cast") || e.contains("'x'"), "{e}");
    let e = run(&format!(
        "COPY (SELECT CASE WHEN id = 299 THEN NULL ELSE id END AS v FROM t) TO '{out}'"
    ));
    assert!(e.contains("null") && e.contains("out.npy"), "{e}");
    let e = run(&format!(
        "COPY (SELECT id FROM t) TO '{out}' OPTIONS ('nulls' 'zero')"
    ));
    assert!(e.contains("nulls") && e.contains("\"zero\""), "{e}");
    let e = run(&format!(
        "COPY (SELECT id FROM t) TO '{out}' OPTIONS ('layout' 'columns')"
    ));
    assert!(e.contains("layout=columns") && e.contains(".npz"), "{e}");
    let mut left: Vec<String> = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["in.arrow", "in.npy"]);
}
