use npy_serde::NpyRecord;

struct NotARecord;

#[derive(NpyRecord)]
struct Outer {
    a: f64,
    inner: NotARecord,
}

#[derive(NpyRecord)]
struct BadString {
    #[npy(bytes = 4)]
    code: NotARecord,
}

fn main() {}
