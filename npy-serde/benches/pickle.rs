//! Object arrays of strings (`descr '|O'`, a pickle) versus NumPy in the same run.
//!
//! - Reading a `.npy` file that `np.save` wrote, holding an object array of 10M short strings
//!   (`'item0'`, `'item1'`, ...; 5 to 12 bytes), with `allow_pickle_data`: into `Vec<String>`
//!   and `Vec<Option<String>>` through `from_path_serde`, against
//!   `np.load(path, allow_pickle=True)` of the same file.
//! - Writing the same strings from a `&[String]` with `pickle::strings_to_path`, against
//!   `np.save(path, array)` of the object array (the array built before the clock starts, as
//!   the `Vec` is here).
//!
//! NumPy is timed before and after ours (the best of both counts: interference only adds
//! time); ratios are NumPy's time over ours, above 1.0 is faster than NumPy.
//!
//! Environment as for `benches/read.rs`: `NPY_BENCH_SCALE` (1.0 = 10M strings under
//! `cargo bench`, 0.001 under `cargo test --benches`), `NPY_BENCH_REPS` (default 3),
//! `NPY_PYTHON` (the Python with NumPy; without it only our times are printed, from a file we
//! write).
//!
//! Run: `NPY_PYTHON=/work/venv/bin/python cargo bench -p npy-serde --bench pickle`
//!
//! Recorded on a shared 2-core machine (10M strings, 139 MB file, one run each):
//!
//! | | `from_path_serde::<String>` | `::<Option<String>>` | `strings_to_path` |
//! |---|---|---|---|
//! | elements moved out of the graph | 0.58x `np.load` | 0.47x | 22.75x `np.save` |
//! | streamed (`pickle/stream.rs`) | 1.06x | 0.88x | 22.63x |

use std::path::Path;
use std::time::Duration;

use npy_serde::ReaderBuilder;

mod common;
use common::{env_or, python_times, time};

const NUMPY: &str = r#"
import sys, time
import numpy as np
reps, n = int(sys.argv[1]), int(sys.argv[2]); src, out = sys.argv[3], sys.argv[4]
def best(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t); del r
    return min(ts)
a = np.empty(n, dtype=object)
a[:] = [f"item{i}" for i in range(n)]
np.save(src, a)
print("save", best(lambda: np.save(out, a)))
print("load", best(lambda: np.load(src, allow_pickle=True)))
"#;

/// NumPy's times (seconds); the first run also writes the file the reads use.
fn numpy(reps: usize, n: usize, src: &Path, out: &Path) -> Vec<(String, f64)> {
    let (reps, n) = (reps.to_string(), n.to_string());
    python_times(
        NUMPY,
        &[reps.as_ref(), n.as_ref(), src.as_os_str(), out.as_os_str()],
    )
    .into_iter()
    .map(|(k, d)| (k, d.as_secs_f64()))
    .collect()
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let scale: f64 = env_or("NPY_BENCH_SCALE", if bench { 1.0 } else { 0.001 });
    let reps: usize = env_or("NPY_BENCH_REPS", 3);
    let n = ((10_000_000.0 * scale) as usize).max(16);
    let dir = std::env::temp_dir().join(format!("npy-serde-pickle-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("objects.npy");
    let out = dir.join("ours.npy");
    let np_out = dir.join("numpy.npy");
    let strings: Vec<String> = (0..n).map(|i| format!("item{i}")).collect();

    let np_before = numpy(reps, n, &src, &np_out);
    if np_before.is_empty() {
        // No NumPy: read a file we write.
        npy_serde::pickle::strings_to_path(&src, strings.iter().map(|s| Some(s.as_str()))).unwrap();
    }
    let rb = ReaderBuilder::new().allow_pickle_data(true);
    let check: Vec<String> = rb.from_path_serde(&src).unwrap();
    assert_eq!(check, strings, "the file holds the strings");
    drop(check);
    let read = time(reps, || rb.from_path_serde::<_, String>(&src).unwrap());
    let read_opt = time(reps, || {
        rb.from_path_serde::<_, Option<String>>(&src).unwrap()
    });
    let write = time(reps, || {
        npy_serde::pickle::strings_to_path(&out, strings.iter().map(|s| Some(s.as_str()))).unwrap()
    });
    let back: Vec<String> = rb.from_path_serde(&out).unwrap();
    assert_eq!(back, strings, "the written file reads back");
    drop(back);
    let np_after = if np_before.is_empty() {
        vec![]
    } else {
        numpy(reps, n, &src, &np_out)
    };
    let reference = |k: &str| {
        np_before
            .iter()
            .chain(&np_after)
            .filter(|(name, _)| name == k)
            .map(|(_, t)| *t)
            .reduce(f64::min)
    };
    let size = std::fs::metadata(&src).map(|m| m.len()).unwrap_or(0);
    println!(
        "npy-serde pickle: an object array of {n} short strings ({:.0} MB file), best of {reps}",
        size as f64 / 1e6
    );
    for k in ["load", "save"] {
        if let Some(t) = reference(k) {
            println!("{:<52} {:>8.3} s", format!("numpy {k}"), t);
        }
    }
    let line = |label: &str, d: Duration, anchor: &str| {
        let ratio = reference(anchor)
            .map(|t| format!("  {:.2}x numpy {anchor}", t / d.as_secs_f64()))
            .unwrap_or_default();
        println!("{label:<52} {:>8.3} s{ratio}", d.as_secs_f64());
    };
    line(
        "from_path_serde::<String> (allow_pickle_data)",
        read,
        "load",
    );
    line("from_path_serde::<Option<String>>", read_opt, "load");
    line("pickle::strings_to_path from &[String]", write, "save");
    std::fs::remove_dir_all(&dir).ok();
}
