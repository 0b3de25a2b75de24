//! Issue 31's evidence: the tables users bring, through `npy convert` and `npy sql` (feature
//! `parquet`; the TPC-H queries also `datafusion`).
//!
//! The type zoo under `tests/fixtures/foreign/` (single-column files written by pyarrow,
//! polars' own writer and DuckDB's `COPY .. TO`, made by `tests/fixtures/make_foreign.py`) and its
//! `manifest.json` say what every column must become: each case of an entry is `npy convert
//! FILE OUT.npy ARGS` with the fields of the output (dtype as `npy info --json` prints it, values
//! as `npy cat --json` prints them, `null` for "not specified") or a refusal naming the column,
//! the options that convert it and the first offending row. One test per group of the manifest,
//! so that a failure says which part of the mapping (API31.md) differs; each lists every case
//! that differs, not only the first.
//!
//! Offline: every group; `.npy` -> Parquet -> `.npy` gives back the same bytes for every column
//! that converts; hostile tables (a corrupt page, dictionary keys past the dictionary, a decimal
//! past `<i8` under `scaled`, a truncated file) fail with exit code 1, naming column and row.
//!
//! Live (`NPY_PYTHON` with the packages of `tests/requirements.txt`): NumPy loads every converted
//! file with the manifest's dtype and values, equal to pyarrow's and polars' `to_numpy()` where
//! those give a NumPy dtype, and `np.ma.masked_array(a['x'], ~a['x_valid'])` rebuilds a nullable
//! column; Parquet -> `.npy` -> Parquet gives back the column's Arrow type and values (pyarrow
//! reads them); the eight TPC-H tables of `tpchgen-cli` (scale factor 0.01) convert with no option
//! and equal pyarrow's values; `npy sql` answers TPC-H Q1, Q3 and Q6 (`tests/fixtures/tpch/`)
//! over the `.npy` tables as DuckDB does over the Parquet files (feature `datafusion`).

use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

use npy_serde_tests::{fixtures_dir, live_python, run_python};
use serde_json::{json, Value as Json};

use crate::harness::{json_eq, npy, npy_ok, parse_json, Dir};

/// `tests/fixtures/foreign/manifest.json`, read once.
fn manifest() -> &'static Json {
    static M: OnceLock<Json> = OnceLock::new();
    M.get_or_init(|| {
        let path = fixtures_dir().join("foreign/manifest.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run tests/fixtures/make_foreign.py)",
                path.display()
            )
        });
        parse_json(&text, "foreign/manifest.json")
    })
}

fn list<'a>(j: &'a Json, key: &str) -> &'a [Json] {
    j[key]
        .as_array()
        .unwrap_or_else(|| panic!("`{key}` of {j} is not a list"))
}

fn text<'a>(j: &'a Json, key: &str) -> &'a str {
    j[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` of {j} is not a string"))
}

fn zoo() -> &'static [Json] {
    list(manifest(), "zoo")
}

/// The fixture's path, as an argument.
fn input(e: &Json) -> String {
    fixtures_dir().join(text(e, "file")).display().to_string()
}

/// `writer/name`, as failures name an entry.
fn label(e: &Json) -> String {
    format!("{}/{}", text(e, "writer"), text(e, "name"))
}

fn args_of(case: &Json) -> Vec<String> {
    list(case, "args")
        .iter()
        .map(|a| a.as_str().expect("an argument").to_string())
        .collect()
}

/// Whether `word` occurs in `msg` as a word of its own (`nan` not inside `nanosecond`).
fn has_word(msg: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    msg.match_indices(word).any(|(i, _)| {
        !ident(msg[..i].chars().next_back()) && !ident(msg[i + word.len()..].chars().next())
    })
}

/// Whether the message names the column, quoted (`x`, 'x' or "x").
fn names_column(msg: &str, column: &str) -> bool {
    ['`', '\'', '"']
        .iter()
        .any(|q| msg.contains(&format!("{q}{column}{q}")))
}

