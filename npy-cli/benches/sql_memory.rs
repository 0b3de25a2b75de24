//! `npy sql --memory-limit 256MiB` on the real binary (`NPY_BIN`, default
//! `target/release/npy`, built with `cargo build --release -p npy-cli --features datafusion`)
//! over W2 (`benches/sql.rs`; 20M records at scale 1):
//!
//! - G: `GROUP BY id` (20M distinct keys), counted: the answer is `n,n`;
//! - S: `ORDER BY x DESC` of every id, to a `.npy` file: the ids must come out `n-1..0`;
//! - the same sort under `--memory-limit 1MiB`: "Resources exhausted" naming the limit, exit 1.
//!
//! Each run's peak anonymous memory (`RssAnon` of `/proc/PID/status`, sampled every 5 ms: the
//! heap, not the page cache or mapped files, which VmHWM would count) and wall time, without
//! and with the limit, in the same run.
//!
//! Run: `cargo build --release -p npy-cli --features datafusion && cargo bench -p npy-cli
//! --bench sql_memory` (`NPY_BENCH_SCALE`, default 1).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, write_w2};

const GROUP: &str = "SELECT count(*), sum(c) FROM (SELECT id, count(*) AS c FROM w2 GROUP BY id)";
const SORT: &str = "SELECT id FROM w2 ORDER BY x DESC";

struct Run {
    code: Option<i32>,
    wall: Duration,
    peak_anon_mib: f64,
    stdout: String,
    stderr: String,
}

/// `RssAnon` of a live process, in KiB.
fn rss_anon_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn run(npy: &str, args: &[&str]) -> Run {
    let t = Instant::now();
    let mut child = Command::new(npy)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{npy}: {e}"));
    let pid = child.id();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let (mut o, mut e) = (String::new(), String::new());
        let _ = out.read_to_string(&mut o);
        let _ = err.read_to_string(&mut e);
        (o, e)
    });
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = rss_anon_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let (stdout, stderr) = reader.join().unwrap();
    Run {
        code: status.code(),
        wall: t.elapsed(),
        peak_anon_mib: peak as f64 / 1024.0,
        stdout,
        stderr,
    }
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let n = (20_000_000.0 * scale) as u64;
    let npy = std::env::var("NPY_BIN").unwrap_or_else(|_| {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "../target".into());
        format!("{target}/release/npy")
    });
    assert!(
        Path::new(&npy).exists(),
        "{npy}: build it first (see the module docs)"
    );
    let dir = std::env::temp_dir().join(format!("npy-sql-memory-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let w2 = dir.join("w2.npy");
    write_w2(&w2, n);
    let table = format!("w2={}", w2.display());
    let sorted = dir.join("sorted.npy");
    let out = sorted.to_str().unwrap();
    println!(
        "W2: {n} records, {} MB; {npy}",
        std::fs::metadata(&w2).unwrap().len() >> 20
    );
    println!("{:<34} {:>9} {:>16}", "case", "seconds", "peak RssAnon MiB");
    for limit in [None, Some("256MiB")] {
        let with: Vec<&str> = limit.map_or(vec![], |l| vec!["--memory-limit", l]);
        let tag = limit.unwrap_or("no limit");

        let mut args = vec!["sql", GROUP, "-t", &table, "--csv"];
        args.extend(&with);
        let r = run(&npy, &args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let want = format!("{n},{n}");
        assert_eq!(r.stdout.lines().nth(1), Some(want.as_str()), "{}", r.stdout);
        println!(
            "{:<34} {:>9.2} {:>16.1}",
            format!("G group by id, {tag}"),
            r.wall.as_secs_f64(),
            r.peak_anon_mib
        );

        let mut args = vec!["sql", SORT, "-t", &table, "-o", out];
        args.extend(&with);
        let r = run(&npy, &args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        // The ids, descending: the last 8n bytes of the output.
        let bytes = std::fs::read(&sorted).unwrap();
        let data = &bytes[bytes.len() - 8 * n as usize..];
        let ok = data
            .chunks_exact(8)
            .enumerate()
            .all(|(k, b)| i64::from_le_bytes(b.try_into().unwrap()) == (n - 1 - k as u64) as i64);
        assert!(ok, "the sorted ids are not n-1..0");
        println!(
            "{:<34} {:>9.2} {:>16.1}",
            format!("S order by x desc, {tag}"),
            r.wall.as_secs_f64(),
            r.peak_anon_mib
        );
    }
    let r = run(
        &npy,
        &[
            "sql",
            SORT,
            "-t",
            &table,
            "-o",
            out,
            "--memory-limit",
            "1MiB",
        ],
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("Resources exhausted") && r.stderr.contains("memory limit 1.0 MiB"),
        "{}",
        r.stderr
    );
    println!(
        "S under 1MiB: exit 1 after {:.2} s: {}",
        r.wall.as_secs_f64(),
        r.stderr.lines().next().unwrap_or("")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
