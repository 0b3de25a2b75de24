//! Compile-fail tests: each file under `tests/ui/` must fail with exactly the diagnostics in its
//! `.stderr` file (regenerate with `TRYBUILD=overwrite cargo test -p npy-derive --test ui` and
//! review the diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
