//! Syntactic classification of field types, for errors that point at the field: types that
//! need a string width, types that can never have a dtype, and numbers marked as strings.
//! Everything else is left to the `NpyRecord` trait bound (whose diagnostic also names the field
//! type).

use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type};

/// What the derive can tell about a field type from its syntax.
pub(crate) enum Kind<'a> {
    /// A string or byte container that needs `#[npy(bytes = N)]`/`#[npy(unicode = N)]`.
    String,
    /// `[u8; N]`: a `|u1` subarray, or a fixed-width string with a width attribute. The length
    /// if it is an integer literal.
    ByteArray(Option<u64>),
    /// A scalar with a dtype of its own (`bool`, integers, floats).
    Scalar,
    /// A type that has no NumPy dtype, with the reason, at this (possibly inner) type.
    Unsupported(&'a Type, String),
    /// Anything else: checked by the `NpyRecord` bound.
    Other,
}

/// The last path segment's identifier and its generic type arguments, for a path type.
fn last_segment(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let Type::Path(tp) = ty else { return None };
    if tp.qself.is_some() {
        return None;
    }
    let seg = tp.path.segments.last()?;
    let args = match &seg.arguments {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((seg.ident.to_string(), args))
}

fn is_ident(ty: &Type, name: &str) -> bool {
    matches!(last_segment(ty), Some((n, args)) if n == name && args.is_empty())
}

fn is_u8(ty: &Type) -> bool {
    is_ident(ty, "u8")
}

/// `DateTime64<U>` or `TimeDelta64<U>` (of `npy_serde::datetime`), by name.
fn is_time(ty: &Type) -> bool {
    matches!(last_segment(strip_group(ty)), Some((n, args))
        if (n == "DateTime64" || n == "TimeDelta64") && args.len() == 1)
}

fn is_str(ty: &Type) -> bool {
    is_ident(ty, "str")
}

fn strip_group(ty: &Type) -> &Type {
    match ty {
        Type::Group(g) => strip_group(&g.elem),
        Type::Paren(p) => strip_group(&p.elem),
        other => other,
    }
}

/// Classifies a field type.
pub(crate) fn classify(ty: &Type) -> Kind<'_> {
    let ty = strip_group(ty);
    match ty {
        Type::Reference(r) => {
            let elem = strip_group(&r.elem);
            match elem {
                _ if is_str(elem) => Kind::String,
                Type::Slice(s) if is_u8(&s.elem) => Kind::String,
                Type::Slice(_) => Kind::Unsupported(
                    ty,
                    format!(
                        "`{}` has no fixed length, so it has no NumPy dtype; use an array [T; N]",
                        pretty(ty)
                    ),
                ),
                _ => Kind::Other,
            }
        }
        Type::Slice(_) => Kind::Unsupported(
            ty,
            "a slice has no fixed length, so it has no NumPy dtype; use an array [T; N]".into(),
        ),
        Type::Array(a) => {
            if is_u8(&a.elem) {
                let len = match &a.len {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<u64>().ok(),
                    _ => None,
                };
                return Kind::ByteArray(len);
            }
            match classify(&a.elem) {
                Kind::Unsupported(t, why) => Kind::Unsupported(t, why),
                Kind::String => Kind::Unsupported(
                    &a.elem,
                    format!(
                        "`{}` inside an array has no NumPy dtype: a width attribute applies to a \
                         whole field, not to array elements",
                        pretty(&a.elem)
                    ),
                ),
                _ => Kind::Other,
            }
        }
        Type::Tuple(t) if t.elems.is_empty() => Kind::Unsupported(
            ty,
            "`()` has no NumPy dtype; mark the field #[serde(skip)] to leave it out".into(),
        ),
        Type::Tuple(_) => Kind::Unsupported(
            ty,
            "a tuple field has no NumPy dtype; use an array [T; N] or a tuple struct that derives \
             NpyRecord (a nested record with fields f0, f1, ...)"
                .into(),
        ),
        Type::Path(_) => classify_path(ty),
        _ => Kind::Other,
    }
}