/// Whether the message names the row: "row N" or "record N", N a whole number.
fn names_row(msg: &str, row: u64) -> bool {
    ["row", "record"].iter().any(|w| {
        let needle = format!("{w} {row}");
        msg.match_indices(&needle).any(|(i, _)| {
            let before = msg[..i].chars().next_back();
            let after = msg[i + needle.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(|c| c.is_ascii_digit())
        })
    })
}

/// A refusal as the manifest wants it: exit code 1, the column, the option words and the row
/// named, no output file left.
fn check_refusal(
    what: &str,
    out: &Output,
    target: &Path,
    column: Option<&str>,
    names: &[Json],
    row: Option<u64>,
) -> Result<(), String> {
    let msg = String::from_utf8_lossy(&out.stderr);
    let mut why = Vec::new();
    if out.status.code() != Some(1) {
        why.push(format!("exit status {} (want 1)", out.status));
    }
    if let Some(c) = column.filter(|c| !names_column(&msg, c)) {
        why.push(format!("does not name the column `{c}`"));
    }
    for n in names.iter().filter_map(Json::as_str) {
        if !has_word(&msg, n) {
            why.push(format!("does not name `{n}`"));
        }
    }
    if let Some(r) = row.filter(|r| !names_row(&msg, *r)) {
        why.push(format!("does not name row {r}"));
    }
    if target.exists() {
        why.push("left an output file".into());
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}\n      stderr: {}",
            why.join("; "),
            msg.trim()
        ))
    }
}

/// A field's name in `npy info --json`'s descr: `name` or `[title, name]`.
fn field_name(d: &Json) -> Option<&str> {
    match &d[0] {
        Json::String(s) => Some(s),
        Json::Array(tn) => tn.get(1).and_then(Json::as_str),
        _ => None,
    }
}

/// The output's fields, dtypes and values against the manifest's (through `npy info --json`
/// and `npy cat --json`).
fn check_fields(what: &str, target: &str, fields: &[Json]) -> Result<(), String> {
    let info = parse_json(&npy_ok(["info", "--json", target]), "info --json");
    let descr = info["descr"].as_array().cloned().unwrap_or_default();
    let got: Vec<Option<&str>> = descr.iter().map(field_name).collect();
    let want: Vec<Option<&str>> = fields.iter().map(|f| f["name"].as_str()).collect();
    if got != want {
        return Err(format!(
            "{what}: fields {got:?}, want {want:?} (descr {})",
            info["descr"]
        ));
    }
    let mut why = Vec::new();
    for (f, d) in fields.iter().zip(&descr) {
        let dtype = Json::Array(d.as_array().expect("a field")[1..].to_vec());
        if !json_eq(&dtype, &f["descr"]) {
            why.push(format!("`{}` is {dtype}, want {}", f["name"], f["descr"]));
        }
    }
    let rows = parse_json(&npy_ok(["cat", "--json", target]), "cat --json");
    let rows = rows.as_array().cloned().unwrap_or_default();
    for f in fields {
        let name = text(f, "name");
        let values = list(f, "values");
        if rows.len() != values.len() {
            why.push(format!("{} rows, want {}", rows.len(), values.len()));
            break;
        }
        for (i, (row, want)) in rows.iter().zip(values).enumerate() {
            if !want.is_null() && !json_eq(&row[name], want) {
                why.push(format!("`{name}`[{i}] = {}, want {want}", row[name]));
            }
        }
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", why.join("; ")))
    }
}

/// Runs case `k` of a zoo entry into `dir`: `Ok(Some(out))` when it converted as the manifest
/// says, `Ok(None)` when it was refused as the manifest says.
fn run_case(dir: &Dir, e: &Json, k: usize, case: &Json) -> Result<Option<String>, String> {
    let out = dir.join(&format!(
        "{}-{}-{k}.npy",
        text(e, "writer"),
        text(e, "name")
    ));
    let args = args_of(case);
    let what = format!("{} {:?}", label(e), args);
    let mut cmd = vec!["convert".to_string(), input(e), out.clone()];
    cmd.extend(args);
    let res = npy(&cmd);
    if let Some(refused) = case.get("refused") {
        check_refusal(
            &format!("{what} should be refused"),
            &res,
            Path::new(&out),
            Some(text(e, "column")),
            list(refused, "names"),
            refused["row"].as_u64(),
        )?;
        return Ok(None);
    }
    if !res.status.success() {
        return Err(format!(
            "{what}: refused ({}), want {}\n      stderr: {}",
            res.status,
            case["fields"][0]["descr"],
            String::from_utf8_lossy(&res.stderr).trim()
        ));
    }
    check_fields(&what, &out, list(case, "fields"))?;
    Ok(Some(out))
}

