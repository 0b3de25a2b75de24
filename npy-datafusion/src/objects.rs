//! Object arrays as tables (the table option `allow_pickle_data`, off by default): a `.npy`
//! file whose dtype holds Python objects (`'|O'`, a record with an `O` field, NumPy 2's
//! `StringDType`) is fetched whole and read by the data-only pickle reader (nothing imported or
//! run) into the columns [`npy_arrow`] makes of it (`Utf8`/`Binary` when every element is a
//! `str`/`bytes`, `None` a null; any other element an error naming the file, the element and
//! its type).
//!
//! The header is fetched first as for any file, once: its kind ([`Contents`](npy_serde::header::Contents))
//! decides, and a plain file goes on with it to the opener of its access path, so a table of
//! plain files reads as before with the option set. An object file
//! is fetched whole at registration (its schema depends on its values), and again by the
//! partition that owns its first byte; its statistics are unknown. A table of `.npz` members
//! (`member=KEY`) fetches each archive whole and reads the member out of it (CRC-checked).
//! Without the option, the refusal names it.

use std::sync::Arc;

use arrow_schema::Schema;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::error::Result as DfResult;
use futures::stream::{self, StreamExt};
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::archive::table_contents;
use super::error::{df_err, df_err_in};
use super::header::typed;
use super::member::MemberOpener;
use super::opener::ScanFiles;
use super::options::NpyReadOptions;
use super::rows::RowFileOpener;
use super::schema::check_same;
use npy_arrow::{BatchReaderBuilder, NpyBatchReader};
use npy_serde::error::{Error, ErrorKind};

/// The batch reader of the object array in `object`, fetched whole (within the data limit).
async fn read_whole(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    builder: BatchReaderBuilder,
    options: &NpyReadOptions,
) -> DfResult<NpyBatchReader<'static>> {
    let header = options.reader.limits().max_header_size;
    if let Some(max) = options.reader.max_data_size
        && object.size > max.saturating_add(header).saturating_add(12)
    {
        let e = Error::new(ErrorKind::LimitExceeded {
            what: "the object array's file size",
            limit: max,
            found: object.size,
        });
        return Err(df_err(e, object));
    }
    let bytes = store.get(&object.location).await?.bytes().await?;
    let member = options.member();
    let builder = builder.allow_pickle_data(true);
    let reader = match member {
        None => builder.objects_from(&bytes),
        // The member's bytes out of the archive (CRC-checked, within the member limit).
        Some(key) => options
            .npz_options()
            .from_bytes(&bytes)
            .and_then(|mut npz| npz.read_raw(key))
            .and_then(|npy| builder.objects_from(&npy)),
    };
    reader
        .map_err(|e| df_err_in(e, object, member))?
        .ok_or_else(|| {
            let e = Error::invalid_value("the file changed: its header names no object dtype now");
            df_err_in(e, object, member)
        })
}

/// The table schema of the object array in `object` (its member), read whole: it depends on
/// the values.
pub(crate) async fn object_schema(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<Schema> {
    let builder = BatchReaderBuilder::new().reader_options(options.reader.clone());
    let reader = read_whole(store, object, builder, options).await?;
    Ok(table_schema(reader.schema_ref()))
}

/// The schema without the shape (files of a table differ in their rows).
fn table_schema(schema: &Schema) -> Schema {
    let mut meta = schema.metadata().clone();
    meta.retain(|k, _| k == npy_arrow::DESCR_KEY);
    Schema::new_with_metadata(schema.fields().clone(), meta)
}

/// The opener of a table that allows object arrays: an object file (member) is read whole by
/// the partition that owns its first byte, any other by [`RowFileOpener`] ([`MemberOpener`]).
pub(crate) struct ObjectFileOpener(pub(crate) Arc<ScanFiles>);

impl FileOpener for ObjectFileOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let scan = self.0.clone();
        Ok(Box::pin(async move {
            let object = file.object_meta.clone();
            // The header, fetched once: a typed file goes on to the opener of its access
            // path with it.
            let (contents, size) = table_contents(&scan.store, &object, &scan.options).await?;
            if !contents.is_object() {
                return match scan.options.member() {
                    None => {
                        let header = typed(contents, &object, None)?;
                        RowFileOpener(scan)
                            .open_known(file, Some((header, size)))?
                            .await
                    }
                    Some(key) => {
                        let key = key.to_string();
                        MemberOpener { scan, key }.open(file)?.await
                    }
                };
            }
            let owns_start = file
                .range
                .as_ref()
                .is_none_or(|r| r.start <= 0 && 0 < r.end);
            let scan2 = scan.clone();
            scan.opened(async move {
                if !owns_start {
                    return Ok(stream::empty().boxed());
                }
                let builder = scan2.batch_builder();
                let reader = read_whole(&scan2.store, &object, builder, &scan2.options).await?;
                // The projected columns, checked against the table's.
                let schema = table_schema(reader.schema_ref());
                check_same(&scan2.projected, "the table's schema", &schema, &object)?;
                Ok(scan2.forward(reader, object))
            })
            .await
        }))
    }
}
