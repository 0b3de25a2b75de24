//! A member larger than 4 GiB, generated on the fly and streamed both ways (not committed):
//! zip64 sizes in the member's local header and central-directory entry, a member whose local
//! header starts past 4 GiB (zip64 offset) and a central directory past 4 GiB (zip64
//! end-of-central-directory record). Memory stays small: records are written in batches of
//! 64 Ki and read back one at a time.
//!
//! Ignored by default (it writes ~4.3 GB to the temporary directory); CI runs it with
//! `cargo test --release -p npy-serde-tests --test npz_zip64 -- --ignored`.

use std::ffi::OsStr;
use std::io::{BufWriter, Write};
use std::time::Instant;

use npy_serde::npz::{Compression, NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter};
use npy_serde_tests::{live_python, run_python};

/// Records of the big member: 8-byte integers, so the member is 4.3 GB (past 2^32 bytes).
const N: u64 = (1 << 29) + 12_345;
const BATCH: u64 = 1 << 16;

fn value(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i
}

struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `before` (small), `big` (N records) and `after` (small, its local header past 4 GiB)
/// with the given writer expression.
macro_rules! write_archive {
    ($w:expr) => {{
        let w = &mut $w;
        w.add("before", &[1u8, 2, 3]).unwrap();
        let mut r = w.start_records::<u64>("big", N).unwrap();
        let mut batch = Vec::with_capacity(BATCH as usize);
        let mut i = 0;
        while i < N {
            batch.clear();
            batch.extend((i..(i + BATCH).min(N)).map(value));
            r.write_all_serde(&batch).unwrap();
            i += batch.len() as u64;
        }
        r.finish().unwrap();
        w.set_compression(Compression::Deflate);
        w.add("after", &[-1i16, -2]).unwrap();
    }};
}

fn check_archive(path: &std::path::Path) {
    let started = Instant::now();
    let mut npz = NpzReaderBuilder::new()
        .max_member_size(u64::MAX)
        .open(path)
        .unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["before", "big", "after"]);
    let big = npz.member("big").unwrap();
    assert_eq!(big.size, 128 + 8 * N);
    assert!(big.size > u64::from(u32::MAX));
    assert_eq!(big.compressed_size, big.size);
    assert_eq!(npz.deserialize::<Vec<i16>>("after").unwrap(), [-1, -2]);
    assert_eq!(npz.deserialize::<Vec<u8>>("before").unwrap(), [1, 2, 3]);

    // The default member-size limit refuses the big member up front.
    let mut default = NpzArchive::open(path).unwrap();
    let err = default.records_serde::<u64>("big").unwrap_err();
    assert!(err.to_string().contains("max_member_size"), "{err}");

    let mut records = npz.records_serde::<u64>("big").unwrap();
    assert_eq!(records.len(), N);
    let mut count = 0u64;
    for (i, r) in records.by_ref().enumerate() {
        let v = r.unwrap();
        let i = i as u64;
        // Check a sample of records (every 4 Mi-th, and the last ones) exactly; all are read,
        // so the CRC-32 of the whole member is verified at the end.
        if i.is_multiple_of(1 << 22) || i + 3 >= N {
            assert_eq!(v, value(i), "record {i}");
        }
        count += 1;
    }
    assert_eq!(count, N);
    records.finish().unwrap();
    eprintln!("read {} back in {:.1?}", path.display(), started.elapsed());
}

fn numpy_check(path: &std::path::Path) {
    if live_python().is_none() {
        return;
    }
    // NumPy sees the keys and sizes and loads the small members around the big one (loading
    // the big member itself would need 4.3 GB of memory).
    let out = run_python(
        r#"
import sys, zipfile
import numpy as np
with zipfile.ZipFile(sys.argv[1]) as zf:
    info = zf.getinfo("big.npy")
    with zf.open(info) as f:
        head = f.read(128)
with np.load(sys.argv[1]) as z:
    print(z.files, info.file_size, z["before"].tolist(), z["after"].tolist(), head[:6])
"#,
        &[OsStr::new(path)],
    );
    assert_eq!(
        out.trim(),
        format!(
            "['before', 'big', 'after'] {} [1, 2, 3] [-1, -2] b'\\x93NUMPY'",
            128 + 8 * N
        )
    );
}

#[test]
#[ignore = "writes ~4.3 GB; run with --release -- --ignored"]
fn member_over_4_gib_seekable_writer() {
    let path = TempFile(
        std::env::temp_dir().join(format!("npy-serde-zip64-seek-{}.npz", std::process::id())),
    );
    let started = Instant::now();
    let file = std::fs::File::create(&path.0).unwrap();
    let mut w = NpzWriter::new(BufWriter::with_capacity(1 << 20, file));
    write_archive!(w);
    w.finish().unwrap().flush().unwrap();
    eprintln!("wrote {} in {:.1?}", path.0.display(), started.elapsed());
    assert!(std::fs::metadata(&path.0).unwrap().len() > 8 * N);
    check_archive(&path.0);
    numpy_check(&path.0);
}

#[test]
#[ignore = "writes ~4.3 GB; run with --release -- --ignored"]
fn member_over_4_gib_streaming_writer() {
    // Sizes in zip64 data descriptors, as NumPy writes to a non-seekable stream.
    let path = TempFile(
        std::env::temp_dir().join(format!("npy-serde-zip64-stream-{}.npz", std::process::id())),
    );
    let started = Instant::now();
    let file = std::fs::File::create(&path.0).unwrap();
    let mut w = NpzStreamWriter::new(BufWriter::with_capacity(1 << 20, file));
    write_archive!(w);
    w.finish().unwrap().flush().unwrap();
    eprintln!("wrote {} in {:.1?}", path.0.display(), started.elapsed());
    check_archive(&path.0);
    numpy_check(&path.0);
}
