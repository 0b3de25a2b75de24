//! The writer's side: the caller's choices ([`Choices`]: columns, null and decimal policies)
//! and the plan ([`Prep`]) that turns each batch into NumPy-ready columns (plus the mask
//! columns of the `mask` policy), settled by the first batch.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    new_empty_array, Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::arrow_err;
use super::convert;
use super::policy::Ctx;
use super::policy::{DecimalPolicy, NullPolicy};
use super::title::{self, MASK_KEY};
use npy_serde::error::{Error, Result};

/// The caller's choices for foreign columns (held by the `BatchWriterBuilder`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Choices {
    pub(crate) nulls: Option<NullPolicy>,
    pub(crate) nulls_for: HashMap<String, NullPolicy>,
    pub(crate) decimals: DecimalPolicy,
    pub(crate) decimals_for: HashMap<String, DecimalPolicy>,
    pub(crate) columns: Option<Vec<String>>,
    pub(crate) exclude: Vec<String>,
}

impl Choices {
    /// An error naming a per-column policy (`nulls_for`, `decimals_for`) whose column `schema`
    /// has not, if there is one.
    pub(crate) fn check_columns(&self, schema: &Schema) -> Result<()> {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let policies = (self.nulls_for.keys().map(|n| (n, "a null policy")))
            .chain(self.decimals_for.keys().map(|n| (n, "a decimal policy")));
        for (n, what) in policies {
            if !names.contains(&n.as_str()) {
                return Err(Error::write(format!(
                    "{what} names no column `{n}`: the columns are {names:?}"
                )));
            }
        }
        Ok(())
    }

    /// These choices for a writer of the one column `column` (a column table's array): the
    /// whole-output policies, and of the per-column ones only `column`'s (a writer refuses a
    /// policy naming a column it has not); every column kept.
    #[cfg(feature = "npz")] // column tables only
    pub(crate) fn for_column(&self, column: &str) -> Choices {
        let mut one = self.clone();
        one.nulls_for.retain(|c, _| c == column);
        one.decimals_for.retain(|c, _| c == column);
        one.columns = None;
        one.exclude.clear();
        one
    }
}

/// One written column.
#[derive(Clone, Debug)]
struct Col {
    /// Its index in the input batches.
    src: usize,
    nulls: NullPolicy,
    decimals: DecimalPolicy,
    /// Its NumPy-ready type, settled by the first batch.
    settled: DataType,
    /// A mask column follows it.
    mask: bool,
}

/// The plan of a writer: which input columns become which NumPy-ready ones.
#[derive(Clone, Debug)]
pub(crate) struct Prep {
    schema: SchemaRef,
    cols: Vec<Col>,
    /// Per output column: the Arrow type it stood for when that differs from its own (`None`
    /// for the same type), and whether it is a mask.
    origin: Vec<Origin>,
}

#[derive(Clone, Debug)]
enum Origin {
    Type(DataType),
    Mask(String),
}

impl Prep {
    /// The plan for batches of `schema`, settled by `first` (or by an empty batch); returns it
    /// and `first` made NumPy-ready.
    pub(crate) fn new(
        schema: &Schema,
        first: Option<&RecordBatch>,
        c: &Choices,
    ) -> Result<(Prep, RecordBatch)> {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let keep = crate::choose_columns(schema, c.columns.as_deref(), &c.exclude)
            .map_err(|e| Error::write(e.to_string()))?;
        c.check_columns(schema)?;
        let mut cols = Vec::with_capacity(keep.len());
        for &src in &keep {
            let f = schema.field(src);
            let name = f.name().as_str();
            let nulls = c
                .nulls_for
                .get(name)
                .or(c.nulls.as_ref())
                .cloned()
                .unwrap_or(if f.metadata().contains_key(MASK_KEY) {
                    NullPolicy::Mask
                } else {
                    NullPolicy::Error
                });
            let mask = nulls == NullPolicy::Mask && f.is_nullable();
            if mask {
                let m = title::mask_name(name);
                if names.contains(&m.as_str()) {
                    return Err(Error::write(format!(
                        "column `{name}` is written with a mask named `{m}`, but a column has \
                         that name already"
                    )));
                }
            }
            let decimals = c.decimals_for.get(name).copied().unwrap_or(c.decimals);
            cols.push(Col {
                src,
                nulls,
                decimals,
                settled: DataType::Null,
                mask,
            });
        }
        let mut prep = Prep {
            schema: Arc::new(Schema::empty()),
            cols,
            origin: Vec::new(),
        };
        let empty;
        let first = match first {
            Some(b) => b,
            None => {
                let arrays = schema
                    .fields()
                    .iter()
                    .map(|f| new_empty_array(f.data_type()));
                let rows = RecordBatchOptions::new().with_row_count(Some(0));
                empty = RecordBatch::try_new_with_options(
                    Arc::new(schema.clone()),
                    arrays.collect(),
                    &rows,
                )
                .map_err(arrow_err)?;
                &empty
            }
        };
        let arrays = prep.arrays(first, 0, true)?;
        let mut fields = Vec::with_capacity(arrays.len());
        let mut k = 0;
        for col in prep.cols.iter_mut() {
            let f = schema.field(col.src);
            col.settled = arrays[k].data_type().clone();
            let mut meta = f.metadata().clone();
            meta.remove(MASK_KEY);
            fields.push(
                Field::new(f.name(), col.settled.clone(), f.is_nullable()).with_metadata(meta),
            );
            prep.origin.push(Origin::Type(title::plain(f.data_type())));
            k += 1;
            if col.mask {
                fields.push(Field::new(
                    title::mask_name(f.name()),
                    DataType::Boolean,
                    false,
                ));
                prep.origin.push(Origin::Mask(f.name().clone()));
                k += 1;
            }
        }
        let all_kept = keep.len() == names.len() && keep.iter().enumerate().all(|(i, &k)| i == k);
        let meta = if all_kept && fields.len() == names.len() {
            schema.metadata().clone()
        } else {
            HashMap::new()
        };
        prep.schema = Arc::new(Schema::new_with_metadata(fields, meta));
        let batch = prep.batch(arrays, first.num_rows())?;
        Ok((prep, batch))
    }

