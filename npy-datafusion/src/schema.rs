//! The table schema: the Arrow schema a file's header maps to, and the check that every file
//! of a table has the same columns.

use arrow_schema::{Field, Schema};
use datafusion::error::Result as DfResult;
use object_store::ObjectMeta;

use super::error::df_err;
use npy_arrow::schema_for;
use npy_serde::error::{Error, Result};
use npy_serde::header::ParsedHeader;
use npy_serde::DType;

/// The table's schema for one file: the Arrow schema of its array without the shape (files
/// of one table differ in their number of rows), with the element descr kept.
pub(crate) fn table_schema(header: &ParsedHeader) -> Result<Schema> {
    let schema = schema_for(&header.header)?;
    let mut meta = schema.metadata().clone();
    meta.retain(|k, _| k == npy_arrow::DESCR_KEY);
    Ok(Schema::new_with_metadata(schema.fields().clone(), meta))
}

/// Fails unless the file `object`, whose header is `header`, reads as rows of the table's
/// columns `table` (the columns of its files, without partition columns).
///
/// A column of a schema inferred from the files carries the file's dtype (`numpy.descr`): the
/// file must have the same columns (see [`check_same`]). A declared column (a `CREATE
/// EXTERNAL TABLE t (a INT, ...)`, a listing table given its schema) carries none: the file's
/// column in its place must be of the declared type, and nullable only if the declared one
/// is; it must have the declared name, but for a plain (non-record) array, whose one column
/// has no name of its own (it is `value` when inferred) and takes the declared one.
pub(crate) fn check_file(
    table: &Schema,
    header: &ParsedHeader,
    object: &ObjectMeta,
) -> DfResult<()> {
    let schema = table_schema(header).map_err(|e| df_err(e, object))?;
    let inferred = |f: &Field| f.metadata().contains_key(npy_arrow::DESCR_KEY);
    if table.fields().is_empty() || table.fields().iter().any(|f| inferred(f)) {
        return check_same(table, "the table's schema", &schema, object);
    }
    let plain = !matches!(header.header.dtype, DType::Record(_));
    check_declared(table, &schema, plain).map_err(|e| df_err(e, object))
}

/// Fails unless the columns `file` of a file (a plain array's one column if `plain`) read as
/// the declared columns `declared`: see [`check_file`].
fn check_declared(declared: &Schema, file: &Schema, plain: bool) -> Result<()> {
    let descr = file
        .metadata()
        .get(npy_arrow::DESCR_KEY)
        .cloned()
        .unwrap_or_default();
    let refused = |why: String| {
        Error::invalid_value(format!(
            "the table declares the columns ({}), which the file does not hold: {why}",
            fields_text(declared)
        ))
    };
    if plain {
        let found = &file.fields()[..];
        let [column] = found else {
            // A plain array is one column; the schema mapper says otherwise: refuse, saying what.
            return Err(refused(format!(
                "its dtype {descr} is a plain array of columns ({})",
                fields_text(file)
            )));
        };
        let [want] = &declared.fields()[..] else {
            return Err(refused(format!(
                "expected one column (the file is a plain array, dtype {descr}: one column of                  {}, named as the table declares it), found {} declared",
                column.data_type(),
                declared.fields().len()
            )));
        };
        if want.data_type() != column.data_type() {
            return Err(refused(format!(
                "expected column {} of type {} (the file is a plain array, dtype {descr}: one                  column of {}), found {} declared",
                want.name(),
                column.data_type(),
                column.data_type(),
                want.data_type()
            )));
        }
        return nullable_ok(want, column).map_err(refused);
    }
    if declared.fields().len() != file.fields().len() {
        return Err(refused(format!(
            "expected {} columns (its dtype {descr}: {}), found {} declared",
            file.fields().len(),
            fields_text(file),
            declared.fields().len()
        )));
    }
    for (i, (want, column)) in declared.fields().iter().zip(file.fields()).enumerate() {
        if want.name() != column.name() || want.data_type() != column.data_type() {
            return Err(refused(format!(
                "expected column {} to be {}: {} (its dtype {descr}), found {}: {} declared",
                i + 1,
                column.name(),
                column.data_type(),
                want.name(),
                want.data_type()
            )));
        }
        nullable_ok(want, column).map_err(refused)?;
    }
    Ok(())
}

/// Fails unless a file's `column` that may hold nulls (NaT) is declared nullable.
fn nullable_ok(declared: &Field, column: &Field) -> std::result::Result<(), String> {
    if column.is_nullable() && !declared.is_nullable() {
        return Err(format!(
            "expected column {} to be nullable (the file's {} holds NaT as null), found NOT \
             NULL declared",
            declared.name(),
            column.data_type()
        ));
    }
    Ok(())
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
