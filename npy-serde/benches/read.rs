//! Read throughput: serde into `Vec<f64>`/`Vec<Rec>` from a path (`deserialize_path::<Vec<_>>`,
//! `from_path_serde`, which allocates the `Vec` once, and `from_path`, which adds the
//! exact-layout tier of `NpyRecord` types), record by record through `RecordReader`, and from
//! a memory map (`deserialize`, `to_vec_serde`, `to_vec`), versus `np.load` measured in the same
//! run.
//!
//! Workloads (written to a temporary directory; page cache warm), at scale 1:
//! - W1: `<f8`, 100M elements (800 MB)
//! - W2: 20M records `[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]`
//!   (660 MB)
//! - W3: W2 big-endian
//!
//! Times are the best of `NPY_BENCH_REPS` runs after a warm-up, on both sides.
//!
//! Environment: `NPY_BENCH_SCALE` (float, default 1), `NPY_BENCH_REPS` (default 5),
//! `NPY_PYTHON` (a Python with NumPy: adds np.load timings and ratios), `NPY_BENCH_KEEP=1`
//! (keep the files and print their directory).
//!
//! Run: `NPY_PYTHON=.venv/bin/python cargo bench -p npy-serde --bench read`

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use npy_serde::{DType, Header, MmapArray, NpyRecord, RecordReader};
use serde::Deserialize;

mod common;
use common::{gbps, time};

/// `Deserialize` drives every case; `NpyRecord` (its dtype is W2's) is what lets
/// `from_path`/`to_vec` use the exact tier.
#[derive(Deserialize, NpyRecord, Clone, Copy, Debug)]
#[allow(dead_code)] // fields are read through black_box
struct Rec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// `Rec` as the file lays it out: `#[repr(C, packed)]` makes its memory W2's 33-byte
/// records (the derive checks the offsets at compile time), so `from_path` reads it with one
/// copy, as it reads plain numbers. W3 (big-endian) still decodes, swapping each field.
#[derive(Deserialize, NpyRecord, Clone, Copy, Debug)]
#[repr(C, packed)]
#[allow(dead_code)] // fields are read through black_box
struct PackedRec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// W2 for the peer crate npyz (its own derive), timed on the same files.
#[derive(npyz::Deserialize, Clone, Copy, Debug)]
#[allow(dead_code)] // fields are read through black_box
struct NpyzRec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

fn write_file(path: &Path, descr: &str, n: u64, mut fill: impl FnMut(u64, &mut Vec<u8>)) {
    let dtype: DType = descr.parse().unwrap();
    let header = Header::new(dtype, vec![n]);
    let mut w = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    w.write_all(&header.to_bytes().unwrap()).unwrap();
    let mut buf = Vec::with_capacity(1 << 20);
    for i in 0..n {
        fill(i, &mut buf);
        if buf.len() >= 1 << 20 {
            w.write_all(&buf).unwrap();
            buf.clear();
        }
    }
    w.write_all(&buf).unwrap();
    w.flush().unwrap();
}

fn w2_fill(big: bool) -> impl FnMut(u64, &mut Vec<u8>) {
    move |i, b| {
        macro_rules! put {
            ($v:expr) => {
                if big {
                    b.extend_from_slice(&$v.to_be_bytes())
                } else {
                    b.extend_from_slice(&$v.to_le_bytes())
                }
            };
        }
        put!(i as i64);
        put!(i as f64 * 0.5);
        put!(i as f32);
        b.push((i % 251) as u8);
        for k in 0..3 {
            put!((i + k) as f32);
        }
    }
}

fn numpy_reference(python: &str, reps: usize, files: &[&Path]) -> Vec<Option<Duration>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/numpy_ref.py");
    let out = Command::new(python)
        .arg(script)
        .arg(reps.to_string())
        .args(files)
        .output();
    let Ok(out) = out else {
        eprintln!("cannot run {python}");
        return vec![None; files.len()];
    };
    if !out.status.success() {
        eprintln!(
            "numpy_ref.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return vec![None; files.len()];
    }
    let text = String::from_utf8_lossy(&out.stdout);
    files
        .iter()
        .map(|f| {
            text.lines()
                .find(|l| l.starts_with(&*f.to_string_lossy()))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|s| s.parse::<f64>().ok())
                .map(Duration::from_secs_f64)
        })
        .collect()
}

