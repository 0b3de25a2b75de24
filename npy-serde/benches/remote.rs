//! `npy_serde::remote` against a real S3 server on loopback (`s3s-fs`, which checks SigV4
//! signatures), in one run:
//!
//! - a 1 GB W2 `.npy` (33-byte records) read whole into `Vec<W2>` by `RemoteNpy::read_rows`
//!   (default `FetchOptions`: 8 MiB chunks, 4 in flight), against the server's own ceiling
//!   (`curl` GETting the whole object to /dev/null) and `from_path` on the local file;
//! - the same read at chunk sizes of 1, 4, 8 and 16 MiB (how the default was chosen);
//! - a 1 MiB row range from the middle: one GET (counted through `CountingStore`).
//!
//! The server: `$NPY_S3FS`, else `~/.cargo/bin/s3s-fs`, else `s3s-fs` on PATH
//! (`cargo install s3s-fs@0.14.1 --locked --features binary`); without it the bench says so and
//! stops. `NPY_BENCH_SCALE` (default 1: 1 GB) and `NPY_BENCH_REPS` (default 3) as for the other
//! benches.
//!
//! Run: `cargo bench -p npy-serde --features remote --bench remote`

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npy_serde::remote::{CountingStore, FetchOptions, RemoteNpy};
use npy_serde::{NpyRecord, ReaderBuilder};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjPath;
use object_store::ObjectStore;
use serde::Deserialize;

mod common;
use common::{env_or, gbps, time, write_w2};

#[allow(dead_code)] // the fields are read by the decoder, not by the bench
#[derive(Deserialize, NpyRecord)]
struct W2 {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

const KEY: &str = "AKBENCH";
const SECRET: &str = "bench-secret-key";
const BUCKET: &str = "bench";

fn server_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("NPY_S3FS") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").map(|h| Path::new(&h).join(".cargo/bin/s3s-fs"));
    if let Ok(p) = home
        && p.exists()
    {
        return Some(p);
    }
    let ok = Command::new("s3s-fs").arg("--version").output().is_ok();
    ok.then(|| PathBuf::from("s3s-fs"))
}

/// `s3s-fs` serving `root` on a free loopback port, killed on drop.
struct Server(Child, u16);

impl Server {
    fn start(bin: &Path, root: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", KEY, "--secret-key", SECRET])
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "s3s-fs did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server(child, port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn curl(port: u16, key: &str) {
    let status = Command::new("curl")
        .args([
            "-s",
            "-f",
            "-o",
            "/dev/null",
            "--aws-sigv4",
            "aws:amz:us-east-1:s3",
        ])
        .args(["--user", &format!("{KEY}:{SECRET}")])
        .args(["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"])
        .arg(format!("http://127.0.0.1:{port}/{BUCKET}/{key}"))
        .status()
        .expect("curl runs");
    assert!(status.success(), "curl failed");
}

fn main() {
    let Some(bin) = server_binary() else {
        println!("remote bench: no s3s-fs (set NPY_S3FS or install it): skipped");
        return;
    };
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let reps: usize = env_or("NPY_BENCH_REPS", 3);
    let root = std::env::temp_dir().join(format!("npy-remote-bench-{}", std::process::id()));
    std::fs::create_dir_all(root.join(BUCKET)).unwrap();
    let n = (1e9 * scale / 33.0) as u64;
    let local = root.join(BUCKET).join("w2.npy");
    write_w2(&local, n);
    let size = std::fs::metadata(&local).unwrap().len();
    let server = Server::start(&bin, &root);
    let port = server.1;

    let s3 = AmazonS3Builder::new()
        .with_endpoint(format!("http://127.0.0.1:{port}"))
        .with_allow_http(true)
        .with_access_key_id(KEY)
        .with_secret_access_key(SECRET)
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_virtual_hosted_style_request(false)
        .build()
        .unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(s3);
    let url = format!("s3://{BUCKET}/w2.npy");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let rb = ReaderBuilder::new();
    let read = |opts: &FetchOptions| {
        rt.block_on(async {
            let path = ObjPath::from("w2.npy");
            let npy = RemoteNpy::open_with(store.clone(), path, &url, &rb, opts)
                .await
                .unwrap();
            let v: Vec<W2> = npy.read_rows(0..npy.len()).await.unwrap();
            assert_eq!(v.len() as u64, n);
            v
        })
    };

    println!("remote bench: W2 .npy of {n} records ({size} bytes) on s3s-fs at 127.0.0.1:{port}");
    let t_curl = time(reps, || curl(port, "w2.npy"));
    let t_remote = time(reps, || read(&FetchOptions::default()));
    let t_local = time(reps, || npy_serde::from_path::<_, W2>(&local).unwrap());
    let line = |name: &str, d: Duration| {
        println!(
            "  {name:<44} {:>8.3} s {:>6.2} GB/s",
            d.as_secs_f64(),
            gbps(size, d)
        );
    };
    line("curl GET to /dev/null (the ceiling)", t_curl);
    line("RemoteNpy::read_rows, whole, into Vec<W2>", t_remote);
    line("from_path::<W2> on the local file", t_local);
    println!(
        "  ratio remote/curl speed: {:.2}x; remote/local from_path speed: {:.2}x",
        t_curl.as_secs_f64() / t_remote.as_secs_f64(),
        t_local.as_secs_f64() / t_remote.as_secs_f64()
    );

    for mib in [1u64, 4, 8, 16] {
        let opts = FetchOptions::default().chunk_bytes(mib << 20);
        let d = time(reps, || read(&opts));
        line(
            &format!("read_rows whole, {mib} MiB chunks, 4 in flight"),
            d,
        );
    }

    // A 1 MiB row range from the middle: one GET after the open.
    let counting = CountingStore::new(store.clone());
    let rows = (1u64 << 20) / 33;
    let (npy, open_gets) = rt.block_on(async {
        let s: Arc<dyn ObjectStore> = Arc::new(counting.clone());
        let npy = RemoteNpy::open(s, ObjPath::from("w2.npy"), &url, &rb)
            .await
            .unwrap();
        (npy, counting.counts().gets)
    });
    counting.reset();
    let mid = n / 2;
    let d = time(reps, || {
        rt.block_on(npy.read_rows::<W2>(mid..mid + rows)).unwrap()
    });
    let gets = counting.counts().gets / (reps as u64 + 1);
    println!(
        "  1 MiB row range ({rows} rows): {:.2} ms, {gets} GET per read (open: {open_gets} GET)",
        d.as_secs_f64() * 1e3
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
