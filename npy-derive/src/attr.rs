//! Reading `#[npy(...)]` and the `#[serde(...)]` attributes that change field names or which
//! fields are serialized.
//!
//! `#[npy]` attributes are checked strictly: unknown keys, duplicates, bad values and conflicts
//! are errors at their own tokens. `#[serde]` attributes are read leniently: serde_derive
//! reports their mistakes, so anything this derive does not need is skipped silently.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, LitInt, LitStr, Token};

use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::descr::{self, FieldDType};

/// A value set at most once, remembering where it was set.
struct Once<T> {
    what: &'static str,
    value: Option<(Span, T)>,
}

impl<T> Once<T> {
    fn new(what: &'static str) -> Self {
        Once { what, value: None }
    }

    fn set(&mut self, cx: &Ctxt, span: Span, value: T) {
        if self.value.is_some() {
            cx.error_at(span, format!("duplicate npy attribute `{}`", self.what));
        } else {
            self.value = Some((span, value));
        }
    }

    fn get(self) -> Option<(Span, T)> {
        self.value
    }
}

/// `#[npy(byte_order = "...")]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    Little,
    Big,
    Native,
}

/// Attributes of the struct itself.
pub(crate) struct Container {
    /// `#[npy(crate = "path")]`, default `::npy_serde`.
    pub(crate) krate: Option<syn::Path>,
    /// `#[npy(align)]`.
    pub(crate) align: Option<Span>,
    /// `#[npy(byte_order = "...")]`.
    pub(crate) byte_order: Option<Order>,
    /// `#[serde(rename_all = "...")]`, the serialize side.
    pub(crate) rename_all: Option<RenameRule>,
    /// `#[serde(transparent)]`.
    pub(crate) transparent: bool,
    /// A serde container attribute that changes what the derived impls do with the fields
    /// (`from`, `try_from`, `remote`, `bound`, ...): the type is then not read or written as
    /// its bytes.
    pub(crate) serde_custom: bool,
}

const CONTAINER_KEYS: &str = "`crate`, `align`, `byte_order`";
const FIELD_KEYS: &str = "`rename`, `skip`, `bytes`, `unicode`, `dtype`";

