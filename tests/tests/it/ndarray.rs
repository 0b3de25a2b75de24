//! `npy_serde::ndarray` (feature `ndarray`): arrays read, written, viewed and put in npz
//! archives.
//!
//! Offline: round trips over 0-d to 5-d, C and Fortran layouts, both byte orders and every
//! plain element type; the committed fixtures read as arrays agree with `from_path_serde`; the
//! write order is np.save's (checked against the crate's own C-order writer); views, npz
//! members, records, dimension mismatches and limits.
//!
//! Live (`NPY_PYTHON`): NumPy writes every case and the arrays read here hold the generated
//! values in the file's layout; the arrays written here are byte for byte `np.save` of the same
//! NumPy array (C, Fortran, strided `a[::2]`, big-endian, records), in `.npy` files and `.npz`
//! members.

use std::fmt::Debug;
use std::path::Path;

use half::f16;
use ndarray::{s, Array, Array1, Array2, Array3, ArrayD, Ix1, Ix2, Ix3, IxDyn, ShapeBuilder};
use npy_serde::ndarray::{read_npy, write_npy, FromNpy, ReadNpyExt, WriteNpyExt};
use npy_serde::{
    ByteOrder, MmapArray, MmapArrayMut, NpyRecord, NpzArchive, NpzStreamWriter, NpzWriter,
    ReaderBuilder, WriterBuilder,
};
use npy_serde_tests::{entries, entry_path, live_python, run_python, Sample, TempDir, W2};
use num_complex::Complex;
use serde::de::DeserializeOwned;
use serde::Serialize;

// ---------------------------------------------------------------------------------------------
// Generated values: element `i` (logical C order) of every case, the same formula in Rust and
// in the Python scripts below (`gen`).

trait Gen: Serialize + DeserializeOwned + NpyRecord + Send + Sync + Clone + PartialEq + Debug {
    fn gen(i: usize) -> Self;
}

macro_rules! gen_int {
    ($($t:ty, $factor:expr, $signed:expr);* $(;)?) => {$(
        impl Gen for $t {
            fn gen(i: usize) -> Self {
                let base = (i % 97) as i128 - if $signed { 48 } else { 0 };
                (base * $factor) as $t
            }
        }
    )*};
}
gen_int! {
    i8, 1, true;
    i16, 300, true;
    i32, 20_000_000, true;
    i64, 1_000_000_000_000_000, true;
    u8, 1, false;
    u16, 600, false;
    u32, 40_000_000, false;
    u64, 100_000_000_000_000_000, false;
}

impl Gen for bool {
    fn gen(i: usize) -> Self {
        i.is_multiple_of(3)
    }
}
impl Gen for f16 {
    fn gen(i: usize) -> Self {
        f16::from_f64(i as f64 * 0.25 - 7.5)
    }
}
impl Gen for f32 {
    fn gen(i: usize) -> Self {
        i as f32 * 0.25 - 7.5
    }
}
impl Gen for f64 {
    fn gen(i: usize) -> Self {
        i as f64 * 0.25 - 7.5
    }
}
impl Gen for Complex<f32> {
    fn gen(i: usize) -> Self {
        Complex::new(i as f32 * 0.5 - 3.0, -(i as f32) * 0.25)
    }
}
impl Gen for Complex<f64> {
    fn gen(i: usize) -> Self {
        Complex::new(i as f64 * 0.5 - 3.0, -(i as f64) * 0.25)
    }
}
impl Gen for Sample {
    fn gen(i: usize) -> Self {
        Sample {
            id: i as u32 * 1000 + 7,
            t: i as f64 * 0.5 - 1.0,
            xyz: [i as f32, -(i as f32), 0.5],
            ok: i % 2 == 1,
        }
    }
}

/// The Python side of [`Gen`]: `gen(code, n)` is the `n` generated values of a dtype code.
const PY_GEN: &str = r#"
import json, sys, io
import numpy as np

SAMPLE = np.dtype([('id', '<u4'), ('t', '<f8'), ('xyz', '<f4', (3,)), ('ok', '?')])
FACTORS = {'i1': 1, 'i2': 300, 'i4': 20_000_000, 'i8': 10**15,
           'u1': 1, 'u2': 600, 'u4': 40_000_000, 'u8': 10**17}

def gen(code, n):
    i = np.arange(n, dtype=np.int64)
    if code == 'b1':
        return i % 3 == 0
    if code in FACTORS:
        base = (i % 97) - (48 if code[0] == 'i' else 0)
        return (base.astype(object) * FACTORS[code]).astype(np.dtype(code))
    if code[0] == 'f':
        return (i * 0.25 - 7.5).astype(np.dtype(code))
    if code[0] == 'c':
        c = np.empty(n, np.dtype(code))
        c.real = i * 0.5 - 3.0
        c.imag = -(i * 0.25)  # -0.0 first, as in Rust
        return c
    if code == 'sample':
        a = np.zeros(n, SAMPLE)
        a['id'] = i * 1000 + 7
        a['t'] = i * 0.5 - 1.0
        a['xyz'] = np.stack([i * 1.0, -(i * 1.0), np.full(n, 0.5)], axis=1)
        a['ok'] = i % 2 == 1
        return a
    raise ValueError(code)

