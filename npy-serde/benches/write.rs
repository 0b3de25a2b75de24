//! Write throughput: `to_writer` of a whole slice and `NpyWriter` record by record, to a file in
//! a temporary directory, versus `np.save` of the same arrays measured in the same run.
//!
//! Workloads, at scale 1 (the issue's sizes):
//! - W1: `<f8`, 100M elements (800 MB)
//! - W2: 20M records `[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]`
//!   (33 bytes each, 660 MB)
//!
//! `np.save` runs before and after our cases (the faster counts). The file system's floor is
//! timed beside them: the finished bytes written with no encoding, as `np.save` writes them
//! (space reserved, one `write`) and as a writer over a plain `File` can at best (unreserved,
//! 1 MiB `write`s).
//!
//! Environment: `NPY_BENCH_SCALE` (float, default 1), `NPY_BENCH_REPS` (default 5),
//! `NPY_PYTHON` (a Python with NumPy: adds `np.save` timings, ratios and a byte-identity check),
//! `NPY_BENCH_FILTER` (time only the cases whose label, e.g. `W2 to_writer`, contains it).
//!
//! Run: `NPY_PYTHON=.venv/bin/python cargo bench -p npy-serde --bench write`

use std::fs::File;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use npy_serde::{NpyRecord, NpyWriter};
use serde::Serialize;

mod common;
use common::{env_or, gbps, time_settled};

/// `#[derive(NpyRecord)]` gives the packed layout NumPy uses for this dtype (W2), and its
/// compile-time layout lets `to_writer` use the exact tier.
#[derive(Serialize, NpyRecord, Clone, Copy)]
struct Rec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// W2 for the peer crate npyz (its own derive), written in the same run.
#[derive(npyz::Serialize, npyz::AutoSerialize, Clone, Copy)]
struct NpyzRec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

fn npyz_write<T: npyz::AutoSerialize>(path: &Path, data: &[T]) {
    use npyz::WriterBuilder;
    let f = std::io::BufWriter::new(File::create(path).unwrap());
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[data.len() as u64])
        .writer(f)
        .begin_nd()
        .unwrap();
    w.extend(data.iter()).unwrap();
    w.finish().unwrap();
}

