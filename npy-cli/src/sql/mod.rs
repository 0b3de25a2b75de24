//! `npy sql QUERY FILE...`: SQL over `.npy` files with DataFusion. The query engine ([`query`]),
//! the JSON printer of its results ([`json`]) and the interactive session ([`shell`]) are what
//! the `datafusion` feature adds.

pub mod args;
#[cfg(feature = "datafusion")]
mod json;
#[cfg(feature = "datafusion")]
mod query;
#[cfg(feature = "datafusion")]
mod shell;

use crate::failure::CliResult;
use crate::global::Global;
use args::Args;

/// `npy sql`.
pub fn run(g: &Global, a: Args) -> CliResult {
    #[cfg(feature = "datafusion")]
    {
        let (opened, text) = query::open(g, &a)?;
        let done = match text {
            Some(text) => query::run(&opened, &a, &text),
            None => shell::run(
                &opened.ctx,
                &opened.rt,
                &opened.interrupts,
                query::Format::of(&a),
            ),
        };
        query::finish();
        done
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
