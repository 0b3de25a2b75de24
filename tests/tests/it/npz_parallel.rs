//! Whole members deflated on all cores (`NpzWriter::new_compressed`, feature `parallel`): the
//! members decompress to exactly the bytes `np.save` writes for the same arrays, the CRC-32s
//! are valid (Python's `zipfile.testzip()`), `np.load` opens the archives; at the chunk
//! boundaries (a member of exactly one 1 MiB chunk, one byte over, two chunks, empty members,
//! odd counts), for the seekable and the streaming writer. Without `NPY_PYTHON`, the NumPy
//! fixtures' members are re-written and compared with their bytes.

use std::io::Cursor;
use std::path::Path;

use npy_serde::npz::{Compression, NpzArchive, NpzStreamWriter, NpzWriter};
use npy_serde_tests::{entries, entry_path, live_python, run_python, Sample, TempDir};

/// The chunk a queued member is cut into (`npz::par::CHUNK`).
const CHUNK: u64 = 1 << 20;

/// A `|u1` array's `.npy` header is 128 bytes: this many elements make a member of exactly one
/// chunk.
const ONE_CHUNK_U8: u64 = CHUNK - 128;

fn bytes(n: u64) -> Vec<u8> {
    (0..n).map(|i| (i % 256) as u8).collect()
}

fn samples(n: u32) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            id: i,
            t: f64::from(i) / 4.0,
            xyz: [i as f32, 0.5, -2.0],
            ok: i % 3 == 0,
        })
        .collect()
}

macro_rules! write_members {
    ($w:expr) => {{
        let w = &mut $w;
        // W1-like: 5 chunks and a bit.
        let x: Vec<f64> = (0..700_001).map(|i| f64::from(i) * 0.5).collect();
        w.add("x", &x).unwrap();
        w.add("one_chunk", &bytes(ONE_CHUNK_U8)).unwrap();
        w.add("one_over", &bytes(ONE_CHUNK_U8 + 1)).unwrap();
        w.add("one_under", &bytes(ONE_CHUNK_U8 - 1)).unwrap();
        w.add("two_chunks", &bytes(2 * CHUNK - 128)).unwrap();
        w.add("empty", &[0f32; 0]).unwrap();
        w.add("rec", &samples(100_003)).unwrap();
        // Four columns, several small members queued at once.
        let ids: Vec<i64> = (0..300_007).collect();
        w.add("id", &ids).unwrap();
        let ys: Vec<f32> = ids.iter().map(|&i| i as f32).collect();
        w.add("y", &ys).unwrap();
        let flags: Vec<u8> = ids.iter().map(|&i| (i % 251) as u8).collect();
        w.add("flag", &flags).unwrap();
        w.add_positional(&[7u16, 8, 9]).unwrap();
        // A stored member among them, and a streamed one.
        w.set_compression(Compression::Stored);
        w.add("stored", &[1i32, -1]).unwrap();
        w.set_compression(Compression::Deflate);
        let mut r = w.start_records::<u32>("streamed", 3).unwrap();
        r.write_all(&[1, 2, 3]).unwrap();
        r.finish().unwrap();
        w.add_raw("notes.txt", b"not an array").unwrap();
    }};
}

const KEYS: [&str; 14] = [
    "x",
    "one_chunk",
    "one_over",
    "one_under",
    "two_chunks",
    "empty",
    "rec",
    "id",
    "y",
    "flag",
    "arr_0",
    "stored",
    "streamed",
    "notes.txt",
];

/// Rebuilds the arrays in NumPy, checks the archive with `zipfile.testzip()`, compares each
/// member's bytes with `np.save`'s and loads it with `np.load`; prints what differs.
const CHECK: &str = r#"
import io, sys, zipfile
import numpy as np
path = sys.argv[1]
def u8(n): return (np.arange(n) % 256).astype('u1')
C = 1 << 20
rec = np.zeros(100_003, dtype=[('id', '<u4'), ('t', '<f8'), ('xyz', '<f4', (3,)), ('ok', '?')])
i = np.arange(100_003)
rec['id'] = i; rec['t'] = i / 4; rec['xyz'][:, 0] = i; rec['xyz'][:, 1] = 0.5
rec['xyz'][:, 2] = -2; rec['ok'] = i % 3 == 0
ids = np.arange(300_007, dtype='<i8')
want = {
    'x': np.arange(700_001) * 0.5,
    'one_chunk': u8(C - 128), 'one_over': u8(C - 127), 'one_under': u8(C - 129),
    'two_chunks': u8(2 * C - 128),
    'empty': np.zeros(0, dtype='<f4'),
    'rec': rec,
    'id': ids, 'y': ids.astype('<f4'), 'flag': (ids % 251).astype('u1'),
    'arr_0': np.array([7, 8, 9], dtype='<u2'),
    'stored': np.array([1, -1], dtype='<i4'),
    'streamed': np.array([1, 2, 3], dtype='<u4'),
}
problems = []
with zipfile.ZipFile(path) as z:
    bad = z.testzip()
    if bad is not None:
        problems.append(f'testzip: bad CRC in {bad}')
    names = z.namelist()
    for k, a in want.items():
        b = io.BytesIO(); np.save(b, a)
        if z.read(k + '.npy') != b.getvalue():
            problems.append(f'{k}: member bytes differ from np.save')
    if z.read('notes.txt') != b'not an array':
        problems.append('notes.txt differs')
