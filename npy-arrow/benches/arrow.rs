//! The Arrow bridge on W2 (20M records `[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),
//! ('v','<f4',(3,))]`, 660 MB at scale 1): into RecordBatches (all columns, one column, from a
//! path and from a shared map), and with feature `parquet` to Parquet (uncompressed, snappy) and
//! Parquet back to `.npy`; against NumPy and pyarrow timed in the same run (`NPY_PYTHON` with
//! numpy and pyarrow): `np.load`, `np.load` + `pa.table`, + `pq.write_table`, and
//! `pq.read_table` + the record array + `np.save`. Parquet is written both by the parquet
//! crate's `ArrowWriter` (columns encoded one after the other) and by `npy_arrow::parquet::
//! ParquetWriter` (what `npy convert` uses: columns on all cores), and read both by the parquet
//! crate's reader on one thread and by `npy_arrow::parquet::ParquetReader` (row groups on all
//! cores), so that each ratio has its before and after in the same run. Then the peak resident
//! set of `npy convert` (the binary) both ways and into an `.npz` member, against "64 MiB plus
//! one row group".
//!
//! Environment: `NPY_BENCH_SCALE` (default 1), `NPY_BENCH_REPS` (rounds, default 5: each times
//! every case of ours once and then the Python side once; the best round of each is kept),
//! `NPY_PYTHON`.
//! Run: `cargo build --release -p npy-cli --features parquet` (the binary whose memory is
//! measured), then `NPY_PYTHON=.venv/bin/python NPY_BENCH_SCALE=0.25 cargo bench -p npy-arrow --bench arrow`

#[cfg(feature = "parquet")]
use std::fs::File;
#[cfg(feature = "parquet")]
use std::io::{BufWriter, Write};
use std::path::Path;
#[cfg(feature = "parquet")]
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use npy_arrow::{BatchReaderBuilder, NpyBatchReader};
use npy_serde::MmapArray;

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, python_times, time, write_w2};

fn drain(mut r: NpyBatchReader<'_>) -> usize {
    let mut rows = 0;
    while let Some(b) = r.next_batch().unwrap() {
        rows += std::hint::black_box(b).num_rows();
    }
    rows
}

