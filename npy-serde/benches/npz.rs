//! `.npz` beyond NumPy: archive members mapped in place and appending, versus NumPy in the same
//! run.
//!
//! - A stored `<f4` member of 250M elements (1 GB at scale 1) in an aligned archive
//!   (`NpzWriter::align`): `MmapNpz::open` + `array` + `as_slice::<f32>()` + a lane sum, against
//!   `np.load(npy, mmap_mode='r').sum()` of the same array as a `.npy` file (NumPy ignores
//!   `mmap_mode` for archives: `np.load(npz)['x'].sum()`, which reads the member whole, is
//!   printed too).
//! - Opening the archive and viewing its member, for members of 1 MiB, 64 MiB and the large
//!   one: the time must not grow with the member's size.
//! - Appending a 1 MB member (`NpzAppender`, open to finish) to a 1 MB archive and to the large
//!   one: the time must not grow with the archive's size.
//!
//! Environment as for `benches/read.rs`: `NPY_BENCH_SCALE`, `NPY_BENCH_REPS`, `NPY_PYTHON`.
//!
//! Run: `NPY_PYTHON=.venv/bin/python NPY_BENCH_SCALE=0.25 cargo bench -p npy-serde --bench npz`

use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

use npy_serde::npz::{MmapNpz, NpzAppender, NpzWriter};

mod common;
use common::{env_or, lane_sum, python_times, time};

const NUMPY: &str = r#"
import sys, time
import numpy as np
reps = int(sys.argv[1]); npy, npz = sys.argv[2], sys.argv[3]
def best(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t); del r
    return min(ts)
print("mmap_sum", best(lambda: np.load(npy, mmap_mode='r').sum()))
def npz_sum():
    with np.load(npz, mmap_mode='r') as z:
        return z['x'].sum()
print("npz_sum", best(npz_sum))
"#;

/// NumPy's times (seconds) from the script above, through `common::python_times`.
fn numpy(reps: usize, npy: &Path, npz: &Path) -> Vec<(String, f64)> {
    let reps = reps.to_string();
    python_times(NUMPY, &[reps.as_ref(), npy.as_os_str(), npz.as_os_str()])
        .into_iter()
        .map(|(k, d)| (k, d.as_secs_f64()))
        .collect()
}

/// An aligned archive with one stored `<f4` member `x` of `n` elements.
fn write_archive(path: &Path, values: &[f32]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = NpzWriter::new(BufWriter::with_capacity(1 << 20, file)).align(true);
    w.add("x", values).unwrap();
    w.finish().unwrap();
}

fn open_and_view(path: &Path) -> usize {
    let npz = MmapNpz::open(path).unwrap();
    let a = npz.array("x").unwrap();
    a.as_slice::<f32>().unwrap().len()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let scale: f64 = env_or("NPY_BENCH_SCALE", if bench { 1.0 } else { 0.001 });
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let n = ((250_000_000.0 * scale) as usize).max(16);
    let dir = std::env::temp_dir().join(format!("npy-serde-npz-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.npz");
    let npy = dir.join("big.npy");
    let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25).collect();
    write_archive(&big, &values);
    npy_serde::to_path(&npy, &values).unwrap();
    let bytes = (n * 4) as f64;

    let python = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty());
    let np_before = python
        .as_deref()
        .map(|_| numpy(reps, &npy, &big))
        .unwrap_or_default();
    let ours = time(reps, || {
        let npz = MmapNpz::open(&big).unwrap();
        let a = npz.array("x").unwrap();
        lane_sum::<f32, 16>(a.as_slice::<f32>().unwrap())
    });
    let ours_npy = time(reps, || {
        let map = npy_serde::MmapArray::open(&npy).unwrap();
        lane_sum::<f32, 16>(map.as_slice::<f32>().unwrap())
    });
    let np_after = python
        .as_deref()
        .map(|_| numpy(reps, &npy, &big))
        .unwrap_or_default();
    let reference = |k: &str| {
        np_before
            .iter()
            .chain(&np_after)
            .filter(|(name, _)| name == k)
            .map(|(_, t)| *t)
            .reduce(f64::min)
    };

    println!(
        "npy-serde npz: a stored {n} x <f4 member ({:.0} MB), best of {reps}",
        bytes / 1e6
    );
    for k in ["mmap_sum", "npz_sum"] {
        if let Some(t) = reference(k) {
            println!("{:<52} {:>7.2} GB/s", format!("numpy {k}"), bytes / t / 1e9);
        }
    }
    let line = |label: &str, d: Duration| {
        let ratio = reference("mmap_sum")
            .map(|t| format!("  {:.2}x numpy mmap_sum", t / d.as_secs_f64()))
            .unwrap_or_default();
        println!(
            "{label:<52} {:>7.2} GB/s{ratio}",
            bytes / d.as_secs_f64() / 1e9
        );
    };
    line("MmapNpz open + array + as_slice::<f32> + sum", ours);
    line("(MmapArray open + as_slice::<f32> + sum, .npy)", ours_npy);

    // Opening is O(1) in the member's size.
    let mut sizes = vec![
        (1usize << 18, dir.join("m1.npz")),
        (1 << 24, dir.join("m64.npz")),
    ];
    for (k, p) in &sizes {
        write_archive(p, &values[..(*k).min(n)]);
    }
    sizes.push((n, big.clone()));
    for (k, p) in &sizes {
        let d = time(reps.max(20), || open_and_view(p));
        println!(
            "{:<52} {:>7.1} us",
            format!("open + view, member of {:.0} MB", (*k).min(n) as f64 * 4e-6),
            d.as_secs_f64() * 1e6
        );
    }

    // Appending a 1 MB member costs the member, not the archive.
    let mb: Vec<f32> = vec![1.5; 1 << 18];
    for (k, p) in [&sizes[0], &sizes[2]] {
        let mut i = 0;
        let d = time(reps.max(10), || {
            i += 1;
            let mut app = NpzAppender::open(p).unwrap();
            app.add(&format!("m{i}"), &mb).unwrap();
            app.finish().unwrap();
        });
        println!(
            "{:<52} {:>7.2} ms",
            format!(
                "append 1 MB member to a {:.0} MB archive",
                (*k).min(n) as f64 * 4e-6
            ),
            d.as_secs_f64() * 1e3
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
