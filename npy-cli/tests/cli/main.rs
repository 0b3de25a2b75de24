//! End-to-end tests of the `npy` command-line tool on the NumPy fixtures (`tests/fixtures`,
//! described by `tests/fixtures/manifest.json`), one test binary: `cargo test -p npy-cli`.
//!
//! They run the real binary (`CARGO_BIN_EXE_npy`, built by cargo for this test) through
//! [`harness`]. With `NPY_PYTHON` set to a Python that has NumPy, converted files are also loaded
//! by NumPy and compared with the originals. The Arrow / Parquet tests need the `parquet`
//! feature, the SQL tests `datafusion` and `parquet`:
//! `cargo test -p npy-cli --features parquet,datafusion`; the `s3://` and `http://` tests
//! `remote` (and live servers, see `npy_serde_tests::s3`).

mod harness;

#[cfg(feature = "parquet")]
mod arrow;
mod convert;
mod errors;
#[cfg(feature = "parquet")]
mod foreign;
mod hostile;
mod manifest;
mod object;
mod objects;
#[cfg(feature = "remote")]
mod remote;
#[cfg(all(feature = "datafusion", feature = "parquet", unix))]
mod shell;
#[cfg(all(feature = "datafusion", feature = "parquet"))]
mod sorted_by;
#[cfg(all(feature = "datafusion", feature = "parquet"))]
mod sql;
#[cfg(all(feature = "datafusion", feature = "parquet"))]
mod sql_copy;
#[cfg(all(feature = "datafusion", feature = "parquet"))]
mod sql_memory;
mod text_csv;
#[cfg(all(feature = "datafusion", feature = "parquet"))]
mod tpch_sql;
