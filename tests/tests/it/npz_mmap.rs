//! Archives mapped in place ([`MmapNpz`]) and aligned archives ([`NpzWriter::align`]): stored
//! members viewed with every door of a mapped `.npy` equal what the copying readers give;
//! compressed members and unaligned typed views are refused with the reason; NumPy reads
//! aligned archives as it reads `np.savez`'s, and mapped members of `np.savez` archives equal
//! `np.load`'s (live, `NPY_PYTHON`).

use std::io::Cursor;

use ndarray::{array, Array2, Ix2};
use npy_serde::npz::{Compression, MmapNpz, NpzArchive, NpzWriter, ALIGNMENT};
use npy_serde::{ErrorKind, NpyRecord};
use npy_serde_tests::{entries, entry_path, live_python, run_python, Sample, TempDir, W2};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

fn samples(n: u32) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            id: i,
            t: f64::from(i) / 4.0,
            xyz: [i as f32, 0.5, -2.0],
            ok: i % 2 == 0,
        })
        .collect()
}

fn w2s(n: i64) -> Vec<W2> {
    (0..n)
        .map(|i| W2 {
            id: i,
            x: i as f64 * 0.5,
            y: -(i as f32),
            flag: (i % 3) as u8,
            v: [1.0, 2.0, i as f32],
        })
        .collect()
}

/// A plain `#[repr(C)]` record that can be viewed in place.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[repr(C)]
struct Pt {
    x: f64,
    y: f64,
}

/// Members of every alignment: a 1-byte name shifts the next member by an odd amount.
fn write_mixed(w: &mut NpzWriter<impl std::io::Write + std::io::Seek>) {
    w.add("a", &[1u8, 2, 3]).unwrap();
    w.add(
        "floats",
        &(0..1000).map(|i| i as f32 * 0.25).collect::<Vec<_>>(),
    )
    .unwrap();
    w.add("pts", &[Pt { x: 1.0, y: 2.0 }, Pt { x: 3.0, y: 4.0 }])
        .unwrap();
    w.add("recs", &w2s(7)).unwrap();
    w.add("samples", &samples(5)).unwrap();
    w.add_ndarray("grid", &array![[1i64, 2, 3], [4, 5, 6]])
        .unwrap();
    w.set_compression(Compression::Deflate);
    w.add("packed", &[9.0f64; 100]).unwrap();
    w.set_compression(Compression::Stored);
    let mut r = w.start_records::<u16>("streamed", 50).unwrap();
    for i in 0..50u16 {
        r.write_serde(&i).unwrap();
    }
    r.finish().unwrap();
    w.add_raw("notes.txt", b"hello").unwrap();
}

fn write_file(path: &std::path::Path, align: bool) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = NpzWriter::new(std::io::BufWriter::new(file)).align(align);
    write_mixed(&mut w);
    let mut out = w.finish().unwrap();
    std::io::Write::flush(&mut out).unwrap();
}

