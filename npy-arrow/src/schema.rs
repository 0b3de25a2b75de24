//! The dtype -> Arrow mapping: a [`Node`] tree per column (what the decoder and encoder walk),
//! its Arrow [`DataType`], and the metadata that brings the exact NumPy dtype back.
//!
//! Owns no byte handling: `decode.rs` and `encode.rs` walk the nodes made here.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit as ArrowUnit};

use super::foreign::restore::{self, Restore, Seen};
use npy_serde::dtype::{ByteOrder, DType, Scalar, TimeUnit};
use npy_serde::error::{Error, Result};
use npy_serde::header::Header;
use npy_serde::pyliteral;

/// Field and schema metadata key: the exact NumPy descr (as in a `.npy` header) of a column,
/// or, on the schema, of the whole array's element.
pub const DESCR_KEY: &str = "numpy.descr";
/// Field metadata key: the NumPy title of a record field.
pub const TITLE_KEY: &str = "numpy.title";
/// Schema metadata key: the array's shape, as a Python tuple (`(3,)`, `(2, 4)`, `()`).
pub const SHAPE_KEY: &str = "numpy.shape";
/// Schema metadata key: `True` if the file was in Fortran order (its rows are given in
/// logical C order either way).
pub const FORTRAN_KEY: &str = "numpy.fortran_order";
/// Field metadata key on a datetime column kept as Int64: the NumPy unit of its raw counts
/// (`Y`, `M`, `10ps`, ...; empty for the generic unit).
pub const UNIT_KEY: &str = "numpy.unit";
/// The column name of a plain (non-record) array.
pub const PLAIN_COLUMN: &str = "value";

/// What a datetime column becomes in Arrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeTarget {
    /// Days since the epoch (`M8[D]`, `M8[W]`).
    Date32,
    /// An Arrow timestamp in `unit`.
    Timestamp(ArrowUnit),
    /// An Arrow duration in `unit`.
    Duration(ArrowUnit),
    /// The raw int64 count (units Arrow cannot hold exactly: Y, M, ps, fs, as, generic).
    Raw,
}

/// How one value of a column is laid out in the record bytes, and what it becomes.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// `b1`: Boolean (a byte other than 0 or 1 is an error).
    Bool,
    /// Integers and `f2`/`f4`/`f8`: the same bytes, swapped if the file's order is not native.
    Fixed {
        width: usize,
        swap: bool,
        dt: DataType,
    },
    /// `f16` (x87 long double in 16 bytes) as Float64, rounded.
    LongDouble { big: bool },
    /// Complex: a struct {real, imag} of the part (`Fixed` or `LongDouble`) at offsets 0 and
    /// `half`.
    Complex { part: Box<Node>, half: usize },
    /// `S<n>`: Binary, trailing NULs stripped.
    Bytes(usize),
    /// `U<n>`: Utf8, trailing NULs stripped.
    Unicode { chars: usize, big: bool },
    /// `V<n>`: FixedSizeBinary.
    Void(usize),
    /// `M8`/`m8`: the count times `factor`, as `target`; NaT is null.
    Time {
        big: bool,
        factor: i64,
        target: TimeTarget,
    },
    /// One axis of a subarray: `len` items, `stride` bytes apart.
    List {
        child: Box<Node>,
        len: usize,
        stride: usize,
        item: Arc<Field>,
    },
    /// A nested record: its fields at their offsets.
    Struct {
        fields: Vec<(usize, Node)>,
        arrow: Fields,
    },
}

