//! Orders recorded with tables: a table that declares no order (no `sort_order`, no `WITH
//! ORDER`) gets the order `npy convert --sorted-by` (or
//! [`ColumnTableWriter::sorted_by`](npy_arrow::ColumnTableWriter::sorted_by)) verified and
//! recorded with its files, while the record holds (see npy-arrow's
//! [`order`](npy_arrow::order) module for where a record is and what it says).
//!
//! - Column tables (`column_order`): the archive's comment or the directory's `_npy_order`, read
//!   by each survey (at registration and as each query is planned), so a record that stops
//!   holding is dropped from the next query's plan.
//! - Row tables (`listed_order`): every file's record (`FILE.npy.order`; for an archive of rows
//!   read through the option `member`, the archive's comment naming that member), read when the
//!   table is registered. Every file must record the same order, and each record must hold for
//!   its file (its rows); else the table has no order. DataFusion keeps a listing table's order
//!   from then on, so a file rewritten after registration is not seen (as for its schema).
//!
//! A declared order wins: records are read only when there is none. A record holds while its
//! number of rows (and member) are the table's; of its order, the columns up to the first one
//! the table lacks are used (rows sorted by `a, b` are sorted by `a`).

use std::sync::Arc;

use arrow_schema::Schema;
use datafusion::catalog::Session;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::SortExpr;
use futures::TryStreamExt;
use npy_arrow::order::{RecordedOrder, SortColumn, TableRecord};
use npy_serde::header::Contents;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use super::archive::table_contents;
use super::options::{NpyReadOptions, SortExprs};

/// Whether the plans of a session with `config` may rely on a table's order, declared or
/// recorded: not in a Ballista session whose adaptive planner is on (Ballista's default),
/// which loses an order across its shuffles (feature `ballista`; see `ballista/order.rs`);
/// always in any other session.
pub(crate) fn orders_usable(config: &datafusion::prelude::SessionConfig) -> bool {
    #[cfg(feature = "ballista")]
    return config
        .options()
        .extensions
        .get::<ballista_core::config::BallistaConfig>()
        .is_none_or(|ballista| !ballista.adaptive_query_planner_enabled());
    #[cfg(not(feature = "ballista"))]
    {
        let _ = config;
        true
    }
}

/// The longest a record file can be.
const MAX_RECORD: u64 = 1 << 16;

/// The columns of `record`'s order up to the first one `schema` lacks (none: `None`).
pub(crate) fn usable(record: &RecordedOrder, schema: &Schema) -> Option<Vec<SortColumn>> {
    let order: Vec<SortColumn> = (record.order().iter())
        .take_while(|c| schema.index_of(c.name()).is_ok())
        .cloned()
        .collect();
    (!order.is_empty()).then_some(order)
}

/// The options a column table's scan uses: `options` if they declare an order, else with the
/// order of `record` (its survey's) if it holds for the table's `rows` rows and `schema`.
pub(crate) fn column_order(
    options: &NpyReadOptions,
    record: Option<&RecordedOrder>,
    rows: u64,
    schema: &Schema,
) -> NpyReadOptions {
    let recorded = record
        .filter(|r| options.sort_order().is_empty() && r.holds_for(rows, None))
        .and_then(|r| usable(r, schema));
    match recorded {
        Some(order) => options.clone().sorted_by(order),
        None => options.clone(),
    }
}

/// The order recorded with every file of the row table at `urls` (whose files have the
/// extension `extension`, the schema `schema`), as a listing table's file sort order: empty
/// unless each file has a record that holds, all of one order.
pub(crate) async fn listed_order(
    state: &dyn Session,
    urls: &[ListingTableUrl],
    options: &NpyReadOptions,
    extension: &str,
    schema: &Schema,
) -> DfResult<Vec<Vec<SortExpr>>> {
    let mut found: Option<Vec<SortColumn>> = None;
    for url in urls {
        let store = state.runtime_env().object_store(url)?;
        let ext = if url.is_collection() { extension } else { "" };
        let files: Vec<ObjectMeta> = url
            .list_all_files(state, store.as_ref(), ext)
            .await?
            .try_collect()
            .await?;
        for file in &files {
            let Some(order) = file_order(&store, file, options, schema).await else {
                return Ok(Vec::new());
            };
            match &found {
                Some(o) if *o != order => return Ok(Vec::new()),
                Some(_) => {}
                None => found = Some(order),
            }
        }
    }
    Ok(found
        .map(|o| vec![o.iter().map(SortExprs::sort_expr).collect()])
        .unwrap_or_default())
}

