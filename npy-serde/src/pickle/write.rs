//! Writing strings as an object array: a `.npy` file (`descr '|O'`) holding the pickle of a
//! 1-D `numpy.ndarray` of `str` and `None`, which `np.load(allow_pickle=True)` reads in NumPy
//! 1.x and 2.x alike. The pickle names `numpy.core.multiarray._reconstruct`: NumPy 2 still
//! loads that name (and NumPy before 1.26 knows no `numpy._core`). Protocol 3, as NumPy 1.x's
//! `np.save` writes; the bytes are built here, nothing of Python is needed.
//!
//! Or, where the caller asks, as a NumPy 2 `StringDType` array (dtype `'T'`, with or without
//! `na_object=None`): the same pickle with the dtype
//! `numpy._core._internal._convert_to_stringdtype_kwargs(1[, None])`, as NumPy 2's `np.save`
//! writes it. Only NumPy >= 2 loads such a file (the name does not exist before).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// The pickle opcodes before the element count.
const PREFIX: &[u8] =
    b"\x80\x03cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01";

/// After the count: the dtype `O8` and its state, `fortran_order` False, the list opened.
const DTYPE: &[u8] = b"\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](";

/// After the elements: the list closed, the state tuple closed and set, the end.
const SUFFIX: &[u8] = b"etb.";

/// The `StringDType` prefix: as [`PREFIX`] under NumPy 2's module name.
const PREFIX_T: &[u8] =
    b"\x80\x03cnumpy._core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01";

/// After the count: `StringDType()` as NumPy 2 pickles it (`coerce=True`), then `(` and the
/// rest as in [`DTYPE`]; [`DTYPE_T_NA`] with `na_object=None`.
const DTYPE_T: &[u8] =
    b"\x85cnumpy._core._internal\n_convert_to_stringdtype_kwargs\nK\x01\x85R\x89](";
const DTYPE_T_NA: &[u8] =
    b"\x85cnumpy._core._internal\n_convert_to_stringdtype_kwargs\nK\x01N\x86R\x89](";

/// Which dtype the written array has.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Object,
    /// NumPy 2's `StringDType`, with `na_object=None` or without (no `None` element then).
    Strings {
        na: bool,
    },
}

/// The `.npy` header of a 1-D object array of `n` elements (format 1.0, padded to 64 bytes as
/// `np.save` pads it).
fn header(n: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '|O', 'fortran_order': False, 'shape': ({n},), }}");
    let mut total = 10 + dict.len() + 1;
    total = total.div_ceil(64) * 64;
    let hlen = total - 10;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(hlen as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes the whole `.npy` file to `w`.
fn write_to<'a, W: Write>(
    mut w: W,
    values: impl ExactSizeIterator<Item = Option<&'a str>>,
    kind: Kind,
) -> Result<()> {
    let n = values.len();
    w.write_all(&header(n))?;
    w.write_all(if kind == Kind::Object {
        PREFIX
    } else {
        PREFIX_T
    })?;
    match i32::try_from(n) {
        Ok(n) => {
            w.write_all(b"J")?;
            w.write_all(&n.to_le_bytes())?;
        }
        Err(_) => {
            // LONG1: 8 bytes little-endian, sign bit clear (n < 2^63).
            w.write_all(b"\x8a\x08")?;
            w.write_all(&(n as u64).to_le_bytes())?;
        }
    }
    w.write_all(match kind {
        Kind::Object => DTYPE,
        Kind::Strings { na: false } => DTYPE_T,
        Kind::Strings { na: true } => DTYPE_T_NA,
    })?;
    for (i, v) in values.enumerate() {
        match v {
            None if kind == (Kind::Strings { na: false }) => {
                return Err(Error::mismatch(
                    "a string (a StringDType without na_object holds no missing value: \
                     write with na_object to store None)",
                    "None",
                )
                .at_record(i as u64));
            }
            None => w.write_all(b"N")?,
            Some(s) => {
                if s.len() < 256 {
                    w.write_all(&[0x8c, s.len() as u8])?;
                } else if let Ok(len) = u32::try_from(s.len()) {
                    w.write_all(b"X")?;
                    w.write_all(&len.to_le_bytes())?;
                } else {
                    w.write_all(b"\x8d")?;
                    w.write_all(&(s.len() as u64).to_le_bytes())?;
                }
                w.write_all(s.as_bytes())?;
            }
        }
    }
    w.write_all(SUFFIX)?;
    Ok(())
}

