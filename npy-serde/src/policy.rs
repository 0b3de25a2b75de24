//! The choices a caller makes for values NumPy has no direct dtype for, when columnar data
//! (Arrow, Parquet, SQL results) is written as a `.npy` file: what a null becomes
//! ([`NullPolicy`]) and how a decimal is written ([`DecimalPolicy`]). The Arrow bridge
//! (npy-arrow's `BatchWriterBuilder::nulls` / `decimals`) applies them; the `npy` tool parses
//! them from `--nulls` and `--decimals` in every build.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// What a null becomes when an Arrow column is written to NumPy (per run with npy-arrow's
/// `BatchWriterBuilder::nulls`, per column with `nulls_for`). NaT stays the null of datetime
/// columns under every policy.
///
/// ```
/// use npy_serde::policy::NullPolicy;
/// assert_eq!("fill=-1".parse::<NullPolicy>()?, NullPolicy::Fill("-1".into()));
/// assert_eq!("mask".parse::<NullPolicy>()?, NullPolicy::Mask);
/// assert_eq!(NullPolicy::Nan.to_string(), "nan");
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub enum NullPolicy {
    /// A null is an error naming the column, the row and the other policies.
    #[default]
    Error,
    /// Floats get NaN; an integer column with nulls (in the first batch) becomes `<f8`, refused
    /// when one of its values is not exact in `<f8`; bool, string and bytes columns with nulls
    /// are refused (naming `mask` and `fill`).
    Nan,
    /// The caller's value, parsed per column type (`true`/`false` for bools, the text itself
    /// for strings and bytes); a column where that value also occurs as data is refused, so a
    /// null and a value never collide.
    Fill(String),
    /// A `bool` field `NAME_valid` beside each nullable field (titled `arrow:NAME_valid:mask`),
    /// so `np.ma.masked_array(a['x'], ~a['x_valid'])` rebuilds the column; the reader folds it
    /// back into the column's nulls. A null's own slot holds zero (NaN for floats).
    Mask,
}

impl FromStr for NullPolicy {
    type Err = Error;

    /// `error`, `nan`, `fill=VALUE` or `mask`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "error" => Ok(NullPolicy::Error),
            "nan" => Ok(NullPolicy::Nan),
            "mask" => Ok(NullPolicy::Mask),
            _ => match s.strip_prefix("fill=") {
                Some(v) => Ok(NullPolicy::Fill(v.to_string())),
                None => Err(Error::invalid_value(format!(
                    "unknown null policy {s:?} (expected error, nan, fill=VALUE or mask)"
                ))),
            },
        }
    }
}

impl fmt::Display for NullPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NullPolicy::Error => f.write_str("error"),
            NullPolicy::Nan => f.write_str("nan"),
            NullPolicy::Fill(v) => write!(f, "fill={v}"),
            NullPolicy::Mask => f.write_str("mask"),
        }
    }
}

/// How a decimal column (`Decimal32/64/128/256(p, s)`) is written.
///
/// ```
/// use npy_serde::policy::DecimalPolicy;
/// assert_eq!("scaled".parse::<DecimalPolicy>()?, DecimalPolicy::Scaled);
/// assert!("float".parse::<DecimalPolicy>().is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DecimalPolicy {
    /// `<f8` when `p <= 15` (or `p + |s| <= 15` for a negative scale): the nearest double,
    /// from which `round(x * 10^s)` gives the decimal back, so the type is restored on reading;
    /// a wider decimal is refused, naming `f8` and `scaled`.
    #[default]
    Auto,
    /// Always `<f8`, the nearest double (lossy when `p > 15`: two decimals may meet in one
    /// double, and the decimal read back may differ from the one written).
    F8,
    /// `<i8` holding the unscaled value (exact); a value that does not fit is an error naming
    /// the column and row.
    Scaled,
}

impl FromStr for DecimalPolicy {
    type Err = Error;

    /// `auto`, `f8` or `scaled`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(DecimalPolicy::Auto),
            "f8" => Ok(DecimalPolicy::F8),
            "scaled" => Ok(DecimalPolicy::Scaled),
            _ => Err(Error::invalid_value(format!(
                "unknown decimal policy {s:?} (expected auto, f8 or scaled)"
            ))),
        }
    }
}

impl fmt::Display for DecimalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DecimalPolicy::Auto => "auto",
            DecimalPolicy::F8 => "f8",
            DecimalPolicy::Scaled => "scaled",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print_back() {
        for s in ["error", "nan", "mask", "fill=0", "fill=", "fill=a=b"] {
            assert_eq!(s.parse::<NullPolicy>().unwrap().to_string(), s);
        }
        for s in ["auto", "f8", "scaled"] {
            assert_eq!(s.parse::<DecimalPolicy>().unwrap().to_string(), s);
        }
        let e = "zero".parse::<NullPolicy>().unwrap_err().to_string();
        assert!(e.contains("fill=VALUE"), "{e}");
    }
}
