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
//! - Writing (issue 43): `NpzWriter::create` stored and deflated, against `np.savez` and
//!   `np.savez_compressed` of the same arrays in the same run (before and after ours, best of
//!   both), into files in a temporary directory: W1 (`<f8`, 20M values, 160 MB at a write
//!   scale of 1) as one member, W2 (4M records of the 33-byte dtype of `benches/write.rs`,
//!   132 MB) as one member, and four columns of 5M values each (`<i8`, `<f8`, `<f4`, `|u1`: 105 MB) as four
//!   members.
//!
//! Ratios are NumPy's time over ours (> 1: faster than NumPy); each written member's bytes are
//! checked identical to NumPy's after decompression. Also timed: stored members through
//! `NpzWriter::new(BufWriter<File>)` (no space reserved), and deflated members in line on one
//! thread (`NpzAppender` onto an empty archive: `NpzWriter` before issue 43).
//!
//! Environment as for `benches/read.rs`: `NPY_BENCH_SCALE`, `NPY_BENCH_REPS`, `NPY_PYTHON`;
//! `NPY_BENCH_WRITE_SCALE` (default 1) and `NPY_BENCH_WRITE_REPS` (default 3) size and repeat the
//! write cases; `NPY_BENCH_NPZ=write` (or `mmap`) runs only that half.
//!
//! Run: `NPY_PYTHON=.venv/bin/python NPY_BENCH_SCALE=0.25 cargo bench -p npy-serde --bench npz`

use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

use npy_serde::npz::{MmapNpz, NpzAppender, NpzArchive, NpzWriter};
use npy_serde::NpyRecord;
use serde::Serialize;

mod common;
use common::{env_or, lane_sum, python_times, time, time_settled};

