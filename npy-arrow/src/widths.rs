//! The width of string columns in a `.npy` output (NumPy's `S`/`U` are fixed-width): the widest
//! value of each, from a first pass over the input, for
//! [`BatchWriterBuilder::string_width`](crate::BatchWriterBuilder::string_width).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType};

/// True for a column whose `.npy` width is that of its widest value (strings and binaries, and
/// fixed-size lists of them).
pub fn needs_width(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => true,
        DataType::FixedSizeList(f, _) => needs_width(f.data_type()),
        _ => false,
    }
}

/// The widest value (characters of a string, bytes of a binary; at least 1) of every
/// top-level column of `batches` that [`needs_width`]: a first pass over a table, so that a
/// `.npy` output holds its longest value wherever it comes.
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{ArrayRef, RecordBatch, StringArray};
/// let b = |v: &str| RecordBatch::try_from_iter([
///     ("s", Arc::new(StringArray::from(vec![v])) as ArrayRef),
/// ]).unwrap();
/// let widths = npy_arrow::string_widths([Ok(b("ab")), Ok(b("größer"))])?;
/// assert_eq!(widths["s"], 6);
/// # Ok::<(), arrow_schema::ArrowError>(())
/// ```
pub fn string_widths(
    batches: impl IntoIterator<Item = Result<RecordBatch, ArrowError>>,
) -> Result<HashMap<String, usize>, ArrowError> {
    let mut out: HashMap<String, usize> = HashMap::new();
    for b in batches {
        let b = b?;
        let schema = b.schema();
        for (i, f) in schema.fields().iter().enumerate() {
            if needs_width(f.data_type()) {
                let w = widest_of(b.column(i));
                let e = out.entry(f.name().clone()).or_insert(1);
                *e = (*e).max(w);
            }
        }
    }
    Ok(out)
}

fn widest_of(a: &ArrayRef) -> usize {
    let s = |it: &mut dyn Iterator<Item = Option<&str>>| {
        it.flatten().map(|v| v.chars().count()).max().unwrap_or(0)
    };
    let b = |it: &mut dyn Iterator<Item = Option<&[u8]>>| {
        it.flatten().map(<[u8]>::len).max().unwrap_or(0)
    };
    match a.data_type() {
        DataType::Utf8 => s(&mut a.as_string::<i32>().iter()),
        DataType::LargeUtf8 => s(&mut a.as_string::<i64>().iter()),
        DataType::Utf8View => s(&mut a.as_string_view().iter()),
        DataType::Binary => b(&mut a.as_binary::<i32>().iter()),
        DataType::LargeBinary => b(&mut a.as_binary::<i64>().iter()),
        DataType::BinaryView => b(&mut a.as_binary_view().iter()),
        DataType::FixedSizeList(..) => widest_of(a.as_fixed_size_list().values()),
        _ => 0,
    }
}
