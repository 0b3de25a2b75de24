//! ndarray throughput (feature `ndarray`): `npy_serde::ndarray::read_npy` into `Array1<f64>` and
//! `Array2<f32>` and `write_npy` of an `Array1<f64>`, versus `np.load`/`np.save` and the peer
//! crate ndarray-npy on the same files, all measured in the same run.
//!
//! Workloads (written to a temporary directory; page cache warm), at scale 1:
//! - W1: `<f8`, 100M elements (800 MB), read into `Array1<f64>` and written from it
//! - F2D: `<f4`, 1M x 256 (1 GB), read into `Array2<f32>`
//!
//! Times are the best of `NPY_BENCH_REPS` runs after a warm-up, on every side; `np.load` is
//! timed by `numpy_ref.py` (as in the `read` bench) before and after our cases, the best of
//! both counting.
//!
//! Environment: `NPY_BENCH_SCALE` (float, default 1), `NPY_BENCH_REPS` (default 5),
//! `NPY_PYTHON` (a Python with NumPy: adds the NumPy timings and ratios), `NPY_BENCH_FILTER`
//! (time only the cases whose label contains it).
//!
//! Run: `NPY_PYTHON=.venv/bin/python cargo bench -p npy-serde --features ndarray --bench ndarray`

use std::any::Any;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ndarray::{Array1, Array2};

mod common;
use common::{env_or, gbps, time};

/// `np.load` of each file by `numpy_ref.py` (shared with the `read` bench): best seconds.
fn numpy_load(python: &str, reps: usize, files: &[&Path]) -> Vec<Option<f64>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/numpy_ref.py");
    let out = Command::new(python)
        .arg(script)
        .arg(reps.to_string())
        .args(files)
        .output()
        .expect("run NPY_PYTHON");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    files
        .iter()
        .map(|f| {
            text.lines()
                .find(|l| l.starts_with(&*f.to_string_lossy()))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|s| s.parse().ok())
        })
        .collect()
}

/// `np.save` of W1's values (`np.arange(n) * 0.5`, as written here) to `path`: best seconds.
const NUMPY_SAVE: &str = r#"
import sys, time
import numpy as np
reps, n, p = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
a = np.arange(n, dtype='<f8') * 0.5
np.save(p, a)
ts = []
for _ in range(reps):
    t = time.perf_counter(); np.save(p, a); ts.append(time.perf_counter() - t)
print(min(ts))
"#;

