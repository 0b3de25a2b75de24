//! The dtype model: every array element type NumPy writes without pickles, with exact itemsizes
//! and field offsets, and its `descr` text exactly as NumPy writes it.
//!
//! ```
//! use npy_serde::dtype::{DType, Scalar};
//!
//! let dt: DType = "[('id', '<i8'), ('', '|V4'), ('v', '<f4', (3,))]".parse()?;
//! let rec = dt.as_record().unwrap();
//! assert_eq!(rec.itemsize(), 24);
//! assert_eq!(rec.fields()[1].name, "v");
//! assert_eq!(rec.fields()[1].offset, 12);
//! assert_eq!(dt.descr(), "[('id', '<i8'), ('', '|V4'), ('v', '<f4', (3,))]");
//! assert_eq!(DType::scalar(Scalar::F64).descr(), "'<f8'");
//! # Ok::<(), npy_serde::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::pyliteral::{self, LiteralOptions, Py, PyKind};

mod scalar;

pub(crate) use scalar::OBJECT_REFUSAL;

/// Whether `e` is the dtype model's refusal of an object type (this crate's own error, made
/// with [`OBJECT_REFUSAL`]): what tells an object array's header from a broken one.
pub(crate) fn is_object_refusal(e: &Error) -> bool {
    matches!(e.kind(), crate::error::ErrorKind::UnsupportedDType(m) if m == OBJECT_REFUSAL)
}
pub use scalar::{ByteOrder, PlainType, Scalar, TimeUnit, MAX_ITEMSIZE};

/// One field of a record dtype.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// The field's name (a dict key when a record is deserialized).
    pub name: String,
    /// NumPy's optional title (`(('title', 'name'), descr)` in the descr).
    pub title: Option<String>,
    /// The field's type.
    pub dtype: DType,
    /// Byte offset of the field inside the record.
    pub offset: usize,
}

impl Field {
    /// A field without a title at the given offset.
    pub fn new(name: impl Into<String>, dtype: DType, offset: usize) -> Self {
        Field {
            name: name.into(),
            title: None,
            dtype,
            offset,
        }
    }
}

/// A structured (record) dtype: named fields at byte offsets inside a fixed-size item.
///
/// Bytes not covered by a field are padding: NumPy's descr lists them as `('', '|Vn')` entries,
/// which this model regenerates from the offsets.
///
/// Two records are equal when their layouts are: fields (names, titles, types, offsets) and
/// itemsize. Whether a record was built with [`Record::aligned`] is not part of equality, as
/// in NumPy (and a file does not record it).
#[derive(Clone, Debug)]
pub struct Record {
    fields: Vec<Field>,
    itemsize: usize,
    aligned: bool,
}

impl PartialEq for Record {
    fn eq(&self, other: &Self) -> bool {
        self.itemsize == other.itemsize && self.fields == other.fields
    }
}

impl Eq for Record {}

impl std::hash::Hash for Record {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.fields.hash(state);
        self.itemsize.hash(state);
    }
}

impl Record {
    /// A record from fields at explicit offsets and a total itemsize.
    ///
    /// Fields must be in increasing offset order, must not overlap, must fit in `itemsize`, and
    /// must have distinct names (and titles): the layouts NumPy can save.
    pub fn new(fields: Vec<Field>, itemsize: usize) -> Result<Record> {
        let mut end = 0usize;
        // A set, not a scan of the earlier fields: a hostile header may list 10^5 fields, and
        // checking each against all the others would take time quadratic in the header.
        let mut names = std::collections::HashSet::with_capacity(fields.len());
        for f in fields.iter() {
            if !names.insert(f.name.as_str()) {
                return Err(Error::descr(format!(
                    "field {} occurs more than once",
                    pyliteral::repr_str(&f.name)
                )));
            }
            if f.offset < end {
                return Err(Error::descr(format!(
                    "field {} at offset {} overlaps the previous field or is out of order \
                     (NumPy cannot save such a layout)",
                    pyliteral::repr_str(&f.name),
                    f.offset
                )));
            }
            end = f
                .offset
                .checked_add(f.dtype.itemsize())
                .ok_or_else(|| Error::overflow("record itemsize"))?;
        }
        if end > itemsize {
            return Err(Error::descr(format!(
                "fields need {end} bytes but the record's itemsize is {itemsize}"
            )));
        }
        if itemsize as u64 > MAX_ITEMSIZE {
            return Err(Error::limit(
                "record itemsize",
                MAX_ITEMSIZE,
                itemsize as u64,
            ));
        }
        Ok(Record {
            fields,
            itemsize,
            aligned: false,
        })
    }