def case(c):
    """The NumPy array of a case: generated, shaped, ordered, byte-swapped, sliced."""
    shape = tuple(c['shape'])
    n = int(np.prod(shape)) if shape else 1
    a = gen(c['code'], n).reshape(shape)
    if c['order'] == 'F':
        a = np.asarray(a, order='F')  # asfortranarray would make a 0-d array 1-d
    if c['big']:
        a = a.astype(a.dtype.newbyteorder('>'), order='K')
    for sl in c.get('slices', []):
        a = a[tuple(slice(*x) for x in sl)]
    return a
"#;

/// One case: element type code, shape, layout ('C' or 'F'), byte order.
#[derive(Clone, Debug)]
struct Case {
    code: &'static str,
    shape: Vec<usize>,
    order: char,
    big: bool,
}

impl Case {
    fn name(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        format!(
            "{}_{}_{}_{}.npy",
            self.code,
            dims.join("x"),
            self.order,
            if self.big { "be" } else { "le" }
        )
    }

    fn json(&self) -> String {
        format!(
            r#"{{"code": "{}", "shape": {:?}, "order": "{}", "big": {}, "file": "{}"}}"#,
            self.code,
            self.shape,
            self.order,
            if self.big { "true" } else { "false" },
            self.name()
        )
    }
}

/// 0-d to 5-d, with axes of length 1, and an empty array.
fn shapes() -> Vec<Vec<usize>> {
    vec![
        vec![],
        vec![5],
        vec![3, 4],
        vec![2, 3, 4],
        vec![2, 3, 1, 2],
        vec![2, 1, 3, 2, 2],
        vec![0, 3],
    ]
}

fn cases(code: &'static str) -> Vec<Case> {
    let mut out = Vec::new();
    for shape in shapes() {
        for order in ['C', 'F'] {
            for big in [false, true] {
                if code == "sample" && big {
                    continue;
                }
                out.push(Case {
                    code,
                    shape: shape.clone(),
                    order,
                    big,
                });
            }
        }
    }
    out
}

/// The generated array of `shape` in C layout.
fn generated<T: Gen>(shape: &[usize]) -> ArrayD<T> {
    let n = shape.iter().product();
    Array::from_shape_vec(IxDyn(shape), (0..n).map(T::gen).collect()).unwrap()
}

/// The same array in Fortran layout (its transpose's standard layout, axes reversed back).
fn fortran<T: Clone>(a: &ArrayD<T>) -> ArrayD<T> {
    a.t().as_standard_layout().into_owned().reversed_axes()
}

/// The bytes of `values` as the crate writes them: equality bit for bit, NaN included.
fn bits<T: Serialize + NpyRecord + Sync>(values: &[T]) -> Vec<u8> {
    npy_serde::to_vec(values).unwrap()
}

fn is_fortran<T>(a: &ArrayD<T>) -> bool {
    a.t().is_standard_layout()
}

/// True if storage order differs from logical order (NumPy writes `fortran_order: True`).
fn walks(shape: &[usize]) -> bool {
    shape.iter().filter(|&&d| d > 1).count() > 1 && !shape.contains(&0)
}

fn write_case<T: Gen>(c: &Case, path: &Path) {
    let a = generated::<T>(&c.shape);
    let a = if c.order == 'F' { fortran(&a) } else { a };
    let wb = match c.big {
        true => WriterBuilder::new().byte_order(ByteOrder::Big),
        false => WriterBuilder::new(),
    };
    wb.ndarray_to_path(path, &a).unwrap();
}

fn check_read<T: Gen>(c: &Case, path: &Path) {
    let a: ArrayD<T> = read_npy(path).unwrap_or_else(|e| panic!("{}: {e}", c.name()));
    assert_eq!(a, generated::<T>(&c.shape), "{}", c.name());
    if c.order == 'F' && walks(&c.shape) {
        assert!(is_fortran(&a), "{}: not Fortran layout", c.name());
        assert!(!a.is_standard_layout(), "{}", c.name());
    } else {
        assert!(a.is_standard_layout(), "{}: not C layout", c.name());
    }
    // The fixed-rank type reads the same.
    let bytes = std::fs::read(path).unwrap();
    match c.shape.len() {
        1 => assert_eq!(Array1::<T>::read_npy_slice(&bytes).unwrap().into_dyn(), a),
        2 => assert_eq!(
            Array2::<T>::read_npy(bytes.as_slice()).unwrap().into_dyn(),
            a
        ),
        3 => assert_eq!(read_npy::<_, Array3<T>>(path).unwrap().into_dyn(), a),
        _ => {}
    }
}

