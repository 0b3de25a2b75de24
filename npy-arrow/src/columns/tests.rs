use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use npy_serde::npz::{Compression, NpzWriter};

use crate::{BatchReaderBuilder, BatchWriterBuilder, NullPolicy};

/// A fresh directory under the temporary one, removed when dropped.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d =
            std::env::temp_dir().join(format!("npy-arrow-columns-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn batch(first: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let xs: Vec<f32> = ids.iter().map(|&i| i as f32 / 2.0).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("n{i}")).collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("x", Arc::new(Float32Array::from(xs)) as ArrayRef),
        ("name", Arc::new(StringArray::from(names)) as ArrayRef),
    ])
    .unwrap()
}

fn read_all(
    r: impl Iterator<Item = Result<RecordBatch, arrow_schema::ArrowError>>,
) -> Vec<RecordBatch> {
    r.collect::<Result<Vec<_>, _>>().unwrap()
}

fn concat(batches: &[RecordBatch]) -> RecordBatch {
    arrow_select::concat::concat_batches(&batches[0].schema(), batches).unwrap()
}

/// Written as an archive and as a directory, in several batches; read back equal, the
/// archive's members aligned plain arrays (`np.load(t.npz)['x']` is `<f4`), batch sizes kept.
#[test]
fn written_tables_read_back_equal() {
    let d = Dir::new("round");
    let parts = [batch(0, 5), batch(5, 7)];
    let whole = concat(&parts);
    for name in ["t.npz", "t"] {
        let path = d.0.join(name);
        let mut w = BatchWriterBuilder::new()
            .string_width("name", 3)
            .column_table(&path, &parts[0].schema())
            .unwrap();
        for p in &parts {
            w.write(p).unwrap();
        }
        assert!(w.finish().unwrap().is_empty());
        let r = BatchReaderBuilder::new()
            .batch_size(4)
            .open_column_table(&path)
            .unwrap();
        assert_eq!(r.num_rows(), 12);
        let back = read_all(r);
        assert_eq!(
            back.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            [4, 4, 4]
        );
        // A directory's columns come in name order, an archive's in member order.
        let order: &[usize] = if name == "t" { &[0, 2, 1] } else { &[0, 1, 2] };
        let expected = whole.project(order).unwrap();
        assert_eq!(concat(&back).columns(), expected.columns(), "{name}");
        // Nothing but the table is left in the directory.
        let left: Vec<_> = std::fs::read_dir(&d.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            left.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{left:?}"
        );
    }
    let npz = npy_serde::npz::MmapNpz::open(d.0.join("t.npz")).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["id", "x", "name"]);
    let x = npz.array("x").unwrap();
    assert_eq!(x.header().dtype.descr(), "'<f4'");
    assert_eq!(npz.data_offset("x").unwrap() % 64, 0);
    let files: Vec<_> = ["id.npy", "name.npy", "x.npy"]
        .iter()
        .map(|f| d.0.join("t").join(f).exists())
        .collect();
    assert_eq!(files, [true; 3]);
}

/// An archive as `np.savez_compressed` writes one (deflated, unaligned) and a record column
/// (a struct), projected by name.
#[test]
fn deflated_members_and_record_columns_projected() {
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct P {
        a: i16,
        b: f64,
    }
    let d = Dir::new("deflated");
    let path = d.0.join("c.npz");
    let mut w = NpzWriter::new(std::fs::File::create(&path).unwrap())
        .with_compression(Compression::Deflate);
    w.add("id", &[1i64, 2, 3]).unwrap();
    w.add(
        "p",
        &[P { a: 1, b: 0.5 }, P { a: 2, b: 1.5 }, P { a: 3, b: 2.5 }],
    )
    .unwrap();
    w.add("x", &[1.0f32, 2.0, 3.0]).unwrap();
    w.finish().unwrap();
    let r = BatchReaderBuilder::new()
        .columns(["p", "id"])
        .open_column_table(&path)
        .unwrap();
    let fields: Vec<_> = r
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(fields, ["p", "id"]);
    assert!(matches!(r.schema_ref().field(0).data_type(), DataType::Struct(f) if f.len() == 2));
    let b = concat(&read_all(r));
    let p = b.column(0).as_struct();
    assert_eq!(
        p.column(1)
            .as_primitive::<arrow_array::types::Float64Type>()
            .values(),
        &[0.5, 1.5, 2.5]
    );
    assert_eq!(b.column(1).as_primitive::<Int64Type>().values(), &[1, 2, 3]);
    let bad = BatchReaderBuilder::new()
        .columns(["nope"])
        .open_column_table(&path)
        .unwrap_err();
    assert!(bad.to_string().contains("no column `nope`"), "{bad}");
}

