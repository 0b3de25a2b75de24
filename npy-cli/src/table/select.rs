//! The column choice of a table conversion applied where the input is read (a Parquet
//! projection, a `.npy` reader's columns, or [`Select`] over batches), and the null and
//! decimal policies handed to the `.npy` batch writer.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use npy_arrow::{choose_columns, BatchWriterBuilder, ColumnChoiceError};

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};

impl TableChoice {
    /// The indices of `schema`'s columns to keep, in their order (`None`: all, as they are);
    /// a name `input` lacks is an error naming the flag.
    pub fn indices(&self, schema: &Schema, input: &str) -> CliResult<Option<Vec<usize>>> {
        if !self.selects() {
            return Ok(None);
        }
        let keep = choose_columns(schema, self.columns.as_deref(), &self.exclude).map_err(|e| {
            Failure::usage(match e {
                ColumnChoiceError::Unknown {
                    name,
                    excluded,
                    columns,
                } => format!(
                    "{} {name}: {input} has no column `{name}` (its columns: {})",
                    if excluded { "--exclude" } else { "--columns" },
                    columns.join(", ")
                ),
                ColumnChoiceError::Twice(name) => format!("--columns: `{name}` is named twice"),
                ColumnChoiceError::NoneLeft { columns } => format!(
                    "--columns/--exclude leave no column of {input} (its columns: {})",
                    columns.join(", ")
                ),
                other => format!("{input}: {other}"),
            })
        })?;
        Ok(Some(keep))
    }

    /// The batch writer configured with the null and decimal policies (the run's first, then
    /// each column's, which the writer prefers).
    pub fn configure(&self, mut wb: BatchWriterBuilder) -> CliResult<BatchWriterBuilder> {
        for n in &self.nulls {
            let policy = n.policy.clone();
            wb = match &n.column {
                Some(c) => wb.nulls_for(c, policy),
                None => wb.nulls(policy),
            };
        }
        for d in &self.decimals {
            let policy = d.policy;
            wb = match &d.column {
                Some(c) => wb.decimals_for(c, policy),
                None => wb.decimals(policy),
            };
        }
        Ok(match self.strings {
            Some(objects) => wb.strings_as_objects(objects),
            None => wb,
        })
    }
}

/// A batch reader giving only some columns of another's batches (for inputs that cannot
/// project while reading: `.npz` members, query results).
pub struct Select<R> {
    reader: R,
    indices: Vec<usize>,
    schema: SchemaRef,
}

impl<R: RecordBatchReader> Select<R> {
    /// The columns `indices` of `reader`'s batches (whose schema, with its metadata, is
    /// `schema`).
    pub fn new(reader: R, schema: &Schema, indices: Vec<usize>) -> CliResult<Self> {
        let schema = schema
            .project(&indices)
            .map_err(|e| Failure::usage(e.to_string()))?;
        Ok(Select {
            reader,
            indices,
            schema: Arc::new(schema),
        })
    }
}

impl<R: RecordBatchReader> Iterator for Select<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.reader.next()?.and_then(|b| b.project(&self.indices)))
    }
}

impl<R: RecordBatchReader> RecordBatchReader for Select<R> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choice::ChoiceArgs;
    use arrow_schema::{DataType, Field};

    fn choice(columns: Option<&str>, exclude: &[&str]) -> TableChoice {
        ChoiceArgs {
            columns: columns.map(|c| c.split(',').map(String::from).collect()),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
        .parse()
        .unwrap()
    }

    #[test]
    fn indices_in_the_order_asked() {
        let schema = Schema::new(
            ["a", "b", "c", "d"]
                .map(|n| Field::new(n, DataType::Int8, false))
                .to_vec(),
        );
        let idx = |c, x: &[&str]| choice(c, x).indices(&schema, "t.parquet");
        assert_eq!(idx(None, &[]).unwrap(), None);
        assert_eq!(idx(Some("c,a"), &[]).unwrap(), Some(vec![2, 0]));
        assert_eq!(idx(None, &["b", "d"]).unwrap(), Some(vec![0, 2]));
        assert_eq!(idx(Some("d,b,a"), &["b"]).unwrap(), Some(vec![3, 0]));
        let e = idx(Some("a,z"), &[]).unwrap_err().msg;
        assert!(
            e.contains("--columns z: t.parquet has no column `z` (its columns: a, b, c, d)"),
            "{e}"
        );
        let e = idx(None, &["q"]).unwrap_err().msg;
        assert!(
            e.contains("--exclude q: t.parquet has no column `q`"),
            "{e}"
        );
        let e = idx(Some("a,a"), &[]).unwrap_err().msg;
        assert!(e.contains("`a` is named twice"), "{e}");
        let e = idx(Some("a"), &["a"]).unwrap_err().msg;
        assert!(e.contains("leave no column of t.parquet"), "{e}");
    }
}
