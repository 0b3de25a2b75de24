//! TPC-H SQL (issue 32): `npy sql` over the eight TPC-H tables as row `.npy` files (and as
//! column tables when `npy convert` has `--layout`), against the same binary over the same
//! tables as Parquet (DataFusion's own Parquet reader: the same engine, version and binary)
//! and DuckDB over the Parquet (the `duckdb` Python module), timed in the same run.
//!
//! The tables are made once by `tpchgen-cli` (beside `NPY_PYTHON`, where pip installs it) as
//! Parquet, and converted by the release `npy` tool to row `.npy` files (`npy convert
//! --decimals f8`: money as float64); both are kept under the target directory
//! (`target/tpch-sql/sf1/`), so a rerun skips them. All 22 queries in their standard text with
//! the validation parameters (`tests/fixtures/tpch/qN.sql`; Q15 is a view, the query and the
//! view dropped, run after `SET datafusion.execution.target_partitions = 1` on every
//! DataFusion side: it keeps the rows whose float sum equals the maximum of the same sums
//! computed again, which only one order of addition makes exact).
//!
//! Two ways of timing, each printed as its own table (`NPY_BENCH_TIMING`, default
//! `warm,process`):
//!
//! - `warm`: every engine warm, in its process. One `npy sql --timing` process per query and
//!   side runs the query `1 + NPY_BENCH_REPS` times over tables registered once, and the times
//!   it prints for each run (planning, running and printing the CSV) are read; DuckDB runs the
//!   query the same number of times in one Python process over views made once. The first run
//!   of each is the warm-up. Only this table compares with DuckDB.
//! - `process`: each `npy sql` run is a whole process (its start, the tables' registration, the
//!   query and printing the answer as CSV), one warm-up process and `NPY_BENCH_REPS` timed.
//!
//! Best of `NPY_BENCH_REPS` (default 3) either way; the page cache is warm. The `.npy` sides:
//!
//! - `rows`: the defaults (local files mapped, filters in the scan);
//! - `rows read`: `access=read, filter_pushdown=false`, the scan before issue 32 (ranged reads
//!   of whole records, DataFusion filtering the decoded rows): the anchor of the before/after
//!   ratio;
//! - `rows no-push`: mapped, `filter_pushdown=false` (what the map alone gives);
//! - `columns` when `npy convert --help` lists `--layout` (filters in the scan, issue 45);
//! - `columns no-push`: `filter_pushdown=false`, the column scan before issue 45 (DataFusion's
//!   `FilterExec` over a scan of every row): the anchor of the column tables' before/after;
//! - `columns sorted` when `npy convert` has `--sorted-by`: the column tables converted with
//!   each table's key order verified and recorded (`l_orderkey`, `o_orderkey`, ...; [`KEYS`]),
//!   which the tables then declare to DataFusion (Q18 groups `lineitem` by `l_orderkey`).
//!
//! Every side's answer is checked against DataFusion-over-Parquet's (numbers to a relative
//! 1e-6: the money is float64 in the `.npy` files, decimal in the Parquet files). Printed: each
//! query's times, the ratios (their time / ours: above 1 is faster than them), and the geomean
//! of each side's ratio to DataFusion over Parquet (issue 32 wants >= 0.6x for rows, >= 1.0x
//! for columns) and to DuckDB.
//!
//! Environment: `NPY_PYTHON` (required: tpchgen-cli, duckdb), `NPY_BENCH_SF` (default 1),
//! `NPY_BENCH_TIMING` (`warm`, `process` or both, comma-separated),
//! `NPY_BENCH_REPS` (default 3), `NPY_BIN` (default: `npy` beside this bench's directory),
//! `NPY_BENCH_QUERIES` (say `q1,q12,q18`; default all 22), `NPY_BENCH_SIDES` (the `.npy` sides
//! to time, say `rows,columns`; default all).
//! Run: `cargo build --release -p npy-cli --features parquet,datafusion`, then
//! `NPY_PYTHON=$PWD/.venv/bin/python cargo bench -p npy-cli
//! --bench tpch_sql`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "../../npy-serde/benches/common/mod.rs"]
mod common;
use common::{env_or, python_times, run_measured};

/// The eight tables.
const TABLES: [&str; 8] = [
    "lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region",
];

