//! Hostile and malformed `.npz` archives, built byte by byte here: corrupt CRC, corrupt deflate
//! data, decompression bombs (a tiny member whose header declares a huge shape, lying zip64
//! sizes), truncation, duplicate and path-like names, unsupported methods and limits. Every
//! case must end in a clear error after bounded work and memory, never a panic.

use std::io::{Cursor, Read};

use npy_serde::npz::{Compression, MmapNpz, NpzArchive, NpzReaderBuilder, NpzWriter};
use npy_serde::{Error, Header};
use npy_serde_tests::TempDir;

use crate::alloc::peak_alloc;

// ---- a minimal zip writer with full control over every field ----

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A valid deflate stream made of stored blocks (no compression, but method 8).
fn deflate_stored_blocks(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[][..]]
    } else {
        data.chunks(65535).collect()
    };
    for (i, c) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        out.extend_from_slice(&(c.len() as u16).to_le_bytes());
        out.extend_from_slice(&(!(c.len() as u16)).to_le_bytes());
        out.extend_from_slice(c);
    }
    out
}

/// A deflate stream (fixed Huffman codes) of `n` zero bytes: a literal 0 then matches of length
/// 258 at distance 1, about 1000:1.
fn deflate_zeros(n: usize) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u32,
        n: u32,
    }
    impl Bits {
        fn put(&mut self, v: u32, bits: u32) {
            self.acc |= v << self.n;
            self.n += bits;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        /// Huffman codes go most-significant bit first.
        fn code(&mut self, v: u32, bits: u32) {
            let rev = v.reverse_bits() >> (32 - bits);
            self.put(rev, bits);
        }
    }
    let mut b = Bits {
        out: Vec::new(),
        acc: 0,
        n: 0,
    };
    b.put(1, 1); // BFINAL
    b.put(1, 2); // fixed Huffman
    assert!(n >= 1);
    b.code(0x30, 8); // literal 0
    let mut left = n - 1;
    while left > 0 {
        let len = if left >= 258 {
            258
        } else if left >= 3 {
            left
        } else {
            b.code(0x30, 8);
            left -= 1;
            continue;
        };
        // length code
        if len == 258 {
            b.code(0b1100_0101, 8); // 285
        } else {
            let (code, base, extra) = length_code(len);
            if code <= 279 {
                b.code(code - 256, 7);
            } else {
                b.code(0b1100_0000 + (code - 280), 8);
            }
            b.put((len - base) as u32, extra);
        }
        b.code(0, 5); // distance code 0: distance 1
        left -= len;
    }
    b.code(0, 7); // end of block (256)
    if b.n > 0 {
        b.out.push(b.acc as u8);
    }
    b.out
}

fn length_code(len: usize) -> (u32, usize, u32) {
    const BASE: [usize; 29] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ];
    const EXTRA: [u32; 29] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    let i = BASE.iter().rposition(|&b| b <= len).unwrap();
    (257 + i as u32, BASE[i], EXTRA[i])
}

#[derive(Clone)]
struct Entry {
    name: Vec<u8>,
    method: u16,
    flags: u16,
    /// The member's bytes as stored in the archive (compressed if method 8).
    stored: Vec<u8>,
    crc: u32,
    /// Declared uncompressed size.
    size: u64,
    zip64: bool,
}

impl Entry {
    fn stored(name: &str, data: &[u8]) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            method: 0,
            flags: 0x0800,
            stored: data.to_vec(),
            crc: crc32(data),
            size: data.len() as u64,
            zip64: false,
        }
    }

    fn deflated(name: &str, data: &[u8]) -> Entry {
        Entry {
            method: 8,
            stored: deflate_stored_blocks(data),
            ..Entry::stored(name, data)
        }
    }
}

