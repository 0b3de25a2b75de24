//! A zip archive's end of central directory (zip64 too), its directory entries and local
//! headers, parsed from bytes with every size checked; and CRC-32. No I/O: `npz.rs` fetches
//! the bytes.

use npy_serde::error::{Error, ErrorKind, Result};

const EOCD_SIG: u32 = 0x0605_4b50;
const LOCATOR_SIG: u32 = 0x0706_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ENTRY_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;
/// The fixed part of an end of central directory record, of a directory entry, of a local
/// header, of a zip64 end record, and a zip64 locator.
pub(crate) const EOCD_LEN: usize = 22;
const ENTRY_LEN: usize = 46;
pub(crate) const LOCAL_LEN: usize = 30;
pub(crate) const ZIP64_EOCD_LEN: usize = 56;
const LOCATOR_LEN: usize = 20;
/// The longest tail that can hold an end of central directory record (a 65535-byte comment)
/// and a zip64 locator before it.
pub(crate) const MAX_TAIL: u64 = (EOCD_LEN + 65535 + LOCATOR_LEN) as u64;

fn zip(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Zip(msg.into()))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// Where the central directory is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Directory {
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) entries: u64,
    /// Where the directory must end: the zip64 end record or the end record.
    pub(crate) end: u64,
}

/// What the tail says: the directory, or where its zip64 end record is (outside the tail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    Directory(Directory),
    Zip64At(u64),
}

/// Finds the end of central directory record in `tail`, the last bytes of an object of `size`
/// bytes, and reads it (and the zip64 end record, if the tail holds it).
pub(crate) fn read_tail(tail: &[u8], size: u64) -> Result<Tail> {
    let start = size
        .checked_sub(tail.len() as u64)
        .ok_or_else(|| zip("the tail is longer than the archive"))?;
    let at = (0..=tail.len().saturating_sub(EOCD_LEN))
        .rev()
        .find(|&i| {
            tail.len() >= i + EOCD_LEN
                && u32_at(tail, i) == EOCD_SIG
                && i + EOCD_LEN + usize::from(u16_at(tail, i + 20)) <= tail.len()
        })
        .ok_or_else(|| zip("no end of central directory record: not a zip archive"))?;
    let e = &tail[at..];
    let eocd_pos = start + at as u64;
    let entries = u64::from(u16_at(e, 10));
    let dir_size = u64::from(u32_at(e, 12));
    let dir_offset = u64::from(u32_at(e, 16));
    if u16_at(e, 4) != 0 || u16_at(e, 6) != 0 {
        return Err(zip("a multi-disk archive"));
    }
    let zip64 = entries == 0xFFFF || dir_size == 0xFFFF_FFFF || dir_offset == 0xFFFF_FFFF;
    let has_locator = at >= LOCATOR_LEN && u32_at(tail, at - LOCATOR_LEN) == LOCATOR_SIG;
    if !has_locator {
        if zip64 && eocd_pos >= LOCATOR_LEN as u64 && at < LOCATOR_LEN {
            return Err(zip("the zip64 end locator is not in the tail"));
        }
        return checked(dir_offset, dir_size, entries, eocd_pos).map(Tail::Directory);
    }
    let record = u64_at(tail, at - LOCATOR_LEN + 8);
    let locator_pos = eocd_pos - LOCATOR_LEN as u64;
    if record
        .checked_add(ZIP64_EOCD_LEN as u64)
        .is_none_or(|end| end > locator_pos)
    {
        return Err(zip(format!(
            "the zip64 end record at byte {record} overlaps the locator at byte {locator_pos}"
        )));
    }
    match record.checked_sub(start) {
        Some(rel) => read_zip64(&tail[rel as usize..], record, locator_pos).map(Tail::Directory),
        None => Ok(Tail::Zip64At(record)),
    }
}

/// The archive comment in `tail` (the last bytes of an archive): the one after the end of
/// central directory record whose comment ends exactly where `tail` ends, as zip readers take
/// it (`npy_serde::npz::comment_of_tail`'s rule, here without npy-serde's `npz` feature);
/// empty when there is none.
pub(crate) fn comment(tail: &[u8]) -> &[u8] {
    let Some(last) = tail.len().checked_sub(EOCD_LEN) else {
        return &[];
    };
    (0..=last)
        .rev()
        .find_map(|at| {
            let len = usize::from(u16_at(tail, at + 20));
            (u32_at(tail, at) == EOCD_SIG && at + EOCD_LEN + len == tail.len())
                .then(|| &tail[at + EOCD_LEN..])
        })
        .unwrap_or_default()
}

