//! `npy info` on object arrays (`'|O'`, or records with such a field): the header and what the
//! data is, while `cat`, `convert` and `check` refuse the file without `--allow-pickle-data`
//! (`cat` and `convert` naming it). On the bad fixtures `descr_object*.npy`, and with `NPY_PYTHON` set,
//! on a file NumPy pickled itself.

use std::path::PathBuf;
use std::process::Command;

use npy_serde_tests::{fixtures_dir, live_python};
use serde_json::{json, Value as Json};

use crate::harness::{npy, Dir};

fn fixture(name: &str) -> String {
    fixtures_dir().join("bad").join(name).display().to_string()
}

/// Checks `info`, `info --json` and the refusals on the object array at `path`; returns the
/// JSON info.
fn check(path: &str) -> Json {
    let out = npy(["info", path]);
    assert!(out.status.success(), "info {path}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pickled Python objects"), "{text}");
    assert!(text.contains("--allow-pickle-data reads them"), "{text}");
    assert!(text.contains("data offset:"), "{text}");

    let out = npy(["info", "--json", path]);
    assert!(out.status.success(), "info --json {path}: {out:?}");
    let info: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["itemsize"], Json::Null);
    assert!(info["data"].as_str().unwrap().contains("pickled"));

    let dir = Dir::new("object");
    let dst: PathBuf = dir.file("out.npy");
    for args in [
        vec!["cat", path],
        vec!["check", path],
        vec!["convert", path, dst.to_str().unwrap()],
    ] {
        let out = npy(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("unsupported dtype"), "{args:?}: {said}");
        if args[0] != "check" {
            assert!(said.contains("--allow-pickle-data"), "{args:?}: {said}");
        }
        assert!(!dst.exists(), "{args:?} left an output file");
    }
    info
}

#[test]
fn info_shows_object_headers_and_the_rest_refuses() {
    let info = check(&fixture("descr_object.npy"));
    assert_eq!(
        info,
        json!({
            "version": [1, 0], "descr": "|O", "shape": [2], "fortran_order": false,
            "data_offset": 128, "itemsize": null, "count": 2,
            "data": "pickled Python objects (NumPy's allow_pickle=True), never unpickled: --allow-pickle-data reads them as data",
            "pickle_protocol": null, "pickle_globals": [],
            "pickle_error": "pickle: unknown opcode 0x00 (at byte 0)"
        })
    );
    let text = String::from_utf8(npy(["info", &fixture("descr_object.npy")]).stdout).unwrap();
    assert!(text.contains("dtype:       |O (Python objects)"), "{text}");
    assert!(text.contains("shape:       (2,)"), "{text}");
    assert!(text.contains("order:       C (row-major)"), "{text}");

    let info = check(&fixture("descr_object_field.npy"));
    assert_eq!(info["descr"], json!([["a", "<i4"], ["o", "|O"]]));
}

#[test]
fn info_names_the_globals_a_pickle_would_import_without_running_it() {
    let pickles = fixtures_dir().join("pickle");
    let evil = pickles.join("hostile").join("os_system.npy");
    let info = check(evil.to_str().unwrap());
    assert_eq!(info["pickle_globals"], json!(["os.system"]));
    assert_eq!(info["pickle_protocol"], Json::Null);
    let text = String::from_utf8(npy(["info", evil.to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.contains("pickle:      protocol 0 or 1, names os.system (not run)"),
        "{text}"
    );
    let numpy = pickles.join("np2").join("strings.npy");
    let info = check(numpy.to_str().unwrap());
    assert_eq!(info["pickle_protocol"], 4);
    assert_eq!(
        info["pickle_globals"],
        json!([
            "numpy._core.multiarray._reconstruct",
            "numpy.ndarray",
            "numpy.dtype"
        ])
    );
    assert_eq!(info["pickle_error"], Json::Null);
}

#[test]
fn cat_reads_object_arrays_as_data_when_asked() {
    let pickles = fixtures_dir().join("pickle");
    let strings = pickles.join("np2").join("optional_strings.npy");
    let out = npy(["cat", "--allow-pickle-data", strings.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "'a'\nNone\n'ccc'\n");
    let na = pickles.join("np2").join("stringdtype_na_none.npy");
    let out = npy([
        "cat",
        "--allow-pickle-data",
        "--tail",
        "1",
        na.to_str().unwrap(),
    ]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "'c'\n");
    // A pickle that calls something is refused, naming it; nothing runs.
    let evil = pickles.join("hostile").join("os_system.npy");
    let out = npy(["cat", "--allow-pickle-data", evil.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("os.system"), "{err}");
}

#[test]
fn other_unsupported_dtypes_still_fail_in_info() {
    // Not an object array: info refuses it as before.
    let dir = Dir::new("object-u");
    let path = dir.file("bad.npy");
    let text = "{'descr': '<q8', 'fortran_order': False, 'shape': (2,), }";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let pad = 64 - (10 + text.len() + 1) % 64;
    bytes.extend_from_slice(&((text.len() + pad + 1) as u16).to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend(std::iter::repeat_n(b' ', pad));
    bytes.push(b'\n');
    std::fs::write(&path, &bytes).unwrap();
    let out = npy(["info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn numpy_pickled_object_array() {
    let Some(python) = live_python() else {
        return;
    };
    let dir = Dir::new("object-py");
    let path = dir.file("objects.npy");
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys, numpy as np\n\
             a = np.empty((2, 3), dtype=object, order='F')\n\
             a[...] = [[1, 'x', None], [2.5, [1], {}]]\n\
             np.save(sys.argv[1], a, allow_pickle=True)",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let info = check(path.to_str().unwrap());
    assert_eq!(info["descr"], "|O");
    assert_eq!(info["shape"], json!([2, 3]));
    assert_eq!(info["fortran_order"], true);
    assert_eq!(info["count"], 6);
    assert_eq!(info["data_offset"], 128);

    // In an archive: listed with the other members, and alone.
    let npz = dir.file("mixed.npz");
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys, numpy as np\n\
             o = np.empty(2, dtype=object); o[:] = [1, 'x']\n\
             np.savez_compressed(sys.argv[1], nums=np.arange(3), objs=o)",
            npz.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let npz = npz.to_str().unwrap();
    let out = npy(["info", "--json", npz]);
    assert!(out.status.success(), "{out:?}");
    let all: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all["members"][0]["array"]["itemsize"], 8);
    assert_eq!(all["members"][1]["key"], "objs");
    assert_eq!(all["members"][1]["array"]["descr"], "|O");
    assert_eq!(all["members"][1]["array"]["itemsize"], Json::Null);
    let text = String::from_utf8(npy(["info", npz]).stdout).unwrap();
    assert!(
        text.contains("  data:        pickled Python objects"),
        "{text}"
    );
    let member = format!("{npz}:objs");
    let one = check(&member);
    assert_eq!(one, all["members"][1]["array"]);
    let text = String::from_utf8(npy(["info", &member]).stdout).unwrap();
    assert!(text.contains("compression: deflate"), "{text}");
}
