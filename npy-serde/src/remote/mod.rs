//! `.npy` and `.npz` files on object stores (S3-compatible, HTTP(S)), feature `remote`.
//!
//! | file | what |
//! |---|---|
//! | `store.rs` | [`RemoteOptions`] (timeouts, retries), [`store_for_url`] and [`is_url`]: an `ObjectStore` and a path for `s3://bucket/key` or `http(s)://host/path` |
//! | `file.rs` | [`RemoteFile`]: a blocking `Read + Seek` over ranged GETs of one object, for the tool and the blocking doors |

mod file;
mod store;

pub use file::RemoteFile;
pub use store::*;
