//! `scan_npy`'s filter in the scan: the conjuncts of a Polars predicate that compare one column
//! with a literal (`==`, `!=`, `<`, `<=`, `>`, `>=`, `is_null`, `is_not_null`), evaluated on
//! each batch in Rust (arrow-ord's comparison kernels) so that the rows they drop never become
//! Polars frames. The package translates the predicate (`_polars_filter` in `__init__.py`) and
//! Polars applies the whole predicate again to what passes, so a conjunct is pushed only where
//! its answer is the predicate's: a term whose literal the column's type cannot hold exactly, or
//! a float compared with zero or a non-finite value (Arrow orders `-0.0` below `0.0`, Polars
//! equates them), is left to Polars.

use arrow_array::{
    Array, ArrayRef, BooleanArray, Datum, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, Int8Array, LargeStringArray, RecordBatch, Scalar, StringArray, StringViewArray,
    UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{ArrowError, DataType};
use pyo3::prelude::*;

use crate::errors::value_error;

/// A literal of a term.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl<'py> FromPyObject<'_, 'py> for Lit {
    type Error = PyErr;

    fn extract(v: Borrowed<'_, 'py, PyAny>) -> PyResult<Lit> {
        // `bool` first: it is an `int` to Python.
        if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
            return Ok(Lit::Bool(b.is_true()));
        }
        if let Ok(i) = v.extract::<i64>() {
            return Ok(Lit::Int(i));
        }
        if let Ok(f) = v.extract::<f64>() {
            return Ok(Lit::Float(f));
        }
        if let Ok(s) = v.extract::<String>() {
            return Ok(Lit::Str(s));
        }
        let t = v.get_type();
        Err(value_error(format!(
            "a filter literal must be a bool, int, float or str, not {t}"
        )))
    }
}

/// How a term compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    IsNull,
    IsNotNull,
}

impl Op {
    fn parse(s: &str) -> PyResult<Op> {
        Ok(match s {
            "==" => Op::Eq,
            "!=" => Op::NotEq,
            "<" => Op::Lt,
            "<=" => Op::LtEq,
            ">" => Op::Gt,
            ">=" => Op::GtEq,
            "is_null" => Op::IsNull,
            "is_not_null" => Op::IsNotNull,
            other => return Err(value_error(format!("filter operator {other:?}"))),
        })
    }
}

/// One conjunct: `column op literal`.
#[derive(Clone, Debug)]
pub struct Term {
    column: String,
    op: Op,
    value: Option<Lit>,
}

/// The conjunction of terms; empty keeps every row.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    terms: Vec<Term>,
}

