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
//! W2's `x` rises through every shard, so Q3 asks for the data's reverse order: a TopK that
//! sees the rows of one byte range alone takes each of them into its heap. One process's
//! partitions share one threshold (DataFusion's TopK filter, also pushed into the scan);
//! each cluster task has its own (Ballista turns the pushdown off and shares nothing across
//! tasks), so Q3's cluster time grows with the partitions (see BENCHMARKS.md).
//!
//! Each time is a whole command (start, plan, run, print), best of `NPY_BENCH_REPS` (default
//! 3); `NPY_BENCH_SCALE` (default 0.5). `NPY_BENCH_COLUMNS=1` runs the same queries over the
//! same records as a column table too (`cluster/columns.rs`: a directory of per-column `.npy`
//! files, made with `npy convert --layout columns`), in the same table; `NPY_BENCH_EXECUTORS`
//! (e.g. `2,4,8`) adds a table of clusters of that many one-task executors (row shards).
//!
//! Run: `cargo build --release -p npy-cli --features ballista && cargo bench -p npy-cli
//! --bench cluster` (the programs from `$NPY_BIN_DIR`, default `target/release`).

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

#[path = "cluster/columns.rs"]
mod columns;
#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
#[path = "cluster/timeline.rs"]
mod timeline;
use common::{env_or, write_w2};
use timeline::Timeline;

/// `npy-scheduler --partitions FLAG` and two `npy-executor`s of one task each, on loopback,
/// logging at `info` into `dir`; killed when dropped.
struct Cluster {
    url: String,
    dir: PathBuf,
    _scheduler: Proc,
    _executors: Vec<Proc>,
}

impl Cluster {
    fn start(scheduler: &Path, executor: &Path, dir: &Path, partitions: &str) -> Cluster {
        Cluster::with_executors(scheduler, executor, dir, partitions, 2)
    }

