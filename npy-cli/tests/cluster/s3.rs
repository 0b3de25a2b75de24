//! The cluster over a table on S3 (the tool's `remote` feature): the shards of `main.rs`'s
//! table on a live `s3s-fs` server on loopback (`npy_serde_tests::s3::S3Server`; skipped
//! without it outside CI), read by a scheduler and two executors started with
//! `--store s3://BUCKET/` and the server's `AWS_*` environment:
//!
//! 1. the SQL test queries over `s3://BUCKET/shards/` answer as single-process DataFusion
//!    over the same shards on local disk, both executors running tasks, and `npy sql
//!    --cluster` prints what `npy sql` prints over the local shards; `COPY ... TO
//!    's3://BUCKET/...'` (a file, an archive of columns, a directory) writes through the
//!    executors' own store the bytes one process writes locally, and a failed one no object;
//! 2. a scheduler without `--store`, and an executor without it, fail the query with an
//!    error that names the store and `--store`;
//! 3. a `--store` that is not an object-store URL stops either program at its start (exit 1,
//!    the flag and the URL named);
//! 4. column tables on the server (an `.npz` of columns, a prefix of per-column `.npy`) answer
//!    on the cluster as one process over the local shards, and the server, counted by the
//!    harness's proxy in front of it, serves each query the data of the columns it reads and
//!    no more.
//!
//! A watchdog aborts the test after 120 s; every process is killed by its guard.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{NpyReadOptions, NpySessionExt};
use npy_serde_tests::s3::{S3Server, ACCESS_KEY, SECRET_KEY};
use npy_serde_tests::TempDir;
use object_store::aws::AmazonS3Builder;

use super::procs::watchdog;
use super::{answer, config, one_at_a_time, run, until, write_table, Cluster, KEYS, QUERIES, ROWS};

/// Registers the server's bucket in the client's session. The client is this test's
/// process, whose environment its threads share: the store is configured here, as
/// `register_store_for` would configure it from the server's `AWS_*` environment.
fn client_store(ctx: &SessionContext, server: &S3Server) {
    let store = AmazonS3Builder::new()
        .with_endpoint(server.endpoint())
        .with_bucket_name(server.bucket())
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .with_region("us-east-1")
        .with_allow_http(true)
        .build()
        .expect("an S3 store for the test server");
    let url = ObjectStoreUrl::parse(format!("s3://{}", server.bucket())).unwrap();
    ctx.runtime_env()
        .register_object_store(url.as_ref(), Arc::new(store));
}

