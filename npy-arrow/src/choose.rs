//! Which columns of a schema a choice keeps: the ones `columns` names, in its order (all, in
//! the schema's order, without it), less the ones `exclude` names. The one rule for
//! [`BatchWriterBuilder::columns`](crate::BatchWriterBuilder::columns) and for callers that
//! project at read time (the `npy` tool's `--columns` / `--exclude`).

use std::fmt;

use arrow_schema::Schema;

/// Why a column choice cannot be made; each caller words it with its own option names.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ColumnChoiceError {
    /// A name no column has; `excluded` if `exclude` named it (else `columns` did).
    Unknown {
        /// The name.
        name: String,
        /// Whether it was to be excluded.
        excluded: bool,
        /// The schema's column names.
        columns: Vec<String>,
    },
    /// `columns` names a column twice (a record cannot hold two fields of one name).
    Twice(String),
    /// Nothing is left.
    NoneLeft {
        /// The schema's column names.
        columns: Vec<String>,
    },
}

impl fmt::Display for ColumnChoiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnChoiceError::Unknown {
                name,
                excluded,
                columns,
            } => write!(
                f,
                "{} names no column `{name}`: the columns are {columns:?}",
                if *excluded { "exclude" } else { "columns" }
            ),
            ColumnChoiceError::Twice(name) => write!(f, "columns names `{name}` twice"),
            ColumnChoiceError::NoneLeft { columns } => write!(
                f,
                "columns and exclude leave no column (the columns are {columns:?})"
            ),
        }
    }
}

impl std::error::Error for ColumnChoiceError {}

/// The indices of the columns of `schema` that `columns` (in its order; every column, in the
/// schema's order, if `None`) less `exclude` keep.
///
/// ```
/// use arrow_schema::{DataType, Field, Schema};
/// use npy_arrow::{choose_columns, ColumnChoiceError};
///
/// let schema = Schema::new(["a", "b", "c"].map(|n| Field::new(n, DataType::Int8, false)).to_vec());
/// let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert_eq!(choose_columns(&schema, Some(&names(&["c", "a"])), &[])?, [2, 0]);
/// assert_eq!(choose_columns(&schema, None, &names(&["b"]))?, [0, 2]);
/// assert!(matches!(
///     choose_columns(&schema, Some(&names(&["z"])), &[]),
///     Err(ColumnChoiceError::Unknown { excluded: false, .. })
/// ));
/// # Ok::<(), ColumnChoiceError>(())
/// ```
pub fn choose_columns(
    schema: &Schema,
    columns: Option<&[String]>,
    exclude: &[String],
) -> Result<Vec<usize>, ColumnChoiceError> {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let all = || names.iter().map(|n| n.to_string()).collect();
    let find = |name: &String, excluded: bool| {
        names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| ColumnChoiceError::Unknown {
                name: name.clone(),
                excluded,
                columns: all(),
            })
    };
    let mut keep = match columns {
        Some(list) => {
            let mut keep: Vec<usize> = Vec::with_capacity(list.len());
            for name in list {
                let i = find(name, false)?;
                if keep.contains(&i) {
                    return Err(ColumnChoiceError::Twice(name.clone()));
                }
                keep.push(i);
            }
            keep
        }
        None => (0..names.len()).collect(),
    };
    let drop = exclude
        .iter()
        .map(|n| find(n, true))
        .collect::<Result<Vec<_>, _>>()?;
    keep.retain(|i| !drop.contains(i));
    if keep.is_empty() && !names.is_empty() {
        return Err(ColumnChoiceError::NoneLeft { columns: all() });
    }
    Ok(keep)
}
