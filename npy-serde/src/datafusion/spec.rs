//! The table spec: one string naming a table's files, their format and its options, as the
//! `npy sql -t NAME=SPEC` tool and library callers write it ([`TableSpec`], parsed with
//! `str::parse`; the grammar and its help text: [`table_spec_help`]).

use std::fmt;
use std::str::FromStr;

use super::options::{NpyReadOptions, OPTIONS};

/// The format of a table's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableFormat {
    /// `.npy` files.
    Npy,
    /// One member of each `.npz` archive.
    Npz,
}

impl TableFormat {
    /// Every format, in the order messages list them.
    pub const ALL: &'static [TableFormat] = &[TableFormat::Npy, TableFormat::Npz];

    /// Its name in a spec (`npy`).
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Npy => "npy",
            TableFormat::Npz => "npz",
        }
    }

    /// The format named `name` (as written in a spec).
    pub fn from_name(name: &str) -> Option<TableFormat> {
        Self::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The format of a location without one named: by its extension.
    fn of_location(location: &str) -> TableFormat {
        let last = location.rsplit(['/', '\\']).next().unwrap_or(location);
        if last.to_ascii_lowercase().ends_with(".npz") {
            TableFormat::Npz
        } else {
            TableFormat::Npy
        }
    }
}

/// The format names for messages: `npy and npz`.
fn format_names() -> String {
    let names: Vec<&str> = TableFormat::ALL.iter().map(|f| f.name()).collect();
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A table: its location, format and read options, parsed from a spec (`str::parse`, or
/// [`TableSpec::parse_with`] over options of the caller's).
///
/// # Grammar
/// ```text
/// SPEC     = LOCATION                                 format from the extension
///          | FORMAT "(" LOCATION { "," KEY "=" VALUE } ")"
/// FORMAT   = "npy" | "npz"
/// LOCATION = a file, a directory, a glob or a URL (scheme://...)
/// ```
/// - A bare `LOCATION` is an `.npz` table if its extension is `.npz` (any case), else a `.npy`
///   table (as every file a table names has been so far). `ARCHIVE.npz:KEY` is the member `KEY`
///   of the archive: the location is split at its first `.npz:`, whatever the key holds
///   (`:` included); an archive named otherwise is read with `npz(PATH, member=KEY)`. The
///   split looks at the text only, never at the file system, so that a URL splits as a path.
/// - `FORMAT(...)` is the explicit form, in the style of DuckDB's `read_parquet('...', k=v)`:
///   the location is taken as it is (never split), followed by options `KEY=VALUE`, the keys
///   of SQL's `OPTIONS` ([`NpyReadOptions::set`]). It is recognised when the spec starts with
///   a name followed by `(` and the name is a format, or the spec ends with `)`; so a path
///   such as `runs(2).npy` stays a path.
/// - Inside `FORMAT(...)` the location and each value may be single-quoted, to hold a comma or
///   spaces at its ends (`''` is a quote inside quotes).
///
/// Why this form: a bare location keeps the specs users write today (a path, a directory,
/// a glob, `ARCHIVE.npz:KEY`) working, and the explicit form names the format and options
/// in one token a shell passes whole (no `?k=v` query, which URLs and globs already use),
/// with room for the formats, layouts and options other table kinds add.
///
/// ```
/// use npy_serde::datafusion::{TableFormat, TableSpec};
///
/// let spec: TableSpec = "runs.npz:obs".parse()?;
/// assert_eq!((spec.location(), spec.format()), ("runs.npz", TableFormat::Npz));
/// assert_eq!(spec.options().member(), Some("obs"));
///
/// let spec: TableSpec = "npy(s3://bucket/w2/, max_header_size=20000)".parse()?;
/// assert_eq!(spec.location(), "s3://bucket/w2/");
///
/// let err = "parquet(t.parquet)".parse::<TableSpec>().unwrap_err();
/// assert!(err.to_string().contains("the formats are npy and npz"), "{err}");
///
/// // Over options of the caller's (the tool's --max-header-size), then the spec's.
/// use npy_serde::datafusion::NpyReadOptions;
/// let defaults = NpyReadOptions::new().max_header_size(50_000).max_data_size(1 << 30);
/// let spec = TableSpec::parse_with("npz('data/a,b/*.npz', member=x, max_header_size=20000)", defaults)?;
/// assert_eq!(spec.location(), "data/a,b/*.npz");
/// assert_eq!(spec.options().extension(), ".npz");
/// let entries = spec.options().entries();
/// let value = |k: &str| entries.iter().find(|e| e.key == k).unwrap().value.clone();
/// assert_eq!(value("max_header_size").as_deref(), Some("20000"));
/// assert_eq!(value("max_data_size").as_deref(), Some("1073741824"));
/// # Ok::<(), npy_serde::datafusion::TableSpecError>(())
/// ```
#[derive(Clone, Debug)]
pub struct TableSpec {
    location: String,
    format: TableFormat,
    options: NpyReadOptions,
}

/// A table spec that does not parse: the message names the bad part and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSpecError(String);

impl fmt::Display for TableSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableSpecError {}

fn fail<T>(message: impl Into<String>) -> Result<T, TableSpecError> {
    Err(TableSpecError(message.into()))
}

impl FromStr for TableSpec {
    type Err = TableSpecError;

    /// Parses `spec` with the default options ([`NpyReadOptions::new`]).
    fn from_str(spec: &str) -> Result<TableSpec, TableSpecError> {
        TableSpec::parse_with(spec, NpyReadOptions::new())
    }
}

impl TableSpec {
    /// Parses `spec`, whose options are set over `defaults`.
    pub fn parse_with(spec: &str, defaults: NpyReadOptions) -> Result<TableSpec, TableSpecError> {
        if spec.trim().is_empty() {
            return fail(
                "an empty table spec: give a path, a URL or FORMAT(LOCATION, KEY=VALUE, ...)",
            );
        }
        let table = match explicit_form(spec) {
            Some((name, body)) => explicit(spec, name, body, defaults)?,
            None => bare(spec, defaults)?,
        };
        table.check()?;
        Ok(table)
    }

    /// A table of `location` in `format` read with `options` (an `.npz` table names its
    /// member in the options: [`NpyReadOptions::npz_member`]).
    pub fn new(
        location: impl Into<String>,
        format: TableFormat,
        options: NpyReadOptions,
    ) -> Result<TableSpec, TableSpecError> {
        let table = TableSpec {
            location: location.into(),
            format,
            options,
        };
        table.check()?;
        Ok(table)
    }

    /// The file, directory, glob or URL of the table's files.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The format of its files.
    pub fn format(&self) -> TableFormat {
        self.format
    }

    /// The options its files are read with (for
    /// [`register_npy`](super::NpySessionExt::register_npy)).
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The location and the options, for
    /// [`register_npy`](super::NpySessionExt::register_npy).
    pub fn into_parts(self) -> (String, NpyReadOptions) {
        (self.location, self.options)
    }

    fn check(&self) -> Result<(), TableSpecError> {
        match (self.format, self.options.member()) {
            (TableFormat::Npz, None) => fail(format!(
                "{} is an .npz table: name the member it reads, as ARCHIVE.npz:KEY or \
                 npz(LOCATION, member=KEY)",
                self.location
            )),
            (TableFormat::Npy, Some(_)) => fail(format!(
                "member is an option of npz tables: npz({}, member=KEY)",
                self.location
            )),
            _ => Ok(()),
        }
    }
}

/// The format name and the text between the parentheses, if `spec` is `FORMAT(...)`.
fn explicit_form(spec: &str) -> Option<(&str, &str)> {
    let spec = spec.trim();
    let open = spec.find('(')?;
    let name = &spec[..open];
    let is_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_name {
        return None;
    }
    match spec.strip_suffix(')') {
        Some(rest) => Some((name, &rest[open + 1..])),
        None if TableFormat::from_name(name).is_some() => Some((name, &spec[open + 1..])),
        None => None,
    }
}

/// `LOCATION` or `ARCHIVE.npz:KEY`.
fn bare(spec: &str, defaults: NpyReadOptions) -> Result<TableSpec, TableSpecError> {
    let lower = spec.to_ascii_lowercase();
    if let Some(at) = lower.find(".npz:") {
        let (archive, key) = (&spec[..at + 4], &spec[at + 5..]);
        if key.is_empty() {
            return fail(format!(
                "{spec}: no member key after the ':' (ARCHIVE.npz:KEY)"
            ));
        }
        return Ok(TableSpec {
            location: archive.to_string(),
            format: TableFormat::Npz,
            options: defaults.npz_member(key),
        });
    }
    Ok(TableSpec {
        location: spec.to_string(),
        format: TableFormat::of_location(spec),
        options: defaults,
    })
}

/// `FORMAT(LOCATION, KEY=VALUE, ...)`, `body` the text inside the parentheses.
fn explicit(
    spec: &str,
    name: &str,
    body: &str,
    defaults: NpyReadOptions,
) -> Result<TableSpec, TableSpecError> {
    let Some(format) = TableFormat::from_name(name) else {
        return fail(format!(
            "unknown format {name:?} in {spec:?}: the formats are {} (a path holding '(' \
             is written inside one: npy('{spec}'))",
            format_names()
        ));
    };
    if !spec.trim().ends_with(')') {
        return fail(format!("{spec:?}: the ')' at the end is missing"));
    }
    let mut at = Cursor { text: body, at: 0 };
    let location = at.value()?;
    if location.is_empty() {
        return fail(format!(
            "{spec:?}: no location: {name}(LOCATION, KEY=VALUE, ...) starts with a path or URL"
        ));
    }
    let mut options = defaults;
    let mut seen: Vec<String> = Vec::new();
    while at.comma()? {
        let key = at.key()?;
        if seen.contains(&key) {
            return fail(format!("{spec:?}: the option {key} is given twice"));
        }
        let value = at.value()?;
        options.apply(&key, &value).map_err(TableSpecError)?;
        seen.push(key);
    }
    Ok(TableSpec {
        location,
        format,
        options,
    })
}

/// Reads the items of `FORMAT(...)`.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// Past the `,` before the next option: false at the end of the text.
    fn comma(&mut self) -> Result<bool, TableSpecError> {
        self.skip_spaces();
        match self.rest().chars().next() {
            None => Ok(false),
            Some(',') => {
                self.at += 1;
                Ok(true)
            }
            Some(_) => fail(format!(
                "unexpected {:?} after a quoted text: a ',' or the ')' comes next",
                self.rest()
            )),
        }
    }

    /// `KEY=`, returning `KEY`.
    fn key(&mut self) -> Result<String, TableSpecError> {
        let rest = self.rest();
        let end = rest.find([',', '=']).unwrap_or(rest.len());
        let key = rest[..end].trim();
        if rest[end..].starts_with('=') && !key.is_empty() {
            self.at += end + 1;
            return Ok(key.to_string());
        }
        if key.is_empty() {
            return fail(
                "an empty option: after the location come options KEY=VALUE, separated by ','",
            );
        }
        fail(format!(
            "{key:?} is not KEY=VALUE: after the location come options KEY=VALUE, whose keys \
             are {}",
            super::options::option_keys()
        ))
    }

    /// A location or value: single-quoted, or the text up to the next `,` (spaces at its
    /// ends left out).
    fn value(&mut self) -> Result<String, TableSpecError> {
        self.skip_spaces();
        let rest = self.rest();
        if !rest.starts_with('\'') {
            let end = rest.find(',').unwrap_or(rest.len());
            self.at += end;
            return Ok(rest[..end].trim_end().to_string());
        }
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1).peekable();
        while let Some((i, c)) = chars.next() {
            if c != '\'' {
                out.push(c);
            } else if chars.peek().is_some_and(|&(_, n)| n == '\'') {
                out.push('\'');
                chars.next();
            } else {
                self.at += i + 1;
                return Ok(out);
            }
        }
        fail(format!(
            "the quote of {rest:?} is not closed (a quote inside quotes is written '')"
        ))
    }
}

