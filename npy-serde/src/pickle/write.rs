//! Writing strings as an object array: a `.npy` file (`descr '|O'`) holding the pickle of a
//! 1-D `numpy.ndarray` of `str` and `None`, which `np.load(allow_pickle=True)` reads in NumPy
//! 1.x and 2.x alike. The pickle names `numpy.core.multiarray._reconstruct`: NumPy 2 still
//! loads that name (and NumPy before 1.26 knows no `numpy._core`). Protocol 3, as NumPy 1.x's
//! `np.save` writes; the bytes are built here, nothing of Python is needed.

use std::io::Write;
use std::path::Path;

use crate::error::Result;

/// The pickle opcodes before the element count.
const PREFIX: &[u8] =
    b"\x80\x03cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85C\x01b\x87R(K\x01";

/// After the count: the dtype `O8` and its state, `fortran_order` False, the list opened.
const DTYPE: &[u8] = b"\x85cnumpy\ndtype\nX\x02\x00\x00\x00O8\x89\x88\x87R(K\x03X\x01\x00\x00\x00|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK?tb\x89](";

/// After the elements: the list closed, the state tuple closed and set, the end.
const SUFFIX: &[u8] = b"etb.";

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
) -> std::io::Result<()> {
    let n = values.len();
    w.write_all(&header(n))?;
    w.write_all(PREFIX)?;
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
    w.write_all(DTYPE)?;
    for v in values {
        match v {
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
    w.write_all(SUFFIX)
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
    write_to(&mut out, values).expect("writing to a Vec does not fail");
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
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    write_to(&mut w, values)?;
    w.flush()?;
    Ok(())
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
