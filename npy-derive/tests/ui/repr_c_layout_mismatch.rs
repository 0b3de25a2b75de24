use npy_serde::NpyRecord;

// `#[repr(C)]` claims that the memory is the dtype's bytes, but the default dtype is packed:
// `b` is at byte 1 in the dtype and at byte 8 in Rust.
#[derive(NpyRecord)]
#[repr(C)]
struct Packed {
    a: u8,
    b: f64,
}

// The same with NumPy's align=True layout, which is C's: fine.
#[derive(NpyRecord)]
#[npy(align)]
#[repr(C)]
struct Aligned {
    a: u8,
    b: f64,
}

// The right offsets, but trailing padding in Rust that the packed dtype does not have.
#[derive(NpyRecord)]
#[repr(C)]
struct Tail {
    b: f64,
    a: u8,
}

fn main() {
    let _ = (Aligned::dtype(), Packed::dtype(), Tail::dtype());
}