/// The order recorded with the row file `file`, if it has a record that holds for it.
async fn file_order(
    store: &Arc<dyn ObjectStore>,
    file: &ObjectMeta,
    options: &NpyReadOptions,
    schema: &Schema,
) -> Option<Vec<SortColumn>> {
    let record = match options.member() {
        Some(_) => archive_record(store, file).await?,
        None => sidecar_record(store, &file.location).await?,
    };
    // A file that cannot be read has no order: the table's own reading names the failure.
    let (contents, _) = table_contents(store, file, options).await.ok()?;
    let rows = match &contents {
        Contents::Typed(h) => npy_arrow::rows_of(&h.header).ok()?,
        Contents::Objects(h) => h.shape.first().copied().unwrap_or(1),
        _ => return None,
    };
    if !record.holds_for(rows, options.member()) {
        return None;
    }
    usable(&record, schema)
}

/// The record of the `.npy` object at `path` (`PATH.order`), if there is one that parses.
pub(crate) async fn sidecar_record(
    store: &Arc<dyn ObjectStore>,
    path: &Path,
) -> Option<RecordedOrder> {
    sidecar_records(store, path).await.order
}

/// The records of the `.npy` object at `path` (`PATH.order`: its order and its columns'
/// statistics): none if there is no such file or it cannot be read.
pub(crate) async fn sidecar_records(store: &Arc<dyn ObjectStore>, path: &Path) -> TableRecord {
    let sidecar = Path::from(format!("{path}.order"));
    table_record_object(store, &sidecar).await
}

/// The records in the object `path` (a record file): none if it cannot be read or is longer
/// than a record can be.
pub(crate) async fn table_record_object(store: &Arc<dyn ObjectStore>, path: &Path) -> TableRecord {
    let Ok(got) = store.get(path).await else {
        return TableRecord::default();
    };
    if got.meta.size > MAX_RECORD {
        return TableRecord::default();
    }
    match got.bytes().await {
        Ok(bytes) => TableRecord::parse(&bytes),
        Err(_) => TableRecord::default(),
    }
}

/// The record in the comment of the archive `file`, if it has one that parses (one ranged GET
/// of the archive's last 65557 bytes).
async fn archive_record(store: &Arc<dyn ObjectStore>, file: &ObjectMeta) -> Option<RecordedOrder> {
    let size = file.size;
    let start = size.saturating_sub(22 + 65535);
    let tail = store.get_range(&file.location, start..size).await.ok()?;
    npy_serde::npz::comment_of_tail(&tail).and_then(RecordedOrder::parse)
}

#[cfg(test)]
mod tests {
    use arrow_schema::{DataType, Field};

    use super::*;

    #[test]
    fn a_record_holds_for_its_rows_and_its_columns_up_to_a_missing_one() {
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("c", DataType::Int64, false),
        ]);
        let order = vec![
            SortColumn::asc("a"),
            SortColumn::asc("b"),
            SortColumn::asc("c"),
        ];
        let record = RecordedOrder::new(order, 10);
        let none = NpyReadOptions::new();
        let used = column_order(&none, Some(&record), 10, &schema);
        assert_eq!(used.sort_order(), [vec![SortColumn::asc("a")]]);
        // Stale: another number of rows.
        assert!(column_order(&none, Some(&record), 11, &schema)
            .sort_order()
            .is_empty());
        // A declared order wins.
        let declared = NpyReadOptions::new().sorted_by([SortColumn::desc("c")]);
        let used = column_order(&declared, Some(&record), 10, &schema);
        assert_eq!(used.sort_order(), [vec![SortColumn::desc("c")]]);
        // An archive of rows' record (naming its member) is not a column table's.
        let rows = RecordedOrder::new(vec![SortColumn::asc("a")], 10).with_member("t");
        assert!(column_order(&none, Some(&rows), 10, &schema)
            .sort_order()
            .is_empty());
        let other = RecordedOrder::new(vec![SortColumn::asc("z")], 10);
        assert_eq!(usable(&other, &schema), None);
    }
}