/// Runs `f::<T>` for the type of each code.
macro_rules! each_type {
    ($code:expr, $f:ident, $($arg:expr),*) => {
        match $code {
            "b1" => $f::<bool>($($arg),*),
            "i1" => $f::<i8>($($arg),*),
            "i2" => $f::<i16>($($arg),*),
            "i4" => $f::<i32>($($arg),*),
            "i8" => $f::<i64>($($arg),*),
            "u1" => $f::<u8>($($arg),*),
            "u2" => $f::<u16>($($arg),*),
            "u4" => $f::<u32>($($arg),*),
            "u8" => $f::<u64>($($arg),*),
            "f2" => $f::<f16>($($arg),*),
            "f4" => $f::<f32>($($arg),*),
            "f8" => $f::<f64>($($arg),*),
            "c8" => $f::<Complex<f32>>($($arg),*),
            "c16" => $f::<Complex<f64>>($($arg),*),
            "sample" => $f::<Sample>($($arg),*),
            other => panic!("no type for {other}"),
        }
    };
}

const CODES: [&str; 15] = [
    "b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16", "sample",
];

// ---------------------------------------------------------------------------------------------
// Offline.

#[test]
fn every_type_rank_layout_and_byte_order_round_trips() {
    let dir = TempDir::new("nd-roundtrip");
    let mut n = 0;
    for code in CODES {
        for c in cases(code) {
            let path = dir.join(c.name());
            each_type!(code, write_case, &c, &path);
            let h = MmapArray::open(&path).unwrap().header().clone();
            assert_eq!(
                h.fortran_order,
                c.order == 'F' && walks(&c.shape),
                "{}",
                c.name()
            );
            let shape: Vec<u64> = c.shape.iter().map(|&d| d as u64).collect();
            if code != "sample" {
                assert_eq!(h.shape, shape, "{}", c.name());
            }
            each_type!(code, check_read, &c, &path);
            n += 1;
        }
    }
    assert_eq!(n, 14 * 7 * 4 + 7 * 2);
}

#[test]
fn the_write_order_is_np_saves() {
    // Against the crate's C-order writer: C-contiguous and non-contiguous arrays are the
    // logical-order bytes; F-contiguous (and not C) ones the Fortran-order file.
    let a = generated::<i32>(&[4, 3, 2])
        .into_dimensionality::<Ix3>()
        .unwrap();
    let logical = |v: &Array3<i32>| {
        let shape: Vec<u64> = v.shape().iter().map(|&d| d as u64).collect();
        let flat: Vec<i32> = v.iter().copied().collect();
        WriterBuilder::new().shape(shape).to_vec(&flat).unwrap()
    };
    let bytes = |v: &ndarray::ArrayView3<i32>| {
        let mut out = Vec::new();
        v.write_npy(&mut out).unwrap();
        out
    };
    assert_eq!(bytes(&a.view()), logical(&a));
    // Strided, reversed and permuted views: logical order, fortran_order False.
    for v in [
        a.slice(s![..;2, .., ..]),
        a.slice(s![.., ..;-1, ..]),
        a.view().permuted_axes([1, 0, 2]),
        a.slice(s![1..3, .., 1..]),
    ] {
        assert_eq!(bytes(&v), logical(&v.to_owned()), "{v:?}");
    }
    // Fortran-contiguous: the header says so, and the data is the memory.
    let f = a.t().as_standard_layout().into_owned().reversed_axes();
    let out = bytes(&f.view());
    let h = npy_serde::header::parse_header(&out, &Default::default()).unwrap();
    assert!(h.header.fortran_order);
    assert_eq!(h.header.shape, [4, 3, 2]);
    let expected = WriterBuilder::new()
        .shape([4, 3, 2])
        .fortran_order(true)
        .to_vec(&a.iter().copied().collect::<Vec<_>>())
        .unwrap();
    assert_eq!(out, expected);
    // Both C and F contiguous (one long axis): C, as np.save. 1-D reversed: logical order.
    let row = Array2::from_shape_vec((1, 5).f(), vec![1u8, 2, 3, 4, 5]).unwrap();
    let mut out = Vec::new();
    row.write_npy(&mut out).unwrap();
    assert!(
        !npy_serde::header::parse_header(&out, &Default::default())
            .unwrap()
            .header
            .fortran_order
    );
    let v = Array1::from(vec![1u16, 2, 3]);
    let mut out = Vec::new();
    v.slice(s![..;-1]).write_npy(&mut out).unwrap();
    assert_eq!(out, npy_serde::to_vec(&[3u16, 2, 1]).unwrap());
}

