//! Writing from SQL: the sink of `COPY ... TO` and `INSERT INTO` ([`NpySink`]), its options
//! ([`NpyWriteOptions`]), each file's writer (`file`) and `write_npy` on a DataFrame
//! ([`NpyDataFrameExt`]). See the crate's
//! [Writing](crate#writing-copy-to-and-insert-into) section.

pub(crate) mod file;
mod frame;
pub(crate) mod options;
mod sink;

pub use frame::NpyDataFrameExt;
pub use options::NpyWriteOptions;
pub use sink::NpySink;

#[cfg(test)]
mod tests;
