use npy_serde::NpyRecord;
use serde::Serialize;

// Type strings that #[npy(dtype = ...)] refuses, each at its string.
#[derive(Serialize, NpyRecord)]
struct BadStrings {
    #[npy(dtype = "<f8")]
    number: f64,
    #[npy(dtype = "<M8[xs]")]
    unit: i64,
    #[npy(dtype = "|V0")]
    empty: [u8; 0],
    #[npy(dtype = "<M8[ns]", bytes = 8)]
    both: i64,
    #[npy(dtype = "<M8[ns]")]
    #[npy(dtype = "<M8[s]")]
    twice: i64,
}

fn main() {}
