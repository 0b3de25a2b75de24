//! Object arrays through Arrow and SQL (`BatchReaderBuilder::allow_pickle_data`, the table
//! option `allow_pickle_data`): every fixture NumPy 1.26 and 2.4 wrote
//! (`tests/fixtures/pickle`, values in `expected.json` as `np.load(allow_pickle=True)` gave
//! them) whose elements are all `str` (or all `bytes`), `None` aside, reads into a `Utf8`
//! (`Binary`) column of those values; any other is refused naming an element and its type;
//! hostile pickles fail with the crate's error (in SQL naming the file). String columns
//! written with `strings_as_objects` load in NumPy (live with `NPY_PYTHON`, and with
//! `NPY_PYTHON_NP1` a NumPy 1.x too).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, LargeStringArray, RecordBatch, StringArray, StringViewArray};
use arrow_schema::DataType;
use npy_arrow::{BatchReaderBuilder, BatchWriterBuilder};
use npy_serde::pickle::{Encoding, PickleOptions};
use npy_serde::ReaderBuilder;
use npy_serde_tests::{live_python, run_python, TempDir};
use serde_json::{json, Value as Json};

use super::pickle::{dir, expected, hex};

fn builder(encoding: &str) -> BatchReaderBuilder {
    let e = match encoding {
        "ascii" => Encoding::Ascii,
        "latin1" => Encoding::Latin1,
        "bytes" => Encoding::Bytes,
        other => panic!("encoding {other}"),
    };
    let rb = ReaderBuilder::new().pickle_options(PickleOptions::default().encoding(e));
    BatchReaderBuilder::new()
        .reader_options(rb)
        .allow_pickle_data(true)
}

/// Every element of a column (nested lists flattened, C order) as `make_pickle.py` writes it.
fn flat(col: &dyn Array, out: &mut Vec<Json>) {
    match col.data_type() {
        DataType::FixedSizeList(..) => flat(col.as_fixed_size_list().values().as_ref(), out),
        _ => {
            for i in 0..col.len() {
                out.push(element(col, i));
            }
        }
    }
}

