//! Batches built by hand through the writer into `.npy` bytes and back through the reader:
//! every foreign type and null policy, and the refusals.

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::*;
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, IntervalUnit, TimeUnit, UnionFields, UnionMode};

use crate::{BatchWriterBuilder, DecimalPolicy, NpyBatchReader, NullPolicy};
use npy_serde::error::Result;

fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(cols).unwrap()
}

fn write(b: &RecordBatch, o: &BatchWriterBuilder) -> Result<Vec<u8>> {
    let mut w = o.writer(std::io::Cursor::new(Vec::new()), &b.schema())?;
    w.write(b)?;
    Ok(w.finish()?.into_inner())
}

fn descr(bytes: &[u8]) -> String {
    npy_serde::header::parse_header(bytes, &Default::default())
        .unwrap()
        .header
        .dtype
        .descr()
}

fn read(bytes: &[u8]) -> RecordBatch {
    let mut r = NpyBatchReader::from_slice(bytes).unwrap();
    r.next_batch().unwrap().unwrap()
}

fn err(b: &RecordBatch, o: &BatchWriterBuilder) -> String {
    write(b, o).unwrap_err().to_string()
}

/// Written and read back: the same types (nullability aside) and values.
fn round_trip(b: &RecordBatch, o: &BatchWriterBuilder) -> RecordBatch {
    let back = read(&write(b, o).unwrap());
    assert_eq!(back.num_columns(), b.num_columns(), "{:?}", back.schema());
    for (x, y) in b.schema().fields().iter().zip(back.schema().fields()) {
        assert_eq!(x.name(), y.name());
        assert!(
            super::title::same_type(&super::title::plain(x.data_type()), y.data_type()),
            "{} came back as {}",
            x.data_type(),
            y.data_type()
        );
    }
    back
}

fn dec128(v: Vec<Option<i128>>, p: u8, s: i8) -> ArrayRef {
    Arc::new(
        Decimal128Array::from(v)
            .with_precision_and_scale(p, s)
            .unwrap(),
    )
}

#[test]
fn decimals_come_back_exactly() {
    let edge = 999_999_999_999_999i128;
    let b = batch(vec![
        (
            "price",
            dec128(vec![Some(edge), Some(-edge), Some(1), Some(0)], 15, 2),
        ),
        (
            "neg",
            dec128(vec![Some(7), Some(-12_345), Some(0), Some(1)], 10, -5),
        ),
        (
            "d32",
            Arc::new(
                Decimal32Array::from(vec![1, 2, -999_999_999, 4])
                    .with_precision_and_scale(9, 3)
                    .unwrap(),
            ),
        ),
    ]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(
        descr(&bytes),
        "[(('arrow:price:Decimal128(15, 2)', 'price'), '<f8'), (('arrow:neg:Decimal128(10, -5)', \
         'neg'), '<f8'), (('arrow:d32:Decimal32(9, 3)', 'd32'), '<f8')]"
    );
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(back.columns(), b.columns());
    // Scaled: the unscaled integers, back exactly too; a wide one as well.
    let wide = batch(vec![("w", dec128(vec![Some(10i128.pow(17)), None], 38, 4))]);
    let o = BatchWriterBuilder::new()
        .decimals_for("w", DecimalPolicy::Scaled)
        .nulls(NullPolicy::Mask);
    let back = round_trip(&wide, &o);
    assert_eq!(back.column(0), wide.column(0));
    let e = err(&wide, &BatchWriterBuilder::new());
    assert!(
        e.contains("`w`") && e.contains("Decimal128(38, 4)") && e.contains("scaled"),
        "{e}"
    );
}

#[test]
fn dictionaries_unpack_and_a_bad_key_is_an_error() {
    let d: DictionaryArray<Int8Type> = vec!["a", "bb", "a", "ccc"].into_iter().collect();
    let values: ArrayRef = Arc::new(LargeStringArray::from(vec!["x", "yy"]));
    let big = DictionaryArray::<UInt64Type>::try_new(UInt64Array::from(vec![1, 0, 1, 1]), values)
        .unwrap();
    let b = batch(vec![("cat", Arc::new(d)), ("big", Arc::new(big))]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(
        descr(&bytes),
        "[('cat', '<U3'), (('arrow:big:LargeUtf8', 'big'), '<U2')]"
    );
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(back.column(0).as_string::<i32>().value(3), "ccc");
    assert_eq!(back.column(1).as_string::<i64>().value(0), "yy");

    let keys = Int32Array::from(vec![0, 5]);
    let vals: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
    // SAFETY: deliberately invalid (a key past the dictionary), as a hostile file may hold.
    let bad = unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys, vals) };
    let e = err(
        &batch(vec![("k", Arc::new(bad))]),
        &BatchWriterBuilder::new(),
    );
    assert!(e.contains("`k`, row 1") && e.contains("key 5"), "{e}");
}

