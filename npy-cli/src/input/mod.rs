//! Opening inputs: `.npy` files, `.npz` archives and `ARCHIVE:KEY` members, local or behind
//! `s3://` / `http(s)://` URLs (`source`); reading headers
//! together with their raw bytes; handing out elements in logical C order or storage order,
//! streaming (constant memory) whenever the layout allows.

pub mod archive;
pub mod elements;
pub mod file;
pub mod header;
pub mod layout;
pub mod objects;
pub mod source;
pub mod spec;