/// Every case of every zoo entry of `group`; panics listing each case that differs.
fn check_group(group: &str) {
    let dir = Dir::new(&format!("zoo-{group}"));
    let mut failures = Vec::new();
    let mut n = 0;
    for e in zoo().iter().filter(|e| e["group"] == group) {
        for (k, case) in list(e, "cases").iter().enumerate() {
            n += 1;
            if let Err(f) = run_case(&dir, e, k, case) {
                failures.push(f);
            }
        }
    }
    assert!(n > 0, "no cases in group {group}");
    assert!(
        failures.is_empty(),
        "{} of {n} cases of group `{group}` differ from tests/fixtures/foreign/manifest.json:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn zoo_manifest_lists_every_writer_type_and_file() {
    let mut writers = std::collections::BTreeMap::<&str, usize>::new();
    for e in zoo() {
        assert!(Path::new(&input(e)).is_file(), "{} missing", input(e));
        assert!(!list(e, "cases").is_empty(), "{}", label(e));
        *writers.entry(text(e, "writer")).or_default() += 1;
    }
    assert!(
        writers.len() == 3 && writers.values().all(|&n| n >= 20),
        "{writers:?}"
    );
    // The issue's table, for each writer that has the type.
    let has = |w: &str, n: &str| zoo().iter().any(|e| e["writer"] == w && e["name"] == n);
    for n in [
        "dec10_2",
        "dec38_2",
        "dict_str",
        "time64_us",
        "list_uniform",
        "list_ragged",
        "map",
        "ts_utc",
        "int_nulls",
        "float_nulls",
        "str_nulls",
        "bool_nulls",
        "utf8_view",
        "large_utf8",
        "binary",
        "fixed_binary",
        "fixed_list",
        "struct",
        "uint64",
        "float16",
        "date64",
        "all_null",
        "dec_neg_scale",
    ] {
        assert!(has("pyarrow", n), "pyarrow {n}");
    }
    for n in [
        "dec10_2",
        "dec38_2",
        "categorical",
        "time",
        "list_ragged",
        "ts_utc",
        "all_null",
    ] {
        assert!(has("polars", n), "polars {n}");
    }
    for n in [
        "dec9_2",
        "dec38_2",
        "enum",
        "time",
        "map",
        "timestamptz",
        "int_nulls",
    ] {
        assert!(has("duckdb", n), "duckdb {n}");
    }
    for h in list(manifest(), "hostile") {
        let p = fixtures_dir().join(text(h, "file"));
        assert!(p.is_file(), "{} missing", p.display());
    }
}

#[test]
fn zoo_decimals() {
    check_group("decimal");
}

#[test]
fn zoo_dictionaries_run_ends_and_views_decode() {
    check_group("encoding");
}

#[test]
fn zoo_times_durations_and_zones() {
    check_group("time");
}

#[test]
fn zoo_lists_maps_unions_and_intervals() {
    check_group("list");
}

#[test]
fn zoo_plain_types() {
    check_group("plain");
}

#[test]
fn zoo_null_policies() {
    check_group("nulls");
}

#[test]
fn zoo_refused_types_name_their_option() {
    check_group("refused");
}

/// `npy info --arrow` of a converted zoned timestamp shows the zone (nothing dropped silently).
#[test]
fn zone_is_kept_and_shown() {
    let dir = Dir::new("zoo-zone");
    let src = fixtures_dir()
        .join("foreign/pyarrow/ts_paris_ms.parquet")
        .display()
        .to_string();
    let out = dir.join("z.npy");
    npy_ok(["convert", &src, &out]);
    let info = npy_ok(["info", "--arrow", &out]);
    assert!(info.contains("Europe/Paris"), "{info}");
}

/// The cases that convert and are meant to come back: the default, and a `--nulls mask` case
/// of a nullable column.
fn round_trip_cases() -> Vec<(&'static Json, usize, &'static Json)> {
    let mut out = Vec::new();
    for e in zoo().iter().filter(|e| !e["roundtrip_type"].is_null()) {
        let cases = list(e, "cases");
        let converts = |c: &Json, args: &[&str]| c.get("fields").is_some() && args_of(c) == args;
        let k = cases
            .iter()
            .position(|c| converts(c, &[]))
            .or_else(|| cases.iter().position(|c| converts(c, &["--nulls", "mask"])));
        if let Some(k) = k {
            out.push((e, k, &cases[k]));
        }
    }
    out
}

/// The table format an entry round-trips through: its own (`parquet`, or `arrow` for the types
/// Parquet cannot hold).
fn table_ext(e: &Json) -> &'static str {
    if text(e, "file").ends_with(".arrow") {
        "arrow"
    } else {
        "parquet"
    }
}

