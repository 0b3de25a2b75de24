use npy_serde::NpyRecord;

#[derive(NpyRecord)]
enum Shape {
    Circle(f64),
    Square(f64),
}

#[derive(NpyRecord)]
union Bits {
    i: u32,
    f: f32,
}

#[derive(NpyRecord)]
struct Marker;

fn main() {}