    /// The scheduler and `n` one-task executors.
    fn with_executors(
        scheduler: &Path,
        executor: &Path,
        dir: &Path,
        partitions: &str,
        n: usize,
    ) -> Cluster {
        std::fs::create_dir_all(dir).unwrap();
        let port = free_port();
        let args = [
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--partitions",
            partitions,
        ];
        let _scheduler = start(
            scheduler,
            &args.map(String::from),
            &dir.join("scheduler.log"),
            &[port],
        );
        let _executors: Vec<Proc> = (0..n)
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
                let log = dir.join(format!("executor{k}.log"));
                start(executor, &args, &log, &[flight, grpc])
            })
            .collect();
        Cluster {
            url: format!("df://127.0.0.1:{port}"),
            dir: dir.to_path_buf(),
            _scheduler,
            _executors,
        }
    }
}

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
    // Ballista logs each job's submission, planning and end (scheduler) and each task's start
    // and end (executors) at `info`: the fixed cost's timeline is read from those lines.
    let child = Command::new(exe)
        .env("RUST_LOG", "info")
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
    let mut tables = vec![("rows", table.clone())];
    if env_or("NPY_BENCH_COLUMNS", 0u8) == 1 {
        tables.push(("columns", columns::convert(&npy, &table, &dir)));
    }

    // Ballista as shipped (each job with its client's 16 partitions), then npy-scheduler's
    // default (as many partitions as the executors' task slots).
    let shipped = Cluster::start(&scheduler, &executor, &dir.join("client"), "client");
    let fitted = Cluster::start(&scheduler, &executor, &dir.join("slots"), "slots");
    for cluster in [&shipped, &fitted] {
        // Executors register with their first heartbeat: a first query waits for them.
        let url = &cluster.url;
        for (_, table) in &tables {
            let args = [
                "sql",
                "--cluster",
                url,
                "SELECT count(*) FROM w2",
                "-t",
                table,
            ];
            sql(&npy, &args, 1);
        }
    }
    let tiny = dir.join("tiny.npy");
    write_w2(&tiny, 1000);
    fixed_cost(&npy, &[&shipped, &fitted], &tiny, reps);

    println!(
        "npy sql over 8 W2 shards ({n} records, {} MB; rows) and the same records as a column \
         table (columns, if NPY_BENCH_COLUMNS=1), best of {reps}: one process against a \
         cluster (npy-scheduler + 2 npy-executor processes, 1 task each), its jobs with their \
         client's 16 partitions (--partitions client) and with the executors' 2 task slots \
         (--partitions slots, the default)",
        (n * 33) >> 20
    );
    println!(
        "{:<4} {:<8} {:>14} {:>14} {:>16} {:>14} {:>16}",
        "", "table", "one process s", "cluster s", "cluster/one", "2 parts s", "2 parts/one"
    );
    let mut answers = Vec::new();
    for (layout, table) in &tables {
        for (k, (name, q)) in QUERIES.into_iter().enumerate() {
            let (one, t_one) = sql(&npy, &["sql", "--csv", q, "-t", table], reps);
            let on = |cluster: &Cluster| {
                let args = ["sql", "--csv", "--cluster", &cluster.url, q, "-t", table];
                sql(&npy, &args, reps)
            };
            let (two, t_two) = on(&shipped);
            let (slots, t_fitted) = on(&fitted);
            assert!(
                same(&one, &slots),
                "{name} {layout}: one process\n{one}\ncluster, 2 partitions\n{slots}"
            );
            assert!(
                same(&one, &two),
                "{name} {layout}: one process\n{one}\ncluster\n{two}"
            );
            // The column table answers as the row shards do.
            match answers.get(k) {
                None => answers.push(one),
                Some(rows) => assert!(same(rows, &one), "{name}: rows\n{rows}\ncolumns\n{one}"),
            }
            println!(
                "{name:<4} {layout:<8} {:>14.3} {:>14.3} {:>15.2}x {:>14.3} {:>15.2}x",
                t_one.as_secs_f64(),
                t_two.as_secs_f64(),
                t_two.as_secs_f64() / t_one.as_secs_f64(),
                t_fitted.as_secs_f64(),
                t_fitted.as_secs_f64() / t_one.as_secs_f64()
            );
        }
    }
    drop((shipped, fitted));
    let sizes: Vec<usize> = std::env::var("NPY_BENCH_EXECUTORS")
        .unwrap_or_default()
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    if !sizes.is_empty() {
        let bins = [npy.as_path(), scheduler.as_path(), executor.as_path()];
        executors_table(bins, &dir, &table, &sizes, reps);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fixed cost of a job: Q1 over 1000 records (nothing to scan, aggregate or shuffle of any
/// size) as a whole command, one process against each cluster, and each cluster's best run
/// cut into its parts from the programs' logs ([`Timeline`]): the client's start to the job
/// being queued, planning, each stage's wait and its tasks, and the end of the job to the
/// client's exit.
fn fixed_cost(npy: &Path, clusters: &[&Cluster], tiny: &Path, reps: usize) {
    timeline::check_parsers();
    let table = format!("w2={}", tiny.display());
    let q1 = QUERIES[0].1;
    let (want, t_one) = sql(npy, &["sql", "--csv", q1, "-t", &table], reps);
    println!(
        "The fixed cost of a job: Q1 over 1000 records, best of {reps}; one process {:.0} ms",
        t_one.as_secs_f64() * 1e3
    );
    for (how, cluster) in ["16 partitions (client)", "2 partitions (slots)"]
        .iter()
        .zip(clusters)
    {
        let mut best: Option<Timeline> = None;
        for _ in 0..reps.max(3) {
            let start = SystemTime::now();
            let out = Command::new(npy)
                .args(["sql", "--csv", "--cluster", &cluster.url, q1, "-t", &table])
                .output()
                .unwrap();
            let exit = SystemTime::now();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{how}: {stderr}");
            assert!(same(&want, &String::from_utf8_lossy(&out.stdout)), "{how}");
            // The programs write their last lines a moment after the client has its answer.
            std::thread::sleep(Duration::from_millis(200));
            let timeline = Timeline::read(&cluster.dir, start, exit).expect("the job in the logs");
            if best.as_ref().is_none_or(|b| timeline.whole() < b.whole()) {
                best = Some(timeline);
            }
        }
        println!("  cluster, {how} (ms): {}", best.unwrap().line());
    }
}

/// The bytes of the files under `dir` (an executor's work directory: its shuffle output, kept
/// until the scheduler cleans the job's data up).
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Q1..Q3 on clusters of each of `sizes` one-task executors (`--partitions slots`: as many
/// partitions as executors), against one process: the best time of `reps`, and of one more
/// run the tasks each executor ran (from its log) and the shuffle bytes the executors wrote
/// (their work directories, before and after).
fn executors_table(bins: [&Path; 3], dir: &Path, table: &str, sizes: &[usize], reps: usize) {
    let [npy, scheduler, executor] = bins;
    println!(
        "Clusters of N one-task executors (--partitions slots), best of {reps}; tasks per \
         executor and shuffle bytes written, of one more run"
    );
    println!(
        "{:<4} {:>3} {:>10} {:>10} {:>8} {:>8} {:>24} {:>14}",
        "", "N", "one s", "cluster s", "ratio", "tasks", "tasks per executor", "shuffle KB"
    );
    for &n in sizes {
        let cluster =
            Cluster::with_executors(scheduler, executor, &dir.join(format!("n{n}")), "slots", n);
        let url = cluster.url.clone();
        // Every executor registered: a query with tasks on all of them.
        let warm = [
            "sql",
            "--cluster",
            &url,
            "SELECT count(*) FROM w2",
            "-t",
            table,
        ];
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            sql(npy, &warm, 1);
            let ran = (0..n)
                .filter(|k| {
                    let log = std::fs::read(cluster.dir.join(format!("executor{k}.log")));
                    log.is_ok_and(|l| String::from_utf8_lossy(&l).contains("Finished task"))
                })
                .count();
            if ran == n || Instant::now() > end {
                break;
            }
        }
        for (name, q) in QUERIES {
            let (_, t_one) = sql(npy, &["sql", "--csv", q, "-t", table], reps);
            let args = ["sql", "--csv", "--cluster", &url, q, "-t", table];
            let (_, t) = sql(npy, &args, reps);
            let works: Vec<PathBuf> = (0..n)
                .map(|k| cluster.dir.join(format!("work{k}")))
                .collect();
            let before: u64 = works.iter().map(|w| bytes_under(w)).sum();
            let logs = |k: usize| {
                let log = std::fs::read(cluster.dir.join(format!("executor{k}.log")));
                String::from_utf8_lossy(&log.unwrap_or_default())
                    .matches("Finished task")
                    .count()
            };
            let tasks_before: Vec<usize> = (0..n).map(logs).collect();
            sql(npy, &args, 1);
            std::thread::sleep(Duration::from_millis(200));
            let after: u64 = works.iter().map(|w| bytes_under(w)).sum();
            let per: Vec<usize> = (0..n).map(|k| logs(k) - tasks_before[k]).collect();
            let listed: Vec<String> = per.iter().map(usize::to_string).collect();
            println!(
                "{name:<4} {n:>3} {:>10.3} {:>10.3} {:>7.2}x {:>8} {:>24} {:>14.1}",
                t_one.as_secs_f64(),
                t.as_secs_f64(),
                t.as_secs_f64() / t_one.as_secs_f64(),
                per.iter().sum::<usize>(),
                listed.join("/"),
                after.saturating_sub(before) as f64 / 1e3
            );
        }
    }
}
