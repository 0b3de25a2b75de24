//! Helpers shared by the benches (each bench includes this file as `mod common;`).

#![allow(dead_code)] // each bench uses its own subset

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Best of `reps` runs after a warm-up (page cache, allocator): interference on a shared
/// machine only adds time. The result of each run is dropped after the clock stops.
pub fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> Duration {
    black_box(f());
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            let out = f();
            let d = t.elapsed();
            drop(black_box(out));
            d
        })
        .min()
        .unwrap_or_default()
}

/// Like [`time`] for runs that write files: each run (the warm-up too) starts with the file
/// system's write-back done (`sync`, untimed), as the writing benches' NumPy references do
/// (`os.sync()`). Otherwise the gigabytes earlier runs left dirty are written to disk during
/// later ones and the kernel throttles whichever run is writing then: the same case measured
/// 0.2x-0.7x `np.save` by its place in a run.
pub fn time_settled(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut run = || {
        settle();
        let t = Instant::now();
        f();
        t.elapsed()
    };
    run();
    (0..reps).map(|_| run()).min().unwrap_or_default()
}

/// Waits for the dirty pages of every file system to be written (`sync(1)`).
pub fn settle() {
    let ok = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "sync failed");
}

/// Payload gigabytes per second.
pub fn gbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

/// An environment variable parsed, or `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Writes W2 (`[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]`) with `n`
/// records to `path`: id i, x i/2, y i, flag i % 251, v (i, i+1, i+2).
pub fn write_w2(path: &std::path::Path, n: u64) {
    use std::io::Write;
    let header = npy_serde::Header::new(
        "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]"
            .parse()
            .unwrap(),
        vec![n],
    );
    let file = std::fs::File::create(path).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    w.write_all(&header.to_bytes().unwrap()).unwrap();
    for i in 0..n {
        w.write_all(&(i as i64).to_le_bytes()).unwrap();
        w.write_all(&(i as f64 * 0.5).to_le_bytes()).unwrap();
        w.write_all(&(i as f32).to_le_bytes()).unwrap();
        w.write_all(&[(i % 251) as u8]).unwrap();
        for k in 0..3 {
            w.write_all(&((i + k) as f32).to_le_bytes()).unwrap();
        }
    }
    w.flush().unwrap();
}

/// Runs a timing script with `$NPY_PYTHON -c SCRIPT ARGS...` and reads its `name seconds`
/// lines; empty without `NPY_PYTHON` or when the script fails (its stderr is printed).
pub fn python_times(script: &str, args: &[&std::ffi::OsStr]) -> Vec<(String, Duration)> {
    let Some(py) = std::env::var("NPY_PYTHON").ok().filter(|p| !p.is_empty()) else {
        return vec![];
    };
    let o = std::process::Command::new(py)
        .args(["-c", script])
        .args(args)
        .output()
        .expect("python runs");
    if !o.status.success() {
        eprintln!("python failed: {}", String::from_utf8_lossy(&o.stderr));
        return vec![];
    }
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), Duration::from_secs_f64(v.parse().ok()?)))
        })
        .collect()
}

/// A sum with `L` independent accumulators, which the compiler vectorizes (NumPy's pairwise sum
/// is likewise lane-wise, in float32 for a float32 array).
pub fn lane_sum<T, const L: usize>(v: &[T]) -> T
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::AddAssign + std::iter::Sum<T>,
{
    let mut acc = [T::default(); L];
    let chunks = v.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..L {
            acc[i] += c[i];
        }
    }
    acc.iter().copied().sum::<T>() + rest.iter().copied().sum::<T>()
}

/// A child process's run: its wall time, its peak resident set and its stdout.
pub struct Measured {
    pub status: i32,
    pub wall: Duration,
    /// The child's peak resident set in MiB (`wait4`'s `ru_maxrss`; it counts this process's
    /// resident set at the fork, so measure before allocating anything large).
    pub peak_mib: f64,
    pub stdout: String,
}

/// Runs `cmd` (stdout captured, stderr passed through) and measures it with `wait4`.
pub fn run_measured(cmd: &mut std::process::Command) -> Measured {
    use std::io::Read;
    let t = Instant::now();
    // Reaped by `wait4` below, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    // Drain stdout first (a full pipe would block the child), then reap it.
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct, which `wait4` fills
    // in for the child just spawned (and not waited for by anything else).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid for writes for the duration of the call.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0, "wait4 failed for {cmd:?}");
    Measured {
        status,
        wall: t.elapsed(),
        peak_mib: usage.ru_maxrss as f64 / 1024.0,
        stdout,
    }
}