/// Converts a case's `.npy` output `a` to its table format: the table's path, or the failure.
fn to_table(e: &Json, a: &str) -> Result<String, String> {
    let b = format!("{a}.{}", table_ext(e));
    let res = npy(["convert", a, &b]);
    if res.status.success() {
        Ok(b)
    } else {
        Err(format!(
            "{}: .npy -> .{}: {}",
            label(e),
            table_ext(e),
            String::from_utf8_lossy(&res.stderr).trim()
        ))
    }
}

#[test]
fn zoo_npy_through_its_table_format_is_a_fixed_point() {
    let dir = Dir::new("zoo-fixed");
    let mut failures = Vec::new();
    let cases = round_trip_cases();
    for (e, k, case) in &cases {
        let what = label(e);
        let step = run_case(&dir, e, *k, case).and_then(|a| {
            let a = a.expect("a converting case");
            let b = to_table(e, &a)?;
            Ok((a, b))
        });
        let (a, b) = match step {
            Ok(ab) => ab,
            Err(f) => {
                failures.push(f);
                continue;
            }
        };
        let c = format!("{a}.back.npy");
        let mut back = vec!["convert".to_string(), b.clone(), c.clone()];
        back.extend(args_of(case));
        let res = npy(&back);
        if !res.status.success() {
            failures.push(format!(
                "{what}: .{} -> .npy: {}",
                table_ext(e),
                String::from_utf8_lossy(&res.stderr).trim()
            ));
        } else if std::fs::read(&a).unwrap() != std::fs::read(&c).unwrap() {
            failures.push(format!(
                "{what}: not the same .npy after .{}: {} vs {}",
                table_ext(e),
                npy_ok(["info", "--json", &a]).trim(),
                npy_ok(["info", "--json", &c]).trim()
            ));
        }
    }
    assert!(cases.len() >= 50, "{}", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {} zoo columns do not come back:\n  {}",
        failures.len(),
        cases.len(),
        failures.join("\n  ")
    );
}

#[test]
fn hostile_tables_fail_naming_column_and_row() {
    let dir = Dir::new("zoo-hostile");
    let mut failures = Vec::new();
    let hostile = list(manifest(), "hostile");
    for h in hostile {
        let out = dir.join(&format!("{}.npy", text(h, "name")));
        let mut cmd = vec![
            "convert".to_string(),
            fixtures_dir().join(text(h, "file")).display().to_string(),
            out.clone(),
        ];
        cmd.extend(args_of(h));
        let res = npy(&cmd);
        if let Err(f) = check_refusal(
            &format!("{} ({})", text(h, "name"), text(h, "why")),
            &res,
            Path::new(&out),
            h["column"].as_str(),
            &[],
            h["row"].as_u64(),
        ) {
            failures.push(f);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} hostile tables:\n  {}",
        failures.len(),
        hostile.len(),
        failures.join("\n  ")
    );
}

