//! The `mmap_npz` target (bytes -> the mapped archive, every stored member viewed in place).

use super::*;

// ---------------------------------------------------------------------------------------------
// mmap_npz: bytes -> the mapped archive, every stored member viewed in place
// ---------------------------------------------------------------------------------------------

/// Target `mmap_npz`: the bytes as a mapped archive ([`MmapNpz`], default and small limits):
/// opening checks every member's place, so whatever it hands out must lie inside the archive;
/// each stored member viewed in place (slices, records, one record, the whole array) must
/// agree with the copying reader where both succeed (the copying reader also checks the
/// CRC-32, which the views skip).
pub fn mmap_npz(data: &[u8]) {
    mmap_npz_with(&NpzReaderBuilder::new(), data);
    mmap_npz_with(
        &NpzReaderBuilder::new()
            .max_members(64)
            .max_header_size(1 << 16)
            .reject_duplicate_names(true),
        data,
    );
}

fn mmap_npz_with(builder: &NpzReaderBuilder, data: &[u8]) {
    let Ok(npz) = MmapNpz::from_bytes_with(data, builder) else {
        return;
    };
    let whole = npz.as_bytes().as_ptr_range();
    let inside = |b: &[u8]| {
        b.is_empty() || (whole.contains(&b.as_ptr()) && b.as_ptr_range().end <= whole.end)
    };
    let mut copy = npz.archive().ok();
    for (i, m) in npz.members().iter().enumerate() {
        if let Ok(b) = npz.stored_bytes(&m.key) {
            assert!(inside(b), "{}: stored bytes outside the map", m.name);
            assert_eq!(b.len() as u64, m.compressed_size, "{}", m.name);
        }
        let Ok(a) = npz.array_at(i) else { continue };
        assert!(
            inside(a.as_bytes()) && inside(a.data()),
            "{}: outside the map",
            m.name
        );
        assert_eq!(
            a.as_bytes().len() as u64,
            m.size,
            "{}: the member is the .npy",
            m.name
        );
        let off = npz
            .data_offset(&m.key)
            .expect("data_offset of a mapped member");
        assert_eq!(
            a.data().as_ptr() as usize - whole.start as usize,
            off as usize,
            "{}",
            m.name
        );
        if let Ok(v) = a.as_slice::<u8>() {
            assert_eq!(v.len(), a.data().len());
        }
        let _ = a.as_slice::<f64>();
        let _ = a.as_slice::<[u16; 2]>();
        let n = a.len();
        if n > 0 {
            let _ = a.record_serde::<Value>(n - 1);
        }
        assert!(a.record_serde::<Value>(n).is_err(), "record past the end");
        if let Ok(records) = a.records_serde::<Value>() {
            for r in records.take(64) {
                if r.is_err() {
                    break;
                }
            }
        }
        let mapped = a.to_array();
        // A duplicate name lists the last entry, which both readers read by name.
        if let (Ok(mapped), Some(Ok(copied))) = (
            &mapped,
            copy.as_mut()
                .map(|c| c.by_name(&m.name).and_then(|mm| mm.read_array())),
        ) {
            assert!(
                same_values(&mapped.values, &copied.values),
                "{}: mapped and copied arrays differ",
                m.name
            );
            assert_eq!(mapped.shape, copied.shape);
        }
        let _ = npz.verify(&m.key);
    }
}
