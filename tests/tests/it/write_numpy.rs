//! The writer against NumPy.
//!
//! Offline: every fixture in `tests/fixtures/manifest.json` is rebuilt from its descr, shape,
//! order and values (the manifest's JSON convention) with `WriterBuilder::write_array`, and the
//! bytes must equal the file NumPy wrote (whole file for `np.save` fixtures, the data for the
//! hand-made "custom" ones, whose headers are deliberately unusual).
//!
//! Live (`NPY_PYTHON`): files written here with several dtypes, orders and writers are loaded by
//! `np.load`, which must see the same dtype, shape and values, and `np.save` of what NumPy loaded
//! must give back exactly our bytes.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use npy_serde::header::{parse_header, Limits};
use npy_serde::{
    Array, ByteOrder, DType, NpyWriter, PlainType, Scalar, Value, Version, WriterBuilder,
};
use npy_serde_tests::{
    entries, entry, entry_path, entry_shape, fixtures_dir, json_datetime, json_float, latin1,
    live_python, run_python, unhex, TempDir, W2,
};
use serde::Serialize;
use serde_json::{json, Value as Json};

// ---------------------------------------------------------------------------------------------
// The manifest's JSON convention, turned into `Value`s of a dtype.

fn float(j: &Json) -> f64 {
    json_float(j).unwrap_or_else(|| panic!("not a float: {j}"))
}

/// One element of `dt` (a subarray dtype takes nested lists).
fn element(dt: &DType, j: &Json) -> Value {
    match dt {
        DType::Record(r) => Value::Record(
            r.fields()
                .iter()
                .map(|f| (f.name.clone(), element(&f.dtype, &j[f.name.as_str()])))
                .collect(),
        ),
        DType::Array(base, shape) => nested(base, shape, j),
        DType::Plain(p) => plain(*p, j),
    }
}

fn nested(base: &DType, shape: &[u64], j: &Json) -> Value {
    if shape.is_empty() {
        return element(base, j);
    }
    let items = j.as_array().expect("a list for a subarray axis");
    assert_eq!(items.len() as u64, shape[0]);
    Value::List(items.iter().map(|i| nested(base, &shape[1..], i)).collect())
}

fn plain(p: PlainType, j: &Json) -> Value {
    match p.scalar() {
        Scalar::Bool => Value::Bool(j.as_bool().unwrap()),
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => Value::Int(j.as_i64().unwrap()),
        Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => Value::UInt(j.as_u64().unwrap()),
        Scalar::F16 | Scalar::F32 | Scalar::F64 | Scalar::LongDouble => Value::Float(float(j)),
        Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
            Value::Complex(float(&j[0]), float(&j[1]))
        }
        Scalar::Bytes(_) => Value::Bytes(latin1(j.as_str().unwrap()).expect("latin-1")),
        Scalar::Unicode(_) => Value::String(j.as_str().unwrap().to_string()),
        Scalar::Void(_) => Value::Void(unhex(j.as_str().unwrap())),
        Scalar::DateTime(..) | Scalar::TimeDelta(..) => {
            let v = json_datetime(j).unwrap_or_else(|| panic!("not a datetime: {j}"));
            if matches!(p.scalar(), Scalar::DateTime(..)) {
                Value::DateTime(v)
            } else {
                Value::TimeDelta(v)
            }
        }
    }
}

/// The array's elements in C order from `tolist()` nesting.
fn flatten(dt: &DType, shape: &[u64], j: &Json, out: &mut Vec<Value>) {
    if shape.is_empty() {
        out.push(element(dt, j));
        return;
    }
    let items = j.as_array().expect("a list for an array axis");
    assert_eq!(items.len() as u64, shape[0], "axis length");
    for i in items {
        flatten(dt, &shape[1..], i, out);
    }
}

