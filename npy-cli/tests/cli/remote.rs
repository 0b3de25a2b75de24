//! The tool over `s3://` (a live `s3s-fs` on loopback, which checks SigV4 signatures) and
//! `http://` (a live `nginx`): the same output as over the local copies, uploads that NumPy
//! reads, and clear errors naming the URL within the timeouts set. Feature `remote`; skipped
//! with a message when the servers are not installed (failing under `CI=true`), see
//! `npy_serde_tests::s3`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use npy_serde_tests::s3::{HttpServer, S3Server};
use npy_serde_tests::{fixtures_dir, live_python, npy as npy_bytes, run_python};

use crate::harness::{npy_ok, Dir};

/// Runs npy with the server's environment (and nothing from the caller's AWS_*).
fn npy_env(env: &[(String, String)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_npy"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
        c.env_remove(k);
    }
    let out = c
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(args)
        .output()
        .expect("the npy binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "npy panicked:\n{stderr}");
    out
}

fn ok(env: &[(String, String)], args: &[&str]) -> String {
    let out = npy_env(env, args);
    assert!(
        out.status.success(),
        "npy {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

fn fails(env: &[(String, String)], args: &[&str]) -> String {
    let out = npy_env(env, args);
    assert_eq!(out.status.code(), Some(1), "npy {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn fixture(rel: &str) -> (String, Vec<u8>) {
    let path = fixtures_dir().join(rel);
    let bytes = std::fs::read(&path).unwrap();
    (path.display().to_string(), bytes)
}

/// The fixtures read remotely: a record array, a Fortran-order array, a datetime, archives.
const NPY: [&str; 4] = [
    "npy/rec_w2_le.npy",
    "npy/U3_le_2x2_fortran.npy",
    "npy/M8_D_le_1d.npy",
    "npy/c16_be_1d.npy",
];
const NPZ: [(&str, &str); 2] = [("npz/records.npz", "rec"), ("npz/compressed.npz", "zeros")];

/// `info`, `cat` (text and JSON), `check` and `convert` give over `url(name)` what they give
/// over the local copy (the name in messages aside); archives member by member.
fn same_as_local(
    env: &[(String, String)],
    url: impl Fn(&str) -> String,
    put: impl Fn(&str, &[u8]),
) {
    let dir = Dir::new("remote-same");
    for rel in NPY {
        let (local, bytes) = fixture(rel);
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        put(name, &bytes);
        let u = url(name);
        for args in [
            &["info"][..],
            &["info", "--json"],
            &["cat"],
            &["cat", "--json"],
            &["cat", "--csv"],
            &["check", "-v"],
        ] {
            let want = npy_ok(args.iter().copied().chain([local.as_str()])).replace(&local, &u);
            let got = ok(
                env,
                &args.iter().copied().chain([u.as_str()]).collect::<Vec<_>>(),
            );
            assert_eq!(got, want, "npy {args:?} {u}");
        }
        let out = dir.join(&format!("{name}.copy.npy"));
        ok(env, &["convert", &u, &out]);
        assert_eq!(std::fs::read(&out).unwrap(), bytes, "convert {u}");
    }
    for (rel, key) in NPZ {
        let (local, bytes) = fixture(rel);
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        put(name, &bytes);
        let u = url(name);
        let member = format!("{u}:{key}");
        let local_member = format!("{local}:{key}");
        for args in [&["info"][..], &["info", "--json"], &["cat", "--json"]] {
            let want =
                npy_ok(args.iter().copied().chain([local_member.as_str()])).replace(&local, &u);
            let got = ok(
                env,
                &args
                    .iter()
                    .copied()
                    .chain([member.as_str()])
                    .collect::<Vec<_>>(),
            );
            assert_eq!(got, want, "npy {args:?} {member}");
        }
        // The whole archive: the same, but for whether a member can be mapped in place.
        let keep = |s: String| {
            s.lines()
                .filter(|l| !l.contains("in place"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let want = keep(npy_ok(["info", local.as_str()]).replace(&local, &u));
        assert_eq!(keep(ok(env, &["info", &u])), want, "npy info {u}");
        let want = npy_ok(["cat", "--json", local.as_str()]);
        assert_eq!(ok(env, &["cat", "--json", &u]), want, "npy cat --json {u}");
        assert_eq!(ok(env, &["check", &u]), "");
        let out = dir.join(&format!("{name}.{key}.npy"));
        ok(env, &["convert", &member, &out]);
        let want = dir.join(&format!("{name}.{key}.local.npy"));
        npy_ok(["convert", local_member.as_str(), want.as_str()]);
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&want).unwrap());
    }
}

#[test]
fn s3_reads_give_the_local_output() {
    let Some(server) = S3Server::try_start() else {
        return;
    };
    same_as_local(&server.env(), |k| server.url(k), |k, b| server.put(k, b));
}

#[test]
fn http_reads_give_the_local_output() {
    let Some(server) = HttpServer::try_start() else {
        return;
    };
    same_as_local(&[], |k| server.url(k), |k, b| server.put(k, b));
}

/// A `.npy` of `n` float64 values 0, 1, 2, ...
fn floats(n: u64) -> Vec<u8> {
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f64).to_le_bytes()).collect();
    npy_bytes("<f8", &[n], false, &data)
}

#[test]
fn convert_uploads_what_numpy_reads() {
    let Some(server) = S3Server::try_start() else {
        return;
    };
    let env = server.env();
    let dir = Dir::new("remote-up");
    let (local, bytes) = fixture("npy/rec_w2_le.npy");
    // Small: one PUT; byte-identical to the input, as a local convert is.
    ok(&env, &["convert", &local, &server.url("out/w2.npy")]);
    assert_eq!(
        std::fs::read(server.object_path("out/w2.npy")).unwrap(),
        bytes
    );
    // 24 MB: a multipart upload of three parts.
    let big = dir.file("big.npy");
    std::fs::write(&big, floats(3_000_000)).unwrap();
    let big = big.display().to_string();
    ok(&env, &["convert", &big, &server.url("out/big.npy")]);
    assert_eq!(
        std::fs::read(server.object_path("out/big.npy")).unwrap(),
        std::fs::read(&big).unwrap()
    );
    // An archive, and back down from the server.
    ok(&env, &["convert", &local, &server.url("out/w2.npz")]);
    let back = dir.join("back.npz");
    ok(&env, &["convert", &server.url("out/w2.npz"), &back]);
    let want = dir.join("want.npz");
    npy_ok(["convert", local.as_str(), want.as_str()]);
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&want).unwrap());
    if live_python().is_some() {
        let script = "import sys, numpy as np\n\
                      a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n\
                      assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()\n\
                      z = np.load(sys.argv[3])\n\
                      assert z['rec_w2_le'].dtype == a.dtype and z['rec_w2_le'].tobytes() == a.tobytes()\n\
                      print('ok')";
        let out = run_python(
            script,
            &[
                server.object_path("out/w2.npy").as_os_str(),
                Path::new(&local).as_os_str(),
                server.object_path("out/w2.npz").as_os_str(),
            ],
        );
        assert_eq!(out.trim(), "ok");
    }
}

#[test]
fn a_failed_conversion_uploads_nothing() {
    let Some(server) = S3Server::try_start() else {
        return;
    };
    let env = server.env();
    let dir = Dir::new("remote-abort");
    let mut bytes = floats(1000);
    bytes.truncate(bytes.len() - 8);
    let bad = dir.join("truncated.npy");
    std::fs::write(&bad, &bytes).unwrap();
    let err = fails(&env, &["convert", &bad, &server.url("out/x.npy")]);
    assert!(err.contains("truncated"), "{err}");
    assert!(!server.exists("out/x.npy"));
    // Refused credentials: the upload fails, nothing is stored.
    let mut wrong = env.clone();
    wrong.retain(|(k, _)| k != "AWS_SECRET_ACCESS_KEY");
    wrong.push(("AWS_SECRET_ACCESS_KEY".into(), "wrong".into()));
    let good = dir.join("good.npy");
    std::fs::write(&good, floats(2_000_000)).unwrap();
    let err = fails(
        &wrong,
        &["--retries", "0", "convert", &good, &server.url("out/y.npy")],
    );
    assert!(
        err.contains("s3://npy/out/y.npy: upload failed, nothing was stored"),
        "{err}"
    );
    assert!(!server.exists("out/y.npy"));
}

#[test]
fn errors_name_the_url_within_the_timeouts() {
    let Some(mut server) = S3Server::try_start() else {
        return;
    };
    let env = server.env();
    let t = ["--timeout", "3", "--retries", "1"];
    let run = |env: &[(String, String)], rest: &[&str]| {
        let args: Vec<&str> = t.iter().copied().chain(rest.iter().copied()).collect();
        let start = Instant::now();
        let err = fails(env, &args);
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            start.elapsed()
        );
        err
    };
    let missing = server.url("nope.npy");
    let err = run(&env, &["info", &missing]);
    assert!(err.contains(&format!("{missing}: no such object")), "{err}");
    // Refused credentials (s3s-fs checks the signature).
    server.put("w2.npy", &fixture("npy/rec_w2_le.npy").1);
    let mut wrong = env.clone();
    wrong.retain(|(k, _)| k != "AWS_SECRET_ACCESS_KEY");
    wrong.push(("AWS_SECRET_ACCESS_KEY".into(), "wrong".into()));
    let err = run(&wrong, &["cat", &server.url("w2.npy")]);
    assert!(
        err.starts_with(&format!("npy: {}: ", server.url("w2.npy"))),
        "{err}"
    );
    assert!(err.contains("403") || err.contains("Signature"), "{err}");
    // A truncated object: said before anything is printed.
    let mut short = floats(100);
    short.truncate(short.len() - 3);
    server.put("short.npy", &short);
    let out = npy_env(&env, &["cat", &server.url("short.npy")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("s3://npy/short.npy") && err.contains("truncated"),
        "{err}"
    );
    // A member archive key that does not exist.
    server.put("r.npz", &fixture("npz/records.npz").1);
    let err = run(&env, &["info", &format!("{}:nokey", server.url("r.npz"))]);
    assert!(err.contains("s3://npy/r.npz"), "{err}");
    // The server stopped mid-read: cat has printed some values, then fails naming the URL.
    server.put("big.npy", &floats(3_000_000));
    let mut child = Command::new(env!("CARGO_BIN_EXE_npy"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(t)
        .args(["cat", &server.url("big.npy")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 4096];
    stdout.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"0.0\n1.0\n"), "{:?}", &first[..16]);
    let start = Instant::now();
    server.stop();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s3://npy/big.npy"), "{err}");
    assert!(rest.len() < 24_000_000 * 2, "the whole array was printed");
}

#[test]
fn http_errors_name_the_url() {
    let Some(server) = HttpServer::try_start() else {
        return;
    };
    let missing = server.url("nope.npy");
    let err = fails(&[], &["--timeout", "3", "info", &missing]);
    assert!(err.contains(&format!("{missing}: no such object")), "{err}");
    // A scheme no store opens: the library's error lists the ones it does.
    let out = npy_env(
        &[],
        &["convert", &fixture("npy/b1_1d.npy").0, "ftp://h/x.npy"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("s3://bucket/key"),
        "{out:?}"
    );
}

/// `npy convert` uploads to any store the library opens: to an HTTP server that takes
/// WebDAV PUTs (nginx), a small file in one PUT and a large one, which object_store's HTTP
/// store cannot send as a multipart upload, in one PUT too.
#[test]
fn convert_uploads_to_http_servers_that_take_puts() {
    let Some(server) = HttpServer::try_start() else {
        return;
    };
    let dir = Dir::new("remote-http-up");
    let (local, bytes) = fixture("npy/rec_w2_le.npy");
    ok(&[], &["convert", &local, &server.url("up/w2.npy")]);
    assert_eq!(std::fs::read(server.file_path("up/w2.npy")).unwrap(), bytes);
    let big = dir.file("big.npy");
    std::fs::write(&big, floats(3_000_000)).unwrap();
    let big = big.display().to_string();
    ok(&[], &["convert", &big, &server.url("up/big.npy")]);
    assert_eq!(
        std::fs::read(server.file_path("up/big.npy")).unwrap(),
        std::fs::read(&big).unwrap()
    );
    // And read back from the server.
    let back = dir.join("back.npy");
    ok(&[], &["convert", &server.url("up/big.npy"), &back]);
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&big).unwrap());
}

/// `npy sql` over one object, an S3 prefix and S3 globs gives what it gives over the local
/// copies; over HTTP a table is one file.
#[cfg(feature = "datafusion")]
#[test]
fn sql_over_s3_objects_prefixes_globs_and_http_files() {
    let Some(server) = S3Server::try_start() else {
        return;
    };
    let env = server.env();
    let dir = Dir::new("remote-sql");
    let (local, bytes) = fixture("npy/rec_w2_le.npy");
    server.put("rec_w2_le.npy", &bytes);
    let q = "SELECT count(*) AS n, sum(x) AS sx, min(id) AS lo, max(flag) AS hi FROM rec_w2_le";
    let want = npy_ok(["sql", "--json", q, local.as_str()]);
    assert_eq!(
        ok(&env, &["sql", "--json", q, &server.url("rec_w2_le.npy")]),
        want
    );
    // Three shards on disk and under a prefix.
    std::fs::create_dir_all(dir.file("shards")).unwrap();
    for i in 0..3u64 {
        let data: Vec<u8> = (0..1000 + i)
            .flat_map(|k| ((k * 3 + i) as f64).to_le_bytes())
            .collect();
        let shard = npy_bytes("<f8", &[1000 + i], false, &data);
        std::fs::write(dir.file(&format!("shards/s{i}.npy")), &shard).unwrap();
        server.put(&format!("shards/s{i}.npy"), &shard);
    }
    let q = "SELECT count(*) AS n, sum(value) AS s, max(value) AS m FROM t";
    let local_dir = format!("t={}/", dir.join("shards"));
    let want = npy_ok(["sql", "--json", q, "-t", local_dir.as_str()]);
    assert!(
        want.contains("\"n\": 3003") || want.contains("\"n\":3003"),
        "{want}"
    );
    let prefix = format!("t={}", server.url("shards/"));
    assert_eq!(ok(&env, &["sql", "--json", q, "-t", &prefix]), want);
    // Globs matching some shards of the prefix and not others: the local globs' answers.
    for glob in ["s[02].npy", "s?.npy", "*1.npy"] {
        let local_glob = format!("t={}/{glob}", dir.join("shards"));
        let want = npy_ok(["sql", "--json", q, "-t", local_glob.as_str()]);
        let url_glob = format!("t={}", server.url(&format!("shards/{glob}")));
        assert_eq!(
            ok(&env, &["sql", "--json", q, "-t", &url_glob]),
            want,
            "{glob}"
        );
    }
    let two = npy_ok([
        "sql",
        "--json",
        q,
        "-t",
        format!("t={}/s[02].npy", dir.join("shards")).as_str(),
    ]);
    assert!(two.contains("2002"), "{two}");
    // A missing prefix: an error naming it, not an empty table.
    let out = npy_env(
        &env,
        &[
            "--timeout",
            "3",
            "sql",
            q,
            "-t",
            &format!("t={}", server.url("none/")),
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    if let Some(http) = HttpServer::try_start() {
        http.put("rec_w2_le.npy", &bytes);
        let q = "SELECT count(*) AS n, sum(x) AS sx FROM rec_w2_le";
        let want = npy_ok(["sql", "--json", q, local.as_str()]);
        assert_eq!(
            ok(&[], &["sql", "--json", q, &http.url("rec_w2_le.npy")]),
            want
        );
    }
}
