//! The progress bar of a table conversion, counting rows.

use crate::progress::progress_bar;

/// The progress bar of a table conversion, counting rows (each shown as `row_bytes`).
pub struct Progress {
    pb: Option<indicatif::ProgressBar>,
    /// Bytes per row shown, when counting rows.
    per_row: u64,
}

impl Progress {
    /// A bar over `rows` rows of `row_bytes` bytes each (if that is a long job on a terminal).
    pub fn rows(rows: u64, row_bytes: u64) -> Progress {
        let per_row = row_bytes.max(1);
        Progress {
            pb: progress_bar(rows.saturating_mul(per_row)),
            per_row,
        }
    }

    /// No bar.
    pub fn none() -> Progress {
        Progress {
            pb: None,
            per_row: 1,
        }
    }

    /// `rows` more rows done.
    pub fn add(&self, rows: usize) {
        if let Some(pb) = &self.pb {
            pb.inc(rows as u64 * self.per_row);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = self.pb.take() {
            pb.finish_and_clear();
        }
    }
}
