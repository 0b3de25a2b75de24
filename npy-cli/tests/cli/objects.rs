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
    // A mixed object array is no column: the element and its type are named.
    let out = npy([
        "convert",
        "--allow-pickle-data",
        &fixture("np2", "mixed.npy"),
        dir.file("m.parquet").to_str().unwrap(),
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
