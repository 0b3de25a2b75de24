//! `#[derive(NpyRecord)]` for `npy-serde`. Filled in by the derive issue.
extern crate proc_macro;
