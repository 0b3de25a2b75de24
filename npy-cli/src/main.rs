//! `npy`: inspect, print, convert and validate NumPy `.npy` / `.npz` files, and query them with
//! SQL (feature `datafusion`).
//!
//! Install with `cargo install --path npy-cli` (`--features parquet,datafusion` adds Parquet and
//! Arrow IPC conversions and `npy sql`). See `npy --help` for the commands and the JSON
//! conventions.
//!
//! The rooms, from the ground up: [`failure`] and [`global`] (what every command shares);
//! [`input`] (opening files, archives and members, headers, elements), [`format`](mod@format) (values as
//! JSON, CSV and text), [`progress`] and [`output`] (output formats, temporary files); [`print`](mod@print)
//! (arrays streamed in a style) and [`table`] (Parquet / Arrow IPC tables, feature `arrow`); one
//! module per command ([`info`], [`cat`], [`convert`], [`check`], [`sql`]), each declaring its
//! arguments and what a feature adds to it; [`cli`] (the command line); and this entry point.

/// With SQL, mimalloc allocates (as in datafusion-cli): it keeps and reuses the large buffers a
/// query allocates and frees per batch (see BENCHMARKS.md, TPC-H SQL).
#[cfg(feature = "datafusion")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cat;
mod check;
// Parsed in every build (the flags exist in every build); used with feature `arrow`.
#[cfg_attr(not(feature = "arrow"), allow(dead_code))]
mod choice;
mod cli;
mod convert;
mod failure;
mod format;
mod global;
mod info;
mod input;
mod output;
mod print;
mod progress;
mod sql;
#[cfg(feature = "arrow")]
mod table;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let global = cli.global();
    let result = match cli.command {
        Command::Info(a) => info::run(&global, a),
        Command::Cat(a) => cat::run(&global, a),
        Command::Convert(a) => convert::run(&global, a),
        Command::Sql(a) => sql::run(&global, a),
        Command::Check(a) => check::run(&global, a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.msg.is_empty() {
                let mut err = io::stderr().lock();
                // Nothing sensible is left to do if stderr itself is gone.
                let _ = writeln!(err, "npy: {}", f.msg);
            }
            ExitCode::from(f.code)
        }
    }
}
