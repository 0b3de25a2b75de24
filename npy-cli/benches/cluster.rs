//! The deployed cluster against one process, on the real programs: `npy sql --cluster` on a
//! Ballista cluster of `npy-scheduler` and two `npy-executor` processes on 127.0.0.1 (one
//! task at a time each), against `npy sql` in one process (as many partitions as cores), over
//! the same 8 W2 shards (20M records, 660 MB at scale 1; page cache warm), same run, same
//! answers:
//!
//! - Q1 `SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag ORDER BY flag`
//! - Q2 `SELECT sum(x) FROM w2 WHERE id % 7 = 0`
//! - Q3 `SELECT id, x FROM w2 ORDER BY x DESC, id LIMIT 10`
//!
//! Each time is a whole command (start, plan, run, print), best of `NPY_BENCH_REPS` (default
//! 3); `NPY_BENCH_SCALE` (default 0.5).
//!
//! Run: `cargo build --release -p npy-cli --features ballista && cargo bench -p npy-cli
//! --bench cluster` (the programs from `$NPY_BIN_DIR`, default `target/release`).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, write_w2};

const QUERIES: [(&str, &str); 3] = [
    (
        "Q1",
        "SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag ORDER BY flag",
    ),
    ("Q2", "SELECT sum(x) FROM w2 WHERE id % 7 = 0"),
    ("Q3", "SELECT id, x FROM w2 ORDER BY x DESC, id LIMIT 10"),
];

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(exe: &Path, args: &[String], log: &Path, ports: &[u16]) -> Proc {
    let log = std::fs::File::create(log).unwrap();
    let child = Command::new(exe)
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    let mut p = Proc(child);
    let end = Instant::now() + Duration::from_secs(30);
    for &port in ports {
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                p.0.try_wait().unwrap().is_none(),
                "{} exited",
                exe.display()
            );
            assert!(Instant::now() < end, "{} does not listen", exe.display());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    p
}

/// `npy sql` with `args`: its output and the best wall time of `reps` runs.
fn sql(npy: &Path, args: &[&str], reps: usize) -> (String, Duration) {
    let mut best = Duration::MAX;
    let mut printed = String::new();
    for _ in 0..reps {
        let t = Instant::now();
        let out = Command::new(npy).args(args).output().unwrap();
        best = best.min(t.elapsed());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "npy {args:?}: {stderr}");
        printed = String::from_utf8(out.stdout).unwrap();
    }
    (printed, best)
}

/// The same CSV, floats within 1e-9 (their sums run in another order on the cluster).
fn same(a: &str, b: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.split([',', '\n']).collect(),
        b.split([',', '\n']).collect(),
    );
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || matches!((x.parse::<f64>(), y.parse::<f64>()),
                    (Ok(x), Ok(y)) if (x - y).abs() <= 1e-9 * x.abs().max(y.abs()))
        })
}

fn main() {
    let scale: f64 = env_or("NPY_BENCH_SCALE", 0.5);
    let reps: usize = env_or("NPY_BENCH_REPS", 3);
    let bin = std::env::var("NPY_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "../target".into());
            Path::new(&target).join("release")
        });
    let exe = |name: &str| {
        let p = bin.join(name);
        assert!(
            p.exists(),
            "{}: build it first (see the module docs)",
            p.display()
        );
        p
    };
    let (npy, scheduler, executor) = (exe("npy"), exe("npy-scheduler"), exe("npy-executor"));

    let dir = std::env::temp_dir().join(format!("npy-cluster-bench-{}", std::process::id()));
    let shards = dir.join("w2");
    std::fs::create_dir_all(&shards).unwrap();
    let n = (20_000_000.0 * scale) as u64;
    for k in 0..8 {
        write_w2(&shards.join(format!("part{k}.npy")), n / 8);
    }
    let table = format!("w2={}", shards.display());

    let port = free_port();
    let url = format!("df://127.0.0.1:{port}");
    let _scheduler = start(
        &scheduler,
        &["--bind", "127.0.0.1", "--port", &port.to_string()].map(String::from),
        &dir.join("scheduler.log"),
        &[port],
    );
    let _executors: Vec<Proc> = (0..2)
        .map(|k| {
            let (flight, grpc) = (free_port(), free_port());
            let work = dir.join(format!("work{k}"));
            std::fs::create_dir_all(&work).unwrap();
            let args = [
                "--scheduler",
                &format!("127.0.0.1:{port}"),
                "--bind",
                "127.0.0.1",
                "--port",
                &flight.to_string(),
                "--grpc-port",
                &grpc.to_string(),
                "--work-dir",
                work.to_str().unwrap(),
                "--concurrent-tasks",
                "1",
            ]
            .map(String::from);
            start(
                &executor,
                &args,
                &dir.join(format!("executor{k}.log")),
                &[flight, grpc],
            )
        })
        .collect();
    // Executors register with their first heartbeat: a first query waits for them.
    sql(
        &npy,
        &[
            "sql",
            "--cluster",
            &url,
            "SELECT count(*) FROM w2",
            "-t",
            &table,
        ],
        1,
    );

    println!(
        "npy sql over 8 W2 shards ({n} records, {} MB), best of {reps}: one process against a \
         cluster (npy-scheduler + 2 npy-executor processes, 1 task each)",
        (n * 33) >> 20
    );
    println!(
        "{:<4} {:>14} {:>14} {:>16}",
        "", "one process s", "cluster s", "cluster/one"
    );
    for (name, q) in QUERIES {
        let (one, t_one) = sql(&npy, &["sql", "--csv", q, "-t", &table], reps);
        let (two, t_two) = sql(
            &npy,
            &["sql", "--csv", "--cluster", &url, q, "-t", &table],
            reps,
        );
        assert!(
            same(&one, &two),
            "{name}: one process\n{one}\ncluster\n{two}"
        );
        println!(
            "{name:<4} {:>14.3} {:>14.3} {:>15.2}x",
            t_one.as_secs_f64(),
            t_two.as_secs_f64(),
            t_two.as_secs_f64() / t_one.as_secs_f64()
        );
    }
    drop(_executors);
    let _ = std::fs::remove_dir_all(&dir);
}
