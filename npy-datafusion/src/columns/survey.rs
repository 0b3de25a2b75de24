//! The survey of a column table: where its columns are (the `.npy` members of an archive, or
//! the `.npy` files of a directory), each column's header checked against the table's limits
//! and against the bytes present (the extent check of the row files), and every column of
//! one length. A table is surveyed when it is registered and again when each query is
//! planned, so that a file cut short or rewritten since fails the query naming it, whatever
//! the query asks (`count(*)` answered from the row count included).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result as DfResult};

use super::super::extent::data_extent;
use super::super::options::NpyReadOptions;
use super::super::recorded::column_order;
use super::super::schema::table_schema;
use npy_arrow::order::TableRecord;
use npy_arrow::RowDecoder;
use npy_remote::RemoteNpz;
use npy_serde::error::{Error, Result};
use npy_serde::header::ParsedHeader;
use npy_serde::npz::{Compression, MmapNpz};
use npy_serde::read::MmapArray;

/// A column table on an object store (`remote` surveys and reads it).
pub(crate) struct RemotePlace {
    /// The location as the table names it.
    pub(crate) url: String,
    pub(crate) store: Arc<dyn object_store::ObjectStore>,
    /// The archive's path, or the prefix's, in the store.
    pub(crate) path: object_store::path::Path,
    /// An archive (the object exists), or a prefix.
    pub(crate) archive: bool,
}

impl std::fmt::Debug for RemotePlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemotePlace")
            .field("url", &self.url)
            .field("archive", &self.archive)
            .finish_non_exhaustive()
    }
}

impl PartialEq for RemotePlace {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url && self.archive == other.archive
    }
}

impl Eq for RemotePlace {}

/// Where a column table's columns are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// An `.npz` archive: each `.npy` member is a column.
    Archive(PathBuf),
    /// A directory: each `.npy` file is a column.
    Directory(PathBuf),
    /// An archive (an object) or a directory (a prefix) on an object store.
    Remote(Arc<RemotePlace>),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Archive(p) | Place::Directory(p) => p.display().fmt(f),
            Place::Remote(r) => f.write_str(&r.url),
        }
    }
}

impl Place {
    /// The place of the local column table at `location`.
    pub(crate) fn of(location: &str) -> DfResult<Place> {
        let path = match location.strip_prefix("file://") {
            Some(p) => PathBuf::from(p),
            None => PathBuf::from(location),
        };
        let meta = std::fs::metadata(&path).map_err(|e| {
            DataFusionError::External(Box::new(Error::from(e)))
                .context(format!("column table {}", path.display()))
        })?;
        Ok(if meta.is_dir() {
            Place::Directory(path)
        } else {
            Place::Archive(path)
        })
    }

    /// True for an archive (local or remote), false for a directory or prefix.
    pub(crate) fn is_archive(&self) -> bool {
        match self {
            Place::Archive(_) => true,
            Place::Directory(_) => false,
            Place::Remote(r) => r.archive,
        }
    }
}

/// Where one column's array is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The member of this key.
    Member(String),
    /// This `.npy` file.
    File(PathBuf),
    /// This `.npy` object of a prefix on an object store (its path in the store, its URL).
    Object(object_store::path::Path, String),
}

/// One column: its name, its array's header, where it is, and whether its bytes are stored
/// as they are (a file, a stored member) or deflated.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) header: ParsedHeader,
    pub(crate) source: Source,
    pub(crate) deflated: bool,
    pub(crate) field: Arc<Field>,
}

impl Column {
    /// The column `name` of the array whose header is `header`, at `source` of `place`.
    pub(crate) fn new(
        place: &Place,
        name: String,
        header: ParsedHeader,
        source: Source,
        deflated: bool,
    ) -> DfResult<Column> {
        let field = column_field(&name, &header).map_err(|e| in_column(e, place, &source))?;
        Ok(Column {
            name,
            header,
            source,
            deflated,
            field,
        })
    }
}

/// A surveyed column table.
#[derive(Clone, Debug)]
pub(crate) struct Survey {
    pub(crate) place: Place,
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: u64,
    /// A remote archive's directory, read once by the survey.
    pub(crate) npz: Option<RemoteNpz>,
    /// The records kept with the table (the archive's comment, the directory's
    /// `_npy_order`): its order and its columns' statistics, each if it has one; whether they
    /// hold is for `recorded` (the order) and `bounds` (the statistics) to say.
    pub(crate) record: TableRecord,
}

