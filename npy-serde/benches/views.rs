//! Zero-copy and one-copy throughput for plain-data types (`npy_serde::pod`), versus NumPy in
//! the same run:
//!
//! - W1 (`<f8`, 100M elements at scale 1): `from_path` (the bulk tier: one `read`
//!   loop into the result) against `np.load`; a typed map view summed lane-wise
//!   (`MmapArray::open` + `as_slice::<f64>()`) against `np.load(mmap_mode='r').sum()`.
//! - W2A (W2's fields in a NumPy `align=True` dtype, 40-byte records, 20M at scale 1, read into
//!   a `#[repr(C)]` twin): `from_path` and `MmapArray::to_vec` against `np.load`;
//!   a view summing `x` against `np.load(mmap_mode='r')['x'].sum()`.
//! - Opening a map and taking a typed view of a 1 GB and a 4 GB file (sparse: created with
//!   `MmapArrayMut::create`): the time must not grow with the size.
//! - Writing W1 with `to_path(&[f64])` (one `write` of the slice's bytes) against `np.save`.
//!
//! Environment as for `benches/read.rs`: `NPY_BENCH_SCALE`, `NPY_BENCH_REPS`, `NPY_PYTHON`.
//!
//! Run: `NPY_PYTHON=.venv/bin/python cargo bench -p npy-serde --bench views`

use std::path::{Path, PathBuf};
use std::time::Duration;

use npy_serde::{MmapArray, MmapArrayMut, NpyRecord};
use serde::{Deserialize, Serialize};

mod common;
use common::{lane_sum, python_times, time};

