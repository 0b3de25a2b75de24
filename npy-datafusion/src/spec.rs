//! The table spec: one string naming a table's files, their format and its options, as the
//! `npy sql -t NAME=SPEC` tool and library callers write it ([`TableSpec`], parsed with
//! `str::parse`; the grammar and its help text: [`table_spec_help`]).

use std::fmt;
use std::str::FromStr;

use super::formats::{CsvOptions, CSV_OPTIONS};
use super::options::{NpyReadOptions, TableLayout, OPTIONS};

/// The format of a table's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableFormat {
    /// `.npy` files.
    Npy,
    /// One member of each `.npz` archive.
    Npz,
    /// Parquet files (`.parquet`, `.pq`), read by DataFusion's Parquet reader (npy-serde's
    /// `parquet` feature beside `datafusion`).
    Parquet,
    /// Arrow IPC files (`.arrow`, `.feather`, `.ipc`), read by DataFusion's Arrow reader.
    Arrow,
    /// CSV files (`.csv`), read by DataFusion's CSV reader ([`CsvOptions`]).
    Csv,
}

impl TableFormat {
    /// Every format, in the order messages list them.
    pub const ALL: &'static [TableFormat] = &[
        TableFormat::Npy,
        TableFormat::Npz,
        TableFormat::Parquet,
        TableFormat::Arrow,
        TableFormat::Csv,
    ];

    /// Its name in a spec (`npy`).
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Npy => "npy",
            TableFormat::Npz => "npz",
            TableFormat::Parquet => "parquet",
            TableFormat::Arrow => "arrow",
            TableFormat::Csv => "csv",
        }
    }

    /// The format named `name` (as written in a spec).
    pub fn from_name(name: &str) -> Option<TableFormat> {
        Self::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The extensions its files have, with the dot; a directory's table lists the first
    /// unless the spec names another (`file_extension`).
    ///
    /// ```
    /// use npy_datafusion::TableFormat;
    /// assert_eq!(TableFormat::Arrow.extensions(), [".arrow", ".feather", ".ipc"]);
    /// assert_eq!(TableFormat::of_file("a/b.FEATHER"), Some(TableFormat::Arrow));
    /// assert_eq!(TableFormat::of_file("a/b.bin"), None);
    /// ```
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            TableFormat::Npy => &[".npy"],
            TableFormat::Npz => &[".npz"],
            TableFormat::Parquet => &[".parquet", ".pq"],
            TableFormat::Arrow => &[".arrow", ".feather", ".ipc"],
            TableFormat::Csv => &[".csv"],
        }
    }

    /// The format of a file (or glob) by its extension, in any case: `None` when the
    /// extension is none of [`extensions`](Self::extensions).
    pub fn of_file(path: &str) -> Option<TableFormat> {
        let last = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let lower = last.to_ascii_lowercase();
        Self::ALL
            .iter()
            .copied()
            .find(|f| f.extensions().iter().any(|e| lower.ends_with(e)))
    }

    /// Whether its files are `.npy` arrays (read by [`NpyFormat`](super::NpyFormat) with
    /// [`NpyReadOptions`]).
    pub fn is_npy(self) -> bool {
        matches!(self, TableFormat::Npy | TableFormat::Npz)
    }

    /// The option keys of its tables, for messages.
    fn option_keys(self) -> String {
        match self {
            TableFormat::Npy | TableFormat::Npz => super::options::option_keys(),
            TableFormat::Parquet | TableFormat::Arrow => {
                "file_extension and sort_order".to_string()
            }
            TableFormat::Csv => {
                let mut keys = vec!["file_extension", "sort_order"];
                keys.extend(CSV_OPTIONS.iter().map(|o| o.key));
                list(&keys)
            }
        }
    }
}

/// Items for messages: `a, b and c`.
fn list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The format names for messages: `npy, npz, parquet, arrow and csv`.
fn format_names() -> String {
    let names: Vec<&str> = TableFormat::ALL.iter().map(|f| f.name()).collect();
    list(&names)
}