fn build_zip(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let offset = out.len() as u32;
        let csize = e.stored.len() as u64;
        let (c32, u32_, extra) = if e.zip64 {
            let mut x = vec![1, 0, 16, 0];
            x.extend_from_slice(&e.size.to_le_bytes());
            x.extend_from_slice(&csize.to_le_bytes());
            (0xFFFF_FFFFu32, 0xFFFF_FFFFu32, x)
        } else {
            (csize as u32, e.size as u32, vec![])
        };
        let version: u16 = if e.zip64 { 45 } else { 20 };
        let mut common = Vec::new();
        common.extend_from_slice(&e.flags.to_le_bytes());
        common.extend_from_slice(&e.method.to_le_bytes());
        common.extend_from_slice(&0u16.to_le_bytes()); // time
        common.extend_from_slice(&0x21u16.to_le_bytes()); // date 1980-01-01
        common.extend_from_slice(&e.crc.to_le_bytes());
        common.extend_from_slice(&c32.to_le_bytes());
        common.extend_from_slice(&u32_.to_le_bytes());
        common.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        common.extend_from_slice(&(extra.len() as u16).to_le_bytes());

        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&common);
        out.extend_from_slice(&e.name);
        out.extend_from_slice(&extra);
        out.extend_from_slice(&e.stored);

        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&(0x0300 | version).to_le_bytes());
        central.extend_from_slice(&version.to_le_bytes());
        central.extend_from_slice(&common);
        central.extend_from_slice(&0u16.to_le_bytes()); // comment
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attrs
        central.extend_from_slice(&(0o100600u32 << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(&e.name);
        central.extend_from_slice(&extra);
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A `.npy` file: header for `descr`/`shape` followed by `data`.
fn npy(descr: &str, shape: Vec<u64>, data: &[u8]) -> Vec<u8> {
    let mut v = Header::new(descr.parse().unwrap(), shape)
        .to_bytes()
        .unwrap();
    v.extend_from_slice(data);
    v
}

fn f64s(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[track_caller]
fn assert_zip_error(e: &Error, needles: &[&str]) {
    assert_eq!(e.kind().code(), "zip", "{e}");
    let msg = e.to_string();
    for n in needles {
        assert!(msg.contains(n), "{msg:?} should mention {n:?}");
    }
}

// ---- the builder itself produces archives the crate reads ----

#[test]
fn handmade_archives_read_back() {
    let a = npy("<f8", vec![3], &f64s(&[1.0, 2.0, 3.0]));
    for zip64 in [false, true] {
        let mut s = Entry::stored("a.npy", &a);
        let mut d = Entry::deflated("b.npy", &a);
        s.zip64 = zip64;
        d.zip64 = zip64;
        let z = build_zip(&[s, d]);
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(npz.member("b").unwrap().compression, Compression::Deflate);
        for key in ["a", "b"] {
            assert_eq!(npz.read_raw(key).unwrap(), a);
            let mut m = npz.by_key(key).unwrap();
            assert_eq!(m.header().unwrap().header.shape, [3]);
            assert_eq!(m.read_raw().unwrap(), f64s(&[1.0, 2.0, 3.0]));
        }
    }
    // The fixed-Huffman zero encoder is a real deflate stream.
    let zeros = vec![0u8; 100_000];
    let mut e = Entry::deflated("z", &zeros);
    e.stored = deflate_zeros(zeros.len());
    assert!(e.stored.len() < 1000, "{}", e.stored.len());
    let z = build_zip(&[e]);
    assert_eq!(
        NpzArchive::from_bytes(&z).unwrap().read_raw("z").unwrap(),
        zeros
    );
}

// ---- checksums and corrupt data ----

#[test]
fn corrupt_crc_is_a_zip_error_naming_the_member() {
    let a = npy("<f8", vec![4], &f64s(&[1.0, 2.0, 3.0, 4.0]));
    for mut e in [Entry::stored("bad.npy", &a), Entry::deflated("bad.npy", &a)] {
        e.crc ^= 1;
        let z = build_zip(&[e]);
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        let err = npz.read_raw("bad").unwrap_err();
        assert_zip_error(&err, &["\"bad.npy\"", "CRC"]);
        // The header reads fine; the data read that would complete the member fails, so a
        // consumer can never see all the bytes of a member whose checksum is wrong.
        let mut m = npz.by_key("bad").unwrap();
        m.header().unwrap();
        let mut buf = [0u8; 31];
        m.read_exact(&mut buf).unwrap();
        let io = m.read(&mut [0u8; 8]).unwrap_err();
        assert!(io.to_string().contains("CRC"), "{io}");
    }
    // Through the serde reader, the dynamic reader and the streaming reader the error is
    // still a `Zip` error naming the member (lifted out of the I/O layer).
    for mut e in [Entry::stored("bad.npy", &a), Entry::deflated("bad.npy", &a)] {
        e.crc ^= 1;
        let z = build_zip(&[e]);
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        assert_zip_error(
            &npz.deserialize::<Vec<f64>>("bad").unwrap_err(),
            &["bad.npy", "CRC"],
        );
        assert_zip_error(&npz.read_array("bad").unwrap_err(), &["bad.npy", "CRC"]);
        let results: Vec<_> = npz.records_serde::<f64>("bad").unwrap().collect();
        // The CRC is checked by the read that brings in the member's last bytes.
        let err = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_zip_error(err, &["bad.npy", "CRC"]);
    }
    // Flipped data bytes with the original CRC.
    let mut e = Entry::stored("flip.npy", &a);
    let last = e.stored.len() - 1;
    e.stored[last] ^= 0x40;
    let z = build_zip(&[e]);
    let err = NpzArchive::from_bytes(&z)
        .unwrap()
        .by_key("flip")
        .unwrap()
        .finish()
        .unwrap_err();
    assert_zip_error(&err, &["flip.npy", "CRC"]);
}

#[test]
fn corrupt_deflate_is_a_zip_error() {
    let a = npy("<f8", vec![4], &f64s(&[1.0, 2.0, 3.0, 4.0]));
    // BTYPE = 11 (reserved) in the first block header.
    let mut e = Entry::deflated("c.npy", &a);
    e.stored = vec![0xFF; 40];
    let z = build_zip(&[e]);
    let err = NpzArchive::from_bytes(&z)
        .unwrap()
        .read_raw("c")
        .unwrap_err();
    assert_zip_error(&err, &["\"c.npy\""]);
    // A stored block whose NLEN does not complement LEN.
    let mut e = Entry::deflated("c.npy", &a);
    e.stored[3] ^= 0xFF;
    let z = build_zip(&[e]);
    let err = NpzArchive::from_bytes(&z)
        .unwrap()
        .read_raw("c")
        .unwrap_err();
    assert_zip_error(&err, &["\"c.npy\""]);
}

// ---- decompression bombs and lying sizes ----

#[test]
fn tiny_member_declaring_a_huge_shape_fails_fast_with_bounded_memory() {
    // A header declaring (10**12,) <f8 (8 TB) followed by a few bytes, deflated.
    let bomb = npy("<f8", vec![1_000_000_000_000], &f64s(&[1.0, 2.0]));
    let z = build_zip(&[Entry::deflated("bomb.npy", &bomb)]);
    let start = std::time::Instant::now();
    let (err, peak) = peak_alloc(|| {
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        let mut m = npz.by_key("bomb").unwrap();
        m.header().unwrap_err()
    });
    assert_zip_error(&err, &["bomb.npy", "(1000000000000,)", "<f8", "144 bytes"]);
    assert!(peak < 1 << 20, "peak allocation {peak} bytes");
    assert!(start.elapsed().as_secs() < 5);
}

#[test]
fn lying_zip64_sizes_fail_before_decompressing() {
    let bomb = npy("<f8", vec![1_000_000_000_000], &f64s(&[1.0]));
    let declared = 128 + 8_000_000_000_000u64;
    // Deflate: the zip64 size agrees with the header but 8 TB cannot come out of ~150 bytes.
    let mut e = Entry::deflated("lie.npy", &bomb);
    e.zip64 = true;
    e.size = declared;
    let z = build_zip(&[e]);
    let (res, peak) = peak_alloc(|| {
        let mut npz = NpzReaderBuilder::new()
            .max_member_size(u64::MAX)
            .from_bytes(&z)
            .unwrap();
        assert_eq!(npz.member("lie").unwrap().size, declared);
        npz.by_key("lie").map(|_| ())
    });
    assert_zip_error(
        &res.unwrap_err(),
        &["lie.npy", "more than deflate can produce"],
    );
    assert!(peak < 1 << 20, "peak allocation {peak} bytes");

    // Stored: the two sizes must be equal.
    let mut e = Entry::stored("lie.npy", &bomb);
    e.zip64 = true;
    e.size = declared;
    let z = build_zip(&[e]);
    let mut npz = NpzReaderBuilder::new()
        .max_member_size(u64::MAX)
        .from_bytes(&z)
        .unwrap();
    assert_zip_error(&npz.by_key("lie").unwrap_err(), &["stored", "lie.npy"]);
}

#[test]
fn real_deflate_bomb_is_bounded_by_the_declared_size() {
    // 64 MiB of zeros in ~64 KiB of deflate, declared honestly as a (8 Mi,) <f8 array, but the
    // zip directory says it is only 1 MiB: decoding stops after 1 MiB, with O(1) memory.
    let n = 64usize << 20;
    let mut stream = npy("<f8", vec![(n as u64) / 8], &[]);
    let hlen = stream.len();
    // Encode header bytes as a stored block is not possible inside the fixed block, so put the
    // header in its own stored deflate block followed by the fixed-Huffman zeros.
    let mut deflated = Vec::new();
    deflated.push(0u8); // non-final stored block
    deflated.extend_from_slice(&(hlen as u16).to_le_bytes());
    deflated.extend_from_slice(&(!(hlen as u16)).to_le_bytes());
    deflated.extend_from_slice(&stream);
    deflated.extend_from_slice(&deflate_zeros(n));
    stream.clear();

    let declared = 1u64 << 20;
    let e = Entry {
        name: b"zeros.npy".to_vec(),
        method: 8,
        flags: 0x0800,
        crc: 0,
        size: declared,
        zip64: true,
        stored: deflated,
    };
    let z = build_zip(&[e]);
    let start = std::time::Instant::now();
    let (err, peak) = peak_alloc(|| {
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        // The header disagrees with the directory's size: refused before any data.
        let mut m = npz.by_key("zeros").unwrap();
        let err = m.header().unwrap_err();
        assert_zip_error(&err, &["zeros.npy", "1048576 bytes"]);
        drop(m);
        // Raw reading stops at the declared size and reports the surplus.
        npz.by_key("zeros").unwrap().finish().unwrap_err()
    });
    assert_zip_error(&err, &["zeros.npy", "more than"]);
    assert!(peak < 1 << 20, "peak allocation {peak} bytes");
    assert!(start.elapsed().as_secs() < 5);
}

#[test]
fn member_shorter_than_declared_is_truncated_error() {
    // Header and directory agree on 8128 bytes, but the deflate stream holds only 200.
    let full = npy("<f8", vec![1000], &vec![0u8; 8000]);
    let mut e = Entry::deflated("short.npy", &full[..200]);
    e.size = full.len() as u64;
    e.crc = crc32(&full[..200]);
    let z = build_zip(&[e]);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    let mut m = npz.by_key("short").unwrap();
    m.header().unwrap();
    let err = m.read_raw().unwrap_err();
    assert_zip_error(&err, &["short.npy", "truncated", "200 of the 8128"]);
}

// ---- truncation ----

#[test]
fn every_truncation_of_an_archive_is_an_error() {
    let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
    for key in ["a", "b"] {
        let mut m = w
            .start_member(key, &Header::new("<f8".parse().unwrap(), vec![5]))
            .unwrap();
        std::io::Write::write_all(&mut m, &f64s(&[1.0, 2.0, 3.0, 4.0, 5.0])).unwrap();
        m.finish().unwrap();
    }
    let full = w.finish().unwrap().into_inner();
    for len in 0..full.len() {
        let cut = &full[..len];
        // Opening fails (the end-of-central-directory record is gone or points past the end)
        // or reading some member fails; nothing panics, nothing succeeds in full.
        let outcome = NpzArchive::from_bytes(cut).and_then(|mut npz| {
            for key in ["a", "b"] {
                npz.read_raw(key)?;
            }
            Ok(())
        });
        assert!(outcome.is_err(), "prefix of {len} bytes was accepted");
    }
    let mut npz = NpzArchive::from_bytes(&full).unwrap();
    assert_eq!(npz.read_raw("b").unwrap().len(), 128 + 40);
}

#[test]
fn data_cut_short_under_an_intact_directory() {
    // The local data is shorter than the directory says (bytes removed in the middle).
    let a = npy("<f8", vec![4], &f64s(&[1.0, 2.0, 3.0, 4.0]));
    let z = build_zip(&[Entry::stored("a.npy", &a)]);
    let mut cut = z.clone();
    // Remove 16 data bytes; the directory offsets now point 16 bytes too far.
    let data_start = 30 + "a.npy".len();
    cut.drain(data_start + 100..data_start + 116);
    match NpzArchive::from_bytes(&cut) {
        Err(e) => assert_eq!(e.kind().code(), "zip", "{e}"),
        Ok(mut npz) => {
            let err = npz.read_raw("a").unwrap_err();
            assert_eq!(err.kind().code(), "zip", "{err}");
        }
    }
}

#[test]
fn not_a_zip_file() {
    for bytes in [&b""[..], b"PK", b"\x93NUMPY\x01\x00", &[0u8; 100]] {
        let err = NpzArchive::from_bytes(bytes).unwrap_err();
        assert_eq!(err.kind().code(), "zip", "{err}");
    }
}

// ---- names ----

#[test]
fn duplicate_names_last_wins_like_numpy_or_are_rejected() {
    let first = npy("<f8", vec![1], &f64s(&[1.0]));
    let second = npy("<f8", vec![1], &f64s(&[2.0]));
    let z = build_zip(&[
        Entry::stored("a.npy", &first),
        Entry::stored("a.npy", &second),
    ]);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    assert!(npz.has_duplicate_names());
    assert_eq!(npz.len(), 1);
    assert_eq!(npz.read_raw("a").unwrap(), second);

    let err = NpzReaderBuilder::new()
        .reject_duplicate_names(true)
        .from_bytes(&z)
        .unwrap_err();
    assert_zip_error(&err, &["more than once"]);
}

#[test]
fn key_and_name_lookup_follow_numpy() {
    let one = npy("|u1", vec![1], &[1]);
    let two = npy("|u1", vec![1], &[2]);
    let three = npy("|u1", vec![1], &[3]);
    // Member "a" (no suffix) and "a.npy" both have key "a": the exact name wins, as in
    // np.load's dict; "a.npy" still reaches the other one.
    let z = build_zip(&[
        Entry::stored("a.npy", &one),
        Entry::stored("a", &two),
        Entry::stored("x.npy.npy", &three),
    ]);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "a", "x.npy"]);
    assert_eq!(npz.read_raw("a").unwrap(), two);
    assert_eq!(npz.read_raw("a.npy").unwrap(), one);
    assert_eq!(npz.by_name("a.npy").unwrap().read_raw().unwrap(), one);
    assert_eq!(npz.read_raw("x.npy").unwrap(), three);
    assert!(npz.by_name("x.npy").is_err());
    let err = npz.by_key("missing").unwrap_err();
    assert_zip_error(&err, &["\"missing\"", "\"a\"", "\"x.npy\""]);
}

#[test]
fn path_like_names_are_only_keys() {
    let a = npy("|u1", vec![2], &[1, 2]);
    let names = [
        "../evil.npy",
        "/abs/olute.npy",
        "dir/sub.npy",
        "C:\\win.npy",
        "nul\0byte.npy",
    ];
    let entries: Vec<Entry> = names.iter().map(|n| Entry::stored(n, &a)).collect();
    let z = build_zip(&entries);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    assert_eq!(
        npz.keys().collect::<Vec<_>>(),
        ["../evil", "/abs/olute", "dir/sub", "C:\\win", "nul\0byte"]
    );
    for n in names {
        assert_eq!(npz.by_name(n).unwrap().read_raw().unwrap(), a);
    }
    assert!(!std::path::Path::new("../evil.npy").exists());
}

#[test]
fn non_utf8_names_decode_as_cp437() {
    let a = npy("|u1", vec![1], &[9]);
    let mut e = Entry::stored("x", &a);
    e.name = b"caf\x82.npy".to_vec(); // CP437 0x82 is 'é'
    e.flags = 0;
    let z = build_zip(&[e]);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["café"]);
    assert_eq!(npz.read_raw("café").unwrap(), a);
}

