//! The `npy` target (bytes -> Array / Value).

use super::*;

// ---------------------------------------------------------------------------------------------
// npy: bytes -> Array / Value
// ---------------------------------------------------------------------------------------------

/// Target `npy`: the dynamic `Array` reader from a slice and from a chunked reader (which must
/// agree), serde into `Value`, and the streaming `RecordReader`, with default options and with
/// raised header limits plus data-size limits.
pub fn npy(data: &[u8]) {
    // Values without data bytes are the one thing whose count the input does not bound: a
    // small limit keeps every input fast (the code paths are those of the defaults).
    npy_with(data, &ReaderBuilder::new().max_empty_items(1 << 10));
    npy_with(
        data,
        &ReaderBuilder::new()
            .with_limits(raised_limits())
            .max_data_size(1 << 20)
            .max_empty_items(1 << 8),
    );
}

fn npy_with(data: &[u8], rb: &ReaderBuilder) {
    let chunk = 1 + data.last().copied().unwrap_or(0) as usize % 13;
    let deserialize_slice = rb.array_from_slice(data);
    let deserialize_reader = rb.read_array(Chunked::new(data, chunk));
    match (&deserialize_slice, &deserialize_reader) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.dtype, b.dtype);
            assert_eq!(a.shape, b.shape);
            assert!(
                same_values(&a.values, &b.values),
                "slice and reader values differ"
            );
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "slice and reader disagree: {:?} vs {:?}",
            deserialize_slice.as_ref().map(|a| (&a.dtype, &a.shape)),
            deserialize_reader.as_ref().map(|a| (&a.dtype, &a.shape))
        ),
    }
    if let Ok(a) = &deserialize_slice {
        let count: u64 = a.shape.iter().product();
        assert_eq!(a.values.len() as u64, count);
        let _ = a.to_nested();
    }

    let _ = rb.deserialize_slice::<Value>(data);
    let _ = rb.deserialize_reader::<_, Value>(Chunked::new(data, chunk));
    let _ = rb.from_slice_serde::<Value>(data);
    let _ = rb.from_reader_serde::<_, Value>(Chunked::new(data, chunk));

    if let Ok(records) = rb.records_serde::<_, Value>(Chunked::new(data, chunk)) {
        let total = records.len();
        let mut n = 0u64;
        for r in records {
            if r.is_err() {
                break;
            }
            n += 1;
        }
        assert!(n <= total);
    }
}
