//! End-to-end tests of the `npy` command-line tool on the NumPy fixtures
//! (`tests/fixtures`, described by `tests/fixtures/manifest.json`).
//!
//! They run the real binary (`CARGO_BIN_EXE_npy`, built by cargo for this test because the
//! `cli` feature is on): `cargo test -p npy-serde --features cli`. Without the feature this
//! file compiles to nothing. With `NPY_PYTHON` set to a Python that has NumPy, converted files
//! are also loaded by NumPy and compared with the originals.

mod arrow;
mod object;
mod sql;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use serde_json::Value as Json;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn manifest() -> &'static Json {
    static M: OnceLock<Json> = OnceLock::new();
    M.get_or_init(|| {
        let text = std::fs::read_to_string(fixtures().join("manifest.json"))
            .expect("tests/fixtures/manifest.json is readable");
        serde_json::from_str(&text).expect("the manifest is JSON")
    })
}

fn entries(section: &str) -> &'static [Json] {
    manifest()[section]
        .as_array()
        .unwrap_or_else(|| panic!("manifest[{section:?}] is a list"))
}

fn path_of(entry: &Json) -> PathBuf {
    fixtures().join(entry["file"].as_str().expect("entry has a file"))
}

/// The header-size option a fixture needs (the v2.0 fixture's header is over NumPy's 10000).
fn header_args(entry: &Json) -> Vec<String> {
    if entry["data_offset"].as_u64().unwrap_or(0) > 10_000 {
        vec!["--max-header-size".into(), "1000000".into()]
    } else {
        Vec::new()
    }
}

fn npy<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = Command::new(env!("CARGO_BIN_EXE_npy"))
        .args(args)
        .output()
        .expect("the npy binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "npy panicked:\n{stderr}");
    out
}

/// Runs npy, expecting success; returns stdout.
fn npy_ok<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
    let out = npy(&args);
    assert!(
        out.status.success(),
        "npy {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

/// A fresh scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "npy-cli-test-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// JSON equality with numbers compared exactly: integers as integers, floats bit for bit
/// (allowing one unit in the last place, as serde_json's default float parser may round the
/// last bit differently for two spellings of the same shortest decimal).
fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            if x.is_f64() != y.is_f64() {
                return false;
            }
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x == y;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => {
                    x.to_bits() == y.to_bits()
                        || (x.is_sign_negative() == y.is_sign_negative()
                            && x.to_bits().abs_diff(y.to_bits()) <= 1)
                }
                _ => false,
            }
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && json_eq(va, vb))
        }
        _ => a == b,
    }
}

fn parse_json(text: &str, what: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{text}"))
}

