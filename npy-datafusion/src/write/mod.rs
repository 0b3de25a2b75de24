//! Writing from SQL: the sink of `COPY ... TO` and `INSERT INTO` ([`NpySink`]), its options
//! ([`NpyWriteOptions`]) and each file's writer (`file`); `write_npy` on a DataFrame is in
//! `crate::frame`, above the format. See the crate's
//! [Writing](crate#writing-copy-to-and-insert-into) section.

pub(crate) mod file;
pub(crate) mod options;
pub(crate) mod order;
mod sink;

pub use options::NpyWriteOptions;
pub(crate) use sink::partition_names;
pub use sink::NpySink;

#[cfg(test)]
mod tests;
