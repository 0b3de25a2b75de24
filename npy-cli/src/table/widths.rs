//! The width of string columns for a `.npy` output (NumPy's `S`/`U` are fixed-width): the widest
//! value of each, from a first pass over the input.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType};

use crate::failure::{CliResult, Failure};

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

/// The widest value of every top-level string column (a first pass over the input).
pub fn string_widths(
    reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    input: &str,
) -> CliResult<HashMap<String, usize>> {
    let mut out: HashMap<String, usize> = HashMap::new();
    for b in reader {
        let b = b.map_err(|e| read_failure(input, e))?;
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

fn widest_of(a: &arrow_array::ArrayRef) -> usize {
    use arrow_array::cast::AsArray;
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

/// An error reading table `input`'s batches: this crate's own error (which names the column
/// and row) as it is, when a reader carried it through Arrow's `ExternalError`.
pub fn read_failure(input: &str, e: ArrowError) -> Failure {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<npy_serde::Error>() {
            Ok(e) => Failure::file(input, e),
            Err(other) => Failure::file(input, other),
        },
        other => Failure::file(input, other),
    }
}
