use npy_serde::NpyRecord;

#[derive(NpyRecord)]
#[npy(align, pack, byte_order = "middle")]
#[npy(align)]
struct Container {
    a: f64,
}

#[derive(NpyRecord)]
struct Fields {
    #[npy(bytes = 4, unicode = 4)]
    both: String,
    #[npy(bytes = 8)]
    number: f64,
    #[npy(bytes = 0)]
    empty: String,
    #[npy(rename = "x", rename = "y")]
    twice: u8,
    #[npy(widht = 3)]
    typo: u8,
    #[npy(bytes = 4)]
    short: [u8; 8],
    #[npy(unicode = 1000000000)]
    huge: String,
}

fn main() {}