    /// A packed record (no padding), like `np.dtype([(name, dtype), ...])`.
    pub fn packed<S: Into<String>>(fields: impl IntoIterator<Item = (S, DType)>) -> Result<Record> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        for (name, dtype) in fields {
            let size = dtype.itemsize();
            out.push(Field::new(name, dtype, offset));
            offset = offset
                .checked_add(size)
                .ok_or_else(|| Error::overflow("record itemsize"))?;
        }
        Record::new(out, offset)
    }

    /// A C-aligned record, identical to `np.dtype([...], align=True)` and to `#[repr(C)]`: each
    /// field at the next multiple of its alignment, the itemsize rounded up to the largest one.
    pub fn aligned<S: Into<String>>(
        fields: impl IntoIterator<Item = (S, DType)>,
    ) -> Result<Record> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        let mut max_align = 1usize;
        for (name, dtype) in fields {
            let a = dtype.alignment();
            max_align = max_align.max(a);
            offset = round_up(offset, a).ok_or_else(|| Error::overflow("record itemsize"))?;
            let size = dtype.itemsize();
            out.push(Field::new(name, dtype, offset));
            offset = offset
                .checked_add(size)
                .ok_or_else(|| Error::overflow("record itemsize"))?;
        }
        let itemsize =
            round_up(offset, max_align).ok_or_else(|| Error::overflow("record itemsize"))?;
        let mut r = Record::new(out, itemsize)?;
        r.aligned = true;
        Ok(r)
    }

    /// The fields, in offset order (padding is not a field).
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field with this name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Bytes per record, padding included.
    pub fn itemsize(&self) -> usize {
        self.itemsize
    }

    /// True if built with [`Record::aligned`] (NumPy's `align=True`; not recorded in files).
    pub fn is_aligned(&self) -> bool {
        self.aligned
    }

    /// Alignment of this record inside another aligned record: the largest field alignment for
    /// an aligned record, 1 for a packed one (as NumPy).
    pub fn alignment(&self) -> usize {
        if self.aligned {
            self.fields
                .iter()
                .map(|f| f.dtype.alignment())
                .max()
                .unwrap_or(1)
        } else {
            1
        }
    }

    /// Gives the field named `field` a NumPy title (a second name for the same field).
    pub fn with_title(mut self, field: &str, title: impl Into<String>) -> Result<Record> {
        let title = title.into();
        if self
            .fields
            .iter()
            .any(|f| f.name == title || f.title.as_deref() == Some(&title))
        {
            return Err(Error::descr(format!(
                "title {} is already a field name or title",
                pyliteral::repr_str(&title)
            )));
        }
        let f = self
            .fields
            .iter_mut()
            .find(|f| f.name == field)
            .ok_or_else(|| {
                Error::descr(format!("no field named {}", pyliteral::repr_str(field)))
            })?;
        f.title = Some(title);
        Ok(self)
    }
}

fn round_up(x: usize, align: usize) -> Option<usize> {
    let a = align.max(1);
    x.checked_add(a - 1).map(|v| v / a * a)
}

/// An element type: a scalar, a fixed-shape subarray, or a record.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// A scalar with its byte order.
    Plain(PlainType),
    /// A subarray: `shape` elements of `base` in C order (a field `('v', '<f4', (3,))`).
    Array(Box<DType>, Vec<u64>),
    /// A structured record.
    Record(Record),
}

impl DType {
    /// A scalar in native byte order (`<` on x86-64), as `np.dtype` makes it.
    pub fn scalar(s: Scalar) -> DType {
        DType::Plain(PlainType::new(s, ByteOrder::NATIVE))
    }

    /// A scalar in the given byte order (normalised like NumPy: `>u1` is `|u1`).
    pub fn with_order(s: Scalar, order: ByteOrder) -> DType {
        DType::Plain(PlainType::new(s, order))
    }

