//! `npy_remote` against real servers on loopback, in one run: `s3s-fs` (an S3 server
//! that checks SigV4 signatures) and `nginx` (static files, through object_store's HTTP store).
//!
//! - Each server's cost per GET, by `curl`: a whole GET, a 1-byte and an 8 MiB ranged GET.
//!   `s3s-fs` 0.14 computes the MD5 of the whole object on every GET and HEAD of an object
//!   written into its directory by hand (it has no stored ETag for it): a ranged GET then costs
//!   what a whole GET costs, and a read in 8 MiB chunks crawls. An object uploaded through it
//!   (PUT) has its ETag stored and is served without it: the bench reads the uploaded copy and
//!   prints both costs.
//! - A 1 GB W2 `.npy` (33-byte records) read whole into `Vec<W2>` by `RemoteNpy::read_rows`
//!   (default `FetchOptions`: 8 MiB chunks, 4 in flight), against the server's own ceiling
//!   (`curl` GETting the whole object to /dev/null) and `from_path` on the local file; the same
//!   GETs through object_store without decoding (what our side adds), the same GETs with
//!   each response's frames only counted (the HTTP client's own cost, no copy) and one GET of
//!   the whole object so counted (curl's work through the client), and other chunk sizes and
//!   concurrencies (how the default was chosen).
//! - A 1 MiB row range from the middle: one GET (counted through `CountingStore`, asserted).
//! - `npy sql`'s Q1 over W2 shards on the S3 server against the
//!   same shards on local disk.
//!
//! The servers: `$NPY_S3FS`, else `~/.cargo/bin/s3s-fs`, else `s3s-fs` on PATH
//! (`cargo install s3s-fs@0.14.1 --locked --features binary`); `$NPY_NGINX`, else `nginx` on
//! PATH or `/usr/sbin/nginx`. Without `s3s-fs` the bench says so and stops; without `nginx` it
//! skips that server. `NPY_BENCH_SCALE` (default 1: 1 GB) and `NPY_BENCH_REPS` (default 3) as
//! for the other benches; `NPY_BENCH_ONLY=nginx` runs the nginx cases alone (for a profile).
//!
//! Run: `cargo bench -p npy-datafusion --features remote --bench remote`

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use npy_remote::{CountingStore, FetchOptions, RemoteNpy};
use npy_serde::{NpyRecord, ReaderBuilder};
use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjPath;
use object_store::{ClientOptions, ObjectStore, ObjectStoreExt};
use serde::Deserialize;

#[path = "../../npy-serde/benches/common/mod.rs"]
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

/// `var`'s path, else the first of `names` that exists or runs.
fn binary(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Ok(p) = std::env::var(var) {
        return Some(PathBuf::from(p));
    }
    for name in names {
        let p = PathBuf::from(name.replace('~', &std::env::var("HOME").unwrap_or_default()));
        if p.is_absolute() && p.exists() {
            return Some(p);
        }
        if Command::new(name).arg("-v").output().is_ok() {
            return Some(p);
        }
    }
    None
}

/// A server process on a loopback port, killed on drop.
struct Server(Child, u16);

impl Server {
    fn start(what: &str, cmd: impl FnOnce(u16) -> Command) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = cmd(port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "{what} did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server(child, port)
    }

    fn s3s(bin: &Path, root: &Path) -> Server {
        Server::start("s3s-fs", |port| {
            let mut c = Command::new(bin);
            c.args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--access-key", KEY, "--secret-key", SECRET])
                .arg(root);
            c
        })
    }

