//! The cross-crate tests of npy-serde: one test binary (each file of this directory was a binary
//! of its own, and each linked the whole dependency graph: with every feature on, DataFusion and
//! Ballista thirty times over). One module per concern; `tests/README.md` says what goes where.
//!
//! Run one module: `cargo test -p npy-serde-tests --test it -- npz_hostile::` (a test's name is
//! its module path: `read_doors::limits::...`, `sql::...`; a filter matches any part of it).
//!
//! State shared by the process, and how the tests share it:
//!
//! * the global allocator ([`alloc`]) counts per thread, and every test runs on its own thread;
//! * the tier counts of `npy_serde::tier::take` (feature `tier-hook`) are per thread as well;
//! * no test sets an environment variable, the current directory or a global thread pool
//!   (`NPY_PYTHON` is only read); a test that must should take a lock of its own here.
//!
//! `npz_zip64.rs` (beside this directory) stays a binary of its own: CI runs its two `#[ignore]`d
//! 4.3 GB tests alone in release, which would otherwise compile every module here in release.

mod alloc;

#[cfg(feature = "arrow")]
mod arrow;
#[cfg(feature = "ballista")]
mod ballista;
#[cfg(feature = "ballista")]
mod ballista_columns;
mod datetime;
#[cfg(target_endian = "little")]
mod derive_dtype;
#[cfg(target_endian = "little")]
mod derive_read;
#[cfg(target_endian = "little")]
mod derive_write;
mod field_dtype;
mod fuzz_regressions;
mod header_fixtures;
mod header_numpy;
mod header_props;
mod hostile;
mod module_graph;
mod ndarray;
mod npz_append;
mod npz_fixtures;
mod npz_hostile;
#[cfg(target_endian = "little")]
mod npz_mmap;
#[cfg(target_endian = "little")]
mod npz_numpy;
mod npz_parallel;
mod npz_roundtrip;
#[cfg(feature = "arrow")]
mod objects;
mod parallel;
mod pickle;
mod read_doors;
mod read_fixtures;
#[cfg(feature = "remote")]
mod remote;
mod roundtrip_props;
mod sparse;
#[cfg(feature = "datafusion")]
mod sql;
#[cfg(feature = "datafusion")]
mod sql_column_stats;
#[cfg(feature = "datafusion")]
mod sql_formats;
#[cfg(feature = "datafusion")]
mod sql_int_filters;
#[cfg(feature = "datafusion")]
mod sql_layouts;
#[cfg(feature = "datafusion")]
mod sql_order;
#[cfg(feature = "datafusion")]
mod sql_recorded;
#[cfg(feature = "datafusion")]
mod sql_stats_record;
#[cfg(feature = "datafusion")]
mod sql_string_filters;
#[cfg(feature = "datafusion")]
mod sql_write;
#[cfg(feature = "datafusion")]
mod sql_write_order;
mod streaming;
mod tiers;
mod views;
mod write_numpy;
