//! `npy sql` (features `datafusion` and `parquet`), run as the real binary: tables named
//! by stem and by `-t`, directories and globs, the three stdout formats, `-o` to `.npy` and
//! `.parquet` (checked with NumPy and pyarrow when `NPY_PYTHON` is set), and clear errors for
//! bad files and bad queries.

use std::process::Command;

use npy_serde_tests::live_python;

use crate::harness::{npy, npy_ok, Dir};

#[derive(serde::Serialize, npy_serde::NpyRecord)]
struct Rec {
    id: i64,
    flag: u8,
    x: f64,
}

/// Shards `s0.npy`.. of a record array (id i8, flag u1, x f8), ids 0..total.
fn shards(dir: &Dir, sizes: &[i64]) {
    let mut next = 0;
    for (k, &n) in sizes.iter().enumerate() {
        let recs: Vec<Rec> = (next..next + n)
            .map(|i| Rec {
                id: i,
                flag: (i % 3) as u8,
                x: i as f64 * 0.5,
            })
            .collect();
        next += n;
        npy_serde::to_path(dir.join(&format!("s{k}.npy")), &recs).unwrap();
    }
}

#[test]
fn tables_by_stem_and_by_name_in_every_output_format() {
    let d = Dir::new("formats");
    shards(&d, &[10, 5, 0, 7]);
    let text = npy_ok([
        "sql",
        "SELECT flag, count(*) AS n, sum(id) AS s FROM t GROUP BY flag ORDER BY flag",
        "-t",
        &format!("t={}", d.0.display()),
    ]);
    // ids 0..22: flag 0 has 0,3,..,21 (8 ids, sum 84); 1: 1..19 (7, 70); 2: 2..20 (7, 77).
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "| flag | n | s  |", "{text}");
    assert_eq!(lines[3], "| 0    | 8 | 84 |", "{text}");
    assert_eq!(lines[5], "| 2    | 7 | 77 |", "{text}");

    let csv = npy_ok([
        "sql",
        "SELECT id, x FROM s0 WHERE id < 3 ORDER BY id",
        &d.join("s0.npy"),
        "--csv",
    ]);
    assert_eq!(csv, "id,x\n0,0.0\n1,0.5\n2,1.0\n");

    let glob = format!("t={}/s[01].npy", d.0.display());
    let json = npy_ok([
        "sql",
        "SELECT max(id) AS m, count(*) AS n FROM t",
        "-t",
        &glob,
        "--json",
    ]);
    assert_eq!(json, "[\n  {\"m\": 14, \"n\": 15}\n]\n");

    // The tool's JSON conventions (`cat --json`): floats as the shortest round-trip text,
    // non-finite ones as strings, NULL as null; no rows is `[]`.
    let json = npy_ok([
        "sql",
        "SELECT id, x / (id - 1) AS r, CASE WHEN id = 2 THEN NULL ELSE x END AS x FROM s0 \
         WHERE id < 3 ORDER BY id",
        &d.join("s0.npy"),
        "--json",
    ]);
    assert_eq!(
        json,
        "[\n  {\"id\": 0, \"r\": -0.0, \"x\": 0.0},\n  {\"id\": 1, \"r\": \"inf\", \"x\": 0.5},\
         \n  {\"id\": 2, \"r\": 1.0, \"x\": null}\n]\n"
    );
    let empty = npy_ok([
        "sql",
        "SELECT id FROM s0 WHERE id < 0",
        &d.join("s0.npy"),
        "--json",
    ]);
    assert_eq!(empty, "[]\n");
}