/// This crate's error about a column's member or file, as a DataFusion error naming it.
pub(crate) fn in_column(e: Error, place: &Place, source: &Source) -> DataFusionError {
    DataFusionError::External(Box::new(e)).context(where_is(place, source))
}

/// `member K of file P` or `file P`.
pub(crate) fn where_is(place: &Place, source: &Source) -> String {
    match source {
        Source::Member(key) => format!("member {key} of file {place}"),
        Source::File(path) => format!("file {}", path.display()),
        Source::Object(_, url) => format!("file {url}"),
    }
}

pub(crate) fn in_table(e: Error, place: &Place) -> DataFusionError {
    DataFusionError::External(Box::new(e)).context(format!("file {place}"))
}

impl Survey {
    /// Surveys the local column table at `place`.
    pub(crate) fn take(place: Place, options: &NpyReadOptions) -> DfResult<Survey> {
        let (columns, record) = match &place {
            Place::Archive(path) => archive_columns(&place, path, options)?,
            Place::Directory(path) => (
                directory_columns(&place, path, options)?,
                npy_arrow::order::read_directory_records(path),
            ),
            Place::Remote(_) => {
                return Err(DataFusionError::Internal(format!(
                    "{place}: a remote column table is surveyed by remote::survey"
                )))
            }
        };
        Ok(Survey::of_columns(place, columns, None)?.with_record(record))
    }

    /// The survey with `record`, the records kept with the table.
    pub(crate) fn with_record(mut self, record: TableRecord) -> Survey {
        self.record = record;
        self
    }

    /// The options of a scan of the table with `schema`: `options`, with the recorded order if
    /// they declare none and the record holds (see `recorded`).
    pub(crate) fn scan_options(&self, options: &NpyReadOptions, schema: &Schema) -> NpyReadOptions {
        column_order(options, self.record.order.as_ref(), self.rows, schema)
    }

    /// The survey of `columns` at `place`: there is one at least, all of one length.
    pub(crate) fn of_columns(
        place: Place,
        mut columns: Vec<Column>,
        npz: Option<RemoteNpz>,
    ) -> DfResult<Survey> {
        if columns.is_empty() {
            return Err(in_table(
                Error::invalid_value(if place.is_archive() {
                    "the archive has no .npy member: a column table (layout=columns) has one \
                     member per column"
                } else {
                    "the directory has no .npy file: a column table (layout=columns) has one \
                     file per column"
                }),
                &place,
            ));
        }
        let mut rows: Option<(u64, String)> = None;
        for c in &mut columns {
            let n = npy_arrow::rows_of(&c.header.header)
                .map_err(|e| in_column(e, &place, &c.source))?;
            match &rows {
                None => rows = Some((n, c.name.clone())),
                Some((m, first)) if *m != n => {
                    return Err(in_column(
                        Error::invalid_value(format!(
                            "column {} has {n} rows, column {first} has {m}: every column of \
                             a column table has the same number of rows",
                            c.name
                        )),
                        &place,
                        &c.source,
                    ))
                }
                Some(_) => {}
            }
        }
        let rows = rows.map(|(n, _)| n).unwrap_or(0);
        Ok(Survey {
            place,
            columns,
            rows,
            npz,
            record: TableRecord::default(),
        })
    }

    /// The table's schema: one field per column, in the order of the members (of the files'
    /// names).
    pub(crate) fn schema(&self) -> SchemaRef {
        let fields: Vec<Arc<Field>> = self.columns.iter().map(|c| c.field.clone()).collect();
        Arc::new(Schema::new(fields))
    }

    /// The column named `name`, or an error naming it and where it was looked for.
    pub(crate) fn column(&self, name: &str) -> DfResult<&Column> {
        self.columns.iter().find(|c| c.name == name).ok_or_else(|| {
            let what = if self.place.is_archive() {
                "member"
            } else {
                "file"
            };
            let looked = format!("{name}.npy");
            let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
            in_table(
                Error::invalid_value(format!(
                    "the column {name} of the table is missing: no {what} {looked} (the \
                     columns are {})",
                    names.join(", ")
                )),
                &self.place,
            )
        })
    }

