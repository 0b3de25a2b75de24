//! Object arrays (`descr '|O'`, record dtypes with an `O` field, NumPy 2's `StringDType`):
//! the header read without the dtype model, the data read by the data-only pickle reader
//! ([`crate::pickle`]) behind [`ReaderBuilder::allow_pickle_data`].

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::options::ReaderBuilder;
use crate::error::{Error, ErrorKind, Result};
use crate::header::{parse_contents, Contents, ObjectHeader};
use crate::pickle::{array_elements, load, not_an_array, ObjectArray, PyValue};

/// The error for a pickled array whose shape is not the header's.
fn shape_differs(pickled: &[u64], header: &[u64], offset: u64) -> Error {
    Error::new(ErrorKind::Pickle(format!(
        "the pickled array's shape {pickled:?} is not the header's {header:?}"
    )))
    .at_byte(offset)
}

/// An error's byte offset moved from the pickle's start to the file's.
fn shift(e: Error, offset: u64) -> Error {
    match e.position().byte {
        Some(b) => Error::new(e.into_kind()).at_byte(b + offset),
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

/// The error of a door that reads elements where they lie (`how`: memory-mapped, streamed)
/// for an object array: without `allow_pickle_data` the refusal naming it; with it, that the
/// data is one pickle, naming the doors that read it whole.
pub(crate) fn not_element_wise(h: &ObjectHeader, rb: &ReaderBuilder, how: &str) -> Error {
    if !rb.allow_pickle_data {
        return h.refusal();
    }
    Error::new(ErrorKind::UnsupportedDType(format!(
        "an object array cannot be {how}: its data is one Python pickle, not elements in \
         place; read it whole (allow_pickle_data) with ReaderBuilder::from_path_serde, \
         deserialize_path or read_objects_path (an .npz member with NpzArchive::deserialize \
         or read_objects)"
    )))
}

/// The whole stream after an object array's header, read to its end (the buffer grows with the
/// bytes that arrive, never from a declared size), once `allow_pickle_data` is checked.
pub(crate) fn pickle_of(
    h: &ObjectHeader,
    rb: &ReaderBuilder,
    mut rest: impl Read,
) -> Result<Vec<u8>> {
    rb.allows(h)?;
    let mut data = Vec::new();
    rest.read_to_end(&mut data)?;
    Ok(data)
}

impl ReaderBuilder {
    /// `Ok` if object arrays are read as data ([`allow_pickle_data`](Self::allow_pickle_data)),
    /// else the refusal naming the option.
    pub(crate) fn allows(&self, h: &ObjectHeader) -> Result<()> {
        if self.allow_pickle_data {
            Ok(())
        } else {
            Err(h.refusal())
        }
    }

    /// The object array whose header is `h` and whose pickle is `data` (the bytes after the
    /// header), read by the data-only pickle machine; refused without
    /// [`allow_pickle_data`](Self::allow_pickle_data). For a caller that read the header
    /// already ([`header::read_contents`](crate::header::read_contents)) and dispatches on its
    /// kind: [`read_objects_slice`](Self::read_objects_slice) does both.
    ///
    /// ```
    /// use npy_serde::header::{parse_contents, Contents};
    /// use npy_serde::{pickle::PyValue, ReaderBuilder};
    /// // np.save(f, np.array(['a', None], dtype=object))
    /// let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
    /// file.extend_from_slice(b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }");
    /// file.resize(127, b' ');
    /// file.push(b'\n');
    /// file.extend_from_slice(b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01K\x02\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](X\x01\x00\x00\x00aNetb.");
    /// let rb = ReaderBuilder::new().allow_pickle_data(true);
    /// match parse_contents(&file, rb.limits())? {
    ///     Contents::Objects(h) => {
    ///         let pickle = &file[h.data_offset as usize..];
    ///         let a = rb.read_objects_with_header(&h, pickle)?;
    ///         assert_eq!(a.values, [PyValue::Str("a".into()), PyValue::None]);
    ///     }
    ///     _ => unreachable!("an object array"),
    /// }
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn read_objects_with_header(&self, h: &ObjectHeader, data: &[u8]) -> Result<ObjectArray> {
        self.allows(h)?;
        let offset = h.data_offset;
        let value = load(data, &self.pickle).map_err(|e| shift(e, offset))?;
        let PyValue::Array(a) = value else {
            return Err(not_an_array(&value).at_byte(offset));
        };
        if a.shape != h.shape {
            return Err(shape_differs(&a.shape, &h.shape, offset));
        }
        Ok(ObjectArray {
            descr: a.descr,
            shape: h.shape.clone(),
            fortran_order: h.fortran_order,
            values: a.values,
        })
    }

    /// Each element of the object array whose header is `h` and pickle `data` as a `T`, in
    /// logical C order. The elements are handed over one at a time, strings moved out of the
    /// pickle's graph ([`array_elements`]): no tree of every value is built.
    pub(crate) fn object_elements_of<'de, T: Deserialize<'de>>(
        &self,
        h: &ObjectHeader,
        data: &[u8],
    ) -> Result<Vec<T>> {
        self.allows(h)?;
        let offset = h.data_offset;
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
        let r = array_elements(data, &self.pickle, head, |v| {
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
            Ok(()) => Ok(out),
        }
    }
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
        match parse_contents(bytes, &self.limits)? {
            Contents::Objects(h) => {
                let data = bytes.get(h.data_offset as usize..).unwrap_or(&[]);
                self.read_objects_with_header(&h, data)
            }
            _ => Err(Error::mismatch(
                "an object array",
                "an array without objects (read it with the other doors)",
            )),
        }
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

    use crate::header::{is_object_descr, Literal};

    #[test]
    fn object_descrs_are_recognised() {
        for s in ["|O", "O", "O8", "'|O'", "StringDType()"] {
            assert!(is_object_descr(&Literal::Str(s.into())), "{s}");
        }
        for s in ["<f8", "|S5", "<U3", "|V8", "|O3"] {
            assert!(!is_object_descr(&Literal::Str(s.into())), "{s}");
        }
        let rec = Literal::List(vec![Literal::Tuple(vec![
            Literal::Str("a".into()),
            Literal::Str("O".into()),
        ])]);
        assert!(is_object_descr(&rec));
    }
}
