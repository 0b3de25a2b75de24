//! Inputs that try the tool's limits: zero-byte elements in huge numbers, a pipe as input, shapes
//! whose other dimensions overflow, corrupt archive members, arrays without data bytes, and the
//! values NumPy shows for bytes the typed reads refuse.

use std::process::{Command, Output, Stdio};

use npy_serde_tests::{entries, entry_path};
use serde_json::Value as Json;

use crate::harness::{json_eq, npy, npy_ok, parse_json, Dir};

#[test]
fn zero_byte_elements_in_huge_numbers_do_not_hang() {
    // 2**40 x 3 empty records: a 128-byte file that NumPy itself would happily describe.
    let s = Dir::new("empty");
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
    let bytes = std::fs::read(entry_path(e)).unwrap();
    let out = npy_with_stdin(&["cat", "--json", "/dev/stdin"], bytes.clone());
    assert!(out.status.success());
    let got = parse_json(&String::from_utf8_lossy(&out.stdout), "stdin");
    assert!(json_eq(&got, &e["values"]), "{got}");

    let e = entries("npy")
        .iter()
        .find(|e| e["name"] == "i8_le_1d")
        .unwrap();
    let bytes = std::fs::read(entry_path(e)).unwrap();
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
    let s = Dir::new("zeroshape");
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
    let dir = Dir::new("corrupt-npz");
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
    let dir = Dir::new("dataless");
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
    let dir = Dir::new("numpy-view");
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