impl Node {
    /// The node of a dtype (a column value).
    pub(crate) fn of(dt: &DType) -> Result<Node> {
        Ok(match dt {
            DType::Plain(p) => {
                let big = p.order() == ByteOrder::Big;
                let swap = p.order().needs_swap();
                let fixed = |width, dt| Node::Fixed { width, swap, dt };
                match p.scalar() {
                    Scalar::Bool => Node::Bool,
                    Scalar::I8 => fixed(1, DataType::Int8),
                    Scalar::I16 => fixed(2, DataType::Int16),
                    Scalar::I32 => fixed(4, DataType::Int32),
                    Scalar::I64 => fixed(8, DataType::Int64),
                    Scalar::U8 => fixed(1, DataType::UInt8),
                    Scalar::U16 => fixed(2, DataType::UInt16),
                    Scalar::U32 => fixed(4, DataType::UInt32),
                    Scalar::U64 => fixed(8, DataType::UInt64),
                    Scalar::F16 => fixed(2, DataType::Float16),
                    Scalar::F32 => fixed(4, DataType::Float32),
                    Scalar::F64 => fixed(8, DataType::Float64),
                    Scalar::LongDouble => Node::LongDouble { big },
                    Scalar::Complex64 => Node::Complex {
                        part: Box::new(fixed(4, DataType::Float32)),
                        half: 4,
                    },
                    Scalar::Complex128 => Node::Complex {
                        part: Box::new(fixed(8, DataType::Float64)),
                        half: 8,
                    },
                    Scalar::ComplexLongDouble => Node::Complex {
                        part: Box::new(Node::LongDouble { big }),
                        half: 16,
                    },
                    Scalar::Bytes(n) => Node::Bytes(n),
                    Scalar::Unicode(n) => Node::Unicode { chars: n, big },
                    Scalar::Void(n) => {
                        i32::try_from(n).map_err(|_| Error::overflow("a V itemsize"))?;
                        Node::Void(n)
                    }
                    Scalar::DateTime(u, m) => {
                        let (target, factor) = time_target(u, m, true);
                        Node::Time {
                            big,
                            factor,
                            target,
                        }
                    }
                    Scalar::TimeDelta(u, m) => {
                        let (target, factor) = time_target(u, m, false);
                        Node::Time {
                            big,
                            factor,
                            target,
                        }
                    }
                }
            }
            DType::Array(base, shape) => lists(Node::of(base)?, base.itemsize(), shape)?,
            DType::Record(r) => {
                let mut fields = Vec::with_capacity(r.fields().len());
                let mut arrow = Vec::with_capacity(r.fields().len());
                for f in r.fields() {
                    let node = Node::of(&f.dtype)?;
                    arrow.push(Arc::new(field_for(
                        &f.name,
                        f.title.as_deref(),
                        &f.dtype,
                        &node,
                    )));
                    fields.push((f.offset, node));
                }
                Node::Struct {
                    fields,
                    arrow: Fields::from(arrow),
                }
            }
        })
    }

    /// The Arrow type of the column values.
    pub(crate) fn data_type(&self) -> DataType {
        match self {
            Node::Bool => DataType::Boolean,
            Node::Fixed { dt, .. } => dt.clone(),
            Node::LongDouble { .. } => DataType::Float64,
            Node::Complex { part, .. } => DataType::Struct(complex_fields(part.data_type())),
            Node::Bytes(_) => DataType::Binary,
            Node::Unicode { .. } => DataType::Utf8,
            Node::Void(n) => DataType::FixedSizeBinary(*n as i32),
            Node::Time { target, .. } => match target {
                TimeTarget::Date32 => DataType::Date32,
                TimeTarget::Timestamp(u) => DataType::Timestamp(*u, None),
                TimeTarget::Duration(u) => DataType::Duration(*u),
                TimeTarget::Raw => DataType::Int64,
            },
            Node::List { len, item, .. } => DataType::FixedSizeList(item.clone(), *len as i32),
            Node::Struct { arrow, .. } => DataType::Struct(arrow.clone()),
        }
    }
}

/// The struct fields of a complex column.
pub(crate) fn complex_fields(part: DataType) -> Fields {
    Fields::from(vec![
        Field::new("real", part.clone(), false),
        Field::new("imag", part, false),
    ])
}

/// Nested lists, one per axis of `shape`, around `base` (items of `size` bytes).
pub(crate) fn lists(base: Node, size: usize, shape: &[u64]) -> Result<Node> {
    let mut node = base;
    let mut stride = size;
    for &d in shape.iter().rev() {
        let len = i32::try_from(d).map_err(|_| Error::overflow("a subarray axis"))? as usize;
        let item = Arc::new(Field::new("item", node.data_type(), nullable(&node)));
        node = Node::List {
            child: Box::new(node),
            len,
            stride,
            item,
        };
        stride = stride.saturating_mul(len);
    }
    Ok(node)
}

/// Datetimes (NaT) are the only values that can be null.
pub(crate) fn nullable(node: &Node) -> bool {
    matches!(node, Node::Time { .. })
}

