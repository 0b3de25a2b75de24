//! Tables (feature `arrow`): Parquet and Arrow IPC files opened as batch readers ([`read`]), and
//! batches written to `.npy`, `.npz` members, `.parquet` or `.arrow` ([`write`](mod@write)), streamed;
//! what `npy convert` and `npy sql -o` share.
//!
//! Parquet is the `parquet` feature's, here alone: without it, [`parquet`] is
//! `parquet_missing.rs`, whose reader and writer refuse with the command that installs it.

pub mod ends;
pub mod ipc;
#[cfg(feature = "parquet")]
pub mod parquet;
#[cfg(not(feature = "parquet"))]
#[path = "parquet_missing.rs"]
pub mod parquet;
pub mod progress;
pub mod read;
pub mod select;
pub mod widths;
pub mod write;