fn array_of(entry: &Json) -> Array {
    let dtype = DType::from_descr(entry["descr_repr"].as_str().unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", entry["name"]));
    let shape = entry_shape(entry);
    let mut values = Vec::new();
    flatten(&dtype, &shape, &entry["values"], &mut values);
    Array {
        dtype,
        shape,
        fortran_order: entry["fortran_order"].as_bool().unwrap(),
        values,
    }
}

/// The byte order of a plain long double or complex long double dtype.
fn longdouble(dt: &DType) -> Option<ByteOrder> {
    match dt {
        DType::Plain(p) if matches!(p.scalar(), Scalar::LongDouble | Scalar::ComplexLongDouble) => {
            Some(p.order())
        }
        _ => None,
    }
}

fn limits() -> Limits {
    Limits {
        max_header_size: 1 << 20,
        ..Limits::default()
    }
}

#[test]
fn fixtures_rebuilt_byte_for_byte() {
    let mut whole = 0;
    let mut data_only = 0;
    for entry in entries("npy") {
        let name = entry["name"].as_str().unwrap();
        if entry["bool_bytes_invalid"].as_bool() == Some(true) {
            continue; // bytes other than 0/1 cannot come from a bool
        }
        let file = std::fs::read(entry_path(entry)).unwrap();
        let array = array_of(entry);
        let mut ours = Vec::new();
        WriterBuilder::new()
            .write_array(&mut ours, &array)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Some(order) = longdouble(&array.dtype) {
            // The manifest holds long doubles as f64: compare the slots whose value is an f64.
            let off = parse_header(&file, &limits()).unwrap().data_offset as usize;
            assert_eq!(ours.len(), file.len(), "{name}");
            assert_eq!(ours[..off], file[..off], "{name}: header");
            let mut exact = 0;
            for (m, t) in ours[off..].chunks(16).zip(file[off..].chunks(16)) {
                let mut t16: [u8; 16] = t.try_into().unwrap();
                if order == ByteOrder::Big {
                    t16.reverse();
                }
                // The low 11 of the 64 mantissa bits clear: the value is an f64 (or inf/NaN).
                if t16[0] == 0 && t16[1] & 0x07 == 0 {
                    assert_eq!(m, t, "{name}: a long double slot differs");
                    exact += 1;
                }
            }
            assert!(exact >= 4, "{name}: only {exact} slots compared");
            whole += 1;
        } else if entry["written_by"] == "np.save" {
            assert!(
                ours == file,
                "{name}: our bytes differ from np.save's\n ours: {:?}\nnumpy: {:?}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&file)
            );
            whole += 1;
        } else {
            let theirs = parse_header(&file, &limits()).unwrap();
            let mine = parse_header(&ours, &limits()).unwrap();
            let len = theirs.header.data_len().unwrap() as usize;
            let t = &file[theirs.data_offset as usize..][..len];
            let m = &ours[mine.data_offset as usize..];
            assert_eq!(m, t, "{name}: data differs");
            data_only += 1;
        }
    }
    assert!(whole >= 80, "only {whole} np.save fixtures compared");
    assert!(data_only >= 10, "only {data_only} custom fixtures compared");
}

/// The same fixtures through the typed path: a `Vec` of Rust values and an explicit dtype.
#[test]
fn typed_values_match_fixtures() {
    fn check<T: Serialize>(name: &str, values: &T) {
        let entry = entry("npy", name);
        let file = std::fs::read(entry_path(entry)).unwrap();
        let dtype = DType::from_descr(entry["descr_repr"].as_str().unwrap()).unwrap();
        let mut ours = Vec::new();
        WriterBuilder::new()
            .dtype(dtype)
            .fortran_order(entry["fortran_order"].as_bool().unwrap())
            .serialize(&mut ours, values)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ours, file, "{name}");
    }
    check("i2_be_1d", &[-32768i32, 32767, 0, -2]);
    check("u8_le_1d", &[0u64, u64::MAX, 1 << 63]);
    check(
        "f8_be_2x3",
        &vec![vec![-2.5, -1.5, -0.5], vec![0.5, 1.5, 2.5]],
    );
    check("f8_le_2x3_fortran", &[[0.0, 1.5, 3.0], [4.5, 6.0, 7.5]]);
    check("i2_be_3x2_fortran", &[[1, -2], [3, -4], [5, -6]]);
    check("U3_le_2x2_fortran", &[["a", "bc"], ["déf", "😀"]]);
    check("f8_le_0d", &3.5);
    check("c16_be_0d", &(-1.5, 0.25));
    let s5: [&[u8]; 6] = [b"ab", b"a\0b", b"hello", b"", b"\xff", b"x"];
    check("S5_1d", &s5.map(Bytes));
    check("i2_be_empty_2x0", &vec![Vec::<i16>::new(); 2]);
    check(
        "f2_le_1d",
        &[
            0.0,
            -0.0,
            1.5,
            -65504.0,
            5.960464477539063e-08,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ],
    );
    check(
        "f8_be_1d",
        &[
            0.0,
            -0.0,
            f64::MAX,
            5e-324,
            0.1,
            -2.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ],
    );
    let recs: Vec<W2> = entry("npy", "rec_w2_be")["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| W2 {
            id: r["id"].as_i64().unwrap(),
            x: float(&r["x"]),
            y: float(&r["y"]) as f32,
            flag: r["flag"].as_u64().unwrap() as u8,
            v: [0, 1, 2].map(|i| float(&r["v"][i]) as f32),
        })
        .collect();
    check("rec_w2_be", &recs);
}

