use npy_serde::NpyRecord;
use serde::Serialize;

// Rust types that cannot hold the dtype the attribute sets: errors at the field's type.
#[derive(Serialize, NpyRecord)]
struct WrongTypes {
    #[npy(dtype = "<M8[ns]")]
    text: String,
    #[npy(dtype = "<M8[ns]")]
    narrow: i32,
    #[npy(dtype = "<m8[s]")]
    unsigned: u64,
    #[npy(dtype = "|V16")]
    short: [u8; 8],
    #[npy(dtype = "|V4")]
    floats: [f32; 1],
}

fn main() {}
