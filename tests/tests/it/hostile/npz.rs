//! Hostile archives: corrupt CRCs and deflate streams, bombs, lying sizes and headers, garbage.

use super::*;

// ---------------------------------------------------------------------------------------------
// npz
// ---------------------------------------------------------------------------------------------

/// An archive with one member `a` holding `data` as a `|u1` array (stored or deflated).
fn npz_with(data: &[u8], compression: Compression) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = NpzWriter::new(&mut out).with_compression(compression);
    let mut m = w
        .start_member(
            "a",
            &Header::new("|u1".parse().unwrap(), vec![data.len() as u64]),
        )
        .unwrap();
    std::io::Write::write_all(&mut m, data).unwrap();
    m.finish().unwrap();
    w.finish().unwrap();
    out.into_inner()
}

/// Offsets of every occurrence of a 4-byte zip signature.
fn find_sig(zip: &[u8], sig: &[u8; 4]) -> Vec<usize> {
    zip.windows(4)
        .enumerate()
        .filter(|(_, w)| w == sig)
        .map(|(i, _)| i)
        .collect()
}

/// The (compressed, uncompressed) size fields of the central directory entry at `cd`, as
/// offsets into the archive: the 8-byte zip64 extra fields if the entry has them, else the
/// 4-byte ones.
fn size_fields(zip: &[u8], cd: usize) -> (usize, usize, usize) {
    let u16_at = |o: usize| u16::from_le_bytes([zip[o], zip[o + 1]]) as usize;
    let name_len = u16_at(cd + 28);
    let extra_len = u16_at(cd + 30);
    let mut p = cd + 46 + name_len;
    let end = p + extra_len;
    while p + 4 <= end {
        let (id, len) = (u16_at(p), u16_at(p + 2));
        if id == 1 {
            // zip64: [uncompressed][compressed] as 8-byte values, present when the 4-byte
            // field is 0xFFFFFFFF.
            let mut q = p + 4;
            let mut fields = (cd + 20, cd + 24, 4);
            if zip[cd + 24..cd + 28] == [0xff; 4] {
                fields.1 = q;
                fields.2 = 8;
                q += 8;
            }
            if zip[cd + 20..cd + 24] == [0xff; 4] {
                fields.0 = q;
            }
            return fields;
        }
        p += 4 + len;
    }
    (cd + 20, cd + 24, 4)
}

