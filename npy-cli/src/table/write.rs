//! Batches written to a table output: `.npy` (through the batch writer's own thread), an `.npz`
//! member, `.parquet` or `.arrow`, under a temporary name renamed over OUT when complete.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, Schema, SchemaRef};
use npy_arrow::order::{OrderCheck, SortColumn, StatsCollector, TableRecord, WrittenOrderCheck};
use npy_arrow::{BatchWriterBuilder, NpyBatchWriter};
use npy_serde::staged::{PendingRename, StagedFile};
use npy_serde::AlignedWriter;

use crate::choice::{ChoiceArgs, TableChoice};
use crate::failure::{CliResult, Failure};
use crate::output::{npz_member_output, Target};
use crate::table::ends::{finish_file, TableOut};
use crate::table::parquet;
use crate::table::progress::Progress;
use crate::table::select::Select;
use crate::table::widths::read_failure;

/// The output file, written under a temporary name and renamed when complete (removed if
/// dropped before).
struct Out {
    target: PathBuf,
    pending: Option<PendingRename>,
}

impl Out {
    fn create(name: &str) -> CliResult<(Out, AlignedWriter<File>)> {
        if name == "-" {
            return Err(Failure::usage(
                "Parquet, Arrow and .npy table output needs a file (it is written out of order)",
            ));
        }
        let target = PathBuf::from(name);
        let (f, pending) = StagedFile::create(&target)
            .map_err(|e| Failure::file(name, e))?
            .into_parts();
        Ok((Out { target, pending }, AlignedWriter::new(f)))
    }

    fn commit(self) -> CliResult {
        let name = self.target.display().to_string();
        match self.pending {
            Some(p) => p.commit().map_err(|e| Failure::write(&name, e)),
            None => Ok(()),
        }
    }
}

/// [`write_with`] for a source that cannot project while reading (`npy sql -o`'s query): the
/// columns `args` keep (its batches projected), its null and decimal policies. A query's rows
/// come in row order whatever its tables' files were, so a `numpy.fortran_order` its schema
/// kept from a table (a Parquet file made from a Fortran-order `.npy`) is dropped: the output
/// is written in C order, whatever number of rows the query gives.
#[cfg_attr(not(feature = "datafusion"), allow(dead_code))] // `npy sql -o`'s
pub fn write_chosen<R: RecordBatchReader>(
    reader: R,
    o: &TableOut<'_>,
    args: &ChoiceArgs,
) -> CliResult {
    let choice = args.parse()?;
    let mut schema = reader.schema().as_ref().clone();
    schema.metadata.remove(npy_arrow::FORTRAN_KEY);
    let keep = match choice.indices(&schema, o.input)? {
        Some(keep) => keep,
        None => (0..schema.fields().len()).collect(),
    };
    let reader = Select::new(reader, &schema, keep)?;
    write_with(reader, None, Progress::none(), o, HashMap::new(), &choice)
}

