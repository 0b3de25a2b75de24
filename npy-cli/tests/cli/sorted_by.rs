//! `npy convert --sorted-by`: the rows verified in the order while they are written, and the
//! order recorded with the output (an archive's comment, a directory's `_npy_order`, a `.npy`
//! file's `FILE.npy.order`), which `npy sql` then uses for a table that declares none: no sort
//! for an `ORDER BY` on it, the answers of the unrecorded table. A row out of order fails the
//! conversion naming it and leaves no output; NumPy loads every output as it loads any.

use crate::harness::{npy, npy_ok, Dir};
use npy_arrow::order::TableRecord;
use npy_serde_tests::{live_python, run_python};

#[derive(serde::Serialize, npy_serde::NpyRecord)]
struct Rec {
    k: i64,
    v: f64,
    g: u8,
}

/// `rows.npy` and `rows.parquet` in `d`: 3000 rows sorted by `k` (three rows a key), `v`
/// descending within a key.
fn input(d: &Dir) {
    let recs: Vec<Rec> = (0..3000i64)
        .map(|i| Rec {
            k: i / 3,
            v: ((i / 3) % 17) as f64 + (2 - i % 3) as f64 * 0.25,
            g: (i % 4) as u8,
        })
        .collect();
    npy_serde::to_path(d.file("rows.npy"), &recs).unwrap();
    npy_ok(["convert", &d.join("rows.npy"), &d.join("rows.parquet")]);
}

const QUERIES: [&str; 3] = [
    "SELECT k, v FROM t WHERE g = 1 ORDER BY k, v DESC LIMIT 20",
    "SELECT k, sum(v) AS s, count(*) AS n FROM t GROUP BY k ORDER BY k LIMIT 30",
    "SELECT k FROM t ORDER BY k DESC LIMIT 4",
];

#[test]
fn a_verified_order_is_recorded_and_spares_the_sort() {
    let d = Dir::new("sorted-by");
    input(&d);
    let order = "k, v DESC";
    let src = d.join("rows.parquet");
    npy_ok(["convert", &src, &d.join("out.npz"), "--sorted-by", order]);
    npy_ok([
        "convert",
        &src,
        &d.join("cols.npz"),
        "--layout",
        "columns",
        "--sorted-by",
        order,
    ]);
    npy_ok([
        "convert",
        &src,
        &d.join("cols"),
        "--layout",
        "columns",
        "--sorted-by",
        order,
    ]);
    npy_ok(["convert", &src, &d.join("out.npy"), "--sorted-by", order]);
    // From a .npy file too (through Arrow batches).
    npy_ok([
        "convert",
        &d.join("rows.npy"),
        &d.join("again.npy"),
        "--sorted-by",
        "k",
    ]);
    let record = "npy-serde/1:sort_order=k ASC NULLS LAST, v DESC NULLS FIRST;rows=3000";
    let read = |name: &str| std::fs::read_to_string(d.file(name)).unwrap();
    // A .npy file's record and a column table's: the order's line, then the columns'
    // statistics (the same, as both writers saw the same values).
    let stats = "\nnpy-serde/stats1:rows=3000;\"k\",\"Int64\",0,";
    let rows = read("out.npy.order");
    assert!(rows.starts_with(&format!("{record}{stats}")), "{rows}");
    let cols = read("cols/_npy_order");
    assert!(cols.starts_with(&format!("{record}{stats}")), "{cols}");
    assert_eq!(rows, cols);
    let again = read("again.npy.order");
    assert!(
        again.starts_with(&format!(
            "npy-serde/1:sort_order=k ASC NULLS LAST;rows=3000{stats}"
        )),
        "{again}"
    );
    let comment = |name: &str| {
        let bytes = std::fs::read(d.file(name)).unwrap();
        let c = npy_serde::npz::comment_of_tail(&bytes).unwrap().to_vec();
        String::from_utf8(c).unwrap()
    };
    // (The member of an archive of rows is the input's stem.)
    assert_eq!(comment("out.npz"), format!("{record};member=rows"));
    assert_eq!(format!("{}\n", comment("cols.npz")), cols);

    let plain = format!("t={}", d.join("rows.npy"));
    for spec in [
        format!("t=npz({}, member=rows)", d.join("out.npz")),
        format!("t=npz({}, layout=columns)", d.join("cols.npz")),
        format!("t=npy({}, layout=columns)", d.join("cols")),
        format!("t={}", d.join("out.npy")),
    ] {
        let plan = npy_ok(["sql", &format!("EXPLAIN {}", QUERIES[0]), "-t", &spec]);
        assert!(
            plan.contains("output_ordering=[k@0 ASC NULLS LAST, v@1 DESC]")
                && !plan.contains("SortExec"),
            "{spec}: {plan}"
        );
        let plan = npy_ok(["sql", &format!("EXPLAIN {}", QUERIES[1]), "-t", &spec]);
        assert!(!plan.contains("SortExec"), "{spec}: {plan}");
        for q in QUERIES {
            let want = npy_ok(["sql", q, "-t", &plain, "--csv"]);
            assert_eq!(
                npy_ok(["sql", q, "-t", &spec, "--csv"]),
                want,
                "{spec}: {q}"
            );
        }
    }
    let plan = npy_ok(["sql", &format!("EXPLAIN {}", QUERIES[0]), "-t", &plain]);
    assert!(plan.contains("SortExec"), "{plan}");

    // Written again without --sorted-by, the .npy file loses its order, and keeps the
    // statistics of what it holds.
    npy_ok(["convert", &src, &d.join("out.npy")]);
    let kept = read("out.npy.order");
    assert!(kept.starts_with("npy-serde/stats1:rows=3000;"), "{kept}");
    assert_eq!(TableRecord::parse(kept.as_bytes()).order, None);

    if live_python().is_some() {
        let script = r#"
import sys, zipfile
import numpy as np
d = sys.argv[1]
rows = np.load(d + "/rows.npy")
assert (np.load(d + "/out.npz")["rows"] == rows).all()
assert (np.load(d + "/out.npy") == rows).all()
cols = np.load(d + "/cols.npz")
for name in ["k", "v", "g"]:
    assert (cols[name] == rows[name]).all(), name
    assert (np.load(d + "/cols/" + name + ".npy") == rows[name]).all(), name
print(zipfile.ZipFile(d + "/cols.npz").comment.decode())
"#;
        let out = run_python(script, &[d.0.as_os_str()]);
        assert_eq!(out.trim(), cols.trim());
    }
}