/// A table: its location, format and read options, parsed from a spec (`str::parse`, or
/// [`TableSpec::parse_with`] over options of the caller's).
///
/// # Grammar
/// ```text
/// SPEC     = LOCATION                                 format from the extension
///          | FORMAT "(" LOCATION { "," KEY "=" VALUE } ")"
/// FORMAT   = "npy" | "npz" | "parquet" | "arrow" | "csv"
/// LOCATION = a file, a directory, a glob or a URL (scheme://...)
/// ```
/// - A bare `LOCATION` takes its format from its extension (any case): `.npy`; `.npz`;
///   `.parquet` or `.pq`; `.arrow`, `.feather` or `.ipc` (Arrow IPC files); `.csv`. A
///   location with none of them (a directory, `data/*`, `w2.bin`) is one format by its
///   files' extensions, seen when the table is registered
///   ([`register_spec`](super::NpySessionExt::register_spec)): `.npy` files if it holds none
///   of the known extensions, an error asking for `FORMAT(...)` if it holds two.
///   `ARCHIVE.npz:KEY` is the member `KEY` of the archive: the location is split at its first
///   `.npz:`, whatever the key holds (`:` included); an archive named otherwise is read with
///   `npz(PATH, member=KEY)`. The split looks at the text only, never at the file system, so
///   that a URL splits as a path.
/// - `FORMAT(...)` is the explicit form, in the style of DuckDB's `read_parquet('...', k=v)`:
///   the format named, the location taken as it is (never split), followed by options
///   `KEY=VALUE`. The keys of `npy` and `npz` tables are those of SQL's `OPTIONS`
///   ([`NpyReadOptions::set`]); `parquet` and `arrow` tables take `file_extension` and
///   `sort_order`; `csv` tables those, `header` and `delimiter` ([`CsvOptions`]). The
///   `sort_order` of every format declares the order of each file's rows
///   ([`NpyReadOptions::sorted_by`]: trusted, not checked). It is recognised
///   when the spec starts with a name followed by `(` and the name is a format, or the spec
///   ends with `)`; so a path such as `runs(2).npy` stays a path.
/// - Inside `FORMAT(...)` the location and each value may be single-quoted, to hold a comma or
///   spaces at its ends (`''` is a quote inside quotes).
///
/// Why this form: a bare location keeps the specs users write today (a path, a directory,
/// a glob, `ARCHIVE.npz:KEY`) working, and the explicit form names the format and options
/// in one token a shell passes whole (no `?k=v` query, which URLs and globs already use),
/// with room for the formats, layouts and options other table kinds add.
///
/// ```
/// use npy_datafusion::{TableFormat, TableSpec};
///
/// let spec: TableSpec = "runs.npz:obs".parse()?;
/// assert_eq!((spec.location(), spec.format()), ("runs.npz", TableFormat::Npz));
/// assert_eq!(spec.options().member(), Some("obs"));
///
/// let spec: TableSpec = "npy(s3://bucket/w2/, max_header_size=20000)".parse()?;
/// assert_eq!(spec.location(), "s3://bucket/w2/");
///
/// let spec: TableSpec = "data/lineitem.parquet".parse()?;
/// assert_eq!(spec.format(), TableFormat::Parquet);
/// let spec: TableSpec = "csv(data/, delimiter=;, header=false)".parse()?;
/// assert_eq!((spec.format(), spec.csv_options().delimiter()), (TableFormat::Csv, b';'));
///
/// let err = "orc(t.orc)".parse::<TableSpec>().unwrap_err();
/// assert!(err.to_string().contains("the formats are npy, npz, parquet, arrow and csv"), "{err}");
/// let err = "parquet(t/, member=x)".parse::<TableSpec>().unwrap_err();
/// assert!(err.to_string().contains("the options of parquet tables are file_extension"), "{err}");
///
/// // Over options of the caller's (the tool's --max-header-size), then the spec's.
/// use npy_datafusion::NpyReadOptions;
/// let defaults = NpyReadOptions::new().max_header_size(50_000).max_data_size(1 << 30);
/// let spec = TableSpec::parse_with("npz('data/a,b/*.npz', member=x, max_header_size=20000)", defaults)?;
/// assert_eq!(spec.location(), "data/a,b/*.npz");
/// assert_eq!(spec.options().extension(), ".npz");
/// let entries = spec.options().entries();
/// let value = |k: &str| entries.iter().find(|e| e.key == k).unwrap().value.clone();
/// assert_eq!(value("max_header_size").as_deref(), Some("20000"));
/// assert_eq!(value("max_data_size").as_deref(), Some("1073741824"));
/// # Ok::<(), npy_datafusion::TableSpecError>(())
/// ```
#[derive(Clone, Debug)]
pub struct TableSpec {
    location: String,
    format: TableFormat,
    /// Whether the format is named (`FORMAT(...)`, [`TableSpec::new`]) or the location's
    /// extension says it; `false`: `.npy` for want of either, until the files are listed.
    known: bool,
    options: NpyReadOptions,
    csv: CsvOptions,
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
    /// member in the options: [`NpyReadOptions::npz_member`]; the tables of other formats
    /// take only its [`file_extension`](NpyReadOptions::file_extension)).
    pub fn new(
        location: impl Into<String>,
        format: TableFormat,
        options: NpyReadOptions,
    ) -> Result<TableSpec, TableSpecError> {
        let table = TableSpec {
            location: location.into(),
            format,
            known: true,
            options,
            csv: CsvOptions::default(),
        };
        table.check()?;
        Ok(table)
    }

