//! `.npy` and `.npz` files on object stores (S3-compatible stores, HTTP(S) servers, or any
//! [`object_store::ObjectStore`]), read by byte ranges: only the bytes asked for are fetched
//! (the default feature `clients` adds URLs and the S3 and HTTP clients; without it the doors
//! read any store you build).
//!
//! - [`RemoteNpy::open`]: one ranged GET of the first 64 KiB (its response carries the
//!   object's size), a second only if the header is longer; the header is checked against the
//!   [`ReaderBuilder`](npy_serde::ReaderBuilder)'s limits before anything more is fetched, and its
//!   declared data against the object's size.
//! - [`RemoteNpy::read_rows`] (`T: NpyRecord`, the exact tier) and
//!   [`read_rows_serde`](RemoteNpy::read_rows_serde) (any `Deserialize`): any range of rows,
//!   one GET per chunk ([`FetchOptions::chunk_bytes`], 8 MiB), up to
//!   [`FetchOptions::concurrency`] (4) at once; with feature `arrow`, `RemoteNpy::batches`:
//!   Arrow record batches of the projected columns, one GET per batch.
//! - [`RemoteNpz::open`]: the zip's central directory from a ranged GET of the tail (zip64
//!   too; a directory outside the tail costs one more), members by key; a stored member reads
//!   by row ranges like a `.npy` ([`RemoteNpz::member`]), a deflated one is fetched in chunks, concurrently,
//!   and inflated, its CRC-32 checked ([`RemoteNpz::read`]). Locating and opening a member
//!   takes at most 3 requests.
//! - (feature `clients`) [`store_for_url`]: an `ObjectStore` and a path for `s3://bucket/key` (credentials and
//!   endpoint from the standard AWS environment variables) or `http(s)://host/path`, with the
//!   timeouts and retries of [`RemoteOptions`]; [`RemoteFile`]: a blocking `Read + Seek` over
//!   ranged GETs of one object, which the `npy` tool and the blocking doors read through.
//! - [`upload`]: an object written from a reader, in one PUT or a multipart upload aborted on
//!   any error (no partial object is left); (feature `clients`) [`upload_file`] to a URL.
//! - [`CountingStore`] and [`FaultStore`]: `ObjectStore` wrappers that count requests and
//!   inject faults (short reads, errors, stalls), for tests.
//!
//! Every request is bounded by [`FetchOptions::request_bound`] (its timeout, times the
//! attempts its retries allow): a store that stops answering is an error naming the URL, never
//! a hang. [`RemoteOptions`] holds the [`FetchOptions`]: the timeout and retries the stores of
//! [`store_for_url`] are built with are the ones the doors wait for.
//!
//! Failures of the store and of the object's structure (a header over the limit, sizes that
//! lie, a short read) are [`ErrorKind::Remote`](npy_serde::ErrorKind::Remote) errors naming the
//! URL; an error decoding the data into `T` keeps its kind, with the record index and byte
//! offset in the whole array.
//!
//! The doors are `async` and run on a tokio runtime (the one `object_store`'s HTTP clients
//! need).
//!
//! # How this module is built
//!
//! | file | owns | calls |
//! |---|---|---|
//! | `mod.rs` | these docs, the re-exports | |
//! | `npy.rs` | [`RemoteNpy`]: open, row ranges into `Vec<T>` | `fetch`, `npy_serde::read` |
//! | `batches.rs` | `RemoteNpy::batches` (feature `arrow`) | `npy`, `npy_arrow` |
//! | `npz.rs` | [`RemoteNpz`]: the directory, members by key, deflated members inflated | `zipdir`, `npy`, `fetch`, `zip` |
//! | `zipdir.rs` | the end of central directory (zip64 too) and the directory's entries, parsed from bytes with limits | |
//! | `fetch.rs` | [`FetchOptions`] (chunks, timeout, retries); one object's ranged GETs, timed out and checked for short reads | |
//! | `store.rs` | [`RemoteOptions`] (a `FetchOptions` and a connect timeout), [`store_for_url`] and [`is_url`] | `fetch`, `object_store`'s S3 and HTTP builders |
//! | `file.rs` | [`RemoteFile`]: a blocking `Read + Seek` over ranged GETs | `store` |
//! | `upload.rs` | [`upload`], [`upload_file`]: one PUT or a multipart upload, aborted on error | `store` |
//! | `count.rs`, `fault.rs` | [`CountingStore`], [`FaultStore`] | |

#![deny(missing_docs)]

#[cfg(feature = "arrow")]
mod batches;
mod count;
mod fault;
mod fetch;
#[cfg(feature = "clients")]
mod file;
mod npy;
mod npz;
#[cfg(feature = "clients")]
mod store;
mod upload;
mod zipdir;

pub use count::{CountingStore, Counts};
pub use fault::{Fault, FaultStore};
pub use fetch::{FetchOptions, DEFAULT_CHUNK_BYTES, DEFAULT_CONCURRENCY, DEFAULT_PROBE_BYTES};
#[cfg(feature = "clients")]
pub use file::RemoteFile;
pub use npy::RemoteNpy;
pub use npz::{RemoteNpz, MAX_DIRECTORY_BYTES};
#[cfg(feature = "clients")]
pub use store::*;
#[cfg(feature = "clients")]
pub use upload::upload_file;
pub use upload::{upload, DEFAULT_PART_BYTES};

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