    /// A subarray of `base` with `shape`. An empty shape returns `base` itself (as NumPy).
    pub fn array(base: DType, shape: Vec<u64>) -> Result<DType> {
        if shape.is_empty() {
            return Ok(base);
        }
        if base.itemsize() == 0 && !matches!(base, DType::Record(_)) {
            // NumPy: "invalid itemsize in generic type tuple" (S0, U0, V0, empty subarrays).
            return Err(Error::descr(format!(
                "a subarray of the zero-size type {} is invalid (NumPy refuses it too)",
                base.descr()
            )));
        }
        let n = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| n.checked_mul(base.itemsize() as u64))
            .ok_or_else(|| Error::overflow("subarray size"))?;
        if n > MAX_ITEMSIZE {
            return Err(Error::limit("subarray itemsize", MAX_ITEMSIZE, n));
        }
        Ok(DType::Array(Box::new(base), shape))
    }

    /// Bytes per element.
    pub fn itemsize(&self) -> usize {
        match self {
            DType::Plain(p) => p.itemsize(),
            DType::Record(r) => r.itemsize(),
            DType::Array(base, shape) => {
                // Checked at construction; saturating keeps this total for hand-built values.
                let n = shape.iter().fold(1usize, |acc, &d| {
                    acc.saturating_mul(usize::try_from(d).unwrap_or(usize::MAX))
                });
                n.saturating_mul(base.itemsize())
            }
        }
    }

    /// Alignment in an `align=True` struct.
    pub fn alignment(&self) -> usize {
        match self {
            DType::Plain(p) => p.scalar().alignment(),
            DType::Record(r) => r.alignment(),
            DType::Array(base, _) => base.alignment(),
        }
    }

    /// The record, if this is one.
    pub fn as_record(&self) -> Option<&Record> {
        match self {
            DType::Record(r) => Some(r),
            _ => None,
        }
    }

    /// The scalar type, if this is one.
    pub fn as_plain(&self) -> Option<PlainType> {
        match self {
            DType::Plain(p) => Some(*p),
            _ => None,
        }
    }

    /// The same dtype with every multi-byte scalar in `order` (layout unchanged).
    /// `ByteOrder::NotApplicable` means native order, as NumPy's `=` and `|` do for such types.
    pub fn to_byte_order(&self, order: ByteOrder) -> DType {
        match self {
            DType::Plain(p) => DType::Plain(PlainType::new(p.scalar(), order)),
            DType::Array(b, s) => DType::Array(Box::new(b.to_byte_order(order)), s.clone()),
            DType::Record(r) => DType::Record(Record {
                fields: r
                    .fields
                    .iter()
                    .map(|f| Field {
                        dtype: f.dtype.to_byte_order(order),
                        ..f.clone()
                    })
                    .collect(),
                itemsize: r.itemsize,
                aligned: r.aligned,
            }),
        }
    }

    /// The descr as NumPy writes it in a header, as Python source text: `'<f8'` for a scalar,
    /// a list of tuples for a record (padding as `('', '|Vn')`), `(base, shape)` for a subarray.
    pub fn descr(&self) -> String {
        let mut out = String::new();
        self.write_descr(&mut out);
        out
    }

    fn write_descr(&self, out: &mut String) {
        match self {
            DType::Plain(p) => out.push_str(&pyliteral::repr_str(&p.typestr())),
            DType::Array(base, shape) => {
                out.push('(');
                base.write_descr(out);
                out.push_str(", ");
                out.push_str(&pyliteral::repr_shape(shape));
                out.push(')');
            }
            DType::Record(r) => {
                out.push('[');
                let mut pos = 0usize;
                let mut first = true;
                let mut sep = |out: &mut String| {
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                };
                for f in &r.fields {
                    if f.offset > pos {
                        sep(out);
                        out.push_str(&format!("('', '|V{}')", f.offset - pos));
                    }
                    sep(out);
                    out.push('(');
                    match &f.title {
                        Some(t) => out.push_str(&format!(
                            "({}, {})",
                            pyliteral::repr_str(t),
                            pyliteral::repr_str(&f.name)
                        )),
                        None => out.push_str(&pyliteral::repr_str(&f.name)),
                    }
                    out.push_str(", ");
                    match &f.dtype {
                        DType::Array(base, shape) => {
                            base.write_descr(out);
                            out.push_str(", ");
                            out.push_str(&pyliteral::repr_shape(shape));
                        }
                        other => other.write_descr(out),
                    }
                    out.push(')');
                    pos = f.offset + f.dtype.itemsize();
                }
                if r.itemsize > pos {
                    sep(out);
                    out.push_str(&format!("('', '|V{}')", r.itemsize - pos));
                }
                out.push(']');
            }
        }
    }

    /// Parses descr text (a Python literal, as in a header) with default limits.
    pub fn from_descr(text: &str) -> Result<DType> {
        let opts = LiteralOptions {
            max_depth: DEFAULT_MAX_DEPTH,
            allow_long_suffix: false,
        };
        let py = pyliteral::parse_literal(text, opts, 0).map_err(|e| {
            if e.kind().code() == "invalid_header" {
                Error::descr(e.kind().to_string().replace("invalid .npy header: ", ""))
            } else {
                e
            }
        })?;
        from_py(&py, text, 0, DEFAULT_MAX_DIMS)
    }
}

/// Default nesting limit for header literals (containers inside containers).
pub(crate) const DEFAULT_MAX_DEPTH: usize = 128;
/// Default (and NumPy's) limit on the number of dimensions.
pub(crate) const DEFAULT_MAX_DIMS: usize = 64;

impl fmt::Display for DType {
    /// Displays the descr text, e.g. `'<f8'` or `[('x', '<f8')]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.descr())
    }
}

