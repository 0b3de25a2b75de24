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
        // cat --json: the elements as a JSON list, for ARCHIVE:KEY and --member alike.
        for args in [
            vec![
                "cat",
                "--allow-pickle-data",
                "--json",
                "--member",
                "strings",
                &archive,
            ],
            vec![
                "cat",
                "--allow-pickle-data",
                "--json",
                &format!("{archive}:strings"),
            ],
        ] {
            let out = npy(args);
            assert!(out.status.success(), "{}", said(&out));
            let got: Json = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(got, exp["values"], "{sub}");
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
        "--json",
        &src,
    ]);
    assert!(out.status.success(), "{}", said(&out));
    let got: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got[0], "plain");
    assert_eq!(got[1], "café");
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

/// A value of `make_pickle.py`'s tagged JSON in the tool's JSON convention (`npy --help`):
/// dicts and records as objects, tuples and sets as lists, bytes as latin-1 text, arrays
/// nested by their shape.
fn untag(v: &Json) -> Json {
    let Json::Object(m) = v else {
        return match v {
            Json::Array(items) => Json::Array(items.iter().map(untag).collect()),
            other => other.clone(),
        };
    };
    let (tag, body) = m.iter().next().expect("a tag");
    match tag.as_str() {
        "dict" | "record" => Json::Object(
            body.as_array()
                .unwrap()
                .iter()
                .map(|kv| {
                    let key = match &kv[0] {
                        Json::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (key, untag(&kv[1]))
                })
                .collect(),
        ),
        "tuple" | "set" | "complex" => untag(body),
        "bytes" => {
            let hex = body.as_str().unwrap();
            let text = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as char)
                .collect::<String>();
            Json::String(text)
        }
        "bigint" => serde_json::from_str(body.as_str().unwrap()).unwrap(),
        "float" => Json::String(body.as_str().unwrap().to_string()),
        "array" => nest(
            &body["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(untag)
                .collect::<Vec<_>>(),
            &serde_json::from_value::<Vec<usize>>(body["shape"].clone()).unwrap(),
        ),
        // datetime values as their isoformat() text, a timezone as its tzname(), a timedelta
        // as its seconds, a Decimal as its number (NaN and infinities as text).
        "datetime" => {
            let f = |i: usize| body[i].as_i64().unwrap();
            Json::String(format!(
                "{:04}-{:02}-{:02}T{}",
                f(0),
                f(1),
                f(2),
                clock(&body.as_array().unwrap()[3..])
            ))
        }
        "date" => Json::String(format!(
            "{:04}-{:02}-{:02}",
            body[0].as_i64().unwrap(),
            body[1].as_i64().unwrap(),
            body[2].as_i64().unwrap()
        )),
        "time" => Json::String(clock(body.as_array().unwrap())),
        "timedelta" => serde_json::from_str(&seconds_text(body)).unwrap(),
        "timezone" => Json::String(match (&body[1], seconds_micros(&body[0]["timedelta"])) {
            (Json::String(name), _) => name.clone(),
            (_, 0) => "UTC".into(),
            (_, t) => format!("UTC{}", offset_text(t)),
        }),
        "decimal" => {
            let t = body.as_str().unwrap();
            match serde_json::from_str::<Json>(t) {
                Ok(n) if n.is_number() => n,
                _ => Json::String(t.into()),
            }
        }
        other => panic!("tag {other}"),
    }
}

/// A tagged timedelta's `[days, seconds, microseconds]` in microseconds.
fn seconds_micros(td: &Json) -> i128 {
    let f = |i: usize| i128::from(td[i].as_i64().unwrap());
    (f(0) * 86_400 + f(1)) * 1_000_000 + f(2)
}

/// A tagged timedelta as its exact seconds (`{"timedelta": [-1, 5, 7]}` is `-86394.999993`).
fn seconds_text(td: &Json) -> String {
    let t = seconds_micros(td);
    let sign = if t < 0 { "-" } else { "" };
    let (whole, frac) = (t.unsigned_abs() / 1_000_000, t.unsigned_abs() % 1_000_000);
    match frac {
        0 => format!("{sign}{whole}"),
        f => format!("{sign}{whole}.{}", format!("{f:06}").trim_end_matches('0')),
    }
}

/// A UTC offset in microseconds as isoformat() writes it: `+05:30`, `-02:59:52.999999`.
fn offset_text(t: i128) -> String {
    let sign = if t < 0 { '-' } else { '+' };
    let (secs, us) = (t.unsigned_abs() / 1_000_000, t.unsigned_abs() % 1_000_000);
    let hm = format!("{sign}{:02}:{:02}", secs / 3600, secs / 60 % 60);
    match (secs % 60, us) {
        (0, 0) => hm,
        (s, 0) => format!("{hm}:{s:02}"),
        (s, us) => format!("{hm}:{s:02}.{us:06}"),
    }
}

/// A tagged time of day `[hour, minute, second, microsecond, fold, tzinfo]` as isoformat().
fn clock(t: &[Json]) -> String {
    let f = |i: usize| t[i].as_i64().unwrap();
    let mut s = format!("{:02}:{:02}:{:02}", f(0), f(1), f(2));
    if f(3) != 0 {
        s.push_str(&format!(".{:06}", f(3)));
    }
    if let Some(tz) = t[5].get("timezone") {
        s.push_str(&offset_text(seconds_micros(&tz[0]["timedelta"])));
    }
    s
}

/// Flat C-order values nested by `shape` (a bare value for 0-d), as `tolist()` nests them.
fn nest(values: &[Json], shape: &[usize]) -> Json {
    let Some((&n, rest)) = shape.split_first() else {
        return values.first().cloned().unwrap_or(Json::Null);
    };
    let per: usize = rest.iter().product();
    Json::Array(
        (0..n)
            .map(|i| nest(&values[i * per..(i + 1) * per], rest))
            .collect(),
    )
}

/// Every object array NumPy 2 wrote, and every object member of the PyPI packages' files,
/// converted to JSON: the values `np.load` gives, nested like `tolist()` in the tool's JSON
/// convention; whole archives too, object members beside typed ones.
#[test]
fn object_arrays_convert_to_json_as_np_load_gives_them() {
    let dir = Dir::new("objects-json");
    let out_json = dir.file("o.json");
    let mut checked = 0;
    for sub in ["np2", "pypi"] {
        let text = std::fs::read_to_string(path(sub, "expected.json")).unwrap();
        let all: serde_json::Map<String, Json> = serde_json::from_str(&text).unwrap();
        for (name, e) in &all {
            let Some(values) = e["values"].as_array() else {
                continue;
            };
            // A class (NumPy's own py*-objarr files hold `range`) is refused, checked below.
            if values.iter().any(|v| v.to_string().contains("\"global\"")) {
                continue;
            }
            let src = match name.split_once(".npz/") {
                Some((archive, key)) => {
                    format!("{}:{key}", fixture(sub, &format!("{archive}.npz")))
                }
                None => fixture(sub, name),
            };
            let encoding = e["encoding"].as_str().unwrap();
            let out = npy([
                "--pickle-encoding",
                encoding,
                "convert",
                "--allow-pickle-data",
                &src,
                out_json.to_str().unwrap(),
            ]);
            assert!(out.status.success(), "{sub}/{name}: {}", said(&out));
            let got: Json =
                serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
            let flat: Vec<Json> = values.iter().map(untag).collect();
            let shape: Vec<usize> = serde_json::from_value(e["shape"].clone()).unwrap();
            assert_eq!(got, nest(&flat, &shape), "{sub}/{name}");
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} arrays");

    // A whole archive: typed members and object members, each as its member converts alone.
    let archive = fixture("pypi", "statsmodels-vars_results.npz");
    let whole = |args: &[&str]| {
        let mut all = vec!["--pickle-encoding", "latin1"];
        all.extend_from_slice(args);
        let out = npy(&all);
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        out.stdout
    };
    let doc: Json =
        serde_json::from_slice(&whole(&["cat", "--allow-pickle-data", "--json", &archive]))
            .unwrap();
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 14, "{keys:?}");
    for key in ["crit", "irf", "coefs", "phis"] {
        let one: Json = serde_json::from_slice(&whole(&[
            "cat",
            "--allow-pickle-data",
            "--json",
            &format!("{archive}:{key}"),
        ]))
        .unwrap();
        assert_eq!(doc[key], one, "{key}");
    }
    assert_eq!(
        doc["irf"]["realgdp"][0],
        serde_json::json!({"realgdp": 1.0, "realcons": 0.0, "realinv": 0.0})
    );
    // Without the option, the archive is refused at its first object member, naming it.
    let out = npy([
        "--pickle-encoding",
        "latin1",
        "convert",
        &archive,
        out_json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        said(&out).contains("orthirf") && said(&out).contains("--allow-pickle-data"),
        "{}",
        said(&out)
    );
}

/// `cat` prints object arrays in its styles as it prints typed ones: text one element per
/// line (Python's repr, the index first from 2-D on), JSON nested by the shape, `--head` and
/// `--tail` along the first axis; a whole archive lists object members beside typed ones;
/// `check --allow-pickle-data` reads them; a class (`range`) is refused before anything is
/// printed.
#[test]
fn cat_prints_object_arrays_in_its_styles() {
    let two_d = fixture("np2", "two_d.npy");
    let text = |args: &[&str]| {
        let out = npy(args);
        assert!(out.status.success(), "{args:?}: {}", said(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        text(&["cat", "--allow-pickle-data", &two_d]),
        "[0, 0] 'a'\n[0, 1] 'b'\n[1, 0] 'c'\n[1, 1] 'd'\n"
    );
    assert_eq!(
        text(&["cat", "--allow-pickle-data", "--json", &two_d]),
        "[\n  [\"a\", \"b\"],\n  [\"c\", \"d\"]\n]\n"
    );
    assert_eq!(
        text(&[
            "cat",
            "--allow-pickle-data",
            "--json",
            "--tail",
            "1",
            &two_d
        ]),
        "[\n  [\"c\", \"d\"]\n]\n"
    );
    let mixed = text(&["cat", "--allow-pickle-data", &fixture("np2", "mixed.npy")]);
    assert!(
        mixed.starts_with("'a'\nNone\n3\n1180591620717411303424\n-1180591620717411303424\nb'xy'\n1.5\nTrue\n[1, [2, 'x']]\n{'k': [1.0, None], 'n': 2}\n(1, 't')\n-7\n"),
        "{mixed}"
    );
    let csv = text(&[
        "cat",
        "--allow-pickle-data",
        "--csv",
        &fixture("np2", "optional_strings.npy"),
    ]);
    assert_eq!(csv, "value\na\n\nccc\n");

    let archive = fixture("np2", "objects.npz");
    let listed = text(&["cat", "--allow-pickle-data", &archive]);
    assert!(
        listed.starts_with("strings: shape (3,), dtype '|O' (Python objects)\n  'a'\n  None\n"),
        "{listed}"
    );
    assert!(listed.contains("\nragged: shape (3,)"), "{listed}");

    let out = npy(["check", &archive]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("--allow-pickle-data"), "{}", said(&out));
    let out = npy(["check", "--allow-pickle-data", &archive, &two_d]);
    assert!(out.status.success(), "{}", said(&out));

    for name in ["numpy-py3-objarr.npy", "numpy-py2-np0-objarr.npy"] {
        let out = npy([
            "--pickle-encoding",
            "latin1",
            "cat",
            "--allow-pickle-data",
            &fixture("pypi", name),
        ]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", said(&out));
        assert!(out.stdout.is_empty(), "{name} printed before the refusal");
        assert!(
            said(&out).contains("builtins.range"),
            "{name}: {}",
            said(&out)
        );
    }
}