/// The Arrow target of a datetime unit, and the factor its counts are multiplied by.
fn time_target(unit: TimeUnit, mult: u32, datetime: bool) -> (TimeTarget, i64) {
    if mult != 1 {
        // `M8[25ms]` holds counts up to i64::MAX: scaled, they would not fit.
        return (TimeTarget::Raw, 1);
    }
    let m = 1i64;
    let wrap = |u| {
        if datetime {
            TimeTarget::Timestamp(u)
        } else {
            TimeTarget::Duration(u)
        }
    };
    match unit {
        TimeUnit::Day if datetime => (TimeTarget::Date32, m),
        TimeUnit::Week if datetime => (TimeTarget::Date32, 7 * m),
        TimeUnit::Week => (wrap(ArrowUnit::Second), 604_800 * m),
        TimeUnit::Day => (wrap(ArrowUnit::Second), 86_400 * m),
        TimeUnit::Hour => (wrap(ArrowUnit::Second), 3_600 * m),
        TimeUnit::Minute => (wrap(ArrowUnit::Second), 60 * m),
        TimeUnit::Second => (wrap(ArrowUnit::Second), m),
        TimeUnit::Millisecond => (wrap(ArrowUnit::Millisecond), m),
        TimeUnit::Microsecond => (wrap(ArrowUnit::Microsecond), m),
        TimeUnit::Nanosecond => (wrap(ArrowUnit::Nanosecond), m),
        TimeUnit::Generic
        | TimeUnit::Year
        | TimeUnit::Month
        | TimeUnit::Picosecond
        | TimeUnit::Femtosecond
        | TimeUnit::Attosecond => (TimeTarget::Raw, 1),
    }
}

/// The Arrow field of a column: its type, nullability and the NumPy metadata.
pub(crate) fn field_for(name: &str, title: Option<&str>, dt: &DType, node: &Node) -> Field {
    let mut meta = HashMap::new();
    meta.insert(DESCR_KEY.to_string(), dt.descr());
    if let Some(t) = title {
        meta.insert(TITLE_KEY.to_string(), t.to_string());
    }
    if let DType::Plain(p) = dt
        && let Scalar::DateTime(u, m) | Scalar::TimeDelta(u, m) = p.scalar()
        && matches!(
            node,
            Node::Time {
                target: TimeTarget::Raw,
                ..
            }
        )
    {
        let unit = match (u, m) {
            (TimeUnit::Generic, _) => String::new(),
            (u, 1) => u.code().to_string(),
            (u, m) => format!("{m}{}", u.code()),
        };
        meta.insert(UNIT_KEY.to_string(), unit);
    }
    Field::new(name, node.data_type(), nullable(node)).with_metadata(meta)
}

/// One top-level column: its field, node, and offset inside an element.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub(crate) field: Arc<Field>,
    pub(crate) node: Node,
    pub(crate) offset: usize,
    /// What the reader does after decoding it (an Arrow type from its title, a mask folded
    /// into its nulls).
    pub(crate) restore: Option<Restore>,
}

/// An array's layout as rows of columns: one row per element (1-D), per item along the first
/// axis (N-d, the rest of the axes as nested fixed-size lists), or one row (0-d).
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) columns: Vec<Column>,
    /// Elements per row (product of the shape after the first axis).
    pub(crate) per_row: u64,
    /// Bytes per row.
    pub(crate) row_bytes: usize,
    /// Rows in the array.
    pub(crate) rows: u64,
    /// The element dtype (a top-level subarray folded into the shape).
    pub(crate) elem: DType,
    /// The logical shape (with a top-level subarray folded in).
    pub(crate) shape: Vec<u64>,
    /// Schema-level metadata.
    pub(crate) meta: HashMap<String, String>,
}

impl Layout {
    /// The layout of the array `h` describes, as read: the columns titled with an Arrow type
    /// restored to it, mask fields folded into their columns (see `foreign::restore`).
    pub(crate) fn of(h: &Header) -> Result<Layout> {
        Layout::build(h, true)
    }

    /// The layout of the array `h` describes, as stored: every field a column of its dtype's
    /// default type (what the writer encodes).
    pub(crate) fn stored(h: &Header) -> Result<Layout> {
        Layout::build(h, false)
    }