    /// nginx serving `dir/www`, its configuration and logs in `dir`.
    fn nginx(bin: &Path, dir: &Path) -> Server {
        Server::start("nginx", |port| {
            let d = dir.display();
            let conf = dir.join("nginx.conf");
            let text = format!(
                "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
                 error_log {d}/error.log;\nevents {{ worker_connections 64; }}\n\
                 http {{\n  access_log off;\n  sendfile on;\n  client_body_temp_path {d}/body;\n\
                 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 server {{ listen 127.0.0.1:{port}; root {d}/www; }}\n}}\n"
            );
            std::fs::write(&conf, text).unwrap();
            let mut c = Command::new(bin);
            c.arg("-p").arg(dir).arg("-c").arg(conf);
            c
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `curl` with `args` against `url` (signed for s3s-fs when `s3`), the body to /dev/null.
fn curl(s3: bool, url: &str, args: &[&str]) {
    let mut c = Command::new("curl");
    c.args(["-s", "-f", "-o", "/dev/null"]);
    if s3 {
        c.args(["--aws-sigv4", "aws:amz:us-east-1:s3"])
            .args(["--user", &format!("{KEY}:{SECRET}")])
            .args(["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]);
    }
    let status = c.args(args).arg(url).status().expect("curl runs");
    assert!(status.success(), "curl {args:?} {url} failed");
}

fn line(name: &str, d: Duration, size: u64) {
    println!(
        "  {name:<52} {:>8.3} s {:>6.2} GB/s",
        d.as_secs_f64(),
        gbps(size, d)
    );
}

fn ms(name: &str, d: Duration) {
    println!("  {name:<52} {:>8.2} ms", d.as_secs_f64() * 1e3);
}

/// One server under test: its store, the object's URL for curl and for messages.
struct Target<'a> {
    name: &'a str,
    store: Arc<dyn ObjectStore>,
    path: ObjPath,
    curl_url: String,
    s3: bool,
}

struct Run<'a> {
    rt: &'a tokio::runtime::Runtime,
    rb: ReaderBuilder,
    reps: usize,
    n: u64,
    size: u64,
    local: &'a Path,
}

impl Run<'_> {
    fn read(&self, t: &Target, opts: &FetchOptions) -> Vec<W2> {
        self.rt.block_on(async {
            let npy =
                RemoteNpy::open_with(t.store.clone(), t.path.clone(), &t.curl_url, &self.rb, opts)
                    .await
                    .unwrap();
            let v: Vec<W2> = npy.read_rows(0..npy.len()).await.unwrap();
            assert_eq!(v.len() as u64, self.n);
            v
        })
    }

    /// The GETs `read` makes (8 MiB chunks, 4 in flight) through object_store, not decoded.
    fn fetch_only(&self, t: &Target) -> u64 {
        let chunk = FetchOptions::default().chunk_size();
        let ranges: Vec<_> = (0..self.size.div_ceil(chunk))
            .map(|i| i * chunk..self.size.min((i + 1) * chunk))
            .collect();
        self.rt.block_on(async {
            futures::stream::iter(ranges)
                .map(|r| t.store.get_range(&t.path, r))
                .buffered(4)
                .try_fold(0u64, |n, b| async move { Ok(n + b.len() as u64) })
                .await
                .unwrap()
        })
    }

    /// The same GETs as [`fetch_only`](Run::fetch_only) (8 MiB x 4) with each response's
    /// frames only counted, as the client returns them (no copy: the HTTP client's own cost),
    /// or, with `whole`, one GET of the whole object so counted (what `curl` does).
    fn stream_only(&self, t: &Target, whole: bool) -> u64 {
        let chunk = if whole {
            self.size
        } else {
            FetchOptions::default().chunk_size()
        };
        let ranges: Vec<_> = (0..self.size.div_ceil(chunk))
            .map(|i| i * chunk..self.size.min((i + 1) * chunk))
            .collect();
        self.rt.block_on(async {
            futures::stream::iter(ranges)
                .map(|r| async move {
                    let opts = object_store::GetOptions {
                        range: Some(r.into()),
                        ..Default::default()
                    };
                    let body = t.store.get_opts(&t.path, opts).await?.into_stream();
                    body.try_fold(0u64, |n, b| async move { Ok(n + b.len() as u64) })
                        .await
                })
                .buffered(4)
                .try_fold(0u64, |n, b| async move { Ok(n + b) })
                .await
                .unwrap()
        })
    }

    fn server(&self, t: &Target, t_local: Duration) {
        let size = self.size;
        println!("{}:", t.name);
        let reps = self.reps;
        let whole = time(reps, || curl(t.s3, &t.curl_url, &[]));
        let one = time(reps, || {
            curl(t.s3, &t.curl_url, &["-H", "Range: bytes=1000-1000"])
        });
        let eight = time(reps, || {
            curl(t.s3, &t.curl_url, &["-H", "Range: bytes=1000-8389607"])
        });
        line("curl GET whole to /dev/null (the ceiling)", whole, size);
        ms("curl ranged GET of 1 byte", one);
        ms("curl ranged GET of 8 MiB", eight);
        let fetch = time(reps, || self.fetch_only(t));
        line("object_store GETs, 8 MiB x 4, not decoded", fetch, size);
        let frames = time(reps, || assert_eq!(self.stream_only(t, false), size));
        line(
            "object_store GETs, 8 MiB x 4, frames only counted",
            frames,
            size,
        );
        let one = time(reps, || assert_eq!(self.stream_only(t, true), size));
        line("object_store GET whole, frames only counted", one, size);
        let remote = time(reps, || self.read(t, &FetchOptions::default()));
        line("RemoteNpy::read_rows, whole, into Vec<W2>", remote, size);
        println!(
            "  ratio read_rows/curl speed: {:.2}x; read_rows/GETs alone: {:.2}x; \
             read_rows/GET frames counted: {:.2}x; read_rows/local from_path: {:.2}x",
            whole.as_secs_f64() / remote.as_secs_f64(),
            fetch.as_secs_f64() / remote.as_secs_f64(),
            frames.as_secs_f64() / remote.as_secs_f64(),
            t_local.as_secs_f64() / remote.as_secs_f64()
        );
        for (mib, conc) in [(4u64, 4usize), (16, 4), (8, 8), (32, 8)] {
            let opts = FetchOptions::default()
                .chunk_bytes(mib << 20)
                .concurrency(conc);
            let d = time(reps, || self.read(t, &opts));
            line(
                &format!("read_rows whole, {mib} MiB chunks, {conc} in flight"),
                d,
                size,
            );
        }

        // A 1 MiB row range from the middle: one GET after the open.
        let counting = CountingStore::new(t.store.clone());
        let rows = (1u64 << 20) / 33;
        let npy = self.rt.block_on(async {
            let s: Arc<dyn ObjectStore> = Arc::new(counting.clone());
            RemoteNpy::open(s, t.path.clone(), &t.curl_url, &self.rb)
                .await
                .unwrap()
        });
        let open = counting.counts();
        assert_eq!((open.gets, open.requests()), (1, 1), "open: one GET");
        counting.reset();
        let mid = self.n / 2;
        let d = time(reps, || {
            self.rt
                .block_on(npy.read_rows::<W2>(mid..mid + rows))
                .unwrap()
        });
        let c = counting.counts();
        assert_eq!(c.gets, reps as u64 + 1, "one GET per 1 MiB range read");
        assert_eq!(c.requests(), c.gets, "nothing but GETs");
        ms(
            &format!("1 MiB row range ({rows} rows): 1 GET each (open: 1 GET)"),
            d,
        );
    }
}

fn main() {
    let Some(s3s_bin) = binary("NPY_S3FS", &["~/.cargo/bin/s3s-fs", "s3s-fs"]) else {
        println!("remote bench: no s3s-fs (set NPY_S3FS or install it): skipped");
        return;
    };
    let nginx_bin = binary("NPY_NGINX", &["/usr/sbin/nginx", "nginx"]);
    let scale: f64 = env_or("NPY_BENCH_SCALE", 1.0);
    let reps: usize = env_or("NPY_BENCH_REPS", 3);
    let root = std::env::temp_dir().join(format!("npy-remote-bench-{}", std::process::id()));
    let s3root = root.join("s3");
    std::fs::create_dir_all(s3root.join(BUCKET)).unwrap();
    std::fs::create_dir_all(root.join("nginx/www")).unwrap();
    let n = (1e9 * scale / 33.0) as u64;
    let local = root.join("w2.npy");
    write_w2(&local, n);
    let size = std::fs::metadata(&local).unwrap().len();
    // The same file written into s3s-fs's directory by hand and served by nginx.
    std::fs::hard_link(&local, s3root.join(BUCKET).join("w2_in_dir.npy")).unwrap();
    std::fs::hard_link(&local, root.join("nginx/www/w2.npy")).unwrap();
    let s3s = Server::s3s(&s3s_bin, &s3root);
    let s3_url = |key: &str| format!("http://127.0.0.1:{}/{BUCKET}/{key}", s3s.1);
    // Uploaded through the server, which stores its ETag.
    curl(true, &s3_url("w2.npy"), &["-T", local.to_str().unwrap()]);

    let s3: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::new()
            .with_endpoint(format!("http://127.0.0.1:{}", s3s.1))
            .with_allow_http(true)
            .with_access_key_id(KEY)
            .with_secret_access_key(SECRET)
            .with_region("us-east-1")
            .with_bucket_name(BUCKET)
            .with_virtual_hosted_style_request(false)
            .build()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = Run {
        rt: &rt,
        rb: ReaderBuilder::new(),
        reps,
        n,
        size,
        local: &local,
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "remote bench: W2 .npy of {n} records ({size} bytes), best of {reps}; loadavg {}",
        load.trim()
    );
    let t_local = time(reps, || npy_serde::from_path::<_, W2>(run.local).unwrap());
    line("from_path::<W2> on the local file", t_local, size);

    // s3s-fs's cost per GET of an object it has no ETag for.
    let in_dir = s3_url("w2_in_dir.npy");
    let one = time(1, || curl(true, &in_dir, &["-H", "Range: bytes=1000-1000"]));
    let whole = time(1, || curl(true, &in_dir, &[]));
    println!("s3s-fs, the object written into its directory (no stored ETag):");
    line("curl GET whole", whole, size);
    ms(
        "curl ranged GET of 1 byte (an MD5 of the whole object)",
        one,
    );

    // `NPY_BENCH_ONLY=nginx` (for profiles): the nginx cases alone.
    let only_nginx = std::env::var("NPY_BENCH_ONLY").is_ok_and(|v| v == "nginx");
    if !only_nginx {
        run.server(
            &Target {
                name: "s3s-fs, the object uploaded by PUT",
                store: s3.clone(),
                path: ObjPath::from("w2.npy"),
                curl_url: s3_url("w2.npy"),
                s3: true,
            },
            t_local,
        );
    }
    if let Some(bin) = &nginx_bin {
        let nginx = Server::nginx(bin, &root.join("nginx"));
        let http: Arc<dyn ObjectStore> = Arc::new(
            HttpBuilder::new()
                .with_url(format!("http://127.0.0.1:{}", nginx.1))
                .with_client_options(ClientOptions::new().with_allow_http(true))
                .build()
                .unwrap(),
        );
        run.server(
            &Target {
                name: "nginx through object_store's HTTP store",
                store: http,
                path: ObjPath::from("w2.npy"),
                curl_url: format!("http://127.0.0.1:{}/w2.npy", nginx.1),
                s3: false,
            },
            t_local,
        );
    } else {
        println!("nginx: not found (set NPY_NGINX): skipped");
    }
    for key in ["w2.npy", "w2_in_dir.npy"] {
        let _ = std::fs::remove_file(s3root.join(BUCKET).join(key));
    }
    if !only_nginx {
        sql::q1(&run, &s3, &s3_url, &root, scale);
    }
    drop(s3s);
    let _ = std::fs::remove_dir_all(&root);
}

/// Q1 over W2 shards on the S3 server and on local disk.
mod sql {
    use super::*;
    use datafusion::execution::object_store::ObjectStoreUrl;
    use datafusion::prelude::SessionContext;
    use npy_datafusion::{NpyReadOptions, NpySessionExt};

    const Q1: &str = "SELECT flag, count(*), avg(x), max(y) FROM w2 GROUP BY flag";
    const SHARDS: u64 = 4;

    pub(super) fn q1(
        run: &Run,
        s3: &Arc<dyn ObjectStore>,
        s3_url: &dyn Fn(&str) -> String,
        root: &Path,
        scale: f64,
    ) {
        let per = (5_000_000.0 * scale) as u64;
        let dir = root.join("shards");
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = 0;
        for i in 0..SHARDS {
            let p = dir.join(format!("w2_{i}.npy"));
            write_w2(&p, per);
            bytes += std::fs::metadata(&p).unwrap().len();
            curl(
                true,
                &s3_url(&format!("shards/w2_{i}.npy")),
                &["-T", p.to_str().unwrap()],
            );
        }
        let query = |location: &str| {
            let ctx = SessionContext::new();
            let url = ObjectStoreUrl::parse(format!("s3://{BUCKET}")).unwrap();
            ctx.register_object_store(url.as_ref(), s3.clone());
            run.rt.block_on(async {
                ctx.register_npy("w2", location, NpyReadOptions::new())
                    .await
                    .unwrap();
                let rows: usize = ctx
                    .sql(Q1)
                    .await
                    .unwrap()
                    .collect()
                    .await
                    .unwrap()
                    .iter()
                    .map(|b| b.num_rows())
                    .sum();
                assert_eq!(rows, 251);
            })
        };
        let local = format!("{}/", dir.display());
        let remote = format!("s3://{BUCKET}/shards/");
        let t_local = time(run.reps, || query(&local));
        let t_remote = time(run.reps, || query(&remote));
        println!("sql Q1 over {SHARDS} W2 shards of {per} records ({bytes} bytes):");
        line("local disk", t_local, bytes);
        line(
            "s3s-fs (uploaded by PUT), s3://bench/shards/",
            t_remote,
            bytes,
        );
        println!(
            "  ratio s3/local speed: {:.2}x",
            t_local.as_secs_f64() / t_remote.as_secs_f64()
        );
    }
}
