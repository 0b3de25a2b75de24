//! `npy sql --memory-limit` (features `datafusion` and `parquet`), run as the real binary: a
//! sort and a GROUP BY over 200 000 rows answer inside a limit smaller than their data
//! (12 and 6 MiB: they spill, as EXPLAIN ANALYZE shows), as they do without one; a limit too small to spill fails with exit status 1
//! and "Resources exhausted" naming the limit; a malformed size is a usage error.

use crate::harness::{npy, npy_ok, Dir};

#[derive(serde::Serialize, npy_serde::NpyRecord)]
struct Row {
    id: i64,
    key: i64,
    x: f64,
}

/// 200 000 rows in 4 shards (6.4 MB of data), keys 0..50 000 four times over.
fn table(d: &Dir) -> String {
    for s in 0..4i64 {
        let rows: Vec<Row> = (s * 50_000..(s + 1) * 50_000)
            .map(|id| Row {
                id,
                key: (id * 7919) % 50_000,
                x: (id % 8) as f64 * 0.5,
            })
            .collect();
        npy_serde::to_path(d.file(&format!("s{s}.npy")), &rows).unwrap();
    }
    format!("t={}", d.0.display())
}

/// A full sort (a `LIMIT` would make it a top-k, which keeps its rows in memory).
const SORT: &str = "SELECT id, key, x FROM t ORDER BY key DESC, id";
const GROUP: &str = "SELECT count(*) AS groups, sum(n) AS rows, max(s) AS top \
                     FROM (SELECT key, count(*) AS n, sum(x) AS s FROM t GROUP BY key)";

#[test]
fn a_limit_below_the_data_spills_and_answers_as_without_one() {
    let d = Dir::new("sql-memory");
    let t = table(&d);
    // Each limit below what the query holds in memory without one.
    for (query, limit) in [(SORT, "12MiB"), (GROUP, "6MiB")] {
        let free = npy_ok(["sql", query, "-t", &t, "--csv"]);
        let limited = npy_ok(["sql", query, "-t", &t, "--csv", "--memory-limit", limit]);
        assert_eq!(limited, free, "{query}");
        // It spilled: EXPLAIN ANALYZE counts the spill files.
        let explain = format!("EXPLAIN ANALYZE {query}");
        let plan = npy_ok(["sql", &explain, "-t", &t, "--csv", "--memory-limit", limit]);
        let spills = plan
            .split("spill_count=")
            .skip(1)
            .map(|rest| {
                rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()]
                    .parse::<u64>()
                    .unwrap()
            })
            .sum::<u64>();
        assert!(spills > 0, "{plan}");
    }
    // keys 49 999 down: 4 ids each (id * 7919 ≡ key mod 50 000 for one id in each shard).
    let sorted = npy_ok(["sql", SORT, "-t", &t, "--csv", "--memory-limit", "12MiB"]);
    assert_eq!(sorted.lines().count(), 200_001);
    assert!(
        sorted.lines().nth(1).unwrap().contains(",49999,"),
        "{}",
        &sorted[..100]
    );
    // Each key holds 4 ids; every group's x sum is at most 4 * 3.5.
    let group = npy_ok(["sql", GROUP, "-t", &t, "--csv", "--memory-limit", "6MB"]);
    assert_eq!(group, "groups,rows,top\n50000,200000,14.0\n");
}

#[test]
fn a_limit_too_small_to_spill_fails_naming_it() {
    let d = Dir::new("sql-memory-small");
    let t = table(&d);
    let out = npy(["sql", SORT, "-t", &t, "--memory-limit", "4KiB"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Resources exhausted"), "{stderr}");
    assert!(
        stderr.contains("memory limit 4.0 KiB (4096 bytes)"),
        "{stderr}"
    );

    let out = npy(["sql", SORT, "-t", &t, "--memory-limit", "lots"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--memory-limit"), "{stderr}");
}
