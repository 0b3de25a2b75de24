use npy_serde::NpyRecord;
use serde::Serialize;

#[derive(NpyRecord)]
#[npy(align)]
struct Wrapped(f64);

#[derive(Serialize, NpyRecord)]
#[serde(transparent)]
#[npy(align)]
struct Transparent {
    inner: f64,
}

#[derive(NpyRecord)]
struct NothingLeft(#[npy(skip)] #[serde(skip)] f64);

fn main() {}