/// Columns of different lengths, an empty directory, and the `mask` policy are errors that
/// say which; a failed table leaves nothing under its name.
#[test]
fn refusals_name_the_column() {
    let d = Dir::new("refusals");
    npy_serde::to_path(d.0.join("a.npy"), &[1i64, 2, 3]).unwrap();
    npy_serde::to_path(d.0.join("b.npy"), &[1.0f32, 2.0]).unwrap();
    let e = BatchReaderBuilder::new()
        .open_column_table(&d.0)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("column `b` has 2 rows, column `a` 3"),
        "{e}"
    );
    let empty = d.0.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = BatchReaderBuilder::new()
        .open_column_table(&empty)
        .unwrap_err();
    assert!(e.to_string().contains("has none"), "{e}");

    let with_null = RecordBatch::try_from_iter([(
        "v",
        Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
    )])
    .unwrap();
    let out = d.0.join("m.npz");
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Mask)
        .column_table(&out, &with_null.schema())
        .unwrap();
    w.write(&with_null).unwrap();
    let e = w.finish().unwrap_err();
    assert!(e.to_string().contains("`mask` null policy"), "{e}");
    assert!(!out.exists());
    // The column choice of the builder picks the columns written.
    let out = d.0.join("chosen.npz");
    let b = batch(0, 3);
    let mut w = BatchWriterBuilder::new()
        .exclude(["name"])
        .column_table(&out, &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    let back = concat(&read_all(
        BatchReaderBuilder::new().open_column_table(&out).unwrap(),
    ));
    assert_eq!(back.num_columns(), 2);
    assert_eq!(
        back.column(1).as_primitive::<Float32Type>().values(),
        &[0.0, 0.5, 1.0]
    );
}

