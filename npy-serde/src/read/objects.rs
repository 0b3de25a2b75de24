//! Object arrays (`descr '|O'`, record dtypes with an `O` field, NumPy 2's `StringDType`):
//! the header read without the dtype model, the data read by the data-only pickle reader
//! ([`crate::pickle`]) behind [`ReaderBuilder::allow_pickle_data`].

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::options::ReaderBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::header::{header_literal_unchecked, Literal};
use crate::pickle::{array_elements, load, not_an_array, ObjectArray, PyValue};

/// Whether a descr literal names an object dtype (`'|O'`, `'O'`, or a record with one).
fn has_object(descr: &Literal) -> bool {
    match descr {
        Literal::Str(s) => s.trim_start_matches(['|', '<', '>', '=']).starts_with('O'),
        Literal::List(v) | Literal::Tuple(v) => v.iter().any(has_object),
        _ => false,
    }
}

fn refused() -> Error {
    Error::new(ErrorKind::UnsupportedDType(
        "object arrays ('|O') hold Python pickles: read their data (no code runs) with \
         ReaderBuilder::allow_pickle_data(true)"
            .into(),
    ))
}

/// What the header of an object array says.
struct ObjectHeader {
    shape: Vec<u64>,
    fortran_order: bool,
    /// The offset of the first data byte (the pickle).
    offset: u64,
}

/// The header of a whole `.npy` file if its dtype holds objects (an error if reading them is
/// not allowed), `None` if it does not.
fn object_header(bytes: &[u8], rb: &ReaderBuilder) -> Result<Option<ObjectHeader>> {
    let Ok((lit, _, offset)) = header_literal_unchecked(bytes, &rb.limits) else {
        return Ok(None);
    };
    match lit.get("descr") {
        Some(d) if has_object(d) => {}
        _ => return Ok(None),
    }
    if !rb.allow_pickle_data {
        return Err(refused());
    }
    let fortran_order = matches!(lit.get("fortran_order"), Some(Literal::Bool(true)));
    let shape: Vec<u64> = match lit.get("shape") {
        Some(Literal::Tuple(v)) => v
            .iter()
            .map(|d| match d {
                Literal::Int(n) => u64::try_from(*n).ok(),
                _ => None,
            })
            .collect::<Option<_>>()
            .ok_or_else(|| Error::header("the shape is not a tuple of non-negative ints"))?,
        _ => return Err(Error::header("the header has no shape tuple")),
    };
    Ok(Some(ObjectHeader {
        shape,
        fortran_order,
        offset,
    }))
}

/// The error for a pickled array whose shape is not the header's.
fn shape_differs(pickled: &[u64], header: &[u64], offset: u64) -> Error {
    Error::new(ErrorKind::Pickle(format!(
        "the pickled array's shape {pickled:?} is not the header's {header:?}"
    )))
    .at_byte(offset)
}

/// The object array in a whole `.npy` file, or `None` if its dtype holds no object.
pub(crate) fn object_array(bytes: &[u8], rb: &ReaderBuilder) -> Result<Option<ObjectArray>> {
    let Some(h) = object_header(bytes, rb)? else {
        return Ok(None);
    };
    let offset = h.offset;
    let data = bytes.get(offset as usize..).unwrap_or(&[]);
    let value = load(data, &rb.pickle).map_err(|e| shift(e, offset))?;
    let PyValue::Array(a) = value else {
        return Err(not_an_array(&value).at_byte(offset));
    };
    if a.shape != h.shape {
        return Err(shape_differs(&a.shape, &h.shape, offset));
    }
    Ok(Some(ObjectArray {
        descr: a.descr,
        shape: h.shape,
        fortran_order: h.fortran_order,
        values: a.values,
    }))
}