/// Reads the zip64 end of central directory record at the start of `rec` (at byte `pos`,
/// before the locator at `locator_pos`).
pub(crate) fn read_zip64(rec: &[u8], pos: u64, locator_pos: u64) -> Result<Directory> {
    if rec.len() < ZIP64_EOCD_LEN || u32_at(rec, 0) != ZIP64_EOCD_SIG {
        return Err(zip(format!(
            "no zip64 end of central directory record at byte {pos}"
        )));
    }
    let entries = u64_at(rec, 32);
    checked(
        u64_at(rec, 48),
        u64_at(rec, 40),
        entries,
        pos.min(locator_pos),
    )
}

/// A directory that ends before `end` and can hold `entries` entries.
fn checked(offset: u64, size: u64, entries: u64, end: u64) -> Result<Directory> {
    if offset.checked_add(size).is_none_or(|e| e > end) {
        return Err(zip(format!(
            "the central directory (bytes {offset}..+{size}) runs past its end record at byte \
             {end}"
        )));
    }
    if entries
        .checked_mul(ENTRY_LEN as u64)
        .is_none_or(|n| n > size)
    {
        return Err(zip(format!(
            "{entries} entries cannot fit in a central directory of {size} bytes"
        )));
    }
    Ok(Directory {
        offset,
        size,
        entries,
        end,
    })
}

/// One member, as the central directory describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) flags: u16,
    pub(crate) method: u16,
    pub(crate) crc32: u32,
    pub(crate) compressed: u64,
    pub(crate) size: u64,
    pub(crate) local: u64,
}

/// The entries of the central directory `dir` (`count` of them, at most `max`), each
/// member's local header and data checked to lie before the directory at byte `dir_at`.
pub(crate) fn entries(dir: &[u8], count: u64, max: u64, dir_at: u64) -> Result<Vec<Entry>> {
    if count > max {
        return Err(Error::limit("the number of members", max, count));
    }
    // `count` entries fit in `dir` (checked with its size): the allocation is bounded.
    let mut out = Vec::with_capacity(count as usize);
    let mut at = 0usize;
    for i in 0..count {
        let fixed = dir
            .get(at..at + ENTRY_LEN)
            .filter(|e| u32_at(e, 0) == ENTRY_SIG)
            .ok_or_else(|| {
                zip(format!(
                    "central directory entry {i} is missing or malformed"
                ))
            })?;
        let (nlen, xlen, clen) = (
            usize::from(u16_at(fixed, 28)),
            usize::from(u16_at(fixed, 30)),
            usize::from(u16_at(fixed, 32)),
        );
        let var = dir
            .get(at + ENTRY_LEN..at + ENTRY_LEN + nlen + xlen + clen)
            .ok_or_else(|| {
                zip(format!(
                    "central directory entry {i} runs past the directory"
                ))
            })?;
        let name = String::from_utf8_lossy(&var[..nlen]).into_owned();
        let mut e = Entry {
            name,
            flags: u16_at(fixed, 8),
            method: u16_at(fixed, 10),
            crc32: u32_at(fixed, 16),
            compressed: u64::from(u32_at(fixed, 20)),
            size: u64::from(u32_at(fixed, 24)),
            local: u64::from(u32_at(fixed, 42)),
        };
        zip64_extra(&var[nlen..nlen + xlen], &mut e)?;
        // A member's local header (at least) and data lie before the directory.
        let data_end = (e.local.checked_add(LOCAL_LEN as u64 + nlen as u64))
            .and_then(|v| v.checked_add(e.compressed));
        if data_end.is_none_or(|end| end > dir_at) {
            return Err(zip(format!(
                "member {:?}: its {} bytes at byte {} run past the central directory at byte \
                 {dir_at}",
                e.name, e.compressed, e.local
            )));
        }
        out.push(e);
        at += ENTRY_LEN + nlen + xlen + clen;
    }
    Ok(out)
}

