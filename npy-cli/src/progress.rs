//! The progress bar of long jobs on a terminal (stderr), over bytes.

use std::io::{self, IsTerminal};

/// Data at least this large gets a progress bar (when stderr is a terminal).
pub const PROGRESS_MIN_BYTES: u64 = 64 << 20;

/// A progress bar over `total` bytes, if that is a long job and stderr is a terminal.
pub fn progress_bar(total: u64) -> Option<indicatif::ProgressBar> {
    if total < PROGRESS_MIN_BYTES || !io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style);
    }
    Some(pb)
}
