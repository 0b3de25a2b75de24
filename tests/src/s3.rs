//! Live servers on loopback for the object-store tests (npy-serde's `remote` feature, the
//! tool's `s3://` and `http://` inputs): [`S3Server`] runs `s3s-fs` (an S3 server over a
//! directory that checks SigV4 signatures, handles ranges, multipart uploads and their abort),
//! [`HttpServer`] runs `nginx` (static files with Range support) over a directory.
//!
//! Each server is a child process on a free port of 127.0.0.1 over a temporary directory of its
//! own, killed (and the directory removed) on drop. The binaries are found through an
//! environment variable (`NPY_S3FS`, `NPY_NGINX`), else on `PATH` (and `/usr/sbin/nginx`).
//! Without one, [`S3Server::try_start`] / [`HttpServer::try_start`] print why and return `None`
//! (the test is skipped), except under `CI=true`, where a missing server fails the test.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::TempDir;

mod proxy;
pub use proxy::ServerCounts;

/// The access key the test server accepts.
pub const ACCESS_KEY: &str = "npyserdetest";
/// The secret key the test server accepts.
pub const SECRET_KEY: &str = "npyserdetestsecret";
/// The bucket every [`S3Server`] has.
pub const BUCKET: &str = "npy";

/// A binary from `var`, else the first of `names` found on `PATH` or as a path.
fn find_binary(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        let as_path = Path::new(name);
        if as_path.is_absolute() && as_path.is_file() {
            return Some(as_path.to_path_buf());
        }
        if let Some(found) = std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
        {
            return Some(found);
        }
    }
    None
}

/// `None` with a message, or a panic under `CI=true`.
fn missing(what: &str, var: &str) -> Option<PathBuf> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what} not found (set {var} or put it on PATH) while CI=true: the live object-store tests must not be skipped in CI");
    }
    eprintln!("skipped: {what} not found (set {var} or put it on PATH)");
    None
}

/// A free port on 127.0.0.1 (bound and released; the server binds it right after).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("cannot bind a loopback port");
    l.local_addr()
        .expect("a bound socket has an address")
        .port()
}