/// Each element of the object array in a whole `.npy` file as a `T`, in logical C order, or
/// `None` if its dtype holds no object. The elements are handed over one at a time, strings
/// moved out of the pickle's graph ([`array_elements`]): no tree of every value is built.
fn object_elements<'de, T: Deserialize<'de>>(
    bytes: &[u8],
    rb: &ReaderBuilder,
) -> Result<Option<Vec<T>>> {
    let Some(h) = object_header(bytes, rb)? else {
        return Ok(None);
    };
    let offset = h.offset;
    let data = bytes.get(offset as usize..).unwrap_or(&[]);
    let mut out = Vec::new();
    let count = std::cell::Cell::new(0usize);
    let head = |_: &str, shape: &[u64]| {
        if shape != h.shape {
            // At the pickle's first byte: moved to the file's below.
            return Err(shape_differs(shape, &h.shape, 0));
        }
        // As many elements as the pickle holds (checked): the allocation is bounded by it.
        count.set(usize::try_from(shape.iter().product::<u64>()).unwrap_or(0));
        Ok(())
    };
    let mut i = 0u64;
    let r = array_elements(data, &rb.pickle, head, |v| {
        if i == 0 {
            out.reserve_exact(count.get());
        }
        out.push(T::deserialize(v).map_err(|e| e.at_record(i))?);
        i += 1;
        Ok(())
    });
    match r {
        // A value that does not convert: its record, as the other doors say.
        Err(e) if e.position().record.is_some() => Err(e),
        Err(e) => Err(shift(e, offset)),
        Ok(()) => Ok(Some(out)),
    }
}

/// An error's byte offset moved from the pickle's start to the file's.
fn shift(e: Error, offset: u64) -> Error {
    match e.position().byte {
        Some(b) => {
            let mut e = e;
            e = Error::new(e.into_kind()).at_byte(b + offset);
            e
        }
        None => e.at_byte(offset),
    }
}

/// The whole object array as one serde value, nested by its shape (as `ndarray.tolist()`).
pub(crate) fn whole<'de, T: Deserialize<'de>>(a: ObjectArray) -> Result<T> {
    T::deserialize(PyValue::Array(Box::new(crate::pickle::PyArray {
        descr: a.descr,
        shape: a.shape,
        values: a.values,
    })))
}

/// After a header error `err`: if the file is an object array, `read` it (or refuse it
/// naming the option), else `err`.
pub(crate) fn or_objects<R>(
    bytes: &[u8],
    rb: &ReaderBuilder,
    err: Error,
    read: impl FnOnce(ObjectArray) -> Result<R>,
) -> Result<R> {
    // Not allowed: the header's own error, which names the option, with its position.
    if !matches!(err.kind(), ErrorKind::UnsupportedDType(_)) || !rb.allow_pickle_data {
        return Err(err);
    }
    match object_array(bytes, rb)? {
        Some(a) => read(a),
        None => Err(err),
    }
}

/// After a header error `err`: if the file is an object array, its elements as `T`s (or a
/// refusal naming the option), else `err`.
pub(crate) fn or_elements<'de, T: Deserialize<'de>>(
    bytes: &[u8],
    rb: &ReaderBuilder,
    err: Error,
) -> Result<Vec<T>> {
    if !matches!(err.kind(), ErrorKind::UnsupportedDType(_)) || !rb.allow_pickle_data {
        return Err(err);
    }
    object_elements(bytes, rb)?.ok_or(err)
}

/// [`or_elements`] for a file at `path`.
pub(crate) fn or_elements_path<T: serde::de::DeserializeOwned>(
    path: &Path,
    rb: &ReaderBuilder,
    err: Error,
) -> Result<Vec<T>> {
    if !matches!(err.kind(), ErrorKind::UnsupportedDType(_)) || !rb.allow_pickle_data {
        return Err(err);
    }
    let bytes = std::fs::read(path)?;
    or_elements(&bytes, rb, err)
}

/// [`or_objects`] for a file at `path`.
pub(crate) fn or_objects_path<R>(
    path: &Path,
    rb: &ReaderBuilder,
    err: Error,
    read: impl FnOnce(ObjectArray) -> Result<R>,
) -> Result<R> {
    if !matches!(err.kind(), ErrorKind::UnsupportedDType(_)) || !rb.allow_pickle_data {
        return Err(err);
    }
    let bytes = std::fs::read(path)?;
    or_objects(&bytes, rb, err, read)
}

/// Whether a header error `err` is an object array's that `rb` allows reading as data.
pub(crate) fn readable(err: &Error, rb: &ReaderBuilder) -> bool {
    matches!(err.kind(), ErrorKind::UnsupportedDType(_)) && rb.allow_pickle_data
}

/// Keeps the bytes read through it while `on` (a header read by a streaming door, whose bytes
/// an object array needs again: its data is one pickle, read whole).
pub(crate) struct Recorder<R> {
    pub(crate) inner: R,
    pub(crate) seen: Vec<u8>,
    on: bool,
}

impl<R: Read> Recorder<R> {
    pub(crate) fn new(inner: R, on: bool) -> Self {
        Recorder {
            inner,
            seen: Vec::new(),
            on,
        }
    }
}

