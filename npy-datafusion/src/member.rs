//! The opener of `.npz` members ([`MemberOpener`]): one partition per archive (the member's
//! bytes may be deflated) opens the archive, reads the member's header once, checks it
//! against the table, and streams the member's batches from a blocking task (the rows a
//! pushed filter keeps). Members are read, never mapped: most are deflated, and `np.savez`
//! does not align a stored member's data.

use std::sync::Arc;

use arrow_array::RecordBatch;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::error::Result as DfResult;
use futures::stream::{self, StreamExt};
use object_store::ObjectMeta;
use tokio::sync::mpsc::Sender;

use super::archive::{open_archive, ReadSeek};
use super::error::df_err;
use super::opener::{Batches, ScanFiles, PREFETCH};
use npy_arrow::NpyBatchReader;
use npy_serde::npz::NpzArchive;

/// Opens the member `key` of each archive of a scan.
pub(crate) struct MemberOpener {
    pub(crate) scan: Arc<ScanFiles>,
    pub(crate) key: String,
}

impl FileOpener for MemberOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let scan = self.scan.clone();
        let key = self.key.clone();
        let object = file.object_meta;
        Ok(self.scan.opened(async move {
            let npz = open_archive(&scan.store, &object, &scan.options).await?;
            let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(PREFETCH);
            tokio::task::spawn_blocking(move || send_member(&scan, npz, &key, &object, &tx));
            let batches: Batches =
                stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) })
                    .boxed();
            Ok(batches)
        }))
    }
}

/// Sends the batches of the member `key` of `npz` (the archive `object`) to `tx`, until the
/// last, an error, or the query stops reading (a limit, an error elsewhere).
fn send_member(
    scan: &ScanFiles,
    mut npz: NpzArchive<Box<dyn ReadSeek>>,
    key: &str,
    object: &ObjectMeta,
    tx: &Sender<DfResult<RecordBatch>>,
) {
    let mut reader = match member_reader(scan, &mut npz, key, object) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.blocking_send(Err(e));
            return;
        }
    };
    loop {
        let item = match reader.next_batch().transpose() {
            None => return,
            Some(b) => scan.filtered(b, object),
        };
        let failed = item.is_err();
        if tx.blocking_send(item).is_err() || failed {
            return;
        }
    }
}

/// The member's batch reader, its header read once (the member keeps it) and checked against
/// the table.
fn member_reader<'a>(
    scan: &ScanFiles,
    npz: &'a mut NpzArchive<Box<dyn ReadSeek>>,
    key: &str,
    object: &ObjectMeta,
) -> DfResult<NpyBatchReader<'a>> {
    let mut member = npz.by_key(key).map_err(|e| df_err(e, object))?;
    let size = member.info().size;
    let header = member.header().map_err(|e| df_err(e, object))?;
    scan.check(header, object, size)?;
    scan.batch_builder()
        .from_npz_member(member)
        .map_err(|e| df_err(e, object))
}
