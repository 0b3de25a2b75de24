#![doc = include_str!("../DERIVE.md")]
#![deny(missing_docs)]

extern crate proc_macro;

mod attr;
mod case;
mod ctxt;
mod descr;
mod expand;
mod ty;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Derives `npy_serde::NpyRecord` for a struct: its NumPy record dtype, with field names equal
/// to the keys serde serializes.
///
#[doc = include_str!("../DERIVE.md")]
#[proc_macro_derive(NpyRecord, attributes(npy, serde))]
pub fn derive_npy_record(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