/// W2's record (`benches/write.rs`): 33 bytes, packed as NumPy packs the dtype.
#[derive(Serialize, NpyRecord, Clone, Copy)]
struct Rec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// `np.savez` and `np.savez_compressed` of the arrays the write cases build (the same values),
/// each into `DIR/numpy_{case}_{kind}.npz`; prints `{case}_{kind} seconds`.
const NUMPY_SAVEZ: &str = r#"
import os, sys, time
import numpy as np
reps, n1, n2, n3, d = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
w1 = np.arange(n1, dtype='<f8') * 0.5
dt = np.dtype([('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))])
i = np.arange(n2)
w2 = np.zeros(n2, dtype=dt)
w2['id'] = i; w2['x'] = i * 0.5; w2['y'] = i; w2['flag'] = i % 251
w2['v'] = i[:, None] + np.arange(3)
del i
j = np.arange(n3)
cols = dict(id=j.astype('<i8'), x=j * 0.5, y=j.astype('<f4'), flag=(j % 251).astype('u1'))
del j
cases = (('W1', dict(x=w1)), ('W2', dict(x=w2)), ('cols', cols))
for kind, save in (('stored', np.savez), ('deflate', np.savez_compressed)):
    for name, arrays in cases:
        p = f'{d}/numpy_{name}_{kind}.npz'
        if kind == 'stored':  # the page cache warmed; deflate is CPU-bound (and slow)
            save(p, **arrays)
        ts = []
        for _ in range(reps):
            os.sync()
            t = time.perf_counter(); save(p, **arrays); ts.append(time.perf_counter() - t)
        print(f'{name}_{kind}', min(ts), flush=True)
"#;

/// One write case: the members (key, what to add) written by `NpzWriter`.
enum Member<'a> {
    F64(&'a [f64]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    U8(&'a [u8]),
    Rec(&'a [Rec]),
}

/// A write case: its name, payload bytes and members.
type Case<'a> = (&'a str, u64, Vec<(&'a str, Member<'a>)>);

/// Adds each member with `add` (one call per element type).
macro_rules! add_members {
    ($w:expr, $members:expr) => {
        for (key, m) in $members {
            match m {
                Member::F64(v) => $w.add(key, v),
                Member::I64(v) => $w.add(key, v),
                Member::F32(v) => $w.add(key, v),
                Member::U8(v) => $w.add(key, v),
                Member::Rec(v) => $w.add(key, v),
            }
            .unwrap();
        }
    };
}

/// `NpzWriter::create(path)` (a staged file, its space reserved ahead), what the table's ratios
/// are for.
fn write_npz(path: &Path, compressed: bool, members: &[(&str, Member<'_>)]) {
    let mut w = NpzWriter::create(path).unwrap();
    if compressed {
        w.set_compression(npy_serde::npz::Compression::Deflate);
    }
    add_members!(w, members);
    w.commit().unwrap();
}

/// `NpzWriter::new(BufWriter<File>)`, the call a newcomer writes.
fn write_npz_buffered(path: &Path, compressed: bool, members: &[(&str, Member<'_>)]) {
    let file = std::fs::File::create(path).unwrap();
    let out = BufWriter::with_capacity(1 << 20, file);
    let mut w = if compressed {
        NpzWriter::new_compressed(out)
    } else {
        NpzWriter::new(out)
    };
    add_members!(w, members);
    w.finish().unwrap();
}

/// The reference for the deflate cases: the same members deflated in line on the writing
/// thread (as `NpzWriter` did before issue 43, and `NpzAppender` still does), appended to an
/// empty archive.
fn append_in_line(path: &Path, members: &[(&str, Member<'_>)]) {
    NpzWriter::new(std::fs::File::create(path).unwrap())
        .finish()
        .unwrap();
    let mut w = NpzAppender::open(path).unwrap();
    w.set_compression(npy_serde::npz::Compression::Deflate);
    add_members!(w, members);
    w.finish().unwrap();
}

/// `NpzWriter` against `np.savez` / `np.savez_compressed` (see the module doc).
fn write_cases(dir: &Path, bench: bool) {
    let scale: f64 = env_or("NPY_BENCH_WRITE_SCALE", if bench { 1.0 } else { 0.001 });
    let reps: usize = env_or("NPY_BENCH_WRITE_REPS", 3);
    let n1 = ((20e6 * scale) as u64).max(1);
    let n2 = ((4e6 * scale) as u64).max(1);
    let n3 = ((5e6 * scale) as u64).max(1);
    let w1: Vec<f64> = (0..n1).map(|i| i as f64 * 0.5).collect();
    let w2: Vec<Rec> = (0..n2)
        .map(|i| Rec {
            id: i as i64,
            x: i as f64 * 0.5,
            y: i as f32,
            flag: (i % 251) as u8,
            v: [i as f32, (i + 1) as f32, (i + 2) as f32],
        })
        .collect();
    let id: Vec<i64> = (0..n3 as i64).collect();
    let x: Vec<f64> = (0..n3).map(|i| i as f64 * 0.5).collect();
    let y: Vec<f32> = (0..n3).map(|i| i as f32).collect();
    let flag: Vec<u8> = (0..n3).map(|i| (i % 251) as u8).collect();
    let cases: Vec<Case<'_>> = vec![
        ("W1", n1 * 8, vec![("x", Member::F64(&w1))]),
        ("W2", n2 * 33, vec![("x", Member::Rec(&w2))]),
        (
            "cols",
            n3 * 21,
            vec![
                ("id", Member::I64(&id)),
                ("x", Member::F64(&x)),
                ("y", Member::F32(&y)),
                ("flag", Member::U8(&flag)),
            ],
        ),
    ];

    let python = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty());
    let numpy = || -> Vec<(String, Duration)> {
        if python.is_none() {
            return vec![];
        }
        let args = [reps, n1 as usize, n2 as usize, n3 as usize].map(|v| v.to_string());
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_ref()).collect();
        a.push(dir.as_os_str());
        python_times(NUMPY_SAVEZ, &a)
    };
    let np_before = numpy();
    let mut ours = Vec::new();
    let mut in_line = Vec::new();
    let mut buffered = Vec::new();
    for kind in ["stored", "deflate"] {
        for (name, _, members) in &cases {
            let p = dir.join(format!("ours_{name}_{kind}.npz"));
            let d = time_settled(reps, || write_npz(&p, kind == "deflate", members));
            ours.push((format!("{name}_{kind}"), d));
            if kind == "stored" {
                let p = dir.join(format!("buffered_{name}.npz"));
                buffered.push(time_settled(reps, || {
                    write_npz_buffered(&p, false, members)
                }));
            } else {
                let p = dir.join(format!("in_line_{name}.npz"));
                in_line.push(time_settled(reps, || append_in_line(&p, members)));
            }
        }
    }
    let np_after = numpy();
    let best = |k: &str| {
        np_before
            .iter()
            .chain(&np_after)
            .filter(|(n, _)| n == k)
            .map(|(_, d)| *d)
            .min()
    };
    println!(
        "npy-serde npz write, write scale {scale}, best of {reps} (payload GB/s; NumPy before and after)"
    );
    for (label, d) in &ours {
        let (name, kind) = label.split_once('_').unwrap();
        let bytes = cases.iter().find(|c| c.0 == name).unwrap().1;
        let np_fn = if kind == "stored" {
            "np.savez"
        } else {
            "np.savez_compressed"
        };
        let size = std::fs::metadata(dir.join(format!("ours_{label}.npz")))
            .map(|m| m.len())
            .unwrap_or(0);
        let mut line = format!(
            "{name:4} {kind:7} NpzWriter::create {:6.3} GB/s ({:.3} s, {:.1} MB)",
            bytes as f64 / d.as_secs_f64() / 1e9,
            d.as_secs_f64(),
            size as f64 / 1e6
        );
        if let Some(np) = best(label) {
            let np_size = std::fs::metadata(dir.join(format!("numpy_{label}.npz")))
                .map(|m| m.len())
                .unwrap_or(0);
            line += &format!(
                "  {np_fn} {:.3} s ({:.1} MB)  {:.2}x {np_fn}",
                np.as_secs_f64(),
                np_size as f64 / 1e6,
                np.as_secs_f64() / d.as_secs_f64()
            );
            // The members decompress to NumPy's bytes.
            let mut a = NpzArchive::open(dir.join(format!("ours_{label}.npz"))).unwrap();
            let mut b = NpzArchive::open(dir.join(format!("numpy_{label}.npz"))).unwrap();
            let keys: Vec<String> = b.keys().map(String::from).collect();
            let same = keys
                .iter()
                .all(|k| a.read_raw(k).ok() == Some(b.read_raw(k).unwrap()));
            line += if same {
                "  identical"
            } else {
                "  MEMBERS DIFFER"
            };
        }
        println!("{line}");
    }
    let others = [
        ("stored", "np.savez", "new(BufWriter<File>)", &buffered),
        (
            "deflate",
            "np.savez_compressed",
            "in line (one thread, NpzAppender)",
            &in_line,
        ),
    ];
    for (kind, np_fn, what, times) in others {
        for ((name, bytes, _), d) in cases.iter().zip(times) {
            let np = best(&format!("{name}_{kind}"))
                .map(|np| format!("  {:.2}x {np_fn}", np.as_secs_f64() / d.as_secs_f64()))
                .unwrap_or_default();
            println!(
                "{name:4} {kind:7} {what} {:6.3} GB/s ({:.3} s){np}",
                *bytes as f64 / d.as_secs_f64() / 1e9,
                d.as_secs_f64()
            );
        }
    }
}

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
    let only = std::env::var("NPY_BENCH_NPZ").unwrap_or_default();
    if only != "mmap" {
        let dir = std::env::temp_dir().join(format!("npy-serde-npz-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_cases(&dir, bench);
        std::fs::remove_dir_all(&dir).ok();
    }
    if only == "write" {
        return;
    }
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
