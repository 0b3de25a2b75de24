//! The SQL harness (feature `datafusion`) of the `sql` and `ballista` test modules: a runtime, a
//! session that reads `.npy` tables, shards to query, queries run to rows of text, the comparison
//! of a number in a cell, NumPy's answer over the same files, and the files a write left.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{register_npy_format, NpyReadOptions, NpySessionExt};
use npy_serde::NpyRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use tokio::runtime::Runtime;

use crate::{live_python, run_python, TempDir};

/// A nested record of [`Obs`].
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
pub struct Pos {
    pub a: f32,
    pub b: f32,
}

/// The record of the SQL tests' tables: every kind of column a query meets (integers, a flag,
/// floats, fixed bytes, a datetime with NaT, a nested record).
#[derive(Serialize, Deserialize, NpyRecord, Clone, Debug, PartialEq)]
pub struct Obs {
    pub id: i64,
    pub flag: u8,
    pub x: f64,
    pub y: f32,
    #[npy(dtype = "|S4")]
    pub name: String,
    #[npy(dtype = "<M8[ns]")]
    pub ts: Option<i64>,
    pub pos: Pos,
}

/// The first timestamp of [`obs`].
pub const T0: i64 = 1_700_000_000_000_000_000;

/// Record `i` of the test tables: `x` in multiples of 1/4 (sums are exact in any order, so
/// every partitioning agrees), `ts` NaT for every tenth record from 3.
pub fn obs(i: i64) -> Obs {
    Obs {
        id: i,
        flag: (i % 5) as u8,
        x: (i % 13) as f64 * 0.25 - 1.0,
        y: ((i * 7) % 11) as f32,
        name: format!("n{}", i % 3),
        ts: (i % 10 != 3).then_some(T0 + i * 1_000_000_000),
        pos: Pos {
            a: i as f32 * 0.5,
            b: -(i as f32),
        },
    }
}

/// A multi-threaded runtime of two workers to run the queries on.
///
/// # Panics
///
/// If the runtime cannot be built.
pub fn rt() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `config` with even small files split into byte ranges, so that the tests' scans cross range
/// (and record) boundaries.
pub fn split_small_files(config: SessionConfig) -> SessionConfig {
    config.set_usize("datafusion.optimizer.repartition_file_min_size", 1)
}

/// A single-process session with `config` and the NPY format registered (for SQL DDL).
///
/// # Panics
///
/// If the format cannot be registered.
pub fn session(config: SessionConfig) -> SessionContext {
    let ctx = SessionContext::new_with_config(config);
    register_npy_format(&ctx).unwrap();
    ctx
}

/// Writes the shards of a test table into `dir`, `shard00.npy`, `shard01.npy`, ...: shard `k`
/// holds `sizes[k]` records, made by `record` from ids consecutive over the shards (from 0).
/// Returns every record, in order.
///
/// # Panics
///
/// If a shard cannot be written.
pub fn write_shards<T: Serialize + NpyRecord + Sync>(
    dir: &TempDir,
    sizes: &[i64],
    record: impl Fn(i64) -> T,
) -> Vec<T> {
    let mut all = Vec::new();
    let mut next = 0;
    for (k, &n) in sizes.iter().enumerate() {
        let recs: Vec<T> = (next..next + n).map(&record).collect();
        next += n;
        npy_serde::to_path(dir.join(format!("shard{k:02}.npy")), &recs).unwrap();
        all.extend(recs);
    }
    all
}

/// Writes `bad_bool.npy` into `dir`, three bools whose last byte is 7 (neither 0 nor 1), and
/// registers it as the table `name` of `ctx`.
///
/// # Panics
///
/// If the file cannot be written or registered.
pub fn register_bad_bools(ctx: &SessionContext, rt: &Runtime, dir: &TempDir, name: &str) {
    let mut bad = npy_serde::to_vec(&[true, false, true]).unwrap();
    let last = bad.len() - 1;
    bad[last] = 7;
    let bp = dir.join("bad_bool.npy");
    std::fs::write(&bp, &bad).unwrap();
    rt.block_on(ctx.register_npy(name, bp.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
}

/// Rows of a query's result, each cell as DataFusion displays it (`NULL` for a null).
///
/// # Panics
///
/// If a cell cannot be displayed.
pub fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c: &ArrayRef| {
                        if c.is_null(r) {
                            "NULL".to_string()
                        } else {
                            array_value_to_string(c, r).unwrap()
                        }
                    })
                    .collect(),
            );
        }
    }
    out
}

/// The [`rows`] of `query`'s result.
///
/// # Panics
///
/// If the query fails (the message names the query).
pub fn sql(ctx: &SessionContext, rt: &Runtime, query: &str) -> Vec<Vec<String>> {
    let batches = rt
        .block_on(async { ctx.sql(query).await?.collect().await })
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    rows(&batches)
}

/// The message of the error `query` fails with.
///
/// # Panics
///
/// If the query succeeds.
pub fn sql_err(ctx: &SessionContext, rt: &Runtime, query: &str) -> String {
    match rt.block_on(async { ctx.sql(query).await?.collect().await }) {
        Ok(b) => panic!("{query}: expected an error, got {:?}", rows(&b)),
        Err(e) => e.to_string(),
    }
}

/// Whether the cell `a` is the number `b`, to a relative 1e-9.
///
/// # Panics
///
/// If `a` is not a number.
pub fn close(a: &str, b: f64) -> bool {
    let a: f64 = a.parse().unwrap_or_else(|_| panic!("not a number: {a}"));
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The `.npy` files directly in `dir`, sorted.
///
/// # Panics
///
/// If the directory cannot be listed.
pub fn npy_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some(OsStr::new("npy")))
        .collect();
    v.sort();
    v
}

/// The files (not directories) under `dir`, recursively, sorted: what a `COPY ... TO` or an
/// `INSERT INTO` left there.
///
/// # Panics
///
/// If a directory cannot be listed.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// NumPy's answer over a table's files, when NumPy is live (`None` otherwise): `script` runs
/// with `a` the files loaded and concatenated (in sorted order) and must print one JSON value.
///
/// # Panics
///
/// If the script fails or prints something that is not JSON.
pub fn numpy(script: &str, files: &[PathBuf]) -> Option<Json> {
    live_python()?;
    let pre = "import sys, json\nimport numpy as np\n\
               a = np.concatenate([np.load(f, mmap_mode='r') for f in sorted(sys.argv[1:])])\n";
    let args: Vec<&OsStr> = files.iter().map(|p| p.as_os_str()).collect();
    let out = run_python(&format!("{pre}{script}"), &args);
    Some(serde_json::from_str(out.trim()).unwrap())
}