/// Serde bytes (what `serde_bytes` does), to write `S` fields from raw bytes.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Live NumPy.

fn rec(i: i64) -> W2 {
    W2 {
        id: i * 1_000_000_007,
        x: i as f64 * 0.25 - 3.0,
        y: -(i as f32) * 1.5,
        flag: (i % 3) as u8,
        v: [i as f32, 0.5, -0.0],
    }
}

fn rec_json(i: i64) -> Json {
    let r = rec(i);
    json!({"id": r.id, "x": r.x, "y": r.y as f64, "flag": r.flag, "v": r.v.map(f64::from)})
}

/// For each path: loads it, prints a JSON line (dtype descr and str, shape, Fortran flag,
/// values) and saves what it loaded to `path + ".resaved.npy"`.
const LOAD_AND_RESAVE: &str = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from make_fixtures import jarr, jdescr
for p in sys.argv[2:]:
    a = np.load(p)
    fortran = bool(a.flags.f_contiguous and not a.flags.c_contiguous)
    print(json.dumps({"descr": jdescr(a.dtype.descr), "str": a.dtype.str,
                      "shape": list(a.shape), "fortran": fortran, "values": jarr(a)}))
    np.save(p + ".resaved.npy", a)
"#;

struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    dtype_str: &'static str,
    shape: Vec<u64>,
    fortran: bool,
    values: Json,
    /// False where np.save legitimately writes other bytes (a forced header version).
    resave_identical: bool,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |name, bytes, dtype_str, shape: &[u64], fortran, values| {
        out.push(Case {
            name,
            bytes,
            dtype_str,
            shape: shape.to_vec(),
            fortran,
            values,
            resave_identical: name != "counted_v2",
        })
    };
    // Derived records, both byte orders.
    let recs: Vec<W2> = (0..7).map(rec).collect();
    let want: Json = (0..7).map(rec_json).collect();
    add(
        "rec_le",
        npy_serde::to_vec(&recs).unwrap(),
        "|V33",
        &[7],
        false,
        want.clone(),
    );
    add(
        "rec_be",
        WriterBuilder::new()
            .byte_order(ByteOrder::Big)
            .to_vec(&recs)
            .unwrap(),
        "|V33",
        &[7],
        false,
        want.clone(),
    );
    // Records as a 2-D array in Fortran order (transposed on writing).
    let recs6: Vec<W2> = (0..6).map(rec).collect();
    add(
        "rec_2x3_fortran",
        WriterBuilder::new()
            .shape([2, 3])
            .fortran_order(true)
            .to_vec(&recs6)
            .unwrap(),
        "|V33",
        &[2, 3],
        true,
        json!([
            [rec_json(0), rec_json(1), rec_json(2)],
            [rec_json(3), rec_json(4), rec_json(5)]
        ]),
    );
    // Scalars.
    add(
        "f2",
        npy_serde::to_vec(&[half::f16::from_f32(0.1), half::f16::NEG_INFINITY]).unwrap(),
        "<f2",
        &[2],
        false,
        json!([half::f16::from_f32(0.1).to_f64(), "-inf"]),
    );
    let ld = DType::with_order(Scalar::LongDouble, ByteOrder::Big);
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype(ld)
        .serialize(&mut b, &[1.0 / 3.0, 5e-324, -1e308, f64::NAN])
        .unwrap();
    add(
        "f16_be",
        b,
        ">f16",
        &[4],
        false,
        json!([1.0 / 3.0, 5e-324, -1e308, "nan"]),
    );
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype("<c32".parse().unwrap())
        .serialize(&mut b, &[(1.5, -0.1), (f64::INFINITY, 0.0)])
        .unwrap();
    add(
        "c32",
        b,
        "<c32",
        &[2],
        false,
        json!([[1.5, -0.1], ["inf", 0.0]]),
    );
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype(">c8".parse().unwrap())
        .serialize(&mut b, &[[1.0f32, 2.0], [-0.5, 0.25]])
        .unwrap();
    add(
        "c8_be",
        b,
        ">c8",
        &[2],
        false,
        json!([[1.0, 2.0], [-0.5, 0.25]]),
    );
    // Strings.
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype(">U3".parse().unwrap())
        .serialize(&mut b, &vec![vec!["é", ""], vec!["😀ab", "xyz"]])
        .unwrap();
    add(
        "u3_be_2x2",
        b,
        ">U3",
        &[2, 2],
        false,
        json!([["é", ""], ["😀ab", "xyz"]]),
    );
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype("|S4".parse().unwrap())
        .fortran_order(true)
        .serialize(&mut b, &[["ab", "c"], ["", "wxyz"], ["q", "r"]])
        .unwrap();
    add(
        "s4_3x2_fortran",
        b,
        "|S4",
        &[3, 2],
        true,
        json!([["ab", "c"], ["", "wxyz"], ["q", "r"]]),
    );
    // Datetimes, bool, 0-d, empty.
    let mut b = Vec::new();
    WriterBuilder::new()
        .dtype(">M8[ms]".parse().unwrap())
        .serialize(&mut b, &json!([0, -1, "NaT", 1700000000000i64]))
        .unwrap();
    add(
        "m8_ms_be",
        b,
        ">M8[ms]",
        &[4],
        false,
        json!([0, -1, "NaT", 1700000000000i64]),
    );
    add(
        "bool_0d",
        WriterBuilder::new().shape([]).to_vec(&[true]).unwrap(),
        "|b1",
        &[],
        false,
        json!(true),
    );
    add(
        "u8_empty_0x3",
        npy_serde::to_vec::<[u64; 3]>(&[]).unwrap(),
        "<u8",
        &[0, 3],
        false,
        json!([]),
    );
    // Streaming: uncounted (patched header) and counted.
    let mut w = NpyWriter::new::<[i16; 2]>(std::io::Cursor::new(Vec::new())).unwrap();
    for i in 0..1000i16 {
        w.write_serde(&[i, -i]).unwrap();
    }
    let b = w.finish().unwrap().into_inner();
    let vals: Json = (0..1000).map(|i| json!([i, -i])).collect();
    add("stream_i2_1000x2", b, "<i2", &[1000, 2], false, vals);
    let mut w = WriterBuilder::new()
        .record::<u32>()
        .version(Version::V2_0)
        .writer_with_len(Vec::new(), 3)
        .unwrap();
    w.write_all_serde(&[7u32, 8, 9]).unwrap();
    add(
        "counted_v2",
        w.finish().unwrap(),
        "<u4",
        &[3],
        false,
        json!([7, 8, 9]),
    );
    out
}