#[test]
fn query_results_to_npy_and_parquet_files() {
    let d = Dir::new("out");
    shards(&d, &[100, 50]);
    let out = d.join("res.npy");
    npy_ok([
        "sql",
        "SELECT id, x FROM t WHERE flag = 1 ORDER BY id",
        "-t",
        &format!("t={}", d.0.display()),
        "-o",
        &out,
    ]);
    let back: Vec<(i64, f64)> = npy_serde::from_path_serde(&out).unwrap();
    let want: Vec<(i64, f64)> = (0..150)
        .filter(|i| i % 3 == 1)
        .map(|i| (i, i as f64 * 0.5))
        .collect();
    assert_eq!(back, want);
    let pq = d.join("res.parquet");
    npy_ok([
        "sql",
        "SELECT * FROM s1",
        &d.join("s1.npy"),
        "-o",
        &pq,
        "--compression",
        "zstd",
    ]);
    let again = d.join("again.npy");
    npy_ok(["convert", &pq, &again]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(d.join("s1.npy")).unwrap()
    );
    if let Some(py) = live_python() {
        let check = Command::new(py)
            .args([
                "-c",
                "import sys, numpy as np, pyarrow.parquet as pq\n\
                 a = np.load(sys.argv[1]); t = pq.read_table(sys.argv[2])\n\
                 assert a.dtype.names == ('id', 'x') and (a['id'] % 3 == 1).all() and len(a) == 50\n\
                 assert t.num_rows == 50 and t.column('id').to_pylist() == list(range(100, 150))\n\
                 print('ok')",
                &out,
                &pq,
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&check.stdout).trim(),
            "ok",
            "{check:?}"
        );
    }
}