/// The help text of a table spec (the grammar, the options of [`NpyReadOptions`] and
/// examples), as `npy sql --help` shows it.
pub fn table_spec_help() -> String {
    let mut text = String::from(
        "A table SPEC names a table's files, their format and options:\n\
         \n  LOCATION                  a file, a directory of shards or a glob: an .npz \
         table\n                            if its extension is .npz, else .npy files\n  ARCHIVE.npz:KEY           the member KEY of an .npz \
         archive (split at the first \".npz:\")\n  npy(LOCATION, KEY=VALUE, ...)\n  \
         npz(LOCATION, member=KEY, KEY=VALUE, ...)\n                            the format \
         named, the location as it is, and options\n\nInside FORMAT(...), quote the \
         location or a value in single quotes when it holds a comma\n('' is a quote \
         inside quotes).\n\nOptions (also SQL's CREATE EXTERNAL TABLE ... OPTIONS ('KEY' \
         'VALUE')):\n",
    );
    for o in OPTIONS {
        let key = format!("{}={}", o.key, o.value);
        text.push_str(&format!("  {key:<26}{}\n", o.help));
    }
    text.push_str(
        "\nExamples:\n  w2.npy\n  data/shards/\n  runs.npz:obs\n  npz(data/*.npz, member=x)\n  \
         npy(data/w2/, max_header_size=20000)\n  npy('data/a,b/', file_extension=.bin)\n",
    );
    text
}

#[cfg(test)]
mod tests;