/// The floor for reading W2 into a padded struct such as `Rec` (40 bytes): what `from_path`
/// does with decoding taken out. The file's records are read in 128 KiB blocks on every core
/// (positional reads, as `from_path` does) and each record's 33 bytes are copied into a
/// 40-byte slot of fresh memory; no field is looked at. Against `np.load`, which fills 33 bytes
/// a record with one copy, the extra 7 bytes a record of fresh memory are what is left.
fn floor_padded(path: &Path) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let f = File::open(path).unwrap();
    let mut head = vec![0u8; 4096.min(f.metadata().unwrap().len() as usize)];
    f.read_exact_at(&mut head, 0).unwrap();
    let h = npy_serde::header::parse_header(&head, &Default::default()).unwrap();
    let n = h.header.count().unwrap() as usize;
    // `vec![0u8; _]` allocates zeroed memory (calloc: fresh pages the kernel zeroes on first
    // touch), like any fresh allocation of this size; `vec![[0u8; 40]; n]` would fill it here.
    let mut out = vec![0u8; n * 40];
    // NumPy and `from_path` ask for transparent huge pages for large arrays; so does the floor.
    let at = out.as_mut_ptr() as usize;
    let page = at.next_multiple_of(4096);
    if out.len() > page - at {
        // SAFETY: madvise only changes how the kernel backs pages of our own allocation (the
        // range starts inside `out` and the length does not pass its end); it reads and writes
        // no memory.
        unsafe {
            libc::madvise(
                page as *mut libc::c_void,
                out.len() - (page - at),
                libc::MADV_HUGEPAGE,
            )
        };
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per_block = (128 << 10) / 33;
    let share = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (t, part) in out.as_chunks_mut::<40>().0.chunks_mut(share).enumerate() {
            let f = &f;
            let start = h.data_offset + (t * share * 33) as u64;
            s.spawn(move || {
                let mut buf = vec![0u8; per_block * 33];
                for (b, slots) in part.chunks_mut(per_block).enumerate() {
                    let bytes = &mut buf[..slots.len() * 33];
                    f.read_exact_at(bytes, start + (b * per_block * 33) as u64)
                        .unwrap();
                    let (recs, _) = bytes.as_chunks::<33>();
                    for (slot, rec) in slots.iter_mut().zip(recs) {
                        slot[..33].copy_from_slice(rec);
                    }
                }
            });
        }
    });
    out
}

