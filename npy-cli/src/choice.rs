//! The column and null/decimal choices of a table conversion, the flags `npy convert` and
//! `npy sql -o` share, parsed (in every build): `--columns`, `--exclude` (which columns; applied
//! where the input is read, see `table::select`), `--nulls` and `--decimals` (what the `.npy`
//! batch writer does with nulls and decimals, for the run or per column).

use std::fmt;
use std::str::FromStr;

use npy_serde::policy::{DecimalPolicy, NullPolicy};

use crate::failure::{CliResult, Failure};

/// The flags (flattened into `convert`'s and `sql`'s arguments; each requires the argument
/// `output`: `convert`'s OUT, `sql`'s `-o`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ChoiceArgs {
    /// Only these top-level columns, in this order: a comma-separated list (e.g. `--columns
    /// id,price`). For a Parquet input the other columns are never decoded.
    #[arg(
        long,
        value_name = "A,B,..",
        value_delimiter = ',',
        requires = "output"
    )]
    pub columns: Option<Vec<String>>,
    /// Leave out these top-level columns (a comma-separated list; repeatable), e.g. a List or
    /// Map column that has no NumPy dtype. For a Parquet input they are never decoded.
    #[arg(
        long,
        value_name = "A,B,..",
        value_delimiter = ',',
        requires = "output"
    )]
    pub exclude: Vec<String>,
    /// .npy/.npz output: what a null becomes, as POLICY for every column or COLUMN:POLICY for
    /// one (repeatable; a column's own beats the run's). POLICY: `error` (the default: a null
    /// is an error naming column and row), `nan` (NaN in floats; an integer column with nulls
    /// becomes float64 if every value is exact in it), `fill=VALUE` (VALUE instead, parsed as
    /// the column's type; refused if VALUE also occurs as data), `mask` (a bool field
    /// NAME_valid beside each nullable field: np.ma.masked_array(a['x'], ~a['x_valid'])).
    /// Datetime nulls are NaT under every policy.
    #[arg(long, value_name = "[COLUMN:]POLICY", requires = "output")]
    pub nulls: Vec<String>,
    /// .npy/.npz output: how decimal columns are written, as POLICY for every column or
    /// COLUMN:POLICY for one (repeatable). POLICY: `auto` (the default: float64 when the
    /// precision is at most 15, from which the decimal comes back exactly; wider ones are
    /// refused), `f8` (always float64, the nearest double: lossy above 15 digits), `scaled`
    /// (int64 holding the unscaled value; a value that does not fit is an error).
    #[arg(long, value_name = "[COLUMN:]POLICY", requires = "output")]
    pub decimals: Vec<String>,
    /// .npy/.npz output: how a string column is written: `fixed` (the default: NumPy's
    /// fixed-width `U<n>`, as wide as the widest value) or `objects` (an object array of str,
    /// None for null, which np.load(allow_pickle=True) reads in NumPy 1.x and 2.x; only a
    /// table of one string column: choose it with --columns).
    #[arg(long, value_enum, value_name = "fixed|objects", requires = "output")]
    pub strings: Option<StringsChoice>,
}

/// `--strings`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StringsChoice {
    /// Fixed-width `U<n>`.
    Fixed,
    /// An object array (`'|O'`).
    Objects,
}

/// A policy for the run (`column` `None`) or for one column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct For<P> {
    pub column: Option<String>,
    pub policy: P,
}

/// The parsed flags.
#[derive(Clone, Debug, Default)]
pub struct TableChoice {
    pub columns: Option<Vec<String>>,
    pub exclude: Vec<String>,
    pub nulls: Vec<For<NullPolicy>>,
    pub decimals: Vec<For<DecimalPolicy>>,
    /// `--strings`: `Some(true)` for `objects`, `Some(false)` for `fixed`.
    pub strings: Option<bool>,
}

/// Parses `[COLUMN:]POLICY` for the flag `flag`: the whole text if it is a policy, else split
/// at the first `:` after which a policy follows (so a column name may hold `:`, and so may a
/// fill value).
pub fn parse_for<P: FromStr>(flag: &str, text: &str) -> CliResult<For<P>>
where
    P::Err: fmt::Display,
{
    let whole = match text.parse::<P>() {
        Ok(policy) => {
            return Ok(For {
                column: None,
                policy,
            })
        }
        Err(e) => e,
    };
    for (i, _) in text.match_indices(':') {
        if let Ok(policy) = text[i + 1..].parse::<P>() {
            if i == 0 {
                break;
            }
            return Ok(For {
                column: Some(text[..i].to_string()),
                policy,
            });
        }
    }
    Err(Failure::usage(format!(
        "{flag} {text}: not [COLUMN:]POLICY ({whole})"
    )))
}

impl ChoiceArgs {
    /// True if any of the flags is given.
    pub fn is_set(&self) -> bool {
        self.columns.is_some()
            || !self.exclude.is_empty()
            || !self.nulls.is_empty()
            || !self.decimals.is_empty()
            || self.strings.is_some()
    }