    fn build(h: &Header, restore: bool) -> Result<Layout> {
        let mut elem = h.dtype.clone();
        let mut shape = h.shape.clone();
        while let DType::Array(base, dims) = elem {
            shape.extend_from_slice(&dims);
            elem = *base;
        }
        let rows = if shape.is_empty() { 1 } else { shape[0] };
        let inner: &[u64] = if shape.is_empty() { &[] } else { &shape[1..] };
        let per_row = inner
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| Error::overflow("the elements per row"))?;
        let row_bytes = per_row
            .checked_mul(elem.itemsize() as u64)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| Error::overflow("the bytes per row"))?;
        let isz = elem.itemsize();
        let mut columns = Vec::new();
        match &elem {
            DType::Record(r) => {
                for f in r.fields() {
                    let node = lists(Node::of(&f.dtype)?, isz, inner)?;
                    // `lists` strides items by the element size: a field of item j sits at
                    // j * itemsize + offset.
                    let field = field_for(&f.name, f.title.as_deref(), &f.dtype, &node);
                    columns.push(Column {
                        field: Arc::new(field),
                        node,
                        offset: f.offset,
                        restore: None,
                    });
                }
                if restore && inner.is_empty() {
                    columns = restored(columns);
                }
            }
            other => {
                let node = lists(Node::of(other)?, isz, inner)?;
                let field = field_for(PLAIN_COLUMN, None, other, &node);
                columns.push(Column {
                    field: Arc::new(field),
                    node,
                    offset: 0,
                    restore: None,
                });
            }
        }
        let mut meta = HashMap::new();
        meta.insert(DESCR_KEY.to_string(), elem.descr());
        meta.insert(SHAPE_KEY.to_string(), pyliteral::repr_shape(&shape));
        meta.insert(
            FORTRAN_KEY.to_string(),
            if h.fortran_order { "True" } else { "False" }.to_string(),
        );
        Ok(Layout {
            columns,
            per_row,
            row_bytes,
            rows,
            elem,
            shape,
            meta,
        })
    }

    /// The Arrow schema of the columns at `indices`.
    pub(crate) fn schema(&self, indices: &[usize]) -> Schema {
        let fields: Vec<Arc<Field>> = indices
            .iter()
            .map(|&i| self.columns[i].field.clone())
            .collect();
        Schema::new_with_metadata(fields, self.meta.clone())
    }
}

/// The columns of a 1-D record array with the Arrow types their `arrow:NAME:TYPE` titles name,
/// and their mask fields folded into them (see `foreign::restore`).
fn restored(columns: Vec<Column>) -> Vec<Column> {
    let seen: Vec<Seen<'_>> = columns
        .iter()
        .map(|c| Seen {
            name: c.field.name(),
            title: c.field.metadata().get(TITLE_KEY).map(String::as_str),
            data_type: c.field.data_type(),
            offset: c.offset,
        })
        .collect();
    let plan = restore::plan(&seen);
    drop(seen);
    columns
        .into_iter()
        .zip(plan)
        .filter_map(|(mut c, p)| {
            let r = p.ok()?;
            if let Some(r) = r {
                c.field = Arc::new(restore::field(&c.field, &r));
                c.restore = Some(r);
            }
            Some(c)
        })
        .collect()
}

/// The Arrow schema a `.npy` array with this header maps to (all columns); see the table in
/// the [module docs](crate).
///
/// ```
/// use npy_arrow::schema_for;
/// use npy_serde::Header;
/// let h = Header::new("[('id', '<i8'), ('x', '>f4', (3,))]".parse()?, vec![10]);
/// let schema = schema_for(&h)?;
/// assert_eq!(schema.field(0).data_type(), &arrow_schema::DataType::Int64);
/// assert_eq!(schema.field(1).metadata()["numpy.descr"], "('>f4', (3,))");
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn schema_for(header: &Header) -> Result<Schema> {
    let layout = Layout::of(header)?;
    let all: Vec<usize> = (0..layout.columns.len()).collect();
    Ok(layout.schema(&all))
}

/// The Arrow type one value of `dtype` maps to (a record is a struct, a subarray nested
/// fixed-size lists).
///
/// ```
/// use arrow_schema::{DataType, TimeUnit};
/// let dt: npy_serde::DType = "<M8[ns]".parse()?;
/// assert_eq!(npy_arrow::data_type_for(&dt)?, DataType::Timestamp(TimeUnit::Nanosecond, None));
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn data_type_for(dtype: &DType) -> Result<DataType> {
    Ok(Node::of(dtype)?.data_type())
}