#[test]
fn rows_out_of_order_fail_naming_the_row_and_leave_no_output() {
    let d = Dir::new("sorted-by-unsorted");
    input(&d);
    let src = d.join("rows.parquet");
    for (out, layout) in [
        ("bad.npy", None),
        ("bad.npz", None),
        ("bad-cols.npz", Some("columns")),
        ("bad-cols", Some("columns")),
    ] {
        let mut args = vec!["convert".to_string(), src.clone(), d.join(out)];
        args.extend(["--sorted-by".into(), "k, v".into()]);
        if let Some(l) = layout {
            args.extend(["--layout".into(), l.into()]);
        }
        let o = npy(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{out}: {err}");
        assert!(
            err.contains(
                "rows.parquet: the rows are not in the order k, v: row 1 (k = 0, v = 0.25) comes \
                 after row 0 (k = 0, v = 0.5), which breaks v ASC NULLS LAST"
            ),
            "{out}: {err}"
        );
    }
    let mut left: Vec<String> = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["rows.npy", "rows.parquet"]);

    // Usage errors: a column the table lacks, an output that keeps no record, a whole archive.
    let o = npy(["convert", &src, &d.join("x.npy"), "--sorted-by", "kk"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"kk\", which the table has not; its columns are k, v, g"),
        "{err}"
    );
    let o = npy(["convert", &src, &d.join("x.parquet"), "--sorted-by", "k"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let o = npy([
        "convert",
        &src,
        &d.join("x.npy"),
        "--sorted-by",
        "k sideways",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    npy_ok(["convert", &src, &d.join("whole.npz")]);
    let o = npy([
        "convert",
        &d.join("whole.npz"),
        &d.join("y.npz"),
        "--sorted-by",
        "k",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && err.contains("name the member"),
        "{err}"
    );
    let help = npy_ok(["convert", "--help"]);
    assert!(help.contains("--sorted-by <ORDER>"), "{help}");
}

/// `npy sql` writes through the library's sink: a `COPY` of rows in a known order records it
/// where `--sorted-by` does, a `COPY` over that file of rows in no known order removes the
/// record, and a `COPY` whose rows break its `sort_order` option fails and changes nothing.
#[test]
fn sql_copy_records_the_order_it_verified_and_leaves_no_stale_one() {
    let d = Dir::new("sorted-by-sql-copy");
    input(&d);
    let t = format!("t={}", d.join("rows.parquet"));
    let out = d.join("out.npy");
    let copy = |query: &str, options: &str| {
        let sql = format!("COPY ({query}) TO '{out}' {options}");
        npy(["sql", &sql, "-t", &t])
    };
    let o = copy("SELECT k, v, g FROM t ORDER BY k, v DESC", "");
    assert!(o.status.success(), "{o:?}");
    let record = "npy-serde/1:sort_order=k ASC NULLS LAST, v DESC NULLS FIRST;rows=3000\n";
    assert_eq!(
        std::fs::read_to_string(d.file("out.npy.order")).unwrap(),
        record
    );
    let spec = format!("t={out}");
    let plan = npy_ok(["sql", &format!("EXPLAIN {}", QUERIES[0]), "-t", &spec]);
    assert!(!plan.contains("SortExec"), "{plan}");

    // Rows out of the declared order: the statement fails, the file and its record stay.
    let before = std::fs::read(d.file("out.npy")).unwrap();
    let o = copy(
        "SELECT k, v, g FROM t ORDER BY v",
        "OPTIONS ('sort_order' 'k')",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the rows are not in the order k"), "{err}");
    assert_eq!(std::fs::read(d.file("out.npy")).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(d.file("out.npy.order")).unwrap(),
        record
    );

    // The same number of rows in another order: the record is that order's.
    let o = copy("SELECT k, v, g FROM t ORDER BY v", "");
    assert!(o.status.success(), "{o:?}");
    let by_v = "npy-serde/1:sort_order=v ASC NULLS LAST;rows=3000\n";
    assert_eq!(
        std::fs::read_to_string(d.file("out.npy.order")).unwrap(),
        by_v
    );
    let plan = npy_ok(["sql", &format!("EXPLAIN {}", QUERIES[0]), "-t", &spec]);
    assert!(plan.contains("SortExec"), "{plan}");
    for q in QUERIES {
        let want = npy_ok(["sql", q, "-t", &t, "--csv"]);
        assert_eq!(npy_ok(["sql", q, "-t", &spec, "--csv"]), want, "{q}");
    }
    // Rows in no order the plan knows: no record is left.
    let o = copy("SELECT k, v, g FROM t", "");
    assert!(o.status.success(), "{o:?}");
    assert!(!d.file("out.npy.order").exists());
}

/// `--sorted-by` is verified on the values as written, after `--nulls`, not on the Arrow rows:
/// a null filled with -1 is a -1 (before every key, so after the greatest when the nulls were
/// last), a float's null under `nan` is NaN (after every number, so out of place when the nulls
/// were first). The order is refused where the written values break it (though the Arrow rows
/// keep it), and recorded where they keep it.
#[test]
fn the_order_is_verified_on_the_values_written() {
    let d = Dir::new("sorted-by-nulls");
    input(&d);
    // `k` (ints) and `v` (floats) null on the last six keys' rows, sorted nulls last or first.
    for nulls in ["LAST", "FIRST"] {
        let query = format!(
            "SELECT CASE WHEN k >= 998 THEN NULL ELSE k END AS k, \
             CASE WHEN k >= 998 THEN NULL ELSE CAST(k AS DOUBLE) END AS v \
             FROM t ORDER BY k NULLS {nulls}"
        );
        let out = d.join(&format!("nulls-{nulls}.parquet"));
        let t = format!("t={}", d.join("rows.npy"));
        npy_ok(["sql", &query, "-t", &t, "-o", &out]);
    }
    let convert = |src: &str, out: &str, layout: bool, order: &str, nulls: &[&str]| {
        let mut args = vec!["convert".to_string(), d.join(src), d.join(out)];
        args.extend(["--sorted-by".into(), order.into()]);
        for n in nulls {
            args.extend(["--nulls".to_string(), n.to_string()]);
        }
        if layout {
            args.extend(["--layout".into(), "columns".into()]);
        }
        npy(&args)
    };
    let fill = ["k:fill=-1", "nan"];
    for layout in [false, true] {
        let out = if layout { "w-cols.npz" } else { "w-rows.npy" };
        // Nulls last, filled with -1: a -1 after key 997.
        let o = convert("nulls-LAST.parquet", out, layout, "k", &fill);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{layout}: {err}");
        assert!(
            err.contains(
                "nulls-LAST.parquet: the rows are not in the order k: row 2994 (k = -1) comes \
                 after row 2993 (k = 997)"
            ),
            "{layout}: {err}"
        );
        assert!(!d.file(out).exists());
        // Nulls first, NaN under `nan`: a NaN before 0.0 breaks `v NULLS FIRST` (NaN is no
        // null, and sorts after every number).
        let o = convert(
            "nulls-FIRST.parquet",
            out,
            layout,
            "v NULLS FIRST",
            &["nan"],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{layout}: {err}");
        assert!(
            err.contains("row 6 (v = 0.0) comes after row 5 (v = NaN)"),
            "{layout}: {err}"
        );
        assert!(!d.file(out).exists());
        // Nulls first, filled with -1: in order as written, recorded.
        let o = convert("nulls-FIRST.parquet", out, layout, "k NULLS FIRST", &fill);
        assert!(o.status.success(), "{layout}: {o:?}");
        let record = "npy-serde/1:sort_order=k ASC NULLS FIRST;rows=3000";
        let text = if layout {
            let bytes = std::fs::read(d.file(out)).unwrap();
            let c = npy_serde::npz::comment_of_tail(&bytes).unwrap().to_vec();
            String::from_utf8(c).unwrap()
        } else {
            std::fs::read_to_string(d.file(&format!("{out}.order"))).unwrap()
        };
        assert!(text.starts_with(record), "{layout}: {text}");
        if layout {
            // The statistics are the written values': no nulls in `k`, -1 its least.
            assert!(text.contains(r#""k","Int64",0,"#), "{text}");
            assert!(text.contains(r#","-1","997";"#), "{text}");
        }
    }
}