#[test]
fn run_ends_and_views_unpack() {
    let ree = RunArray::<Int32Type>::try_new(
        &Int32Array::from(vec![2, 3, 5]),
        &Float32Array::from(vec![1.5, 2.5, 3.5]),
    )
    .unwrap();
    let view = StringViewArray::from(vec!["a", "long string past twelve bytes", "c", "d", "e"]);
    let lv = ListViewArray::new(
        Arc::new(Field::new("item", DataType::Int64, true)),
        ScalarBuffer::from(vec![2, 0, 2, 1, 0]),
        ScalarBuffer::from(vec![2, 2, 2, 2, 2]),
        Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
        None,
    );
    let b = batch(vec![
        ("r", Arc::new(ree)),
        ("v", Arc::new(view)),
        ("lv", Arc::new(lv)),
    ]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(
        descr(&bytes),
        "[('r', '<f4'), ('v', '<U29'), (('arrow:lv:List(Int64)', 'lv'), '<i8', (2,))]"
    );
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(
        back.column(0).as_primitive::<Float32Type>().values(),
        &[1.5, 1.5, 2.5, 3.5, 3.5]
    );
    let l = back.column(2).as_list::<i32>();
    assert_eq!(l.value(0).as_primitive::<Int64Type>().values(), &[3, 4]);
    assert_eq!(l.value(3).as_primitive::<Int64Type>().values(), &[2, 3]);
}

#[test]
fn times_and_zones_come_back() {
    let b = batch(vec![
        ("t32s", Arc::new(Time32SecondArray::from(vec![0, 86_399]))),
        ("t32ms", Arc::new(Time32MillisecondArray::from(vec![1, 2]))),
        ("t64us", Arc::new(Time64MicrosecondArray::from(vec![3, 4]))),
        ("t64ns", Arc::new(Time64NanosecondArray::from(vec![5, 6]))),
        (
            "ts",
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(1), None]).with_timezone("Europe/Paris"),
            ),
        ),
        ("dur", Arc::new(DurationMillisecondArray::from(vec![7, 8]))),
    ]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    let d = descr(&bytes);
    assert!(
        d.contains("(('arrow:t32s:Time32(s)', 't32s'), '<m8[s]')"),
        "{d}"
    );
    assert!(
        d.contains("(('arrow:t64us:Time64(us)', 't64us'), '<m8[us]')"),
        "{d}"
    );
    assert!(
        d.contains("(('arrow:ts:Timestamp(us, \"Europe/Paris\")', 'ts'), '<M8[us]')"),
        "{d}"
    );
    assert!(d.contains("('dur', '<m8[ms]')"), "{d}");
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(back.columns(), b.columns());
    assert_eq!(
        back.schema().field(4).data_type(),
        b.schema().field(4).data_type()
    );
}

