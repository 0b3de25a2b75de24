//! `.npy` -> Parquet -> `.npy` through the writer and the reader: the same bytes, datetimes in
//! seconds, minutes and hours as Parquet timestamps, Fortran order and column choice.

use std::fs::File;
use std::io::Cursor;

use ::parquet::basic::{LogicalType, TimeUnit as PqUnit};
use ::parquet::file::reader::{FileReader, SerializedFileReader};
use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMillisecondType;
use arrow_array::{Array, ArrayRef, RecordBatch, TimestampMillisecondArray};

use super::{ParquetReader, ParquetWriter};
use crate::{BatchWriterBuilder, NpyBatchReader};
use npy_serde::header::Header;

const NAT: i64 = i64::MIN;

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("npy-pq-{name}-{}.parquet", std::process::id()))
}

/// A `.npy` file of `descr` and `shape` (C or Fortran order) holding `data`.
fn npy(descr: &str, shape: &[u64], fortran: bool, data: &[u8]) -> Vec<u8> {
    let h = Header {
        dtype: descr.parse().unwrap(),
        shape: shape.to_vec(),
        fortran_order: fortran,
    };
    let mut out = h.to_bytes().unwrap();
    out.extend_from_slice(data);
    out
}

fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Writes `file` to Parquet at `path` (batches of 2 rows) and reads it back to `.npy`.
fn through_parquet(file: &[u8], path: &std::path::Path) -> Vec<u8> {
    let mut r = crate::BatchReaderBuilder::new()
        .batch_size(2)
        .from_slice(file)
        .unwrap();
    let mut w =
        ParquetWriter::new(File::create(path).unwrap(), r.schema_ref().clone(), None).unwrap();
    while let Some(b) = r.next_batch().unwrap() {
        w.write(&b).unwrap();
    }
    w.finish().unwrap();
    let r = ParquetReader::open(path, 3).unwrap();
    let schema = r.schema_ref().clone();
    let mut w = BatchWriterBuilder::new()
        .writer(Cursor::new(Vec::new()), &schema)
        .unwrap();
    for b in r {
        w.write(&b.unwrap()).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// The Parquet logical type of each leaf column.
fn logical_types(path: &std::path::Path) -> Vec<(String, Option<LogicalType>)> {
    let r = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    let schema = r.metadata().file_metadata().schema_descr_ptr();
    schema
        .columns()
        .iter()
        .map(|c| (c.path().string(), c.logical_type_ref().cloned()))
        .collect()
}

fn millis() -> Option<LogicalType> {
    Some(LogicalType::timestamp(false, PqUnit::MILLIS))
}

/// Every datetime unit: `s`, `m`, `h` as TIMESTAMP(MILLIS), `D` as DATE, `us` as
/// TIMESTAMP(MICROS), `ps` and `Y` as plain INT64; NaT as null; a subarray and a nested
/// record of them too. Back to `.npy`: the same bytes.
#[test]
fn datetimes_are_parquet_timestamps_and_come_back_exactly() {
    let descr = "[('s', '<M8[s]'), ('m', '<M8[m]'), ('h', '<M8[h]'), ('d', '<M8[D]'), \
                 ('us', '<M8[us]'), ('ps', '<M8[ps]'), ('y', '<M8[Y]'), \
                 ('v', '<M8[s]', (2,)), ('r', [('x', '<M8[h]')])]";
    let rows: [[i64; 10]; 5] = [
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [
            1_700_000_000,
            28_000_000,
            470_000,
            19_000,
            1,
            5,
            54,
            -1,
            NAT,
            12,
        ],
        [NAT, NAT, NAT, NAT, NAT, NAT, NAT, NAT, 7, NAT],
        [
            -86_400,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            9_000_000_000,
            -9_000_000_000,
            -24,
        ],
        [
            // The largest seconds that fit milliseconds, in every seconds-based unit.
            i64::MAX / 1000,
            i64::MAX / 60_000,
            i64::MAX / 3_600_000,
            1,
            i64::MAX,
            i64::MAX,
            1,
            i64::MIN / 1000 + 1,
            0,
            i64::MIN / 3_600_000 + 1,
        ],
    ];
    let data: Vec<u8> = rows.iter().flat_map(|r| i64s(r)).collect();
    let file = npy(descr, &[5], false, &data);
    let path = temp("datetimes");
    assert_eq!(through_parquet(&file, &path), file);

    let types = logical_types(&path);
    let of = |name: &str| {
        types
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no leaf {name} in {types:?}"))
            .1
            .clone()
    };
    for leaf in ["s", "m", "h", "v.list.item", "r.x"] {
        assert_eq!(of(leaf), millis(), "{leaf}");
    }
    assert_eq!(of("d"), Some(LogicalType::Date));
    assert_eq!(
        of("us"),
        Some(LogicalType::timestamp(false, PqUnit::MICROS))
    );
    assert_eq!(of("ps"), None);
    assert_eq!(of("y"), None);

    // What other readers see: milliseconds, the same instants.
    let plain = ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        File::open(&path).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap()
    .next()
    .unwrap()
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    let h = plain
        .column_by_name("h")
        .unwrap()
        .as_primitive::<TimestampMillisecondType>();
    assert_eq!(h.value(1), 470_000 * 3_600_000);
    assert!(h.is_null(2));
    assert_eq!(
        plain.schema().field(0).metadata()["numpy.descr"],
        "'<M8[s]'"
    );
}

/// Seconds whose milliseconds overflow: an error naming the column and the row.
#[test]
fn seconds_out_of_range_in_milliseconds_are_an_error() {
    let file = npy("<M8[s]", &[3], false, &i64s(&[0, 1, i64::MAX / 999]));
    let mut r = NpyBatchReader::from_slice(&file).unwrap();
    let mut w = ParquetWriter::new(Vec::new(), r.schema_ref().clone(), None).unwrap();
    let e = w.write(&r.next_batch().unwrap().unwrap()).unwrap_err();
    assert!(
        e.to_string().contains("column `value`, row 2") && e.to_string().contains("out of range"),
        "{e}"
    );
}

/// Milliseconds that are not whole seconds in a column whose `numpy.descr` says seconds:
/// an error naming the column and the row (never a rounded value).
#[test]
fn milliseconds_not_whole_seconds_are_an_error_when_read_as_seconds() {
    let path = temp("not-whole");
    let t: ArrayRef = std::sync::Arc::new(TimestampMillisecondArray::from(vec![2000, 1500]));
    let b = RecordBatch::try_from_iter([("t", t)]).unwrap();
    let meta = [("numpy.descr".to_string(), "'<M8[s]'".to_string())].into();
    let field = b.schema().field(0).clone().with_metadata(meta);
    let schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![field]));
    let b = RecordBatch::try_new(schema.clone(), b.columns().to_vec()).unwrap();
    let mut w = ParquetWriter::new(File::create(&path).unwrap(), schema, None).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    let mut r = ParquetReader::open(&path, 8).unwrap();
    let e = r.next().unwrap().unwrap_err().to_string();
    std::fs::remove_file(&path).unwrap();
    assert!(
        e.contains("column `t`, row 1") && e.contains("1500 ms is not a whole number"),
        "{e}"
    );
}

