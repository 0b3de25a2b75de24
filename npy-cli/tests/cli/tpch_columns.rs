//! Issue 32's live check (`NPY_PYTHON`, features `parquet` and `datafusion`): the TPC-H tables
//! of `tpchgen-cli` converted by `npy convert --layout columns` into column archives and column
//! directories; `npy sql` answers TPC-H Q1, Q3 and Q6 over each as DuckDB does over the Parquet
//! files (the comparison of [`foreign`](crate::foreign)'s row-file check).

use npy_serde_tests::live_python;

use crate::foreign::{tpch, tpch_answers_match_duckdb};
use crate::harness::{npy_ok, Dir};

const TABLES: [&str; 3] = ["lineitem", "orders", "customer"];

#[test]
fn live_tpch_q1_q3_q6_over_column_tables_match_duckdb() {
    if live_python().is_none() {
        return;
    }
    let dir = Dir::new("tpch-columns");
    tpch(&dir);
    let mut archives = Vec::new();
    let mut directories = Vec::new();
    for t in TABLES {
        let parquet = dir.join(&format!("{t}.parquet"));
        let archive = dir.join(&format!("{t}.npz"));
        let directory = dir.join(&format!("{t}-columns"));
        npy_ok(["convert", &parquet, &archive, "--layout", "columns"].map(String::from));
        npy_ok(["convert", &parquet, &directory, "--layout", "columns"].map(String::from));
        archives.push((t, format!("npz({archive}, layout=columns)")));
        directories.push((t, format!("npy({directory}, layout=columns)")));
    }
    tpch_answers_match_duckdb(&dir, &archives);
    tpch_answers_match_duckdb(&dir, &directories);
}

#[test]
fn live_tpch_q15_a_view_then_a_query_over_row_files_and_column_tables_matches_duckdb() {
    // Q15 is three statements (CREATE VIEW, the query, DROP VIEW): `npy sql` runs them in
    // order and writes the one result. The tables hold decimals as float64 (`convert`'s
    // default), and the query keeps the suppliers whose revenue equals the maximum of the same
    // view evaluated a second time: a SET first makes each sum's order of addition one
    // partition's, so both evaluations add alike on any number of cores.
    let Some(py) = live_python() else {
        return;
    };
    let dir = Dir::new("tpch-q15");
    tpch(&dir);
    let q15 = npy_serde_tests::fixtures_dir().join("tpch").join("q15.sql");
    let q15 = q15.display().to_string();
    let sql = format!(
        "SET datafusion.execution.target_partitions = 1;\n{}",
        std::fs::read_to_string(&q15).unwrap()
    );
    let mut outs = Vec::new();
    for (layout, ext) in [("rows", "npy"), ("columns", "npz")] {
        let mut cmd = vec!["sql".to_string(), sql.clone()];
        for t in ["lineitem", "supplier"] {
            let out = dir.join(&format!("{t}-{layout}.{ext}"));
            let parquet = dir.join(&format!("{t}.parquet"));
            npy_ok(["convert", &parquet, &out, "--layout", layout].map(String::from));
            let spec = match layout {
                "rows" => out,
                _ => format!("npz({out}, layout=columns)"),
            };
            cmd.extend(["-t".into(), format!("{t}={spec}")]);
        }
        let result = dir.join(&format!("q15-{layout}.arrow"));
        cmd.extend(["-o".into(), result.clone()]);
        npy_ok(&cmd);
        outs.push(result);
    }
    let check = std::process::Command::new(py)
        .args([
            "-c",
            r#"
import sys, decimal, duckdb, pyarrow.feather as pf
d, q, outs = sys.argv[1], sys.argv[2], sys.argv[3:]
con = duckdb.connect()
for t in ['lineitem', 'supplier']:
    con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{d}/{t}.parquet')")
want = None
for s in open(q).read().split(';'):
    body = '\n'.join(l for l in s.splitlines() if not l.strip().startswith('--')).strip()
    if body:
        r = con.execute(body)
        if r.description and body.lower().startswith('select'):
            cols, want = [c[0] for c in r.description], r.fetchall()
assert want, 'DuckDB gave no rows'
for o in outs:
    tab = pf.read_table(o)
    got = [tuple(row[c] for c in cols) for row in tab.to_pylist()]
    assert tab.column_names == cols, (tab.column_names, cols)
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert g[:4] == w[:4], (g, w)
        assert abs(decimal.Decimal(g[4]) - decimal.Decimal(w[4])) <= decimal.Decimal('0.0001'), (g, w)
print('q15', len(want), 'rows')
"#,
            &dir.0.display().to_string(),
            &q15,
            &outs[0],
            &outs[1],
        ])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && printed.contains("q15 1 rows"),
        "{printed}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