#[test]
fn lists_of_one_length_are_subarrays_and_ragged_ones_are_refused() {
    let mut lb = ListBuilder::new(Int32Builder::new());
    for row in [[1, 2, 3], [4, 5, 6]] {
        lb.values().append_slice(&row);
        lb.append(true);
    }
    let b = batch(vec![("xyz", Arc::new(lb.finish()))]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(
        descr(&bytes),
        "[(('arrow:xyz:List(Int32)', 'xyz'), '<i4', (3,))]"
    );
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(
        back.column(0)
            .as_list::<i32>()
            .value(1)
            .as_primitive::<Int32Type>()
            .values(),
        &[4, 5, 6]
    );

    let ragged = LargeListArray::new(
        Arc::new(Field::new("item", DataType::Int8, true)),
        OffsetBuffer::from_lengths([2, 2, 3]),
        Arc::new(Int8Array::from(vec![0; 7])),
        None,
    );
    let e = err(
        &batch(vec![("rag", Arc::new(ragged))]),
        &BatchWriterBuilder::new(),
    );
    assert!(
        e.contains("`rag`") && e.contains("LargeList") && e.contains("--exclude rag"),
        "{e}"
    );
    assert!(e.contains("2 in row 0, 3 in row 2"), "{e}");
}

#[test]
fn types_with_no_dtype_are_refused_naming_exclude() {
    let mut mb = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    mb.keys().append_value("k");
    mb.values().append_value(1);
    mb.append(true).unwrap();
    let union = UnionArray::try_new(
        UnionFields::try_new(vec![0], vec![Field::new("i", DataType::Int32, false)]).unwrap(),
        ScalarBuffer::from(vec![0i8]),
        None,
        vec![Arc::new(Int32Array::from(vec![1])) as ArrayRef],
    )
    .unwrap();
    let cases: Vec<(&str, ArrayRef, &str)> = vec![
        ("m", Arc::new(mb.finish()), "Map("),
        ("u", Arc::new(union), "Union("),
        (
            "iv",
            Arc::new(IntervalDayTimeArray::from(vec![IntervalDayTime::new(1, 2)])),
            "Interval(DayTime)",
        ),
        ("nul", Arc::new(NullArray::new(1)), "Null"),
    ];
    for (name, a, ty) in cases {
        let e = err(&batch(vec![(name, a)]), &BatchWriterBuilder::new());
        assert!(e.contains(&format!("column `{name}` is {ty}")), "{e}");
        assert!(
            e.contains(&format!("--exclude {name}")) && e.contains("exclude([\""),
            "{e}"
        );
        if name == "nul" {
            assert!(
                e.contains("nan") && e.contains("fill=VALUE") && e.contains("mask"),
                "{e}"
            );
        }
    }
    let _ = (IntervalUnit::DayTime, UnionMode::Sparse);
    // Left out, the rest converts.
    let b = batch(vec![
        ("a", Arc::new(Int8Array::from(vec![1]))),
        ("nul", Arc::new(NullArray::new(1))),
    ]);
    let bytes = write(&b, &BatchWriterBuilder::new().exclude(["nul"])).unwrap();
    assert_eq!(descr(&bytes), "[('a', '|i1')]");
}

#[test]
fn null_policies() {
    let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(-3)]));
    let floats: ArrayRef = Arc::new(Float32Array::from(vec![None, Some(2.5), Some(0.0)]));
    let bools: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), None, Some(true)]));
    let strs: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("")]));
    let dates: ArrayRef = Arc::new(Date32Array::from(vec![Some(1), None, Some(3)]));
    let b = batch(vec![("i", ints.clone()), ("f", floats.clone())]);

    // error (the default) names the column, the row and the policies.
    let e = err(&b, &BatchWriterBuilder::new());
    assert!(
        e.contains("`i`") && e.contains("value 1") && e.contains("fill=VALUE"),
        "{e}"
    );

    // nan: floats NaN, ints <f8 (titled, back as Int64 with the null), dates NaT.
    let nb = batch(vec![
        ("i", ints.clone()),
        ("f", floats.clone()),
        ("d", dates.clone()),
    ]);
    let bytes = write(&nb, &BatchWriterBuilder::new().nulls(NullPolicy::Nan)).unwrap();
    assert_eq!(
        descr(&bytes),
        "[(('arrow:i:Int64', 'i'), '<f8'), ('f', '<f4'), ('d', '<M8[D]')]"
    );
    let back = read(&bytes);
    assert_eq!(back.column(0), &ints);
    assert!(back
        .column(1)
        .as_primitive::<Float32Type>()
        .value(0)
        .is_nan());
    assert_eq!(back.column(2), &dates);
    let big: ArrayRef = Arc::new(Int64Array::from(vec![None, Some((1 << 53) + 1)]));
    let e = err(
        &batch(vec![("big", big)]),
        &BatchWriterBuilder::new().nulls(NullPolicy::Nan),
    );
    assert!(
        e.contains("`big`, row 1") && e.contains("9007199254740993") && e.contains("mask"),
        "{e}"
    );
    for (name, a) in [("b", bools.clone()), ("s", strs.clone())] {
        let e = err(
            &batch(vec![(name, a)]),
            &BatchWriterBuilder::new().nulls(NullPolicy::Nan),
        );
        assert!(
            e.contains(&format!("`{name}`, row 1"))
                && e.contains("mask")
                && e.contains("fill=VALUE"),
            "{e}"
        );
    }

    // fill=VALUE: the value per column type, refused where it is data.
    let o = BatchWriterBuilder::new()
        .nulls_for("i", NullPolicy::Fill("-1".into()))
        .nulls_for("b", NullPolicy::Fill("false".into()))
        .nulls_for("s", NullPolicy::Fill("?".into()));
    let fb = batch(vec![
        ("i", ints.clone()),
        ("b", bools.clone()),
        ("s", strs.clone()),
    ]);
    let back = read(&write(&fb, &o).unwrap());
    assert_eq!(
        back.column(0).as_primitive::<Int64Type>().values(),
        &[1, -1, -3]
    );
    assert!(!back.column(1).as_boolean().value(1));
    assert_eq!(back.column(2).as_string::<i32>().value(1), "?");
    let e = err(
        &batch(vec![("i", ints.clone())]),
        &BatchWriterBuilder::new().nulls(NullPolicy::Fill("-3".into())),
    );
    assert!(
        e.contains("`i`, row 2") && e.contains("\"-3\" also occurs"),
        "{e}"
    );
    let e = err(
        &batch(vec![("b", bools.clone())]),
        &BatchWriterBuilder::new().nulls(NullPolicy::Fill("true".into())),
    );
    assert!(e.contains("also occurs") && e.contains("mask"), "{e}");

    // mask: a b1 field beside each nullable one, folded back into the nulls on reading.
    let mb = batch(vec![
        ("i", ints.clone()),
        ("b", bools.clone()),
        ("s", strs.clone()),
        ("d", dates),
    ]);
    let bytes = write(&mb, &BatchWriterBuilder::new().nulls(NullPolicy::Mask)).unwrap();
    assert_eq!(
        descr(&bytes),
        "[('i', '<i8'), (('arrow:i_valid:mask', 'i_valid'), '|b1'), ('b', '|b1'), \
         (('arrow:b_valid:mask', 'b_valid'), '|b1'), ('s', '<U1'), (('arrow:s_valid:mask', \
         's_valid'), '|b1'), ('d', '<M8[D]'), (('arrow:d_valid:mask', 'd_valid'), '|b1')]"
    );
    let back = round_trip(&mb, &BatchWriterBuilder::new().nulls(NullPolicy::Mask));
    assert_eq!(back.columns(), mb.columns());
    assert_eq!(
        back.schema().field(0).metadata()[crate::MASK_KEY],
        "i_valid"
    );
    // Written again with no policy, the mask comes back (the field remembers it), same bytes.
    assert_eq!(write(&back, &BatchWriterBuilder::new()).unwrap(), bytes);
}

