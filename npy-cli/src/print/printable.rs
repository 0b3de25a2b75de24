//! An array being printed: its (possibly sliced) shape and dtype, its elements decoded one by one
//! as NumPy shows them (with a warning for values the typed reads refuse), and a progress bar.

use std::io;

use npy_serde::DType;
use npy_serde::Value;

use crate::failure::Failure;
use crate::format::lenient::{self, Lenient};
use crate::input::elements::{Elements, MAX_EMPTY_ITEMS};
use crate::input::layout::product;
use crate::progress::progress_bar;

/// Which elements along the first axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Range {
    /// All of them.
    All,
    /// The first N.
    Head(u64),
    /// The last N.
    Tail(u64),
}

/// An error while printing: writing failed, or the input is bad.
pub enum PrintError {
    /// Writing the output failed.
    Io(io::Error),
    /// The data is bad.
    Data(npy_serde::Error),
    /// The operation does not apply to this array (e.g. CSV of a 3-D array).
    Unsupported(String),
}

impl From<io::Error> for PrintError {
    fn from(e: io::Error) -> Self {
        PrintError::Io(e)
    }
}

impl From<npy_serde::Error> for PrintError {
    fn from(e: npy_serde::Error) -> Self {
        PrintError::Data(e)
    }
}

impl PrintError {
    /// As a command failure; `input` names the input file, `output` the output.
    pub fn fail(self, input: &str, output: &str) -> Failure {
        match self {
            PrintError::Io(e) => Failure::write(output, e),
            PrintError::Data(e) => Failure::file(input, e),
            PrintError::Unsupported(msg) => Failure::file(input, msg),
        }
    }
}

pub type PResult<T = ()> = Result<T, PrintError>;

/// An array ready to print: its (possibly sliced) shape, dtype and elements.
pub struct Printable<'a> {
    /// The shape of what is printed (the first axis cut by --head / --tail).
    pub shape: Vec<u64>,
    /// The element type.
    pub dtype: DType,
    /// The elements, in logical C order.
    pub elems: Elements<'a>,
    /// A progress bar counting data bytes (long conversions on a terminal).
    pub progress: Option<indicatif::ProgressBar>,
    /// Elements decoded since the bar was last advanced.
    pub pending: u64,
    /// Values printed as NumPy shows them although the typed reads refuse them.
    seen: Lenient,
    /// Whether each kind of [`Lenient`] was warned about already.
    warned: (bool, bool),
}

impl<'a> Printable<'a> {
    /// An array to print; with `progress`, a bar is shown if the data is large and stderr
    /// is a terminal.
    pub fn new(shape: Vec<u64>, dtype: DType, elems: Elements<'a>, progress: bool) -> Self {
        let bytes = product(&shape).saturating_mul(dtype.itemsize() as u64);
        Printable {
            shape,
            dtype,
            elems,
            progress: if progress { progress_bar(bytes) } else { None },
            pending: 0,
            seen: Lenient::default(),
            warned: (false, false),
        }
    }

    pub fn next_value(&mut self) -> PResult<Value> {
        let dtype = &self.dtype;
        if let Some(pb) = &self.progress {
            self.pending += 1;
            if self.pending == 4096 {
                pb.inc(self.pending * dtype.itemsize() as u64);
                self.pending = 0;
            }
        }
        match self.elems.next()? {
            Some(e) => {
                let index = e.index;
                let v = lenient::decode(dtype, e.bytes, e.offset, MAX_EMPTY_ITEMS, &mut self.seen)
                    .map_err(|err| PrintError::Data(err.at_record(index)))?;
                self.warn(index);
                Ok(v)
            }
            None => Err(PrintError::Data(npy_serde::Error::new(
                npy_serde::ErrorKind::UnexpectedEof {
                    what: "the array data",
                    expected: 1,
                    found: 0,
                },
            ))),
        }
    }
}

impl Printable<'_> {
    /// Warns once per kind, on stderr, that a value is printed as NumPy shows it although the
    /// library's typed reads refuse it (`npy check` reports it).
    fn warn(&mut self, index: u64) {
        if self.seen.bools && !self.warned.0 {
            self.warned.0 = true;
            eprintln!(
                "npy: warning: element {index}: a bool byte other than 0 or 1, printed as true \
                 (NumPy reads any nonzero byte as True; `npy check` reports it)"
            );
        }
        if self.seen.surrogates && !self.warned.1 {
            self.warned.1 = true;
            eprintln!(
                "npy: warning: element {index}: a string holds a UTF-16 surrogate, printed as \
                 \\uXXXX as NumPy's str has it (`npy check` reports it)"
            );
        }
    }
}

impl Drop for Printable<'_> {
    fn drop(&mut self) {
        if let Some(pb) = &self.progress {
            pb.finish_and_clear();
        }
    }
}

/// The flat element range `[start, start + len)` and the printed shape for `range`.
pub fn select(shape: &[u64], range: Range) -> (u64, u64, Vec<u64>) {
    let Some((&n, rest)) = shape.split_first() else {
        return (0, 1, Vec::new());
    };
    let inner = product(rest);
    let (r0, r1) = match range {
        Range::All => (0, n),
        Range::Head(k) => (0, k.min(n)),
        Range::Tail(k) => (n - k.min(n), n),
    };
    let mut out = shape.to_vec();
    out[0] = r1 - r0;
    (
        r0.saturating_mul(inner),
        (r1 - r0).saturating_mul(inner),
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection() {
        assert_eq!(select(&[5, 3], Range::Head(2)), (0, 6, vec![2, 3]));
        assert_eq!(select(&[5, 3], Range::Tail(2)), (9, 6, vec![2, 3]));
        assert_eq!(select(&[5], Range::Tail(9)), (0, 5, vec![5]));
        assert_eq!(select(&[], Range::Head(0)), (0, 1, vec![]));
    }
}