/// `npy ARGS` with `env` as its `AWS_*` environment: its stdout, or a panic with its stderr.
fn npy(env: &[(String, String)], args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_npy"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
        cmd.env_remove(k);
    }
    let out = cmd
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "npy {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_cluster_started_with_store_reads_a_table_on_s3() {
    let _one = one_at_a_time();
    let Some(server) = S3Server::try_start() else {
        return;
    };
    let _watchdog = watchdog(Duration::from_secs(120));
    let started = Instant::now();
    let tmp = TempDir::new("npy-cluster-s3");
    let data = tmp.path().join("t");
    std::fs::create_dir_all(&data).unwrap();
    write_table(&data);
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        server.put(&format!("shards/{name}"), &std::fs::read(&path).unwrap());
    }
    let local_table = data.to_str().unwrap();
    let table = server.url("shards/");
    let store = format!("s3://{}/", server.bucket());
    let cluster = |name: &str, stores: &[&str]| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Cluster {
            stores: stores.iter().map(|s| s.to_string()).collect(),
            env: server.env(),
            ..Cluster::new(&dir)
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = |cluster: &Cluster| {
        let url = format!("df://127.0.0.1:{}", cluster.scheduler_port);
        let ctx = rt
            .block_on(npy_datafusion::ballista::remote(&url, config()))
            .unwrap();
        client_store(&ctx, &server);
        rt.block_on(ctx.register_npy("t", &table, NpyReadOptions::new()))
            .unwrap();
        (ctx, url)
    };
    let local = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(8)
            .set_usize("datafusion.optimizer.repartition_file_min_size", 1),
    );
    rt.block_on(local.register_npy("t", local_table, NpyReadOptions::new()))
        .unwrap();
    // (`COPY ... TO 'x.npy'` below, in one process as on the cluster.)
    npy_datafusion::register_npy_format(&local).unwrap();
    let wants: Vec<String> = QUERIES.iter().map(|q| answer(&rt, &local, q)).collect();

    // 1. A scheduler and two executors with --store: the single-process answers.
    let with = cluster("with-store", &[&store]);
    let scheduler = with.scheduler();
    let a = with.executor("executor-a");
    let b = with.executor("executor-b");
    let (ctx, url) = client(&with);
    let t = Instant::now();
    for (q, want) in QUERIES.iter().zip(&wants) {
        assert_eq!(&answer(&rt, &ctx, q), want, "{q}");
    }
    eprintln!(
        "the test queries over {table}: {:?} on the cluster",
        t.elapsed()
    );
    until(
        &rt,
        &ctx,
        QUERIES[0],
        &wants[0],
        Duration::from_secs(20),
        "both executors ran tasks over S3",
        || a.tasks() > 0 && b.tasks() > 0,
    );
    // The tool as the client: its store from the server's environment.
    let (t_local, t_s3) = (format!("t={local_table}"), format!("t={table}"));
    let printed = npy(&[], &["sql", "--csv", QUERIES[0], "-t", &t_local]);
    let on_cluster = npy(
        &server.env(),
        &["sql", "--csv", QUERIES[0], "-t", &t_s3, "--cluster", &url],
    );
    assert_eq!(on_cluster, printed);
    assert_eq!(printed.lines().count(), 6, "{printed}");

    // COPY to the bucket, written by an executor through its own --store: the bytes one
    // process writes to a local file (a file, an archive of columns, a directory), and a
    // COPY that fails leaves no object.
    let copy = "SELECT id, key, x, flag FROM t WHERE id % 997 = 0 ORDER BY id";
    std::fs::create_dir_all(tmp.path().join("local-copies")).unwrap();
    for (target, options) in [
        ("copied.npy", ""),
        ("cols.npz", "OPTIONS ('layout' 'columns')"),
        ("dir/", "STORED AS NPY"),
    ] {
        let local_out = tmp.path().join("local-copies").join(target);
        let s3_out = format!("out/{target}");
        let q = |to: &str| format!("COPY ({copy}) TO '{to}' {options}");
        let count = answer(&rt, &local, &q(local_out.to_str().unwrap()));
        assert_eq!(
            answer(&rt, &ctx, &q(&server.url(&s3_out))),
            count,
            "{target}"
        );
        let read = |p: &std::path::Path| std::fs::read(p).unwrap();
        if target.ends_with('/') {
            let names = |dir: &std::path::Path| {
                let mut n: Vec<String> = (std::fs::read_dir(dir).unwrap())
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
                n.sort();
                n
            };
            let (here, there) = (names(&local_out), names(&server.object_path(&s3_out)));
            assert_eq!(here.len(), there.len(), "{here:?} {there:?}");
            let data = |dir: &std::path::Path, names: &[String]| -> Vec<Vec<u8>> {
                (names.iter())
                    .filter(|n| n.ends_with(".npy"))
                    .map(|n| read(&dir.join(n)))
                    .collect()
            };
            assert_eq!(
                data(&local_out, &here),
                data(&server.object_path(&s3_out), &there)
            );
        } else {
            assert!(
                read(&local_out) == read(&server.object_path(&s3_out)),
                "{target}: the cluster wrote other bytes to the bucket"
            );
        }
    }
    let failing = "SELECT CASE WHEN id = 5000 THEN NULL ELSE x END AS x FROM t ORDER BY id";
    let err = rt
        .block_on(run(
            &ctx,
            &format!("COPY ({failing}) TO '{}'", server.url("out/failed.npy")),
        ))
        .expect_err("a null without a null policy")
        .to_string();
    assert!(err.contains("null"), "{err}");
    assert!(
        !server.exists("out/failed.npy"),
        "a failed COPY left an object"
    );
    drop((a, b, scheduler));

    // 2. A scheduler without --store: it cannot list the table, and says which flag it lacks.
    let without = cluster("scheduler-without-store", &[]);
    let scheduler = without.scheduler();
    let (ctx, _) = client(&without);
    let err = rt
        .block_on(run(&ctx, QUERIES[0]))
        .expect_err("a scheduler without the table's store")
        .to_string();
    eprintln!("a scheduler without --store: {err}");
    assert!(
        err.contains(&format!(
            "the Ballista scheduler has no object store for {store}"
        )) && err.contains(&format!("--store {store}")),
        "{err}"
    );
    drop(scheduler);
    // An executor without --store: its tasks fail, saying the same.
    let half = cluster("executor-without-store", &[&store]);
    let scheduler = half.scheduler();
    let mut bare = cluster("executor-without-store", &[]);
    bare.scheduler_port = half.scheduler_port;
    let executor = bare.executor("executor");
    let (ctx, _) = client(&half);
    let err = rt
        .block_on(run(&ctx, QUERIES[0]))
        .expect_err("an executor without the table's store")
        .to_string();
    eprintln!("an executor without --store: {err}");
    assert!(
        err.contains("Ballista executor ")
            && err.contains(&format!("has no object store for {store}"))
            && err.contains(&format!("--store {store}")),
        "{err}\n{}",
        executor.log()
    );
    assert!(!err.contains("panic"), "{err}");
    drop((executor, scheduler));
    eprintln!("the S3 cluster test took {:?}", started.elapsed());
}