    /// The flags parsed (a policy given twice for the run or for one column is an error).
    pub fn parse(&self) -> CliResult<TableChoice> {
        let nulls = self
            .nulls
            .iter()
            .map(|t| parse_for::<NullPolicy>("--nulls", t))
            .collect::<CliResult<Vec<_>>>()?;
        let decimals = self
            .decimals
            .iter()
            .map(|t| parse_for::<DecimalPolicy>("--decimals", t))
            .collect::<CliResult<Vec<_>>>()?;
        once("--nulls", nulls.iter().map(|f| &f.column))?;
        once("--decimals", decimals.iter().map(|f| &f.column))?;
        for (flag, names) in [
            ("--columns", self.columns.as_deref().unwrap_or_default()),
            ("--exclude", &self.exclude[..]),
        ] {
            if names.iter().any(String::is_empty) {
                return Err(Failure::usage(format!(
                    "{flag} {}: an empty column name",
                    names.join(",")
                )));
            }
        }
        Ok(TableChoice {
            columns: self.columns.clone(),
            exclude: self.exclude.clone(),
            nulls,
            decimals,
            strings: self.strings.map(|s| s == StringsChoice::Objects),
        })
    }
}

/// Fails if a policy is given twice for the run or for the same column.
fn once<'a>(flag: &str, columns: impl Iterator<Item = &'a Option<String>>) -> CliResult {
    let mut seen: Vec<&Option<String>> = Vec::new();
    for c in columns {
        if seen.contains(&c) {
            return Err(Failure::usage(match c {
                Some(c) => format!("{flag}: column `{c}` is given two policies"),
                None => format!(
                    "{flag}: the run is given two policies (COLUMN:POLICY sets one column's)"
                ),
            }));
        }
        seen.push(c);
    }
    Ok(())
}

impl<P: fmt::Display> fmt::Display for For<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.column {
            Some(c) => write!(f, "{c}:{}", self.policy),
            None => write!(f, "{}", self.policy),
        }
    }
}

impl TableChoice {
    /// True if a column choice was made.
    pub fn selects(&self) -> bool {
        self.columns.is_some() || !self.exclude.is_empty()
    }

    /// True if a null or decimal policy or `--strings` was given (they apply to `.npy`
    /// and `.npz` output).
    pub fn has_policies(&self) -> bool {
        !self.nulls.is_empty() || !self.decimals.is_empty() || self.strings.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(
        columns: Option<&str>,
        exclude: &[&str],
        nulls: &[&str],
        decimals: &[&str],
    ) -> ChoiceArgs {
        ChoiceArgs {
            columns: columns.map(|c| c.split(',').map(String::from).collect()),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
            nulls: nulls.iter().map(|s| s.to_string()).collect(),
            decimals: decimals.iter().map(|s| s.to_string()).collect(),
            strings: None,
        }
    }

    #[test]
    fn column_and_policy() {
        let n = |t| parse_for::<NullPolicy>("--nulls", t);
        assert_eq!(
            n("nan").unwrap(),
            For {
                column: None,
                policy: NullPolicy::Nan
            }
        );
        assert_eq!(
            n("x:fill=-1").unwrap(),
            For {
                column: Some("x".into()),
                policy: NullPolicy::Fill("-1".into())
            }
        );
        // A fill value with a colon; a column name with one; a column named like a policy.
        assert_eq!(
            n("fill=12:30").unwrap().policy,
            NullPolicy::Fill("12:30".into())
        );
        assert_eq!(
            n("t:fill=2020-01-01T12:30").unwrap(),
            For {
                column: Some("t".into()),
                policy: NullPolicy::Fill("2020-01-01T12:30".into())
            }
        );
        assert_eq!(n("a:b:mask").unwrap().column.as_deref(), Some("a:b"));
        assert_eq!(n("nan:mask").unwrap().column.as_deref(), Some("nan"));
        for bad in ["zero", "x:zero", ":nan", ""] {
            let e = n(bad).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(
                e.msg.contains("--nulls") && e.msg.contains("fill=VALUE"),
                "{}",
                e.msg
            );
        }
        let d = |t| parse_for::<DecimalPolicy>("--decimals", t);
        assert_eq!(d("price:scaled").unwrap().policy, DecimalPolicy::Scaled);
        let e = d("price:f4").unwrap_err().msg;
        assert!(
            e.contains("--decimals price:f4") && e.contains("auto, f8 or scaled"),
            "{e}"
        );
    }

    #[test]
    fn a_policy_given_twice_is_an_error() {
        let e = args(None, &[], &["nan", "mask"], &[])
            .parse()
            .unwrap_err()
            .msg;
        assert!(e.contains("--nulls: the run is given two policies"), "{e}");
        let e = args(None, &[], &[], &["p:f8", "q:f8", "p:scaled"])
            .parse()
            .unwrap_err()
            .msg;
        assert!(
            e.contains("--decimals: column `p` is given two policies"),
            "{e}"
        );
        let e = args(Some("a,,b"), &[], &[], &[]).parse().unwrap_err().msg;
        assert!(e.contains("--columns a,,b: an empty column name"), "{e}");
        let ok = args(Some("b,a"), &["c"], &["nan", "x:fill=0"], &["auto"])
            .parse()
            .unwrap();
        assert_eq!(
            ok.columns.as_deref(),
            Some(&["b".to_string(), "a".to_string()][..])
        );
        assert_eq!(ok.nulls.len(), 2);
        assert!(ok.selects() && ok.has_policies());
    }
}
