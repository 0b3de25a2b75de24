//! Appending members to existing archives in place ([`NpzAppender`]): the old members' bytes
//! are left as they were, duplicates are refused before anything is written, a failure in the
//! middle (a failing serializer, an I/O error, an unfinished member, a dropped appender) leaves
//! the archive byte for byte as it was, and NumPy reads appended archives (live).

use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};

use npy_serde::npz::{AppendTarget, Compression, MmapNpz, NpzAppender, NpzArchive, NpzWriter};
use npy_serde::{Array, Value};
use npy_serde_tests::{live_python, run_python, TempDir};
use serde::{Serialize, Serializer};
use serde_json::{json, Value as Json};

fn base() -> Vec<u8> {
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    w.add("a", &[1.0f64, 2.0, 3.0]).unwrap();
    w.add_positional(&[7u8, 8]).unwrap();
    w.set_compression(Compression::Deflate);
    w.add("z", &[5i32; 1000]).unwrap();
    w.finish().unwrap().into_inner()
}

fn cd_start(zip: &[u8]) -> usize {
    let eocd = zip.len() - 22;
    u32::from_le_bytes(zip[eocd + 16..eocd + 20].try_into().unwrap()) as usize
}

#[test]
fn members_are_added_without_touching_the_old_ones() {
    let old = base();
    let old_cd = cd_start(&old);
    let mut app = NpzAppender::new(Cursor::new(old.clone())).unwrap();
    app.add("b", &[10u32, 20]).unwrap();
    app.set_compression(Compression::Deflate);
    app.add("c", &vec![0.5f32; 10_000]).unwrap();
    app.set_compression(Compression::Stored);
    assert_eq!(app.add_positional(&[true]).unwrap(), "arr_1");
    let mut r = app.start_records::<i16>("s", 3).unwrap();
    r.write_all(&[1i16, -2, 3]).unwrap();
    r.finish().unwrap();
    app.add_raw("notes.txt", b"appended").unwrap();
    let new = app.finish().unwrap().into_inner();

    // The old members' bytes are untouched, and the first new member starts where the old
    // central directory did (it was overwritten, not left behind).
    assert_eq!(new[..old_cd], old[..old_cd]);
    assert_eq!(&new[old_cd..old_cd + 4], b"PK\x03\x04");
    let mut npz = NpzArchive::from_bytes(&new).unwrap();
    assert_eq!(
        npz.keys().collect::<Vec<_>>(),
        ["a", "arr_0", "z", "b", "c", "arr_1", "s", "notes.txt"]
    );
    assert_eq!(npz.deserialize::<Vec<f64>>("a").unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(npz.deserialize::<Vec<i32>>("z").unwrap(), vec![5; 1000]);
    assert_eq!(npz.deserialize::<Vec<u32>>("b").unwrap(), [10, 20]);
    assert_eq!(npz.member("c").unwrap().compression, Compression::Deflate);
    assert_eq!(npz.deserialize::<Vec<f32>>("c").unwrap(), vec![0.5; 10_000]);
    assert_eq!(npz.deserialize::<Vec<bool>>("arr_1").unwrap(), [true]);
    assert_eq!(npz.deserialize::<Vec<i16>>("s").unwrap(), [1, -2, 3]);
    assert_eq!(npz.read_raw("notes.txt").unwrap(), b"appended");
    for key in npz.keys().map(String::from).collect::<Vec<_>>() {
        npz.by_key(&key).unwrap().finish().unwrap(); // every CRC-32
    }

    // Appending again, to the appended archive, and to an empty one.
    let mut app = NpzAppender::new(Cursor::new(new)).unwrap();
    app.add("d", &[1u8]).unwrap();
    let again = app.finish().unwrap().into_inner();
    assert_eq!(NpzArchive::from_bytes(&again).unwrap().len(), 9);
    let empty = NpzWriter::new(Cursor::new(Vec::new()))
        .finish()
        .unwrap()
        .into_inner();
    let mut app = NpzAppender::new(Cursor::new(empty)).unwrap();
    assert_eq!(app.add_positional(&[1u8]).unwrap(), "arr_0");
    let one = app.finish().unwrap().into_inner();
    assert_eq!(
        NpzArchive::from_bytes(&one)
            .unwrap()
            .deserialize::<Vec<u8>>("arr_0")
            .unwrap(),
        [1]
    );
}

#[test]
fn a_duplicate_key_is_refused_before_anything_is_written() {
    let old = base();
    let mut buf = Cursor::new(old.clone());
    let mut app = NpzAppender::new(&mut buf).unwrap();
    for key in ["a", "z"] {
        let err = app.add(key, &[0u8]).unwrap_err();
        assert_eq!(err.kind().code(), "zip", "{err}");
        assert!(err.to_string().contains(&format!("{key}.npy")), "{err}");
    }
    assert!(app.add_raw("a.npy", b"x").is_err());
    assert!(app.start_records::<u8>("arr_0", 1).is_err());
    // Nothing was written, and the appender is still usable.
    app.add("b", &[1u8]).unwrap();
    assert!(app.add("b", &[2u8]).is_err());
    app.finish().unwrap();
    let mut npz = NpzArchive::from_bytes(buf.get_ref()).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "arr_0", "z", "b"]);
    assert_eq!(npz.deserialize::<Vec<u8>>("b").unwrap(), [1]);
}

