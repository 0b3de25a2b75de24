//! The bench's column table (`NPY_BENCH_COLUMNS=1`): the same W2 records as one column table,
//! a directory of per-column `.npy` files (`id.npy`, `x.npy`, `y.npy`, `flag.npy`), made by
//! the programs as a user would: `npy sql -o w2.arrow` gathers the row shards into one Arrow
//! IPC file, `npy convert w2.arrow DIR --layout columns` writes the columns, and the Arrow
//! file is removed. The one process and the cluster register it alike:
//! `-t 'w2=npy(DIR, layout=columns)'`.
//!
//! It holds the columns the queries read: `v` (12 of a record's 33 bytes) is left out, which
//! changes no time (a column table's scan reads only the columns a query uses) and keeps the
//! disk the bench needs at 100M records to the shards, the Arrow file and the columns of
//! 21 bytes a record (3.3 + 2.1 + 2.1 GB at its peak, rather than 9.9).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The column table of the rows of table spec `rows` (`w2=...`), written under `dir`: its
/// table spec.
pub fn convert(npy: &Path, rows: &str, dir: &Path) -> String {
    let arrow = dir.join("w2.arrow");
    let columns = dir.join("w2-columns");
    let t = Instant::now();
    let arrow_arg = arrow.to_str().unwrap();
    let query = "SELECT id, x, y, flag FROM w2";
    run(npy, &["sql", "-o", arrow_arg, query, "-t", rows]);
    let columns_arg = columns.to_str().unwrap();
    run(
        npy,
        &["convert", arrow_arg, columns_arg, "--layout", "columns"],
    );
    std::fs::remove_file(&arrow).unwrap();
    println!(
        "The column table: {} (npy sql -o .arrow, then npy convert --layout columns: {:.1} s)",
        columns.display(),
        t.elapsed().as_secs_f64()
    );
    format!("w2=npy({}, layout=columns)", columns.display())
}

fn run(npy: &Path, args: &[&str]) {
    let out = Command::new(npy).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "npy {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
