//! `cat --json` and `info --json` against the manifest: every fixture's values and header, and
//! every archive's members.

use npy_serde_tests::{entries, entry_path, fixtures_dir};
use serde_json::Value as Json;

use crate::harness::{header_args, json_eq, npy, npy_ok, parse_json};

#[test]
fn cat_json_matches_manifest_values_for_every_npy_fixture() {
    let mut checked = 0;
    for e in entries("npy") {
        let path = entry_path(e);
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
    let f = fixtures_dir().join("npy/rec_w2_le.npy");
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
        let path = entry_path(e);
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
        let path = entry_path(e);
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
