//! The harness every test module runs the tool through: the `npy` binary cargo built for this
//! test (`CARGO_BIN_EXE_npy`), its output and exit status, a scratch directory per test, the
//! header-size option a fixture needs, and JSON compared exactly.
//!
//! The fixtures, their manifest and live NumPy (`NPY_PYTHON`) come from the shared test helpers,
//! `npy_serde_tests` (tests/src/lib.rs).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value as Json;

/// The header-size option a fixture needs (the v2.0 fixture's header is over NumPy's 10000).
pub fn header_args(entry: &Json) -> Vec<String> {
    if entry["data_offset"].as_u64().unwrap_or(0) > 10_000 {
        vec!["--max-header-size".into(), "1000000".into()]
    } else {
        Vec::new()
    }
}

pub fn npy<I, S>(args: I) -> Output
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
pub fn npy_ok<I, S>(args: I) -> String
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
pub struct Dir(pub PathBuf);

impl Dir {
    /// A new directory under the system's temporary directory, unique to this process, `tag`
    /// and call.
    pub fn new(tag: &str) -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "npy-cli-test-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Dir(dir)
    }

    /// A path in the directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A path in the directory, as a command-line argument.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // the arrow and sql modules'
    pub fn join(&self, name: &str) -> String {
        self.file(name).display().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// JSON equality with numbers compared exactly: integers as integers, floats bit for bit
/// (allowing one unit in the last place, as serde_json's default float parser may round the
/// last bit differently for two spellings of the same shortest decimal).
pub fn json_eq(a: &Json, b: &Json) -> bool {
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

pub fn parse_json(text: &str, what: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{text}"))
}