/// A whole `.npy` file holding `values` as a 1-D object array of `str` and `None`, which
/// `np.load(path, allow_pickle=True)` reads in NumPy 1.x and 2.x.
///
/// ```
/// use npy_serde::{pickle::{self, PyValue}, ReaderBuilder};
/// let names = ["a".to_string(), "優良".to_string()];
/// let file = pickle::strings_to_vec(names.iter().map(|s| Some(s.as_str())));
/// let back = ReaderBuilder::new().allow_pickle_data(true).read_objects_slice(&file)?;
/// assert_eq!(back.values[1], PyValue::Str("優良".into()));
///
/// let with_nulls = [Some("x"), None];
/// let file = pickle::strings_to_vec(with_nulls.iter().copied());
/// let back: Vec<Option<String>> =
///     ReaderBuilder::new().allow_pickle_data(true).from_slice_serde(&file)?;
/// assert_eq!(back, [Some("x".to_string()), None]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn strings_to_vec<'a>(values: impl ExactSizeIterator<Item = Option<&'a str>>) -> Vec<u8> {
    let mut out = Vec::new();
    write_to(&mut out, values, Kind::Object).expect("writing to a Vec does not fail");
    out
}

/// [`strings_to_vec`] into the file at `path` (created or truncated).
///
/// ```no_run
/// let v = vec![Some("a"), None];
/// npy_serde::pickle::strings_to_path("names.npy", v.into_iter())?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn strings_to_path<'a, P: AsRef<Path>>(
    path: P,
    values: impl ExactSizeIterator<Item = Option<&'a str>>,
) -> Result<()> {
    to_path(path.as_ref(), values, Kind::Object)
}

fn to_path<'a>(
    path: &Path,
    values: impl ExactSizeIterator<Item = Option<&'a str>>,
    kind: Kind,
) -> Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write_to(&mut w, values, kind)?;
    w.flush()?;
    Ok(())
}

/// A whole `.npy` file holding `values` as a NumPy 2 `StringDType` array (dtype `'T'`), which
/// `np.load(path, allow_pickle=True)` reads in **NumPy >= 2 only** (older NumPy has no
/// `StringDType` and fails to load it; write [`strings_to_vec`] for them). With `na_object`
/// the dtype is `StringDType(na_object=None)` and a `None` element is its missing value;
/// without it, a `None` element is an error naming its index.
///
/// ```
/// use npy_serde::{pickle, ReaderBuilder};
/// let v = [Some("a"), None, Some("優良")];
/// let file = pickle::strings_to_vec_stringdtype(v.iter().copied(), true)?;
/// let back: Vec<Option<String>> =
///     ReaderBuilder::new().allow_pickle_data(true).from_slice_serde(&file)?;
/// assert_eq!(back, [Some("a".into()), None, Some("優良".into())]);
/// let e = pickle::strings_to_vec_stringdtype(v.iter().copied(), false).unwrap_err();
/// assert_eq!(e.position().record, Some(1));
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn strings_to_vec_stringdtype<'a>(
    values: impl ExactSizeIterator<Item = Option<&'a str>>,
    na_object: bool,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_to(&mut out, values, Kind::Strings { na: na_object })?;
    Ok(out)
}

/// [`strings_to_vec_stringdtype`] into the file at `path` (created or truncated; NumPy >= 2
/// only). On a `None` without `na_object` the file is left incomplete and the error names
/// the element.
///
/// ```no_run
/// let v = vec![Some("a"), None];
/// npy_serde::pickle::strings_to_path_stringdtype("names.npy", v.into_iter(), true)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn strings_to_path_stringdtype<'a, P: AsRef<Path>>(
    path: P,
    values: impl ExactSizeIterator<Item = Option<&'a str>>,
    na_object: bool,
) -> Result<()> {
    to_path(path.as_ref(), values, Kind::Strings { na: na_object })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_padded_as_numpy_pads_them() {
        for n in [0, 7, 123456789] {
            let h = header(n);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(*h.last().unwrap(), b'\n');
        }
    }
}