// ---- unsupported members and limits ----

#[test]
fn unsupported_methods_and_encryption_are_clear_errors() {
    let a = npy("|u1", vec![1], &[1]);
    for (method, name) in [
        (12u16, "bzip2"),
        (14, "lzma"),
        (93, "zstd"),
        (9, "deflate64"),
    ] {
        let mut e = Entry::stored("m.npy", &a);
        e.method = method;
        let z = build_zip(&[e]);
        let mut npz = NpzArchive::from_bytes(&z).unwrap();
        assert_eq!(
            npz.member("m").unwrap().compression,
            Compression::Other(method)
        );
        let err = npz.by_key("m").unwrap_err();
        assert_zip_error(&err, &["\"m.npy\"", name, "not supported"]);
    }
    let mut e = Entry::stored("enc.npy", &a);
    e.flags |= 1;
    let z = build_zip(&[e]);
    let mut npz = NpzArchive::from_bytes(&z).unwrap();
    assert!(npz.member("enc").unwrap().encrypted);
    assert_zip_error(&npz.by_key("enc").unwrap_err(), &["enc.npy", "encrypted"]);
}

#[test]
fn member_count_and_size_limits() {
    let a = npy("|u1", vec![100], &[7; 100]);
    let entries: Vec<Entry> = (0..5)
        .map(|i| Entry::stored(&format!("m{i}.npy"), &a))
        .collect();
    let z = build_zip(&entries);
    let err = NpzReaderBuilder::new()
        .max_members(4)
        .from_bytes(&z)
        .unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded", "{err}");
    assert!(NpzReaderBuilder::new()
        .max_members(5)
        .from_bytes(&z)
        .is_ok());

    let mut npz = NpzReaderBuilder::new()
        .max_member_size(227)
        .from_bytes(&z)
        .unwrap();
    assert_eq!(npz.member("m0").unwrap().size, 228);
    assert_zip_error(&npz.by_key("m0").unwrap_err(), &["228 bytes", "227"]);
    let mut npz = NpzReaderBuilder::new()
        .max_member_size(228)
        .from_bytes(&z)
        .unwrap();
    assert_eq!(npz.read_raw("m0").unwrap(), a);
}

