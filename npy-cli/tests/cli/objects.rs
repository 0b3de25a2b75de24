//! `npy convert --allow-pickle-data` and `npy sql --allow-pickle-data` on the object arrays
//! NumPy wrote (`tests/fixtures/pickle`, values in `expected.json`): JSON and CSV of their
//! elements; Parquet and back into an object array with `--strings objects` (feature
//! `parquet`); SQL over them (feature `datafusion`); hostile pickles refused naming the file.

use std::path::PathBuf;

use npy_serde_tests::fixtures_dir;
use serde_json::Value as Json;

use crate::harness::{npy, Dir};

fn fixture(sub: &str, name: &str) -> String {
    path(sub, name).display().to_string()
}

fn path(sub: &str, name: &str) -> PathBuf {
    fixtures_dir().join("pickle").join(sub).join(name)
}

fn expected(sub: &str, name: &str) -> Json {
    let text = std::fs::read_to_string(
        fixtures_dir()
            .join("pickle")
            .join(sub)
            .join("expected.json"),
    )
    .unwrap();
    let all: Json = serde_json::from_str(&text).unwrap();
    all[name].clone()
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn convert_writes_json_and_csv_of_the_elements() {
    let dir = Dir::new("objects-convert");
    let json = dir.file("s.json");
    let src = fixture("np2", "strings.npy");
    let out = npy(["convert", &src, json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(!json.exists());
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &src,
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Json = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(got, expected("np2", "strings.npy")["values"]);

    let two = dir.file("two.json");
    let src = fixture("np1", "two_d.npy");
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &src,
        two.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Json = serde_json::from_str(&std::fs::read_to_string(&two).unwrap()).unwrap();
    assert_eq!(got, serde_json::json!([["a", "b"], ["c", "d"]]));

    let csv = dir.file("o.csv");
    let src = fixture("np1", "optional_strings.npy");
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &src,
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "value\na\n\nccc\n");
}

#[test]
fn archive_members_read_as_files_do() {
    let dir = Dir::new("objects-members");
    for sub in ["np1", "np2"] {
        let archive = fixture(sub, "objects.npz");
        let exp = expected(sub, "objects.npz/strings");
        // Without the option: refused, naming the tool's flag.
        let out = npy(["cat", &format!("{archive}:strings")]);
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        assert!(said(&out).contains("--allow-pickle-data"), "{}", said(&out));
        // cat: one JSON element per line, for ARCHIVE:KEY and --member alike.
        for args in [
            vec![
                "cat",
                "--allow-pickle-data",
                "--member",
                "strings",
                &archive,
            ],
            vec!["cat", "--allow-pickle-data", &format!("{archive}:strings")],
        ] {
            let out = npy(args);
            assert!(out.status.success(), "{}", said(&out));
            let lines: Vec<Json> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(Json::Array(lines), exp["values"], "{sub}");
        }
        // convert to JSON: the values np.load gives, a ragged member too.
        let json = dir.file(&format!("{sub}-ragged.json"));
        let out = npy([
            "convert",
            "--allow-pickle-data",
            &format!("{archive}:ragged"),
            json.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", said(&out));
        let got: Json = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(got[2], serde_json::json!(["ab", "c"]), "{sub}: {got}");
        assert_eq!(got.as_array().map(Vec::len), Some(3), "{sub}: {got}");
    }
}

#[test]
fn python_2_strings_take_the_encoding_np_load_takes() {
    let src = fixture("np2", "python2_strings.npy");
    // ASCII by default: the refusal names the flag that reads them.
    let out = npy(["cat", "--allow-pickle-data", &src]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("--pickle-encoding"), "{}", said(&out));
    let out = npy([
        "--pickle-encoding",
        "latin1",
        "cat",
        "--allow-pickle-data",
        &src,
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let lines: Vec<Json> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[..2], [Json::from("plain"), Json::from("café")]);
    assert_eq!(expected("np2", "python2_strings.npy")["values"][1], "café");
    // An encoding np.load does not take is a usage error naming the three.
    let out = npy([
        "--pickle-encoding",
        "utf8",
        "cat",
        "--allow-pickle-data",
        &src,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("latin1"), "{}", said(&out));
}

#[test]
fn hostile_pickles_are_refused_naming_the_file() {
    let dir = Dir::new("objects-hostile");
    let out_json = dir.file("h.json");
    for name in ["os_system.npy", "memo_bomb.npy", "self_reference.npy"] {
        let src = fixture("hostile", name);
        let out = npy([
            "convert",
            "--allow-pickle-data",
            &src,
            out_json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", said(&out));
        let text = said(&out);
        assert!(text.contains(name), "{name}: {text}");
        assert!(!out_json.exists(), "{name} left an output");
    }
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_and_back_into_an_object_array() {
    let dir = Dir::new("objects-parquet");
    let pq = dir.file("s.parquet");
    let src = fixture("np2", "optional_strings.npy");
    let out = npy(["convert", "--allow-pickle-data", &src, pq.to_str().unwrap()]);
    assert!(out.status.success(), "{}", said(&out));
    // Back with the strings as objects: the values np.load gave.
    let back = dir.file("back.npy");
    let out = npy([
        "convert",
        "--strings",
        "objects",
        pq.to_str().unwrap(),
        back.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Vec<Option<String>> = npy_serde::ReaderBuilder::new()
        .allow_pickle_data(true)
        .from_path_serde(&back)
        .unwrap();
    assert_eq!(got, [Some("a".to_string()), None, Some("ccc".to_string())]);
    // .npy to .npy goes through Arrow with the option: the object array again.
    let again = dir.file("again.npy");
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &src,
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Vec<Option<String>> = npy_serde::ReaderBuilder::new()
        .allow_pickle_data(true)
        .from_path_serde(&again)
        .unwrap();
    assert_eq!(got, [Some("a".to_string()), None, Some("ccc".to_string())]);
    // An archive's object member to Parquet and back: the same values.
    let member_pq = dir.file("m.parquet");
    let member = format!("{}:strings", fixture("np1", "objects.npz"));
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &member,
        member_pq.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let member_back = dir.file("m.npy");
    let out = npy([
        "convert",
        "--strings",
        "objects",
        member_pq.to_str().unwrap(),
        member_back.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Vec<Option<String>> = npy_serde::ReaderBuilder::new()
        .allow_pickle_data(true)
        .from_path_serde(&member_back)
        .unwrap();
    assert_eq!(got, [Some("a".to_string()), None, Some("ccc".to_string())]);
    // A mixed object array is no column: the element and its type are named.
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &fixture("np2", "mixed.npy"),
        dir.file("mixed.parquet").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(said(&out).contains("is a Python"), "{}", said(&out));
}

#[cfg(all(feature = "datafusion", feature = "parquet"))]
#[test]
fn sql_reads_object_arrays_only_when_asked() {
    let src = fixture("np2", "optional_strings.npy");
    let q = "SELECT count(value) AS n FROM optional_strings";
    let out = npy(["sql", "--csv", q, &src]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("allow_pickle_data"), "{}", said(&out));
    let out = npy(["sql", "--csv", "--allow-pickle-data", q, &src]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n2\n");
    // A table spec takes the option as a key.
    let spec = format!("t=npy({src}, allow_pickle_data=true)");
    let out = npy([
        "sql",
        "--csv",
        "SELECT value FROM t ORDER BY value",
        "-t",
        &spec,
    ]);
    assert!(out.status.success(), "{}", said(&out));
    // NULL last; a row of one empty field is written `""` (else it would be a blank line).
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "value\na\nccc\n\"\"\n"
    );
    // An archive's object member, as ARCHIVE:KEY and as a spec.
    let archive = fixture("np2", "objects.npz");
    let q = "SELECT count(*) AS n, count(value) AS v FROM strings";
    let out = npy([
        "sql",
        "--csv",
        "--allow-pickle-data",
        q,
        &format!("{archive}:strings"),
    ]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n,v\n3,2\n");
    let spec = format!("t=npz({archive}, member=stringdtype, allow_pickle_data=true)");
    let out = npy(["sql", "--csv", "SELECT value FROM t", "-t", &spec]);
    assert!(out.status.success(), "{}", said(&out));
    // A NULL in a row of one field is written `""`, as above.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "value\na\n\"\"\nc\n");
    // Python 2 str values as bytes: a Binary column (CSV prints its hex), from the flag
    // for FILEs and from the table option for a spec.
    let py2 = fixture("np2", "python2_ascii.npy");
    let out = npy([
        "sql",
        "--csv",
        "--allow-pickle-data",
        "--pickle-encoding",
        "bytes",
        "SELECT value FROM python2_ascii",
        &py2,
    ]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "value\n6f6e6c79\n6173636969\n"
    );
    let spec = format!("t=npy({py2}, allow_pickle_data=true, pickle_encoding=bytes)");
    let out = npy(["sql", "--csv", "SELECT value FROM t", "-t", &spec]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("6f6e6c79"));
    // A hostile pickle: this crate's error, naming the file.
    let evil = fixture("hostile", "os_system.npy");
    let out = npy([
        "sql",
        "--allow-pickle-data",
        "SELECT * FROM os_system",
        &evil,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = said(&out);
    assert!(
        text.contains("os.system") && text.contains("os_system.npy"),
        "{text}"
    );
}