#[test]
fn aligned_stored_members_are_viewed_in_place_with_every_door() {
    let dir = TempDir::new("npz-mmap-aligned");
    let path = dir.join("a.npz");
    write_file(&path, true);
    let npz = MmapNpz::open(&path).unwrap();
    assert_eq!(
        npz.keys().collect::<Vec<_>>(),
        [
            "a",
            "floats",
            "pts",
            "recs",
            "samples",
            "grid",
            "packed",
            "streamed",
            "notes.txt"
        ]
    );
    for m in npz.members() {
        if m.compression == Compression::Stored && m.name.ends_with(".npy") {
            let off = npz.data_offset(&m.key).unwrap();
            assert_eq!(off % ALIGNMENT, 0, "{}: {off}", m.name);
        }
    }
    // Typed slices, in place: the slice points into the archive's bytes.
    let floats = npz.array("floats").unwrap();
    let f: &[f32] = floats.as_slice().unwrap();
    assert_eq!(f.len(), 1000);
    assert_eq!(f[999], 999.0 * 0.25);
    let whole = npz.as_bytes().as_ptr_range();
    assert!(whole.contains(&f.as_ptr().cast::<u8>()));
    let pts = npz.array("pts").unwrap();
    assert_eq!(
        pts.as_slice::<Pt>().unwrap(),
        [Pt { x: 1.0, y: 2.0 }, Pt { x: 3.0, y: 4.0 }]
    );
    // ndarray views.
    let grid = npz.array("grid").unwrap();
    assert_eq!(
        grid.view::<i64, Ix2>().unwrap(),
        array![[1i64, 2, 3], [4, 5, 6]]
    );
    // Records on the exact tier, one record, and the collecting doors.
    let recs = npz.array("recs").unwrap();
    let all: Vec<W2> = recs.records::<W2>().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(all, w2s(7));
    assert_eq!(recs.to_vec::<W2>().unwrap(), w2s(7));
    assert_eq!(recs.record_serde::<W2>(3).unwrap(), w2s(7)[3]);
    let s = npz.array("samples").unwrap();
    assert_eq!(s.to_vec_serde::<Sample>().unwrap(), samples(5));
    assert_eq!(s.records_serde::<Sample>().unwrap().count(), 5);
    let streamed = npz.array("streamed").unwrap();
    assert_eq!(streamed.as_slice::<u16>().unwrap()[49], 49);
    // The bytes of any stored member, a non-.npy one too.
    assert_eq!(npz.stored_bytes("notes.txt").unwrap(), b"hello");
    // Each mapped member equals what the copying reader reads.
    let mut copy = npz.archive().unwrap();
    for key in ["a", "floats", "pts", "recs", "samples", "grid", "streamed"] {
        assert_eq!(
            npz.array(key).unwrap().to_array().unwrap(),
            copy.read_array(key).unwrap(),
            "{key}"
        );
        npz.verify(key).unwrap();
    }
    // The arrays share the map and outlive the archive value.
    drop(npz);
    assert_eq!(floats.as_slice::<f32>().unwrap()[4], 1.0);
}

#[test]
fn compressed_and_unaligned_members_are_refused_with_the_reason() {
    let dir = TempDir::new("npz-mmap-refused");
    let path = dir.join("u.npz");
    write_file(&path, false);
    let npz = MmapNpz::open(&path).unwrap();

    let e = npz.array("packed").unwrap_err();
    assert_eq!(e.kind().code(), "zip", "{e}");
    assert!(e.to_string().contains("deflate"), "{e}");
    assert!(e.to_string().contains("packed.npy"), "{e}");
    // The copying fallback reads it from the same map.
    assert_eq!(
        npz.archive()
            .unwrap()
            .deserialize::<Vec<f64>>("packed")
            .unwrap(),
        vec![9.0; 100]
    );
    assert!(npz
        .array("nope")
        .unwrap_err()
        .to_string()
        .contains("no member"));
    assert!(npz.array("notes.txt").is_err());

    // Without alignment some member lands on an offset no f64 view can take; which one is
    // refused, with the member named and what to do.
    let mut refused = 0;
    for key in ["floats", "pts", "grid"] {
        let arr = npz.array(key).unwrap();
        let off = npz.data_offset(key).unwrap();
        let viewed = match key {
            "floats" => arr.as_slice::<f32>().map(|_| ()),
            "pts" => arr.as_slice::<Pt>().map(|_| ()),
            _ => arr.view::<i64, Ix2>().map(|_| ()),
        };
        let align = if key == "floats" { 4 } else { 8 };
        match viewed {
            Ok(()) => assert_eq!(off % align, 0, "{key}"),
            Err(e) => {
                refused += 1;
                assert_ne!(off % align, 0, "{key}: {e}");
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::View {
                            what: "alignment",
                            ..
                        }
                    ),
                    "{e}"
                );
                let msg = e.to_string();
                assert!(msg.contains(&format!("{key}.npy")), "{msg}");
                assert!(msg.contains("align(true)"), "{msg}");
                // The copying doors still read it.
                assert!(!arr.to_array().unwrap().values.is_empty());
            }
        }
    }
    // "a.npy" holds 3 bytes, so with 64-byte headers the following members are misaligned
    // for 8-byte types unless by chance.
    assert!(
        refused >= 1,
        "no member was misaligned: the test lost its point"
    );
    let grid = npz.array("grid").unwrap();
    assert_eq!(
        grid.to_vec_serde::<i64>().unwrap(),
        [1, 2, 3, 4, 5, 6],
        "the copying doors work whatever the alignment"
    );
}

