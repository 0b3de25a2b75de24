//! Live interop with NumPy (needs `NPY_PYTHON`, see `npy_serde_tests::live_python`): archives
//! we write load in `np.load` with the same keys, dtypes and values; archives `np.savez`,
//! `np.savez_compressed` and `np.savez` to a non-seekable stream write read back here.

use std::io::Cursor;

use npy_serde::npz::{Compression, NpzArchive, NpzStreamWriter, NpzWriter};
use npy_serde::{Array, Value};
use npy_serde_tests::{live_python, run_python, Sample, TempDir};
use serde_json::{json, Value as Json};

/// `np.load` of the archive: `{"files": [...], "members": {key: {...}}}` with each array's
/// header descr (as NumPy writes it), shape and `tolist()` values, and raw members as hex.
const LOAD: &str = r#"
import json, sys
import numpy as np
from numpy.lib import format as npf
out = {"files": [], "members": {}}
with np.load(sys.argv[1], allow_pickle=False) as z:
    out["files"] = list(z.files)
    for k in z.files:
        a = z[k]
        if isinstance(a, bytes):
            out["members"][k] = {"bytes": a.hex()}
        else:
            out["members"][k] = {
                "descr": repr(npf.dtype_to_descr(a.dtype)),
                "shape": list(a.shape),
                "fortran": bool(a.flags.f_contiguous and not a.flags.c_contiguous),
                "values": a.tolist(),
            }
print(json.dumps(out, default=lambda o: o.tolist()))
"#;

fn np_load(path: &std::path::Path) -> Json {
    let out = run_python(LOAD, &[path.as_os_str()]);
    serde_json::from_str(out.trim()).unwrap()
}

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

fn samples_json(n: u32) -> Json {
    Json::Array(
        samples(n)
            .iter()
            .map(|s| json!([s.id, s.t, s.xyz, s.ok]))
            .collect(),
    )
}

macro_rules! write_for_numpy {
    ($w:expr) => {{
        let w = &mut $w;
        w.add("ints", &[1i64, -2, 3]).unwrap();
        w.add("samples", &samples(4)).unwrap();
        w.set_compression(Compression::Deflate);
        w.add("données", &[[1.5f32, 2.5], [3.5, 4.5]]).unwrap();
        w.add_positional(&[true, false, true]).unwrap();
        let text = Array {
            dtype: "<U4".parse().unwrap(),
            shape: vec![2],
            fortran_order: false,
            values: vec![Value::String("αβ".into()), Value::String("text".into())],
        };
        w.add_positional_array(&text).unwrap();
        let mut r = w.start_records::<u16>("big", 100_000).unwrap();
        for i in 0..100_000u32 {
            r.write_serde(&((i % 65_536) as u16)).unwrap();
        }
        r.finish().unwrap();
        w.set_compression(Compression::Stored);
        w.add_raw("notes.txt", b"hello numpy").unwrap();
    }};
}

fn check_numpy_view(loaded: &Json) {
    assert_eq!(
        loaded["files"],
        json!([
            "ints",
            "samples",
            "données",
            "arr_0",
            "arr_1",
            "big",
            "notes.txt"
        ])
    );
    let m = &loaded["members"];
    assert_eq!(m["ints"]["descr"], "'<i8'");
    assert_eq!(m["ints"]["values"], json!([1, -2, 3]));
    assert_eq!(
        m["samples"]["descr"],
        "[('id', '<u4'), ('t', '<f8'), ('xyz', '<f4', (3,)), ('ok', '|b1')]"
    );
    assert_eq!(m["samples"]["values"], samples_json(4));
    assert_eq!(m["données"]["descr"], "'<f4'");
    assert_eq!(m["données"]["shape"], json!([2, 2]));
    assert_eq!(m["données"]["values"], json!([[1.5, 2.5], [3.5, 4.5]]));
    assert_eq!(m["arr_0"]["descr"], "'|b1'");
    assert_eq!(m["arr_0"]["values"], json!([true, false, true]));
    assert_eq!(m["arr_1"]["descr"], "'<U4'");
    assert_eq!(m["arr_1"]["values"], json!(["αβ", "text"]));
    assert_eq!(m["big"]["descr"], "'<u2'");
    let big = m["big"]["values"].as_array().unwrap();
    assert_eq!(big.len(), 100_000);
    assert!(big
        .iter()
        .enumerate()
        .all(|(i, v)| v.as_u64() == Some((i % 65_536) as u64)));
    assert_eq!(m["notes.txt"]["bytes"], "68656c6c6f206e756d7079");
}

#[test]
fn numpy_loads_what_we_write() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy test");
        return;
    }
    let dir = TempDir::new("npz-write");

    let seekable = dir.join("seekable.npz");
    let mut w = NpzWriter::new(std::fs::File::create(&seekable).unwrap());
    write_for_numpy!(w);
    w.finish().unwrap();
    check_numpy_view(&np_load(&seekable));

    let streamed = dir.join("streamed.npz");
    let mut out = Vec::new();
    let mut w = NpzStreamWriter::new(&mut out);
    write_for_numpy!(w);
    w.finish().unwrap();
    std::fs::write(&streamed, &out).unwrap();
    check_numpy_view(&np_load(&streamed));

    // An archive with no members loads as an empty NpzFile.
    let empty = dir.join("empty.npz");
    let w = NpzWriter::new(Cursor::new(Vec::new()));
    std::fs::write(&empty, w.finish().unwrap().into_inner()).unwrap();
    assert_eq!(np_load(&empty)["files"], json!([]));
}

