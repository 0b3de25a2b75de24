//! `npy sql QUERY FILE...`: SQL over `.npy` files with DataFusion. The query engine ([`query`])
//! and the JSON printer of its results ([`json`]) are what the `datafusion` feature adds.

pub mod args;
#[cfg(feature = "datafusion")]
mod json;
#[cfg(feature = "datafusion")]
mod query;

use crate::failure::CliResult;
use crate::global::Global;
use args::Args;

/// `npy sql`.
pub fn run(g: &Global, a: Args) -> CliResult {
    #[cfg(feature = "datafusion")]
    {
        query::run(g, &a)
    }
    #[cfg(not(feature = "datafusion"))]
    {
        let _ = (g, a);
        Err(crate::failure::Failure::usage(
            "sql: this npy was built without SQL support: install it with \
             `cargo install npy-cli --features datafusion`",
        ))
    }
}