#[test]
fn an_int_column_settled_by_the_first_batch_refuses_a_later_null() {
    let s = Arc::new(arrow_schema::Schema::new(vec![Field::new(
        "n",
        DataType::Int32,
        true,
    )]));
    let b1 = RecordBatch::try_new(s.clone(), vec![Arc::new(Int32Array::from(vec![1, 2]))]).unwrap();
    let b2 = RecordBatch::try_new(
        s.clone(),
        vec![Arc::new(Int32Array::from(vec![None, Some(2)]))],
    )
    .unwrap();
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Nan)
        .writer(std::io::Cursor::new(Vec::new()), &s)
        .unwrap();
    w.write(&b1).unwrap();
    let e = w.write(&b2).unwrap_err().to_string();
    assert!(e.contains("`n`, row 2") && e.contains("first batch"), "{e}");
}

#[test]
fn columns_and_exclude_choose_and_order() {
    let b = batch(vec![
        ("a", Arc::new(Int8Array::from(vec![1]))),
        ("b", Arc::new(Int16Array::from(vec![2]))),
        ("c", Arc::new(Int32Array::from(vec![3]))),
    ]);
    let bytes = write(&b, &BatchWriterBuilder::new().columns(["c", "a"])).unwrap();
    assert_eq!(descr(&bytes), "[('c', '<i4'), ('a', '|i1')]");
    let e = err(&b, &BatchWriterBuilder::new().exclude(["zz"]));
    assert!(
        e.contains("`zz`") && e.contains("[\"a\", \"b\", \"c\"]"),
        "{e}"
    );
    let e = err(
        &b,
        &BatchWriterBuilder::new().nulls_for("q", NullPolicy::Nan),
    );
    assert!(e.contains("`q`"), "{e}");
}

