//! Text and CSV output: records flattened into columns, 2-D arrays, strings, `--head` /
//! `--tail`, `info`'s dtype tree, and a reader that closes the pipe early.

use std::io::Read;
use std::process::{Command, Stdio};

use npy_serde_tests::{entries, fixtures_dir};
use serde_json::Value as Json;

use crate::harness::{json_eq, npy, npy_ok, parse_json, Dir};

#[test]
fn csv_of_a_record_fixture() {
    let f = fixtures_dir().join("npy/rec_w2_le.npy");
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
    let f = fixtures_dir().join("npy/rec_nested.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    let header = csv.lines().next().unwrap();
    assert!(header.contains("pos.x") || header.contains('.'), "{header}");
    let cols = header.split(',').count();
    assert!(
        csv.lines().skip(1).all(|l| l.split(',').count() == cols),
        "{csv}"
    );
    // convert to .csv writes the same.
    let s = Dir::new("csv");
    let out = s.file("rec.csv");
    let src = fixtures_dir().join("npy/rec_w2_le.npy");
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
    let f = fixtures_dir().join("npy/i4_le_2x3.npy");
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

    let f = fixtures_dir().join("npy/f4_be_2x3x4.npy");
    let out = npy(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(2, 3, 4)"));

    let f = fixtures_dir().join("npy/U3_le_1d.npy");
    let csv = npy_ok(["cat".as_ref(), "--csv".as_ref(), f.as_os_str()]);
    assert!(csv.starts_with("value\n"), "{csv}");
}

#[test]
fn text_output_head_and_tail() {
    let f = fixtures_dir().join("npy/i8_le_1d.npy");
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
    let f = fixtures_dir().join("npy/f8_le_2x3_fortran.npy");
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
    let f = fixtures_dir().join("npy/M8_D_le_1d.npy");
    let text = npy_ok(["cat".as_ref(), f.as_os_str()]);
    assert_eq!(
        text,
        "1970-01-01\n2024-02-29\nNaT\n1900-01-01\n-001-12-31\n"
    );
}

#[test]
fn info_text_shows_the_dtype_tree() {
    let f = fixtures_dir().join("npy/rec_padded_leading.npy");
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
    let f = fixtures_dir().join("npz/compressed.npz");
    let text = npy_ok(["info".as_ref(), f.as_os_str()]);
    assert!(text.contains("4 members"), "{text}");
    assert!(text.contains("compression: deflate"), "{text}");
}

#[test]
fn closed_stdout_is_not_a_panic() {
    let s = Dir::new("pipe");
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
