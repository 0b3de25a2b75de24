//! The bounds of one pickle's expansion: nesting depth, the number of values and the bytes of
//! strings once shared references are expanded (a list referenced a million times counts a
//! million times), so a memo-sharing bomb is refused before it is built.

use crate::error::{Error, Result};

/// The budget of one expansion.
pub(crate) struct Budget {
    values_left: u64,
    bytes_left: u64,
    max_values: u64,
    max_bytes: u64,
}

impl Budget {
    pub(crate) fn new(max_values: u64, max_bytes: u64) -> Self {
        Budget {
            values_left: max_values,
            bytes_left: max_bytes,
            max_values,
            max_bytes,
        }
    }

    /// Takes `n` values from the budget.
    pub(crate) fn values(&mut self, n: u64) -> Result<()> {
        self.values_left = self.values_left.checked_sub(n).ok_or_else(|| {
            Error::limit(
                "the number of values in the pickle (shared references counted each time)",
                self.max_values,
                self.max_values.saturating_add(n),
            )
        })?;
        Ok(())
    }

    /// Takes `n` bytes of strings, bytes or array data from the budget.
    pub(crate) fn bytes(&mut self, n: u64) -> Result<()> {
        self.bytes_left = self.bytes_left.checked_sub(n).ok_or_else(|| {
            Error::limit(
                "the bytes of strings and data in the pickle (shared references counted each time)",
                self.max_bytes,
                self.max_bytes.saturating_add(n),
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_runs_out() {
        let mut b = Budget::new(2, 10);
        b.values(2).unwrap();
        assert_eq!(b.values(1).unwrap_err().kind().code(), "limit_exceeded");
        b.bytes(10).unwrap();
        assert!(b.bytes(1).is_err());
    }
}