impl Container {
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Container {
        let mut krate = Once::new("crate");
        let mut align = Once::new("align");
        let mut byte_order = Once::new("byte_order");
        let mut rename_all = None;
        let mut transparent = false;
        let mut serde_custom = false;

        for attr in attrs {
            if attr.path().is_ident("npy") {
                let res = attr.parse_nested_meta(|meta| {
                    let span = meta.path.span();
                    if meta.path.is_ident("crate") {
                        let s: LitStr = meta.value()?.parse()?;
                        match s.parse::<syn::Path>() {
                            Ok(p) => krate.set(cx, span, p),
                            Err(_) => cx.error_spanned_by(
                                &s,
                                format!("`crate` must be a path, found {:?}", s.value()),
                            ),
                        }
                    } else if meta.path.is_ident("align") {
                        if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                            cx.error_at(span, "`align` takes no value: write #[npy(align)]");
                            skip_value(&meta)?;
                        }
                        align.set(cx, span, ());
                    } else if meta.path.is_ident("byte_order") {
                        let s: LitStr = meta.value()?.parse()?;
                        let order = match s.value().as_str() {
                            "little" => Some(Order::Little),
                            "big" => Some(Order::Big),
                            "native" => Some(Order::Native),
                            other => {
                                cx.error_spanned_by(
                                    &s,
                                    format!(
                                        "unknown byte_order {other:?}, expected \"little\", \"big\" or \"native\""
                                    ),
                                );
                                None
                            }
                        };
                        if let Some(o) = order {
                            byte_order.set(cx, span, o);
                        }
                    } else {
                        unknown_key(cx, &meta, "container", CONTAINER_KEYS)?;
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident("serde") {
                // Lenient: serde_derive reports malformed serde attributes itself.
                let _ = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("rename_all") {
                        if let Some(name) = serialize_name(&meta)? {
                            rename_all = RenameRule::from_name(&name);
                        }
                    } else if meta.path.is_ident("transparent") {
                        transparent = true;
                    } else if meta.path.is_ident("tag") || meta.path.is_ident("into") {
                        let key = if meta.path.is_ident("tag") {
                            "tag"
                        } else {
                            "into"
                        };
                        cx.error_at(
                            meta.path.span(),
                            format!(
                                "#[serde({key} = ...)] is not supported by #[derive(NpyRecord)]: \
                                 serde would not serialize the struct's own fields, so no record \
                                 dtype can be derived from them"
                            ),
                        );
                        skip_value(&meta)?;
                    } else {
                        const PLAIN: [&str; 5] = [
                            "rename",
                            "deny_unknown_fields",
                            "crate",
                            "expecting",
                            "default",
                        ];
                        serde_custom |= !PLAIN.iter().any(|k| meta.path.is_ident(k));
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            }
        }

        Container {
            krate: krate.get().map(|(_, p)| p),
            align: align.get().map(|(s, _)| s),
            byte_order: byte_order.get().map(|(_, o)| o),
            rename_all,
            transparent,
            serde_custom,
        }
    }
}

/// `#[npy(bytes = N)]` or `#[npy(unicode = N)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    Bytes(usize),
    Unicode(usize),
}

/// Attributes of one field.
pub(crate) struct FieldAttrs {
    /// `#[npy(rename = "...")]`.
    pub(crate) npy_rename: Option<(Span, String)>,
    /// `#[serde(rename = "...")]`, the serialize side.
    pub(crate) serde_rename: Option<String>,
    /// `#[npy(skip)]`.
    pub(crate) npy_skip: Option<Span>,
    /// A serde field attribute that changes how the value is read or written (`with`,
    /// `deserialize_with`, `serialize_with`, `getter`, `bound`, ...).
    pub(crate) serde_custom: bool,
    /// `#[serde(skip)]` or `#[serde(skip_serializing)]`.
    pub(crate) skip_serializing: bool,
    /// `#[serde(skip)]` or `#[serde(skip_deserializing)]`.
    pub(crate) skip_deserializing: bool,
    /// `#[npy(bytes = N)]` / `#[npy(unicode = N)]` and the span of the attribute.
    pub(crate) width: Option<(Span, Width)>,
    /// A width attribute was given but rejected (already reported).
    pub(crate) bad_width: bool,
    /// `#[npy(dtype = "...")]` (other than `S`/`U`, which become `width`), with the span of
    /// its string.
    pub(crate) dtype: Option<(Span, FieldDType)>,
}

/// The largest itemsize NumPy accepts (`NPY_MAX_INT`).
const MAX_ITEMSIZE: u64 = i32::MAX as u64;

impl FieldAttrs {
    pub(crate) fn from_attrs(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
        let mut npy_rename = Once::new("rename");
        let mut npy_skip = Once::new("skip");
        let mut width: Once<Width> = Once::new("bytes");
        let mut serde_rename = None;
        let mut skip_serializing = false;
        let mut skip_deserializing = false;
        let mut bad_width = false;
        let mut serde_custom = false;
        let mut dtype: Once<FieldDType> = Once::new("dtype");

        for attr in attrs {
            if attr.path().is_ident("npy") {
                let res = attr.parse_nested_meta(|meta| {
                    let span = meta.path.span();
                    if meta.path.is_ident("rename") {
                        let s: LitStr = meta.value()?.parse()?;
                        if s.value().is_empty() {
                            cx.error_spanned_by(
                                &s,
                                "a field name must not be empty (NumPy would replace it with f<index>)",
                            );
                        } else {
                            npy_rename.set(cx, span, s.value());
                        }
                    } else if meta.path.is_ident("skip") {
                        if !meta.input.is_empty() && !meta.input.peek(Token![,]) {
                            cx.error_at(span, "`skip` takes no value: write #[npy(skip)]");
                            skip_value(&meta)?;
                        }
                        npy_skip.set(cx, span, ());
                    } else if meta.path.is_ident("bytes") || meta.path.is_ident("unicode") {
                        let is_bytes = meta.path.is_ident("bytes");
                        let lit: LitInt = meta.value()?.parse()?;
                        let n: u64 = lit.base10_parse()?;
                        let unit = if is_bytes { 1 } else { 4 };
                        bad_width = true;
                        if n == 0 {
                            cx.error_spanned_by(
                                &lit,
                                "a string width must be at least 1 (NumPy saves a zero-width string as width 1)",
                            );
                        } else if n.saturating_mul(unit) > MAX_ITEMSIZE {
                            cx.error_spanned_by(
                                &lit,
                                format!(
                                    "a string of {n} {} exceeds NumPy's itemsize limit of {MAX_ITEMSIZE} bytes",
                                    if is_bytes { "bytes" } else { "code points" }
                                ),
                            );
                        } else if let Some((_, prev)) = &width.value {
                            let (this, other) = if is_bytes {
                                ("bytes", "unicode")
                            } else {
                                ("unicode", "bytes")
                            };
                            if matches!(prev, Width::Bytes(_)) == is_bytes {
                                cx.error_at(span, format!("duplicate npy attribute `{this}`"));
                            } else {
                                cx.error_at(
                                    span,
                                    format!(
                                        "#[npy({this} = ...)] conflicts with #[npy({other} = ...)]: \
                                         a string field is either bytes (|S) or unicode (<U)"
                                    ),
                                );
                            }
                        } else {
                            let w = if is_bytes {
                                Width::Bytes(n as usize)
                            } else {
                                Width::Unicode(n as usize)
                            };
                            width.set(cx, span, w);
                            bad_width = false;
                        }
                    } else if meta.path.is_ident("dtype") {
                        let lit: LitStr = meta.value()?.parse()?;
                        match descr::parse(&lit.value()) {
                            Ok(d) => dtype.set(cx, lit.span(), d),
                            Err(why) => {
                                cx.error_spanned_by(&lit, why);
                                bad_width = true;
                            }
                        }
                    } else {
                        unknown_key(cx, &meta, "field", FIELD_KEYS)?;
                    }
                    Ok(())
                });
                if let Err(e) = res {
                    cx.syn_error(e);
                }
            } else if attr.path().is_ident("serde") {
                let _ = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("rename") {
                        if let Some(name) = serialize_name(&meta)? {
                            serde_rename = Some(name);
                        }
                    } else if meta.path.is_ident("skip") {
                        skip_serializing = true;
                        skip_deserializing = true;
                    } else if meta.path.is_ident("skip_serializing") {
                        skip_serializing = true;
                    } else if meta.path.is_ident("skip_deserializing") {
                        skip_deserializing = true;
                    } else if meta.path.is_ident("flatten") {
                        cx.error_at(
                            meta.path.span(),
                            "#[serde(flatten)] is not supported by #[derive(NpyRecord)]: serde \
                             serializes a struct with a flattened field as a map, which has no \
                             fixed record layout; nest the struct as a field instead (a nested record)",
                        );
                    } else if meta.path.is_ident("skip_serializing_if") {
                        cx.error_at(
                            meta.path.span(),
                            "#[serde(skip_serializing_if)] is not supported by #[derive(NpyRecord)]: \
                             every record of a NumPy array has every field, so a field cannot be \
                             left out of some records",
                        );
                        skip_value(&meta)?;
                    } else {
                        const PLAIN: [&str; 2] = ["alias", "default"];
                        serde_custom |= !PLAIN.iter().any(|k| meta.path.is_ident(k));
                        skip_value(&meta)?;
                    }
                    Ok(())
                });
            }
        }

        // `S`/`U` type strings are the width attributes.
        let mut dtype = dtype.get();
        let mut width = width.get();
        if let Some((span, d)) = dtype.clone() {
            let as_width = match d {
                FieldDType::Bytes(n) => Some(Width::Bytes(n)),
                FieldDType::Unicode(n) => Some(Width::Unicode(n)),
                _ => None,
            };
            if width.is_some() {
                cx.error_at(
                    span,
                    "#[npy(dtype = ...)] conflicts with #[npy(bytes/unicode = ...)]: give one",
                );
                bad_width = true;
                dtype = None;
            } else if let Some(w) = as_width {
                width = Some((span, w));
                dtype = None;
            }
        }

        FieldAttrs {
            npy_rename: npy_rename.get(),
            serde_rename,
            npy_skip: npy_skip.get().map(|(s, _)| s),
            serde_custom,
            skip_serializing,
            skip_deserializing,
            width,
            bad_width,
            dtype,
        }
    }
}

/// Reports an unknown `#[npy]` key and skips its value so that later keys are still checked.
fn unknown_key(cx: &Ctxt, meta: &ParseNestedMeta, level: &str, expected: &str) -> syn::Result<()> {
    let path = meta.path.clone();
    let name = path
        .get_ident()
        .map(|i| i.to_string())
        .unwrap_or_else(|| quote::quote!(#path).to_string().replace(' ', ""));
    cx.error_spanned_by(
        &path,
        format!("unknown npy {level} attribute `{name}`, expected one of {expected}"),
    );
    skip_value(meta)
}

/// Skips `= value` or `(...)` after a key, if present.
fn skip_value(meta: &ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: proc_macro2::TokenStream = content.parse()?;
    }
    Ok(())
}

/// The serialize-side name of `rename = "..."` / `rename(serialize = "...", deserialize = "...")`
/// (and the same forms of `rename_all`). `None` if only the deserialize side is given.
fn serialize_name(meta: &ParseNestedMeta) -> syn::Result<Option<String>> {
    if meta.input.peek(Token![=]) {
        let s: LitStr = meta.value()?.parse()?;
        return Ok(Some(s.value()));
    }
    let mut out = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") {
            let s: LitStr = inner.value()?.parse()?;
            out = Some(s.value());
        } else {
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    Ok(out)
}
