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
use crate::pickle::PyValue;

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

/// [`strings_to_vec`] into the file at `path`, created or replaced when complete (see
/// [`StagedFile`](crate::staged::StagedFile)).
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
    let staged = crate::staged::StagedFile::create(path)?;
    let mut w = crate::AlignedWriter::new(staged);
    write_to(&mut w, values, kind)?;
    w.into_inner()?.commit()?;
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

/// [`strings_to_vec_stringdtype`] into the file at `path`, created or replaced when complete
/// (NumPy >= 2 only). On a `None` without `na_object` the error names the element and `path`
/// is left as it was.
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

/// How deep [`objects_to_vec`] follows lists, tuples and dicts inside each other.
pub const MAX_WRITE_DEPTH: usize = 100;

/// The `.npy` header of an object array of `shape` (format 1.0, as `np.save` writes it).
fn header_of_shape(shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '|O', 'fortran_order': False, 'shape': {shape}, }}");
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// Pushes the `int` `n` (BININT or LONG1).
fn push_int(out: &mut Vec<u8>, n: i64) {
    match i32::try_from(n) {
        Ok(n) => {
            out.push(b'J');
            out.extend_from_slice(&n.to_le_bytes());
        }
        Err(_) => push_long(out, &n.to_le_bytes()),
    }
}