/// Writes the batches of `reader` (whose schema is `schema`, or the reader's) to `o`, moving
/// `progress`, with the null and decimal policies of `choice` for a `.npy` or `.npz` output
/// (for Parquet and Arrow output they are a usage error). Its column choice is not applied
/// here: the reader applies it (`table::select`).
pub fn write_with<R: RecordBatchReader>(
    reader: R,
    schema: Option<SchemaRef>,
    progress: Progress,
    o: &TableOut<'_>,
    widths: HashMap<String, usize>,
    choice: &TableChoice,
) -> CliResult {
    let target = o.target;
    if choice.has_policies() && !matches!(target, Target::Npy | Target::Npz) {
        return Err(Failure::usage(
            "--nulls and --decimals apply to .npy and .npz output (Parquet and Arrow keep \
             nulls and decimals as they are), as does --strings",
        ));
    }
    let schema: SchemaRef = schema.unwrap_or_else(|| reader.schema());
    let input = o.input;
    let (output, _) = npz_target(o);
    let output = if target == Target::Npz {
        output
    } else {
        o.output
    };
    let read_err = |e: ArrowError| read_failure(input, e);
    // Verified on the values as they are written (after `--nulls`), which the record describes.
    let check = match o.sorted_by {
        Some(order) => {
            order_check(order, &schema, input)?;
            let wb = choice.configure(BatchWriterBuilder::new())?;
            let check = wb
                .written_order_check(order, &schema)
                .map_err(|e| Failure::usage(format!("--sorted-by: {input}: {e}")))?;
            Some(RefCell::new(check))
        }
        None => None,
    };
    let unsorted = RefCell::new(None);
    let reader = Verified {
        reader,
        check: check.as_ref(),
        failed: &unsorted,
        input,
    };
    // A row out of order ends the reader with an error: the failure is the check's.
    let read_err = |e: ArrowError| unsorted.take().unwrap_or_else(|| read_err(e));
    let record = || check.as_ref().map(|c| c.borrow().record());
    let (out, file) = Out::create(output)?;
    match target {
        Target::Npy => {
            let mut wb = choice.configure(BatchWriterBuilder::new())?;
            for (name, w) in &widths {
                wb = wb.string_width(name, *w);
            }
            // Written through the batch writer's own thread: no buffer of ours in between.
            let file = file.into_inner().map_err(|e| Failure::write(output, e))?;
            let mut w: NpyBatchWriter<File> = wb
                .file_writer(file, &schema)
                .map_err(|e| Failure::file(output, e))?;
            // The statistics of the values as a reader gets them back, recorded beside the
            // file for DataFusion's planning (join order, selectivity), as a column table
            // records them in itself.
            let mut stats = StatsCollector::new(schema.fields().iter().map(|f| f.name().clone()));
            for b in reader {
                let b = b.map_err(read_err)?;
                w.write_collecting(&b, &mut stats)
                    .map_err(|e| Failure::file(input, format!("cannot write {output}: {e}")))?;
                progress.add(b.num_rows());
            }
            w.finish().map_err(|e| Failure::file(output, e))?;
            // The record beside the file once it is in place; an earlier one is replaced or
            // removed. A device or FIFO gets none (nothing beside it is ours to write).
            out.commit()?;
            let sidecar = npy_arrow::order::sidecar_of(Path::new(output));
            let regular = std::fs::metadata(output).is_ok_and(|m| m.is_file());
            let placed = match (record(), regular) {
                (order, true) => npy_arrow::order::write_table_record(
                    &sidecar,
                    &TableRecord {
                        order,
                        stats: Some(stats.finish()),
                    },
                ),
                (Some(record), false) => npy_arrow::order::write_sidecar(&sidecar, &record),
                (None, false) => npy_arrow::order::remove_stale_sidecar(&sidecar),
            };
            let name = sidecar.display().to_string();
            return placed.map_err(|e| Failure::write(&name, e));
        }
        Target::Arrow => {
            let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema)
                .map_err(|e| Failure::file(output, e))?;
            for b in reader {
                let b = b.map_err(read_err)?;
                w.write(&b).map_err(|e| Failure::file(output, e))?;
                progress.add(b.num_rows());
            }
            w.finish().map_err(|e| Failure::file(output, e))?;
            let f = w.into_inner().map_err(|e| Failure::file(output, e))?;
            finish_file(f, output)?;
        }
        Target::Parquet => parquet::write(reader, &schema, file, &progress, o, read_err)?,
        Target::Npz => {
            let (_, key) = npz_target(o);
            let mut wb = choice.configure(BatchWriterBuilder::new())?;
            for (name, w) in &widths {
                wb = wb.string_width(name, *w);
            }
            let mut npz = npy_serde::NpzWriter::new(file);
            let failed = RefCell::new(None);
            let counted = Counted {
                reader,
                progress: &progress,
                failed: &failed,
                read_err: &read_err,
            };
            let written = npy_arrow::write_npz_member(&mut npz, &key, counted, &wb);
            if let Some(f) = unsorted.take().or(failed.into_inner()) {
                return Err(f);
            }
            written.map_err(|e| Failure::file(input, format!("cannot write {output}: {e}")))?;
            if let Some(record) = record() {
                let comment = record.with_member(key.as_str()).to_string();
                (npz.set_comment(comment.as_bytes())).map_err(|e| Failure::file(output, e))?;
            }
            let f = npz.finish().map_err(|e| Failure::file(output, e))?;
            finish_file(f, output)?;
        }
        Target::Json | Target::Csv => {
            return Err(Failure::usage(
                "JSON and CSV output is from .npy input only (convert the table to .npy first)",
            ))
        }
    }
    out.commit()
}