fn live_python() -> Option<PathBuf> {
    std::env::var_os("NPY_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

// ---------------------------------------------------------------------------------------------
// cat --json and info --json against the manifest
// ---------------------------------------------------------------------------------------------

#[test]
fn cat_json_matches_manifest_values_for_every_npy_fixture() {
    let mut checked = 0;
    for e in entries("npy") {
        let path = path_of(e);
        let mut args = header_args(e);
        args.extend(["cat".into(), "--json".into()]);
        args.push(path.display().to_string());
        if e["bool_bytes_invalid"] == Json::Bool(true) {
            // NumPy loads bool bytes other than 0/1 as True; the typed reads refuse them, and
            // the tool prints NumPy's values with a warning (the values are checked below).
            let out = npy(&args);
            assert!(out.status.success(), "{}", path.display());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("warning") && err.contains("bool byte"),
                "{err}"
            );
        }
        let text = npy_ok(&args);
        let got = parse_json(&text, &path.display().to_string());
        assert!(
            json_eq(&got, &e["values"]),
            "{}: cat --json printed\n{got}\nthe manifest says\n{}",
            path.display(),
            e["values"]
        );
        checked += 1;
    }
    assert!(checked > 90, "only {checked} fixtures checked");
}

#[test]
fn cat_json_keeps_field_order() {
    // Fields in dtype order (not sorted): check the text itself.
    let f = fixtures().join("npy/rec_w2_le.npy");
    let text = npy_ok(["cat".as_ref(), "--json".as_ref(), f.as_os_str()]);
    let first = text.lines().nth(1).expect("one record per line");
    let pos: Vec<usize> = ["\"id\"", "\"x\"", "\"y\"", "\"flag\"", "\"v\""]
        .iter()
        .map(|k| first.find(k).unwrap_or_else(|| panic!("{k} in {first}")))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{first}");
}

#[test]
fn info_json_matches_manifest_headers() {
    for e in entries("npy") {
        let path = path_of(e);
        let mut args = header_args(e);
        args.extend(["info".into(), "--json".into(), path.display().to_string()]);
        let got = parse_json(&npy_ok(&args), &path.display().to_string());
        for key in [
            "version",
            "descr",
            "shape",
            "fortran_order",
            "data_offset",
            "itemsize",
            "count",
        ] {
            assert!(
                json_eq(&got[key], &e[key]),
                "{}: info --json {key} is {} but the manifest says {}",
                path.display(),
                got[key],
                e[key]
            );
        }
        assert_eq!(got.as_object().map(|o| o.len()), Some(7), "{got}");
    }
}

#[test]
fn npz_info_and_cat_match_manifest() {
    for e in entries("npz") {
        let path = path_of(e);
        let info = parse_json(
            &npy_ok(["info".as_ref(), "--json".as_ref(), path.as_os_str()]),
            "info",
        );
        let members = e["members"].as_array().expect("members");
        let got = info["members"].as_array().expect("info lists members");
        assert_eq!(got.len(), members.len(), "{}", path.display());
        let mut expected_values = serde_json::Map::new();
        for (g, m) in got.iter().zip(members) {
            for key in ["name", "key", "compression"] {
                assert_eq!(g[key], m[key], "{}: {key}", path.display());
            }
            assert!(g["size"].as_u64().is_some() && g["compressed_size"].as_u64().is_some());
            if m["is_npy"] == Json::Bool(true) {
                let a = &g["array"];
                for key in ["descr", "shape", "fortran_order"] {
                    assert!(
                        json_eq(&a[key], &m[key]),
                        "{} member {}: {key} {} vs {}",
                        path.display(),
                        m["name"],
                        a[key],
                        m[key]
                    );
                }
                expected_values.insert(m["key"].as_str().unwrap().to_string(), m["values"].clone());

                // One member, both spellings.
                let key = m["key"].as_str().unwrap();
                let spec = format!("{}:{key}", path.display());
                let one = parse_json(&npy_ok(["cat", "--json", &spec]), &spec);
                assert!(json_eq(&one, &m["values"]), "{spec}: {one}");
                let one = parse_json(
                    &npy_ok([
                        "cat",
                        "--json",
                        "--member",
                        key,
                        &path.display().to_string(),
                    ]),
                    &spec,
                );
                assert!(json_eq(&one, &m["values"]), "{spec}: {one}");
            } else {
                assert_eq!(g["array"], Json::Null, "{}", path.display());
            }
        }
        let all = parse_json(
            &npy_ok(["cat".as_ref(), "--json".as_ref(), path.as_os_str()]),
            "cat",
        );
        assert!(
            json_eq(&all, &Json::Object(expected_values.clone())),
            "{}: {all} vs {}",
            path.display(),
            Json::Object(expected_values)
        );
        // Every archive fixture is valid.
        npy_ok(["check".as_ref(), path.as_os_str()]);
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

/// A phrase of the library's message for each error code of the manifest.
fn phrase(code: &str) -> &'static str {
    match code {
        "bad_magic" => "not a .npy file",
        "unsupported_version" => "unsupported .npy format version",
        "header_too_large" => "--max-header-size",
        "invalid_header" => "invalid .npy header",
        "invalid_descr" => "invalid dtype descr",
        "unsupported_dtype" => "unsupported dtype",
        "unexpected_eof" => "unexpected end of input",
        "limit_exceeded" => "more than the limit",
        "overflow" => "overflows",
        "invalid_utf8" => "not valid UTF-8",
        other => panic!("unknown error code {other}"),
    }
}

#[test]
fn every_bad_fixture_fails_cleanly_in_check_cat_info_and_convert() {
    let scratch = Scratch::new("bad");
    let out_file = scratch.file("out.npy");
    for e in entries("bad") {
        let path = path_of(e);
        let shown = path.display().to_string();
        let code = e["error"].as_str().unwrap();

        let out = npy(["check", &shown]);
        assert_eq!(out.status.code(), Some(1), "check {shown}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.lines().count(),
            1,
            "check {shown}: one line:\n{stdout}"
        );
        assert!(stdout.starts_with(&format!("{shown}: ")), "{stdout}");
        assert!(
            stdout.contains(phrase(code)),
            "check {shown} ({code}): {stdout}"
        );

        // info shows an intact header even if the data is short, with a warning, and the
        // header of an object array (tests/cli_object.rs).
        let out = npy(["info", &shown]);
        if out.status.success() {
            if e["name"].as_str().unwrap().starts_with("descr_object") {
                continue;
            }
            assert_eq!(code, "unexpected_eof", "info {shown}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("truncated"), "info {shown}: {stdout}");
        }

        for cmd in ["cat", "info"] {
            let out = npy([cmd, &shown]);
            if cmd == "info" && out.status.success() {
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{cmd} {shown}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&shown), "{cmd} {shown}: {stderr}");
            assert!(
                stderr.contains(phrase(code)),
                "{cmd} {shown} ({code}): {stderr}"
            );
            if cmd == "cat" {
                assert!(out.stdout.is_empty(), "{cmd} {shown} printed output");
            }
        }

        let out = npy(["convert", &shown, &out_file.display().to_string()]);
        assert_eq!(out.status.code(), Some(1), "convert {shown}");
        assert!(!out_file.exists(), "convert {shown} left an output file");
    }
}

#[test]
fn check_reports_bad_values_and_is_quiet_on_success() {
    let good: Vec<String> = entries("npy")
        .iter()
        .filter(|e| e["bool_bytes_invalid"] != Json::Bool(true) && header_args(e).is_empty())
        .map(|e| path_of(e).display().to_string())
        .collect();
    let mut args = vec!["check".to_string()];
    args.extend(good.iter().cloned());
    assert_eq!(npy_ok(&args), "", "check prints nothing for good files");

    let mut args = vec!["check".to_string(), "-v".to_string()];
    args.extend(good.iter().take(3).cloned());
    let out = npy_ok(&args);
    let want: String = good.iter().take(3).map(|f| format!("{f}: ok\n")).collect();
    assert_eq!(out, want);

    let bool2 = fixtures().join("npy/custom_bool_byte_2.npy");
    let bad = fixtures().join("bad/truncated_data.npy");
    let out = npy([
        "check".as_ref(),
        good[0].as_ref(),
        bool2.as_os_str(),
        bad.as_os_str(),
        "no/such/file.npy".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with(&format!("{}: ", bool2.display())),
        "{stdout}"
    );
    assert!(lines[0].contains("bool byte 2"), "{stdout}");
    assert!(lines[0].contains("record 2"), "{stdout}");
    assert!(
        lines[1].starts_with(&format!("{}: ", bad.display())),
        "{stdout}"
    );
    assert!(lines[2].starts_with("no/such/file.npy: "), "{stdout}");
}

#[test]
fn max_header_size_is_enforced_and_can_be_raised() {
    let v2 = fixtures().join("npy/rec_v2_header.npy");
    let out = npy(["info".as_ref(), v2.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-header-size") && err.contains("10000"),
        "{err}"
    );
    npy_ok([
        "--max-header-size".as_ref(),
        "100000".as_ref(),
        "info".as_ref(),
        v2.as_os_str(),
    ]);
    // A lower limit rejects ordinary files too (the option is global: after the command too).
    let small = fixtures().join("npy/f8_le_1d.npy");
    let out = npy([
        "cat".as_ref(),
        small.as_os_str(),
        "--max-header-size".as_ref(),
        "50".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2() {
    let f = fixtures().join("npy/f8_le_1d.npy");
    let f = f.display().to_string();
    for args in [
        vec!["cat", "--bogus", &f],
        vec!["frobnicate", &f],
        vec!["cat"],
        vec!["cat", "--json", "--csv", &f],
        vec!["cat", "--head", "1", "--tail", "1", &f],
        vec!["convert", &f, "out.txt"],
        vec!["convert", &f, "out.npy", "--order", "X"],
        vec!["convert", &f, "out.json", "--byte-order", "big"],
        vec!["--max-header-size", "lots", "info", &f],
        vec!["check"],
    ] {
        let out = npy(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = npy(["cat", "--member", "x", &f]);
    assert_eq!(out.status.code(), Some(2), "--member on a .npy file");
    let out = npy(["cat", "does-not-exist.npy"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist.npy"));
    let npz = fixtures().join("npz/keyword.npz");
    let out = npy([
        "cat".as_ref(),
        "--member".as_ref(),
        "nope".as_ref(),
        npz.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope") && err.contains("alpha"), "{err}");
}

#[test]
fn help_documents_the_json_conventions() {
    let help = npy_ok(["--help"]);
    for phrase in [
        "info --json",
        "cat --json",
        "\"nan\"",
        "\"NaT\"",
        "[[title, name], descr]",
        "byte-identical",
    ] {
        assert!(help.contains(phrase), "--help lacks {phrase:?}");
    }
    assert!(npy_ok(["--version"]).starts_with("npy "));
}

// ---------------------------------------------------------------------------------------------
// Text and CSV output
// ---------------------------------------------------------------------------------------------

#[test]
fn csv_of_a_record_fixture() {
    let f = fixtures().join("npy/rec_w2_le.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    assert_eq!(
        csv,
        "id,x,y,flag,v[0],v[1],v[2]\n\
         1,0.5,1.5,0,-1.0,-0.75,-0.5\n\
         -2,-1.25,-2.5,1,-0.25,0.0,0.25\n\
         9223372036854775807,nan,3.25,255,0.5,0.75,1.0\n\
         -9223372036854775808,inf,1.401298464324817e-45,7,1.25,1.5,1.75\n\
         0,-0.0,-inf,128,2.0,2.25,2.5\n"
    );
    // Nested records and strings.
    let f = fixtures().join("npy/rec_nested.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    let header = csv.lines().next().unwrap();
    assert!(header.contains("pos.x") || header.contains('.'), "{header}");
    let cols = header.split(',').count();
    assert!(
        csv.lines().skip(1).all(|l| l.split(',').count() == cols),
        "{csv}"
    );
    // convert to .csv writes the same.
    let s = Scratch::new("csv");
    let out = s.file("rec.csv");
    let src = fixtures().join("npy/rec_w2_le.npy");
    npy_ok(["convert".as_ref(), src.as_os_str(), out.as_os_str()]);
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.starts_with("id,x,y,flag,v[0],v[1],v[2]\n"),
        "{written}"
    );
    assert_eq!(written.lines().count(), 6);
}

#[test]
fn csv_of_2d_and_strings_and_refusal_of_3d() {
    let f = fixtures().join("npy/i4_le_2x3.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("[0],[1],[2]"));
    assert_eq!(csv.lines().count(), 3);
    let nohead = npy_ok([
        "cat".as_ref(),
        "--csv".as_ref(),
        "--no-header".as_ref(),
        f.as_os_str(),
    ]);
    assert_eq!(nohead.lines().count(), 2);

    let f = fixtures().join("npy/f4_be_2x3x4.npy");
    let out = npy(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(2, 3, 4)"));

    let f = fixtures().join("npy/U3_le_1d.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    assert!(csv.starts_with("value\n"), "{csv}");
}

#[test]
fn text_output_head_and_tail() {
    let f = fixtures().join("npy/i8_le_1d.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "i8_le_1d")
        .unwrap();
    let values: Vec<String> = e["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    let all = npy_ok(["cat".as_ref(), f.as_os_str()]);
    assert_eq!(all.lines().collect::<Vec<_>>(), values);
    let head = npy_ok([
        "cat".as_ref(),
        "--head".as_ref(),
        "2".as_ref(),
        f.as_os_str(),
    ]);
    assert_eq!(head.lines().collect::<Vec<_>>(), values[..2]);
    let tail = npy_ok([
        "cat".as_ref(),
        "--tail".as_ref(),
        "2".as_ref(),
        f.as_os_str(),
    ]);
    assert_eq!(tail.lines().collect::<Vec<_>>(), values[values.len() - 2..]);
    let big = npy_ok([
        "cat".as_ref(),
        "--tail".as_ref(),
        "1000".as_ref(),
        f.as_os_str(),
    ]);
    assert_eq!(big, all);

    // Along the first axis of a Fortran-order 2-D array, in JSON.
    let f = fixtures().join("npy/f8_le_2x3_fortran.npy");
    let tail = parse_json(
        &npy_ok([
            "cat".as_ref(),
            "--json".as_ref(),
            "--tail".as_ref(),
            "1".as_ref(),
            f.as_os_str(),
        ]),
        "tail",
    );
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "f8_le_2x3_fortran")
        .unwrap();
    assert!(
        json_eq(&tail, &Json::Array(vec![e["values"][1].clone()])),
        "{tail}"
    );
    let text = npy_ok(["cat".as_ref(), f.as_os_str()]);
    assert_eq!(text.lines().next(), Some("[0, 0] 0.0"));
    assert_eq!(text.lines().nth(1), Some("[0, 1] 1.5"));

    // Dates as NumPy prints them.
    let f = fixtures().join("npy/M8_D_le_1d.npy");
    let text = npy_ok(["cat".as_ref(), f.as_os_str()]);
    assert_eq!(
        text,
        "1970-01-01\n2024-02-29\nNaT\n1900-01-01\n-001-12-31\n"
    );
}

#[test]
fn info_text_shows_the_dtype_tree() {
    let f = fixtures().join("npy/rec_padded_leading.npy");
    let text = npy_ok(["info".as_ref(), f.as_os_str()]);
    for needle in [
        "version:     1.0",
        "shape:       (2,)",
        "itemsize:    12",
        "count:       2",
        "data offset: 192",
        "data bytes:  24",
        "(padding)",
        "x: <u2 (uint16, little-endian)",
        "y: >i4 (int32, big-endian)",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let f = fixtures().join("npz/compressed.npz");
    let text = npy_ok(["info".as_ref(), f.as_os_str()]);
    assert!(text.contains("4 members"), "{text}");
    assert!(text.contains("compression: deflate"), "{text}");
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let s = Scratch::new("pipe");
    let big = s.file("big.npy");
    let n = 300_000u64;
    let mut bytes = npy_serde::Header::new("<i8".parse().unwrap(), vec![n])
        .to_bytes()
        .unwrap();
    for i in 0..n {
        bytes.extend_from_slice(&(i as i64).to_le_bytes());
    }
    std::fs::write(&big, bytes).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_npy"))
        .arg("cat")
        .arg(&big)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is dropped (closed) here, before the output is complete.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "{:?} {err}", out.status);
    assert_eq!(&first[..4], b"0\n1\n");
}

// ---------------------------------------------------------------------------------------------
// convert
// ---------------------------------------------------------------------------------------------

fn np_save_fixtures() -> impl Iterator<Item = &'static Json> {
    entries("npy")
        .iter()
        .filter(|e| e["written_by"] == "np.save")
}

fn convert(src: &Path, dst: &Path, extra: &[&str], entry: &Json) {
    let mut args: Vec<std::ffi::OsString> =
        header_args(entry).into_iter().map(Into::into).collect();
    args.push("convert".into());
    args.push(src.into());
    args.push(dst.into());
    args.extend(extra.iter().map(Into::into));
    npy_ok(&args);
}

fn cat_json(path: &Path, entry: &Json) -> Json {
    let mut args: Vec<std::ffi::OsString> =
        header_args(entry).into_iter().map(Into::into).collect();
    args.extend(["cat".into(), "--json".into(), path.into()]);
    parse_json(&npy_ok(&args), &path.display().to_string())
}

#[test]
fn convert_without_options_is_byte_identical_for_np_save_files() {
    let s = Scratch::new("ident");
    let out = s.file("out.npy");
    let mut n = 0;
    for e in np_save_fixtures() {
        let src = path_of(e);
        convert(&src, &out, &[], e);
        assert!(
            std::fs::read(&src).unwrap() == std::fs::read(&out).unwrap(),
            "{}: convert changed the bytes",
            src.display()
        );
        n += 1;
    }
    assert!(n > 80, "{n}");
    // The output replaced an existing file atomically, and no temporary file is left.
    let left: Vec<_> = std::fs::read_dir(&s.0).unwrap().collect();
    assert_eq!(left.len(), 1);
}

#[test]
fn byte_order_conversions_round_trip() {
    let s = Scratch::new("order");
    let (big, back, little) = (s.file("big.npy"), s.file("back.npy"), s.file("little.npy"));
    for e in np_save_fixtures() {
        let src = path_of(e);
        convert(&src, &big, &["--byte-order", "big"], e);
        convert(&big, &back, &["--byte-order", "little"], e);
        convert(&src, &little, &["--byte-order", "little"], e);
        let (b, l) = (
            std::fs::read(&back).unwrap(),
            std::fs::read(&little).unwrap(),
        );
        assert!(
            b == l,
            "{}: big -> little differs from -> little",
            src.display()
        );
        let descr = e["descr_repr"].as_str().unwrap();
        if !descr.contains('>') {
            assert!(
                std::fs::read(&src).unwrap() == l,
                "{}: a little-endian file changed",
                src.display()
            );
        }
        if !descr.contains('<') {
            assert!(
                std::fs::read(&src).unwrap() == std::fs::read(&big).unwrap(),
                "{}: a big-endian file changed",
                src.display()
            );
        }
        // The big-endian file says so and holds the same values.
        let info = parse_json(
            &npy_ok(header_args(e).into_iter().chain([
                "info".into(),
                "--json".into(),
                big.display().to_string(),
            ])),
            "info",
        );
        assert!(
            !info["descr"].to_string().contains('<'),
            "{}: {}",
            src.display(),
            info["descr"]
        );
        assert!(
            json_eq(&cat_json(&big, e), &e["values"]),
            "{}",
            src.display()
        );
        if let Some(py) = live_python() {
            numpy_same(&py, &src, &big, None);
        }
    }
    // native is little-endian on this machine family, or big.
    let src = fixtures().join("npy/f8_be_1d.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "f8_be_1d")
        .unwrap();
    convert(&src, &little, &["--byte-order", "native"], e);
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), little.as_os_str()]),
        "info",
    );
    let want = if cfg!(target_endian = "little") {
        "<f8"
    } else {
        ">f8"
    };
    assert_eq!(info["descr"], want);
}

#[test]
fn memory_order_conversions_round_trip() {
    let s = Scratch::new("forder");
    let (f, back, c) = (s.file("f.npy"), s.file("back.npy"), s.file("c.npy"));
    for e in np_save_fixtures() {
        let src = path_of(e);
        convert(&src, &f, &["--order", "F"], e);
        convert(&f, &back, &["--order", "C"], e);
        convert(&src, &c, &["--order", "C"], e);
        assert!(
            std::fs::read(&back).unwrap() == std::fs::read(&c).unwrap(),
            "{}: F -> C differs from -> C",
            src.display()
        );
        if e["fortran_order"] == Json::Bool(false) {
            assert!(std::fs::read(&src).unwrap() == std::fs::read(&c).unwrap());
        } else {
            assert!(std::fs::read(&src).unwrap() == std::fs::read(&f).unwrap());
        }
        let shape: Vec<u64> = e["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let both_contiguous = shape.iter().filter(|&&d| d > 1).count() < 2 || shape.contains(&0);
        let info = parse_json(
            &npy_ok(header_args(e).into_iter().chain([
                "info".into(),
                "--json".into(),
                f.display().to_string(),
            ])),
            "info",
        );
        assert_eq!(
            info["fortran_order"],
            Json::Bool(!both_contiguous),
            "{}",
            src.display()
        );
        assert!(json_eq(&cat_json(&f, e), &e["values"]), "{}", src.display());
        assert!(json_eq(&cat_json(&c, e), &e["values"]), "{}", src.display());
        if let Some(py) = live_python() {
            numpy_same(&py, &src, &f, Some(!both_contiguous));
            numpy_same(&py, &src, &c, Some(false));
        }
    }
    // Both at once: byte order and memory order, and a version.
    let src = fixtures().join("npy/i2_be_3x2_fortran.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "i2_be_3x2_fortran")
        .unwrap();
    convert(
        &src,
        &c,
        &["--order", "C", "--byte-order", "little", "--version", "2.0"],
        e,
    );
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), c.as_os_str()]),
        "info",
    );
    assert_eq!(info["descr"], "<i2");
    assert_eq!(info["version"], serde_json::json!([2, 0]));
    assert_eq!(info["fortran_order"], false);
    assert!(json_eq(&cat_json(&c, e), &e["values"]));
    if let Some(py) = live_python() {
        numpy_same(&py, &src, &c, Some(false));
    }
}

#[test]
fn convert_versions() {
    let s = Scratch::new("ver");
    let out = s.file("v.npy");
    let src = fixtures().join("npy/rec_v3_utf8_names.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "rec_v3_utf8_names")
        .unwrap();
    // Non-latin-1 names cannot go in a 1.0 or 2.0 header.
    let r = npy([
        "convert".as_ref(),
        src.as_os_str(),
        out.as_os_str(),
        "--version".as_ref(),
        "1.0".as_ref(),
    ]);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains("3.0"));
    assert!(!out.exists());
    convert(&src, &out, &["--version", "3.0"], e);
    let src = fixtures().join("npy/f8_le_1d.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "f8_le_1d")
        .unwrap();
    for (v, want) in [("1.0", [1, 0]), ("2.0", [2, 0]), ("3.0", [3, 0])] {
        convert(&src, &out, &["--version", v], e);
        let info = parse_json(
            &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
            "info",
        );
        assert_eq!(info["version"], serde_json::json!(want));
        assert_eq!(info["data_offset"].as_u64().unwrap() % 64, 0);
        assert!(json_eq(&cat_json(&out, e), &e["values"]));
        if let Some(py) = live_python() {
            numpy_same(&py, &src, &out, Some(false));
        }
    }
}

#[test]
fn convert_extracts_npz_members_and_writes_json() {
    let s = Scratch::new("npz");
    let out = s.file("m.npy");
    for e in entries("npz") {
        let path = path_of(e);
        let mut archive = npy_serde::NpzArchive::open(&path).unwrap();
        for m in e["members"].as_array().unwrap() {
            if m["is_npy"] != Json::Bool(true) {
                continue;
            }
            let key = m["key"].as_str().unwrap();
            let spec = format!("{}:{key}", path.display());
            npy_ok(["convert".as_ref(), spec.as_ref(), out.as_os_str()]);
            let raw = archive.read_raw(key).unwrap();
            assert!(
                std::fs::read(&out).unwrap() == raw,
                "{spec}: the extracted member differs from the archive's bytes"
            );
            // The same with --member, converted on the way.
            npy_ok([
                "convert".as_ref(),
                path.as_os_str(),
                out.as_os_str(),
                "--member".as_ref(),
                key.as_ref(),
                "--byte-order".as_ref(),
                "big".as_ref(),
            ]);
            let got = parse_json(
                &npy_ok(["cat".as_ref(), "--json".as_ref(), out.as_os_str()]),
                &spec,
            );
            assert!(json_eq(&got, &m["values"]), "{spec}: {got}");
            if m["fortran_order"] == Json::Bool(true) {
                // Transposed from the member's bytes.
                npy_ok([
                    "convert".as_ref(),
                    spec.as_ref(),
                    out.as_os_str(),
                    "--order".as_ref(),
                    "C".as_ref(),
                ]);
                let info = parse_json(
                    &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
                    &spec,
                );
                assert_eq!(info["fortran_order"], false, "{spec}");
                let got = parse_json(
                    &npy_ok(["cat".as_ref(), "--json".as_ref(), out.as_os_str()]),
                    &spec,
                );
                assert!(json_eq(&got, &m["values"]), "{spec}: {got}");
            }
        }
        // A whole archive needs a member for .npy output...
        let r = npy(["convert".as_ref(), path.as_os_str(), out.as_os_str()]);
        assert_eq!(r.status.code(), Some(2), "{}", path.display());
        // ... but converts to one JSON object.
        let json = s.file("all.json");
        npy_ok(["convert".as_ref(), path.as_os_str(), json.as_os_str()]);
        let all = parse_json(&std::fs::read_to_string(&json).unwrap(), "json");
        let cat = parse_json(
            &npy_ok(["cat".as_ref(), "--json".as_ref(), path.as_os_str()]),
            "cat",
        );
        assert_eq!(all, cat);
    }
}

#[test]
fn convert_to_json_and_stdout() {
    let src = fixtures().join("npy/c16_le_1d.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "c16_le_1d")
        .unwrap();
    let out = npy_ok([
        "convert".as_ref(),
        src.as_os_str(),
        "-".as_ref(),
        "--to".as_ref(),
        "json".as_ref(),
    ]);
    assert!(json_eq(&parse_json(&out, "stdout"), &e["values"]));
    let out = npy(["convert".as_ref(), src.as_os_str(), "-".as_ref()]);
    assert_eq!(out.status.code(), Some(2), "`-` needs --to");
}

/// NumPy loads `converted` with the same shape, dtype (up to byte order) and values as
/// `original`, and (if given) the expected fortran_order.
fn numpy_same(py: &Path, original: &Path, converted: &Path, fortran: Option<bool>) {
    let script = r#"
import sys
import numpy as np
a = np.load(sys.argv[1], max_header_size=10**6)
b = np.load(sys.argv[2], max_header_size=10**6)
assert a.shape == b.shape, (a.shape, b.shape)
la, lb = a.dtype.newbyteorder('<'), b.dtype.newbyteorder('<')
assert la == lb, (a.dtype, b.dtype)
assert repr(a.astype(la).tolist()) == repr(b.astype(lb).tolist()), (a, b)
if sys.argv[3] != "any":
    fortran = b.flags.f_contiguous and not b.flags.c_contiguous
    assert fortran == (sys.argv[3] == "True"), b.flags
"#;
    let fo = match fortran {
        None => "any",
        Some(true) => "True",
        Some(false) => "False",
    };
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(original)
        .arg(converted)
        .arg(fo)
        .output()
        .expect("NPY_PYTHON runs");
    assert!(
        out.status.success(),
        "NumPy disagrees about {} (from {}):\n{}",
        converted.display(),
        original.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn zero_byte_elements_in_huge_numbers_do_not_hang() {
    // 2**40 x 3 empty records: a 128-byte file that NumPy itself would happily describe.
    let s = Scratch::new("empty");
    let f = s.file("empty.npy");
    let header = npy_serde::Header {
        dtype: "[]".parse().unwrap(),
        shape: vec![1 << 40, 3],
        fortran_order: true,
    };
    std::fs::write(&f, header.to_bytes().unwrap()).unwrap();
    let start = std::time::Instant::now();
    assert_eq!(npy_ok(["check".as_ref(), f.as_os_str()]), "");
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), f.as_os_str()]),
        "info",
    );
    assert_eq!(info["count"], 3u64 << 40);
    let head = parse_json(
        &npy_ok([
            "cat".as_ref(),
            "--json".as_ref(),
            "--head".as_ref(),
            "1".as_ref(),
            f.as_os_str(),
        ]),
        "head",
    );
    assert_eq!(head, serde_json::json!([[{}, {}, {}]]));
    let out = s.file("c.npy");
    npy_ok([
        "convert".as_ref(),
        f.as_os_str(),
        out.as_os_str(),
        "--order".as_ref(),
        "C".as_ref(),
    ]);
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
        "info",
    );
    assert_eq!(info["fortran_order"], false);
    assert!(start.elapsed() < std::time::Duration::from_secs(60));
}

/// Runs npy with `bytes` on a pipe as standard input.
#[cfg(target_os = "linux")]
fn npy_with_stdin(args: &[&str], bytes: Vec<u8>) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_npy"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // npy may stop reading early (an error): a broken pipe here is fine.
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    out
}

#[test]
#[cfg(target_os = "linux")]
fn npy_from_a_pipe() {
    // A Fortran-order array (read into memory instead of mapped) and --tail (skipped by reading).
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "f8_le_2x3_fortran")
        .unwrap();
    let bytes = std::fs::read(path_of(e)).unwrap();
    let out = npy_with_stdin(&["cat", "--json", "/dev/stdin"], bytes.clone());
    assert!(out.status.success());
    let got = parse_json(&String::from_utf8_lossy(&out.stdout), "stdin");
    assert!(json_eq(&got, &e["values"]), "{got}");

    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "i8_le_1d")
        .unwrap();
    let bytes = std::fs::read(path_of(e)).unwrap();
    let out = npy_with_stdin(
        &["cat", "--json", "--tail", "1", "/dev/stdin"],
        bytes.clone(),
    );
    assert!(out.status.success());
    let got = parse_json(&String::from_utf8_lossy(&out.stdout), "stdin");
    let values = e["values"].as_array().unwrap();
    assert_eq!(got, Json::Array(vec![values[values.len() - 1].clone()]));

    // Truncated on a pipe: a clean error.
    let out = npy_with_stdin(&["cat", "/dev/stdin"], bytes[..bytes.len() - 4].to_vec());
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected end of input"));
}

#[test]
fn an_empty_shape_whose_other_dimensions_overflow() {
    // (0, 2**40, 2**40): zero elements, though the product of the other axes overflows u64.
    let s = Scratch::new("zeroshape");
    let f = s.file("z.npy");
    let header = npy_serde::Header {
        dtype: "<f8".parse().unwrap(),
        shape: vec![0, 1 << 40, 1 << 40],
        fortran_order: true,
    };
    std::fs::write(&f, header.to_bytes().unwrap()).unwrap();
    assert_eq!(
        npy_ok(["cat".as_ref(), "--json".as_ref(), f.as_os_str()]),
        "[]\n"
    );
    assert_eq!(
        npy_ok([
            "cat".as_ref(),
            "--tail".as_ref(),
            "3".as_ref(),
            f.as_os_str()
        ]),
        ""
    );
    assert_eq!(npy_ok(["check".as_ref(), f.as_os_str()]), "");
    let out = s.file("o.npy");
    npy_ok([
        "convert".as_ref(),
        f.as_os_str(),
        out.as_os_str(),
        "--order".as_ref(),
        "C".as_ref(),
        "--byte-order".as_ref(),
        "big".as_ref(),
    ]);
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
        "info",
    );
    assert_eq!(info["count"], 0);
    assert_eq!(info["descr"], ">f8");
}

/// An archive with one deflate member, corrupted at byte `k` of its compressed data: NumPy
/// raises `BadZipFile` for it. Whatever the corruption does to the first bytes (a garbled
/// magic string included), the tool must report the member, never list it as "not an .npy
/// array" or print an empty archive with exit status 0.
#[test]
fn corrupt_member_is_an_error_not_a_skip() {
    use std::io::Write;
    let dir = Scratch::new("corrupt-npz");
    let values: Vec<f64> = (0..20_000).map(|i| (i as f64).sin()).collect();
    let mut w = npy_serde::NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
    w.add("data", &values).unwrap();
    let good = w.finish().unwrap().into_inner();
    // The member's compressed data starts after its 30-byte local header, name and extra.
    let name_len = u16::from_le_bytes([good[26], good[27]]) as usize;
    let extra_len = u16::from_le_bytes([good[28], good[29]]) as usize;
    let start = 30 + name_len + extra_len;
    let mut errors = 0;
    for k in [0usize, 1, 2, 3, 5, 8, 13, 21, 34, 55, 200, 2000, 20_000] {
        let mut bad = good.clone();
        bad[start + k] ^= 0x5a;
        let path = dir.file(&format!("bad{k}.npz"));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bad)
            .unwrap();
        for args in [
            vec!["info".to_string()],
            vec!["info".to_string(), "--json".to_string()],
            vec!["cat".to_string(), "--json".to_string()],
        ] {
            let mut all = args.clone();
            all.push(path.to_string_lossy().into_owned());
            let out = npy(&all);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stdout.contains("not an .npy array") && !stdout.contains("\"array\": null"),
                "corruption at {k}: npy {args:?} took the member for a non-array:\n{stdout}"
            );
            if args[0] == "cat" || !out.status.success() {
                // cat reads the data, so it must fail; info may succeed when only the data
                // (not the header) is corrupt, as NumPy's header read would.
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "corruption at {k}: npy {args:?}\n{stderr}"
                );
                assert!(
                    stderr.contains("data"),
                    "the error names the member: {stderr}"
                );
                errors += 1;
            }
        }
        // The library's readers report it too, naming the member.
        let mut npz = npy_serde::NpzArchive::from_bytes(&bad).unwrap();
        let err = npz.deserialize::<Vec<f64>>("data").unwrap_err();
        assert!(err.to_string().contains("data"), "{err}");
    }
    assert!(errors >= 13, "{errors}");

    // A stored member whose magic string is damaged: its first bytes are not an .npy file's,
    // but its CRC-32 says the bytes are not the member's either.
    let mut w = npy_serde::NpzWriter::new(std::io::Cursor::new(Vec::new()));
    w.add("data", &values).unwrap();
    let mut bad = w.finish().unwrap().into_inner();
    let name_len = u16::from_le_bytes([bad[26], bad[27]]) as usize;
    let extra_len = u16::from_le_bytes([bad[28], bad[29]]) as usize;
    bad[30 + name_len + extra_len + 1] = b'X';
    let path = dir.file("stored.npz");
    std::fs::write(&path, &bad).unwrap();
    for args in [&["info"][..], &["info", "--json"], &["cat", "--json"]] {
        let mut all: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
        all.push(path.clone().into());
        let out = npy(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "npy {args:?}: {stderr}");
        assert!(
            stderr.contains("data") && stderr.contains("CRC"),
            "{stderr}"
        );
    }

    // A member that really is not an .npy file (its bytes verified) is still listed as such.
    let mut w = npy_serde::NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
    w.add_raw("notes.txt", b"not an array at all").unwrap();
    let path = dir.file("notes.npz");
    std::fs::write(&path, w.finish().unwrap().into_inner()).unwrap();
    let text = npy_ok(["info".as_ref(), path.as_os_str()]);
    assert!(text.contains("not an .npy array"), "{text}");
    // `cat` of the whole archive prints nothing for it, and says so on stderr (exit 0).
    let out = npy(["cat".as_ref(), "--json".as_ref(), path.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("notes.txt is not an .npy array (skipped)"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
}

/// Arrays with no data bytes but a huge number of values (a `(10**18, 0)` shape, which NumPy
/// writes, or `|V0` elements): every output path refuses them quickly with the limit and the
/// flag that raises it, and `info` still describes them at once.
#[test]
fn data_less_arrays_have_bounded_output() {
    use std::time::{Duration, Instant};
    let dir = Scratch::new("dataless");
    let cases = [
        (
            "zero-axis",
            "<f8".parse::<npy_serde::DType>().unwrap(),
            vec![1_000_000_000_000_000_000u64, 0],
        ),
        ("v0", "|V0".parse().unwrap(), vec![1u64 << 62]),
    ];
    for (name, dtype, shape) in cases {
        let header = npy_serde::Header::new(dtype, shape);
        let path = dir.file(&format!("{name}.npy"));
        std::fs::write(&path, header.to_bytes().unwrap()).unwrap();
        let p = path.to_string_lossy().into_owned();
        let out_json = dir
            .file(&format!("{name}.json"))
            .to_string_lossy()
            .into_owned();
        let out_csv = dir
            .file(&format!("{name}.csv"))
            .to_string_lossy()
            .into_owned();
        for args in [
            vec!["cat", "--json", &p],
            vec!["cat", &p],
            vec!["cat", "--csv", &p],
            vec!["convert", &p, &out_json],
            vec!["convert", &p, &out_csv],
        ] {
            let t = Instant::now();
            let out = npy(&args);
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "npy {args:?} took {:?}",
                t.elapsed()
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "npy {args:?}: {stderr}");
            assert!(
                stderr.contains("--max-empty-items") && stderr.contains("16777216"),
                "npy {args:?}: {stderr}"
            );
        }
        let info = npy_ok(["info", &p]);
        assert!(info.contains("shape"), "{info}");
    }
    // Under the limit, the empty lists print.
    let header = npy_serde::Header::new("<f8".parse().unwrap(), vec![3, 0]);
    let path = dir.file("small.npy");
    std::fs::write(&path, header.to_bytes().unwrap()).unwrap();
    let p = path.to_string_lossy().into_owned();
    let json: Json = serde_json::from_str(&npy_ok(["cat", "--json", &p])).unwrap();
    assert_eq!(json, serde_json::json!([[], [], []]));
    let out = npy(["--max-empty-items", "2", "cat", "--json", &p]);
    assert_eq!(out.status.code(), Some(1));
}

/// A bool byte other than 0 or 1 and a `U` string holding a UTF-16 surrogate: NumPy loads
/// both (`True`, a `str` with the surrogate), and so do `cat` and `convert` to text, with a
/// warning on stderr; `check` still reports them.
#[test]
fn cat_shows_what_numpy_shows() {
    let dir = Scratch::new("numpy-view");
    let dtype: npy_serde::DType = "[('ok', '?'), ('s', '<U2')]".parse().unwrap();
    let mut file = npy_serde::Header::new(dtype, vec![2]).to_bytes().unwrap();
    for (ok, cps) in [(2u8, [0x61u32, 0xD834]), (1, [0x62, 0])] {
        file.push(ok);
        for c in cps {
            file.extend_from_slice(&c.to_le_bytes());
        }
    }
    let path = dir.file("odd.npy");
    std::fs::write(&path, &file).unwrap();
    let p = path.to_string_lossy().into_owned();

    let out = npy(["cat", "--json", &p]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains(r#""s": "a\ud834""#), "{stdout}");
    assert!(
        stderr.contains("warning") && stderr.contains("bool") && stderr.contains("surrogate"),
        "{stderr}"
    );
    // (serde_json refuses lone surrogate escapes; Python's json, below, reads them.)
    assert!(
        stdout.contains(r#""ok": true"#) && !stdout.contains("false"),
        "{stdout}"
    );

    let text = npy_ok(["cat", &p]);
    assert!(text.contains(r"'a\ud834'"), "{text}");
    let out_csv = dir.file("odd.csv");
    npy_ok(["convert".as_ref(), path.as_os_str(), out_csv.as_os_str()]);
    let csv = std::fs::read_to_string(&out_csv).unwrap();
    assert!(csv.contains(r"a\ud834") && csv.contains("true"), "{csv}");

    let out = npy(["check", &p]);
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("bool"), "{report}");

    // NumPy, when there is one, loads the same values, and Python's json reads ours as them.
    if let Some(py) = std::env::var_os("NPY_PYTHON").filter(|p| !p.is_empty()) {
        let json_path = dir.file("ours.json");
        std::fs::write(&json_path, &stdout).unwrap();
        let out = Command::new(py)
            .args([
                "-c",
                "import sys, json, numpy as np\n\
                 a = np.load(sys.argv[1])\n\
                 ours = json.load(open(sys.argv[2]))\n\
                 want = [{'ok': bool(r['ok']), 's': str(r['s'])} for r in a]\n\
                 print(ours == want, repr(want[0]['s']))",
                &p,
                &json_path.to_string_lossy(),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            r"True 'a\ud834'"
        );
    }
}

#[test]
fn convert_writes_aligned_archives_and_info_marks_members_mapped_in_place() {
    let dir = Scratch::new("align");
    for e in entries("npz") {
        let src = path_of(e);
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let out = dir.file(&name);
        npy_ok([
            "convert".as_ref(),
            src.as_os_str(),
            out.as_os_str(),
            "--align".as_ref(),
        ]);
        // Every member copied (same keys, compression and values) ...
        let before = parse_json(
            &npy_ok(["info".as_ref(), "--json".as_ref(), src.as_os_str()]),
            "info",
        );
        let after = parse_json(
            &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
            "info",
        );
        let (b, a) = (
            before["members"].as_array().unwrap(),
            after["members"].as_array().unwrap(),
        );
        assert_eq!(b.len(), a.len(), "{name}");
        for (b, a) in b.iter().zip(a) {
            for key in ["name", "key", "compression", "size", "array"] {
                assert_eq!(a[key], b[key], "{name}: {key}");
            }
            // ... and every stored .npy member can now be mapped, its data 64-byte aligned.
            if a["compression"] == "stored" && !a["array"].is_null() {
                assert_eq!(a["in_place"]["alignment"], 64, "{name}: {a}");
                assert_eq!(a["in_place"]["data_offset"].as_u64().unwrap() % 64, 0);
            } else {
                assert!(a["in_place"].is_null(), "{name}: {a}");
            }
        }
        assert_eq!(
            npy_ok(["cat".as_ref(), "--json".as_ref(), out.as_os_str()]),
            npy_ok(["cat".as_ref(), "--json".as_ref(), src.as_os_str()]),
            "{name}"
        );
    }
    // The text form says which members can be mapped.
    let text = npy_ok(["info".as_ref(), path_of(&entries("npz")[0]).as_os_str()]);
    assert!(text.contains("in place:"), "{text}");
    // A .npy file becomes a one-member archive; --align needs .npz output.
    let npy_in = fixtures().join("npy/rec_w2_le.npy");
    let one = dir.file("one.npz");
    npy_ok([
        "convert".as_ref(),
        npy_in.as_os_str(),
        one.as_os_str(),
        "--align".as_ref(),
    ]);
    let info = parse_json(
        &npy_ok(["info".as_ref(), "--json".as_ref(), one.as_os_str()]),
        "info",
    );
    assert_eq!(info["members"][0]["key"], "rec_w2_le");
    assert_eq!(info["members"][0]["in_place"]["alignment"], 64);
    let out = npy([
        "convert".as_ref(),
        npy_in.as_os_str(),
        dir.file("x.npy").as_os_str(),
        "--align".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--align applies to .npz output only"));
}
