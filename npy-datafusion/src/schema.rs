//! The table schema: the Arrow schema a file's header maps to, and the check that every file
//! of a table has the same columns.

use arrow_schema::Schema;
use datafusion::error::Result as DfResult;
use object_store::ObjectMeta;

use super::error::df_err;
use npy_arrow::schema_for;
use npy_serde::error::{Error, Result};
use npy_serde::header::ParsedHeader;

/// The table's schema for one file: the Arrow schema of its array without the shape (files
/// of one table differ in their number of rows), with the element descr kept.
pub(crate) fn table_schema(header: &ParsedHeader) -> Result<Schema> {
    let schema = schema_for(&header.header)?;
    let mut meta = schema.metadata().clone();
    meta.retain(|k, _| k == npy_arrow::DESCR_KEY);
    Ok(Schema::new_with_metadata(schema.fields().clone(), meta))
}

/// Fails unless `schema` (of `object`) has the same columns as the table's `first` (of
/// `first_path`).
pub(crate) fn check_same(
    first: &Schema,
    first_path: &str,
    schema: &Schema,
    object: &ObjectMeta,
) -> DfResult<()> {
    if first.fields() == schema.fields() {
        return Ok(());
    }
    let descr = |s: &Schema| {
        s.metadata()
            .get(npy_arrow::DESCR_KEY)
            .cloned()
            .unwrap_or_default()
    };
    Err(df_err(
        Error::invalid_value(format!(
            "its dtype {} (rows of {}) differs from the table's {} (rows of {}, from {first_path}): \
             every file of a table has the same dtype and the same shape after the first axis",
            descr(schema),
            fields_text(schema),
            descr(first),
            fields_text(first),
        )),
        object,
    ))
}

fn fields_text(s: &Schema) -> String {
    let parts: Vec<String> = s
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    parts.join(", ")
}
