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