fn element(col: &dyn Array, i: usize) -> Json {
    if col.is_null(i) {
        return Json::Null;
    }
    use arrow_array::types::*;
    match col.data_type() {
        DataType::Utf8 => json!(col.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => json!(col.as_string::<i64>().value(i)),
        DataType::Binary => json!({"bytes": hex(col.as_binary::<i32>().value(i))}),
        DataType::Boolean => json!(col.as_boolean().value(i)),
        DataType::Int32 => json!(col.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(col.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => json!(col.as_primitive::<Float64Type>().value(i)),
        other => panic!("a column of {other}"),
    }
}

/// The kind every element has (`str`, `bytes`), if they all have one, `None` aside.
fn one_kind(values: &[Json]) -> Option<&'static str> {
    let mut kind = None;
    for v in values {
        let k = match v {
            Json::Null => continue,
            Json::String(_) => "str",
            Json::Object(o) if o.contains_key("bytes") => "bytes",
            _ => return Some("other"),
        };
        match kind {
            None => kind = Some(k),
            Some(seen) if seen != k => return Some("other"),
            _ => {}
        }
    }
    Some(kind.unwrap_or("str"))
}

fn read_all(b: &BatchReaderBuilder, path: &Path) -> npy_serde::Result<Vec<RecordBatch>> {
    let mut r = b.clone().batch_size(2).open(path)?;
    let mut out = Vec::new();
    while let Some(batch) = r.next_batch()? {
        out.push(batch);
    }
    Ok(out)
}

/// The batches of an `.npz` member (`from_npz_member`, which reads an object member whole).
fn read_member(
    b: &BatchReaderBuilder,
    archive: &Path,
    key: &str,
) -> npy_serde::Result<Vec<RecordBatch>> {
    let mut npz = npy_serde::NpzArchive::open(archive)?;
    let mut r = b.clone().batch_size(2).from_npz_member(npz.by_key(key)?)?;
    let mut out = Vec::new();
    while let Some(batch) = r.next_batch()? {
        out.push(batch);
    }
    Ok(out)
}

fn check_fixtures(sub: &str) -> usize {
    let mut checked = 0;
    for (name, e) in &expected(sub) {
        let b = builder(e["encoding"].as_str().unwrap());
        let values = e["values"].as_array().unwrap();
        let got = match name.split_once(".npz/") {
            Some((archive, key)) => read_member(&b, &dir(sub).join(format!("{archive}.npz")), key),
            None => read_all(&b, &dir(sub).join(name)),
        };
        let records = !values.is_empty() && values.iter().all(|v| v.get("record").is_some());
        if records {
            let batches = got.unwrap_or_else(|e| panic!("{sub}/{name}: {e}"));
            for (j, field) in batches[0].schema().fields().iter().enumerate() {
                let mut col = Vec::new();
                for b in &batches {
                    flat(b.column(j).as_ref(), &mut col);
                }
                let want: Vec<Json> = values.iter().map(|r| r["record"][j][1].clone()).collect();
                assert_eq!(col, want, "{sub}/{name}: field {}", field.name());
            }
            checked += 1;
            continue;
        }
        match one_kind(values) {
            Some("str" | "bytes") => {
                let batches = got.unwrap_or_else(|e| panic!("{sub}/{name}: {e}"));
                let mut col = Vec::new();
                for b in &batches {
                    flat(b.column(0).as_ref(), &mut col);
                }
                assert_eq!(&col, values, "{sub}/{name}");
                let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
                let shape = e["shape"].as_array().unwrap();
                let want_rows = shape.first().map_or(1, |d| d.as_u64().unwrap() as usize);
                assert_eq!(rows, want_rows, "{sub}/{name}");
            }
            _ => {
                let err = got.expect_err(name).to_string();
                assert!(
                    err.contains("cannot be an Arrow column") && err.contains("is a Python"),
                    "{sub}/{name}: {err}"
                );
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn numpy_2_object_arrays_are_arrow_columns_of_np_loads_values() {
    assert!(check_fixtures("np2") >= 28);
}

#[test]
fn numpy_1_object_arrays_are_arrow_columns_of_np_loads_values() {
    assert!(check_fixtures("np1") >= 28);
}

#[test]
fn stringdtype_with_na_object_has_its_nulls() {
    let exp = expected("np2");
    let e = &exp["stringdtype_na_none.npy"];
    let batches = read_all(
        &builder("ascii"),
        &dir("np2").join("stringdtype_na_none.npy"),
    )
    .unwrap();
    let mut col = Vec::new();
    for b in &batches {
        flat(b.column(0).as_ref(), &mut col);
    }
    assert_eq!(&col, e["values"].as_array().unwrap());
    assert!(col.contains(&Json::Null), "{col:?}");
    let field = batches[0].schema().field(0).clone();
    assert_eq!(field.data_type(), &DataType::Utf8);
    assert!(
        field.metadata()["numpy.descr"].starts_with("StringDType"),
        "{field:?}"
    );
}

#[test]
fn without_the_option_the_refusal_names_it() {
    let path = dir("np2").join("strings.npy");
    let e = BatchReaderBuilder::new().open(&path).unwrap_err();
    assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    let bytes = std::fs::read(&path).unwrap();
    let e = BatchReaderBuilder::new().from_slice(&bytes).unwrap_err();
    assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    // Projection works on object columns as on any other.
    let r = builder("ascii")
        .columns(["b"])
        .open(dir("np2").join("record_object.npy"))
        .unwrap();
    assert_eq!(r.schema_ref().fields().len(), 1);
    assert_eq!(r.schema_ref().field(0).name(), "b");
}

#[test]
fn hostile_pickles_fail_through_arrow_with_the_crates_error() {
    let exp = expected("hostile");
    for (name, e) in &exp {
        let path = dir("hostile").join(name);
        let err = builder("ascii").open(&path).expect_err(name);
        assert_eq!(
            err.kind().code(),
            e["code"].as_str().unwrap(),
            "{name}: {err}"
        );
        let part = e["contains"].as_str().unwrap();
        assert!(err.to_string().contains(part), "{name}: {err}");
    }
}

fn strings_batch(col: ArrayRef) -> RecordBatch {
    RecordBatch::try_from_iter([("s", col)]).unwrap()
}

/// Writes `batch` with strings as objects, in two batches, and returns the file.
fn write_objects(batch: &RecordBatch) -> Vec<u8> {
    let mut w = BatchWriterBuilder::new()
        .strings_as_objects(true)
        .writer(std::io::Cursor::new(Vec::new()), &batch.schema())
        .unwrap();
    let half = batch.num_rows() / 2;
    w.write(&batch.slice(0, half)).unwrap();
    w.write(&batch.slice(half, batch.num_rows() - half))
        .unwrap();
    assert_eq!(w.rows(), batch.num_rows() as u64);
    assert!(w.dtype().is_none());
    w.finish().unwrap().into_inner()
}

fn sample() -> Vec<Option<String>> {
    let mut v: Vec<Option<String>> = vec![
        Some("a".into()),
        None,
        Some("優良".into()),
        Some(String::new()),
        Some("x".repeat(300)),
        Some("\u{1F600} \"quoted\" \\ back".into()),
    ];
    v.extend((0..100).map(|i| (i % 7 != 0).then(|| format!("s{i}"))));
    v
}

#[test]
fn string_columns_written_as_objects_read_back_and_round_trip_through_arrow() {
    let want = sample();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(want.clone())),
        Arc::new(LargeStringArray::from(want.clone())),
        Arc::new(StringViewArray::from(want.clone())),
    ];
    for col in cols {
        let ty = col.data_type().clone();
        let file = write_objects(&strings_batch(col));
        let back: Vec<Option<String>> = ReaderBuilder::new()
            .allow_pickle_data(true)
            .from_slice_serde(&file)
            .unwrap();
        assert_eq!(back, want, "{ty}");
        // Read as Arrow and written again (no option: the '|O' descr says so): the same file.
        let mut r = builder("ascii").from_slice(&file).unwrap();
        let batch = r.next_batch().unwrap().unwrap();
        let mut w = BatchWriterBuilder::new()
            .writer(std::io::Cursor::new(Vec::new()), &batch.schema())
            .unwrap();
        w.write(&batch).unwrap();
        assert_eq!(w.finish().unwrap().into_inner(), file, "{ty}");
    }
}

#[test]
fn an_object_column_beside_others_is_refused_naming_it() {
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(arrow_array::Int32Array::from(vec![1])) as ArrayRef,
        ),
        ("name", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
    ])
    .unwrap();
    let mut w = BatchWriterBuilder::new()
        .strings_as_objects_for("name")
        .writer(std::io::Cursor::new(Vec::new()), &batch.schema())
        .unwrap();
    let e = w.write(&batch).unwrap_err().to_string();
    assert!(e.contains("column \"name\""), "{e}");
    // With the column alone it is written.
    let mut w = BatchWriterBuilder::new()
        .strings_as_objects_for("name")
        .columns(["name"])
        .writer(std::io::Cursor::new(Vec::new()), &batch.schema())
        .unwrap();
    w.write(&batch).unwrap();
    let file = w.finish().unwrap().into_inner();
    let back: Vec<String> = ReaderBuilder::new()
        .allow_pickle_data(true)
        .from_slice_serde(&file)
        .unwrap();
    assert_eq!(back, ["a"]);
}

/// Pythons to load written files with: `NPY_PYTHON` (NumPy 2.x in CI) and `NPY_PYTHON_NP1`
/// (a NumPy 1.x, optional).
fn pythons() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = live_python() {
        out.push(p);
    }
    if let Some(p) = std::env::var_os("NPY_PYTHON_NP1").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    out
}

#[test]
fn written_object_arrays_load_in_numpy_with_equal_values() {
    let pythons = pythons();
    if pythons.is_empty() {
        eprintln!("skipped: NPY_PYTHON is not set");
        return;
    }
    let dir = TempDir::new("objects-numpy");
    let path = dir.join("s.npy");
    let want = sample();
    std::fs::write(
        &path,
        write_objects(&strings_batch(Arc::new(StringArray::from(want.clone())))),
    )
    .unwrap();
    let script = "import sys, json, numpy as np\n\
                  a = np.load(sys.argv[1], allow_pickle=True)\n\
                  assert a.dtype == object and a.shape == (len(a),), (a.dtype, a.shape)\n\
                  print(json.dumps([np.__version__, a.tolist()]))";
    for python in pythons {
        let out = if Some(&python) == live_python().as_ref() {
            run_python(script, &[path.as_os_str()])
        } else {
            let o = std::process::Command::new(&python)
                .arg("-c")
                .arg(script)
                .arg(&path)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stdout).unwrap()
        };
        let got: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(got[1], json!(want), "NumPy {}", got[0]);
    }
}