impl<R: Read> Read for Recorder<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(b)?;
        if self.on {
            self.seen.extend_from_slice(&b[..n]);
        }
        Ok(n)
    }
}

/// The whole file of a stream whose first bytes `seen` were read already: the rest read to its
/// end (the buffer grows with the bytes that arrive, never from a declared size).
fn whole_stream(mut seen: Vec<u8>, mut rest: impl Read) -> Result<Vec<u8>> {
    rest.read_to_end(&mut seen)?;
    Ok(seen)
}

/// [`or_objects`] for a stream after its header bytes `seen`: an object array is read whole.
pub(crate) fn or_objects_stream<R, S: Read>(
    seen: Vec<u8>,
    rest: S,
    rb: &ReaderBuilder,
    err: Error,
    read: impl FnOnce(ObjectArray) -> Result<R>,
) -> Result<R> {
    if !readable(&err, rb) {
        return Err(err);
    }
    or_objects(&whole_stream(seen, rest)?, rb, err, read)
}

/// [`or_elements`] for a stream after its header bytes `seen`: an object array is read whole.
pub(crate) fn or_elements_stream<T: serde::de::DeserializeOwned, S: Read>(
    seen: Vec<u8>,
    rest: S,
    rb: &ReaderBuilder,
    err: Error,
) -> Result<Vec<T>> {
    if !readable(&err, rb) {
        return Err(err);
    }
    or_elements(&whole_stream(seen, rest)?, rb, err)
}

/// The error of a memory-mapping door for a header error `err`: an object array allowed as
/// data still cannot be viewed in place, and the error says why and what reads it.
pub(crate) fn not_mappable(err: Error, rb: &ReaderBuilder) -> Error {
    not_element_wise(err, rb, "memory-mapped")
}

/// The error of a door that reads elements where they lie (`how`: memory-mapped, streamed)
/// for a header error `err`: an object array allowed as data is one pickle, so the error says
/// so and names the doors that read it whole.
pub(crate) fn not_element_wise(err: Error, rb: &ReaderBuilder, how: &str) -> Error {
    if !readable(&err, rb) {
        return err;
    }
    Error::new(ErrorKind::UnsupportedDType(format!(
        "an object array cannot be {how}: its data is one Python pickle, not elements in \
         place; read it whole (allow_pickle_data) with ReaderBuilder::from_path_serde, \
         deserialize_path or read_objects_path (an .npz member with NpzArchive::deserialize \
         or read_objects)"
    )))
}

impl ReaderBuilder {
    /// Reads an object array (a `.npy` file whose dtype holds Python objects) from the whole
    /// file in `bytes`, with [`allow_pickle_data`](ReaderBuilder::allow_pickle_data) set; an
    /// array of another dtype is an error saying to use the other doors.
    ///
    /// ```
    /// use npy_serde::{pickle::PyValue, ReaderBuilder};
    /// // np.save(f, np.array(['a', None], dtype=object))
    /// let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    /// file.extend_from_slice(b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }");
    /// file.resize(127, b' ');
    /// file.push(b'\n');
    /// file.extend_from_slice(b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01K\x02\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](X\x01\x00\x00\x00aNetb.");
    /// assert!(ReaderBuilder::new().read_objects_slice(&file).is_err());
    /// let a = ReaderBuilder::new().allow_pickle_data(true).read_objects_slice(&file)?;
    /// assert_eq!(a.values, [PyValue::Str("a".into()), PyValue::None]);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn read_objects_slice(&self, bytes: &[u8]) -> Result<ObjectArray> {
        object_array(bytes, self)?.ok_or_else(|| {
            Error::mismatch(
                "an object array",
                "an array without objects (read it with the other doors)",
            )
        })
    }

    /// [`read_objects_slice`](ReaderBuilder::read_objects_slice) of the file at `path`.
    ///
    /// ```no_run
    /// let a = npy_serde::ReaderBuilder::new().allow_pickle_data(true).read_objects_path("objects.npy")?;
    /// println!("{:?}", a.values);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn read_objects_path<P: AsRef<Path>>(&self, path: P) -> Result<ObjectArray> {
        let bytes = std::fs::read(path)?;
        self.read_objects_slice(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_descrs_are_recognised() {
        assert!(has_object(&Literal::Str("|O".into())));
        assert!(!has_object(&Literal::Str("<f8".into())));
        let rec = Literal::List(vec![Literal::Tuple(vec![
            Literal::Str("a".into()),
            Literal::Str("O".into()),
        ])]);
        assert!(has_object(&rec));
    }
}