/// The check of `--sorted-by` over the table `input` with `schema`: a column it has not (or one
/// with no order) is a usage error.
pub fn order_check(order: &[SortColumn], schema: &Schema, input: &str) -> CliResult<OrderCheck> {
    OrderCheck::new(order, schema).map_err(|e| Failure::usage(format!("--sorted-by: {input}: {e}")))
}

/// A batch reader whose rows are verified in an order (`--sorted-by`): the first row out of it
/// ends the reader with an error, its failure kept in `failed`.
struct Verified<'a, R> {
    reader: R,
    check: Option<&'a RefCell<WrittenOrderCheck>>,
    failed: &'a RefCell<Option<Failure>>,
    input: &'a str,
}

impl<R: RecordBatchReader> Iterator for Verified<'_, R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = match self.reader.next()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        let checked = match self.check {
            Some(check) => check.borrow_mut().check(&b),
            None => Ok(()),
        };
        if let Err(e) = checked {
            let msg = e.to_string();
            self.failed.replace(Some(Failure::file(self.input, e)));
            return Some(Err(ArrowError::ExternalError(msg.into())));
        }
        Some(Ok(b))
    }
}

impl<R: RecordBatchReader> RecordBatchReader for Verified<'_, R> {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

/// The archive and member key of an `.npz` output: `OUT.npz:KEY`, or `OUT.npz` with the
/// input's file stem as the key.
fn npz_target<'a>(o: &TableOut<'a>) -> (&'a str, String) {
    match npz_member_output(o.output) {
        Some((archive, key)) => (archive, key.to_string()),
        None => {
            let stem = Path::new(o.input)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "arr_0".into());
            (o.output, stem)
        }
    }
}

/// A batch reader that moves the progress bar and keeps the first read error as the input's
/// failure (the writer then stops with an error of its own).
struct Counted<'a, R, F> {
    reader: R,
    progress: &'a Progress,
    failed: &'a std::cell::RefCell<Option<Failure>>,
    read_err: &'a F,
}

impl<R: RecordBatchReader, F: Fn(ArrowError) -> Failure> Iterator for Counted<'_, R, F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.next()? {
            Ok(b) => {
                self.progress.add(b.num_rows());
                Some(Ok(b))
            }
            Err(e) => {
                let msg = e.to_string();
                self.failed.replace(Some((self.read_err)(e)));
                Some(Err(ArrowError::ExternalError(msg.into())))
            }
        }
    }
}

impl<R: RecordBatchReader, F: Fn(ArrowError) -> Failure> RecordBatchReader for Counted<'_, R, F> {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatchIterator};

    use super::*;

    /// A query's batches (a reader that cannot project) to `.npy` with `--exclude`.
    #[test]
    fn chosen_columns_of_a_batch_source() {
        let col = |v: i64| Arc::new(Int64Array::from(vec![v, v + 1])) as ArrayRef;
        let b =
            RecordBatch::try_from_iter([("a", col(1)), ("b", col(10)), ("c", col(100))]).unwrap();
        let dir = std::env::temp_dir();
        let out = dir.join(format!("npy-cli-chosen-{}.npy", std::process::id()));
        let out_name = out.display().to_string();
        let o = TableOut {
            input: "the query",
            output: &out_name,
            target: Target::Npy,
            compression: None,
            row_group_size: None,
            sorted_by: None,
        };
        let args = ChoiceArgs {
            columns: Some(vec!["c".into(), "a".into()]),
            exclude: vec!["a".into()],
            ..Default::default()
        };
        let reader = RecordBatchIterator::new([Ok(b.clone())], b.schema());
        write_chosen(reader, &o, &args).unwrap();
        let back = npy_arrow::read_batch(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        assert_eq!(back.schema().field(0).name(), "c");
        assert_eq!(back.columns(), &[col(100)]);
        let bad = ChoiceArgs {
            exclude: vec!["z".into()],
            ..Default::default()
        };
        let reader = RecordBatchIterator::new([Ok(b.clone())], b.schema());
        let e = write_chosen(reader, &o, &bad).unwrap_err();
        assert!(
            e.msg.contains("--exclude z: the query has no column `z`"),
            "{}",
            e.msg
        );
    }
}