/// A value whose serialization fails: what a failing `Serialize` impl does mid-member.
struct Boom;

impl Serialize for Boom {
    fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "boom: this value cannot be serialized",
        ))
    }
}

#[test]
fn a_failing_serializer_mid_member_leaves_the_archive_as_it_was() {
    let old = base();
    // A member failing after 100000 good values, through the serde door; then finish.
    let mut buf = Cursor::new(old.clone());
    let mut app = NpzAppender::new(&mut buf).unwrap();
    app.add("ok", &[1u8, 2]).unwrap();
    let mut r = app.start_records::<f64>("bad", 100_001).unwrap();
    for i in 0..100_000 {
        r.write_serde(&f64::from(i)).unwrap();
    }
    let err = r.write_serde(&Boom).unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
    drop(r);
    let err = app.finish().unwrap_err();
    assert!(err.to_string().contains("bad.npy"), "{err}");
    assert_eq!(buf.get_ref(), &old, "restored after a failed finish");

    // A value that does not fit the dtype, half-way through a whole member; then drop.
    for compression in [Compression::Stored, Compression::Deflate] {
        let mut buf = Cursor::new(old.clone());
        let mut app = NpzAppender::new(&mut buf).unwrap();
        app.set_compression(compression);
        app.add("ok", &vec![3u64; 50_000]).unwrap();
        let mut values = vec![Value::Int(1); 200_000];
        values.push(Value::String("not a number".into()));
        let bad = Array {
            dtype: "<i4".parse().unwrap(),
            shape: vec![200_001],
            fortran_order: false,
            values,
        };
        assert!(app.add_array("bad", &bad).is_err());
        // Everything after fails, and dropping the appender restores the archive.
        assert!(app.add("more", &[1u8]).is_err());
        drop(app);
        assert_eq!(buf.get_ref(), &old, "{compression}");
    }

    // Dropped without finish: as if nothing happened.
    let mut buf = Cursor::new(old.clone());
    let mut app = NpzAppender::new(&mut buf).unwrap();
    app.add("fine", &vec![1u16; 10_000]).unwrap();
    drop(app);
    assert_eq!(buf.get_ref(), &old);
}

/// Storage whose `fail_at`-th written byte fails once (a full disk, a dropped connection), then
/// works again (so the restore can write).
struct Flaky {
    inner: Cursor<Vec<u8>>,
    written: u64,
    fail_at: u64,
    failed: bool,
}

