//! A data-only pickle reader: the object arrays of `.npy` files (`descr '|O'`, record dtypes
//! with an `O` field, NumPy 2's `StringDType`) read without running any code.
//!
//! NumPy stores an object array as one Python pickle of the whole array, and `np.load` refuses
//! it unless `allow_pickle=True`, which lets the file run arbitrary code. This reader
//! interprets the pickle opcodes of protocols 0 to 5 as data and is safe by construction: it
//! never imports or calls anything. The globals NumPy's own pickles need (the array, dtype and
//! scalar reconstructors under `numpy.core` and `numpy._core`, `StringDType`'s, `_codecs.encode`
//! and a few builtins: see the table in `numpy.rs`) and the standard library's `datetime`
//! values and `decimal.Decimal` (from the state CPython pickles for them, every field checked:
//! [`PyValue::DateTime`], [`PyValue::Decimal`] and their kin) are recognised by name and
//! turned into data; any other global becomes [`PyValue::Global`] naming it, and applying it (`REDUCE`,
//! `BUILD`, `NEWOBJ`, `INST`, `OBJ`) is an error naming it. Protocol 5's out-of-band buffers
//! and persistent ids are refused.
//!
//! **Why not serde-pickle**: it turns unknown globals into an anonymous value (the name is
//! lost, so neither a value reader nor an error can say what the file held), knows no NumPy
//! reconstructors and has no limits on depth, memory or shared references. This reader is
//! small, tied to this crate's `Error`, dtype model and limits, and adds no dependency.
//!
//! # Limits
//!
//! Interpreting is linear in the input: each opcode costs O(1) plus the values it moves, and
//! every length is checked against the bytes present before anything is taken. Sharing (one
//! memoized list referenced a million times, nested) is paid for on expansion, where every
//! value and byte counts each time it is reached ([`PickleOptions::max_values`],
//! [`PickleOptions::max_bytes`]), nesting is bounded ([`PickleOptions::max_depth`]) and a
//! container reached inside itself is refused.
//!
//! | file | owns |
//! |---|---|
//! | `cursor.rs` | bytes taken after checking they exist |
//! | `machine.rs` | the opcodes, the stack, the memo; the object graph |
//! | `globals.rs`, `numpy.rs` | the globals recognised by name; what `REDUCE`/`BUILD` on them build |
//! | `graph.rs` | the object graph's nodes |
//! | `stdlib.rs`, `stdstate.rs` | `datetime`'s `date`, `time`, `datetime`, `timedelta`, `timezone` and `decimal.Decimal`: their values and text forms; built from the state CPython pickles, checked |
//! | `npdtype.rs` | a pickled `numpy.dtype` resolved into this crate's dtype model |
//! | `text.rs` | protocol-0 strings, big integers |
//! | `limits.rs`, `expand.rs` | the graph expanded into [`PyValue`]s under the budget |
//! | `elements.rs` | an array's elements one at a time, leaves moved out of the graph (the fast door into `Vec<T>`) |
//! | `stream.rs` | the common data list of `str`/`bytes`/`None` walked from the bytes, no graph node per element |
//! | `options.rs` | [`PickleOptions`], [`Encoding`] |
//! | `value.rs` | [`PyValue`], [`PyArray`], [`ObjectArray`] |
//! | `write.rs` | strings written as an object array NumPy 1.x and 2.x load: [`strings_to_vec`], [`strings_to_path`]; as a `StringDType` array NumPy >= 2 loads: [`strings_to_vec_stringdtype`], [`strings_to_path_stringdtype`]; any shape of plain Python values: [`objects_to_vec`] |
//! | `de.rs` | serde: a [`PyValue`] as a `Deserializer`, and `Serialize` |
//!
//! ```
//! use npy_serde::pickle::{load, PickleOptions, PyValue};
//! // pickle.dumps({'k': [1.5, None]}, protocol=4) with its framing
//! let bytes = b"\x80\x04\x95\x16\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01k\x94]\x94(G?\xf8\x00\x00\x00\x00\x00\x00Nes.";
//! let v = load(bytes, &PickleOptions::default())?;
//! let PyValue::Dict(d) = v else { panic!() };
//! assert_eq!(d[0].1, PyValue::List(vec![PyValue::Float(1.5), PyValue::None]));
//!
//! // A global other than NumPy's is never called: the error names it.
//! let evil = b"cos\nsystem\n(S'echo hi'\ntR.";
//! let err = load(evil, &PickleOptions::default()).unwrap_err();
//! assert!(err.to_string().contains("os.system"), "{err}");
//! # Ok::<(), npy_serde::Error>(())
//! ```