fn main() {
    // `cargo test --benches` runs bench binaries with --bench absent: keep that quick.
    let scale: f64 = std::env::var("NPY_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if std::env::args().any(|a| a == "--bench") {
            1.0
        } else {
            0.001
        });
    let reps: usize = std::env::var("NPY_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let n1 = ((100_000_000.0 * scale) as u64).max(1);
    let n2 = ((20_000_000.0 * scale) as u64).max(1);

    let dir: PathBuf = std::env::temp_dir().join(format!("npy-serde-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w1 = dir.join("w1.npy");
    let w2 = dir.join("w2.npy");
    let w3 = dir.join("w3.npy");
    write_file(&w1, "<f8", n1, |i, b| {
        b.extend_from_slice(&(i as f64).to_le_bytes())
    });
    let w2_descr = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";
    write_file(&w2, w2_descr, n2, w2_fill(false));
    write_file(&w3, &w2_descr.replace('<', ">"), n2, w2_fill(true));
    let b1 = n1 * 8;
    let b2 = n2 * 33;

    let python = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty());
    let before = match &python {
        Some(py) => numpy_reference(py, reps, &[&w1, &w2, &w3]),
        None => vec![None; 3],
    };
    println!("npy-serde read benchmark: W1 {n1} x <f8 ({b1} B), W2/W3 {n2} x 33 B ({b2} B), best of {reps}");
    let mut rows: Vec<(String, u64, Duration, usize)> = Vec::new();
    // (label, bytes, time, index of the workload for the np.load ratio)
    // `NPY_BENCH_FILTER`: run only the cases whose label contains it (e.g. under callgrind).
    let filter = std::env::var("NPY_BENCH_FILTER").unwrap_or_default();
    let mut run =
        |label: String, bytes: u64, k: usize, f: &mut dyn FnMut() -> Box<dyn std::any::Any>| {
            if label.contains(&*filter) {
                rows.push((label, bytes, time(reps, &mut *f), k));
            }
        };
    run("W1 npyz 0.9 into_vec::<f64>".into(), b1, 0, &mut || {
        Box::new({
            let f = std::io::BufReader::new(File::open(&w1).unwrap());
            npyz::NpyFile::new(f).unwrap().into_vec::<f64>().unwrap()
        })
    });
    run(
        "W2 npyz 0.9 into_vec::<Rec> (derive)".into(),
        b2,
        1,
        &mut || {
            Box::new({
                let f = std::io::BufReader::new(File::open(&w2).unwrap());
                npyz::NpyFile::new(f)
                    .unwrap()
                    .into_vec::<NpyzRec>()
                    .unwrap()
            })
        },
    );
    run("W1 deserialize_path -> Vec<f64>".into(), b1, 0, &mut || {
        Box::new(npy_serde::deserialize_path::<_, Vec<f64>>(&w1).unwrap())
    });
    run("W1 from_path_serde -> Vec<f64>".into(), b1, 0, &mut || {
        Box::new(npy_serde::from_path_serde::<_, f64>(&w1).unwrap())
    });
    run("W1 from_path -> Vec<f64>".into(), b1, 0, &mut || {
        Box::new(npy_serde::from_path::<_, f64>(&w1).unwrap())
    });
    run(
        "W1 RecordReader::new_serde (sum)".into(),
        b1,
        0,
        &mut || {
            Box::new({
                let r = RecordReader::<_, f64>::new_serde(File::open(&w1).unwrap()).unwrap();
                r.map(|x| x.unwrap()).sum::<f64>()
            })
        },
    );
    run("W1 mmap deserialize -> Vec<f64>".into(), b1, 0, &mut || {
        Box::new({
            MmapArray::open(&w1)
                .unwrap()
                .deserialize::<Vec<f64>>()
                .unwrap()
        })
    });
    run("W1 mmap to_vec -> Vec<f64>".into(), b1, 0, &mut || {
        Box::new(MmapArray::open(&w1).unwrap().to_vec::<f64>().unwrap())
    });
    for (name, path, k) in [("W2", &w2, 1usize), ("W3", &w3, 2)] {
        run(
            format!("{name} deserialize_path -> Vec<Rec>"),
            b2,
            k,
            &mut || Box::new(npy_serde::deserialize_path::<_, Vec<Rec>>(path).unwrap()),
        );
        run(
            format!("{name} from_path_serde -> Vec<Rec>"),
            b2,
            k,
            &mut || Box::new(npy_serde::from_path_serde::<_, Rec>(path).unwrap()),
        );
        run(
            format!("{name} from_path_serde, 1 thread"),
            b2,
            k,
            &mut || {
                Box::new(
                    npy_serde::ReaderBuilder::new()
                        .parallel(false)
                        .from_path_serde::<_, Rec>(path)
                        .unwrap(),
                )
            },
        );
        run(format!("{name} from_path -> Vec<Rec>"), b2, k, &mut || {
            Box::new(npy_serde::from_path::<_, Rec>(path).unwrap())
        });
        run(
            format!("{name} from_path -> Vec<PackedRec>"),
            b2,
            k,
            &mut || Box::new(npy_serde::from_path::<_, PackedRec>(path).unwrap()),
        );
        if name == "W2" {
            run(
                "W2 floor: blocks copied into fresh 40-byte slots".into(),
                b2,
                k,
                &mut || Box::new(floor_padded(path)),
            );
        }
        run(format!("{name} from_path, 1 thread"), b2, k, &mut || {
            Box::new(
                npy_serde::ReaderBuilder::new()
                    .parallel(false)
                    .from_path::<_, Rec>(path)
                    .unwrap(),
            )
        });
        run(
            format!("{name} deserialize_reader(File) -> Vec<Rec>"),
            b2,
            k,
            &mut || {
                Box::new({
                    npy_serde::deserialize_reader::<_, Vec<Rec>>(File::open(path).unwrap()).unwrap()
                })
            },
        );
        run(
            format!("{name} RecordReader::new_serde (sum x)"),
            b2,
            k,
            &mut || {
                Box::new({
                    let r = RecordReader::<_, Rec>::new_serde(File::open(path).unwrap()).unwrap();
                    r.map(|x| x.unwrap().x).sum::<f64>()
                })
            },
        );
        run(
            format!("{name} RecordReader::new (sum x)"),
            b2,
            k,
            &mut || {
                Box::new({
                    let r = RecordReader::<_, Rec>::new(File::open(path).unwrap()).unwrap();
                    r.map(|x| x.unwrap().x).sum::<f64>()
                })
            },
        );
        run(format!("{name} mmap records (sum x)"), b2, k, &mut || {
            Box::new({
                let m = MmapArray::open(path).unwrap();
                m.records::<Rec>()
                    .unwrap()
                    .map(|x| x.unwrap().x)
                    .sum::<f64>()
            })
        });
        // The same sums in a `for` loop (one `next` per element, no internal iteration).
        run(
            format!("{name} RecordReader::new_serde (for loop)"),
            b2,
            k,
            &mut || {
                Box::new({
                    let mut sum = 0.0;
                    for r in RecordReader::<_, Rec>::new_serde(File::open(path).unwrap()).unwrap() {
                        sum += r.unwrap().x;
                    }
                    sum
                })
            },
        );
        run(
            format!("{name} RecordReader::new (for loop)"),
            b2,
            k,
            &mut || {
                Box::new({
                    let mut sum = 0.0;
                    let r = RecordReader::<_, Rec>::new(File::open(path).unwrap());
                    for r in r.unwrap() {
                        sum += r.unwrap().x;
                    }
                    sum
                })
            },
        );
        run(format!("{name} mmap record(i) (sum x)"), b2, k, &mut || {
            Box::new({
                let m = MmapArray::open(path).unwrap();
                (0..m.len())
                    .map(|i| m.record::<Rec>(i).unwrap().x)
                    .sum::<f64>()
            })
        });
        run(
            format!("{name} mmap records_serde (sum x)"),
            b2,
            k,
            &mut || {
                Box::new({
                    let m = MmapArray::open(path).unwrap();
                    m.records_serde::<Rec>()
                        .unwrap()
                        .map(|x| x.unwrap().x)
                        .sum::<f64>()
                })
            },
        );
        run(
            format!("{name} mmap deserialize -> Vec<Rec>"),
            b2,
            k,
            &mut || {
                Box::new({
                    MmapArray::open(path)
                        .unwrap()
                        .deserialize::<Vec<Rec>>()
                        .unwrap()
                })
            },
        );
        run(
            format!("{name} mmap to_vec_serde -> Vec<Rec>"),
            b2,
            k,
            &mut || {
                Box::new(
                    MmapArray::open(path)
                        .unwrap()
                        .to_vec_serde::<Rec>()
                        .unwrap(),
                )
            },
        );
        run(
            format!("{name} mmap to_vec -> Vec<Rec>"),
            b2,
            k,
            &mut || Box::new(MmapArray::open(path).unwrap().to_vec::<Rec>().unwrap()),
        );
    }

    // np.load runs before and after our cases (the best of both counts), so that a slow
    // phase of the machine does not favour either side.
    let reference: Vec<Option<Duration>> = match &python {
        Some(py) => numpy_reference(py, reps, &[&w1, &w2, &w3])
            .into_iter()
            .zip(before)
            .map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            })
            .collect(),
        None => vec![None; 3],
    };
    for (i, name) in ["W1", "W2", "W3"].iter().enumerate() {
        if let Some(d) = reference[i] {
            let bytes = if i == 0 { b1 } else { b2 };
            println!(
                "{:<44} {:>7.2} GB/s",
                format!("{name} np.load"),
                gbps(bytes, d)
            );
        }
    }
    for (label, bytes, d, k) in &rows {
        let ratio = reference[*k]
            .map(|r| format!("  {:.2}x np.load", r.as_secs_f64() / d.as_secs_f64()))
            .unwrap_or_default();
        println!("{label:<44} {:>7.2} GB/s{ratio}", gbps(*bytes, *d));
    }
    if std::env::var("NPY_BENCH_KEEP").is_ok_and(|v| v == "1") {
        println!("files kept in {}", dir.display());
    } else {
        std::fs::remove_dir_all(&dir).ok();
    }
}
