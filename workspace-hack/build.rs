//! Empty: Cargo compiles a package's `[build-dependencies]`, and unifies their features with the
//! other host-side crates', only when it has a build script (`.ci/workspace-hack.py`).
fn main() {}