/// A policy given for one column applies to that column's array only (a writer of another
/// column is not handed it, and so does not refuse it as naming no column of its own); the
/// whole-table ones apply to every column; one naming no column of the table is refused,
/// naming it, before anything is written.
#[test]
fn per_column_choices_go_to_their_column() {
    let d = Dir::new("per-column");
    let dec = arrow_array::Decimal128Array::from(vec![Some(125), Some(250), Some(-5)])
        .with_precision_and_scale(20, 2)
        .unwrap();
    let b = RecordBatch::try_from_iter([
        (
            "x",
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
        ),
        (
            "y",
            Arc::new(Float32Array::from(vec![Some(0.5), None, Some(1.5)])) as ArrayRef,
        ),
        ("d", Arc::new(dec) as ArrayRef),
        (
            "s",
            Arc::new(StringArray::from(vec!["a", "bb", "ccc"])) as ArrayRef,
        ),
    ])
    .unwrap();
    let out = d.0.join("t.npz");
    let wb = BatchWriterBuilder::new()
        .nulls(NullPolicy::Nan)
        .nulls_for("x", NullPolicy::Fill("-1".into()))
        .decimals_for("d", crate::DecimalPolicy::Scaled)
        .string_width("s", 5);
    let mut w = wb.column_table(&out, &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    let mut a = npy_serde::NpzArchive::open(&out).unwrap();
    let mut keys: Vec<&str> = a.keys().collect();
    keys.sort();
    assert_eq!(keys, ["d", "s", "x", "y"]);
    let descr =
        |a: &mut npy_serde::NpzArchive<_>, k: &str| a.header(k).unwrap().header.dtype.descr();
    // x: its fill, its integer type kept; y: the table's NaN; d: scaled; s: five wide.
    assert_eq!(descr(&mut a, "x"), "'<i8'");
    assert_eq!(a.read::<i64>("x").unwrap(), [1, -1, 3]);
    assert_eq!(descr(&mut a, "y"), "'<f4'");
    let y = a.read::<f32>("y").unwrap();
    assert!(y[0] == 0.5 && y[1].is_nan() && y[2] == 1.5, "{y:?}");
    assert_eq!(descr(&mut a, "d"), "'<i8'");
    assert_eq!(a.read::<i64>("d").unwrap(), [125, 250, -5]);
    assert_eq!(descr(&mut a, "s"), "'<U5'");

    // A policy naming no column is refused at once, naming it; nothing is written.
    let bad = d.0.join("bad.npz");
    for wb in [
        BatchWriterBuilder::new().nulls_for("nope", NullPolicy::Nan),
        BatchWriterBuilder::new().decimals_for("nope", crate::DecimalPolicy::F8),
    ] {
        let e = wb.column_table(&bad, &b.schema()).unwrap_err().to_string();
        assert!(
            e.contains("names no column `nope`") && e.contains("\"x\""),
            "{e}"
        );
        assert!(!bad.exists());
    }
    // The mask for one column is that column's refusal (a column table has no mask member),
    // not another column's.
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Nan)
        .decimals(crate::DecimalPolicy::F8)
        .nulls_for("x", NullPolicy::Mask)
        .column_table(&bad, &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    let e = w.finish().unwrap_err().to_string();
    assert!(
        e.contains("column x") && e.contains("`mask` null policy"),
        "{e}"
    );
    assert!(!bad.exists());
}

/// The entries of `dir`, sorted (file names).
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A directory table whose write fails (making a column's file, writing a batch, finishing)
/// or whose writer is dropped unfinished leaves nothing new: not the directory it made, nor
/// the missing parents it made for it; a directory that was there before stays, with what it
/// held. `finish_into` puts nothing at the writer's own path, so a directory made for it goes.
#[test]
fn a_failed_directory_table_leaves_nothing_new() {
    let d = Dir::new("failed-dir");
    let with_null = RecordBatch::try_from_iter([(
        "v",
        Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
    )])
    .unwrap();

    // Failing while making the columns' files (a column name that is no file name), under
    // two missing levels.
    let slash =
        RecordBatch::try_from_iter([("a/b", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)])
            .unwrap();
    let e = BatchWriterBuilder::new()
        .column_table(d.0.join("new").join("t"), &slash.schema())
        .unwrap_err();
    assert!(e.to_string().contains("a/b"), "{e}");
    assert_eq!(entries(&d.0), Vec::<String>::new());

    // Failing on a batch (a null under the `error` policy), then dropped.
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Error)
        .column_table(d.0.join("t"), &with_null.schema())
        .unwrap();
    assert!(d.0.join("t").is_dir());
    let e = w.write(&with_null).unwrap_err();
    assert!(e.to_string().contains("column `v`"), "{e}");
    drop(w);
    assert_eq!(entries(&d.0), Vec::<String>::new());

    // Dropped unfinished after a good batch.
    let b = batch(0, 3);
    let mut w = BatchWriterBuilder::new()
        .column_table(d.0.join("u"), &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    drop(w);
    assert_eq!(entries(&d.0), Vec::<String>::new());

    // Failing in `finish` (the `mask` policy), under a missing parent.
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Mask)
        .column_table(d.0.join("p").join("t"), &with_null.schema())
        .unwrap();
    w.write(&with_null).unwrap();
    assert!(w.finish().is_err());
    assert_eq!(entries(&d.0), Vec::<String>::new());

    // A directory that was there (empty, or holding a file) stays as it was.
    let empty = d.0.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let old = d.0.join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(old.join("keep.txt"), "kept").unwrap();
    for target in [&empty, &old] {
        let mut w = BatchWriterBuilder::new()
            .nulls(NullPolicy::Mask)
            .column_table(target, &with_null.schema())
            .unwrap();
        w.write(&with_null).unwrap();
        assert!(w.finish().is_err());
    }
    assert_eq!(entries(&d.0), ["empty", "old"]);
    assert_eq!(entries(&empty), Vec::<String>::new());
    assert_eq!(entries(&old), ["keep.txt"]);
    assert_eq!(
        std::fs::read_to_string(old.join("keep.txt")).unwrap(),
        "kept"
    );

    // `finish_into` writes the archive elsewhere: the directory made for the writer goes.
    let mut w = BatchWriterBuilder::new()
        .column_table(d.0.join("staging"), &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    let (bytes, _) = w.finish_into(std::io::Cursor::new(Vec::new())).unwrap();
    assert!(!bytes.into_inner().is_empty());
    assert_eq!(entries(&d.0), ["empty", "old"]);

    // A write that succeeds keeps the directories it made, holding the columns.
    let mut w = BatchWriterBuilder::new()
        .column_table(d.0.join("made").join("t"), &b.schema())
        .unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    // (And the record of their statistics.)
    assert_eq!(
        entries(&d.0.join("made").join("t")),
        ["_npy_order", "id.npy", "name.npy", "x.npy"]
    );
}