/// Waits until `port` accepts connections; false if `child` exits first or 15 s pass.
fn wait_listening(child: &mut Child, port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Starts `cmd` (built for a port) on a free port, three tries (the port may be taken between
/// choosing and binding it). `is_ours` tells the server started from another process's that
/// took the port first (then the connection check alone would pass: a test once talked to
/// such a stranger and had its connection reset).
fn spawn_on_free_port(
    what: &str,
    mut cmd: impl FnMut(u16) -> Command,
    is_ours: impl Fn(u16) -> bool,
) -> (Child, u16) {
    for _ in 0..3 {
        let port = free_port();
        let mut child = cmd(port)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        if wait_listening(&mut child, port) && is_ours(port) {
            return (child, port);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("{what} did not start listening on a loopback port (three tries)");
}

/// The answer to `GET path` (HTTP/1.1, the connection closed after it), or `None` if the
/// exchange failed.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// An `s3s-fs` server on loopback with bucket [`BUCKET`] and keys [`ACCESS_KEY`] /
/// [`SECRET_KEY`]; with [`try_start_counted`](S3Server::try_start_counted), behind a proxy
/// that counts every request and byte ([`counts`](S3Server::counts)).
pub struct S3Server {
    child: Option<Child>,
    port: u16,
    root: TempDir,
    proxy: Option<proxy::Proxy>,
}

impl S3Server {
    /// Starts a server, or `None` (with a message) when `s3s-fs` is not found outside CI.
    ///
    /// # Panics
    ///
    /// Under `CI=true` without `s3s-fs`; if the server does not start.
    pub fn try_start() -> Option<S3Server> {
        let bin = find_binary("NPY_S3FS", &["s3s-fs"]).or_else(|| missing("s3s-fs", "NPY_S3FS"))?;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = TempDir::new(&format!("s3s-{n}"));
        std::fs::create_dir_all(root.join(BUCKET)).expect("cannot create the bucket directory");
        let (child, port) = spawn_on_free_port(
            "s3s-fs",
            |port| {
                let mut c = Command::new(&bin);
                c.args(["--host", "127.0.0.1", "--port", &port.to_string()])
                    .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                    .arg(root.path());
                c
            },
            |port| {
                // s3s-fs refuses an unsigned request (before it looks for the key).
                http_get(port, &format!("/{BUCKET}/probe"))
                    .is_some_and(|a| a.starts_with("HTTP/1.1 403"))
            },
        );
        Some(S3Server {
            child: Some(child),
            port,
            root,
            proxy: None,
        })
    }

    /// [`try_start`](S3Server::try_start), with the server behind a counting proxy on loopback:
    /// [`endpoint`](S3Server::endpoint) and [`env`](S3Server::env) name the proxy, so every
    /// client (this process, the tool, a cluster's executors) is counted, as the server sees
    /// it ([`counts`](S3Server::counts), [`reset_counts`](S3Server::reset_counts)).
    pub fn try_start_counted() -> Option<S3Server> {
        let mut server = S3Server::try_start()?;
        server.proxy = Some(proxy::Proxy::start(server.port));
        Some(server)
    }

    /// What the server's clients asked and got since it started or the last
    /// [`reset_counts`](S3Server::reset_counts).
    ///
    /// # Panics
    ///
    /// If the server was not started with [`try_start_counted`](S3Server::try_start_counted).
    pub fn counts(&self) -> ServerCounts {
        self.proxy
            .as_ref()
            .expect("counts of a server started without its counting proxy")
            .counts()
    }

    /// Sets the [`counts`](S3Server::counts) back to zero. Counting happens as bytes pass:
    /// call it once the previous exchange ended (a query's last response read).
    pub fn reset_counts(&self) {
        if let Some(p) = &self.proxy {
            p.reset();
        }
    }

    /// Starts a server.
    ///
    /// # Panics
    ///
    /// If `s3s-fs` is not found or does not start.
    pub fn start() -> S3Server {
        S3Server::try_start().expect("s3s-fs is not installed")
    }

    /// `http://127.0.0.1:PORT` (the counting proxy's port, if there is one).
    pub fn endpoint(&self) -> String {
        let port = self.proxy.as_ref().map_or(self.port, |p| p.port());
        format!("http://127.0.0.1:{port}")
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// `s3://BUCKET/key`.
    pub fn url(&self, key: &str) -> String {
        format!("s3://{BUCKET}/{key}")
    }

    /// The file on disk behind `key`.
    pub fn object_path(&self, key: &str) -> PathBuf {
        self.root.join(BUCKET).join(key)
    }

    /// Stores `bytes` as object `key` (written into the server's directory).
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let path = self.object_path(key);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("cannot create the object's directory");
        }
        std::fs::write(&path, bytes)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }

    /// True if object `key` exists.
    pub fn exists(&self, key: &str) -> bool {
        self.object_path(key).is_file()
    }

    /// The environment a client needs: `AWS_ENDPOINT_URL`, the keys, `AWS_REGION` and
    /// `AWS_ALLOW_HTTP=true`.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Kills the server (the directory stays until drop): later requests fail.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An `nginx` serving a directory over `http://127.0.0.1:PORT/` (Range requests answered with
/// 206; WebDAV PUTs stored, any size), with a configuration of its own (foreground, one
/// process, logs off).
pub struct HttpServer {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl HttpServer {
    /// Starts a server, or `None` (with a message) when `nginx` is not found outside CI.
    ///
    /// # Panics
    ///
    /// Under `CI=true` without `nginx`; if the server does not start.
    pub fn try_start() -> Option<HttpServer> {
        let bin = find_binary("NPY_NGINX", &["nginx", "/usr/sbin/nginx"])
            .or_else(|| missing("nginx", "NPY_NGINX"))?;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = TempDir::new(&format!("nginx-{n}"));
        let www = dir.join("www");
        std::fs::create_dir_all(&www).expect("cannot create the served directory");
        let conf = dir.join("nginx.conf");
        // A file only this server serves: its own directory's name.
        let token = dir.path().display().to_string();
        std::fs::write(www.join("probe"), &token).expect("cannot write the probe file");
        let (child, port) = spawn_on_free_port(
            "nginx",
            |port| {
                let d = dir.path().display();
                let text = format!(
                    "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
                 error_log {d}/error.log;\nevents {{ worker_connections 64; }}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
                 proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                 uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 server {{ listen 127.0.0.1:{port}; root {d}/www;\n\
                 dav_methods PUT; create_full_put_path on; client_max_body_size 0; }}\n}}\n"
                );
                std::fs::write(&conf, text).expect("cannot write nginx.conf");
                let mut c = Command::new(&bin);
                c.arg("-p").arg(dir.path()).arg("-c").arg(&conf);
                c
            },
            |port| {
                http_get(port, "/probe").is_some_and(|a| a.ends_with(&format!("\r\n\r\n{token}")))
            },
        );
        Some(HttpServer { child, port, dir })
    }

    /// `http://127.0.0.1:PORT/path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// The file served at `/path` (where a PUT to it is stored).
    pub fn file_path(&self, path: &str) -> PathBuf {
        self.dir.join("www").join(path)
    }

    /// Serves `bytes` at `/path`.
    pub fn put(&self, path: &str, bytes: &[u8]) {
        let file = self.dir.join("www").join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("cannot create a served directory");
        }
        std::fs::write(&file, bytes)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", file.display()));
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(port: u16, request: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn nginx_answers_ranges() {
        let Some(server) = HttpServer::try_start() else {
            return;
        };
        server.put("d/a.bin", b"0123456789");
        let answer = get(
            server.port,
            "GET /d/a.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=2-4\r\nConnection: close\r\n\r\n",
        );
        assert!(answer.starts_with("HTTP/1.1 206"), "{answer}");
        assert!(answer.ends_with("\r\n\r\n234"), "{answer}");
    }

    #[test]
    fn s3s_fs_refuses_unsigned_requests() {
        let Some(server) = S3Server::try_start() else {
            return;
        };
        server.put("k.bin", b"abc");
        assert!(server.exists("k.bin"));
        let answer = get(
            server.port,
            &format!("GET /{BUCKET}/k.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        );
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    }
}
