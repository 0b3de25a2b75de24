//! A member larger than 4 GiB, generated on the fly and streamed both ways (not committed):
//! zip64 sizes in the member's local header and central-directory entry, a member whose local
//! header starts past 4 GiB (zip64 offset) and a central directory past 4 GiB (zip64
//! end-of-central-directory record). Memory stays small: records are written in batches of
//! 64 Ki and read back one at a time.
//!
//! The member is mostly zeros and the archive is written through [`SparseFile`], which leaves
//! all-zero blocks as holes: the file is 4.3 GB long but takes a few tens of MB of disk, so the
//! test runs on a machine with little free space. Every record is still written, read back and
//! checked, and the CRC-32 covers all of them.
//!
//! Ignored by default (it streams 4.3 GB each way); CI runs it with
//! `cargo test --release -p npy-serde-tests --test npz_zip64 -- --ignored`.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::time::Instant;

use npy_serde::npz::{Compression, NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter};
use npy_serde_tests::{live_python, run_python};

/// Records of the big member: 8-byte integers, so the member is 4.3 GB (past 2^32 bytes).
const N: u64 = (1 << 29) + 12_345;
const BATCH: u64 = 1 << 16;

/// One record in every [`STRIDE`] is non-zero (and differs from its neighbours), so most 4 KiB
/// blocks of the member are zeros and become holes.
const STRIDE: u64 = 1 << 16;

fn value(i: u64) -> u64 {
    if i.is_multiple_of(STRIDE) || i + 3 >= N {
        (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i) | 1
    } else {
        0
    }
}

/// A new file written sparsely: a 4 KiB-aligned block of zeros written past everything
/// written so far is skipped with a seek (a hole, which reads back as zeros) instead of being
/// written. Bytes written over earlier ones (the seekable zip writer goes back to patch sizes
/// and CRCs) are always written.
#[derive(Debug)]
struct SparseFile {
    file: File,
    pos: u64,
    /// End of the furthest write or skip; everything before it is final or a hole.
    end: u64,
    /// Bytes that reached the disk.
    written: u64,
}

const BLOCK: u64 = 4096;

impl SparseFile {
    fn create(path: &std::path::Path) -> io::Result<Self> {
        Ok(SparseFile {
            file: File::create(path)?,
            pos: 0,
            end: 0,
            written: 0,
        })
    }

    /// Sets the file's length to cover a trailing hole, and returns the bytes written.
    fn finish(self) -> io::Result<u64> {
        if self.file.metadata()?.len() < self.end {
            self.file.set_len(self.end)?;
        }
        Ok(self.written)
    }
}

impl Write for SparseFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Write up to the next block boundary at a time, so each call sees whole blocks.
        let to_boundary = (BLOCK - self.pos % BLOCK) as usize;
        let n = buf.len().min(to_boundary);
        let chunk = &buf[..n];
        let whole_block = self.pos.is_multiple_of(BLOCK) && n as u64 == BLOCK;
        if whole_block && self.pos >= self.end && chunk.iter().all(|&b| b == 0) {
            self.file.seek(SeekFrom::Current(n as i64))?;
        } else {
            self.file.write_all(chunk)?;
            self.written += n as u64;
        }
        self.pos += n as u64;
        self.end = self.end.max(self.pos);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for SparseFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = self.file.seek(to)?;
        Ok(self.pos)
    }
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
        // Every record is checked (the CRC-32 of the whole member at the end as well).
        assert_eq!(v, value(i), "record {i}");
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

/// Writes the test archive ([`write_archive!`]) with the writer over a sparse file that `write`
/// makes, in the temp directory under a name with `label`, and says how long it took: the file,
/// removed when dropped.
fn write_big(label: &str, write: impl FnOnce(SparseFile) -> u64) -> TempFile {
    let path = TempFile(std::env::temp_dir().join(format!(
        "npy-serde-zip64-{label}-{}.npz",
        std::process::id()
    )));
    let started = Instant::now();
    let written = write(SparseFile::create(&path.0).unwrap());
    eprintln!(
        "wrote {} in {:.1?} ({written} bytes on disk)",
        path.0.display(),
        started.elapsed()
    );
    path
}

#[test]
#[ignore = "streams 4.3 GB each way; run with --release -- --ignored"]
fn member_over_4_gib_seekable_writer() {
    let path = write_big("seek", |file| {
        let mut w = NpzWriter::new(BufWriter::with_capacity(1 << 20, file));
        write_archive!(w);
        w.finish().unwrap().into_inner().unwrap().finish().unwrap()
    });
    assert!(std::fs::metadata(&path.0).unwrap().len() > 8 * N);
    check_archive(&path.0);
    numpy_check(&path.0);
}

#[test]
#[ignore = "streams 4.3 GB each way; run with --release -- --ignored"]
fn member_over_4_gib_streaming_writer() {
    // Sizes in zip64 data descriptors, as NumPy writes to a non-seekable stream.
    let path = write_big("stream", |file| {
        let mut w = NpzStreamWriter::new(BufWriter::with_capacity(1 << 20, file));
        write_archive!(w);
        w.finish().unwrap().into_inner().unwrap().finish().unwrap()
    });
    check_archive(&path.0);
    numpy_check(&path.0);
}