/// Pushes LONG1 / LONG4 of a little-endian two's complement `bytes`, minimal as Python's.
fn push_long(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut len = bytes.len();
    while len > 1 {
        let (top, next) = (bytes[len - 1], bytes[len - 2]);
        if (top == 0 && next < 0x80) || (top == 0xff && next >= 0x80) {
            len -= 1;
        } else {
            break;
        }
    }
    match u8::try_from(len) {
        Ok(l) => out.extend_from_slice(&[0x8a, l]),
        Err(_) => {
            out.push(0x8b);
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
    }
    out.extend_from_slice(&bytes[..len]);
}

/// The little-endian two's complement bytes of the decimal integer `text`.
fn big_int_bytes(text: &str) -> Option<Vec<u8>> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // The magnitude, base 256, little-endian.
    let mut mag: Vec<u8> = vec![0];
    for d in digits.bytes() {
        let mut carry = u32::from(d - b'0');
        for byte in mag.iter_mut() {
            let v = u32::from(*byte) * 10 + carry;
            *byte = (v & 0xff) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            mag.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    mag.push(0); // the sign bit clear
    if negative {
        let mut carry = 1u16;
        for byte in mag.iter_mut() {
            let v = u16::from(!*byte) + carry;
            *byte = (v & 0xff) as u8;
            carry = v >> 8;
        }
    }
    Some(mag)
}

/// Pushes a `str`, a `bytes` object's content after `short` / `long` opcodes.
fn push_sized(out: &mut Vec<u8>, data: &[u8], short: u8, long: u8, huge: u8) {
    if let Ok(l) = u8::try_from(data.len()) {
        out.extend_from_slice(&[short, l]);
    } else if let Ok(l) = u32::try_from(data.len()) {
        out.push(long);
        out.extend_from_slice(&l.to_le_bytes());
    } else {
        out.push(huge);
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    }
    out.extend_from_slice(data);
}

/// Pushes one element (see [`objects_to_vec`] for what is written).
fn push_value(out: &mut Vec<u8>, v: &PyValue, depth: usize) -> Result<()> {
    if depth > MAX_WRITE_DEPTH {
        return Err(Error::limit(
            "the nesting of lists, tuples and dicts",
            MAX_WRITE_DEPTH as u64,
            depth as u64,
        ));
    }
    let items = |out: &mut Vec<u8>, vs: &[PyValue]| -> Result<()> {
        vs.iter().try_for_each(|v| push_value(out, v, depth + 1))
    };
    match v {
        PyValue::None => out.push(b'N'),
        PyValue::Bool(true) => out.push(0x88),
        PyValue::Bool(false) => out.push(0x89),
        PyValue::Int(n) => push_int(out, *n),
        PyValue::BigInt(text) => {
            let bytes = big_int_bytes(text).ok_or_else(|| {
                Error::invalid_value(format!("{text:?} is not a decimal integer"))
            })?;
            push_long(out, &bytes);
        }
        PyValue::Float(f) => {
            out.push(b'G');
            out.extend_from_slice(&f.to_be_bytes());
        }
        PyValue::Complex(re, im) => {
            out.extend_from_slice(b"cbuiltins\ncomplex\nG");
            out.extend_from_slice(&re.to_be_bytes());
            out.push(b'G');
            out.extend_from_slice(&im.to_be_bytes());
            out.extend_from_slice(b"\x86R");
        }
        PyValue::Str(s) => push_sized(out, s.as_bytes(), 0x8c, b'X', 0x8d),
        PyValue::Bytes(b) => push_sized(out, b, b'C', b'B', 0x8e),
        PyValue::List(vs) => {
            out.push(b']');
            if !vs.is_empty() {
                out.push(b'(');
                items(out, vs)?;
                out.push(b'e');
            }
        }
        PyValue::Tuple(vs) if vs.is_empty() => out.push(b')'),
        PyValue::Tuple(vs) => {
            out.push(b'(');
            items(out, vs)?;
            out.push(b't');
        }
        PyValue::Dict(kvs) => {
            out.push(b'}');
            if !kvs.is_empty() {
                out.push(b'(');
                for (k, v) in kvs {
                    push_value(out, k, depth + 1)?;
                    push_value(out, v, depth + 1)?;
                }
                out.push(b'u');
            }
        }
        other => {
            return Err(Error::mismatch(
                "str, bytes, int, float, complex, bool, None, or a list, tuple or dict of them",
                other.type_name(),
            ))
        }
    }
    Ok(())
}

/// A whole `.npy` file holding `values` (in C order) as an object array of `shape`, which
/// `np.load(path, allow_pickle=True)` reads in NumPy 1.x and 2.x (the pickle names
/// `numpy.core.multiarray._reconstruct`, as [`strings_to_vec`]'s). Elements: `None`, `bool`,
/// `int` (any size), `float`, `complex`, `str`, `bytes`, and `list`s, `tuple`s and `dict`s of
/// them, [`MAX_WRITE_DEPTH`] deep at most; any other value is an error naming its index and
/// type. The count of `values` must be the product of `shape`.
///
/// ```
/// use npy_serde::{pickle::{self, PyValue}, ReaderBuilder};
/// let values = [PyValue::Int(1), PyValue::Str("a".into()),
///               PyValue::List(vec![PyValue::Float(0.5)]), PyValue::None];
/// let file = pickle::objects_to_vec(&values, &[2, 2])?;
/// let back = ReaderBuilder::new().allow_pickle_data(true).read_objects_slice(&file)?;
/// assert_eq!(back.shape, [2, 2]);
/// assert_eq!(back.values, values);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn objects_to_vec(values: &[PyValue], shape: &[u64]) -> Result<Vec<u8>> {
    let count = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::overflow(format!("the shape {shape:?}")))?;
    if count != values.len() as u64 {
        return Err(Error::mismatch(
            format!("{count} values (the shape {shape:?})"),
            format!("{}", values.len()),
        ));
    }
    let mut out = header_of_shape(shape);
    out.extend_from_slice(PREFIX);
    match shape {
        [n] => {
            push_int(&mut out, *n as i64);
            out.push(0x85);
        }
        dims => {
            out.push(b'(');
            for &d in dims {
                push_int(&mut out, d as i64);
            }
            out.push(b't');
        }
    }
    // DTYPE without its leading TUPLE1 (the shape is closed above).
    out.extend_from_slice(&DTYPE[1..]);
    for (i, v) in values.iter().enumerate() {
        push_value(&mut out, v, 0).map_err(|e| e.at_record(i as u64))?;
    }
    out.extend_from_slice(SUFFIX);
    Ok(out)
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
