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