fn load_in_numpy(paths: &[PathBuf]) -> Vec<Json> {
    let fixtures = fixtures_dir();
    let mut args: Vec<&OsStr> = vec![fixtures.as_os_str()];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    run_python(LOAD_AND_RESAVE, &args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// The expected descrs below spell native order as `<`.
#[cfg(target_endian = "little")]
#[test]
fn numpy_loads_our_files_and_saves_the_same_bytes() {
    if live_python().is_none() {
        eprintln!("skipped: NPY_PYTHON is not set");
        return;
    }
    let dir = TempDir::new("write-numpy-load");
    let cases = cases();
    let paths: Vec<PathBuf> = cases
        .iter()
        .map(|c| {
            let p = dir.join(format!("{}.npy", c.name));
            std::fs::write(&p, &c.bytes).unwrap();
            p
        })
        .collect();
    let loaded = load_in_numpy(&paths);
    assert_eq!(loaded.len(), cases.len());
    for ((case, got), path) in cases.iter().zip(&loaded).zip(&paths) {
        let name = case.name;
        if case.dtype_str == "|V33" {
            assert_eq!(
                got["descr"],
                json!([
                    ["id", "<i8"],
                    ["x", "<f8"],
                    ["y", "<f4"],
                    ["flag", "|u1"],
                    ["v", "<f4", [3]]
                ])
                .as_array()
                .map(|fields| {
                    let big = name.ends_with("_be");
                    Json::Array(
                        fields
                            .iter()
                            .map(|f| {
                                let mut f = f.clone();
                                if big {
                                    f[1] = Json::String(f[1].as_str().unwrap().replace('<', ">"));
                                }
                                f
                            })
                            .collect(),
                    )
                })
                .unwrap(),
                "{name}: dtype"
            );
        }
        assert_eq!(got["str"], case.dtype_str, "{name}: dtype");
        assert_eq!(got["shape"], json!(case.shape), "{name}: shape");
        assert_eq!(got["fortran"], case.fortran, "{name}: order");
        assert_eq!(got["values"], case.values, "{name}: values");
        let resaved = std::fs::read(path.with_extension("npy.resaved.npy")).unwrap();
        if !case.resave_identical {
            // np.save picks the smallest version (1.0); ours was forced to 2.0.
            assert_eq!(&case.bytes[6..8], &[2, 0], "{name}");
            assert_eq!(&resaved[6..8], &[1, 0], "{name}");
            continue;
        }
        assert!(
            resaved == case.bytes,
            "{name}: np.save of the loaded array differs from our bytes"
        );
    }
}

/// Appending to files NumPy wrote (1-D records and a big-endian scalar array), then loading the
/// result in NumPy.
#[cfg(target_endian = "little")]
#[test]
fn append_to_numpy_files() {
    if live_python().is_none() {
        eprintln!("skipped: NPY_PYTHON is not set");
        return;
    }
    let dir = TempDir::new("write-numpy-append");
    let recs_path = dir.join("recs.npy");
    let be_path = dir.join("be.npy");
    run_python(
        r#"
import sys
import numpy as np
dt = np.dtype([('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))])
a = np.zeros(3, dtype=dt)
a['id'] = [0, 1000000007, 2000000014]; a['x'] = [-3.0, -2.75, -2.5]; a['y'] = [-0.0, -1.5, -3.0]
a['flag'] = [0, 1, 2]; a['v'] = [[0, .5, -0.], [1, .5, -0.], [2, .5, -0.]]
np.save(sys.argv[1], a)
np.save(sys.argv[2], np.arange(5, dtype='>f8'))
"#,
        &[recs_path.as_os_str(), be_path.as_os_str()],
    );
    let mut w = WriterBuilder::new()
        .record::<W2>()
        .append_path(&recs_path)
        .unwrap();
    assert_eq!(w.len(), 3);
    let more: Vec<W2> = (3..12).map(rec).collect();
    w.write_all_serde(&more).unwrap();
    w.finish().unwrap();
    // Bytes equal to writing all 12 at once.
    let all: Vec<W2> = (0..12).map(rec).collect();
    assert_eq!(
        std::fs::read(&recs_path).unwrap(),
        npy_serde::to_vec(&all).unwrap()
    );

    let mut w = NpyWriter::append(
        File::options()
            .read(true)
            .write(true)
            .open(&be_path)
            .unwrap(),
    )
    .unwrap();
    for v in [5.5f64, -1.0] {
        w.write_serde(&v).unwrap();
    }
    let mut f = w.finish().unwrap();
    // The file is left positioned at the end of the data.
    assert_eq!(
        f.stream_position().unwrap(),
        f.seek(SeekFrom::End(0)).unwrap()
    );
    drop(f);

    let loaded = load_in_numpy(&[recs_path.clone(), be_path.clone()]);
    assert_eq!(loaded[0]["shape"], json!([12]));
    assert_eq!(loaded[0]["values"], (0..12).map(rec_json).collect::<Json>());
    assert_eq!(loaded[1]["str"], ">f8");
    assert_eq!(
        loaded[1]["values"],
        json!([0.0, 1.0, 2.0, 3.0, 4.0, 5.5, -1.0])
    );
    for p in [&recs_path, &be_path] {
        let ours = std::fs::read(p).unwrap();
        let resaved = std::fs::read(p.with_extension("npy.resaved.npy")).unwrap();
        assert_eq!(ours, resaved, "{}", p.display());
    }
}

/// An unfinished seekable writer leaves a file NumPy refuses as well.
#[test]
fn numpy_refuses_an_unfinished_file() {
    if live_python().is_none() {
        eprintln!("skipped: NPY_PYTHON is not set");
        return;
    }
    let dir = TempDir::new("write-numpy-unfinished");
    let path = dir.join("partial.npy");
    {
        let mut w = NpyWriter::new::<f64>(File::create(&path).unwrap()).unwrap();
        w.write_all_serde(&vec![1.0; 200_000]).unwrap();
    }
    let mut head = [0u8; 6];
    File::open(&path).unwrap().read_exact(&mut head).unwrap();
    assert_eq!(&head, npy_serde::write::UNFINISHED_MAGIC);
    let out = run_python(
        r#"
import sys
import numpy as np
try:
    np.load(sys.argv[1])
    print("loaded")
except Exception as e:
    print("refused", type(e).__name__)
"#,
        &[path.as_os_str()],
    );
    assert!(out.starts_with("refused"), "{out}");
}