/// The zip64 extra field's sizes and offset, for the fields the entry marks `0xFFFFFFFF`.
fn zip64_extra(mut extra: &[u8], e: &mut Entry) -> Result<()> {
    while extra.len() >= 4 {
        let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
        let Some(body) = extra.get(4..4 + len) else {
            return Err(zip(format!(
                "member {:?}: an extra field runs past its end",
                e.name
            )));
        };
        if id == 1 {
            let mut b = body;
            for field in [&mut e.size, &mut e.compressed, &mut e.local] {
                if *field == 0xFFFF_FFFF {
                    if b.len() < 8 {
                        return Err(zip(format!("member {:?}: a short zip64 field", e.name)));
                    }
                    *field = u64_at(b, 0);
                    b = &b[8..];
                }
            }
        }
        extra = &extra[4 + len..];
    }
    Ok(())
}

/// The length of the local header at the start of `local` (fixed part, name, extra field),
/// checked.
pub(crate) fn local_len(local: &[u8], e: &Entry) -> Result<u64> {
    if local.len() < LOCAL_LEN || u32_at(local, 0) != LOCAL_SIG {
        return Err(zip(format!(
            "member {:?}: no local header at byte {}",
            e.name, e.local
        )));
    }
    Ok(LOCAL_LEN as u64 + u64::from(u16_at(local, 26)) + u64::from(u16_at(local, 28)))
}

/// CRC-32 (IEEE, as zip uses), slicing by 8.
#[derive(Clone, Debug)]
pub(crate) struct Crc(u32);

const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = tables();

impl Crc {
    pub(crate) fn new() -> Self {
        Crc(!0)
    }

    pub(crate) fn update(&mut self, bytes: &[u8]) {
        let t = &TABLES;
        let mut c = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for b in &mut chunks {
            let lo = c ^ u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            c = t[7][(lo & 0xFF) as usize]
                ^ t[6][((lo >> 8) & 0xFF) as usize]
                ^ t[5][((lo >> 16) & 0xFF) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][b[4] as usize]
                ^ t[2][b[5] as usize]
                ^ t[1][b[6] as usize]
                ^ t[0][b[7] as usize];
        }
        for &b in chunks.remainder() {
            c = t[0][((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    pub(crate) fn value(&self) -> u32 {
        !self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_of_known_strings() {
        let crc = |b: &[u8]| {
            let mut c = Crc::new();
            c.update(b);
            c.value()
        };
        assert_eq!(crc(b""), 0);
        assert_eq!(crc(b"123456789"), 0xCBF4_3926);
        let long: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let mut split = Crc::new();
        split.update(&long[..333]);
        split.update(&long[333..]);
        assert_eq!(split.value(), crc(&long));
    }

    #[test]
    fn the_comment_is_the_one_that_ends_the_tail() {
        let mut eocd = vec![0x50, 0x4b, 0x05, 0x06];
        eocd.extend_from_slice(&[0; 16]);
        eocd.extend_from_slice(&5u16.to_le_bytes());
        let mut tail = b"data".to_vec();
        tail.extend_from_slice(&eocd);
        tail.extend_from_slice(b"hello");
        assert_eq!(comment(&tail), b"hello");
        // A comment that does not end the tail is not the archive's.
        tail.push(b'!');
        assert_eq!(comment(&tail), b"");
        assert_eq!(comment(b"PK\x05\x06"), b"");
        assert_eq!(comment(b""), b"");
    }

    #[test]
    fn hostile_tails_are_errors() {
        assert!(read_tail(b"", 0).is_err());
        assert!(read_tail(b"PK\x05\x06", 4).is_err());
        // An end record whose directory runs past it.
        let mut e = vec![0u8; EOCD_LEN];
        e[..4].copy_from_slice(&EOCD_SIG.to_le_bytes());
        e[10..12].copy_from_slice(&1u16.to_le_bytes());
        e[12..16].copy_from_slice(&46u32.to_le_bytes());
        e[16..20].copy_from_slice(&0u32.to_le_bytes());
        let err = read_tail(&e, 22).unwrap_err();
        assert!(err.to_string().contains("runs past"), "{err}");
        // More entries than the directory holds.
        let mut big = vec![0u8; 100];
        big.extend_from_slice(&e);
        let n = big.len();
        big[n - 12..n - 10].copy_from_slice(&3u16.to_le_bytes());
        let err = read_tail(&big, 122).unwrap_err();
        assert!(err.to_string().contains("cannot fit"), "{err}");
    }
}