/// Column tables on the live S3 server (an aligned `.npz` of the columns and a prefix of
/// per-column `.npy` files), behind the harness's counting proxy, queried on a cluster started
/// with `--store`: the answers of one process over the local row shards, both executors
/// running tasks; and, counted at the server (the scheduler and both executors talk to it
/// through the proxy), adding a column to a query adds that column's data bytes and no more,
/// and a query over no column's data fetches no data.
#[test]
fn column_tables_on_s3_answer_on_the_cluster_and_fetch_only_the_columns_read() {
    let _one = one_at_a_time();
    let Some(server) = S3Server::try_start_counted() else {
        return;
    };
    let _watchdog = watchdog(Duration::from_secs(120));
    let started = Instant::now();
    let tmp = TempDir::new("npy-cluster-s3-columns");
    let data = tmp.path().join("t");
    std::fs::create_dir_all(&data).unwrap();
    write_table(&data);
    // The same rows as columns (`write_table`'s shards hold ids 0..ROWS in order).
    let id: Vec<i64> = (0..ROWS).collect();
    let key: Vec<i64> = id.iter().map(|i| (i * 7919) % KEYS).collect();
    let x: Vec<f64> = id.iter().map(|i| (i % 13) as f64 * 0.25 - 1.0).collect();
    let flag: Vec<u8> = id.iter().map(|i| (i % 5) as u8).collect();
    let archive = tmp.path().join("cols.npz");
    let mut w = npy_serde::NpzWriter::new(std::fs::File::create(&archive).unwrap()).align(true);
    w.add("id", &id).unwrap();
    w.add("key", &key).unwrap();
    w.add("x", &x).unwrap();
    w.add("flag", &flag).unwrap();
    w.finish().unwrap();
    server.put("cols.npz", &std::fs::read(&archive).unwrap());
    server.put("cols/id.npy", &npy_serde::to_vec(&id).unwrap());
    server.put("cols/key.npy", &npy_serde::to_vec(&key).unwrap());
    server.put("cols/x.npy", &npy_serde::to_vec(&x).unwrap());
    server.put("cols/flag.npy", &npy_serde::to_vec(&flag).unwrap());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let local = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(8)
            .set_usize("datafusion.optimizer.repartition_file_min_size", 1),
    );
    rt.block_on(local.register_npy("t", data.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let wants: Vec<String> = QUERIES.iter().map(|q| answer(&rt, &local, q)).collect();

    let store = format!("s3://{}/", server.bucket());
    let dir = tmp.path().join("cluster");
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = Cluster {
        stores: vec![store],
        env: server.env(),
        ..Cluster::new(&dir)
    };
    let scheduler = cluster.scheduler();
    let a = cluster.executor("executor-a");
    let b = cluster.executor("executor-b");
    let url = format!("df://127.0.0.1:{}", cluster.scheduler_port);
    for (format, location) in [("npz", "cols.npz"), ("npy", "cols/")] {
        let ctx = rt
            .block_on(npy_datafusion::ballista::remote(&url, config()))
            .unwrap();
        client_store(&ctx, &server);
        let spec: npy_datafusion::TableSpec =
            format!("{format}('{}', layout=columns)", server.url(location))
                .parse()
                .unwrap();
        rt.block_on(ctx.register_spec("t", &spec)).unwrap();
        let t = Instant::now();
        for (q, want) in QUERIES.iter().zip(&wants) {
            assert_eq!(&answer(&rt, &ctx, q), want, "{location}: {q}");
        }
        eprintln!(
            "the test queries over {location} on S3: {:?} on the cluster",
            t.elapsed()
        );
        until(
            &rt,
            &ctx,
            QUERIES[0],
            &wants[0],
            Duration::from_secs(20),
            "both executors ran tasks over the column tables",
            || a.tasks() > 0 && b.tasks() > 0,
        );

        // What each query costs at the server, every process's requests included.
        let fetched = |q: &str| {
            server.reset_counts();
            answer(&rt, &ctx, q);
            let counts = server.counts();
            eprintln!("{location}: {q}: at the server {counts:?}");
            counts
        };
        let survey = fetched("SELECT count(*) FROM t").object_bytes;
        let x_only = fetched("SELECT sum(x) FROM t").object_bytes;
        let x_and_id = fetched("SELECT sum(x), sum(id) FROM t").object_bytes;
        let column = ROWS as u64 * 8;
        // Each task surveys the table again as its scan opens (the archive's end and the
        // columns' headers, what count(*) fetched), at most one task per partition (the
        // session's 8): past that, a query fetches the rows of the columns it reads, each row
        // once, whichever task reads it (before, every task fetched every row of each column
        // it read: 4 times the column at the server for one query on two executors).
        let surveys = 8 * survey;
        assert!(
            (column..column + surveys).contains(&(x_only - survey)),
            "{location}: sum(x) fetched {x_only} bytes, count(*) {survey}; x holds {column}"
        );
        // The same tasks and surveys: adding a column adds its rows and its header.
        let margin = 64 * 1024;
        assert!(
            (column..column + margin).contains(&(x_and_id - x_only)),
            "{location}: adding id fetched {} bytes; id holds {column}",
            x_and_id - x_only
        );
        // The planning survey: the archive's end (at most 64 KiB of comment and the
        // directory) and each column's header, no column's data.
        assert!(
            survey < 2 * margin,
            "{location}: count(*) fetched {survey} bytes: it reads no column's data"
        );
        assert_eq!(server.counts().writes, 0, "{location}");
    }
    drop((a, b, scheduler));
    eprintln!(
        "the S3 column-table cluster test took {:?}",
        started.elapsed()
    );
}

/// Runs `exe args`, which must exit within 20 s (else it is killed and the test fails): its
/// exit code and stderr.
fn exits(exe: &str, args: &[&str]) -> (Option<i32>, String) {
    let tmp = TempDir::new("npy-cluster-exit");
    let log = tmp.path().join("stderr");
    let mut child = Command::new(exe)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{exe} {args:?} still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.code(), std::fs::read_to_string(&log).unwrap())
}

#[test]
fn a_store_that_is_not_an_object_store_url_stops_the_programs() {
    for exe in [
        env!("CARGO_BIN_EXE_npy-scheduler"),
        env!("CARGO_BIN_EXE_npy-executor"),
    ] {
        for (bad, says) in [
            ("/data/shards/", "not an object-store URL"),
            ("ftp://host/x/", "not an object-store URL"),
            ("s3:///shards/", "names no bucket"),
        ] {
            let (code, stderr) = exits(exe, &["--store", "s3://ok/", "--store", bad]);
            assert_eq!(code, Some(1), "{exe} --store {bad}: {stderr}");
            assert!(
                stderr.contains(&format!("--store {bad}: ")) && stderr.contains(says),
                "{exe} --store {bad}: {stderr}"
            );
        }
        let help = Command::new(exe).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.contains("--store <URL>") && help.contains("AWS_ENDPOINT_URL"),
            "{help}"
        );
    }
}