/// Fortran-order arrays (a plain one, a record one, one with a single long axis) come back
/// in Fortran order: the same bytes.
#[test]
fn fortran_order_round_trips() {
    let path = temp("fortran");
    let data: Vec<u8> = (0..24u16).flat_map(|v| v.to_le_bytes()).collect();
    for (descr, shape) in [
        ("<u2", &[4u64, 3, 2][..]),
        ("<u2", &[6, 4]),
        ("[('a', '<u1'), ('b', '<u1')]", &[3, 4]),
        ("<u2", &[24, 1]),
    ] {
        let dt: npy_serde::DType = descr.parse().unwrap();
        let len = shape.iter().product::<u64>() as usize * dt.itemsize();
        let file = npy(descr, shape, true, &data[..len]);
        assert_eq!(through_parquet(&file, &path), file, "{descr} {shape:?}");
    }
    std::fs::remove_file(&path).unwrap();
}

/// A projection: the columns asked for, in that order, the others not decoded; names the
/// file lacks, or given twice, and nothing left, are errors.
#[test]
fn column_choice_errors() {
    let path = temp("columns");
    let file = npy(
        "[('a', '<i8'), ('b', '<M8[s]'), ('c', '<i8')]",
        &[1],
        false,
        &i64s(&[1, 2, 3]),
    );
    through_parquet(&file, &path);
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let r = ParquetReader::open_columns(&path, 8, Some(&names(&["b", "a"])), &[]).unwrap();
    let fields: Vec<_> = r
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(fields, ["b", "a"]);
    let b = r.map(|b| b.unwrap()).next().unwrap();
    // Seconds restored in a projection too.
    assert_eq!(
        b.column(0).data_type(),
        &arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Second, None)
    );
    let err = |c: Option<&[&str]>, x: &[&str]| {
        let c = c.map(names);
        ParquetReader::open_columns(&path, 8, c.as_deref(), &names(x))
            .unwrap_err()
            .to_string()
    };
    assert!(
        err(Some(&["a", "z"]), &[]).contains("no column `z` in the file (its columns: a, b, c)")
    );
    assert!(err(None, &["q"]).contains("no column `q`"));
    assert!(err(Some(&["a", "a"]), &[]).contains("`a` is chosen twice"));
    assert!(err(Some(&["a"]), &["a"]).contains("no column is left"));
    std::fs::remove_file(&path).unwrap();
}
