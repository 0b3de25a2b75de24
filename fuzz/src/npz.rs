//! The `npz` target (bytes -> every member).

use super::*;

// ---------------------------------------------------------------------------------------------
// npz: bytes -> every member
// ---------------------------------------------------------------------------------------------

/// Target `npz`: open the bytes as an archive (default limits, and small ones), then read every
/// member every way the public API offers: header, `Array`, serde `Value`, streamed records,
/// raw bytes, a member dropped half read; by index and by key.
pub fn npz(data: &[u8]) {
    npz_with(&NpzReaderBuilder::new(), data);
    npz_with(
        &NpzReaderBuilder::new()
            .max_members(64)
            .max_member_size(1 << 20)
            .max_header_size(1 << 16)
            .reject_duplicate_names(true),
        data,
    );
}

fn npz_with(builder: &NpzReaderBuilder, data: &[u8]) {
    let Ok(mut archive) = builder.from_bytes(data) else {
        return;
    };
    let n = archive.len();
    assert_eq!(archive.members().len(), n);
    let keys: Vec<String> = archive.keys().map(str::to_string).collect();
    for i in 0..n {
        if let Ok(mut m) = archive.by_index(i) {
            let _ = m.header();
        }
        if let Ok(m) = archive.by_index(i) {
            if let Ok(a) = m.read_array() {
                assert_eq!(a.values.len() as u64, a.shape.iter().product::<u64>());
            }
        }
        if let Ok(m) = archive.by_index(i) {
            let _ = m.deserialize::<Value>();
        }
        if let Ok(m) = archive.by_index(i) {
            if let Ok(records) = m.records_serde::<Value>() {
                for r in records {
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
        let size = archive.members()[i].size;
        if let Ok(m) = archive.by_index(i) {
            if let Ok(raw) = m.read_raw() {
                // Reading is checked against the declared size.
                assert_eq!(raw.len() as u64, size);
            }
        }
        if let Ok(mut m) = archive.by_index(i) {
            let mut two = [0u8; 2];
            let _ = m.read(&mut two);
        }
    }
    for k in &keys {
        let _ = archive.header(k);
        let _ = archive.read_array(k);
        let _ = archive.deserialize::<Vec<i64>>(k);
    }
}