#[test]
fn aligned_archives_differ_from_numpy_only_in_the_padding() {
    // Unaligned (the default): the first local header is np.savez's, no extra padding.
    let plain = {
        let mut w = NpzWriter::new(Cursor::new(Vec::new()));
        w.add("a", &[0i32, 1, 2]).unwrap();
        w.add("b", &[0.5f64; 3]).unwrap();
        w.finish().unwrap().into_inner()
    };
    let aligned = {
        let mut w = NpzWriter::new(Cursor::new(Vec::new())).align(true);
        w.add("a", &[0i32, 1, 2]).unwrap();
        w.add("b", &[0.5f64; 3]).unwrap();
        w.finish().unwrap().into_inner()
    };
    assert!(aligned.len() > plain.len());
    for bytes in [&plain, &aligned] {
        let mut npz = NpzArchive::from_bytes(bytes).unwrap();
        assert_eq!(npz.deserialize::<Vec<i32>>("a").unwrap(), [0, 1, 2]);
        assert_eq!(npz.deserialize::<Vec<f64>>("b").unwrap(), [0.5; 3]);
    }
    // The padding field is Android zipalign's (0xd935) after NumPy's zip64 field.
    let extra_len = u16::from_le_bytes([aligned[28], aligned[29]]) as usize;
    let extra = &aligned[30 + 5..30 + 5 + extra_len];
    assert_eq!(&extra[..4], &[1, 0, 16, 0]);
    assert_eq!(&extra[20..22], &0xd935u16.to_le_bytes());
    assert_eq!((30 + 5 + extra_len) % 64, 0);
    // Deflated members are not padded.
    let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new())).align(true);
    w.add("a", &[0i32, 1, 2]).unwrap();
    let deflated = w.finish().unwrap().into_inner();
    assert_eq!(u16::from_le_bytes([deflated[28], deflated[29]]), 20);
}

