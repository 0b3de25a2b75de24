//! [`OrderCheck`]: verifies that record batches stream in a sort order, each row against the
//! one before it (across batches: the last row of a batch is kept for the next).

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ord::ord::{make_comparator, DynComparator};
use arrow_schema::Schema;
use npy_serde::error::{Error, ErrorKind, Result};
use std::cmp::Ordering;

use super::{format_order, RecordedOrder, SortColumn};

/// Verifies, batch after batch, that rows are in an order: each row compared with the one
/// before it (the first row of a batch with the last of the batch before), column by column as
/// `ORDER BY` compares them; rows equal on every column of the order are in order.
///
/// Nulls are where each [`SortColumn`] puts them (by default as DataFusion orders them: last
/// when ascending, first when descending); floating-point values are in Arrow's total order
/// (`-0.0` before `0.0`, NaN after every number), which is how DataFusion sorts them.
///
/// The first row out of order fails [`check`](Self::check) naming the columns, the row's index
/// (counting every row checked from 0) and both rows' values; the check is not to be continued
/// after that.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{ArrayRef, Int64Array, RecordBatch};
/// use npy_arrow::order::{OrderCheck, SortColumn};
///
/// let batch = |k: Vec<i64>, v: Vec<i64>| {
///     RecordBatch::try_from_iter([
///         ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
///         ("v", Arc::new(Int64Array::from(v)) as ArrayRef),
///     ])
///     .unwrap()
/// };
/// let first = batch(vec![1, 1, 2], vec![9, 8, 5]);
/// let order = [SortColumn::asc("k"), SortColumn::desc("v")];
/// let mut check = OrderCheck::new(&order, &first.schema())?;
/// check.check(&first)?;
/// check.check(&batch(vec![2, 3], vec![5, 0]))?;
/// assert_eq!(check.rows(), 5);
/// assert_eq!(check.record().rows(), 5);
/// // Row 5 (k = 3, v = 1) after row 4 (k = 3, v = 0) breaks `v DESC`.
/// let e = check.check(&batch(vec![3], vec![1])).unwrap_err().to_string();
/// assert!(e.contains("row 5 (k = 3, v = 1) comes after row 4 (k = 3, v = 0)"), "{e}");
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct OrderCheck {
    order: Vec<SortColumn>,
    /// The columns' indices in the batches' schema.
    indices: Vec<usize>,
    /// The last row checked: one row of each column of the order.
    last: Option<Vec<ArrayRef>>,
    rows: u64,
}

impl std::fmt::Debug for OrderCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderCheck")
            .field("order", &format_order(&self.order))
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl OrderCheck {
    /// A check of `order` over batches with `schema`: fails naming a column `schema` has not,
    /// or one whose type has no order (a struct of lists, a map).
    pub fn new(order: &[SortColumn], schema: &Schema) -> Result<OrderCheck> {
        if order.is_empty() {
            return Err(message("a sort order names one column at least"));
        }
        let mut indices = Vec::with_capacity(order.len());
        for column in order {
            let index = schema.index_of(column.name()).map_err(|_| {
                let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                message(format!(
                    "the sort order names the column {:?}, which the table has not; its \
                     columns are {}",
                    column.name(),
                    names.join(", ")
                ))
            })?;
            let empty = arrow_array::new_empty_array(schema.field(index).data_type());
            let _ = make_comparator(&empty, &empty, column.sort_options()).map_err(|e| {
                message(format!(
                    "the column {:?} ({}) cannot be a sort key: {e}",
                    column.name(),
                    schema.field(index).data_type()
                ))
            })?;
            indices.push(index);
        }
        Ok(OrderCheck {
            order: order.to_vec(),
            indices,
            last: None,
            rows: 0,
        })
    }

    /// The order checked.
    pub fn order(&self) -> &[SortColumn] {
        &self.order
    }

    /// The rows checked so far (all in order).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The record of the order over the rows checked so far.
    pub fn record(&self) -> RecordedOrder {
        RecordedOrder::new(self.order.clone(), self.rows)
    }

    /// Checks the rows of `batch` (whose schema is the check's), after the rows checked before.
    pub fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self
            .indices
            .iter()
            .map(|&i| batch.column(i).clone())
            .collect();
        if let Some(last) = &self.last {
            let across = self.comparators(last, &columns)?;
            self.compare(&across, 0, 0, last, &columns, self.rows - 1)?;
        }
        let within = self.comparators(&columns, &columns)?;
        for row in 1..n {
            self.compare(
                &within,
                row - 1,
                row,
                &columns,
                &columns,
                self.rows + row as u64 - 1,
            )?;
        }
        self.last = Some(columns.iter().map(|c| c.slice(n - 1, 1)).collect());
        self.rows += n as u64;
        Ok(())
    }

    fn comparators(&self, left: &[ArrayRef], right: &[ArrayRef]) -> Result<Vec<DynComparator>> {
        (self.order.iter().zip(left.iter().zip(right)))
            .map(|(c, (l, r))| {
                make_comparator(l.as_ref(), r.as_ref(), c.sort_options())
                    .map_err(|e| message(format!("column {:?}: {e}", c.name())))
            })
            .collect()
    }

    /// Compares row `i` of `left` (the row numbered `before`) with row `j` of `right` (the row
    /// after it).
    fn compare(
        &self,
        cmp: &[DynComparator],
        i: usize,
        j: usize,
        left: &[ArrayRef],
        right: &[ArrayRef],
        before: u64,
    ) -> Result<()> {
        for (k, c) in cmp.iter().enumerate() {
            match c(i, j) {
                Ordering::Less => return Ok(()),
                Ordering::Equal => continue,
                Ordering::Greater => {
                    let values = |arrays: &[ArrayRef], row: usize| {
                        let shown: Vec<String> = (self.order[..=k].iter().zip(arrays))
                            .map(|(c, a)| format!("{} = {}", c.name(), value_text(a, row)))
                            .collect();
                        shown.join(", ")
                    };
                    let names: Vec<&str> = self.order.iter().map(SortColumn::name).collect();
                    return Err(message(format!(
                        "the rows are not in the order {}: row {} ({}) comes after row {} \
                         ({}), which breaks {} (rows counted from 0)",
                        names.join(", "),
                        before + 1,
                        values(right, j),
                        before,
                        values(left, i),
                        self.order[k],
                    )));
                }
            }
        }
        Ok(())
    }
}