#[test]
fn bad_files_and_bad_queries_are_clear_errors() {
    let d = Dir::new("errors");
    shards(&d, &[40]);
    let good = std::fs::read(d.join("s0.npy")).unwrap();
    std::fs::write(d.join("cut.npy"), &good[..good.len() - 5]).unwrap();
    let out = npy(["sql", "SELECT sum(id) FROM cut", &d.join("cut.npy")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.npy") && err.contains("end of input"),
        "{err}"
    );

    let out = npy(["sql", "SELECT nope FROM s0", &d.join("s0.npy")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));

    let out = npy(["sql", "SELECT 1", "-t", "no-equals-sign"]);
    assert_eq!(out.status.code(), Some(2));
    let out = npy([
        "sql",
        "SELECT * FROM s0",
        &d.join("s0.npy"),
        "-o",
        &d.join("x.txt"),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_file_cut_short_after_its_header_fails_even_count_star() {
    // 50000 records of 16 bytes: 800128 bytes, of which 5000 are left.
    let d = Dir::new("cut-short");
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Row {
        id: i64,
        x: f64,
    }
    let recs: Vec<Row> = (0..50_000).map(|i| Row { id: i, x: i as f64 }).collect();
    npy_serde::to_path(d.file("s0.npy"), &recs).unwrap();
    let whole = std::fs::read(d.join("s0.npy")).unwrap();
    assert_eq!(whole.len(), 800_128);
    std::fs::write(d.join("t.npy"), &whole[..5000]).unwrap();
    for query in [
        "SELECT count(*) FROM t",
        "SELECT min(id), max(x) FROM t",
        "SELECT * FROM t LIMIT 1",
        "SELECT sum(x) FROM t",
    ] {
        let out = npy(["sql", query, &d.join("t.npy")]);
        assert_eq!(out.status.code(), Some(1), "{query}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("t.npy")
                && err.contains("needed 800128 bytes for the array data, found 5000"),
            "{query}: {err}"
        );
    }
    assert_eq!(
        npy_ok([
            "sql",
            "SELECT count(*) AS n FROM s0",
            &d.join("s0.npy"),
            "--csv"
        ]),
        "n\n50000\n"
    );
}

#[test]
fn parquet_arrow_and_csv_files_are_tables_beside_npy_ones() {
    let d = Dir::new("other-formats");
    shards(&d, &[30, 20]);
    for ext in ["parquet", "arrow", "csv"] {
        npy_ok(["convert", &d.join("s0.npy"), &d.join(&format!("s0.{ext}"))]);
    }
    // One query joins the four formats; a FILE's table is named by its stem.
    let text = npy_ok([
        "sql",
        "SELECT count(*) AS n, sum(p.x + a.x + c.x) AS s FROM s0 \
         JOIN p ON p.id = s0.id JOIN a ON a.id = s0.id JOIN c ON c.id = s0.id \
         WHERE s0.flag = 1",
        &d.join("s0.npy"),
        "-t",
        &format!("p={}", d.join("s0.parquet")),
        "-t",
        &format!("a={}", d.join("s0.arrow")),
        "-t",
        &format!("c=csv({}, header=true)", d.join("s0.csv")),
        "--csv",
    ]);
    // flag 1: ids 1, 4, .., 28 (10 ids, sum 145); x = id / 2, three times.
    assert_eq!(text, "n,s\n10,217.5\n");

    // A Parquet FILE through SQL into a .npy file, a column cast on the way.
    let out = d.join("cast.npy");
    npy_ok([
        "sql",
        "SELECT id, CAST(x AS REAL) AS x FROM s0 ORDER BY id",
        &d.join("s0.parquet"),
        "-o",
        &out,
    ]);
    let back: Vec<(i64, f32)> = npy_serde::from_path_serde(&out).unwrap();
    let want: Vec<(i64, f32)> = (0..30).map(|i| (i, i as f32 * 0.5)).collect();
    assert_eq!(back, want);

    // A directory of Parquet shards is a Parquet table by its files' extension.
    let pq = Dir::new("other-formats-dir");
    for k in 0..2 {
        npy_ok([
            "convert",
            &d.join(&format!("s{k}.npy")),
            &pq.join(&format!("s{k}.parquet")),
        ]);
    }
    let text = npy_ok([
        "sql",
        "SELECT count(*) AS n, max(id) AS m FROM t",
        "-t",
        &format!("t={}", pq.0.display()),
        "--csv",
    ]);
    assert_eq!(text, "n,m\n50,49\n");
    // Beside an .npy file it is two formats: the message says how to name one.
    npy_serde::to_path(pq.join("x.npy"), &[1i64]).unwrap();
    let out = npy([
        "sql",
        "SELECT 1 FROM t",
        "-t",
        &format!("t={}", pq.0.display()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".npy, .parquet") && err.contains("FORMAT("),
        "{err}"
    );
    let text = npy_ok([
        "sql",
        "SELECT count(*) AS n FROM t",
        "-t",
        &format!("t=parquet({})", pq.0.display()),
        "--csv",
    ]);
    assert_eq!(text, "n\n50\n");
    // The help names the formats and their options.
    let help = npy_ok(["sql", "--help"]);
    assert!(
        help.contains("csv(LOCATION, header=true|false, delimiter=CHAR"),
        "{help}"
    );
}

#[test]
fn several_statements_run_in_order_from_the_argument_a_file_or_stdin() {
    let d = Dir::new("statements");
    shards(&d, &[10]);
    let s0 = d.join("s0.npy");
    // A view the first statement creates, queried by the next two; DROP VIEW prints nothing.
    let sql = "CREATE VIEW odd AS SELECT id FROM s0 WHERE id % 2 = 1;\n\
               SELECT count(*) AS n FROM odd;\n\
               SELECT max(id) AS m FROM odd;\n\
               DROP VIEW odd;";
    let csv = npy_ok(["sql", sql, &s0, "--csv"]);
    assert_eq!(csv, "n\n5\n\nm\n9\n");
    let json = npy_ok(["sql", sql, &s0, "--json"]);
    assert_eq!(json, "[\n  {\"n\": 5}\n]\n[\n  {\"m\": 9}\n]\n");
    // -f FILE: every positional argument is a FILE.
    let file = d.join("q.sql");
    std::fs::write(&file, sql).unwrap();
    assert_eq!(npy_ok(["sql", "-f", &file, &s0, "--csv"]), csv);
    // - reads standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_npy"))
        .args(["sql", "-", &s0, "--csv"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sql.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), csv);

    // -o takes the one statement that returns rows.
    let out = d.join("odd.npy");
    let one = "CREATE VIEW odd AS SELECT id FROM s0 WHERE id % 2 = 1; \
               SELECT id FROM odd ORDER BY id; DROP VIEW odd";
    npy_ok(["sql", one, &s0, "-o", &out]);
    let back: Vec<(i64,)> = npy_serde::from_path_serde(&out).unwrap();
    assert_eq!(back, [(1,), (3,), (5,), (7,), (9,)]);
    let two = npy(["sql", sql, &s0, "-o", &out]);
    assert_eq!(two.status.code(), Some(2));
    let err = String::from_utf8_lossy(&two.stderr);
    assert!(
        err.contains("takes the result of one statement: statements 2 and 3"),
        "{err}"
    );
    // An error names its statement.
    let bad = npy(["sql", "SELECT 1; SELECT nope FROM s0", &s0]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("statement 2 of 2:") && err.contains("nope"),
        "{err}"
    );
    let none = npy(["sql", " ; ", &s0]);
    assert_eq!(none.status.code(), Some(2), "{none:?}");
}

/// `--timing` prints each statement's rows and time on stderr, in order, and leaves stdout as
/// it is; `-o` counts the rows it writes.
#[test]
fn timing_prints_each_statements_rows_and_time_on_stderr() {
    let d = Dir::new("timing");
    shards(&d, &[10]);
    let s0 = d.join("s0.npy");
    let sql = "CREATE VIEW odd AS SELECT id FROM s0 WHERE id % 2 = 1;\n\
               SELECT count(*) AS n FROM odd;\n\
               SELECT id FROM odd ORDER BY id;\n\
               DROP VIEW odd;";
    let out = npy(["sql", sql, &s0, "--csv", "--timing"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        npy_ok(["sql", sql, &s0, "--csv"])
    );
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    let seconds = |line: &str, before: &str| -> f64 {
        let rest = line
            .strip_prefix(before)
            .unwrap_or_else(|| panic!("{line}"));
        rest.strip_suffix(" s").unwrap().parse().unwrap()
    };
    for (line, before) in lines
        .iter()
        .zip(["done in ", "1 row in ", "5 rows in ", "done in "])
    {
        let s = seconds(line, before);
        assert!((0.0..60.0).contains(&s), "{line}");
    }
    // -o: the rows written.
    let written = d.join("odd.npy");
    let one = "SELECT id FROM s0 WHERE id < 7";
    let out = npy(["sql", one, &s0, "-o", &written, "--timing"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("7 rows in ") && err.lines().count() == 1,
        "{err}"
    );
    let back: Vec<(i64,)> = npy_serde::from_path_serde(&written).unwrap();
    assert_eq!(back.len(), 7);
}

/// `sort_order=` in a `-t` spec declares the files sorted: the plan reads the order
/// (`output_ordering`) and sorts nothing for an `ORDER BY` on it, over row files and a column
/// directory alike, and the answers are those of the undeclared tables.
#[test]
fn a_declared_sort_order_in_a_spec_spares_the_sort() {
    let d = Dir::new("sort-order");
    shards(&d, &[40]);
    std::fs::create_dir_all(d.file("cols")).unwrap();
    let ids: Vec<i64> = (0..40).collect();
    let xs: Vec<f64> = (0..40).map(|i| i as f64 * 0.5).collect();
    npy_serde::to_path(d.file("cols/id.npy"), &ids).unwrap();
    npy_serde::to_path(d.file("cols/x.npy"), &xs).unwrap();
    let query = "SELECT id, x FROM t WHERE id % 3 = 1 ORDER BY id LIMIT 5";
    for (plain, sorted) in [
        (
            format!("t={}", d.join("s0.npy")),
            format!("t=npy({}, sort_order=id)", d.join("s0.npy")),
        ),
        (
            format!("t=npy({}, layout=columns)", d.join("cols")),
            format!(
                "t=npy({}, layout=columns, sort_order='id ASC')",
                d.join("cols")
            ),
        ),
    ] {
        let explain = format!("EXPLAIN {query}");
        let plan = npy_ok(["sql", &explain, "-t", &sorted]);
        assert!(
            plan.contains("output_ordering=[id@0 ASC NULLS LAST]") && !plan.contains("SortExec"),
            "{plan}"
        );
        let plan = npy_ok(["sql", &explain, "-t", &plain]);
        assert!(plan.contains("SortExec"), "{plan}");
        let want = npy_ok(["sql", query, "-t", &plain, "--csv"]);
        assert_eq!(want, "id,x\n1,0.5\n4,2.0\n7,3.5\n10,5.0\n13,6.5\n");
        assert_eq!(npy_ok(["sql", query, "-t", &sorted, "--csv"]), want);
    }
    // A column the table lacks is named.
    let out = npy([
        "sql",
        "SELECT 1",
        "-t",
        &format!("t=npy({}, sort_order=idx)", d.join("s0.npy")),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no column \"idx\""),
        "{err}"
    );
    // The help says what the option is.
    let help = npy_ok(["sql", "--help"]);
    assert!(
        help.contains("sort_order=ORDER") && help.contains("trusted, not checked"),
        "{help}"
    );
}