    /// The table with its CSV files read with `csv`.
    pub fn with_csv_options(mut self, csv: CsvOptions) -> TableSpec {
        self.csv = csv;
        self
    }

    /// The same table at `location` (a caller's absolute path for the spec's relative one).
    pub fn with_location(mut self, location: impl Into<String>) -> TableSpec {
        self.location = location.into();
        self
    }

    /// The same table with a relative local location made absolute (against the current
    /// directory), as DataFusion's listing needs it: it would read a `:` in a relative path
    /// as a URL's scheme. URLs (`scheme://`) and absolute paths stay as they are.
    ///
    /// ```
    /// use npy_datafusion::TableSpec;
    /// let spec: TableSpec = "data/w2.npy".parse()?;
    /// assert!(std::path::Path::new(spec.absolute()?.location()).is_absolute());
    /// let url: TableSpec = "s3://bucket/w2/".parse()?;
    /// assert_eq!(url.absolute()?.location(), "s3://bucket/w2/");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn absolute(self) -> std::io::Result<TableSpec> {
        if self.location.contains("://") || std::path::Path::new(&self.location).is_absolute() {
            return Ok(self);
        }
        let path = std::path::absolute(&self.location)?;
        Ok(self.with_location(path.display().to_string()))
    }

    /// The file, directory, glob or URL of the table's files.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The format of its files: as named, by the location's extension, or `Npy` when neither
    /// says (a directory's files decide when it is registered:
    /// [`format_is_known`](Self::format_is_known)).
    pub fn format(&self) -> TableFormat {
        self.format
    }

    /// Whether the spec names the format or the location's extension says it; if not,
    /// [`register_spec`](super::NpySessionExt::register_spec) takes it from the extensions of
    /// the files it lists.
    pub fn format_is_known(&self) -> bool {
        self.known
    }

    /// The options its files are read with (for
    /// [`register_npy`](super::NpySessionExt::register_npy)); of a table of another format,
    /// only the file extension applies.
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// How a CSV table's files are read.
    pub fn csv_options(&self) -> &CsvOptions {
        &self.csv
    }

    /// The location and the options, for
    /// [`register_npy`](super::NpySessionExt::register_npy).
    pub fn into_parts(self) -> (String, NpyReadOptions) {
        (self.location, self.options)
    }

    /// The same table in `format`, found by listing its files: checked as a spec naming it.
    pub(crate) fn in_format(mut self, format: TableFormat) -> Result<TableSpec, TableSpecError> {
        self.format = format;
        self.known = true;
        self.check()?;
        Ok(self)
    }

    fn check(&self) -> Result<(), TableSpecError> {
        if self.options.layout() == TableLayout::Columns {
            return match (self.format, self.options.member()) {
                (TableFormat::Npy | TableFormat::Npz, None) => Ok(()),
                (TableFormat::Npz | TableFormat::Npy, Some(_)) => fail(format!(
                    "{}: a column table (layout=columns) reads every member of its archive, \
                     one column each: leave out member=",
                    self.location
                )),
                (format, _) => fail(format!(
                    "layout=columns is an option of npy and npz tables, not of {} tables",
                    format.name()
                )),
            };
        }
        match (self.format, self.options.member()) {
            (TableFormat::Npz, None) => fail(format!(
                "{} is an .npz table: name the member it reads, as ARCHIVE.npz:KEY or \
                 npz(LOCATION, member=KEY)",
                self.location
            )),
            (TableFormat::Npz, Some(_)) => Ok(()),
            (_, Some(_)) => fail(format!(
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
            known: true,
            options: defaults.npz_member(key),
            csv: CsvOptions::default(),
        });
    }
    let format = TableFormat::of_file(spec);
    Ok(TableSpec {
        location: spec.to_string(),
        format: format.unwrap_or(TableFormat::Npy),
        known: format.is_some(),
        options: defaults,
        csv: CsvOptions::default(),
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
    let mut table = TableSpec {
        location,
        format,
        known: true,
        options: defaults,
        csv: CsvOptions::default(),
    };
    let mut seen: Vec<String> = Vec::new();
    while at.comma()? {
        let key = at.key(format)?;
        if seen.contains(&key) {
            return fail(format!("{spec:?}: the option {key} is given twice"));
        }
        let value = at.value()?;
        table.apply(&key, &value)?;
        seen.push(key);
    }
    Ok(table)
}

impl TableSpec {
    /// Sets the option `key` of a table of its format.
    fn apply(&mut self, key: &str, value: &str) -> Result<(), TableSpecError> {
        let format = self.format;
        let set = if format.is_npy() || key == "file_extension" || key == "sort_order" {
            self.options.apply(key, value)
        } else if let (TableFormat::Csv, Some(set)) = (format, self.csv.apply(key, value)) {
            set
        } else {
            Err(format!(
                "{key} is not an option of {} tables: the options of {} tables are {}",
                format.name(),
                format.name(),
                format.option_keys()
            ))
        };
        set.map_err(TableSpecError)
    }
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

    /// `KEY=`, returning `KEY` (an option of a table of `format`).
    fn key(&mut self, format: TableFormat) -> Result<String, TableSpecError> {
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
            format.option_keys()
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
         \n  LOCATION                  a file, a directory of shards or a glob, its format\n\
         \x20                           by its extension: .npy, .npz, .parquet or .pq,\n\
         \x20                           .arrow, .feather or .ipc (Arrow IPC files), .csv;\n\
         \x20                           a directory by its files' extension (.npy files\n\
         \x20                           if none of these; name the format if two)\n\
         \x20 ARCHIVE.npz:KEY           the member KEY of an .npz archive (split at the\n\
         \x20                           first \".npz:\")\n\
         \x20 npy(LOCATION, KEY=VALUE, ...)\n\
         \x20 npz(LOCATION, member=KEY, KEY=VALUE, ...)\n\
         \x20 npz(ARCHIVE.npz, layout=columns, KEY=VALUE, ...)\n\
         \x20 npy(DIRECTORY, layout=columns, KEY=VALUE, ...)\n\
         \x20                           a column table: each member of the archive, or each\n\
         \x20                           .npy file of the directory, is a column (its key or\n\
         \x20                           file stem the column's name), all of one length\n\
         \x20 parquet(LOCATION, file_extension=EXT, sort_order=ORDER)\n\
         \x20 arrow(LOCATION, file_extension=EXT, sort_order=ORDER)\n\
         \x20 csv(LOCATION, header=true|false, delimiter=CHAR, file_extension=EXT)\n\
         \x20                           the format named, the location as it is, and options\n\
         \nInside FORMAT(...), quote the location or a value in single quotes when it holds\n\
         a comma ('' is a quote inside quotes).\n\
         \nOptions of npy and npz tables (also SQL's CREATE EXTERNAL TABLE ... STORED AS NPY\n\
         OPTIONS ('KEY' 'VALUE')):\n",
    );
    for o in OPTIONS {
        let key = format!("{}={}", o.key, o.value);
        text.push_str(&format!("  {key:<26}{}\n", o.help));
    }
    text.push_str(
        "\nA declared order (sort_order, any format) is trusted, not checked: ORDER BY, GROUP \
         BY and joins on it\nskip their sorts. Each file must be sorted so (a column table: \
         the whole table).\n",
    );
    text.push_str(
        "\nOptions of csv tables (parquet and arrow tables take file_extension and \
         sort_order only):\n",
    );
    for o in CSV_OPTIONS {
        let key = format!("{}={}", o.key, o.value);
        text.push_str(&format!("  {key:<26}{}\n", o.help));
    }
    text.push_str(
        "\nExamples:\n  w2.npy\n  data/shards/\n  runs.npz:obs\n  npz(data/*.npz, member=x)\n  \
         npy(data/w2/, max_header_size=20000)\n  npy('data/a,b/', file_extension=.bin)\n  \
         npz(table.npz, layout=columns)\n  npy(columns/, layout=columns)\n  \
         npz(lineitem.npz, layout=columns, sort_order=l_orderkey)\n  \
         npy(events/, sort_order='day, ts DESC')\n  \
         lineitem.parquet\n  data/parquet-shards/\n  csv(data/*.tsv, delimiter=\\t, header=false)\n",
    );
    text
}

#[cfg(test)]
mod tests;