#[test]
fn numpy_written_fixtures_map_like_they_read() {
    for e in entries("npz") {
        let path = entry_path(e);
        let npz = MmapNpz::open(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let mut copy = NpzArchive::open(&path).unwrap();
        for m in npz.members() {
            match npz.array(&m.key) {
                // Compared as text: NaN values are not equal to themselves.
                Ok(arr) => assert_eq!(
                    format!("{:?}", arr.to_array().unwrap()),
                    format!("{:?}", copy.read_array(&m.key).unwrap()),
                    "{}: {}",
                    path.display(),
                    m.name
                ),
                Err(err) => assert!(
                    m.compression != Compression::Stored || !m.name.ends_with(".npy"),
                    "{}: {}: {err}",
                    path.display(),
                    m.name
                ),
            }
        }
    }
}

/// `np.load` of every array member: `{key: tolist()}`; non-array members as hex.
const LOAD_ALL: &str = r#"
import json, sys
import numpy as np
with np.load(sys.argv[1], allow_pickle=False) as z:
    out = {k: (z[k].hex() if isinstance(z[k], bytes) else z[k].tolist()) for k in z.files}
print(json.dumps(out, default=lambda o: o.tolist()))
"#;

#[test]
fn numpy_reads_aligned_archives_and_mapped_savez_members_equal_np_load() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy test");
        return;
    }
    let dir = TempDir::new("npz-mmap-live");
    let aligned = dir.join("aligned.npz");
    let plain = dir.join("plain.npz");
    write_file(&aligned, true);
    write_file(&plain, false);
    let a: Json =
        serde_json::from_str(run_python(LOAD_ALL, &[aligned.as_os_str()]).trim()).unwrap();
    let p: Json = serde_json::from_str(run_python(LOAD_ALL, &[plain.as_os_str()]).trim()).unwrap();
    assert_eq!(a, p, "NumPy reads the aligned archive as the unaligned one");
    assert_eq!(a["floats"][999], json!(249.75));
    assert_eq!(a["grid"], json!([[1, 2, 3], [4, 5, 6]]));
    assert_eq!(a["notes.txt"], json!("68656c6c6f"));

    // np.savez's archives: each stored member mapped equals np.load's values.
    let saved = dir.join("np.npz");
    run_python(
        r#"
import sys, numpy as np
np.savez(sys.argv[1], a=np.arange(5, dtype="<f4") / 2, b=np.arange(6, dtype="<i8").reshape(2, 3),
         c=np.array([1, 2, 3], dtype="u1"), d=np.asfortranarray(np.arange(6.0).reshape(2, 3)))
"#,
        &[saved.as_os_str()],
    );
    let loaded: Json =
        serde_json::from_str(run_python(LOAD_ALL, &[saved.as_os_str()]).trim()).unwrap();
    let npz = MmapNpz::open(&saved).unwrap();
    let a = npz.array("a").unwrap();
    assert_eq!(
        serde_json::to_value(a.to_vec::<f32>().unwrap()).unwrap(),
        loaded["a"]
    );
    let b = npz.array("b").unwrap();
    let b: Array2<i64> = match b.view::<i64, Ix2>() {
        Ok(v) => v.to_owned(),
        Err(_) => Array2::from_shape_vec((2, 3), b.to_vec_serde::<i64>().unwrap()).unwrap(),
    };
    assert_eq!(
        serde_json::to_value(b.outer_iter().map(|r| r.to_vec()).collect::<Vec<_>>()).unwrap(),
        loaded["b"]
    );
    assert_eq!(
        serde_json::to_value(npz.array("c").unwrap().as_slice::<u8>().unwrap()).unwrap(),
        loaded["c"]
    );
    let d: Vec<Vec<f64>> = npz.array("d").unwrap().deserialize().unwrap();
    assert_eq!(serde_json::to_value(d).unwrap(), loaded["d"]);
}

/// `verify` checks a stored member's CRC-32 over its bytes in the map and a deflated one's
/// through the zip reader: intact members pass, a flipped bit fails naming the member.
#[test]
fn verify_finds_a_corrupt_member_stored_or_deflated() {
    let dir = TempDir::new("npz-mmap-verify");
    let xs: Vec<f64> = (0..5000).map(|i| i as f64 * 0.25).collect();
    for compressed in [false, true] {
        let path = dir.join(format!("v{compressed}.npz"));
        let file = std::fs::File::create(&path).unwrap();
        let mut w = if compressed {
            NpzWriter::new_compressed(file)
        } else {
            NpzWriter::new(file).align(true)
        };
        w.add("a", &[1u8, 2, 3]).unwrap();
        w.add("x", &xs).unwrap();
        w.finish().unwrap();
        let npz = MmapNpz::open(&path).unwrap();
        npz.verify("a").unwrap();
        npz.verify("x").unwrap();
        drop(npz);
        let mut bytes = std::fs::read(&path).unwrap();
        // A bit of `x`'s stored bytes, well inside its data (`a` is first and small).
        let at = bytes.len() / 2;
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let npz = MmapNpz::open(&path).unwrap();
        npz.verify("a").unwrap();
        let e = npz.verify("x").unwrap_err().to_string();
        // A flipped bit in deflated data may break the stream before the CRC is compared.
        let named = e.contains("CRC-32") || (compressed && e.contains("corrupt"));
        assert!(named && e.contains("x.npy"), "{compressed}: {e}");
    }
}