/// The key each table is generated in order of (tpchgen-cli writes them so), which the
/// `columns sorted` side's `npy convert --sorted-by` verifies and records.
const KEYS: [&str; 8] = [
    "l_orderkey",
    "o_orderkey",
    "c_custkey",
    "p_partkey",
    "ps_partkey",
    "s_suppkey",
    "n_nationkey",
    "r_regionkey",
];

/// The queries timed by default (`tests/fixtures/tpch/qN.sql`): all 22.
fn queries() -> Vec<String> {
    match std::env::var("NPY_BENCH_QUERIES") {
        Ok(list) if !list.trim().is_empty() => {
            list.split(',').map(|q| q.trim().to_string()).collect()
        }
        _ => (1..=22).map(|i| format!("q{i}")).collect(),
    }
}

/// Writes every table with tpchgen-cli (found beside the interpreter, where pip installs it).
const GENERATE: &str = r#"
import os, subprocess, sys, sysconfig
exe = os.path.join(sysconfig.get_path('scripts'), 'tpchgen-cli')
subprocess.run([exe, 'parquet', '--scale-factor', sys.argv[1], '--output-dir', sys.argv[2]],
               check=True)
"#;

/// DuckDB over the Parquet files: `qN SECONDS` per query (best of REPS after a warm-up), and
/// `answer.qN CSV` lines are not printed (python_times reads numbers only).
const DUCKDB: &str = r#"
import sys, time
try:
    import duckdb
except ImportError:
    sys.exit(0)
reps, data, qdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
con = duckdb.connect()
for t in ['lineitem', 'orders', 'customer', 'part', 'partsupp', 'supplier', 'nation', 'region']:
    con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{data}/{t}.parquet')")
for q in sys.argv[4:]:
    text = open(f'{qdir}/{q}.sql').read()
    con.execute(text).fetchall()
    best = min(
        (lambda t0: (con.execute(text).fetchall(), time.perf_counter() - t0)[1])(time.perf_counter())
        for _ in range(reps))
    print(q, best)
"#;

fn npy_bin() -> Option<PathBuf> {
    std::env::var_os("NPY_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            let exe = std::env::current_exe().ok()?;
            Some(exe.parent()?.parent()?.join("npy"))
        })
        .filter(|p| p.is_file())
}

/// The target directory (this bench runs from `target/release/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// A query's text without its comment lines (the tool takes the query as an argument), and
/// what runs once before it: Q15's `SET` of one partition (see the module docs), as the count
/// of its statements and its text.
fn query_text(dir: &Path, q: &str) -> Query {
    let text = std::fs::read_to_string(dir.join(format!("{q}.sql"))).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("--")).collect();
    let text = lines.join("\n");
    let setup = if q == "q15" {
        (1, "SET datafusion.execution.target_partitions = 1;\n")
    } else {
        (0, "")
    };
    Query { setup, text }
}

/// A query's statements, and those run once before it.
struct Query {
    setup: (usize, &'static str),
    text: String,
}

impl Query {
    /// The setup then the query, once.
    fn once(&self) -> String {
        format!("{}{}", self.setup.1, self.text)
    }

