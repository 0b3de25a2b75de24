//! Object arrays through the data-only pickle reader (`npy_serde::pickle`, behind
//! `ReaderBuilder::allow_pickle_data`): every fixture NumPy 1.26 and 2.4 wrote
//! (`tests/fixtures/make_pickle.py`) reads into the values `np.load(allow_pickle=True)` gives
//! (stored beside them in `expected.json`), through the value door and through serde; every
//! hostile pickle is refused with the error its entry names, nothing called.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use npy_serde::pickle::{
    Encoding, ObjectArray, PickleOptions, PyDate, PyDateTime, PyTime, PyTimeDelta, PyTimeZone,
    PyValue,
};
use npy_serde::{NpzArchive, ReaderBuilder, Value};
use npy_serde_tests::fixtures_dir;
use serde_json::{json, Value as Json};

/// A directory of pickle fixtures (`np1`, `np2`, `pypi`, `hostile`, `written`).
pub(crate) fn dir(sub: &str) -> PathBuf {
    fixtures_dir().join("pickle").join(sub)
}

/// A directory's `expected.json`: what `np.load(allow_pickle=True)` gave for each fixture.
pub(crate) fn expected(sub: &str) -> serde_json::Map<String, Json> {
    let text = std::fs::read_to_string(dir(sub).join("expected.json")).unwrap();
    match serde_json::from_str(&text).unwrap() {
        Json::Object(m) => m,
        other => panic!("expected.json is {other}"),
    }
}