#[cfg(feature = "datafusion")]
mod sql {
    use super::*;
    use npy_datafusion::{NpyReadOptions, NpySessionExt};
    use npy_serde_tests::sql::{rt, session, sql, sql_err};

    fn allowed() -> NpyReadOptions {
        NpyReadOptions::new()
            .set("allow_pickle_data", "true")
            .unwrap()
    }

    #[test]
    fn object_columns_are_sql_columns_with_the_option() {
        let rt = rt();
        let ctx = session(Default::default());
        let path = dir("np2").join("optional_strings.npy");
        rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), allowed()))
            .unwrap();
        let got = sql(
            &ctx,
            &rt,
            "SELECT value FROM t WHERE value IS NOT NULL ORDER BY value",
        );
        assert_eq!(got, [["a"], ["ccc"]]);
        let got = sql(&ctx, &rt, "SELECT count(*), count(value) FROM t");
        assert_eq!(got, [["3", "2"]]);
        // A record with an object field, projected.
        let path = dir("np1").join("record_object.npy");
        rt.block_on(ctx.register_npy("r", path.to_str().unwrap(), allowed()))
            .unwrap();
        let got = sql(&ctx, &rt, "SELECT a, b, c FROM r ORDER BY a");
        assert_eq!(got[0], ["1", "x", "2.5"]);
        assert_eq!(got[1][1], "NULL");
        // A plain file in a table that allows pickles reads as before.
        let plain = TempDir::new("objects-sql-plain");
        let p = plain.join("p.npy");
        npy_serde::to_path(&p, &[1.5f64, 2.5]).unwrap();
        rt.block_on(ctx.register_npy("p", p.to_str().unwrap(), allowed()))
            .unwrap();
        assert_eq!(sql(&ctx, &rt, "SELECT sum(value) FROM p"), [["4.0"]]);
    }

    /// With the option, a table of plain files reads each header once, as without it: the
    /// header's kind picks the opener (the object opener fetched it, then handed the file to the
    /// row opener, which fetched it again). Counted at the store, over 100 files.
    #[cfg(feature = "remote")]
    #[test]
    fn plain_files_in_a_table_that_allows_objects_fetch_their_headers_once() {
        use datafusion::execution::object_store::ObjectStoreUrl;
        use datafusion::object_store::{memory::InMemory, path::Path as ObjPath};
        use datafusion::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
        use npy_remote::CountingStore;

        let rt = rt();
        let mem = Arc::new(InMemory::new());
        for i in 0..100i64 {
            let bytes = npy_serde::to_vec(&[i, i + 1, i + 2]).unwrap();
            rt.block_on(mem.put(
                &ObjPath::from(format!("p/f{i:03}.npy")),
                PutPayload::from(bytes),
            ))
            .unwrap();
        }
        let counting = Arc::new(CountingStore::new(mem as Arc<dyn ObjectStore>));
        let gets = |options: NpyReadOptions| {
            let ctx = session(Default::default());
            let url = ObjectStoreUrl::parse("memory://").unwrap();
            ctx.register_object_store(url.as_ref(), counting.clone());
            counting.reset();
            rt.block_on(ctx.register_npy("t", "memory:///p/", options))
                .unwrap();
            let got = sql(
                &ctx,
                &rt,
                "SELECT sum(value), count(*) FROM t WHERE value > 0",
            );
            assert_eq!(got, [["15150", "299"]]);
            counting.counts().gets
        };
        let without = gets(NpyReadOptions::new());
        let with = gets(allowed());
        assert!(without >= 100, "{without} GETs");
        assert_eq!(with, without, "GETs with allow_pickle_data vs without");
    }

    #[test]
    fn object_members_of_archives_are_tables_with_the_option() {
        let rt = rt();
        let ctx = session(Default::default());
        for sub in ["np1", "np2"] {
            let path = dir(sub).join("objects.npz");
            let path = path.to_str().unwrap();
            let member = |key: &str| allowed().set("member", key).unwrap();
            let t = format!("s_{sub}");
            rt.block_on(ctx.register_npy(&t, path, member("strings")))
                .unwrap();
            let got = sql(&ctx, &rt, &format!("SELECT value FROM {t} ORDER BY value"));
            assert_eq!(got, [["a"], ["ccc"], ["NULL"]], "{sub}");
            // Without the option: the refusal names it, the member and the archive.
            let e = rt
                .block_on(ctx.register_npy(
                    "n",
                    path,
                    NpyReadOptions::new().set("member", "strings").unwrap(),
                ))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("allow_pickle_data") && e.contains("member strings of file"),
                "{e}"
            );
            // A ragged member is no column: the element and its type are named.
            let e = rt
                .block_on(ctx.register_npy("g", path, member("ragged")))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("member ragged") && e.contains("is a Python"),
                "{e}"
            );
        }
        // NumPy 2's StringDType with na_object=None: its nulls are NULLs.
        let path = dir("np2").join("objects.npz");
        let opts = allowed().set("member", "stringdtype").unwrap();
        rt.block_on(ctx.register_npy("sd", path.to_str().unwrap(), opts))
            .unwrap();
        let want = &expected("np2")["objects.npz/stringdtype"]["values"];
        let nulls = want
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.is_null())
            .count();
        let got = sql(&ctx, &rt, "SELECT count(*) - count(value) FROM sd");
        assert_eq!(got, [[nulls.to_string()]]);
    }

    #[test]
    fn without_the_option_and_for_hostile_pickles_the_error_names_the_file() {
        let rt = rt();
        let ctx = session(Default::default());
        let path = dir("np2").join("strings.npy");
        let e = rt
            .block_on(ctx.register_npy("t", path.to_str().unwrap(), NpyReadOptions::new()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("allow_pickle_data") && e.contains("strings.npy"),
            "{e}"
        );
        for (name, want) in &expected("hostile") {
            let path = dir("hostile").join(name);
            let ctx = session(Default::default());
            let e = match rt.block_on(ctx.register_npy("h", path.to_str().unwrap(), allowed())) {
                Err(e) => e.to_string(),
                Ok(()) => sql_err(&ctx, &rt, "SELECT * FROM h"),
            };
            let part = want["contains"].as_str().unwrap();
            assert!(e.contains(part) && e.contains(name.as_str()), "{name}: {e}");
        }
        // A mixed object array: the element, its type and the file.
        let path = dir("np2").join("mixed.npy");
        let e = rt
            .block_on(ctx.register_npy("m", path.to_str().unwrap(), allowed()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mixed.npy") && e.contains("is a Python"), "{e}");
    }
}

#[cfg(feature = "ballista")]
mod ballista {
    use super::*;
    use npy_datafusion::ballista::{session_config, standalone};
    use npy_datafusion::{NpyReadOptions, NpySessionExt};
    use npy_serde_tests::sql::{rt, split_small_files, sql, sql_err};

    #[test]
    fn the_option_travels_to_the_executors_and_is_off_unless_asked() {
        let rt = rt();
        let config = split_small_files(session_config().with_target_partitions(4));
        let ctx = rt.block_on(standalone(config, 2)).unwrap();
        let path = dir("np2").join("strings.npy");
        let allowed = NpyReadOptions::new()
            .set("allow_pickle_data", "true")
            .unwrap();
        rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), allowed))
            .unwrap();
        let got = sql(
            &ctx,
            &rt,
            "SELECT value FROM t WHERE length(value) < 5 ORDER BY value",
        );
        assert_eq!(got, [[""], ["a"], ["優良"]]);
        let e = rt
            .block_on(ctx.register_npy("n", path.to_str().unwrap(), NpyReadOptions::new()))
            .map(|_| sql_err(&ctx, &rt, "SELECT * FROM n"))
            .unwrap_or_else(|e| e.to_string());
        assert!(e.contains("allow_pickle_data"), "{e}");
        // An archive's object member, read by whichever executor owns the archive.
        let npz = dir("np2").join("objects.npz");
        let member = NpyReadOptions::new()
            .set("allow_pickle_data", "true")
            .and_then(|o| o.set("member", "strings"))
            .unwrap();
        rt.block_on(ctx.register_npy("m", npz.to_str().unwrap(), member))
            .unwrap();
        let got = sql(&ctx, &rt, "SELECT value FROM m ORDER BY value");
        assert_eq!(got, [["a"], ["ccc"], ["NULL"]]);
    }
}