    /// The schema of the NumPy-ready batches.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// `batch` made NumPy-ready; its first row is row `first_row` of the output.
    pub(crate) fn apply(&self, batch: &RecordBatch, first_row: u64) -> Result<RecordBatch> {
        let arrays = self.arrays(batch, first_row, false)?;
        self.batch(arrays, batch.num_rows())
    }

    fn batch(&self, arrays: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(arrow_err)
    }

    fn arrays(&self, batch: &RecordBatch, first_row: u64, first: bool) -> Result<Vec<ArrayRef>> {
        let mut out = Vec::with_capacity(self.cols.len());
        for col in &self.cols {
            let name = batch.schema_ref().field(col.src).name().clone();
            let cx = Ctx {
                top: &name,
                nulls: &col.nulls,
                decimals: col.decimals,
                first_row,
            };
            let a = batch.column(col.src);
            let settled = (!first).then_some(&col.settled);
            let c = convert::column(a, &cx, &name, settled)?;
            if let Some(s) = settled
                && c.data_type() != s
            {
                return Err(Error::write(format!(
                    "column `{name}` is {} in this batch but {s} in the first one, which settled \
                     its dtype",
                    c.data_type()
                )));
            }
            if col.mask
                && matches!(
                    c.data_type(),
                    DataType::Struct(_) | DataType::FixedSizeList(..)
                )
                && let Some(i) = inner_null(&c)
            {
                return Err(Error::write(format!(
                    "column `{name}`, row {}: a null inside a row that is not null, which the \
                     mask (of whole rows) cannot hold: choose the null policy nan or \
                     fill=VALUE for `{name}`",
                    first_row + i as u64
                )));
            }
            let valid = col.mask.then(|| match c.logical_nulls() {
                Some(n) => BooleanArray::new(n.inner().clone(), None),
                None => BooleanArray::from(vec![true; c.len()]),
            });
            out.push(c);
            if let Some(v) = valid {
                out.push(Arc::new(v));
            }
        }
        Ok(out)
    }

    /// Whether the encoder writes a placeholder for the nulls of output column `i` (NaN, zero)
    /// instead of failing: under every policy but `error`.
    pub(crate) fn fills(&self, i: usize) -> bool {
        let mut k = 0;
        for col in &self.cols {
            if k == i || (col.mask && k + 1 == i) {
                return col.nulls != NullPolicy::Error;
            }
            k += 1 + usize::from(col.mask);
        }
        false
    }

    /// The title output column `i` gets when written as `dtype_type` (the Arrow type its dtype
    /// maps back to): a mask's, or the marker of the Arrow type it stood for, if that differs.
    pub(crate) fn title(&self, i: usize, dtype_type: &DataType) -> Option<String> {
        match self.origin.get(i)? {
            Origin::Mask(name) => Some(title::mask_title(name)),
            Origin::Type(t) if !title::same_type(t, dtype_type) => {
                Some(title::type_title(self.schema.field(i).name(), t))
            }
            Origin::Type(_) => None,
        }
    }
}

/// The first row of a struct or fixed-size list column that is not null but holds a null.
fn inner_null(a: &ArrayRef) -> Option<usize> {
    use arrow_array::cast::AsArray;
    match a.data_type() {
        DataType::Struct(_) => {
            let s = a.as_struct();
            s.columns().iter().find_map(|c| {
                let inner = inner_null(c);
                (0..s.len())
                    .find(|&i| s.is_valid(i) && c.is_null(i))
                    .into_iter()
                    .chain(inner.filter(|&i| s.is_valid(i)))
                    .min()
            })
        }
        DataType::FixedSizeList(_, n) => {
            let l = a.as_fixed_size_list();
            let n = *n as usize;
            let v = l.values();
            let child = (0..v.len())
                .find(|&k| v.is_null(k) && n > 0 && l.is_valid(k / n))
                .map(|k| k / n);
            let deeper = inner_null(v)
                .map(|k| k / n.max(1))
                .filter(|&i| l.is_valid(i));
            child.into_iter().chain(deeper).min()
        }
        _ => None,
    }
}