// ------------------------------------------------------------------------------------------
// Live (NPY_PYTHON): NumPy, pyarrow, polars, DuckDB, tpchgen-cli
// ------------------------------------------------------------------------------------------

/// Checks NumPy's reading of converted files: argv[1] is a JSON list of jobs
/// `{what, out, fields, refs, refs_equal}`.
const NUMPY_READS: &str = r#"
import sys, json, numpy as np
jobs = json.load(open(sys.argv[1]))
bad = []

def j(x):
    """A NumPy value in the manifest's JSON convention."""
    if isinstance(x, np.void) and x.dtype.names:
        return {n: j(x[n]) for n in x.dtype.names}
    if isinstance(x, np.ndarray):
        return [j(y) for y in x]
    if isinstance(x, np.void):
        return bytes(x).hex()
    if isinstance(x, (np.datetime64, np.timedelta64)):
        return 'NaT' if np.isnat(x) else int(x.astype(np.int64))
    if isinstance(x, np.floating):
        f = float(x)
        if f != f:
            return 'nan'
        return f if abs(f) != float('inf') else ('inf' if f > 0 else '-inf')
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bytes_):
        return bytes(x).decode('latin-1')
    return str(x)

def dtype_of(d):
    """A field's dtype from `npy info --json`'s form without the name."""
    base = d[0]
    if isinstance(base, list):
        base = np.dtype([(f[0], dtype_of(f[1:])) for f in base])
    else:
        base = np.dtype(base)
    return np.dtype((base, tuple(d[1]))) if len(d) > 1 else base

def ref_array(r):
    if r['dtype'][1] in 'Mm':
        raw = [np.iinfo(np.int64).min if v == 'NaT' else v for v in r['values']]
        return np.array(raw, np.int64).view(r['dtype'])
    return np.array([np.nan if v == 'nan' else v for v in r['values']]).astype(r['dtype'])

for job in jobs:
    what = job['what']
    try:
        a = np.load(job['out'])
    except Exception as e:
        bad.append(f'{what}: np.load: {e!r}')
        continue
    names = [f['name'] for f in job['fields']]
    if list(a.dtype.names or ()) != names:
        bad.append(f'{what}: fields {a.dtype.names}, want {names}')
        continue
    for f in job['fields']:
        got = a[f['name']]
        want = dtype_of(f['descr'])
        # A subarray field's column has the subarray's shape after the rows.
        if got.dtype != want.base or got.shape[1:] != want.shape:
            bad.append(f"{what}: `{f['name']}` is {got.dtype} {got.shape[1:]}, want {want}")
            continue
        for i, v in enumerate(f['values']):
            if v is not None and j(got[i]) != v:
                bad.append(f"{what}: `{f['name']}`[{i}] = {j(got[i])!r}, want {v!r}")
    x = names[0]
    if len(names) == 2 and names[1] == x + '_valid':
        m = np.ma.masked_array(a[x], ~a[x + '_valid'])
        nulls = [v is None for v in job['fields'][0]['values']]
        if list(np.ma.getmaskarray(m)) != nulls:
            bad.append(f'{what}: masked array mask {np.ma.getmaskarray(m)}, want {nulls}')
        kept = [v for v in job['fields'][0]['values'] if v is not None]
        if [j(v) for v in m.compressed()] != kept:
            bad.append(f'{what}: masked array values {m.compressed()}, want {kept}')
    for who in job['refs_equal'] or []:
        ref = ref_array(job['refs'][who])
        got = a[x]
        if got.dtype.kind in 'Mm':
            nat = np.isnat(got)
            same = (nat == np.isnat(ref)).all() and (got[~nat] == ref[~nat]).all()
        elif got.dtype.kind == 'f':
            same = np.array_equal(got.astype(np.float64), ref.astype(np.float64), equal_nan=True)
        else:
            same = np.array_equal(got, ref)
        if not same:
            bad.append(f'{what}: differs from {who} to_numpy(): {got!r} vs {ref!r}')
assert not bad, f'{len(bad)} of {len(jobs)} files:\n  ' + '\n  '.join(bad)
print('numpy read', len(jobs), 'files')
"#;

