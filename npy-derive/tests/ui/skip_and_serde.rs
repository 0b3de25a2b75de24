use npy_serde::NpyRecord;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Default)]
struct Extra {
    v: f64,
}

#[derive(Serialize, Deserialize, NpyRecord)]
struct Skips {
    a: f64,
    #[npy(skip)]
    only_npy: f64,
    #[npy(skip)]
    #[serde(skip_deserializing)]
    half_skipped: f64,
    #[serde(flatten)]
    extra: Extra,
    #[serde(skip_serializing_if = "Option::is_none")]
    maybe: Option<f64>,
}

#[derive(Serialize, NpyRecord)]
#[serde(tag = "kind")]
struct Tagged {
    a: f64,
}

fn main() {}
