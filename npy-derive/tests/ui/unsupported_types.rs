use std::collections::HashMap;

use npy_serde::NpyRecord;

#[derive(NpyRecord)]
struct Unsupported {
    samples: Vec<f64>,
    maybe: Option<f32>,
    table: HashMap<String, f64>,
    pair: (f32, f32),
    count: usize,
    grid: [[Option<i8>; 2]; 2],
}

fn main() {}
