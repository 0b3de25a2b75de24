//! The globals this reader recognises by name (see the table in `numpy.rs`): never imported,
//! only named.

/// A global this reader turns into data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    Reconstruct,
    NdArray,
    DType,
    Scalar,
    StringDTypeKwargs,
    Frombuffer,
    CodecsEncode,
    ByteArray,
    Set,
    Complex,
}

/// The recognised global `module.name`, if it is one.
pub(crate) fn known_global(module: &str, name: &str) -> Option<Known> {
    let numpy_core = |m: &str, sub: &str| {
        m.strip_prefix("numpy.core.")
            .or_else(|| m.strip_prefix("numpy._core."))
            == Some(sub)
    };
    Some(match (module, name) {
        (m, "_reconstruct") if numpy_core(m, "multiarray") => Known::Reconstruct,
        (m, "scalar") if numpy_core(m, "multiarray") => Known::Scalar,
        (m, "_frombuffer") if numpy_core(m, "numeric") => Known::Frombuffer,
        ("numpy._core._internal", "_convert_to_stringdtype_kwargs") => Known::StringDTypeKwargs,
        ("numpy", "ndarray") => Known::NdArray,
        ("numpy", "dtype") => Known::DType,
        ("_codecs", "encode") => Known::CodecsEncode,
        ("builtins" | "__builtin__", "bytearray") => Known::ByteArray,
        ("builtins" | "__builtin__", "set" | "frozenset") => Known::Set,
        ("builtins" | "__builtin__", "complex") => Known::Complex,
        _ => return None,
    })
}
