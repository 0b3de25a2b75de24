//! Columns from elsewhere (Parquet, pyarrow, polars, DuckDB, a query) that NumPy has no direct
//! dtype for: the policies that choose what they become ([`NullPolicy`], [`DecimalPolicy`]), the
//! conversion of each batch before the encoder sees it (`normalize`, `convert`, `nulls`,
//! `decimal`), the title marker that keeps the Arrow type in the `.npy` file (`title`), and the
//! way back on reading (`restore`). The mapping itself is the table in the
//! [module docs](crate).
//!
//! Imports only the crate's error, arrow-rs and its own files (the schema and the encoder call
//! into it, never the other way round).

pub(crate) mod convert;
pub(crate) mod decimal;
pub(crate) mod normalize;
pub(crate) mod nulls;
pub(crate) mod policy;
pub(crate) mod restore;
pub(crate) mod title;

use npy_serde::error::Error;

/// An Arrow error (from building an array whose parts this module made consistent) as this
/// crate's error.
pub(crate) fn arrow_err(e: arrow_schema::ArrowError) -> Error {
    Error::invalid_value(format!("Arrow: {e}"))
}

#[cfg(test)]
mod tests;
