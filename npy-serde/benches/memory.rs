//! Memory: the peak heap of `from_path` beyond its result, and of streaming 10 GB
//! record by record, both ways, in constant memory.
//!
//! A global allocator counts the bytes allocated by every thread; `VmHWM` (the process's peak
//! resident set, from `/proc/self/status`) is printed after the streaming cases, which run
//! first, before anything large is allocated.
//!
//! - streaming read: a generated `.npy` of W2 records (10 GB at scale 1, no disk involved)
//!   through `RecordReader::new`, summing a field;
//! - streaming write: the same records through `NpyWriter::write` into `io::sink()`, then into
//!   a file (10 GB on disk at scale 1, removed after) by `NpyWriter::create` and by
//!   `NpyWriter::background` over a `BufWriter<File>`;
//! - `from_path` of a W2 file (660 MB at scale 1): peak heap minus the result's size.
//!
//! Environment: `NPY_BENCH_SCALE` (float, default 1).
//!
//! Run: `cargo bench -p npy-serde --bench memory`

use std::io::Read;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

#[path = "common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::Counting;
use npy_serde::{DType, Header, NpyRecord, NpyWriter, RecordReader};
use serde::{Deserialize, Serialize};

static CURRENT: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

/// The allocator's hook: bytes freed and allocated by one call (of any thread).
fn note(freed: usize, allocated: usize) {
    let delta = allocated as i64 - freed as i64;
    let now = CURRENT.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[global_allocator]
static ALLOC: Counting = Counting(note);

/// Runs `f` and returns its result and the most bytes allocated at once beyond what was
/// allocated before it (by every thread).
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let start = CURRENT.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let r = f();
    (r, (PEAK.load(Ordering::Relaxed) - start).max(0) as u64)
}

#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy)]
struct Rec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

const W2: &str = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";

/// A `.npy` file of `n` W2 records made on the fly: the header, then one block of records
/// repeated (record `i` of the block has `x = i`).
struct Generated {
    header: Vec<u8>,
    block: Vec<u8>,
    /// Bytes handed out so far.
    pos: u64,
    len: u64,
}

impl Generated {
    fn new(n: u64) -> Generated {
        let dtype: DType = W2.parse().unwrap();
        let header = Header::new(dtype, vec![n]).to_bytes().unwrap();
        let mut block = Vec::new();
        for i in 0..32_768u32 {
            let r = Rec {
                id: i as i64,
                x: i as f64,
                y: 0.5,
                flag: 1,
                v: [1.0, 2.0, 3.0],
            };
            block.extend_from_slice(&npy_serde::to_vec(&[r]).unwrap()[header.len()..]);
        }
        let len = header.len() as u64 + n * 33;
        Generated {
            header,
            block,
            pos: 0,
            len,
        }
    }
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let h = self.header.len() as u64;
        if self.pos >= self.len {
            return Ok(0);
        }
        let n = if self.pos < h {
            let src = &self.header[self.pos as usize..];
            let n = src.len().min(buf.len());
            buf[..n].copy_from_slice(&src[..n]);
            n
        } else {
            let at = ((self.pos - h) % self.block.len() as u64) as usize;
            let src = &self.block[at..];
            let n = src.len().min(buf.len()).min((self.len - self.pos) as usize);
            buf[..n].copy_from_slice(&src[..n]);
            n
        };
        self.pos += n as u64;
        Ok(n)
    }
}

/// Writes `n` copies of `rec`, numbered.
fn fill<W: std::io::Write>(w: &mut NpyWriter<W>, n: u64, rec: Rec) {
    for i in 0..n {
        let mut r = rec;
        r.id = i as i64;
        w.write(&r).unwrap();
    }
}

fn vm_hwm() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "VmHWM: (not available)".into())
}

const MIB: f64 = 1048576.0;

fn main() {
    let scale: f64 = std::env::var("NPY_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let n_stream = (10e9 / 33.0 * scale) as u64;
    let n2 = (20e6 * scale) as u64;
    println!("npy-serde memory, scale {scale}");

    // Streaming read of 10 GB, summing a field.
    let t = Instant::now();
    let (sum, peak) = peak_of(|| {
        RecordReader::<_, Rec>::new(Generated::new(n_stream))
            .unwrap()
            .map(|r| r.unwrap().x)
            .sum::<f64>()
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "stream read  {:>6.2} GB: peak heap {:6.2} MiB, {:.2} GB/s (sum {sum})",
        n_stream as f64 * 33.0 / 1e9,
        peak as f64 / MIB,
        n_stream as f64 * 33.0 / 1e9 / secs
    );

    // Streaming write of the same records into a sink.
    let rec = Rec {
        id: 1,
        x: 0.5,
        y: 0.25,
        flag: 1,
        v: [1.0, 2.0, 3.0],
    };
    let t = Instant::now();
    let ((), peak) = peak_of(|| {
        let mut w = NpyWriter::with_len::<Rec>(std::io::sink(), n_stream).unwrap();
        for i in 0..n_stream {
            let mut r = rec;
            r.id = i as i64;
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "stream write {:>6.2} GB: peak heap {:6.2} MiB, {:.2} GB/s",
        n_stream as f64 * 33.0 / 1e9,
        peak as f64 / MIB,
        n_stream as f64 * 33.0 / 1e9 / secs
    );

    // The same records into files: `NpyWriter::create` (its writing thread, space reserved
    // ahead) and `NpyWriter::background` over a `BufWriter<File>`; each file is removed after.
    let dir = std::env::temp_dir().join(format!("npy-serde-bench-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("stream.npy");
    for what in ["create", "background(BufWriter)"] {
        let t = Instant::now();
        let ((), peak) = peak_of(|| {
            if what == "create" {
                let mut w = NpyWriter::create::<Rec>(&out).unwrap();
                fill(&mut w, n_stream, rec);
                w.finish().unwrap();
            } else {
                let f = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
                let mut w = NpyWriter::background::<Rec>(f).unwrap();
                fill(&mut w, n_stream, rec);
                w.finish().unwrap().into_inner().unwrap();
            }
        });
        let secs = t.elapsed().as_secs_f64();
        let len = std::fs::metadata(&out).unwrap().len();
        std::fs::remove_file(&out).unwrap();
        println!(
            "file write {what:<22} {:>6.2} GB: peak heap {:6.2} MiB, {:.2} GB/s",
            len as f64 / 1e9,
            peak as f64 / MIB,
            n_stream as f64 * 33.0 / 1e9 / secs
        );
    }
    println!("after streaming: {}", vm_hwm());

    // from_path: the result, plus how much more.
    let path = dir.join("w2.npy");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    std::io::copy(&mut Generated::new(n2), &mut file).unwrap();
    drop(file);
    for (what, parallel) in [("from_path", true), ("from_path, 1 thread", false)] {
        let (v, peak) = peak_of(|| {
            npy_serde::ReaderBuilder::new()
                .parallel(parallel)
                .from_path::<_, Rec>(&path)
                .unwrap()
        });
        let result = (v.capacity() * std::mem::size_of::<Rec>()) as u64;
        println!(
            "{what:<28} W2 {:.0} MB: result {:7.1} MiB, peak heap beyond it {:5.2} MiB",
            n2 as f64 * 33.0 / 1e6,
            result as f64 / MIB,
            (peak - result) as f64 / MIB
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
