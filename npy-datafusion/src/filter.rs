//! Filters in the scan: the predicate DataFusion's `FilterPushdown` rule hands
//! [`NpySource`](super::NpySource) ([`pushable`] says which filters it takes), kept as a
//! [`ScanFilter`] over the columns it reads, and the decoder of row chunks under it
//! ([`ChunkDecoder`]): the filter's columns are decoded first and the predicate evaluated on
//! them; the other projected columns are decoded only for the rows that pass.
//!
//! The scan filters exactly (the rows it returns are those for which the predicate is true,
//! NULL counting as false, as in DataFusion's `FilterExec`), so a pushed filter leaves
//! DataFusion nothing to do. The values of the rows a filter drops are decoded only in the
//! filter's own columns; a value that fails to decode in another column of such a row is not
//! seen (as in Parquet's row filters).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use datafusion::arrow::compute::kernels::boolean::and;
use datafusion::arrow::compute::{filter_record_batch, prep_null_mask_filter};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::utils::{collect_columns, reassign_expr_columns};
use datafusion::physical_expr::{conjunction, split_conjunction};
use datafusion::physical_expr_common::physical_expr::is_volatile;
use datafusion::physical_expr_common::physical_expr::{
    snapshot_generation, snapshot_physical_expr,
};
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::joins::HashTableLookupExpr;
use datafusion::physical_plan::PhysicalExpr;
use object_store::ObjectMeta;

use super::error::df_err;
use crate::raw::{Int, Raw, Utf32, Values};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use npy_arrow::RowDecoder;
use npy_serde::header::Header;

/// A pushed filter selects at least this share (1 in N) of a chunk's rows: the other
/// columns are decoded for the whole chunk and then filtered; sparser selections copy the
/// passing rows' bytes together first and decode only them.
pub(crate) const DENSE: usize = 4;

/// Whether the scan of a table with `table`'s columns evaluates `filter` exactly: it reads
/// only the files' own columns (not partition columns) and is not volatile.
pub(crate) fn pushable(filter: &Arc<dyn PhysicalExpr>, table: &TableSchema) -> bool {
    let file = table.file_schema();
    !is_volatile(filter)
        && collect_columns(filter).iter().all(|c| {
            file.fields()
                .get(c.index())
                .is_some_and(|f| f.name() == c.name())
        })
}

/// What a scan answers DataFusion's `FilterPushdown` with: `Yes` for each of `filters` it
/// evaluates exactly (when it `takes` filters at all, those [`pushable`] over `table`), `No`
/// for the others (DataFusion keeps them above the scan); and, if it took any, the scan
/// `with` its new predicate (`current` and the taken filters in conjunction).
pub(crate) fn take_filters(
    filters: &[Arc<dyn PhysicalExpr>],
    takes: bool,
    table: &TableSchema,
    current: Option<&Arc<dyn PhysicalExpr>>,
    with: impl FnOnce(Arc<dyn PhysicalExpr>) -> Arc<dyn FileSource>,
) -> FilterPushdownPropagation<Arc<dyn FileSource>> {
    let verdicts: Vec<PushedDown> = filters
        .iter()
        .map(|f| {
            if takes && pushable(f, table) {
                PushedDown::Yes
            } else {
                PushedDown::No
            }
        })
        .collect();
    let taken: Vec<Arc<dyn PhysicalExpr>> = filters
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| matches!(v, PushedDown::Yes))
        .map(|(f, _)| f.clone())
        .collect();
    let answer = FilterPushdownPropagation::with_parent_pushdown_result(verdicts);
    if taken.is_empty() {
        return answer;
    }
    answer.with_updated_node(with(conjunction(current.cloned().into_iter().chain(taken))))
}

/// A scan's predicate over the columns it reads.
///
/// Its conjuncts are of two kinds. The query's own filters are evaluated exactly. A join's
/// or a TopK's dynamic filter (DataFusion pushes it while the query runs, as a hint: the join
/// still joins) is evaluated only while its current value is cheap: bounds and an `IN` list
/// of a small build side, which can drop most rows before the other columns are read; a
/// large build side's hash-table lookup is skipped (the join probes the same table, so
/// evaluating it in the scan doubled the work: TPC-H Q4, Q5 and Q18 over column tables ran
/// 10-50% slower with it, Q17 with an `IN` list 3x faster), unless the scan makes strings of
/// other columns for the rows that pass and the lookup drops most rows ([`Lookups`]).
#[derive(Debug)]
pub(crate) struct ScanFilter {
    /// The query's conjuncts, their columns numbered as in `on` (`None`: none).
    exact: Option<Arc<dyn PhysicalExpr>>,
    /// The dynamic conjuncts, numbered alike.
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
    /// The columns it reads (indices into the files' columns), ascending.
    on: Vec<usize>,
}

