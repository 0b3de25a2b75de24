//! The writer and the reader together: the writer's file is `ArrowWriter`'s, and reads back
//! in order; errors, and pools dropped early.

use std::fs::File;
use std::sync::Arc;

use ::parquet::arrow::ArrowWriter;
use ::parquet::file::properties::WriterProperties;
use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field};

use super::{ParquetReader, ParquetWriter};

fn batch(first: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let v: Vec<f32> = ids
        .iter()
        .flat_map(|&i| [i as f32, 0.5, -(i as f32)])
        .collect();
    let item = Arc::new(Field::new("item", DataType::Float32, false));
    let list = FixedSizeListArray::new(item, 3, Arc::new(Float32Array::from(v)), None);
    let names: Vec<String> = ids.iter().map(|i| format!("r{}", i % 7)).collect();
    let t: Vec<Option<i64>> = ids.iter().map(|&i| (i % 5 != 0).then_some(i)).collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("v", Arc::new(list) as ArrayRef),
        ("s", Arc::new(StringArray::from(names)) as ArrayRef),
        (
            "t",
            Arc::new(TimestampMicrosecondArray::from(t)) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn props() -> WriterProperties {
    WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build()
}

/// Batches of 37 rows (row groups of 100 split them): the file is the one `ArrowWriter`
/// writes, and reads back in order, no batch spanning two row groups.
#[test]
fn same_file_as_arrow_writer_and_read_back_in_order() {
    let batches: Vec<RecordBatch> = (0..9).map(|k| batch(k * 37, 37)).collect();
    let schema = batches[0].schema();
    let mut ours = ParquetWriter::new(Vec::new(), schema.clone(), Some(props())).unwrap();
    let mut theirs = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props())).unwrap();
    for b in &batches {
        ours.write(b).unwrap();
        theirs.write(b).unwrap();
    }
    let ours = ours.finish().unwrap();
    assert!(
        ours == theirs.into_inner().unwrap(),
        "not ArrowWriter's file"
    );

    let path = std::env::temp_dir().join(format!("npy-pq-unit-{}.parquet", std::process::id()));
    std::fs::write(&path, &ours).unwrap();
    let r = ParquetReader::open(&path, 16).unwrap();
    assert_eq!(r.num_rows(), 333);
    assert_eq!(r.groups, 4);
    let got: Vec<RecordBatch> = r.collect::<std::result::Result<_, _>>().unwrap();
    std::fs::remove_file(&path).unwrap();
    // 100 = 6 * 16 + 4: seven batches per full row group, then 33 = 2 * 16 + 1.
    let sizes: Vec<usize> = got.iter().map(|b| b.num_rows()).collect();
    let mut want = Vec::new();
    for _ in 0..3 {
        want.extend([16, 16, 16, 16, 16, 16, 4]);
    }
    want.extend([16, 16, 1]);
    assert_eq!(sizes, want);
    assert_eq!(check_runs(&got), 333);
    assert_eq!(check_runs(&batches), 333);
}

/// Checks that the batches are the test batches of ids 0, 1, 2, ... without a gap (their
/// other columns follow from the ids); returns the rows.
fn check_runs(batches: &[RecordBatch]) -> i64 {
    let mut next = 0;
    for x in batches {
        let ids = x.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(ids.value(0), next);
        assert_eq!(x.columns(), batch(next, ids.len()).columns());
        next += ids.len() as i64;
    }
    next
}