mod cursor;
mod de;
mod elements;
mod expand;
mod globals;
mod graph;
mod limits;
mod machine;
mod npdtype;
mod numpy;
mod options;
mod stdlib;
mod stdstate;
mod stream;
mod text;
mod value;
mod write;

pub use options::{Encoding, PickleOptions};
pub use stdlib::{PyDate, PyDateTime, PyTime, PyTimeDelta, PyTimeZone};
pub use value::{ObjectArray, PyArray, PyValue};
pub use write::{
    objects_to_vec, strings_to_path, strings_to_path_stringdtype, strings_to_vec,
    strings_to_vec_stringdtype, MAX_WRITE_DEPTH,
};

pub(crate) use elements::{array_elements, not_an_array};

use crate::error::Result;

/// Reads one pickle (the bytes up to its `STOP`) as data. Nothing is imported or called.
///
/// ```
/// use npy_serde::pickle::{load, PickleOptions, PyValue};
/// // pickle.dumps(b'xy', protocol=2): Python 3 bytes through _codecs.encode
/// let b = b"\x80\x02c_codecs\nencode\nq\x00X\x02\x00\x00\x00xyq\x01X\x06\x00\x00\x00latin1q\x02\x86q\x03Rq\x04.";
/// assert_eq!(load(b, &PickleOptions::default())?, PyValue::Bytes(b"xy".to_vec()));
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn load(bytes: &[u8], options: &PickleOptions) -> Result<PyValue> {
    let graph = machine::run(bytes, options.encoding)?;
    expand::expand(&graph, budget(bytes.len(), options), options.max_depth)
}

/// The expansion budget of a pickle of `len` bytes under `options`.
fn budget(len: usize, options: &PickleOptions) -> limits::Budget {
    let n = len as u64;
    let values = options
        .max_values
        .unwrap_or_else(|| (1u64 << 20).saturating_add(n.saturating_mul(4)));
    let bytes_max = options
        .max_bytes
        .unwrap_or_else(|| (64u64 << 20).saturating_add(n.saturating_mul(4)));
    limits::Budget::new(values, bytes_max)
}

/// What a pickle names, found without running it (for tools such as `npy info`).
///
/// ```
/// let s = npy_serde::pickle::scan(b"\x80\x02cos\nsystem\n(S'echo hi'\ntR.");
/// assert_eq!(s.protocol, Some(2));
/// assert_eq!(s.globals, [("os".to_string(), "system".to_string())]);
/// assert!(s.error.is_none());
/// ```
#[derive(Debug)]
pub struct PickleScan {
    /// The protocol its `PROTO` opcode declares (none before protocol 2).
    pub protocol: Option<u8>,
    /// Every global it names (`GLOBAL`, `STACK_GLOBAL`, `INST`), once each, in order: these
    /// are what `pickle.load` would import.
    pub globals: Vec<(String, String)>,
    /// The first malformed opcode, if the stream has one (what was found before it is kept).
    pub error: Option<crate::Error>,
}

/// Scans a pickle for its protocol and the globals it names, calls and all, without running
/// or refusing anything (up to its `STOP` or the first malformed opcode). Linear in the input.
pub fn scan(bytes: &[u8]) -> PickleScan {
    let (s, error) = machine::scan(bytes);
    PickleScan {
        protocol: s.protocol,
        globals: s.globals,
        error,
    }
}

#[cfg(test)]
mod stream_props;
#[cfg(test)]
mod tests;