/// A mixed table: written, read back, the same schema (types) and values.
#[test]
fn a_mixed_table_round_trips_with_its_schema() {
    let b = batch(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2]))),
        ("price", dec128(vec![Some(1999), Some(-5)], 12, 2)),
        ("day", Arc::new(Date64Array::from(vec![86_400_000, 0]))),
        (
            "at",
            Arc::new(TimestampNanosecondArray::from(vec![1, 2]).with_timezone("UTC")),
        ),
        ("name", Arc::new(LargeStringArray::from(vec!["x", "yz"]))),
        (
            "blob",
            Arc::new(LargeBinaryArray::from(vec![b"1".as_ref(), b"22"])),
        ),
        ("tod", Arc::new(Time64NanosecondArray::from(vec![5, 6]))),
    ]);
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(back.columns(), b.columns());
    for (x, y) in b.schema().fields().iter().zip(back.schema().fields()) {
        assert_eq!(x.data_type(), y.data_type());
    }
    // The schema of the file alone says the same.
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    let h = npy_serde::header::parse_header(&bytes, &Default::default())
        .unwrap()
        .header;
    let s = crate::schema_for(&h).unwrap();
    assert_eq!(s.field(1).data_type(), &DataType::Decimal128(12, 2));
    assert_eq!(
        s.field(3).data_type(),
        &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
    );
}

/// Lists of length 0 keep their rows (a fixed-size list of size 0 has no values to count them).
#[test]
fn empty_lists_keep_their_rows() {
    let empty = ListArray::new(
        Arc::new(Field::new("item", DataType::Int16, true)),
        OffsetBuffer::from_lengths([0, 0, 0]),
        Arc::new(Int16Array::from(Vec::<i16>::new())),
        None,
    );
    let fixed = FixedSizeListArray::try_new_with_length(
        Arc::new(Field::new("item", DataType::Int16, true)),
        0,
        Arc::new(Int16Array::from(Vec::<i16>::new())),
        None,
        3,
    )
    .unwrap();
    let b = batch(vec![("l", Arc::new(empty)), ("f", Arc::new(fixed))]);
    let bytes = write(&b, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(
        descr(&bytes),
        "[(('arrow:l:List(Int16)', 'l'), '<i2', (0,)), ('f', '<i2', (0,))]"
    );
    let back = round_trip(&b, &BatchWriterBuilder::new());
    assert_eq!(back.num_rows(), 3);
    assert_eq!(back.column(0).as_list::<i32>().value_length(2), 0);
}
