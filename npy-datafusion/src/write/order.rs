//! The order of a written file's rows: checked row by row while the file is written
//! ([`FileOrder`]), in the orders of the write option `sort_order` and in the order the plan
//! gives the sink's rows ([`planned_order`]); and the record it leaves (see
//! [`NpyWriteOptions`]'s *Recorded orders*).

use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Schema};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexRequirement, PhysicalExpr};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use npy_arrow::order::{OrderCheck, RecordedOrder, SortColumn};
use npy_arrow::NullPolicy;

use super::options::NpyWriteOptions;

/// The order the sink's rows come in, as far as the plan says: the order it `required` of its
/// input (an `INSERT INTO` a table with an order; DataFusion sorts the rows so), else the
/// output ordering of its `input` if that is one partition (a `COPY (SELECT ... ORDER BY k)`).
/// Only its columns up to the first expression that is not a column are taken (rows sorted by
/// `a, f(b)` are sorted by `a`). A hint: the sink verifies it before recording it.
pub(crate) fn planned_order(
    input: &Arc<dyn ExecutionPlan>,
    required: Option<&LexRequirement>,
) -> Option<Vec<SortColumn>> {
    let column = |expr: &Arc<dyn PhysicalExpr>, descending: bool, nulls_first: bool| {
        let c = expr.downcast_ref::<Column>()?;
        Some(SortColumn::new(c.name(), descending, nulls_first))
    };
    let order: Vec<SortColumn> = match required {
        Some(required) => (required.iter())
            .map_while(|r| {
                let o = r.options?;
                column(&r.expr, o.descending, o.nulls_first)
            })
            .collect(),
        None if input.output_partitioning().partition_count() == 1 => (input.output_ordering())?
            .iter()
            .map_while(|s| column(&s.expr, s.options.descending, s.options.nulls_first))
            .collect(),
        None => Vec::new(),
    };
    (!order.is_empty()).then_some(order)
}

/// One order a file's rows are checked in.
struct Check {
    check: OrderCheck,
    /// Declared (`sort_order`: a row out of it fails the write) or the plan's (a row out of it
    /// only stops the check: nothing is recorded).
    declared: bool,
    /// The key columns (indices in the files' schema) whose nulls would be written as values
    /// (`nan`, `fill`): a null in one of them leaves the file's order unproven.
    unkept: Vec<usize>,
    /// A check of the plan's order that a row failed.
    broken: bool,
}

/// The orders one file's rows are checked in while it is written, and the record they prove.
pub(crate) struct FileOrder {
    checks: Vec<Check>,
}

impl FileOrder {
    /// The checks of a file of `schema` written with `options`: each order of `sort_order`,
    /// then `planned` (the plan's order, if it is not one of them). A declared order naming a
    /// column the files have not is an error; a planned one is then left out.
    pub(crate) fn new(
        options: &NpyWriteOptions,
        planned: Option<&[SortColumn]>,
        schema: &Schema,
    ) -> DfResult<FileOrder> {
        let mut checks = Vec::new();
        for order in &options.sort_order {
            let check = OrderCheck::new(order, schema).map_err(|e| {
                DataFusionError::Configuration(format!("npy write option sort_order: {e}"))
            })?;
            checks.push(Check {
                unkept: unkept(options, order, schema),
                check,
                declared: true,
                broken: false,
            });
        }
        if let Some(order) = planned.filter(|o| !options.sort_order.iter().any(|d| d == o))
            && let Ok(check) = OrderCheck::new(order, schema)
        {
            checks.push(Check {
                unkept: unkept(options, order, schema),
                check,
                declared: false,
                broken: false,
            });
        }
        Ok(FileOrder { checks })
    }

    /// Checks the rows of `batch` (after those checked before): fails if one breaks a declared
    /// order, or a declared order's key column has a null written as a value.
    pub(crate) fn check(&mut self, batch: &RecordBatch) -> DfResult<()> {
        for c in self.checks.iter_mut().filter(|c| !c.broken) {
            let nulls = (c.unkept.iter()).find(|&&i| batch.column(i).null_count() > 0);
            let checked = match nulls {
                Some(&i) => Err(format!(
                    "the column {:?} of the order {} has nulls, which the null policy writes as \
                     values (nan, fill=VALUE): the file's rows would not be in the order; write \
                     its nulls with the policy mask (nulls.COLUMN mask) or leave them out",
                    batch.schema().field(i).name(),
                    npy_arrow::order::format_order(c.check.order()),
                )),
                None => c.check.check(batch).map_err(|e| e.to_string()),
            };
            if let Err(e) = checked {
                if c.declared {
                    return Err(DataFusionError::Execution(format!(
                        "npy write option sort_order: {e}"
                    )));
                }
                c.broken = true;
            }
        }
        Ok(())
    }