impl ScanFilter {
    /// The filter `predicate` (over the table's columns, which start with the files' columns
    /// `file`).
    pub(crate) fn new(predicate: &Arc<dyn PhysicalExpr>, file: &Schema) -> DfResult<Self> {
        let mut on: Vec<usize> = collect_columns(predicate)
            .iter()
            .map(|c| c.index())
            .collect();
        on.sort_unstable();
        on.dedup();
        let schema = file.project(&on)?;
        let predicate = reassign_expr_columns(predicate.clone(), &schema)?;
        let (dynamic, exact): (Vec<_>, Vec<_>) = split_conjunction(&predicate)
            .into_iter()
            .cloned()
            .partition(|c| snapshot_generation(c) != 0);
        let exact = (!exact.is_empty()).then(|| conjunction(exact));
        Ok(ScanFilter { exact, dynamic, on })
    }

    /// The columns the predicate reads (indices into the files' columns), ascending.
    pub(crate) fn on(&self) -> &[usize] {
        &self.on
    }

    /// The query's conjuncts that `take` turns into something else (each over the columns
    /// [`on`](Self::on), numbered by their position there), and the filter of the others and
    /// the dynamic ones, over those columns (their schema `on_schema`): `None` when none is
    /// left. `None` when `take` turns none of them.
    pub(crate) fn split<T>(
        &self,
        on_schema: &Schema,
        mut take: impl FnMut(&Arc<dyn PhysicalExpr>) -> Option<T>,
    ) -> DfResult<Option<(Vec<T>, Option<ScanFilter>)>> {
        let mut taken = Vec::new();
        let mut rest = Vec::new();
        if let Some(exact) = &self.exact {
            for c in split_conjunction(exact) {
                match take(c) {
                    Some(t) => taken.push(t),
                    None => rest.push(c.clone()),
                }
            }
        }
        if taken.is_empty() {
            return Ok(None);
        }
        rest.extend(self.dynamic.iter().cloned());
        if rest.is_empty() {
            return Ok(Some((taken, None)));
        }
        let rest = ScanFilter::new(&conjunction(rest), on_schema)?;
        Ok(Some((taken, Some(rest))))
    }

    /// The rows of `batch` (the columns `on`, in order) the predicate keeps; a hash-table
    /// lookup of a dynamic filter evaluated as `lookups` says.
    pub(crate) fn mask(
        &self,
        batch: &RecordBatch,
        lookups: &mut Lookups,
    ) -> DfResult<BooleanArray> {
        let mut mask = match &self.exact {
            Some(p) => Some(evaluate(p, batch)?),
            None => None,
        };
        for d in &self.dynamic {
            let now = snapshot_physical_expr(d.clone())?;
            if is_hash_lookup(&now)? && *lookups == Lookups::Skip {
                continue;
            }
            let more = evaluate(&now, batch)?;
            if is_hash_lookup(&now)? && *lookups == Lookups::Try {
                // The first batch it is tried on decides for the scan's partition.
                *lookups = if more.true_count().saturating_mul(SPARSE) <= batch.num_rows() {
                    Lookups::Evaluate
                } else {
                    Lookups::Skip
                };
            }
            mask = Some(match mask {
                Some(m) => and(&m, &more)?,
                None => more,
            });
        }
        Ok(mask.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()])))
    }

    /// The columns a reader of whole batches reads for a scan of `indices` under this filter:
    /// `indices`, then the filter's other columns.
    pub(crate) fn read_columns(&self, indices: &[usize]) -> Vec<usize> {
        let extra = self.on.iter().filter(|i| !indices.contains(i));
        indices.iter().chain(extra).copied().collect()
    }

    /// The rows of `batch` (the columns [`read_columns`](Self::read_columns)`(indices)`) the
    /// predicate keeps, in the columns `indices` under `schema`.
    pub(crate) fn apply(
        &self,
        batch: &RecordBatch,
        indices: &[usize],
        schema: &SchemaRef,
    ) -> DfResult<RecordBatch> {
        let read = self.read_columns(indices);
        let position = |c: &usize| read.iter().position(|r| r == c).unwrap_or(0);
        let on: Vec<usize> = self.on.iter().map(position).collect();
        let mask = self.mask(&batch.project(&on)?, &mut Lookups::Skip)?;
        let kept = filter_record_batch(
            &batch.project(&(0..indices.len()).collect::<Vec<_>>())?,
            &mask,
        )?;
        with_schema(schema, kept.columns().to_vec(), kept.num_rows())
    }
}