const PYTHON: &str = r#"
import sys, time, numpy as np, pyarrow as pa, pyarrow.parquet as pq
reps, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def best(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return min(ts)
def table():
    a = np.load(path)
    return pa.table({n: (a[n] if a[n].ndim == 1 else pa.FixedSizeListArray.from_arrays(a[n].reshape(-1), a[n].shape[1])) for n in a.dtype.names})
print('np.load', best(lambda: np.load(path)))
print('np.load+pa.table', best(table))
print('np.load+x', best(lambda: pa.array(np.load(path)['x'])))
for c in ['none', 'snappy']:
    print('pq.write_table.' + c, best(lambda: pq.write_table(table(), out + '.' + c + '.parquet', compression=c)))
def back():
    t = pq.read_table(out + '.none.parquet')
    a = np.empty(t.num_rows, dtype=np.load(path, mmap_mode='r').dtype)
    for n in t.column_names:
        col = t[n].combine_chunks()
        a[n] = col.flatten().to_numpy().reshape(a[n].shape) if pa.types.is_fixed_size_list(col.type) else col.to_numpy()
    np.save(out + '.py.npy', a)
print('pq.read_table+np.save', best(back))
"#;

fn python(reps: usize, w2: &Path, out: &Path) -> Vec<(String, Duration)> {
    let reps = reps.to_string();
    python_times(PYTHON, &[reps.as_ref(), w2.as_os_str(), out.as_os_str()])
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let reps: usize = env_or("NPY_BENCH_REPS", 5);
    let n = (20_000_000.0 * scale) as u64;
    let dir = std::env::temp_dir().join(format!("npy-arrow-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w2 = dir.join("w2.npy");
    write_w2(&w2, n);
    println!(
        "W2: {n} records, {} MB",
        std::fs::metadata(&w2).unwrap().len() >> 20
    );

    // First, while this process is small: a child's peak resident set counts the parent's at
    // the fork.
    #[cfg(feature = "parquet")]
    memory_cases(&w2, &dir);

    // Rounds: each times every case of ours once (after a warm-up run), then NumPy and pyarrow
    // once each; the best of the rounds on both sides, so that both sample the same stretch
    // of a machine whose load changes (a shared 2-core box: np.load alone varied 2x between
    // runs).
    let map = Arc::new(MmapArray::open(&w2).unwrap());
    let mut ours: Vec<(&'static str, Duration)> = Vec::new();
    let mut py: Vec<(String, Duration)> = Vec::new();
    for _ in 0..reps {
        for (k, d) in round(&w2, &dir, &map) {
            match ours.iter_mut().find(|(n, _)| *n == k) {
                Some((_, b)) => *b = (*b).min(d),
                None => ours.push((k, d)),
            }
        }
        for (k, d) in python(1, &w2, &dir.join("py")) {
            match py.iter_mut().find(|(n, _)| *n == k) {
                Some((_, b)) => *b = (*b).min(d),
                None => py.push((k, d)),
            }
        }
    }
    let of = |k: &str| ours.iter().find(|(n, _)| *n == k).map(|(_, d)| *d).unwrap();
    let (all, one) = (
        of("batches, all columns (open)"),
        of("batches, column x (open)"),
    );
    let get = |k: &str| py.iter().find(|(n, _)| n == k).map(|(_, d)| *d);
    for (name, d) in &ours {
        print!("{name:44} {:8.3} s", d.as_secs_f64());
        let refs: &[&str] = match *name {
            "batches, all columns (open)"
            | "batches, all columns, one thread (open)"
            | "batches, all columns (shared map)" => &["np.load", "np.load+pa.table"],
            "batches, column x (open)" | "batches, column x (shared map)" => {
                &["np.load", "np.load+x"]
            }
            "to parquet, uncompressed" | "to parquet, uncompressed, ArrowWriter" => {
                &["pq.write_table.none"]
            }
            "to parquet, snappy" | "to parquet, snappy, ArrowWriter" => &["pq.write_table.snappy"],
            "parquet to .npy" | "parquet to .npy, one reader thread" => &["pq.read_table+np.save"],
            _ => &[],
        };
        for r in refs {
            if let Some(t) = get(r) {
                print!(
                    "   {:.2}x {r} ({:.3} s)",
                    t.as_secs_f64() / d.as_secs_f64(),
                    t.as_secs_f64()
                );
            }
        }
        println!();
    }
    println!(
        "column x vs all columns (open): {:.2}x",
        all.as_secs_f64() / one.as_secs_f64()
    );
    let (all_map, one_map) = (
        of("batches, all columns (shared map)"),
        of("batches, column x (shared map)"),
    );
    println!(
        "column x vs all columns (shared map): {:.2}x",
        all_map.as_secs_f64() / one_map.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Peak memory of `npy convert` (the real binary, feature `parquet`) on W2 both ways and into an
/// `.npz` member: the child's peak resident set (`wait4`; it includes this process's resident
/// set at the fork, so this runs first), against the bound "64 MiB plus one row group" (the
/// largest row group's uncompressed bytes, from the Parquet footer).
#[cfg(feature = "parquet")]
fn memory_cases(w2: &Path, dir: &Path) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    // The tool is the npy-cli crate's binary: `NPY_BIN`, or `npy` beside this bench's
    // directory (`target/release/npy` after `cargo build --release -p npy-cli --features parquet`).
    let npy = std::env::var_os("NPY_BIN")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.join("npy"))
        });
    let Some(npy) = npy.filter(|p| p.is_file()) else {
        println!(
            "npy convert, peak resident set: skipped (no npy binary: run \
             `cargo build --release -p npy-cli --features parquet` first, or set NPY_BIN)"
        );
        return;
    };
    let npy = &npy;
    let rss = |args: &[&std::ffi::OsStr]| -> f64 {
        // Reaped by `wait4` below, which also gives its resource usage.
        #[allow(clippy::zombie_processes)]
        let child = Command::new(npy)
            .arg("convert")
            .args(args)
            .spawn()
            .expect("npy runs");
        let mut status = 0;
        // SAFETY: an all-zero `rusage` is a valid value of the plain C struct, which `wait4`
        // fills in for the child just spawned (and not waited for by anything else).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `usage` are valid for writes for the duration of the call.
        let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
        assert!(pid > 0 && status == 0, "npy {args:?} failed ({status})");
        usage.ru_maxrss as f64 / 1024.0
    };
    let mb = |p: &Path| std::fs::metadata(p).map(|m| m.len() >> 20).unwrap_or(0);
    let pq = dir.join("mem.parquet");
    let back = dir.join("mem.npy");
    let npz = dir.join("mem.npz");
    let member = {
        let mut s = npz.clone().into_os_string();
        s.push(":w2");
        s
    };
    let own = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_string();
            l.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .unwrap_or(0.0)
        / 1024.0;
    println!(
        "npy convert, peak resident set (W2 {} MB; this process {own:.1} MiB at the fork):",
        mb(w2)
    );
    for c in ["snappy", "none"] {
        let to = rss(&[
            w2.as_os_str(),
            pq.as_os_str(),
            "--compression".as_ref(),
            c.as_ref(),
        ]);
        let rg = SerializedFileReader::new(File::open(&pq).unwrap())
            .unwrap()
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.total_byte_size())
            .max()
            .unwrap_or(0) as f64
            / (1 << 20) as f64;
        let from = rss(&[pq.as_os_str(), back.as_os_str()]);
        let into = rss(&[pq.as_os_str(), member.as_os_str()]);
        println!(
            "  {c:7} .npy -> .parquet {to:6.1} MiB, .parquet -> .npy {from:6.1} MiB, \
             -> .npz:KEY {into:6.1} MiB; bound 64 MiB + one row group ({rg:.1} MiB) = {:.1} MiB",
            64.0 + rg
        );
        let _ = std::fs::remove_file(&back);
        let _ = std::fs::remove_file(&npz);
    }
    let _ = std::fs::remove_file(&pq);
}

/// One round of our cases, each timed once after a warm-up run.
fn round(w2: &Path, dir: &Path, map: &Arc<MmapArray>) -> Vec<(&'static str, Duration)> {
    #[cfg(not(feature = "parquet"))]
    let _ = dir;
    let mut ours: Vec<(&'static str, Duration)> = Vec::new();
    let all = time(1, || drain(NpyBatchReader::open(w2).unwrap()));
    ours.push(("batches, all columns (open)", all));
    let serial = time(1, || {
        drain(BatchReaderBuilder::new().parallel(false).open(w2).unwrap())
    });
    ours.push(("batches, all columns, one thread (open)", serial));
    let one = time(1, || {
        drain(BatchReaderBuilder::new().columns(["x"]).open(w2).unwrap())
    });
    ours.push(("batches, column x (open)", one));
    let mapped = time(1, || {
        drain(NpyBatchReader::from_mmap_arc(map.clone()).unwrap())
    });
    ours.push(("batches, all columns (shared map)", mapped));
    let one_map = time(1, || {
        drain(
            BatchReaderBuilder::new()
                .columns(["x"])
                .from_mmap_arc(map.clone())
                .unwrap(),
        )
    });
    ours.push(("batches, column x (shared map)", one_map));
    for c in ["id", "x", "y", "flag", "v"] {
        let d = time(1, || {
            drain(
                BatchReaderBuilder::new()
                    .columns([c])
                    .from_mmap_arc(map.clone())
                    .unwrap(),
            )
        });
        let name: &'static str =
            Box::leak(format!("batches, column {c} (shared map)").into_boxed_str());
        ours.push((name, d));
    }
    #[cfg(feature = "parquet")]
    parquet_cases(1, w2, dir, &mut ours);

    ours
}

#[cfg(feature = "parquet")]
fn parquet_cases(reps: usize, w2: &Path, dir: &Path, ours: &mut Vec<(&'static str, Duration)>) {
    use npy_arrow::parquet::{ParquetReader, ParquetWriter};
    use npy_arrow::NpyBatchWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    for (name, serial, c) in [
        (
            "to parquet, uncompressed",
            "to parquet, uncompressed, ArrowWriter",
            Compression::UNCOMPRESSED,
        ),
        (
            "to parquet, snappy",
            "to parquet, snappy, ArrowWriter",
            Compression::SNAPPY,
        ),
    ] {
        let props = || WriterProperties::builder().set_compression(c).build();
        // The parquet crate's own writer: a row group's columns encoded one after the other.
        let out = dir.join(format!("{name}.serial.parquet"));
        let d = time(reps, || {
            let r = NpyBatchReader::open(w2).unwrap();
            let mut w = ArrowWriter::try_new(
                File::create(&out).unwrap(),
                r.schema_ref().clone(),
                Some(props()),
            )
            .unwrap();
            for b in r {
                w.write(&b.unwrap()).unwrap();
            }
            w.close().unwrap();
        });
        ours.push((serial, d));
        let _ = std::fs::remove_file(&out);
        // What `npy convert` uses: the columns on all cores.
        let out = dir.join(format!("{name}.parquet"));
        let d = time(reps, || {
            let r = NpyBatchReader::open(w2).unwrap();
            let f = BufWriter::with_capacity(1 << 20, File::create(&out).unwrap());
            let mut w = ParquetWriter::new(f, r.schema_ref().clone(), Some(props())).unwrap();
            for b in r {
                w.write(&b.unwrap()).unwrap();
            }
            w.finish().unwrap().flush().unwrap();
        });
        ours.push((name, d));
    }
    let pq = dir.join("to parquet, uncompressed.parquet");
    let back = dir.join("back.npy");
    // The parquet crate's reader on one thread, into NpyBatchWriter.
    let d = time(reps, || {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&pq).unwrap()).unwrap();
        let schema = b.schema().clone();
        let r = b.with_batch_size(65_536).build().unwrap();
        let mut w = NpyBatchWriter::create(&back, &schema).unwrap();
        for b in r {
            w.write(&b.unwrap()).unwrap();
        }
        w.finish().unwrap();
    });
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(w2).unwrap());
    ours.push(("parquet to .npy, one reader thread", d));
    // What `npy convert` uses: row groups decoded on all cores.
    let d = time(reps, || {
        let r = ParquetReader::open(&pq, 65_536).unwrap();
        let mut w = NpyBatchWriter::create(&back, r.schema_ref()).unwrap();
        for b in r {
            w.write(&b.unwrap()).unwrap();
        }
        w.finish().unwrap();
    });
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(w2).unwrap());
    ours.push(("parquet to .npy", d));
}