/// An error of this message only.
fn message(text: impl Into<String>) -> Error {
    Error::new(ErrorKind::Message(text.into()))
}

/// Row `i` of `a` as text: `null`, or the value as Arrow's `Debug` prints it.
fn value_text(a: &ArrayRef, i: usize) -> String {
    if a.is_null(i) {
        return "null".to_string();
    }
    let text = format!("{:?}", a.slice(i, 1));
    // `PrimitiveArray<Int64>\n[\n  5,\n]`: the element between the brackets.
    match (text.find("[\n"), text.rfind(",\n]")) {
        (Some(start), Some(end)) if start + 2 <= end => text[start + 2..end].trim().to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int32Array, StringArray};

    use super::*;

    fn batch(k: Vec<Option<i32>>, s: Vec<Option<&str>>) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(Int32Array::from(k)) as ArrayRef),
            ("s", Arc::new(StringArray::from(s)) as ArrayRef),
        ])
        .unwrap()
    }

    #[test]
    fn nulls_are_where_datafusion_puts_them() {
        let asc = [SortColumn::asc("k")];
        let b = batch(vec![Some(1), Some(2), None], vec![None; 3]);
        let mut c = OrderCheck::new(&asc, &b.schema()).unwrap();
        c.check(&b).unwrap();
        let desc = [SortColumn::desc("k")];
        let b = batch(vec![None, Some(2), Some(1)], vec![None; 3]);
        OrderCheck::new(&desc, &b.schema())
            .unwrap()
            .check(&b)
            .unwrap();
        // A null first, ascending, is out of order (nulls last by default).
        let b = batch(vec![None, Some(1)], vec![None; 2]);
        let e = (OrderCheck::new(&asc, &b.schema()).unwrap().check(&b))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 1 (k = 1) comes after row 0 (k = null)"),
            "{e}"
        );
        let first = [SortColumn::asc("k").nulls_first(true)];
        OrderCheck::new(&first, &b.schema())
            .unwrap()
            .check(&b)
            .unwrap();
    }

    #[test]
    fn across_batches_and_ties() {
        let order = [SortColumn::asc("k"), SortColumn::asc("s")];
        let b1 = batch(vec![Some(1), Some(1)], vec![Some("a"), Some("b")]);
        let mut c = OrderCheck::new(&order, &b1.schema()).unwrap();
        c.check(&b1).unwrap();
        c.check(&batch(vec![], vec![])).unwrap();
        c.check(&batch(vec![Some(1)], vec![Some("b")])).unwrap();
        let e = c
            .check(&batch(vec![Some(1), Some(0)], vec![Some("a"), Some("z")]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the rows are not in the order k, s: row 3 (k = 1, s = \"a\") comes after row 2 \
             (k = 1, s = \"b\"), which breaks s ASC NULLS LAST (rows counted from 0)"
        );
    }

    #[test]
    fn floats_in_total_order_and_bad_columns() {
        let b = RecordBatch::try_from_iter([(
            "x",
            Arc::new(Float64Array::from(vec![-1.0, 0.0, f64::INFINITY, f64::NAN])) as ArrayRef,
        )])
        .unwrap();
        let mut c = OrderCheck::new(&[SortColumn::asc("x")], &b.schema()).unwrap();
        c.check(&b).unwrap();
        assert_eq!(c.rows(), 4);
        let e = OrderCheck::new(&[SortColumn::asc("y")], &b.schema()).unwrap_err();
        assert!(e
            .to_string()
            .contains("\"y\", which the table has not; its columns are x"));
        assert!(OrderCheck::new(&[], &b.schema()).is_err());
    }
}
