//! The cluster over a table on S3 (the tool's `remote` feature): the shards of `main.rs`'s
//! table on a live `s3s-fs` server on loopback (`npy_serde_tests::s3::S3Server`; skipped
//! without it outside CI), read by a scheduler and two executors started with
//! `--store s3://BUCKET/` and the server's `AWS_*` environment:
//!
//! 1. the SQL test queries over `s3://BUCKET/shards/` answer as single-process DataFusion
//!    over the same shards on local disk, both executors running tasks, and `npy sql
//!    --cluster` prints what `npy sql` prints over the local shards;
//! 2. a scheduler without `--store`, and an executor without it, fail the query with an
//!    error that names the store and `--store`;
//! 3. a `--store` that is not an object-store URL stops either program at its start (exit 1,
//!    the flag and the URL named).
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

use super::procs::{free_port, watchdog};
use super::{answer, config, one_at_a_time, run, until, write_table, Cluster, QUERIES};

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
            exe_scheduler: env!("CARGO_BIN_EXE_npy-scheduler"),
            exe_executor: env!("CARGO_BIN_EXE_npy-executor"),
            dir,
            scheduler_port: free_port(),
            stores: stores.iter().map(|s| s.to_string()).collect(),
            env: server.env(),
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