#[test]
fn fixtures_read_as_arrays_agree_with_from_path_serde() {
    fn agree<T: Gen>(path: &Path, name: &str) {
        let a: ArrayD<T> = read_npy(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let flat: Vec<T> = npy_serde::from_path_serde(path).unwrap();
        // Bit for bit (NaN included): as written back.
        let got: Vec<T> = a.iter().cloned().collect();
        assert_eq!(bits(&got), bits(&flat), "{name}");
        let h = MmapArray::open(path).unwrap().header().clone();
        let shape: Vec<u64> = a.shape().iter().map(|&d| d as u64).collect();
        assert_eq!(shape, h.shape, "{name}");
        let shape: Vec<usize> = a.shape().to_vec();
        if h.fortran_order && walks(&shape) {
            assert!(is_fortran(&a), "{name}");
        }
    }
    let mut n = 0;
    for e in entries("npy") {
        let descr = e["descr"].as_str().unwrap_or("");
        let code = descr.trim_start_matches(['<', '>', '|', '=']);
        let name = e["name"].as_str().unwrap();
        if !CODES.contains(&code) || code == "sample" {
            continue;
        }
        if e["bool_bytes_invalid"].as_bool() == Some(true) {
            continue;
        }
        each_type!(code, agree, &entry_path(e), name);
        n += 1;
    }
    assert!(n > 30, "only {n} fixtures read");
}

#[test]
fn records_as_arrays() {
    let dir = TempDir::new("nd-records");
    // The W2 fixture (big- and little-endian) into Array1<W2>.
    for name in ["rec_w2_le", "rec_w2_be"] {
        let path = entry_path(npy_serde_tests::entry("npy", name));
        let a: Array1<W2> = read_npy(&path).unwrap();
        let v: Vec<W2> = npy_serde::from_path(&path).unwrap();
        assert_eq!(bits(&a.to_vec()), bits(&v), "{name}");
    }
    let path = entry_path(npy_serde_tests::entry("npy", "rec_w2_2x3"));
    let a: Array2<W2> = read_npy(&path).unwrap();
    assert_eq!(a.dim(), (2, 3));
    let v: Vec<W2> = npy_serde::from_path(&path).unwrap();
    assert_eq!(bits(&a.iter().copied().collect::<Vec<_>>()), bits(&v));
    // Fortran-layout Array2<Sample> written and read back in layout.
    let c = generated::<Sample>(&[3, 2])
        .into_dimensionality::<Ix2>()
        .unwrap();
    let f = c.t().as_standard_layout().into_owned().reversed_axes();
    let path = dir.join("f.npy");
    write_npy(&path, &f).unwrap();
    assert!(MmapArray::open(&path).unwrap().fortran_order());
    let back: Array2<Sample> = read_npy(&path).unwrap();
    assert_eq!(back, c);
    assert!(back.t().is_standard_layout());
}

#[test]
fn subarray_elements_fold_into_the_shape() {
    let a = Array1::from(vec![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let mut out = Vec::new();
    a.write_npy(&mut out).unwrap();
    assert_eq!(out, npy_serde::to_vec(&a.to_vec()).unwrap());
    let b: Array2<f32> = Array2::read_npy_slice(&out).unwrap();
    assert_eq!(b, ndarray::array![[1., 2., 3.], [4., 5., 6.]]);
    // An F-layout array of subarrays is written in C order (NumPy's array would not be
    // F-contiguous over the folded axes).
    let m = Array2::from_shape_vec((2, 2).f(), vec![[1u8, 2], [3, 4], [5, 6], [7, 8]]).unwrap();
    let mut out = Vec::new();
    m.write_npy(&mut out).unwrap();
    let flat: Vec<[u8; 2]> = m.iter().copied().collect();
    let expected = WriterBuilder::new().shape([2, 2, 2]).to_vec(&flat).unwrap();
    assert_eq!(out, expected);
}

#[test]
fn dimension_mismatches_name_both_shapes() {
    let a = generated::<f32>(&[2, 3, 4]);
    let mut bytes = Vec::new();
    a.write_npy(&mut bytes).unwrap();
    let err = Array2::<f32>::read_npy_slice(&bytes).unwrap_err();
    assert_eq!(err.kind().code(), "dimension");
    assert_eq!(
        err.to_string(),
        "expected a 2-D array, the file's shape is (2, 3, 4)"
    );
    let err = Array1::<f32>::read_npy(bytes.as_slice()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a 1-D array, the file's shape is (2, 3, 4)"
    );
    // 0-d and 1-d shapes as NumPy prints them.
    let zero = npy_serde::WriterBuilder::new()
        .shape([])
        .to_vec(&[1.5f64])
        .unwrap();
    let err = Array1::<f64>::read_npy_slice(&zero).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a 1-D array, the file's shape is ()"
    );
    let one = npy_serde::to_vec(&[1u8, 2]).unwrap();
    let err = Array2::<u8>::read_npy_slice(&one).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a 2-D array, the file's shape is (2,)"
    );
    assert_eq!(
        ndarray::Array0::<f64>::read_npy_slice(&zero)
            .unwrap()
            .into_scalar(),
        1.5
    );
    // A type the file's dtype does not convert to is the readers' usual error.
    let err = Array3::<i16>::read_npy_slice(&bytes).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch", "{err}");
    // Views: the same dimension error, before any other check.
    let dir = TempDir::new("nd-dims");
    let path = dir.join("a.npy");
    std::fs::write(&path, &bytes).unwrap();
    let map = MmapArray::open(&path).unwrap();
    let err = map.view::<f32, Ix2>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a 2-D array, the file's shape is (2, 3, 4)"
    );
}