/// W2 in NumPy's `align=True` layout, as C lays it out.
#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug)]
#[npy(align)]
#[repr(C)]
struct W2A {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

const NUMPY: &str = r#"
import sys, time
import numpy as np
reps = int(sys.argv[1]); w1, w2a, out1 = sys.argv[2], sys.argv[3], sys.argv[4]
def best(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t); del r
    return min(ts)
print("load_w1", best(lambda: np.load(w1)))
print("mmap_sum_w1", best(lambda: np.load(w1, mmap_mode='r').sum()))
print("load_w2a", best(lambda: np.load(w2a)))
print("mmap_x_sum_w2a", best(lambda: np.load(w2a, mmap_mode='r')['x'].sum()))
a = np.load(w1)
print("save_w1", best(lambda: np.save(out1, a)))
"#;

/// NumPy's times (seconds) from the script above, through `common::python_times`.
fn numpy(reps: usize, w1: &Path, w2a: &Path, out: &Path) -> Vec<(String, f64)> {
    let reps = reps.to_string();
    python_times(
        NUMPY,
        &[
            reps.as_ref(),
            w1.as_os_str(),
            w2a.as_os_str(),
            out.as_os_str(),
        ],
    )
    .into_iter()
    .map(|(k, d)| (k, d.as_secs_f64()))
    .collect()
}

fn x_sum(v: &[W2A]) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = v.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..4 {
            acc[i] += c[i].x;
        }
    }
    acc.iter().sum::<f64>() + rest.iter().map(|r| r.x).sum::<f64>()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let scale: f64 = std::env::var("NPY_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if bench { 1.0 } else { 0.001 });
    let reps: usize = std::env::var("NPY_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let n1 = ((100_000_000.0 * scale) as usize).max(8);
    let n2 = ((20_000_000.0 * scale) as usize).max(8);
    let dir: PathBuf = std::env::temp_dir().join(format!("npy-serde-views-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w1 = dir.join("w1.npy");
    let w2a = dir.join("w2a.npy");
    let out = dir.join("out.npy");
    let v1: Vec<f64> = (0..n1).map(|i| i as f64 * 0.5).collect();
    npy_serde::to_path(&w1, &v1).unwrap();
    let rows: Vec<W2A> = (0..n2)
        .map(|i| W2A {
            id: i as i64,
            x: i as f64 * 0.5,
            y: i as f32,
            flag: i as u8,
            v: [i as f32; 3],
        })
        .collect();
    npy_serde::to_path(&w2a, &rows).unwrap();
    drop(rows);
    let b1 = (n1 * 8) as f64;
    let b2 = (n2 * 40) as f64;

    let python = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty());
    let np_before = python
        .as_deref()
        .map(|_| numpy(reps, &w1, &w2a, &out))
        .unwrap_or_default();

    let mut rows: Vec<(&str, f64, Duration, &str)> = Vec::new();
    rows.push((
        "W1 from_path -> Vec<f64>",
        b1,
        time(reps, || npy_serde::from_path::<_, f64>(&w1).unwrap()),
        "load_w1",
    ));
    rows.push((
        "W1 open + as_slice::<f64> + sum",
        b1,
        time(reps, || {
            let map = MmapArray::open(&w1).unwrap();
            lane_sum::<f64, 8>(map.as_slice::<f64>().unwrap())
        }),
        "mmap_sum_w1",
    ));
    rows.push((
        "W2A from_path -> Vec<W2A>",
        b2,
        time(reps, || npy_serde::from_path::<_, W2A>(&w2a).unwrap()),
        "load_w2a",
    ));
    rows.push((
        "W2A mmap to_vec -> Vec<W2A>",
        b2,
        time(reps, || {
            MmapArray::open(&w2a).unwrap().to_vec::<W2A>().unwrap()
        }),
        "load_w2a",
    ));
    rows.push((
        "W2A open + as_slice::<W2A> + sum x",
        b2,
        time(reps, || {
            let map = MmapArray::open(&w2a).unwrap();
            x_sum(map.as_slice::<W2A>().unwrap())
        }),
        "mmap_x_sum_w2a",
    ));
    rows.push((
        "W1 to_path(&[f64]), Vec from collect()",
        b1,
        time(reps, || npy_serde::to_path(&out, &v1).unwrap()),
        "save_w1",
    ));
    // NumPy's arrays of 4 MiB and more live in huge pages (it asks for them), which makes
    // writing them from memory faster; so do the Vecs this crate reads. The same write from
    // such a Vec, for the like-for-like comparison:
    let v1h: Vec<f64> = npy_serde::from_path(&w1).unwrap();
    rows.push((
        "W1 to_path(&[f64]), Vec from from_path",
        b1,
        time(reps, || npy_serde::to_path(&out, &v1h).unwrap()),
        "save_w1",
    ));

    let np_after = python
        .as_deref()
        .map(|_| numpy(reps, &w1, &w2a, &out))
        .unwrap_or_default();
    let reference = |k: &str| {
        np_before
            .iter()
            .chain(&np_after)
            .filter(|(n, _)| n == k)
            .map(|(_, t)| *t)
            .reduce(f64::min)
    };

    println!("npy-serde views: W1 {n1} x <f8, W2A {n2} x 40 B, best of {reps}");
    for k in [
        "load_w1",
        "mmap_sum_w1",
        "load_w2a",
        "mmap_x_sum_w2a",
        "save_w1",
    ] {
        if let Some(t) = reference(k) {
            let bytes = if k.ends_with("w2a") { b2 } else { b1 };
            println!("{:<48} {:>7.2} GB/s", format!("numpy {k}"), bytes / t / 1e9);
        }
    }
    for (label, bytes, d, k) in &rows {
        let ratio = reference(k)
            .map(|t| format!("  {:.2}x numpy {k}", t / d.as_secs_f64()))
            .unwrap_or_default();
        println!(
            "{label:<40} {:>7.2} GB/s{ratio}",
            bytes / d.as_secs_f64() / 1e9
        );
    }

    // Opening a map is O(1) in the file size.
    for gb in [1u64, 4] {
        let p = dir.join(format!("sparse{gb}.npy"));
        let n = gb << 27; // f64s
        drop(MmapArrayMut::create::<f64>(&p, &[n]).unwrap());
        let d = time(reps.max(20), || {
            let map = MmapArray::open(&p).unwrap();
            map.as_slice::<f64>().unwrap().len()
        });
        println!(
            "{:<48} {:>7.1} us",
            format!("open + as_slice, {gb} GB file"),
            d.as_secs_f64() * 1e6
        );
        std::fs::remove_file(&p).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
}
