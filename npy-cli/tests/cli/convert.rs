//! `npy convert` between `.npy` files: byte-identical copies of what `np.save` wrote, byte order,
//! memory order and version conversions (loaded by NumPy when `NPY_PYTHON` is set), archive
//! members out, JSON to files and stdout, and aligned archives that map in place.

use std::path::Path;

use npy_serde_tests::{entries, entry_path, fixtures_dir, live_python};
use serde_json::Value as Json;

use crate::harness::{header_args, json_eq, npy, npy_ok, parse_json, Dir};

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
    let s = Dir::new("ident");
    let out = s.file("out.npy");
    let mut n = 0;
    for e in np_save_fixtures() {
        let src = entry_path(e);
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
    let s = Dir::new("order");
    let (back, little) = (s.file("back.npy"), s.file("little.npy"));
    let mut numpy = NumpySame::default();
    for (i, e) in np_save_fixtures().enumerate() {
        let src = entry_path(e);
        // Kept for NumPy's look at the end.
        let big = s.file(&format!("big-{i}.npy"));
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
        numpy.add(&src, &big, None);
    }
    numpy.check();
    // native is little-endian on this machine family, or big.
    let src = fixtures_dir().join("npy/f8_be_1d.npy");
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
    let s = Dir::new("forder");
    let back = s.file("back.npy");
    let mut numpy = NumpySame::default();
    for (i, e) in np_save_fixtures().enumerate() {
        let src = entry_path(e);
        // Kept for NumPy's look at the end.
        let (f, c) = (s.file(&format!("f-{i}.npy")), s.file(&format!("c-{i}.npy")));
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
        numpy.add(&src, &f, Some(!both_contiguous));
        numpy.add(&src, &c, Some(false));
    }
    // Both at once: byte order and memory order, and a version.
    let src = fixtures_dir().join("npy/i2_be_3x2_fortran.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "i2_be_3x2_fortran")
        .unwrap();
    let c = s.file("c.npy");
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
    numpy.add(&src, &c, Some(false));
    numpy.check();
}

#[test]
fn convert_versions() {
    let s = Dir::new("ver");
    let out = s.file("v.npy");
    let src = fixtures_dir().join("npy/rec_v3_utf8_names.npy");
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
    let src = fixtures_dir().join("npy/f8_le_1d.npy");
    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "f8_le_1d")
        .unwrap();
    let mut numpy = NumpySame::default();
    for (v, want) in [("1.0", [1, 0]), ("2.0", [2, 0]), ("3.0", [3, 0])] {
        let out = s.file(&format!("v{v}.npy"));
        convert(&src, &out, &["--version", v], e);
        let info = parse_json(
            &npy_ok(["info".as_ref(), "--json".as_ref(), out.as_os_str()]),
            "info",
        );
        assert_eq!(info["version"], serde_json::json!(want));
        assert_eq!(info["data_offset"].as_u64().unwrap() % 64, 0);
        assert!(json_eq(&cat_json(&out, e), &e["values"]));
        numpy.add(&src, &out, Some(false));
    }
    numpy.check();
}

#[test]
fn convert_extracts_npz_members_and_writes_json() {
    let s = Dir::new("npz");
    let out = s.file("m.npy");
    for e in entries("npz") {
        let path = entry_path(e);
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
    let src = fixtures_dir().join("npy/c16_le_1d.npy");
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
/// NumPy's view of converted files, checked in one Python process when the test is done:
/// `np.load` of each converted file equals `np.load` of its original (shape, dtype up to byte
/// order, values), and where asked its memory order is Fortran's or C's. A `python -c` per file
/// paid NumPy's import each time, most of these tests' time.
#[derive(Default)]
struct NumpySame(Vec<(std::path::PathBuf, std::path::PathBuf, Option<bool>)>);

impl NumpySame {
    /// Checks `converted` against `original` at the end (`fortran`: the memory order NumPy
    /// must see, or any). The converted file must stay in place until then.
    fn add(&mut self, original: &Path, converted: &Path, fortran: Option<bool>) {
        self.0.push((original.into(), converted.into(), fortran));
    }

    /// Runs the checks (with `NPY_PYTHON`; nothing without it), failing on the first file
    /// NumPy disagrees about.
    fn check(self) {
        if live_python().is_none() {
            return;
        }
        let script = r#"
import sys
import numpy as np
args = sys.argv[1:]
for original, converted, fo in zip(args[0::3], args[1::3], args[2::3]):
    a = np.load(original, max_header_size=10**6)
    b = np.load(converted, max_header_size=10**6)
    try:
        assert a.shape == b.shape, (a.shape, b.shape)
        la, lb = a.dtype.newbyteorder('<'), b.dtype.newbyteorder('<')
        assert la == lb, (a.dtype, b.dtype)
        assert repr(a.astype(la).tolist()) == repr(b.astype(lb).tolist()), (a, b)
        if fo != "any":
            fortran = b.flags.f_contiguous and not b.flags.c_contiguous
            assert fortran == (fo == "True"), b.flags
    except AssertionError as e:
        sys.exit(f"NumPy disagrees about {converted} (from {original}): {e!r}")
print(len(args) // 3)
"#;
        let mut args: Vec<&std::ffi::OsStr> = Vec::new();
        for (original, converted, fortran) in &self.0 {
            args.push(original.as_os_str());
            args.push(converted.as_os_str());
            args.push(
                match fortran {
                    None => "any",
                    Some(true) => "True",
                    Some(false) => "False",
                }
                .as_ref(),
            );
        }
        let checked = npy_serde_tests::run_python(script, &args);
        assert_eq!(checked.trim(), self.0.len().to_string());
    }
}

#[test]
fn convert_writes_aligned_archives_and_info_marks_members_mapped_in_place() {
    let dir = Dir::new("align");
    for e in entries("npz") {
        let src = entry_path(e);
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
    let text = npy_ok(["info".as_ref(), entry_path(&entries("npz")[0]).as_os_str()]);
    assert!(text.contains("in place:"), "{text}");
    // A .npy file becomes a one-member archive; --align needs .npz output.
    let npy_in = fixtures_dir().join("npy/rec_w2_le.npy");
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
