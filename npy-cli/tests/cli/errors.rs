//! Bad input and bad usage: every bad fixture fails cleanly in every command, `check`'s report,
//! the header-size limit, usage errors (exit status 2), and `--help`.

use npy_serde_tests::{entries, entry_path, fixtures_dir};
use serde_json::Value as Json;

use crate::harness::{header_args, npy, npy_ok, Dir};

/// A phrase of the library's message for each error code of the manifest.
fn phrase(code: &str) -> &'static str {
    match code {
        "bad_magic" => "not a .npy file",
        "unsupported_version" => "unsupported .npy format version",
        "header_too_large" => "--max-header-size",
        "invalid_header" => "invalid .npy header",
        "invalid_descr" => "invalid dtype descr",
        "unsupported_dtype" => "unsupported dtype",
        "unexpected_eof" => "unexpected end of input",
        "limit_exceeded" => "more than the limit",
        "overflow" => "overflows",
        "invalid_utf8" => "not valid UTF-8",
        other => panic!("unknown error code {other}"),
    }
}

#[test]
fn every_bad_fixture_fails_cleanly_in_check_cat_info_and_convert() {
    let scratch = Dir::new("bad");
    let out_file = scratch.file("out.npy");
    for e in entries("bad") {
        let path = entry_path(e);
        let shown = path.display().to_string();
        let code = e["error"].as_str().unwrap();

        let out = npy(["check", &shown]);
        assert_eq!(out.status.code(), Some(1), "check {shown}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.lines().count(),
            1,
            "check {shown}: one line:\n{stdout}"
        );
        assert!(stdout.starts_with(&format!("{shown}: ")), "{stdout}");
        assert!(
            stdout.contains(phrase(code)),
            "check {shown} ({code}): {stdout}"
        );

        // info shows an intact header even if the data is short, with a warning, and the
        // header of an object array (tests/cli_object.rs).
        let out = npy(["info", &shown]);
        if out.status.success() {
            if e["name"].as_str().unwrap().starts_with("descr_object") {
                continue;
            }
            assert_eq!(code, "unexpected_eof", "info {shown}");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("truncated"), "info {shown}: {stdout}");
        }

        for cmd in ["cat", "info"] {
            let out = npy([cmd, &shown]);
            if cmd == "info" && out.status.success() {
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{cmd} {shown}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(&shown), "{cmd} {shown}: {stderr}");
            assert!(
                stderr.contains(phrase(code)),
                "{cmd} {shown} ({code}): {stderr}"
            );
            if cmd == "cat" {
                assert!(out.stdout.is_empty(), "{cmd} {shown} printed output");
            }
        }

        let out = npy(["convert", &shown, &out_file.display().to_string()]);
        assert_eq!(out.status.code(), Some(1), "convert {shown}");
        assert!(!out_file.exists(), "convert {shown} left an output file");
    }
}

#[test]
fn check_reports_bad_values_and_is_quiet_on_success() {
    let good: Vec<String> = entries("npy")
        .iter()
        .filter(|e| e["bool_bytes_invalid"] != Json::Bool(true) && header_args(e).is_empty())
        .map(|e| entry_path(e).display().to_string())
        .collect();
    let mut args = vec!["check".to_string()];
    args.extend(good.iter().cloned());
    assert_eq!(npy_ok(&args), "", "check prints nothing for good files");

    let mut args = vec!["check".to_string(), "-v".to_string()];
    args.extend(good.iter().take(3).cloned());
    let out = npy_ok(&args);
    let want: String = good.iter().take(3).map(|f| format!("{f}: ok\n")).collect();
    assert_eq!(out, want);

    let bool2 = fixtures_dir().join("npy/custom_bool_byte_2.npy");
    let bad = fixtures_dir().join("bad/truncated_data.npy");
    let out = npy([
        "check".as_ref(),
        good[0].as_ref(),
        bool2.as_os_str(),
        bad.as_os_str(),
        "no/such/file.npy".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with(&format!("{}: ", bool2.display())),
        "{stdout}"
    );
    assert!(lines[0].contains("bool byte 2"), "{stdout}");
    assert!(lines[0].contains("record 2"), "{stdout}");
    assert!(
        lines[1].starts_with(&format!("{}: ", bad.display())),
        "{stdout}"
    );
    assert!(lines[2].starts_with("no/such/file.npy: "), "{stdout}");
}

#[test]
fn max_header_size_is_enforced_and_can_be_raised() {
    let v2 = fixtures_dir().join("npy/rec_v2_header.npy");
    let out = npy(["info".as_ref(), v2.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-header-size") && err.contains("10000"),
        "{err}"
    );
    npy_ok([
        "--max-header-size".as_ref(),
        "100000".as_ref(),
        "info".as_ref(),
        v2.as_os_str(),
    ]);
    // A lower limit rejects ordinary files too (the option is global: after the command too).
    let small = fixtures_dir().join("npy/f8_le_1d.npy");
    let out = npy([
        "cat".as_ref(),
        small.as_os_str(),
        "--max-header-size".as_ref(),
        "50".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2() {
    let f = fixtures_dir().join("npy/f8_le_1d.npy");
    let f = f.display().to_string();
    for args in [
        vec!["cat", "--bogus", &f],
        vec!["frobnicate", &f],
        vec!["cat"],
        vec!["cat", "--json", "--csv", &f],
        vec!["cat", "--head", "1", "--tail", "1", &f],
        vec!["convert", &f, "out.txt"],
        vec!["convert", &f, "out.npy", "--order", "X"],
        vec!["convert", &f, "out.json", "--byte-order", "big"],
        vec!["--max-header-size", "lots", "info", &f],
        vec!["check"],
    ] {
        let out = npy(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let out = npy(["cat", "--member", "x", &f]);
    assert_eq!(out.status.code(), Some(2), "--member on a .npy file");
    let out = npy(["cat", "does-not-exist.npy"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist.npy"));
    let npz = fixtures_dir().join("npz/keyword.npz");
    let out = npy([
        "cat".as_ref(),
        "--member".as_ref(),
        "nope".as_ref(),
        npz.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope") && err.contains("alpha"), "{err}");
}

#[test]
fn help_documents_the_json_conventions() {
    let help = npy_ok(["--help"]);
    for phrase in [
        "info --json",
        "cat --json",
        "\"nan\"",
        "\"NaT\"",
        "[[title, name], descr]",
        "byte-identical",
    ] {
        assert!(help.contains(phrase), "--help lacks {phrase:?}");
    }
    assert!(npy_ok(["--version"]).starts_with("npy "));
}