#[test]
fn limits_apply_to_every_door() {
    let a = generated::<f64>(&[64, 64]);
    let mut bytes = Vec::new();
    a.write_npy(&mut bytes).unwrap();
    let dir = TempDir::new("nd-limits");
    let path = dir.join("a.npy");
    std::fs::write(&path, &bytes).unwrap();
    let rb = ReaderBuilder::new().max_data_size(1000);
    let codes = [
        rb.ndarray_from_path::<_, ArrayD<f64>>(&path).unwrap_err(),
        rb.ndarray_from_reader::<_, ArrayD<f64>>(bytes.as_slice())
            .unwrap_err(),
        rb.ndarray_from_slice::<ArrayD<f64>>(&bytes).unwrap_err(),
    ];
    for e in codes {
        assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
        assert!(e.to_string().contains("1000"), "{e}");
    }
    let rb = ReaderBuilder::new().max_dims(1);
    let e = rb.ndarray_from_slice::<ArrayD<f64>>(&bytes).unwrap_err();
    assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
    // A truncated file: the readers' end-of-data error.
    let e = ArrayD::<f64>::read_npy_slice(&bytes[..bytes.len() - 3]).unwrap_err();
    assert_eq!(e.kind().code(), "unexpected_eof", "{e}");
    let e = ArrayD::<f64>::read_npy(&bytes[..bytes.len() - 3]).unwrap_err();
    assert_eq!(e.kind().code(), "unexpected_eof", "{e}");
    // An empty array with axes too long for ndarray: a clear error, no panic.
    let huge = npy_serde::WriterBuilder::new()
        .shape([0, 1 << 62, 1 << 62])
        .to_vec::<u8>(&[])
        .unwrap();
    let e = ArrayD::<u8>::read_npy_slice(&huge).unwrap_err();
    assert!(
        e.to_string()
            .contains("(0, 4611686018427387904, 4611686018427387904)"),
        "{e}"
    );
    // A bool byte other than 0 or 1 is refused, as by the other readers.
    let bad = npy_serde_tests::npy("|b1", &[2, 2], false, &[0, 1, 2, 0]);
    let e = Array2::<bool>::read_npy_slice(&bad).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_value", "{e}");
}

#[test]
fn views_of_maps() {
    let dir = TempDir::new("nd-views");
    let c = generated::<f64>(&[3, 4, 2]);
    let f = fortran(&c);
    let (pc, pf, pb) = (dir.join("c.npy"), dir.join("f.npy"), dir.join("b.npy"));
    write_npy(&pc, &c).unwrap();
    write_npy(&pf, &f).unwrap();
    WriterBuilder::new()
        .byte_order(ByteOrder::Big)
        .ndarray_to_path(&pb, &c)
        .unwrap();
    let mc = MmapArray::open(&pc).unwrap();
    let mf = MmapArray::open(&pf).unwrap();
    let vc = mc.view::<f64, Ix3>().unwrap();
    let vf = mf.view::<f64, IxDyn>().unwrap();
    // The views are the maps' memory.
    assert_eq!(vc.as_ptr().cast::<u8>(), mc.data().as_ptr());
    assert_eq!(vf.as_ptr().cast::<u8>(), mf.data().as_ptr());
    assert_eq!(vc.into_dyn(), c);
    assert_eq!(vf, c);
    assert!(
        vf.t().is_standard_layout(),
        "a Fortran file is a Fortran view"
    );
    // Refusals: the typed views' reasons.
    let mb = MmapArray::open(&pb).unwrap();
    let err = mb.view::<f64, Ix3>().unwrap_err();
    assert!(
        matches!(
            err.kind(),
            npy_serde::ErrorKind::View {
                what: "byte order",
                ..
            }
        ),
        "{err}"
    );
    let err = mc.view::<f32, Ix3>().unwrap_err();
    assert!(
        matches!(err.kind(), npy_serde::ErrorKind::View { what: "dtype", .. }),
        "{err}"
    );
    let err = mc.view::<f16, Ix3>().unwrap_err();
    assert!(
        matches!(err.kind(), npy_serde::ErrorKind::View { what: "type", .. }),
        "{err}"
    );
    // Mutable views write through to the file, in C and Fortran layout.
    for path in [&pc, &pf] {
        let mut m = MmapArrayMut::open_rw(path).unwrap();
        let mut v = m.view_mut::<f64, Ix3>().unwrap();
        v[[2, 3, 1]] = 1e9;
        v.slice_mut(s![0, .., ..]).fill(-1.0);
        m.flush().unwrap();
        drop(m);
        let mut want = c.clone();
        want[[2, 3, 1]] = 1e9;
        want.slice_mut(s![0, .., ..]).fill(-1.0);
        let back: ArrayD<f64> = read_npy(path).unwrap();
        assert_eq!(back, want, "{}", path.display());
    }
    // Records in place (a plain #[repr(C)] record) and 0-d.
    let p0 = dir.join("z.npy");
    npy_serde::WriterBuilder::new()
        .shape([])
        .to_path(&p0, &[7u32])
        .unwrap();
    let m0 = MmapArray::open(&p0).unwrap();
    assert_eq!(m0.view::<u32, ndarray::Ix0>().unwrap()[()], 7);
    let mut created = MmapArrayMut::create::<i16>(dir.join("new.npy"), &[2, 2]).unwrap();
    created.view_mut::<i16, Ix2>().unwrap().fill(3);
    assert_eq!(created.as_slice::<i16>().unwrap(), [3, 3, 3, 3]);
}

