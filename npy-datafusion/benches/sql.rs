//! SQL over W2 (20M records `[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),
//! ('v','<f4',(3,))]`, 660 MB at scale 1, page cache warm) through `npy_datafusion`,
//! against NumPy answering the same questions from `np.load(mmap_mode='r')`, and, over the
//! same data as an uncompressed Parquet file, DuckDB (when the `duckdb` module is installed)
//! and DataFusion itself (its Python bindings, `datafusion` on PyPI, the same engine version),
//! timed in the same run:
//!
//! - Q1 `SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag`
//!   (NumPy: `bincount` for the counts and sums, `maximum.at` for the max);
//! - Q2 `SELECT sum(x) FROM w2 WHERE id % 7 = 0`.
//!
//! Environment: `NPY_BENCH_SCALE` (default 1), `NPY_BENCH_REPS` (default 5), `NPY_PYTHON`.
//! Run: `NPY_PYTHON=.venv/bin/python cargo bench -p npy-datafusion --bench sql`

use std::path::Path;
use std::time::Duration;

use datafusion::prelude::SessionContext;
use npy_datafusion::{NpyReadOptions, NpySessionExt};

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, python_times, time, write_w2};

const Q1: &str = "SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag";
const Q2: &str = "SELECT sum(x) FROM w2 WHERE id % 7 = 0";

const PYTHON: &str = r#"
import sys, time, numpy as np
reps, path = int(sys.argv[1]), sys.argv[2]
def best(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)
def q1():
    a = np.load(path, mmap_mode='r')
    flag = a['flag']
    n = np.bincount(flag, minlength=256)
    s = np.bincount(flag, weights=a['x'], minlength=256)
    m = np.full(256, -np.inf, dtype=np.float32)
    np.maximum.at(m, flag, a['y'])
    return n, s / np.maximum(n, 1), m
def q2():
    a = np.load(path, mmap_mode='r')
    return a['x'][a['id'] % 7 == 0].sum()
print('numpy.q1', best(q1))
print('numpy.q2', best(q2))
try:
    import pyarrow as pa, pyarrow.parquet as pq
except ImportError:
    sys.exit(0)
a = np.load(path)
pq.write_table(pa.table({n: a[n] for n in ['id', 'x', 'y', 'flag']}), path + '.parquet', compression='none')
del a
Q1 = "SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag"
Q2 = "SELECT sum(x) FROM w2 WHERE id % 7 = 0"
try:
    import duckdb
    con = duckdb.connect()
    con.execute(f"CREATE VIEW w2 AS SELECT * FROM read_parquet('{path}.parquet')")
    print('duckdb.q1', best(lambda: con.execute(Q1).fetchall()))
    print('duckdb.q2', best(lambda: con.execute(Q2).fetchall()))
except ImportError:
    pass
try:
    # DataFusion's Python bindings run the same Rust engine (major version 55) over the
    # Parquet file: DataFusion's own speed on a columnar file beside ours on the .npy.
    import datafusion
    ctx = datafusion.SessionContext()
    ctx.register_parquet('w2', path + '.parquet')
    print('datafusion_parquet.q1', best(lambda: ctx.sql(Q1).collect()))
    print('datafusion_parquet.q2', best(lambda: ctx.sql(Q2).collect()))
except ImportError:
    pass
"#;

fn python(reps: usize, w2: &Path) -> Vec<(String, Duration)> {
    let reps = reps.to_string();
    python_times(PYTHON, &[reps.as_ref(), w2.as_os_str()])
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let n = (20_000_000.0 * scale) as u64;
    let dir = std::env::temp_dir().join(format!("npy-sql-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w2 = dir.join("w2.npy");
    write_w2(&w2, n);
    println!(
        "W2: {n} records, {} MB",
        std::fs::metadata(&w2).unwrap().len() >> 20
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = SessionContext::new();
    rt.block_on(ctx.register_npy("w2", w2.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let run = |q: &str| rt.block_on(async { ctx.sql(q).await.unwrap().collect().await.unwrap() });
    let ours = [
        ("npy_serde.q1", time(reps, || run(Q1))),
        ("npy_serde.q2", time(reps, || run(Q2))),
    ];
    let theirs = python(reps, &w2);
    let get = |k: &str| theirs.iter().find(|(n, _)| n == k).map(|(_, d)| *d);

    println!(
        "{:<22} {:>10} {:>10} {:>10} {:>14}",
        "case", "seconds", "x numpy", "x duckdb", "x df-parquet"
    );
    for (name, d) in ours {
        let q = &name[name.len() - 2..];
        let ratio = |k: String| {
            get(&k).map_or("-".to_string(), |t| {
                format!("{:.2}", t.as_secs_f64() / d.as_secs_f64())
            })
        };
        println!(
            "{name:<22} {:>10.3} {:>10} {:>10} {:>14}",
            d.as_secs_f64(),
            ratio(format!("numpy.{q}")),
            ratio(format!("duckdb.{q}")),
            ratio(format!("datafusion_parquet.{q}"))
        );
    }
    for (name, d) in &theirs {
        println!("{name:<22} {:>10.3}", d.as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