    /// The record of the file's rows once all are written: the first declared order, else
    /// the plan's if every row was in it.
    pub(crate) fn record(&self) -> Option<RecordedOrder> {
        (self.checks.iter())
            .find(|c| !c.broken)
            .map(|c| c.check.record())
    }
}

/// The columns of `order` (indices in `schema`) whose nulls `options` write as values: every
/// one but those of a datetime type (a null is `NaT`, read back as a null) and those written
/// with the `mask` policy.
fn unkept(options: &NpyWriteOptions, order: &[SortColumn], schema: &Schema) -> Vec<usize> {
    (order.iter())
        .filter_map(|c| schema.index_of(c.name()).ok())
        .filter(|&i| {
            let field = schema.field(i);
            let datetime = matches!(
                field.data_type(),
                DataType::Timestamp(..)
                    | DataType::Date32
                    | DataType::Date64
                    | DataType::Duration(_)
            );
            let own = (options.nulls_for.iter())
                .find(|(c, _)| c.as_str() == field.name())
                .or_else(|| {
                    (options.nulls_for.iter()).find(|(c, _)| c.eq_ignore_ascii_case(field.name()))
                })
                .map(|(_, p)| p);
            let mask = own.or(options.nulls.as_ref()) == Some(&NullPolicy::Mask);
            !datetime && !mask
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use arrow_array::{ArrayRef, Int64Array};

    use super::*;

    fn batch(k: Vec<Option<i64>>) -> RecordBatch {
        RecordBatch::try_from_iter([("k", Arc::new(Int64Array::from(k)) as ArrayRef)]).unwrap()
    }

    #[test]
    fn declared_orders_fail_and_planned_ones_are_dropped() {
        let b = batch(vec![Some(1), Some(2)]);
        let schema = b.schema();
        let declared = NpyWriteOptions::new().sorted_by([SortColumn::asc("k")]);
        let mut order = FileOrder::new(&declared, None, &schema).unwrap();
        order.check(&b).unwrap();
        let e = order.check(&batch(vec![Some(0)])).unwrap_err().to_string();
        assert!(e.contains("row 2 (k = 0) comes after row 1 (k = 2)"), "{e}");

        let planned = [SortColumn::asc("k")];
        let none = NpyWriteOptions::new();
        let mut order = FileOrder::new(&none, Some(&planned), &schema).unwrap();
        order.check(&b).unwrap();
        assert_eq!(order.record().unwrap().rows(), 2);
        order.check(&batch(vec![Some(0)])).unwrap();
        assert_eq!(order.record(), None);

        // A declared order of a column the files have not; a planned one is left out.
        let other = NpyWriteOptions::new().sorted_by([SortColumn::asc("z")]);
        assert!(FileOrder::new(&other, None, &schema).is_err());
        let z = [SortColumn::asc("z")];
        let order = FileOrder::new(&none, Some(&z), &schema).unwrap();
        assert_eq!(order.record(), None);
    }

    #[test]
    fn nulls_written_as_values_prove_no_order() {
        let b = batch(vec![Some(1), Some(2), None]);
        let schema = b.schema();
        let planned = [SortColumn::asc("k")];
        for (nulls, recorded) in [("fill=-1", false), ("nan", false), ("mask", true)] {
            let options = NpyWriteOptions::new().set("nulls.K", nulls).unwrap();
            let mut order = FileOrder::new(&options, Some(&planned), &schema).unwrap();
            order.check(&b).unwrap();
            assert_eq!(order.record().is_some(), recorded, "{nulls}");
            let declared = options.sorted_by(planned.clone());
            let mut order = FileOrder::new(&declared, None, &schema).unwrap();
            let checked = order.check(&b);
            assert_eq!(checked.is_ok(), recorded, "{nulls}");
        }
        // No null: every policy keeps the order.
        let options = NpyWriteOptions::new().set("nulls", "fill=-1").unwrap();
        let mut order = FileOrder::new(&options, Some(&planned), &schema).unwrap();
        order.check(&batch(vec![Some(1), Some(2)])).unwrap();
        assert!(order.record().is_some());
    }
}