impl FromStr for DType {
    type Err = Error;
    /// Parses descr text: `"'<f8'"`, `"<f8"` (a bare type string), or a record list.
    fn from_str(s: &str) -> Result<DType> {
        let t = s.trim();
        if t.starts_with(['[', '(', '\'', '"']) {
            DType::from_descr(t)
        } else {
            PlainType::from_typestr(t).map(DType::Plain)
        }
    }
}

/// Converts a parsed descr literal into a dtype, as NumPy's `descr_to_dtype`.
pub(crate) fn from_py(py: &Py, text: &str, base: u64, max_dims: usize) -> Result<DType> {
    let at = |e: Error, p: &Py| e.at_byte(base + p.start as u64);
    match &py.kind {
        PyKind::Str(s) => PlainType::from_typestr(s).map(DType::Plain).map_err(|e| at(e, py)),
        PyKind::Tuple(items) if items.len() == 2 => {
            let inner = from_py(&items[0], text, base, max_dims)?;
            let shape = shape_from_py(&items[1], text, base, max_dims)?;
            DType::array(inner, shape).map_err(|e| at(e, py))
        }
        PyKind::List(entries) => {
            let mut fields = Vec::with_capacity(entries.len().min(1024));
            let mut offset = 0usize;
            for entry in entries {
                let PyKind::Tuple(parts) = &entry.kind else {
                    return Err(at(
                        Error::descr(format!(
                            "record entries must be (name, descr) or (name, descr, shape) tuples, found {}",
                            entry.snippet(text)
                        )),
                        entry,
                    ));
                };
                if parts.len() != 2 && parts.len() != 3 {
                    return Err(at(
                        Error::descr(format!(
                            "record entries must have 2 or 3 items, found {}",
                            entry.snippet(text)
                        )),
                        entry,
                    ));
                }
                let (title, name) = match &parts[0].kind {
                    PyKind::Str(n) => (None, n.clone()),
                    PyKind::Tuple(tn) if tn.len() == 2 => match (&tn[0].kind, &tn[1].kind) {
                        (PyKind::Str(t), PyKind::Str(n)) => (Some(t.clone()), n.clone()),
                        _ => {
                            return Err(at(
                                Error::descr(format!(
                                    "a field title and name must be strings, found {}",
                                    parts[0].snippet(text)
                                )),
                                &parts[0],
                            ))
                        }
                    },
                    _ => {
                        return Err(at(
                            Error::descr(format!(
                                "a field name must be a string or a (title, name) tuple, found {}",
                                parts[0].snippet(text)
                            )),
                            &parts[0],
                        ))
                    }
                };
                let mut dt = from_py(&parts[1], text, base, max_dims)?;
                if parts.len() == 3 {
                    let shape = shape_from_py(&parts[2], text, base, max_dims)?;
                    dt = DType::array(dt, shape).map_err(|e| at(e, &parts[2]))?;
                }
                let size = dt.itemsize();
                let is_pad = name.is_empty()
                    && title.is_none()
                    && matches!(dt, DType::Plain(p) if matches!(p.scalar(), Scalar::Void(_)));
                if !is_pad {
                    fields.push(Field {
                        name,
                        title,
                        dtype: dt,
                        offset,
                    });
                }
                offset = offset
                    .checked_add(size)
                    .filter(|o| (*o as u64) <= MAX_ITEMSIZE)
                    .ok_or_else(|| at(Error::limit("record itemsize", MAX_ITEMSIZE, u64::MAX), entry))?;
            }
            Record::new(fields, offset)
                .map(DType::Record)
                .map_err(|e| at(e, py))
        }
        _ => Err(at(
            Error::descr(format!(
                "a descr must be a type string, a list of fields or a (descr, shape) tuple, found {} {}",
                py.type_name(),
                py.snippet(text)
            )),
            py,
        )),
    }
}

/// A shape: a tuple of non-negative ints (a bare int means a 1-tuple, as `np.dtype((t, 3))`).
fn shape_from_py(py: &Py, text: &str, base: u64, max_dims: usize) -> Result<Vec<u64>> {
    let bad = || {
        Error::descr(format!(
            "a subarray shape must be a tuple of non-negative integers, found {}",
            py.snippet(text)
        ))
        .at_byte(base + py.start as u64)
    };
    let items: Vec<&Py> = match &py.kind {
        PyKind::Int(_) => vec![py],
        PyKind::Tuple(v) => v.iter().collect(),
        _ => return Err(bad()),
    };
    if items.len() > max_dims {
        return Err(
            Error::limit("subarray dimensions", max_dims as u64, items.len() as u64)
                .at_byte(base + py.start as u64),
        );
    }
    items
        .iter()
        .map(|p| match p.kind {
            PyKind::Int(Some(v)) if v >= 0 => u64::try_from(v).map_err(|_| bad()),
            _ => Err(bad()),
        })
        .collect()
}

#[cfg(test)]
mod tests;
