//! One output file of a [`NpySink`](super::sink::NpySink): its batches written, on a blocking
//! thread, by npy-arrow's writers (the ones `npy convert` writes with, so that the bytes are
//! the same) into a file staged under a temporary name ([`StagedFile`]); the rename (or, on an
//! object store, the upload) is left to [`Written::commit`], which the sink does only once
//! every file of the statement is written and its query has succeeded.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, SchemaRef};
use datafusion::error::{DataFusionError, Result as DfResult};
use npy_arrow::order::{RecordedOrder, DIRECTORY_RECORD};
use npy_serde::npz::NpzWriter;
use npy_serde::staged::{PendingRename, StagedFile};
use npy_serde::AlignedWriter;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::sync::mpsc::Receiver;

use super::options::NpyWriteOptions;
use super::order::FileOrder;

/// What each output file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A `.npy` file: one record array (a plain array for one column read from one).
    Npy,
    /// An `.npz` archive holding the records as its one member `KEY.npy`.
    Member(String),
    /// An `.npz` archive of one plain array per column (stored, aligned members).
    Columns,
}

impl Kind {
    /// `npy`, `npz member KEY` or `npz columns`, for plans and messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Kind::Npy => "npy".into(),
            Kind::Member(key) => format!("npz, member {key}"),
            Kind::Columns => "npz, layout columns".into(),
        }
    }
}

/// Where a file goes.
pub(crate) enum Target {
    /// A local file (DataFusion's `LocalFileSystem`): staged beside it, renamed over it.
    Local(PathBuf),
    /// An object on another store: staged in the temporary directory, then uploaded.
    Store(ObjectPath),
}

impl Target {
    /// The target as messages name it.
    pub(crate) fn name(&self) -> String {
        match self {
            Target::Local(p) => p.display().to_string(),
            Target::Store(p) => p.to_string(),
        }
    }
}

/// A file written under a temporary name, not yet in place.
pub(crate) struct Written {
    target: Target,
    /// The rename over a local target (`None`: a FIFO or device, written in place); for an
    /// upload, the temporary file's removal when dropped.
    pending: Option<PendingRename>,
    /// The temporary file an upload reads.
    temp: Option<PathBuf>,
    /// The rows written.
    pub(crate) rows: u64,
    /// The record of a `.npy` file's order, put beside it (`FILE.npy.order`) once it is in
    /// place; `None` for an archive (its record is in its comment).
    record: Option<RecordedOrder>,
    /// A `.npy` file (whose earlier record beside it goes), not an archive.
    sidecar: bool,
}

