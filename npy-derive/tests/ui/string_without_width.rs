use npy_serde::NpyRecord;
use serde::Serialize;

#[derive(Serialize, NpyRecord)]
struct Named<'a> {
    id: u32,
    name: String,
    raw: Vec<u8>,
    view: &'a str,
    bytes: &'a [u8],
}

fn main() {}
