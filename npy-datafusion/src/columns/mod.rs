//! Column tables (`layout=columns`): an `.npz` archive whose `.npy` members are the columns
//! (what `np.savez(path, **columns)` writes), or a directory of `.npy` files, one per column
//! (Kuzu's `COPY FROM NPY` layout). A column is named by its member's key or its file's
//! stem; a 1-D array is a column of its type, an N-d one a fixed-size-list column, a record
//! array a struct column. Every column has the same number of rows (the first axis).
//!
//! | file | what |
//! |---|---|
//! | `survey` | where the columns are, each header checked (limits, extent), one length |
//! | `data` | one column's bytes in a scan: mapped (viewed in place when aligned) or inflated; CRC |
//! | `verified` | the stored members whose CRC-32 this process checked, by archive version |
//! | `raw` | filters on `U<n>` columns evaluated on their UTF-32 bytes, before any value is a string |
//! | `remote` | an archive or a prefix on an object store: headers and column bytes by ranged GETs |
//! | `bounds` | the scan's statistics: the least and greatest values of a sorted column (its runs' too), exact; the statistics recorded with the table, inexact |
//! | `scan` | the scan: a `DataSourceExec` whose file groups are runs of rows, and [`ColumnSource`](scan::ColumnSource) |
//! | `table` | [`ColumnTable`], the `TableProvider` |

mod bounds;
mod data;
mod remote;
mod scan;
mod survey;
mod table;
mod verified;

#[cfg(feature = "ballista")]
pub(crate) use scan::ColumnSource;
pub(crate) use table::ColumnTable;