#[test]
fn no_rows_and_errors() {
    let schema = batch(0, 1).schema();
    let ours = ParquetWriter::new(Vec::new(), schema.clone(), None).unwrap();
    let theirs = ArrowWriter::try_new(Vec::new(), schema.clone(), None).unwrap();
    assert!(ours.finish().unwrap() == theirs.into_inner().unwrap());

    let mut w = ParquetWriter::new(Vec::new(), schema, None).unwrap();
    let one = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
        .unwrap();
    let e = w.write(&one).unwrap_err();
    assert!(e.to_string().contains("1 columns"), "{e}");
    let b = batch(0, 3);
    let mut cols = b.columns().to_vec();
    cols[0] = Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0]));
    let wrong = RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(vec![
            Field::new("id", DataType::Float32, false),
            b.schema().field(1).clone(),
            b.schema().field(2).clone(),
            b.schema().field(3).clone(),
        ])),
        cols,
    )
    .unwrap();
    let e = w.write(&wrong).unwrap_err();
    assert!(e.to_string().contains("column `id` is Float32"), "{e}");
    // The writer is still good for batches of its schema.
    w.write(&b).unwrap();
    assert!(w.finish().unwrap().starts_with(b"PAR1"));
    // Dropped unfinished with leaves queued: the workers stop, nothing hangs.
    let mut w = ParquetWriter::new(Vec::new(), b.schema(), None).unwrap();
    for k in 0..10 {
        w.write(&batch(k * 100, 100)).unwrap();
    }
    drop(w);

    let path = std::env::temp_dir().join(format!("npy-pq-bad-{}.parquet", std::process::id()));
    std::fs::write(&path, b"not parquet at all").unwrap();
    let e = ParquetReader::open(&path, 8).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(e.to_string().contains("Parquet"), "{e}");
}

/// Many row groups over the workers: every batch in file order; a row group that fails
/// to decode ends the batches there with its error, after all the rows before it.
#[test]
fn row_groups_in_order_and_a_bad_one_ends_them() {
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    let path = std::env::temp_dir().join(format!("npy-pq-many-{}.parquet", std::process::id()));
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .set_compression(::parquet::basic::Compression::UNCOMPRESSED)
        .build();
    let mut w = ParquetWriter::new(
        File::create(&path).unwrap(),
        batch(0, 1).schema(),
        Some(props),
    )
    .unwrap();
    for k in 0..20 {
        w.write(&batch(k * 100, 100)).unwrap();
    }
    w.finish().unwrap();
    let got: Vec<RecordBatch> = ParquetReader::open(&path, 7)
        .unwrap()
        .collect::<std::result::Result<_, _>>()
        .unwrap();
    assert_eq!(check_runs(&got), 2000);

    // Garbage over the first page header of row group 12's first column.
    let start = {
        let r = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        r.metadata().row_group(12).column(0).data_page_offset() as usize
    };
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[start..start + 16].fill(0xff);
    std::fs::write(&path, &bytes).unwrap();
    let mut good = Vec::new();
    let mut err = None;
    for b in ParquetReader::open(&path, 7).unwrap() {
        match b {
            Ok(b) => good.push(b),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    std::fs::remove_file(&path).unwrap();
    assert_eq!(check_runs(&good), 1200);
    assert!(err.is_some(), "no error after row group 11");
}

#[test]
fn a_reader_dropped_early_stops_its_workers() {
    let path = std::env::temp_dir().join(format!("npy-pq-drop-{}.parquet", std::process::id()));
    let mut w = ParquetWriter::new(
        File::create(&path).unwrap(),
        batch(0, 1).schema(),
        Some(props()),
    )
    .unwrap();
    for k in 0..20 {
        w.write(&batch(k * 50, 50)).unwrap();
    }
    w.finish().unwrap();
    let mut r = ParquetReader::open(&path, 10).unwrap();
    let b = r.next().unwrap().unwrap();
    assert_eq!(b.num_rows(), 10);
    drop(r);
    std::fs::remove_file(&path).unwrap();
}

/// A decoding error names the column and the row it belongs to (`locate.rs`): a dictionary key
/// past its dictionary at row 3 of column `k`, and a corrupt zstd page in column `x`, whose
/// second row group starts at row 500 (fixtures of `tests/fixtures/make_foreign.py`).
#[test]
fn decoding_errors_name_their_column_and_row() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/foreign/hostile");
    for (file, column, row) in [
        ("dict_keys_past.parquet", "k", 3),
        ("corrupt_page.parquet", "x", 500),
    ] {
        let reader = ParquetReader::open(dir.join(file), 1024).unwrap();
        let err = reader
            .into_iter()
            .find_map(|b| b.err())
            .expect("a failing batch");
        let arrow_schema::ArrowError::ExternalError(inner) = err else {
            panic!("{file}: not this crate's error: {err}");
        };
        let e = inner.downcast::<npy_serde::Error>().unwrap();
        assert_eq!(e.position().field.as_deref(), Some(column), "{file}: {e}");
        assert_eq!(e.position().record, Some(row), "{file}: {e}");
    }
}
