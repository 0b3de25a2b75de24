//! The `pickle` target (the data-only pickle reader, on a whole `.npy` object array or a bare pickle).

use super::*;

// ---------------------------------------------------------------------------------------------
// pickle: the data-only pickle reader, on a whole `.npy` object array or a bare pickle
// ---------------------------------------------------------------------------------------------

/// The `pickle` target: the input as a `.npy` file (an object array, read with
/// `allow_pickle_data`) when it starts with the magic string, else as a bare pickle, under each
/// Python 2 string encoding and with small expansion limits (the code paths are the defaults').
/// Invariants: an object array holds exactly shape-product values, and reading is
/// deterministic; the element door (`from_slice_serde`, strings moved out of the graph) gives
/// what the whole expansion gives; any value deserializes through serde without a panic; the scan of
/// `npy info` finishes.
pub fn pickle(data: &[u8]) {
    use npy_serde::pickle::{load, Encoding, PickleOptions, PyValue};
    let last = data.last().copied().unwrap_or(0);
    let encoding = match last % 3 {
        0 => Encoding::Ascii,
        1 => Encoding::Latin1,
        _ => Encoding::Bytes,
    };
    let opts = PickleOptions::default()
        .encoding(encoding)
        .max_depth(64)
        .max_values(1 << 16)
        .max_bytes(1 << 20);
    let check = |v: PyValue| {
        let _ = serde::de::IgnoredAny::deserialize(v.clone());
        let _ = Vec::<Option<String>>::deserialize(v.clone());
        let _ = <(f64, Vec<u8>)>::deserialize(v);
    };
    if data.starts_with(b"\x93NUMPY") {
        let rb = ReaderBuilder::new()
            .allow_pickle_data(true)
            .pickle_options(opts);
        let first = rb.read_objects_slice(data);
        let again = rb.read_objects_slice(data);
        assert_eq!(first.is_ok(), again.is_ok(), "reading twice differs");
        // The element door moves strings out of the graph one at a time: when both doors read
        // the file, the same values (a file of another dtype, such as an empty '|G' array,
        // reads through the element door's other paths: fuzz-regressions/pickle-1.bin).
        // The streaming door over any `Read` gives the slice door's elements (both take the
        // streaming path of a NumPy-made array of strings: stream.rs).
        let fast = rb.from_slice_serde::<Option<String>>(data);
        if let (Ok(f), Ok(r)) = (&fast, rb.from_reader_serde::<_, Option<String>>(data)) {
            assert_eq!(*f, r, "the Read door differs from the slice door");
        }
        if let (Ok(fast), Ok(a)) = (fast, &first) {
            if let Ok(slow) = a
                .values
                .iter()
                .map(|v| Option::<String>::deserialize(v.clone()))
                .collect::<Result<Vec<_>, _>>()
            {
                assert_eq!(fast, slow, "the element door differs from the expansion");
            }
        }
        if let Ok(a) = first {
            let n = a.shape.iter().product::<u64>();
            assert_eq!(
                a.values.len() as u64,
                n,
                "an object array of shape {:?}",
                a.shape
            );
            for v in a.values {
                check(v);
            }
        }
    } else {
        // The scan `npy info` runs sees every opcode the reader does, refusing nothing.
        let scanned = npy_serde::pickle::scan(data);
        assert!(
            scanned.globals.len() <= data.len(),
            "more globals than bytes"
        );
        let first = load(data, &opts);
        let again = load(data, &opts);
        assert_eq!(first.is_ok(), again.is_ok(), "reading twice differs");
        if let Ok(v) = first {
            check(v);
        }
    }
}
