//! The globals this reader recognises by name (see the table in `numpy.rs`): never imported,
//! only named.

use super::stdlib::StdType;

/// A global this reader turns into data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    Reconstruct,
    NdArray,
    /// `numpy.recarray`: an `ndarray` subclass that only adds attribute access to fields; its
    /// data is read as the plain record array it holds.
    RecArray,
    /// `numpy.record`, the scalar type of a recarray's dtype (`numpy.dtype(numpy.record, ..)`).
    RecordType,
    DType,
    Scalar,
    StringDTypeKwargs,
    Frombuffer,
    CodecsEncode,
    ByteArray,
    Set,
    Complex,
    /// `datetime.date`, `.time`, `.datetime`, `.timedelta`, `.timezone`, `decimal.Decimal`.
    Std(StdType),
}

/// The recognised global `module.name`, if it is one.
pub(crate) fn known_global(module: &str, name: &str) -> Option<Known> {
    let numpy_core = |m: &str, sub: &str| {
        m.strip_prefix("numpy.core.")
            .or_else(|| m.strip_prefix("numpy._core."))
            == Some(sub)
    };
    // Where NumPy has kept its record types: `numpy.core.records` (1.x), `numpy._core.records`
    // and `numpy.rec` (2.x), `numpy` itself (`numpy.record`, and `numpy.recarray` as an alias).
    let is_records = |m: &str| matches!(m, "numpy" | "numpy.rec") || numpy_core(m, "records");
    Some(match (module, name) {
        // `numpy.core._internal._reconstruct` is what NumPy before 1.0's module layout wrote
        // (NumPy's own test data, `py2-np0-objarr.npy`): the same (class, shape, dtype) call.
        (m, "_reconstruct") if numpy_core(m, "multiarray") || numpy_core(m, "_internal") => {
            Known::Reconstruct
        }
        (m, "scalar") if numpy_core(m, "multiarray") => Known::Scalar,
        (m, "_frombuffer") if numpy_core(m, "numeric") => Known::Frombuffer,
        ("numpy._core._internal", "_convert_to_stringdtype_kwargs") => Known::StringDTypeKwargs,
        ("numpy", "ndarray") => Known::NdArray,
        (m, "recarray") if is_records(m) => Known::RecArray,
        (m, "record") if is_records(m) => Known::RecordType,
        ("numpy", "dtype") => Known::DType,
        ("_codecs", "encode") => Known::CodecsEncode,
        ("builtins" | "__builtin__", "bytearray") => Known::ByteArray,
        ("builtins" | "__builtin__", "set" | "frozenset") => Known::Set,
        ("builtins" | "__builtin__", "complex") => Known::Complex,
        (m, n) => return StdType::of(m, n).map(Known::Std),
    })
}

/// A known global named as a value (never applied): its canonical name.
pub(crate) fn known_name(k: Known) -> (&'static str, &'static str) {
    match k {
        Known::Reconstruct => ("numpy._core.multiarray", "_reconstruct"),
        Known::NdArray => ("numpy", "ndarray"),
        Known::RecArray => ("numpy", "recarray"),
        Known::RecordType => ("numpy", "record"),
        Known::DType => ("numpy", "dtype"),
        Known::Scalar => ("numpy._core.multiarray", "scalar"),
        Known::StringDTypeKwargs => ("numpy._core._internal", "_convert_to_stringdtype_kwargs"),
        Known::Frombuffer => ("numpy._core.numeric", "_frombuffer"),
        Known::CodecsEncode => ("_codecs", "encode"),
        Known::ByteArray => ("builtins", "bytearray"),
        Known::Set => ("builtins", "set"),
        Known::Complex => ("builtins", "complex"),
        Known::Std(t) => t.name(),
    }
}

/// The Python 3 name of a global a pickle of protocol 0-2 names in Python 2's terms, as
/// Python's unpickler renames it (`fix_imports`, the part of `_compat_pickle` that names data
/// types and the modules NumPy's pickles name): `__builtin__.xrange` is `builtins.range`.
pub(crate) fn python3_name<'a>(module: &'a str, name: &'a str) -> (&'a str, &'a str) {
    match (module, name) {
        ("__builtin__", "xrange") => ("builtins", "range"),
        ("__builtin__", "unicode" | "basestring") => ("builtins", "str"),
        ("__builtin__", "long") => ("builtins", "int"),
        ("__builtin__", "unichr") => ("builtins", "chr"),
        ("__builtin__", "raw_input") => ("builtins", "input"),
        ("__builtin__", "reduce") => ("functools", "reduce"),
        ("__builtin__", "intern") => ("sys", "intern"),
        ("__builtin__", "StandardError") => ("builtins", "Exception"),
        ("__builtin__" | "exceptions", name) => ("builtins", name),
        ("copy_reg", name) => ("copyreg", name),
        ("cPickle", name) => ("pickle", name),
        _ => (module, name),
    }
}
