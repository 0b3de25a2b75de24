use npy_serde::NpyRecord;
use serde::Serialize;

#[derive(Serialize, NpyRecord)]
#[serde(rename_all = "UPPERCASE")]
struct Clash {
    a: f64,
    #[serde(rename = "A")]
    other: f64,
    #[npy(rename = "")]
    nameless: f64,
}

fn main() {}
