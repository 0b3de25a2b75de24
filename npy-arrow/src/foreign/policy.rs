//! The null and decimal policies in force for one column ([`Ctx`]); the policies themselves
//! are npy-serde's (`npy_serde::policy`), which the tool parses without this crate.

pub(crate) use npy_serde::policy::{DecimalPolicy, NullPolicy};

/// The choices in force for one top-level column.
#[derive(Clone, Debug)]
pub(crate) struct Ctx<'a> {
    /// The top-level column's name (what `exclude` and the per-column policies name).
    pub(crate) top: &'a str,
    pub(crate) nulls: &'a NullPolicy,
    pub(crate) decimals: DecimalPolicy,
    /// The output row of the batch's first row (for errors).
    pub(crate) first_row: u64,
}