fn put(zip: &mut [u8], at: usize, width: usize, v: u64) {
    zip[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

#[test]
fn npz_corrupt_crc() {
    for c in [Compression::Stored, Compression::Deflate] {
        let mut zip = npz_with(&[7; 1000], c);
        // Flip the CRC in the central directory and in the local header.
        for cd in find_sig(&zip, b"PK\x01\x02") {
            zip[cd + 16] ^= 0x55;
        }
        for lh in find_sig(&zip, b"PK\x03\x04") {
            zip[lh + 14] ^= 0x55;
        }
        let mut a = NpzArchive::from_bytes(&zip).unwrap();
        let e = a.read_raw("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
        let e = a.read_array("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
        let e = a.deserialize::<Vec<u8>>("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
    }
    // A corrupt data byte (stored) is caught by the CRC.
    let mut zip = npz_with(&[7; 1000], Compression::Stored);
    let at = zip.windows(8).position(|w| w == [7; 8]).unwrap() + 500;
    zip[at] = 8;
    let mut a = NpzArchive::from_bytes(&zip).unwrap();
    assert_eq!(a.read_raw("a").unwrap_err().kind().code(), "zip");
    assert_eq!(a.read_array("a").unwrap_err().kind().code(), "zip");
}

#[test]
fn npz_corrupt_deflate_stream() {
    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let good = npz_with(&data, Compression::Deflate);
    let lh = find_sig(&good, b"PK\x03\x04")[0];
    let name_len = u16::from_le_bytes([good[lh + 26], good[lh + 27]]) as usize;
    let extra_len = u16::from_le_bytes([good[lh + 28], good[lh + 29]]) as usize;
    let start = lh + 30 + name_len + extra_len;
    let mut failures = 0;
    for i in 0..64 {
        let mut zip = good.clone();
        let at = start + (i * 37) % 400;
        zip[at] ^= 0xa5;
        let Ok(mut a) = NpzArchive::from_bytes(&zip) else {
            continue;
        };
        match a.read_raw("a") {
            Ok(raw) => assert_eq!(raw, {
                // A flip the deflate format absorbs must still decode to the right bytes
                // (the CRC guarantees it).
                NpzArchive::from_bytes(&good)
                    .unwrap()
                    .read_raw("a")
                    .unwrap()
            }),
            Err(e) => {
                assert!(matches!(e.kind().code(), "zip" | "io"), "{e}");
                failures += 1;
            }
        }
        let _ = a.read_array("a");
    }
    assert!(failures > 32, "only {failures} of 64 corruptions detected");
}

#[test]
fn npz_bomb_and_lying_sizes() {
    // 32 MiB of zeros deflate to ~32 KiB.
    let n = 32 << 20;
    let bomb = npz_with(&vec![0u8; n], Compression::Deflate);
    assert!(bomb.len() < 256 * 1024, "{}", bomb.len());
    // A member-size limit refuses it before inflating anything.
    fails_small("bomb with a 1 MiB limit", "zip", 256 * 1024, || {
        NpzReaderBuilder::new()
            .max_member_size(MIB)
            .from_bytes(&bomb)?
            .read_raw("a")
    });
    // The directory lies: says the member inflates to 1000 bytes (and to something absurd).
    for claim in [1000u64, 100, 0] {
        let mut zip = bomb.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("bomb claiming {claim} bytes");
        let (r, peak) = peak_alloc(|| -> Result<(), Error> {
            let mut a = NpzArchive::from_bytes(&zip)?;
            let raw = a.read_raw("a");
            let arr = a.read_array("a");
            match (raw, arr) {
                (Err(e), _) | (_, Err(e)) => Err(e),
                _ => Ok(()),
            }
        });
        let e = r.expect_err(&what);
        assert_eq!(e.kind().code(), "zip", "{what}: {e}");
        assert!(peak < 4 * MIB, "{what}: allocated {peak}");
    }
    // Claims larger than deflate can produce from the compressed bytes (zip64-sized lies).
    for claim in [u32::MAX as u64 - 1, 1 << 40, u64::MAX] {
        let mut zip = bomb.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("claiming {claim} bytes");
        fails_small(&what, "zip", 4 * MIB, || {
            NpzArchive::from_bytes(&zip)?.read_raw("a")
        });
    }
    // Stored members whose compressed and uncompressed sizes disagree.
    let stored = npz_with(&[1; 4096], Compression::Stored);
    for claim in [10u64, 1 << 33, u64::MAX] {
        let mut zip = stored.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("stored claiming {claim}");
        fails_small(&what, "zip", MIB, || {
            NpzArchive::from_bytes(&zip)?.read_array("a")
        });
    }
}

#[test]
fn npz_member_header_lies() {
    // A member whose .npy header declares 10^12 elements, with 16 bytes of data.
    let npy = huge_shape("'<f8'", false, "(1000000000000,)");
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = NpzWriter::new(&mut out);
    w.add_raw("a.npy", &npy).unwrap();
    w.finish().unwrap();
    let zip = out.into_inner();
    for code_ok in [
        peak_alloc(|| NpzArchive::from_bytes(&zip).unwrap().read_array("a")),
        peak_alloc(|| {
            NpzArchive::from_bytes(&zip)
                .unwrap()
                .deserialize::<Vec<f64>>("a")
                .map(|_| Array::from_slice(&[]).unwrap())
        }),
    ] {
        let (r, peak) = code_ok;
        let e = r.unwrap_err();
        assert!(matches!(e.kind().code(), "unexpected_eof" | "zip"), "{e}");
        assert!(peak < MIB, "{e}: allocated {peak}");
    }
}

#[test]
fn npz_garbage() {
    for bytes in [
        &b""[..],
        b"PK",
        b"PK\x05\x06",
        b"PK\x03\x04\x14\x00\x00\x00\x00\x00",
        b"\x93NUMPY\x01\x00",
    ] {
        assert!(NpzArchive::from_bytes(bytes).is_err(), "{bytes:?}");
    }
    // An end-of-central-directory record claiming 65535 entries at a bogus offset.
    let mut eocd = b"PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff".to_vec();
    eocd.extend_from_slice(&u32::MAX.to_le_bytes());
    eocd.extend_from_slice(&0u32.to_le_bytes());
    eocd.extend_from_slice(&[0, 0]);
    fails_small("eocd claiming 65535 entries", "zip", MIB, || {
        NpzArchive::from_bytes(&eocd).map(|_| ())
    });
}