const NUMPY_SAVE: &str = r#"
import os, sys, time
import numpy as np
reps, n1, n2, d = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
a1 = np.arange(n1, dtype='<f8') * 0.5
dt = np.dtype([('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))])
i = np.arange(n2)
a2 = np.zeros(n2, dtype=dt)
a2['id'] = i; a2['x'] = i * 0.5; a2['y'] = i; a2['flag'] = i % 251
a2['v'] = i[:, None] + np.arange(3)
for name, a in (('W1', a1), ('W2', a2)):
    p = f'{d}/numpy_{name}.npy'
    np.save(p, a)
    ts = []
    for _ in range(reps):
        os.sync()
        t = time.perf_counter(); np.save(p, a); ts.append(time.perf_counter() - t)
    print(name, min(ts), a.nbytes, flush=True)
"#;

/// Times `f` (each run after the write-back is done: [`time_settled`]) unless
/// `NPY_BENCH_FILTER` is set and `label` does not contain it (then zero).
fn time_if(label: &str, reps: usize, f: impl FnMut()) -> Duration {
    match std::env::var("NPY_BENCH_FILTER") {
        Ok(filter) if !label.contains(&*filter) => Duration::ZERO,
        _ => time_settled(reps, f),
    }
}

/// `np.save`'s best GB/s per workload (`NPY_PYTHON`), or `None` without a Python.
fn numpy_save(reps: usize, n1: u64, n2: u64, dir: &Path) -> Option<Vec<(String, f64)>> {
    let py = std::env::var_os("NPY_PYTHON").filter(|p| !p.is_empty())?;
    let out = Command::new(py)
        .args(["-c", NUMPY_SAVE])
        .arg(reps.to_string())
        .arg(n1.to_string())
        .arg(n2.to_string())
        .arg(dir)
        .output()
        .expect("run NPY_PYTHON");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let secs: f64 = f[1].parse().unwrap();
            let bytes: f64 = f[2].parse().unwrap();
            (f[0].to_string(), bytes / secs / 1e9)
        })
        .collect();
    Some(rows)
}

/// The file system's floor for a writer: `bytes` (a whole `.npy` file, already encoded)
/// written over `path`, truncating it in line as `np.save` does, in `piece`-byte `write`s, with
/// the space reserved first (`fallocate`, as `np.save` and our path writers do) or not (as a
/// writer over a plain `File` or `BufWriter` gets).
fn write_floor(path: &Path, bytes: &[u8], piece: usize, reserve: bool) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let mut f = File::create(path).unwrap();
    if reserve {
        // SAFETY: fallocate on an open file descriptor with in-range arguments; it touches no
        // memory of ours.
        let r = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                0,
                bytes.len() as libc::off_t,
            )
        };
        assert_eq!(r, 0, "fallocate");
    }
    for p in bytes.chunks(piece) {
        f.write_all(p).unwrap();
    }
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("npy-serde-bench-write-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Record by record through the exact tier (`NpyWriter::write`), into a file made by
/// `NpyWriter::create` (blocks written on a second thread, space reserved ahead).
fn stream_records<T: Serialize + NpyRecord + 'static>(path: &Path, data: &[T]) {
    let mut w = NpyWriter::create::<T>(path).unwrap();
    for r in data {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
}

/// The same into any `Write + Seek` (here a `File`, or a `BufWriter` over one, the call a
/// newcomer writes): the blocks are written on this thread.
///
/// These are timed beside `create + write` in one program on purpose: a program with writers
/// of several types is the usual case, and the record-at-a-time loop once lost a quarter of its
/// speed to it (the second writer type gave the record's encoder a second caller and LLVM
/// stopped inlining it; issue 30).
fn stream_records_on<T: Serialize + NpyRecord + 'static, W: std::io::Write + std::io::Seek>(
    w: W,
    data: &[T],
) {
    let mut w = NpyWriter::new::<T>(w).unwrap();
    for r in data {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
}

fn stream<T: Serialize + NpyRecord>(path: &Path, data: &[T]) {
    let mut w = NpyWriter::create::<T>(path).unwrap();
    for r in data {
        w.write_serde(r).unwrap();
    }
    w.finish().unwrap();
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let n1 = (100e6 * scale) as u64;
    let n2 = (20e6 * scale) as u64;
    let dir = tempdir();

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
    let b1 = n1 * 8;
    let b2 = n2 * 33;

    let numpy_before = numpy_save(reps, n1, n2, &dir);
    let p1 = dir.join("ours_W1.npy");
    let p2 = dir.join("ours_W2.npy");
    let ps = dir.join("stream.npy");
    let mut ours: Vec<(&str, &str, u64, Duration)> = vec![
        (
            "W1",
            "to_path",
            b1,
            time_if("W1 to_path", reps, || {
                npy_serde::to_path(&p1, black_box(&w1)).unwrap()
            }),
        ),
        (
            "W1",
            "create + write_serde",
            b1,
            time_if("W1 create + write_serde", reps, || {
                stream(&ps, black_box(&w1))
            }),
        ),
        (
            "W2",
            "to_path",
            b2,
            time_if("W2 to_path", reps, || {
                npy_serde::to_path(&p2, black_box(&w2)).unwrap()
            }),
        ),
        (
            "W2",
            "create + write_serde",
            b2,
            time_if("W2 create + write_serde", reps, || {
                stream(&ps, black_box(&w2))
            }),
        ),
        (
            "W1",
            "create + write",
            b1,
            time_if("W1 create + write", reps, || {
                stream_records(&ps, black_box(&w1))
            }),
        ),
        (
            "W2",
            "create + write",
            b2,
            time_if("W2 create + write", reps, || {
                stream_records(&ps, black_box(&w2))
            }),
        ),
        (
            "W2",
            "new(File) + write",
            b2,
            time_if("W2 new(File) + write", reps, || {
                stream_records_on(File::create(&ps).unwrap(), black_box(&w2))
            }),
        ),
        (
            "W2",
            "new(BufWriter) + write",
            b2,
            time_if("W2 new(BufWriter) + write", reps, || {
                let f = std::io::BufWriter::new(File::create(&ps).unwrap());
                stream_records_on(f, black_box(&w2))
            }),
        ),
        (
            "W2",
            "background(BufWriter) + write",
            b2,
            time_if("W2 background(BufWriter) + write", reps, || {
                let f = std::io::BufWriter::new(File::create(&ps).unwrap());
                let mut w = NpyWriter::background::<Rec>(f).unwrap();
                for r in black_box(&w2) {
                    w.write(r).unwrap();
                }
                w.finish().unwrap().into_inner().unwrap();
            }),
        ),
    ];
    let w2z: Vec<NpyzRec> = w2
        .iter()
        .map(|r| NpyzRec {
            id: r.id,
            x: r.x,
            y: r.y,
            flag: r.flag,
            v: r.v,
        })
        .collect();
    ours.push((
        "W2",
        "npyz 0.9 (peer crate)",
        b2,
        time_if("W2 npyz", reps, || npyz_write(&ps, black_box(&w2z))),
    ));
    // Encoding alone, into memory already touched (no file system).
    let mut sink = Vec::with_capacity(b2 as usize + 4096);
    let enc = time_if("W2 encode", reps, || {
        sink.clear();
        npy_serde::to_writer(&mut sink, black_box(&w2)).unwrap();
    });
    ours.push(("W2", "to_writer(Vec, reused)", b2, enc));
    let mut sink = Vec::with_capacity(b1 as usize + 4096);
    let enc = time_if("W1 encode", reps, || {
        sink.clear();
        npy_serde::to_writer(&mut sink, black_box(&w1)).unwrap();
    });
    ours.push(("W1", "to_writer(Vec, reused)", b1, enc));
    // The file system's floor: the finished bytes written with no encoding at all. Reserved
    // and in one `write` is what `np.save` does; unreserved in 1 MiB writes is what a writer
    // over a plain `File` or `BufWriter` can at best do on the calling thread.
    let pf = dir.join("floor.npy");
    let f1 = npy_serde::to_vec(&w1).unwrap();
    let f2 = npy_serde::to_vec(&w2).unwrap();
    for (w, bytes, b) in [("W1", &f1, b1), ("W2", &f2, b2)] {
        let label = format!("{w} floor: write, reserved");
        let d = time_if(&label, reps, || write_floor(&pf, bytes, usize::MAX, true));
        ours.push((w, "floor: write, reserved", b, d));
    }
    let d = time_if("W2 floor: 1 MiB writes, unreserved", reps, || {
        write_floor(&pf, &f2, 1 << 20, false)
    });
    ours.push(("W2", "floor: 1 MiB writes, unreserved", b2, d));

    println!("npy-serde write, scale {scale}, best of {reps} (payload GB/s)");
    // np.save runs before and after our cases (the faster of the two counts), so that a slow
    // phase of the machine does not favour either side.
    let numpy: Vec<(String, f64)> = match numpy_before {
        None => {
            println!("(set NPY_PYTHON to compare with np.save)");
            Vec::new()
        }
        Some(before) => {
            let after = numpy_save(reps, n1, n2, &dir).unwrap_or_default();
            before
                .into_iter()
                .map(|(w, a)| {
                    let b = after.iter().find(|(v, _)| *v == w).map_or(0.0, |x| x.1);
                    (w, a.max(b))
                })
                .collect()
        }
    };
    for (name, gb) in &numpy {
        println!(
            "{name:3} {:34} {gb:6.2} GB/s",
            "np.save (best of before and after)"
        );
    }
    for (w, what, bytes, d) in &ours {
        if d.is_zero() {
            continue; // filtered out
        }
        let g = gbps(*bytes, *d);
        match numpy.iter().find(|(n, _)| n == w) {
            Some((_, np)) => println!(
                "{w:3} {what:34} {g:6.2} GB/s  ratio to np.save {:.2}",
                g / np
            ),
            None => println!("{w:3} {what:34} {g:6.2} GB/s"),
        }
    }
    if !numpy.is_empty() {
        for w in ["W1", "W2"] {
            // A filtered run may not have written ours.
            if let Ok(a) = std::fs::read(dir.join(format!("ours_{w}.npy"))) {
                let b = std::fs::read(dir.join(format!("numpy_{w}.npy"))).unwrap();
                println!("{w} bytes identical to np.save: {}", a == b);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