fn classify_path(ty: &Type) -> Kind<'_> {
    let Some((name, args)) = last_segment(ty) else {
        return Kind::Other;
    };
    let unsupported = |why: String| Kind::Unsupported(ty, why);
    match (name.as_str(), args.as_slice()) {
        (
            "bool" | "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "f32" | "f64",
            [],
        )
        | ("f16", []) => Kind::Scalar,
        ("String", []) => Kind::String,
        ("Vec", [t]) if is_u8(t) => Kind::String,
        ("Box" | "Cow", [t]) if is_str(t) => Kind::String,
        ("Box" | "Cow", [Type::Slice(s)]) if is_u8(&s.elem) => Kind::String,
        ("Vec", [t]) => unsupported(format!(
            "`{}` has no fixed length, so it has no NumPy dtype; use an array [{}; N] \
             (a Vec<u8> is a string field with #[npy(bytes = N)])",
            pretty(ty),
            pretty(t)
        )),
        // `npy_serde::datetime`'s types, whose NaT is `None` (their `NpyRecord` impls say so).
        ("Option", [t]) if is_time(t) => Kind::Other,
        ("Option", [_]) => unsupported(format!(
            "`{}` has no NumPy dtype: every record has every field, and NumPy has no missing \
             values; use a sentinel value (e.g. NaN) or a separate bool field",
            pretty(ty)
        )),
        (
            "HashMap" | "BTreeMap" | "HashSet" | "BTreeSet" | "VecDeque" | "LinkedList"
            | "BinaryHeap" | "IndexMap" | "IndexSet",
            _,
        ) => unsupported(format!(
            "`{}` has no fixed size, so it has no NumPy dtype",
            pretty(ty)
        )),
        ("usize" | "isize", []) => unsupported(format!(
            "`{name}` has a platform-dependent size; use `{}64` for a portable dtype",
            if name == "usize" { "u" } else { "i" }
        )),
        ("u128" | "i128", []) => unsupported(format!("NumPy has no 128-bit integer for `{name}`")),
        ("char", []) => {
            unsupported("`char` has no NumPy dtype; use a String with #[npy(unicode = 1)]".into())
        }
        _ => Kind::Other,
    }
}

/// A type as users write it (`Vec<f64>`, not `Vec < f64 >`).
pub(crate) fn pretty(ty: &Type) -> String {
    let s = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let drop = matches!(prev, '<' | '&' | '(' | '[' | ':')
                || matches!(next, '<' | '>' | ',' | ')' | ']' | ':' | ';');
            if drop {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> Type {
        syn::parse_str(s).unwrap()
    }

    #[test]
    fn pretty_prints_like_source() {
        assert_eq!(pretty(&ty("Vec<f64>")), "Vec<f64>");
        assert_eq!(pretty(&ty("&'a [u8]")), "&'a [u8]");
        assert_eq!(
            pretty(&ty("std::collections::HashMap<String, f64>")),
            "std::collections::HashMap<String, f64>"
        );
        assert_eq!(pretty(&ty("[[f32; 3]; 2]")), "[[f32; 3]; 2]");
        assert_eq!(pretty(&ty("(f64, f64)")), "(f64, f64)");
    }

    #[test]
    fn classifies() {
        assert!(matches!(classify(&ty("String")), Kind::String));
        assert!(matches!(classify(&ty("std::string::String")), Kind::String));
        assert!(matches!(classify(&ty("&'a str")), Kind::String));
        assert!(matches!(classify(&ty("&[u8]")), Kind::String));
        assert!(matches!(classify(&ty("Vec<u8>")), Kind::String));
        assert!(matches!(classify(&ty("Cow<'a, str>")), Kind::String));
        assert!(matches!(classify(&ty("Box<[u8]>")), Kind::String));
        assert!(matches!(classify(&ty("[u8; 8]")), Kind::ByteArray(Some(8))));
        assert!(matches!(classify(&ty("[u8; N]")), Kind::ByteArray(None)));
        assert!(matches!(classify(&ty("f64")), Kind::Scalar));
        assert!(matches!(classify(&ty("half::f16")), Kind::Scalar));
        assert!(matches!(classify(&ty("Point")), Kind::Other));
        assert!(matches!(classify(&ty("[[f32; 3]; 2]")), Kind::Other));
        assert!(matches!(classify(&ty("Vec<f64>")), Kind::Unsupported(..)));
        assert!(matches!(
            classify(&ty("Option<f64>")),
            Kind::Unsupported(..)
        ));
        assert!(
            matches!(classify(&ty("[Option<f64>; 2]")), Kind::Unsupported(t, _) if pretty(t) == "Option<f64>")
        );
        assert!(matches!(
            classify(&ty("[String; 2]")),
            Kind::Unsupported(..)
        ));
        assert!(matches!(classify(&ty("usize")), Kind::Unsupported(..)));
        assert!(matches!(
            classify(&ty("Option<DateTime64<Ns>>")),
            Kind::Other
        ));
        assert!(matches!(
            classify(&ty("Option<npy_serde::datetime::TimeDelta64<S>>")),
            Kind::Other
        ));
        assert!(matches!(classify(&ty("(f32, f32)")), Kind::Unsupported(..)));
    }
}
