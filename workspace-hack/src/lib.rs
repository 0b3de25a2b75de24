//! Feature unification for the workspace's CI builds: no code.
//!
//! This crate is a workspace member that nothing depends on. Its dependencies name crates with
//! the features the every-feature build gives them, so that `cargo test --workspace` resolves
//! them the same way and CI compiles them once. See `.ci/workspace-hack.py`.