#[test]
fn header_limits_apply_to_members() {
    let a = npy("|u1", vec![1], &[1]);
    let z = build_zip(&[Entry::stored("a.npy", &a), Entry::stored("t.txt", b"hello")]);
    let mut npz = NpzReaderBuilder::new()
        .max_header_size(10)
        .from_bytes(&z)
        .unwrap();
    let err = npz.header("a").unwrap_err();
    assert_eq!(err.kind().code(), "header_too_large", "{err}");
    // A member that is not a .npy file has no header (NumPy returns its bytes instead).
    let err = npz.header("t.txt").unwrap_err();
    assert_eq!(err.kind().code(), "bad_magic", "{err}");
    assert_eq!(npz.read_raw("t.txt").unwrap(), b"hello");
}

// ---- the mapped archive (MmapNpz): every member's place is checked when it is opened ----

/// Maps `zip` from a file (the mapped archive reads only files).
fn open_mapped(zip: &[u8]) -> Result<MmapNpz, Error> {
    // One directory per call: the tests run in parallel.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = TempDir::new(&format!("npz-hostile-mmap-{n}"));
    let path = dir.join("h.npz");
    std::fs::write(&path, zip).unwrap();
    MmapNpz::open(&path)
}

/// The byte offset of the `i`-th central-directory entry of a `build_zip` archive.
fn cd_entry(zip: &[u8], i: usize) -> usize {
    let eocd = zip.len() - 22;
    let mut at = u32::from_le_bytes(zip[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
    for _ in 0..i {
        let field = |o: usize| u16::from_le_bytes([zip[at + o], zip[at + o + 1]]) as usize;
        at += 46 + field(28) + field(30) + field(32);
    }
    at
}

fn put_u32(zip: &mut [u8], at: usize, v: u32) {
    zip[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn mapped_archives_of_handmade_members_read_in_place() {
    let a = npy("<f8", vec![3], &f64s(&[1.0, 2.0, 3.0]));
    let mut z64 = Entry::stored("z.npy", &a);
    z64.zip64 = true;
    let z = build_zip(&[
        Entry::stored("a.npy", &a),
        Entry::deflated("b.npy", &a),
        z64,
    ]);
    let npz = open_mapped(&z).unwrap();
    for key in ["a", "z"] {
        assert_eq!(
            npz.array(key).unwrap().to_vec::<f64>().unwrap(),
            [1.0, 2.0, 3.0]
        );
    }
    assert_zip_error(&npz.array("b").unwrap_err(), &["\"b.npy\"", "deflate"]);
    // A stored member whose .npy header claims more data than the member holds.
    let short = npy("<f8", vec![4], &f64s(&[1.0, 2.0, 3.0]));
    let npz = open_mapped(&build_zip(&[Entry::stored("s.npy", &short)])).unwrap();
    assert_zip_error(
        &npz.array("s").unwrap_err(),
        &["\"s.npy\"", "not a valid .npy"],
    );
    // Encrypted (flag bit 0): refused with the reason.
    let mut enc = Entry::stored("e.npy", &a);
    enc.flags |= 1;
    let npz = open_mapped(&build_zip(&[enc])).unwrap();
    assert_zip_error(&npz.array("e").unwrap_err(), &["\"e.npy\"", "encrypted"]);
}

#[test]
fn mapped_archive_refuses_a_member_past_the_file() {
    let a = npy("<f8", vec![3], &f64s(&[1.0, 2.0, 3.0]));
    // Sizes in a data descriptor (flag bit 3): only the central directory's count, and it says
    // the member runs a gigabyte past the file.
    let mut e = Entry::stored("a.npy", &a);
    e.flags |= 1 << 3;
    let mut z = build_zip(&[e]);
    let cd = cd_entry(&z, 0);
    put_u32(&mut z, cd + 20, 1 << 30);
    put_u32(&mut z, cd + 24, 1 << 30);
    let err = open_mapped(&z).unwrap_err();
    assert_zip_error(&err, &["\"a.npy\"", "1073741824 stored bytes", "run past"]);

    // A local header said to start past the end of the file (or of the members).
    let mut z = build_zip(&[Entry::stored("a.npy", &a)]);
    let cd = cd_entry(&z, 0);
    put_u32(&mut z, cd + 42, 0x7fff_0000);
    let err = open_mapped(&z).unwrap_err();
    assert_eq!(err.kind().code(), "zip", "{err}");
}

#[test]
fn mapped_archive_refuses_a_central_directory_lying_about_sizes() {
    let a = npy("<f8", vec![3], &f64s(&[1.0, 2.0, 3.0]));
    let b = npy("<i4", vec![2], &[1, 0, 0, 0, 2, 0, 0, 0]);
    // The central directory says member a is 16 bytes longer: it would take in b's header.
    let mut z = build_zip(&[Entry::stored("a.npy", &a), Entry::stored("b.npy", &b)]);
    let cd = cd_entry(&z, 0);
    let n = a.len() as u32 + 16;
    put_u32(&mut z, cd + 20, n);
    put_u32(&mut z, cd + 24, n);
    let err = open_mapped(&z).unwrap_err();
    assert_zip_error(
        &err,
        &["\"a.npy\"", "local header", "sizes", "central directory"],
    );
    // The copying archive too refuses to read it (the CRC or the length fails).
    assert!(NpzArchive::from_bytes(&z)
        .and_then(|mut npz| npz.read_raw("a"))
        .is_err());
}

#[test]
fn mapped_archive_refuses_overlapping_members() {
    // Member b's local entry is also member a's content: a's data holds b's header and data
    // (the overlapping-file zip bomb's construction). Every local header agrees with the
    // central directory; only the overlap is wrong.
    let b = npy("<i4", vec![2], &[1, 0, 0, 0, 2, 0, 0, 0]);
    let only_b = build_zip(&[Entry::stored("b.npy", &b)]);
    let b_local = &only_b[..cd_entry(&only_b, 0)];
    let mut z = build_zip(&[Entry::stored("a.npy", b_local), Entry::stored("b.npy", &b)]);
    let cd_b = cd_entry(&z, 1);
    put_u32(&mut z, cd_b + 42, 30 + 5); // b's local header inside a's data
    let err = open_mapped(&z).unwrap_err();
    assert_zip_error(&err, &["\"a.npy\"", "\"b.npy\"", "overlap"]);
}

#[test]
fn mapped_archive_refuses_a_local_header_disagreeing_with_the_central_directory() {
    let a = npy("<f8", vec![3], &f64s(&[1.0, 2.0, 3.0]));
    let fresh = || build_zip(&[Entry::stored("a.npy", &a)]);
    // Another name.
    let mut z = fresh();
    z[30] = b'x';
    assert_zip_error(
        &open_mapped(&z).unwrap_err(),
        &["local header", "name", "\"x.npy\""],
    );
    // Another method.
    let mut z = fresh();
    z[8] = 8;
    assert_zip_error(
        &open_mapped(&z).unwrap_err(),
        &["local header", "method", "deflate"],
    );
    // Another CRC-32.
    let mut z = fresh();
    z[14] ^= 0xff;
    assert_zip_error(&open_mapped(&z).unwrap_err(), &["local header", "CRC-32"]);
    // No local header where the central directory points.
    let mut z = fresh();
    let cd = cd_entry(&z, 0);
    put_u32(&mut z, cd + 42, 3);
    assert_zip_error(
        &open_mapped(&z).unwrap_err(),
        &["no local header at byte 3"],
    );
}