impl Filter {
    /// The filter of `(column, op, literal)` triples (`literal` `None` for the null tests).
    pub fn new(terms: Vec<(String, String, Option<Lit>)>) -> PyResult<Filter> {
        let terms = terms
            .into_iter()
            .map(|(column, op, value)| {
                let op = Op::parse(&op)?;
                let null_test = matches!(op, Op::IsNull | Op::IsNotNull);
                if null_test != value.is_none() {
                    return Err(value_error(format!(
                        "filter term on {column}: a comparison needs a literal, a null test none"
                    )));
                }
                Ok(Term { column, op, value })
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Filter { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The rows of `batch` every applicable term keeps.
    pub fn apply(&self, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let mut keep: Option<BooleanBuffer> = None;
        for t in &self.terms {
            let Some(column) = batch.column_by_name(&t.column) else {
                continue;
            };
            let Some(mask) = t.mask(column)? else {
                continue;
            };
            // A null comparison keeps no row (as Polars' filter).
            let m = match mask.nulls() {
                Some(n) => mask.values() & n.inner(),
                None => mask.values().clone(),
            };
            keep = Some(match keep {
                Some(k) => &k & &m,
                None => m,
            });
        }
        match keep {
            Some(k) if k.count_set_bits() < batch.num_rows() => {
                arrow_select::filter::filter_record_batch(&batch, &BooleanArray::new(k, None))
            }
            _ => Ok(batch),
        }
    }
}

impl Term {
    /// The term's answer for each row of `column`, or `None` where it is left to Polars.
    fn mask(&self, column: &ArrayRef) -> Result<Option<BooleanArray>, ArrowError> {
        let valid = || match column.logical_nulls() {
            Some(n) => n.into_inner(),
            None => BooleanBuffer::new_set(column.len()),
        };
        let value = match (self.op, &self.value) {
            (Op::IsNotNull, _) => return Ok(Some(BooleanArray::new(valid(), None))),
            (Op::IsNull, _) => return Ok(Some(BooleanArray::new(!&valid(), None))),
            (_, Some(v)) => v,
            (_, None) => return Ok(None),
        };
        let Some(scalar) = scalar_for(column.data_type(), value) else {
            return Ok(None);
        };
        let scalar = Scalar::new(scalar);
        let c: &dyn Datum = column;
        use arrow_ord::cmp;
        let mask = match self.op {
            Op::Eq => cmp::eq(c, &scalar),
            Op::NotEq => cmp::neq(c, &scalar),
            Op::Lt => cmp::lt(c, &scalar),
            Op::LtEq => cmp::lt_eq(c, &scalar),
            Op::Gt => cmp::gt(c, &scalar),
            Op::GtEq => cmp::gt_eq(c, &scalar),
            Op::IsNull | Op::IsNotNull => unreachable!("answered above"),
        }?;
        Ok(Some(mask))
    }
}

/// A one-element array of `dt` holding `v` exactly, if it can.
fn scalar_for(dt: &DataType, v: &Lit) -> Option<ArrayRef> {
    use std::sync::Arc;
    macro_rules! int {
        ($arr:ty, $t:ty, $i:expr) => {
            <$t>::try_from(*$i)
                .ok()
                .map(|x| Arc::new(<$arr>::from(vec![x])) as ArrayRef)
        };
    }
    // A float compared with zero or a non-finite value is left to Polars (see the module docs).
    let float_ok = |f: f64| f.is_finite() && f != 0.0;
    match (dt, v) {
        (DataType::Boolean, Lit::Bool(b)) => Some(Arc::new(BooleanArray::from(vec![*b]))),
        (DataType::Int8, Lit::Int(i)) => int!(Int8Array, i8, i),
        (DataType::Int16, Lit::Int(i)) => int!(Int16Array, i16, i),
        (DataType::Int32, Lit::Int(i)) => int!(Int32Array, i32, i),
        (DataType::Int64, Lit::Int(i)) => int!(Int64Array, i64, i),
        (DataType::UInt8, Lit::Int(i)) => int!(UInt8Array, u8, i),
        (DataType::UInt16, Lit::Int(i)) => int!(UInt16Array, u16, i),
        (DataType::UInt32, Lit::Int(i)) => int!(UInt32Array, u32, i),
        (DataType::UInt64, Lit::Int(i)) => int!(UInt64Array, u64, i),
        (DataType::Float64 | DataType::Float32, Lit::Int(i)) => {
            let f = *i as f64;
            (f as i64 == *i && *i != i64::MAX).then_some(())?;
            scalar_for(dt, &Lit::Float(f))
        }
        (DataType::Float64, Lit::Float(f)) if float_ok(*f) => {
            Some(Arc::new(Float64Array::from(vec![*f])))
        }
        (DataType::Float32, Lit::Float(f)) if float_ok(*f) && (*f as f32) as f64 == *f => {
            Some(Arc::new(Float32Array::from(vec![*f as f32])))
        }
        (DataType::Utf8, Lit::Str(s)) => Some(Arc::new(StringArray::from(vec![s.as_str()]))),
        (DataType::LargeUtf8, Lit::Str(s)) => {
            Some(Arc::new(LargeStringArray::from(vec![s.as_str()])))
        }
        (DataType::Utf8View, Lit::Str(s)) => {
            Some(Arc::new(StringViewArray::from(vec![s.as_str()])))
        }
        _ => None,
    }
}