fn numpy_save(python: &str, reps: usize, n: usize, path: &Path) -> Option<f64> {
    let out = Command::new(python)
        .args(["-c", NUMPY_SAVE])
        .arg(reps.to_string())
        .arg(n.to_string())
        .arg(path)
        .output()
        .expect("run NPY_PYTHON");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn main() {
    // `cargo test --benches` runs bench binaries without --bench: keep that quick.
    let default_scale = if std::env::args().any(|a| a == "--bench") {
        1.0
    } else {
        0.001
    };
    let scale: f64 = env_or("NPY_BENCH_SCALE", default_scale);
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let filter = std::env::var("NPY_BENCH_FILTER").unwrap_or_default();
    let python = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty());
    let n1 = ((100_000_000.0 * scale) as usize).max(1);
    let rows = ((1_000_000.0 * scale) as usize).max(1);
    let cols = 256;
    let b1 = n1 as u64 * 8;
    let b2 = (rows * cols) as u64 * 4;

    let dir: PathBuf =
        std::env::temp_dir().join(format!("npy-serde-bench-nd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (w1, f2d) = (dir.join("w1.npy"), dir.join("f2d.npy"));
    {
        let a = Array1::from_iter((0..n1).map(|i| i as f64 * 0.5));
        npy_serde::ndarray::write_npy(&w1, &a).unwrap();
        let m = Array2::from_shape_fn((rows, cols), |(i, j)| (i * cols + j) as f32);
        npy_serde::ndarray::write_npy(&f2d, &m).unwrap();
    }
    let before = match &python {
        Some(py) => numpy_load(py, reps, &[&w1, &f2d]),
        None => vec![None; 2],
    };

    // (workload index: 0 W1 read, 1 F2D read, 2 W1 write; label; bytes; time)
    let mut cases: Vec<(usize, &str, u64, Duration)> = Vec::new();
    // The closures return what they read, dropped after the clock stops (as numpy_ref.py
    // deletes the loaded array after its clock stops).
    let mut run =
        |k: usize, label: &'static str, bytes: u64, f: &mut dyn FnMut() -> Box<dyn Any>| {
            if label.contains(&*filter) {
                cases.push((k, label, bytes, time(reps, &mut *f)));
            }
        };
    run(0, "W1 read_npy -> Array1<f64>", b1, &mut || {
        Box::new(npy_serde::ndarray::read_npy::<_, Array1<f64>>(&w1).unwrap())
    });
    run(0, "W1 read_npy, parallel(false)", b1, &mut || {
        let rb = npy_serde::ReaderBuilder::new().parallel(false);
        Box::new(rb.ndarray_from_path::<_, Array1<f64>>(&w1).unwrap())
    });
    run(0, "W1 ndarray-npy 0.10 read_npy", b1, &mut || {
        Box::new(ndarray_npy::read_npy::<_, Array1<f64>>(&w1).unwrap())
    });
    run(1, "F2D read_npy -> Array2<f32>", b2, &mut || {
        Box::new(npy_serde::ndarray::read_npy::<_, Array2<f32>>(&f2d).unwrap())
    });
    run(1, "F2D read_npy, parallel(false)", b2, &mut || {
        let rb = npy_serde::ReaderBuilder::new().parallel(false);
        Box::new(rb.ndarray_from_path::<_, Array2<f32>>(&f2d).unwrap())
    });
    run(1, "F2D ndarray-npy 0.10 read_npy", b2, &mut || {
        Box::new(ndarray_npy::read_npy::<_, Array2<f32>>(&f2d).unwrap())
    });
    let a = Array1::from_iter((0..n1).map(|i| i as f64 * 0.5));
    let (ours, theirs) = (dir.join("ours_w1.npy"), dir.join("peer_w1.npy"));
    run(2, "W1 write_npy <- Array1<f64>", b1, &mut || {
        npy_serde::ndarray::write_npy(&ours, black_box(&a)).unwrap();
        Box::new(())
    });
    run(2, "W1 ndarray-npy 0.10 write_npy", b1, &mut || {
        ndarray_npy::write_npy(&theirs, black_box(&a)).unwrap();
        Box::new(())
    });
    drop(a);
    // The same values in memory backed by huge pages, as NumPy's own arrays are (read_npy
    // allocates that way): the kernel's copy into the page cache takes fewer TLB misses.
    let a: Array1<f64> = npy_serde::ndarray::read_npy(&w1).unwrap();
    run(2, "W1 write_npy <- Array1 (huge pages)", b1, &mut || {
        npy_serde::ndarray::write_npy(&ours, black_box(&a)).unwrap();
        Box::new(())
    });
    drop(a);

    let numpy_path = dir.join("numpy_w1.npy");
    let reference: Vec<Option<f64>> = match &python {
        Some(py) => {
            let after = numpy_load(py, reps, &[&w1, &f2d]);
            let mut r: Vec<Option<f64>> = after
                .into_iter()
                .zip(before)
                .map(|(a, b)| match (a, b) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                })
                .collect();
            r.push(numpy_save(py, reps, n1, &numpy_path));
            r
        }
        None => {
            println!("(set NPY_PYTHON to compare with np.load and np.save)");
            vec![None; 3]
        }
    };

    println!(
        "npy-serde ndarray, scale {scale}: W1 {n1} x <f8 ({b1} B), F2D {rows} x {cols} <f4 \
         ({b2} B), best of {reps}"
    );
    let names = ["W1 np.load", "F2D np.load", "W1 np.save"];
    let bytes = [b1, b2, b1];
    for (k, r) in reference.iter().enumerate() {
        if let Some(secs) = r {
            let d = Duration::from_secs_f64(*secs);
            println!("{:<34} {:>6.2} GB/s", names[k], gbps(bytes[k], d));
        }
    }
    // The peer crate's time for each workload, for the ratio to it.
    let peer: Vec<Option<Duration>> = (0..3)
        .map(|k| {
            cases
                .iter()
                .find(|c| c.0 == k && c.1.contains("ndarray-npy"))
                .map(|c| c.3)
        })
        .collect();
    for (k, label, bytes, d) in &cases {
        let mut line = format!("{label:<34} {:>6.2} GB/s", gbps(*bytes, *d));
        if let Some(r) = reference[*k] {
            let what = if *k == 2 { "np.save" } else { "np.load" };
            line += &format!("  {:.2}x {what}", r / d.as_secs_f64());
        }
        if let (Some(p), false) = (peer[*k], label.contains("ndarray-npy")) {
            line += &format!("  {:.2}x ndarray-npy", p.as_secs_f64() / d.as_secs_f64());
        }
        println!("{line}");
    }
    if python.is_some() && ours.exists() {
        let same = std::fs::read(&ours).unwrap() == std::fs::read(&numpy_path).unwrap();
        println!("W1 bytes identical to np.save: {same}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