fn float(f: f64) -> Json {
    if f.is_finite() {
        json!(f)
    } else if f.is_nan() {
        json!({"float": "nan"})
    } else if f > 0.0 {
        json!({"float": "inf"})
    } else {
        json!({"float": "-inf"})
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A NumPy element as `make_pickle.py`'s `tojson` writes it (`.item()`, datetimes as ints).
fn scalar_json(v: &Value) -> Json {
    match v {
        Value::Bool(b) => json!(b),
        Value::Int(i) | Value::DateTime(i) | Value::TimeDelta(i) => json!(i),
        Value::UInt(u) if *u > i64::MAX as u64 => json!({"bigint": u.to_string()}),
        Value::UInt(u) => json!(u),
        Value::Float(f) => float(*f),
        Value::Complex(re, im) => json!({"complex": [float(*re), float(*im)]}),
        Value::Bytes(b) | Value::Void(b) => json!({"bytes": hex(b)}),
        Value::String(s) => json!(s),
        Value::List(v) => Json::Array(v.iter().map(scalar_json).collect()),
        Value::Record(f) => {
            json!({"record": f.iter().map(|(n, v)| json!([n, scalar_json(v)])).collect::<Vec<_>>()})
        }
    }
}

/// A pickled value as `make_pickle.py`'s `tojson` writes it.
fn to_json(v: &PyValue) -> Json {
    let all = |v: &[PyValue]| Json::Array(v.iter().map(to_json).collect());
    match v {
        PyValue::None => Json::Null,
        PyValue::Bool(b) => json!(b),
        PyValue::Int(i) => json!(i),
        PyValue::BigInt(s) => json!({"bigint": s}),
        PyValue::Float(f) => float(*f),
        PyValue::Complex(re, im) => json!({"complex": [float(*re), float(*im)]}),
        PyValue::Str(s) => json!(s),
        PyValue::Bytes(b) => json!({"bytes": hex(b)}),
        PyValue::List(v) => all(v),
        PyValue::Tuple(v) => json!({"tuple": all(v)}),
        PyValue::Set(v) => json!({"set": all(v)}),
        PyValue::Dict(p) => {
            json!({"dict": p.iter().map(|(k, v)| json!([to_json(k), to_json(v)])).collect::<Vec<_>>()})
        }
        PyValue::Scalar(x) | PyValue::NumpyScalar { value: x, .. } => scalar_json(x),
        PyValue::Record(f) => {
            json!({"record": f.iter().map(|(n, v)| json!([n, to_json(v)])).collect::<Vec<_>>()})
        }
        PyValue::Array(a) => json!({"array": {"shape": a.shape, "values": all(&a.values)}}),
        PyValue::Global { module, name } => json!({"global": [module, name]}),
        PyValue::DateTime(d) => {
            let t = &d.time;
            json!({"datetime": [d.date.year, d.date.month, d.date.day, t.hour, t.minute,
                t.second, t.microsecond, u8::from(t.fold), t.tzinfo.as_ref().map(timezone_json)]})
        }
        PyValue::Date(d) => json!({"date": [d.year, d.month, d.day]}),
        PyValue::Time(t) => json!({"time": [t.hour, t.minute, t.second, t.microsecond,
            u8::from(t.fold), t.tzinfo.as_ref().map(timezone_json)]}),
        PyValue::TimeDelta(d) => timedelta_json(d),
        PyValue::TimeZone(tz) => timezone_json(tz),
        PyValue::Decimal(s) => json!({"decimal": s}),
    }
}

fn timedelta_json(d: &PyTimeDelta) -> Json {
    json!({"timedelta": [d.days, d.seconds, d.microseconds]})
}

fn timezone_json(tz: &PyTimeZone) -> Json {
    json!({"timezone": [timedelta_json(&tz.offset), tz.name]})
}

fn options(encoding: &str) -> ReaderBuilder {
    let e = match encoding {
        "ascii" => Encoding::Ascii,
        "latin1" => Encoding::Latin1,
        "bytes" => Encoding::Bytes,
        other => panic!("encoding {other}"),
    };
    ReaderBuilder::new()
        .allow_pickle_data(true)
        .pickle_options(PickleOptions::default().encoding(e))
}

/// The bytes of a fixture: a file, or `archive.npz/member` (the member `member.npy`).
fn fixture_bytes(sub: &str, name: &str) -> Vec<u8> {
    match name.split_once(".npz/") {
        Some((archive, member)) => {
            let mut a = NpzArchive::open(dir(sub).join(format!("{archive}.npz"))).unwrap();
            let mut m = a.by_name(&format!("{member}.npy")).unwrap();
            let mut buf = Vec::new();
            m.read_to_end(&mut buf).unwrap();
            buf
        }
        None => std::fs::read(dir(sub).join(name)).unwrap(),
    }
}

/// A fixture's object array with `rb`: a file's from its bytes, `archive.npz/member` through
/// the archive's own door (`NpzArchive::read_objects`), which must agree with the bytes'.
fn read_fixture(sub: &str, name: &str, rb: &ReaderBuilder) -> npy_serde::Result<ObjectArray> {
    let from_bytes = rb.read_objects_slice(&fixture_bytes(sub, name));
    let Some((archive, member)) = name.split_once(".npz/") else {
        return from_bytes;
    };
    let path = dir(sub).join(format!("{archive}.npz"));
    let mut a = NpzArchive::builder()
        .reader_options(rb.clone())
        .open(path)?;
    let got = a.read_objects(member)?;
    assert_eq!(Some(&got), from_bytes.as_ref().ok(), "{sub}/{name}");
    Ok(got)
}

/// Every fixture of `sub/expected.json` (at least `min` of them) read as NumPy reads it.
fn check_numpy_fixtures(sub: &str, min: usize) {
    let exp = expected(sub);
    assert!(exp.len() >= min, "{sub}: {} fixtures", exp.len());
    let mut failures = Vec::new();
    for (name, e) in &exp {
        let rb = options(e["encoding"].as_str().unwrap());
        let read = read_fixture(sub, name, &rb);
        let got: ObjectArray = match read {
            Ok(a) => a,
            Err(err) => {
                failures.push(format!("{sub}/{name}: {err}"));
                continue;
            }
        };
        let shape: Vec<u64> = serde_json::from_value(e["shape"].clone()).unwrap();
        let values = Json::Array(got.values.iter().map(to_json).collect());
        if got.shape != shape || values != e["values"] {
            failures.push(format!(
                "{sub}/{name}: shape {:?} values {values}\n  expected shape {shape:?} values {}",
                got.shape, e["values"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn numpy_2_object_arrays_read_as_np_load_reads_them() {
    check_numpy_fixtures("np2", 30);
}

#[test]
fn numpy_1_object_arrays_read_as_np_load_reads_them() {
    check_numpy_fixtures("np1", 30);
}

/// Object arrays that packages on PyPI ship as test data (`make_pypi_objects.py` copies them):
/// statsmodels' dicts of `numpy.recarray` values (read as the plain record arrays they hold),
/// obspy's 0-d `None`, and NumPy's own files written by Python 2 and by NumPy before 1.0
/// (`numpy.core._internal._reconstruct`), which hold the class `range` (Python 2's `xrange`,
/// renamed as Python's unpickler renames it): named as a value, refused by a typed read.
#[test]
fn object_arrays_from_pypi_packages_read_as_np_load_reads_them() {
    check_numpy_fixtures("pypi", 9);
    for (name, encoding) in [
        ("numpy-py2-np0-objarr.npy", "latin1"),
        ("numpy-py2-objarr.npz/x", "latin1"),
        ("numpy-py3-objarr.npy", "ascii"),
    ] {
        let bytes = fixture_bytes("pypi", name);
        let err = options(encoding)
            .deserialize_slice::<Vec<Json>>(&bytes)
            .unwrap_err();
        assert!(err.to_string().contains("builtins.range"), "{name}: {err}");
    }
}

/// datetime and decimal values (`make_pickle.py`'s `stdlib` array) read at every protocol
/// as CPython pickled them: the values exactly, the fold bit from protocol 4 on (NumPy 2's
/// np.save; protocols 0-3 do not write it), Python 2 states as Latin-1 text or bytes.
#[test]
fn numpy_scalars_in_object_arrays_keep_their_dtype() {
    // make_pickle.py's `scalars`: np.float32, np.int64, np.uint8, np.bool_, np.complex128,
    // np.str_, np.bytes_ and np.datetime64 in an object array; `dtype.str` of each.
    let want = ["<f4", "<i8", "|u1", "|b1", "<c16", "<U1", "|S1", "<M8[D]"];
    for sub in ["np1", "np2"] {
        let a = read_fixture(sub, "scalars.npy", &options("ascii")).unwrap();
        let got: Vec<&str> = a
            .values
            .iter()
            .map(|v| match v {
                PyValue::NumpyScalar { descr, .. } => descr.trim_matches('\''),
                other => panic!("{sub}: {other:?} is not a NumPy scalar"),
            })
            .collect();
        assert_eq!(got, want, "{sub}");
        assert_eq!(a.values[0].scalar(), Some(&Value::Float(1.5)));
        assert_eq!(a.values[7].scalar(), Some(&Value::DateTime(18263)));
    }
}

#[test]
fn datetimes_and_decimals_read_exactly_at_every_protocol() {
    let dt = |y, mo, d, h, mi, s, us| PyDateTime {
        date: PyDate::new(y, mo, d).unwrap(),
        time: PyTime::new(h, mi, s, us).unwrap(),
    };
    let est = PyTimeZone::new(
        PyTimeDelta::new(0, -5 * 3600, 0).unwrap(),
        Some("EST".into()),
    )
    .unwrap();
    for (name, fold, encoding) in [
        ("stdlib.npy", true, Encoding::Ascii),
        ("stdlib_protocol0.npy", false, Encoding::Ascii),
        ("stdlib_protocol2.npy", false, Encoding::Ascii),
        ("stdlib_protocol3.npy", false, Encoding::Ascii),
        ("stdlib_protocol5.npy", true, Encoding::Ascii),
        ("python2_datetimes.npy", false, Encoding::Latin1),
        ("python2_datetimes.npy", false, Encoding::Bytes),
    ] {
        let rb = ReaderBuilder::new()
            .allow_pickle_data(true)
            .pickle_options(PickleOptions::default().encoding(encoding));
        let a = rb.read_objects_slice(&fixture_bytes("np2", name)).unwrap();
        let v = &a.values;
        assert_eq!(
            v[0],
            PyValue::DateTime(dt(2020, 1, 2, 3, 4, 5, 0)),
            "{name}"
        );
        assert_eq!(
            v[2],
            PyValue::DateTime(dt(9999, 12, 31, 23, 59, 59, 999_999))
        );
        let mut utc = dt(2020, 1, 2, 3, 4, 5, 6);
        utc.time.tzinfo = Some(PyTimeZone::utc());
        assert_eq!(v[3], PyValue::DateTime(utc));
        let mut folded = dt(2021, 11, 7, 1, 30, 0, 0);
        folded.time.fold = fold;
        folded.time.tzinfo = Some(est.clone());
        assert_eq!(v[4], PyValue::DateTime(folded), "{name}");
        assert_eq!(v[6], PyValue::Date(PyDate::new(2020, 2, 29).unwrap()));
        let PyValue::Time(t) = &v[11] else {
            panic!("{name}: {:?}", v[11])
        };
        assert_eq!(t.isoformat(), "01:02:03.000004+05:30");
        if name.starts_with("python2") {
            assert_eq!(v.len(), 13);
            continue;
        }
        assert_eq!(
            v[14],
            PyValue::TimeDelta(PyTimeDelta {
                days: -1,
                seconds: 5,
                microseconds: 7
            })
        );
        assert_eq!(v[18], PyValue::TimeZone(PyTimeZone::utc()));
        assert_eq!(v[19], PyValue::TimeZone(est.clone()));
        assert_eq!(v[22], PyValue::Decimal("1.10".into()));
        assert_eq!(v[28], PyValue::Decimal("-sNaN12".into()));
        assert_eq!(
            v[29],
            PyValue::Decimal("123456789012345678901234567890.123456789".into())
        );
    }
    // A typed read of them: their text (isoformat, str(Decimal)), a timedelta's seconds.
    let got: Vec<Json> = options("ascii")
        .deserialize_slice(&fixture_bytes("np2", "stdlib.npy"))
        .unwrap();
    assert_eq!(got[5], json!("2024-02-29T12:00:00-02:59:52.999999"));
    assert_eq!(got[14], json!(-86394.999993));
    assert_eq!(got[20], json!("UTC-02:59:52.999999"));
    assert_eq!(got[22], json!("1.10"));
}

#[test]
fn object_arrays_are_refused_unless_allowed_and_the_error_names_the_option() {
    let p = dir("np2").join("strings.npy");
    let e = npy_serde::deserialize_path::<_, Vec<String>>(&p).unwrap_err();
    assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    let e = ReaderBuilder::new().read_objects_path(&p).unwrap_err();
    assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    let e = npy_serde::from_slice_serde::<String>(&std::fs::read(&p).unwrap()).unwrap_err();
    assert!(e.to_string().contains("allow_pickle_data"), "{e}");
}

#[test]
fn object_arrays_read_through_serde() {
    let rb = ReaderBuilder::new().allow_pickle_data(true);
    let strings: Vec<String> = rb.deserialize_path(dir("np2").join("strings.npy")).unwrap();
    assert_eq!(strings[..3], ["a", "優良", ""]);
    let opt: Vec<Option<String>> = rb
        .from_path_serde(dir("np1").join("optional_strings.npy"))
        .unwrap();
    assert_eq!(opt, [Some("a".into()), None, Some("ccc".into())]);
    let bytes = std::fs::read(dir("np2").join("stringdtype_na_none.npy")).unwrap();
    let opt: Vec<Option<String>> = rb.from_slice_serde(&bytes).unwrap();
    assert_eq!(opt, [Some("a".into()), None, Some("c".into())]);
    let opt: Vec<Option<String>> = rb
        .deserialize_path(dir("np2").join("stringdtype_na_nan.npy"))
        .unwrap();
    assert_eq!(opt, [Some("a".into()), None, Some("c".into())]);
    let two_d: Vec<Vec<String>> = rb.deserialize_path(dir("np2").join("two_d.npy")).unwrap();
    assert_eq!(two_d, [["a", "b"], ["c", "d"]]);
    let fortran: Vec<Vec<Json>> = rb.deserialize_path(dir("np2").join("fortran.npy")).unwrap();
    assert_eq!(fortran[1], [json!("d"), Json::Null, json!(6)]);
    let mixed: Vec<Json> = rb.from_path_serde(dir("np2").join("mixed.npy")).unwrap();
    assert_eq!(mixed[9], json!({"k": [1.0, null], "n": 2}));
    let ragged: Vec<Vec<f64>> = rb
        .from_path_serde(dir("np2").join("ragged.npy"))
        .map(|v: Vec<Json>| {
            v.into_iter()
                .take(2)
                .map(|j| serde_json::from_value(j).unwrap())
                .collect()
        })
        .unwrap();
    assert_eq!(ragged, [vec![0.0, 1.0, 2.0], vec![1.0, 2.0]]);
    let none: Option<String> = rb
        .deserialize_path(dir("np2").join("zero_d_none.npy"))
        .unwrap();
    assert_eq!(none, None);
    // A type mismatch names the record.
    let e = rb
        .from_path_serde::<_, String>(dir("np2").join("optional_strings.npy"))
        .unwrap_err();
    assert_eq!(e.position().record, Some(1), "{e}");
}

#[test]
fn object_arrays_read_through_the_stream_mmap_and_archive_doors() {
    let rb = ReaderBuilder::new().allow_pickle_data(true);
    let named = |e: npy_serde::Error| assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    for sub in ["np1", "np2"] {
        let p = dir(sub).join("strings.npy");
        let bytes = std::fs::read(&p).unwrap();
        let want: Vec<String> = rb.from_slice_serde(&bytes).unwrap();
        assert_eq!(want[..3], ["a", "優良", ""]);
        // Any `Read`: the header read from the stream, then the pickle read whole.
        let v: Vec<String> = rb
            .from_reader_serde(std::fs::File::open(&p).unwrap())
            .unwrap();
        assert_eq!(v, want, "{sub}");
        let v: Vec<String> = rb.deserialize_reader(&bytes[..]).unwrap();
        assert_eq!(v, want, "{sub}");
        named(
            ReaderBuilder::new()
                .from_reader_serde::<_, String>(&bytes[..])
                .unwrap_err(),
        );
        named(
            ReaderBuilder::new()
                .deserialize_reader::<_, Vec<String>>(&bytes[..])
                .unwrap_err(),
        );
        // A truncated stream: an error, not a panic.
        assert!(rb
            .from_reader_serde::<_, String>(&bytes[..bytes.len() - 3])
            .is_err());
        // Memory-mapped: refused with the reason (no element lies in place); without the
        // option the refusal still names it.
        let e = npy_serde::MmapArray::open_with(&p, &rb).unwrap_err();
        assert!(e.to_string().contains("cannot be memory-mapped"), "{e}");
        named(npy_serde::MmapArray::open(&p).unwrap_err());
        // Streamed element by element: refused the same way, naming the doors that read it.
        let streamed = |e: npy_serde::Error| {
            let e = e.to_string();
            assert!(
                e.contains("cannot be streamed") && e.contains("read_objects"),
                "{e}"
            );
        };
        streamed(rb.records_serde::<_, String>(&bytes[..]).unwrap_err());
        named(
            ReaderBuilder::new()
                .records_serde::<_, String>(&bytes[..])
                .unwrap_err(),
        );
        // `.npz` members by name: NumPy's np.savez of object arrays.
        let npz = dir(sub).join("objects.npz");
        let opts = npy_serde::NpzReaderBuilder::new().reader_options(rb.clone());
        let mut a = opts.open(&npz).unwrap();
        let exp = expected(sub);
        let v: Vec<Option<String>> = a.deserialize("strings").unwrap();
        let want: Vec<Option<String>> =
            serde_json::from_value(exp["objects.npz/strings"]["values"].clone()).unwrap();
        assert_eq!(v, want, "{sub}");
        let ragged: Vec<Json> = a.deserialize("ragged").unwrap();
        assert_eq!(
            ragged,
            [json!([0.0, 1.0, 2.0]), json!([1, 2]), json!(["ab", "c"])]
        );
        streamed(a.records_serde::<String>("strings").unwrap_err());
        let e = npy_serde::npz::MmapNpz::open_with(&npz, &opts)
            .unwrap()
            .array("strings")
            .unwrap_err();
        assert!(e.to_string().contains("NpzArchive::deserialize"), "{e}");
        named(
            NpzArchive::open(&npz)
                .unwrap()
                .deserialize::<Vec<Option<String>>>("strings")
                .unwrap_err(),
        );
    }
}

#[test]
fn python2_pickles_follow_the_encoding_choice() {
    let p = dir("np2").join("python2_strings.npy");
    let e = ReaderBuilder::new()
        .allow_pickle_data(true)
        .read_objects_path(&p)
        .unwrap_err();
    assert!(e.to_string().contains("encoding latin1"), "{e}");
    let a = options("bytes").read_objects_path(&p).unwrap();
    assert_eq!(a.values[1], PyValue::Bytes(b"caf\xe9".to_vec()));
}

#[test]
fn hostile_pickles_are_refused_in_bounded_time() {
    let exp = expected("hostile");
    assert!(exp.len() >= 14);
    for (name, e) in &exp {
        let bytes = std::fs::read(dir("hostile").join(name)).unwrap();
        let start = Instant::now();
        let err = ReaderBuilder::new()
            .allow_pickle_data(true)
            .read_objects_slice(&bytes)
            .expect_err(name);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            start.elapsed()
        );
        assert_eq!(
            err.kind().code(),
            e["code"].as_str().unwrap(),
            "{name}: {err}"
        );
        let part = e["contains"].as_str().unwrap();
        assert!(
            err.to_string().contains(part),
            "{name}: {err} (expected {part:?})"
        );
        // The typed doors refuse them the same way.
        let typed = ReaderBuilder::new()
            .allow_pickle_data(true)
            .from_slice_serde::<Json>(&bytes)
            .expect_err(name);
        assert_eq!(typed.kind().code(), err.kind().code(), "{name}: {typed}");
    }
}

/// Strings the writer writes: ASCII, non-BMP, long (past the short opcode), empty, and None.
fn strings_to_write() -> Vec<Option<String>> {
    let mut v: Vec<Option<String>> = vec![
        Some("a".into()),
        None,
        Some("優良 🎉".into()),
        Some(String::new()),
        Some("x".repeat(70_000)),
    ];
    v.extend((0..1000).map(|i| (i % 7 != 0).then(|| format!("s{i}"))));
    v
}

#[test]
fn written_string_arrays_read_back_here_and_in_numpy() {
    let values = strings_to_write();
    let file = npy_serde::pickle::strings_to_vec(values.iter().map(|s| s.as_deref()));
    let rb = ReaderBuilder::new().allow_pickle_data(true);
    let back: Vec<Option<String>> = rb.from_slice_serde(&file).unwrap();
    assert_eq!(back, values);
    let empty = npy_serde::pickle::strings_to_vec(std::iter::empty());
    assert!(rb.read_objects_slice(&empty).unwrap().values.is_empty());
    if npy_serde_tests::live_python().is_none() {
        return;
    }
    let path = std::env::temp_dir().join(format!("npy-pickle-write-{}.npy", std::process::id()));
    npy_serde::pickle::strings_to_path(&path, values.iter().map(|s| s.as_deref())).unwrap();
    let out = npy_serde_tests::run_python(
        "import sys, json, numpy as np, warnings\n\
         warnings.simplefilter('error')\n\
         a = np.load(sys.argv[1], allow_pickle=True)\n\
         assert a.dtype == object and a.ndim == 1, a.dtype\n\
         print(json.dumps(a.tolist()))",
        &[path.as_os_str()],
    );
    std::fs::remove_file(&path).ok();
    let numpy: Vec<Option<String>> = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(numpy, values);
}

#[test]
fn written_stringdtype_arrays_read_back_here_and_in_numpy_2() {
    use npy_serde::pickle::{strings_to_path_stringdtype, strings_to_vec_stringdtype};
    let rb = ReaderBuilder::new().allow_pickle_data(true);
    // The bytes are those of the committed fixtures (NumPy 2 loads them: the live part below),
    // and they read back as NumPy's own StringDType files read.
    let with_na = [Some("a"), None, Some("c")];
    let file = strings_to_vec_stringdtype(with_na.iter().copied(), true).unwrap();
    assert_eq!(
        file,
        std::fs::read(dir("written").join("stringdtype_na_none.npy")).unwrap()
    );
    let back: Vec<Option<String>> = rb.from_slice_serde(&file).unwrap();
    let numpy_made: Vec<Option<String>> = rb
        .from_path_serde(dir("np2").join("stringdtype_na_none.npy"))
        .unwrap();
    assert_eq!(back, numpy_made);
    let plain = ["a", "bb", "", &"é".repeat(40)];
    let file = strings_to_vec_stringdtype(plain.iter().map(|s| Some(*s)), false).unwrap();
    assert_eq!(
        file,
        std::fs::read(dir("written").join("stringdtype.npy")).unwrap()
    );
    let back: Vec<String> = rb.from_slice_serde(&file).unwrap();
    let numpy_made: Vec<String> = rb
        .from_path_serde(dir("np2").join("stringdtype.npy"))
        .unwrap();
    assert_eq!(back, numpy_made);
    let a = rb.read_objects_slice(&file).unwrap();
    assert_eq!(
        a.descr,
        rb.read_objects_path(dir("np2").join("stringdtype.npy"))
            .unwrap()
            .descr
    );
    // None without na_object: refused, naming the element.
    let e = strings_to_vec_stringdtype(with_na.iter().copied(), false).unwrap_err();
    assert_eq!(e.position().record, Some(1), "{e}");
    assert!(e.to_string().contains("na_object"), "{e}");
    if npy_serde_tests::live_python().is_none() {
        return;
    }
    let values = strings_to_write();
    for na in [true, false] {
        let vals: Vec<Option<&str>> = values
            .iter()
            .map(|s| s.as_deref())
            .filter(|s| na || s.is_some())
            .collect();
        let path =
            std::env::temp_dir().join(format!("npy-pickle-T-{na}-{}.npy", std::process::id()));
        strings_to_path_stringdtype(&path, vals.iter().copied(), na).unwrap();
        let out = npy_serde_tests::run_python(
            "import sys, json, numpy as np, warnings\n\
             warnings.simplefilter('error')\n\
             a = np.load(sys.argv[1], allow_pickle=True)\n\
             na = sys.argv[2] == 'true'\n\
             want = np.dtypes.StringDType(na_object=None) if na else np.dtypes.StringDType()\n\
             assert a.dtype == want, a.dtype\n\
             assert a.ndim == 1\n\
             print(json.dumps([None if na and x is None else str(x) for x in a.tolist()]))",
            &[path.as_os_str(), std::ffi::OsStr::new(&na.to_string())],
        );
        std::fs::remove_file(&path).ok();
        let numpy: Vec<Option<String>> = serde_json::from_str(out.trim()).unwrap();
        let want: Vec<Option<String>> = vals.iter().map(|s| s.map(String::from)).collect();
        assert_eq!(numpy, want, "na_object {na}");
    }
}
