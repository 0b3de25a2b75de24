//! The cluster programs' log (`npy-scheduler`, `npy-executor`): Ballista's and DataFusion's
//! log lines (the `log` crate's records, and the `tracing` events of the gRPC stack) on
//! stderr, filtered by `RUST_LOG` as Ballista's own binaries read it (`RUST_LOG=info`,
//! `RUST_LOG=warn,ballista_executor=debug`); warnings and errors when it is unset.

use tracing_subscriber::EnvFilter;

/// Installs the log with `RUST_LOG`'s filter (or `warn`), plus the `extra` directives (a
/// flag's, such as `ballista_executor=info`). A `RUST_LOG` that does not parse is reported and
/// replaced by `warn`, not ignored in silence.
pub fn init(program: &str, extra: &[&str]) {
    let given = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let mut filter = match given.as_deref().map(EnvFilter::try_new) {
        None => EnvFilter::new("warn"),
        Some(Ok(f)) => f,
        Some(Err(e)) => {
            eprintln!("{program}: RUST_LOG: {e}; logging warnings and errors");
            EnvFilter::new("warn")
        }
    };
    for d in extra {
        match d.parse() {
            Ok(d) => filter = filter.add_directive(d),
            Err(e) => eprintln!("{program}: log directive {d}: {e}"),
        }
    }
    // Fails only if a logger is installed already: that one stays.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}
