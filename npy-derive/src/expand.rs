//! Code generation: checks the input (collecting every error) and emits the `NpyRecord` impl.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Ident, Type};

use crate::attr::{Container, FieldAttrs, Order, Width};
use crate::ctxt::Ctxt;
use crate::descr::FieldDType;
use crate::ty::{self, Kind};

/// How a field's dtype is produced.
enum Source {
    /// `<T as NpyRecord>::dtype()`.
    Trait,
    /// A fixed-width string.
    String(Width),
    /// `#[npy(dtype = "<M8[...]")]` / `"<m8[...]"`: an `i64` count (or `Option<i64>`).
    Time {
        delta: bool,
        unit: Option<&'static str>,
        mult: u32,
        big: Option<bool>,
    },
    /// `#[npy(dtype = "|V<n>")]`: raw bytes.
    Void(usize),
}

/// A field that is part of the dtype.
struct Member<'a> {
    name: String,
    ty: &'a Type,
    source: Source,
    /// How Rust names the field (`x` or `0`), for `offset_of!`.
    access: syn::Member,
    /// Read and written as its plain bytes when the struct is: no `#[npy(rename)]` (which
    /// only renames the dtype field) and no serde attribute that changes the value.
    plain: bool,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let cx = Ctxt::default();
    let container = Container::from_attrs(&cx, &input.attrs);

    let fields = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Unit => {
                cx.error_spanned_by(
                    &input.ident,
                    "#[derive(NpyRecord)] needs a struct with fields: serde serializes a unit \
                     struct as a unit value, which has no record dtype",
                );
                None
            }
            f => Some(f),
        },
        Data::Enum(e) => {
            cx.error_at(
                e.enum_token.span,
                "#[derive(NpyRecord)] supports structs only: an enum has no fixed NumPy record \
                 layout",
            );
            None
        }
        Data::Union(u) => {
            cx.error_at(
                u.union_token.span,
                "#[derive(NpyRecord)] supports structs only, not unions",
            );
            None
        }
    };

    let members = fields
        .map(|f| members(&cx, &container, f))
        .unwrap_or_default();

    // serde serializes a newtype struct (one unnamed field) as its field, and so do the
    // reader and writer: its dtype is the field's, as for #[serde(transparent)].
    let newtype = matches!(fields, Some(Fields::Unnamed(u)) if u.unnamed.len() == 1);
    let transparent = container.transparent || newtype;
    let what = if container.transparent {
        "a #[serde(transparent)] struct"
    } else {
        "a newtype struct (serde serializes it as its field)"
    };
    if transparent {
        if let Some(span) = container.align {
            cx.error_at(
                span,
                format!("#[npy(align)] has no effect on {what}: its dtype is its field's dtype"),
            );
        }
        if fields.is_some() && members.len() != 1 && cx.is_empty() {
            cx.error_spanned_by(
                &input.ident,
                format!(
                    "{what} needs exactly one field in the dtype, found {}",
                    members.len()
                ),
            );
        }
    }

    cx.check()?;

    let krate = container
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::npy_serde));
    let private = quote!(#krate::record::__private);

    let order = match container.byte_order {
        None => quote!(::core::option::Option::None),
        Some(Order::Little) => quote!(::core::option::Option::Some(#private::ByteOrder::Little)),
        Some(Order::Big) => quote!(::core::option::Option::Some(#private::ByteOrder::Big)),
        Some(Order::Native) => {
            quote!(::core::option::Option::Some(#private::ByteOrder::NATIVE))
        }
    };

    let dtype_exprs: Vec<TokenStream> = members
        .iter()
        .map(|m| field_dtype(&krate, &private, m))
        .collect();
    let layout_exprs: Vec<TokenStream> = members
        .iter()
        .map(|m| field_layout(&krate, &private, m))
        .collect();
    let aligned = container.align.is_some();

    let (body, layout) = match (transparent, dtype_exprs.as_slice(), layout_exprs.as_slice()) {
        (true, [e], [l]) => (
            quote!(#private::with_order(#e, #order)),
            quote!(#l.with_order(#order)),
        ),
        _ => {
            let names = members.iter().map(|m| &m.name);
            let type_name = input.ident.to_string();
            (
                quote! {
                    #private::record(
                        #type_name,
                        ::std::vec![#((#names, #dtype_exprs)),*],
                        #aligned,
                        #order,
                    )
                },
                quote! {
                    #private::Layout::record(&[#(&#layout_exprs),*], #aligned).with_order(#order)
                },
            )
        }
    };

    let generics = with_bounds(input, &krate, &private, &members);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let ident = &input.ident;
    let all_fields = fields.map_or(0, |f| f.len());
    let (pod, assertion) = if repr_c(input)
        && !transparent
        && input.generics.params.is_empty()
        && members.len() == all_fields
        && !container.serde_custom
        && members
            .iter()
            .all(|m| m.plain && matches!(m.source, Source::Trait))
    {
        plain_data(&krate, &private, ident, &members)
    } else {
        (TokenStream::new(), TokenStream::new())
    };
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics #krate::NpyRecord for #ident #ty_generics #where_clause {
            fn dtype() -> #krate::DType {
                #body
            }

            #[doc(hidden)]
            const LAYOUT: #private::Layout = #layout;

            #pod
        }

        #assertion
    })
}

/// True if the struct is `#[repr(C)]` (possibly with `packed` or `align`).
fn repr_c(input: &DeriveInput) -> bool {
    input.attrs.iter().any(|a| {
        a.path().is_ident("repr") && {
            let mut c = false;
            let _ = a.parse_nested_meta(|meta| {
                if meta.path.is_ident("C") {
                    c = true;
                }
                // `align(N)`, `packed(N)`: skip the value.
                if meta.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let _: TokenStream = content.parse()?;
                }
                Ok(())
            });
            c
        }
    })
}

/// For a `#[repr(C)]` struct of fields from the trait: the `POD` proof when its Rust layout is
/// its dtype's (checked at compile time), and an assertion that fails to compile when the
/// layouts differ (a `#[repr(C)]` struct claims its memory is its dtype's bytes).
fn plain_data(
    krate: &syn::Path,
    private: &TokenStream,
    ident: &Ident,
    members: &[Member],
) -> (TokenStream, TokenStream) {
    let tys = members.iter().map(|m| m.ty);
    let access: Vec<&syn::Member> = members.iter().map(|m| &m.access).collect();
    let check = quote! {
        #private::check_record(
            &<#ident as #krate::NpyRecord>::LAYOUT,
            ::core::mem::size_of::<#ident>(),
            &[#(::core::mem::offset_of!(#ident, #access)),*],
        )
    };
    let pod = quote! {
        const POD: ::core::option::Option<#krate::Pod<Self>> = {
            const FIELDS: bool = true #(&& <#tys as #krate::NpyRecord>::POD.is_some())*;
            match #check {
                ::core::result::Result::Ok(true) if FIELDS => {
                    // SAFETY: every field's type is plain data (its memory is its layout), and
                    // `check_record` found each field at its layout offset, the size equal to
                    // the itemsize, and no swapped byte order; the struct is `#[repr(C)]`, so
                    // its other bytes are padding. So its memory is `LAYOUT`.
                    #[allow(unsafe_code)]
                    ::core::option::Option::Some(unsafe { #krate::Pod::new_unchecked() })
                }
                _ => ::core::option::Option::None,
            }
        };
    };
    let name = ident.to_string();
    let arms = members.iter().enumerate().map(|(i, m)| {
        let field = match &m.access {
            syn::Member::Named(id) => id.to_string(),
            syn::Member::Unnamed(ix) => ix.index.to_string(),
        };
        let msg = format!(
            "`{name}` is #[repr(C)] and derives NpyRecord, which claims that its memory is its \
             dtype's bytes, but field `{field}` is at another offset in Rust than in the dtype: \
             add #[npy(align)] (NumPy's align=True layout is C's) or remove #[repr(C)]"
        );
        quote!(::core::result::Result::Err(#i) => ::core::panic!(#msg),)
    });
    let size_msg = format!(
        "`{name}` is #[repr(C)] and derives NpyRecord, which claims that its memory is its \
         dtype's bytes, but its size in Rust is not the dtype's itemsize: add #[npy(align)] \
         (NumPy's align=True layout is C's) or remove #[repr(C)]"
    );
    let assertion = quote! {
        const _: () = match #check {
            #(#arms)*
            ::core::result::Result::Err(_) => ::core::panic!(#size_msg),
            ::core::result::Result::Ok(_) => {}
        };
    };
    (pod, assertion)
}

fn field_dtype(krate: &syn::Path, private: &TokenStream, m: &Member) -> TokenStream {
    let ty = m.ty;
    let span = ty.span();
    match m.source {
        // The same path and span as `field_layout`'s, so that a type without `NpyRecord` is
        // reported once.
        Source::Trait => quote_spanned!(span=> <#ty as #krate::NpyRecord>::dtype()),
        Source::String(w) => {
            let scalar = match w {
                Width::Bytes(n) => quote!(#private::Scalar::Bytes(#n)),
                Width::Unicode(n) => quote!(#private::Scalar::Unicode(#n)),
            };
            quote_spanned!(span=> #private::string_field::<#ty>(#scalar))
        }
        Source::Time {
            delta,
            unit,
            mult,
            big,
        } => {
            let unit = time_unit(private, unit);
            let order = match big {
                None => quote!(#private::ByteOrder::NATIVE),
                Some(true) => quote!(#private::ByteOrder::Big),
                Some(false) => quote!(#private::ByteOrder::Little),
            };
            quote_spanned!(span=> #private::time_field::<#ty>(#delta, #unit, #mult, #order))
        }
        Source::Void(n) => quote_spanned!(span=> #private::void_field::<#ty, #n>()),
    }
}

/// The `TimeUnit` of a time field (`Generic` for none).
fn time_unit(private: &TokenStream, unit: Option<&str>) -> TokenStream {
    let name = Ident::new(unit.unwrap_or("Generic"), proc_macro2::Span::call_site());
    quote!(#private::TimeUnit::#name)
}

/// A field's compile-time layout: its type's, or opaque for a string (which the exact tier does
/// not decode, so neither does it decode the record).
fn field_layout(krate: &syn::Path, private: &TokenStream, m: &Member) -> TokenStream {
    let ty = m.ty;
    match m.source {
        Source::Trait => quote_spanned!(ty.span()=> <#ty as #krate::NpyRecord>::LAYOUT),
        Source::String(_) | Source::Void(_) => quote!(#private::Layout::OPAQUE),
        // A datetime of one unit is an `i64` leaf tagged with it (the exact tiers read and
        // write the count); multiples and generic ones are not in the layout model.
        Source::Time {
            delta,
            unit: unit @ Some(_),
            mult: 1,
            big,
        } => {
            let unit = time_unit(private, unit);
            let order = match big {
                None => quote!(::core::option::Option::None),
                Some(true) => quote!(::core::option::Option::Some(#private::ByteOrder::Big)),
                Some(false) => quote!(::core::option::Option::Some(#private::ByteOrder::Little)),
            };
            quote!(#private::Layout::time(#delta, #unit).with_order(#order))
        }
        Source::Time { .. } => quote!(#private::Layout::OPAQUE),
    }
}

/// Checks every field and returns those that are part of the dtype.
fn members<'a>(cx: &Ctxt, container: &Container, fields: &'a Fields) -> Vec<Member<'a>> {
    let mut out: Vec<Member<'a>> = Vec::new();
    for (index, field) in fields.iter().enumerate() {
        let access = match &field.ident {
            Some(id) => syn::Member::Named(id.clone()),
            None => syn::Member::Unnamed(syn::Index::from(index)),
        };
        let attrs = FieldAttrs::from_attrs(cx, &field.attrs);
        let serde_skips = attrs.skip_serializing && attrs.skip_deserializing;
        if let Some(span) = attrs.npy_skip {
            if !serde_skips {
                let why = if attrs.skip_serializing {
                    "serde still deserializes it"
                } else if attrs.skip_deserializing {
                    "serde still serializes it"
                } else {
                    "serde still serializes and deserializes it"
                };
                cx.error_at(
                    span,
                    format!(
                        "#[npy(skip)] needs #[serde(skip)] on the same field: {why}, so records \
                         would not match a dtype without it (a #[serde(skip)] field is left out \
                         of the dtype on its own)"
                    ),
                );
            }
            continue;
        }
        // The dtype describes what Serialize writes: a field serde never serializes is not in
        // it (reading such files then needs #[serde(default)] or #[serde(skip)] on it).
        if attrs.skip_serializing {
            continue;
        }

        let kind = ty::classify(&field.ty);
        let source = match (kind, attrs.width, attrs.dtype.clone()) {
            // The field's type is checked by a trait bound of `__private::time_field` /
            // `void_field` (an error at the type that names the dtype).
            (
                _,
                _,
                Some((
                    _,
                    FieldDType::Time {
                        delta,
                        unit,
                        mult,
                        big,
                    },
                )),
            ) => Source::Time {
                delta,
                unit,
                mult,
                big,
            },
            (_, _, Some((_, FieldDType::Void(n)))) => Source::Void(n),
            (kind, width, _) => match (kind, width) {
                (Kind::Unsupported(t, why), None) => {
                    cx.error_spanned_by(t, why);
                    continue;
                }
                (Kind::String, None) if attrs.bad_width => continue,
                (Kind::String, None) => {
                    cx.error_spanned_by(
                        &field.ty,
                        format!(
                            "a string field needs #[npy(bytes = N)] or #[npy(unicode = N)]: `{}` \
                         has no fixed width, and NumPy stores strings as |S<N> bytes or <U<N> \
                         code points",
                            ty::pretty(&field.ty)
                        ),
                    );
                    continue;
                }
                (Kind::Scalar | Kind::Unsupported(..), Some((span, w))) => {
                    let key = match w {
                        Width::Bytes(_) => "bytes",
                        Width::Unicode(_) => "unicode",
                    };
                    cx.error_at(
                        span,
                        format!(
                            "#[npy({key} = N)] applies to string fields (String, &str, Vec<u8>, \
                         &[u8], [u8; N]), not to `{}`",
                            ty::pretty(&field.ty)
                        ),
                    );
                    continue;
                }
                (Kind::ByteArray(Some(len)), Some((span, Width::Bytes(n)))) if len != n as u64 => {
                    cx.error_at(
                        span,
                        format!(
                        "a [u8; {len}] field holds exactly {len} bytes: write #[npy(bytes = {len})]"
                    ),
                    );
                    continue;
                }
                (_, Some((_, w))) => Source::String(w),
                (_, None) => Source::Trait,
            },
        };

        let plain = !attrs.serde_custom && attrs.npy_rename.is_none();
        let (name, name_span) = match (&field.ident, attrs.npy_rename) {
            (_, Some((span, n))) => {
                // With a serde name that differs, derived serde impls read and write the
                // field under a key the dtype does not have: reading by name cannot work.
                if let Some(serde_name) = attrs.serde_rename.as_ref().filter(|s| **s != n) {
                    cx.error_at(
                        span,
                        format!(
                            "#[npy(rename = {n:?})] renames only the dtype's field, while serde \
                             reads and writes this field as {serde_name:?}: files written with \
                             this dtype would not read back by name. Rename both with \
                             #[serde(rename = {n:?})] alone"
                        ),
                    );
                }
                (n, span)
            }
            (Some(ident), None) => {
                let n = match (&attrs.serde_rename, container.rename_all) {
                    (Some(n), _) => n.clone(),
                    (None, Some(rule)) => rule.apply_to_field(&unraw(ident)),
                    (None, None) => unraw(ident),
                };
                (n, ident.span())
            }
            // NumPy's default names are the positions in the dtype: f0, f1, ...
            (None, None) => (format!("f{}", out.len()), field.ty.span()),
        };
        if name.is_empty() {
            cx.error_at(
                name_span,
                "a field name must not be empty (NumPy would replace it with f<index>)",
            );
            continue;
        }
        if out.iter().any(|m| m.name == name) {
            cx.error_at(
                name_span,
                format!("duplicate field name {name:?} in the dtype: NumPy needs distinct names"),
            );
            continue;
        }
        out.push(Member {
            name,
            ty: &field.ty,
            source,
            access,
            plain,
        });
    }
    out
}

fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// The struct's generics plus `T: NpyRecord` for each type parameter used by a field whose dtype
/// comes from the trait, and `FieldType: StringField` for string fields that use one.
fn with_bounds(
    input: &DeriveInput,
    krate: &syn::Path,
    private: &TokenStream,
    members: &[Member],
) -> syn::Generics {
    let mut generics = input.generics.clone();
    let params: BTreeSet<String> = generics
        .type_params()
        .map(|p| p.ident.to_string())
        .collect();
    if params.is_empty() {
        return generics;
    }
    let mut need_trait = BTreeSet::new();
    let mut predicates: Vec<syn::WherePredicate> = Vec::new();
    for m in members {
        let used = idents_in(m.ty.to_token_stream(), &params);
        match m.source {
            Source::Trait => need_trait.extend(used),
            Source::String(_) if !used.is_empty() => {
                let ty = m.ty;
                predicates.push(syn::parse_quote!(#ty: #private::StringField));
            }
            Source::Time { .. } if !used.is_empty() => {
                let ty = m.ty;
                predicates.push(syn::parse_quote!(#ty: #private::TimeCountField));
            }
            Source::Void(n) if !used.is_empty() => {
                let ty = m.ty;
                predicates.push(syn::parse_quote!(#ty: #private::VoidField<#n>));
            }
            Source::String(_) | Source::Time { .. } | Source::Void(_) => {}
        }
    }
    for p in generics.type_params_mut() {
        if need_trait.contains(&p.ident.to_string()) {
            p.bounds.push(syn::parse_quote!(#krate::NpyRecord));
        }
    }
    if !predicates.is_empty() {
        generics.make_where_clause().predicates.extend(predicates);
    }
    generics
}

/// The identifiers among `names` that occur anywhere in `tokens`.
fn idents_in(tokens: TokenStream, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                let s = i.to_string();
                if names.contains(&s) {
                    found.insert(s);
                }
            }
            proc_macro2::TokenTree::Group(g) => found.extend(idents_in(g.stream(), names)),
            _ => {}
        }
    }
    found
}
