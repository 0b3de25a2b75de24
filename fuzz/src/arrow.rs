//! The `arrow` target (bytes -> npy -> Arrow record batches -> npy (feature `arrow`)).

use super::*;

// ---------------------------------------------------------------------------------------------
// arrow: bytes -> npy -> Arrow record batches -> npy (feature `arrow`)
// ---------------------------------------------------------------------------------------------

/// Target `arrow`: the Arrow batch reader from a slice and from a chunked reader (which must
/// agree: the same batches or both an error), never succeeding where the dynamic `Array`
/// reader fails on the data; batches that read are written back with `NpyBatchWriter`, and
/// that file reads as the same `Array` values (long doubles are already rounded to f64 by
/// both readers).
#[cfg(feature = "arrow")]
pub fn arrow(data: &[u8]) {
    use npy_arrow::{BatchReaderBuilder, NpyBatchWriter};
    let rb = ReaderBuilder::new()
        .max_empty_items(1 << 10)
        .max_data_size(1 << 20);
    let batch = data.len() % 4 + 1;
    let b = BatchReaderBuilder::new()
        .batch_size(batch)
        .reader_options(rb.clone());
    let collect = |r: npy_serde::Result<npy_arrow::NpyBatchReader<'_>>| {
        let mut r = r?;
        let schema = r.schema_ref().clone();
        let mut out = Vec::new();
        while let Some(b) = r.next_batch()? {
            out.push(b);
        }
        Ok::<_, npy_serde::Error>((schema, out))
    };
    let sliced = collect(b.from_slice(data));
    let streamed = collect(b.from_reader(Chunked::new(data, 7)));
    match (&sliced, &streamed) {
        (Ok((_, x)), Ok((_, y))) => assert!(x == y, "slice and reader batches differ"),
        // A slice's size is checked before any value is decoded, so a truncated slice is an
        // end-of-input error where the reader, decoding as bytes arrive, may first meet a bad
        // value in the records that did arrive (fuzz-regressions/arrow-1.bin).
        (Err(a), Err(e)) => assert!(
            a.kind().code() == e.kind().code() || a.kind().code() == "unexpected_eof",
            "{a} vs {e}"
        ),
        (a, e) => panic!(
            "slice {:?} vs reader {:?}",
            a.as_ref().err().map(|e| e.to_string()),
            e.as_ref().err().map(|e| e.to_string())
        ),
    }
    let array = rb.read_array(data);
    let Ok((schema, batches)) = sliced else {
        return;
    };
    let array = array.expect("the Arrow reader read a file the Array reader rejects");
    let mut w = NpyBatchWriter::new(std::io::Cursor::new(Vec::new()), &schema)
        .expect("a writer for the reader's schema");
    for b in &batches {
        w.write(b).expect("writing back the batches just read");
    }
    let bytes = w.finish().expect("finishing the writer").into_inner();
    let back = ReaderBuilder::new()
        .max_empty_items(1 << 10)
        .read_array(bytes.as_slice())
        .expect("reading the file written back");
    if !matches!(array.dtype, npy_serde::DType::Array(..)) {
        assert_eq!(back.shape, array.shape);
        assert!(
            same_values(&back.values, &array.values),
            "values differ after the round trip"
        );
    }
}
