//! The title marker `arrow:NAME:TYPE` that keeps a column's Arrow type in a `.npy` file.
//!
//! NumPy refuses extra header keys, so the one per-field text it keeps is the field's title:
//! a written field whose Arrow type is not the default mapping of its dtype is titled
//! `arrow:NAME:TYPE`, TYPE being arrow-rs's `Display` of the type (parsed back with
//! `DataType::from_str`), except that the microsecond unit is spelled `us` instead of `µs`
//! (both parse; the header stays ASCII). A mask field is titled `arrow:NAME_valid:mask`.

use std::str::FromStr;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};

/// Field metadata key the reader puts on a column whose nulls came from a mask field (the
/// mask's name): written again, the column gets its mask back unless a null policy is chosen
/// for it.
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch};
/// use npy_arrow::{BatchWriterBuilder, NpyBatchReader, NullPolicy, MASK_KEY};
/// let batch = RecordBatch::try_from_iter([
///     ("n", Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef),
/// ]).unwrap();
/// let mut w = BatchWriterBuilder::new()
///     .nulls(NullPolicy::Mask)
///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
/// w.write(&batch)?;
/// let bytes = w.finish()?.into_inner();
/// let back = NpyBatchReader::from_slice(&bytes)?.next_batch()?.unwrap();
/// assert_eq!(back.num_columns(), 1);
/// assert_eq!(back.schema().field(0).metadata()[MASK_KEY], "n_valid");
/// assert!(back.column(0).is_null(1));
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub const MASK_KEY: &str = "numpy.mask";

/// Every marker title starts so.
pub(crate) const PREFIX: &str = "arrow:";

/// What a marker title says about its field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Marker {
    /// The field held this Arrow type.
    Type(DataType),
    /// The field is the validity of the field named without the `_valid` suffix.
    Mask,
}

/// The spelling of `dt` in a title.
pub(crate) fn spell(dt: &DataType) -> String {
    dt.to_string().replace("µs", "us")
}

/// The title of a field `name` that held `dt`.
pub(crate) fn type_title(name: &str, dt: &DataType) -> String {
    format!("{PREFIX}{name}:{}", spell(dt))
}

/// The title of the mask field beside the field `name` (itself named `{name}_valid`).
pub(crate) fn mask_title(name: &str) -> String {
    format!("{PREFIX}{}:mask", mask_name(name))
}

/// The name of the mask field beside `name`.
pub(crate) fn mask_name(name: &str) -> String {
    format!("{name}_valid")
}

/// A title this crate made (recomputed, not kept, when a field is written again).
pub(crate) fn is_marker(title: &str) -> bool {
    title.starts_with(PREFIX)
}

/// The marker of a field named `name` titled `title`, if the title is one for this field and
/// its type parses.
pub(crate) fn parse(title: &str, name: &str) -> Option<Marker> {
    let rest = title
        .strip_prefix(PREFIX)?
        .strip_prefix(name)?
        .strip_prefix(':')?;
    if rest == "mask" {
        return Some(Marker::Mask);
    }
    DataType::from_str(rest).ok().map(Marker::Type)
}

/// The type a column of `dt` comes back as: dictionaries and run-end encodings as their values,
/// views as the plain types (recursively).
pub(crate) fn plain(dt: &DataType) -> DataType {
    let field = |f: &Arc<Field>| Arc::new(f.as_ref().clone().with_data_type(plain(f.data_type())));
    match dt {
        DataType::Dictionary(_, v) => plain(v),
        DataType::RunEndEncoded(_, v) => plain(v.data_type()),
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(f) | DataType::ListView(f) => DataType::List(field(f)),
        DataType::LargeList(f) | DataType::LargeListView(f) => DataType::LargeList(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(field).collect::<Fields>()),
        other => other.clone(),
    }
}

/// The same type, nullability and metadata of nested fields aside.
pub(crate) fn same_type(a: &DataType, b: &DataType) -> bool {
    match (a, b) {
        (DataType::FixedSizeList(f, n), DataType::FixedSizeList(g, m)) => {
            n == m && same_type(f.data_type(), g.data_type())
        }
        (DataType::List(f), DataType::List(g))
        | (DataType::LargeList(f), DataType::LargeList(g)) => {
            same_type(f.data_type(), g.data_type())
        }
        (DataType::Struct(f), DataType::Struct(g)) => {
            f.len() == g.len()
                && f.iter()
                    .zip(g.iter())
                    .all(|(x, y)| x.name() == y.name() && same_type(x.data_type(), y.data_type()))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::TimeUnit;

    /// Every type a title may name spells and parses back to itself.
    #[test]
    fn titles_round_trip_through_from_str() {
        let types = [
            DataType::Decimal32(9, 2),
            DataType::Decimal64(15, 2),
            DataType::Decimal128(15, 2),
            DataType::Decimal128(10, -3),
            DataType::Decimal256(40, 5),
            DataType::Time32(TimeUnit::Second),
            DataType::Time32(TimeUnit::Millisecond),
            DataType::Time64(TimeUnit::Microsecond),
            DataType::Time64(TimeUnit::Nanosecond),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            DataType::Timestamp(TimeUnit::Nanosecond, Some("+08:00".into())),
            DataType::Timestamp(TimeUnit::Second, Some("Europe/Paris".into())),
            DataType::Date64,
            DataType::LargeUtf8,
            DataType::LargeBinary,
            DataType::Int64,
            DataType::UInt32,
            DataType::Boolean,
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            DataType::LargeList(Arc::new(Field::new("item", DataType::Float32, false))),
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Decimal128(7, 2),
                true,
            ))),
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Decimal128(7, 2), true),
                Field::new("b", DataType::Int32, false),
            ])),
        ];
        for dt in types {
            let t = type_title("x", &dt);
            assert!(t.is_ascii(), "{t}");
            assert_eq!(parse(&t, "x"), Some(Marker::Type(dt.clone())), "{t}");
        }
        assert_eq!(parse(&mask_title("x"), "x_valid"), Some(Marker::Mask));
        assert_eq!(parse("arrow:y:Int64", "x"), None);
        assert_eq!(parse("price in USD", "x"), None);
    }

    #[test]
    fn plain_drops_encodings_only() {
        let dict = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8View));
        assert_eq!(plain(&dict), DataType::Utf8);
        assert_eq!(plain(&DataType::LargeUtf8), DataType::LargeUtf8);
        let lv = DataType::ListView(Arc::new(Field::new("item", DataType::BinaryView, true)));
        let l = DataType::List(Arc::new(Field::new("item", DataType::Binary, false)));
        assert!(same_type(&plain(&lv), &l));
    }
}
