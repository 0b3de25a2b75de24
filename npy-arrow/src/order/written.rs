//! The values a reader of a written array sees, as Arrow arrays: what the column table writer
//! verifies its order on and takes its statistics of (see `columns.rs`), and what
//! [`WrittenOrderCheck`] verifies an order on.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use npy_serde::error::{Error, Result};

use super::collect::as_read;
use super::{OrderCheck, RecordedOrder, SortColumn};
use crate::foreign::normalize::{Choices, Prep};
use crate::writer::BatchWriterBuilder;

/// Verifies that rows are in an order as a [`BatchWriterBuilder`]'s writers write them: after
/// its null and decimal policies (a null filled with a value is that value, a float's null is
/// the NaN it is written as, a masked one stays a null), the values a reader of the file gets,
/// not the Arrow batches' own. Otherwise as [`OrderCheck`], which it runs on those values.
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
/// use npy_arrow::order::SortColumn;
/// use npy_arrow::{BatchWriterBuilder, NullPolicy};
///
/// let batch = RecordBatch::try_from_iter([
///     ("k", Arc::new(Int64Array::from(vec![Some(1), Some(2), None])) as ArrayRef),
/// ]).unwrap();
/// let order = [SortColumn::asc("k")];
/// // As Arrow has them, the rows are in order (nulls last).
/// let mut check = BatchWriterBuilder::new()
///     .nulls(NullPolicy::Mask)
///     .written_order_check(&order, &batch.schema())?;
/// check.check(&batch)?;
/// assert_eq!(check.record().rows(), 3);
/// // Filled with 0, the null is a 0 after the 2.
/// let mut check = BatchWriterBuilder::new()
///     .nulls(NullPolicy::Fill("0".into()))
///     .written_order_check(&order, &batch.schema())?;
/// let e = check.check(&batch).unwrap_err().to_string();
/// assert!(e.contains("row 2 (k = 0) comes after row 1 (k = 2)"), "{e}");
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Debug)]
pub struct WrittenOrderCheck {
    order: Vec<SortColumn>,
    schema: SchemaRef,
    /// The writer's choices for the order's columns only.
    choices: Choices,
    /// The plan of the writer, settled by the first batch, and the check of its values.
    started: Option<(Prep, OrderCheck)>,
}

impl BatchWriterBuilder {
    /// A check that the rows of batches with `schema` are in `order` as this builder's
    /// writers write them (see [`WrittenOrderCheck`]): fails naming a column `schema` has not,
    /// or one with no order.
    pub fn written_order_check(
        &self,
        order: &[SortColumn],
        schema: &Schema,
    ) -> Result<WrittenOrderCheck> {
        OrderCheck::new(order, schema)?;
        let mut choices = self.foreign.clone();
        let mut names: Vec<String> = Vec::new();
        for c in order {
            if !names.iter().any(|n| n == c.name()) {
                names.push(c.name().to_string());
            }
        }
        choices.columns = Some(names);
        choices.exclude.clear();
        Ok(WrittenOrderCheck {
            order: order.to_vec(),
            schema: Arc::new(schema.clone()),
            choices,
            started: None,
        })
    }
}

impl WrittenOrderCheck {
    /// Checks the rows of `batch` (whose schema is the check's), after the rows checked before.
    pub fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        let ready = match &self.started {
            Some((prep, check)) => prep.apply(batch, check.rows())?,
            None => {
                let (prep, ready) = Prep::new(&self.schema, Some(batch), &self.choices)?;
                let check = OrderCheck::new(&self.order, &view(&ready, &self.order)?.schema())?;
                self.started = Some((prep, check));
                ready
            }
        };
        let view = view(&ready, &self.order)?;
        let (_, check) = self.started.as_mut().expect("started above");
        check.check(&view)
    }

    /// The record of the order over the rows checked so far.
    pub fn record(&self) -> RecordedOrder {
        match &self.started {
            Some((_, check)) => check.record(),
            None => RecordedOrder::new(self.order.clone(), 0),
        }
    }
}

/// The columns of `order` in the NumPy-ready batch `ready`, as a reader gets them back.
fn view(ready: &RecordBatch, order: &[SortColumn]) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for c in order {
        if fields.iter().any(|f: &Field| f.name() == c.name()) {
            continue;
        }
        let i = ready
            .schema_ref()
            .index_of(c.name())
            .map_err(|e| Error::invalid_value(e.to_string()))?;
        let column = as_read(ready.column(i).clone());
        fields.push(Field::new(c.name(), column.data_type().clone(), true));
        columns.push(column);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::invalid_value(e.to_string()))
}
