//! `#[derive(NpyRecord)]` against NumPy: for each struct, the derived descr equals the descr
//! NumPy 2.4.6 prints for the equivalent dtype (the literals below were printed by NumPy, from
//! the spelling next to them), and, live when `NPY_PYTHON` is set, NumPy builds from our descr
//! text the same dtype as from its own spelling, itemsize and offsets included.
//!
//! The literals are NumPy's output on a little-endian machine, hence the `cfg`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};

use half::f16;
use npy_serde::{DType, NpyRecord};
use npy_serde_tests::{live_python, run_python};
use num_complex::Complex;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, NpyRecord)]
struct Point {
    x: f64,
    y: f64,
    label: [u8; 8],
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct AllScalars {
    b: bool,
    i1: i8,
    i2: i16,
    i4: i32,
    i8: i64,
    u1: u8,
    u2: u16,
    u4: u32,
    u8: u64,
    h: f16,
    f: f32,
    d: f64,
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Strings {
    #[npy(bytes = 8)]
    name: String,
    #[npy(unicode = 5)]
    title: String,
    #[npy(bytes = 4)]
    code: [u8; 4],
    #[npy(bytes = 3)]
    raw: Vec<u8>,
    #[npy(unicode = 2)]
    boxed: Box<str>,
    #[npy(bytes = 1)]
    cow: Cow<'static, [u8]>,
}

#[derive(Serialize, NpyRecord)]
struct Borrowed<'a> {
    #[npy(bytes = 6)]
    s: &'a str,
    #[npy(unicode = 2)]
    u: &'a str,
    #[npy(bytes = 2)]
    b: &'a [u8],
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Arrays {
    v: [[f32; 3]; 2],
    t: [[[i16; 2]; 2]; 2],
    flags: [bool; 4],
    bytes: [[u8; 4]; 2],
}

#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
struct Point3 {
    x: f32,
    y: f32,
    z: f32,
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Nested {
    id: u32,
    pos: Point3,
    hist: [Point3; 2],
}

/// The `crate` override, through a re-export.
mod reexport {
    pub use ::npy_serde as np_alias;
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(crate = "reexport::np_alias")]
struct Tuple(f64, i32);

#[derive(Serialize, Deserialize, NpyRecord)]
struct TupleNested(Point3, u8);

macro_rules! rename_all_struct {
    ($name:ident, $rule:tt) => {
        #[derive(Serialize, Deserialize, NpyRecord, Default)]
        #[serde(rename_all = $rule)]
        struct $name {
            sensor_id: u16,
            raw_value: f32,
        }
    };
}

rename_all_struct!(Lower, "lowercase");
rename_all_struct!(Upper, "UPPERCASE");
rename_all_struct!(Pascal, "PascalCase");
rename_all_struct!(Camel, "camelCase");
rename_all_struct!(Snake, "snake_case");
rename_all_struct!(ScreamingSnake, "SCREAMING_SNAKE_CASE");
rename_all_struct!(Kebab, "kebab-case");
rename_all_struct!(ScreamingKebab, "SCREAMING-KEBAB-CASE");

#[derive(Serialize, Deserialize, NpyRecord, Default)]
#[serde(rename_all = "camelCase")]
struct Renames {
    #[serde(rename = "X")]
    x: f64,
    #[serde(rename(serialize = "out", deserialize = "in"))]
    in_out: f64,
    #[npy(rename = "npy_wins")]
    w: f64,
    r#type: u8,
    #[serde(rename = "Temp °C")]
    temp: f32,
}

#[derive(Serialize, Deserialize, NpyRecord, Default)]
#[allow(dead_code)] // the skipped fields exist only to be left out
struct Skips {
    a: f64,
    /// `#[serde(skip)]` alone leaves the field out of the dtype.
    #[serde(skip)]
    cache: Vec<f64>,
    #[npy(skip)]
    #[serde(skip)]
    scratch: String,
    #[npy(skip)]
    #[serde(skip_serializing, skip_deserializing)]
    index: HashMap<String, usize>,
    /// Serialized (so in the dtype), ignored when deserializing.
    #[serde(skip_deserializing)]
    written: i32,
    /// Never serialized, so not in the dtype.
    #[serde(skip_serializing, default)]
    read_only: f32,
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
#[repr(C)]
struct Aligned {
    a: u8,
    b: i32,
    c: f64,
    d: u8,
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
#[repr(C)]
struct Inner {
    h: f16,
    x: f64,
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
struct AlignedNested {
    flag: bool,
    inner: Inner,
    #[npy(unicode = 3)]
    s: String,
    c: Complex<f32>,
    v: [i16; 3],
    tail: u8,
}

/// Plain data only, so its `#[repr(C)]` layout can be compared with the dtype.
#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
#[repr(C)]
struct AlignedPod {
    flag: bool,
    inner: Inner,
    c: Complex<f32>,
    v: [i16; 3],
    tail: u8,
}

/// An aligned struct with a packed nested record (alignment 1, as NumPy gives it).
#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
struct AlignedPackedInner {
    a: u8,
    p: Point3,
    b: f64,
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(align)]
#[repr(C)]
struct AlignedTuple(u8, u64);

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(byte_order = "big")]
struct BigEndian {
    a: i32,
    b: u8,
    #[npy(unicode = 2)]
    s: String,
    #[npy(bytes = 2)]
    t: String,
    pos: Point3,
    m: [f64; 2],
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(byte_order = "little")]
struct LittleEndian {
    a: i32,
    pos: Point3,
}

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(byte_order = "native")]
struct Native {
    a: i32,
    b: f16,
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Pair<T> {
    a: T,
    b: [T; 2],
}

#[derive(Serialize, NpyRecord)]
struct Series<T, const N: usize>
where
    [T; N]: Serialize,
{
    v: [T; N],
    n: u64,
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Complexes {
    z: Complex<f32>,
    w: Complex<f64>,
    zs: [Complex<f64>; 2],
}

#[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
#[serde(transparent)]
struct Meters(f64);

#[derive(Serialize, Deserialize, NpyRecord)]
struct Lengths {
    len: Meters,
    lens: [Meters; 2],
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Empty {}

/// Newtype structs are their field, as serde serializes them.
#[derive(Serialize, Deserialize, NpyRecord)]
struct Celsius(f32);

#[derive(Serialize, Deserialize, NpyRecord)]
#[npy(byte_order = "big")]
struct BigId(u32);

#[derive(Serialize, Deserialize, NpyRecord)]
struct Label(#[npy(bytes = 4)] [u8; 4]);

#[derive(Serialize, Deserialize, NpyRecord)]
struct Reading {
    t: Celsius,
    id: BigId,
    label: Label,
    history: [Celsius; 2],
}

/// One struct: its dtype, the descr NumPy prints for the equivalent dtype, and that NumPy
/// spelling (a Python expression).
struct Case {
    name: &'static str,
    dtype: DType,
    /// `T::LAYOUT` (the exact tier's compile-time layout) is the layout of `T::dtype()`.
    layout_matches: bool,
    /// ... and it is not opaque.
    layout_exact: bool,
    numpy_descr: &'static str,
    numpy_spelling: &'static str,
}

fn case<T: NpyRecord>(
    name: &'static str,
    numpy_descr: &'static str,
    numpy_spelling: &'static str,
) -> Case {
    let layout = npy_serde::record::__private::layout_of(&T::dtype());
    Case {
        name,
        dtype: T::dtype(),
        layout_matches: T::LAYOUT == layout,
        layout_exact: T::LAYOUT.is_exact(),
        numpy_descr,
        numpy_spelling,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case::<Point>(
            "Point",
            "[('x', '<f8'), ('y', '<f8'), ('label', '|u1', (8,))]",
            "np.dtype([('x','f8'),('y','f8'),('label','u1',(8,))])",
        ),
        case::<AllScalars>(
            "AllScalars",
            "[('b', '|b1'), ('i1', '|i1'), ('i2', '<i2'), ('i4', '<i4'), ('i8', '<i8'), \
             ('u1', '|u1'), ('u2', '<u2'), ('u4', '<u4'), ('u8', '<u8'), ('h', '<f2'), \
             ('f', '<f4'), ('d', '<f8')]",
            "np.dtype([('b','?'),('i1','i1'),('i2','i2'),('i4','i4'),('i8','i8'),('u1','u1'),\
             ('u2','u2'),('u4','u4'),('u8','u8'),('h','f2'),('f','f4'),('d','f8')])",
        ),
        case::<Strings>(
            "Strings",
            "[('name', '|S8'), ('title', '<U5'), ('code', '|S4'), ('raw', '|S3'), \
             ('boxed', '<U2'), ('cow', '|S1')]",
            "np.dtype([('name','S8'),('title','U5'),('code','S4'),('raw','S3'),('boxed','U2'),\
             ('cow','S1')])",
        ),
        case::<Borrowed<'static>>(
            "Borrowed",
            "[('s', '|S6'), ('u', '<U2'), ('b', '|S2')]",
            "np.dtype([('s','S6'),('u','U2'),('b','S2')])",
        ),
        case::<Arrays>(
            "Arrays",
            "[('v', '<f4', (2, 3)), ('t', '<i2', (2, 2, 2)), ('flags', '|b1', (4,)), \
             ('bytes', '|u1', (2, 4))]",
            "np.dtype([('v','f4',(2,3)),('t','i2',(2,2,2)),('flags','?',(4,)),\
             ('bytes','u1',(2,4))])",
        ),
        case::<Nested>(
            "Nested",
            "[('id', '<u4'), ('pos', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')]), \
             ('hist', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')], (2,))]",
            "np.dtype([('id','u4'),('pos',[('x','f4'),('y','f4'),('z','f4')]),\
             ('hist',[('x','f4'),('y','f4'),('z','f4')],(2,))])",
        ),
        case::<Tuple>(
            "Tuple",
            "[('f0', '<f8'), ('f1', '<i4')]",
            "np.dtype('f8,i4')",
        ),
        case::<TupleNested>(
            "TupleNested",
            "[('f0', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')]), ('f1', '|u1')]",
            "np.dtype([('f0',[('x','f4'),('y','f4'),('z','f4')]),('f1','u1')])",
        ),
        case::<Lower>(
            "rename_all lowercase",
            "[('sensor_id', '<u2'), ('raw_value', '<f4')]",
            "np.dtype([('sensor_id','u2'),('raw_value','f4')])",
        ),
        case::<Upper>(
            "rename_all UPPERCASE",
            "[('SENSOR_ID', '<u2'), ('RAW_VALUE', '<f4')]",
            "np.dtype([('SENSOR_ID','u2'),('RAW_VALUE','f4')])",
        ),
        case::<Pascal>(
            "rename_all PascalCase",
            "[('SensorId', '<u2'), ('RawValue', '<f4')]",
            "np.dtype([('SensorId','u2'),('RawValue','f4')])",
        ),
        case::<Camel>(
            "rename_all camelCase",
            "[('sensorId', '<u2'), ('rawValue', '<f4')]",
            "np.dtype([('sensorId','u2'),('rawValue','f4')])",
        ),
        case::<Snake>(
            "rename_all snake_case",
            "[('sensor_id', '<u2'), ('raw_value', '<f4')]",
            "np.dtype([('sensor_id','u2'),('raw_value','f4')])",
        ),
        case::<ScreamingSnake>(
            "rename_all SCREAMING_SNAKE_CASE",
            "[('SENSOR_ID', '<u2'), ('RAW_VALUE', '<f4')]",
            "np.dtype([('SENSOR_ID','u2'),('RAW_VALUE','f4')])",
        ),
        case::<Kebab>(
            "rename_all kebab-case",
            "[('sensor-id', '<u2'), ('raw-value', '<f4')]",
            "np.dtype([('sensor-id','u2'),('raw-value','f4')])",
        ),
        case::<ScreamingKebab>(
            "rename_all SCREAMING-KEBAB-CASE",
            "[('SENSOR-ID', '<u2'), ('RAW-VALUE', '<f4')]",
            "np.dtype([('SENSOR-ID','u2'),('RAW-VALUE','f4')])",
        ),
        case::<Renames>(
            "Renames",
            "[('X', '<f8'), ('out', '<f8'), ('npy_wins', '<f8'), ('type', '|u1'), \
             ('Temp °C', '<f4')]",
            "np.dtype([('X','f8'),('out','f8'),('npy_wins','f8'),('type','u1'),('Temp °C','f4')])",
        ),
        case::<Skips>(
            "Skips",
            "[('a', '<f8'), ('written', '<i4')]",
            "np.dtype([('a','f8'),('written','i4')])",
        ),
        case::<Aligned>(
            "Aligned",
            "[('a', '|u1'), ('', '|V3'), ('b', '<i4'), ('c', '<f8'), ('d', '|u1'), ('', '|V7')]",
            "np.dtype([('a','u1'),('b','i4'),('c','f8'),('d','u1')], align=True)",
        ),
        case::<AlignedNested>(
            "AlignedNested",
            "[('flag', '|b1'), ('', '|V7'), ('inner', [('h', '<f2'), ('', '|V6'), ('x', '<f8')]), \
             ('s', '<U3'), ('c', '<c8'), ('v', '<i2', (3,)), ('tail', '|u1'), ('', '|V5')]",
            "np.dtype([('flag','?'),('inner',np.dtype([('h','f2'),('x','f8')], align=True)),\
             ('s','U3'),('c','c8'),('v','i2',(3,)),('tail','u1')], align=True)",
        ),
        case::<AlignedPod>(
            "AlignedPod",
            "[('flag', '|b1'), ('', '|V7'), ('inner', [('h', '<f2'), ('', '|V6'), ('x', '<f8')]), \
             ('c', '<c8'), ('v', '<i2', (3,)), ('tail', '|u1'), ('', '|V1')]",
            "np.dtype([('flag','?'),('inner',[('h','f2'),('x','f8')]),('c','c8'),\
             ('v','i2',(3,)),('tail','u1')], align=True)",
        ),
        case::<AlignedPackedInner>(
            "AlignedPackedInner",
            "[('a', '|u1'), ('p', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')]), ('', '|V3'), \
             ('b', '<f8')]",
            "np.dtype([('a','u1'),('p',np.dtype([('x','f4'),('y','f4'),('z','f4')])),\
             ('b','f8')], align=True)",
        ),
        case::<AlignedTuple>(
            "AlignedTuple",
            "[('f0', '|u1'), ('', '|V7'), ('f1', '<u8')]",
            "np.dtype('u1,u8', align=True)",
        ),
        case::<BigEndian>(
            "BigEndian",
            "[('a', '>i4'), ('b', '|u1'), ('s', '>U2'), ('t', '|S2'), \
             ('pos', [('x', '>f4'), ('y', '>f4'), ('z', '>f4')]), ('m', '>f8', (2,))]",
            "np.dtype([('a','>i4'),('b','u1'),('s','>U2'),('t','S2'),\
             ('pos',[('x','>f4'),('y','>f4'),('z','>f4')]),('m','>f8',(2,))])",
        ),
        case::<LittleEndian>(
            "LittleEndian",
            "[('a', '<i4'), ('pos', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')])]",
            "np.dtype([('a','<i4'),('pos',[('x','<f4'),('y','<f4'),('z','<f4')])])",
        ),
        case::<Native>(
            "Native",
            "[('a', '<i4'), ('b', '<f2')]",
            "np.dtype([('a','=i4'),('b','=f2')])",
        ),
        case::<Pair<i16>>(
            "Pair<i16>",
            "[('a', '<i2'), ('b', '<i2', (2,))]",
            "np.dtype([('a','i2'),('b','i2',(2,))])",
        ),
        case::<Pair<Point3>>(
            "Pair<Point3>",
            "[('a', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')]), \
             ('b', [('x', '<f4'), ('y', '<f4'), ('z', '<f4')], (2,))]",
            "np.dtype([('a',[('x','f4'),('y','f4'),('z','f4')]),\
             ('b',[('x','f4'),('y','f4'),('z','f4')],(2,))])",
        ),
        case::<Series<f32, 3>>(
            "Series<f32, 3>",
            "[('v', '<f4', (3,)), ('n', '<u8')]",
            "np.dtype([('v','f4',(3,)),('n','u8')])",
        ),
        case::<Complexes>(
            "Complexes",
            "[('z', '<c8'), ('w', '<c16'), ('zs', '<c16', (2,))]",
            "np.dtype([('z','c8'),('w','c16'),('zs','c16',(2,))])",
        ),
        case::<Lengths>(
            "Lengths",
            "[('len', '<f8'), ('lens', '<f8', (2,))]",
            "np.dtype([('len','f8'),('lens','f8',(2,))])",
        ),
        case::<Empty>("Empty", "[]", "np.dtype([])"),
        case::<Reading>(
            "Reading",
            "[('t', '<f4'), ('id', '>u4'), ('label', '|S4'), ('history', '<f4', (2,))]",
            "np.dtype([('t','f4'),('id','>u4'),('label','S4'),('history','f4',(2,))])",
        ),
    ]
}

#[test]
fn derived_descr_equals_numpys() {
    let mut wrong = Vec::new();
    for c in cases() {
        let ours = c.dtype.descr();
        if ours != c.numpy_descr {
            wrong.push(format!(
                "{}:\n  derived {ours}\n  numpy   {}",
                c.name, c.numpy_descr
            ));
        }
        // Our own parser reads the text back to the same dtype.
        let back = DType::from_descr(&ours).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(back.descr(), ours, "{}", c.name);
        assert_eq!(back.itemsize(), c.dtype.itemsize(), "{}", c.name);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The exact reading tier's compile-time layout (`NpyRecord::LAYOUT`, composed by the derive)
/// equals the one built from the derived dtype at run time, for every case; it is opaque exactly
/// where the dtype holds a type that tier does not decode.
#[test]
fn derived_layouts_are_their_dtypes_layouts() {
    let mut exact = Vec::new();
    for c in cases() {
        assert!(
            c.layout_matches,
            "{}: LAYOUT differs from {}",
            c.name,
            c.dtype.descr()
        );
        if c.layout_exact {
            exact.push(c.name);
        }
    }
    let opaque: Vec<&str> = cases()
        .iter()
        .map(|c| c.name)
        .filter(|n| !exact.contains(n))
        .collect();
    // Strings, f2, complex: no exact layout.
    for c in cases() {
        let d = c.dtype.descr();
        let inexact = ["|S", "<U", "<f2", "<c", ">c"]
            .iter()
            .any(|k| d.contains(k));
        assert_eq!(inexact, !c.layout_exact, "{}: {d}", c.name);
    }
    assert!(exact.len() > 10, "exact: {exact:?}, opaque: {opaque:?}");
}

#[test]
fn transparent_and_newtype_structs_have_their_fields_dtype() {
    assert_eq!(Meters::dtype().descr(), "'<f8'");
    assert_eq!(Celsius::dtype().descr(), "'<f4'");
    assert_eq!(BigId::dtype().descr(), "'>u4'");
    assert_eq!(Label::dtype().descr(), "'|S4'");
}

fn offsets(dt: &DType) -> Vec<usize> {
    dt.as_record()
        .expect("a record")
        .fields()
        .iter()
        .map(|f| f.offset)
        .collect()
}

/// `#[npy(align)]` on a `#[repr(C)]` struct of plain data gives Rust's own layout.
#[test]
fn align_matches_repr_c() {
    let dt = Aligned::dtype();
    assert_eq!(dt.itemsize(), size_of::<Aligned>());
    assert_eq!(
        offsets(&dt),
        [
            offset_of!(Aligned, a),
            offset_of!(Aligned, b),
            offset_of!(Aligned, c),
            offset_of!(Aligned, d)
        ]
    );

    let dt = Inner::dtype();
    assert_eq!(dt.itemsize(), size_of::<Inner>());
    assert_eq!(offsets(&dt), [offset_of!(Inner, h), offset_of!(Inner, x)]);

    let dt = AlignedPod::dtype();
    assert_eq!(dt.itemsize(), size_of::<AlignedPod>());
    assert_eq!(dt.alignment(), std::mem::align_of::<AlignedPod>());
    assert_eq!(
        offsets(&dt),
        [
            offset_of!(AlignedPod, flag),
            offset_of!(AlignedPod, inner),
            offset_of!(AlignedPod, c),
            offset_of!(AlignedPod, v),
            offset_of!(AlignedPod, tail)
        ]
    );

    let dt = AlignedTuple::dtype();
    assert_eq!(dt.itemsize(), size_of::<AlignedTuple>());
    assert_eq!(
        offsets(&dt),
        [offset_of!(AlignedTuple, 0), offset_of!(AlignedTuple, 1)]
    );
    assert!(dt.as_record().unwrap().is_aligned());
    assert!(!Point::dtype().as_record().unwrap().is_aligned());
}

/// The dtype's names are exactly the keys serde serializes.
#[test]
fn names_equal_serde_keys() {
    fn check<T: NpyRecord + Serialize>(value: &T) {
        let json = serde_json::to_value(value).unwrap();
        let mut keys: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
        let mut names: Vec<String> = T::dtype()
            .as_record()
            .unwrap()
            .fields()
            .iter()
            .map(|f| f.name.clone())
            .collect();
        keys.sort();
        names.sort();
        assert_eq!(names, keys, "{}", std::any::type_name::<T>());
    }
    check(&Lower::default());
    check(&Upper::default());
    check(&Pascal::default());
    check(&Camel::default());
    check(&Snake::default());
    check(&ScreamingSnake::default());
    check(&Kebab::default());
    check(&ScreamingKebab::default());
    check(&Skips::default());
    // `#[npy(rename)]` renames only the dtype's field.
    let json = serde_json::to_value(Renames::default()).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert!(keys.contains(&&"w".to_string()));
    assert!(Renames::dtype()
        .as_record()
        .unwrap()
        .field("npy_wins")
        .is_some());
}

#[derive(NpyRecord)]
struct TooBig {
    _a: [[u8; 2_000_000_000]; 2],
}

#[test]
#[should_panic(expected = "cannot build the dtype of `TooBig`")]
fn oversized_record_panics_with_the_type_name() {
    let _ = TooBig::dtype();
}

/// Live: NumPy's `descr_to_dtype` on our descr text gives the dtype NumPy builds from its own
/// spelling, with the same itemsize and field offsets; and NumPy still prints the literal.
#[test]
fn numpy_builds_the_same_dtype_from_our_descr() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping the live NumPy check");
        return;
    }
    let table: Vec<[String; 4]> = cases()
        .into_iter()
        .map(|c| {
            [
                c.name.to_string(),
                c.dtype.descr(),
                c.numpy_spelling.to_string(),
                c.numpy_descr.to_string(),
            ]
        })
        .collect();
    let json = serde_json::to_string(&table).unwrap();
    let script = r#"
import ast, json, sys
import numpy as np
from numpy.lib.format import descr_to_dtype

def layout(d):
    if d.names is None:
        return None
    return [(n, d.fields[n][1], layout(d.fields[n][0].base), d.fields[n][0].str,
             d.fields[n][0].shape) for n in d.names]

problems = []
cases = json.loads(sys.argv[1])
for name, ours, spelling, literal in cases:
    ref = eval(spelling, {"np": np})
    got = descr_to_dtype(ast.literal_eval(ours))
    if str(ref.descr) != literal:
        problems.append(f"{name}: NumPy prints {ref.descr} for {spelling}, the test says {literal}")
    if got != ref:
        problems.append(f"{name}: {got} != {ref}")
    if got.itemsize != ref.itemsize:
        problems.append(f"{name}: itemsize {got.itemsize} != {ref.itemsize}")
    if layout(got) != layout(ref):
        problems.append(f"{name}: layout {layout(got)} != {layout(ref)}")
print(json.dumps({"checked": len(cases), "problems": problems}))
"#;
    let out = run_python(script, &[json.as_ref()]);
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["checked"], table.len());
    let problems = report["problems"].as_array().unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
}