with np.load(path) as f:
    keys = list(f.files)
    for k, a in want.items():
        if not np.array_equal(f[k], a):
            problems.append(f'{k}: np.load values differ')
print(','.join(keys))
print('ok' if not problems else '; '.join(problems))
"#;

fn check_with_numpy(path: &Path) {
    let out = run_python(CHECK, &[path.as_os_str()]);
    let mut lines = out.lines();
    let keys: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(keys, KEYS, "{}", path.display());
    assert_eq!(lines.next(), Some("ok"), "{}", path.display());
}

/// What this crate reads back: every member present, CRC-checked, with its sizes.
fn check_with_us(archive: &[u8]) {
    let mut npz = NpzArchive::from_bytes(archive).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), KEYS);
    assert_eq!(npz.read::<u8>("one_over").unwrap(), bytes(ONE_CHUNK_U8 + 1));
    assert_eq!(npz.read::<f32>("empty").unwrap(), Vec::<f32>::new());
    assert_eq!(npz.read::<Sample>("rec").unwrap(), samples(100_003));
    let x = npz.read::<f64>("x").unwrap();
    assert_eq!((x.len(), x[700_000]), (700_001, 350_000.0));
    for m in npz.members() {
        let want = if m.name == "stored.npy" {
            Compression::Stored
        } else {
            Compression::Deflate
        };
        assert_eq!(m.compression, want, "{}", m.name);
    }
    let one = npz.member("one_chunk").unwrap();
    assert_eq!(one.size, CHUNK);
    for k in KEYS {
        npz.read_raw(k).unwrap();
    }
}

#[test]
fn queued_deflated_members_are_numpy_s_bytes() {
    let dir = TempDir::new("npz-parallel");
    let seekable = dir.join("seekable.npz");
    let mut w = NpzWriter::new_compressed(std::fs::File::create(&seekable).unwrap());
    write_members!(w);
    w.finish().unwrap();
    check_with_us(&std::fs::read(&seekable).unwrap());

    let streamed = dir.join("streamed.npz");
    let mut out = Vec::new();
    let mut w = NpzStreamWriter::new_compressed(&mut out);
    write_members!(w);
    w.finish().unwrap();
    check_with_us(&out);
    std::fs::write(&streamed, &out).unwrap();

    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping the NumPy half");
        return;
    }
    check_with_numpy(&seekable);
    check_with_numpy(&streamed);
}

/// Every `.npy` member of NumPy's fixture archives, re-written deflated by the queue, has the
/// bytes NumPy wrote (after decompression on both sides).
#[test]
fn fixture_members_rewritten_are_numpy_s_bytes() {
    let mut checked = 0;
    for e in entries("npz") {
        let mut npz = NpzArchive::open(entry_path(e)).unwrap();
        let keys: Vec<String> = npz
            .members()
            .iter()
            .filter(|m| m.name.ends_with(".npy"))
            .map(|m| npy_serde::npz::key_for_name(&m.name).to_string())
            .collect();
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        let mut want = Vec::new();
        for k in &keys {
            let Ok(array) = npz.read_array(k) else {
                continue; // an object array: pickled, not rewritten here
            };
            w.add_array(k, &array).unwrap();
            want.push((k.clone(), npz.read_raw(k).unwrap()));
        }
        let bytes = w.finish().unwrap().into_inner();
        let mut ours = NpzArchive::from_bytes(&bytes).unwrap();
        for (k, raw) in &want {
            assert_eq!(&ours.read_raw(k).unwrap(), raw, "{e}: {k}");
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} members");
}