#[test]
fn live_numpy_reads_every_converted_zoo_file() {
    if live_python().is_none() {
        return;
    }
    let dir = Dir::new("zoo-live");
    let mut jobs = Vec::new();
    let mut failures = Vec::new();
    for e in zoo() {
        for (k, case) in list(e, "cases").iter().enumerate() {
            match run_case(&dir, e, k, case) {
                Ok(Some(out)) => jobs.push(json!({
                    "what": format!("{} {:?}", label(e), args_of(case)),
                    "out": out,
                    "fields": case["fields"],
                    "refs": e["refs"],
                    "refs_equal": case["refs_equal"],
                })),
                Ok(None) => {}
                Err(f) => failures.push(f),
            }
        }
    }
    let jobs_file = dir.file("jobs.json");
    std::fs::write(&jobs_file, Json::Array(jobs).to_string()).unwrap();
    // NumPy's side first: what converted must read back right, whatever else failed.
    run_python(NUMPY_READS, &[jobs_file.as_os_str()]);
    assert!(
        failures.is_empty(),
        "{} cases did not convert as the manifest says (the zoo_* tests say which part):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// argv[1]: a JSON list of `{what, src, back, column, type}`: pyarrow reads `back` (Parquet or
/// Arrow IPC) with one column, of the Arrow type `type` (list item names and nullability aside),
/// holding the values of `src` (cast to that type: decoded encodings come back plain).
const ARROW_TYPES_BACK: &str = r#"
import sys, json, re, numpy as np, pyarrow as pa, pyarrow.compute as pc
import pyarrow.parquet as pq, pyarrow.feather as pf
jobs = json.load(open(sys.argv[1]))
bad = []
# Nullability and list item names are not compared (a .npy field has no nulls unless masked).
norm = lambda s: re.sub(r'<(element|item): ', '<item: ', s.replace(' not null', ''))
def read(p):
    return pq.read_table(p) if p.endswith('.parquet') else pf.read_table(p)
for job in jobs:
    what = job['what']
    back = read(job['back'])
    if back.column_names != [job['column']]:
        bad.append(f"{what}: columns {back.column_names}, want [{job['column']!r}] (a mask folds back)")
        continue
    t = back.schema.field(0).type
    if norm(str(t)) != norm(job['type']):
        bad.append(f"{what}: comes back as {t}, want {job['type']}")
        continue
    src = read(job['src'])[job['column']].combine_chunks()
    if isinstance(src.type, pa.BaseExtensionType):
        src = src.storage
    if pa.types.is_dictionary(src.type):
        # Through Python values (pyarrow 26 cannot take from a dictionary of string_view).
        vt = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(
            src.type.value_type, src.type.value_type)
        src = pa.array(src.to_pylist(), vt)
    if pa.types.is_run_end_encoded(src.type):
        src = pc.run_end_decode(src)
    got = back[job['column']].combine_chunks()
    if pa.types.is_nested(t):
        # As Python values (pyarrow 26 casts a list view to a list wrongly: its last list empty).
        same = got.to_pylist() == src.to_pylist()
    else:
        try:
            src = src.cast(t)
        except Exception as e:
            bad.append(f'{what}: the source does not cast to {t}: {e}')
            continue
        same = got.equals(src) or (pa.types.is_floating(t) and np.array_equal(
            got.to_numpy(zero_copy_only=False), src.to_numpy(zero_copy_only=False), equal_nan=True))
    if not same:
        bad.append(f'{what}: values {got.to_pylist()[:5]}, want {src.to_pylist()[:5]}')
assert not bad, f'{len(bad)} of {len(jobs)} columns:\n  ' + '\n  '.join(bad)
print('arrow types back', len(jobs))
"#;

/// Parquet (or Arrow IPC) -> `.npy` -> the same format gives back the Arrow type of every column
/// the mapping marks exact or reversible (decoded encodings as their plain types), and its values.
#[test]
fn live_zoo_comes_back_with_its_arrow_type() {
    if live_python().is_none() {
        return;
    }
    let dir = Dir::new("zoo-types");
    let mut jobs = Vec::new();
    let mut failures = Vec::new();
    for (e, k, case) in round_trip_cases() {
        let step =
            run_case(&dir, e, k, case).and_then(|a| to_table(e, &a.expect("a converting case")));
        match step {
            Ok(b) => jobs.push(json!({
                "what": label(e), "src": input(e), "back": b, "column": e["column"],
                "type": e["roundtrip_type"],
            })),
            Err(f) => failures.push(f),
        }
    }
    let jobs_file = dir.file("jobs.json");
    std::fs::write(&jobs_file, Json::Array(jobs).to_string()).unwrap();
    run_python(ARROW_TYPES_BACK, &[jobs_file.as_os_str()]);
    assert!(failures.is_empty(), "{}", failures.join("\n  "));
}

pub(crate) const TPCH_TABLES: [&str; 8] = [
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
];

/// The TPC-H tables of `tpchgen-cli` (beside NPY_PYTHON, where pip installs it) at scale factor
/// `sf`, as Parquet, into `dir`.
pub(crate) fn tpch(dir: &Dir, sf: &str) {
    run_python(
        r#"
import os, subprocess, sys, sysconfig
exe = os.path.join(sysconfig.get_path('scripts'), 'tpchgen-cli')
subprocess.run([exe, 'parquet', '--scale-factor', sys.argv[2], '--output-dir', sys.argv[1]], check=True)
"#,
        &[dir.0.as_os_str(), std::ffi::OsStr::new(sf)],
    );
}

/// Converts TPC-H tables with no option; the failures.
fn convert_tpch(dir: &Dir, tables: &[&str]) -> Vec<String> {
    let mut failures = Vec::new();
    for t in tables {
        let res = npy([
            "convert",
            &dir.join(&format!("{t}.parquet")),
            &dir.join(&format!("{t}.npy")),
        ]);
        if !res.status.success() {
            failures.push(format!(
                "{t}: {}",
                String::from_utf8_lossy(&res.stderr).trim()
            ));
        }
    }
    failures
}

#[test]
fn live_tpch_tables_convert_with_no_option() {
    if live_python().is_none() {
        return;
    }
    let dir = Dir::new("tpch-convert");
    tpch(&dir, "0.01");
    let failures = convert_tpch(&dir, &TPCH_TABLES);
    assert!(
        failures.is_empty(),
        "TPC-H tables refused:\n  {}",
        failures.join("\n  ")
    );
    // NumPy reads each with pyarrow's values: decimals as the nearest double (p <= 15), dates by
    // day, strings and integers equal.
    let mut args = vec![dir.0.clone().into_os_string()];
    args.extend(TPCH_TABLES.iter().map(|t| t.into()));
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_python(
        r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
bad = []
for t in sys.argv[2:]:
    a = np.load(f'{d}/{t}.npy')
    tab = pq.read_table(f'{d}/{t}.parquet')
    if list(a.dtype.names) != tab.column_names or len(a) != tab.num_rows:
        bad.append(f'{t}: {a.dtype.names} x {len(a)}, want {tab.column_names} x {tab.num_rows}')
        continue
    for n in tab.column_names:
        col = tab[n].combine_chunks()
        got = a[n]
        if pa.types.is_decimal(col.type):
            # The nearest double: float(Decimal) (pyarrow's cast to float64 is not correctly
            # rounded: one ulp off for 1 value in 7 of lineitem's l_extendedprice).
            exact = np.array([float(v) for v in col.to_pylist()], np.float64)
            ok = got.dtype == np.float64 and np.array_equal(got, exact)
        elif pa.types.is_date32(col.type):
            days = col.cast(pa.int32()).to_numpy().astype(np.int64)
            ok = got.dtype == np.dtype('<M8[D]') and np.array_equal(got.view(np.int64), days)
        elif pa.types.is_integer(col.type):
            ok = np.array_equal(got, col.to_numpy())
        else:
            ok = got.tolist() == col.to_pylist()
        if not ok:
            bad.append(f'{t}.{n} ({col.type} -> {got.dtype}) differs')
assert not bad, '\n'.join(bad)
print('tpch tables equal')
"#,
        &args,
    );
}
