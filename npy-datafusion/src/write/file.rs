//! One output file of a [`NpySink`](super::sink::NpySink): its batches written, on a blocking
//! thread, by npy-arrow's writers (the ones `npy convert` writes with, so that the bytes are
//! the same) into a file staged under a temporary name ([`StagedFile`]); the rename (or, on an
//! object store, the upload) is left to [`Written::commit`], which the sink does only once
//! every file of the statement is written and its query has succeeded.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use datafusion::error::{DataFusionError, Result as DfResult};
use npy_serde::npz::NpzWriter;
use npy_serde::staged::{PendingRename, StagedFile};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use tokio::sync::mpsc::Receiver;

use super::options::NpyWriteOptions;

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
}

impl Written {
    /// Puts the file in place: renamed over its local target, or uploaded (and the temporary
    /// file removed). An upload that fails is aborted: no object is left.
    pub(crate) async fn commit(self, store: &Arc<dyn ObjectStore>) -> DfResult<()> {
        let name = self.target.name();
        match (&self.target, self.pending) {
            (Target::Local(_), Some(p)) => p
                .commit()
                .map_err(|e| write_err(npy_serde::Error::from(e), &name)),
            (Target::Local(_), None) => Ok(()),
            (Target::Store(location), pending) => {
                let temp = self.temp.as_deref().ok_or_else(|| {
                    DataFusionError::Internal(format!("{name}: an upload without its file"))
                })?;
                let done = upload(store, location, temp).await;
                drop(pending);
                done.map_err(|e| DataFusionError::from(e).context(format!("uploading {name}")))
            }
        }
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
    options: &NpyWriteOptions,
    (schema, partitions): (&SchemaRef, &[String]),
    target: Target,
    mut rx: Receiver<RecordBatch>,
) -> DfResult<Written> {
    let name = target.name();
    let werr = |e: npy_serde::Error| write_err(e, &name);
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
    let mut rows = 0u64;
    let mut held = held.into_iter();
    let mut next = || {
        let b = if measured {
            held.next()
        } else {
            rx.blocking_recv()
        };
        if let Some(b) = &b {
            rows += b.num_rows() as u64;
        }
        b
    };
    match kind {
        Kind::Npy => {
            let mut w = wb.file_writer(file, schema).map_err(werr)?;
            while let Some(b) = next() {
                w.write(&b).map_err(werr)?;
            }
            w.finish().map_err(werr)?;
        }
        Kind::Member(key) => {
            let mut npz = NpzWriter::new(BufWriter::with_capacity(1 << 20, file));
            let batches = std::iter::from_fn(&mut next).map(Ok);
            let reader = RecordBatchIterator::new(batches, schema.clone());
            npy_arrow::write_npz_member(&mut npz, key, reader, &wb).map_err(werr)?;
            let out = npz.finish().map_err(werr)?;
            out.into_inner().map_err(|e| ioerr(e.into_error()))?;
        }
        Kind::Columns => {
            let mut w = wb.column_table(&columns_path, schema).map_err(werr)?;
            while let Some(b) = next() {
                w.write(&b).map_err(werr)?;
            }
            let out = BufWriter::with_capacity(1 << 20, file);
            let (out, _) = w.finish_into(out).map_err(werr)?;
            out.into_inner().map_err(|e| ioerr(e.into_error()))?;
        }
    }
    Ok(Written {
        target,
        pending,
        temp,
        rows,
    })
}