    /// The setup then the query `runs` times.
    fn repeated(&self, runs: usize) -> String {
        let body = self.text.trim_end().trim_end_matches(';');
        let mut script = self.setup.1.to_string();
        for _ in 0..runs {
            script += body;
            script += ";\n";
        }
        script
    }
}

/// How the `npy sql` runs are timed (see the module docs).
#[derive(Clone, Copy, PartialEq)]
enum Timing {
    Warm,
    Process,
}

/// One side of the comparison: its name and the table arguments of `npy sql`.
struct Side {
    name: &'static str,
    tables: Vec<String>,
}

/// The side whose tables are `dir/T.EXT` with the spec `format(FILE, options)` (or the plain
/// path for no format).
fn side(name: &'static str, dir: &Path, ext: &str, format: &str, options: &str) -> Side {
    let tables = TABLES
        .iter()
        .flat_map(|t| {
            let file = dir.join(format!("{t}.{ext}"));
            let spec = if format.is_empty() {
                file.display().to_string()
            } else {
                format!("{format}({}{options})", file.display())
            };
            ["-t".to_string(), format!("{t}={spec}")]
        })
        .collect();
    Side { name, tables }
}

/// Best wall time of `reps` runs of `npy sql --csv QUERY TABLES` after a warm-up, and the
/// answer (`None`: the run failed; its message went to stderr).
fn time_sql(npy: &Path, side: &Side, query: &str, reps: usize) -> Option<(Duration, String)> {
    let mut best = Duration::MAX;
    let mut answer = String::new();
    for round in 0..=reps {
        let m = run_measured(
            Command::new(npy)
                .args(["sql", "--csv"])
                .args(&side.tables)
                .arg(query),
        );
        if m.status != 0 {
            return None;
        }
        if round > 0 {
            best = best.min(m.wall);
        }
        answer = m.stdout;
    }
    Some((best, answer))
}

/// Best time of `reps` runs of the query after a warm-up run, all in one `npy sql --timing`
/// process (the times it prints on stderr, a run's being the sum over the query's
/// statements), and the answers (`None`: the run failed; its message went to stderr).
fn time_sql_warm(
    npy: &Path,
    side: &Side,
    query: &Query,
    reps: usize,
) -> Option<(Duration, String)> {
    let out = Command::new(npy)
        .args(["sql", "--csv", "--timing"])
        .args(&side.tables)
        .arg(query.repeated(reps + 1))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", npy.display()));
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprint!("{err}");
        return None;
    }
    let times: Vec<f64> = err
        .lines()
        .filter_map(|l| l.rsplit_once(" in ")?.1.strip_suffix(" s")?.parse().ok())
        .collect();
    let per_run = times.len().checked_sub(query.setup.0)? / (reps + 1);
    if per_run == 0 || times.len() != query.setup.0 + per_run * (reps + 1) {
        eprintln!("{}: unexpected --timing lines:\n{err}", side.name);
        return None;
    }
    let best = times[query.setup.0..]
        .chunks(per_run)
        .skip(1)
        .map(|run| run.iter().sum::<f64>())
        .fold(f64::INFINITY, f64::min);
    Some((
        Duration::from_secs_f64(best),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

/// Whether two CSV answers are the same: the same cells, numbers to a relative 1e-6.
fn same_answer(a: &str, b: &str) -> bool {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    la.len() == lb.len()
        && la.iter().zip(&lb).enumerate().all(|(row, (x, y))| {
            let (cx, cy): (Vec<&str>, Vec<&str>) = (x.split(',').collect(), y.split(',').collect());
            cx.len() == cy.len()
                && cx.iter().zip(&cy).all(|(p, q)| {
                    // The header row names the columns; the rest are values.
                    match (p.parse::<f64>(), q.parse::<f64>()) {
                        (Ok(u), Ok(v)) if row > 0 => (u - v).abs() <= 1e-6 * v.abs().max(1.0),
                        _ => p == q,
                    }
                })
        })
}

/// Makes the Parquet tables (tpchgen-cli) and the `.npy` ones (`npy convert`) under `data`,
/// unless they are there; the column tables too when the tool has `--layout`. Returns whether
/// column tables exist.
fn prepare(py: &std::ffi::OsStr, npy: &Path, data: &Path, sf: &str) -> bool {
    let parquet = data.join("parquet");
    if !TABLES
        .iter()
        .all(|t| parquet.join(format!("{t}.parquet")).is_file())
    {
        std::fs::create_dir_all(&parquet).unwrap();
        let made = run_measured(Command::new(py).args(["-c", GENERATE, sf]).arg(&parquet));
        assert_eq!(made.status, 0, "tpchgen-cli failed");
        println!("generated TPC-H SF{sf} in {:.1} s", made.wall.as_secs_f64());
    }
    let help = Command::new(npy)
        .args(["convert", "--help"])
        .output()
        .unwrap();
    let layouts = String::from_utf8_lossy(&help.stdout).contains("--layout");
    let mut targets = vec![("npy", "npy", vec![])];
    if layouts {
        targets.push(("columns", "npz", vec!["--layout", "columns"]));
    }
    let sorted = String::from_utf8_lossy(&help.stdout).contains("--sorted-by");
    if layouts && sorted {
        targets.push(("columns-sorted", "npz", vec!["--layout", "columns"]));
    }
    for (sub, ext, extra) in targets {
        std::fs::create_dir_all(data.join(sub)).unwrap();
        for (t, key) in TABLES.into_iter().zip(KEYS) {
            let out = data.join(sub).join(format!("{t}.{ext}"));
            if out.is_file() {
                continue;
            }
            let convert = |order: &[&str]| {
                run_measured(
                    Command::new(npy)
                        .args(["convert", "--decimals", "f8"])
                        .args(&extra)
                        .args(order)
                        .arg(parquet.join(format!("{t}.parquet")))
                        .arg(&out),
                )
            };
            let sorting = sub == "columns-sorted";
            let sorted_by = ["--sorted-by", key];
            let mut m = convert(if sorting { &sorted_by } else { &[] });
            if sorting && m.status != 0 {
                // Not in that order after all: the table as it is, with no order recorded.
                println!("{t} is not sorted by {key}: converted with no order");
                m = convert(&[]);
            }
            assert_eq!(m.status, 0, "npy convert {t} -> {}", out.display());
            println!(
                "converted {t} to {} in {:.1} s",
                out.display(),
                m.wall.as_secs_f64()
            );
        }
    }
    layouts
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}

fn main() {
    let Some(py) = std::env::var_os("NPY_PYTHON").filter(|p| !p.is_empty()) else {
        println!("tpch_sql: skipped (set NPY_PYTHON to a Python with tpchgen-cli and duckdb)");
        return;
    };
    let Some(npy) = npy_bin() else {
        println!(
            "tpch_sql: skipped (no npy binary: run `cargo build --release -p npy-cli --features \
             parquet,datafusion` first, or set NPY_BIN)"
        );
        return;
    };
    let sf: String = env_or("NPY_BENCH_SF", "1".to_string());
    let reps: usize = env_or("NPY_BENCH_REPS", 3);
    let data = target_dir().join("tpch-sql").join(format!("sf{sf}"));
    let columns = prepare(&py, &npy, &data, &sf);
    let qdir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tpch");

    let mut sides = vec![
        side("rows", &data.join("npy"), "npy", "", ""),
        side(
            "rows read",
            &data.join("npy"),
            "npy",
            "npy",
            ", access=read, filter_pushdown=false",
        ),
        side(
            "rows no-push",
            &data.join("npy"),
            "npy",
            "npy",
            ", filter_pushdown=false",
        ),
    ];
    if columns {
        sides.push(side(
            "columns",
            &data.join("columns"),
            "npz",
            "npz",
            ", layout=columns",
        ));
        sides.push(side(
            "columns no-push",
            &data.join("columns"),
            "npz",
            "npz",
            ", layout=columns, filter_pushdown=false",
        ));
        if data.join("columns-sorted").join("lineitem.npz").is_file() {
            sides.push(side(
                "columns sorted",
                &data.join("columns-sorted"),
                "npz",
                "npz",
                ", layout=columns",
            ));
        }
    }
    if let Ok(list) = std::env::var("NPY_BENCH_SIDES") {
        let wanted: Vec<&str> = list.split(',').map(str::trim).collect();
        sides.retain(|s| wanted.contains(&s.name));
    }
    let queries = queries();
    let parquet = side("DF parquet", &data.join("parquet"), "parquet", "", "");

    let mut args: Vec<std::ffi::OsString> = vec![
        reps.to_string().into(),
        data.join("parquet").into(),
        qdir.clone().into(),
    ];
    args.extend(queries.iter().map(|q| q.into()));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let duck: Vec<(String, Duration)> = python_times(DUCKDB, &args);

    let timings: Vec<Timing> = env_or("NPY_BENCH_TIMING", "warm,process".to_string())
        .split(',')
        .filter_map(|t| match t.trim() {
            "warm" => Some(Timing::Warm),
            "process" => Some(Timing::Process),
            _ => None,
        })
        .collect();
    let mut wrong = Vec::new();
    for timing in timings {
        let t = Table {
            npy: &npy,
            sides: &sides,
            parquet: &parquet,
            qdir: &qdir,
            reps,
        };
        let duck = (timing == Timing::Warm).then_some(duck.as_slice());
        wrong.extend(t.run(&sf, &queries, timing, duck));
    }
    if wrong.is_empty() {
        println!("every answer equals DataFusion over Parquet's");
    } else {
        println!("ANSWERS DIFFER:\n{}", wrong.join("\n"));
    }
}

/// One table of times: every side and DataFusion over Parquet, timed one way.
struct Table<'a> {
    npy: &'a Path,
    sides: &'a [Side],
    parquet: &'a Side,
    qdir: &'a Path,
    reps: usize,
}

impl Table<'_> {
    /// Times every query on every side, prints the table, the geomeans and the before/after
    /// ratios; returns the answers that differ from DataFusion over Parquet's. `duck`: DuckDB's
    /// times, compared with where it is timed the same way.
    fn run(
        &self,
        sf: &str,
        queries: &[String],
        timing: Timing,
        duck: Option<&[(String, Duration)]>,
    ) -> Vec<String> {
        let (sides, reps) = (self.sides, self.reps);
        let time = |side: &Side, query: &Query| match timing {
            Timing::Warm => time_sql_warm(self.npy, side, query, reps),
            Timing::Process => time_sql(self.npy, side, &query.once(), reps),
        };
        println!(
            "TPC-H SF{sf}, best of {reps}, {}, seconds; ratio = their time / ours",
            match timing {
                Timing::Warm =>
                    "every engine warm in its process (npy sql --timing; DuckDB in Python)",
                Timing::Process => "whole `npy sql` processes",
            }
        );
        let mut header = format!("{:<5}", "query");
        for s in sides {
            header += &format!(" {:>13}", s.name);
        }
        header += &format!(" {:>11}", "DF parquet");
        if duck.is_some() {
            header += &format!(" {:>8}", "DuckDB");
        }
        for s in sides {
            header += &format!(" {:>18}", format!("{} /DF", s.name));
        }
        println!("{header}");
        let mut vs_df: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
        let mut wrong = Vec::new();
        let mut vs_duck: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
        for q in queries {
            let q = q.as_str();
            let text = query_text(self.qdir, q);
            let Some((df, want)) = time(self.parquet, &text) else {
                println!("{q}: DataFusion over Parquet failed; skipped");
                continue;
            };
            let dk = duck.and_then(|duck| duck.iter().find(|(n, _)| n == q).map(|(_, d)| *d));
            let mut line = format!("{q:<5}");
            let mut ratios = String::new();
            for (k, s) in sides.iter().enumerate() {
                match time(s, &text) {
                    Some((d, got)) => {
                        if !same_answer(&got, &want) {
                            wrong.push(format!(
                                "{q} {} ({}):\n{got}\nvs DataFusion over Parquet:\n{want}",
                                s.name,
                                if timing == Timing::Warm {
                                    "warm"
                                } else {
                                    "process"
                                }
                            ));
                        }
                        line += &format!(" {:>13.3}", d.as_secs_f64());
                        let r = df.as_secs_f64() / d.as_secs_f64();
                        vs_df[k].push(r);
                        ratios += &format!(" {:>17.2}x", r);
                        if let Some(dk) = dk {
                            vs_duck[k].push(dk.as_secs_f64() / d.as_secs_f64());
                        }
                    }
                    None => {
                        line += &format!(" {:>13}", "failed");
                        ratios += &format!(" {:>18}", "-");
                    }
                }
            }
            line += &format!(" {:>11.3}", df.as_secs_f64());
            line += &match (duck, dk) {
                (None, _) => String::new(),
                (Some(_), Some(d)) => format!(" {:>8.3}", d.as_secs_f64()),
                (Some(_), None) => format!(" {:>8}", "-"),
            };
            println!("{line}{ratios}");
        }
        for (k, s) in sides.iter().enumerate() {
            let vs = match duck {
                Some(_) => format!(", {:.2}x DuckDB", geomean(&vs_duck[k])),
                None => String::new(),
            };
            println!(
                "geomean {:<13} {:.2}x DataFusion over Parquet{vs} ({} queries)",
                s.name,
                geomean(&vs_df[k]),
                vs_df[k].len()
            );
        }
        let at = |name: &str| sides.iter().position(|s| s.name == name);
        for (now, then, what) in [
            (
                "rows",
                "rows read",
                "issue 32 wants >= 0.6x; before: access=read, filter_pushdown=false",
            ),
            (
                "columns",
                "columns no-push",
                "issue 45 wants >= 1.0x; before: filter_pushdown=false",
            ),
            (
                "columns sorted",
                "columns",
                "with the keys' orders recorded; without",
            ),
        ] {
            if let (Some(a), Some(b)) = (at(now), at(then)) {
                let (after, before) = (geomean(&vs_df[a]), geomean(&vs_df[b]));
                println!(
                "{now}: {after:.2}x DataFusion over Parquet ({what}: {before:.2}x): {:.2}x faster",
                after / before
            );
            }
        }
        wrong
    }
}
