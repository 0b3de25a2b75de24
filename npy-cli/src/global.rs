//! The options every command shares (`npy --max-header-size N --max-empty-items N
//! --pickle-encoding ENC --timeout SECS --retries N COMMAND`).

use std::time::Duration;

use npy_serde::Limits;

/// Options shared by every command.
#[derive(Clone, Debug)]
pub struct Global {
    /// `--max-header-size`.
    pub max_header_size: u64,
    /// `--max-empty-items`.
    pub max_empty_items: u64,
    /// `--timeout`: one object-store request's limit (read with feature `remote`).
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub timeout: Duration,
    /// `--pickle-encoding`: how Python 2 `str` values of object arrays are read.
    pub pickle_encoding: npy_serde::pickle::Encoding,
    /// `--retries`: how often a failed object-store request is retried.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    pub retries: usize,
}

impl Global {
    /// The header limits for `--max-header-size`.
    pub fn limits(&self) -> Limits {
        Limits {
            max_header_size: self.max_header_size,
            ..Limits::default()
        }
    }

    /// The object-store options for `--timeout` and `--retries` (connecting: at most 5 s).
    #[cfg(feature = "remote")]
    pub fn remote_options(&self) -> npy_remote::RemoteOptions {
        npy_remote::RemoteOptions::default()
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(Duration::from_secs(5)))
            .retries(self.retries)
    }

    /// The library's reader options for these limits (the Arrow readers': `convert` to a
    /// table, `sql`; and object arrays converted to JSON or CSV).
    pub fn reader_options(&self) -> npy_serde::ReaderBuilder {
        let pickle = npy_serde::pickle::PickleOptions::default().encoding(self.pickle_encoding);
        npy_serde::ReaderBuilder::new()
            .with_limits(self.limits())
            .max_empty_items(self.max_empty_items)
            .pickle_options(pickle)
    }
}