impl Written {
    /// Puts the file in place: renamed over its local target, or uploaded (and the temporary
    /// file removed). An upload that fails is aborted: no object is left.
    ///
    /// The records of orders around it: first the earlier record of the file (a `.npy` file's
    /// `FILE.npy.order`) and of its directory (a column table's `_npy_order`) are removed, then
    /// the file is put in place, then its own record (if its rows proved one) is written beside
    /// it. Whatever fails in between leaves no record that does not hold.
    pub(crate) async fn commit(self, store: &Arc<dyn ObjectStore>) -> DfResult<()> {
        let name = self.target.name();
        let record_err = |e: DataFusionError| e.context(format!("the order record of {name}"));
        match (&self.target, self.pending) {
            // A FIFO or a device, written in place: no records beside it.
            (Target::Local(_), None) => Ok(()),
            (Target::Local(path), Some(pending)) => {
                let io = |e: std::io::Error| record_err(DataFusionError::from(e));
                let sidecar = npy_arrow::order::sidecar_of(path);
                if self.sidecar {
                    npy_arrow::order::remove_stale_sidecar(&sidecar).map_err(io)?;
                }
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    npy_arrow::order::remove_stale_sidecar(&dir.join(DIRECTORY_RECORD))
                        .map_err(io)?;
                }
                (pending.commit()).map_err(|e| write_err(npy_serde::Error::from(e), &name))?;
                match &self.record {
                    Some(record) if self.sidecar => {
                        npy_arrow::order::write_sidecar(&sidecar, record).map_err(io)
                    }
                    _ => Ok(()),
                }
            }
            (Target::Store(location), pending) => {
                let temp = self.temp.as_deref().ok_or_else(|| {
                    DataFusionError::Internal(format!("{name}: an upload without its file"))
                })?;
                let sidecar = ObjectPath::from(format!("{location}.order"));
                if self.sidecar {
                    remove_object(store, &sidecar).await.map_err(record_err)?;
                }
                remove_object(store, &directory_record_of(location))
                    .await
                    .map_err(record_err)?;
                let done = upload(store, location, temp).await;
                drop(pending);
                done.map_err(|e| DataFusionError::from(e).context(format!("uploading {name}")))?;
                match &self.record {
                    Some(record) if self.sidecar => {
                        let text = format!("{record}\n");
                        (store
                            .put(&sidecar, PutPayload::from(text.into_bytes()))
                            .await)
                            .map(|_| ())
                            .map_err(|e| record_err(e.into()))
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The object of the `_npy_order` record beside the object `location` (in its "directory").
fn directory_record_of(location: &ObjectPath) -> ObjectPath {
    let mut parts: Vec<_> = location.parts().collect();
    parts.pop();
    parts.push(DIRECTORY_RECORD.into());
    ObjectPath::from_iter(parts)
}

/// Removes the object `path` if there is one.
async fn remove_object(store: &Arc<dyn ObjectStore>, path: &ObjectPath) -> DfResult<()> {
    match store.delete(path).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Files at least this large are uploaded in parts of this size.
const PART: usize = 8 << 20;

/// Uploads the file `temp` as `location`: one request for a small file, a multipart upload
/// (aborted on failure) for a large one.
async fn upload(
    store: &Arc<dyn ObjectStore>,
    location: &ObjectPath,
    temp: &Path,
) -> object_store::Result<()> {
    let io_err = |e: std::io::Error| object_store::Error::Generic {
        store: "local temporary file",
        source: Box::new(e),
    };
    let mut file = File::open(temp).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    if len <= PART as u64 {
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes).map_err(io_err)?;
        store.put(location, PutPayload::from(bytes)).await?;
        return Ok(());
    }
    let mut w = WriteMultipart::new_with_chunk_size(store.put_multipart(location).await?, PART);
    let mut buf = vec![0u8; PART];
    let sent: object_store::Result<()> = async {
        loop {
            let n = file.read(&mut buf).map_err(io_err)?;
            if n == 0 {
                return Ok(());
            }
            w.wait_for_capacity(4).await?;
            w.write(&buf[..n]);
        }
    }
    .await;
    match sent {
        Ok(()) => w.finish().await.map(|_| ()),
        Err(e) => {
            let _ = w.abort().await;
            Err(e)
        }
    }
}

/// This crate's error writing `name`, as a DataFusion error naming the file.
pub(crate) fn write_err(e: npy_serde::Error, name: &str) -> DataFusionError {
    DataFusionError::External(Box::new(e)).context(format!("writing {name}"))
}

/// Writes the batches `rx` receives as one file of `kind` at `target` (on a blocking
/// thread: it encodes and writes synchronously), staged under a temporary name. The files
/// have `schema`; the output's partition columns are `partitions` (for the options' errors).
pub(crate) fn write_file(
    kind: &Kind,
    (options, order): (&NpyWriteOptions, FileOrder),
    (schema, partitions): (&SchemaRef, &[String]),
    target: Target,
    mut rx: Receiver<RecordBatch>,
) -> DfResult<Written> {
    let name = target.name();
    let ioerr = |e: std::io::Error| write_err(e.into(), &name);
    let staged = match &target {
        Target::Local(path) => StagedFile::create(path).map_err(ioerr)?,
        Target::Store(location) => {
            let base = location.filename().unwrap_or("out");
            StagedFile::create(std::env::temp_dir().join(format!("npy-datafusion-{base}")))
                .map_err(ioerr)?
        }
    };
    let temp = staged.temp_path().map(Path::to_path_buf);
    // The column arrays' own temporary files go beside the target (or the staged upload).
    let columns_path = match (&target, &temp) {
        (Target::Local(path), _) => path.clone(),
        (Target::Store(_), Some(t)) => t.with_extension("npz"),
        (Target::Store(_), None) => std::env::temp_dir().join("npy-datafusion.npz"),
    };
    let (file, pending) = staged.into_parts();

    // A string column without a width is as wide as its widest value in the whole file: the
    // batches are held until the last one.
    let measured = options.measures(schema);
    let mut held = Vec::new();
    let mut widths = HashMap::new();
    if measured {
        while let Some(b) = rx.blocking_recv() {
            held.push(b);
        }
        widths = npy_arrow::string_widths(held.iter().cloned().map(Ok))
            .map_err(|e| DataFusionError::ArrowError(Box::new(e), None))?;
    }
    let mut wb = npy_arrow::BatchWriterBuilder::new();
    for (column, width) in &widths {
        wb = wb.string_width(column, *width);
    }
    let wb = options.builder_over(wb, schema, partitions)?;
    let rows = Cell::new(0u64);
    let mut held = held.into_iter();
    // Each batch is checked in the file's orders before it is written: a row out of a
    // declared order ends the file (kept in `unsorted`, the write's failure).
    let order = RefCell::new(order);
    let unsorted: RefCell<Option<DataFusionError>> = RefCell::new(None);
    let mut next = || {
        let b = if measured {
            held.next()
        } else {
            rx.blocking_recv()
        }?;
        if let Err(e) = order.borrow_mut().check(&b) {
            let text = e.to_string();
            unsorted.replace(Some(e));
            return Some(Err(ArrowError::ExternalError(text.into())));
        }
        rows.set(rows.get() + b.num_rows() as u64);
        Some(Ok(b))
    };
    let written = write_batches(kind, &wb, (file, &columns_path), schema, &mut next, &order);
    if let Some(e) = unsorted.take() {
        return Err(e.context(format!("writing {name}")));
    }
    written.map_err(|e| e.context(format!("writing {name}")))?;
    let record = order.borrow().record();
    Ok(Written {
        target,
        pending,
        temp,
        rows: rows.get(),
        record,
        sidecar: *kind == Kind::Npy,
    })
}

/// Writes the batches `next` gives as one file of `kind` into `file` (the column arrays of an
/// archive of columns in temporary files beside `columns_path`), the record of `order` in an
/// archive's comment.
fn write_batches(
    kind: &Kind,
    wb: &npy_arrow::BatchWriterBuilder,
    (file, columns_path): (File, &Path),
    schema: &SchemaRef,
    next: &mut dyn FnMut() -> Option<Result<RecordBatch, ArrowError>>,
    order: &RefCell<FileOrder>,
) -> DfResult<()> {
    let werr = |e: npy_serde::Error| DataFusionError::External(Box::new(e));
    let arrow = |e: ArrowError| DataFusionError::ArrowError(Box::new(e), None);
    match kind {
        Kind::Npy => {
            let mut w = wb.file_writer(file, schema).map_err(werr)?;
            while let Some(b) = next() {
                w.write(&b.map_err(arrow)?).map_err(werr)?;
            }
            w.finish().map_err(werr)?;
        }
        Kind::Member(key) => {
            let mut npz = NpzWriter::new(AlignedWriter::new(file));
            let batches = std::iter::from_fn(next);
            let reader = RecordBatchIterator::new(batches, schema.clone());
            npy_arrow::write_npz_member(&mut npz, key, reader, wb).map_err(werr)?;
            if let Some(record) = order.borrow().record() {
                let comment = record.with_member(key.as_str()).to_string();
                npz.set_comment(comment.as_bytes()).map_err(werr)?;
            }
            let out = npz.finish().map_err(werr)?;
            out.into_inner().map_err(DataFusionError::from)?;
        }
        Kind::Columns => {
            let mut w = wb.column_table(columns_path, schema).map_err(werr)?;
            while let Some(b) = next() {
                w.write(&b.map_err(arrow)?).map_err(werr)?;
            }
            if let Some(record) = order.borrow().record() {
                w.record_order(record);
            }
            let out = AlignedWriter::new(file);
            let (out, _) = w.finish_into(out).map_err(werr)?;
            out.into_inner().map_err(DataFusionError::from)?;
        }
    }
    Ok(())
}