#[test]
fn npz_members() {
    let c = generated::<f32>(&[4, 3])
        .into_dimensionality::<Ix2>()
        .unwrap();
    let f = c.t().as_standard_layout().into_owned().reversed_axes();
    let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
    w.add_ndarray("c", &c).unwrap();
    w.add_ndarray("f", &f).unwrap();
    w.add_ndarray("strided", &c.slice(s![..;2, ..])).unwrap();
    w.add_ndarray("rec", &generated::<Sample>(&[2, 2])).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
    let back: Array2<f32> = npz.read_ndarray("c").unwrap();
    assert_eq!(back, c);
    let back: Array2<f32> = npz.read_ndarray("f").unwrap();
    assert_eq!(back, c);
    assert!(back.t().is_standard_layout());
    assert!(npz.header("f").unwrap().header.fortran_order);
    let back: Array2<f32> = npz.read_ndarray("strided").unwrap();
    assert_eq!(back, c.slice(s![..;2, ..]));
    let back: ArrayD<Sample> = npz.read_ndarray("rec").unwrap();
    assert_eq!(back, generated::<Sample>(&[2, 2]));
    let err = npz.read_ndarray::<Array1<f32>>("c").unwrap_err();
    assert_eq!(
        err.to_string(),
        "expected a 1-D array, the file's shape is (4, 3)"
    );
    // The member bytes are those of write_npy.
    let mut want = Vec::new();
    f.write_npy(&mut want).unwrap();
    let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
    assert_eq!(npz.read_raw("f").unwrap(), want);
    // The streaming writer too.
    let mut w = NpzStreamWriter::new(Vec::new());
    w.add_ndarray("f", &f).unwrap();
    let bytes = w.finish().unwrap();
    let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
    assert_eq!(npz.read_ndarray::<Array2<f32>>("f").unwrap(), c);
}

// ---------------------------------------------------------------------------------------------
// Live NumPy.

#[test]
fn numpy_writes_every_case_and_we_read_it() {
    let Some(_) = live_python() else {
        eprintln!("NPY_PYTHON not set: live NumPy test skipped");
        return;
    };
    let dir = TempDir::new("nd-live-read");
    let all: Vec<Case> = CODES.iter().flat_map(|c| cases(c)).collect();
    let list: Vec<String> = all.iter().map(Case::json).collect();
    let spec = dir.join("cases.json");
    std::fs::write(&spec, format!("[{}]", list.join(","))).unwrap();
    let script = format!(
        "{PY_GEN}\n\
         d = sys.argv[2]\n\
         for c in json.load(open(sys.argv[1])):\n    \
             np.save(d + '/' + c['file'], case(c))\n\
         print('saved')\n"
    );
    let out = run_python(&script, &[spec.as_os_str(), dir.path().as_os_str()]);
    assert_eq!(out.trim(), "saved");
    for c in &all {
        let path = dir.join(c.name());
        let h = MmapArray::open(&path).unwrap().header().clone();
        assert_eq!(
            h.fortran_order,
            c.order == 'F' && walks(&c.shape),
            "{}",
            c.name()
        );
        each_type!(c.code, check_read, c, &path);
        // NumPy's own files view in place when native.
        if !c.big && c.code != "sample" && c.code != "f2" && !c.code.starts_with('c') {
            let m = MmapArray::open(&path).unwrap();
            each_type!(c.code, check_view, c, &m);
        }
    }
    assert_eq!(all.len(), 14 * 7 * 4 + 7 * 2);
}

fn check_view<T: Gen>(c: &Case, m: &MmapArray) {
    let v = m
        .view::<T, IxDyn>()
        .unwrap_or_else(|e| panic!("{}: {e}", c.name()));
    assert_eq!(v, generated::<T>(&c.shape), "{}", c.name());
}

/// The Python check of files written here: each must be byte for byte `np.save` of the case's
/// NumPy array and load as it.
const PY_CHECK: &str = r#"
d = sys.argv[2]
bad = []
for c in json.load(open(sys.argv[1])):
    want = case(c)
    buf = io.BytesIO()
    np.save(buf, want)
    got = open(d + '/' + c['file'], 'rb').read()
    if got != buf.getvalue():
        bad.append(c['file'] + ' bytes')
    a = np.load(d + '/' + c['file'])
    if a.dtype != want.dtype or a.shape != want.shape or not np.array_equal(a, want):
        bad.append(c['file'] + ' values')
    if a.flags.f_contiguous != want.flags.f_contiguous:
        bad.append(c['file'] + ' order')