impl Read for Flaky {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl Write for Flaky {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.failed && self.written + buf.len() as u64 > self.fail_at {
            self.failed = true;
            return Err(io::Error::other("injected: no space left on device"));
        }
        self.written += buf.len() as u64;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Flaky {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl AppendTarget for Flaky {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.get_mut().truncate(len as usize);
        Ok(())
    }
}

#[test]
fn an_io_error_mid_member_or_in_finish_leaves_the_archive_as_it_was() {
    let old = base();
    let append = |flaky: &mut Flaky| -> npy_serde::Result<()> {
        let mut app = NpzAppender::new(flaky)?;
        app.add("big", &vec![2.5f64; 50_000])?;
        let mut m = app.start_records::<u32>("streamed", 50_000)?;
        for i in 0..50_000u32 {
            m.write_serde(&i)?;
        }
        m.finish()?;
        app.finish().map(|_| ())
    };
    let mut clean = Flaky {
        inner: Cursor::new(old.clone()),
        written: 0,
        fail_at: u64::MAX,
        failed: false,
    };
    append(&mut clean).unwrap();
    let total = clean.written;
    assert!(total > 600_000, "{total}");
    // Fails in the first local header, inside the member's data, inside a streamed member,
    // or while the new central directory is written.
    for fail_at in [10, 5_000, 450_000, total - 30, total - 1] {
        let mut flaky = Flaky {
            inner: Cursor::new(old.clone()),
            written: 0,
            fail_at,
            failed: false,
        };
        let err = append(&mut flaky).unwrap_err();
        assert!(
            err.to_string().contains("no space left"),
            "{fail_at}: {err}"
        );
        assert!(flaky.failed, "{fail_at}");
        assert_eq!(flaky.inner.get_ref(), &old, "fail at {fail_at}");
    }
}

#[test]
fn numpy_reads_appended_archives() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping live NumPy test");
        return;
    }
    let dir = TempDir::new("npz-append-live");
    let path = dir.join("np.npz");
    run_python(
        r#"
import sys, numpy as np
np.savez(sys.argv[1], np.arange(3, dtype="u1"), a=np.arange(6.0).reshape(2, 3),
         s=np.array(["x", "yz"]))
"#,
        &[path.as_os_str()],
    );
    let before = std::fs::read(&path).unwrap();
    let mut app = NpzAppender::open(&path).unwrap().align(true);
    app.add("b", &[1i64, -2, 3]).unwrap();
    app.set_compression(Compression::Deflate);
    app.add("c", &[[0.5f32, 1.5], [2.5, 3.5]]).unwrap();
    app.set_compression(Compression::Stored);
    assert_eq!(app.add_positional(&[true, false]).unwrap(), "arr_1");
    assert!(app.add("a", &[0u8]).is_err());
    app.finish().unwrap();
    let after = std::fs::read(&path).unwrap();
    let cd = cd_start(&before);
    assert_eq!(after[..cd], before[..cd]);

    let out = run_python(
        r#"
import json, sys, numpy as np
with np.load(sys.argv[1]) as z:
    print(json.dumps({k: z[k].tolist() for k in z.files}))
"#,
        &[path.as_os_str()],
    );
    let loaded: Json = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        loaded,
        json!({
            "arr_0": [0, 1, 2],
            "a": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
            "s": ["x", "yz"],
            "b": [1, -2, 3],
            "c": [[0.5, 1.5], [2.5, 3.5]],
            "arr_1": [true, false],
        })
    );
    // The appended stored members were aligned: viewed in place.
    let npz = MmapNpz::open(&path).unwrap();
    assert_eq!(
        npz.array("b").unwrap().as_slice::<i64>().unwrap(),
        [1, -2, 3]
    );
    assert_eq!(npz.data_offset("b").unwrap() % 64, 0);
}

#[test]
fn numpy_written_fixtures_take_appended_members() {
    // np.savez, np.savez_compressed, archives with data descriptors (written to a stream),
    // odd names, a non-.npy member, the empty archive: the old members read as before.
    for e in npy_serde_tests::entries("npz") {
        let path = npy_serde_tests::entry_path(e);
        let old = std::fs::read(&path).unwrap();
        let mut before = NpzArchive::from_bytes(&old).unwrap();
        let names: Vec<String> = before.names().map(String::from).collect();
        let raw_before: Vec<Vec<u8>> = names
            .iter()
            .map(|n| before.by_name(n).unwrap().read_raw().unwrap())
            .collect();
        let mut app = NpzAppender::new(Cursor::new(old.clone())).unwrap();
        app.add("appended_here", &[4.25f64, -1.0]).unwrap();
        let new = app.finish().unwrap().into_inner();
        let cd = cd_start(&old);
        assert_eq!(new[..cd], old[..cd], "{}", path.display());
        let mut after = NpzArchive::from_bytes(&new).unwrap();
        assert_eq!(after.len(), names.len() + 1, "{}", path.display());
        for (n, raw) in names.iter().zip(&raw_before) {
            assert_eq!(&after.by_name(n).unwrap().read_raw().unwrap(), raw, "{n}");
        }
        assert_eq!(
            after.deserialize::<Vec<f64>>("appended_here").unwrap(),
            [4.25, -1.0]
        );
    }
}
