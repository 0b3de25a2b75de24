//! scipy.sparse archives (feature `sprs`): every format `scipy.sparse.save_npz` writes
//! (fixtures made by scipy, `tests/fixtures/sparse/`) reads into `sprs` matrices equal to
//! scipy's `toarray()`; CSR, CSC and triplet matrices written here read back, and
//! `scipy.sparse.load_npz` reads them (live, `NPY_PYTHON`); malformed archives are clear errors.

use std::io::Cursor;

use npy_serde::npz::{NpzArchive, NpzWriter, SparseMatrix};
use npy_serde::{Array, Value};
use npy_serde_tests::{fixtures_dir, live_python, run_python, TempDir};
use num_complex::Complex;
use serde_json::{json, Value as Json};
use sprs::{CsMat, TriMat};

fn sparse_manifest() -> Json {
    let text = std::fs::read_to_string(fixtures_dir().join("sparse/manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The dense form of a matrix, row-major.
fn dense<N: Clone + Default + std::ops::Add<Output = N>>(m: SparseMatrix<N>) -> Vec<Vec<N>> {
    let (rows, cols) = m.shape();
    let csr = m.into_csr();
    let mut out = vec![vec![N::default(); cols]; rows];
    for (v, (r, c)) in csr.iter() {
        out[r][c] = out[r][c].clone() + v.clone();
    }
    out
}

#[test]
fn every_format_scipy_writes_reads_as_scipy_toarray() {
    let manifest = sparse_manifest();
    let entries = manifest["sparse"].as_array().unwrap();
    assert!(entries.len() >= 20);
    let mut formats = std::collections::BTreeSet::new();
    for e in entries {
        let name = e["name"].as_str().unwrap();
        let path = fixtures_dir().join(e["file"].as_str().unwrap());
        let mut npz = NpzArchive::open(&path).unwrap();
        let format = e["format"].as_str().unwrap();
        formats.insert(format);
        if e["dtype"].as_str().unwrap().starts_with("complex") {
            let m = npz.load_sparse::<Complex<f64>>().unwrap();
            let got: Vec<Vec<[f64; 2]>> = dense(m)
                .into_iter()
                .map(|r| r.into_iter().map(|c| [c.re, c.im]).collect())
                .collect();
            assert_eq!(serde_json::to_value(got).unwrap(), e["dense"], "{name}");
            continue;
        }
        // The values in their own dtype (serde does not turn integers into floats), as f64.
        macro_rules! as_f64 {
            ($($dt:literal => $t:ty),*) => {
                match e["dtype"].as_str().unwrap() {
                    $($dt => {
                        let m = npz.load_sparse::<$t>().unwrap();
                        let (rows, cols) = m.shape();
                        let variant = match &m {
                            SparseMatrix::Csr(_) => "csr",
                            SparseMatrix::Csc(_) => "csc",
                            SparseMatrix::Coo(_) => "coo",
                        };
                        let d: Vec<Vec<f64>> = dense(m)
                            .into_iter()
                            .map(|r| r.into_iter().map(|v| v as f64).collect())
                            .collect();
                        (variant, (rows, cols), d)
                    })*
                    other => panic!("{name}: dtype {other}"),
                }
            };
        }
        let (variant, shape, got) = as_f64!(
            "float64" => f64, "float32" => f32, "int64" => i64, "int32" => i32,
            "int16" => i16, "uint8" => u8, "uint64" => u64
        );
        let want_variant = match format {
            "csr" | "bsr" => "csr",
            "csc" => "csc",
            _ => "coo",
        };
        assert_eq!(variant, want_variant, "{name}");
        assert_eq!(
            json!(shape),
            json!([e["shape"][0], e["shape"][1]]),
            "{name}"
        );
        let want: Vec<Vec<f64>> = serde_json::from_value(e["dense"].clone()).unwrap();
        assert_eq!(got, want, "{name}");
    }
    assert_eq!(
        formats.into_iter().collect::<Vec<_>>(),
        ["bsr", "coo", "csc", "csr", "dia"]
    );
    // Typed values: the archive's own dtype.
    let open = |n: &str| NpzArchive::open(fixtures_dir().join(format!("sparse/{n}.npz"))).unwrap();
    let m = open("csr_f4").load_sparse::<f32>().unwrap().into_csr();
    assert_eq!(m.get(2, 3), Some(&-4.0f32));
    let m = open("csr_u8").load_sparse::<u64>().unwrap().into_csr();
    assert_eq!(m.get(3, 2), Some(&6u64));
    let m = open("bsr_1x3_i4").load_sparse::<i32>().unwrap().into_csc();
    assert_eq!(m.get(2, 5), Some(&5i32));
    // Duplicates are summed, as scipy's toarray does; canonical CSR out.
    let m = open("csr_unsorted_dup")
        .load_sparse::<f64>()
        .unwrap()
        .into_csr();
    assert_eq!(m.get(0, 4), Some(&1.5));
    assert_eq!(m.indices()[..2], [1, 4]);
}

fn write(f: impl FnOnce(&mut NpzWriter<Cursor<Vec<u8>>>)) -> Vec<u8> {
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    f(&mut w);
    w.finish().unwrap().into_inner()
}

fn sample_tri() -> TriMat<f64> {
    let mut t = TriMat::new((3, 5));
    t.add_triplet(0, 4, 1.5);
    t.add_triplet(2, 0, -2.0);
    t.add_triplet(1, 1, 3.0);
    t.add_triplet(2, 0, 0.5); // a duplicate, summed
    t
}

#[test]
fn written_matrices_read_back() {
    let csr: CsMat<f64> = sample_tri().to_csr();
    let csc: CsMat<f64> = sample_tri().to_csc();
    for m in [&csr, &csc] {
        let bytes = write(|w| w.save_sparse(m).unwrap());
        let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
        assert_eq!(
            npz.keys().collect::<Vec<_>>(),
            ["indices", "indptr", "format", "shape", "data"]
        );
        assert_eq!(npz.header("indices").unwrap().header.dtype.descr(), "'<i4'");
        let back = npz.load_sparse::<f64>().unwrap();
        assert_eq!(matches!(back, SparseMatrix::Csr(_)), m.is_csr());
        assert_eq!(back.into_csr(), csr);
    }
    let bytes = write(|w| w.save_sparse_triplets(&sample_tri()).unwrap());
    let back = NpzArchive::from_bytes(&bytes)
        .unwrap()
        .load_sparse::<f64>()
        .unwrap();
    assert_eq!(back.into_csr(), csr);
    // Other value and index types: complex values, i64 matrix indices.
    let c: CsMat<Complex<f32>> = CsMat::new(
        (2, 2),
        vec![0, 1, 2],
        vec![1, 0],
        vec![Complex::new(1.0, -1.0), Complex::new(0.0, 2.0)],
    );
    let bytes = write(|w| w.save_sparse(&c).unwrap());
    let back = NpzArchive::from_bytes(&bytes)
        .unwrap()
        .load_sparse::<Complex<f32>>()
        .unwrap();
    assert_eq!(back.into_csr(), c);
    let wide: sprs::CsMatI<i64, i64> =
        sprs::CsMatI::new((2, 3), vec![0i64, 1, 1], vec![2i64], vec![7i64]);
    let bytes = write(|w| w.save_sparse(&wide).unwrap());
    let back = NpzArchive::from_bytes(&bytes)
        .unwrap()
        .load_sparse::<i64>()
        .unwrap()
        .into_csr();
    assert_eq!(back.get(0, 2), Some(&7));
}

/// An archive with scipy's members as given: `format`, `shape`, and `(key, values)` index
/// arrays, `data` of `data_shape`.
fn archive(
    format: &str,
    shape: [i64; 2],
    index: &[(&str, &[i64])],
    data: &[f64],
    data_shape: &[u64],
) -> Vec<u8> {
    write(|w| {
        w.add_array(
            "format",
            &Array {
                dtype: "|S3".parse().unwrap(),
                shape: vec![],
                fortran_order: false,
                values: vec![Value::Bytes(format.as_bytes().to_vec())],
            },
        )
        .unwrap();
        w.add("shape", &shape).unwrap();
        for (k, v) in index {
            w.add(k, v).unwrap();
        }
        let opts = npy_serde::WriterBuilder::new().shape(data_shape.to_vec());
        w.add_with("data", &opts, data).unwrap();
    })
}

#[track_caller]
fn refused(bytes: &[u8], needles: &[&str]) {
    let err = NpzArchive::from_bytes(bytes)
        .unwrap()
        .load_sparse::<f64>()
        .unwrap_err();
    let msg = err.to_string();
    for n in needles {
        assert!(msg.contains(n), "{msg:?} should mention {n:?}");
    }
}

#[test]
fn malformed_archives_are_clear_errors() {
    let d3: &[f64] = &[1.0, 2.0, 3.0];
    let csr = |indptr: &[i64], indices: &[i64], shape: [i64; 2], data: &[f64]| {
        archive(
            "csr",
            shape,
            &[("indptr", indptr), ("indices", indices)],
            data,
            &[data.len() as u64],
        )
    };
    // The well-formed one reads.
    let ok = csr(&[0, 1, 3], &[0, 1, 2], [2, 3], d3);
    assert!(NpzArchive::from_bytes(&ok)
        .unwrap()
        .load_sparse::<f64>()
        .is_ok());
    refused(
        &csr(&[0, 2, 1, 3], &[0, 1, 2], [3, 3], d3),
        &["csr", "indptr is not monotone", "indptr[1] = 2"],
    );
    refused(
        &csr(&[1, 1, 3], &[0, 1, 2], [2, 3], d3),
        &["indptr starts at 1"],
    );
    refused(
        &csr(&[0, 1, 2], &[0, 1, 2], [2, 3], d3),
        &["indptr ends at 2", "3 stored"],
    );
    refused(
        &csr(&[0, 1, 3], &[0, 1, 3], [2, 3], d3),
        &["indices[2] = 3", "column index"],
    );
    refused(
        &csr(&[0, 1, 3], &[0, -1, 2], [2, 3], d3),
        &["indices[1] = -1"],
    );
    refused(
        &csr(&[0, 1, 3], &[0, 1], [2, 3], d3),
        &["2 indices but 3 values"],
    );
    // Shape mismatch: indptr for 2 rows, shape says 4.
    refused(
        &csr(&[0, 1, 3], &[0, 1, 2], [4, 3], d3),
        &["indptr has 3 entries", "needs 5"],
    );
    refused(&csr(&[0, 1, 3], &[0, 1, 2], [2, -3], d3), &["negative"]);
    // coo.
    let coo = |row: &[i64], col: &[i64], shape: [i64; 2]| {
        archive("coo", shape, &[("row", row), ("col", col)], d3, &[3])
    };
    refused(
        &coo(&[0, 1, 2], &[0, 1, 5], [3, 3]),
        &["column index 5", "outside the 3"],
    );
    refused(
        &coo(&[0, 1], &[0, 1, 2], [3, 3]),
        &["2 row and 3 column indices for 3 values"],
    );
    // bsr: blocks that do not tile the matrix, block counts.
    let six: Vec<f64> = (0..6).map(f64::from).collect();
    let bsr = |shape: [i64; 2], indptr: &[i64], indices: &[i64], data_shape: &[u64]| {
        archive(
            "bsr",
            shape,
            &[("indptr", indptr), ("indices", indices)],
            &six,
            data_shape,
        )
    };
    let one_block = bsr([2, 6], &[0, 1], &[1], &[1, 2, 3]);
    let m = NpzArchive::from_bytes(&one_block)
        .unwrap()
        .load_sparse::<f64>()
        .unwrap()
        .into_csr();
    assert_eq!(
        (m.get(0, 3), m.get(1, 5), m.nnz()),
        (Some(&0.0), Some(&5.0), 6)
    );
    refused(
        &bsr([2, 5], &[0, 2], &[0, 1], &[2, 1, 3]),
        &["bsr", "do not tile"],
    );
    refused(
        &bsr([2, 6], &[0, 1], &[0], &[2, 1, 3]),
        &["1 block indices for 2 blocks"],
    );
    refused(
        &bsr([2, 6], &[0, 2], &[0, 2], &[6]),
        &["not (blocks, R, C)"],
    );
    // dia.
    let dia = archive("dia", [3, 3], &[("offsets", &[0, 1])], &six, &[3, 2]);
    refused(&dia, &["dia", "2 offsets for 3 diagonals"]);
    // Not a sparse archive, unknown formats, N-d shapes.
    let plain = write(|w| w.add("a", &[1u8]).unwrap());
    refused(&plain, &["not a scipy.sparse archive", "format"]);
    refused(
        &archive("lil", [2, 2], &[], d3, &[3]),
        &["lil", "unknown sparse format"],
    );
    let nd = write(|w| {
        w.add_array(
            "format",
            &Array {
                dtype: "|S3".parse().unwrap(),
                shape: vec![],
                fortran_order: false,
                values: vec![Value::Bytes(b"coo".to_vec())],
            },
        )
        .unwrap();
        w.add("shape", &[2i64, 2, 2]).unwrap();
        w.add("data", d3).unwrap();
    });
    refused(&nd, &["only 2-D"]);
    // A missing member is named.
    refused(
        &archive("csr", [2, 3], &[("indptr", &[0, 1, 3])], d3, &[3]),
        &["indices"],
    );
}

#[test]
fn scipy_reads_what_we_write() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live scipy test");
        return;
    }
    let dir = TempDir::new("sparse-live");
    let csr: CsMat<f64> = sample_tri().to_csr();
    let csc: CsMat<f64> = sample_tri().to_csc();
    let c: CsMat<Complex<f64>> =
        CsMat::new((1, 2), vec![0, 1], vec![1], vec![Complex::new(1.0, 2.0)]);
    let ints: CsMat<i32> = CsMat::new((2, 2), vec![0, 1, 1], vec![0], vec![-7]);
    let save = |name: &str, compressed: bool, f: &dyn Fn(&mut NpzWriter<std::fs::File>)| {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        let mut w = NpzWriter::new(file);
        if compressed {
            w.set_compression(npy_serde::npz::Compression::Deflate);
        }
        f(&mut w);
        w.finish().unwrap();
        path
    };
    let paths = [
        save("csr.npz", true, &|w| w.save_sparse(&csr).unwrap()),
        save("csc.npz", false, &|w| w.save_sparse(&csc).unwrap()),
        save("coo.npz", true, &|w| {
            w.save_sparse_triplets(&sample_tri()).unwrap()
        }),
        save("c.npz", false, &|w| w.save_sparse(&c).unwrap()),
        save("ints.npz", false, &|w| w.save_sparse(&ints).unwrap()),
    ];
    let args: Vec<&std::ffi::OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    let out = run_python(
        r#"
import json, sys
import scipy.sparse as sp
out = []
for p in sys.argv[1:]:
    m = sp.load_npz(p)
    a = m.toarray()
    vals = [[[v.real, v.imag] for v in r] for r in a.tolist()] if a.dtype.kind == "c" else a.tolist()
    idx = str((m.indices if m.format in ("csr", "csc") else m.row).dtype)
    out.append({"format": m.format, "dtype": str(m.dtype), "index": idx, "dense": vals})
print(json.dumps(out))
"#,
        &args,
    );
    let got: Json = serde_json::from_str(out.trim()).unwrap();
    let want_dense = json!([
        [0.0, 0.0, 0.0, 0.0, 1.5],
        [0.0, 3.0, 0.0, 0.0, 0.0],
        [-1.5, 0.0, 0.0, 0.0, 0.0]
    ]);
    for (i, fmt) in ["csr", "csc", "coo"].iter().enumerate() {
        assert_eq!(got[i]["format"], *fmt);
        assert_eq!(got[i]["dtype"], "float64");
        assert_eq!(got[i]["index"], "int32");
        assert_eq!(got[i]["dense"], want_dense, "{fmt}");
    }
    assert_eq!(got[3]["dtype"], "complex128");
    assert_eq!(got[3]["dense"], json!([[[0.0, 0.0], [1.0, 2.0]]]));
    assert_eq!(got[4]["dtype"], "int32");
    assert_eq!(got[4]["dense"], json!([[-7, 0], [0, 0]]));
}