print('ok' if not bad else '\n'.join(bad))
"#;

#[test]
fn we_write_every_case_as_numpy_saves_it() {
    let Some(_) = live_python() else {
        eprintln!("NPY_PYTHON not set: live NumPy test skipped");
        return;
    };
    let dir = TempDir::new("nd-live-write");
    let all: Vec<Case> = CODES.iter().flat_map(|c| cases(c)).collect();
    for c in &all {
        each_type!(c.code, write_case, c, &dir.join(c.name()));
    }
    let list: Vec<String> = all.iter().map(Case::json).collect();
    let spec = dir.join("cases.json");
    std::fs::write(&spec, format!("[{}]", list.join(","))).unwrap();
    let out = run_python(
        &format!("{PY_GEN}\n{PY_CHECK}"),
        &[spec.as_os_str(), dir.path().as_os_str()],
    );
    assert_eq!(out.trim(), "ok");
}

#[test]
fn strided_views_are_written_as_numpy_saves_the_slice() {
    let Some(_) = live_python() else {
        eprintln!("NPY_PYTHON not set: live NumPy test skipped");
        return;
    };
    let dir = TempDir::new("nd-live-strided");
    // (file, code, shape, order, big, slices as Python slice(start, stop, step) arguments)
    let mut specs = Vec::new();
    let mut put = |file: &str, code: &str, shape: &[usize], order: char, big: bool, sl: &str| {
        specs.push(format!(
            r#"{{"file": "{file}", "code": "{code}", "shape": {shape:?}, "order": "{order}", "big": {big}, "slices": {sl}}}"#
        ));
    };
    let a = generated::<f64>(&[6, 4])
        .into_dimensionality::<Ix2>()
        .unwrap();
    // The issue's example: a.slice(s![..;2, ..]) == np.save(a[::2]).
    write_npy(dir.join("rows.npy"), &a.slice(s![..;2, ..])).unwrap();
    put(
        "rows.npy",
        "f8",
        &[6, 4],
        'C',
        false,
        "[[[null, null, 2], [null, null, null]]]",
    );
    write_npy(dir.join("cols.npy"), &a.slice(s![.., 1..;2])).unwrap();
    put(
        "cols.npy",
        "f8",
        &[6, 4],
        'C',
        false,
        "[[[null, null, null], [1, null, 2]]]",
    );
    write_npy(dir.join("rev.npy"), &a.slice(s![..;-1, ..])).unwrap();
    put(
        "rev.npy",
        "f8",
        &[6, 4],
        'C',
        false,
        "[[[null, null, -1], [null, null, null]]]",
    );
    // The transpose of a C array is F-contiguous: fortran_order True, memory order.
    write_npy(dir.join("t.npy"), &a.t()).unwrap();
    let f = fortran(&a.clone().into_dyn())
        .into_dimensionality::<Ix2>()
        .unwrap();
    write_npy(dir.join("f_rows.npy"), &f.slice(s![..;2, ..])).unwrap();
    put(
        "f_rows.npy",
        "f8",
        &[6, 4],
        'F',
        false,
        "[[[null, null, 2], [null, null, null]]]",
    );
    write_npy(dir.join("f_cols.npy"), &f.slice(s![.., 1..3])).unwrap();
    put(
        "f_cols.npy",
        "f8",
        &[6, 4],
        'F',
        false,
        "[[[null, null, null], [1, 3, null]]]",
    );
    let b = generated::<i16>(&[4, 3, 5])
        .into_dimensionality::<Ix3>()
        .unwrap();
    WriterBuilder::new()
        .byte_order(ByteOrder::Big)
        .ndarray_to_path(dir.join("be.npy"), &b.slice(s![..;2, .., 1..;3]))
        .unwrap();
    put(
        "be.npy",
        "i2",
        &[4, 3, 5],
        'C',
        true,
        "[[[null, null, 2], [null, null, null], [1, null, 3]]]",
    );
    let r = generated::<Sample>(&[4, 3])
        .into_dimensionality::<Ix2>()
        .unwrap();
    write_npy(dir.join("rec.npy"), &r.slice(s![1.., ..;2])).unwrap();
    put(
        "rec.npy",
        "sample",
        &[4, 3],
        'C',
        false,
        "[[[1, null, null], [null, null, 2]]]",
    );
    let spec = dir.join("cases.json");
    std::fs::write(&spec, format!("[{}]", specs.join(","))).unwrap();
    let out = run_python(
        &format!(
            "{PY_GEN}\n{PY_CHECK}\n\
             t = np.load(sys.argv[2] + '/t.npy')\n\
             a = gen('f8', 24).reshape(6, 4)\n\
             buf = io.BytesIO(); np.save(buf, a.T)\n\
             print('t', open(sys.argv[2] + '/t.npy', 'rb').read() == buf.getvalue(), \
                   np.array_equal(t, a.T), t.flags.f_contiguous)\n"
        ),
        &[spec.as_os_str(), dir.path().as_os_str()],
    );
    assert_eq!(out.trim(), "ok\nt True True True");
}

