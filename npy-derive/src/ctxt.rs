//! Error collection, after serde_derive's `Ctxt`: every problem found while reading the input is
//! recorded with its span, and all of them are reported together.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Collects errors while the derive input is checked.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanning the tokens of `obj`.
    pub(crate) fn error_spanned_by<A: ToTokens, T: Display>(&self, obj: A, msg: T) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(obj.into_token_stream(), msg));
    }

    /// Records an error at a span.
    pub(crate) fn error_at<T: Display>(&self, span: proc_macro2::Span, msg: T) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Records a `syn` parse error.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// True if no error was recorded yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.errors.borrow().is_empty()
    }

    /// All errors combined into one (each keeps its own span), or `Ok` if there were none.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut first) = errors.next() else {
            return Ok(());
        };
        for e in errors {
            first.combine(e);
        }
        Err(first)
    }
}
