//! The read doors: every way to read a whole array into a `Vec<T>`, checked by one suite.
//!
//! The doors are the rows of the tables in [`doors`]: the serde doors (`from_slice_serde`,
//! `from_reader_serde`, `from_path_serde`, `MmapArray::to_vec_serde`, the streaming
//! `records_serde` of a reader and of a map, collected; each as a `ReaderBuilder` method and,
//! where one exists, as a free function) for any `Deserialize` type, and the record doors
//! (`from_slice`, `from_reader`, `from_path`, `MmapArray::to_vec`, `records`, ...) for a type that
//! derives `NpyRecord`. Adding a door is one row: every check below then runs it.
//!
//! The contract checked:
//!
//! * every door gives every element of the array, flattened in logical C order, with the values
//!   and errors of `deserialize_slice::<Vec<T>>` (for 1-D arrays; flattened for N-d), wherever a
//!   miss of the fast tiers happens (first element, middle of a run, a block boundary of a
//!   reader) and whatever the shape and byte order;
//! * a record door's outcome is exactly its serde twin's (values, or error kind, message and
//!   position), only faster: when the file's element layout is `T::LAYOUT` (or byte-swapped
//!   throughout) and serde's field list is the file's names in order, elements go through the
//!   exact tier (`npy-serde/src/read/exact.rs`), whose count `npy_serde::tier::take` (feature
//!   `tier-hook`) gives, to check that it engages where it should (and where a miss happens).
//!
//! The inputs are written by `npy_serde::to_vec`, built from a `Header` and raw bytes, or written
//! by NumPy (the fixtures).

mod borrow;
mod data;
mod doors;
mod exact_w2;
mod fixtures;
mod limits;
mod names;
mod scalars;
mod serde_misses;
mod serde_types;
mod shapes;
mod streams;
mod types;

/// Far more than any array of these tests needs (the largest are a few MiB).
pub const GIANT: usize = 1 << 30;