    /// Fails unless every column of `schema` is here with the same type: the table's files
    /// changed since it was registered (or an `.npz` table declared columns it lacks).
    pub(crate) fn check_columns(&self, schema: &Schema) -> DfResult<()> {
        for field in schema.fields() {
            let c = self.column(field.name())?;
            if c.field.data_type() != field.data_type() {
                return Err(in_column(
                    Error::invalid_value(format!(
                        "column {} is {}, the table's is {}: the file changed since the table \
                         was registered",
                        c.name,
                        c.field.data_type(),
                        field.data_type()
                    )),
                    &self.place,
                    &c.source,
                ));
            }
        }
        Ok(())
    }
}

/// The column a header makes: its one field renamed (a plain array's `value`, with a
/// fixed-size list for each axis after the first), or a struct of a record array's fields.
fn column_field(name: &str, header: &ParsedHeader) -> Result<Arc<Field>> {
    RowDecoder::new(&header.header, None, false)?;
    let schema = table_schema(header)?;
    let field = match schema.fields().len() {
        1 => schema.field(0).clone().with_name(name),
        _ => Field::new(
            name,
            DataType::Struct(Fields::from(schema.fields().to_vec())),
            false,
        ),
    };
    Ok(Arc::new(field))
}

/// The columns of the local archive at `path`, and the records in its comment.
fn archive_columns(
    place: &Place,
    path: &Path,
    options: &NpyReadOptions,
) -> DfResult<(Vec<Column>, TableRecord)> {
    let npz = MmapNpz::open_with(path, &options.npz_options()).map_err(|e| in_table(e, place))?;
    let record = TableRecord::parse(npz.comment());
    let mut archive = None;
    let mut columns = Vec::new();
    for info in npz.members() {
        if !info.has_npy_suffix() {
            continue;
        }
        let source = Source::Member(info.key.clone());
        let err = |e| in_column(e, place, &source);
        let deflated = info.compression != Compression::Stored;
        let (header, size) = if deflated {
            let archive = match &mut archive {
                Some(a) => a,
                None => archive.insert(npz.archive().map_err(|e| in_table(e, place))?),
            };
            let mut member = archive.by_index(info.index).map_err(err)?;
            let header = member.header().map_err(err)?.clone();
            (header, info.size)
        } else {
            let array = npz.array_at(info.index).map_err(err)?;
            let header = array.parsed_header().clone();
            let size = header.data_offset + array.data().len() as u64;
            (header, size)
        };
        data_extent(options, &header, size).map_err(err)?;
        columns.push(Column::new(
            place,
            info.key.clone(),
            header,
            source,
            deflated,
        )?);
    }
    Ok((columns, record))
}

fn directory_columns(place: &Place, dir: &Path, options: &NpyReadOptions) -> DfResult<Vec<Column>> {
    let ext = options.extension.as_deref().unwrap_or(".npy");
    let ext = ext.trim_start_matches('.');
    let entries = std::fs::read_dir(dir).map_err(|e| in_table(e.into(), place))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| in_table(e.into(), place))?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == ext) {
            files.push(path);
        }
    }
    files.sort();
    let mut columns = Vec::new();
    for path in files {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = Source::File(path.clone());
        let err = |e| in_column(e, place, &source);
        let header = file_header(&path, options).map_err(err)?;
        columns.push(Column::new(place, name, header, source, false)?);
    }
    Ok(columns)
}

/// The header of the `.npy` file at `path`, after the limits and the extent check.
fn file_header(path: &Path, options: &NpyReadOptions) -> Result<ParsedHeader> {
    let map = MmapArray::open_with(path, &options.reader).or_else(|e| {
        // The map's own check says less than the extent check: give the latter's error.
        let size = std::fs::metadata(path)?.len();
        let mut file = std::fs::File::open(path)?;
        let header = npy_serde::header::read_header(&mut file, &options.reader.limits)?;
        data_extent(options, &header, size)?;
        Err(e)
    })?;
    let header = map.parsed_header().clone();
    let size = header.data_offset + map.data().len() as u64;
    data_extent(options, &header, size)?;
    Ok(header)
}