/// Writes archives with `np.savez`, `np.savez_compressed` and `np.savez` to a non-seekable
/// stream, plus a non-`.npy` member added with `zipfile`.
const SAVE: &str = r#"
import io, sys, zipfile
import numpy as np

class Unseekable(io.RawIOBase):
    def __init__(self, f): self.f = f
    def writable(self): return True
    def seekable(self): return False
    def tell(self): raise OSError("unseekable")
    def seek(self, *a): raise OSError("unseekable")
    def write(self, b): return self.f.write(b)

d = sys.argv[1]
rec = np.zeros(5, dtype=[("id", "<u4"), ("t", "<f8"), ("xyz", "<f4", (3,)), ("ok", "?")])
rec["id"] = np.arange(5)
rec["t"] = np.arange(5) / 4
rec["xyz"][:, 0] = np.arange(5)
rec["xyz"][:, 1] = 0.5
rec["xyz"][:, 2] = -2
rec["ok"] = np.arange(5) % 2 == 0
arrays = dict(
    big=np.arange(300_000, dtype="<i8") * 3,
    lin=np.linspace(0.0, 1.0, 1001),
    fort=np.asfortranarray(np.arange(12, dtype=">i4").reshape(3, 4)),
    rec=rec,
    uni=np.array(["α", "βγ"]),
)
arrays["données"] = np.float32(2.5)
np.savez(d + "/plain.npz", np.arange(3, dtype="u1"), **arrays)
np.savez_compressed(d + "/compressed.npz", np.arange(3, dtype="u1"), **arrays)
with open(d + "/stream.npz", "wb") as f:
    np.savez_compressed(Unseekable(f), np.arange(3, dtype="u1"), **arrays)
with zipfile.ZipFile(d + "/plain.npz", "a") as z:
    z.writestr("extra.bin", b"\x00\x01\x02", compress_type=zipfile.ZIP_DEFLATED)
print("ok")
"#;

fn check_numpy_archive(npz: &mut NpzArchive<std::io::BufReader<std::fs::File>>, label: &str) {
    let keys: Vec<&str> = npz.keys().collect();
    assert_eq!(
        &keys[..7],
        ["big", "lin", "fort", "rec", "uni", "données", "arr_0"],
        "{label}"
    );
    // A 2.4 MB member, streamed and read whole.
    let mut n = 0u64;
    for (i, v) in npz.records_serde::<i64>("big").unwrap().enumerate() {
        assert_eq!(v.unwrap(), 3 * i as i64, "{label}");
        n += 1;
    }
    assert_eq!(n, 300_000);
    let big: Vec<i64> = npz.deserialize("big").unwrap();
    assert_eq!(big[299_999], 899_997);
    let lin: Vec<f64> = npz.deserialize("lin").unwrap();
    assert_eq!(
        (lin.len(), lin[0], lin[500], lin[1000]),
        (1001, 0.0, 0.5, 1.0)
    );
    // Fortran order, big-endian: logical C order out.
    let fort: Vec<Vec<i32>> = npz.deserialize("fort").unwrap();
    assert_eq!(fort[1], [4, 5, 6, 7], "{label}");
    assert!(npz.header("fort").unwrap().header.fortran_order);
    let rec: Vec<Sample> = npz.deserialize("rec").unwrap();
    assert_eq!(rec, samples(5), "{label}");
    assert_eq!(npz.deserialize::<Vec<String>>("uni").unwrap(), ["α", "βγ"]);
    assert_eq!(npz.deserialize::<f32>("données").unwrap(), 2.5);
    assert_eq!(npz.deserialize::<Vec<u8>>("arr_0").unwrap(), [0, 1, 2]);
}

#[test]
fn we_read_what_numpy_writes() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy test");
        return;
    }
    let dir = TempDir::new("npz-read");
    run_python(SAVE, &[dir.path().as_os_str()]);

    let mut plain = NpzArchive::open(dir.join("plain.npz")).unwrap();
    assert!(plain
        .members()
        .iter()
        .all(|m| m.compression == Compression::Stored || m.name == "extra.bin"));
    check_numpy_archive(&mut plain, "savez");
    assert_eq!(plain.read_raw("extra.bin").unwrap(), [0, 1, 2]);

    for name in ["compressed.npz", "stream.npz"] {
        let mut npz = NpzArchive::open(dir.join(name)).unwrap();
        assert!(npz
            .members()
            .iter()
            .all(|m| m.compression == Compression::Deflate));
        // 300000 × 3 compresses well below the 2.4 MB stored size.
        assert!(npz.member("big").unwrap().compressed_size < 1_000_000);
        check_numpy_archive(&mut npz, name);
    }
}