#[test]
fn npz_members_both_ways() {
    let Some(_) = live_python() else {
        eprintln!("NPY_PYTHON not set: live NumPy test skipped");
        return;
    };
    let dir = TempDir::new("nd-live-npz");
    let ours = dir.join("ours.npz");
    let c = generated::<i32>(&[3, 4])
        .into_dimensionality::<Ix2>()
        .unwrap();
    let f = fortran(&c.clone().into_dyn());
    let r = generated::<Sample>(&[5])
        .into_dimensionality::<Ix1>()
        .unwrap();
    let mut w = NpzWriter::new_compressed(std::fs::File::create(&ours).unwrap());
    w.add_ndarray("c", &c).unwrap();
    w.add_ndarray("f", &f).unwrap();
    w.add_ndarray("s", &c.slice(s![..;2, ..])).unwrap();
    w.add_ndarray("r", &r).unwrap();
    w.finish().unwrap();
    let theirs = dir.join("theirs.npz");
    let script = format!(
        "{PY_GEN}\n\
         c = gen('i4', 12).reshape(3, 4)\n\
         f = np.asfortranarray(c)\n\
         r = gen('sample', 5)\n\
         z = np.load(sys.argv[1])\n\
         import zipfile\n\
         zf = zipfile.ZipFile(sys.argv[1])\n\
         res = []\n\
         for k, want in [('c', c), ('f', f), ('s', c[::2]), ('r', r)]:\n    \
             buf = io.BytesIO(); np.save(buf, want)\n    \
             res.append(zf.read(k + '.npy') == buf.getvalue() and np.array_equal(z[k], want))\n\
         print(all(res))\n\
         np.savez_compressed(sys.argv[2], c=c, f=f, r=r, big=c.astype('>i4'), d0=np.float64(2.5))\n"
    );
    let out = run_python(&script, &[ours.as_os_str(), theirs.as_os_str()]);
    assert_eq!(out.trim(), "True");
    let mut npz = NpzArchive::open(&theirs).unwrap();
    assert_eq!(npz.read_ndarray::<Array2<i32>>("c").unwrap(), c);
    let back: ArrayD<i32> = npz.read_ndarray("f").unwrap();
    assert_eq!(back, f);
    assert!(is_fortran(&back));
    assert_eq!(npz.read_ndarray::<Array1<Sample>>("r").unwrap(), r);
    assert_eq!(
        npz.read_ndarray::<Array2<i64>>("big").unwrap(),
        c.mapv(i64::from)
    );
    assert_eq!(
        npz.read_ndarray::<ndarray::Array0<f64>>("d0")
            .unwrap()
            .into_scalar(),
        2.5
    );
}

/// `FromNpy` is the trait `read_npy` is generic over: a caller can name it in a bound.
#[test]
fn from_npy_is_usable_in_bounds() {
    fn load<A: FromNpy>(bytes: &[u8]) -> npy_serde::Result<A> {
        A::read_npy_slice(bytes)
    }
    let bytes = npy_serde::to_vec(&[[1u8, 2], [3, 4]]).unwrap();
    let a: Array2<u8> = load(&bytes).unwrap();
    assert_eq!(a, ndarray::array![[1, 2], [3, 4]]);
}

/// A Fortran-order file is read in storage order on the fast tiers (one copy, parallel, exact
/// for the other byte order): no element goes through the element-by-element walk.
#[test]
fn fortran_files_are_read_on_the_fast_tiers() {
    use npy_serde::tier;
    let c = generated::<f64>(&[10, 12, 9]);
    let f = fortran(&c);
    let dir = TempDir::new("nd-tiers");
    for (name, wb) in [
        ("le.npy", WriterBuilder::new()),
        ("be.npy", WriterBuilder::new().byte_order(ByteOrder::Big)),
    ] {
        let path = dir.join(name);
        wb.ndarray_to_path(&path, &f).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        for rb in [
            ReaderBuilder::new(),
            ReaderBuilder::new().parallel_threshold(1),
        ] {
            tier::take();
            let reads = [
                rb.ndarray_from_path::<_, ArrayD<f64>>(&path).unwrap(),
                rb.ndarray_from_slice::<ArrayD<f64>>(&bytes).unwrap(),
                rb.ndarray_from_reader::<_, ArrayD<f64>>(bytes.as_slice())
                    .unwrap(),
            ];
            let served = tier::take();
            assert_eq!(
                (served.exact, served.planned, served.general),
                (3 * 1080, 0, 0),
                "{name}"
            );
            for a in reads {
                assert_eq!(a, c, "{name}");
                assert!(is_fortran(&a), "{name}");
            }
        }
    }
}
