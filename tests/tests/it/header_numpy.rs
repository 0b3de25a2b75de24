//! Live interop for the header: NumPy builds the same dtype from our descr text, spells it the
//! same way, and `numpy.lib.format` writes byte-identical headers. Runs only with `NPY_PYTHON`
//! (and fails in CI without it).

use std::ffi::OsStr;

use npy_serde::header::Header;
use npy_serde_tests::{live_python, manifest, run_python, strategies};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

const CHECK: &str = r#"
import ast, io, json, sys
import numpy as np
from numpy.lib import _format_impl as fmt

cases = json.load(open(sys.argv[1], encoding="utf-8"))
bad = []
for c in cases:
    try:
        descr = ast.literal_eval(c["descr"])
        dt = fmt.descr_to_dtype(descr)
        again = repr(fmt.dtype_to_descr(dt))
        if again != c["descr"]:
            bad.append({"descr": c["descr"], "numpy_descr": again})
            continue
        if dt.itemsize != c["itemsize"]:
            bad.append({"descr": c["descr"], "numpy_itemsize": dt.itemsize})
            continue
        if "shape" in c:
            buf = io.BytesIO()
            d = {"descr": fmt.dtype_to_descr(dt), "fortran_order": c["fortran_order"],
                 "shape": tuple(c["shape"])}
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fmt._write_array_header(buf, d, None)
            if buf.getvalue().hex() != c["header_hex"]:
                bad.append({"descr": c["descr"], "numpy": buf.getvalue().hex(), "ours": c["header_hex"]})
    except Exception as e:
        bad.append({"descr": c["descr"], "error": repr(e)})
print(json.dumps({"checked": len(cases), "bad": bad}))
"#;

fn check(label: &str, cases: &[serde_json::Value]) {
    let dir = std::env::temp_dir().join(format!("npy-serde-hdr-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cases.json");
    std::fs::write(&path, serde_json::to_vec(cases).unwrap()).unwrap();
    let out = run_python(CHECK, &[OsStr::new(&path)]);
    let _ = std::fs::remove_dir_all(&dir);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["checked"].as_u64().unwrap() as usize, cases.len());
    let bad = v["bad"].as_array().unwrap();
    assert!(
        bad.is_empty(),
        "NumPy disagrees on {} cases: {:#}",
        bad.len(),
        json!(bad[..bad.len().min(5)])
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn random_headers_match_numpy_bytes() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy header interop");
        return;
    }
    let mut runner = TestRunner::new(Config::default());
    let strat = strategies::header();
    let mut cases = Vec::new();
    for _ in 0..400 {
        let h: Header = strat.new_tree(&mut runner).unwrap().current();
        let bytes = h.to_bytes().unwrap();
        cases.push(json!({
            "descr": h.dtype.descr(),
            "itemsize": h.dtype.itemsize(),
            "shape": h.shape,
            "fortran_order": h.fortran_order,
            "header_hex": hex(&bytes),
        }));
    }
    check("random", &cases);
}

#[test]
fn fixture_descrs_are_spelled_like_numpy() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy header interop");
        return;
    }
    let mut cases = Vec::new();
    for f in manifest()["npy"].as_array().unwrap() {
        if f["written_by"] != "np.save" {
            continue;
        }
        let descr = f["descr_repr"].as_str().unwrap();
        let dt: npy_serde::DType = npy_serde::DType::from_descr(descr).unwrap();
        let shape: Vec<u64> = serde_json::from_value(f["shape"].clone()).unwrap();
        let h = Header {
            dtype: dt.clone(),
            shape: shape.clone(),
            fortran_order: f["fortran_order"].as_bool().unwrap(),
        };
        cases.push(json!({
            "descr": dt.descr(),
            "itemsize": dt.itemsize(),
            "shape": shape,
            "fortran_order": h.fortran_order,
            "header_hex": hex(&h.to_bytes().unwrap()),
        }));
    }
    assert!(!cases.is_empty());
    check("fixtures", &cases);
}