/// The rows of `batch` that `predicate` keeps (NULL counts as false).
fn evaluate(predicate: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> DfResult<BooleanArray> {
    let value = predicate.evaluate(batch)?;
    let array = value.into_array(batch.num_rows())?;
    let Some(mask) = array.as_boolean_opt() else {
        return Err(DataFusionError::Internal(format!(
            "a pushed filter evaluated to {}, not booleans",
            array.data_type()
        )));
    };
    Ok(if mask.null_count() > 0 {
        prep_null_mask_filter(mask)
    } else {
        mask.clone()
    })
}

/// Whether a dynamic filter's current value looks rows up in a hash join's table (see
/// [`ScanFilter`]; hashing a row to choose the partition whose `IN` list applies is cheap).
fn is_hash_lookup(e: &Arc<dyn PhysicalExpr>) -> DfResult<bool> {
    let mut found = false;
    e.apply(|node| {
        found = node.downcast_ref::<HashTableLookupExpr>().is_some();
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(found)
}

/// A hash-table lookup keeps at most 1 row in this many of the batch it is tried on to be
/// evaluated in the scan from then on.
const SPARSE: usize = 8;

/// Whether a scan evaluates a join's hash-table lookup (a dynamic filter of a large build
/// side) itself. The join probes the same table, so the scan's lookup pays only by the
/// columns it spares: `Try` when the scan makes strings of columns outside the filter for the
/// rows that pass (TPC-H Q12 made `o_orderpriority` strings for every order, where 2% of them
/// meet a line that passes), else `Skip`. A `Try` is evaluated on the next batch and becomes
/// `Evaluate` when it keeps at most 1 row in [`SPARSE`], else `Skip`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookups {
    Skip,
    Try,
    Evaluate,
}

/// Where an output column of a filtered chunk comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source {
    /// The filter's columns (its position among them).
    On(usize),
    /// The other columns.
    Rest(usize),
}

/// A filter's conjuncts over `U<n>`, integer and day fields, evaluated on the records' bytes
/// (`raw`): each reads positions among the filter's columns, `at[k]` the byte offset in a row
/// of the field at position `k` (0 for the others, which no conjunct reads); `fields` decodes
/// the fields they read, to report a value they cannot compare (a day count past Date32).
#[derive(Debug)]
pub(crate) struct RawStage {
    conjuncts: Vec<Raw>,
    at: Vec<usize>,
    fields: RowDecoder,
}

impl RawStage {
    /// The rows of a chunk of `rows` records of `row_bytes` each that every conjunct keeps
    /// (`first` and `offset`: the chunk's first row and byte, for errors).
    fn evaluate(
        &self,
        chunk: &[u8],
        rows: usize,
        row_bytes: usize,
        (first, offset): (u64, u64),
    ) -> DfResult<BooleanBuffer> {
        // A tile of rows at a time (a multiple of 64, about 256 KiB of records): each
        // conjunct reads its field of every record, and the next finds the records in the
        // cache.
        let tile = ((256 << 10) / row_bytes.max(1)).max(64) / 64 * 64;
        let mut mask = BooleanBufferBuilder::new(rows);
        let mut at = 0;
        while at < rows {
            let n = tile.min(rows - at);
            let bytes = &chunk[at * row_bytes..(at + n) * row_bytes];
            let values: Vec<Values<'_>> = (self.at.iter())
                .map(|&start| Values {
                    bytes,
                    stride: row_bytes,
                    start,
                })
                .collect();
            let mut kept: Option<BooleanBuffer> = None;
            for r in &self.conjuncts {
                let Some(m) = r.evaluate(n, &values) else {
                    // Decoding the fields names the value.
                    self.fields
                        .decode(chunk, first, rows, offset)
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    return Err(DataFusionError::Internal(
                        "a raw comparison found a value its field decodes".into(),
                    ));
                };
                kept = Some(match kept {
                    Some(a) => &a & &m,
                    None => m,
                });
            }
            match kept {
                Some(k) => mask.append_buffer(&k),
                None => mask.append_n(n, true),
            }
            at += n;
        }
        Ok(mask.finish())
    }
}

/// Decodes chunks of whole rows into batches of the projected columns, keeping the rows a
/// pushed filter passes.
#[derive(Debug)]
pub(crate) enum ChunkDecoder {
    /// No filter: the projected columns of every row.
    All(RowDecoder),
    /// A filter's string comparisons on the records' bytes (`raw`) and its other conjuncts
    /// over their columns decoded (`filter`, `on`) first, then the other projected columns
    /// for the rows that pass.
    Filtered {
        raw: Option<Box<RawStage>>,
        filter: Option<Arc<ScanFilter>>,
        on: Option<RowDecoder>,
        rest: Option<Box<RowDecoder>>,
        from: Vec<Source>,
        row_bytes: usize,
        rows: u64,
    },
}

impl ChunkDecoder {
    /// The decoder of the columns `indices` of `header`'s array under `filter`.
    pub(crate) fn new(
        header: &Header,
        indices: &[usize],
        filter: Option<&Arc<ScanFilter>>,
    ) -> npy_serde::Result<Self> {
        let all = RowDecoder::new(header, Some(indices), false)?;
        let Some(filter) = filter else {
            return Ok(ChunkDecoder::All(all));
        };
        let (row_bytes, rows) = (all.row_bytes(), all.rows());
        // The conjuncts over `U<n>`, integer and day fields, compared on the records' bytes;
        // the others.
        let mut at = vec![0; filter.on.len()];
        let utf32 = |k: usize| {
            let (offset, chars, big) = all.utf32_column(*filter.on.get(k)?)?;
            Some((k, Utf32 { chars, big }, offset))
        };
        let int = |k: usize| {
            let (offset, dt, big) = all.int_column(*filter.on.get(k)?)?;
            Some((k, Int::of(&dt, big)?, offset))
        };
        let on_schema = Schema::new(
            filter
                .on
                .iter()
                .map(|&i| all.schema_of(&[i]).field(0).clone())
                .collect::<Vec<_>>(),
        );
        let split = filter
            .split(&on_schema, |c| {
                Raw::compile_with(c, &|k| utf32(k).map(|(k, width, _)| (k, width)), &|k| {
                    int(k).map(|(k, int, _)| (k, int))
                })
                .inspect(|r| {
                    let mut read = Vec::new();
                    r.columns(&mut read);
                    for k in read {
                        at[k] = utf32(k)
                            .map(|(_, _, offset)| offset)
                            .or_else(|| int(k).map(|(_, _, offset)| offset))
                            .unwrap_or(0);
                    }
                })
            })
            .map_err(|e| npy_serde::Error::invalid_value(e.to_string()))?;
        // The filter the decoded columns answer, and those columns (indices into the files').
        let (raw, filter, on): (_, Option<Arc<ScanFilter>>, Vec<usize>) = match split {
            None => (None, Some(filter.clone()), filter.on.clone()),
            Some((conjuncts, rest)) => {
                let rest = rest.map(Arc::new);
                let on = rest
                    .as_ref()
                    .map_or_else(Vec::new, |r| r.on.iter().map(|&k| filter.on[k]).collect());
                let mut read = Vec::new();
                conjuncts.iter().for_each(|r: &Raw| r.columns(&mut read));
                let read: Vec<usize> = read.iter().map(|&k| filter.on[k]).collect();
                let fields = RowDecoder::new(header, Some(&read), false)?;
                let stage = RawStage {
                    conjuncts,
                    at,
                    fields,
                };
                (Some(Box::new(stage)), rest, on)
            }
        };
        let others: Vec<usize> = indices
            .iter()
            .copied()
            .filter(|i| !on.contains(i))
            .collect();
        let from = indices
            .iter()
            .map(|i| match on.iter().position(|o| o == i) {
                Some(k) => Source::On(k),
                None => Source::Rest(others.iter().position(|o| o == i).unwrap_or(0)),
            })
            .collect();
        let rest = if others.is_empty() {
            None
        } else {
            Some(Box::new(RowDecoder::new(header, Some(&others), false)?))
        };
        let on = if on.is_empty() {
            None
        } else {
            Some(RowDecoder::new(header, Some(&on), false)?)
        };
        Ok(ChunkDecoder::Filtered {
            raw,
            filter,
            on,
            rest,
            from,
            row_bytes,
            rows,
        })
    }

    /// The bytes of one row.
    pub(crate) fn row_bytes(&self) -> usize {
        match self {
            ChunkDecoder::All(d) => d.row_bytes(),
            ChunkDecoder::Filtered { row_bytes, .. } => *row_bytes,
        }
    }

    /// The rows of the array.
    pub(crate) fn rows(&self) -> u64 {
        match self {
            ChunkDecoder::All(d) => d.rows(),
            ChunkDecoder::Filtered { rows, .. } => *rows,
        }
    }

    /// The rows `first..first + rows` of `object`, whose bytes are `chunk` (from byte
    /// `offset` of the file), that the filter keeps, in the projected columns `schema`.
    pub(crate) fn decode(
        &self,
        chunk: &[u8],
        first: u64,
        rows: usize,
        offset: u64,
        schema: &SchemaRef,
        object: &ObjectMeta,
    ) -> DfResult<RecordBatch> {
        let err = |e| df_err(e, object);
        let (raw, filter, on, rest, from) = match self {
            ChunkDecoder::All(d) => {
                let b = d.decode(chunk, first, rows, offset).map_err(err)?;
                return with_schema(schema, b.columns().to_vec(), rows);
            }
            ChunkDecoder::Filtered {
                raw,
                filter,
                on,
                rest,
                from,
                row_bytes,
                ..
            } => {
                let len = rows.saturating_mul(*row_bytes);
                if chunk.len() != len {
                    let (want, got) = (offset + len as u64, offset + chunk.len() as u64);
                    return Err(err(npy_serde::Error::eof("the array data", want, got)));
                }
                let raw = match raw {
                    Some(r) => {
                        let m = r.evaluate(chunk, rows, *row_bytes, (first, offset))?;
                        if m.count_set_bits() == 0 {
                            return Ok(RecordBatch::new_empty(schema.clone()));
                        }
                        Some(m)
                    }
                    None => None,
                };
                (raw, filter, on, rest, from)
            }
        };
        let on = match on {
            Some(d) => Some(d.decode(chunk, first, rows, offset).map_err(err)?),
            None => None,
        };
        let mask = match (raw, filter, &on) {
            (Some(r), Some(f), Some(on)) => {
                BooleanArray::new(&r & f.mask(on, &mut Lookups::Skip)?.values(), None)
            }
            (Some(r), _, _) => BooleanArray::new(r, None),
            (None, Some(f), Some(on)) => f.mask(on, &mut Lookups::Skip)?,
            // No filter (the constructor makes a `Filtered` decoder with one): every row.
            _ => BooleanArray::from(vec![true; rows]),
        };
        let kept = mask.true_count();
        let on = match on {
            Some(on) if kept < rows => Some(filter_record_batch(&on, &mask)?),
            on => on,
        };
        let rest = match rest {
            None => None,
            Some(d) if kept == rows => Some(d.decode(chunk, first, rows, offset).map_err(err)?),
            Some(d) if kept == 0 => Some(RecordBatch::new_empty(d.schema())),
            Some(d) if kept.saturating_mul(DENSE) >= rows => {
                let all = d.decode(chunk, first, rows, offset).map_err(err)?;
                Some(filter_record_batch(&all, &mask)?)
            }
            Some(d) => Some(sparse(d, chunk, first, rows, offset, &mask, kept).map_err(err)?),
        };
        let mut columns = Vec::with_capacity(from.len());
        for f in from {
            let column = match (f, &on, &rest) {
                (Source::On(k), Some(on), _) => on.column(*k).clone(),
                (Source::Rest(k), _, Some(r)) => r.column(*k).clone(),
                _ => {
                    return Err(DataFusionError::Internal(
                        "a projected column neither decoded nor filtered".into(),
                    ))
                }
            };
            columns.push(column);
        }
        with_schema(schema, columns, kept)
    }
}

/// The rows `mask` keeps (`kept` of them) of a chunk, decoded by `d` from a copy of their
/// bytes. A decoding error is found again in the whole chunk, whose positions are the file's.
fn sparse(
    d: &RowDecoder,
    chunk: &[u8],
    first: u64,
    rows: usize,
    offset: u64,
    mask: &BooleanArray,
    kept: usize,
) -> npy_serde::Result<RecordBatch> {
    let rb = d.row_bytes();
    let mut bytes = Vec::with_capacity(kept.saturating_mul(rb));
    for i in mask.values().set_indices() {
        bytes.extend_from_slice(&chunk[i * rb..(i + 1) * rb]);
    }
    match d.decode(&bytes, first, kept, offset) {
        Ok(b) => Ok(b),
        Err(e) => {
            let all = d.decode(chunk, first, rows, offset)?;
            filter_record_batch(&all, mask).map_err(|_| e)
        }
    }
}

/// `columns` (of `rows` rows) as a batch of `schema`.
fn with_schema(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> DfResult<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}
